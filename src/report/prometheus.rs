//! The Prometheus view of a [`Report`]: the text exposition format (version 0.0.4), as read
//! by node_exporter's textfile collector, so that a fleet of machines is watched by the
//! monitoring it already runs.
//!
//! Invariants:
//! - every metric family is written once, with its `# HELP` and `# TYPE` lines, and its
//!   samples together; no two samples of a family have the same labels;
//! - the label sets are bounded: `verdict` and `dialect` take only the built-in values, and
//!   the per-lock series (`locksmith_lock_age_seconds`, the only ones labelled with a path)
//!   are at most [`Options::max_lock_series`]; the locks beyond that are counted in
//!   `locksmith_lock_age_omitted`. Stale locks come first and, within a verdict, the oldest,
//!   so the oldest stale lock always has its series;
//! - `locksmith_locks` has a sample for every verdict and dialect, zero included, so that a
//!   series never vanishes when the last lock of its kind goes away;
//! - a path becomes a label value through [`text::display_path`] (the terminal-safe,
//!   single-line form the table shows: control characters and bytes that are not UTF-8 as
//!   `\xNN`, backslashes doubled), then through the exposition format's own escaping of `\`,
//!   `"` and newline, so the file is valid UTF-8 whatever the path holds.

use std::collections::HashSet;
use std::fmt::Write as _;
use std::io::{self, Write};

use super::{Report, age_secs};
use crate::dialect;
use crate::outcome::Action;
use crate::text;
use crate::verdict::Verdict;

/// The content type of what [`fn@write`] produces.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The verdicts whose locks get a per-lock age series: the ones a person may have to act on.
pub const AGE_VERDICTS: [Verdict; 3] = [Verdict::Stale, Verdict::Foreign, Verdict::Unknown];

/// Tunables of the exposition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// At most this many `locksmith_lock_age_seconds` series.
    pub max_lock_series: usize,
}

impl Options {
    /// The default bound on per-lock series.
    pub const DEFAULT_MAX_LOCK_SERIES: usize = 100;
}

impl Default for Options {
    fn default() -> Self {
        Options {
            max_lock_series: Self::DEFAULT_MAX_LOCK_SERIES,
        }
    }
}

/// Writes the report in the Prometheus text exposition format.
pub fn write(report: &Report, opts: &Options, mut w: impl Write) -> io::Result<()> {
    w.write_all(render(report, opts).as_bytes())
}

/// The report in the Prometheus text exposition format.
pub fn render(report: &Report, opts: &Options) -> String {
    let mut out = Exposition::default();

    out.family(
        "locksmith_locks",
        "gauge",
        "Lock files found by the last scan, by verdict and dialect.",
    );
    let mut dialects: Vec<&str> = dialect::registry()
        .iter()
        .map(|d| d.id().as_str())
        .collect();
    // A finding's dialect is always a registered one; a stray one still gets its sample.
    for f in &report.findings {
        if !dialects.contains(&f.dialect.as_str()) {
            dialects.push(f.dialect.as_str());
        }
    }
    dialects.sort_unstable();
    for v in Verdict::ALL {
        for d in &dialects {
            let n = report
                .findings
                .iter()
                .filter(|f| f.judgement.verdict() == v && f.dialect == *d)
                .count();
            out.sample(
                "locksmith_locks",
                &[("verdict", v.as_str()), ("dialect", d)],
                n,
            );
        }
    }

    out.family(
        "locksmith_lock_age_seconds",
        "gauge",
        &format!(
            "Seconds since each stale, foreign or unknown lock was last modified; stale first, \
             then the oldest, at most {} series.",
            opts.max_lock_series
        ),
    );
    let mut aged: Vec<(Verdict, &str, String, u64)> = report
        .findings
        .iter()
        .filter(|f| AGE_VERDICTS.contains(&f.judgement.verdict()))
        .filter_map(|f| {
            let age = age_secs(f.modified_ms?, report.now_ms);
            Some((
                f.judgement.verdict(),
                f.dialect.as_str(),
                text::display_path(&f.path),
                age,
            ))
        })
        .collect();
    aged.sort_by(|a, b| {
        rank(a.0)
            .cmp(&rank(b.0))
            .then(b.3.cmp(&a.3))
            .then_with(|| a.2.cmp(&b.2))
    });
    let mut shown: HashSet<(Verdict, &str, &str)> = HashSet::new();
    for (verdict, dialect, path, age) in &aged {
        if shown.len() >= opts.max_lock_series {
            break;
        }
        if shown.insert((*verdict, dialect, path)) {
            out.sample(
                "locksmith_lock_age_seconds",
                &[
                    ("verdict", verdict.as_str()),
                    ("dialect", dialect),
                    ("path", path),
                ],
                age,
            );
        }
    }

    out.family(
        "locksmith_lock_age_omitted",
        "gauge",
        "Stale, foreign or unknown locks without a locksmith_lock_age_seconds series (over the \
         series limit, or no modification time).",
    );
    for v in AGE_VERDICTS {
        let all = report
            .findings
            .iter()
            .filter(|f| f.judgement.verdict() == v)
            .count();
        let with_series = shown.iter().filter(|s| s.0 == v).count();
        out.sample(
            "locksmith_lock_age_omitted",
            &[("verdict", v.as_str())],
            all - with_series,
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
        format!("{:.6}", report.elapsed.as_secs_f64()),
    );

    out.family(
        "locksmith_scan_entries",
        "gauge",
        "Directory entries walked by the last scan.",
    );
    out.sample("locksmith_scan_entries", &[], report.entries);

    out.family(
        "locksmith_scan_errors",
        "gauge",
        "Per-path errors of the last scan (unreadable or vanished paths); they did not stop it.",
    );
    out.sample("locksmith_scan_errors", &[], report.errors.len());

    out.family(
        "locksmith_scan_timestamp_seconds",
        "gauge",
        "When the last scan ran, in seconds since the Unix epoch.",
    );
    out.sample(
        "locksmith_scan_timestamp_seconds",
        &[],
        format!("{:.3}", report.now_ms as f64 / 1000.0),
    );

    if let Some(outcomes) = &report.reclaimed {
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
            let n = outcomes.iter().filter(|o| o.action == action).count();
            out.sample("locksmith_reclaims", &[("outcome", outcome)], n);
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
    use crate::probe::HostFacts;
    use crate::report::tests::finding;
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    use std::path::PathBuf;
    use std::time::Duration;

    fn report(findings: Vec<crate::scan::Finding>) -> Report {
        Report::new(
            HostFacts::probe(),
            vec![PathBuf::from("/tmp")],
            findings,
            vec![],
            1234,
            Duration::from_millis(1500),
            1_700_000_600_000,
        )
    }

    fn aged(path: &str, v: Verdict, age_s: i64) -> crate::scan::Finding {
        let mut f = finding(path, "pidfile", Judgement::for_test(v, "x"));
        f.modified_ms = Some(1_700_000_600_000 - age_s * 1000);
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
    fn every_verdict_and_dialect_has_a_count() {
        let r = report(vec![
            aged("/a.pid", Verdict::Stale, 10),
            aged("/b.pid", Verdict::Stale, 20),
            aged("/c.pid", Verdict::Live, 20),
        ]);
        let text = render(&r, &Options::default());
        let counts = samples(&text, "locksmith_locks");
        assert_eq!(counts.len(), 5 * dialect::registry().len());
        assert!(counts.contains(&r#"locksmith_locks{verdict="stale",dialect="pidfile"} 2"#));
        assert!(counts.contains(&r#"locksmith_locks{verdict="live",dialect="pidfile"} 1"#));
        assert!(counts.contains(&r#"locksmith_locks{verdict="free",dialect="flock"} 0"#));
        assert!(text.contains("locksmith_scan_duration_seconds 1.500000\n"));
        assert!(text.contains("locksmith_scan_entries 1234\n"));
        assert!(text.contains("locksmith_scan_errors 0\n"));
        assert!(text.contains("locksmith_scan_timestamp_seconds 1700000600.000\n"));
        assert!(
            !text.contains("locksmith_reclaims"),
            "no reclaim pass, no reclaim counts"
        );
    }

    #[test]
    fn age_series_are_bounded_stale_and_oldest_first_and_the_rest_counted() {
        let r = report(vec![
            aged("/foreign-old", Verdict::Foreign, 9000),
            aged("/stale-young", Verdict::Stale, 5),
            aged("/stale-old", Verdict::Stale, 600),
            aged("/unknown", Verdict::Unknown, 50),
            aged("/live", Verdict::Live, 10_000),
        ]);
        let text = render(&r, &Options { max_lock_series: 2 });
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
        let all = render(&r, &Options::default());
        assert_eq!(samples(&all, "locksmith_lock_age_seconds").len(), 4);
        let none = render(&r, &Options { max_lock_series: 0 });
        assert!(samples(&none, "locksmith_lock_age_seconds").is_empty());
        assert!(none.contains("# TYPE locksmith_lock_age_seconds gauge\n"));
    }

    #[test]
    fn hostile_paths_become_single_line_utf8_labels() {
        let raw = OsStr::from_bytes(b"/tmp/q\"uo\\te\nnew\xff\x1b[2J.pid");
        let mut f = aged("/x", Verdict::Stale, 3);
        f.path = PathBuf::from(raw);
        let text = render(&report(vec![f]), &Options::default());
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
        use crate::outcome::Outcome;
        let outcome = |action| Outcome {
            path: PathBuf::from("/a"),
            ok: true,
            action,
            saved_to: None,
            error: None,
            judgement: Judgement::stale_for_test("x"),
        };
        let r = report(vec![]).with_reclaimed(vec![
            outcome(Action::Removed),
            outcome(Action::Removed),
            outcome(Action::Kept),
        ]);
        let text = render(&r, &Options::default());
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
