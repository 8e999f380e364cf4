//! A btrfs file system of its own: an image file on a loop device, mounted in a temp dir, with
//! one subvolume (whose files carry a device number no mount table shows).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The mounted file system and its subvolume `sub`; unmounted when dropped.
pub struct BtrfsSubvolume {
    /// The subvolume.
    pub sub: PathBuf,
    mnt: PathBuf,
}

impl BtrfsSubvolume {
    /// Makes `DIR/btrfs.img`, mounts it on `DIR/mnt` and creates the subvolume `DIR/mnt/sub`.
    /// `Err` with the reason when that cannot be done here (it needs root, `mkfs.btrfs` and a
    /// loop device).
    pub fn make(dir: &Path) -> Result<BtrfsSubvolume, String> {
        if !rustix::process::geteuid().is_root() {
            return Err("mounting a btrfs file system needs root".into());
        }
        if super::which("mkfs.btrfs").is_none() {
            return Err("mkfs.btrfs (btrfs-progs) is not installed".into());
        }
        let img = dir.join("btrfs.img");
        let mnt = dir.join("mnt");
        std::fs::create_dir(&mnt).unwrap();
        std::fs::File::create(&img)
            .unwrap()
            .set_len(200 << 20)
            .unwrap();
        let ok = |c: &mut Command| c.stdout(Stdio::null()).status().is_ok_and(|s| s.success());
        if !ok(Command::new("mkfs.btrfs").arg("-q").arg(&img))
            || !ok(Command::new("mount")
                .args(["-o", "loop"])
                .arg(&img)
                .arg(&mnt))
        {
            return Err("cannot make or mount a btrfs file system here".into());
        }
        let vol = BtrfsSubvolume {
            sub: mnt.join("sub"),
            mnt,
        };
        assert!(ok(Command::new("btrfs")
            .args(["subvolume", "create"])
            .arg(&vol.sub)));
        Ok(vol)
    }
}

impl Drop for BtrfsSubvolume {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.mnt).status();
    }
}
