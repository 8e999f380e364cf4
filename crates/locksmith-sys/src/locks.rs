//! The system calls a lock needs beyond plain files: OFD record locks (`F_OFD_SETLK`,
//! `F_OFD_GETLK`, fcntl(2); libc-only, rustix has no OFD locks), anonymous files
//! (`O_TMPFILE`, open(2)) and linking them into place (linkat(2)).
//!
//! OFD locks belong to the open file description, not to the process: closing another
//! descriptor of the same file (a scanner reading it in the same process) does not drop them,
//! and children that inherit the descriptor keep them held. Classic POSIX locks
//! (`F_SETLK`) would silently vanish in both cases, so they are never used.
//!
//! Linux only; elsewhere every call reports `Unsupported` and the engine uses its fallback
//! (named temporary file, `link()` and PID evidence).

use std::io;

/// Whether an error means "this file system (or kernel) cannot do that": the caller falls
/// back to the method that needs no kernel lock / no anonymous file.
pub fn unsupported(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::Unsupported
        || matches!(
            e.raw_os_error(),
            Some(c) if c == rustix::io::Errno::INVAL.raw_os_error()
                || c == rustix::io::Errno::NOLCK.raw_os_error()
                || c == rustix::io::Errno::OPNOTSUPP.raw_os_error()
                || c == rustix::io::Errno::NOSYS.raw_os_error()
                || c == rustix::io::Errno::ISDIR.raw_os_error()
        )
}

/// `fcntl(fd, F_OFD_GETLK, {F_WRLCK, whole file})`: asks the kernel, without taking anything,
/// whether another open file description holds a lock (OFD or POSIX) that would conflict with
/// a write lock. Works on a read-only descriptor. (flock(2) locks are not seen.)
#[cfg(target_os = "linux")]
pub fn write_lock_conflict(fd: std::os::fd::BorrowedFd<'_>) -> std::io::Result<bool> {
    use std::os::fd::AsRawFd;
    // SAFETY: `flock` is a plain C struct of integers; all-zero is valid (and the kernel
    // requires `l_pid == 0` for OFD requests).
    let mut fl: libc::flock = unsafe { std::mem::zeroed() };
    fl.l_type = libc::F_WRLCK as libc::c_short;
    fl.l_whence = libc::SEEK_SET as libc::c_short;
    // SAFETY: a valid descriptor and a pointer to a live `flock`, which F_OFD_GETLK fills.
    let r = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_OFD_GETLK, &mut fl) };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(fl.l_type != libc::F_UNLCK as libc::c_short)
}

#[cfg(not(target_os = "linux"))]
pub fn write_lock_conflict(_fd: std::os::fd::BorrowedFd<'_>) -> std::io::Result<bool> {
    Err(std::io::Error::new(
        std::io::ErrorKind::Unsupported,
        "OFD locks are not available on this system",
    ))
}

/// Asks the kernel directly ([`write_lock_conflict`] on a read-only descriptor of our own:
/// nothing is taken) whether a lock is held on the file `(dev, ino)` at `path`, whatever a
/// read of `/proc/locks` showed a moment ago (such a read can miss an entry while others lock
/// and unlock). A file that is gone, or is another file now, holds no lock of that inode:
/// `Some(false)`. `None` when it cannot tell (not readable, no OFD locks).
pub fn held_at(path: &std::path::Path, dev: u64, ino: u64) -> Option<bool> {
    use rustix::fs::{Mode, OFlags};
    use std::os::fd::AsFd;
    let flags =
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC;
    let fd = match rustix::fs::open(path, flags, Mode::empty()) {
        Ok(fd) => fd,
        Err(rustix::io::Errno::NOENT) => return Some(false),
        Err(_) => return None,
    };
    let st = rustix::fs::fstat(&fd).ok()?;
    #[allow(clippy::unnecessary_cast)]
    if (st.st_dev as u64, st.st_ino as u64) != (dev, ino) {
        return Some(false);
    }
    write_lock_conflict(fd.as_fd()).ok()
}

#[cfg(target_os = "linux")]
mod imp {
    use std::io;
    use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};
    use std::sync::atomic::{AtomicBool, Ordering};

    use rustix::fs::{AtFlags, Mode, OFlags};

    fn whole_file_lock(kind: libc::c_int) -> libc::flock {
        // SAFETY: `flock` is a plain C struct of integers; all-zero is a valid value (and the
        // kernel requires `l_pid == 0` for OFD requests).
        let mut fl: libc::flock = unsafe { std::mem::zeroed() };
        fl.l_type = kind as libc::c_short;
        fl.l_whence = libc::SEEK_SET as libc::c_short;
        fl.l_start = 0;
        fl.l_len = 0; // to the end of the file, however long it grows
        fl
    }

    /// `fcntl(fd, F_OFD_SETLK, {F_WRLCK, whole file})`: takes an OFD write lock without
    /// waiting. `Ok(true)` when taken, `Ok(false)` when another open file description holds a
    /// conflicting lock. The descriptor must be open for writing.
    pub fn ofd_try_write_lock(fd: BorrowedFd<'_>) -> io::Result<bool> {
        ofd_try_lock(fd, libc::F_WRLCK)
    }

    /// `fcntl(fd, F_OFD_SETLK, {F_RDLCK, whole file})`: takes an OFD read lock without
    /// waiting (on a descriptor open for reading). `Ok(false)` when another open file
    /// description holds a write lock. On a description that holds the write lock, it turns
    /// that lock into a read lock, atomically: the file is locked throughout.
    pub fn ofd_try_read_lock(fd: BorrowedFd<'_>) -> io::Result<bool> {
        ofd_try_lock(fd, libc::F_RDLCK)
    }

    fn ofd_try_lock(fd: BorrowedFd<'_>, kind: libc::c_int) -> io::Result<bool> {
        let mut fl = whole_file_lock(kind);
        // SAFETY: valid descriptor and a pointer to a live, initialised `flock`.
        let r = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_OFD_SETLK, &mut fl) };
        if r == 0 {
            return Ok(true);
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EAGAIN) | Some(libc::EACCES) => Ok(false),
            _ => Err(e),
        }
    }

    /// `openat(dir, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600)`: a file in `dir` that has no
    /// name until [`link_anonymous`] gives it one, and that vanishes if we die first.
    pub fn open_anonymous(dir: BorrowedFd<'_>) -> io::Result<OwnedFd> {
        Ok(rustix::fs::openat(
            dir,
            ".",
            OFlags::TMPFILE | OFlags::RDWR | OFlags::CLOEXEC,
            Mode::RUSR | Mode::WUSR,
        )?)
    }

    /// Set once `AT_EMPTY_PATH` turned out to need a capability we lack.
    static EMPTY_PATH_DENIED: AtomicBool = AtomicBool::new(false);

    /// Links the anonymous file `fd` into `dir` as `name`; fails with `EEXIST` if the name
    /// exists (never replaces anything). `linkat(fd, "", dir, name, AT_EMPTY_PATH)` needs
    /// `CAP_DAC_READ_SEARCH`; without it, `linkat` of `/proc/self/fd/N` with
    /// `AT_SYMLINK_FOLLOW` does the same.
    pub fn link_anonymous(
        fd: BorrowedFd<'_>,
        dir: BorrowedFd<'_>,
        name: &std::ffi::OsStr,
    ) -> io::Result<()> {
        if !EMPTY_PATH_DENIED.load(Ordering::Relaxed) {
            match rustix::fs::linkat(fd, "", dir, name, AtFlags::EMPTY_PATH) {
                Ok(()) => return Ok(()),
                Err(rustix::io::Errno::NOENT) => EMPTY_PATH_DENIED.store(true, Ordering::Relaxed),
                Err(e) => return Err(e.into()),
            }
        }
        let proc_path = format!("/proc/self/fd/{}", fd.as_raw_fd());
        Ok(rustix::fs::linkat(
            rustix::fs::CWD,
            proc_path.as_str(),
            dir,
            name,
            AtFlags::SYMLINK_FOLLOW,
        )?)
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    use std::io;
    use std::os::fd::{BorrowedFd, OwnedFd};

    fn no() -> io::Error {
        io::Error::new(io::ErrorKind::Unsupported, "not available on this system")
    }

    pub fn ofd_try_write_lock(_fd: BorrowedFd<'_>) -> io::Result<bool> {
        Err(no())
    }

    pub fn ofd_try_read_lock(_fd: BorrowedFd<'_>) -> io::Result<bool> {
        Err(no())
    }

    pub fn open_anonymous(_dir: BorrowedFd<'_>) -> io::Result<OwnedFd> {
        Err(no())
    }

    pub fn link_anonymous(
        _fd: BorrowedFd<'_>,
        _dir: BorrowedFd<'_>,
        _name: &std::ffi::OsStr,
    ) -> io::Result<()> {
        Err(no())
    }
}

pub use imp::*;

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use std::os::fd::AsFd;

    #[test]
    fn ofd_locks_conflict_between_descriptions_not_within_one() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        let a = std::fs::File::create(&p).unwrap();
        let b = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&p)
            .unwrap();
        let r = std::fs::File::open(&p).unwrap();
        assert!(!write_lock_conflict(r.as_fd()).unwrap());
        assert!(ofd_try_write_lock(a.as_fd()).unwrap());
        assert!(ofd_try_write_lock(a.as_fd()).unwrap(), "re-locking our own");
        assert!(!ofd_try_write_lock(b.as_fd()).unwrap());
        assert!(write_lock_conflict(r.as_fd()).unwrap());
        // Closing another descriptor of the same file keeps the OFD lock (unlike POSIX).
        drop(std::fs::File::open(&p).unwrap());
        assert!(write_lock_conflict(r.as_fd()).unwrap());
        drop(a);
        assert!(!write_lock_conflict(r.as_fd()).unwrap());
        assert!(ofd_try_write_lock(b.as_fd()).unwrap());
    }

    #[test]
    fn a_write_lock_turned_into_read_locks_keeps_the_file_locked() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, "record\n").unwrap();
        let rw = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&p)
            .unwrap();
        let ro = std::fs::File::open(&p).unwrap();
        let other = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&p)
            .unwrap();
        assert!(ofd_try_write_lock(rw.as_fd()).unwrap());
        assert!(
            !ofd_try_read_lock(ro.as_fd()).unwrap(),
            "a write lock excludes readers"
        );
        assert!(
            ofd_try_read_lock(rw.as_fd()).unwrap(),
            "turned into a read lock"
        );
        assert!(ofd_try_read_lock(ro.as_fd()).unwrap());
        // Either read lock keeps a writer out, and a probe sees the file locked.
        assert!(write_lock_conflict(other.as_fd()).unwrap());
        drop(rw);
        assert!(!ofd_try_write_lock(other.as_fd()).unwrap());
        assert!(write_lock_conflict(other.as_fd()).unwrap());
        drop(ro);
        assert!(ofd_try_write_lock(other.as_fd()).unwrap());
    }

    #[test]
    fn anonymous_files_link_once() {
        let dir = tempfile::tempdir().unwrap();
        let d = std::fs::File::open(dir.path()).unwrap();
        let f = open_anonymous(d.as_fd()).unwrap();
        rustix::io::write(&f, b"x\n").unwrap();
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        link_anonymous(f.as_fd(), d.as_fd(), "L".as_ref()).unwrap();
        assert_eq!(std::fs::read(dir.path().join("L")).unwrap(), b"x\n");
        let g = open_anonymous(d.as_fd()).unwrap();
        let e = link_anonymous(g.as_fd(), d.as_fd(), "L".as_ref()).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::AlreadyExists);
    }
}
