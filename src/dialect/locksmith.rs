//! The `locksmith` dialect: lock files written by our own engine (any name; recognised by the
//! owner record inside), and Zero's securefile records (`PID` / `CreatedAt` / `Hostname`).
//!
//! The verdict comes from the engine's own judge ([`locksmith_engine::judge()`]), with this crate's
//! evidence snapshot behind it (see [`crate::judge`]): the kernel-lock holders named by
//! `/proc/locks`, the same PID rules as every other lock (hosts, boots, PID namespaces,
//! containers), the processes that have the file open for writing.
//! [`locksmith_engine::Lock::inspect`] judges with the same judge, so the engine and the
//! scanner agree by construction.

use super::message::Message;
use super::{Candidate, Dialect, DialectId, EntryKind, Windows};
use crate::judge::{Claim, Said};
use crate::probe::Snapshot;
use crate::verdict::Owner;
use locksmith_engine::ParsedRecord;

/// The engine's own lock files.
#[derive(Debug, Clone, Copy, Default)]
pub struct Locksmith;

/// What `locksmith lock` prints when the lock is held past its timeout.
const MESSAGES: &[Message] = &[Message::en(
    "locksmith lock",
    r"locksmith lock: (?P<path>/[^:\n]+): held by (?:pid )?(?P<pid>\d+)",
    &["{path}"],
    "locksmith lock: /var/lock/nightly.lock: held by pid 4242",
)];

impl Dialect for Locksmith {
    fn id(&self) -> DialectId {
        DialectId::LOCKSMITH
    }

    /// None: engine locks may have any name, so they are recognised by content among the
    /// candidates other dialects' patterns and the kernel-lock table bring in.
    fn patterns(&self) -> &'static [&'static str] {
        &[]
    }

    fn messages(&self) -> &'static [Message] {
        MESSAGES
    }

    fn any_name(&self) -> bool {
        true
    }

    fn recognise(&self, c: &Candidate<'_>) -> bool {
        c.kind == EntryKind::File && ParsedRecord::parse(c.content).is_some()
    }

    fn read(&self, _c: &Candidate<'_>, _snap: &Snapshot, _windows: &Windows) -> Said {
        Said::claims(Owner::default()).claim(Claim::EngineRecord)
    }
}

#[cfg(test)]
#[cfg(target_os = "linux")]
mod tests {
    use super::*;
    use crate::judge::Judgement;
    use crate::probe::FsInfo;
    use crate::verdict::Verdict;
    use std::path::Path;

    /// The record of a lock this process takes (with an OFD lock), released since.
    fn own_record() -> locksmith_engine::Record {
        let scratch = tempfile::tempdir().unwrap();
        let guard = locksmith_engine::Lock::new(scratch.path().join("own.lock"))
            .acquire()
            .unwrap();
        assert!(guard.kernel_lock());
        guard.record().clone()
    }

    /// A record as the engine writes it: one JSON object and a newline.
    fn line(rec: &locksmith_engine::Record) -> Vec<u8> {
        let mut line = serde_json::to_vec(rec).unwrap();
        line.push(b'\n');
        line
    }

    fn judge_bytes(path: &Path, bytes: &[u8], fs: &FsInfo) -> Judgement {
        std::fs::write(path, bytes).unwrap();
        let meta = std::fs::symlink_metadata(path).unwrap();
        let c = Candidate {
            path,
            meta: &meta,
            kind: EntryKind::of(&meta),
            content: bytes,
            complete: true,
            link_target: None,
            fs,
        };
        assert_eq!(
            Locksmith.recognise(&c),
            ParsedRecord::parse(bytes).is_some()
        );
        Locksmith.judge(&c, &Snapshot::take(), &Windows::default())
    }

    /// The kernel lock settles a record of this boot only when `/proc/locks` was read: an
    /// unreadable table proves nothing, and the PID rules decide (here: another namespace).
    #[test]
    fn an_unreadable_lock_table_settles_nothing() {
        use crate::probe::KernelLocks;
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.lock");
        let mut rec = own_record();
        rec.pid_ns = Some(1);
        std::fs::write(&p, line(&rec)).unwrap();
        let meta = std::fs::symlink_metadata(&p).unwrap();
        let content = std::fs::read(&p).unwrap();
        let fs = local();
        let c = Candidate {
            path: &p,
            meta: &meta,
            kind: EntryKind::of(&meta),
            content: &content,
            complete: true,
            link_target: None,
            fs: &fs,
        };
        let read = Snapshot::with_kernel_locks(KernelLocks::parse(""));
        let j = Locksmith.judge(&c, &read, &Windows::default());
        assert_eq!(j.verdict(), Verdict::Stale, "{j:?}");
        let unreadable = Snapshot::with_kernel_locks(KernelLocks::default());
        let j = Locksmith.judge(&c, &unreadable, &Windows::default());
        assert_eq!(j.verdict(), Verdict::Foreign, "{j:?}");
    }

    fn local() -> FsInfo {
        FsInfo::new("ext4", false)
    }

    #[test]
    fn unparseable_content_is_unknown() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.lock");
        for bytes in [&b""[..], b"1; rm -rf /", b"{\"pid\": 1", b"\x1b[2J\xff"] {
            let j = judge_bytes(&p, bytes, &local());
            assert_eq!(j.verdict(), Verdict::Unknown, "{bytes:?}: {j:?}");
        }
        let wrong_pid = br#"{"tool":"locksmith/1","pid":"1234","hostname":"h"}"#;
        let j = judge_bytes(&p, wrong_pid, &local());
        assert_eq!(j.verdict(), Verdict::Unknown, "{j:?}");
    }

    #[test]
    fn our_kernel_without_kernel_lock_is_stale_and_our_live_pid_without_it_is_live() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.lock");
        let snap = Snapshot::take();
        let mut rec = own_record();
        // Our own (live) PID, but a record that claims an OFD lock nobody holds: the kernel
        // lock settles it, so it is stale even though the PID is alive.
        let j = judge_bytes(&p, &line(&rec), &local());
        assert_eq!(j.verdict(), Verdict::Stale, "{j:?}");
        assert_eq!(
            j.owner.as_ref().unwrap().pid,
            Some(std::process::id() as i64)
        );
        // The same record on a network file system is judged by its PID: alive.
        let nfs = FsInfo::new("nfs", true);
        let j = judge_bytes(&p, &line(&rec), &nfs);
        assert_eq!(j.verdict(), Verdict::Live, "{j:?}");
        // A fallback record (no kernel lock) of a live process: live.
        rec.kernel_lock = false;
        let j = judge_bytes(&p, &line(&rec), &local());
        assert_eq!(j.verdict(), Verdict::Live, "{j:?}");
        assert_eq!(
            j.process.as_ref().map(|p| p.pid),
            Some(std::process::id() as i32)
        );
        // Zero's record naming us: live.
        let zero = format!(
            r#"{{"PID":{},"CreatedAt":"{}","Hostname":"{}"}}"#,
            std::process::id(),
            jiff::Timestamp::now(),
            snap.host.hostname
        );
        let j = judge_bytes(&p, zero.as_bytes(), &local());
        assert_eq!(j.verdict(), Verdict::Live, "{j:?}");
        assert!(j.owner.unwrap().detail.unwrap().contains("Zero"));
    }
}
