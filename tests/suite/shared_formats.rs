//! Formats that several programs write, with the real programs: Emacs's `.#FILE` links as
//! Midnight Commander's editor, JOE and JED write them; Vim's swap files as Neovim writes
//! them (and a vim under a name no list knows); pid files from `start-stop-daemon`; and the
//! shell idiom `mkdir LOCK || exit`. Each is `live` while its program runs (or, for a program
//! the lists do not know, never `stale` while it runs), `stale` after SIGKILL, reclaimed, and
//! the program starts again and takes its lock anew.

use std::ffi::OsStr;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::util;
use crate::util::judging::{scan_replayed, steady, written_ago_this_boot};
use crate::util::pty::Terminal;
use crate::util::ui::Ui;
use crate::util::{Env, Group, alive, hostname, require, stderr, wait_for, wait_until, which};

/// `locksmith --scan --json ROOT`: the lock at `path`, with the exit status.
fn judged(env: &Env, root: &Path, path: &Path) -> (String, String, Vec<String>, Option<i64>) {
    let (report, _) = env.scan_json(&[root]);
    let l = report.expect_lock(path);
    (
        l.dialect.clone(),
        l.verdict.clone(),
        l.proofs.iter().map(|p| p.rule.clone()).collect(),
        l.owner.as_ref().and_then(|o| o.pid),
    )
}

/// Reclaims what is stale under `root` and checks `path` went.
fn reclaimed(env: &Env, root: &Path, path: &Path, extra: &[&str]) {
    let mut args: Vec<&OsStr> = vec!["--scan".as_ref(), "--reclaim".as_ref()];
    args.extend(extra.iter().map(OsStr::new));
    args.push(root.as_os_str());
    let out = env.run(args);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        fs::symlink_metadata(path).is_err(),
        "{} was not reclaimed",
        path.display()
    );
}

/// The PID an Emacs-style link names (`USER@HOST.PID[:BOOT]`), and its host.
fn link_owner(lock: &Path) -> (String, i64) {
    let text = fs::read_link(lock).unwrap().to_string_lossy().into_owned();
    let (_, rest) = text.rsplit_once('@').unwrap();
    let rest = rest.split(':').next().unwrap();
    let (host, pid) = rest.rsplit_once('.').unwrap();
    (host.to_string(), pid.parse().unwrap())
}

/// An editor started in a pty on `file`, with a key typed so that it takes its lock.
fn edit(program: &str, args: &[&str], file: &Path, home: &Path, keys: &[u8]) -> Terminal {
    let host = hostname();
    let mut all: Vec<&OsStr> = args.iter().map(OsStr::new).collect();
    all.push(file.file_name().unwrap());
    let mut t = Terminal::start(
        program,
        &all,
        file.parent().unwrap(),
        &[
            ("HOME", home.as_os_str()),
            ("USER", OsStr::new("root")),
            ("LOGNAME", OsStr::new("root")),
            ("HOSTNAME", OsStr::new(&host)),
            ("XDG_CONFIG_HOME", home.join("config").as_os_str()),
            ("XDG_DATA_HOME", home.join("data").as_os_str()),
            ("XDG_STATE_HOME", home.join("state").as_os_str()),
        ],
    );
    // Let it draw, then type.
    std::thread::sleep(Duration::from_millis(800));
    t.send(keys);
    t
}

/// Emacs's `.#FILE` links as three other editors write them: live while the editor runs,
/// stale once it is killed, reclaimed, and the editor edits the file again without a word
/// about a lock.
#[test]
fn emacs_links_of_other_editors_are_live_then_stale_and_the_editor_starts_again() {
    for (program, args) in [("mcedit", &[][..]), ("joe", &[][..]), ("jed", &[][..])] {
        if !require(program) {
            continue;
        }
        let env = Env::new();
        let home = env.path().join("home");
        let docs = env.path().join("docs");
        fs::create_dir_all(&home).unwrap();
        fs::create_dir_all(&docs).unwrap();
        let file = docs.join("notes.txt");
        fs::write(&file, "hello\n").unwrap();
        let lock = docs.join(".#notes.txt");

        let mut editor = edit(program, args, &file, &home, b"x");
        wait_until(&format!("{program}'s lock"), || {
            fs::symlink_metadata(&lock).is_ok()
        });
        let (host, pid) = link_owner(&lock);
        assert_eq!(host, hostname(), "{program} names this host");
        assert!(alive(pid as i32), "{program}'s lock names a live PID");
        let (dialect, verdict, _, owner) = judged(&env, &docs, &lock);
        assert_eq!(
            (dialect.as_str(), verdict.as_str()),
            ("emacs", "live"),
            "{program}"
        );
        assert_eq!(owner, Some(pid));

        editor.kill();
        wait_until(&format!("{program} to be gone"), || !alive(pid as i32));
        let (_, verdict, proofs, _) = judged(&env, &docs, &lock);
        assert_eq!(verdict, "stale", "{program}");
        assert_eq!(proofs, ["pid-gone"], "{program}");
        reclaimed(&env, &docs, &lock, &[]);

        // It starts again and takes its lock anew, with its own PID.
        let mut again = edit(program, args, &file, &home, b"y");
        wait_until(&format!("{program}'s new lock"), || {
            fs::symlink_metadata(&lock).is_ok_and(|_| link_owner(&lock).1 != pid)
        });
        let (_, verdict, _, _) = judged(&env, &docs, &lock);
        assert_eq!(verdict, "live", "{program} after reclaim");
        again.kill();
    }
}

/// The swap-file directory Neovim uses under `home`, once it made one.
fn nvim_swap(home: &Path) -> Option<PathBuf> {
    ["data/nvim/swap", "state/nvim/swap"]
        .iter()
        .map(|d| home.join(d))
        .filter_map(|d| fs::read_dir(d).ok())
        .flat_map(|d| d.flatten().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|e| e == "swp"))
}

/// Vim's swap layout as Neovim writes it: live while nvim runs, stale with unsaved changes
/// (kept, with `nvim -r` to recover them) once it is killed, and nvim opens the file again
/// without E325 once the swap is reclaimed.
#[test]
fn neovim_swap_files_are_live_then_stale_and_nvim_starts_again() {
    if !require("nvim") {
        return;
    }
    let env = Env::new();
    let home = env.path().join("home");
    let docs = env.path().join("docs");
    fs::create_dir_all(&home).unwrap();
    fs::create_dir_all(&docs).unwrap();
    let file = docs.join("notes.txt");
    fs::write(&file, "hello\n").unwrap();
    let mut nvim = edit("nvim", &["-u", "NONE"], &file, &home, b"ichanged");
    let swap = wait_for("nvim's swap file", || {
        nvim_swap(&home).filter(|p| fs::metadata(p).is_ok_and(|m| m.len() >= 1024))
    });
    let dir = swap.parent().unwrap().to_path_buf();
    let pid = nvim.pid();
    // nvim writes its unsaved changes to the swap file after 'updatetime' (4 s).
    wait_until("the changes in the swap", || {
        let (report, _) = env.scan_json(&[&dir]);
        report.expect_lock(&swap).unsaved_changes == Some(true)
    });
    let (dialect, verdict, _, owner) = judged(&env, &dir, &swap);
    assert_eq!((dialect.as_str(), verdict.as_str()), ("vim-swap", "live"));
    assert_eq!(owner, Some(pid as i64));

    nvim.kill();
    let (_, verdict, proofs, _) = judged(&env, &dir, &swap);
    assert_eq!(verdict, "stale");
    assert_eq!(proofs, ["pid-gone"]);
    // Unsaved changes: kept, with the editor that recovers them.
    let out = env.run(["--scan".as_ref(), "--reclaim".as_ref(), dir.as_os_str()]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(swap.exists(), "{text}");
    assert!(text.contains("nvim -r"), "{text}");
    reclaimed(&env, &dir, &swap, &["--include-unsaved"]);

    // nvim opens the file again without its E325 warning.
    let mut again = edit("nvim", &["-u", "NONE"], &file, &home, b"");
    wait_for("nvim's new swap file", || nvim_swap(&home));
    std::thread::sleep(Duration::from_millis(500));
    let shown = String::from_utf8_lossy(&again.output.lock().unwrap()).into_owned();
    assert!(!shown.contains("E325"), "nvim still warns: {shown}");
    again.kill();
}

/// A vim under a name no list knows (an editor that writes vim's layout): while it runs, its
/// swap file is never called stale; once it is killed, it is.
#[test]
fn a_swap_of_an_editor_no_list_knows_is_never_stale_while_it_runs() {
    if !require("vim") {
        return;
    }
    let env = Env::new();
    let home = env.path().join("home");
    let docs = env.path().join("docs");
    let bin = env.path().join("bin");
    for d in [&home, &docs, &bin] {
        fs::create_dir_all(d).unwrap();
    }
    let vim = std::fs::canonicalize(which("vim").unwrap()).unwrap();
    let editor = bin.join("scribe");
    fs::copy(&vim, &editor).unwrap();
    let file = docs.join("notes.txt");
    fs::write(&file, "hello\n").unwrap();
    let mut t = edit(
        editor.to_str().unwrap(),
        &["-u", "NONE", "-N"],
        &file,
        &home,
        b"ichanged",
    );
    let swap = docs.join(".notes.txt.swp");
    wait_until("the swap file", || {
        fs::metadata(&swap).is_ok_and(|m| m.len() >= 1024)
    });
    let (dialect, verdict, _, owner) = judged(&env, &docs, &swap);
    assert_eq!(dialect, "vim-swap");
    assert_eq!(owner, Some(t.pid() as i64));
    assert_eq!(verdict, "unknown", "a name proves nothing either way");
    let out = env.run([
        "--scan".as_ref(),
        "--reclaim".as_ref(),
        "--include-unsaved".as_ref(),
        docs.as_os_str(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        swap.exists(),
        "a running editor's swap must not be reclaimed"
    );
    t.kill();
    let (_, verdict, _, _) = judged(&env, &docs, &swap);
    assert_eq!(verdict, "stale");
}

/// `start-stop-daemon --make-pidfile`: live while the daemon runs, stale once it is killed,
/// reclaimed, and the daemon starts again under the same pid file.
#[test]
fn start_stop_daemon_pid_files_are_live_then_stale_and_the_daemon_starts_again() {
    if !require("start-stop-daemon") {
        return;
    }
    let env = Env::new();
    let run = env.path().join("run");
    fs::create_dir_all(&run).unwrap();
    let pidfile = run.join("sleeper.pid");
    let start = || {
        let st = Command::new("start-stop-daemon")
            .args(["--start", "--background", "--make-pidfile", "--pidfile"])
            .arg(&pidfile)
            .args(["--startas", "/bin/sleep", "--", "600"])
            .stdin(Stdio::null())
            .status()
            .unwrap();
        assert!(st.success());
        wait_for("the pid file", || {
            fs::read_to_string(&pidfile)
                .ok()
                .and_then(|t| t.trim().parse::<i32>().ok())
                .filter(|p| alive(*p))
        })
    };
    let pid = start();
    let (dialect, verdict, _, owner) = judged(&env, &run, &pidfile);
    assert_eq!((dialect.as_str(), verdict.as_str()), ("pidfile", "live"));
    assert_eq!(owner, Some(pid as i64));
    let _ = rustix::process::kill_process(
        rustix::process::Pid::from_raw(pid).unwrap(),
        rustix::process::Signal::KILL,
    );
    wait_until("the daemon to be gone", || !alive(pid));
    let (_, verdict, proofs, _) = judged(&env, &run, &pidfile);
    assert_eq!(verdict, "stale");
    assert_eq!(proofs, ["pid-gone"]);
    reclaimed(&env, &run, &pidfile, &[]);
    let again = start();
    assert_ne!(again, pid);
    assert_eq!(judged(&env, &run, &pidfile).1, "live");
    let _ = rustix::process::kill_process(
        rustix::process::Pid::from_raw(again).unwrap(),
        rustix::process::Signal::KILL,
    );
}

/// The shell idiom `mkdir LOCK || exit`: a script holds the lock for as long as it runs and
/// never touches it. However old, it survives `--scan --reclaim` and the UI's `D`.
#[test]
fn a_running_scripts_mkdir_lock_survives_any_reclaim() {
    let env = Env::new();
    let locks = env.path().join("var/lock");
    fs::create_dir_all(&locks).unwrap();
    let lock = locks.join("job.lock");
    let script = Group::spawn(
        Command::new("sh")
            .args([
                "-c",
                "mkdir \"$1\" || exit 1; sleep 600; rmdir \"$1\"",
                "sh",
            ])
            .arg(&lock)
            .stdin(Stdio::null()),
    );
    wait_until("the script's lock", || lock.is_dir());
    // Five hours old, as a long job's lock is (its scan's recording judged again so, in
    // this boot, on a clock known steady), or as this machine finds it: unknown.
    let (report, scanned) = scan_replayed(&env, &["--json"], &locks, |ev| {
        steady(ev);
        written_ago_this_boot(ev, &lock, 5 * 3600);
    });
    for report in [&report, &util::parse_report(&scanned)] {
        let l = report.expect_lock(&lock);
        assert_eq!(
            (l.dialect.as_str(), l.verdict.as_str()),
            ("mkdir-lock", "unknown")
        );
    }
    let out = env.run(["--scan".as_ref(), "--reclaim".as_ref(), locks.as_os_str()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(lock.is_dir(), "a running script's lock was reclaimed");

    let mut ui = Ui::start(&env, &[&locks], &[]);
    ui.wait_for("the lock in the table", |s| s.contains("job.lock"));
    ui.send("D");
    ui.wait_for("the refusal", |s| s.contains("no stale lock shown"));
    ui.send("q");
    ui.wait_exit();
    assert!(lock.is_dir(), "D reclaimed a running script's lock");
    assert!(alive(script.pid()));
}

/// `mkdir $L && echo $$ > $L/pid`: the record inside names the owner. Live while the script
/// runs; stale once it is killed, reclaimed with its record, put back by `restore` as it was;
/// and reclaimed again, the next run of the script takes the lock.
#[test]
fn a_mkdir_lock_with_a_pid_record_is_reclaimed_with_it_and_restored() {
    let env = Env::new();
    let locks = env.path().join("var/lock");
    fs::create_dir_all(&locks).unwrap();
    let lock = locks.join("backup.lock");
    let run_script = || {
        Group::spawn(
            Command::new("sh")
                .args([
                    "-c",
                    "mkdir \"$1\" && echo $$ > \"$1/pid\" || exit 1; sleep 600",
                    "sh",
                ])
                .arg(&lock)
                .stdin(Stdio::null()),
        )
    };
    let mut first = run_script();
    let pid = first.pid();
    wait_until("the script's record", || {
        fs::read_to_string(lock.join("pid")).is_ok_and(|t| t.trim() == pid.to_string())
    });
    let (_, verdict, _, owner) = judged(&env, &locks, &lock);
    assert_eq!(verdict, "live");
    assert_eq!(owner, Some(pid as i64));
    first.kill();
    let (_, verdict, proofs, _) = judged(&env, &locks, &lock);
    assert_eq!(verdict, "stale");
    assert_eq!(proofs, ["pid-gone"]);
    reclaimed(&env, &locks, &lock, &[]);

    // Restored as it was: the directory and its record.
    let out = env.run(["restore", "--last-batch"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        fs::read_to_string(lock.join("pid")).unwrap().trim(),
        pid.to_string()
    );
    reclaimed(&env, &locks, &lock, &[]);

    // The next run takes the lock.
    let second = run_script();
    wait_until("the second run's record", || {
        fs::read_to_string(lock.join("pid")).is_ok_and(|t| t.trim() == second.pid().to_string())
    });
    assert_eq!(judged(&env, &locks, &lock).1, "live");
}

/// JOE with `HOSTNAME` and `USER` not exported writes `me@here.PID` (`lock_it` in its
/// `joe/ufile.c`): `here` names no host, so the lock is this host's on a local file system:
/// live while JOE runs, stale once it is killed (never `foreign`).
#[test]
fn joe_without_hostname_writes_here_which_is_this_host() {
    if !require("joe") || !require("env") {
        return;
    }
    let env = Env::new();
    let home = env.path().join("home");
    let docs = env.path().join("docs");
    fs::create_dir_all(&home).unwrap();
    fs::create_dir_all(&docs).unwrap();
    let file = docs.join("notes.txt");
    fs::write(&file, "hello\n").unwrap();
    let lock = docs.join(".#notes.txt");
    let mut joe = Terminal::start(
        "env",
        &[
            OsStr::new("-u"),
            OsStr::new("HOSTNAME"),
            OsStr::new("-u"),
            OsStr::new("USER"),
            OsStr::new("joe"),
            file.file_name().unwrap(),
        ],
        &docs,
        &[("HOME", home.as_os_str())],
    );
    std::thread::sleep(Duration::from_millis(800));
    joe.send(b"x");
    wait_until("joe's lock", || fs::symlink_metadata(&lock).is_ok());
    let (host, pid) = link_owner(&lock);
    assert_eq!(host, "here", "joe names no host without HOSTNAME");
    let (dialect, verdict, _, owner) = judged(&env, &docs, &lock);
    assert_eq!((dialect.as_str(), verdict.as_str()), ("emacs", "live"));
    assert_eq!(owner, Some(pid));
    joe.kill();
    wait_until("joe to be gone", || !alive(pid as i32));
    let (_, verdict, proofs, _) = judged(&env, &docs, &lock);
    assert_eq!(verdict, "stale");
    assert_eq!(proofs, ["pid-gone"]);
    reclaimed(&env, &docs, &lock, &[]);
}
