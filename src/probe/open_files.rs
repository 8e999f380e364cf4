//! Open files: which processes have a file open, from `/proc/<pid>/fd/*`: the open-files map
//! (built only when a dialect without an owner PID needs it, git and LibreOffice, and once per
//! snapshot), one process's descriptors (to confirm a lock `/proc/locks` lists), and the
//! processes sharing the descriptions that hold flock and OFD locks (through
//! `/proc/<pid>/fdinfo/*`).

use std::collections::{HashMap, HashSet};

use super::kernel_locks::{FileKey, KernelLock, parse_line};
use crate::verdict::HolderHow;

/// Calls `f(pid, fd, key)` for every descriptor of every process we may look at that names a
/// file (the target is `stat`ed; nothing is opened).
pub fn for_each_fd(mut f: impl FnMut(i32, u32, FileKey)) {
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return;
    };
    for p in procs.flatten() {
        let Some(pid) = p.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        let _ = fds_of(pid, |fd, key| f(pid, fd, key));
    }
}

/// Calls `f(fd, key)` for every descriptor of `pid` that names a file, with the open file's
/// own (device, inode): `statx` of `/proc/<pid>/fd/<fd>` follows the magic link to the open
/// file itself, even a deleted one (no open(2)), and asks no file server ([`dev_ino`]). `Err` when the descriptors cannot all be
/// listed (the process is gone, is another user's and we are not root, ...).
fn fds_of(pid: i32, mut f: impl FnMut(u32, FileKey)) -> std::io::Result<()> {
    for fd in std::fs::read_dir(format!("/proc/{pid}/fd"))? {
        let fd = fd?;
        let Some(n) = fd.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        // A descriptor closed since the listing names nothing any more.
        if let Some((dev, ino)) = dev_ino(&fd.path()) {
            f(n, FileKey::from_dev_ino(dev, ino));
        }
    }
    Ok(())
}

/// The (device, inode) of the file a `/proc/<pid>/fd/<fd>` link names ([`super::fs::known`]).
fn dev_ino(link: &std::path::Path) -> Option<(u64, u64)> {
    super::fs::known(link).ok().map(|k| (k.dev, k.ino))
}

/// The files `pid` has open, by their own (device, inode), or `None` when its descriptors
/// cannot be read (gone, another user's process as non-root, not in our `/proc`).
pub fn files_of(pid: i32) -> Option<HashSet<FileKey>> {
    let mut out = HashSet::new();
    fds_of(pid, |_, key| {
        out.insert(key);
    })
    .ok()?;
    Some(out)
}

/// (device, inode) → the processes that have the file open.
#[derive(Debug, Default, Clone)]
pub struct OpenFiles {
    by_key: HashMap<FileKey, Vec<i32>>,
}

impl OpenFiles {
    pub fn read() -> Self {
        let mut by_key: HashMap<FileKey, Vec<i32>> = HashMap::new();
        for_each_fd(|pid, _, key| {
            let v = by_key.entry(key).or_default();
            if !v.contains(&pid) {
                v.push(pid);
            }
        });
        OpenFiles { by_key }
    }

    pub fn openers(&self, key: FileKey) -> &[i32] {
        self.by_key.get(&key).map(Vec::as_slice).unwrap_or(&[])
    }
}

/// The processes that share the open file descriptions holding flock and OFD locks on the
/// `wanted` files (keys as `/proc/locks` prints them), with the key of the file each has open:
/// through `/proc/<pid>/fd/*` (stat of the target) and `/proc/<pid>/fdinfo/*` (its `lock:`
/// lines, the same lines as `/proc/locks` for the locks held through that descriptor). A
/// flock or OFD lock belongs to the description, not to a process: after `fork` every process
/// that has it holds the lock, and it stays held when the process that took it (the PID
/// `/proc/locks` prints for a flock) is gone. On an anonymous device (btrfs subvolume,
/// overlay) the key printed and the file's own `st_dev` may differ, and then the inode
/// decides, as in [`super::KernelLocks::on`].
pub fn sharers(wanted: &HashSet<FileKey>) -> HashMap<KernelLock, Vec<(i32, FileKey)>> {
    let mut out: HashMap<KernelLock, Vec<(i32, FileKey)>> = HashMap::new();
    if wanted.is_empty() {
        return out;
    }
    let anon_inodes: HashSet<u64> = wanted
        .iter()
        .filter(|k| k.major == 0)
        .map(|k| k.inode)
        .collect();
    for_each_fd(|pid, fd, key| {
        let maybe = wanted.contains(&key)
            || (key.major == 0 && wanted.iter().any(|w| w.inode == key.inode))
            || anon_inodes.contains(&key.inode);
        if !maybe {
            return;
        }
        let info = std::fs::read_to_string(format!("/proc/{pid}/fdinfo/{fd}")).unwrap_or_default();
        for lock in info
            .lines()
            .filter_map(|l| l.strip_prefix("lock:"))
            .filter_map(parse_line)
            .filter(|l| l.how != HolderHow::Posix && same_file(&l.key, &key))
        {
            let v = out.entry(lock).or_default();
            if !v.contains(&(pid, key)) {
                v.push((pid, key));
            }
        }
    });
    out
}

/// Whether a key `/proc/locks` prints and a file's own key may name the same file: equal, or
/// the same inode where either device is anonymous.
pub fn same_file(printed: &FileKey, file: &FileKey) -> bool {
    printed == file || (printed.inode == file.inode && (printed.major == 0 || file.major == 0))
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn sees_our_own_open_file() {
        let f = tempfile::NamedTempFile::new().unwrap();
        let key = FileKey::of(&f.as_file().metadata().unwrap());
        let open = OpenFiles::read();
        assert!(open.openers(key).contains(&(std::process::id() as i32)));
        let mine = files_of(std::process::id() as i32).unwrap();
        assert!(mine.contains(&key));
        assert!(files_of(-1).is_none());
    }
}
