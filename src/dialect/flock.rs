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
//!
//! A kernel-locked file that no dialect claims and no lock pattern names is this dialect's
//! only when it holds nothing but the lock ([`holds_only_a_lock`]): empty, or a short text
//! record. A program locks its data files in the kernel too (an InnoDB tablespace, Aria's
//! control file, a QEMU disk image, etcd's write-ahead log and bolt database, H2's `.mv.db`):
//! those are data, never listed, live or not.

use super::common;
use super::message::Message;
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

/// The longest text a file that holds nothing but a lock may hold: a PID, a host, a time, a
/// few `key: value` lines of a lock record.
const RECORD_MAX: usize = 256;

/// Whether a kernel-locked file of any name holds nothing but the lock, so that its lock is
/// what it is for: an empty file, or a short text record (a PID, `pid host`, a lock
/// library's few lines). A file of binary data, or longer than a lock record, is a program's
/// data that it locks while it works on it (a database's tablespace or log, a disk image):
/// no lock file, whatever kernel locks it carries. A directory or other entry is not data.
pub fn holds_only_a_lock(c: &Candidate<'_>) -> bool {
    if c.kind != EntryKind::File {
        return true;
    }
    c.complete
        && c.content.len() <= RECORD_MAX
        && std::str::from_utf8(c.content).is_ok_and(|t| {
            t.chars()
                .all(|ch| !ch.is_control() || matches!(ch, '\n' | '\r' | '\t'))
        })
}

/// What apt and dpkg print when their locks are held (and their translations). apt names the
/// file; dpkg names the lock, in its administration directory (`$DPKG_ADMINDIR`, or
/// `$DPKG_ROOT/var/lib/dpkg`, as dpkg itself reads them).
const MESSAGES: &[Message] = &[
    Message::en(
        "apt",
        r"Could not get lock (?P<path>/\S+?)(?:\. It is held by process (?P<pid>\d+))?(?:\.|\s|$)",
        &["{path}"],
        "E: Could not get lock /var/lib/dpkg/lock-frontend. It is held by process 4242 (apt)",
    ),
    Message::en(
        "apt",
        r"Unable to acquire the dpkg frontend lock \((?P<path>[^)\n]+)\)",
        &["{path}"],
        "E: Unable to acquire the dpkg frontend lock (/var/lib/dpkg/lock-frontend), is another process using it?",
    ),
    Message::en(
        "apt",
        r"Unable to lock the administration directory \((?P<dir>[^)\n]+)\)",
        &["{dir}/lock"],
        "E: Unable to lock the administration directory (/var/lib/dpkg/), is another process using it?",
    ),
    Message::en(
        "apt",
        r"Unable to lock directory (?P<dir>/\S+)",
        &["{dir}/lock"],
        "E: Unable to lock directory /var/lib/apt/lists/",
    ),
    Message::tr(
        "de",
        "apt",
        r"Sperre (?P<path>/\S+?) konnte nicht erlangt werden\.(?: Sie wird von Prozess (?P<pid>\d+))?",
        &["{path}"],
        "E: Sperre /var/lib/dpkg/lock-frontend konnte nicht erlangt werden. Sie wird von Prozess 4242 (apt) gehalten.",
    ),
    Message::tr(
        "de",
        "apt",
        r"Das Verzeichnis (?P<dir>/\S+) kann nicht gesperrt werden",
        &["{dir}/lock"],
        "E: Das Verzeichnis /var/lib/apt/lists/ kann nicht gesperrt werden.",
    ),
    Message::tr(
        "fr",
        "apt",
        r"Impossible d'obtenir le verrou (?P<path>/\S+?)(?:\.|\s|$)",
        &["{path}"],
        "E: Impossible d'obtenir le verrou /var/lib/dpkg/lock-frontend",
    ),
    Message::tr(
        "fr",
        "apt",
        r"Impossible de verrouiller le répertoire (?P<dir>/\S+)",
        &["{dir}/lock"],
        "E: Impossible de verrouiller le répertoire /var/lib/apt/lists/",
    ),
    Message::tr(
        "es",
        "apt",
        r"No se pudo bloquear el directorio (?P<dir>/\S+)",
        &["{dir}/lock"],
        "E: No se pudo bloquear el directorio /var/lib/apt/lists/",
    ),
    Message::en(
        "dpkg",
        r"dpkg frontend lock (?:was|is) locked by another process(?: with pid (?P<pid>\d+))?",
        &[
            "$DPKG_ADMINDIR/lock-frontend",
            "$DPKG_ROOT/var/lib/dpkg/lock-frontend",
            "/var/lib/dpkg/lock-frontend",
        ],
        "dpkg: error: dpkg frontend lock was locked by another process with pid 4242",
    ),
    Message::en(
        "dpkg",
        r"dpkg status database (?:was|is) locked by another process(?: with pid (?P<pid>\d+))?",
        &[
            "$DPKG_ADMINDIR/lock",
            "$DPKG_ROOT/var/lib/dpkg/lock",
            "/var/lib/dpkg/lock",
        ],
        "dpkg: error: dpkg status database is locked by another process",
    ),
    Message::tr(
        "de",
        "dpkg",
        r"dpkg-Frontend-Sperre war von einem anderen Prozess(?: mit PID (?P<pid>\d+))? gesperrt",
        &[
            "$DPKG_ADMINDIR/lock-frontend",
            "$DPKG_ROOT/var/lib/dpkg/lock-frontend",
            "/var/lib/dpkg/lock-frontend",
        ],
        "dpkg: Fehler: dpkg-Frontend-Sperre war von einem anderen Prozess mit PID 4242 gesperrt",
    ),
    Message::tr(
        "fr",
        "dpkg",
        r"verrouillage de l'interface dpkg a été verrouillé par un autre processus(?: avec le PID (?P<pid>\d+))?",
        &[
            "$DPKG_ADMINDIR/lock-frontend",
            "$DPKG_ROOT/var/lib/dpkg/lock-frontend",
            "/var/lib/dpkg/lock-frontend",
        ],
        "dpkg: erreur: verrouillage de l'interface dpkg a été verrouillé par un autre processus avec le PID 4242",
    ),
];

impl Dialect for Flock {
    fn id(&self) -> DialectId {
        DialectId::FLOCK
    }

    fn about(&self) -> super::About {
        super::About {
            writer: "any program taking a kernel lock (`flock(2)`, POSIX `fcntl`, OFD); dpkg and apt; python-filelock",
            programs: &["dpkg", "apt"],
            found_as: "any file a process holds a kernel lock on now; dpkg's and apt's lock files; empty `*.lock` files and files named `lock`",
            judged_by: "`/proc/locks`: locked, live (with the holders, mode and range); unlocked, free for dpkg and apt files (they lock them in place and never remove them), unknown for an empty `*.lock` of unknown writer (it may be a lock by existence)",
            rules: &[],
            source: None,
        }
    }

    fn patterns(&self) -> &'static [&'static str] {
        PATTERNS
    }

    fn messages(&self) -> &'static [Message] {
        MESSAGES
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
