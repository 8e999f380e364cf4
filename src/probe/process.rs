//! One process, probed on demand: does it exist (ESRCH vs EPERM), is it a zombie, when did it
//! start, what is its executable, command line and PID namespace.

use super::host::HostFacts;

/// A process as the process list shows it (for dialects that look for "a git in this repo").
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct ProcSummary {
    pub pid: i32,
    pub name: String,
    #[serde(with = "super::evidence::serde_path::opt")]
    pub exe: Option<std::path::PathBuf>,
    pub cmd: Vec<String>,
    /// Its command line was longer than its bound ([`super::bounds::CMDLINE_BYTES`]): `cmd`
    /// is its start.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cmd_cut: bool,
    #[serde(with = "super::evidence::serde_path::opt")]
    pub cwd: Option<std::path::PathBuf>,
}

/// What we can tell about a PID on this host.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PidState {
    /// `kill(pid, 0)` said ESRCH: no such process.
    Absent,
    /// The process has exited and waits to be reaped: not alive.
    Zombie(ProcFacts),
    /// Alive, with the facts `/proc` gave us.
    Alive(ProcFacts),
    /// `kill(pid, 0)` said EPERM (so it exists) but `/proc/<pid>` is not readable.
    ExistsOpaque,
}

impl PidState {
    pub fn facts(&self) -> Option<&ProcFacts> {
        match self {
            PidState::Alive(f) | PidState::Zombie(f) => Some(f),
            _ => None,
        }
    }
}

/// Facts read from `/proc/<pid>`.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct ProcFacts {
    pub pid: i32,
    /// `comm` (at most 15 bytes).
    pub comm: String,
    /// State letter from `/proc/<pid>/stat` (`R`, `S`, `Z`, ...).
    pub state: char,
    /// Threads in the process (field 20 of `stat`).
    pub threads: i64,
    /// Start time in clock ticks since boot (field 22 of `stat`).
    pub start_ticks: u64,
    /// Start time in milliseconds since the epoch (boot time + start ticks).
    pub start_ms: Option<i64>,
    pub exe: Option<String>,
    pub cmdline: Vec<String>,
    /// Its command line was longer than its bound: `cmdline` is its start.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cmdline_cut: bool,
    pub uid: Option<u32>,
    pub pid_ns: Option<u64>,
    #[serde(with = "super::evidence::serde_path::opt")]
    pub cwd: Option<std::path::PathBuf>,
    /// Parent PID (field 4 of `stat`).
    pub ppid: i32,
    /// A kernel thread (`PF_KTHREAD` in the `stat` flags): no program, no user space, never
    /// the owner of a lock file.
    pub kernel_thread: bool,
}

impl ProcFacts {
    /// A running program, as evidence describes one (tests, perturbations): `pid`, named
    /// `comm`, running `exe`, started at `started_ms` (ms since the epoch) of a host booted at
    /// `boot_ms`.
    pub fn running(pid: i32, comm: &str, exe: &str, boot_ms: i64, started_ms: i64) -> Self {
        ProcFacts {
            pid,
            comm: comm.into(),
            state: 'S',
            threads: 1,
            start_ticks: ((started_ms - boot_ms).max(0) / 10) as u64,
            start_ms: Some(started_ms),
            exe: Some(exe.into()),
            cmdline: vec![exe.into()],
            uid: Some(0),
            ppid: 1,
            ..ProcFacts::default()
        }
    }

    /// Whether the process is one of `names` (compared to comm, the executable's file name and
    /// `argv[0]`'s file name; a name matches as a prefix so `postgres` matches `postgres: ...`,
    /// and so does a name written with a final `*`, as the judge's writer lists are).
    pub fn is_one_of(&self, names: &[&str]) -> bool {
        let names: Vec<&str> = names.iter().map(|n| n.trim_end_matches('*')).collect();
        let base = |s: &str| s.rsplit('/').next().unwrap_or(s).to_string();
        let mut seen = vec![self.comm.clone()];
        if let Some(exe) = &self.exe {
            seen.push(base(exe.trim_end_matches(" (deleted)")));
        }
        if let Some(a0) = self.cmdline.first() {
            seen.push(base(a0));
        }
        seen.iter()
            .any(|s| names.iter().any(|n| s == n || s.starts_with(n)))
    }

    /// A short display name: comm, or the executable's file name.
    pub fn name(&self) -> &str {
        &self.comm
    }
}

/// The highest PID the kernel hands out (`/proc/sys/kernel/pid_max`), 2^22 when unknown.
pub fn pid_max() -> i64 {
    locksmith_sys::host::read_proc_text("/proc/sys/kernel/pid_max")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(1 << 22)
}

/// Probes one PID: `kill(pid, 0)` first (ESRCH is proof of absence, EPERM of existence),
/// then `/proc/<pid>`.
pub fn probe(pid: i32, host: &HostFacts) -> PidState {
    if pid <= 0 {
        return PidState::Absent;
    }
    let Some(p) = rustix::process::Pid::from_raw(pid) else {
        return PidState::Absent;
    };
    match rustix::process::test_kill_process(p) {
        Ok(()) => {}
        Err(rustix::io::Errno::SRCH) => return PidState::Absent,
        Err(_) => {} // EPERM: it exists, we may not signal it.
    }
    match read_facts(pid, host) {
        Some(f) => classify(f),
        None => {
            // Raced with exit, or /proc hides it: ask the kernel once more.
            match rustix::process::test_kill_process(p) {
                Err(rustix::io::Errno::SRCH) => PidState::Absent,
                _ => PidState::ExistsOpaque,
            }
        }
    }
}

/// Alive or zombie. A thread-group leader that called `pthread_exit` shows state `Z` while its
/// other threads run on: the process is alive. Only a `Z`/`X` with no other thread is dead.
pub fn classify(f: ProcFacts) -> PidState {
    if matches!(f.state, 'Z' | 'X') && f.threads <= 1 {
        PidState::Zombie(f)
    } else {
        PidState::Alive(f)
    }
}

/// `PF_KTHREAD` in `include/linux/sched.h`: the task is a kernel thread.
#[cfg(target_os = "linux")]
pub(crate) const PF_KTHREAD: u32 = 0x0020_0000;

/// `/proc/<pid>/stat`, parsed (read whole, [`locksmith_sys::host::read_proc`]).
#[cfg(target_os = "linux")]
pub(crate) fn stat_of(pid: i32) -> Option<procfs::process::Stat> {
    use procfs::FromRead;
    let text = locksmith_sys::host::read_proc(format!("/proc/{pid}/stat")).ok()?;
    procfs::process::Stat::from_read(&text[..]).ok()
}

#[cfg(target_os = "linux")]
fn read_facts(pid: i32, host: &HostFacts) -> Option<ProcFacts> {
    let proc = procfs::process::Process::new(pid).ok()?;
    let stat = stat_of(pid)?;
    let cmd = locksmith_sys::host::cmdline_bounded(pid, super::bounds::CMDLINE_BYTES);
    let start_ms = host
        .boot_time
        .map(|bt| bt * 1000 + (stat.starttime as i64 * 1000) / host.ticks_per_sec.max(1) as i64);
    Some(ProcFacts {
        pid,
        comm: stat.comm.clone(),
        state: stat.state,
        threads: stat.num_threads,
        start_ticks: stat.starttime,
        start_ms,
        exe: proc.exe().ok().map(|p| p.to_string_lossy().into_owned()),
        cmdline: cmd.0,
        cmdline_cut: !cmd.1,
        uid: proc.uid().ok(),
        pid_ns: super::host::pid_ns_of(&pid.to_string()),
        cwd: proc.cwd().ok(),
        ppid: stat.ppid,
        kernel_thread: stat.flags & PF_KTHREAD != 0,
    })
}

#[cfg(not(target_os = "linux"))]
fn read_facts(_pid: i32, _host: &HostFacts) -> Option<ProcFacts> {
    None
}

/// Our own start time in clock ticks since boot.
pub use locksmith_sys::host::own_start_ticks;

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(target_os = "linux")]
    #[test]
    fn probes_self_dead_and_zombie() {
        let host = HostFacts::probe();
        let me = probe(std::process::id() as i32, &host);
        let f = me.facts().expect("own facts");
        assert!(matches!(me, PidState::Alive(_)));
        assert_eq!(Some(f.start_ticks), own_start_ticks());

        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id() as i32;
        // Wait until it has exited but is not reaped: a zombie.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            if matches!(probe(pid, &host), PidState::Zombie(_)) {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "child never became a zombie"
            );
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        child.wait().unwrap();
        assert_eq!(probe(pid, &host), PidState::Absent);
        assert_eq!(probe(0, &host), PidState::Absent);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn tells_kernel_threads_from_programs() {
        let host = HostFacts::probe();
        let me = probe(std::process::id() as i32, &host);
        assert!(!me.facts().expect("own facts").kernel_thread);
        // kthreadd is PID 2 in the initial PID namespace only.
        if host.pid_ns == Some(0xEFFF_FFFC)
            && let PidState::Alive(f) = probe(2, &host)
        {
            assert!(f.kernel_thread, "{f:?}");
        }
    }

    #[test]
    fn a_zombie_leader_with_running_threads_is_alive() {
        let facts = |state, threads| ProcFacts {
            state,
            threads,
            ..Default::default()
        };
        assert!(matches!(classify(facts('Z', 2)), PidState::Alive(_)));
        assert!(matches!(classify(facts('Z', 1)), PidState::Zombie(_)));
        assert!(matches!(classify(facts('X', 0)), PidState::Zombie(_)));
        assert!(matches!(classify(facts('S', 1)), PidState::Alive(_)));
    }

    #[test]
    fn matches_process_names() {
        let f = ProcFacts {
            comm: "postgres".into(),
            exe: Some("/usr/lib/postgresql/15/bin/postgres".into()),
            ..Default::default()
        };
        assert!(f.is_one_of(&["postgres", "postmaster"]));
        assert!(!f.is_one_of(&["sleep"]));
    }
}
