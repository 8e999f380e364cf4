//! The dialog that stops the processes holding a lock (`x`): it names each process (PID,
//! name, user, command line, how it holds the lock), the chain each holder started and waits
//! for (the editor under a version control commit), and the signal, which `s` / `S` choose among
//! SIGTERM, SIGINT, SIGHUP, SIGKILL and SIGCONT (SIGCONT first for a stopped holder); it says
//! what the signal does and what it risks, names a holder seen stuck (stopped, or not reaping
//! its children) and why, lists the holders that will not be signalled and why, and defaults to
//! *No*. After a signal that asked them to end did not end them within the grace period, the
//! same dialog offers SIGKILL.

use ratatui::style::Style;
use ratatui::text::{Line, Span};

use super::super::confirm::{ConfirmAction, ConfirmDialog};
use super::super::keymap::{Action, Bar, Binding, Key, Keys, bar, bind};
use super::super::stop::{self, Sig};
use super::super::text::{self, plural};
use super::super::theme::Theme;
use super::{Env, Question};

static BINDINGS: [Binding; 14] = {
    let q = super::question("Yes: send the signal now", "Scroll the text down");
    [
        q[0],
        q[1],
        q[2],
        q[3],
        q[4],
        q[5],
        bind(
            &[Key::ch('s')],
            "signal",
            "Choose the next signal (SIGTERM, SIGINT, SIGHUP, SIGKILL, SIGCONT)",
            Action::NextSignal,
            bar(1),
        ),
        bind(
            &[Key::ch('S')],
            "signal back",
            "Choose the previous signal",
            Action::PrevSignal,
            Bar::No,
        ),
        q[6],
        q[7],
        q[8],
        q[9],
        q[10],
        q[11],
    ]
};

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

    fn act(d: &mut ConfirmDialog, action: Action) -> bool {
        let forward = match action {
            Action::NextSignal => true,
            Action::PrevSignal => false,
            _ => return false,
        };
        if let ConfirmAction::Signal(plan) = &mut d.action {
            plan.signal = plan.signal.cycle(forward);
        }
        true
    }

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
    if let Some(sent) = plan.after {
        out.push(Line::from(Span::styled(
            format!(
                "{} still running {} s after {}:",
                if n == 1 { "It is" } else { "They are" },
                stop::GRACE.as_secs(),
                sent.name()
            ),
            theme.warn(),
        )));
    } else {
        let chain = plan.targets.iter().any(|t| t.under.is_some());
        let holders = plan.targets.iter().filter(|t| t.under.is_none()).count();
        out.push(Line::from(format!(
            "{} the lock {}{}:",
            if holders == 1 {
                "This process holds"
            } else {
                "These processes hold"
            },
            text::path(&plan.finding.path),
            if chain {
                ", with what it started and waits for under it"
            } else {
                ""
            }
        )));
    }
    for t in &plan.targets {
        // The chain a holder started is under it.
        let indent = if t.under.is_some() { "    " } else { "" };
        let marker = if t.stopped { "  ■ " } else { "  ● " };
        out.push(Line::from(vec![
            Span::raw(indent),
            Span::styled(marker, theme.verdict(locksmith::Verdict::Live)),
            Span::styled(text::clean(&t.describe()), theme.label()),
            Span::styled(
                format!(
                    "  ({}{})",
                    text::clean(&t.how),
                    if t.stopped { ", stopped" } else { "" }
                ),
                theme.dim(),
            ),
        ]));
        if !t.cmdline.is_empty() {
            out.push(Line::from(Span::styled(
                format!("{indent}      {}", text::clean(&t.cmdline)),
                theme.dim(),
            )));
        }
    }
    if plan.targets.iter().any(|t| t.under.is_some()) {
        out.push(Line::from(Span::styled(
            "What a holder started (the editor of a commit, a command) is signalled with \
             it.",
            theme.dim(),
        )));
    }
    if let Some(s) = &plan.stuck {
        // The reason names the process: `process 42 (flock) is stopped (state T, ...)`.
        out.push(Line::from(vec![
            Span::styled("Stuck: ", theme.label()),
            Span::styled(text::clean(&s.why), theme.warn()),
        ]));
    }
    // The signals to choose from, the chosen one in brackets.
    let mut choice = vec![Span::styled("Signal: ", theme.label())];
    for s in Sig::ALL {
        if s == plan.signal {
            choice.push(Span::styled(format!("[{}]", s.name()), theme.button(true)));
        } else {
            choice.push(Span::styled(format!(" {} ", s.name()), theme.dim()));
        }
    }
    choice.push(Span::styled("  (s: another)", theme.dim()));
    out.push(Line::from(choice));
    let (it, them) = if n == 1 {
        ("it", "it is")
    } else {
        ("them", "any is")
    };
    let what = match plan.signal {
        Sig::Term | Sig::Int | Sig::Hup => format!(
            "{sig} {} {it} to exit{}: a program may clean up first, or ignore it. If {them} \
             still running after {} s, SIGKILL is offered.",
            match plan.signal {
                Sig::Int => "interrupts",
                Sig::Hup => "hangs up on",
                _ => "asks",
            },
            match plan.signal {
                Sig::Int => " (as Ctrl-C in its terminal)",
                Sig::Hup =>
                    " (as a closed terminal: an editor saves what it can, a daemon may reload instead)",
                _ => "",
            },
            stop::GRACE.as_secs()
        ),
        Sig::Kill => format!(
            "SIGKILL ends {it} at once, with no clean-up: what {} was writing may be left half \
             done.",
            if n == 1 { "it" } else { "they" }
        ),
        Sig::Cont => format!(
            "SIGCONT resumes {it} where {} stopped: {} goes on and lets go of the lock when \
             done. Nothing ends.",
            if n == 1 { "it" } else { "they" },
            if n == 1 { "it" } else { "each" }
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

#[cfg(test)]
mod tests;
