//! Shared by the engine's integration tests: hand-written owner records, ages of this boot,
//! and helper children (this test binary re-executed). What the app's test suite shares with
//! them comes from `locksmith-test-support`: real processes in their own process groups
//! (killed on every path), waiting with deadlines, and [`require`]: a test that needs a
//! program skips without it, and fails under CI (`CI` set), where `.ci/run` installs it;
//! [`sshd`] and [`sshfs`] make a real network file system.

#[allow(dead_code)]
mod records;
pub use locksmith_test_support::proc_locks::kernel_locked;
// Temp dirs, children on a leash, waits, requirements and skips, the ssh server and the sshfs
// mount: what the app's test suite uses as well.
pub use locksmith_test_support::*;
pub use records::*;

use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{ChildStdin, Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use locksmith_engine::Lock;

/// Environment variable that turns the test binary into a helper child (see [`child_main`]).
const CHILD_ENV: &str = "LOCKSMITH_ENGINE_TEST_CHILD";

/// The test through which helper children re-enter this binary.
const CHILD_ENTRY: &str = "util::child_entry";

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
