//! The judge of the engine's own lock files (and of Zero's securefile records, which the engine
//! reads too): one verdict from the owner record and the machine's evidence.
//!
//! Judging (README: Evidence): a kernel lock held on the file makes it `live`. A record written on this
//! kernel (our boot id) by an owner that keeps an OFD lock, on a local file system, is settled
//! by the kernel lock alone: not held means `stale`, whatever its PID namespace. Everything
//! else goes through the PID rules ([`Evidence::judge_pid`]), with two additions: a local
//! process that has the file open for writing (the owner's descriptor, inherited by a child
//! that outlived it) is evidence of life, and an expired heartbeat with no local evidence of
//! life turns `foreign` into `stale`.
//!
//! The evidence comes through [`Evidence`]: the scanner's evidence snapshot (the `locksmith`
//! dialect) and the engine both call this one judge, so they agree by construction.

use std::fs::Metadata;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use locksmith_sys::fs::{FsInfo, FsKind};
use locksmith_sys::host::Process;
use locksmith_sys::time::{before_boot, fmt_ms};

use super::StaleWindows;
use super::record::{ParsedRecord, RecordFormat};
use super::verdict::{Holder, HolderHow, Judgement, Owner, ProcessInfo, Proof, Rule, Verdict};

/// A lock file as the judge sees it: its path, its metadata, the start of its content and
/// the file system it is on.
#[derive(Debug, Clone)]
pub struct LockFile<'a> {
    path: &'a Path,
    meta: &'a Metadata,
    content: &'a [u8],
    complete: bool,
    fs: FsInfo,
}

impl<'a> LockFile<'a> {
    /// The lock file at `path`, as `meta` (its `lstat`) describes it, with `content` read from
    /// its start (`complete`: that is the whole file), on a file system of type `fs_type`
    /// (`ext4`, `nfs`, `fuse.sshfs`, as mountinfo names it); `network`: a file system that
    /// other machines write to, where no kernel lock is trusted. The judge reads at most the
    /// first 4 KiB (a record is a few hundred bytes).
    pub fn new(
        path: &'a Path,
        meta: &'a Metadata,
        content: &'a [u8],
        complete: bool,
        fs_type: &str,
        network: bool,
    ) -> Self {
        LockFile::on(path, meta, content, complete, FsInfo::new(fs_type, network))
    }

    /// [`new`](LockFile::new) with the engine's own description of the file system.
    pub(crate) fn on(
        path: &'a Path,
        meta: &'a Metadata,
        content: &'a [u8],
        complete: bool,
        fs: FsInfo,
    ) -> Self {
        let cut = content.len().min(RECORD_PREFIX);
        LockFile {
            path,
            meta,
            content: &content[..cut],
            complete: complete && content.len() <= RECORD_PREFIX,
            fs,
        }
    }

    /// The lock path.
    pub fn path(&self) -> &'a Path {
        self.path
    }

    /// `lstat` of the path.
    pub fn metadata(&self) -> &'a Metadata {
        self.meta
    }

    /// The start of the content (at most 4 KiB).
    pub fn content(&self) -> &'a [u8] {
        self.content
    }

    /// Whether [`content`](LockFile::content) is the whole file.
    pub fn complete(&self) -> bool {
        self.complete
    }

    /// The file system's type (`ext4`, `nfs`, `fuse.sshfs`).
    pub fn fs_type(&self) -> &str {
        self.fs.kind.as_str()
    }

    /// Whether it is on a network file system (other machines write to it).
    pub fn network(&self) -> bool {
        self.fs.network
    }

    /// Whether it is a regular file (anything else is no engine lock).
    fn regular(&self) -> bool {
        self.meta.is_file()
    }

    /// The file's mtime in ms since the epoch.
    fn mtime_ms(&self) -> i64 {
        super::Identity::of(self.meta).mtime_ms()
    }

    fn kind(&self) -> &FsKind {
        &self.fs.kind
    }
}

/// What the machine says about the owner of a lock, beyond its record: what [`Direct`] hands
/// the engine's judge.
pub(crate) trait Evidence {
    /// This kernel's boot id.
    fn boot_id(&self) -> Option<&str>;
    /// Our PID namespace (the inode of `/proc/self/ns/pid`).
    fn pid_ns(&self) -> Option<u64>;
    /// When the evidence was taken, in ms since the epoch.
    fn taken_ms(&self) -> i64;
    /// The processes holding a kernel lock on the file (empty when none).
    fn kernel_holders(&self, file: &LockFile<'_>) -> Vec<Holder>;
    /// Whether the kernel's table of locks could be read: without it, finding no holder
    /// proves nothing.
    fn kernel_locks_readable(&self) -> bool;
    /// Where [`kernel_holders`](Evidence::kernel_holders) looks, for the evidence lines.
    fn kernel_locks_source(&self) -> &'static str {
        "/proc/locks"
    }
    /// The PID rules (README: Evidence) applied to the record's owner (its pid, host, boot id, start
    /// time, PID namespace).
    fn judge_pid(&self, rec: &ParsedRecord, pid: i64, file: &LockFile<'_>) -> Judgement;
    /// The processes on this host that have the file open for writing.
    fn writers(&self, file: &LockFile<'_>) -> Vec<Holder>;
    /// A process of this host, when it exists: its details and its start time in clock
    /// ticks since boot. `alive`: a zombie does not count.
    fn process(&self, pid: i32, alive: bool) -> Option<(ProcessInfo, u64)>;
    /// The name of a user.
    fn user_name(&self, uid: u32) -> Option<String>;
    /// The evidence line for `file`, written at `written_ms` (ms since the epoch), if it was
    /// written before this host booted.
    fn written_before_boot(&self, written_ms: i64, file: &LockFile<'_>) -> Option<String>;
}

/// Judges a lock file with `ev`: the verdict, its evidence and the owner the record names.
/// This is [`Direct`]'s judge, behind [`Lock::inspect`](crate::Lock::inspect) unless the lock
/// was given another [`Witness`].
pub(crate) fn judge(file: &LockFile<'_>, ev: &dyn Evidence, windows: &StaleWindows) -> Judgement {
    let record = if file.regular() {
        ParsedRecord::parse(file.content)
    } else {
        None
    };
    let Some(rec) = record else {
        return unparsed(file, ev);
    };
    let mut j = judge_record(&rec, file, ev, windows);
    j.owner = Some(owner_of(&rec, file, ev));
    j
}

fn unparsed(c: &LockFile<'_>, ev: &dyn Evidence) -> Judgement {
    let why = if !c.regular() {
        "not a regular file, so not a locksmith lock file"
    } else if c.content.is_empty() {
        "the file is empty: there is no owner record to check"
    } else if !c.complete {
        "the file is too large to be a locksmith owner record"
    } else {
        "the content is not a locksmith owner record (a JSON object with pid, hostname, boot_id, ...)"
    };
    let holders = ev.kernel_holders(c);
    // An empty file from an earlier boot: a record that never reached the disk before a power
    // loss (the name was linked, the data not yet written). Nobody in this boot can own it.
    if c.regular()
        && c.content.is_empty()
        && holders.is_empty()
        && ev.kernel_locks_readable()
        && !c.fs.network
        && let Some(line) = ev.written_before_boot(c.mtime_ms(), c)
    {
        return Judgement::stale(
            Proof::by(Rule::EarlierBoot)
                .fact("written", fmt_ms(c.mtime_ms()))
                .fact("fs", c.fs_type()),
            format!(
                "the file is empty and no process holds a kernel lock on it ({})",
                ev.kernel_locks_source()
            ),
        )
        .because(format!(
            "{line}: an owner record lost in a crash, owned by nobody in this boot"
        ));
    }
    let mut j = Judgement::new(Verdict::Unknown, why);
    if !holders.is_empty() {
        j.evidence.push(format!(
            "{} ({})",
            held_line(&holders),
            ev.kernel_locks_source()
        ));
        j.holders = holders;
    }
    j
}

fn judge_record(
    rec: &ParsedRecord,
    c: &LockFile<'_>,
    ev: &dyn Evidence,
    windows: &StaleWindows,
) -> Judgement {
    let our_boot = ev.boot_id();
    let same_kernel = rec.boot_id.is_some() && rec.boot_id.as_deref() == our_boot;

    let holders = ev.kernel_holders(c);
    if !holders.is_empty() {
        let mut j = Judgement::new(
            Verdict::Live,
            format!("{} ({})", held_line(&holders), ev.kernel_locks_source()),
        );
        if rec.kernel_lock && same_kernel {
            j.evidence.push(
                "its owner keeps that lock for as long as it holds the lock, and wrote the record on this boot of this host"
                    .into(),
            );
        }
        j.process = live_process(rec, &holders, ev);
        j.holders = holders;
        return j;
    }

    if rec.kernel_lock && same_kernel && !c.fs.network && ev.kernel_locks_readable() {
        // `/proc/locks` was read while others lock and unlock, and a read can miss an entry:
        // "no kernel lock" is asked of the kernel once more before it proves anything.
        match locksmith_sys::locks::held_at(c.path, c.meta.dev(), c.meta.ino()) {
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
        let mut j = Judgement::stale(
            Proof::by(Rule::KernelLockReleased)
                .fact("file", c.path.to_string_lossy())
                .fact("lock", "ofd")
                .fact("checked", "F_OFD_GETLK")
                .fact("boot_id", our_boot.unwrap_or("?"))
                .fact("fs", c.fs_type()),
            "no process holds the kernel (OFD) lock that its owner keeps for as long as it holds the lock (/proc/locks has none on this file)",
        )
        .because(format!(
            "the record was written on this boot of this host (boot id {}) and the file is on a local file system ({}): the kernel lock settles it",
            our_boot.unwrap_or("?"),
            c.kind()
        ));
        if let (Some(theirs), Some(ours)) = (rec.pid_ns, ev.pid_ns())
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
    let mut j = ev.judge_pid(rec, pid, c);
    if rec.format == RecordFormat::Engine && !rec.kernel_lock {
        j.evidence.push(
            "its owner keeps no kernel lock on it (file system without OFD locks, or fallback forced): judged by its PID"
                .into(),
        );
    }
    match j.verdict {
        Verdict::Stale => {
            let writers = ev.writers(c);
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
                    .find_map(|h| ev.process(h.pid, false).map(|(p, _)| p));
                live.holders = writers;
                return live;
            }
        }
        Verdict::Foreign if rec.has_heartbeat() => {
            let last = rec.heartbeat_ms.unwrap_or(i64::MIN).max(c.mtime_ms());
            // Three of the owner's own intervals, if that is longer than the window.
            let interval_ms = rec
                .heartbeat_interval
                .map(|d| (d.as_secs_f64() * 3000.0) as i64)
                .unwrap_or(0);
            let window_ms = i64::try_from(windows.heartbeat.as_millis())
                .unwrap_or(i64::MAX)
                .max(interval_ms);
            let age_ms = ev.taken_ms() - last;
            if age_ms > window_ms {
                let writers = ev.writers(c);
                if writers.is_empty() {
                    let mut stale = Judgement::stale(
                        Proof::by(Rule::HeartbeatExpired)
                            .fact("last_beat", fmt_ms(last))
                            .fact("age_s", age_ms / 1000)
                            .fact("window_s", window_ms / 1000),
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
fn live_process(rec: &ParsedRecord, holders: &[Holder], ev: &dyn Evidence) -> Option<ProcessInfo> {
    let owner_alive = rec.pid.and_then(|p| i32::try_from(p).ok()).and_then(|p| {
        if !holders.iter().any(|h| h.pid == p) {
            return None;
        }
        ev.process(p, true)
            .filter(|(_, ticks)| rec.start_time.is_none_or(|t| t == *ticks))
            .map(|(info, _)| info)
    });
    owner_alive.or_else(|| {
        holders
            .iter()
            .filter(|h| h.pid > 0)
            .find_map(|h| ev.process(h.pid, true).map(|(info, _)| info))
    })
}

fn owner_of(rec: &ParsedRecord, c: &LockFile<'_>, ev: &dyn Evidence) -> Owner {
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
        user: ev.user_name(c.meta.uid()),
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

/// How much of a lock file the judge reads: a record is a few hundred bytes.
const RECORD_PREFIX: usize = 4096;

/// Who judges an existing lock file, from a fresh look at the machine every time (set on a
/// lock with [`Lock::witness`](crate::Lock::witness)): the engine's own [`Direct`], or a
/// program that knows more (holders named from `/proc/locks`, containers, other hosts) and
/// judges the record with its own rules. Its `stale` judgements must carry the
/// [`Proof`](crate::verdict::Proof) of a rule: the engine acts on them as they are.
pub trait Witness: Send + Sync + std::fmt::Debug {
    /// Judges the lock file now.
    fn judge(&self, file: &LockFile<'_>, windows: &StaleWindows) -> Judgement;
    /// The processes holding a kernel lock on the file now (empty when none).
    fn kernel_holders(&self, file: &LockFile<'_>) -> Vec<Holder>;
}

/// The engine's own witness: asks the kernel directly about the one file and the one owner
/// being judged (`F_OFD_GETLK` on the file, kill(2) and `/proc/<pid>/stat` for the owner,
/// the descriptors of other processes only when a lock would otherwise be stale). It knows
/// nothing of containers or other hosts: an owner it cannot check is `foreign`, never `stale`.
/// A program that links the scanner too can give the engine the scanner's richer evidence
/// instead ([`Lock::witness`](crate::Lock::witness)).
#[derive(Debug, Clone, Copy, Default)]
pub struct Direct;

impl Direct {
    fn look(&self) -> DirectEvidence {
        DirectEvidence {
            hostname: locksmith_sys::host::hostname(),
            boot_id: locksmith_sys::host::boot_id(),
            pid_ns: locksmith_sys::host::pid_ns_of("self"),
            taken_ms: jiff::Timestamp::now().as_millisecond(),
        }
    }
}

impl Witness for Direct {
    fn judge(&self, file: &LockFile<'_>, windows: &StaleWindows) -> Judgement {
        judge(file, &self.look(), windows)
    }

    fn kernel_holders(&self, file: &LockFile<'_>) -> Vec<Holder> {
        self.look().kernel_holders(file)
    }
}

/// What [`Direct`] found out when it looked.
#[derive(Debug, Clone)]
struct DirectEvidence {
    hostname: String,
    boot_id: Option<String>,
    pid_ns: Option<u64>,
    taken_ms: i64,
}

/// The PID rule for a record written by another kernel (its boot id `theirs` is not this
/// kernel's `ours`) that names no other host: an earlier boot of this host, so `stale`; unless
/// it names no host at all and lies on a network file system, where another machine may have
/// written it: `foreign`.
fn another_boot(theirs: &str, ours: &str, names_host: bool, network_fs: bool) -> Judgement {
    if !names_host && network_fs {
        return Judgement::new(
            Verdict::Foreign,
            format!(
                "written by another kernel (boot id {theirs}) on a network file system, naming no host"
            ),
        );
    }
    Judgement::stale(
        Proof::by(Rule::EarlierBoot)
            .fact("boot_id", theirs)
            .fact("this_boot_id", ours),
        format!(
            "written during an earlier boot of this host (boot id {theirs}; this boot is {ours})"
        ),
    )
}

/// Inode of the initial PID namespace (`PROC_PID_INIT_INO`): the host's, outside any container.
const INITIAL_PID_NS: u64 = 0xEFFF_FFFC;

/// The largest PID Linux hands out (`PID_MAX_LIMIT` on 64-bit systems).
const PID_MAX_LIMIT: i64 = 1 << 22;

impl Evidence for DirectEvidence {
    fn boot_id(&self) -> Option<&str> {
        self.boot_id.as_deref()
    }

    fn pid_ns(&self) -> Option<u64> {
        self.pid_ns
    }

    fn taken_ms(&self) -> i64 {
        self.taken_ms
    }

    /// `F_OFD_GETLK` on the file: a holder that cannot be named (OFD locks carry no PID).
    fn kernel_holders(&self, file: &LockFile<'_>) -> Vec<Holder> {
        match locksmith_sys::locks::held_at(file.path, file.meta.dev(), file.meta.ino()) {
            Some(true) => vec![Holder {
                how: HolderHow::Ofd,
                ..Holder::open(0, None)
            }],
            _ => Vec::new(),
        }
    }

    fn kernel_locks_readable(&self) -> bool {
        cfg!(target_os = "linux")
    }

    fn kernel_locks_source(&self) -> &'static str {
        "F_OFD_GETLK"
    }

    fn judge_pid(&self, rec: &ParsedRecord, pid: i64, file: &LockFile<'_>) -> Judgement {
        if pid <= 0 || pid > PID_MAX_LIMIT {
            return Judgement::new(
                Verdict::Unknown,
                format!("PID {pid} is not a valid process id"),
            );
        }
        let pid = pid as i32;
        let ours = self.boot_id.as_deref();
        let same_kernel = matches!((rec.boot_id.as_deref(), ours), (Some(a), Some(b)) if a == b);
        if !same_kernel
            && let Some(h) = rec.hostname.as_deref()
            && h != self.hostname
        {
            return Judgement::new(
                Verdict::Foreign,
                format!(
                    "owner host {h:?} is not this host {:?}: its PID {pid} cannot be checked here",
                    self.hostname
                ),
            );
        }
        if let (Some(theirs), Some(ours)) = (rec.boot_id.as_deref(), ours)
            && theirs != ours
        {
            return another_boot(theirs, ours, rec.hostname.is_some(), file.fs.network);
        }
        if file.fs.network && rec.hostname.is_none() && !same_kernel {
            return Judgement::new(
                Verdict::Foreign,
                format!(
                    "on a network file system and naming no host: PID {pid} may belong to another machine"
                ),
            );
        }
        if let (Some(theirs), Some(ours)) = (rec.pid_ns, self.pid_ns)
            && theirs != ours
        {
            return Judgement::new(
                Verdict::Foreign,
                format!(
                    "owner is in another PID namespace (pid:[{theirs}], ours pid:[{ours}]): PID {pid} cannot be checked here"
                ),
            );
        }
        // ESRCH proves the owner gone only where its PID is numbered like ours.
        let pid_space_is_ours = self.pid_ns.is_none_or(|ns| ns == INITIAL_PID_NS)
            || (rec.pid_ns.is_some() && rec.pid_ns == self.pid_ns);
        match locksmith_sys::host::process(pid) {
            Process::Absent if !pid_space_is_ours => Judgement::new(
                Verdict::Foreign,
                format!(
                    "no process {pid} in our PID namespace, but we run inside one that is not the host's and the record does not name it: PID {pid} may belong to a process outside it"
                ),
            ),
            Process::Absent => Judgement::stale(
                Proof::by(Rule::PidGone)
                    .fact("pid", pid)
                    .fact("seen", "ESRCH"),
                format!("no process {pid} on this host (kill({pid}, 0): ESRCH)"),
            ),
            Process::Exited => Judgement::stale(
                Proof::by(Rule::PidGone)
                    .fact("pid", pid)
                    .fact("seen", "zombie"),
                format!("process {pid} is a zombie: it has exited"),
            ),
            Process::Hidden => Judgement::new(
                Verdict::Live,
                format!("process {pid} exists (kill({pid}, 0): EPERM; /proc/{pid} not readable)"),
            ),
            Process::Running { start_ticks } => match rec.start_time {
                Some(t) if t != start_ticks => Judgement::stale(
                    Proof::by(Rule::PidReused)
                        .fact("pid", pid)
                        .fact("record_start_ticks", t)
                        .fact("process_start_ticks", start_ticks),
                    format!(
                        "process {pid} started at another time (tick {start_ticks} after boot) than the owner that wrote the record (tick {t}): its PID was reused"
                    ),
                ),
                _ => {
                    let mut j = Judgement::new(
                        Verdict::Live,
                        format!("process {pid} is alive (kill({pid}, 0) succeeds)"),
                    );
                    j.process = self.process(pid, true).map(|(p, _)| p);
                    j
                }
            },
        }
    }

    fn writers(&self, file: &LockFile<'_>) -> Vec<Holder> {
        locksmith_sys::host::writers(file.meta.dev(), file.meta.ino())
            .into_iter()
            .map(|pid| Holder::open(pid, locksmith_sys::host::comm(pid)))
            .collect()
    }

    fn process(&self, pid: i32, alive: bool) -> Option<(ProcessInfo, u64)> {
        let start_ticks = match locksmith_sys::host::process(pid) {
            Process::Running { start_ticks } => start_ticks,
            Process::Exited if !alive => 0,
            _ => return None,
        };
        let name = locksmith_sys::host::comm(pid).unwrap_or_default();
        let cmd = locksmith_sys::host::cmdline(pid);
        let info = ProcessInfo {
            pid,
            name,
            cmd,
            ..ProcessInfo::default()
        };
        Some((info, start_ticks))
    }

    fn user_name(&self, _uid: u32) -> Option<String> {
        None
    }

    fn written_before_boot(&self, written_ms: i64, file: &LockFile<'_>) -> Option<String> {
        before_boot(written_ms, locksmith_sys::host::boot_time(), Some(&file.fs))
    }
}
