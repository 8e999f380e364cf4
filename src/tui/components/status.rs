//! The status bar: the last action's result (a [`Status`]), or the prompt being typed, with
//! the position indicator on the right. A message goes after a while (longer for a warning or
//! an error), unless what it reports is still going on; a message about one lock goes when the
//! selection moves to another lock (not when its own lock is gone: it stays until it expires).
//! It wraps at words to the lines the screen gives it ([`Screen::status_room`]), beside the
//! position indicator.

use std::path::{Path, PathBuf};

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget};

use super::super::layout::Screen;
use super::super::queue::{Level, Said};
use super::super::text;
use super::super::theme::Theme;

/// How long a status message stays: information ...
const STATUS_INFO_MS: i64 = 5_000;
/// ... and warnings and errors, which take longer to read.
const STATUS_WARN_MS: i64 = 10_000;

/// The status bar's message: the last action's result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    pub text: String,
    pub level: Level,
    /// When it goes (ms since the epoch); `None` while what it reports is still going on.
    pub expires_ms: Option<i64>,
    /// The row it is about: it goes when the selection moves to another.
    pub about: Option<PathBuf>,
}

/// The status bar.
#[derive(Debug, Default)]
pub struct StatusBar {
    message: Option<Status>,
}

impl StatusBar {
    /// The message shown, if any.
    pub fn message(&self) -> Option<&Status> {
        self.message.as_ref()
    }

    /// A message that goes after a while (from `now_ms`).
    pub fn set(&mut self, level: Level, text: impl Into<String>, now_ms: i64) {
        let ttl = match level {
            Level::Info => STATUS_INFO_MS,
            Level::Warn | Level::Error => STATUS_WARN_MS,
        };
        self.message = Some(Status {
            text: text.into(),
            level,
            expires_ms: Some(now_ms + ttl),
            about: None,
        });
    }

    /// A message about the row of `path`: it goes when the selection moves to another.
    pub fn set_about(&mut self, level: Level, text: impl Into<String>, path: &Path, now_ms: i64) {
        self.set(level, text, now_ms);
        if let Some(s) = &mut self.message {
            s.about = Some(path.to_path_buf());
        }
    }

    /// A message that stays until replaced (what it reports is still going on).
    pub fn set_until_done(&mut self, text: impl Into<String>) {
        self.message = Some(Status {
            text: text.into(),
            level: Level::Info,
            expires_ms: None,
            about: None,
        });
    }

    pub fn clear(&mut self) {
        self.message = None;
    }

    /// Says what was asked, as of `now_ms`.
    pub fn show(&mut self, said: Said, now_ms: i64) {
        match said {
            Said::Message(level, text) => self.set(level, text, now_ms),
            Said::About(level, text, path) => self.set_about(level, text, &path, now_ms),
            Said::UntilDone(text) => self.set_until_done(text),
            Said::Nothing => self.clear(),
        }
    }

    /// The clock moved to `now_ms`: an expired message goes.
    pub fn tick(&mut self, now_ms: i64) {
        if self
            .message
            .as_ref()
            .and_then(|s| s.expires_ms)
            .is_some_and(|t| now_ms >= t)
        {
            self.message = None;
        }
    }

    /// The selection moved to `now` (or to nothing): a message about a row left behind goes
    /// with it; one about a row that is gone (`listed` says which rows are) stays until it
    /// expires.
    pub fn selection_moved(&mut self, now: Option<&Path>, listed: impl Fn(&Path) -> bool) {
        if self
            .message
            .as_ref()
            .is_some_and(|s| s.about.as_deref().is_some_and(&listed) && s.about.as_deref() != now)
        {
            self.message = None;
        }
    }

    /// The message fitted to a screen of `area`: wrapped at words to the lines it may take,
    /// beside the position indicator `position`. While a prompt is typed it takes one line.
    pub fn lines(&self, area: Rect, prompt: bool, position: &str) -> Vec<String> {
        let Some(s) = &self.message else {
            return vec![String::new()];
        };
        if prompt {
            return vec![String::new()];
        }
        let pos = text::width(position);
        let room = usize::from(area.width).saturating_sub(if pos > 0 { pos + 2 } else { 0 });
        let lines = text::fit(&s.text, room, usize::from(Screen::status_room(area.height)));
        if lines.is_empty() {
            vec![String::new()]
        } else {
            lines
        }
    }

    /// Draws the status line: the prompt being typed (its sign and text), or the message
    /// (`lines`, as [`StatusBar::lines`] fitted it), with the position indicator on the right.
    pub fn render(
        &self,
        lines: &[String],
        prompt: Option<(&str, &str)>,
        position: &str,
        theme: Theme,
        area: Rect,
        buf: &mut Buffer,
    ) {
        if area.height == 0 {
            return;
        }
        let level = self.message.as_ref().map(|s| s.level);
        let shown: Vec<Line> = match prompt {
            Some((sign, f)) => vec![Line::from(vec![
                Span::styled(sign.to_string(), theme.key()),
                Span::raw(text::clean(f)),
                Span::raw("█"),
            ])],
            None => lines
                .iter()
                .map(|l| {
                    Line::from(Span::styled(
                        l.clone(),
                        level.map_or(Style::new(), |lv| style_of(theme, lv)),
                    ))
                })
                .collect(),
        };
        Paragraph::new(shown).render(area, buf);
        let pos_width = text::width(position) as u16;
        if !position.is_empty() && pos_width < area.width {
            let r = Rect {
                x: area.right() - pos_width,
                y: area.y,
                width: pos_width,
                height: 1,
            };
            Paragraph::new(Span::styled(position.to_string(), theme.dim())).render(r, buf);
        }
    }
}

fn style_of(theme: Theme, level: Level) -> Style {
    match level {
        Level::Info => theme.info(),
        Level::Warn => theme.warn(),
        Level::Error => theme.error(),
    }
}

#[cfg(test)]
mod tests;
