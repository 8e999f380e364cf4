//! `locksmith restore [ENTRY|RUN|PATH] [--last-batch] [--run ID] [--dry-run]`: puts back locks
//! that reclaim removed, exactly as they were, into the very directories they were removed
//! from (inside a container: while that container runs), only where nothing stands now (see
//! `locksmith::reclaim::restore`).
//!
//! Restoring is as deliberate as removing. What is named (an entry by its number or id, a
//! path, `--last-batch`, a run by `--run ID` or its id) is listed, then put back. Nothing
//! named: on a terminal, the last run that reclaimed is listed with who made it and when, and
//! put back only after a yes (the default is no); without a terminal, nothing is done and one
//! line says how to name what to restore (exit 2). `--dry-run` lists and changes nothing.
//!
//! Lines speak of paths, numbers of `locksmith journal` and runs, never of journal ids or of
//! where in a file a copy is.
//!
//! Exit status: 0 every lock named was restored (with `--dry-run`: there is something to
//! restore); 1 nothing to restore, the answer was no, or one was refused or failed (one line
//! on stderr each says why; what was refused was not changed); 2 nothing named and no
//! terminal to ask on.

use std::io::{self, BufRead, IsTerminal, Write};

use locksmith::reclaim::{self, Plan, ReclaimOptions, Restored, Selector, Via};
use locksmith::text;

use crate::RestoreArgs;

pub fn run(args: RestoreArgs) -> i32 {
    let terminal = io::stdin().is_terminal() && io::stderr().is_terminal();
    let named = args.entry.is_some() || args.last_batch || args.run.is_some();
    if !named && !terminal && !args.dry_run {
        eprintln!(
            "locksmith restore: name what to restore: an entry (`locksmith restore 3`, a \
             number of `locksmith journal`), a lock's path, --last-batch or --run ID; \
             --dry-run shows what would come back (without a terminal nothing is put back \
             unasked)"
        );
        return 2;
    }
    let state_dir = ReclaimOptions::default_state_dir();
    let selector = match (&args.run, args.last_batch) {
        (Some(run), _) => Selector::Run(run.clone()),
        (None, true) => Selector::LastBatch,
        (None, false) => Selector::parse(args.entry.as_deref()),
    };
    let plan = match reclaim::plan(&state_dir, &selector) {
        Ok(p) => p,
        Err(e) => {
            super::report_error("restore", &e);
            return 1;
        }
    };
    // Before a question, what it is about is what *would* come back.
    print!("{}", listing(&plan, &selector, args.dry_run || !named));
    let _ = io::stdout().flush();
    if args.dry_run {
        return 0;
    }
    if !named && !confirmed(&plan) {
        println!("nothing was restored");
        return 1;
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

/// Asks on the terminal whether to put back what `plan` names; only `y` or `yes` is a yes.
fn confirmed(plan: &Plan) -> bool {
    let n = plan.entries.len();
    eprint!(
        "Put {} back? [y/N] ",
        if n == 1 {
            "this lock".to_string()
        } else {
            format!("these {n} locks")
        }
    );
    let _ = io::stderr().flush();
    let mut answer = String::new();
    if io::stdin().lock().read_line(&mut answer).is_err() {
        return false;
    }
    matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes")
}

/// What will be put back, before it is tried: a title naming what it is (a run, a batch,
/// one lock: who reclaimed it and when), then one line per lock, its number in `locksmith
/// journal` last.
fn listing(plan: &Plan, selector: &Selector, not_yet: bool) -> String {
    let n = plan.entries.len();
    let locks = format!("{n} lock{}", if n == 1 { "" } else { "s" });
    let when = plan
        .since()
        .map(|t| format!(" at {}", text::escape(&shown_time(t))))
        .unwrap_or_default();
    let by = Via::describe(plan.via.as_deref());
    let what = match (selector, &plan.run) {
        (Selector::LastRun, Some(run)) => format!(
            "the last run that reclaimed, {}: {locks} reclaimed by {by}{when}",
            text::escape(run)
        ),
        (Selector::LastBatch, Some(run)) => format!(
            "the last batch (run {}): {locks} reclaimed by {by}{when}",
            text::escape(run)
        ),
        (_, Some(run)) => format!("run {}: {locks} reclaimed by {by}{when}", text::escape(run)),
        (_, None) => format!("{locks} reclaimed by {by}{when}"),
    };
    let verb = if not_yet {
        "would restore"
    } else {
        "restoring"
    };
    let mut out = format!("{verb} {what}\n");
    for (i, e) in plan.entries.iter().enumerate() {
        out.push_str(&format!(
            "  {} ({} {}, #{})\n",
            text::display_path(&e.path_buf()),
            text::escape(e.dialect.as_deref().unwrap_or("?")),
            text::escape(e.meta.as_ref().map_or("?", |m| m.kind.as_str())),
            plan.numbers.get(i).copied().unwrap_or(0)
        ));
    }
    out
}

/// `2026-12-02 00:03:28` from an RFC 3339 time.
fn shown_time(t: &str) -> String {
    t.get(..19).unwrap_or(t).replace('T', " ")
}

/// `restored PATH`, with the container for a lock put back in one.
fn restored(r: &Restored) -> String {
    match &r.inside {
        Some((container, inside)) => format!(
            "restored {} in {}",
            text::display_path(inside),
            text::escape(container)
        ),
        None => format!("restored {}", text::display_path(&r.path)),
    }
}
