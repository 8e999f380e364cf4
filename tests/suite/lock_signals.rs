//! `locksmith lock` forwards SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 to COMMAND,
//! waits for it, exits with its status and releases the lock: a supervisor that signals only
//! the process it started stops the job. Real processes: the binary and a shell that traps.

use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::util::*;

const SIGNALS: [(i32, &str); 6] = [
    (libc::SIGTERM, "TERM"),
    (libc::SIGINT, "INT"),
    (libc::SIGHUP, "HUP"),
    (libc::SIGQUIT, "QUIT"),
    (libc::SIGUSR1, "USR1"),
    (libc::SIGUSR2, "USR2"),
];

/// `locksmith lock LOCK -- sh -c SCRIPT` in a process group of its own, once SCRIPT has
/// created `ready`.
fn lock_running(lock: &Path, script: &str, ready: &Path) -> Group {
    let g = Group::spawn(
        Command::new(BIN)
            .arg("lock")
            .arg(lock)
            .args(["--", "sh", "-c", script])
            .stdin(Stdio::null()),
    );
    wait_until("COMMAND to start", || ready.exists());
    g
}

/// Sends `sig` to the `locksmith lock` process only (as a supervisor that knows one PID does),
/// and returns its exit code.
fn signal_and_wait(g: &mut Group, sig: i32) -> Option<i32> {
    // SAFETY: kill(2) on our own child.
    assert_eq!(unsafe { libc::kill(g.pid(), sig) }, 0);
    g.wait(DEADLINE.as_secs()).code()
}

fn free(lock: &Path) -> bool {
    Command::new(BIN)
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
        let mut g = lock_running(&lock, &script, &ready);
        assert_eq!(
            signal_and_wait(&mut g, sig),
            Some(7),
            "SIG{name}: COMMAND's own status"
        );
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
    let mut g = lock_running(&lock, &script, &ready);
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(
        signal_and_wait(&mut g, libc::SIGTERM),
        Some(128 + libc::SIGTERM)
    );
    assert!(free(&lock));
}
