//! The engine's protocol with real processes: self-healing after SIGKILL, a lock inherited by
//! a child, release safety, no partial records, the fallback method, heartbeats, what is not a
//! lock.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use crate::util::*;
use locksmith_engine::{ErrorKind, Lock, Record, Verdict};

#[test]
fn self_heals_at_once_after_sigkill_of_the_holder_group() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("job.lock");
    let mut holder = hold("hold", &path);
    let j = Lock::new(&path).inspect().unwrap();
    assert_eq!(j.verdict, Verdict::Live, "{j:?}");
    assert!(kernel_locked(&path));
    // The owner record: one JSON object, newline-terminated, mode 0600.
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(&path).unwrap();
    assert_eq!(meta.permissions().mode() & 0o7777, 0o600);
    let bytes = std::fs::read(&path).unwrap();
    assert_eq!(bytes.iter().filter(|b| **b == b'\n').count(), 1);
    assert_eq!(bytes.last(), Some(&b'\n'));
    let rec = Record::parse(&bytes).unwrap();
    assert_eq!(rec.pid, Some(holder.pid() as i64));
    assert_eq!(rec.hostname.as_deref(), Some(hostname().as_str()));
    assert_eq!(rec.boot_id.as_deref(), Some(boot_id().as_str()));
    assert!(rec.kernel_lock && rec.start_time.is_some() && rec.pid_ns.is_some());
    let exe = std::env::current_exe().unwrap();
    assert_eq!(rec.exe.as_deref(), exe.to_str(), "the holder's executable");
    assert_eq!(rec.token.as_deref().map(str::len), Some(32));
    assert_eq!(
        Some(format!("held {}", rec.token.as_deref().unwrap())),
        Some(holder.said.clone())
    );
    assert!(
        rec.tool
            .as_deref()
            .is_some_and(|t| t.starts_with("locksmith/"))
    );
    assert!(j.owner.as_ref().unwrap().created_at.is_some());

    // While it is held, trying once fails and names the holder.
    let e = Lock::new(&path).try_acquire().unwrap_err();
    assert!(e.is_held(), "{e}");
    assert!(
        e.to_string()
            .contains(&format!("held by pid {}", holder.pid())),
        "{e}"
    );

    holder.group.kill();
    assert!(path.exists(), "a crash leaves the file behind");
    let j = Lock::new(&path).inspect().unwrap();
    assert_eq!(j.verdict, Verdict::Stale, "{j:?}");

    // The very first try succeeds: no waiting for a timeout.
    let g = Lock::new(&path).try_acquire().expect("reclaimed at once");
    assert!(g.kernel_lock());
    g.release().unwrap();
    assert!(!path.exists());
}

#[test]
fn the_lock_stays_held_by_a_child_when_the_holder_alone_is_killed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("inherit.lock");
    let mut holder = hold("hold-with-child", &path);
    // `held <token> <pid of the sleep that inherited the locked descriptor>`
    let sleep: i32 = holder.said.rsplit(' ').next().unwrap().parse().unwrap();
    wait_until("the child to run sleep", || {
        std::fs::read_to_string(format!("/proc/{sleep}/comm")).is_ok_and(|c| c.trim() == "sleep")
    });
    // Kill only the holder: its child keeps the locked descriptor.
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(holder.pid()).unwrap(),
        rustix::process::Signal::KILL,
    )
    .unwrap();
    let _ = holder.group.child.wait();
    assert!(alive(sleep));
    let j = Lock::new(&path).inspect().unwrap();
    assert_eq!(j.verdict, Verdict::Live, "{j:?}");
    assert!(kernel_locked(&path));
    assert!(Lock::new(&path).try_acquire().unwrap_err().is_held());

    // Only once the child is gone too is it stale.
    holder.group.kill();
    let g = Lock::new(&path)
        .try_acquire()
        .expect("stale once the child is gone");
    drop(g);
    assert!(!path.exists());
}

#[test]
fn reading_the_lock_in_the_holding_process_keeps_it_held() {
    // The POSIX-lock pitfall: closing any descriptor of a file drops the process's F_SETLK
    // locks on it. OFD locks survive inspect and plain reads in the same process.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("self.lock");
    let g = Lock::new(&path).try_acquire().unwrap();
    for _ in 0..3 {
        let j = Lock::new(&path).inspect().unwrap();
        assert_eq!(j.verdict, Verdict::Live, "{j:?}");
        drop(std::fs::read(&path).unwrap());
        assert!(kernel_locked(&path));
    }
    let e = Lock::new(&path).try_acquire().unwrap_err();
    assert!(e.is_held(), "{e}");
    g.release().unwrap();
    assert!(!path.exists());
}

#[test]
fn release_never_removes_a_lock_that_is_no_longer_ours() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mine.lock");
    for fallback in [false, true] {
        let lock = || Lock::new(&path).force_fallback(fallback);
        // Replaced by another file: release reports it and leaves the other file alone.
        let g = lock().try_acquire().unwrap();
        assert!(g.still_ours().unwrap());
        std::fs::remove_file(&path).unwrap();
        std::fs::write(&path, b"someone else's\n").unwrap();
        assert!(!g.still_ours().unwrap());
        let e = g.release().unwrap_err();
        assert!(matches!(e.kind(), ErrorKind::Lost), "{e}");
        assert_eq!(std::fs::read(&path).unwrap(), b"someone else's\n");

        // The same when the guard is only dropped.
        std::fs::remove_file(&path).unwrap();
        let g = lock().try_acquire().unwrap();
        std::fs::remove_file(&path).unwrap();
        let other = lock().try_acquire().unwrap();
        drop(g);
        assert!(
            other.still_ours().unwrap(),
            "dropping the old guard kept the new lock"
        );
        other.release().unwrap();
        assert!(!path.exists());

        // Removed without replacement: release says so and creates nothing.
        let g = lock().try_acquire().unwrap();
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
                        let rec = Record::parse(&bytes)
                            .unwrap_or_else(|| panic!("unparseable record: {bytes:?}"));
                        assert_eq!(rec.pid, Some(std::process::id() as i64));
                        parsed.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(e) => assert_eq!(e.kind(), std::io::ErrorKind::NotFound, "{e}"),
                }
            }
        });
        let lock = Lock::new(&path).force_fallback(fallback);
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
    assert_eq!(
        names(dir.path()),
        Vec::<String>::new(),
        "temporary files left"
    );
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
    let mut holder = hold("hold-fallback", &path);

    let rec = Record::parse(&std::fs::read(&path).unwrap()).unwrap();
    assert!(!rec.kernel_lock);
    assert_eq!(rec.pid, Some(holder.pid() as i64));
    assert!(!kernel_locked(&path), "the fallback keeps no kernel lock");
    let j = Lock::new(&path).inspect().unwrap();
    assert_eq!(j.verdict, Verdict::Live, "{j:?}");
    assert_eq!(j.holder_pid, Some(holder.pid()));
    for fallback in [true, false] {
        let e = Lock::new(&path)
            .force_fallback(fallback)
            .try_acquire()
            .unwrap_err();
        assert!(e.is_held(), "{e}");
    }
    assert!(Lock::new(&path).reclaim().is_err());
    assert!(path.exists());

    holder.group.kill();
    let j = Lock::new(&path).inspect().unwrap();
    assert_eq!(j.verdict, Verdict::Stale, "{j:?}");
    assert!(
        j.evidence.iter().any(|e| e.contains("ESRCH")),
        "{:?}",
        j.evidence
    );
    let g = Lock::new(&path)
        .force_fallback(true)
        .try_acquire()
        .expect("reclaimed at once");
    assert!(!g.kernel_lock());
    g.release().unwrap();
    assert_eq!(
        names(dir.path()),
        Vec::<String>::new(),
        "guard or temporary files left"
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

    let j = Lock::new(&path).inspect().unwrap();
    assert_eq!(j.verdict, Verdict::Live, "{j:?}");
    assert_eq!(j.holder_pid, Some(writer), "{j:?}");
    assert!(
        Lock::new(&path)
            .force_fallback(true)
            .try_acquire()
            .unwrap_err()
            .is_held()
    );

    kill_group(writer);
    wait_until("the writer to die", || !alive(writer));
    let j = Lock::new(&path).inspect().unwrap();
    assert_eq!(j.verdict, Verdict::Stale, "{j:?}");
    Lock::new(&path).force_fallback(true).try_acquire().unwrap();
}

#[test]
fn heartbeat_touches_the_file_while_held() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("beat.lock");
    let g = Lock::new(&path)
        .heartbeat(Duration::from_millis(20))
        .try_acquire()
        .unwrap();
    let rec = Record::parse(&std::fs::read(&path).unwrap()).unwrap();
    assert!(rec.has_heartbeat());
    assert_eq!(rec.heartbeat_interval, Some(Duration::from_millis(20)));
    age(&path, 60);
    let old = std::fs::metadata(&path).unwrap().modified().unwrap();
    wait_until("a heartbeat", || {
        std::fs::metadata(&path).unwrap().modified().unwrap() > old
    });
    g.release().unwrap();
}

#[test]
fn inspect_reports_missing_and_non_lock_paths() {
    let dir = tempfile::tempdir().unwrap();
    let e = Lock::new(dir.path().join("none")).inspect().unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::NotFound), "{e}");
    let e = Lock::new(dir.path()).inspect().unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::NotALockFile(_)), "{e}");
    let link = dir.path().join("link.lock");
    std::os::unix::fs::symlink("/etc/passwd", &link).unwrap();
    let e = Lock::new(&link).try_acquire().unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::NotALockFile(_)), "{e}");
    assert!(std::fs::symlink_metadata(&link).unwrap().is_symlink());
    let e = Lock::new(dir.path().join("no/such/dir/x.lock"))
        .try_acquire()
        .unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::NoDirectory { .. }), "{e}");
}

/// Something that is not a lock record fails at once, even when waiting forever, and is left
/// as it was.
#[test]
fn acquire_refuses_at_once_a_path_that_is_not_a_lock_record() {
    let dir = tempfile::tempdir().unwrap();
    for (name, content) in NOT_RECORDS {
        let path = dir.path().join(name);
        std::fs::write(&path, content).unwrap();
        let e = Lock::new(&path).wait_forever().acquire().unwrap_err();
        assert!(
            matches!(e.kind(), ErrorKind::Unrecognised(_)),
            "{name}: {e}"
        );
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
    // Waiting forever: only an at-once reclaim lets this return.
    let g = Lock::new(&path).wait_forever().acquire().unwrap();
    assert!(g.still_ours().unwrap());
    g.release().unwrap();
    assert!(!path.exists());
}

/// A power loss can leave a lock file empty (the name reached the disk, the record did not).
/// Only an empty file written before this boot is nobody's, and its mtime cannot tell: anyone
/// who may write it can set it back (`touch -d`, `cp -p`, `tar x`). An empty file whose mtime
/// says it is from before this boot, but whose ctime says it was written in this one, is not
/// taken over; neither is one of this boot. (That its ctime before the boot, on a clock that
/// cannot have stepped that far, proves it stale is the time rule's, tested with numbers in
/// locksmith-sys: no file's ctime can be set back to make one here.)
#[test]
fn an_empty_lock_file_is_not_taken_over_by_its_mtime() {
    let Some(boot) = locksmith_sys::host::boot_time() else {
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
    let j = Lock::new(&old).inspect().unwrap();
    assert_eq!(j.verdict, Verdict::Unknown, "{j:?}");
    assert!(j.rules.is_empty(), "{j:?}");
    let err = Lock::new(&old).try_acquire().unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::Unrecognised(_)), "{err}");
    assert!(Lock::new(&old).reclaim().is_err());
    assert!(old.exists(), "an empty file of this boot was taken over");

    let fresh = dir.path().join("fresh.lock");
    std::fs::write(&fresh, "").unwrap();
    let err = Lock::new(&fresh).try_acquire().unwrap_err();
    assert!(!err.is_held(), "{err}");
    assert!(fresh.exists());
}
