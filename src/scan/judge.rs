//! Classification and judging of one candidate: `lstat` it, read a bounded prefix of a regular
//! file without ever blocking or following a link, pick its dialect, let the dialect judge it
//! against the scan's snapshot, and build the [`Finding`].
//!
//! Dialect choice: the first dialect in registry order that was matched by name (or that
//! accepts any name) and recognises the candidate; otherwise the first dialect matched by name
//! that judges what it does not recognise judges it anyway (and answers `unknown` for what it
//! cannot parse): a dialect known by place and shape (a package database's lock) never takes
//! another program's file of the same name. A directory no dialect
//! recognises is just a directory (unless a kernel lock is held on it); a kernel-locked entry
//! that no dialect claims is judged by `flock` when it holds nothing but the lock
//! ([`dialect::flock::holds_only_a_lock`]: a program's data file that it locks while it works
//! on it, a database's tablespace or a disk image, is never listed), unless it is no lock at
//! all (a database, a dependency lock file, a socket: [`dialect::not_locks`]). In *lenient* mode (a file named on the command
//! line, or a path re-judged on request) every dialect is asked last, so a lock with an unusual
//! name is still recognised by its content.
//!
//! A file whose content cannot be read is `unknown` (or, when a dialect judged it anyway, never
//! `stale`); a FIFO, socket or device is never opened.

use std::ffi::OsStr;
use std::io;
use std::os::fd::{AsFd, BorrowedFd};
use std::path::{Path, PathBuf};

use super::anchor::Anchor;
use super::config::Config;
use super::{Finding, ScanError};
use crate::dialect::{self, Candidate, DialectId, EntryKind};
use crate::judge::Judgement;
use crate::probe::evidence::{self, LockFacts};
use crate::probe::{FileKey, Snapshot, Stat};

/// Why a path is looked at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Found by the walker: a name matched, or a kernel lock may be held on it.
    Walk,
    /// Named explicitly: every dialect may recognise it.
    Lenient,
}

/// Examines one path named on its own (a root that is a file, a path re-judged on request):
/// its directory is opened (a symlink as the directory's last component is not followed) and
/// the entry is examined through it, with that directory as its anchor. `Ok(None)`: no longer
/// there, or not a lock.
pub(crate) fn examine(
    path: &Path,
    hits: &[usize],
    mode: Mode,
    snap: &Snapshot,
    config: &Config,
) -> Result<Option<Finding>, ScanError> {
    let (anchor, dir, name) = match Anchor::of_parent(path) {
        Ok(a) => a,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(ScanError::io(path, e).during("cannot open its directory")),
    };
    examine_at(
        dir.as_fd(),
        &name,
        path,
        hits,
        mode,
        snap,
        config,
        Some(&anchor),
    )
}

/// Examines the entry `name` of the open directory `dir` (`path` is its full path, for
/// messages and for the dialects): its status, content and link text are all read through
/// `dir`, never through `path`. `hits` are the dialects (registry indices) whose patterns
/// matched it. `Ok(None)`: no longer there, or not a lock.
#[allow(clippy::too_many_arguments)]
pub(crate) fn examine_at(
    dir: BorrowedFd<'_>,
    name: &OsStr,
    path: &Path,
    hits: &[usize],
    mode: Mode,
    snap: &Snapshot,
    config: &Config,
    anchor: Option<&Anchor>,
) -> Result<Option<Finding>, ScanError> {
    let meta = match sys::lstat_at(dir, name) {
        Ok(m) => Stat::from(m),
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(ScanError::io(path, e).during("cannot stat")),
    };
    let kernel_locked = snap.kernel_locked(FileKey::of(&meta));
    if hits.is_empty() && !kernel_locked && mode == Mode::Walk {
        return Ok(None);
    }
    let kind = EntryKind::of(&meta);
    let (content, complete, read_error) = if kind == EntryKind::File {
        match sys::read_prefix_at(dir, name, &meta, dialect::CONTENT_PREFIX) {
            Ok((c, complete)) => (c, complete, None),
            Err(e) => (Vec::new(), false, Some(e)),
        }
    } else {
        (Vec::new(), true, None)
    };
    let link_target = if kind == EntryKind::Symlink {
        sys::read_link_at(dir, name).ok()
    } else {
        None
    };
    let mut f = judge(
        path,
        &meta,
        hits,
        mode,
        snap,
        config,
        Read {
            content,
            complete,
            read_error,
            link_target,
        },
    );
    if let Some(found) = &mut f {
        found.anchor = anchor.cloned();
    }
    // A file its dialect reads as part of a lock beside it (a dotlock's handle) is part of
    // that lock's row, not a row of its own (unless it was named on its own).
    if let Some(found) = &f
        && mode == Mode::Walk
        && dialect::by_id(found.dialect.as_str()).is_some_and(|d| {
            d.part_of_another_lock(
                dir,
                name,
                &meta,
                found.judgement.verdict() == crate::verdict::Verdict::Live,
            )
        })
    {
        return Ok(None);
    }
    Ok(f)
}

/// Judges a lock of a recording again, from what the recording says was read of it
/// (`snap` answers from that recording). `None` when it is no lock any more to this
/// configuration's dialects.
pub fn judge_recorded(lock: &LockFacts, snap: &Snapshot, config: &Config) -> Option<Finding> {
    let registry = config.dialects();
    let hits: Vec<usize> = lock
        .hits
        .iter()
        .filter_map(|id| registry.iter().position(|d| d.id() == id.as_str()))
        .collect();
    let mode = if lock.lenient {
        Mode::Lenient
    } else {
        Mode::Walk
    };
    let path = evidence::key_path(&lock.path);
    judge(
        &path,
        &lock.stat,
        &hits,
        mode,
        snap,
        config,
        Read {
            content: evidence::key_bytes(&lock.content),
            complete: lock.complete,
            read_error: lock.read_error.clone().map(io::Error::other),
            link_target: lock.link_target.as_deref().map(evidence::key_path),
        },
    )
}

/// What was read of a candidate.
struct Read {
    content: Vec<u8>,
    complete: bool,
    read_error: Option<io::Error>,
    link_target: Option<PathBuf>,
}

/// Picks the dialect and judges a candidate whose status and content were read.
fn judge(
    path: &Path,
    meta: &Stat,
    hits: &[usize],
    mode: Mode,
    snap: &Snapshot,
    config: &Config,
    read: Read,
) -> Option<Finding> {
    let Read {
        content,
        complete,
        read_error,
        link_target,
    } = read;
    let kernel_locked = snap.kernel_locked(FileKey::of(meta));
    let registry = config.dialects();
    let kind = EntryKind::of(meta);
    let fs = snap.fs_of(path, meta);
    let cand = Candidate {
        path,
        meta,
        kind,
        content: &content,
        complete,
        link_target: link_target.as_deref(),
        fs: &fs,
    };

    // What the dialects ask of other paths (siblings, a path the lock names) never waits on a
    // mount that does not answer; what went unanswered leaves the lock unproven.
    let watch = crate::probe::reach::Watch::start();
    let asked = |i: usize| hits.contains(&i) || registry[i].any_name();
    let mut chosen = (0..registry.len()).find(|&i| asked(i) && registry[i].recognise(&cand, snap));
    if chosen.is_none() && mode == Mode::Lenient {
        chosen = (0..registry.len()).find(|&i| !asked(i) && registry[i].recognise(&cand, snap));
    }
    let (dialect, mut judgement) = match chosen {
        Some(i) => {
            let d = registry[i];
            let mut j = d.judge(&cand, snap, &config.windows);
            if let Some(e) = &read_error {
                j = crate::judge::without_content(j, e);
            }
            (d.id(), j)
        }
        None => {
            // What no dialect reads may be no lock at all: a database holding its own
            // byte-range locks, a dependency lock file, a socket (see `dialect::not_locks`).
            if dialect::not_locks::recognise(&cand, snap).is_some() {
                return None;
            }
            // A name-matched file no dialect recognises is judged by the first dialect that
            // matched its name; a kernel-locked entry nothing else claims, by `flock`, when
            // it holds nothing but the lock (a program's data file is no lock file).
            let flock = || {
                dialect::flock::holds_only_a_lock(&cand)
                    .then(|| registry.iter().position(|d| d.id() == DialectId::FLOCK))
                    .flatten()
            };
            let named = || {
                hits.iter()
                    .copied()
                    .find(|&i| registry[i].judges_unrecognised())
            };
            let fallback = match (kind, kernel_locked) {
                (EntryKind::Dir, false) => None,
                (_, false) => named(),
                (_, true) => named().or_else(flock),
            };
            let i = fallback?;
            let d = registry[i];
            let j = match (kind, &read_error) {
                _ if kernel_locked => {
                    let j = d.judge(&cand, snap, &config.windows);
                    match &read_error {
                        Some(e) => crate::judge::without_content(j, e),
                        None => j,
                    }
                }
                (EntryKind::Other, _) => Judgement::unknown(format!(
                    "{}, not a lock file this tool reads: it was not opened",
                    describe_other(meta)
                )),
                (_, Some(e)) => Judgement::unknown(format!("cannot read it: {e}")),
                _ => d.judge(&cand, snap, &config.windows),
            };
            (d.id(), j)
        }
    };
    if let Some(e) = watch.unanswered() {
        judgement.doubt(format!("not everything it names could be examined: {e}"));
    }
    snap.keep(|e| {
        e.locks.push(LockFacts {
            path: evidence::path_key(path),
            stat: *meta,
            hits: hits
                .iter()
                .map(|&i| registry[i].id().as_str().to_string())
                .collect(),
            lenient: mode == Mode::Lenient,
            content: evidence::bytes_key(&content),
            complete,
            read_error: read_error.as_ref().map(|e| e.to_string()),
            link_target: link_target.as_deref().map(evidence::path_key),
            verdict: judgement.verdict().as_str().to_string(),
            dialect: dialect.as_str().to_string(),
            owner_host: judgement.owner.as_ref().and_then(|o| o.hostname.clone()),
            owner_user: judgement.owner.as_ref().and_then(|o| o.user.clone()),
        })
    });
    Some(Finding {
        path: path.to_path_buf(),
        dialect,
        kind,
        size: matches!(kind, EntryKind::File | EntryKind::Symlink).then(|| meta.len()),
        modified_ms: Some(crate::probe::mtime_ms(meta)),
        identity: meta.identity(),
        fs,
        judgement,
        content,
        link_target,
        anchor: None,
    })
}

fn describe_other(meta: &Stat) -> &'static str {
    match meta.file_type_bits() {
        0o010_000 => "a FIFO (named pipe)",
        0o140_000 => "a socket",
        0o020_000 => "a character device",
        0o060_000 => "a block device",
        _ => "a special file",
    }
}

mod sys {
    use std::ffi::OsStr;
    use std::fs::{File, Metadata};
    use std::io;
    use std::os::fd::BorrowedFd;
    use std::os::unix::ffi::OsStringExt;
    use std::path::PathBuf;

    use rustix::fs::{Mode, OFlags};

    /// `lstat` of `name` in `dir`: the entry is opened `O_PATH|O_NOFOLLOW` (which opens
    /// nothing, whatever it is: a FIFO or a device is not touched) and `fstat`ed.
    pub fn lstat_at(dir: BorrowedFd<'_>, name: &OsStr) -> io::Result<Metadata> {
        let fd = rustix::fs::openat(
            dir,
            name,
            OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        File::from(fd).metadata()
    }

    /// Reads at most `max` bytes of the regular file `name` in `dir`, opened without following
    /// a symlink or blocking, after checking it is the file `lstat` saw. Returns the bytes
    /// and whether they are the whole file.
    pub fn read_prefix_at(
        dir: BorrowedFd<'_>,
        name: &OsStr,
        lstat: &crate::probe::Stat,
        max: usize,
    ) -> io::Result<(Vec<u8>, bool)> {
        let flags =
            OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOFOLLOW | OFlags::NOCTTY | OFlags::CLOEXEC;
        let fd = crate::probe::fs::open_noatime(dir, name, flags)?;
        crate::dialect::read_opened(fd, lstat, max)
    }

    /// The text of the symlink `name` in `dir` (readlinkat(2)); it is never followed.
    pub fn read_link_at(dir: BorrowedFd<'_>, name: &OsStr) -> io::Result<PathBuf> {
        let target = rustix::fs::readlinkat(dir, name, Vec::new())?;
        Ok(PathBuf::from(std::ffi::OsString::from_vec(
            target.into_bytes(),
        )))
    }
}
