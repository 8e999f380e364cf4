//! What identifies the exact file that was judged: device, inode, size, mtime and ctime.

/// What identifies the exact file that was judged; reclaim removes a path only while it still
/// names the same file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Identity {
    /// Device.
    pub dev: u64,
    /// Inode.
    pub ino: u64,
    /// Size in bytes.
    pub size: u64,
    /// Modification time, in nanoseconds since the epoch.
    pub mtime_ns: i128,
    /// Status change time: moves with any write, chmod, link or rename of the inode, so a
    /// file rewritten with the same size and mtime is still told apart.
    pub ctime_ns: i128,
}

impl Identity {
    /// The identity of the file `meta` describes.
    pub fn of(meta: &std::fs::Metadata) -> Self {
        use std::os::unix::fs::MetadataExt;
        Identity {
            dev: meta.dev(),
            ino: meta.ino(),
            size: meta.size(),
            mtime_ns: meta.mtime() as i128 * 1_000_000_000 + meta.mtime_nsec() as i128,
            ctime_ns: meta.ctime() as i128 * 1_000_000_000 + meta.ctime_nsec() as i128,
        }
    }

    /// The mtime in milliseconds since the epoch.
    pub fn mtime_ms(&self) -> i64 {
        self.mtime_ns.div_euclid(1_000_000) as i64
    }
}
