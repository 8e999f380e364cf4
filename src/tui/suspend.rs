//! Running a program in the terminal with the UI suspended: the action a lock's dialect
//! offers for it (`e`: recovering a lock's unsaved changes in their editor), a shell in a
//! lock's directory (`o`).
//!
//! An action runs only as its dialect allows the effective user to run it on the lock as it
//! is at that moment (read again, its owner and content from one descriptor: see
//! `locksmith::dialect::Dialect::command`); otherwise nothing runs and the app is told why
//! ([`RunResult::refused`]).
//!
//! The input thread stops reading the terminal first ([`InputGate`]: it would take the
//! program's keys), the terminal is given back as it was (main screen, cooked mode, no mouse
//! reporting, cursor shown), the program runs in the foreground, and the UI takes the terminal
//! again when it ends. While it runs, locksmith ignores the terminal's SIGINT and SIGQUIT
//! (Ctrl-C, Ctrl-\ are the program's), as a version control tool does while an editor runs; the program itself
//! gets them as usual. A shell that made itself the terminal's foreground process group and
//! did not give it back is undone.

use std::io::Write as _;
use std::path::Path;
use std::process::Command;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use ratatui::crossterm::event::{
    DisableBracketedPaste, DisableMouseCapture, EnableBracketedPaste, EnableMouseCapture,
};
use ratatui::crossterm::terminal::{Clear, ClearType, EnterAlternateScreen, enable_raw_mode};
use ratatui::crossterm::{cursor, execute};

use locksmith::dialect::DialectId;

use super::keymap::{self, Action, Context};
use super::msg::{Run, RunResult};
use super::text;

/// How long the input thread waits for input before it looks at the gate again.
pub const INPUT_POLL: Duration = Duration::from_millis(50);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Gate {
    Open,
    /// Asked to close: the input thread closes it when it is not reading.
    Closing,
    Closed,
}

/// Whether the input thread may read the terminal.
#[derive(Debug, Clone)]
pub struct InputGate(Arc<(Mutex<Gate>, Condvar)>);

impl InputGate {
    pub fn new() -> Self {
        InputGate(Arc::new((Mutex::new(Gate::Open), Condvar::new())))
    }

    fn state(&self) -> std::sync::MutexGuard<'_, Gate> {
        self.0.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The input thread, before it reads: waits while the gate is closed (and closes it when
    /// asked to).
    pub fn wait_open(&self) {
        let mut g = self.state();
        if *g == Gate::Open {
            return;
        }
        *g = Gate::Closed;
        self.0.1.notify_all();
        while *g != Gate::Open {
            g = self.0.1.wait(g).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Closes the gate: returns once the input thread has stopped reading.
    pub fn close(&self) {
        let mut g = self.state();
        *g = Gate::Closing;
        while *g != Gate::Closed {
            g = self.0.1.wait(g).unwrap_or_else(|e| e.into_inner());
        }
    }

    pub fn open(&self) {
        *self.state() = Gate::Open;
        self.0.1.notify_all();
    }
}

/// How much of a lock is read to check its action: as much as a dialect reads of it.
const CONTENT: u64 = locksmith::dialect::CONTENT_PREFIX as u64;

/// The command its dialect gives the effective user for the action of the lock at `path`
/// now: its owner and its content read from one descriptor, opened without following a
/// symlink.
fn action_command(path: &Path, dialect: DialectId) -> Result<locksmith::dialect::Command, String> {
    use std::io::Read as _;
    use std::os::unix::fs::MetadataExt;
    let d = locksmith::dialect::by_id(dialect.as_str())
        .ok_or_else(|| format!("its format ({dialect}) offers nothing to run"))?;
    let (file, meta) = locksmith::probe::reach::open_file(path)
        .map_err(|e| format!("{} cannot be read: {e}", text::path(path)))?;
    let mut content = Vec::new();
    file.take(CONTENT)
        .read_to_end(&mut content)
        .map_err(|e| format!("{} cannot be read: {e}", text::path(path)))?;
    d.command(path, meta.uid(), &content)
}

/// The command for `run` on the lock of `dialect`, what it is called in messages, and the
/// line printed before it runs; or why it must not run.
fn command(run: &Run, dialect: DialectId) -> Result<(Command, String, String), String> {
    match run {
        Run::Recover { swap, .. } => {
            let c = action_command(swap, dialect)?;
            let (program, args) = c.argv.split_first().ok_or("its command is empty")?;
            let mut cmd = Command::new(program);
            cmd.args(args);
            if let Some(dir) = &c.dir {
                cmd.current_dir(dir);
            }
            let program = text::path(Path::new(program));
            let what = c
                .argv
                .iter()
                .map(|a| text::path(Path::new(a)))
                .collect::<Vec<_>>()
                .join(" ");
            let banner = format!(
                "locksmith: {what}, which writes to {} (the list comes back when {program} exits)",
                text::path(&c.writes)
            );
            Ok((cmd, what, banner))
        }
        Run::Shell { dir } => {
            let shell = std::env::var_os("SHELL")
                .filter(|s| !s.is_empty())
                .unwrap_or_else(|| "/bin/sh".into());
            let mut cmd = Command::new(&shell);
            cmd.current_dir(dir);
            let what = format!("{} in {}", text::path(Path::new(&shell)), text::path(dir));
            let banner = format!(
                "locksmith: a shell in {} (exit it to come back to the list)",
                text::path(dir)
            );
            Ok((cmd, what, banner))
        }
    }
}

/// Runs `run` in the terminal, the UI suspended, and takes the terminal back; says what came
/// of it.
pub fn run(
    terminal: &mut ratatui::DefaultTerminal,
    gate: &InputGate,
    run: &Run,
    lock: &Path,
    dialect: DialectId,
) -> RunResult {
    let (mut cmd, what, banner) = match command(run, dialect) {
        Ok(c) => c,
        Err(why) => {
            return RunResult {
                path: lock.to_path_buf(),
                ok: false,
                message: format!("not recovered: {why}"),
                refused: Some(why),
            };
        }
    };
    gate.close();
    let mut out = std::io::stdout();
    let _ = execute!(out, DisableMouseCapture, DisableBracketedPaste);
    ratatui::restore();
    let _ = execute!(out, cursor::Show);
    let _ = writeln!(out, "{banner}");
    let status = sys::run_in_foreground(&mut cmd);
    let _ = enable_raw_mode();
    let _ = execute!(
        out,
        EnterAlternateScreen,
        Clear(ClearType::All),
        EnableMouseCapture,
        EnableBracketedPaste
    );
    // The screen is blank now; so must be the frame the next one is compared with, for the
    // whole screen to be drawn again. (Not `Terminal::clear`: it asks the terminal where the
    // cursor is, and waits for an answer a terminal need not give.)
    let _ = terminal.draw(|_| {});
    gate.open();
    let (ok, message) = match (run, status) {
        (_, Err(e)) => (false, format!("cannot run {what}: {e}")),
        (Run::Recover { .. }, Ok(s)) if s.success() => (
            true,
            format!(
                "{what} exited; the swap file is judged again (once the changes are saved, {} removes it)",
                keymap::key(Context::Table, Action::Reclaim)
            ),
        ),
        (Run::Shell { dir }, Ok(_)) => {
            (true, format!("back from the shell in {}", text::path(dir)))
        }
        (_, Ok(s)) => (false, format!("{what} exited with {s}")),
    };
    RunResult {
        path: lock.to_path_buf(),
        ok,
        message,
        refused: None,
    }
}

#[cfg(unix)]
mod sys {
    use std::io;
    use std::process::{Command, ExitStatus};

    /// Runs `cmd` in the foreground of the terminal and waits for it, ignoring SIGINT and
    /// SIGQUIT meanwhile (they are the program's: it was started before, with the default
    /// dispositions, so it gets them); then makes sure our process group has the terminal.
    pub fn run_in_foreground(cmd: &mut Command) -> io::Result<ExitStatus> {
        let mut child = cmd.spawn()?;
        let int = ignore(libc::SIGINT);
        let quit = ignore(libc::SIGQUIT);
        let status = child.wait();
        restore(libc::SIGINT, int);
        restore(libc::SIGQUIT, quit);
        take_terminal_back();
        status
    }

    /// Sets a signal's disposition to ignore (`signal(2)`); returns the one it had.
    fn ignore(sig: libc::c_int) -> libc::sighandler_t {
        // SAFETY: signal(2) with SIG_IGN installs no handler; it only changes how the kernel
        // treats the signal for this process.
        unsafe { libc::signal(sig, libc::SIG_IGN) }
    }

    fn restore(sig: libc::c_int, old: libc::sighandler_t) {
        if old != libc::SIG_ERR {
            // SAFETY: puts back the disposition `ignore` returned, unchanged.
            unsafe {
                libc::signal(sig, old);
            }
        }
    }

    /// An interactive shell makes its own process group the terminal's foreground group,
    /// and gives it back when it exits normally; if it did not (killed, say), take it back
    /// (`tcsetpgrp(3)`, with SIGTTOU ignored, as a background group must).
    fn take_terminal_back() {
        let tty = rustix::stdio::stdin();
        let ours = rustix::process::getpgrp();
        if rustix::termios::tcgetpgrp(tty).is_ok_and(|fg| fg != ours) {
            let ttou = ignore(libc::SIGTTOU);
            let _ = rustix::termios::tcsetpgrp(tty, ours);
            restore(libc::SIGTTOU, ttou);
        }
    }
}
