//! Shared by the engine's integration tests: real processes in their own process groups
//! (killed on every path), waiting with deadlines, and hand-written owner records.

pub use super::files::*;
pub use super::process::*;
pub use super::{BIN, DEADLINE, hold_with_cli, lock_cmd, lock_once_args};

use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

/// Environment variable that turns a test binary into a helper child (see [`child_main`]).
pub const CHILD_ENV: &str = "LOCKSMITH_TEST_CHILD";

/// This host's facts as the engine writes them.
pub fn hostname() -> String {
    locksmith::probe::host::hostname()
}

pub fn boot_id() -> String {
    locksmith::probe::host::boot_id().expect("boot id")
}

/// A hand-written engine record (JSON object, newline-terminated). `fields` are extra or
/// overriding `"key": value` pairs in JSON syntax.
pub fn engine_record(pid: i64, fields: &[(&str, String)]) -> String {
    let mut map = serde_json::Map::new();
    map.insert("pid".into(), pid.into());
    map.insert("hostname".into(), hostname().into());
    map.insert("boot_id".into(), boot_id().into());
    map.insert(
        "created_at".into(),
        jiff::Timestamp::now().to_string().into(),
    );
    map.insert("kernel_lock".into(), true.into());
    map.insert("token".into(), "0123456789abcdef0123456789abcdef".into());
    map.insert("tool".into(), "locksmith/0.1.0".into());
    for (k, v) in fields {
        map.insert(
            (*k).into(),
            serde_json::from_str(v).expect("field value is JSON"),
        );
    }
    let mut s = serde_json::Value::Object(map).to_string();
    s.push('\n');
    s
}

/// RFC 3339 time `secs` seconds ago.
pub fn ago(secs: i64) -> String {
    let t = jiff::Timestamp::now() - jiff::SignedDuration::from_secs(secs);
    format!("\"{t}\"")
}

// ---- helper children: the test binary re-executed -------------------------------------------

/// The test through which helper children re-enter this binary.
const CHILD_ENTRY: &str = "util::engine::child_entry";

/// Helper children re-enter the test binary here; in a test run it does nothing.
#[test]
fn child_entry() {
    child_main();
}

/// Makes `cmd` (this test binary, or a wrapper that execs it as its last argument) run the
/// helper child `mode` on `path`.
pub fn as_child<'c>(cmd: &'c mut Command, mode: &str, path: &Path) -> &'c mut Command {
    cmd.args([CHILD_ENTRY, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, format!("{mode}\n{}", path.display()))
}

/// Spawns this test binary as a helper child running `mode` on `path` (see [`child_main`]).
/// Its stdin and stdout are pipes.
pub fn spawn_child(mode: &str, path: &Path) -> Group {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    as_child(&mut cmd, mode, path)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    Group::spawn(cmd)
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

/// Entry point of helper children: does nothing unless [`CHILD_ENV`] is set. Modes:
/// - `hold` / `hold-fallback`: take the lock, say `held <token>`, wait for stdin to close.
/// - `crash-fallback-leave-writer`: take the lock (fallback), pass the descriptor to a
///   `sleep 300` in a new process group, say `writer <pid>`, exit without releasing.
/// - `reclaim-pause`: `reclaim_with` the path; while holding the right to remove it, say
///   `paused` and wait for a line on stdin; then say `reclaimed` or `error <why>`, and wait for
///   stdin to close.
/// - `try` / `try-fallback`: `try_acquire` once; say `acquired` (and release) or `error <why>`.
/// - `stampede` / `stampede-fallback`: say `ready`; for each `go <unix_ms>` line, wait until that instant,
///   `try_acquire`, say `won` or `lost <why>`; after `won`, on `crash` exit without releasing.
pub fn child_main() {
    let Ok(spec) = std::env::var(CHILD_ENV) else {
        return;
    };
    let (mode, path) = spec.split_once('\n').expect("mode and path");
    let fallback = mode.contains("fallback");
    let lock = locksmith::engine::lock(path).force_fallback(fallback);
    match mode {
        "hold" | "hold-fallback" => {
            let g = lock.try_acquire().expect("acquire");
            say(&format!("held {}", g.token()));
            while read_command().is_some() {}
            drop(g);
        }
        "crash-fallback-leave-writer" => {
            use std::os::fd::AsFd;
            let g = lock.try_acquire().expect("acquire");
            rustix::io::fcntl_setfd(g.as_fd(), rustix::io::FdFlags::empty()).unwrap();
            let mut sleep = Command::new("sleep");
            sleep.arg("300").process_group(0);
            let child = sleep.spawn().expect("spawn sleep");
            say(&format!("writer {}", child.id()));
            std::process::exit(0); // a crash: no release
        }
        "reclaim-pause" => {
            let r = locksmith::engine::lock(Path::new(path)).reclaim_with(None, |_, _| {
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
        "try" | "try-fallback" => match lock.try_acquire() {
            Ok(g) => {
                say("acquired");
                drop(g);
            }
            Err(e) => say(&format!("error {e}")),
        },
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
