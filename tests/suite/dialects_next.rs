//! Lock files of the programs users meet after a crash, made by the real programs: xauth and
//! iceauth, a git ref transaction, Breezy, CVS, Subversion, shadow's vipw, certbot, Prometheus,
//! cargo, Weston, notmuch (Xapian), OfflineIMAP, OSTree, Emacs's desktop, rbenv and nano. Each
//! test holds the lock with the program running (live), SIGKILLs it (stale, or free for a
//! kernel-lock file), shows the program stuck where it is, reclaims with the real binary
//! (`--scan --reclaim`), and runs the program again. A test whose program is not installed
//! says so and skips (under CI it fails: `.ci/run` installs them).

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use locksmith::Verdict;
use locksmith::probe::FileKey;

use crate::util::judging::{
    assert_evidence, expect, judge_changed, scan_findings, try_judge, wait_past_shortest_hold,
    written_ago_this_boot,
};
use crate::util::quiet::{self, Fact};
use crate::util::{
    Env, Group, require, run_bounded, snapshot, stderr, stdout, wait_for, wait_until, write,
};

/// Writes an executable script.
fn script(path: &Path, text: &str) -> PathBuf {
    write(path, text);
    fs::set_permissions(path, fs::Permissions::from_mode(0o755)).unwrap();
    path.to_path_buf()
}

/// Waits until a kernel lock is held on `path`.
fn wait_locked(what: &str, path: &Path) {
    wait_until(what, || {
        fs::metadata(path).is_ok_and(|m| snapshot().kernel_locked(FileKey::of(&m)))
    });
}

/// Runs `cmd` to success (within a minute), returning its output.
fn ok(cmd: &mut Command) -> std::process::Output {
    let c = std::mem::replace(cmd, Command::new("true"));
    let out = run_bounded(c, Duration::from_secs(60));
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    out
}

/// `--scan --reclaim ROOT` with the real binary; the paths it removed.
fn reclaim(env: &Env, root: &Path) -> Vec<PathBuf> {
    let (report, _) = env.reclaim_json(&[], root);
    report
        .reclaimed
        .unwrap_or_default()
        .into_iter()
        .filter(|r| r.ok && r.action == "removed")
        .map(|r| PathBuf::from(r.path))
        .collect()
}

/// A kernel-lock file that the program `start` runs locks: live while it runs (`while_held`
/// checks more then), free once it is killed, and taken again by the program started anew.
fn held_then_free(program: &str, lock: &Path, start: impl Fn() -> Group, while_held: impl Fn()) {
    let mut running = start();
    wait_locked(&format!("{program} to take its lock"), lock);
    expect(lock, "tool-flock", Verdict::Live);
    while_held();
    running.kill();
    expect(lock, "tool-flock", Verdict::Free);
    let mut again = start();
    wait_locked(&format!("{program} to run again"), lock);
    again.kill();
}

// ---------------------------------------------------------------------------------------------
// X and ICE authority files

/// An authority tool (`xauth`, `iceauth`) in interactive mode holds `FILE-c` and `FILE-l`;
/// killed, it leaves both, and every later run gives up after 10 tries: "timeout in locking
/// authority file". The pair is stale once no such tool runs; reclaimed, the tool works.
fn authority_pair(tool: &str, dialect_file: &str, add: &[&str]) {
    // Any authority tool running on this host (another copy of this test) makes the pair
    // live: none but this test's own while it runs.
    let _no_other_tool = quiet::absent(Fact::AuthorityTool);
    if !quiet::none_running(Fact::AuthorityTool) {
        return;
    }
    let env = Env::new();
    let home = env.path().join("home");
    fs::create_dir_all(&home).unwrap();
    let file = home.join(dialect_file);
    let run = |args: &[&str]| {
        let mut c = Command::new(tool);
        c.arg("-f")
            .arg(&file)
            .args(args)
            .env("HOME", &home)
            .stdin(Stdio::null());
        c
    };
    ok(&mut run(add));
    let mut held = Group::spawn(
        run(&[])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    );
    let c = home.join(format!("{dialect_file}-c"));
    let l = home.join(format!("{dialect_file}-l"));
    wait_until("the tool to take the lock pair", || l.exists());
    for p in [&c, &l] {
        let f = expect(p, "xauth", Verdict::Live);
        assert_evidence(&f, &format!("{tool} process works"));
    }

    held.kill();
    assert!(c.exists() && l.exists(), "the pair is left behind");
    // Judged as left 10 s ago, older than the tool's shortest hold (one inode: both names
    // age), in this boot.
    for p in [&c, &l] {
        let f = judge_changed(p, |ev| {
            written_ago_this_boot(ev, &c, 10);
            written_ago_this_boot(ev, &l, 10);
        });
        assert_eq!(f.dialect, "xauth");
        assert_eq!(f.judgement.verdict(), Verdict::Stale, "{:#?}", f.judgement);
        assert_evidence(&f, "timeout in locking authority file");
    }
    let out = run_bounded(run(&["list"]), Duration::from_secs(60));
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("timeout in locking authority file"),
        "{}",
        stderr(&out)
    );

    // The tool at work on another authority file (its own -f, its own home) holds another
    // pair, not this one: the pair stays stale while it runs.
    let other_home = env.path().join("other");
    fs::create_dir_all(&other_home).unwrap();
    let other_file = other_home.join(dialect_file);
    let mut other = Command::new(tool);
    other
        .arg("-f")
        .arg(&other_file)
        .env("HOME", &other_home)
        .current_dir(&other_home)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut elsewhere = Group::spawn(other);
    wait_until("the other tool to take its own pair", || {
        other_home.join(format!("{dialect_file}-l")).exists()
    });
    for p in [&c, &l] {
        expect(p, "xauth", Verdict::Stale);
    }
    elsewhere.kill();
    // One at work on this file by its environment alone (no -f): it may be the holder.
    let mut by_env = Command::new(tool);
    by_env
        .env("HOME", &other_home)
        .env(
            if tool == "xauth" {
                "XAUTHORITY"
            } else {
                "ICEAUTHORITY"
            },
            &file,
        )
        .current_dir(&other_home)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut on_this = Group::spawn(by_env);
    wait_until("the tool to start", || on_this.members().len() == 1);
    let f = expect(&c, "xauth", Verdict::Live);
    assert_evidence(&f, &format!("{tool} process works"));
    on_this.kill();

    // The pair is two names of one inode: removing the first moves the inode's status change
    // time, which is that removal's own doing, so one reclaim removes both. (The real reclaim
    // needs the pair really older than the tool's shortest hold.)
    if !wait_past_shortest_hold(&[&c]) {
        return;
    }
    let (report, _) = env.reclaim_json(&[], &home);
    let outcomes = report.reclaimed.unwrap_or_default();
    let removed: Vec<_> = outcomes
        .iter()
        .filter(|r| r.ok && r.action == "removed")
        .map(|r| PathBuf::from(&r.path))
        .collect();
    assert!(!c.exists() && !l.exists(), "{outcomes:#?}");
    assert_eq!(removed.len(), 2, "{removed:?}");
    assert!(file.exists(), "the authority file itself stays");
    let out = ok(&mut run(&["list"]));
    assert!(!stdout(&out).is_empty());
}

#[test]
fn xauth_lock_pair_held_then_left_by_a_killed_xauth() {
    if !require("xauth") {
        return;
    }
    authority_pair(
        "xauth",
        ".Xauthority",
        &["add", ":5", ".", "0123456789abcdef0123456789abcdef"],
    );
}

#[test]
fn iceauth_lock_pair_held_then_left_by_a_killed_iceauth() {
    if !require("iceauth") {
        return;
    }
    authority_pair(
        "iceauth",
        ".ICEauthority",
        &[
            "add",
            "ICE",
            "",
            "local/host:/tmp/.ICE-unix/1",
            "MIT-MAGIC-COOKIE-1",
            "0123456789abcdef",
        ],
    );
}

// ---------------------------------------------------------------------------------------------
// A git ref transaction

/// `git update-ref --stdin` deleting a packed ref and stopped after `prepare` holds the ref's
/// lock and `packed-refs.lock`, and has written `packed-refs.new`. Killed, it leaves all three;
/// without the `.lock` files git still cannot rewrite packed-refs ("unable to create file
/// packed-refs.new: File exists"). Reclaim removes the three together, and git works again.
#[test]
fn git_ref_transaction_leaves_packed_refs_new_which_goes_with_its_lock() {
    if !require("git") {
        return;
    }
    let env = Env::new();
    let home = env.path().join("home");
    let repo = env.path().join("repo");
    fs::create_dir_all(&home).unwrap();
    crate::util::git_repo_with_a_commit(&repo, &home);
    crate::util::git_ok(&repo, &home, &["branch", "one"]);
    crate::util::git_ok(&repo, &home, &["branch", "two"]);
    crate::util::git_ok(&repo, &home, &["pack-refs", "--all"]);
    let mut tx = Group::spawn(
        crate::util::git(&repo, &home)
            .args(["update-ref", "--stdin"])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    );
    {
        use std::io::Write;
        let mut stdin = tx.child.stdin.as_ref().unwrap();
        stdin
            .write_all(b"start\ndelete refs/heads/one\nprepare\n")
            .unwrap();
        stdin.flush().unwrap();
    }
    let git = repo.join(".git");
    let new = git.join("packed-refs.new");
    let locks = [
        git.join("packed-refs.lock"),
        git.join("refs/heads/one.lock"),
    ];
    wait_until("git to prepare the transaction", || {
        new.exists() && locks.iter().all(|l| l.exists())
    });
    for p in locks.iter().chain([&new]) {
        expect(p, "git", Verdict::Live);
    }

    tx.kill();
    // Judged as left 10 s ago, older than git's shortest hold, in this boot.
    let left = |p: &Path| {
        let f = judge_changed(p, |ev| {
            for q in locks.iter().chain([&new]) {
                written_ago_this_boot(ev, q, 10);
            }
        });
        assert_eq!(f.dialect, "git");
        assert_eq!(f.judgement.verdict(), Verdict::Stale, "{:#?}", f.judgement);
        f
    };
    let f = left(&new);
    assert_evidence(&f, "it goes with the lock");
    for p in &locks {
        left(p);
    }
    // What a user does by hand: the `.lock` files go, and git is still stuck.
    let copies: Vec<Vec<u8>> = locks.iter().map(|l| fs::read(l).unwrap()).collect();
    for l in &locks {
        fs::remove_file(l).unwrap();
    }
    let out = crate::util::git(&repo, &home)
        .args(["branch", "-d", "two"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("packed-refs.new: File exists"),
        "{}",
        stderr(&out)
    );
    for (l, bytes) in locks.iter().zip(&copies) {
        fs::write(l, bytes).unwrap();
    }

    // The real reclaim needs them really older than git's shortest hold.
    if !wait_past_shortest_hold(&[&locks[0], &locks[1], &new]) {
        return;
    }
    let mut removed = reclaim(&env, &repo);
    removed.sort();
    let mut want: Vec<PathBuf> = locks.iter().cloned().chain([new.clone()]).collect();
    want.sort();
    assert_eq!(removed, want);
    crate::util::git_ok(&repo, &home, &["branch", "-d", "two"]);
    crate::util::git_ok(&repo, &home, &["update-ref", "-d", "refs/heads/one"]);
}

// ---------------------------------------------------------------------------------------------
// Breezy

/// `brz commit` waiting for its editor holds the branch's and the working tree's locks
/// (`held/info`, naming its PID); killed, it leaves both. Reclaimed, brz commits again without
/// stealing anything (with `locks.steal_dead` off, as for another user's lock).
#[test]
fn breezy_commit_in_its_editor_holds_the_lock_directories() {
    if !require("brz") {
        return;
    }
    let env = Env::new();
    let home = env.path().join("home");
    let branch = env.path().join("branch");
    fs::create_dir_all(&home).unwrap();
    let brz = |args: &[&str]| {
        let mut c = Command::new("brz");
        c.args(args)
            .current_dir(&branch)
            .env("HOME", &home)
            .env("BRZ_EMAIL", "Test <test@example.com>")
            .stdin(Stdio::null());
        c
    };
    fs::create_dir_all(&branch).unwrap();
    ok(&mut brz(&["init", "-q", "."]));
    write(&branch.join("a.txt"), "one\n");
    ok(&mut brz(&["add", "-q", "a.txt"]));
    ok(&mut brz(&["commit", "-q", "-m", "first"]));
    write(&branch.join("a.txt"), "two\n");
    let editor = script(&env.path().join("editor.sh"), "#!/bin/sh\nexec sleep 600\n");
    let mut commit = Group::spawn(
        brz(&["commit"])
            .env("BRZ_EDITOR", &editor)
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    );
    let held = [
        branch.join(".bzr/branch/lock/held"),
        branch.join(".bzr/checkout/lock/held"),
    ];
    wait_until("brz to take its locks", || {
        held.iter().all(|h| h.join("info").exists())
    });
    for h in &held {
        let f = expect(h, "breezy", Verdict::Live);
        assert_eq!(
            f.judgement.owner.as_ref().and_then(|o| o.pid),
            Some(commit.pid() as i64)
        );
    }

    commit.kill();
    for h in &held {
        let f = expect(h, "breezy", Verdict::Stale);
        assert_evidence(&f, "break-lock");
    }
    let mut removed = reclaim(&env, &branch);
    removed.sort();
    assert_eq!(removed, held.to_vec());
    assert!(
        branch.join(".bzr/branch/lock").is_dir(),
        "the lock directory stays"
    );
    let out = ok(&mut brz(&[
        "-Olocks.steal_dead=False",
        "commit",
        "-m",
        "second",
    ]));
    assert!(!stderr(&out).contains("Stole"), "{}", stderr(&out));
}

/// Breezy's locks outside a branch's own `branch/`, `checkout/` and `repository/`: a
/// colocated branch's (`.bzr/branches/NAME/lock`, held by `brz commit` on it), the control
/// directory's `control.conf` (`.bzr/branch_lock`) and the user's configuration directory
/// (`~/.config/breezy/lock`), these two held by Breezy's own `ControlStore` and `GlobalStore`
/// in a Python running the installed Breezy. Live while held, stale once killed; reclaimed,
/// brz writes its configuration without stealing anything.
#[test]
fn breezy_locks_are_found_wherever_breezy_puts_them() {
    if !require("brz") {
        return;
    }
    let python = Path::new("/usr/bin/python3");
    let has_breezy = Command::new(python)
        .args(["-c", "import breezy.bzr"])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !crate::util::require_that(
        has_breezy,
        "/usr/bin/python3 cannot import breezy (.ci/run installs brz)",
    ) {
        return;
    }
    let env = Env::new();
    let home = env.path().join("home");
    let tree = env.path().join("tree");
    fs::create_dir_all(&home).unwrap();
    fs::create_dir_all(&tree).unwrap();
    let brz = |args: &[&str]| {
        let mut c = Command::new("brz");
        c.args(args)
            .current_dir(&tree)
            .env("HOME", &home)
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("BRZ_HOME")
            .env("BRZ_EMAIL", "Test <test@example.com>")
            .stdin(Stdio::null());
        c
    };
    ok(&mut brz(&["init", "-q", "."]));
    write(&tree.join("a.txt"), "one\n");
    ok(&mut brz(&["add", "-q", "a.txt"]));
    ok(&mut brz(&["commit", "-q", "-m", "first"]));
    // A standalone tree switched to a new branch keeps it colocated, in .bzr/branches/.
    ok(&mut brz(&["switch", "-q", "-b", "dev"]));
    write(&tree.join("a.txt"), "two\n");
    let editor = script(&env.path().join("editor.sh"), "#!/bin/sh\nexec sleep 600\n");
    let mut commit = Group::spawn(
        brz(&["commit"])
            .env("BRZ_EDITOR", &editor)
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    );
    let hold = |store: &str| {
        let mut c = Command::new(python);
        c.arg("-c")
            .arg(
                "import sys, time, breezy, breezy.bzr\n\
                 from breezy import config, controldir\n\
                 with breezy.initialize():\n\
                 \x20   if sys.argv[1] == 'global':\n\
                 \x20       store = config.GlobalStore()\n\
                 \x20   else:\n\
                 \x20       store = config.ControlStore(controldir.ControlDir.open(sys.argv[2]))\n\
                 \x20   store.lock_write()\n\
                 \x20   time.sleep(600)\n",
            )
            .arg(store)
            .arg(&tree)
            .current_dir(&tree)
            .env("HOME", &home)
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("BRZ_HOME")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        Group::spawn(c)
    };
    let mut global = hold("global");
    let mut control = hold("control");
    let colocated = tree.join(".bzr/branches/dev/lock/held");
    let config = home.join(".config/breezy/lock/held");
    let control_conf = tree.join(".bzr/branch_lock/held");
    let held = [
        (colocated.clone(), commit.pid(), "colocated branch \"dev\""),
        (config.clone(), global.pid(), "configuration directory"),
        (control_conf.clone(), control.pid(), "control.conf"),
    ];
    wait_until("brz and Breezy's stores to take their locks", || {
        held.iter().all(|(h, _, _)| h.join("info").exists())
    });
    let listed: Vec<PathBuf> = scan_findings(env.path())
        .into_iter()
        .map(|f| f.path)
        .collect();
    for (h, pid, what) in &held {
        assert!(
            listed.contains(h),
            "{} is not listed: {listed:#?}",
            h.display()
        );
        let f = expect(h, "breezy", Verdict::Live);
        assert_eq!(
            f.judgement.owner.as_ref().and_then(|o| o.pid),
            Some(*pid as i64)
        );
        let detail = f.judgement.owner.as_ref().and_then(|o| o.detail.clone());
        assert!(detail.as_deref().unwrap_or("").contains(what), "{detail:?}");
    }

    commit.kill();
    global.kill();
    control.kill();
    for (h, _, _) in &held {
        let f = expect(h, "breezy", Verdict::Stale);
        assert_evidence(&f, "break-lock");
    }
    let mut removed = reclaim(&env, env.path());
    removed.sort();
    let mut want: Vec<PathBuf> = held.iter().map(|(h, _, _)| h.clone()).collect();
    // The commit held the working tree too.
    want.push(tree.join(".bzr/checkout/lock/held"));
    want.sort();
    assert_eq!(removed, want);
    let out = ok(&mut brz(&["whoami", "Other <other@example.com>"]));
    assert!(!stderr(&out).contains("Stole"), "{}", stderr(&out));

    // A `lock/held` in a directory named like Breezy's configuration directory, whose record
    // is not Breezy's, is not Breezy's.
    let other = env.path().join("app/breezy/lock/held");
    write(&other.join("info"), "pid: 1\n");
    let config = locksmith::config::Settings::embedded().scan;
    if let Ok(Some(f)) = try_judge(&other, &snapshot(), &config) {
        assert_ne!(f.dialect, "breezy", "{:#?}", f.judgement);
    }
}

// ---------------------------------------------------------------------------------------------
// CVS

/// `cvs commit` running its `commitinfo` check holds a promotable lock `#cvs.pfl.HOST.PID` in
/// the repository directory; killed, it leaves it, and the next commit waits for it forever.
#[test]
fn cvs_commit_leaves_its_lock_in_the_repository() {
    if !require("cvs") {
        return;
    }
    let env = Env::new();
    let root = env.path().join("cvsroot");
    let work = env.path().join("work");
    let marker = env.path().join("hook-ran");
    fs::create_dir_all(&work).unwrap();
    let cvs = |args: &[&str], dir: &Path| {
        let mut c = Command::new("cvs");
        c.arg("-d")
            .arg(&root)
            .args(args)
            .current_dir(dir)
            .env("HOME", env.path())
            .stdin(Stdio::null());
        c
    };
    ok(&mut cvs(&["-Q", "init"], env.path()));
    let import = env.path().join("import");
    write(&import.join("a.txt"), "one\n");
    ok(&mut cvs(
        &["-Q", "import", "-m", "i", "mod", "vendor", "start"],
        &import,
    ));
    ok(&mut cvs(&["-Q", "co", "CVSROOT"], &work));
    let hook = script(
        &env.path().join("hook.sh"),
        &format!("#!/bin/sh\ntouch {}\nexec sleep 600\n", marker.display()),
    );
    let commitinfo = work.join("CVSROOT/commitinfo");
    let mut text = fs::read_to_string(&commitinfo).unwrap();
    text.push_str(&format!("ALL {}\n", hook.display()));
    fs::write(&commitinfo, text).unwrap();
    ok(&mut cvs(
        &["-Q", "commit", "-m", "hook"],
        &work.join("CVSROOT"),
    ));
    ok(&mut cvs(&["-Q", "co", "mod"], &work));
    let module = work.join("mod");
    write(&module.join("a.txt"), "two\n");
    let mut commit = Group::spawn(
        cvs(&["-Q", "commit", "-m", "two"], &module)
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    );
    wait_until("cvs to run its commitinfo check", || marker.exists());
    let lock = wait_for("cvs's lock", || {
        fs::read_dir(root.join("mod"))
            .ok()?
            .flatten()
            .map(|e| e.path())
            .find(|p| {
                p.file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with("#cvs.pfl.")
            })
    });
    let f = expect(&lock, "cvs", Verdict::Live);
    assert_eq!(
        f.judgement.owner.as_ref().and_then(|o| o.pid),
        Some(commit.pid() as i64)
    );

    commit.kill();
    expect(&lock, "cvs", Verdict::Stale);
    script(&hook, "#!/bin/sh\nexit 0\n");
    // The next commit waits for the dead process's lock.
    let log = env.path().join("waiting.log");
    let mut waiting = Group::spawn(
        cvs(&["commit", "-m", "two"], &module)
            .stdout(Stdio::null())
            .stderr(fs::File::create(&log).unwrap()),
    );
    wait_until("cvs to wait for the lock", || {
        fs::read_to_string(&log).is_ok_and(|t| t.contains("waiting for"))
    });
    waiting.kill();

    assert_eq!(reclaim(&env, &root), vec![lock.clone()]);
    ok(&mut cvs(&["-Q", "commit", "-m", "two"], &module));
}

// ---------------------------------------------------------------------------------------------
// Kernel-lock files of well-known tools: live while held, free after the program dies

/// `svnadmin freeze` holds the repository's write lock while its command runs; killed, the
/// lock is released by the kernel and its file, left behind, is free: nothing to reclaim.
#[test]
fn subversion_write_lock_is_free_once_svnadmin_dies() {
    if !require("svnadmin") {
        return;
    }
    let env = Env::new();
    let repo = env.path().join("repo");
    ok(Command::new("svnadmin").arg("create").arg(&repo));
    let mut frozen = Group::spawn(
        Command::new("svnadmin")
            .arg("freeze")
            .arg(&repo)
            .args(["--", "sleep", "600"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    );
    let write_lock = repo.join("db/write-lock");
    wait_locked("svnadmin to freeze the repository", &write_lock);
    let f = expect(&write_lock, "tool-flock", Verdict::Live);
    assert_evidence(&f, "locked in the kernel");

    frozen.kill();
    let files = [write_lock.clone(), repo.join("db/txn-current-lock")];
    for p in &files {
        expect(p, "tool-flock", Verdict::Free);
    }
    // An FSFS repository's Berkeley DB lock files are made but never locked: never listed.
    assert_eq!(
        fs::read_to_string(repo.join("db/fs-type")).unwrap().trim(),
        "fsfs"
    );
    let unused = [repo.join("locks/db.lock"), repo.join("locks/db-logs.lock")];
    let listed: Vec<PathBuf> = scan_findings(&repo).into_iter().map(|f| f.path).collect();
    for p in &unused {
        assert!(p.is_file());
        assert!(
            !listed.contains(p),
            "{} is listed: {listed:#?}",
            p.display()
        );
    }
    assert!(listed.contains(&write_lock), "{listed:#?}");
    // A Berkeley DB repository's are locked by every access (lock_repos): listed, free now.
    let bdb = env.path().join("bdb");
    ok(Command::new("svnadmin")
        .args(["create", "--fs-type", "bdb"])
        .arg(&bdb));
    for p in [bdb.join("locks/db.lock"), bdb.join("locks/db-logs.lock")] {
        expect(&p, "tool-flock", Verdict::Free);
    }
    // Its Berkeley DB environment's regions (`db/__db.001`, ...) are named as rpm's are, but
    // this is no rpm database: data, never listed.
    let regions: Vec<PathBuf> = fs::read_dir(bdb.join("db"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("__db.0"))
        })
        .collect();
    assert!(!regions.is_empty());
    let listed: Vec<PathBuf> = scan_findings(&bdb).into_iter().map(|f| f.path).collect();
    for r in &regions {
        assert!(
            !listed.contains(r),
            "{} is listed: {listed:#?}",
            r.display()
        );
    }
    assert_eq!(reclaim(&env, &repo), Vec::<PathBuf>::new());
    assert!(
        files.iter().chain(&unused).all(|p| p.exists()),
        "free files stay"
    );
    ok(Command::new("svnadmin")
        .arg("freeze")
        .arg(&repo)
        .args(["--", "true"]));
}

/// `vipw` holds glibc's `lckpwdf` lock (`/etc/.pwd.lock`, a kernel lock) and shadow's own
/// `/etc/passwd.lock` (its PID). Killed (here in a chroot of its own, `vipw -R`), it leaves
/// both: `.pwd.lock` is free and stays, `passwd.lock` is stale and goes, and vipw runs.
#[test]
fn vipw_leaves_a_free_lckpwdf_lock_and_a_stale_passwd_lock() {
    if !require("vipw") || !require("busybox") {
        return;
    }
    if !crate::util::require_that(
        rustix::process::geteuid().is_root(),
        "vipw -R needs root (chroot)",
    ) {
        return;
    }
    let env = Env::new();
    let root = env.path().join("root");
    write(&root.join("etc/passwd"), "root:x:0:0:root:/root:/bin/sh\n");
    write(&root.join("etc/shadow"), "root:*:19000:0:99999:7:::\n");
    write(&root.join("etc/group"), "root:x:0:\n");
    write(&root.join("etc/gshadow"), "root:*::\n");
    fs::create_dir_all(root.join("bin")).unwrap();
    fs::copy(
        crate::util::which("busybox").unwrap(),
        root.join("bin/busybox"),
    )
    .unwrap();
    for applet in ["sh", "sleep", "true"] {
        std::os::unix::fs::symlink("busybox", root.join("bin").join(applet)).unwrap();
    }
    script(&root.join("bin/editor"), "#!/bin/sh\nexec sleep 600\n");
    let vipw = |editor: &str| {
        let mut c = Command::new("vipw");
        c.arg("-R")
            .arg(&root)
            .env("EDITOR", editor)
            .env("VISUAL", editor)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        c
    };
    let mut editing = Group::spawn(vipw("/bin/editor"));
    let pwd_lock = root.join("etc/.pwd.lock");
    let passwd_lock = root.join("etc/passwd.lock");
    wait_locked("vipw to lock the account files", &pwd_lock);
    wait_until("vipw to lock /etc/passwd", || passwd_lock.exists());
    expect(&pwd_lock, "tool-flock", Verdict::Live);
    expect(&passwd_lock, "pidfile", Verdict::Live);

    editing.kill();
    expect(&pwd_lock, "tool-flock", Verdict::Free);
    expect(&passwd_lock, "pidfile", Verdict::Stale);

    assert_eq!(reclaim(&env, &root.join("etc")), vec![passwd_lock.clone()]);
    assert!(pwd_lock.exists(), "the free lckpwdf file stays");
    ok(&mut vipw("/bin/true"));
}

/// certbot locks its config, work and logs directories (`.certbot.lock`) for its whole run;
/// killed while it asks for an email address, it leaves the three files, free.
#[test]
fn certbot_locks_are_free_once_certbot_dies() {
    if !require("certbot") {
        return;
    }
    let env = Env::new();
    let dirs = ["config", "work", "logs"].map(|d| env.path().join(d));
    let certbot = |args: &[&str]| {
        let mut c = Command::new("certbot");
        c.arg("--config-dir")
            .arg(&dirs[0])
            .arg("--work-dir")
            .arg(&dirs[1])
            .arg("--logs-dir")
            .arg(&dirs[2])
            .args(args)
            .env("HOME", env.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        c
    };
    let mut asking = Group::spawn(certbot(&["register"]).stdin(Stdio::piped()));
    let locks = dirs.clone().map(|d| d.join(".certbot.lock"));
    for l in &locks {
        wait_locked("certbot to lock its directories", l);
        expect(l, "tool-flock", Verdict::Live);
    }

    asking.kill();
    for l in &locks {
        expect(l, "tool-flock", Verdict::Free);
    }
    assert_eq!(reclaim(&env, env.path()), Vec::<PathBuf>::new());
    ok(certbot(&["certificates"]).stdin(Stdio::null()));
}

/// Prometheus (`--storage.tsdb.use-lockfile`) flocks `DATA/lock`; its write-ahead log and other
/// data files are not locks. Killed, it leaves the lock file, free, and starts again ("A
/// lockfile from a previous execution already existed. It was replaced").
#[test]
fn prometheus_tsdb_lock_is_free_once_prometheus_dies() {
    if !require("prometheus") {
        return;
    }
    let env = Env::new();
    let config = write(
        &env.path().join("prometheus.yml"),
        "global:\n  scrape_interval: 1h\n",
    );
    let data = env.path().join("data");
    let log = env.path().join("prometheus.log");
    let start = || {
        Group::spawn(
            Command::new("prometheus")
                .arg(format!("--config.file={}", config.display()))
                .arg(format!("--storage.tsdb.path={}", data.display()))
                .arg("--storage.tsdb.use-lockfile")
                .arg("--web.listen-address=127.0.0.1:0")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(fs::File::create(&log).unwrap()),
        )
    };
    let lock = data.join("lock");
    held_then_free("Prometheus", &lock, start, || {
        let found: Vec<PathBuf> = scan_findings(&data).into_iter().map(|f| f.path).collect();
        assert_eq!(found, vec![lock.clone()], "only the lock is a lock");
    });
    let log = fs::read_to_string(&log).unwrap();
    assert!(log.contains("already existed"), "{log}");
}

/// cargo flocks the build directory (`target/debug/.cargo-lock`) while it builds; killed in a
/// build script, it leaves the file, free, and builds again.
#[test]
fn cargo_build_directory_lock_is_free_once_cargo_dies() {
    if !require("cargo") {
        return;
    }
    let env = Env::new();
    let krate = env.path().join("hold");
    write(
        &krate.join("Cargo.toml"),
        "[package]\nname = \"hold\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
    );
    write(&krate.join("src/main.rs"), "fn main() {}\n");
    write(
        &krate.join("build.rs"),
        "fn main() {\n    println!(\"cargo:rerun-if-env-changed=HOLD_BUILD\");\n    if let Some(marker) = std::env::var_os(\"HOLD_BUILD\") {\n        std::fs::write(marker, \"\").unwrap();\n        std::thread::sleep(std::time::Duration::from_secs(600));\n    }\n}\n",
    );
    let target = env.path().join("target");
    let marker = env.path().join("building");
    let cargo = || {
        let mut c = Command::new("cargo");
        c.args(["build", "--offline", "--quiet"])
            .current_dir(&krate)
            .env("CARGO_TARGET_DIR", &target)
            .env_remove("RUSTFLAGS")
            .stdin(Stdio::null());
        c
    };
    let mut building = Group::spawn(
        cargo()
            .env("HOLD_BUILD", &marker)
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    );
    wait_until("cargo to run the build script", || marker.exists());
    let lock = target.join("debug/.cargo-lock");
    wait_locked("cargo to lock its build directory", &lock);
    expect(&lock, "tool-flock", Verdict::Live);

    building.kill();
    expect(&lock, "tool-flock", Verdict::Free);
    assert_eq!(reclaim(&env, &target), Vec::<PathBuf>::new());
    ok(&mut cargo());
}

/// Weston (libwayland-server) flocks `wayland-N.lock` beside its socket; the socket is not a
/// lock. Killed, it leaves both; the lock file is free and Weston starts again on that name.
#[test]
fn wayland_socket_lock_is_free_once_the_compositor_dies() {
    if !require("weston") {
        return;
    }
    let env = Env::new();
    let runtime = env.path().join("run");
    fs::create_dir_all(&runtime).unwrap();
    fs::set_permissions(&runtime, fs::Permissions::from_mode(0o700)).unwrap();
    let start = || {
        Group::spawn(
            Command::new("weston")
                .args([
                    "--backend=headless-backend.so",
                    "--socket=wayland-locksmith",
                    "--idle-time=0",
                ])
                .env("XDG_RUNTIME_DIR", &runtime)
                .env_remove("WAYLAND_DISPLAY")
                .env_remove("DISPLAY")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null()),
        )
    };
    let lock = runtime.join("wayland-locksmith.lock");
    held_then_free("Weston", &lock, start, || {
        let found: Vec<PathBuf> = scan_findings(&runtime)
            .into_iter()
            .map(|f| f.path)
            .collect();
        assert_eq!(found, vec![lock.clone()], "the socket is not a lock");
    });
}

/// notmuch holds Xapian's write lock (`flintlock`) while its database is open for writing
/// (`notmuch tag --batch` reading its commands); killed, the lock file is free.
#[test]
fn xapian_flintlock_is_free_once_notmuch_dies() {
    if !require("notmuch") {
        return;
    }
    let env = Env::new();
    let mail = env.path().join("mail");
    for d in ["cur", "new", "tmp"] {
        fs::create_dir_all(mail.join(d)).unwrap();
    }
    write(
        &mail.join("cur/1:2,"),
        "From: a@example.com\nTo: b@example.com\nSubject: hi\nMessage-ID: <1@example.com>\n\nhello\n",
    );
    let config = write(
        &env.path().join("notmuch-config"),
        format!(
            "[database]\npath={}\n[user]\nname=Test\nprimary_email=test@example.com\n",
            mail.display()
        ),
    );
    let notmuch = |args: &[&str]| {
        let mut c = Command::new("notmuch");
        c.args(args)
            .env("NOTMUCH_CONFIG", &config)
            .env("HOME", env.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        c
    };
    ok(notmuch(&["new"]).stdin(Stdio::null()));
    let mut tagging = Group::spawn(notmuch(&["tag", "--batch"]).stdin(Stdio::piped()));
    let lock = mail.join(".notmuch/xapian/flintlock");
    wait_locked("notmuch to open its database for writing", &lock);
    expect(&lock, "tool-flock", Verdict::Live);

    tagging.kill();
    expect(&lock, "tool-flock", Verdict::Free);
    ok(notmuch(&["tag", "+done", "--", "*"]).stdin(Stdio::null()));
}

/// OfflineIMAP locks `~/.offlineimap/ACCOUNT.lock` while it syncs (here, while it waits for an
/// IMAP server that never answers); killed, the file is free, and it runs again.
#[test]
fn offlineimap_account_lock_is_free_once_it_dies() {
    if !require("offlineimap") {
        return;
    }
    let env = Env::new();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    // A server that accepts and never says a word (its connections close with the test).
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for c in listener.incoming().flatten() {
            held.push(c);
        }
    });
    let rc = write(
        &env.path().join("offlineimaprc"),
        format!(
            "[general]\naccounts = test\n[Account test]\nlocalrepository = local\nremoterepository = remote\n\
             [Repository local]\ntype = Maildir\nlocalfolders = {}\n\
             [Repository remote]\ntype = IMAP\nremotehost = 127.0.0.1\nremoteport = {port}\nssl = no\n\
             remoteuser = u\nremotepass = p\n",
            env.path().join("mail").display()
        ),
    );
    let start = || {
        Group::spawn(
            Command::new("offlineimap")
                .arg("-c")
                .arg(&rc)
                .args(["-o", "-u", "basic"])
                .env("HOME", env.path())
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null()),
        )
    };
    let lock = env.path().join(".offlineimap/test.lock");
    held_then_free("OfflineIMAP", &lock, start, || {});
}

/// An OSTree repository's `.lock` stays after every ostree command; it is free, not a lock
/// left by a crash.
#[test]
fn ostree_repository_lock_is_free_between_commands() {
    if !require("ostree") {
        return;
    }
    let env = Env::new();
    let repo = env.path().join("repo");
    fs::create_dir_all(&repo).unwrap();
    let ostree = |args: &[&str]| {
        let mut c = Command::new("ostree");
        c.arg(format!("--repo={}", repo.display()))
            .args(args)
            .stdin(Stdio::null());
        c
    };
    ok(&mut ostree(&["init", "--mode=bare-user"]));
    let tree = env.path().join("tree");
    write(&tree.join("f"), "hi\n");
    let tree_arg = format!("--tree=dir={}", tree.display());
    ok(&mut ostree(&[
        "commit", "-b", "main", &tree_arg, "-s", "one",
    ]));
    let lock = repo.join(".lock");
    assert!(lock.exists());
    expect(&lock, "tool-flock", Verdict::Free);
    assert_eq!(reclaim(&env, &repo), Vec::<PathBuf>::new());
    ok(&mut ostree(&[
        "commit", "-b", "main", &tree_arg, "-s", "two",
    ]));
}

// ---------------------------------------------------------------------------------------------
// Locks naming their owner, or their writer's work

/// Emacs claims its desktop with `.emacs.desktop.lock` (its PID). Killed, it leaves the lock,
/// and Emacs takes the desktop for in use by that PID (`desktop-owner`) until it is gone.
#[test]
fn emacs_desktop_lock_held_then_left_by_a_killed_emacs() {
    if !require("emacs") {
        return;
    }
    let env = Env::new();
    let dir = env.path().join("desk");
    fs::create_dir_all(&dir).unwrap();
    let lisp = |form: &str| {
        let mut c = Command::new("emacs");
        c.args(["--batch", "-Q", "--eval"])
            .arg(form)
            .env("HOME", env.path())
            .stdin(Stdio::null());
        c
    };
    let dirname = format!("{:?}", format!("{}/", dir.display()));
    // Killed once its desktop is saved: killed while saving, it would also leave the lock
    // link of the desktop file it was writing (`.#.emacs.desktop`).
    let saved = env.path().join("saved");
    let mut emacs = Group::spawn(
        lisp(&format!(
            "(progn (require 'desktop) (desktop-save {dirname}) (write-region \"\" nil {:?}) (sleep-for 600))",
            saved.display().to_string()
        ))
        .stdout(Stdio::null())
        .stderr(Stdio::null()),
    );
    let lock = dir.join(".emacs.desktop.lock");
    wait_until("Emacs to save its desktop", || saved.exists());
    assert!(lock.exists());
    let f = expect(&lock, "emacs-desktop", Verdict::Live);
    assert_eq!(
        f.judgement.owner.as_ref().and_then(|o| o.pid),
        Some(emacs.pid() as i64)
    );

    emacs.kill();
    expect(&lock, "emacs-desktop", Verdict::Stale);
    let owner = format!("(progn (require 'desktop) (princ (desktop-owner {dirname})))");
    let out = ok(&mut lisp(&owner));
    assert_eq!(stdout(&out).trim(), emacs.pid().to_string());

    assert_eq!(reclaim(&env, &dir), vec![lock.clone()]);
    let out = ok(&mut lisp(&owner));
    assert_eq!(stdout(&out).trim(), "nil");
}

/// `rbenv rehash` takes its prototype shim (`shims/.rbenv-shim`) as its lock; killed (here in
/// a rehash hook), it leaves it, and every later rehash fails "cannot rehash: ... exists".
#[test]
fn rbenv_rehash_lock_held_then_left_by_a_killed_rehash() {
    if !require("rbenv") {
        return;
    }
    // A rehash that cannot be read (another copy of this test's, exiting) may be this root's:
    // none but this test's own while it runs.
    let _no_other_rehash = quiet::absent(Fact::Rehash);
    if !quiet::none_running(Fact::Rehash) {
        return;
    }
    let env = Env::new();
    let root = env.path().join("rbenv");
    fs::create_dir_all(root.join("versions")).unwrap();
    let marker = env.path().join("rehashing");
    let hooks = env.path().join("hooks");
    write(
        &hooks.join("rehash/hold.bash"),
        format!("touch {}\nsleep 600\n", marker.display()),
    );
    let rbenv_of = |root: &Path| {
        let mut c = Command::new("rbenv");
        c.arg("rehash")
            .env("RBENV_ROOT", root)
            .env("HOME", env.path())
            .env_remove("RBENV_HOOK_PATH")
            .stdin(Stdio::null());
        c
    };
    let rbenv = || rbenv_of(&root);
    // A rehash held in its hook (until killed).
    let held = |root: &Path| {
        let _ = fs::remove_file(&marker);
        let g = Group::spawn(
            rbenv_of(root)
                .env("RBENV_HOOK_PATH", &hooks)
                .stdout(Stdio::null())
                .stderr(Stdio::null()),
        );
        wait_until("rbenv to run its rehash hook", || marker.exists());
        g
    };
    let mut rehash = held(&root);
    let shim = root.join("shims/.rbenv-shim");
    assert!(shim.exists());
    let f = expect(&shim, "rehash", Verdict::Live);
    assert_evidence(&f, "rbenv rehash runs");

    rehash.kill();
    // Judged as left 10 s ago, older than a rehash's shortest hold, in this boot.
    let left = || {
        let f = judge_changed(&shim, |ev| written_ago_this_boot(ev, &shim, 10));
        assert_eq!(f.dialect, "rehash");
        assert_eq!(f.judgement.verdict(), Verdict::Stale, "{:#?}", f.judgement);
    };
    left();
    let out = rbenv().output().unwrap();
    assert!(!out.status.success());
    assert!(stderr(&out).contains("cannot rehash"), "{}", stderr(&out));

    // A rehash of another root writes another lock: it holds its own, not this one.
    let other = env.path().join("other-rbenv");
    fs::create_dir_all(other.join("versions")).unwrap();
    let mut elsewhere = held(&other);
    expect(&other.join("shims/.rbenv-shim"), "rehash", Verdict::Live);
    left();
    // The real reclaim needs it really older than the shortest hold.
    if !wait_past_shortest_hold(&[&shim]) {
        return;
    }
    assert_eq!(reclaim(&env, &root), vec![shim.clone()]);
    elsewhere.kill();
    ok(&mut rbenv());
}

/// nano with locking on writes a vim-style lock (`.NAME.swp`, `b0nano`); killed, it leaves it,
/// and every later nano asks whether to open the file anyway.
#[test]
fn nano_lock_file_held_then_left_by_a_killed_nano() {
    if !require("nano") {
        return;
    }
    use std::ffi::OsStr;
    let env = Env::new();
    let docs = env.path().join("docs");
    write(&docs.join("notes.txt"), "hello\n");
    let home = env.path().as_os_str();
    let start = || {
        crate::util::pty::Terminal::start(
            "nano",
            &[
                OsStr::new("--locking"),
                OsStr::new("--ignorercfiles"),
                OsStr::new("notes.txt"),
            ],
            &docs,
            &[("HOME", home)],
        )
    };
    let mut nano = start();
    let lock = docs.join(".notes.txt.swp");
    wait_until("nano to write its lock", || lock.exists());
    let f = expect(&lock, "vim-swap", Verdict::Live);
    assert_eq!(
        f.judgement.owner.as_ref().and_then(|o| o.pid),
        Some(nano.pid() as i64)
    );
    assert_eq!(
        f.judgement.flag(locksmith::verdict::Flag::UNSAVED_CHANGES),
        Some(false)
    );

    nano.kill();
    let f = expect(&lock, "vim-swap", Verdict::Stale);
    assert_evidence(&f, "nothing in it to recover");
    let mut asking = start();
    wait_until("nano to ask about the lock", || {
        String::from_utf8_lossy(&asking.output.lock().unwrap()).contains("is being edited by")
    });
    asking.kill();

    assert_eq!(reclaim(&env, &docs), vec![lock.clone()]);
    let mut editing = start();
    let pid = editing.pid() as i64;
    wait_until("nano to take its lock again", || {
        fs::read(&lock).is_ok_and(|b| {
            b.len() > 28 && i64::from(u32::from_le_bytes(b[24..28].try_into().unwrap())) == pid
        })
    });
    assert!(
        !String::from_utf8_lossy(&editing.output.lock().unwrap()).contains("is being edited by")
    );
    editing.kill();
}
