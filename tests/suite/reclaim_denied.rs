//! A lock this user cannot remove is told as such before anything is tried, by `--scan
//! --reclaim --dry-run` as by a real run and in the UI's dialog, never promised and then
//! refused: a sticky directory of another owner (locksmith run as uid 65534 via `setpriv`, the
//! lock and its directory root's), a read-only bind mount (in a mount namespace of its own,
//! via `unshare -m`), and an immutable lock (`chattr +i`, which stops root too). A lock beside
//! it that this user may remove is still offered, so the check refuses only what it must.

use std::ffi::OsStr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use crate::util::ui::Ui;
use crate::util::{self, DEADLINE, Env, assert_code, require, require_that, stdout};

const NOBODY: u32 = 65534;

/// `locksmith ARGS` as uid 65534, run to completion.
fn as_nobody(env: &Env, args: &[&OsStr]) -> Output {
    util::run_bounded(env.cmd_as_nobody(args), DEADLINE)
}

fn pidfile_of_a_dead_pid(path: &Path) -> PathBuf {
    std::fs::write(path, format!("{}\n", util::dead_pid())).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o644)).unwrap();
    path.to_path_buf()
}

fn line_about<'a>(text: &'a str, path: &Path) -> &'a str {
    let shown = path.to_str().unwrap();
    text.lines()
        .find(|l| (l.starts_with("kept ") || l.starts_with("would remove ")) && l.contains(shown))
        .unwrap_or_else(|| panic!("no reclaim line about {shown}:\n{text}"))
}

#[test]
fn a_sticky_directory_of_another_owner_is_told_by_the_dry_run_and_refused_alike() {
    if !util::can_run_as_nobody() {
        return;
    }
    let env = Env::new();
    let shared = util::sticky_dir(&env, "shared");
    // The state directory is the other user's own.
    let state = env.path().join("state");
    std::fs::create_dir(&state).unwrap();
    std::os::unix::fs::chown(&state, Some(NOBODY), Some(NOBODY)).unwrap();
    let roots = pidfile_of_a_dead_pid(&shared.join("roots.pid"));
    let own = pidfile_of_a_dead_pid(&shared.join("own.pid"));
    std::os::unix::fs::chown(&own, Some(NOBODY), Some(NOBODY)).unwrap();

    let dry = as_nobody(
        &env,
        &[
            "--scan".as_ref(),
            "--reclaim".as_ref(),
            "--dry-run".as_ref(),
            shared.as_os_str(),
        ],
    );
    assert_code(&dry, 1);
    let text = stdout(&dry);
    let told = line_about(&text, &roots);
    assert!(told.starts_with("kept "), "{text}");
    assert!(
        told.contains("cannot be removed by this user")
            && told.contains("(uid 65534)")
            && told.contains("is sticky"),
        "{told}"
    );
    assert!(
        line_about(&text, &own).starts_with("would remove "),
        "its own lock is removable: {text}"
    );

    // The real run refuses the same lock for the same reason, and removes its own.
    let real = as_nobody(
        &env,
        &["--scan".as_ref(), "--reclaim".as_ref(), shared.as_os_str()],
    );
    assert_code(&real, 1);
    let text = stdout(&real);
    assert_eq!(line_about(&text, &roots), told, "{text}");
    assert!(roots.exists(), "root's lock stays");
    assert!(!own.exists(), "its own lock is removed: {text}");
}

#[test]
fn a_read_only_mount_is_told_by_the_dry_run() {
    if !require_that(
        rustix::process::geteuid().is_root(),
        "needs root (to bind-mount read-only in a mount namespace)",
    ) || !require("unshare")
    {
        return;
    }
    let env = Env::new();
    let ro = env.path().join("ro");
    std::fs::create_dir(&ro).unwrap();
    let lock = pidfile_of_a_dead_pid(&ro.join("a.pid"));
    for dry in [true, false] {
        let mut c = Command::new("unshare");
        c.args(["-m", "--propagation", "private", "sh", "-c"])
            .arg(r#"mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" && shift && exec "$@""#)
            .arg("sh")
            .arg(&ro)
            .arg(util::BIN)
            .args(["--scan", "--reclaim"])
            .args(dry.then_some("--dry-run"))
            .arg(&ro)
            .env("XDG_STATE_HOME", env.path().join("state"))
            .env("XDG_CONFIG_HOME", env.path().join("config"))
            .current_dir(env.path())
            .stdin(Stdio::null());
        let out = util::run_bounded(c, DEADLINE);
        assert_code(&out, 1);
        let text = stdout(&out);
        let told = line_about(&text, &lock);
        assert!(
            told.starts_with("kept ")
                && told.contains("cannot be removed by this user")
                && told.contains("read-only mount"),
            "dry run {dry}: {told}"
        );
        assert!(lock.exists());
    }
    assert!(env.journal().is_empty(), "nothing was tried");
}

/// Takes the immutable attribute off again, whatever the test did.
struct Immutable(PathBuf);

impl Immutable {
    fn set(path: &Path) -> Option<Immutable> {
        let ok = Command::new("chattr")
            .arg("+i")
            .arg(path)
            .status()
            .is_ok_and(|s| s.success());
        ok.then(|| Immutable(path.to_path_buf()))
    }
}

impl Drop for Immutable {
    fn drop(&mut self) {
        let _ = Command::new("chattr").arg("-i").arg(&self.0).status();
    }
}

#[test]
fn an_immutable_lock_is_told_in_the_dry_run_and_the_ui_dialog_offers_no_yes_for_it() {
    if !require_that(
        rustix::process::geteuid().is_root(),
        "needs root (to make a file immutable)",
    ) || !require("chattr")
    {
        return;
    }
    let env = Env::new();
    let tree = env.path().join("tree");
    std::fs::create_dir(&tree).unwrap();
    let stuck = pidfile_of_a_dead_pid(&tree.join("stuck.pid"));
    let free = pidfile_of_a_dead_pid(&tree.join("free.pid"));
    let Some(_guard) = Immutable::set(&stuck) else {
        util::skip("chattr +i is not supported on this file system");
        return;
    };

    let dry = env.scan(&["--reclaim", "--dry-run"], &tree);
    assert_code(&dry, 1);
    let text = stdout(&dry);
    let told = line_about(&text, &stuck);
    assert!(
        told.starts_with("kept ")
            && told.contains("cannot be removed by this user")
            && told.contains("immutable"),
        "{told}"
    );
    assert!(
        line_about(&text, &free).starts_with("would remove "),
        "{text}"
    );

    let mut ui = Ui::start(&env, &[&tree], &[]);
    ui.wait_for("both listed as stale", |s| {
        ["stuck.pid", "free.pid"]
            .iter()
            .all(|n| s.lines().any(|l| l.contains(n) && l.contains("✗ stale")))
    });
    // D: the dialog leaves the immutable one out, says why, and reclaims the other.
    ui.send("D");
    let dialog = ui.wait_for("the dialog, checked", |s| s.contains("Left out: 1 lock"));
    assert!(dialog.contains("Reclaim this stale lock?"), "{dialog}");
    assert!(dialog.contains("immutable"), "{dialog}");
    assert!(
        dialog
            .lines()
            .any(|l| l.contains("[ No ]") && l.contains("Yes")),
        "the other lock is still offered: {dialog}"
    );
    ui.send("y");
    ui.wait_for("the free one removed", |_| !free.exists());
    assert!(stuck.exists());

    // d on the immutable one alone: no Yes, and y removes nothing.
    ui.wait_for("the free row gone", |s| {
        !s.lines()
            .any(|l| l.contains("pidfile") && l.contains("free.pid"))
    });
    ui.send("d");
    let dialog = ui.wait_for("the dialog that cannot", |s| {
        s.contains("This lock cannot be reclaimed") && s.contains("[ Close ]")
    });
    assert!(!dialog.contains("Yes"), "{dialog}");
    assert!(
        dialog.contains("cannot be removed by this user"),
        "{dialog}"
    );
    ui.send("y");
    ui.wait_for("nothing removed", |s| s.contains("nothing was removed"));
    assert!(stuck.exists());
    ui.send("q");
    assert_eq!(ui.wait_exit(), 0);
}
