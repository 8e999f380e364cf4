//! The kind of file system a lock lives on. What a lock can rely on depends on it: a file
//! system that does not survive a reboot (`tmpfs`, `ramfs`) makes a file's age before boot
//! meaningless, an overlay may be a container's root, and a FUSE mount is named by its
//! mountinfo type (`fuse.sshfs`). Whether a mount talks to another machine is decided with its
//! mount source as well, so it is not a property of the kind alone ([`FsInfo::network`]).
//!
//! [`describe`] names the file system of a directory: the `statfs` magic, its name, whether it
//! is a network file system (where kernel locks and PIDs of other hosts cannot be trusted),
//! and the pseudo file systems a walker must not descend into. FUSE mounts are named by their
//! subtype from mountinfo.

use std::fmt;
use std::path::Path;

/// A file system type, as `statfs` (its magic number) or mountinfo (FUSE subtypes) names it.
/// Its text ([`FsKind::as_str`]) is the name the report shows (`"ext4"`, `"fuse.sshfs"`,
/// `"0x1234"` for a magic number without a name).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FsKind {
    Ext4,
    Xfs,
    Btrfs,
    Zfs,
    F2fs,
    Vfat,
    Ntfs,
    Tmpfs,
    Ramfs,
    Overlay,
    Nfs,
    Smb,
    Smb2,
    Cifs,
    Afs,
    NineP,
    Ceph,
    Coda,
    Ncp,
    Ocfs2,
    Gfs2,
    Lustre,
    Gpfs,
    BeeGfs,
    OrangeFs,
    /// A VirtualBox shared folder: the host machine's files, written by another kernel.
    Vboxsf,
    /// A FUSE mount: its mountinfo type (`fuse.sshfs`, `fuseblk`, `virtiofs`), or `fuse`
    /// when no mountinfo entry names it.
    Fuse(String),
    /// Any other file system, by name (a pseudo file system such as `proc`) or by magic
    /// number (`0x…`).
    Other(String),
    /// The file system could not be asked (`statfs` failed).
    Unknown,
}

impl FsKind {
    /// The name of the kind, as the report and messages show it.
    pub fn as_str(&self) -> &str {
        match self {
            FsKind::Ext4 => "ext4",
            FsKind::Xfs => "xfs",
            FsKind::Btrfs => "btrfs",
            FsKind::Zfs => "zfs",
            FsKind::F2fs => "f2fs",
            FsKind::Vfat => "vfat",
            FsKind::Ntfs => "ntfs",
            FsKind::Tmpfs => "tmpfs",
            FsKind::Ramfs => "ramfs",
            FsKind::Overlay => "overlay",
            FsKind::Nfs => "nfs",
            FsKind::Smb => "smb",
            FsKind::Smb2 => "smb2",
            FsKind::Cifs => "cifs",
            FsKind::Afs => "afs",
            FsKind::NineP => "9p",
            FsKind::Ceph => "ceph",
            FsKind::Coda => "coda",
            FsKind::Ncp => "ncp",
            FsKind::Ocfs2 => "ocfs2",
            FsKind::Gfs2 => "gfs2",
            FsKind::Lustre => "lustre",
            FsKind::Gpfs => "gpfs",
            FsKind::BeeGfs => "beegfs",
            FsKind::OrangeFs => "orangefs",
            FsKind::Vboxsf => "vboxsf",
            FsKind::Fuse(t) | FsKind::Other(t) => t,
            FsKind::Unknown => "unknown",
        }
    }

    /// The kind a name stands for (the inverse of [`as_str`](FsKind::as_str)): `fuse`,
    /// `fuse.*`, `fuseblk*` and `virtiofs` are FUSE mounts.
    pub fn from_name(name: &str) -> FsKind {
        match name {
            "ext4" => FsKind::Ext4,
            "xfs" => FsKind::Xfs,
            "btrfs" => FsKind::Btrfs,
            "zfs" => FsKind::Zfs,
            "f2fs" => FsKind::F2fs,
            "vfat" => FsKind::Vfat,
            "ntfs" => FsKind::Ntfs,
            "tmpfs" => FsKind::Tmpfs,
            "ramfs" => FsKind::Ramfs,
            "overlay" => FsKind::Overlay,
            "nfs" => FsKind::Nfs,
            "smb" => FsKind::Smb,
            "smb2" => FsKind::Smb2,
            "cifs" => FsKind::Cifs,
            "afs" => FsKind::Afs,
            "9p" => FsKind::NineP,
            "ceph" => FsKind::Ceph,
            "coda" => FsKind::Coda,
            "ncp" => FsKind::Ncp,
            "ocfs2" => FsKind::Ocfs2,
            "gfs2" => FsKind::Gfs2,
            "lustre" => FsKind::Lustre,
            "gpfs" => FsKind::Gpfs,
            "beegfs" => FsKind::BeeGfs,
            "orangefs" => FsKind::OrangeFs,
            "vboxsf" => FsKind::Vboxsf,
            "unknown" => FsKind::Unknown,
            f if f == "fuse" || f.starts_with("fuse.") || f.starts_with("fuseblk") => {
                FsKind::Fuse(f.to_string())
            }
            "virtiofs" => FsKind::Fuse(name.to_string()),
            other => FsKind::Other(other.to_string()),
        }
    }

    /// Whether the kind alone makes it a network file system (its files are written by other
    /// kernels too). FUSE mounts are decided by their subtype and mount source instead.
    pub fn is_network(&self) -> bool {
        matches!(
            self,
            FsKind::Nfs
                | FsKind::Smb
                | FsKind::Smb2
                | FsKind::Cifs
                | FsKind::Afs
                | FsKind::NineP
                | FsKind::Ceph
                | FsKind::Coda
                | FsKind::Ncp
                | FsKind::Ocfs2
                | FsKind::Gfs2
                | FsKind::Lustre
                | FsKind::Gpfs
                | FsKind::BeeGfs
                | FsKind::OrangeFs
                | FsKind::Vboxsf
        )
    }

    /// Whether its files live in memory only, so that no file on it was written before this
    /// boot, whatever its mtime says (`/run`, often `/tmp`).
    pub fn is_volatile(&self) -> bool {
        matches!(self, FsKind::Tmpfs | FsKind::Ramfs)
    }

    /// An overlay mount (a container image's root, seen from inside or outside).
    pub fn is_overlay(&self) -> bool {
        *self == FsKind::Overlay
    }

    /// A FUSE mount (including `fuseblk` and `virtiofs`).
    pub fn is_fuse(&self) -> bool {
        matches!(self, FsKind::Fuse(_))
    }
}

impl fmt::Display for FsKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl From<&str> for FsKind {
    fn from(name: &str) -> Self {
        FsKind::from_name(name)
    }
}

impl From<String> for FsKind {
    fn from(name: String) -> Self {
        FsKind::from_name(&name)
    }
}

impl PartialEq<str> for FsKind {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for FsKind {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl<'de> serde::Deserialize<'de> for FsKind {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = <String as serde::Deserialize>::deserialize(d)?;
        Ok(if name == "unknown" {
            FsKind::Unknown
        } else {
            FsKind::from(name)
        })
    }
}

impl serde::Serialize for FsKind {
    /// The name ([`as_str`](FsKind::as_str)): the report's `fs.type` text.
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// The file system a lock lives on.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct FsInfo {
    #[serde(rename = "type")]
    pub kind: FsKind,
    /// Other machines may reach it: a network file system, or a directory this host serves
    /// to them (`shared`).
    pub network: bool,
    /// What serves it to other machines, for a directory of a local file system this host
    /// shares (`NFS export /srv/data`, `Samba share [public] at /srv/public`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shared: Option<String>,
    /// An overlay mount that is not our own root: the root file system of a container seen
    /// from outside it, where PIDs written in files belong to the container's PID namespace.
    #[serde(skip)]
    pub container_root: bool,
    /// The file system of our own `/` (inside a container: the container's root).
    #[serde(skip)]
    pub own_root: bool,
}

impl FsInfo {
    pub fn new(kind: impl Into<FsKind>, network: bool) -> Self {
        FsInfo {
            kind: kind.into(),
            network,
            shared: None,
            container_root: false,
            own_root: false,
        }
    }

    /// Where another machine may reach it, for the evidence: `on a network file system
    /// (nfs)`, or `in a directory this host shares with other machines (NFS export /srv)`.
    pub fn reached_from_afar(&self) -> String {
        match &self.shared {
            Some(what) => format!("in a directory this host shares with other machines ({what})"),
            None => format!("on a network file system ({})", self.kind),
        }
    }

    /// Whether a server's clock sets its files' times (a network file system; a directory
    /// this host shares is written by this host's clock).
    pub fn remote_clock(&self) -> bool {
        self.network && self.shared.is_none()
    }

    pub fn unknown() -> Self {
        FsInfo::new(FsKind::Unknown, false)
    }
}

/// `(magic, name, network, pseudo)`.
const MAGICS: &[(u64, &str, bool, bool)] = &[
    (0xEF53, "ext4", false, false),
    (0x5846_5342, "xfs", false, false),
    (0x9123_683E, "btrfs", false, false),
    (0x0102_1994, "tmpfs", false, false),
    (0x794C_7630, "overlay", false, false),
    (0x2FC1_2FC1, "zfs", false, false),
    (0xF2F5_2010, "f2fs", false, false),
    (0x4D44, "vfat", false, false),
    (0x5346_544E, "ntfs", false, false),
    (0x6165_676C, "pstore", false, true),
    (0x858_458F6, "ramfs", false, false),
    (0x6969, "nfs", true, false),
    (0x517B, "smb", true, false),
    (0xFF53_4D42, "cifs", true, false),
    (0xFE53_4D42, "smb2", true, false),
    (0x5346_414F, "afs", true, false),
    (0x6B41_4653, "afs", true, false),
    (0x0102_1997, "9p", true, false),
    (0x00C3_6400, "ceph", true, false),
    (0x7375_7245, "coda", true, false),
    (0x564C, "ncp", true, false),
    (0x7461_636F, "ocfs2", true, false),
    (0x0116_1970, "gfs2", true, false),
    (0x0BD0_0BD0, "lustre", true, false),
    (0x4750_4653, "gpfs", true, false),
    (0x1983_0326, "beegfs", true, false),
    (0x2003_0528, "orangefs", true, false),
    // A VirtualBox shared folder: the host machine's files, written by another kernel.
    (0x786F_4256, "vboxsf", true, false),
    (0x6573_5546, "fuse", false, false),
    (0x9FA0, "proc", false, true),
    (0x6265_6572, "sysfs", false, true),
    (0x1CD1, "devpts", false, true),
    (0x0027_E0EB, "cgroup", false, true),
    (0x6367_7270, "cgroup2", false, true),
    (0x6462_6720, "debugfs", false, true),
    (0x7472_6163, "tracefs", false, true),
    (0x7363_6673, "securityfs", false, true),
    (0xCAFE_4A11, "bpf", false, true),
    (0x6265_6570, "configfs", false, true),
    (0x6573_746C, "fusectl", false, true),
    (0x1980_0202, "mqueue", false, true),
    (0x9584_58F6, "hugetlbfs", false, true),
    (0x0187, "autofs", false, true),
    (0x4249_4E4D, "binfmt_misc", false, true),
    (0xF97C_FF8C, "selinuxfs", false, true),
    (0xDE5E_81E4, "efivarfs", false, true),
    (0x6E73_6673, "nsfs", false, true),
];

/// FUSE subtypes that talk to another machine (or to another kernel: a VM's host).
const NETWORK_FUSE: &[&str] = &[
    "sshfs",
    "s3fs",
    "gcsfuse",
    "rclone",
    "glusterfs",
    "ceph-fuse",
    "cephfs",
    "davfs",
    "davfs2",
    "curlftpfs",
    "juicefs",
    "goofys",
    "mountpoint-s3",
    "blobfuse",
    "blobfuse2",
    "afpfs",
    "smbnetfs",
    "lizardfs",
    "moosefs",
    "mfs",
    "seaweedfs",
    "virtiofs",
    "vmhgfs-fuse",
    "gvfsd-fuse",
    "kio-fuse",
    "ossfs",
    "cosfs",
    "obsfs",
    "cvmfs2",
    "xtreemfs",
    "alluxio-fuse",
    "hdfs",
    "fuse_dfs",
    "ipfs",
    "kbfsfuse",
    "onedriver",
    "google-drive-ocamlfuse",
    "webdavfs",
    "wdfs",
    "sshfs-win",
];

/// FUSE subtypes known to serve this machine's own data (stacked on a local directory,
/// an archive, a device): local.
const LOCAL_FUSE: &[&str] = &[
    "fuse-overlayfs",
    "bindfs",
    "mergerfs",
    "unionfs",
    "unionfs-fuse",
    "lxcfs",
    "portal",
    "doc",
    "gocryptfs",
    "encfs",
    "cryfs",
    "securefs",
    "ntfs-3g",
    "ntfs",
    "exfat",
    "squashfuse",
    "squashfuse_ll",
    "snapfuse",
    "archivemount",
    "fuse-zip",
    "ratarmount",
    "avfsd",
    "jmtpfs",
    "simple-mtpfs",
    "ifuse",
    "rar2fs",
    "dislocker",
];

/// Whether a FUSE mount (`fuse.<subtype>` in mountinfo, and its mount source) is a network
/// file system. Known subtypes decide; an unknown one is network when its source names a
/// remote (`host:path`, `user@host:path`, `remote:`, `scheme://...`), and also when nothing
/// says it is local: a lock there cannot be proven to be this machine's (README: Evidence).
pub fn fuse_is_network(fs_type: &str, source: Option<&str>) -> bool {
    if fs_type.starts_with("fuseblk") {
        return false; // a local block device (ntfs-3g, exfat, ...)
    }
    let sub = fs_type.strip_prefix("fuse.").unwrap_or(fs_type);
    if NETWORK_FUSE.contains(&sub) {
        return true;
    }
    if LOCAL_FUSE.contains(&sub) {
        return false;
    }
    let Some(src) = source else {
        return true;
    };
    if src.contains("://") {
        return true;
    }
    if let Some((before, _)) = src.split_once(':')
        && !before.is_empty()
        && !before.contains('/')
        && !before.contains(char::is_whitespace)
    {
        return true;
    }
    // A local path or a program name as the source (bindfs, AppImage runtimes...): stacked
    // on this machine's own files.
    !(src.starts_with('/') || src == sub)
}

const FUSE_MAGIC: u64 = 0x6573_5546;

/// The magic number of the file system holding `path` (not following a final symlink is not
/// possible with statfs; callers pass a directory).
pub fn magic(path: &Path) -> Option<u64> {
    #[cfg(target_os = "linux")]
    {
        rustix::fs::statfs(path).ok().map(|s| s.f_type as u64)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = path;
        None
    }
}

/// The file system this `statfs` magic names, when locksmith knows it: its name, whether it is
/// a network file system, and whether it must never be walked.
fn known_magic(magic: u64) -> Option<(&'static str, bool, bool)> {
    MAGICS
        .iter()
        .find(|(m, ..)| *m == magic)
        .map(|&(_, name, network, pseudo)| (name, network, pseudo))
}

/// Whether the file system with this magic must never be walked (proc, sysfs, ...).
pub fn is_pseudo(magic: u64) -> bool {
    known_magic(magic).is_some_and(|(_, _, pseudo)| pseudo)
}

/// The kind of pseudo file system (proc, sysfs, ...) the open directory `dir` is on, if it is
/// on one: [`is_pseudo`] asked with one `fstatfs`, no path resolved.
pub fn pseudo_of(dir: std::os::fd::BorrowedFd<'_>) -> Option<FsKind> {
    #[cfg(target_os = "linux")]
    {
        let magic = rustix::fs::fstatfs(dir).ok()?.f_type as u64;
        known_magic(magic)
            .filter(|&(_, _, pseudo)| pseudo)
            .map(|(name, _, _)| FsKind::from_name(name))
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = dir;
        None
    }
}

/// Describes the file system of `dir` (a directory, so statfs does not follow a lock symlink)
/// whose device is `dev`.
pub fn describe(dir: &Path, dev: u64) -> FsInfo {
    let Some(m) = magic(dir) else {
        return FsInfo::unknown();
    };
    if m == FUSE_MAGIC {
        // virtiofs shares the FUSE magic; its mountinfo type is `virtiofs`.
        return match fuse_mount(dev) {
            Some((kind, source)) => {
                let network = fuse_is_network(&kind, source.as_deref());
                FsInfo::new(FsKind::Fuse(kind), network)
            }
            // No mountinfo entry to say what it is: it cannot be proven local.
            None => FsInfo::new(FsKind::Fuse("fuse".into()), true),
        };
    }
    match known_magic(m) {
        Some((name, network, _)) => FsInfo::new(FsKind::from_name(name), network),
        None => FsInfo::new(FsKind::Other(format!("0x{m:x}")), false),
    }
}

/// The type (`fuse.<subtype>`, `fuseblk`, `virtiofs`) and mount source of the mount with device
/// `dev`, from `/proc/self/mountinfo` (proc(5): `ID PARENT MAJ:MIN ROOT POINT OPTIONS
/// [OPTIONAL...] - TYPE SOURCE SUPER-OPTIONS`).
fn fuse_mount(dev: u64) -> Option<(String, Option<String>)> {
    #[cfg(target_os = "linux")]
    {
        let want = format!(
            "{}:{}",
            rustix::fs::major(dev as _),
            rustix::fs::minor(dev as _)
        );
        let infos = crate::host::read_proc("/proc/self/mountinfo").ok()?;
        infos.split(|b| *b == b'\n').find_map(|line| {
            let fields: Vec<&[u8]> = line.split(|b| *b == b' ').collect();
            if fields.get(2).copied() != Some(want.as_bytes()) {
                return None;
            }
            let dash = fields.iter().position(|f| *f == b"-")?;
            let text = |f: &[u8]| String::from_utf8_lossy(f).into_owned();
            let fs_type = text(fields.get(dash + 1)?);
            let source = fields
                .get(dash + 2)
                .filter(|s| !s.is_empty() && **s != b"none")
                .map(|s| text(s));
            Some((fs_type, source))
        })
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = dev;
        None
    }
}

/// The type of the file system mounted at `point` as this process sees it (the last mount
/// there, which hides the others), from `/proc/self/mountinfo`: `devtmpfs` where `statfs`
/// would only say tmpfs.
pub fn mount_type_at(point: &Path) -> Option<String> {
    #[cfg(target_os = "linux")]
    {
        let infos = crate::host::read_proc("/proc/self/mountinfo").ok()?;
        mount_type_in(&infos, point)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = point;
        None
    }
}

/// [`mount_type_at`] in the mountinfo text `infos`.
fn mount_type_in(infos: &[u8], point: &Path) -> Option<String> {
    use std::os::unix::ffi::OsStrExt;
    let want = point.as_os_str().as_bytes();
    infos.split(|b| *b == b'\n').rev().find_map(|line| {
        let fields: Vec<&[u8]> = line.split(|b| *b == b' ').collect();
        if mountinfo_unescape(fields.get(4)?) != want {
            return None;
        }
        let dash = fields.iter().position(|f| *f == b"-")?;
        Some(String::from_utf8_lossy(fields.get(dash + 1)?).into_owned())
    })
}

/// Undoes mountinfo's escaping of space, tab, newline and backslash as `\ooo` (proc(5)).
pub fn mountinfo_unescape(s: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len());
    let mut i = 0;
    while i < s.len() {
        if s[i] == b'\\'
            && i + 4 <= s.len()
            && s[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c))
        {
            let v = u32::from(s[i + 1] - b'0') * 64
                + u32::from(s[i + 2] - b'0') * 8
                + u32::from(s[i + 3] - b'0');
            out.push(v as u8);
            i += 4;
        } else {
            out.push(s[i]);
            i += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_mount_at_a_point_gives_its_type() {
        let infos = b"22 1 0:5 / /dev rw,nosuid - devtmpfs udev rw\n\
                      30 22 0:30 / /dev/shm rw - tmpfs tmpfs rw\n\
                      40 1 0:40 / /my\\040dev rw - ext4 /dev/sda1 rw\n";
        assert_eq!(
            mount_type_in(infos, Path::new("/dev")).as_deref(),
            Some("devtmpfs")
        );
        assert_eq!(
            mount_type_in(infos, Path::new("/my dev")).as_deref(),
            Some("ext4")
        );
        let hidden =
            b"22 1 0:5 / /dev rw - devtmpfs udev rw\n50 22 0:50 / /dev rw - tmpfs none rw\n";
        assert_eq!(
            mount_type_in(hidden, Path::new("/dev")).as_deref(),
            Some("tmpfs")
        );
        assert_eq!(mount_type_in(infos, Path::new("/run")), None);
    }

    #[test]
    fn names_round_trip() {
        for name in [
            "ext4",
            "xfs",
            "btrfs",
            "zfs",
            "f2fs",
            "vfat",
            "ntfs",
            "tmpfs",
            "ramfs",
            "overlay",
            "nfs",
            "smb",
            "smb2",
            "cifs",
            "afs",
            "9p",
            "ceph",
            "coda",
            "ncp",
            "ocfs2",
            "gfs2",
            "lustre",
            "gpfs",
            "beegfs",
            "orangefs",
            "vboxsf",
            "fuse",
            "fuse.sshfs",
            "fuseblk",
            "virtiofs",
            "proc",
            "0x1234",
            "unknown",
        ] {
            let kind = FsKind::from_name(name);
            assert_eq!(kind.as_str(), name);
            assert_eq!(kind.to_string(), name);
            assert_eq!(serde_json::to_string(&kind).unwrap(), format!("\"{name}\""));
        }
        assert_eq!(
            FsKind::from_name("fuse.sshfs"),
            FsKind::Fuse("fuse.sshfs".into())
        );
        assert!(FsKind::from_name("virtiofs").is_fuse());
        assert!(FsKind::Nfs.is_network() && !FsKind::Ext4.is_network());
        assert!(
            !FsKind::from_name("fuse.sshfs").is_network(),
            "decided by its source"
        );
        assert!(FsKind::Tmpfs.is_volatile() && FsKind::Ramfs.is_volatile());
        assert!(!FsKind::Ext4.is_volatile() && FsKind::Overlay.is_overlay());
        assert!(matches!(FsKind::from_name("proc"), FsKind::Other(_)));
    }

    #[test]
    fn the_network_column_agrees_with_the_kind() {
        for (m, name, network, pseudo) in MAGICS {
            let kind = FsKind::from_name(name);
            assert_eq!(kind.as_str(), *name, "{m:x}");
            assert_eq!(kind.is_network(), *network, "{name}");
            assert!(!(*pseudo && *network), "{name}");
        }
    }

    #[test]
    fn classifies_magics() {
        assert!(is_pseudo(0x9FA0));
        assert!(!is_pseudo(0xEF53));
        assert!(
            MAGICS
                .iter()
                .any(|(m, n, net, _)| *m == 0x6969 && *n == "nfs" && *net)
        );
    }

    #[test]
    fn classifies_fuse_mounts() {
        for (kind, source, network) in [
            ("fuse.sshfs", Some("root@127.0.0.1:/srv"), true),
            ("fuse.sshfs", None, true),
            ("fuse.rclone", Some("gdrive:"), true),
            ("fuse.s3fs", Some("s3fs"), true),
            ("fuse.gcsfuse", Some("my-bucket"), true),
            ("fuse.glusterfs", Some("server:/vol"), true),
            ("virtiofs", Some("myfs"), true),
            ("fuseblk", Some("/dev/sdb1"), false),
            ("fuse.fuse-overlayfs", Some("fuse-overlayfs"), false),
            ("fuse.bindfs", Some("/home/me/src"), false),
            ("fuse.lxcfs", Some("lxcfs"), false),
            ("fuse.portal", Some("portal"), false),
            // Unknown subtypes: by their source.
            ("fuse.newfs", Some("alice@files.example:/x"), true),
            ("fuse.newfs", Some("https://dav.example/x"), true),
            ("fuse.newfs", Some("/home/me/data"), false),
            ("fuse.newfs", Some("newfs"), false),
            ("fuse.newfs", Some("a volume"), true),
            ("fuse.newfs", None, true),
        ] {
            assert_eq!(
                fuse_is_network(kind, source),
                network,
                "{kind} from {source:?}"
            );
        }
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn describes_proc_and_tmp() {
        assert!(is_pseudo(magic(Path::new("/proc")).unwrap()));
        let meta = std::fs::metadata("/tmp").unwrap();
        use std::os::unix::fs::MetadataExt;
        let info = describe(Path::new("/tmp"), meta.dev());
        assert!(!info.network, "{info:?}");
    }
}

/// What the kernel already knows of a file: its device, inode and type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Known {
    pub dev: u64,
    pub ino: u64,
    /// `st_mode`'s file type bits.
    pub mode: u32,
}

impl Known {
    pub fn is_file(&self) -> bool {
        self.mode & 0o170000 == 0o100000
    }

    pub fn is_dir(&self) -> bool {
        self.mode & 0o170000 == 0o040000
    }
}

/// `stat` of `path` (symlinks followed) from what the kernel knows, never asking a network or
/// FUSE file system's server, which may not answer: on Linux `statx` with
/// `AT_STATX_DONT_SYNC`. Every look at another process's descriptors (`/proc/<pid>/fd/<fd>`,
/// which follows the magic link to the open file itself, even a deleted one) and working
/// directory (`/proc/<pid>/cwd` and its `..`, which the kernel follows without asking the
/// file system) goes through it: a process with a file open on a mount whose server stopped
/// does not stop the evidence.
pub fn known(path: &std::path::Path) -> std::io::Result<Known> {
    #[cfg(target_os = "linux")]
    {
        known_at(rustix::fs::CWD, path)
    }
    #[cfg(not(target_os = "linux"))]
    {
        use std::os::unix::fs::MetadataExt;
        let meta = std::fs::metadata(path)?;
        Ok(Known {
            dev: meta.dev(),
            ino: meta.ino(),
            mode: meta.mode(),
        })
    }
}

/// [`known`] of `path` relative to the open directory `dir` (a process's `/proc/<pid>/fd`,
/// listed once and each descriptor asked through it).
#[cfg(target_os = "linux")]
pub fn known_at<Fd: std::os::fd::AsFd, P: rustix::path::Arg>(
    dir: Fd,
    path: P,
) -> std::io::Result<Known> {
    use rustix::fs::{AtFlags, StatxFlags};
    let st = rustix::fs::statx(
        dir,
        path,
        AtFlags::STATX_DONT_SYNC,
        StatxFlags::INO | StatxFlags::TYPE,
    )?;
    Ok(Known {
        dev: rustix::fs::makedev(st.stx_dev_major, st.stx_dev_minor),
        ino: st.stx_ino,
        mode: u32::from(st.stx_mode),
    })
}

/// A file's birth time (ms since the epoch) by `statx(2)`, which every C library's `stat` does
/// not ask for (musl's does not): `None` where the file system keeps none. `follow`: of what a
/// symlink names, else of the link itself.
#[cfg(target_os = "linux")]
pub fn birth_ms(path: &Path, follow: bool) -> Option<i64> {
    use rustix::fs::{AtFlags, CWD, StatxFlags, statx};
    let flags = if follow {
        AtFlags::empty()
    } else {
        AtFlags::SYMLINK_NOFOLLOW
    };
    let st = statx(CWD, path, flags, StatxFlags::BTIME).ok()?;
    if st.stx_mask & StatxFlags::BTIME.bits() == 0 {
        return None;
    }
    Some(st.stx_btime.tv_sec * 1000 + i64::from(st.stx_btime.tv_nsec / 1_000_000))
}

/// See the Linux version: no birth time is read elsewhere.
#[cfg(not(target_os = "linux"))]
pub fn birth_ms(_path: &Path, _follow: bool) -> Option<i64> {
    None
}
