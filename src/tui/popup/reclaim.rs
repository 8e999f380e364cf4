//! The confirm dialog of a reclaim: what will be removed and why (every lock of a reclaim of
//! several, in a list that scrolls), what is kept and left alone, what this user cannot
//! remove and why, where the copies go, and two buttons, *Yes* on the left and *No* on the
//! right, *No* highlighted until moved; a dialog with nothing this user can do has one button,
//! *Close*. The buttons stay on screen whatever the size; the bottom border says when there is
//! more to read.

use std::path::PathBuf;

use locksmith::scan::Finding;
use ratatui::style::{Style, Stylize};
use ratatui::text::{Line, Span};

use super::super::components::detail;
use super::super::confirm::{ConfirmAction, ConfirmDialog};
use super::super::keymap::{self, Action, Binding, Context, Keys};
use super::super::text::{self, plural};
use super::super::theme::Theme;
use super::{Env, Outcome, Question};

static BINDINGS: [Binding; 12] = super::question("Yes: reclaim now", "Scroll the list down");

pub static KEYS: Keys = Keys {
    title: "Reclaim dialog",
    bindings: &BINDINGS,
};

/// The dialog of a reclaim (or of a forced removal).
#[derive(Debug)]
pub struct Reclaim;

impl Question for Reclaim {
    const KEYS: &'static Keys = &KEYS;
    const CANCELLED: &'static str = "cancelled: nothing was removed";

    fn content(d: &ConfirmDialog, env: &Env<'_>) -> (String, Vec<Line<'static>>, Style) {
        let (title, body) = content(d, env.theme, env.state_dir);
        (title, body, env.theme.warn())
    }

    fn closed(d: &ConfirmDialog, outcome: Outcome) -> Outcome {
        let denied = d.denied.as_deref().and_then(|d| d.first());
        match (outcome, denied) {
            // Nothing this user could remove: closing says why.
            (Outcome::Closed(_), Some((path, why))) if !d.offers_yes() => {
                Outcome::Refused(format!(
                    "nothing was removed: {}: {}",
                    text::path(path),
                    text::clean(why)
                ))
            }
            (o, _) => o,
        }
    }
}

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
        ConfirmAction::Signal(_) | ConfirmAction::Restore(_) => return (String::new(), out),
        ConfirmAction::Reclaim { findings, .. } if findings.is_empty() => {
            title = if denied.len() == 1 {
                " This lock cannot be reclaimed ".to_string()
            } else {
                format!(" These {} locks cannot be reclaimed ", denied.len())
            };
            out.push(Line::from(
                "It cannot be removed here, so nothing will be tried (a reclaim would refuse):",
            ));
            out.extend(denied_lines(denied, theme));
            return (title, out);
        }
        ConfirmAction::Force(f) if !d.offers_yes() => {
            title = " This lock cannot be removed ".to_string();
            out.push(Line::from(
                "It cannot be removed here, so nothing will be tried (a reclaim would refuse):",
            ));
            out.push(target_line(f, theme));
            out.extend(denied_lines(denied, theme));
            return (title, out);
        }
        ConfirmAction::Reclaim {
            findings,
            kept,
            skipped,
        } => {
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
            if let [first, ..] = kept.as_slice() {
                let flag = first.judgement.keeping();
                let action = locksmith::dialect::action_of(
                    first.dialect,
                    &first.path,
                    &first.content,
                    &first.judgement,
                );
                out.push(Line::from(Span::styled(
                    format!(
                        "Kept: {} {} file{} with {} ({} with {}, then reclaim with {}):",
                        kept.len(),
                        flag.map_or("lock", |f| f.what),
                        plural(kept.len()),
                        flag.map_or("unsaved changes", |f| f.label),
                        action.map_or("handle them", |a| a.verb),
                        action.map_or("its program", |a| a.short),
                        keymap::key(Context::Table, Action::Reclaim)
                    ),
                    theme.warn(),
                )));
                for f in kept {
                    out.push(Line::from(format!("  {}", text::path(&f.path))));
                }
            }
            if !skipped.is_empty() {
                out.push(Line::from(Span::styled(
                    format!(
                        "Left alone: {} marked lock{} not proven stale (one at a time with {}):",
                        skipped.len(),
                        plural(skipped.len()),
                        keymap::key(Context::Table, Action::Reclaim)
                    ),
                    theme.warn(),
                )));
                for f in skipped {
                    out.push(target_line(f, theme));
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
    }
    let again = match d.action {
        ConfirmAction::Force(_) => {
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

pub fn target_line(f: &Finding, theme: Theme) -> Line<'static> {
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

#[cfg(test)]
mod tests;
