//! The dialog that stops the processes holding a lock (`x`): it names each process (PID,
//! name, user, command line, how it holds the lock) and the signal, says what the signal does
//! and what it risks, names a holder seen stuck (stopped, or not reaping its children) and
//! why, lists the holders that will not be signalled and why, and defaults to *No*. After a SIGTERM that did not end them within the grace period, the same dialog
//! offers SIGKILL.

use ratatui::style::Style;
use ratatui::text::{Line, Span};

use super::super::confirm::{ConfirmAction, ConfirmDialog};
use super::super::keymap::{Binding, Keys};
use super::super::stop::{self, Sig};
use super::super::text::{self, plural};
use super::super::theme::Theme;
use super::{Env, Question};

static BINDINGS: [Binding; 12] =
    super::question("Yes: send the signal now", "Scroll the text down");

pub static KEYS: Keys = Keys {
    title: "Stop dialog (after x)",
    bindings: &BINDINGS,
};

/// The question before signalling a lock's holders.
#[derive(Debug)]
pub struct Signal;

impl Question for Signal {
    const KEYS: &'static Keys = &KEYS;
    const CANCELLED: &'static str = "cancelled: no signal was sent";

    fn content(d: &ConfirmDialog, env: &Env<'_>) -> (String, Vec<Line<'static>>, Style) {
        match &d.action {
            ConfirmAction::Signal(plan) => {
                let (title, body) = content(plan, env.theme);
                (title, body, env.theme.error())
            }
            _ => (String::new(), Vec::new(), env.theme.warn()),
        }
    }
}

/// The dialog's title and body (unwrapped).
pub fn content(plan: &stop::Plan, theme: Theme) -> (String, Vec<Line<'static>>) {
    let n = plan.targets.len();
    let sig = plan.signal.name();
    let which = if n == 1 {
        "this process".to_string()
    } else {
        format!("these {n} processes")
    };
    let title = format!(" Send {sig} to {which}? ");
    let mut out = Vec::new();
    if plan.after_term {
        out.push(Line::from(Span::styled(
            format!(
                "{} still running {} s after SIGTERM:",
                if n == 1 { "It is" } else { "They are" },
                stop::GRACE.as_secs()
            ),
            theme.warn(),
        )));
    } else {
        out.push(Line::from(format!(
            "{} the lock {}:",
            if n == 1 {
                "This process holds"
            } else {
                "These processes hold"
            },
            text::path(&plan.finding.path)
        )));
    }
    for t in &plan.targets {
        out.push(Line::from(vec![
            Span::styled("  ● ", theme.verdict(locksmith::Verdict::Live)),
            Span::styled(text::clean(&t.describe()), theme.label()),
            Span::styled(format!("  ({})", text::clean(&t.how)), theme.dim()),
        ]));
        if !t.cmdline.is_empty() {
            out.push(Line::from(Span::styled(
                format!("      {}", text::clean(&t.cmdline)),
                theme.dim(),
            )));
        }
    }
    if let Some(s) = &plan.stuck {
        // The reason names the process: `process 42 (flock) is stopped (state T, ...)`.
        out.push(Line::from(vec![
            Span::styled("Stuck: ", theme.label()),
            Span::styled(text::clean(&s.why), theme.warn()),
        ]));
    }
    let what = match plan.signal {
        Sig::Term => format!(
            "SIGTERM asks {} to exit: a program may clean up first, or ignore it. If {} still \
             running after {} s, SIGKILL is offered.",
            if n == 1 { "it" } else { "them" },
            if n == 1 { "it is" } else { "any is" },
            stop::GRACE.as_secs()
        ),
        Sig::Kill => format!(
            "SIGKILL ends {} at once, with no clean-up: what {} was writing may be left half \
             done.",
            if n == 1 { "it" } else { "them" },
            if n == 1 { "it" } else { "they" }
        ),
    };
    out.push(Line::from(what));
    if !plan.refused.is_empty() {
        out.push(Line::from(Span::styled(
            format!(
                "Not signalled ({} holder{}):",
                plan.refused.len(),
                plural(plan.refused.len())
            ),
            theme.warn(),
        )));
        for r in &plan.refused {
            out.push(Line::from(format!("  • {}", text::clean(r))));
        }
    }
    out.push(Line::from(Span::styled(
        "The lock is judged again afterwards: it turns stale once its holders are gone.",
        theme.dim(),
    )));
    (title, out)
}
