//! What a component asks for beyond itself: a [`Request`] put on the app's [`Queue`] (a
//! status message, a dialog, a rescan, a program to run, ...), which the app carries out once
//! the component is done with the event it was handling, in the order asked. Components never
//! reach the runtime, open a pop-up or touch another component's state themselves: what they
//! want goes through here.
//!
//! Destructive actions take two steps through the queue (gitui's `ConfirmAction` /
//! `ConfirmedAction`): a key asks [`Request::Confirm`], which opens the action's dialog
//! (defaulting to *No*); only the dialog's *Yes* asks [`Request::Confirmed`], with a
//! [`ConfirmedAction`] that only a dialog can build (see `confirm`), and only that is carried
//! out.

use std::collections::VecDeque;
use std::path::PathBuf;

use locksmith::scan::Finding;

use super::confirm::{ConfirmAction, ConfirmedAction};
use super::msg::Effect;

/// How a status message reads: information, a warning, an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Info,
    Warn,
    Error,
}

/// What the status bar is to say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Said {
    /// A message; it goes after a while.
    Message(Level, String),
    /// A message about one lock: it goes when the selection leaves that lock, or after a while.
    About(Level, String, PathBuf),
    /// A message that stays until replaced (what it reports is still going on).
    UntilDone(String),
    /// No message.
    Nothing,
}

/// What a component asks the app for.
#[derive(Debug)]
pub enum Request {
    /// Something for the status bar.
    Say(Said),
    /// Open the help.
    Help,
    /// Open the why prompt, with this text in it (pasted into the table), or empty.
    Why(String),
    /// Open the journal view of these lines (the whole journal, oldest first).
    Journal(Vec<locksmith::reclaim::Entry>),
    /// Say in a pop-up why the swap file at `swap` was not recovered.
    NotRecovered { swap: PathBuf, why: String },
    /// Ask the user before doing this: open its dialog.
    Confirm(ConfirmAction),
    /// The user said yes: carry it out.
    Confirmed(ConfirmedAction),
    /// Put back the reclaims picked in the journal view, after the undo dialog's yes (unless
    /// a reclaim or an undo is running, or the UI is read-only).
    Undo(locksmith::reclaim::Plan),
    /// Select the lock this error message is about.
    FindMessage(String),
    /// Scan the roots again from scratch.
    Rescan,
    /// Find out whom `x` would signal for this lock (the app then waits for the answer).
    PlanStop(Box<Finding>),
    /// Hand this effect to the runtime as it is (copy a path, run a program, read the
    /// journal, judge a lock again, ...).
    Do(Effect),
}

/// The requests not carried out yet, first asked first.
#[derive(Debug, Default)]
pub struct Queue(VecDeque<Request>);

impl Queue {
    pub fn push(&mut self, r: Request) {
        self.0.push_back(r);
    }

    pub fn pop(&mut self) -> Option<Request> {
        self.0.pop_front()
    }

    /// A status message.
    pub fn say(&mut self, level: Level, text: impl Into<String>) {
        self.push(Request::Say(Said::Message(level, text.into())));
    }

    /// A status message about the lock at `path`.
    pub fn say_about(&mut self, level: Level, text: impl Into<String>, path: &std::path::Path) {
        self.push(Request::Say(Said::About(
            level,
            text.into(),
            path.to_path_buf(),
        )));
    }
}
