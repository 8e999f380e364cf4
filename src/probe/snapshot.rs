//! The evidence snapshot: everything the judges need, collected once per scan (or per engine
//! operation) and shared by every lock judged in it. Cheap parts (host facts, `/proc/locks`) are
//! read eagerly; expensive parts (all processes, every process's descriptors, OFD attribution,
//! the namespaces) are built lazily, once, and only if some lock needs them. A scan starts the
//! parts that wait longest or that most scans need on threads of their own before it needs
//! them ([`Ahead`]). Per-PID probes are cached, so each PID is read once. `Snapshot` is
//! `Sync`: the scanner judges on several threads.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use super::containers::Inventory;
use super::evidence::{self, Evidence};
use super::fs::FsInfo;
use super::host::HostFacts;
use super::kernel_locks::{FileKey, KernelLock, KernelLocks};
use super::open_files::FdTable;
pub use super::process::ProcSummary;
use super::process::{self, PidState, ProcFacts};
use crate::verdict::{ContainerInfo, Holder, HolderHow, ProcessInfo};

/// How long a child of ours still running our program may keep a file open and be a copy
/// between fork and exec, not a holder (see [`Snapshot::openers`]).
pub const COPY_WAIT: std::time::Duration = std::time::Duration::from_secs(3);

/// What became of a process a table of descriptors listed as an opener of a file.
enum OpenerNow {
    /// It has the file open now: this PID holds it (this process, for its tasks).
    Holds(i32),
    /// It is alive and has closed it.
    Released,
    /// It has exited.
    Exited,
}

/// Whether `pid` is this process, or a task it started for a call (which holds copies of its
/// descriptors until it has closed them).
fn is_us(pid: i32) -> bool {
    pid == std::process::id() as i32 || super::fs::is_our_task(pid)
}

/// Whether `pid` has the file `key` open now (`None`: its descriptors cannot be read).
fn open_now(pid: i32, key: FileKey) -> Option<bool> {
    super::open_files::files_of(pid).map(|f| f.contains(&key))
}

/// One snapshot of the evidence (README: Evidence).
pub struct Snapshot {
    pub host: HostFacts,
    /// When the snapshot was taken, in milliseconds since the epoch.
    pub taken_ms: i64,
    pub pid_max: i64,
    /// Device of our own `/`.
    root_dev: Option<u64>,
    kernel_locks: Early<KernelLocks>,
    pids: Mutex<HashMap<i32, PidState>>,
    /// Who shares the descriptions holding flock and OFD locks (read on first use).
    sharers: OnceLock<HashMap<KernelLock, Vec<(i32, FileKey)>>>,
    /// The files each lock holder has open (`None`: unreadable).
    open_by_pid: Mutex<HashMap<i32, Option<Arc<HashSet<FileKey>>>>>,
    /// Children of ours, still running our program, that kept a file open for longer than a
    /// copy between fork and exec would ([`COPY_WAIT`]): holders of what they have open.
    kept_by_copy: Mutex<HashSet<i32>>,
    /// Every process's descriptors read again, once an opener of the first table has closed
    /// a file or exited (see [`Snapshot::openers`]).
    fd_table_now: OnceLock<FdTable>,
    /// Every process's descriptors (read on first use).
    fd_table: Early<FdTable>,
    processes: Early<Vec<ProcSummary>>,
    users: OnceLock<Option<sysinfo::Users>>,
    unix_listeners: OnceLock<std::collections::HashSet<String>>,
    fs: Mutex<HashMap<u64, FsInfo>>,
    /// The directories this host serves to other machines (read on first use).
    shares: OnceLock<super::shares::Shares>,
    containers: Early<Inventory>,
    /// The directories asked about, as our namespace resolves them.
    canonical: super::places::CanonicalDirs,
    /// Where its answers are kept, or come from ([`Book`]).
    book: Book,
    /// How far the wall clock can be trusted (read on first use).
    clock: OnceLock<super::clock::Clock>,
    /// The questions a replay found no answer to in its recording (see
    /// [`Snapshot::replay_misses`]).
    misses: Mutex<Vec<String>>,
    /// Reads that stopped at their bound, other than the tables' own (see
    /// [`Snapshot::bound_hits`]).
    more_hits: Mutex<Vec<(PathBuf, String)>>,
}

/// Where a snapshot's answers come from and go (see [`super::evidence`]).
enum Book {
    /// Read from the machine; nothing kept.
    Live,
    /// Read from the machine, each answer kept: the first answer to a question is the one
    /// every later asker gets, so that a replay of the recording gives the same verdicts.
    Record(Mutex<Evidence>),
    /// Answered from a recording alone.
    Replay(Mutex<Evidence>),
}

impl std::fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Snapshot")
            .field("host", &self.host)
            .finish_non_exhaustive()
    }
}

/// A part of a snapshot read on a thread of its own from the start, or on first use when no
/// thread was started for it: the first to ask waits for that thread (or reads it), the others
/// for the first. A thread that failed is read again.
struct Early<T> {
    value: OnceLock<T>,
    thread: Mutex<Option<std::thread::JoinHandle<T>>>,
}

impl<T: Send + 'static> Early<T> {
    /// Read on first use.
    fn later() -> Self {
        Early {
            value: OnceLock::new(),
            thread: Mutex::new(None),
        }
    }

    /// Known already.
    fn known(value: T) -> Self {
        Early {
            value: OnceLock::from(value),
            thread: Mutex::new(None),
        }
    }

    /// Read from now on, on a thread of its own.
    fn started(read: impl FnOnce() -> T + Send + 'static) -> Self {
        Early {
            value: OnceLock::new(),
            thread: Mutex::new(Some(std::thread::spawn(read))),
        }
    }

    /// Whether it is still being read on its thread (asking would wait).
    fn pending(&self) -> bool {
        self.value.get().is_none()
            && self
                .thread
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .as_ref()
                .is_some_and(|t| !t.is_finished())
    }

    fn get(&self, read: impl FnOnce() -> T) -> &T {
        self.value.get_or_init(|| {
            let thread = self.thread.lock().unwrap_or_else(|e| e.into_inner()).take();
            thread.and_then(|t| t.join().ok()).unwrap_or_else(read)
        })
    }
}

/// A snapshot started before it is needed (while a command loads its configuration): its reads
/// that wait the longest, or that most scans need, run on threads of their own meanwhile, and
/// each is waited for where it is first needed. Reading `/proc/locks` takes the kernel's
/// file-lock lock for writing, which after a quiet while waits for an RCU grace period, asleep
/// (some 10 ms on an idle machine, whatever the table holds). The inventory of namespaces
/// (every process's namespace links, each container's mounts and state) is needed before the
/// containers' places are walked, and by every PID lock judged. The census of processes and the
/// table of every process's descriptors are what the writer rules and the holders of kernel
/// locks ask for; read once the inventory is (a scan that needs neither has spent a few
/// milliseconds of processor time per hundred processes on them). The walk reads directories
/// meanwhile (`Snapshot::evidence_pending`): what it finds waits for them, not the walk.
pub struct Ahead {
    /// When the first part began to be read: the snapshot's time. Every age is measured from
    /// it, so no evidence is older than the time ages are measured at (a writer that started
    /// after the census was read cannot have written a lock before then).
    started_ms: i64,
    kernel_locks: Early<KernelLocks>,
    containers: Early<Inventory>,
    processes: Early<Vec<ProcSummary>>,
    fd_table: Early<FdTable>,
}

impl Ahead {
    pub fn start() -> Self {
        Self::start_when(|| {})
    }

    /// Every part read once `wait` returns (tests: evidence that takes as long as they like).
    pub(crate) fn start_when(wait: impl Fn() + Clone + Send + 'static) -> Self {
        // The census and the descriptors start once the inventory is read (its senders are
        // dropped, even by a panic): the inventory is read first, alone.
        let (census_gate, census_after) = std::sync::mpsc::channel::<()>();
        let (fds_gate, fds_after) = std::sync::mpsc::channel::<()>();
        let (w1, w2, w3, w4) = (wait.clone(), wait.clone(), wait.clone(), wait);
        Ahead {
            started_ms: jiff::Timestamp::now().as_millisecond(),
            kernel_locks: Early::started(move || {
                w1();
                KernelLocks::read()
            }),
            containers: Early::started(move || {
                let _gates = (census_gate, fds_gate);
                w2();
                Inventory::read(super::host::pid_ns_of("self"))
            }),
            processes: Early::started(move || {
                let _ = census_after.recv();
                w3();
                list_processes()
            }),
            fd_table: Early::started(move || {
                let _ = fds_after.recv();
                w4();
                FdTable::read()
            }),
        }
    }

    /// The snapshot, its parts still being read, taken when they began to be.
    pub fn take(self) -> Snapshot {
        Snapshot {
            kernel_locks: self.kernel_locks,
            containers: self.containers,
            processes: self.processes,
            fd_table: self.fd_table,
            taken_ms: self.started_ms,
            ..Snapshot::with_kernel_locks(KernelLocks::default())
        }
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
            kernel_locks: Early::known(kernel_locks),
            pids: Mutex::default(),
            sharers: OnceLock::new(),
            open_by_pid: Mutex::default(),
            kept_by_copy: Mutex::default(),
            fd_table_now: OnceLock::new(),
            fd_table: Early::later(),
            processes: Early::later(),
            users: OnceLock::new(),
            unix_listeners: OnceLock::new(),
            fs: Mutex::default(),
            shares: OnceLock::new(),
            containers: Early::later(),
            canonical: Default::default(),
            book: Book::Live,
            clock: OnceLock::new(),
            misses: Mutex::default(),
            more_hits: Mutex::default(),
        }
    }

    /// This snapshot, keeping every answer it gives from now on (see
    /// [`Snapshot::evidence`]).
    pub fn recording(mut self) -> Self {
        let mut ev = Evidence::new(self.host.clone(), self.taken_ms, self.pid_max);
        ev.root_dev = self.root_dev;
        self.book = Book::Record(Mutex::new(ev));
        self
    }

    /// A snapshot that answers from a recording alone, reading nothing of this machine.
    pub fn replay(ev: Evidence) -> Self {
        Snapshot {
            host: ev.host.clone(),
            taken_ms: ev.taken_ms,
            pid_max: ev.pid_max,
            root_dev: ev.root_dev,
            kernel_locks: Early::known(KernelLocks::default()),
            pids: Mutex::default(),
            sharers: OnceLock::new(),
            open_by_pid: Mutex::default(),
            kept_by_copy: Mutex::default(),
            fd_table_now: OnceLock::new(),
            fd_table: Early::known(FdTable::default()),
            processes: Early::known(ev.processes.clone().unwrap_or_default()),
            users: OnceLock::new(),
            unix_listeners: OnceLock::new(),
            fs: Mutex::default(),
            shares: OnceLock::new(),
            containers: Early::known(ev.containers.clone().unwrap_or_default()),
            canonical: Default::default(),
            book: Book::Replay(Mutex::new(ev)),
            clock: OnceLock::new(),
            misses: Mutex::default(),
            more_hits: Mutex::default(),
        }
    }

    /// Whether this snapshot answers from a recording.
    pub fn is_replay(&self) -> bool {
        matches!(self.book, Book::Replay(_))
    }

    /// The evidence this snapshot has given so far (a recording, or the one it replays),
    /// with the census and the inventory when they were read. `None` for a live snapshot that
    /// keeps nothing.
    pub fn evidence(&self) -> Option<Evidence> {
        let m = match &self.book {
            Book::Live => return None,
            Book::Record(m) | Book::Replay(m) => m,
        };
        let mut ev = m.lock().unwrap_or_else(|e| e.into_inner()).clone();
        if ev.processes.is_none() {
            ev.processes = self.processes.value.get().cloned();
        }
        if ev.containers.is_none() {
            ev.containers = self.containers.value.get().cloned();
        }
        if matches!(self.book, Book::Record(_)) {
            ev.bounds = self
                .bound_hits()
                .into_iter()
                .map(|(p, w)| (evidence::path_key(&p), w))
                .collect();
        }
        Some(ev)
    }

    /// Adds to the evidence a recording keeps (a lock read, the settings): nothing for a
    /// snapshot that does not record.
    pub fn keep(&self, add: impl FnOnce(&mut Evidence)) {
        if let Book::Record(m) = &self.book {
            add(&mut m.lock().unwrap_or_else(|e| e.into_inner()));
        }
    }

    /// The answer to one question: read now (`live`) and kept when recording, or taken from
    /// the recording (`missing` when it has none). `key` names the question in `pick`'s map.
    pub(crate) fn answer<K: Ord + std::fmt::Debug, V: Clone>(
        &self,
        pick: fn(&mut Evidence) -> &mut BTreeMap<K, V>,
        key: impl FnOnce() -> K,
        live: impl FnOnce() -> V,
        missing: impl FnOnce() -> V,
    ) -> V {
        match &self.book {
            Book::Live => live(),
            Book::Record(m) => {
                let key = key();
                if let Some(v) = pick(&mut m.lock().unwrap_or_else(|e| e.into_inner())).get(&key) {
                    return v.clone();
                }
                // The machine is read without holding the book.
                let v = live();
                pick(&mut m.lock().unwrap_or_else(|e| e.into_inner()))
                    .entry(key)
                    .or_insert(v)
                    .clone()
            }
            Book::Replay(m) => {
                let key = key();
                let found = pick(&mut m.lock().unwrap_or_else(|e| e.into_inner()))
                    .get(&key)
                    .cloned();
                found.unwrap_or_else(|| {
                    self.misses
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .push(format!("{key:?}"));
                    missing()
                })
            }
        }
    }

    /// The reads that stopped at their bound ([`super::bounds`]) in what this snapshot read:
    /// each a path of `/proc` and what the cut leaves unproven. In the order found, each once.
    pub fn bound_hits(&self) -> Vec<(PathBuf, String)> {
        if let Book::Replay(m) = &self.book {
            return m
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .bounds
                .iter()
                .map(|(p, w)| (evidence::key_path(p), w.clone()))
                .collect();
        }
        let mut out: Vec<(PathBuf, String)> = Vec::new();
        if let Some(t) = self.fd_table.value.get() {
            // One line for each user whose processes' descriptors were cut, naming the first.
            let mut users: Vec<Option<u32>> = Vec::new();
            for (_, uid, _) in &t.cut {
                if !users.contains(uid) {
                    users.push(*uid);
                }
            }
            for uid in users {
                let cut: Vec<&(i32, Option<u32>, usize)> =
                    t.cut.iter().filter(|c| c.1 == uid).collect();
                let read: usize = cut.iter().map(|c| c.2).sum();
                out.push((
                    PathBuf::from(format!("/proc/{}/fd", cut[0].0)),
                    format!(
                        "the descriptors of {} of {} were read only up to their bound ({read} read in all; {} a process, {} a user): whether they have a lock open is not known, so no lock is proven stale by nobody having it open",
                        if cut.len() == 1 {
                            "this process".to_string()
                        } else {
                            format!("{} processes", cut.len())
                        },
                        match uid {
                            Some(u) => format!("uid {u}"),
                            None => "an unknown user".into(),
                        },
                        super::bounds::FDS_PER_PROCESS,
                        super::bounds::FDS_PER_USER,
                    ),
                ));
            }
        }
        if let Some(ps) = self.processes.value.get() {
            for p in ps.iter().filter(|p| p.cmd_cut) {
                out.push((
                    PathBuf::from(format!("/proc/{}/cmdline", p.pid)),
                    format!(
                        "its command line was read up to its bound ({} bytes): what it names beyond is not known",
                        super::bounds::CMDLINE_BYTES
                    ),
                ));
            }
        }
        if let Some(inv) = self.containers.value.get() {
            for ns in inv.namespaces.iter().filter(|n| n.mounts_cut) {
                out.push((
                    PathBuf::from(format!("/proc/{}/mountinfo", ns.init)),
                    format!(
                        "the mount table of {} was read up to its bound ({} mounts, {} bytes): what it sees beyond is not known, so a PID of it may own a lock it sees",
                        ns.container.describe(),
                        super::bounds::MOUNT_LINES,
                        super::bounds::MOUNT_BYTES
                    ),
                ));
            }
        }
        out.extend(
            self.more_hits
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .iter()
                .cloned(),
        );
        out
    }

    /// Notes a read that stopped at its bound (one the tables above do not keep).
    pub(crate) fn hit_bound(&self, path: PathBuf, what: String) {
        let mut hits = self.more_hits.lock().unwrap_or_else(|e| e.into_inner());
        if !hits.iter().any(|(p, _)| *p == path) {
            hits.push((path, what));
        }
    }

    /// The processes whose descriptors were not all read ([`super::bounds`]): PID, user, and
    /// how many were read.
    pub fn fds_cut(&self) -> Vec<(i32, Option<u32>, usize)> {
        match &self.book {
            Book::Replay(m) => m
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .fds_cut
                .clone()
                .unwrap_or_default(),
            Book::Record(m) => {
                let cut = self.fd_table().cut.clone();
                m.lock().unwrap_or_else(|e| e.into_inner()).fds_cut = Some(cut.clone());
                cut
            }
            Book::Live => self.fd_table().cut.clone(),
        }
    }

    /// The questions this replay asked that its recording does not answer (each got the
    /// answer of a machine that has nothing more: no such process, no such file). A replay of
    /// an unchanged recording has none; a changed one (a perturbation) may.
    pub fn replay_misses(&self) -> Vec<String> {
        self.misses
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Whether `/proc/locks` could be read (without it, finding no kernel lock proves
    /// nothing).
    pub fn kernel_locks_available(&self) -> bool {
        match &self.book {
            Book::Live => self.kernel_locks().available(),
            Book::Record(m) => {
                let a = self.kernel_locks().available();
                m.lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .kernel_locks_available = a;
                a
            }
            Book::Replay(m) => {
                m.lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .kernel_locks_available
            }
        }
    }

    /// The directories asked about, each resolved once per snapshot
    /// ([`super::places::CanonicalDirs`]).
    pub(crate) fn canonical_dirs(&self) -> &super::places::CanonicalDirs {
        &self.canonical
    }

    /// Whether the table of `/proc/locks` is still being read on a thread of its own (asking
    /// for it now would wait).
    pub(crate) fn kernel_locks_pending(&self) -> bool {
        self.kernel_locks.pending()
    }

    /// Whether some part that judging a lock may ask for (the kernel's lock table, the
    /// inventory of namespaces, the census, the descriptors) is still being read on a thread
    /// of its own. A part read on first use is never pending: nothing reads it meanwhile.
    pub(crate) fn evidence_pending(&self) -> bool {
        self.kernel_locks.pending()
            || self.containers.pending()
            || self.processes.pending()
            || self.fd_table.pending()
    }

    /// The table of `/proc/locks` (read once per snapshot).
    pub fn kernel_locks(&self) -> &KernelLocks {
        self.kernel_locks.get(KernelLocks::read)
    }

    /// The state of one PID on this host (probed once per snapshot).
    pub fn pid(&self, pid: i32) -> PidState {
        self.answer(
            |e| &mut e.pids,
            || pid,
            || {
                if let Some(s) = self.pids.lock().unwrap().get(&pid) {
                    return s.clone();
                }
                let s = process::probe(pid, &self.host);
                self.pids.lock().unwrap().insert(pid, s.clone());
                s
            },
            || PidState::Absent,
        )
    }

    /// Every PID namespace on this machine other than ours: containers and sandboxes, their
    /// processes, mounts and names (read on first use, once per snapshot).
    pub fn containers(&self) -> &Inventory {
        self.containers.get(|| Inventory::read(self.host.pid_ns))
    }

    /// Which namespaces can see the file at `path` on device `dev`, and under which path
    /// ([`Inventory::who_sees`]).
    pub fn who_sees(&self, path: &Path, dev: u64) -> super::containers::Sightings<'_> {
        let inv = self.containers();
        let live = || {
            let s = inv.who_sees(path, dev, &self.canonical);
            evidence::SightingsRec {
                seen: s
                    .seen
                    .iter()
                    .map(|s| evidence::SeenRec {
                        ns: s.ns.map(|n| n.inode),
                        path: evidence::path_key(&s.path),
                        layer: s.layer,
                        tied: s.tied,
                    })
                    .collect(),
                mapped: s.mapped,
            }
        };
        if matches!(self.book, Book::Live) {
            return inv.who_sees(path, dev, &self.canonical);
        }
        let rec = self.answer(
            |e| &mut e.sightings,
            || format!("{dev} {}", evidence::path_key(path)),
            live,
            || evidence::SightingsRec {
                seen: vec![evidence::SeenRec {
                    ns: None,
                    path: evidence::path_key(path),
                    layer: None,
                    tied: true,
                }],
                mapped: true,
            },
        );
        super::containers::Sightings {
            seen: rec
                .seen
                .iter()
                .filter_map(|s| {
                    let ns = match s.ns {
                        None => None,
                        Some(inode) => Some(inv.namespaces.iter().find(|n| n.inode == inode)?),
                    };
                    Some(super::containers::Seen {
                        ns,
                        path: evidence::key_path(&s.path),
                        layer: s.layer,
                        tied: s.tied,
                    })
                })
                .collect(),
            mapped: rec.mapped,
        }
    }

    /// How far the wall clock can be trusted since this boot began (read once, when a rule
    /// first compares times). A replay without it proves nothing by time, and counts it as a miss.
    pub fn clock(&self) -> super::clock::Clock {
        match &self.book {
            Book::Replay(m) => {
                if let Some(c) = &m.lock().unwrap_or_else(|e| e.into_inner()).clock {
                    return c.clone();
                }
                // A recording without the clock: nothing proves by time (and it is a miss).
                self.misses
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push("clock".into());
                super::clock::Clock {
                    step_ms: None,
                    how: "the recording holds no reading of the wall clock".into(),
                }
            }
            Book::Record(m) => {
                if let Some(c) = &m.lock().unwrap_or_else(|e| e.into_inner()).clock {
                    return c.clone();
                }
                let c = self.clock_now().clone();
                m.lock().unwrap_or_else(|e| e.into_inner()).clock = Some(c.clone());
                c
            }
            Book::Live => self.clock_now().clone(),
        }
    }

    fn clock_now(&self) -> &super::clock::Clock {
        self.clock
            .get_or_init(|| super::clock::Clock::read(self.host.boot_time))
    }

    /// The PID of the process that took this evidence (never the owner of what it judges).
    pub fn self_pid(&self) -> i32 {
        match &self.book {
            Book::Replay(m) => m.lock().unwrap_or_else(|e| e.into_inner()).self_pid,
            _ => std::process::id() as i32,
        }
    }

    /// The effective user this evidence was taken as.
    pub fn euid(&self) -> u32 {
        match &self.book {
            Book::Replay(m) => m.lock().unwrap_or_else(|e| e.into_inner()).euid,
            _ => rustix::process::geteuid().as_raw(),
        }
    }

    /// Whether process `pid` has no working directory any more (it is exiting: `ENOENT`),
    /// rather than one we may not read.
    pub fn cwd_gone(&self, pid: i32) -> bool {
        self.answer(
            |e| &mut e.cwd_gone,
            || pid,
            || {
                super::fs::known(Path::new(&format!("/proc/{pid}/cwd")))
                    .is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound)
            },
            || true,
        )
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
        self.answer(
            |e| &mut e.kernel_holders,
            || key,
            || self.kernel_holders_now(key),
            Vec::new,
        )
    }

    fn kernel_holders_now(&self, key: FileKey) -> Vec<Holder> {
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
        match self.book {
            Book::Live => !self.kernel_locks_on(key).is_empty(),
            _ => !self.kernel_holders(key).is_empty(),
        }
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
        for lock in self.kernel_locks().on(key) {
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
                        self.fd_table()
                            .sharers(&self.kernel_locks().description_keys())
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

    /// The processes that have this file open (from the table of descriptors), each asked again
    /// now where the table may be out of date:
    /// - The scan opens each lock file it reads for a moment, maybe while the table is read:
    ///   this process holds the file only if it still has it open when the lock is judged.
    /// - A task it started for a call ([`super::fs::is_our_task`]) holds copies of its
    ///   descriptors until it has closed them: it counts as this process.
    /// - Any other child may be a copy between fork and exec when the table was read (or
    ///   exec'd since): it holds the file if it still has it open and runs another program
    ///   now, or keeps it for longer than such a copy would (a worker forked without exec).
    /// - An opener that has closed the file or exited since (but for this process's reads) may
    ///   have handed it to a child forked after the table was read, as a daemon's parent does:
    ///   the openers of a table read now count too (read once a snapshot, when first needed).
    ///   One of them that has exited since that read counts as it is.
    pub fn openers(&self, key: FileKey) -> Vec<Holder> {
        self.answer(
            |e| &mut e.openers,
            || key,
            || self.openers_now(key),
            Vec::new,
        )
    }

    fn openers_now(&self, key: FileKey) -> Vec<Holder> {
        let mut pids: Vec<i32> = Vec::new();
        let mut add = |pid: i32| {
            if !pids.contains(&pid) {
                pids.push(pid);
            }
        };
        let listed = self.fd_table().openers(key);
        let mut out_of_date = false;
        for &pid in listed {
            match self.opener_now(pid, key) {
                OpenerNow::Holds(p) => add(p),
                OpenerNow::Released if is_us(pid) => {}
                OpenerNow::Released | OpenerNow::Exited => out_of_date = true,
            }
        }
        if out_of_date {
            let now = self.fd_table_now.get_or_init(FdTable::read);
            for &pid in now.openers(key).iter().filter(|p| !listed.contains(p)) {
                match self.opener_now(pid, key) {
                    OpenerNow::Holds(p) => add(p),
                    OpenerNow::Released => {}
                    OpenerNow::Exited => add(pid),
                }
            }
        }
        pids.into_iter()
            .map(|pid| self.holder(pid, HolderHow::Open))
            .collect()
    }

    /// What became of `pid`, listed as an opener of `key` by a table of descriptors (see
    /// [`Snapshot::openers`]). A child of ours still running our program is given up to
    /// [`COPY_WAIT`] to exec or close it.
    ///
    /// Another process is asked once a snapshot ([`Snapshot::pid`]): one seen alive before it
    /// exited still counts, which is the safe side.
    fn opener_now(&self, pid: i32, key: FileKey) -> OpenerNow {
        let me = std::process::id() as i32;
        if is_us(pid) {
            return match open_now(me, key) {
                Some(true) => OpenerNow::Holds(me),
                _ => OpenerNow::Released,
            };
        }
        let gone = |state: &PidState| matches!(state, PidState::Absent | PidState::Zombie(_));
        let state = self.pid(pid);
        if state.facts().is_none_or(|f| f.ppid != me) {
            return if gone(&state) {
                OpenerNow::Exited
            } else {
                OpenerNow::Holds(pid)
            };
        }
        // A child of ours is asked again each time: a copy between fork and exec does not
        // stay long.
        let exited = || gone(&process::probe(pid, &self.host));
        let since = std::time::Instant::now();
        loop {
            // Its program is asked before its descriptors: a copy that execs in between is
            // still taken for a copy (and asked again), not for another program holding them.
            let copy = self.runs_our_program_now(pid);
            match open_now(pid, key) {
                // An exited process lists no descriptor.
                Some(false) if exited() => return OpenerNow::Exited,
                Some(false) => return OpenerNow::Released,
                None if exited() => return OpenerNow::Exited,
                // Its descriptors unreadable (set-user-ID since): as the table said.
                None => return OpenerNow::Holds(pid),
                Some(true) => {}
            }
            if !copy || self.kept_by_copy.lock().unwrap().contains(&pid) {
                return OpenerNow::Holds(pid);
            }
            if since.elapsed() >= COPY_WAIT {
                self.kept_by_copy.lock().unwrap().insert(pid);
                return OpenerNow::Holds(pid);
            }
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
    }

    /// Whether a process runs this process's own program now (its executable, by path).
    fn runs_our_program_now(&self, pid: i32) -> bool {
        let me = std::process::id() as i32;
        let ours = self.pid(me).facts().and_then(|m| m.exe.clone());
        let exe = std::fs::read_link(format!("/proc/{pid}/exe")).ok();
        ours.is_some() && exe.map(|e| e.to_string_lossy().into_owned()) == ours
    }

    /// Every process's descriptors: who has which file open, and by what path (read once).
    pub(crate) fn fd_table(&self) -> &FdTable {
        self.fd_table.get(FdTable::read)
    }

    /// Every process on this host (kernel threads left out) with its name, executable, command
    /// line and working directory (built on first use).
    pub fn processes(&self) -> &[ProcSummary] {
        self.processes.get(list_processes)
    }

    /// Whether some process listens on a unix socket bound at `path` (`/proc/net/unix`, read
    /// on first use).
    pub fn unix_socket_listening(&self, path: &str) -> bool {
        self.answer(
            |e| &mut e.unix_listening,
            || path.to_string(),
            || self.unix_socket_listening_now(path),
            || false,
        )
    }

    fn unix_socket_listening_now(&self, path: &str) -> bool {
        self.unix_listeners
            .get_or_init(|| {
                locksmith_sys::host::read_proc_text("/proc/net/unix")
                    .map(|t| listening_unix_sockets(&t))
                    .unwrap_or_default()
            })
            .contains(path)
    }

    /// The file system of a lock, by its parent directory and device (cached per device),
    /// and whether this host serves that directory to other machines
    /// ([`super::shares`]: then other machines may reach it, as a network file system).
    pub fn fs_of(&self, path: &Path, meta: &super::Stat) -> FsInfo {
        let dir = if meta.is_dir() {
            path
        } else {
            path.parent().unwrap_or(Path::new("/"))
        };
        let facts = self.answer(
            |e| &mut e.fs,
            || format!("{} {}", meta.dev, evidence::path_key(dir)),
            || evidence::FsFacts::from(&self.fs_of_now(path, meta)),
            || evidence::FsFacts::from(&FsInfo::unknown()),
        );
        FsInfo::from(&facts)
    }

    fn fs_of_now(&self, path: &Path, meta: &super::Stat) -> FsInfo {
        let dev = meta.dev();
        let dir = if meta.is_dir() {
            path
        } else {
            path.parent().unwrap_or(Path::new("/"))
        };
        let cached = self.fs.lock().unwrap().get(&dev).cloned();
        let mut info = cached.unwrap_or_else(|| {
            // Not `statfs` on a mount that may hang: its server may not answer.
            let mut info = super::fs::describe_bounded(dir, dev);
            info.own_root = Some(dev) == self.root_dev;
            info.container_root = info.kind.is_overlay() && !info.own_root;
            self.fs.lock().unwrap().insert(dev, info.clone());
            info
        });
        if !info.network {
            let shares = self.shares.get_or_init(super::shares::Shares::read);
            if !shares.is_empty()
                && let Some(share) = self.canonical.of(dir).and_then(|d| shares.of(&d).cloned())
            {
                info.network = true;
                info.shared = Some(share.what);
            }
        }
        info
    }

    /// A user name for a uid.
    pub fn user_name(&self, uid: u32) -> Option<String> {
        self.answer(
            |e| &mut e.users,
            || uid,
            || self.user_name_now(uid),
            || None,
        )
    }

    fn user_name_now(&self, uid: u32) -> Option<String> {
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

#[cfg(target_os = "linux")]
fn list_processes() -> Vec<ProcSummary> {
    let Ok(all) = procfs::process::all_processes() else {
        return Vec::new();
    };
    all.flatten()
        .filter_map(|p| {
            let pid = p.pid();
            let stat = process::stat_of(pid)?;
            // A kernel thread runs no program: never a writer.
            if stat.flags & process::PF_KTHREAD != 0 {
                return None;
            }
            // The executable's path, less the ` (deleted)` the kernel adds once it is replaced.
            let exe = p.exe().ok().map(|e| match e.to_str() {
                Some(s) if s.ends_with(" (deleted)") => {
                    PathBuf::from(s.trim_end_matches(" (deleted)"))
                }
                _ => e,
            });
            let (cmd, whole) =
                locksmith_sys::host::cmdline_bounded(pid, super::bounds::CMDLINE_BYTES);
            Some(ProcSummary {
                pid,
                name: stat.comm,
                exe,
                cmd,
                cmd_cut: !whole,
                cwd: p.cwd().ok(),
            })
        })
        .collect()
}

#[cfg(not(target_os = "linux"))]
fn list_processes() -> Vec<ProcSummary> {
    Vec::new()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The pids `snap` calls openers of `key`.
    #[cfg(target_os = "linux")]
    fn opener_pids(snap: &Snapshot, key: FileKey) -> Vec<i32> {
        snap.openers(key).iter().map(|h| h.pid).collect()
    }

    /// An empty file of this name in a directory of its own (kept while the first part lives),
    /// and its key.
    #[cfg(target_os = "linux")]
    fn empty_file(name: &str) -> (tempfile::TempDir, std::path::PathBuf, FileKey) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(name);
        std::fs::write(&path, "").unwrap();
        let key = FileKey::of(&std::fs::metadata(&path).unwrap());
        (dir, path, key)
    }

    /// A copy of this process that waits `wait` before it execs `true`, from a thread of its
    /// own (which waits for it), with its PID and a snapshot whose table shows it holding
    /// `key`.
    #[cfg(target_os = "linux")]
    fn copy_holding(
        key: FileKey,
        wait: std::time::Duration,
    ) -> (
        std::thread::JoinHandle<std::io::Result<std::process::ExitStatus>>,
        i32,
        Snapshot,
    ) {
        use std::os::unix::process::CommandExt;
        let me = std::process::id() as i32;
        let copy = std::thread::spawn(move || {
            let mut copy = std::process::Command::new("true");
            // SAFETY: the child only sleeps (a system call) before it execs.
            unsafe {
                copy.pre_exec(move || {
                    std::thread::sleep(wait);
                    Ok(())
                });
            }
            copy.status()
        });
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            let snap = Snapshot::take();
            if let Some(&pid) = snap.fd_table().openers(key).iter().find(|&&p| p != me) {
                return (copy, pid, snap);
            }
            assert!(std::time::Instant::now() < deadline, "no copy held it");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn what_this_process_had_open_only_while_the_table_was_read_is_not_held() {
        let me = std::process::id() as i32;
        let (_dir, path, key) = empty_file("job.lock");

        // Read by this process while the table is read, closed before it is judged.
        let reading = std::fs::File::open(&path).unwrap();
        let snap = Snapshot::take();
        assert!(snap.fd_table().openers(key).contains(&me));
        drop(reading);
        assert_eq!(opener_pids(&snap, key), Vec::<i32>::new());

        // Still open when judged: this process holds it.
        let held = std::fs::File::open(&path).unwrap();
        let snap = Snapshot::take();
        assert_eq!(opener_pids(&snap, key), [me]);

        // A copy of this process that has not exec'd yet holds its descriptors. One that
        // execs well within COPY_WAIT (this one waits 300 ms, and its spawn waits for that)
        // holds nothing of them then.
        let (copy, _, snap) = copy_holding(key, std::time::Duration::from_millis(300));
        assert_eq!(opener_pids(&snap, key), [me]);
        copy.join().unwrap().unwrap();

        // One that keeps them for longer (a worker forked without exec) holds the file.
        let (copy, pid, snap) = copy_holding(key, COPY_WAIT * 10);
        let started = std::time::Instant::now();
        let mut seen = opener_pids(&snap, key);
        seen.sort_unstable();
        let mut both = [me, pid];
        both.sort_unstable();
        assert_eq!(seen, both);
        assert!(started.elapsed() >= COPY_WAIT);
        drop(held);
        // Known as a holder now: asked once more, not waited for again.
        let started = std::time::Instant::now();
        assert_eq!(opener_pids(&snap, key), [pid]);
        assert!(started.elapsed() < COPY_WAIT);
        rustix::process::kill_process(
            rustix::process::Pid::from_raw(pid).unwrap(),
            rustix::process::Signal::KILL,
        )
        .unwrap();
        copy.join().unwrap().unwrap();
        assert_eq!(opener_pids(&snap, key), Vec::<i32>::new());

        // A child that runs a program of its own with the file open holds it.
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .stdin(std::fs::File::open(&path).unwrap())
            .spawn()
            .unwrap();
        let pid = child.id() as i32;
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let seen = loop {
            let seen = opener_pids(&Snapshot::take(), key);
            if seen.contains(&pid) || std::time::Instant::now() > deadline {
                break seen;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        };
        child.kill().unwrap();
        child.wait().unwrap();
        assert_eq!(seen, [pid]);
    }

    /// A process that had the file open when the table was read and has exited since, after
    /// forking a child that inherited it (a daemon's parent): the child holds it, though the
    /// table never listed it.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_file_handed_to_a_child_forked_after_the_table_was_read_is_held_by_it() {
        let me = std::process::id() as i32;
        let (dir, path, key) = empty_file("daemon.pid");
        let (ready, go) = (dir.path().join("ready"), dir.path().join("go"));
        // Not our child: the subshell is left to init once the shell that started it exits.
        let status = std::process::Command::new("sh")
            .args([
                "-c",
                // It waits (with the file closed) at most 20 s for the go.
                r#"(exec 3<"$1"; : >"$2"; i=0
                   while [ ! -e "$3" ] && [ $i -lt 2000 ]; do sleep 0.01 3<&-; i=$((i+1)); done
                   sleep 60 &) &"#,
                "sh",
            ])
            .args([&path, &ready, &go])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .unwrap();
        assert!(status.success());
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !ready.exists() {
            assert!(
                std::time::Instant::now() < deadline,
                "the parent never opened it"
            );
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        let snap = Snapshot::take();
        let listed: Vec<i32> = snap.fd_table().openers(key).to_vec();
        let [parent] = listed[..] else {
            panic!("the table lists {listed:?}");
        };
        assert_ne!(parent, me);
        std::fs::write(&go, "").unwrap();
        while std::path::Path::new(&format!("/proc/{parent}")).exists() {
            assert!(
                std::time::Instant::now() < deadline,
                "the parent never exited"
            );
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        let seen = opener_pids(&snap, key);
        let heirs: Vec<i32> = seen.iter().copied().filter(|&p| p != parent).collect();
        for &p in &heirs {
            let _ = rustix::process::kill_process(
                rustix::process::Pid::from_raw(p).unwrap(),
                rustix::process::Signal::KILL,
            );
        }
        assert_eq!(seen.len(), 1, "{seen:?}");
        assert_eq!(heirs.len(), 1, "only the exited parent: {seen:?}");
        let comm = std::fs::read_to_string(format!("/proc/{}/comm", heirs[0])).unwrap_or_default();
        assert!(comm.is_empty() || comm.trim() == "sleep", "{comm}");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn the_census_lists_programs_with_their_names_and_no_kernel_thread() {
        let me = std::process::id() as i32;
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .current_dir("/")
            .spawn()
            .unwrap();
        let pid = child.id() as i32;
        // Started early or read on first use, the census is the same kind of list.
        let early = Ahead::start().take();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let procs = loop {
            let procs = list_processes();
            // Its name changes with the exec before its command line does.
            if procs.iter().any(|p| p.pid == pid && p.cmd.len() == 2) {
                break procs;
            }
            assert!(std::time::Instant::now() < deadline, "sleep never listed");
            std::thread::sleep(std::time::Duration::from_millis(10));
        };
        child.kill().unwrap();
        child.wait().unwrap();
        let sleep = procs.iter().find(|p| p.pid == pid).unwrap();
        assert_eq!(sleep.name, "sleep");
        assert_eq!(sleep.cmd, ["sleep", "30"]);
        assert_eq!(sleep.cwd.as_deref(), Some(Path::new("/")));
        assert_eq!(
            sleep.exe.as_ref().and_then(|e| e.file_name()),
            Some(std::ffi::OsStr::new("sleep"))
        );
        let ours = procs.iter().find(|p| p.pid == me).expect("this process");
        assert_eq!(ours.exe, std::env::current_exe().ok());
        // kthreadd (PID 2) is seen in the initial PID namespace only.
        assert!(!procs.iter().any(|p| p.name == "kthreadd"));
        assert!(early.processes().iter().any(|p| p.pid == me));
        let held = tempfile::tempfile().unwrap();
        let key = FileKey::of(&held.metadata().unwrap());
        assert!(Ahead::start().take().fd_table().openers(key).contains(&me));
        assert!(early.kernel_locks().available());
    }

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
