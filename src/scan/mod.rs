//! The scanner: walks the configured roots, finds lock candidates by name (and by kernel
//! lock), judges each with its dialect against one evidence snapshot, and streams findings.
//! The scanner never modifies anything.

use std::path::PathBuf;

use crate::dialect::EntryKind;
use crate::probe::FsInfo;
use crate::verdict::Judgement;

/// What identifies the exact file that was judged; reclaim removes a path only while it still
/// names the same file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Identity {
    pub dev: u64,
    pub ino: u64,
    pub size: u64,
    pub mtime_ns: i128,
}

impl Identity {
    pub fn of(meta: &std::fs::Metadata) -> Self {
        use std::os::unix::fs::MetadataExt;
        Identity {
            dev: meta.dev(),
            ino: meta.ino(),
            size: meta.size(),
            mtime_ns: meta.mtime() as i128 * 1_000_000_000 + meta.mtime_nsec() as i128,
        }
    }
}

/// One lock found and judged.
#[derive(Debug, Clone)]
pub struct Finding {
    pub path: PathBuf,
    pub dialect: &'static str,
    pub kind: EntryKind,
    pub size: Option<u64>,
    /// mtime in ms since the epoch.
    pub modified_ms: Option<i64>,
    pub identity: Identity,
    pub fs: FsInfo,
    pub judgement: Judgement,
    /// The bounded content prefix that was judged (for the detail pane).
    pub content: Vec<u8>,
    /// The link text, for symlink locks.
    pub link_target: Option<PathBuf>,
}

/// A per-path problem that did not stop the scan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScanError {
    pub path: PathBuf,
    pub error: String,
}

/// What a running scan reports, in order.
#[derive(Debug, Clone)]
pub enum ScanEvent {
    Progress { entries: u64, locks: u64 },
    Found(Box<Finding>),
    Error(ScanError),
}
