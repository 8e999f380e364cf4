//! Real Podman containers for the tests, with no registry and no machine state: a busybox
//! image imported from a tarball (or any root file system, [`Podman::import`]), and storage,
//! run and temp directories of its own in a temp dir (`--root`, `--runroot`, `--tmpdir`, a
//! `containers.conf` and a `storage.conf` of its own), the `runc` runtime and the `cgroupfs`
//! cgroup manager, no network. Every container is removed (and the store reset) when the
//! [`Podman`] is dropped.
//!
//! [`Podman::start`] returns `Err` with the reason when Podman cannot run here (not root, not
//! installed, no busybox): the caller skips with that message.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use super::quiet::{self, Fact, Hold};
use super::{DEADLINE, run_limited, wait_for};

/// The image every test container runs.
pub const IMAGE: &str = "localhost/locksmith-busybox:test";

/// Its containers have roots of their own ([`Fact::Container`], held while it lives).
pub struct Podman {
    dir: tempfile::TempDir,
    _fact: Hold,
    /// A `--storage-opt` every command is given.
    storage_opt: Option<String>,
    /// The storage directory (`graphroot`).
    root: PathBuf,
}

/// A running (or exited) container.
#[derive(Debug, Clone)]
pub struct Container {
    pub id: String,
    /// Host PID of its PID 1 (0 once it has exited).
    pub pid: i32,
}

fn busybox() -> Option<PathBuf> {
    ["/bin/busybox", "/usr/bin/busybox"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
}

/// A directory holding `/bin/busybox` and a link for each of its applets.
pub fn busybox_root(dir: &Path) -> Result<(), String> {
    let bb = busybox().ok_or("busybox is not installed (package busybox-static)")?;
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).map_err(|e| e.to_string())?;
    for d in ["tmp", "run", "var/lock", "proc", "dev", "sys", "etc"] {
        std::fs::create_dir_all(dir.join(d)).map_err(|e| e.to_string())?;
    }
    std::fs::copy(&bb, bin.join("busybox")).map_err(|e| e.to_string())?;
    let list = Command::new(&bb)
        .arg("--list")
        .output()
        .map_err(|e| e.to_string())?;
    for applet in String::from_utf8_lossy(&list.stdout).lines() {
        if !applet.is_empty() && applet != "busybox" {
            let _ = std::os::unix::fs::symlink("busybox", bin.join(applet));
        }
    }
    Ok(())
}

impl Podman {
    /// Sets up a private Podman store with the busybox image, and proves a container runs.
    pub fn start() -> Result<Podman, String> {
        Podman::start_with(None)
    }

    /// [`Podman::start`] with containers' roots mounted by `fuse-overlayfs` (a daemon serving
    /// the overlay, as rootless Podman mounts them where the kernel's overlay is not allowed).
    pub fn start_fuse_overlay() -> Result<Podman, String> {
        const PROGRAM: &str = "/usr/bin/fuse-overlayfs";
        if !Path::new(PROGRAM).exists() {
            return Err(format!("fuse-overlayfs is not installed ({PROGRAM})"));
        }
        Podman::start_with(Some(format!("overlay.mount_program={PROGRAM}")))
    }

    /// [`Podman::start`] with a storage directory whose path is 800 bytes long: the absolute
    /// paths of an image of three layers then do not fit in the page the kernel takes a
    /// mount's options in, and Podman mounts a container's root from the storage directory,
    /// naming the layers relatively (`lowerdir=l/SHORT:...,upperdir=ID/diff`), as both Podman
    /// and Docker do for images of many layers.
    pub fn start_deep_storage() -> Result<Podman, String> {
        let mut p = Podman::store()?;
        let mut root = p.path().to_path_buf();
        for c in ['g', 'h', 'i', 'j'] {
            root.push(c.to_string().repeat(200));
        }
        std::fs::create_dir_all(&root).map_err(|e| e.to_string())?;
        p.root = root;
        // The kernel's overlay: not `fuse-overlayfs`, which Podman may take instead where the
        // kernel's cannot mount by absolute paths.
        p.write_storage_conf("[storage.options.overlay]\nmount_program = \"\"\n")?;
        p.prove()?;
        Ok(p)
    }

    /// [`Podman::start`], with a `--storage-opt` for every command.
    fn start_with(storage_opt: Option<String>) -> Result<Podman, String> {
        let mut p = Podman::store()?;
        p.storage_opt = storage_opt;
        p.prove()?;
        Ok(p)
    }

    /// Imports the busybox image and proves a container runs.
    fn prove(&self) -> Result<(), String> {
        let rootfs = self.path().join("rootfs");
        busybox_root(&rootfs)?;
        self.import_dir(&rootfs, IMAGE)?;
        let out = self.run(&["run", "--rm", "--network", "none", IMAGE, "true"]);
        if !out.status.success() {
            return Err(format!(
                "podman cannot run a container here: {}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        Ok(())
    }

    /// An empty private Podman store (no image yet).
    pub fn store() -> Result<Podman, String> {
        if !rustix::process::geteuid().is_root() {
            return Err("podman tests run as root (rootless podman needs a user session)".into());
        }
        for (what, path) in [("podman", "/usr/bin/podman"), ("runc", "/usr/sbin/runc")] {
            if !Path::new(path).exists() {
                return Err(format!("{what} is not installed ({path})"));
            }
        }
        let fact = quiet::making(Fact::Container);
        let dir = tempfile::Builder::new()
            .prefix("locksmith-podman-")
            .tempdir()
            .map_err(|e| e.to_string())?;
        let root = dir.path().join("root");
        let p = Podman {
            dir,
            _fact: fact,
            storage_opt: None,
            root,
        };
        std::fs::write(
            p.path().join("containers.conf"),
            "[containers]\ndefault_ulimits = []\n",
        )
        .map_err(|e| e.to_string())?;
        p.write_storage_conf("")?;
        Ok(p)
    }

    /// The storage directory (`graphroot`), which holds the overlay driver's `overlay/`.
    pub fn storage(&self) -> &Path {
        &self.root
    }

    /// Its `storage.conf`: the overlay driver in its storage and run directories, and `more`.
    fn write_storage_conf(&self, more: &str) -> Result<(), String> {
        std::fs::write(
            self.path().join("storage.conf"),
            format!(
                "[storage]\ndriver = \"overlay\"\ngraphroot = \"{}\"\nrunroot = \"{}/runroot\"\n{more}",
                self.root.display(),
                self.path().display()
            ),
        )
        .map_err(|e| e.to_string())
    }

    /// A root file system directory as the image `name` (a tarball of it, imported).
    pub fn import_dir(&self, rootfs: &Path, name: &str) -> Result<(), String> {
        let tar = rootfs.with_extension("tar");
        let out = Command::new("tar")
            .arg("-C")
            .arg(rootfs)
            .arg("-cf")
            .arg(&tar)
            .arg(".")
            .output()
            .map_err(|e| format!("tar: {e}"))?;
        if !out.status.success() {
            return Err(format!("tar: {}", String::from_utf8_lossy(&out.stderr)));
        }
        self.import(&tar, name)
    }

    /// `podman import`: a root file system tarball as the image `name`.
    pub fn import(&self, tar: &Path, name: &str) -> Result<(), String> {
        let out = self.run(&["import", "-q", &tar.to_string_lossy(), name]);
        if !out.status.success() {
            return Err(format!(
                "podman import failed: {}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        Ok(())
    }

    /// [`Podman::start`], or `None` after saying why the test skips (through
    /// [`super::skip`]: under CI, where `.ci/run` installs podman and runs as root, a failure).
    pub fn or_skip(test: &str) -> Option<Podman> {
        match Podman::start() {
            Ok(p) => Some(p),
            Err(why) => {
                super::skip(format!("{test}: {why}"));
                None
            }
        }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// `podman` with this store's options.
    pub fn cmd(&self) -> Command {
        let d = self.path();
        let mut c = Command::new("podman");
        c.env("CONTAINERS_CONF", d.join("containers.conf"))
            .env("CONTAINERS_STORAGE_CONF", d.join("storage.conf"))
            .arg("--root")
            .arg(&self.root)
            .arg("--runroot")
            .arg(d.join("runroot"))
            .arg("--tmpdir")
            .arg(d.join("tmp"))
            .args([
                "--runtime",
                "/usr/sbin/runc",
                "--cgroup-manager=cgroupfs",
                "--storage-driver",
                "overlay",
                "--events-backend",
                "file",
            ])
            .stdin(Stdio::null());
        if let Some(opt) = &self.storage_opt {
            c.args(["--storage-opt", opt]);
        }
        c
    }

    /// Runs `podman ARGS` to completion. (While `podman run` makes a container, its PID 1 is
    /// in a new PID namespace with a copy of this host's mounts until it pivots into its own
    /// root: tied to no test's fixture, it changes no verdict.)
    pub fn run(&self, args: &[&str]) -> Output {
        let mut c = self.cmd();
        c.args(args);
        run_limited(c, DEADLINE)
    }

    /// `podman run -d --name NAME OPTIONS... IMAGE sh -c SCRIPT`, waiting until its PID 1 runs.
    pub fn run_detached(&self, name: &str, options: &[&str], script: &str) -> Container {
        self.run_detached_from(IMAGE, name, options, script)
    }

    /// [`Podman::run_detached`] from another image.
    pub fn run_detached_from(
        &self,
        image: &str,
        name: &str,
        options: &[&str],
        script: &str,
    ) -> Container {
        let mut args = vec!["run", "-d", "--network", "none", "--name", name];
        args.extend_from_slice(options);
        args.extend_from_slice(&[image, "sh", "-c", script]);
        let out = self.run(&args);
        assert!(
            out.status.success(),
            "podman run {name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let id = String::from_utf8_lossy(&out.stdout).trim().to_string();
        let pid = self.pid(name);
        Container { id, pid }
    }

    /// Host PID of a container's PID 1 (0 when it is not running).
    pub fn pid(&self, name: &str) -> i32 {
        let out = self.run(&["inspect", "-f", "{{.State.Pid}}", name]);
        String::from_utf8_lossy(&out.stdout)
            .trim()
            .parse()
            .unwrap_or(0)
    }

    /// Waits until a container has exited.
    pub fn wait_exited(&self, name: &str) {
        wait_for(&format!("container {name} to exit"), || {
            let out = self.run(&["inspect", "-f", "{{.State.Status}}", name]);
            let status = String::from_utf8_lossy(&out.stdout).trim().to_string();
            (status == "exited" || status == "stopped").then_some(())
        });
    }

    /// Stops a container at once (SIGKILL) and waits until it has exited.
    pub fn kill(&self, name: &str) {
        let out = self.run(&["stop", "-t", "0", name]);
        assert!(
            out.status.success(),
            "podman stop {name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        self.wait_exited(name);
    }

    /// Waits until `path` exists (a file a container writes).
    pub fn wait_file(&self, path: &Path) {
        wait_for(&format!("{} to be written", path.display()), || {
            path.exists().then_some(())
        });
        std::thread::sleep(Duration::from_millis(50));
    }
}

impl Drop for Podman {
    fn drop(&mut self) {
        let _ = self.run(&["rm", "-a", "-f", "-t", "0"]);
        let _ = self.run(&["system", "reset", "-f"]);
        // The overlay driver makes its directory a mount of its own, which a reset may leave
        // (busy a moment): detached, so that the store's directory can be removed.
        let overlay = self.root.join("overlay");
        let mounted = std::fs::read_to_string("/proc/self/mountinfo").is_ok_and(|t| {
            t.lines()
                .any(|l| l.split(' ').nth(4) == Some(&*overlay.to_string_lossy()))
        });
        if mounted {
            let _ = Command::new("umount").arg("-l").arg(&overlay).status();
        }
    }
}
