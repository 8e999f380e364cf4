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

    /// The processes `pick` takes of a census taken now, when `lock` has been seen (its
    /// status read before this is asked), for the writer `what`: whoever made the lock is
    /// among them or gone, whenever the census of [`Snapshot::processes`] was taken (it may
    /// predate the lock). Asked once per lock and writer; `None`: no process list can be read.
    pub fn census_after(
        &self,
        lock: &Path,
        what: &str,
        pick: impl Fn(&ProcSummary) -> bool,
    ) -> Option<Vec<ProcSummary>> {
        self.answer(
            |e| &mut e.late_census,
            || format!("{what} {}", evidence::path_key(lock)),
            || {
                let all = list_processes();
                (!all.is_empty()).then(|| all.into_iter().filter(|p| pick(p)).collect())
            },
            || None,
        )
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
mod tests;
