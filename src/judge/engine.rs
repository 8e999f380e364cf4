//! The engine's own records, judged by the engine's judge ([`locksmith_engine::judge()`]) with
//! the scanner's evidence: the snapshot is the engine's [`Evidence`], and its PID questions are
//! answered by the same PID rules as every other lock ([`super::pid`]). So a scan and the
//! engine cannot disagree about a record, and the engine's `stale` carries the proof of one of
//! the same rules.
//!
//! What the engine's judgement does not carry, the scanner's adds back: the file system as the
//! scan knows it (a container's root, our own root) is what the PID rules see, and the claim
//! to ask another host about stays on a `foreign` verdict ([`Judgement::remote`]), both when
//! the scanner judges a record and when the engine does with the [`ScannerWitness`]
//! ([`witnessed`]: `locksmith lock`, a reclaim through the engine that is refused).

use std::borrow::Borrow;
use std::cell::RefCell;
use std::fs::Metadata;
use std::os::unix::fs::MetadataExt;

use super::claims::{OwnerClaim, Writers};
use super::{Judgement, Lock, alive, pid};
use crate::probe::{FileKey, FsInfo, PidState, Snapshot};
use crate::verdict::{Holder, ProcessInfo, RemoteClaim, Verdict};
use locksmith_engine::{Evidence, LockFile, ParsedRecord, StaleWindows, Witness};

/// Judges an engine record.
pub(super) fn judge(lock: Lock<'_>, snap: &Snapshot, windows: &StaleWindows) -> Judgement {
    let at = lock.at;
    let file = LockFile::new(
        at.path,
        at.meta,
        lock.content,
        lock.complete,
        at.fs.kind.as_str(),
        at.fs.network,
    );
    let ev = Scanned::new(snap, Some(at.fs.clone()));
    let mut j = Judgement::from_engine(locksmith_engine::judge(&file, &ev, windows));
    if j.verdict() == Verdict::Foreign {
        // The engine's judge hands back the PID rules' `foreign` as it was given.
        j.remote = ev.remote.take().map(Box::new);
    }
    j
}

/// The engine's witness when the scanner is there: a fresh evidence snapshot for every
/// judgement, so that the engine (`locksmith lock`, reclaim through the engine protocol) and
/// the scanner judge a record alike.
#[derive(Debug, Clone, Copy, Default)]
pub struct ScannerWitness;

impl Witness for ScannerWitness {
    fn look(&self) -> Box<dyn Evidence> {
        WITNESSED_REMOTE.with(|c| c.borrow_mut().take());
        let mut ev = Scanned::new(Snapshot::take(), None);
        ev.witnessed = true;
        Box::new(ev)
    }
}

thread_local! {
    /// The claim to ask another host about that the PID rules made from the record the engine
    /// judged last on this thread with the [`ScannerWitness`] (none when that judgement did not
    /// come to the PID rules, or they could check the owner here). The engine judges on its
    /// caller's thread, and its judgement has no room for the claim: [`witnessed`] takes it
    /// from here.
    static WITNESSED_REMOTE: RefCell<Option<RemoteClaim>> = const { RefCell::new(None) };
}

/// The engine's judgement of one of its records made with the [`ScannerWitness`] on this
/// thread (a reclaim through the engine, refused or done), as the scanner reports it: a
/// `foreign` owner keeps the claim to ask its host about, as when the scanner judges the record
/// itself, so that it can be asked again.
pub(super) fn witnessed(j: locksmith_engine::Judgement) -> Judgement {
    let mut out = Judgement::from_engine(j);
    if out.verdict() == Verdict::Foreign {
        let claim = WITNESSED_REMOTE.with(|c| c.borrow().clone());
        // Only the claim made from this very record: the owner it names.
        out.remote = claim
            .filter(|c| {
                out.owner.as_ref().is_some_and(|o| {
                    o.pid == Some(c.pid) && o.hostname.as_deref() == Some(c.host.as_str())
                })
            })
            .map(Box::new);
    }
    out
}

/// The scanner's evidence on one engine record: a snapshot, the file system as the scan saw it
/// (`None`: as the engine describes it), and the claim the PID rules made to ask another host
/// (also kept for [`witnessed`] when the engine judges with the [`ScannerWitness`]).
struct Scanned<S> {
    snap: S,
    fs: Option<FsInfo>,
    remote: RefCell<Option<RemoteClaim>>,
    witnessed: bool,
}

impl<S: Borrow<Snapshot>> Scanned<S> {
    fn new(snap: S, fs: Option<FsInfo>) -> Self {
        Scanned {
            snap,
            fs,
            remote: RefCell::new(None),
            witnessed: false,
        }
    }

    fn fs(&self, file: &LockFile<'_>) -> FsInfo {
        self.fs
            .clone()
            .unwrap_or_else(|| FsInfo::new(file.fs_type(), file.network()))
    }
}

impl<S: Borrow<Snapshot>> Evidence for Scanned<S> {
    fn boot_id(&self) -> Option<&str> {
        self.snap.borrow().host.boot_id.as_deref()
    }

    fn pid_ns(&self) -> Option<u64> {
        self.snap.borrow().host.pid_ns
    }

    fn taken_ms(&self) -> i64 {
        self.snap.borrow().taken_ms
    }

    fn kernel_holders(&self, file: &LockFile<'_>) -> Vec<Holder> {
        Snapshot::kernel_holders(self.snap.borrow(), FileKey::of(file.metadata()))
    }

    fn kernel_locks_readable(&self) -> bool {
        self.snap.borrow().kernel_locks().available()
    }

    fn judge_pid(
        &self,
        rec: &ParsedRecord,
        pid: i64,
        c: &LockFile<'_>,
    ) -> locksmith_engine::Judgement {
        let claim = OwnerClaim {
            pid,
            host: rec.hostname.clone(),
            boot_id: rec.boot_id.clone(),
            start_ticks: rec.start_time,
            pid_ns: rec.pid_ns,
            written_ms: rec.created_ms,
            writers: Writers::ANY,
            ..OwnerClaim::default()
        };
        let fs = self.fs(c);
        let at = alive::At {
            path: c.path(),
            meta: c.metadata(),
            fs: &fs,
        };
        let claim = alive::Claim {
            c: &claim,
            at,
            written_ms: rec.created_ms.unwrap_or_else(|| at.mtime_ms()),
        };
        let mut j = pid::judge(&claim, self.snap.borrow());
        let remote = j.remote.take().map(|r| *r);
        if self.witnessed {
            WITNESSED_REMOTE.with(|c| c.borrow_mut().clone_from(&remote));
        }
        *self.remote.borrow_mut() = remote;
        j.into_engine()
    }

    fn writers(&self, file: &LockFile<'_>) -> Vec<Holder> {
        writers(self.snap.borrow(), file.metadata())
    }

    fn process(&self, pid: i32, alive: bool) -> Option<(ProcessInfo, u64)> {
        let snap = self.snap.borrow();
        match snap.pid(pid) {
            PidState::Alive(f) => Some((snap.process_info(&f), f.start_ticks)),
            PidState::Zombie(f) if !alive => Some((snap.process_info(&f), f.start_ticks)),
            _ => None,
        }
    }

    fn user_name(&self, uid: u32) -> Option<String> {
        Snapshot::user_name(self.snap.borrow(), uid)
    }

    fn written_before_boot(&self, written_ms: i64, file: &LockFile<'_>) -> Option<String> {
        pid::written_before_boot(written_ms, Some(&self.fs(file)), self.snap.borrow())
    }
}

/// The processes that have the file open for writing (the owner's descriptor, inherited by a
/// child that outlived it).
fn writers(snap: &Snapshot, meta: &Metadata) -> Vec<Holder> {
    snap.openers(FileKey::of(meta))
        .into_iter()
        .filter(|h| locksmith_sys::host::open_for_writing(h.pid, meta.dev(), meta.ino()))
        .collect()
}
