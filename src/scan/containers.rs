//! Looking inside running containers: their own lock places (the configured absolute roots,
//! such as `/tmp`, `/run`, `/var/lock` and data directories) are scanned through
//! `/proc/<pid>/root` of each container's PID 1, so a lock file that only exists inside a
//! container is found from the host, and reclaimed through the same directory descriptors.
//!
//! Invariant: a path is scanned only when no component below the container's root is a
//! symlink: the kernel would resolve an absolute link (`/var/lock -> /run/lock`) against *our*
//! root, not the container's, and the host's files would be reported as the container's. A
//! place that is the same directory as one of ours (a bind mount of the host's `/tmp`, or a
//! sandbox sharing our root) is left to the host roots.

use std::collections::HashSet;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};

use super::config::{Config, Root};
use crate::probe::Inventory;

/// The lock places inside each running container with a root of its own.
pub fn container_roots(config: &Config, inv: &Inventory, host_roots: &[Root]) -> Vec<Root> {
    let ours: HashSet<(u64, u64)> = host_roots
        .iter()
        .filter_map(|r| std::fs::metadata(&r.path).ok())
        .map(|m| (m.dev(), m.ino()))
        .collect();
    let mut seen_roots = HashSet::new();
    let mut seen_dirs = HashSet::new();
    let mut out = Vec::new();
    for ns in inv.with_own_root() {
        if !seen_roots.insert(ns.root) {
            continue; // several namespaces with one root directory: scanned once
        }
        let base = ns.root_path();
        for spec in &config.roots {
            let Some(rel) = spec.path.strip_prefix('/') else {
                continue; // `.`, `~/...`, `$VAR`: places of this user, not of the container
            };
            let Some(path) = no_symlinks_below(&base, Path::new(rel)) else {
                continue;
            };
            let Ok(meta) = std::fs::metadata(&path) else {
                continue;
            };
            let key = (meta.dev(), meta.ino());
            if !meta.is_dir() || ours.contains(&key) || !seen_dirs.insert(key) {
                continue;
            }
            out.push(Root {
                path,
                max_depth: spec.max_depth,
            });
        }
    }
    out
}

/// `base/rel`, if it exists and none of `rel`'s components is a symlink.
fn no_symlinks_below(base: &Path, rel: &Path) -> Option<PathBuf> {
    let mut path = base.to_path_buf();
    for c in rel.components() {
        match c {
            Component::Normal(name) => path.push(name),
            Component::CurDir => continue,
            _ => return None,
        }
        if std::fs::symlink_metadata(&path)
            .ok()?
            .file_type()
            .is_symlink()
        {
            return None;
        }
    }
    Some(path)
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
        assert_eq!(
            no_symlinks_below(dir.path(), Path::new("run/lock")),
            Some(dir.path().join("run/lock"))
        );
        assert_eq!(no_symlinks_below(dir.path(), Path::new("var/lock")), None);
        assert_eq!(no_symlinks_below(dir.path(), Path::new("missing")), None);
        assert_eq!(no_symlinks_below(dir.path(), Path::new("../etc")), None);
    }
}
