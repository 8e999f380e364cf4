//! What the lock table's destructive keys ask for, each through the queue: `d` the dialog of
//! the selected lock (a reclaim when it is stale, a forced removal when it is not proven stale;
//! never for a live or free lock), `D` the dialog of the marked locks or of every stale lock
//! shown, `x` whom to signal, `e` the row's own action (a recovery), `y` a copy of the path. Each
//! says in the status bar why it asks nothing, when it does not.

use locksmith::Verdict;
use locksmith::scan::Finding;

use super::super::super::clipboard;
use super::super::super::confirm::ConfirmAction;
use super::super::super::keymap::{self, Action, Context};
use super::super::super::msg::{Effect, Run};
use super::super::super::queue::{Level, Request};
use super::super::super::stop;
use super::super::super::text;
use super::super::{Cx, READ_ONLY};
use super::Table;

impl Table {
    pub(super) fn copy_path(&mut self, cx: &mut Cx<'_>) {
        let Some(row) = self.selected_row() else {
            cx.queue.say(Level::Warn, "no lock selected");
            return;
        };
        let path = row.finding.path.clone();
        // Never the raw bytes: a name with a newline or ESC would run when pasted.
        let (text, form) = match clipboard::text_for(&path) {
            Ok(t) => t,
            Err(why) => {
                cx.queue.say_about(Level::Warn, why, &path);
                return;
            }
        };
        let how = match form {
            clipboard::Form::Plain => "",
            clipboard::Form::Quoted => " (quoted for the shell)",
            clipboard::Form::Escaped => {
                " (as $'…' for bash and zsh: the name holds control characters, \
                 invisible characters or bytes that are not UTF-8)"
            }
        };
        let said = format!("copied {text} to the clipboard (OSC 52){how}");
        cx.queue.say_about(Level::Info, said, &path);
        cx.queue.push(Request::Do(Effect::Copy(text.into_bytes())));
    }

    /// `d`: the selected lock's dialog: a reclaim when it is stale, a forced removal when it is
    /// not proven stale (`unknown`, `foreign`); a live or free lock is never removed.
    pub(super) fn ask_reclaim_selected(&mut self, cx: &mut Cx<'_>) {
        if let Some(why) = cx.busy.refusal() {
            cx.queue.say(Level::Warn, why);
            return;
        }
        let Some(row) = self.selected_row() else {
            cx.queue.say(Level::Warn, "no lock selected");
            return;
        };
        let f = row.finding.clone();
        let name = row.finding.path.file_name().map_or_else(
            || row.cells.path.clone(),
            |n| text::bytes(n.as_encoded_bytes()),
        );
        let why = row
            .finding
            .judgement
            .evidence
            .first()
            .map(|e| text::clean(e))
            .unwrap_or_default();
        let refusal = match f.judgement.verdict() {
            Verdict::Stale => None,
            // Not proven stale: a person may decide, in a dialog of its own.
            Verdict::Foreign | Verdict::Unknown => {
                cx.queue
                    .push(Request::Confirm(ConfirmAction::Force(Box::new(f))));
                return;
            }
            Verdict::Live => Some(format!(
                "{name} is live: a live lock is never removed — {why}"
            )),
            Verdict::Free => Some(format!(
                "{name} is free: nobody holds this kernel-lock file, and removing it could split programs waiting on it"
            )),
        };
        match refusal {
            Some(r) => cx
                .queue
                .say_about(Level::Warn, format!("not reclaimable: {r}"), &f.path),
            None => cx.queue.push(Request::Confirm(ConfirmAction::Reclaim {
                findings: vec![f],
                kept: Vec::new(),
                skipped: Vec::new(),
            })),
        }
    }

    /// `D`: the marked locks when some are marked, else every stale lock shown. Stale locks
    /// holding unsaved changes are kept (one at a time with `d`), and marked locks that
    /// are not stale are left alone; the dialog lists both.
    pub(super) fn ask_reclaim_all(&mut self, cx: &mut Cx<'_>) {
        if let Some(why) = cx.busy.refusal() {
            cx.queue.say(Level::Warn, why);
            return;
        }
        let marked = self.list.marked() > 0;
        let chosen: Vec<Finding> = if marked {
            self.list
                .marked_rows()
                .into_iter()
                .map(|r| r.finding.clone())
                .collect()
        } else {
            self.list
                .visible()
                .filter(|r| r.verdict() == Verdict::Stale)
                .map(|r| r.finding.clone())
                .collect()
        };
        let (stale, skipped): (Vec<Finding>, Vec<Finding>) = chosen
            .into_iter()
            .partition(|f| f.judgement.verdict() == Verdict::Stale);
        let (kept, findings): (Vec<Finding>, Vec<Finding>) = stale
            .into_iter()
            .partition(|f| f.judgement.keeping().is_some());
        let what = if marked {
            "marked lock"
        } else {
            "stale lock shown"
        };
        if findings.is_empty() && kept.is_empty() {
            cx.queue.say(
                Level::Warn,
                format!("no {what} is stale: nothing to reclaim"),
            );
            return;
        }
        if let ([], [first, ..]) = (findings.as_slice(), kept.as_slice()) {
            let flag = first.judgement.keeping().expect("kept for a flag");
            let verb = locksmith::dialect::action_of(
                first.dialect,
                &first.path,
                &first.content,
                &first.judgement,
            )
            .map_or("handle", |a| a.verb);
            cx.queue.say(
                Level::Warn,
                format!(
                    "every stale {what} is a {} with {}: {verb} it with {}, or reclaim it alone with {}",
                    flag.what,
                    flag.label,
                    keymap::key(Context::Table, Action::Recover),
                    keymap::key(Context::Table, Action::Reclaim)
                ),
            );
            return;
        }
        cx.queue.push(Request::Confirm(ConfirmAction::Reclaim {
            findings,
            kept,
            skipped,
        }));
    }

    /// `x`: whom to signal is found out off the UI thread, then asked.
    pub(super) fn ask_stop(&mut self, cx: &mut Cx<'_>) {
        if cx.busy.readonly {
            cx.queue.say(Level::Warn, READ_ONLY);
            return;
        }
        if cx.busy.stopping {
            cx.queue
                .say(Level::Warn, "processes are being signalled already");
            return;
        }
        let Some(row) = self.selected_row() else {
            cx.queue.say(Level::Warn, "no lock selected");
            return;
        };
        if stop::candidates(&row.finding.judgement).is_empty() {
            let said = format!(
                "{}: no process holds it now, nothing to stop",
                row.cells.path
            );
            cx.queue.say_about(Level::Warn, said, &row.finding.path);
            return;
        }
        cx.queue
            .push(Request::PlanStop(Box::new(row.finding.clone())));
    }

    /// `e`: the row's own action, as its dialect offers it (recover unsaved changes in the
    /// editor that wrote them).
    pub(super) fn recover(&mut self, cx: &mut Cx<'_>) {
        let Some(row) = self.selected_row() else {
            return;
        };
        let path = row.finding.path.clone();
        match row.recovery() {
            Some(editor) => {
                let run = Run::Recover { swap: path, editor };
                let f = Box::new(row.finding.clone());
                cx.queue.push(Request::Do(Effect::Run(run, f)));
            }
            None => {
                let f = &row.finding;
                let action =
                    locksmith::dialect::action_of(f.dialect, &f.path, &f.content, &f.judgement);
                let why = match action {
                    Some(a) if row.unsaved() && row.verdict() == Verdict::Live => a.when_live,
                    _ => "only a lock holding unsaved changes has something to recover",
                };
                let said = format!("nothing to recover: {why}");
                cx.queue.say_about(Level::Warn, said, &path);
            }
        }
    }
}

#[cfg(test)]
mod tests;
