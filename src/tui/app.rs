//! The app: the UI's components and the one `update` that routes everything to them.
//! Everything that changes the UI arrives as a [`Msg`] (a key, a scan event, re-judged
//! verdicts, a reclaim outcome, a clock tick); everything it wants done outside itself leaves
//! as an [`Effect`] for the runtime. `update` never blocks and never touches the file system,
//! so it is tested directly.
//!
//! The app only routes:
//! - a key goes to what has the keys ([`Mode`]): the pop-up open (the pop-up [`Layer`]), the
//!   prompt being typed, else the detail pane for its own keys and the table for the rest;
//!   the mouse to the part of the screen under it;
//! - what the workers send back goes to the component it is about (scan events to the header
//!   and the table, re-judged verdicts and reclaim outcomes to the table, a check's answer to
//!   the dialog, ...);
//! - what a component asks for ([`Request`]) is carried out once it is done: a status
//!   message, a dialog for a [`ConfirmAction`], the effect of a [`ConfirmedAction`], a
//!   rescan, a program to run;
//! - drawing lays the screen out ([`Screen`]) and has each component draw its part.
//!
//! The app knows the terminal's size (a [`Msg::Resize`]) and lays the screen out with the
//! same [`Screen`] the drawing uses, so every scroll position is kept by the state: the
//! selected row is always on screen, and the detail pane and the pop-ups scroll no further
//! than their text.

use std::path::PathBuf;

use ratatui::crossterm::event::{KeyEvent, MouseButton, MouseEvent, MouseEventKind};
use ratatui::layout::Rect;

use super::components::detail::{self, DetailPane};
use super::components::header::{Header, Progress};
use super::components::keybar::Bar;
use super::components::status::{Status, StatusBar};
use super::components::table::Table;
use super::components::{self, Busy, Cx};
use super::confirm::{ConfirmAction, ConfirmedAction, Undo};
use super::keymap::{self, Action, Context};
use super::layout::{self, Screen, WHEEL_STEP};
pub use super::msg::{Effect, Msg};
use super::popup::layer::Layer;
use super::popup::{self, Env, Popup, help, journal, refused, why};
use super::queue::{Level, Queue, Request, Said};
use super::text;
use super::theme::Theme;
use locksmith::scan::ScanEvent;

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

/// What has the keys: exactly one at a time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// The table (and the detail pane, when it is open).
    Table,
    /// The filter prompt.
    Filter,
    /// The find prompt.
    Find,
    /// A pop-up.
    Popup,
}

/// The whole state of the UI: its components, and what they share.
#[derive(Debug)]
pub struct App {
    pub opts: Options,
    pub header: Header,
    pub table: Table,
    pub detail: DetailPane,
    pub status_bar: StatusBar,
    pub layer: Layer,
    queue: Queue,
    /// The terminal's size.
    area: Rect,
    /// The clock used for ages (ms since the epoch), advanced by ticks.
    pub now_ms: i64,
    /// What keeps destructive actions from starting now (with `--readonly`, a reclaim or
    /// `x` running).
    pub busy: Busy,
}

/// What the table works with, from the app's fields (borrowed one by one, so that the table
/// itself can be borrowed beside them).
macro_rules! cx {
    ($app:ident) => {
        Cx {
            queue: &mut $app.queue,
            status: &mut $app.status_bar,
            detail: &mut $app.detail,
            area: $app.area,
            busy: $app.busy,
            now_ms: $app.now_ms,
        }
    };
}

/// What pop-ups are drawn with, on a screen `width` columns wide.
fn env(opts: &Options, width: u16) -> Env<'_> {
    Env {
        theme: opts.theme,
        state_dir: opts.state_dir.as_deref(),
        popups: popup::ALL,
        width,
        roots: &opts.roots,
    }
}

impl App {
    pub fn new(opts: Options, now_ms: i64) -> App {
        App {
            busy: Busy {
                readonly: opts.readonly,
                ..Busy::default()
            },
            opts,
            header: Header::default(),
            table: Table::default(),
            detail: DetailPane::default(),
            status_bar: StatusBar::default(),
            layer: Layer::default(),
            queue: Queue::default(),
            area: Rect::new(0, 0, 80, 24),
            now_ms,
        }
    }

    // ----- reading -----

    pub fn mode(&self) -> Mode {
        match (self.layer.is_open(), self.table.typing()) {
            (true, _) => Mode::Popup,
            (false, Some(Context::Filter)) => Mode::Filter,
            (false, Some(_)) => Mode::Find,
            (false, None) => Mode::Table,
        }
    }

    /// The context of the keys: the detail pane's when it is open over the table.
    pub fn context(&self) -> Context {
        match (self.mode(), self.layer.get()) {
            (_, Some(p)) => Context::Popup(p.keys()),
            (Mode::Filter, _) => Context::Filter,
            (Mode::Find, _) => Context::Find,
            _ if self.details_open() => Context::Detail,
            _ => Context::Table,
        }
    }

    /// The status bar's message, if any.
    pub fn status(&self) -> Option<&Status> {
        self.status_bar.message()
    }

    pub fn progress(&self) -> &Progress {
        &self.header.progress
    }

    /// Whether the detail pane is on screen (open, and a lock selected).
    pub fn details_open(&self) -> bool {
        self.detail.open(self.table.has_rows())
    }

    /// What pop-ups are drawn with.
    pub fn popup_env(&self) -> Env<'_> {
        env(&self.opts, self.area.width)
    }

    /// The screen's layout at the current size.
    pub fn screen(&self) -> Screen {
        components::screen(self.area, &self.detail, &self.status_bar, &self.table)
    }

    /// Rows of the table on screen (the PgUp/PgDn step).
    pub fn page(&self) -> usize {
        usize::from(self.screen().table_body().height).max(1)
    }

    /// The key bar (and which actions work now).
    pub fn bar(&self) -> Bar<'_> {
        Bar {
            context: self.context(),
            readonly: self.opts.readonly,
            marked: self.table.list.marked(),
            found: self.table.found.is_some(),
            dialog: self.layer.dialog(),
            row: self.table.selected_row(),
        }
    }

    /// The locks the next periodic re-judge round judges (see `List::rejudge_round`).
    pub fn rejudge_round(&mut self) -> Vec<locksmith::scan::Finding> {
        let page = self.page();
        self.table.list.rejudge_round(self.table.offset(), page)
    }

    // ----- updating -----

    /// Starts a new scan: rows are kept until it completes, then those it did not find go.
    pub fn rescan(&mut self) -> Effect {
        let generation = self.header.start();
        self.table.list.scan_started();
        Effect::Scan { generation }
    }

    /// Starts a periodic scan in the background, unless one is running: new lock files appear
    /// and removed ones go without `r`, and the header keeps the last scan's numbers meanwhile.
    pub fn rescan_quietly(&mut self) -> Option<Effect> {
        let generation = self.header.start_quietly()?;
        self.table.list.scan_started();
        Some(Effect::Scan { generation })
    }

    /// Takes the terminal's size and keeps the selection and every scroll position in view.
    /// The status message stays until it expires: it is fitted again to the new width.
    pub fn resize(&mut self, width: u16, height: u16) {
        let area = Rect::new(0, 0, width, height);
        if area != self.area {
            self.area = area;
            self.clamp_scrolls();
        }
    }

    /// Brings the table's view up to date, the selection on screen.
    pub fn refresh(&mut self) {
        self.table.refresh(&mut cx!(self));
    }

    /// A warning in the status bar (the configuration file that was not read).
    pub fn warn(&mut self, text: impl Into<String>) {
        self.status_bar.set(Level::Warn, text, self.now_ms);
    }

    /// Applies one message; returns what the runtime must do, if anything.
    pub fn update(&mut self, msg: Msg) -> Option<Effect> {
        let generation = self.header.progress.generation;
        let table_has_keys = self.mode() == Mode::Table;
        let queue = &mut self.queue;
        match msg {
            Msg::Key(key) => {
                let action = keymap::lookup(self.context(), &key)?;
                if action == Action::Quit {
                    return Some(Effect::Quit);
                }
                return self.around(|app| app.route(action, &key));
            }
            Msg::Paste(text) => return self.around(|app| app.paste(&text)),
            Msg::Mouse(ev) => return self.around(|app| app.on_mouse(ev)),
            Msg::Resize { width, height } => self.resize(width, height),
            Msg::Scan {
                generation: g,
                event,
            } if g == generation => self.on_scan_event(event, generation),
            Msg::ScanDone {
                generation: g,
                summary,
            } if g == generation => {
                self.header.done(&summary, queue);
                if !summary.cancelled {
                    self.table.list.drop_not_found(generation);
                }
            }
            Msg::Scan { .. } | Msg::ScanDone { .. } => {}
            Msg::Rejudged(results) => self.table.rejudged(results, generation),
            Msg::Files(files) => self.table.list.set_files(files),
            Msg::Waiting { judged, waiting } => self.table.set_waiting(judged, waiting),
            Msg::Asking(hosts) => self.header.asking(hosts),
            Msg::Asked { hosts, failed } => self.header.asked(&hosts, failed, queue),
            Msg::Checked(answers) => {
                self.layer.checked(answers);
                self.clamp_scrolls();
            }
            Msg::Reclaimed(results) => {
                self.busy.reclaiming = false;
                self.table.reclaimed(results, generation, queue);
            }
            Msg::Restored(r) => {
                self.busy.reclaiming = false;
                self.table.restored(r, generation, queue);
            }
            Msg::UndoPlanned(Ok(plan)) if table_has_keys => {
                queue.push(Request::Confirm(ConfirmAction::Restore(Undo::last(plan))));
            }
            Msg::JournalRead(Ok(entries)) if table_has_keys => {
                queue.push(Request::Journal(entries));
            }
            Msg::UndoPlanned(Ok(_)) | Msg::JournalRead(Ok(_)) => {
                queue.push(Request::Say(Said::Nothing))
            }
            Msg::UndoPlanned(Err(why)) => queue.say(Level::Warn, text::clean(&why)),
            Msg::JournalRead(Err(why)) => {
                let said = format!("cannot read the journal: {}", text::clean(&why));
                queue.say(Level::Warn, said);
            }
            Msg::StopPlanned(plan) => {
                self.busy.stopping = false;
                self.table.stop_planned(plan, queue);
            }
            Msg::Stopped(r) => {
                self.busy.stopping = false;
                self.table.stopped(r, queue);
            }
            Msg::Ran(r) => self.table.ran(r, queue),
            Msg::Tick { now_ms } => {
                self.now_ms = now_ms;
                self.status_bar.tick(now_ms);
            }
        }
        self.drain()
    }

    /// Handles an input event with the view up to date before and after, carrying out what
    /// the components asked for.
    fn around(&mut self, handle: impl FnOnce(&mut App)) -> Option<Effect> {
        self.refresh();
        handle(self);
        let effect = self.drain();
        self.refresh();
        effect
    }

    /// A key's action, to what has the keys.
    fn route(&mut self, action: Action, key: &KeyEvent) {
        match self.mode() {
            Mode::Popup => {
                let screen = self.screen().popups();
                let env = env(&self.opts, self.area.width);
                if self.layer.act(action, key, &env, screen, &mut self.queue) {
                    self.clamp_scrolls();
                }
            }
            Mode::Filter | Mode::Find => self.table.act_prompt(action, key, &mut cx!(self)),
            Mode::Table if DetailPane::handles(action) => {
                let max = self.detail_max_scroll();
                self.detail.act(action, max);
            }
            Mode::Table => self.table.act(action, &mut cx!(self)),
        }
    }

    /// Pasted text: into the prompt or pop-up that takes text; into the table, it opens the
    /// why prompt with it.
    fn paste(&mut self, pasted: &str) {
        match self.mode() {
            Mode::Popup => self.layer.type_text(pasted),
            Mode::Filter | Mode::Find => self.table.paste(pasted),
            Mode::Table => self.queue.push(Request::Why(pasted.to_string())),
        }
    }

    /// A click selects a row or sorts by a column title; the wheel scrolls what is under the
    /// pointer (the table moves its selection, so it stays in view).
    fn on_mouse(&mut self, ev: MouseEvent) {
        let (x, y) = (ev.column, ev.row);
        let wheel = match ev.kind {
            MouseEventKind::ScrollDown => i32::from(WHEEL_STEP),
            MouseEventKind::ScrollUp => -i32::from(WHEEL_STEP),
            MouseEventKind::Down(MouseButton::Left) => 0,
            _ => return,
        };
        let screen = self.screen();
        match self.mode() {
            Mode::Popup if wheel != 0 => {
                let env = env(&self.opts, self.area.width);
                if self.layer.wheel(wheel, &env, screen.popups()) {
                    self.clamp_scrolls();
                }
            }
            Mode::Table => match screen.detail {
                Some(d) if layout::contains(d, x, y) => {
                    if wheel != 0 {
                        let max = self.detail_max_scroll();
                        self.detail.scroll_by(wheel, max);
                    }
                }
                _ => self.table.mouse(x, y, wheel, &screen, &mut cx!(self)),
            },
            _ => {}
        }
    }

    fn on_scan_event(&mut self, event: ScanEvent, generation: u64) {
        match event {
            ScanEvent::Progress { entries, locks } => self.header.walked(entries, locks),
            ScanEvent::Found(f) => {
                self.table.list.upsert(*f, Some(generation), generation);
                self.header.found(self.table.list.found_now());
            }
            ScanEvent::Error(e) => self.header.error(&e, &mut self.queue),
        }
    }

    /// Carries out what the components asked for, in order; returns the effect one of them
    /// asked of the runtime, if any (one at most per message).
    fn drain(&mut self) -> Option<Effect> {
        let mut effect = None;
        while let Some(r) = self.queue.pop() {
            match r {
                Request::Say(said) => self.status_bar.show(said, self.now_ms),
                Request::Help => self.open(Box::new(help::Help::default())),
                Request::Why(pasted) => self.open(Box::new(why::Why::new(&pasted))),
                Request::Journal(entries) => {
                    let run = locksmith::reclaim::run_id();
                    self.open(Box::new(journal::Journal::new(entries, run)));
                    self.clamp_scrolls();
                }
                Request::NotRecovered { swap, why } => {
                    self.open(Box::new(refused::Refused::new(swap, why)));
                }
                Request::Confirm(action) => self.confirm(action),
                Request::Confirmed(c) => self.confirmed(c),
                Request::Undo(plan) => match self.busy.refusal() {
                    Some(why) => {
                        self.status_bar.set(Level::Warn, why, self.now_ms);
                        self.layer.close();
                    }
                    None => self.confirm(ConfirmAction::Restore(Undo::picked(plan))),
                },
                Request::FindMessage(message) => self.table.find_message(&message, &mut cx!(self)),
                Request::Rescan => {
                    self.status_bar.clear();
                    let scan = self.rescan();
                    self.queue.push(Request::Do(scan));
                }
                Request::PlanStop(f) => {
                    self.busy.stopping = true;
                    self.queue.push(Request::Do(Effect::PlanStop(f)));
                }
                Request::Do(e) => {
                    debug_assert!(effect.is_none(), "two effects for one message: {e:?}");
                    effect = Some(e);
                }
            }
        }
        effect
    }

    /// Opens the dialog of `action`; a reclaim's dialog asks which of its locks this user
    /// cannot remove.
    fn confirm(&mut self, action: ConfirmAction) {
        let check = action.removes().then(|| action.targets().to_vec());
        self.open(popup::dialog(action));
        if let Some(targets) = check {
            self.queue.push(Request::Do(Effect::Check(targets)));
        }
    }

    /// Carries out what the user said yes to, off the UI thread: says it is under way, and
    /// refuses another of its kind meanwhile.
    fn confirmed(&mut self, c: ConfirmedAction) {
        self.status_bar.set_until_done(c.underway());
        let effect = if c.signal().is_some() {
            self.busy.stopping = true;
            Effect::Stop(c)
        } else if c.restore_plan().is_some() {
            self.busy.reclaiming = true;
            Effect::Restore(c)
        } else {
            self.busy.reclaiming = true;
            Effect::Reclaim(c)
        };
        self.queue.push(Request::Do(effect));
    }

    /// Opens a pop-up over whatever was open (a prompt being typed goes, its text as it is);
    /// the status message goes (it was about what came before).
    fn open(&mut self, p: Box<dyn Popup>) {
        self.status_bar.clear();
        self.table.close_prompt();
        self.layer.open(p);
    }

    /// Clamps every scroll position to what the current size shows.
    fn clamp_scrolls(&mut self) {
        self.table.keep_visible(&cx!(self));
        let max = self.detail_max_scroll();
        self.detail.scroll = self.detail.scroll.min(max);
        let screen = self.screen().popups();
        self.layer.clamp(&env(&self.opts, self.area.width), screen);
    }

    fn detail_max_scroll(&self) -> u16 {
        let (inner, row) = (self.screen().detail_inner(), self.table.selected_row());
        let waiting = self.table.selected_waiting();
        detail::max_scroll_of(inner, row, waiting, self.opts.theme, self.now_ms)
    }
}
