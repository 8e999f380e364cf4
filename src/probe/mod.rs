//! Probes of the host, its processes, file systems and kernel locks, and the evidence
//! [`Snapshot`] that bundles them for one scan. The engine, the dialects and the scanner all
//! read the machine through this module only.

pub mod around;
pub mod bounds;
pub mod clock;
pub mod containers;
pub mod evidence;
pub mod fs;
pub mod host;
pub mod identity;
pub mod kernel_locks;
pub mod mask;
pub mod open_files;
pub mod places;
pub mod process;
pub mod reach;
pub mod shares;
pub mod snapshot;
pub mod started;
pub mod stat;
pub mod stores;
pub mod waiters;

pub use containers::{ContainerId, Inventory};
pub use evidence::Evidence;
pub use fs::FsInfo;
pub use host::HostFacts;
pub use identity::Identity;
pub use kernel_locks::{FileKey, KernelLocks};
pub use process::{PidState, ProcFacts};
pub use snapshot::{ProcSummary, Snapshot};
pub use stat::Stat;

/// Seconds since the epoch as RFC 3339 (UTC).
pub fn rfc3339(secs: i64) -> Option<String> {
    jiff::Timestamp::from_second(secs)
        .ok()
        .map(|t| t.to_string())
}

/// Milliseconds since the epoch of a file's mtime.
pub fn mtime_ms(meta: &Stat) -> i64 {
    meta.mtime_ms()
}
