//! The report: what one scan found, as a model ([`Report`]) with two views, the JSON document
//! of `report.schema.json` ([`Report::write_json`]) and the `lslocks`-style table
//! ([`table`]).
//!
//! Invariants: findings are sorted stale first (then by verdict, then by path); every string
//! that came from outside (paths, lock content, process names) goes through [`escape`] before
//! it reaches a terminal, and the JSON writer escapes every control and invisible formatting
//! character, so neither view can carry a raw escape sequence.

pub mod escape;
pub mod json;
pub mod prometheus;
pub mod table;

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::dialect::DialectId;
use crate::probe::HostFacts;
use crate::reclaim::Outcome;
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
}

/// Counts per verdict.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
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
        }
    }

    /// Adds the results of a reclaim pass.
    pub fn with_reclaimed(mut self, outcomes: Vec<Outcome>) -> Self {
        self.reclaimed = Some(outcomes);
        self
    }

    pub fn counts(&self) -> Counts {
        Counts::of(self.findings.iter().map(|f| f.judgement.verdict))
    }

    /// Stale locks that are still in place: found stale and, when a reclaim pass ran, not
    /// removed by it (a dry run removes nothing).
    pub fn stale_remaining(&self) -> usize {
        let stale = self
            .findings
            .iter()
            .filter(|f| f.judgement.verdict == Verdict::Stale);
        match &self.reclaimed {
            None => stale.count(),
            Some(outcomes) => {
                // One pass over each list: a set of the paths removed.
                let removed: std::collections::HashSet<&std::path::Path> = outcomes
                    .iter()
                    .filter(|o| o.action == crate::reclaim::Action::Removed)
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
        verdict_rank(a.judgement.verdict)
            .cmp(&verdict_rank(b.judgement.verdict))
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

/// For a vim swap file that holds unsaved changes: the command that recovers them, e.g.
/// `vim -r /home/me/notes.txt`. The file named is the one the swap protects when it can be
/// found (`.notes.txt.swp` beside `notes.txt`, or `%home%me%notes.txt.swp` in a `directory//`
/// swap directory), else the swap file itself (`vim -r` accepts both). Terminal-safe
/// (escaped) and shell-quoted when needed.
pub fn vim_recover_hint(finding: &Finding) -> Option<String> {
    // Advice follows the verdict: recovery is for a swap file whose vim is gone.
    if finding.dialect != DialectId::VIM_SWAP
        || finding.judgement.unsaved_changes != Some(true)
        || finding.judgement.verdict != crate::verdict::Verdict::Stale
    {
        return None;
    }
    let target = vim_swap_original(&finding.path)
        .filter(|p| p.symlink_metadata().is_ok())
        .unwrap_or_else(|| finding.path.clone());
    Some(format!(
        "vim -r {}",
        shell_quote(&escape::display_path(&target))
    ))
}

/// `dir/.name.swp` → `dir/name`; `dir/name.swp` → `dir/name`; `dir/%a%b%name.swp` →
/// `/a/b/name` (the full-path names of a `directory//` setting).
fn vim_swap_original(swap: &Path) -> Option<PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    let name = swap.file_name()?.as_bytes();
    let stem = name.get(..name.len().checked_sub(4)?)?;
    let ext = &name[stem.len()..];
    if !(ext.len() == 4 && ext.starts_with(b".sw") && (b'a'..=b'p').contains(&ext[3])) {
        return None;
    }
    if stem.starts_with(b"%") {
        let full: Vec<u8> = stem
            .iter()
            .map(|&b| if b == b'%' { b'/' } else { b })
            .collect();
        return Some(PathBuf::from(std::ffi::OsStr::from_bytes(&full)));
    }
    let stem = stem.strip_prefix(b".").unwrap_or(stem);
    if stem.is_empty() {
        return None;
    }
    Some(swap.with_file_name(std::ffi::OsStr::from_bytes(stem)))
}

/// Quotes a (display-escaped) string for a POSIX shell when it needs it.
fn shell_quote(s: &str) -> String {
    let plain = s
        .chars()
        .all(|c| c.is_alphanumeric() || "/._-+,:@%=".contains(c));
    if plain && !s.is_empty() {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::dialect::EntryKind;
    use crate::probe::FsInfo;
    use crate::scan::Identity;
    use crate::verdict::Judgement;

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
            finding("/b", "pidfile", Judgement::new(Verdict::Live, "x")),
            finding("/c", "pidfile", Judgement::new(Verdict::Stale, "x")),
            finding("/a", "pidfile", Judgement::new(Verdict::Free, "x")),
            finding("/a2", "pidfile", Judgement::new(Verdict::Stale, "x")),
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
    fn vim_hint_names_the_protected_file_when_it_exists() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().to_str().unwrap();
        std::fs::write(t.path().join("notes.txt"), "x").unwrap();
        std::fs::write(t.path().join("my notes"), "x").unwrap();
        let mut j = Judgement::new(Verdict::Stale, "gone");
        j.unsaved_changes = Some(true);
        let hint = |swap: &str| vim_recover_hint(&finding(swap, "vim-swap", j.clone()));
        assert_eq!(
            hint(&format!("{dir}/.notes.txt.swp")),
            Some(format!("vim -r {dir}/notes.txt"))
        );
        assert_eq!(
            hint(&format!("{dir}/my notes.swo")),
            Some(format!("vim -r '{dir}/my notes'"))
        );
        let encoded = format!("{dir}/notes.txt").replace('/', "%");
        assert_eq!(
            hint(&format!("/var/swap/{encoded}.swp")),
            Some(format!("vim -r {dir}/notes.txt"))
        );
        // No such file: the swap file itself.
        assert_eq!(
            hint(&format!("{dir}/.gone.txt.swp")),
            Some(format!("vim -r {dir}/.gone.txt.swp"))
        );
        assert_eq!(hint("/tmp/.swp"), Some("vim -r /tmp/.swp".into()));
        // A swap whose vim runs: nothing to recover (advice follows the verdict).
        let mut running = j.clone();
        running.verdict = Verdict::Live;
        assert_eq!(
            vim_recover_hint(&finding(
                &format!("{dir}/.notes.txt.swp"),
                "vim-swap",
                running
            )),
            None
        );
        let mut saved = j.clone();
        saved.unsaved_changes = Some(false);
        assert_eq!(
            vim_recover_hint(&finding(
                &format!("{dir}/.notes.txt.swp"),
                "vim-swap",
                saved
            )),
            None
        );
    }

    #[test]
    fn counts_per_verdict() {
        let c = Counts::of([Verdict::Stale, Verdict::Stale, Verdict::Free]);
        assert_eq!((c.locks, c.stale, c.free, c.live), (3, 2, 1, 0));
    }
}
