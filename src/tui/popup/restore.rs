//! The dialog before an undo: what will be put back, each lock with its dialect and kind,
//! from its copy; *No* highlighted until moved. For `u` it says which reclaim of the UI that
//! is (this session's, or an earlier session's, and when), and what of that reclaim is
//! left out because it is outside the roots on screen; for a reclaim picked in the journal
//! view, who made it and when, and which of its locks are outside the roots on screen.

use locksmith::reclaim::{Via, run_id};
use ratatui::style::{Style, Stylize};
use ratatui::text::{Line, Span};

use super::super::confirm::{ConfirmAction, ConfirmDialog, Undo};
use super::super::keymap::{self, Action, Binding, Context, Keys};
use super::super::text::{self, plural};
use super::{Env, Question};

static BINDINGS: [Binding; 12] = super::question("Yes: put back now", "Scroll the list down");

pub static KEYS: Keys = Keys {
    title: "Undo dialog (after u, or a pick in the journal view)",
    bindings: &BINDINGS,
};

/// The question before putting back what the last reclaim removed.
#[derive(Debug)]
pub struct Restore;

impl Question for Restore {
    const KEYS: &'static Keys = &KEYS;
    const CANCELLED: &'static str = "cancelled: nothing was put back";

    fn content(d: &ConfirmDialog, env: &Env<'_>) -> (String, Vec<Line<'static>>, Style) {
        let (title, body) = match &d.action {
            ConfirmAction::Restore(undo) => content(undo, env),
            _ => (String::new(), Vec::new()),
        };
        (title, body, env.theme.warn())
    }
}

/// The dialog's title and body (unwrapped).
pub fn content(undo: &Undo, env: &Env<'_>) -> (String, Vec<Line<'static>>) {
    let theme = env.theme;
    let plan = &undo.plan;
    let n = plan.entries.len();
    let these = if n == 1 {
        "this lock".to_string()
    } else {
        format!("these {n} locks")
    };
    let when = plan.since().map(short_time).unwrap_or_default();
    let title = if undo.picked {
        format!(" Put {these} back? ")
    } else {
        format!(" Undo your last reclaim: put {these} back? ")
    };
    let own = plan.run.as_deref() == Some(run_id());
    let what = match (undo.picked, own) {
        (false, true) => format!("what you reclaimed in this session at {when}"),
        (false, false) => format!(
            "what you reclaimed in an earlier session of the UI, at {when} (nothing reclaimed \
             in this session is left to undo)"
        ),
        (true, true) => format!("what this UI session reclaimed at {when}"),
        (true, false) => format!(
            "what {} reclaimed at {when}",
            Via::describe(plan.via.as_deref())
        ),
    };
    let step = if n > 1 && plan.batch.is_some() {
        ", as one step"
    } else {
        ""
    };
    let mut out = vec![Line::from(format!(
        "This puts back {what}{step}, each exactly as it was, from its copy:"
    ))];
    let outside = super::journal::outside(&plan.entries, env.roots);
    for e in &plan.entries {
        let mut spans = vec![
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
        ];
        if outside.iter().any(|o| std::ptr::eq(*o, e)) {
            spans.push(Span::styled("  outside the roots on screen", theme.warn()));
        }
        out.push(Line::from(spans));
    }
    if !outside.is_empty() {
        out.push(Line::from(Span::styled(
            format!(
                "{} of {} outside the roots on screen: once back, {} not listed here.",
                outside.len(),
                if n == 1 { "it is" } else { "them are" },
                if outside.len() == 1 {
                    "it is"
                } else {
                    "they are"
                }
            ),
            theme.warn(),
        )));
    }
    if !plan.outside.is_empty() {
        out.push(Line::from(Span::styled(
            format!(
                "Left out: {} more lock{} of that reclaim, outside the roots on screen (the \
                 journal view puts {} back):",
                plan.outside.len(),
                plural(plan.outside.len()),
                if plan.outside.len() == 1 {
                    "it"
                } else {
                    "them"
                }
            ),
            theme.warn(),
        )));
        for e in &plan.outside {
            out.push(Line::from(format!("  {}", text::path(&e.path_buf()))));
        }
    }
    let journal = keymap::key(Context::Table, Action::Journal);
    out.push(Line::from(Span::styled(
        if undo.picked {
            "A lock whose path holds something now is not put back.".to_string()
        } else {
            format!(
                "A lock whose path holds something now is not put back. u undoes only what \
                 was reclaimed in the UI; reclaims of other runs (--scan --reclaim, locksmith \
                 start, a cron job) are in the journal view ({journal})."
            )
        },
        theme.dim(),
    )));
    (title, out)
}

/// `2026-12-02 00:03:28` from an RFC 3339 time.
fn short_time(t: &str) -> String {
    t.get(..19).unwrap_or(t).replace('T', " ")
}

#[cfg(test)]
mod tests;
