//! The engine's protocol with real processes: self-healing after SIGKILL, release safety, no
//! partial records, the fallback method, and the `locksmith lock` command's behaviour.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use crate::util::engine::*;
use locksmith::Verdict;
use locksmith::engine::{ErrorKind, lock};
use locksmith::probe::KernelLocks;
use locksmith_engine::ParsedRecord;

fn kernel_locked(path: &Path) -> bool {
    let meta = std::fs::metadata(path).unwrap();
    !KernelLocks::read()
        .on(locksmith::probe::FileKey::of(&meta))
        .is_empty()
}

#[test]
fn self_heals_at_once_after_sigkill_of_the_holder_group() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("job.lock");
    let mut holder = hold_with_cli(&path, &[]);
    let j = lock(&path).inspect().unwrap();
    assert_eq!(j.verdict, Verdict::Live, "{j:?}");
    assert!(kernel_locked(&path));
    // The owner record: one JSON object, newline-terminated, mode 0600.
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(&path).unwrap();
    assert_eq!(meta.permissions().mode() & 0o7777, 0o600);
    let bytes = std::fs::read(&path).unwrap();
    assert_eq!(bytes.iter().filter(|b| **b == b'\n').count(), 1);
    assert_eq!(bytes.last(), Some(&b'\n'));
    let rec = ParsedRecord::parse(&bytes).unwrap();
    assert_eq!(rec.pid, Some(holder.pid() as i64));
    assert_eq!(rec.hostname.as_deref(), Some(hostname().as_str()));
    assert_eq!(rec.boot_id.as_deref(), Some(boot_id().as_str()));
    assert!(rec.kernel_lock && rec.start_time.is_some() && rec.pid_ns.is_some());
    assert!(rec.exe.as_deref().is_some_and(|e| e.ends_with("locksmith")));
    assert_eq!(rec.token.as_deref().map(str::len), Some(32));
    assert!(
        rec.tool
            .as_deref()
            .is_some_and(|t| t.starts_with("locksmith/"))
    );
    assert!(j.owner.as_ref().unwrap().created_at.is_some());

    // While it is held, trying once fails and names the holder.
    let e = lock(&path).try_acquire().unwrap_err();
    assert!(e.is_held(), "{e}");
    assert!(
        e.to_string()
            .contains(&format!("held by pid {}", holder.pid())),
        "{e}"
    );

    holder.kill();
    assert!(path.exists(), "a crash leaves the file behind");
    let j = lock(&path).inspect().unwrap();
    assert_eq!(j.verdict, Verdict::Stale, "{j:?}");

    // The very first try succeeds: no waiting for a timeout.
    let g = lock(&path).try_acquire().expect("reclaimed at once");
    assert!(g.kernel_lock());
    g.release().unwrap();
    assert!(!path.exists());
}

#[test]
fn the_lock_stays_held_by_command_when_the_lock_tool_alone_is_killed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("inherit.lock");
    let mut holder = hold_with_cli(&path, &[]);
    // Kill only the locksmith process: COMMAND (sleep) keeps the locked descriptor.
    let sleep_pid = wait_within(10, "the command to start", || {
        group_pids(holder.pid())
            .into_iter()
            .find(|&p| p != holder.pid())
    });
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(holder.pid()).unwrap(),
        rustix::process::Signal::KILL,
    )
    .unwrap();
    let _ = holder.child.wait();
    let j = lock(&path).inspect().unwrap();
    assert_eq!(j.verdict, Verdict::Live, "{j:?}");
    assert!(j.holders.iter().any(|h| h.pid == sleep_pid), "{j:?}");
    assert!(lock(&path).try_acquire().unwrap_err().is_held());

    holder.kill(); // now the command too
    let g = lock(&path)
        .try_acquire()
        .expect("stale once COMMAND is gone");
    drop(g);
}

#[test]
fn reading_the_lock_in_the_holding_process_keeps_it_held() {
    // The POSIX-lock pitfall: closing any descriptor of a file drops the process's F_SETLK
    // locks on it. OFD locks survive inspect and plain reads in the same process.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("self.lock");
    let g = lock(&path).try_acquire().unwrap();
    for _ in 0..3 {
        let j = lock(&path).inspect().unwrap();
        assert_eq!(j.verdict, Verdict::Live, "{j:?}");
        assert!(
            j.holders.iter().any(|h| h.pid == std::process::id() as i32),
            "{j:?}"
        );
        drop(std::fs::read(&path).unwrap());
        assert!(kernel_locked(&path));
    }
    let e = lock(&path).try_acquire().unwrap_err();
    assert!(e.is_held(), "{e}");
    g.release().unwrap();
}

#[test]
fn release_never_removes_a_lock_that_is_no_longer_ours() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mine.lock");
    for fallback in [false, true] {
        // Replaced by another file: release reports it and leaves the other file alone.
        let g = lock(&path).force_fallback(fallback).try_acquire().unwrap();
        assert!(g.still_ours().unwrap());
        std::fs::remove_file(&path).unwrap();
        std::fs::write(&path, b"someone else's\n").unwrap();
        assert!(!g.still_ours().unwrap());
        let e = g.release().unwrap_err();
        assert!(matches!(e.kind(), ErrorKind::Lost), "{e}");
        assert_eq!(std::fs::read(&path).unwrap(), b"someone else's\n");

        // The same when the guard is only dropped.
        std::fs::remove_file(&path).unwrap();
        let g = lock(&path).force_fallback(fallback).try_acquire().unwrap();
        std::fs::remove_file(&path).unwrap();
        let other = lock(&path).force_fallback(fallback).try_acquire().unwrap();
        drop(g);
        assert!(
            other.still_ours().unwrap(),
            "dropping the old guard kept the new lock"
        );
        other.release().unwrap();
        assert!(!path.exists());

        // Removed without replacement: release says so and creates nothing.
        let g = lock(&path).force_fallback(fallback).try_acquire().unwrap();
        std::fs::remove_file(&path).unwrap();
        assert!(matches!(g.release().unwrap_err().kind(), ErrorKind::Lost));
        assert!(!path.exists());
    }
}

/// A reader looping over the lock file during thousands of acquire/release cycles never
/// sees an empty or partial record.
fn no_partial_reads(fallback: bool, cycles: u32) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("busy.lock");
    let done = AtomicBool::new(false);
    let parsed = AtomicU64::new(0);
    std::thread::scope(|s| {
        let reader = s.spawn(|| {
            while !done.load(Ordering::Relaxed) {
                match std::fs::read(&path) {
                    Ok(bytes) => {
                        assert!(!bytes.is_empty(), "read an empty lock file");
                        assert_eq!(bytes.last(), Some(&b'\n'), "partial record: {bytes:?}");
                        let rec = ParsedRecord::parse(&bytes)
                            .unwrap_or_else(|| panic!("unparseable record: {bytes:?}"));
                        assert_eq!(rec.pid, Some(std::process::id() as i64));
                        parsed.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(e) => assert_eq!(e.kind(), std::io::ErrorKind::NotFound, "{e}"),
                }
            }
        });
        let lock = lock(&path).force_fallback(fallback);
        for _ in 0..cycles {
            let g = lock.try_acquire().expect("uncontended");
            g.release().unwrap();
        }
        // Keep cycling until the reader has seen records (it may have been descheduled).
        let mut extra = 0;
        while parsed.load(Ordering::Relaxed) < 10 && extra < 200_000 {
            lock.try_acquire().unwrap().release().unwrap();
            extra += 1;
        }
        done.store(true, Ordering::Relaxed);
        reader.join().unwrap();
    });
    assert!(
        parsed.load(Ordering::Relaxed) >= 10,
        "the reader saw no records"
    );
    let leftovers: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert!(leftovers.is_empty(), "temporary files left: {leftovers:?}");
}

#[test]
fn no_partial_reads_with_kernel_locks() {
    no_partial_reads(false, 3000);
}

#[test]
fn no_partial_reads_in_the_fallback() {
    no_partial_reads(true, 2000);
}

#[test]
fn fallback_holds_without_kernel_lock_and_heals_by_pid_evidence() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nfs-style.lock");
    let mut holder = spawn_child("hold-fallback", &path);
    let said = Answers::of(&mut holder).next(20);
    assert!(said.starts_with("held "), "{said}");

    let rec = ParsedRecord::parse(&std::fs::read(&path).unwrap()).unwrap();
    assert!(!rec.kernel_lock);
    assert_eq!(rec.pid, Some(holder.pid() as i64));
    assert!(!kernel_locked(&path), "the fallback keeps no kernel lock");
    let j = lock(&path).inspect().unwrap();
    assert_eq!(j.verdict, Verdict::Live, "{j:?}");
    assert_eq!(j.process.as_ref().map(|p| p.pid), Some(holder.pid()));
    for fallback in [true, false] {
        let e = lock(&path)
            .force_fallback(fallback)
            .try_acquire()
            .unwrap_err();
        assert!(e.is_held(), "{e}");
    }
    assert!(lock(&path).reclaim().is_err());
    assert!(path.exists());

    holder.kill();
    let j = lock(&path).inspect().unwrap();
    assert_eq!(j.verdict, Verdict::Stale, "{j:?}");
    assert!(
        j.evidence.iter().any(|e| e.contains("ESRCH")),
        "{:?}",
        j.evidence
    );
    let g = lock(&path)
        .force_fallback(true)
        .try_acquire()
        .expect("reclaimed at once");
    assert!(!g.kernel_lock());
    g.release().unwrap();
    let leftovers: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert!(
        leftovers.is_empty(),
        "guard or temporary files left: {leftovers:?}"
    );
}

#[test]
fn fallback_owner_descriptor_inherited_by_a_survivor_keeps_it_live() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("inherited.lock");
    let mut owner = spawn_child("crash-fallback-leave-writer", &path);
    let said = Answers::of(&mut owner).next(20);
    let writer: i32 = said
        .strip_prefix("writer ")
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("{said}"));
    // The sleep leads its own group: make sure it dies with the test, whatever happens.
    struct KillOnDrop(i32);
    impl Drop for KillOnDrop {
        fn drop(&mut self) {
            kill_group(self.0);
        }
    }
    let _writer_guard = KillOnDrop(writer);
    owner.wait(20);

    let j = lock(&path).inspect().unwrap();
    assert_eq!(j.verdict, Verdict::Live, "{j:?}");
    assert!(j.holders.iter().any(|h| h.pid == writer), "{j:?}");
    assert!(
        lock(&path)
            .force_fallback(true)
            .try_acquire()
            .unwrap_err()
            .is_held()
    );

    kill_group(writer);
    wait_within(20, "the writer to die", || (!alive(writer)).then_some(()));
    let j = lock(&path).inspect().unwrap();
    assert_eq!(j.verdict, Verdict::Stale, "{j:?}");
    lock(&path).force_fallback(true).try_acquire().unwrap();
}

#[test]
fn heartbeat_touches_the_file_while_held() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("beat.lock");
    let g = lock(&path)
        .heartbeat(Duration::from_millis(20))
        .try_acquire()
        .unwrap();
    let rec = ParsedRecord::parse(&std::fs::read(&path).unwrap()).unwrap();
    assert!(rec.has_heartbeat());
    assert_eq!(rec.heartbeat_interval, Some(Duration::from_millis(20)));
    age(&path, 3600);
    let old = std::fs::metadata(&path).unwrap().modified().unwrap();
    wait_within(20, "a heartbeat", || {
        let now = std::fs::metadata(&path).unwrap().modified().unwrap();
        (now > old).then_some(())
    });
    g.release().unwrap();
}

#[test]
fn inspect_reports_missing_and_non_lock_paths() {
    let dir = tempfile::tempdir().unwrap();
    let e = lock(dir.path().join("none")).inspect().unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::NotFound), "{e}");
    let e = lock(dir.path()).inspect().unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::NotALockFile(_)), "{e}");
    let link = dir.path().join("link.lock");
    std::os::unix::fs::symlink("/etc/passwd", &link).unwrap();
    let e = lock(&link).try_acquire().unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::NotALockFile(_)), "{e}");
    assert!(std::fs::symlink_metadata(&link).unwrap().is_symlink());
    let e = lock(dir.path().join("no/such/dir/x.lock"))
        .try_acquire()
        .unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::NoDirectory { .. }), "{e}");
}

// ---- the `locksmith lock` command ------------------------------------------------------------

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
    for (name, content) in [
        ("notes.txt", &b"my precious notes\n"[..]),
        ("empty.lock", b""),
        (
            "bad.lock",
            br#"{"tool":"locksmith/0.1.0","pid":"x","token":"t"}"#,
        ),
    ] {
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

#[test]
fn waiting_reclaims_a_stale_lock_without_waiting_for_the_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("stale.lock");
    std::fs::write(&path, engine_record(dead_pid() as i64, &[])).unwrap();
    let mut c = lock_cmd(&path, &[]);
    c.args(["--", "true"]);
    let out = output(c);
    assert!(out.status.success(), "{out:?}");
    assert!(!path.exists());
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

/// A power loss can leave a lock file empty (the name reached the disk, the record did not).
/// An empty file from an earlier boot with no kernel lock on it is taken over; an empty file
/// of this boot is not ours to judge, and is refused.
#[test]
fn an_empty_lock_file_from_an_earlier_boot_heals() {
    let Some(boot) = locksmith::probe::HostFacts::probe().boot_time else {
        return skip("the boot time is unknown here");
    };
    // On the target directory's disk: the system's temp dir may be a tmpfs.
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let old = dir.path().join("old.lock");
    std::fs::write(&old, "").unwrap();
    let before_boot = std::time::UNIX_EPOCH + Duration::from_secs((boot - 86_400).max(0) as u64);
    std::fs::File::options()
        .write(true)
        .open(&old)
        .unwrap()
        .set_modified(before_boot)
        .unwrap();
    let fs_kind = locksmith::probe::fs::describe(dir.path(), 0).kind;
    if fs_kind == "tmpfs" || fs_kind == "ramfs" {
        return skip(format!(
            "the target directory lives on {fs_kind}, which no boot survives"
        ));
    }
    let j = lock(&old).inspect().unwrap();
    assert_eq!(j.verdict, Verdict::Stale, "{j:?}");
    let guard = lock(&old)
        .try_acquire()
        .expect("the empty leftover is taken over");
    guard.release().unwrap();

    let fresh = dir.path().join("fresh.lock");
    std::fs::write(&fresh, "").unwrap();
    let err = lock(&fresh).try_acquire().unwrap_err();
    assert!(!err.is_held(), "{err}");
    assert!(fresh.exists());
}
