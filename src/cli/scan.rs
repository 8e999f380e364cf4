//! `locksmith --scan`: the report (table, JSON or Prometheus metrics, on stdout or written
//! atomically to `--output FILE`), and non-interactive reclaim.
//!
//! The report is written as the scan goes (see [`locksmith::report`]): each lock is handed to
//! it as soon as it is judged, and nothing else of it is kept here, except what a reclaim
//! pass needs of the stale ones (some 100 bytes each, see [`reclaim::JudgedList`]) and the locks
//! whose hosts are asked (`--ask-hosts`), which are reported once their hosts have answered.
//!
//! Exit status: 0 when no lock is stale (after `--reclaim`: when every stale lock was removed),
//! 1 when some stale lock is (still) there, 2 on a fatal error (bad configuration, no root
//! readable). Per-path errors do not abort: the table and the metrics list them on stderr
//! after the report, the JSON document in its `errors`. A closed stdout (`| head`) ends the
//! command quietly (and the scan with it, unless a reclaim pass is to follow).
//!
//! `--output FILE` never leaves a partial FILE: the report goes to a temporary file in the
//! same directory (a name node_exporter's textfile collector ignores, not ending in `.prom`),
//! which is synced and then renamed over FILE. A reader sees the old report or the new one.

use std::io::{self, IsTerminal, Write};
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use anyhow::Context;
use locksmith::config::{RawConfig, Settings};
use locksmith::probe::Snapshot;
use locksmith::probe::snapshot::Ahead;
use locksmith::reclaim::{self, ReclaimOptions};
use locksmith::remote;
use locksmith::report::{self, Column, Format, Head, Report, Scanned, Verdicts, Waiting};
use locksmith::scan::{self, Finding, Root, ScanError, ScanEvent};
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

/// Runs the scan (and the reclaim pass), writes the report as it goes, and returns the exit
/// status.
fn scan_and_report(args: &ScanArgs) -> anyhow::Result<i32> {
    // Read while the configuration is loaded and checked (and a killed reclaim's leftovers
    // put back).
    let ahead = (args.force.is_none() && args.pid.is_none()).then(Ahead::start);
    let mut raw = RawConfig::load(args.config.as_deref())?;
    raw.containers = !args.no_containers && args.paths.is_empty();
    for note in &raw.notes {
        eprintln!("locksmith: {note}");
    }
    let judging = serde_json::to_value(raw.judging()).ok();
    let settings = raw.validate()?;
    let format = format_of(args);
    let mut opts = report_options(args, format)?;
    if let Some(lock) = &args.force {
        return force_one(args, &settings, lock, format, &mut opts);
    }
    if let Some(pid) = args.pid {
        return waited_for(args, &settings.scan, pid, format, &mut opts);
    }
    if args.reclaim {
        // What a reclaim killed in the middle left under a private name is put back first,
        // for this scan to find it.
        reclaim::recover_killed_runs(&reclaim_options(args, &settings, false));
    }
    let roots = settings.scan.roots(&args.paths);
    let started = Instant::now();
    let mut snap = ahead.map_or_else(Snapshot::take, Ahead::take);
    if args.record.is_some() {
        snap = snap.recording();
        snap.keep(|e| e.settings = judging);
    }
    let head = Head {
        host: snap.host.clone(),
        roots: roots.iter().map(|r| r.path.clone()).collect(),
        now_ms: snap.taken_ms,
        reclaim: args.reclaim,
    };
    let mut output = Output::open(args.output.as_deref())?;
    opts.color = output.is_stdout() && use_color(args.color, io::stdout().is_terminal());
    let report = Report::new(format.into(), head, &opts, output.writer());
    let (tail, written, errors) = scan_into(args, &settings, &roots, &snap, started, report)?;
    match written {
        Ok(()) => {}
        // `locksmith --scan | head`: the reader has what it wanted.
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe && args.output.is_none() => {}
        Err(e) => return Err(output.failed(e)),
    }
    output.commit()?;
    print_errors(&errors, format)?;
    if let Some(file) = &args.record {
        write_recording(file, &snap, args.mask)?;
    }
    Ok(if tail.stale_remaining() > 0 { 1 } else { 0 })
}

/// Writes what the snapshot kept to `file`, atomically (masked when asked).
fn write_recording(file: &Path, snap: &Snapshot, mask: bool) -> anyhow::Result<()> {
    let Some(mut ev) = snap.evidence() else {
        return Ok(());
    };
    if mask {
        ev = locksmith::probe::mask::mask(ev);
    }
    let mut out = Output::open(Some(file))?;
    let written = out
        .writer()
        .write_all(format!("{}\n", ev.to_json()).as_bytes());
    if let Err(e) = written {
        return Err(out.failed(e));
    }
    out.commit()
        .with_context(|| format!("cannot write the recording {}", file.display()))
}

/// The scan into `report`, then the reclaim pass if asked: returns the report's numbers,
/// whether it was all written, and the per-path errors (sorted).
fn scan_into(
    args: &ScanArgs,
    settings: &Settings,
    roots: &[Root],
    snap: &Snapshot,
    started: Instant,
    report: Report<'_>,
) -> anyhow::Result<(report::Tail, io::Result<()>, Vec<ScanError>)> {
    let ask = asking(args, settings);
    let report = Mutex::new(report);
    let errors: Mutex<Vec<ScanError>> = Mutex::default();
    // Locks whose host is asked: reported once it has answered.
    let asked: Mutex<Vec<Finding>> = Mutex::default();
    // The stale locks, for the reclaim pass: what it needs of each (see reclaim::JudgedList).
    let stale: Mutex<reclaim::JudgedList> = Mutex::default();
    let cancel = AtomicBool::new(false);
    let listed = lock(&report).listed();
    let emit = |f: &Finding| {
        let v = f.judgement.verdict();
        if args.reclaim && v == Verdict::Stale {
            lock(&stale).push(f);
        }
        // Who waits for it, found as it is written (only for a lock that is listed).
        let waiting = if listed.contains(v) {
            report::waiting::of(f, snap)
        } else {
            Waiting::default()
        };
        let mut r = lock(&report);
        r.lock(f, &waiting);
        // Nobody reads the report any more: the scan ends, unless a reclaim pass follows.
        if r.failure().is_some() && !args.reclaim {
            cancel.store(true, Ordering::Relaxed);
        }
    };
    let sink = |event: ScanEvent| match event {
        ScanEvent::Found(f) if ask && f.judgement.remote.is_some() => lock(&asked).push(*f),
        ScanEvent::Found(f) => emit(&f),
        ScanEvent::Error(e) => lock(&errors).push(e),
        ScanEvent::Progress { .. } => {}
    };
    let stats = scan::scan(&settings.scan, roots, snap, &cancel, &sink)
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let mut asked = asked.into_inner().unwrap_or_else(|e| e.into_inner());
    if ask {
        remote::ask_and_settle(&mut asked, &settings.remote, args.ask_hosts, &|_| {});
        for f in &asked {
            emit(f);
        }
    }
    let mut errors = errors.into_inner().unwrap_or_else(|e| e.into_inner());
    errors.sort_by(|a, b| a.path().cmp(b.path()));
    let mut report = report.into_inner().unwrap_or_else(|e| e.into_inner());
    report.scanned(&Scanned {
        entries: stats.entries,
        elapsed: started.elapsed(),
        errors: &errors,
    });
    if args.reclaim {
        let opts = reclaim_options(args, settings, false);
        let stale = stale.into_inner().unwrap_or_else(|e| e.into_inner());
        // A lock proven stale by its host's answer is judged again by asking again, right
        // before removal, like every reclaim judges again: each host once for the reclaim.
        let asked = stale.asked();
        let reask = ask.then(|| remote::Reask::new(&settings.remote, args.ask_hosts, &asked));
        reclaim::reclaim_judged(
            &stale,
            &settings.scan,
            &opts,
            |judged, fresh| {
                if let Some(reask) = &reask {
                    reask.settle(judged, fresh);
                }
            },
            |o| report.reclaimed(&o),
        );
    }
    let (tail, written) = report.finish();
    Ok((tail, written, errors))
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Reclaim's settings with what the command line asks of this run.
fn reclaim_options(args: &ScanArgs, settings: &Settings, force: bool) -> ReclaimOptions {
    ReclaimOptions {
        dry_run: args.dry_run,
        include_unsaved: args.include_unsaved,
        force,
        remove_uncopied: args.remove_uncopied,
        ..settings.reclaim.clone()
    }
}

/// `--scan --reclaim --force LOCK`: one lock, named by its own path, removed although it is
/// not proven stale, on the word of the person who named it (never a live or free one: it is
/// judged again at the moment of removal, as every reclaim). A directory that is not itself a
/// lock is refused: forcing never scans.
fn force_one(
    args: &ScanArgs,
    settings: &Settings,
    lock: &Path,
    format: ReportFormat,
    opts: &mut report::Options,
) -> anyhow::Result<i32> {
    let started = Instant::now();
    let snap = Snapshot::take();
    let lock =
        std::path::absolute(lock).with_context(|| format!("cannot resolve {}", lock.display()))?;
    let finding = scan::judge_path(&lock, &snap, &settings.scan)
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
    let head = Head {
        host: snap.host.clone(),
        roots: vec![lock.clone()],
        now_ms: snap.taken_ms,
        reclaim: true,
    };
    opts.color = use_color(args.color, io::stdout().is_terminal());
    let mut report = Report::new(format.into(), head, opts, io::BufWriter::new(io::stdout()));
    report.lock(&finding, &Waiting::default());
    report.scanned(&Scanned {
        entries: 1,
        elapsed: started.elapsed(),
        errors: &[],
    });
    let outcomes = reclaim::reclaim_all_settled(
        [&finding],
        &settings.scan,
        &reclaim_options(args, settings, true),
        |_, _| {},
    );
    let removed = outcomes.iter().all(|o| o.ok);
    for o in &outcomes {
        report.reclaimed(o);
    }
    let code = if removed { 0 } else { 1 };
    match report.finish().1 {
        Ok(()) => Ok(code),
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(code),
        Err(e) => Err(e).context("cannot write the report"),
    }
}

/// `--scan --pid N`: the report of the locks process N waits for (see [`super::waiting`]),
/// on stdout; the table is preceded by a line saying what N is doing.
fn waited_for(
    args: &ScanArgs,
    config: &scan::Config,
    pid: i32,
    format: ReportFormat,
    opts: &mut report::Options,
) -> anyhow::Result<i32> {
    let waited = super::waiting::find(pid, config)?;
    let written = (|| {
        if format == ReportFormat::Table {
            writeln!(io::stdout(), "{}", waited.says)?;
        }
        let head = Head {
            host: waited.snap.host.clone(),
            roots: waited.roots.clone(),
            now_ms: waited.snap.taken_ms,
            reclaim: false,
        };
        opts.color = use_color(args.color, io::stdout().is_terminal());
        let mut report = Report::new(format.into(), head, opts, io::BufWriter::new(io::stdout()));
        for f in &waited.findings {
            report.lock(f, &report::waiting::of(f, &waited.snap));
        }
        report.scanned(&Scanned {
            entries: waited.entries,
            elapsed: waited.started.elapsed(),
            errors: &waited.errors,
        });
        report.finish().1?;
        print_errors(&waited.errors, format)
    })();
    let code = if waited.stale() { 1 } else { 0 };
    match written {
        Ok(()) => Ok(code),
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(code),
        Err(e) => Err(e).context("cannot write the report"),
    }
}

/// Whether foreign locks' hosts are asked: `--ask-hosts`, or hosts listed in the configuration.
fn asking(args: &ScanArgs, settings: &Settings) -> bool {
    args.ask_hosts || !settings.remote.hosts().is_empty()
}

/// `--json` is short for `--format json`; the table is the default.
fn format_of(args: &ScanArgs) -> ReportFormat {
    match (args.json, args.format) {
        (true, _) => ReportFormat::Json,
        (false, Some(f)) => f,
        (false, None) => ReportFormat::Table,
    }
}

impl From<ReportFormat> for Format {
    fn from(f: ReportFormat) -> Format {
        match f {
            ReportFormat::Table => Format::Table,
            ReportFormat::Json => Format::Json,
            ReportFormat::Prometheus => Format::Prometheus,
        }
    }
}

/// The report's options from the command line (color is decided where it is written). The
/// table's own options are refused with another format.
fn report_options(args: &ScanArgs, format: ReportFormat) -> anyhow::Result<report::Options> {
    let table_only = [
        (!args.columns.is_empty(), "--columns"),
        (args.noheadings, "--noheadings"),
        (args.raw, "--raw"),
    ];
    if format != ReportFormat::Table
        && let Some((_, flag)) = table_only.iter().find(|(given, _)| *given)
    {
        anyhow::bail!(
            "{flag} is an option of the table, not of --format {}: the {} report has all its \
             fields (--verdict chooses its locks)",
            format_name(format),
            format_name(format)
        );
    }
    let columns = args
        .columns
        .iter()
        .map(|name| {
            Column::by_name(name).ok_or_else(|| anyhow::anyhow!("no column named {name:?}"))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let verdicts = if args.verdict.is_empty() {
        Verdicts::ALL
    } else {
        args.verdict
            .iter()
            .map(|v| {
                Verdict::ALL
                    .into_iter()
                    .find(|x| x.as_str() == v)
                    .ok_or_else(|| anyhow::anyhow!("no verdict named {v:?}"))
            })
            .collect::<anyhow::Result<Verdicts>>()?
    };
    Ok(report::Options {
        verdicts,
        columns: if columns.is_empty() {
            Column::DEFAULT.to_vec()
        } else {
            columns
        },
        headings: !args.noheadings,
        raw: args.raw,
        color: false,
        max_lock_series: args.max_lock_series,
    })
}

fn format_name(f: ReportFormat) -> &'static str {
    match f {
        ReportFormat::Table => "table",
        ReportFormat::Json => "json",
        ReportFormat::Prometheus => "prometheus",
    }
}

/// Where the report goes: stdout, or FILE through a temporary file in its directory, synced,
/// then renamed over FILE ([`Output::commit`]). The temporary file is removed if anything
/// fails. Its mode is 0644 less the umask, as a new file's would be, so a collector running
/// as another user can read it.
enum Output {
    Stdout,
    File {
        path: std::path::PathBuf,
        dir: std::path::PathBuf,
        tmp: tempfile::NamedTempFile,
    },
}

impl Output {
    fn open(path: Option<&Path>) -> anyhow::Result<Output> {
        let Some(path) = path else {
            return Ok(Output::Stdout);
        };
        let cannot = || format!("cannot write the report to {}", path.display());
        use std::os::unix::fs::PermissionsExt;
        let name = path
            .file_name()
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "not a file name"))
            .with_context(cannot)?;
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        let mut prefix = std::ffi::OsString::from(".");
        prefix.push(name);
        prefix.push(".");
        let tmp = tempfile::Builder::new()
            .prefix(&prefix)
            .suffix(".tmp")
            .permissions(std::fs::Permissions::from_mode(0o644))
            .tempfile_in(dir)
            .with_context(cannot)?;
        Ok(Output::File {
            path: path.to_path_buf(),
            dir: dir.to_path_buf(),
            tmp,
        })
    }

    fn is_stdout(&self) -> bool {
        matches!(self, Output::Stdout)
    }

    fn writer(&mut self) -> Box<dyn Write + Send + '_> {
        match self {
            Output::Stdout => Box::new(io::BufWriter::new(io::stdout())),
            Output::File { tmp, .. } => Box::new(io::BufWriter::new(tmp.as_file_mut())),
        }
    }

    fn failed(&self, e: io::Error) -> anyhow::Error {
        match self {
            Output::Stdout => anyhow::Error::new(e).context("cannot write the report"),
            Output::File { path, .. } => anyhow::Error::new(e)
                .context(format!("cannot write the report to {}", path.display())),
        }
    }

    /// FILE gets the report: the temporary file is synced and renamed over it.
    fn commit(self) -> anyhow::Result<()> {
        let Output::File { path, dir, tmp } = self else {
            return Ok(());
        };
        let cannot = || format!("cannot write the report to {}", path.display());
        tmp.as_file().sync_all().with_context(cannot)?;
        tmp.persist(&path)
            .map_err(|e| e.error)
            .with_context(cannot)?;
        // The rename is durable once the directory is synced; failing that is not an error.
        if let Ok(d) = std::fs::File::open(&dir) {
            let _ = d.sync_all();
        }
        Ok(())
    }
}

/// Per-path errors on stderr, for the views that do not carry them (the table, the metrics:
/// those count them only).
fn print_errors(errors: &[ScanError], format: ReportFormat) -> io::Result<()> {
    if format != ReportFormat::Json && !errors.is_empty() {
        let mut err = io::stderr().lock();
        for line in report::table::render_errors(errors).lines() {
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
