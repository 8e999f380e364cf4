//! The processes that hold a lock now, once each, with the lock's type, mode and range: a
//! flock belongs to an open file description, so when `flock(1)` is killed, the child that
//! inherited the descriptor holds it (and `/proc/locks` still prints the dead PID); a POSIX
//! lock is its process's, with the bytes it covers.

use std::path::Path;
use std::process::{Command, Stdio};

use crate::util::*;

/// `flock PATH sleep 1000`, its `flock` SIGKILLed once the child runs: the child keeps the
/// lock. Returns the group (the child is in it) and the child's PID.
fn flock_with_its_parent_killed(path: &Path) -> (Group, i32, i32) {
    let mut g = Group::spawn({
        let mut c = Command::new("flock");
        c.arg(path).args(["sleep", "1000"]).stdin(Stdio::null());
        c
    });
    let parent = g.pid();
    let child = wait_for("flock's child to run", || {
        g.members()
            .into_iter()
            .find(|(_, comm)| comm == "sleep")
            .map(|(pid, _)| pid)
    });
    g.child.kill().unwrap();
    g.child.wait().unwrap();
    // The lock is still held, by the child, while /proc/locks names the parent.
    let locks = proc_locks::table();
    assert!(
        locks
            .lines()
            .any(|l| l.contains("FLOCK") && l.contains(&format!(" {parent} "))),
        "{locks}"
    );
    (g, parent, child)
}

#[test]
fn a_flock_kept_by_a_child_names_the_child_not_the_dead_parent() {
    if !require("flock") {
        return;
    }
    let env = Env::new();
    let lock = env.path().join("job.lock");
    std::fs::write(&lock, "").unwrap();
    let (_g, parent, child) = flock_with_its_parent_killed(&lock);

    let (report, out) = env.scan_json(&[&lock]);
    let l = report.expect_lock(&lock);
    assert_eq!(l.verdict, "live", "{}", stdout(&out));
    let holders: Vec<(i64, &str, Option<&str>)> = l
        .holders
        .iter()
        .map(|h| (h.pid, h.how.as_str(), h.mode.as_deref()))
        .collect();
    assert_eq!(holders, [(child as i64, "flock", Some("write"))], "{l:#?}");
    assert_eq!(l.holders[0].range, None, "a flock covers the file");
    assert_eq!(l.process.as_ref().map(|p| p.pid), Some(child as i64));
    let evidence = l.evidence.join("\n");
    assert!(
        evidence.contains(&format!("pid {child} (flock write, sleep)")),
        "{evidence}"
    );
    assert!(!evidence.contains(&format!("pid {parent} ")), "{evidence}");

    // The table's PID column names the child too.
    let out = env.scan(&[] as &[&str], &lock);
    let table = stdout(&out);
    let row = table.lines().find(|r| r.contains("job.lock")).unwrap();
    assert!(
        row.split_whitespace().any(|c| c == child.to_string()),
        "{table}"
    );
    assert!(
        !row.split_whitespace().any(|c| c == parent.to_string()),
        "{table}"
    );
}

/// A process holding a read lock on bytes 100-109 of a pid file, with `lockf`.
#[test]
fn a_posix_lock_is_shown_with_its_mode_and_bytes() {
    if !require("python3") {
        return;
    }
    let env = Env::new();
    let lock = env.path().join("db.lock");
    std::fs::write(&lock, vec![b'x'; 200]).unwrap();
    let script = "import fcntl, sys, time\n\
        f = open(sys.argv[1], 'rb')\n\
        fcntl.lockf(f, fcntl.LOCK_SH, 10, 100)\n\
        print('locked', flush=True)\n\
        time.sleep(600)\n";
    let mut cmd = Command::new("python3");
    cmd.args(["-c", script]).arg(&lock).stdout(Stdio::piped());
    let mut g = Group::spawn(cmd);
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(g.child.stdout.take().unwrap()),
        &mut line,
    )
    .unwrap();
    assert_eq!(line.trim(), "locked");

    let (report, out) = env.scan_json(&[&lock]);
    let l = report.expect_lock(&lock);
    assert_eq!(l.verdict, "live", "{}", stdout(&out));
    assert_eq!(l.holders.len(), 1, "{l:#?}");
    let h = &l.holders[0];
    assert_eq!((h.pid, h.how.as_str()), (g.pid() as i64, "posix"));
    assert_eq!(h.mode.as_deref(), Some("read"));
    assert_eq!(
        h.range,
        Some(ByteRange {
            start: 100,
            end: Some(109)
        })
    );
    let evidence = l.evidence.join("\n");
    assert!(evidence.contains("posix read bytes 100-109"), "{evidence}");
}

/// One process, one start time: the evidence, the process line and the JSON say the same
/// second, whatever fraction of a second it started at.
#[test]
fn a_process_start_is_the_same_second_everywhere() {
    let env = Env::new();
    let sleeper = Guard::spawn(Command::new("sleep").arg("1000"));
    let pidfile = env.path().join("app.pid");
    std::fs::write(&pidfile, format!("{}\n", sleeper.pid())).unwrap();
    let (report, out) = env.scan_json(&[&pidfile]);
    let l = report.expect_lock(&pidfile);
    assert_eq!(l.verdict, "live", "{}", stdout(&out));
    let start = l
        .process
        .as_ref()
        .and_then(|p| p.start_time.clone())
        .expect("the process's start time");
    let evidence = l.evidence.join("\n");
    assert!(evidence.contains(&start), "{start} not in: {evidence}");
}

/// A commit waiting on its editor in a linked worktree holds that worktree's `index.lock`
/// (in the main repository's `.git/worktrees/NAME/`), while another git waits in the main
/// work tree: the process named is the worktree's git.
#[test]
fn a_worktrees_index_lock_names_the_worktrees_git() {
    if !require("git") {
        return;
    }
    let env = Env::new();
    let home = env.path();
    let main = env.path().join("main");
    let wt = env.path().join("wt");
    std::fs::create_dir(&main).unwrap();
    git_ok(&main, home, &["init", "-q"]);
    std::fs::write(main.join("f"), "a\n").unwrap();
    git_ok(&main, home, &["add", "f"]);
    git_ok(&main, home, &["commit", "-qm", "init"]);
    git_ok(
        &main,
        home,
        &["worktree", "add", "-q", wt.to_str().unwrap()],
    );
    std::fs::write(wt.join("f"), "b\n").unwrap();
    let waiting = |dir: &Path, args: &[&str]| {
        let mut c = git(dir, home);
        c.env("GIT_EDITOR", "sh -c 'sleep 1000' --").args(args);
        Group::spawn(c)
    };
    let lock = main.join(".git/worktrees/wt/index.lock");
    let in_wt = waiting(&wt, &["commit", "-a", "-q"]);
    wait_for("the worktree's commit to take its index.lock", || {
        lock.exists().then_some(())
    });
    let in_main = waiting(&main, &["commit", "--allow-empty", "-q"]);
    wait_for("the main work tree's commit to wait on its editor", || {
        in_main
            .members()
            .iter()
            .any(|(_, comm)| comm == "sleep")
            .then_some(())
    });

    let (report, out) = env.scan_json(&[&lock]);
    let l = report.expect_lock(&lock);
    assert_eq!(l.verdict, "live", "{}", stdout(&out));
    assert_eq!(
        l.process.as_ref().map(|p| p.pid),
        Some(in_wt.pid() as i64),
        "the worktree's git ({}), not the main work tree's ({}): {:#?}",
        in_wt.pid(),
        in_main.pid(),
        l.evidence
    );
}
