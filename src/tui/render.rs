//! Drawing the main screen: `impl Widget for &App` gathers what each part needs from the app
//! and hands it to one small function per part (header, table, detail pane, status line, key
//! bar, then a pop-up, above the key bar). Drawing changes nothing: the app keeps the scroll
//! positions, sized by the same [`Screen`] layout, so a frame is a pure function of the state.
//! Every size is computed with saturating arithmetic: any terminal size renders, down to a
//! single cell.
//!
//! Text from lock files is already escaped in the rows' cells; what is built from a finding
//! goes through [`text::clean`] / [`text::content_lines`].

use locksmith::Verdict;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget};

use super::app::{App, Level, Progress, Row};
use super::keymap::{self, Bar, BarItem, Context};
use super::layout::Screen;
use super::popup;
use super::text::plural;
use super::theme::Theme;
use super::{detail, table, text};

impl Widget for &App {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let app = self;
        let theme = app.opts.theme;
        let status = app.status_lines(area);
        let screen = Screen::new(area, app.details_open(), status.len() as u16);
        render_header(
            &Header {
                theme,
                progress: &app.progress,
                listed: app.rows().len(),
                counts: app.counts(),
                verdict_filter: app.verdict_filter,
                filter: (!app.filter.is_empty() && app.context() != Context::Filter)
                    .then_some(app.filter.as_str()),
                readonly: app.opts.readonly,
                roots: &app.opts.roots,
                marked: app.marked(),
            },
            screen.header,
            buf,
        );

        let plan = table::plan(screen.table.width, app.content_widths());
        let body = usize::from(screen.table_body().height);
        let rows: Vec<&Row> = app.visible().skip(app.offset()).take(body).collect();
        let marked: Vec<bool> = rows
            .iter()
            .map(|r| app.is_marked(&r.finding.path))
            .collect();
        let empty = if app.progress.scanning && !app.progress.quiet {
            "looking for locks…"
        } else if app.rows().is_empty() {
            "no locks found"
        } else {
            "no lock matches the filter"
        };
        table::render(
            &table::TableProps {
                theme,
                plan: &plan,
                sort: app.sort,
                descending: app.descending,
                now_ms: app.now_ms,
                selected: app.cursor().map(|c| c - app.offset()),
                marked: &marked,
                empty,
            },
            &rows,
            screen.table,
            buf,
        );
        if let (Some(area), Some(row)) = (screen.detail, app.selected_row()) {
            detail::render(
                row,
                app.selected_waiting(),
                app.detail_scroll,
                theme,
                app.now_ms,
                area,
                buf,
            );
        }
        render_status(
            &status,
            app.status.as_ref().map(|s| s.level),
            app.prompt(),
            &app.position_text(),
            theme,
            screen.status,
            buf,
        );
        render_keys(app, theme, screen.keys, buf);
        if let Some(p) = app.popup() {
            popup::render(p, &app.popup_env(), screen.popups(), buf);
        }
    }
}

/// What the header shows.
pub struct Header<'a> {
    pub theme: Theme,
    pub progress: &'a Progress,
    /// Locks listed now (reclaims and re-judging remove some after the scan).
    pub listed: usize,
    pub counts: [usize; 5],
    pub verdict_filter: Option<Verdict>,
    /// The text filter, when one is set and not being typed.
    pub filter: Option<&'a str>,
    pub readonly: bool,
    /// The roots scanned.
    pub roots: &'a [std::path::PathBuf],
    /// How many rows are marked.
    pub marked: usize,
}

/// How much of the roots the header names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Roots {
    All,
    First,
    None,
}

/// The roots as the header names them: every one (`~/src, /run/lock`), the first with how many
/// more (`~/src +5`), or nothing. `$HOME` is written `~`.
fn roots_text(roots: &[std::path::PathBuf], how: Roots) -> Option<String> {
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    let name = |p: &std::path::Path| -> String {
        match home.as_deref().and_then(|h| p.strip_prefix(h).ok()) {
            Some(rest) if home.as_deref() != Some(std::path::Path::new("/")) => {
                if rest.as_os_str().is_empty() {
                    "~".into()
                } else {
                    format!("~/{}", text::path(rest))
                }
            }
            _ => text::path(p),
        }
    };
    match (how, roots) {
        (Roots::None, _) | (_, []) => None,
        (Roots::All, _) => Some(roots.iter().map(|r| name(r)).collect::<Vec<_>>().join(", ")),
        (Roots::First, [one]) => Some(name(one)),
        (Roots::First, [first, rest @ ..]) => Some(format!("{} +{}", name(first), rest.len())),
    }
}

fn counted(n: u64, one: &str, many: &str) -> String {
    format!("{} {}", text::count(n), if n == 1 { one } else { many })
}

/// The header line: the most detailed variant that fits. Detail goes first (the names of the
/// verdicts, every root, seconds, the entries walked, the first root, then the title), so the
/// counts of every verdict, the marks and the active filters stay at any width.
fn render_header(h: &Header<'_>, area: Rect, buf: &mut Buffer) {
    let theme = h.theme;
    let p = h.progress;
    let scanning = p.scanning && !p.quiet;
    // (title, roots, progress detail 0..=2, verdict names)
    let variants = [
        (true, Roots::All, 2, true),
        (true, Roots::All, 2, false),
        (true, Roots::First, 2, false),
        (true, Roots::First, 1, false),
        (true, Roots::First, 0, false),
        (true, Roots::None, 0, false),
        (false, Roots::None, 0, false),
    ];
    let build = |(title, roots, detail, names): (bool, Roots, u8, bool)| -> Vec<Span<'static>> {
        let mut spans = Vec::new();
        if title {
            spans.push(Span::styled(" locksmith ", theme.title()));
        } else {
            spans.push(Span::raw(" "));
        }
        if let Some(r) = roots_text(h.roots, roots) {
            spans.push(Span::styled(r, theme.label()));
            spans.push(Span::styled(" │ ", theme.dim()));
        }
        let locks = if scanning { p.locks } else { h.listed as u64 };
        let mut parts: Vec<String> = Vec::new();
        if scanning {
            parts.push("scanning…".into());
        }
        if detail >= 1 {
            parts.push(counted(p.entries, "entry", "entries"));
        }
        parts.push(counted(locks, "lock", "locks"));
        if detail >= 2
            && !scanning
            && let Some(ms) = p.elapsed_ms
        {
            parts.push(format!("{:.1} s", ms as f64 / 1000.0));
        }
        let progress = if scanning {
            format!("{} {}", parts[0], parts[1..].join(" · "))
        } else {
            parts.join(" · ")
        };
        spans.push(Span::raw(progress));
        if !p.asking.is_empty() {
            let what = match p.asking.as_slice() {
                [one] => text::clean(one),
                many => format!("{} hosts", many.len()),
            };
            spans.push(Span::raw(format!(" · asking {what}…")));
        }
        if p.errors > 0 {
            spans.push(Span::styled(
                format!(" · {} error{}", p.errors, plural(p.errors as usize)),
                theme.warn(),
            ));
        }
        spans.push(Span::styled(" │", theme.dim()));
        for (v, n) in Verdict::ALL.iter().zip(h.counts) {
            if n > 0 {
                let s = if names {
                    format!(" {} {n} {v}", v.symbol())
                } else {
                    format!(" {}{n}", v.symbol())
                };
                spans.push(Span::styled(s, theme.verdict(*v)));
            }
        }
        if let Some(v) = h.verdict_filter {
            spans.push(Span::styled(" │ showing ", theme.dim()));
            spans.push(Span::styled(
                format!("{} {v}", v.symbol()),
                theme.verdict(v),
            ));
        }
        if let Some(f) = h.filter {
            spans.push(Span::styled(" │ filter ", theme.dim()));
            spans.push(Span::raw(format!("/{}", text::clean(f))));
        }
        if h.marked > 0 {
            spans.push(Span::styled(" │ ", theme.dim()));
            spans.push(Span::styled(format!("{} marked", h.marked), theme.key()));
        }
        if h.readonly {
            spans.push(Span::styled(" │ read-only", theme.warn()));
        }
        spans
    };
    let width = |spans: &[Span<'_>]| spans.iter().map(Span::width).sum::<usize>();
    let spans = variants
        .iter()
        .map(|&v| build(v))
        .find(|s| width(s) <= usize::from(area.width))
        .unwrap_or_else(|| build(variants[variants.len() - 1]));
    Paragraph::new(Line::from(spans)).render(area, buf);
}

/// The status line: the prompt being typed (filter, find), or the last message (already fitted
/// to the width, see [`App::status_lines`]), with the position indicator on the right.
fn render_status(
    message: &[String],
    level: Option<Level>,
    prompt: Option<(&str, &str)>,
    position: &str,
    theme: Theme,
    area: Rect,
    buf: &mut Buffer,
) {
    if area.height == 0 {
        return;
    }
    let lines: Vec<Line> = match prompt {
        Some((sign, f)) => vec![Line::from(vec![
            Span::styled(sign.to_string(), theme.key()),
            Span::raw(text::clean(f)),
            Span::raw("█"),
        ])],
        None => message
            .iter()
            .map(|l| {
                Line::from(Span::styled(
                    l.clone(),
                    level.map_or(Style::new(), |lv| style_of(theme, lv)),
                ))
            })
            .collect(),
    };
    Paragraph::new(lines).render(area, buf);
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

/// The key bar: the bindings of the current context marked for the bar (those available in
/// this state, whatever row is selected), from the key map, fitted to the width (see
/// [`keymap::fit_bar`]): the same words at every width.
fn render_keys(app: &App, theme: Theme, area: Rect, buf: &mut Buffer) {
    let mut items: Vec<BarItem> = Vec::new();
    // Keys bound earlier in the context (the detail pane's q) hide later bindings of theirs.
    let mut taken: Vec<keymap::Key> = Vec::new();
    for b in app.context().all() {
        let shadowed = b.keys.iter().all(|k| taken.contains(k)) && !b.keys.is_empty();
        taken.extend_from_slice(b.keys);
        let Bar::Yes { rank } = b.bar else {
            continue;
        };
        if shadowed || !app.in_bar(b.action) {
            continue;
        }
        let (key, label, rank) = app
            .bar_entry(b.action)
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

fn style_of(theme: Theme, level: Level) -> Style {
    match level {
        Level::Info => theme.info(),
        Level::Warn => theme.warn(),
        Level::Error => theme.error(),
    }
}
