//! `locksmith restore [ENTRY|RUN|PATH]`: puts back locks that reclaim removed, exactly as they
//! were, into the very directories they were removed from (inside a container: while that
//! container runs), only where nothing stands now (see `locksmith::reclaim::restore`).
//!
//! Without an argument it restores the last run that reclaimed (all of its reclaims not
//! restored yet), listing them first; a run id restores that run the same way; an entry
//! (its number or id) or a path (as given, or as `locksmith journal` prints it) restores one.
//!
//! Exit status: 0 every lock named was restored; 1 nothing to restore, or one was refused or
//! failed (one line on stderr each says why; what was refused was not changed).

use locksmith::reclaim::{self, Plan, ReclaimOptions, Restored, Selector};
use locksmith::text;

use crate::RestoreArgs;

pub fn run(args: RestoreArgs) -> i32 {
    let state_dir = ReclaimOptions::default_state_dir();
    let selector = Selector::parse(args.entry.as_deref());
    let plan = match reclaim::plan(&state_dir, &selector) {
        Ok(p) => p,
        Err(e) => {
            super::report_error("restore", &e);
            return 1;
        }
    };
    if let Some(run) = &plan.run {
        print!("{}", listing(run, &plan, selector == Selector::LastRun));
    }
    let mut failed = 0;
    for result in reclaim::restore_plan(&state_dir, &plan) {
        match result {
            Ok(r) => {
                println!("{}", restored(&r));
                for w in &r.warnings {
                    eprintln!("locksmith restore: warning: {}", text::escape(w));
                }
            }
            Err(e) => {
                failed += 1;
                super::report_error("restore", &e);
            }
        }
    }
    if failed > 0 {
        if plan.entries.len() > 1 {
            eprintln!(
                "locksmith restore: {failed} of {} not restored",
                plan.entries.len()
            );
        }
        return 1;
    }
    0
}

/// What a restore of a whole run will put back, before it is tried:
/// `the last run, RUN: 2 locks reclaimed from 2026-11-30 16:59:39`, then one line each.
fn listing(run: &str, plan: &Plan, last: bool) -> String {
    let n = plan.entries.len();
    let first = plan
        .entries
        .iter()
        .map(|e| e.time.as_str())
        .min()
        .unwrap_or("");
    let mut out = format!(
        "restoring {} {}: {n} lock{} reclaimed from {}\n",
        if last { "the last run," } else { "run" },
        text::escape(run),
        if n == 1 { "" } else { "s" },
        text::escape(&first.get(..19).unwrap_or(first).replace('T', " "))
    );
    for e in &plan.entries {
        out.push_str(&format!(
            "  {} ({}, {}, journal entry {})\n",
            text::display_path(&e.path_buf()),
            text::escape(e.meta.as_ref().map_or("?", |m| m.kind.as_str())),
            text::escape(e.dialect.as_deref().unwrap_or("?")),
            text::escape(&e.id)
        ));
    }
    out
}

/// `restored PATH (KIND, journal entry ID)`, with the container for a lock put back in one.
fn restored(r: &Restored) -> String {
    let place = match &r.inside {
        Some((container, inside)) => format!(
            "{} in {}",
            text::display_path(inside),
            text::escape(container)
        ),
        None => text::display_path(&r.path),
    };
    format!(
        "restored {place} ({}, journal entry {})",
        text::escape(&r.kind),
        text::escape(&r.id)
    )
}
