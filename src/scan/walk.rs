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
//! work spreads over subtrees of any shape and the stack stays small (depth-first).

use std::collections::{HashMap, HashSet};
use std::os::fd::AsFd;
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
}

#[derive(Default)]
struct Queue {
    jobs: Vec<Job>,
    /// Threads reading a directory right now (they may push more jobs).
    active: usize,
}

/// What the walk found, in numbers.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Counts {
    pub entries: u64,
    pub locks: u64,
    pub errors: u64,
    pub roots_read: usize,
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
    /// Mount points below which the file system changes, with their type.
    mounts: HashMap<PathBuf, String>,
    /// Our state directory (device, inode, canonical path), never walked.
    state_dir: Option<(u64, u64, PathBuf)>,
    queue: Mutex<Queue>,
    ready: Condvar,
    entries: AtomicU64,
    locks: AtomicU64,
    errors: AtomicU64,
    roots_read: Vec<AtomicBool>,
    start: Instant,
    last_progress_ms: AtomicU64,
    threads: usize,
    /// Directories shallower than this keep their descriptor open for their subdirectories
    /// (bounded, so that a very deep tree cannot exhaust the descriptor limit).
    keep_fd_depth: usize,
}

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
        Walk {
            config,
            matcher,
            snap,
            cancel,
            sink,
            roots,
            root_paths: roots.iter().map(|r| r.path.clone()).collect(),
            root_arcs: roots.iter().map(|r| Arc::from(r.path.as_path())).collect(),
            mounts: sys::mount_points(),
            state_dir: state_dir(),
            queue: Mutex::default(),
            ready: Condvar::new(),
            entries: AtomicU64::new(0),
            locks: AtomicU64::new(0),
            errors: AtomicU64::new(0),
            roots_read: roots.iter().map(|_| AtomicBool::new(false)).collect(),
            start: Instant::now(),
            last_progress_ms: AtomicU64::new(0),
            threads,
            keep_fd_depth: (sys::fd_limit() / 4 / threads as u64).min(64) as usize,
        }
    }

    /// Walks every root to the end (or until cancelled).
    pub fn run(&self) -> Counts {
        for (i, root) in self.roots.iter().enumerate() {
            if self.cancelled() {
                break;
            }
            self.start_root(i, root);
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
        (self.sink)(ScanEvent::Progress {
            entries: self.entries.load(Ordering::Relaxed),
            locks: self.locks.load(Ordering::Relaxed),
        });
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
    /// followed) is examined at once, in lenient mode.
    fn start_root(&self, i: usize, root: &Root) {
        let meta = match std::fs::symlink_metadata(&root.path) {
            Ok(m) => m,
            Err(e) => {
                self.error(
                    ScanError::io(&root.path, e)
                        .during("cannot scan")
                        .at_depth(0),
                );
                return;
            }
        };
        if self.in_state_dir(&root.path) {
            // Read, and nothing in it is a lock: our own saved copies and journal.
            self.roots_read[i].store(true, Ordering::Relaxed);
            return;
        }
        if meta.is_dir() {
            if let Some(kind) = sys::pseudo_fs(&root.path) {
                let why = format!("is on a pseudo file system ({kind}): not scanned");
                self.error(ScanError::other(&root.path, why).at_depth(0));
                return;
            }
            if root.max_depth == Some(0) {
                self.roots_read[i].store(true, Ordering::Relaxed);
                return;
            }
            self.queue.lock().unwrap().jobs.push(Job {
                path: root.path.clone(),
                parent: None,
                root_dir: None,
                node: None,
                depth: 0,
                root: i,
            });
            return;
        }
        self.roots_read[i].store(true, Ordering::Relaxed);
        self.entries.fetch_add(1, Ordering::Relaxed);
        let hits = self.matcher.hits(&root.path);
        self.report(
            judge::examine(&root.path, &hits, Mode::Lenient, self.snap, self.config),
            0,
        );
    }

    fn worker(&self) {
        let mut buf: Vec<u8> = Vec::with_capacity(32 * 1024);
        let mut found: Vec<Job> = Vec::new();
        loop {
            let job = {
                let mut q = self.queue.lock().unwrap();
                loop {
                    if self.cancelled() {
                        q.jobs.clear();
                    }
                    if let Some(job) = q.jobs.pop() {
                        q.active += 1;
                        break Some(job);
                    }
                    if q.active == 0 {
                        break None;
                    }
                    q = self.ready.wait(q).unwrap();
                }
            };
            let Some(job) = job else {
                self.ready.notify_all();
                return;
            };
            self.read_dir(job, &mut buf, &mut found);
            let mut q = self.queue.lock().unwrap();
            q.active -= 1;
            let pushed = !found.is_empty();
            q.jobs.append(&mut found);
            let finished = q.active == 0 && q.jobs.is_empty();
            drop(q);
            if pushed || finished {
                self.ready.notify_all();
            }
            self.progress();
        }
    }

    /// Reads one directory: examines the entries that may be locks, collects the
    /// subdirectories to walk into `out`.
    fn read_dir(&self, job: Job, buf: &mut Vec<u8>, out: &mut Vec<Job>) {
        let root = &self.roots[job.root];
        let opened = self.open_job(&job, root).and_then(|d| {
            let id = anchor::dir_id(d.as_fd())?;
            Ok((d, id))
        });
        let (dir, id) = match opened {
            Ok(d) => d,
            Err(e) => {
                self.error(job_error(&job.path, job.depth, e));
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
        let here = Anchor {
            root: self.root_arcs[job.root].clone(),
            dir: node.clone(),
        };
        let descend_ok = root.max_depth.is_none_or(|m| job.depth + 1 < m);
        let kernel = self.snap.kernel_locks();
        let check_kernel = !kernel.is_empty();
        let excludes = self.matcher.has_excludes();
        let other_roots = self.root_paths.len() > 1;
        let mut count = 0u64;
        let result = sys::read_entries(&dir, buf, |name, dtype, ino| {
            count += 1;
            if count % BATCH == 0 {
                self.entries.fetch_add(BATCH, Ordering::Relaxed);
                self.progress();
                if self.cancelled() {
                    return false;
                }
            }
            let may = self.matcher.may_match(name);
            let locked = check_kernel && kernel.may_lock_inode(ino);
            let maybe_dir = descend_ok && dtype != sys::DType::Other;
            if !(may || locked || maybe_dir) {
                return true;
            }
            let path = job.path.join(name);
            if excludes && self.matcher.excluded(&path) {
                return true;
            }
            if may || locked {
                let hits = if may {
                    self.matcher.hits(&path)
                } else {
                    Vec::new()
                };
                if !hits.is_empty() || locked {
                    self.report(
                        judge::examine_at(
                            dir.as_fd(),
                            name,
                            &path,
                            &hits,
                            Mode::Walk,
                            self.snap,
                            self.config,
                            Some(&here),
                        ),
                        job.depth + 1,
                    );
                }
            }
            if maybe_dir {
                let is_dir = match dtype {
                    sys::DType::Dir => true,
                    // The file system did not say: ask (never following a link).
                    _ => sys::is_dir_at(&dir, name),
                };
                let walk_it = || {
                    let another_root = other_roots && self.root_paths.contains(&path);
                    !(another_root || self.is_state_dir(ino, &path) || self.skip_mount(&path))
                };
                if is_dir && walk_it() {
                    out.push(Job {
                        path,
                        parent: None,
                        root_dir: Some(root_dir.clone()),
                        node: Some(node.clone()),
                        depth: job.depth + 1,
                        root: job.root,
                    });
                }
            }
            true
        });
        self.entries.fetch_add(count % BATCH, Ordering::Relaxed);
        if !out.is_empty() && job.depth < self.keep_fd_depth {
            for j in out.iter_mut() {
                j.parent = Some(dir.clone());
            }
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

    /// Whether the directory `path` (inode `ino` from `getdents`) is our state directory.
    fn is_state_dir(&self, ino: u64, path: &Path) -> bool {
        use std::os::unix::fs::MetadataExt;
        self.state_dir.as_ref().is_some_and(|(dev, sino, _)| {
            // The inode number first (free), the device only when it matches.
            ino == *sino
                && std::fs::symlink_metadata(path)
                    .is_ok_and(|m| m.dev() == *dev && m.ino() == *sino)
        })
    }

    /// Whether a root is our state directory or lies inside it.
    fn in_state_dir(&self, root: &Path) -> bool {
        self.state_dir.as_ref().is_some_and(|(_, _, dir)| {
            std::fs::canonicalize(root).is_ok_and(|r| r.starts_with(dir))
        })
    }

    /// Opens a job's directory: relative to its kept parent, else beneath the root's
    /// descriptor without following symlinks, and the root itself by its path (a symlink
    /// as its last component is not followed).
    fn open_job(&self, job: &Job, root: &Root) -> std::io::Result<sys::DirHandle> {
        if let Some(parent) = job.parent.as_deref() {
            return sys::open_dir(Some(parent), &job.path);
        }
        let Some(root_dir) = job.root_dir.as_deref() else {
            return sys::open_dir(None, &job.path);
        };
        let rel = job
            .path
            .strip_prefix(&root.path)
            .map_err(|_| std::io::Error::other("not below its root"))?;
        let parent = anchor::open_beneath(root_dir.as_fd(), rel.parent().unwrap_or(Path::new("")))?;
        sys::open_dir(Some(&parent), &job.path)
    }

    /// Whether `dir` is a mount point of a file system never to walk (proc, sysfs, autofs...).
    fn skip_mount(&self, dir: &Path) -> bool {
        match self.mounts.get(dir) {
            None => false,
            // Touching an automount point may mount (or hang on) a remote file system.
            Some(t) if t == "autofs" => true,
            Some(_) => sys::pseudo_fs(dir).is_some(),
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
            (self.sink)(ScanEvent::Progress {
                entries: self.entries.load(Ordering::Relaxed),
                locks: self.locks.load(Ordering::Relaxed),
            });
        }
    }
}

/// A directory that could not be read.
fn job_error(path: &Path, depth: usize, e: std::io::Error) -> ScanError {
    ScanError::io(path, e)
        .during("cannot read directory")
        .at_depth(depth)
}

/// Our state directory, if it exists: where reclaimed locks are saved (never walked).
fn state_dir() -> Option<(u64, u64, PathBuf)> {
    use std::os::unix::fs::MetadataExt;
    let dir = super::config::default_state_dir();
    let meta = std::fs::metadata(&dir).ok().filter(|m| m.is_dir())?;
    let canonical = std::fs::canonicalize(&dir).ok()?;
    Some((meta.dev(), meta.ino(), canonical))
}

/// The system calls of the walk (getdents64 on Linux, `readdir` elsewhere).
mod sys {
    use std::ffi::OsStr;
    use std::io;
    use std::os::unix::ffi::OsStrExt;
    use std::path::Path;

    use rustix::fd::{AsFd, OwnedFd};
    use rustix::fs::{FileType, Mode, OFlags};

    #[cfg(target_os = "linux")]
    pub use linux::*;
    #[cfg(not(target_os = "linux"))]
    pub use other::*;

    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum DType {
        Dir,
        Other,
        /// The file system does not fill `d_type`.
        Unknown,
    }

    /// An open directory.
    pub type DirHandle = OwnedFd;

    /// Opens the directory `path` (relative to its open `parent` when given), never following
    /// a symlink, without updating its access time where allowed.
    pub fn open_dir(parent: Option<&OwnedFd>, path: &Path) -> io::Result<OwnedFd> {
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let (at, name) = match (parent, path.file_name()) {
            (Some(p), Some(name)) => (p.as_fd(), Path::new(name)),
            _ => (rustix::fs::CWD, path),
        };
        #[cfg(target_os = "linux")]
        match rustix::fs::openat(at, name, flags | OFlags::NOATIME, Mode::empty()) {
            // O_NOATIME needs ownership or CAP_FOWNER.
            Err(rustix::io::Errno::PERM) => {}
            other => return Ok(other?),
        }
        Ok(rustix::fs::openat(at, name, flags, Mode::empty())?)
    }

    /// Whether `name` in `dir` is a directory (not following a symlink).
    pub fn is_dir_at(dir: &OwnedFd, name: &OsStr) -> bool {
        rustix::fs::statat(dir, name, rustix::fs::AtFlags::SYMLINK_NOFOLLOW)
            .is_ok_and(|st| FileType::from_raw_mode(st.st_mode) == FileType::Directory)
    }

    /// Calls `f(name, type, inode)` for one directory entry unless it is `.` or `..`;
    /// returns what `f` says (`false`: stop).
    fn visit(
        name: &[u8],
        t: FileType,
        ino: u64,
        f: &mut impl FnMut(&OsStr, DType, u64) -> bool,
    ) -> bool {
        if name == b"." || name == b".." {
            return true;
        }
        let t = match t {
            FileType::Directory => DType::Dir,
            FileType::Unknown => DType::Unknown,
            _ => DType::Other,
        };
        f(OsStr::from_bytes(name), t, ino)
    }

    #[cfg(target_os = "linux")]
    mod linux {
        use std::collections::HashMap;
        use std::ffi::OsStr;
        use std::io;
        use std::os::unix::ffi::OsStringExt;
        use std::path::{Path, PathBuf};

        use rustix::fd::OwnedFd;
        use rustix::fs::RawDir;

        use super::DType;

        /// The soft limit on open descriptors.
        pub fn fd_limit() -> u64 {
            rustix::process::getrlimit(rustix::process::Resource::Nofile)
                .current
                .unwrap_or(1024)
        }

        /// Calls `f(name, type, inode)` for each entry of the open directory `fd` (without `.`
        /// and `..`), with `getdents64` into `buf`; `f` returns `false` to stop.
        pub fn read_entries(
            fd: &OwnedFd,
            buf: &mut Vec<u8>,
            mut f: impl FnMut(&OsStr, DType, u64) -> bool,
        ) -> io::Result<()> {
            let mut dir = RawDir::new(fd, buf.spare_capacity_mut());
            while let Some(entry) = dir.next() {
                let entry = entry?;
                let name = entry.file_name().to_bytes();
                if !super::visit(name, entry.file_type(), entry.ino(), &mut f) {
                    break;
                }
            }
            Ok(())
        }

        /// The name of the pseudo file system `dir` is on, if it is one.
        pub fn pseudo_fs(dir: &Path) -> Option<crate::probe::fs::FsKind> {
            let m = crate::probe::fs::magic(dir)?;
            crate::probe::fs::is_pseudo(m).then(|| crate::probe::fs::describe(dir, 0).kind)
        }

        /// Mount points (other than `/`) and their file-system types, from
        /// `/proc/self/mountinfo`.
        pub fn mount_points() -> HashMap<PathBuf, String> {
            std::fs::read("/proc/self/mountinfo")
                .map(|text| parse_mountinfo(&text))
                .unwrap_or_default()
        }

        pub fn parse_mountinfo(text: &[u8]) -> HashMap<PathBuf, String> {
            let mut out = HashMap::new();
            for line in text.split(|&b| b == b'\n') {
                // id parent major:minor root mount-point options [optional...] - type source ...
                let fields: Vec<&[u8]> = line.split(|&b| b == b' ').collect();
                let Some(dash) = fields.iter().position(|f| *f == b"-") else {
                    continue;
                };
                let (Some(mp), Some(fstype)) = (fields.get(4), fields.get(dash + 1)) else {
                    continue;
                };
                let mp = PathBuf::from(std::ffi::OsString::from_vec(
                    crate::probe::fs::mountinfo_unescape(mp),
                ));
                if mp != Path::new("/") {
                    out.insert(mp, String::from_utf8_lossy(fstype).into_owned());
                }
            }
            out
        }

        #[cfg(test)]
        mod tests {
            use super::*;

            #[test]
            fn parses_mountinfo() {
                let text = b"22 1 0:21 / /proc rw,nosuid - proc proc rw\n\
                    36 25 8:1 / / rw - ext4 /dev/sda1 rw\n\
                    40 36 0:33 / /mnt/my\\040disk rw shared:1 - fuse.sshfs host: rw\n";
                let m = parse_mountinfo(text);
                assert_eq!(m.get(Path::new("/proc")).map(String::as_str), Some("proc"));
                assert_eq!(
                    m.get(Path::new("/mnt/my disk")).map(String::as_str),
                    Some("fuse.sshfs")
                );
                assert!(!m.contains_key(Path::new("/")));
            }
        }
    }

    #[cfg(not(target_os = "linux"))]
    mod other {
        use std::collections::HashMap;
        use std::ffi::OsStr;
        use std::io;
        use std::path::{Path, PathBuf};

        use rustix::fd::OwnedFd;

        use super::DType;

        pub fn fd_limit() -> u64 {
            0
        }

        pub fn read_entries(
            fd: &OwnedFd,
            _buf: &mut Vec<u8>,
            mut f: impl FnMut(&OsStr, DType, u64) -> bool,
        ) -> io::Result<()> {
            let mut dir = rustix::fs::Dir::read_from(fd)?;
            while let Some(entry) = dir.next() {
                let entry = entry?;
                let name = entry.file_name().to_bytes();
                if !super::visit(name, entry.file_type(), entry.ino() as u64, &mut f) {
                    break;
                }
            }
            Ok(())
        }

        pub fn pseudo_fs(_dir: &Path) -> Option<crate::probe::fs::FsKind> {
            None
        }

        pub fn mount_points() -> HashMap<PathBuf, String> {
            HashMap::new()
        }
    }
}
