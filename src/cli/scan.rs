//! `locksmith --scan`: the report (table, JSON or Prometheus metrics, on stdout or written
//! atomically to `--output FILE`), and non-interactive reclaim.
//!
//! Exit status: 0 when no lock is stale (after `--reclaim`: when every stale lock was removed),
//! 1 when some stale lock is (still) there, 2 on a fatal error (bad configuration, no root
//! readable). Per-path errors do not abort: the table and the metrics list them on stderr
//! after the report, the JSON document in its `errors`. A closed stdout (`| head`) ends the
//! command quietly.
//!
//! `--output FILE` never leaves a partial FILE: the report goes to a temporary file in the
//! same directory (a name node_exporter's textfile collector ignores, not ending in `.prom`),
//! which is synced and then renamed over FILE. A reader sees the old report or the new one.

use std::io::{self, IsTerminal, Write};
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use anyhow::Context;
use locksmith::probe::Snapshot;
use locksmith::reclaim::{self, ReclaimOptions};
use locksmith::remote;
use locksmith::report::{self, Report};
use locksmith::scan::{self, Config, Finding, ScanError, ScanEvent};
use locksmith::text;
use locksmith::verdict::Verdict;

use crate::{ColorChoice, ReportFormat, ScanArgs};

pub fn run(args: ScanArgs) -> i32 {
    match scan_and_report(&args) {
        Ok(code) => code,
        Err(e) => {
            let message = format!("{e:#}");
            super::report_error("", &message);
            // A script reading the JSON report gets a JSON document on a fatal error too
            // (not with --output, whose FILE keeps the last report).
            if format_of(&args) == ReportFormat::Json && args.output.is_none() {
                print!("{}", fatal_json(&message));
            }
            2
        }
    }
}

/// What `--scan --json` prints instead of a report on a fatal error (exit status 2): the
/// schema's `$defs/fatal_error`.
fn fatal_json(message: &str) -> String {
    let doc = serde_json::json!({
        "version": 1,
        "error": {
            "message": message,
            "hint": super::permission_hint(message),
        },
        "exit_status": 2,
    });
    let pretty = serde_json::to_string_pretty(&doc).unwrap_or_default();
    format!("{}\n", text::terminal_safe_json(&pretty))
}

/// Runs the scan (and the reclaim pass), prints the report, and returns the exit status.
fn scan_and_report(args: &ScanArgs) -> anyhow::Result<i32> {
    let mut config = Config::load(args.config.as_deref())?;
    if let Some(lock) = &args.force {
        return force_one(args, &config, lock);
    }
    if let Some(pid) = args.pid {
        let waited = super::waiting::report(pid, &config)?;
        let format = format_of(args);
        let said = if format == ReportFormat::Table {
            writeln!(io::stdout(), "{}", waited.says)
        } else {
            Ok(())
        };
        return match said.and_then(|()| print(&waited.report, args, format)) {
            Ok(()) => Ok(waited.code),
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(waited.code),
            Err(e) => Err(e).context("cannot write the report"),
        };
    }
    config.containers = !args.no_containers && args.paths.is_empty();
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
    let stats =
        scan::scan(&config, &roots, &snap, &cancel, &sink).map_err(|e| anyhow::anyhow!("{e}"))?;
    let (mut findings, errors) = found.into_inner().unwrap_or_else(|e| e.into_inner());
    let ask = asking(args, &config);
    if ask {
        remote::ask_and_settle(&mut findings, &config.ask_hosts, args.ask_hosts, &|_| {});
    }
    let waiting = report::waiting::of_all(&findings, &snap);
    let mut report = Report::new(
        snap.host.clone(),
        roots.iter().map(|r| r.path.clone()).collect(),
        findings,
        errors,
        stats.entries,
        started.elapsed(),
        snap.taken_ms,
    )
    .with_waiting(waiting);
    if args.reclaim {
        let opts = ReclaimOptions {
            state_dir: ReclaimOptions::default_state_dir(),
            dry_run: args.dry_run,
            include_unsaved: args.include_unsaved,
            force: false,
            copies: config.saved,
            remove_uncopied: args.remove_uncopied,
        };
        let stale = report
            .findings
            .iter()
            .filter(|f| f.judgement.verdict() == Verdict::Stale);
        // A lock proven stale by its host's answer is judged again by asking again, right
        // before removal, like every reclaim judges again: each host once for the reclaim.
        let stale: Vec<&Finding> = stale.collect();
        let reask = ask
            .then(|| remote::Reask::new(&config.ask_hosts, args.ask_hosts, stale.iter().copied()));
        let outcomes =
            reclaim::reclaim_all_settled(stale.iter().copied(), &config, &opts, |judged, fresh| {
                if let Some(reask) = &reask {
                    reask.settle(judged, fresh);
                }
            });
        report = report.with_reclaimed(outcomes);
    }
    let code = if report.stale_remaining() > 0 { 1 } else { 0 };

    let format = format_of(args);
    if let Some(path) = &args.output {
        write_atomically(path, |w| render(&report, args, format, false, w))
            .with_context(|| format!("cannot write the report to {}", path.display()))?;
        print_errors(&report, format)?;
        return Ok(code);
    }
    match print(&report, args, format) {
        Ok(()) => Ok(code),
        // `locksmith --scan | head`: the reader has what it wanted.
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(code),
        Err(e) => Err(e).context("cannot write the report"),
    }
}

/// `--scan --reclaim --force LOCK`: one lock, named by its own path, removed although it is
/// not proven stale, on the word of the person who named it (never a live or free one: it is
/// judged again at the moment of removal, as every reclaim). A directory that is not itself a
/// lock is refused: forcing never scans.
fn force_one(args: &ScanArgs, config: &Config, lock: &Path) -> anyhow::Result<i32> {
    let started = Instant::now();
    let snap = Snapshot::take();
    let lock =
        std::path::absolute(lock).with_context(|| format!("cannot resolve {}", lock.display()))?;
    let finding = scan::judge_path(&lock, &snap, config)
        .map_err(|e| anyhow::anyhow!("{e}"))?
        .filter(|f| f.path == lock)
        .ok_or_else(|| {
            anyhow::anyhow!(
                "--force takes the path of one lock, and {} is not one{}: forcing never scans",
                lock.display(),
                if lock.is_dir() {
                    " (a directory to scan)"
                } else {
                    ""
                }
            )
        })?;
    let opts = ReclaimOptions {
        state_dir: ReclaimOptions::default_state_dir(),
        dry_run: args.dry_run,
        include_unsaved: args.include_unsaved,
        force: true,
        copies: config.saved,
        remove_uncopied: args.remove_uncopied,
    };
    let mut report = Report::new(
        snap.host.clone(),
        vec![lock.clone()],
        vec![finding.clone()],
        Vec::new(),
        1,
        started.elapsed(),
        snap.taken_ms,
    );
    let outcomes = reclaim::reclaim_all_settled([&finding], config, &opts, |_, _| {});
    let removed = outcomes.iter().all(|o| o.ok);
    report = report.with_reclaimed(outcomes);
    let code = if removed { 0 } else { 1 };
    let format = format_of(args);
    match print(&report, args, format) {
        Ok(()) => Ok(code),
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(code),
        Err(e) => Err(e).context("cannot write the report"),
    }
}

/// Whether foreign locks' hosts are asked: `--ask-hosts`, or hosts listed in the configuration.
fn asking(args: &ScanArgs, config: &Config) -> bool {
    args.ask_hosts || !config.ask_hosts.hosts.is_empty()
}

/// `--json` is short for `--format json`; the table is the default.
fn format_of(args: &ScanArgs) -> ReportFormat {
    match (args.json, args.format) {
        (true, _) => ReportFormat::Json,
        (false, Some(f)) => f,
        (false, None) => ReportFormat::Table,
    }
}

fn render(
    report: &Report,
    args: &ScanArgs,
    format: ReportFormat,
    color: bool,
    out: &mut dyn Write,
) -> io::Result<()> {
    match format {
        ReportFormat::Json => report.write_json(out),
        ReportFormat::Table => out.write_all(report::table::render(report, color).as_bytes()),
        ReportFormat::Prometheus => {
            let opts = report::prometheus::Options {
                max_lock_series: args.max_lock_series,
            };
            report::prometheus::write(report, &opts, out)
        }
    }
}

/// Writes FILE through a temporary file in its directory, synced, then renamed over FILE.
/// The temporary file is removed if anything fails. Its mode is 0644 less the umask, as a
/// new file's would be, so a collector running as another user can read it.
fn write_atomically(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "not a file name"))?;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let mut prefix = std::ffi::OsString::from(".");
    prefix.push(name);
    prefix.push(".");
    let mut tmp = tempfile::Builder::new()
        .prefix(&prefix)
        .suffix(".tmp")
        .permissions(std::fs::Permissions::from_mode(0o644))
        .tempfile_in(dir)?;
    {
        let mut out = io::BufWriter::new(tmp.as_file_mut());
        write(&mut out)?;
        out.flush()?;
    }
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    // The rename is durable once the directory is synced; failing that is not an error.
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

fn print(report: &Report, args: &ScanArgs, format: ReportFormat) -> io::Result<()> {
    let stdout = io::stdout();
    let mut out = io::BufWriter::new(stdout.lock());
    let color = use_color(args.color, io::stdout().is_terminal());
    render(report, args, format, color, &mut out)?;
    out.flush()?;
    print_errors(report, format)
}

/// Per-path errors on stderr, for the views that do not carry them (the table, the metrics:
/// those count them only).
fn print_errors(report: &Report, format: ReportFormat) -> io::Result<()> {
    if format != ReportFormat::Json && !report.errors.is_empty() {
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
