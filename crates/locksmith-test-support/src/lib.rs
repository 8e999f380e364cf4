//! What the tests of the workspace share, the app's integration suite (`tests/suite`) and the
//! engine crate's (`crates/locksmith-engine/tests`): temp dirs, children in process groups of
//! their own that are killed and reaped on every path, waits with deadlines, requirements
//! (a test that lacks a program or a capability skips, and fails under CI), the skip log, the
//! timing log, and a real network file system (an ssh server and an sshfs mount).
//!
//! Invariants: nothing here outlives the test that made it (a [`Group`], a [`Guard`], an
//! [`sshd::Sshd`] or an [`sshfs::Sshfs`] stops what it started when dropped, on every path,
//! including a failing assertion); every wait has a deadline and fails the test, naming what
//! it waited for, when it passes; under CI (`CI` set) nothing is skipped.
//!
//! It knows nothing of locksmith itself: what judges locks or reads reports stays with the
//! suite (`tests/suite/util`).

pub mod proc_locks;
mod process;
mod skip;
pub mod sshd;
pub mod sshfs;
mod timing;
mod wait;

pub use process::*;
pub use skip::*;
pub use timing::{TIME_LOG, record_time};
pub use wait::*;

/// A new temp dir (`$TMPDIR/locksmith-test-XXXXXX`), removed when dropped.
pub fn temp_dir() -> tempfile::TempDir {
    record_time();
    tempfile::Builder::new()
        .prefix("locksmith-test-")
        .tempdir()
        .expect("make a temp dir")
}

/// Where `program` is on PATH.
pub fn which(program: &str) -> Option<std::path::PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join(program))
        .find(|p| p.is_file())
}

/// The directory of the test logs: `tmp` in the target directory the running test binary was
/// built in (the nearest directory above it that holds cargo's `CACHEDIR.TAG`), else the
/// system's temp dir.
fn log_dir() -> std::path::PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|exe| {
            exe.ancestors()
                .find(|d| d.join("CACHEDIR.TAG").is_file())
                .map(|d| d.join("tmp"))
        })
        .unwrap_or_else(std::env::temp_dir)
}

/// Appends one line to the log at `path` (made when missing), in one `O_APPEND` write so
/// that lines of parallel tests and processes do not mix; a log that cannot be written is
/// left alone.
fn append_line(path: &std::path::Path, line: &str) {
    use std::io::Write;
    if let Some(dir) = path.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    let _ = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .and_then(|mut f| f.write_all(line.as_bytes()));
}
