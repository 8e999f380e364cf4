//! A file's status as plain data ([`Stat`]): what `lstat`/`statx` said of a lock file or of a
//! file near it, kept in the evidence so that a verdict can be recorded and judged again
//! anywhere. It has the accessors of `std::fs::Metadata` (and `MetadataExt`) that the rules
//! use, and the times each with what it can prove:
//! - `mtime` is what the writer (or anyone who may write the file: `touch -d`, `cp -p`,
//!   `tar x`, `rsync -a`) set: it is shown, never used to prove that something happened after
//!   the file was written;
//! - `ctime` is set by the kernel to the current time on every change of the file, and nobody
//!   can set it back: the file was last written at or before its ctime;
//! - the birth time (where the file system records it) is when this inode was made: the
//!   file was written at or after it.

use std::os::unix::fs::MetadataExt;

use serde::{Deserialize, Serialize};

/// A file's status (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Stat {
    pub dev: u64,
    pub ino: u64,
    /// Type and permission bits (`st_mode`).
    pub mode: u32,
    pub nlink: u64,
    pub uid: u32,
    pub gid: u32,
    pub size: u64,
    /// Seconds and nanoseconds since the epoch.
    pub mtime: (i64, i64),
    pub ctime: (i64, i64),
    /// When the inode was made, in ms since the epoch, where the file system records it.
    pub birth_ms: Option<i64>,
}

const S_IFMT: u32 = 0o170_000;
const S_IFDIR: u32 = 0o040_000;
const S_IFREG: u32 = 0o100_000;
const S_IFLNK: u32 = 0o120_000;

impl Stat {
    pub fn dev(&self) -> u64 {
        self.dev
    }

    pub fn ino(&self) -> u64 {
        self.ino
    }

    pub fn mode(&self) -> u32 {
        self.mode
    }

    pub fn nlink(&self) -> u64 {
        self.nlink
    }

    pub fn uid(&self) -> u32 {
        self.uid
    }

    pub fn gid(&self) -> u32 {
        self.gid
    }

    pub fn size(&self) -> u64 {
        self.size
    }

    pub fn len(&self) -> u64 {
        self.size
    }

    pub fn is_empty(&self) -> bool {
        self.size == 0
    }

    pub fn mtime(&self) -> i64 {
        self.mtime.0
    }

    pub fn mtime_nsec(&self) -> i64 {
        self.mtime.1
    }

    pub fn ctime(&self) -> i64 {
        self.ctime.0
    }

    pub fn ctime_nsec(&self) -> i64 {
        self.ctime.1
    }

    /// The mtime in ms since the epoch: what the writer set (shown, never proof of when).
    pub fn mtime_ms(&self) -> i64 {
        self.mtime.0 * 1000 + self.mtime.1 / 1_000_000
    }

    /// The ctime in ms since the epoch: the latest the file can have been written.
    pub fn ctime_ms(&self) -> i64 {
        self.ctime.0 * 1000 + self.ctime.1 / 1_000_000
    }

    /// When it was last changed as far as anyone could make it look: the later of mtime and
    /// ctime (a refresh by `touch` moves both; nobody can move ctime back).
    pub fn changed_ms(&self) -> i64 {
        self.mtime_ms().max(self.ctime_ms())
    }

    pub fn is_dir(&self) -> bool {
        self.mode & S_IFMT == S_IFDIR
    }

    pub fn is_file(&self) -> bool {
        self.mode & S_IFMT == S_IFREG
    }

    pub fn is_symlink(&self) -> bool {
        self.mode & S_IFMT == S_IFLNK
    }

    /// Neither a regular file, a directory nor a symlink: a FIFO, socket or device.
    pub fn is_special(&self) -> bool {
        !(self.is_dir() || self.is_file() || self.is_symlink())
    }

    pub fn is_socket(&self) -> bool {
        self.mode & S_IFMT == 0o140_000
    }

    pub fn file_type_bits(&self) -> u32 {
        self.mode & S_IFMT
    }

    /// Permission bits (`mode & 0o7777`).
    pub fn permissions(&self) -> u32 {
        self.mode & 0o7777
    }

    /// What identifies this very file for reclaim (device, inode, size, mtime, ctime).
    pub fn identity(&self) -> locksmith_engine::Identity {
        locksmith_engine::Identity {
            dev: self.dev,
            ino: self.ino,
            size: self.size,
            mtime_ns: self.mtime.0 as i128 * 1_000_000_000 + self.mtime.1 as i128,
            ctime_ns: self.ctime.0 as i128 * 1_000_000_000 + self.ctime.1 as i128,
        }
    }

    /// A status made from its parts, for tests and recorded evidence.
    pub fn file(size: u64, mtime_ms: i64, ctime_ms: i64) -> Self {
        let t = |ms: i64| (ms.div_euclid(1000), ms.rem_euclid(1000) * 1_000_000);
        Stat {
            dev: 0,
            ino: 0,
            mode: S_IFREG | 0o644,
            nlink: 1,
            uid: 0,
            gid: 0,
            size,
            mtime: t(mtime_ms),
            ctime: t(ctime_ms),
            birth_ms: None,
        }
    }
}

impl From<&std::fs::Metadata> for Stat {
    fn from(m: &std::fs::Metadata) -> Self {
        Stat {
            dev: m.dev(),
            ino: m.ino(),
            mode: m.mode(),
            nlink: m.nlink(),
            uid: m.uid(),
            gid: m.gid(),
            size: m.size(),
            mtime: (m.mtime(), m.mtime_nsec()),
            ctime: (m.ctime(), m.ctime_nsec()),
            // `statx`'s birth time where the kernel and the file system give it.
            birth_ms: m.created().ok().and_then(|t| {
                let d = t.duration_since(std::time::UNIX_EPOCH).ok()?;
                i64::try_from(d.as_millis()).ok()
            }),
        }
    }
}

impl From<std::fs::Metadata> for Stat {
    fn from(m: std::fs::Metadata) -> Self {
        Stat::from(&m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_what_lstat_says() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("x");
        std::fs::write(&f, "12").unwrap();
        let m = std::fs::symlink_metadata(&f).unwrap();
        let s = Stat::from(&m);
        assert!(s.is_file() && !s.is_dir() && !s.is_symlink());
        assert_eq!((s.dev(), s.ino(), s.len()), (m.dev(), m.ino(), 2));
        assert!(s.ctime_ms() >= s.mtime_ms() - 1);
        let d = Stat::from(std::fs::symlink_metadata(dir.path()).unwrap());
        assert!(d.is_dir());
        std::os::unix::fs::symlink("x", dir.path().join("l")).unwrap();
        let l = Stat::from(std::fs::symlink_metadata(dir.path().join("l")).unwrap());
        assert!(l.is_symlink());
    }

    #[test]
    fn a_time_set_back_moves_mtime_only() {
        let s = Stat::file(0, 1_000, 9_000);
        assert_eq!(s.mtime_ms(), 1_000);
        assert_eq!(s.ctime_ms(), 9_000);
        assert_eq!(s.changed_ms(), 9_000);
        let neg = Stat::file(0, -1, 0);
        assert_eq!(neg.mtime_ms(), -1);
    }
}
