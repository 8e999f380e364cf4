//! Making a new lock file appear atomically, complete and (where the kernel allows) already
//! locked.
//!
//! Normal method: an anonymous file (`O_TMPFILE`) in the lock's directory, OFD write lock
//! taken, record written, then `linkat` to the lock name, which fails if the name exists. A
//! reader never sees an empty or half-written record, and the lock is held from the instant
//! the name exists.
//!
//! Fallback (network file systems, file systems without OFD locks or anonymous files, or when
//! forced): a uniquely named temporary file, the record written, `link()` to the lock name,
//! and success decided by the temporary file's link count reaching 2 (liblockfile's method: a
//! `link()` reply lost on NFS does not lie about the link count). No kernel lock is kept, and
//! the record says so. On network file systems the record is flushed to the server
//! (`fdatasync`) before the link, so other clients never read an empty lock file.

use std::ffi::OsString;
use std::fs::File;
use std::io::Write;
use std::os::fd::AsFd;
use std::time::Duration;

use rustix::fs::{AtFlags, Mode, OFlags};
use rustix::io::Errno;

use super::error::{EngineError, ErrorKind};
use super::place::Place;
use super::record::{Record, new_token};
use super::sys;

/// A complete lock file that is not yet (or has just been) linked at the lock name.
#[derive(Debug)]
pub struct Fresh<'a> {
    place: &'a Place,
    pub file: File,
    pub dev: u64,
    pub ino: u64,
    pub record: Record,
    /// Name of the named temporary file (fallback method); `None` for an anonymous file.
    temp: Option<TempName<'a>>,
}

impl<'a> Fresh<'a> {
    /// Creates the file. `use_kernel_lock`: try the normal method (else go straight to the
    /// fallback).
    pub fn create(
        place: &'a Place,
        use_kernel_lock: bool,
        heartbeat: Option<Duration>,
    ) -> Result<Self, EngineError> {
        let (fd, temp) = if use_kernel_lock {
            match sys::open_anonymous(place.dir.as_fd()) {
                Ok(fd) => (fd, None),
                Err(e) if sys::unsupported(&e) => named_temp(place)?,
                Err(e) => return Err(create_err(place, e)),
            }
        } else {
            named_temp(place)?
        };
        let file = File::from(fd);
        let mut fresh = Fresh {
            place,
            dev: 0,
            ino: 0,
            record: Record::for_this_process(false, heartbeat),
            file,
            temp,
        };
        let kernel_lock = use_kernel_lock
            && match sys::ofd_try_write_lock(fresh.file.as_fd()) {
                Ok(taken) => taken,
                Err(e) if sys::unsupported(&e) => false,
                Err(e) => return Err(place.io_err("lock the new lock file (F_OFD_SETLK)", e)),
            };
        fresh.record.kernel_lock = kernel_lock;
        fresh
            .file
            .write_all(&fresh.record.to_line())
            .map_err(|e| place.io_err("write the owner record", e))?;
        if place.fs.network {
            // Another client of a network file system may read the file as soon as it is
            // linked, from the server: the record must be there first, or it reads an empty
            // file (close-to-open consistency only covers our own later opens).
            fresh
                .file
                .sync_data()
                .map_err(|e| place.io_err("flush the owner record to the server", e))?;
        }
        let st = rustix::fs::fstat(&fresh.file)
            .map_err(|e| place.io_err("stat the new lock file", e))?;
        (fresh.dev, fresh.ino) = super::place::dev_ino(&st);
        Ok(fresh)
    }

    /// Tries to give the file the lock name. `Ok(true)`: it is ours now. `Ok(false)`: the name
    /// exists (someone else's lock, or anything else). Never replaces an existing entry.
    pub fn link(&self) -> Result<bool, EngineError> {
        let place = self.place;
        let linked = match &self.temp {
            None => sys::link_anonymous(self.file.as_fd(), place.dir.as_fd(), &place.name),
            Some(temp) => {
                let r = rustix::fs::linkat(
                    place.dir.as_fd(),
                    &temp.name,
                    place.dir.as_fd(),
                    &place.name,
                    AtFlags::empty(),
                );
                // Trust the link count, not the reply (a retransmitted NFS LINK can report
                // EEXIST for a link it made).
                let nlink = rustix::fs::fstat(&self.file)
                    .map_err(|e| place.io_err("stat the temporary file", e))?
                    .st_nlink;
                if nlink >= 2 {
                    return Ok(true);
                }
                match r {
                    Ok(()) => Err(std::io::Error::other(
                        "link() reported success but the link count did not change",
                    )),
                    Err(e) => Err(e.into()),
                }
            }
        };
        match linked {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
            Err(e) => Err(create_err(place, e)),
        }
    }

    /// After a successful link: drops the temporary name and hands over the file.
    pub fn into_held(self) -> (File, Record, u64, u64) {
        let Fresh {
            file,
            dev,
            ino,
            record,
            temp,
            ..
        } = self;
        drop(temp);
        (file, record, dev, ino)
    }
}

/// The name of a named temporary file, removed when dropped.
#[derive(Debug)]
struct TempName<'a> {
    place: &'a Place,
    name: OsString,
}

impl Drop for TempName<'_> {
    fn drop(&mut self) {
        let _ = rustix::fs::unlinkat(self.place.dir.as_fd(), &self.name, AtFlags::empty());
    }
}

/// `openat(dir, ".locksmith-<token>.tmp", O_CREAT|O_EXCL|O_RDWR|O_NOFOLLOW|O_CLOEXEC, 0600)`.
fn named_temp(place: &Place) -> Result<(std::os::fd::OwnedFd, Option<TempName<'_>>), EngineError> {
    let name = OsString::from(format!(".locksmith-{}.tmp", new_token()));
    let fd = rustix::fs::openat(
        place.dir.as_fd(),
        &name,
        OFlags::CREATE | OFlags::EXCL | OFlags::RDWR | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::RUSR | Mode::WUSR,
    )
    .map_err(|e| create_err(place, e.into()))?;
    Ok((fd, Some(TempName { place, name })))
}

fn create_err(place: &Place, e: std::io::Error) -> EngineError {
    let dir = place
        .path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(std::path::Path::new("."))
        .to_path_buf();
    match e.raw_os_error().map(Errno::from_raw_os_error) {
        Some(Errno::ACCESS) | Some(Errno::PERM) => place.err(ErrorKind::PermissionDenied {
            op: "create a file in the lock's directory",
        }),
        Some(Errno::ROFS) => place.err(ErrorKind::PermissionDenied {
            op: "create a file: read-only file system",
        }),
        Some(Errno::NOENT) => place.err(ErrorKind::NoDirectory { dir, exists: false }),
        _ => place.io_err("create the lock file", e),
    }
}
