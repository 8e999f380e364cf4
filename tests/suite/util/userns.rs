//! A local user's own "container", made with no privilege at all: user, mount and PID
//! namespaces created by uid 65534 with `unshare --user --map-root-user --mount --pid --fork`,
//! a busybox root of its own (owned by that user) entered with `chroot`, and the directories it
//! chose bind-mounted into it. Inside, the user is "root" of its namespaces: it writes what it
//! likes in its `/etc/hostname`, and mounts any directory it may read anywhere in its root.
//!
//! [`UserNamespace::start`] returns `Err` with the reason when this cannot run here (not root,
//! so `setpriv` cannot become uid 65534; no busybox; unprivileged user namespaces disabled).

use std::os::unix::fs::{PermissionsExt, chown};
use std::path::Path;
use std::process::{Command, Stdio};

use super::podman::busybox_root;
use super::quiet::{self, Fact, Hold};
use super::{Guard, as_nobody, wait_for};

const NOBODY: u32 = 65534;

/// The namespaces, alive until dropped (their PID 1 is killed with them).
pub struct UserNamespace {
    _guard: Guard,
    /// A root of its own, and a PID namespace ([`Fact::Container`]), held until its processes
    /// are killed (declared after them, so dropped after them).
    _fact: Hold,
    /// Host PID of its PID 1.
    pub init: i32,
}

impl UserNamespace {
    /// [`UserNamespace::start`], or `None` with the reason printed when it cannot run here.
    /// Under CI, where the tests run as root, it must.
    pub fn start_or_skip(
        root: &Path,
        binds: &[(&Path, &str)],
        script: &str,
        ready: Option<&str>,
    ) -> Option<UserNamespace> {
        match UserNamespace::start(root, binds, script, ready) {
            Ok(ns) => Some(ns),
            Err(why) => {
                super::skip(format!("a user's namespaces are not possible here: {why}"));
                None
            }
        }
    }

    /// Makes `root` (a new directory) a busybox root owned by uid 65534, then, as that user,
    /// enters new namespaces, bind-mounts each `(host dir, path inside)` of `binds` (the path
    /// inside is made if missing) and runs `script` with `sh` in the chroot as PID 1 (end it
    /// with `exec sleep 1000`). Returns once PID 1 runs the chroot's shell and `ready` (a path
    /// inside, made by the script) exists, if given.
    pub fn start(
        root: &Path,
        binds: &[(&Path, &str)],
        script: &str,
        ready: Option<&str>,
    ) -> Result<UserNamespace, String> {
        if !rustix::process::geteuid().is_root() {
            return Err("a user's namespaces are made as uid 65534, which needs root".into());
        }
        // Even the probe below makes a PID namespace: another test's dead namespace's inode
        // number may be handed to it.
        let fact = quiet::making(Fact::Container);
        let probe = unshare()
            .arg("true")
            .stdin(Stdio::null())
            .stderr(Stdio::piped())
            .output()
            .map_err(|e| format!("setpriv: {e}"))?;
        if !probe.status.success() {
            return Err(format!(
                "uid 65534 cannot make user namespaces here: {}",
                String::from_utf8_lossy(&probe.stderr).trim()
            ));
        }
        busybox_root(root)?;
        // No devices in a user's namespace (its mounts are `nodev`): an empty file serves the
        // shell's `</dev/null` for background jobs.
        std::fs::write(root.join("dev/null"), "").map_err(|e| e.to_string())?;
        std::fs::set_permissions(
            root.join("dev/null"),
            std::fs::Permissions::from_mode(0o666),
        )
        .map_err(|e| e.to_string())?;
        let mut mounts = String::new();
        for (host, inside) in binds {
            let at = root.join(inside.trim_start_matches('/'));
            std::fs::create_dir_all(&at).map_err(|e| e.to_string())?;
            mounts.push_str(&format!(
                "mount --bind '{}' '{}' && ",
                host.display(),
                at.display()
            ));
        }
        own_tree(root).map_err(|e| format!("chown {}: {e}", root.display()))?;
        let outer = format!("{mounts}exec chroot '{}' /bin/sh -c \"$0\"", root.display());
        let guard = Guard::spawn(
            unshare()
                .args(["--kill-child", "sh", "-c", &outer, script])
                .stdin(Stdio::null())
                .stdout(Stdio::null()),
        );
        let unshare = guard.pid();
        let init = wait_for("the user's namespace's PID 1", || {
            let children =
                std::fs::read_to_string(format!("/proc/{unshare}/task/{unshare}/children")).ok()?;
            let child: i32 = children.split_whitespace().next()?.parse().ok()?;
            // Chrooted: its root is no longer ours.
            let there = std::fs::metadata(format!("/proc/{child}/root/bin/busybox")).ok()?;
            there.is_file().then_some(child)
        });
        if let Some(ready) = ready {
            let at = root.join(ready.trim_start_matches('/'));
            wait_for("the user's namespace to be ready", || {
                at.exists().then_some(())
            });
        }
        Ok(UserNamespace {
            _guard: guard,
            _fact: fact,
            init,
        })
    }
}

/// `unshare` as uid 65534 into new user (mapping it to root), mount and PID namespaces, forking
/// the program that follows (PID 1 there).
fn unshare() -> Command {
    let mut c = as_nobody("unshare");
    c.args(["--user", "--map-root-user", "--mount", "--pid", "--fork"]);
    c
}

/// Gives `dir` and everything below it to uid 65534, as a user's own files are.
fn own_tree(dir: &Path) -> std::io::Result<()> {
    for entry in walkdir::WalkDir::new(dir) {
        let entry = entry?;
        std::os::unix::fs::lchown(entry.path(), Some(NOBODY), Some(NOBODY))?;
    }
    chown(dir, Some(NOBODY), Some(NOBODY))?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755))
}
