//! `locksmith start PATH... [-- COMMAND]` on this host, with real processes: what is proven
//! stale goes (copied and journaled), the service then runs in the same process with nothing
//! added to what it inherits; a lock that is live, unknown or in doubt stays and nothing runs
//! (exit 75), or is waited for with `--wait`; a lock naming this process or its parent is
//! told apart by when that process started. The container cases (a restarted container's
//! PID 1, a volume shared with another container) are in `start_containers`.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::util::{self, BIN, Env, Group, dead_pid, run_bounded, sleeper, stderr, stdout};

/// `locksmith start ARGS...` in the test's environment.
fn start(env: &Env, args: &[&str]) -> Command {
    let mut c = env.cmd(["start"]);
    c.args(args);
    c
}

fn journal_reclaims(env: &Env) -> Vec<serde_json::Value> {
    env.journal()
        .into_iter()
        .filter(|e| e["event"] == "reclaim")
        .collect()
}

#[test]
fn a_stale_pid_file_goes_and_the_service_runs_in_the_same_process() {
    let env = Env::new();
    let stale = env.path().join("app.pid");
    std::fs::write(&stale, format!("{}\n", dead_pid())).unwrap();
    let missing = env.path().join("never-written.pid");
    let mut c = start(
        &env,
        &[
            stale.to_str().unwrap(),
            missing.to_str().unwrap(),
            "--",
            "sh",
            "-c",
            r#"echo "$$"; printf '%s|' "$@"; echo; echo "$SERVICE_SETTING""#,
            "service",
            "one arg",
            "two",
        ],
    );
    c.env("SERVICE_SETTING", "from the caller")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = c.spawn().unwrap();
    let pid = child.id();
    let out = child.wait_with_output().unwrap();
    util::assert_code(&out, 0);
    let printed = stdout(&out);
    let lines: Vec<&str> = printed.lines().collect();
    assert_eq!(
        lines,
        [pid.to_string().as_str(), "one arg|two|", "from the caller"],
        "the service runs as the process that was started, with its arguments and environment"
    );
    assert!(!stale.exists());
    let err = stderr(&out);
    assert!(
        err.contains("removed ") && err.contains("app.pid (stale: no process"),
        "{err}"
    );
    let reclaims = journal_reclaims(&env);
    assert_eq!(reclaims.len(), 1, "{reclaims:?}");
    assert_eq!(reclaims[0]["verdict"], "stale");
    assert_ne!(reclaims[0]["forced"], true, "proven stale: not forced");
    assert_eq!(reclaims[0]["proofs"][0]["rule"], "pid-gone");
    let copy = String::from_utf8(util::journal_copy(&reclaims[0])).unwrap();
    assert!(copy.trim().parse::<i32>().is_ok(), "{copy:?}");

    // Without COMMAND (systemd's ExecStartPre=): 0 once clear.
    std::fs::write(&stale, format!("{}\n", dead_pid())).unwrap();
    let out = run_bounded(start(&env, &[stale.to_str().unwrap()]), util::DEADLINE);
    util::assert_code(&out, 0);
    assert!(!stale.exists());
    assert_eq!(journal_reclaims(&env).len(), 2);
}

/// What the service inherits through `locksmith start` is what it inherits run directly:
/// the same signal mask, ignored signals and descriptors, but for one: the start guard
/// beside its pid file, whose kernel lock it holds.
#[test]
fn the_service_inherits_nothing_more_than_its_start_guard() {
    let env = Env::new();
    let stale = env.path().join("x.pid");
    let inherited = |via_start: bool| -> String {
        std::fs::write(&stale, format!("{}\n", dead_pid())).unwrap();
        // Each descriptor of the shell by number; a start guard with what it names.
        let script = r#"grep -E '^(SigBlk|SigIgn|SigCgt)' /proc/self/status
            for f in /proc/$$/fd/*; do
                t=$(readlink "$f")
                case "$t" in
                    *.locksmith-start) echo "${f##*/} guard $t" ;;
                    *) echo "${f##*/}" ;;
                esac
            done"#;
        let c = if via_start {
            start(&env, &[stale.to_str().unwrap(), "--", "sh", "-c", script])
        } else {
            let mut c = Command::new("sh");
            c.args(["-c", script]).stdin(Stdio::null());
            c
        };
        let out = run_bounded(c, util::DEADLINE);
        util::assert_code(&out, 0);
        stdout(&out)
    };
    // Signals 32 and 33 are the C library's own (thread cancellation, set*id across threads;
    // programs cannot use them). A child started by `posix_spawn` from a threaded process has
    // them ignored, and a threaded process (locksmith when it reads many namespaces on several
    // threads) gets its own handler for them, which `execve` resets: left out.
    let ours = |s: String| -> String {
        s.lines()
            .map(|l| match l.split_once(":\t") {
                Some((k, v)) if k.starts_with("Sig") => {
                    let bits = u64::from_str_radix(v, 16).unwrap() & !(0b11 << 31);
                    format!("{k}:\t{bits:016x}\n")
                }
                _ => format!("{l}\n"),
            })
            .collect()
    };
    let direct = ours(inherited(false));
    let through = ours(inherited(true));
    let guard = env.path().join(".x.pid.locksmith-start");
    let (guards, rest): (Vec<&str>, Vec<&str>) =
        through.lines().partition(|l| l.contains(" guard "));
    assert_eq!(
        guards.len(),
        1,
        "one start guard inherited, through locksmith start:\n{through}"
    );
    assert!(
        guards[0].ends_with(&format!(" guard {}", guard.display())),
        "{through}"
    );
    let fd = guards[0].split(' ').next().unwrap();
    let direct_fds: Vec<&str> = direct.lines().collect();
    assert!(!direct_fds.contains(&fd), "{direct}");
    assert_eq!(rest, direct_fds, "through locksmith start vs run directly");
    assert!(!stale.exists());
    assert!(guard.exists(), "the guard stays");
}

#[test]
fn a_live_lock_stays_and_nothing_runs() {
    let env = Env::new();
    let owner = sleeper();
    let lock = env.path().join("web.pid");
    std::fs::write(&lock, format!("{}\n", owner.pid())).unwrap();
    let ran = env.path().join("ran");
    let out = run_bounded(
        start(
            &env,
            &[lock.to_str().unwrap(), "--", "touch", ran.to_str().unwrap()],
        ),
        util::DEADLINE,
    );
    util::assert_code(&out, 75);
    assert!(!ran.exists(), "the service must not run");
    assert!(lock.exists());
    let err = stderr(&out);
    assert!(
        err.contains("web.pid stays: live: process")
            && err.contains(&owner.pid().to_string())
            && err.contains("not starting"),
        "{err}"
    );
    assert!(journal_reclaims(&env).is_empty());

    // An unknown lock: a pid file that names no PID.
    let weird = env.path().join("weird.pid");
    std::fs::write(&weird, "not a pid\n").unwrap();
    let out = run_bounded(
        start(
            &env,
            &[
                weird.to_str().unwrap(),
                "--",
                "touch",
                ran.to_str().unwrap(),
            ],
        ),
        util::DEADLINE,
    );
    util::assert_code(&out, 75);
    assert!(
        stderr(&out).contains("weird.pid stays: unknown"),
        "{}",
        stderr(&out)
    );
    assert!(!ran.exists() && weird.exists());
    assert!(journal_reclaims(&env).is_empty());
}

#[test]
fn wait_judges_again_until_the_holder_is_gone() {
    let env = Env::new();
    let mut owner = sleeper();
    let lock = env.path().join("web.pid");
    std::fs::write(&lock, format!("{}\n", owner.pid())).unwrap();
    let began = Instant::now();
    let mut c = start(
        &env,
        &[
            "--wait",
            "30",
            lock.to_str().unwrap(),
            "--",
            "echo",
            "started",
        ],
    );
    c.stdout(Stdio::piped()).stderr(Stdio::piped());
    let child = c.spawn().unwrap();
    std::thread::sleep(Duration::from_millis(1200));
    owner.kill();
    let out = child.wait_with_output().unwrap();
    util::assert_code(&out, 0);
    assert!(began.elapsed() >= Duration::from_millis(1200));
    assert_eq!(stdout(&out), "started\n");
    let err = stderr(&out);
    assert!(err.contains("waiting (up to 30 s)"), "{err}");
    assert!(err.contains("removed "), "{err}");
    assert!(!lock.exists());

    // A holder that stays: given up after the wait, exit 75.
    let owner = sleeper();
    std::fs::write(&lock, format!("{}\n", owner.pid())).unwrap();
    let began = Instant::now();
    let out = run_bounded(
        start(
            &env,
            &["--wait", "0.6", lock.to_str().unwrap(), "--", "true"],
        ),
        util::DEADLINE,
    );
    util::assert_code(&out, 75);
    assert!(began.elapsed() >= Duration::from_millis(600));
    assert!(
        stderr(&out).contains("after waiting 0.6 s"),
        "{}",
        stderr(&out)
    );
    assert!(lock.exists());

    let out = run_bounded(start(&env, &["--wait=-1", "x"]), util::DEADLINE);
    util::assert_code(&out, 2);
    assert!(stderr(&out).contains("--wait must be"), "{}", stderr(&out));
}

/// A kernel-lock file nobody locks is harmless and stays; one locked by a parent through the
/// descriptor this process inherits (`flock FILE locksmith start FILE -- ...`) is the
/// service's own.
#[test]
fn free_and_inherited_kernel_locks_are_not_in_the_way() {
    if !util::require("flock") {
        return;
    }
    let env = Env::new();
    let cache = env.path().join("cargo");
    std::fs::create_dir(&cache).unwrap();
    let lock = cache.join(".package-cache");
    std::fs::write(&lock, "").unwrap();
    let out = run_bounded(
        start(&env, &[lock.to_str().unwrap(), "--", "echo", "ran"]),
        util::DEADLINE,
    );
    util::assert_code(&out, 0);
    assert_eq!(stdout(&out), "ran\n");
    assert!(lock.exists(), "a free kernel-lock file is never removed");

    let mut c = Command::new("flock");
    c.arg(&lock)
        .arg(BIN)
        .args(["start", lock.to_str().unwrap(), "--", "echo", "ran"])
        .env("XDG_STATE_HOME", env.path().join("state"))
        .stdin(Stdio::null());
    let out = run_bounded(c, util::DEADLINE);
    util::assert_code(&out, 0);
    assert_eq!(stdout(&out), "ran\n");
    assert!(stderr(&out).contains("held through a descriptor this process inherited"));

    // Held by another process: in the way. flock(1) runs sleep as its child: the whole group
    // goes when the guard drops.
    let holder = Group::spawn(
        Command::new("flock")
            .arg(&lock)
            .args(["sleep", "600"])
            .stdin(Stdio::null()),
    );
    util::wait_until("flock to hold it", || {
        util::proc_locks::table().contains(&format!(" {} ", holder.pid()))
    });
    let out = run_bounded(
        start(&env, &[lock.to_str().unwrap(), "--", "true"]),
        util::DEADLINE,
    );
    util::assert_code(&out, 75);
    assert!(stderr(&out).contains("stays: live"), "{}", stderr(&out));
    assert!(journal_reclaims(&env).is_empty());
}

/// The wall-clock start of a process, to the tick (what `locksmith start` compares).
fn started_ms(pid: u32) -> i64 {
    let host = locksmith::probe::HostFacts::probe();
    let ticks = locksmith::probe::process::probe(pid as i32, &host)
        .facts()
        .expect("the process is alive")
        .start_ticks;
    locksmith::probe::started::start_ms(ticks, host.ticks_per_sec).unwrap()
}

/// Sets a file's mtime (ms since the epoch).
fn set_mtime(path: &Path, ms: i64) {
    let t = rustix::fs::Timespec {
        tv_sec: ms.div_euclid(1000),
        tv_nsec: (ms.rem_euclid(1000) * 1_000_000) as _,
    };
    rustix::fs::utimensat(
        rustix::fs::CWD,
        path,
        &rustix::fs::Timestamps {
            last_access: t,
            last_modification: t,
        },
        rustix::fs::AtFlags::empty(),
    )
    .unwrap();
}

/// A shell that waits for a line on stdin, then runs `locksmith start LOCK -- true` as its
/// child (not with exec: the shell stays its parent) and prints its exit status.
fn parent_shell(env: &Env, lock: &Path) -> std::process::Child {
    Command::new("sh")
        .args([
            "-c",
            r#"read go; "$0" start "$1" -- true; echo "rc=$?""#,
            BIN,
            lock.to_str().unwrap(),
        ])
        .env("XDG_STATE_HOME", env.path().join("state"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn go(mut shell: std::process::Child) -> (String, String) {
    shell.stdin.take().unwrap().write_all(b"go\n").unwrap();
    let out = shell.wait_with_output().unwrap();
    (stdout(&out), stderr(&out))
}

/// A pid file naming the parent of `locksmith start` (the shell of an entrypoint), written
/// after that shell started: it may be the shell's, and stays, whatever its mtime says. Its
/// mtime set to a second before the shell started (`touch -d`, `cp -p`, `tar x`: anyone who
/// may write the file can) does not make it the previous run's: the kernel's ctime says it
/// was written after the shell started. (A pid file really left by a previous run under the
/// same PID, the restart rule's case, is made by a real container restarted:
/// `start_containers::a_restarted_containers_pid_file_naming_pid_1_goes_and_the_service_starts_as_pid_1`.)
///
/// FAILS: `locksmith start`'s restart rule (`restart_or_not` in src/cli/start.rs) compares the
/// parent's start with the lock's mtime (`Finding::modified_ms`), so the mtime set back makes
/// it remove the parent's lock, journaled as forced; it should compare the ctime (as the
/// judge's time rules do), with the clock's margin.
#[test]
fn a_pid_file_naming_the_parent_is_told_by_when_the_parent_started() {
    let env = Env::new();
    let lock = env.path().join("app.pid");

    let shell = parent_shell(&env, &lock);
    let parent = shell.id();
    std::thread::sleep(Duration::from_millis(200));
    std::fs::write(&lock, format!("{parent}\n")).unwrap();
    let (out, err) = go(shell);
    assert_eq!(out, "rc=75\n", "{err}");
    assert!(lock.exists());
    assert!(err.contains("the parent may hold it"), "{err}");
    assert_eq!(journal_reclaims(&env).len(), 0);

    let shell = parent_shell(&env, &lock);
    let parent = shell.id();
    std::thread::sleep(Duration::from_millis(200));
    std::fs::write(&lock, format!("{parent}\n")).unwrap();
    set_mtime(&lock, started_ms(parent) - 1000);
    let (out, err) = go(shell);
    assert_eq!(out, "rc=75\n", "the mtime set back: {err}");
    assert!(lock.exists(), "the mtime set back: {err}");
    assert!(err.contains("the parent may hold it"), "{err}");
    assert_eq!(journal_reclaims(&env).len(), 0);
}

/// `echo $$ > app.pid; exec locksmith start app.pid -- service`: the pid file names this very
/// process, written after it started: it is the service's, kept, and the service runs.
#[test]
fn a_pid_file_this_process_wrote_before_it_became_locksmith_start_is_kept() {
    let env = Env::new();
    let lock = env.path().join("app.pid");
    let mut c = Command::new("sh");
    c.args([
        "-c",
        r#"echo $$ > "$1"; exec "$0" start "$1" -- sh -c 'echo "$$ $(cat "$0")"' "$1""#,
        BIN,
        lock.to_str().unwrap(),
    ])
    .env("XDG_STATE_HOME", env.path().join("state"))
    .stdin(Stdio::null());
    let out = run_bounded(c, util::DEADLINE);
    util::assert_code(&out, 0);
    let printed = stdout(&out);
    let (me, written) = printed.trim().split_once(' ').unwrap();
    assert_eq!(me, written, "the service runs under the PID the file names");
    assert!(lock.exists());
    assert!(
        stderr(&out).contains("kept for COMMAND"),
        "{}",
        stderr(&out)
    );
    assert!(journal_reclaims(&env).is_empty());
}

/// In a PID namespace of its own whose files are the host's (`unshare --pid`), a pid file
/// naming PID 1 (here: `locksmith start` itself) may be any namespace's: it stays, whether
/// the judge alone calls it live (written just now) or stale (written before PID 1 started).
#[test]
fn in_a_pid_namespace_a_pid_on_a_shared_file_system_proves_nothing() {
    if !util::require_that(
        rustix::process::geteuid().is_root(),
        "a PID namespace of its own needs root",
    ) || !util::require("unshare")
    {
        return;
    }
    // Made alone: another test's namespace may judge a record naming its own, ended one,
    // whose inode number this one could be handed (see util/quiet.rs).
    let _namespace = util::quiet::making(util::quiet::Fact::PidNamespace);
    let env = Env::new();
    let lock = env.path().join("server.pid");
    let ran = env.path().join("ran");
    // Of this boot: written before it, the lock would be stale by the earlier-boot rule, which
    // holds in any PID namespace.
    for written_ago_s in [0, 60] {
        std::fs::write(&lock, "1\n").unwrap();
        util::age(&lock, written_ago_s);
        let mut c = Command::new("unshare");
        c.args(["--pid", "--fork", "--mount-proc", BIN, "start"])
            .arg(&lock)
            .args(["--", "touch"])
            .arg(&ran)
            .env("XDG_STATE_HOME", env.path().join("state"))
            .stdin(Stdio::null());
        let out = run_bounded(c, util::DEADLINE);
        util::assert_code(&out, 75);
        let err = stderr(&out);
        assert!(
            err.contains("a PID namespace of its own")
                && err.contains("not the container's own root"),
            "{err}"
        );
        assert!(lock.exists() && !ran.exists());
    }
    assert!(journal_reclaims(&env).is_empty());
}

#[test]
fn a_command_that_cannot_run() {
    let env = Env::new();
    let out = run_bounded(
        start(&env, &["nothing-here.pid", "--", "/nonexistent/service"]),
        util::DEADLINE,
    );
    util::assert_code(&out, 127);
    assert!(
        stderr(&out).contains("command not found"),
        "{}",
        stderr(&out)
    );
    let out = run_bounded(
        start(&env, &["nothing-here.pid", "--", "/etc"]),
        util::DEADLINE,
    );
    util::assert_code(&out, 126);
}

/// The start guard on this host: the service `locksmith start` started holds its kernel lock,
/// and so does a child it left running when it exited. Then the pid file (naming the service,
/// which is gone) is live by the guard, the guard is live, and another start waits; once the
/// child is killed the pid file is stale by the guard's released lock, the guard is free and
/// stays, and the next start removes the pid file and runs.
#[test]
fn a_pid_file_beside_its_start_guard_is_live_while_held_and_stale_once_released() {
    let env = Env::new();
    let lock = env.path().join("app.pid");
    let guard = env.path().join(".app.pid.locksmith-start");
    let ready = env.path().join("ready");
    // The service writes its pid file, leaves a child behind (which inherits the guard's
    // descriptor, as a daemon's workers do) and exits.
    let mut c = start(
        &env,
        &[
            lock.to_str().unwrap(),
            "--",
            "sh",
            "-c",
            r#"echo $$ > "$1"; sleep 600 & touch "$2""#,
            "service",
            lock.to_str().unwrap(),
            ready.to_str().unwrap(),
        ],
    );
    c.stdout(Stdio::null()).stderr(Stdio::null());
    let mut service = Group::spawn(c);
    assert!(service.wait(util::DEADLINE.as_secs()).success());
    assert!(ready.exists() && lock.exists());
    let child = service
        .members()
        .into_iter()
        .find(|(_, comm)| comm == "sleep")
        .expect("the service's child runs")
        .0;

    let (report, _) = env.scan_json(&[env.path()]);
    let pid_file = report.expect_lock(&lock);
    assert_eq!(pid_file.verdict, "live", "{:?}", pid_file.evidence);
    assert!(
        pid_file.evidence[0]
            .contains("its start guard .app.pid.locksmith-start is locked in the kernel")
            && pid_file.evidence[0].contains(&format!("pid {child}")),
        "{:?}",
        pid_file.evidence
    );
    assert!(pid_file.holders.iter().any(|h| h.pid == child as i64));
    let g = report.expect_lock(&guard);
    assert_eq!(
        (g.dialect.as_str(), g.verdict.as_str()),
        ("start-guard", "live")
    );
    assert!(!g.reclaimable);

    // Another start for the same pid file: in the way while the guard is held.
    let ran = env.path().join("ran");
    let out = run_bounded(
        start(
            &env,
            &[lock.to_str().unwrap(), "--", "touch", ran.to_str().unwrap()],
        ),
        util::DEADLINE,
    );
    util::assert_code(&out, 75);
    let err = stderr(&out);
    assert!(
        err.contains("app.pid stays: live: its start guard")
            && err.contains(&format!("pid {child}"))
            && err.contains("1 lock is in the way"),
        "{err}"
    );
    assert!(!ran.exists() && lock.exists());

    service.kill();
    let (report, _) = env.scan_json(&[env.path()]);
    let pid_file = report.expect_lock(&lock);
    assert_eq!(pid_file.verdict, "stale", "{:?}", pid_file.evidence);
    assert_eq!(pid_file.proofs[0].rule, "kernel-lock-released");
    assert_eq!(
        pid_file.proofs[0].facts["file"],
        guard.to_str().unwrap(),
        "{:?}",
        pid_file.proofs
    );
    let g = report.expect_lock(&guard);
    assert_eq!(
        (g.dialect.as_str(), g.verdict.as_str()),
        ("start-guard", "free")
    );
    assert!(!g.reclaimable);

    // `--scan --reclaim` never takes the guard; the next start removes the pid file and runs.
    let out = env.run(["--scan", "--reclaim", env.path().to_str().unwrap()]);
    util::assert_code(&out, 0);
    assert!(!lock.exists() && guard.exists());
    std::fs::write(&lock, format!("{child}\n")).unwrap();
    let out = run_bounded(
        start(
            &env,
            &[lock.to_str().unwrap(), "--", "touch", ran.to_str().unwrap()],
        ),
        util::DEADLINE,
    );
    util::assert_code(&out, 0);
    assert!(ran.exists() && !lock.exists() && guard.exists());
}

/// A PATH named twice has one guard: the start does not wait for itself.
#[test]
fn a_path_named_twice_has_one_start_guard() {
    let env = Env::new();
    let lock = env.path().join("twice.pid");
    let out = run_bounded(
        start(
            &env,
            &[
                lock.to_str().unwrap(),
                lock.to_str().unwrap(),
                "--",
                "echo",
                "ran",
            ],
        ),
        util::DEADLINE,
    );
    util::assert_code(&out, 0);
    assert_eq!(stdout(&out), "ran\n");
    assert!(env.path().join(".twice.pid.locksmith-start").exists());
}

/// A guard that belongs to neither the pid file's owner nor root proves nothing: anyone who
/// could write the directory could have made it, record and lock included.
#[test]
fn a_start_guard_of_another_user_is_no_evidence() {
    if !util::require_that(
        rustix::process::geteuid().is_root(),
        "giving a file to another user needs root",
    ) || !util::require("flock")
    {
        return;
    }
    let env = Env::new();
    let lock = env.path().join("svc.pid");
    let guard = env.path().join(".svc.pid.locksmith-start");
    std::fs::write(&lock, format!("{}\n", dead_pid())).unwrap();
    let record = locksmith::start_guard::Record::now(&lock, "svc".as_ref());
    std::fs::write(&guard, serde_json::to_vec(&record).unwrap()).unwrap();
    // Held, as a running service's guard is.
    let holder = Group::spawn(
        Command::new("flock")
            .arg(&guard)
            .args(["sleep", "600"])
            .stdin(Stdio::null()),
    );
    util::wait_until("flock to hold it", || {
        util::proc_locks::table().contains(&format!(" {} ", holder.pid()))
    });
    let (report, _) = env.scan_json(&[&lock]);
    assert_eq!(
        report.expect_lock(&lock).verdict,
        "live",
        "root's guard counts"
    );

    std::os::unix::fs::chown(&guard, Some(54321), Some(54321)).unwrap();
    let (report, _) = env.scan_json(&[&lock]);
    let l = report.expect_lock(&lock);
    assert_eq!(l.verdict, "stale", "{:?}", l.evidence);
    assert!(
        !l.evidence.iter().any(|e| e.contains("start guard")),
        "{:?}",
        l.evidence
    );
}
