//! Running a program in the terminal with the UI suspended: `vim -r` on a swap file with
//! unsaved changes (`e`), a shell in a lock's directory (`o`).
//!
//! `vim -r` runs only on a swap file the effective user may recover, as it is at that moment
//! (read again, its owner and block 0 from one descriptor: see
//! `locksmith::dialect::vim_swap::recovery`); otherwise nothing runs and the app is told why
//! ([`RunResult::refused`]).
//!
//! The input thread stops reading the terminal first ([`InputGate`]: it would take the
//! program's keys), the terminal is given back as it was (main screen, cooked mode, no mouse
//! reporting, cursor shown), the program runs in the foreground, and the UI takes the terminal
//! again when it ends. While it runs, locksmith ignores the terminal's SIGINT and SIGQUIT
//! (Ctrl-C, Ctrl-\ are the program's), as git does while an editor runs; the program itself
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

use locksmith::dialect::vim_swap::{self, Recovery};

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

/// How much of a swap file is read to check it: its block 0.
const BLOCK0: u64 = 1024;

/// Whether the swap file at `swap` may be recovered by this user now, and how: its owner and
/// its block 0 read from one descriptor, opened without following a symlink.
fn recovery(swap: &Path) -> Result<Recovery, String> {
    use std::io::Read as _;
    use std::os::unix::fs::MetadataExt;
    let (file, meta) = locksmith::probe::reach::open_file(swap)
        .map_err(|e| format!("{} cannot be read: {e}", text::path(swap)))?;
    let mut block0 = Vec::new();
    file.take(BLOCK0)
        .read_to_end(&mut block0)
        .map_err(|e| format!("{} cannot be read: {e}", text::path(swap)))?;
    vim_swap::recovery(swap, meta.uid(), &block0)
}

/// The command for `run`, what it is called in messages, and the line printed before it runs;
/// or why it must not run.
fn command(run: &Run) -> Result<(Command, String, String), String> {
    match run {
        Run::Recover { swap, .. } => {
            let r = recovery(swap)?;
            let editor = r.editor;
            let mut cmd = Command::new(editor);
            // The swap file itself: vim recovers that very file, not any other swap file of
            // the same name it would find in its 'directory'.
            cmd.arg("-r").arg(&r.swap);
            if let Some(dir) = swap.parent() {
                cmd.current_dir(dir);
            }
            let what = format!("{editor} -r {}", text::path(&r.swap));
            let banner = format!(
                "locksmith: {what}, which writes to {} (the list comes back when {editor} exits)",
                text::path(&r.file)
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
) -> RunResult {
    let (mut cmd, what, banner) = match command(run) {
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
