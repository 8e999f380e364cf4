//! `locksmith why [MESSAGE...]`: the error message a program printed (as arguments, or on
//! standard input: `PROGRAM 2>&1 | locksmith why`), answered in a few lines: which lock it
//! is about, its verdict with the evidence, and the one next step (see
//! [`locksmith::why`]). `--json` writes the same as a report of that one lock, with a `why`
//! object beside the report's fields. Nothing is removed unless `--reclaim` is given, and then
//! only a lock that is stale when it is judged again, through the reclaim entry (copy, journal,
//! undo), as `--scan --reclaim` does.
//!
//! Exit status: 0 the lock was found and is not stale (or was removed), 1 it is stale and
//! still there, 2 error, 3 no lock found (the message is not one locksmith knows, or its lock
//! is not where its program keeps it).

use std::io::{self, IsTerminal, Read, Write};
use std::time::Instant;

use anyhow::Context as _;
use locksmith::config::RawConfig;
use locksmith::probe::Snapshot;
use locksmith::reclaim::{self, Reclaim, ReclaimOptions};
use locksmith::report::{self, Format, Head, Report, Scanned};
use locksmith::text;
use locksmith::verdict::Verdict;
use locksmith::why::{self, Answer, Context, Step};

use crate::{ColorChoice, WhyArgs};

/// The exit status when no lock was found.
pub const EXIT_NOT_FOUND: i32 = 3;

/// At most this much of standard input is read (the end of it kept: the error comes last).
const INPUT_LIMIT: usize = 1 << 20;

pub fn run(args: WhyArgs) -> i32 {
    match why(&args) {
        Ok(code) => code,
        Err(e) => {
            super::report_error("why", &format!("{e:#}"));
            2
        }
    }
}

fn why(args: &WhyArgs) -> anyhow::Result<i32> {
    let message = message(args)?;
    if message.trim().is_empty() {
        anyhow::bail!(
            "no message: give the program's error message as arguments, or pipe it in \
             (`{}`)",
            locksmith::why::PIPE_EXAMPLE
        );
    }
    let raw = RawConfig::load(args.config.as_deref())?;
    for note in &raw.notes {
        eprintln!("locksmith: {note}");
    }
    let settings = raw.validate()?;
    let started = Instant::now();
    let snap = Snapshot::take();
    let ctx = Context::current();
    let answer = why::answer(&message, &ctx, &snap, &settings.scan);
    let step = why::next_step(&answer, &snap);

    let opts = ReclaimOptions {
        include_unsaved: false,
        force: false,
        dry_run: false,
        ..settings.reclaim.clone()
    };
    let outcome = match (&answer.lock, args.reclaim) {
        (Some(f), true) if f.judgement.verdict() == Verdict::Stale => {
            reclaim::recover_killed_runs(&opts);
            let mut outcome = None;
            Reclaim::new(&settings.scan)
                .options(opts.clone())
                .run([f], |o| outcome = Some(o));
            outcome
        }
        _ => None,
    };
    let removed = outcome.as_ref().is_some_and(|o| o.ok);
    let code = match &answer.lock {
        None => EXIT_NOT_FOUND,
        Some(f) if f.judgement.verdict() == Verdict::Stale && !removed => 1,
        Some(_) => 0,
    };
    let written = if args.json {
        let head = Head {
            host: snap.host.clone(),
            roots: answer.lock.iter().map(|f| f.path.clone()).collect(),
            now_ms: snap.taken_ms,
            reclaim: args.reclaim,
        };
        let mut buf = Vec::new();
        let mut report = Report::new(Format::Json, head, &report::Options::default(), &mut buf);
        if let Some(f) = &answer.lock {
            report.lock(f, &report::waiting::of(f, &snap));
        }
        report.scanned(&Scanned {
            entries: answer.looked.len() as u64,
            elapsed: started.elapsed(),
            errors: &answer.errors,
        });
        if let Some(o) = &outcome {
            report.reclaimed(o);
        }
        report.finish().1.context("cannot write the report")?;
        let mut doc: serde_json::Value =
            serde_json::from_slice(&buf).context("cannot write the report")?;
        doc["why"] = why_json(&answer, &step);
        let pretty = serde_json::to_string_pretty(&doc).context("cannot write the report")?;
        writeln!(io::stdout(), "{}", text::terminal_safe_json(&pretty))
    } else {
        let color = use_color(args.color, io::stdout().is_terminal());
        let mut out = render(&answer, &step, &snap, color);
        if let Some(o) = &outcome {
            out.push_str(&report::table::reclaimed_line(o));
            if o.ok {
                out.push_str("undo: locksmith restore\n");
            }
        } else if args.reclaim && answer.lock.is_some() {
            out.push_str("not removed: only a stale lock is removed by --reclaim\n");
        }
        io::stdout().write_all(out.as_bytes())
    };
    match written {
        Ok(()) => Ok(code),
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(code),
        Err(e) => Err(e).context("cannot write the answer"),
    }
}

/// The message: the arguments joined by spaces, or standard input (at most its last MiB).
fn message(args: &WhyArgs) -> anyhow::Result<String> {
    if !args.message.is_empty() {
        return Ok(args.message.join(" "));
    }
    let stdin = io::stdin();
    if stdin.is_terminal() {
        eprintln!("locksmith why: paste the error message, then press Ctrl-D");
    }
    let mut bytes = Vec::new();
    let mut chunk = vec![0u8; 64 * 1024];
    let mut lock = stdin.lock();
    loop {
        let n = match lock.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e).context("cannot read the message from standard input"),
        };
        bytes.extend_from_slice(&chunk[..n]);
        if bytes.len() > 2 * INPUT_LIMIT {
            bytes.drain(..bytes.len() - INPUT_LIMIT);
        }
    }
    if bytes.len() > INPUT_LIMIT {
        bytes.drain(..bytes.len() - INPUT_LIMIT);
    }
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// The answer for a person: whose message, which lock, its verdict and evidence, the next
/// step. Every text from outside is escaped.
fn render(a: &Answer, step: &Step, snap: &Snapshot, color: bool) -> String {
    let mut out = String::new();
    let program = a.recognised.as_ref().map(|r| r.program);
    match (&a.lock, program) {
        (Some(f), Some(p)) => {
            out.push_str(&format!(
                "{p}: its lock is {}\n",
                text::display_path(&f.path)
            ));
        }
        (Some(f), None) => out.push_str(&format!(
            "locksmith does not know this message, but it names a lock: {}\n",
            text::display_path(&f.path)
        )),
        (None, Some(p)) => out.push_str(&format!("{p}: no lock found\n")),
        (None, None) => out.push_str("locksmith does not know this message\n"),
    }
    if let Some(f) = &a.lock {
        let v = f.judgement.verdict();
        let cell = report::table::verdict_cell(v);
        let cell = if color {
            format!("{}{cell}\x1b[0m", report::table::color_of(v))
        } else {
            cell
        };
        let age = f
            .modified_ms
            .map(|m| {
                format!(
                    ", {} old",
                    report::human_age(report::age_secs(m, snap.taken_ms))
                )
            })
            .unwrap_or_default();
        out.push_str(&format!("{cell} ({}{age})\n", f.dialect));
        for e in &f.judgement.evidence {
            out.push_str(&format!("  • {}\n", text::escape(e)));
        }
    } else if !a.looked.is_empty() {
        out.push_str("looked for it at:\n");
        for l in &a.looked {
            out.push_str(&format!("  {}\n", text::escape(l)));
        }
    }
    for e in &a.errors {
        out.push_str(&format!(
            "  could not examine {}: {}\n",
            text::display_path(e.path()),
            text::escape(&e.to_string())
        ));
    }
    out.push_str(&format!("next: {}", text::escape(&step.text)));
    match &step.command {
        Some(c) => out.push_str(&format!(":\n  {c}\n")),
        None => out.push_str(".\n"),
    }
    out
}

/// The `why` object of the JSON answer (README: `locksmith why`).
fn why_json(a: &Answer, step: &Step) -> serde_json::Value {
    let r = a.recognised.as_ref();
    serde_json::json!({
        "recognised": r.is_some(),
        "program": r.map(|r| r.program),
        "dialect": r.map(|r| r.dialect.as_str()),
        "language": r.map(|r| r.lang),
        "pid": r.and_then(|r| r.pid()),
        "host": r.and_then(|r| r.host()),
        "path": a.lock.as_ref().map(|f| text::json_path(&f.path)),
        "looked": a.looked,
        "next": step,
    })
}

/// `always` and `never` are obeyed; `auto` colors only a terminal, and not when `NO_COLOR`
/// is set to something.
fn use_color(choice: ColorChoice, is_terminal: bool) -> bool {
    match choice {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => {
            is_terminal && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
        }
    }
}
