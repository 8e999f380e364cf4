//! Destructive actions go through a queue of two steps: a key produces a [`ConfirmAction`],
//! which opens a [`ConfirmDialog`] (defaulting to *No*); only the dialog turns it into a
//! [`ConfirmedAction`], and only a `ConfirmedAction` is ever carried out. Nothing outside this
//! module can build a `ConfirmedAction`.
//!
//! A reclaim's dialog is told, soon after it opens, which of its locks this user cannot remove
//! ([`ConfirmDialog::checked`], from `reclaim::removal_denied`, the check every reclaim makes
//! before it tries): those are left out of the action and shown with the reason, and a dialog
//! left with nothing it could do offers no *Yes*.

use std::path::PathBuf;

use locksmith::reclaim::Plan;
use locksmith::scan::Finding;

use super::stop;
use super::text::plural;

/// An action that needs the user's yes.
#[derive(Debug, Clone)]
pub enum ConfirmAction {
    /// Remove stale locks (each re-judged at the moment of removal). `kept` are stale locks
    /// left out on purpose (locks holding unsaved changes, when reclaiming all), listed in
    /// the dialog so the user knows why.
    Reclaim {
        findings: Vec<Finding>,
        kept: Vec<Finding>,
        /// Marked locks that are not stale: left alone, listed so the user knows.
        skipped: Vec<Finding>,
    },
    /// Remove one lock that is not proven stale (`unknown` or `foreign`): a person's decision.
    Force(Box<Finding>),
    /// Signal the processes that hold a lock.
    Signal(stop::Plan),
    /// Put back reclaimed locks from their copies.
    Restore(Undo),
}

/// What an undo puts back, and how it was chosen.
#[derive(Debug, Clone)]
pub struct Undo {
    pub plan: Plan,
    /// Picked in the journal view (any run's); else `u`'s, the UI's last reclaim.
    pub picked: bool,
}

impl Undo {
    /// What the UI reclaimed last, as `u` found it.
    pub fn last(plan: Plan) -> Undo {
        Undo {
            plan,
            picked: false,
        }
    }

    /// What was picked in the journal view.
    pub fn picked(plan: Plan) -> Undo {
        Undo { plan, picked: true }
    }
}

impl ConfirmAction {
    /// Whether it removes locks (a reclaim, or a forced removal): its dialog is told which of
    /// them this user cannot remove.
    pub fn removes(&self) -> bool {
        matches!(
            self,
            ConfirmAction::Reclaim { .. } | ConfirmAction::Force(_)
        )
    }

    /// The locks that would be removed (none for an undo).
    pub fn targets(&self) -> &[Finding] {
        match self {
            ConfirmAction::Reclaim { findings, .. } => findings,
            ConfirmAction::Force(f) => std::slice::from_ref(f),
            ConfirmAction::Signal(_) | ConfirmAction::Restore(_) => &[],
        }
    }
}

/// An action the user confirmed. Built only by [`ConfirmDialog`].
#[derive(Debug, Clone)]
pub struct ConfirmedAction(ConfirmAction);

impl ConfirmedAction {
    pub fn action(&self) -> &ConfirmAction {
        &self.0
    }

    pub fn findings(&self) -> &[Finding] {
        self.0.targets()
    }

    /// The processes to signal, when that is what was confirmed.
    pub fn signal(&self) -> Option<&stop::Plan> {
        match &self.0 {
            ConfirmAction::Signal(p) => Some(p),
            _ => None,
        }
    }

    /// The reclaims an undo puts back.
    pub fn restore_plan(&self) -> Option<&Plan> {
        match &self.0 {
            ConfirmAction::Restore(u) => Some(&u.plan),
            _ => None,
        }
    }

    /// What the status bar says while it is carried out.
    pub fn underway(&self) -> String {
        match &self.0 {
            ConfirmAction::Signal(plan) => {
                let n = plan.targets.len();
                let es = if n == 1 { "" } else { "es" };
                format!("sending {} to {n} process{es}…", plan.signal.name())
            }
            ConfirmAction::Restore(u) => {
                let n = u.plan.entries.len();
                format!("putting back {n} lock{}…", plural(n))
            }
            ConfirmAction::Reclaim { .. } | ConfirmAction::Force(_) => {
                let n = self.findings().len();
                format!("reclaiming {n} lock{}…", plural(n))
            }
        }
    }

    /// Whether the user agreed to remove a lock that is not proven stale.
    pub fn forced(&self) -> bool {
        matches!(self.0, ConfirmAction::Force(_))
    }

    /// Whether the user saw (and accepted) the warning of a lock a flag keeps (unsaved
    /// changes): true only when a lock shown in the dialog has such a flag.
    pub fn include_unsaved(&self) -> bool {
        self.findings()
            .iter()
            .any(|f| f.judgement.keeping().is_some())
    }
}

/// The two buttons.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Choice {
    Yes,
    No,
}

/// The confirm popup's state.
#[derive(Debug, Clone)]
pub struct ConfirmDialog {
    pub action: ConfirmAction,
    pub highlight: Choice,
    /// Lines the dialog's text is scrolled down.
    pub scroll: u16,
    /// The locks this user cannot remove, with why (left out of the action); `None` until
    /// the check is back (an undo or a signal needs none).
    pub denied: Option<Vec<(PathBuf, String)>>,
}

impl ConfirmDialog {
    /// A dialog for `action`, with *No* highlighted.
    pub fn new(action: ConfirmAction) -> Self {
        let denied =
            matches!(action, ConfirmAction::Restore(_) | ConfirmAction::Signal(_)).then(Vec::new);
        ConfirmDialog {
            action,
            highlight: Choice::No,
            scroll: 0,
            denied,
        }
    }

    /// Takes the answer of the check of this dialog's locks (`None`: removable, else why
    /// not): the locks this user cannot remove leave the action. An answer about other locks
    /// (a dialog opened since) is ignored.
    pub fn checked(&mut self, answers: Vec<(PathBuf, Option<String>)>) {
        let asked: Vec<&PathBuf> = answers.iter().map(|(p, _)| p).collect();
        let targets: Vec<&PathBuf> = self.action.targets().iter().map(|f| &f.path).collect();
        if self.denied.is_some() || asked != targets {
            return;
        }
        let denied: Vec<(PathBuf, String)> = answers
            .into_iter()
            .filter_map(|(p, why)| why.map(|w| (p, w)))
            .collect();
        if let ConfirmAction::Reclaim { findings, .. } = &mut self.action {
            findings.retain(|f| !denied.iter().any(|(p, _)| *p == f.path));
        }
        self.denied = Some(denied);
        if !self.offers_yes() {
            self.highlight = Choice::No;
        }
    }

    /// Whether there is anything to say *Yes* to: not when this user can remove none of the
    /// locks.
    pub fn offers_yes(&self) -> bool {
        let denied = |f: &Finding| {
            self.denied
                .as_ref()
                .is_some_and(|d| d.iter().any(|(p, _)| *p == f.path))
        };
        match &self.action {
            ConfirmAction::Reclaim { findings, .. } => !findings.is_empty(),
            ConfirmAction::Force(f) => !denied(f),
            ConfirmAction::Restore(u) => !u.plan.entries.is_empty(),
            ConfirmAction::Signal(p) => !p.targets.is_empty(),
        }
    }

    /// Highlights a button (`←` Yes, `→` No: no wrapping around).
    pub fn highlight(&mut self, choice: Choice) {
        if self.offers_yes() {
            self.highlight = choice;
        }
    }

    pub fn toggle(&mut self) {
        self.highlight = match self.highlight {
            Choice::No if self.offers_yes() => Choice::Yes,
            _ => Choice::No,
        };
    }

    /// `y`: confirmed whatever is highlighted (nothing, when there is nothing to confirm).
    pub fn yes(self) -> Option<ConfirmedAction> {
        self.offers_yes().then_some(ConfirmedAction(self.action))
    }

    /// `Enter`: the highlighted choice.
    pub fn choose(self) -> Option<ConfirmedAction> {
        match self.highlight {
            Choice::Yes => self.yes(),
            Choice::No => None,
        }
    }
}
