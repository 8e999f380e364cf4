use std::ffi::OsStr;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use rustix::fs::{FileType, Mode, OFlags};

#[cfg(target_os = "linux")]
pub use linux::*;
#[cfg(not(target_os = "linux"))]
pub use other::*;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DType {
    Dir,
    Other,
    /// The file system does not fill `d_type`.
    Unknown,
}

/// An open directory.
pub type DirHandle = OwnedFd;

/// Opens the directory `path` (relative to its open `parent` when given), never following
/// a symlink, without updating its access time where allowed.
pub fn open_dir(parent: Option<&OwnedFd>, path: &Path) -> io::Result<OwnedFd> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let (at, name) = match (parent, path.file_name()) {
        (Some(p), Some(name)) => (p.as_fd(), Path::new(name)),
        _ => (rustix::fs::CWD, path),
    };
    #[cfg(target_os = "linux")]
    match rustix::fs::openat(at, name, flags | OFlags::NOATIME, Mode::empty()) {
        // O_NOATIME needs ownership or CAP_FOWNER.
        Err(rustix::io::Errno::PERM) => {}
        other => return Ok(other?),
    }
    Ok(rustix::fs::openat(at, name, flags, Mode::empty())?)
}

/// An open directory (an `O_PATH` descriptor) opened again to be read, without resolving
/// any path, and without updating its access time where allowed.
pub fn reopen_dir(dir: BorrowedFd<'_>) -> io::Result<OwnedFd> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    #[cfg(target_os = "linux")]
    match rustix::fs::openat(dir, ".", flags | OFlags::NOATIME, Mode::empty()) {
        // O_NOATIME needs ownership or CAP_FOWNER.
        Err(rustix::io::Errno::PERM) => {}
        other => return Ok(other?),
    }
    Ok(rustix::fs::openat(dir, ".", flags, Mode::empty())?)
}

/// Whether `name` in `dir` is a directory (not following a symlink).
pub fn is_dir_at(dir: &OwnedFd, name: &OsStr) -> bool {
    rustix::fs::statat(dir, name, rustix::fs::AtFlags::SYMLINK_NOFOLLOW)
        .is_ok_and(|st| FileType::from_raw_mode(st.st_mode) == FileType::Directory)
}

/// Calls `f(name, type, inode)` for one directory entry unless it is `.` or `..`;
/// returns what `f` says (`false`: stop).
fn visit(
    name: &[u8],
    t: FileType,
    ino: u64,
    f: &mut impl FnMut(&OsStr, DType, u64) -> bool,
) -> bool {
    if name == b"." || name == b".." {
        return true;
    }
    let t = match t {
        FileType::Directory => DType::Dir,
        FileType::Unknown => DType::Unknown,
        _ => DType::Other,
    };
    f(OsStr::from_bytes(name), t, ino)
}

#[cfg(target_os = "linux")]
mod linux {
    use std::ffi::OsStr;
    use std::io;
    use std::path::Path;

    use rustix::fd::OwnedFd;
    use rustix::fs::RawDir;

    use super::DType;

    /// The soft limit on open descriptors.
    pub fn fd_limit() -> u64 {
        rustix::process::getrlimit(rustix::process::Resource::Nofile)
            .current
            .unwrap_or(1024)
    }

    /// Calls `f(name, type, inode)` for each entry of the open directory `fd` (without `.`
    /// and `..`), with `getdents64` into `buf`; `f` returns `false` to stop.
    pub fn read_entries(
        fd: &OwnedFd,
        buf: &mut Vec<u8>,
        mut f: impl FnMut(&OsStr, DType, u64) -> bool,
    ) -> io::Result<()> {
        let mut dir = RawDir::new(fd, buf.spare_capacity_mut());
        while let Some(entry) = dir.next() {
            let entry = entry?;
            let name = entry.file_name().to_bytes();
            if !super::visit(name, entry.file_type(), entry.ino(), &mut f) {
                break;
            }
        }
        Ok(())
    }

    /// The name of the pseudo file system `dir` is on, if it is one.
    pub fn pseudo_fs(dir: &Path) -> Option<crate::probe::fs::FsKind> {
        let m = crate::probe::fs::magic(dir)?;
        crate::probe::fs::is_pseudo(m).then(|| crate::probe::fs::describe(dir, 0).kind)
    }
}

#[cfg(not(target_os = "linux"))]
mod other {
    use std::ffi::OsStr;
    use std::io;
    use std::path::Path;

    use rustix::fd::OwnedFd;

    use super::DType;

    pub fn fd_limit() -> u64 {
        0
    }

    pub fn read_entries(
        fd: &OwnedFd,
        _buf: &mut Vec<u8>,
        mut f: impl FnMut(&OsStr, DType, u64) -> bool,
    ) -> io::Result<()> {
        let mut dir = rustix::fs::Dir::read_from(fd)?;
        while let Some(entry) = dir.next() {
            let entry = entry?;
            let name = entry.file_name().to_bytes();
            if !super::visit(name, entry.file_type(), entry.ino() as u64, &mut f) {
                break;
            }
        }
        Ok(())
    }

    pub fn pseudo_fs(_dir: &Path) -> Option<crate::probe::fs::FsKind> {
        None
    }
}
