//! A real network file system for tests: `sshd` on 127.0.0.1 (a free port, a throw-away host
//! key and user key, a configuration file of its own) and `sshfs` mounting a directory of this
//! machine through it. Everything is stopped and removed when the [`Sshfs`] is dropped:
//! unmount, then the `sshfs` client, then `sshd`.
//!
//! [`Sshfs::start_with`] answers `Err(reason)` only when the machine cannot do it at all (no `sshd`,
//! `sshfs` or `/dev/fuse`, not root): the caller skips with that reason.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::sshd::Sshd;

pub struct Sshfs {
    /// The exported directory and the mount point.
    dir: tempfile::TempDir,
    /// The mount point: the exported directory seen through sshfs.
    pub mnt: PathBuf,
    /// The exported directory itself (the "server side").
    pub export: PathBuf,
    sshd: Sshd,
    sshfs: Option<Child>,
}

impl Sshfs {
    /// Starts `sshd` and mounts its export as a user would (`sshfs host:dir mnt` with a key),
    /// with extra sshfs `-o` options (none: no cache options).
    pub fn start_with(options: &[&str]) -> Result<Sshfs, String> {
        if let Some(why) = crate::sshd::unavailable() {
            return Err(why);
        }
        if !Path::new("/dev/fuse").exists() {
            return Err("/dev/fuse is not available".into());
        }
        for tool in ["sshfs", "fusermount3"] {
            if crate::which(tool).is_none() {
                return Err(format!("{tool} is not installed"));
            }
        }
        let dir = tempfile::Builder::new()
            .prefix("locksmith-sshfs")
            .tempdir()
            .map_err(|e| e.to_string())?;
        let export = dir.path().join("export");
        let mnt = dir.path().join("mnt");
        std::fs::create_dir(&export).unwrap();
        std::fs::create_dir(&mnt).unwrap();
        let sshd = Sshd::start_as(None);
        let port = sshd.port;
        let mut me = Sshfs {
            mnt,
            export,
            sshd,
            sshfs: None,
            dir,
        };
        me.mount(port, options)?;
        Ok(me)
    }

    fn mount(&mut self, port: u16, options: &[&str]) -> Result<(), String> {
        let d = self.dir.path();
        let key = self.sshd.path("user_key");
        let log = std::fs::File::create(d.join("sshfs.log")).unwrap();
        let child = Command::new("sshfs")
            .arg(format!("root@127.0.0.1:{}", self.export.display()))
            .arg(&self.mnt)
            .arg("-f")
            .arg("-o")
            .arg(format!(
                "port={port},IdentityFile={},StrictHostKeyChecking=no,\
                 UserKnownHostsFile=/dev/null,BatchMode=yes,LogLevel=ERROR",
                key.display()
            ))
            .args(options.iter().flat_map(|o| ["-o", *o]))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .map_err(|e| format!("cannot start sshfs: {e}"))?;
        self.sshfs = Some(child);
        let deadline = Instant::now() + Duration::from_secs(20);
        while !self.mounted() {
            if let Some(st) = self.sshfs.as_mut().unwrap().try_wait().unwrap() {
                let log = std::fs::read_to_string(d.join("sshfs.log")).unwrap_or_default();
                // No FUSE mounts allowed here (a container without the capability or the
                // device): unavailable, not a failure of ours.
                if ["/dev/fuse", "fusermount", "fuse: "]
                    .iter()
                    .any(|w| log.contains(w))
                {
                    return Err(format!("FUSE mounts are not possible here: {}", log.trim()));
                }
                panic!("sshfs exited with {st} before mounting: {log}");
            }
            assert!(Instant::now() < deadline, "sshfs did not mount in time");
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(())
    }

    /// The PID of the ssh server behind the mount (its sessions, serving SFTP, are its
    /// children).
    pub fn server_pid(&self) -> u32 {
        self.sshd.pid()
    }

    /// Whether the mount point is an sshfs mount now.
    fn mounted(&self) -> bool {
        let Ok(info) = std::fs::read_to_string("/proc/self/mountinfo") else {
            return false;
        };
        let mnt = self.mnt.to_string_lossy();
        info.lines().any(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            f.len() > 4 && f[4] == mnt && l.contains(" - fuse.sshfs ")
        })
    }

    /// Names in the exported directory, as the server sees them (no cache in between).
    ///
    /// A file unlinked while this side still has it open is renamed `.fuse_hidden*` by sshfs and
    /// removed when the kernel delivers the close (FUSE's RELEASE, which is asynchronous: close()
    /// returns before sshfs has seen it). So while such names are listed, this waits up to 5 s
    /// for them to go; one that stays is returned, and fails the test's comparison.
    pub fn server_names(&self) -> Vec<String> {
        let list = || {
            let mut v: Vec<String> = std::fs::read_dir(&self.export)
                .unwrap()
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect();
            v.sort();
            v
        };
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        loop {
            let v = list();
            if !v.iter().any(|n| n.starts_with(".fuse_hidden"))
                || std::time::Instant::now() >= deadline
            {
                return v;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}

impl Drop for Sshfs {
    fn drop(&mut self) {
        if self.mounted() {
            let ok = Command::new("fusermount3")
                .arg("-u")
                .arg(&self.mnt)
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            if !ok {
                // Busy (a process of a failed test still inside): detach it.
                let _ = Command::new("fusermount3")
                    .arg("-uz")
                    .arg(&self.mnt)
                    .status();
            }
        }
        if let Some(mut c) = self.sshfs.take() {
            let deadline = Instant::now() + Duration::from_secs(5);
            while c.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(10));
            }
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// [`Sshfs::start_with`], or `None` when this machine cannot mount it: the test skips
/// (`skip`: a failure under CI), saying why.
pub fn mount_or_skip(options: &[&str]) -> Option<Sshfs> {
    match Sshfs::start_with(options) {
        Ok(m) => Some(m),
        Err(why) => {
            crate::skip(format!("no sshfs mount possible: {why}"));
            None
        }
    }
}

/// A command run as "another host" sharing this machine's mounts: a new UTS namespace with
/// host name `host`, and a mount namespace in which `/proc/sys/kernel/random/boot_id` reads
/// `boot_id` (another kernel, as a second machine would have). `Err` when namespaces cannot
/// be made here.
pub fn other_host(
    host: &str,
    boot_id: &str,
    program: &str,
    args: &[&str],
) -> Result<Command, String> {
    let probe = Command::new("unshare")
        .args(["-mu", "true"])
        .stderr(Stdio::null())
        .status();
    if !matches!(probe, Ok(s) if s.success()) {
        return Err("unshare -mu does not work here".into());
    }
    let f = tempfile::Builder::new()
        .prefix("locksmith-boot-id")
        .tempfile()
        .unwrap();
    std::fs::write(f.path(), format!("{boot_id}\n")).unwrap();
    let (_, path) = f.keep().unwrap();
    let mut c = Command::new("unshare");
    c.args(["-mu", "sh", "-c"])
        .arg(
            "hostname \"$1\" && mount --bind \"$2\" /proc/sys/kernel/random/boot_id && rm -f \"$2\" && shift 2 && exec \"$@\"",
        )
        .arg("sh")
        .arg(host)
        .arg(&path)
        .arg(program)
        .args(args);
    Ok(c)
}
