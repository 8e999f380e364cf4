//! Finding in the lock table: `f` finds as it is typed, `n`/`N` find again what `f` or the
//! filter looked for last (wrapping around, and saying so), and the why prompt's error message
//! selects the lock it is about (see [`locksmith::why`]), clearing a filter that hides it.

use super::super::super::keymap::{self, Action, Context};
use super::super::super::queue::Level;
use super::super::super::rows::Row;
use super::super::super::text;
use super::super::Cx;
use super::Table;

impl Table {
    /// The position of the next visible row matching `needle` from `start` (itself included
    /// when `inclusive`), forwards or backwards, wrapping around.
    pub(super) fn next_match(
        &self,
        needle: &str,
        start: usize,
        forward: bool,
        inclusive: bool,
    ) -> Option<usize> {
        let n = self.list.shown();
        if n == 0 || needle.is_empty() {
            return None;
        }
        let needle = needle.to_lowercase();
        let first = if inclusive { 0 } else { 1 };
        (first..n + first)
            .map(|k| {
                if forward {
                    (start + k) % n
                } else {
                    (start + n * 2 - k) % n
                }
            })
            .find(|&pos| self.matches(pos, &needle))
    }

    fn matches(&self, pos: usize, lower: &str) -> bool {
        self.list
            .shown_at(pos)
            .is_some_and(|r| r.cells.search.contains(lower))
    }

    /// `n`/`N`: the next or previous match of what was found last.
    pub(super) fn find_again(&mut self, forward: bool, cx: &mut Cx<'_>) {
        let Some(needle) = self.found.clone() else {
            return;
        };
        match self.next_match(&needle, self.cursor, forward, false) {
            Some(pos) => {
                let wrapped = if forward {
                    pos <= self.cursor
                } else {
                    pos >= self.cursor
                };
                self.move_to(pos, cx);
                let mut said = self.found_message(&needle);
                if wrapped {
                    said.push_str(if forward {
                        " (from the top)"
                    } else {
                        " (from the bottom)"
                    });
                }
                cx.queue.say(Level::Info, said);
            }
            None => cx.queue.say(
                Level::Warn,
                format!("no lock shown matches {:?}", text::clean(&needle)),
            ),
        }
    }

    /// What the status says after a find: which match of how many is selected.
    pub(super) fn found_message(&self, needle: &str) -> String {
        let lower = needle.to_lowercase();
        let matches: Vec<usize> = (0..self.list.shown())
            .filter(|&p| self.matches(p, &lower))
            .collect();
        match matches.iter().position(|&p| p == self.cursor) {
            Some(i) => format!(
                "{:?}: match {} of {} ({}/{} for the next and previous)",
                text::clean(needle),
                i + 1,
                matches.len(),
                keymap::key(Context::Table, Action::FindNext),
                keymap::key(Context::Table, Action::FindPrev)
            ),
            None => format!("no lock shown matches {:?}", text::clean(needle)),
        }
    }

    /// Selects the lock an error message is about: the row at a place where the program that
    /// printed it keeps its lock (the one the PID it names holds, if several), else a row
    /// whose path the message names. A hidden row is shown (the filters are cleared).
    pub fn find_message(&mut self, message: &str, cx: &mut Cx<'_>) {
        let recognised = locksmith::why::recognise(message);
        let rows = self.list.rows();
        let mut found = None;
        for r in &recognised {
            let places = r.places(&self.why_context);
            let hits: Vec<&Row> = places
                .iter()
                .flat_map(|p| rows.iter().filter(move |row| p.matches(&row.finding.path)))
                .collect();
            let by_pid = r.pid().and_then(|pid| {
                hits.iter().find(|row| {
                    let j = &row.finding.judgement;
                    j.owner.as_ref().and_then(|o| o.pid) == Some(pid)
                        || j.holders.iter().any(|h| i64::from(h.pid) == pid)
                })
            });
            if let Some(row) = by_pid.or(hits.first()) {
                found = Some((Some(r.program), row.finding.path.clone()));
                break;
            }
        }
        if found.is_none() {
            found = rows
                .iter()
                .find(|row| {
                    row.finding
                        .path
                        .to_str()
                        .is_some_and(|p| message.contains(p))
                })
                .map(|row| (None, row.finding.path.clone()));
        }
        let Some((program, path)) = found else {
            let said = match recognised.first() {
                Some(r) => format!(
                    "this is {}'s message, but its lock is not in the list: it may be gone, or \
                     outside the places scanned (`locksmith why` looks where {} keeps it)",
                    r.program, r.program
                ),
                None => "locksmith does not know this message, and it names no lock in the list"
                    .to_string(),
            };
            cx.queue.say(Level::Warn, said);
            return;
        };
        if !self.select_path(&path, cx) {
            self.list.set_filter(String::new());
            self.list.set_verdict_filter(None);
            self.refiltered = true;
            self.refresh(cx);
            self.select_path(&path, cx);
        }
        let verdict = self
            .list
            .get(&path)
            .map(|r| r.finding.judgement.verdict().as_str())
            .unwrap_or("?");
        let whose = program.map_or_else(
            || "the lock the message names".to_string(),
            |p| format!("{p}'s lock"),
        );
        let said = format!("{whose}: {} ({verdict})", text::path(&path));
        cx.queue.say_about(Level::Info, said, &path);
    }
}
