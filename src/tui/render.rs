//! Drawing: `impl Widget for &App` and one small `render_*` helper per part of the screen
//! (header, table, detail pane, status line, key bar, help, confirm dialog). Rendering reads the
//! app and never changes what the app means; it only remembers the scroll offset and the page
//! height (in `Cell`s) so that scrolling is stable. Every size is computed with saturating
//! arithmetic: any terminal size renders, down to a single cell.
//!
//! Text from lock files is already escaped in the rows' cells; what is built here from a
//! finding goes through [`text::clean`] / [`text::content_lines`].

use locksmith::Verdict;
use locksmith::scan::Finding;
use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Style, Stylize};
use ratatui::text::{Line, Span, Text};
use ratatui::widgets::{
    Block, Cell as TableCell, Clear, HighlightSpacing, Padding, Paragraph, Row as TableRow,
    StatefulWidget, Table, TableState, Widget,
};

use super::app::{App, Column, Level, Mode, Row, age_ms, plural};
use super::confirm::{Choice, ConfirmAction, ConfirmDialog};
use super::keymap::{self, Action, Context};
use super::text;
use super::theme::Theme;

/// The marker before the selected row (so the selection shows without color or styles).
const SELECTED: &str = "▶ ";
/// Width of the label column in the detail pane.
const LABEL: usize = 10;
/// Raw content lines shown in the detail pane.
const CONTENT_LINES: usize = 12;
/// Locks listed one by one in the dialog of a reclaim of several.
const MAX_LISTED: usize = 8;

impl Widget for &App {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let [header, body, status, keys] = Layout::vertical([
            Constraint::Length(1),
            Constraint::Fill(1),
            Constraint::Length(1),
            Constraint::Length(1),
        ])
        .areas(area);
        render_header(self, header, buf);
        match self.selected_row() {
            Some(row) if self.show_details => {
                let [table, detail] =
                    Layout::vertical([Constraint::Percentage(45), Constraint::Percentage(55)])
                        .areas(body);
                render_table(self, table, buf);
                render_detail(row, self, detail, buf);
            }
            _ => render_table(self, body, buf),
        }
        render_status(self, status, buf);
        render_keys(self, keys, buf);
        match &self.mode {
            Mode::Help { scroll } => render_help(self, *scroll, area, buf),
            Mode::Confirm(dialog) => render_confirm(self, dialog, area, buf),
            Mode::Table | Mode::Filter => {}
        }
    }
}

fn render_header(app: &App, area: Rect, buf: &mut Buffer) {
    let theme = app.opts.theme;
    let p = &app.progress;
    let mut spans = vec![Span::styled(" locksmith ", theme.title())];
    let progress = if p.scanning {
        format!(
            "scanning… {} entries · {} locks",
            text::count(p.entries),
            text::count(p.locks)
        )
    } else {
        let secs = p
            .elapsed_ms
            .map(|ms| format!(" · {:.1} s", ms as f64 / 1000.0))
            .unwrap_or_default();
        // After the scan, the locks listed now (reclaims and re-judging remove some).
        format!(
            "{} entries · {} locks{secs}",
            text::count(p.entries),
            text::count(app.rows().len() as u64)
        )
    };
    spans.push(Span::raw(progress));
    if p.errors > 0 {
        spans.push(Span::styled(
            format!(" · {} error{}", p.errors, plural(p.errors as usize)),
            theme.warn(),
        ));
    }
    spans.push(Span::styled(" │", theme.dim()));
    // Verdict counts: with names when there is room, else symbols only.
    let wide = area.width >= 100;
    for (v, n) in Verdict::ALL.iter().zip(app.counts()) {
        if n > 0 {
            let s = if wide {
                format!(" {} {n} {v}", v.symbol())
            } else {
                format!(" {}{n}", v.symbol())
            };
            spans.push(Span::styled(s, theme.verdict(*v)));
        }
    }
    if let Some(v) = app.verdict_filter {
        spans.push(Span::styled(" │ showing ", theme.dim()));
        spans.push(Span::styled(
            format!("{} {v}", v.symbol()),
            theme.verdict(v),
        ));
    }
    if !app.filter.is_empty() && !matches!(app.mode, Mode::Filter) {
        spans.push(Span::styled(" │ filter ", theme.dim()));
        spans.push(Span::raw(format!("/{}", text::clean(&app.filter))));
    }
    if app.opts.readonly {
        spans.push(Span::styled(" │ read-only", theme.warn()));
    }
    Paragraph::new(Line::from(spans)).render(area, buf);
}

/// The columns that fit a width, with their constraints.
fn columns_for(width: u16) -> Vec<(Column, Constraint)> {
    use Column as C;
    let all = [
        (C::Verdict, Constraint::Length(9)),
        (C::Dialect, Constraint::Length(11)),
        (C::Pid, Constraint::Length(7)),
        (C::Command, Constraint::Length(16)),
        (C::Host, Constraint::Length(12)),
        (C::Age, Constraint::Length(4)),
        (C::Path, Constraint::Fill(1)),
    ];
    let keep: &[Column] = match width {
        100.. => &Column::ALL,
        70..100 => &[C::Verdict, C::Dialect, C::Pid, C::Command, C::Age, C::Path],
        45..70 => &[C::Verdict, C::Pid, C::Age, C::Path],
        _ => &[C::Verdict, C::Path],
    };
    all.into_iter().filter(|(c, _)| keep.contains(c)).collect()
}

fn render_table(app: &App, area: Rect, buf: &mut Buffer) {
    let theme = app.opts.theme;
    if area.height == 0 || area.width == 0 {
        return;
    }
    let cols = columns_for(area.width);
    let narrow = area.width < 45;
    let fixed: u16 = cols
        .iter()
        .map(|(c, k)| match (c, k) {
            (Column::Verdict, _) if narrow => 2,
            (_, Constraint::Length(n)) => *n,
            _ => 0,
        })
        .sum();
    let spacing = 1u16;
    let path_width = usize::from(
        area.width
            .saturating_sub(fixed)
            .saturating_sub(spacing * cols.len().saturating_sub(1) as u16)
            .saturating_sub(SELECTED.chars().count() as u16),
    );
    let header = TableRow::new(cols.iter().map(|(c, _)| {
        let mut title = c.title().to_string();
        if narrow && *c == Column::Verdict {
            title = "V".into();
        }
        if *c == app.sort {
            title.push_str(if app.descending { " ▼" } else { " ▲" });
        }
        TableCell::from(title)
    }))
    .style(theme.header());
    let widths: Vec<Constraint> = cols
        .iter()
        .map(|(c, k)| match c {
            Column::Verdict if narrow => Constraint::Length(2),
            _ => *k,
        })
        .collect();

    // Only the rows that can be on screen are built.
    let body_height = usize::from(area.height.saturating_sub(1)).max(1);
    app.page.set(body_height as u16);
    let len = app.visible_len();
    let cursor = app.cursor();
    let mut offset = app.offset.get().min(len.saturating_sub(1));
    if let Some(c) = cursor {
        if c < offset {
            offset = c;
        } else if c >= offset + body_height {
            offset = c + 1 - body_height;
        }
    }
    app.offset.set(offset);
    let rows: Vec<TableRow> = app
        .visible()
        .skip(offset)
        .take(body_height)
        .map(|r| table_row(app, r, &cols, narrow, path_width))
        .collect();

    if len == 0 {
        let msg = if app.progress.scanning {
            "looking for locks…"
        } else if app.rows().is_empty() {
            "no locks found"
        } else {
            "no lock matches the filter"
        };
        let [head, rest] =
            Layout::vertical([Constraint::Length(1), Constraint::Fill(1)]).areas(area);
        Widget::render(
            Table::new(Vec::<TableRow>::new(), widths.clone())
                .header(header)
                .column_spacing(spacing),
            head,
            buf,
        );
        Paragraph::new(Span::styled(msg, theme.dim()))
            .centered()
            .render(rest, buf);
        return;
    }
    let table = Table::new(rows, widths)
        .header(header)
        .column_spacing(spacing)
        .row_highlight_style(theme.selected())
        .highlight_symbol(SELECTED)
        .highlight_spacing(HighlightSpacing::Always);
    let mut state = TableState::new().with_selected(cursor.map(|c| c - offset));
    StatefulWidget::render(table, area, buf, &mut state);
}

fn table_row<'a>(
    app: &App,
    r: &'a Row,
    cols: &[(Column, Constraint)],
    narrow: bool,
    path_width: usize,
) -> TableRow<'a> {
    let theme = app.opts.theme;
    let v = r.verdict();
    TableRow::new(cols.iter().map(|(c, _)| match c {
        Column::Verdict if narrow => TableCell::from(Span::styled(v.symbol(), theme.verdict(v))),
        Column::Verdict => TableCell::from(Span::styled(
            format!("{} {}", v.symbol(), v),
            theme.verdict(v),
        )),
        Column::Dialect => TableCell::from(r.cells.dialect.as_str()),
        Column::Pid => TableCell::from(r.cells.pid.as_str()),
        Column::Command => TableCell::from(r.cells.command.as_str()),
        Column::Host => TableCell::from(r.cells.host.as_str()),
        Column::Age => TableCell::from(match r.finding.modified_ms {
            Some(_) => text::age(age_ms(r, app.now_ms)),
            None => "-".into(),
        }),
        Column::Path => TableCell::from(ellipsize_left(&r.cells.path, path_width)),
    }))
}

/// Keeps the end of a string (the file name matters most in a path), with `…` in front.
fn ellipsize_left(s: &str, width: usize) -> String {
    if Span::raw(s).width() <= width {
        return s.to_string();
    }
    if width == 0 {
        return String::new();
    }
    let mut kept: Vec<char> = Vec::new();
    let mut used = 1; // the ellipsis
    let mut tmp = [0u8; 4];
    for c in s.chars().rev() {
        let w = Span::raw(&*c.encode_utf8(&mut tmp)).width();
        if used + w > width {
            break;
        }
        used += w;
        kept.push(c);
    }
    let tail: String = kept.into_iter().rev().collect();
    // Start at a component boundary when one is in view: `…/deep/app.pid`.
    let tail = match tail.find('/') {
        Some(i) if i > 0 && tail[i..].chars().count() > 1 => tail[i..].to_string(),
        _ => tail,
    };
    format!("…{tail}")
}

/// Wraps a styled line at `width` columns, breaking at spaces where it can, with continuation
/// lines indented by `indent` columns (a hanging indent: wrapped evidence stays in its column).
fn wrap_line(line: &Line<'_>, width: usize, indent: usize) -> Vec<Line<'static>> {
    let width = width.max(1);
    let indent = if indent * 2 > width { 0 } else { indent };
    let mut tmp = [0u8; 4];
    let cells: Vec<(char, Style, usize)> = line
        .spans
        .iter()
        .flat_map(|s| {
            let style = line.style.patch(s.style);
            s.content.chars().map(move |c| (c, style))
        })
        .map(|(c, st)| (c, st, Span::raw(&*c.encode_utf8(&mut tmp)).width()))
        .collect();
    let mut out: Vec<Vec<(char, Style)>> = Vec::new();
    let mut cur: Vec<(char, Style)> = Vec::new();
    let mut cur_w = 0usize;
    // Index in `cur` of the last space a line may break at, and its column.
    let mut brk: Option<usize> = None;
    let pad = |n: usize| std::iter::repeat_n((' ', Style::new()), n).collect::<Vec<_>>();
    for (c, st, w) in cells {
        if cur_w + w > width && cur_w > indent && c == ' ' {
            // The space itself overflows: break here and drop it.
            out.push(std::mem::replace(&mut cur, pad(indent)));
            cur_w = indent;
            brk = None;
            continue;
        }
        if cur_w + w > width && cur_w > indent {
            match brk {
                Some(i) => {
                    let rest = cur.split_off(i + 1);
                    cur.pop();
                    out.push(std::mem::replace(&mut cur, pad(indent)));
                    cur.extend(rest);
                }
                None => out.push(std::mem::replace(&mut cur, pad(indent))),
            }
            let mut tmp = [0u8; 4];
            cur_w = cur
                .iter()
                .map(|(c, _)| Span::raw(&*c.encode_utf8(&mut tmp)).width())
                .sum();
            brk = None;
        }
        if c == ' ' && cur_w > indent {
            brk = Some(cur.len());
        }
        cur.push((c, st));
        cur_w += w;
    }
    out.push(cur);
    out.into_iter()
        .map(|cells| {
            let mut spans: Vec<Span<'static>> = Vec::new();
            for (c, st) in cells {
                match spans.last_mut() {
                    Some(last) if last.style == st => last.content.to_mut().push(c),
                    _ => spans.push(Span::styled(c.to_string(), st)),
                }
            }
            Line::from(spans)
        })
        .collect()
}

/// Wraps every line; the indent of each continuation is given by `indent_of` its line.
fn wrap_all(
    lines: Vec<Line<'static>>,
    width: u16,
    indent_of: impl Fn(&Line<'_>) -> usize,
) -> Vec<Line<'static>> {
    lines
        .iter()
        .flat_map(|l| wrap_line(l, usize::from(width), indent_of(l)))
        .collect()
}

/// The hanging indent of a line of running text: its leading spaces, plus the bullet.
fn text_indent(l: &Line<'_>) -> usize {
    let s: String = l.spans.iter().map(|s| s.content.as_ref()).collect();
    let lead = s.len() - s.trim_start_matches(' ').len();
    lead + if s[lead..].starts_with("• ") { 2 } else { 0 }
}

fn label<'a>(theme: Theme, name: &'a str) -> Span<'a> {
    Span::styled(format!("{name:<LABEL$}"), theme.label())
}

fn indent() -> Span<'static> {
    Span::raw(" ".repeat(LABEL))
}

/// The command that recovers a vim swap's unsaved changes (as the report words it).
fn recover_hint(f: &Finding) -> String {
    locksmith::report::vim_recover_hint(f)
        .unwrap_or_else(|| format!("vim -r {}", text::path(&f.path)))
}

/// The warning shown for a vim swap file that holds unsaved changes. Advice follows the
/// verdict: recovery (`vim -r`) is for a swap file whose vim is gone.
pub fn unsaved_warning(theme: Theme, f: &Finding) -> Vec<Line<'static>> {
    if f.judgement.unsaved_changes != Some(true) {
        return Vec::new();
    }
    if f.judgement.verdict == locksmith::Verdict::Live {
        return vec![Line::from(Span::styled(
            "✎ Unsaved changes in a running vim: they are in that vim, save them there.",
            theme.warn(),
        ))];
    }
    if f.judgement.verdict != locksmith::Verdict::Stale {
        return vec![Line::from(Span::styled(
            "⚠ UNSAVED CHANGES: this swap file holds edits that were never saved.",
            theme.error(),
        ))];
    }
    vec![
        Line::from(Span::styled(
            "⚠ UNSAVED CHANGES: this swap file holds edits that were never saved.",
            theme.error(),
        )),
        Line::from(vec![
            Span::styled("  Recover them first: ", theme.warn()),
            Span::styled(recover_hint(f), theme.key()),
        ]),
    ]
}

/// Every line of the detail pane for one lock.
pub fn detail_lines(f: &Finding, theme: Theme, now_ms: i64) -> Vec<Line<'static>> {
    let j = &f.judgement;
    let v = j.verdict;
    let mut out: Vec<Line<'static>> = unsaved_warning(theme, f);
    out.push(Line::from(vec![
        label(theme, "Path"),
        Span::raw(text::path(&f.path)),
    ]));
    let reclaim_hint = match v {
        Verdict::Stale => " (reclaimable: d)",
        Verdict::Foreign => " (owner cannot be checked here; F forces a reclaim)",
        _ => " (never reclaimed)",
    };
    out.push(Line::from(vec![
        label(theme, "Verdict"),
        Span::styled(format!("{} {v}", v.symbol()), theme.verdict(v)),
        Span::styled(reclaim_hint, theme.dim()),
    ]));
    let mut what = vec![text::clean(f.dialect), kind_name(f).to_string()];
    if let Some(s) = f.size {
        what.push(text::size(s));
    }
    if let Some(m) = f.modified_ms {
        what.push(format!(
            "modified {} ({} ago)",
            locksmith::evidence::fmt_ms(m),
            text::age(now_ms - m)
        ));
    }
    out.push(Line::from(vec![
        label(theme, "Lock"),
        Span::raw(what.join(" · ")),
    ]));
    if let Some(t) = &f.link_target {
        out.push(Line::from(vec![
            label(theme, "Link to"),
            Span::raw(text::path(t)),
        ]));
    }
    let fs = format!(
        "{}{}",
        text::clean(&f.fs.kind),
        if f.fs.network {
            " (network file system: kernel locks and PIDs of other hosts cannot be checked)"
        } else {
            " (local)"
        }
    );
    out.push(Line::from(vec![label(theme, "FS"), Span::raw(fs)]));
    for (i, e) in j.evidence.iter().enumerate() {
        let head = if i == 0 {
            label(theme, "Evidence")
        } else {
            indent()
        };
        out.push(Line::from(vec![
            head,
            Span::raw(format!("• {}", text::clean(e))),
        ]));
    }
    if let Some(o) = &j.owner {
        let mut parts = Vec::new();
        if let Some(p) = o.pid {
            parts.push(format!("pid {p}"));
        }
        if let Some(h) = &o.hostname {
            parts.push(format!("host {}", text::clean(h)));
        }
        if let Some(u) = &o.user {
            parts.push(format!("user {}", text::clean(u)));
        }
        if let Some(c) = &o.created_at {
            parts.push(format!("created {}", text::clean(c)));
        }
        if parts.is_empty() {
            parts.push("(no owner fields)".into());
        }
        out.push(Line::from(vec![
            label(theme, "Owner"),
            Span::raw(parts.join(" · ")),
        ]));
        if let Some(d) = &o.detail {
            out.push(Line::from(vec![indent(), Span::raw(text::clean(d))]));
        }
    } else {
        out.push(Line::from(vec![
            label(theme, "Owner"),
            Span::styled("the lock names no owner", theme.dim()),
        ]));
    }
    match &j.process {
        Some(p) => {
            let mut parts = vec![format!("pid {} {}", p.pid, text::clean(&p.name))];
            if let Some(u) = &p.user {
                parts.push(format!("user {}", text::clean(u)));
            }
            if let Some(s) = &p.start_time {
                parts.push(format!("started {}", text::clean(s)));
            }
            out.push(Line::from(vec![
                label(theme, "Process"),
                Span::raw(parts.join(" · ")),
            ]));
            if !p.cmd.is_empty() {
                out.push(Line::from(vec![
                    indent(),
                    Span::raw(text::clean(&p.cmd.join(" "))),
                ]));
            }
            if let Some(e) = &p.exe {
                out.push(Line::from(vec![
                    indent(),
                    Span::styled(format!("exe {}", text::clean(e)), theme.dim()),
                ]));
            }
        }
        None => out.push(Line::from(vec![
            label(theme, "Process"),
            Span::styled("no live owner process", theme.dim()),
        ])),
    }
    if !j.holders.is_empty() {
        let hs: Vec<String> = j
            .holders
            .iter()
            .map(|h| {
                let who = if h.pid < 0 {
                    "a process not visible here".to_string()
                } else {
                    format!("pid {}", h.pid)
                };
                match &h.name {
                    Some(n) => format!("{who} {} ({})", text::clean(n), h.how.as_str()),
                    None => format!("{who} ({})", h.how.as_str()),
                }
            })
            .collect();
        out.push(Line::from(vec![
            label(theme, "Holders"),
            Span::raw(hs.join(" · ")),
        ]));
    }
    let content = text::content_lines(&f.content, CONTENT_LINES);
    for (i, l) in content.into_iter().enumerate() {
        let head = if i == 0 {
            label(theme, "Content")
        } else {
            indent()
        };
        out.push(Line::from(vec![head, Span::styled(l, theme.dim())]));
    }
    out
}

fn kind_name(f: &Finding) -> &'static str {
    use locksmith::dialect::EntryKind;
    match f.kind {
        EntryKind::File => "file",
        EntryKind::Symlink => "symlink",
        EntryKind::Dir => "directory",
        EntryKind::Other => "special file",
    }
}

fn render_detail(row: &Row, app: &App, area: Rect, buf: &mut Buffer) {
    let theme = app.opts.theme;
    let name = row
        .finding
        .path
        .file_name()
        .map(|n| text::bytes(n.as_encoded_bytes()))
        .unwrap_or_default();
    let block = Block::bordered()
        .title(Line::from(vec![
            Span::raw(" Details: "),
            Span::styled(name, theme.label()),
            Span::raw(" "),
        ]))
        .border_style(theme.dim());
    let inner = block.inner(area);
    block.render(area, buf);
    let lines = wrap_all(
        detail_lines(&row.finding, theme, app.now_ms),
        inner.width,
        |l| match l.spans.first() {
            Some(first) if first.width() == LABEL => {
                LABEL + text_indent(&Line::from(l.spans[1..].to_vec()))
            }
            _ => text_indent(l),
        },
    );
    Paragraph::new(lines).render(inner, buf);
}

fn render_status(app: &App, area: Rect, buf: &mut Buffer) {
    let theme = app.opts.theme;
    let line = match (&app.mode, &app.status) {
        (Mode::Filter, _) => Line::from(vec![
            Span::styled("/", theme.key()),
            Span::raw(text::clean(&app.filter)),
            Span::raw("█"),
            Span::styled(format!("  {} shown", app.visible_len()), theme.dim()),
        ]),
        (_, Some(s)) => Line::from(Span::styled(s.text.clone(), style_of(theme, s.level))),
        (_, None) => Line::default(),
    };
    Paragraph::new(line).render(area, buf);
}

/// The key bar: the bindings of the current context marked for the bar, from the key map.
/// When they do not all fit, the last ones go first, but help and quit always stay.
fn render_keys(app: &App, area: Rect, buf: &mut Buffer) {
    let theme = app.opts.theme;
    let mut items: Vec<&keymap::Binding> = keymap::bindings(app.context())
        .filter(|b| b.in_bar && app.enabled(b.action))
        .collect();
    let width = |items: &[&keymap::Binding]| -> usize {
        items
            .iter()
            .map(|b| Span::raw(b.label).width() + b.short.chars().count() + 3)
            .sum()
    };
    let pinned = |b: &keymap::Binding| matches!(b.action, Action::Help | Action::Quit);
    while width(&items) > usize::from(area.width) + 2 {
        match items.iter().rposition(|b| !pinned(b)) {
            Some(i) => {
                items.remove(i);
            }
            None => break,
        }
    }
    let mut spans = Vec::new();
    for b in items {
        spans.push(Span::styled(b.label, theme.key()));
        spans.push(Span::raw(format!(" {}  ", b.short)));
    }
    Paragraph::new(Line::from(spans)).render(area, buf);
}

/// The help screen's lines: every binding of the key map, by context.
pub fn help_lines(theme: Theme) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    for ctx in [
        Context::Table,
        Context::Filter,
        Context::Confirm,
        Context::Help,
        Context::Global,
    ] {
        out.push(Line::from(Span::styled(ctx.title(), theme.title())));
        for b in keymap::bindings(ctx) {
            out.push(Line::from(vec![
                Span::styled(format!("  {:<12}", b.label), theme.key()),
                Span::raw(b.long),
            ]));
        }
        out.push(Line::default());
    }
    out.push(Line::from("Verdicts"));
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
                format!("  {} {:<10}", v.symbol(), v.as_str()),
                theme.verdict(v),
            ),
            Span::raw(what),
        ]));
    }
    out
}

/// A popup rectangle: at most `w` x `h`, centered, never larger than `area`.
fn popup(area: Rect, w: u16, h: u16) -> Rect {
    area.centered(
        Constraint::Length(w.min(area.width)),
        Constraint::Length(h.min(area.height)),
    )
}

fn render_help(app: &App, scroll: u16, area: Rect, buf: &mut Buffer) {
    let theme = app.opts.theme;
    let w = 96u16.min(area.width);
    // Continuation lines of a binding's description stay in the description's column.
    let lines = wrap_all(help_lines(theme), w.saturating_sub(2), |l| {
        match l.spans.len() {
            2 => l.spans[0].width(),
            _ => 0,
        }
    });
    let h = (lines.len() as u16).saturating_add(2);
    let r = popup(area, w, h);
    Clear.render(r, buf);
    let max_scroll = h.saturating_sub(r.height);
    app.help_max_scroll.set(max_scroll);
    Paragraph::new(lines)
        .block(
            Block::bordered()
                .title(Span::styled(" Help ", theme.title()))
                .title_bottom(" ?/q/Esc close · j/k scroll "),
        )
        .scroll((scroll.min(max_scroll), 0))
        .render(r, buf);
}

/// The confirm dialog's title and body.
pub fn confirm_text(
    d: &ConfirmDialog,
    theme: Theme,
    state_dir: Option<&std::path::Path>,
) -> (String, Vec<Line<'static>>) {
    let mut out: Vec<Line<'static>> = Vec::new();
    let title;
    match &d.action {
        ConfirmAction::Reclaim { findings, kept } => {
            title = if findings.len() == 1 {
                " Reclaim this stale lock? ".to_string()
            } else {
                format!(" Reclaim {} stale locks? ", findings.len())
            };
            out.push(Line::from(format!(
                "This removes {}:",
                if findings.len() == 1 {
                    "this lock".to_string()
                } else {
                    format!("these {} locks", findings.len())
                }
            )));
            if findings.len() > 1 {
                // Each lock with the first line of its evidence, up to a screenful.
                for f in findings.iter().take(MAX_LISTED) {
                    out.push(target_line(f, theme));
                    if let Some(e) = f.judgement.evidence.first() {
                        out.push(Line::from(Span::styled(
                            format!("      {}", text::clean(e)),
                            theme.dim(),
                        )));
                    }
                }
                if findings.len() > MAX_LISTED {
                    out.push(Line::from(format!(
                        "  … and {} more stale lock{}",
                        findings.len() - MAX_LISTED,
                        plural(findings.len() - MAX_LISTED)
                    )));
                }
            }
            if let [f] = findings.as_slice() {
                out.push(target_line(f, theme));
                out.push(Line::from("Why it is stale:"));
                for e in &f.judgement.evidence {
                    out.push(Line::from(format!("  • {}", text::clean(e))));
                }
                out.extend(unsaved_warning(theme, f));
            }
            if !kept.is_empty() {
                out.push(Line::from(Span::styled(
                    format!(
                        "Kept: {} vim swap file{} with unsaved changes (recover with vim -r, then reclaim with d):",
                        kept.len(),
                        plural(kept.len())
                    ),
                    theme.warn(),
                )));
                for f in kept {
                    out.push(Line::from(format!("  {}", text::path(&f.path))));
                }
            }
        }
        ConfirmAction::ForceForeign(f) => {
            title = " Force-remove a FOREIGN lock? ".to_string();
            out.push(Line::from("This removes:"));
            out.push(target_line(f, theme));
            out.push(Line::from("Why it is foreign:"));
            for e in &f.judgement.evidence {
                out.push(Line::from(format!("  • {}", text::clean(e))));
            }
            out.push(Line::from(Span::styled(
                "RISK: its owner runs on another host or in another PID namespace, so locksmith \
                 cannot tell whether it is still running. If it is, removing its lock lets a \
                 second copy in at the same time, which can corrupt what the lock protects.",
                theme.error(),
            )));
        }
    }
    let again = match d.action {
        ConfirmAction::Reclaim { .. } => {
            "Each lock is judged again just before removal; one that is no longer stale stays."
        }
        ConfirmAction::ForceForeign(_) => {
            "It is judged again just before removal; if it is no longer foreign or stale, it stays."
        }
    };
    out.push(Line::from(Span::styled(again, theme.dim())));
    let dir = state_dir
        .map(text::path)
        .unwrap_or_else(|| "the state directory".to_string());
    out.push(Line::from(Span::styled(
        format!("A copy is saved to {dir} and the removal is journaled."),
        theme.dim(),
    )));
    (title, out)
}

fn target_line(f: &Finding, theme: Theme) -> Line<'static> {
    let v = f.judgement.verdict;
    Line::from(vec![
        Span::styled(format!("  {} ", v.symbol()), theme.verdict(v)),
        Span::raw(text::path(&f.path)).bold(),
        Span::styled(
            format!("  ({}, {})", text::clean(f.dialect), kind_name(f)),
            theme.dim(),
        ),
    ])
}

fn render_confirm(app: &App, d: &ConfirmDialog, area: Rect, buf: &mut Buffer) {
    let theme = app.opts.theme;
    let (title, body) = confirm_text(d, theme, app.opts.state_dir.as_deref());
    let w = 80u16.min(area.width);
    let body = wrap_all(body, w.saturating_sub(4), text_indent);
    let h = (body.len() as u16).saturating_add(4);
    let r = popup(area, w, h);
    Clear.render(r, buf);
    let block = Block::bordered()
        .title(Span::styled(title, theme.warn()))
        .border_style(theme.warn())
        .padding(Padding::horizontal(1));
    let inner = block.inner(r);
    block.render(r, buf);
    let [text_area, _gap, buttons] = Layout::vertical([
        Constraint::Fill(1),
        Constraint::Length(1),
        Constraint::Length(1),
    ])
    .areas(inner);
    Paragraph::new(Text::from(body)).render(text_area, buf);
    let yes = if d.highlight == Choice::Yes {
        "[ Yes ]"
    } else {
        "  Yes  "
    };
    let no = if d.highlight == Choice::No {
        "[ No ]"
    } else {
        "  No  "
    };
    Paragraph::new(Line::from(vec![
        Span::styled(yes, theme.button(d.highlight == Choice::Yes)),
        Span::raw("   "),
        Span::styled(no, theme.button(d.highlight == Choice::No)),
    ]))
    .centered()
    .render(buttons, buf);
}

fn style_of(theme: Theme, level: Level) -> Style {
    match level {
        Level::Info => theme.info(),
        Level::Warn => theme.warn(),
        Level::Error => theme.error(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(lines: &[Line<'_>]) -> Vec<String> {
        lines
            .iter()
            .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect()
    }

    #[test]
    fn wrapping_breaks_at_spaces_with_a_hanging_indent() {
        let line = Line::from(vec![
            Span::styled("Evidence  ", Style::new().bold()),
            Span::raw("• no process 4242 on this host"),
        ]);
        let out = wrap_line(&line, 24, 12);
        assert_eq!(
            texts(&out),
            [
                "Evidence  • no process",
                "            4242 on this",
                "            host"
            ]
        );
        // Styles survive the split.
        assert_eq!(out[0].spans[0].style, Style::new().bold());
        assert!(out.iter().all(|l| l.width() <= 24));
        // A line that fits is unchanged; a word longer than the width is cut.
        assert_eq!(texts(&wrap_line(&Line::from("short"), 24, 4)), ["short"]);
        let long = wrap_line(&Line::from("/a/very/long/path/without/spaces"), 10, 2);
        assert!(long.iter().all(|l| l.width() <= 10), "{:?}", texts(&long));
        assert_eq!(
            texts(&long).concat().replace(' ', ""),
            "/a/very/long/path/without/spaces"
        );
        // Degenerate widths do not panic.
        for w in 0..4 {
            let _ = wrap_line(&line, w, 12);
        }
    }

    #[test]
    fn paths_are_cut_at_the_front() {
        assert_eq!(ellipsize_left("/a/b.pid", 20), "/a/b.pid");
        assert_eq!(
            ellipsize_left("/srv/app/run/worker.pid", 16),
            "…/run/worker.pid"
        );
        assert_eq!(ellipsize_left("/srv/app/run/worker.pid", 8), "…ker.pid");
        assert_eq!(ellipsize_left("/x", 0), "");
    }
}
