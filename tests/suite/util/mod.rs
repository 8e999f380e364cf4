//! Helpers shared by the integration tests: run the real binary in a temp dir, read its JSON
//! report into typed structs (unknown fields are errors), validate it against the schema,
//! photograph a tree to prove nothing changed. Processes on a leash (`process`), files and
//! fixtures (`files`), judging paths (`judging`), the engine's helper children (`engine`), the
//! terminal UI in a pty (`ui`), and real containers, a Debian machine booted by systemd in one
//! (`machine`), ssh servers, sshfs and btrfs mounts.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use serde::Deserialize;

pub mod btrfs;
pub mod engine;
pub mod judging;
pub mod machine;
pub mod perturb;
pub mod podman;
pub mod pty;
pub mod quiet;
pub mod ui;
pub mod userns;

mod files;
mod process;
pub use engine::hostname;
// `/proc/locks` read at once, the ssh server and the sshfs mount: shared with the engine's tests.
pub use files::*;
pub use locksmith_test_support::{DEADLINE, proc_locks, sshd, sshfs};
pub use process::*;
pub use quiet::{Snap, snapshot};

/// The `locksmith` binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_locksmith");

/// A temp dir with its own state and config homes, and the binary to run in it.
pub struct Env {
    pub dir: tempfile::TempDir,
}

impl Env {
    pub fn new() -> Self {
        let dir = locksmith_test_support::temp_dir();
        std::fs::create_dir_all(dir.path().join("config")).unwrap();
        Env { dir }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// The state directory reclaim writes to (`$XDG_STATE_HOME/locksmith`).
    pub fn state_dir(&self) -> PathBuf {
        self.path().join("state/locksmith")
    }

    /// `locksmith ARGS` with HOME, XDG homes and color settings under control.
    pub fn cmd<I, S>(&self, args: I) -> Command
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        locksmith_test_support::record_time();
        let mut c = Command::new(BIN);
        c.args(args)
            .env("XDG_STATE_HOME", self.path().join("state"))
            .env("XDG_CONFIG_HOME", self.path().join("config"))
            .env_remove("NO_COLOR")
            .current_dir(self.path())
            .stdin(Stdio::null());
        c
    }

    /// `locksmith ARGS` as uid/gid 65534 with no supplementary groups (via `setpriv`), with
    /// the homes of [`Env::cmd`]; see [`can_run_as_nobody`].
    pub fn cmd_as_nobody<I, S>(&self, args: I) -> Command
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups", BIN])
            .args(args)
            .env("XDG_STATE_HOME", self.path().join("state"))
            .env("XDG_CONFIG_HOME", self.path().join("config"))
            .env_remove("NO_COLOR")
            .current_dir(self.path())
            .stdin(Stdio::null());
        c
    }

    /// Runs `locksmith ARGS` to completion (killed after [`DEADLINE`]).
    pub fn run<I, S>(&self, args: I) -> Output
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        run_bounded(self.cmd(args), DEADLINE)
    }

    /// `locksmith --scan --json PATH...`, checked against the schema and parsed.
    pub fn scan_json(&self, paths: &[&Path]) -> (Report, Output) {
        let mut args: Vec<&OsStr> = vec!["--scan".as_ref(), "--json".as_ref()];
        args.extend(paths.iter().map(|p| p.as_os_str()));
        let out = self.run(args);
        let report = parse_report(&out);
        (report, out)
    }

    /// `locksmith --scan EXTRA... ROOT`.
    pub fn scan(&self, extra: &[impl AsRef<OsStr>], root: &Path) -> Output {
        let mut args: Vec<&OsStr> = vec!["--scan".as_ref()];
        args.extend(extra.iter().map(AsRef::as_ref));
        args.push(root.as_os_str());
        self.run(args)
    }

    /// `locksmith --scan --format prometheus EXTRA... ROOT`.
    pub fn prometheus(&self, extra: &[&OsStr], root: &Path) -> Output {
        let mut args: Vec<&OsStr> = vec!["--format".as_ref(), "prometheus".as_ref()];
        args.extend(extra);
        self.scan(&args, root)
    }

    /// A directory `root` in the temp dir holding one stale lock, `gone.pid` (a dead PID).
    pub fn root_with_a_dead_pidfile(&self) -> PathBuf {
        let root = self.path().join("root");
        std::fs::create_dir(&root).unwrap();
        std::fs::write(root.join("gone.pid"), format!("{}\n", dead_pid())).unwrap();
        root
    }

    /// `locksmith --scan --reclaim --json EXTRA... PATH`, checked against the schema and parsed.
    pub fn reclaim_json(&self, extra: &[&str], path: &Path) -> (Report, Output) {
        let out = self.scan(&[&["--reclaim", "--json"], extra].concat(), path);
        (parse_report(&out), out)
    }

    /// The journal lines reclaim wrote, parsed.
    pub fn journal(&self) -> Vec<serde_json::Value> {
        std::fs::read_to_string(self.state_dir().join("journal.jsonl"))
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).expect("journal line is JSON"))
            .collect()
    }
}

/// Whether locksmith can be run as uid 65534 here ([`Env::cmd_as_nobody`]): root and
/// `setpriv` (skips, or fails under CI, otherwise).
pub fn can_run_as_nobody() -> bool {
    require_that(
        rustix::process::geteuid().is_root(),
        "needs root (to run locksmith as uid 65534)",
    ) && require("setpriv")
}

/// `locksmith lock ARGS... PATH`, stdin closed (add `--` and a command).
pub fn lock_cmd(path: &Path, args: &[&str]) -> Command {
    locksmith_test_support::record_time();
    let mut c = Command::new(BIN);
    c.arg("lock").args(args).arg(path).stdin(Stdio::null());
    c
}

/// The arguments of one try at the lock at `path` that says `ran` if it gets it:
/// `lock --timeout 1 PATH -- echo ran`.
pub fn lock_once_args(path: &Path) -> Vec<&OsStr> {
    let mut args: Vec<&OsStr> = ["lock", "--timeout", "1"].map(OsStr::new).to_vec();
    args.push(path.as_os_str());
    args.extend(["--", "echo", "ran"].map(OsStr::new));
    args
}

/// `locksmith lock ARGS... PATH -- sleep 600` in a process group of its own, once it holds
/// the lock (its record names it).
pub fn hold_with_cli(path: &Path, args: &[&str]) -> Group {
    let mut c = lock_cmd(path, args);
    c.args(["--", "sleep", "600"]);
    let g = Group::spawn(c);
    let pid = format!("\"pid\":{}", g.pid());
    wait_until("the holder to take the lock", || {
        std::fs::read_to_string(path).is_ok_and(|s| s.contains(&pid))
    });
    g
}

/// Runs `locksmith` (or a program that runs it) with piped output, on a quiet host (see
/// [`quiet`]: no copy of this process holds a stale descriptor, no other user's processes
/// hold more than it reads of them), killing it if it outlives `limit`.
pub fn run_bounded(cmd: Command, limit: Duration) -> Output {
    let _judging = quiet::judging();
    quiet::settle();
    run_limited(cmd, limit)
}

/// Runs a command with piped output, killing it if it outlives `limit`.
pub fn run_limited(mut cmd: Command, limit: Duration) -> Output {
    let child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(limit) {
        Ok(out) => out.expect("wait"),
        Err(_) => {
            let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
            panic!("{cmd:?} did not finish within {limit:?}");
        }
    }
}

/// The report of `--scan --json`, validated against the schema first.
pub fn parse_report(out: &Output) -> Report {
    let text = String::from_utf8(out.stdout.clone()).expect("JSON output is UTF-8");
    let value: serde_json::Value = serde_json::from_str(&text).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {text}\nstderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    validate(&value);
    let report: Report = serde_json::from_value(value).expect("report matches the typed structs");
    // Every `stale` names the rules that proved it, and nothing else names one.
    for l in &report.locks {
        assert_eq!(
            l.verdict == "stale",
            !l.proofs.is_empty(),
            "{}: a stale lock names its proofs and no other does: {:#?}",
            l.path,
            l.proofs
        );
        for p in &l.proofs {
            assert!(
                locksmith::Rule::by_id(&p.rule).is_some(),
                "{}: unknown rule {}",
                l.path,
                p.rule
            );
        }
    }
    report
}

/// The report's schema (`tests/report.schema.json`).
pub fn schema() -> serde_json::Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/report.schema.json");
    let text = std::fs::read_to_string(&path).unwrap();
    serde_json::from_str(&text).unwrap()
}

pub fn validate(value: &serde_json::Value) {
    let schema = schema();
    let validator = jsonschema::validator_for(&schema).expect("schema compiles");
    let errors: Vec<String> = validator
        .iter_errors(value)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "report breaks the schema: {errors:#?}\n{value:#}"
    );
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Report {
    pub version: u32,
    pub host: Host,
    pub roots: Vec<String>,
    pub summary: Summary,
    pub locks: Vec<Lock>,
    pub errors: Vec<ErrorEntry>,
    pub reclaimed: Option<Vec<Reclaimed>>,
}

impl Report {
    pub fn lock(&self, path: &Path) -> Option<&Lock> {
        let p = path.to_str().unwrap();
        self.locks.iter().find(|l| l.path == p)
    }

    /// The lock at `path`, with a readable failure when it is missing.
    pub fn expect_lock(&self, path: &Path) -> &Lock {
        self.lock(path).unwrap_or_else(|| {
            panic!(
                "no lock {} in the report: {:#?}",
                path.display(),
                self.locks.iter().map(|l| &l.path).collect::<Vec<_>>()
            )
        })
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)] // the contract's every field, read by a test or not
pub struct Host {
    pub hostname: String,
    pub boot_id: Option<String>,
    pub boot_time: Option<String>,
    pub pid_ns: Option<u64>,
    pub in_container: bool,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)] // the contract's every field, read by a test or not
pub struct Summary {
    pub entries: u64,
    pub locks: u64,
    pub live: u64,
    pub stale: u64,
    pub free: u64,
    pub foreign: u64,
    pub unknown: u64,
    pub errors: u64,
    pub elapsed_ms: u64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)] // the contract's every field, read by a test or not
pub struct Lock {
    pub path: String,
    pub dialect: String,
    pub verdict: String,
    pub evidence: Vec<String>,
    pub reclaimable: bool,
    pub kind: Option<String>,
    pub size: Option<u64>,
    pub modified: Option<String>,
    pub age_s: Option<u64>,
    pub owner: Option<Owner>,
    pub process: Option<Process>,
    pub holders: Vec<Holder>,
    pub fs: Fs,
    pub unsaved_changes: Option<bool>,
    pub proofs: Vec<ProofJson>,
    pub waiters: Vec<WaiterJson>,
    pub holder_stuck: Option<StuckJson>,
}

/// A process waiting for a lock.
#[derive(Debug, Deserialize, Clone)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)] // the contract's every field, read by a test or not
pub struct WaiterJson {
    pub pid: i64,
    pub name: Option<String>,
    pub cmd: Vec<String>,
    pub how: String,
    pub mode: Option<String>,
    pub started: Option<String>,
    pub blocked_in: Option<String>,
    pub evidence: String,
    pub container: Option<Container>,
}

/// A holder that will not let go by itself.
#[derive(Debug, Deserialize, Clone)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)] // the contract's every field, read by a test or not
pub struct StuckJson {
    pub pid: i64,
    pub name: String,
    pub why: String,
}

/// What proved a stale lock: a rule of the closed set, and its facts.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)] // the contract's every field, read by a test or not
pub struct ProofJson {
    pub rule: String,
    pub facts: serde_json::Map<String, serde_json::Value>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)] // the contract's every field, read by a test or not
pub struct Owner {
    pub pid: Option<i64>,
    pub hostname: Option<String>,
    pub user: Option<String>,
    pub created_at: Option<String>,
    pub detail: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)] // the contract's every field, read by a test or not
pub struct Process {
    pub pid: i64,
    pub name: String,
    pub exe: Option<String>,
    pub cmd: Vec<String>,
    pub user: Option<String>,
    pub start_time: Option<String>,
    pub container: Option<Container>,
}

/// The container a process runs in.
#[derive(Debug, Deserialize, Clone)]
#[serde(deny_unknown_fields)]
pub struct Container {
    pub runtime: String,
    pub id: String,
    pub name: Option<String>,
    pub ns_pid: Option<i64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)] // the contract's every field, read by a test or not
pub struct Holder {
    pub pid: i64,
    pub name: Option<String>,
    pub how: String,
    pub container: Option<Container>,
    pub mode: Option<String>,
    pub range: Option<ByteRange>,
}

/// The bytes a POSIX or OFD lock covers (`end: None`: to EOF).
#[derive(Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ByteRange {
    pub start: u64,
    pub end: Option<u64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)] // the contract's every field, read by a test or not
pub struct Fs {
    #[serde(rename = "type")]
    pub kind: String,
    pub network: bool,
    /// What serves the directory to other machines, when this host shares it.
    pub shared: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ErrorEntry {
    pub path: String,
    pub error: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Reclaimed {
    pub path: String,
    pub ok: bool,
    pub action: String,
    pub verdict: String,
    pub saved_to: Option<String>,
    pub saved_offset: Option<u64>,
    pub error: Option<String>,
}

impl Reclaimed {
    /// The `len` bytes of its copy: the whole file `saved_to`, or the part at `saved_offset`.
    pub fn copy(&self, len: usize) -> Vec<u8> {
        saved_copy(
            self.saved_to.as_deref().expect("saved_to"),
            self.saved_offset,
            len,
        )
    }
}

/// The copy a reclaim line of the journal names (`saved_to`, `saved_offset`, `size`).
pub fn journal_copy(line: &serde_json::Value) -> Vec<u8> {
    let part = |bytes: Vec<u8>| copy_part(line, bytes);
    part(std::fs::read(line["saved_to"].as_str().expect("saved_to")).expect("the copy reads"))
}

/// The copy a reclaim line names, out of `file`, the bytes of the file it names (read however
/// the caller can: inside a machine, a container).
pub fn copy_part(line: &serde_json::Value, file: Vec<u8>) -> Vec<u8> {
    let size = line["size"].as_u64().expect("size") as usize;
    saved_part(file, line["saved_offset"].as_u64(), size)
}

fn saved_part(all: Vec<u8>, offset: Option<u64>, len: usize) -> Vec<u8> {
    match offset {
        None => {
            assert_eq!(all.len(), len, "the copy is the whole file");
            all
        }
        Some(at) => {
            let at = at as usize;
            assert!(
                at + len <= all.len(),
                "the shared file holds {len} bytes at {at}"
            );
            all[at..at + len].to_vec()
        }
    }
}

/// The copy of a reclaimed lock, `len` bytes: the whole file `saved_to` (checked to be that
/// long), or the part of it at `offset` (a copy in the file its group's copies share).
pub fn saved_copy(saved_to: &str, offset: Option<u64>, len: usize) -> Vec<u8> {
    saved_part(
        std::fs::read(saved_to).unwrap_or_else(|e| panic!("{saved_to}: {e}")),
        offset,
        len,
    )
}

/// What a tree looks like: every entry's mode, inode, device, link count, size, mtime, ctime
/// and content (or link text). Equal photographs before and after a scan prove the scan
/// changed nothing.
pub fn photograph(root: &Path) -> BTreeMap<PathBuf, String> {
    photograph_with(root, false)
}

/// [`photograph`] with the access times too, of all but symlinks (readlink(2) updates a
/// symlink's whatever the caller does, and the dialects of symlink locks need the link text).
/// Files are read here with `O_NOATIME`, as the scanner reads them; reading a directory sets
/// its access time once (relatime): take one photograph first and let the clock move on, so
/// that any access after that shows.
pub fn photograph_with_atimes(root: &Path) -> BTreeMap<PathBuf, String> {
    photograph_with(root, true)
}

fn photograph_with(root: &Path, atimes: bool) -> BTreeMap<PathBuf, String> {
    let mut out = BTreeMap::new();
    for entry in walkdir::WalkDir::new(root).follow_links(false) {
        let Ok(entry) = entry else { continue };
        let meta = match entry.path().symlink_metadata() {
            Ok(m) => m,
            Err(_) => continue,
        };
        let t = meta.file_type();
        let atime = if atimes && !t.is_symlink() {
            format!(" atime={}.{}", meta.atime(), meta.atime_nsec())
        } else {
            String::new()
        };
        let content = if t.is_symlink() {
            format!(
                "-> {:?}",
                std::fs::read_link(entry.path()).unwrap_or_default()
            )
        } else if t.is_file() && meta.len() <= 1 << 20 {
            format!("{:x?}", read_noatime(entry.path()))
        } else {
            String::new()
        };
        out.insert(
            entry.path().to_path_buf(),
            format!(
                "mode={:o} ino={} dev={} nlink={} size={} mtime={}.{} ctime={}.{}{atime} {content}",
                meta.mode(),
                meta.ino(),
                meta.dev(),
                meta.nlink(),
                meta.len(),
                meta.mtime(),
                meta.mtime_nsec(),
                meta.ctime(),
                meta.ctime_nsec()
            ),
        );
    }
    out
}

/// A file's content, read without updating its access time where we may (`O_NOATIME` needs
/// the file's owner or CAP_FOWNER); empty when it cannot be read.
fn read_noatime(path: &Path) -> Vec<u8> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::File::options()
        .read(true)
        .custom_flags(libc::O_NOATIME)
        .open(path)
        .or_else(|_| std::fs::File::open(path));
    let mut buf = Vec::new();
    if let Ok(mut f) = file {
        let _ = f.read_to_end(&mut buf);
    }
    buf
}

/// Asserts the exit code, printing both output streams when it is another.
pub fn assert_code(out: &Output, code: i32) {
    assert_eq!(
        out.status.code(),
        Some(code),
        "{}{}",
        stdout(out),
        stderr(out)
    );
}

/// stdout as text.
pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// stderr as text.
pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The binary started in a new pseudo-terminal of `rows` x `cols`, in `env`'s directory with
/// its state and config homes, `TERM=xterm-256color`, no `NO_COLOR` unless `extra_env` sets it.
/// Returns the child and the pty's master side (read the output from it, write keys to it).
/// Settles first ([`quiet::settle`]); the caller holds [`quiet::judging`] while it runs.
pub fn spawn_in_pty(
    env: &Env,
    args: &[&OsStr],
    extra_env: &[(&str, &str)],
    rows: u16,
    cols: u16,
) -> (
    Box<dyn portable_pty::Child + Send + Sync>,
    Box<dyn portable_pty::MasterPty + Send>,
) {
    use portable_pty::{CommandBuilder, PtySize, native_pty_system};
    quiet::settle();
    let pair = native_pty_system()
        .openpty(PtySize {
            rows,
            cols,
            pixel_width: 0,
            pixel_height: 0,
        })
        .expect("open a pty");
    let mut cmd = CommandBuilder::new(BIN);
    cmd.args(args);
    cmd.cwd(env.path());
    cmd.env("XDG_STATE_HOME", env.path().join("state"));
    cmd.env("XDG_CONFIG_HOME", env.path().join("config"));
    cmd.env("TERM", "xterm-256color");
    cmd.env_remove("NO_COLOR");
    for (k, v) in extra_env {
        cmd.env(k, v);
    }
    let child = pair
        .slave
        .spawn_command(cmd)
        .expect("spawn locksmith in the pty");
    drop(pair.slave);
    (child, pair.master)
}

/// A Python interpreter with py-filelock 4 or later: `$LOCKSMITH_TEST_PYTHON` (`.ci/run`
/// sets it to a virtual environment it made), else `python3`; `None` (the test skips) when
/// there is none.
pub fn python_with_filelock4() -> Option<PathBuf> {
    let candidates = std::env::var_os("LOCKSMITH_TEST_PYTHON")
        .map(PathBuf::from)
        .into_iter()
        .chain([PathBuf::from("python3")]);
    for py in candidates {
        let ok = Command::new(&py)
            .args([
                "-c",
                "import filelock, sys; sys.exit(int(filelock.__version__.split('.')[0]) < 4)",
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if ok {
            return Some(py);
        }
    }
    skip("no python3 with py-filelock >= 4 (`.ci/run` makes one; or set LOCKSMITH_TEST_PYTHON)");
    None
}

/// Holds a real SoftFileLock on `lock` until killed; `hostname`, when given, runs it in its
/// own UTS namespace under that host name (as on another machine of a cluster sharing the
/// directory). Waits until the lock file is written.
pub fn hold_soft_file_lock(py: &Path, lock: &Path, hostname: Option<&str>) -> Group {
    let script = "import sys, time\nfrom filelock import SoftFileLock\n\
                  l = SoftFileLock(sys.argv[1]); l.acquire()\nprint('held', flush=True)\n\
                  time.sleep(600)\n";
    let mut cmd = match hostname {
        Some(h) => {
            let mut c = Command::new("unshare");
            c.args([
                "--uts",
                "sh",
                "-c",
                &format!("hostname {h} && exec \"$0\" \"$@\""),
            ])
            .arg(py);
            c
        }
        None => Command::new(py),
    };
    cmd.args(["-c", script])
        .arg(lock)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let guard = Group::spawn(&mut cmd);
    wait_for("the SoftFileLock", || {
        std::fs::read_to_string(lock)
            .ok()
            .filter(|t| t.lines().count() >= 2)
            .map(|_| ())
    });
    guard
}
