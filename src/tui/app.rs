//! The application state and its one `update` function. Everything the UI shows is in [`App`];
//! everything that changes it arrives as a [`Msg`] (a key, a scan event, re-judged verdicts, a
//! reclaim outcome, a clock tick), and everything the app wants done outside itself leaves as an
//! [`Effect`] for the runtime (start a scan, carry out a confirmed reclaim, signal a lock's
//! holders, run a program with the UI suspended, quit). `update` never blocks and never touches
//! the file system, so it is tested directly.
//!
//! Keys are handled by context ([`App::act`]): the table, the detail pane (which adds its own
//! keys to the table's), a prompt (the filter, find) or a pop-up (see `popup`).
//!
//! Rows are keyed by path: a scan or a re-judge replaces a row in place, and the selection
//! follows the selected path across refreshes, sorts and filters (narrowing the filter keeps
//! the selected row while it matches, else selects the first match). Marks (Space) are paths
//! too, and go with their rows. The app knows the terminal's size (a [`Msg::Resize`]) and lays
//! the screen out with the same [`Screen`] the drawing uses, so it keeps every scroll position
//! itself: the selected row is always on screen, and the detail pane and the pop-ups scroll no
//! further than their text. A status message about one row goes when the selection moves to
//! another, and any message goes after a while.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use locksmith::report::waiting::Waiting;
use locksmith::scan::{Finding, ScanEvent};
use locksmith::{Judgement, Verdict};
use ratatui::crossterm::event::{KeyCode, KeyEvent, MouseButton, MouseEvent, MouseEventKind};
use ratatui::layout::Rect;

use super::confirm::{ConfirmAction, ConfirmDialog, ConfirmedAction, Undo};
use super::detail;
use super::keymap::{self, Action, Context};
use super::layout::{self, Screen, WHEEL_STEP};
use super::popup::{self, Dialog, Outcome, Popup, help, journal, reclaim, restore, signal, why};
pub use super::rows::{Column, FileMeta, Row, age_ms, next_sort};
use super::stop;
use super::table::{self, ContentWidths};
use super::text::{self, plural};
use super::theme::Theme;

/// How long a status message stays: information ...
const STATUS_INFO_MS: i64 = 5_000;
/// ... and warnings and errors, which take longer to read.
const STATUS_WARN_MS: i64 = 10_000;
/// A periodic re-judge round judges every listed lock up to this many; beyond, the rows on
/// screen, the marked ones and this many others in turn.
pub const REJUDGE_SLICE: usize = 5_000;

/// Settings fixed for the life of the UI.
#[derive(Debug, Clone)]
pub struct Options {
    /// `--readonly`: never reclaim, never signal.
    pub readonly: bool,
    pub theme: Theme,
    /// Where reclaim keeps copies and its journal (shown in the dialog).
    pub state_dir: Option<PathBuf>,
    /// The roots scanned (the header names them).
    pub roots: Vec<PathBuf>,
}

/// How a scan ended.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScanSummary {
    pub entries: u64,
    pub locks: u64,
    pub elapsed_ms: u64,
    /// Stopped early (a rescan replaced it); rows it did not reach are kept.
    pub cancelled: bool,
    /// The scan could not run at all (no root could be read, say): it found nothing.
    pub failed: Option<String>,
}

/// One lock after re-judging.
#[derive(Debug, Clone)]
pub enum Rejudge {
    Judged(Box<Finding>),
    /// No longer there (nor its directory), or no longer a lock.
    Gone,
    Failed(String),
}

/// What came of reclaiming one lock.
#[derive(Debug, Clone)]
pub struct ReclaimResult {
    pub path: PathBuf,
    pub removed: bool,
    /// The lock (or its directory) was gone already: nothing to reclaim.
    pub gone: bool,
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

/// What came of signalling a lock's holders.
#[derive(Debug, Clone)]
pub struct StopResult {
    pub plan: stop::Plan,
    pub sent: stop::Sent,
}

/// A program the UI runs in the terminal, suspended meanwhile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Run {
    /// `EDITOR -r FILE` for a vim swap file with unsaved changes.
    Recover { swap: PathBuf, editor: &'static str },
    /// `$SHELL` in a lock's directory.
    Shell { dir: PathBuf },
}

/// What came of running a program.
#[derive(Debug, Clone)]
pub struct RunResult {
    /// The lock it was about.
    pub path: PathBuf,
    pub ok: bool,
    /// What happened, in a sentence.
    pub message: String,
    /// It was not run, for this reason (a swap file this user may not recover): a pop-up says
    /// why.
    pub refused: Option<String>,
}

/// Everything that can change the app.
#[derive(Debug)]
pub enum Msg {
    Key(KeyEvent),
    /// Text pasted into the terminal (bracketed paste).
    Paste(String),
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
    /// The owners and modes of lock files.
    Files(Vec<(PathBuf, FileMeta)>),
    Reclaimed(Vec<ReclaimResult>),
    /// Who waits for the listed locks, and their holders' state (each re-judge round).
    /// Who waits for the locks a re-judge round judged (`judged`; a lock of those missing
    /// from `waiting` has no waiter now).
    Waiting {
        judged: Vec<PathBuf>,
        waiting: HashMap<PathBuf, Waiting>,
    },
    /// Which locks of the open reclaim dialog this user cannot remove (`None`: removable).
    Checked(Vec<(PathBuf, Option<String>)>),
    /// What the UI reclaimed last (what `u` would put back), or why there is nothing to
    /// undo.
    UndoPlanned(Result<locksmith::reclaim::Plan, String>),
    /// The journal, oldest line first, for the journal view (or why it cannot be read).
    JournalRead(Result<Vec<locksmith::reclaim::Entry>, String>),
    Restored(RestoreResult),
    /// Who `x` would signal, or why nobody.
    StopPlanned(Result<stop::Plan, String>),
    Stopped(StopResult),
    /// A program run with the UI suspended has ended.
    Ran(RunResult),
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
    /// Ask which of these locks this user cannot remove (for the dialog just opened).
    Check(Vec<Finding>),
    /// Find what the UI reclaimed last, to ask before putting it back.
    PlanUndo,
    /// Read the journal, for the journal view.
    ReadJournal,
    /// Carry out a confirmed undo, off the UI thread.
    Restore(ConfirmedAction),
    /// Find out whom `x` would signal for this lock, off the UI thread.
    PlanStop(Box<Finding>),
    /// Signal the confirmed processes, off the UI thread.
    Stop(ConfirmedAction),
    /// Judge these locks again now.
    Rejudge(Vec<Finding>),
    /// Run a program in the terminal, the UI suspended until it ends.
    Run(Run, Box<Finding>),
    /// Put these bytes on the clipboard (OSC 52): a form of a path that is safe to paste
    /// (see [`super::clipboard`]).
    Copy(Vec<u8>),
    Quit,
}

/// What is typed at a prompt, and where the selection was when it opened.
#[derive(Debug, Clone, Default)]
pub struct Prompt {
    pub text: String,
    /// The selection before `f` (Esc goes back to it).
    origin: Option<PathBuf>,
}

/// What the UI is doing: exactly one at a time.
#[derive(Debug)]
pub enum Mode {
    Table,
    /// Typing the filter (the text is [`App::filter`]).
    Filter,
    /// Typing what to find.
    Find(Prompt),
    Popup(Box<dyn Popup>),
}

impl Mode {
    /// The context of the keys: the detail pane's when it is open over the table.
    pub fn context(&self, details: bool) -> Context {
        match self {
            Mode::Table if details => Context::Detail,
            Mode::Table => Context::Table,
            Mode::Filter => Context::Filter,
            Mode::Find(_) => Context::Find,
            Mode::Popup(p) => Context::Popup(p.keys()),
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
    /// The row it is about: it goes when the selection moves to another.
    pub about: Option<PathBuf>,
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
    /// What changed in `rows` or the settings since the view was built.
    change: Change,
    /// Indices into `rows` in path order (a full rebuild of the view sorts these by the sort
    /// column alone, keeping ties in path order), but for ...
    by_path_order: Vec<usize>,
    /// ... the rows added since the last refresh, which join it then.
    unordered: Vec<usize>,
    /// The filter changed since the last refresh: a selection it hides gives way to the
    /// first match.
    refiltered: bool,
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
    /// How many rows the current scan has found (each row knows the scan that found it last:
    /// rows missing from a complete scan are dropped).
    found_now: usize,
    /// Rows marked with Space.
    marks: HashSet<PathBuf>,
    /// What was found last (`n`/`N` find it again).
    pub found: Option<String>,
    /// A reclaim is running.
    pub reclaiming: bool,
    /// Processes are being signalled (or looked at before).
    pub stopping: bool,
    /// Who waits for each listed lock, and its holder's state (from the last re-judge round).
    pub waiting: HashMap<PathBuf, Waiting>,
    /// Where the next re-judge round of a long list starts, in `rows`.
    rejudge_next: usize,
    /// Where the why prompt's messages are read (the current directory and environment the
    /// UI started in).
    why_context: locksmith::why::Context,
}

impl App {
    pub fn new(opts: Options, now_ms: i64) -> App {
        App {
            opts,
            rows: Vec::new(),
            by_path: HashMap::new(),
            view: Vec::new(),
            change: Change::None,
            by_path_order: Vec::new(),
            unordered: Vec::new(),
            refiltered: false,
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
            found_now: 0,
            marks: HashSet::new(),
            found: None,
            reclaiming: false,
            stopping: false,
            waiting: HashMap::new(),
            rejudge_next: 0,
            why_context: locksmith::why::Context::current(),
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

    /// Whether a row is marked.
    pub fn is_marked(&self, path: &Path) -> bool {
        self.marks.contains(path)
    }

    /// How many rows are marked.
    pub fn marked(&self) -> usize {
        self.marks.len()
    }

    /// The locks the next periodic re-judge round judges, each through the directories it
    /// was found in: every listed lock, or on a long list the rows on screen, the marked ones
    /// and the next [`REJUDGE_SLICE`] of the others in turn (a round at a time, so that a
    /// million listed locks cost a few thousand re-judged every round, not a million).
    pub fn rejudge_round(&mut self) -> Vec<Finding> {
        if self.rows.len() <= REJUDGE_SLICE {
            return self.rows.iter().map(|r| r.finding.clone()).collect();
        }
        let mut take: Vec<usize> = self.view[self.offset.min(self.view.len())..]
            .iter()
            .take(self.page())
            .copied()
            .collect();
        take.extend(
            self.marks
                .iter()
                .filter_map(|p| self.by_path.get(p).copied()),
        );
        let start = self.rejudge_next % self.rows.len();
        take.extend((start..start + REJUDGE_SLICE).map(|i| i % self.rows.len()));
        self.rejudge_next = (start + REJUDGE_SLICE) % self.rows.len();
        take.sort_unstable();
        take.dedup();
        take.into_iter()
            .map(|i| self.rows[i].finding.clone())
            .collect()
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
        self.mode.context(self.details_open())
    }

    /// The open pop-up, if any.
    pub fn popup(&self) -> Option<&dyn Popup> {
        match &self.mode {
            Mode::Popup(p) => Some(p.as_ref()),
            _ => None,
        }
    }

    /// The open confirm dialog (of a reclaim, an undo or `x`), if any.
    pub fn dialog(&self) -> Option<&ConfirmDialog> {
        self.popup()?.dialog()
    }

    /// Whether the help is open.
    pub fn help_open(&self) -> bool {
        self.popup()
            .is_some_and(|p| p.as_any().downcast_ref::<help::Help>().is_some())
    }

    /// What pop-ups are drawn with.
    pub fn popup_env(&self) -> popup::Env<'_> {
        popup::Env {
            theme: self.opts.theme,
            state_dir: self.opts.state_dir.as_deref(),
            popups: popup::ALL,
            width: self.area.width,
            roots: &self.opts.roots,
        }
    }

    /// Whether a key-map action is available now (the key bar hides the others).
    pub fn enabled(&self, action: Action) -> bool {
        let row = self.selected_row();
        match action {
            Action::Reclaim | Action::ReclaimAllStale | Action::Undo => !self.opts.readonly,
            Action::Signal => {
                !self.opts.readonly
                    && row.is_some_and(|r| !stop::candidates(&r.finding.judgement).is_empty())
            }
            Action::Recover => row.is_some_and(|r| recovery(r).is_some()),
            Action::FindNext | Action::FindPrev => self.found.is_some(),
            // A dialog with nothing to say yes to has one button, Close: only closing works.
            Action::Yes | Action::ToggleChoice | Action::Choose | Action::ChooseLeft => {
                self.dialog().is_none_or(ConfirmDialog::offers_yes)
            }
            _ => true,
        }
    }

    /// Whether the key bar shows an action now: what [`App::enabled`] says, but never
    /// depending on the selected row (`x` is shown on every row, and says there when the
    /// row has no holder), so the bar does not change as the selection moves.
    pub fn in_bar(&self, action: Action) -> bool {
        match action {
            Action::Signal => !self.opts.readonly,
            Action::Recover => false,
            a => self.enabled(a),
        }
    }

    /// The key bar's entry of an action, when it says more than the key map's: its key,
    /// label and rank (`D` on the marked rows, which is then what matters most after
    /// quitting and the help; `n/N` together).
    pub fn bar_entry(&self, action: Action) -> Option<(String, String, u8)> {
        let key = |a| keymap::key(self.context(), a);
        match action {
            Action::ReclaimAllStale if !self.marks.is_empty() => {
                let n = self.marks.len();
                Some((key(action), format!("reclaim {n} marked"), 2))
            }
            Action::FindNext => Some((
                format!("{}/{}", key(Action::FindNext), key(Action::FindPrev)),
                "next match".into(),
                4,
            )),
            // No is Close when there is nothing to say yes to.
            Action::No if self.dialog().is_some_and(|d| !d.offers_yes()) => {
                let b = keymap::binding(self.context(), action)?;
                Some((b.bar_label(), "close".into(), 1))
            }
            _ => None,
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
        if self.prompt().is_some() {
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

    /// The prompt being typed, if any: its sign (`/`, `find: `) and text.
    pub fn prompt(&self) -> Option<(&'static str, &str)> {
        match &self.mode {
            Mode::Filter => Some(("/", self.filter.as_str())),
            Mode::Find(p) => Some(("find: ", p.text.as_str())),
            _ => None,
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
        self.found_now = 0;
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
        self.found_now = 0;
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
            Msg::Paste(text) => {
                self.refresh();
                self.paste(&text);
                self.refresh();
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
                let mut gone = Vec::new();
                for (path, r) in results {
                    match r {
                        Rejudge::Judged(f) => {
                            if self.by_path.contains_key(&path) {
                                self.upsert(*f, None);
                            }
                        }
                        Rejudge::Gone => gone.push(path),
                        Rejudge::Failed(_) => {}
                    }
                }
                self.remove_all(&gone);
                None
            }
            Msg::Files(files) => {
                for (path, meta) in files {
                    if let Some(&i) = self.by_path.get(&path) {
                        self.rows[i].file = Some(meta);
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
            Msg::Waiting { judged, waiting } => {
                for p in &judged {
                    self.waiting.remove(p);
                }
                self.waiting.extend(waiting);
                None
            }
            Msg::Checked(answers) => {
                if let Mode::Popup(p) = &mut self.mode
                    && let Some(d) = p.dialog_mut()
                {
                    d.checked(answers);
                }
                self.clamp_scrolls();
                None
            }
            Msg::UndoPlanned(plan) => {
                match plan {
                    Ok(plan) if matches!(self.mode, Mode::Table) => {
                        self.status = None;
                        self.open(Box::new(Dialog::<restore::Restore>::new(
                            ConfirmDialog::new(ConfirmAction::Restore(Undo {
                                plan,
                                picked: false,
                            })),
                        )));
                    }
                    Ok(_) => self.status = None,
                    Err(why) => self.set_status(Level::Warn, text::clean(&why)),
                }
                None
            }
            Msg::JournalRead(read) => {
                match read {
                    Ok(entries) if matches!(self.mode, Mode::Table) => {
                        self.status = None;
                        let view = journal::Journal::new(entries, locksmith::reclaim::run_id());
                        self.open(Box::new(view));
                        self.clamp_scrolls();
                    }
                    Ok(_) => self.status = None,
                    Err(why) => self.set_status(
                        Level::Warn,
                        format!("cannot read the journal: {}", text::clean(&why)),
                    ),
                }
                None
            }
            Msg::Restored(r) => {
                self.reclaiming = false;
                for f in r.findings {
                    self.upsert(f, Some(self.progress.generation));
                }
                let level = if r.restored {
                    Level::Info
                } else {
                    Level::Error
                };
                self.set_status(level, text::clean(&r.message));
                None
            }
            Msg::StopPlanned(plan) => {
                self.stopping = false;
                match plan {
                    Ok(mut plan) => {
                        let path = plan.finding.path.clone();
                        // A holder seen stuck (stopped, or not reaping its children): the
                        // dialog names it and says why.
                        plan.stuck = self.waiting.get(&path).and_then(|w| w.holder.clone());
                        if self.by_path.contains_key(&path) {
                            self.open(Box::new(Dialog::<signal::Signal>::new(ConfirmDialog::new(
                                ConfirmAction::Signal(plan),
                            ))));
                        }
                    }
                    Err(why) => self.set_status(Level::Warn, format!("x: {}", text::clean(&why))),
                }
                None
            }
            Msg::Stopped(r) => Some(self.on_stopped(r)),
            Msg::Ran(r) => {
                if let Some(why) = r.refused {
                    self.open(Box::new(popup::refused::Refused {
                        swap: r.path,
                        why,
                        scroll: 0,
                    }));
                    return None;
                }
                let level = if r.ok { Level::Info } else { Level::Warn };
                self.set_status_about(level, text::clean(&r.message), &r.path);
                self.by_path
                    .get(&r.path)
                    .map(|&i| Effect::Rejudge(vec![self.rows[i].finding.clone()]))
            }
            Msg::Tick { now_ms } => {
                self.now_ms = now_ms;
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
                self.upsert(*f, Some(self.progress.generation));
                self.progress.locks = self.progress.locks.max(self.found_now as u64);
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
        let quiet = std::mem::take(&mut self.progress.quiet);
        if quiet && s.failed.is_none() && !s.cancelled {
            self.progress.entries = s.entries;
            self.progress.locks = s.locks;
            self.progress.errors = self.progress.quiet_errors;
        } else if !quiet {
            self.progress.entries = self.progress.entries.max(s.entries);
            self.progress.locks = self.progress.locks.max(s.locks);
        }
        if !quiet || s.failed.is_none() {
            self.progress.elapsed_ms = Some(s.elapsed_ms);
        }
        if s.cancelled {
            return;
        }
        // A scan that ran to its end, or could not read any root (they were removed, say):
        // the rows it did not find are gone.
        let gone: Vec<PathBuf> = self
            .rows
            .iter()
            .filter(|r| r.found_in != self.progress.generation)
            .map(|r| r.finding.path.clone())
            .collect();
        self.remove_all(&gone);
        if let Some(why) = s.failed
            && !quiet
        {
            self.set_status(Level::Error, format!("scan failed: {}", text::clean(&why)));
        }
    }

    fn on_reclaimed(&mut self, results: Vec<ReclaimResult>) {
        self.reclaiming = false;
        let total = results.len();
        let mut removed = 0;
        let mut refused: Vec<String> = Vec::new();
        let mut gone = Vec::new();
        for r in &results {
            if r.removed || r.gone {
                removed += usize::from(r.removed);
                gone.push(r.path.clone());
            } else if let Some(j) = &r.judgement
                && let Some(&i) = self.by_path.get(&r.path)
            {
                let mut f = self.rows[i].finding.clone();
                f.judgement = j.clone();
                self.upsert(f, None);
            }
            if !r.removed {
                refused.push(format!(
                    "{}: {}",
                    text::path(&r.path),
                    text::clean(&r.message)
                ));
            }
        }
        self.remove_all(&gone);
        let undo = format!(" ({} undoes it)", keymap::key(Context::Table, Action::Undo));
        let (level, msg) = match (total, results.first()) {
            (1, Some(r)) if r.removed => (Level::Info, text::clean(&r.message) + &undo),
            (1, Some(r)) if r.gone => (Level::Warn, text::clean(&r.message)),
            (1, Some(_)) => (Level::Error, format!("not removed: {}", refused[0])),
            _ if refused.is_empty() => (
                Level::Info,
                format!("reclaimed {removed} stale lock{}{undo}", plural(removed)),
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

    /// Signals sent: says what came of them, offers SIGKILL for what SIGTERM did not end, and
    /// judges the lock again (it turns stale once its holders are gone).
    fn on_stopped(&mut self, r: StopResult) -> Effect {
        self.stopping = false;
        let StopResult { plan, sent } = r;
        let path = plan.finding.path.clone();
        let sig = plan.signal.name();
        let names = |ts: &[stop::Target]| -> String {
            ts.iter()
                .map(|t| text::clean(&t.describe()))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut parts = Vec::new();
        if !sent.resumed.is_empty() {
            parts.push(format!(
                "{sig}: {} resumed; the lock goes once {} done",
                names(&sent.resumed),
                if sent.resumed.len() == 1 {
                    "it is"
                } else {
                    "they are"
                }
            ));
        }
        if !sent.exited.is_empty() {
            parts.push(format!("{sig}: {} exited", names(&sent.exited)));
        }
        if !sent.survivors.is_empty() {
            parts.push(format!(
                "{} still running after {} s",
                names(&sent.survivors),
                stop::GRACE.as_secs()
            ));
        }
        parts.extend(sent.errors.iter().map(|e| text::clean(e)));
        let level = if sent.errors.is_empty() && sent.survivors.is_empty() {
            Level::Info
        } else {
            Level::Warn
        };
        self.set_status_about(level, parts.join("; "), &path);
        if plan.signal.asks_to_end()
            && !sent.survivors.is_empty()
            && self.by_path.contains_key(&path)
        {
            let again = stop::Plan {
                signal: stop::Sig::Kill,
                targets: sent.survivors.clone(),
                refused: Vec::new(),
                after: Some(plan.signal),
                finding: plan.finding.clone(),
                stuck: plan.stuck.clone(),
            };
            self.open(Box::new(Dialog::<signal::Signal>::new(ConfirmDialog::new(
                ConfirmAction::Signal(again),
            ))));
        }
        let finding = self
            .by_path
            .get(&path)
            .map_or_else(|| *plan.finding.clone(), |&i| self.rows[i].finding.clone());
        Effect::Rejudge(vec![finding])
    }

    /// Lists `f`, in place of its row if it has one; `found_in`: the scan that found it (else
    /// the row keeps the scan that found it last).
    fn upsert(&mut self, f: Finding, found_in: Option<u64>) {
        let mut row = Row::new(f);
        let generation = self.progress.generation;
        let counted = |was: u64| usize::from(found_in == Some(generation) && was != generation);
        match self.by_path.get(&row.finding.path) {
            Some(&i) => {
                row.file = self.rows[i].file.take();
                let was = self.rows[i].found_in;
                self.found_now += counted(was);
                row.found_in = found_in.unwrap_or(was);
                // A lock judged again as it was shown (most are, each round) keeps its place.
                let same = row.shows_as(&self.rows[i]);
                self.rows[i] = row;
                if !same {
                    self.change.row(i, true);
                }
            }
            None => {
                self.found_now += counted(0);
                row.found_in = found_in.unwrap_or(0);
                let i = self.rows.len();
                self.by_path.insert(row.finding.path.clone(), i);
                self.rows.push(row);
                self.unordered.push(i);
                self.change.row(i, false);
            }
        }
    }

    /// Drops the rows of `paths` (those listed), in one pass over the rows whatever their
    /// number.
    fn remove_all(&mut self, paths: &[PathBuf]) {
        let mut gone = vec![false; self.rows.len()];
        let mut any = false;
        for p in paths {
            if let Some(i) = self.by_path.remove(p.as_path()) {
                self.marks.remove(p.as_path());
                gone[i] = true;
                any = true;
                if self.rows[i].found_in == self.progress.generation {
                    self.found_now -= 1;
                }
            }
        }
        if !any {
            return;
        }
        // Old index to new: the rows keep their order.
        let mut moved = vec![usize::MAX; self.rows.len()];
        let mut next = 0;
        for (i, g) in gone.iter().enumerate() {
            if !g {
                moved[i] = next;
                next += 1;
            }
        }
        let mut i = 0;
        self.rows.retain(|_| {
            i += 1;
            !gone[i - 1]
        });
        for v in self.by_path.values_mut() {
            *v = moved[*v];
        }
        let remap = |v: &mut Vec<usize>| {
            v.retain(|&i| !gone[i]);
            v.iter_mut().for_each(|i| *i = moved[*i]);
        };
        remap(&mut self.by_path_order);
        remap(&mut self.unordered);
        self.view.clear();
        self.change = Change::All;
    }

    /// A warning in the status bar (the configuration file that was not read).
    pub fn warn(&mut self, text: impl Into<String>) {
        self.set_status(Level::Warn, text);
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
            about: None,
        });
    }

    /// A status message about one row: it goes when the selection moves to another.
    fn set_status_about(&mut self, level: Level, text: impl Into<String>, path: &Path) {
        self.set_status(level, text);
        if let Some(s) = &mut self.status {
            s.about = Some(path.to_path_buf());
        }
    }

    /// A status message that stays until replaced (what it reports is still going on).
    fn set_status_until_done(&mut self, text: impl Into<String>) {
        self.status = Some(Status {
            text: text.into(),
            level: Level::Info,
            expires_ms: None,
            about: None,
        });
    }

    /// Opens a pop-up; the status message goes (it was about what came before).
    fn open(&mut self, p: Box<dyn Popup>) {
        self.status = None;
        self.mode = Mode::Popup(p);
    }

    /// Rebuilds the filtered, sorted view if rows or settings changed, and moves the cursor to
    /// the selected path (or keeps its position when that lock is gone; after a change of the
    /// filter that hides it, the first match).
    pub fn refresh(&mut self) {
        if !self.unordered.is_empty() {
            let mut new = std::mem::take(&mut self.unordered);
            let rows = &self.rows;
            let by_path = |a: usize, b: usize| rows[a].finding.path.cmp(&rows[b].finding.path);
            new.sort_unstable_by(|&a, &b| by_path(a, b));
            self.by_path_order = merge_sorted(&self.by_path_order, &new, &by_path);
        }
        match std::mem::take(&mut self.change) {
            Change::None => {
                self.keep_visible();
                return;
            }
            Change::All => {
                self.view = self.rebuilt_view();
                self.content = table::content_widths(self.visible());
            }
            Change::Rows { mut rows, changed } => {
                rows.sort_unstable();
                rows.dedup();
                if changed {
                    // Rows shown before and changed since leave their places first.
                    let mut out = vec![false; self.rows.len()];
                    for &i in &rows {
                        out[i] = true;
                    }
                    self.view.retain(|&i| !out[i]);
                }
                let shown = shown(&self.rows, &self.filter, self.verdict_filter);
                rows.retain(|&i| shown(i));
                let order = order(&self.rows, self.now_ms, self.sort, self.descending);
                rows.sort_unstable_by(|&a, &b| order(a, b));
                self.view = merge_sorted(&self.view, &rows, &order);
                if changed {
                    self.content = table::content_widths(self.visible());
                } else {
                    let widened = rows.iter().map(|&i| &self.rows[i]);
                    table::widen(&mut self.content, widened);
                }
            }
        }
        let found = if !self.moved {
            Some(0)
        } else {
            // The view is in `order`: the selected row is found by its sort key.
            let shown = shown(&self.rows, &self.filter, self.verdict_filter);
            let order = order(&self.rows, self.now_ms, self.sort, self.descending);
            self.selected
                .as_ref()
                .and_then(|sel| self.by_path.get(sel))
                .filter(|&&i| shown(i))
                .and_then(|&i| self.view.binary_search_by(|&v| order(v, i)).ok())
        };
        let refiltered = std::mem::take(&mut self.refiltered);
        self.cursor = match found {
            Some(pos) => pos,
            None if refiltered => 0,
            None => self.cursor.min(self.view.len().saturating_sub(1)),
        };
        self.sync_selected();
        self.keep_visible();
    }

    /// The view built anew: the shown rows in path order, sorted by the sort column's key alone
    /// (a stable sort, so ties stay in path order, as [`order`] has them) with the keys gathered
    /// first, so that a million rows sort in a fraction of a second.
    fn rebuilt_view(&self) -> Vec<usize> {
        let shown = shown(&self.rows, &self.filter, self.verdict_filter);
        let mut keyed: Vec<(i128, usize)> = Vec::new();
        let rows = &self.rows;
        let listed = self.by_path_order.iter().copied().filter(|&i| shown(i));
        // Text columns sort by the rank of their text among the distinct texts shown.
        let mut ranks: HashMap<&str, i128> = HashMap::new();
        for i in listed.clone() {
            if let Some(t) = text_key(self.sort, &rows[i]) {
                ranks.entry(t).or_default();
            }
        }
        let mut distinct: Vec<&str> = ranks.keys().copied().collect();
        distinct.sort_unstable();
        for (n, t) in distinct.into_iter().enumerate() {
            ranks.insert(t, n as i128);
        }
        for i in listed {
            let r = &rows[i];
            let key = match self.sort {
                Column::Verdict => r.verdict() as i128,
                Column::Pid => r.cells.owner_pid.map_or(i128::MIN, i128::from),
                Column::Age => i128::from(age_ms(r, self.now_ms)),
                Column::Path => 0,
                _ => text_key(self.sort, r).map_or(0, |t| ranks[t]),
            };
            keyed.push((key, i));
        }
        if self.descending {
            keyed.sort_by_key(|&(k, _)| std::cmp::Reverse(k));
        } else {
            keyed.sort_by_key(|&(k, _)| k);
        }
        let mut view: Vec<usize> = keyed.into_iter().map(|(_, i)| i).collect();
        if self.descending && self.sort == Column::Path {
            view.reverse();
        }
        view
    }

    fn sync_selected(&mut self) {
        let now = self
            .view
            .get(self.cursor)
            .map(|&i| self.rows[i].finding.path.clone());
        if now != self.selected {
            self.detail_scroll = 0;
            // A message about the row left behind goes with it; one about a row that is gone
            // (a lock whose holder was stopped, say) stays until it expires.
            if self.status.as_ref().is_some_and(|s| {
                s.about
                    .as_ref()
                    .is_some_and(|p| self.by_path.contains_key(p))
                    && s.about != now
            }) {
                self.status = None;
            }
        }
        self.selected = now;
    }

    fn move_to(&mut self, pos: usize) {
        self.moved = true;
        self.cursor = pos.min(self.view.len().saturating_sub(1));
        self.sync_selected();
        self.keep_visible();
    }

    /// Selects the visible row of `path`, if it is shown.
    fn select_path(&mut self, path: &Path) -> bool {
        match self
            .view
            .iter()
            .position(|&i| self.rows[i].finding.path == path)
        {
            Some(pos) => {
                self.move_to(pos);
                true
            }
            None => false,
        }
    }

    /// The filter (text or verdict) changed.
    fn filter_changed(&mut self) {
        self.change = Change::All;
        self.refiltered = true;
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

    /// The pop-up's extent on the screen: lines in view and how far it scrolls.
    fn popup_extent(&self) -> Option<(u16, u16)> {
        let p = self.popup()?;
        Some(popup::extent(p, &self.popup_env(), self.screen().popups()))
    }

    /// Clamps every scroll position to what the current size shows.
    fn clamp_scrolls(&mut self) {
        self.keep_visible();
        let max = self.detail_max_scroll();
        self.detail_scroll = self.detail_scroll.min(max);
        if let Some((shown, max)) = self.popup_extent()
            && let Mode::Popup(p) = &mut self.mode
        {
            let mut s = p.scroll().min(max);
            // A pop-up's cursor stays in view.
            if let Some(line) = p.focus() {
                if line < s {
                    s = line;
                } else if line >= s.saturating_add(shown) {
                    s = (line + 1).saturating_sub(shown).min(max);
                }
            }
            p.set_scroll(s);
        }
    }

    fn detail_max_scroll(&self) -> u16 {
        match (self.screen().detail_inner(), self.selected_row()) {
            (Some(inner), Some(row)) => detail::max_scroll(
                row,
                self.waiting.get(&row.finding.path),
                self.opts.theme,
                self.now_ms,
                inner,
            ),
            _ => 0,
        }
    }

    /// Scrolls the open pop-up by `delta` lines (else the detail pane), no further than the
    /// end of its text.
    fn scroll_by(&mut self, delta: i32) {
        let step = |v: u16, max: u16| -> u16 {
            let n = i32::from(v).saturating_add(delta).clamp(0, i32::from(max));
            u16::try_from(n).unwrap_or(max)
        };
        match self.popup_extent() {
            Some((_, max)) => {
                if let Mode::Popup(p) = &mut self.mode {
                    let s = step(p.scroll(), max);
                    p.set_scroll(s);
                }
            }
            None => self.detail_scroll = step(self.detail_scroll, self.detail_max_scroll()),
        }
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
            if wheel != 0 && matches!(self.mode, Mode::Popup(_)) {
                // A pop-up with a cursor moves it; any other scrolls.
                let step = if wheel > 0 { Action::Down } else { Action::Up };
                let moved = match &mut self.mode {
                    Mode::Popup(p) => (0..WHEEL_STEP).all(|_| p.navigate(step, 1)),
                    _ => false,
                };
                if moved {
                    self.clamp_scrolls();
                } else {
                    self.scroll_by(wheel);
                }
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
            let plan = table::plan(screen.table.width, &self.content);
            if let Some(c) = table::column_at(&plan, x - screen.table.x) {
                self.sort_by(c);
            }
            return None;
        }
        let row = self.offset + usize::from(y - body.y);
        if row < self.view.len() {
            self.move_to(row);
        }
        None
    }

    /// Sorts by `c`: ascending when it is a new sort column, inverted when it is the same.
    fn sort_by(&mut self, c: Column) {
        if c == self.sort {
            self.descending = !self.descending;
        } else {
            self.sort = c;
            self.descending = false;
        }
        self.change = Change::All;
    }

    /// What a key's action does, by context.
    fn act(&mut self, action: Action, key: &KeyEvent) -> Option<Effect> {
        if action == Action::Quit {
            return Some(Effect::Quit);
        }
        match &mut self.mode {
            Mode::Popup(p) if action == Action::TextInput => {
                if let KeyCode::Char(c) = key.code {
                    p.type_text(c.encode_utf8(&mut [0; 4]));
                }
                None
            }
            Mode::Popup(_) => self.act_popup(action),
            Mode::Filter | Mode::Find(_) => {
                self.act_prompt(action, key);
                None
            }
            Mode::Table => {
                if self.details_open() && self.act_detail(action) {
                    return None;
                }
                self.act_table(action)
            }
        }
    }

    /// The detail pane's own keys; `false` for the table's, which work there too.
    fn act_detail(&mut self, action: Action) -> bool {
        match action {
            Action::CloseDetails => {
                self.show_details = false;
                self.detail_scroll = 0;
            }
            Action::DetailDown => self.scroll_by(1),
            Action::DetailUp => self.scroll_by(-1),
            _ => return false,
        }
        true
    }

    fn act_table(&mut self, action: Action) -> Option<Effect> {
        let page = self.page();
        let last = self.view.len().saturating_sub(1);
        match action {
            Action::Back => {
                if !self.filter.is_empty() {
                    self.filter.clear();
                    self.filter_changed();
                } else if !self.marks.is_empty() {
                    let n = self.marks.len();
                    self.marks.clear();
                    self.set_status(Level::Info, format!("{n} mark{} cleared", plural(n)));
                } else {
                    // Nothing to back out of: Esc never quits.
                    self.set_status(
                        Level::Info,
                        format!(
                            "nothing to close: {} quits",
                            keymap::key(Context::Table, Action::Quit)
                        ),
                    );
                }
            }
            Action::Down => self.move_to(self.cursor.saturating_add(1)),
            Action::Up => self.move_to(self.cursor.saturating_sub(1)),
            Action::Top => self.move_to(0),
            Action::Bottom => self.move_to(last),
            Action::PageDown => self.move_to(self.cursor.saturating_add(page)),
            Action::PageUp => self.move_to(self.cursor.saturating_sub(page)),
            Action::CopyPath => return self.copy_path(),
            Action::StartFilter => self.mode = Mode::Filter,
            Action::StartFind => {
                self.mode = Mode::Find(Prompt {
                    text: String::new(),
                    origin: self.selected.clone(),
                })
            }
            Action::FindNext => self.find_again(true),
            Action::FindPrev => self.find_again(false),
            Action::CycleSort => self.sort_by(next_sort(self.sort)),
            Action::InvertSort => {
                self.descending = !self.descending;
                self.change = Change::All;
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
                self.filter_changed();
            }
            Action::Rescan => {
                self.status = None;
                return Some(self.rescan());
            }
            Action::ToggleDetails => {
                self.show_details = !self.show_details;
                self.detail_scroll = 0;
            }
            Action::ToggleMark => {
                if let Some(path) = self.selected.clone() {
                    if !self.marks.remove(&path) {
                        self.marks.insert(path);
                    }
                    self.move_to(self.cursor.saturating_add(1));
                }
            }
            Action::Help => self.open(Box::new(help::Help::default())),
            Action::Reclaim => return self.ask_reclaim_selected(),
            Action::ReclaimAllStale => return self.ask_reclaim_all(),
            Action::Undo => {
                if self.refuse_if_busy() {
                    return None;
                }
                self.set_status_until_done("looking for the last reclaim made in the UI…");
                return Some(Effect::PlanUndo);
            }
            Action::Journal => {
                self.set_status_until_done("reading the journal…");
                return Some(Effect::ReadJournal);
            }
            Action::Signal => return self.ask_stop(),
            Action::Recover => return self.recover(),
            Action::Why => self.open(Box::new(why::Why::default())),
            Action::OpenShell => {
                let row = self.selected_row()?;
                let dir = row.finding.path.parent()?.to_path_buf();
                return Some(Effect::Run(
                    Run::Shell { dir },
                    Box::new(row.finding.clone()),
                ));
            }
            _ => {}
        }
        None
    }

    /// A prompt's keys: the filter narrows the list as it is typed; find selects the next
    /// match as it is typed.
    fn act_prompt(&mut self, action: Action, key: &KeyEvent) {
        let finding = matches!(self.mode, Mode::Find(_));
        let text = match &mut self.mode {
            Mode::Find(p) => &mut p.text,
            _ => &mut self.filter,
        };
        match action {
            Action::TextInput => {
                if let KeyCode::Char(c) = key.code {
                    text.push(c);
                }
            }
            Action::TextBackspace => {
                text.pop();
            }
            Action::TextClearLine => text.clear(),
            Action::TextDeleteWord => {
                // Like a shell's Ctrl-W: the spaces before the cursor, then the word.
                let kept = text
                    .trim_end()
                    .trim_end_matches(|c: char| !c.is_whitespace());
                let n = kept.len();
                text.truncate(n);
            }
            Action::TextDone => {
                if let Mode::Find(p) = &self.mode {
                    self.found = (!p.text.is_empty()).then(|| p.text.clone());
                    if let Some(f) = self.found.clone() {
                        self.say_found(&f);
                    }
                } else if !self.filter.is_empty() {
                    // n and N find it again once the filter is cleared (as in less and vim).
                    self.found = Some(self.filter.clone());
                }
                self.mode = Mode::Table;
                return;
            }
            Action::TextCancel => {
                if let Mode::Find(p) = std::mem::replace(&mut self.mode, Mode::Table) {
                    if let Some(origin) = p.origin {
                        self.select_path(&origin);
                    }
                } else {
                    self.filter.clear();
                    self.filter_changed();
                }
                return;
            }
            _ => return,
        }
        if finding {
            if let Mode::Find(p) = &self.mode {
                let (needle, origin) = (p.text.clone(), p.origin.clone());
                // From where the selection was, so each letter typed refines the same search.
                let start = origin
                    .and_then(|o| {
                        self.view
                            .iter()
                            .position(|&i| self.rows[i].finding.path == o)
                    })
                    .unwrap_or(0);
                if let Some(pos) = self.next_match(&needle, start, true, true) {
                    self.move_to(pos);
                }
            }
        } else {
            self.filter_changed();
        }
    }

    /// The position of the next visible row matching `needle` from `start` (itself included
    /// when `inclusive`), forwards or backwards, wrapping around.
    fn next_match(
        &self,
        needle: &str,
        start: usize,
        forward: bool,
        inclusive: bool,
    ) -> Option<usize> {
        let n = self.view.len();
        if n == 0 || needle.is_empty() {
            return None;
        }
        let needle = needle.to_lowercase();
        let first = if inclusive { 0 } else { 1 };
        (first..n + first)
            .map(|k| {
                if forward {
                    (start + k) % n
                } else {
                    (start + n * 2 - k) % n
                }
            })
            .find(|&pos| self.rows[self.view[pos]].cells.search.contains(&needle))
    }

    /// `n`/`N`: the next or previous match of what was found last.
    fn find_again(&mut self, forward: bool) {
        let Some(needle) = self.found.clone() else {
            return;
        };
        match self.next_match(&needle, self.cursor, forward, false) {
            Some(pos) => {
                let wrapped = if forward {
                    pos <= self.cursor
                } else {
                    pos >= self.cursor
                };
                self.move_to(pos);
                self.say_found(&needle);
                if wrapped && let Some(s) = &mut self.status {
                    s.text.push_str(if forward {
                        " (from the top)"
                    } else {
                        " (from the bottom)"
                    });
                }
            }
            None => self.set_status(
                Level::Warn,
                format!("no lock shown matches {:?}", text::clean(&needle)),
            ),
        }
    }

    /// The status after a find: which match of how many is selected.
    fn say_found(&mut self, needle: &str) {
        let lower = needle.to_lowercase();
        let matches: Vec<usize> = (0..self.view.len())
            .filter(|&p| self.rows[self.view[p]].cells.search.contains(&lower))
            .collect();
        let msg = match matches.iter().position(|&p| p == self.cursor) {
            Some(i) => format!(
                "{:?}: match {} of {} ({}/{} for the next and previous)",
                text::clean(needle),
                i + 1,
                matches.len(),
                keymap::key(Context::Table, Action::FindNext),
                keymap::key(Context::Table, Action::FindPrev)
            ),
            None => format!("no lock shown matches {:?}", text::clean(needle)),
        };
        self.set_status(Level::Info, msg);
    }

    /// A pop-up's keys: scrolling for every pop-up, the rest for the pop-up itself.
    fn act_popup(&mut self, action: Action) -> Option<Effect> {
        let shown = self.popup_extent().map_or(1, |(shown, _)| shown.max(1));
        if let Mode::Popup(p) = &mut self.mode
            && p.navigate(action, shown)
        {
            self.clamp_scrolls();
            return None;
        }
        let page = i32::from(shown);
        let delta = match action {
            Action::Down => Some(1),
            Action::Up => Some(-1),
            Action::PageDown => Some(page),
            Action::PageUp => Some(-page),
            Action::Top => Some(i32::MIN / 2),
            Action::Bottom => Some(i32::MAX / 2),
            _ => None,
        };
        if let Some(d) = delta {
            self.scroll_by(d);
            return None;
        }
        let Mode::Popup(p) = &mut self.mode else {
            return None;
        };
        match p.act(action) {
            Outcome::Stay => None,
            Outcome::Closed(message) => {
                self.mode = Mode::Table;
                if let Some(m) = message {
                    self.set_status(Level::Info, m);
                }
                None
            }
            Outcome::Refused(why) => {
                self.mode = Mode::Table;
                self.set_status(Level::Warn, why);
                None
            }
            Outcome::Confirmed(c) => {
                self.mode = Mode::Table;
                Some(self.confirmed(c))
            }
            Outcome::Find(message) => {
                self.mode = Mode::Table;
                self.find_message(&message);
                None
            }
            Outcome::Undo(plan) => {
                if !self.refuse_if_busy() {
                    self.open(Box::new(Dialog::<restore::Restore>::new(
                        ConfirmDialog::new(ConfirmAction::Restore(Undo { plan, picked: true })),
                    )));
                } else {
                    self.mode = Mode::Table;
                }
                None
            }
        }
    }

    /// Pasted text: into the prompt or pop-up that takes text (a filter or find prompt takes
    /// its first line); into the table, it opens the why prompt with it.
    fn paste(&mut self, text: &str) {
        match &mut self.mode {
            Mode::Popup(p) => p.type_text(text),
            Mode::Filter => {
                self.filter.push_str(text.lines().next().unwrap_or(""));
                self.filter_changed();
            }
            Mode::Find(p) => p.text.push_str(text.lines().next().unwrap_or("")),
            Mode::Table => self.open(Box::new(why::Why::new(text))),
        }
    }

    /// Selects the lock an error message is about: the row at a place where the program that
    /// printed it keeps its lock (the one the PID it names holds, if several), else a row
    /// whose path the message names. A hidden row is shown (the filters are cleared).
    fn find_message(&mut self, message: &str) {
        let recognised = locksmith::why::recognise(message);
        let mut found = None;
        for r in &recognised {
            let places = r.places(&self.why_context);
            let hits: Vec<&Row> = places
                .iter()
                .flat_map(|p| {
                    self.rows
                        .iter()
                        .filter(move |row| p.matches(&row.finding.path))
                })
                .collect();
            let by_pid = r.pid().and_then(|pid| {
                hits.iter().find(|row| {
                    let j = &row.finding.judgement;
                    j.owner.as_ref().and_then(|o| o.pid) == Some(pid)
                        || j.holders.iter().any(|h| i64::from(h.pid) == pid)
                })
            });
            if let Some(row) = by_pid.or(hits.first()) {
                found = Some((Some(r.program), row.finding.path.clone()));
                break;
            }
        }
        if found.is_none() {
            found = self
                .rows
                .iter()
                .find(|row| {
                    row.finding
                        .path
                        .to_str()
                        .is_some_and(|p| message.contains(p))
                })
                .map(|row| (None, row.finding.path.clone()));
        }
        let Some((program, path)) = found else {
            let text = match recognised.first() {
                Some(r) => format!(
                    "this is {}'s message, but its lock is not in the list: it may be gone, or \
                     outside the places scanned (`locksmith why` looks where {} keeps it)",
                    r.program, r.program
                ),
                None => "locksmith does not know this message, and it names no lock in the list"
                    .to_string(),
            };
            self.set_status(Level::Warn, text);
            return;
        };
        if !self.select_path(&path) {
            self.filter.clear();
            self.verdict_filter = None;
            self.filter_changed();
            self.refresh();
            self.select_path(&path);
        }
        let verdict = self
            .by_path
            .get(&path)
            .map(|&i| self.rows[i].finding.judgement.verdict().as_str())
            .unwrap_or("?");
        let whose = program.map_or_else(
            || "the lock the message names".to_string(),
            |p| format!("{p}'s lock"),
        );
        self.set_status_about(
            Level::Info,
            format!("{whose}: {} ({verdict})", text::path(&path)),
            &path,
        );
    }

    /// Carries out what the user said yes to.
    fn confirmed(&mut self, c: ConfirmedAction) -> Effect {
        if let Some(plan) = c.signal() {
            self.stopping = true;
            let n = plan.targets.len();
            self.set_status_until_done(format!(
                "sending {} to {n} process{}…",
                plan.signal.name(),
                if n == 1 { "" } else { "es" }
            ));
            return Effect::Stop(c);
        }
        if let Some(plan) = c.restore_plan() {
            self.reclaiming = true;
            let n = plan.entries.len();
            self.set_status_until_done(format!("putting back {n} lock{}…", plural(n)));
            return Effect::Restore(c);
        }
        self.reclaiming = true;
        let n = c.findings().len();
        self.set_status_until_done(format!("reclaiming {n} lock{}…", plural(n)));
        Effect::Reclaim(c)
    }

    fn copy_path(&mut self) -> Option<Effect> {
        let Some(row) = self.selected_row() else {
            self.set_status(Level::Warn, "no lock selected");
            return None;
        };
        let path = row.finding.path.clone();
        // Never the raw bytes: a name with a newline or ESC would run when pasted.
        let (text, form) = match super::clipboard::text_for(&path) {
            Ok(t) => t,
            Err(why) => {
                self.set_status_about(Level::Warn, why, &path);
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
        self.set_status_about(
            Level::Info,
            format!("copied {text} to the clipboard (OSC 52){how}"),
            &path,
        );
        Some(Effect::Copy(text.into_bytes()))
    }

    fn refuse_if_busy(&mut self) -> bool {
        if self.opts.readonly {
            self.set_status(
                Level::Warn,
                "read-only (--readonly): reclaim, undo and stopping holders are disabled",
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
        self.open(Box::new(Dialog::<reclaim::Reclaim>::new(
            ConfirmDialog::new(action),
        )));
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
                let path = f.path.clone();
                self.set_status_about(Level::Warn, format!("not reclaimable: {r}"), &path);
                None
            }
            None => self.ask(ConfirmAction::Reclaim {
                findings: vec![f],
                kept: Vec::new(),
                skipped: Vec::new(),
            }),
        }
    }

    /// The waiters and holder state of the selected lock, when known.
    pub fn selected_waiting(&self) -> Option<&Waiting> {
        self.waiting.get(&self.selected_row()?.finding.path)
    }

    /// `D`: the marked locks when some are marked, else every stale lock shown. Stale vim
    /// swaps holding unsaved changes are kept (one at a time with `d`), and marked locks that
    /// are not stale are left alone; the dialog lists both.
    fn ask_reclaim_all(&mut self) -> Option<Effect> {
        if self.refuse_if_busy() {
            return None;
        }
        let marked = !self.marks.is_empty();
        let chosen: Vec<Finding> = if marked {
            let mut rows: Vec<&Row> = self
                .rows
                .iter()
                .filter(|r| self.marks.contains(&r.finding.path))
                .collect();
            rows.sort_by(|a, b| a.finding.path.cmp(&b.finding.path));
            rows.into_iter().map(|r| r.finding.clone()).collect()
        } else {
            self.visible()
                .filter(|r| r.verdict() == Verdict::Stale)
                .map(|r| r.finding.clone())
                .collect()
        };
        let (stale, skipped): (Vec<Finding>, Vec<Finding>) = chosen
            .into_iter()
            .partition(|f| f.judgement.verdict() == Verdict::Stale);
        let (kept, findings): (Vec<Finding>, Vec<Finding>) = stale
            .into_iter()
            .partition(|f| f.judgement.unsaved_changes == Some(true));
        let what = if marked {
            "marked lock"
        } else {
            "stale lock shown"
        };
        if findings.is_empty() && kept.is_empty() {
            self.set_status(
                Level::Warn,
                format!("no {what} is stale: nothing to reclaim"),
            );
            return None;
        }
        if findings.is_empty() {
            self.set_status(
                Level::Warn,
                format!(
                    "every stale {what} is a vim swap with unsaved changes: recover it with {}, or reclaim it alone with {}",
                    keymap::key(Context::Table, Action::Recover),
                    keymap::key(Context::Table, Action::Reclaim)
                ),
            );
            return None;
        }
        self.ask(ConfirmAction::Reclaim {
            findings,
            kept,
            skipped,
        })
    }

    /// `x`: whom to signal is found out off the UI thread, then asked.
    fn ask_stop(&mut self) -> Option<Effect> {
        if self.opts.readonly {
            self.refuse_if_busy();
            return None;
        }
        if self.stopping {
            self.set_status(Level::Warn, "processes are being signalled already");
            return None;
        }
        let Some(row) = self.selected_row() else {
            self.set_status(Level::Warn, "no lock selected");
            return None;
        };
        let path = row.finding.path.clone();
        if stop::candidates(&row.finding.judgement).is_empty() {
            self.set_status_about(
                Level::Warn,
                format!(
                    "{}: no process holds it now, nothing to stop",
                    row.cells.path
                ),
                &path,
            );
            return None;
        }
        let finding = Box::new(row.finding.clone());
        self.stopping = true;
        Some(Effect::PlanStop(finding))
    }

    /// `e`: recover a vim swap file's unsaved changes in the editor that wrote it.
    fn recover(&mut self) -> Option<Effect> {
        let row = self.selected_row()?;
        let path = row.finding.path.clone();
        match recovery(row) {
            Some(editor) => Some(Effect::Run(
                Run::Recover { swap: path, editor },
                Box::new(row.finding.clone()),
            )),
            None => {
                let why = if row.unsaved() && row.verdict() == Verdict::Live {
                    "its editor is running: save the changes there"
                } else {
                    "only a vim swap file with unsaved changes has something to recover"
                };
                self.set_status_about(Level::Warn, format!("nothing to recover: {why}"), &path);
                None
            }
        }
    }
}

/// What changed since the view was built: nothing, some rows (added, or shown differently
/// now), or anything (a row removed, the filter or the sort changed).
#[derive(Debug, Default)]
enum Change {
    #[default]
    None,
    Rows {
        rows: Vec<usize>,
        /// Some of `rows` were listed before (they may be in the view, at their old place).
        changed: bool,
    },
    All,
}

impl Change {
    /// The row at `i` was added (`listed: false`) or changed.
    fn row(&mut self, i: usize, listed: bool) {
        match self {
            Change::All => {}
            Change::None => {
                *self = Change::Rows {
                    rows: vec![i],
                    changed: listed,
                }
            }
            Change::Rows { rows, changed } => {
                rows.push(i);
                *changed |= listed;
            }
        }
    }
}

/// `view` and `new`, both in `order`, merged: each new row goes where a binary search puts it,
/// so a few rows join a long view with a few comparisons each.
fn merge_sorted(
    view: &[usize],
    new: &[usize],
    order: &impl Fn(usize, usize) -> std::cmp::Ordering,
) -> Vec<usize> {
    let mut out = Vec::with_capacity(view.len() + new.len());
    let mut from = 0;
    for &n in new {
        let at = from + view[from..].partition_point(|&v| order(v, n).is_lt());
        out.extend_from_slice(&view[from..at]);
        out.push(n);
        from = at;
    }
    out.extend_from_slice(&view[from..]);
    out
}

/// What a text column sorts by: its cell's text (`None` for the others).
fn text_key(sort: Column, r: &Row) -> Option<&str> {
    match sort {
        Column::Verdict | Column::Pid | Column::Age | Column::Path => None,
        c => r.cells.text(c),
    }
}

/// Whether the row at `i` of `rows` passes the filters.
fn shown<'a>(
    rows: &'a [Row],
    filter: &str,
    verdict: Option<Verdict>,
) -> impl Fn(usize) -> bool + use<'a> {
    let needle = filter.to_lowercase();
    move |i| {
        let r = &rows[i];
        verdict.is_none_or(|v| r.verdict() == v)
            && (needle.is_empty() || r.cells.search.contains(&needle))
    }
}

/// The order of the view: by the sort column, then by path (a total order: paths are unique).
fn order(
    rows: &[Row],
    now: i64,
    key: Column,
    descending: bool,
) -> impl Fn(usize, usize) -> std::cmp::Ordering + use<'_> {
    move |a, b| {
        let (ra, rb) = (&rows[a], &rows[b]);
        let primary = match key {
            Column::Verdict => ra.verdict().cmp(&rb.verdict()),
            Column::Pid => ra.cells.owner_pid.cmp(&rb.cells.owner_pid),
            Column::Age => age_ms(ra, now).cmp(&age_ms(rb, now)),
            Column::Path => std::cmp::Ordering::Equal,
            _ => text_key(key, ra).cmp(&text_key(key, rb)),
        };
        let by_path = || ra.finding.path.cmp(&rb.finding.path);
        if descending {
            primary.reverse().then_with(|| {
                if key == Column::Path {
                    by_path().reverse()
                } else {
                    by_path()
                }
            })
        } else {
            primary.then_with(by_path)
        }
    }
}

/// The editor that recovers a row's unsaved changes: a vim swap file with unsaved changes
/// whose vim is gone (not live), written by Vim or Neovim. Whether this user may recover it
/// is checked when it is about to run (see `suspend`).
fn recovery(row: &Row) -> Option<&'static str> {
    if !row.unsaved() || row.verdict() == Verdict::Live {
        return None;
    }
    locksmith::dialect::vim_swap::recovering_editor(&row.finding.path, &row.finding.content)
}
