//! Finishing a run killed in the middle of a group of removals (`kill -9`, a crash): its
//! journal lines are on disk, and each lock of the group is removed, or not yet, or moved
//! aside under the private name its line gives ([`super::aside_name`]) and not yet removed.
//!
//! Each run that journals reclaims holds its run file (`runs/RUN` in the state directory)
//! locked while it lives, and writes there where its group in progress starts in the journal.
//! A run file that can be locked is a run that has ended: the reclaim lines of its last group
//! that nothing cancels or restores are looked at, each lock reached as `restore` reaches it
//! (the directories recorded, from `/`, never following a symlink):
//! - under its private name: it was never removed; it is put back under its name (never
//!   replacing anything);
//! - under its name, the file its line describes (type, mode, owner, mtime, size, content):
//!   it was never removed;
//! - gone, or another file in its place: it was removed, and its line stands.
//!
//! The line of a lock that was not removed is cancelled (a `reclaim-failed` line naming it,
//! so that `restore` never offers it), its copy deleted, and the lock is judged again by
//! whatever reclaim comes next, as any other.

use std::collections::HashSet;
use std::ffi::OsStr;
use std::os::fd::OwnedFd;

use rustix::fs::{AtFlags, FileType, Mode, OFlags, RenameFlags};

use super::journal::{Entry, Event, Meta};
use super::restore::{cancelled_ids, open_recorded_parent, restored_ids};
use super::state::{self, StateDir, cancel_line, sha256_hex};
use crate::text;

/// Finishes every run that ended in the middle of a group (see the module docs). Best effort:
/// a run that cannot be finished now is left for the next reclaim.
pub(super) fn finish_dead_runs(state: &StateDir) {
    let Ok(dead) = state.dead_runs() else {
        return;
    };
    for run in dead {
        let finished = match run.start {
            Some(start) => finish(state, &run.run, start).is_ok(),
            None => true,
        };
        if finished {
            run.finished();
        }
    }
}

fn finish(state: &StateDir, run: &str, start: u64) -> std::io::Result<()> {
    let entries = state.read_journal_from(start)?;
    let mut settled = cancelled_ids(&entries);
    settled.extend(restored_ids(&entries));
    let mut lines = Vec::new();
    let mut copies = Vec::new();
    for e in entries
        .iter()
        .filter(|e| e.run == run && e.event == Event::Reclaim && !settled.contains(e.id.as_str()))
    {
        if let Some(why) = not_removed(state, e) {
            lines.push(cancel_line(state, e, &why));
            copies.extend(e.saved_to.as_deref().and_then(text::path_from_json));
        }
    }
    state.append_all(&lines)?;
    // The lines that say so are on disk: the copies of what was not removed go.
    if let Some(saved) = state.saved_fd() {
        let ours: HashSet<_> = copies.iter().filter_map(|p| p.file_name()).collect();
        for name in ours {
            let _ = rustix::fs::unlinkat(saved, name, AtFlags::empty());
        }
    }
    Ok(())
}

/// Why the lock of `e` was not removed (it is put back under its name if it was moved
/// aside), or `None` if it was, or if that cannot be told.
fn not_removed(state: &StateDir, e: &Entry) -> Option<String> {
    let (dir, name) = open_recorded_parent(e).ok()?;
    let aside = super::aside_name(&name, &e.id);
    if rustix::fs::statat(&dir, &aside, AtFlags::SYMLINK_NOFOLLOW).is_ok() {
        rustix::fs::renameat_with(&dir, &aside, &dir, &name, RenameFlags::NOREPLACE).ok()?;
        return Some(
            "not removed: the run that journaled it ended after moving it aside, before \
             removing it; it was put back under its name"
                .into(),
        );
    }
    let st = rustix::fs::statat(&dir, &name, AtFlags::SYMLINK_NOFOLLOW).ok()?;
    if Meta::of(&st) != *e.meta.as_ref()? || !same_content(state, &dir, &name, &st, e) {
        return None;
    }
    Some("not removed: the run that journaled it ended before removing it".into())
}

/// Whether `name` in `dir` holds what the copy of `e` holds (by its sha256; a lock directory
/// by its metadata alone).
fn same_content(
    state: &StateDir,
    dir: &OwnedFd,
    name: &OsStr,
    st: &rustix::fs::Stat,
    e: &Entry,
) -> bool {
    let Some(want) = &e.sha256 else {
        return e.not_saved.is_some();
    };
    let bytes = match FileType::from_raw_mode(st.st_mode) {
        FileType::RegularFile => {
            let Ok(fd) = rustix::fs::openat(
                dir,
                name,
                OFlags::RDONLY
                    | OFlags::NOFOLLOW
                    | OFlags::NONBLOCK
                    | OFlags::NOCTTY
                    | OFlags::CLOEXEC,
                Mode::empty(),
            ) else {
                return false;
            };
            match state::read_all(&fd, state.limits().max_copy_bytes) {
                Ok(b) => b,
                Err(_) => return false,
            }
        }
        FileType::Symlink => match rustix::fs::readlinkat(dir, name, Vec::new()) {
            Ok(t) => t.into_bytes(),
            Err(_) => return false,
        },
        FileType::Directory => return true,
        _ => return false,
    };
    sha256_hex(&bytes) == *want
}
