//! Ending one exact process: the stuck holder of a lock (stopped, or not reaping the children
//! it holds the lock for), on a person's confirmed word. Never a lock file: a kernel lock
//! goes with its holder, and the file stays for the next taker.
//!
//! The process is named by its PID *and* its start time (clock ticks since boot, from
//! `/proc/PID/stat`): a PID that now names another process (the holder exited and the PID was
//! handed out again) is never signalled. It is reached through a pidfd (`pidfd_open(2)`),
//! opened first and then checked to be that process, so that every signal goes to the process
//! that was checked, whatever happens to its PID meanwhile; the start time is checked again
//! before each signal. SIGTERM first (with SIGCONT after it, since a stopped process acts on
//! no signal but SIGKILL until it runs), then, if it is still there after `grace`, SIGKILL.

use std::time::{Duration, Instant};

use rustix::process::{Pid, PidfdFlags, Signal};

/// The process to end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub pid: i32,
    pub start_ticks: u64,
    pub name: String,
}

/// How it ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// It exited after SIGTERM.
    Terminated,
    /// It was still there after the grace period: SIGKILL.
    Killed,
    /// It had already exited: nothing was sent.
    AlreadyGone,
}

/// How long a process has to exit after SIGKILL before this gives up waiting.
const AFTER_KILL: Duration = Duration::from_secs(5);

/// Whether `pid` is still the target: alive (not a zombie) and started at its tick.
fn still(t: &Target) -> Result<bool, String> {
    let stat = match std::fs::read(format!("/proc/{}/stat", t.pid)) {
        Ok(s) => s,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(format!("cannot read /proc/{}/stat: {e}", t.pid)),
    };
    let Some(ticks) = locksmith_engine::host::start_ticks_of_stat(&stat) else {
        return Err(format!("cannot read the start time of process {}", t.pid));
    };
    if ticks != t.start_ticks {
        return Err(format!(
            "PID {} is another process now (it started at tick {ticks}, the holder at tick {}): nothing was sent",
            t.pid, t.start_ticks
        ));
    }
    let after = stat.iter().rposition(|b| *b == b')').unwrap_or(0);
    let state = stat.get(after + 2).copied().unwrap_or(b'?');
    Ok(!matches!(state, b'Z' | b'X'))
}

/// Waits up to `limit` for the target to be gone.
fn gone_within(t: &Target, limit: Duration) -> Result<bool, String> {
    let deadline = Instant::now() + limit;
    loop {
        if !still(t)? {
            return Ok(true);
        }
        if Instant::now() >= deadline {
            return Ok(false);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Ends `t` (see the module docs): `Err` says why nothing more was done.
pub fn end(t: &Target, grace: Duration) -> Result<Ended, String> {
    let who = format!("process {} ({})", t.pid, t.name);
    let pid = Pid::from_raw(t.pid).ok_or_else(|| format!("{} is not a PID", t.pid))?;
    let pidfd = match rustix::process::pidfd_open(pid, PidfdFlags::empty()) {
        Ok(fd) => fd,
        Err(rustix::io::Errno::SRCH) => return Ok(Ended::AlreadyGone),
        Err(e) => return Err(format!("cannot reach {who}: {e}")),
    };
    // The pidfd names whichever process had the PID when it was opened: it must be the one
    // checked.
    if !still(t)? {
        return Ok(Ended::AlreadyGone);
    }
    let send = |sig: Signal| -> Result<(), String> {
        match rustix::process::pidfd_send_signal(&pidfd, sig) {
            Ok(()) | Err(rustix::io::Errno::SRCH) => Ok(()),
            Err(e) => Err(format!("cannot signal {who}: {e}")),
        }
    };
    send(Signal::TERM)?;
    send(Signal::CONT)?;
    if gone_within(t, grace)? {
        return Ok(Ended::Terminated);
    }
    if !still(t)? {
        return Ok(Ended::Terminated);
    }
    send(Signal::KILL)?;
    if gone_within(t, AFTER_KILL)? {
        Ok(Ended::Killed)
    } else {
        Err(format!(
            "{who} was sent SIGKILL and is still there after {} s (in uninterruptible sleep?)",
            AFTER_KILL.as_secs()
        ))
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use std::process::{Command, Stdio};

    fn target(child: &std::process::Child, name: &str) -> Target {
        let pid = child.id() as i32;
        let stat = std::fs::read(format!("/proc/{pid}/stat")).unwrap();
        Target {
            pid,
            start_ticks: locksmith_engine::host::start_ticks_of_stat(&stat).unwrap(),
            name: name.into(),
        }
    }

    /// Reaps `child` in the background, as its parent would (a zombie is gone for `end`).
    fn reap(mut child: std::process::Child) -> std::thread::JoinHandle<std::process::ExitStatus> {
        std::thread::spawn(move || child.wait().unwrap())
    }

    #[test]
    fn a_stopped_process_ends_on_sigterm() {
        use std::os::unix::process::ExitStatusExt;
        let child = Command::new("sleep")
            .arg("600")
            .stdin(Stdio::null())
            .spawn()
            .unwrap();
        let t = target(&child, "sleep");
        rustix::process::kill_process(Pid::from_raw(t.pid).unwrap(), Signal::STOP).unwrap();
        let status = reap(child);
        assert_eq!(end(&t, Duration::from_secs(10)), Ok(Ended::Terminated));
        assert_eq!(status.join().unwrap().signal(), Some(libc::SIGTERM));
    }

    #[test]
    fn one_that_ignores_sigterm_gets_sigkill() {
        use std::os::unix::process::ExitStatusExt;
        let child = Command::new("sh")
            .args([
                "-c",
                "trap '' TERM; echo ready; while :; do sleep 0.05; done",
            ])
            .stdout(Stdio::piped())
            .stdin(Stdio::null())
            .spawn()
            .unwrap();
        let mut child = child;
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(child.stdout.take().unwrap()),
            &mut line,
        )
        .unwrap();
        let t = target(&child, "sh");
        let status = reap(child);
        let began = Instant::now();
        assert_eq!(end(&t, Duration::from_millis(300)), Ok(Ended::Killed));
        assert!(began.elapsed() >= Duration::from_millis(300));
        assert_eq!(status.join().unwrap().signal(), Some(libc::SIGKILL));
    }

    #[test]
    fn another_process_under_the_pid_is_never_signalled() {
        let child = Command::new("sleep")
            .arg("600")
            .stdin(Stdio::null())
            .spawn()
            .unwrap();
        let mut t = target(&child, "sleep");
        t.start_ticks += 1;
        let status = reap(child);
        let err = end(&t, Duration::from_secs(1)).unwrap_err();
        assert!(err.contains("another process now"), "{err}");
        // It still runs: nothing was sent.
        assert!(
            still(&Target {
                start_ticks: t.start_ticks - 1,
                ..t.clone()
            })
            .unwrap()
        );
        rustix::process::kill_process(Pid::from_raw(t.pid).unwrap(), Signal::KILL).unwrap();
        status.join().unwrap();
        let gone = Target {
            start_ticks: t.start_ticks - 1,
            ..t
        };
        assert_eq!(end(&gone, Duration::from_secs(1)), Ok(Ended::AlreadyGone));
    }
}
