//! Looking inside running containers: their own lock places (the configured absolute roots,
//! such as `/tmp`, `/run`, `/var/lock` and data directories) are scanned through
//! `/proc/<pid>/root` of each container's PID 1 (and of a process of each container that
//! joined its PID namespace with a root of its own, a sidecar), so a lock file that only exists
//! inside a container is found from the host, and reclaimed through the same directory
//! descriptors.
//!
//! Invariants:
//! - only proven containers are looked inside (`Inventory::roots_inside`): a
//!   namespace a user made shows whatever that user mounted in it, directories they may only
//!   read included, and root must not act there on their word;
//! - a place is scanned only when it is on the container's own file system: the mount of its
//!   root directory, or a file system the host does not have mounted (a tmpfs of its
//!   runtime's). A directory of the host mounted there (a volume, a bind mount) is the host's:
//!   it is found under its host path when a host root holds it, and never through the
//!   container; below a place, nothing on another mount is followed when the finding is
//!   judged again or reclaimed (see `scan::anchor`);
//! - a path is scanned only when no component below the container's root is a symlink: the
//!   kernel would resolve an absolute link (`/var/lock -> /run/lock`) against *our* root, not
//!   the container's, and the host's files would be reported as the container's. A place that
//!   is the same directory as one of ours (a sandbox sharing our root) is left to the host
//!   roots;
//! - the directory each place was checked through is the one walked: it is handed to the walk
//!   open ([`Place`]), which reads it from that descriptor where the way to it is on local
//!   mounts only, and resolves its path again (through the bounded helpers) elsewhere.

use std::collections::HashSet;
use std::ffi::OsString;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Component, Path};

use super::anchor;
use super::config::{Config, Root};
use super::error::ScanError;
use crate::probe::Inventory;
use crate::probe::fs::{Mount, NotAnswering};
use crate::probe::reach;

/// A lock place inside a container, as [`container_roots`] found it: its path seen from here
/// (`/proc/PID/root/...`), and its directory, open (`O_PATH`), reached from the container's
/// root through no symlink. The walk starts from that descriptor, not from the path.
#[derive(Debug)]
pub struct Place {
    pub root: Root,
    pub dir: OwnedFd,
}

/// The lock places inside each running proven container with a root of its own. `ours`: the
/// (device, inode) of the host's roots (a place that is one of them is left to them). A place
/// whose way has a mount that may hang (by the container's own mount table; every place of a
/// container whose table could not be read) is opened through the bounded helpers
/// ([`reach::open_dir_at`]); a mount that does not answer is reported to `error`, once, and nothing on it
/// is scanned.
pub fn container_roots(
    config: &Config,
    inv: &Inventory,
    ours: &HashSet<(u64, u64)>,
    error: &dyn Fn(ScanError),
) -> Vec<Place> {
    let mut seen_dirs = HashSet::new();
    let mut dead = HashSet::new();
    let mut out = Vec::new();
    // Each root once (several namespaces may have one root directory).
    for inside in inv.roots_inside() {
        let base = inside.root_path();
        let mounts = inside.mounts;
        let overlay_root = mounts
            .iter()
            .rev()
            .find(|m| m.point == Path::new("/"))
            .filter(|m| m.is_overlay())
            .map(|m| m.dev);
        let mut not_answering = |m: &Mount, e: NotAnswering| {
            if dead.insert(m.point.clone()) {
                error(ScanError::other(&m.point, e.to_string()));
            }
        };
        // The container's root, and the mount it is on where asking cannot hang.
        let (root, root_mount) = match hanging_on_way(mounts, &base, Path::new("")) {
            None => {
                let Ok(root) = anchor::sys::open_root(&base.join(".")) else {
                    continue;
                };
                let Ok(mount) = anchor::mount_id(root.as_fd()) else {
                    continue;
                };
                (root, Some(mount))
            }
            Some(m) => {
                let chain = vec![base.join(".").into_os_string()];
                match reach::open_dir_at(&m, None, chain) {
                    Ok(opened) => match opened {
                        Ok(root) => (root.fd, None),
                        Err(_) => continue,
                    },
                    Err(e) => {
                        not_answering(&m, e);
                        continue;
                    }
                }
            }
        };
        for spec in &config.roots {
            let Some(rel) = spec.path.strip_prefix('/') else {
                continue; // `.`, `~/...`, `$VAR`: places of this user, not of the container
            };
            let rel = Path::new(rel);
            let opened = match hanging_on_way(mounts, &base, rel) {
                None => open_place(root.as_fd(), rel),
                Some(m) => match open_place_bounded(&m, root.as_fd(), rel) {
                    Ok(opened) => opened,
                    Err(e) => {
                        not_answering(&m, e);
                        continue;
                    }
                },
            };
            let Some((dir, key, mount)) = opened else {
                continue;
            };
            // Its own file system: the mount of its root, or one the host does not have (a
            // place whose mount is not known: only the latter), or the overlay of its root
            // (the kernel's or fuse-overlayfs', a device of its own even where the host has
            // it mounted too, as a rootful runtime does).
            let own_fs = (mount.is_some() && mount == root_mount)
                || overlay_root == Some(key.0)
                || !inv.host_has_device(key.0);
            if !own_fs || ours.contains(&key) || !seen_dirs.insert(key) {
                continue;
            }
            let root = Root {
                path: if rel.as_os_str().is_empty() {
                    base.clone()
                } else {
                    base.join(rel)
                },
                max_depth: spec.max_depth,
            };
            out.push(Place { root, dir });
        }
    }
    out
}

/// A place opened: its directory, its (device, inode), and its mount id where it was asked.
type Opened = (OwnedFd, (u64, u64), Option<u64>);

/// The directory `rel` below the container's root `root` (the root itself for an empty
/// `rel`), open, with its (device, inode) and mount id, if it exists and none of its
/// components is a symlink: one `openat2` with `RESOLVE_NO_SYMLINKS` where the kernel has it,
/// else one `openat(O_NOFOLLOW)` a component, then one `statx`.
fn open_place(root: BorrowedFd<'_>, rel: &Path) -> Option<Opened> {
    let fd = anchor::open_beneath(root, rel).ok()?;
    let (id, mount) = anchor::id_and_mount(fd.as_fd()).ok()?;
    Some((fd, (id.dev, id.ino), Some(mount)))
}

/// [`open_place`] through a helper of the mount `m` (one `openat(O_NOFOLLOW)` a component,
/// then one `fstat`): its mount id is not asked. `Err` when the mount does not answer.
fn open_place_bounded(
    m: &Mount,
    root: BorrowedFd<'_>,
    rel: &Path,
) -> Result<Option<Opened>, NotAnswering> {
    let mut chain: Vec<OsString> = Vec::new();
    for c in rel.components() {
        let Component::Normal(n) = c else {
            return Ok(None);
        };
        chain.push(n.to_os_string());
    }
    if chain.is_empty() {
        chain.push(".".into());
    }
    let opened = reach::open_dir_at(m, Some(root), chain)?;
    Ok(opened.ok().map(|d| (d.fd, (d.dev, d.ino), None)))
}

/// The first mount whose entering may wait ([`Mount::may_wait`]) on the way from a
/// container's root to its place `rel`
/// (the root's own mount included), by the container's mount table (`mounts`, as it sees
/// them), as seen from here through `base` (`/proc/PID/root`); a mount of unknown type at
/// `base` when that table could not be read.
fn hanging_on_way(mounts: &[Mount], base: &Path, rel: &Path) -> Option<Mount> {
    if mounts.is_empty() {
        return Some(Mount::unknown(base, "container"));
    }
    let place = Path::new("/").join(rel);
    mounts
        .iter()
        .filter(|m| m.may_wait() && place.starts_with(&m.point))
        .min_by_key(|m| m.point.components().count())
        .map(|m| m.seen_through(base))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    #[test]
    fn symlinks_below_the_root_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("run/lock")).unwrap();
        std::fs::create_dir_all(dir.path().join("var")).unwrap();
        std::os::unix::fs::symlink("/run/lock", dir.path().join("var/lock")).unwrap();
        std::os::unix::fs::symlink("run", dir.path().join("run2")).unwrap();
        let root = anchor::sys::open_root(dir.path()).unwrap();
        let place = |rel: &str| open_place(root.as_fd(), Path::new(rel)).map(|(_, key, _)| key);
        let id = |p: &str| {
            let m = std::fs::metadata(dir.path().join(p)).unwrap();
            (m.dev(), m.ino())
        };
        assert_eq!(place("run/lock"), Some(id("run/lock")));
        assert_eq!(place("var/lock"), None);
        assert_eq!(place("run2/lock"), None);
        assert_eq!(place("missing"), None);
        assert_eq!(place("../etc"), None);
        assert_eq!(place(""), Some(id(".")));
    }
}
