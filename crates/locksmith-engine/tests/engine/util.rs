//! Shared by the engine's integration tests: real processes in their own process groups
//! (killed on every path), waiting with deadlines, hand-written owner records, helper children
//! (this test binary re-executed), and [`require`]: a test that needs a program skips without
//! it, and fails under CI (`CI` set), where `.ci/run` installs it. [`sshd`] and [`sshfs`] make
//! a real network file system (the app's test suite uses them too).

// The app's test suite uses these too, more of them than the engine's tests do.
#[allow(dead_code)]
pub mod proc_locks;
#[allow(dead_code)]
mod records;
#[allow(dead_code)]
pub mod sshd;
#[allow(dead_code)]
pub mod sshfs;
pub use proc_locks::kernel_locked;
pub use records::*;

use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use locksmith_engine::Lock;

/// Environment variable that turns the test binary into a helper child (see [`child_main`]).
const CHILD_ENV: &str = "LOCKSMITH_ENGINE_TEST_CHILD";

/// The test through which helper children re-enter this binary.
const CHILD_ENTRY: &str = "util::child_entry";

// ---- skips -----------------------------------------------------------------------------------

/// Whether `program` is installed. A missing one skips the test through [`skip`]: a failure
/// under CI.
pub fn require(program: &str) -> bool {
    let found = which(program).is_some();
    if !found {
        skip(format!(
            "`{program}` is not installed (.ci/run installs it)"
        ));
    }
    found
}

/// Where `program` is on PATH.
pub fn which(program: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join(program))
        .find(|p| p.is_file())
}

/// Whether the test may go on (a capability: root, a mount, a namespace); otherwise skips it
/// through [`skip`], saying `why`.
pub fn require_that(ok: bool, why: impl std::fmt::Display) -> bool {
    if !ok {
        skip(why);
    }
    ok
}

/// Skips the test because of `why`. Under CI (`CI` set) nothing may be left out: this fails
/// the test. Otherwise it says so on stderr and appends a line to the skip log
/// (`$LOCKSMITH_TEST_SKIP_LOG`, else `skipped-tests.log` in the target directory's `tmp/`),
/// which `.ci/run` sums up at the end of a run.
pub fn skip(why: impl std::fmt::Display) {
    assert!(
        std::env::var_os("CI").is_none(),
        "nothing may be skipped under CI: {why}"
    );
    let test = std::thread::current()
        .name()
        .unwrap_or("(unnamed thread)")
        .to_string();
    eprintln!("SKIPPED: {test}: {why}");
    let log = std::env::var_os("LOCKSMITH_TEST_SKIP_LOG")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_TARGET_TMPDIR")).join("skipped-tests.log"));
    let line = format!("{test}\tskipped: {}\n", why.to_string().replace('\n', " "));
    // One write of one short line with O_APPEND: lines of parallel tests do not mix.
    let _ = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log)
        .and_then(|mut f| f.write_all(line.as_bytes()));
}

// ---- processes -------------------------------------------------------------------------------

/// A child leading a process group of its own, SIGKILLed with its whole group on every path.
pub struct Group {
    pub child: Child,
    reaped: bool,
}

impl Group {
    /// Spawns `cmd` as the leader of a new process group.
    pub fn spawn(mut cmd: Command) -> Group {
        cmd.process_group(0);
        let child = cmd.spawn().unwrap_or_else(|e| panic!("spawn {cmd:?}: {e}"));
        Group {
            child,
            reaped: false,
        }
    }

    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// SIGKILLs the whole group, reaps the leader, and waits until no live member of the
    /// group is left, so every descriptor it held is closed: what a crash leaves behind.
    pub fn kill(&mut self) {
        self.kill_and_reap();
        let pgid = self.pid();
        wait_until("the process group to die", || group_members(pgid) == 0);
    }

    fn kill_and_reap(&mut self) {
        if let Some(p) = rustix::process::Pid::from_raw(self.pid()) {
            let _ = rustix::process::kill_process_group(p, rustix::process::Signal::KILL);
        }
        if !self.reaped {
            let _ = self.child.kill();
            let _ = self.child.wait();
            self.reaped = true;
        }
    }

    /// Waits for the leader to exit on its own (for at most `secs` seconds), returning its
    /// status.
    pub fn wait(&mut self, secs: u64) -> std::process::ExitStatus {
        let deadline = Instant::now() + Duration::from_secs(secs);
        loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                self.reaped = true;
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for the child to exit"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    pub fn stdin(&mut self) -> ChildStdin {
        self.child.stdin.take().expect("piped stdin")
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        self.kill_and_reap();
        if !std::thread::panicking() {
            let deadline = Instant::now() + Duration::from_secs(10);
            while group_members(self.pid()) > 0 && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(10));
            }
        }
    }
}

/// `(state, pgrp)` of a process from `/proc/<pid>/stat`.
pub fn proc_state(pid: i32) -> Option<(char, i32)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 2..];
    let mut f = rest.split_ascii_whitespace();
    let state = f.next()?.chars().next()?;
    let pgrp = f.nth(1)?.parse().ok()?;
    Some((state, pgrp))
}

/// How many live (non-zombie) processes are in process group `pgid`.
fn group_members(pgid: i32) -> usize {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| matches!(proc_state(*pid), Some((s, g)) if g == pgid && s != 'Z' && s != 'X'))
        .count()
}

/// SIGKILLs process group `pgid`.
pub fn kill_group(pgid: i32) {
    if let Some(p) = rustix::process::Pid::from_raw(pgid) {
        let _ = rustix::process::kill_process_group(p, rustix::process::Signal::KILL);
    }
}

/// Whether process `pid` exists and is not a zombie.
pub fn alive(pid: i32) -> bool {
    matches!(proc_state(pid), Some((s, _)) if s != 'Z' && s != 'X')
}

/// A PID that was just used and is gone (reaped).
pub fn dead_pid() -> i32 {
    let mut c = Command::new("true").spawn().expect("spawn true");
    let pid = c.id() as i32;
    c.wait().unwrap();
    pid
}

/// Polls `ok` until it holds, failing the test after 60 seconds.
pub fn wait_until(what: &str, mut ok: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut pause = Duration::from_millis(5);
    while !ok() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(50));
    }
}

// ---- files -----------------------------------------------------------------------------------

/// Seconds kept between this host's boot and an mtime meant to be of this boot: more than the
/// judge's clock slack and `btime`'s rounding to the second.
const BOOT_MARGIN_S: u64 = 10;

/// Sets a path's mtime (and atime) `secs` seconds into the past, in this boot (an empty lock
/// file from before it is proven stale): fails the test, naming the uptime, on a machine
/// booted too recently for that.
#[track_caller]
pub fn age(path: &Path, secs: u64) {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
    let boot = locksmith_sys::host::boot_time().expect("the boot time (btime in /proc/stat)");
    let up = now.as_secs() as i64 - boot;
    assert!(
        secs as i64 + BOOT_MARGIN_S as i64 <= up,
        "an mtime {secs} s ago would not be of this boot: this host booted {up} s ago \
         (btime {boot}), and {BOOT_MARGIN_S} s are kept from the boot"
    );
    let d = now - Duration::from_secs(secs);
    let t = rustix::fs::Timespec {
        tv_sec: d.as_secs() as i64,
        tv_nsec: d.subsec_nanos() as _,
    };
    let times = rustix::fs::Timestamps {
        last_access: t,
        last_modification: t,
    };
    rustix::fs::utimensat(
        rustix::fs::CWD,
        path,
        &times,
        rustix::fs::AtFlags::SYMLINK_NOFOLLOW,
    )
    .unwrap();
}

/// The names in a directory, sorted.
pub fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// `cmd` run with a file size limit of zero (SIGXFSZ ignored): every write to a regular file
/// fails with EFBIG, as on a full disk.
pub fn with_no_file_size(cmd: &mut Command) -> Command {
    let mut c = Command::new("sh");
    c.arg("-c")
        .arg("trap '' XFSZ; ulimit -f 0; exec \"$@\"")
        .arg("sh")
        .arg(cmd.get_program())
        .args(cmd.get_args());
    for (k, v) in cmd.get_envs() {
        match v {
            Some(v) => c.env(k, v),
            None => c.env_remove(k),
        };
    }
    c
}

// ---- helper children: the test binary re-executed --------------------------------------------

/// Helper children re-enter the test binary here; in a test run it does nothing.
#[test]
fn child_entry() {
    child_main();
}

/// Makes `cmd` (this test binary, or a wrapper that execs it with these arguments) run the
/// helper child `mode` on `path` (see [`child_main`]).
pub fn as_child<'c>(cmd: &'c mut Command, mode: &str, path: &Path) -> &'c mut Command {
    cmd.args([CHILD_ENTRY, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, format!("{mode}\n{}", path.display()))
}

/// This test binary as a helper child running `mode` on `path`, not yet started.
pub fn child(mode: &str, path: &Path) -> Command {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    as_child(&mut cmd, mode, path);
    cmd
}

/// Spawns this test binary as a helper child running `mode` on `path` (see [`child_main`]).
/// Its stdin and stdout are pipes.
pub fn spawn_child(mode: &str, path: &Path) -> Group {
    let mut cmd = child(mode, path);
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    Group::spawn(cmd)
}

/// Spawns a helper child that holds the lock at `path` (`hold`, `hold-fallback`, ...) and
/// waits until it says so; it releases when its stdin closes ([`Held::release`]) or when it
/// is killed.
pub fn hold(mode: &str, path: &Path) -> Held {
    let mut group = spawn_child(mode, path);
    let answers = Answers::of(&mut group);
    let said = answers.next(30);
    assert!(said.starts_with("held "), "{mode}: {said}");
    Held {
        stdin: Some(group.stdin()),
        said,
        group,
        _answers: answers,
    }
}

/// A helper child holding a lock (see [`hold`]).
pub struct Held {
    pub group: Group,
    stdin: Option<ChildStdin>,
    /// What it said once it held the lock: `held <token> ...`.
    pub said: String,
    /// Kept so that the child can go on writing to its stdout.
    _answers: Answers,
}

impl Held {
    pub fn pid(&self) -> i32 {
        self.group.pid()
    }

    /// Releases the lock normally (stdin closes) and waits for the child to exit.
    pub fn release(mut self) {
        drop(self.stdin.take());
        assert!(self.group.wait(30).success(), "the holder failed");
    }
}

/// The answers of a helper child: its stdout read on a thread, so waiting for an answer has a
/// deadline.
pub struct Answers(std::sync::mpsc::Receiver<String>);

impl Answers {
    pub fn of(g: &mut Group) -> Answers {
        let out = g.child.stdout.take().expect("piped stdout");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines() {
                let Ok(line) = line else { break };
                // libtest may print "test name ... " before our text on the same line.
                if let Some(at) = line.find("CHILD:")
                    && tx.send(line[at + 6..].trim().to_string()).is_err()
                {
                    break;
                }
            }
        });
        Answers(rx)
    }

    /// The next answer, waiting at most `secs` seconds.
    pub fn next(&self, secs: u64) -> String {
        self.0
            .recv_timeout(Duration::from_secs(secs))
            .expect("the helper child did not answer in time")
    }
}

fn say(s: &str) {
    let mut out = std::io::stdout().lock();
    writeln!(out, "CHILD:{s}").unwrap();
    out.flush().unwrap();
}

fn read_command() -> Option<String> {
    let mut line = String::new();
    match std::io::stdin().read_line(&mut line) {
        Ok(0) | Err(_) => None,
        Ok(_) => Some(line.trim().to_string()),
    }
}

/// Entry point of helper children: does nothing unless [`CHILD_ENV`] is set. Every mode uses
/// `locksmith_engine::Lock` (the `Direct` witness). Modes:
/// - `hold` / `hold-fallback`: take the lock, say `held <token>`, wait for stdin to close.
/// - `hold-heartbeat`: the same with a heartbeat every 300 ms.
/// - `hold-with-child`: take the lock, start `sleep 600` (same process group) that inherits
///   the locked descriptor, say `held <token> <sleep pid>`, wait for stdin to close.
/// - `crash-fallback-leave-writer`: take the lock (fallback), pass the descriptor to a
///   `sleep 300` in a new process group, say `writer <pid>`, exit without releasing.
/// - `try` / `try-fallback`: `try_acquire` once; say `acquired` (and release) or `error <why>`.
/// - `acquire`: `acquire`, waiting as long as it takes; say `acquired`, release, exit.
/// - `section`: `acquire`, then run `sh -c "$LOCKSMITH_ENGINE_TEST_SECTION"` in the current
///   directory while holding the lock; release, and exit with the shell's status.
/// - `reclaim-pause`: `reclaim_with` the path; while holding the right to remove it, say
///   `paused` and wait for a line on stdin; then say `reclaimed` or `error <why>`, and wait for
///   stdin to close.
/// - `stampede` / `stampede-fallback`: say `ready`; for each `go <unix_ms>` line, wait until
///   that instant, `try_acquire`, say `won` or `lost <why>`; after `won`, on `crash` exit
///   without releasing.
pub fn child_main() {
    let Ok(spec) = std::env::var(CHILD_ENV) else {
        return;
    };
    let (mode, path) = spec.split_once('\n').expect("mode and path");
    let fallback = mode.contains("fallback");
    let lock = Lock::new(path).force_fallback(fallback);
    match mode {
        "hold" | "hold-fallback" | "hold-heartbeat" => {
            let lock = if mode == "hold-heartbeat" {
                lock.heartbeat(Duration::from_millis(300))
            } else {
                lock
            };
            let g = lock.try_acquire().expect("acquire");
            say(&format!("held {}", g.token()));
            while read_command().is_some() {}
            drop(g);
        }
        "hold-with-child" => {
            use std::os::fd::AsFd;
            let g = lock.try_acquire().expect("acquire");
            rustix::io::fcntl_setfd(g.as_fd(), rustix::io::FdFlags::empty()).unwrap();
            let mut sleep = Command::new("sleep")
                .arg("600")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .spawn()
                .expect("spawn sleep");
            say(&format!("held {} {}", g.token(), sleep.id()));
            while read_command().is_some() {}
            drop(g);
            let _ = sleep.kill();
            let _ = sleep.wait();
        }
        "crash-fallback-leave-writer" => {
            use std::os::fd::AsFd;
            let g = lock.try_acquire().expect("acquire");
            rustix::io::fcntl_setfd(g.as_fd(), rustix::io::FdFlags::empty()).unwrap();
            let mut sleep = Command::new("sleep");
            sleep
                .arg("300")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .process_group(0);
            let child = sleep.spawn().expect("spawn sleep");
            say(&format!("writer {}", child.id()));
            std::process::exit(0); // a crash: no release
        }
        "try" | "try-fallback" => match lock.try_acquire() {
            Ok(g) => {
                say("acquired");
                drop(g);
            }
            Err(e) => say(&format!("error {e}")),
        },
        "acquire" => {
            let g = lock.acquire().expect("acquire");
            say("acquired");
            g.release().expect("release");
        }
        "section" => {
            let script = std::env::var("LOCKSMITH_ENGINE_TEST_SECTION").expect("the section");
            let g = lock.acquire().expect("acquire");
            let status = Command::new("sh")
                .args(["-c", &script])
                .status()
                .expect("run sh");
            g.release().expect("release");
            std::process::exit(status.code().unwrap_or(1));
        }
        "reclaim-pause" => {
            let r = lock.reclaim_with(None, |_, _| {
                say("paused");
                read_command();
                Ok(())
            });
            match r {
                Ok(_) => say("reclaimed"),
                Err(e) => say(&format!("error {e}")),
            }
            while read_command().is_some() {}
        }
        "stampede" | "stampede-fallback" => {
            let mut held = None;
            say("ready");
            while let Some(cmd) = read_command() {
                if let Some(at) = cmd.strip_prefix("go ") {
                    let at: i64 = at.parse().unwrap();
                    while jiff::Timestamp::now().as_millisecond() < at {
                        std::hint::spin_loop();
                    }
                    match lock.try_acquire() {
                        Ok(g) => {
                            held = Some(g);
                            say("won");
                        }
                        Err(e) if e.is_held() => say(&format!("lost {e}")),
                        Err(e) => say(&format!("error {e}")),
                    }
                } else if cmd == "crash" {
                    assert!(held.is_some(), "told to crash without holding");
                    std::process::exit(0); // the guard is never dropped: a crash
                }
            }
        }
        other => panic!("unknown helper mode {other}"),
    }
    std::process::exit(0);
}
