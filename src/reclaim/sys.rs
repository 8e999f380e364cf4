//! The file operations of a reclaim, all relative to the lock's verified directory
//! descriptor (never through a path): opening an entry without following it, its identity,
//! whether a kernel lock is held on it, moving it aside under a private name and back
//! (`renameat2(RENAME_NOREPLACE)`), and removing it (`unlinkat`).

use std::ffi::{OsStr, OsString};
use std::hash::BuildHasher;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use rustix::fs::{AtFlags, FileType, FlockOperation, Mode, OFlags, RenameFlags};
use rustix::io::Errno;

use super::ASIDE_MARKER;
use super::journal::{Member, Meta};
use crate::probe::{FileKey, KernelLocks};
use crate::scan::Identity;

/// Opens the entry itself, whatever it is, without following a symlink or opening a
/// device (`O_PATH|O_NOFOLLOW`).
pub fn open_path(dir: &OwnedFd, name: &OsStr) -> io::Result<OwnedFd> {
    Ok(rustix::fs::openat(
        dir,
        name,
        OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )?)
}

pub fn identity_fd(fd: &OwnedFd) -> io::Result<Identity> {
    Ok(identity_of(&rustix::fs::fstat(fd)?))
}

/// `fstatat(dir, name, AT_SYMLINK_NOFOLLOW)` (stat(2)) as an [`Identity`].
pub fn identity_at(dir: &OwnedFd, name: &OsStr) -> io::Result<Identity> {
    let st = rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW)?;
    Ok(identity_of(&st))
}

/// The link count of an open file, if it can be read.
#[allow(clippy::unnecessary_cast)]
pub fn links(fd: &OwnedFd) -> Option<u64> {
    rustix::fs::fstat(fd).ok().map(|st| st.st_nlink as u64)
}

// The field types of `struct stat` differ between platforms.
#[allow(clippy::unnecessary_cast)]
fn identity_of(st: &rustix::fs::Stat) -> Identity {
    Identity {
        dev: st.st_dev as u64,
        ino: st.st_ino as u64,
        size: st.st_size as u64,
        mtime_ns: st.st_mtime as i128 * 1_000_000_000 + st.st_mtime_nsec as i128,
        ctime_ns: st.st_ctime as i128 * 1_000_000_000 + st.st_ctime_nsec as i128,
    }
}

/// Whether a kernel lock is held on the open file `fd` now: a POSIX or OFD lock
/// (`F_OFD_GETLK`, which takes nothing), or a `flock(2)` lock (a non-blocking exclusive
/// `flock` of our own fails; when it succeeds it is released at once). Where the kernel
/// cannot tell, `/proc/locks` is read.
pub fn kernel_locked(fd: BorrowedFd<'_>, id: &Identity) -> bool {
    match crate::probe::kernel_locks::write_lock_conflict(fd) {
        Ok(true) => return true,
        Ok(false) => {}
        Err(_) => return listed(id),
    }
    match rustix::fs::flock(fd, FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => {
            let _ = rustix::fs::flock(fd, FlockOperation::Unlock);
            false
        }
        Err(Errno::WOULDBLOCK) => true,
        Err(_) => listed(id),
    }
}

/// Whether `/proc/locks` lists a lock on the file.
fn listed(id: &Identity) -> bool {
    !KernelLocks::read()
        .on(FileKey::from_dev_ino(id.dev, id.ino))
        .is_empty()
}

/// Whether a kernel lock is held on the directory `name` in `dir` (which must be the
/// expected one); one that cannot be opened counts as locked.
pub fn dir_locked(dir: &OwnedFd, name: &OsStr, expected: &Identity) -> bool {
    let fd = match rustix::fs::openat(
        dir,
        name,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    ) {
        Ok(fd) => fd,
        Err(_) => return true,
    };
    match identity_fd(&fd) {
        Ok(id) if (id.dev, id.ino) == (expected.dev, expected.ino) => {
            kernel_locked(fd.as_fd(), expected)
        }
        _ => true,
    }
}

/// A private name for `name` in its directory: `NAME.locksmith-aside-RANDOM`.
fn random_aside_name(name: &OsStr) -> OsString {
    static COUNT: AtomicU64 = AtomicU64::new(0);
    let n = COUNT.fetch_add(1, Ordering::Relaxed);
    let random = std::collections::hash_map::RandomState::new().hash_one((
        std::process::id(),
        n,
        std::time::SystemTime::now(),
    ));
    let mut out: Vec<u8> = name.as_bytes().iter().copied().take(180).collect();
    out.extend_from_slice(ASIDE_MARKER.as_bytes());
    out.extend_from_slice(format!("{random:016x}").as_bytes());
    OsString::from_vec(out)
}

/// Renames `name` to the private name `first` in the same directory, or, if that is
/// taken, to a new random one, never replacing anything (`renameat2(RENAME_NOREPLACE)`).
/// Returns the private name.
pub fn move_aside(dir: &OwnedFd, name: &OsStr, first: &OsStr) -> io::Result<OsString> {
    for i in 0..16 {
        let aside = if i == 0 {
            first.to_os_string()
        } else {
            random_aside_name(name)
        };
        match rustix::fs::renameat_with(dir, name, dir, &aside, RenameFlags::NOREPLACE) {
            Ok(()) => return Ok(aside),
            Err(Errno::EXIST) => continue,
            // The file system cannot refuse to replace: the private name is random and
            // was just seen free.
            Err(Errno::INVAL) | Err(Errno::NOSYS) => {
                match rustix::fs::statat(dir, &aside, AtFlags::SYMLINK_NOFOLLOW) {
                    Err(Errno::NOENT) => {
                        rustix::fs::renameat(dir, name, dir, &aside)?;
                        return Ok(aside);
                    }
                    _ => continue,
                }
            }
            Err(e) => return Err(e.into()),
        }
    }
    Err(io::Error::other("no free private name"))
}

/// Renames the private name back to `name`, unless something has taken `name` since.
pub fn put_back(dir: &OwnedFd, aside: &OsStr, name: &OsStr) -> io::Result<()> {
    match rustix::fs::renameat_with(dir, aside, dir, name, RenameFlags::NOREPLACE) {
        Ok(()) => Ok(()),
        Err(Errno::EXIST) => Err(io::Error::other(format!(
            "{} exists again",
            Path::new(name).display()
        ))),
        // No RENAME_NOREPLACE here: a hard link cannot replace anything either.
        Err(Errno::INVAL) | Err(Errno::NOSYS) => {
            rustix::fs::linkat(dir, aside, dir, name, AtFlags::empty())?;
            rustix::fs::unlinkat(dir, aside, AtFlags::empty())?;
            Ok(())
        }
        Err(e) => Err(e.into()),
    }
}

/// Opens a regular file through `openat(O_NOFOLLOW|O_NONBLOCK)` (openat(2)), after
/// checking that the opened file is the expected one.
pub fn open_file_at(dir: &OwnedFd, name: &OsStr, expected: &Identity) -> io::Result<OwnedFd> {
    let fd = rustix::fs::openat(
        dir,
        name,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    let st = rustix::fs::fstat(&fd)?;
    if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
        return Err(io::Error::other("it is no longer a regular file"));
    }
    let id = identity_of(&st);
    if (id.dev, id.ino) != (expected.dev, expected.ino) {
        return Err(io::Error::other("it was replaced while being opened"));
    }
    Ok(fd)
}

/// The metadata a restore needs, of `name` in `dir` (never followed).
pub fn meta_at(dir: &OwnedFd, name: &OsStr) -> io::Result<Meta> {
    let st = rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW)?;
    Ok(Meta::of(&st))
}

/// `unlinkat(dir, name, 0 or AT_REMOVEDIR)` (unlinkat(2)): removes the entry itself, a
/// symlink as a link.
/// Removes the records `members` from the lock directory `name` in `dir` (each still a
/// regular file: a name that became anything else is left, and the directory with it).
pub fn remove_records(dir: &OwnedFd, name: &OsStr, members: &[Member]) -> io::Result<()> {
    if members.is_empty() {
        return Ok(());
    }
    let inner = rustix::fs::openat(
        dir,
        name,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    for m in members {
        let n = m.name_os();
        let st = rustix::fs::statat(&inner, &n, AtFlags::SYMLINK_NOFOLLOW)?;
        if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
            return Err(io::Error::other(format!(
                "{} is no longer a regular file",
                m.name
            )));
        }
        rustix::fs::unlinkat(&inner, &n, AtFlags::empty())?;
    }
    Ok(())
}

/// Writes the records `members` back into the lock directory `name` (when it could not be
/// removed after them).
pub fn write_records(dir: &OwnedFd, name: &OsStr, members: &[Member]) -> io::Result<()> {
    let inner = rustix::fs::openat(
        dir,
        name,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    for m in members {
        let fd = rustix::fs::openat(
            &inner,
            m.name_os(),
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(m.meta.mode & 0o7777),
        )?;
        rustix::io::write(&fd, &m.bytes())?;
    }
    Ok(())
}

pub fn unlink_at(dir: &OwnedFd, name: &OsStr, is_dir: bool) -> io::Result<()> {
    let flags = if is_dir {
        AtFlags::REMOVEDIR
    } else {
        AtFlags::empty()
    };
    rustix::fs::unlinkat(dir, name, flags)?;
    Ok(())
}
