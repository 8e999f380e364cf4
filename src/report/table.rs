//! The table view, in the spirit of `lslocks`: one line per lock with the chosen columns
//! (VERDICT, DIALECT, PID, COMMAND, HOST, AGE, PATH by default), sorted stale first and
//! aligned, then notes (the actions offered for locks a flag keeps, then waiters and stuck holders), what a reclaim
//! pass did, and a summary line.
//! Each verdict has its own symbol, so the table reads without color; color (ANSI, on the
//! verdict only) is the caller's choice. Every foreign string is escaped.
//!
//! `--raw` writes the rows only (and the header), without alignment or cutting: fields are
//! separated by one space and each is escaped so that it is one word (a space is `\x20`),
//! as `lslocks --raw` does; the verdict is its name, without its symbol.
//!
//! Without headings (`--noheadings`) the table's output is its rows only, so that a `while
//! read` loop sees nothing else: the notes, what a reclaim pass did and the summary line go to
//! the writer's *side* output (stderr, for the command line) instead.
//!
//! Being sorted and aligned, the table is written when the scan is over; until then it keeps
//! one [`Row`] per lock: typed values (the text of the cells is made when they are written),
//! the repeated text (commands, hosts) shared between rows.

use std::collections::HashSet;
use std::fmt::Write as _;
use std::io::{self, Write};
use std::path::Path;
use std::sync::Arc;

use super::waiting::Waiting;
use super::{Head, Options, Scanned, Tail, age_secs, human_age, verdict_rank};
use crate::dialect::{DialectId, EntryKind, Offer};
use crate::outcome::{Action, Outcome};
use crate::scan::{Finding, ScanError};
use crate::text;
use crate::verdict::Verdict;

/// Longest COMMAND and HOST cells before they are cut with `…` (not in `--raw`).
const MAX_COMMAND: usize = 20;
const MAX_HOST: usize = 24;
const RESET: &str = "\x1b[0m";

/// A column of the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Column {
    /// The verdict, with its symbol.
    Verdict,
    /// The dialect id.
    Dialect,
    /// A live lock's holder's PID (the live process's, or the first holder's), else the
    /// owner's.
    Pid,
    /// The live process's name (or the first holder's).
    Command,
    /// The owner's host, or the container its process runs in (`ctr:web-1`; a sandbox
    /// `sandbox:NAME`, a PID namespace no runtime made `ns:INODE`).
    Host,
    /// Time since the lock was last modified.
    Age,
    /// The lock's path.
    Path,
    /// Size in bytes (files and symlinks).
    Size,
    /// `file`, `symlink`, `dir`.
    Kind,
    /// When the lock was last modified (RFC 3339).
    Modified,
    /// The file system's type (`ext4`, `nfs4`, `fuse.sshfs`, ...).
    Fs,
    /// The first evidence line: why the lock has its verdict.
    Evidence,
    /// The processes waiting for the lock (lslocks shows a waiter's BLOCKER: here, the lock's
    /// holder in PID).
    Waiters,
}

impl Column {
    /// Every column, in the order `--help` lists them.
    pub const ALL: [Column; 13] = [
        Column::Verdict,
        Column::Dialect,
        Column::Pid,
        Column::Command,
        Column::Host,
        Column::Age,
        Column::Path,
        Column::Size,
        Column::Kind,
        Column::Modified,
        Column::Fs,
        Column::Evidence,
        Column::Waiters,
    ];

    /// The columns of the table when none are chosen.
    pub const DEFAULT: [Column; 7] = [
        Column::Verdict,
        Column::Dialect,
        Column::Pid,
        Column::Command,
        Column::Host,
        Column::Age,
        Column::Path,
    ];

    /// The name `--columns` takes: `verdict`, `pid`, ...
    pub fn name(self) -> &'static str {
        match self {
            Column::Verdict => "verdict",
            Column::Dialect => "dialect",
            Column::Pid => "pid",
            Column::Command => "command",
            Column::Host => "host",
            Column::Age => "age",
            Column::Path => "path",
            Column::Size => "size",
            Column::Kind => "kind",
            Column::Modified => "modified",
            Column::Fs => "fs",
            Column::Evidence => "evidence",
            Column::Waiters => "waiters",
        }
    }

    /// The column named `name` (any case).
    pub fn by_name(name: &str) -> Option<Column> {
        Column::ALL
            .into_iter()
            .find(|c| c.name().eq_ignore_ascii_case(name))
    }

    /// What the column shows (for `--help`).
    pub fn about(self) -> &'static str {
        match self {
            Column::Verdict => "the verdict, with its symbol",
            Column::Dialect => "the lock format (pidfile, mkdir-lock, flock, ...)",
            Column::Pid => "a live lock's holder's PID, else the owner's",
            Column::Command => "the live process's name (or a holder's)",
            Column::Host => {
                "the owner's host, or its container (ctr:NAME), sandbox (sandbox:NAME) or PID \
                 namespace (ns:INODE)"
            }
            Column::Age => "time since the lock was last modified",
            Column::Path => "the lock's path",
            Column::Size => "size in bytes",
            Column::Kind => "file, symlink or dir",
            Column::Modified => "when the lock was last modified (RFC 3339)",
            Column::Fs => "the file system's type (ext4, nfs4, fuse.sshfs, ...)",
            Column::Evidence => "the first evidence line: why it has its verdict",
            Column::Waiters => {
                "the processes waiting for it (PID and name, +N for more): the PID column is \
                 what lslocks calls their BLOCKER"
            }
        }
    }

    /// The header: `VERDICT`, `PID`, ... (the name in capitals).
    pub fn title(self) -> String {
        self.name().to_ascii_uppercase()
    }

    /// The column's position in [`Column::ALL`] (for per-column arrays).
    pub fn index(self) -> usize {
        self as usize
    }
}

/// Whom a row names, as raw values: the owner's PID, the command, and the host (or the
/// container, `ctr:web-1`). The table and the terminal UI build their cells from it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Who {
    pub pid: Option<i64>,
    pub command: Option<String>,
    pub host: Option<String>,
}

impl Who {
    pub fn of(f: &Finding) -> Who {
        let j = &f.judgement;
        // A held lock names who holds it now (the PID a file records may be a process that
        // has exited, its lock kept by a child); any other, the owner it records.
        let holding = j
            .process
            .as_ref()
            .map(|p| p.pid as i64)
            .or_else(|| j.holders.iter().find(|h| h.pid > 0).map(|h| h.pid as i64));
        let recorded = j.owner.as_ref().and_then(|o| o.pid);
        let pid = if j.verdict() == Verdict::Live {
            holding.or(recorded)
        } else {
            recorded.or(holding)
        };
        let command = j
            .process
            .as_ref()
            .map(|p| p.name.clone())
            .or_else(|| j.holders.iter().find_map(|h| h.name.clone()));
        // A process in a container is named by its container (`ctr:web-1`).
        let container = j
            .process
            .as_ref()
            .and_then(|p| p.container.as_ref())
            .or_else(|| j.holders.iter().find_map(|h| h.container.as_ref()));
        let host = container
            .map(|c| host_label(&c.id))
            .or_else(|| j.owner.as_ref().and_then(|o| o.hostname.clone()));
        Who { pid, command, host }
    }
}

/// What the HOST column calls the container a process runs in, by what it is: a container
/// (`ctr:web-1`, also a systemd-nspawn or LXC machine), a Flatpak or snap sandbox
/// (`sandbox:org.gnome.Builder`), or a PID namespace no runtime is proven to have made: a
/// user's own `unshare`, bwrap, a browser's sandbox (`ns:4026532252`, its inode), never called
/// a container.
pub fn host_label(c: &crate::verdict::ContainerId) -> String {
    match c.runtime.as_str() {
        "unknown" => {
            let inode =
                c.id.strip_prefix("pid:[")
                    .and_then(|s| s.strip_suffix(']'))
                    .unwrap_or(&c.id);
            format!("ns:{inode}")
        }
        "flatpak" | "snap" => format!("sandbox:{}", c.label()),
        _ => format!("ctr:{}", c.label()),
    }
}

/// One line of the table: the values its cells show, raw (the text of a cell, escaped, is
/// made by [`Row::cell`] when it is written). What only some columns need (the evidence, the
/// file system) is kept only when asked for ([`Row::with`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    pub verdict: Verdict,
    pub dialect: DialectId,
    pub pid: Option<i64>,
    pub command: Option<Arc<str>>,
    pub host: Option<Arc<str>>,
    /// mtime in ms since the epoch.
    pub modified_ms: Option<i64>,
    pub path: Box<Path>,
    pub size: Option<u64>,
    pub kind: EntryKind,
    /// The file system's type, when the FS column is shown.
    pub fs: Option<Arc<str>>,
    /// The first evidence line, when the EVIDENCE column is shown.
    pub evidence: Option<Box<str>>,
    /// Who waits for it (`4250 cargo+1`), when the WAITERS column is shown and some do.
    pub waiters: Option<Box<str>>,
    /// What the notes under the table say of it, when they say something (few locks do).
    pub notes: Option<Box<Notes>>,
}

/// What the notes under the table say of one lock.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Notes {
    /// The action offered for a lock a flag keeps from reclaim, as its dialect hands it
    /// over ([`crate::dialect::offered_before_reclaim`]).
    pub offer: Option<Offer>,
    /// The lines of its waiters and stuck holder ([`waiting_notes`]), escaped; empty when
    /// there are none.
    pub waiting: String,
}

impl Row {
    /// The row of `f` with the values of the default columns (and no waiters).
    pub fn of(f: &Finding) -> Row {
        Self::with(
            f,
            &Waiting::default(),
            &Column::DEFAULT,
            &mut Shared::default(),
        )
    }

    /// The row of `f`, whose waiters and holder's state are `waiting`, for `columns`, its
    /// repeated text taken from `shared`.
    pub fn with(f: &Finding, waiting: &Waiting, columns: &[Column], shared: &mut Shared) -> Row {
        let who = Who::of(f);
        let j = &f.judgement;
        let notes = Notes {
            offer: crate::dialect::offered_before_reclaim(f.dialect, &f.path, &f.content, j),
            waiting: waiting_notes(&f.path, waiting),
        };
        Row {
            verdict: j.verdict(),
            dialect: f.dialect,
            pid: who.pid,
            command: who.command.map(|c| shared.get(c)),
            host: who.host.map(|h| shared.get(h)),
            modified_ms: f.modified_ms,
            path: f.path.clone().into_boxed_path(),
            size: f.size,
            kind: f.kind,
            fs: columns
                .contains(&Column::Fs)
                .then(|| shared.get(f.fs.kind.as_str().to_string())),
            evidence: columns
                .contains(&Column::Evidence)
                .then(|| j.evidence.first().map_or("", String::as_str).into()),
            waiters: columns
                .contains(&Column::Waiters)
                .then(|| waiters_cell(waiting))
                .flatten(),
            notes: (notes != Notes::default()).then(|| Box::new(notes)),
        }
    }

    /// The text of one cell, escaped, as the table shows it (`-` for what is not known;
    /// COMMAND and HOST cut to their widths unless `raw`).
    pub fn cell(&self, column: Column, now_ms: i64, raw: bool) -> String {
        let or_dash = |s: Option<String>| s.unwrap_or_else(|| "-".into());
        let cut_to = |max: usize, s: &str| if raw { s.to_string() } else { cut(s, max) };
        match column {
            Column::Verdict if raw => self.verdict.as_str().to_string(),
            Column::Verdict => verdict_cell(self.verdict),
            Column::Dialect => text::escape(self.dialect.as_str()),
            Column::Pid => or_dash(self.pid.map(|p| p.to_string())),
            Column::Command => or_dash(
                self.command
                    .as_deref()
                    .map(|c| cut_to(MAX_COMMAND, &text::escape(c))),
            ),
            Column::Host => or_dash(
                self.host
                    .as_deref()
                    .map(|h| cut_to(MAX_HOST, &text::escape(h))),
            ),
            Column::Age => or_dash(self.modified_ms.map(|m| human_age(age_secs(m, now_ms)))),
            Column::Path => text::display_path(&self.path),
            Column::Size => or_dash(self.size.map(|s| s.to_string())),
            Column::Kind => match self.kind {
                EntryKind::File => "file",
                EntryKind::Symlink => "symlink",
                EntryKind::Dir => "dir",
                EntryKind::Other => "other",
            }
            .to_string(),
            Column::Modified => or_dash(self.modified_ms.map(crate::judge::fmt_ms)),
            Column::Fs => or_dash(self.fs.as_deref().map(text::escape)),
            Column::Evidence => or_dash(
                self.evidence
                    .as_deref()
                    .filter(|e| !e.is_empty())
                    .map(text::escape),
            ),
            Column::Waiters => or_dash(self.waiters.as_deref().map(text::escape)),
        }
    }
}

/// The WAITERS cell of a lock: its first waiter (`4250 cargo`), and how many more (`+2`);
/// `None` when nobody waits.
fn waiters_cell(w: &Waiting) -> Option<Box<str>> {
    let first = w.waiters.first()?;
    let who = if first.pid > 0 {
        format!("{} {}", first.pid, first.name.as_deref().unwrap_or("?"))
    } else {
        "?".to_string()
    };
    let more = w.waiters.len() - 1;
    Some(if more > 0 {
        format!("{who} +{more}").into()
    } else {
        who.into()
    })
}

/// Text shared between rows: one allocation per distinct command, host or file system.
#[derive(Debug, Default)]
pub struct Shared(HashSet<Arc<str>>);

impl Shared {
    pub fn get(&mut self, s: String) -> Arc<str> {
        if let Some(a) = self.0.get(s.as_str()) {
            return a.clone();
        }
        let a: Arc<str> = s.into();
        self.0.insert(a.clone());
        a
    }
}

/// The ANSI color of a verdict.
/// The ANSI color of a verdict.
pub fn color_of(v: Verdict) -> &'static str {
    match v {
        Verdict::Stale => "\x1b[1;31m",
        Verdict::Live => "\x1b[32m",
        Verdict::Free => "\x1b[34m",
        Verdict::Foreign => "\x1b[33m",
        Verdict::Unknown => "\x1b[35m",
    }
}

/// The verdict cell: symbol and name (`✗ stale`).
pub fn verdict_cell(v: Verdict) -> String {
    format!("{} {}", v.symbol(), v.as_str())
}

/// The table [`super::Writer`].
pub struct Writer<'a, W> {
    out: W,
    /// Where the notes, reclaim lines and summary go without headings (rows only on `out`);
    /// `None`: on `out` too.
    side: Option<Box<dyn Write + Send + 'a>>,
    now_ms: i64,
    columns: Vec<Column>,
    headings: bool,
    raw: bool,
    color: bool,
    rows: Vec<Row>,
    shared: Shared,
}

impl<'a, W: Write + Send> Writer<'a, W> {
    pub fn new(head: Head, opts: &Options, out: W) -> Self {
        Self::with_side(head, opts, out, None)
    }

    /// A table whose notes, reclaim lines and summary go to `side` when it has no headings
    /// (its rows alone on `out`).
    pub fn with_side(
        head: Head,
        opts: &Options,
        out: W,
        side: Option<Box<dyn Write + Send + 'a>>,
    ) -> Self {
        let columns = if opts.columns.is_empty() {
            Column::DEFAULT.to_vec()
        } else {
            opts.columns.clone()
        };
        Writer {
            out,
            side,
            now_ms: head.now_ms,
            columns,
            headings: opts.headings,
            raw: opts.raw,
            color: opts.color,
            rows: Vec::new(),
            shared: Shared::default(),
        }
    }

    fn write_rows(&mut self) -> io::Result<()> {
        let mut rows = std::mem::take(&mut self.rows);
        self.shared = Shared::default();
        // In place: a stable sort would take a scratch buffer of up to half the rows at the
        // peak, and a lock's path tells it from every other (the order is the same).
        rows.sort_unstable_by(|a, b| {
            verdict_rank(a.verdict)
                .cmp(&verdict_rank(b.verdict))
                .then_with(|| a.path.cmp(&b.path))
        });
        let titles: Vec<String> = self.columns.iter().map(|c| c.title()).collect();
        if self.raw {
            if self.headings && !rows.is_empty() {
                writeln!(self.out, "{}", titles.join(" "))?;
            }
            for r in &rows {
                let cells: Vec<String> = self
                    .columns
                    .iter()
                    .map(|&c| r.cell(c, self.now_ms, true).replace(' ', "\\x20"))
                    .collect();
                writeln!(self.out, "{}", cells.join(" "))?;
            }
            return Ok(());
        }
        if !rows.is_empty() {
            let mut widths: Vec<usize> = if self.headings {
                titles.iter().map(|t| width(t)).collect()
            } else {
                vec![0; self.columns.len()]
            };
            for r in &rows {
                for (w, &c) in widths.iter_mut().zip(&self.columns) {
                    *w = (*w).max(width(&r.cell(c, self.now_ms, false)));
                }
            }
            let mut line = String::new();
            if self.headings {
                push_line(&mut line, &titles, &widths, None);
                self.out.write_all(line.as_bytes())?;
            }
            for r in &rows {
                line.clear();
                let cells: Vec<String> = self
                    .columns
                    .iter()
                    .map(|&c| r.cell(c, self.now_ms, false))
                    .collect();
                let color = self.color.then(|| color_of(r.verdict));
                let at = self.columns.iter().position(|&c| c == Column::Verdict);
                push_line(&mut line, &cells, &widths, color.zip(at));
                self.out.write_all(line.as_bytes())?;
            }
        }
        let notes = || rows.iter().filter_map(|r| Some((r, r.notes.as_deref()?)));
        let headings = self.headings;
        let out: &mut dyn Write = match (&mut self.side, headings) {
            (Some(side), false) => side.as_mut(),
            _ => &mut self.out,
        };
        for (r, n) in notes() {
            if let Some(o) = &n.offer {
                let (label, verb) = (o.flag.label, o.action.verb);
                match (&o.command, &o.done) {
                    (Err(why), _) => writeln!(
                        out,
                        "note: {} holds {label}, which are not for you to {verb}: {}",
                        text::display_path(&r.path),
                        text::escape(why)
                    )?,
                    (Ok(c), Some(file)) => writeln!(
                        out,
                        "note: {} holds {label}, but {}",
                        text::display_path(&r.path),
                        o.action
                            .done_note
                            .replace("{file}", &text::display_path(file))
                            .replace("{command}", &text::escape(&c.shown()))
                    )?,
                    (Ok(c), None) => writeln!(
                        out,
                        "note: {} holds {label}: {verb} them with `{}`",
                        text::display_path(&r.path),
                        text::escape(&c.shown())
                    )?,
                }
            }
        }
        for (_, n) in notes() {
            out.write_all(n.waiting.as_bytes())?;
        }
        Ok(())
    }

    /// Where what is not a row goes: the side output without headings, else `out`.
    fn aside(&mut self) -> &mut dyn Write {
        match (&mut self.side, self.headings) {
            (Some(side), false) => side.as_mut(),
            _ => &mut self.out,
        }
    }
}

impl<W: Write + Send> super::Writer for Writer<'_, W> {
    fn lock(&mut self, f: &Finding, waiting: &Waiting) -> io::Result<()> {
        let row = Row::with(f, waiting, &self.columns, &mut self.shared);
        self.rows.push(row);
        Ok(())
    }

    fn scanned(&mut self, _scan: &Scanned<'_>) -> io::Result<()> {
        self.write_rows()
    }

    fn reclaimed(&mut self, o: &Outcome) -> io::Result<()> {
        if self.raw {
            let field = |s: &str| s.replace(' ', "\\x20");
            let path = field(&text::display_path(&o.path));
            let detail = match o.action {
                Action::Removed => o.copy_shown(text::display_path),
                Action::WouldRemove => o.judgement.evidence.first().map(|e| text::escape(e)),
                Action::Kept => o.error.as_deref().map(text::escape),
            };
            let detail = field(detail.as_deref().unwrap_or("-"));
            return writeln!(self.out, "{} {path} {detail}", o.action.as_str());
        }
        self.aside().write_all(reclaimed_line(o).as_bytes())
    }

    fn finish(&mut self, tail: &Tail) -> io::Result<()> {
        if !self.raw {
            writeln!(self.aside(), "{}", summary_line(tail))?;
        }
        if let Some(side) = &mut self.side {
            side.flush()?;
        }
        self.out.flush()
    }
}

/// The notes of one lock's waiters and stuck holder: `waiting for PATH: PID NAME (how, ...)`
/// and `holder of PATH: why`, escaped (empty when it has none).
pub fn waiting_notes(path: &Path, w: &Waiting) -> String {
    let mut out = String::new();
    let path = text::display_path(path);
    for x in &w.waiters {
        let _ = writeln!(
            out,
            "waiting for {path}: {}",
            text::escape(&super::waiting::describe_waiter(x))
        );
    }
    if let Some(s) = &w.holder {
        let _ = writeln!(out, "holder of {path}: {}", text::escape(&s.why));
    }
    out
}

/// The line of one reclaim outcome, for a person: `removed PATH (a copy is kept: ...)`,
/// `would remove PATH (why)`, `kept PATH: why` (newline-terminated). Where the copy is (a file
/// of the state directory, maybe at an offset in it) is for `--raw`, the JSON report and the
/// journal.
pub fn reclaimed_line(o: &Outcome) -> String {
    let path = text::display_path(&o.path);
    match o.action {
        Action::Removed => format!(
            "removed {path}{}\n",
            o.saved_to
                .as_ref()
                .map(|_| format!(
                    " (a copy is kept: `locksmith restore {}` puts it back)",
                    text::shell_quote(&path)
                ))
                .unwrap_or_default()
        ),
        Action::WouldRemove => format!(
            "would remove {path} ({})\n",
            text::escape(o.judgement.evidence.first().map_or("", |s| s.as_str()))
        ),
        Action::Kept => format!(
            "kept {path}: {}\n",
            text::escape(o.error.as_deref().unwrap_or("not stale"))
        ),
    }
}

/// `5 locks: 1 stale, 2 live, 1 free, 0 foreign, 1 unknown; 1 error; 1234 entries in 0.12s`
/// (plus the count of locks a flag keeps that offer an action, in their dialect's words,
/// when there are some, and what a reclaim pass did).
pub fn summary_line(tail: &Tail) -> String {
    let c = tail.counts;
    let mut s = format!(
        "{} lock{}: {} stale, {} live, {} free, {} foreign, {} unknown",
        c.locks,
        if c.locks == 1 { "" } else { "s" },
        c.stale,
        c.live,
        c.free,
        c.foreign,
        c.unknown
    );
    let unsaved = tail.unsaved;
    if let (true, Some((flag, action))) = (unsaved > 0, tail.flagged) {
        let _ = write!(
            s,
            " ({unsaved} {}{} with {}: see `{}`)",
            flag.what,
            if unsaved == 1 { "" } else { "s" },
            flag.label,
            action.short
        );
    }
    let e = tail.errors;
    let _ = write!(
        s,
        "; {e} error{}; {} {} in {:.2}s",
        if e == 1 { "" } else { "s" },
        tail.entries,
        if tail.entries == 1 {
            "entry"
        } else {
            "entries"
        },
        tail.elapsed.as_secs_f64()
    );
    if let Some(r) = tail.reclaim {
        let _ = write!(
            s,
            "; reclaim: {} removed, {} would be removed, {} kept",
            r.removed, r.would_remove, r.kept
        );
    }
    s
}

/// Per-path errors, one line each: `PATH: message`.
pub fn render_errors(errors: &[ScanError]) -> String {
    let mut out = String::new();
    for e in errors {
        let _ = writeln!(
            out,
            "{}: {}",
            text::display_path(e.path()),
            text::escape(&e.to_string())
        );
    }
    out
}

/// One aligned line; the cell at `color.1` gets the color `color.0`.
fn push_line(out: &mut String, cells: &[String], widths: &[usize], color: Option<(&str, usize)>) {
    for (i, (cell, w)) in cells.iter().zip(widths).enumerate() {
        match color {
            Some((c, at)) if at == i => {
                let _ = write!(out, "{c}{cell}{RESET}");
            }
            _ => out.push_str(cell),
        }
        if i == cells.len() - 1 {
            break;
        }
        let pad = w - width(cell);
        out.extend(std::iter::repeat_n(' ', pad + 2));
    }
    out.push('\n');
}

fn width(s: &str) -> usize {
    s.chars().count()
}

fn cut(s: &str, max: usize) -> String {
    if width(s) <= max {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(max - 1).collect();
        t.push('…');
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judge::Judgement;
    use crate::report::tests::{finding, written};

    #[test]
    fn a_column_index_is_its_place_in_all() {
        for (i, c) in Column::ALL.into_iter().enumerate() {
            assert_eq!(c.index(), i, "{c:?}");
        }
    }
    use crate::report::{Format, Options};
    use crate::verdict::{Owner, ProcessInfo};

    fn render(findings: &[Finding], opts: &Options, outcomes: Option<&[Outcome]>) -> String {
        let errors = [ScanError::other("/x/\u{1b}bad", "permission denied")];
        written(Format::Table, opts, findings, &errors, outcomes).0
    }

    fn live_postgres() -> Finding {
        let mut live = Judgement::live("alive");
        live.owner = Some(Box::new(Owner {
            pid: Some(4242),
            hostname: Some("box".into()),
            ..Owner::default()
        }));
        live.process = Some(Box::new(ProcessInfo {
            pid: 4242,
            name: "postgres".into(),
            ..ProcessInfo::default()
        }));
        finding("/x/live.pid", "pidfile", live)
    }

    #[test]
    fn columns_line_up_and_read_without_color() {
        let findings = [
            live_postgres(),
            finding("/x/old.lock", "pidfile", Judgement::stale_for_test("gone")),
        ];
        let text = render(&findings, &Options::default(), None);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 4, "{text}");
        assert!(lines[0].starts_with("VERDICT  DIALECT  PID   COMMAND   HOST  AGE  PATH"));
        assert_eq!(
            lines[1],
            "✗ stale  pidfile  -     -         -     5m   /x/old.lock"
        );
        assert_eq!(
            lines[2],
            "● live   pidfile  4242  postgres  box   5m   /x/live.pid"
        );
        assert_eq!(
            lines[3],
            "2 locks: 1 stale, 1 live, 0 free, 0 foreign, 0 unknown; 1 error; 42 entries in 1.50s"
        );
        assert!(!text.contains('\x1b'));
        let colored = render(
            &findings,
            &Options {
                color: true,
                ..Options::default()
            },
            None,
        );
        assert!(colored.contains("\x1b[1;31m✗ stale\x1b[0m"));
        let errors = [ScanError::other("/x/\u{1b}bad", "permission denied")];
        assert_eq!(render_errors(&errors), "/x/\\x1bbad: permission denied\n");
    }

    #[test]
    fn chosen_columns_no_headings_and_raw_fields() {
        let mut spaced = finding(
            "/x/my dir/a.pid",
            "pidfile",
            Judgement::stale_for_test("no process 7 on this host"),
        );
        spaced.size = Some(2);
        let findings = [live_postgres(), spaced];
        let opts = Options {
            columns: vec![
                Column::Path,
                Column::Verdict,
                Column::Size,
                Column::Evidence,
            ],
            ..Options::default()
        };
        let text = render(&findings, &opts, None);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "PATH             VERDICT  SIZE  EVIDENCE");
        assert_eq!(
            lines[1],
            "/x/my dir/a.pid  ✗ stale  2     no process 7 on this host"
        );
        assert_eq!(lines[2], "/x/live.pid      ● live   6     alive");
        assert!(lines[3].starts_with("2 locks: "));

        let bare = render(
            &findings,
            &Options {
                headings: false,
                ..opts.clone()
            },
            None,
        );
        // Without the header, the cells alone set the widths.
        assert_eq!(
            bare.lines().next(),
            Some("/x/my dir/a.pid  ✗ stale  2  no process 7 on this host")
        );

        let raw = render(
            &findings,
            &Options {
                raw: true,
                columns: vec![Column::Verdict, Column::Pid, Column::Command, Column::Path],
                ..Options::default()
            },
            None,
        );
        assert_eq!(
            raw,
            "VERDICT PID COMMAND PATH\nstale - - /x/my\\x20dir/a.pid\nlive 4242 postgres /x/live.pid\n"
        );
    }

    #[test]
    fn a_process_in_a_container_is_named_in_the_host_column() {
        let mut j = Judgement::live("alive");
        j.owner = Some(Box::new(Owner {
            pid: Some(1),
            ..Owner::default()
        }));
        j.process = Some(Box::new(ProcessInfo {
            pid: 25092,
            name: "puma".into(),
            container: Some(crate::verdict::ContainerInfo {
                id: crate::probe::ContainerId {
                    runtime: "podman".into(),
                    id: "3f2a".repeat(16),
                    name: Some("web-1".into()),
                },
                ns_pid: Some(1),
            }),
            ..ProcessInfo::default()
        }));
        let row = Row::of(&finding("/srv/app/tmp/pids/server.pid", "pidfile", j));
        // Held: the process that holds it, by its PID here (the file records its PID inside).
        assert_eq!(row.cell(Column::Pid, 0, false), "25092");
        assert_eq!(row.cell(Column::Command, 0, false), "puma");
        assert_eq!(row.cell(Column::Host, 0, false), "ctr:web-1");
    }

    #[test]
    fn the_host_column_says_what_a_namespace_is() {
        let id = |runtime: &str, id: &str, name: Option<&str>| crate::probe::ContainerId {
            runtime: runtime.into(),
            id: id.into(),
            name: name.map(String::from),
        };
        assert_eq!(
            host_label(&id("podman", &"3f2a".repeat(16), Some("web-1"))),
            "ctr:web-1"
        );
        assert_eq!(
            host_label(&id("docker", &"3f2a".repeat(16), None)),
            "ctr:3f2a3f2a3f2a…"
        );
        // A user's own unshare, bwrap or browser sandbox: a PID namespace, not a container.
        assert_eq!(
            host_label(&id("unknown", "pid:[4026532252]", None)),
            "ns:4026532252"
        );
        assert_eq!(
            host_label(&id("flatpak", "1234", Some("org.gnome.Builder"))),
            "sandbox:org.gnome.Builder"
        );
    }

    #[test]
    fn repeated_text_is_shared_between_rows() {
        let mut shared = Shared::default();
        let none = Waiting::default();
        let a = Row::with(&live_postgres(), &none, &Column::DEFAULT, &mut shared);
        let b = Row::with(&live_postgres(), &none, &Column::DEFAULT, &mut shared);
        assert!(Arc::ptr_eq(
            a.command.as_ref().unwrap(),
            b.command.as_ref().unwrap()
        ));
        assert!(a.evidence.is_none() && a.fs.is_none(), "not asked for");
    }

    #[test]
    fn hostile_cells_are_escaped_and_cut() {
        let mut j = Judgement::unknown("garbage");
        j.owner = Some(Box::new(Owner {
            hostname: Some("\u{1b}[2Jhost-with-a-very-very-long-name".into()),
            ..Owner::default()
        }));
        let text = render(
            &[finding("/x/a\nb\u{9b}.lock", "pidfile", j)],
            &Options::default(),
            None,
        );
        assert!(
            !text.lines().any(|l| l.chars().any(text::is_unsafe_char)),
            "{text}"
        );
        assert!(text.contains("/x/a\\nb\\u{9b}.lock"));
        assert!(text.contains("  \\x1b[2Jhost-with-a-very…  "), "{text}");
    }

    #[test]
    fn unsaved_vim_swaps_get_the_recover_hint() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().canonicalize().unwrap();
        let swap = dir.join(".notes.swp");
        let mut j = Judgement::stale_for_test("no process 7");
        j.flags.push(crate::dialect::vim_swap::unsaved(true));
        let swap_recording = |file: &Path| {
            let mut b = vec![0u8; 1024];
            b[..9].copy_from_slice(b"b0VIM 9.0");
            let name = file.as_os_str().as_encoded_bytes();
            b[108..108 + name.len()].copy_from_slice(name);
            b[1007] = 0x55;
            std::fs::write(&swap, &b).unwrap();
            let mut f = finding(swap.to_str().unwrap(), "vim-swap", j.clone());
            f.content = b;
            f
        };
        let text = render(
            &[swap_recording(&dir.join("notes"))],
            &Options::default(),
            None,
        );
        let swap = swap.display();
        assert!(
            text.contains(&format!(
                "note: {swap} holds unsaved changes: recover them with `vim -r {swap}`"
            )),
            "{text}"
        );
        assert!(text.contains("(1 vim swap with unsaved changes: see `vim -r`)"));
        // One whose block 0 names another file than its own: no command to paste.
        let text = render(
            &[swap_recording(Path::new("/etc/passwd"))],
            &Options::default(),
            None,
        );
        assert!(
            text.contains(&format!(
                "note: {swap} holds unsaved changes, which are not for you to recover: its block 0 names /etc/passwd, not {}/notes",
                dir.display()
            )),
            "{text}"
        );
        assert!(!text.contains("`vim -r /"), "{text}");
    }

    #[test]
    fn hostile_text_in_every_part_of_the_table_is_escaped_exactly_once() {
        // CSI, OSC 52 (clipboard), bidi override, C1 CSI, zero-width space, newline.
        const HOSTILE: &str = "\x1b[31m\x1b]52;c;ZXZpbA==\x07\u{202e}\u{9b}\u{200b}\n";
        const SHOWN: &str = "\\x1b[31m\\x1b]52;c;ZXZpbA==\\x07\\u{202e}\\u{9b}\\u{200b}\\n";
        let mut j = Judgement::stale_for_test(format!("owner \"{HOSTILE}\" is gone"));
        j.flags.push(crate::dialect::vim_swap::unsaved(true));
        let swap = format!("/x/.{HOSTILE}.swp");
        let errors = [ScanError::other("/x/bad", format!("cannot read {HOSTILE}"))];
        let outcome = |action, error: Option<String>| Outcome {
            path: swap.clone().into(),
            ok: false,
            action,
            saved_to: None,
            saved_offset: None,
            error,
            judgement: j.clone(),
        };
        let outcomes = [
            outcome(
                Action::Kept,
                Some(format!(
                    "it holds unsaved changes: recover them with `vim -r '{swap}'`"
                )),
            ),
            outcome(Action::WouldRemove, None),
        ];
        let table = written(
            Format::Table,
            &Options::default(),
            &[finding(&swap, "vim-swap", j.clone())],
            &errors,
            Some(&outcomes),
        )
        .0;
        let errors = render_errors(&errors);
        for out in [&table, &errors] {
            assert!(
                !out.lines().any(|l| l.chars().any(text::is_unsafe_char)),
                "{out}"
            );
            assert!(!out.contains("\\\\"), "escaped twice: {out}");
        }
        let shown_swap = format!("/x/.{SHOWN}.swp");
        assert!(
            table.contains(&format!(
                "note: {shown_swap} holds unsaved changes, which are not for you to recover: {shown_swap} cannot be examined"
            )),
            "{table}"
        );
        assert!(
            table.contains(&format!("kept {shown_swap}: it holds unsaved changes")),
            "{table}"
        );
        assert!(
            table.contains(&format!(
                "would remove {shown_swap} (owner \"{SHOWN}\" is gone)"
            )),
            "{table}"
        );
        assert!(
            table.ends_with("; reclaim: 0 removed, 1 would be removed, 1 kept\n"),
            "{table}"
        );
        assert!(errors.contains(&format!("cannot read {SHOWN}")), "{errors}");
    }

    #[test]
    fn sorts_stale_first_then_by_path() {
        let findings = [
            finding("/b", "pidfile", Judgement::live("x")),
            finding("/c", "pidfile", Judgement::stale_for_test("x")),
            finding("/a", "pidfile", Judgement::free("x")),
            finding("/a2", "pidfile", Judgement::stale_for_test("x")),
        ];
        let opts = Options {
            raw: true,
            headings: false,
            columns: vec![Column::Path],
            ..Options::default()
        };
        assert_eq!(render(&findings, &opts, None), "/a2\n/c\n/b\n/a\n");
    }
}
