//! The suite's own processes: holders of open files and kernel locks, programs under other
//! names that make a host-wide fact, the user 65534, git and gpg as the tests drive them. The
//! leash itself (process groups killed and reaped on every path, waits with deadlines,
//! requirements and skips) is `locksmith-test-support`'s, re-exported here.

use std::ffi::OsStr;
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};

use locksmith::probe::FileKey;
pub use locksmith_test_support::{
    Group, Guard, alive, comm, dead_pid, group_members, group_pids, kill_group, kill9, require,
    require_that, skip, skip_even_under_ci, wait_for, wait_until, wait_within, which,
};

use super::quiet::{self, Fact, snapshot};

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
    if let Some(fact) = fact {
        p.keep(fact);
    }
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
