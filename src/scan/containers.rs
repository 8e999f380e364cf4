//! Looking inside running containers: their own lock places (the configured absolute roots,
//! such as `/tmp`, `/run`, `/var/lock` and data directories) are scanned through
//! `/proc/<pid>/root` of each container's PID 1, so a lock file that only exists inside a
//! container is found from the host, and reclaimed through the same directory descriptors.
//!
//! Invariants:
//! - only proven containers are looked inside (`Inventory::containers_with_own_root`): a
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
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use super::anchor;
use super::config::{Config, Root};
use crate::probe::Inventory;

/// A lock place inside a container, as [`container_roots`] found it: its path seen from here
/// (`/proc/PID/root/...`), and its directory, open (`O_PATH`), reached from the container's
/// root through no symlink. The walk starts from that descriptor, not from the path.
#[derive(Debug)]
pub struct Place {
    pub root: Root,
    pub dir: OwnedFd,
}

/// The lock places inside each running proven container with a root of its own.
pub fn container_roots(config: &Config, inv: &Inventory, host_roots: &[Root]) -> Vec<Place> {
    let ours: HashSet<(u64, u64)> = host_roots
        .iter()
        .filter_map(|r| std::fs::metadata(&r.path).ok())
        .map(|m| (m.dev(), m.ino()))
        .collect();
    let mut seen_roots = HashSet::new();
    let mut seen_dirs = HashSet::new();
    let mut out = Vec::new();
    for ns in inv.containers_with_own_root() {
        if !seen_roots.insert(ns.root) {
            continue; // several namespaces with one root directory: scanned once
        }
        let base = ns.root_path();
        let Ok(root) = anchor::sys::open_root(&base.join(".")) else {
            continue;
        };
        let Ok(root_mount) = anchor::mount_id(root.as_fd()) else {
            continue;
        };
        for spec in &config.roots {
            let Some(rel) = spec.path.strip_prefix('/') else {
                continue; // `.`, `~/...`, `$VAR`: places of this user, not of the container
            };
            let Some((dir, key, mount)) = open_place(root.as_fd(), Path::new(rel)) else {
                continue;
            };
            let own_fs = mount == root_mount || !inv.host_has_device(key.0);
            if !own_fs || ours.contains(&key) || !seen_dirs.insert(key) {
                continue;
            }
            let root = Root {
                path: if rel.is_empty() {
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

/// The directory `rel` below the container's root `root` (the root itself for an empty
/// `rel`), open, with its (device, inode) and mount id, if it exists and none of its
/// components is a symlink: one `openat2` with `RESOLVE_NO_SYMLINKS` where the kernel has it,
/// else one `openat(O_NOFOLLOW)` a component, then one `statx`.
fn open_place(root: BorrowedFd<'_>, rel: &Path) -> Option<(OwnedFd, (u64, u64), u64)> {
    let fd = anchor::open_beneath(root, rel).ok()?;
    let (id, mount) = anchor::id_and_mount(fd.as_fd()).ok()?;
    Some((fd, (id.dev, id.ino), mount))
}

#[cfg(test)]
mod tests {
    use super::*;

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
