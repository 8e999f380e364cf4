//! The lock engine (the `locksmith-engine` crate), as locksmith uses it: [`lock`] is a
//! [`Lock`] that judges a lock in its way with the scanner's evidence ([`ScannerWitness`]: the
//! kernel-lock holders `/proc/locks` names, the PID rules across hosts, boots, PID namespaces
//! and containers, the processes that have the file open for writing) instead of the engine's
//! own narrower view ([`locksmith_engine::Direct`]), so that acquiring,
//! [`inspect`](Lock::inspect) and the `reclaim` methods agree with a scan of the same lock.
//! (`Lock` itself is not re-exported here: `locksmith_engine::Lock::new` judges with
//! `Direct`, and a program that links locksmith calls [`lock`].)

use std::path::PathBuf;
use std::sync::Arc;

pub use crate::judge::ScannerWitness;
use locksmith_engine::Lock;
pub use locksmith_engine::{EngineError, ErrorKind, LockGuard};

/// A lock at `path` judged with the scanner's evidence (otherwise as [`Lock::new`]).
pub fn lock(path: impl Into<PathBuf>) -> Lock {
    Lock::new(path).witness(Arc::new(ScannerWitness))
}
