//! The state directory: where reclaim keeps a copy of every lock it removes and the
//! `journal.jsonl` that maps each copy back to its original path (README: Reclaim and the journal).
//!
//! reclaim runs as root over shared directories, so the state directory is trusted only once
//! checked, and every file in it is reached through its verified descriptor:
//! - it is opened component by component from `/`; a component that exists is followed (a
//!   home directory may be a symlink) only if it is owned by root or by us and, when others
//!   may write to it, is sticky; the state directory itself and every component we create are
//!   opened `O_NOFOLLOW` and must be directories owned by us that no one else may write to.
//!   Anything else is refused with a clear error, before anything is written.
//! - new directories are made 0700, files 0600; the journal is opened
//!   `O_NOFOLLOW|O_APPEND` relative to the directory's descriptor and must be a regular file
//!   of ours with one link.
//! - there is no shared fallback: without `XDG_STATE_HOME` and `HOME`, root uses
//!   `/var/lib/locksmith` and any other user gets an error.
//!
//! Copies are bounded ([`CopyLimits`]): a regular file is copied extent by extent
//! (`SEEK_DATA`/`SEEK_HOLE`), so a sparse file stays sparse; a copy larger than the per-copy
//! cap, or one that would take the directory past its total cap, is not made (and the lock is
//! then kept unless the user asked otherwise); copies older than `keep_days` are deleted when
//! the directory is opened.
//!
//! The copies of a group of removals share one file, `ID-group.saved` (ID: its first journal
//! line's id), each at the `saved_offset` its journal line gives, `size` bytes long: creating a
//! file costs a disk more than removing one, and a group writes one. A copy too large for it
//! (more than [`PACKED_MAX`] bytes) is a file of its own, `ID-NAME.saved`. A group's file stays
//! while any of its copies is kept; the copies of locks kept after all stay in it as bytes no
//! line points to, until it rotates away.
//!
//! Durability comes in batches ([`StateDir::make_durable`]): the copies of a batch are written
//! ([`Staged`]), their journal lines are appended in one `write`, and one
//! `syncfs(2)` of the state directory's file system puts both on disk; only then are the
//! locks removed. A lock kept after all (its check at the moment of removal failed) gets a
//! `reclaim-failed` line naming the reclaim line it cancels, and its copy is deleted. Each
//! process that journals reclaims holds a run file in `runs/` (locked with `flock(2)` while it
//! lives) that says where its batch in progress starts in the journal, so that a run killed
//! in the middle of a batch is finished by the next one (see `recover`). An error (ENOSPC)
//! removes the copies of the batch, and its locks are kept.

use std::ffi::{OsStr, OsString};
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use rustix::fs::{AtFlags, FileType, Mode, OFlags, SeekFrom, Stat};
use rustix::io::Errno;
use sha2::{Digest, Sha256};

use super::journal::{self, Batch, Entry, Meta};
use crate::judge::Judgement;
use crate::scan::Finding;
use crate::text;

/// Name of the journal file in the state directory.
pub const JOURNAL: &str = "journal.jsonl";
/// The directory of copies, inside the state directory.
pub const SAVED: &str = "saved";
/// Prefix of a copy being written by versions before copies were written under their names
/// (rotated like copies).
const PARTIAL: &str = ".partial-";
/// A group of at most this many copies is synced file by file (`fsync`), a larger one with
/// one `syncfs(2)`.
const SYNC_EACH: usize = 8;
/// A copy of at most this many bytes goes into its group's shared file (see the module docs).
pub const PACKED_MAX: u64 = 64 * 1024;
/// The directory of run files, inside the state directory (see the module docs).
pub const RUNS: &str = "runs";
/// A file larger than this (apparent size) is never copied, whatever its holes: its digest
/// alone would take too long, and no lock format comes near it.
pub const MAX_APPARENT_BYTES: u64 = 1 << 30;

/// How much the state directory may hold (the `saved` section of the configuration).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CopyLimits {
    /// The largest copy (bytes of data; holes are free).
    pub max_copy_bytes: u64,
    /// All copies together: the blocks a copy of its own takes on disk, the bytes of a copy in
    /// its group's shared file.
    pub max_total_bytes: u64,
    /// Copies older than this many days are deleted (their journal lines stay).
    pub keep_days: u64,
}

impl Default for CopyLimits {
    fn default() -> Self {
        CopyLimits {
            max_copy_bytes: 64 << 20,
            max_total_bytes: 512 << 20,
            keep_days: 90,
        }
    }
}

/// Where root keeps its state when neither `XDG_STATE_HOME` nor `HOME` is set.
pub const ROOT_FALLBACK: &str = "/var/lib/locksmith";

/// locksmith's state directory (reclaim's copies and journal):
/// `$XDG_STATE_HOME/locksmith`, else `~/.local/state/locksmith` (an `XDG_STATE_HOME` or
/// `HOME` that is not absolute is ignored, as the XDG spec says), else `/var/lib/locksmith`
/// for root. For any other user with neither, the empty path: opening it fails with an error
/// that says what to set (a shared `$TMPDIR` is no place for it).
pub fn default_state_dir() -> PathBuf {
    let abs = |name| {
        std::env::var_os(name)
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
    };
    if let Some(x) = abs("XDG_STATE_HOME") {
        return x.join("locksmith");
    }
    if let Some(home) = abs("HOME") {
        return home.join(".local/state/locksmith");
    }
    if rustix::process::geteuid().is_root() {
        return PathBuf::from(ROOT_FALLBACK);
    }
    PathBuf::new()
}

/// A verified state directory, opened once per process and path (see the module docs).
#[derive(Debug)]
pub struct StateDir {
    path: PathBuf,
    dir: OwnedFd,
    /// `saved/`; absent only in a directory opened for reading that never had copies.
    saved: Option<OwnedFd>,
    /// The journal, opened (and checked) with the directory when it is opened for writing,
    /// so that a bad journal is refused before anything is removed.
    journal: Option<OwnedFd>,
    /// Whether `saved/` and the journal are on different file systems (each is then synced).
    split: bool,
    /// This process's run file (see the module docs), made at its first batch.
    run_file: Mutex<Option<OwnedFd>>,
    /// Whether the runs killed before this one have been finished (see `recover`).
    pub(super) recovered: std::sync::Once,
    limits: CopyLimits,
    /// Bytes on disk in `saved/`, counting copies being written.
    used: AtomicU64,
    seq: AtomicU64,
    /// The shared file the copies of the group in progress go into, once made.
    pack: Mutex<Option<Arc<Pack>>>,
}

/// The file the copies of one group share (see the module docs).
#[derive(Debug)]
struct Pack {
    name: OsString,
    fd: OwnedFd,
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
    fn take(&self, len: u64) -> u64 {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let at = st.len;
        st.len += len;
        st.live += 1;
        at
    }

    /// One copy is done with, kept (its lock removed) or not. Returns whether the file holds
    /// nothing any line points to and no copy can go in any more: it is to be deleted.
    fn release(&self, kept: bool) -> bool {
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

/// Where a staged copy is.
#[derive(Debug)]
enum CopyAt {
    /// A file of its own in `saved/`.
    Own(OsString),
    /// A part of its group's shared file.
    Packed(Arc<Pack>),
}

/// The process's open state directories (reclaim of many locks opens it once).
static OPEN: Mutex<Vec<Arc<StateDir>>> = Mutex::new(Vec::new());

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
    /// The verified state directory at `path`, created (0700) if needed, with `limits`.
    /// Opened once per process: later calls return the same descriptor.
    pub fn shared(path: &Path, limits: CopyLimits) -> io::Result<Arc<StateDir>> {
        let mut open = OPEN.lock().unwrap_or_else(|e| e.into_inner());
        // A directory removed or replaced since (a long-running UI) is opened again.
        open.retain(|s| s.still_there());
        if let Some(s) = open.iter().find(|s| s.path == path && s.limits == limits) {
            return Ok(s.clone());
        }
        let s = Arc::new(Self::open(path, limits, true)?.expect("created"));
        open.push(s.clone());
        Ok(s)
    }

    /// The verified state directory at `path` if it exists (for reading the journal and
    /// restoring); `None` if it does not.
    pub fn existing(path: &Path) -> io::Result<Option<StateDir>> {
        Self::open(path, CopyLimits::default(), false)
    }

    fn open(path: &Path, limits: CopyLimits, create: bool) -> io::Result<Option<StateDir>> {
        let Some(dir) = open_dir_checked(path, create)? else {
            return Ok(None);
        };
        let saved = sub_dir(&dir, path, SAVED, create)?;
        let journal = if create {
            Some(open_journal(&dir, path)?)
        } else {
            None
        };
        let split = match (&saved, &journal) {
            (Some(s), Some(j)) => rustix::fs::fstat(s)?.st_dev != rustix::fs::fstat(j)?.st_dev,
            _ => false,
        };
        let s = StateDir {
            path: path.to_path_buf(),
            dir,
            saved,
            journal,
            split,
            run_file: Mutex::new(None),
            recovered: std::sync::Once::new(),
            limits,
            used: AtomicU64::new(0),
            seq: AtomicU64::new(0),
            pack: Mutex::new(None),
        };
        if create {
            let used = s.rotate()?;
            s.used.store(used, Ordering::Relaxed);
        }
        Ok(Some(s))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether the path still names the directory we hold (not removed, not replaced).
    fn still_there(&self) -> bool {
        let (Ok(held), Ok(now)) = (rustix::fs::fstat(&self.dir), rustix::fs::lstat(&self.path))
        else {
            return false;
        };
        held.st_nlink > 0 && (held.st_dev, held.st_ino) == (now.st_dev, now.st_ino)
    }

    pub fn limits(&self) -> CopyLimits {
        self.limits
    }

    /// The directory of copies.
    pub fn saved_dir(&self) -> PathBuf {
        self.path.join(SAVED)
    }

    /// `saved/`, when it exists.
    pub(super) fn saved_fd(&self) -> Option<BorrowedFd<'_>> {
        self.saved.as_ref().map(AsFd::as_fd)
    }

    /// `saved/` of a directory opened for writing (always there).
    fn saved(&self) -> BorrowedFd<'_> {
        self.saved_fd().expect("created with the state directory")
    }

    /// Bytes on disk the copies take now.
    pub fn used_bytes(&self) -> u64 {
        self.used.load(Ordering::Relaxed)
    }

    /// Deletes copies (and partial copies left by a crash) made more than `keep_days` ago, by
    /// the time their name starts with; returns the bytes on disk of what stays.
    fn rotate(&self) -> io::Result<u64> {
        let now = jiff::Timestamp::now().as_second();
        let keep = i64::try_from(self.limits.keep_days.saturating_mul(86_400)).unwrap_or(i64::MAX);
        let mut used = 0u64;
        let mut doomed = Vec::new();
        for name in names_in(self.saved())? {
            let Ok(st) = rustix::fs::statat(self.saved(), &name, AtFlags::SYMLINK_NOFOLLOW) else {
                continue;
            };
            // A copy's name starts with the time it was made (after the prefix, for one
            // being written); other names are not ours. A partial copy left by a crash may be
            // the only copy of a lock removed just before (its final name not yet on disk), so
            // it is kept as long as a copy.
            let bare = name.as_bytes();
            let bare = bare.strip_prefix(PARTIAL.as_bytes()).unwrap_or(bare);
            let made = made_at(bare).map_or(0, |t| now.saturating_sub(t));
            if made > keep {
                doomed.push(name);
            } else {
                used = used.saturating_add(on_disk(&st));
            }
        }
        for name in doomed {
            let _ = rustix::fs::unlinkat(self.saved(), &name, AtFlags::empty());
        }
        Ok(used)
    }

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

    /// A new journal entry id: time, process and sequence, unique and sortable.
    pub fn next_id(&self) -> String {
        let stamp = jiff::Timestamp::now().strftime("%Y%m%dT%H%M%S%.3fZ");
        let n = self.seq.fetch_add(1, Ordering::Relaxed);
        format!("{stamp}-{}-{n}", std::process::id())
    }

    /// Appends one entry to the journal (one `write` on the `O_APPEND` file, then fsync).
    pub fn append(&self, entry: &Entry) -> io::Result<()> {
        self.append_all(std::slice::from_ref(entry))
    }

    /// Appends `entries` to the journal in one `write`, then syncs it once.
    pub fn append_all(&self, entries: &[Entry]) -> io::Result<()> {
        if entries.is_empty() {
            return Ok(());
        }
        let opened;
        let fd = match &self.journal {
            Some(fd) => fd,
            None => {
                opened = open_journal(&self.dir, &self.path)?;
                &opened
            }
        };
        write_lines(fd, &lines(entries)?)?;
        rustix::fs::fdatasync(fd)?;
        Ok(())
    }

    /// Puts the copies of `batch` (written by [`StateDir::stage`]) and their journal lines
    /// on disk: the lines are appended in one `write`, then one `syncfs(2)` of the state
    /// directory's file system makes the copies, the lines and the run file (which now says
    /// where the batch starts) durable (a group of a few is synced file by file instead). Once it returns, the batch's locks may be removed;
    /// each one that is not must get a line of [`StateDir::cancel`]. On an error nothing of
    /// the batch may be removed (its lines, if written, are cancelled by the caller).
    pub fn make_durable(&self, batch: &mut [&mut Staged]) -> io::Result<()> {
        if batch.is_empty() {
            return Ok(());
        }
        let fd = self
            .journal
            .as_ref()
            .ok_or_else(|| io::Error::other("the state directory was opened for reading"))?;
        let entries: Vec<&Entry> = batch.iter().map(|s| &s.entry).collect();
        let text = lines(entries)?;
        let start = rustix::fs::fstat(fd)?.st_size as u64;
        // The copies that come next go into a file of their own group.
        self.close_pack();
        let few = batch.len() <= SYNC_EACH;
        self.mark_run(Some(start), few)?;
        write_lines(fd, &text)?;
        if few {
            // A few files: synced one by one, which spares the other files of the file
            // system that `syncfs` would write too.
            let mut synced: Vec<&Arc<Pack>> = Vec::new();
            for s in batch.iter() {
                match &s.copy {
                    Some(CopyAt::Own(name)) => {
                        let copy = rustix::fs::openat(
                            self.saved(),
                            name,
                            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                            Mode::empty(),
                        )?;
                        rustix::fs::fsync(&copy)?;
                    }
                    Some(CopyAt::Packed(pack)) if !synced.iter().any(|p| Arc::ptr_eq(p, pack)) => {
                        rustix::fs::fsync(&pack.fd)?;
                        synced.push(pack);
                    }
                    Some(CopyAt::Packed(_)) | None => {}
                }
            }
            rustix::fs::fsync(self.saved())?;
            rustix::fs::fdatasync(fd)?;
        } else {
            rustix::fs::syncfs(self.saved())?;
            if self.split {
                rustix::fs::fdatasync(fd)?;
            }
        }
        Ok(())
    }

    /// The shared file of the group in progress, made (named after `id`, the journal line of
    /// its first copy) if there is none.
    fn pack(&self, id: &str) -> io::Result<Arc<Pack>> {
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
    fn close_pack(&self) {
        let pack = self.pack.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(p) = pack
            && p.close()
        {
            let _ = rustix::fs::unlinkat(self.saved(), &p.name, AtFlags::empty());
        }
    }

    /// Journals that the reclaims `cancelled` (lines made durable by
    /// [`StateDir::make_durable`]) removed nothing, each with why: `reclaim-failed` lines
    /// naming them, so that `restore` never offers them. Their copies are deleted.
    pub fn cancel(&self, cancelled: Vec<(Staged, String)>) -> io::Result<()> {
        let lines: Vec<Entry> = cancelled
            .iter()
            .map(|(s, why)| cancel_line(self, &s.entry, why))
            .collect();
        let written = self.append_all(&lines);
        drop(cancelled);
        written
    }

    /// The batch in progress is over (every lock of it removed or cancelled).
    pub fn batch_done(&self) {
        let _ = self.mark_run(None, false);
    }

    /// Writes where this run's batch in progress starts in the journal (`None`: no batch in
    /// progress) into its run file, made and locked at the first call.
    fn mark_run(&self, start: Option<u64>, sync: bool) -> io::Result<()> {
        let mut run = self.run_file.lock().unwrap_or_else(|e| e.into_inner());
        if run.is_none() {
            if start.is_none() {
                return Ok(());
            }
            let runs = sub_dir(&self.dir, &self.path, RUNS, true)?.expect("created");
            let fd = rustix::fs::openat(
                &runs,
                journal::run_id(),
                OFlags::RDWR | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::from_raw_mode(0o600),
            )?;
            check_own_file(&fd, &self.path.join(RUNS).join(journal::run_id()))?;
            rustix::fs::flock(&fd, rustix::fs::FlockOperation::NonBlockingLockExclusive)?;
            rustix::fs::fsync(&runs)?;
            *run = Some(fd);
        }
        let fd = run.as_ref().expect("just made");
        let text = match start {
            Some(n) => format!("{n:>20}\n"),
            None => format!("{:>20}\n", "-"),
        };
        rustix::io::pwrite(fd, text.as_bytes(), 0)?;
        if sync {
            rustix::fs::fdatasync(fd)?;
        }
        Ok(())
    }

    /// The journal's entries from byte `start` on (a partial first line is skipped).
    pub(super) fn read_journal_from(&self, start: u64) -> io::Result<Vec<Entry>> {
        let fd = match rustix::fs::openat(
            &self.dir,
            JOURNAL,
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC,
            Mode::empty(),
        ) {
            Ok(fd) => fd,
            Err(Errno::NOENT) => return Ok(Vec::new()),
            Err(e) => return Err(self.refused_file(JOURNAL, e)),
        };
        check_own_file(&fd, &self.path.join(JOURNAL))?;
        rustix::fs::seek(&fd, SeekFrom::Start(start))?;
        let text = read_all(&fd, 1 << 30)?;
        Ok(journal::parse(&text))
    }

    /// The run files in `runs/` of runs that have ended (their lock can be taken), each
    /// with where its batch in progress started (`None`: none was), held locked until
    /// [`DeadRun::finished`].
    pub(super) fn dead_runs(&self) -> io::Result<Vec<DeadRun>> {
        let Some(runs) = sub_dir(&self.dir, &self.path, RUNS, false)? else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        for name in names_in(runs.as_fd())? {
            let Some(run) = name.to_str().filter(|n| !n.starts_with('.')) else {
                continue;
            };
            if run == journal::run_id() {
                continue;
            }
            let Ok(fd) = rustix::fs::openat(
                &runs,
                run,
                OFlags::RDWR | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
                Mode::empty(),
            ) else {
                continue;
            };
            if check_own_file(&fd, &self.path.join(RUNS).join(run)).is_err()
                || rustix::fs::flock(&fd, rustix::fs::FlockOperation::NonBlockingLockExclusive)
                    .is_err()
            {
                continue;
            }
            let text = read_all(&fd, 64).unwrap_or_default();
            let start = std::str::from_utf8(&text)
                .ok()
                .and_then(|t| t.trim().parse().ok());
            out.push(DeadRun {
                run: run.to_string(),
                start,
                runs: runs.try_clone()?,
                _held: fd,
            });
        }
        Ok(out)
    }

    /// The journal's lines, oldest first (an absent journal is empty). A line that does not
    /// parse is skipped.
    pub fn read_journal(&self) -> io::Result<Vec<Entry>> {
        self.read_journal_from(0)
    }

    fn refused_file(&self, name: &str, e: Errno) -> io::Error {
        if e == Errno::LOOP {
            refused(&self.path.join(name), "is a symlink")
        } else {
            io::Error::from(e)
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
    copy: Option<CopyAt>,
    reserved: u64,
    entry: Entry,
}

/// The most entries a lock directory may hold to be removed with them, and the largest each.
pub const MAX_RECORDS: usize = 8;
pub const MAX_RECORD_BYTES: u64 = 4096;

/// The records a lock directory holds (`pid`, `owner`, ...): a few small regular files, read
/// whole through the directory (never following a link, never blocking). Anything else inside
/// (a subdirectory, a link, a large file, many entries) is not a lock's record: such a
/// directory is not removed.
pub(super) fn lock_records(
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
    pub(super) fn entry_mut(&mut self) -> &mut Entry {
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

/// Opens (creating it 0600) the journal in `dir` with `O_NOFOLLOW|O_APPEND` and checks that it
/// is a regular file of ours with one link that no one else may write to.
fn open_journal(dir: &OwnedFd, path: &Path) -> io::Result<OwnedFd> {
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
pub(super) fn read_all(fd: &OwnedFd, cap: u64) -> io::Result<Vec<u8>> {
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
fn names_in(dir: BorrowedFd<'_>) -> io::Result<Vec<OsString>> {
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

/// A run that ended (see [`StateDir::dead_runs`]), its run file held locked.
pub(super) struct DeadRun {
    pub run: String,
    /// Where its batch in progress started in the journal, if one was.
    pub start: Option<u64>,
    runs: OwnedFd,
    _held: OwnedFd,
}

impl DeadRun {
    /// Its batch is finished: its run file goes.
    pub fn finished(self) {
        let _ = rustix::fs::unlinkat(&self.runs, self.run.as_str(), AtFlags::empty());
    }
}

/// The journal lines of `entries` (terminal-safe JSON, each ending with a newline).
fn lines<'a>(entries: impl IntoIterator<Item = &'a Entry>) -> io::Result<Vec<u8>> {
    let mut out = Vec::new();
    for entry in entries {
        let text = serde_json::to_string(entry).map_err(io::Error::other)?;
        out.extend_from_slice(crate::text::terminal_safe_json(&text).as_bytes());
        out.push(b'\n');
    }
    Ok(out)
}

/// Appends `text` (whole lines) to the `O_APPEND` journal `fd`, all of it. A journal that
/// does not end with a newline (a process killed in the middle of its write) gets one first,
/// so that the partial line stays alone and never spoils the next.
fn write_lines(fd: &OwnedFd, text: &[u8]) -> io::Result<()> {
    let size = rustix::fs::fstat(fd)?.st_size as u64;
    let mut last = [b'\n'];
    if size > 0 {
        let _ = rustix::io::pread(fd, &mut last, size - 1);
    }
    let mut rest;
    let owned;
    if last[0] == b'\n' {
        rest = text;
    } else {
        owned = [&b"\n"[..], text].concat();
        rest = &owned[..];
    }
    while !rest.is_empty() {
        match rustix::io::write(fd, rest) {
            Ok(n) => rest = &rest[n..],
            Err(Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// The `reclaim-failed` line cancelling the reclaim line `of`: the lock was not removed.
pub(super) fn cancel_line(state: &StateDir, of: &Entry, why: &str) -> Entry {
    let mut line = Entry::new(
        state.next_id(),
        journal::Event::ReclaimFailed,
        &of.path_buf(),
    );
    line.batch = of.batch;
    line.dialect = of.dialect.clone();
    line.cancels = Some(of.id.clone());
    line.error = Some(why.to_string());
    line
}

/// When a copy was made, from its name (`YYYYMMDDTHHMMSS.mmmZ-...`), in seconds since the
/// epoch.
fn made_at(name: &[u8]) -> Option<i64> {
    let s = std::str::from_utf8(name.get(..15)?).ok()?;
    let dt = jiff::civil::DateTime::strptime("%Y%m%dT%H%M%S", s).ok()?;
    Some(jiff::tz::TimeZone::UTC.to_timestamp(dt).ok()?.as_second())
}

#[allow(clippy::unnecessary_cast)]
fn on_disk(st: &Stat) -> u64 {
    (st.st_blocks as u64).saturating_mul(512)
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn refused(path: &Path, why: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::PermissionDenied,
        format!("refusing the state directory: {} {why}", path.display()),
    )
}

/// Opens the state directory `path` as described in the module docs; `None` if it does not
/// exist and `create` is false.
fn open_dir_checked(path: &Path, create: bool) -> io::Result<Option<OwnedFd>> {
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

fn sub_dir(dir: &OwnedFd, path: &Path, name: &str, create: bool) -> io::Result<Option<OwnedFd>> {
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

fn check_own_file(fd: &OwnedFd, shown: &Path) -> io::Result<()> {
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
pub(in crate::reclaim) mod tests {
    use super::*;
    use std::os::unix::fs::{MetadataExt, PermissionsExt};

    #[test]
    fn copy_names_carry_when_they_were_made() {
        assert_eq!(made_at(b"19700101T000100.000Z-1-0-x.pid.saved"), Some(60));
        assert_eq!(made_at(b"notes.txt"), None);
    }

    #[test]
    fn copy_names_are_safe() {
        assert_eq!(safe_file_name(Path::new("/x/.a b\n.lock")), "_a_b_.lock");
        assert_eq!(safe_file_name(Path::new("/")), "lock");
    }

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

    /// A stale finding for `path` as it is on disk now.
    pub(in crate::reclaim) fn finding(path: &Path) -> Finding {
        let meta = crate::probe::Stat::from(std::fs::symlink_metadata(path).unwrap());
        Finding {
            path: path.to_path_buf(),
            dialect: crate::dialect::DialectId::PIDFILE,
            kind: crate::dialect::EntryKind::of(&meta),
            size: Some(meta.len()),
            modified_ms: Some(crate::probe::mtime_ms(&meta)),
            identity: meta.identity(),
            fs: crate::probe::FsInfo::unknown(),
            judgement: Judgement::stale_for_test("test verdict"),
            content: Vec::new(),
            link_target: None,
            anchor: None,
        }
    }

    fn saved_names(p: &Path) -> Vec<String> {
        std::fs::read_dir(p.join(SAVED))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect()
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

    #[test]
    fn a_state_directory_removed_meanwhile_is_made_again() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("s");
        let a = StateDir::shared(&p, CopyLimits::default()).unwrap();
        assert!(Arc::ptr_eq(
            &a,
            &StateDir::shared(&p, CopyLimits::default()).unwrap()
        ));
        std::fs::remove_dir_all(&p).unwrap();
        let b = StateDir::shared(&p, CopyLimits::default()).unwrap();
        assert!(!Arc::ptr_eq(&a, &b));
        assert!(p.join(JOURNAL).exists());
    }

    #[test]
    fn old_copies_rotate_away() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("s");
        drop(StateDir::open(&p, CopyLimits::default(), true).unwrap());
        let old = p.join(SAVED).join("20000101T000000.000Z-1-0-x.pid.saved");
        let young = p.join(SAVED).join(format!(
            "{}-1-0-y.pid.saved",
            jiff::Timestamp::now().strftime("%Y%m%dT%H%M%S.000Z")
        ));
        let other = p.join(SAVED).join("notes.txt");
        for f in [&old, &young, &other] {
            std::fs::write(f, "x").unwrap();
        }
        let s = StateDir::open(&p, CopyLimits::default(), true)
            .unwrap()
            .unwrap();
        assert!(!old.exists());
        assert!(young.exists() && other.exists());
        assert!(s.used_bytes() > 0);
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
