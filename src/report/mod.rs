//! The report of one scan (and optionally one reclaim pass), written as the scan goes: a
//! [`Report`] takes each lock as soon as it is judged and hands it to the [`Writer`] of the
//! chosen [`Format`]: the JSON document of `report.schema.json` ([`json`]), the
//! `lslocks`-style table ([`table`]) or the Prometheus metrics ([`prometheus`]). All three have
//! the one signature of [`Writer`], and are made by [`writer`].
//!
//! Memory: a writer keeps per lock only what its format still has to write once the scan is
//! over. The JSON document is written as the locks come (its `summary` after them), so it
//! keeps nothing; the metrics keep counts and the bounded set of per-lock age series; the
//! table, which is sorted and aligned, keeps one compact [`table::Row`] per lock, with the
//! repeated text of its cells (commands, hosts) shared.
//!
//! Invariants: the table is sorted stale first (then by verdict, then by path); the JSON
//! document lists the locks in the order they were judged. The model keeps raw text, and
//! every string that came from outside (paths, lock content, process names, evidence) goes
//! through [`crate::text::escape`] exactly once when the table writes it; the JSON document
//! carries the real text (serde_json escapes control characters, and
//! [`crate::text::terminal_safe_json`] the invisible formatting characters), so neither view
//! can carry a raw escape sequence. The verdict filter ([`Options::verdicts`]) chooses which
//! locks and reclaim outcomes are listed; the counts of the summary are of every lock found.

pub mod json;
pub mod prometheus;
pub mod table;
pub mod waiting;

use std::io::{self, Write};
use std::path::PathBuf;
use std::time::Duration;

use crate::outcome::{Action, Outcome};
use crate::probe::HostFacts;
use crate::scan::{Finding, ScanError};
use crate::verdict::Verdict;

pub use table::{Column, Row};
pub use waiting::Waiting;

/// The formats of the report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// A table for people, with a summary line.
    Table,
    /// One JSON document (`report.schema.json`).
    Json,
    /// Prometheus text exposition format.
    Prometheus,
}

/// What a report knows before the first lock.
#[derive(Debug, Clone)]
pub struct Head {
    pub host: HostFacts,
    /// The roots that are scanned.
    pub roots: Vec<PathBuf>,
    /// "Now" for ages, in ms since the epoch (the snapshot time).
    pub now_ms: i64,
    /// Whether a reclaim pass follows the scan (the report then says what it did).
    pub reclaim: bool,
}

/// What a report knows once the scan is over.
#[derive(Debug, Clone, Copy)]
pub struct Scanned<'a> {
    /// Directory entries walked.
    pub entries: u64,
    /// How long the scan took (walking, judging, asking hosts).
    pub elapsed: Duration,
    /// The per-path errors, sorted by path.
    pub errors: &'a [ScanError],
}

/// What a report knows at its end: the numbers of the summary.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tail {
    pub entries: u64,
    pub elapsed: Duration,
    /// Every lock found, by verdict (whatever the verdict filter lists).
    pub counts: Counts,
    pub errors: u64,
    /// Locks a flag keeps from reclaim that offer an action (unsaved changes to recover).
    pub unsaved: u64,
    /// The flag and action of the first of them, in whose words the summary counts them.
    pub flagged: Option<(crate::verdict::Flag, crate::dialect::Action)>,
    /// Present after a reclaim pass.
    pub reclaim: Option<ReclaimCounts>,
}

impl Tail {
    /// Stale locks that are still in place: found stale and, when a reclaim pass ran, not
    /// removed by it (a dry run removes nothing).
    pub fn stale_remaining(&self) -> u64 {
        let removed = self.reclaim.map_or(0, |r| r.removed);
        self.counts.stale.saturating_sub(removed)
    }
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
            c.add(v);
        }
        c
    }

    /// Counts one more lock.
    pub fn add(&mut self, v: Verdict) {
        self.locks += 1;
        *self.get_mut(v) += 1;
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

/// What a reclaim pass did, in numbers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReclaimCounts {
    pub removed: u64,
    pub would_remove: u64,
    pub kept: u64,
}

impl ReclaimCounts {
    pub fn add(&mut self, a: Action) {
        match a {
            Action::Removed => self.removed += 1,
            Action::WouldRemove => self.would_remove += 1,
            Action::Kept => self.kept += 1,
        }
    }

    pub fn get(&self, a: Action) -> u64 {
        match a {
            Action::Removed => self.removed,
            Action::WouldRemove => self.would_remove,
            Action::Kept => self.kept,
        }
    }
}

/// A set of verdicts: which locks a report lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Verdicts(u8);

impl Verdicts {
    /// Every verdict (no filter).
    pub const ALL: Verdicts = Verdicts(0b1_1111);

    pub fn contains(self, v: Verdict) -> bool {
        self.0 & Self::bit(v) != 0
    }

    /// The verdicts of the set, in [`Verdict::ALL`]'s order.
    pub fn iter(self) -> impl Iterator<Item = Verdict> {
        Verdict::ALL.into_iter().filter(move |v| self.contains(*v))
    }

    fn bit(v: Verdict) -> u8 {
        1 << verdict_rank(v)
    }
}

impl Default for Verdicts {
    fn default() -> Self {
        Verdicts::ALL
    }
}

impl FromIterator<Verdict> for Verdicts {
    fn from_iter<I: IntoIterator<Item = Verdict>>(iter: I) -> Self {
        Verdicts(iter.into_iter().fold(0, |m, v| m | Verdicts::bit(v)))
    }
}

/// How a report is written (what the command line chose).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// Which locks (and reclaim outcomes) are listed.
    pub verdicts: Verdicts,
    /// The table's columns, in order.
    pub columns: Vec<Column>,
    /// The table's header line.
    pub headings: bool,
    /// The table without alignment, one line per lock, its fields escaped so that each is
    /// one word (no summary, no notes).
    pub raw: bool,
    /// ANSI color on the table's verdicts.
    pub color: bool,
    /// At most this many per-lock series in the metrics.
    pub max_lock_series: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            verdicts: Verdicts::ALL,
            columns: Column::DEFAULT.to_vec(),
            headings: true,
            raw: false,
            color: false,
            max_lock_series: prometheus::DEFAULT_MAX_LOCK_SERIES,
        }
    }
}

/// One writer per format, with one signature: the report's parts in the order they are
/// known. A writer writes (or keeps) what its format needs of each part as it comes.
pub trait Writer: Send {
    /// A lock, judged (one the verdict filter lists), with who waits for it and its
    /// holder's state.
    fn lock(&mut self, f: &Finding, waiting: &Waiting) -> io::Result<()>;
    /// The scan is over: no more locks.
    fn scanned(&mut self, scan: &Scanned<'_>) -> io::Result<()>;
    /// What the reclaim pass did with one lock (one the verdict filter lists).
    fn reclaimed(&mut self, o: &Outcome) -> io::Result<()>;
    /// The end of the report.
    fn finish(&mut self, tail: &Tail) -> io::Result<()>;
}

/// The writer of `format`, writing to `out`; a table without headings writes what is not
/// a row (notes, reclaim lines, the summary) to `side`, when given.
pub fn writer<'a>(
    format: Format,
    head: Head,
    opts: &Options,
    out: impl Write + Send + 'a,
    side: Option<Box<dyn Write + Send + 'a>>,
) -> Box<dyn Writer + 'a> {
    match format {
        Format::Table => Box::new(table::Writer::with_side(head, opts, out, side)),
        Format::Json => Box::new(json::Writer::new(head, opts, out)),
        Format::Prometheus => Box::new(prometheus::Writer::new(head, opts, out)),
    }
}

/// A report being written: counts every lock and reclaim outcome for the summary, and hands
/// those the verdict filter lists to the format's [`Writer`]. A write that fails stops the
/// writing (the counting goes on): [`Report::failure`] tells, [`Report::finish`] returns it.
pub struct Report<'a> {
    writer: Box<dyn Writer + 'a>,
    verdicts: Verdicts,
    counts: Counts,
    unsaved: u64,
    flagged: Option<(crate::verdict::Flag, crate::dialect::Action)>,
    reclaim: Option<ReclaimCounts>,
    entries: u64,
    elapsed: Duration,
    errors: u64,
    failed: Option<io::Error>,
}

impl<'a> Report<'a> {
    /// A report in `format` to `out`.
    pub fn new(
        format: Format,
        head: Head,
        opts: &Options,
        out: impl Write + Send + 'a,
    ) -> Report<'a> {
        Self::with_side(format, head, opts, out, None)
    }

    /// A report in `format` to `out`, whose table without headings writes its rows alone
    /// there and what is not a row to `side` (see [`table`]).
    pub fn with_side(
        format: Format,
        head: Head,
        opts: &Options,
        out: impl Write + Send + 'a,
        side: Option<Box<dyn Write + Send + 'a>>,
    ) -> Report<'a> {
        let reclaim = head.reclaim.then(ReclaimCounts::default);
        Report {
            writer: writer(format, head, opts, out, side),
            verdicts: opts.verdicts,
            counts: Counts::default(),
            unsaved: 0,
            flagged: None,
            reclaim,
            entries: 0,
            elapsed: Duration::ZERO,
            errors: 0,
            failed: None,
        }
    }

    fn write(&mut self, w: impl FnOnce(&mut dyn Writer) -> io::Result<()>) {
        if self.failed.is_none()
            && let Err(e) = w(self.writer.as_mut())
        {
            self.failed = Some(e);
        }
    }

    /// The verdicts whose locks are listed (only those need their [`Waiting`]).
    pub fn listed(&self) -> Verdicts {
        self.verdicts
    }

    /// A lock found and judged, with who waits for it and its holder's state
    /// ([`waiting::of`]; empty when not listed).
    pub fn lock(&mut self, f: &Finding, waiting: &Waiting) {
        let v = f.judgement.verdict();
        self.counts.add(v);
        if let Some(o) =
            crate::dialect::offered_before_reclaim(f.dialect, &f.path, &f.content, &f.judgement)
        {
            self.unsaved += 1;
            self.flagged.get_or_insert((o.flag, o.action));
        }
        if self.verdicts.contains(v) {
            self.write(|w| w.lock(f, waiting));
        }
    }

    /// The scan is over.
    pub fn scanned(&mut self, scan: &Scanned<'_>) {
        self.entries = scan.entries;
        self.elapsed = scan.elapsed;
        self.errors = scan.errors.len() as u64;
        self.write(|w| w.scanned(scan));
    }

    /// What the reclaim pass did with one lock.
    pub fn reclaimed(&mut self, o: &Outcome) {
        self.reclaim.get_or_insert_default().add(o.action);
        if self.verdicts.contains(o.judgement.verdict()) {
            self.write(|w| w.reclaimed(o));
        }
    }

    /// The counts so far.
    pub fn counts(&self) -> Counts {
        self.counts
    }

    /// The write that failed, if one did (nothing more is written).
    pub fn failure(&self) -> Option<&io::Error> {
        self.failed.as_ref()
    }

    /// Ends the report; returns its numbers, and whether it was all written.
    pub fn finish(mut self) -> (Tail, io::Result<()>) {
        let tail = Tail {
            entries: self.entries,
            elapsed: self.elapsed,
            counts: self.counts,
            errors: self.errors,
            unsaved: self.unsaved,
            flagged: self.flagged,
            reclaim: self.reclaim,
        };
        self.write(|w| w.finish(&tail));
        (tail, self.failed.map_or(Ok(()), Err))
    }
}

/// The table order: stale first, then live, foreign, unknown, free.
pub fn verdict_rank(v: Verdict) -> usize {
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

    /// A whole report in `format` of `findings`, `errors` and `outcomes` (a reclaim pass when
    /// `outcomes` is `Some`), as the command line writes one.
    pub(crate) fn written(
        format: Format,
        opts: &Options,
        findings: &[Finding],
        errors: &[ScanError],
        outcomes: Option<&[Outcome]>,
    ) -> (String, Tail) {
        let head = Head {
            host: HostFacts::probe(),
            roots: vec!["/x".into()],
            now_ms: 1_700_000_300_000,
            reclaim: outcomes.is_some(),
        };
        let mut out = Vec::new();
        let mut r = Report::new(format, head, opts, &mut out);
        for f in findings {
            r.lock(f, &Waiting::default());
        }
        r.scanned(&Scanned {
            entries: 42,
            elapsed: Duration::from_millis(1500),
            errors,
        });
        for o in outcomes.unwrap_or_default() {
            r.reclaimed(o);
        }
        let (tail, written) = r.finish();
        written.unwrap();
        (String::from_utf8(out).unwrap(), tail)
    }

    /// Each lock's waiters and stuck holder reach the table (a note after the rows, in the
    /// rows' order) and the JSON document (its `waiters` and `holder_stuck`).
    #[test]
    fn waiters_and_a_stuck_holder_are_written_with_their_lock() {
        use crate::probe::waiters::{WaitHow, Waiter};
        let waiting = Waiting {
            waiters: vec![Waiter {
                pid: 4250,
                name: Some("cargo".into()),
                cmd: vec!["cargo".into(), "build".into()],
                how: WaitHow::Flock,
                write: Some(true),
                started_ms: None,
                blocked_in: Some("flock(3, LOCK_EX)".into()),
                evidence: "blocked in flock".into(),
                container: None,
            }],
            holder: Some(waiting::Stuck {
                pid: 4242,
                name: "cargo".into(),
                start_ticks: 7,
                why: "4242 cargo is stopped (SIGSTOP)".into(),
            }),
            handles: Vec::new(),
        };
        let findings = [
            finding("/x/b.lock", "flock", Judgement::live("held")),
            finding("/x/a.pid", "pidfile", Judgement::stale_for_test("gone")),
        ];
        let head = || Head {
            host: HostFacts::probe(),
            roots: vec!["/x".into()],
            now_ms: 1_700_000_300_000,
            reclaim: false,
        };
        let write = |format| {
            let mut out = Vec::new();
            let mut r = Report::new(format, head(), &Options::default(), &mut out);
            r.lock(&findings[0], &waiting);
            r.lock(&findings[1], &Waiting::default());
            r.scanned(&Scanned {
                entries: 2,
                elapsed: Duration::ZERO,
                errors: &[],
            });
            r.finish().1.unwrap();
            String::from_utf8(out).unwrap()
        };
        let table = write(Format::Table);
        let lines: Vec<&str> = table.lines().collect();
        assert!(lines[1].ends_with("/x/a.pid") && lines[2].ends_with("/x/b.lock"));
        assert_eq!(
            lines[3],
            "waiting for /x/b.lock: 4250 cargo (flock, write; blocked in flock(3, LOCK_EX))"
        );
        assert_eq!(
            lines[4],
            "holder of /x/b.lock: 4242 cargo is stopped (SIGSTOP)"
        );
        assert!(lines[5].starts_with("2 locks: "), "{table}");
        let v: serde_json::Value = serde_json::from_str(&write(Format::Json)).unwrap();
        let w = &v["locks"][0]["waiters"][0];
        assert_eq!(
            (w["pid"].as_i64(), w["how"].as_str()),
            (Some(4250), Some("flock"))
        );
        assert_eq!(w["mode"], "write");
        assert_eq!(v["locks"][0]["holder_stuck"]["pid"], 4242);
        assert_eq!(v["locks"][1]["waiters"], serde_json::json!([]));
        assert!(v["locks"][1]["holder_stuck"].is_null());
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

    #[test]
    fn the_filter_lists_its_verdicts_and_the_summary_counts_every_lock() {
        let only: Verdicts = [Verdict::Unknown, Verdict::Stale].into_iter().collect();
        assert_eq!(
            only.iter().collect::<Vec<_>>(),
            [Verdict::Stale, Verdict::Unknown]
        );
        assert!(!only.contains(Verdict::Live));
        let opts = Options {
            verdicts: only,
            ..Options::default()
        };
        let findings = [
            finding("/x/a.pid", "pidfile", Judgement::live("alive")),
            finding("/x/b.pid", "pidfile", Judgement::stale_for_test("gone")),
        ];
        let (text, tail) = written(Format::Json, &opts, &findings, &[], None);
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        let paths: Vec<_> = v["locks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l["path"].as_str().unwrap())
            .collect();
        assert_eq!(paths, ["/x/b.pid"]);
        assert_eq!(v["summary"]["locks"], 2);
        assert_eq!((tail.counts.live, tail.counts.stale), (1, 1));
        assert_eq!(tail.stale_remaining(), 1);
    }
}
