//! Where processes work: whether a process's working directory (or a directory it names) is
//! inside a place. The judge's writer census reads these through the snapshot
//! ([`super::around`]); nothing here modifies anything.
//!
//! Directories are compared by (device, inode) while walking up with `..`, so a process in
//! another mount namespace (a container mounting the place somewhere else) is placed right:
//! `/proc/<pid>/cwd` and `/proc/<pid>/root` resolve in that process's own namespace.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use super::fs::known;
use super::open_files::mount_ns;

/// A directory as (path, device, inode).
pub type DirId = (PathBuf, u64, u64);

/// The ids of the directories that exist.
pub fn dir_ids(dirs: &[PathBuf]) -> Vec<DirId> {
    dirs.iter()
        .filter_map(|d| {
            let m = std::fs::metadata(d).ok()?;
            m.is_dir().then(|| (d.clone(), m.dev(), m.ino()))
        })
        .collect()
}

/// Whether the directory behind `start` (a `/proc/<pid>/cwd`-style path) is one of `roots`
/// or below one, walking up with `..` (inode comparison, up to 256 levels). `None` when it
/// cannot be read.
pub fn within(start: &Path, roots: &[DirId]) -> Option<bool> {
    let mut path = start.to_path_buf();
    let mut last: Option<(u64, u64)> = None;
    for _ in 0..256 {
        let m = known(&path).ok()?;
        let id = (m.dev, m.ino);
        if roots.iter().any(|(_, d, i)| (*d, *i) == id) {
            return Some(true);
        }
        if last == Some(id) {
            return Some(false); // reached the root
        }
        last = Some(id);
        path.push("..");
    }
    Some(false)
}

/// A path as process `pid` sees it, to be resolved from outside: an absolute one under its
/// root, a relative one under its working directory.
pub fn seen_by(pid: i32, path: &Path) -> PathBuf {
    let proc_dir = PathBuf::from(format!("/proc/{pid}"));
    if path.is_absolute() {
        proc_dir
            .join("root")
            .join(path.strip_prefix("/").unwrap_or(path))
    } else {
        proc_dir.join("cwd").join(path)
    }
}

/// Our own mount namespace and process `pid`'s, by the links' text.
pub(crate) fn same_mount_ns(pid: i32) -> bool {
    match (mount_ns("self"), mount_ns(&pid.to_string())) {
        (Some(a), Some(b)) => a == b,
        _ => false,
    }
}

pub(crate) fn major(dev: u64) -> u32 {
    rustix::fs::major(dev)
}

pub(crate) fn minor(dev: u64) -> u32 {
    rustix::fs::minor(dev)
}
