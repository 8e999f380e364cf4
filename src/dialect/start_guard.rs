//! `start-guard`: the file beside a pid file on which a service started by `locksmith start`
//! holds a kernel lock for as long as it runs (`.NAME.locksmith-start` beside `NAME`: see
//! [`crate::start_guard`]).
//!
//! The guard itself is a kernel-lock file: held, it is `live` (the judge sees to that first,
//! with its holders); otherwise `free`. It must stay: the next `locksmith start` reads it to
//! prove that the service it started last is gone.
//!
//! And it is evidence about its pid file ([`beside`]): a pid file with a guard beside it whose
//! record names it was written by a service that `locksmith start` started, which holds the
//! guard's kernel lock for as long as it runs. Held → the pid file is `live`; released → its
//! writer is gone (`kernel-lock-released`), in whatever container it ran; on a network file
//! system where a lock taken on another machine does not show, `foreign` (the judge's rule for
//! kernel locks there).

use super::{Candidate, Dialect, DialectId, EntryKind, Windows};
use crate::judge::{Judgement, Keeps, LockFamily, Placed, Said, When};
use crate::probe::{FileKey, Snapshot};
use crate::start_guard::{self, Record};
use crate::verdict::Owner;

pub struct StartGuard;

const PATTERNS: &[&str] = &[".*.locksmith-start"];

fn is_guard_name(c: &Candidate<'_>) -> bool {
    start_guard::pid_name_of(c.file_name()).is_some()
}

impl Dialect for StartGuard {
    fn id(&self) -> DialectId {
        DialectId::START_GUARD
    }

    fn about(&self) -> super::About {
        super::About {
            writer: "`locksmith start`",
            programs: &[],
            found_as: "`.NAME.locksmith-start` beside a pid file `NAME`: empty, or the JSON record of the last service it started",
            judged_by: "a kernel lock held: live (the service runs), with its holders; none: free, and it must stay (the next start reads it). Evidence for its pid file too: held, the pid file is live; released, its writer is gone (`kernel-lock-released`)",
            rules: &[],
            source: None,
        }
    }

    fn patterns(&self) -> &'static [&'static str] {
        PATTERNS
    }

    fn recognise(&self, c: &Candidate<'_>, _snap: &Snapshot) -> bool {
        c.kind == EntryKind::File
            && is_guard_name(c)
            && (c.content.iter().all(u8::is_ascii_whitespace) || Record::parse(c.content).is_some())
    }

    fn read(&self, c: &Candidate<'_>, snap: &Snapshot, _windows: &Windows) -> Said {
        if c.kind != EntryKind::File {
            return Said::unparseable("start guard", "it is not a regular file");
        }
        let pid_name = start_guard::pid_name_of(c.file_name())
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let record = Record::parse(c.content);
        if record.is_none() && !c.content.iter().all(u8::is_ascii_whitespace) {
            return Said::unparseable(
                "start guard",
                "its content is no record of `locksmith start`",
            );
        }
        let detail = match &record {
            Some(r) if r.guards == pid_name => format!(
                "start guard of {pid_name}: the last service `locksmith start` started for it was {}",
                r.describe()
            ),
            Some(r) => format!(
                "start guard named for {pid_name}, whose record is for {}",
                crate::text::truncate(&r.guards, 200)
            ),
            None => format!("start guard of {pid_name}: no service was started under it yet"),
        };
        let owner = Owner {
            hostname: record.as_ref().map(|r| r.hostname.clone()),
            detail: Some(detail),
            ..Owner::default()
        };
        // A kernel lock held on it makes it `live` before this verdict is looked at.
        let j = super::flock::unlocked(
            Judgement::free(
                "no process holds a kernel lock on it (/proc/locks): no service started by `locksmith start` for its pid file runs",
            )
            .because(
                "it must stay: the next `locksmith start` takes its kernel lock and reads it to prove that the service it started last is gone",
            ),
            c,
            snap,
        );
        // Its writer, `locksmith start`, locks it in the kernel: whoever holds a lock on it
        // holds it.
        Said::settled(j)
            .owner(owner)
            .writer_locks(LockFamily::Fcntl)
    }
}

/// `said` with what the start guard beside the lock proves, when there is one whose record
/// names this lock: its kernel lock, kept by the service that writes the lock for as long as it
/// runs (first among the claims: it settles where PIDs cannot). Nothing is added for a lock
/// that names no owner PID, for a guard owned by another user than the lock's (or root), nor
/// while this very process holds the guard (a `locksmith start` that took it to start the
/// next service: it says itself what the guard proves).
pub fn beside(c: &Candidate<'_>, said: Said, snap: &Snapshot) -> Said {
    if !said.names_owner() || c.kind == EntryKind::Dir {
        return said;
    }
    let Some(path) = start_guard::path_for(c.path) else {
        return said;
    };
    let Ok(meta) = snap.lstat(&path) else {
        return said;
    };
    // A guard someone else made (not the pid file's owner, nor root) could carry any record.
    if !meta.is_file() || (meta.uid() != c.meta.uid() && meta.uid() != 0) {
        return said;
    }
    let Some(record) = snap
        .read_small(&path, 4096)
        .as_deref()
        .and_then(Record::parse)
        .filter(|r| r.is_for(c.file_name()))
    else {
        return said;
    };
    if !crate::probe::kernel_locks::held_by_own_descriptors(FileKey::of(&meta)).is_empty() {
        return said;
    }
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let promise = format!(
        "`locksmith start` took the kernel lock of its start guard {name} before it started the service that writes this file ({}), and that service holds it for as long as it runs",
        record.describe()
    );
    let mut said = said.note(When::IfLive, promise.clone());
    said.claims.insert(
        0,
        Keeps::KernelLock {
            path,
            what: format!("its start guard {name}"),
            promise,
            placed: Placed::by(format!(
                "the start guard {name} beside it, of its owner or root, names it as the pid file of the service `locksmith start` started"
            )),
        }
        .into(),
    );
    said
}
