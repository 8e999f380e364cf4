//! The terminal UI: interactive triage and one-key reclaim (spec §7).
//!
//! - [`app`] owns the state and its one `update` (keys, scan events, re-judged verdicts,
//!   reclaim outcomes → new state + effects); it never blocks and never touches the disk;
//! - [`keymap`] is the one table of key bindings behind the handler, the key bar and the help;
//! - [`render`] draws `&App` (one helper per part of the screen, one [`theme`]);
//! - [`confirm`] is the ConfirmAction → ConfirmedAction gate of destructive actions;
//! - [`worker`] runs the scan, the re-judging and reclaims on their own threads;
//! - [`text`] escapes everything taken from lock files before it is drawn.
//!
//! The UI thread (this module's loop) only receives messages from one channel (keys from the
//! input thread, events from the workers), updates the app and draws: the first frame is drawn
//! before the scan starts, and input never waits for a scan or for evidence collection. The
//! terminal is restored on exit and on panic (`ratatui::try_init` installs the hook).

mod app;
mod confirm;
mod keymap;
mod render;
mod text;
mod theme;
mod worker;

#[cfg(test)]
mod tests;

use std::io::IsTerminal;
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use locksmith::reclaim::ReclaimOptions;
use locksmith::scan::Config;
use ratatui::crossterm::event::{self, Event, KeyEventKind};

use crate::ScanArgs;
use app::{App, Effect, Msg, Options};
use theme::Theme;
use worker::{Incoming, Workers};

/// How long the UI thread spends applying queued messages before it draws again.
const BATCH: Duration = Duration::from_millis(30);
/// The clock tick (ages in the table) when nothing else happens.
const TICK: Duration = Duration::from_secs(1);

/// Runs the terminal UI until the user quits. Exit status: 0, or 2 on a fatal error.
pub fn run(args: ScanArgs) -> i32 {
    match run_ui(args) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("locksmith: {e:#}");
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
    let config = Config::load(args.config.as_deref())?;
    let roots = config.roots(&args.paths);
    let reclaim = ReclaimOptions {
        copies: config.saved,
        ..ReclaimOptions::new()
    };
    let opts = Options {
        readonly: args.readonly,
        theme: Theme::choose(args.color, std::env::var_os("NO_COLOR").as_deref()),
        state_dir: Some(reclaim.state_dir.clone()),
    };
    let interval = Duration::from_secs_f64(args.interval);

    let (tx, rx) = mpsc::channel::<Incoming>();
    let mut terminal = ratatui::try_init().context("cannot set up the terminal")?;
    let mut app = App::new(opts, now_ms());
    let result = (|| -> anyhow::Result<()> {
        // The first frame, before any work starts.
        terminal.draw(|f| f.render_widget(&app, f.area()))?;
        spawn_input(tx.clone()).context("cannot start the input thread")?;
        let mut workers = Workers::new(tx, config, roots, reclaim);
        let effect = app.rescan();
        apply(effect, &mut workers);
        let mut next_rejudge = Instant::now() + interval;
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
                            quit |= apply(effect, &mut workers);
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
                workers.rejudge(app.listed_paths());
                next_rejudge = Instant::now() + interval;
            }
            app.refresh();
            terminal.draw(|f| f.render_widget(&app, f.area()))?;
        }
    })();
    ratatui::restore();
    result
}

/// Carries out an effect; returns whether the UI must quit.
fn apply(effect: Effect, workers: &mut Workers) -> bool {
    match effect {
        Effect::Quit => return true,
        Effect::Scan { generation } => workers.scan(generation),
        Effect::Reclaim(action) => workers.reclaim(action),
    }
    false
}

/// Reads the terminal on its own thread and forwards keys and resizes.
fn spawn_input(tx: Sender<Incoming>) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name("locksmith-input".into())
        .spawn(move || {
            loop {
                let msg = match event::read() {
                    Ok(Event::Key(k)) if k.kind != KeyEventKind::Release => Msg::Key(k),
                    Ok(Event::Resize(..)) => Msg::Resize,
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
