//! The lock engine: the `locksmith-engine` crate, re-exported whole, so that
//! `locksmith::engine::Lock` and the rest keep their paths.
//!
//! Here [`inspect`] and the `reclaim` functions give the engine's judge the scanner's evidence
//! ([`ScannerWitness`]: the kernel-lock holders `/proc/locks` names, the PID rules across
//! hosts, boots, PID namespaces and containers, the processes that have the file open for
//! writing) instead of the engine's own narrower view, so they agree with a scan of the same
//! lock. A [`Lock`] judges with the engine's own evidence unless it is given this witness
//! ([`Lock::witness`], as `locksmith lock` does).

use std::ffi::OsStr;
use std::os::fd::OwnedFd;
use std::path::Path;
use std::sync::Arc;

pub use crate::dialect::locksmith::ScannerWitness;
pub use locksmith_engine::*;

use crate::verdict::Judgement;

/// The scanner's evidence, as the engine's judge asks for it.
pub fn scanner_witness() -> Arc<dyn Witness> {
    Arc::new(ScannerWitness)
}

/// Judges the lock at `path` now, with the scanner's evidence and the default windows: verdict,
/// evidence and owner. Never modifies anything and never takes a lock.
pub fn inspect(path: &Path) -> Result<Judgement, EngineError> {
    inspect_with(path, StaleWindows::default())
}

/// [`inspect`] with given stale windows.
pub fn inspect_with(
    path: &Path,
    windows: impl Into<StaleWindows>,
) -> Result<Judgement, EngineError> {
    inspect_by(path, windows, scanner_witness())
}

/// Removes the lock at `path` only if it is stale right now (judged with the scanner's
/// evidence). Returns the judgement that allowed the removal.
pub fn reclaim(path: &Path) -> Result<Judgement, EngineError> {
    reclaim_with(path, None, |_, _| Ok(()))
}

/// [`locksmith_engine::reclaim_with`], judged with the scanner's evidence.
pub fn reclaim_with(
    path: &Path,
    expected: Option<Identity>,
    before_unlink: impl FnOnce(&[u8], &Judgement) -> std::io::Result<()>,
) -> Result<Judgement, EngineError> {
    reclaim_with_windows(path, expected, StaleWindows::default(), before_unlink)
}

/// [`reclaim_with`] with given stale windows.
pub fn reclaim_with_windows(
    path: &Path,
    expected: Option<Identity>,
    windows: impl Into<StaleWindows>,
    before_unlink: impl FnOnce(&[u8], &Judgement) -> std::io::Result<()>,
) -> Result<Judgement, EngineError> {
    reclaim_by(path, expected, windows, scanner_witness(), before_unlink)
}

/// [`locksmith_engine::reclaim_at`] (the entry `name` of a directory reached from the scan root
/// without following symlinks), judged with the scanner's evidence.
pub fn reclaim_at(
    dir: OwnedFd,
    name: &OsStr,
    path: &Path,
    expected: Option<Identity>,
    windows: impl Into<StaleWindows>,
    before_unlink: impl FnOnce(&[u8], &Judgement) -> std::io::Result<()>,
) -> Result<Judgement, EngineError> {
    locksmith_engine::reclaim_at(
        dir,
        name,
        path,
        expected,
        windows,
        scanner_witness(),
        before_unlink,
    )
}
