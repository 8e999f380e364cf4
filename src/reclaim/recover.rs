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
            // A copy in its group's shared file stays there until the file rotates away:
            // other copies in it may be of locks that were removed.
            if e.saved_offset.is_none() {
                copies.extend(e.saved_to.as_deref().and_then(text::path_from_json));
            }
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

#[cfg(test)]
mod tests {
    use std::fs;
    use std::os::fd::AsFd;
    use std::path::Path;

    use super::*;
    use crate::reclaim::{Batch, CopyLimits, Selector, Source, restore};
    use crate::scan::{Anchor, Finding};

    fn finding(path: &Path) -> Finding {
        let mut f = state::tests::finding(path);
        f.anchor = Some(Anchor::of_parent(path).unwrap().0);
        f
    }

    /// A run killed after its group's lines were on disk: one lock removed, one moved aside
    /// and not removed, one not touched. The next reclaim puts the second back, cancels the
    /// lines of the two not removed (deleting their copies), leaves the removed one to
    /// `restore`, and leaves the run file of a run still alive alone.
    #[test]
    fn a_killed_runs_group_is_finished_by_the_next() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path().join("d");
        fs::create_dir(&d).unwrap();
        let path = t.path().join("s");
        let state = StateDir::shared(&path, CopyLimits::default()).unwrap();
        let dead = "20000101T000000.000Z-1-0badc0de";
        let names = ["gone.pid", "aside.pid", "there.pid"];
        let mut staged = Vec::new();
        for name in names {
            let p = d.join(name);
            fs::write(&p, format!("{name}\n")).unwrap();
            let file = fs::File::open(&p).unwrap();
            let mut s = state
                .stage(&finding(&p), Source::File(file.as_fd()), Batch::next())
                .unwrap();
            s.entry_mut().run = dead.to_string();
            staged.push(s);
        }
        state
            .make_durable(&mut staged.iter_mut().collect::<Vec<_>>())
            .unwrap();
        let ids: Vec<String> = staged.iter().map(|s| s.entry().id.clone()).collect();
        // Killed: the copies stay, whatever was done to the locks.
        for s in staged {
            s.keep();
        }
        let runs = path.join(state::RUNS);
        fs::write(runs.join(dead), "0\n").unwrap();
        let alive = runs.join("20000101T000000.000Z-2-a11fe000");
        fs::write(&alive, "0\n").unwrap();
        let held = fs::File::open(&alive).unwrap();
        rustix::fs::flock(&held, rustix::fs::FlockOperation::NonBlockingLockExclusive).unwrap();
        fs::remove_file(d.join("gone.pid")).unwrap();
        let aside = super::super::aside_name(OsStr::new("aside.pid"), &ids[1]);
        fs::rename(d.join("aside.pid"), d.join(&aside)).unwrap();

        finish_dead_runs(&state);

        assert_eq!(fs::read(d.join("aside.pid")).unwrap(), b"aside.pid\n");
        assert!(!d.join(&aside).exists());
        assert_eq!(fs::read(d.join("there.pid")).unwrap(), b"there.pid\n");
        let j = state.read_journal().unwrap();
        let cancelled: Vec<&str> = j.iter().filter_map(|e| e.cancels.as_deref()).collect();
        assert_eq!(cancelled, [ids[1].as_str(), ids[2].as_str()], "{j:?}");
        assert!(j[3].error.as_deref().unwrap().contains("put back"), "{j:?}");
        let copies: Vec<_> = fs::read_dir(path.join(state::SAVED))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(copies.len(), 1, "{copies:?}");
        assert!(copies[0].starts_with(&ids[0]), "{copies:?}");
        assert!(!runs.join(dead).exists());
        assert!(alive.exists(), "a live run's file is left alone");
        // Its removed lock is what a restore of the run puts back, and only it.
        let (plan, results) = restore::restore(&path, &Selector::Id(dead.into())).unwrap();
        assert_eq!(plan.entries.len(), 1, "{plan:?}");
        assert!(results[0].is_ok(), "{results:?}");
        assert_eq!(fs::read(d.join("gone.pid")).unwrap(), b"gone.pid\n");
    }
}
