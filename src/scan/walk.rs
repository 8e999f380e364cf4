//! The walker: reads the roots' directories on several threads and hands every entry that may
//! be a lock to [`super::judge`].
//!
//! Invariants:
//! - symlinks are never followed (directories are opened with `O_NOFOLLOW|O_DIRECTORY`; an
//!   entry is descended into only when `getdents` says it is a directory);
//! - nothing is opened but directories and regular files that may be locks (see
//!   [`crate::dialect::read_prefix`]); FIFOs, sockets and devices are never opened;
//! - no recursion: pending directories are a shared stack, so a tree thousands of levels deep
//!   costs memory, not call stack (what lies beyond `PATH_MAX` is reported as an error);
//! - an unreadable directory is a [`ScanEvent::Error`], and the walk goes on;
//! - pseudo file systems (proc, sysfs, ...) are skipped: a directory that is a mount point (from
//!   `/proc/self/mountinfo`, read once) is `statfs`ed, and no other directory is;
//! - names are matched against every dialect in one pass ([`Matcher`]); a path is built only
//!   for a directory to descend into or a name that may match; a file with any name is a
//!   candidate when a kernel lock may be held on its inode (`d_ino` against `/proc/locks`,
//!   confirmed with one `lstat`; on the rare file systems whose `d_ino` differs from `st_ino`,
//!   such as some overlayfs setups, only name-matched locks are found).
//!
//! A subdirectory is opened relative to its parent's descriptor (kept open while its
//! subdirectories wait, for the first few dozen levels only, so the descriptor limit is never
//! approached), which spares the kernel a walk of the whole path for each directory; deeper
//! ones are opened from the root's descriptor one component at a time, never following a
//! symlink ([`anchor::open_beneath`]). Entries are examined through their directory's
//! descriptor, never through their path string, and each finding carries the (device, inode)
//! of every directory from its root down ([`Anchor`]), so a directory swapped during the walk
//! can neither lead the walker out of the tree nor go unnoticed later.
//!
//! Our own state directory (`$XDG_STATE_HOME/locksmith`, default `~/.local/state/locksmith`:
//! the copies of reclaimed locks and the journal) is never walked: a saved copy is not a lock.
//!
//! Directories are taken from a shared LIFO stack by `available_parallelism()` threads, so
//! work spreads over subtrees of any shape and the stack stays small (depth-first). The walk
//! does not wait for evidence still being read (the kernel's lock table, the namespaces, the
//! census, the descriptors, read on threads of their own from the start of a scan): what needs
//! it waits instead, within a budget, and is judged once it is read ([`Walk::worker`]).
//!
//! On a mount that may hang (by the mount table), every call the walk makes is made through
//! [`reach`] (`hanging.rs`): a bounded call of that mount; one that does not answer is
//! reported once, and nothing more on that mount is asked.

use std::cell::Cell;
use std::collections::HashSet;
use std::ffi::{OsStr, OsString};
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Instant;

use super::anchor::{self, Anchor, DirNode};
use super::config::{Config, Root};
use super::judge::{self, Mode};
use super::matcher::Matcher;
use super::{ScanError, ScanEvent};
use crate::probe::Snapshot;
use crate::probe::fs::{self, Mount, MountTable};
use crate::probe::reach;

/// How often progress is reported, at most.
const PROGRESS_MS: u64 = 50;
/// Within one huge directory, counters are published (and cancellation checked) this often.
const BATCH: u64 = 4096;

/// One directory to read.
struct Job {
    path: PathBuf,
    /// The open parent directory, when kept: `path` is then opened relative to it (one path
    /// component to resolve instead of all of them).
    parent: Option<Arc<sys::DirHandle>>,
    /// The open root directory (`None` for the root itself): `path` is opened beneath it when
    /// the parent was not kept.
    root_dir: Option<Arc<sys::DirHandle>>,
    /// The parent directory's place in the chain (`None` for the root).
    node: Option<Arc<DirNode>>,
    /// Depth of `path` below its root (the root is 0).
    depth: usize,
    root: usize,
    /// The mount `path` is on, when calls on it may wait on a server: they are then made
    /// through its helpers ([`fs::bounded`]).
    mount: Option<Arc<Mount>>,
    /// The same for its parent directory (where `path` is looked up when it is opened).
    parent_mount: Option<Arc<Mount>>,
    /// The directory itself, already open (a root opened before the walk).
    open: Option<sys::DirHandle>,
}

#[derive(Default)]
struct Queue {
    jobs: Vec<Job>,
    /// Threads reading a directory right now (they may push more jobs).
    active: usize,
    /// Candidates waiting for the evidence, by directory (each holds its directory open).
    deferred: Vec<Deferred>,
    /// How many candidates `deferred` holds.
    deferred_items: usize,
    /// Directories whose entries wait for the kernel's lock table.
    late: Vec<LateInodes>,
    /// How many entries `late` holds.
    late_entries: usize,
    /// Threads waiting on `ready` for work (only then is it worth waking them).
    waiting: usize,
}

/// The candidates of one directory found while the evidence they are judged against was still
/// being read (see [`Walk::worker`]): judged once it is, or once no directory is left to read.
/// The directory stays open meanwhile.
struct Deferred {
    dir: Arc<sys::DirHandle>,
    anchor: Anchor,
    /// Depth of the candidates below their root.
    depth: usize,
    /// Each candidate's name, path, and the dialects its name matched.
    items: Vec<(OsString, PathBuf, Vec<usize>)>,
}

/// A directory read before the kernel's lock table was: the inode of each entry not already a
/// candidate by its name, checked against the table once it is read. An entry a kernel lock
/// may be held on is judged then, its directory reached again through its anchor (checking
/// every directory on the way, as when a finding is judged again); nothing stays open
/// meanwhile.
struct LateInodes {
    path: PathBuf,
    anchor: Anchor,
    /// Depth of the entries below their root.
    depth: usize,
    /// Whether `path` is its canonical form (see [`Here::canonical`]).
    canonical: bool,
    /// The entries' names, end to end.
    names: Vec<u8>,
    /// Each entry's inode and where its name ends in `names`.
    entries: Vec<(u64, u32)>,
}

impl LateInodes {
    fn push(&mut self, ino: u64, name: &OsStr) {
        use std::os::unix::ffi::OsStrExt;
        self.names.extend_from_slice(name.as_bytes());
        self.entries.push((ino, self.names.len() as u32));
    }
}

/// What reading one directory leaves to do: its subdirectories, and what waits for evidence.
#[derive(Default)]
struct Found {
    jobs: Vec<Job>,
    deferred: Option<Deferred>,
    late: Option<LateInodes>,
}

/// One thing for a walker thread to do.
enum Work {
    Dir(Job),
    Judge(Deferred),
    Late(LateInodes),
}

/// Candidates waiting for evidence, at most (beyond, the walk judges them as it finds them,
/// waiting for the evidence): their names and paths are kept meanwhile.
const DEFERRED_MAX: usize = 8192;
/// Entries whose inode waits for the kernel's lock table, at most (beyond, the walk waits for
/// the table): some 20 bytes each.
const LATE_MAX: usize = 100_000;

/// How much may wait for evidence still being read.
struct Budget {
    /// Directories kept open for their waiting candidates.
    dirs: usize,
    /// Candidates.
    items: usize,
    /// Entries whose inode waits for the kernel's lock table.
    late: usize,
}

/// What the walk found, in numbers.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Counts {
    pub entries: u64,
    pub locks: u64,
    pub errors: u64,
    pub roots_read: usize,
}

impl std::ops::Add for Counts {
    type Output = Counts;

    /// Two walks' counts, together.
    fn add(self, o: Counts) -> Counts {
        Counts {
            entries: self.entries + o.entries,
            locks: self.locks + o.locks,
            errors: self.errors + o.errors,
            roots_read: self.roots_read + o.roots_read,
        }
    }
}

pub(crate) struct Walk<'a> {
    pub config: &'a Config,
    pub matcher: &'a Matcher,
    pub snap: &'a Snapshot,
    pub cancel: &'a AtomicBool,
    pub sink: &'a (dyn Fn(ScanEvent) + Sync),
    pub roots: &'a [Root],
    /// Paths of all roots: a root inside another is walked on its own terms.
    root_paths: HashSet<PathBuf>,
    /// The roots' paths, shared by the anchors of their findings.
    root_arcs: Vec<Arc<Path>>,
    /// The mounts, read once (from `/proc/self/mountinfo`, touching none of them).
    mounts: MountTable,
    /// Mounts that did not answer, already reported in this walk.
    dead: Mutex<HashSet<PathBuf>>,
    /// Our state directory (device, inode, canonical path), never walked.
    state_dir: Option<(u64, u64, PathBuf)>,
    queue: Mutex<Queue>,
    ready: Condvar,
    entries: AtomicU64,
    locks: AtomicU64,
    errors: AtomicU64,
    roots_read: Vec<AtomicBool>,
    /// Roots whose path is their canonical form (no symlink, `.` or `..` in it): every
    /// directory walked below them is then its own canonical form too.
    roots_canonical: Vec<AtomicBool>,
    start: Instant,
    last_progress_ms: AtomicU64,
    threads: usize,
    /// Directories shallower than this keep their descriptor open for their subdirectories
    /// (bounded, so that a very deep tree cannot exhaust the descriptor limit).
    keep_fd_depth: usize,
    /// How much may wait for evidence (see [`Walk::worker`]).
    budget: Budget,
    /// Whether all the evidence, and the kernel's lock table, have been seen read (once seen,
    /// they stay read).
    evidence_ready: AtomicBool,
    kernel_ready: AtomicBool,
    /// Roots already open (`O_PATH`), by index: a container's places, which
    /// `scan::containers` reached from the container's root through no symlink.
    open_roots: Mutex<Vec<Option<OwnedFd>>>,
    /// Told the (device, inode) of every root probed, once every root is started.
    on_started: Option<&'a RootsStarted<'a>>,
    /// The (device, inode) of the roots probed so far (what each path names).
    started_ids: Mutex<HashSet<(u64, u64)>>,
}

/// What is told the (device, inode) of every root a walk has started.
pub type RootsStarted<'a> = dyn Fn(HashSet<(u64, u64)>) + Sync + 'a;

impl<'a> Walk<'a> {
    pub fn new(
        config: &'a Config,
        matcher: &'a Matcher,
        snap: &'a Snapshot,
        cancel: &'a AtomicBool,
        sink: &'a (dyn Fn(ScanEvent) + Sync),
        roots: &'a [Root],
    ) -> Self {
        let threads = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
            .clamp(1, 8);
        let mounts = mounts(snap, roots);
        Walk {
            config,
            matcher,
            snap,
            cancel,
            sink,
            roots,
            root_paths: roots.iter().map(|r| r.path.clone()).collect(),
            root_arcs: roots.iter().map(|r| Arc::from(r.path.as_path())).collect(),
            state_dir: config.never_walk.as_deref().and_then(state_dir),
            mounts,
            dead: Mutex::default(),
            queue: Mutex::default(),
            ready: Condvar::new(),
            entries: AtomicU64::new(0),
            locks: AtomicU64::new(0),
            errors: AtomicU64::new(0),
            roots_read: roots.iter().map(|_| AtomicBool::new(false)).collect(),
            roots_canonical: roots.iter().map(|_| AtomicBool::new(false)).collect(),
            start: Instant::now(),
            last_progress_ms: AtomicU64::new(0),
            threads,
            keep_fd_depth: (sys::fd_limit() / 4 / threads as u64).min(64) as usize,
            budget: Budget {
                dirs: (sys::fd_limit() / 8).min(1024) as usize,
                items: DEFERRED_MAX,
                late: LATE_MAX,
            },
            evidence_ready: AtomicBool::new(false),
            kernel_ready: AtomicBool::new(false),
            open_roots: Mutex::default(),
            on_started: None,
            started_ids: Mutex::default(),
        }
    }

    /// The first roots' directories, already open (`O_PATH`), in the roots' order: each is
    /// walked from its descriptor where its way is known to be local (see
    /// [`Walk::start_root`]), its path is not resolved again.
    pub fn with_open_roots(self, dirs: Vec<OwnedFd>) -> Self {
        *self.open_roots.lock().unwrap() = dirs.into_iter().map(Some).collect();
        self
    }

    /// `f` is told the (device, inode) of every root (what its path names, as probed) once
    /// every root is started, before the walk goes on; always, even when cancelled.
    pub fn on_roots_started(mut self, f: &'a RootsStarted<'a>) -> Self {
        self.on_started = Some(f);
        self
    }

    /// Walks every root to the end (or until cancelled).
    pub fn run(&self) -> Counts {
        for (i, root) in self.roots.iter().enumerate() {
            if self.cancelled() {
                break;
            }
            self.start_root(i, root);
        }
        if let Some(f) = self.on_started {
            f(std::mem::take(&mut *self.started_ids.lock().unwrap()));
        }
        let has_jobs = !self.queue.lock().unwrap().jobs.is_empty();
        if has_jobs {
            std::thread::scope(|s| {
                for _ in 1..self.threads {
                    s.spawn(|| self.worker());
                }
                self.worker();
            });
        }
        self.publish_progress();
        Counts {
            entries: self.entries.load(Ordering::Relaxed),
            locks: self.locks.load(Ordering::Relaxed),
            errors: self.errors.load(Ordering::Relaxed),
            roots_read: self
                .roots_read
                .iter()
                .filter(|r| r.load(Ordering::Relaxed))
                .count(),
        }
    }

    fn cancelled(&self) -> bool {
        self.cancel.load(Ordering::Relaxed)
    }

    /// A directory root goes on the stack; a root that is a file (or a symlink, never
    /// followed) is examined at once, in lenient mode. The root's status and real path are
    /// found without waiting on a mount that does not answer ([`reach::probe`]).
    fn start_root(&self, i: usize, root: &Root) {
        // A container's place is reached through no symlink (see `scan::containers`): where
        // every mount on the way is local, nothing on the way may hang.
        let local_place = self.local_container_place(&root.path);
        let opened = self
            .open_roots
            .lock()
            .unwrap()
            .get_mut(i)
            .and_then(Option::take);
        if local_place && let Some(dir) = opened {
            // A container's place, a directory reached from its root through no symlink and,
            // here, only local mounts: walked from that descriptor. It is none of our state
            // directory (a place on a directory of ours is left to the host's roots).
            let pseudo = fs::pseudo_of(dir.as_fd());
            self.queue_root_dir(i, root, pseudo, None, Some(dir));
            return;
        }
        let lexical = self.mounts.of_path(&root.path).cloned();
        let probed = if local_place {
            Ok(reach::probe_in_place(&root.path))
        } else {
            // Resolved here through local mounts, or asked on the mount that may hang it
            // leads onto; a root that cannot be reached is asked again through a helper of
            // its own, for the error to report.
            match reach::probe(&root.path) {
                Ok(Some(a)) => Ok(a),
                Ok(None) => reach::probe_path(&root.path, lexical.as_deref()),
                Err(e) => Err(e),
            }
        };
        let (mode, real) = match probed {
            Ok(a) => match a.ok() {
                Ok(a) => {
                    if a.target_mode != 0 {
                        self.started_ids.lock().unwrap().insert((a.dev, a.ino));
                    }
                    (a.mode, a.real)
                }
                Err(e) => {
                    self.error(
                        ScanError::io(&root.path, e)
                            .during("cannot scan")
                            .at_depth(0),
                    );
                    return;
                }
            },
            Err(e) => {
                let why = format!("cannot scan: {e}");
                self.error(ScanError::other(&root.path, why).at_depth(0));
                return;
            }
        };
        if real.as_deref() == Some(root.path.as_path()) {
            self.roots_canonical[i].store(true, Ordering::Relaxed);
        }
        if self.in_state_dir(real.as_deref()) {
            // Read, and nothing in it is a lock: our own saved copies and journal.
            self.roots_read[i].store(true, Ordering::Relaxed);
            return;
        }
        // The mount the root really is on (what its path names, where it cannot be resolved).
        // A container's place is on the mounts its PID 1 lists (in our table below
        // `/proc/PID/root`): one whose way has a mount that may hang, or whose container's
        // mounts could not be read, is taken as all on one mount that may hang.
        let mount = if local_place {
            None
        } else if in_container(&root.path) {
            Some(Arc::new(Mount::unknown(&root.path, "container")))
        } else {
            real.as_deref()
                .and_then(|r| self.mounts.of_path(r))
                .or(lexical.as_ref())
                .filter(|m| m.may_hang())
                .cloned()
        };
        if rustix::fs::FileType::from_raw_mode(mode) == rustix::fs::FileType::Directory {
            let pseudo = mount
                .is_none()
                .then(|| sys::pseudo_fs(&root.path))
                .flatten();
            self.queue_root_dir(i, root, pseudo, mount, None);
            return;
        }
        self.roots_read[i].store(true, Ordering::Relaxed);
        self.entries.fetch_add(1, Ordering::Relaxed);
        if let Some(m) = &mount {
            if let Err(e) = reach::touch_path(&root.path, Some(m)) {
                self.not_answering(m, e);
                return;
            }
        }
        let hits = self.matcher.hits(&root.path);
        self.report(
            judge::examine(&root.path, &hits, Mode::Lenient, self.snap, self.config),
            0,
        );
    }

    /// Queues a directory root to be walked, unless it is on a pseudo file system (`pseudo`,
    /// as the caller asked) or is to be read no deeper than itself. `opened`: its directory,
    /// already open (`O_PATH`), which is reopened to be read instead of its path.
    fn queue_root_dir(
        &self,
        i: usize,
        root: &Root,
        pseudo: Option<fs::FsKind>,
        mount: Option<Arc<Mount>>,
        opened: Option<OwnedFd>,
    ) {
        if let Some(kind) = pseudo {
            let why = format!("is on a pseudo file system ({kind}): not scanned");
            self.error(ScanError::other(&root.path, why).at_depth(0));
            return;
        }
        if root.max_depth == Some(0) {
            self.roots_read[i].store(true, Ordering::Relaxed);
            return;
        }
        let open = match opened.map(|d| sys::reopen_dir(d.as_fd())).transpose() {
            Ok(d) => d,
            Err(e) => {
                self.error(job_error(&root.path, 0, e));
                return;
            }
        };
        self.queue.lock().unwrap().jobs.push(Job {
            path: root.path.clone(),
            parent: None,
            root_dir: None,
            node: None,
            depth: 0,
            root: i,
            parent_mount: mount.clone(),
            mount,
            open,
        });
    }

    /// Takes work until none is left. Judging a candidate asks for evidence that may still be
    /// being read on threads of the snapshot's own ([`crate::probe::snapshot::Ahead`]): the
    /// kernel's lock table (after a quiet while, reading it waits some 10 ms for the kernel),
    /// the namespaces, the census, the descriptors. Rather than wait, a thread goes on reading
    /// directories: candidates found meanwhile wait in [`Deferred`], and, until the lock table
    /// is read, the inodes of the other entries in [`LateInodes`]. They are taken first once
    /// what they wait for is read, and in any case once no directory is left to read. The
    /// verdicts are the same; only their order differs.
    fn worker(&self) {
        let mut buf: Vec<u8> = Vec::with_capacity(32 * 1024);
        let mut found = Found::default();
        loop {
            let work = {
                let mut q = self.queue.lock().unwrap();
                loop {
                    if self.cancelled() {
                        q.jobs.clear();
                        q.deferred.clear();
                        q.late.clear();
                        (q.deferred_items, q.late_entries) = (0, 0);
                    }
                    // No directory left to read, nor being read (one being read may add some).
                    let idle = q.jobs.is_empty() && q.active == 0;
                    if !q.late.is_empty()
                        && (idle || self.kernel_ready())
                        && let Some(l) = q.late.pop()
                    {
                        q.late_entries -= l.entries.len();
                        break Some(Work::Late(l));
                    }
                    if !q.deferred.is_empty()
                        && (idle || self.evidence_ready())
                        && let Some(d) = q.deferred.pop()
                    {
                        q.deferred_items -= d.items.len();
                        break Some(Work::Judge(d));
                    }
                    if let Some(job) = q.jobs.pop() {
                        q.active += 1;
                        break Some(Work::Dir(job));
                    }
                    if q.active == 0 {
                        break None;
                    }
                    q.waiting += 1;
                    q = self.ready.wait(q).unwrap();
                    q.waiting -= 1;
                }
            };
            let job = match work {
                None => {
                    self.ready.notify_all();
                    return;
                }
                Some(Work::Judge(d)) => {
                    self.judge_deferred(d);
                    continue;
                }
                Some(Work::Late(l)) => {
                    self.judge_late(l);
                    continue;
                }
                Some(Work::Dir(job)) => job,
            };
            self.read_dir(job, &mut buf, &mut found);
            let mut q = self.queue.lock().unwrap();
            q.active -= 1;
            let pushed = !found.jobs.is_empty() || found.deferred.is_some() || found.late.is_some();
            q.jobs.append(&mut found.jobs);
            if let Some(d) = found.deferred.take() {
                q.deferred_items += d.items.len();
                q.deferred.push(d);
            }
            if let Some(l) = found.late.take() {
                q.late_entries += l.entries.len();
                q.late.push(l);
            }
            let finished = q.active == 0 && q.jobs.is_empty();
            let waiting = !q.deferred.is_empty() || !q.late.is_empty();
            let idle_threads = q.waiting > 0;
            drop(q);
            if (pushed || finished) && idle_threads {
                self.ready.notify_all();
            }
            if finished && waiting {
                // Every directory is read: what is left waits for evidence.
                self.publish_progress();
            } else {
                self.progress();
            }
        }
    }

    /// Whether the snapshot's evidence is all read (asked without waiting).
    fn evidence_ready(&self) -> bool {
        self.evidence_ready.load(Ordering::Relaxed) || {
            let ready = !self.snap.evidence_pending();
            self.evidence_ready.store(ready, Ordering::Relaxed);
            ready
        }
    }

    /// Whether the kernel's lock table is read (asked without waiting).
    fn kernel_ready(&self) -> bool {
        self.kernel_ready.load(Ordering::Relaxed) || {
            let ready = !self.snap.kernel_locks_pending();
            self.kernel_ready.store(ready, Ordering::Relaxed);
            ready
        }
    }

    /// Judges the candidates of one directory that waited for the evidence.
    fn judge_deferred(&self, d: Deferred) {
        for (name, path, hits) in &d.items {
            if self.cancelled() {
                return;
            }
            self.judge_in(d.dir.as_fd(), name, path, hits, &d.anchor, d.depth);
        }
    }

    /// Judges the entry `name` (at `path`, `depth` below its root) of the open directory `dir`,
    /// found by the walk, and reports what it is.
    fn judge_in(
        &self,
        dir: std::os::fd::BorrowedFd<'_>,
        name: &OsStr,
        path: &Path,
        hits: &[usize],
        anchor: &Anchor,
        depth: usize,
    ) {
        let found = judge::examine_at(
            dir,
            name,
            path,
            hits,
            Mode::Walk,
            self.snap,
            self.config,
            Some(anchor),
        );
        self.report(found, depth);
    }

    /// Judges the entries of one directory, read before the kernel's lock table was, that a
    /// kernel lock may be held on, their directory reached again through its anchor.
    fn judge_late(&self, l: LateInodes) {
        use std::os::unix::ffi::OsStrExt;
        let kernel = self.snap.kernel_locks();
        if kernel.is_empty() {
            return;
        }
        let mut start = 0;
        for &(ino, end) in &l.entries {
            let name = OsStr::from_bytes(&l.names[start..end as usize]);
            start = end as usize;
            if !kernel.may_lock_inode(ino) || self.cancelled() {
                continue;
            }
            let path = l.path.join(name);
            if self.matcher.has_excludes() && self.matcher.excluded(&path) {
                continue;
            }
            if l.canonical {
                self.snap.canonical_dirs().walked(&l.path);
            }
            match l.anchor.open_parent(&path) {
                Ok((dir, name)) => {
                    self.judge_in(dir.as_fd(), &name, &path, &[], &l.anchor, l.depth)
                }
                // Gone since it was read, as a file gone before it is judged.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => self.error(
                    ScanError::io(&path, e)
                        .during("cannot reach again")
                        .at_depth(l.depth),
                ),
            }
        }
    }

    /// Reads one directory: examines the entries that may be locks, collects the
    /// subdirectories to walk into `out`. On a mount that may hang, every call on the directory
    /// goes through the mount's helpers, and a mount that does not answer is reported once and
    /// left alone.
    fn read_dir(&self, mut job: Job, buf: &mut Vec<u8>, out: &mut Found) {
        let root = &self.roots[job.root];
        for m in [&job.mount, &job.parent_mount].into_iter().flatten() {
            if let Some(e) = reach::not_answering(m) {
                self.not_answering(m, e);
                return;
            }
        }
        let open = job.open.take();
        let opened = match job.mount.as_ref().or(job.parent_mount.as_ref()) {
            None => Ok(match open {
                Some(d) => Ok(d),
                None => open_job(
                    job.parent.as_deref(),
                    job.root_dir.as_deref(),
                    &job.path,
                    &root.path,
                ),
            }
            .and_then(|d| {
                let id = anchor::dir_id(d.as_fd())?;
                Ok((d, id))
            })),
            Some(m) => self.open_job_bounded(m, &job, &root.path),
        };
        let (dir, id) = match opened {
            Ok(Ok(d)) => d,
            Ok(Err(e)) => {
                self.error(job_error(&job.path, job.depth, e));
                return;
            }
            Err((m, e)) => {
                self.not_answering(&m, e);
                return;
            }
        };
        drop(job.parent);
        let dir = Arc::new(dir);
        let root_dir = job.root_dir.unwrap_or_else(|| dir.clone());
        let node = Arc::new(DirNode {
            id,
            parent: job.node,
        });
        // What waits for evidence still being read: never on a mount that may hang (a
        // candidate there is judged when its mount has just answered for it), and only as much
        // as the budgets allow.
        let (defer_room, late_room) = match (
            job.mount.is_some(),
            !self.evidence_ready(),
            !self.kernel_ready(),
        ) {
            (false, defer, late) if defer || late => {
                let q = self.queue.lock().unwrap();
                let dirs_left = q.deferred.len() < self.budget.dirs;
                (
                    if defer && dirs_left {
                        self.budget.items.saturating_sub(q.deferred_items)
                    } else {
                        0
                    },
                    if late {
                        self.budget.late.saturating_sub(q.late_entries)
                    } else {
                        0
                    },
                )
            }
            _ => (0, 0),
        };
        let canonical = self.roots_canonical[job.root].load(Ordering::Relaxed);
        if late_room > 0 {
            out.late = Some(LateInodes {
                path: job.path.clone(),
                anchor: Anchor {
                    root: self.root_arcs[job.root].clone(),
                    dir: node.clone(),
                },
                depth: job.depth + 1,
                canonical,
                names: Vec::new(),
                entries: Vec::new(),
            });
        }
        let at = Here {
            path: &job.path,
            depth: job.depth,
            root: job.root,
            anchor: Anchor {
                root: self.root_arcs[job.root].clone(),
                dir: node.clone(),
            },
            dir: &dir,
            root_dir: &root_dir,
            node: &node,
            mount: job.mount.as_ref(),
            descend_ok: root.max_depth.is_none_or(|m| job.depth + 1 < m),
            canonical,
            recorded: Cell::new(false),
            defer_room,
            late_room,
        };
        let mut count = 0u64;
        let result = match &job.mount {
            None => sys::read_entries(&dir, buf, |name, dtype, ino| {
                count += 1;
                if count % BATCH == 0 {
                    self.entries.fetch_add(BATCH, Ordering::Relaxed);
                    self.progress();
                    if self.cancelled() {
                        return false;
                    }
                }
                self.entry(&at, name, dtype, ino, out)
            }),
            Some(m) => self.read_entries_bounded(m, &dir, buf, |name, dtype, ino| {
                count += 1;
                if count % BATCH == 0 {
                    self.entries.fetch_add(BATCH, Ordering::Relaxed);
                    self.progress();
                }
                !self.cancelled() && self.entry(&at, name, dtype, ino, out)
            }),
        };
        self.entries.fetch_add(count % BATCH, Ordering::Relaxed);
        if !out.jobs.is_empty() && job.depth < self.keep_fd_depth {
            for j in out.jobs.iter_mut() {
                j.parent = Some(dir.clone());
            }
        }
        if out.late.as_ref().is_some_and(|l| l.entries.is_empty()) {
            out.late = None;
        }
        match result {
            Ok(()) => {
                if job.depth == 0 {
                    self.roots_read[job.root].store(true, Ordering::Relaxed);
                }
            }
            Err(e) => self.error(job_error(&job.path, job.depth, e)),
        }
    }

    /// One entry of the directory `at`: judged if it may be a lock, queued in `out` if it is
    /// a directory to walk. `false` stops the listing.
    fn entry(
        &self,
        at: &Here<'_>,
        name: &OsStr,
        dtype: sys::DType,
        ino: u64,
        out: &mut Found,
    ) -> bool {
        let may = self.matcher.may_match(name);
        // Until the kernel's lock table is read, the inode waits in `late`, while there is room.
        let mut late = out.late.as_mut().filter(|l| l.entries.len() < at.late_room);
        let locked = late.is_none() && {
            let kernel = self.snap.kernel_locks();
            !kernel.is_empty() && kernel.may_lock_inode(ino)
        };
        let maybe_dir = at.descend_ok && dtype != sys::DType::Other;
        if !(may || locked || maybe_dir) {
            if let Some(l) = late {
                l.push(ino, name);
            }
            return true;
        }
        let path = at.path.join(name);
        if self.matcher.has_excludes() && self.matcher.excluded(&path) {
            return true;
        }
        let hits = if may {
            self.matcher.hits(&path)
        } else {
            Vec::new()
        };
        if hits.is_empty()
            && let Some(l) = late.take()
        {
            l.push(ino, name);
        }
        if (!hits.is_empty() || locked) && self.answers(at, name) {
            if at.canonical && !at.recorded.replace(true) {
                // Judging asks for the canonical form of the lock's directory: it is the
                // path walked.
                self.snap.canonical_dirs().walked(at.path);
            }
            if out.deferred.as_ref().map_or(0, |d| d.items.len()) < at.defer_room {
                out.deferred
                    .get_or_insert_with(|| Deferred {
                        dir: at.dir.clone(),
                        anchor: at.anchor.clone(),
                        depth: at.depth + 1,
                        items: Vec::new(),
                    })
                    .items
                    .push((name.to_os_string(), path.clone(), hits));
            } else {
                self.judge_in(at.dir.as_fd(), name, &path, &hits, &at.anchor, at.depth + 1);
            }
        }
        if maybe_dir {
            let is_dir = match dtype {
                sys::DType::Dir => true,
                // The file system did not say: ask (never following a link).
                _ => self.is_dir_at(at, name),
            };
            // A mount point: the directory is then on that mount.
            let mounted = self.mounts.at(&path);
            let walk_it = || {
                let another_root = self.root_paths.len() > 1 && self.root_paths.contains(&path);
                !(another_root
                    || self.is_state_dir(at, ino, &path)
                    || mounted.is_some_and(|m| self.skip_mount(m, &path)))
            };
            if is_dir && walk_it() {
                let mount = match mounted {
                    Some(m) => m.may_hang().then(|| m.clone()),
                    None => at.mount.cloned(),
                };
                out.jobs.push(Job {
                    path,
                    parent: None,
                    root_dir: Some(at.root_dir.clone()),
                    node: Some(at.node.clone()),
                    depth: at.depth + 1,
                    root: at.root,
                    mount,
                    parent_mount: at.mount.cloned(),
                    open: None,
                });
            }
        }
        true
    }

    /// Whether the directory `path` (inode `ino` from `getdents`, in `at`) is our state
    /// directory.
    fn is_state_dir(&self, at: &Here<'_>, ino: u64, path: &Path) -> bool {
        self.state_dir.as_ref().is_some_and(|(dev, sino, _)| {
            // The inode number first (free), the device only when it matches.
            if ino != *sino {
                return false;
            }
            let Some(name) = path.file_name() else {
                return false;
            };
            reach::lstat_at(at.mount.map(|m| &**m), at.dir.as_fd(), name)
                .is_ok_and(|st| st.is_ok_and(|st| (st.dev, st.ino) == (*dev, *sino)))
        })
    }

    /// Whether a root (its real path) is our state directory or lies inside it.
    fn in_state_dir(&self, real: Option<&Path>) -> bool {
        self.state_dir
            .as_ref()
            .is_some_and(|(_, _, dir)| real.is_some_and(|r| r.starts_with(dir)))
    }

    /// Whether the container's place `path` (`/proc/PID/root/...`) is reached only through
    /// local mounts: that container's mounts are known (its root is in our table), and the top
    /// mount at each point on the way from its root to `path` is of a type that does not hang.
    fn local_container_place(&self, path: &Path) -> bool {
        let Some((pid, _)) = crate::probe::containers::proc_root_path(path) else {
            return false;
        };
        self.mounts
            .local_way(Path::new(&format!("/proc/{pid}/root")), path)
    }

    /// Whether the mount point `dir` (of mount `m`) is of a file system never to walk (proc,
    /// sysfs, autofs...). A mount that may hang is not `statfs`ed: its type says it is no
    /// pseudo file system, and a `statfs` could wait on its server.
    fn skip_mount(&self, m: &Mount, dir: &Path) -> bool {
        match m.fs_type.as_str() {
            // Touching an automount point may mount (or hang on) a remote file system.
            "autofs" => true,
            _ if m.may_hang() => false,
            _ => sys::pseudo_fs(dir).is_some(),
        }
    }

    /// Reports what judging an entry `depth` levels below its root gave.
    fn report(&self, r: Result<Option<super::Finding>, ScanError>, depth: usize) {
        match r {
            Ok(Some(f)) => {
                self.locks.fetch_add(1, Ordering::Relaxed);
                (self.sink)(ScanEvent::Found(Box::new(f)));
            }
            Ok(None) => {}
            Err(e) => self.error(e.at_depth(depth)),
        }
    }

    fn error(&self, e: ScanError) {
        self.errors.fetch_add(1, Ordering::Relaxed);
        (self.sink)(ScanEvent::Error(e));
    }

    /// Reports progress if the last report is older than [`PROGRESS_MS`].
    fn progress(&self) {
        let now = self.start.elapsed().as_millis() as u64;
        let last = self.last_progress_ms.load(Ordering::Relaxed);
        if now < last + PROGRESS_MS {
            return;
        }
        if self
            .last_progress_ms
            .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
        {
            self.publish_progress();
        }
    }

    fn publish_progress(&self) {
        (self.sink)(ScanEvent::Progress {
            entries: self.entries.load(Ordering::Relaxed),
            locks: self.locks.load(Ordering::Relaxed),
        });
    }
}

/// The mounts the walk goes by: ours, and, where a root is inside a container, the mounts of
/// every container we look inside, as seen through its root (`/proc/PID/root/...`), from the
/// mount tables its processes had when the snapshot was taken (each root of its own: its PID
/// 1's, a sidecar's). Of a container's mounts, only those
/// the walk can ask about are taken: the ones on the way from its root to one of the walk's
/// roots, and the ones below such a root (the walk asks its table about its roots, the points
/// on the way to them, and the directories below them).
fn mounts(snap: &Snapshot, roots: &[Root]) -> MountTable {
    let mut table = (*MountTable::recent()).clone();
    if roots.iter().any(|r| in_container(&r.path)) {
        for inside in snap.containers().roots_inside() {
            let base = inside.root_path();
            // This container's places among the roots, as it sees them.
            let places: Vec<PathBuf> = roots
                .iter()
                .filter_map(|r| r.path.strip_prefix(&base).ok())
                .map(|rel| Path::new("/").join(rel))
                .collect();
            let asked = |m: &&Mount| {
                places
                    .iter()
                    .any(|p| p.starts_with(&m.point) || m.point.starts_with(p))
            };
            table.add_seen_through(&base, inside.mounts.iter().filter(asked));
        }
    }
    table
}

/// Whether `path` is seen through a process's root (`/proc/PID/root/...`: a container's).
fn in_container(path: &Path) -> bool {
    crate::probe::fs::proc_root_path(path).is_some()
}

/// An open directory and its (device, inode).
type Opened = (sys::DirHandle, anchor::DirId);

/// A directory being read, as its entries see it.
struct Here<'a> {
    path: &'a Path,
    depth: usize,
    root: usize,
    anchor: Anchor,
    dir: &'a Arc<sys::DirHandle>,
    root_dir: &'a Arc<sys::DirHandle>,
    node: &'a Arc<DirNode>,
    /// Its mount, when calls on it may hang.
    mount: Option<&'a Arc<Mount>>,
    /// Whether its subdirectories are within the root's depth.
    descend_ok: bool,
    /// Whether its path is its canonical form (its root's is, and no symlink was followed).
    canonical: bool,
    /// Whether it was recorded as canonical for judging (once, at its first candidate).
    recorded: Cell<bool>,
    /// How many of its candidates may wait for the evidence, and how many of its entries' inodes
    /// for the kernel's lock table (see [`Walk::worker`]); the rest are judged as they are found.
    defer_room: usize,
    late_room: usize,
}

/// Opens a job's directory `path`: relative to its kept `parent`, else beneath the root's
/// descriptor `root_dir` (the root at `root_path`) without following symlinks, and the root
/// itself by its path (a symlink as its last component is not followed).
fn open_job(
    parent: Option<&sys::DirHandle>,
    root_dir: Option<&sys::DirHandle>,
    path: &Path,
    root_path: &Path,
) -> std::io::Result<sys::DirHandle> {
    if let Some(parent) = parent {
        return sys::open_dir(Some(parent), path);
    }
    let Some(root_dir) = root_dir else {
        return sys::open_dir(None, path);
    };
    let rel = path
        .strip_prefix(root_path)
        .map_err(|_| std::io::Error::other("not below its root"))?;
    let parent = anchor::open_beneath(root_dir.as_fd(), rel.parent().unwrap_or(Path::new("")))?;
    sys::open_dir(Some(&parent), path)
}

/// A directory that could not be read.
fn job_error(path: &Path, depth: usize, e: std::io::Error) -> ScanError {
    ScanError::io(path, e)
        .during("cannot read directory")
        .at_depth(depth)
}

/// The directory the configuration says never to walk (our state directory, where reclaimed
/// locks are saved), if it exists. Asked without waiting on a mount that does not answer
/// ([`reach`](crate::probe::reach)): a home directory may be on one (then no state directory is
/// known to the walk, and nothing in it can be a lock it reads anyway).
fn state_dir(dir: &Path) -> Option<(u64, u64, PathBuf)> {
    let a = reach::probe(dir).ok()??;
    let is_dir =
        rustix::fs::FileType::from_raw_mode(a.target_mode) == rustix::fs::FileType::Directory;
    is_dir.then_some((a.dev, a.ino, a.real?))
}

mod hanging;
/// The system calls of the walk (getdents64 on Linux, `readdir` elsewhere).
mod sys;

#[cfg(test)]
mod tests;
