//! The `locksmith` dialect: lock files written by our own engine (any name; recognised by the
//! owner record inside), and Zero's securefile records (`PID` / `CreatedAt` / `Hostname`).
//!
//! Judging (spec §3): a kernel lock held on the file makes it `live`. A record written on this
//! kernel (our boot id) by an owner that keeps an OFD lock, on a local file system, is settled
//! by the kernel lock alone: not held means `stale`, whatever its PID namespace. Everything
//! else goes through the PID rules of [`crate::evidence::judge_pid`], with two additions: a
//! local process that has the file open for writing (the owner's descriptor, inherited by a
//! child that outlived it) is evidence of life, and an expired heartbeat with no local evidence
//! of life turns `foreign` into `stale`.
//!
//! [`crate::engine::inspect`] calls this same judge, so the engine and the scanner agree by
//! construction.

use super::{Candidate, Decision, Dialect, DialectId, EntryKind, Windows};
use crate::engine::record::{ParsedRecord, RecordFormat};
use crate::evidence::{PidClaim, fmt_ms, judge_pid};
use crate::probe::{FileKey, PidState, Snapshot};
use crate::verdict::{Holder, HolderHow, Judgement, Owner, Verdict};

/// The engine's own lock files.
#[derive(Debug, Clone, Copy, Default)]
pub struct Locksmith;

impl Dialect for Locksmith {
    fn id(&self) -> DialectId {
        DialectId::LOCKSMITH
    }

    /// None: engine locks may have any name, so they are recognised by content among the
    /// candidates other dialects' patterns and the kernel-lock table bring in.
    fn patterns(&self) -> &'static [&'static str] {
        &[]
    }

    fn any_name(&self) -> bool {
        true
    }

    fn recognise(&self, c: &Candidate<'_>) -> bool {
        c.kind == EntryKind::File && ParsedRecord::parse(c.content).is_some()
    }

    fn decide(&self, c: &Candidate<'_>, snap: &Snapshot, windows: &Windows) -> Decision {
        let record = if c.kind == EntryKind::File {
            ParsedRecord::parse(c.content)
        } else {
            None
        };
        let Some(rec) = record else {
            return unparsed(c, snap).into();
        };
        let j = judge_record(&rec, c, snap, windows);
        Decision::owned(owner_of(&rec, c, snap), j)
    }
}

fn unparsed(c: &Candidate<'_>, snap: &Snapshot) -> Judgement {
    let why = if c.kind != EntryKind::File {
        "not a regular file, so not a locksmith lock file"
    } else if c.content.is_empty() {
        "the file is empty: there is no owner record to check"
    } else if !c.complete {
        "the file is too large to be a locksmith owner record"
    } else {
        "the content is not a locksmith owner record (a JSON object with pid, hostname, boot_id, ...)"
    };
    let holders = snap.kernel_holders(c.key());
    // An empty file from an earlier boot: a record that never reached the disk before a power
    // loss (the name was linked, the data not yet written). Nobody in this boot can own it.
    if c.kind == EntryKind::File
        && c.content.is_empty()
        && holders.is_empty()
        && snap.kernel_locks().available()
        && !c.fs.network
        && let Some(line) = crate::evidence::written_before_boot(c.mtime_ms(), Some(c.fs), snap)
    {
        return Judgement::new(
            Verdict::Stale,
            "the file is empty and no process holds a kernel lock on it (/proc/locks)",
        )
        .because(format!(
            "{line}: an owner record lost in a crash, owned by nobody in this boot"
        ));
    }
    let mut j = Judgement::new(Verdict::Unknown, why);
    if !holders.is_empty() {
        j.evidence
            .push(format!("{} (/proc/locks)", held_line(&holders)));
        j.holders = holders;
    }
    j
}

fn judge_record(
    rec: &ParsedRecord,
    c: &Candidate<'_>,
    snap: &Snapshot,
    windows: &Windows,
) -> Judgement {
    let key = c.key();
    let our_boot = snap.host.boot_id.as_deref();
    let same_kernel = rec.boot_id.is_some() && rec.boot_id.as_deref() == our_boot;

    let holders = snap.kernel_holders(key);
    if !holders.is_empty() {
        let mut j = Judgement::new(
            Verdict::Live,
            format!("{} (/proc/locks)", held_line(&holders)),
        );
        if rec.kernel_lock && same_kernel {
            j.evidence.push(
                "its owner keeps that lock for as long as it holds the lock, and wrote the record on this boot of this host"
                    .into(),
            );
        }
        j.process = live_process(rec, &holders, snap);
        j.holders = holders;
        return j;
    }

    if rec.kernel_lock && same_kernel && !c.fs.network && snap.kernel_locks().available() {
        // `/proc/locks` was read while others lock and unlock, and a read can miss an entry:
        // "no kernel lock" is asked of the kernel once more before it proves anything.
        use std::os::unix::fs::MetadataExt;
        match crate::probe::kernel_locks::held_at(c.path, c.meta.dev(), c.meta.ino()) {
            Some(false) => {}
            Some(true) => {
                return Judgement::new(
                    Verdict::Live,
                    "a kernel lock is held on it (F_OFD_GETLK), which its owner keeps for as long as it holds the lock",
                );
            }
            None => {
                return Judgement::new(
                    Verdict::Unknown,
                    "/proc/locks lists no kernel lock on it, but the kernel could not be asked directly (F_OFD_GETLK) to confirm",
                );
            }
        }
        let mut j = Judgement::new(
            Verdict::Stale,
            "no process holds the kernel (OFD) lock that its owner keeps for as long as it holds the lock (/proc/locks has none on this file)",
        )
        .because(format!(
            "the record was written on this boot of this host (boot id {}) and the file is on a local file system ({}): the kernel lock settles it",
            our_boot.unwrap_or("?"),
            c.fs.kind
        ));
        if let (Some(theirs), Some(ours)) = (rec.pid_ns, snap.host.pid_ns)
            && theirs != ours
        {
            j.evidence.push(format!(
                "the owner ran in another PID namespace (pid:[{theirs}]); the kernel lock covers every namespace"
            ));
        }
        return j;
    }

    let Some(pid) = rec.pid else {
        return Judgement::new(
            Verdict::Unknown,
            "the owner record has no valid pid (missing, or not an integer)",
        );
    };
    let claim = PidClaim {
        pid,
        hostname: rec.hostname.as_deref(),
        boot_id: rec.boot_id.as_deref(),
        written_ms: rec.created_ms.or(Some(c.mtime_ms())),
        expect: &[],
        start_ticks: rec.start_time,
        pid_ns: rec.pid_ns,
        fs: Some(c.fs),
        file: Some((c.path, c.meta)),
        ..PidClaim::default()
    };
    let mut j = judge_pid(&claim, snap);
    if rec.format == RecordFormat::Engine && !rec.kernel_lock {
        j.evidence.push(
            "its owner keeps no kernel lock on it (file system without OFD locks, or fallback forced): judged by its PID"
                .into(),
        );
    }
    match j.verdict {
        Verdict::Stale => {
            let writers = writers(snap, key);
            if !writers.is_empty() {
                let mut live = Judgement::new(
                    Verdict::Live,
                    format!(
                        "{} the lock file open for writing: it holds the owner's descriptor",
                        who(&writers, "has", "have")
                    ),
                );
                live.evidence.push(format!(
                    "the owner itself is gone ({})",
                    j.evidence.first().map(String::as_str).unwrap_or("")
                ));
                live.process = writers
                    .iter()
                    .find_map(|h| snap.pid(h.pid).facts().map(|f| snap.process_info(f)));
                live.holders = writers;
                return live;
            }
        }
        Verdict::Foreign if rec.has_heartbeat() => {
            let last = rec.heartbeat_ms.unwrap_or(i64::MIN).max(c.mtime_ms());
            let interval_ms = rec.heartbeat_secs.map(|s| (s * 3000.0) as i64).unwrap_or(0);
            let window_ms = Windows::ms(windows.heartbeat_secs).max(interval_ms);
            let age_ms = snap.taken_ms - last;
            if age_ms > window_ms {
                let writers = writers(snap, key);
                if writers.is_empty() {
                    let mut stale = Judgement::new(
                        Verdict::Stale,
                        format!(
                            "no heartbeat since {} ({} s ago), longer than the {} s window",
                            fmt_ms(last),
                            age_ms / 1000,
                            window_ms / 1000
                        ),
                    );
                    stale.evidence.push(
                        "nothing on this host holds a kernel lock on it or has it open for writing"
                            .into(),
                    );
                    stale.evidence.append(&mut j.evidence);
                    return stale;
                }
                j.evidence.push(format!(
                    "its heartbeat is {} s old, but {} it open for writing",
                    age_ms / 1000,
                    who(&writers, "has", "have")
                ));
                j.holders = writers;
            } else {
                j.evidence.push(format!(
                    "last heartbeat {} ({} s ago, window {} s)",
                    fmt_ms(last),
                    age_ms.max(0) / 1000,
                    window_ms / 1000
                ));
            }
        }
        _ => {}
    }
    j
}

/// The process behind a held lock: the record's owner when it is alive and is the same
/// process (same start time), else the first identified holder.
fn live_process(
    rec: &ParsedRecord,
    holders: &[Holder],
    snap: &Snapshot,
) -> Option<crate::verdict::ProcessInfo> {
    let owner_alive = rec.pid.and_then(|p| i32::try_from(p).ok()).and_then(|p| {
        if !holders.iter().any(|h| h.pid == p) {
            return None;
        }
        match snap.pid(p) {
            PidState::Alive(f) if rec.start_time.is_none_or(|t| t == f.start_ticks) => {
                Some(snap.process_info(&f))
            }
            _ => None,
        }
    });
    owner_alive.or_else(|| {
        holders
            .iter()
            .filter(|h| h.pid > 0)
            .find_map(|h| match snap.pid(h.pid) {
                PidState::Alive(f) => Some(snap.process_info(&f)),
                _ => None,
            })
    })
}

fn owner_of(rec: &ParsedRecord, c: &Candidate<'_>, snap: &Snapshot) -> Owner {
    use std::os::unix::fs::MetadataExt;
    let detail = match rec.format {
        RecordFormat::Zero => "Zero securefile lock record".to_string(),
        RecordFormat::Engine => {
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
        }
    };
    Owner {
        pid: rec.pid,
        hostname: rec.hostname.clone(),
        user: snap.user_name(c.meta.uid()),
        created_at: rec.created_ms.map(fmt_ms),
        detail: Some(detail),
    }
}

/// "process 42 (sleep) holds an OFD lock on the file", for one holder or several.
fn held_line(holders: &[Holder]) -> String {
    let kinds: Vec<&str> = {
        let mut k: Vec<&str> = holders.iter().map(|h| kind_name(h.how)).collect();
        k.dedup();
        k
    };
    format!(
        "{} a kernel lock ({}) on the file",
        who(holders, "holds", "hold"),
        kinds.join(", ")
    )
}

fn kind_name(how: HolderHow) -> &'static str {
    match how {
        HolderHow::Ofd => "OFD",
        HolderHow::Posix => "POSIX",
        HolderHow::Flock => "flock",
        HolderHow::Open => "open",
    }
}

/// "process 42 (sleep) has" / "processes 42 (sleep), 43 (sh) have".
fn who(holders: &[Holder], one: &str, many: &str) -> String {
    let names: Vec<String> = holders
        .iter()
        .map(|h| match (h.pid, &h.name) {
            (p, _) if p <= 0 => "an unidentified process".to_string(),
            (p, Some(n)) => format!("{p} ({n})"),
            (p, None) => p.to_string(),
        })
        .collect();
    match names.as_slice() {
        [only] if only.starts_with("an ") => format!("{only} {one}"),
        [only] => format!("process {only} {one}"),
        _ => format!("processes {} {many}", names.join(", ")),
    }
}

/// Processes on this host that have the file open for writing (read-only openers, such as a
/// scanner or another acquirer reading the record, are no evidence of an owner).
fn writers(snap: &Snapshot, key: FileKey) -> Vec<Holder> {
    snap.openers(key)
        .into_iter()
        .filter(|h| open_for_writing(h.pid, key))
        .collect()
}

#[cfg(target_os = "linux")]
fn open_for_writing(pid: i32, key: FileKey) -> bool {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return false;
    };
    for fd in fds.flatten() {
        let Ok(meta) = std::fs::metadata(fd.path()) else {
            continue;
        };
        if FileKey::of(&meta) != key {
            continue;
        }
        let info = std::fs::read_to_string(format!(
            "/proc/{pid}/fdinfo/{}",
            fd.file_name().to_string_lossy()
        ))
        .unwrap_or_default();
        let flags = info
            .lines()
            .find_map(|l| l.strip_prefix("flags:"))
            .and_then(|v| u32::from_str_radix(v.trim(), 8).ok());
        if flags.is_some_and(|f| f & libc::O_ACCMODE as u32 != libc::O_RDONLY as u32) {
            return true;
        }
    }
    false
}

#[cfg(not(target_os = "linux"))]
fn open_for_writing(_pid: i32, _key: FileKey) -> bool {
    false
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use crate::probe::FsInfo;
    use std::path::Path;

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
        let mut rec = crate::engine::record::Record::for_this_process(true, None);
        rec.pid_ns = Some(1);
        std::fs::write(&p, rec.to_line()).unwrap();
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
        assert_eq!(j.verdict, Verdict::Stale, "{j:?}");
        let unreadable = Snapshot::with_kernel_locks(KernelLocks::default());
        let j = Locksmith.judge(&c, &unreadable, &Windows::default());
        assert_eq!(j.verdict, Verdict::Foreign, "{j:?}");
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
            assert_eq!(j.verdict, Verdict::Unknown, "{bytes:?}: {j:?}");
        }
        let wrong_pid = br#"{"tool":"locksmith/1","pid":"1234","hostname":"h"}"#;
        let j = judge_bytes(&p, wrong_pid, &local());
        assert_eq!(j.verdict, Verdict::Unknown, "{j:?}");
    }

    #[test]
    fn our_kernel_without_kernel_lock_is_stale_and_our_live_pid_without_it_is_live() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.lock");
        let snap = Snapshot::take();
        let mut rec = crate::engine::record::Record::for_this_process(true, None);
        // Our own (live) PID, but a record that claims an OFD lock nobody holds: the kernel
        // lock settles it, so it is stale even though the PID is alive.
        let j = judge_bytes(&p, &rec.to_line(), &local());
        assert_eq!(j.verdict, Verdict::Stale, "{j:?}");
        assert_eq!(
            j.owner.as_ref().unwrap().pid,
            Some(std::process::id() as i64)
        );
        // The same record on a network file system is judged by its PID: alive.
        let nfs = FsInfo::new("nfs", true);
        let j = judge_bytes(&p, &rec.to_line(), &nfs);
        assert_eq!(j.verdict, Verdict::Live, "{j:?}");
        // A fallback record (no kernel lock) of a live process: live.
        rec.kernel_lock = false;
        let j = judge_bytes(&p, &rec.to_line(), &local());
        assert_eq!(j.verdict, Verdict::Live, "{j:?}");
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
        assert_eq!(j.verdict, Verdict::Live, "{j:?}");
        assert!(j.owner.unwrap().detail.unwrap().contains("Zero"));
    }
}
