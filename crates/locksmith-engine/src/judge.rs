//! The engine's own judge ([`Direct`]) of its lock files (and of Zero's securefile records,
//! which the engine reads too), and the [`Witness`] a program that knows more gives instead.
//!
//! Judging (README: Evidence): a kernel lock held on the file makes it `live`. A record written
//! on this kernel (our boot id) by an owner that keeps an OFD lock, on a local file system, is
//! settled by the kernel lock alone: not held means `stale`, whatever its PID namespace.
//! Everything else goes through the PID rules ([`Direct`]'s `judge_pid`), with two additions:
//! a local process that has the file open for writing (the owner's descriptor, inherited by a
//! child that outlived it) is evidence of life, and an expired heartbeat with nothing here
//! holding the file turns `foreign` into `stale`.
//!
//! Invariants: the time rules (`earlier-boot` by time, `pid-reused` by time,
//! `heartbeat-expired`) are locksmith's own ([`locksmith_sys::time`]), the very functions the
//! scanner's judge calls: they compare a file's ctime (never its mtime, which anyone who may
//! write the file can set), and prove only beyond the margin of the [`Clock`] (how far the
//! wall clock may have stepped since this boot began), read only when a comparison comes to it;
//! where the clock cannot be trusted they prove nothing and the verdict stays `foreign` or
//! `unknown`, saying so. An owner this judge cannot check (another host, another PID
//! namespace) is `foreign`, never `stale`.

use std::cell::OnceCell;
use std::fs::Metadata;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use locksmith_sys::clock::Clock;
use locksmith_sys::fs::{FsInfo, FsKind};
use locksmith_sys::host::Process;
use locksmith_sys::time::{self, Refresh, Refreshed, Timed, fmt_age, fmt_ms};

use super::StaleWindows;
use super::record::Record;
use super::verdict::{Judgement, Owner, Rule, Verdict};

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

    /// The file's mtime in ms since the epoch: what anyone who may write it can set. Shown,
    /// never proof of when anything happened.
    fn mtime_ms(&self) -> i64 {
        super::Identity::of(self.meta).mtime_ms()
    }

    /// The latest the file can have been written, by the clock of then: its ctime, which
    /// nobody can set back.
    fn ctime_ms(&self) -> i64 {
        super::Identity::of(self.meta)
            .ctime_ns
            .div_euclid(1_000_000) as i64
    }

    /// Its last change as far as anyone could make it look (the later of mtime and ctime): a
    /// heartbeat touches both. A later mtime only makes it look fresher.
    fn changed_ms(&self) -> i64 {
        self.mtime_ms().max(self.ctime_ms())
    }

    fn kind(&self) -> &FsKind {
        &self.fs.kind
    }
}

/// Who judges an existing lock file, from a fresh look at the machine every time (set on a
/// lock with [`Lock::witness`](crate::Lock::witness)): the engine's own judge by default, or a
/// program that knows more (holders named from `/proc/locks`, containers, other hosts) and
/// judges the record with its own rules.
///
/// Its `stale` judgements must name the rule that proved them ([`Judgement::stale`]): the
/// engine removes a lock on them as they are, and takes a `stale` that names no rule, or that
/// something keeps ([`Judgement::kept_by`]), for one it may not remove.
pub trait Witness: Send + Sync + std::fmt::Debug {
    /// Judges the lock file now.
    fn judge(&self, file: &LockFile<'_>, windows: &StaleWindows) -> Judgement;
    /// Who holds a kernel lock on the file now, as a person reads it (`pid 42 (flock write,
    /// installer)`); `None` when nobody does. Asked of a lock file whose record may not be read.
    fn kernel_lock_holders(&self, file: &LockFile<'_>) -> Option<String>;
}

/// The engine's own witness: asks the kernel directly about the one file and the one owner
/// being judged (`F_OFD_GETLK` on the file, kill(2) and `/proc/<pid>/stat` for the owner,
/// the descriptors of other processes only when a lock would otherwise be stale). It knows
/// nothing of containers or other hosts: an owner it cannot check is `foreign`, never `stale`.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Direct;

impl Witness for Direct {
    fn judge(&self, file: &LockFile<'_>, windows: &StaleWindows) -> Judgement {
        judge(file, &Look::now(), windows)
    }

    fn kernel_lock_holders(&self, file: &LockFile<'_>) -> Option<String> {
        let held = Look::kernel_holders(file);
        (!held.is_empty()).then(|| {
            held.iter()
                .map(|h| format!("a process not visible here ({})", h.how.to_lowercase()))
                .collect::<Vec<_>>()
                .join(", ")
        })
    }
}

/// How much of a lock file the judge reads: a record is a few hundred bytes.
const RECORD_PREFIX: usize = 4096;

/// Inode of the initial PID namespace (`PROC_PID_INIT_INO`): the host's, outside any container.
const INITIAL_PID_NS: u64 = locksmith_sys::host::HOST_PID_NS;

/// The largest PID Linux hands out (`PID_MAX_LIMIT` on 64-bit systems).
const PID_MAX_LIMIT: i64 = 1 << 22;

/// What [`Direct`] found out when it looked, and what it reads only when a rule needs it (the
/// boot time and the clock, for the time rules).
#[derive(Debug)]
struct Look {
    hostname: String,
    boot_id: Option<String>,
    pid_ns: Option<u64>,
    taken_ms: i64,
    boot_time: OnceCell<Option<i64>>,
    clock: OnceCell<Clock>,
}

/// A process seen holding the file: a kernel lock's holder (which an OFD lock does not name:
/// `pid` 0) or a process that has it open for writing.
#[derive(Debug, Clone)]
struct Seen {
    pid: i32,
    name: Option<String>,
    how: &'static str,
}

impl Look {
    fn now() -> Look {
        Look {
            hostname: locksmith_sys::host::hostname(),
            boot_id: locksmith_sys::host::boot_id(),
            pid_ns: locksmith_sys::host::pid_ns_of("self"),
            taken_ms: jiff::Timestamp::now().as_millisecond(),
            boot_time: OnceCell::new(),
            clock: OnceCell::new(),
        }
    }

    fn boot_time(&self) -> Option<i64> {
        *self.boot_time.get_or_init(locksmith_sys::host::boot_time)
    }

    /// The clock, read the first time a time rule comes to it.
    fn clock(&self) -> Clock {
        self.clock
            .get_or_init(|| Clock::read(self.boot_time()))
            .clone()
    }

    /// `F_OFD_GETLK` on the file: a holder that cannot be named (OFD locks carry no PID).
    fn kernel_holders(file: &LockFile<'_>) -> Vec<Seen> {
        match locksmith_sys::locks::held_at(file.path, file.meta.dev(), file.meta.ino()) {
            Some(true) => vec![Seen {
                pid: 0,
                name: None,
                how: "OFD",
            }],
            _ => Vec::new(),
        }
    }

    /// Whether the kernel can be asked about locks at all: without that, finding no holder
    /// proves nothing.
    fn kernel_locks_readable(&self) -> bool {
        cfg!(target_os = "linux")
    }

    /// The processes on this host that have the file open for writing.
    fn writers(file: &LockFile<'_>) -> Vec<Seen> {
        locksmith_sys::host::writers(file.meta.dev(), file.meta.ino())
            .into_iter()
            .map(|pid| Seen {
                pid,
                name: locksmith_sys::host::comm(pid),
                how: "open",
            })
            .collect()
    }

    /// A process of this host, when it exists (a zombie only when not `alive`): its PID and
    /// command line, and its start time in clock ticks since boot.
    fn process(pid: i32, alive: bool) -> Option<(i32, String, u64)> {
        let start_ticks = match locksmith_sys::host::process(pid) {
            Process::Running { start_ticks } => start_ticks,
            Process::Exited if !alive => 0,
            _ => return None,
        };
        let cmd = locksmith_sys::host::cmdline(pid);
        let command = if cmd.is_empty() {
            locksmith_sys::host::comm(pid).unwrap_or_default()
        } else {
            cmd.join(" ")
        };
        Some((pid, command, start_ticks))
    }
}

/// The judgement, with the process that holds the lock now.
fn held_by(mut j: Judgement, process: Option<(i32, String, u64)>) -> Judgement {
    if let Some((pid, command, _)) = process {
        j.holder_pid = Some(pid);
        j.holder_command = (!command.is_empty()).then_some(command);
    }
    j
}

/// Judges a lock file with what `look` finds: the verdict, its evidence and the owner the
/// record names.
fn judge(file: &LockFile<'_>, look: &Look, windows: &StaleWindows) -> Judgement {
    let record = if file.regular() {
        Record::parse(file.content)
    } else {
        None
    };
    let Some(rec) = record else {
        return unparsed(file, look);
    };
    let j = judge_record(&rec, file, look, windows);
    j.with_owner(owner_of(&rec))
}

fn unparsed(c: &LockFile<'_>, look: &Look) -> Judgement {
    let why = if !c.regular() {
        "not a regular file, so not a locksmith lock file"
    } else if c.content.is_empty() {
        "the file is empty: there is no owner record to check"
    } else if !c.complete {
        "the file is too large to be a locksmith owner record"
    } else {
        "the content is not a locksmith owner record (a JSON object with pid, hostname, boot_id, ...)"
    };
    let holders = Look::kernel_holders(c);
    let mut unproven = None;
    // An empty file from an earlier boot: a record that never reached the disk before a power
    // loss (the name was linked, the data not yet written). Nobody in this boot can own it.
    if c.regular()
        && c.content.is_empty()
        && holders.is_empty()
        && look.kernel_locks_readable()
        && !c.fs.network
    {
        match time::written_before_boot(c.ctime_ms(), look.boot_time(), Some(&c.fs), || {
            look.clock()
        }) {
            Timed::Proven { line, .. } => {
                return Judgement::stale(
                    Rule::EarlierBoot,
                    "the file is empty and no process holds a kernel lock on it (F_OFD_GETLK)",
                )
                .because(format!(
                    "{line}: an owner record lost in a crash, owned by nobody in this boot"
                ))
                .because(look.clock().how);
            }
            Timed::Unproven(line) => unproven = Some(line),
            Timed::No => {}
        }
    }
    let mut j = Judgement::new(Verdict::Unknown, why);
    if !holders.is_empty() {
        j.evidence
            .push(format!("{} (F_OFD_GETLK)", held_line(&holders)));
    }
    j.evidence.extend(unproven);
    j
}

fn judge_record(rec: &Record, c: &LockFile<'_>, look: &Look, windows: &StaleWindows) -> Judgement {
    let our_boot = look.boot_id.as_deref();
    let same_kernel = rec.boot_id.is_some() && rec.boot_id.as_deref() == our_boot;

    let holders = Look::kernel_holders(c);
    if !holders.is_empty() {
        let mut j = Judgement::new(
            Verdict::Live,
            format!("{} (F_OFD_GETLK)", held_line(&holders)),
        );
        if rec.kernel_lock && same_kernel {
            j.evidence.push(
                "its owner keeps that lock for as long as it holds the lock, and wrote the record on this boot of this host"
                    .into(),
            );
        }
        return held_by(j, live_process(rec, &holders));
    }

    if rec.kernel_lock && same_kernel && !c.fs.network && look.kernel_locks_readable() {
        // The kernel was asked once already, while others lock and unlock: "no kernel lock"
        // is asked of it once more before it proves anything.
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
                    "no kernel lock is seen on it, but the kernel could not be asked directly (F_OFD_GETLK) to confirm",
                );
            }
        }
        let mut j = Judgement::stale(
            Rule::KernelLockReleased,
            "no process holds the kernel (OFD) lock that its owner keeps for as long as it holds the lock (F_OFD_GETLK)",
        )
        .because(format!(
            "the record was written on this boot of this host (boot id {}) and the file is on a local file system ({}): the kernel lock settles it",
            our_boot.unwrap_or("?"),
            c.kind()
        ));
        if let (Some(theirs), Some(ours)) = (rec.pid_ns, look.pid_ns)
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
    let mut j = judge_pid(rec, pid, c, look);
    if !rec.from_zero() && !rec.kernel_lock {
        j.evidence.push(
            "its owner keeps no kernel lock on it (file system without OFD locks, or fallback forced): judged by its PID"
                .into(),
        );
    }
    match j.verdict {
        Verdict::Stale => {
            let writers = Look::writers(c);
            if !writers.is_empty() {
                let live = Judgement::new(
                    Verdict::Live,
                    format!(
                        "{} the lock file open for writing: it holds the owner's descriptor",
                        who(&writers, "has", "have")
                    ),
                )
                .because(format!(
                    "the owner itself is gone ({})",
                    j.evidence.first().map(String::as_str).unwrap_or("")
                ));
                let process = writers.iter().find_map(|h| Look::process(h.pid, false));
                return held_by(live, process);
            }
            j
        }
        Verdict::Foreign | Verdict::Unknown if rec.has_heartbeat() => {
            heartbeat(rec, c, look, windows, j)
        }
        _ => j,
    }
}

/// The heartbeat of an owner that the PID rules could not check (`j`: `foreign` or
/// `unknown`), by the time rule of every writer that promises to refresh its lock.
fn heartbeat(
    rec: &Record,
    c: &LockFile<'_>,
    look: &Look,
    windows: &StaleWindows,
    mut j: Judgement,
) -> Judgement {
    // The owner refreshes the record (its heartbeat field) and the file's times.
    let last = rec.heartbeat_ms().unwrap_or(i64::MIN).max(c.changed_ms());
    // Three of the owner's own intervals, if that is longer than the window.
    let interval_ms = rec
        .heartbeat_interval
        .map(|d| (d.as_secs_f64() * 3000.0) as i64)
        .unwrap_or(0);
    let window_ms = i64::try_from(windows.heartbeat.as_millis())
        .unwrap_or(i64::MAX)
        .max(interval_ms);
    let promise = format!(
        "its owner refreshes a heartbeat while it holds the lock (last {})",
        fmt_ms(last)
    );
    let refresh = Refresh {
        last_ms: last,
        window_ms,
        fresh_ms: None,
        fs: &c.fs,
        promise: &promise,
    };
    let age_ms = match refresh.at(look.taken_ms, || look.clock()) {
        Refreshed::Fresh(line) | Refreshed::Unproven(line) | Refreshed::MayBeFresh(line) => {
            j.evidence.push(line);
            return j;
        }
        Refreshed::Overdue { age_ms } => age_ms,
    };
    let writers = Look::writers(c);
    if !writers.is_empty() {
        let live = Judgement::new(
            Verdict::Live,
            format!(
                "not refreshed for {}, but {} it open for writing",
                fmt_age(age_ms),
                who(&writers, "has", "have")
            ),
        );
        let process = writers.iter().find_map(|h| Look::process(h.pid, false));
        return held_by(live, process);
    }
    match refresh.expired(age_ms, || look.clock()) {
        Ok(e) => {
            let mut stale = Judgement::stale(Rule::HeartbeatExpired, e.line)
                .because(
                    "nothing on this host holds a kernel lock on it or has it open for writing",
                )
                .because(e.clock_line);
            stale.evidence.append(&mut j.evidence);
            stale
        }
        Err(line) => {
            j.evidence.push(line);
            j
        }
    }
}

/// The PID rules for the record's owner: its host, boot, PID namespace, and the process with
/// its PID here.
fn judge_pid(rec: &Record, pid: i64, file: &LockFile<'_>, look: &Look) -> Judgement {
    if pid <= 0 || pid > PID_MAX_LIMIT {
        return Judgement::new(
            Verdict::Unknown,
            format!("PID {pid} is not a valid process id"),
        );
    }
    let pid = pid as i32;
    let ours = look.boot_id.as_deref();
    let same_kernel = matches!((rec.boot_id.as_deref(), ours), (Some(a), Some(b)) if a == b);
    if !same_kernel
        && let Some(h) = rec.hostname.as_deref()
        && h != look.hostname
    {
        return Judgement::new(
            Verdict::Foreign,
            format!(
                "owner host {h:?} is not this host {:?}: its PID {pid} cannot be checked here",
                look.hostname
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
    // When the lock was written, for the time rules: the latest it can have been (the
    // record's own time, if not later than the ctime).
    let written_ms = time::latest_write_ms(rec.created_ms(), file.ctime_ms());
    let mut unproven = Vec::new();
    match time::written_before_boot(written_ms, look.boot_time(), Some(&file.fs), || {
        look.clock()
    }) {
        Timed::Proven { line, .. } => {
            return Judgement::stale(Rule::EarlierBoot, line).because(look.clock().how);
        }
        Timed::Unproven(line) => unproven.push(line),
        Timed::No => {}
    }
    if let (Some(theirs), Some(ours)) = (rec.pid_ns, look.pid_ns)
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
    let pid_space_is_ours = look.pid_ns.is_none_or(|ns| ns == INITIAL_PID_NS)
        || (rec.pid_ns.is_some() && rec.pid_ns == look.pid_ns);
    let mut j = match locksmith_sys::host::process(pid) {
        Process::Absent if !pid_space_is_ours => Judgement::new(
            Verdict::Foreign,
            format!(
                "no process {pid} in our PID namespace, but we run inside one that is not the host's and the record does not name it: PID {pid} may belong to a process outside it"
            ),
        ),
        Process::Absent => Judgement::stale(
            Rule::PidGone,
            format!("no process {pid} on this host (kill({pid}, 0): ESRCH)"),
        ),
        Process::Exited => Judgement::stale(
            Rule::PidGone,
            format!("process {pid} is a zombie: it has exited"),
        ),
        Process::Hidden => Judgement::new(
            Verdict::Live,
            format!("process {pid} exists (kill({pid}, 0): EPERM; /proc/{pid} not readable)"),
        ),
        Process::Running { start_ticks } => match rec.start_time {
            Some(t) if t != start_ticks => Judgement::stale(
                Rule::PidReused,
                format!(
                    "process {pid} started at another time (tick {start_ticks} after boot) than the owner that wrote the record (tick {t}): its PID was reused"
                ),
            ),
            Some(_) => alive(pid),
            None => started_after(pid, start_ticks, written_ms, file, look),
        },
    };
    if j.verdict != Verdict::Stale {
        j.evidence.append(&mut unproven);
    }
    j
}

/// A live process with the owner's PID.
fn alive(pid: i32) -> Judgement {
    let j = Judgement::new(
        Verdict::Live,
        format!("process {pid} is alive (kill({pid}, 0) succeeds)"),
    );
    held_by(j, Look::process(pid, true))
}

/// A live process with the owner's PID, for a record that names no start time: reused when it
/// started after the lock was written (by the time rule), else `live`.
fn started_after(
    pid: i32,
    start_ticks: u64,
    written_ms: i64,
    file: &LockFile<'_>,
    look: &Look,
) -> Judgement {
    let Some(start_ms) = locksmith_sys::host::start_ms(start_ticks) else {
        return alive(pid);
    };
    let comm = locksmith_sys::host::comm(pid).unwrap_or_default();
    let written = time::when_written(written_ms, file.mtime_ms(), file.ctime_ms());
    match time::started_after_written(pid, &comm, start_ms, written_ms, &written, || look.clock()) {
        Timed::Proven { line, .. } => {
            Judgement::stale(Rule::PidReused, line).because(look.clock().how)
        }
        Timed::Unproven(line) => alive(pid).because(line),
        Timed::No => alive(pid).because(format!("it started before the lock was {written}")),
    }
}

/// The process behind a held lock: the record's owner when it is alive, is the same process
/// (same start time) and is among the holders, else the first identified holder.
fn live_process(rec: &Record, holders: &[Seen]) -> Option<(i32, String, u64)> {
    let owner_alive = rec.pid.and_then(|p| i32::try_from(p).ok()).and_then(|p| {
        if !holders.iter().any(|h| h.pid == p) {
            return None;
        }
        Look::process(p, true).filter(|(_, _, ticks)| rec.start_time.is_none_or(|t| t == *ticks))
    });
    owner_alive.or_else(|| {
        holders
            .iter()
            .filter(|h| h.pid > 0)
            .find_map(|h| Look::process(h.pid, true))
    })
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
        Rule::EarlierBoot,
        format!(
            "written during an earlier boot of this host (boot id {theirs}; this boot is {ours})"
        ),
    )
}

fn owner_of(rec: &Record) -> Owner {
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
        user: None,
        created_at: rec.created_ms().map(fmt_ms),
        detail: Some(detail),
    }
}

/// "process 42 (sleep) holds a kernel lock (OFD) on the file", for one holder or several.
fn held_line(holders: &[Seen]) -> String {
    let mut kinds: Vec<&str> = holders.iter().map(|h| h.how).collect();
    kinds.dedup();
    format!(
        "{} a kernel lock ({}) on the file",
        who(holders, "holds", "hold"),
        kinds.join(", ")
    )
}

/// "process 42 (sleep) has" / "processes 42 (sleep), 43 (sh) have".
fn who(holders: &[Seen], one: &str, many: &str) -> String {
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
