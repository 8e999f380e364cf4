//! The journal view (`U`): what reclaims removed and restores put back, grouped by run as
//! `locksmith journal` lists them (the runs in the order they first wrote, each with who made
//! it and what is left to undo, its lines oldest first, numbered as `locksmith journal`
//! numbers them). A cursor picks a run (all of it that is not put back yet) or one reclaim;
//! `Enter` (or `u`) opens the undo dialog for it, with a preview of what comes back and *No*
//! highlighted: this is how a reclaim of another run (a `--scan --reclaim`, `locksmith
//! start`, a cron job) is undone from the UI, and only when a person picks it.
//!
//! Every line fits the width (a path loses its middle), so one line of the journal is one line
//! on screen and the cursor's line can be kept in view.

use std::any::Any;
use std::collections::HashMap;
use std::path::PathBuf;

use locksmith::reclaim::{self, Entry, Event, Selector, Via};
use ratatui::crossterm::event::KeyCode;
use ratatui::style::Style;
use ratatui::text::{Line, Span};

use super::super::keymap::{
    Action, BOTTOM, Bar, Binding, DOWN, Key, Keys, PAGE_DOWN, PAGE_UP, TOP, UP, bar, bind,
};
use super::super::text::{self, plural};
use super::{Content, Env, Outcome, Popup};

static BINDINGS: [Binding; 8] = [
    bind(
        &[Key::plain(KeyCode::Enter), Key::ch('u')],
        "undo",
        "Undo what the cursor is on (a run: all of it not put back yet; a line: that lock), after a preview and a yes",
        Action::Choose,
        bar(1),
    ),
    bind(
        &[Key::plain(KeyCode::Esc), Key::ch('q'), Key::ch('U')],
        "close",
        "Close the journal view",
        Action::Close,
        bar(1),
    ),
    bind(
        DOWN,
        "move",
        "Move to the next run or reclaim",
        Action::Down,
        bar(2),
    ),
    bind(
        UP,
        "up",
        "Move to the previous run or reclaim",
        Action::Up,
        Bar::No,
    ),
    bind(
        PAGE_DOWN,
        "page down",
        "Move one page down",
        Action::PageDown,
        Bar::No,
    ),
    bind(
        PAGE_UP,
        "page up",
        "Move one page up",
        Action::PageUp,
        Bar::No,
    ),
    bind(TOP, "top", "Go to the first run", Action::Top, Bar::No),
    bind(
        BOTTOM,
        "end",
        "Go to the last reclaim",
        Action::Bottom,
        Bar::No,
    ),
];

pub static KEYS: Keys = Keys {
    title: "Journal view (after U)",
    bindings: &BINDINGS,
};

/// One line of the view.
#[derive(Debug, Clone)]
enum Item {
    /// A run's title; picking it undoes what is left of the run.
    Run { run: String, text: String },
    /// A journal line (`n` its number, from 1); a reclaim not put back yet can be picked.
    Line { index: usize, pickable: bool },
    /// Between runs.
    Blank,
}

/// The journal view.
#[derive(Debug)]
pub struct Journal {
    /// The whole journal, oldest first.
    entries: Vec<Entry>,
    items: Vec<Item>,
    /// The item the cursor is on (a pickable one, when there is one).
    cursor: usize,
    scroll: u16,
    /// The state of each reclaim line (`undoable`, `restored`, ...).
    states: Vec<&'static str>,
    /// What the last pick could not do.
    note: Option<String>,
    /// The widths of the columns of its lines.
    widths: Widths,
}

/// The widths of the columns of the journal's lines: as wide as what they hold.
#[derive(Debug, Default)]
struct Widths {
    number: usize,
    event: usize,
    state: usize,
    dialect: usize,
}

impl Journal {
    /// The view of `entries` (the whole journal, oldest first); this UI's run is `own`. The
    /// cursor starts on the newest reclaim left to undo (else the last line).
    pub fn new(entries: Vec<Entry>, own: &str) -> Journal {
        let done = reclaim::restore::restored_ids(&entries);
        let cancelled = reclaim::restore::cancelled_ids(&entries);
        let states: Vec<&'static str> = entries
            .iter()
            .map(|e| match e.event {
                Event::Reclaim if done.contains(e.id.as_str()) => "restored",
                Event::Reclaim if cancelled.contains(e.id.as_str()) => "not removed",
                Event::Reclaim if e.not_saved.is_some() => "no copy",
                Event::Reclaim => "undoable",
                Event::Restore => "put back",
                Event::ReclaimFailed => "kept",
            })
            .collect();
        let mut order: Vec<&str> = Vec::new();
        let mut of_run: HashMap<&str, Vec<usize>> = HashMap::new();
        for (i, e) in entries.iter().enumerate() {
            of_run
                .entry(e.run.as_str())
                .or_insert_with(|| {
                    order.push(e.run.as_str());
                    Vec::new()
                })
                .push(i);
        }
        let mut items = Vec::new();
        for (k, run) in order.iter().enumerate() {
            if k > 0 {
                items.push(Item::Blank);
            }
            let lines = &of_run[run];
            let reclaimed = lines
                .iter()
                .filter(|&&i| entries[i].event == Event::Reclaim)
                .count();
            let undoable = lines.iter().filter(|&&i| states[i] == "undoable").count();
            let put_back = lines
                .iter()
                .filter(|&&i| entries[i].event == Event::Restore)
                .count();
            let kept = lines
                .iter()
                .filter(|&&i| entries[i].event == Event::ReclaimFailed)
                .count();
            let mut what = Vec::new();
            if reclaimed > 0 {
                what.push(format!("{reclaimed} reclaimed ({undoable} to undo)"));
            }
            if put_back > 0 {
                what.push(format!("{put_back} put back"));
            }
            if kept > 0 {
                what.push(format!("{kept} kept"));
            }
            let via = lines.iter().find_map(|&i| entries[i].via.as_deref());
            let who = if *run == own {
                "this UI session".to_string()
            } else {
                Via::describe(via).to_string()
            };
            let when = lines
                .first()
                .map(|&i| run_time(&entries[i].time))
                .unwrap_or_default();
            items.push(Item::Run {
                run: run.to_string(),
                text: format!("{who}, {when}: {}", what.join(", ")),
            });
            for &i in lines {
                items.push(Item::Line {
                    index: i,
                    pickable: states[i] == "undoable",
                });
            }
        }
        let cursor = items
            .iter()
            .rposition(|it| matches!(it, Item::Line { pickable: true, .. }))
            .unwrap_or(items.len().saturating_sub(1));
        let widths = Widths {
            number: entries.len().to_string().len(),
            event: entries
                .iter()
                .map(|e| e.event.as_str().len())
                .max()
                .unwrap_or(0),
            state: states.iter().map(|s| s.len()).max().unwrap_or(0),
            dialect: entries
                .iter()
                .map(|e| text::width(&text::clean(e.dialect.as_deref().unwrap_or("-"))))
                .max()
                .unwrap_or(0),
        };
        Journal {
            entries,
            items,
            cursor,
            scroll: 0,
            states,
            note: None,
            widths,
        }
    }

    fn pickable(&self, i: usize) -> bool {
        match &self.items[i] {
            Item::Run { .. } => true,
            Item::Line { pickable, .. } => *pickable,
            Item::Blank => false,
        }
    }

    /// Moves the cursor `delta` pickable items (or to the first / last one).
    fn step(&mut self, delta: isize) {
        let picks: Vec<usize> = (0..self.items.len())
            .filter(|&i| self.pickable(i))
            .collect();
        if picks.is_empty() {
            return;
        }
        let at = picks
            .iter()
            .position(|&i| i >= self.cursor)
            .unwrap_or(picks.len() - 1);
        let to = at.saturating_add_signed(delta).min(picks.len() - 1);
        self.cursor = picks[to];
        self.note = None;
    }

    /// The undo of what the cursor is on, or why there is none.
    fn pick(&self) -> Result<reclaim::Plan, String> {
        let selector = match self.items.get(self.cursor) {
            Some(Item::Run { run, .. }) => Selector::Run(run.clone()),
            Some(Item::Line { index, .. }) => Selector::Number(index + 1),
            _ => return Err("nothing to undo here".into()),
        };
        reclaim::restore::plan_in(&self.entries, &selector)
    }

    /// The line of an item, fitted to `width` columns.
    fn line(&self, item: &Item, selected: bool, width: usize, env: &Env<'_>) -> Line<'static> {
        let theme = env.theme;
        let marker = if selected { "▶ " } else { "  " };
        let style = if selected {
            theme.selected()
        } else {
            Style::new()
        };
        match item {
            Item::Blank => Line::from(""),
            Item::Run { text: t, run } => {
                // What and when first; the run's id where there is room for it.
                let room = width.saturating_sub(2);
                let main = text::clean(t);
                let id = format!("  (run {})", text::clean(run));
                let shown = if text::width(&main) + text::width(&id) <= room {
                    format!("{main}{id}")
                } else {
                    text::ellipsize_end(&main, room)
                };
                Line::from(vec![
                    Span::styled(marker, style),
                    Span::styled(shown, theme.label().patch(style)),
                ])
            }
            Item::Line { index, .. } => {
                let e = &self.entries[*index];
                let state = self.states[*index];
                let outside =
                    !env.roots.is_empty() && !env.roots.iter().any(|r| e.path_buf().starts_with(r));
                let head = format!(
                    "  #{:<w_n$}  {}  {:<w_e$}  {:<w_s$}  {:<w_d$}  ",
                    index + 1,
                    short_time(&e.time),
                    e.event.as_str(),
                    state,
                    text::clean(e.dialect.as_deref().unwrap_or("-")),
                    w_n = self.widths.number,
                    w_e = self.widths.event,
                    w_s = self.widths.state,
                    w_d = self.widths.dialect,
                );
                let tail = if outside && e.event == Event::Reclaim {
                    " (outside the roots on screen)"
                } else {
                    ""
                };
                let room = width.saturating_sub(2 + text::width(&head) + text::width(tail));
                let path = text::shorten_path(&text::path(&e.path_buf()), room);
                let state_style = match state {
                    "undoable" => theme.info(),
                    "no copy" | "not removed" => theme.warn(),
                    _ => theme.dim(),
                };
                Line::from(vec![
                    Span::styled(marker, style),
                    Span::styled(head, state_style.patch(style)),
                    Span::styled(path, style),
                    Span::styled(tail.to_string(), theme.warn().patch(style)),
                ])
            }
        }
    }
}

/// `12-02 00:03` from an RFC 3339 time (the run's title has the year).
fn short_time(t: &str) -> String {
    t.get(5..16).unwrap_or(t).replace('T', " ")
}

/// `2026-12-02 00:03` from an RFC 3339 time.
fn run_time(t: &str) -> String {
    t.get(..16).unwrap_or(t).replace('T', " ")
}

impl Popup for Journal {
    fn keys(&self) -> &'static Keys {
        &KEYS
    }

    fn width(&self) -> u16 {
        u16::MAX
    }

    fn content(&self, env: &Env<'_>) -> Content {
        let width = usize::from(env.width.saturating_sub(2));
        let mut body = Vec::new();
        if let Some(n) = &self.note {
            body.push(Line::from(Span::styled(
                text::ellipsize_middle(&text::clean(n), width),
                env.theme.warn(),
            )));
        }
        if self.items.is_empty() {
            body.push(Line::from(
                "The journal is empty: nothing was reclaimed with this state directory.",
            ));
        }
        for (i, it) in self.items.iter().enumerate() {
            body.push(self.line(it, i == self.cursor, width, env));
        }
        let n = self
            .items
            .iter()
            .filter(|i| matches!(i, Item::Run { .. }))
            .count();
        Content {
            title: format!(" Journal: {n} run{} ", plural(n)),
            body,
            buttons: None,
            border: Style::new(),
        }
    }

    fn scroll(&self) -> u16 {
        self.scroll
    }

    fn set_scroll(&mut self, lines: u16) {
        self.scroll = lines;
    }

    fn navigate(&mut self, action: Action, page: u16) -> bool {
        let page = isize::try_from(page.max(1)).unwrap_or(1);
        match action {
            Action::Down => self.step(1),
            Action::Up => self.step(-1),
            Action::PageDown => self.step(page),
            Action::PageUp => self.step(-page),
            Action::Top => self.step(isize::MIN / 2),
            Action::Bottom => self.step(isize::MAX / 2),
            _ => return false,
        }
        true
    }

    fn focus(&self) -> Option<u16> {
        let note = usize::from(self.note.is_some());
        u16::try_from(self.cursor + note).ok()
    }

    fn act(&mut self, action: Action) -> Outcome {
        match action {
            Action::Close => Outcome::Closed(None),
            Action::Choose => match self.pick() {
                Ok(plan) => Outcome::Undo(plan),
                Err(why) => {
                    self.note = Some(why);
                    Outcome::Stay
                }
            },
            _ => Outcome::Stay,
        }
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// The locks of `plan` outside `roots` (none when `roots` is empty).
pub fn outside<'a>(entries: &'a [Entry], roots: &[PathBuf]) -> Vec<&'a Entry> {
    if roots.is_empty() {
        return Vec::new();
    }
    entries
        .iter()
        .filter(|e| !roots.iter().any(|r| e.path_buf().starts_with(r)))
        .collect()
}

#[cfg(test)]
mod tests;
