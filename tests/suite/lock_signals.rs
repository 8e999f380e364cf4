//! `locksmith lock` forwards SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 to COMMAND,
//! waits for it, exits with its status and releases the lock: a supervisor that signals only
//! the process it started stops the job. Real processes: the binary and a shell that traps.

use std::fs;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::util::*;

const SIGNALS: [(i32, &str); 6] = [
    (libc::SIGTERM, "TERM"),
    (libc::SIGINT, "INT"),
    (libc::SIGHUP, "HUP"),
    (libc::SIGQUIT, "QUIT"),
    (libc::SIGUSR1, "USR1"),
    (libc::SIGUSR2, "USR2"),
];

fn locksmith() -> Command {
    Command::new(assert_cmd::cargo::cargo_bin("locksmith"))
}

/// Waits for `child` (at most [`DEADLINE`]) and returns its exit code.
fn wait_exit(child: &mut std::process::Child) -> Option<i32> {
    let start = Instant::now();
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            return st.code();
        }
        assert!(start.elapsed() < DEADLINE, "locksmith lock did not exit");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn free(lock: &Path) -> bool {
    locksmith()
        .args(["lock", "--timeout", "0"])
        .arg(lock)
        .args(["--", "true"])
        .status()
        .unwrap()
        .success()
}

#[test]
fn every_forwarded_signal_reaches_command_which_is_waited_for() {
    let dir = tempfile::tempdir().unwrap();
    let lock = dir.path().join("job.lock");
    for (sig, name) in SIGNALS {
        let ready = dir.path().join("ready");
        let got = dir.path().join("got");
        let _ = fs::remove_file(&ready);
        let _ = fs::remove_file(&got);
        // COMMAND takes a while to stop after the signal: locksmith must wait for it.
        let script = format!(
            "trap 'sleep 0.3; echo {name} > {got}; exit 7' {name}; : > {ready}; \
             while :; do sleep 0.05; done",
            got = got.display(),
            ready = ready.display()
        );
        let mut child = locksmith()
            .arg("lock")
            .arg(&lock)
            .args(["--", "sh", "-c", &script])
            .stdin(Stdio::null())
            .process_group(0)
            .spawn()
            .unwrap();
        wait_for("COMMAND to start", || ready.exists().then_some(()));
        // Only locksmith is signalled, as a supervisor that knows one PID does.
        // SAFETY: kill(2) on our own child.
        assert_eq!(unsafe { libc::kill(child.id() as i32, sig) }, 0);
        let code = wait_exit(&mut child);
        assert_eq!(code, Some(7), "SIG{name}: COMMAND's own status");
        assert_eq!(
            fs::read_to_string(&got).unwrap_or_default().trim(),
            name,
            "SIG{name} reached COMMAND, which finished before locksmith exited"
        );
        assert!(free(&lock), "SIG{name}: the lock is released");
    }
}

#[test]
fn a_command_killed_by_the_forwarded_signal_gives_128_plus_n() {
    let dir = tempfile::tempdir().unwrap();
    let lock = dir.path().join("job.lock");
    let ready = dir.path().join("ready");
    let script = format!(": > {}; exec sleep 300", ready.display());
    let mut child = locksmith()
        .arg("lock")
        .arg(&lock)
        .args(["--", "sh", "-c", &script])
        .stdin(Stdio::null())
        .process_group(0)
        .spawn()
        .unwrap();
    wait_for("COMMAND to start", || ready.exists().then_some(()));
    std::thread::sleep(Duration::from_millis(50));
    // SAFETY: kill(2) on our own child.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
    assert_eq!(wait_exit(&mut child), Some(128 + libc::SIGTERM));
    assert!(free(&lock));
}
