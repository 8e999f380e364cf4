//! The lock engine (the `locksmith-engine` crate), as locksmith uses it: [`lock`] is a
//! [`Lock`] that judges a lock in its way with the scanner's evidence ([`ScannerWitness`]: the
//! kernel-lock holders `/proc/locks` names, the PID rules across hosts, boots, PID namespaces
//! and containers, the processes that have the file open for writing) instead of the engine's
//! own narrower view, so that acquiring, [`inspect`](Lock::inspect) and the `reclaim` methods
//! agree with a scan of the same lock.
//!
//! The witness judges an existing record as a scan does, through the `locksmith` dialect's claims
//! and the judge's rules, with a fresh evidence snapshot for every judgement: so a scan and the
//! engine cannot disagree about a record, and the engine's `stale` names one of the same rules.
//! It converts the scanner's judgement into the engine's (what the engine acts on) and attaches
//! the scanner's whole, which [`crate::judge::engine_judgement`] takes back: a reclaim through
//! the engine journals the proofs with their facts, the holders and the process.
//!
//! (`Lock` itself is not re-exported here: `locksmith_engine::Lock::new` judges with the
//! engine's own evidence, and a program that links locksmith calls [`lock`].)

use std::path::PathBuf;
use std::sync::Arc;

use crate::dialect::{Candidate, Dialect, EntryKind, Windows};
use crate::judge::Judgement;
use crate::probe::{FileKey, Snapshot, Stat};
use crate::verdict::describe_holders;
use locksmith_engine::Lock;
pub use locksmith_engine::{EngineError, ErrorKind, LockGuard};
use locksmith_engine::{LockFile, StaleWindows, Witness};

/// A lock at `path` judged with the scanner's evidence (otherwise as [`Lock::new`]).
pub fn lock(path: impl Into<PathBuf>) -> Lock {
    Lock::new(path).witness(Arc::new(ScannerWitness))
}

/// See the module docs.
#[derive(Debug, Clone, Copy, Default)]
pub struct ScannerWitness;

impl ScannerWitness {
    /// Judges an engine record as a scan does, with a fresh snapshot: the scanner's judgement
    /// (with what only the scanner keeps: a claim to ask another host about).
    pub fn judge_record(&self, file: &LockFile<'_>, windows: &StaleWindows) -> Judgement {
        let snap = Snapshot::take();
        let meta = Stat::from(file.metadata());
        let fs = snap.fs_of(file.path(), &meta);
        let cand = Candidate {
            path: file.path(),
            meta: &meta,
            kind: EntryKind::of(&meta),
            content: file.content(),
            complete: file.complete(),
            link_target: None,
            fs: &fs,
        };
        let windows = Windows {
            heartbeat_secs: windows.heartbeat.as_secs(),
            ..Windows::default()
        };
        crate::dialect::locksmith::Locksmith.judge(&cand, &snap, &windows)
    }
}

impl Witness for ScannerWitness {
    fn judge(&self, file: &LockFile<'_>, windows: &StaleWindows) -> locksmith_engine::Judgement {
        self.judge_record(file, windows).into_engine()
    }

    fn kernel_lock_holders(&self, file: &LockFile<'_>) -> Option<String> {
        let holders = Snapshot::take().kernel_holders(FileKey::of(&Stat::from(file.metadata())));
        (!holders.is_empty()).then(|| format!("{} (/proc/locks)", describe_holders(&holders)))
    }
}
