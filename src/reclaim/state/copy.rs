//! The copies: before a lock is removed, it is copied into `saved/` ([`StateDir::stage`]),
//! bounded by [`CopyLimits`](super::CopyLimits): a regular file extent by extent
//! (`SEEK_DATA`/`SEEK_HOLE`), so a sparse file stays sparse; a symlink as its link text; a lock
//! directory as a note of what it held, its records (a few small files, [`lock_records`]) kept
//! in its journal line. A copy larger than the per-copy cap, or one that would take the
//! directory past its total cap, is not made ([`NotCopied`]), and the lock is then kept unless
//! the user asked otherwise. A [`Staged`] copy waits for its lock's removal: kept once the lock
//! is gone, deleted when it is dropped (the lock was kept).

use std::ffi::{OsStr, OsString};
use std::io;
use std::os::fd::{BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering;

use rustix::fs::{AtFlags, FileType, Mode, OFlags, SeekFrom, Stat};
use rustix::io::Errno;
use sha2::{Digest, Sha256};

use super::super::journal::{self, Batch, Entry, Meta};
use super::StateDir;
use super::pack::{PACKED_MAX, Pack};
use crate::judge::Judgement;
use crate::scan::Finding;
use crate::text;

/// A file larger than this (apparent size) is never copied, whatever its holes: its digest
/// alone would take too long, and no lock format comes near it.
pub const MAX_APPARENT_BYTES: u64 = 1 << 30;

/// Where a staged copy is.
#[derive(Debug)]
pub(super) enum CopyAt {
    /// A file of its own in `saved/`.
    Own(OsString),
    /// A part of its group's shared file.
    Packed(Arc<Pack>),
}

/// Why a copy was not made: too big for the limits. The lock is kept unless the user asked
/// to remove what cannot be copied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotCopied(pub String);

/// An error while staging a copy.
#[derive(Debug)]
pub enum StageError {
    /// The limits forbid the copy.
    NotCopied(NotCopied),
    /// The copy could not be written (ENOSPC, ...); nothing is left behind.
    Io(io::Error),
}

impl std::fmt::Display for StageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StageError::NotCopied(n) => f.write_str(&n.0),
            StageError::Io(e) => write!(f, "{e}"),
        }
    }
}

impl From<io::Error> for StageError {
    fn from(e: io::Error) -> Self {
        StageError::Io(e)
    }
}

impl From<Errno> for StageError {
    fn from(e: Errno) -> Self {
        StageError::Io(e.into())
    }
}

/// What to copy.
pub enum Source<'a> {
    /// A regular file, through a descriptor on the very inode being removed.
    File(BorrowedFd<'a>),
    /// A symlink or a directory, by name in its directory (never followed).
    At(BorrowedFd<'a>, &'a OsStr),
    /// Content already read (the engine's own locks), with the file's metadata when known.
    Bytes(&'a [u8], Option<Meta>),
}

impl StateDir {
    /// Writes the copy of a lock about to be removed (in `batch`) under a temporary name, with
    /// its metadata. Nothing is journaled yet: [`Staged::commit`] once the lock is gone,
    /// [`Staged::discard`] (or drop) if it is kept.
    pub fn stage(
        self: &Arc<Self>,
        f: &Finding,
        source: Source<'_>,
        batch: Batch,
    ) -> Result<Staged, StageError> {
        let mut members = Vec::new();
        let (meta, content) = match source {
            Source::File(fd) => {
                let st = rustix::fs::fstat(fd)?;
                if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
                    return Err(io::Error::other("it is no longer a regular file").into());
                }
                (Meta::of(&st), Content::Fd(fd, st))
            }
            Source::At(dir, name) => {
                let st = rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW)?;
                let meta = Meta::of(&st);
                match FileType::from_raw_mode(st.st_mode) {
                    FileType::Symlink => {
                        let text = rustix::fs::readlinkat(dir, name, Vec::new())?;
                        (meta, Content::Owned(text.into_bytes()))
                    }
                    FileType::Directory => {
                        members = lock_records(dir, name)?;
                        // The raw path, as for the copies of files: whoever shows the
                        // note escapes it.
                        let mut note = f.path.as_os_str().as_bytes().to_vec();
                        note.extend_from_slice(
                            format!(
                                " was a lock directory ({}); it was removed with rmdir\n",
                                f.dialect
                            )
                            .as_bytes(),
                        );
                        for m in &members {
                            note.extend_from_slice(
                                format!("it held {} ({} bytes)\n", m.name, m.meta.size).as_bytes(),
                            );
                        }
                        (meta, Content::Owned(note))
                    }
                    _ => {
                        return Err(io::Error::other(
                            "it is not a regular file, a symlink or a directory",
                        )
                        .into());
                    }
                }
            }
            Source::Bytes(b, meta) => (
                meta.unwrap_or_else(|| Meta::unknown(b.len() as u64)),
                Content::Borrowed(b),
            ),
        };
        let mut staged = Staged {
            state: self.clone(),
            copy: None,
            reserved: 0,
            entry: journal::reclaim_entry(self.next_id(), f, meta, batch),
        };
        staged.entry.members = members;
        staged.write(content)?;
        Ok(staged)
    }

    /// A journal entry for a lock removed without a copy (the user asked for it) in `batch`:
    /// `why` says why no copy was made. Commit it once the lock is gone.
    pub fn uncopied(
        self: &Arc<Self>,
        f: &Finding,
        meta: Meta,
        why: &NotCopied,
        batch: Batch,
    ) -> Staged {
        let mut entry = journal::reclaim_entry(self.next_id(), f, meta, batch);
        entry.not_saved = Some(why.0.clone());
        Staged {
            state: self.clone(),
            copy: None,
            reserved: 0,
            entry,
        }
    }
}

enum Content<'a> {
    Fd(BorrowedFd<'a>, Stat),
    Owned(Vec<u8>),
    Borrowed(&'a [u8]),
}

/// A copy written in `saved/` and its journal entry, waiting for the lock's removal. Dropped
/// without [`Staged::keep`] (the lock was kept), the copy is removed (a copy in its group's
/// shared file goes with that file, when no other copy in it is kept).
#[derive(Debug)]
pub struct Staged {
    state: Arc<StateDir>,
    /// Where the copy is, until the lock is gone.
    pub(super) copy: Option<CopyAt>,
    reserved: u64,
    pub(super) entry: Entry,
}

/// The most entries a lock directory may hold to be removed with them, and the largest each.
pub const MAX_RECORDS: usize = 8;
pub const MAX_RECORD_BYTES: u64 = 4096;

/// The records a lock directory holds (`pid`, `owner`, ...): a few small regular files, read
/// whole through the directory (never following a link, never blocking). Anything else inside
/// (a subdirectory, a link, a large file, many entries) is not a lock's record: such a
/// directory is not removed.
pub(in crate::reclaim) fn lock_records(
    dir: BorrowedFd<'_>,
    name: &OsStr,
) -> Result<Vec<journal::Member>, StageError> {
    let refuse = |why: String| -> StageError { io::Error::other(why).into() };
    let fd = rustix::fs::openat(
        dir,
        name,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    let listing = rustix::fs::openat(
        &fd,
        ".",
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    let mut out = Vec::new();
    for entry in rustix::fs::Dir::new(listing)? {
        let entry = entry?;
        let n = entry.file_name().to_bytes();
        if n == b"." || n == b".." {
            continue;
        }
        let n = OsStr::from_bytes(n).to_os_string();
        let shown = text::json_path(Path::new(&n));
        if out.len() == MAX_RECORDS {
            return Err(refuse(format!(
                "it holds more than {MAX_RECORDS} entries, not a lock's record: not removed"
            )));
        }
        let st = rustix::fs::statat(&fd, &n, AtFlags::SYMLINK_NOFOLLOW)?;
        if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile
            || st.st_size as u64 > MAX_RECORD_BYTES
        {
            return Err(refuse(format!(
                "it holds {shown}, which is not a small record (a regular file of at most {MAX_RECORD_BYTES} bytes): not removed"
            )));
        }
        let file = rustix::fs::openat(
            &fd,
            &n,
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        let mut bytes = vec![0u8; MAX_RECORD_BYTES as usize + 1];
        let mut len = 0;
        loop {
            match rustix::io::read(&file, &mut bytes[len..]) {
                Ok(0) => break,
                Ok(k) => {
                    len += k;
                    if len == bytes.len() {
                        return Err(refuse(format!("{shown} grew while it was read")));
                    }
                }
                Err(rustix::io::Errno::INTR) => continue,
                Err(e) => return Err(io::Error::from(e).into()),
            }
        }
        bytes.truncate(len);
        out.push(journal::Member {
            name: shown,
            meta: Meta::of(&st),
            content: text::json_path(Path::new(OsStr::from_bytes(&bytes))),
        });
    }
    Ok(out)
}

impl Staged {
    /// The names of the records inside a lock directory, copied with it.
    pub fn members(&self) -> Vec<OsString> {
        self.entry.members.iter().map(|m| m.name_os()).collect()
    }

    /// The journal entry this will write.
    pub fn entry(&self) -> &Entry {
        &self.entry
    }

    #[cfg(test)]
    pub(in crate::reclaim) fn entry_mut(&mut self) -> &mut Entry {
        &mut self.entry
    }

    fn write(&mut self, content: Content<'_>) -> Result<(), StageError> {
        let limits = self.state.limits;
        let (extents, apparent) = match &content {
            Content::Fd(fd, st) => {
                let size = st.st_size as u64;
                if size > MAX_APPARENT_BYTES {
                    return Err(StageError::NotCopied(NotCopied(format!(
                        "it is {size} bytes long, more than the {MAX_APPARENT_BYTES} reclaim copies"
                    ))));
                }
                // A copy in the shared file is written whole, holes as zeros.
                let extents = match size {
                    s if s <= PACKED_MAX => vec![(0, s)],
                    s => data_extents(*fd, s)?,
                };
                (extents, size)
            }
            Content::Owned(b) => (vec![(0, b.len() as u64)], b.len() as u64),
            Content::Borrowed(b) => (vec![(0, b.len() as u64)], b.len() as u64),
        };
        let packed = apparent <= PACKED_MAX;
        let data: u64 = extents.iter().map(|(a, b)| b - a).sum();
        if data > limits.max_copy_bytes {
            return Err(StageError::NotCopied(NotCopied(format!(
                "its copy would hold {data} bytes of data, more than the {} a copy may hold \
                 (saved.max_copy_bytes)",
                limits.max_copy_bytes
            ))));
        }
        // Reserve the room before writing, so parallel copies agree: a file of its own takes
        // whole blocks, a part of the shared file its bytes.
        let need = match packed {
            true => data,
            false => data.div_ceil(4096).max(1) * 4096,
        };
        let used = &self.state.used;
        let mut now = used.load(Ordering::Relaxed);
        loop {
            if now.saturating_add(need) > limits.max_total_bytes {
                return Err(StageError::NotCopied(NotCopied(format!(
                    "the state directory {} holds {now} bytes of copies; this one would pass its \
                     limit of {} (saved.max_total_bytes; copies older than saved.keep_days = {} \
                     are deleted)",
                    self.state.path.display(),
                    limits.max_total_bytes,
                    limits.keep_days
                ))));
            }
            match used.compare_exchange_weak(now, now + need, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => break,
                Err(v) => now = v,
            }
        }
        self.reserved = need;

        let mut hash = Sha256::new();
        if packed {
            let pack = self.state.pack(&self.entry.id)?;
            let at = pack.take(apparent);
            self.entry.saved_to = Some(text::json_path(&self.state.saved_dir().join(&pack.name)));
            self.entry.saved_offset = Some(at);
            self.copy = Some(CopyAt::Packed(pack.clone()));
            // On error (ENOSPC...) its part stays unused; the file goes with its group's
            // when no copy in it is kept.
            match &content {
                Content::Fd(fd, _) => {
                    copy_extents(*fd, &pack.fd, &extents, apparent, &mut hash, at)?
                }
                Content::Owned(b) => write_all_at(&pack.fd, b, at, &mut hash)?,
                Content::Borrowed(b) => write_all_at(&pack.fd, b, at, &mut hash)?,
            }
        } else {
            let name = OsString::from(format!(
                "{}-{}.saved",
                self.entry.id,
                safe_file_name(&self.entry.path_buf())
            ));
            let out = rustix::fs::openat(
                self.state.saved(),
                &name,
                OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::from_raw_mode(0o600),
            )?;
            self.entry.saved_to = Some(text::json_path(&self.state.saved_dir().join(&name)));
            self.copy = Some(CopyAt::Own(name));
            let written: io::Result<()> = (|| {
                match &content {
                    Content::Fd(fd, _) => {
                        copy_extents(*fd, &out, &extents, apparent, &mut hash, 0)?
                    }
                    Content::Owned(b) => write_all_at(&out, b, 0, &mut hash)?,
                    Content::Borrowed(b) => write_all_at(&out, b, 0, &mut hash)?,
                }
                // A hole at the end: the size is set (written data set it already otherwise).
                if extents.last().map_or(0, |e| e.1) < apparent {
                    rustix::fs::ftruncate(&out, apparent)?;
                }
                Ok(())
            })();
            // On error (ENOSPC...) the partial copy is removed when `self` is dropped; it is
            // made durable with its batch (see [`StateDir::make_durable`]).
            written?;
            // The real room taken.
            let st = rustix::fs::fstat(&out)?;
            let real = on_disk(&st);
            used.fetch_add(real, Ordering::Relaxed);
            used.fetch_sub(self.reserved, Ordering::Relaxed);
            self.reserved = real;
        }
        self.entry.size = Some(apparent);
        self.entry.sha256 = Some(hex(&hash.finalize()));
        Ok(())
    }

    /// Records `at_removal`, the judgement of the moment, in the journal line this will write.
    pub fn set_judgement(&mut self, at_removal: &Judgement) {
        journal::set_judgement(&mut self.entry, at_removal);
    }

    /// The lock is gone (after [`StateDir::make_durable`]): the copy stays. Returns where it
    /// is: its file, and where in it the copy starts when it shares its group's file.
    pub fn keep(mut self) -> Option<(PathBuf, Option<u64>)> {
        self.reserved = 0;
        let name = match self.copy.take()? {
            CopyAt::Own(name) => name,
            CopyAt::Packed(pack) => {
                pack.release(true);
                pack.name.clone()
            }
        };
        Some((self.state.saved_dir().join(name), self.entry.saved_offset))
    }

    /// A batch of one: journals the removal with `at_removal`, the judgement of that moment,
    /// and makes the copy and the line durable. The caller removes the lock next, and
    /// cancels the line ([`StateDir::cancel`]) if it cannot.
    pub fn make_durable(&mut self, at_removal: &Judgement) -> io::Result<()> {
        self.set_judgement(at_removal);
        let state = self.state.clone();
        state.make_durable(&mut [self])
    }

    /// A batch of one, done: journals the removal with `at_removal`, makes it durable, and
    /// keeps the copy. Returns where it is (see [`Staged::keep`]).
    pub fn commit(mut self, at_removal: &Judgement) -> io::Result<Option<(PathBuf, Option<u64>)>> {
        self.make_durable(at_removal)?;
        self.state.batch_done();
        Ok(self.keep())
    }

    /// The lock was kept: removes the copy, journals nothing.
    pub fn discard(self) {}
}

impl Drop for Staged {
    fn drop(&mut self) {
        match self.copy.take() {
            Some(CopyAt::Own(name)) => {
                let _ = rustix::fs::unlinkat(self.state.saved(), &name, AtFlags::empty());
            }
            Some(CopyAt::Packed(pack)) if pack.release(false) => {
                let _ = rustix::fs::unlinkat(self.state.saved(), &pack.name, AtFlags::empty());
            }
            Some(CopyAt::Packed(_)) | None => {}
        }
        if self.reserved > 0 {
            self.state.used.fetch_sub(self.reserved, Ordering::Relaxed);
        }
    }
}

/// The data extents of a file of `size` bytes (`SEEK_DATA`/`SEEK_HOLE`); the whole file when
/// the file system cannot tell.
fn data_extents(fd: BorrowedFd<'_>, size: u64) -> io::Result<Vec<(u64, u64)>> {
    // A block or less: nothing to spare.
    if size <= 4096 {
        return Ok(vec![(0, size)]);
    }
    let mut out = Vec::new();
    let mut off = 0u64;
    while off < size {
        let start = match rustix::fs::seek(fd, SeekFrom::Data(off)) {
            Ok(s) => s,
            Err(Errno::NXIO) => break,
            Err(Errno::INVAL | Errno::OPNOTSUPP) if off == 0 => return Ok(vec![(0, size)]),
            Err(e) => return Err(e.into()),
        };
        if start >= size {
            break;
        }
        let end = rustix::fs::seek(fd, SeekFrom::Hole(start))?.min(size);
        if end <= start {
            break;
        }
        out.push((start, end));
        off = end;
    }
    Ok(out)
}

static ZEROS: [u8; 65536] = [0; 65536];

/// Copies the extents of `src` to the same offsets of `dst` past `base` (holes stay holes) and
/// hashes the logical content (holes as zeros).
fn copy_extents(
    src: BorrowedFd<'_>,
    dst: &OwnedFd,
    extents: &[(u64, u64)],
    size: u64,
    hash: &mut Sha256,
    base: u64,
) -> io::Result<()> {
    let mut buf = vec![0u8; 1 << 16];
    let mut hashed = 0u64;
    let hash_zeros = |hash: &mut Sha256, mut n: u64| {
        while n > 0 {
            let k = n.min(ZEROS.len() as u64) as usize;
            hash.update(&ZEROS[..k]);
            n -= k as u64;
        }
    };
    for &(start, end) in extents {
        hash_zeros(hash, start - hashed);
        let mut off = start;
        while off < end {
            let want = ((end - off) as usize).min(buf.len());
            let n = rustix::io::pread(src, &mut buf[..want], off)?;
            if n == 0 {
                return Err(io::Error::other("the file shrank while it was copied"));
            }
            let mut done = 0;
            while done < n {
                done += rustix::io::pwrite(dst, &buf[done..n], base + off + done as u64)?;
            }
            hash.update(&buf[..n]);
            off += n as u64;
        }
        hashed = end;
    }
    hash_zeros(hash, size.saturating_sub(hashed));
    Ok(())
}

fn write_all_at(dst: &OwnedFd, b: &[u8], off: u64, hash: &mut Sha256) -> io::Result<()> {
    let mut done = 0;
    while done < b.len() {
        done += rustix::io::pwrite(dst, &b[done..], off + done as u64)?;
    }
    hash.update(b);
    Ok(())
}

#[allow(clippy::unnecessary_cast)]
pub(super) fn on_disk(st: &Stat) -> u64 {
    (st.st_blocks as u64).saturating_mul(512)
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A file name for the copy: the lock's own name with anything but `[A-Za-z0-9._-]` replaced,
/// never starting with a dot, at most 100 bytes.
fn safe_file_name(path: &Path) -> String {
    let raw = path.file_name().map_or(&b"lock"[..], |n| n.as_bytes());
    let mut s: String = raw
        .iter()
        .map(|&b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'.' | b'_' | b'-' => b as char,
            _ => '_',
        })
        .take(100)
        .collect();
    if s.starts_with('.') {
        s.replace_range(0..1, "_");
    }
    if s.is_empty() {
        s.push_str("lock");
    }
    s
}

#[cfg(test)]
mod tests {
    use std::os::fd::AsFd;
    use std::os::unix::fs::MetadataExt;

    use super::super::CopyLimits;
    use super::super::tests::{finding, saved_names};
    use super::*;

    #[test]
    fn copy_names_are_safe() {
        assert_eq!(safe_file_name(Path::new("/x/.a b\n.lock")), "_a_b_.lock");
        assert_eq!(safe_file_name(Path::new("/")), "lock");
    }

    #[test]
    fn a_sparse_file_stays_sparse_and_a_discarded_copy_leaves_nothing() {
        let t = tempfile::tempdir().unwrap();
        let lock = t.path().join("big.pid");
        let f = std::fs::File::options()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&lock)
            .unwrap();
        f.set_len(16 << 20).unwrap();
        std::os::unix::fs::FileExt::write_at(&f, b"123\n", 0).unwrap();
        let limits = CopyLimits {
            max_copy_bytes: 1 << 20,
            max_total_bytes: 4 << 20,
            keep_days: 1,
        };
        let state = Arc::new(
            StateDir::open(&t.path().join("s"), limits, true)
                .unwrap()
                .unwrap(),
        );
        let staged = state
            .stage(&finding(&lock), Source::File(f.as_fd()), Batch::next())
            .unwrap();
        assert_eq!(saved_names(state.path()).len(), 1);
        staged.discard();
        assert!(saved_names(state.path()).is_empty());
        assert!(state.read_journal().unwrap().is_empty());
        assert_eq!(state.used_bytes(), 0);

        let staged = state
            .stage(&finding(&lock), Source::File(f.as_fd()), Batch::next())
            .unwrap();
        let (copy, at) = staged.commit(&finding(&lock).judgement).unwrap().unwrap();
        assert_eq!(at, None, "a large copy is a file of its own");
        let m = std::fs::metadata(&copy).unwrap();
        assert_eq!(m.len(), 16 << 20);
        assert!(m.blocks() * 512 <= 64 * 1024, "{} blocks", m.blocks());
        let j = state.read_journal().unwrap();
        assert_eq!(j.len(), 1);
        assert_eq!(j[0].meta.as_ref().unwrap().size, 16 << 20);

        // Over the per-copy cap: no copy, nothing left behind.
        std::os::unix::fs::FileExt::write_at(&f, &vec![1u8; 2 << 20], 4 << 20).unwrap();
        let e = state
            .stage(&finding(&lock), Source::File(f.as_fd()), Batch::next())
            .unwrap_err();
        assert!(
            matches!(&e, StageError::NotCopied(n) if n.0.contains("max_copy_bytes")),
            "{e}"
        );
        assert_eq!(saved_names(state.path()).len(), 1);
    }

    #[test]
    fn the_note_for_a_lock_directory_keeps_the_raw_path() {
        let t = tempfile::tempdir().unwrap();
        let name = OsStr::from_bytes(b"job\x1b[31m\xe2\x80\xae\xff.lock");
        let lock = t.path().join(name);
        std::fs::create_dir(&lock).unwrap();
        let state = Arc::new(
            StateDir::open(&t.path().join("s"), CopyLimits::default(), true)
                .unwrap()
                .unwrap(),
        );
        let parent = std::fs::File::open(t.path()).unwrap();
        let staged = state
            .stage(
                &finding(&lock),
                Source::At(parent.as_fd(), name),
                Batch::next(),
            )
            .unwrap();
        let (copy, at) = staged.commit(&finding(&lock).judgement).unwrap().unwrap();
        assert_eq!(at, Some(0), "the only copy of its group's file");
        let note = std::fs::read(&copy).unwrap();
        let mut want = lock.as_os_str().as_bytes().to_vec();
        want.extend_from_slice(b" was a lock directory (pidfile); it was removed with rmdir\n");
        assert_eq!(note, want, "{}", String::from_utf8_lossy(&note));
    }
}
