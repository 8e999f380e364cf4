//! Judging one path as reclaim and the UI do (`scan::judge_path` with the embedded
//! configuration), with assertions that print the whole judgement when they fail. Every
//! judgement is made with a [`Snap`]: on a quiet host, with a snapshot younger than the
//! fixture (see [`super::quiet`]).

use std::path::Path;

use locksmith::config::Settings;
use locksmith::scan::{self, Config, Finding};
use locksmith::{HolderHow, Verdict};

use super::quiet::{Snap, snapshot};

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
