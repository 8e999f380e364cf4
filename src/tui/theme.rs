//! The one theme of the UI: a color theme, and a monochrome one for `NO_COLOR` /
//! `--color never` that keeps every distinction with symbols and modifiers only.

use ratatui::style::{Color, Modifier, Style};

use crate::ColorChoice;
use locksmith::Verdict;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Theme {
    pub color: bool,
}

impl Theme {
    pub const COLOR: Theme = Theme { color: true };
    pub const MONO: Theme = Theme { color: false };

    /// The theme for a `--color` choice and the environment (`NO_COLOR` set and non-empty
    /// disables color unless `--color always`).
    pub fn choose(choice: ColorChoice, no_color_env: Option<&std::ffi::OsStr>) -> Theme {
        match choice {
            ColorChoice::Always => Theme::COLOR,
            ColorChoice::Never => Theme::MONO,
            ColorChoice::Auto => match no_color_env {
                Some(v) if !v.is_empty() => Theme::MONO,
                _ => Theme::COLOR,
            },
        }
    }

    fn fg(self, c: Color) -> Style {
        if self.color {
            Style::new().fg(c)
        } else {
            Style::new()
        }
    }

    pub fn verdict(self, v: Verdict) -> Style {
        match v {
            Verdict::Stale => self.fg(Color::Red).add_modifier(Modifier::BOLD),
            Verdict::Live => self.fg(Color::Green),
            Verdict::Free => self.fg(Color::Blue),
            Verdict::Foreign => self.fg(Color::Yellow),
            Verdict::Unknown => self.fg(Color::Magenta),
        }
    }

    pub fn title(self) -> Style {
        self.fg(Color::Cyan).add_modifier(Modifier::BOLD)
    }

    pub fn header(self) -> Style {
        Style::new().add_modifier(Modifier::BOLD | Modifier::UNDERLINED)
    }

    pub fn selected(self) -> Style {
        if self.color {
            Style::new()
                .bg(Color::DarkGray)
                .add_modifier(Modifier::BOLD)
        } else {
            Style::new().add_modifier(Modifier::REVERSED)
        }
    }

    pub fn dim(self) -> Style {
        if self.color {
            Style::new().fg(Color::DarkGray)
        } else {
            Style::new()
        }
    }

    pub fn label(self) -> Style {
        Style::new().add_modifier(Modifier::BOLD)
    }

    pub fn key(self) -> Style {
        self.fg(Color::Cyan).add_modifier(Modifier::BOLD)
    }

    pub fn info(self) -> Style {
        self.fg(Color::Green)
    }

    pub fn warn(self) -> Style {
        self.fg(Color::Yellow).add_modifier(Modifier::BOLD)
    }

    pub fn error(self) -> Style {
        self.fg(Color::Red).add_modifier(Modifier::BOLD)
    }

    pub fn button(self, highlighted: bool) -> Style {
        if highlighted {
            Style::new().add_modifier(Modifier::REVERSED | Modifier::BOLD)
        } else {
            Style::new()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsStr;

    #[test]
    fn no_color_and_color_never_turn_colors_off() {
        assert_eq!(Theme::choose(ColorChoice::Auto, None), Theme::COLOR);
        assert_eq!(
            Theme::choose(ColorChoice::Auto, Some(OsStr::new(""))),
            Theme::COLOR
        );
        assert_eq!(
            Theme::choose(ColorChoice::Auto, Some(OsStr::new("1"))),
            Theme::MONO
        );
        assert_eq!(Theme::choose(ColorChoice::Never, None), Theme::MONO);
        assert_eq!(
            Theme::choose(ColorChoice::Always, Some(OsStr::new("1"))),
            Theme::COLOR
        );
        for v in Verdict::ALL {
            assert_eq!(Theme::MONO.verdict(v).fg, None);
            assert!(Theme::COLOR.verdict(v).fg.is_some());
        }
    }
}
