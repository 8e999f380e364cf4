//! Where processes work: whether a process's working directory (or a directory it names) is
//! inside a place. The judge's writer census reads these through the snapshot
//! ([`super::around`]); nothing here modifies anything.
//!
//! Directories are compared by (device, inode) while walking up with `..`, so a process in
//! another mount namespace (a container mounting the place somewhere else) is placed right:
//! `/proc/<pid>/cwd` and `/proc/<pid>/root` resolve in that process's own namespace.

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};
use std::sync::Mutex;

use super::fs::known;
use super::open_files::mount_ns;

/// A directory as (path, device, inode).
pub type DirId = (PathBuf, u64, u64);

/// The ids of the directories that exist (a lock may name any path: asked without waiting on
/// a mount that does not answer, [`super::reach`]).
pub fn dir_ids(dirs: &[PathBuf]) -> Vec<DirId> {
    dirs.iter()
        .filter_map(|d| {
            let m = super::reach::stat(d).ok()?;
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

/// The canonical forms of directories (no symlink, no `.` or `..` in them), each resolved once
/// and kept: a directory whose parent is known costs one `lstat`, where `realpath` asks every
/// component of its path again (the locks of one tree share most of their directories).
#[derive(Debug, Default)]
pub struct CanonicalDirs(Mutex<HashMap<PathBuf, PathBuf>>);

impl Clone for CanonicalDirs {
    /// A copy keeps nothing: it resolves again.
    fn clone(&self) -> Self {
        CanonicalDirs::default()
    }
}

impl CanonicalDirs {
    /// Records `dir` as its own canonical form: a directory the walk reached from a root with
    /// no symlink in its path, each directory opened without following one. What `of` answers
    /// for it is then the path that was walked, with no `lstat` again.
    pub fn walked(&self, dir: &Path) {
        if !dir.is_absolute() {
            return;
        }
        let mut known = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if !known.contains_key(dir) {
            known.insert(dir.to_path_buf(), dir.to_path_buf());
        }
    }

    /// What `std::fs::canonicalize(dir)` gives, for a directory that exists (asked without
    /// waiting on a mount that does not answer, [`super::reach`]).
    pub fn of(&self, dir: &Path) -> Option<PathBuf> {
        if !dir.is_absolute() || dir.components().any(|c| c == Component::ParentDir) {
            return super::reach::canonical(dir);
        }
        let mut known = self.0.lock().unwrap_or_else(|e| e.into_inner());
        // The nearest ancestor already resolved (or the root), and the names below it.
        let mut names = Vec::new();
        let mut at = dir;
        let mut canon = loop {
            if let Some(c) = known.get(at) {
                break c.clone();
            }
            match (at.parent(), at.file_name()) {
                (Some(parent), Some(name)) => {
                    names.push(name);
                    at = parent;
                }
                _ => break PathBuf::from("/"),
            }
        };
        let mut path = at.to_path_buf();
        for name in names.into_iter().rev() {
            path.push(name);
            canon.push(name);
            if super::reach::lstat(&canon).ok()?.file_type().is_symlink() {
                canon = super::reach::canonical(&canon)?;
            }
            known.insert(path.clone(), canon.clone());
        }
        Some(canon)
    }
}

pub(crate) fn major(dev: u64) -> u32 {
    rustix::fs::major(dev)
}

pub(crate) fn minor(dev: u64) -> u32 {
    rustix::fs::minor(dev)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_dirs_resolve_as_realpath_does() {
        let t = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(t.path()).unwrap();
        std::fs::create_dir_all(base.join("a/b/c")).unwrap();
        std::os::unix::fs::symlink("a/b", base.join("link")).unwrap();
        std::os::unix::fs::symlink(base.join("a"), base.join("a/b/c/up")).unwrap();
        let dirs = CanonicalDirs::default();
        for d in [
            base.join("a/b/c"),
            base.join("a/b"),
            base.join("link/c"),
            base.join("link"),
            base.join("a/b/c/up/b"),
            base.join("link/c/../c"),
            base.join("./a/./b"),
        ] {
            assert_eq!(
                dirs.of(&d),
                std::fs::canonicalize(&d).ok(),
                "{}",
                d.display()
            );
        }
        assert_eq!(dirs.of(&base.join("missing/x")), None);
        assert_eq!(dirs.of(&base.join("link/missing")), None);
    }
}
