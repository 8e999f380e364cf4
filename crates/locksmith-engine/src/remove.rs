//! Removing a lock file that was judged stale, without ever removing a fresh one.
//!
//! The race to close: two reclaimers both see the stale file; one removes it and takes the
//! lock; the other then removes the *fresh* lock. Here a reclaimer first gets an exclusive
//! right on the stale file itself, then checks that the path still names that very file
//! (same device and inode, same size and mtime as judged), and unlinks while it still holds
//! the right:
//!
//! - the OFD write lock on the stale inode, wherever the file system has OFD locks, whatever
//!   mode the reclaimer itself uses. Every kernel-lock holder keeps that lock from before its
//!   file is visible until after it is unlinked, and every remover takes it, so while we hold
//!   it nobody else can unlink that inode, and the path cannot name another file until it is
//!   unlinked (new lock files only appear by `link()`, which never replaces). For a record
//!   written with a kernel lock, taking it also proves, at that instant, that no holder is
//!   left.
//! - also the guard file `<name>.reclaim` (created with `link()`, liblockfile's method)
//!   whenever the record was written without a kernel lock, or no OFD lock can be taken
//!   (network file systems): the file is re-judged under the guard, with fresh evidence.
//!
//! Since the right depends on the stale file and the file system, not on the reclaimer's
//! mode, reclaimers in kernel-lock mode and in the fallback always exclude each other.

use std::fs::{File, Metadata};
use std::os::fd::AsFd;

use super::Identity;
use super::StaleWindows;
use super::create::Fresh;
use super::error::{EngineError, ErrorKind};
use super::place::{Place, READ_LIMIT, read_bounded};
use super::record::Record;
use super::verdict::{Judgement, Verdict};
use super::witness as judge;
use locksmith_sys::locks as sys;

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
    /// Not readable by us (another user's record, mode 0600), but a kernel lock is held on
    /// it: held, by someone we cannot name from the record.
    HeldUnreadable(Box<Judgement>),
    Judged(Box<Examined>),
}

/// Opens and judges what is at `place`. `fast`: first ask the kernel whether a lock
/// conflicting with ours is held, and skip judging if so.
pub fn examine(place: &Place, windows: &StaleWindows, fast: bool) -> Result<Existing, EngineError> {
    let opened = match place.open_existing(false) {
        Err(e) if matches!(e.kind(), ErrorKind::PermissionDenied { .. }) => {
            return match unreadable(place) {
                Unreadable::Held(j) => Ok(Existing::HeldUnreadable(j)),
                Unreadable::Gone => Ok(Existing::Gone),
                Unreadable::NotHeld => Err(e),
            };
        }
        other => other?,
    };
    let Some((file, meta)) = opened else {
        return Ok(Existing::Gone);
    };
    if fast && matches!(sys::write_lock_conflict(file.as_fd()), Ok(true)) {
        return Ok(Existing::HeldFast);
    }
    let (content, complete) =
        read_bounded(&file, READ_LIMIT).map_err(|e| place.io_err("read the lock file", e))?;
    let judgement = judge::judge(place, &meta, &content, complete, windows);
    Ok(Existing::Judged(Box::new(Examined {
        file,
        meta,
        content,
        judgement,
    })))
}

/// What a lock we may not read is, as far as the kernel tells.
enum Unreadable {
    /// A kernel lock is held on it.
    Held(Box<Judgement>),
    /// It went away (or was replaced) while we looked: released meanwhile.
    Gone,
    /// It stays there and nobody holds a kernel lock on it: we cannot judge it.
    NotHeld,
}

fn unreadable(place: &Place) -> Unreadable {
    use std::os::unix::fs::MetadataExt;
    let Ok(meta) = std::fs::symlink_metadata(&place.path) else {
        return Unreadable::Gone;
    };
    // The kernel's table of locks is read while other processes lock and unlock: a read can
    // miss an entry. "Not held" rests on a second, independent read.
    let holders = judge::kernel_lock_holders(place, &meta)
        .or_else(|| judge::kernel_lock_holders(place, &meta));
    let Some(holders) = holders else {
        // A holder releases by unlinking, then dropping its lock: a lock we saw the file of
        // but not the kernel lock on may have been released in between.
        return match std::fs::symlink_metadata(&place.path) {
            Ok(now) if (now.dev(), now.ino()) == (meta.dev(), meta.ino()) => Unreadable::NotHeld,
            _ => Unreadable::Gone,
        };
    };
    let j = Judgement::new(
        Verdict::Live,
        format!("held: a kernel lock is held on it by {holders}"),
    )
    .because(format!(
        "its owner record is not readable by us (mode {:o}, owner uid {})",
        std::os::unix::fs::PermissionsExt::mode(&meta.permissions()) & 0o7777,
        meta.uid()
    ));
    Unreadable::Held(Box::new(j))
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
    /// Re-judged under the guard: not stale any more (or kept by someone).
    NotStale(Judgement),
}

/// Removes the stale file `ex` (judged stale) at `place`. The right to remove it depends on
/// the file and the file system, never on how the caller itself holds locks, so every kind of
/// reclaimer serialises with every other: the OFD write lock on the stale inode whenever the
/// file system allows it, and also the guard file whenever the record says it was held
/// without a kernel lock (or no OFD lock could be taken). `before_unlink` runs while the
/// right is held and the identity is verified; if it fails nothing is removed.
pub fn remove_stale(
    place: &Place,
    ex: Examined,
    windows: &StaleWindows,
    before_unlink: impl FnOnce(&[u8], &Judgement) -> std::io::Result<()>,
) -> Result<Removal, EngineError> {
    debug_assert!(ex.judgement.removable());
    let judged = Identity::of(&ex.meta);

    // A record written with a kernel lock: its OFD lock, once we hold it, proves no holder
    // is left. Anything else is judged again under the guard, with fresh evidence, and before
    // we take the OFD lock ourselves (the judge would see our own lock as a holder's).
    let kernel_record = Record::parse(&ex.content).is_some_and(|r| r.kernel_lock);
    let mut guard = None;
    let mut rejudged = None;
    if !kernel_record || place.fs.network {
        match guarded_rejudge(place, &ex, judged, windows)? {
            Ok((g, r)) => (guard, rejudged) = (Some(g), Some(r)),
            Err(removal) => return Ok(removal),
        }
    }

    // The OFD lock on the stale inode, wherever the file system has them.
    let mut ofd = None;
    if !place.fs.network {
        match place.open_existing(true)? {
            None => return Ok(Removal::Gone("it was removed meanwhile")),
            Some((rw, meta)) => {
                if Identity::of(&meta) != judged {
                    return Ok(Removal::Gone(
                        "it was replaced or modified after it was judged",
                    ));
                }
                match sys::ofd_try_write_lock(rw.as_fd()) {
                    Ok(true) => ofd = Some(rw),
                    Ok(false) => return Ok(Removal::Contended),
                    Err(e) if sys::unsupported(&e) => {}
                    Err(e) => {
                        return Err(place.io_err("lock the stale file (F_OFD_SETLK)", e));
                    }
                }
            }
        }
    }
    if ofd.is_none() && guard.is_none() {
        // A kernel-lock record where no OFD lock can be taken now: the guard after all.
        match guarded_rejudge(place, &ex, judged, windows)? {
            Ok((g, r)) => (guard, rejudged) = (Some(g), Some(r)),
            Err(removal) => return Ok(removal),
        }
    }

    // The path must still name the judged file, unchanged (a heartbeat touches the mtime).
    if let Err(removal) = unchanged(place, &ex, judged)? {
        return Ok(removal);
    }
    let Examined {
        file: stale_file,
        content,
        judgement,
        ..
    } = ex;
    let (content, judgement) = rejudged.unwrap_or((content, judgement));

    before_unlink(&content, &judgement)
        .map_err(|e| place.err(super::error::ErrorKind::Aborted(e)))?;
    // Where no kernel lock protects the guard (network file systems), another process may
    // have wrongly taken it from us meanwhile: look again right before the unlink.
    if let Some(g) = &guard
        && !g.still_ours()?
    {
        return Ok(Removal::Contended);
    }
    // Closed before the unlink: a network file system would keep it under a hidden name
    // while it is open (no lock of ours rides on this read-only descriptor).
    drop(stale_file);
    match place.unlink() {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(Removal::Gone("it was removed meanwhile"));
        }
        Err(e) => return Err(place.io_err("remove the stale lock file", e)),
    }
    drop(guard);
    drop(ofd);
    Ok(Removal::Removed(judgement))
}

/// Checks that the path still names the judged file, unchanged: `Err` says why not.
fn unchanged(
    place: &Place,
    ex: &Examined,
    judged: Identity,
) -> Result<Result<Metadata, Removal>, EngineError> {
    if place.identity()? != Some((judged.dev, judged.ino)) {
        return Ok(Err(Removal::Gone("it was removed or replaced meanwhile")));
    }
    let now = match ex.file.metadata() {
        Ok(now) => now,
        // Answered by path on FUSE file systems (sshfs): removed meanwhile.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(Err(Removal::Gone("it was removed meanwhile")));
        }
        Err(e) => return Err(place.io_err("stat the lock file", e)),
    };
    if Identity::of(&now) != judged {
        return Ok(Err(Removal::Gone("it was modified after it was judged")));
    }
    if place.fs.network && !same_content_by_name(place, &ex.content)? {
        // An inode number may name a path rather than a file there (sshfs): another client
        // may have replaced the file under the same number. Only the content tells.
        return Ok(Err(Removal::Gone("it was replaced after it was judged")));
    }
    Ok(Ok(now))
}

/// Whether the file at the lock name, opened by name now, holds exactly `content`.
fn same_content_by_name(place: &Place, content: &[u8]) -> Result<bool, EngineError> {
    let Some((file, _)) = place.open_existing(false)? else {
        return Ok(false);
    };
    let (now, _) =
        read_bounded(&file, READ_LIMIT).map_err(|e| place.io_err("read the lock file", e))?;
    Ok(now == content)
}

/// Judges the file again, with fresh evidence, after checking it is unchanged: its content
/// and the new judgement if it is still stale, else why it may not be removed.
fn rejudge(
    place: &Place,
    ex: &Examined,
    judged: Identity,
    windows: &StaleWindows,
) -> Result<Result<(Vec<u8>, Judgement), Removal>, EngineError> {
    let now = match unchanged(place, ex, judged)? {
        Ok(now) => now,
        Err(removal) => return Ok(Err(removal)),
    };
    let (content, complete) =
        read_bounded(&ex.file, READ_LIMIT).map_err(|e| place.io_err("read the lock file", e))?;
    let j = judge::judge(place, &now, &content, complete, windows);
    if !j.removable() {
        return Ok(Err(Removal::NotStale(j)));
    }
    Ok(Ok((content, j)))
}

/// Takes the guard, then judges the file again under it: the guard and the fresh judgement
/// (with the content it was made on) while it is still stale, else why it may not be removed.
#[allow(clippy::type_complexity)]
fn guarded_rejudge(
    place: &Place,
    ex: &Examined,
    judged: Identity,
    windows: &StaleWindows,
) -> Result<Result<(Guard, (Vec<u8>, Judgement)), Removal>, EngineError> {
    let Some(guard) = Guard::take(place, windows)? else {
        return Ok(Err(Removal::Contended));
    };
    Ok(rejudge(place, ex, judged, windows)?.map(|r| (guard, r)))
}

/// `<name>.reclaim`: held by the one process allowed to remove a stale lock that no kernel
/// lock proves dead. Created with `link()`, already OFD-locked where the file system allows
/// it (the holder keeps that lock until the guard is unlinked); removed when dropped (if
/// still ours).
///
/// An abandoned guard (its holder died) is removed by the same protocol as a stale lock: the
/// remover takes the OFD lock on the guard's inode, checks that the path still names it, and
/// unlinks it while holding that lock, so it can never remove another process's fresh guard.
/// A guard with a kernel lock held on it is never abandoned. Where there are no OFD locks,
/// nothing can make "check, then unlink" atomic: after removing an abandoned guard the taker
/// gives up for this attempt instead of taking the guard in the same breath, and the holder
/// checks again that the guard is its own right before removing the stale lock.
struct Guard {
    place: Place,
    /// Carries the guard's OFD lock where there is one; `None` once dropped.
    file: Option<File>,
    dev: u64,
    ino: u64,
    token: String,
    kernel_lock: bool,
}

/// Removes the reclaim guard of `lock` if it was abandoned (its holder died), as a reclaimer
/// about to take it would. A live holder's guard is left alone.
pub fn clear_abandoned_guard(lock: &Place, windows: &StaleWindows) {
    let mut name = lock.name.clone();
    name.push(".reclaim");
    if !matches!(lock.sibling(name).identity(), Ok(Some(_))) {
        return;
    }
    // Taking it clears an abandoned one; dropping what was taken removes it again.
    drop(Guard::take(lock, windows));
}

impl Guard {
    /// Takes the guard of `lock`, clearing an abandoned one. `None` when another process
    /// holds it (or when an abandoned one was removed without a kernel lock to protect the
    /// removal: try again later).
    fn take(lock: &Place, windows: &StaleWindows) -> Result<Option<Guard>, EngineError> {
        let mut name = lock.name.clone();
        name.push(".reclaim");
        let place = lock.sibling(name);
        for _ in 0..2 {
            let mut fresh = Fresh::create(&place, !place.fs.network, None)?;
            if fresh.link()? {
                let held = fresh.into_held()?;
                return Ok(Some(Guard {
                    place,
                    file: Some(held.file),
                    dev: held.dev,
                    ino: held.ino,
                    token: held.record.token().to_string(),
                    kernel_lock: held.record.kernel_lock,
                }));
            }
            drop(fresh);
            let ex = match examine(&place, windows, true)? {
                Existing::Gone => continue,
                Existing::HeldFast | Existing::HeldUnreadable(_) => return Ok(None),
                Existing::Judged(ex) => ex,
            };
            // The right to remove this guard: its OFD lock, where there are OFD locks.
            let mut ofd = None;
            if !place.fs.network {
                match place.open_existing(true)? {
                    None => continue,
                    Some((rw, meta)) => {
                        if id_of(&meta) != id_of(&ex.meta) {
                            return Ok(None);
                        }
                        match sys::ofd_try_write_lock(rw.as_fd()) {
                            Ok(true) => ofd = Some(rw),
                            Ok(false) => return Ok(None),
                            Err(e) if sys::unsupported(&e) => {}
                            Err(e) => {
                                return Err(place.io_err("lock the guard file (F_OFD_SETLK)", e));
                            }
                        }
                    }
                }
            }
            let kernel_record = Record::parse(&ex.content).is_some_and(|r| r.kernel_lock);
            let abandoned = if ofd.is_some() && kernel_record {
                // Its holder kept an OFD lock until it unlinked it; we hold that lock now.
                true
            } else {
                let age_ms =
                    jiff::Timestamp::now().as_millisecond() - Identity::of(&ex.meta).mtime_ms();
                ex.judgement.removable()
                    || (ofd.is_some() && owner_gone_only_writers(&ex))
                    || age_ms > GUARD_MAX_AGE_MS
            };
            if !abandoned {
                return Ok(None);
            }
            if place.identity()? != Some(id_of(&ex.meta)) {
                continue;
            }
            // Closed before the unlink: a network file system would keep it under a hidden
            // name while it is open.
            drop(ex);
            let _ = place.unlink();
            if ofd.is_none() {
                // Unprotected removal: another process may be about to remove what it
                // believes is the same abandoned guard; do not hand it ours.
                return Ok(None);
            }
            drop(ofd);
        }
        Ok(None)
    }

    /// Whether the guard path still names our guard file (and, without a kernel lock, still
    /// holds our record: inode numbers may name paths, not files, on a network file system).
    fn still_ours(&self) -> Result<bool, EngineError> {
        Ok(self.place.identity()? == Some((self.dev, self.ino))
            && (self.kernel_lock || super::create::names_token(&self.place, &self.token)?))
    }
}

/// Whether a guard's owner has exited (in our PID namespace) and all that keeps the guard
/// "live" is other processes having it open for writing. Reclaimers racing for a guard open it
/// read-write to try its OFD lock, so, unlike a lock (whose owner's children inherit its
/// descriptor), a guard's writers are no sign of a holder: a guard is held by the reclaiming
/// process itself, for milliseconds. Asked only while we hold the guard's OFD lock.
fn owner_gone_only_writers(ex: &Examined) -> bool {
    use locksmith_sys::host::{self, Process};
    let Some(rec) = Record::parse(&ex.content) else {
        return false;
    };
    let Some(pid) = rec.pid.and_then(|p| i32::try_from(p).ok()) else {
        return false;
    };
    // Live with its owner gone, and no kernel lock on it but ours: only processes having it
    // open kept it live.
    ex.judgement.verdict == Verdict::Live
        && rec.pid_ns.is_some()
        && rec.pid_ns == host::pid_ns_of("self")
        && matches!(host::process(pid), Process::Absent | Process::Exited)
}

fn id_of(meta: &Metadata) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    (meta.dev(), meta.ino())
}

impl Drop for Guard {
    fn drop(&mut self) {
        // Our OFD lock (where there is one) is held until the file closes, after the unlink.
        if matches!(self.still_ours(), Ok(true)) {
            if !self.kernel_lock {
                drop(self.file.take());
            }
            let _ = self.place.unlink();
        }
    }
}
