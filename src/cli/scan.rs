//! `locksmith --scan`: the report (table or JSON), and non-interactive reclaim.
//!
//! Exit status: 0 when no lock is stale (after `--reclaim`: when every stale lock was removed),
//! 1 when some stale lock is (still) there, 2 on a fatal error (bad configuration, no root
//! readable). Per-path errors do not abort: the table lists them on stderr after the report,
//! the JSON document in its `errors`. A closed stdout (`| head`) ends the command quietly.

use std::io::{self, IsTerminal, Write};
use std::sync::Mutex;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use anyhow::Context;
use locksmith::probe::Snapshot;
use locksmith::reclaim::{self, ReclaimOptions};
use locksmith::remote;
use locksmith::report::{self, Report};
use locksmith::scan::{self, Config, Finding, ScanError, ScanEvent};
use locksmith::verdict::Verdict;

use crate::{ColorChoice, ScanArgs};

pub fn run(args: ScanArgs) -> i32 {
    match scan_and_report(&args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("locksmith: {e:#}");
            2
        }
    }
}

/// Runs the scan (and the reclaim pass), prints the report, and returns the exit status.
fn scan_and_report(args: &ScanArgs) -> anyhow::Result<i32> {
    let config = Config::load(args.config.as_deref())?;
    let roots = config.roots(&args.paths);
    let started = Instant::now();
    let snap = Snapshot::take();
    let found: Mutex<(Vec<Finding>, Vec<ScanError>)> = Mutex::default();
    let sink = |event: ScanEvent| {
        let mut found = found.lock().unwrap_or_else(|e| e.into_inner());
        match event {
            ScanEvent::Found(f) => found.0.push(*f),
            ScanEvent::Error(e) => found.1.push(e),
            ScanEvent::Progress { .. } => {}
        }
    };
    let cancel = AtomicBool::new(false);
    let stats = scan::scan(&config, &roots, &snap, &cancel, &sink)
        .map_err(|e| anyhow::anyhow!("{}", report::escape::escape_text(&e.error)))?;
    let (mut findings, errors) = found.into_inner().unwrap_or_else(|e| e.into_inner());
    let ask = asking(args, &config);
    if ask {
        remote::ask_and_settle(&mut findings, &config.ask_hosts, args.ask_hosts, &|_| {});
    }
    let mut report = Report::new(
        snap.host.clone(),
        roots.iter().map(|r| r.path.clone()).collect(),
        findings,
        errors,
        stats.entries,
        started.elapsed(),
        snap.taken_ms,
    );
    if args.reclaim {
        let opts = ReclaimOptions {
            state_dir: ReclaimOptions::default_state_dir(),
            dry_run: args.dry_run,
            include_unsaved: args.include_unsaved,
            force_foreign: false,
        };
        let outcomes = report
            .findings
            .iter()
            .filter(|f| f.judgement.verdict == Verdict::Stale)
            .map(|f| reclaim_asking_again(f, &config, &opts, args))
            .collect();
        report = report.with_reclaimed(outcomes);
    }
    let code = if report.stale_remaining() > 0 { 1 } else { 0 };

    match print(&report, args) {
        Ok(()) => Ok(code),
        // `locksmith --scan | head`: the reader has what it wanted.
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(code),
        Err(e) => Err(e).context("cannot write the report"),
    }
}

/// Whether foreign locks' hosts are asked: `--ask-hosts`, or hosts listed in the configuration.
fn asking(args: &ScanArgs, config: &Config) -> bool {
    args.ask_hosts || !config.ask_hosts.hosts.is_empty()
}

/// Reclaims a lock; one proven stale by its host's answer is judged again by asking again, right
/// before removal, like every reclaim judges again.
fn reclaim_asking_again(
    f: &Finding,
    config: &Config,
    opts: &ReclaimOptions,
    args: &ScanArgs,
) -> reclaim::Outcome {
    if f.judgement.remote.is_none() || !asking(args, config) {
        return reclaim::reclaim(f, config, opts);
    }
    reclaim::reclaim_rejudged(f, opts, &config.windows, |path| {
        let snap = Snapshot::take();
        let mut fresh = scan::judge_path(path, &snap, config)?;
        if let Some(fresh) = fresh.as_mut() {
            remote::ask_and_settle(
                std::slice::from_mut(fresh),
                &config.ask_hosts,
                args.ask_hosts,
                &|_| {},
            );
        }
        Ok(fresh)
    })
}

fn print(report: &Report, args: &ScanArgs) -> io::Result<()> {
    let stdout = io::stdout();
    let mut out = io::BufWriter::new(stdout.lock());
    if args.json {
        report.write_json(&mut out)?;
    } else {
        let color = use_color(args.color, io::stdout().is_terminal());
        out.write_all(report::table::render(report, color).as_bytes())?;
    }
    out.flush()?;
    if !args.json && !report.errors.is_empty() {
        let mut err = io::stderr().lock();
        for line in report::table::render_errors(report).lines() {
            writeln!(err, "locksmith: {line}")?;
        }
    }
    Ok(())
}

/// `always` and `never` are obeyed; `auto` colors only a terminal, and not when `NO_COLOR`
/// is set to something (https://no-color.org).
fn use_color(choice: ColorChoice, is_terminal: bool) -> bool {
    match choice {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => {
            is_terminal && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
        }
    }
}
