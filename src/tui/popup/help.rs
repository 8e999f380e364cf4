//! The `?` help screen: every binding of the key map, by context, with every key of each
//! binding (`PgDn/Ctrl-F`), then what the mouse does and what the verdicts mean. It scrolls,
//! and its bottom border says where the view is and that there is more below.

use locksmith::Verdict;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph, Widget};

use super::super::keymap::{self, Action, Context};
use super::super::layout::{HELP_WIDTH, popup};
use super::super::text::{self, scroll_hint};
use super::super::theme::Theme;

/// The order of the sections.
const SECTIONS: [Context; 5] = [
    Context::Table,
    Context::Filter,
    Context::Confirm,
    Context::Help,
    Context::Global,
];

/// The help's lines, unwrapped: a label column as wide as the widest key list.
pub fn lines(theme: Theme) -> Vec<Line<'static>> {
    let label_width = keymap::KEYMAP
        .iter()
        .map(|b| text::width(&b.label()))
        .max()
        .unwrap_or(0)
        + 2;
    let mut out = Vec::new();
    for ctx in SECTIONS {
        out.push(Line::from(Span::styled(ctx.title(), theme.title())));
        for b in keymap::bindings(ctx) {
            out.push(Line::from(vec![
                Span::styled(format!("  {:<label_width$}", b.label()), theme.key()),
                Span::raw(b.long),
            ]));
        }
        out.push(Line::default());
    }
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
    out
}

/// Where the help goes on a `screen`, and its lines wrapped to fit (descriptions that wrap
/// stay in their column).
pub fn view(theme: Theme, screen: Rect) -> (Rect, Vec<Line<'static>>) {
    let w = HELP_WIDTH.min(screen.width);
    let lines = text::wrap_all(lines(theme), w.saturating_sub(2), |l| match l.spans.len() {
        2 => l.spans[0].width(),
        _ => 0,
    });
    let h = u16::try_from(lines.len())
        .unwrap_or(u16::MAX)
        .saturating_add(2);
    (popup(screen, w, h), lines)
}

/// Lines in view and how far the help can scroll on a `screen`.
pub fn extent(theme: Theme, screen: Rect) -> (u16, u16) {
    let (r, lines) = view(theme, screen);
    let shown = r.height.saturating_sub(2);
    let total = u16::try_from(lines.len()).unwrap_or(u16::MAX);
    (shown, total.saturating_sub(shown))
}

pub fn render(theme: Theme, scroll: u16, screen: Rect, buf: &mut Buffer) {
    let (r, lines) = view(theme, screen);
    Clear.render(r, buf);
    let shown = r.height.saturating_sub(2);
    let max = u16::try_from(lines.len())
        .unwrap_or(u16::MAX)
        .saturating_sub(shown);
    let scroll = scroll.min(max);
    let close = keymap::keys(Context::Help, Action::CloseHelp);
    let hint = match scroll_hint(
        scroll,
        shown,
        lines.len(),
        &keymap::keys(Context::Help, Action::Down),
    ) {
        Some(h) => format!("{h}· {close} close "),
        None => format!(" {close} close "),
    };
    Paragraph::new(lines)
        .block(
            Block::bordered()
                .title(Span::styled(" Help ", theme.title()))
                .title_bottom(Line::from(Span::styled(hint, theme.key())).right_aligned()),
        )
        .scroll((scroll, 0))
        .render(r, buf);
}
