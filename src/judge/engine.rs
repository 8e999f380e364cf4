//! The engine's own records, judged by the engine's judge ([`locksmith_engine::judge`]) with
//! the scanner's evidence: the snapshot is the engine's [`Evidence`], and its PID questions are
//! answered by the same PID rules as every other lock ([`super::pid`]). So a scan and the
//! engine cannot disagree about a record, and the engine's `stale` carries the proof of one of
//! the same rules.

use std::fs::Metadata;
use std::os::unix::fs::MetadataExt;

use super::claims::{OwnerClaim, Writers};
use super::{Judgement, Lock, alive, pid};
use crate::probe::{FileKey, FsInfo, PidState, Snapshot};
use crate::verdict::{Holder, ProcessInfo};
use locksmith_engine::StaleWindows;
use locksmith_engine::judge::{Evidence, LockFile, Witness};
use locksmith_engine::record::ParsedRecord;

/// Judges an engine record.
pub(super) fn judge(lock: Lock<'_>, snap: &Snapshot, windows: &StaleWindows) -> Judgement {
    let file = LockFile {
        path: lock.at.path,
        meta: lock.at.meta,
        regular: lock.at.meta.is_file(),
        content: lock.content,
        complete: lock.complete,
        fs: lock.at.fs,
    };
    Judgement::from_engine(locksmith_engine::judge::judge(&file, snap, windows))
}

/// The engine's witness when the scanner is there: a fresh evidence snapshot for every
/// judgement, so that the engine (`locksmith lock`, reclaim through the engine protocol) and
/// the scanner judge a record alike.
#[derive(Debug, Clone, Copy, Default)]
pub struct ScannerWitness;

impl Witness for ScannerWitness {
    fn look(&self) -> Box<dyn Evidence> {
        Box::new(Snapshot::take())
    }
}

impl Evidence for Snapshot {
    fn boot_id(&self) -> Option<&str> {
        self.host.boot_id.as_deref()
    }

    fn pid_ns(&self) -> Option<u64> {
        self.host.pid_ns
    }

    fn taken_ms(&self) -> i64 {
        self.taken_ms
    }

    fn kernel_holders(&self, file: &LockFile<'_>) -> Vec<Holder> {
        Snapshot::kernel_holders(self, FileKey::of(file.meta))
    }

    fn kernel_locks_readable(&self) -> bool {
        self.kernel_locks().available()
    }

    fn judge_pid(
        &self,
        rec: &ParsedRecord,
        pid: i64,
        c: &LockFile<'_>,
    ) -> locksmith_engine::verdict::Judgement {
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
        let at = alive::At {
            path: c.path,
            meta: c.meta,
            fs: c.fs,
        };
        let claim = alive::Claim {
            c: &claim,
            at,
            written_ms: rec.created_ms.unwrap_or_else(|| at.mtime_ms()),
        };
        pid::judge(&claim, self).into_engine()
    }

    fn writers(&self, file: &LockFile<'_>) -> Vec<Holder> {
        writers(self, file.meta)
    }

    fn process(&self, pid: i32, alive: bool) -> Option<(ProcessInfo, u64)> {
        match self.pid(pid) {
            PidState::Alive(f) => Some((self.process_info(&f), f.start_ticks)),
            PidState::Zombie(f) if !alive => Some((self.process_info(&f), f.start_ticks)),
            _ => None,
        }
    }

    fn user_name(&self, uid: u32) -> Option<String> {
        Snapshot::user_name(self, uid)
    }

    fn written_before_boot(&self, written_ms: i64, fs: &FsInfo) -> Option<String> {
        pid::written_before_boot(written_ms, Some(fs), self)
    }
}

/// The processes that have the file open for writing (the owner's descriptor, inherited by a
/// child that outlived it).
fn writers(snap: &Snapshot, meta: &Metadata) -> Vec<Holder> {
    snap.openers(FileKey::of(meta))
        .into_iter()
        .filter(|h| locksmith_engine::host::open_for_writing(h.pid, meta.dev(), meta.ino()))
        .collect()
}
