//! The detail pane: everything known about the selected lock (evidence, owner record, live
//! process, the processes holding it now, the file's owner and mode, file system, raw
//! content), wrapped to the pane's width with a hanging indent. The [`DetailPane`] keeps
//! whether it is open (`Enter`) and how far it is scrolled (`J`/`K`, the mouse wheel over it),
//! never further than its text; the scroll goes back to the top when the selection moves.
//! Its bottom border says where the view is when the text is longer than the pane. The hex
//! dump of binary content is as wide as the pane allows (whole lines of 4, 8, 12 or 16
//! bytes), so it never wraps and its ASCII column stays whole. The dialogs use its
//! descriptions of a lock too ([`unsaved_warning`], [`kind_name`]).

use locksmith::Verdict;
use locksmith::report::waiting::Waiting;
use locksmith::scan::Finding;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph, Widget};

use super::super::keymap::{self, Action, Context};
use super::super::rows::{FileMeta, Row, holders_now};
use super::super::text::{self, scroll_hint};
use super::super::theme::Theme;

/// The detail pane's state: open or not, and how far its text is scrolled.
#[derive(Debug, Default)]
pub struct DetailPane {
    /// Open (`Enter`): shown below the table whenever a lock is selected.
    pub show: bool,
    /// Lines the text is scrolled down.
    pub scroll: u16,
}

impl DetailPane {
    /// Whether it is on screen: open, and a lock to show (`has_rows`).
    pub fn open(&self, has_rows: bool) -> bool {
        self.show && has_rows
    }

    /// Whether a key-map action is the pane's own (`Enter`, and `q`/`Esc`, `J`/`K` in it).
    pub fn handles(action: Action) -> bool {
        matches!(
            action,
            Action::ToggleDetails | Action::CloseDetails | Action::DetailDown | Action::DetailUp
        )
    }

    /// What one of its actions does; `max` is how far its text can scroll now.
    pub fn act(&mut self, action: Action, max: u16) {
        match action {
            Action::ToggleDetails => {
                self.show = !self.show;
                self.scroll = 0;
            }
            Action::CloseDetails => {
                self.show = false;
                self.scroll = 0;
            }
            Action::DetailDown => self.scroll_by(1, max),
            Action::DetailUp => self.scroll_by(-1, max),
            _ => {}
        }
    }

    /// Scrolls by `delta` lines, no further than `max`.
    pub fn scroll_by(&mut self, delta: i32, max: u16) {
        let n = i32::from(self.scroll)
            .saturating_add(delta)
            .clamp(0, i32::from(max));
        self.scroll = u16::try_from(n).unwrap_or(max);
    }

    /// The selection moved to another lock: its text starts at the top.
    pub fn selection_moved(&mut self) {
        self.scroll = 0;
    }
}

/// Width of the label column.
const LABEL: usize = 10;
/// Raw content lines shown as text (the pane scrolls) ...
const CONTENT_LINES: usize = 64;
/// ... and bytes shown in a hex dump.
const CONTENT_BYTES: usize = 1024;

fn label<'a>(theme: Theme, name: &'a str) -> Span<'a> {
    Span::styled(format!("{name:<LABEL$}"), theme.label())
}

fn indent() -> Span<'static> {
    Span::raw(" ".repeat(LABEL))
}

/// The warning shown for a lock a flag keeps (a lock holding unsaved changes), in its
/// dialect's words, with the action it offers. Advice follows the verdict: the action
/// (a recovery) is for a lock whose owner is gone.
pub fn unsaved_warning(theme: Theme, f: &Finding) -> Vec<Line<'static>> {
    let Some(flag) = f.judgement.keeping() else {
        return Vec::new();
    };
    if f.judgement.verdict() == Verdict::Live {
        return vec![Line::from(Span::styled(
            format!("✎ {}", flag.line_live),
            theme.warn(),
        ))];
    }
    let warning = Line::from(Span::styled(
        format!("⚠ {}: {}", flag.label.to_uppercase(), flag.line),
        theme.error(),
    ));
    if f.judgement.verdict() != Verdict::Stale {
        return vec![warning];
    }
    let mut lines = vec![warning];
    let Some(offer) =
        locksmith::dialect::offered_before_reclaim(f.dialect, &f.path, &f.content, &f.judgement)
    else {
        return lines;
    };
    let verb = offer.action.verb;
    let hint = match &offer.command {
        Ok(c) => text::clean(&c.shown()),
        Err(why) => {
            lines.push(Line::from(vec![
                Span::styled(format!("  Not for you to {verb}: "), theme.warn()),
                Span::raw(text::clean(why)),
            ]));
            return lines;
        }
    };
    if let Some(file) = &offer.done {
        lines.push(Line::from(Span::styled(
            format!(
                "  {}",
                offer
                    .action
                    .done_line
                    .replace("{file}", &locksmith::text::display_path(file))
            ),
            theme.warn(),
        )));
    }
    lines.push(Line::from(vec![
        Span::styled(
            format!("  {} them first: ", capitalised(verb)),
            theme.warn(),
        ),
        Span::styled(hint, theme.key()),
    ]));
    lines
}

/// `recover` → `Recover`.
fn capitalised(word: &str) -> String {
    let mut c = word.chars();
    c.next()
        .map(|first| first.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

/// Every line of the detail pane for one lock, in a pane `width` columns wide.
pub fn detail_lines(row: &Row, theme: Theme, now_ms: i64, width: u16) -> Vec<Line<'static>> {
    let f = &row.finding;
    let j = &f.judgement;
    let v = j.verdict();
    let mut out: Vec<Line<'static>> = unsaved_warning(theme, f);
    out.push(Line::from(vec![
        label(theme, "Path"),
        Span::raw(text::path(&f.path)),
    ]));
    let reclaim_hint = match v {
        Verdict::Stale => format!(
            " (reclaimable: {})",
            keymap::key(Context::Table, Action::Reclaim)
        ),
        Verdict::Foreign | Verdict::Unknown => format!(
            " (not proven stale; {} removes it only on your word)",
            keymap::key(Context::Table, Action::Reclaim)
        ),
        _ => " (never reclaimed)".to_string(),
    };
    out.push(Line::from(vec![
        label(theme, "Verdict"),
        Span::styled(format!("{} {v}", v.symbol()), theme.verdict(v)),
        Span::styled(reclaim_hint, theme.dim()),
    ]));
    let mut what = vec![text::clean(f.dialect.as_str()), kind_name(f).to_string()];
    if let Some(s) = f.size {
        what.push(text::size(s));
    }
    if let Some(m) = f.modified_ms {
        what.push(format!(
            "modified {} ({} ago)",
            locksmith::judge::fmt_ms(m),
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
        text::clean(f.fs.kind.as_str()),
        match &f.fs.shared {
            Some(what) => format!(
                " (local, shared with other machines: {}; their PIDs cannot be checked)",
                text::clean(what)
            ),
            None if f.fs.network => {
                " (network file system: kernel locks and PIDs of other hosts cannot be checked)"
                    .to_string()
            }
            None => " (local)".to_string(),
        }
    );
    if let Some(m) = &row.file {
        out.push(Line::from(vec![
            label(theme, "File"),
            Span::raw(file_line(m)),
        ]));
    }
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
    let holders = holders_now(j);
    match &j.process {
        Some(p) => {
            let mut parts = vec![text::clean(&p.headline())];
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
        // The owner the lock names is gone, yet processes hold it (a child that inherited
        // the descriptor, another worktree's tool): they are who matters now.
        None if !holders.is_empty() => out.push(Line::from(vec![
            label(theme, "Process"),
            Span::styled(
                format!(
                    "the owner it names is not running; held now by {} (see Holders)",
                    text::clean(&describe_holder(holders[0]))
                ),
                theme.warn(),
            ),
        ])),
        None => out.push(Line::from(vec![
            label(theme, "Process"),
            Span::styled("no live owner process", theme.dim()),
        ])),
    }
    for (i, h) in holders.iter().enumerate() {
        let head = if i == 0 {
            label(theme, "Holders")
        } else {
            indent()
        };
        out.push(Line::from(vec![
            head,
            Span::raw(format!("• {}", text::clean(&describe_holder(h)))),
        ]));
    }
    if j.holders.iter().any(|h| h.pid <= 0) {
        out.push(Line::from(vec![
            if holders.is_empty() {
                label(theme, "Holders")
            } else {
                indent()
            },
            Span::styled(
                "• a process not visible here (another PID namespace)",
                theme.dim(),
            ),
        ]));
    }
    let room = usize::from(width).saturating_sub(LABEL);
    let content = text::content_lines(&f.content, CONTENT_LINES, CONTENT_BYTES, room);
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

/// One holder, raw: `pid 42 tool (posix write bytes 0-99)`: its PID, name, container and how
/// it holds the file ([`locksmith::Holder::describe_how`]: the kind, the lock's mode and byte
/// range when the judge knows them).
pub fn describe_holder(h: &locksmith::Holder) -> String {
    let mut out = format!("pid {}", h.pid);
    if let Some(n) = &h.name {
        out.push(' ');
        out.push_str(n);
    }
    if let Some(c) = &h.container {
        out.push_str(&format!(" in {}", c.describe()));
    }
    format!("{out} ({})", h.describe_how())
}

/// The file's owner and mode: `owner me (uid 1000, gid 1000) · mode -rw-r----- (0640)`.
fn file_line(m: &FileMeta) -> String {
    let who = match &m.user {
        Some(u) => format!("owner {} (uid {}, gid {})", text::clean(u), m.uid, m.gid),
        None => format!("owner uid {} (gid {})", m.uid, m.gid),
    };
    format!(
        "{who} · mode {} ({:04o})",
        text::mode_string(m.mode),
        m.mode & 0o7777
    )
}

pub fn kind_name(f: &Finding) -> &'static str {
    use locksmith::dialect::EntryKind;
    match f.kind {
        EntryKind::File => "file",
        EntryKind::Symlink => "symlink",
        EntryKind::Dir => "directory",
        EntryKind::Other => "special file",
    }
}

/// The lines of a lock's waiters and of a stuck holder, with the key that ends it.
pub fn waiting_lines(w: &Waiting, theme: Theme) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    for (i, h) in w.handles.iter().enumerate() {
        let head = if i == 0 {
            label(theme, "Handles")
        } else {
            indent()
        };
        out.push(Line::from(vec![
            head,
            Span::raw(text::clean(h)),
            Span::styled(
                "  a hard link of this lock: its holder's handle (a dotlock is taken by \
                 linking it); part of this lock, not a lock of its own",
                theme.dim(),
            ),
        ]));
    }
    for (i, x) in w.waiters.iter().enumerate() {
        let head = if i == 0 {
            label(theme, "Waiting")
        } else {
            indent()
        };
        out.push(Line::from(vec![
            head,
            Span::raw(text::clean(&locksmith::report::waiting::describe_waiter(x))),
        ]));
        out.push(Line::from(vec![
            indent(),
            Span::styled(format!("  {}", text::clean(&x.evidence)), theme.dim()),
        ]));
    }
    if let Some(s) = &w.holder {
        out.push(Line::from(vec![
            label(theme, "Stuck"),
            Span::styled(text::clean(&s.why), theme.warn()),
        ]));
        out.push(Line::from(vec![
            indent(),
            Span::styled(
                format!(
                    "{} stops process {} after confirmation (SIGTERM, then SIGKILL if it is still there); the lock file stays",
                    keymap::key(Context::Table, Action::Signal),
                    s.pid
                ),
                theme.key(),
            ),
        ]));
    }
    out
}

/// The pane's lines wrapped to `width` columns; continuation lines stay in the text column.
pub fn lines(
    row: &Row,
    waiting: Option<&Waiting>,
    theme: Theme,
    now_ms: i64,
    width: u16,
) -> Vec<Line<'static>> {
    let mut all = detail_lines(row, theme, now_ms, width);
    if let Some(w) = waiting {
        all.extend(waiting_lines(w, theme));
    }
    text::wrap_all(all, width, |l| match l.spans.first() {
        Some(first) if first.width() == LABEL => {
            LABEL + text::text_indent(&Line::from(l.spans[1..].to_vec()))
        }
        _ => text::text_indent(l),
    })
}

/// How far the pane can scroll on screen, showing `row` (when the pane is open, its text area
/// `inner`, and a lock selected).
pub fn max_scroll_of(
    inner: Option<Rect>,
    row: Option<&Row>,
    waiting: Option<&Waiting>,
    theme: Theme,
    now_ms: i64,
) -> u16 {
    match (inner, row) {
        (Some(inner), Some(row)) => max_scroll(row, waiting, theme, now_ms, inner),
        _ => 0,
    }
}

/// How far the pane can scroll: its wrapped lines beyond its text area.
pub fn max_scroll(
    row: &Row,
    waiting: Option<&Waiting>,
    theme: Theme,
    now_ms: i64,
    inner: Rect,
) -> u16 {
    let n = lines(row, waiting, theme, now_ms, inner.width).len();
    u16::try_from(n)
        .unwrap_or(u16::MAX)
        .saturating_sub(inner.height)
}

/// Draws the pane for `row`, scrolled `scroll` lines down (clamped to the end).
pub fn render(
    row: &Row,
    waiting: Option<&Waiting>,
    scroll: u16,
    theme: Theme,
    now_ms: i64,
    area: Rect,
    buf: &mut Buffer,
) {
    let f = &row.finding;
    let name = f
        .path
        .file_name()
        .map(|n| text::bytes(n.as_encoded_bytes()))
        .unwrap_or_default();
    let mut block = Block::bordered()
        .title(Line::from(vec![
            Span::raw(" Details: "),
            Span::styled(name, theme.label()),
            Span::raw(" "),
        ]))
        .border_style(theme.dim());
    let inner = block.inner(area);
    let lines = lines(row, waiting, theme, now_ms, inner.width);
    let max = u16::try_from(lines.len())
        .unwrap_or(u16::MAX)
        .saturating_sub(inner.height);
    let scroll = scroll.min(max);
    let keys = format!(
        "{}/{}",
        keymap::key(Context::Detail, Action::DetailDown),
        keymap::key(Context::Detail, Action::DetailUp)
    );
    if let Some(pos) = scroll_hint(scroll, inner.height, lines.len(), &keys) {
        block = block.title_bottom(Line::from(Span::styled(pos, theme.key())).right_aligned());
    }
    block.render(area, buf);
    Paragraph::new(lines).scroll((scroll, 0)).render(inner, buf);
}

#[cfg(test)]
mod tests;
