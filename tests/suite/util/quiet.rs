//! A quiet host to judge on. The evidence a verdict rests on is host-wide: every process's open
//! files and kernel locks, every process's name, every PID namespace and container. The tests
//! run in parallel in one process (and a second copy of the suite may run beside it), so what
//! one test holds would be evidence in another's verdict. Three ways it could leak in, and
//! how each is kept out:
//!
//! - **Copies of this process.** A child that another test thread forks holds a copy of every
//!   descriptor this process had open at that instant (a fixture being written, a lock file a
//!   test holds, a listening socket) until it execs: the fixture is "open in" that child, its
//!   flock or OFD lock outlives the test's own descriptor. [`settle`] waits until no such copy
//!   is left; a copy made after it can only hold what this process still has open. Every
//!   [`snapshot`] and every run of the binary ([`super::run_bounded`]) settles first.
//! - **Host-wide facts** that some tests make true for a while and others need false: a
//!   container whose lock places a scan walks, an office program or a package manager
//!   running, another user's processes holding more than a scan reads of them, a PID
//!   namespace made while another test judges a record naming its own ended one ([`Fact`]).
//!   Each is a reader-writer lock shared by every copy of the suite on this machine (`flock`
//!   on files in [`FACTS_DIR`]): the tests that make a fact and the tests that need it absent
//!   never overlap. Judging always needs [`Fact::OverBounds`] absent: [`snapshot`] and the
//!   binary's runs hold that side for as long as they judge. A PID namespace that shares
//!   this host's root and mounts (`unshare --pid`, a container until it has pivoted into its
//!   root) is no such fact for judging: it is tied to no test's fixture, so its PIDs never
//!   change a verdict, and judging runs beside it.
//! - **A snapshot older than its fixture.** The kernel-lock table is read when a snapshot is
//!   taken, the open files when it first needs them: a file made after that may have the
//!   inode number of another test's file that was locked or open then. [`Snap`] keeps when
//!   it was taken, and the judging helpers refuse a fixture born after it.
//!
//! A test takes the exclusive side of a fact before anything that takes its other side
//! (acquiring the exclusive side while the same thread holds the other would wait for
//! itself, and panics instead), and a test that needs two facts takes [`Fact::Container`]
//! (a [`super::podman::Podman`] takes it) before [`Fact::PidNamespace`].

use std::cell::RefCell;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use locksmith::probe::{PidState, Snapshot};

/// Where the facts' lock files live: one place for every copy of the suite on this machine,
/// whatever its target directory or `TMPDIR`.
pub const FACTS_DIR: &str = "/tmp/locksmith-suite-facts";

/// How long taking a fact may wait (the other side's tests may run for minutes on a loaded
/// machine) before the test fails.
const FACT_WAIT: Duration = Duration::from_secs(900);

/// A host-wide fact some tests make and others need absent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fact {
    /// A PID namespace made with `unshare --pid`. The kernel hands a new namespace the inode
    /// number of one that just ended, and a record naming the ended one would name the new
    /// one: the tests that judge such a record (a lock held in a namespace of their own,
    /// then killed) make theirs alone, and so every maker does. (Containers' namespaces are
    /// kept from them by [`Fact::Container`].) Judging needs none absent: a namespace that
    /// shares this host's root and mounts is tied to no fixture, and its PIDs change no
    /// verdict.
    PidNamespace,
    /// A container or sandbox with a root of its own: a scan of the configured roots walks
    /// (and reclaims in) its lock places. The tests that scan so run with no other test's.
    Container,
    /// An office program (`soffice.bin`, ...): the LibreOffice dialects call a lock live while
    /// one runs for its user.
    Office,
    /// A package manager (pacman and its front ends, rpm): their databases' locks are
    /// `unknown` while one runs.
    PackageManager,
    /// An X or ICE authority tool (`xauth`, `iceauth`, a session manager): an authority
    /// file's lock pair is live while one runs.
    AuthorityTool,
    /// A version manager's rehash (`rbenv-rehash`, `pyenv-rehash`, ...): a rehash lock is live
    /// while one runs whose root cannot be read, as when it is exiting.
    Rehash,
    /// Another user's processes holding more descriptors than a scan reads of them
    /// (`probe::bounds`): while they run, no lock is proven stale by nobody having it open.
    /// Their maker runs alone; every judging needs none.
    OverBounds,
}

/// Which side of a fact a test takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    /// The test makes the fact true while it holds the guard.
    Makes,
    /// The test needs the fact false (but for what its own thread makes) while it holds it.
    NeedsNone,
}

impl Fact {
    fn name(self) -> &'static str {
        match self {
            Fact::PidNamespace => "pid-namespace",
            Fact::Container => "container",
            Fact::Office => "office",
            Fact::PackageManager => "package-manager",
            Fact::AuthorityTool => "authority-tool",
            Fact::Rehash => "rehash",
            Fact::OverBounds => "over-bounds",
        }
    }

    /// The side that runs alone; the other side's holders share.
    fn exclusive(self) -> Side {
        match self {
            // Few tests make one. A namespace's maker runs alone: a second one may be handed
            // the number of the first once it ends. A load over the bounds is seen by every
            // verdict, which needs none.
            Fact::PidNamespace | Fact::OverBounds => Side::Makes,
            // Many tests run containers, office stand-ins and package managers side by side;
            // the few that need none wait for all of them.
            Fact::Container
            | Fact::Office
            | Fact::PackageManager
            | Fact::AuthorityTool
            | Fact::Rehash => Side::NeedsNone,
        }
    }

    /// The fact a program of this name makes by running (the names the dialects look for).
    pub fn of_program(name: &str) -> Option<Fact> {
        let office = locksmith::dialect::libreoffice::OFFICE;
        if name.starts_with("soffice") || office.contains(&name) {
            return Some(Fact::Office);
        }
        let package_managers = ["rpm", "dnf", "yum", "zypper"];
        if locksmith::dialect::pacman::FRONT_ENDS.contains(&name)
            || package_managers.contains(&name)
        {
            return Some(Fact::PackageManager);
        }
        use locksmith::dialect::xauth::{ICE_WRITERS, X_WRITERS};
        use locksmith::judge::claims::Writers;
        if [X_WRITERS, ICE_WRITERS]
            .map(Writers::named)
            .iter()
            .any(|w| w.hit(name))
        {
            return Some(Fact::AuthorityTool);
        }
        let rehash = ["rbenv", "pyenv", "nodenv", "goenv", "plenv"];
        if rehash.iter().any(|t| name == format!("{t}-rehash")) {
            return Some(Fact::Rehash);
        }
        None
    }
}

thread_local! {
    /// The facts this thread holds: whether exclusively, how many guards, and the locked file.
    static HELD: RefCell<Vec<Held>> = const { RefCell::new(Vec::new()) };
}

struct Held {
    fact: Fact,
    exclusive: bool,
    guards: usize,
    _file: File,
}

/// One side of a fact, held until dropped (on the thread that took it).
#[must_use = "the fact is held only while the guard lives"]
pub struct Hold {
    fact: Fact,
    /// Which of this thread's entries the guard counts in.
    exclusive: bool,
}

impl Drop for Hold {
    fn drop(&mut self) {
        HELD.with(|h| {
            let mut h = h.borrow_mut();
            if let Some(i) = h
                .iter()
                .position(|e| e.fact == self.fact && e.exclusive == self.exclusive)
            {
                h[i].guards -= 1;
                if h[i].guards == 0 {
                    h.remove(i); // closes the file: the lock is released
                }
            }
        });
    }
}

/// Makes `fact` true for as long as the guard lives (this test starts such a process).
pub fn making(fact: Fact) -> Hold {
    hold(fact, Side::Makes)
}

/// Needs `fact` false, but for what this thread makes itself, for as long as the guard lives.
pub fn absent(fact: Fact) -> Hold {
    hold(fact, Side::NeedsNone)
}

/// Whether no program that makes `fact` runs on this host (call it holding
/// [`absent`]`(fact)`, so that none of the suite's own does); otherwise skips the test, or
/// the part that needs none, naming them (a failure under CI, where nothing else runs them).
pub fn none_running(fact: Fact) -> bool {
    let snap = snapshot();
    let base = |s: &str| s.rsplit('/').next().unwrap_or(s).to_string();
    let running: Vec<String> = snap
        .processes()
        .iter()
        .filter(|p| {
            let mut names = vec![p.name.clone()];
            names.extend(p.exe.as_ref().map(|e| base(&e.to_string_lossy())));
            names.extend(p.cmd.first().map(|a| base(a)));
            names.iter().any(|n| Fact::of_program(n) == Some(fact))
        })
        // As the judge counts writers: a zombie has exited.
        .filter(|p| matches!(snap.pid(p.pid), PidState::Alive(_) | PidState::ExistsOpaque))
        .map(|p| format!("{} ({})", p.pid, p.name))
        .collect();
    super::require_that(
        running.is_empty(),
        format!(
            "{fact:?}: a program no test of this suite started runs on this host: {}",
            running.join(", ")
        ),
    )
}

/// What every judging holds: no other user's processes hold more than a scan reads of them.
/// (Not: no other test's PID namespace. One that shares this host's root and mounts is tied
/// to no fixture, and changes no verdict.)
pub struct Judging {
    _no_load: Hold,
}

/// See [`Judging`].
pub fn judging() -> Judging {
    Judging {
        _no_load: absent(Fact::OverBounds),
    }
}

fn hold(fact: Fact, side: Side) -> Hold {
    let exclusive = side == fact.exclusive();
    HELD.with(|h| {
        let mut h = h.borrow_mut();
        // Held exclusively already: that covers either side. Shared already, asking to share:
        // the same lock (a second flock would queue behind a writer waiting for the first).
        let mine = |e: &Held| e.fact == fact && (e.exclusive || !exclusive);
        if let Some(e) = h.iter_mut().find(|e| mine(e)) {
            e.guards += 1;
            return Hold {
                fact,
                exclusive: e.exclusive,
            };
        }
        assert!(
            !h.iter().any(|e| e.fact == fact),
            "{fact:?}: this thread holds the side others share and asks for the exclusive \
             one, which would wait for itself: take the exclusive side first"
        );
        h.push(Held {
            fact,
            exclusive,
            guards: 1,
            _file: lock(fact, exclusive),
        });
        Hold { fact, exclusive }
    })
}

fn open_fact_file(name: &str) -> File {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let dir = Path::new(FACTS_DIR);
    if std::fs::create_dir(dir).is_ok() {
        // Every user's copy of the suite takes these locks.
        let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o1777));
    }
    let path = dir.join(name);
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o666)
        .open(&path)
        .or_else(|_| File::open(&path))
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A reader-writer lock with a turnstile: every taker passes the gate (held by a writer while
/// it waits), so a writer is not starved by readers that keep overlapping.
fn lock(fact: Fact, exclusive: bool) -> File {
    // Not named `*.lock`: a scan of this machine's `/tmp` need not report them when free.
    let gate = open_fact_file(&format!("{}.gate", fact.name()));
    let main = open_fact_file(fact.name());
    use rustix::fs::FlockOperation as Op;
    let wait = |what: &str, file: &File, op: Op| {
        let deadline = Instant::now() + FACT_WAIT;
        loop {
            match rustix::fs::flock(file, op) {
                Ok(()) => return,
                Err(rustix::io::Errno::WOULDBLOCK) | Err(rustix::io::Errno::INTR) => {}
                Err(e) => panic!("{fact:?}, {what}: {e}"),
            }
            assert!(
                Instant::now() < deadline,
                "{fact:?} was held by other tests for over {FACT_WAIT:?} ({what})"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    };
    wait("its gate", &gate, Op::NonBlockingLockExclusive);
    if exclusive {
        wait("its lock", &main, Op::NonBlockingLockExclusive);
    } else {
        wait("its lock", &main, Op::NonBlockingLockShared);
    }
    drop(gate);
    main
}

/// Waits until no child of this process is a copy of it that has not yet exec'd (see the
/// module's documentation): such a copy holds whatever this process had open when it was
/// forked.
pub fn settle() {
    locksmith_test_support::record_time();
    start_fork_storm();
    let deadline = Instant::now() + super::DEADLINE;
    loop {
        let copies = unexeced_copies();
        if copies.is_empty() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "copies of this test process did not exec within {:?}: {copies:?}",
            super::DEADLINE
        );
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// With `LOCKSMITH_TEST_FORK_STORM` set (`tests/steady.sh --storm`), a thread of this process
/// forks children that wait 20 ms before they exec, one after another, from the first
/// judging on: every descriptor of this process is held by a copy most of the time, as a
/// busy test process does now and then. The suite must pass all the same.
fn start_fork_storm() {
    static STORM: std::sync::Once = std::sync::Once::new();
    if std::env::var_os("LOCKSMITH_TEST_FORK_STORM").is_none() {
        return;
    }
    STORM.call_once(|| {
        std::thread::spawn(|| {
            use std::os::unix::process::CommandExt;
            loop {
                let mut copy = std::process::Command::new("true");
                // SAFETY: the child only sleeps (a system call) before it execs.
                unsafe {
                    copy.pre_exec(|| {
                        std::thread::sleep(Duration::from_millis(20));
                        Ok(())
                    });
                }
                let _ = copy.status();
                std::thread::sleep(Duration::from_millis(10));
            }
        });
    });
}

/// Children of this process that still run its program with its command line: forked, not
/// yet exec'd (a `posix_spawn` child shares our memory until it execs, a forked one has a
/// copy of it; either way `/proc` shows our executable and our command line).
fn unexeced_copies() -> Vec<i32> {
    use std::os::unix::fs::MetadataExt;
    let id = |p: &str| std::fs::metadata(p).ok().map(|m| (m.dev(), m.ino()));
    let my_exe = id("/proc/self/exe");
    let my_cmdline = std::fs::read("/proc/self/cmdline").ok();
    let mut out = Vec::new();
    for task in std::fs::read_dir("/proc/self/task")
        .into_iter()
        .flatten()
        .flatten()
    {
        let children = std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
        for pid in children
            .split_whitespace()
            .filter_map(|p| p.parse::<i32>().ok())
        {
            let exe = id(&format!("/proc/{pid}/exe"));
            if exe.is_some()
                && exe == my_exe
                && std::fs::read(format!("/proc/{pid}/cmdline")).ok() == my_cmdline
            {
                out.push(pid);
            }
        }
    }
    out
}

/// A snapshot to judge a test's fixtures with: taken once no copy of this process holds a
/// stale descriptor, and holding [`judging`] for as long as it lives (its process list and
/// container inventory are read when first needed).
pub struct Snap {
    snap: Snapshot,
    /// Just before the snapshot was taken.
    taken: SystemTime,
    _judging: Judging,
}

impl std::ops::Deref for Snap {
    type Target = Snapshot;
    fn deref(&self) -> &Snapshot {
        &self.snap
    }
}

impl std::ops::DerefMut for Snap {
    fn deref_mut(&mut self) -> &mut Snapshot {
        &mut self.snap
    }
}

impl Snap {
    /// Fails the test when `path` was made after the snapshot was taken: its evidence would
    /// be of the files that were there before (see the module's documentation). Files
    /// without a birth time (some network and FUSE file systems) are not checked.
    pub fn assert_younger_than(&self, path: &Path) {
        let Ok(born) = std::fs::symlink_metadata(path).and_then(|m| m.created()) else {
            return;
        };
        assert!(
            born <= self.taken,
            "{} was made after the snapshot that judges it was taken: take the snapshot \
             once the fixture exists",
            path.display()
        );
    }
}

/// A snapshot of this host for judging (see [`Snap`]).
pub fn snapshot() -> Snap {
    let judging = judging();
    settle();
    let taken = SystemTime::now();
    Snap {
        // Keeping every answer it gives: its evidence, to be judged again changed (every
        // judgement of the suite is, see `perturb`).
        snap: Snapshot::take().recording(),
        taken,
        _judging: judging,
    }
}

/// [`snapshot`]: it keeps every answer it gives (its evidence, to be judged again changed).
pub fn recording() -> Snap {
    snapshot()
}

/// The suite's sources, for the check below.
fn suite_sources() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/suite");
    let mut out = Vec::new();
    let mut dirs = vec![root];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    out
}

/// Every snapshot the suite judges with is a [`Snap`]: no test takes one of its own, and
/// every path is judged through `judging::try_judge` (which checks the snapshot's age).
#[test]
fn the_suite_takes_snapshots_only_here() {
    let this = Path::new(file!()).file_name().unwrap();
    let needles = [
        concat!("Snapshot::", "take("),
        concat!("Snapshot::", "with_", "kernel_locks("),
        concat!("scan::", "judge_path("),
    ];
    let mut offenders = Vec::new();
    for path in suite_sources() {
        let name = path.file_name();
        if name == Some(this) || name == Some("judging.rs".as_ref()) {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        for (i, line) in text.lines().enumerate() {
            if needles.iter().any(|n| line.contains(n)) {
                offenders.push(format!("{}:{}: {}", path.display(), i + 1, line.trim()));
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "take snapshots with util::snapshot() and judge with util::judging (a quiet host, \
         see util/quiet.rs):\n{}",
        offenders.join("\n")
    );
}

/// The hazard [`settle`] is for, and that it ends it: a child another thread forks while this
/// process has a fixture open holds it until it execs, after this process closed it. A
/// snapshot gives such a copy time to exec (this one does within the time it is given, and
/// holds nothing of it then): no opener, before and once settled.
#[test]
fn settle_waits_out_a_forked_copy_that_holds_a_fixture() {
    use locksmith::probe::FileKey;
    use std::os::unix::process::CommandExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fixture.lock");
    let file = File::create(&path).unwrap();
    let key = FileKey::of(&file.metadata().unwrap());
    // Its copy is known by its name: a forked child is named after the thread that forked it.
    let name = "fixture-forker";
    let forker = std::thread::Builder::new().name(name.into()).spawn(|| {
        let mut c = std::process::Command::new("true");
        // SAFETY: the child only sleeps (a system call) before it execs.
        unsafe {
            c.pre_exec(|| {
                std::thread::sleep(Duration::from_millis(1500));
                Ok(())
            });
        }
        c.status().unwrap()
    });
    let forker = forker.unwrap();
    let copy = super::wait_for("the forked copy", || {
        unexeced_copies()
            .into_iter()
            .find(|&pid| super::comm(pid) == name)
    });
    drop(file);
    let holds = locksmith::probe::open_files::files_of(copy).is_some_and(|f| f.contains(&key));
    assert!(holds, "the copy {copy} does not hold the fixture");
    let seen = Snapshot::take().openers(key);
    assert!(
        seen.is_empty(),
        "the copy {copy} of this process is an opener of the fixture it closed: {seen:?}"
    );
    settle();
    assert!(snapshot().openers(key).is_empty());
    assert!(forker.join().unwrap().success());
}

/// The two sides of a fact never overlap, and a thread that holds the shared side cannot ask
/// for the exclusive one (it would wait for itself).
#[test]
fn a_facts_sides_exclude_each_other() {
    let (held, release) = (std::sync::mpsc::channel(), std::sync::mpsc::channel::<()>());
    let maker = std::thread::spawn(move || {
        let _office = making(Fact::Office);
        held.0.send(()).unwrap();
        release.1.recv().unwrap();
        Instant::now()
    });
    held.1.recv().unwrap();
    let absent_side = std::thread::spawn(|| {
        let _none = absent(Fact::Office);
        Instant::now()
    });
    std::thread::sleep(Duration::from_millis(300));
    assert!(!absent_side.is_finished(), "taken while the maker held it");
    release.0.send(()).unwrap();
    let released = maker.join().unwrap();
    assert!(absent_side.join().unwrap() >= released);

    let _office = making(Fact::Office);
    let nested = std::panic::catch_unwind(|| absent(Fact::Office));
    assert!(
        nested.is_err(),
        "the exclusive side asked for under the shared one"
    );
}
