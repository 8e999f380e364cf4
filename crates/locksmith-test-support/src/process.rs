//! Children on a leash: a [`Group`] leads a process group of its own, and the whole group (the
//! child and everything it started) is SIGKILLed and the leader reaped when it is dropped, on
//! every path (including a failing assertion); a [`Guard`] does the same for one child. And
//! the facts of processes tests read from `/proc`.

use std::any::Any;
use std::borrow::BorrowMut;
use std::os::unix::process::CommandExt;
use std::process::{Child, ChildStdin, Command, ExitStatus};
use std::time::{Duration, Instant};

use crate::{record_time, wait_until, wait_within};

/// A child started as the leader of its own process group; the whole group (the child and
/// everything it started, e.g. git and its editor) is SIGKILLed and the leader reaped when
/// this is dropped, on every path (including a failing assertion).
pub struct Group {
    pub child: Child,
    reaped: bool,
    /// What lives as long as the group ([`Group::keep`]), dropped after it is dead.
    kept: Vec<Box<dyn Any + Send>>,
}

impl Group {
    /// Spawns `cmd` as the leader of a new process group. A binary copied a moment ago may
    /// still be open for writing in a child another test thread is forking: ETXTBSY is retried
    /// briefly.
    pub fn spawn(mut cmd: impl BorrowMut<Command>) -> Group {
        record_time();
        let cmd = cmd.borrow_mut();
        cmd.process_group(0);
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            match cmd.spawn() {
                Ok(child) => {
                    return Group {
                        child,
                        reaped: false,
                        kept: Vec::new(),
                    };
                }
                Err(e) if e.raw_os_error() == Some(libc::ETXTBSY) && Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(20))
                }
                Err(e) => panic!("spawn {cmd:?}: {e}"),
            }
        }
    }

    /// Keeps `held` (a guard of what the group makes: a fact, a claim) until the group is
    /// dead: it is dropped after the group is killed and reaped.
    pub fn keep(&mut self, held: impl Any + Send) {
        self.kept.push(Box::new(held));
    }

    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// The live (non-zombie) members of the group: (pid, comm).
    pub fn members(&self) -> Vec<(i32, String)> {
        group_members(self.pid())
    }

    /// SIGKILLs the whole group, reaps the leader, and waits until no live (non-zombie)
    /// member of the group is left, so every descriptor it held is closed: what a crash
    /// leaves behind.
    pub fn kill(&mut self) {
        self.kill_and_reap();
        let pgid = self.pid();
        wait_until("the process group to die", || {
            group_members(pgid).is_empty()
        });
    }

    /// SIGKILLs the whole group and reaps the leader, without waiting for the other members
    /// to die.
    pub fn kill_and_reap(&mut self) {
        kill_group(self.pid());
        if !self.reaped {
            let _ = self.child.kill();
            let _ = self.child.wait();
            self.reaped = true;
        }
    }

    /// Waits for the leader to exit on its own (for at most `secs` seconds), returning its
    /// status.
    pub fn wait(&mut self, secs: u64) -> ExitStatus {
        let status = wait_within(secs, "the child to exit", || {
            self.child.try_wait().expect("try_wait")
        });
        self.reaped = true;
        status
    }

    pub fn stdin(&mut self) -> ChildStdin {
        self.child.stdin.take().expect("piped stdin")
    }
}

impl Drop for Group {
    /// Kills and reaps; unless a test is failing, also gives the group's members a moment
    /// to die, so that what they held is released when the guard is gone.
    fn drop(&mut self) {
        self.kill_and_reap();
        if !std::thread::panicking() {
            let deadline = Instant::now() + Duration::from_secs(10);
            while !group_members(self.pid()).is_empty() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(10));
            }
        }
    }
}

/// A child process that is killed (SIGKILL) and reaped when the guard drops, on every path.
pub struct Guard(pub Option<Child>);

impl Guard {
    pub fn spawn(cmd: &mut Command) -> Self {
        record_time();
        Guard(Some(cmd.spawn().expect("spawn child")))
    }

    pub fn pid(&self) -> u32 {
        self.0.as_ref().unwrap().id()
    }

    /// Kills the child with SIGKILL and reaps it.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.0.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        self.kill();
    }
}

/// SIGKILLs process group `pgid`.
pub fn kill_group(pgid: i32) {
    if let Some(p) = rustix::process::Pid::from_raw(pgid) {
        let _ = rustix::process::kill_process_group(p, rustix::process::Signal::KILL);
    }
}

/// SIGKILLs a process we did not spawn ourselves (a grandchild), by pid.
pub fn kill9(pid: i32) {
    if let Some(p) = rustix::process::Pid::from_raw(pid) {
        let _ = rustix::process::kill_process(p, rustix::process::Signal::KILL);
    }
}

/// `(state, pgrp)` of a process from `/proc/<pid>/stat`.
pub fn proc_state(pid: i32) -> Option<(char, i32)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 2..];
    let mut it = rest.split_whitespace();
    let state = it.next()?.chars().next()?;
    let _ppid = it.next()?;
    let pgrp = it.next()?.parse().ok()?;
    Some((state, pgrp))
}

/// Whether a process exists and is not a zombie (a zombie has closed all its files).
pub fn alive(pid: i32) -> bool {
    matches!(proc_state(pid), Some((s, _)) if s != 'Z' && s != 'X')
}

/// A process's name (`/proc/<pid>/comm`), empty when it is gone.
pub fn comm(pid: i32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// Live (non-zombie) processes whose process group is `pgid`: (pid, comm).
pub fn group_members(pgid: i32) -> Vec<(i32, String)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        if let Some((s, g)) = proc_state(pid)
            && g == pgid
            && s != 'Z'
            && s != 'X'
        {
            out.push((pid, comm(pid)));
        }
    }
    out
}

/// The PIDs of [`group_members`].
pub fn group_pids(pgid: i32) -> Vec<i32> {
    group_members(pgid).into_iter().map(|(p, _)| p).collect()
}

/// A PID that names no process: one of a child that has exited and been reaped (PIDs are
/// handed out in increasing order, so it is not reused within a test's lifetime).
pub fn dead_pid() -> i32 {
    let mut c = Command::new("true").spawn().expect("spawn true");
    let pid = c.id() as i32;
    c.wait().unwrap();
    assert!(!alive(pid));
    pid
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Stdio;

    #[test]
    fn a_dropped_group_leaves_none_of_its_members_alive() {
        let g = Group::spawn(
            Command::new("sh")
                .args(["-c", "sleep 600 & sleep 600 & wait"])
                .stdin(Stdio::null()),
        );
        let pgid = g.pid();
        wait_until("the sleepers to start", || {
            g.members().iter().filter(|(_, c)| c == "sleep").count() == 2
        });
        let pids = group_pids(pgid);
        drop(g);
        for pid in pids {
            assert!(!alive(pid), "{pid} outlived its group");
        }
    }

    #[test]
    fn what_a_group_keeps_is_dropped_after_it_is_dead() {
        struct Seen(i32, std::sync::Arc<std::sync::atomic::AtomicBool>);
        impl Drop for Seen {
            fn drop(&mut self) {
                self.1
                    .store(!alive(self.0), std::sync::atomic::Ordering::SeqCst);
            }
        }
        let dead_first = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let mut g = Group::spawn(Command::new("sleep").arg("600"));
        g.keep(Seen(g.pid(), dead_first.clone()));
        drop(g);
        assert!(dead_first.load(std::sync::atomic::Ordering::SeqCst));
    }

    #[test]
    fn a_dead_pid_names_no_process() {
        assert!(!alive(dead_pid()));
    }
}
