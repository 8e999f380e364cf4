//! Opening the state directory safely, and the files in it. reclaim runs as root over shared
//! directories, so the state directory is trusted only once checked:
//! - it is opened component by component from `/`; a component that exists is followed (a
//!   home directory may be a symlink) only if it is owned by root or by us and, when others
//!   may write to it, is sticky; the state directory itself and every component we create are
//!   opened `O_NOFOLLOW` and must be directories owned by us that no one else may write to.
//!   Anything else is refused with a clear error, before anything is written;
//! - new directories are made 0700, files 0600; the journal is opened `O_NOFOLLOW|O_APPEND`
//!   relative to the directory's descriptor and must be a regular file of ours with one link.

use std::ffi::{OsStr, OsString};
use std::io;
use std::os::fd::{BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStringExt;
use std::path::{Component, Path, PathBuf};

use rustix::fs::{AtFlags, FileType, Mode, OFlags, Stat};
use rustix::io::Errno;

use super::JOURNAL;

/// Opens (creating it 0600) the journal in `dir` with `O_NOFOLLOW|O_APPEND` and checks that it
/// is a regular file of ours with one link that no one else may write to.
pub(super) fn open_journal(dir: &OwnedFd, path: &Path) -> io::Result<OwnedFd> {
    let shown = path.join(JOURNAL);
    let fd = rustix::fs::openat(
        dir,
        JOURNAL,
        OFlags::WRONLY
            | OFlags::APPEND
            | OFlags::CREATE
            | OFlags::NOFOLLOW
            | OFlags::NOCTTY
            | OFlags::NONBLOCK
            | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o600),
    )
    .map_err(|e| match e {
        Errno::LOOP => refused(&shown, "is a symlink"),
        e => io::Error::from(e),
    })?;
    check_own_file(&fd, &shown)?;
    Ok(fd)
}

/// Reads a whole file of at most `cap` bytes.
pub(in crate::reclaim) fn read_all(fd: &OwnedFd, cap: u64) -> io::Result<Vec<u8>> {
    let st = rustix::fs::fstat(fd)?;
    if st.st_size as u64 > cap {
        return Err(io::Error::other(format!(
            "it is {} bytes, more than {cap}",
            st.st_size
        )));
    }
    let mut out = Vec::with_capacity(st.st_size as usize);
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = rustix::io::read(fd, &mut buf)?;
        if n == 0 {
            return Ok(out);
        }
        out.extend_from_slice(&buf[..n]);
        if out.len() as u64 > cap {
            return Err(io::Error::other(format!("it grew past {cap} bytes")));
        }
    }
}

/// The names in the open directory `dir` (but `.` and `..`).
pub(super) fn names_in(dir: BorrowedFd<'_>) -> io::Result<Vec<OsString>> {
    let listing = rustix::fs::openat(
        dir,
        ".",
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    let mut out = Vec::new();
    for entry in rustix::fs::Dir::new(listing)? {
        let name = entry?.file_name().to_bytes().to_vec();
        if name != b"." && name != b".." {
            out.push(OsString::from_vec(name));
        }
    }
    Ok(out)
}

pub(super) fn refused(path: &Path, why: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::PermissionDenied,
        format!("refusing the state directory: {} {why}", path.display()),
    )
}

/// Opens the state directory `path` as described in the module docs; `None` if it does not
/// exist and `create` is false.
pub(super) fn open_dir_checked(path: &Path, create: bool) -> io::Result<Option<OwnedFd>> {
    if path.as_os_str().is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::NotFound,
            "no state directory: neither XDG_STATE_HOME nor HOME is set (set one of them; only \
             root falls back to /var/lib/locksmith)",
        ));
    }
    if !path.is_absolute() {
        return Err(refused(path, "is not an absolute path"));
    }
    let mut names: Vec<&OsStr> = Vec::new();
    for c in path.components() {
        match c {
            Component::RootDir | Component::CurDir => {}
            Component::Normal(n) => names.push(n),
            _ => return Err(refused(path, "has a `..` component")),
        }
    }
    let dir_flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let mut dir = rustix::fs::open("/", dir_flags, Mode::empty())?;
    check_ancestor(&dir, Path::new("/"))?;
    let mut shown = PathBuf::from("/");
    let mut creating = false;
    for (i, name) in names.iter().enumerate() {
        shown.push(name);
        let last = i + 1 == names.len();
        if !last && !creating {
            match rustix::fs::statat(&dir, *name, AtFlags::SYMLINK_NOFOLLOW) {
                Ok(st) => {
                    let me = rustix::process::geteuid().as_raw();
                    if FileType::from_raw_mode(st.st_mode) == FileType::Symlink
                        && st.st_uid != 0
                        && st.st_uid != me
                    {
                        return Err(refused(
                            &shown,
                            &format!("is a symlink owned by uid {}", st.st_uid),
                        ));
                    }
                    let fd = rustix::fs::openat(&dir, *name, dir_flags, Mode::empty())?;
                    check_ancestor(&fd, &shown)?;
                    dir = fd;
                    continue;
                }
                Err(Errno::NOENT) if create => creating = true,
                Err(Errno::NOENT) => return Ok(None),
                Err(e) => return Err(e.into()),
            }
        }
        match open_own_dir(&dir, &shown, name, create)? {
            Some(fd) => dir = fd,
            None => return Ok(None),
        }
    }
    Ok(Some(dir))
}

/// `name` in `parent`: created 0700 if missing (and `create`), opened `O_NOFOLLOW`, and
/// checked to be a directory of ours that no one else may write to.
fn open_own_dir(
    parent: &OwnedFd,
    shown: &Path,
    name: &OsStr,
    create: bool,
) -> io::Result<Option<OwnedFd>> {
    if create {
        match rustix::fs::mkdirat(parent, name, Mode::from_raw_mode(0o700)) {
            Ok(()) | Err(Errno::EXIST) => {}
            Err(e) => {
                return Err(io::Error::new(
                    io::Error::from(e).kind(),
                    format!("cannot create the state directory {}: {e}", shown.display()),
                ));
            }
        }
    }
    let fd = match rustix::fs::openat(
        parent,
        name,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    ) {
        Ok(fd) => fd,
        Err(Errno::NOENT) if !create => return Ok(None),
        Err(Errno::LOOP | Errno::NOTDIR) => {
            let what = match rustix::fs::statat(parent, name, AtFlags::SYMLINK_NOFOLLOW) {
                Ok(st) if FileType::from_raw_mode(st.st_mode) == FileType::Symlink => {
                    "is a symlink"
                }
                _ => "is not a directory",
            };
            return Err(refused(shown, what));
        }
        Err(e) => return Err(e.into()),
    };
    check_own(&fd, shown, FileType::Directory)?;
    Ok(Some(fd))
}

pub(super) fn sub_dir(
    dir: &OwnedFd,
    path: &Path,
    name: &str,
    create: bool,
) -> io::Result<Option<OwnedFd>> {
    open_own_dir(dir, &path.join(name), OsStr::new(name), create)
}

/// A directory of ours (or a file of ours) that only we may write to.
fn check_own(fd: &OwnedFd, shown: &Path, want: FileType) -> io::Result<Stat> {
    let st = rustix::fs::fstat(fd)?;
    let me = rustix::process::geteuid().as_raw();
    if FileType::from_raw_mode(st.st_mode) != want {
        return Err(refused(shown, "is not of the expected type"));
    }
    if st.st_uid != me {
        return Err(refused(
            shown,
            &format!("is owned by uid {}, not by us (uid {me})", st.st_uid),
        ));
    }
    if st.st_mode & 0o022 != 0 {
        return Err(refused(
            shown,
            &format!(
                "may be written by others (mode {:o}; chmod go-w it)",
                st.st_mode & 0o7777
            ),
        ));
    }
    Ok(st)
}

pub(super) fn check_own_file(fd: &OwnedFd, shown: &Path) -> io::Result<()> {
    let st = check_own(fd, shown, FileType::RegularFile)?;
    if st.st_nlink != 1 {
        return Err(refused(shown, "has other hard links"));
    }
    Ok(())
}

/// A directory above the state directory: owned by root or us, and sticky if others may
/// write to it (as `/tmp` is), so no one else can move what we make in it.
fn check_ancestor(fd: &OwnedFd, shown: &Path) -> io::Result<()> {
    let st = rustix::fs::fstat(fd)?;
    let me = rustix::process::geteuid().as_raw();
    if st.st_uid != 0 && st.st_uid != me {
        return Err(refused(
            shown,
            &format!("(on the way to it) is owned by uid {}", st.st_uid),
        ));
    }
    if st.st_mode & 0o022 != 0 && st.st_mode & 0o1000 == 0 {
        return Err(refused(
            shown,
            &format!(
                "(on the way to it) may be written by others and is not sticky (mode {:o})",
                st.st_mode & 0o7777
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};

    use super::super::{CopyLimits, SAVED, StateDir};
    use super::*;
    use crate::reclaim::journal::Entry;

    #[test]
    fn creates_the_directories_0700_and_refuses_bad_ones() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("a/b/locksmith");
        let s = StateDir::open(&p, CopyLimits::default(), true)
            .unwrap()
            .unwrap();
        for d in [
            t.path().join("a"),
            t.path().join("a/b"),
            p.clone(),
            p.join(SAVED),
        ] {
            assert_eq!(
                std::fs::metadata(&d).unwrap().mode() & 0o777,
                0o700,
                "{d:?}"
            );
        }
        drop(s);

        let link = t.path().join("link");
        std::os::unix::fs::symlink(t.path().join("a"), &link).unwrap();
        let e = StateDir::open(&link, CopyLimits::default(), true).unwrap_err();
        assert!(e.to_string().contains("is a symlink"), "{e}");

        let open = t.path().join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
        let e = StateDir::open(&open, CopyLimits::default(), true).unwrap_err();
        assert!(e.to_string().contains("written by others"), "{e}");
        assert!(!open.join(SAVED).exists());
        // Below it, too: a directory others may write to is no place for ours.
        let e = StateDir::open(&open.join("x"), CopyLimits::default(), true).unwrap_err();
        assert!(e.to_string().contains("not sticky"), "{e}");
        assert!(!open.join("x").exists());

        let e = StateDir::open(Path::new(""), CopyLimits::default(), true).unwrap_err();
        assert!(e.to_string().contains("HOME"), "{e}");
    }

    #[test]
    fn a_symlinked_journal_is_refused() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("state");
        let target = t.path().join("victim");
        std::fs::write(&target, "precious\n").unwrap();
        std::fs::create_dir(&p).unwrap();
        std::os::unix::fs::symlink(&target, p.join(JOURNAL)).unwrap();
        let e = StateDir::open(&p, CopyLimits::default(), true).unwrap_err();
        assert!(e.to_string().contains("is a symlink"), "{e}");
        // Opened for reading, the append of a restore line is refused the same way.
        let s = StateDir::existing(&p).unwrap().unwrap();
        let e = s.append(&Entry::default()).unwrap_err();
        assert!(e.to_string().contains("is a symlink"), "{e}");
        assert_eq!(std::fs::read(&target).unwrap(), b"precious\n");
    }
}
