//! The kind of file system a lock lives on. What a lock can rely on depends on it: a file
//! system that does not survive a reboot (`tmpfs`, `ramfs`) makes a file's age before boot
//! meaningless, an overlay may be a container's root, and a FUSE mount is named by its
//! mountinfo type (`fuse.sshfs`). Whether a mount talks to another machine is decided with its
//! mount source as well, so it is not a property of the kind alone (see `network`).

use std::fmt;

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

impl serde::Serialize for FsKind {
    /// The name ([`as_str`](FsKind::as_str)): the report's `fs.type` text.
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
