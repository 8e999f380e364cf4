//! A failed `locksmith lock` is one line on stderr and exit status 2, COMMAND does not run,
//! and nothing is left behind: a directory we may not write to (as another user), a file
//! size limit that makes the record write fail. (The engine's own failure tests, on full,
//! inode-less and read-only file systems with both methods, are in its crate.)

use std::path::Path;
use std::process::Output;

use crate::util::engine::*;

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// Exit 2, one line on stderr containing `text`, COMMAND not run.
fn assert_failed(out: &Output, text: &str) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains(text), "wanted {text:?}: {err}");
    assert!(out.stdout.is_empty(), "COMMAND must not run");
}

/// `locksmith lock --timeout 1 PATH -- echo ran` run as uid 65534.
fn lock_as_nobody(path: &Path) -> Output {
    as_nobody(BIN).args(lock_once_args(path)).output().unwrap()
}

#[test]
fn permission_denied_leaves_nothing_behind() {
    if !can_run_as_nobody() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    use std::os::unix::fs::PermissionsExt;
    // Traversable and readable, not writable, for others.
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = lock_as_nobody(&dir.path().join("job.lock"));
    assert_failed(&out, "permission denied");
    assert_eq!(names(dir.path()), Vec::<String>::new());

    // A stale lock there: still nothing created, and the stale lock is not touched.
    let stale = engine_record(dead_pid() as i64, &[]);
    std::fs::write(dir.path().join("job.lock"), &stale).unwrap();
    std::fs::set_permissions(
        dir.path().join("job.lock"),
        std::fs::Permissions::from_mode(0o644),
    )
    .unwrap();
    let out = lock_as_nobody(&dir.path().join("job.lock"));
    assert_failed(&out, "permission denied");
    assert_eq!(names(dir.path()), vec!["job.lock".to_string()]);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("job.lock")).unwrap(),
        stale
    );
}

#[test]
fn a_failing_record_write_leaves_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("job.lock");
    let out = with_no_file_size(BIN)
        .args(lock_once_args(&path))
        .output()
        .unwrap();
    assert_failed(&out, "write the owner record");
    assert_eq!(names(dir.path()), Vec::<String>::new());
}
