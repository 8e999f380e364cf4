//! `locksmith lock [--timeout SECS] [--heartbeat SECS] LOCKPATH -- COMMAND [ARGS...]`: acquire
//! the lock with the engine, run COMMAND, release, and exit with COMMAND's status.
//!
//! Exit status: COMMAND's own status, or 128+N if a signal N killed it; **75** when the lock
//! is held (live, or not provably stale) and the timeout passed (one line on stderr names the
//! holder); **127** when COMMAND is not found and **126** when it cannot be executed (as a
//! shell does); **2** for every other error (bad argument, missing directory, permission
//! denied, a path that is a directory, ...).
//!
//! Like `flock(1)`, COMMAND inherits a descriptor that keeps the lock held, so the lock stays
//! held while COMMAND runs even if this process is killed; it becomes stale, and is reclaimed
//! by the next acquirer, only once every process holding it is gone. Unlike `flock(1)`'s, that
//! descriptor is read-only wherever the lock is a kernel lock
//! ([`locksmith_engine::LockGuard::for_child`]): COMMAND, and whatever it runs after giving up
//! its privileges, can read the owner record but never rewrite it (a record rewritten by a
//! job would leave, after a crash, a lock nobody can judge). Only on a network file system,
//! where no kernel lock exists, does it get the writable descriptor that keeps the lock live
//! there.
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
use rustix::process::{Pid, WaitId, WaitIdOptions, waitid};

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

    // COMMAND inherits a descriptor that keeps the lock held (read-only where the lock is a
    // kernel lock): its close-on-exec flag cleared. Ours stays ours.
    let cannot_pass = |e: &dyn std::fmt::Display| {
        Failure::new(
            EXIT_ERROR,
            format!(
                "{}: cannot pass the lock to COMMAND: {e}",
                guard.path().display()
            ),
        )
    };
    let for_child = guard.for_child().map_err(|e| cannot_pass(&e))?;
    rustix::io::fcntl_setfd(for_child.as_fd(), rustix::io::FdFlags::empty())
        .map_err(|e| cannot_pass(&e))?;

    // Handlers first: a signal that arrives while COMMAND starts is forwarded once it runs.
    let forwarder = forward::Forwarder::install()
        .map_err(|e| Failure::new(EXIT_ERROR, format!("cannot catch signals to forward: {e}")))?;
    let mut child = match Command::new(program).args(rest).spawn() {
        Ok(c) => c,
        Err(e) => {
            drop(forwarder);
            let code = if e.kind() == io::ErrorKind::NotFound {
                EXIT_NOT_FOUND
            } else {
                EXIT_CANNOT_EXECUTE
            };
            drop(for_child);
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
    // Only COMMAND keeps it: ours is the guard's.
    drop(for_child);
    forwarder.to(child.id());
    // COMMAND's end is waited for without reaping it: its PID stays its own (no signal can
    // reach another process by it) until forwarding has stopped.
    if let Some(pid) = i32::try_from(child.id()).ok().and_then(Pid::from_raw) {
        let _ = waitid(
            WaitId::Pid(pid),
            WaitIdOptions::EXITED | WaitIdOptions::NOWAIT,
        );
    }
    drop(forwarder);
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

/// Forwarding of the signals a supervisor sends to COMMAND (see the module docs), by
/// `signal-hook`: its handler only records each signal with its origin (`si_code`, the sender),
/// and a thread of ours forwards it.
mod forward {
    use std::sync::{Arc, Mutex};

    use rustix::process::{Pid, Signal, kill_process};
    use signal_hook::consts::{SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2};
    use signal_hook::iterator::exfiltrator::WithOrigin;
    use signal_hook::iterator::{Handle, SignalsInfo};
    use signal_hook::low_level::siginfo::{Cause, Origin};

    /// The signals forwarded.
    pub const SIGNALS: [libc::c_int; 6] = [SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2];

    /// Where the signals go: nowhere yet (they wait), or COMMAND.
    #[derive(Debug, Default)]
    enum Target {
        #[default]
        Starting,
        Runs(Pid),
    }

    #[derive(Debug, Default)]
    struct State {
        target: Target,
        /// Signals received before COMMAND ran, in order.
        pending: Vec<libc::c_int>,
    }

    /// The signals caught and forwarded, until it is dropped (then they are caught and
    /// ignored: this process is about to exit).
    pub struct Forwarder {
        state: Arc<Mutex<State>>,
        handle: Handle,
        thread: Option<std::thread::JoinHandle<()>>,
    }

    fn send(pid: Pid, sig: libc::c_int) {
        if let Some(sig) = Signal::from_named_raw(sig) {
            // COMMAND may have just ended: nothing to do then.
            let _ = kill_process(pid, sig);
        }
    }

    impl Forwarder {
        /// Catches the signals (a caught signal is reset to its default in COMMAND by exec).
        pub fn install() -> std::io::Result<Forwarder> {
            let mut signals = SignalsInfo::<WithOrigin>::new(SIGNALS)?;
            let handle = signals.handle();
            let state = Arc::new(Mutex::new(State::default()));
            let shared = state.clone();
            let thread = std::thread::Builder::new()
                .name("signals".into())
                .spawn(move || {
                    for origin in signals.forever() {
                        forward(&shared, &origin);
                    }
                })?;
            Ok(Forwarder {
                state,
                handle,
                thread: Some(thread),
            })
        }

        /// COMMAND runs as `pid`: forward from now on, and what came before.
        pub fn to(&self, pid: u32) {
            let Some(pid) = i32::try_from(pid).ok().and_then(Pid::from_raw) else {
                return;
            };
            let mut s = lock(&self.state);
            s.target = Target::Runs(pid);
            for sig in std::mem::take(&mut s.pending) {
                send(pid, sig);
            }
        }
    }

    impl Drop for Forwarder {
        fn drop(&mut self) {
            self.handle.close();
            if let Some(t) = self.thread.take() {
                let _ = t.join();
            }
        }
    }

    fn lock(m: &Mutex<State>) -> std::sync::MutexGuard<'_, State> {
        m.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// One signal received: sent by the terminal to the whole process group (the kernel is
    /// its sender, `SI_KERNEL`), COMMAND, in that group too, has its own copy already; sent
    /// by a process, it goes to COMMAND (or waits for it to run).
    fn forward(state: &Mutex<State>, origin: &Origin) {
        if origin.cause == Cause::Kernel {
            return;
        }
        let mut s = lock(state);
        match s.target {
            Target::Starting => s.pending.push(origin.signal),
            Target::Runs(pid) => send(pid, origin.signal),
        }
    }
}
