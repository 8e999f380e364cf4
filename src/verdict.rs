//! Verdicts and the evidence that backs them: the engine's types (from [`locksmith_engine`]),
//! which the scanner, the dialects and the reports share, and what only the scanner uses
//! ([`RemoteClaim`]). The scanner's judgement itself is [`crate::judge::Judgement`]: only the
//! judge can make it `stale`.

pub use locksmith_engine::{
    ByteRange, ContainerId, ContainerInfo, Holder, HolderHow, LockMode, Owner, ProcessInfo, Proof,
    Rule, Verdict, describe_holders,
};

/// What a lock claims about an owner on another host, for asking that host (an owner
/// on another host is `foreign` here; only that host can tell whether the PID lives).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RemoteClaim {
    /// The host name the lock names.
    pub host: String,
    pub pid: i64,
    /// The boot id the lock names (engine records only).
    pub boot_id: Option<String>,
    /// The owner's PID namespace inode, if the lock names it.
    pub pid_ns: Option<u64>,
    /// When the lock was written (ms since the epoch, by the file's clock).
    pub written_ms: Option<i64>,
    /// The owner's exact start time in clock ticks since its host booted (engine records).
    pub start_ticks: Option<u64>,
    /// Program names the owner must have; empty accepts any.
    pub expect: Vec<String>,
}
