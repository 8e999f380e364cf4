//! A failed acquisition leaves nothing behind: no lock file, no temporary file, no guard,
//! whatever failed and whichever method was used (kernel lock with an anonymous file, or the
//! fallback with a named temporary file). Failures are real: a full tmpfs, a read-only bind
//! mount, a directory we may not write to, a file size limit that makes the record write fail.
//! Each failure is one line on stderr and exit status 2.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use crate::util::engine::*;
use locksmith::engine::{ErrorKind, lock};

/// A file system mounted on a fresh directory for one test; unmounted when dropped.
struct Mount {
    dir: tempfile::TempDir,
    at: PathBuf,
}

impl Mount {
    /// `mount ARGS... DIR`; `None` (the caller skips) when mounting is not possible here.
    fn new(args: &[&str]) -> Option<Mount> {
        let dir = tempfile::tempdir().unwrap();
        let at = dir.path().join("m");
        std::fs::create_dir(&at).unwrap();
        let ok = Command::new("mount")
            .args(args)
            .arg(&at)
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            skip(format!("cannot mount {args:?} here (not root?)"));
            return None;
        }
        Some(Mount { dir, at })
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.at).status();
        let _ = &self.dir;
    }
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

fn lock_cli(path: &Path) -> Output {
    Command::new(BIN)
        .args(lock_once_args(path))
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// Exit 2, one line on stderr containing `text`, COMMAND not run.
fn assert_failed(out: &Output, text: &str) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains(text), "wanted {text:?}: {err}");
    assert!(out.stdout.is_empty(), "COMMAND must not run");
}

#[test]
fn a_full_disk_leaves_nothing_behind() {
    let Some(m) = Mount::new(&["-t", "tmpfs", "-o", "size=64k", "tmpfs"]) else {
        return;
    };
    // Fill it: every block taken.
    let filler = m.at.join("filler");
    let mut f = std::fs::File::create(&filler).unwrap();
    let chunk = vec![b'x'; 4096];
    while std::io::Write::write_all(&mut f, &chunk).is_ok() {}
    drop(f);
    let before = names(&m.at);

    let out = lock_cli(&m.at.join("job.lock"));
    assert_failed(&out, "No space left on device");
    assert_eq!(names(&m.at), before);

    for fallback in [false, true] {
        let e = lock(m.at.join("job.lock"))
            .force_fallback(fallback)
            .try_acquire()
            .unwrap_err();
        assert!(
            matches!(
                e.kind(),
                ErrorKind::Io {
                    op: "write the owner record",
                    ..
                }
            ),
            "fallback {fallback}: {e}"
        );
        assert_eq!(names(&m.at), before, "fallback {fallback}");
    }

    // Room again: the lock works, and still leaves nothing behind.
    std::fs::remove_file(&filler).unwrap();
    let out = lock_cli(&m.at.join("job.lock"));
    assert!(out.status.success(), "{out:?}");
    assert_eq!(names(&m.at), Vec::<String>::new());
}

#[test]
fn no_inode_left_leaves_nothing_behind() {
    let Some(m) = Mount::new(&["-t", "tmpfs", "-o", "size=1m,nr_inodes=4", "tmpfs"]) else {
        return;
    };
    // Take every inode that is left.
    let mut n = 0;
    while std::fs::write(m.at.join(format!("f{n}")), "").is_ok() {
        n += 1;
        assert!(n < 100, "nr_inodes had no effect");
    }
    let before = names(&m.at);
    let out = lock_cli(&m.at.join("job.lock"));
    assert_failed(&out, "create the lock file");
    assert_eq!(names(&m.at), before);
    let e = lock(m.at.join("job.lock"))
        .force_fallback(true)
        .try_acquire()
        .unwrap_err();
    assert!(e.to_string().contains("create the lock file"), "{e}");
    assert_eq!(names(&m.at), before);
}

#[test]
fn a_read_only_directory_leaves_nothing_behind() {
    let src = tempfile::tempdir().unwrap();
    // `mount --bind SRC DIR`, then make that bind mount read-only.
    let Some(m) = Mount::new(&["--bind", src.path().to_str().unwrap()]) else {
        return;
    };
    let ro = Command::new("mount")
        .args(["-o", "remount,bind,ro"])
        .arg(&m.at)
        .status()
        .is_ok_and(|s| s.success());
    if !require_that(ro, "cannot make a bind mount read-only here") {
        return;
    }
    let out = lock_cli(&m.at.join("job.lock"));
    assert_failed(&out, "read-only file system");
    for fallback in [false, true] {
        let e = lock(m.at.join("job.lock"))
            .force_fallback(fallback)
            .try_acquire()
            .unwrap_err();
        assert!(e.to_string().contains("read-only file system"), "{e}");
    }
    assert_eq!(names(src.path()), Vec::<String>::new());
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

/// Runs `try_acquire` on `path` in a helper child whose file size limit is zero, so writing
/// the record fails (EFBIG); its answer.
fn try_with_no_file_size(path: &Path, fallback: bool) -> String {
    let mode = if fallback { "try-fallback" } else { "try" };
    let mut cmd = with_no_file_size(std::env::current_exe().unwrap());
    as_child(&mut cmd, mode, path)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    let mut g = Group::spawn(cmd);
    let answers = Answers::of(&mut g);
    let a = answers.next(30);
    g.wait(30);
    a
}

#[test]
fn a_failing_record_write_leaves_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("job.lock");
    for fallback in [false, true] {
        let a = try_with_no_file_size(&path, fallback);
        assert!(a.starts_with("error "), "fallback {fallback}: {a}");
        assert!(
            a.contains("write the owner record"),
            "fallback {fallback}: {a}"
        );
        assert_eq!(
            names(dir.path()),
            Vec::<String>::new(),
            "fallback {fallback}"
        );
    }
    // Also through the command line.
    let out = with_no_file_size(BIN)
        .args(lock_once_args(&path))
        .output()
        .unwrap();
    assert_failed(&out, "write the owner record");
    assert_eq!(names(dir.path()), Vec::<String>::new());
}
