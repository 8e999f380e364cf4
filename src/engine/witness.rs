//! Where the engine gets the evidence for its judge ([`super::judge`]) on an existing lock
//! file: the scanner's evidence snapshot, through the `locksmith` dialect (kernel-lock holders
//! from `/proc/locks`, the PID rules across hosts, boots and PID namespaces, processes with the
//! file open for writing). The engine and the scanner agree by construction.
//!
//! This module is the engine's only link to the rest of the crate: everything else in the
//! engine (record, creation, release, reclaim protocol, heartbeat, file systems, host facts,
//! verdict types) depends on nothing outside it.

use std::fs::Metadata;

use super::StaleWindows;
use super::judge::LockFile;
use super::place::Place;
use super::verdict::{Holder, Judgement};
use crate::dialect::CONTENT_PREFIX;
use crate::dialect::locksmith::SnapEvidence;
use crate::probe::{FileKey, Snapshot};

/// Judges an open lock file with the engine's judge and a fresh evidence snapshot.
pub fn judge(
    place: &Place,
    meta: &Metadata,
    content: &[u8],
    complete: bool,
    windows: &StaleWindows,
) -> Judgement {
    let prefix = &content[..content.len().min(CONTENT_PREFIX)];
    let file = LockFile {
        path: &place.path,
        meta,
        regular: true,
        content: prefix,
        complete: complete && content.len() <= CONTENT_PREFIX,
        fs: &place.fs,
    };
    let snap = Snapshot::take();
    super::judge::judge(&file, &SnapEvidence(&snap), windows)
}

/// The processes holding a kernel lock on the file `meta` describes (`/proc/locks`, read now).
pub fn kernel_holders(meta: &Metadata) -> Vec<Holder> {
    Snapshot::take().kernel_holders(FileKey::of(meta))
}

/// Lists holders as `pid 42 (flock, apt-get)`.
pub fn describe_holders(holders: &[Holder]) -> String {
    crate::dialect::common::describe_holders(holders)
}
