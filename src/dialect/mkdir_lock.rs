//! `mkdir-lock`: a directory named `*.lock`, taken with `mkdir` (atomic everywhere, NFS
//! included) — proper-lockfile and many shell scripts. It names no owner. proper-lockfile
//! refreshes the directory's mtime while it holds the lock, every `update` ms (half of the
//! caller's `stale`, which each caller chooses: 10 s by default, often minutes); shell scripts
//! never refresh it at all.
//!
//! Liveness: a kernel lock on the directory or a process with it open proves it held. Else the
//! mtime is the only sign of life, and weak: `stale` only once it is older than
//! [`Windows::mkdir_lock_secs`] (5 minutes by default: longer than any writer's refresh), and
//! `unknown` below that — a holder refreshing at its own pace may still be there.

use super::common;
use super::{Candidate, Decision, Dialect, DialectId, EntryKind, Windows};
use crate::evidence::fmt_ms;
use crate::probe::Snapshot;
use crate::verdict::{Judgement, Owner, Verdict};

pub struct MkdirLock;

/// How far a file server's clock may be from ours before a heartbeat on it proves anything.
const NETWORK_SKEW_MS: i64 = 60_000;

impl Dialect for MkdirLock {
    fn id(&self) -> DialectId {
        DialectId::MKDIR_LOCK
    }

    fn patterns(&self) -> &'static [&'static str] {
        &["*.lock"]
    }

    fn recognise(&self, c: &Candidate<'_>) -> bool {
        c.kind == EntryKind::Dir && c.file_name().as_encoded_bytes().ends_with(b".lock")
    }

    fn decide(&self, c: &Candidate<'_>, snap: &Snapshot, windows: &Windows) -> Decision {
        if c.kind != EntryKind::Dir {
            return Judgement::new(
                Verdict::Unknown,
                "named like a lock, but its content is neither a PID nor anything else recognised",
            )
            .because(format!(
                "content starts with {}",
                common::excerpt(&c.content[..c.content.len().min(64)])
            ))
            .into();
        }
        let owner = Owner {
            detail: Some(format!(
                "lock directory, last touched {}",
                fmt_ms(c.mtime_ms())
            )),
            ..Owner::default()
        };
        Decision::owned(owner, judge_dir(c, snap, windows))
    }
}

/// A lock directory: held or open, else its mtime against the stale window.
fn judge_dir(c: &Candidate<'_>, snap: &Snapshot, windows: &Windows) -> Judgement {
    if let Some(j) = common::kernel_live(snap, c.key(), "the lock directory") {
        return j;
    }
    if let Some(j) = common::open_live(snap, c.key(), |holders| {
        format!("the lock directory is open in {holders}")
    }) {
        return j;
    }
    let age = common::age_ms(c.mtime_ms(), snap);
    let window_ms = Windows::ms(windows.mkdir_lock_secs);
    // On a network file system the server's clock sets the mtime: allow it to differ.
    let skew_ms = if c.fs.network { NETWORK_SKEW_MS } else { 0 };
    if age > window_ms.saturating_add(skew_ms) {
        Judgement::new(
                Verdict::Stale,
                format!(
                    "last touched {} ago, longer than the {} s stale window: a holder refreshes its mtime while it holds the lock",
                    common::fmt_age(age),
                    windows.mkdir_lock_secs
                ),
            )
            .because("no process has it open and no kernel lock is held on it")
            .because(if c.fs.network {
                format!(
                    "on a network file system ({}): {} s were allowed for the server's clock",
                    c.fs.kind,
                    NETWORK_SKEW_MS / 1000
                )
            } else {
                "on a local file system: the mtime comes from this host's clock".to_string()
            })
    } else if age > window_ms {
        Judgement::new(
            Verdict::Unknown,
            format!(
                "last touched {} ago, past the {} s stale window, but on a network file system ({}) whose server clock may differ from ours by up to {} s",
                common::fmt_age(age),
                windows.mkdir_lock_secs,
                c.fs.kind,
                NETWORK_SKEW_MS / 1000
            ),
        )
    } else if age < -(60_000 + skew_ms) {
        Judgement::new(
            Verdict::Unknown,
            format!(
                "its mtime is {} in the future: the clocks disagree, so the heartbeat proves nothing",
                common::fmt_age(-age)
            ),
        )
    } else {
        Judgement::new(
                Verdict::Unknown,
                format!(
                    "touched {} ago, within the {} s stale window: a holder may still be refreshing it (proper-lockfile refreshes at half of its caller's stale time), and its mtime alone proves neither",
                    common::fmt_age(age.max(0)),
                    windows.mkdir_lock_secs
                ),
            )
            .because("no process has it open and no kernel lock is held on it")
    }
}
