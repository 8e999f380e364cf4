//! The "why" prompt (`w`, or a paste into the table): the error message a program printed is
//! pasted (or typed) here, and Enter selects the lock it is about, as `locksmith why` finds it
//! (see [`locksmith::why`]): the program is recognised by its message and its lock is one of
//! the rows. The prompt only collects the text; the app does the finding, on the rows it
//! has, without touching the file system.

use std::any::Any;

use ratatui::crossterm::event::KeyCode;
use ratatui::text::{Line, Span};

use super::super::keymap::{Action, Bar, Binding, Key, Keys, PAGE_DOWN, PAGE_UP, bar, bind};
use super::super::layout::DIALOG_WIDTH;
use super::super::text;
use super::{Content, Env, Outcome, Popup};

static BINDINGS: [Binding; 7] = [
    bind(
        &[Key::plain(KeyCode::Enter)],
        "find its lock",
        "Select the lock the message is about",
        Action::TextDone,
        bar(1),
    ),
    bind(
        &[Key::plain(KeyCode::Esc)],
        "cancel",
        "Close, selecting nothing",
        Action::TextCancel,
        bar(1),
    ),
    bind(
        &[Key::plain(KeyCode::Backspace)],
        "delete",
        "Delete the last character",
        Action::TextBackspace,
        bar(2),
    ),
    bind(
        &[Key::ctrl('u')],
        "clear",
        "Delete everything",
        Action::TextClearLine,
        bar(3),
    ),
    bind(
        PAGE_DOWN,
        "page down",
        "Scroll the message one page down",
        Action::PageDown,
        Bar::No,
    ),
    bind(
        PAGE_UP,
        "page up",
        "Scroll the message one page up",
        Action::PageUp,
        Bar::No,
    ),
    bind(
        &[],
        "type",
        "Paste the message (it comes whole in a terminal with bracketed paste), or type it",
        Action::TextInput,
        Bar::No,
    ),
];

pub static KEYS: Keys = Keys {
    title: "Why prompt (after w, or a paste)",
    bindings: &BINDINGS,
};

/// At most this much text is kept (the end of it: the error comes last).
const LIMIT: usize = 64 * 1024;

/// The prompt and what was pasted into it.
#[derive(Debug, Clone, Default)]
pub struct Why {
    pub text: String,
    scroll: u16,
}

impl Why {
    pub fn new(text: &str) -> Why {
        let mut w = Why::default();
        w.type_text(text);
        w
    }
}

impl Popup for Why {
    fn keys(&self) -> &'static Keys {
        &KEYS
    }

    fn width(&self) -> u16 {
        DIALOG_WIDTH
    }

    fn content(&self, env: &Env<'_>) -> Content {
        let theme = env.theme;
        let mut body = vec![
            Line::from(
                "Paste the error message the program printed, then press Enter: the lock it is \
                 about is selected.",
            ),
            Line::from(Span::styled(locksmith::why::MESSAGE_EXAMPLES, theme.dim())),
            Line::from(""),
        ];
        if self.text.is_empty() {
            body.push(Line::from(Span::styled("▏", theme.key())));
        } else {
            let lines: Vec<&str> = self.text.lines().collect();
            let n = lines.len();
            for (i, l) in lines.into_iter().enumerate() {
                let mut spans = vec![Span::raw(format!("> {}", text::clean(l)))];
                if i + 1 == n && !self.text.ends_with('\n') {
                    spans.push(Span::styled("▏", theme.key()));
                }
                body.push(Line::from(spans));
            }
            if self.text.ends_with('\n') {
                body.push(Line::from(vec![
                    Span::raw("> "),
                    Span::styled("▏", theme.key()),
                ]));
            }
        }
        Content {
            title: " Why: which lock is this message about? ".into(),
            body,
            buttons: None,
            border: theme.key(),
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
            Action::TextDone if self.text.trim().is_empty() => {
                Outcome::Closed(Some("nothing pasted: no lock selected"))
            }
            Action::TextDone => Outcome::Find(std::mem::take(&mut self.text)),
            Action::TextCancel => Outcome::Closed(None),
            Action::TextBackspace => {
                self.text.pop();
                Outcome::Stay
            }
            Action::TextClearLine => {
                self.text.clear();
                Outcome::Stay
            }
            _ => Outcome::Stay,
        }
    }

    fn type_text(&mut self, text: &str) {
        // A pasted message's line ends are kept: terminals paste them as carriage returns.
        self.text
            .push_str(&text.replace("\r\n", "\n").replace('\r', "\n"));
        if self.text.len() > LIMIT {
            let mut cut = self.text.len() - LIMIT;
            while !self.text.is_char_boundary(cut) {
                cut += 1;
            }
            self.text.drain(..cut);
        }
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

#[cfg(test)]
mod tests;
