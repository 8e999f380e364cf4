//! What reaches the app and what leaves it: every [`Msg`] (a key, a scan event, re-judged
//! verdicts, a reclaim outcome, a clock tick) and every [`Effect`] the app asks the runtime to
//! carry out (start a scan, a confirmed reclaim, signal a lock's holders, run a program with
//! the UI suspended, quit), with the results the workers send back. Plain data: the workers
//! and the runtime speak only this.

use std::collections::HashMap;
use std::path::PathBuf;

use locksmith::Judgement;
use locksmith::report::waiting::Waiting;
use locksmith::scan::{Finding, ScanEvent};
use ratatui::crossterm::event::{KeyEvent, MouseEvent};

use super::confirm::ConfirmedAction;
use super::rows::FileMeta;
use super::stop;

/// How a scan ended.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScanSummary {
    pub entries: u64,
    pub locks: u64,
    pub elapsed_ms: u64,
    /// Stopped early (a rescan replaced it); rows it did not reach are kept.
    pub cancelled: bool,
    /// The scan could not run at all (no root could be read, say): it found nothing.
    pub failed: Option<String>,
}

/// One lock after re-judging.
#[derive(Debug, Clone)]
pub enum Rejudge {
    Judged(Box<Finding>),
    /// No longer there (nor its directory), or no longer a lock.
    Gone,
    Failed(String),
}

/// What came of reclaiming one lock.
#[derive(Debug, Clone)]
pub struct ReclaimResult {
    pub path: PathBuf,
    pub removed: bool,
    /// The lock (or its directory) was gone already: nothing to reclaim.
    pub gone: bool,
    /// What was done or why not, in a sentence.
    pub message: String,
    /// The judgement at the moment of the attempt, when the lock was not removed.
    pub judgement: Option<Judgement>,
}

/// What came of undoing the last reclaim of this session.
#[derive(Debug, Clone)]
pub struct RestoreResult {
    /// The locks put back, as judged right after (those that could be judged).
    pub findings: Vec<Finding>,
    /// Whether every lock of the undo was put back.
    pub restored: bool,
    /// What was done or why not, in a sentence.
    pub message: String,
}

/// What came of signalling a lock's holders.
#[derive(Debug, Clone)]
pub struct StopResult {
    pub plan: stop::Plan,
    pub sent: stop::Sent,
}

/// A program the UI runs in the terminal, suspended meanwhile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Run {
    /// The action its dialect offers for a lock (recovering its unsaved changes in `editor`).
    Recover { swap: PathBuf, editor: &'static str },
    /// `$SHELL` in a lock's directory.
    Shell { dir: PathBuf },
}

/// What came of running a program.
#[derive(Debug, Clone)]
pub struct RunResult {
    /// The lock it was about.
    pub path: PathBuf,
    pub ok: bool,
    /// What happened, in a sentence.
    pub message: String,
    /// It was not run, for this reason (a swap file this user may not recover): a pop-up says
    /// why.
    pub refused: Option<String>,
}

/// Everything that can change the app.
#[derive(Debug)]
pub enum Msg {
    Key(KeyEvent),
    /// Text pasted into the terminal (bracketed paste).
    Paste(String),
    Mouse(MouseEvent),
    /// The terminal's size (at start and on every change).
    Resize {
        width: u16,
        height: u16,
    },
    Scan {
        generation: u64,
        event: ScanEvent,
    },
    ScanDone {
        generation: u64,
        summary: ScanSummary,
    },
    Rejudged(Vec<(PathBuf, Rejudge)>),
    /// The owners and modes of lock files.
    Files(Vec<(PathBuf, FileMeta)>),
    Reclaimed(Vec<ReclaimResult>),
    /// Who waits for the listed locks, and their holders' state (each re-judge round).
    /// Who waits for the locks a re-judge round judged (`judged`; a lock of those missing
    /// from `waiting` has no waiter now).
    Waiting {
        judged: Vec<PathBuf>,
        waiting: HashMap<PathBuf, Waiting>,
    },
    /// Which locks of the open reclaim dialog this user cannot remove (`None`: removable).
    Checked(Vec<(PathBuf, Option<String>)>),
    /// What the UI reclaimed last (what `u` would put back), or why there is nothing to
    /// undo.
    UndoPlanned(Result<locksmith::reclaim::Plan, String>),
    /// The journal, oldest line first, for the journal view (or why it cannot be read).
    JournalRead(Result<Vec<locksmith::reclaim::Entry>, String>),
    Restored(RestoreResult),
    /// Who `x` would signal, or why nobody.
    StopPlanned(Result<stop::Plan, String>),
    Stopped(StopResult),
    /// A program run with the UI suspended has ended.
    Ran(RunResult),
    /// These hosts are being asked about their foreign locks (`--ask-hosts`).
    Asking(Vec<String>),
    /// They answered (or `failed` of them could not); the locks were judged again.
    Asked {
        hosts: Vec<String>,
        failed: usize,
    },
    Tick {
        now_ms: i64,
    },
}

/// What the app asks the runtime to do.
#[derive(Debug)]
pub enum Effect {
    /// Start a scan with this generation (cancelling any running one).
    Scan {
        generation: u64,
    },
    /// Carry out a confirmed reclaim, off the UI thread.
    Reclaim(ConfirmedAction),
    /// Ask which of these locks this user cannot remove (for the dialog just opened).
    Check(Vec<Finding>),
    /// Find what the UI reclaimed last, to ask before putting it back.
    PlanUndo,
    /// Read the journal, for the journal view.
    ReadJournal,
    /// Carry out a confirmed undo, off the UI thread.
    Restore(ConfirmedAction),
    /// Find out whom `x` would signal for this lock, off the UI thread.
    PlanStop(Box<Finding>),
    /// Signal the confirmed processes, off the UI thread.
    Stop(ConfirmedAction),
    /// Judge these locks again now.
    Rejudge(Vec<Finding>),
    /// Run a program in the terminal, the UI suspended until it ends.
    Run(Run, Box<Finding>),
    /// Put these bytes on the clipboard (OSC 52): a form of a path that is safe to paste
    /// (see [`super::clipboard`]).
    Copy(Vec<u8>),
    Quit,
}
