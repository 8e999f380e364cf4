//! Making a new lock file appear atomically, complete and (where the kernel allows) already
//! locked.
//!
//! Normal method: an anonymous file (`O_TMPFILE`) in the lock's directory, OFD write lock
//! taken, record written, then `linkat` to the lock name, which fails if the name exists. A
//! reader never sees an empty or half-written record, and the lock is held from the instant
//! the name exists.
//!
//! Fallback (network file systems, file systems without OFD locks or anonymous files, or when
//! forced): a uniquely named temporary file, the record written and the file closed (which
//! sends the record to the server, so other clients never read an empty lock file, and reports
//! a write the server refused), then `link()` to the lock name. Whether the link made the lock
//! ours is decided by evidence, not by the reply alone (liblockfile's method; an NFS `LINK`
//! retransmitted after a lost reply reports `EEXIST` for a link it made):
//! - the temporary file's link count reaching 2, where the file system counts links (local
//!   file systems, NFS);
//! - else the record at the lock name, read back by name, carrying our random token. sshfs
//!   (SFTP) has no link counts at all (always 1) and numbers inodes per path, so only the
//!   content can tell which file a name holds there.
//!
//! Then the temporary name is removed, and the holder keeps the lock file opened by its own
//! name: a network file system keeps a file that is removed while open under a hidden name
//! (`.nfsXXXX`, `.fuse_hiddenXXXX`), and the descriptor kept for the heartbeat must be the one
//! a path lookup finds. No kernel lock is kept, and the record says so. (A named temporary file
//! that does take an OFD lock, where anonymous files are unsupported, stays open instead.)
//!
//! A file system without hard links, or whose `link()` reports a link that the lock name does
//! not show, cannot hold a lock safely: the attempt fails with [`ErrorKind::Unsupported`]
//! before anything exists at the lock name, and the temporary file is removed. Every failure
//! on the way removes what this attempt made.

use std::ffi::OsString;
use std::fs::File;
use std::io::Write;
use std::os::fd::AsFd;
use std::time::Duration;

use rustix::fs::{AtFlags, Mode, OFlags};
use rustix::io::Errno;

use super::error::{EngineError, ErrorKind};
use super::place::{Place, dev_ino, read_bounded};
use super::record::Record;
use locksmith_sys::locks as sys;

/// A complete lock file that is not yet (or has just been) linked at the lock name.
#[derive(Debug)]
pub struct Fresh<'a> {
    place: &'a Place,
    /// Open while it carries the OFD lock or has no name yet; a named temporary file without a
    /// kernel lock is closed once written (which publishes it on a network file system).
    file: Option<File>,
    record: Record,
    /// Name of the named temporary file (fallback method); `None` for an anonymous file.
    temp: Option<TempName<'a>>,
    /// The lock file opened by its name when [`link`](Fresh::link) read our token back.
    by_name: Option<(File, u64, u64)>,
}

/// A lock file that is ours, as handed over to its holder.
#[derive(Debug)]
pub struct Held {
    /// Open read-write; carries the OFD lock when `record.kernel_lock`.
    pub file: File,
    pub record: Record,
    /// Of `file`, which is also what the lock name denotes.
    pub dev: u64,
    pub ino: u64,
}

impl<'a> Fresh<'a> {
    /// Creates the file. `use_kernel_lock`: try the normal method (else go straight to the
    /// fallback).
    pub fn create(
        place: &'a Place,
        use_kernel_lock: bool,
        heartbeat: Option<Duration>,
    ) -> Result<Self, EngineError> {
        let record = Record::for_this_process(false, heartbeat);
        let (fd, temp) = if use_kernel_lock {
            match sys::open_anonymous(place.dir.as_fd()) {
                Ok(fd) => (fd, None),
                Err(e) if sys::unsupported(&e) => named_temp(place, &record)?,
                Err(e) => return Err(create_err(place, e)),
            }
        } else {
            named_temp(place, &record)?
        };
        // From here on, an error drops `temp`, which removes the temporary file.
        let mut fresh = Fresh {
            place,
            record,
            file: Some(File::from(fd)),
            temp,
            by_name: None,
        };
        let file = fresh.file.as_mut().expect("just opened");
        let kernel_lock = use_kernel_lock
            && match sys::ofd_try_write_lock(file.as_fd()) {
                Ok(taken) => taken,
                Err(e) if sys::unsupported(&e) => false,
                Err(e) => return Err(place.io_err("lock the new lock file (F_OFD_SETLK)", e)),
            };
        fresh.record.kernel_lock = kernel_lock;
        file.write_all(&fresh.record.to_line())
            .map_err(|e| place.io_err("write the owner record", e))?;
        if fresh.temp.is_some() && !kernel_lock {
            // Another client of a network file system may read the file as soon as it is
            // linked, from the server: the record must be there first. Closing it sends it
            // (close-to-open consistency on NFS, a flush of pending writes on FUSE), and a
            // write error the server reports late (quota, full disk) surfaces here.
            let file = fresh.file.take().expect("open until here");
            close_checked(file).map_err(|e| place.io_err("write the owner record", e))?;
        }
        Ok(fresh)
    }

    /// Tries to give the file the lock name. `Ok(true)`: it is ours now. `Ok(false)`: the name
    /// exists (someone else's lock, or anything else). Never replaces an existing entry, and
    /// never leaves the name behind when it fails.
    pub fn link(&mut self) -> Result<bool, EngineError> {
        let place = self.place;
        let Some(temp) = &self.temp else {
            let file = self.file.as_ref().expect("an anonymous file stays open");
            return match sys::link_anonymous(file.as_fd(), place.dir.as_fd(), &place.name) {
                Ok(()) => Ok(true),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
                Err(e) => Err(link_err(place, e)),
            };
        };
        let r = rustix::fs::linkat(
            place.dir.as_fd(),
            &temp.name,
            place.dir.as_fd(),
            &place.name,
            AtFlags::empty(),
        );
        match r {
            Ok(()) => {}
            // A local file system's EEXIST is the truth; a network file system's may answer
            // a retransmitted request whose first copy made the link.
            Err(Errno::EXIST) if !place.fs.network => return Ok(false),
            Err(Errno::EXIST) => {}
            Err(e) => return Err(link_err(place, e.into())),
        }
        if self.link_count_is_two(temp)? {
            return Ok(true);
        }
        // No link count to go by (sshfs always says 1): the record read back by name. Opened
        // read-write, this is the descriptor the holder keeps.
        if let Some(opened) = reopen_ours(place, self.record.token())? {
            self.by_name = Some(opened);
            return Ok(true);
        }
        if r.is_ok() {
            // The reply says linked, the file system shows no such link: nothing of ours is
            // at the name, and nothing on this file system can be trusted to tell.
            return Err(place.err(ErrorKind::Unsupported {
                fs: place.fs.kind.to_string(),
                why: "link() reported success but the lock name does not hold the new lock file",
            }));
        }
        Ok(false)
    }

    /// Whether the temporary file, looked up by its name, now has two links.
    fn link_count_is_two(&self, temp: &TempName<'_>) -> Result<bool, EngineError> {
        let st = rustix::fs::statat(
            self.place.dir.as_fd(),
            &temp.name,
            AtFlags::SYMLINK_NOFOLLOW,
        )
        .map_err(|e| self.place.io_err("stat the temporary file", e))?;
        Ok(st.st_nlink >= 2)
    }

    /// After a successful [`link`](Fresh::link): the lock file, ready to be held. Without a
    /// kernel lock, the temporary file's descriptor is closed and its name removed, and the
    /// lock file is opened again by the lock name and checked to carry our token. If that fails, the
    /// lock name is removed again (when it still holds our record): never a half-made lock.
    pub fn into_held(self) -> Result<Held, EngineError> {
        let Fresh {
            place,
            file,
            record,
            temp,
            by_name,
        } = self;
        if let Some(file) = file {
            // The descriptor carries the OFD lock (or the file never had another name): keep
            // it. A temporary name goes now; on a local file system nothing hides it.
            drop(temp);
            let st = rustix::fs::fstat(&file).map_err(|e| {
                remove_if_ours(place, record.token());
                place.io_err("stat the new lock file", e)
            })?;
            let (dev, ino) = dev_ino(&st);
            return Ok(Held {
                file,
                record,
                dev,
                ino,
            });
        }
        drop(temp);
        let opened = match by_name {
            Some(o) => Ok(Some(o)),
            None => reopen_ours(place, record.token()),
        };
        match opened {
            Ok(Some((file, dev, ino))) => Ok(Held {
                file,
                record,
                dev,
                ino,
            }),
            Ok(None) => Err(place.err(ErrorKind::Lost)),
            Err(e) => {
                remove_if_ours(place, record.token());
                Err(e)
            }
        }
    }
}

/// Opens the lock file by name, read-write, and checks that it carries `token`: the
/// descriptor and its `(dev, ino)`, or `None` when the name holds something else.
fn reopen_ours(place: &Place, token: &str) -> Result<Option<(File, u64, u64)>, EngineError> {
    let opened = match place.open_existing(true) {
        Ok(o) => o,
        // Not a lock file, or not ours to write: not our record.
        Err(e) if not_ours(&e) => return Ok(None),
        Err(e) => return Err(e),
    };
    let Some((file, _)) = opened else {
        return Ok(None);
    };
    let (content, _) = read_bounded(&file, super::place::READ_LIMIT)
        .map_err(|e| place.io_err("read the lock file back", e))?;
    if Record::parse(&content).and_then(|r| r.token).as_deref() != Some(token) {
        return Ok(None);
    }
    let st = match rustix::fs::fstat(&file) {
        Ok(st) => st,
        // Answered by path on FUSE file systems (sshfs): removed meanwhile.
        Err(Errno::NOENT) => return Ok(None),
        Err(e) => return Err(place.io_err("stat the lock file", e)),
    };
    let (dev, ino) = dev_ino(&st);
    Ok(Some((file, dev, ino)))
}

/// Whether the file at the lock name, read by name now, is a record carrying `token`.
pub fn names_token(place: &Place, token: &str) -> Result<bool, EngineError> {
    let opened = match place.open_existing(false) {
        Ok(o) => o,
        Err(e) if not_ours(&e) => return Ok(false),
        Err(e) => return Err(e),
    };
    let Some((file, _)) = opened else {
        return Ok(false);
    };
    let (content, _) = read_bounded(&file, super::place::READ_LIMIT)
        .map_err(|e| place.io_err("read the lock file back", e))?;
    Ok(Record::parse(&content).and_then(|r| r.token).as_deref() == Some(token))
}

/// An error opening the lock name that means it is not our record: not a lock file (a
/// directory, a symlink...), or not readable or writable by us.
fn not_ours(e: &EngineError) -> bool {
    matches!(
        e.kind(),
        ErrorKind::NotALockFile(_) | ErrorKind::PermissionDenied { .. }
    )
}

/// `close(2)`, reporting its error (a network file system may report a failed write only
/// there), which dropping a `File` would ignore.
fn close_checked(file: File) -> std::io::Result<()> {
    use std::os::fd::IntoRawFd;
    let fd = file.into_raw_fd();
    // SAFETY: `fd` was just released from an owning `File`, so it is open and closed exactly
    // once, here.
    if unsafe { libc::close(fd) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Best effort, on an error path: removes the lock name if it holds our record.
fn remove_if_ours(place: &Place, token: &str) {
    if matches!(names_token(place, token), Ok(true)) {
        let _ = place.unlink();
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

/// `openat(dir, ".locksmith-<creator>-<token>.tmp", O_CREAT|O_EXCL|O_RDWR|O_NOFOLLOW|O_CLOEXEC,
/// 0600)`; the name says who created it (see `sweep`).
fn named_temp<'p>(
    place: &'p Place,
    record: &Record,
) -> Result<(std::os::fd::OwnedFd, Option<TempName<'p>>), EngineError> {
    let name = super::sweep::temp_name(record);
    let fd = rustix::fs::openat(
        place.dir.as_fd(),
        &name,
        OFlags::CREATE | OFlags::EXCL | OFlags::RDWR | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::RUSR | Mode::WUSR,
    )
    .map_err(|e| create_err(place, e.into()))?;
    Ok((fd, Some(TempName { place, name })))
}

/// An error of `link()` from our own new file to the lock name.
fn link_err(place: &Place, e: std::io::Error) -> EngineError {
    match e.raw_os_error().map(Errno::from_raw_os_error) {
        // EPERM for a file we just created ourselves: the file system has no hard links.
        Some(Errno::PERM) | Some(Errno::OPNOTSUPP) | Some(Errno::NOSYS) | Some(Errno::MLINK) => {
            place.err(ErrorKind::Unsupported {
                fs: place.fs.kind.to_string(),
                why: "it does not support hard links (link() failed), which a lock needs to appear atomically",
            })
        }
        _ => create_err(place, e),
    }
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
