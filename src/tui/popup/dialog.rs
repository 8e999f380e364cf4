//! The confirm dialog of a reclaim: what will be removed and why (every lock of a reclaim of
//! several, in a list that scrolls), what is kept, what this user cannot remove and why,
//! where the copies go, and two buttons, *Yes* on the left and *No* on the right, *No*
//! highlighted until moved; a dialog with nothing this user can do has one button, *Close*.
//! The same dialog asks before an undo, naming what will be put back. The buttons stay on
//! screen whatever the size; the bottom border says when there is more to read.

use std::path::{Path, PathBuf};

use locksmith::reclaim::Plan;
use locksmith::scan::Finding;

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Stylize;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Padding, Paragraph, Widget};

use super::super::confirm::{Choice, ConfirmAction, ConfirmDialog};
use super::super::detail;
use super::super::keymap::{self, Action, Context};
use super::super::layout::{DIALOG_CHROME_HEIGHT, DIALOG_CHROME_WIDTH, DIALOG_WIDTH, popup};
use super::super::text::{self, plural, scroll_hint};
use super::super::theme::Theme;

/// The dialog's title and body (unwrapped).
pub fn content(
    d: &ConfirmDialog,
    theme: Theme,
    state_dir: Option<&std::path::Path>,
) -> (String, Vec<Line<'static>>) {
    let mut out: Vec<Line<'static>> = Vec::new();
    let title;
    let denied = d.denied.as_deref().unwrap_or_default();
    match &d.action {
        ConfirmAction::Restore(plan) => return restore_content(plan, theme),
        ConfirmAction::Reclaim { findings, .. } if findings.is_empty() => {
            title = if denied.len() == 1 {
                " This lock cannot be reclaimed ".to_string()
            } else {
                format!(" These {} locks cannot be reclaimed ", denied.len())
            };
            out.push(Line::from(
                "This user cannot remove it, so nothing will be tried (a reclaim would refuse):",
            ));
            out.extend(denied_lines(denied, theme));
            return (title, out);
        }
        ConfirmAction::Force(f) if !d.offers_yes() => {
            title = " This lock cannot be removed ".to_string();
            out.push(Line::from(
                "This user cannot remove it, so nothing will be tried (a reclaim would refuse):",
            ));
            out.push(target_line(f, theme));
            out.extend(denied_lines(denied, theme));
            return (title, out);
        }
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
                // Each lock with the first line of its evidence (the list scrolls).
                for f in findings {
                    out.push(target_line(f, theme));
                    if let Some(e) = f.judgement.evidence.first() {
                        out.push(Line::from(Span::styled(
                            format!("      {}", text::clean(e)),
                            theme.dim(),
                        )));
                    }
                }
            }
            if let [f] = findings.as_slice() {
                out.push(target_line(f, theme));
                out.push(Line::from("Why it is stale:"));
                for e in &f.judgement.evidence {
                    out.push(Line::from(format!("  • {}", text::clean(e))));
                }
                out.extend(detail::unsaved_warning(theme, f));
            }
            if !kept.is_empty() {
                out.push(Line::from(Span::styled(
                    format!(
                        "Kept: {} vim swap file{} with unsaved changes (recover with vim -r, then reclaim with {}):",
                        kept.len(),
                        plural(kept.len()),
                        keymap::key(Context::Table, Action::Reclaim)
                    ),
                    theme.warn(),
                )));
                for f in kept {
                    out.push(Line::from(format!("  {}", text::path(&f.path))));
                }
            }
            if !denied.is_empty() {
                out.push(Line::from(Span::styled(
                    format!(
                        "Left out: {} lock{} this user cannot remove:",
                        denied.len(),
                        plural(denied.len())
                    ),
                    theme.error(),
                )));
                out.extend(denied_lines(denied, theme));
            }
        }
        ConfirmAction::Force(f) => {
            title = " NOT PROVEN STALE: remove it anyway? ".to_string();
            out.push(Line::from(Span::styled(
                format!(
                    "This lock is {}, not stale: nothing proves its owner gone. It is removed only on your word.",
                    f.judgement.verdict()
                ),
                theme.error(),
            )));
            out.push(Line::from("This removes:"));
            out.push(target_line(f, theme));
            out.push(Line::from("What the evidence says:"));
            for e in &f.judgement.evidence {
                out.push(Line::from(format!("  • {}", text::clean(e))));
            }
            out.extend(detail::unsaved_warning(theme, f));
            out.push(Line::from(Span::styled(
                "RISK: if its owner still runs (on another host, in another PID namespace, or \
                 under a name locksmith does not know), removing its lock lets a second copy in \
                 at the same time, which can corrupt what the lock protects.",
                theme.error(),
            )));
        }
        ConfirmAction::EndHolder { finding, stuck } => {
            return end_holder_content(finding, stuck, theme);
        }
    }
    let again = match d.action {
        ConfirmAction::Force(_) | ConfirmAction::EndHolder { .. } => {
            "It is judged again just before removal; if it is live or free by then, it stays."
        }
        _ => "Each lock is judged again just before removal; one that is no longer stale stays.",
    };
    out.push(Line::from(Span::styled(again, theme.dim())));
    if d.denied.is_none() {
        out.push(Line::from(Span::styled(
            "Checking that this user may remove it…",
            theme.dim(),
        )));
    }
    let dir = state_dir
        .map(text::path)
        .unwrap_or_else(|| "the state directory".to_string());
    out.push(Line::from(Span::styled(
        format!("A copy is saved to {dir} and the removal is journaled."),
        theme.dim(),
    )));
    (title, out)
}

/// The dialog of ending a lock's stuck holder: who, why, how, and that the lock file stays.
fn end_holder_content(
    f: &Finding,
    stuck: &locksmith::report::waiting::Stuck,
    theme: Theme,
) -> (String, Vec<Line<'static>>) {
    let title = " End the process holding this lock? ".to_string();
    let out = vec![
        Line::from(format!(
            "This ends process {} ({}), which holds:",
            stuck.pid,
            text::clean(&stuck.name)
        )),
        target_line(f, theme),
        Line::from(format!("Why: {}", text::clean(&stuck.why))),
        Line::from(Span::styled(
            format!(
                "It gets SIGTERM (and SIGCONT, so that a stopped process can act on it), then SIGKILL if it is still there after {} s. Its PID and start time are checked before each signal: a PID that names another process by then is left alone.",
                END_GRACE_SECS
            ),
            theme.dim(),
        )),
        Line::from(Span::styled(
            "RISK: whatever it was doing is cut short (a half-written file, an unfinished download).",
            theme.error(),
        )),
        Line::from(Span::styled(
            "The lock file is not removed: a kernel lock goes with its holder (the next program takes it), and a lock naming it can then be proven stale and reclaimed.",
            theme.dim(),
        )),
    ];
    (title, out)
}

/// Seconds between SIGTERM and SIGKILL when a holder is ended.
pub const END_GRACE_SECS: u64 = 5;

/// Each lock this user cannot remove, and why.
fn denied_lines(denied: &[(PathBuf, String)], theme: Theme) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    for (path, why) in denied {
        out.push(Line::from(vec![
            Span::styled("  ✗ ", theme.error()),
            Span::raw(text::path(path)).bold(),
        ]));
        out.push(Line::from(Span::styled(
            format!("      {}", text::clean(why)),
            theme.error(),
        )));
    }
    out
}

/// The dialog of an undo: what the last reclaim of this session removed, which will be put
/// back.
fn restore_content(plan: &Plan, theme: Theme) -> (String, Vec<Line<'static>>) {
    let n = plan.entries.len();
    let title = if n == 1 {
        " Undo the last reclaim: put this lock back? ".to_string()
    } else {
        format!(" Undo the last reclaim: put these {n} locks back? ")
    };
    let mut out = vec![Line::from(format!(
        "This puts back what the last reclaim of this session removed ({}), each exactly as \
         it was, from its copy:",
        if n == 1 {
            "one lock".to_string()
        } else {
            format!("{n} locks, as one step")
        }
    ))];
    for e in &plan.entries {
        out.push(Line::from(vec![
            Span::raw("  ↩ "),
            Span::raw(text::path(&e.path_buf())).bold(),
            Span::styled(
                format!(
                    "  ({}, {})",
                    text::clean(e.dialect.as_deref().unwrap_or("?")),
                    text::clean(e.meta.as_ref().map_or("?", |m| m.kind.as_str()))
                ),
                theme.dim(),
            ),
        ]));
    }
    out.push(Line::from(Span::styled(
        "A lock whose path holds something now is not put back. Reclaims of other runs (another \
         locksmith, --scan --reclaim) are never undone here: `locksmith journal` lists them.",
        theme.dim(),
    )));
    (title, out)
}

fn target_line(f: &Finding, theme: Theme) -> Line<'static> {
    let v = f.judgement.verdict();
    Line::from(vec![
        Span::styled(format!("  {} ", v.symbol()), theme.verdict(v)),
        Span::raw(text::path(&f.path)).bold(),
        Span::styled(
            format!(
                "  ({}, {})",
                text::clean(f.dialect.as_str()),
                detail::kind_name(f)
            ),
            theme.dim(),
        ),
    ])
}

/// The dialog on a `screen`: its rectangle, its body wrapped to fit, the text area and the
/// buttons' line.
pub struct View {
    pub title: String,
    pub body: Vec<Line<'static>>,
    pub area: Rect,
    pub text: Rect,
    pub buttons: Rect,
}

pub fn view(d: &ConfirmDialog, theme: Theme, state_dir: Option<&Path>, screen: Rect) -> View {
    let (title, body) = content(d, theme, state_dir);
    let w = DIALOG_WIDTH.min(screen.width);
    let body = text::wrap_all(
        body,
        w.saturating_sub(DIALOG_CHROME_WIDTH),
        text::text_indent,
    );
    let h = u16::try_from(body.len())
        .unwrap_or(u16::MAX)
        .saturating_add(DIALOG_CHROME_HEIGHT);
    let area = popup(screen, w, h);
    let inner = Block::bordered()
        .padding(Padding::horizontal(1))
        .inner(area);
    let [text, _gap, buttons] = Layout::vertical([
        Constraint::Fill(1),
        Constraint::Length(1),
        Constraint::Length(1),
    ])
    .areas(inner);
    View {
        title,
        body,
        area,
        text,
        buttons,
    }
}

/// Lines in view and how far the body can scroll on a `screen`.
pub fn extent(
    d: &ConfirmDialog,
    theme: Theme,
    state_dir: Option<&Path>,
    screen: Rect,
) -> (u16, u16) {
    let v = view(d, theme, state_dir, screen);
    let total = u16::try_from(v.body.len()).unwrap_or(u16::MAX);
    (v.text.height, total.saturating_sub(v.text.height))
}

pub fn render(
    d: &ConfirmDialog,
    theme: Theme,
    state_dir: Option<&Path>,
    screen: Rect,
    buf: &mut Buffer,
) {
    let v = view(d, theme, state_dir, screen);
    Clear.render(v.area, buf);
    let max = u16::try_from(v.body.len())
        .unwrap_or(u16::MAX)
        .saturating_sub(v.text.height);
    let scroll = d.scroll.min(max);
    let mut block = Block::bordered()
        .title(Span::styled(v.title, theme.warn()))
        .border_style(theme.warn())
        .padding(Padding::horizontal(1));
    if let Some(hint) = scroll_hint(
        scroll,
        v.text.height,
        v.body.len(),
        &keymap::keys(Context::Confirm, Action::Down),
    ) {
        block = block.title_bottom(Line::from(Span::styled(hint, theme.key())).right_aligned());
    }
    block.render(v.area, buf);
    Paragraph::new(v.body)
        .scroll((scroll, 0))
        .render(v.text, buf);
    if !d.offers_yes() {
        Paragraph::new(Line::from(Span::styled("[ Close ]", theme.button(true))))
            .centered()
            .render(v.buttons, buf);
        return;
    }
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
    .render(v.buttons, buf);
}
