//! `py-lockfile`: the locks of Python's `lockfile` package (`lockfile.LockFile`, used by
//! python-daemon, older pip, Ansible collections...), in its three styles that name their
//! owner in a file name: `LinkLockFile` (the default where `os.link` exists),
//! `SymlinkLockFile` and `MkdirLockFile`. (`PIDLockFile` writes a decimal PID: `pidfile`.)
//!
//! Format, from the package's `lockfile/__init__.py` (`LockBase.__init__`): the lock of
//! `PATH` is `PATH.lock`; the holder's unique name is `HOST` + `TNAME` + `.` + `PID` +
//! `hash(PATH)` beside it, where `TNAME` is `-` and the thread ident in hex (`ident &
//! 0xffffffff`), or nothing when not threaded, and the path's hash is a signed 64-bit
//! integer (randomised per process).
//! - `linklockfile.py`: an empty file of the unique name, hard-linked to `PATH.lock`
//!   (`os.link`; held while both names are one inode, `st_nlink == 2`).
//! - `symlinklockfile.py`: `PATH.lock` a symlink whose text is the unique name.
//! - `mkdirlockfile.py`: `PATH.lock/` a directory holding one empty file `HOST.TNAME PID`
//!   (`"%s.%s%s" % (hostname, tname, pid)`).
//!
//! `release` removes both names; a killed holder leaves them. The package never takes a lock
//! over: `acquire` waits forever (or raises `LockTimeout` / `AlreadyLocked`), and only
//! `break_lock` (a person's decision) removes it.
//!
//! The PID runs into the digits beside it (the hash, or the thread ident's hex), so the name
//! can be read as a few PIDs: every reading that is a possible PID (1 to this host's
//! `pid_max` for a lock of this host, to 4194304 for another's; no leading zero) is an owner the lock may have, and the lock is `stale` only when every one is proven
//! gone, `live` when one is a Python that started before it. The host is this one only when
//! the name begins with this host's name followed by the package's separators; any other is
//! another host (`foreign`).

use std::path::Path;

use super::message::Message;
use super::{Candidate, Dialect, DialectId, EntryKind, Windows, common};
use crate::judge::{Claim, OwnerClaim, Said, When, Writers};
use crate::probe::Snapshot;
use crate::verdict::Owner;

pub struct PyLockfile;

const PATTERNS: &[&str] = &["*.lock"];

const PYTHONS: &[&str] = &["python*", "pypy*"];

/// What the package raises when another holds the lock of `PATH` (`PATH.lock`):
/// `linklockfile.py` and `mkdirlockfile.py`, `acquire` with a timeout (`LockTimeout`) or none
/// left (`AlreadyLocked`).
const MESSAGES: &[Message] = &[
    Message::en(
        "Python lockfile",
        r"Timeout waiting to acquire lock for (?P<file>/\S+)",
        &["{file}.lock"],
        "lockfile.LockTimeout: Timeout waiting to acquire lock for /srv/app/state",
    ),
    Message::en(
        "Python lockfile",
        r"AlreadyLocked: (?P<file>/\S+) is already locked",
        &["{file}.lock"],
        "lockfile.AlreadyLocked: /srv/app/state is already locked",
    ),
];

/// The largest PID a Linux kernel hands out (`PID_MAX_LIMIT` on 64-bit).
const PID_LIMIT: i64 = 4_194_304;

/// A `hash()` of CPython has at most 19 decimal digits (a signed 64-bit integer).
const HASH_DIGITS: usize = 19;

/// How many entries of the lock's directory are looked at for its unique name.
const DIR_MAX: usize = 4096;

/// Which style wrote the lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Style {
    Link,
    Symlink,
    Mkdir,
}

impl Style {
    fn class(self) -> &'static str {
        match self {
            Style::Link => "LinkLockFile",
            Style::Symlink => "SymlinkLockFile",
            Style::Mkdir => "MkdirLockFile",
        }
    }
}

/// What a unique name says.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Unique {
    /// Whether the name begins with this host's name.
    ours: bool,
    /// The host as the name gives it (this host's, or the part before the PID's separator).
    host: String,
    /// Every PID the name can be read as.
    pids: Vec<i64>,
}

fn pid_of(digits: &str) -> Option<i64> {
    if digits.is_empty() || digits.len() > 7 || digits.starts_with('0') {
        return None;
    }
    digits.parse().ok().filter(|p| (1..=PID_LIMIT).contains(p))
}

/// Keeps the readings a process of this host can have (at most its `pid_max`), when the lock
/// is this host's.
fn on_this_host(mut u: Unique, pid_max: i64) -> Option<Unique> {
    if u.ours {
        u.pids.retain(|&p| p <= pid_max);
    }
    (!u.pids.is_empty()).then_some(u)
}

fn is_hex(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 8
        && s.bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
}

/// The PIDs `tail` (the digits after `.`: PID then the path's hash) can be read as.
fn pids_before_hash(tail: &str) -> Vec<i64> {
    // A negative hash: `PID-HASH`.
    if let Some((pid, hash)) = tail.split_once('-') {
        return if hash.bytes().all(|b| b.is_ascii_digit()) && !hash.is_empty() {
            pid_of(pid).into_iter().collect()
        } else {
            Vec::new()
        };
    }
    if !tail.bytes().all(|b| b.is_ascii_digit()) {
        return Vec::new();
    }
    let shortest = tail.len().saturating_sub(HASH_DIGITS).max(1);
    (shortest..tail.len())
        .filter_map(|n| pid_of(&tail[..n]))
        .collect()
}

/// The PIDs `tail` (`-HEX` then the PID, or the PID alone) can be read as.
fn pids_after_ident(tail: &str) -> Vec<i64> {
    match tail.strip_prefix('-') {
        None => pid_of(tail).into_iter().collect(),
        Some(rest) => (1..rest.len().min(9))
            .filter(|&k| is_hex(&rest[..k]))
            .filter_map(|k| pid_of(&rest[k..]))
            .collect(),
    }
}

/// Reads a `LinkLockFile` / `SymlinkLockFile` unique name: `HOST[-HEX].PIDHASH`.
fn parse_link_name(name: &str, hostname: &str) -> Option<Unique> {
    let (head, tail) = name.rsplit_once('.')?;
    let pids = pids_before_hash(tail);
    if pids.is_empty() {
        return None;
    }
    let ours = head == hostname
        || head
            .strip_prefix(hostname)
            .and_then(|r| r.strip_prefix('-'))
            .is_some_and(is_hex);
    let host = if ours {
        hostname.to_string()
    } else {
        match head.rsplit_once('-') {
            Some((h, ident)) if is_hex(ident) && !h.is_empty() => h.to_string(),
            _ => head.to_string(),
        }
    };
    (!host.is_empty()).then_some(Unique { ours, host, pids })
}

/// Reads a `MkdirLockFile` unique name: `HOST.[-HEX]PID`.
fn parse_mkdir_name(name: &str, hostname: &str) -> Option<Unique> {
    let (head, tail) = name.rsplit_once('.')?;
    let pids = pids_after_ident(tail);
    if pids.is_empty() || head.is_empty() {
        return None;
    }
    Some(Unique {
        ours: head == hostname,
        host: head.to_string(),
        pids,
    })
}

/// The lock's style and what its unique name says.
fn read_lock(c: &Candidate<'_>, snap: &Snapshot) -> Option<(Style, String, Unique)> {
    let hostname = &snap.host.hostname;
    match c.kind {
        EntryKind::Symlink => {
            let text = c.link_target?.to_str()?;
            if text.contains('/') {
                return None;
            }
            parse_link_name(text, hostname)
                .and_then(|u| on_this_host(u, snap.pid_max))
                .map(|u| (Style::Symlink, text.to_string(), u))
        }
        EntryKind::File => {
            // Empty, and one inode with its unique name beside it.
            if !(c.complete && c.content.is_empty() && c.meta.nlink() == 2) {
                return None;
            }
            let dir = c.path.parent()?;
            let me = c.file_name().to_str()?;
            let entries = snap.list_dir(dir, DIR_MAX).ok()?;
            entries.into_iter().find_map(|(name, meta)| {
                (name != me
                    && meta.is_file()
                    && meta.ino() == c.meta.ino()
                    && meta.dev() == c.meta.dev())
                .then(|| {
                    parse_link_name(&name, hostname)
                        .and_then(|u| on_this_host(u, snap.pid_max))
                        .map(|u| (Style::Link, name.clone(), u))
                })
                .flatten()
            })
        }
        EntryKind::Dir => {
            let entries = snap.list_dir(c.path, 2).ok()?;
            let [(name, meta)] = entries.as_slice() else {
                return None;
            };
            if !meta.is_file() || !meta.is_empty() {
                return None;
            }
            parse_mkdir_name(name, hostname)
                .and_then(|u| on_this_host(u, snap.pid_max))
                .map(|u| (Style::Mkdir, name.clone(), u))
        }
        EntryKind::Other => None,
    }
}

impl Dialect for PyLockfile {
    fn id(&self) -> DialectId {
        DialectId::PY_LOCKFILE
    }

    fn about(&self) -> super::About {
        super::About {
            writer: "Python's `lockfile` package",
            programs: &[],
            found_as: "`PATH.lock`: `LinkLockFile` (empty, hard-linked to its holder's `HOST-IDENT.PIDHASH` beside it), `SymlinkLockFile` (a link to that name), `MkdirLockFile` (a directory holding `HOST.-IDENTPID`)",
            judged_by: "the host the name begins with (another: foreign); the PID, which runs into the digits beside it: every reading that can be a PID is checked, live when one is a Python, stale only when all are gone. The package never takes a lock over",
            rules: &["pid-gone", "pid-reused"],
            source: Some(
                "the package's `lockfile/__init__.py`, `linklockfile.py`, `mkdirlockfile.py`",
            ),
        }
    }

    fn patterns(&self) -> &'static [&'static str] {
        PATTERNS
    }

    fn messages(&self) -> &'static [Message] {
        MESSAGES
    }

    fn recognise(&self, c: &Candidate<'_>, snap: &Snapshot) -> bool {
        read_lock(c, snap).is_some()
    }

    /// Another program's `*.lock` is not the package's.
    fn judges_unrecognised(&self) -> bool {
        false
    }

    fn read(&self, c: &Candidate<'_>, snap: &Snapshot, _windows: &Windows) -> Said {
        let Some((style, unique, u)) = read_lock(c, snap) else {
            return Said::unparseable("Python lockfile", "no unique name of its holder beside it");
        };
        let shown = common::field(&unique);
        let owner = Owner {
            pid: (u.pids.len() == 1).then(|| u.pids[0]),
            hostname: Some(common::field(&u.host)),
            detail: Some(format!(
                "Python lockfile {} of {} (holder's unique name {shown})",
                style.class(),
                common::field(&strip_lock(c.path))
            )),
            ..Owner::default()
        };
        let host = Some(if u.ours {
            snap.host.hostname.clone()
        } else {
            u.host.clone()
        });
        let claims: Vec<OwnerClaim> = u
            .pids
            .iter()
            .map(|&pid| {
                let c = OwnerClaim::pid(pid, Writers::named(PYTHONS)).host(host.clone());
                if u.pids.len() > 1 {
                    c.label(format!("read as PID {pid}"))
                } else {
                    c
                }
            })
            .collect();
        let claim = match <[OwnerClaim; 1]>::try_from(claims) {
            Ok([one]) => Claim::Owner(one),
            Err(many) => Claim::Owners(many),
        };
        let mut said = Said::claims(owner).claim(claim);
        if u.pids.len() > 1 {
            said = said.note(
                When::Always,
                format!(
                    "the PID runs into the digits beside it in {shown}: it is one of {}, and each is checked",
                    u.pids
                        .iter()
                        .map(i64::to_string)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            );
        }
        said.note(
            When::IfStale,
            "the lockfile package never takes a lock over: every acquire waits (or times out) until it is removed; removing it is safe now",
        )
        .note(
            When::IfStale,
            match style {
                Style::Link => format!("its holder's unique name {shown} beside it is an empty file, left behind too"),
                Style::Symlink => "the symlink is removed as a link, never followed".to_string(),
                Style::Mkdir => format!("the directory is removed with its one empty file {shown}"),
            },
        )
    }
}

/// The locked path: the lock's own path less `.lock`.
fn strip_lock(path: &Path) -> String {
    let s = path.to_string_lossy();
    s.strip_suffix(".lock").unwrap_or(&s).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn link_names_are_read_as_every_pid_they_can_be() {
        // A negative hash: the PID is plain.
        let u = parse_link_name("build-7-1b2c3740.123456-8765432109876543210", "build-7").unwrap();
        assert!(u.ours);
        assert_eq!(u.pids, [123456]);
        // A positive hash of 19 digits: the PID is 6 or 7 digits.
        let u = parse_link_name("build-7.1234561876543210987654321", "build-7").unwrap();
        assert_eq!(u.pids, [123456, 1234561]);
        // Another host, threaded.
        let u = parse_link_name("laptop-1b2c3740.4242-1", "build-7").unwrap();
        assert!(!u.ours);
        assert_eq!(u.host, "laptop");
        // A host that begins with ours is not ours.
        let u = parse_link_name("build-7x-1b2c3740.4242-1", "build-7").unwrap();
        assert!(!u.ours);
        assert!(parse_link_name("notes.txt", "build-7").is_none());
    }

    #[test]
    fn mkdir_names_are_read_past_the_thread_ident() {
        let u = parse_mkdir_name("build-7.-1b2c3740123456", "build-7").unwrap();
        assert!(u.ours);
        // Eight hex digits then the PID; seven then `0123456` is no PID.
        assert_eq!(u.pids, [123456]);
        let u = parse_mkdir_name("build-7.4242", "build-7").unwrap();
        assert_eq!(u.pids, [4242]);
        let u = parse_mkdir_name("a.b.c.-ff77", "a.b.c").unwrap();
        assert!(u.ours);
        assert_eq!(u.pids, [77, 7]);
    }
}
