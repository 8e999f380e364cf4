//! `locksmith replay FILE`: the locks of a recording (`--scan --record FILE`) judged again
//! from the recording alone, reported as `--scan` reports them; `--check` says which verdicts
//! come out otherwise than they were recorded.

use std::io::{self, IsTerminal, Write};
use std::path::Path;
use std::time::Instant;

use anyhow::{Context, bail};
use locksmith::config::RawConfig;
use locksmith::probe::Snapshot;
use locksmith::probe::evidence::{self, Evidence};
use locksmith::report::{self, Format, Head, Report, Scanned, Waiting};
use locksmith::scan;

use crate::ReplayArgs;

pub fn run(args: ReplayArgs) -> i32 {
    match replay(&args) {
        Ok(code) => code,
        Err(e) => {
            super::report_error("", &format!("{e:#}"));
            2
        }
    }
}

/// Reads a recording.
pub fn read(file: &Path) -> anyhow::Result<Evidence> {
    let text = std::fs::read_to_string(file)
        .with_context(|| format!("cannot read the recording {}", file.display()))?;
    Evidence::from_json(&text)
        .map_err(|e| anyhow::anyhow!("{} is not a recording of locksmith's: {e}", file.display()))
}

fn replay(args: &ReplayArgs) -> anyhow::Result<i32> {
    let started = Instant::now();
    let ev = read(&args.file)?;
    let mut raw = match ev.settings.clone() {
        Some(v) => RawConfig::judging_with(
            serde_json::from_value(v).context("the recording's settings cannot be read")?,
        ),
        None => RawConfig::embedded(),
    };
    raw.state_dir = Default::default();
    let settings = raw.validate()?;
    let locks = ev.locks.clone();
    let snap = Snapshot::replay(ev);
    let findings: Vec<(scan::Finding, &evidence::LockFacts)> = locks
        .iter()
        .filter_map(|l| Some((scan::judge_recorded(l, &snap, &settings.scan)?, l)))
        .collect();
    let misses = snap.replay_misses();
    if !misses.is_empty() {
        let mut shown: Vec<&str> = misses.iter().map(String::as_str).take(3).collect();
        if misses.len() > shown.len() {
            shown.push("...");
        }
        super::report_error(
            "",
            &format!(
                "the recording does not answer {} question(s) a rule asked ({}): where one would decide a verdict, nothing is proven",
                misses.len(),
                shown.join(", ")
            ),
        );
    }
    if args.check {
        let mut out = io::stdout().lock();
        let mut differ = 0;
        for (f, l) in &findings {
            let now = f.judgement.verdict().as_str();
            if now != l.verdict || f.dialect.as_str() != l.dialect {
                differ += 1;
                writeln!(
                    out,
                    "{}: recorded {} ({}), now {} ({})",
                    locksmith::text::display_path(&f.path),
                    l.verdict,
                    l.dialect,
                    now,
                    f.dialect
                )?;
            }
        }
        if findings.len() != locks.len() {
            differ += locks.len() - findings.len();
            writeln!(
                out,
                "{} recorded locks are no locks now",
                locks.len() - findings.len()
            )?;
        }
        writeln!(
            out,
            "{} locks judged again: {}",
            locks.len(),
            if differ == 0 {
                "every verdict as recorded".to_string()
            } else {
                format!("{differ} differ")
            }
        )?;
        return Ok(if differ == 0 { 0 } else { 1 });
    }
    if locks.is_empty() {
        bail!("the recording holds no lock");
    }
    let head = Head {
        host: snap.host.clone(),
        roots: Vec::new(),
        now_ms: snap.taken_ms,
        reclaim: false,
    };
    let format = if args.json {
        Format::Json
    } else {
        Format::Table
    };
    let opts = report::Options {
        color: !args.json && io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none(),
        ..report::Options::default()
    };
    let mut report = Report::new(format, head, &opts, io::BufWriter::new(io::stdout()));
    for (f, _) in &findings {
        report.lock(f, &Waiting::default());
    }
    report.scanned(&Scanned {
        entries: locks.len() as u64,
        elapsed: started.elapsed(),
        errors: &[],
    });
    let (tail, written) = report.finish();
    match written {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {}
        Err(e) => return Err(e).context("cannot write the report"),
    }
    Ok(if tail.stale_remaining() > 0 { 1 } else { 0 })
}
