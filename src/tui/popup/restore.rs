//! The dialog before an undo (`u`): what the last reclaim of this session removed, each lock
//! with its dialect and kind, which will be put back from its copy; *No* highlighted until
//! moved.

use locksmith::reclaim::Plan;
use ratatui::style::{Style, Stylize};
use ratatui::text::{Line, Span};

use super::super::confirm::{ConfirmAction, ConfirmDialog};
use super::super::keymap::{Binding, Keys};
use super::super::text;
use super::super::theme::Theme;
use super::{Env, Question};

static BINDINGS: [Binding; 12] = super::question("Yes: put back now", "Scroll the list down");

pub static KEYS: Keys = Keys {
    title: "Undo dialog (after u)",
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
            ConfirmAction::Restore(plan) => content(plan, env.theme),
            _ => (String::new(), Vec::new()),
        };
        (title, body, env.theme.warn())
    }
}

/// The dialog's title and body (unwrapped).
pub fn content(plan: &Plan, theme: Theme) -> (String, Vec<Line<'static>>) {
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
