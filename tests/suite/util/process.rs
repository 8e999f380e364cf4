//! Processes on a leash: children in process groups of their own (the whole group killed and
//! reaped on every path), waiting with deadlines, and the facts tests read from `/proc`.

use std::borrow::BorrowMut;
use std::ffi::OsStr;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use locksmith::probe::FileKey;

use super::DEADLINE;
use super::quiet::{self, Fact, Hold, snapshot};

/// Polls `f` until it returns `Some`, failing the test after [`DEADLINE`].
pub fn wait_for<T>(what: &str, f: impl FnMut() -> Option<T>) -> T {
    wait_within(DEADLINE.as_secs(), what, f)
}

/// Polls `ok` until it holds, failing the test after [`DEADLINE`].
pub fn wait_until(what: &str, mut ok: impl FnMut() -> bool) {
    wait_for(what, || ok().then_some(()))
}

/// Polls `f` until it returns `Some`, failing the test after `secs` seconds. Polls often at
/// first (a few milliseconds) and less often as the wait goes on.
pub fn wait_within<T>(secs: u64, what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(secs);
    let mut pause = Duration::from_millis(5);
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(50));
    }
}

/// A child started as the leader of its own process group; the whole group (the child and
/// everything it started, e.g. git and its editor) is SIGKILLed and the leader reaped when
/// this is dropped, on every path (including a failing assertion).
pub struct Group {
    pub child: Child,
    reaped: bool,
    /// The host-wide fact the group makes (an office program, a package manager), held
    /// until it is dead.
    _fact: Option<Hold>,
}

impl Group {
    /// Spawns `cmd` as the leader of a new process group. A binary copied a moment ago may
    /// still be open for writing in a child another test thread is forking: ETXTBSY is retried
    /// briefly.
    pub fn spawn(mut cmd: impl BorrowMut<Command>) -> Group {
        let cmd = cmd.borrow_mut();
        cmd.process_group(0);
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            match cmd.spawn() {
                Ok(child) => {
                    return Group {
                        child,
                        reaped: false,
                        _fact: None,
                    };
                }
                Err(e) if e.raw_os_error() == Some(libc::ETXTBSY) && Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(20))
                }
                Err(e) => panic!("spawn {cmd:?}: {e}"),
            }
        }
    }

    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// The live (non-zombie) members of the group: (pid, comm).
    pub fn members(&self) -> Vec<(i32, String)> {
        group_members(self.pid())
    }

    /// SIGKILLs the whole group, reaps the leader, and waits until no live (non-zombie)
    /// member of the group is left, so every descriptor it held is closed: what a crash
    /// leaves behind.
    pub fn kill(&mut self) {
        self.kill_and_reap();
        let pgid = self.pid();
        wait_until("the process group to die", || {
            group_members(pgid).is_empty()
        });
    }

    fn kill_and_reap(&mut self) {
        kill_group(self.pid());
        if !self.reaped {
            let _ = self.child.kill();
            let _ = self.child.wait();
            self.reaped = true;
        }
    }

    /// Waits for the leader to exit on its own (for at most `secs` seconds), returning its
    /// status.
    pub fn wait(&mut self, secs: u64) -> ExitStatus {
        let status = wait_within(secs, "the child to exit", || {
            self.child.try_wait().expect("try_wait")
        });
        self.reaped = true;
        status
    }

    pub fn stdin(&mut self) -> ChildStdin {
        self.child.stdin.take().expect("piped stdin")
    }
}

impl Drop for Group {
    /// Kills and reaps; unless a test is failing, also gives the group's members a moment
    /// to die, so that what they held is released when the guard is gone.
    fn drop(&mut self) {
        self.kill_and_reap();
        if !std::thread::panicking() {
            let deadline = Instant::now() + Duration::from_secs(10);
            while !group_members(self.pid()).is_empty() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(10));
            }
        }
    }
}

/// A child process that is killed (SIGKILL) and reaped when the guard drops, on every path.
pub struct Guard(pub Option<Child>);

impl Guard {
    pub fn spawn(cmd: &mut Command) -> Self {
        Guard(Some(cmd.spawn().expect("spawn child")))
    }

    pub fn pid(&self) -> u32 {
        self.0.as_ref().unwrap().id()
    }

    /// Kills the child with SIGKILL and reaps it.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.0.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A `sleep` holding `path` open for reading (as its descriptor 3) until the guard drops;
/// returns once the file is open.
pub fn hold_open(path: &Path) -> Guard {
    let holder = Guard::spawn(
        Command::new("sh")
            .args(["-c", "exec sleep 600 3<\"$0\""])
            .arg(path)
            .stdin(Stdio::null()),
    );
    let pid = holder.pid();
    wait_until("the holder to open it", || {
        std::fs::read_link(format!("/proc/{pid}/fd/3")).is_ok()
    });
    holder
}

/// A `sleep` child that lives until the guard drops.
pub fn sleeper() -> Guard {
    Guard::spawn(Command::new("sleep").arg("600").stdin(Stdio::null()))
}

/// SIGKILLs process group `pgid`.
pub fn kill_group(pgid: i32) {
    if let Some(p) = rustix::process::Pid::from_raw(pgid) {
        let _ = rustix::process::kill_process_group(p, rustix::process::Signal::KILL);
    }
}

/// SIGKILLs a process we did not spawn ourselves (a grandchild), by pid.
pub fn kill9(pid: i32) {
    if let Some(p) = rustix::process::Pid::from_raw(pid) {
        let _ = rustix::process::kill_process(p, rustix::process::Signal::KILL);
    }
}

/// `(state, pgrp)` of a process from `/proc/<pid>/stat`.
pub fn proc_state(pid: i32) -> Option<(char, i32)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 2..];
    let mut it = rest.split_whitespace();
    let state = it.next()?.chars().next()?;
    let _ppid = it.next()?;
    let pgrp = it.next()?.parse().ok()?;
    Some((state, pgrp))
}

/// Whether a process exists and is not a zombie (a zombie has closed all its files).
pub fn alive(pid: i32) -> bool {
    matches!(proc_state(pid), Some((s, _)) if s != 'Z' && s != 'X')
}

/// A process's name (`/proc/<pid>/comm`), empty when it is gone.
pub fn comm(pid: i32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// Live (non-zombie) processes whose process group is `pgid`: (pid, comm).
pub fn group_members(pgid: i32) -> Vec<(i32, String)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        if let Some((s, g)) = proc_state(pid)
            && g == pgid
            && s != 'Z'
            && s != 'X'
        {
            out.push((pid, comm(pid)));
        }
    }
    out
}

/// The PIDs of [`group_members`].
pub fn group_pids(pgid: i32) -> Vec<i32> {
    group_members(pgid).into_iter().map(|(p, _)| p).collect()
}

/// A PID that names no process: one of a child that has exited and been reaped (PIDs are
/// handed out in increasing order, so it is not reused within a test's lifetime).
pub fn dead_pid() -> i32 {
    let mut c = Command::new("true").spawn().expect("spawn true");
    let pid = c.id() as i32;
    c.wait().unwrap();
    assert!(!alive(pid));
    pid
}

/// `program` run as uid and gid 65534 (`nobody`), with no supplementary groups (`setpriv`).
pub fn as_nobody(program: impl AsRef<OsStr>) -> Command {
    let mut c = Command::new("setpriv");
    c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(program)
        .stdin(Stdio::null());
    c
}

/// Whether [`as_nobody`] works here (root, with `setpriv`); skips the test ([`skip`]) when it
/// does not.
pub fn can_run_as_nobody() -> bool {
    require("setpriv")
        && require_that(
            as_nobody("true").status().is_ok_and(|s| s.success()),
            "setpriv cannot switch to uid 65534 here (needs root)",
        )
}

/// `program` run with a file size limit of zero (SIGXFSZ ignored): every write to a regular
/// file fails with EFBIG, as on a full disk.
pub fn with_no_file_size(program: impl AsRef<OsStr>) -> Command {
    let mut c = Command::new("sh");
    c.arg("-c")
        .arg("trap '' XFSZ; ulimit -f 0; exec \"$@\"")
        .arg("sh")
        .arg(program)
        .stdin(Stdio::null());
    c
}

/// Where `program` is on PATH.
pub fn which(program: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join(program))
        .find(|p| p.is_file())
}

/// Whether a program the test drives is installed. A missing one skips the test (or the
/// part that needs it) through [`skip`]: a failure under CI, where `.ci/run` installs it.
pub fn require(program: &str) -> bool {
    if which(program).is_some() {
        return true;
    }
    skip(format!(
        "`{program}` is not installed (.ci/run installs it)"
    ));
    false
}

/// Whether the test may go on with `what` (a capability: root, a mount, a namespace);
/// otherwise skips it through [`skip`], saying `why`.
pub fn require_that(ok: bool, why: impl std::fmt::Display) -> bool {
    if !ok {
        skip(why);
    }
    ok
}

/// Skips the test, or the part of it the caller leaves out, because of `why`. Under CI (`CI`
/// set) nothing may be left out: this fails the test. Otherwise it says so on stderr and
/// appends a line to the skip log ([`SKIP_LOG`]), which `.ci/run` and `tests/steady.sh`
/// sum up at the end of a run.
pub fn skip(why: impl std::fmt::Display) {
    assert!(
        std::env::var_os("CI").is_none(),
        "nothing may be skipped under CI: {why}"
    );
    record_skip("skipped", &why.to_string());
}

/// Skips because of something no machine can be made to provide every time (a number the
/// kernel hands out by chance, say): the one skip that CI allows. Use it only for that.
pub fn skip_even_under_ci(why: impl std::fmt::Display) {
    record_skip("skipped by chance", &why.to_string());
}

/// Where skips are recorded, one `TEST<TAB>KIND: WHY` line each: `$LOCKSMITH_TEST_SKIP_LOG`,
/// else `skipped-tests.log` in the target directory's `tmp/`.
pub const SKIP_LOG: &str = "LOCKSMITH_TEST_SKIP_LOG";

fn record_skip(kind: &str, why: &str) {
    use std::io::Write;
    let test = std::thread::current()
        .name()
        .unwrap_or("(unnamed thread)")
        .to_string();
    eprintln!("{}: {test}: {why}", kind.to_uppercase());
    let log = std::env::var_os(SKIP_LOG)
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_TARGET_TMPDIR")).join("skipped-tests.log"));
    let line = format!("{test}\t{kind}: {}\n", why.replace('\n', " "));
    // One write of one short line with O_APPEND: lines of parallel tests do not mix.
    let _ = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log)
        .and_then(|mut f| f.write_all(line.as_bytes()));
}

/// Runs a copy of `program` under the name `name` (so its comm, exe and argv[0] say `name`),
/// in `cwd`, and waits until it has exec'd. A name the dialects look for host-wide (an
/// office program, a package manager) makes its [`Fact`] for as long as the group lives.
pub fn spawn_as(bin_dir: &Path, name: &str, program: &str, args: &[&str], cwd: &Path) -> Group {
    spawn_as_env(bin_dir, name, program, args, cwd, &[])
}

/// A `sleep` running under another name (a copy of the binary), in `cwd`: a process whose
/// executable, `comm` and `argv[0]` are `name`.
pub fn named_sleeper(bin_dir: &Path, name: &str, cwd: &Path) -> Group {
    spawn_as(bin_dir, name, "sleep", &["600"], cwd)
}

/// [`spawn_as`] with `env` added to the environment.
pub fn spawn_as_env(
    bin_dir: &Path,
    name: &str,
    program: &str,
    args: &[&str],
    cwd: &Path,
    env: &[(&str, &Path)],
) -> Group {
    let fact = Fact::of_program(name).map(quiet::making);
    let exe = bin_dir.join(name);
    if !exe.exists() {
        std::fs::create_dir_all(bin_dir).unwrap();
        let from = which(program).unwrap_or_else(|| panic!("{program} not found"));
        std::fs::copy(from, &exe).unwrap();
    }
    let mut p = Group::spawn(
        Command::new(&exe)
            .args(args)
            .current_dir(cwd)
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    );
    p._fact = fact;
    let want: String = name.chars().take(15).collect();
    let pid = p.pid();
    wait_until(&format!("{name} to start"), || comm(pid) == want);
    p
}

/// An flock held on a file by a child (`flock PATH sleep 600`, in its own process group).
/// Dropping it kills the group and waits until the kernel has released the lock (the `sleep`
/// shares the locked open file description and may die a moment after `flock`).
pub struct Flock {
    group: Group,
    key: FileKey,
}

impl Flock {
    /// Takes the lock and waits until the kernel lists it.
    pub fn hold(path: &Path) -> Flock {
        let group = Group::spawn(
            Command::new("flock")
                .arg(path)
                .args(["sleep", "600"])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null()),
        );
        let key = FileKey::of(&std::fs::metadata(path).unwrap());
        wait_until("the flock", || snapshot().kernel_locked(key));
        Flock { group, key }
    }

    pub fn pid(&self) -> i32 {
        self.group.pid()
    }
}

/// A python3 child that holds an OFD write lock on `path` until it is killed; returns once
/// the lock is taken.
pub fn hold_ofd(path: &Path) -> Guard {
    let script = "import fcntl, os, struct, sys, time\n\
        fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)\n\
        fcntl.fcntl(fd, 37, struct.pack('hhqqi', fcntl.F_WRLCK, 0, 0, 0, 0))  # F_OFD_SETLK\n\
        print('locked', flush=True)\n\
        time.sleep(600)\n";
    let mut child = Command::new("python3")
        .args(["-c", script])
        .arg(path)
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3");
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.take().unwrap()),
        &mut line,
    )
    .unwrap();
    assert_eq!(line.trim(), "locked");
    Guard(Some(child))
}

/// Takes an flock on `path` in a child ([`Flock::hold`]).
pub fn hold_flock(path: &Path) -> Flock {
    Flock::hold(path)
}

impl Drop for Flock {
    fn drop(&mut self) {
        self.group.kill_and_reap();
        let key = self.key;
        wait_until("the flock to be released", || {
            !snapshot().kernel_locked(key)
        });
    }
}

/// `git` in `repo` with `home` as its HOME, no system configuration and a fixed identity.
pub fn git(repo: &Path, home: &Path) -> Command {
    let mut c = Command::new("git");
    c.current_dir(repo)
        .env("HOME", home)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "Test")
        .env("GIT_AUTHOR_EMAIL", "test@example.com")
        .env("GIT_COMMITTER_NAME", "Test")
        .env("GIT_COMMITTER_EMAIL", "test@example.com")
        .stdin(Stdio::null());
    c
}

/// Runs [`git`] with `args` to success.
pub fn git_ok(repo: &Path, home: &Path, args: &[&str]) {
    let out = git(repo, home).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A new git repository at `repo` (branch `main`) with one commit of `a.txt`.
pub fn git_repo_with_a_commit(repo: &Path, home: &Path) {
    std::fs::create_dir_all(repo).unwrap();
    git_ok(repo, home, &["init", "-q", "-b", "main"]);
    std::fs::write(repo.join("a.txt"), "one\n").unwrap();
    git_ok(repo, home, &["add", "a.txt"]);
    git_ok(repo, home, &["commit", "-qm", "first"]);
}

/// The Python that attackers run as (the system's, which uid 65534 may run).
pub const NOBODY_PYTHON: &str = "/usr/bin/python3";

/// Whether a test can act as a local unprivileged user (uid 65534) here: root, `setpriv` and
/// the system's Python. Says why not (and the test skips) otherwise.
pub fn can_act_as_nobody() -> bool {
    require_that(
        rustix::process::geteuid().is_root(),
        "needs root (to act as uid 65534)",
    ) && require("setpriv")
        && require_that(
            Path::new(NOBODY_PYTHON).exists(),
            format!("{NOBODY_PYTHON} is not installed (CI installs it)"),
        )
}

/// Runs `python3 -c SCRIPT ARGS...` as uid/gid 65534 with no supplementary groups.
pub fn python_as_nobody(script: &str, args: &[&OsStr]) -> ExitStatus {
    Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            NOBODY_PYTHON,
            "-c",
        ])
        .arg(script)
        .args(args)
        .status()
        .expect("run setpriv")
}

/// `gpg --quick-gen-key UID` in the GnuPG home `home` with no passphrase and no terminal
/// (run through `wrapper`, such as `timeout 3`, when it is not empty); its stderr is piped.
pub fn gpg_gen_key(home: &std::path::Path, wrapper: &[&str], uid: &str) -> Command {
    let argv: Vec<&str> = wrapper.iter().copied().chain(["gpg"]).collect();
    let mut c = Command::new(argv[0]);
    c.args(&argv[1..])
        .arg("--homedir")
        .arg(home)
        .args([
            "--batch",
            "--passphrase",
            "",
            "--quick-gen-key",
            uid,
            "ed25519",
            "sign",
            "never",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    c
}
