//! The lock engine: the `locksmith-engine` crate, re-exported whole, so that
//! `locksmith::engine::Lock` and the rest keep their paths.
//!
//! One difference: here a [`Lock`] judges with the scanner's evidence by default
//! ([`ScannerWitness`]: the kernel-lock holders `/proc/locks` names, the PID rules across
//! hosts, boots, PID namespaces and containers, the processes that have the file open for
//! writing) instead of the engine's own narrower view ([`Direct`]), so that acquiring,
//! [`inspect`](LockWith::inspect) and the `reclaim` methods agree with a scan of the same lock.
//! `locksmith_engine::Lock` (the crate alone) judges with [`Direct`]; either takes another
//! witness through [`LockWith::witness`].

use std::sync::Arc;

pub use crate::judge::ScannerWitness;
pub use locksmith_engine::*;

/// A lock judged with the scanner's evidence unless given another witness.
pub type Lock = LockWith<ScannerWitness>;

impl DefaultWitness for ScannerWitness {
    fn witness() -> Arc<dyn Witness> {
        Arc::new(ScannerWitness)
    }
}
