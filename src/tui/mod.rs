//! The terminal UI: interactive triage and one-key reclaim (README: The terminal UI).
//!
//! - [`app`] holds the components and routes to them: every [`msg::Msg`] (keys, scan events,
//!   re-judged verdicts, reclaim outcomes) to the component it is for, what the components ask
//!   for ([`queue`]) to where it is carried out, and drawing by layout; it never blocks and
//!   never touches the disk;
//! - [`components`] are the parts of the screen (header, table, detail pane, status bar, key
//!   bar), and [`popup`] the pop-ups, one file each: each owns its state, its keys and its
//!   drawing, with its tests beside it;
//! - [`msg`] is what reaches the app and what it asks of the runtime ([`msg::Effect`]);
//! - [`render`] draws `&App` by layout, each component its part;
//! - [`keymap`] is the one table of key bindings behind the handler, the key bar, the help and
//!   every message that names a key;
//! - [`layout`] places the parts of the screen (shared by drawing, paging and the mouse);
//! - [`rows`] holds the table's rows (a lock and the text of its cells) and columns; one
//!   [`theme`];
//! - [`confirm`] is the ConfirmAction → ConfirmedAction gate of destructive actions;
//! - [`stop`] finds and signals the processes that hold a lock (`x`);
//! - [`suspend`] runs a program in the terminal with the UI suspended (a lock's action, a shell);
//! - [`worker`] runs the scan, the re-judging, reclaims and signals on their own threads;
//! - [`text`] escapes everything taken from lock files before it is drawn, and fits text to
//!   the screen.
//!
//! The UI thread (this module's loop) only receives messages from one channel (keys and mouse
//! events from the input thread, events from the workers), updates the app and draws: the
//! first frame is drawn before the scan starts, and input never waits for a scan or for
//! evidence collection. Verdicts are judged again every `--interval`, and the roots are
//! scanned again in the background now and then, so new lock files appear by themselves. The
//! terminal (mouse capture included) is restored on exit and on panic, and around a program
//! run with the UI suspended (the input thread stops reading the terminal meanwhile).

mod app;
mod clipboard;
mod components;
mod confirm;
mod keymap;
mod layout;
mod msg;
mod popup;
mod queue;
mod render;
mod rows;
mod stop;
mod suspend;
mod text;
mod theme;
mod worker;

#[cfg(test)]
mod testkit;
#[cfg(test)]
mod tests;

/// The UI's key map as the man page lists it, in the help's order: (section, keys, what
/// they do).
#[cfg(test)]
pub fn key_map() -> Vec<(&'static str, String, &'static str)> {
    keymap::listing(popup::ALL)
        .into_iter()
        .map(|(section, b)| (section, b.label(), b.long))
        .collect()
}

/// The UI's key map as the book's reference shows it: one Markdown table, by context.
#[cfg(test)]
pub fn key_map_markdown() -> String {
    keymap::markdown(popup::ALL)
}

use std::io::IsTerminal;
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use locksmith::config::RawConfig;
use locksmith::remote::Asker;
use ratatui::crossterm::event::{
    self, DisableBracketedPaste, DisableMouseCapture, EnableBracketedPaste, EnableMouseCapture,
    Event, KeyEventKind, MouseEventKind,
};
use ratatui::crossterm::execute;

use crate::ScanArgs;
use app::{App, Options};
use msg::{Effect, Msg};
use suspend::InputGate;
use theme::Theme;
use worker::{Incoming, Workers};

/// How long the UI thread spends applying queued messages before it draws again.
const BATCH: Duration = Duration::from_millis(30);
/// The clock tick (ages in the table) when nothing else happens.
const TICK: Duration = Duration::from_secs(1);
/// How long a host's answer about its foreign locks is kept before it is asked again.
const ASK_AGAIN_AFTER: Duration = Duration::from_secs(30);

/// The background rescan runs at most this often ...
const RESCAN_MIN: Duration = Duration::from_secs(5);
/// ... and waits this many times as long as the last scan took, so that on a big tree it
/// takes a small share of one core.
const RESCAN_FACTOR: u32 = 20;

/// Runs the terminal UI until the user quits. Exit status: 0, or 2 on a fatal error.
pub fn run(args: ScanArgs) -> i32 {
    match run_ui(args) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("locksmith: {}", locksmith::text::escape(&format!("{e:#}")));
            2
        }
    }
}

fn run_ui(args: ScanArgs) -> anyhow::Result<()> {
    if !(args.interval.is_finite() && args.interval >= 0.1) {
        bail!(
            "--interval must be a number of seconds of at least 0.1 (got {})",
            args.interval
        );
    }
    if !std::io::stdin().is_terminal() || !std::io::stdout().is_terminal() {
        bail!("the terminal UI needs a terminal; for a report use `locksmith --scan`");
    }
    let mut raw = RawConfig::load(args.config.as_deref())?;
    raw.containers = !args.no_containers && args.paths.is_empty();
    let notes = std::mem::take(&mut raw.notes);
    let settings = raw.validate()?;
    let roots = settings.scan.roots(&args.paths);
    let reclaim = settings.reclaim;
    let opts = Options {
        readonly: args.readonly,
        theme: Theme::choose(args.color, std::env::var_os("NO_COLOR").as_deref()),
        state_dir: Some(reclaim.state_dir.clone()),
        roots: roots.iter().map(|r| r.path.clone()).collect(),
    };
    let interval = Duration::from_secs_f64(args.interval);

    let (tx, rx) = mpsc::channel::<Incoming>();
    let mut terminal = ratatui::try_init().context("cannot set up the terminal")?;
    mouse_capture();
    let mut app = App::new(opts, now_ms());
    if !notes.is_empty() {
        app.warn(notes.join("; "));
    }
    let result = (|| -> anyhow::Result<()> {
        // The first frame, before any work starts.
        let size = terminal.size()?;
        app.resize(size.width, size.height);
        terminal.draw(|f| f.render_widget(&app, f.area()))?;
        let gate = InputGate::new();
        spawn_input(tx.clone(), gate.clone()).context("cannot start the input thread")?;
        let asker = Asker::new(settings.remote, args.ask_hosts, ASK_AGAIN_AFTER);
        let mut workers = Workers::new(tx, settings.scan, roots, reclaim, asker);
        let mut ui = Ui {
            workers: &mut workers,
            terminal: &mut terminal,
            gate: &gate,
        };
        let effect = app.rescan();
        ui.apply(effect, &mut app);
        let mut next_rejudge = Instant::now() + interval;
        let mut next_rescan: Option<Instant> = None;
        loop {
            let wait = next_rejudge
                .saturating_duration_since(Instant::now())
                .min(TICK);
            let mut quit = false;
            let first = match rx.recv_timeout(wait) {
                Ok(m) => Some(m),
                Err(RecvTimeoutError::Timeout) => None,
                Err(RecvTimeoutError::Disconnected) => bail!("the input thread stopped"),
            };
            // Apply everything queued (for a bounded time), then draw once.
            let started = Instant::now();
            let mut next = first;
            while let Some(incoming) = next.take() {
                match incoming {
                    Incoming::Fatal(why) => bail!(why),
                    Incoming::Msg(msg) => {
                        if let Some(effect) = app.update(msg) {
                            quit |= ui.apply(effect, &mut app);
                        }
                    }
                }
                if quit || started.elapsed() > BATCH {
                    break;
                }
                next = rx.try_recv().ok();
            }
            if quit {
                return Ok(());
            }
            app.update(Msg::Tick { now_ms: now_ms() });
            if Instant::now() >= next_rejudge {
                ui.workers.rejudge(|| app.rejudge_round());
                next_rejudge = Instant::now() + interval;
            }
            // The next background rescan is planned when a scan ends, from how long it took.
            match (app.progress().scanning, next_rescan) {
                (true, _) => next_rescan = None,
                (false, None) => {
                    let took = Duration::from_millis(app.progress().elapsed_ms.unwrap_or(0));
                    next_rescan = Some(Instant::now() + (took * RESCAN_FACTOR).max(RESCAN_MIN));
                }
                (false, Some(at)) if Instant::now() >= at => {
                    if let Some(effect) = app.rescan_quietly() {
                        ui.apply(effect, &mut app);
                    }
                }
                (false, Some(_)) => {}
            }
            let size = ui.terminal.size()?;
            app.resize(size.width, size.height);
            app.refresh();
            ui.terminal.draw(|f| f.render_widget(&app, f.area()))?;
        }
    })();
    let _ = execute!(
        std::io::stdout(),
        DisableMouseCapture,
        DisableBracketedPaste
    );
    ratatui::restore();
    result
}

/// Turns mouse reporting on (a terminal that cannot report the mouse is still usable with
/// keys) and bracketed paste (a pasted error message comes whole, for the why prompt), and
/// makes the panic hook (installed by `ratatui::try_init`, which restores the terminal) turn
/// them off first.
fn mouse_capture() {
    let _ = execute!(std::io::stdout(), EnableMouseCapture, EnableBracketedPaste);
    let restore = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let _ = execute!(
            std::io::stdout(),
            DisableMouseCapture,
            DisableBracketedPaste
        );
        restore(info);
    }));
}

/// What carries out the app's effects.
struct Ui<'a> {
    workers: &'a mut Workers,
    terminal: &'a mut ratatui::DefaultTerminal,
    gate: &'a InputGate,
}

impl Ui<'_> {
    /// Carries out an effect (and what the app makes of its result, for a program run with
    /// the UI suspended); returns whether the UI must quit.
    fn apply(&mut self, effect: Effect, app: &mut App) -> bool {
        match effect {
            Effect::Quit => return true,
            Effect::Scan { generation } => self.workers.scan(generation),
            Effect::Reclaim(action) => self.workers.reclaim(action),
            Effect::Check(findings) => self.workers.check(findings),
            Effect::PlanUndo => self.workers.plan_undo(),
            Effect::ReadJournal => self.workers.read_journal(),
            Effect::Restore(action) => self.workers.restore(action),
            Effect::PlanStop(f) => self.workers.plan_stop(*f),
            Effect::Stop(action) => self.workers.stop(action),
            Effect::Rejudge(findings) => self.workers.rejudge_now(findings),
            Effect::Run(run, finding) => {
                let result = suspend::run(
                    self.terminal,
                    self.gate,
                    &run,
                    &finding.path,
                    finding.dialect,
                );
                // The clock stood still meanwhile: the message must not expire at once.
                app.update(Msg::Tick { now_ms: now_ms() });
                if let Some(next) = app.update(Msg::Ran(result)) {
                    return self.apply(next, app);
                }
            }
            Effect::Copy(bytes) => {
                let _ = clipboard::write_osc52(&mut std::io::stdout(), &bytes);
            }
        }
        false
    }
}

/// Reads the terminal on its own thread and forwards keys and resizes; it stops reading
/// while the gate is closed (another program runs in the terminal).
fn spawn_input(tx: Sender<Incoming>, gate: InputGate) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name("locksmith-input".into())
        .spawn(move || {
            loop {
                gate.wait_open();
                match event::poll(suspend::INPUT_POLL) {
                    Ok(false) => continue,
                    Ok(true) => {}
                    Err(e) => {
                        let _ = tx.send(Incoming::Fatal(format!("cannot read the terminal: {e}")));
                        return;
                    }
                }
                let msg = match event::read() {
                    Ok(Event::Key(k)) if k.kind != KeyEventKind::Release => Msg::Key(k),
                    // Clicks and the wheel; pointer motion (reported too) is not worth a frame.
                    Ok(Event::Mouse(m))
                        if matches!(
                            m.kind,
                            MouseEventKind::Down(_)
                                | MouseEventKind::ScrollDown
                                | MouseEventKind::ScrollUp
                        ) =>
                    {
                        Msg::Mouse(m)
                    }
                    Ok(Event::Resize(width, height)) => Msg::Resize { width, height },
                    Ok(Event::Paste(text)) => Msg::Paste(text),
                    Ok(_) => continue,
                    Err(e) => {
                        let _ = tx.send(Incoming::Fatal(format!("cannot read the terminal: {e}")));
                        return;
                    }
                };
                if tx.send(Incoming::Msg(msg)).is_err() {
                    return;
                }
            }
        })
        .map(drop)
}

fn now_ms() -> i64 {
    jiff::Timestamp::now().as_millisecond()
}
