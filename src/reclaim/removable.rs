//! Whether this process may remove a lock, told before anything is tried: the checks the
//! kernel makes for `rename(2)` and `unlink(2)`/`rmdir(2)` in the lock's directory, asked
//! without changing anything. [`denied`] is the one place that decides it; every reclaim asks
//! it before moving a lock aside (so `--dry-run` tells what a real run would refuse), and the
//! UI asks it (through [`super::removal_denied`]) before its dialog offers *Yes*.
//!
//! A lock cannot be removed when:
//! - its directory is on a read-only mount (`EROFS`: `fstatvfs` says `ST_RDONLY`);
//! - its directory, or the lock itself, has the immutable or append-only attribute (`EPERM`;
//!   `statx` reports them without opening anything);
//! - this user may not write in and search its directory (`EACCES`; asked with
//!   `faccessat(W_OK|X_OK, AT_EACCESS)`, so ACLs and capabilities count as the kernel counts
//!   them);
//! - its directory is sticky (`/tmp`) and neither the lock nor the directory belongs to this
//!   user, who lacks `CAP_FOWNER` (`EPERM`);
//! - no copy could be made first (unless the reclaim removes without one): a regular file
//!   this user may not read (a lock that cannot be copied is kept), or a lock directory
//!   holding records that this user may not list or remove.

use std::ffi::OsStr;
use std::os::fd::BorrowedFd;
use std::path::Path;

use rustix::fs::{Access, AtFlags, FileType, Mode, OFlags, StatVfsMountFlags, StatxFlags};
use rustix::io::Errno;

use crate::dialect::EntryKind;

/// Why this process cannot remove `name` (a lock of `kind`) from the open directory `dir`
/// (whose path is `dir_path`), if it cannot; `copy`: whether a copy must be made first (not
/// with `--remove-uncopied`). `None` when every check passes (the removal may still fail for
/// a reason no check can foresee: the disk, a race).
pub fn denied(
    dir: BorrowedFd<'_>,
    name: &OsStr,
    dir_path: &Path,
    kind: EntryKind,
    copy: bool,
) -> Option<String> {
    let why = reason(dir, name, dir_path, kind, copy)?;
    Some(format!("cannot be removed by this user, {}: {why}", me()))
}

fn reason(
    dir: BorrowedFd<'_>,
    name: &OsStr,
    dir_path: &Path,
    kind: EntryKind,
    copy: bool,
) -> Option<String> {
    let shown = dir_path.display();
    if let Ok(vfs) = rustix::fs::fstatvfs(dir)
        && vfs.f_flag.contains(StatVfsMountFlags::RDONLY)
    {
        return Some(format!(
            "its directory {shown} is on a read-only mount (remount it read-write first)"
        ));
    }
    let dir_st = rustix::fs::fstat(dir).ok()?;
    if let Some(attr) = attribute(dir, "", AtFlags::EMPTY_PATH) {
        return Some(format!(
            "its directory {shown} is {attr} (chattr -{} {shown}, as root)",
            if attr == IMMUTABLE { 'i' } else { 'a' }
        ));
    }
    match rustix::fs::accessat(
        dir,
        ".",
        Access::WRITE_OK | Access::EXEC_OK,
        AtFlags::EACCESS,
    ) {
        Ok(()) => {}
        Err(Errno::ROFS) => {
            return Some(format!("its directory {shown} is on a read-only mount"));
        }
        Err(Errno::ACCESS | Errno::PERM) => {
            return Some(format!(
                "this user may not write in its directory {shown} (mode {:o}, owner {}): run \
                 as the directory's owner or as root",
                dir_st.st_mode & 0o7777,
                user(dir_st.st_uid)
            ));
        }
        // Cannot tell: the removal will say.
        Err(_) => {}
    }
    let st = rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW).ok()?;
    let me = rustix::process::geteuid().as_raw();
    if dir_st.st_mode & 0o1000 != 0 && st.st_uid != me && dir_st.st_uid != me && !may_act_as_owner()
    {
        let mut owners = Vec::new();
        for (whose, uid) in [
            ("the lock's owner", st.st_uid),
            ("the directory's owner", dir_st.st_uid),
        ] {
            if uid != 0 && !owners.iter().any(|(_, u)| *u == uid) {
                owners.push((whose, uid));
            }
        }
        let who = match owners.as_slice() {
            [] => "root may remove it: run as root".to_string(),
            _ => {
                let named: Vec<String> = owners
                    .iter()
                    .map(|(w, u)| format!("{w} {}", user(*u)))
                    .collect();
                format!(
                    "{} or root may remove it: run as one of them",
                    named.join(", ")
                )
            }
        };
        return Some(format!(
            "its directory {shown} is sticky (mode {:o}), so only {who}",
            dir_st.st_mode & 0o7777,
        ));
    }
    if let Some(attr) = attribute(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        return Some(format!(
            "it is {attr} (lsattr shows it; chattr -{} removes it, as root)",
            if attr == IMMUTABLE { 'i' } else { 'a' }
        ));
    }
    let no_copy = |what: &str| {
        format!(
            "this user may not {what} (mode {:o}, owner {}), so no copy of it can be kept: run \
             as its owner or as root",
            st.st_mode & 0o7777,
            user(st.st_uid)
        )
    };
    if !copy {
        return None;
    }
    match kind {
        EntryKind::File if FileType::from_raw_mode(st.st_mode) == FileType::RegularFile => {
            if let Err(Errno::ACCESS | Errno::PERM) =
                rustix::fs::accessat(dir, name, Access::READ_OK, AtFlags::EACCESS)
            {
                return Some(no_copy("read it"));
            }
        }
        EntryKind::Dir if FileType::from_raw_mode(st.st_mode) == FileType::Directory => {
            // Its records go with it: they must be listed and removed first.
            let want = Access::READ_OK | Access::WRITE_OK | Access::EXEC_OK;
            if let Err(Errno::ACCESS | Errno::PERM) =
                rustix::fs::accessat(dir, name, want, AtFlags::EACCESS)
                && !empty_dir(dir, name)
            {
                return Some(no_copy("list and empty this lock directory"));
            }
        }
        _ => {}
    }
    None
}

const IMMUTABLE: &str = "immutable";
const APPEND_ONLY: &str = "append-only";

/// `immutable` or `append-only` when `statx` says the file has that attribute.
fn attribute(
    dir: BorrowedFd<'_>,
    name: impl rustix::path::Arg,
    flags: AtFlags,
) -> Option<&'static str> {
    use rustix::fs::StatxAttributes as A;
    let stx = rustix::fs::statx(
        dir,
        name,
        flags | AtFlags::STATX_DONT_SYNC,
        StatxFlags::BASIC_STATS,
    )
    .ok()?;
    let has = |a: A| stx.stx_attributes_mask.contains(a) && stx.stx_attributes.contains(a);
    if has(A::IMMUTABLE) {
        Some(IMMUTABLE)
    } else if has(A::APPEND) {
        Some(APPEND_ONLY)
    } else {
        None
    }
}

/// Whether a directory this user may not list or change is empty as far as can be told: an
/// empty one is removed with `rmdir`, which needs nothing of it.
fn empty_dir(dir: BorrowedFd<'_>, name: &OsStr) -> bool {
    let Ok(fd) = rustix::fs::openat(
        dir,
        name,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    ) else {
        return false;
    };
    let Ok(entries) = rustix::fs::Dir::read_from(&fd) else {
        return false;
    };
    entries
        .filter_map(Result::ok)
        .all(|e| matches!(e.file_name().to_bytes(), b"." | b".."))
}

/// Whether this process may remove another user's file in a sticky directory
/// (`CAP_FOWNER`, capget(2)).
fn may_act_as_owner() -> bool {
    use rustix::thread::CapabilitySet;
    match rustix::thread::capabilities(None) {
        Ok(caps) => caps.effective.contains(CapabilitySet::FOWNER),
        Err(_) => rustix::process::geteuid().is_root(),
    }
}

/// This process's user, as messages name it: `alice (uid 1000)`.
fn me() -> String {
    user(rustix::process::geteuid().as_raw())
}

pub use crate::probe::host::user;
