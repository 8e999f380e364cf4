//! The application state and its one `update` function. Everything the UI shows is in [`App`];
//! everything that changes it arrives as a [`Msg`] (a key, a scan event, re-judged verdicts, a
//! reclaim outcome, a clock tick), and everything the app wants done outside itself leaves as an
//! [`Effect`] for the runtime (start a scan, carry out a confirmed reclaim, quit). `update`
//! never blocks and never touches the file system, so it is tested directly.
//!
//! Rows are keyed by path: a scan or a re-judge replaces a row in place, and the selection
//! follows the selected path across refreshes, sorts and filters. The app knows the terminal's
//! size (a [`Msg::Resize`]) and lays the screen out with the same [`Screen`] the drawing uses,
//! so it keeps every scroll position itself: the selected row is always on screen, and the
//! detail pane, the help and the dialog scroll no further than their text.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use locksmith::report::waiting::Waiting;
use locksmith::scan::{Finding, ScanEvent};
use locksmith::{Judgement, Verdict};
use ratatui::crossterm::event::{KeyEvent, MouseButton, MouseEvent, MouseEventKind};
use ratatui::layout::Rect;

use super::confirm::{Choice, ConfirmAction, ConfirmDialog, ConfirmedAction};
use super::detail;
use super::keymap::{self, Action, Context};
use super::layout::{self, Screen, WHEEL_STEP};
use super::popup::{dialog, help};
pub use super::rows::{Column, Row, age_ms};
use super::table::{self, ContentWidths};
use super::text::{self, plural};
use super::theme::Theme;

/// How long a status message stays: information ...
const STATUS_INFO_MS: i64 = 5_000;
/// ... and warnings and errors, which take longer to read.
const STATUS_WARN_MS: i64 = 10_000;

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

/// What came of undoing the last reclaim of this session.
#[derive(Debug, Clone)]
pub struct RestoreResult {
    /// The locks put back, as judged right after (those that could be judged).
    pub findings: Vec<Finding>,
    /// Whether every lock of the undo was put back.
    pub restored: bool,
    /// What was done or why not, in a sentence.
    pub message: String,
}

/// Everything that can change the app.
#[derive(Debug)]
pub enum Msg {
    Key(KeyEvent),
    Mouse(MouseEvent),
    /// The terminal's size (at start and on every change).
    Resize {
        width: u16,
        height: u16,
    },
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
    /// Who waits for the listed locks, and their holders' state (each re-judge round).
    Waiting(HashMap<PathBuf, Waiting>),
    /// A holder was ended (or not): what came of it, in a sentence.
    Ended {
        ok: bool,
        message: String,
    },
    /// Which locks of the open reclaim dialog this user cannot remove (`None`: removable).
    Checked(Vec<(PathBuf, Option<String>)>),
    /// What the last reclaim of this session removed (what `u` would put back), or why
    /// there is nothing to undo.
    UndoPlanned(Result<locksmith::reclaim::Plan, String>),
    Restored(RestoreResult),
    /// These hosts are being asked about their foreign locks (`--ask-hosts`).
    Asking(Vec<String>),
    /// They answered (or `failed` of them could not); the locks were judged again.
    Asked {
        hosts: Vec<String>,
        failed: usize,
    },
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
    /// End a lock's stuck holder, off the UI thread.
    EndHolder(ConfirmedAction),
    /// Ask which of these locks this user cannot remove (for the dialog just opened).
    Check(Vec<Finding>),
    /// Find what the last reclaim of this session removed, to ask before putting it back.
    PlanUndo,
    /// Carry out a confirmed undo, off the UI thread.
    Restore(ConfirmedAction),
    /// Put these bytes on the clipboard (OSC 52): a form of a path that is safe to paste
    /// (see [`super::clipboard`]).
    Copy(Vec<u8>),
    Quit,
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
    /// When it goes (ms since the epoch); `None` while what it reports is still going on.
    pub expires_ms: Option<i64>,
}

/// Scan progress, for the header.
#[derive(Debug, Clone, Default)]
pub struct Progress {
    pub generation: u64,
    pub scanning: bool,
    /// The running scan is a periodic one in the background: the header keeps showing the
    /// last scan's numbers, and its errors are only counted.
    pub quiet: bool,
    /// Errors of the running quiet scan (shown when it ends).
    quiet_errors: u64,
    pub entries: u64,
    pub locks: u64,
    pub errors: u64,
    pub elapsed_ms: Option<u64>,
    /// Hosts being asked about their foreign locks now.
    pub asking: Vec<String>,
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
    /// The terminal's size.
    area: Rect,
    /// First row shown.
    offset: usize,
    /// Lines the detail pane is scrolled down.
    pub detail_scroll: u16,
    /// The widest cell of each column among the visible rows.
    content: ContentWidths,
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
    /// Who waits for each listed lock, and its holder's state (from the last re-judge round).
    pub waiting: HashMap<PathBuf, Waiting>,
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
            area: Rect::new(0, 0, 80, 24),
            offset: 0,
            detail_scroll: 0,
            content: ContentWidths::default(),
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
            waiting: HashMap::new(),
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

    /// Every listed lock (what the runtime re-judges, each through the directories it was
    /// found in).
    pub fn listed_findings(&self) -> Vec<Finding> {
        self.rows.iter().map(|r| r.finding.clone()).collect()
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
            Action::Reclaim | Action::ReclaimAllStale | Action::Undo => !self.opts.readonly,
            Action::DetailDown | Action::DetailUp => self.details_open(),
            _ => true,
        }
    }

    /// The first visible row on screen.
    pub fn offset(&self) -> usize {
        self.offset
    }

    /// The widest cell of each column among the visible rows.
    pub fn content_widths(&self) -> &ContentWidths {
        &self.content
    }

    /// Whether the detail pane is on screen (open, and a lock selected).
    pub fn details_open(&self) -> bool {
        self.show_details && !self.view.is_empty()
    }

    /// The status message fitted to a screen of `area`: wrapped at words to the lines it may
    /// take, beside the position indicator.
    pub fn status_lines(&self, area: Rect) -> Vec<String> {
        let Some(s) = &self.status else {
            return vec![String::new()];
        };
        if matches!(self.mode, Mode::Filter) {
            return vec![String::new()];
        }
        let pos = text::width(&self.position_text());
        let room = usize::from(area.width).saturating_sub(if pos > 0 { pos + 2 } else { 0 });
        let lines = text::fit(&s.text, room, usize::from(Screen::status_room(area.height)));
        if lines.is_empty() {
            vec![String::new()]
        } else {
            lines
        }
    }

    /// Where the selection is (`12/78`), and how many locks match while a filter is active
    /// (`2/3 · 3 of 78 match`).
    pub fn position_text(&self) -> String {
        let filtered = !self.filter.is_empty() || self.verdict_filter.is_some();
        let shown = self.view.len();
        let pos = match self.cursor() {
            Some(c) => format!("{}/{shown}", c + 1),
            None => String::new(),
        };
        if !filtered {
            return pos;
        }
        let total = self.rows.len();
        let matches = format!("{shown} of {total} match");
        if pos.is_empty() {
            matches
        } else {
            format!("{pos} · {matches}")
        }
    }

    /// The screen's layout at the current size.
    pub fn screen(&self) -> Screen {
        let lines = self.status_lines(self.area).len() as u16;
        Screen::new(self.area, self.details_open(), lines)
    }

    /// Rows of the table on screen (the PgUp/PgDn step).
    pub fn page(&self) -> usize {
        usize::from(self.screen().table_body().height).max(1)
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

    /// Starts a periodic scan in the background, unless one is running: new lock files appear
    /// and removed ones go without `r`, and the header keeps the last scan's numbers meanwhile.
    pub fn rescan_quietly(&mut self) -> Option<Effect> {
        if self.progress.scanning {
            return None;
        }
        self.progress.generation += 1;
        self.progress.scanning = true;
        self.progress.quiet = true;
        self.progress.quiet_errors = 0;
        self.seen.clear();
        Some(Effect::Scan {
            generation: self.progress.generation,
        })
    }

    /// Takes the terminal's size and keeps the selection and every scroll position in view.
    /// The status message stays until it expires: it is fitted again to the new width.
    pub fn resize(&mut self, width: u16, height: u16) {
        let area = Rect::new(0, 0, width, height);
        if area == self.area {
            return;
        }
        self.area = area;
        self.clamp_scrolls();
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
            Msg::Resize { width, height } => {
                self.resize(width, height);
                None
            }
            Msg::Mouse(ev) => {
                self.refresh();
                let effect = self.on_mouse(ev);
                self.refresh();
                effect
            }
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
            Msg::Asking(hosts) => {
                for h in hosts {
                    if !self.progress.asking.contains(&h) {
                        self.progress.asking.push(h);
                    }
                }
                None
            }
            Msg::Asked { hosts, failed } => {
                self.progress.asking.retain(|h| !hosts.contains(h));
                let names: Vec<String> = hosts.iter().map(|h| text::clean(h)).collect();
                let text = match failed {
                    0 => format!("asked {} over ssh", names.join(", ")),
                    n => format!(
                        "asked {} over ssh: {n} could not answer (their locks stay foreign; see the details)",
                        names.join(", ")
                    ),
                };
                let level = if failed == 0 {
                    Level::Info
                } else {
                    Level::Warn
                };
                self.set_status(level, text);
                None
            }
            Msg::Reclaimed(results) => {
                self.on_reclaimed(results);
                None
            }
            Msg::Waiting(w) => {
                self.waiting = w;
                None
            }
            Msg::Ended { ok, message } => {
                self.reclaiming = false;
                let level = if ok { Level::Info } else { Level::Error };
                self.set_status(level, text::clean(&message));
                None
            }
            Msg::Checked(answers) => {
                if let Mode::Confirm(d) = &mut self.mode {
                    d.checked(answers);
                }
                self.clamp_scrolls();
                None
            }
            Msg::UndoPlanned(plan) => {
                match plan {
                    Ok(plan) if matches!(self.mode, Mode::Table) => {
                        self.status = None;
                        self.open(Mode::Confirm(ConfirmDialog::new(ConfirmAction::Restore(
                            plan,
                        ))));
                    }
                    Ok(_) => self.status = None,
                    Err(why) => self.set_status(Level::Warn, text::clean(&why)),
                }
                None
            }
            Msg::Restored(r) => {
                self.reclaiming = false;
                for f in r.findings {
                    self.seen.insert(f.path.clone());
                    self.upsert(f);
                }
                let level = if r.restored {
                    Level::Info
                } else {
                    Level::Error
                };
                self.set_status(level, text::clean(&r.message));
                None
            }
            Msg::Tick { now_ms } => {
                self.now_ms = now_ms;
                // Ages grow: the AGE column may need another character. (A view waiting
                // for its refresh may name rows that are gone: the refresh measures it.)
                if !self.view_dirty {
                    self.content = table::content_widths(self.visible(), now_ms);
                }
                if self
                    .status
                    .as_ref()
                    .and_then(|s| s.expires_ms)
                    .is_some_and(|t| now_ms >= t)
                {
                    self.status = None;
                }
                None
            }
        }
    }

    fn on_scan_event(&mut self, event: ScanEvent) {
        match event {
            ScanEvent::Progress { .. } if self.progress.quiet => {}
            ScanEvent::Progress { entries, locks } => {
                self.progress.entries = entries;
                self.progress.locks = locks;
            }
            ScanEvent::Found(f) => {
                self.seen.insert(f.path.clone());
                self.progress.locks = self.progress.locks.max(self.seen.len() as u64);
                self.upsert(*f);
            }
            ScanEvent::Error(_) if self.progress.quiet => self.progress.quiet_errors += 1,
            ScanEvent::Error(e) => {
                self.progress.errors += 1;
                self.set_status(
                    Level::Warn,
                    format!("{}: {}", text::path(e.path()), text::clean(&e.to_string())),
                );
            }
        }
    }

    fn on_scan_done(&mut self, s: ScanSummary) {
        self.progress.scanning = false;
        if std::mem::take(&mut self.progress.quiet) {
            if s.failed.is_some() || s.cancelled {
                return;
            }
            self.progress.entries = s.entries;
            self.progress.locks = s.locks;
            self.progress.errors = self.progress.quiet_errors;
        } else {
            self.progress.entries = self.progress.entries.max(s.entries);
            self.progress.locks = self.progress.locks.max(s.locks);
        }
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
        let undo = format!(" ({} undoes it)", keymap::key(Context::Table, Action::Undo));
        let (level, msg) = match (total, results.first()) {
            (1, Some(r)) if r.removed => (Level::Info, text::clean(&r.message) + &undo),
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
        let ttl = match level {
            Level::Info => STATUS_INFO_MS,
            Level::Warn | Level::Error => STATUS_WARN_MS,
        };
        self.status = Some(Status {
            text: text.into(),
            level,
            expires_ms: Some(self.now_ms + ttl),
        });
    }

    /// A status message that stays until replaced (what it reports is still going on).
    fn set_status_until_done(&mut self, text: impl Into<String>) {
        self.status = Some(Status {
            text: text.into(),
            level: Level::Info,
            expires_ms: None,
        });
    }

    /// Opens a pop-up; the status message goes (it was about what came before).
    fn open(&mut self, mode: Mode) {
        self.status = None;
        self.mode = mode;
    }

    /// Rebuilds the filtered, sorted view if rows or settings changed, and moves the cursor to
    /// the selected path (or keeps its position when that lock is gone).
    pub fn refresh(&mut self) {
        if !self.view_dirty {
            self.keep_visible();
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
                Column::Pid => ra.cells.owner_pid.cmp(&rb.cells.owner_pid),
                Column::Command => ra.cells.command.cmp(&rb.cells.command),
                Column::Host => ra.cells.host.cmp(&rb.cells.host),
                Column::Age => age_ms(ra, now).cmp(&age_ms(rb, now)),
                Column::Path => ra.finding.path.cmp(&rb.finding.path),
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
        self.content = table::content_widths(self.visible(), self.now_ms);
        self.sync_selected();
        self.keep_visible();
    }

    fn sync_selected(&mut self) {
        let now = self
            .view
            .get(self.cursor)
            .map(|&i| self.rows[i].finding.path.clone());
        if now != self.selected {
            self.detail_scroll = 0;
        }
        self.selected = now;
    }

    fn move_to(&mut self, pos: usize) {
        self.moved = true;
        self.cursor = pos.min(self.view.len().saturating_sub(1));
        self.sync_selected();
        self.keep_visible();
    }

    /// Scrolls the table so that the selection is on screen, and so that no rows hide above
    /// the top while there is room below (after a filter shrinks the list, say).
    fn keep_visible(&mut self) {
        let page = self.page();
        let len = self.view.len();
        let mut offset = self.offset.min(len.saturating_sub(page));
        if let Some(c) = self.cursor() {
            if c < offset {
                offset = c;
            } else if c >= offset + page {
                offset = c + 1 - page;
            }
        }
        self.offset = offset;
    }

    /// Clamps every scroll position to what the current size shows.
    fn clamp_scrolls(&mut self) {
        self.keep_visible();
        let max = self.detail_max_scroll();
        self.detail_scroll = self.detail_scroll.min(max);
        let (theme, area) = (self.opts.theme, self.area);
        match &mut self.mode {
            Mode::Help { scroll } => *scroll = (*scroll).min(help::extent(theme, area).1),
            Mode::Confirm(d) => {
                let max = dialog::extent(d, theme, self.opts.state_dir.as_deref(), area).1;
                d.scroll = d.scroll.min(max);
            }
            Mode::Table | Mode::Filter => {}
        }
    }

    fn detail_max_scroll(&self) -> u16 {
        match (self.screen().detail_inner(), self.selected_row()) {
            (Some(inner), Some(row)) => detail::max_scroll(
                &row.finding,
                self.waiting.get(&row.finding.path),
                self.opts.theme,
                self.now_ms,
                inner,
            ),
            _ => 0,
        }
    }

    /// Scrolls whatever scrolls in the current mode by `delta` lines (the help, the dialog's
    /// text, else the detail pane), no further than its end.
    fn scroll_by(&mut self, delta: i32) {
        let step = |v: u16, max: u16| -> u16 {
            let n = i32::from(v).saturating_add(delta).clamp(0, i32::from(max));
            u16::try_from(n).unwrap_or(max)
        };
        let (theme, area) = (self.opts.theme, self.area);
        match &mut self.mode {
            Mode::Help { scroll } => *scroll = step(*scroll, help::extent(theme, area).1),
            Mode::Confirm(d) => {
                let max = dialog::extent(d, theme, self.opts.state_dir.as_deref(), area).1;
                d.scroll = step(d.scroll, max);
            }
            Mode::Table | Mode::Filter => {
                self.detail_scroll = step(self.detail_scroll, self.detail_max_scroll());
            }
        }
    }

    /// Lines a page of the current pop-up shows (its PgUp/PgDn step).
    fn popup_page(&self) -> i32 {
        let (theme, area) = (self.opts.theme, self.area);
        let shown = match &self.mode {
            Mode::Help { .. } => help::extent(theme, area).0,
            Mode::Confirm(d) => dialog::extent(d, theme, self.opts.state_dir.as_deref(), area).0,
            Mode::Table | Mode::Filter => 1,
        };
        i32::from(shown.max(1))
    }

    /// A click selects a row or sorts by a column title; the wheel scrolls what is under the
    /// pointer (the table moves its selection, so it stays in view).
    fn on_mouse(&mut self, ev: MouseEvent) -> Option<Effect> {
        let (x, y) = (ev.column, ev.row);
        let wheel = match ev.kind {
            MouseEventKind::ScrollDown => i32::from(WHEEL_STEP),
            MouseEventKind::ScrollUp => -i32::from(WHEEL_STEP),
            MouseEventKind::Down(MouseButton::Left) => 0,
            _ => return None,
        };
        let screen = self.screen();
        if !matches!(self.mode, Mode::Table) {
            if wheel != 0 && !matches!(self.mode, Mode::Filter) {
                self.scroll_by(wheel);
            }
            return None;
        }
        if let Some(d) = screen.detail
            && layout::contains(d, x, y)
        {
            if wheel != 0 {
                self.scroll_by(wheel);
            }
            return None;
        }
        if !layout::contains(screen.table, x, y) {
            return None;
        }
        if wheel != 0 {
            let to = self.cursor.saturating_add_signed(wheel as isize);
            self.move_to(to);
            return None;
        }
        let body = screen.table_body();
        if y < body.y {
            let plan = table::plan(screen.table.width, &self.content, self.sort);
            if let Some(c) = table::column_at(&plan, x - screen.table.x) {
                if c == self.sort {
                    self.descending = !self.descending;
                } else {
                    self.sort = c;
                    self.descending = false;
                }
                self.view_dirty = true;
            }
            return None;
        }
        let row = self.offset + usize::from(y - body.y);
        if row < self.view.len() {
            self.move_to(row);
        }
        None
    }

    fn act(&mut self, action: Action, key: &KeyEvent) -> Option<Effect> {
        let page = self.page();
        let last = self.view.len().saturating_sub(1);
        let in_popup = matches!(self.mode, Mode::Help { .. } | Mode::Confirm(_));
        if in_popup {
            let p = self.popup_page();
            let delta = match action {
                Action::Down => Some(1),
                Action::Up => Some(-1),
                Action::PageDown => Some(p),
                Action::PageUp => Some(-p),
                Action::Top => Some(i32::MIN / 2),
                Action::Bottom => Some(i32::MAX / 2),
                _ => None,
            };
            if let Some(d) = delta {
                self.scroll_by(d);
                return None;
            }
        }
        match action {
            Action::Quit => return Some(Effect::Quit),
            Action::Back => {
                if self.filter.is_empty() {
                    return Some(Effect::Quit);
                }
                self.filter.clear();
                self.view_dirty = true;
            }
            Action::Down => self.move_to(self.cursor.saturating_add(1)),
            Action::Up => self.move_to(self.cursor.saturating_sub(1)),
            Action::DetailDown => self.scroll_by(1),
            Action::DetailUp => self.scroll_by(-1),
            Action::CopyPath => {
                let Some(row) = self.selected_row() else {
                    self.set_status(Level::Warn, "no lock selected");
                    return None;
                };
                // Never the raw bytes: a name with a newline or ESC would run when pasted.
                let (text, form) = match super::clipboard::text_for(&row.finding.path) {
                    Ok(t) => t,
                    Err(why) => {
                        self.set_status(Level::Warn, why);
                        return None;
                    }
                };
                let how = match form {
                    super::clipboard::Form::Plain => "",
                    super::clipboard::Form::Quoted => " (quoted for the shell)",
                    super::clipboard::Form::Escaped => {
                        " (as $'…' for bash and zsh: the name holds control characters, \
                         invisible characters or bytes that are not UTF-8)"
                    }
                };
                self.set_status(
                    Level::Info,
                    format!("copied {text} to the clipboard (OSC 52){how}"),
                );
                return Some(Effect::Copy(text.into_bytes()));
            }
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
            Action::ToggleDetails => {
                self.show_details = !self.show_details;
                self.detail_scroll = 0;
            }
            Action::Help => self.open(Mode::Help { scroll: 0 }),
            Action::CloseHelp => self.mode = Mode::Table,
            Action::Reclaim => return self.ask_reclaim_selected(),
            Action::Undo => {
                if self.refuse_if_busy() {
                    return None;
                }
                self.set_status_until_done("looking for the last reclaim of this session…");
                return Some(Effect::PlanUndo);
            }
            Action::ReclaimAllStale => return self.ask_reclaim_all(),
            Action::EndHolder => self.ask_end_holder(),
            Action::ConfirmToggle => {
                if let Mode::Confirm(d) = &mut self.mode {
                    d.toggle();
                }
            }
            Action::ConfirmLeft | Action::ConfirmRight => {
                if let Mode::Confirm(d) = &mut self.mode {
                    d.highlight(if action == Action::ConfirmLeft {
                        Choice::Yes
                    } else {
                        Choice::No
                    });
                }
            }
            Action::ConfirmYes | Action::ConfirmChoose | Action::ConfirmNo => {
                let Mode::Confirm(dialog) = std::mem::replace(&mut self.mode, Mode::Table) else {
                    return None;
                };
                let undo = matches!(dialog.action, ConfirmAction::Restore(_));
                let denied = (!dialog.offers_yes())
                    .then(|| dialog.denied.as_deref().and_then(|d| d.first()).cloned())
                    .flatten();
                let confirmed = match action {
                    Action::ConfirmYes => dialog.yes(),
                    Action::ConfirmChoose => dialog.choose(),
                    _ => None,
                };
                return match confirmed {
                    Some(c) if c.holder_to_end().is_some() => {
                        self.reclaiming = true;
                        let pid = c.holder_to_end().map_or(0, |s| s.pid);
                        self.set_status_until_done(format!("ending process {pid}…"));
                        Some(Effect::EndHolder(c))
                    }
                    Some(c) if c.restore_plan().is_some() => {
                        self.reclaiming = true;
                        let n = c.restore_plan().map_or(0, |p| p.entries.len());
                        self.set_status_until_done(format!("putting back {n} lock{}…", plural(n)));
                        Some(Effect::Restore(c))
                    }
                    Some(c) => {
                        self.reclaiming = true;
                        let n = c.findings().len();
                        self.set_status_until_done(format!("reclaiming {n} lock{}…", plural(n)));
                        Some(Effect::Reclaim(c))
                    }
                    None if undo => {
                        self.set_status(Level::Info, "cancelled: nothing was put back");
                        None
                    }
                    None if denied.is_some() => {
                        let (p, why) = denied.unwrap_or_default();
                        self.set_status(
                            Level::Warn,
                            format!(
                                "nothing was removed: {}: {}",
                                text::path(&p),
                                text::clean(&why)
                            ),
                        );
                        None
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
            self.set_status(
                Level::Warn,
                "read-only (--readonly): reclaim and undo are disabled",
            );
            return true;
        }
        if self.reclaiming {
            self.set_status(Level::Warn, "a reclaim or an undo is already running");
            return true;
        }
        false
    }

    /// Opens a reclaim dialog and asks which of its locks this user cannot remove.
    fn ask(&mut self, action: ConfirmAction) -> Option<Effect> {
        let targets = action.targets().to_vec();
        self.open(Mode::Confirm(ConfirmDialog::new(action)));
        Some(Effect::Check(targets))
    }

    fn ask_reclaim_selected(&mut self) -> Option<Effect> {
        if self.refuse_if_busy() {
            return None;
        }
        let Some(row) = self.selected_row() else {
            self.set_status(Level::Warn, "no lock selected");
            return None;
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
        let refusal = match f.judgement.verdict() {
            Verdict::Stale => None,
            // Not proven stale: a person may decide, in a dialog of its own.
            Verdict::Foreign | Verdict::Unknown => {
                return self.ask(ConfirmAction::Force(Box::new(f)));
            }
            Verdict::Live => Some(format!(
                "{name} is live: a live lock is never removed — {why}"
            )),
            Verdict::Free => Some(format!(
                "{name} is free: nobody holds this kernel-lock file, and removing it could split programs waiting on it"
            )),
        };
        match refusal {
            Some(r) => {
                self.set_status(Level::Warn, format!("not reclaimable: {r}"));
                None
            }
            None => self.ask(ConfirmAction::Reclaim {
                findings: vec![f],
                kept: Vec::new(),
            }),
        }
    }

    /// The waiters and holder state of the selected lock, when known.
    pub fn selected_waiting(&self) -> Option<&Waiting> {
        self.waiting.get(&self.selected_row()?.finding.path)
    }

    /// `x`: a dialog to end the selected lock's holder, when it is stuck (stopped, or not
    /// reaping the children it holds the lock for).
    fn ask_end_holder(&mut self) {
        if self.refuse_if_busy() {
            return;
        }
        let Some(row) = self.selected_row() else {
            self.set_status(Level::Warn, "no lock selected");
            return;
        };
        let finding = Box::new(row.finding.clone());
        match self.selected_waiting().and_then(|w| w.holder.clone()) {
            Some(stuck) => self.open(Mode::Confirm(ConfirmDialog::new(
                ConfirmAction::EndHolder { finding, stuck },
            ))),
            None => self.set_status(
                Level::Warn,
                "its holder does not show it is stuck (stopped, or not reaping its children): nothing to end",
            ),
        }
    }

    fn ask_reclaim_all(&mut self) -> Option<Effect> {
        if self.refuse_if_busy() {
            return None;
        }
        let (kept, findings): (Vec<Finding>, Vec<Finding>) = self
            .visible()
            .filter(|r| r.verdict() == Verdict::Stale)
            .map(|r| r.finding.clone())
            .partition(|f| f.judgement.unsaved_changes == Some(true));
        if findings.is_empty() && kept.is_empty() {
            self.set_status(Level::Warn, "no stale lock shown: nothing to reclaim");
            return None;
        }
        if findings.is_empty() {
            self.set_status(
                Level::Warn,
                format!(
                    "every stale lock shown is a vim swap with unsaved changes: reclaim them one at a time with {}",
                    keymap::key(Context::Table, Action::Reclaim)
                ),
            );
            return None;
        }
        self.ask(ConfirmAction::Reclaim { findings, kept })
    }
}
