use super::*;

#[test]
fn a_container_root_is_one_seen_through_a_process_root() {
    assert!(in_container(Path::new("/proc/4242/root/tmp")));
    assert!(in_container(Path::new("/proc/4242/root")));
    assert!(!in_container(Path::new("/proc/self/root/tmp")));
    assert!(!in_container(Path::new("/proc/4242/cwd")));
    assert!(!in_container(Path::new("/tmp/proc/4242/root")));
}

/// What judging asks about the directory of a lock found by the walk: the walk's own path,
/// recorded as canonical only when the root's path is its canonical form.
fn recorded_after_walking(root: &Path, lock_dir: &Path) -> Option<PathBuf> {
    let config = crate::config::Settings::embedded().scan;
    let snap = Snapshot::take();
    let cancel = AtomicBool::new(false);
    let sink = |_: ScanEvent| {};
    let roots = [Root {
        path: root.to_path_buf(),
        max_depth: None,
    }];
    Walk::new(&config, &config.matcher, &snap, &cancel, &sink, &roots).run();
    // Recorded or not, `of` answers for the directory; a recorded one is not looked at
    // again, so one made to be something else since answers as walked.
    std::fs::remove_dir_all(lock_dir).unwrap();
    snap.canonical_dirs().of(lock_dir)
}

/// A tree with a Rails pid file (found by its name), a file of no lock's name that this
/// process holds a kernel lock on (found by its inode), and directories around them.
struct Tree {
    _dir: tempfile::TempDir,
    root: PathBuf,
    pid_file: PathBuf,
    held: PathBuf,
    _lock: std::fs::File,
}

impl Tree {
    fn roots(&self) -> [Root; 1] {
        [Root {
            path: self.root.clone(),
            max_depth: None,
        }]
    }
}

fn tree() -> Tree {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap().join("tree");
    for d in ["a/b/c", "a/d", "e/f/g/h", "i"] {
        std::fs::create_dir_all(root.join(d)).unwrap();
        std::fs::write(root.join(d).join("notes.txt"), "text").unwrap();
    }
    let pid_file = root.join("a/b/c/tmp/pids/server.pid");
    std::fs::create_dir_all(pid_file.parent().unwrap()).unwrap();
    std::fs::write(&pid_file, "999999999\n").unwrap();
    for i in 0..6 {
        std::fs::write(root.join(format!("a/d/job{i}.lock")), "").unwrap();
        std::fs::write(root.join(format!("e/f/data{i}.bin")), "").unwrap();
    }
    let held = root.join("e/f/spool.state");
    std::fs::write(&held, "queued: 3\n").unwrap();
    let lock = std::fs::File::open(&held).unwrap();
    rustix::fs::flock(&lock, rustix::fs::FlockOperation::NonBlockingLockExclusive).unwrap();
    Tree {
        _dir: dir,
        root,
        pid_file,
        held,
        _lock: lock,
    }
}

/// Each finding of a walk, by path, with its dialect and verdict.
type Findings = std::collections::BTreeMap<PathBuf, (String, crate::Verdict)>;

fn finding(e: &ScanEvent) -> Option<(PathBuf, (String, crate::Verdict))> {
    match e {
        ScanEvent::Found(f) => Some((
            f.path.clone(),
            (f.dialect.to_string(), f.judgement.verdict()),
        )),
        _ => None,
    }
}

/// A snapshot whose parts are all still being read until `open()` is called, as the
/// command line's are while `/proc/locks` waits for the kernel.
fn gated_snapshot() -> (Snapshot, impl Fn()) {
    let gate = Arc::new((Mutex::new(false), Condvar::new()));
    let waiting = gate.clone();
    let snap = crate::probe::snapshot::Ahead::start_when(move || {
        let (open, cv) = &*waiting;
        let mut o = open.lock().unwrap();
        while !*o {
            o = cv.wait(o).unwrap();
        }
    })
    .take();
    let open = move || {
        *gate.0.lock().unwrap() = true;
        gate.1.notify_all();
    };
    (snap, open)
}

#[test]
fn the_walk_reads_on_while_the_evidence_is_read_and_judges_the_same() {
    let t = tree();
    let config = crate::config::Settings::embedded().scan;
    let (roots, cancel) = (t.roots(), AtomicBool::new(false));

    // With the evidence read before the walk.
    let ready = Snapshot::take();
    let found = Mutex::new(Findings::new());
    let sink = |e: ScanEvent| found.lock().unwrap().extend(finding(&e));
    let counts = Walk::new(&config, &config.matcher, &ready, &cancel, &sink, &roots).run();
    let expected = found.into_inner().unwrap();
    assert_eq!(expected[&t.pid_file].0, "rails", "{expected:?}");
    assert_eq!(expected[&t.held], ("flock".into(), crate::Verdict::Live));

    // With every part still being read: the whole tree is read first (the evidence is
    // let through only once a progress report counts every entry), nothing is judged
    // before, and every verdict is then the same.
    let (snap, open) = gated_snapshot();
    let opened = AtomicBool::new(false);
    let early = AtomicU64::new(0);
    let found = Mutex::new(Findings::new());
    let sink = |e: ScanEvent| {
        if let ScanEvent::Progress { entries, .. } = e
            && entries == counts.entries
            && !opened.swap(true, Ordering::SeqCst)
        {
            open();
        }
        if let Some(f) = finding(&e) {
            if !opened.load(Ordering::SeqCst) {
                early.fetch_add(1, Ordering::SeqCst);
            }
            found.lock().unwrap().insert(f.0, f.1);
        }
    };
    // Should the walk wait for the evidence instead, the evidence is let through in the
    // end, and the test fails.
    let stuck = AtomicBool::new(false);
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    std::thread::scope(|s| {
        let (stuck, opened, open) = (&stuck, &opened, &open);
        s.spawn(move || {
            if done_rx
                .recv_timeout(std::time::Duration::from_secs(60))
                .is_err()
            {
                stuck.store(true, Ordering::SeqCst);
                opened.store(true, Ordering::SeqCst);
                open();
            }
        });
        let gated = Walk::new(&config, &config.matcher, &snap, &cancel, &sink, &roots).run();
        let _ = done_tx.send(());
        assert_eq!(gated.entries, counts.entries);
    });
    assert!(
        !stuck.load(Ordering::SeqCst),
        "the walk waited for the evidence"
    );
    assert_eq!(
        early.load(Ordering::SeqCst),
        0,
        "judged before the evidence"
    );
    assert_eq!(found.into_inner().unwrap(), expected);
}

#[test]
fn beyond_its_budget_the_walk_judges_as_it_finds() {
    let t = tree();
    let config = crate::config::Settings::embedded().scan;
    let (roots, cancel) = (t.roots(), AtomicBool::new(false));
    let walk = |snap: &Snapshot, budget: Option<Budget>| {
        let found = Mutex::new(Findings::new());
        let sink = |e: ScanEvent| found.lock().unwrap().extend(finding(&e));
        let mut walk = Walk::new(&config, &config.matcher, snap, &cancel, &sink, &roots);
        if let Some(b) = budget {
            walk.budget = b;
        }
        walk.run();
        found.into_inner().unwrap()
    };
    let expected = walk(&Snapshot::take(), None);
    assert_eq!(expected[&t.held], ("flock".into(), crate::Verdict::Live));
    assert!(expected.len() >= 8, "{expected:?}");
    // No directory kept open; then room for a few candidates and inodes only, the rest of
    // a directory judged as it is read; then no room at all: the same findings.
    for (dirs, items, late) in [(0, 8192, 100_000), (1000, 2, 3), (1000, 0, 0)] {
        let (snap, open) = gated_snapshot();
        let found = std::thread::scope(|s| {
            s.spawn(|| {
                std::thread::sleep(std::time::Duration::from_millis(100));
                open();
            });
            walk(&snap, Some(Budget { dirs, items, late }))
        });
        assert_eq!(found, expected, "budget {dirs} / {items} / {late}");
    }
}

#[cfg(target_os = "linux")]
#[test]
fn roots_on_local_mounts_are_reached_without_a_task() {
    let t = tree();
    std::os::unix::fs::symlink(&t.root, t.root.with_file_name("link")).unwrap();
    let config = crate::config::Settings::embedded().scan;
    let snap = Snapshot::take();
    let cancel = AtomicBool::new(false);
    let found = Mutex::new(Findings::new());
    let sink = |e: ScanEvent| found.lock().unwrap().extend(finding(&e));
    let root = |path: PathBuf| Root {
        path,
        max_depth: None,
    };
    // A directory, a symlink to it (walked as itself: a root that is a symlink is
    // examined, not followed) and a file of its.
    let roots = [
        root(t.root.join("a")),
        root(t.root.with_file_name("link")),
        root(t.pid_file.clone()),
    ];
    let before = fs::tasks_started_here();
    let counts = Walk::new(&config, &config.matcher, &snap, &cancel, &sink, &roots).run();
    assert_eq!(fs::tasks_started_here(), before, "a task was started");
    assert_eq!(counts.roots_read, 3);
    let found = found.into_inner().unwrap();
    assert_eq!(found[&t.pid_file].0, "rails", "{found:?}");
    assert!(
        found.contains_key(&t.root.join("a/d/job0.lock")),
        "{found:?}"
    );
}

#[test]
fn directories_walked_from_a_canonical_root_are_recorded_as_canonical() {
    let t = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(t.path()).unwrap();
    let dir = base.join("tree/app/tmp/pids");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("server.pid"), "999999999\n").unwrap();
    assert_eq!(
        recorded_after_walking(&base.join("tree"), &dir),
        Some(dir.clone())
    );

    // The same tree from a root with a symlink on its way: its paths are not canonical,
    // so nothing is recorded (`of` finds the directory gone).
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("server.pid"), "999999999\n").unwrap();
    std::os::unix::fs::symlink(base.join("tree"), base.join("link")).unwrap();
    let through_link = base.join("link/app/tmp/pids");
    assert_eq!(
        recorded_after_walking(&base.join("link/app"), &through_link),
        None
    );
}
