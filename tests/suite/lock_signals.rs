//! `locksmith lock` forwards SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 to COMMAND,
//! waits for it, exits with its status and releases the lock: a supervisor that signals only
//! the process it started stops the job; a signal the terminal sends to the whole process
//! group reaches COMMAND once, not a second time through locksmith. Real processes: the
//! binary, a shell that traps, and a small C program that records each signal delivered to it
//! and its sender, in a real pseudo-terminal.

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

/// A COMMAND that writes one line per signal delivered to it, with where it came from
/// (`kernel`: the terminal; `locksmith`: sent by its parent): `INT kernel`; SIGTERM ends it
/// with status 7. Built with `cc`; `None` (the test skips) without one.
fn signal_recorder(dir: &Path) -> Option<std::path::PathBuf> {
    let src = dir.join("recorder.c");
    fs::write(
        &src,
        r#"#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>
static int out;
static volatile unsigned long spin;
static void say(const char *s) { (void)!write(out, s, strlen(s)); }
static void got(int sig, siginfo_t *info, void *ctx) {
    (void)ctx;
    say(sig == SIGINT ? "INT " : "TERM ");
    say(info->si_code == SI_KERNEL ? "kernel\n"
        : info->si_pid == getppid() ? "locksmith\n" : "other\n");
    if (sig == SIGTERM) _exit(7);
}
int main(int argc, char **argv) {
    if (argc != 3) return 2;
    out = open(argv[1], O_WRONLY | O_CREAT | O_APPEND, 0600);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = got;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, 0);
    sigaction(SIGTERM, &sa, 0);
    close(open(argv[2], O_WRONLY | O_CREAT, 0600));
    /* Running, not sleeping: a signal is delivered at once, before another can join it. */
    for (;;) spin++;
}
"#,
    )
    .unwrap();
    let bin = dir.join("recorder");
    let built = Command::new("cc")
        .arg(&src)
        .arg("-o")
        .arg(&bin)
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    require_that(built, "no C compiler (cc) to build the test program").then_some(bin)
}

#[test]
fn ctrl_c_in_a_terminal_reaches_command_once_and_locksmith_keeps_forwarding() {
    let dir = tempfile::tempdir().unwrap();
    let Some(recorder) = signal_recorder(dir.path()) else {
        return;
    };
    let lock = dir.path().join("job.lock");
    let ready = dir.path().join("ready");
    let got = dir.path().join("got");
    let args: Vec<&std::ffi::OsStr> = vec![
        "lock".as_ref(),
        lock.as_os_str(),
        "--".as_ref(),
        recorder.as_os_str(),
        got.as_os_str(),
        ready.as_os_str(),
    ];
    let mut t = pty::Terminal::start(BIN, &args, dir.path(), &[]);
    wait_until("COMMAND to start", || ready.exists());
    // Ctrl-C: the terminal sends SIGINT to the foreground process group, COMMAND included.
    t.send(b"\x03");
    wait_until("COMMAND to get SIGINT", || got.exists());
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(
        fs::read_to_string(&got).unwrap(),
        "INT kernel\n",
        "SIGINT from the terminal reached COMMAND once, from the terminal only"
    );
    // locksmith is still there, waiting, and forwards what a supervisor sends it.
    // SAFETY: kill(2) on the pty's program, our child, not reaped yet.
    assert_eq!(unsafe { libc::kill(t.pid(), libc::SIGTERM) }, 0);
    assert_eq!(t.wait(), 7, "COMMAND's own status");
    assert_eq!(
        fs::read_to_string(&got).unwrap(),
        "INT kernel\nTERM locksmith\n"
    );
    assert!(free(&lock), "the lock is released");
}
