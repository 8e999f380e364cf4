//! Removing a lock file that was judged stale, without ever removing a fresh one.
//!
//! The race to close: two reclaimers both see the stale file; one removes it and takes the
//! lock; the other then removes the *fresh* lock. Here a reclaimer first gets an exclusive
//! right on the stale file itself, then checks that the path still names that very file
//! (same device and inode, same size and mtime as judged), and unlinks while it still holds
//! the right:
//!
//! - normally the right is the OFD write lock on the stale inode. Every holder keeps that lock
//!   from before its file is visible until after it is unlinked, and every remover takes it,
//!   so while we hold it nobody else can unlink that inode, and the path cannot name
//!   another file until it is unlinked (new lock files only appear by `link()`, which never
//!   replaces). Taking it also proves, at that instant, that no holder is left.
//! - where OFD locks are unavailable (network file systems, or the fallback is forced), the
//!   right is a guard file `<name>.reclaim` created with `link()` (liblockfile's method); the
//!   file is re-judged under the guard, with fresh evidence.

use std::fs::{File, Metadata};
use std::os::fd::AsFd;

use super::create::Fresh;
use super::error::EngineError;
use super::place::{Place, READ_LIMIT, read_bounded};
use super::sys;
use crate::dialect::{CONTENT_PREFIX, Candidate, Dialect, EntryKind, Windows};
use crate::probe::Snapshot;
use crate::scan::Identity;
use crate::verdict::{Judgement, Verdict};

/// A guard older than this is abandoned whatever it says: guards live for milliseconds.
const GUARD_MAX_AGE_MS: i64 = 30_000;

/// An existing lock file, opened read-only and judged.
#[derive(Debug)]
pub struct Examined {
    pub file: File,
    pub meta: Metadata,
    pub content: Vec<u8>,
    pub judgement: Judgement,
}

/// What is at the lock path.
#[derive(Debug)]
pub enum Existing {
    /// Nothing (any more).
    Gone,
    /// Someone holds a kernel lock on it (seen through `F_OFD_GETLK`, without judging).
    HeldFast,
    Judged(Box<Examined>),
}

/// Opens and judges what is at `place`. `fast`: first ask the kernel whether a lock
/// conflicting with ours is held, and skip judging if so.
pub fn examine(place: &Place, windows: &Windows, fast: bool) -> Result<Existing, EngineError> {
    let Some((file, meta)) = place.open_existing(false)? else {
        return Ok(Existing::Gone);
    };
    if fast && matches!(sys::ofd_write_conflict(file.as_fd()), Ok(true)) {
        return Ok(Existing::HeldFast);
    }
    let (content, complete) =
        read_bounded(&file, READ_LIMIT).map_err(|e| place.io_err("read the lock file", e))?;
    let snap = Snapshot::take();
    let judgement = judge(place, &meta, &content, complete, &snap, windows);
    Ok(Existing::Judged(Box::new(Examined {
        file,
        meta,
        content,
        judgement,
    })))
}

/// Judges an open lock file with the `locksmith` dialect.
pub fn judge(
    place: &Place,
    meta: &Metadata,
    content: &[u8],
    complete: bool,
    snap: &Snapshot,
    windows: &Windows,
) -> Judgement {
    let prefix = &content[..content.len().min(CONTENT_PREFIX)];
    let c = Candidate {
        path: &place.path,
        meta,
        kind: EntryKind::File,
        content: prefix,
        complete: complete && content.len() <= CONTENT_PREFIX,
        link_target: None,
        fs: &place.fs,
    };
    crate::dialect::locksmith::Locksmith.judge(&c, snap, windows)
}

/// How a removal attempt ended (errors aside).
#[derive(Debug)]
pub enum Removal {
    /// Removed; the judgement that allowed it.
    Removed(Judgement),
    /// The path no longer names the judged file, unchanged: nothing done.
    Gone(&'static str),
    /// Another process is removing it right now: nothing done.
    Contended,
    /// Re-judged under the guard: not stale any more.
    NotStale(Judgement),
}

/// The exclusive right to remove one stale file.
enum Right {
    /// An OFD write lock on the stale inode, through this descriptor (closing it releases
    /// the lock, so it is kept until the end).
    Ofd(#[allow(dead_code)] File),
    /// The guard file (removed when dropped).
    Guard(#[allow(dead_code)] Guard),
}

/// Removes the stale file `ex` (judged stale) at `place`. `use_kernel_lock`: serialise
/// removers with the OFD lock on the stale inode when the file system allows it (else with
/// a guard file). `before_unlink` runs while the right is held and the identity is verified;
/// if it fails nothing is removed.
pub fn remove_stale(
    place: &Place,
    ex: Examined,
    use_kernel_lock: bool,
    windows: &Windows,
    before_unlink: impl FnOnce(&[u8], &Judgement) -> std::io::Result<()>,
) -> Result<Removal, EngineError> {
    debug_assert_eq!(ex.judgement.verdict, Verdict::Stale);
    let judged = Identity::of(&ex.meta);

    let mut right = None;
    if use_kernel_lock && !place.fs.network {
        match place.open_existing(true)? {
            None => return Ok(Removal::Gone("it was removed meanwhile")),
            Some((rw, meta)) => {
                if Identity::of(&meta) != judged {
                    return Ok(Removal::Gone(
                        "it was replaced or modified after it was judged",
                    ));
                }
                match sys::ofd_try_write_lock(rw.as_fd()) {
                    Ok(true) => right = Some(Right::Ofd(rw)),
                    Ok(false) => return Ok(Removal::Contended),
                    Err(e) if sys::unsupported(&e) => {}
                    Err(e) => {
                        return Err(place.io_err("lock the stale file (F_OFD_SETLK)", e));
                    }
                }
            }
        }
    }
    let right = match right {
        Some(r) => r,
        None => match Guard::take(place, windows)? {
            Some(g) => Right::Guard(g),
            None => return Ok(Removal::Contended),
        },
    };

    // The path must still name the judged file, unchanged (a heartbeat touches the mtime).
    if place.identity()? != Some((judged.dev, judged.ino)) {
        return Ok(Removal::Gone("it was removed or replaced meanwhile"));
    }
    let now = ex
        .file
        .metadata()
        .map_err(|e| place.io_err("stat the lock file", e))?;
    if Identity::of(&now) != judged {
        return Ok(Removal::Gone("it was modified after it was judged"));
    }

    let (content, judgement) = match &right {
        // Holding the OFD lock proves no holder is left: the judgement stands (re-judging
        // now would only see our own lock).
        Right::Ofd(_) => (ex.content, ex.judgement),
        // No kernel lock to rely on: judge again, with fresh evidence.
        Right::Guard(_) => {
            let (content, complete) = read_bounded(&ex.file, READ_LIMIT)
                .map_err(|e| place.io_err("read the lock file", e))?;
            let j = judge(place, &now, &content, complete, &Snapshot::take(), windows);
            if j.verdict != Verdict::Stale {
                return Ok(Removal::NotStale(j));
            }
            (content, j)
        }
    };

    before_unlink(&content, &judgement)
        .map_err(|e| place.err(super::error::ErrorKind::Aborted(e)))?;
    match place.unlink() {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(Removal::Gone("it was removed meanwhile"));
        }
        Err(e) => return Err(place.io_err("remove the stale lock file", e)),
    }
    drop(right);
    Ok(Removal::Removed(judgement))
}

/// `<name>.reclaim`: held by the one process allowed to remove a stale lock where no kernel
/// lock can serialise removers. Created with `link()`; removed when dropped (if still ours).
struct Guard {
    place: Place,
    _file: File,
    dev: u64,
    ino: u64,
}

impl Guard {
    /// Takes the guard of `lock`, clearing an abandoned one. `None` when another process
    /// holds it.
    fn take(lock: &Place, windows: &Windows) -> Result<Option<Guard>, EngineError> {
        let mut name = lock.name.clone();
        name.push(".reclaim");
        let place = lock.sibling(name);
        for _ in 0..2 {
            let fresh = Fresh::create(&place, false, None)?;
            if fresh.link()? {
                let (file, _, dev, ino) = fresh.into_held();
                return Ok(Some(Guard {
                    place,
                    _file: file,
                    dev,
                    ino,
                }));
            }
            drop(fresh);
            let ex = match examine(&place, windows, true)? {
                Existing::Gone => continue,
                Existing::HeldFast => return Ok(None),
                Existing::Judged(ex) => ex,
            };
            let age_ms = jiff::Timestamp::now().as_millisecond() - crate::probe::mtime_ms(&ex.meta);
            let abandoned = ex.judgement.verdict == Verdict::Stale || age_ms > GUARD_MAX_AGE_MS;
            if !abandoned {
                return Ok(None);
            }
            if place.identity()? == Some(id_of(&ex.meta)) {
                let _ = place.unlink();
            }
        }
        Ok(None)
    }
}

fn id_of(meta: &Metadata) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    (meta.dev(), meta.ino())
}

impl Drop for Guard {
    fn drop(&mut self) {
        if matches!(self.place.identity(), Ok(Some(id)) if id == (self.dev, self.ino)) {
            let _ = self.place.unlink();
        }
    }
}
