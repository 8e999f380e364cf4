//! Kernel locks from `/proc/locks` (and the `lock:` lines of `/proc/<pid>/fdinfo/<fd>`), keyed
//! by (device, inode). Blocked requests (`->` lines, listed under the lock they wait behind)
//! are not holders: they are kept apart, as the file's waiters ([`KernelLocks::blocked_on`]).
//! OFD locks and requests show pid -1; [`super::open_files::FdTable::sharers`] finds the real
//! holders through fdinfo, [`super::waiters`] the waiters through what they are blocked in.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use crate::verdict::{ByteRange, HolderHow, LockMode};

/// Reads a `/proc` table in one `read(2)` when it can: the kernel lists `/proc/locks` under
/// its lock only for the length of one read, and between two reads entries added or removed
/// by others shift the rest, so a table read in pieces can miss a lock that was held all the
/// time. A read that did not reach the end in one call is repeated with a larger buffer.
fn read_whole(path: &str) -> std::io::Result<String> {
    use std::io::Read;
    let mut cap = 256 * 1024;
    loop {
        let mut f = std::fs::File::open(path)?;
        let mut buf = vec![0u8; cap];
        let first = loop {
            match f.read(&mut buf) {
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                other => break other?,
            }
        };
        let mut rest = Vec::new();
        f.read_to_end(&mut rest)?;
        if rest.is_empty() || cap >= 64 << 20 {
            buf.truncate(first);
            buf.extend_from_slice(&rest);
            return Ok(String::from_utf8_lossy(&buf).into_owned());
        }
        cap = (first + rest.len()) * 2;
    }
}

/// A file identity as the kernel reports it in `/proc/locks`. Written `MAJOR:MINOR:INODE`
/// (hex device numbers, as `/proc/locks` prints them) where it is data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FileKey {
    pub major: u32,
    pub minor: u32,
    pub inode: u64,
}

impl std::fmt::Display for FileKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:02x}:{:02x}:{}", self.major, self.minor, self.inode)
    }
}

impl std::str::FromStr for FileKey {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let mut it = s.split(':');
        let bad = || format!("not a file key (MAJOR:MINOR:INODE): {s}");
        let major = u32::from_str_radix(it.next().ok_or_else(bad)?, 16).map_err(|_| bad())?;
        let minor = u32::from_str_radix(it.next().ok_or_else(bad)?, 16).map_err(|_| bad())?;
        let inode = it.next().ok_or_else(bad)?.parse().map_err(|_| bad())?;
        Ok(FileKey {
            major,
            minor,
            inode,
        })
    }
}

impl serde::Serialize for FileKey {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for FileKey {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = <String as serde::Deserialize>::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

impl FileKey {
    /// The key of a file from its `st_dev` and `st_ino`.
    pub fn from_dev_ino(dev: u64, inode: u64) -> Self {
        FileKey {
            major: rustix::fs::major(dev as _),
            minor: rustix::fs::minor(dev as _),
            inode,
        }
    }

    /// The key of a file from its status (a [`super::Stat`] or what `std::fs` said of it).
    pub fn of(meta: &impl DevIno) -> Self {
        let (dev, ino) = meta.dev_ino();
        Self::from_dev_ino(dev, ino)
    }

    /// The key of a file from what `std::fs` said of it.
    pub fn of_meta(meta: &std::fs::Metadata) -> Self {
        Self::of(meta)
    }
}

/// A file's device and inode, whoever read them.
pub trait DevIno {
    fn dev_ino(&self) -> (u64, u64);
}

impl DevIno for std::fs::Metadata {
    fn dev_ino(&self) -> (u64, u64) {
        use std::os::unix::fs::MetadataExt;
        (self.dev(), self.ino())
    }
}

impl DevIno for super::Stat {
    fn dev_ino(&self) -> (u64, u64) {
        (self.dev, self.ino)
    }
}

/// One granted kernel lock. Two lines (of `/proc/locks` and of a descriptor's fdinfo) that
/// are equal describe the same lock.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct KernelLock {
    pub how: HolderHow,
    pub mode: LockMode,
    /// The process that took it; `None` for OFD locks (the kernel prints -1). A flock stays
    /// held after that process is gone by whoever shares its open file description.
    pub pid: Option<i32>,
    pub key: FileKey,
    /// The bytes it covers (for a flock, always the whole file).
    pub range: ByteRange,
}

/// Parses one line of `/proc/locks` (or the part after `lock:` in fdinfo). Returns `None` for
/// blocked waiters and lines it does not understand.
pub fn parse_line(line: &str) -> Option<KernelLock> {
    parse_entry(line).filter(|e| !e.blocked).map(|e| e.lock)
}

/// One line of `/proc/locks`: a granted lock, or a request blocked behind the lock of the same
/// ordinal (`N: -> FLOCK ...`; a request blocked behind another blocked request is indented
/// further, with the same ordinal).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub ordinal: u64,
    pub blocked: bool,
    pub lock: KernelLock,
}

/// Parses one line of `/proc/locks`, granted or blocked.
pub fn parse_entry(line: &str) -> Option<Entry> {
    let mut it = line.split_whitespace();
    let ordinal = it.next()?.strip_suffix(':')?.parse().ok()?;
    let mut kind = it.next()?;
    let blocked = kind == "->";
    if blocked {
        kind = it.next()?;
    }
    let how = match kind {
        "FLOCK" => HolderHow::Flock,
        "POSIX" => HolderHow::Posix,
        "OFDLCK" => HolderHow::Ofd,
        _ => return None, // LEASE, DELEG, ...
    };
    let _advisory = it.next()?;
    let mode = match it.next()? {
        "WRITE" => LockMode::Write,
        "READ" => LockMode::Read,
        _ => return None,
    };
    let pid: i64 = it.next()?.parse().ok()?;
    let mut dev = it.next()?.split(':');
    let major = u32::from_str_radix(dev.next()?, 16).ok()?;
    let minor = u32::from_str_radix(dev.next()?, 16).ok()?;
    let inode = dev.next()?.parse().ok()?;
    let start = it.next().and_then(|s| s.parse().ok()).unwrap_or(0);
    let end = it.next().and_then(|s| s.parse().ok());
    Some(Entry {
        ordinal,
        blocked,
        lock: KernelLock {
            how,
            mode,
            pid: (pid > 0).then_some(pid as i32),
            key: FileKey {
                major,
                minor,
                inode,
            },
            range: ByteRange { start, end },
        },
    })
}

/// A request blocked in the kernel, waiting for a lock on a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockedRequest {
    /// What it asks for (`pid` is `None` for an OFD request, which the kernel prints as -1).
    pub lock: KernelLock,
    /// The PID of the granted lock it waits behind, when that one shows one.
    pub behind: Option<i32>,
}

/// All granted kernel locks on this kernel, read once.
#[derive(Debug, Default, Clone)]
pub struct KernelLocks {
    by_key: HashMap<FileKey, Vec<KernelLock>>,
    by_inode: HashMap<u64, Vec<KernelLock>>,
    /// The inodes of `by_inode`, sorted: the walker asks of every entry, and a binary search
    /// of a few dozen numbers costs less than hashing.
    inodes: Vec<u64>,
    /// Blocked requests, by the file they wait for.
    blocked: HashMap<FileKey, Vec<BlockedRequest>>,
    /// Whether `/proc/locks` could be read at all (if not, "no lock" proves nothing).
    available: bool,
}

impl KernelLocks {
    /// Reads `/proc/locks`. An unreadable file gives an empty table.
    pub fn read() -> Self {
        read_whole("/proc/locks")
            .map(|s| Self::parse(&s))
            .unwrap_or_default()
    }

    pub fn parse(text: &str) -> Self {
        let mut me = KernelLocks {
            available: true,
            ..KernelLocks::default()
        };
        // The granted lock each ordinal names, for the requests listed under it.
        let mut granted: HashMap<u64, Option<i32>> = HashMap::new();
        for entry in text.lines().filter_map(parse_entry) {
            let lock = entry.lock;
            if entry.blocked {
                let behind = granted.get(&entry.ordinal).copied().flatten();
                me.blocked
                    .entry(lock.key)
                    .or_default()
                    .push(BlockedRequest { lock, behind });
                continue;
            }
            granted.insert(entry.ordinal, lock.pid);
            me.by_inode
                .entry(lock.key.inode)
                .or_default()
                .push(lock.clone());
            me.by_key.entry(lock.key).or_default().push(lock);
        }
        me.inodes = me.by_inode.keys().copied().collect();
        me.inodes.sort_unstable();
        me
    }

    /// Whether the table was read: when it was not, the absence of a lock proves nothing.
    pub fn available(&self) -> bool {
        self.available
    }

    /// The granted locks on one file.
    ///
    /// A file whose `st_dev` is an anonymous device (major 0: btrfs subvolumes, overlayfs) may be
    /// listed in `/proc/locks` under another device number (the superblock's, or the layer's),
    /// so for such a file a lock on the same inode of any device counts. That can only make a
    /// lock look held when it is not (a second look), never the reverse.
    pub fn on(&self, key: FileKey) -> &[KernelLock] {
        if let Some(exact) = self.by_key.get(&key) {
            return exact;
        }
        if key.major == 0
            && let Some(same_inode) = self.by_inode.get(&key.inode)
        {
            return same_inode;
        }
        &[]
    }

    /// The requests blocked waiting for a lock on one file (on an anonymous device, on the same
    /// inode of any device, as [`KernelLocks::on`]).
    pub fn blocked_on(&self, key: FileKey) -> &[BlockedRequest] {
        if let Some(exact) = self.blocked.get(&key) {
            return exact;
        }
        if key.major == 0
            && let Some((_, same_inode)) = self.blocked.iter().find(|(k, _)| k.inode == key.inode)
        {
            return same_inode;
        }
        &[]
    }

    /// Every blocked request of one process (what it waits for).
    pub fn blocked_requests_of(&self, pid: i32) -> Vec<&BlockedRequest> {
        self.blocked
            .values()
            .flatten()
            .filter(|r| r.lock.pid == Some(pid))
            .collect()
    }

    /// Whether some OFD request waits (its process is known only from what it is blocked in).
    pub fn has_blocked_ofd(&self) -> bool {
        self.blocked
            .values()
            .flatten()
            .any(|r| r.lock.how == HolderHow::Ofd)
    }

    /// Whether any lock names this inode (on any device): a cheap pre-filter for the walker,
    /// which knows `d_ino` without a `stat`.
    pub fn may_lock_inode(&self, inode: u64) -> bool {
        self.inodes.binary_search(&inode).is_ok()
    }

    /// Keys of files with a lock held by an open file description (flock, OFD): their
    /// holders now are the processes that share it ([`super::open_files::FdTable::sharers`]).
    pub fn description_keys(&self) -> HashSet<FileKey> {
        self.by_key
            .iter()
            .filter(|(_, v)| v.iter().any(|l| l.how != HolderHow::Posix))
            .map(|(k, _)| *k)
            .collect()
    }

    pub fn is_empty(&self) -> bool {
        self.by_key.is_empty()
    }
}

pub use locksmith_sys::locks::{held_at, write_lock_conflict};

/// The kernel locks on `key` that this process holds through its own descriptors (the
/// `lock:` lines of `/proc/self/fdinfo/*`, which list the locks of that open file
/// description): a lock its parent took on a description it inherited counts (`flock FILE
/// locksmith start FILE -- ...`).
pub fn held_by_own_descriptors(key: FileKey) -> Vec<KernelLock> {
    let mut out: Vec<KernelLock> = Vec::new();
    let Ok(fds) = std::fs::read_dir("/proc/self/fd") else {
        return out;
    };
    for fd in fds.flatten() {
        let Ok(meta) = super::fs::known(&fd.path()) else {
            continue;
        };
        if FileKey::from_dev_ino(meta.dev, meta.ino) != key {
            continue;
        }
        let name = fd.file_name();
        let info = locksmith_sys::host::read_proc_text(Path::new("/proc/self/fdinfo").join(&name))
            .unwrap_or_default();
        for lock in info
            .lines()
            .filter_map(|l| l.strip_prefix("lock:"))
            .filter_map(parse_line)
        {
            if !out.contains(&lock) {
                out.push(lock);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "\
1: OFDLCK ADVISORY  WRITE -1 00:2a:1234 0 EOF
2: POSIX  ADVISORY  WRITE 4242 fd:01:99 0 EOF
3: FLOCK  ADVISORY  WRITE 777 08:01:5555 0 EOF
3: -> FLOCK  ADVISORY  WRITE 778 08:01:5555 0 EOF
4: LEASE  ACTIVE    READ 12 08:01:6 0 EOF
";

    #[test]
    fn parses_holders_not_waiters() {
        let t = KernelLocks::parse(SAMPLE);
        let ofd = t.on(FileKey {
            major: 0,
            minor: 0x2a,
            inode: 1234,
        });
        assert_eq!(ofd.len(), 1);
        assert_eq!(ofd[0].pid, None);
        assert_eq!(ofd[0].how, HolderHow::Ofd);
        let posix = t.on(FileKey {
            major: 0xfd,
            minor: 1,
            inode: 99,
        });
        assert_eq!(posix[0].pid, Some(4242));
        let fl = t.on(FileKey {
            major: 8,
            minor: 1,
            inode: 5555,
        });
        assert_eq!(fl.len(), 1, "the waiter is not a holder");
        assert_eq!(fl[0].pid, Some(777));
        assert!(t.may_lock_inode(1234) && !t.may_lock_inode(6));
        let waiting = t.blocked_on(FileKey {
            major: 8,
            minor: 1,
            inode: 5555,
        });
        assert_eq!(waiting.len(), 1);
        assert_eq!(waiting[0].lock.pid, Some(778));
        assert_eq!(waiting[0].behind, Some(777));
        assert_eq!(t.blocked_requests_of(778).len(), 1);
        assert!(t.blocked_requests_of(777).is_empty());
        assert!(!t.has_blocked_ofd());
        assert!(t.available());
        assert!(!KernelLocks::default().available());
        // An anonymous device (btrfs subvolume, overlay) may differ from the device the
        // kernel prints: the inode decides.
        assert_eq!(
            t.on(FileKey {
                major: 0,
                minor: 0x77,
                inode: 99
            })
            .len(),
            1
        );
        assert!(
            t.on(FileKey {
                major: 8,
                minor: 2,
                inode: 99
            })
            .is_empty()
        );
        assert_eq!(t.description_keys().len(), 2, "the OFD lock and the flock");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn asks_the_kernel_whether_a_file_is_locked() {
        use std::os::fd::AsRawFd;
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.lock");
        let file = std::fs::File::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .unwrap();
        let m = file.metadata().unwrap();
        assert_eq!(held_at(&path, m.dev(), m.ino()), Some(false));
        // SAFETY: a zeroed `flock` is valid; the descriptor is open for writing.
        let mut fl: libc::flock = unsafe { std::mem::zeroed() };
        fl.l_type = libc::F_WRLCK as libc::c_short;
        // SAFETY: `fl` is a valid, initialised `flock` for the call to read and write.
        let r = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_OFD_SETLK, &mut fl) };
        assert_eq!(r, 0, "{}", std::io::Error::last_os_error());
        assert_eq!(held_at(&path, m.dev(), m.ino()), Some(true));
        // Another file at that path now: the judged inode is not what is locked there.
        assert_eq!(held_at(&path, m.dev(), m.ino() + 1), Some(false));
        drop(file);
        assert_eq!(held_at(&path, m.dev(), m.ino()), Some(false));
        std::fs::remove_file(&path).unwrap();
        assert_eq!(held_at(&path, m.dev(), m.ino()), Some(false));
    }

    #[test]
    fn parses_fdinfo_lock_lines() {
        let l = parse_line("\t1: OFDLCK ADVISORY  WRITE -1 00:2a:1234 0 EOF").unwrap();
        assert_eq!(l.how, HolderHow::Ofd);
        assert_eq!(l.mode, LockMode::Write);
        assert!(l.range.whole());
        let p = parse_line("2: POSIX  ADVISORY  READ 4242 fd:01:99 100 199").unwrap();
        assert_eq!((p.mode, p.pid), (LockMode::Read, Some(4242)));
        assert_eq!(
            p.range,
            ByteRange {
                start: 100,
                end: Some(199)
            }
        );
        assert!(parse_line("garbage").is_none());
    }
}
