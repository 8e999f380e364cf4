//! The state directory: where reclaim keeps a copy of every lock it removes and the
//! `journal.jsonl` that maps each copy back to its original path (README: Reclaim and the
//! journal).
//!
//! Its parts, one module each:
//! - `dir`: opening it safely. reclaim runs as root over shared directories, so the state
//!   directory is trusted only once checked (owned by us, written by no one else, reached
//!   without following what others may change), and every file in it is reached through its
//!   verified descriptor. There is no shared fallback: without `XDG_STATE_HOME` and `HOME`,
//!   root uses `/var/lib/locksmith` and any other user gets an error.
//! - `copy`: the copies, bounded by [`CopyLimits`] (a sparse file stays sparse; what the
//!   limits forbid is not copied, and its lock is kept unless the user asked otherwise), staged
//!   until their lock is removed; copies older than `keep_days` are deleted when the directory
//!   is opened.
//! - `pack`: the file the copies of a group share (a copy of more than [`PACKED_MAX`] bytes is
//!   a file of its own).
//! - `runs`: the run files that let the next run finish one killed in the middle of a batch
//!   (see `recover`).
//!
//! This module holds the directory itself, its journal, and the durability of a batch
//! ([`StateDir::make_durable`]): the copies of a batch are written ([`Staged`]), their journal
//! lines appended in one `write`, and one `syncfs(2)` of the state directory's file system
//! puts both on disk; only then are the locks removed. A lock kept after all (its check at the
//! moment of removal failed) gets a `reclaim-failed` line naming the reclaim line it cancels,
//! and its copy is deleted. An error (ENOSPC) removes the copies of the batch, and its locks
//! are kept.

use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use rustix::fs::{AtFlags, Mode, OFlags, SeekFrom};
use rustix::io::Errno;

use super::journal::{self, Entry};

mod copy;
mod dir;
mod pack;
mod runs;

pub(in crate::reclaim) use copy::lock_records;
pub use copy::{MAX_APPARENT_BYTES, NotCopied, Source, StageError, Staged, sha256_hex};
pub(in crate::reclaim) use dir::read_all;
pub use pack::PACKED_MAX;

use copy::{CopyAt, on_disk};
use dir::{check_own_file, names_in, open_dir_checked, open_journal, refused, sub_dir};
use pack::Pack;

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
/// The directory of run files, inside the state directory (see `runs`).
pub const RUNS: &str = "runs";

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

/// The process's open state directories (reclaim of many locks opens it once).
static OPEN: Mutex<Vec<Arc<StateDir>>> = Mutex::new(Vec::new());

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
    pub(in crate::reclaim) fn saved_fd(&self) -> Option<BorrowedFd<'_>> {
        self.saved.as_ref().map(AsFd::as_fd)
    }

    /// `saved/` of a directory opened for writing (always there).
    pub(super) fn saved(&self) -> BorrowedFd<'_> {
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

    /// The journal's entries from byte `start` on (a partial first line is skipped).
    pub(in crate::reclaim) fn read_journal_from(&self, start: u64) -> io::Result<Vec<Entry>> {
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
pub(in crate::reclaim) fn cancel_line(state: &StateDir, of: &Entry, why: &str) -> Entry {
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

#[cfg(test)]
pub(in crate::reclaim) mod tests {
    use super::*;
    use crate::judge::Judgement;
    use crate::scan::Finding;

    #[test]
    fn copy_names_carry_when_they_were_made() {
        assert_eq!(made_at(b"19700101T000100.000Z-1-0-x.pid.saved"), Some(60));
        assert_eq!(made_at(b"notes.txt"), None);
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

    pub(in crate::reclaim) fn saved_names(p: &Path) -> Vec<String> {
        std::fs::read_dir(p.join(SAVED))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect()
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
}
