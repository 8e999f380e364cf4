//! The application state and its one `update` function. Everything the UI shows is in [`App`];
//! everything that changes it arrives as a [`Msg`] (a key, a scan event, re-judged verdicts, a
//! reclaim outcome, a clock tick), and everything the app wants done outside itself leaves as an
//! [`Effect`] for the runtime (start a scan, carry out a confirmed reclaim, quit). `update`
//! never blocks and never touches the file system, so it is tested directly.
//!
//! Rows are keyed by path: a scan or a re-judge replaces a row in place, and the selection
//! follows the selected path across refreshes, sorts and filters.

use std::cell::Cell;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use locksmith::scan::{Finding, ScanEvent};
use locksmith::{Judgement, Verdict};
use ratatui::crossterm::event::KeyEvent;

use super::confirm::{ConfirmAction, ConfirmDialog, ConfirmedAction};
use super::keymap::{self, Action, Context};
use super::text;
use super::theme::Theme;

/// Settings fixed for the life of the UI.
#[derive(Debug, Clone)]
pub struct Options {
    /// `--readonly`: never reclaim.
    pub readonly: bool,
    pub theme: Theme,
    /// Where reclaim keeps copies and its journal (shown in the dialog).
    pub state_dir: Option<PathBuf>,
}

/// How a scan ended.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScanSummary {
    pub entries: u64,
    pub locks: u64,
    pub elapsed_ms: u64,
    /// Stopped early (a rescan replaced it); rows it did not reach are kept.
    pub cancelled: bool,
    /// The scan could not run at all.
    pub failed: Option<String>,
}

/// One lock after re-judging.
#[derive(Debug, Clone)]
pub enum Rejudge {
    Judged(Box<Finding>),
    /// No longer there, or no longer a lock.
    Gone,
    Failed(String),
}

/// What came of reclaiming one lock.
#[derive(Debug, Clone)]
pub struct ReclaimResult {
    pub path: PathBuf,
    pub removed: bool,
    /// What was done or why not, in a sentence.
    pub message: String,
    /// The judgement at the moment of the attempt, when the lock was not removed.
    pub judgement: Option<Judgement>,
}

/// Everything that can change the app.
#[derive(Debug)]
pub enum Msg {
    Key(KeyEvent),
    /// The terminal was resized (redraw only).
    Resize,
    Scan {
        generation: u64,
        event: ScanEvent,
    },
    ScanDone {
        generation: u64,
        summary: ScanSummary,
    },
    Rejudged(Vec<(PathBuf, Rejudge)>),
    Reclaimed(Vec<ReclaimResult>),
    Tick {
        now_ms: i64,
    },
}

/// What the app asks the runtime to do.
#[derive(Debug)]
pub enum Effect {
    /// Start a scan with this generation (cancelling any running one).
    Scan {
        generation: u64,
    },
    /// Carry out a confirmed reclaim, off the UI thread.
    Reclaim(ConfirmedAction),
    Quit,
}

/// Table columns, in display order; also the sort keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Column {
    Verdict,
    Dialect,
    Pid,
    Command,
    Host,
    Age,
    Path,
}

impl Column {
    pub const ALL: [Column; 7] = [
        Column::Verdict,
        Column::Dialect,
        Column::Pid,
        Column::Command,
        Column::Host,
        Column::Age,
        Column::Path,
    ];

    pub fn title(self) -> &'static str {
        match self {
            Column::Verdict => "VERDICT",
            Column::Dialect => "DIALECT",
            Column::Pid => "PID",
            Column::Command => "COMMAND",
            Column::Host => "HOST",
            Column::Age => "AGE",
            Column::Path => "PATH",
        }
    }

    fn next(self) -> Column {
        let i = Column::ALL.iter().position(|&c| c == self).unwrap_or(0);
        Column::ALL[(i + 1) % Column::ALL.len()]
    }
}

/// What the UI is doing: exactly one at a time.
#[derive(Debug, Clone)]
pub enum Mode {
    Table,
    Filter,
    Help { scroll: u16 },
    Confirm(ConfirmDialog),
}

impl Mode {
    pub fn context(&self) -> Context {
        match self {
            Mode::Table => Context::Table,
            Mode::Filter => Context::Filter,
            Mode::Help { .. } => Context::Help,
            Mode::Confirm(_) => Context::Confirm,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Info,
    Warn,
    Error,
}

/// The status bar's message: the last action's result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    pub text: String,
    pub level: Level,
}

/// Scan progress, for the header.
#[derive(Debug, Clone, Default)]
pub struct Progress {
    pub generation: u64,
    pub scanning: bool,
    pub entries: u64,
    pub locks: u64,
    pub errors: u64,
    pub elapsed_ms: Option<u64>,
}

/// The text shown in each cell of a row, escaped once when the row is stored.
#[derive(Debug, Clone)]
pub struct Cells {
    pub dialect: String,
    pub pid: String,
    pub pid_num: i64,
    pub command: String,
    pub host: String,
    pub path: String,
    /// Lowercased text the filter searches.
    search: String,
}

impl Cells {
    /// The cells of the `--scan` table (same columns, same escaping), plus what sorting and
    /// filtering need.
    fn of(f: &Finding) -> Cells {
        let j = &f.judgement;
        let [_, dialect, pid, command, host, _, path] = locksmith::report::table::row(f, 0);
        let pid_num = pid.parse().unwrap_or(-1);
        let search = [j.verdict.as_str(), &dialect, &pid, &command, &host, &path]
            .join("\u{1f}")
            .to_lowercase();
        Cells {
            dialect,
            pid,
            pid_num,
            command,
            host,
            path,
            search,
        }
    }
}

/// One listed lock.
#[derive(Debug, Clone)]
pub struct Row {
    pub finding: Finding,
    pub cells: Cells,
}

impl Row {
    fn new(finding: Finding) -> Row {
        Row {
            cells: Cells::of(&finding),
            finding,
        }
    }

    pub fn verdict(&self) -> Verdict {
        self.finding.judgement.verdict
    }
}

/// The whole state of the UI.
#[derive(Debug)]
pub struct App {
    pub opts: Options,
    rows: Vec<Row>,
    by_path: HashMap<PathBuf, usize>,
    /// Indices into `rows`: filtered and sorted.
    view: Vec<usize>,
    view_dirty: bool,
    /// Position of the selection in `view`.
    cursor: usize,
    /// The selected lock's path: what the selection follows.
    selected: Option<PathBuf>,
    /// Whether the user has moved the selection; until then it stays on the first row while
    /// rows stream in (stale first), instead of following whichever lock came first.
    moved: bool,
    /// First row shown (kept by the renderer, which knows the table height).
    pub offset: Cell<usize>,
    /// Table rows that fit on screen at the last draw (PgUp/PgDn step).
    pub page: Cell<u16>,
    /// How far the help can scroll at the last draw.
    pub help_max_scroll: Cell<u16>,
    pub filter: String,
    pub verdict_filter: Option<Verdict>,
    pub sort: Column,
    pub descending: bool,
    pub show_details: bool,
    pub mode: Mode,
    pub status: Option<Status>,
    pub progress: Progress,
    /// The clock used for ages (ms since the epoch), advanced by ticks.
    pub now_ms: i64,
    /// Paths the current scan has found (rows missing from a complete scan are dropped).
    seen: HashSet<PathBuf>,
    /// A reclaim is running.
    pub reclaiming: bool,
}

impl App {
    pub fn new(opts: Options, now_ms: i64) -> App {
        App {
            opts,
            rows: Vec::new(),
            by_path: HashMap::new(),
            view: Vec::new(),
            view_dirty: false,
            cursor: 0,
            selected: None,
            moved: false,
            offset: Cell::new(0),
            page: Cell::new(10),
            help_max_scroll: Cell::new(u16::MAX),
            filter: String::new(),
            verdict_filter: None,
            sort: Column::Verdict,
            descending: false,
            show_details: false,
            mode: Mode::Table,
            status: None,
            progress: Progress::default(),
            now_ms,
            seen: HashSet::new(),
            reclaiming: false,
        }
    }

    // ----- reading -----

    /// The rows shown, in order (refresh the view first with [`App::refresh`]).
    pub fn visible(&self) -> impl ExactSizeIterator<Item = &Row> {
        self.view.iter().map(|&i| &self.rows[i])
    }

    pub fn visible_len(&self) -> usize {
        self.view.len()
    }

    /// All listed rows, unfiltered.
    pub fn rows(&self) -> &[Row] {
        &self.rows
    }

    /// The position of the selection among the visible rows.
    pub fn cursor(&self) -> Option<usize> {
        (!self.view.is_empty()).then_some(self.cursor)
    }

    pub fn selected_row(&self) -> Option<&Row> {
        self.view.get(self.cursor).map(|&i| &self.rows[i])
    }

    /// The paths of every listed lock (what the runtime re-judges).
    pub fn listed_paths(&self) -> Vec<PathBuf> {
        self.rows.iter().map(|r| r.finding.path.clone()).collect()
    }

    /// How many listed locks have each verdict, in [`Verdict::ALL`] order.
    pub fn counts(&self) -> [usize; 5] {
        let mut out = [0; 5];
        for r in &self.rows {
            let i = Verdict::ALL
                .iter()
                .position(|&v| v == r.verdict())
                .unwrap_or(0);
            out[i] += 1;
        }
        out
    }

    pub fn context(&self) -> Context {
        self.mode.context()
    }

    /// Whether a key-map action is available now (the key bar hides the others).
    pub fn enabled(&self, action: Action) -> bool {
        match action {
            Action::Reclaim | Action::ReclaimAllStale | Action::ForceReclaim => !self.opts.readonly,
            _ => true,
        }
    }

    // ----- updating -----

    /// Starts a new scan: rows are kept until it completes, then those it did not find go.
    pub fn rescan(&mut self) -> Effect {
        self.progress = Progress {
            generation: self.progress.generation + 1,
            scanning: true,
            ..Progress::default()
        };
        self.seen.clear();
        Effect::Scan {
            generation: self.progress.generation,
        }
    }

    /// Applies one message; returns what the runtime must do, if anything.
    pub fn update(&mut self, msg: Msg) -> Option<Effect> {
        match msg {
            Msg::Key(key) => {
                let action = keymap::lookup(self.context(), &key)?;
                self.refresh();
                let effect = self.act(action, &key);
                self.refresh();
                effect
            }
            Msg::Resize => None,
            Msg::Scan { generation, event } => {
                if generation == self.progress.generation {
                    self.on_scan_event(event);
                }
                None
            }
            Msg::ScanDone {
                generation,
                summary,
            } => {
                if generation == self.progress.generation {
                    self.on_scan_done(summary);
                }
                None
            }
            Msg::Rejudged(results) => {
                for (path, r) in results {
                    match r {
                        Rejudge::Judged(f) => {
                            if self.by_path.contains_key(&path) {
                                self.upsert(*f);
                            }
                        }
                        Rejudge::Gone => self.remove(&path),
                        Rejudge::Failed(_) => {}
                    }
                }
                None
            }
            Msg::Reclaimed(results) => {
                self.on_reclaimed(results);
                None
            }
            Msg::Tick { now_ms } => {
                self.now_ms = now_ms;
                None
            }
        }
    }

    fn on_scan_event(&mut self, event: ScanEvent) {
        match event {
            ScanEvent::Progress { entries, locks } => {
                self.progress.entries = entries;
                self.progress.locks = locks;
            }
            ScanEvent::Found(f) => {
                self.seen.insert(f.path.clone());
                self.progress.locks = self.progress.locks.max(self.seen.len() as u64);
                self.upsert(*f);
            }
            ScanEvent::Error(e) => {
                self.progress.errors += 1;
                self.set_status(
                    Level::Warn,
                    format!("{}: {}", text::path(&e.path), text::clean(&e.error)),
                );
            }
        }
    }

    fn on_scan_done(&mut self, s: ScanSummary) {
        self.progress.scanning = false;
        self.progress.entries = self.progress.entries.max(s.entries);
        self.progress.locks = self.progress.locks.max(s.locks);
        self.progress.elapsed_ms = Some(s.elapsed_ms);
        if let Some(why) = s.failed {
            self.set_status(Level::Error, format!("scan failed: {}", text::clean(&why)));
            return;
        }
        if !s.cancelled {
            let gone: Vec<PathBuf> = self
                .rows
                .iter()
                .filter(|r| !self.seen.contains(&r.finding.path))
                .map(|r| r.finding.path.clone())
                .collect();
            for p in gone {
                self.remove(&p);
            }
        }
    }

    fn on_reclaimed(&mut self, results: Vec<ReclaimResult>) {
        self.reclaiming = false;
        let total = results.len();
        let mut removed = 0;
        let mut refused: Vec<String> = Vec::new();
        for r in &results {
            if r.removed {
                removed += 1;
                self.seen.remove(&r.path);
                self.remove(&r.path);
            } else {
                if let Some(j) = &r.judgement
                    && let Some(&i) = self.by_path.get(&r.path)
                {
                    let mut f = self.rows[i].finding.clone();
                    f.judgement = j.clone();
                    self.upsert(f);
                }
                refused.push(format!(
                    "{}: {}",
                    text::path(&r.path),
                    text::clean(&r.message)
                ));
            }
        }
        let (level, msg) = match (total, results.first()) {
            (1, Some(r)) if r.removed => (Level::Info, text::clean(&r.message)),
            (1, Some(_)) => (Level::Error, format!("not removed: {}", refused[0])),
            _ if refused.is_empty() => (
                Level::Info,
                format!("reclaimed {removed} stale lock{}", plural(removed)),
            ),
            _ => (
                Level::Warn,
                format!(
                    "reclaimed {removed} of {total}; not removed: {}",
                    refused.join("; ")
                ),
            ),
        };
        self.set_status(level, msg);
    }

    fn upsert(&mut self, f: Finding) {
        let row = Row::new(f);
        match self.by_path.get(&row.finding.path) {
            Some(&i) => self.rows[i] = row,
            None => {
                self.by_path
                    .insert(row.finding.path.clone(), self.rows.len());
                self.rows.push(row);
            }
        }
        self.view_dirty = true;
    }

    fn remove(&mut self, path: &Path) {
        let Some(i) = self.by_path.remove(path) else {
            return;
        };
        self.rows.swap_remove(i);
        if let Some(moved) = self.rows.get(i) {
            self.by_path.insert(moved.finding.path.clone(), i);
        }
        self.view_dirty = true;
    }

    fn set_status(&mut self, level: Level, text: impl Into<String>) {
        self.status = Some(Status {
            text: text.into(),
            level,
        });
    }

    /// Rebuilds the filtered, sorted view if rows or settings changed, and moves the cursor to
    /// the selected path (or keeps its position when that lock is gone).
    pub fn refresh(&mut self) {
        if !self.view_dirty {
            return;
        }
        self.view_dirty = false;
        let needle = self.filter.to_lowercase();
        let mut view: Vec<usize> = (0..self.rows.len())
            .filter(|&i| {
                let r = &self.rows[i];
                self.verdict_filter.is_none_or(|v| r.verdict() == v)
                    && (needle.is_empty() || r.cells.search.contains(&needle))
            })
            .collect();
        let rows = &self.rows;
        let now = self.now_ms;
        let key = self.sort;
        view.sort_by(|&a, &b| {
            let (ra, rb) = (&rows[a], &rows[b]);
            let primary = match key {
                Column::Verdict => ra.verdict().cmp(&rb.verdict()),
                Column::Dialect => ra.cells.dialect.cmp(&rb.cells.dialect),
                Column::Pid => ra.cells.pid_num.cmp(&rb.cells.pid_num),
                Column::Command => ra.cells.command.cmp(&rb.cells.command),
                Column::Host => ra.cells.host.cmp(&rb.cells.host),
                Column::Age => age_ms(ra, now).cmp(&age_ms(rb, now)),
                Column::Path => std::cmp::Ordering::Equal,
            };
            let primary = if self.descending {
                primary.reverse()
            } else {
                primary
            };
            primary.then_with(|| ra.finding.path.cmp(&rb.finding.path))
        });
        self.view = view;
        let found = if !self.moved {
            Some(0)
        } else {
            self.selected.as_ref().and_then(|sel| {
                self.view
                    .iter()
                    .position(|&i| &self.rows[i].finding.path == sel)
            })
        };
        self.cursor = match found {
            Some(pos) => pos,
            None => self.cursor.min(self.view.len().saturating_sub(1)),
        };
        self.sync_selected();
    }

    fn sync_selected(&mut self) {
        self.selected = self
            .view
            .get(self.cursor)
            .map(|&i| self.rows[i].finding.path.clone());
    }

    fn move_to(&mut self, pos: usize) {
        self.moved = true;
        self.cursor = pos.min(self.view.len().saturating_sub(1));
        self.sync_selected();
    }

    fn act(&mut self, action: Action, key: &KeyEvent) -> Option<Effect> {
        let page = usize::from(self.page.get().max(1));
        let last = self.view.len().saturating_sub(1);
        match action {
            Action::Quit => return Some(Effect::Quit),
            Action::Back => {
                if self.filter.is_empty() {
                    return Some(Effect::Quit);
                }
                self.filter.clear();
                self.view_dirty = true;
            }
            Action::Down => match &mut self.mode {
                Mode::Help { scroll } => {
                    *scroll = scroll.saturating_add(1).min(self.help_max_scroll.get())
                }
                _ => self.move_to(self.cursor.saturating_add(1)),
            },
            Action::Up => match &mut self.mode {
                Mode::Help { scroll } => *scroll = scroll.saturating_sub(1),
                _ => self.move_to(self.cursor.saturating_sub(1)),
            },
            Action::Top => self.move_to(0),
            Action::Bottom => self.move_to(last),
            Action::PageDown => self.move_to(self.cursor.saturating_add(page)),
            Action::PageUp => self.move_to(self.cursor.saturating_sub(page)),
            Action::StartFilter => self.mode = Mode::Filter,
            Action::FilterInput => {
                if let ratatui::crossterm::event::KeyCode::Char(c) = key.code {
                    self.filter.push(c);
                    self.view_dirty = true;
                }
            }
            Action::FilterBackspace => {
                self.filter.pop();
                self.view_dirty = true;
            }
            Action::FilterDone => self.mode = Mode::Table,
            Action::FilterClear => {
                self.filter.clear();
                self.mode = Mode::Table;
                self.view_dirty = true;
            }
            Action::CycleSort => {
                self.sort = self.sort.next();
                self.view_dirty = true;
            }
            Action::InvertSort => {
                self.descending = !self.descending;
                self.view_dirty = true;
            }
            Action::NextVerdictFilter | Action::PrevVerdictFilter => {
                // None, stale, live, foreign, unknown, free, None, ...
                let cycle: Vec<Option<Verdict>> = std::iter::once(None)
                    .chain(Verdict::ALL.iter().copied().map(Some))
                    .collect();
                let i = cycle
                    .iter()
                    .position(|&v| v == self.verdict_filter)
                    .unwrap_or(0);
                let n = cycle.len();
                let j = if action == Action::NextVerdictFilter {
                    (i + 1) % n
                } else {
                    (i + n - 1) % n
                };
                self.verdict_filter = cycle[j];
                self.view_dirty = true;
            }
            Action::Rescan => {
                self.status = None;
                return Some(self.rescan());
            }
            Action::ToggleDetails => self.show_details = !self.show_details,
            Action::Help => self.mode = Mode::Help { scroll: 0 },
            Action::CloseHelp => self.mode = Mode::Table,
            Action::Reclaim => self.ask_reclaim_selected(false),
            Action::ForceReclaim => self.ask_reclaim_selected(true),
            Action::ReclaimAllStale => self.ask_reclaim_all(),
            Action::ConfirmToggle => {
                if let Mode::Confirm(d) = &mut self.mode {
                    d.toggle();
                }
            }
            Action::ConfirmYes | Action::ConfirmChoose | Action::ConfirmNo => {
                let Mode::Confirm(dialog) = std::mem::replace(&mut self.mode, Mode::Table) else {
                    return None;
                };
                let confirmed = match action {
                    Action::ConfirmYes => Some(dialog.yes()),
                    Action::ConfirmChoose => dialog.choose(),
                    _ => None,
                };
                return match confirmed {
                    Some(c) => {
                        self.reclaiming = true;
                        let n = c.findings().len();
                        self.set_status(Level::Info, format!("reclaiming {n} lock{}…", plural(n)));
                        Some(Effect::Reclaim(c))
                    }
                    None => {
                        self.set_status(Level::Info, "cancelled: nothing was removed");
                        None
                    }
                };
            }
        }
        None
    }

    fn refuse_if_busy(&mut self) -> bool {
        if self.opts.readonly {
            self.set_status(Level::Warn, "read-only (--readonly): reclaim is disabled");
            return true;
        }
        if self.reclaiming {
            self.set_status(Level::Warn, "a reclaim is already running");
            return true;
        }
        false
    }

    fn ask_reclaim_selected(&mut self, force: bool) {
        if self.refuse_if_busy() {
            return;
        }
        let Some(row) = self.selected_row() else {
            self.set_status(Level::Warn, "no lock selected");
            return;
        };
        let f = row.finding.clone();
        let name = row.finding.path.file_name().map_or_else(
            || row.cells.path.clone(),
            |n| text::bytes(n.as_encoded_bytes()),
        );
        let why = row
            .finding
            .judgement
            .evidence
            .first()
            .map(|e| text::clean(e))
            .unwrap_or_default();
        let refusal = match (f.judgement.verdict, force) {
            (Verdict::Stale, _) => None,
            (Verdict::Foreign, true) => {
                self.mode =
                    Mode::Confirm(ConfirmDialog::new(ConfirmAction::ForceForeign(Box::new(f))));
                return;
            }
            (Verdict::Foreign, false) => Some(format!(
                "{name} is foreign: its owner cannot be checked from here (F forces it) — {why}"
            )),
            (Verdict::Live, _) => Some(format!(
                "{name} is live: a live lock is never removed — {why}"
            )),
            (Verdict::Free, _) => Some(format!(
                "{name} is free: nobody holds this kernel-lock file, and removing it could split programs waiting on it"
            )),
            (Verdict::Unknown, _) => Some(format!(
                "{name} is unknown: nothing proves its owner gone — {why}"
            )),
        };
        match refusal {
            Some(r) => self.set_status(Level::Warn, format!("not reclaimable: {r}")),
            None => {
                self.mode = Mode::Confirm(ConfirmDialog::new(ConfirmAction::Reclaim {
                    findings: vec![f],
                    kept: Vec::new(),
                }))
            }
        }
    }

    fn ask_reclaim_all(&mut self) {
        if self.refuse_if_busy() {
            return;
        }
        let (kept, findings): (Vec<Finding>, Vec<Finding>) = self
            .visible()
            .filter(|r| r.verdict() == Verdict::Stale)
            .map(|r| r.finding.clone())
            .partition(|f| f.judgement.unsaved_changes == Some(true));
        if findings.is_empty() && kept.is_empty() {
            self.set_status(Level::Warn, "no stale lock shown: nothing to reclaim");
            return;
        }
        if findings.is_empty() {
            self.set_status(
                Level::Warn,
                "every stale lock shown is a vim swap with unsaved changes: reclaim them one at a time with d",
            );
            return;
        }
        self.mode = Mode::Confirm(ConfirmDialog::new(ConfirmAction::Reclaim {
            findings,
            kept,
        }));
    }
}

/// How old a lock is at `now` (unknown mtimes sort as oldest).
pub fn age_ms(r: &Row, now: i64) -> i64 {
    r.finding.modified_ms.map_or(i64::MAX, |m| now - m)
}

pub fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}
