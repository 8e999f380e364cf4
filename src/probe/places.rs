//! Where processes work: whether a process's working directory (or a directory it names) is
//! inside a place, and the regular files every process has open. The judge's writer census
//! reads these through the snapshot ([`super::around`]); nothing here modifies anything.
//!
//! Directories are compared by (device, inode) while walking up with `..`, so a process in
//! another mount namespace (a container mounting the place somewhere else) is placed right:
//! `/proc/<pid>/cwd` and `/proc/<pid>/root` resolve in that process's own namespace.

use std::collections::HashSet;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use super::fs::known;
use super::kernel_locks::FileKey;

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

/// The descriptors of every process (but ours) that name regular files: (pid, the link text
/// of `/proc/<pid>/fd/N`, the file). Read once per snapshot, when first asked.
#[derive(Debug, Default)]
pub struct FdTargets {
    pub files: Vec<(i32, PathBuf, FileKey)>,
    /// The processes of `files` that are in our own mount namespace (their link texts are
    /// paths as we see them), asked once per process.
    pub our_ns: HashSet<i32>,
    /// Processes whose descriptors could not be read.
    pub unreadable: Vec<i32>,
}

impl FdTargets {
    pub fn read() -> Self {
        let mut out = FdTargets::default();
        let me = std::process::id() as i32;
        let Ok(procs) = std::fs::read_dir("/proc") else {
            return out;
        };
        let ours = mount_ns("self");
        for p in procs.flatten() {
            let Some(pid) = p.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
                continue;
            };
            if pid == me {
                continue;
            }
            let Ok(fds) = std::fs::read_dir(p.path().join("fd")) else {
                out.unreadable.push(pid);
                continue;
            };
            let before = out.files.len();
            for fd in fds.flatten() {
                let Ok(meta) = known(&fd.path()) else {
                    continue;
                };
                if !meta.is_file() {
                    continue;
                }
                if let Ok(target) = std::fs::read_link(fd.path()) {
                    out.files
                        .push((pid, target, FileKey::from_dev_ino(meta.dev, meta.ino)));
                }
            }
            if out.files.len() > before && ours.is_some() && mount_ns(&pid.to_string()) == ours {
                out.our_ns.insert(pid);
            }
        }
        out
    }
}

/// Our own mount namespace and process `pid`'s, by the links' text.
pub(crate) fn same_mount_ns(pid: i32) -> bool {
    match (mount_ns("self"), mount_ns(&pid.to_string())) {
        (Some(a), Some(b)) => a == b,
        _ => false,
    }
}

/// The text of `/proc/<who>/ns/mnt` (`mnt:[INODE]`).
fn mount_ns(who: &str) -> Option<PathBuf> {
    std::fs::read_link(format!("/proc/{who}/ns/mnt")).ok()
}

pub(crate) fn major(dev: u64) -> u32 {
    rustix::fs::major(dev)
}

pub(crate) fn minor(dev: u64) -> u32 {
    rustix::fs::minor(dev)
}
