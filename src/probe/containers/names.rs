//! Who a container is: its name and its runtime's, from what the runtimes keep on disk
//! (podman's `containers.json`, an OCI bundle's `config.json`, docker's state, a Kubernetes
//! pod's) and from its cgroup; only files owned by root are read, each at most once per
//! inventory ([`NameSources`]).

use super::*;

/// Podman storage `containers.json` files, each read once by whichever thread of an
/// inventory asks first (the others wait for it): id → first name.
#[derive(Default)]
pub(super) struct PodmanFiles(Mutex<HashMap<PathBuf, Arc<OnceLock<PodmanNames>>>>);

/// A `containers.json`'s containers: id → first name.
pub(super) type PodmanNames = HashMap<String, String>;

/// What the runtimes' state on disk says, read at most once per inventory.
pub(super) struct NameSources {
    pub(super) podman: Arc<PodmanFiles>,
    /// Our cgroup hierarchies, to check who owns a cgroup.
    pub(super) cgroups: Vec<CgroupMount>,
    /// Our own `/proc/self/cgroup`.
    pub(super) own_cgroup: String,
    /// Our own user namespace.
    pub(super) own_user_ns: Option<u64>,
    /// What only root can have written.
    pub(super) root: RootOwned,
}

impl NameSources {
    /// With our own `mountinfo`'s text.
    pub(super) fn new(own_mountinfo: &[u8], podman: Arc<PodmanFiles>) -> Self {
        NameSources {
            podman,
            cgroups: cgroup_mounts(own_mountinfo),
            own_cgroup: locksmith_sys::host::read_proc_text("/proc/self/cgroup")
                .unwrap_or_default(),
            own_user_ns: ns_inode("self", "user"),
            root: RootOwned::default(),
        }
    }

    pub(super) fn podman_name(&mut self, file: PathBuf, id: &str) -> Option<String> {
        let cell = {
            let mut files = self.podman.0.lock().unwrap_or_else(|e| e.into_inner());
            files.entry(file.clone()).or_default().clone()
        };
        cell.get_or_init(|| read_podman_names(&file, &mut self.root))
            .get(id)
            .cloned()
    }
}

/// The largest runtime state file read (a `containers.json` of thousands of containers).
pub(super) const MAX_STATE_BYTES: u64 = 32 << 20;

/// What only root can have written, asked once per inventory: a directory is root's and
/// writable by no one else (unless sticky), and every directory above it too; the directories
/// of the runtimes' state files (shared by their containers) resolved once.
#[derive(Debug, Default)]
pub(super) struct RootOwned {
    pub(super) dirs: HashMap<PathBuf, bool>,
    pub(super) canonical: CanonicalDirs,
}

impl RootOwned {
    /// The content of `path` if only root can have written it: after resolving symlinks, every
    /// directory above it is root's and writable by no one else (unless sticky, as `/tmp`,
    /// where others cannot move root's entries), and it is a regular file of root's that
    /// neither group nor others may write.
    pub(super) fn file(&mut self, path: &Path) -> Option<Vec<u8>> {
        use super::super::reach;
        let link = reach::lstat(path).ok()?.file_type().is_symlink();
        let real = match (link, path.parent(), path.file_name()) {
            (false, Some(parent), Some(name)) => self.canonical.of(parent)?.join(name),
            _ => reach::canonical(path)?,
        };
        if !self.dirs(real.parent()?) {
            return None;
        }
        let (f, st) = reach::open_file(&real).ok()?;
        if st.uid() != 0 || st.mode() & 0o022 != 0 {
            return None;
        }
        // Room for the whole file at once (a buffer grown from nothing reads it in pieces).
        let mut out =
            Vec::with_capacity(usize::try_from(st.len().min(MAX_STATE_BYTES)).unwrap_or(0) + 1);
        std::io::Read::read_to_end(&mut std::io::Read::take(f, MAX_STATE_BYTES), &mut out).ok()?;
        Some(out)
    }

    /// Whether `dir` (absolute, without symlinks) and every directory above it are root's and
    /// writable by no one else, unless sticky.
    pub(super) fn dirs(&mut self, dir: &Path) -> bool {
        dir.ancestors().all(|d| {
            *self.dirs.entry(d.to_path_buf()).or_insert_with(|| {
                super::super::reach::lstat(d).is_ok_and(|m| {
                    m.is_dir() && m.uid() == 0 && (m.mode() & 0o022 == 0 || m.mode() & 0o1000 != 0)
                })
            })
        })
    }
}

/// The inode of `/proc/<who>/ns/<kind>`.
pub(super) fn ns_inode(who: &str, kind: &str) -> Option<u64> {
    let link = std::fs::read_link(format!("/proc/{who}/ns/{kind}")).ok()?;
    super::super::host::parse_ns_link(&link.to_string_lossy())
}

/// Whether root made the namespaces of process `pid`: it runs in our user namespace (so its
/// PID and mount namespaces were made by a process privileged over ours), or in one owned by
/// uid 0. A user namespace any other user makes is owned by that user, and so is everything
/// made inside it, however deeply nested: no unprivileged user can map uid 0 into one.
#[cfg(target_os = "linux")]
pub(super) fn root_created(pid: i32, own_user_ns: Option<u64>) -> bool {
    let Some(user_ns) = ns_inode(&pid.to_string(), "user") else {
        return false;
    };
    if Some(user_ns) == own_user_ns {
        return true;
    }
    user_ns_owner(pid) == Some(0)
}

#[cfg(not(target_os = "linux"))]
pub(super) fn root_created(_pid: i32, _own_user_ns: Option<u64>) -> bool {
    false
}

/// The owner of the user namespace of process `pid`, as our namespace sees it
/// (`ioctl(NS_GET_OWNER_UID)`, Linux 4.11).
#[cfg(target_os = "linux")]
pub(super) fn user_ns_owner(pid: i32) -> Option<u32> {
    use std::os::fd::AsRawFd;
    /// `_IO(0xb7, 0x4)`.
    const NS_GET_OWNER_UID: libc::c_ulong = 0xb704;
    let ns = std::fs::File::open(format!("/proc/{pid}/ns/user")).ok()?;
    let mut uid: libc::uid_t = 0;
    // SAFETY: NS_GET_OWNER_UID writes one uid_t through the pointer, which is valid.
    let r = unsafe { libc::ioctl(ns.as_raw_fd(), NS_GET_OWNER_UID as _, &mut uid) };
    (r == 0).then_some(uid)
}

/// One cgroup hierarchy we have mounted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct CgroupMount {
    /// `None` for the unified (v2) hierarchy; the super options (controllers, `name=`) of a
    /// v1 one.
    pub(super) options: Option<Vec<String>>,
    /// The cgroup mounted there, and where.
    pub(super) root: PathBuf,
    pub(super) point: PathBuf,
}

/// The cgroup mounts of a `mountinfo`.
pub(super) fn cgroup_mounts(text: &[u8]) -> Vec<CgroupMount> {
    text.split(|&b| b == b'\n')
        .filter_map(|line| {
            let line = std::str::from_utf8(line).ok()?;
            let (left, right) = line.split_once(" - ")?;
            let fields: Vec<&str> = left.split(' ').collect();
            let mut sup = right.split(' ');
            let fstype = sup.next()?;
            let _source = sup.next()?;
            let options = match fstype {
                "cgroup2" => None,
                "cgroup" => Some(sup.next()?.split(',').map(String::from).collect()),
                _ => return None,
            };
            let unescape = |f: &str| {
                PathBuf::from(OsString::from_vec(super::super::fs::mountinfo_unescape(
                    f.as_bytes(),
                )))
            };
            Some(CgroupMount {
                options,
                root: unescape(fields.get(3)?),
                point: unescape(fields.get(4)?),
            })
        })
        .collect()
}

/// Whether the cgroup of a `/proc/<pid>/cgroup` line (`0::/path` or `N:controllers:/path`) is
/// root's: it and every cgroup above it, up to the hierarchy's root, are directories owned by
/// uid 0. A user may create cgroups of any name only where a cgroup was delegated to them (made
/// theirs), and may move processes only into cgroups they may write.
pub(super) fn root_owned_cgroup(line: &str, mounts: &[CgroupMount]) -> bool {
    let mut parts = line.splitn(3, ':');
    let (Some(_), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next())
    else {
        return false;
    };
    let fits = |m: &&CgroupMount| match &m.options {
        None => controllers.is_empty(),
        Some(opts) => {
            !controllers.is_empty() && controllers.split(',').all(|c| opts.iter().any(|o| o == c))
        }
    };
    let Some(m) = mounts.iter().find(fits) else {
        return false;
    };
    let Ok(rest) = Path::new(path).strip_prefix(&m.root) else {
        return false;
    };
    let mut dir = m.point.clone();
    let owned =
        |d: &Path| std::fs::symlink_metadata(d).is_ok_and(|md| md.is_dir() && md.uid() == 0);
    if !owned(&dir) {
        return false;
    }
    for c in rest.components() {
        match c {
            Component::Normal(n) => dir.push(n),
            _ => return false,
        }
        if !owned(&dir) {
            return false;
        }
    }
    true
}

/// Podman's (containers/storage) `containers.json`: `[{"id": ..., "names": [...]}]`, if only
/// root can have written it.
pub(super) fn read_podman_names(file: &Path, root: &mut RootOwned) -> HashMap<String, String> {
    #[derive(serde::Deserialize)]
    struct Entry {
        id: String,
        #[serde(default)]
        names: Vec<String>,
    }
    root.file(file)
        .and_then(|t| serde_json::from_slice::<Vec<Entry>>(&t).ok())
        .unwrap_or_default()
        .into_iter()
        .filter_map(|e| Some((e.id, e.names.into_iter().next()?)))
        .collect()
}

/// The host name in an OCI runtime `config.json` (the bundle's, which the runtime gives the
/// container's UTS namespace), if only root can have written it.
pub(super) fn oci_hostname(config: &Path, root: &mut RootOwned) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Spec {
        hostname: Option<String>,
    }
    let spec: Spec = serde_json::from_slice(&root.file(config)?).ok()?;
    spec.hostname.filter(|h| !h.is_empty())
}

/// Docker's `/var/lib/docker/containers/<id>/config.v2.json`: `"Name": "/web-1"` and
/// `"Config": {"Hostname": ...}`, if only root can have written it.
pub(super) fn docker_state(id: &str, root: &mut RootOwned) -> (Option<String>, Option<String>) {
    #[derive(serde::Deserialize)]
    struct Inner {
        #[serde(rename = "Hostname")]
        hostname: Option<String>,
    }
    #[derive(serde::Deserialize)]
    struct Config {
        #[serde(rename = "Name")]
        name: String,
        #[serde(rename = "Config")]
        config: Option<Inner>,
    }
    let path = format!("/var/lib/docker/containers/{id}/config.v2.json");
    let Some(c) = root
        .file(Path::new(&path))
        .and_then(|t| serde_json::from_slice::<Config>(&t).ok())
    else {
        return (None, None);
    };
    let name = c.name.trim_start_matches('/');
    let host = c.config.and_then(|i| i.hostname).filter(|h| !h.is_empty());
    ((!name.is_empty()).then(|| name.to_string()), host)
}

/// Kubernetes keeps each pod's logs in `/var/log/pods/<namespace>_<pod>_<uid>/` (the kubelet's,
/// root's).
pub(super) fn kubernetes_pod(uid: &str, root: &mut RootOwned) -> Option<String> {
    let dir = Path::new("/var/log/pods");
    if !root.dirs(dir) {
        return None;
    }
    std::fs::read_dir(dir).ok()?.flatten().find_map(|e| {
        let name = e.file_name().into_string().ok()?;
        let mut parts = name.splitn(3, '_');
        let (ns, pod, u) = (parts.next()?, parts.next()?, parts.next()?);
        (u == uid).then(|| format!("{ns}/{pod}"))
    })
}

/// Who runs a namespace, and whether that is proven.
pub(super) struct Who {
    pub(super) proven: bool,
    pub(super) container: ContainerId,
    pub(super) hostname: HostName,
}

pub(super) fn anonymous(inode: u64) -> ContainerId {
    ContainerId {
        runtime: "unknown".into(),
        id: format!("pid:[{inode}]"),
        name: None,
    }
}

/// Whether the namespace `inode`, whose PID 1's parent is `ppid` and whose cgroup is
/// `cgroup`, was made by a process in another namespace than ours with that very cgroup: by
/// a program inside a container (Podman in Podman, a Kubernetes node's runtime, a sandbox).
/// A runtime's own monitor (`conmon`, a `containerd-shim`) runs in a cgroup of its own.
pub(super) fn made_inside(inode: u64, ppid: Option<i32>, cgroup: &str) -> bool {
    let Some(parent) = ppid.filter(|&p| p > 0) else {
        return false;
    };
    let Some(ns) = ns_inode(&parent.to_string(), "pid") else {
        return false;
    };
    ns != inode
        && Some(ns) != ns_inode("self", "pid")
        && locksmith_sys::host::read_proc_text(format!("/proc/{parent}/cgroup"))
            .is_ok_and(|c| !c.is_empty() && c == cgroup)
}

/// Who runs the namespace whose PID 1 is `init` (see the module docs).
pub(super) fn identify(inode: u64, init: &Member, names: &mut NameSources) -> Who {
    let (ppid, init) = (init.ppid, init.host);
    if !root_created(init, names.own_user_ns) {
        return Who {
            proven: false,
            container: anonymous(inode),
            hostname: HostName::default(),
        };
    }
    let mut cgroup =
        locksmith_sys::host::read_proc_text(format!("/proc/{init}/cgroup")).unwrap_or_default();
    if cgroup == names.own_cgroup || made_inside(inode, ppid, &cgroup) {
        // Our own cgroup, inherited (a bare `unshare`): it names whatever runs us, not it.
        // Or its maker's, in a container (a sandbox or a runtime run there): it names that
        // container, which this namespace is not, but one inside it.
        cgroup.clear();
    }
    let mut lines: Vec<&str> = cgroup.lines().collect();
    lines.sort_by_key(|l| !l.starts_with("0::"));
    // The first line that names a container and is root's (the name is read first: it costs
    // nothing, the ownership one `lstat` a directory of the cgroup's path).
    let mut id = lines
        .into_iter()
        .find_map(|l| {
            let id = from_cgroup_path(l.splitn(3, ':').nth(2)?)?;
            root_owned_cgroup(l, &names.cgroups).then_some(id)
        })
        .unwrap_or_else(|| anonymous(inode));
    let mut hostname = HostName::default();
    match id.runtime.as_str() {
        "podman" => {
            let (name, host) = podman_state(ppid, &id.id, names);
            id.name = id.name.take().or(name);
            hostname = host;
        }
        "docker" => {
            let (name, host) = docker_state(&id.id, &mut names.root);
            id.name = id.name.take().or(name);
            hostname = HostName::known(host);
        }
        "kubernetes" if id.name.is_none() => {
            if let Some(uid) = kubernetes_pod_uid(&cgroup) {
                id.name = kubernetes_pod(&uid, &mut names.root);
            }
        }
        _ => {}
    }
    Who {
        proven: true,
        container: id,
        hostname,
    }
}

/// A Podman container's name and host name. Its `conmon` (`ppid`, the parent of its PID 1,
/// started by root's podman with `-c <id> -n NAME -b <storage>/<driver>-containers/<id>/userdata`) says
/// where its storage is, when it runs as root; the name is the storage's `containers.json`'s
/// (that one, then the default storage's), else conmon's `-n`; the host name is the bundle's
/// OCI `config.json`'s, read when asked for.
pub(super) fn podman_state(
    ppid: Option<i32>,
    id: &str,
    names: &mut NameSources,
) -> (Option<String>, HostName) {
    let conmon: Vec<String> = ppid
        .filter(|&p| runs_as_root(p))
        .and_then(|p| locksmith_sys::host::read_proc(format!("/proc/{p}/cmdline")).ok())
        .map(|b| {
            b.split(|&c| c == 0)
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect()
        })
        .unwrap_or_default();
    let is_conmon = conmon
        .first()
        .is_some_and(|a| a.rsplit('/').next() == Some("conmon"));
    let arg = |flag: &str| {
        conmon
            .iter()
            .position(|a| a == flag)
            .and_then(|i| conmon.get(i + 1))
            .cloned()
    };
    let ours = is_conmon && arg("-c").as_deref() == Some(id);
    let mut stores: Vec<PathBuf> = Vec::new();
    let mut bundles: Vec<PathBuf> = Vec::new();
    if ours && let Some(bundle) = arg("-b") {
        let bundle = PathBuf::from(bundle);
        // <root>/<driver>-containers/<id>/userdata → <root>/<driver>-containers/containers.json
        if let Some(dir) = bundle.parent().and_then(Path::parent) {
            stores.push(dir.join("containers.json"));
        }
        bundles.push(bundle);
    }
    for driver in ["overlay", "vfs", "btrfs", "zfs"] {
        let dir = PathBuf::from(format!("/var/lib/containers/storage/{driver}-containers"));
        stores.push(dir.join("containers.json"));
        bundles.push(dir.join(id).join("userdata"));
    }
    let name = stores
        .into_iter()
        .find_map(|file| names.podman_name(file, id))
        .or_else(|| if ours { arg("-n") } else { None });
    (name, HostName::of_bundles(bundles))
}

/// Whether process `pid` runs as root (its effective uid, as our namespace sees it).
pub(super) fn runs_as_root(pid: i32) -> bool {
    locksmith_sys::host::read_proc_text(format!("/proc/{pid}/status")).is_ok_and(|s| {
        status_line(&s, "Uid:").and_then(|l| l.split_whitespace().nth(1)) == Some("0")
    })
}

pub(super) fn is_hex_id(s: &str) -> bool {
    s.len() >= 32 && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// systemd escapes `-` in unit names as `\x2d`.
pub(super) fn unescape_unit(s: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = rest.find("\\x") {
        out.push_str(&rest[..i]);
        let hex = rest.get(i + 2..i + 4);
        match hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
            Some(b) => {
                out.push(b as char);
                rest = &rest[i + 4..];
            }
            None => {
                out.push_str("\\x");
                rest = &rest[i + 2..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// The pod uid in a Kubernetes cgroup path (`pod<uid>` or `kubepods-…-pod<uid_with_underscores>.slice`).
pub(super) fn kubernetes_pod_uid(cgroup: &str) -> Option<String> {
    cgroup.lines().find_map(|line| {
        let path = line.splitn(3, ':').nth(2)?;
        path.split('/').find_map(|c| {
            let c = c.strip_suffix(".slice").unwrap_or(c);
            let uid = c.rsplit('-').next()?.strip_prefix("pod")?;
            (!uid.is_empty()).then(|| uid.replace('_', "-"))
        })
    })
}

/// The runtime and id a cgroup path names (each line of `/proc/<pid>/cgroup` is tried, the
/// unified hierarchy first). Names only: whether the cgroup is root's, so that the name can be
/// believed, is the inventory's check.
pub fn from_cgroup(cgroup: &str) -> Option<ContainerId> {
    let mut lines: Vec<&str> = cgroup.lines().collect();
    lines.sort_by_key(|l| !l.starts_with("0::"));
    lines.into_iter().find_map(|line| {
        let path = line.splitn(3, ':').nth(2)?;
        from_cgroup_path(path)
    })
}

pub(super) fn from_cgroup_path(path: &str) -> Option<ContainerId> {
    let comps: Vec<&str> = path.split('/').filter(|c| !c.is_empty()).collect();
    let kube = comps.iter().any(|c| c.starts_with("kubepods"));
    let make = |runtime: &str, id: &str, name: Option<String>| ContainerId {
        runtime: runtime.into(),
        id: id.into(),
        name,
    };
    for (i, raw) in comps.iter().enumerate().rev() {
        let c = raw
            .strip_suffix(".scope")
            .or_else(|| raw.strip_suffix(".slice"))
            .unwrap_or(raw);
        let parent = i.checked_sub(1).map(|p| comps[p]);
        if c.starts_with("libpod-conmon-") || c.starts_with("conmon") {
            continue;
        }
        if let Some(id) = c.strip_prefix("libpod-").filter(|s| is_hex_id(s)) {
            return Some(make(if kube { "kubernetes" } else { "podman" }, id, None));
        }
        for (prefix, runtime) in [
            ("docker-", "docker"),
            ("cri-containerd-", "containerd"),
            // CRI-O runs only under Kubernetes.
            ("crio-", "kubernetes"),
            ("nerdctl-", "containerd"),
        ] {
            if let Some(id) = c.strip_prefix(prefix).filter(|s| is_hex_id(s)) {
                return Some(make(if kube { "kubernetes" } else { runtime }, id, None));
            }
        }
        if c.len() == 64 && is_hex_id(c) {
            let runtime = match parent {
                _ if kube => "kubernetes",
                Some("docker") => "docker",
                Some("libpod_parent") => "podman",
                _ => "containerd",
            };
            return Some(make(runtime, c, None));
        }
        if let Some(name) = c.strip_prefix("machine-") {
            let name = unescape_unit(name);
            return Some(make("nspawn", &name, Some(name.clone())));
        }
        if let Some(name) = c.strip_prefix("lxc.payload.") {
            return Some(make("lxc", name, Some(name.to_string())));
        }
        if parent == Some("lxc") {
            return Some(make("lxc", c, Some(c.to_string())));
        }
        if let Some(rest) = c.strip_prefix("app-flatpak-") {
            // app-flatpak-<app id>-<number>
            let app = rest.rsplit_once('-').map_or(rest, |(a, _)| a);
            let app = unescape_unit(app);
            return Some(make("flatpak", &app, Some(app.clone())));
        }
        if let Some(rest) = c.strip_prefix("snap.") {
            let snap = rest.split('.').next().unwrap_or(rest);
            return Some(make("snap", rest, Some(snap.to_string())));
        }
    }
    None
}
