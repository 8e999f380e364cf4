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
    let (other, ready) =
        start(
            Command::new("flock")
                .arg(&plain)
                .args(["sh", "-c", "echo ready && exec sleep 600"]),
        );
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
