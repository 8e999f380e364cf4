//! The start guard: a kernel lock that a service started by `locksmith start` holds for as
//! long as it runs, on a file beside its pid file (`.NAME.locksmith-start` beside `NAME`).
//!
//! A pid file on a volume may have been written in another container, whose processes a
//! container cannot see: no PID proof made in one container stands for a volume others may
//! share. The kernel's lock table is not divided by PID namespaces: an OFD lock is held by an
//! open file description on this kernel, whichever container holds it, and through NFS's lock
//! manager it reaches the server and every other client. So the guard says, from the kernel,
//! whether a service started this way still runs, wherever it runs.
//!
//! What `locksmith start` does with it, for each PATH that is not a directory, when it has a
//! COMMAND to run:
//! 1. open the guard beside PATH (creating it) and take an OFD write lock on it without
//!    waiting ([`take`]). Not taken: a service started this way for PATH runs, and PATH is in
//!    the way. Taken: no such service runs now, and none can start while this start holds it;
//! 2. read the [`Record`] the previous start left: when it names PATH's file name, a service
//!    was started for that pid file, and it is gone (its lock was released). A pid file left
//!    there is that service's, unless something not started by `locksmith start` wrote it;
//! 3. judge and reclaim, then write this start's record ([`Guard::write`]) and hand the
//!    descriptor to COMMAND through `execve` ([`Guard::inherit`]): the service, and every child
//!    that inherits the descriptor, hold the lock until the last of them has exited.
//!
//! Invariants: a guard is a regular file, never followed through a symlink; locksmith never
//! removes one (the scanner calls it `free` or `live`: [`crate::dialect::start_guard`]); its
//! record is written only by a start that holds its lock and is about to run COMMAND, and erased
//! when COMMAND cannot be run, so a record means that a service ran under it; a record is no
//! engine record (no `tool` key), so nothing reads it as a lock of its own.

use std::ffi::{OsStr, OsString};
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

use crate::probe::{FsInfo, Stat};

/// What a guard's name adds to its pid file's name (after a leading dot).
pub const SUFFIX: &str = ".locksmith-start";

/// How much of a guard is read: a record is a few hundred bytes.
const MAX_RECORD: usize = 4096;

/// The guard of the pid file `pid_file`: `.NAME.locksmith-start` in the same directory. `None`
/// for a path with no file name (`/`, `..`).
pub fn path_for(pid_file: &Path) -> Option<PathBuf> {
    let name = pid_file.file_name()?;
    if name == ".." {
        return None;
    }
    Some(pid_file.with_file_name(name_for(name)))
}

fn name_for(pid_name: &OsStr) -> OsString {
    let mut name = b".".to_vec();
    name.extend_from_slice(pid_name.as_bytes());
    name.extend_from_slice(SUFFIX.as_bytes());
    OsString::from_vec(name)
}

/// The pid file's name a guard's name stands for (`.app.pid.locksmith-start` →
/// `app.pid`).
pub fn pid_name_of(guard_name: &OsStr) -> Option<&OsStr> {
    let inner = guard_name
        .as_bytes()
        .strip_prefix(b".")?
        .strip_suffix(SUFFIX.as_bytes())?;
    (!inner.is_empty()).then(|| OsStr::from_bytes(inner))
}

/// What a start wrote into its guard before it ran its service (one JSON object and a newline).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Record {
    /// The writer's version: marks the format (`0.1.0`).
    pub locksmith_start: String,
    /// The file name of the pid file this guard is for (lossy UTF-8).
    pub guards: String,
    /// When the service was started (RFC 3339).
    pub started_at: String,
    /// The service's PID, in its own PID namespace (the PID of `locksmith start`, which it
    /// became).
    pub pid: i64,
    /// The inode of that PID namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid_ns: Option<u64>,
    /// The host name it ran under.
    pub hostname: String,
    /// The boot id of the kernel it ran on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boot_id: Option<String>,
    /// The file name of the program it ran (never its arguments, which may hold secrets).
    pub program: String,
}

impl Record {
    /// The record of a service about to be started now for `pid_file` by this process.
    pub fn now(pid_file: &Path, program: &OsStr) -> Self {
        let program = Path::new(program)
            .file_name()
            .unwrap_or(program)
            .to_string_lossy()
            .into_owned();
        Record {
            locksmith_start: env!("CARGO_PKG_VERSION").to_string(),
            guards: pid_file
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            started_at: jiff::Timestamp::now()
                .round(jiff::Unit::Millisecond)
                .map_or_else(|_| jiff::Timestamp::now().to_string(), |t| t.to_string()),
            pid: std::process::id() as i64,
            pid_ns: locksmith_sys::host::pid_ns_of("self"),
            hostname: locksmith_sys::host::hostname(),
            boot_id: locksmith_sys::host::boot_id(),
            program,
        }
    }

    /// Reads a record: `None` for anything else (an empty guard, another format).
    pub fn parse(bytes: &[u8]) -> Option<Self> {
        let text = std::str::from_utf8(bytes).ok()?.trim();
        if !text.starts_with('{') {
            return None;
        }
        serde_json::from_str(text).ok()
    }

    /// Whether it was written for the pid file named `pid_name`.
    pub fn is_for(&self, pid_name: &OsStr) -> bool {
        self.guards == pid_name.to_string_lossy()
    }

    /// `sh, started at 2026-12-02T00:47:42.123Z as PID 1 on web-1`: for evidence lines.
    pub fn describe(&self) -> String {
        format!(
            "{}, started at {} as PID {} on {}",
            crate::text::truncate(&self.program, 64),
            crate::text::truncate(&self.started_at, 40),
            self.pid,
            crate::text::truncate(&self.hostname, 64)
        )
    }
}

/// What was in a guard when a start took its lock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Before {
    /// It did not exist: this start made it.
    Made,
    /// It held no record: no start ran a service under it.
    Empty,
    /// The record of the last service started under it.
    Record(Record),
    /// Something that is no record.
    Unreadable(String),
}

/// A guard whose kernel lock this process holds.
#[derive(Debug)]
pub struct Guard {
    fd: OwnedFd,
    path: PathBuf,
    meta: Stat,
    before: Before,
}

/// The outcome of [`take`].
#[derive(Debug)]
pub enum Take {
    /// The lock is ours.
    Held(Guard),
    /// Another open file description holds it: a service started this way runs. The guard's
    /// status, to name its holders.
    Busy { path: PathBuf, meta: Stat },
    /// No guard can be kept beside this PATH: why.
    Impossible(String),
}

/// Opens (creating, mode 0644) the guard of `pid_file` and takes an OFD write lock on it
/// without waiting (`F_OFD_SETLK`, fcntl(2)). The guard is opened through its directory,
/// never followed if it is a symlink, and used only if it is a regular file.
pub fn take(pid_file: &Path) -> Take {
    let Some(path) = path_for(pid_file) else {
        return Take::Impossible(format!("{} names no file", pid_file.display()));
    };
    match sys::open(&path) {
        Ok((fd, meta, made)) => match locksmith_sys::locks::ofd_try_write_lock(fd.as_fd()) {
            Ok(true) => {
                let before = if made {
                    Before::Made
                } else {
                    match sys::read_all(&fd, MAX_RECORD) {
                        Ok(b) if b.iter().all(u8::is_ascii_whitespace) => Before::Empty,
                        Ok(b) => match Record::parse(&b) {
                            Some(r) => Before::Record(r),
                            None => Before::Unreadable(format!(
                                "it holds {} bytes that are no record of `locksmith start`",
                                b.len()
                            )),
                        },
                        Err(e) => Before::Unreadable(format!("it cannot be read: {e}")),
                    }
                };
                Take::Held(Guard {
                    fd,
                    path,
                    meta,
                    before,
                })
            }
            Ok(false) => Take::Busy { path, meta },
            Err(e) => Take::Impossible(format!(
                "{} cannot be locked in the kernel there: {e}",
                path.display()
            )),
        },
        Err(e) => Take::Impossible(format!("{} cannot be opened: {e}", path.display())),
    }
}

impl Guard {
    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn meta(&self) -> &Stat {
        &self.meta
    }

    /// What it held when this process took its lock.
    pub fn before(&self) -> &Before {
        &self.before
    }

    /// The record of a service started under it for `pid_name`, if the last start under it
    /// was for that pid file.
    pub fn previous_service(&self, pid_name: &OsStr) -> Option<&Record> {
        match &self.before {
            Before::Record(r) if r.is_for(pid_name) => Some(r),
            _ => None,
        }
    }

    /// Whether its record can be trusted by this process: the guard belongs to this user or
    /// to root (anyone else who could write the directory could have written any record).
    pub fn trusted(&self) -> Result<(), String> {
        let me = rustix::process::geteuid().as_raw();
        if self.meta.uid == me || self.meta.uid == 0 {
            return Ok(());
        }
        Err(format!(
            "{} belongs to uid {}, neither this user (uid {me}) nor root: its record may be anyone's",
            self.path.display(),
            self.meta.uid
        ))
    }

    /// Replaces its content with `record` (this process holds its lock: no other start
    /// writes it meanwhile).
    pub fn write(&self, record: &Record) -> io::Result<()> {
        let mut line = serde_json::to_vec(record).map_err(io::Error::other)?;
        line.push(b'\n');
        sys::replace(&self.fd, &line)
    }

    /// Empties it: no service runs under it (COMMAND could not be run).
    pub fn erase(&self) -> io::Result<()> {
        sys::replace(&self.fd, b"")
    }

    /// Clears the descriptor's close-on-exec flag, so that COMMAND inherits it through
    /// `execve`, and with it the lock.
    pub fn inherit(&self) -> io::Result<()> {
        rustix::io::fcntl_setfd(&self.fd, rustix::io::FdFlags::empty())?;
        Ok(())
    }
}

/// Whether a kernel lock on a file on `fs` (the device `dev`) is seen by every process that
/// may write there: yes on a local file system (one kernel); on NFS, when the client sends its
/// record locks to the server's lock manager (`local_lock=none` or `flock` in its mount
/// options: the default, but with `nolock`); no on any other network file system (a FUSE mount such as sshfs, SMB),
/// nor in a directory this host shares with other machines. Why not, otherwise.
pub fn reaches_every_writer(fs: &FsInfo, dev: u64) -> Result<(), String> {
    if !fs.network {
        return Ok(());
    }
    if fs.shared.is_none() && fs.kind.as_str().starts_with("nfs") {
        let table = std::fs::read("/proc/self/mountinfo").unwrap_or_default();
        if nfs_sends_locks(&table, dev) == Some(true) {
            return Ok(());
        }
        return Err(format!(
            "{}, mounted without NFS's lock manager (nolock, or local_lock= other than none): a kernel lock taken on another machine does not show here",
            fs.reached_from_afar()
        ));
    }
    Err(format!(
        "{}, whose kernel locks stay on the machine that takes them: a service started on another machine may hold its start guard unseen from here",
        fs.reached_from_afar()
    ))
}

/// Whether the NFS mount of device `dev` in the mountinfo `table` sends its locks to the
/// server (`local_lock=none` among its super options, and no `nolock`). `None` when no NFS
/// mount of that device is listed.
pub fn nfs_sends_locks(table: &[u8], dev: u64) -> Option<bool> {
    let (maj, min) = (rustix::fs::major(dev), rustix::fs::minor(dev));
    let want = format!("{maj}:{min}");
    let line = table
        .split(|&b| b == b'\n')
        .rfind(|l| l.split(|&b| b == b' ').nth(2) == Some(want.as_bytes()))?;
    let fields: Vec<&[u8]> = line.split(|&b| b == b' ').collect();
    let dash = fields.iter().position(|f| *f == b"-")?;
    if !fields.get(dash + 1)?.starts_with(b"nfs") {
        return None;
    }
    let options: Vec<&[u8]> = fields
        .get(dash + 3)
        .map(|o| o.split(|&b| b == b',').collect())
        .unwrap_or_default();
    // `local_lock=flock` keeps only flock(2) locks local: record locks (OFD locks are record
    // locks) still go to the server.
    let sent =
        options.contains(&&b"local_lock=none"[..]) || options.contains(&&b"local_lock=flock"[..]);
    Some(sent && !options.contains(&&b"nolock"[..]))
}

mod sys {
    use std::io;
    use std::os::fd::OwnedFd;
    use std::path::Path;

    use rustix::fs::{FileType, Mode, OFlags};

    use crate::probe::Stat;

    /// Opens `path` for reading and writing, creating it (0644) if it does not exist, through
    /// its directory; a final symlink is not followed, and anything but a regular file is
    /// refused before it is opened (a FIFO or a device is never opened). Returns the
    /// descriptor (close-on-exec), its status, and whether this call made it.
    pub fn open(path: &Path) -> io::Result<(OwnedFd, Stat, bool)> {
        let dir_path = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let name = path
            .file_name()
            .ok_or_else(|| io::Error::from(io::ErrorKind::InvalidInput))?;
        let dir = rustix::fs::open(
            dir_path,
            OFlags::DIRECTORY | OFlags::RDONLY | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        let not_a_file = || io::Error::other("not a regular file");
        let made = match rustix::fs::statat(&dir, name, rustix::fs::AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile => {
                return Err(not_a_file());
            }
            Ok(_) => false,
            Err(rustix::io::Errno::NOENT) => true,
            Err(e) => return Err(e.into()),
        };
        let flags = OFlags::RDWR
            | OFlags::CREATE
            | OFlags::NOFOLLOW
            | OFlags::NONBLOCK
            | OFlags::NOCTTY
            | OFlags::CLOEXEC;
        let fd = rustix::fs::openat(&dir, name, flags, Mode::from_raw_mode(0o644))?;
        let meta = std::fs::File::from(rustix::io::fcntl_dupfd_cloexec(&fd, 0)?).metadata()?;
        if !meta.is_file() {
            return Err(not_a_file());
        }
        Ok((fd, Stat::from(meta), made))
    }

    /// At most `max` bytes from its beginning.
    pub fn read_all(fd: &OwnedFd, max: usize) -> io::Result<Vec<u8>> {
        let mut buf = vec![0u8; max];
        let mut len = 0;
        while len < max {
            match rustix::io::pread(fd, &mut buf[len..], len as u64) {
                Ok(0) => break,
                Ok(n) => len += n,
                Err(rustix::io::Errno::INTR) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        buf.truncate(len);
        Ok(buf)
    }

    /// Makes its content `bytes`.
    pub fn replace(fd: &OwnedFd, bytes: &[u8]) -> io::Result<()> {
        rustix::fs::ftruncate(fd, 0)?;
        let mut done = 0;
        while done < bytes.len() {
            match rustix::io::pwrite(fd, &bytes[done..], done as u64) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => done += n,
                Err(rustix::io::Errno::INTR) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_guard_is_named_after_its_pid_file_and_back() {
        let g = path_for(Path::new("/app/tmp/pids/server.pid")).unwrap();
        assert_eq!(g, Path::new("/app/tmp/pids/.server.pid.locksmith-start"));
        assert_eq!(
            pid_name_of(g.file_name().unwrap()),
            Some(OsStr::new("server.pid"))
        );
        assert_eq!(pid_name_of(OsStr::new(".locksmith-start")), None);
        assert_eq!(pid_name_of(OsStr::new("server.pid")), None);
        assert_eq!(path_for(Path::new("/")), None);
        assert_eq!(
            path_for(Path::new("app.pid")).unwrap(),
            Path::new(".app.pid.locksmith-start")
        );
    }

    #[test]
    fn a_record_reads_back_and_is_no_engine_record() {
        let r = Record::now(Path::new("/x/server.pid"), OsStr::new("/usr/bin/puma"));
        let mut line = serde_json::to_vec(&r).unwrap();
        line.push(b'\n');
        assert_eq!(Record::parse(&line), Some(r.clone()));
        assert!(r.is_for(OsStr::new("server.pid")));
        assert!(!r.is_for(OsStr::new("other.pid")));
        assert_eq!(r.program, "puma");
        assert!(locksmith_engine::Record::parse(&line).is_none());
        assert_eq!(Record::parse(b""), None);
        assert_eq!(Record::parse(b"{\"pid\": 3}"), None);
    }

    #[test]
    fn a_held_guard_is_busy_for_the_next_taker_and_free_once_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("app.pid");
        let Take::Held(g) = take(&pid_file) else {
            panic!("the first take holds it")
        };
        assert_eq!(g.before(), &Before::Made);
        g.write(&Record::now(&pid_file, OsStr::new("sh"))).unwrap();
        assert!(matches!(take(&pid_file), Take::Busy { .. }));
        drop(g);
        let Take::Held(g) = take(&pid_file) else {
            panic!("free again")
        };
        let r = g.previous_service(OsStr::new("app.pid")).expect("a record");
        assert_eq!(r.program, "sh");
        assert!(g.previous_service(OsStr::new("other.pid")).is_none());
        g.erase().unwrap();
        drop(g);
        let Take::Held(g) = take(&pid_file) else {
            panic!("free again")
        };
        assert_eq!(g.before(), &Before::Empty);
    }

    #[test]
    fn a_guard_that_is_no_regular_file_is_never_opened() {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("app.pid");
        let target = dir.path().join("elsewhere");
        std::os::unix::fs::symlink(&target, path_for(&pid_file).unwrap()).unwrap();
        assert!(matches!(take(&pid_file), Take::Impossible(_)));
        assert!(!target.exists(), "a symlink is not followed to create");
        let missing = dir.path().join("no-such-dir/app.pid");
        assert!(matches!(take(&missing), Take::Impossible(_)));
    }

    #[test]
    fn nfs_sends_locks_unless_mounted_without_them() {
        let dev = rustix::fs::makedev(0, 53);
        let line = |opts: &str| {
            format!(
                "30 1 0:52 / /other rw - ext4 /dev/sda1 rw\n\
                 31 1 0:53 / /mnt/data rw,relatime shared:1 - nfs4 server:/export {opts}\n"
            )
        };
        let v4 = "rw,vers=4.2,rsize=1048576,hard,proto=tcp,sec=sys,clientaddr=10.0.0.2,local_lock=none,addr=10.0.0.1";
        assert_eq!(nfs_sends_locks(line(v4).as_bytes(), dev), Some(true));
        let nolock = "rw,vers=3,nolock,proto=tcp,local_lock=all,addr=10.0.0.1";
        assert_eq!(nfs_sends_locks(line(nolock).as_bytes(), dev), Some(false));
        let flock_only = "rw,vers=3,proto=tcp,local_lock=flock,addr=10.0.0.1";
        assert_eq!(
            nfs_sends_locks(line(flock_only).as_bytes(), dev),
            Some(true)
        );
        let posix_local = "rw,vers=3,proto=tcp,local_lock=posix,addr=10.0.0.1";
        assert_eq!(
            nfs_sends_locks(line(posix_local).as_bytes(), dev),
            Some(false)
        );
        assert_eq!(
            nfs_sends_locks(line(v4).as_bytes(), rustix::fs::makedev(0, 52)),
            None
        );
    }
}
