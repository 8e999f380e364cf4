//! File systems: what kind a lock lives on, whether it is a network file system, and the pseudo
//! file systems the walker must not descend into. The engine needs the same answers for the
//! directory it locks in, so they live in locksmith's system facts ([`locksmith_sys::fs`]).
//!
//! This module adds what a scan needs to survive a mount that stops answering (an NFS or FUSE
//! server gone, or stopped): the mount table ([`MountTable`], from `/proc/self/mountinfo`, read
//! without touching any mount), which mounts may hang ([`may_hang`]: every type not known to be
//! a file system of this kernel on a local device), and `call`: a blocking call ([`Op`]) on
//! such a mount is made by a task of its own ([`locksmith_sys::bounded`]) and waited for at
//! most [`MOUNT_TIMEOUT`], keyed by the mount (`call_path`: by a path whose calls may go
//! anywhere).
//!
//! The calls themselves are made for the rest of locksmith by [`super::reach`] only: no code
//! outside `probe` names `call`, `call_path`, `not_answering` or the bounded executor
//! (a test of `crate::architecture` checks it).
//!
//! Invariants:
//! - a call that gets no answer in time is abandoned, never waited for again, and the mount
//!   is *not answering*: every later call on it fails at once ([`NotAnswering`]), without a
//!   new task, until the abandoned calls return (the server answers again);
//! - calls on a local file system are made where they are asked, unchanged.

use std::collections::HashMap;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub use locksmith_sys::bounded::Answer;
pub(in crate::probe) use locksmith_sys::bounded::Op;
use locksmith_sys::bounded::{self, Key};
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
    /// there is asked through a bounded task (`call`).
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

/// How many tasks this thread has started for calls (tests).
#[cfg(all(test, target_os = "linux"))]
pub(crate) fn tasks_started_here() -> usize {
    bounded::tasks_started_here()
}

/// Whether `pid` is a task this process started for a call and has not reaped yet (see
/// [`bounded::is_our_task`]).
pub fn is_our_task(pid: i32) -> bool {
    bounded::is_our_task(pid)
}

/// Makes `op`, a blocking call on `mount`: where it is made for a local mount (or none), and
/// in a task of its own where entering the mount may wait ([`Mount::may_wait`]), waited for at most [`MOUNT_TIMEOUT`] (see the module docs).
/// `Err` when the mount does not answer, or has not answered an earlier call yet.
pub(in crate::probe) fn call(mount: Option<&Mount>, op: Op<'_>) -> Result<Answer, NotAnswering> {
    match mount {
        Some(m) if m.may_wait() => call_on(key_of(m), m, op),
        _ => Ok(bounded::inline(op)),
    }
}

/// `call` for a call that starts at `path` and may go anywhere from there (following
/// symlinks), whatever mount `path` lies in: its own tasks, waited for at most
/// [`MOUNT_TIMEOUT`]. `mount` is what the error names (the mount `path` lies in, as written).
pub(in crate::probe) fn call_path(
    path: &Path,
    mount: Option<&Mount>,
    op: Op<'_>,
) -> Result<Answer, NotAnswering> {
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
pub(in crate::probe) fn not_answering(mount: &Mount) -> Option<NotAnswering> {
    let waited = bounded::stuck(&key_of(mount))?;
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

/// The key of the calls on `m`.
fn key_of(m: &Mount) -> Key {
    Key::Mount {
        id: m.id,
        dev: m.dev,
        point: m.point.clone(),
    }
}

fn call_on(key: Key, mount: &Mount, op: Op<'_>) -> Result<Answer, NotAnswering> {
    bounded::call(&key, op, MOUNT_TIMEOUT).map_err(|e| NotAnswering::of(mount, e.waited))
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
    fn a_touch_reads_what_judging_reads() {
        assert_eq!(bounded::TOUCH_PREFIX, crate::dialect::CONTENT_PREFIX);
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
