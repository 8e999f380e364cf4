//! A failed acquisition leaves nothing behind: no lock file, no temporary file, no guard,
//! whatever failed and whichever method was used (kernel lock with an anonymous file, or the
//! fallback with a named temporary file). Failures are real: a full tmpfs, one without a free
//! inode, a read-only bind mount, a file size limit that makes the record write fail.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::util::*;
use locksmith_engine::{ErrorKind, Lock};

/// A file system mounted on a fresh directory for one test; unmounted when dropped.
struct Mount {
    _dir: tempfile::TempDir,
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
        Some(Mount { _dir: dir, at })
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.at).status();
    }
}

/// Both methods fail to take the lock at `path` with an error saying `text`, and leave the
/// directory as it was.
fn both_fail_leaving_nothing(path: &Path, text: &str) {
    let dir = path.parent().unwrap();
    let before = names(dir);
    for fallback in [false, true] {
        let e = Lock::new(path)
            .force_fallback(fallback)
            .try_acquire()
            .unwrap_err();
        assert!(e.to_string().contains(text), "fallback {fallback}: {e}");
        assert_eq!(names(dir), before, "fallback {fallback}");
    }
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
    let path = m.at.join("job.lock");
    both_fail_leaving_nothing(&path, "No space left on device");
    for fallback in [false, true] {
        let e = Lock::new(&path)
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
    }

    // Room again: the lock works, and still leaves nothing behind.
    std::fs::remove_file(&filler).unwrap();
    for fallback in [false, true] {
        let g = Lock::new(&path)
            .force_fallback(fallback)
            .try_acquire()
            .unwrap();
        g.release().unwrap();
        assert_eq!(names(&m.at), Vec::<String>::new(), "fallback {fallback}");
    }
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
    both_fail_leaving_nothing(&m.at.join("job.lock"), "create the lock file");
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
    both_fail_leaving_nothing(&m.at.join("job.lock"), "read-only file system");
    assert_eq!(names(src.path()), Vec::<String>::new());
}

/// Runs `try_acquire` on `path` in a helper child whose file size limit is zero, so writing
/// the record fails (EFBIG); its answer.
pub fn try_with_no_file_size(path: &Path, fallback: bool) -> String {
    let mode = if fallback { "try-fallback" } else { "try" };
    let mut cmd = with_no_file_size(&mut child(mode, path));
    cmd.stdin(Stdio::null())
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
}
