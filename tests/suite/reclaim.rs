//! Reclaim: only locks stale at the moment of removal go, after a copy and a journal line;
//! a lock that came back to life or was replaced since it was judged stays; `--dry-run`
//! removes nothing.

use std::fs;
use std::path::Path;

use crate::util::judging::{judge, scan_findings};
use crate::util::*;
use locksmith::config::Settings;
use locksmith::reclaim::{Action, Outcome, Reclaim, ReclaimOptions};
use locksmith::scan::{self, Finding};
use locksmith::verdict::Verdict;
use sha2::{Digest, Sha256};

fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Reclaims `f` alone, judged again with the embedded configuration.
fn reclaim_one(f: &Finding, opts: &ReclaimOptions) -> Outcome {
    let mut out = None;
    Reclaim::new(&Settings::embedded().scan)
        .options(opts.clone())
        .run([f], |o| out = Some(o));
    out.expect("one outcome per lock")
}

/// Reclaims `f` (as the UI does, one finding) and asserts that it is kept, for a reason that
/// says `why`.
fn assert_kept(env: &Env, f: &Finding, why: &str) -> Outcome {
    let o = reclaim_one(f, &options(env));
    assert_eq!(o.action, Action::Kept, "{o:?}");
    assert!(!o.ok, "{o:?}");
    assert!(o.error.as_deref().unwrap_or("").contains(why), "{o:?}");
    o
}

fn options(env: &Env) -> ReclaimOptions {
    ReclaimOptions {
        state_dir: env.state_dir(),
        ..ReclaimOptions::new()
    }
}

#[test]
fn removes_only_the_stale_lock_and_journals_it() {
    let env = Env::new();
    let root = env.path().join("root");
    fs::create_dir(&root).unwrap();
    let stale = root.join("gone.pid");
    let stale_content = format!("{}\n", dead_pid());
    fs::write(&stale, &stale_content).unwrap();
    let owner = sleeper();
    let live = root.join("alive.pid");
    fs::write(&live, format!("{}\n", owner.pid())).unwrap();
    let garbage = root.join("junk.pid");
    fs::write(&garbage, "not a pid at all").unwrap();
    let free = root.join("queue.lock");
    fs::write(&free, "").unwrap();

    let (report, out) = env.reclaim_json(&[], &root);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!stale.exists(), "the stale lock is removed");
    for kept in [&live, &garbage, &free] {
        assert!(kept.exists(), "{} must stay", kept.display());
    }
    let reclaimed = report.reclaimed.expect("reclaimed array");
    assert_eq!(reclaimed.len(), 1, "{reclaimed:?}");
    let r = &reclaimed[0];
    assert_eq!(r.path, stale.to_str().unwrap());
    assert!(r.ok);
    assert_eq!(r.action, "removed");
    assert_eq!(r.verdict, "stale");
    let saved = r.saved_to.as_ref().expect("saved_to");
    assert!(Path::new(saved).starts_with(env.state_dir()), "{saved}");
    assert_eq!(r.copy(stale_content.len()), stale_content.as_bytes());

    let journal = env.journal();
    assert_eq!(journal.len(), 1, "{journal:?}");
    let line = &journal[0];
    assert_eq!(line["path"], stale.to_str().unwrap());
    assert_eq!(line["dialect"], "pidfile");
    assert_eq!(line["verdict"], "stale");
    assert!(!line["evidence"].as_array().unwrap().is_empty());
    assert_eq!(line["sha256"], sha256_hex(stale_content.as_bytes()));
    assert_eq!(line["saved_to"], saved.as_str());
    assert_eq!(line["saved_offset"].as_u64(), r.saved_offset);
    assert_eq!(journal_copy(line), stale_content.as_bytes());
    assert!(
        line["time"]
            .as_str()
            .unwrap()
            .parse::<jiff::Timestamp>()
            .is_ok()
    );
    assert!(line.get("owner").is_some());
}

#[test]
fn the_table_says_what_was_removed() {
    let env = Env::new();
    let stale = env.path().join("gone.pid");
    fs::write(&stale, format!("{}\n", dead_pid())).unwrap();
    let out = env.run([
        "--scan".as_ref(),
        "--reclaim".as_ref(),
        env.path().as_os_str(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains(&format!(
            "removed {} (a copy is kept: `locksmith restore {}` puts it back)",
            stale.display(),
            stale.display()
        )),
        "{text}"
    );
    assert!(
        text.contains("reclaim: 1 removed, 0 would be removed, 0 kept"),
        "{text}"
    );
    assert!(!stale.exists());
}

#[test]
fn dry_run_removes_nothing() {
    let env = Env::new();
    let stale = env.path().join("gone.pid");
    fs::write(&stale, format!("{}\n", dead_pid())).unwrap();
    let before = photograph(env.path());
    let (report, out) = env.reclaim_json(&["--dry-run"], env.path());
    assert_eq!(out.status.code(), Some(1), "the stale lock remains");
    let r = &report.reclaimed.unwrap()[0];
    assert_eq!((r.ok, r.action.as_str()), (true, "would-remove"));
    assert_eq!(r.saved_to, None);
    assert_eq!(before, photograph(env.path()));
    assert!(!env.state_dir().exists());

    let out = env.run([
        "--scan".as_ref(),
        "--reclaim".as_ref(),
        "--dry-run".as_ref(),
        env.path().as_os_str(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stdout(&out).contains(&format!("would remove {}", stale.display())));
    assert!(stale.exists());
}

#[test]
fn a_lock_that_came_back_to_life_is_kept() {
    let env = Env::new();
    let path = env.path().join("svc.pid");
    // A dead PID and a live one with as many digits, so the rewrite keeps the size.
    let (owner, dead) = loop {
        let owner = sleeper();
        let dead = dead_pid();
        if owner.pid().to_string().len() == dead.to_string().len() {
            break (owner, dead);
        }
    };
    fs::write(&path, format!("{dead}\n")).unwrap();
    let judged = judge(&path);
    assert_eq!(
        judged.judgement.verdict(),
        Verdict::Stale,
        "{:?}",
        judged.judgement
    );

    // Between the scan and the reclaim, the lock is taken again by a live process: same
    // inode, same size, same mtime (only the status change time, which cannot be set back,
    // moves); judging it again tells that it is live.
    let mtime = fs::metadata(&path).unwrap().modified().unwrap();
    fs::write(&path, format!("{}\n", owner.pid())).unwrap();
    fs::File::options()
        .write(true)
        .open(&path)
        .unwrap()
        .set_modified(mtime)
        .unwrap();
    let now = locksmith::scan::Identity::of(&fs::symlink_metadata(&path).unwrap());
    assert_eq!(
        (now.dev, now.ino, now.size, now.mtime_ns),
        (
            judged.identity.dev,
            judged.identity.ino,
            judged.identity.size,
            judged.identity.mtime_ns
        )
    );

    let outcome = assert_kept(&env, &judged, "live");
    assert_eq!(outcome.judgement.verdict(), Verdict::Live);
    assert_eq!(
        fs::read_to_string(&path).unwrap(),
        format!("{}\n", owner.pid())
    );
    assert!(env.journal().is_empty());
}

#[test]
fn a_replaced_file_is_refused() {
    let env = Env::new();
    let path = env.path().join("svc.pid");
    let content = format!("{}\n", dead_pid());
    fs::write(&path, &content).unwrap();
    let judged = judge(&path);
    assert_eq!(judged.judgement.verdict(), Verdict::Stale);

    // Someone else's lock now sits at the same path: stale too, but not the file judged.
    let other = env.path().join("other");
    fs::write(&other, &content).unwrap();
    fs::rename(&other, &path).unwrap();
    assert_kept(&env, &judged, "changed since it was judged");
    assert!(path.exists());
    assert!(env.journal().is_empty());

    // Judged again, the new file can go.
    let outcome = reclaim_one(&judge(&path), &options(&env));
    assert_eq!(outcome.action, Action::Removed, "{outcome:?}");
    assert!(!path.exists());
    assert_eq!(env.journal().len(), 1);
}

#[test]
fn a_vanished_lock_is_reported_not_an_error_to_remove() {
    let env = Env::new();
    let path = env.path().join("svc.pid");
    fs::write(&path, format!("{}\n", dead_pid())).unwrap();
    let judged = judge(&path);
    fs::remove_file(&path).unwrap();
    assert_kept(&env, &judged, "no longer a lock");
}

#[test]
fn our_own_lock_is_kept_while_held_and_reclaimed_through_the_engine_after_a_crash() {
    let env = Env::new();
    let dir = env.path().join("jobs");
    fs::create_dir(&dir).unwrap();
    let lock = dir.join("nightly.lock");
    let mut holder = hold_with_cli(&lock, &[]);
    wait_for("the engine's lock", || {
        let (r, _) = env.scan_json(&[&dir]);
        r.lock(&lock)
            .is_some_and(|l| l.verdict == "live")
            .then_some(())
    });
    let (report, out) = env.reclaim_json(&[], &dir);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(report.reclaimed.map(|r| r.len()), Some(0));
    assert!(lock.exists(), "a held lock is never reclaimed");

    holder.kill();
    let record = fs::read(&lock).unwrap();
    let (report, out) = env.reclaim_json(&[], &dir);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let l = report.expect_lock(&lock);
    assert_eq!(
        (l.dialect.as_str(), l.verdict.as_str()),
        ("locksmith", "stale")
    );
    let r = &report.reclaimed.unwrap()[0];
    assert_eq!((r.ok, r.action.as_str()), (true, "removed"), "{r:?}");
    assert!(!lock.exists());
    assert_eq!(r.copy(record.len()), record);
    let journal = env.journal();
    assert_eq!(journal.len(), 1);
    assert_eq!(journal[0]["dialect"], "locksmith");
    assert_eq!(journal[0]["sha256"], sha256_hex(&record));
}

/// A file whose status changed since it was judged (here a chmod: same inode, size, mtime and
/// content) is not the file that was judged: it is kept.
#[test]
fn a_lock_whose_status_changed_is_kept() {
    use std::os::unix::fs::PermissionsExt;
    let env = Env::new();
    let path = env.path().join("svc.pid");
    fs::write(&path, format!("{}\n", dead_pid())).unwrap();
    let judged = judge(&path);
    assert_eq!(judged.judgement.verdict(), Verdict::Stale);
    // ctime has a clock tick's resolution: make sure the change lands on a later one.
    std::thread::sleep(std::time::Duration::from_millis(20));
    fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).unwrap();

    assert_kept(&env, &judged, "changed");
    assert!(path.exists());
}

/// A tree `root/a/b/NAME` and, outside it, `secret/b/NAME` with the same content; after the
/// scan, `root/a` is swapped for a symlink to `secret` or for another directory holding the
/// same names. Reclaim must refuse: nothing outside the tree is removed, nor anything the scan
/// did not see.
fn swapped_directory_is_refused(env: &Env, name: &str, content: &[u8], dialect: &str) {
    let root = env.path().join("root");
    let secret = env.path().join("secret");
    fs::create_dir_all(root.join("a/b")).unwrap();
    fs::create_dir_all(secret.join("b")).unwrap();
    let lock = root.join("a/b").join(name);
    let outside = secret.join("b").join(name);
    fs::write(&lock, content).unwrap();
    fs::write(&outside, content).unwrap();

    let findings = scan_findings(&root);
    let f = findings.iter().find(|f| f.path == lock).expect("found");
    assert_eq!(
        (f.dialect.as_str(), f.judgement.verdict()),
        (dialect, Verdict::Stale)
    );

    // A symlink in the middle of the path.
    fs::rename(root.join("a"), env.path().join("a.orig")).unwrap();
    std::os::unix::fs::symlink(&secret, root.join("a")).unwrap();
    // The UI's refresh does not judge the file outside either.
    let again = scan::rejudge(f, &snapshot(), &Settings::embedded().scan);
    assert!(again.is_err(), "{again:?}");
    assert_kept(env, f, "without following a symlink");
    assert_eq!(fs::read(&outside).unwrap(), content);

    // Another real directory at the same place, holding the same names.
    fs::remove_file(root.join("a")).unwrap();
    fs::create_dir_all(root.join("a/b")).unwrap();
    fs::write(&lock, content).unwrap();
    assert_kept(env, f, "not the directory that was scanned");
    assert!(lock.exists());

    // Put back, the judged file is reclaimed.
    fs::remove_dir_all(root.join("a")).unwrap();
    fs::rename(env.path().join("a.orig"), root.join("a")).unwrap();
    let o = reclaim_one(f, &options(env));
    assert_eq!(o.action, Action::Removed, "{o:?}");
    assert!(!lock.exists());
    assert_eq!(fs::read(&outside).unwrap(), content);
    assert!(env.journal().iter().all(|l| l["event"] != "reclaim-failed"));
    // Nothing is left beside it under a private name.
    assert_eq!(fs::read_dir(root.join("a/b")).unwrap().count(), 0);
}

#[test]
fn a_directory_swapped_after_the_scan_is_refused() {
    let env = Env::new();
    let content = format!("{}\n", dead_pid());
    swapped_directory_is_refused(&env, "svc.pid", content.as_bytes(), "pidfile");
}

/// The same through the engine's protocol, for a lock of our own dialect left by a crash.
#[test]
fn a_directory_swapped_after_the_scan_is_refused_for_our_own_locks() {
    let env = Env::new();
    let made = env.path().join("made.lock");
    let mut holder = hold_with_cli(&made, &[]);
    holder.kill();
    let record = fs::read(&made).unwrap();
    fs::remove_file(&made).unwrap();
    swapped_directory_is_refused(&env, "job.lock", &record, "locksmith");
}

/// A lock that is not proven stale is removed only when a person names it with `--force`:
/// one lock by its own path (never a directory to scan), never a live one; copied, journaled
/// as forced, and restorable.
#[test]
fn force_removes_one_named_lock_that_is_not_proven_stale() {
    let env = Env::new();
    let locks = env.path().join("locks");
    let lock = locks.join("job.lock");
    std::fs::create_dir_all(&lock).unwrap();
    // Not proven stale: a batch reclaim keeps it.
    let out = env.run(["--scan".as_ref(), "--reclaim".as_ref(), locks.as_os_str()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(lock.is_dir());
    // A directory to scan is never forced.
    let out = env.run([
        "--scan".as_ref(),
        "--reclaim".as_ref(),
        "--force".as_ref(),
        locks.as_os_str(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("forcing never scans"),
        "{}",
        stderr(&out)
    );
    assert!(lock.is_dir());
    // Named by its own path: removed, on the person's word.
    let out = env.run([
        "--scan".as_ref(),
        "--reclaim".as_ref(),
        "--force".as_ref(),
        lock.as_os_str(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!lock.exists());
    let journal = env.journal();
    let entry = journal.last().unwrap();
    assert_eq!(entry["verdict"], "unknown");
    assert_eq!(entry["forced"], true);
    assert!(entry.get("proofs").is_none(), "{entry}");
    let out = env.run(["restore", "--last-batch"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(lock.is_dir());
    // Never a live lock, forced or not.
    let holder = sleeper();
    let live = write(&locks.join("app.pid"), format!("{}\n", holder.pid()));
    let out = env.run([
        "--scan".as_ref(),
        "--reclaim".as_ref(),
        "--force".as_ref(),
        live.as_os_str(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(live.exists());
}
