//! `flock`: files whose lock is a kernel lock (`flock(2)`, POSIX `fcntl`, OFD), not their
//! existence — any file some process holds a kernel lock on right now, dpkg's and apt's
//! `lock` files (the kernel-lock files of other well-known tools are `tool-flock`'s), and
//! empty `*.lock` files and files named `lock`.
//!
//! Verdict from `/proc/locks`: locked → `live` with the holders. Unlocked, a well-known
//! kernel-lock file is `free`: it must never be deleted, since processes waiting on it would be
//! split across two inodes. An unlocked empty `*.lock` of unknown writer is `unknown`: it may be
//! a kernel-lock file (python-filelock's `FileLock`, `flock(1)`) or a lock by existence
//! (`O_EXCL` writers, older `SoftFileLock`), which is exactly what blocks its program; nothing
//! says which. `free` needs evidence that the file's writers use kernel locks.

use super::common;
use super::{Candidate, Dialect, DialectId, EntryKind, Windows};
use crate::judge::{Judgement, Said};
use crate::probe::Snapshot;

pub struct Flock;

const PATTERNS: &[&str] = &[
    "**/var/lib/dpkg/lock",
    "**/var/lib/dpkg/lock-frontend",
    "**/var/lib/dpkg/triggers/Lock",
    "**/var/lib/apt/lists/lock",
    "**/var/cache/apt/archives/lock",
    "*.lock",
    "lock",
];

/// Path suffixes of well-known kernel-lock files (matched whatever their content), and
/// their writers, which lock them in place with `fcntl` and never remove them.
const WELL_KNOWN: &[(&str, &str)] = &[
    ("/var/lib/dpkg/lock", "dpkg and apt"),
    ("/var/lib/dpkg/lock-frontend", "dpkg and apt"),
    ("/var/lib/dpkg/triggers/Lock", "dpkg"),
    ("/var/lib/apt/lists/lock", "apt"),
    ("/var/cache/apt/archives/lock", "apt"),
];

/// The writers of a well-known kernel-lock file, if it is one.
fn well_known(c: &Candidate<'_>) -> Option<&'static str> {
    let path = c.path.as_os_str().as_encoded_bytes();
    WELL_KNOWN
        .iter()
        .find(|(w, _)| path.ends_with(w.as_bytes()))
        .map(|(_, who)| *who)
}

/// Whether the candidate is an empty lock file of the python-filelock kind.
fn empty_lock_file(c: &Candidate<'_>) -> bool {
    let name = c.file_name().as_encoded_bytes();
    c.kind == EntryKind::File
        && c.complete
        && c.content.is_empty()
        && (name.ends_with(b".lock") || name == b"lock")
}

impl Dialect for Flock {
    fn id(&self) -> DialectId {
        DialectId::FLOCK
    }

    fn patterns(&self) -> &'static [&'static str] {
        PATTERNS
    }

    fn any_name(&self) -> bool {
        true
    }

    fn recognise(&self, c: &Candidate<'_>, _snap: &Snapshot) -> bool {
        // Kernel-locked files with any name come to this dialect through the scanner (which
        // sees the kernel-lock table); by name and content alone, only these are ours.
        empty_lock_file(c) || (c.kind == EntryKind::File && well_known(c).is_some())
    }

    fn read(&self, c: &Candidate<'_>, snap: &Snapshot, _windows: &Windows) -> Said {
        // A kernel lock held on it makes it `live` before this verdict is looked at.
        let j = if let Some(writers) = well_known(c) {
            Judgement::free(
                "no process holds a kernel lock on it (/proc/locks): the file is harmless and must stay, since programs lock it in place",
            )
            .because(format!(
                "its writer, {writers}, locks it with a kernel lock and never removes it"
            ))
        } else {
            Judgement::unknown(
                "no process holds a kernel lock on it (/proc/locks), but nothing says its writer uses kernel locks",
            )
            .because(
                "an empty lock file is either a kernel-lock file (harmless, must stay) or a lock by existence (O_EXCL writers, older SoftFileLock), which blocks its program until removed: its owner cannot be told",
            )
        };
        unlocked(j, c, snap).into()
    }
}

/// A kernel-lock file nobody locks, as `j` judges it, with who has it open (a waiter has it
/// open, unlocked) and, on a network file system, that a lock held from another machine does
/// not show here.
pub fn unlocked(mut j: Judgement, c: &Candidate<'_>, snap: &Snapshot) -> Judgement {
    let openers = snap.openers(c.key());
    if !openers.is_empty() {
        j.evidence.push(format!(
            "open, without a lock, in {}",
            common::describe_holders(&openers)
        ));
        j.holders = openers;
    }
    if c.fs.network {
        j.evidence.push(format!(
            "{}: a lock held from another machine does not show here",
            c.fs.reached_from_afar()
        ));
    }
    j
}
