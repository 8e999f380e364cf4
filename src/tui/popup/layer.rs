//! The pop-up layer: the one pop-up open over the screen, if any. It hands the pop-up the keys
//! of its context, scrolls it (every pop-up the same way, no further than its text, its
//! cursor kept in view) and draws it; what a key did to the pop-up ([`Outcome`]) becomes a
//! request on the app's queue: a status message, the confirmed action, the undo of what the
//! journal view picked, the error message whose lock to select.

use ratatui::buffer::Buffer;
use ratatui::crossterm::event::{KeyCode, KeyEvent};
use ratatui::layout::Rect;

use super::super::confirm::ConfirmDialog;
use super::super::keymap::Action;
use super::super::queue::{Level, Queue, Request};
use super::{Env, Outcome, Popup, extent, help, render};

/// The pop-up open, if any.
#[derive(Debug, Default)]
pub struct Layer {
    open: Option<Box<dyn Popup>>,
}

impl Layer {
    pub fn get(&self) -> Option<&dyn Popup> {
        self.open.as_deref()
    }

    pub fn is_open(&self) -> bool {
        self.open.is_some()
    }

    /// The open confirm dialog (of a reclaim, an undo or `x`), if any.
    pub fn dialog(&self) -> Option<&ConfirmDialog> {
        self.get()?.dialog()
    }

    /// The open confirm dialog, for what the UI learns while it is open.
    pub fn dialog_mut(&mut self) -> Option<&mut ConfirmDialog> {
        self.open.as_mut()?.dialog_mut()
    }

    /// Which locks of the open reclaim dialog this user cannot remove (`None`: removable).
    pub fn checked(&mut self, answers: Vec<(std::path::PathBuf, Option<String>)>) {
        if let Some(d) = self.dialog_mut() {
            d.checked(answers);
        }
    }

    /// Whether the help is open.
    pub fn help_open(&self) -> bool {
        self.get()
            .is_some_and(|p| p.as_any().downcast_ref::<help::Help>().is_some())
    }

    /// Opens `p` in place of any other.
    pub fn open(&mut self, p: Box<dyn Popup>) {
        self.open = Some(p);
    }

    pub fn close(&mut self) {
        self.open = None;
    }

    /// The pop-up's extent on `screen`: lines in view and how far it scrolls.
    pub fn extent(&self, env: &Env<'_>, screen: Rect) -> Option<(u16, u16)> {
        Some(extent(self.get()?, env, screen))
    }

    /// Clamps its scroll to what `screen` shows, its cursor in view.
    pub fn clamp(&mut self, env: &Env<'_>, screen: Rect) {
        let Some((shown, max)) = self.extent(env, screen) else {
            return;
        };
        let Some(p) = &mut self.open else {
            return;
        };
        let mut s = p.scroll().min(max);
        // A pop-up's cursor stays in view.
        if let Some(line) = p.focus() {
            if line < s {
                s = line;
            } else if line >= s.saturating_add(shown) {
                s = (line + 1).saturating_sub(shown).min(max);
            }
        }
        p.set_scroll(s);
    }

    /// Scrolls its text by `delta` lines, no further than its end.
    pub fn scroll_by(&mut self, delta: i32, env: &Env<'_>, screen: Rect) {
        let Some((_, max)) = self.extent(env, screen) else {
            return;
        };
        if let Some(p) = &mut self.open {
            let n = i32::from(p.scroll())
                .saturating_add(delta)
                .clamp(0, i32::from(max));
            p.set_scroll(u16::try_from(n).unwrap_or(max));
        }
    }

    /// The mouse wheel over the screen, `delta` lines: a pop-up with a cursor moves it (and
    /// `true` says so: the app then keeps every scroll in place); any other scrolls.
    pub fn wheel(&mut self, delta: i32, env: &Env<'_>, screen: Rect) -> bool {
        let step = if delta > 0 { Action::Down } else { Action::Up };
        let moved = match &mut self.open {
            Some(p) => (0..delta.unsigned_abs()).all(|_| p.navigate(step, 1)),
            None => return false,
        };
        if !moved {
            self.scroll_by(delta, env, screen);
        }
        moved
    }

    /// Text typed or pasted into the pop-up.
    pub fn type_text(&mut self, text: &str) {
        if let Some(p) = &mut self.open {
            p.type_text(text);
        }
    }

    /// A key of the pop-up's context: text for a pop-up that takes it, scrolling for every
    /// pop-up, the rest for the pop-up itself; what that did goes on `queue`. Returns whether
    /// it moved a cursor of the pop-up's own (the app then keeps every scroll in place).
    pub fn act(
        &mut self,
        action: Action,
        key: &KeyEvent,
        env: &Env<'_>,
        screen: Rect,
        queue: &mut Queue,
    ) -> bool {
        let Some(p) = &mut self.open else {
            return false;
        };
        if action == Action::TextInput {
            if let KeyCode::Char(c) = key.code {
                p.type_text(c.encode_utf8(&mut [0; 4]));
            }
            return false;
        }
        let shown = extent(p.as_ref(), env, screen).0.max(1);
        if p.navigate(action, shown) {
            return true;
        }
        let page = i32::from(shown);
        let delta = match action {
            Action::Down => Some(1),
            Action::Up => Some(-1),
            Action::PageDown => Some(page),
            Action::PageUp => Some(-page),
            Action::Top => Some(i32::MIN / 2),
            Action::Bottom => Some(i32::MAX / 2),
            _ => None,
        };
        if let Some(d) = delta {
            self.scroll_by(d, env, screen);
            return false;
        }
        match p.act(action) {
            Outcome::Stay => {}
            Outcome::Closed(message) => {
                self.close();
                if let Some(m) = message {
                    queue.say(Level::Info, m);
                }
            }
            Outcome::Refused(why) => {
                self.close();
                queue.say(Level::Warn, why);
            }
            Outcome::Confirmed(c) => {
                self.close();
                queue.push(Request::Confirmed(c));
            }
            Outcome::Find(message) => {
                self.close();
                queue.push(Request::FindMessage(message));
            }
            Outcome::Undo(plan) => queue.push(Request::Undo(plan)),
        }
        false
    }

    /// Draws the pop-up, if one is open, on `screen`.
    pub fn render(&self, env: &Env<'_>, screen: Rect, buf: &mut Buffer) {
        if let Some(p) = self.get() {
            render(p, env, screen, buf);
        }
    }
}
