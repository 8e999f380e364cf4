//! The key bar at the bottom of the screen: the bindings of the current context that the key
//! map marks for the bar, read from the key map (`keymap`, the one source of the bar and the
//! help), those available in this state only, fitted to the width by rank
//! ([`keymap::fit_bar`]) with the same words at every width. It never depends on the selected
//! row, so it does not change as the selection moves. [`Bar::enabled`] also says which actions
//! work now at all.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget};

use super::super::confirm::ConfirmDialog;
use super::super::keymap::{self, Action, BarItem, Context};
use super::super::rows::Row;
use super::super::stop;
use super::super::theme::Theme;

/// What the key bar (and which actions work) depends on: the state of the rest of the UI.
pub struct Bar<'a> {
    pub context: Context,
    pub readonly: bool,
    /// How many rows are marked.
    pub marked: usize,
    /// Whether something was looked for (`n`/`N` find it again).
    pub found: bool,
    /// The open confirm dialog, if any.
    pub dialog: Option<&'a ConfirmDialog>,
    /// The selected row, if any.
    pub row: Option<&'a Row>,
}

impl Bar<'_> {
    /// Whether a key-map action is available now (the key bar hides the others).
    pub fn enabled(&self, action: Action) -> bool {
        match action {
            Action::Reclaim | Action::ReclaimAllStale | Action::Undo => !self.readonly,
            Action::Signal => {
                !self.readonly
                    && self
                        .row
                        .is_some_and(|r| !stop::candidates(&r.finding.judgement).is_empty())
            }
            Action::Recover => self.row.is_some_and(|r| r.recovery().is_some()),
            Action::FindNext | Action::FindPrev => self.found,
            // A dialog with nothing to say yes to has one button, Close: only closing works.
            Action::Yes | Action::ToggleChoice | Action::Choose | Action::ChooseLeft => {
                self.dialog.is_none_or(ConfirmDialog::offers_yes)
            }
            _ => true,
        }
    }

    /// Whether the key bar shows an action now: what [`Bar::enabled`] says, but never
    /// depending on the selected row (`x` is shown on every row, and says there when the
    /// row has no holder), so the bar does not change as the selection moves.
    pub fn in_bar(&self, action: Action) -> bool {
        match action {
            Action::Signal => !self.readonly,
            Action::Recover => false,
            a => self.enabled(a),
        }
    }

    /// The key bar's entry of an action, when it says more than the key map's: its key,
    /// label and rank (`D` on the marked rows, which is then what matters most after
    /// quitting and the help; `n/N` together).
    pub fn entry(&self, action: Action) -> Option<(String, String, u8)> {
        let key = |a| keymap::key(self.context, a);
        match action {
            Action::ReclaimAllStale if self.marked > 0 => {
                let n = self.marked;
                Some((key(action), format!("reclaim {n} marked"), 2))
            }
            Action::FindNext => Some((
                format!("{}/{}", key(Action::FindNext), key(Action::FindPrev)),
                "next match".into(),
                4,
            )),
            // No is Close when there is nothing to say yes to.
            Action::No if self.dialog.is_some_and(|d| !d.offers_yes()) => {
                let b = keymap::binding(self.context, action)?;
                Some((b.bar_label(), "close".into(), 1))
            }
            _ => None,
        }
    }

    /// Draws the bar: the bindings of the context marked for it (those available in this
    /// state, whatever row is selected), fitted to the width.
    pub fn render(&self, theme: Theme, area: Rect, buf: &mut Buffer) {
        let mut items: Vec<BarItem> = Vec::new();
        // Keys bound earlier in the context (the detail pane's q) hide later bindings of theirs.
        let mut taken: Vec<keymap::Key> = Vec::new();
        for b in self.context.all() {
            let shadowed = b.keys.iter().all(|k| taken.contains(k)) && !b.keys.is_empty();
            taken.extend_from_slice(b.keys);
            let keymap::Bar::Yes { rank } = b.bar else {
                continue;
            };
            if shadowed || !self.in_bar(b.action) {
                continue;
            }
            let (key, label, rank) = self
                .entry(b.action)
                .unwrap_or_else(|| (b.bar_label(), b.short.to_string(), rank));
            items.push(BarItem { key, label, rank });
        }
        let mut spans = Vec::new();
        for (k, s) in keymap::fit_bar(items, usize::from(area.width)) {
            spans.push(Span::styled(k, theme.key()));
            spans.push(Span::raw(format!(" {s}  ")));
        }
        Paragraph::new(Line::from(spans)).render(area, buf);
    }
}

#[cfg(test)]
mod tests;
