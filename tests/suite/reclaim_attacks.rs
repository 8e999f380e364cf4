//! Reclaim run as root over a shared, sticky, world-writable directory, against a hostile
//! local user (uid 65534, via `setpriv`) who races it with `renameat2` timed by inotify:
//! - a directory in the middle of a lock's path swapped with a symlink to a root-only
//!   directory while root scans and reclaims: nothing outside the scanned tree is removed;
//! - a live lock renamed over the stale one while root reclaims it: the live lock is never
//!   removed, and the journal names only what was removed;
//! - user, mount and PID namespaces of the attacker's own (`unshare`, no privilege) naming
//!   themselves like another host, or mounting a directory the attacker may only read onto a
//!   lock place: root takes them for no container, judges no lock by their word and reclaims
//!   nothing through them;
//! - a directory on a reclaimed lock's path swapped for another user's private directory before
//!   `restore`: restore refuses.
//!
//! The racing attacker is a Python script (ctypes for `inotify` and `renameat2`) run as
//! `nobody`. These tests need root (to switch users); elsewhere they skip with a message.

use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::{PermissionsExt, chown};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use crate::util::judging::judge;
use crate::util::userns::UserNamespace;
use crate::util::*;
use locksmith::config::Settings;
use locksmith::reclaim::{Action, Reclaim, ReclaimOptions};
use locksmith::verdict::Verdict;
use sha2::{Digest, Sha256};

const NOBODY: u32 = 65534;
const PYTHON: &str = "/usr/bin/python3";

/// The attacker's side. `swap SHARED`: builds `SHARED/a/b/x.pid` (a dead PID) among many
/// other entries and `SHARED/evil`, a symlink to the root-only directory given, then waits for
/// root to open `a/b` and exchanges `a` with `evil`. `race SHARED`: for each `go` line, renames
/// a lock naming its own (live) PID over `SHARED/x.pid` at a moment learned from inotify.
const ATTACKER: &str = r#"
import ctypes, os, random, struct, sys, time
libc = ctypes.CDLL(None, use_errno=True)
libc.renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
AT_FDCWD = -100
RENAME_EXCHANGE = 2
IN_OPEN, IN_CLOSE_NOWRITE, IN_MOVED_FROM, IN_DELETE = 0x20, 0x10, 0x40, 0x200

def events(fd):
    buf = os.read(fd, 65536)
    i = 0
    while i < len(buf):
        wd, mask, cookie, ln = struct.unpack_from("iIII", buf, i)
        name = buf[i + 16:i + 16 + ln].rstrip(b"\0")
        i += 16 + ln
        yield mask, name

def say(line):
    sys.stdout.write(line + "\n")
    sys.stdout.flush()

mode, shared = sys.argv[1], sys.argv[2].encode()
if mode == "swap":
    target, dead = sys.argv[3].encode(), sys.argv[4]
    a, b, evil = shared + b"/a", shared + b"/a/b", shared + b"/evil"
    os.makedirs(b)
    for i in range(3000):
        open(b + b"/f%05d.dat" % i, "w").close()
    with open(b + b"/x.pid", "w") as f:
        f.write(dead + "\n")
    os.symlink(target, evil)
    fd = libc.inotify_init1(0)
    libc.inotify_add_watch(fd, b, IN_OPEN)
    say("ready")
    for mask, name in events(fd):
        break
    if libc.renameat2(AT_FDCWD, a, AT_FDCWD, evil, RENAME_EXCHANGE) != 0:
        say("error %d" % ctypes.get_errno())
    else:
        say("swapped")
elif mode == "race":
    fd = libc.inotify_init1(0)
    libc.inotify_add_watch(fd, shared, IN_CLOSE_NOWRITE | IN_MOVED_FROM | IN_DELETE)
    lock, live = shared + b"/x.pid", shared + b"/.live"
    learned = []
    for line in sys.stdin:
        if line.strip() != "go":
            break
        with open(live, "w") as f:
            f.write("%d\n" % os.getpid())
        say("armed")
        t0 = None
        # The first time root closes the lock after reading it starts the clock; the delay
        # before root removes (or moves) the name is learned from earlier rounds.
        for mask, name in events(fd):
            if name == b"x.pid" and mask & IN_CLOSE_NOWRITE:
                t0 = time.perf_counter()
                break
        if learned:
            lo, hi = min(learned), max(learned)
            delay = random.uniform(lo * 0.9, hi * 1.02)
        else:
            # Root syncs the copy and the journal line before it moves the name: milliseconds
            # on a disk.
            delay = random.uniform(0, 0.05)
        while time.perf_counter() - t0 < delay:
            pass
        renamed = os.rename(live, lock) is None
        say("renamed")
        # Learn when root removed or moved the name in this round (it may already have).
        os.set_blocking(fd, False)
        deadline = time.perf_counter() + 0.05
        while time.perf_counter() < deadline:
            try:
                evs = list(events(fd))
            except BlockingIOError:
                time.sleep(0.0005)
                continue
            seen = [m for m, n in evs if n == b"x.pid" and m & (IN_MOVED_FROM | IN_DELETE)]
            if seen:
                learned.append(time.perf_counter() - t0)
                learned = learned[-20:]
                break
        os.set_blocking(fd, True)
        say("done")
"#;

/// Whether the attacks can be staged here: root, `setpriv` and `/usr/bin/python3`.
fn can_attack() -> bool {
    require_that(
        rustix::process::geteuid().is_root(),
        "reclaim attack tests need root (to run the attacker as uid 65534)",
    ) && require("setpriv")
        && require_that(
            Path::new(PYTHON).exists(),
            format!("{PYTHON} is not installed (.ci/run installs it)"),
        )
}

/// A sticky, world-writable directory like `/tmp` inside the test's directory (which every
/// user may enter), with the attacker script beside it.
fn shared_dir(env: &Env) -> (PathBuf, PathBuf) {
    fs::set_permissions(env.path(), fs::Permissions::from_mode(0o755)).unwrap();
    let shared = env.path().join("shared");
    fs::create_dir(&shared).unwrap();
    fs::set_permissions(&shared, fs::Permissions::from_mode(0o1777)).unwrap();
    let script = env.path().join("attacker.py");
    fs::write(&script, ATTACKER).unwrap();
    fs::set_permissions(&script, fs::Permissions::from_mode(0o644)).unwrap();
    (shared, script)
}

/// The attacker script run as uid/gid 65534 with no supplementary groups.
fn attacker(script: &Path, args: &[&str]) -> (Child, ChildStdin, BufReader<ChildStdout>) {
    let mut child = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", PYTHON])
        .arg(script)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start the attacker");
    let stdin = child.stdin.take().unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    (child, stdin, stdout)
}

fn read_line(r: &mut BufReader<ChildStdout>) -> String {
    let mut line = String::new();
    r.read_line(&mut line).expect("the attacker talks");
    line.trim().to_string()
}

/// Root scans and reclaims a shared directory while the attacker swaps a directory in the
/// middle of a stale lock's path with a symlink to a root-only directory holding a file of the
/// same name: only files inside the scanned tree may ever be removed.
#[test]
fn a_middle_directory_swapped_during_scan_and_reclaim_never_leads_outside() {
    if !can_attack() {
        return;
    }
    let tries = 10;
    let mut swapped = 0;
    for round in 0..tries {
        let env = Env::new();
        let (shared, script) = shared_dir(&env);
        // Root's own directory, out of the attacker's reach, with a stale-looking pid file at
        // the same place below it as the attacker's.
        let secret = env.path().join("secret");
        fs::create_dir_all(secret.join("b")).unwrap();
        fs::set_permissions(&secret, fs::Permissions::from_mode(0o700)).unwrap();
        let precious = secret.join("b/x.pid");
        fs::write(&precious, format!("{}\n", dead_pid())).unwrap();

        let dead = dead_pid().to_string();
        let (mut child, _stdin, mut out) = attacker(
            &script,
            &[
                "swap",
                shared.to_str().unwrap(),
                secret.to_str().unwrap(),
                &dead,
            ],
        );
        assert_eq!(read_line(&mut out), "ready");
        let run = env.run([
            "--scan".as_ref(),
            "--reclaim".as_ref(),
            "--json".as_ref(),
            shared.as_os_str(),
        ]);
        // The walker opened `a/b`, so the swap has happened (or failed) by now.
        let said = read_line(&mut out);
        let _ = child.wait();
        assert_eq!(
            said, "swapped",
            "round {round}: the attacker could not swap"
        );
        swapped += 1;
        assert!(
            precious.exists(),
            "round {round}: root removed {} outside the scanned tree\n{}",
            precious.display(),
            stdout(&run)
        );
        // Whatever the journal says was removed is really gone, and was inside the tree.
        for line in env.journal() {
            if line["event"] == "reclaim" {
                let path = PathBuf::from(line["path"].as_str().unwrap());
                assert!(path.starts_with(&shared), "round {round}: {line}");
                assert!(
                    fs::symlink_metadata(&path).is_err() || path_is_through_symlink(&path),
                    "round {round}: the journal names {} as removed, but it is there",
                    path.display()
                );
            }
        }
    }
    assert_eq!(swapped, tries);
}

/// Whether some directory on `path` (below the test's directory) is now a symlink, so the
/// path no longer names what it named when root looked at it.
fn path_is_through_symlink(path: &Path) -> bool {
    path.ancestors()
        .skip(1)
        .any(|p| fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_symlink()))
}

/// Root reclaims a stale pid file (owned by the attacker, in a sticky shared directory)
/// while the attacker renames a lock naming a live process over it, at a moment it learns
/// from inotify. Over many rounds: the live lock is never removed, and every journal line
/// describes the stale file that was removed.
#[test]
fn a_live_lock_renamed_over_the_stale_one_is_never_removed() {
    if !can_attack() {
        return;
    }
    let env = Env::new();
    let (shared, script) = shared_dir(&env);
    let lock = shared.join("x.pid");
    let config = Settings::embedded().scan;
    let opts = ReclaimOptions {
        state_dir: env.state_dir(),
        ..ReclaimOptions::new()
    };
    let (mut child, mut stdin, mut out) = attacker(&script, &["race", shared.to_str().unwrap()]);
    let attacker_pid = child.id();
    let rounds = 400;
    let (mut removed, mut kept) = (0, 0);
    for round in 0..rounds {
        let stale = format!("{}\n", dead_pid());
        let _ = fs::remove_file(&lock);
        fs::write(&lock, &stale).unwrap();
        chown(&lock, Some(NOBODY), Some(NOBODY)).unwrap();
        let finding = judge(&lock);
        assert_eq!(finding.judgement.verdict(), Verdict::Stale, "{finding:?}");
        writeln!(stdin, "go").unwrap();
        assert_eq!(read_line(&mut out), "armed");
        let mut o = None;
        Reclaim::new(&config)
            .options(opts.clone())
            .run([&finding], |x| o = Some(x));
        let o = o.expect("one outcome per lock");
        assert_eq!(read_line(&mut out), "renamed");
        assert_eq!(read_line(&mut out), "done");
        // The attacker's rename put a live lock at the name, before or after root acted: it
        // must be there now.
        let now = fs::read_to_string(&lock).unwrap_or_default();
        assert_eq!(
            now.trim(),
            attacker_pid.to_string(),
            "round {round}: the live lock was removed ({o:?})"
        );
        match o.action {
            Action::Removed => {
                removed += 1;
                let saved = String::from_utf8(saved_copy(
                    o.saved_to.as_ref().unwrap().to_str().unwrap(),
                    o.saved_offset,
                    stale.len(),
                ))
                .unwrap();
                assert_eq!(
                    saved, stale,
                    "round {round}: the copy is not the stale file"
                );
            }
            _ => kept += 1,
        }
        // No file is left behind under another name.
        let names: Vec<_> = fs::read_dir(&shared)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 1, "round {round}: {names:?}");
    }
    drop(stdin);
    let _ = child.wait();
    // Every reclaim line describes a stale file that was removed, but those cancelled by a
    // later line (on disk before the removal was tried, which then kept the lock).
    let journal = env.journal();
    let cancelled: Vec<&serde_json::Value> = journal
        .iter()
        .filter(|l| l["event"] == "reclaim-failed")
        .map(|l| &l["cancels"])
        .collect();
    assert!(
        cancelled.len() <= kept,
        "a cancelled line for a lock removed"
    );
    let mut journaled = 0;
    for line in &journal {
        if line["event"] != "reclaim" || cancelled.contains(&&line["id"]) {
            continue;
        }
        journaled += 1;
        let saved = journal_copy(line);
        assert_eq!(line["sha256"], hex(&Sha256::digest(&saved)), "{line}");
        let text = String::from_utf8(saved).unwrap();
        assert_ne!(text.trim(), attacker_pid.to_string(), "{line}");
    }
    assert_eq!(journaled, removed, "one journal line per removal");
    eprintln!("{removed} removed, {kept} kept in {rounds} rounds");
    assert!(removed > 0, "the race never let a reclaim through");
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A test directory every user may enter (the attacker's namespaces live in it).
fn env_others_may_enter() -> Env {
    let env = Env::new();
    fs::set_permissions(env.path(), fs::Permissions::from_mode(0o755)).unwrap();
    env
}

/// The attacker's own namespaces (see [`UserNamespace`]), rooted in the test's directory.
fn users_namespace(
    env: &Env,
    binds: &[(&Path, &str)],
    script: &str,
    ready: Option<&str>,
) -> Option<UserNamespace> {
    UserNamespace::start_or_skip(&env.path().join("attacker-root"), binds, script, ready)
}

/// The attacker, uid 65534, makes user, mount and PID namespaces of its own with a chroot
/// whose `/etc/hostname` says `build-7`, and mounts a directory it may only read into it: an
/// NFS export where the machine build-7 edits `notes.txt`, with that machine's emacs lock.
/// Root's `--scan --reclaim` must not take the attacker's namespace for build-7: the lock
/// names another host, so it is `foreign` and stays.
#[test]
fn a_users_namespace_naming_itself_like_another_host_does_not_make_its_locks_stale() {
    if !can_attack() {
        return;
    }
    let env = env_others_may_enter();
    let export = env.path().join("export");
    fs::create_dir(&export).unwrap();
    fs::write(export.join("notes.txt"), "build-7 is editing this\n").unwrap();
    let lock = export.join(".#notes.txt");
    std::os::unix::fs::symlink("alice@build-7.4242:1700000000", &lock).unwrap();
    let Some(_ns) = users_namespace(
        &env,
        &[(&export, "/srv/export")],
        "echo build-7 > /etc/hostname && touch /ready && exec sleep 1000",
        Some("/ready"),
    ) else {
        return;
    };

    let (report, _) = env.scan_json(&[&export]);
    let l = report.expect_lock(&lock);
    let text = l.evidence.join("\n");
    assert_eq!(l.dialect, "emacs");
    assert_eq!(l.verdict, "foreign", "{text}");
    assert!(!text.contains("the host name of"), "{text}");

    let out = env.run(["--scan".as_ref(), "--reclaim".as_ref(), export.as_os_str()]);
    assert!(
        fs::symlink_metadata(&lock).is_ok(),
        "root removed build-7's lock on the word of a user's namespace\n{}",
        stdout(&out)
    );
    assert!(
        env.journal().iter().all(|e| e["event"] != "reclaim"),
        "{:?}",
        env.journal()
    );
}

/// The attacker, uid 65534, mounts a root-owned directory it may only read (outside every
/// configured root) onto a lock place of its own namespaces' root. Root scans the configured
/// places of containers with `--scan --reclaim`: a user's namespace is no container, nothing
/// is looked for inside it, and the root-owned pid file there stays.
#[test]
fn a_host_directory_mounted_in_a_users_namespace_is_not_reclaimed_through_it() {
    if !can_attack() {
        return;
    }
    let env = env_others_may_enter();
    // Root's own directory, readable by all, outside every configured root.
    let secret = env.path().join("secret");
    fs::create_dir(&secret).unwrap();
    let precious = secret.join("daemon.pid");
    fs::write(&precious, format!("{}\n", dead_pid())).unwrap();
    // The configured lock place: empty on the host.
    let place = env.path().join("place");
    fs::create_dir(&place).unwrap();
    let cfg = env.path().join("place.json");
    fs::write(
        &cfg,
        format!(
            r#"{{"roots": [{{"path": "{}", "max_depth": 2}}]}}"#,
            place.display()
        ),
    )
    .unwrap();
    let place_inside = place.to_str().unwrap().to_string();
    let Some(ns) = users_namespace(
        &env,
        &[(&secret, &place_inside)],
        "touch /ready && exec sleep 1000",
        Some("/ready"),
    ) else {
        return;
    };
    let through = PathBuf::from(format!("/proc/{}/root", ns.init))
        .join(place_inside.trim_start_matches('/'))
        .join("daemon.pid");
    assert!(through.exists(), "the attacker's mount is in place");

    let cfg = cfg.to_str().unwrap();
    let out = env.run(["--scan", "--reclaim", "--config", cfg]);
    assert!(
        precious.exists(),
        "root removed {} through a user's mount\n{}",
        precious.display(),
        stdout(&out)
    );
    let out = env.run(["--scan", "--json", "--config", cfg]);
    let report = crate::util::parse_report(&out);
    assert!(
        report.locks.iter().all(|l| !l.path.starts_with("/proc/")),
        "a user's namespace was scanned inside: {:?}",
        report.locks.iter().map(|l| &l.path).collect::<Vec<_>>()
    );
}

/// Root reclaims a user's stale pid file in a world-writable directory without the sticky bit.
/// The attacker, uid 65534, then moves that directory away and renames another user's private
/// (0700) directory to its name. `locksmith restore` must see that the directory is not the one
/// the lock was removed from, and refuse; once the real directory is back, it restores there.
#[test]
fn restore_refuses_a_directory_swapped_on_the_way_since_reclaim() {
    if !can_attack() {
        return;
    }
    let env = env_others_may_enter();
    let shared = env.path().join("shared");
    fs::create_dir(&shared).unwrap();
    fs::set_permissions(&shared, fs::Permissions::from_mode(0o777)).unwrap();
    let work = shared.join("work");
    fs::create_dir(&work).unwrap();
    chown(&work, Some(NOBODY), Some(NOBODY)).unwrap();
    let lock = work.join("job.pid");
    fs::write(&lock, format!("{}\n", dead_pid())).unwrap();
    chown(&lock, Some(NOBODY), Some(NOBODY)).unwrap();
    // Another user's private directory in the same shared directory.
    let private = shared.join("private");
    fs::create_dir(&private).unwrap();
    chown(&private, Some(NOBODY - 1), Some(NOBODY - 1)).unwrap();
    fs::set_permissions(&private, fs::Permissions::from_mode(0o700)).unwrap();

    let out = env.run(["--scan".as_ref(), "--reclaim".as_ref(), work.as_os_str()]);
    assert!(!lock.exists(), "{}", stdout(&out));

    let swap = |from: &str, to: &str| {
        let status = as_nobody("sh")
            .arg("-c")
            .arg(format!("cd '{}' && {from} && {to}", shared.display()))
            .status()
            .unwrap();
        assert!(
            status.success(),
            "the attacker could not swap the directories"
        );
    };
    swap("mv work work.old", "mv private work");
    let out = env.run(["restore", "--last-batch"]);
    let said = stderr(&out);
    assert_ne!(out.status.code(), Some(0), "{said}");
    assert!(said.contains("not the directory"), "{said}");
    assert_eq!(
        fs::read_dir(&work).unwrap().count(),
        0,
        "root restored a file into another user's private directory"
    );

    swap("mv work private", "mv work.old work");
    let out = env.run(["restore", "--last-batch"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let meta = fs::metadata(&lock).unwrap();
    assert_eq!(std::os::unix::fs::MetadataExt::uid(&meta), NOBODY);
}
