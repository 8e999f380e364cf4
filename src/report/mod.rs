//! The report: what one scan found, as a model ([`Report`]) with two views, the JSON document
//! of `report.schema.json` ([`Report::write_json`]) and the `lslocks`-style table
//! ([`table`]).
//!
//! Invariants: findings are sorted stale first (then by verdict, then by path); the model
//! keeps raw text, and every string that came from outside (paths, lock content, process
//! names, evidence) goes through [`crate::text::escape`] exactly once when the table writes it;
//! the JSON document carries the real text (serde_json escapes control characters, and
//! [`crate::text::terminal_safe_json`] the invisible formatting characters when stdout is a
//! terminal), so neither view can carry a raw escape sequence.

pub mod json;
pub mod prometheus;
pub mod table;
pub mod waiting;

use std::path::PathBuf;
use std::time::Duration;

use crate::outcome::Outcome;
use crate::probe::HostFacts;
use crate::scan::{Finding, ScanError};
use crate::verdict::Verdict;

/// Everything one scan (and optionally one reclaim pass) produced.
#[derive(Debug, Clone)]
pub struct Report {
    pub host: HostFacts,
    /// The roots that were scanned.
    pub roots: Vec<PathBuf>,
    /// Sorted by [`sort_findings`].
    pub findings: Vec<Finding>,
    pub errors: Vec<ScanError>,
    /// Directory entries walked.
    pub entries: u64,
    pub elapsed: Duration,
    /// "Now" for ages, in ms since the epoch (the snapshot time).
    pub now_ms: i64,
    /// Present after `--reclaim`.
    pub reclaimed: Option<Vec<Outcome>>,
    /// Who waits for each lock, and its holder's state, by path (locks with nothing to say
    /// are left out).
    pub waiting: std::collections::HashMap<PathBuf, waiting::Waiting>,
}

/// Counts per verdict (serialized as the JSON summary's fields of the same names).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Counts {
    pub locks: u64,
    pub live: u64,
    pub stale: u64,
    pub free: u64,
    pub foreign: u64,
    pub unknown: u64,
}

impl Counts {
    pub fn of(verdicts: impl IntoIterator<Item = Verdict>) -> Self {
        let mut c = Counts::default();
        for v in verdicts {
            c.locks += 1;
            *c.get_mut(v) += 1;
        }
        c
    }

    pub fn get(&self, v: Verdict) -> u64 {
        match v {
            Verdict::Live => self.live,
            Verdict::Stale => self.stale,
            Verdict::Free => self.free,
            Verdict::Foreign => self.foreign,
            Verdict::Unknown => self.unknown,
        }
    }

    fn get_mut(&mut self, v: Verdict) -> &mut u64 {
        match v {
            Verdict::Live => &mut self.live,
            Verdict::Stale => &mut self.stale,
            Verdict::Free => &mut self.free,
            Verdict::Foreign => &mut self.foreign,
            Verdict::Unknown => &mut self.unknown,
        }
    }
}

impl Report {
    /// A report of one scan; sorts the findings and the errors.
    pub fn new(
        host: HostFacts,
        roots: Vec<PathBuf>,
        mut findings: Vec<Finding>,
        mut errors: Vec<ScanError>,
        entries: u64,
        elapsed: Duration,
        now_ms: i64,
    ) -> Self {
        sort_findings(&mut findings);
        errors.sort_by(|a, b| a.path().cmp(b.path()));
        Report {
            host,
            roots,
            findings,
            errors,
            entries,
            elapsed,
            now_ms,
            reclaimed: None,
            waiting: Default::default(),
        }
    }

    /// Adds who waits for each lock, and its holder's state ([`waiting::of_all`]).
    pub fn with_waiting(
        mut self,
        waiting: std::collections::HashMap<PathBuf, waiting::Waiting>,
    ) -> Self {
        self.waiting = waiting;
        self
    }

    /// The waiters and holder state of one finding (empty when none are known).
    pub fn waiting_of(&self, f: &Finding) -> Option<&waiting::Waiting> {
        self.waiting.get(&f.path)
    }

    /// Adds the results of a reclaim pass.
    pub fn with_reclaimed(mut self, outcomes: Vec<Outcome>) -> Self {
        self.reclaimed = Some(outcomes);
        self
    }

    pub fn counts(&self) -> Counts {
        Counts::of(self.findings.iter().map(|f| f.judgement.verdict()))
    }

    /// Stale locks that are still in place: found stale and, when a reclaim pass ran, not
    /// removed by it (a dry run removes nothing).
    pub fn stale_remaining(&self) -> usize {
        let stale = self
            .findings
            .iter()
            .filter(|f| f.judgement.verdict() == Verdict::Stale);
        match &self.reclaimed {
            None => stale.count(),
            Some(outcomes) => {
                // One pass over each list: a set of the paths removed.
                let removed: std::collections::HashSet<&std::path::Path> = outcomes
                    .iter()
                    .filter(|o| o.action == crate::outcome::Action::Removed)
                    .map(|o| o.path.as_path())
                    .collect();
                stale
                    .filter(|f| !removed.contains(f.path.as_path()))
                    .count()
            }
        }
    }
}

/// The report order: stale first, then live, foreign, unknown, free; by path within a verdict.
pub fn sort_findings(findings: &mut [Finding]) {
    findings.sort_by(|a, b| {
        verdict_rank(a.judgement.verdict())
            .cmp(&verdict_rank(b.judgement.verdict()))
            .then_with(|| a.path.cmp(&b.path))
    });
}

fn verdict_rank(v: Verdict) -> usize {
    Verdict::ALL.iter().position(|x| *x == v).unwrap_or(0)
}

/// Age of a file with mtime `modified_ms` at `now_ms`, in whole seconds (0 for a future mtime).
pub fn age_secs(modified_ms: i64, now_ms: i64) -> u64 {
    (now_ms.saturating_sub(modified_ms).max(0) / 1000) as u64
}

/// A human age: `3s`, `5m`, `2h`, `4d`.
pub fn human_age(secs: u64) -> String {
    match secs {
        s if s < 60 => format!("{s}s"),
        s if s < 3600 => format!("{}m", s / 60),
        s if s < 86_400 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86_400),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::dialect::{DialectId, EntryKind};
    use crate::judge::Judgement;
    use crate::probe::FsInfo;
    use crate::scan::Identity;

    pub(crate) fn finding(path: &str, dialect: &'static str, j: Judgement) -> Finding {
        Finding {
            path: PathBuf::from(path),
            dialect: DialectId::named(dialect),
            kind: EntryKind::File,
            size: Some(6),
            modified_ms: Some(1_700_000_000_000),
            identity: Identity {
                dev: 1,
                ino: 2,
                size: 6,
                mtime_ns: 0,
                ctime_ns: 0,
            },
            fs: FsInfo::unknown(),
            judgement: j,
            content: b"4242\n".to_vec(),
            link_target: None,
            anchor: None,
        }
    }

    #[test]
    fn sorts_stale_first_then_by_path() {
        let mut v = vec![
            finding("/b", "pidfile", Judgement::live("x")),
            finding("/c", "pidfile", Judgement::stale_for_test("x")),
            finding("/a", "pidfile", Judgement::free("x")),
            finding("/a2", "pidfile", Judgement::stale_for_test("x")),
        ];
        sort_findings(&mut v);
        let order: Vec<_> = v.iter().map(|f| f.path.to_str().unwrap()).collect();
        assert_eq!(order, ["/a2", "/c", "/b", "/a"]);
    }

    #[test]
    fn human_ages() {
        assert_eq!(human_age(3), "3s");
        assert_eq!(human_age(59), "59s");
        assert_eq!(human_age(5 * 60 + 7), "5m");
        assert_eq!(human_age(2 * 3600 + 5), "2h");
        assert_eq!(human_age(4 * 86_400 + 3600), "4d");
        assert_eq!(age_secs(10_000, 5_000), 0);
        assert_eq!(age_secs(1_000, 4_999), 3);
    }

    #[test]
    fn counts_per_verdict() {
        let c = Counts::of([Verdict::Stale, Verdict::Stale, Verdict::Free]);
        assert_eq!((c.locks, c.stale, c.free, c.live), (3, 2, 1, 0));
    }
}
