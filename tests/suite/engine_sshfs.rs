//! The engine and the scanner on a real network file system: sshfs over ssh to this machine's
//! loopback address (see `engine_util::sshfs`), mounted as a user would mount it. A second
//! "host" is a process in its own UTS and mount namespaces, with another host name and
//! another boot id, sharing the same mount.
//!
//! What is checked: acquire, run and release leave nothing behind on the server; a held lock
//! makes a second taker wait and exit 75; a holder of this host that was SIGKILLed heals at
//! once; a holder of another host is `foreign` while its heartbeat is fresh and heals only once
//! it has expired; a file system without hard links is refused before anything is created;
//! the scanner calls sshfs a network file system and judges pid files there by the network
//! rules; and the torture run (workers, SIGKILLs, a counter) sees no overlap.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::util::engine::*;
use crate::util::sshfs::{Sshfs, other_host};
use locksmith::Verdict;
use locksmith::dialect::Windows;
use locksmith::engine::lock;

/// Starts the mount, or skips the test (returns `None`) saying why.
fn mount(options: &[&str]) -> Option<Sshfs> {
    match Sshfs::start_with(options) {
        Ok(m) => Some(m),
        Err(why) => {
            skip(format!("no sshfs mount possible: {why}"));
            None
        }
    }
}

fn output(mut c: Command) -> Output {
    c.stdout(Stdio::piped()).stderr(Stdio::piped());
    c.output().expect("run locksmith")
}

#[test]
fn acquire_run_release_leaves_nothing_behind() {
    let Some(m) = mount(&[]) else { return };
    let path = m.mnt.join("job.lock");
    for _ in 0..5 {
        let mut c = lock_cmd(&path, &[]);
        c.args(["--", "cat"]).arg(&path);
        let out = output(c);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        // COMMAND ran while the lock file held our record, written without a kernel lock.
        let rec: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(rec["kernel_lock"], false, "{rec}");
        assert_eq!(rec["hostname"], hostname().as_str());
        assert!(rec["heartbeat_secs"].as_f64().is_some(), "{rec}");
        assert_eq!(m.server_names(), Vec::<String>::new());
    }

    // The library: the guard holds the lock, the lock file is seen through the mount and on
    // the server, and release removes it (and nothing else is there).
    let g = lock(&path).try_acquire().unwrap();
    assert!(!g.kernel_lock());
    assert!(g.still_ours().unwrap());
    assert_eq!(m.server_names(), vec!["job.lock".to_string()]);
    let j = lock(&path).inspect().unwrap();
    assert_eq!(j.verdict, Verdict::Live, "{j:?}");
    g.release().unwrap();
    assert_eq!(m.server_names(), Vec::<String>::new());
}

#[test]
fn a_held_lock_makes_a_second_taker_wait_and_exit_75() {
    let Some(m) = mount(&[]) else { return };
    let path = m.mnt.join("job.lock");
    let mut holder = hold_with_cli(&path, &[]);

    let start = Instant::now();
    let out = output({
        let mut c = lock_cmd(&path, &["--timeout", "1"]);
        c.args(["--", "echo", "ran"]);
        c
    });
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(75), "{err}");
    assert!(start.elapsed() >= Duration::from_secs(1));
    assert!(out.stdout.is_empty(), "COMMAND must not run");
    assert!(
        err.contains(&format!("held by pid {}", holder.pid())),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    // The waiter left nothing of its own (no temporary file, no guard).
    assert_eq!(m.server_names(), vec!["job.lock".to_string()]);

    // A waiter without a deadline gets the lock once the holder releases it.
    let mut waiter = {
        let mut c = lock_cmd(&path, &[]);
        c.args(["--", "true"]);
        Group::spawn(c)
    };
    std::thread::sleep(Duration::from_millis(300));
    assert!(waiter.child.try_wait().unwrap().is_none(), "it waits");
    // The holder releases normally: its command ends (the lock tool itself is not killed).
    let sleep = wait_within(10, "the holder's command", || {
        group_pids(holder.pid())
            .into_iter()
            .find(|&p| p != holder.pid())
    });
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(sleep).unwrap(),
        rustix::process::Signal::TERM,
    )
    .unwrap();
    assert_eq!(holder.wait(20).code(), Some(128 + libc::SIGTERM));
    assert!(waiter.wait(20).success());
    assert_eq!(m.server_names(), Vec::<String>::new());
}

#[test]
fn a_killed_holder_of_this_host_heals_at_once() {
    let Some(m) = mount(&[]) else { return };
    let path = m.mnt.join("job.lock");
    let mut holder = hold_with_cli(&path, &[]);
    let pid = holder.pid();
    holder.kill();

    // Proven dead: this host (host name and boot id), and no such process.
    let j = lock(&path).inspect().unwrap();
    assert_eq!(j.verdict, Verdict::Stale, "{j:?}");
    assert!(
        j.evidence
            .iter()
            .any(|e| e.contains(&format!("no process {pid}"))),
        "{j:?}"
    );

    let start = Instant::now();
    let out = output({
        let mut c = lock_cmd(&path, &["--timeout", "30"]);
        c.args(["--", "true"]);
        c
    });
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "healing took {:?}",
        start.elapsed()
    );
    assert_eq!(m.server_names(), Vec::<String>::new());
}

#[test]
fn a_holder_of_another_host_is_foreign_until_its_heartbeat_expires() {
    let Some(m) = mount(&[]) else { return };
    let path = m.mnt.join("job.lock");
    let p = path.to_str().unwrap();
    let other_boot = "0badc0de-0000-4000-8000-000000000001";
    let cmd = match other_host(
        "elsewhere",
        other_boot,
        BIN,
        &["lock", "--heartbeat", "0.3", p, "--", "sleep", "60"],
    ) {
        Ok(c) => c,
        Err(why) => return skip(format!("no second host: {why}")),
    };
    let mut holder = Group::spawn(cmd);
    let rec = wait_within(20, "the other host to take the lock", || {
        std::fs::read_to_string(&path)
            .ok()
            .filter(|s| s.contains("elsewhere"))
    });
    assert!(rec.contains(other_boot), "{rec}");

    // Held from another host: the deadline passes, 75, naming that host.
    let out = output({
        let mut c = lock_cmd(&path, &["--timeout", "0.5"]);
        c.args(["--", "true"]);
        c
    });
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(75), "{err}");
    assert!(err.contains("\"elsewhere\""), "{err}");
    assert!(err.contains("cannot be checked from here"), "{err}");

    // Its heartbeat keeps it fresh well past a short window. (SFTP carries whole seconds of
    // mtime: a beat can look up to a second older than it is.)
    let windows = Windows {
        heartbeat_secs: 4,
        ..Windows::default()
    };
    std::thread::sleep(Duration::from_secs(5));
    let j = lock(&path).windows(&windows).inspect().unwrap();
    assert_eq!(j.verdict, Verdict::Foreign, "{j:?}");
    assert!(
        j.evidence.iter().any(|e| e.starts_with("last heartbeat")),
        "the heartbeat must be fresh: {j:?}"
    );

    // The other host's holder dies: nothing here can prove it, until the heartbeat expires.
    holder.kill();
    let killed = Instant::now();
    let j = lock(&path).windows(&windows).inspect().unwrap();
    assert_eq!(j.verdict, Verdict::Foreign, "{j:?}");
    let taker = lock(&path).windows(windows.clone());
    assert!(taker.try_acquire().unwrap_err().is_held());
    let g = taker
        .timeout(Duration::from_secs(30))
        .poll_interval(Duration::from_millis(50))
        .acquire()
        .unwrap();
    let waited = killed.elapsed();
    // At the earliest: the window, less one heartbeat interval and a second of mtime rounding.
    assert!(
        waited >= Duration::from_millis(2500),
        "taken {waited:?} after the holder died, before its heartbeat expired"
    );
    assert!(waited < Duration::from_secs(15), "took {waited:?}");
    g.release().unwrap();
    assert_eq!(m.server_names(), Vec::<String>::new());
}

#[test]
fn the_same_without_sshfs_caches() {
    // Caching changes what a lookup shows and when, never what the server decides.
    let Some(m) = mount(&["dir_cache=no", "attr_timeout=0", "entry_timeout=0"]) else {
        return;
    };
    let path = m.mnt.join("job.lock");
    let mut holder = hold_with_cli(&path, &[]);
    let out = output({
        let mut c = lock_cmd(&path, &["--timeout", "0.3"]);
        c.args(["--", "true"]);
        c
    });
    assert_eq!(out.status.code(), Some(75), "{out:?}");
    holder.kill();
    let out = output({
        let mut c = lock_cmd(&path, &["--timeout", "5"]);
        c.args(["--", "true"]);
        c
    });
    assert!(out.status.success(), "{out:?}");
    assert_eq!(m.server_names(), Vec::<String>::new());
}

#[test]
fn a_file_system_without_hard_links_is_refused_before_anything_is_created() {
    let Some(m) = mount(&["disable_hardlink"]) else {
        return;
    };
    let path = m.mnt.join("job.lock");
    let out = output({
        let mut c = lock_cmd(&path, &["--timeout", "1"]);
        c.args(["--", "echo", "ran"]);
        c
    });
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(out.stdout.is_empty(), "COMMAND must not run");
    assert_eq!(err.lines().count(), 1, "{err}");
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
    let out = output({
        let mut c = with_no_file_size(BIN);
        c.args(lock_once_args(&path));
        c
    });
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("write the owner record"), "{err}");
    assert!(out.stdout.is_empty());
    assert_eq!(m.server_names(), Vec::<String>::new());
}

#[test]
fn the_scanner_calls_sshfs_a_network_file_system() {
    let Some(m) = mount(&[]) else { return };
    let local = tempfile::tempdir().unwrap();
    let dead = dead_pid();
    for d in [m.mnt.as_path(), local.path()] {
        std::fs::write(d.join("app.pid"), format!("{dead}\n")).unwrap();
    }
    // An engine lock of this host whose holder was killed: this host is proven by its boot id.
    let mut holder = hold_with_cli(&m.mnt.join("job.lock"), &[]);
    holder.kill();

    let out = output({
        let mut c = Command::new(BIN);
        c.args(["--scan", "--json"]).arg(&m.mnt).arg(local.path());
        c
    });
    let report: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    let locks = report["locks"].as_array().unwrap();
    let find = |p: &Path| {
        locks
            .iter()
            .find(|l| l["path"] == p.to_str().unwrap())
            .unwrap_or_else(|| panic!("{} not reported: {report}", p.display()))
    };

    let remote = find(&m.mnt.join("app.pid"));
    assert_eq!(remote["fs"]["type"], "fuse.sshfs", "{remote}");
    assert_eq!(remote["fs"]["network"], true, "{remote}");
    // A PID with no host on a network file system may be another machine's: never stale.
    assert_eq!(remote["verdict"], "foreign", "{remote}");

    let here = find(&local.path().join("app.pid"));
    assert_eq!(here["fs"]["network"], false, "{here}");
    assert_eq!(here["verdict"], "stale", "{here}");

    let engine = find(&m.mnt.join("job.lock"));
    assert_eq!(engine["fs"]["network"], true, "{engine}");
    assert_eq!(engine["verdict"], "stale", "{engine}");
}

#[test]
fn torture_on_sshfs_no_overlap_no_lost_update() {
    let Some(m) = mount(&[]) else { return };
    crate::util::torture::run(
        &m.mnt,
        crate::util::torture::Params {
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
    assert!(left.is_empty(), "left behind on the server: {left:?}");
}
