//! Destructive actions go through a queue of two steps: a key produces a [`ConfirmAction`],
//! which opens a [`ConfirmDialog`] (defaulting to *No*); only the dialog turns it into a
//! [`ConfirmedAction`], and only a `ConfirmedAction` is ever carried out. Nothing outside this
//! module can build a `ConfirmedAction`.

use locksmith::scan::Finding;

use super::stop;

/// An action that needs the user's yes.
#[derive(Debug, Clone)]
pub enum ConfirmAction {
    /// Remove stale locks (each re-judged at the moment of removal). `kept` are stale locks
    /// left out on purpose (vim swaps holding unsaved changes, when reclaiming all), listed in
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
}

impl ConfirmAction {
    /// The locks that would be removed.
    pub fn targets(&self) -> &[Finding] {
        match self {
            ConfirmAction::Reclaim { findings, .. } => findings,
            ConfirmAction::Force(f) => std::slice::from_ref(f),
            ConfirmAction::Signal(_) => &[],
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

    /// Whether the user agreed to remove a lock that is not proven stale.
    pub fn forced(&self) -> bool {
        matches!(self.0, ConfirmAction::Force(_))
    }

    /// Whether the user saw (and accepted) the unsaved-changes warning of a vim swap: true only
    /// when a lock shown in the dialog held unsaved changes.
    pub fn include_unsaved(&self) -> bool {
        self.findings()
            .iter()
            .any(|f| f.judgement.unsaved_changes == Some(true))
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
}

impl ConfirmDialog {
    /// A dialog for `action`, with *No* highlighted.
    pub fn new(action: ConfirmAction) -> Self {
        ConfirmDialog {
            action,
            highlight: Choice::No,
            scroll: 0,
        }
    }

    /// Highlights a button (`←` Yes, `→` No: no wrapping around).
    pub fn highlight(&mut self, choice: Choice) {
        self.highlight = choice;
    }

    pub fn toggle(&mut self) {
        self.highlight = match self.highlight {
            Choice::Yes => Choice::No,
            Choice::No => Choice::Yes,
        };
    }

    /// `y`: confirmed whatever is highlighted.
    pub fn yes(self) -> ConfirmedAction {
        ConfirmedAction(self.action)
    }

    /// `Enter`: the highlighted choice.
    pub fn choose(self) -> Option<ConfirmedAction> {
        match self.highlight {
            Choice::Yes => Some(self.yes()),
            Choice::No => None,
        }
    }
}
