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
use std::time::{Duration, Instant};

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
            // No root could be read: what each said, each with why (whose directory, which
            // right is missing) and what to do.
            let errors = e
                .downcast_ref::<NoRoot>()
                .map(|n| n.errors.clone())
                .unwrap_or_default();
            for err in &errors {
                super::report_error("", &format!("{}: {err}", err.path().display()));
            }
            super::report_error("", &message);
            // A script reading the JSON report gets a JSON report on a fatal error too, with
            // the error in it (not with --output, whose FILE keeps the last report).
            if format_of(&args) == ReportFormat::Json && args.output.is_none() {
                print!("{}", fatal_json(&args, &message, &errors));
            }
            2
        }
    }
}

/// What `--scan --json` prints on a fatal error (exit status 2): a report of no lock (what
/// each root said in `errors`) with the error and the exit status in it, so that it is a
/// report to the schema (`tests/report.schema.json`, and its `$defs/fatal_error`).
fn fatal_json(args: &ScanArgs, message: &str, errors: &[ScanError]) -> String {
    let head = Head {
        host: locksmith::probe::HostFacts::probe(),
        roots: args
            .paths
            .iter()
            .map(|p| std::path::absolute(p).unwrap_or_else(|_| p.clone()))
            .collect(),
        now_ms: jiff::Timestamp::now().as_millisecond(),
        reclaim: false,
    };
    let mut out = Vec::new();
    let mut report = Report::new(Format::Json, head, &report::Options::default(), &mut out);
    report.scanned(&Scanned {
        entries: 0,
        elapsed: Duration::ZERO,
        errors,
    });
    let _ = report.finish();
    let mut doc: serde_json::Value = serde_json::from_slice(&out).unwrap_or_default();
    let hint = errors
        .iter()
        .find_map(|e| super::permission_hint(&format!("{}: {e}", e.path().display())))
        .or_else(|| super::permission_hint(message));
    doc["error"] = serde_json::json!({ "message": message, "hint": hint });
    doc["exit_status"] = 2.into();
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
    // Without headings the table's rows are alone on stdout: the rest goes to stderr.
    let report = Report::with_side(format.into(), head, &opts, output.writer(), side());
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
    // The clock goes in whether a rule compared times or not: a replay of the recording
    // changed (another mtime, another boot) may.
    snap.clock();
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
    // Progress on stderr, when a person watches it and nothing else is written there while
    // the scan runs (a JSON document streams to stdout as it goes: not on the same terminal).
    let format = format_of(args);
    let watched = io::stderr().is_terminal()
        && (format != ReportFormat::Json || args.output.is_some() || !io::stdout().is_terminal());
    let meter = Meter::new(watched.then(io::stderr), PROGRESS_AFTER);
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
        ScanEvent::Progress { entries, locks } => meter.show(entries, locks, Instant::now()),
    };
    let stats = scan::scan(&settings.scan, roots, snap, &cancel, &sink);
    meter.clear();
    let stats = stats.map_err(|e| NoRoot {
        message: e.to_string(),
        errors: std::mem::take(&mut *lock(&errors)),
    })?;
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

/// How long a scan runs in silence before its progress is shown.
const PROGRESS_AFTER: Duration = Duration::from_secs(1);
/// How often the progress line is written again, at most.
const PROGRESS_EVERY: Duration = Duration::from_millis(200);

/// The progress of a scan on one line of a terminal (`scanning: 1,234,567 entries walked,
/// 12 locks found…`), written once the scan has run for `after`, rewritten in place at most
/// every [`PROGRESS_EVERY`], and erased when the scan ends, before anything else is written.
/// Off (`out` is `None`) when nobody watches stderr.
struct Meter<W: Write> {
    state: Mutex<MeterState<W>>,
    after: Duration,
}

struct MeterState<W> {
    out: Option<W>,
    started: Instant,
    /// When the line was last written; `None`: not on screen.
    shown: Option<Instant>,
}

impl<W: Write> Meter<W> {
    fn new(out: Option<W>, after: Duration) -> Self {
        Meter {
            state: Mutex::new(MeterState {
                out,
                started: Instant::now(),
                shown: None,
            }),
            after,
        }
    }

    /// The scan has walked `entries` and found `locks`, at `now`.
    fn show(&self, entries: u64, locks: u64, now: Instant) {
        let mut st = lock(&self.state);
        let due = now.saturating_duration_since(st.started) >= self.after
            && st
                .shown
                .is_none_or(|t| now.saturating_duration_since(t) >= PROGRESS_EVERY);
        if !due {
            return;
        }
        let Some(out) = st.out.as_mut() else { return };
        let line = format!(
            "\r\x1b[2Kscanning: {} entries walked, {} lock{} found…",
            thousands(entries),
            thousands(locks),
            if locks == 1 { "" } else { "s" }
        );
        if out
            .write_all(line.as_bytes())
            .and_then(|()| out.flush())
            .is_ok()
        {
            st.shown = Some(now);
        }
    }

    /// Erases the line, if it is on screen.
    fn clear(&self) {
        let mut st = lock(&self.state);
        if st.shown.take().is_some()
            && let Some(out) = st.out.as_mut()
        {
            let _ = out.write_all(b"\r\x1b[2K").and_then(|()| out.flush());
        }
    }
}

/// `1,234,567`.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// No root could be read: the scan's fatal error, with what each root said.
#[derive(Debug)]
pub(crate) struct NoRoot {
    pub message: String,
    pub errors: Vec<ScanError>,
}

impl std::fmt::Display for NoRoot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for NoRoot {}

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
    let mut report = Report::with_side(
        format.into(),
        head,
        opts,
        io::BufWriter::new(io::stdout()),
        side(),
    );
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

/// Where a table without headings writes what is not a row (notes, reclaim lines, the
/// summary): stderr.
fn side<'a>() -> Option<Box<dyn Write + Send + 'a>> {
    Some(Box::new(io::stderr()))
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
    let columns = columns_of(&args.columns)?;
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
        columns,
        headings: !args.noheadings,
        raw: args.raw,
        color: false,
        max_lock_series: args.max_lock_series,
    })
}

/// The table's columns from `--columns`: the names in their order, or, when every one is
/// `+NAME` (as with lslocks and ps), the default columns and those after them; none: the
/// default.
fn columns_of(names: &[String]) -> anyhow::Result<Vec<Column>> {
    let column = |name: &str| {
        Column::by_name(name).ok_or_else(|| anyhow::anyhow!("no column named {name:?}"))
    };
    let added = names.iter().filter(|n| n.starts_with('+')).count();
    if names.is_empty() {
        return Ok(Column::DEFAULT.to_vec());
    }
    if added == 0 {
        return names.iter().map(|n| column(n)).collect();
    }
    if added < names.len() {
        anyhow::bail!(
            "--columns takes either the columns to show ({}) or columns to add to the default \
             ones (+size,+fs), not both",
            names.join(",")
        );
    }
    let mut out = Column::DEFAULT.to_vec();
    for n in names {
        let c = column(&n[1..])?;
        if !out.contains(&c) {
            out.push(c);
        }
    }
    Ok(out)
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
        for (e, line) in errors
            .iter()
            .zip(report::table::render_errors(errors).lines())
        {
            writeln!(err, "locksmith: {line}")?;
            // A root this user may not read says why, and what to do.
            if e.depth() == Some(0)
                && e.kind() == Some(io::ErrorKind::PermissionDenied)
                && let Some(hint) = super::permission_hint(&format!("{}: {e}", e.path().display()))
            {
                writeln!(err, "locksmith: hint: {}", text::escape(&hint))?;
            }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plus_columns_add_to_the_default_ones() {
        let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(columns_of(&[]).unwrap(), Column::DEFAULT);
        assert_eq!(
            columns_of(&names(&["path", "size"])).unwrap(),
            [Column::Path, Column::Size]
        );
        let mut plus = Column::DEFAULT.to_vec();
        plus.extend([Column::Waiters, Column::Size]);
        assert_eq!(
            columns_of(&names(&["+waiters", "+size", "+path"])).unwrap(),
            plus
        );
        let mixed = columns_of(&names(&["path", "+size"]))
            .unwrap_err()
            .to_string();
        assert!(mixed.contains("not both"), "{mixed}");
    }

    /// A scan's progress: nothing for a moment, then one line rewritten in place at most every
    /// [`PROGRESS_EVERY`], erased at the end; nothing at all when nobody watches.
    #[test]
    fn progress_shows_after_a_moment_on_one_line_and_is_erased() {
        let t0 = Instant::now();
        let after = Duration::from_secs(1);
        let meter = Meter::new(Some(Vec::new()), after);
        let at = |ms| t0 + Duration::from_millis(ms);
        let written = |m: &Meter<Vec<u8>>| {
            String::from_utf8(lock(&m.state).out.clone().unwrap_or_default()).unwrap()
        };
        // Its clock starts when it is made: stand in for a scan started at t0.
        lock(&meter.state).started = t0;
        meter.show(10, 0, at(500));
        assert_eq!(written(&meter), "", "a short scan shows nothing");
        meter.show(1_234_567, 1, at(1_000));
        assert_eq!(
            written(&meter),
            "\r\x1b[2Kscanning: 1,234,567 entries walked, 1 lock found…"
        );
        meter.show(1_300_000, 2, at(1_100));
        assert!(!written(&meter).contains("1,300,000"), "not more often");
        meter.show(1_400_000, 2, at(1_200));
        assert!(written(&meter).ends_with("1,400,000 entries walked, 2 locks found…"));
        assert_eq!(
            written(&meter).matches('\n').count(),
            0,
            "one line, rewritten"
        );
        meter.clear();
        assert!(written(&meter).ends_with("\r\x1b[2K"));
        let quiet: Meter<Vec<u8>> = Meter::new(None, Duration::ZERO);
        quiet.show(1, 1, Instant::now());
        quiet.clear();
        assert!(lock(&quiet.state).out.is_none());
    }
}
