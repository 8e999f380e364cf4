//! Container runtimes' own storage: the graph and run roots of Podman (containers/storage),
//! Docker and containerd, wherever their configuration puts them. What is there belongs to
//! the runtime: a file of an image layer (whose mtime comes from the image's tarball, so it
//! looks older than the boot) is part of the image of every later container, and its digest;
//! `conmon.pid` and the like are the runtime's private state. So nothing there is ever
//! reclaimed from the host's side: a lock inside a container is reclaimed through that
//! container's own view (`/proc/PID/root/...`). The scanner may still list what is there.
//!
//! The stores, read when asked ([`Stores::read`]; a reclaim reads them once):
//! - containers/storage's `graphroot`, `runroot`, `imagestore`, `rootless_storage_path` and
//!   `additionalimagestores`, from `$CONTAINERS_STORAGE_CONF`, `/etc/containers/storage.conf`,
//!   `/usr/share/containers/storage.conf` and `$XDG_CONFIG_HOME/containers/storage.conf`;
//! - Docker's `data-root` and `exec-root` from `/etc/docker/daemon.json`;
//! - containerd's `root` and `state` from `/etc/containerd/config.toml`;
//! - the defaults: `/var/lib/containers`, `/run/containers`, `/var/lib/docker`, `/run/docker`,
//!   `/var/lib/containerd`, `/run/containerd`, and the effective user's rootless store
//!   (`$XDG_DATA_HOME/containers`, by default `~/.local/share/containers`) and run root
//!   (`$XDG_RUNTIME_DIR/containers`).
//!
//! A configuration file is read only when nobody but the effective user and root can have
//! written it (the configuration's own rule, [`crate::trust`]): a store declares a whole tree
//! off limits, and another user must not be able to put `/tmp` off limits for root.
//!
//! Each store is known by the device and inode of its directory, so a symlink or a bind mount
//! on the way to it changes nothing; a lock is in a store when the store's directory is its
//! directory or one above it, found by walking up from the lock's directory descriptor
//! (`..`), never through its path.

use std::collections::HashMap;
use std::io::Read as _;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};

use rustix::fs::{Mode, OFlags};
use serde::Deserialize;

/// The most a configuration file read here may hold.
const MAX_CONFIG_BYTES: u64 = 1 << 20;
/// How many directories a walk up from a lock's directory goes through at most.
const MAX_DEPTH: usize = 4096;

/// One store: where it is and what says so.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Store {
    pub path: PathBuf,
    /// `Podman's graph root (graphroot in /etc/containers/storage.conf)`.
    pub what: String,
}

/// The stores of this machine, by the device and inode of their directories.
#[derive(Debug, Default)]
pub struct Stores {
    by_dir: HashMap<(u64, u64), Store>,
}

impl Stores {
    /// Reads the configurations and looks the stores up (see the module docs); a store that
    /// does not exist is left out.
    pub fn read() -> Self {
        let mut found = Vec::new();
        let mut storage_confs: Vec<PathBuf> = Vec::new();
        if let Some(p) = std::env::var_os("CONTAINERS_STORAGE_CONF") {
            storage_confs.push(PathBuf::from(p));
        }
        storage_confs.push("/etc/containers/storage.conf".into());
        storage_confs.push("/usr/share/containers/storage.conf".into());
        if let Some(dir) = config_home() {
            storage_confs.push(dir.join("containers/storage.conf"));
        }
        for conf in &storage_confs {
            found.extend(storage_conf(conf));
        }
        found.extend(docker_conf(Path::new("/etc/docker/daemon.json")));
        found.extend(containerd_conf(Path::new("/etc/containerd/config.toml")));
        for (dir, runtime) in [
            ("/var/lib/containers", "Podman's"),
            ("/run/containers", "Podman's"),
            ("/var/lib/docker", "Docker's"),
            ("/run/docker", "Docker's"),
            ("/var/lib/containerd", "containerd's"),
            ("/run/containerd", "containerd's"),
        ] {
            found.push(Store {
                path: dir.into(),
                what: format!("{runtime} default storage"),
            });
        }
        if let Some(data) = data_home() {
            found.push(Store {
                path: data.join("containers"),
                what: "rootless Podman's default storage".into(),
            });
        }
        if let Some(run) = std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from)
            && run.is_absolute()
        {
            found.push(Store {
                path: run.join("containers"),
                what: "rootless Podman's default run root".into(),
            });
        }
        Stores::of(found)
    }

    /// The stores among `found` that exist, by their directories (the first one found of a
    /// directory named twice).
    pub fn of(found: Vec<Store>) -> Self {
        let mut by_dir = HashMap::new();
        for s in found {
            if let Ok(m) = crate::probe::reach::stat(&s.path)
                && m.is_dir()
            {
                use std::os::unix::fs::MetadataExt;
                by_dir.entry((m.dev(), m.ino())).or_insert(s);
            }
        }
        Stores { by_dir }
    }

    /// The store the directory `dir` (a lock's, opened by the caller) is in, when it is in
    /// one: itself or a directory above it is a store's.
    pub fn holding(&self, dir: BorrowedFd<'_>) -> Option<&Store> {
        if self.by_dir.is_empty() {
            return None;
        }
        let id = |fd: BorrowedFd<'_>| {
            #[allow(clippy::unnecessary_cast)]
            rustix::fs::fstat(fd)
                .ok()
                .map(|st| (st.st_dev as u64, st.st_ino as u64))
        };
        let mut here = id(dir)?;
        let mut up: Option<OwnedFd> = None;
        for _ in 0..MAX_DEPTH {
            if let Some(s) = self.by_dir.get(&here) {
                return Some(s);
            }
            let from = up.as_ref().map_or(dir, |f| f.as_fd());
            let parent = rustix::fs::openat(
                from,
                "..",
                OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
                Mode::empty(),
            )
            .ok()?;
            let next = id(parent.as_fd())?;
            if next == here {
                return None;
            }
            here = next;
            up = Some(parent);
        }
        None
    }

    /// Why a lock in the directory `dir` must not be removed, if it is in a store.
    pub fn refusal(&self, dir: BorrowedFd<'_>) -> Option<String> {
        let s = self.holding(dir)?;
        Some(format!(
            "it is in {}, {}: a container runtime's own storage is never reclaimed from; a lock inside a container is reclaimed through that container's view (/proc/PID/root/...)",
            s.path.display(),
            s.what
        ))
    }
}

/// `$XDG_CONFIG_HOME`, else `~/.config`.
fn config_home() -> Option<PathBuf> {
    std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| home().map(|h| h.join(".config")))
}

/// `$XDG_DATA_HOME`, else `~/.local/share`.
fn data_home() -> Option<PathBuf> {
    std::env::var_os("XDG_DATA_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| home().map(|h| h.join(".local/share")))
}

fn home() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
}

/// The text of a configuration file nobody but the effective user and root can have written,
/// when there is one.
fn read_trusted(path: &Path) -> Option<String> {
    let file = crate::trust::open_trusted(path).ok()?.ok()?;
    let mut text = String::new();
    file.take(MAX_CONFIG_BYTES).read_to_string(&mut text).ok()?;
    Some(text)
}

/// containers/storage's `storage.conf`.
fn storage_conf(path: &Path) -> Vec<Store> {
    #[derive(Deserialize, Default)]
    #[serde(default)]
    struct Conf {
        storage: Storage,
    }
    #[derive(Deserialize, Default)]
    #[serde(default)]
    struct Storage {
        graphroot: Option<String>,
        runroot: Option<String>,
        imagestore: Option<String>,
        rootless_storage_path: Option<String>,
        options: Options,
    }
    #[derive(Deserialize, Default)]
    #[serde(default)]
    struct Options {
        additionalimagestores: Vec<String>,
    }
    let Some(conf) = read_trusted(path).and_then(|t| toml::from_str::<Conf>(&t).ok()) else {
        return Vec::new();
    };
    let s = conf.storage;
    let named = |key: &str, dir: String| Store {
        path: expand(&dir),
        what: format!("Podman's storage ({key} in {})", path.display()),
    };
    [
        ("graphroot", s.graphroot),
        ("runroot", s.runroot),
        ("imagestore", s.imagestore),
        ("rootless_storage_path", s.rootless_storage_path),
    ]
    .into_iter()
    .filter_map(|(key, dir)| Some(named(key, dir?)))
    .chain(
        s.options
            .additionalimagestores
            .into_iter()
            .map(|d| named("additionalimagestores", d)),
    )
    .collect()
}

/// `$HOME` and `$UID` in a path of `storage.conf` (`rootless_storage_path`), as
/// containers/storage expands them.
fn expand(dir: &str) -> PathBuf {
    let uid = rustix::process::geteuid().as_raw().to_string();
    let home = home().map(|h| h.to_string_lossy().into_owned());
    let mut out = dir.replace("$UID", &uid);
    if let Some(h) = home {
        out = out.replace("$HOME", &h);
    }
    PathBuf::from(out)
}

/// Docker's `daemon.json`.
fn docker_conf(path: &Path) -> Vec<Store> {
    #[derive(Deserialize, Default)]
    #[serde(default, rename_all = "kebab-case")]
    struct Conf {
        data_root: Option<String>,
        exec_root: Option<String>,
    }
    let Some(conf) = read_trusted(path).and_then(|t| serde_json::from_str::<Conf>(&t).ok()) else {
        return Vec::new();
    };
    [("data-root", conf.data_root), ("exec-root", conf.exec_root)]
        .into_iter()
        .filter_map(|(key, dir)| {
            Some(Store {
                path: dir?.into(),
                what: format!("Docker's storage ({key} in {})", path.display()),
            })
        })
        .collect()
}

/// containerd's `config.toml`.
fn containerd_conf(path: &Path) -> Vec<Store> {
    #[derive(Deserialize, Default)]
    #[serde(default)]
    struct Conf {
        root: Option<String>,
        state: Option<String>,
    }
    let Some(conf) = read_trusted(path).and_then(|t| toml::from_str::<Conf>(&t).ok()) else {
        return Vec::new();
    };
    [("root", conf.root), ("state", conf.state)]
        .into_iter()
        .filter_map(|(key, dir)| {
            Some(Store {
                path: dir?.into(),
                what: format!("containerd's storage ({key} in {})", path.display()),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir_fd(p: &Path) -> OwnedFd {
        rustix::fs::open(p, OFlags::RDONLY | OFlags::DIRECTORY, Mode::empty()).unwrap()
    }

    #[test]
    fn a_lock_below_a_store_is_in_it_whatever_leads_there() {
        let t = tempfile::tempdir().unwrap();
        let store = t.path().join("graph");
        let deep = store.join("overlay/abc/diff/run");
        std::fs::create_dir_all(&deep).unwrap();
        let beside = t.path().join("other/run");
        std::fs::create_dir_all(&beside).unwrap();
        std::os::unix::fs::symlink(&store, t.path().join("link")).unwrap();
        let stores = Stores::of(vec![
            Store {
                path: t.path().join("link"),
                what: "Podman's storage (graphroot in test)".into(),
            },
            Store {
                path: t.path().join("missing"),
                what: "nothing".into(),
            },
        ]);
        let why = stores.refusal(dir_fd(&deep).as_fd()).unwrap();
        assert!(
            why.starts_with(&format!(
                "it is in {}, Podman's storage (graphroot in test): ",
                t.path().join("link").display()
            )),
            "{why}"
        );
        assert!(stores.refusal(dir_fd(&store).as_fd()).is_some());
        assert!(stores.refusal(dir_fd(&beside).as_fd()).is_none());
        assert!(stores.refusal(dir_fd(t.path()).as_fd()).is_none());
        // A directory moved out of the store is no longer in it.
        let moved = t.path().join("moved");
        std::fs::rename(store.join("overlay"), &moved).unwrap();
        assert!(
            stores
                .refusal(dir_fd(&moved.join("abc/diff/run")).as_fd())
                .is_none()
        );
    }

    #[test]
    fn configurations_name_their_stores() {
        let t = tempfile::tempdir().unwrap();
        let conf = t.path().join("storage.conf");
        std::fs::write(
            &conf,
            "[storage]\ndriver = \"overlay\"\ngraphroot = \"/srv/graph\"\nrunroot = \"/run/x\"\n\
             [storage.options]\nadditionalimagestores = [\"/ro\"]\n",
        )
        .unwrap();
        let paths: Vec<PathBuf> = storage_conf(&conf).into_iter().map(|s| s.path).collect();
        assert_eq!(
            paths,
            [PathBuf::from("/srv/graph"), "/run/x".into(), "/ro".into()]
        );
        let daemon = t.path().join("daemon.json");
        std::fs::write(&daemon, r#"{"data-root": "/data/docker", "debug": true}"#).unwrap();
        assert_eq!(docker_conf(&daemon)[0].path, PathBuf::from("/data/docker"));
        let containerd = t.path().join("config.toml");
        std::fs::write(
            &containerd,
            "version = 2\nroot = \"/data/containerd\"\nstate = \"/run/ctd\"\n[plugins]\n",
        )
        .unwrap();
        let c = containerd_conf(&containerd);
        assert_eq!(c.len(), 2);
        assert!(c[0].what.contains("root in"), "{:?}", c[0]);
        // Not parsed, or written by others: nothing.
        std::fs::write(&conf, "graphroot = [").unwrap();
        assert!(storage_conf(&conf).is_empty());
        use std::os::unix::fs::PermissionsExt;
        std::fs::write(&daemon, r#"{"data-root": "/"}"#).unwrap();
        std::fs::set_permissions(&daemon, std::fs::Permissions::from_mode(0o666)).unwrap();
        assert!(docker_conf(&daemon).is_empty());
    }
}
