//! The evidence snapshot: everything the judges need, collected once per scan (or per engine
//! operation) and shared by every lock judged in it. Cheap parts (host facts, `/proc/locks`) are
//! read eagerly (or started early, [`Ahead`]); expensive parts (all processes, open files, OFD
//! attribution) are built lazily, once, and only if some lock needs them. Per-PID probes are
//! cached, so each PID is read once. `Snapshot` is `Sync`: the scanner judges on several
//! threads.

use std::collections::{HashMap, HashSet};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use super::containers::Inventory;
use super::fs::FsInfo;
use super::host::HostFacts;
use super::kernel_locks::{FileKey, KernelLock, KernelLocks};
use super::open_files::OpenFiles;
use super::process::{self, PidState, ProcFacts};
use crate::verdict::{ContainerInfo, Holder, HolderHow, ProcessInfo};

/// A process as the process list shows it (for dialects that look for "a git in this repo").
#[derive(Debug, Clone)]
pub struct ProcSummary {
    pub pid: i32,
    pub name: String,
    pub exe: Option<PathBuf>,
    pub cmd: Vec<String>,
    pub cwd: Option<PathBuf>,
    /// Value of `GIT_DIR` in its environment, when set and readable.
    pub git_dir: Option<PathBuf>,
}

/// One snapshot of the evidence (README: Evidence).
pub struct Snapshot {
    pub host: HostFacts,
    /// When the snapshot was taken, in milliseconds since the epoch.
    pub taken_ms: i64,
    pub pid_max: i64,
    /// Device of our own `/`.
    root_dev: Option<u64>,
    kernel_locks: KernelLocks,
    pids: Mutex<HashMap<i32, PidState>>,
    /// Who shares the descriptions holding flock and OFD locks (read on first use).
    sharers: OnceLock<HashMap<KernelLock, Vec<(i32, FileKey)>>>,
    /// The files each lock holder has open (`None`: unreadable).
    open_by_pid: Mutex<HashMap<i32, Option<Arc<HashSet<FileKey>>>>>,
    open_files: OnceLock<OpenFiles>,
    processes: OnceLock<Vec<ProcSummary>>,
    users: OnceLock<Option<sysinfo::Users>>,
    unix_listeners: OnceLock<std::collections::HashSet<String>>,
    fs: Mutex<HashMap<u64, FsInfo>>,
    containers: OnceLock<Inventory>,
    fd_targets: OnceLock<super::places::FdTargets>,
}

impl std::fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Snapshot")
            .field("host", &self.host)
            .finish_non_exhaustive()
    }
}

/// A snapshot started before it is needed (while a command loads its configuration): its two
/// reads that wait the longest run on threads of their own meanwhile. Reading `/proc/locks`
/// takes the kernel's file-lock lock for writing, which after a quiet while waits for an RCU
/// grace period, asleep (some 10 ms on an idle machine, whatever the table holds); the
/// inventory of namespaces reads every process's namespace links and each container's mounts
/// and state, and a scan needs it before its walk starts (the containers' places are among
/// its roots) or at its first PID lock.
pub struct Ahead {
    kernel_locks: std::thread::JoinHandle<KernelLocks>,
    containers: std::thread::JoinHandle<Inventory>,
}

impl Ahead {
    pub fn start() -> Self {
        Ahead {
            kernel_locks: std::thread::spawn(KernelLocks::read),
            containers: std::thread::spawn(|| Inventory::read(super::host::pid_ns_of("self"))),
        }
    }

    /// The snapshot, once both reads are done (a read whose thread failed is done again).
    pub fn take(self) -> Snapshot {
        let snap = Snapshot::with_kernel_locks(
            self.kernel_locks
                .join()
                .unwrap_or_else(|_| KernelLocks::read()),
        );
        if let Ok(inventory) = self.containers.join() {
            let _ = snap.containers.set(inventory);
        }
        snap
    }
}

impl Snapshot {
    /// Takes a snapshot of this host now.
    pub fn take() -> Self {
        Self::with_kernel_locks(KernelLocks::read())
    }

    /// A snapshot with a given kernel-lock table (tests, and hosts without `/proc/locks`).
    pub fn with_kernel_locks(kernel_locks: KernelLocks) -> Self {
        Snapshot {
            host: HostFacts::probe(),
            taken_ms: jiff::Timestamp::now().as_millisecond(),
            pid_max: process::pid_max(),
            root_dev: std::fs::metadata("/").ok().map(|m| m.dev()),
            kernel_locks,
            pids: Mutex::default(),
            sharers: OnceLock::new(),
            open_by_pid: Mutex::default(),
            open_files: OnceLock::new(),
            processes: OnceLock::new(),
            users: OnceLock::new(),
            unix_listeners: OnceLock::new(),
            fs: Mutex::default(),
            containers: OnceLock::new(),
            fd_targets: OnceLock::new(),
        }
    }

    pub fn kernel_locks(&self) -> &KernelLocks {
        &self.kernel_locks
    }

    /// The state of one PID on this host (probed once per snapshot).
    pub fn pid(&self, pid: i32) -> PidState {
        if let Some(s) = self.pids.lock().unwrap().get(&pid) {
            return s.clone();
        }
        let s = process::probe(pid, &self.host);
        self.pids.lock().unwrap().insert(pid, s.clone());
        s
    }

    /// Every PID namespace on this machine other than ours: containers and sandboxes, their
    /// processes, mounts and names (read on first use, once per snapshot).
    pub fn containers(&self) -> &Inventory {
        self.containers
            .get_or_init(|| Inventory::read(self.host.pid_ns))
    }

    /// The container a process runs in, with its PID there (`None` in our own namespace).
    pub fn container_of(&self, facts: &ProcFacts) -> Option<ContainerInfo> {
        if facts.pid_ns.is_none() || facts.pid_ns == self.host.pid_ns {
            return None;
        }
        let (ns, ns_pid) = self.containers().of_host_pid(facts.pid)?;
        Some(ContainerInfo {
            id: ns.container.clone(),
            ns_pid: Some(ns_pid),
        })
    }

    pub(crate) fn holder(&self, pid: i32, how: HolderHow) -> Holder {
        let state = self.pid(pid);
        Holder {
            how,
            container: state.facts().and_then(|f| self.container_of(f)),
            ..Holder::open(pid, state.facts().map(|f| f.comm.clone()))
        }
    }

    /// `pid` as a holder of `lock` (-1: a holder no visible process is).
    fn lock_holder(&self, pid: i32, lock: &KernelLock) -> Holder {
        let base = if pid > 0 {
            self.holder(pid, lock.how)
        } else {
            Holder {
                how: lock.how,
                ..Holder::open(-1, None)
            }
        };
        Holder {
            mode: Some(lock.mode),
            range: (lock.how != HolderHow::Flock).then_some(lock.range),
            ..base
        }
    }

    /// Who holds a kernel lock on this file now, once each, with the lock's type, mode and
    /// range: `/proc/locks`, with flock and OFD locks attributed to the processes that share
    /// the open file description holding them (the process that took a flock may be gone
    /// while a child it forked keeps it). An entry that the holders' open descriptors show to
    /// be about another file with the same inode number (a deleted file it still holds, on
    /// another tmpfs or subvolume) is left out; one that cannot be checked stands.
    pub fn kernel_holders(&self, key: FileKey) -> Vec<Holder> {
        let mut out: Vec<Holder> = Vec::new();
        for (lock, pids) in self.kernel_locks_on(key) {
            if pids.is_empty() {
                // Held, but by a description no visible process has (another PID namespace
                // without /proc access, another user's processes as non-root): still held.
                out.push(self.lock_holder(-1, lock));
            }
            for pid in pids {
                if !out.iter().any(|h| h.pid == pid) {
                    out.push(self.lock_holder(pid, lock));
                }
            }
        }
        out
    }

    /// Whether any kernel lock is held on this file (as [`Snapshot::kernel_holders`] sees it).
    pub fn kernel_locked(&self, key: FileKey) -> bool {
        !self.kernel_locks_on(key).is_empty()
    }

    /// The entries of `/proc/locks` that are about this file, each with the processes that
    /// hold it now (none: held by a description no visible process has).
    ///
    /// An entry names a (device, inode) as the kernel prints it, and on anonymous devices only
    /// the inode can be compared ([`KernelLocks::on`]), so an entry may be about another file
    /// with the same inode number (another tmpfs, btrfs subvolume or overlay). The holders'
    /// open descriptors decide, when we can read them:
    /// - a POSIX lock belongs to its process and goes with its last descriptor of the file: if
    ///   the process has not this very file open (same device and inode, whatever name it was
    ///   opened by), the entry is about another file (or a table read just before the file was
    ///   replaced);
    /// - a flock or OFD lock belongs to an open file description: its holders are the
    ///   processes whose descriptors show it (fdinfo); if they all have another file open
    ///   under that key, the entry is about that file;
    /// - otherwise (descriptors unreadable: another user's processes as non-root, processes we
    ///   cannot see) the entry stands, with the PID that took it if that process is alive:
    ///   held is the safe answer.
    fn kernel_locks_on(&self, key: FileKey) -> Vec<(&KernelLock, Vec<i32>)> {
        let mut out = Vec::new();
        for lock in self.kernel_locks.on(key) {
            let pids: Vec<i32> = if lock.how == HolderHow::Posix {
                match lock.pid {
                    Some(p) if self.about_another_file(p, lock, key) => continue,
                    Some(p) => vec![p],
                    None => Vec::new(),
                }
            } else {
                let sharing = self
                    .sharers
                    .get_or_init(|| {
                        super::open_files::sharers(&self.kernel_locks.description_keys())
                    })
                    .get(lock)
                    .map(Vec::as_slice)
                    .unwrap_or(&[]);
                if sharing.is_empty() {
                    match lock.pid {
                        Some(p) if self.about_another_file(p, lock, key) => continue,
                        Some(p)
                            if !matches!(self.pid(p), PidState::Absent | PidState::Zombie(_)) =>
                        {
                            vec![p]
                        }
                        _ => Vec::new(),
                    }
                } else {
                    // The sharers' own keys are the files' real ones, as is `key`: the same
                    // file has the same key (unless the kernel printed this very key).
                    let mut here: Vec<i32> = Vec::new();
                    for (pid, file) in sharing {
                        if (*file == key || lock.key == key) && !here.contains(pid) {
                            here.push(*pid);
                        }
                    }
                    if here.is_empty() {
                        continue;
                    }
                    here
                }
            };
            out.push((lock, pids));
        }
        out
    }

    /// Whether the descriptors of `pid` show that `lock` is about another file than `key`
    /// (see [`Snapshot::kernel_locks_on`]).
    fn about_another_file(&self, pid: i32, lock: &KernelLock, key: FileKey) -> bool {
        let Some(files) = self.files_of(pid) else {
            return false;
        };
        if files.contains(&key) {
            return false;
        }
        if lock.how == HolderHow::Posix {
            return true;
        }
        // A flock may be held through a descriptor another process inherited, so only an entry
        // matched by its inode alone (another device) can be shown to be about another file.
        lock.key != key
            && files
                .iter()
                .any(|f| super::open_files::same_file(&lock.key, f))
    }

    /// The files a process has open (read once per snapshot), `None` when unreadable.
    fn files_of(&self, pid: i32) -> Option<Arc<HashSet<FileKey>>> {
        if let Some(f) = self.open_by_pid.lock().unwrap().get(&pid) {
            return f.clone();
        }
        let f = super::open_files::files_of(pid).map(Arc::new);
        self.open_by_pid.lock().unwrap().insert(pid, f.clone());
        f
    }

    /// The processes that have this file open (builds the open-files map on first use).
    pub fn openers(&self, key: FileKey) -> Vec<Holder> {
        self.open_files
            .get_or_init(OpenFiles::read)
            .openers(key)
            .iter()
            .map(|&pid| self.holder(pid, HolderHow::Open))
            .collect()
    }

    /// The regular files every other process has open, with their link text (read once).
    pub(crate) fn fd_targets(&self) -> &super::places::FdTargets {
        self.fd_targets.get_or_init(super::places::FdTargets::read)
    }

    /// Every process on this host with name, exe, command line, cwd and `GIT_DIR` (built on
    /// first use, through sysinfo).
    pub fn processes(&self) -> &[ProcSummary] {
        self.processes.get_or_init(list_processes)
    }

    /// Whether some process listens on a unix socket bound at `path` (`/proc/net/unix`, read
    /// on first use).
    pub fn unix_socket_listening(&self, path: &str) -> bool {
        self.unix_listeners
            .get_or_init(|| {
                std::fs::read_to_string("/proc/net/unix")
                    .map(|t| listening_unix_sockets(&t))
                    .unwrap_or_default()
            })
            .contains(path)
    }

    /// The file system of a lock, by its parent directory and device (cached per device).
    pub fn fs_of(&self, path: &Path, meta: &std::fs::Metadata) -> FsInfo {
        let dev = meta.dev();
        if let Some(info) = self.fs.lock().unwrap().get(&dev) {
            return info.clone();
        }
        let dir = if meta.is_dir() {
            path
        } else {
            path.parent().unwrap_or(Path::new("/"))
        };
        // Not `statfs` on a mount that may hang: its server may not answer.
        let mut info = super::fs::describe_bounded(dir, dev);
        info.own_root = Some(dev) == self.root_dev;
        info.container_root = info.kind.is_overlay() && !info.own_root;
        self.fs.lock().unwrap().insert(dev, info.clone());
        info
    }

    /// A user name for a uid.
    pub fn user_name(&self, uid: u32) -> Option<String> {
        let users = self
            .users
            .get_or_init(|| sysinfo::Users::new_with_refreshed_list().ok())
            .as_ref()?;
        users
            .iter()
            .find(|u| **u.id() == uid)
            .map(|u| u.name().to_string())
    }

    /// The report's view of a live process.
    pub fn process_info(&self, facts: &ProcFacts) -> ProcessInfo {
        ProcessInfo {
            pid: facts.pid,
            name: facts.comm.clone(),
            exe: facts.exe.clone(),
            cmd: facts.cmdline.clone(),
            user: facts.uid.and_then(|u| self.user_name(u)),
            start_time: facts.start_ms.map(locksmith_sys::time::fmt_ms),
            container: self.container_of(facts),
        }
    }
}

/// The paths of listening unix sockets in a `/proc/net/unix` table (flag `00010000`).
fn listening_unix_sockets(table: &str) -> std::collections::HashSet<String> {
    table
        .lines()
        .skip(1)
        .filter_map(|line| {
            let cols: Vec<&str> = line.split_whitespace().collect();
            (cols.len() >= 8 && cols[3] == "00010000").then(|| cols[7..].join(" "))
        })
        .collect()
}

fn list_processes() -> Vec<ProcSummary> {
    use sysinfo::{ProcessRefreshKind, ProcessesToUpdate, UpdateKind};
    let Ok(mut sys) = sysinfo::System::new() else {
        return Vec::new();
    };
    // Processes only: a thread's /proc/<pid>/task/<tid> says nothing its process does not, and
    // listing every thread of every process (a browser has hundreds) costs more than the rest.
    sys.refresh_processes_specifics(
        ProcessesToUpdate::All,
        true,
        ProcessRefreshKind::nothing()
            .without_tasks()
            .with_exe(UpdateKind::Always)
            .with_cmd(UpdateKind::Always)
            .with_cwd(UpdateKind::Always)
            .with_environ(UpdateKind::Always),
    );
    sys.processes()
        .values()
        .filter(|p| p.thread_kind().is_none())
        .map(|p| ProcSummary {
            pid: p.pid().as_u32() as i32,
            name: p.name().to_string_lossy().into_owned(),
            exe: p.exe().map(Path::to_path_buf),
            cmd: p
                .cmd()
                .iter()
                .map(|s| s.to_string_lossy().into_owned())
                .collect(),
            cwd: p.cwd().map(Path::to_path_buf),
            git_dir: p.environ().iter().find_map(|kv| {
                kv.to_str()
                    .and_then(|s| s.strip_prefix("GIT_DIR="))
                    .map(PathBuf::from)
            }),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_listening_unix_sockets() {
        let table = "Num       RefCount Protocol Flags    Type St Inode Path\n\
0000000000000000: 00000002 00000000 00010000 0001 01 2001 /tmp/.org.chromium.x/SingletonSocket\n\
0000000000000000: 00000003 00000000 00000000 0001 03 2002 /run/connected.sock\n";
        let set = listening_unix_sockets(table);
        assert!(set.contains("/tmp/.org.chromium.x/SingletonSocket"));
        assert!(!set.contains("/run/connected.sock"));
    }
    /// Skips a test (the caller returns): a failure under CI (`CI` set, as root there);
    /// otherwise a line in the skip log that `.ci/run` sums up, when it names one.
    fn skip(why: &str) {
        use std::io::Write;
        assert!(
            std::env::var_os("CI").is_none(),
            "nothing may be skipped under CI: {why}"
        );
        let test = std::thread::current().name().unwrap_or("?").to_string();
        eprintln!("SKIPPED: {test}: {why}");
        if let Some(log) = std::env::var_os("LOCKSMITH_TEST_SKIP_LOG") {
            let _ = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(log)
                .and_then(|mut f| writeln!(f, "{test}\tskipped: {why}"));
        }
    }

    /// A process (group) killed and reaped when dropped.
    #[cfg(target_os = "linux")]
    struct Holder(std::process::Child);

    #[cfg(target_os = "linux")]
    impl Drop for Holder {
        fn drop(&mut self) {
            let pgid = rustix::process::Pid::from_child(&self.0);
            let _ = rustix::process::kill_process_group(pgid, rustix::process::Signal::KILL);
            let _ = self.0.wait();
        }
    }

    /// Starts `sh -c script` in its own process group; returns it and its first output line.
    #[cfg(target_os = "linux")]
    fn start(cmd: &mut std::process::Command) -> (Holder, String) {
        use std::io::BufRead;
        use std::os::unix::process::CommandExt;
        let mut child = cmd
            .process_group(0)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let out = child.stdout.take().unwrap();
        let holder = Holder(child);
        let mut line = String::new();
        std::io::BufReader::new(out).read_line(&mut line).unwrap();
        (holder, line.trim().to_string())
    }

    /// A flock held on a deleted file is listed in `/proc/locks` by its device and inode; a
    /// new file elsewhere with the same inode number (another tmpfs: an anonymous device, where
    /// only the inode can be compared) is not held by that holder. The same for a POSIX lock.
    /// The held files themselves, and a file another process holds, still are.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_lock_on_a_deleted_file_does_not_hold_a_new_file_with_its_inode_number() {
        use std::os::unix::fs::MetadataExt;
        use std::process::Command;
        if !rustix::process::geteuid().is_root() {
            return skip("mounting the two tmpfs this test needs takes root");
        }
        let dir = tempfile::tempdir().unwrap();
        for d in ["a", "b"] {
            std::fs::create_dir(dir.path().join(d)).unwrap();
        }
        // In a mount namespace of its own: two fresh tmpfs, a flock on a/held.lock, which is
        // then deleted while held. `flock` (the holder) keeps its descriptor.
        let script = r#"mount -t tmpfs locksmith-a "$1/a" && mount -t tmpfs locksmith-b "$1/b" &&
            exec flock "$1/a/held.lock" sh -c 'stat -c %i "$1/a/held.lock" && rm "$1/a/held.lock" && exec sleep 600' sh "$1""#;
        let (holder, line) = start(
            Command::new("unshare")
                .args([
                    "--mount",
                    "--propagation",
                    "private",
                    "sh",
                    "-c",
                    script,
                    "sh",
                ])
                .arg(dir.path()),
        );
        let Ok(held_ino) = line.parse::<u64>() else {
            return skip(&format!(
                "could not set up two tmpfs in a mount namespace ({line:?})"
            ));
        };
        let pid = holder.0.id() as i32;
        // The holder's mounts, seen from here.
        let there = Path::new("/proc")
            .join(pid.to_string())
            .join("root")
            .join(dir.path().strip_prefix("/").unwrap());
        // Files in b until one has the inode number `ino` (bounded).
        let with_ino = |ino: u64, name: &str| {
            for i in 0..10_000 {
                let p = there.join(format!("b/{name}{i}.lock"));
                std::fs::write(&p, b"").unwrap();
                if std::fs::metadata(&p).unwrap().ino() == ino {
                    return Some(p);
                }
                std::fs::remove_file(&p).unwrap();
            }
            skip(&format!(
                "inode number {ino} did not come back in 10000 files"
            ));
            None
        };
        let Some(new) = with_ino(held_ino, "new") else {
            return;
        };
        let new_key = FileKey::of(&std::fs::metadata(&new).unwrap());
        let held_key = std::fs::read_dir(format!("/proc/{pid}/fd"))
            .unwrap()
            .filter_map(|fd| std::fs::metadata(fd.unwrap().path()).ok())
            .map(|m| FileKey::of(&m))
            .find(|k| k.inode == held_ino && *k != new_key)
            .expect("the holder's descriptor of the deleted file");

        // Another process holding a flock on a file that is not deleted.
        let plain = dir.path().join("plain.lock");
        let (other, ready) = start(Command::new("flock").arg(&plain).args([
            "sh",
            "-c",
            "echo ready && exec sleep 600",
        ]));
        assert_eq!(ready, "ready");
        let plain_key = FileKey::of(&std::fs::metadata(&plain).unwrap());

        // A POSIX lock (lockf) on a file in a, and a new file in b with its inode number.
        let posix = there.join("a/posix.lock");
        let (posix_holder, ready) = start(
            Command::new("python3")
                .arg("-c")
                .arg(
                    "import fcntl, sys, time\n\
             f = open(sys.argv[1], 'w')\n\
             fcntl.lockf(f, fcntl.LOCK_EX)\n\
             print('ready', flush=True)\n\
             time.sleep(600)",
                )
                .arg(&posix),
        );
        assert_eq!(ready, "ready");
        let posix_pid = posix_holder.0.id() as i32;
        let posix_key = FileKey::of(&std::fs::metadata(&posix).unwrap());
        let Some(posix_twin) = with_ino(posix_key.inode, "twin") else {
            return;
        };
        let twin_key = FileKey::of(&std::fs::metadata(&posix_twin).unwrap());

        let snap = Snapshot::take();
        assert!(
            snap.kernel_locks()
                .on(twin_key)
                .iter()
                .any(|l| l.pid == Some(posix_pid)),
            "{:?}",
            snap.kernel_locks().on(twin_key)
        );
        assert!(
            !snap.kernel_locked(twin_key),
            "{:?}",
            snap.kernel_holders(twin_key)
        );
        assert!(snap.kernel_locked(posix_key));
        assert!(
            snap.kernel_locks()
                .on(new_key)
                .iter()
                .any(|l| l.pid == Some(pid)),
            "/proc/locks names the inode of the new file: {:?}",
            snap.kernel_locks().on(new_key)
        );
        assert!(
            !snap.kernel_locked(new_key),
            "{:?}",
            snap.kernel_holders(new_key)
        );
        assert!(
            !snap.kernel_holders(new_key).iter().any(|h| h.pid == pid),
            "{:?}",
            snap.kernel_holders(new_key)
        );
        let holders = |k| {
            snap.kernel_holders(k)
                .iter()
                .map(|h| h.pid)
                .collect::<Vec<_>>()
        };
        // A flock's holders are every process sharing its description: `flock` and the
        // command it runs (which inherited the descriptor).
        let shared = |k, leader: i32| {
            let h = holders(k);
            assert!(h.contains(&leader), "{h:?}");
            for p in h.iter().filter(|&&p| p != leader) {
                let ppid = snap.pid(*p).facts().map(|f| f.ppid);
                assert_eq!(ppid, Some(leader), "{p} is not {leader}'s child: {h:?}");
            }
        };
        assert!(snap.kernel_locked(held_key));
        shared(held_key, pid);
        assert!(snap.kernel_locked(plain_key));
        shared(plain_key, other.0.id() as i32);
        assert_eq!(holders(posix_key), vec![posix_pid]);
    }
}
