//! The file the copies of a group share: the copies of a group of removals go into one file,
//! `ID-group.saved` (ID: its first journal line's id), each at the `saved_offset` its journal
//! line gives, `size` bytes long: creating a file costs a disk more than removing one, and a
//! group writes one. A copy too large for it (more than [`PACKED_MAX`] bytes) is a file of its
//! own. A group's file stays while any of its copies is kept; the copies of locks kept after
//! all stay in it as bytes no line points to, until it rotates away. A file that holds no copy
//! kept once its group is closed is deleted.

use std::ffi::OsString;
use std::io;
use std::os::fd::OwnedFd;
use std::sync::{Arc, Mutex};

use rustix::fs::{AtFlags, Mode, OFlags};

use super::StateDir;

/// A copy of at most this many bytes goes into its group's shared file (see the module docs).
pub const PACKED_MAX: u64 = 64 * 1024;

/// The file the copies of one group share (see the module docs).
#[derive(Debug)]
pub(super) struct Pack {
    pub(super) name: OsString,
    pub(super) fd: OwnedFd,
    state: Mutex<PackState>,
}

#[derive(Debug, Default)]
struct PackState {
    /// Bytes handed out: each copy's place is taken before it is written.
    len: u64,
    /// Copies in it neither kept nor dropped yet.
    live: usize,
    /// Whether a copy in it was kept (its lock removed).
    kept: bool,
    /// No more copies go in: its group was made durable.
    closed: bool,
}

impl Pack {
    /// Takes the place of a copy of `len` bytes; returns its offset.
    pub(super) fn take(&self, len: u64) -> u64 {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let at = st.len;
        st.len += len;
        st.live += 1;
        at
    }

    /// One copy is done with, kept (its lock removed) or not. Returns whether the file holds
    /// nothing any line points to and no copy can go in any more: it is to be deleted.
    pub(super) fn release(&self, kept: bool) -> bool {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        st.live = st.live.saturating_sub(1);
        st.kept |= kept;
        st.closed && st.live == 0 && !st.kept
    }

    /// No more copies go in. Returns whether it is to be deleted (see [`Pack::release`]).
    fn close(&self) -> bool {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        st.closed = true;
        st.live == 0 && !st.kept
    }
}

impl StateDir {
    /// The shared file of the group in progress, made (named after `id`, the journal line of
    /// its first copy) if there is none.
    pub(super) fn pack(&self, id: &str) -> io::Result<Arc<Pack>> {
        let mut slot = self.pack.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(p) = slot.as_ref() {
            return Ok(p.clone());
        }
        let name = OsString::from(format!("{id}-group.saved"));
        let fd = rustix::fs::openat(
            self.saved(),
            &name,
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o600),
        )?;
        let p = Arc::new(Pack {
            name,
            fd,
            state: Mutex::default(),
        });
        *slot = Some(p.clone());
        Ok(p)
    }

    /// The group in progress is over: its copies that come next go into a new shared file.
    pub(super) fn close_pack(&self) {
        let pack = self.pack.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(p) = pack
            && p.close()
        {
            let _ = rustix::fs::unlinkat(self.saved(), &p.name, AtFlags::empty());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{finding, saved_names};
    use super::super::{CopyLimits, Source, Staged};
    use super::*;
    use crate::reclaim::journal::Batch;

    #[test]
    fn the_copies_of_a_group_share_one_file_that_goes_when_none_is_kept() {
        let t = tempfile::tempdir().unwrap();
        let state = Arc::new(
            StateDir::open(&t.path().join("s"), CopyLimits::default(), true)
                .unwrap()
                .unwrap(),
        );
        let lock = t.path().join("a.pid");
        std::fs::write(&lock, "101\n").unwrap();
        let batch = Batch::next();
        let contents: [&[u8]; 3] = [b"101\n", b"", b"a longer record\n"];
        let mut staged: Vec<Staged> = contents
            .iter()
            .map(|c| {
                state
                    .stage(&finding(&lock), Source::Bytes(c, None), batch)
                    .unwrap()
            })
            .collect();
        assert_eq!(saved_names(state.path()).len(), 1, "one file for the group");
        state
            .make_durable(&mut staged.iter_mut().collect::<Vec<_>>())
            .unwrap();
        let dropped = staged.remove(1);
        drop(dropped);
        let kept: Vec<_> = staged.into_iter().map(|s| s.keep().unwrap()).collect();
        assert_eq!(kept[0].0, kept[1].0);
        let all = std::fs::read(&kept[0].0).unwrap();
        for ((_, at), want) in kept.iter().zip([contents[0], contents[2]]) {
            let at = at.unwrap() as usize;
            assert_eq!(&all[at..at + want.len()], want);
        }
        let lines = state.read_journal().unwrap();
        assert_eq!(lines.len(), 3);
        assert_eq!(lines[2].saved_offset, kept[1].1);
        assert_eq!(lines[2].size, Some(contents[2].len() as u64));

        // The next group has a file of its own, deleted when none of its copies is kept.
        let mut next: Vec<Staged> = (0..2)
            .map(|_| {
                state
                    .stage(&finding(&lock), Source::Bytes(b"7\n", None), batch)
                    .unwrap()
            })
            .collect();
        assert_eq!(saved_names(state.path()).len(), 2);
        state
            .make_durable(&mut next.iter_mut().collect::<Vec<_>>())
            .unwrap();
        drop(next);
        assert_eq!(saved_names(state.path()).len(), 1);
        assert_eq!(
            state.used_bytes(),
            (contents[0].len() + contents[2].len()) as u64,
            "only what is kept counts"
        );
    }
}
