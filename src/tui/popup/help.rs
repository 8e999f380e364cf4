//! The `?` help screen: every binding of every key map, by context (the pop-ups' too), with
//! every key of each binding (`PgDn/Ctrl-F`), then what the mouse does, what the verdicts and
//! the table's marks mean. It scrolls, and its bottom border says where the view is and that
//! there is more below.

use std::any::Any;

use locksmith::Verdict;
use ratatui::crossterm::event::KeyCode;
use ratatui::text::{Line, Span};

use super::super::keymap::{
    self, Action, BOTTOM, Bar, Binding, Context, DOWN, Key, Keys, PAGE_DOWN, PAGE_UP, TOP, UP, bar,
    bind,
};
use super::super::layout::{HELP_WIDTH, MARK, UNSAVED};
use super::super::text;
use super::super::theme::Theme;
use super::{Content, Env, Outcome, Popup};

static BINDINGS: [Binding; 7] = [
    bind(
        &[
            Key::ch('?'),
            Key::ch('q'),
            Key::plain(KeyCode::Esc),
            Key::plain(KeyCode::Enter),
        ],
        "close",
        "Close the help",
        Action::Close,
        bar(1),
    ),
    bind(DOWN, "scroll", "Scroll the help down", Action::Down, bar(2)),
    bind(UP, "scroll", "Scroll the help up", Action::Up, Bar::No),
    bind(
        PAGE_DOWN,
        "page down",
        "Scroll the help one page down",
        Action::PageDown,
        Bar::No,
    ),
    bind(
        PAGE_UP,
        "page up",
        "Scroll the help one page up",
        Action::PageUp,
        Bar::No,
    ),
    bind(
        TOP,
        "top",
        "Go to the top of the help",
        Action::Top,
        Bar::No,
    ),
    bind(
        BOTTOM,
        "end",
        "Go to the end of the help",
        Action::Bottom,
        Bar::No,
    ),
];

pub static KEYS: Keys = Keys {
    title: "Help",
    bindings: &BINDINGS,
};

/// The help screen.
#[derive(Debug, Clone, Default)]
pub struct Help {
    pub scroll: u16,
}

impl Popup for Help {
    fn keys(&self) -> &'static Keys {
        &KEYS
    }

    fn width(&self) -> u16 {
        HELP_WIDTH
    }

    fn content(&self, env: &Env<'_>) -> Content {
        Content {
            title: " Help ".into(),
            body: lines(env.theme, env.popups),
            buttons: None,
            border: ratatui::style::Style::new(),
        }
    }

    fn scroll(&self) -> u16 {
        self.scroll
    }

    fn set_scroll(&mut self, lines: u16) {
        self.scroll = lines;
    }

    fn act(&mut self, action: Action) -> Outcome {
        match action {
            Action::Close => Outcome::Closed(None),
            _ => Outcome::Stay,
        }
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// The help's lines, unwrapped: a label column as wide as the widest key list.
pub fn lines(theme: Theme, popups: &[&'static Keys]) -> Vec<Line<'static>> {
    let listing = keymap::listing(popups);
    let label_width = listing
        .iter()
        .map(|(_, b)| text::width(&b.label()))
        .max()
        .unwrap_or(0)
        + 2;
    let mut out = Vec::new();
    let mut section = "";
    for (title, b) in listing {
        if title != section {
            if !section.is_empty() {
                out.push(Line::default());
            }
            out.push(Line::from(Span::styled(title, theme.title())));
            section = title;
        }
        out.push(Line::from(vec![
            Span::styled(format!("  {:<label_width$}", b.label()), theme.key()),
            Span::raw(b.long),
        ]));
    }
    out.push(Line::default());
    out.push(Line::from(Span::styled("Mouse", theme.title())));
    for (what, does) in [
        (
            "click",
            "Select a lock; on a column title, sort by it (again: invert)",
        ),
        (
            "wheel",
            "Scroll the list, the detail pane, the help or the dialog",
        ),
    ] {
        out.push(Line::from(vec![
            Span::styled(format!("  {what:<label_width$}"), theme.key()),
            Span::raw(does),
        ]));
    }
    out.push(Line::default());
    out.push(Line::from(Span::styled("Verdicts", theme.title())));
    for v in Verdict::ALL {
        let what = match v {
            Verdict::Stale => "the owner is provably gone: reclaimable",
            Verdict::Live => "an owner process is verifiably alive: never removed",
            Verdict::Foreign => "owner on another host or PID namespace: cannot be checked here",
            Verdict::Unknown => "looks like a lock but cannot be parsed or read",
            Verdict::Free => "a kernel-lock file nobody holds: harmless, never removed",
        };
        out.push(Line::from(vec![
            Span::styled(
                format!(
                    "  {} {:<width$}",
                    v.symbol(),
                    v.as_str(),
                    width = label_width - 2
                ),
                theme.verdict(v),
            ),
            Span::raw(what),
        ]));
    }
    out.push(Line::default());
    out.push(Line::from(Span::styled(
        "Marks in the table",
        theme.title(),
    )));
    let key = |a| keymap::key(Context::Table, a);
    for (mark, what) in [
        (
            UNSAVED,
            "after the verdict: a lock file holding unsaved changes (removing it loses them)"
                .to_string(),
        ),
        (
            MARK,
            format!(
                "before the verdict: marked with {} ({} reclaims the marked)",
                key(Action::ToggleMark),
                key(Action::ReclaimAllStale)
            ),
        ),
        (
            "+N",
            "after a PID: N more processes hold the lock (the detail pane names them)".into(),
        ),
    ] {
        out.push(Line::from(vec![
            Span::styled(format!("  {mark:<label_width$}"), theme.key()),
            Span::raw(what),
        ]));
    }
    out
}

#[cfg(test)]
mod tests;
