//! Every dialect but `locksmith`, on lock files captured from the real programs
//! (`tests/fixtures/`, see its README): each fixture is copied under its real name into a
//! temporary directory, its owner fields are checked, and its verdict is driven by rewriting
//! the PID (a dead one, a live process with the right or the wrong name), the host, the time,
//! or the content (garbage, 0, -1, 2^31, `1; rm -rf /`). Where the program is installed and
//! cheap to run, the real program makes the lock, and is killed to leave it behind.
//!
//! Paths are judged the way reclaim and the UI re-judge them (`scan::judge_path` with the
//! embedded configuration), so dialect choice and patterns are tested too; cases that need a
//! network file system call the dialect directly with a candidate that says so.

use std::fs;
use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::util::judging::{
    assert_evidence, assert_open_here, booted_ago, changed_ago, evidence, expect, judge,
    judge_changed, judge_changed_with, judge_in, on_nfs, scan_findings, started_ms, steady,
    try_judge, up_for_at_least, written_ago, written_ago_this_boot, written_at,
    written_before_boot,
};
use crate::util::quiet::{self, Fact};
use crate::util::{
    Env, Group, dead_pid, fixture, fixture_text, git, git_ok, git_repo_with_a_commit, hold_flock,
    hostname, link, named_sleeper, now_ms, parse_report, require, set_mtime_ms, skip, snapshot,
    spawn_as, spawn_as_env, swap_with, wait_until, wait_within, which, write,
};

use locksmith::config::{RawConfig, Settings};
use locksmith::dialect::{self, EntryKind, LoadedCandidate, Windows};
use locksmith::probe::{FileKey, FsInfo, HostFacts};
use locksmith::scan::Finding;
use locksmith::{HolderHow, Judgement, Verdict};

// ---------------------------------------------------------------------------------------------
// Helpers

fn tempdir() -> tempfile::TempDir {
    tempfile::tempdir().expect("temp dir")
}

/// Judges `path` with dialect `id` as if it lay on an NFS mount.
fn judge_on_nfs(path: &Path, id: &str) -> Judgement {
    let snap = snapshot();
    snap.assert_younger_than(path);
    let mut lc = LoadedCandidate::load(path, &snap).unwrap();
    lc.fs = FsInfo::new("nfs", true);
    let d = dialect::by_id(id).expect("dialect");
    assert!(
        d.recognise(&lc.candidate(), &snap),
        "{id} does not recognise {path:?}"
    );
    d.judge(&lc.candidate(), &snap, &Windows::default())
}

/// A wall clock that may have stepped forward by up to an hour since this boot began (as
/// this machine's may have): no time comparison within that proves anything.
fn stepped_by_an_hour() -> locksmith::probe::clock::Clock {
    locksmith::probe::clock::Clock {
        step_ms: Some(3600 * 1000),
        how: "the wall clock may have stepped forward by up to 1 h since this boot began".into(),
    }
}

const BAD_PIDS: &[&str] = &["garbage", "0", "-1", "2147483648", "1; rm -rf /"];

// ---------------------------------------------------------------------------------------------
// pidfile

#[test]
fn pidfile_fixtures_parse_to_their_owner() {
    let dir = tempdir();
    for (rel, name, pid) in [
        ("pidfile/dotlockfile-p.txt", "dot.lock", 15075),
        ("pidfile/lockfile-create-use-pid.txt", "lp.lock", 15075),
        ("pidfile/start-stop-daemon.txt", "ssd.pid", 15205),
        ("pidfile/uucp-hdb.txt", "LCK..ttyS0", 4242),
    ] {
        let path = write(&dir.path().join(name), fixture(rel));
        let f = judge(&path);
        assert_eq!(f.dialect, "pidfile", "{rel}");
        assert_eq!(f.judgement.owner.as_ref().unwrap().pid, Some(pid), "{rel}");
    }
    let uucp = write(
        &dir.path().join("bin").join("LCK..ttyS1"),
        fixture("pidfile/uucp-binary.bin"),
    );
    let f = judge(&uucp);
    assert_eq!(f.dialect, "pidfile");
    let owner = f.judgement.owner.unwrap();
    assert_eq!(owner.pid, Some(4242));
    assert!(owner.detail.unwrap().contains("binary"));
}

#[test]
fn pidfile_verdicts_follow_the_pid() {
    let dir = tempdir();
    let me = std::process::id();

    let dead = dead_pid();
    let f = expect(
        &write(&dir.path().join("dead.pid"), format!("{dead}\n")),
        "pidfile",
        Verdict::Stale,
    );
    assert_evidence(&f, "ESRCH");

    // Our own process, written after it started: live, with the process shown.
    let f = expect(
        &write(&dir.path().join("me.lock"), format!("{me}\n")),
        "pidfile",
        Verdict::Live,
    );
    assert_eq!(f.judgement.process.unwrap().pid, me as i32);

    // A live PID in a file written after that process started: live, whatever its mtime says
    // (anyone who may write the file sets that: `touch -d`, `cp -p`).
    let sleeper = named_sleeper(&dir.path().join("bin"), "sleep", dir.path());
    let old = write(&dir.path().join("old.pid"), format!("{}\n", sleeper.pid()));
    let started = snapshot()
        .pid(sleeper.pid())
        .facts()
        .and_then(|f| f.start_ms)
        .expect("start time of a child");
    set_mtime_ms(&old, started - 10_000);
    let f = expect(&old, "pidfile", Verdict::Live);
    assert_evidence(&f, "which anyone who may write it can set");
    // The same file really written 10 s before the process started (in the evidence, on a
    // clock known steady, on a host up for an hour): the PID was reused.
    let f = judge_changed(&old, |ev| {
        booted_ago(ev, 3600);
        written_at(ev, &old, started_ms(ev, sleeper.pid()) - 10_000);
        steady(ev);
    });
    assert_eq!(f.judgement.verdict(), Verdict::Stale, "{:#?}", f.judgement);
    assert_evidence(&f, "reused");
    drop(sleeper);

    // UUCP: padded text and 4-byte binary.
    let padded = write(
        &dir.path().join("LCK..ttyS0"),
        format!("{dead:>10}\n").as_bytes(),
    );
    expect(&padded, "pidfile", Verdict::Stale);
    let bin = write(&dir.path().join("LCK..ttyUSB0"), dead.to_ne_bytes());
    let f = expect(&bin, "pidfile", Verdict::Stale);
    assert_eq!(f.judgement.owner.unwrap().pid, Some(dead as i64));
}

#[test]
fn pidfile_bad_content_is_unknown() {
    let dir = tempdir();
    for (i, bad) in BAD_PIDS.iter().enumerate() {
        for name in [format!("bad{i}.pid"), format!("bad{i}.lock")] {
            let path = write(&dir.path().join(&name), format!("{bad}\n"));
            expect(&path, "pidfile", Verdict::Unknown);
        }
    }
    // What was wrong is quoted as it is: the evidence keeps raw text, the views escape it.
    let f = judge(&write(&dir.path().join("esc.pid"), "1; rm -rf /\x1b[2J\n"));
    assert_evidence(&f, "\"1; rm -rf /\x1b[2J\"");

    // lockfile-create without --use-pid writes 0: no owner to check.
    let np = write(
        &dir.path().join("np.lock"),
        fixture("pidfile/lockfile-create-no-pid.txt"),
    );
    let f = expect(&np, "pidfile", Verdict::Unknown);
    assert_evidence(&f, "--use-pid");
}

#[test]
fn pidfile_kernel_lock_beats_a_dead_pid() {
    let dir = tempdir();
    let path = write(&dir.path().join("daemon.pid"), format!("{}\n", dead_pid()));
    let holder = hold_flock(&path);
    let f = expect(&path, "pidfile", Verdict::Live);
    assert!(
        f.judgement
            .holders
            .iter()
            .any(|h| h.pid == holder.pid() && h.how == HolderHow::Flock),
        "{:#?}",
        f.judgement
    );
    drop(holder);
    expect(&path, "pidfile", Verdict::Stale);
}

#[test]
fn pidfile_on_a_network_fs_is_never_stale() {
    let dir = tempdir();
    let path = write(&dir.path().join("nfs.pid"), format!("{}\n", dead_pid()));
    let j = judge_on_nfs(&path, "pidfile");
    assert_eq!(j.verdict(), Verdict::Foreign, "{j:#?}");
}

#[test]
fn dotlockfile_writes_its_parent_pid() {
    if !require("dotlockfile") {
        return;
    }
    let dir = tempdir();
    // `-p` records the parent: a shell that has exited by the time we look.
    let path = dir.path().join("mail.lock");
    let ok = Command::new("sh")
        .arg("-c")
        .arg(format!("dotlockfile -l -p '{}'; true", path.display()))
        .status()
        .unwrap();
    assert!(ok.success());
    let f = expect(&path, "pidfile", Verdict::Stale);
    assert_evidence(&f, "ESRCH");

    // Run by us, it records our PID: live.
    let path = dir.path().join("ours.lock");
    assert!(
        Command::new("dotlockfile")
            .args(["-l", "-p"])
            .arg(&path)
            .status()
            .unwrap()
            .success()
    );
    let f = expect(&path, "pidfile", Verdict::Live);
    assert_eq!(
        f.judgement.owner.unwrap().pid,
        Some(std::process::id() as i64)
    );
}

// ---------------------------------------------------------------------------------------------
// x11

#[test]
fn x11_fixture_and_verdicts() {
    let dir = tempdir();
    let tmp = dir.path();
    let f = judge(&write(
        &tmp.join(".X57-lock"),
        fixture("x11/display-lock.txt"),
    ));
    assert_eq!(f.dialect, "x11");
    let owner = f.judgement.owner.unwrap();
    assert_eq!(owner.pid, Some(14675));
    assert_eq!(owner.detail.as_deref(), Some("display :57"));

    let dead = dead_pid();
    let f = expect(
        &write(&tmp.join(".X58-lock"), format!("{dead:>10}\n")),
        "x11",
        Verdict::Stale,
    );
    assert_evidence(&f, "ESRCH");

    // Our own process is alive since before the lock, but is no X server: a name proves
    // nothing either way.
    let f = expect(
        &write(
            &tmp.join(".X59-lock"),
            format!("{:>10}\n", std::process::id()),
        ),
        "x11",
        Verdict::Unknown,
    );
    assert_evidence(&f, "nothing proves the lock is not its");

    // A process named Xvfb, started before the lock was written.
    let xvfb = named_sleeper(&tmp.join("bin"), "Xvfb", tmp);
    let f = expect(
        &write(&tmp.join(".X60-lock"), format!("{:>10}\n", xvfb.pid())),
        "x11",
        Verdict::Live,
    );
    assert_eq!(f.judgement.process.unwrap().pid, xvfb.pid());

    for (i, bad) in BAD_PIDS.iter().enumerate() {
        let path = write(
            &tmp.join(format!(".X{}-lock", 70 + i)),
            format!("{bad:>10}\n"),
        );
        expect(&path, "x11", Verdict::Unknown);
    }
}

#[test]
fn x11_real_xvfb_lock_is_live_then_stale() {
    if !require("Xvfb") {
        return;
    }
    // A display nobody uses (-displayfd would pick one, but then Xvfb writes no lock).
    let mut display = 100 + std::process::id() % 400;
    let (mut x, lock) = loop {
        let lock = PathBuf::from(format!("/tmp/.X{display}-lock"));
        let socket = PathBuf::from(format!("/tmp/.X11-unix/X{display}"));
        if lock.exists() || socket.exists() {
            display += 1;
            continue;
        }
        let mut x = Group::spawn(
            Command::new("Xvfb")
                .arg(format!(":{display}"))
                .args(["-nolisten", "tcp"])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null()),
        );
        let pid = x.pid();
        let deadline = Instant::now() + Duration::from_secs(30);
        let mine = loop {
            if fs::read_to_string(&lock).is_ok_and(|t| t.trim() == pid.to_string()) {
                break true;
            }
            if x.child.try_wait().unwrap().is_some() || Instant::now() > deadline {
                break false;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        if mine {
            break (x, lock);
        }
        x.kill();
        display += 1;
        assert!(display < 1000, "no free X display");
    };
    let f = expect(&lock, "x11", Verdict::Live);
    assert_evidence(&f, "listens on display");
    // The server is the process behind it (the report's PID and COMMAND).
    let process = f.judgement.process.as_ref().expect("the X server");
    assert_eq!((process.pid, process.name.as_str()), (x.pid(), "Xvfb"));
    assert_eq!(f.judgement.owner.unwrap().pid, Some(x.pid() as i64));

    x.kill();
    let f = expect(&lock, "x11", Verdict::Stale);
    assert_evidence(&f, "ESRCH");
    let _ = fs::remove_file(&lock);
    let _ = fs::remove_file(format!("/tmp/.X11-unix/X{display}"));
}

// ---------------------------------------------------------------------------------------------
// vim-swap

#[test]
fn vim_swap_fixtures_parse_to_their_owner() {
    let dir = tempdir();
    let clean = write(
        &dir.path().join(".notes.txt.swp"),
        fixture("vim-swap/clean-swap.bin"),
    );
    let f = judge(&clean);
    assert_eq!(f.dialect, "vim-swap");
    let owner = f.judgement.owner.clone().unwrap();
    assert_eq!(owner.pid, Some(14088));
    assert_eq!(owner.user.as_deref(), Some("root"));
    assert_eq!(owner.hostname.as_deref(), Some("vm"));
    assert!(
        owner.detail.unwrap().contains("/tmp/fx/vim/notes.txt"),
        "{f:#?}"
    );
    assert_eq!(
        f.judgement.flag(locksmith::verdict::Flag::UNSAVED_CHANGES),
        Some(false)
    );

    let dirty = write(
        &dir.path().join(".notes.txt.swo"),
        fixture("vim-swap/dirty-swap.bin"),
    );
    let f = judge(&dirty);
    assert_eq!(f.dialect, "vim-swap");
    assert_eq!(
        f.judgement.flag(locksmith::verdict::Flag::UNSAVED_CHANGES),
        Some(true)
    );
    assert_evidence(&f, "holds unsaved changes");

    // The recovery command names the swap file itself (vim recovers that one), while the
    // edited file exists and before it does; one naming another file gets none.
    let mut swap = fixture("vim-swap/dirty-swap.bin");
    let edited = write(&dir.path().join("edited.txt"), "saved text\n");
    let name = edited.to_str().unwrap().as_bytes();
    swap[108..108 + name.len() + 1].copy_from_slice(&[name, b"\0"].concat());
    let present = write(&dir.path().join(".edited.txt.swp"), &swap);
    assert_evidence(&judge(&present), &format!("vim -r {}", present.display()));
    fs::remove_file(&edited).unwrap();
    assert_evidence(&judge(&present), &format!("vim -r {}", present.display()));
    let other = write(&dir.path().join(".other.txt.swp"), &swap);
    assert_evidence(
        &judge(&other),
        "which are not for you to recover: its block 0 names",
    );
}

#[test]
fn vim_swap_verdicts_follow_pid_and_host() {
    let dir = tempdir();
    let tmp = dir.path();
    let host = hostname();

    let dead = dead_pid() as u32;
    let f = expect(
        &write(
            &tmp.join(".a.swp"),
            swap_with("vim-swap/dirty-swap.bin", dead, &host),
        ),
        "vim-swap",
        Verdict::Stale,
    );
    // Stale, and still flagged: the changes are only in the swap file.
    assert_eq!(
        f.judgement.flag(locksmith::verdict::Flag::UNSAVED_CHANGES),
        Some(true)
    );
    assert_evidence(&f, "vim -r");

    let f = expect(
        &write(
            &tmp.join(".b.swp"),
            swap_with("vim-swap/clean-swap.bin", std::process::id(), &host),
        ),
        "vim-swap",
        Verdict::Unknown,
    );
    assert_evidence(&f, "nothing proves the lock is not its");

    let vim = named_sleeper(&tmp.join("bin"), "vim", tmp);
    let f = expect(
        &write(
            &tmp.join(".c.swp"),
            swap_with("vim-swap/clean-swap.bin", vim.pid() as u32, &host),
        ),
        "vim-swap",
        Verdict::Live,
    );
    assert_eq!(
        f.judgement.flag(locksmith::verdict::Flag::UNSAVED_CHANGES),
        Some(false)
    );

    let f = expect(
        &write(
            &tmp.join(".d.swp"),
            swap_with(
                "vim-swap/clean-swap.bin",
                vim.pid() as u32,
                "elsewhere.example",
            ),
        ),
        "vim-swap",
        Verdict::Foreign,
    );
    assert_evidence(&f, "elsewhere.example");

    // Without the leading dot (a swap in 'directory').
    expect(
        &write(
            &tmp.join("e.txt.swp"),
            swap_with("vim-swap/clean-swap.bin", 0, &host),
        ),
        "vim-swap",
        Verdict::Unknown,
    );
    // Cut short, or not a swap at all.
    let short = fixture("vim-swap/clean-swap.bin")[..600].to_vec();
    let f = expect(
        &write(&tmp.join(".f.swp"), short),
        "vim-swap",
        Verdict::Unknown,
    );
    assert_evidence(&f, "cut short");
    let judged = judge(&write(&tmp.join(".g.swp"), "1; rm -rf /"));
    assert_eq!(judged.judgement.verdict(), Verdict::Unknown);
}

#[test]
fn vim_swap_real_vim_is_live_then_stale_with_unsaved_changes() {
    if !require("vim") {
        return;
    }
    let dir = tempdir();
    let file = write(&dir.path().join("notes.txt"), "one\ntwo\n");
    // Ex mode reading commands from a pipe we keep open: no terminal needed.
    let mut vim = Group::spawn(
        Command::new("vim")
            .args(["-u", "NONE", "-i", "NONE", "-N", "-es"])
            .arg(&file)
            .current_dir(dir.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    );
    let swap = dir.path().join(".notes.txt.swp");
    wait_until("the swap file", || {
        fs::metadata(&swap).is_ok_and(|m| m.len() >= 1024)
    });
    let f = expect(&swap, "vim-swap", Verdict::Live);
    assert_eq!(
        f.judgement.owner.as_ref().unwrap().pid,
        Some(vim.pid() as i64)
    );
    assert_eq!(
        f.judgement.flag(locksmith::verdict::Flag::UNSAVED_CHANGES),
        Some(false)
    );

    let mut stdin = vim.child.stdin.take().unwrap();
    stdin
        .write_all(b"normal Ounsaved line\npreserve\n")
        .unwrap();
    stdin.flush().unwrap();
    wait_until("the dirty flag", || {
        judge(&swap)
            .judgement
            .flag(locksmith::verdict::Flag::UNSAVED_CHANGES)
            == Some(true)
    });
    vim.kill();
    drop(stdin);
    let f = expect(&swap, "vim-swap", Verdict::Stale);
    assert_eq!(
        f.judgement.flag(locksmith::verdict::Flag::UNSAVED_CHANGES),
        Some(true)
    );
    assert_evidence(&f, "vim -r");
}

// ---------------------------------------------------------------------------------------------
// emacs

#[test]
fn emacs_fixture_parses_to_its_owner() {
    let dir = tempdir();
    let path = link(
        &dir.path().join(".#draft.txt"),
        &fixture_text("emacs/link-target.txt"),
    );
    let f = judge(&path);
    assert_eq!(f.dialect, "emacs");
    assert_eq!(f.kind, EntryKind::Symlink);
    let owner = f.judgement.owner.unwrap();
    assert_eq!(owner.user.as_deref(), Some("root"));
    assert_eq!(owner.hostname.as_deref(), Some("vm"));
    assert_eq!(owner.pid, Some(14485));
}

#[test]
fn emacs_verdicts_follow_pid_host_and_boot() {
    let dir = tempdir();
    let tmp = dir.path();
    let host = hostname();
    let boot = HostFacts::probe().boot_time.unwrap();

    let dead = dead_pid();
    let f = expect(
        &link(&tmp.join(".#a"), &format!("root@{host}.{dead}")),
        "emacs",
        Verdict::Stale,
    );
    assert_evidence(&f, "ESRCH");

    let emacs = named_sleeper(&tmp.join("bin"), "emacs", tmp);
    expect(
        &link(&tmp.join(".#b"), &format!("root@{host}.{}", emacs.pid())),
        "emacs",
        Verdict::Live,
    );
    // With Emacs's boot time: this boot matches.
    let f = expect(
        &link(
            &tmp.join(".#c"),
            &format!("root@{host}.{}:{boot}", emacs.pid()),
        ),
        "emacs",
        Verdict::Live,
    );
    assert_evidence(&f, "matches this boot");
    // Another boot and a dead PID: stale, saying so.
    let f = expect(
        &link(
            &tmp.join(".#d"),
            &format!("root@{host}.{dead}:{}", boot - 86_400),
        ),
        "emacs",
        Verdict::Stale,
    );
    assert_evidence(&f, "another boot");
    // The regular-file form.
    expect(
        &write(&tmp.join(".#e"), format!("root@{host}.{}", emacs.pid())),
        "emacs",
        Verdict::Live,
    );
    // Our own process is no emacs, alive since before the lock: not proven either way
    // (other editors write these links too).
    let f = expect(
        &link(
            &tmp.join(".#f"),
            &format!("root@{host}.{}", std::process::id()),
        ),
        "emacs",
        Verdict::Unknown,
    );
    assert_evidence(&f, "nothing proves the lock is not its");
    // Another host.
    expect(
        &link(
            &tmp.join(".#g"),
            &format!("root@elsewhere.example.{}", emacs.pid()),
        ),
        "emacs",
        Verdict::Foreign,
    );
    for (i, bad) in BAD_PIDS.iter().enumerate() {
        let path = link(
            &tmp.join(format!(".#bad{i}")),
            &format!("root@{host}.{bad}"),
        );
        expect(&path, "emacs", Verdict::Unknown);
    }
    expect(
        &link(&tmp.join(".#h"), "no owner here"),
        "emacs",
        Verdict::Unknown,
    );
}

#[test]
fn emacs_on_a_network_fs_with_another_boot_is_foreign() {
    let dir = tempdir();
    let host = hostname();
    let boot = HostFacts::probe().boot_time.unwrap();
    let path = link(
        &dir.path().join(".#shared.txt"),
        &format!("root@{host}.{}:{}", dead_pid(), boot - 86_400),
    );
    let j = judge_on_nfs(&path, "emacs");
    assert_eq!(j.verdict(), Verdict::Foreign, "{j:#?}");
}

#[test]
fn emacs_real_batch_emacs_is_live_then_stale() {
    if !require("emacs") {
        return;
    }
    let dir = tempdir();
    write(&dir.path().join("draft.txt"), "hello\n");
    let mut emacs = Group::spawn(
        Command::new("emacs")
            .args([
                "--batch",
                "-Q",
                "--eval",
                "(progn (find-file \"draft.txt\") (insert \"x\") (sleep-for 600))",
            ])
            .current_dir(dir.path())
            .env("HOME", dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    );
    let lock = dir.path().join(".#draft.txt");
    wait_until("the emacs lock", || fs::symlink_metadata(&lock).is_ok());
    let f = expect(&lock, "emacs", Verdict::Live);
    assert_eq!(f.judgement.owner.unwrap().pid, Some(emacs.pid() as i64));
    // Named on the command line: the link, which leads nowhere, is the lock itself.
    let env = Env::new();
    let named = |want: &str| {
        let out = env
            .cmd(["--scan".as_ref(), "--json".as_ref(), lock.as_os_str()])
            .output();
        let report = parse_report(&out.unwrap());
        let found = report.expect_lock(&lock);
        assert_eq!(
            (found.dialect.as_str(), found.verdict.as_str()),
            ("emacs", want)
        );
    };
    named("live");
    emacs.kill();
    let f = expect(&lock, "emacs", Verdict::Stale);
    assert_evidence(&f, "ESRCH");
    named("stale");
}

// ---------------------------------------------------------------------------------------------
// libreoffice

/// One test: whether an office process runs is a host-wide fact ([`Fact::Office`]), held
/// absent for the cases that need none.
#[test]
fn libreoffice_fixture_and_verdicts() {
    let dir = tempdir();
    let tmp = dir.path();
    let host = hostname();
    let record = fixture_text("libreoffice/lock-record.txt");

    let f = judge(&write(&tmp.join(".~lock.report.txt#"), &record));
    assert_eq!(f.dialect, "libreoffice");
    let owner = f.judgement.owner.unwrap();
    assert_eq!(owner.hostname.as_deref(), Some("vm"));
    assert_eq!(owner.user.as_deref(), Some("root"));
    // The record's time is the writer's local time, zone unknown: shown as written, never
    // turned into an instant.
    assert_eq!(owner.created_at, None);
    let detail = owner.detail.unwrap();
    assert!(
        detail.contains("report.txt") && detail.contains("29.11.2026 23:47"),
        "{detail}"
    );

    // Written now, by this host, in this machine's local time (as LibreOffice writes it).
    let written_now = jiff::ZonedDateTime::now()
        .strftime("%d.%m.%Y %H:%M")
        .to_string();
    let ours = record.replacen(",vm,", &format!(",{host},"), 1).replacen(
        "29.11.2026 23:47",
        &written_now,
        1,
    );
    assert_ne!(ours, record);
    let doc = write(&tmp.join("report.odt"), "document");
    let lock = write(&tmp.join(".~lock.report.odt#"), &ours);

    // Another host: cannot be checked here.
    let other = write(
        &tmp.join(".~lock.other.odt#"),
        record.replacen(",vm,", ",elsewhere.example,", 1),
    );
    expect(&other, "libreoffice", Verdict::Foreign);

    // Judged as written a minute ago, in this boot (old enough for the writer's shortest
    // hold; the record's time, local and with minutes only, is never compared).
    {
        let _no_office = quiet::absent(Fact::Office);
        if quiet::none_running(Fact::Office) {
            let f = judge_a_minute_old(&lock);
            assert_eq!(f.judgement.verdict(), Verdict::Stale, "{:#?}", f.judgement);
            assert_evidence(&f, "no office (soffice) process runs on this host");
            assert_eq!(f.judgement.proofs()[0].rule, locksmith::Rule::WriterAbsent);
            let j = judge_on_nfs(&lock, "libreoffice");
            assert_eq!(j.verdict(), Verdict::Foreign, "{j:#?}");
        }
    }

    // An office process that has the document open: live, and it is a holder.
    let bin = tmp.join("bin");
    let office = spawn_as(&bin, "soffice.bin", "tail", &["-f", "report.odt"], tmp);
    let key = FileKey::of(&fs::metadata(&doc).unwrap());
    let pid = office.pid();
    wait_until("soffice.bin to open the document", || {
        snapshot().openers(key).iter().any(|h| h.pid == pid)
    });
    let f = expect(&lock, "libreoffice", Verdict::Live);
    assert!(
        f.judgement
            .holders
            .iter()
            .any(|h| h.pid == office.pid() && h.how == HolderHow::Open),
        "{:#?}",
        f.judgement
    );
    drop(office);

    // One running without the document open may still have it loaded: live. (A sleep of
    // its own: `bin/soffice.bin` is the `tail` above.)
    let office = named_sleeper(&tmp.join("sleeper-bin"), "soffice.bin", tmp);
    let f = expect(&lock, "libreoffice", Verdict::Live);
    assert_evidence(&f, &office.pid().to_string());
    drop(office);

    for (i, bad) in [
        "",
        "garbage",
        ",,,,",
        "a,b;",
        "\x1b[2J,u,h,01.01.2024 10:00,x",
    ]
    .iter()
    .enumerate()
    {
        let path = write(&tmp.join(format!(".~lock.bad{i}#")), bad);
        expect(&path, "libreoffice", Verdict::Unknown);
    }
}

// ---------------------------------------------------------------------------------------------
// postgres

/// The fixture with its PID, data directory and start time replaced.
fn postmaster_with(pid: i64, data_dir: &Path, start_epoch: i64) -> String {
    let text = fixture_text("postgres/postmaster-pid.txt");
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    lines[0] = pid.to_string();
    lines[1] = data_dir.display().to_string();
    lines[2] = start_epoch.to_string();
    lines.join("\n") + "\n"
}

#[test]
fn postgres_fixture_parses_to_its_owner() {
    let dir = tempdir();
    let f = judge(&write(
        &dir.path().join("postmaster.pid"),
        fixture("postgres/postmaster-pid.txt"),
    ));
    assert_eq!(f.dialect, "postgres");
    let owner = f.judgement.owner.clone().unwrap();
    assert_eq!(owner.pid, Some(14928));
    let detail = owner.detail.unwrap();
    assert!(detail.contains("/tmp/fx/pg/data"), "{detail}");
    assert!(detail.contains("port 54329"), "{detail}");
    assert!(detail.contains("status ready"), "{detail}");
    assert!(owner.created_at.unwrap().starts_with("2026-"));
    // Recorded for another data directory than where it lies, with a PID we cannot place.
    assert_eq!(
        f.judgement.verdict(),
        Verdict::Foreign,
        "{:#?}",
        f.judgement
    );
}

#[test]
fn postgres_verdicts() {
    let dir = tempdir();
    let data = dir.path().join("data");
    fs::create_dir_all(&data).unwrap();
    let pidfile = data.join("postmaster.pid");
    let now = now_ms() / 1000;

    write(&pidfile, postmaster_with(dead_pid() as i64, &data, now));
    let f = expect(&pidfile, "postgres", Verdict::Stale);
    assert_evidence(&f, "ESRCH");

    // The PID is alive, since before the server recorded its start, but is no postgres: a
    // name proves nothing either way.
    write(
        &pidfile,
        postmaster_with(std::process::id() as i64, &data, now),
    );
    let f = expect(&pidfile, "postgres", Verdict::Unknown);
    assert_evidence(&f, "nothing proves the lock is not its");

    // The Docker trap: the PID now belongs to a process that started after the server
    // recorded its start: reused (on a clock known steady, the host up for an hour).
    let later = crate::util::sleeper();
    write(
        &pidfile,
        postmaster_with(later.pid() as i64, &data, now - 10),
    );
    let f = judge_changed(&pidfile, |ev| {
        steady(ev);
        up_for_at_least(ev, 3600);
    });
    assert_eq!(f.judgement.verdict(), Verdict::Stale, "{:#?}", f.judgement);
    assert_evidence(&f, "was reused");
    assert_eq!(f.judgement.proofs()[0].rule, locksmith::Rule::PidReused);
    // On a clock that may have stepped forward by more than that since the boot began, the
    // later start proves nothing: the process may be the server itself.
    let f = judge_changed(&pidfile, |ev| {
        up_for_at_least(ev, 3600);
        ev.clock = Some(stepped_by_an_hour());
    });
    assert_eq!(
        f.judgement.verdict(),
        Verdict::Unknown,
        "{:#?}",
        f.judgement
    );
    assert_evidence(&f, "that it started later proves nothing");

    // A postgres running in this data directory: live.
    let bin = dir.path().join("bin");
    let pg = named_sleeper(&bin, "postgres", &data);
    write(
        &pidfile,
        postmaster_with(pg.pid() as i64, &data, now_ms() / 1000),
    );
    let f = expect(&pidfile, "postgres", Verdict::Live);
    assert_evidence(&f, "run in this data directory");
    assert_eq!(f.judgement.process.unwrap().pid, pg.pid());

    // Even when the file names another PID (the server seen from another PID namespace).
    write(&pidfile, postmaster_with(1, &data, now));
    expect(&pidfile, "postgres", Verdict::Live);
    drop(pg);

    // A postgres serving another directory is not this server.
    let other = dir.path().join("other");
    fs::create_dir_all(&other).unwrap();
    let pg = named_sleeper(&bin, "postgres", &other);
    write(
        &pidfile,
        postmaster_with(pg.pid() as i64, &data, now_ms() / 1000),
    );
    let f = expect(&pidfile, "postgres", Verdict::Unknown);
    assert_evidence(&f, "not in the application's directory");
    drop(pg);

    // Written in another mount namespace (a container's volume seen from the host).
    write(
        &pidfile,
        postmaster_with(
            dead_pid() as i64,
            Path::new("/var/lib/postgresql/data"),
            now,
        ),
    );
    let f = expect(&pidfile, "postgres", Verdict::Foreign);
    assert_evidence(&f, "another mount namespace");

    for bad in BAD_PIDS.iter().filter(|b| **b != "-1") {
        let text = postmaster_with(0, &data, now).replacen("0\n", &format!("{bad}\n"), 1);
        write(&pidfile, text);
        expect(&pidfile, "postgres", Verdict::Unknown);
    }
    write(&pidfile, "12345\n");
    expect(&pidfile, "postgres", Verdict::Unknown);
}

// ---------------------------------------------------------------------------------------------
// chromium

#[test]
fn chromium_fixture_and_verdicts() {
    let dir = tempdir();
    let tmp = dir.path();
    let host = hostname();
    let f = judge(&link(
        &tmp.join("fixture/SingletonLock"),
        &fixture_text("chromium/singletonlock-target.txt"),
    ));
    assert_eq!(f.dialect, "chromium");
    let owner = f.judgement.owner.unwrap();
    assert_eq!(owner.hostname.as_deref(), Some("vm"));
    assert_eq!(owner.pid, Some(16150));

    let f = expect(
        &link(
            &tmp.join("a/SingletonLock"),
            &format!("{host}-{}", dead_pid()),
        ),
        "chromium",
        Verdict::Stale,
    );
    assert_evidence(&f, "ESRCH");

    let chromium = named_sleeper(&tmp.join("bin"), "chromium", tmp);
    expect(
        &link(
            &tmp.join("b/SingletonLock"),
            &format!("{host}-{}", chromium.pid()),
        ),
        "chromium",
        Verdict::Live,
    );
    expect(
        &link(
            &tmp.join("c/SingletonLock"),
            &format!("other-host.example-{}", chromium.pid()),
        ),
        "chromium",
        Verdict::Foreign,
    );

    // Our own process is not a browser: stale while it has nothing of the profile open,
    // live (an Electron app, say) while it does.
    let profile = tmp.join("d");
    let lock = link(
        &profile.join("SingletonLock"),
        &format!("{host}-{}", std::process::id()),
    );
    let f = expect(&lock, "chromium", Verdict::Unknown);
    assert_evidence(&f, "nothing proves the lock is not its");
    let open = fs::File::create(profile.join("Local State")).unwrap();
    let f = expect(&lock, "chromium", Verdict::Live);
    assert_evidence(&f, "has files in this profile open");
    drop(open);

    for (i, bad) in BAD_PIDS.iter().enumerate() {
        let path = link(
            &tmp.join(format!("bad{i}/SingletonLock")),
            &format!("{host}-{bad}"),
        );
        // Chromium splits at the last '-': `HOST--1` names host `HOST-` and PID 1.
        let verdict = if *bad == "-1" {
            Verdict::Foreign
        } else {
            Verdict::Unknown
        };
        expect(&path, "chromium", verdict);
    }
    expect(
        &write(&tmp.join("e/SingletonLock"), "not a link"),
        "chromium",
        Verdict::Unknown,
    );
}

#[test]
fn chromium_real_browser_is_live_then_stale() {
    if !require("chromium") {
        return;
    }
    let dir = tempdir();
    let profile = dir.path().join("profile");
    let mut browser = Group::spawn(
        Command::new("chromium")
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
            ])
            .arg(format!("--user-data-dir={}", profile.display()))
            .args(["--remote-debugging-port=0", "about:blank"])
            .env("HOME", dir.path())
            // Its SingletonSocket directory goes to TMPDIR: keep it in ours.
            .env("TMPDIR", dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    );
    let lock = profile.join("SingletonLock");
    wait_until("SingletonLock", || fs::symlink_metadata(&lock).is_ok());
    let f = expect(&lock, "chromium", Verdict::Live);
    let pid = f.judgement.owner.unwrap().pid.unwrap();
    browser.kill();
    // The browser may be a child of the wrapper script: wait until it is gone too.
    wait_until("the browser to exit", || {
        judge(&lock).judgement.verdict() == Verdict::Stale
    });
    let f = expect(&lock, "chromium", Verdict::Stale);
    assert_eq!(f.judgement.owner.clone().unwrap().pid, Some(pid));
    assert_evidence(&f, "ESRCH");
}

// ---------------------------------------------------------------------------------------------
// firefox

fn profile_with(dir: &Path, target: &str, parentlock: bool) -> PathBuf {
    // A profile directory, as Firefox creates it.
    write(&dir.join("times.json"), "{\"created\":1764460800000}");
    if parentlock {
        write(&dir.join(".parentlock"), fixture("firefox/parentlock.bin"));
    }
    link(&dir.join("lock"), target)
}

#[test]
fn firefox_fixture_and_verdicts() {
    let dir = tempdir();
    let tmp = dir.path();

    // The captured profile after a crash: the link stays, nobody holds .parentlock.
    let lock = profile_with(
        &tmp.join("fx"),
        &fixture_text("firefox/lock-target.txt"),
        true,
    );
    let f = expect(&lock, "firefox", Verdict::Stale);
    let owner = f.judgement.owner.clone().unwrap();
    assert_eq!(owner.pid, Some(19991));
    assert!(owner.detail.unwrap().contains("127.0.0.1"));
    assert_evidence(&f, ".parentlock");
    let parent = tmp.join("fx/.parentlock");
    let f = expect(&parent, "firefox", Verdict::Free);
    assert!(f.judgement.holders.is_empty());

    // Held: both are live, the kernel lock says who.
    let holder = hold_flock(&parent);
    let f = expect(&parent, "firefox", Verdict::Live);
    assert_eq!(f.judgement.holders[0].pid, holder.pid());
    let f = expect(&lock, "firefox", Verdict::Live);
    assert_eq!(f.judgement.holders[0].pid, holder.pid());
    drop(holder);

    // No .parentlock: the PID decides.
    let f = expect(
        &profile_with(&tmp.join("a"), &format!("127.0.1.1:+{}", dead_pid()), false),
        "firefox",
        Verdict::Stale,
    );
    assert_evidence(&f, "ESRCH");
    let firefox = named_sleeper(&tmp.join("bin"), "firefox-esr", tmp);
    expect(
        &profile_with(
            &tmp.join("b"),
            &format!("127.0.1.1:+{}", firefox.pid()),
            false,
        ),
        "firefox",
        Verdict::Live,
    );
    let f = expect(
        &profile_with(
            &tmp.join("c"),
            &format!("10.0.0.7:{}", std::process::id()),
            false,
        ),
        "firefox",
        Verdict::Unknown,
    );
    assert_evidence(&f, "nothing proves the lock is not its");

    for (i, bad) in BAD_PIDS.iter().enumerate() {
        let path = profile_with(
            &tmp.join(format!("bad{i}")),
            &format!("127.0.0.1:+{bad}"),
            false,
        );
        expect(&path, "firefox", Verdict::Unknown);
    }

    // On a network file system, an unlocked .parentlock proves nothing about other machines.
    let nfs = profile_with(&tmp.join("nfs"), &format!("10.0.0.7:+{}", dead_pid()), true);
    let j = judge_on_nfs(&nfs, "firefox");
    assert_eq!(j.verdict(), Verdict::Foreign, "{j:#?}");
}

#[test]
fn firefox_real_browser_is_live_then_stale() {
    let Some(program) = ["firefox-esr", "firefox"]
        .into_iter()
        .find(|p| which(p).is_some())
    else {
        return skip("`firefox-esr` is not installed (.ci/run installs it)");
    };
    let dir = tempdir();
    let profile = dir.path().join("profile");
    fs::create_dir_all(&profile).unwrap();
    let mut browser = Group::spawn(
        Command::new(program)
            .args(["--headless", "--no-remote", "--profile"])
            .arg(&profile)
            .arg("about:blank")
            .env("HOME", dir.path())
            .env("TMPDIR", dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    );
    let lock = profile.join("lock");
    let parent = profile.join(".parentlock");
    wait_within(90, "the profile lock", || {
        (fs::symlink_metadata(&lock).is_ok()
            && fs::metadata(&parent).is_ok_and(|m| snapshot().kernel_locked(FileKey::of(&m))))
        .then_some(())
    });
    let f = expect(&lock, "firefox", Verdict::Live);
    let pid = f.judgement.owner.unwrap().pid.unwrap();
    assert!(f.judgement.holders.iter().any(|h| h.pid as i64 == pid));
    expect(&parent, "firefox", Verdict::Live);

    browser.kill();
    wait_until("firefox to exit", || {
        judge(&parent).judgement.verdict() == Verdict::Free
    });
    let f = expect(&lock, "firefox", Verdict::Stale);
    assert_evidence(&f, "fcntl lock");
}

// ---------------------------------------------------------------------------------------------
// terraform

/// The fixture written by `who`, created now (the fixture's own time is long past).
fn lock_info_for(who: &str) -> String {
    let text = fixture_text("terraform/lock-info.json");
    let now = jiff::Timestamp::now().to_string();
    let out = text
        .replacen("\"Who\":\"root@vm\"", &format!("\"Who\":\"{who}\""), 1)
        .replacen(
            "\"Created\":\"2026-11-29T23:44:26.945849266Z\"",
            &format!("\"Created\":\"{now}\""),
            1,
        );
    assert!(out.contains(&now), "the fixture's Created field moved");
    out
}

#[test]
fn terraform_fixture_and_verdicts() {
    let dir = tempdir();
    let tmp = dir.path();
    let host = hostname();

    let f = judge(&write(
        &tmp.join("fixture/.terraform.tfstate.lock.info"),
        fixture("terraform/lock-info.json"),
    ));
    assert_eq!(f.dialect, "terraform");
    let owner = f.judgement.owner.unwrap();
    assert_eq!(owner.user.as_deref(), Some("root"));
    assert_eq!(owner.hostname.as_deref(), Some("vm"));
    assert!(owner.created_at.unwrap().starts_with("2026-11-29T23:44:26"));
    let detail = owner.detail.unwrap();
    assert!(
        detail.contains("OperationTypeApply") && detail.contains("1.11.4"),
        "{detail}"
    );

    let ws = tmp.join("ws");
    let state = write(&ws.join("terraform.tfstate"), "{}");
    let info = write(
        &ws.join(".terraform.tfstate.lock.info"),
        lock_info_for(&format!("root@{host}")),
    );
    let f = expect(&info, "terraform", Verdict::Stale);
    assert_evidence(&f, "no process holds a kernel lock");

    let holder = hold_flock(&state);
    let f = expect(&info, "terraform", Verdict::Live);
    assert_eq!(f.judgement.holders[0].pid, holder.pid());
    drop(holder);

    let j = judge_on_nfs(&info, "terraform");
    assert_eq!(j.verdict(), Verdict::Foreign, "{j:#?}");

    write(&info, lock_info_for("ci@build-7.example"));
    expect(&info, "terraform", Verdict::Foreign);

    // A workspace state named otherwise, and gone.
    let gone = write(
        &ws.join(".prod.tfstate.lock.info"),
        lock_info_for(&format!("root@{host}")),
    );
    let f = expect(&gone, "terraform", Verdict::Stale);
    assert_evidence(&f, "does not exist");

    for (i, bad) in ["", "garbage", "{\"ID\": 5}", "[1,2]", "1; rm -rf /"]
        .iter()
        .enumerate()
    {
        let path = write(
            &tmp.join(format!("bad{i}/.terraform.tfstate.lock.info")),
            bad,
        );
        expect(&path, "terraform", Verdict::Unknown);
    }
}

#[test]
fn terraform_real_apply_is_live_then_stale() {
    if which("terraform").is_none() {
        // Not a Debian package, and no package registry CI reaches ships its binary: CI has
        // it only where the machine comes with it.
        return crate::util::skip_even_under_ci(
            "`terraform` is not installed (no registry .ci/run reaches ships it)",
        );
    }
    let dir = tempdir();
    let ws = dir.path();
    write(
        &ws.join("main.tf"),
        "resource \"terraform_data\" \"stamp\" {\n  input = timestamp()\n}\n",
    );
    write(&ws.join("home/.terraformrc"), "");
    let env = |c: &mut Command| {
        c.current_dir(ws)
            .env("HOME", ws.join("home"))
            .env("TF_IN_AUTOMATION", "1")
            .env("CHECKPOINT_DISABLE", "1")
            .stdout(Stdio::null())
            .stderr(Stdio::null());
    };
    let mut init = Command::new("terraform");
    init.args(["init", "-input=false", "-no-color"]);
    env(&mut init);
    let mut init = Group::spawn(init.stdin(Stdio::null()));
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        if let Some(status) = init.child.try_wait().unwrap() {
            assert!(status.success(), "terraform init failed");
            break;
        }
        assert!(Instant::now() < deadline, "terraform init timed out");
        std::thread::sleep(Duration::from_millis(50));
    }
    // `apply` waits at its confirmation prompt, holding the state lock, while we keep its
    // stdin open.
    let mut apply = Command::new("terraform");
    apply.args(["apply", "-no-color"]);
    env(&mut apply);
    let mut apply = Group::spawn(apply.stdin(Stdio::piped()));
    let info = ws.join(".terraform.tfstate.lock.info");
    let state = ws.join("terraform.tfstate");
    wait_until("the state lock", || {
        info.exists()
            && fs::metadata(&state).is_ok_and(|m| snapshot().kernel_locked(FileKey::of(&m)))
    });
    let f = expect(&info, "terraform", Verdict::Live);
    assert!(
        f.judgement
            .holders
            .iter()
            .any(|h| h.pid == apply.pid() && h.how == HolderHow::Posix),
        "{:#?}",
        f.judgement
    );
    apply.kill();
    let f = expect(&info, "terraform", Verdict::Stale);
    assert_evidence(&f, "terraform.tfstate");
}

// ---------------------------------------------------------------------------------------------
// git

/// A repository laid out as `git init` makes it, as far as git itself asks of a git
/// directory (`HEAD`, `objects/`, `refs/`): `repo/.git/{HEAD,objects,refs/heads}` and a
/// work-tree subdirectory.
fn fake_repo(root: &Path) -> PathBuf {
    let repo = root.join("repo");
    write(&repo.join(".git/HEAD"), "ref: refs/heads/main\n");
    fs::create_dir_all(repo.join(".git/objects")).unwrap();
    fs::create_dir_all(repo.join(".git/refs/heads")).unwrap();
    fs::create_dir_all(repo.join("src")).unwrap();
    repo
}

/// Judges `lock` as written a minute before the evidence was taken, in this boot (the host up
/// an hour longer), whatever this machine's clock and boot: old enough for git's shortest
/// hold, too young for any earlier boot.
fn judge_a_minute_old(lock: &Path) -> Finding {
    judge_changed(lock, |ev| written_ago_this_boot(ev, lock, 60))
}

/// [`judge_a_minute_old`], checking the dialect and the verdict.
fn expect_a_minute_old(lock: &Path, dialect: &str, verdict: Verdict) -> Finding {
    let f = judge_a_minute_old(lock);
    assert_eq!(f.dialect, dialect, "{}: {:#?}", lock.display(), f.judgement);
    assert_eq!(
        f.judgement.verdict(),
        verdict,
        "{}: {:#?}",
        lock.display(),
        f.judgement
    );
    f
}

#[test]
fn git_fixtures_and_verdicts_without_a_git_process() {
    let dir = tempdir();
    let repo = fake_repo(dir.path());

    let index = write(
        &repo.join(".git/index.lock"),
        fixture("git/index-lock-commit-editor.bin"),
    );
    // Just made, and no process list read since it was seen: git may be starting (the
    // first census may predate it).
    let f = judge_changed(&index, |ev| {
        written_ago_this_boot(ev, &index, 0);
        ev.late_census.values_mut().for_each(|c| *c = None);
    });
    assert_eq!(
        f.judgement.verdict(),
        Verdict::Unknown,
        "{:#?}",
        f.judgement
    );
    assert_evidence(&f, "just starting");
    // Just made, and no git process in a census taken after it was seen: whoever made it
    // is gone, however young it is.
    let f = judge_changed(&index, |ev| written_ago_this_boot(ev, &index, 0));
    assert_eq!(f.judgement.verdict(), Verdict::Stale, "{:#?}", f.judgement);
    assert!(
        f.judgement.proofs()[0].facts.get("census_after_seen") == Some(&true.into()),
        "{:#?}",
        f.judgement.proofs()
    );
    let f = expect_a_minute_old(&index, "git", Verdict::Stale);
    assert_evidence(&f, "no git process works in");
    assert_evidence(&f, "no process has the lock or a file of");
    assert_evidence(&f, "in the git directory");
    assert!(
        f.judgement.owner.unwrap().detail.unwrap().contains("index"),
        "detail names what is written"
    );

    let reflock = write(
        &repo.join(".git/refs/heads/main.lock"),
        fixture("git/ref-lock-main.txt"),
    );
    let f = expect_a_minute_old(&reflock, "git", Verdict::Stale);
    assert!(
        f.judgement
            .owner
            .unwrap()
            .detail
            .unwrap()
            .contains("ref value")
    );

    // An empty lock under .git is git's, not a free flock file.
    let head = write(
        &repo.join(".git/HEAD.lock"),
        fixture("git/head-lock-empty.txt"),
    );
    expect_a_minute_old(&head, "git", Verdict::Stale);
    let packed = write(&repo.join(".git/packed-refs.lock"), "");
    expect_a_minute_old(&packed, "git", Verdict::Stale);

    // Open in a process: live, whatever its age.
    let open = fs::File::open(&index).unwrap();
    let f = judge_a_minute_old(&index);
    assert_eq!(f.judgement.verdict(), Verdict::Live, "{:#?}", f.judgement);
    assert_open_here(&f);
    drop(open);

    // A network file system: a git on another machine may hold it.
    let j = judge_on_nfs(&index, "git");
    assert_eq!(j.verdict(), Verdict::Foreign, "{j:#?}");

    // Named as git names its locks, but not in a git directory (no `objects/`, which git asks
    // for before it takes a directory for one): git's condition is not checked of it.
    let lookalike = dir.path().join("lookalike");
    write(&lookalike.join(".git/HEAD"), "ref: refs/heads/main\n");
    fs::create_dir_all(lookalike.join(".git/refs/heads")).unwrap();
    let index = write(
        &lookalike.join(".git/index.lock"),
        fixture("git/index-lock-commit-editor.bin"),
    );
    let f = judge_a_minute_old(&index);
    assert_ne!(f.judgement.verdict(), Verdict::Stale, "{:#?}", f.judgement);
    assert_evidence(&f, "is no git directory");
}

#[test]
fn git_pid_files() {
    let dir = tempdir();
    let repo = fake_repo(dir.path());
    let pid_text = fixture_text("git/pid-lock.txt");
    assert_eq!(pid_text, "pid 99999");

    let lock = write(&repo.join(".git/index.lock"), "");
    let pidfile = write(
        &repo.join(".git/index~pid.lock"),
        format!("pid {}", dead_pid()),
    );
    // The recorded owner is gone: stale at once, both files.
    let f = expect(&lock, "git", Verdict::Stale);
    assert_evidence(&f, "git recorded the lock's owner as PID");
    assert_evidence(&f, "ESRCH");
    expect(&pidfile, "git", Verdict::Stale);

    let git = named_sleeper(&dir.path().join("bin"), "git", dir.path());
    write(&pidfile, format!("pid {}", git.pid()));
    let f = expect(&lock, "git", Verdict::Live);
    assert_eq!(f.judgement.owner.unwrap().pid, Some(git.pid() as i64));

    for (i, bad) in BAD_PIDS.iter().enumerate() {
        let path = write(
            &repo.join(format!(".git/bad{i}~pid.lock")),
            format!("pid {bad}"),
        );
        // A PID that names no process proves nothing: unreadable, it is `unknown`; read, git's
        // own condition decides (no git process works in the repository).
        let f = judge(&path);
        assert_eq!(f.dialect, "git");
        match f.judgement.verdict() {
            Verdict::Unknown => assert_evidence(&f, "cannot read this as a git pid lock"),
            Verdict::Stale => {
                assert_eq!(f.judgement.proofs()[0].rule, locksmith::Rule::WriterAbsent)
            }
            v => panic!("{bad}: {v}: {:#?}", f.judgement),
        }
    }
    let f = expect(
        &write(&repo.join(".git/x~pid.lock"), &pid_text[4..]),
        "git",
        Verdict::Unknown,
    );
    assert_evidence(&f, "not \"pid N\"");
}

#[test]
fn git_process_in_the_repository_keeps_its_locks_live() {
    let dir = tempdir();
    let repo = fake_repo(dir.path());
    let bin = dir.path().join("bin");
    let index = write(
        &repo.join(".git/index.lock"),
        fixture("git/index-lock-commit-editor.bin"),
    );

    // A git whose working directory is inside the work tree.
    let git = named_sleeper(&bin, "git", &repo.join("src"));
    let f = expect_a_minute_old(&index, "git", Verdict::Live);
    assert_evidence(&f, &format!("{} (cwd", git.pid()));
    drop(git);

    // A git working elsewhere with GIT_DIR pointing here.
    let git = spawn_as_env(
        &bin,
        "git",
        "sleep",
        &["600"],
        dir.path(),
        &[("GIT_DIR", &repo.join(".git"))],
    );
    let f = expect_a_minute_old(&index, "git", Verdict::Live);
    assert_evidence(&f, "GIT_DIR");
    drop(git);

    // A git in another directory proves nothing: it is listed as checked.
    let git = named_sleeper(&bin, "git", dir.path());
    let f = expect_a_minute_old(&index, "git", Verdict::Stale);
    // Listed among the git processes checked (the list is cut after 8: other tests and other
    // programs on the machine may run git too).
    let all = evidence(&f);
    assert!(
        all.contains(&git.pid().to_string()) || all.contains(" more"),
        "{all}"
    );
}

/// A temp dir holding `repo`, a git repository with one commit; `None` (the test skips)
/// where git is not installed.
fn repo_with_a_commit() -> Option<(tempfile::TempDir, PathBuf)> {
    if !require("git") {
        return None;
    }
    let dir = tempdir();
    let repo = dir.path().join("repo");
    git_repo_with_a_commit(&repo, dir.path());
    Some((dir, repo))
}

#[test]
fn git_real_commit_waiting_in_its_editor_is_live_then_stale() {
    let Some((dir, repo)) = repo_with_a_commit() else {
        return;
    };
    write(&repo.join("a.txt"), "two\n");

    // `git commit -a` writes the new index to index.lock, then waits for the editor without
    // holding the lock open.
    let mut commit = Group::spawn(
        git(&repo, dir.path())
            .args(["commit", "-a"])
            // Run through the shell with the file name appended: comment it out.
            .env("GIT_EDITOR", "sleep 600 #")
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    );
    let index = repo.join(".git/index.lock");
    // Git has written the new index once its editor runs: only then may the lock be aged.
    wait_until("git to start its editor", || {
        crate::util::group_members(commit.pid())
            .iter()
            .any(|(_, comm)| comm == "sleep")
    });
    assert!(fs::metadata(&index).is_ok_and(|m| m.len() > 0));
    // Judged as written a minute before (git's editor may wait for hours): live while git
    // waits, stale once it is killed.
    let f = expect_a_minute_old(&index, "git", Verdict::Live);
    assert_evidence(&f, &format!("{} (cwd", commit.pid()));
    assert!(f.judgement.holders.is_empty(), "git does not hold it open");

    commit.kill();
    let f = expect_a_minute_old(&index, "git", Verdict::Stale);
    assert_evidence(&f, "no git process works in");
    assert_eq!(f.judgement.proofs()[0].rule, locksmith::Rule::WriterAbsent);
}

#[test]
fn git_in_a_linked_worktree_keeps_shared_locks_live() {
    let Some((dir, repo)) = repo_with_a_commit() else {
        return;
    };
    let wt = dir.path().join("wt");
    git_ok(
        &repo,
        dir.path(),
        &[
            "worktree",
            "add",
            "-q",
            wt.to_str().unwrap(),
            "-b",
            "feature",
        ],
    );

    let lock = write(&repo.join(".git/refs/heads/feature.lock"), "");
    expect_a_minute_old(&lock, "git", Verdict::Stale);
    let git = named_sleeper(&dir.path().join("bin"), "git", &wt);
    let f = expect_a_minute_old(&lock, "git", Verdict::Live);
    assert_evidence(&f, &git.pid().to_string());
}

// ---------------------------------------------------------------------------------------------
// mkdir-lock

/// The clue `pgrep -af` gives: a running script that names the lock directory in its command
/// line, or works in it, is said in the evidence; it proves nothing, so the lock stays
/// `unknown` (and stale only by a rule, as before).
#[test]
fn a_process_naming_a_mkdir_lock_is_said_and_proves_nothing() {
    let dir = tempdir();
    let lock = dir.path().join("backup.lock");
    fs::create_dir(&lock).unwrap();
    let script = dir.path().join("backup.sh");
    write(&script, "#!/bin/sh\nmkdir \"$1\" 2>/dev/null; sleep 600\n");
    fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let named = crate::util::Group::spawn(
        std::process::Command::new(&script)
            .arg(&lock)
            .stdin(std::process::Stdio::null()),
    );
    let f = crate::util::wait_for("the script to run", || {
        let f = expect(&lock, "mkdir-lock", Verdict::Unknown);
        f.judgement
            .evidence
            .iter()
            .any(|e| e.contains(&format!("process {} ", named.pid())))
            .then_some(f)
    });
    assert_evidence(
        &f,
        &format!(
            "process {} (backup.sh) names this directory in its command line",
            named.pid()
        ),
    );
    assert_evidence(&f, "nothing here proves or rules out");
    assert!(f.judgement.proofs().is_empty());
    drop(named);
    // A shell working in it.
    let shell = crate::util::Group::spawn(
        std::process::Command::new("sleep")
            .arg("600")
            .current_dir(&lock)
            .stdin(std::process::Stdio::null()),
    );
    let f = expect(&lock, "mkdir-lock", Verdict::Unknown);
    assert_evidence(
        &f,
        &format!("process {} (sleep) works in this directory", shell.pid()),
    );
    drop(shell);
    let f = expect(&lock, "mkdir-lock", Verdict::Unknown);
    assert!(
        !f.judgement
            .evidence
            .iter()
            .any(|e| e.contains("names this directory") || e.contains("works in this directory")),
        "{:?}",
        f.judgement.evidence
    );
}

#[test]
fn mkdir_lock_age_proves_nothing_without_a_promise_to_refresh() {
    let dir = tempdir();
    let lock = dir.path().join("job.lock");
    fs::create_dir(&lock).unwrap();
    // A shell script's `mkdir job.lock || exit`: it never refreshes its lock and may hold it
    // for hours. Fresh or old, its age proves nothing (judged as written that long ago in
    // this boot, on a clock known steady).
    let expect_dir = |f: Finding, verdict: Verdict| {
        assert_eq!(f.dialect, "mkdir-lock");
        assert_eq!(f.judgement.verdict(), verdict, "{:#?}", f.judgement);
        f
    };
    for age_s in [0, 60, 400, 50 * 60] {
        let f = judge_changed(&lock, |ev| {
            steady(ev);
            written_ago_this_boot(ev, &lock, age_s);
        });
        let f = expect_dir(f, Verdict::Unknown);
        assert_evidence(&f, "its age proves nothing");
    }
    // Written before this boot, on a local file system: every process of that boot is gone.
    let f = judge_changed(&lock, |ev| {
        steady(ev);
        up_for_at_least(ev, 3600);
        written_before_boot(ev, &lock, 3600);
    });
    let f = expect_dir(f, Verdict::Stale);
    assert_eq!(f.judgement.proofs()[0].rule, locksmith::Rule::EarlierBoot);
    // Its mtime set back to before this boot (`touch -d`: anyone who may write it can) proves
    // nothing: the kernel's ctime says it changed after the boot. Judged with a host booted
    // an hour ago on a clock known steady, the file's times as this machine has them.
    set_mtime_ms(&lock, now_ms() - 2 * 3600 * 1000);
    let f = judge_changed(&lock, |ev| {
        steady(ev);
        booted_ago(ev, 3600);
    });
    let f = expect_dir(f, Verdict::Unknown);
    assert!(
        !evidence(&f).contains("before this host booted"),
        "{:#?}",
        f.judgement
    );

    // `mkdir $L && echo $$ > $L/pid`: the record inside names the owner.
    let script = crate::util::sleeper();
    write(&lock.join("pid"), format!("{}\n", script.pid()));
    let f = expect(&lock, "mkdir-lock", Verdict::Live);
    assert_eq!(f.judgement.owner.unwrap().pid, Some(script.pid() as i64));
    write(&lock.join("pid"), format!("{}\n", dead_pid()));
    let f = expect(&lock, "mkdir-lock", Verdict::Stale);
    assert_evidence(&f, "the record pid inside");
    assert_eq!(f.judgement.proofs()[0].rule, locksmith::Rule::PidGone);
    fs::remove_file(lock.join("pid")).unwrap();

    // Held with flock (open and locked): live whatever its age (ten minutes).
    let holder = hold_flock(&lock);
    let f = judge_changed(&lock, |ev| {
        steady(ev);
        written_ago_this_boot(ev, &lock, 600);
    });
    let f = expect_dir(f, Verdict::Live);
    assert_eq!(f.judgement.holders[0].pid, holder.pid());
    drop(holder);

    // A directory named like a lock that holds more than a record (package metadata) is no
    // lock directory.
    let meta = dir.path().join("deps.lock");
    fs::create_dir_all(meta.join("registry")).unwrap();
    write(&meta.join("index.json"), "{}");
    let snap = snapshot();
    assert!(
        try_judge(&meta, &snap, &Settings::embedded().scan)
            .unwrap()
            .is_none(),
        "a metadata directory was taken for a lock"
    );
    // A directory not named like a lock is no lock.
    let plain = dir.path().join("data");
    fs::create_dir(&plain).unwrap();
    let snap = snapshot();
    assert!(
        try_judge(&plain, &snap, &Settings::embedded().scan)
            .unwrap()
            .is_none()
    );
}

/// A writer that promises to refresh its lock directory (proper-lockfile's `update`) is
/// declared with its window: then, and only then, the age is proof.
#[test]
fn a_declared_refresh_window_makes_an_old_lock_directory_stale() {
    let dir = tempdir();
    let config_path = write(
        &dir.path().join("config.json"),
        r#"{"dialects": [{"name": "app-locks", "patterns": ["**/app-data/*.lock"],
            "format": "existence", "programs": ["node"], "stale_after_secs": 20}]}"#,
    );
    let config = RawConfig::load_layers(None, Some(&config_path))
        .and_then(RawConfig::validate)
        .unwrap()
        .scan;
    let lock = dir.path().join("app-data").join("db.json.lock");
    fs::create_dir_all(&lock).unwrap();
    // Judged as refreshed `secs` ago, in this boot, on a clock known steady.
    let judge = |secs: i64| {
        judge_changed_with(&lock, &config, |ev| {
            steady(ev);
            written_ago_this_boot(ev, &lock, secs);
        })
    };
    // Refreshed within its window: nothing proven either way.
    let f = judge(10);
    assert_eq!(f.dialect, "app-locks");
    assert_eq!(
        f.judgement.verdict(),
        Verdict::Unknown,
        "{:#?}",
        f.judgement
    );
    assert_evidence(&f, "within its writer's 20 s window");
    // Past it, with nobody holding it: its writer would have refreshed it.
    let f = judge(60);
    assert_eq!(f.judgement.verdict(), Verdict::Stale, "{:#?}", f.judgement);
    assert_eq!(
        f.judgement.proofs()[0].rule,
        locksmith::Rule::HeartbeatExpired
    );
    assert_evidence(&f, "longer than its writer's 20 s window");
    // The same on a clock that may have stepped forward by more than the time since: the
    // refresh may be more recent than it looks, so nothing is proven.
    let f = judge_changed_with(&lock, &config, |ev| {
        written_ago_this_boot(ev, &lock, 60);
        ev.clock = Some(stepped_by_an_hour());
    });
    assert_eq!(
        f.judgement.verdict(),
        Verdict::Unknown,
        "{:#?}",
        f.judgement
    );
    assert_evidence(&f, "that proves nothing");
    // Locked in the kernel: held, whatever its age.
    let holder = hold_flock(&lock);
    let f = judge(60);
    assert_eq!(f.judgement.verdict(), Verdict::Live, "{:#?}", f.judgement);
    drop(holder);
}

// ---------------------------------------------------------------------------------------------
// flock

#[test]
fn flock_files_are_free_or_live() {
    let dir = tempdir();
    let tmp = dir.path();
    // An empty `*.lock` nobody locks: its writer may lock it in the kernel (flock(1), as
    // here) or hold it by existence (O_EXCL): nothing proves it free.
    let empty = write(&tmp.join("build.lock"), fixture("flock/flock-command.bin"));
    let f = expect(&empty, "flock", Verdict::Unknown);
    assert_evidence(&f, "lock by existence");
    assert!(f.judgement.holders.is_empty());
    let cache = write(
        &tmp.join("cargo/.package-cache"),
        fixture("flock/cargo-package-cache.bin"),
    );
    expect(&cache, "tool-flock", Verdict::Free);
    let dpkg = write(
        &tmp.join("var/lib/dpkg/lock"),
        fixture("flock/dpkg-lock.bin"),
    );
    expect(&dpkg, "flock", Verdict::Free);
    let bare = write(&tmp.join("state/lock"), "");
    expect(&bare, "flock", Verdict::Unknown);

    let holder = hold_flock(&empty);
    let f = expect(&empty, "flock", Verdict::Live);
    assert_eq!(f.judgement.holders[0].pid, holder.pid());
    assert_eq!(f.judgement.holders[0].how, HolderHow::Flock);
    drop(holder);
    expect(&empty, "flock", Verdict::Unknown);

    // Open but not locked (a waiter, a reader): still free, and shown.
    let open = fs::File::open(&dpkg).unwrap();
    let f = expect(&dpkg, "flock", Verdict::Free);
    assert_open_here(&f);
    drop(open);

    // Any name, any content (but a database's, see `not_locks`): a kernel lock makes it a
    // lock.
    let db = write(&tmp.join("spool.state"), "queued: 3\n");
    let snap = snapshot();
    assert!(
        try_judge(&db, &snap, &Settings::embedded().scan)
            .unwrap()
            .is_none()
    );
    let holder = hold_flock(&db);
    let f = expect(&db, "flock", Verdict::Live);
    assert_eq!(f.judgement.holders[0].pid, holder.pid());

    // A kernel lock beats content some other dialect would read.
    let text = write(&tmp.join("notes.lock"), "hello");
    let _holder = hold_flock(&text);
    let f = judge(&text);
    assert_eq!(f.judgement.verdict(), Verdict::Live, "{:#?}", f.judgement);
}

#[test]
fn flock_on_a_network_fs_stays_free_and_says_so() {
    let dir = tempdir();
    let path = write(&dir.path().join("var/lib/dpkg/lock"), "");
    let j = judge_on_nfs(&path, "flock");
    assert_eq!(j.verdict(), Verdict::Free);
    assert!(j.evidence.iter().any(|l| l.contains("network file system")));
}

// ---------------------------------------------------------------------------------------------
// The walker finds every fixture under its real name, and picks its dialect.

/// What a fixture of [`FIXTURE_TREE`] is made of.
enum Made {
    /// A file holding the captured fixture.
    File(&'static str),
    /// An empty file.
    Empty,
    /// A symlink to the captured text fixture.
    Link(&'static str),
    /// A symlink to `HOST-1`, this host's name.
    LinkToThisHost,
    /// A directory.
    Dir,
}

/// Every fixture under its real name in one tree, with the dialect that must claim it.
#[rustfmt::skip]
const FIXTURE_TREE: &[(&str, Made, &str)] = &[
    ("run/ssd.pid",                     Made::File("pidfile/start-stop-daemon.txt"),    "pidfile"),
    ("mail/dot.lock",                   Made::File("pidfile/dotlockfile-p.txt"),        "pidfile"),
    ("lock/LCK..ttyS0",                 Made::File("pidfile/uucp-binary.bin"),          "pidfile"),
    ("repo/.git/index.lock",            Made::File("git/index-lock-commit-editor.bin"), "git"),
    ("repo/.git/refs/heads/main.lock",  Made::File("git/ref-lock-main.txt"),            "git"),
    ("repo/.git/HEAD.lock",             Made::Empty,                                    "git"),
    ("repo/.git/index~pid.lock",        Made::File("git/pid-lock.txt"),                 "git"),
    ("edit/.notes.txt.swp",             Made::File("vim-swap/dirty-swap.bin"),          "vim-swap"),
    ("edit/.#draft.txt",                Made::Link("emacs/link-target.txt"),            "emacs"),
    ("docs/.~lock.report.txt#",         Made::File("libreoffice/lock-record.txt"),      "libreoffice"),
    ("tmp/.X57-lock",                   Made::File("x11/display-lock.txt"),             "x11"),
    ("pg/data/postmaster.pid",          Made::File("postgres/postmaster-pid.txt"),      "postgres"),
    ("chromium/SingletonLock",          Made::LinkToThisHost,                           "chromium"),
    ("ff/lock",                         Made::Link("firefox/lock-target.txt"),          "firefox"),
    ("ff/.parentlock",                  Made::File("firefox/parentlock.bin"),           "firefox"),
    ("tf/.terraform.tfstate.lock.info", Made::File("terraform/lock-info.json"),         "terraform"),
    ("cargo/.package-cache",            Made::File("flock/cargo-package-cache.bin"),    "tool-flock"),
    ("py/model.lock",                   Made::File("flock/flock-command.bin"),          "flock"),
    ("var/lib/dpkg/lock-frontend",      Made::File("flock/dpkg-lock.bin"),              "flock"),
    ("node/db.json.lock",               Made::Dir,                                      "mkdir-lock"),
];

#[test]
fn a_scan_finds_every_fixture_with_its_dialect() {
    let dir = tempdir();
    let t = dir.path();
    let host = hostname();
    let want: Vec<(PathBuf, &str)> = FIXTURE_TREE
        .iter()
        .map(|(rel, made, dialect)| {
            let path = t.join(rel);
            match made {
                Made::File(fx) => write(&path, fixture(fx)),
                Made::Empty => write(&path, ""),
                Made::Link(fx) => link(&path, &fixture_text(fx)),
                Made::LinkToThisHost => link(&path, &format!("{host}-1")),
                Made::Dir => {
                    fs::create_dir_all(&path).unwrap();
                    path.clone()
                }
            };
            (path, *dialect)
        })
        .collect();
    write(&t.join("plain/readme.txt"), "not a lock");

    let found: Vec<(PathBuf, &str)> = scan_findings(t)
        .into_iter()
        .map(|f| (f.path, f.dialect.as_str()))
        .collect();
    for (path, dialect) in &want {
        let got = found.iter().find(|(p, _)| p == path).map(|(_, d)| *d);
        assert_eq!(got, Some(*dialect), "{}: {found:#?}", path.display());
    }
    assert_eq!(found.len(), want.len(), "{found:#?}");
}

#[test]
fn mkdir_lock_on_a_network_fs_allows_for_the_server_clock() {
    let dir = tempdir();
    let lock = dir.path().join("shared.lock");
    fs::create_dir(&lock).unwrap();
    // No promise to refresh: a process on another machine may hold it, however old it is
    // (an hour, on a steady clock; on a network file system no earlier-boot rule applies).
    let f = judge_changed(&lock, |ev| {
        steady(ev);
        on_nfs(ev, &lock);
        written_ago(ev, &lock, 3600);
    });
    assert_eq!(
        f.judgement.verdict(),
        Verdict::Foreign,
        "{:#?}",
        f.judgement
    );

    // A declared writer refreshing it every 300 s: past the window by less than the
    // allowance for the server's clock proves nothing; past both, stale.
    let config_path = write(
        &dir.path().join("config.json"),
        r#"{"dialects": [{"name": "shared-locks", "patterns": ["shared.lock"],
            "format": "existence", "stale_after_secs": 300}]}"#,
    );
    let config = RawConfig::load_layers(None, Some(&config_path))
        .and_then(RawConfig::validate)
        .unwrap()
        .scan;
    let on_nfs_for = |age_s: i64| {
        let f = judge_changed_with(&lock, &config, |ev| {
            steady(ev);
            on_nfs(ev, &lock);
            written_ago_this_boot(ev, &lock, age_s);
        });
        assert_eq!(f.dialect, "shared-locks");
        f.judgement
    };
    let j = on_nfs_for(330);
    assert_eq!(j.verdict(), Verdict::Unknown, "{j:#?}");
    assert!(j.evidence.iter().any(|l| l.contains("server clock")));
    let j = on_nfs_for(600);
    assert_eq!(j.verdict(), Verdict::Stale, "{j:#?}");
    assert!(j.evidence.iter().any(|l| l.contains("server's clock")));
}

#[test]
fn a_file_named_lock_is_read_for_a_pid() {
    let dir = tempdir();
    let dead = dead_pid();
    let f = expect(
        &write(&dir.path().join("a/lock"), format!("{dead}\n")),
        "pidfile",
        Verdict::Stale,
    );
    assert_evidence(&f, "ESRCH");
    expect(
        &write(&dir.path().join("b/lock"), "not a pid"),
        "pidfile",
        Verdict::Unknown,
    );
    // Empty and unlocked, of unknown writer: a kernel-lock file or a lock by existence.
    expect(
        &write(&dir.path().join("c/lock"), ""),
        "flock",
        Verdict::Unknown,
    );
}

#[test]
fn chromium_listening_on_its_singleton_socket_is_live() {
    let dir = tempdir();
    let profile = dir.path().join("profile");
    let lock = link(
        &profile.join("SingletonLock"),
        &format!("{}-{}", hostname(), dead_pid()),
    );
    let socket = dir
        .path()
        .join("org.chromium.Chromium.test/SingletonSocket");
    fs::create_dir_all(socket.parent().unwrap()).unwrap();
    link(&profile.join("SingletonSocket"), socket.to_str().unwrap());
    // Nobody listens there yet: the PID decides.
    expect(&lock, "chromium", Verdict::Stale);
    let listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    let f = expect(&lock, "chromium", Verdict::Live);
    assert_evidence(&f, "listens on the profile's SingletonSocket");
    drop(listener);
    expect(&lock, "chromium", Verdict::Stale);
}

#[test]
fn git_gc_pid() {
    let dir = tempdir();
    let repo = fake_repo(dir.path());
    let host = hostname();
    let gc = repo.join(".git/gc.pid");
    write(&gc, format!("{} {host}", dead_pid()));
    let f = expect(&gc, "git", Verdict::Stale);
    assert_evidence(&f, "ESRCH");
    let git = named_sleeper(&dir.path().join("bin"), "git", dir.path());
    write(&gc, format!("{} {host}", git.pid()));
    let f = expect(&gc, "git", Verdict::Live);
    assert_eq!(f.judgement.owner.unwrap().hostname, Some(host));
    write(&gc, format!("{} elsewhere.example", git.pid()));
    expect(&gc, "git", Verdict::Foreign);
    write(&gc, "1; rm -rf / host");
    expect(&gc, "git", Verdict::Unknown);
    // Outside a git directory a gc.pid is just a pid file.
    let other = write(&dir.path().join("gc.pid"), format!("{}\n", git.pid()));
    expect(&other, "pidfile", Verdict::Live);
}

/// A git working in a bare repository through `--git-dir`, from another directory (a mirror
/// job: `git --git-dir=/srv/mirror.git fetch`), keeps that repository's ref locks live. The
/// process here is a stand-in whose argv is that of such a git (argv[0] `git`).
#[test]
fn git_named_by_git_dir_on_its_command_line_keeps_the_lock_live() {
    let dir = tempfile::tempdir().unwrap();
    // A bare repository as `git init --bare` lays it out (what git asks of a git directory).
    let repo = dir.path().join("mirror.git");
    fs::create_dir_all(repo.join("refs/heads")).unwrap();
    fs::create_dir_all(repo.join("objects")).unwrap();
    fs::write(repo.join("HEAD"), "ref: refs/heads/main\n").unwrap();
    let lock = repo.join("refs/heads/main.lock");
    fs::write(&lock, "").unwrap();
    // A minute old, in this boot (written before it, the earlier-boot rule would prove it
    // stale whatever git runs).
    let judge = || judge_a_minute_old(&lock);
    let before = judge();
    assert_eq!(before.dialect, "git");
    assert_eq!(before.judgement.verdict(), Verdict::Stale, "{before:?}");

    let git_dir = format!("--git-dir={}", repo.display());
    // argv: git -c 'sleep 60; :' --git-dir=REPO (a shell that stays, with git's argv).
    let stand_in = Group::spawn(
        Command::new("sh")
            .arg0("git")
            .args(["-c", "sleep 60; :", &git_dir])
            .current_dir("/"),
    );
    let pid = stand_in.pid();
    wait_until("the stand-in to start", || {
        fs::read(format!("/proc/{pid}/cmdline"))
            .unwrap_or_default()
            .ends_with(format!("{git_dir}\0").as_bytes())
    });
    let f = judge();
    assert_eq!(f.judgement.verdict(), Verdict::Live, "{:?}", f.judgement);
    assert!(
        f.judgement.evidence[0].contains("command line"),
        "{:?}",
        f.judgement.evidence
    );
    drop(stand_in);
}

// ---------------------------------------------------------------------------------------------
// Verdicts that hold on every machine: the classes of wrong verdict, one test each.

/// A LibreOffice record by `host`, stamped with a local time long past.
fn office_record(host: &str) -> String {
    format!(",jdoe,{host},01.01.2020 10:00,file:///home/jdoe/.config/libreoffice/4;")
}

/// Host first: a lock of another host is foreign however old its times are, and whatever the
/// time zone; only a lock of this host is stale for being written before this boot.
#[test]
fn another_host_is_decided_before_any_time_rule() {
    let dir = tempdir();
    let tmp = dir.path();
    let host = hostname();
    // Each judged as written 400 days before this host booted, on a clock known steady:
    // proof enough of an earlier boot, for a lock of this host.
    let long_ago = |path: &Path| {
        judge_changed(path, |ev| {
            steady(ev);
            written_before_boot(ev, path, 400 * 86_400);
        })
    };
    let expect_long_ago = |path: &Path, dialect: &str, verdict: Verdict| {
        let f = long_ago(path);
        assert_eq!(f.dialect, dialect, "{}", path.display());
        assert_eq!(f.judgement.verdict(), verdict, "{:#?}", f.judgement);
        f
    };

    let theirs = write(&tmp.join(".~lock.theirs.odt#"), office_record("laptop"));
    let f = expect_long_ago(&theirs, "libreoffice", Verdict::Foreign);
    assert_evidence(&f, "\"laptop\"");
    let ours = write(&tmp.join(".~lock.ours.odt#"), office_record(&host));
    {
        let _no_office = quiet::absent(Fact::Office);
        if quiet::none_running(Fact::Office) {
            let f = expect_long_ago(&ours, "libreoffice", Verdict::Stale);
            assert_evidence(&f, "before this host booted");
            assert_eq!(f.judgement.proofs()[0].rule, locksmith::Rule::EarlierBoot);
            // Its mtime set back 400 days (anyone who may write it can) is not a write
            // before this boot: the kernel changed it a minute ago, an hour after the boot.
            // Stale all the same, but by its writer's absence, not by time.
            set_mtime_ms(&ours, now_ms() - 400 * 86_400_000);
            let f = judge_changed(&ours, |ev| {
                steady(ev);
                booted_ago(ev, 3600);
                changed_ago(ev, &ours, 60);
            });
            assert_eq!(f.judgement.verdict(), Verdict::Stale, "{:#?}", f.judgement);
            assert_eq!(f.judgement.proofs()[0].rule, locksmith::Rule::WriterAbsent);
            assert!(
                !evidence(&f).contains("before this host booted"),
                "{:#?}",
                f.judgement
            );
            assert_evidence(&f, "its mtime says");
            assert_evidence(&f, "which anyone who may write it can set");
        }
    }
    // The record's own time (local, zone unknown) is never taken for the write time: a file
    // written a minute ago with a record stamped long ago is not from an earlier boot.
    let fresh = write(&tmp.join(".~lock.fresh.odt#"), office_record(&host));
    let f = judge_changed(&fresh, |ev| {
        steady(ev);
        written_ago_this_boot(ev, &fresh, 60);
    });
    assert!(
        !evidence(&f).contains("before this host booted"),
        "{:#?}",
        f.judgement
    );

    // Terraform: `Created` from the writer's clock, another host.
    let ws = tmp.join("ws");
    write(&ws.join("terraform.tfstate"), "{}");
    let info = write(
        &ws.join(".terraform.tfstate.lock.info"),
        lock_info_for("ci@build-7.example"),
    );
    expect_long_ago(&info, "terraform", Verdict::Foreign);

    // A pid record of another host, written before our boot: foreign, not stale.
    let rec = write(&tmp.join("model.lock"), format!("{}\nlaptop\n", dead_pid()));
    expect_long_ago(&rec, "pidfile", Verdict::Foreign);

    // Locks naming no host, on a local file system, from before the boot: stale by time.
    let repo = fake_repo(&tmp.join("git"));
    let index = write(&repo.join(".git/index.lock"), "DIRC");
    let f = expect_long_ago(&index, "git", Verdict::Stale);
    assert_evidence(&f, "before this host booted");
    let pg = tmp.join("pg");
    let pidfile = write(
        &pg.join("postmaster.pid"),
        postmaster_with(dead_pid() as i64, Path::new("/var/lib/postgresql/data"), 0),
    );
    let f = expect_long_ago(&pidfile, "postgres", Verdict::Stale);
    assert_evidence(&f, "before this host booted");
}

/// The real SoftFileLock record, its host rewritten; and the other multi-line forms.
#[test]
fn multi_line_pid_records_are_read_whole() {
    let dir = tempdir();
    let tmp = dir.path();
    let host = hostname();
    let snap = snapshot();
    let me = std::process::id();
    let dead = dead_pid();
    let soft = fixture_text("pidfile/softfilelock-4.txt");
    let with = |pid: u32, h: &str, token: Option<String>| {
        let lines: Vec<&str> = soft.lines().collect();
        let token = token.unwrap_or_else(|| lines[2].to_string());
        format!("{pid}\n{h}\n{token}\n")
    };
    // py-filelock's token for a process: (boot id << 64) | start ticks.
    let token_of = |boot: &str, ticks: u64| -> String {
        let b = u128::from_str_radix(&boot.replace('-', ""), 16).unwrap();
        // b * 2^64 + ticks, in decimal, by long multiplication in base 10^9.
        let mut limbs: Vec<u128> = vec![0];
        let mut mul_add = |m: u128, a: u128| {
            let mut carry = a;
            for l in limbs.iter_mut().rev() {
                let v = *l * m + carry;
                *l = v % 1_000_000_000;
                carry = v / 1_000_000_000;
            }
            while carry > 0 {
                limbs.insert(0, carry % 1_000_000_000);
                carry /= 1_000_000_000;
            }
        };
        for byte in b.to_be_bytes().into_iter().chain(ticks.to_be_bytes()) {
            mul_add(256, byte as u128);
        }
        let mut s = limbs[0].to_string();
        for l in &limbs[1..] {
            s.push_str(&format!("{l:09}"));
        }
        s
    };

    // The captured record parses to its owner.
    let f = judge(&write(&tmp.join("fixture.lock"), &soft));
    assert_eq!(f.dialect, "pidfile");
    let owner = f.judgement.owner.clone().unwrap();
    assert_eq!(
        (owner.pid, owner.hostname.as_deref()),
        (Some(28031), Some("vm"))
    );

    // Another host, its PID alive here or not: foreign, never stale.
    for pid in [me, dead as u32] {
        let path = write(
            &tmp.join(format!("other-{pid}.lock")),
            with(pid, "laptop", None),
        );
        let f = expect(&path, "pidfile", Verdict::Foreign);
        assert_evidence(&f, "\"laptop\"");
    }
    // Our host in another PID namespace (py-filelock's ?pidns- suffix): foreign.
    let ns = snap.host.pid_ns.unwrap_or(0) + 1;
    let path = write(
        &tmp.join("ns.lock"),
        format!("{dead}\n{host}?pidns-{ns:x}\n"),
    );
    expect(&path, "pidfile", Verdict::Foreign);

    // Our host: the PID and its start token decide.
    let boot = snap.host.boot_id.clone().expect("boot id");
    let ticks = snap.pid(me as i32).facts().unwrap().start_ticks;
    let path = write(
        &tmp.join("mine.lock"),
        with(me, &host, Some(token_of(&boot, ticks))),
    );
    expect(&path, "pidfile", Verdict::Live);
    let path = write(
        &tmp.join("reused.lock"),
        with(me, &host, Some(token_of(&boot, ticks + 1))),
    );
    let f = expect(&path, "pidfile", Verdict::Stale);
    assert_evidence(&f, "reused");
    let path = write(
        &tmp.join("old-boot.lock"),
        with(
            me,
            &host,
            Some(token_of("00000000-0000-4000-8000-000000000001", ticks)),
        ),
    );
    let f = expect(&path, "pidfile", Verdict::Stale);
    assert_evidence(&f, "earlier boot");
    let path = write(&tmp.join("dead.lock"), with(dead as u32, &host, None));
    expect(&path, "pidfile", Verdict::Stale);
    // The filelock/2 marker.
    let path = write(
        &tmp.join("marker.lock"),
        format!("filelock/2\npid={me}\nhost=laptop\nmode=exclusive\n"),
    );
    expect(&path, "pidfile", Verdict::Foreign);

    // GnuPG's dotlock: the padded PID, then the host.
    let path = write(&tmp.join("pubring.kbx.lock"), format!("{me:>10}\nlaptop\n"));
    expect(&path, "pidfile", Verdict::Foreign);
    let path = write(
        &tmp.join("trustdb.gpg.lock"),
        format!("{dead:>10}\n{host}\n"),
    );
    expect(&path, "pidfile", Verdict::Stale);

    // Qt's QLockFile: pid, application, host, machine id, boot id (its own dialect, whatever
    // the file's name).
    let qt = fixture_text("pidfile/qt-qlockfile.txt");
    let f = judge(&write(&tmp.join("qt-fixture.lock"), &qt));
    assert_eq!(f.judgement.owner.unwrap().pid, Some(32157));
    let machine = snap
        .host
        .machine_id
        .clone()
        .unwrap_or_else(|| "0".repeat(32));
    let qt_with =
        |pid: i32, app: &str, h: &str, m: &str, b: &str| format!("{pid}\n{app}\n{h}\n{m}\n{b}\n");
    let sleeper = named_sleeper(&tmp.join("bin"), "kate", tmp);
    let path = write(
        &tmp.join("qt-live.lock"),
        qt_with(sleeper.pid(), "kate", &host, &machine, &boot),
    );
    expect(&path, "qt-lockfile", Verdict::Live);
    let path = write(
        &tmp.join("qt-app.lock"),
        qt_with(sleeper.pid(), "okular", &host, &machine, &boot),
    );
    let f = expect(&path, "qt-lockfile", Verdict::Unknown);
    assert_evidence(&f, "nothing proves the lock is not its");
    let path = write(
        &tmp.join("qt-boot.lock"),
        qt_with(
            sleeper.pid(),
            "kate",
            &host,
            &machine,
            "00000000-0000-4000-8000-000000000001",
        ),
    );
    expect(&path, "qt-lockfile", Verdict::Stale);
    if snap.host.machine_id.is_some() {
        let path = write(
            &tmp.join("qt-machine.lock"),
            qt_with(
                sleeper.pid(),
                "kate",
                &host,
                &"f".repeat(32),
                "00000000-0000-4000-8000-000000000001",
            ),
        );
        let f = expect(&path, "qt-lockfile", Verdict::Foreign);
        assert_evidence(&f, "machine id");
    }
    let path = write(
        &tmp.join("qt-host.lock"),
        qt_with(dead, "kate", "laptop", &machine, &boot),
    );
    expect(&path, "qt-lockfile", Verdict::Foreign);

    // A PID followed by lines of no known meaning: never stale on the PID alone.
    let path = write(&tmp.join("odd.lock"), format!("{dead}\n5432\n"));
    let f = expect(&path, "pidfile", Verdict::Unknown);
    assert_evidence(&f, "no format this tool reads");
}

/// A name check proves only what it can: an X server not on the list is no proof.
#[test]
fn an_unlisted_x_server_is_unknown_and_a_listening_display_is_live() {
    let dir = tempdir();
    let tmp = dir.path();
    let bin = tmp.join("bin");
    let xkasm = named_sleeper(&bin, "Xkasmvnc", tmp);
    let lock = write(&tmp.join(".X80-lock"), format!("{:>10}\n", xkasm.pid()));
    let f = expect(&lock, "x11", Verdict::Unknown);
    assert_evidence(&f, "nothing proves the lock is not its");
    // Something certainly not an X server, started before the lock: still not proven (a
    // wrapper, a re-titled process, another namespace's PID).
    let sleep = named_sleeper(&bin, "sleep", tmp);
    let lock = write(&tmp.join(".X81-lock"), format!("{:>10}\n", sleep.pid()));
    expect(&lock, "x11", Verdict::Unknown);
    // Whatever the PID says, a server answering on the display's socket keeps it live.
    fs::create_dir_all(tmp.join(".X11-unix")).unwrap();
    let _listener = std::os::unix::net::UnixListener::bind(tmp.join(".X11-unix/X81")).unwrap();
    let f = expect(&lock, "x11", Verdict::Live);
    assert_evidence(&f, "listens on display :81");
}

/// Not every live PID is an owner: init and kernel threads own no application's lock. Such a
/// PID was written in another PID namespace: where we can see every namespace (root, in the
/// host's) and none that sees the file has an owner, the lock is stale with every candidate
/// named (README: Containers and sandboxes); where we cannot, it is foreign.
#[test]
fn init_and_kernel_threads_never_own_an_application_lock() {
    let dir = tempdir();
    let tmp = dir.path();
    let snap = snapshot();
    let host_ns = snap.host.pid_ns == Some(0xEFFF_FFFC);
    let every_namespace_seen = host_ns && snap.containers().complete;
    let not_an_owner = |f: &Finding| {
        if every_namespace_seen {
            assert_eq!(f.judgement.verdict(), Verdict::Stale, "{:#?}", f.judgement);
            assert_evidence(f, "no PID namespace that can see this file");
            assert_evidence(f, "this host (as ");
        } else {
            assert_eq!(
                f.judgement.verdict(),
                Verdict::Foreign,
                "{:#?}",
                f.judgement
            );
        }
    };
    // A kernel thread visible here (none inside most containers).
    let kthread = fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .find(|&pid| snap.pid(pid).facts().is_some_and(|f| f.kernel_thread));
    match kthread {
        Some(pid) => {
            let lock = write(&tmp.join("ide/.lock"), format!("{pid}\n"));
            let f = judge(&lock);
            assert_eq!(f.dialect, "pidfile");
            assert_evidence(&f, "kernel thread");
            not_an_owner(&f);
            if !every_namespace_seen {
                assert_evidence(&f, "another PID namespace");
            }
        }
        None => skip("no kernel thread is visible here (in a container?): that case is left out"),
    }
    // This machine's PID 1 (only where we run in the host's PID namespace: inside a
    // container, PID 1 is the container's own program and may well own a lock).
    let server = write(&tmp.join("app/tmp/pids/server.pid"), "1\n");
    let f = judge(&server);
    assert_ne!(f.judgement.verdict(), Verdict::Live, "{:#?}", f.judgement);
    if host_ns {
        assert_evidence(&f, "init");
        not_an_owner(&f);
    } else {
        skip("not in the host's PID namespace: PID 1 is this container's own program");
    }
    // The same through the other PID dialects.
    let pg = tmp.join("pg");
    write(
        &pg.join("postmaster.pid"),
        format!("1\n{}\n{}\n5432\n/tmp\n", pg.display(), now_ms() / 1000),
    );
    let f = judge(&pg.join("postmaster.pid"));
    assert_ne!(f.judgement.verdict(), Verdict::Live, "{:#?}", f.judgement);
}

#[test]
fn mercurial_locks_are_found_and_judged() {
    let dir = tempdir();
    let tmp = dir.path();
    let host = hostname();
    let ns = snapshot().host.pid_ns.expect("our PID namespace");
    let repo = tmp.join("repo");
    write(&repo.join(".hg/requires"), "store\n");
    let wlock = repo.join(".hg/wlock");
    let store = repo.join(".hg/store/lock");
    fs::create_dir_all(repo.join(".hg/store")).unwrap();

    // The captured link text parses to its owner.
    let f = judge(&link(&wlock, &fixture_text("mercurial/link-target.txt")));
    assert_eq!(f.dialect, "mercurial");
    let owner = f.judgement.owner.unwrap();
    assert_eq!(
        (owner.pid, owner.hostname.as_deref()),
        (Some(32215), Some("vm"))
    );

    let dead = dead_pid();
    for lock in [&wlock, &store] {
        let f = expect(
            &link(lock, &format!("{host}/{ns:x}:{dead}")),
            "mercurial",
            Verdict::Stale,
        );
        assert_evidence(&f, "ESRCH");
    }
    let hg = named_sleeper(&tmp.join("bin"), "hg", tmp);
    expect(
        &link(&store, &format!("{host}/{ns:x}:{}", hg.pid())),
        "mercurial",
        Verdict::Live,
    );
    // Older Mercurial: no namespace. A file where symlinks fail.
    expect(
        &link(&store, &format!("{host}:{}", hg.pid())),
        "mercurial",
        Verdict::Live,
    );
    fs::remove_file(&store).unwrap();
    expect(
        &write(&store, format!("{host}/{ns:x}:{}", hg.pid())),
        "mercurial",
        Verdict::Live,
    );
    fs::remove_file(&store).unwrap();
    // Another host, another PID namespace: foreign.
    expect(
        &link(&store, &format!("laptop/{ns:x}:{dead}")),
        "mercurial",
        Verdict::Foreign,
    );
    expect(
        &link(&store, &format!("{host}/{:x}:{dead}", ns + 1)),
        "mercurial",
        Verdict::Foreign,
    );
    // A Python interpreter could be hg under another name: not proven either way.
    let py = named_sleeper(&tmp.join("bin"), "python3", tmp);
    expect(
        &link(&store, &format!("{host}/{ns:x}:{}", py.pid())),
        "mercurial",
        Verdict::Unknown,
    );
    for bad in ["garbage", &format!("{host}:0"), &format!("{host}:x")] {
        expect(&link(&store, bad), "mercurial", Verdict::Unknown);
    }
    // Firefox's `lock` is a profile's only.
    let loose = link(&tmp.join("elsewhere/lock"), "127.0.0.1:+42");
    let f = judge_in(&loose, &snapshot());
    assert_ne!(f.dialect, "firefox", "{f:#?}");
}

#[test]
fn mercurial_real_hg_is_live_then_stale() {
    if !require("hg") {
        return;
    }
    let dir = tempdir();
    let repo = dir.path().join("repo");
    let ok = Command::new("hg")
        .arg("init")
        .arg(&repo)
        .env("HGRCPATH", "")
        .status()
        .unwrap();
    assert!(ok.success());
    let mut hg = Group::spawn(
        Command::new("hg")
            .args(["debuglocks", "--set-lock", "--set-wlock"])
            .current_dir(&repo)
            .env("HGRCPATH", "")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    );
    let wlock = repo.join(".hg/wlock");
    let store = repo.join(".hg/store/lock");
    wait_until("hg's locks", || {
        fs::symlink_metadata(&wlock).is_ok() && fs::symlink_metadata(&store).is_ok()
    });
    for lock in [&wlock, &store] {
        let f = expect(lock, "mercurial", Verdict::Live);
        assert_eq!(f.judgement.owner.unwrap().pid, Some(hg.pid() as i64));
    }
    hg.kill();
    for lock in [&wlock, &store] {
        let f = expect(lock, "mercurial", Verdict::Stale);
        assert_evidence(&f, "ESRCH");
    }
}

#[test]
fn postgres_standalone_backends_and_socket_locks() {
    let dir = tempdir();
    let data = dir.path().join("data");
    let sockets = dir.path().join("run");
    fs::create_dir_all(&data).unwrap();
    fs::create_dir_all(&sockets).unwrap();
    let now = now_ms() / 1000;
    let bin = dir.path().join("bin");

    // `postgres --single` writes its PID negated: postgres reads the absolute value.
    let pidfile = data.join("postmaster.pid");
    let pg = named_sleeper(&bin, "postgres", &data);
    write(
        &pidfile,
        postmaster_with(-(pg.pid() as i64), &data, now_ms() / 1000),
    );
    let f = expect(&pidfile, "postgres", Verdict::Live);
    let owner = f.judgement.owner.unwrap();
    assert_eq!(owner.pid, Some(pg.pid() as i64));
    assert!(
        owner.detail.unwrap().contains("standalone"),
        "the owner says what wrote it"
    );
    drop(pg);
    let dead = dead_pid();
    write(&pidfile, postmaster_with(-(dead as i64), &data, now));
    let f = expect(&pidfile, "postgres", Verdict::Stale);
    assert_evidence(&f, &format!("no process {dead} "));

    // A socket lock file: the same first five lines, beside the socket.
    let sock_lock = sockets.join(".s.PGSQL.5433.lock");
    let record = |pid: i64| {
        format!(
            "{pid}\n{}\n{now}\n5433\n{}\n",
            data.display(),
            sockets.display()
        )
    };
    write(&sock_lock, record(dead_pid() as i64));
    let f = expect(&sock_lock, "postgres", Verdict::Stale);
    assert_evidence(&f, "ESRCH");
    // Listening on its socket: live.
    let listener = std::os::unix::net::UnixListener::bind(sockets.join(".s.PGSQL.5433")).unwrap();
    let f = expect(&sock_lock, "postgres", Verdict::Live);
    assert_evidence(&f, "listens on the server's socket");
    drop(listener);
    // A postgres working in its data directory: live.
    let pg = named_sleeper(&bin, "postgres", &data);
    expect(&sock_lock, "postgres", Verdict::Live);
    drop(pg);
    // Written in another mount namespace (its socket directory is not where it lies).
    write(
        &sock_lock,
        format!(
            "{}\n/var/lib/postgresql/data\n{now}\n5433\n/var/run/postgresql\n",
            dead_pid()
        ),
    );
    expect(&sock_lock, "postgres", Verdict::Foreign);
    write(&sock_lock, "garbage\n");
    expect(&sock_lock, "postgres", Verdict::Unknown);
}
