//! Where a lock lives: its directory, opened once, and its file name in it. Every operation
//! goes through the directory descriptor (`openat`, `linkat`, `fstatat`, `unlinkat` on the last
//! component), so a symlink planted at the lock path is never followed and a removal always
//! hits the entry that was checked.

use std::ffi::{OsStr, OsString};
use std::fs::{File, Metadata};
use std::io;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;

use super::error::{EngineError, ErrorKind};
use super::judge::{Direct, Witness};
use locksmith_sys::fs::{FsInfo, describe};

/// How much of an existing lock file is read (a record is a few hundred bytes; more than this
/// is not a record, but the bytes are still handed to `before_unlink` to be saved).
pub const READ_LIMIT: usize = 64 * 1024;

/// A lock's directory and name.
#[derive(Debug, Clone)]
pub struct Place {
    /// The lock path as the caller gave it (for messages and judges).
    pub path: PathBuf,
    pub dir: Arc<OwnedFd>,
    pub name: OsString,
    /// The file system of the directory.
    pub fs: FsInfo,
    /// Where the judge's evidence comes from.
    pub witness: Arc<dyn Witness>,
}

impl Place {
    /// Opens the directory of `path`.
    pub fn open(path: &Path) -> Result<Self, EngineError> {
        let bytes = path.as_os_str().as_bytes();
        if bytes.is_empty() {
            return Err(EngineError::new(
                path,
                ErrorKind::InvalidPath("it is empty"),
            ));
        }
        if bytes.ends_with(b"/") {
            return Err(EngineError::new(
                path,
                ErrorKind::InvalidPath("it ends with '/', which names a directory"),
            ));
        }
        let name = match path.file_name() {
            Some(n) if n != OsStr::new(".") => n.to_os_string(),
            _ => {
                return Err(EngineError::new(
                    path,
                    ErrorKind::InvalidPath("it has no file name"),
                ));
            }
        };
        let dir_path = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let dir = rustix::fs::openat(rustix::fs::CWD, &dir_path, dir_flags(), Mode::empty())
            .map_err(|e| {
                let kind = match e {
                    Errno::NOENT => ErrorKind::NoDirectory {
                        dir: dir_path.clone(),
                        exists: false,
                    },
                    Errno::NOTDIR => ErrorKind::NoDirectory {
                        dir: dir_path.clone(),
                        exists: true,
                    },
                    Errno::ACCESS | Errno::PERM => ErrorKind::PermissionDenied {
                        op: "open the lock's directory",
                    },
                    e => ErrorKind::Io {
                        op: "open the lock's directory",
                        source: e.into(),
                    },
                };
                EngineError::new(path, kind)
            })?;
        let st = rustix::fs::fstat(&dir)
            .map_err(|e| EngineError::io(path, "stat the lock's directory", e.into()))?;
        let fs = describe(&dir_path, dev_ino(&st).0);
        Ok(Place {
            path: path.to_path_buf(),
            dir: Arc::new(dir),
            name,
            fs,
            witness: Arc::new(Direct),
        })
    }

    /// The entry `name` of the open directory `dir` (`path` names it in messages and for the
    /// judges; it is not resolved).
    pub fn at(dir: OwnedFd, name: &OsStr, path: &Path) -> Result<Self, EngineError> {
        let st = rustix::fs::fstat(&dir)
            .map_err(|e| EngineError::io(path, "stat the lock's directory", e.into()))?;
        // The file system of the open directory itself, through its descriptor where /proc
        // has it.
        let by_fd = PathBuf::from(format!("/proc/self/fd/{}", dir.as_raw_fd()));
        let dir_path = if by_fd.exists() {
            by_fd
        } else {
            path.parent().unwrap_or(Path::new(".")).to_path_buf()
        };
        let fs = describe(&dir_path, dev_ino(&st).0);
        Ok(Place {
            path: path.to_path_buf(),
            dir: Arc::new(dir),
            name: name.to_os_string(),
            fs,
            witness: Arc::new(Direct),
        })
    }

    /// Another name in the same directory.
    pub fn sibling(&self, name: OsString) -> Place {
        let path = match self.path.parent() {
            Some(p) => p.join(&name),
            None => PathBuf::from(&name),
        };
        Place {
            path,
            dir: Arc::clone(&self.dir),
            name,
            fs: self.fs.clone(),
            witness: Arc::clone(&self.witness),
        }
    }

    /// The same place, judged with evidence from `witness`.
    pub fn witnessed(mut self, witness: Arc<dyn Witness>) -> Place {
        self.witness = witness;
        self
    }

    pub fn err(&self, kind: ErrorKind) -> EngineError {
        EngineError::new(&self.path, kind)
    }

    pub fn io_err(&self, op: &'static str, e: impl Into<io::Error>) -> EngineError {
        EngineError::io(&self.path, op, e.into())
    }

    /// `fstatat(dir, name, AT_SYMLINK_NOFOLLOW)`: `(dev, ino)` of what the name denotes now,
    /// `None` when it is gone.
    pub fn identity(&self) -> Result<Option<(u64, u64)>, EngineError> {
        match rustix::fs::statat(self.dir.as_fd(), &self.name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => Ok(Some(dev_ino(&st))),
            Err(Errno::NOENT) => Ok(None),
            Err(e) => Err(self.io_err("stat the lock file", e)),
        }
    }

    /// Opens the existing lock file (never following a symlink, never blocking on a FIFO,
    /// never opening a device): `None` when there is nothing at the path. `write` opens it
    /// read-write (needed to take an OFD write lock on it).
    pub fn open_existing(&self, write: bool) -> Result<Option<(File, Metadata)>, EngineError> {
        let st = match rustix::fs::statat(self.dir.as_fd(), &self.name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => st,
            Err(Errno::NOENT) => return Ok(None),
            Err(e) => return Err(self.io_err("stat the lock file", e)),
        };
        match FileType::from_raw_mode(st.st_mode) {
            FileType::RegularFile => {}
            FileType::Directory => return Err(self.err(ErrorKind::NotALockFile("a directory"))),
            FileType::Symlink => {
                return Err(self.err(ErrorKind::NotALockFile("a symbolic link")));
            }
            _ => {
                return Err(self.err(ErrorKind::NotALockFile(
                    "a special file (FIFO, socket or device)",
                )));
            }
        }
        let access = if write { OFlags::RDWR } else { OFlags::RDONLY };
        let flags = access | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC;
        let fd = match rustix::fs::openat(self.dir.as_fd(), &self.name, flags, Mode::empty()) {
            Ok(fd) => fd,
            Err(Errno::NOENT) => return Ok(None),
            Err(Errno::LOOP) => return Err(self.err(ErrorKind::NotALockFile("a symbolic link"))),
            Err(Errno::ISDIR) => return Err(self.err(ErrorKind::NotALockFile("a directory"))),
            Err(Errno::ACCESS | Errno::PERM) => {
                return Err(self.err(ErrorKind::PermissionDenied {
                    op: if write {
                        "open the lock file for writing"
                    } else {
                        "open the lock file"
                    },
                }));
            }
            Err(e) => return Err(self.io_err("open the lock file", e)),
        };
        let file = File::from(fd);
        let meta = match file.metadata() {
            Ok(m) => m,
            // A FUSE file system (sshfs) answers fstat by path: the file was removed since
            // we opened it.
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(self.io_err("stat the lock file", e)),
        };
        if !meta.is_file() {
            // Replaced by something else between the stat and the open.
            return Err(self.err(ErrorKind::NotALockFile("not a regular file")));
        }
        Ok(Some((file, meta)))
    }

    /// `unlinkat(dir, name, 0)`.
    pub fn unlink(&self) -> io::Result<()> {
        Ok(rustix::fs::unlinkat(
            self.dir.as_fd(),
            &self.name,
            AtFlags::empty(),
        )?)
    }
}

#[cfg(target_os = "linux")]
fn dir_flags() -> OFlags {
    // O_PATH: no read permission on the directory is needed to work inside it.
    OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC
}

#[cfg(not(target_os = "linux"))]
fn dir_flags() -> OFlags {
    OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC
}

/// `(st_dev, st_ino)` as `u64` (their C types differ between systems).
#[allow(clippy::unnecessary_cast)]
pub fn dev_ino(st: &rustix::fs::Stat) -> (u64, u64) {
    (st.st_dev as u64, st.st_ino as u64)
}

/// Reads at most `limit` bytes from the start of `file` (positional reads: the descriptor's
/// offset is irrelevant). Returns the bytes and whether they are the whole file.
pub fn read_bounded(file: &File, limit: usize) -> io::Result<(Vec<u8>, bool)> {
    let mut buf = vec![0u8; limit + 1];
    let mut len = 0;
    while len < buf.len() {
        match file.read_at(&mut buf[len..], len as u64) {
            Ok(0) => break,
            Ok(n) => len += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    let complete = len <= limit;
    buf.truncate(len.min(limit));
    Ok((buf, complete))
}
