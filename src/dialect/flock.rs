//! `flock`: files whose lock is a kernel lock (`flock(2)`, POSIX `fcntl`, OFD), not their
//! existence — any file some process holds a kernel lock on right now, the well-known ones
//! that exist for that purpose (dpkg's and apt's `lock` files, cargo's `.package-cache` and a
//! build directory's `.cargo-lock`, rustdoc's `.lock` in its output directory), and empty
//! `*.lock` files and files named `lock`.
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
    ".package-cache",
    ".package-cache-mutate",
    ".cargo-lock",
    "*.lock",
    "lock",
];

/// Path suffixes of well-known kernel-lock files (matched whatever their content), and
/// their writers.
const WELL_KNOWN: &[(&str, &str)] = &[
    ("/var/lib/dpkg/lock", "dpkg and apt"),
    ("/var/lib/dpkg/lock-frontend", "dpkg and apt"),
    ("/var/lib/dpkg/triggers/Lock", "dpkg"),
    ("/var/lib/apt/lists/lock", "apt"),
    ("/var/cache/apt/archives/lock", "apt"),
];

/// The writers of a well-known kernel-lock file, if it is one: by its path, or by its name
/// and the directory it locks (cargo's build directory holds `.fingerprint/`; rustdoc's
/// output directory holds `static.files/` or `search-index.js`). Those writers lock the file
/// in place with `flock` or `fcntl` and never remove it.
pub fn well_known(c: &Candidate<'_>, snap: &Snapshot) -> Option<&'static str> {
    let name = c.file_name();
    if name == ".package-cache" || name == ".package-cache-mutate" {
        return Some("cargo (its package cache, with flock)");
    }
    let beside = |sibling: &str| {
        c.path
            .parent()
            .is_some_and(|dir| snap.lstat(&dir.join(sibling)).is_ok())
    };
    if name == ".cargo-lock" && beside(".fingerprint") {
        return Some("cargo (its build directory, with flock)");
    }
    if name == ".lock" && (beside("static.files") || beside("search-index.js")) {
        return Some("rustdoc (its output directory, with fcntl)");
    }
    let path = c.path.as_os_str().as_encoded_bytes();
    WELL_KNOWN
        .iter()
        .find(|(w, _)| path.ends_with(w.as_bytes()))
        .map(|(_, who)| *who)
}

/// Whether the candidate is an empty lock file of the python-filelock kind (or cargo's).
fn empty_lock_file(c: &Candidate<'_>) -> bool {
    let name = c.file_name().as_encoded_bytes();
    c.kind == EntryKind::File
        && c.complete
        && c.content.is_empty()
        && (name.ends_with(b".lock") || name == b"lock" || name == b".cargo-lock")
}

/// Whether its path alone makes it a well-known kernel-lock file (dpkg's, apt's, cargo's
/// package cache), whatever its content.
fn known_by_path(c: &Candidate<'_>) -> bool {
    let name = c.file_name();
    let path = c.path.as_os_str().as_encoded_bytes();
    name == ".package-cache"
        || name == ".package-cache-mutate"
        || WELL_KNOWN.iter().any(|(w, _)| path.ends_with(w.as_bytes()))
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

    fn recognise(&self, c: &Candidate<'_>) -> bool {
        // Kernel-locked files with any name come to this dialect through the scanner (which
        // sees the kernel-lock table); by name and content alone, only these are ours.
        empty_lock_file(c) || (c.kind == EntryKind::File && known_by_path(c))
    }

    fn read(&self, c: &Candidate<'_>, snap: &Snapshot, _windows: &Windows) -> Said {
        // Processes with the file open are shown too (a waiter has it open, unlocked). A
        // kernel lock held on it makes it `live` before this verdict is looked at.
        let openers = snap.openers(c.key());
        let mut j = if let Some(writers) = well_known(c, snap) {
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
        if !openers.is_empty() {
            j.evidence.push(format!(
                "open, without a lock, in {}",
                common::describe_holders(&openers)
            ));
            j.holders = openers;
        }
        if c.fs.network {
            j.evidence.push(format!(
                "on a network file system ({}): a lock held from another machine does not show here",
                c.fs.kind
            ));
        }
        j.into()
    }
}
