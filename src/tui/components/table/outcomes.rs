//! What comes back to the lock table from the workers: locks judged again, what came of a
//! reclaim, of an undo, of `x`'s look at the holders and of a program run with the UI
//! suspended. The rows follow (a lock removed leaves, one kept shows how it was judged at the
//! moment), and the status bar says what was done.

use std::collections::HashMap;
use std::path::PathBuf;

use locksmith::report::waiting::Waiting;

use super::super::super::confirm::ConfirmAction;
use super::super::super::keymap::{self, Action, Context};
use super::super::super::msg::{
    Effect, ReclaimResult, Rejudge, RestoreResult, RunResult, StopResult,
};
use super::super::super::queue::{Level, Queue, Request};
use super::super::super::stop;
use super::super::super::text::{self, plural};
use super::Table;

impl Table {
    /// Locks judged again: each listed one takes its new judgement (a lock not listed is not
    /// added), those gone go; `generation`: the current scan.
    pub fn rejudged(&mut self, results: Vec<(PathBuf, Rejudge)>, generation: u64) {
        let mut gone = Vec::new();
        for (path, r) in results {
            match r {
                Rejudge::Judged(f) => {
                    if self.list.contains(&path) {
                        self.list.upsert(*f, None, generation);
                    }
                }
                Rejudge::Gone => gone.push(path),
                Rejudge::Failed(_) => {}
            }
        }
        self.list.remove_all(&gone, generation);
    }

    /// What came of a reclaim: the locks removed (or gone already) leave the table, those
    /// kept show how they were judged at the moment of the attempt; the status says what was
    /// done, and how to undo it.
    pub fn reclaimed(&mut self, results: Vec<ReclaimResult>, generation: u64, queue: &mut Queue) {
        let total = results.len();
        let mut removed = 0;
        let mut refused: Vec<String> = Vec::new();
        let mut gone = Vec::new();
        for r in &results {
            if r.removed || r.gone {
                removed += usize::from(r.removed);
                gone.push(r.path.clone());
            } else if let Some(j) = &r.judgement
                && let Some(row) = self.list.get(&r.path)
            {
                let mut f = row.finding.clone();
                f.judgement = j.clone();
                self.list.upsert(f, None, generation);
            }
            if !r.removed {
                refused.push(format!(
                    "{}: {}",
                    text::path(&r.path),
                    text::clean(&r.message)
                ));
            }
        }
        self.list.remove_all(&gone, generation);
        let undo = format!(" ({} undoes it)", keymap::key(Context::Table, Action::Undo));
        let (level, said) = match (total, results.first()) {
            (1, Some(r)) if r.removed => (Level::Info, text::clean(&r.message) + &undo),
            (1, Some(r)) if r.gone => (Level::Warn, text::clean(&r.message)),
            (1, Some(_)) => (Level::Error, format!("not removed: {}", refused[0])),
            _ if refused.is_empty() => (
                Level::Info,
                format!("reclaimed {removed} stale lock{}{undo}", plural(removed)),
            ),
            _ => (
                Level::Warn,
                format!(
                    "reclaimed {removed} of {total}; not removed: {}",
                    refused.join("; ")
                ),
            ),
        };
        queue.say(level, said);
    }

    /// Who waits for the locks a re-judge round judged (`judged`; a lock of those missing
    /// from `waiting` has no waiter now).
    pub fn set_waiting(&mut self, judged: Vec<PathBuf>, waiting: HashMap<PathBuf, Waiting>) {
        for p in &judged {
            self.waiting.remove(p);
        }
        self.waiting.extend(waiting);
    }

    /// The locks an undo put back return to the table; the status says what was done.
    pub fn restored(&mut self, r: RestoreResult, generation: u64, queue: &mut Queue) {
        for f in r.findings {
            self.list.upsert(f, Some(generation), generation);
        }
        let level = if r.restored {
            Level::Info
        } else {
            Level::Error
        };
        queue.say(level, text::clean(&r.message));
    }

    /// Whom `x` would signal: its dialog, naming a holder seen stuck (stopped, or not reaping
    /// its children) and why, while the lock is listed; or why nobody.
    pub fn stop_planned(&mut self, plan: Result<stop::Plan, String>, queue: &mut Queue) {
        match plan {
            Ok(mut plan) => {
                let path = plan.finding.path.clone();
                plan.stuck = self.waiting.get(&path).and_then(|w| w.holder.clone());
                if self.list.contains(&path) {
                    queue.push(Request::Confirm(ConfirmAction::Signal(plan)));
                }
            }
            Err(why) => queue.say(Level::Warn, format!("x: {}", text::clean(&why))),
        }
    }

    /// Signals sent: the status says what came of them; SIGKILL is offered for what a signal
    /// that asked to end did not end, while the lock is listed; the lock is judged again (it
    /// turns stale once its holders are gone).
    pub fn stopped(&mut self, r: StopResult, queue: &mut Queue) {
        let StopResult { plan, sent } = r;
        let path = plan.finding.path.clone();
        let (said, wrong) = sent.said(&plan);
        let level = if wrong { Level::Warn } else { Level::Info };
        queue.say_about(level, said, &path);
        if let Some(again) = sent.again(&plan)
            && self.list.contains(&path)
        {
            queue.push(Request::Confirm(ConfirmAction::Signal(again)));
        }
        let finding = self
            .list
            .get(&path)
            .map_or_else(|| *plan.finding.clone(), |row| row.finding.clone());
        queue.push(Request::Do(Effect::Rejudge(vec![finding])));
    }

    /// A program run with the UI suspended has ended: the status says how, and its lock is
    /// judged again; one that was not run says why in a pop-up.
    pub fn ran(&mut self, r: RunResult, queue: &mut Queue) {
        if let Some(why) = r.refused {
            queue.push(Request::NotRecovered { swap: r.path, why });
            return;
        }
        let level = if r.ok { Level::Info } else { Level::Warn };
        queue.say_about(level, text::clean(&r.message), &r.path);
        if let Some(row) = self.list.get(&r.path) {
            let again = vec![row.finding.clone()];
            queue.push(Request::Do(Effect::Rejudge(again)));
        }
    }
}

#[cfg(test)]
mod tests;
