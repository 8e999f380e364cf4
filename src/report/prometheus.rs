//! The Prometheus view of a report: the text exposition format (version 0.0.4), as read
//! by node_exporter's textfile collector, so that a fleet of machines is watched by the
//! monitoring it already runs. Written at the end of the report; until then it keeps counts
//! and the bounded set of per-lock series, nothing else of a lock.
//!
//! Invariants:
//! - every metric family is written once, with its `# HELP` and `# TYPE` lines, and its
//!   samples together; no two samples of a family have the same labels;
//! - the label sets are bounded: `verdict` and `dialect` take only the built-in values, and
//!   the per-lock series (`locksmith_lock_age_seconds`, the only ones labelled with a path)
//!   are at most [`Options::max_lock_series`]; the locks beyond that are counted in
//!   `locksmith_lock_age_omitted`. Stale locks come first and, within a verdict, the oldest,
//!   so the oldest stale lock always has its series;
//! - `locksmith_locks` has a sample for each verdict and dialect that has locks: not one
//!   for each of the hundreds of pairs that have none. A pair whose last lock goes away is
//!   no longer written: node_exporter stops exporting it and Prometheus marks the series
//!   stale at the next scrape, so an alert on it resolves. What must see a return to zero
//!   reads `locksmith_locks_by_verdict`, which has a sample for every verdict, zero included
//!   (with a verdict filter: for every verdict it lists), and the per-lock series (which go
//!   with their lock, as the alerting rules expect);
//! - a path becomes a label value through [`text::display_path`] (the terminal-safe,
//!   single-line form the table shows: control characters and bytes that are not UTF-8 as
//!   `\xNN`, backslashes doubled), then through the exposition format's own escaping of `\`,
//!   `"` and newline, so the file is valid UTF-8 whatever the path holds.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashSet};
use std::fmt::Write as _;
use std::io::{self, Write};

use super::{Head, Options, Scanned, Tail, Verdicts, age_secs};
use crate::outcome::{Action, Outcome};
use crate::scan::Finding;
use crate::text;
use crate::verdict::Verdict;

/// The content type of what the [`Writer`] produces.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The verdicts whose locks get a per-lock age series: the ones a person may have to act on.
pub const AGE_VERDICTS: [Verdict; 3] = [Verdict::Stale, Verdict::Foreign, Verdict::Unknown];

/// The default bound on per-lock series.
pub const DEFAULT_MAX_LOCK_SERIES: usize = 100;

/// A candidate for a per-lock series; the order is the order of preference (stale first,
/// then the oldest, then by path), so the greatest is the first to give up its place.
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Aged {
    rank: usize,
    age: Reverse<u64>,
    path: String,
    verdict: Verdict,
    dialect: &'static str,
}

/// The Prometheus [`super::Writer`]: keeps counts, and the per-lock series in a heap bounded
/// by [`Options::max_lock_series`]; writes everything at the end.
pub struct Writer<W> {
    out: W,
    now_ms: i64,
    verdicts: Verdicts,
    max_lock_series: usize,
    /// Locks listed, by verdict and dialect.
    counts: BTreeMap<(Verdict, &'static str), u64>,
    /// The best [`Aged`] so far, at most `max_lock_series` of them.
    aged: BinaryHeap<Aged>,
    entries: u64,
    elapsed_s: f64,
    errors: u64,
}

impl<W: Write + Send> Writer<W> {
    pub fn new(head: Head, opts: &Options, out: W) -> Self {
        Writer {
            out,
            now_ms: head.now_ms,
            verdicts: opts.verdicts,
            max_lock_series: opts.max_lock_series,
            counts: BTreeMap::new(),
            aged: BinaryHeap::new(),
            entries: 0,
            elapsed_s: 0.0,
            errors: 0,
        }
    }
}

impl<W: Write + Send> super::Writer for Writer<W> {
    fn lock(&mut self, f: &Finding, _waiting: &super::Waiting) -> io::Result<()> {
        let v = f.judgement.verdict();
        *self.counts.entry((v, f.dialect.as_str())).or_default() += 1;
        if self.max_lock_series == 0 || !AGE_VERDICTS.contains(&v) {
            return Ok(());
        }
        let Some(m) = f.modified_ms else {
            return Ok(());
        };
        let rank = rank(v);
        let age = age_secs(m, self.now_ms);
        // Not better than the worst kept: nothing to do (and no path to build).
        if self.aged.len() >= self.max_lock_series
            && let Some(worst) = self.aged.peek()
            && (rank, Reverse(age)) > (worst.rank, worst.age)
        {
            return Ok(());
        }
        self.aged.push(Aged {
            rank,
            age: Reverse(age),
            path: text::display_path(&f.path),
            verdict: v,
            dialect: f.dialect.as_str(),
        });
        if self.aged.len() > self.max_lock_series {
            self.aged.pop();
        }
        Ok(())
    }

    fn scanned(&mut self, scan: &Scanned<'_>) -> io::Result<()> {
        self.entries = scan.entries;
        self.elapsed_s = scan.elapsed.as_secs_f64();
        self.errors = scan.errors.len() as u64;
        Ok(())
    }

    fn reclaimed(&mut self, _o: &Outcome) -> io::Result<()> {
        Ok(())
    }

    fn finish(&mut self, tail: &Tail) -> io::Result<()> {
        let aged = std::mem::take(&mut self.aged).into_sorted_vec();
        let text = self.render(aged, tail);
        self.out.write_all(text.as_bytes())?;
        self.out.flush()
    }
}

impl<W> Writer<W> {
    fn render(&self, aged: Vec<Aged>, tail: &Tail) -> String {
        let mut out = Exposition::default();

        out.family(
            "locksmith_locks",
            "gauge",
            "Lock files found by the last scan, by verdict and dialect.",
        );
        // Only the pairs that have locks (`counts` holds no zero), in a stable order.
        for ((v, d), n) in &self.counts {
            if self.verdicts.contains(*v) {
                out.sample(
                    "locksmith_locks",
                    &[("verdict", v.as_str()), ("dialect", d)],
                    n,
                );
            }
        }

        out.family(
            "locksmith_locks_by_verdict",
            "gauge",
            "Lock files found by the last scan, by verdict (every verdict, zero included).",
        );
        for v in self.verdicts.iter() {
            let n: u64 = self
                .counts
                .iter()
                .filter(|((x, _), _)| *x == v)
                .map(|(_, n)| n)
                .sum();
            out.sample("locksmith_locks_by_verdict", &[("verdict", v.as_str())], n);
        }

        out.family(
            "locksmith_lock_age_seconds",
            "gauge",
            &format!(
                "Seconds since each stale, foreign or unknown lock was last modified; stale \
                 first, then the oldest, at most {} series.",
                self.max_lock_series
            ),
        );
        let mut shown: HashSet<(Verdict, &str, &str)> = HashSet::new();
        for a in &aged {
            if shown.insert((a.verdict, a.dialect, &a.path)) {
                out.sample(
                    "locksmith_lock_age_seconds",
                    &[
                        ("verdict", a.verdict.as_str()),
                        ("dialect", a.dialect),
                        ("path", &a.path),
                    ],
                    a.age.0,
                );
            }
        }

        out.family(
            "locksmith_lock_age_omitted",
            "gauge",
            "Stale, foreign or unknown locks without a locksmith_lock_age_seconds series (over \
             the series limit, or no modification time).",
        );
        for v in AGE_VERDICTS
            .into_iter()
            .filter(|v| self.verdicts.contains(*v))
        {
            let with_series = shown.iter().filter(|s| s.0 == v).count() as u64;
            out.sample(
                "locksmith_lock_age_omitted",
                &[("verdict", v.as_str())],
                tail.counts.get(v).saturating_sub(with_series),
            );
        }

        out.family(
            "locksmith_scan_duration_seconds",
            "gauge",
            "How long the last scan took (walking and judging).",
        );
        out.sample(
            "locksmith_scan_duration_seconds",
            &[],
            format!("{:.6}", self.elapsed_s),
        );

        out.family(
            "locksmith_scan_entries",
            "gauge",
            "Directory entries walked by the last scan.",
        );
        out.sample("locksmith_scan_entries", &[], self.entries);

        out.family(
            "locksmith_scan_errors",
            "gauge",
            "Per-path errors of the last scan (unreadable or vanished paths); they did not stop \
             it.",
        );
        out.sample("locksmith_scan_errors", &[], self.errors);

        out.family(
            "locksmith_scan_timestamp_seconds",
            "gauge",
            "When the last scan ran, in seconds since the Unix epoch.",
        );
        out.sample(
            "locksmith_scan_timestamp_seconds",
            &[],
            format!("{:.3}", self.now_ms as f64 / 1000.0),
        );

        if let Some(r) = tail.reclaim {
            out.family(
                "locksmith_reclaims",
                "gauge",
                "Stale locks the reclaim pass of the last run handled, by outcome (removed, \
                 would_remove in a dry run, kept because no longer stale, holding unsaved \
                 changes, or failing).",
            );
            for (outcome, action) in [
                ("removed", Action::Removed),
                ("would_remove", Action::WouldRemove),
                ("kept", Action::Kept),
            ] {
                out.sample("locksmith_reclaims", &[("outcome", outcome)], r.get(action));
            }
        }

        out.family(
            "locksmith_build_info",
            "gauge",
            "The version of locksmith that wrote these metrics (always 1).",
        );
        out.sample(
            "locksmith_build_info",
            &[("version", env!("CARGO_PKG_VERSION"))],
            1,
        );

        out.text
    }
}

/// Position of a verdict among [`AGE_VERDICTS`] (stale first).
fn rank(v: Verdict) -> usize {
    AGE_VERDICTS
        .iter()
        .position(|x| *x == v)
        .unwrap_or(usize::MAX)
}

#[derive(Default)]
struct Exposition {
    text: String,
}

impl Exposition {
    fn family(&mut self, name: &str, kind: &str, help: &str) {
        let _ = writeln!(self.text, "# HELP {name} {}", escape_help(help));
        let _ = writeln!(self.text, "# TYPE {name} {kind}");
    }

    fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: impl std::fmt::Display) {
        self.text.push_str(name);
        if !labels.is_empty() {
            self.text.push('{');
            for (i, (k, v)) in labels.iter().enumerate() {
                if i > 0 {
                    self.text.push(',');
                }
                let _ = write!(self.text, "{k}=\"{}\"", escape_label_value(v));
            }
            self.text.push('}');
        }
        let _ = writeln!(self.text, " {value}");
    }
}

/// A label value as the exposition format writes it: `\` → `\\`, `"` → `\"`, newline → `\n`.
pub fn escape_label_value(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    for c in v.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

/// A `# HELP` text as the exposition format writes it: `\` → `\\`, newline → `\n`.
fn escape_help(v: &str) -> String {
    v.replace('\\', "\\\\").replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judge::Judgement;
    use crate::report::tests::{finding, written};
    use crate::report::{Format, Options, ReclaimCounts};
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    use std::path::PathBuf;

    /// The report's "now" in [`written`].
    const NOW_MS: i64 = 1_700_000_300_000;

    fn render(findings: &[Finding], opts: &Options) -> String {
        written(Format::Prometheus, opts, findings, &[], None).0
    }

    fn series(max_lock_series: usize) -> Options {
        Options {
            max_lock_series,
            ..Options::default()
        }
    }

    fn aged(path: &str, v: Verdict, age_s: i64) -> Finding {
        let mut f = finding(path, "pidfile", Judgement::for_test(v, "x"));
        f.modified_ms = Some(NOW_MS - age_s * 1000);
        f
    }

    fn samples<'a>(text: &'a str, name: &str) -> Vec<&'a str> {
        text.lines()
            .filter(|l| l.starts_with(name) && l[name.len()..].starts_with(['{', ' ']))
            .collect()
    }

    #[test]
    fn label_values_are_escaped() {
        assert_eq!(escape_label_value(r#"a"b\c"#), r#"a\"b\\c"#);
        assert_eq!(escape_label_value("a\nb"), r"a\nb");
        assert_eq!(escape_help("x\\y\nz"), r"x\\y\nz");
    }

    #[test]
    fn counts_are_written_for_the_pairs_that_have_locks_and_for_every_verdict() {
        let text = render(
            &[
                aged("/a.pid", Verdict::Stale, 10),
                aged("/b.pid", Verdict::Stale, 20),
                aged("/c.pid", Verdict::Live, 20),
            ],
            &Options::default(),
        );
        // Not a zero for each of the hundreds of verdict and dialect pairs: the two that have
        // locks.
        assert_eq!(
            samples(&text, "locksmith_locks"),
            [
                r#"locksmith_locks{verdict="stale",dialect="pidfile"} 2"#,
                r#"locksmith_locks{verdict="live",dialect="pidfile"} 1"#,
            ]
        );
        // Every verdict, zero included: what a rule reads to see a return to zero.
        assert_eq!(
            samples(&text, "locksmith_locks_by_verdict"),
            [
                r#"locksmith_locks_by_verdict{verdict="stale"} 2"#,
                r#"locksmith_locks_by_verdict{verdict="live"} 1"#,
                r#"locksmith_locks_by_verdict{verdict="foreign"} 0"#,
                r#"locksmith_locks_by_verdict{verdict="unknown"} 0"#,
                r#"locksmith_locks_by_verdict{verdict="free"} 0"#,
            ]
        );
        assert!(text.contains("locksmith_scan_duration_seconds 1.500000\n"));
        assert!(text.contains("locksmith_scan_entries 42\n"));
        assert!(text.contains("locksmith_scan_errors 0\n"));
        assert!(text.contains("locksmith_scan_timestamp_seconds 1700000300.000\n"));
        assert!(
            !text.contains("locksmith_reclaims"),
            "no reclaim pass, no reclaim counts"
        );
        // No lock at all: the families are there, the per-verdict counts are zeros.
        let empty = render(&[], &Options::default());
        assert!(samples(&empty, "locksmith_locks").is_empty());
        assert!(empty.contains("# TYPE locksmith_locks gauge\n"));
        assert_eq!(samples(&empty, "locksmith_locks_by_verdict").len(), 5);
    }

    #[test]
    fn a_verdict_filter_keeps_the_samples_of_its_verdicts() {
        let opts = Options {
            verdicts: [Verdict::Stale].into_iter().collect(),
            ..Options::default()
        };
        let text = render(
            &[
                aged("/a.pid", Verdict::Stale, 10),
                aged("/u.pid", Verdict::Unknown, 10),
            ],
            &opts,
        );
        assert_eq!(
            samples(&text, "locksmith_locks"),
            [r#"locksmith_locks{verdict="stale",dialect="pidfile"} 1"#]
        );
        assert_eq!(
            samples(&text, "locksmith_locks_by_verdict"),
            [r#"locksmith_locks_by_verdict{verdict="stale"} 1"#]
        );
        assert_eq!(
            samples(&text, "locksmith_lock_age_omitted"),
            [r#"locksmith_lock_age_omitted{verdict="stale"} 0"#]
        );
        assert_eq!(samples(&text, "locksmith_lock_age_seconds").len(), 1);
    }

    #[test]
    fn age_series_are_bounded_stale_and_oldest_first_and_the_rest_counted() {
        let findings = [
            aged("/foreign-old", Verdict::Foreign, 9000),
            aged("/stale-young", Verdict::Stale, 5),
            aged("/stale-old", Verdict::Stale, 600),
            aged("/unknown", Verdict::Unknown, 50),
            aged("/live", Verdict::Live, 10_000),
        ];
        let text = render(&findings, &series(2));
        assert_eq!(
            samples(&text, "locksmith_lock_age_seconds"),
            [
                r#"locksmith_lock_age_seconds{verdict="stale",dialect="pidfile",path="/stale-old"} 600"#,
                r#"locksmith_lock_age_seconds{verdict="stale",dialect="pidfile",path="/stale-young"} 5"#,
            ]
        );
        assert_eq!(
            samples(&text, "locksmith_lock_age_omitted"),
            [
                r#"locksmith_lock_age_omitted{verdict="stale"} 0"#,
                r#"locksmith_lock_age_omitted{verdict="foreign"} 1"#,
                r#"locksmith_lock_age_omitted{verdict="unknown"} 1"#,
            ]
        );
        let all = render(&findings, &Options::default());
        assert_eq!(
            samples(&all, "locksmith_lock_age_seconds"),
            [
                r#"locksmith_lock_age_seconds{verdict="stale",dialect="pidfile",path="/stale-old"} 600"#,
                r#"locksmith_lock_age_seconds{verdict="stale",dialect="pidfile",path="/stale-young"} 5"#,
                r#"locksmith_lock_age_seconds{verdict="foreign",dialect="pidfile",path="/foreign-old"} 9000"#,
                r#"locksmith_lock_age_seconds{verdict="unknown",dialect="pidfile",path="/unknown"} 50"#,
            ]
        );
        let none = render(&findings, &series(0));
        assert!(samples(&none, "locksmith_lock_age_seconds").is_empty());
        assert!(none.contains("# TYPE locksmith_lock_age_seconds gauge\n"));
    }

    /// The bounded heap keeps the same series as sorting every lock would, whatever the order
    /// the locks come in.
    #[test]
    fn the_kept_series_do_not_depend_on_the_order_of_the_locks() {
        let mut findings: Vec<Finding> = (0..40)
            .map(|i| {
                let v = AGE_VERDICTS[i % 3];
                aged(&format!("/l{i:02}"), v, (i as i64 * 7919) % 100)
            })
            .collect();
        let want = samples(&render(&findings, &series(7)), "locksmith_lock_age_seconds").join("\n");
        for _ in 0..5 {
            findings.rotate_left(13);
            findings.swap(3, 29);
            let text = render(&findings, &series(7));
            assert_eq!(
                samples(&text, "locksmith_lock_age_seconds").join("\n"),
                want
            );
        }
        assert_eq!(want.lines().count(), 7);
        assert!(
            want.lines().all(|l| l.contains(r#"verdict="stale""#)),
            "{want}"
        );
    }

    #[test]
    fn hostile_paths_become_single_line_utf8_labels() {
        let raw = OsStr::from_bytes(b"/tmp/q\"uo\\te\nnew\xff\x1b[2J.pid");
        let mut f = aged("/x", Verdict::Stale, 3);
        f.path = PathBuf::from(raw);
        let text = render(&[f], &Options::default());
        let line = samples(&text, "locksmith_lock_age_seconds")[0];
        // display form: /tmp/q"uo\\te\nnew\xff\x1b[2J.pid; then quote and backslash escaped.
        assert_eq!(
            line,
            r#"locksmith_lock_age_seconds{verdict="stale",dialect="pidfile",path="/tmp/q\"uo\\\\te\\nnew\\xff\\x1b[2J.pid"} 3"#
        );
        assert_eq!(text.lines().count(), text.matches('\n').count());
    }

    #[test]
    fn reclaim_outcomes_are_counted() {
        let outcome = |action| Outcome {
            path: PathBuf::from("/a"),
            ok: true,
            action,
            saved_to: None,
            saved_offset: None,
            error: None,
            judgement: Judgement::stale_for_test("x"),
        };
        let outcomes = [
            outcome(Action::Removed),
            outcome(Action::Removed),
            outcome(Action::Kept),
        ];
        let (text, tail) = written(
            Format::Prometheus,
            &Options::default(),
            &[],
            &[],
            Some(&outcomes),
        );
        assert_eq!(
            tail.reclaim,
            Some(ReclaimCounts {
                removed: 2,
                would_remove: 0,
                kept: 1
            })
        );
        assert_eq!(
            samples(&text, "locksmith_reclaims"),
            [
                r#"locksmith_reclaims{outcome="removed"} 2"#,
                r#"locksmith_reclaims{outcome="would_remove"} 0"#,
                r#"locksmith_reclaims{outcome="kept"} 1"#,
            ]
        );
    }
}
