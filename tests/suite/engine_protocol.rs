//! The `locksmith lock` command: COMMAND runs holding the lock and its status is passed on,
//! a held lock makes it wait or exit 75 naming the holder, errors are one line with their exit
//! status, output is escaped, another user's lock is busy. (The engine's protocol itself is
//! tested in its crate, `crates/locksmith-engine/tests/engine`.)

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::util::engine::*;
use locksmith::Verdict;
use locksmith::engine::lock;

fn output(mut c: Command) -> std::process::Output {
    c.stdin(Stdio::null());
    c.output().expect("run locksmith")
}

#[test]
fn lock_command_runs_the_command_holding_the_lock_and_passes_its_status() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cmd.lock");
    // COMMAND runs with the lock held, and holds the locked descriptor itself (an open file
    // whose inode is the lock file's).
    let script = "stat -c %i cmd.lock && stat -L -c %i /proc/$$/fd/* 2>/dev/null; exit 7";
    let mut c = lock_cmd(Path::new("cmd.lock"), &[]);
    c.current_dir(dir.path()).args(["--", "sh", "-c", script]);
    let out = output(c);
    assert_eq!(out.status.code(), Some(7), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    let mut inodes = text.lines();
    let lock_inode = inodes.next().expect("the lock file's inode");
    assert!(
        inodes.any(|i| i == lock_inode),
        "COMMAND did not inherit the lock: {text}"
    );
    assert!(!path.exists(), "released after COMMAND");

    let mut c = lock_cmd(&path, &[]);
    c.args(["--", "sh", "-c", "kill -KILL $$"]);
    let out = output(c);
    assert_eq!(out.status.code(), Some(128 + 9), "{out:?}");
    assert!(!path.exists());
}

#[test]
fn lock_command_times_out_naming_the_holder_with_75() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("held.lock");
    let holder = hold_with_cli(&path, &[]);
    for timeout in ["0", "0.3"] {
        let mut c = lock_cmd(&path, &["--timeout", timeout]);
        c.args(["--", "touch", dir.path().join("ran").to_str().unwrap()]);
        let started = std::time::Instant::now();
        let out = output(c);
        assert_eq!(out.status.code(), Some(75), "{out:?}");
        if timeout != "0" {
            assert!(
                started.elapsed() >= Duration::from_millis(300),
                "did not wait"
            );
        }
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.contains(&format!("held by pid {}", holder.pid())),
            "{err}"
        );
        assert!(err.contains("sleep 600"), "names the command: {err}");
        assert!(
            err.contains(&format!("on host \"{}\"", hostname())),
            "{err}"
        );
        assert!(err.contains(" since "), "{err}");
        assert!(
            !dir.path().join("ran").exists(),
            "COMMAND ran without the lock"
        );
    }
    drop(holder);
}

#[test]
fn lock_command_waits_for_the_holder_by_default() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("wait.lock");
    let mut first = lock_cmd(&path, &[]);
    first.args(["--", "sleep", "0.4"]);
    let mut first = Group::spawn(first);
    wait_within(20, "the first holder", || {
        lock(&path)
            .inspect()
            .ok()
            .filter(|j| j.verdict == Verdict::Live)
    });
    let mut second = lock_cmd(&path, &[]);
    second.args(["--", "echo", "second"]);
    let out = output(second);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(out.stdout, b"second\n");
    assert!(first.wait(20).success(), "the first finished first");
}

#[test]
fn lock_command_reports_errors_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let cases: Vec<(Vec<String>, i32, &str)> = vec![
        (
            vec![
                dir.path().join("no/dir/x.lock").display().to_string(),
                "--".into(),
                "true".into(),
            ],
            2,
            "does not exist",
        ),
        (
            vec![dir.path().display().to_string(), "--".into(), "true".into()],
            2,
            "is a directory",
        ),
        (
            vec![
                dir.path().join("c.lock").display().to_string(),
                "--".into(),
                "no-such-command-anywhere".into(),
            ],
            127,
            "command not found",
        ),
        (
            vec![
                "--timeout=-1".into(),
                dir.path().join("c.lock").display().to_string(),
                "--".into(),
                "true".into(),
            ],
            2,
            "--timeout must be",
        ),
        (
            vec![
                "--heartbeat=0".into(),
                dir.path().join("c.lock").display().to_string(),
                "--".into(),
                "true".into(),
            ],
            2,
            "--heartbeat must be",
        ),
    ];
    for (args, code, text) in cases {
        let mut c = Command::new(BIN);
        c.arg("lock").args(&args);
        let out = output(c);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{args:?}: {err}");
        assert!(err.contains(text), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(!dir.path().join("c.lock").exists(), "{args:?} left a lock");
    }

    let exe = dir.path().join("not-executable");
    std::fs::write(&exe, "#!/bin/sh\n").unwrap();
    let mut c = lock_cmd(&dir.path().join("c.lock"), &[]);
    c.arg("--").arg(&exe);
    let out = output(c);
    assert_eq!(out.status.code(), Some(126), "{out:?}");
}

#[test]
fn lock_command_says_permission_denied() {
    let dir = tempfile::tempdir().unwrap();
    // As root every directory is writable: run as nobody in a directory only root may write.
    if !can_run_as_nobody() {
        return;
    }
    let path = dir.path().join("denied.lock");
    let mut c = as_nobody(BIN);
    c.arg("lock").arg(&path).args(["--", "true"]);
    // The temp dir is 0700 root: make it traversable but not writable for others.
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = output(c);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("permission denied"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
}

#[test]
fn lock_command_output_is_escaped() {
    // A record whose host name carries a terminal escape: the "held" line shows it escaped.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("evil.lock");
    let sleeper = Group::spawn({
        let mut c = Command::new("sleep");
        c.arg("300");
        c
    });
    let rec = engine_record(
        sleeper.pid() as i64,
        &[
            ("hostname", "\"evil\\u001b]0;owned\\u0007\"".into()),
            ("kernel_lock", "false".into()),
            ("boot_id", "\"00000000-0000-0000-0000-000000000001\"".into()),
        ],
    );
    std::fs::File::create(&path)
        .unwrap()
        .write_all(rec.as_bytes())
        .unwrap();
    let mut c = lock_cmd(&path, &["--timeout", "0"]);
    c.args(["--", "true"]);
    let out = output(c);
    assert_eq!(out.status.code(), Some(75), "{out:?}");
    assert!(
        !out.stderr.contains(&0x1b),
        "raw escape reached the terminal"
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("evil\\x1b]0;owned\\x07"), "{err}");
    drop(sleeper);
}

#[test]
fn lock_command_refuses_at_once_a_path_that_is_not_a_lock_record() {
    let dir = tempfile::tempdir().unwrap();
    for (name, content) in NOT_RECORDS {
        let path = dir.path().join(name);
        std::fs::write(&path, content).unwrap();
        // No --timeout: waiting would be forever, so this must fail at once.
        let mut c = lock_cmd(&path, &[]);
        c.args(["--", "true"]).stderr(Stdio::piped());
        let mut g = Group::spawn(c);
        let status = g.wait(20);
        let mut err = String::new();
        use std::io::Read;
        g.child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut err)
            .unwrap();
        assert_eq!(status.code(), Some(2), "{name}: {err}");
        assert!(err.contains("is not a locksmith lock"), "{name}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert_eq!(
            std::fs::read(&path).unwrap(),
            content,
            "{name} was modified"
        );
    }
}

/// Another user's lock (its record is mode 0600, so we may not read it) that is held: the
/// kernel lock still says so. `locksmith lock` waits, and exits 75 saying why it cannot name
/// the holder, instead of failing at once; after the release, a waiting other user gets in.
#[test]
fn another_users_held_lock_is_busy_not_an_error() {
    if !can_run_as_nobody() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(
        dir.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o1777),
    )
    .unwrap();
    let lock = dir.path().join("shared.lock");
    // Its own process group, so that the lock tool and its command die together.
    let mut holder = Group::spawn(lock_cmd(&lock, &[]).args(["--", "sleep", "3"]));
    wait_until("the holder to take the lock", || lock.exists());
    let try_as_nobody = |timeout: &str| {
        as_nobody(BIN)
            .args(["lock", "--timeout", timeout])
            .arg(&lock)
            .args(["--", "true"])
            .output()
            .unwrap()
    };
    let out = try_as_nobody("0.3");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(75), "{stderr}");
    assert!(stderr.contains("not readable by us"), "{stderr}");

    // The holder releases when its command ends: the other user, waiting, gets in.
    let out = try_as_nobody("20");
    holder.wait(DEADLINE.as_secs());
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
