//! Who waits for each lock found, and what its holder's state says: beside the judgement,
//! never part of it (a waiter proves nothing about the holder; a stopped holder is alive).
//! The probes and what they prove are in [`crate::probe::waiters`].

use std::collections::HashMap;
use std::path::PathBuf;

use crate::dialect::EntryKind;
use crate::probe::waiters::{self, HolderState, Waiter};
use crate::probe::{FileKey, PidState, Snapshot};
use crate::scan::Finding;
use crate::verdict::Verdict;

/// The waiters of one lock and the state of its holder.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Waiting {
    pub waiters: Vec<Waiter>,
    /// The holder that will not let go by itself (stopped, or not reaping the children it
    /// holds the lock for), with why.
    pub holder: Option<Stuck>,
    /// For a dotlock ([`crate::dialect::Dialect::dotlock`]): the handle files that are hard links of it (its holder's), by
    /// name; they are part of this lock, not locks of their own.
    pub handles: Vec<String>,
}

/// A live holder that shows it will not release its lock by itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stuck {
    pub pid: i32,
    pub name: String,
    /// Its start in clock ticks since boot: what a kill checks again before each signal.
    pub start_ticks: u64,
    pub why: String,
}

impl Waiting {
    pub fn is_empty(&self) -> bool {
        self.waiters.is_empty() && self.holder.is_none() && self.handles.is_empty()
    }
}

/// The processes that hold a live lock now (through a kernel lock or an open file), else
/// the live owner the lock names: each must let go before the lock is free.
pub fn holder_pids(f: &Finding) -> Vec<i32> {
    let j = &f.judgement;
    if j.verdict() != Verdict::Live {
        return Vec::new();
    }
    let mut pids: Vec<i32> = Vec::new();
    for pid in j.holders.iter().map(|h| h.pid).filter(|&p| p > 0) {
        if !pids.contains(&pid) {
            pids.push(pid);
        }
    }
    if pids.is_empty() {
        pids.extend(
            j.process
                .as_ref()
                .filter(|p| p.container.is_none())
                .map(|p| p.pid),
        );
    }
    pids
}

/// The waiters and the holder's state of one lock.
pub fn of(f: &Finding, snap: &Snapshot) -> Waiting {
    let key = FileKey::from_dev_ino(f.identity.dev, f.identity.ino);
    let mut list = waiters::kernel_waiters(snap, key);
    let mut handles = Vec::new();
    if f.kind == EntryKind::File && crate::dialect::is_dotlock(&f.content) {
        let holder = f.judgement.owner.as_ref().and_then(|o| o.pid);
        list.extend(waiters::dotlock_waiters(snap, &f.path, holder));
        if let Some(dir) = f.path.parent() {
            handles = waiters::dotlock_handles(dir)
                .into_iter()
                .filter(|h| h.key == key)
                .map(|h| h.name)
                .collect();
        }
    }
    // The lock is released only once every holder lets go (the sharers of one flock, the
    // readers of a shared lock): one that will not makes the lock stuck.
    let holder = holder_pids(f)
        .into_iter()
        .filter(|&p| matches!(snap.pid(p), PidState::Alive(_)))
        .filter_map(HolderState::read)
        .find_map(|s| {
            s.trouble().map(|why| Stuck {
                pid: s.pid,
                name: s.name.clone(),
                start_ticks: s.start_ticks,
                why,
            })
        });
    Waiting {
        waiters: list,
        holder,
        handles,
    }
}

/// One waiter in a line, raw text (a view escapes it): `4250 cargo (flock, write; started
/// 2026-11-30T10:00:00Z; blocked in flock(3, LOCK_EX) in locks_lock_inode_wait)`.
pub fn describe_waiter(x: &Waiter) -> String {
    let who = if x.pid > 0 {
        format!("{} {}", x.pid, x.name.as_deref().unwrap_or("?"))
    } else {
        "a process not seen from here".to_string()
    };
    let mut facts = vec![x.how.as_str().to_string()];
    if let Some(w) = x.write {
        facts.push(if w { "write" } else { "read" }.into());
    }
    let mut more = Vec::new();
    if let Some(c) = &x.container {
        more.push(c.describe());
    }
    if let Some(s) = x.started_ms {
        more.push(format!("started {}", crate::judge::fmt_ms(s)));
    }
    if let Some(b) = &x.blocked_in {
        more.push(format!("blocked in {b}"));
    }
    let more = if more.is_empty() {
        String::new()
    } else {
        format!("; {}", more.join("; "))
    };
    format!("{who} ({}{more})", facts.join(", "))
}

/// [`of`] for every finding, keyed by path; locks with nothing to say are left out.
pub fn of_all(findings: &[Finding], snap: &Snapshot) -> HashMap<PathBuf, Waiting> {
    findings
        .iter()
        .map(|f| (f.path.clone(), of(f, snap)))
        .filter(|(_, w)| !w.is_empty())
        .collect()
}
