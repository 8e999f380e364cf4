//! The pop-up that says why `e` did not run a lock's action (a recovery its dialect does not
//! allow this user now: another user's lock, or one naming a file other than the one its
//! name is for, ...): nothing ran, and it says, in the dialect's words, what the action
//! would have written where. One button, *Close*.

use std::any::Any;
use std::path::PathBuf;

use ratatui::crossterm::event::KeyCode;
use ratatui::text::{Line, Span};

use super::super::keymap::{Action, Bar, Binding, DOWN, Key, Keys, UP, bar, bind};
use super::super::layout::DIALOG_WIDTH;
use super::super::text;
use super::{Buttons, Content, Env, Outcome, Popup};

static BINDINGS: [Binding; 3] = [
    bind(
        &[
            Key::ch('q'),
            Key::plain(KeyCode::Esc),
            Key::plain(KeyCode::Enter),
        ],
        "close",
        "Close it",
        Action::Close,
        bar(1),
    ),
    bind(
        DOWN,
        "scroll",
        "Scroll the text down",
        Action::Down,
        Bar::No,
    ),
    bind(UP, "scroll", "Scroll the text up", Action::Up, Bar::No),
];

pub static KEYS: Keys = Keys {
    title: "Not recovered (after e)",
    bindings: &BINDINGS,
};

/// Why the swap file at `swap` was not recovered.
#[derive(Debug, Clone)]
pub struct Refused {
    pub swap: PathBuf,
    /// The reason, raw (escaped when drawn).
    pub why: String,
    pub scroll: u16,
}

impl Refused {
    pub fn new(swap: PathBuf, why: String) -> Refused {
        Refused {
            swap,
            why,
            scroll: 0,
        }
    }
}

impl Popup for Refused {
    fn keys(&self) -> &'static Keys {
        &KEYS
    }

    fn width(&self) -> u16 {
        DIALOG_WIDTH
    }

    fn content(&self, env: &Env<'_>) -> Content {
        let theme = env.theme;
        Content {
            title: " Not recovered ".into(),
            body: vec![
                Line::from(vec![
                    Span::raw("Nothing was run for "),
                    Span::styled(text::path(&self.swap), theme.label()),
                    Span::raw(":"),
                ]),
                Line::from(Span::styled(text::clean(&self.why), theme.warn())),
                Line::from(Span::styled(
                    locksmith::dialect::ACTION_REFUSED,
                    theme.dim(),
                )),
            ],
            buttons: Some(Buttons::Close),
            border: theme.warn(),
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
