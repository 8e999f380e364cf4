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
//! acquirer, only once every process holding that descriptor is gone.
//!
//! Unlike `flock(1)`, this process forwards SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1 and
//! SIGUSR2 to COMMAND and keeps waiting for it, so a supervisor that signals only the process
//! it started (systemd's `KillMode=mixed`, `timeout(1)`, a shell's `kill $!`) stops the job,
//! and the lock is released once COMMAND has ended. A signal the terminal sends to the whole
//! foreground process group (Ctrl-C, Ctrl-\\) already reaches COMMAND and is not sent twice.

use std::ffi::OsString;
use std::io;
use std::os::fd::AsFd;
use std::os::unix::process::ExitStatusExt;
use std::process::Command;
use std::time::Duration;

use locksmith::engine;
use locksmith::text;

use super::Failure;
use crate::LockArgs;

/// `EX_TEMPFAIL`: the lock is held by someone else.
pub const EXIT_HELD: i32 = 75;
/// Any other error of ours.
pub const EXIT_ERROR: i32 = 2;
/// COMMAND was not found.
pub const EXIT_NOT_FOUND: i32 = 127;
/// COMMAND was found but could not be executed.
pub const EXIT_CANNOT_EXECUTE: i32 = 126;

pub fn run(args: LockArgs) -> i32 {
    match lock_and_run(args) {
        Ok(code) => code,
        Err(f) => {
            // Engine errors carry raw text (paths, host names, commands): escaped here.
            eprintln!("locksmith lock: {}", text::escape(&f.message));
            f.code
        }
    }
}

fn lock_and_run(args: LockArgs) -> Result<i32, Failure> {
    // A lock in the way is judged with the scanner's evidence (`locksmith::engine::lock`),
    // as `--scan` would judge it.
    let mut lock = engine::lock(&args.lockpath);
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

    // Handlers first: a signal that arrives while COMMAND starts is forwarded once it runs.
    forward::install();
    let mut child = match Command::new(program).args(rest).spawn() {
        Ok(c) => c,
        Err(e) => {
            forward::uninstall();
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
    forward::to(child.id());
    let status = child
        .wait()
        .map_err(|e| Failure::new(EXIT_ERROR, format!("waiting for {}: {e}", shown(program))))?;
    let code = match (status.code(), status.signal()) {
        (Some(c), _) => c,
        (None, Some(sig)) => 128 + sig,
        (None, None) => EXIT_ERROR,
    };
    if let Err(e) = guard.release() {
        eprintln!("locksmith lock: warning: {}", text::escape(&e.to_string()));
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
    format!("\"{}\"", program.to_string_lossy())
}

fn describe_spawn_error(e: &io::Error) -> String {
    match e.kind() {
        io::ErrorKind::NotFound => "command not found".into(),
        io::ErrorKind::PermissionDenied => "permission denied (is it executable?)".into(),
        _ => e.to_string(),
    }
}

/// Forwarding of the signals a supervisor sends to COMMAND (see the module docs).
mod forward {
    use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};

    /// The signals forwarded.
    pub const SIGNALS: [libc::c_int; 6] = [
        libc::SIGTERM,
        libc::SIGINT,
        libc::SIGHUP,
        libc::SIGQUIT,
        libc::SIGUSR1,
        libc::SIGUSR2,
    ];

    /// COMMAND's PID once it runs (0 before).
    static CHILD: AtomicI32 = AtomicI32::new(0);
    /// Signals received before COMMAND ran (a bit per signal number).
    static PENDING: AtomicU64 = AtomicU64::new(0);

    extern "C" fn handler(sig: libc::c_int, info: *mut libc::siginfo_t, _: *mut libc::c_void) {
        // SAFETY: the kernel passes a valid siginfo to an SA_SIGINFO handler.
        let code = unsafe { (*info).si_code };
        // Sent by the terminal to the whole process group: COMMAND, in that group too, has
        // its own copy already.
        if code == libc::SI_KERNEL {
            return;
        }
        let child = CHILD.load(Ordering::SeqCst);
        if child > 0 {
            // SAFETY: kill(2) is async-signal-safe.
            unsafe {
                libc::kill(child, sig);
            }
        } else {
            PENDING.fetch_or(1 << sig, Ordering::SeqCst);
            // COMMAND may have started meanwhile, after `to` took the pending set.
            if CHILD.load(Ordering::SeqCst) > 0 {
                flush();
            }
        }
    }

    /// Forwards the pending signals to COMMAND (each taken once, by whoever swaps first).
    fn flush() {
        let pid = CHILD.load(Ordering::SeqCst);
        let pending = PENDING.swap(0, Ordering::SeqCst);
        for sig in SIGNALS {
            if pending & (1 << sig) != 0 {
                // SAFETY: kill(2) is async-signal-safe; COMMAND is not reaped yet.
                unsafe {
                    libc::kill(pid, sig);
                }
            }
        }
    }

    /// Catches the signals (a caught signal is reset to its default in COMMAND by exec).
    pub fn install() {
        for sig in SIGNALS {
            // SAFETY: a zeroed sigaction with a handler that only calls async-signal-safe
            // functions and touches atomics; SA_RESTART keeps waitpid going.
            unsafe {
                let mut sa: libc::sigaction = std::mem::zeroed();
                sa.sa_sigaction = handler as *const () as usize;
                sa.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
                libc::sigemptyset(&mut sa.sa_mask);
                libc::sigaction(sig, &sa, std::ptr::null_mut());
            }
        }
    }

    /// Back to the default dispositions (COMMAND could not be started).
    pub fn uninstall() {
        for sig in SIGNALS {
            // SAFETY: restoring SIG_DFL.
            unsafe {
                libc::signal(sig, libc::SIG_DFL);
            }
        }
    }

    /// COMMAND runs as `pid`: forward from now on, and what came before.
    pub fn to(pid: u32) {
        CHILD.store(pid as i32, Ordering::SeqCst);
        flush();
    }
}
