//! Who waits for a lock, what a process waits for, and the state of a lock's holder.
//!
//! What is proven, and how:
//! - **Kernel locks.** The kernel lists every blocked `flock`/`fcntl` request in `/proc/locks`
//!   (`->` lines, under the lock they wait behind: [`super::KernelLocks::blocked_on`]), with the
//!   waiter's PID (-1 for an OFD request). A waiter's thread shows the call it is blocked in
//!   (`/proc/PID/task/TID/syscall`: `flock(fd, LOCK_EX)`, `fcntl(fd, F_SETLKW|F_OFD_SETLKW,
//!   ...)`), its descriptor names the file (`/proc/PID/fd/FD`), and `wchan` the kernel function
//!   it sleeps in. An OFD request is attributed to its process that way alone.
//! - **GnuPG dotlocks.** An existence lock has no kernel record of its waiters: a waiter
//!   retries from time to time. GnuPG's (libgpg-error's `dotlock.c`) makes a handle file
//!   `.#lk0x<address>.<node>.<pid>` beside the lock when it means to take one, links it to
//!   `<file>.lock` to take it, and between attempts sleeps in `select(0, NULL, NULL, NULL,
//!   &timeout)`. A live process with such a handle here that is not linked to the lock, asleep
//!   in such a `select`, is reported as waiting for the locks held in that directory: its
//!   handle does not say which lock it is for, and that is said too.
//! - Nothing else is claimed: a process polling some other lock file by hand (a shell loop, a
//!   `sleep` between tries) is not told from a process sleeping for any other reason.
//!
//! The kernel does not record when a wait began: a waiter's `started` (when its process
//! started) is the earliest it can have begun waiting.
//!
//! Reading another user's `syscall` needs the right to trace it (root, or its own user where
//! Yama allows): where it cannot be read, a kernel waiter is still listed from `/proc/locks`.

use std::path::{Path, PathBuf};

use super::kernel_locks::FileKey;
use super::{PidState, Snapshot};
use crate::verdict::{ContainerInfo, HolderHow, LockMode};

/// How a waiter waits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitHow {
    Flock,
    Posix,
    Ofd,
    /// Retrying a GnuPG dotlock.
    Dotlock,
}

impl WaitHow {
    pub fn as_str(self) -> &'static str {
        match self {
            WaitHow::Flock => "flock",
            WaitHow::Posix => "posix",
            WaitHow::Ofd => "ofd",
            WaitHow::Dotlock => "dotlock",
        }
    }

    fn of(how: HolderHow) -> Self {
        match how {
            HolderHow::Flock => WaitHow::Flock,
            HolderHow::Ofd => WaitHow::Ofd,
            _ => WaitHow::Posix,
        }
    }
}

/// A process waiting for a lock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Waiter {
    /// `-1` for an OFD request whose process could not be found.
    pub pid: i32,
    pub name: Option<String>,
    pub cmd: Vec<String>,
    pub how: WaitHow,
    /// Whether it asks for an exclusive lock (`None`: not known).
    pub write: Option<bool>,
    /// When its process started, ms since the epoch: it has waited at most since then.
    pub started_ms: Option<i64>,
    /// The call it is blocked in, when it can be read (`flock(3, LOCK_EX)`, with `wchan`).
    pub blocked_in: Option<String>,
    /// How it is known to wait, in words.
    pub evidence: String,
    pub container: Option<ContainerInfo>,
}

/// A thread blocked in a lock call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockedCall {
    pub tid: i32,
    pub how: WaitHow,
    pub fd: i32,
    pub write: Option<bool>,
    /// The file the descriptor names.
    pub key: Option<FileKey>,
    pub path: Option<PathBuf>,
    /// `flock(3, LOCK_EX)`, `fcntl(4, F_SETLKW)`, then `in locks_lock_inode_wait`.
    pub call: String,
}

#[cfg(target_os = "linux")]
mod nr {
    pub const FLOCK: i64 = libc::SYS_flock;
    pub const FCNTL: i64 = libc::SYS_fcntl;
    #[cfg(any(target_arch = "x86_64", target_arch = "x86"))]
    pub const SELECT: Option<i64> = Some(libc::SYS_select);
    #[cfg(not(any(target_arch = "x86_64", target_arch = "x86")))]
    pub const SELECT: Option<i64> = None;
    pub const PSELECT6: i64 = libc::SYS_pselect6;
}

/// The syscall line of a thread: its number and arguments (`None` when it runs, or when it
/// cannot be read).
fn syscall_of(pid: i32, tid: i32) -> Option<(i64, Vec<u64>)> {
    let text =
        locksmith_sys::host::read_proc_text(format!("/proc/{pid}/task/{tid}/syscall")).ok()?;
    parse_syscall(&text)
}

fn parse_syscall(text: &str) -> Option<(i64, Vec<u64>)> {
    let mut it = text.split_whitespace();
    let nr: i64 = it.next()?.parse().ok()?;
    let args = it
        .take(6)
        .map(|a| u64::from_str_radix(a.trim_start_matches("0x"), 16).ok())
        .collect::<Option<Vec<u64>>>()?;
    (args.len() == 6).then_some((nr, args))
}

fn threads(pid: i32) -> Vec<i32> {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .collect()
}

fn wchan(pid: i32, tid: i32) -> Option<String> {
    let w = locksmith_sys::host::read_proc_text(format!("/proc/{pid}/task/{tid}/wchan")).ok()?;
    let w = w.trim();
    (!w.is_empty() && w != "0").then(|| crate::text::truncate(w, 64))
}

/// The thread of `pid` blocked in a lock call, if one is (and it can be read).
#[cfg(target_os = "linux")]
pub fn blocked_call(pid: i32) -> Option<BlockedCall> {
    threads(pid).into_iter().find_map(|tid| {
        let (nr, args) = syscall_of(pid, tid)?;
        let fd = args[0] as i32;
        let (how, write, op) = match nr {
            nr::FLOCK => {
                let op = args[1] as i32;
                // Only a blocking request waits (LOCK_NB returns at once).
                if op & libc::LOCK_NB != 0 {
                    return None;
                }
                let write = op & libc::LOCK_EX != 0;
                let name = if write { "LOCK_EX" } else { "LOCK_SH" };
                (WaitHow::Flock, Some(write), name.to_string())
            }
            nr::FCNTL => {
                let cmd = args[1] as i32;
                let how = match cmd {
                    libc::F_SETLKW => WaitHow::Posix,
                    libc::F_OFD_SETLKW => WaitHow::Ofd,
                    _ => return None,
                };
                let name = if how == WaitHow::Posix {
                    "F_SETLKW"
                } else {
                    "F_OFD_SETLKW"
                };
                (how, None, name.to_string())
            }
            _ => return None,
        };
        let link = PathBuf::from(format!("/proc/{pid}/fd/{fd}"));
        let key = super::fs::known(&link)
            .ok()
            .map(|m| FileKey::from_dev_ino(m.dev, m.ino));
        let path = std::fs::read_link(&link).ok();
        let syscall = if how == WaitHow::Flock {
            "flock"
        } else {
            "fcntl"
        };
        let mut call = format!("{syscall}({fd}, {op})");
        if let Some(w) = wchan(pid, tid) {
            call.push_str(&format!(" in {w}"));
        }
        Some(BlockedCall {
            tid,
            how,
            fd,
            write,
            key,
            path,
            call,
        })
    })
}

#[cfg(not(target_os = "linux"))]
pub fn blocked_call(_pid: i32) -> Option<BlockedCall> {
    None
}

/// Whether some thread of `pid` sleeps in `select`/`pselect6` on no descriptor at all (a pure
/// timed sleep, as GnuPG's dotlock waits between attempts): the call, when it does.
#[cfg(target_os = "linux")]
fn sleeping_in_select(pid: i32) -> Option<String> {
    threads(pid).into_iter().find_map(|tid| {
        let (nr, args) = syscall_of(pid, tid)?;
        let select = Some(nr) == nr::SELECT || nr == nr::PSELECT6;
        let nothing = args[0] == 0 && args[1] == 0 && args[2] == 0 && args[3] == 0;
        (select && nothing).then(|| {
            let name = if nr == nr::PSELECT6 {
                "pselect6"
            } else {
                "select"
            };
            format!("{name}(0, NULL, NULL, NULL, timeout)")
        })
    })
}

#[cfg(not(target_os = "linux"))]
fn sleeping_in_select(_pid: i32) -> Option<String> {
    None
}

impl Waiter {
    fn of(snap: &Snapshot, pid: i32, how: WaitHow, write: Option<bool>, evidence: String) -> Self {
        let facts = snap.pid(pid);
        let f = facts.facts();
        Waiter {
            pid,
            name: f.map(|f| f.comm.clone()),
            cmd: f.map(|f| f.cmdline.clone()).unwrap_or_default(),
            how,
            write,
            started_ms: f.and_then(|f| f.start_ms),
            blocked_in: None,
            evidence,
            container: f.and_then(|f| snap.container_of(f)),
        }
    }
}

/// The processes waiting in the kernel for a lock on the file `key`: its blocked requests in
/// `/proc/locks`, each with the call its process is blocked in when that can be read.
pub fn kernel_waiters(snap: &Snapshot, key: FileKey) -> Vec<Waiter> {
    let mut out: Vec<Waiter> = Vec::new();
    let mut ofd = 0usize;
    for r in snap.kernel_locks().blocked_on(key) {
        let how = WaitHow::of(r.lock.how);
        let behind = r
            .behind
            .map(|p| format!(" behind the lock of process {p}"))
            .unwrap_or_default();
        let Some(pid) = r.lock.pid else {
            ofd += 1;
            continue;
        };
        if out.iter().any(|w| w.pid == pid) {
            continue;
        }
        let evidence = format!(
            "a blocked {} request for a {} lock on this file{behind} (/proc/locks)",
            how.as_str(),
            if r.lock.mode == LockMode::Write {
                "write"
            } else {
                "read"
            }
        );
        let mut w = Waiter::of(
            snap,
            pid,
            how,
            Some(r.lock.mode == LockMode::Write),
            evidence,
        );
        w.blocked_in = blocked_call(pid)
            .filter(|c| c.key.is_none_or(|k| same_file(k, key)))
            .map(|c| c.call);
        out.push(w);
    }
    if ofd > 0 {
        let found = ofd_waiters(key);
        let n = found.len();
        for (pid, call) in found {
            let evidence = format!(
                "blocked in {} on this file, one of the OFD requests /proc/locks lists for it",
                call.call
            );
            let mut w = Waiter::of(snap, pid, WaitHow::Ofd, call.write, evidence);
            w.blocked_in = Some(call.call);
            out.push(w);
        }
        for _ in n..ofd {
            out.push(Waiter {
                pid: -1,
                name: None,
                cmd: Vec::new(),
                how: WaitHow::Ofd,
                write: None,
                started_ms: None,
                blocked_in: None,
                evidence: "a blocked OFD request on this file (/proc/locks), of a process that cannot be seen or read from here".into(),
                container: None,
            });
        }
    }
    out
}

fn same_file(a: FileKey, b: FileKey) -> bool {
    a == b || (a.inode == b.inode && (a.major == 0 || b.major == 0))
}

/// The processes blocked in `fcntl(F_OFD_SETLKW)` on the file `key` (every process's threads
/// are looked at: only when `/proc/locks` shows an OFD request waiting for it).
fn ofd_waiters(key: FileKey) -> Vec<(i32, BlockedCall)> {
    let mut out = Vec::new();
    for pid in locksmith_sys::host::pids() {
        if let Some(c) = blocked_call(pid)
            && c.how == WaitHow::Ofd
            && c.key.is_some_and(|k| same_file(k, key))
        {
            out.push((pid, c));
        }
    }
    out
}

/// A GnuPG dotlock handle: `.#lk0x<address>.<node>.<pid>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DotlockHandle {
    pub name: String,
    pub node: String,
    pub pid: i32,
    pub key: FileKey,
}

/// Parses a handle's file name: (node, pid).
pub fn parse_handle_name(name: &str) -> Option<(String, i32)> {
    let rest = name.strip_prefix(".#lk0x")?;
    let (addr, rest) = rest.split_once('.')?;
    if addr.is_empty() || !addr.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let (node, pid) = rest.rsplit_once('.')?;
    let pid: i32 = pid.parse().ok().filter(|p| *p > 0)?;
    (!node.is_empty()).then(|| (node.to_string(), pid))
}

/// The GnuPG dotlock handles in `dir`.
pub fn dotlock_handles(dir: &Path) -> Vec<DotlockHandle> {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let (node, pid) = parse_handle_name(&name)?;
            let meta = e.metadata().ok()?;
            Some(DotlockHandle {
                name,
                node,
                pid,
                key: FileKey::of_meta(&meta),
            })
        })
        .collect()
}

/// The processes of this host retrying to take a GnuPG dotlock in the directory of `lock`
/// (see the module docs), other than `holder`: each has a handle there that is not linked to
/// `lock`, and sleeps in `select` on no descriptor.
pub fn dotlock_waiters(snap: &Snapshot, lock: &Path, holder: Option<i64>) -> Vec<Waiter> {
    let Some(dir) = lock.parent() else {
        return Vec::new();
    };
    let Ok(meta) = std::fs::symlink_metadata(lock) else {
        return Vec::new();
    };
    let lock_key = FileKey::of_meta(&meta);
    let mut out: Vec<Waiter> = Vec::new();
    for h in dotlock_handles(dir) {
        if h.key == lock_key
            || h.node != snap.host.hostname
            || Some(h.pid as i64) == holder
            || out.iter().any(|w| w.pid == h.pid)
            || !matches!(snap.pid(h.pid), PidState::Alive(_))
        {
            continue;
        }
        let Some(call) = sleeping_in_select(h.pid) else {
            continue;
        };
        let evidence = format!(
            "it has a GnuPG lock handle in this directory ({}), not linked to this lock, and sleeps in {call}, as GnuPG does between attempts to take a lock (the handle does not say which lock of the directory it is for)",
            crate::text::truncate(&h.name, 80)
        );
        let mut w = Waiter::of(snap, h.pid, WaitHow::Dotlock, None, evidence);
        w.blocked_in = Some(call);
        out.push(w);
    }
    out
}

/// What one process waits for: a lock file and how it is known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wait {
    pub path: PathBuf,
    pub how: WaitHow,
    pub evidence: String,
    pub blocked_in: Option<String>,
}

/// What process `pid` waits for: the file of the lock call it is blocked in (or of its
/// blocked requests in `/proc/locks`), else the GnuPG dotlocks of a directory where it keeps
/// a handle while it sleeps between attempts (its working directory, `$GNUPGHOME`, its
/// `~/.gnupg`). Empty when it waits for no lock that can be told.
pub fn waiting_for(snap: &Snapshot, pid: i32) -> Vec<Wait> {
    let mut out = Vec::new();
    if let Some(call) = blocked_call(pid)
        && let Some(path) = call.path.clone()
    {
        out.push(Wait {
            path,
            how: call.how,
            evidence: format!(
                "it is blocked in {} (/proc/{pid}/syscall, thread {})",
                call.call, call.tid
            ),
            blocked_in: Some(call.call),
        });
        return out;
    }
    if !snap.kernel_locks().blocked_requests_of(pid).is_empty() {
        // Listed as waiting, but its descriptors cannot be read: the file by its key alone is
        // found by the scan of its directory, not here.
        return out;
    }
    let Some(call) = sleeping_in_select(pid) else {
        return out;
    };
    for dir in gnupg_dirs(pid) {
        let handles = dotlock_handles(&dir);
        if !handles
            .iter()
            .any(|h| h.pid == pid && h.node == snap.host.hostname)
        {
            continue;
        }
        for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = e.path();
            let is_lock = path.extension().is_some_and(|x| x == "lock");
            let Ok(meta) = e.metadata() else { continue };
            // A lock linked from one of its own handles is held by this process.
            let ours = handles
                .iter()
                .any(|h| h.pid == pid && h.key == FileKey::of_meta(&meta));
            if !is_lock || ours || !meta.is_file() {
                continue;
            }
            out.push(Wait {
                path,
                how: WaitHow::Dotlock,
                evidence: format!(
                    "it has a GnuPG lock handle in {} that is not linked to a lock, and sleeps in {call}, as GnuPG does between attempts to take one",
                    dir.display()
                ),
                blocked_in: Some(call.clone()),
            });
        }
    }
    out
}

/// Where a GnuPG process keeps its dotlocks: its working directory, its `--homedir`,
/// `$GNUPGHOME`, and the `.gnupg` of its `$HOME`.
fn gnupg_dirs(pid: i32) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    let cwd = std::fs::read_link(format!("/proc/{pid}/cwd")).ok();
    if let Some(cwd) = &cwd {
        dirs.push(cwd.clone());
    }
    let cmdline =
        locksmith_sys::host::read_proc(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let args: Vec<String> = cmdline
        .split(|b| *b == 0)
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    for (i, a) in args.iter().enumerate() {
        let dir = match a.strip_prefix("--homedir=") {
            Some(d) => Some(d.to_string()),
            None if a == "--homedir" => args.get(i + 1).cloned(),
            None => None,
        };
        if let Some(d) = dir {
            let d = PathBuf::from(d);
            match &cwd {
                Some(c) if d.is_relative() => dirs.push(c.join(d)),
                _ => dirs.push(d),
            }
        }
    }
    let environ =
        locksmith_sys::host::read_proc(format!("/proc/{pid}/environ")).unwrap_or_default();
    let var = |name: &str| -> Option<PathBuf> {
        let prefix = format!("{name}=");
        environ
            .split(|b| *b == 0)
            .find_map(|kv| kv.strip_prefix(prefix.as_bytes()))
            .map(|v| PathBuf::from(String::from_utf8_lossy(v).into_owned()))
            .filter(|p| p.is_absolute())
    };
    if let Some(g) = var("GNUPGHOME") {
        dirs.push(g);
    }
    if let Some(h) = var("HOME") {
        dirs.push(h.join(".gnupg"));
    }
    dirs.dedup();
    dirs
}

/// What can be seen of a lock's holder that says it will not let go by itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HolderState {
    pub pid: i32,
    /// Start time in clock ticks since boot (what a kill checks again before each signal).
    pub start_ticks: u64,
    pub name: String,
    /// The `stat` state letter.
    pub state: char,
    /// Its exited children it has not reaped: (pid, name).
    pub zombie_children: Vec<(i32, String)>,
    /// CPU time used so far, in clock ticks (user + system).
    pub cpu_ticks: u64,
    /// The kernel function it sleeps in, if any.
    pub wchan: Option<String>,
}

impl HolderState {
    /// Reads the state of process `pid` now (`None`: gone, or unreadable).
    #[cfg(target_os = "linux")]
    pub fn read(pid: i32) -> Option<Self> {
        let stat = super::process::stat_of(pid)?;
        let mut zombie_children = Vec::new();
        for tid in threads(pid) {
            let children =
                locksmith_sys::host::read_proc_text(format!("/proc/{pid}/task/{tid}/children"))
                    .unwrap_or_default();
            for child in children
                .split_whitespace()
                .filter_map(|c| c.parse::<i32>().ok())
            {
                if let Some(cs) = super::process::stat_of(child)
                    && cs.state == 'Z'
                    && !zombie_children.iter().any(|(p, _)| *p == child)
                {
                    zombie_children.push((child, cs.comm));
                }
            }
        }
        Some(HolderState {
            pid,
            start_ticks: stat.starttime,
            name: stat.comm.clone(),
            state: stat.state,
            zombie_children,
            cpu_ticks: stat.utime + stat.stime,
            wchan: wchan(pid, pid),
        })
    }

    #[cfg(not(target_os = "linux"))]
    pub fn read(_pid: i32) -> Option<Self> {
        None
    }

    /// Why it will not let go of its lock by itself, if something shows it: stopped (by a
    /// signal or a debugger), or the parent of children that have exited and that it has not
    /// reaped (a holder like `flock CMD` or `locksmith lock` whose command has ended, but who
    /// has not noticed). `None` otherwise: a holder that is merely asleep proves nothing.
    pub fn trouble(&self) -> Option<String> {
        let who = format!("process {} ({})", self.pid, self.name);
        match self.state {
            'T' => {
                return Some(format!(
                    "{who} is stopped (state T, by SIGSTOP or Ctrl-Z): it holds the lock and will not release it until it is continued (SIGCONT) or killed"
                ));
            }
            't' => {
                return Some(format!(
                    "{who} is stopped by a debugger (state t): it holds the lock until the debugger lets it go on"
                ));
            }
            _ => {}
        }
        if !self.zombie_children.is_empty() {
            let kids: Vec<String> = self
                .zombie_children
                .iter()
                .take(5)
                .map(|(p, n)| format!("{p} ({n})"))
                .collect();
            return Some(format!(
                "{who} has children that have exited and that it has not reaped ({}): the work it holds the lock for may be over, and it is not noticing",
                kids.join(", ")
            ));
        }
        None
    }

    /// `no CPU time used since ...` when it used none between `earlier` (the same process)
    /// and this reading, and sleeps: a fact, not a proof that it hangs.
    pub fn no_progress_since(&self, earlier: &HolderState, secs: f64) -> Option<String> {
        (earlier.pid == self.pid
            && earlier.start_ticks == self.start_ticks
            && earlier.cpu_ticks == self.cpu_ticks
            && matches!(self.state, 'S' | 'D' | 'T' | 't'))
        .then(|| {
            let sleeping = self
                .wchan
                .as_deref()
                .map(|w| format!(", asleep in {w}"))
                .unwrap_or_default();
            format!(
                "process {} ({}) used no CPU time in {secs:.0} s{sleeping}",
                self.pid, self.name
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_syscall_lines() {
        let (nr, args) = parse_syscall(
            "73 0x3 0x2 0x0 0x1b6 0x7ffdabe4f1a0 0x0 0x7ffdabe4f168 0x7f6149ad3897\n",
        )
        .unwrap();
        assert_eq!(nr, 73);
        assert_eq!(args, [3, 2, 0, 0x1b6, 0x7ffdabe4f1a0, 0]);
        assert!(parse_syscall("running\n").is_none());
        assert!(parse_syscall("-1 0x7ffd 0x0\n").is_none());
    }

    #[test]
    fn parses_dotlock_handle_names() {
        assert_eq!(
            parse_handle_name(".#lk0x000055d1c2a3b4c0.box.example.org.4242"),
            Some(("box.example.org".to_string(), 4242))
        );
        assert_eq!(parse_handle_name(".#lk0x1.h.7"), Some(("h".into(), 7)));
        for bad in [
            ".#lk0x.h.7",
            ".#lk0xzz.h.7",
            ".#lk0x1.h.",
            ".#lk0x1..7",
            "pubring.kbx.lock",
        ] {
            assert_eq!(parse_handle_name(bad), None, "{bad}");
        }
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_stopped_holder_and_one_with_an_unreaped_child() {
        let mut stopped = std::process::Command::new("sleep")
            .arg("60")
            .spawn()
            .unwrap();
        let pid = stopped.id() as i32;
        rustix::process::kill_process(
            rustix::process::Pid::from_raw(pid).unwrap(),
            rustix::process::Signal::STOP,
        )
        .unwrap();
        let state = loop {
            let s = HolderState::read(pid).unwrap();
            if s.state == 'T' {
                break s;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        };
        assert!(state.trouble().unwrap().contains("is stopped"), "{state:?}");
        stopped.kill().unwrap();
        stopped.wait().unwrap();

        // This test process: a child that has exited and is not reaped yet.
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let me = std::process::id() as i32;
        let seen = (0..2000).find_map(|_| {
            let s = HolderState::read(me).unwrap();
            if s.zombie_children
                .iter()
                .any(|(p, _)| *p == child.id() as i32)
            {
                return Some(s);
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
            None
        });
        child.wait().unwrap();
        let s = seen.expect("the child became a zombie");
        assert!(s.trouble().unwrap().contains("not reaped"), "{s:?}");
    }
}
