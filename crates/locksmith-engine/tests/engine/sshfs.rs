//! The engine on a real network file system: sshfs over ssh to this machine's loopback
//! address ([`crate::util::sshfs`]), mounted as a user would mount it. A second "host" is a
//! process in its own UTS and mount namespaces, with another host name and another boot id,
//! sharing the same mount.
//!
//! What is checked: acquire, hold and release leave nothing behind on the server; a held lock
//! makes a second taker wait, fail at its deadline and get in once it is released; a holder of
//! this host that was SIGKILLed heals at once; a holder of another host is `foreign` while its
//! heartbeat is fresh and heals only once it has expired (beyond the skew a server's clock may
//! have, and on a clock that cannot have stepped that far: otherwise it stays `foreign`); a file system without hard links is
//! refused before anything is created; and the torture run (workers, SIGKILLs, a counter) sees
//! no overlap.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::util::sshfs::{mount_or_skip as mount, other_host};
use crate::util::*;
use locksmith_engine::{Lock, StaleWindows, Verdict};
use locksmith_sys::clock::Clock;
use locksmith_sys::time::NETWORK_SKEW_MS;

/// The record at `path`, read through the mount.
fn record(path: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

#[test]
fn acquire_hold_release_leaves_nothing_behind() {
    let Some(m) = mount(&[]) else { return };
    let path = m.mnt.join("job.lock");
    for _ in 0..5 {
        let holder = hold("hold", &path);
        // Our record, written without a kernel lock (a network file system), with a heartbeat.
        let rec = record(&path);
        assert_eq!(rec["kernel_lock"], false, "{rec}");
        assert_eq!(rec["pid"], holder.pid(), "{rec}");
        assert_eq!(rec["hostname"], hostname().as_str());
        assert!(rec["heartbeat_secs"].as_f64().is_some(), "{rec}");
        assert_eq!(m.server_names(), vec!["job.lock".to_string()]);
        holder.release();
        assert_eq!(m.server_names(), Vec::<String>::new());
    }

    // In this process: the guard holds the lock, the lock file is seen through the mount and
    // on the server, and release removes it (and nothing else is there).
    let g = Lock::new(&path).try_acquire().unwrap();
    assert!(!g.kernel_lock());
    assert!(g.still_ours().unwrap());
    assert_eq!(m.server_names(), vec!["job.lock".to_string()]);
    let j = Lock::new(&path).inspect().unwrap();
    assert_eq!(j.verdict, Verdict::Live, "{j:?}");
    g.release().unwrap();
    assert_eq!(m.server_names(), Vec::<String>::new());
}

#[test]
fn a_held_lock_makes_a_second_taker_wait() {
    let Some(m) = mount(&[]) else { return };
    let path = m.mnt.join("job.lock");
    let holder = hold("hold", &path);

    let start = Instant::now();
    let e = Lock::new(&path)
        .timeout(Duration::from_secs(1))
        .acquire()
        .unwrap_err();
    assert!(e.is_held(), "{e}");
    assert!(start.elapsed() >= Duration::from_secs(1));
    assert!(
        e.to_string()
            .contains(&format!("held by pid {}", holder.pid())),
        "{e}"
    );
    // The waiter left nothing of its own (no temporary file, no guard).
    assert_eq!(m.server_names(), vec!["job.lock".to_string()]);

    // A waiter without a deadline gets the lock once the holder releases it.
    let mut waiter = spawn_child("acquire", &path);
    let answers = Answers::of(&mut waiter);
    std::thread::sleep(Duration::from_millis(300));
    assert!(waiter.child.try_wait().unwrap().is_none(), "it waits");
    holder.release();
    assert_eq!(answers.next(20), "acquired");
    assert!(waiter.wait(20).success());
    assert_eq!(m.server_names(), Vec::<String>::new());
}

#[test]
fn a_killed_holder_of_this_host_heals_at_once() {
    let Some(m) = mount(&[]) else { return };
    let path = m.mnt.join("job.lock");
    let mut holder = hold("hold", &path);
    let pid = holder.pid();
    holder.group.kill();

    // Proven dead: this host (host name and boot id), and no such process.
    let j = Lock::new(&path).inspect().unwrap();
    assert_eq!(j.verdict, Verdict::Stale, "{j:?}");
    assert!(
        j.evidence
            .iter()
            .any(|e| e.contains(&format!("no process {pid}"))),
        "{j:?}"
    );

    let start = Instant::now();
    let g = Lock::new(&path)
        .timeout(Duration::from_secs(30))
        .acquire()
        .unwrap();
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "healing took {:?}",
        start.elapsed()
    );
    g.release().unwrap();
    assert_eq!(m.server_names(), Vec::<String>::new());
}

#[test]
fn a_holder_of_another_host_is_foreign_until_its_heartbeat_expires() {
    let Some(m) = mount(&[]) else { return };
    let path = m.mnt.join("job.lock");
    let other_boot = "0badc0de-0000-4000-8000-000000000001";
    let exe = std::env::current_exe().unwrap();
    let mut cmd = match other_host("elsewhere", other_boot, exe.to_str().unwrap(), &[]) {
        Ok(c) => c,
        Err(why) => return skip(format!("no second host: {why}")),
    };
    as_child(&mut cmd, "hold-heartbeat", &path)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped());
    let mut holder = Group::spawn(cmd);
    let answers = Answers::of(&mut holder);
    assert!(answers.next(30).starts_with("held "));
    let rec = std::fs::read_to_string(&path).unwrap();
    assert!(rec.contains("\"elsewhere\""), "{rec}");
    assert!(rec.contains(other_boot), "{rec}");

    // Held from another host: the deadline passes, naming that host.
    let e = Lock::new(&path)
        .timeout(Duration::from_millis(500))
        .acquire()
        .unwrap_err();
    assert!(e.is_held(), "{e}");
    let err = e.to_string();
    assert!(err.contains("\"elsewhere\""), "{err}");
    assert!(err.contains("cannot be checked from here"), "{err}");

    // Its heartbeat keeps it fresh well past a short window. (SFTP carries whole seconds of
    // mtime: a beat can look up to a second older than it is.)
    let windows = StaleWindows {
        heartbeat: Duration::from_secs(4),
    };
    std::thread::sleep(Duration::from_secs(5));
    let j = Lock::new(&path).windows(windows).inspect().unwrap();
    assert_eq!(j.verdict, Verdict::Foreign, "{j:?}");
    assert!(
        j.evidence
            .iter()
            .any(|e| e.contains("within its writer's 4 s window")),
        "the heartbeat must be fresh: {j:?}"
    );

    // The other host's holder dies: nothing here can prove it, until the heartbeat expires:
    // its window, and the minute a server's clock may be off by, beyond any forward step of
    // this host's clock since it booted.
    holder.kill();
    let killed = Instant::now();
    let j = Lock::new(&path).windows(windows).inspect().unwrap();
    assert_eq!(j.verdict, Verdict::Foreign, "{j:?}");
    let taker = Lock::new(&path).windows(windows);
    assert!(taker.try_acquire().unwrap_err().is_held());
    let expiry = windows.heartbeat + Duration::from_millis(NETWORK_SKEW_MS as u64);
    let clock = Clock::read(locksmith_sys::host::boot_time());
    let step = clock
        .step_ms
        .map(|s| Duration::from_millis(s.max(0) as u64));
    match step.filter(|s| *s < Duration::from_secs(60)) {
        Some(step) => {
            let g = taker
                .timeout(expiry + step + Duration::from_secs(30))
                .poll_interval(Duration::from_millis(50))
                .acquire()
                .unwrap();
            let waited = killed.elapsed();
            // At the earliest: the expiry, less one heartbeat interval and a second of mtime
            // rounding.
            assert!(
                waited >= expiry - Duration::from_millis(1300),
                "taken {waited:?} after the holder died, before its heartbeat expired"
            );
            assert!(
                waited < expiry + step + Duration::from_secs(15),
                "took {waited:?}"
            );
            g.release().unwrap();
        }
        None => {
            // A clock that may have stepped that far (or that nothing tells of) proves no
            // heartbeat expired: the lock stays foreign, saying why.
            std::thread::sleep(expiry + Duration::from_secs(2));
            let j = Lock::new(&path).windows(windows).inspect().unwrap();
            assert_eq!(j.verdict, Verdict::Foreign, "{j:?}");
            assert!(
                j.evidence
                    .iter()
                    .any(|e| e.contains(&clock.how) && e.ends_with("that proves nothing")),
                "{j:?}"
            );
            assert!(taker.try_acquire().unwrap_err().is_held());
            std::fs::remove_file(&path).unwrap();
        }
    }
    assert_eq!(m.server_names(), Vec::<String>::new());
}

#[test]
fn the_same_without_sshfs_caches() {
    // Caching changes what a lookup shows and when, never what the server decides.
    let Some(m) = mount(&["dir_cache=no", "attr_timeout=0", "entry_timeout=0"]) else {
        return;
    };
    let path = m.mnt.join("job.lock");
    let mut holder = hold("hold", &path);
    let e = Lock::new(&path)
        .timeout(Duration::from_millis(300))
        .acquire()
        .unwrap_err();
    assert!(e.is_held(), "{e}");
    holder.group.kill();
    let g = Lock::new(&path)
        .timeout(Duration::from_secs(5))
        .acquire()
        .unwrap();
    g.release().unwrap();
    assert_eq!(m.server_names(), Vec::<String>::new());
}

#[test]
fn a_file_system_without_hard_links_is_refused_before_anything_is_created() {
    let Some(m) = mount(&["disable_hardlink"]) else {
        return;
    };
    let path = m.mnt.join("job.lock");
    let e = Lock::new(&path)
        .timeout(Duration::from_secs(1))
        .acquire()
        .unwrap_err();
    assert!(!e.is_held(), "{e}");
    let err = e.to_string();
    assert!(err.contains("fuse.sshfs"), "{err}");
    assert!(err.contains("hard links"), "{err}");
    assert!(err.contains("nothing was created"), "{err}");
    assert_eq!(m.server_names(), Vec::<String>::new());
}

#[test]
fn a_failing_record_write_leaves_nothing_behind() {
    let Some(m) = mount(&[]) else { return };
    let path = m.mnt.join("job.lock");
    // A file size limit of zero: the record write fails (EFBIG), as on a full disk.
    let a = crate::failures::try_with_no_file_size(&path, false);
    assert!(a.starts_with("error "), "{a}");
    assert!(a.contains("write the owner record"), "{a}");
    assert_eq!(m.server_names(), Vec::<String>::new());
}

#[test]
fn torture_on_sshfs_no_overlap_no_lost_update() {
    let Some(m) = mount(&[]) else { return };
    crate::torture::run(
        &m.mnt,
        crate::torture::Params {
            workers: 4,
            sections: 25,
            min_kills: 10,
            max_kills: 20,
        },
    );
    // Seen from the server: no lock, guard, temporary file or file kept under a hidden name
    // (a network file system's way of removing a file that is still open).
    let left: Vec<String> = m
        .server_names()
        .into_iter()
        .filter(|n| {
            n == "job.lock"
                || n.starts_with(".locksmith")
                || n.ends_with(".reclaim")
                || n.starts_with(".fuse_hidden")
        })
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}
