//! The `locksmith` dialect: lock files written by our own engine (any name; recognised by the
//! owner record inside), and Zero's securefile records (`PID` / `CreatedAt` / `Hostname`).
//!
//! What a record claims, for the judge's rules (the same rules as every lock's, so that a scan
//! and the engine, whose witness is this judge, agree):
//! - an owner that keeps an OFD lock (`kernel_lock`), writing on this boot of this host, on a
//!   local file system: the kernel lock on the file settles it, in every PID namespace
//!   (held: `live`; not held: `kernel-lock-released`);
//! - otherwise its owner: PID, host, boot id, start ticks, PID namespace and creation time, by
//!   the PID rules; a process that has the file open for writing holds the owner's
//!   descriptor (a child that outlived it) and so the lock;
//! - a heartbeat, where the owner refreshes one: expired for longer than the window (or three
//!   of the owner's own intervals), with nothing here holding the file, proves it gone.

use super::message::Message;
use super::{Candidate, Dialect, DialectId, EntryKind, Windows};
use crate::judge::{
    Judgement, Keeps, LockFamily, OwnerClaim, Placed, Refresh, Said, When, Writers,
};
use crate::probe::Snapshot;
use crate::verdict::Owner;
use locksmith_engine::Record;
use locksmith_sys::time::fmt_ms;

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

    fn about(&self) -> super::About {
        super::About {
            writer: "locksmith's lock engine (`locksmith lock`, the `locksmith-engine` crate), and Zero's securefile locks",
            programs: &[],
            found_as: "any file holding an engine owner record (one JSON object: `pid`, `hostname`, `boot_id`, `start_time`, `pid_ns`, `token`, ...) or Zero's (`PID`, `CreatedAt`, `Hostname`); recognised by content, whatever its name while held",
            judged_by: "the OFD lock its holder keeps (held: live; released, on this boot of this host and a local file system: stale), then PID, start time, boot id and host, and a heartbeat where the owner refreshes one",
            rules: &[
                "kernel-lock-released",
                "pid-gone",
                "pid-reused",
                "earlier-boot",
                "heartbeat-expired",
            ],
            source: Some("locksmith-engine `src/record.rs`"),
        }
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

    fn recognise(&self, c: &Candidate<'_>, _snap: &Snapshot) -> bool {
        c.kind == EntryKind::File && Record::parse(c.content).is_some()
    }

    fn read(&self, c: &Candidate<'_>, snap: &Snapshot, windows: &Windows) -> Said {
        let record = (c.kind == EntryKind::File)
            .then(|| Record::parse(c.content))
            .flatten();
        let Some(rec) = record else {
            return Said::unparseable(
                "locksmith",
                "the content is not an owner record (a JSON object with pid, hostname, boot_id, ...)",
            );
        };
        let owner = owner_of(&rec, c, snap);
        let ours = snap.host.boot_id.as_deref();
        let same_kernel = rec.boot_id.is_some() && rec.boot_id.as_deref() == ours;
        let mut said = Said::claims(owner);
        if rec.kernel_lock {
            said = said.writer_locks(LockFamily::Fcntl);
        }
        // Where the kernel's table of locks cannot be read, finding no holder proves nothing:
        // the PID rules decide.
        if rec.kernel_lock && same_kernel && !c.fs.network && snap.kernel_locks_available() {
            let mut promise = format!(
                "its owner keeps an OFD lock on it for as long as it holds the lock, and wrote the record on this boot of this host (boot id {}) on a local file system ({}): the kernel lock settles it",
                ours.unwrap_or("?"),
                c.fs.kind
            );
            if let (Some(theirs), Some(own)) = (rec.pid_ns, snap.host.pid_ns)
                && theirs != own
            {
                promise.push_str(&format!(
                    "; the owner ran in another PID namespace (pid:[{theirs}]), and the kernel lock covers every namespace"
                ));
            }
            return said.claim(Keeps::KernelLock {
                placed: Placed::by(engine_record()),
                path: c.path.to_path_buf(),
                what: "the lock file".into(),
                promise,
            });
        }
        let Some(pid) = rec.pid else {
            return Said::settled(Judgement::unknown(
                "the owner record has no valid pid (missing, or not an integer)",
            ))
            .owner(owner_of(&rec, c, snap));
        };
        said.open_for_writing_holds = true;
        said = said.claim(OwnerClaim {
            pid,
            host: rec.hostname.clone(),
            boot_id: rec.boot_id.clone(),
            start_ticks: rec.start_time,
            pid_ns: rec.pid_ns,
            written_ms: rec.created_ms(),
            writers: Writers::ANY,
            ..OwnerClaim::default()
        });
        if !rec.from_zero() && !rec.kernel_lock {
            said = said.note(
                When::Always,
                "its owner keeps no kernel lock on it (file system without OFD locks, or fallback forced): judged by its PID",
            );
        }
        if rec.has_heartbeat() {
            // The owner refreshes the record (its heartbeat field) and the file's times.
            let last = rec
                .heartbeat_ms()
                .unwrap_or(i64::MIN)
                .max(c.meta.changed_ms());
            // Three of the owner's own intervals, if that is longer than the window.
            let interval_ms = rec
                .heartbeat_interval
                .map(|d| (d.as_secs_f64() * 3000.0) as i64)
                .unwrap_or(0);
            let window_ms = Windows::ms(windows.heartbeat_secs).max(interval_ms);
            said = said.claim(Refresh {
                placed: Placed::by(engine_record()),
                last_ms: last,
                window_ms,
                fresh_ms: None,
                promise: format!(
                    "its owner refreshes a heartbeat while it holds the lock (last {})",
                    fmt_ms(last)
                ),
            });
        }
        said
    }
}

/// Why a file is the engine's.
fn engine_record() -> &'static str {
    "an owner record of locksmith's engine (a JSON object naming its tool, locksmith/VERSION, and its token)"
}

/// What the record says of its owner.
fn owner_of(rec: &Record, c: &Candidate<'_>, snap: &Snapshot) -> Owner {
    let detail = if rec.from_zero() {
        "Zero securefile lock record".to_string()
    } else {
        let mut parts = vec![rec.tool.clone().unwrap_or_else(|| "locksmith".into())];
        if let Some(exe) = &rec.exe {
            parts.push(format!("exe {exe}"));
        }
        if let Some(t) = &rec.token {
            parts.push(format!("token {}", t.chars().take(12).collect::<String>()));
        }
        parts.push(if rec.kernel_lock {
            "keeps an OFD lock".into()
        } else {
            "keeps no kernel lock".into()
        });
        parts.join(", ")
    };
    Owner {
        pid: rec.pid,
        hostname: rec.hostname.clone(),
        user: snap.user_name(c.meta.uid()),
        created_at: rec.created_ms().map(fmt_ms),
        detail: Some(detail),
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
        let meta = crate::probe::Stat::from(std::fs::symlink_metadata(path).unwrap());
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
            Locksmith.recognise(&c, &Snapshot::take()),
            Record::parse(bytes).is_some()
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
        let meta = crate::probe::Stat::from(std::fs::symlink_metadata(&p).unwrap());
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
