//! The lock engine of locksmith: take a lock that heals itself after a crash, inspect one,
//! reclaim a stale one. A program that wants self-healing locks depends on this crate alone (no
//! scanner, no terminal UI). The `heal` example takes a lock, is killed with SIGKILL, and a
//! second run takes the lock over.
//!
//! ```no_run
//! use std::time::Duration;
//! use locksmith_engine::Lock;
//!
//! let guard = Lock::new("/tmp/backup.lock")
//!     .timeout(Duration::from_secs(30))
//!     .acquire()?;
//! // ... the critical section ...
//! guard.release()?; // or just drop it
//! # Ok::<(), locksmith_engine::EngineError>(())
//! ```
//!
//! The API, sixteen items at most: [`Lock`] (the builder: [`acquire`](Lock::acquire),
//! [`try_acquire`](Lock::try_acquire), [`inspect`](Lock::inspect),
//! [`reclaim`](Lock::reclaim)), [`LockGuard`] (a held lock), [`EngineError`] /
//! [`ErrorKind`] (typed errors), [`Judgement`] (a [`Verdict`] with its evidence, its
//! [`Owner`], the [`Rule`]s that proved it stale and what keeps it), [`Record`] (the owner
//! record, written and read back), [`StaleWindows`], [`Identity`] (the exact file a reclaim
//! must still find), the two durations [`DEFAULT_POLL_INTERVAL`] and [`NETWORK_HEARTBEAT`],
//! and [`Witness`] / [`LockFile`] for a program that judges existing locks with richer
//! evidence than the engine's own.
//!
//! How a lock is held: the lock file holds an owner [`Record`] (pid, host, boot id, start
//! time, ...). It appears atomically, complete, and already locked: it is written to an
//! anonymous file in the same directory that takes an OFD write lock first, then `link()`ed
//! to the lock name, which fails if the name exists. The holder keeps that OFD lock until it
//! has unlinked the file, so on this kernel "is the OFD lock held?" is the authoritative
//! answer to "is the owner alive?", across PID namespaces and immune to PID reuse. A child
//! given [`LockGuard::for_child`] keeps the lock held, even past the holder, and cannot write
//! the record (a read-only descriptor with an OFD read lock; the holder's lock becomes a read
//! lock too).
//!
//! Invariants:
//! - a reader never sees an empty or half-written record;
//! - a stale file is removed only by a process holding the exclusive right to remove that
//!   very inode (its OFD lock where the file system has them, and the guard file for a record
//!   held without a kernel lock, whatever mode the reclaimer uses), after re-checking that
//!   the path still names it; so two reclaimers can never remove a fresh lock;
//! - release removes the file only if the path still names our inode;
//! - the verdict on an existing lock comes from its [`Witness`]: the engine's own judge (the
//!   kernel lock on the file, then PID + start time + boot id + host, then the heartbeat,
//!   asked of the kernel about this one file and this one owner; an owner it cannot check is
//!   `foreign`, never `stale`) unless the caller gives another ([`Lock::witness`];
//!   [`Lock::inspect`] and [`Lock::reclaim`] judge as [`Lock::acquire`] does). Its time rules
//!   are locksmith's own (`locksmith_sys::time`): a file's ctime, never its mtime, and only
//!   beyond how far the wall clock may have stepped since boot. The locksmith scanner is such a
//!   witness: it judges the record with the rules it judges every lock by, so that the engine
//!   and a scan agree;
//! - a lock is removed only on a `stale` judgement that names the rule that proved it and
//!   that nothing keeps ([`Judgement::kept_by`]).
//!
//! Fallback: on network file systems, on file systems without OFD locks, or when forced
//! ([`Lock::force_fallback`]), no kernel lock is kept; the file is created with `link()`,
//! verified by the link count or, where the file system has no trustworthy link counts
//! (sshfs), by reading our token back by name; liveness comes from the PID / start time /
//! boot id / host evidence, and from a heartbeat (on by default on network file systems).
//! Release and reclaim check the token too, and the holder clears leftovers of killed
//! acquirers at release. A file system without hard links is refused before anything is
//! created.

// Every `unsafe` block says why it is sound (a `// SAFETY:` comment).
#![deny(clippy::undocumented_unsafe_blocks)]
// Every public item is documented.
#![warn(missing_docs)]

// The README's example is compiled as a doc test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctest;

mod create;
mod error;
mod heartbeat;
mod identity;
mod judge;
mod place;
mod record;
mod remove;
mod sweep;
mod verdict;
mod witness;

use std::fs::File;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

// The public surface: at most 16 items (tests/surface.rs counts them), none of them a
// scanner's model of holders, processes or containers.
pub use error::{EngineError, ErrorKind};
pub use identity::Identity;
pub use judge::{LockFile, Witness};
pub use record::Record;
pub use verdict::{Judgement, Owner, Rule, Verdict};

use create::{Fresh, Held};
use heartbeat::Heartbeat;
use judge::Direct;
use place::Place;
use remove::{Existing, Removal};

/// How often a waiting [`Lock::acquire`] looks again, by default.
pub const DEFAULT_POLL_INTERVAL: Duration = Duration::from_millis(10);

/// The heartbeat used on network file systems when none is configured (well inside the
/// default 60 s window).
pub const NETWORK_HEARTBEAT: Duration = Duration::from_secs(10);

/// Rounds of "link, find a stale lock, remove it" in one attempt before giving up for now
/// (each round means another process got in between).
const MAX_ROUNDS: usize = 8;

/// How long evidence lasts when no kernel lock settles whether an owner is alive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StaleWindows {
    /// A heartbeat older than this (or than three of the owner's own intervals, if longer),
    /// with no local evidence of life, is stale. 60 s by default.
    pub heartbeat: Duration,
}

impl Default for StaleWindows {
    fn default() -> Self {
        StaleWindows {
            heartbeat: Duration::from_secs(60),
        }
    }
}

/// How a lock is held.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Mechanism {
    /// An OFD lock where the file system allows it, else the fallback.
    #[default]
    Auto,
    /// Never a kernel lock: `link()` + link count, PID evidence, heartbeat, guard file.
    Fallback,
}

/// A lock to take, inspect or reclaim: the path and the options (builder). It judges an
/// existing lock with the engine's own evidence unless given another witness
/// ([`Lock::witness`]).
#[derive(Debug, Clone)]
pub struct Lock {
    path: PathBuf,
    timeout: Option<Duration>,
    poll_interval: Duration,
    heartbeat: Option<Duration>,
    mechanism: Mechanism,
    windows: StaleWindows,
    witness: Arc<dyn Witness>,
}

impl Lock {
    /// A lock at `path`, waiting forever in [`acquire`](Lock::acquire), no heartbeat (except
    /// on network file systems), OFD locks where available, judged with the engine's own
    /// evidence.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Lock {
            path: path.into(),
            timeout: None,
            poll_interval: DEFAULT_POLL_INTERVAL,
            heartbeat: None,
            mechanism: Mechanism::Auto,
            windows: StaleWindows::default(),
            witness: Arc::new(Direct),
        }
    }

    /// How long [`acquire`](Lock::acquire) waits for a live owner (zero: try once).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Makes [`acquire`](Lock::acquire) wait as long as it takes (the default).
    pub fn wait_forever(mut self) -> Self {
        self.timeout = None;
        self
    }

    /// How often a waiting [`acquire`](Lock::acquire) looks again (at least 1 ms).
    pub fn poll_interval(mut self, every: Duration) -> Self {
        self.poll_interval = every.max(Duration::from_millis(1));
        self
    }

    /// Refreshes a heartbeat every `every` while the lock is held (at least 10 ms).
    pub fn heartbeat(mut self, every: Duration) -> Self {
        self.heartbeat = Some(every.max(Duration::from_millis(10)));
        self
    }

    /// Never keeps a kernel lock (the network-file-system method), even where OFD locks work.
    /// Every process using the same lock path must make the same choice.
    pub fn force_fallback(mut self, force: bool) -> Self {
        self.mechanism = if force {
            Mechanism::Fallback
        } else {
            Mechanism::Auto
        };
        self
    }

    /// The stale windows used to judge an existing lock (heartbeat window).
    pub fn windows(mut self, windows: impl Into<StaleWindows>) -> Self {
        self.windows = windows.into();
        self
    }

    /// Where the judge's evidence on an existing lock comes from (the engine's own by default;
    /// a program that knows more, such as a scanner of the whole machine, gives its own).
    pub fn witness(mut self, witness: Arc<dyn Witness>) -> Self {
        self.witness = witness;
        self
    }

    /// The lock path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Judges the lock at the path now: verdict, evidence and owner (by this lock's [`Witness`],
    /// with its windows). Never modifies anything and never takes a lock.
    pub fn inspect(&self) -> Result<Judgement, EngineError> {
        let place = Place::open(&self.path)?.witnessed(Arc::clone(&self.witness));
        match remove::examine(&place, &self.windows, false)? {
            Existing::Judged(ex) => Ok(ex.judgement),
            Existing::HeldUnreadable(j) => Ok(*j),
            _ => Err(place.err(ErrorKind::NotFound)),
        }
    }

    /// Removes the lock at the path only if it is stale right now (and nothing keeps it).
    /// Returns the judgement that allowed the removal.
    pub fn reclaim(&self) -> Result<Judgement, EngineError> {
        self.reclaim_with(None, |_, _| Ok(()))
    }

    /// Removes the lock at the path only if it is stale right now, following the engine
    /// protocol: the exclusive right on the stale inode is taken (its OFD lock where the file
    /// system has them, and the guard file for a record held without a kernel lock), then the
    /// path is checked to still name that inode and, when `expected` is given, to be that same
    /// file (device, inode, size, mtime). `before_unlink` runs while the right is held and the
    /// identity is verified, with the content and the judgement; if it fails nothing is
    /// removed. A lock that is not stale is an [`ErrorKind::NotStale`] error saying what it is
    /// now; one whose owner is gone but that something keeps, an [`ErrorKind::Kept`] error.
    pub fn reclaim_with(
        &self,
        expected: Option<Identity>,
        before_unlink: impl FnOnce(&[u8], &Judgement) -> std::io::Result<()>,
    ) -> Result<Judgement, EngineError> {
        let place = Place::open(&self.path)?.witnessed(Arc::clone(&self.witness));
        reclaim_place(place, expected, &self.windows, before_unlink)
    }

    /// [`reclaim_with`](Lock::reclaim_with) for the entry `name` of a directory the caller
    /// has already opened and checked (a scanner reaches it from its root without following
    /// symlinks): nothing is resolved through the path, which names the lock in messages only.
    pub fn reclaim_at(
        &self,
        dir: std::os::fd::OwnedFd,
        name: &std::ffi::OsStr,
        expected: Option<Identity>,
        before_unlink: impl FnOnce(&[u8], &Judgement) -> std::io::Result<()>,
    ) -> Result<Judgement, EngineError> {
        let place = Place::at(dir, name, &self.path)?.witnessed(Arc::clone(&self.witness));
        reclaim_place(place, expected, &self.windows, before_unlink)
    }

    /// Takes the lock if it can be taken now: free, or held by a stale owner (the stale file
    /// is reclaimed on the way). Otherwise an [`ErrorKind::Held`] error says who holds it
    /// (or [`ErrorKind::Unrecognised`] when the path holds something that is not a lock
    /// record).
    pub fn try_acquire(&self) -> Result<LockGuard, EngineError> {
        let place = Place::open(&self.path)?.witnessed(Arc::clone(&self.witness));
        match self.attempt(&place)? {
            Attempt::Acquired(g) => Ok(*g),
            Attempt::Busy(j) => Err(self.held(&place, j.map(|j| *j), Duration::ZERO)),
        }
    }

    /// Takes the lock, waiting for a live (or foreign) owner to release it, up to the timeout
    /// if one is set. A stale lock is reclaimed at once, without waiting; something that is
    /// not a lock record fails at once ([`ErrorKind::Unrecognised`]).
    pub fn acquire(&self) -> Result<LockGuard, EngineError> {
        let start = Instant::now();
        let place = Place::open(&self.path)?.witnessed(Arc::clone(&self.witness));
        loop {
            match self.attempt(&place)? {
                Attempt::Acquired(g) => return Ok(*g),
                Attempt::Busy(j) => {
                    let waited = start.elapsed();
                    let left = match self.timeout {
                        Some(t) if waited >= t => {
                            return Err(self.held(&place, j.map(|j| *j), waited));
                        }
                        Some(t) => t - waited,
                        None => Duration::MAX,
                    };
                    std::thread::sleep(jitter(self.poll_interval).min(left));
                }
            }
        }
    }

    fn use_kernel_lock(&self, place: &Place) -> bool {
        self.mechanism == Mechanism::Auto && !place.fs.network
    }

    fn attempt(&self, place: &Place) -> Result<Attempt, EngineError> {
        let use_kernel = self.use_kernel_lock(place);
        let heartbeat = self
            .heartbeat
            .or(place.fs.network.then_some(NETWORK_HEARTBEAT));
        let mut fresh = Fresh::create(place, use_kernel, heartbeat)?;
        let mut last = None;
        for _ in 0..MAX_ROUNDS {
            if fresh.link()? {
                return Ok(Attempt::Acquired(Box::new(LockGuard::new(
                    place.clone(),
                    fresh.into_held()?,
                    heartbeat,
                    self.windows,
                ))));
            }
            let ex = match remove::examine(place, &self.windows, true)? {
                Existing::Gone => continue,
                Existing::HeldFast => return Ok(Attempt::Busy(None)),
                Existing::HeldUnreadable(j) => return Ok(Attempt::Busy(Some(j))),
                Existing::Judged(ex) => ex,
            };
            match ex.judgement.verdict {
                Verdict::Stale if ex.judgement.removable() => {}
                // Not a record we can judge: it will not go away by waiting.
                Verdict::Unknown => {
                    return Err(place.err(ErrorKind::Unrecognised(Box::new(ex.judgement))));
                }
                // Live, foreign, or stale but kept by someone: wait.
                _ => return Ok(Attempt::Busy(Some(Box::new(ex.judgement)))),
            }
            last = Some(ex.judgement.clone());
            match remove::remove_stale(place, *ex, &self.windows, |_, _| Ok(()))? {
                Removal::Removed(_) | Removal::Gone(_) => continue,
                Removal::Contended => return Ok(Attempt::Busy(None)),
                Removal::NotStale(j) => return Ok(Attempt::Busy(Some(Box::new(j)))),
            }
        }
        Ok(Attempt::Busy(last.map(Box::new)))
    }

    /// The "held" error, judging the lock now if the attempt did not.
    fn held(&self, place: &Place, j: Option<Judgement>, waited: Duration) -> EngineError {
        let judgement = j.unwrap_or_else(|| match remove::examine(place, &self.windows, false) {
            Ok(Existing::Judged(ex)) => ex.judgement,
            Ok(Existing::HeldUnreadable(j)) => *j,
            _ => Judgement::new(
                Verdict::Unknown,
                "the lock was changing hands while it was examined",
            ),
        });
        place.err(ErrorKind::Held {
            judgement: Box::new(judgement),
            waited,
        })
    }
}

enum Attempt {
    Acquired(Box<LockGuard>),
    /// Not taken; the judgement of the lock in the way, when one was made.
    Busy(Option<Box<Judgement>>),
}

/// 75% to 125% of `d`, so waiters do not poll in lockstep.
fn jitter(d: Duration) -> Duration {
    let noise = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|t| t.subsec_nanos() % 500)
        .unwrap_or(250);
    d * (750 + noise) / 1000
}

/// A held lock. Dropping it releases the lock; [`release`](LockGuard::release) does the same
/// and reports errors.
#[derive(Debug)]
pub struct LockGuard {
    place: Place,
    /// `None` once released.
    file: Option<Arc<File>>,
    dev: u64,
    ino: u64,
    record: Record,
    heartbeat: Option<Heartbeat>,
    /// For judging leftovers at release.
    windows: StaleWindows,
    released: bool,
}

impl LockGuard {
    fn new(place: Place, held: Held, heartbeat: Option<Duration>, windows: StaleWindows) -> Self {
        let file = Arc::new(held.file);
        let heartbeat = heartbeat.map(|every| Heartbeat::start(Arc::clone(&file), every));
        LockGuard {
            place,
            file: Some(file),
            dev: held.dev,
            ino: held.ino,
            record: held.record,
            heartbeat,
            windows,
            released: false,
        }
    }

    /// The lock path.
    pub fn path(&self) -> &Path {
        &self.place.path
    }

    /// The owner record written into the lock file.
    pub fn record(&self) -> &Record {
        &self.record
    }

    /// The random token of this acquisition.
    pub fn token(&self) -> &str {
        self.record.token()
    }

    /// Whether an OFD lock is held on the file (else the fallback method is in use).
    pub fn kernel_lock(&self) -> bool {
        self.record.kernel_lock
    }

    /// A descriptor for a child process that runs while the lock is held (clear its
    /// close-on-exec flag, or move it to the number the child expects): for as long as any
    /// process keeps it open, the lock stays held, even if this guard's process dies first.
    ///
    /// With a kernel lock (every local file system) it is read-only, so the child can read the
    /// record but never change it (not even after it gives up its privileges: a descriptor
    /// keeps the access it was opened with). It is a new open of the lock file, checked to be
    /// ours, carrying an OFD read lock; the guard's own lock becomes a read lock first (an OFD
    /// write lock would exclude the child's, and one cannot be taken on a read-only
    /// descriptor), atomically, so the file is locked throughout. Either read lock keeps the
    /// lock `live` and keeps a reclaimer (which needs the write lock) away; once every process
    /// holding one is gone, the kernel has released them and the lock is proven stale.
    ///
    /// Without a kernel lock (the fallback: network file systems) there is no lock a
    /// read-only descriptor could keep: what shows on this host that the holder lives on is a
    /// process holding the lock file open for writing, so the child gets a duplicate of the
    /// guard's writable descriptor, and can write the record.
    pub fn for_child(&self) -> Result<OwnedFd, EngineError> {
        use std::os::unix::fs::MetadataExt;
        let file = self
            .file
            .as_deref()
            .expect("the descriptor is only closed by release, which consumes the guard");
        if !self.record.kernel_lock {
            return file
                .as_fd()
                .try_clone_to_owned()
                .map_err(|e| self.place.io_err("duplicate the lock's descriptor", e));
        }
        let reader = match self.place.open_existing(false)? {
            Some((f, meta)) if (meta.dev(), meta.ino()) == (self.dev, self.ino) => f,
            _ => return Err(self.place.err(ErrorKind::Lost)),
        };
        let lock = |fd: BorrowedFd<'_>| match locksmith_sys::locks::ofd_try_read_lock(fd) {
            Ok(true) => Ok(()),
            Ok(false) => Err(self.place.err(ErrorKind::Lost)),
            Err(e) => Err(self
                .place
                .io_err("share the lock with a read lock (F_OFD_SETLK)", e)),
        };
        lock(file.as_fd())?;
        lock(reader.as_fd())?;
        Ok(OwnedFd::from(reader))
    }

    /// Whether the lock path still names our lock file (someone may have removed it by hand).
    /// Without a kernel lock, the record at the path must also carry our token: on a network
    /// file system an inode number may name a path rather than a file (sshfs).
    pub fn still_ours(&self) -> Result<bool, EngineError> {
        Ok(self.place.identity()? == Some((self.dev, self.ino))
            && (self.record.kernel_lock || create::names_token(&self.place, self.record.token())?))
    }

    /// Releases the lock: removes the lock file if the path still names ours (else reports
    /// [`ErrorKind::Lost`] and removes nothing), then closes it, which drops the kernel lock.
    pub fn release(mut self) -> Result<(), EngineError> {
        self.release_inner()
    }

    fn release_inner(&mut self) -> Result<(), EngineError> {
        if std::mem::replace(&mut self.released, true) {
            return Ok(());
        }
        drop(self.heartbeat.take());
        let result = self.remove_file();
        if !self.record.kernel_lock {
            // Temporary files and a reclaim guard left by processes killed while they were
            // acquiring or reclaiming this lock. The listing of the directory also says
            // whether there is a guard; a directory we may not list is asked by name.
            if sweep::temp_files(&self.place) != Some(false) {
                remove::clear_abandoned_guard(&self.place, &self.windows);
            }
        }
        result
    }

    fn remove_file(&mut self) -> Result<(), EngineError> {
        // With a kernel lock, we still hold it here, so nobody else can be removing this
        // inode: if the path names it now, it names it until we unlink it. Without one, no
        // check can be made atomic with the unlink; a reclaimer only removes a lock it judged
        // stale, and ours is not.
        if !self.still_ours()? {
            return Err(self.place.err(ErrorKind::Lost));
        }
        if !self.record.kernel_lock {
            // A network file system keeps a file removed while open under a hidden name
            // until it is closed: close first (no kernel lock rides on this descriptor).
            drop(self.file.take());
        }
        match self.place.unlink() {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                Err(self.place.err(ErrorKind::Lost))
            }
            Err(e) => Err(self.place.io_err("remove the lock file", e)),
        }
    }
}

impl AsFd for LockGuard {
    /// The descriptor of the lock file, which carries the OFD lock, open for writing: a child
    /// that inherits it (without close-on-exec) keeps the lock held, and can write the record.
    /// A child gets [`LockGuard::for_child`] instead, which cannot.
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.file
            .as_deref()
            .expect("the descriptor is only closed by release, which consumes the guard")
            .as_fd()
    }
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        let _ = self.release_inner();
    }
}

fn reclaim_place(
    place: Place,
    expected: Option<Identity>,
    windows: &StaleWindows,
    before_unlink: impl FnOnce(&[u8], &Judgement) -> std::io::Result<()>,
) -> Result<Judgement, EngineError> {
    let ex = match remove::examine(&place, windows, false)? {
        Existing::Judged(ex) => ex,
        Existing::HeldUnreadable(j) => return Err(place.err(ErrorKind::NotStale(j))),
        _ => return Err(place.err(ErrorKind::NotFound)),
    };
    if let Some(want) = expected
        && Identity::of(&ex.meta) != want
    {
        return Err(place.err(ErrorKind::Changed(
            "it is not the file that was judged: it was replaced or modified since".into(),
        )));
    }
    if !ex.judgement.removable() {
        return Err(place.err(refusal(ex.judgement)));
    }
    match remove::remove_stale(&place, *ex, windows, before_unlink)? {
        Removal::Removed(j) => Ok(j),
        Removal::Gone(why) => Err(place.err(ErrorKind::Changed(why.into()))),
        Removal::Contended => Err(place.err(ErrorKind::Changed(
            "another process is reclaiming it at this moment".into(),
        ))),
        Removal::NotStale(j) => Err(place.err(refusal(j))),
    }
}

/// Why a lock that may not be removed is refused: kept by someone though its owner is gone,
/// or not stale.
fn refusal(j: Judgement) -> ErrorKind {
    if j.verdict == Verdict::Stale && j.kept_by.is_some() {
        ErrorKind::Kept(Box::new(j))
    } else {
        ErrorKind::NotStale(Box::new(j))
    }
}
