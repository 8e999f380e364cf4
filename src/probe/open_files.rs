//! Open files: which processes have which files open, from `/proc/<pid>/fd/*`. Every process's
//! descriptors are read in one pass, once per snapshot and only when some lock needs them
//! ([`FdTable`]): who has a file open (the open-files map: dialects without an owner PID, git
//! and LibreOffice), which regular files each has open and by what path (a program at work
//! in a place), and who shares the descriptions holding flock and OFD locks (through
//! `/proc/<pid>/fdinfo/*`). One process's descriptors are also read alone ([`files_of`]), to
//! confirm a lock `/proc/locks` lists.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;

use super::kernel_locks::{FileKey, KernelLock, parse_line};
use crate::verdict::HolderHow;

/// One descriptor of a process, naming a file.
#[derive(Debug, Clone, Copy)]
struct Fd {
    pid: i32,
    fd: u32,
    key: FileKey,
}

/// Every process's descriptors (ours included), read once: each one's file by its own (device,
/// inode), and for the regular files of other processes, the path the descriptor's link names.
#[derive(Debug, Default)]
pub struct FdTable {
    fds: Vec<Fd>,
    by_key: HashMap<FileKey, Vec<i32>>,
    /// The regular files other processes have open: (pid, the link text of
    /// `/proc/<pid>/fd/N`, the file).
    pub files: Vec<(i32, PathBuf, FileKey)>,
    /// The processes of `files` that are in our own mount namespace (their link texts are
    /// paths as we see them), asked once per process.
    pub our_ns: HashSet<i32>,
    /// Other processes whose descriptors could not be read.
    pub unreadable: Vec<i32>,
    /// Processes whose descriptors were not all read ([`super::bounds`]): their PID, user and
    /// how many were read.
    pub cut: Vec<(i32, Option<u32>, usize)>,
}

impl FdTable {
    /// Reads every process's descriptors now: one listing of each `/proc/<pid>/fd`, one `statx`
    /// of each descriptor through it (following the magic link to the open file itself, even a
    /// deleted one, and asking no file server: [`super::fs::known`]), and the link text of each
    /// regular file another process has open. Nothing is opened but the listings.
    pub fn read() -> Self {
        let mut out = FdTable::default();
        let me = std::process::id() as i32;
        let euid = rustix::process::geteuid().as_raw();
        let ours = mount_ns("self");
        let mut left = std::collections::HashMap::new();
        for pid in locksmith_sys::host::pids() {
            let before = out.files.len();
            let uid = owner(pid);
            let budget = super::bounds::fd_budget(uid, euid, &mut left);
            let mut seen: HashSet<FileKey> = HashSet::new();
            let read = read_fds(pid, budget, |fd, key, regular, link| {
                out.fds.push(Fd { pid, fd, key });
                // One entry and one path for each file a process has open, however many of
                // its descriptors name it.
                if !seen.insert(key) {
                    return;
                }
                out.by_key.entry(key).or_default().push(pid);
                if regular
                    && pid != me
                    && let Some(target) = link()
                {
                    out.files.push((pid, target, key));
                }
            });
            match read {
                Ok(Listed::Whole(n)) => super::bounds::spend(uid, euid, n, &mut left),
                Ok(Listed::Cut(n)) => {
                    super::bounds::spend(uid, euid, n, &mut left);
                    out.cut.push((pid, uid, n));
                }
                Err(_) if pid != me => out.unreadable.push(pid),
                Err(_) => {}
            }
            if out.files.len() > before && ours.is_some() && mount_ns(&pid.to_string()) == ours {
                out.our_ns.insert(pid);
            }
        }
        out
    }

    /// The processes that have this file open (ours too).
    pub fn openers(&self, key: FileKey) -> &[i32] {
        self.by_key.get(&key).map(Vec::as_slice).unwrap_or(&[])
    }

    /// The processes that share the open file descriptions holding flock and OFD locks on the
    /// `wanted` files (keys as `/proc/locks` prints them), with the key of the file each has
    /// open: the descriptors of the table that name such a file, and their
    /// `/proc/<pid>/fdinfo/<fd>` (its `lock:` lines, the same lines as `/proc/locks` for the
    /// locks held through that descriptor; a descriptor closed and reused since the table was
    /// read shows another file's key there, and is left out). A flock or OFD lock belongs to
    /// the description, not to a process: after `fork` every process that has it holds the
    /// lock, and it stays held when the process that took it (the PID `/proc/locks` prints for
    /// a flock) is gone. On an anonymous device (btrfs subvolume, overlay) the key printed and
    /// the file's own `st_dev` may differ, and then the inode decides, as in
    /// [`super::KernelLocks::on`].
    pub fn sharers(&self, wanted: &HashSet<FileKey>) -> HashMap<KernelLock, Vec<(i32, FileKey)>> {
        let mut out: HashMap<KernelLock, Vec<(i32, FileKey)>> = HashMap::new();
        if wanted.is_empty() {
            return out;
        }
        let anon_inodes: HashSet<u64> = wanted
            .iter()
            .filter(|k| k.major == 0)
            .map(|k| k.inode)
            .collect();
        for &Fd { pid, fd, key } in &self.fds {
            let maybe = wanted.contains(&key)
                || (key.major == 0 && wanted.iter().any(|w| w.inode == key.inode))
                || anon_inodes.contains(&key.inode);
            if !maybe {
                continue;
            }
            let info = locksmith_sys::host::read_proc_text(format!("/proc/{pid}/fdinfo/{fd}"))
                .unwrap_or_default();
            for lock in info
                .lines()
                .filter_map(|l| l.strip_prefix("lock:"))
                .filter_map(parse_line)
                .filter(|l| l.how != HolderHow::Posix && same_file(&l.key, &key))
            {
                let v = out.entry(lock).or_default();
                if !v.contains(&(pid, key)) {
                    v.push((pid, key));
                }
            }
        }
        out
    }
}

/// How many of a process's descriptors were read.
enum Listed {
    Whole(usize),
    /// Stopped at its bound ([`super::bounds`]).
    Cut(usize),
}

/// The owner of process `pid` (of its `/proc` directory).
fn owner(pid: i32) -> Option<u32> {
    rustix::fs::stat(format!("/proc/{pid}"))
        .ok()
        .map(|st| st.st_uid)
}

/// The most descriptors of process `pid` that may be read, by its owner ([`super::bounds`]).
fn budget_of(pid: i32) -> usize {
    let mut left = std::collections::HashMap::new();
    super::bounds::fd_budget(owner(pid), rustix::process::geteuid().as_raw(), &mut left)
}

/// Calls `f(fd, key, regular, link)` for at most `max` descriptors of `pid` that name a file,
/// with the open file's own (device, inode), whether it is a regular file, and a way to read
/// the descriptor's link text. `Err` when the descriptors cannot be listed (the process is
/// gone, is another user's and we are not root, ...).
#[cfg(target_os = "linux")]
fn read_fds(
    pid: i32,
    max: usize,
    mut f: impl FnMut(u32, FileKey, bool, &dyn Fn() -> Option<PathBuf>),
) -> std::io::Result<Listed> {
    use rustix::fs::{Mode, OFlags};
    use std::os::unix::ffi::OsStringExt;
    let dir = rustix::fs::open(
        format!("/proc/{pid}/fd"),
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    let mut listed = 0;
    for entry in rustix::fs::Dir::read_from(&dir)? {
        let entry = entry?;
        let name = entry.file_name();
        if name.to_bytes().first() == Some(&b'.') {
            continue;
        }
        if listed == max {
            return Ok(Listed::Cut(listed));
        }
        listed += 1;
        let Some(n) = name.to_str().ok().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        // A descriptor closed since the listing names nothing any more.
        let Ok(k) = super::fs::known_at(&dir, name) else {
            continue;
        };
        let link = || {
            rustix::fs::readlinkat(&dir, name, Vec::new())
                .ok()
                .map(|t| PathBuf::from(std::ffi::OsString::from_vec(t.into_bytes())))
        };
        f(n, FileKey::from_dev_ino(k.dev, k.ino), k.is_file(), &link);
    }
    Ok(Listed::Whole(listed))
}

#[cfg(not(target_os = "linux"))]
fn read_fds(
    _pid: i32,
    _max: usize,
    _f: impl FnMut(u32, FileKey, bool, &dyn Fn() -> Option<PathBuf>),
) -> std::io::Result<Listed> {
    Err(std::io::ErrorKind::Unsupported.into())
}

/// The text of `/proc/<who>/ns/mnt` (`mnt:[INODE]`).
pub(crate) fn mount_ns(who: &str) -> Option<PathBuf> {
    std::fs::read_link(format!("/proc/{who}/ns/mnt")).ok()
}

/// The kernel locks process `pid` holds, each with the path of a descriptor of its through
/// which it holds it (`lslocks -p`): a granted lock of `locks` on a file it has open that the
/// kernel prints with its PID (flock, POSIX), or that the descriptor's fdinfo lists (flock and
/// OFD locks belong to the open file description). Each file once; the path is the
/// descriptor's link text, as the process sees it. `None` when its descriptors cannot be read.
pub fn locked_by(pid: i32, locks: &super::KernelLocks) -> Option<Vec<(PathBuf, KernelLock)>> {
    let mut out: Vec<(PathBuf, KernelLock)> = Vec::new();
    read_fds(pid, budget_of(pid), |fd, key, _regular, link| {
        if out.iter().any(|(_, l)| same_file(&l.key, &key)) {
            return;
        }
        let on = locks.on(key);
        if on.is_empty() {
            return;
        }
        let by_pid = on.iter().find(|l| l.pid == Some(pid)).cloned();
        let through_fd = || {
            let info = locksmith_sys::host::read_proc_text(format!("/proc/{pid}/fdinfo/{fd}"))
                .unwrap_or_default();
            info.lines()
                .filter_map(|l| l.strip_prefix("lock:"))
                .filter_map(parse_line)
                .find(|l| same_file(&l.key, &key) && on.contains(l))
        };
        if let Some(lock) = by_pid.or_else(through_fd)
            && let Some(path) = link().filter(|p| p.is_absolute())
        {
            out.push((path, lock));
        }
    })
    .ok()?;
    Some(out)
}

/// The files `pid` has open, by their own (device, inode), or `None` when its descriptors
/// cannot be read (gone, another user's process as non-root, not in our `/proc`) or not all
/// within their bound ([`super::bounds`]).
pub fn files_of(pid: i32) -> Option<HashSet<FileKey>> {
    let mut out = HashSet::new();
    match read_fds(pid, budget_of(pid), |_, key, _, _| {
        out.insert(key);
    }) {
        Ok(Listed::Whole(_)) => Some(out),
        _ => None,
    }
}

/// The paths of the regular files `pid` has open now (each descriptor's link text, each file
/// once), or `None` when its descriptors cannot be read, or not all within their bound.
pub fn regular_files_of(pid: i32) -> Option<Vec<PathBuf>> {
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    match read_fds(pid, budget_of(pid), |_, key, regular, link| {
        if regular
            && seen.insert(key)
            && let Some(target) = link()
        {
            out.push(target);
        }
    }) {
        Ok(Listed::Whole(_)) => Some(out),
        _ => None,
    }
}

/// Whether a key `/proc/locks` prints and a file's own key may name the same file: equal, or
/// the same inode where either device is anonymous.
pub fn same_file(printed: &FileKey, file: &FileKey) -> bool {
    printed == file || (printed.inode == file.inode && (printed.major == 0 || file.major == 0))
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn sees_our_own_open_file() {
        let f = tempfile::NamedTempFile::new().unwrap();
        let key = FileKey::of(&f.as_file().metadata().unwrap());
        let table = FdTable::read();
        assert!(table.openers(key).contains(&(std::process::id() as i32)));
        // Our own descriptors are in the table, but not among the files of other processes.
        assert!(
            !table
                .files
                .iter()
                .any(|(pid, _, _)| *pid == std::process::id() as i32)
        );
        let mine = files_of(std::process::id() as i32).unwrap();
        assert!(mine.contains(&key));
        assert!(files_of(-1).is_none());
    }

    #[test]
    fn lists_another_processs_open_file_with_its_path() {
        let f = tempfile::NamedTempFile::new().unwrap();
        let key = FileKey::of(&f.as_file().metadata().unwrap());
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .stdin(std::fs::File::open(f.path()).unwrap())
            .spawn()
            .unwrap();
        let pid = child.id() as i32;
        // Until the child has exec'd, its descriptors are those of a copy of this process.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let table = loop {
            let table = FdTable::read();
            if table.files.iter().any(|(p, _, k)| *p == pid && *k == key) {
                break table;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the child's file never showed"
            );
            std::thread::sleep(std::time::Duration::from_millis(10));
        };
        child.kill().unwrap();
        child.wait().unwrap();
        let (_, path, _) = table
            .files
            .iter()
            .find(|(p, _, k)| *p == pid && *k == key)
            .unwrap();
        assert_eq!(path, &std::fs::canonicalize(f.path()).unwrap());
        assert!(table.our_ns.contains(&pid));
        assert!(table.openers(key).contains(&pid));
        assert!(!table.unreadable.contains(&pid));
    }
}
