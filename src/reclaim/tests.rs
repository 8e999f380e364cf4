//! The reclaim pass on real files, each lock judged again by a judge of the test's own.

use std::fs;
use std::os::unix::ffi::OsStrExt;

use super::*;
use crate::dialect::{DialectId, EntryKind};
use crate::judge::Judgement;
use crate::probe::FsInfo;
use crate::scan::Anchor;
use crate::verdict::Verdict;

/// A judge of the test's own: the lock is what `rejudge` says it is now.
struct Says<F>(F, Windows);

impl<F> Judge for Says<F>
where
    F: Fn(BorrowedFd<'_>, &OsStr) -> Result<Option<Finding>, ScanError>,
{
    fn windows(&self) -> &Windows {
        &self.1
    }

    fn judge_at(
        &self,
        dir: BorrowedFd<'_>,
        name: &OsStr,
        _finding: &Finding,
        _snap: &Snapshot,
    ) -> Result<Option<Finding>, ScanError> {
        (self.0)(dir, name)
    }
}

/// Reclaims `finding` alone, judged again at the moment of removal by `rejudge`.
fn reclaim_rejudged(
    finding: &Finding,
    opts: &ReclaimOptions,
    windows: &Windows,
    rejudge: impl Fn(BorrowedFd<'_>, &OsStr) -> Result<Option<Finding>, ScanError>,
) -> Outcome {
    let judge = Says(rejudge, windows.clone());
    let mut out = None;
    Reclaim::new(&judge)
        .options(opts.clone())
        .run([finding], |o| out = Some(o));
    out.expect("one outcome per lock")
}

/// A finding for `path` as it is on disk now, with the given verdict (what a judge would
/// return; the judging itself is the scanner's and is tested there).
fn found(path: &Path, verdict: Verdict) -> Finding {
    let meta = crate::probe::Stat::from(fs::symlink_metadata(path).unwrap());
    Finding {
        path: path.to_path_buf(),
        dialect: DialectId::PIDFILE,
        kind: EntryKind::of(&meta),
        size: Some(meta.len()),
        modified_ms: Some(crate::probe::mtime_ms(&meta)),
        identity: meta.identity(),
        fs: FsInfo::unknown(),
        judgement: Judgement::for_test(verdict, "test verdict"),
        content: Vec::new(),
        link_target: None,
        anchor: None,
    }
}

fn opts(dir: &Path) -> ReclaimOptions {
    ReclaimOptions {
        state_dir: dir.join("state"),
        dry_run: false,
        include_unsaved: false,
        force: false,
        copies: CopyLimits::default(),
        remove_uncopied: false,
    }
}

fn journal(dir: &Path) -> Vec<serde_json::Value> {
    fs::read_to_string(dir.join("state").join(JOURNAL))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn removes_a_stale_file_after_saving_and_journaling_it() {
    let t = tempfile::tempdir().unwrap();
    let lock = t.path().join("x.pid");
    fs::write(&lock, "999999\n").unwrap();
    let f = found(&lock, Verdict::Stale);
    let o = reclaim_rejudged(&f, &opts(t.path()), &Windows::default(), |_, _| {
        Ok(Some(found(&f.path, Verdict::Stale)))
    });
    assert_eq!((o.ok, o.action), (true, Action::Removed), "{o:?}");
    assert!(!lock.exists());
    let saved = o.saved_to.unwrap();
    assert_eq!(fs::read(&saved).unwrap(), b"999999\n");
    let j = journal(t.path());
    assert_eq!(j.len(), 1);
    assert_eq!(j[0]["event"], "reclaim");
    assert_eq!(j[0]["path"], lock.to_str().unwrap());
    assert_eq!(j[0]["verdict"], "stale");
    assert_eq!(j[0]["sha256"], sha256_hex(b"999999\n"));
    assert_eq!(j[0]["saved_to"], saved.to_str().unwrap());
}

#[test]
fn keeps_what_is_not_stale_now() {
    let t = tempfile::tempdir().unwrap();
    let lock = t.path().join("x.pid");
    fs::write(&lock, "1\n").unwrap();
    let f = found(&lock, Verdict::Stale);
    for now in [
        Verdict::Live,
        Verdict::Free,
        Verdict::Unknown,
        Verdict::Foreign,
    ] {
        let o = reclaim_rejudged(&f, &opts(t.path()), &Windows::default(), |_, _| {
            Ok(Some(found(&lock, now)))
        });
        assert_eq!((o.ok, o.action), (false, Action::Kept));
        assert_eq!(o.judgement.verdict(), now);
        assert!(o.error.unwrap().contains(now.as_str()));
    }
    let o = reclaim_rejudged(&f, &opts(t.path()), &Windows::default(), |_, _| Ok(None));
    assert_eq!(o.action, Action::Kept);
    assert!(lock.exists());
    assert!(journal(t.path()).is_empty());
}

#[test]
fn foreign_only_with_force() {
    let t = tempfile::tempdir().unwrap();
    let lock = t.path().join("x.pid");
    fs::write(&lock, "1\n").unwrap();
    let f = found(&lock, Verdict::Foreign);
    let mut o = opts(t.path());
    o.force = true;
    let out = reclaim_rejudged(&f, &o, &Windows::default(), |_, _| {
        Ok(Some(found(&f.path, Verdict::Foreign)))
    });
    assert_eq!(out.action, Action::Removed);
    assert!(!lock.exists());
}

#[test]
fn refuses_a_replaced_or_rewritten_file() {
    let t = tempfile::tempdir().unwrap();
    let lock = t.path().join("x.pid");
    fs::write(&lock, "1\n").unwrap();
    let f = found(&lock, Verdict::Stale);
    // Replaced by another file (new inode) that a judge would also call stale.
    fs::write(t.path().join("new"), "2\n").unwrap();
    fs::rename(t.path().join("new"), &lock).unwrap();
    let o = reclaim_rejudged(&f, &opts(t.path()), &Windows::default(), |_, _| {
        Ok(Some(found(&f.path, Verdict::Stale)))
    });
    assert_eq!(o.action, Action::Kept);
    assert!(o.error.unwrap().contains("changed since it was judged"));
    assert_eq!(fs::read(&lock).unwrap(), b"2\n");
    // Rewritten in place (same inode, new size).
    let f = found(&lock, Verdict::Stale);
    fs::write(&lock, "12345\n").unwrap();
    let o = reclaim_rejudged(&f, &opts(t.path()), &Windows::default(), |_, _| {
        Ok(Some(found(&f.path, Verdict::Stale)))
    });
    assert_eq!(o.action, Action::Kept);
    assert!(lock.exists());
}

/// A file moved aside that fails a check (here: a kernel lock is held on it, which the
/// judge was told nothing about) is put back under its name; its reclaim line, on disk
/// before the removal was tried, is cancelled, and its copy deleted.
#[test]
fn a_file_moved_aside_that_fails_a_check_is_put_back() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("d");
    fs::create_dir(&dir).unwrap();
    let lock = dir.join("x.pid");
    fs::write(&lock, "1\n").unwrap();
    let held = fs::File::open(&lock).unwrap();
    rustix::fs::flock(&held, rustix::fs::FlockOperation::NonBlockingLockExclusive).unwrap();
    let f = found(&lock, Verdict::Stale);
    let o = reclaim_rejudged(&f, &opts(t.path()), &Windows::default(), |_, _| {
        Ok(Some(found(&lock, Verdict::Stale)))
    });
    assert_eq!(o.action, Action::Kept, "{o:?}");
    assert!(o.error.unwrap().contains("kernel lock"));
    let names: Vec<_> = fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, vec![std::ffi::OsString::from("x.pid")]);
    assert_eq!(fs::read(&lock).unwrap(), b"1\n");
    let j = journal(t.path());
    assert_eq!(j.len(), 2, "{j:?}");
    assert_eq!(j[0]["event"], "reclaim");
    assert_eq!(j[1]["event"], "reclaim-failed");
    assert_eq!(j[1]["cancels"], j[0]["id"]);
    assert!(
        j[1]["error"].as_str().unwrap().contains("kernel lock"),
        "{j:?}"
    );
    let saved = t.path().join("state").join(SAVED);
    assert_eq!(fs::read_dir(&saved).unwrap().count(), 0);
    let e = restore::plan(&t.path().join("state"), &Selector::LastRun).unwrap_err();
    assert!(e.contains("nothing to restore"), "{e}");
    drop(held);
    // The rename there and back moved its ctime: judged anew.
    let f = found(&lock, Verdict::Stale);
    let o = reclaim_rejudged(&f, &opts(t.path()), &Windows::default(), |_, _| {
        Ok(Some(found(&lock, Verdict::Stale)))
    });
    assert_eq!(o.action, Action::Removed, "{o:?}");
    assert_eq!(fs::read_dir(&dir).unwrap().count(), 0);
}

/// What a scan keeps of a stale lock gives back the finding a reclaim needs: its path,
/// identity (times to the nanosecond), kind, dialect and anchor, in the order kept.
#[test]
fn the_compact_list_gives_back_what_reclaim_needs() {
    let t = tempfile::tempdir().unwrap();
    let mut list = JudgedList::default();
    let mut kept = Vec::new();
    for (i, name) in ["a.pid", "b.pid", ".#c"].iter().enumerate() {
        let p = t.path().join(format!("d{}", i % 2)).join(name);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(&p, "1\n").unwrap();
        let mut f = found(&p, Verdict::Stale);
        if i > 0 {
            f.anchor = Some(Anchor::of_parent(&p).unwrap().0);
        }
        f.dialect = [DialectId::PIDFILE, DialectId::VIM_SWAP][i % 2];
        f.identity.mtime_ns = -1_500_000_001 + i as i128;
        list.push(&f);
        kept.push(f);
    }
    assert_eq!(list.len(), 3);
    for (a, b) in list.findings().zip(&kept) {
        assert_eq!(a.path, b.path);
        assert_eq!(a.identity, b.identity);
        assert_eq!((a.kind, a.dialect), (b.kind, b.dialect));
        assert_eq!(
            a.anchor.as_ref().map(|x| (x.root.clone(), x.chain())),
            b.anchor.as_ref().map(|x| (x.root.clone(), x.chain()))
        );
    }
    assert!(std::mem::size_of::<judged::Judged>() <= 96);
}

#[test]
fn dry_run_removes_nothing() {
    let t = tempfile::tempdir().unwrap();
    let lock = t.path().join("x.pid");
    fs::write(&lock, "1\n").unwrap();
    let mut o = opts(t.path());
    o.dry_run = true;
    let f = found(&lock, Verdict::Stale);
    let out = reclaim_rejudged(&f, &o, &Windows::default(), |_, _| {
        Ok(Some(found(&f.path, Verdict::Stale)))
    });
    assert_eq!((out.ok, out.action), (true, Action::WouldRemove));
    assert!(lock.exists());
    assert!(!t.path().join("state").exists());
}

#[test]
fn a_symlink_lock_is_removed_as_a_link_and_its_target_survives() {
    let t = tempfile::tempdir().unwrap();
    let target = t.path().join("precious");
    fs::write(&target, "keep me").unwrap();
    let lock = t.path().join(".#notes.txt");
    std::os::unix::fs::symlink(&target, &lock).unwrap();
    let f = found(&lock, Verdict::Stale);
    let o = reclaim_rejudged(&f, &opts(t.path()), &Windows::default(), |_, _| {
        Ok(Some(found(&f.path, Verdict::Stale)))
    });
    assert_eq!(o.action, Action::Removed, "{o:?}");
    assert!(fs::symlink_metadata(&lock).is_err());
    assert_eq!(fs::read(&target).unwrap(), b"keep me");
    assert_eq!(
        fs::read(o.saved_to.unwrap()).unwrap(),
        target.as_os_str().as_bytes()
    );
}

#[test]
fn a_lock_directory_goes_with_its_small_records_only() {
    let t = tempfile::tempdir().unwrap();
    let lock = t.path().join("job.lock");
    fs::create_dir(&lock).unwrap();
    let reclaim = || {
        let f = found(&lock, Verdict::Stale);
        reclaim_rejudged(&f, &opts(t.path()), &Windows::default(), |_, _| {
            Ok(Some(found(&f.path, Verdict::Stale)))
        })
    };
    let o = reclaim();
    assert_eq!(o.action, Action::Removed, "{o:?}");
    assert!(!lock.exists());

    // A record inside goes with it, into the journal line.
    fs::create_dir(&lock).unwrap();
    fs::write(lock.join("pid"), "4242\n").unwrap();
    let o = reclaim();
    assert_eq!(o.action, Action::Removed, "{o:?}");
    assert!(!lock.exists());
    let j = journal(t.path());
    let members = j.last().unwrap()["members"].as_array().unwrap().clone();
    assert_eq!(members.len(), 1, "{j:?}");
    assert_eq!(members[0]["name"], "pid");
    assert_eq!(members[0]["content"], "4242\n");

    // Anything else inside (a subdirectory: package metadata, not a lock's record): kept,
    // with no copy and no journal line.
    fs::create_dir_all(lock.join("registry")).unwrap();
    let o = reclaim();
    assert_eq!(o.action, Action::Kept, "{o:?}");
    assert!(lock.join("registry").is_dir());
    assert!(
        o.error
            .as_deref()
            .unwrap_or("")
            .contains("not a small record"),
        "{o:?}"
    );
    let j = journal(t.path());
    let reclaims = j.iter().filter(|e| e["event"] == "reclaim").count();
    assert_eq!(reclaims, 2, "{j:?}");
    let copies = fs::read_dir(t.path().join("state").join(SAVED))
        .unwrap()
        .count();
    assert_eq!(copies, 2);
}

#[test]
fn a_parent_symlink_in_last_position_is_not_followed() {
    let t = tempfile::tempdir().unwrap();
    let real = t.path().join("real");
    fs::create_dir(&real).unwrap();
    fs::write(real.join("x.pid"), "1\n").unwrap();
    std::os::unix::fs::symlink(&real, t.path().join("link")).unwrap();
    let via_link = t.path().join("link/x.pid");
    let f = found(&via_link, Verdict::Stale);
    let o = reclaim_rejudged(&f, &opts(t.path()), &Windows::default(), |_, _| {
        Ok(Some(found(&f.path, Verdict::Stale)))
    });
    assert_eq!(o.action, Action::Kept);
    assert!(o.error.unwrap().contains("cannot open the directory"));
    assert!(real.join("x.pid").exists());
}

#[test]
fn unsaved_vim_changes_are_kept_unless_asked() {
    let t = tempfile::tempdir().unwrap();
    let lock = t.path().join(".notes.txt.swp");
    let mut block0 = vec![0u8; 1024];
    block0[..9].copy_from_slice(b"b0VIM 9.0");
    let notes = t.path().join("notes.txt");
    let name = notes.as_os_str().as_encoded_bytes();
    block0[108..108 + name.len()].copy_from_slice(name);
    block0[1007] = 0x55;
    fs::write(&lock, &block0).unwrap();
    fs::write(&notes, "saved text").unwrap();
    let vim = |p: &Path| {
        let mut f = found(p, Verdict::Stale);
        f.dialect = DialectId::VIM_SWAP;
        f.judgement
            .flags
            .push(crate::dialect::vim_swap::unsaved(true));
        f.content = block0.clone();
        f
    };
    let f = vim(&lock);
    let o = reclaim_rejudged(&f, &opts(t.path()), &Windows::default(), |_, _| {
        Ok(Some(vim(&lock)))
    });
    assert_eq!(o.action, Action::Kept);
    let why = o.error.unwrap();
    assert!(why.contains("vim -r "), "{why}");
    assert!(why.contains(".notes.txt.swp`"), "{why}");
    let mut all = opts(t.path());
    all.include_unsaved = true;
    let o = reclaim_rejudged(&f, &all, &Windows::default(), |_, _| Ok(Some(vim(&lock))));
    assert_eq!(o.action, Action::Removed);
    assert!(!lock.exists());
}

#[test]
fn one_reclaim_gives_one_outcome_per_lock_in_order_after_its_settle_step() {
    let t = tempfile::tempdir().unwrap();
    let paths: Vec<PathBuf> = ["a.pid", "b.pid", "c.pid"]
        .iter()
        .map(|n| t.path().join(n))
        .collect();
    for p in &paths {
        fs::write(p, "999999\n").unwrap();
    }
    let locks: Vec<Finding> = paths.iter().map(|p| found(p, Verdict::Stale)).collect();
    let judge = Says(
        |_: BorrowedFd<'_>, name: &OsStr| Ok(Some(found(&t.path().join(name), Verdict::Stale))),
        Windows::default(),
    );
    // The settle step sees each fresh judgement and finds b's owner alive again.
    let settled = std::cell::RefCell::new(Vec::new());
    let mut outcomes = Vec::new();
    Reclaim::new(&judge)
        .options(opts(t.path()))
        .settle(|judged, fresh| {
            settled.borrow_mut().push(judged.path.clone());
            if judged.path.ends_with("b.pid") {
                fresh.judgement = Judgement::for_test(Verdict::Live, "its host says so");
            }
        })
        .run(&locks, |o| outcomes.push(o));
    assert_eq!(*settled.borrow(), paths);
    let got: Vec<_> = outcomes.iter().map(|o| (&o.path, o.action)).collect();
    assert_eq!(
        got,
        [
            (&paths[0], Action::Removed),
            (&paths[1], Action::Kept),
            (&paths[2], Action::Removed),
        ]
    );
    assert!(!paths[0].exists() && paths[1].exists() && !paths[2].exists());
    assert_eq!(journal(t.path()).len(), 2);
}
