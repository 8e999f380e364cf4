//! Judging one path as reclaim and the UI do (`scan::judge_path` with the embedded
//! configuration), with assertions that print the whole judgement when they fail. Every
//! judgement is made with a [`Snap`]: on a quiet host, with a snapshot younger than the
//! fixture (see [`super::quiet`]).

use std::path::Path;

use locksmith::config::Settings;
use locksmith::scan::{self, Config, Finding};
use locksmith::{HolderHow, Verdict};

use super::quiet::{Snap, recording, snapshot};
use locksmith::probe::evidence::{self, Answer};
use locksmith::probe::{Evidence, Snapshot, clock::Clock};

/// The findings of a real scan of `root` with the embedded configuration and a fresh
/// snapshot.
pub fn scan_findings(root: &Path) -> Vec<Finding> {
    let config = Settings::embedded().scan;
    let roots = config.roots(&[root.to_path_buf()]);
    let found = std::sync::Mutex::new(Vec::new());
    let sink = |e: scan::ScanEvent| {
        if let scan::ScanEvent::Found(f) = e {
            found.lock().unwrap().push(*f);
        }
    };
    let cancel = std::sync::atomic::AtomicBool::new(false);
    scan::scan(&config, &roots, &snapshot(), &cancel, &sink).unwrap();
    found.into_inner().unwrap()
}

/// Judges one path with a given snapshot, as `judge` does with a fresh one.
pub fn judge_in(path: &Path, snap: &Snap) -> Finding {
    judge_with(path, snap, &Settings::embedded().scan)
}

/// `scan::judge_path` with a [`Snap`], which must be younger than the file: how every test
/// judges a path (a test checks that none calls `scan::judge_path` itself).
pub fn try_judge(
    path: &Path,
    snap: &Snap,
    config: &Config,
) -> Result<Option<Finding>, scan::ScanError> {
    snap.assert_younger_than(path);
    scan::judge_path(path, snap, config)
}

/// Judges one path with a given snapshot and configuration.
pub fn judge_with(path: &Path, snap: &Snap, config: &Config) -> Finding {
    try_judge(path, snap, config)
        .unwrap_or_else(|e| panic!("{}: {e:?}", path.display()))
        .unwrap_or_else(|| panic!("{} was not taken for a lock", path.display()))
}

/// Judges one path as reclaim and the UI do: a fresh snapshot, the embedded config.
pub fn judge(path: &Path) -> Finding {
    judge_in(path, &snapshot())
}

/// `expect` with a given snapshot.
pub fn expect_in(snap: &Snap, path: &Path, dialect: &str, verdict: Verdict) -> Finding {
    let f = judge_in(path, snap);
    assert_eq!(f.dialect, dialect, "{}: {:#?}", path.display(), f.judgement);
    assert_eq!(
        f.judgement.verdict(),
        verdict,
        "{}: {:#?}",
        path.display(),
        f.judgement
    );
    assert!(!f.judgement.evidence.is_empty());
    f
}

/// Judges and checks the dialect and verdict, printing the whole judgement on failure.
pub fn expect(path: &Path, dialect: &str, verdict: Verdict) -> Finding {
    expect_in(&snapshot(), path, dialect, verdict)
}

/// Every evidence line, one per line.
pub fn evidence(f: &Finding) -> String {
    f.judgement.evidence.join("\n")
}

pub fn assert_evidence(f: &Finding, needle: &str) {
    let all = evidence(f);
    assert!(
        all.contains(needle),
        "evidence lacks {needle:?}:\n{all}\n{:#?}",
        f.judgement
    );
}

/// Asserts that this test process is listed among the holders, with the file open (not
/// locked).
pub fn assert_open_here(f: &Finding) {
    let me = std::process::id() as i32;
    assert!(
        f.judgement
            .holders
            .iter()
            .any(|h| h.pid == me && h.how == HolderHow::Open),
        "not listed as open by this process: {:#?}",
        f.judgement
    );
}

/// Judges `path` on this machine, keeping the evidence, then again from that evidence changed
/// by `change`: the facts a rule reads, as the test sets them (when the lock was written, the
/// clock, when it is judged, a process added). What a real program did stays as it did it;
/// only what the test names changes. Fails the test when the changed evidence leaves a
/// question of the judge unanswered.
pub fn judge_changed(path: &Path, change: impl FnOnce(&mut Evidence)) -> Finding {
    judge_changed_with(path, &Settings::embedded().scan, change)
}

/// [`judge_changed`] with a given configuration.
pub fn judge_changed_with(
    path: &Path,
    config: &Config,
    change: impl FnOnce(&mut Evidence),
) -> Finding {
    let snap = recording();
    judge_with(path, &snap, config);
    let mut ev = snap
        .evidence()
        .expect("a recording snapshot keeps its evidence");
    change(&mut ev);
    let key = evidence::path_key(path);
    let lock = ev
        .locks
        .iter()
        .rev()
        .find(|l| l.path == key)
        .cloned()
        .unwrap_or_else(|| panic!("{} was not recorded", path.display()));
    let replay = Snapshot::replay(ev);
    let f = scan::judge_recorded(&lock, &replay, config)
        .unwrap_or_else(|| panic!("{} is no lock in the changed evidence", path.display()));
    let misses = replay.replay_misses();
    assert!(
        misses.is_empty(),
        "the changed evidence does not answer {misses:?}: {:#?}",
        f.judgement
    );
    f
}

/// In `ev`: the file at `path` as if it had been written at `ms` (ms since the epoch) and not
/// changed since: its mtime and ctime (and birth) there, as the lock's status and as every
/// answer about it says.
pub fn written_at(ev: &mut Evidence, path: &Path, ms: i64) {
    let key = evidence::path_key(path);
    let set = |s: &mut locksmith::probe::Stat| {
        let t = (ms.div_euclid(1000), ms.rem_euclid(1000) * 1_000_000);
        s.mtime = t;
        s.ctime = t;
        s.birth_ms = s.birth_ms.map(|b| b.min(ms));
    };
    for l in ev.locks.iter_mut().filter(|l| l.path == key) {
        set(&mut l.stat);
    }
    for map in [&mut ev.lstat, &mut ev.stat] {
        if let Some(Answer::Ok(s)) = map.get_mut(&key) {
            set(s);
        }
    }
}

/// In `ev`: the file at `path` written `secs` seconds before the evidence was taken.
#[allow(dead_code)]
pub fn written_ago(ev: &mut Evidence, path: &Path, secs: i64) {
    let ms = ev.taken_ms - secs * 1000;
    written_at(ev, path, ms);
}

/// In `ev`: the file at `path` written `secs` seconds before this host booted.
#[allow(dead_code)]
pub fn written_before_boot(ev: &mut Evidence, path: &Path, secs: i64) {
    let boot = ev.host.boot_time.expect("the boot time") * 1000;
    written_at(ev, path, boot - secs * 1000);
}

/// In `ev`: a wall clock known not to have stepped since this boot began (whatever this
/// machine's did).
pub fn steady(ev: &mut Evidence) {
    ev.clock = Some(Clock::steady());
}

/// In `ev`: this host booted `secs` seconds before the evidence was taken (whenever this
/// machine really booted): every time the test gives after that is of this boot.
pub fn booted_ago(ev: &mut Evidence, secs: i64) {
    ev.host.boot_time = Some(ev.taken_ms / 1000 - secs);
}

/// In `ev`: the start time (ms since the epoch) of process `pid`, as the evidence says.
pub fn started_ms(ev: &Evidence, pid: i32) -> i64 {
    ev.pids
        .get(&pid)
        .and_then(|s| s.facts())
        .and_then(|f| f.start_ms)
        .unwrap_or_else(|| panic!("no start time of process {pid} in the evidence"))
}
