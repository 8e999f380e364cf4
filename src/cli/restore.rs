//! `locksmith restore [ENTRY|PATH]`: puts back a lock that reclaim removed, exactly as it was,
//! only if nothing stands at its path now (see `locksmith::reclaim::restore`).
//!
//! Exit status: 0 restored; 1 refused or failed (one line on stderr says why; nothing was
//! changed).

use locksmith::reclaim::{self, ReclaimOptions, Selector};
use locksmith::report::escape;

use crate::RestoreArgs;

pub fn run(args: RestoreArgs) -> i32 {
    let state_dir = ReclaimOptions::default_state_dir();
    let selector = Selector::parse(args.entry.as_deref());
    match reclaim::restore(&state_dir, &selector) {
        Ok(r) => {
            println!(
                "restored {} ({}, journal entry {})",
                escape::display_path(&r.path),
                r.kind,
                escape::escape_text(&r.id)
            );
            for w in &r.warnings {
                eprintln!("locksmith restore: warning: {}", escape::escape_text(w));
            }
            0
        }
        Err(e) => {
            eprintln!("locksmith restore: {}", escape::escape_text(&e));
            1
        }
    }
}
