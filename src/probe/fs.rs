//! File systems: what kind a lock lives on, whether it is a network file system, and the pseudo
//! file systems the walker must not descend into. The engine needs the same answers for the
//! directory it locks in, so they live in locksmith's system facts ([`locksmith_sys::fs`]).
//!
//! This module adds what a scan needs to survive a mount that stops answering (an NFS or FUSE
//! server gone, or stopped): the mount table ([`MountTable`], from `/proc/self/mountinfo`, read
//! without touching any mount), which mounts may hang ([`may_hang`]: every type not known to be
//! a file system of this kernel on a local device), and [`call`]: a blocking call ([`Op`]) on
//! such a mount is made by a task of its own (not a thread of this process: see `task`) and
//! waited for at most [`MOUNT_TIMEOUT`].
//!
//! Invariants:
//! - a call that gets no answer in time is abandoned, never waited for again: its task stays
//!   blocked in the kernel, holding only copies of descriptors and memory of its own, and the
//!   mount is *not answering*: every later call on it fails at once ([`NotAnswering`]),
//!   without a new task, until the abandoned calls return (the server answers again);
//! - a task blocked in a call the kernel cannot interrupt (a FUSE request its daemon has taken)
//!   does not keep this process from exiting: it is not one of its threads;
//! - calls on a local file system are made where they are asked, unchanged.

use std::collections::HashMap;
use std::ffi::OsString;
use std::os::fd::{BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

pub use locksmith_sys::fs::*;

/// How long one call into a mount may go unanswered before the mount is taken as not answering.
pub const MOUNT_TIMEOUT: Duration = Duration::from_secs(5);

/// File-system types of this kernel on local devices or in memory: a call on them is answered
/// by this kernel alone. Every other type (NFS, CIFS, 9p, Ceph, every FUSE mount, a type this
/// list does not know) may wait on a server that has stopped.
const LOCAL_TYPES: &[&str] = &[
    "ext2",
    "ext3",
    "ext4",
    "xfs",
    "btrfs",
    "zfs",
    "f2fs",
    "bcachefs",
    "jfs",
    "reiserfs",
    "nilfs2",
    "vfat",
    "msdos",
    "exfat",
    "ntfs3",
    "hfsplus",
    "udf",
    "iso9660",
    "squashfs",
    "erofs",
    "tmpfs",
    "ramfs",
    "devtmpfs",
    "overlay",
    "proc",
    "sysfs",
    "devpts",
    "cgroup",
    "cgroup2",
    "debugfs",
    "tracefs",
    "securityfs",
    "bpf",
    "configfs",
    "fusectl",
    "mqueue",
    "hugetlbfs",
    "pstore",
    "binfmt_misc",
    "selinuxfs",
    "efivarfs",
    "nsfs",
    "autofs",
    "rpc_pipefs",
];

/// `path` (relative to `dir`) opened with `flags` and, where we may, `O_NOATIME`: reading a
/// lock to judge it leaves its access time as it was (the flag needs ownership or
/// `CAP_FOWNER`; without it the file is opened all the same).
pub fn open_noatime<Fd: std::os::fd::AsFd, P: rustix::path::Arg + Copy>(
    dir: Fd,
    path: P,
    flags: rustix::fs::OFlags,
) -> rustix::io::Result<OwnedFd> {
    use rustix::fs::Mode;
    #[cfg(target_os = "linux")]
    {
        match rustix::fs::openat(
            &dir,
            path,
            flags | rustix::fs::OFlags::NOATIME,
            Mode::empty(),
        ) {
            Err(rustix::io::Errno::PERM) => {}
            other => return other,
        }
    }
    rustix::fs::openat(&dir, path, flags, Mode::empty())
}

/// Whether a mount of this type (its mountinfo name) may stop answering (see `LOCAL_TYPES`).
pub fn may_hang(fs_type: &str) -> bool {
    !LOCAL_TYPES.contains(&fs_type)
}

/// How long a read of `/proc/self/mountinfo` serves: the inventory of namespaces and the walks
/// of one scan start within a few milliseconds of each other, and a reclaim judges lock after
/// lock; a mount made since is seen at the next read.
pub(crate) const RECENT_MOUNTS: Duration = Duration::from_millis(200);

/// `/proc/self/mountinfo` as read at most [`RECENT_MOUNTS`] ago, and its table.
fn recent_mountinfo() -> (Arc<[u8]>, Arc<MountTable>) {
    type Recent = (Instant, Arc<[u8]>, Arc<MountTable>);
    static RECENT: Mutex<Option<Recent>> = Mutex::new(None);
    let mut recent = RECENT.lock().unwrap_or_else(|e| e.into_inner());
    match &*recent {
        Some((at, text, table)) if at.elapsed() < RECENT_MOUNTS => (text.clone(), table.clone()),
        _ => {
            // Empty where there is no mountinfo.
            let text: Arc<[u8]> = locksmith_sys::host::read_proc("/proc/self/mountinfo")
                .unwrap_or_default()
                .into();
            let table = Arc::new(MountTable::parse(&text));
            *recent = Some((Instant::now(), text.clone(), table.clone()));
            (text, table)
        }
    }
}

/// `/proc/<pid>/root/rest` → `(pid, /rest)`.
pub fn proc_root_path(path: &Path) -> Option<(i32, PathBuf)> {
    let mut comps = path.components();
    if comps.next() != Some(std::path::Component::RootDir)
        || comps.next() != Some(std::path::Component::Normal("proc".as_ref()))
    {
        return None;
    }
    let pid = match comps.next()? {
        std::path::Component::Normal(s) => s.to_str()?.parse().ok()?,
        _ => return None,
    };
    if comps.next() != Some(std::path::Component::Normal("root".as_ref())) {
        return None;
    }
    Some((pid, Path::new("/").join(comps.as_path())))
}

/// One mount of a mount table (`/proc/<pid>/mountinfo`: ours, or a namespace's).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Mount {
    /// The mount's id (unique among the mounts of now).
    pub id: u64,
    /// Its device (`st_dev` of its files).
    pub dev: u64,
    /// The directory of its file system that is mounted (`/` for the whole file system).
    #[serde(with = "super::evidence::serde_path")]
    pub root: PathBuf,
    /// Where it appears.
    #[serde(with = "super::evidence::serde_path")]
    pub point: PathBuf,
    /// Its type (`ext4`, `nfs4`, `fuse.sshfs`).
    pub fs_type: String,
    /// What was mounted (`root@host:/dir`, `/dev/sda1`), when mountinfo names it.
    pub source: Option<String>,
    /// An overlay's layers ([`overlay_layers`]): the directories whose files it shows, as its
    /// mounter named them. Empty for any other type.
    #[serde(with = "super::evidence::serde_path::vec")]
    pub layers: Vec<PathBuf>,
}

/// Parses a mountinfo (proc(5): `ID PARENT MAJ:MIN ROOT POINT OPTIONS [OPTIONAL...] - TYPE
/// SOURCE SUPER-OPTIONS`), a line a mount, in its order.
pub fn parse_mountinfo(text: &[u8]) -> Vec<Mount> {
    use std::os::unix::ffi::OsStringExt;
    let path = |f: &[u8]| PathBuf::from(std::ffi::OsString::from_vec(mountinfo_unescape(f)));
    let lossy = |f: &[u8]| String::from_utf8_lossy(f).into_owned();
    text.split(|&b| b == b'\n')
        .filter_map(|line| {
            let fields: Vec<&[u8]> = line.split(|&b| b == b' ').collect();
            let dash = fields.iter().position(|f| *f == b"-")?;
            let (maj, min) = std::str::from_utf8(fields.get(2)?).ok()?.split_once(':')?;
            let fs_type = lossy(fields.get(dash + 1)?);
            Some(Mount {
                id: std::str::from_utf8(fields.first()?).ok()?.parse().ok()?,
                dev: makedev(maj.parse().ok()?, min.parse().ok()?),
                root: path(fields.get(3)?),
                point: path(fields.get(4)?),
                layers: match fields.get(dash + 3) {
                    Some(options) if fs_type == "overlay" => overlay_layers(options),
                    _ => Vec::new(),
                },
                fs_type,
                source: fields
                    .get(dash + 2)
                    .filter(|s| !s.is_empty() && **s != b"none")
                    .map(|s| lossy(&mountinfo_unescape(s))),
            })
        })
        .collect()
}

/// The directories an overlay shows the files of, from its super options in a mountinfo: its
/// `upperdir` (where the files it writes are), then each lower layer (`lowerdir=` as given
/// to mount(8), layers split at `:` and `\:` a colon in a name; or one `lowerdir+=` or
/// `datadir+=` option a layer). Its `workdir` holds none of its files. A program that
/// writes a lock file in an overlay writes it in the upper layer: whoever sees that directory
/// sees the same file under another path, on another device.
pub fn overlay_layers(options: &[u8]) -> Vec<PathBuf> {
    use std::os::unix::ffi::OsStringExt;
    let path = |b: Vec<u8>| PathBuf::from(std::ffi::OsString::from_vec(b));
    let mut upper = Vec::new();
    let mut lower = Vec::new();
    // A comma, space or backslash in a value is written in octal (`\054`): options split at
    // the commas left.
    for option in options.split(|&b| b == b',') {
        let option = mountinfo_unescape(option);
        let Some(eq) = option.iter().position(|&b| b == b'=') else {
            continue;
        };
        let (name, value) = (&option[..eq], &option[eq + 1..]);
        match name {
            b"upperdir" => upper.push(path(value.to_vec())),
            b"lowerdir+" | b"datadir+" => lower.push(path(value.to_vec())),
            b"lowerdir" => {
                let mut layer = Vec::new();
                let mut bytes = value.iter();
                while let Some(&b) = bytes.next() {
                    match b {
                        b'\\' => layer.extend(bytes.next()),
                        b':' => lower.push(path(std::mem::take(&mut layer))),
                        _ => layer.push(b),
                    }
                }
                lower.push(path(layer));
            }
            _ => {}
        }
    }
    upper.extend(lower.into_iter().filter(|l| !l.as_os_str().is_empty()));
    upper
}

/// The type of a `fuse-overlayfs` mount: an overlay served by a daemon (what rootless Podman
/// mounts where the kernel's overlay is not allowed), its layers in no mount table.
pub const FUSE_OVERLAY: &str = "fuse.fuse-overlayfs";

impl Mount {
    /// Whether it is an overlay, the kernel's or `fuse-overlayfs`: a device of its own, whose
    /// files are those of its layers.
    pub fn is_overlay(&self) -> bool {
        self.fs_type == "overlay" || self.fs_type == FUSE_OVERLAY
    }

    /// A mount known only by where it is, of a type (`fs_type`) that is no file system's: what
    /// a call that may hang there is kept apart by, and what its error names.
    pub fn unknown(point: &Path, fs_type: &str) -> Mount {
        Mount {
            id: 0,
            dev: 0,
            root: PathBuf::from("/"),
            point: point.to_path_buf(),
            fs_type: fs_type.into(),
            source: None,
            layers: Vec::new(),
        }
    }

    /// This mount of another process's table (its point as that process sees it) as seen from
    /// here through `base`, that process's root (`/proc/PID/root`): its point taken below
    /// `base`, its id (another table's) dropped.
    pub fn seen_through(&self, base: &Path) -> Mount {
        let rel = self.point.strip_prefix("/").unwrap_or(&self.point);
        Mount {
            id: 0,
            point: if rel.as_os_str().is_empty() {
                base.to_path_buf()
            } else {
                base.join(rel)
            },
            ..self.clone()
        }
    }

    /// Whether calls on it may wait on a server ([`may_hang`]).
    pub fn may_hang(&self) -> bool {
        may_hang(&self.fs_type)
    }

    /// Whether entering it may wait: a mount that may hang, or an automount point (entering it
    /// mounts what it stands for, which may be a server that does not answer). What is asked
    /// there is asked through a bounded task ([`call`]).
    pub fn may_wait(&self) -> bool {
        self.may_hang() || self.fs_type == "autofs"
    }

    /// What it is, from the mount table alone (no call on the mount).
    pub fn info(&self) -> FsInfo {
        let kind = FsKind::from_name(&self.fs_type);
        let network = match &kind {
            FsKind::Fuse(t) => fuse_is_network(t, self.source.as_deref()),
            k if k.is_network() => true,
            // nfs4, smb3, glusterfs, lustre...: not a local type, and not named by the kind.
            _ => self.may_hang(),
        };
        FsInfo::new(kind, network)
    }
}

/// The mounts of this process's namespace, read from `/proc/self/mountinfo` (which touches no
/// mount).
#[derive(Debug, Clone, Default)]
pub struct MountTable {
    /// In mountinfo order: a later mount on the same point is on top.
    mounts: Vec<Arc<Mount>>,
    by_point: HashMap<PathBuf, usize>,
}

impl MountTable {
    /// The mounts as read at most 0.2 s ago (shared: judging one lock after another, the walks
    /// of one scan and its inventory of namespaces read `/proc/self/mountinfo` once, not once
    /// each).
    pub fn recent() -> Arc<MountTable> {
        recent_mountinfo().1
    }

    /// The text of `/proc/self/mountinfo` the [`MountTable::recent`] table was read from (the
    /// super options of each mount are in it).
    pub fn recent_text() -> Arc<[u8]> {
        recent_mountinfo().0
    }

    /// Parses mountinfo ([`parse_mountinfo`]).
    pub fn parse(text: &[u8]) -> Self {
        let mut table = MountTable::default();
        for m in parse_mountinfo(text) {
            table.by_point.insert(m.point.clone(), table.mounts.len());
            table.mounts.push(Arc::new(m));
        }
        table
    }

    /// Adds the mounts another process sees (as its `/proc/PID/mountinfo` lists them, in
    /// order), as they are seen from here through `base`, that process's root
    /// (`/proc/PID/root`): their points are taken below `base`.
    pub fn add_seen_through<'m>(
        &mut self,
        base: &Path,
        mounts: impl IntoIterator<Item = &'m Mount>,
    ) {
        for m in mounts {
            let seen = m.seen_through(base);
            self.by_point.insert(seen.point.clone(), self.mounts.len());
            self.mounts.push(Arc::new(seen));
        }
    }

    /// Whether `path`, below `base`, is reached from `base` through local mounts only: `base`
    /// is a mount point of the table, and the top mount at `base` and at every point between it
    /// and `path` (`path` included) is one whose entering cannot wait ([`Mount::may_wait`]).
    pub fn local_way(&self, base: &Path, path: &Path) -> bool {
        // `path` and its parents down to `base`: the ones at least as long.
        let down_to_base = base.as_os_str().len();
        self.at(base).is_some()
            && path.starts_with(base)
            && path
                .ancestors()
                .take_while(|p| p.as_os_str().len() >= down_to_base)
                .all(|p| self.at(p).is_none_or(|m| !m.may_wait()))
    }

    /// The mount (the top one) whose mount point is exactly `point`.
    pub fn at(&self, point: &Path) -> Option<&Arc<Mount>> {
        self.by_point.get(point).map(|&i| &self.mounts[i])
    }

    /// The mount a path lies in, by its components (the path is taken as it is: symlinks in
    /// it are not resolved).
    pub fn of_path(&self, path: &Path) -> Option<&Arc<Mount>> {
        path.ancestors().find_map(|p| self.at(p))
    }

    /// The mount with device `dev` (the top one when several share it).
    pub fn of_dev(&self, dev: u64) -> Option<&Arc<Mount>> {
        self.mounts.iter().rev().find(|m| m.dev == dev)
    }

    /// Every mount, in mountinfo order.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<Mount>> {
        self.mounts.iter()
    }
}

fn makedev(major: u32, minor: u32) -> u64 {
    #[cfg(target_os = "linux")]
    {
        rustix::fs::makedev(major, minor)
    }
    #[cfg(not(target_os = "linux"))]
    {
        (u64::from(major) << 32) | u64::from(minor)
    }
}

/// The file system of a lock's directory `dir`, whose device is `dev`: for a mount that may
/// hang, from the mount table alone (no `statfs` that could wait on its server); otherwise as
/// [`describe`] says.
pub fn describe_bounded(dir: &Path, dev: u64) -> FsInfo {
    let table = MountTable::recent();
    match table.of_dev(dev) {
        Some(m) if m.may_hang() => m.info(),
        _ => describe(dir, dev),
    }
}

/// A mount that did not answer a call in time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotAnswering {
    pub point: PathBuf,
    pub fs_type: String,
    pub source: Option<String>,
    /// How long its oldest unanswered call has waited.
    pub waited: Duration,
}

impl std::fmt::Display for NotAnswering {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the {} mount", self.fs_type)?;
        if let Some(s) = &self.source {
            write!(f, " of {s}")?;
        }
        write!(
            f,
            " did not answer within {} s (a call has waited {} s): nothing on it was examined",
            MOUNT_TIMEOUT.as_secs(),
            self.waited.as_secs()
        )
    }
}

impl std::error::Error for NotAnswering {}

impl From<NotAnswering> for std::io::Error {
    fn from(e: NotAnswering) -> Self {
        std::io::Error::new(std::io::ErrorKind::TimedOut, e)
    }
}

/// A blocking call on a mount, with what it needs (descriptors are borrowed for the call: the
/// task that makes it works on copies of its own).
#[derive(Debug)]
pub enum Op<'a> {
    /// Opens the directory `chain` (path components, the first one may be a whole path) from
    /// `from` (the current directory when `None`), one component at a time, never following
    /// a symlink; answers the directory's descriptor and (device, inode).
    OpenDir {
        from: Option<BorrowedFd<'a>>,
        chain: Vec<OsString>,
    },
    /// One `getdents64` of the open directory `dir`: its entries (`.` and `..` included) and
    /// whether it ended.
    ReadDir { dir: BorrowedFd<'a> },
    /// `lstat` of `name` in `dir`: its mode.
    StatAt { dir: BorrowedFd<'a>, name: OsString },
    /// Asks of `name` in `dir` what judging it will: its status, then a prefix of a regular
    /// file's content (opened without blocking or following a link) or a symlink's text.
    Touch { dir: BorrowedFd<'a>, name: OsString },
    /// [`Op::Touch`] of a path named on its own (its directory opened by path).
    TouchPath { path: PathBuf },
    /// `lstat` of `path`, then `path` opened `O_PATH` (following symlinks): its mode, device
    /// and inode, and its real path (from the descriptor, which asks no file system). A
    /// symlink that leads nowhere answers its own mode, with no target (a `target_mode` of 0).
    Probe { path: PathBuf },
    /// One `read` of `fd` (a pipe, in tests: a call that waits until the test answers).
    #[cfg(test)]
    Read { fd: BorrowedFd<'a> },
}

/// What a call answered. `err` is the error of the call itself.
#[derive(Debug, Default)]
pub struct Answer {
    pub err: Option<std::io::Error>,
    pub fd: Option<OwnedFd>,
    /// `st_mode` (for [`Op::Probe`], of the `lstat`).
    pub mode: u32,
    pub dev: u64,
    pub ino: u64,
    /// [`Op::ReadDir`]: name, `d_type`, inode.
    pub entries: Vec<(OsString, u8, u64)>,
    /// [`Op::ReadDir`]: the end of the directory was reached.
    pub eof: bool,
    /// [`Op::Probe`]: the real path, and the mode of what it names.
    pub real: Option<PathBuf>,
    pub target_mode: u32,
}

impl Answer {
    /// The call's own result: `Ok(self)` unless it failed.
    pub fn ok(mut self) -> std::io::Result<Self> {
        match self.err.take() {
            Some(e) => Err(e),
            None => Ok(self),
        }
    }
}

/// How many tasks this thread has started (tests).
#[cfg(all(test, target_os = "linux"))]
pub(crate) fn tasks_started_here() -> usize {
    task::STARTED.with(|n| n.get())
}

/// Whether `pid` is a task this process started for a call and has not reaped yet. A task
/// starts with a copy of this process's descriptors and closes them at once: whoever reads
/// the table of descriptors at that moment sees this process's files open in the task too.
pub fn is_our_task(pid: i32) -> bool {
    #[cfg(target_os = "linux")]
    return task::LIVE.lock().unwrap().contains(&pid);
    #[cfg(not(target_os = "linux"))]
    {
        let _ = pid;
        false
    }
}

/// Makes `op`, a blocking call on `mount`: where it is made for a local mount (or none), and
/// in a task of its own where entering the mount may wait ([`Mount::may_wait`]), waited for at most [`MOUNT_TIMEOUT`] (see the module docs).
/// `Err` when the mount does not answer, or has not answered an earlier call yet.
pub fn call(mount: Option<&Mount>, op: Op<'_>) -> Result<Answer, NotAnswering> {
    match mount {
        Some(m) if m.may_wait() => call_on(Key::Mount(m.id, m.dev, m.point.clone()), m, op),
        _ => Ok(task::inline(op)),
    }
}

/// [`call`] for a call that starts at `path` and may go anywhere from there (following
/// symlinks), whatever mount `path` lies in: its own tasks, waited for at most
/// [`MOUNT_TIMEOUT`]. `mount` is what the error names (the mount `path` lies in, as written).
pub fn call_path(path: &Path, mount: Option<&Mount>, op: Op<'_>) -> Result<Answer, NotAnswering> {
    let unknown;
    let m = match mount {
        Some(m) => m,
        None => {
            unknown = Mount::unknown(path, "unknown");
            &unknown
        }
    };
    call_on(Key::Path(path.to_path_buf()), m, op)
}

/// Whether calls on `mount` fail at once now because an earlier one was not answered.
pub fn not_answering(mount: &Mount) -> Option<NotAnswering> {
    let key = Key::Mount(mount.id, mount.dev, mount.point.clone());
    let cell = cells()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get(&key)
        .cloned()?;
    let waited = cell.lock().unwrap_or_else(|e| e.into_inner()).stuck()?;
    Some(NotAnswering::of(mount, waited))
}

impl NotAnswering {
    fn of(m: &Mount, waited: Duration) -> Self {
        NotAnswering {
            point: m.point.clone(),
            fs_type: m.fs_type.clone(),
            source: m.source.clone(),
            waited,
        }
    }
}

/// What calls are kept apart for: a mount, or a path whose calls may go anywhere.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Key {
    Mount(u64, u64, PathBuf),
    Path(PathBuf),
}

/// The calls of one key that were abandoned and have not returned yet.
#[derive(Default)]
struct Cell {
    abandoned: Vec<task::Abandoned>,
}

impl Cell {
    /// How long the oldest abandoned call that has not returned has waited.
    fn stuck(&mut self) -> Option<Duration> {
        self.abandoned.retain_mut(|a| !a.reap());
        self.abandoned.iter().map(|a| a.since.elapsed()).max()
    }
}

type Cells = Mutex<HashMap<Key, Arc<Mutex<Cell>>>>;

fn cells() -> &'static Cells {
    static CELLS: OnceLock<Cells> = OnceLock::new();
    CELLS.get_or_init(Mutex::default)
}

fn call_on(key: Key, mount: &Mount, op: Op<'_>) -> Result<Answer, NotAnswering> {
    let cell = cells()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .entry(key)
        .or_default()
        .clone();
    if let Some(waited) = cell.lock().unwrap_or_else(|e| e.into_inner()).stuck() {
        return Err(NotAnswering::of(mount, waited));
    }
    match task::bounded(op, MOUNT_TIMEOUT) {
        Ok(a) => Ok(a),
        Err(abandoned) => {
            let waited = abandoned.since.elapsed();
            cell.lock()
                .unwrap_or_else(|e| e.into_inner())
                .abandoned
                .push(abandoned);
            Err(NotAnswering::of(mount, waited))
        }
    }
}

/// The tasks that make calls on mounts that may hang.
///
/// A call is made by a task that shares this process's memory, descriptors and working
/// directory but is not one of its threads (`clone(2)` with `CLONE_VM | CLONE_FILES |
/// CLONE_FS`, without `CLONE_THREAD`): a call the kernel cannot interrupt (a FUSE request its
/// daemon has taken, an NFS hard mount) blocks that task alone, and this process can still
/// exit. The task runs [`run`] only: system calls through rustix (no allocation, no
/// thread-local state, no panic), on buffers and copies of descriptors made before it
/// starts. Its state word says who owns the results: the task sets it to done when it
/// finishes, the caller to abandoned when the time is up; whoever comes second knows the
/// other's part (an abandoned task closes what it opened, and its memory is freed only once
/// it has exited).
mod task {
    use std::ffi::{CString, OsString};
    use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
    use std::os::unix::ffi::OsStringExt;
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::time::{Duration, Instant};

    use super::{Answer, Op};

    const RUNNING: u32 = 0;
    const DONE: u32 = 1;
    const ABANDONED: u32 = 2;

    /// The size of a directory read and of its parsed entries.
    const DIR_BUF: usize = 32 * 1024;
    /// What [`Op::Touch`] reads of a file (what judging reads: the dialects' content prefix).
    pub(super) const PREFIX: usize = 4096;
    /// The task's stack.
    #[cfg(target_os = "linux")]
    const STACK: usize = 256 * 1024;

    /// The tasks started and not reaped yet, by PID (see [`super::is_our_task`]).
    #[cfg(target_os = "linux")]
    pub(super) static LIVE: std::sync::Mutex<Vec<i32>> = std::sync::Mutex::new(Vec::new());

    #[cfg(test)]
    thread_local! {
        /// Tasks this thread has started (tests: what was asked in place and what was not).
        pub(crate) static STARTED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    }

    #[derive(Clone, Copy, PartialEq, Eq)]
    enum Kind {
        OpenDir,
        ReadDir,
        StatAt,
        Touch,
        TouchPath,
        Probe,
        #[cfg(test)]
        Read,
    }

    /// Everything a task reads and writes, made before it starts.
    struct Shared {
        state: AtomicU32,
        kind: Kind,
        /// A copy of the caller's descriptor (-1: the current directory), closed by the task.
        dir: RawFd,
        /// Path components (or one path), NUL-terminated.
        names: Vec<CString>,
        scratch: Vec<u8>,
        out: Vec<u8>,
        /// The task's end of the socket it answers on (in its own descriptor table).
        sock: RawFd,
        // Results.
        errno: i32,
        fd: RawFd,
        fd2: RawFd,
        mode: u32,
        mode2: u32,
        dev: u64,
        ino: u64,
        out_len: usize,
        eof: bool,
    }

    impl Shared {
        fn new(op: Op<'_>) -> std::io::Result<Box<Shared>> {
            let cstr = |s: OsString| {
                CString::new(s.into_vec())
                    .map_err(|_| std::io::Error::other("a path with a NUL byte"))
            };
            let dup = |fd: BorrowedFd<'_>| -> std::io::Result<RawFd> {
                let d = rustix::io::fcntl_dupfd_cloexec(fd, 0)?;
                Ok(std::os::fd::IntoRawFd::into_raw_fd(d))
            };
            let (kind, dir, names) = match op {
                Op::OpenDir { from, chain } => (
                    Kind::OpenDir,
                    from.map(dup).transpose()?,
                    chain.into_iter().map(cstr).collect::<Result<_, _>>()?,
                ),
                Op::ReadDir { dir } => (Kind::ReadDir, Some(dup(dir)?), Vec::new()),
                Op::StatAt { dir, name } => (Kind::StatAt, Some(dup(dir)?), vec![cstr(name)?]),
                Op::Touch { dir, name } => (Kind::Touch, Some(dup(dir)?), vec![cstr(name)?]),
                Op::TouchPath { path } => {
                    let parent = path
                        .parent()
                        .filter(|p| !p.as_os_str().is_empty())
                        .unwrap_or(std::path::Path::new("."));
                    let name = path.file_name().unwrap_or_default();
                    (
                        Kind::TouchPath,
                        None,
                        vec![cstr(parent.into())?, cstr(name.into())?],
                    )
                }
                Op::Probe { path } => {
                    let in_root = super::proc_root_path(&path);
                    let mut names = vec![cstr(path.into())?];
                    // Below a process's root, resolved within that root (see `Kind::Probe`).
                    if let Some((pid, rest)) = in_root {
                        let rest = rest.strip_prefix("/").unwrap_or(&rest);
                        let rest = if rest.as_os_str().is_empty() {
                            std::path::Path::new(".")
                        } else {
                            rest
                        };
                        names.push(cstr(format!("/proc/{pid}/root").into())?);
                        names.push(cstr(rest.into())?);
                    }
                    (Kind::Probe, None, names)
                }
                #[cfg(test)]
                Op::Read { fd } => (Kind::Read, Some(dup(fd)?), Vec::new()),
            };
            let (scratch, out) = match kind {
                Kind::ReadDir => (vec![0u8; DIR_BUF], vec![0u8; DIR_BUF * 2]),
                Kind::Touch | Kind::TouchPath => (vec![0u8; PREFIX.max(4096)], Vec::new()),
                #[cfg(test)]
                Kind::Read => (vec![0u8; 16], Vec::new()),
                _ => (Vec::new(), Vec::new()),
            };
            Ok(Box::new(Shared {
                state: AtomicU32::new(RUNNING),
                kind,
                dir: dir.unwrap_or(-1),
                names,
                scratch,
                out,
                sock: -1,
                errno: 0,
                fd: -1,
                fd2: -1,
                mode: 0,
                mode2: 0,
                dev: 0,
                ino: 0,
                out_len: 0,
                eof: false,
            }))
        }

        /// The answer, with the descriptors the call opened (`fds`: as received from a task;
        /// `None`: the call was made here, and they are in `self`).
        fn answer(&mut self, fds: Option<[Option<OwnedFd>; 2]>) -> Answer {
            let take = |fd: &mut RawFd| {
                // SAFETY: a descriptor of ours that the call opened (made here).
                (*fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(std::mem::replace(fd, -1)) })
            };
            let [fd, _] = match fds {
                Some(f) => {
                    // The task's numbers mean nothing here.
                    (self.fd, self.fd2) = (-1, -1);
                    f
                }
                None => [take(&mut self.fd), take(&mut self.fd2)],
            };
            let mut a = Answer {
                err: (self.errno != 0).then(|| std::io::Error::from_raw_os_error(self.errno)),
                mode: self.mode,
                target_mode: self.mode2,
                dev: self.dev,
                ino: self.ino,
                eof: self.eof,
                ..Answer::default()
            };
            if self.kind == Kind::ReadDir {
                a.entries = parse_entries(self.out.get(..self.out_len).unwrap_or_default());
            }
            if self.kind == Kind::Probe {
                // The O_PATH descriptor: only its real path is wanted.
                a.real = fd.and_then(|fd| {
                    std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd()))
                        .ok()
                        .filter(|p| p.is_absolute())
                });
            } else {
                a.fd = fd;
            }
            a
        }
    }

    impl Drop for Shared {
        fn drop(&mut self) {
            for fd in [self.fd, self.fd2] {
                if fd >= 0 {
                    // SAFETY: a descriptor the task opened that no answer took.
                    drop(unsafe { OwnedFd::from_raw_fd(fd) });
                }
            }
        }
    }

    /// Entries as the task writes them: inode (8 bytes), type (1), name length (2), name.
    fn parse_entries(mut b: &[u8]) -> Vec<(OsString, u8, u64)> {
        let mut out = Vec::new();
        while b.len() >= 11 {
            let ino = u64::from_ne_bytes(b[..8].try_into().unwrap_or_default());
            let t = b[8];
            let len = usize::from(u16::from_ne_bytes([b[9], b[10]]));
            let Some(name) = b.get(11..11 + len) else {
                break;
            };
            out.push((OsString::from_vec(name.to_vec()), t, ino));
            b = &b[11 + len..];
        }
        out
    }

    /// Makes the call here and now (a mount that does not hang).
    pub fn inline(op: Op<'_>) -> Answer {
        match Shared::new(op) {
            Ok(mut s) => {
                run(&mut s);
                s.answer(None)
            }
            Err(e) => Answer {
                err: Some(e),
                ..Answer::default()
            },
        }
    }

    /// A task that was not waited for: it is reaped, and its memory freed, once it exits.
    pub struct Abandoned {
        pub since: Instant,
        #[cfg(target_os = "linux")]
        pid: i32,
        #[cfg(target_os = "linux")]
        shared: *mut Shared,
        #[cfg(target_os = "linux")]
        stack: *mut [u8],
        /// Our end of its socket (closed once it has exited).
        #[cfg(target_os = "linux")]
        _sock: OwnedFd,
    }

    // SAFETY: the pointers are only dereferenced (freed) once the task has exited.
    unsafe impl Send for Abandoned {}

    impl Abandoned {
        /// Whether the task has exited (its memory is then freed).
        pub fn reap(&mut self) -> bool {
            #[cfg(target_os = "linux")]
            {
                if !reaped(self.pid, libc::WNOHANG) {
                    return false;
                }
                // SAFETY: the task has exited: nothing uses its memory any more.
                unsafe {
                    let mut s = Box::from_raw(self.shared);
                    // Numbers of the task's own descriptor table, which is gone: not ours.
                    (s.fd, s.fd2) = (-1, -1);
                    drop(s);
                    drop(Box::from_raw(self.stack));
                }
                true
            }
            #[cfg(not(target_os = "linux"))]
            true
        }
    }

    /// Whether the task `pid` has exited and is reaped now (`flags`: `WNOHANG` or 0, to wait).
    #[cfg(target_os = "linux")]
    fn reaped(pid: i32, flags: libc::c_int) -> bool {
        loop {
            let mut status = 0;
            // SAFETY: waitpid on our own child task (`__WCLONE`: it sends no SIGCHLD).
            let r = unsafe { libc::waitpid(pid, &mut status, flags | libc::__WCLONE) };
            if r == pid {
                LIVE.lock().unwrap().retain(|&p| p != pid);
                return true;
            }
            if r < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            return false;
        }
    }

    /// Makes the call in a task of its own, waiting at most `timeout`; the task is abandoned
    /// (`Err`) when it has not answered by then.
    ///
    /// The task shares our memory and working directory, not our descriptor table: it gets a
    /// copy, in which it closes everything but what the call needs (a pipe it kept would not
    /// see its end while the task is blocked), and sends back what the call opened over a
    /// socket (`SCM_RIGHTS`), with one byte that says it is done.
    #[cfg(target_os = "linux")]
    pub fn bounded(op: Op<'_>, timeout: Duration) -> Result<Answer, Abandoned> {
        let since = Instant::now();
        let mut shared = match Shared::new(op) {
            Ok(s) => s,
            Err(e) => {
                return Ok(Answer {
                    err: Some(e),
                    ..Answer::default()
                });
            }
        };
        let mut ends = [0 as libc::c_int; 2];
        // SAFETY: socketpair writes two descriptors into `ends`.
        let made = unsafe {
            libc::socketpair(
                libc::AF_UNIX,
                libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC,
                0,
                ends.as_mut_ptr(),
            )
        };
        if made != 0 {
            // No way to hear a task: make the call here.
            run(&mut shared);
            return Ok(shared.answer(None));
        }
        // SAFETY: both ends are ours; the task gets a copy of the second.
        let ours = unsafe { OwnedFd::from_raw_fd(ends[0]) };
        // SAFETY: as above, the second end, owned once.
        let theirs = unsafe { OwnedFd::from_raw_fd(ends[1]) };
        shared.sock = theirs.as_raw_fd();
        // Our copy of the call's directory: the task has its own once started.
        let dir = shared.dir;
        #[cfg(test)]
        STARTED.with(|n| n.set(n.get() + 1));
        let stack = Box::into_raw(vec![0u8; STACK].into_boxed_slice());
        let shared = Box::into_raw(shared);
        // The list of tasks is held while the task starts: it is in it before it runs.
        let mut live = LIVE.lock().unwrap();
        // SAFETY: the task runs `task_main` on its own stack (its top, 16-aligned), sharing our
        // memory and working directory; `shared` and `stack` stay allocated until it has
        // exited (below, or when an abandoned task is reaped).
        let pid = unsafe {
            let top = (stack as *mut u8).add(STACK);
            let top = top.sub(top as usize % 16);
            libc::clone(
                task_main,
                top.cast(),
                libc::CLONE_VM | libc::CLONE_FS,
                shared.cast(),
            )
        };
        if pid > 0 {
            live.push(pid);
        }
        drop(live);
        drop(theirs);
        if pid < 0 {
            // SAFETY: no task was started: the memory is ours alone.
            let mut s = unsafe { Box::from_raw(shared) };
            // SAFETY: the same: the stack was never used.
            unsafe { drop(Box::from_raw(stack)) };
            run(&mut s);
            return Ok(s.answer(None));
        }
        if dir >= 0 {
            // SAFETY: our copy of the directory; the task works on its own.
            drop(unsafe { OwnedFd::from_raw_fd(dir) });
        }
        let answered = wait_readable(&ours, timeout.saturating_sub(since.elapsed()));
        // SAFETY: `state` is an atomic the task also uses.
        let state = unsafe { &(*shared).state };
        let abandoned = !answered
            && state
                .compare_exchange(RUNNING, ABANDONED, Ordering::AcqRel, Ordering::Acquire)
                .is_ok();
        if abandoned {
            return Err(Abandoned {
                since,
                pid,
                shared,
                stack,
                _sock: ours,
            });
        }
        let fds = receive_fds(&ours);
        reaped(pid, 0);
        // SAFETY: the task has exited.
        let mut s = unsafe { Box::from_raw(shared) };
        // SAFETY: the task that ran on this stack has exited.
        unsafe { drop(Box::from_raw(stack)) };
        Ok(s.answer(Some(fds)))
    }

    #[cfg(not(target_os = "linux"))]
    pub fn bounded(op: Op<'_>, _timeout: Duration) -> Result<Answer, Abandoned> {
        Ok(inline(op))
    }

    /// Waits until `fd` is readable, at most `timeout`.
    #[cfg(target_os = "linux")]
    fn wait_readable(fd: &OwnedFd, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        loop {
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            let ms = (deadline - now).as_millis().clamp(1, i32::MAX as u128) as libc::c_int;
            let mut fds = [libc::pollfd {
                fd: fd.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            }];
            // SAFETY: poll on one descriptor of ours.
            let r = unsafe { libc::poll(fds.as_mut_ptr(), 1, ms) };
            if r > 0 {
                return true;
            }
            if r < 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
                return false;
            }
        }
    }

    /// The descriptors (at most two) that came with the task's answer on `sock`.
    #[cfg(target_os = "linux")]
    fn receive_fds(sock: &OwnedFd) -> [Option<OwnedFd>; 2] {
        let mut out = [None, None];
        let mut byte = [0u8; 1];
        let mut iov = libc::iovec {
            iov_base: byte.as_mut_ptr().cast(),
            iov_len: 1,
        };
        // Room for two descriptors (u64 words, aligned for cmsghdr).
        let mut control = [0u64; 8];
        // SAFETY: a msghdr over our own buffers, filled by recvmsg.
        unsafe {
            let mut msg: libc::msghdr = std::mem::zeroed();
            msg.msg_iov = &mut iov;
            msg.msg_iovlen = 1;
            msg.msg_control = control.as_mut_ptr().cast();
            msg.msg_controllen = std::mem::size_of_val(&control) as _;
            if libc::recvmsg(sock.as_raw_fd(), &mut msg, libc::MSG_CMSG_CLOEXEC) <= 0 {
                return out;
            }
            let mut c = libc::CMSG_FIRSTHDR(&msg);
            while !c.is_null() {
                if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_RIGHTS {
                    let data = libc::CMSG_DATA(c).cast::<libc::c_int>();
                    let n = ((*c).cmsg_len as usize - libc::CMSG_LEN(0) as usize)
                        / std::mem::size_of::<libc::c_int>();
                    for (i, slot) in out.iter_mut().enumerate().take(n) {
                        *slot = Some(OwnedFd::from_raw_fd(data.add(i).read_unaligned()));
                    }
                }
                c = libc::CMSG_NXTHDR(&msg, c);
            }
        }
        out
    }

    /// The task: closes every descriptor the call does not need, makes the call, then sends
    /// its answer (one byte, and what it opened).
    #[cfg(target_os = "linux")]
    extern "C" fn task_main(arg: *mut libc::c_void) -> libc::c_int {
        // SAFETY: `arg` is the `Shared` the caller made for this task and keeps until it exits;
        // the caller reads the results only after the answer (or never, once abandoned).
        let s = unsafe { &mut *arg.cast::<Shared>() };
        // No signal handler of the process runs here (they were written for its threads).
        let all: u64 = !0;
        // SAFETY: rt_sigprocmask(SIG_SETMASK) of this task alone, from a mask on its stack.
        unsafe {
            libc::syscall(
                libc::SYS_rt_sigprocmask,
                libc::SIG_SETMASK,
                &all as *const u64,
                std::ptr::null_mut::<u64>(),
                8usize,
            );
        }
        // Our copy of the descriptor table: keep the call's directory and the socket only.
        let mut keep = [s.dir, s.sock];
        keep.sort_unstable();
        let mut first = 0i64;
        for k in keep {
            if k >= 0 {
                close_range(first, i64::from(k) - 1);
                first = i64::from(k) + 1;
            }
        }
        close_range(first, i64::from(u32::MAX));
        run(s);
        let _ = s
            .state
            .compare_exchange(RUNNING, DONE, Ordering::AcqRel, Ordering::Acquire);
        send_answer(s.sock, [s.fd, s.fd2]);
        0
    }

    /// `close_range(first, last)` (a raw system call: the task has no errno of its own to
    /// spare, and this one can only fail on kernels without it).
    #[cfg(target_os = "linux")]
    fn close_range(first: i64, last: i64) {
        if first <= last {
            // SAFETY: closes descriptors of the task's own table.
            unsafe {
                libc::syscall(libc::SYS_close_range, first as u32, last as u32, 0u32);
            }
        }
    }

    /// Sends one byte and the descriptors `fds` (those that are open) on `sock`.
    #[cfg(target_os = "linux")]
    fn send_answer(sock: RawFd, fds: [RawFd; 2]) {
        let mut byte = [1u8; 1];
        let mut iov = libc::iovec {
            iov_base: byte.as_mut_ptr().cast(),
            iov_len: 1,
        };
        let open: [RawFd; 2] = match fds {
            [a, b] if a >= 0 && b >= 0 => [a, b],
            [a, _] if a >= 0 => [a, -1],
            [_, b] if b >= 0 => [b, -1],
            _ => [-1, -1],
        };
        let n = open.iter().filter(|f| **f >= 0).count();
        let mut control = [0u64; 8];
        // SAFETY: a msghdr over buffers of this task's stack; sendmsg as a raw system call.
        unsafe {
            let mut msg: libc::msghdr = std::mem::zeroed();
            msg.msg_iov = &mut iov;
            msg.msg_iovlen = 1;
            if n > 0 {
                let len = libc::CMSG_LEN((n * std::mem::size_of::<libc::c_int>()) as u32);
                msg.msg_control = control.as_mut_ptr().cast();
                msg.msg_controllen =
                    libc::CMSG_SPACE((n * std::mem::size_of::<libc::c_int>()) as u32) as _;
                let c = libc::CMSG_FIRSTHDR(&msg);
                (*c).cmsg_level = libc::SOL_SOCKET;
                (*c).cmsg_type = libc::SCM_RIGHTS;
                (*c).cmsg_len = len as _;
                let data = libc::CMSG_DATA(c).cast::<libc::c_int>();
                for (i, fd) in open.iter().take(n).enumerate() {
                    data.add(i).write_unaligned(*fd);
                }
            }
            libc::syscall(
                libc::SYS_sendmsg,
                sock,
                &msg as *const libc::msghdr,
                libc::MSG_NOSIGNAL,
            );
        }
    }

    /// The call itself: system calls only, on what `s` holds (see the module docs).
    fn run(s: &mut Shared) {
        use rustix::fs::{AtFlags, FileType, Mode, OFlags};
        let r = (|| -> rustix::io::Result<()> {
            // SAFETY: `dir` is our own copy, closed here when the call is over.
            let own = (s.dir >= 0).then(|| unsafe { OwnedFd::from_raw_fd(s.dir) });
            s.dir = -1;
            let dir = own.as_ref().map(|d| d.as_fd_borrowed());
            let at = dir.unwrap_or(rustix::fs::CWD);
            let dir_flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
            match s.kind {
                Kind::OpenDir => {
                    let mut cur: Option<OwnedFd> = None;
                    for name in &s.names {
                        let from = cur.as_ref().map(|d| d.as_fd_borrowed()).unwrap_or(at);
                        cur = Some(rustix::fs::openat(
                            from,
                            name.as_c_str(),
                            dir_flags,
                            Mode::empty(),
                        )?);
                    }
                    let Some(d) = cur else {
                        return Err(rustix::io::Errno::INVAL);
                    };
                    let st = rustix::fs::fstat(&d)?;
                    s.mode = st.st_mode as u32;
                    s.dev = st.st_dev as u64;
                    s.ino = st.st_ino as u64;
                    s.fd = std::os::fd::IntoRawFd::into_raw_fd(d);
                }
                Kind::ReadDir => {
                    let Some(d) = dir else {
                        return Err(rustix::io::Errno::BADF);
                    };
                    // SAFETY: `scratch` is a buffer of initialised bytes; RawDir only writes it.
                    let buf = unsafe {
                        std::slice::from_raw_parts_mut(
                            s.scratch.as_mut_ptr().cast::<std::mem::MaybeUninit<u8>>(),
                            s.scratch.len(),
                        )
                    };
                    let mut rd = rustix::fs::RawDir::new(d, buf);
                    let mut at_out = 0usize;
                    loop {
                        let Some(e) = rd.next() else {
                            s.eof = true;
                            break;
                        };
                        let e = e?;
                        let name = e.file_name().to_bytes();
                        let t = file_type_byte(e.file_type());
                        let need = 11 + name.len();
                        let Some(slot) = s.out.get_mut(at_out..at_out + need) else {
                            break;
                        };
                        slot[..8].copy_from_slice(&e.ino().to_ne_bytes());
                        slot[8] = t;
                        slot[9..11].copy_from_slice(&(name.len() as u16).to_ne_bytes());
                        slot[11..].copy_from_slice(name);
                        at_out += need;
                        if rd.is_buffer_empty() {
                            break;
                        }
                    }
                    s.out_len = at_out;
                }
                Kind::StatAt => {
                    let name = s.names.first().ok_or(rustix::io::Errno::INVAL)?;
                    let st = rustix::fs::statat(at, name.as_c_str(), AtFlags::SYMLINK_NOFOLLOW)?;
                    s.mode = st.st_mode as u32;
                    s.dev = st.st_dev as u64;
                    s.ino = st.st_ino as u64;
                }
                Kind::Touch | Kind::TouchPath => {
                    let (from, name) = if s.kind == Kind::TouchPath {
                        let parent = s.names.first().ok_or(rustix::io::Errno::INVAL)?;
                        let p = rustix::fs::openat(
                            rustix::fs::CWD,
                            parent.as_c_str(),
                            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
                            Mode::empty(),
                        )?;
                        (Some(p), s.names.get(1).ok_or(rustix::io::Errno::INVAL)?)
                    } else {
                        (None, s.names.first().ok_or(rustix::io::Errno::INVAL)?)
                    };
                    let d = from.as_ref().map(|d| d.as_fd_borrowed()).unwrap_or(at);
                    let st = rustix::fs::statat(d, name.as_c_str(), AtFlags::SYMLINK_NOFOLLOW)?;
                    s.mode = st.st_mode as u32;
                    match FileType::from_raw_mode(st.st_mode) {
                        FileType::RegularFile => {
                            let flags = OFlags::RDONLY
                                | OFlags::NONBLOCK
                                | OFlags::NOFOLLOW
                                | OFlags::NOCTTY
                                | OFlags::CLOEXEC;
                            let f = rustix::fs::openat(d, name.as_c_str(), flags, Mode::empty())?;
                            rustix::io::read(&f, &mut s.scratch[..])?;
                        }
                        FileType::Symlink => {
                            rustix::fs::readlinkat_raw(d, name.as_c_str(), &mut s.scratch[..])?;
                        }
                        _ => {}
                    }
                }
                Kind::Probe => {
                    let path = s.names.first().ok_or(rustix::io::Errno::INVAL)?;
                    // A path below a process's root (`/proc/PID/root`, names 1 and 2) is
                    // resolved within that root: an absolute symlink there leads to the
                    // process's own `/`, not ours (where the kernel has no `openat2`, as any
                    // path).
                    let open = |flags: OFlags| match (s.names.get(1), s.names.get(2)) {
                        (Some(root), Some(rest)) => {
                            let root = rustix::fs::openat(
                                rustix::fs::CWD,
                                root.as_c_str(),
                                OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
                                Mode::empty(),
                            )?;
                            match rustix::fs::openat2(
                                &root,
                                rest.as_c_str(),
                                flags,
                                Mode::empty(),
                                rustix::fs::ResolveFlags::IN_ROOT,
                            ) {
                                Err(rustix::io::Errno::NOSYS) => rustix::fs::openat(
                                    rustix::fs::CWD,
                                    path.as_c_str(),
                                    flags,
                                    Mode::empty(),
                                ),
                                other => other,
                            }
                        }
                        _ => rustix::fs::openat(
                            rustix::fs::CWD,
                            path.as_c_str(),
                            flags,
                            Mode::empty(),
                        ),
                    };
                    let st = rustix::fs::fstat(open(
                        OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                    )?)?;
                    s.mode = st.st_mode as u32;
                    let f = match open(OFlags::PATH | OFlags::CLOEXEC) {
                        Ok(f) => f,
                        // A symlink that leads nowhere (an emacs lock): the link itself is
                        // the answer, with no target.
                        Err(_) if FileType::from_raw_mode(st.st_mode) == FileType::Symlink => {
                            return Ok(());
                        }
                        Err(e) => return Err(e),
                    };
                    let st = rustix::fs::fstat(&f)?;
                    s.mode2 = st.st_mode as u32;
                    s.dev = st.st_dev as u64;
                    s.ino = st.st_ino as u64;
                    s.fd = std::os::fd::IntoRawFd::into_raw_fd(f);
                }
                #[cfg(test)]
                Kind::Read => {
                    let d = dir.ok_or(rustix::io::Errno::BADF)?;
                    s.out_len = rustix::io::read(d, &mut s.scratch[..])?;
                }
            }
            Ok(())
        })();
        if let Err(e) = r {
            s.errno = e.raw_os_error();
        }
    }

    trait Borrowed {
        fn as_fd_borrowed(&self) -> BorrowedFd<'_>;
    }

    impl Borrowed for OwnedFd {
        fn as_fd_borrowed(&self) -> BorrowedFd<'_> {
            std::os::fd::AsFd::as_fd(self)
        }
    }

    /// `d_type` as a byte (DT_DIR 4, DT_UNKNOWN 0, ...).
    fn file_type_byte(t: rustix::fs::FileType) -> u8 {
        use rustix::fs::FileType as T;
        match t {
            T::Fifo => 1,
            T::CharacterDevice => 2,
            T::Directory => 4,
            T::BlockDevice => 6,
            T::RegularFile => 8,
            T::Symlink => 10,
            T::Socket => 12,
            _ => 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_an_overlays_layers_from_its_super_options() {
        // As mount(8) gives them (`\:` a colon in a name, its backslash written `\134` by the
        // table, a comma `\054`), and as the new mount API's one option a layer.
        let text = b"90 57 0:43 / / rw - overlay overlay rw,lowerdir=/s/l/A:/s/l/B\\134:x,upperdir=/s/my\\054dir/diff,workdir=/s/w,uuid=on\n\
            91 57 0:44 / /m rw - overlay overlay rw,lowerdir+=/a,lowerdir+=/b,datadir+=/d,upperdir=/u,workdir=/w\n\
            92 57 0:45 / /n rw - overlay overlay ro,lowerdir=/only\n\
            93 57 254:0 / /x rw - ext4 /dev/vda rw,lowerdir=/not\n";
        let layers: Vec<Vec<PathBuf>> = parse_mountinfo(text)
            .into_iter()
            .map(|m| m.layers)
            .collect();
        let paths = |v: &[&str]| v.iter().map(PathBuf::from).collect::<Vec<_>>();
        assert_eq!(layers[0], paths(&["/s/my,dir/diff", "/s/l/A", "/s/l/B:x"]));
        assert_eq!(layers[1], paths(&["/u", "/a", "/b", "/d"]));
        assert_eq!(layers[2], paths(&["/only"]));
        assert!(layers[3].is_empty());
    }

    #[test]
    fn parses_mountinfo() {
        let text = b"22 1 0:21 / /proc rw,nosuid - proc proc rw\n\
            36 25 8:1 / / rw - ext4 /dev/sda1 rw\n\
            40 36 0:33 / /mnt/my\\040disk rw shared:1 - fuse.sshfs root@host:/srv rw\n\
            41 36 0:34 / /net/home rw - nfs4 server:/home rw\n";
        let t = MountTable::parse(text);
        assert_eq!(t.at(Path::new("/proc")).unwrap().fs_type, "proc");
        let ssh = t.at(Path::new("/mnt/my disk")).unwrap();
        assert_eq!(ssh.fs_type, "fuse.sshfs");
        assert_eq!(ssh.id, 40);
        assert_eq!(ssh.dev, makedev(0, 33));
        assert!(ssh.may_hang());
        assert_eq!(
            ssh.info(),
            FsInfo::new(FsKind::Fuse("fuse.sshfs".into()), true)
        );
        let nfs = t
            .of_path(Path::new("/net/home/alice/.git/index.lock"))
            .unwrap();
        assert_eq!(nfs.point, Path::new("/net/home"));
        assert!(nfs.may_hang() && nfs.info().network);
        let root = t.of_path(Path::new("/tmp/x.pid")).unwrap();
        assert_eq!(root.fs_type, "ext4");
        assert!(!root.may_hang());
        assert_eq!(
            t.of_dev(makedev(0, 34)).unwrap().point,
            Path::new("/net/home")
        );
    }

    #[test]
    fn another_processes_mounts_are_seen_below_its_root_and_a_way_through_them_is_judged() {
        let mut t = MountTable::parse(b"36 25 8:1 / / rw - ext4 /dev/sda1 rw\n");
        let base = Path::new("/proc/4242/root");
        let theirs = [
            (1, Path::new("/"), "overlay", Some("overlay")),
            (2, Path::new("/run"), "tmpfs", None),
            (
                3,
                Path::new("/srv/data"),
                "fuse.sshfs",
                Some("root@host:/data"),
            ),
            // Mounted over: the top mount at a point is the one a path goes through.
            (4, Path::new("/mnt"), "nfs4", Some("server:/x")),
            (5, Path::new("/mnt"), "tmpfs", None),
        ];
        let theirs = theirs.map(|(dev, point, fs_type, source)| Mount {
            id: 7,
            dev,
            root: PathBuf::from("/"),
            point: point.to_path_buf(),
            fs_type: fs_type.into(),
            source: source.map(Into::into),
            layers: Vec::new(),
        });
        t.add_seen_through(base, &theirs);
        assert_eq!(t.at(base).unwrap().fs_type, "overlay");
        assert_eq!(
            t.of_path(Path::new("/proc/4242/root/run/app.pid"))
                .unwrap()
                .fs_type,
            "tmpfs"
        );
        let ssh = t.at(Path::new("/proc/4242/root/srv/data")).unwrap();
        assert_eq!(ssh.source.as_deref(), Some("root@host:/data"));
        assert!(ssh.may_hang());
        // Ours are unchanged.
        assert_eq!(t.of_path(Path::new("/tmp")).unwrap().fs_type, "ext4");

        let local = |p: &str| t.local_way(base, Path::new(p));
        assert!(local("/proc/4242/root/run"));
        assert!(local("/proc/4242/root/tmp"));
        assert!(local("/proc/4242/root/srv"));
        assert!(local("/proc/4242/root/mnt/lock"));
        assert!(!local("/proc/4242/root/srv/data"));
        assert!(!local("/proc/4242/root/srv/data/lock"));
        // Not below the base, or a base whose mounts are not known.
        assert!(!local("/tmp"));
        assert!(!t.local_way(Path::new("/proc/77/root"), Path::new("/proc/77/root/run")));
    }

    fn mount(id: u64) -> Mount {
        Mount {
            id,
            dev: u64::MAX - id,
            root: PathBuf::from("/"),
            point: PathBuf::from(format!("/test/mount-{id}")),
            fs_type: "fuse.test".into(),
            source: Some("test:".into()),
            layers: Vec::new(),
        }
    }

    #[test]
    fn a_call_that_does_not_answer_is_abandoned_and_the_mount_fails_fast_until_it_answers() {
        use std::io::Write;
        use std::os::fd::AsFd;
        let m = mount(1_000_001);
        let (r, w) = std::io::pipe().unwrap();
        (&w).write_all(b"a").unwrap();
        let a = call(Some(&m), Op::Read { fd: r.as_fd() }).unwrap();
        assert!(a.err.is_none());
        // Nothing to read: the call waits, and is abandoned at the bound.
        let started = Instant::now();
        let e = call(Some(&m), Op::Read { fd: r.as_fd() }).unwrap_err();
        let took = started.elapsed();
        assert!(
            took >= MOUNT_TIMEOUT && took < MOUNT_TIMEOUT * 2,
            "{took:?}"
        );
        assert_eq!(e.point, m.point);
        assert!(e.to_string().contains("did not answer within 5 s"), "{e}");
        // The caller's descriptor can go: the task works on a copy of its own.
        drop(r);
        // Later calls fail at once.
        let dir = std::fs::File::open("/").unwrap();
        let started = Instant::now();
        assert!(call(Some(&m), Op::ReadDir { dir: dir.as_fd() }).is_err());
        assert!(started.elapsed() < Duration::from_secs(1));
        assert!(not_answering(&m).is_some());
        // Another mount is not concerned.
        let a = call(Some(&mount(1_000_002)), Op::ReadDir { dir: dir.as_fd() }).unwrap();
        assert!(
            a.entries.iter().any(|(n, t, _)| n == "proc" && *t == 4),
            "{a:?}"
        );
        // The server answers again: so does the mount.
        (&w).write_all(b"b").unwrap();
        wait(|| not_answering(&m).is_none());
        assert!(
            call(
                Some(&m),
                Op::StatAt {
                    dir: dir.as_fd(),
                    name: "proc".into()
                }
            )
            .is_ok()
        );
    }

    #[test]
    fn calls_answer_what_the_walker_asks() {
        use std::os::fd::AsFd;
        let m = mount(1_000_003);
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::fs::write(dir.path().join("sub/x.pid"), "1\n").unwrap();
        std::os::unix::fs::symlink("target", dir.path().join("sub/link")).unwrap();
        let chain = vec![dir.path().as_os_str().to_os_string(), "sub".into()];
        let a = call(Some(&m), Op::OpenDir { from: None, chain })
            .unwrap()
            .ok()
            .unwrap();
        let sub = a.fd.unwrap();
        use std::os::unix::fs::MetadataExt;
        let meta = std::fs::metadata(dir.path().join("sub")).unwrap();
        assert_eq!((a.dev, a.ino), (meta.dev(), meta.ino()));
        let mut names = Vec::new();
        loop {
            let a = call(Some(&m), Op::ReadDir { dir: sub.as_fd() })
                .unwrap()
                .ok()
                .unwrap();
            names.extend(
                a.entries
                    .into_iter()
                    .filter(|(n, _, _)| n != "." && n != "..")
                    .map(|(n, t, _)| (n, t)),
            );
            if a.eof {
                break;
            }
        }
        names.sort();
        assert_eq!(names, vec![("link".into(), 10), ("x.pid".into(), 8)]);
        for name in ["x.pid", "link"] {
            let a = call(
                Some(&m),
                Op::Touch {
                    dir: sub.as_fd(),
                    name: name.into(),
                },
            )
            .unwrap();
            assert!(a.err.is_none(), "{a:?}");
        }
        // A symlink on the way is not followed.
        let chain = vec![
            dir.path().as_os_str().to_os_string(),
            "sub".into(),
            "link".into(),
        ];
        let a = call(Some(&m), Op::OpenDir { from: None, chain }).unwrap();
        assert!(a.err.is_some() && a.fd.is_none());
        let p = call(
            Some(&m),
            Op::Probe {
                path: dir.path().join("sub/../sub"),
            },
        )
        .unwrap();
        assert_eq!(
            p.real.as_deref(),
            Some(
                std::fs::canonicalize(dir.path().join("sub"))
                    .unwrap()
                    .as_path()
            )
        );
        assert!(
            call(
                Some(&m),
                Op::TouchPath {
                    path: dir.path().join("sub/x.pid")
                }
            )
            .unwrap()
            .err
            .is_none()
        );
    }

    #[test]
    fn a_touch_reads_what_judging_reads() {
        assert_eq!(task::PREFIX, crate::dialect::CONTENT_PREFIX);
    }

    #[test]
    fn local_mounts_are_called_in_place() {
        use std::os::fd::AsFd;
        let mut m = mount(1_000_004);
        m.fs_type = "ext4".into();
        let dir = std::fs::File::open("/").unwrap();
        let a = call(
            Some(&m),
            Op::StatAt {
                dir: dir.as_fd(),
                name: "proc".into(),
            },
        )
        .unwrap();
        assert!(a.err.is_none());
        assert!(
            call(
                None,
                Op::StatAt {
                    dir: dir.as_fd(),
                    name: "nonexistent-x".into()
                }
            )
            .unwrap()
            .err
            .is_some()
        );
    }

    pub(super) fn wait(ok: impl Fn() -> bool) {
        let start = Instant::now();
        while !ok() {
            assert!(start.elapsed() < Duration::from_secs(10));
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}
