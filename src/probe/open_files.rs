//! Open files: which processes have a file open, from `/proc/<pid>/fd/*`. Built only when a
//! dialect without an owner PID needs it (git, LibreOffice), and once per snapshot.

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;

use super::kernel_locks::FileKey;

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
        let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
            continue;
        };
        for fd in fds.flatten() {
            let Some(n) = fd.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
                continue;
            };
            // metadata() follows the magic link to the open file itself (no open(2)).
            if let Ok(meta) = std::fs::metadata(fd.path()) {
                f(pid, n, FileKey::from_dev_ino(meta.dev(), meta.ino()));
            }
        }
    }
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

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn sees_our_own_open_file() {
        let f = tempfile::NamedTempFile::new().unwrap();
        let key = FileKey::of(&f.as_file().metadata().unwrap());
        let open = OpenFiles::read();
        assert!(open.openers(key).contains(&(std::process::id() as i32)));
    }
}
