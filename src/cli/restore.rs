//! `locksmith restore [ENTRY|PATH]`: puts back a lock that reclaim removed, exactly as it was,
//! into the very directory it was removed from (inside a container: while that container runs),
//! only if nothing stands at its path now (see `locksmith::reclaim::restore`).
//!
//! Exit status: 0 restored; 1 refused or failed (one line on stderr says why; nothing was
//! changed).

use locksmith::reclaim::{self, ReclaimOptions, Selector};
use locksmith::text;

use crate::RestoreArgs;

pub fn run(args: RestoreArgs) -> i32 {
    let state_dir = ReclaimOptions::default_state_dir();
    let selector = Selector::parse(args.entry.as_deref());
    match reclaim::restore(&state_dir, &selector) {
        Ok(r) => {
            let place = match &r.inside {
                Some((container, inside)) => format!(
                    "{} in {}",
                    text::display_path(inside),
                    text::escape(container)
                ),
                None => text::display_path(&r.path),
            };
            println!(
                "restored {place} ({}, journal entry {})",
                r.kind,
                text::escape(&r.id)
            );
            for w in &r.warnings {
                eprintln!("locksmith restore: warning: {}", text::escape(w));
            }
            0
        }
        Err(e) => {
            eprintln!("locksmith restore: {}", text::escape(&e));
            1
        }
    }
}
