//! Containers and sandboxes on this machine, from `/proc` alone (no runtime socket or CLI):
//! every PID namespace other than ours, the processes in it with the PIDs they have inside
//! (`NSpid:` in `/proc/<pid>/status`), the mounts it sees (`/proc/<pid>/mountinfo`: which
//! file-system directories appear where, and the layers of its overlays, whose files it sees on
//! the overlay's device), its root (`/proc/<pid>/root`), and who it is.
//!
//! Who it is must not be the word of the namespace's own user: any local user can make user,
//! mount and PID namespaces of their own, `chroot` into a directory of theirs, write any
//! `/etc/hostname` or `/.flatpak-info` there and mount into it any directory they may read. So a
//! namespace is **proven** (`Namespace::proven`) only when root made it: the user namespace its
//! PID 1 runs in is ours or one owned by uid 0 (`NS_GET_OWNER_UID`), so no unprivileged user
//! created its PID and mount namespaces. Of a proven namespace only, and only from what its
//! own user cannot write:
//! - the runtime and id come from its cgroup path (Podman, Docker, containerd, Kubernetes,
//!   systemd-nspawn, LXC, Flatpak, snap), when every directory of that cgroup, from the
//!   hierarchy's root down, is root's (a user's delegated cgroup subtree may be named anything);
//! - the name and host name come from the runtime's own state, in files root owns on a path
//!   only root may change (Podman's storage `containers.json` and the container's OCI
//!   `config.json`, or the `-n` of a `conmon` running as root; Docker's `config.v2.json`; the
//!   machine name in the cgroup path; Kubernetes' `/var/log/pods`), never from files in the
//!   container's root (which its root user may rewrite, bind mounts of the runtime's included).
//!
//! How the rest of the code treats them:
//! - an unproven namespace is called `PID namespace pid:[INODE]` (runtime `unknown`), has no
//!   name and no host name, and is never looked inside: [`Inventory::containers_with_own_root`]
//!   lists proven namespaces only;
//! - its processes and mounts are still listed (it can see files, and a process there may own
//!   a lock: a `live` found there is real), but that it lacks a PID proves nothing by itself,
//!   since its user chose what it sees: [`Seen::proven`] says which sightings are proven.
//!
//! The [`Inventory`] is read once per snapshot. [`Inventory::who_sees`] answers the question
//! the PID rules ask: which namespaces can see this file, and under which path.
//! Invariant: `complete` is false when some process's namespace could not be read (not root),
//! so a caller never concludes "no namespace has this PID" from an inventory with holes.

use std::collections::HashMap;
use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

pub use crate::verdict::ContainerId;

pub use super::fs::{Mount, proc_root_path};
use super::places::CanonicalDirs;

/// A PID namespace other than ours, with what runs in it.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Namespace {
    /// Inode of the namespace (`pid:[INODE]`).
    pub inode: u64,
    /// Host PID of its PID 1 (or of its lowest PID, if PID 1 is not visible).
    pub init: i32,
    /// PIDs inside → host PIDs.
    pids: HashMap<i32, i32>,
    /// Mounts as its PID 1 sees them.
    pub mounts: Vec<Mount>,
    /// Its other mount namespaces, if any (see [`Namespace::tables`]).
    views: Vec<View>,
    /// Some of its mount tables were read only up to their bound ([`super::bounds`]), or not
    /// all of them were read: it may see files that none of its tables here show.
    #[serde(default)]
    pub mounts_cut: bool,
    /// Device and inode of its root directory.
    pub root: Option<(u64, u64)>,
    /// Whether root made it (see the module docs); `container`, `hostname` and
    /// [`Inventory::containers_with_own_root`] depend on it.
    pub proven: bool,
    /// Who runs it: for an unproven namespace always `unknown`, `pid:[INODE]`, no name.
    pub container: ContainerId,
    /// Its host name, from the runtime's own state (Podman's OCI `config.json`, Docker's
    /// `config.v2.json`), for a proven container only.
    pub hostname: HostName,
    /// Host PID of the parent of its PID 1: its maker (a runtime's monitor, `unshare`).
    maker: Option<i32>,
    /// Index in [`Inventory::namespaces`] of the namespace its maker runs in; `None` for
    /// ours (or a maker not seen). A runtime there names its overlays' layers by the paths
    /// that namespace sees.
    within: Option<usize>,
}

/// One more mount namespace of a PID namespace's processes: a container that joins another's
/// PID namespace (a sidecar, a pod's containers) keeps a root and mounts of its own.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
struct View {
    /// Host PID of a process there.
    pid: i32,
    /// The mount namespace (`mnt:[INODE]`).
    mnt: Option<u64>,
    /// Its mounts, as that process sees them.
    mounts: Vec<Mount>,
    /// Device and inode of that process's root directory.
    root: Option<(u64, u64)>,
    /// The proven container that process runs in (by its own cgroup), when it is one.
    container: Option<ContainerId>,
}

/// A root to look inside: of a proven namespace's PID 1, or of another mount namespace of its
/// processes, with the mounts seen there.
#[derive(Debug, Clone, Copy)]
pub struct Inside<'a> {
    /// Host PID of a process with that root (`/proc/PID/root`).
    pub pid: i32,
    pub mounts: &'a [Mount],
}

impl Inside<'_> {
    /// `/proc/PID/root`: the root, seen from here.
    pub fn root_path(&self) -> PathBuf {
        PathBuf::from(format!("/proc/{}/root", self.pid))
    }
}

/// A container's host name, from its runtime's state. Only a lock that names a host other
/// than ours asks for it: a Podman container's OCI `config.json` is read then, once. As data
/// (a recording), it is the name as far as it was read (`None` when nobody asked).
#[derive(Debug, Clone, Default)]
pub struct HostName {
    value: std::sync::OnceLock<Option<String>>,
    /// The OCI bundles whose `config.json` may name it, in turn.
    bundles: Vec<PathBuf>,
}

impl serde::Serialize for HostName {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        serde::Serialize::serialize(&self.value.get().cloned().flatten(), s)
    }
}

impl<'de> serde::Deserialize<'de> for HostName {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(HostName::known(
            <Option<String> as serde::Deserialize>::deserialize(d)?,
        ))
    }
}

impl HostName {
    fn known(name: Option<String>) -> Self {
        HostName {
            value: name.into(),
            bundles: Vec::new(),
        }
    }

    /// The host name the first of these OCI bundles whose `config.json` only root can have
    /// written gives.
    fn of_bundles(bundles: Vec<PathBuf>) -> Self {
        HostName {
            value: std::sync::OnceLock::new(),
            bundles,
        }
    }

    pub fn get(&self) -> Option<&str> {
        self.value
            .get_or_init(|| {
                let mut root = RootOwned::default();
                self.bundles
                    .iter()
                    .find_map(|b| oci_hostname(&b.join("config.json"), &mut root))
            })
            .as_deref()
    }
}

/// A process of another PID namespace, as its `/proc/<pid>/status` says.
#[derive(Debug, Clone, Copy)]
struct Member {
    /// Its PID here.
    host: i32,
    /// Its PID in its own namespace.
    inner: i32,
    /// Its parent's PID here.
    ppid: Option<i32>,
    /// Its mount namespace (`mnt:[INODE]`), when it could be read.
    mnt: Option<u64>,
}

impl Member {
    /// Process `pid`, by its `status`; `None` when that names no PID inside.
    fn of(pid: i32, status: &str) -> Option<Member> {
        Some(Member {
            host: pid,
            inner: nspid(status)?.last().copied()?,
            ppid: status_line(status, "PPid:").and_then(|p| p.trim().parse().ok()),
            mnt: ns_inode(&pid.to_string(), "mnt"),
        })
    }
}

/// The most mount namespaces of one PID namespace's processes whose tables are read.
const MAX_VIEWS: usize = 32;

/// Namespaces looked at by one thread of an inventory, at least.
const NAMESPACES_A_THREAD: usize = 4;

impl Namespace {
    /// The namespace `inode` with `procs` in it: who runs it (its PID 1, or its lowest PID),
    /// its mounts and its root. `None` when it has no process.
    fn look(inode: u64, procs: &[Member], names: &mut NameSources) -> Option<Namespace> {
        let init = procs
            .iter()
            .find(|m| m.inner == 1)
            .or_else(|| procs.iter().min_by_key(|m| m.inner))?;
        let who = identify(inode, init, names);
        let maker = init.ppid;
        // Its processes in other mount namespaces than its PID 1's (containers sharing one PID
        // namespace, a service's private mounts) see files it may not: one table each.
        let mut tables_of = vec![init.mnt];
        let mut views = Vec::new();
        let mut cut = false;
        for m in procs {
            if m.mnt.is_some() && !tables_of.contains(&m.mnt) {
                if views.len() == MAX_VIEWS {
                    cut = true;
                    break;
                }
                tables_of.push(m.mnt);
                let (mounts, whole) = read_mounts(&m.host.to_string());
                cut |= !whole;
                let root = root_id(m.host, &mounts);
                let own = identify(inode, m, names);
                views.push(View {
                    pid: m.host,
                    mnt: m.mnt,
                    mounts,
                    root,
                    container: own.proven.then_some(own.container),
                });
            }
        }
        let init = init.host;
        let (mounts, whole) = read_mounts(&init.to_string());
        cut |= !whole;
        let root = root_id(init, &mounts);
        Some(Namespace {
            mounts_cut: cut,
            inode,
            init,
            pids: procs.iter().map(|m| (m.inner, m.host)).collect(),
            mounts,
            views,
            root,
            proven: who.proven,
            container: who.container,
            hostname: who.hostname,
            maker,
            within: None,
        })
    }

    /// Every mount table of its processes: its PID 1's first, then one of each other mount
    /// namespace its processes are in.
    fn tables(&self) -> impl Iterator<Item = &[Mount]> {
        std::iter::once(self.mounts.as_slice())
            .chain(self.views.iter().map(|v| v.mounts.as_slice()))
    }

    /// The root (device, inode) of the processes that see the mount table
    /// [`Namespace::tables`] gives at `table`.
    fn table_root(&self, table: usize) -> Option<(u64, u64)> {
        table
            .checked_sub(1)
            .and_then(|v| self.views.get(v))
            .map_or(self.root, |v| v.root)
    }

    /// The root of host process `pid`, one of its processes.
    fn root_of(&self, pid: i32) -> Option<(u64, u64)> {
        if !self.views.is_empty()
            && let Some(mnt) = ns_inode(&pid.to_string(), "mnt")
            && let Some(v) = self.views.iter().find(|v| v.mnt == Some(mnt))
        {
            return v.root;
        }
        self.root
    }

    /// The host PID of a process that sees the mount table [`Namespace::tables`] gives at
    /// `table`.
    fn table_pid(&self, table: usize) -> i32 {
        table
            .checked_sub(1)
            .and_then(|v| self.views.get(v))
            .map_or(self.init, |v| v.pid)
    }

    /// The mounts host process `pid` (one of its processes) sees: those of its mount
    /// namespace, when it is one of the other ones.
    fn mounts_of(&self, pid: i32) -> &[Mount] {
        if !self.views.is_empty()
            && let Some(mnt) = ns_inode(&pid.to_string(), "mnt")
            && let Some(v) = self.views.iter().find(|v| v.mnt == Some(mnt))
        {
            return &v.mounts;
        }
        &self.mounts
    }

    /// The host PID of the process that has `ns_pid` inside.
    pub fn host_pid(&self, ns_pid: i32) -> Option<i32> {
        self.pids.get(&ns_pid).copied()
    }

    /// How many processes run in it.
    pub fn len(&self) -> usize {
        self.pids.len()
    }

    pub fn is_empty(&self) -> bool {
        self.pids.is_empty()
    }

    /// Its root directory as seen from here (`/proc/<init>/root`).
    pub fn root_path(&self) -> PathBuf {
        PathBuf::from(format!("/proc/{}/root", self.init))
    }

    /// The host directories it mounts (bind mounts and volumes), as `host dir → inside`.
    pub fn binds(&self, host_mounts: &[Mount]) -> Vec<(PathBuf, PathBuf)> {
        self.mounts
            .iter()
            .filter(|m| m.point != Path::new("/"))
            .filter_map(|m| {
                let host = host_mounts
                    .iter()
                    .filter(|h| h.dev == m.dev && m.root.starts_with(&h.root))
                    .max_by_key(|h| h.root.as_os_str().len())?;
                let rest = m.root.strip_prefix(&host.root).ok()?;
                Some((join(&host.point, rest), m.point.clone()))
            })
            .collect()
    }
}

/// A namespace that sees a file, and the path it sees it under.
#[derive(Debug, Clone)]
pub struct Seen<'a> {
    /// `None`: our own namespace (the host, when we run on the host).
    pub ns: Option<&'a Namespace>,
    pub path: PathBuf,
    /// Seen through an overlay the file is a layer file of (not in a file system of the
    /// namespace's own): the host PID of a process whose root shows that overlay.
    pub layer: Option<i32>,
    /// Whether something ties the namespace to the file, so that a PID of it may be the
    /// file's writer's: the file is on the namespace's own root (a root that is not ours), or
    /// on a mount of its that ours does not mirror (a volume it mounts). A namespace that
    /// shares our root and sees the file only through mounts it copied from ours (a sandbox
    /// made with `unshare -p`, a browser's) is no more tied to the file than any process of
    /// ours: its PIDs never change the file's verdict. Ours is always tied.
    pub tied: bool,
}

impl Seen<'_> {
    /// Whether this sighting is ours or a proven namespace's (see the module docs): an
    /// unproven namespace may be a user's own making, seeing what that user chose.
    pub fn proven(&self) -> bool {
        self.ns.is_none_or(|n| n.proven)
    }
}

/// The namespaces that see one file.
#[derive(Debug, Clone)]
pub struct Sightings<'a> {
    pub seen: Vec<Seen<'a>>,
    /// Whether the file could be followed through every mount table (see
    /// [`Inventory::who_sees`]).
    pub mapped: bool,
}

/// Every PID namespace on this machine other than ours.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct Inventory {
    /// Our own PID namespace.
    pub own_ns: Option<u64>,
    pub namespaces: Vec<Namespace>,
    /// Host PID → (index in `namespaces`, PID inside).
    by_host_pid: HashMap<i32, (usize, i32)>,
    /// Our own mounts.
    pub own_mounts: Vec<Mount>,
    /// Device and inode of our own root directory.
    own_root: Option<(u64, u64)>,
    /// Whether every process's namespace could be read.
    pub complete: bool,
    /// The layers of the namespaces' overlays, resolved here when first asked.
    #[serde(skip)]
    layers: OnceLock<Vec<Layer>>,
    /// The layers of our own overlays (index in `own_mounts`, directory), resolved when first
    /// asked.
    #[serde(skip)]
    own_layers: OnceLock<Vec<(usize, PathBuf)>>,
    /// The layers named by relative paths, found from the directories above the files asked
    /// about.
    #[serde(skip)]
    relative: RelativeLayers,
}

/// Where layers named by relative paths lie. A runtime names them so where the absolute
/// paths would not fit in the mount's options (a page): Podman's and Docker's overlay drivers
/// then mount from their storage directory, with `upperdir=ID/diff` and each lower layer as
/// `l/SHORT`, a symlink there to `../ID/diff`. Nothing records that directory, but a file of
/// such a layer lies below it: each directory above the file is tried (each path resolved
/// once).
#[derive(Debug, Default)]
struct RelativeLayers(Mutex<HashMap<PathBuf, Option<PathBuf>>>);

impl Clone for RelativeLayers {
    /// A copy keeps nothing: it resolves again.
    fn clone(&self) -> Self {
        RelativeLayers::default()
    }
}

impl RelativeLayers {
    /// The path of the file at `real` (canonical here) within the layer `dir` (canonical
    /// here when absolute; else as the overlay's options name it).
    fn holds<'r>(&self, dir: &Path, real: &'r Path, canonical: &CanonicalDirs) -> Option<&'r Path> {
        if dir.is_absolute() {
            return below(real, dir);
        }
        if let Some(rest) = by_trailing_names(dir, real) {
            return Some(rest);
        }
        let first = dir.components().next()?;
        let mut known = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let mut resolve = |at: PathBuf| {
            known
                .entry(at)
                .or_insert_with_key(|at| canonical.of(at))
                .clone()
        };
        // From the file's own directory up: the storage directory has the layer's first name
        // (`l`), asked once for every layer named from there.
        for home in real.ancestors().skip(1) {
            if resolve(home.join(first)).is_none() {
                continue;
            }
            if let Some(layer) = resolve(home.join(dir))
                && let Some(rest) = below(real, &layer).filter(|r| !r.as_os_str().is_empty())
            {
                return Some(rest);
            }
        }
        None
    }
}

/// A layer directory as an overlay's options name it (`named`), as [`Layer::dir`] holds it:
/// canonical here when named by an absolute path that exists here, else as named.
fn layer_dir_here(named: &Path, canonical: &CanonicalDirs) -> PathBuf {
    Some(named)
        .filter(|d| d.is_absolute())
        .and_then(|d| canonical.of(d))
        .unwrap_or_else(|| named.to_path_buf())
}

/// The path of the file at `real` within a layer named by the relative path `dir`, wherever
/// those names end a directory of `real` (`ID/diff`: a name can only add sightings, which
/// never make a lock stale).
fn by_trailing_names<'r>(dir: &Path, real: &'r Path) -> Option<&'r Path> {
    let want: Vec<Component<'_>> = dir.components().collect();
    let have: Vec<Component<'_>> = real.components().collect();
    let at = (1..have.len().saturating_sub(want.len()))
        .find(|&i| have[i..i + want.len()] == want[..])?;
    let mut rest = real.components();
    for _ in 0..at + want.len() {
        rest.next();
    }
    Some(rest.as_path())
}

/// A directory whose files a namespace sees through one of its overlays, on the overlay's
/// device ([`super::fs::overlay_layers`]).
#[derive(Debug, Clone)]
struct Layer {
    /// Index of the namespace in [`Inventory::namespaces`].
    ns: usize,
    /// Index of the overlay's mount table among the namespace's ([`Namespace::tables`]).
    table: usize,
    /// The overlay's device.
    dev: u64,
    /// The directory: canonical as seen here, when its mounter named it by an absolute path
    /// that exists here; else as named (a runtime that mounts with paths relative to its
    /// storage, to keep the options short: [`RelativeLayers`]).
    dir: PathBuf,
    /// The directory as the overlay's options name it (a path of its mounter's view).
    named: PathBuf,
}

impl Inventory {
    /// Reads the inventory of this machine now.
    #[cfg(target_os = "linux")]
    pub fn read(own_ns: Option<u64>) -> Self {
        let mut members: HashMap<u64, Vec<Member>> = HashMap::new();
        let mut complete = true;
        let own_root = dev_ino(Path::new("/"));
        if std::fs::metadata("/proc/self").is_err() {
            return Inventory::default();
        }
        for pid in locksmith_sys::host::pids() {
            let ns = match std::fs::read_link(format!("/proc/{pid}/ns/pid")) {
                Ok(link) => super::host::parse_ns_link(&link.to_string_lossy()),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue, // exited
                Err(_) => {
                    // Not allowed to look (another user's process, or a guarded init): its
                    // status still says whether it lives in a deeper namespace than ours.
                    let deeper = locksmith_sys::host::read_proc_text(format!("/proc/{pid}/status"))
                        .ok()
                        .and_then(|s| nspid(&s))
                        .is_none_or(|v| v.len() > 1);
                    if deeper {
                        complete = false;
                    }
                    continue;
                }
            };
            let Some(ns) = ns else { continue };
            if Some(ns) == own_ns {
                continue;
            }
            let Ok(status) = locksmith_sys::host::read_proc_text(format!("/proc/{pid}/status"))
            else {
                continue;
            };
            if let Some(m) = Member::of(pid, &status) {
                members.entry(ns).or_default().push(m);
            }
        }
        // Our own mount table and its text (the cgroup hierarchies, hidepid), as the walk
        // reads them. With `hidepid`, /proc lists only our own processes unless we are root:
        // what we do not see may still run.
        let own_mountinfo = super::fs::MountTable::recent_text();
        if !rustix::process::geteuid().is_root() && proc_hides_pids(&own_mountinfo) {
            complete = false;
        }
        let own_mounts = super::fs::parse_mountinfo(&own_mountinfo);
        // Each namespace is looked at on its own (who runs it, its mounts, its root): a machine
        // with many containers has them read on several threads, each with its own sources. A
        // thread that panicked is no part left out: the inventory would claim to be complete.
        let members: Vec<(u64, Vec<Member>)> = members.into_iter().collect();
        let threads = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(members.len() / NAMESPACES_A_THREAD)
            .max(1);
        let podman = Arc::new(PodmanFiles::default());
        let look = |part: &[(u64, Vec<Member>)]| -> Vec<Namespace> {
            let mut names = NameSources::new(&own_mountinfo, podman.clone());
            part.iter()
                .filter_map(|(inode, procs)| Namespace::look(*inode, procs, &mut names))
                .collect()
        };
        let mut namespaces: Vec<Namespace> = if threads == 1 {
            look(&members)
        } else {
            // The first part on this thread, each other on one of its own.
            let part = members.len().div_ceil(threads);
            let mut chunks = members.chunks(part);
            let first = chunks.next().unwrap_or_default();
            std::thread::scope(|s| {
                let others: Vec<_> = chunks.map(|c| s.spawn(|| look(c))).collect();
                let mut all = look(first);
                for p in others {
                    all.extend(p.join().unwrap_or_else(|e| std::panic::resume_unwind(e)));
                }
                all
            })
        };
        namespaces.sort_by_key(|n| n.init);
        let by_host_pid: HashMap<i32, (usize, i32)> = namespaces
            .iter()
            .enumerate()
            .flat_map(|(i, n)| n.pids.iter().map(move |(&inner, &host)| (host, (i, inner))))
            .collect();
        for (i, n) in namespaces.iter_mut().enumerate() {
            n.within = n
                .maker
                .and_then(|p| by_host_pid.get(&p))
                .map(|&(of, _)| of)
                .filter(|&of| of != i);
        }
        Inventory {
            own_ns,
            namespaces,
            by_host_pid,
            own_mounts,
            own_root,
            complete,
            layers: OnceLock::new(),
            own_layers: OnceLock::new(),
            relative: RelativeLayers::default(),
        }
    }

    #[cfg(not(target_os = "linux"))]
    pub fn read(own_ns: Option<u64>) -> Self {
        Inventory {
            own_ns,
            ..Inventory::default()
        }
    }

    /// The namespace a host PID runs in (when not ours), and its PID there.
    pub fn of_host_pid(&self, pid: i32) -> Option<(&Namespace, i32)> {
        self.by_host_pid
            .get(&pid)
            .map(|&(i, inner)| (&self.namespaces[i], inner))
    }

    /// Proven namespaces whose root is not ours (containers and root's chrooted sandboxes):
    /// their own lock places are worth scanning through `/proc/<pid>/root`. A namespace a user
    /// made is never listed: what it shows there is whatever that user chose to mount.
    pub fn containers_with_own_root(&self) -> impl Iterator<Item = &Namespace> {
        self.namespaces
            .iter()
            .filter(|n| n.proven && n.root.is_some() && n.root != self.own_root)
    }

    /// The roots of [`Inventory::containers_with_own_root`]' processes that are not ours: their
    /// PID 1's, and those of their other mount namespaces (a sidecar's own root), each once.
    pub fn roots_inside(&self) -> Vec<Inside<'_>> {
        let mut seen = std::collections::HashSet::new();
        let mut out = Vec::new();
        for ns in self.containers_with_own_root() {
            let first = (ns.init, ns.mounts.as_slice(), ns.root);
            let views = ns
                .views
                .iter()
                .map(|v| (v.pid, v.mounts.as_slice(), v.root));
            for (pid, mounts, root) in std::iter::once(first).chain(views) {
                let Some(root) = root.filter(|r| Some(*r) != self.own_root) else {
                    continue;
                };
                if seen.insert(root) {
                    out.push(Inside { pid, mounts });
                }
            }
        }
        out
    }

    /// The root (`/proc/PID/root`) of the proven container with this runtime and id, if one
    /// runs now: a PID namespace's, or a container's that joined another's PID namespace
    /// with a root of its own.
    pub fn container_root(&self, runtime: &str, id: &str) -> Option<PathBuf> {
        let is = |c: &ContainerId| c.runtime == runtime && c.id == id;
        let ns = self.namespaces.iter().filter(|n| n.proven);
        if let Some(n) = ns.clone().find(|n| is(&n.container)) {
            return Some(n.root_path());
        }
        ns.flat_map(|n| &n.views)
            .find(|v| v.container.as_ref().is_some_and(is))
            .map(|v| PathBuf::from(format!("/proc/{}/root", v.pid)))
    }

    /// Devices of our own mounts: a file system a container mounts that is not among them is
    /// its own (a tmpfs of its runtime's), not a directory of ours.
    pub fn host_has_device(&self, dev: u64) -> bool {
        self.own_mounts.iter().any(|m| m.dev == dev)
    }

    /// Which namespaces can see the file at `path` (with `meta` its `lstat`), ours included
    /// when it sees it, and the path each sees it under. A path below `/proc/<pid>/root/` is
    /// seen first by that process's namespace. `mapped` is false when the file's device is in
    /// no mount table we read (a btrfs subvolume's own device number, say): then only the
    /// namespace it was found through is known, and others may see it too.
    pub fn who_sees(&self, path: &Path, dev: u64, canonical: &CanonicalDirs) -> Sightings<'_> {
        let mut out: Vec<Seen<'_>> = Vec::new();
        let (origin, fs_path) = match proc_root_path(path) {
            Some((pid, rest)) => match self.of_host_pid(pid) {
                Some((ns, _)) => {
                    let fs_path = fs_relative(ns.mounts_of(pid), &rest, dev);
                    let tied = ns.root_of(pid) != self.own_root;
                    out.push(Seen {
                        ns: Some(ns),
                        path: rest,
                        layer: None,
                        tied,
                    });
                    (Some(ns.inode), fs_path)
                }
                // One of ours: the same file as `rest` here.
                None => (None, self.host_view(&rest, dev, canonical, &mut out)),
            },
            None => (None, self.host_view(path, dev, canonical, &mut out)),
        };
        let Some((dev, fs_path)) = fs_path else {
            self.through_overlays(canonical, &mut out);
            return Sightings {
                seen: out,
                mapped: false,
            };
        };
        if origin.is_some()
            && let Some(p) = inside(&self.own_mounts, dev, &fs_path)
        {
            out.push(Seen {
                ns: None,
                path: p,
                layer: None,
                tied: true,
            });
        }
        for ns in &self.namespaces {
            if Some(ns.inode) == origin
                || out
                    .iter()
                    .any(|s| s.ns.is_some_and(|n| n.inode == ns.inode))
            {
                continue;
            }
            let found = ns.tables().enumerate().find_map(|(i, t)| {
                let (m, p) = inside_via(t, dev, &fs_path)?;
                let own_root = ns.table_root(i) != self.own_root;
                let mirrored = self
                    .own_mounts
                    .iter()
                    .any(|h| h.dev == m.dev && h.root == m.root && h.point == m.point);
                Some((p, own_root || !mirrored))
            });
            if let Some((p, tied)) = found {
                out.push(Seen {
                    ns: Some(ns),
                    path: p,
                    layer: None,
                    tied,
                });
            }
        }
        self.through_overlays(canonical, &mut out);
        Sightings {
            seen: out,
            mapped: true,
        }
    }

    /// The namespaces that see the file through an overlay it is a layer file of (a
    /// container's upper directory, where what it writes in its root goes, or an image layer
    /// below it), each under the path it has in that overlay: found from each sighting in
    /// `out`, and from each one this adds. The layers are named by the paths their mounter
    /// sees, a runtime in the namespace that made the container: ours (matched as resolved
    /// here), or a container's, when a runtime runs in it (a Kubernetes node in a container,
    /// Podman in Podman: matched as named, in that container's sighting). An image layer's
    /// file may be hidden there by a higher layer's: it counts as seen, the safe side.
    fn through_overlays<'a>(&'a self, canonical: &CanonicalDirs, out: &mut Vec<Seen<'a>>) {
        let layers = self.layers(canonical);
        let mut next = 0;
        while next < out.len() && !layers.is_empty() {
            let by = out[next].ns.map(|n| n.inode);
            let view = out[next].path.clone();
            let ours = by.is_none();
            next += 1;
            for layer in layers {
                let ns = &self.namespaces[layer.ns];
                // Its layers are named as its maker's namespace sees them.
                if ns.within.map(|w| self.namespaces[w].inode) != by
                    || out
                        .iter()
                        .any(|s| s.ns.is_some_and(|n| n.inode == ns.inode))
                {
                    continue;
                }
                let rest = if ours {
                    self.relative.holds(&layer.dir, &view, canonical)
                } else if layer.named.is_absolute() {
                    below(&view, &layer.named).filter(|r| !r.as_os_str().is_empty())
                } else {
                    by_trailing_names(&layer.named, &view)
                };
                let Some(rest) = rest else {
                    continue;
                };
                let in_overlay = Path::new("/").join(rest);
                if let Some(p) = ns
                    .tables()
                    .nth(layer.table)
                    .and_then(|t| inside(t, layer.dev, &in_overlay))
                {
                    out.push(Seen {
                        ns: Some(ns),
                        path: p,
                        layer: Some(ns.table_pid(layer.table)),
                        tied: true,
                    });
                }
            }
        }
    }

    /// Every layer of every namespace's overlays, each directory resolved once.
    fn layers(&self, canonical: &CanonicalDirs) -> &[Layer] {
        self.layers.get_or_init(|| {
            let fuse = self
                .namespaces
                .iter()
                .flat_map(|n| n.tables().flatten())
                .any(|m| m.fs_type == super::fs::FUSE_OVERLAY)
                .then(fuse_overlay_layers)
                .unwrap_or_default();
            let mut resolved: HashMap<&Path, PathBuf> = HashMap::new();
            let mut out = Vec::new();
            for (i, ns) in self.namespaces.iter().enumerate() {
                for (table, m) in ns
                    .tables()
                    .enumerate()
                    .flat_map(|(i, t)| t.iter().map(move |m| (i, m)))
                {
                    let layers = match fuse.get(&m.dev) {
                        Some(l) if m.fs_type == super::fs::FUSE_OVERLAY => l,
                        _ => &m.layers,
                    };
                    for named in layers {
                        let dir = resolved
                            .entry(named)
                            .or_insert_with(|| layer_dir_here(named, canonical))
                            .clone();
                        out.push(Layer {
                            ns: i,
                            table,
                            dev: m.dev,
                            dir,
                            named: named.clone(),
                        });
                    }
                }
            }
            out
        })
    }

    /// Where the file at `path` is seen through an overlay mounted now that it is a layer file
    /// of (ours, or a namespace's), said as a reason not to remove it where it is: a layer
    /// changed under a mounted overlay leaves what the overlay shows undefined (the kernel's
    /// overlayfs documentation), so such a file is removed through the overlay. `None` when it
    /// is no such file.
    pub fn mounted_layer(
        &self,
        path: &Path,
        dev: u64,
        canonical: &CanonicalDirs,
    ) -> Option<String> {
        if proc_root_path(path).is_none()
            && let Some(why) = self.own_mounted_layer(path, canonical)
        {
            return Some(why);
        }
        let seen = self.who_sees(path, dev, canonical);
        let (s, pid) = seen.seen.iter().find_map(|s| Some((s, s.layer?)))?;
        let ns = s.ns?;
        Some(format!(
            "it is a file of a layer of the overlay {} sees it through, as {}: remove it there (through /proc/{pid}/root)",
            ns.container.describe(),
            s.path.display(),
        ))
    }

    /// [`Inventory::mounted_layer`] for our own overlays, with the file at `path` here.
    fn own_mounted_layer(&self, path: &Path, canonical: &CanonicalDirs) -> Option<String> {
        let real = match (path.parent(), path.file_name()) {
            (Some(parent), Some(name)) => canonical.of(parent)?.join(name),
            _ => return None,
        };
        let real = real.as_path();
        let own = self.own_layers.get_or_init(|| {
            let mut out = Vec::new();
            for (i, m) in self.own_mounts.iter().enumerate() {
                for dir in &m.layers {
                    out.push((i, layer_dir_here(dir, canonical)));
                }
            }
            out
        });
        for (i, dir) in own {
            let m = &self.own_mounts[*i];
            if let Some(rest) = self.relative.holds(dir, real, canonical)
                && let Some(p) = inside(&self.own_mounts, m.dev, &Path::new("/").join(rest))
            {
                return Some(format!(
                    "it is a file of a layer of the overlay mounted at {}: remove it there, as {}",
                    m.point.display(),
                    p.display()
                ));
            }
        }
        None
    }

    /// Records our own view of `path` and returns its path within its file system.
    fn host_view(
        &self,
        path: &Path,
        dev: u64,
        canonical: &CanonicalDirs,
        out: &mut Vec<Seen<'_>>,
    ) -> Option<(u64, PathBuf)> {
        let real = match (path.parent(), path.file_name()) {
            (Some(parent), Some(name)) => canonical
                .of(parent)
                .map(|p| p.join(name))
                .unwrap_or_else(|| path.to_path_buf()),
            _ => path.to_path_buf(),
        };
        let rel = fs_relative(&self.own_mounts, &real, dev);
        out.push(Seen {
            ns: None,
            path: real,
            layer: None,
            tied: true,
        });
        rel
    }
}

/// The layers of each `fuse-overlayfs` mount, by its device: from the command line of the
/// daemon that serves it (`-o lowerdir=…,upperdir=…,workdir=…` and its mount point), the
/// device by that daemon's own mount table (no call on the mount, which waits on the daemon).
#[cfg(target_os = "linux")]
fn fuse_overlay_layers() -> HashMap<u64, Vec<PathBuf>> {
    use std::os::unix::ffi::OsStrExt;
    let mut out = HashMap::new();
    for pid in locksmith_sys::host::pids() {
        let is_daemon = locksmith_sys::host::read_proc(format!("/proc/{pid}/comm"))
            .is_ok_and(|c| c.strip_suffix(b"\n") == Some(b"fuse-overlayfs"));
        let Some(cmdline) = is_daemon
            .then(|| locksmith_sys::host::read_proc(format!("/proc/{pid}/cmdline")).ok())
            .flatten()
        else {
            continue;
        };
        let args: Vec<&[u8]> = cmdline
            .split(|&b| b == 0)
            .filter(|a| !a.is_empty())
            .collect();
        let mut options: Vec<u8> = Vec::new();
        for (i, arg) in args.iter().enumerate().skip(1) {
            let value = match arg.strip_prefix(b"-o") {
                Some([]) => args.get(i + 1).copied().unwrap_or_default(),
                Some(v) => v,
                None => continue,
            };
            options.extend_from_slice(value);
            options.push(b',');
        }
        let layers = super::fs::overlay_layers(&options);
        let (Some(point), false) = (args.last(), layers.is_empty()) else {
            continue;
        };
        let point = Path::new(std::ffi::OsStr::from_bytes(point));
        if let Some(m) = read_mounts(&pid.to_string())
            .0
            .iter()
            .rev()
            .find(|m| m.point == point && m.fs_type == super::fs::FUSE_OVERLAY)
        {
            out.insert(m.dev, layers);
        }
    }
    out
}

#[cfg(not(target_os = "linux"))]
fn fuse_overlay_layers() -> HashMap<u64, Vec<PathBuf>> {
    HashMap::new()
}

/// [`Inventory::mounted_layer`] for the file at `path` on device `dev`, by an inventory read at
/// most 0.2 s ago, as the mount table is (a reclaim asks it of lock after lock).
#[cfg(target_os = "linux")]
pub fn mounted_layer(path: &Path, dev: u64) -> Option<String> {
    type Recent = (std::time::Instant, Arc<Inventory>, Arc<CanonicalDirs>);
    static RECENT: Mutex<Option<Recent>> = Mutex::new(None);
    let (inv, canonical) = {
        let mut recent = RECENT.lock().unwrap_or_else(|e| e.into_inner());
        match &*recent {
            Some((at, inv, c)) if at.elapsed() < super::fs::RECENT_MOUNTS => {
                (inv.clone(), c.clone())
            }
            _ => {
                let inv = Arc::new(Inventory::read(super::host::pid_ns_of("self")));
                let c = Arc::new(CanonicalDirs::default());
                *recent = Some((std::time::Instant::now(), inv.clone(), c.clone()));
                (inv, c)
            }
        }
    };
    inv.mounted_layer(path, dev, &canonical)
}

#[cfg(not(target_os = "linux"))]
pub fn mounted_layer(_path: &Path, _dev: u64) -> Option<String> {
    None
}

/// The proven container (see the module docs) whose namespaces process `pid` runs in, read
/// now; `None` for our own namespace, or one that is not proven.
pub fn proven_container(pid: i32) -> Option<ContainerId> {
    let ns = ns_inode(&pid.to_string(), "pid")?;
    if Some(ns) == ns_inode("self", "pid") {
        return None;
    }
    let status = locksmith_sys::host::read_proc_text(format!("/proc/{pid}/status")).ok()?;
    let who = identify(
        ns,
        &Member::of(pid, &status)?,
        &mut NameSources::new(&super::fs::MountTable::recent_text(), Arc::default()),
    );
    who.proven.then_some(who.container)
}

/// Whether `/proc` is mounted with `hidepid` (other users' processes hidden or unreadable), by
/// our own `mountinfo`'s text.
fn proc_hides_pids(own_mountinfo: &[u8]) -> bool {
    std::str::from_utf8(own_mountinfo).is_ok_and(|t| {
        t.lines().any(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            f.get(4) == Some(&"/proc")
                && l.split(" - ").nth(1).is_some_and(|sup| {
                    sup.split([' ', ',']).any(|o| {
                        o.strip_prefix("hidepid=")
                            .is_some_and(|v| v != "0" && v != "off")
                    })
                })
        })
    })
}

/// The path of `path` (as seen through `mounts`) within its file system, and that file
/// system's device as the mount tables show it: the root of the mount it lies under, joined
/// with the rest. A file in a btrfs subvolume has a device number of its own that no mount
/// shows; it is placed by the btrfs mount its path lies under.
fn fs_relative(mounts: &[Mount], path: &Path, dev: u64) -> Option<(u64, PathBuf)> {
    let under = |m: &&Mount| below(path, &m.point).is_some();
    let longest = |m: &&Mount| m.point.as_os_str().len();
    let m = match mounts
        .iter()
        .filter(|m| m.dev == dev)
        .filter(under)
        .max_by_key(longest)
    {
        Some(m) => m,
        None => mounts
            .iter()
            .filter(under)
            .max_by_key(longest)
            .filter(|m| m.fs_type == "btrfs")?,
    };
    Some((m.dev, join(&m.root, below(path, &m.point)?)))
}

/// Where a namespace with `mounts` sees the file at `fs_path` of device `dev`, if it does.
fn inside(mounts: &[Mount], dev: u64, fs_path: &Path) -> Option<PathBuf> {
    inside_via(mounts, dev, fs_path).map(|(_, p)| p)
}

/// [`inside`], with the mount it sees the file through.
fn inside_via<'m>(mounts: &'m [Mount], dev: u64, fs_path: &Path) -> Option<(&'m Mount, PathBuf)> {
    let (m, rest) = mounts
        .iter()
        .filter(|m| m.dev == dev)
        .filter_map(|m| Some((m, below(fs_path, &m.root)?)))
        .max_by_key(|(m, _)| m.root.as_os_str().len())?;
    Some((m, join(&m.point, rest)))
}

/// What follows `base` in `path`, when `path` is `base` or below it: `Path::strip_prefix` for
/// the absolute, normalized paths of mount tables (no `.`, `..` or doubled `/`), compared as
/// bytes (each lock judged beside containers asks it of every mount of every namespace).
fn below<'p>(path: &'p Path, base: &Path) -> Option<&'p Path> {
    use std::os::unix::ffi::OsStrExt;
    let (p, b) = (path.as_os_str().as_bytes(), base.as_os_str().as_bytes());
    let b = b.strip_suffix(b"/").unwrap_or(b);
    let rest = p.strip_prefix(b)?;
    let rest = match rest {
        [] => rest,
        [b'/', rest @ ..] => rest,
        _ => return None,
    };
    Some(Path::new(std::ffi::OsStr::from_bytes(rest)))
}

fn join(base: &Path, rest: &Path) -> PathBuf {
    if rest.as_os_str().is_empty() {
        base.to_path_buf()
    } else {
        base.join(rest)
    }
}

fn dev_ino(path: &Path) -> Option<(u64, u64)> {
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

/// The (device, inode) of the root directory of process `init`, whose mount table is
/// `mounts`: asked directly where that root is on a mount that does not hang, else through a
/// bounded task (an unreadable table counts as one that may hang); `None` when it does not
/// answer (the namespace is then not looked inside).
fn root_id(init: i32, mounts: &[Mount]) -> Option<(u64, u64)> {
    let path = PathBuf::from(format!("/proc/{init}/root"));
    let local = mounts
        .iter()
        .rev()
        .find(|m| m.point == Path::new("/"))
        .is_some_and(|m| !m.may_hang());
    if local {
        return dev_ino(&path);
    }
    let probe = super::fs::Op::Probe { path: path.clone() };
    let a = super::fs::call_path(&path, None, probe).ok()?.ok().ok()?;
    (a.target_mode != 0).then_some((a.dev, a.ino))
}

/// The `NSpid:` line of `/proc/<pid>/status`: the PID in each namespace, outermost first.
pub fn nspid(status: &str) -> Option<Vec<i32>> {
    let line = status_line(status, "NSpid:")?;
    line.split_whitespace().map(|p| p.parse().ok()).collect()
}

/// The fields of one line of a `/proc/<pid>/status` (`key` is its name and colon).
fn status_line<'s>(status: &'s str, key: &str) -> Option<&'s str> {
    status.lines().find_map(|l| l.strip_prefix(key))
}

/// Another namespace's mount table, at most [`super::bounds::MOUNT_LINES`] mounts and
/// [`super::bounds::MOUNT_BYTES`] of it, and whether that was all of it: its owner may have
/// stacked as many mounts as it likes, and the kernel's cost of printing them grows with the
/// square of the stack.
fn read_mounts(who: &str) -> (Vec<Mount>, bool) {
    match locksmith_sys::host::read_proc_bounded(
        format!("/proc/{who}/mountinfo"),
        super::bounds::MOUNT_BYTES,
    ) {
        Ok((text, whole)) => {
            // A cut read ends in a partial line: only whole lines are kept.
            let end = if whole {
                text.len()
            } else {
                text.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1)
            };
            let mut mounts = super::fs::parse_mountinfo(&text[..end]);
            let lines_whole = mounts.len() <= super::bounds::MOUNT_LINES;
            mounts.truncate(super::bounds::MOUNT_LINES);
            (mounts, whole && lines_whole)
        }
        Err(_) => (Vec::new(), true),
    }
}

mod names;
pub use names::from_cgroup;
use names::*;

#[cfg(test)]
mod tests;
