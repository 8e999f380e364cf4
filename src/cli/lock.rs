//! `locksmith lock [--timeout SECS] [--heartbeat SECS] LOCKPATH -- COMMAND [ARGS...]`: acquire
//! the lock with the engine, run COMMAND, release, and exit with COMMAND's status.
//!
//! Exit status: COMMAND's own status, or 128+N if a signal N killed it; **75** when the lock
//! is held (live, or not provably stale) and the timeout passed (one line on stderr names the
//! holder); **127** when COMMAND is not found and **126** when it cannot be executed (as a
//! shell does); **2** for every other error (bad argument, missing directory, permission
//! denied, a path that is a directory, ...).
//!
//! Like `flock(1)`, COMMAND inherits the locked descriptor, so the lock stays held while
//! COMMAND runs even if this process is killed; it becomes stale, and is reclaimed by the next
//! acquirer, only once every process holding that descriptor is gone. While COMMAND runs,
//! this process ignores SIGINT and SIGQUIT (a Ctrl-C reaches COMMAND, which decides), so it
//! can release the lock after COMMAND ends.

use std::ffi::OsString;
use std::io;
use std::os::fd::AsFd;
use std::os::unix::process::ExitStatusExt;
use std::process::Command;
use std::time::Duration;

use locksmith::engine::{Lock, sanitize};

use crate::LockArgs;

/// `EX_TEMPFAIL`: the lock is held by someone else.
pub const EXIT_HELD: i32 = 75;
/// Any other error of ours.
pub const EXIT_ERROR: i32 = 2;
/// COMMAND was not found.
pub const EXIT_NOT_FOUND: i32 = 127;
/// COMMAND was found but could not be executed.
pub const EXIT_CANNOT_EXECUTE: i32 = 126;

/// An error to print (one line) and the exit status that goes with it.
struct Failure {
    code: i32,
    message: String,
}

impl Failure {
    fn new(code: i32, message: impl Into<String>) -> Self {
        Failure {
            code,
            message: message.into(),
        }
    }
}

pub fn run(args: LockArgs) -> i32 {
    match lock_and_run(args) {
        Ok(code) => code,
        Err(f) => {
            eprintln!("locksmith lock: {}", f.message);
            f.code
        }
    }
}

fn lock_and_run(args: LockArgs) -> Result<i32, Failure> {
    let mut lock = Lock::new(&args.lockpath);
    if let Some(t) = seconds("--timeout", args.timeout, true)? {
        lock = lock.timeout(t);
    }
    if let Some(h) = seconds("--heartbeat", args.heartbeat, false)? {
        lock = lock.heartbeat(h);
    }
    let Some((program, rest)) = args.command.split_first() else {
        return Err(Failure::new(EXIT_ERROR, "no COMMAND given after --"));
    };

    let guard = lock.acquire().map_err(|e| {
        let code = if e.is_held() { EXIT_HELD } else { EXIT_ERROR };
        Failure::new(code, e.to_string())
    })?;

    // COMMAND inherits the locked descriptor: clear its close-on-exec flag.
    rustix::io::fcntl_setfd(guard.as_fd(), rustix::io::FdFlags::empty()).map_err(|e| {
        Failure::new(
            EXIT_ERROR,
            format!(
                "{}: cannot pass the lock to COMMAND: {e}",
                guard.path().display()
            ),
        )
    })?;

    let mut child = match Command::new(program).args(rest).spawn() {
        Ok(c) => c,
        Err(e) => {
            let code = if e.kind() == io::ErrorKind::NotFound {
                EXIT_NOT_FOUND
            } else {
                EXIT_CANNOT_EXECUTE
            };
            drop(guard);
            return Err(Failure::new(
                code,
                format!(
                    "cannot run {}: {}",
                    shown(program),
                    describe_spawn_error(&e)
                ),
            ));
        }
    };
    ignore_terminal_signals();
    let status = child
        .wait()
        .map_err(|e| Failure::new(EXIT_ERROR, format!("waiting for {}: {e}", shown(program))))?;
    let code = match (status.code(), status.signal()) {
        (Some(c), _) => c,
        (None, Some(sig)) => 128 + sig,
        (None, None) => EXIT_ERROR,
    };
    if let Err(e) = guard.release() {
        eprintln!("locksmith lock: warning: {e}");
    }
    Ok(code)
}

/// Validates a seconds option: finite, not negative (and not zero unless `zero_ok`).
fn seconds(flag: &str, value: Option<f64>, zero_ok: bool) -> Result<Option<Duration>, Failure> {
    let Some(v) = value else {
        return Ok(None);
    };
    let ok = v.is_finite() && (v > 0.0 || (zero_ok && v == 0.0));
    let d = ok.then(|| Duration::try_from_secs_f64(v).ok()).flatten();
    match d {
        Some(d) => Ok(Some(d)),
        None => Err(Failure::new(
            EXIT_ERROR,
            format!(
                "{flag} must be a number of seconds {} (got {v})",
                if zero_ok { ">= 0" } else { "> 0" }
            ),
        )),
    }
}

fn shown(program: &OsString) -> String {
    format!("\"{}\"", sanitize(&program.to_string_lossy()))
}

fn describe_spawn_error(e: &io::Error) -> String {
    match e.kind() {
        io::ErrorKind::NotFound => "command not found".into(),
        io::ErrorKind::PermissionDenied => "permission denied (is it executable?)".into(),
        _ => e.to_string(),
    }
}

/// While COMMAND runs, SIGINT and SIGQUIT from the terminal reach COMMAND too; this process
/// ignores them so that it outlives COMMAND and releases the lock.
fn ignore_terminal_signals() {
    for sig in [libc::SIGINT, libc::SIGQUIT] {
        // SAFETY: installing SIG_IGN has no handler code to run; called after COMMAND was
        // spawned, so COMMAND keeps the default dispositions.
        unsafe {
            libc::signal(sig, libc::SIG_IGN);
        }
    }
}
