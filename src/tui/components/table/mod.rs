//! The lock table: the listed locks ([`List`]), the selection, the marks, the filter and find
//! prompts, and the keys of the table's context (`keymap`'s "Lock table", "Filter" and
//! "Find"). It asks for everything beyond itself through the queue: a reclaim's dialog
//! (`d`, `D`), whom `x` would stop, an undo, the journal, a program to run, a copy, a rescan,
//! the help, the why prompt and every status message.
//!
//! Invariants:
//! - the selection follows the selected lock's path across refreshes, sorts and filters
//!   (narrowing the filter keeps it while it matches, else selects the first match); until
//!   the user moves it, it stays on the first row while rows stream in (stale first);
//! - the selected row is always on screen, by the screen's layout at that moment
//!   ([`super::screen`]): when the selection moves to another lock, the detail pane's text goes
//!   back to its top and a status message about the lock left behind goes, before the table
//!   scrolls to it;
//! - rows, marks and what was looked for are keyed by path; a row that is gone loses its mark.

mod asks;
mod columns;
mod find;
mod list;
mod outcomes;

#[cfg(test)]
pub use columns::{ContentWidths, content_widths};
pub use list::{List, REJUDGE_SLICE};

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use locksmith::Verdict;
use locksmith::report::waiting::Waiting;
use ratatui::buffer::Buffer;
use ratatui::crossterm::event::{KeyCode, KeyEvent};
use ratatui::layout::Rect;

use super::super::keymap::{self, Action, Context};
use super::super::layout::{self, Screen};
use super::super::msg::{Effect, Run};
use super::super::queue::{Level, Request, Said};
use super::super::rows::{Row, next_sort};
use super::super::text::plural;
use super::super::theme::Theme;
use super::{Cx, screen};

/// A prompt being typed in the status line.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Prompt {
    /// The filter (its text is the list's filter): the list narrows as it is typed.
    Filter,
    /// What to find: the selection moves to the next match as it is typed.
    Find {
        text: String,
        /// The selection before `f` (Esc goes back to it).
        origin: Option<PathBuf>,
    },
}

/// The lock table.
#[derive(Debug)]
pub struct Table {
    pub list: List,
    /// Position of the selection in the view.
    cursor: usize,
    /// The selected lock's path: what the selection follows.
    selected: Option<PathBuf>,
    /// Whether the user has moved the selection; until then it stays on the first row while
    /// rows stream in (stale first), instead of following whichever lock came first.
    moved: bool,
    /// First row shown.
    offset: usize,
    /// The filter changed since the last refresh: a selection it hides gives way to the
    /// first match.
    refiltered: bool,
    prompt: Option<Prompt>,
    /// What was looked for last (`n`/`N` find it again).
    pub found: Option<String>,
    /// Who waits for each listed lock, and its holder's state (from the last re-judge round).
    pub waiting: HashMap<PathBuf, Waiting>,
    /// Where the why prompt's messages are read (the current directory and environment the
    /// UI started in).
    why_context: locksmith::why::Context,
}

impl Default for Table {
    fn default() -> Self {
        Table {
            list: List::default(),
            cursor: 0,
            selected: None,
            moved: false,
            offset: 0,
            refiltered: false,
            prompt: None,
            found: None,
            waiting: HashMap::new(),
            why_context: locksmith::why::Context::current(),
        }
    }
}

impl Table {
    // ----- reading -----

    /// The position of the selection among the visible rows.
    pub fn cursor(&self) -> Option<usize> {
        (self.list.shown() > 0).then_some(self.cursor)
    }

    pub fn selected_row(&self) -> Option<&Row> {
        self.list.shown_at(self.cursor)
    }

    /// The waiters and holder state of the selected lock, when known.
    pub fn selected_waiting(&self) -> Option<&Waiting> {
        self.waiting.get(&self.selected_row()?.finding.path)
    }

    /// The first visible row on screen.
    pub fn offset(&self) -> usize {
        self.offset
    }

    /// Whether any row is shown.
    pub fn has_rows(&self) -> bool {
        self.list.shown() > 0
    }

    /// The context of the prompt being typed, if any.
    pub fn typing(&self) -> Option<Context> {
        match &self.prompt {
            Some(Prompt::Filter) => Some(Context::Filter),
            Some(Prompt::Find { .. }) => Some(Context::Find),
            None => None,
        }
    }

    /// The prompt being typed, if any: its sign (`/`, `find: `) and text.
    pub fn prompt(&self) -> Option<(&'static str, &str)> {
        match &self.prompt {
            Some(Prompt::Filter) => Some(("/", self.list.filter())),
            Some(Prompt::Find { text, .. }) => Some(("find: ", text.as_str())),
            None => None,
        }
    }

    /// Where the selection is (`12/78`), and how many locks match while a filter is active
    /// (`2/3 · 3 of 78 match`).
    pub fn position_text(&self) -> String {
        let shown = self.list.shown();
        let pos = match self.cursor() {
            Some(c) => format!("{}/{shown}", c + 1),
            None => String::new(),
        };
        if !self.list.filtered() {
            return pos;
        }
        let total = self.list.rows().len();
        let matches = format!("{shown} of {total} match");
        if pos.is_empty() {
            matches
        } else {
            format!("{pos} · {matches}")
        }
    }

    /// Rows of the table on screen (the PgUp/PgDn step).
    pub fn page(&self, cx: &Cx<'_>) -> usize {
        let s = screen(cx.area, cx.detail, cx.status, self);
        usize::from(s.table_body().height).max(1)
    }

    // ----- keeping the selection -----

    /// Brings the view up to date, and moves the cursor to the selected path (or keeps its
    /// position when that lock is gone; after a change of the filter that hides it, the first
    /// match).
    pub fn refresh(&mut self, cx: &mut Cx<'_>) {
        if self.list.refresh(cx.now_ms) {
            let found = if !self.moved {
                Some(0)
            } else {
                self.selected
                    .as_ref()
                    .and_then(|sel| self.list.locate(sel, cx.now_ms))
            };
            let refiltered = std::mem::take(&mut self.refiltered);
            self.cursor = match found {
                Some(pos) => pos,
                None if refiltered => 0,
                None => self.cursor.min(self.list.shown().saturating_sub(1)),
            };
            self.sync_selected(cx);
        }
        self.keep_visible(cx);
    }

    fn sync_selected(&mut self, cx: &mut Cx<'_>) {
        let now = self
            .list
            .shown_at(self.cursor)
            .map(|r| r.finding.path.clone());
        if now != self.selected {
            cx.detail.selection_moved();
            let list = &self.list;
            cx.status
                .selection_moved(now.as_deref(), |p| list.contains(p));
        }
        self.selected = now;
    }

    fn move_to(&mut self, pos: usize, cx: &mut Cx<'_>) {
        self.moved = true;
        self.cursor = pos.min(self.list.shown().saturating_sub(1));
        self.sync_selected(cx);
        self.keep_visible(cx);
    }

    /// Selects the visible row of `path`, if it is shown.
    fn select_path(&mut self, path: &Path, cx: &mut Cx<'_>) -> bool {
        match self.list.position(path) {
            Some(pos) => {
                self.move_to(pos, cx);
                true
            }
            None => false,
        }
    }

    /// Scrolls so that the selection is on screen, and so that no rows hide above the top
    /// while there is room below (after a filter shrinks the list, say).
    pub fn keep_visible(&mut self, cx: &Cx<'_>) {
        let page = self.page(cx);
        let len = self.list.shown();
        let mut offset = self.offset.min(len.saturating_sub(page));
        if let Some(c) = self.cursor() {
            if c < offset {
                offset = c;
            } else if c >= offset + page {
                offset = c + 1 - page;
            }
        }
        self.offset = offset;
    }

    // ----- keys -----

    /// What a key of the table's context does.
    pub fn act(&mut self, action: Action, cx: &mut Cx<'_>) {
        let page = self.page(cx);
        let last = self.list.shown().saturating_sub(1);
        match action {
            Action::Back => {
                if !self.list.filter().is_empty() {
                    self.list.set_filter(String::new());
                    self.refiltered = true;
                } else if self.list.marked() > 0 {
                    let n = self.list.clear_marks();
                    cx.queue
                        .say(Level::Info, format!("{n} mark{} cleared", plural(n)));
                } else {
                    // Nothing to back out of: Esc never quits.
                    let quit = keymap::key(Context::Table, Action::Quit);
                    cx.queue
                        .say(Level::Info, format!("nothing to close: {quit} quits"));
                }
            }
            Action::Down => self.move_to(self.cursor.saturating_add(1), cx),
            Action::Up => self.move_to(self.cursor.saturating_sub(1), cx),
            Action::Top => self.move_to(0, cx),
            Action::Bottom => self.move_to(last, cx),
            Action::PageDown => self.move_to(self.cursor.saturating_add(page), cx),
            Action::PageUp => self.move_to(self.cursor.saturating_sub(page), cx),
            Action::CopyPath => self.copy_path(cx),
            Action::StartFilter => self.prompt = Some(Prompt::Filter),
            Action::StartFind => {
                self.prompt = Some(Prompt::Find {
                    text: String::new(),
                    origin: self.selected.clone(),
                })
            }
            Action::FindNext => self.find_again(true, cx),
            Action::FindPrev => self.find_again(false, cx),
            Action::CycleSort => self.list.sort_by(next_sort(self.list.sort())),
            Action::InvertSort => self.list.invert(),
            Action::NextVerdictFilter | Action::PrevVerdictFilter => {
                // None, stale, live, foreign, unknown, free, None, ...
                let cycle: Vec<Option<Verdict>> = std::iter::once(None)
                    .chain(Verdict::ALL.iter().copied().map(Some))
                    .collect();
                let now = self.list.verdict_filter();
                let i = cycle.iter().position(|&v| v == now).unwrap_or(0);
                let n = cycle.len();
                let j = if action == Action::NextVerdictFilter {
                    (i + 1) % n
                } else {
                    (i + n - 1) % n
                };
                self.list.set_verdict_filter(cycle[j]);
                self.refiltered = true;
            }
            Action::Rescan => cx.queue.push(Request::Rescan),
            Action::ToggleMark => {
                if let Some(path) = self.selected.clone() {
                    self.list.toggle_mark(&path);
                    self.move_to(self.cursor.saturating_add(1), cx);
                }
            }
            Action::Help => cx.queue.push(Request::Help),
            Action::Reclaim => self.ask_reclaim_selected(cx),
            Action::ReclaimAllStale => self.ask_reclaim_all(cx),
            Action::Undo => {
                if let Some(why) = cx.busy.refusal() {
                    cx.queue.say(Level::Warn, why);
                    return;
                }
                let said = "looking for the last reclaim made in the UI…".into();
                cx.queue.push(Request::Say(Said::UntilDone(said)));
                cx.queue.push(Request::Do(Effect::PlanUndo));
            }
            Action::Journal => {
                let said = "reading the journal…".into();
                cx.queue.push(Request::Say(Said::UntilDone(said)));
                cx.queue.push(Request::Do(Effect::ReadJournal));
            }
            Action::Signal => self.ask_stop(cx),
            Action::Recover => self.recover(cx),
            Action::Why => cx.queue.push(Request::Why(String::new())),
            Action::OpenShell => {
                let Some(row) = self.selected_row() else {
                    return;
                };
                let Some(dir) = row.finding.path.parent() else {
                    return;
                };
                let run = Run::Shell {
                    dir: dir.to_path_buf(),
                };
                let f = Box::new(row.finding.clone());
                cx.queue.push(Request::Do(Effect::Run(run, f)));
            }
            _ => {}
        }
    }

    /// A prompt's keys: the filter narrows the list as it is typed; find selects the next
    /// match as it is typed.
    pub fn act_prompt(&mut self, action: Action, key: &KeyEvent, cx: &mut Cx<'_>) {
        match action {
            Action::TextInput
            | Action::TextBackspace
            | Action::TextClearLine
            | Action::TextDeleteWord => match &mut self.prompt {
                Some(Prompt::Find { text, .. }) => edit(text, action, key),
                _ => {
                    let mut filter = self.list.filter().to_string();
                    edit(&mut filter, action, key);
                    self.list.set_filter(filter);
                }
            },
            Action::TextDone => {
                match self.prompt.take() {
                    Some(Prompt::Find { text, .. }) => {
                        self.found = (!text.is_empty()).then(|| text.clone());
                        if !text.is_empty() {
                            let said = self.found_message(&text);
                            cx.queue.say(Level::Info, said);
                        }
                    }
                    // n and N find it again once the filter is cleared (as in less).
                    _ if !self.list.filter().is_empty() => {
                        self.found = Some(self.list.filter().to_string());
                    }
                    _ => {}
                }
                return;
            }
            Action::TextCancel => {
                match self.prompt.take() {
                    Some(Prompt::Find { origin, .. }) => {
                        if let Some(origin) = origin {
                            self.select_path(&origin, cx);
                        }
                    }
                    _ => {
                        self.list.set_filter(String::new());
                        self.refiltered = true;
                    }
                }
                return;
            }
            _ => return,
        }
        self.typed(cx);
    }

    /// The prompt's text changed: the filter narrows the list; find moves to the first match
    /// from where the selection was, so each letter typed refines the same search.
    fn typed(&mut self, cx: &mut Cx<'_>) {
        match &self.prompt {
            Some(Prompt::Find { text, origin }) => {
                let (needle, origin) = (text.clone(), origin.clone());
                let start = origin.and_then(|o| self.list.position(&o)).unwrap_or(0);
                if let Some(pos) = self.next_match(&needle, start, true, true) {
                    self.move_to(pos, cx);
                }
            }
            _ => self.refiltered = true,
        }
    }

    /// Pasted text, while a prompt is typed: its first line is typed.
    pub fn paste(&mut self, pasted: &str) {
        let line = pasted.lines().next().unwrap_or("");
        match &mut self.prompt {
            None => {}
            Some(Prompt::Find { text, .. }) => text.push_str(line),
            Some(Prompt::Filter) => {
                let filter = format!("{}{line}", self.list.filter());
                self.list.set_filter(filter);
                self.refiltered = true;
            }
        }
    }

    /// The prompt goes, its text as it is (a pop-up opened over it).
    pub fn close_prompt(&mut self) {
        self.prompt = None;
    }

    /// A click or the wheel at (`x`, `y`) of the table on `screen` (`wheel`: lines down, up
    /// when negative, 0 for a click): a click selects a row or sorts by a column title; the
    /// wheel moves the selection, so it stays in view.
    pub fn mouse(&mut self, x: u16, y: u16, wheel: i32, screen: &Screen, cx: &mut Cx<'_>) {
        if !layout::contains(screen.table, x, y) {
            return;
        }
        if wheel != 0 {
            let to = self.cursor.saturating_add_signed(wheel as isize);
            self.move_to(to, cx);
            return;
        }
        let body = screen.table_body();
        if y < body.y {
            let plan = columns::plan(screen.table.width, self.list.content_widths());
            if let Some(c) = columns::column_at(&plan, x - screen.table.x) {
                self.list.sort_by(c);
            }
            return;
        }
        let row = self.offset + usize::from(y - body.y);
        if row < self.list.shown() {
            self.move_to(row, cx);
        }
    }

    // ----- drawing -----

    /// Draws the table at `area`; `scanning`: a scan the user started runs (an empty list
    /// says it is looking).
    pub fn render(&self, theme: Theme, now_ms: i64, scanning: bool, area: Rect, buf: &mut Buffer) {
        let plan = columns::plan(area.width, self.list.content_widths());
        let body = usize::from(area.height.saturating_sub(layout::TABLE_HEADER_HEIGHT));
        let rows: Vec<&Row> = self.list.visible().skip(self.offset).take(body).collect();
        let marked: Vec<bool> = rows
            .iter()
            .map(|r| self.list.is_marked(&r.finding.path))
            .collect();
        let empty = if scanning {
            "looking for locks…"
        } else if self.list.rows().is_empty() {
            "no locks found"
        } else {
            "no lock matches the filter"
        };
        columns::render(
            &columns::TableProps {
                theme,
                plan: &plan,
                sort: self.list.sort(),
                descending: self.list.descending(),
                now_ms,
                selected: self.cursor().map(|c| c - self.offset),
                marked: &marked,
                empty,
            },
            &rows,
            area,
            buf,
        );
    }
}

/// Edits a prompt's `text` as `action` (a key typed, Backspace, Ctrl-U, Ctrl-W) says.
fn edit(text: &mut String, action: Action, key: &KeyEvent) {
    match action {
        Action::TextInput => {
            if let KeyCode::Char(c) = key.code {
                text.push(c);
            }
        }
        Action::TextBackspace => {
            text.pop();
        }
        Action::TextClearLine => text.clear(),
        Action::TextDeleteWord => {
            // Like a shell's Ctrl-W: the spaces before the cursor, then the word.
            let kept = text
                .trim_end()
                .trim_end_matches(|c: char| !c.is_whitespace());
            let n = kept.len();
            text.truncate(n);
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests;
