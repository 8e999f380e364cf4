//! Lock files made by the real programs, judged by the real binary: git waiting in its
//! editor, vim with unsaved changes under tmux, flock(1), and a postmaster.pid naming a
//! recycled PID. Each test SIGKILLs its program halfway and checks the verdict turns stale
//! (or free), and what `--scan --reclaim` then does. A test whose program is not installed
//! skips ([`require`]), and fails under CI.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::util::judging::{
    scan_replayed, steady, up_for_at_least, written_ago_this_boot, written_before_boot,
};
use crate::util::*;

/// Scans `root` until the lock at `path` satisfies `ok`, and returns that report.
fn scan_until(
    env: &Env,
    root: &Path,
    path: &Path,
    what: &str,
    ok: impl Fn(&Lock) -> bool,
) -> Report {
    let start = std::time::Instant::now();
    loop {
        let (report, _) = env.scan_json(&[root]);
        if report.lock(path).is_some_and(&ok) {
            return report;
        }
        assert!(
            start.elapsed() < DEADLINE,
            "timed out waiting for {what}; last seen: {:#?}",
            report.lock(path)
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}

#[test]
fn git_commit_in_its_editor_holds_index_lock_then_leaves_it_stale() {
    if !require("git") {
        return;
    }
    let env = Env::new();
    let home = env.path().join("home");
    let repo = env.path().join("repo");
    fs::create_dir_all(&home).unwrap();
    git_repo_with_a_commit(&repo, &home);
    fs::write(repo.join("a.txt"), "two\n").unwrap();

    // `git commit -a` writes index.lock, then waits for its editor (which never returns).
    let editor = env.path().join("editor.sh");
    fs::write(&editor, "#!/bin/sh\nexec sleep 600\n").unwrap();
    fs::set_permissions(&editor, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let mut commit = Group::spawn(
        git(&repo, &home)
            .args(["commit", "-a"])
            .env("GIT_EDITOR", &editor)
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    );
    let lock = repo.join(".git/index.lock");
    wait_for("git's editor to start", || {
        (lock.exists() && commit.members().iter().any(|(_, c)| c == "sleep")).then_some(())
    });
    let report = scan_until(&env, &repo, &lock, "index.lock to be live", |l| {
        l.verdict == "live"
    });
    let l = report.expect_lock(&lock);
    assert_eq!(l.dialect, "git");
    assert!(!l.reclaimable);
    let git = l
        .process
        .as_ref()
        .expect("the git working in the repository");
    assert_eq!(git.name, "git", "{git:?}");

    commit.kill();
    assert!(lock.exists(), "git died without cleaning up");
    let report = scan_until(&env, &repo, &lock, "index.lock to be stale", |l| {
        l.verdict == "stale"
    });
    assert!(report.expect_lock(&lock).reclaimable);

    let out = env.run(["--scan".as_ref(), "--reclaim".as_ref(), repo.as_os_str()]);
    assert_code(&out, 0);
    assert!(!lock.exists());
    assert!(
        stdout(&out).contains(&format!("removed {}", lock.display())),
        "{}",
        stdout(&out)
    );
    // The repository works again.
    git_ok(&repo, &home, &["commit", "-q", "-a", "-m", "second"]);
}

/// A tmux server on its own socket, killed when dropped.
struct Tmux {
    socket: PathBuf,
}

impl Tmux {
    fn cmd(&self) -> Command {
        let mut c = Command::new("tmux");
        c.arg("-S").arg(&self.socket).arg("-f").arg("/dev/null");
        c.env("TERM", "xterm").stdin(Stdio::null());
        c
    }

    fn ok(&self, args: &[&str]) -> String {
        let out = self.cmd().args(args).output().unwrap();
        assert!(out.status.success(), "tmux {args:?}: {}", stderr(&out));
        stdout(&out)
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.cmd().arg("kill-server").output();
    }
}

#[test]
fn vim_swap_with_unsaved_changes_is_kept_with_the_recover_hint() {
    if !require("vim") || !require("tmux") {
        return;
    }
    let env = Env::new();
    let docs = env.path().join("docs");
    fs::create_dir(&docs).unwrap();
    fs::write(docs.join("notes.txt"), "hello\n").unwrap();
    let tmux = Tmux {
        socket: env.path().join("tmux.sock"),
    };
    let mut start = tmux.cmd();
    start
        .args(["new-session", "-d", "-s", "t", "-x", "80", "-y", "24"])
        .arg("exec vim -u NONE -i NONE -N notes.txt")
        .current_dir(&docs)
        // A home that the file is not under: vim records its full path (one under HOME it
        // records as `~USER/…`, which it reads back as USER's home in the password database).
        .env("HOME", env.path().join("home"));
    assert!(start.status().unwrap().success());
    let swap = docs.join(".notes.txt.swp");
    wait_for("vim's swap file", || swap.exists().then_some(()));
    let vim: i32 = tmux
        .ok(&["display-message", "-p", "-t", "t", "#{pane_pid}"])
        .trim()
        .parse()
        .unwrap();
    tmux.ok(&["send-keys", "-t", "t", "i", "words never saved", "Escape"]);

    let report = scan_until(
        &env,
        &docs,
        &swap,
        "a live swap with unsaved changes",
        |l| l.verdict == "live" && l.unsaved_changes == Some(true),
    );
    let l = report.expect_lock(&swap);
    assert_eq!(l.dialect, "vim-swap");
    assert_eq!(l.owner.as_ref().and_then(|o| o.pid), Some(vim as i64));
    // Advice follows the verdict: while its vim runs, there is nothing to recover.
    assert!(
        l.evidence.iter().all(|e| !e.contains("vim -r")),
        "{:#?}",
        l.evidence
    );
    assert!(
        l.evidence
            .iter()
            .any(|e| e.contains("its editor is running")),
        "{:#?}",
        l.evidence
    );
    let out = env.run(["--scan".as_ref(), docs.as_os_str()]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert!(!stdout(&out).contains("vim -r"), "{}", stdout(&out));

    // Its text written to the swap file (as vim does on its own after `updatetime`), so that
    // there is something to recover; then the crash.
    // (Block 0 alone is one page, 4096 bytes here.)
    tmux.ok(&["send-keys", "-t", "t", ":preserve", "Enter"]);
    wait_for("vim to write its text to the swap file", || {
        (fs::metadata(&swap).unwrap().len() > 4096).then_some(())
    });
    kill9(vim);
    wait_for("vim to die", || (!alive(vim)).then_some(()));
    let report = scan_until(&env, &docs, &swap, "a stale swap", |l| l.verdict == "stale");
    assert_eq!(report.expect_lock(&swap).unsaved_changes, Some(true));
    let notes = docs.join("notes.txt");
    let hint = format!("vim -r {}", swap.display());
    let table = stdout(&env.run(["--scan".as_ref(), docs.as_os_str()]));
    assert!(table.contains(&hint), "{table}");

    // --reclaim keeps it and says how to recover.
    let (report, out) = env.reclaim_json(&[], &docs);
    assert_eq!(out.status.code(), Some(1), "a stale swap remains");
    let r = &report.reclaimed.unwrap()[0];
    assert_eq!((r.ok, r.action.as_str()), (false, "kept"));
    assert!(r.error.as_deref().unwrap().contains(&hint), "{r:?}");
    assert!(swap.exists());
    let out = env.run(["--scan".as_ref(), "--reclaim".as_ref(), docs.as_os_str()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stdout(&out).contains(&hint));
    assert!(swap.exists());

    // Recovered as vim says (`vim -r`, then `:wq`): vim leaves the old swap file, still
    // flagged, and the file is newer than it. The advice says so instead of "recover first".
    let mut recover = tmux.cmd();
    recover
        .args(["new-session", "-d", "-s", "r", "-x", "80", "-y", "24"])
        .arg("exec vim -u NONE -i NONE -N -r notes.txt")
        .current_dir(&docs)
        .env("HOME", env.path().join("home"));
    assert!(recover.status().unwrap().success());
    wait_for("vim -r to recover", || {
        tmux.ok(&["capture-pane", "-p", "-t", "r"])
            .contains("Recovery completed")
            .then_some(())
    });
    tmux.ok(&["send-keys", "-t", "r", "Enter"]);
    tmux.ok(&["send-keys", "-t", "r", ":wq", "Enter"]);
    wait_for("the recovered file to be written", || {
        fs::read_to_string(&notes)
            .unwrap()
            .contains("words never saved")
            .then_some(())
    });
    assert!(swap.exists(), "vim leaves the swap file it recovered from");
    let report = scan_until(&env, &docs, &swap, "the recovered swap", |l| {
        l.evidence.iter().any(|e| e.contains("was written after"))
    });
    let l = report.expect_lock(&swap);
    assert_eq!(
        (l.verdict.as_str(), l.unsaved_changes),
        ("stale", Some(true))
    );
    let table = stdout(&env.run(["--scan".as_ref(), docs.as_os_str()]));
    assert!(
        table.contains("was written after them") && table.contains("if you recovered them"),
        "{table}"
    );

    // --include-unsaved removes it, after saving a copy that `vim -r` can still use.
    let content = fs::read(&swap).unwrap();
    let (report, out) = env.reclaim_json(&["--include-unsaved"], &docs);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!swap.exists());
    let r = &report.reclaimed.unwrap()[0];
    assert_eq!(r.action, "removed");
    assert_eq!(r.copy(content.len()), content);
    assert_eq!(env.journal()[0]["unsaved_changes"], true);

    // The saved copy lies in our state directory, under the directory scanned now: it is not
    // a lock, and does not make every later scan exit 1.
    let saved = PathBuf::from(r.saved_to.as_ref().unwrap());
    assert!(saved.starts_with(env.path()), "{}", saved.display());
    let (report, out) = env.scan_json(&[env.path()]);
    assert!(
        report
            .locks
            .iter()
            .all(|l| !Path::new(&l.path).starts_with(env.state_dir())),
        "{:#?}",
        report.locks
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

#[test]
fn flock_holder_is_live_and_a_released_flock_file_is_never_reclaimed() {
    if !require("flock") {
        return;
    }
    let env = Env::new();
    let dir = env.path().join("jobs");
    fs::create_dir(&dir).unwrap();
    let lock = dir.join("nightly.lock");
    let mut holder = Group::spawn(
        Command::new("flock")
            .arg(&lock)
            .args(["sleep", "600"])
            .stdin(Stdio::null()),
    );
    let report = scan_until(&env, &dir, &lock, "a live flock", |l| l.verdict == "live");
    let l = report.expect_lock(&lock);
    assert_eq!(l.dialect, "flock");
    let group: Vec<i64> = holder.members().iter().map(|(p, _)| *p as i64).collect();
    assert!(
        l.holders
            .iter()
            .any(|h| h.how == "flock" && group.contains(&h.pid)),
        "{l:#?} vs {group:?}"
    );

    // Released, the empty file left by flock(1) could as well be a lock by existence (an
    // O_EXCL writer's): nothing says its writers use kernel locks, so it is not proven free.
    holder.kill();
    scan_until(&env, &dir, &lock, "a released flock file", |l| {
        l.verdict == "unknown"
    });
    let (report, out) = env.reclaim_json(&[], &dir);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(report.reclaimed.map(|r| r.len()), Some(0));
    assert!(lock.exists(), "a free flock file must never be deleted");
}

#[test]
fn postmaster_pid_naming_a_running_sleep_is_stale() {
    if !require("sleep") {
        return;
    }
    let env = Env::new();
    let data = env.path().join("pgdata");
    fs::create_dir(&data).unwrap();
    let pidfile = data.join("postmaster.pid");
    let write_pidfile = |pid: i32, started: i64| {
        fs::write(
            &pidfile,
            format!(
                "{pid}\n{}\n{started}\n5432\n/var/run/postgresql\nlocalhost\n  5432001    65536\nready   \n",
                data.display()
            ),
        )
        .unwrap();
    };
    // A `sleep` that was running before the server recorded its start: it may have written
    // the file (a wrapper, a re-titled process). Its name proves nothing either way.
    let before = sleeper();
    std::thread::sleep(std::time::Duration::from_secs(3));
    write_pidfile(before.pid() as i32, jiff::Timestamp::now().as_second());
    let (report, out) = env.scan_json(&[&data]);
    assert_eq!(out.status.code(), Some(0));
    let l = report.expect_lock(&pidfile);
    assert_eq!(l.verdict, "unknown", "{:#?}", l.evidence);
    assert!(
        l.evidence.iter().any(|e| e.contains("sleep")),
        "the evidence says what the process is: {:#?}",
        l.evidence
    );

    // The Docker trap: postgres died, its PID now belongs to a `sleep` that started after
    // the server recorded its start. That it started later proves reuse only on a clock
    // known not to have stepped since (as the recording says it, replayed): on one that may
    // have stepped forward by an hour, it proves nothing.
    let recorded = jiff::Timestamp::now().as_second();
    std::thread::sleep(std::time::Duration::from_secs(3));
    let sleep = sleeper();
    write_pidfile(sleep.pid() as i32, recorded);
    let (report, scanned) = scan_replayed(&env, &["--json"], &data, |ev| {
        steady(ev);
        up_for_at_least(ev, 3600);
    });
    let l = report.expect_lock(&pidfile);
    assert_eq!(l.dialect, "postgres");
    assert_eq!(l.verdict, "stale", "{:#?}", l.evidence);
    assert_eq!(l.proofs[0].rule, "pid-reused");
    assert_eq!(
        l.owner.as_ref().and_then(|o| o.pid),
        Some(sleep.pid() as i64)
    );
    assert!(
        l.evidence
            .iter()
            .any(|e| e.contains("sleep") && e.contains("was reused")),
        "the evidence names the impostor: {:#?}",
        l.evidence
    );
    let (report, _) = scan_replayed(&env, &["--json"], &data, |ev| {
        up_for_at_least(ev, 3600);
        ev.clock = Some(locksmith::probe::clock::Clock {
            step_ms: Some(3600 * 1000),
            how: "the wall clock may have stepped forward by up to 1 h since this boot began"
                .into(),
        });
    });
    let l = report.expect_lock(&pidfile);
    assert_eq!(l.verdict, "unknown", "{:#?}", l.evidence);
    assert!(
        l.evidence
            .iter()
            .any(|e| e.contains("that it started later proves nothing")),
        "{:#?}",
        l.evidence
    );

    // A real reclaim re-judges on this machine's own clock: it removes the lock where that
    // clock proves the reuse (the scan said stale), keeps it where it cannot (unknown), and
    // never touches the process.
    let here = parse_report(&scanned).expect_lock(&pidfile).verdict.clone();
    assert!(matches!(here.as_str(), "stale" | "unknown"), "{here}");
    let out = env.run(["--scan".as_ref(), "--reclaim".as_ref(), data.as_os_str()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(pidfile.exists(), here == "unknown", "judged {here} here");
    assert!(
        alive(sleep.pid() as i32),
        "reclaim never touches the process"
    );
}

#[test]
fn dotlockfile_of_a_dead_shell_is_stale_and_of_a_live_one_is_live() {
    if !require("dotlockfile") {
        return;
    }
    let env = Env::new();
    let dir = env.path().join("spool");
    fs::create_dir(&dir).unwrap();
    // `dotlockfile -p` writes the PID of its caller: a shell that exits at once.
    let gone = dir.join("gone.lock");
    let st = Command::new("sh")
        .arg("-c")
        .arg(format!("dotlockfile -p {} ; true", gone.display()))
        .status()
        .unwrap();
    assert!(st.success());
    // ... and a shell that stays.
    let held = dir.join("held.lock");
    let _shell = Group::spawn(
        Command::new("sh")
            .arg("-c")
            .arg(format!(
                "dotlockfile -p {} && exec sleep 600",
                held.display()
            ))
            .stdin(Stdio::null()),
    );
    wait_for("dotlockfile", || held.exists().then_some(()));
    let (report, _) = env.scan_json(&[&dir]);
    let g = report.expect_lock(&gone);
    assert_eq!(
        (g.dialect.as_str(), g.verdict.as_str()),
        ("pidfile", "stale")
    );
    let h = report.expect_lock(&held);
    assert_eq!(
        (h.dialect.as_str(), h.verdict.as_str()),
        ("pidfile", "live")
    );
}

#[test]
fn soft_file_lock_of_another_host_is_foreign_and_of_this_host_is_judged() {
    let Some(py) = python_with_filelock4() else {
        return;
    };
    let env = Env::new();
    let dir = env.path().join("shared");
    fs::create_dir(&dir).unwrap();

    // This host: live while held, stale once its holder is killed.
    let ours = dir.join("ours.lock");
    let mut holder = hold_soft_file_lock(&py, &ours, None);
    let report = scan_until(&env, &dir, &ours, "a live SoftFileLock", |l| {
        l.verdict == "live"
    });
    assert_eq!(report.expect_lock(&ours).dialect, "pidfile");
    holder.kill();
    scan_until(&env, &dir, &ours, "a stale SoftFileLock", |l| {
        l.verdict == "stale"
    });

    // Another host name (its own UTS namespace): foreign while held and after, never stale.
    let probe = Command::new("unshare")
        .args(["--uts", "hostname", "locksmith-probe"])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .status();
    if !require_that(
        probe.is_ok_and(|s| s.success()),
        "`unshare --uts` is not permitted here (needs CAP_SYS_ADMIN)",
    ) {
        return;
    }
    let theirs = dir.join("theirs.lock");
    let mut holder = hold_soft_file_lock(&py, &theirs, Some("cluster-node-7"));
    assert!(
        fs::read_to_string(&theirs)
            .unwrap()
            .contains("cluster-node-7"),
        "the record names the other host"
    );
    let (report, out) = env.scan_json(&[&dir]);
    let l = report.expect_lock(&theirs);
    assert_eq!(
        (l.dialect.as_str(), l.verdict.as_str()),
        ("pidfile", "foreign"),
        "{l:#?}"
    );
    assert_eq!(
        l.owner.as_ref().and_then(|o| o.hostname.as_deref()),
        Some("cluster-node-7")
    );
    assert_eq!(out.status.code(), Some(1), "ours.lock is still stale");
    holder.kill();
    let (report, _) = env.scan_json(&[&dir]);
    assert_eq!(report.expect_lock(&theirs).verdict, "foreign");
    // And reclaim leaves it alone.
    let out = env.run(["--scan".as_ref(), "--reclaim".as_ref(), dir.as_os_str()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(theirs.exists() && !ours.exists());
}

/// proper-lockfile, installed with npm into the test's target directory once (`.ci/run`
/// installs it there too). `None` (the test skips) when node or npm is missing.
fn proper_lockfile() -> Option<PathBuf> {
    if !require("node") || !require("npm") {
        return None;
    }
    let prefix = Path::new(env!("CARGO_TARGET_TMPDIR")).join("node");
    let module = prefix.join("node_modules/proper-lockfile");
    if !module.join("package.json").exists() {
        let out = Command::new("npm")
            .args(["install", "--silent", "--no-audit", "--no-fund", "--prefix"])
            .arg(&prefix)
            .arg("proper-lockfile@4")
            .stdin(Stdio::null())
            .output();
        if !out.as_ref().is_ok_and(|o| o.status.success()) || !module.exists() {
            skip(format!(
                "`npm install proper-lockfile` failed: {}",
                out.map(|o| stderr(&o)).unwrap_or_else(|e| e.to_string())
            ));
            return None;
        }
    }
    Some(prefix.join("node_modules"))
}

#[test]
fn proper_lockfile_with_a_long_stale_is_never_stale_while_held() {
    let Some(node_path) = proper_lockfile() else {
        return;
    };
    let env = Env::new();
    // On a file system that survives a reboot (the build's, not a /tmp that may be tmpfs): the
    // last step writes the lock before this boot.
    let place = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let dir = place.path().join("app");
    fs::create_dir(&dir).unwrap();
    let db = dir.join("db.json");
    fs::write(&db, "{}").unwrap();
    // `stale: 60000`: proper-lockfile refreshes the lock directory's mtime every 30 s.
    let script = "const lockfile = require('proper-lockfile');\n\
                  lockfile.lock(process.argv[1], { stale: 60000 })\n\
                  .then(() => setInterval(() => {}, 1000))\n\
                  .catch((e) => { console.error(e); process.exit(1); });\n";
    let mut holder = Group::spawn(
        Command::new("node")
            .args(["-e", script])
            .arg(&db)
            .env("NODE_PATH", &node_path)
            .stdin(Stdio::null())
            .stdout(Stdio::null()),
    );
    let lock = dir.join("db.json.lock");
    wait_for("proper-lockfile's lock directory", || {
        lock.is_dir().then_some(())
    });
    let (report, out) = env.scan_json(&[&dir]);
    let l = report.expect_lock(&lock);
    assert_eq!(l.dialect, "mkdir-lock");
    assert_eq!(l.verdict, "unknown", "{l:#?}");
    assert_eq!(out.status.code(), Some(0));
    // Each scan below is recorded, and judged again with the lock's last change as the test
    // says (in this boot, on a clock known steady).
    let aged = |extra: &[&str], secs: i64| {
        let (report, _) = scan_replayed(&env, extra, &dir, |ev| {
            steady(ev);
            written_ago_this_boot(ev, &lock, secs);
        });
        report
    };
    // 20 s after its last refresh (10 s before the next), its holder still runs: not stale.
    assert_eq!(aged(&["--json"], 20).expect_lock(&lock).verdict, "unknown");
    let out = env.run(["--scan".as_ref(), "--reclaim".as_ref(), dir.as_os_str()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(lock.is_dir(), "a held lock must not be reclaimed");

    // Its holder gone: its age proves nothing by itself (a shell script's `mkdir` lock looks
    // the same and is never refreshed) ... Ten minutes old: past the window declared below,
    // and of this boot (from before it, it is stale: see the end).
    holder.kill();
    assert_eq!(aged(&["--json"], 600).expect_lock(&lock).verdict, "unknown");

    // ... until the configuration declares its writer and the refresh it promises.
    let cfg = env.path().join("proper-lockfile.json");
    fs::write(
        &cfg,
        r#"{"dialects": [{"name": "app-db", "patterns": ["**/app/*.lock"],
            "format": "existence", "programs": ["node"], "stale_after_secs": 60}]}"#,
    )
    .unwrap();
    let declared = ["--json", "--config", cfg.to_str().unwrap()];
    let report = aged(&declared, 600);
    let l = report.expect_lock(&lock);
    assert_eq!(
        (l.dialect.as_str(), l.verdict.as_str()),
        ("app-db", "stale")
    );
    assert_eq!(l.proofs[0].rule, "heartbeat-expired");
    // Refreshed within the declared window: not proven either way.
    assert_eq!(aged(&declared, 20).expect_lock(&lock).verdict, "unknown");
    // Written before this boot: stale by the earlier-boot rule, declared or not (every process
    // of that boot is gone).
    for extra in [&declared[..], &["--json"]] {
        let (report, _) = scan_replayed(&env, extra, &dir, |ev| {
            steady(ev);
            up_for_at_least(ev, 3600);
            written_before_boot(ev, &lock, 600);
        });
        let l = report.expect_lock(&lock);
        assert_eq!(l.verdict, "stale", "{l:#?}");
        assert_eq!(l.proofs[0].rule, "earlier-boot");
    }
    // Its mtime set back ten minutes is no missed refresh, nor its mtime set to before this
    // boot a write before it: anyone who may write it can set that, and the kernel's ctime
    // says it changed now. On this machine's clock, and on one known steady, it stays
    // unproven.
    for (mtime_ms, what) in [
        (now_ms() - 600_000, "ten minutes back"),
        (now_ms() - 400 * 86_400_000, "400 days back"),
    ] {
        set_mtime_ms(&lock, mtime_ms);
        for extra in [&declared[..], &["--json"]] {
            let (report, scanned) = scan_replayed(&env, extra, &dir, steady);
            for report in [&report, &parse_report(&scanned)] {
                let l = report.expect_lock(&lock);
                assert_eq!(l.verdict, "unknown", "mtime {what}: {l:#?}");
            }
        }
    }
}

/// `cargo doc` leaves rustdoc's `.lock` in its output directory and cargo's `.cargo-lock` in
/// the build directory: both are kernel-lock files their programs lock in place (rustdoc
/// with fcntl, cargo with flock), so unlocked they are `free`, never reclaimed; locked, live.
#[test]
fn cargo_and_rustdoc_lock_files_are_free_and_kept() {
    if !require("cargo") {
        return;
    }
    let env = Env::new();
    let krate = env.path().join("demo");
    let out = Command::new("cargo")
        .args(["new", "--quiet", "--vcs", "none", "--lib"])
        .arg(&krate)
        .env("CARGO_HOME", env.path().join("cargo-home"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let out = Command::new("cargo")
        .args(["doc", "--quiet", "--offline"])
        .current_dir(&krate)
        .env("CARGO_HOME", env.path().join("cargo-home"))
        .env("CARGO_TARGET_DIR", krate.join("target"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let doc = krate.join("target/doc/.lock");
    let build = krate.join("target/debug/.cargo-lock");
    for lock in [&doc, &build] {
        assert!(lock.exists(), "cargo doc made no {}", lock.display());
    }

    let (report, out) = env.scan_json(&[&krate]);
    for (lock, writer) in [(&doc, "rustdoc"), (&build, "cargo")] {
        let l = report.expect_lock(lock);
        assert_eq!(
            (l.dialect.as_str(), l.verdict.as_str()),
            ("tool-flock", "free"),
            "{}",
            stdout(&out)
        );
        assert!(l.evidence.join("\n").contains(writer), "{:?}", l.evidence);
    }
    let (report, _) = env.reclaim_json(&[], &krate);
    assert!(report.reclaimed.unwrap_or_default().is_empty());
    assert!(doc.exists() && build.exists());

    // Locked (as cargo does while it builds): live.
    let mut holder = Group::spawn({
        let mut c = Command::new("flock");
        c.arg(&build).args(["sleep", "1000"]);
        c
    });
    wait_for("flock to lock .cargo-lock", || {
        proc_locks::table()
            .contains(&format!(" {} ", holder.pid()))
            .then_some(())
    });
    let (report, _) = env.scan_json(&[&build]);
    assert_eq!(report.expect_lock(&build).verdict, "live");
    holder.kill();
}
