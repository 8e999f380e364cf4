//! Who waits for a lock, with real programs that wait: `flock` (exclusive and shared), cargo
//! blocked on its package cache while another cargo holds it ("Blocking waiting for file lock
//! on package cache"), and gpg retrying a dotlock ("waiting for lock (held by N)"). Each lock
//! lists its waiters in the JSON report and the table (its notes, and the WAITERS column of
//! `-o +waiters`); `locksmith --pid N` (with or without `--scan`) answers what N holds and what
//! it waits for, with the lock's holder and verdict; a holder that is stopped, or that does not
//! reap the child it holds the lock for, is said to be stuck.

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::util::{self, Env, Group, Guard, Lock, Report, stdout, wait_for};

/// Scans `dir` until the lock at `lock` lists a waiter with PID `pid`.
fn waited_for(env: &Env, dir: &Path, lock: &Path, pid: i64) -> (Report, usize) {
    wait_for(&format!("{pid} to wait for {}", lock.display()), || {
        let (report, _) = env.scan_json(&[dir]);
        let i = report.locks.iter().position(|l| {
            l.path == lock.to_str().unwrap() && l.waiters.iter().any(|w| w.pid == pid)
        })?;
        Some((report, i))
    })
}

fn waiter(l: &Lock, pid: i64) -> &util::WaiterJson {
    l.waiters.iter().find(|w| w.pid == pid).unwrap()
}

/// `flock [ARGS] LOCK COMMAND...` in the background, in a process group of its own (flock(1)
/// runs COMMAND as its child: the whole group goes when it is dropped).
fn flock(args: &[&str], lock: &Path, command: &[&str]) -> Group {
    Group::spawn(
        Command::new("flock")
            .args(args)
            .arg(lock)
            .args(command)
            .stdin(Stdio::null())
            .stdout(Stdio::null()),
    )
}

/// A child's pid, as the report writes pids.
fn pid_of(pid: impl Into<i64>) -> i64 {
    pid.into()
}

#[test]
fn flock_waiters_are_listed_with_the_call_they_are_blocked_in() {
    if !util::require("flock") {
        return;
    }
    let env = Env::new();
    let dir = env.path().join("locks");
    std::fs::create_dir(&dir).unwrap();
    let lock = dir.join("job.lock");
    std::fs::write(&lock, "").unwrap();
    let holder = flock(&[], &lock, &["sleep", "600"]);
    wait_for("flock to hold it", || {
        let (report, _) = env.scan_json(&[&dir]);
        let l = report.lock(&lock)?;
        (l.verdict == "live").then_some(())
    });
    let writer = flock(&[], &lock, &["true"]);
    let reader = flock(&["--shared"], &lock, &["true"]);
    waited_for(&env, &dir, &lock, pid_of(writer.pid()));
    let (report, i) = waited_for(&env, &dir, &lock, pid_of(reader.pid()));
    let l = &report.locks[i];
    assert_eq!(l.verdict, "live");
    assert_eq!(l.holders[0].pid, pid_of(holder.pid()));
    let w = waiter(l, pid_of(writer.pid()));
    assert_eq!(
        (w.how.as_str(), w.mode.as_deref()),
        ("flock", Some("write"))
    );
    assert_eq!(w.name.as_deref(), Some("flock"));
    assert!(w.cmd.iter().any(|a| a == "true"), "{w:?}");
    assert!(w.started.is_some());
    assert!(w.evidence.contains("/proc/locks"), "{w:?}");
    let r = waiter(l, pid_of(reader.pid()));
    assert_eq!(r.mode.as_deref(), Some("read"));
    if rustix::process::geteuid().is_root() {
        // The call each is blocked in (reading another's syscall needs the right to trace it).
        assert!(
            w.blocked_in.as_deref().unwrap().starts_with("flock(")
                && w.blocked_in.as_deref().unwrap().contains("LOCK_EX"),
            "{w:?}"
        );
        assert!(
            r.blocked_in.as_deref().unwrap().contains("LOCK_SH"),
            "{r:?}"
        );
    }
    assert!(
        l.holder_stuck.is_none(),
        "a sleeping holder is not stuck: {l:?}"
    );

    // The table says it too.
    let out = env.scan(&[] as &[&str], &dir);
    let table = stdout(&out);
    assert!(
        table.contains(&format!(
            "waiting for {}: {} flock (flock, write",
            lock.display(),
            writer.pid()
        )),
        "{table}"
    );

    // What is the writer waiting for? The lock, its holder, its verdict.
    let out = env.run(["--scan", "--pid", &writer.pid().to_string()]);
    util::assert_code(&out, 0);
    let text = stdout(&out);
    let first = text.lines().next().unwrap();
    assert!(
        first.starts_with(&format!(
            "process {} (flock) waits for {}",
            writer.pid(),
            lock.display()
        )),
        "{text}"
    );
    let out = env.run(["--scan", "--json", "--pid", &writer.pid().to_string()]);
    let report = util::parse_report(&out);
    assert_eq!(report.locks.len(), 1, "{:?}", report.locks);
    let l = report.expect_lock(&lock);
    assert_eq!(l.verdict, "live");
    assert_eq!(l.holders[0].pid, pid_of(holder.pid()));
    assert!(l.waiters.iter().any(|w| w.pid == pid_of(writer.pid())));

    // A process waiting for nothing says so.
    let sleeper = util::sleeper();
    let out = env.run(["--scan", "--pid", &sleeper.pid().to_string()]);
    util::assert_code(&out, 0);
    assert!(
        stdout(&out).contains("is not waiting for a lock"),
        "{}",
        stdout(&out)
    );
    let out = env.run(["--scan", "--json", "--pid", &sleeper.pid().to_string()]);
    assert!(util::parse_report(&out).locks.is_empty());
    let out = env.run(["--scan", "--pid", &util::dead_pid().to_string()]);
    util::assert_code(&out, 2);

    // Stopped, the holder is stuck: it will not let go by itself.
    let stop = |sig| {
        rustix::process::kill_process(rustix::process::Pid::from_raw(holder.pid()).unwrap(), sig)
            .unwrap()
    };
    stop(rustix::process::Signal::STOP);
    let stuck = wait_for("the holder to be seen stopped", || {
        let (report, _) = env.scan_json(&[&dir]);
        report.lock(&lock)?.holder_stuck.clone()
    });
    stop(rustix::process::Signal::CONT);
    assert_eq!(stuck.pid, pid_of(holder.pid()));
    assert!(stuck.why.contains("is stopped"), "{stuck:?}");
}

#[test]
fn pid_says_what_a_process_holds_and_the_waiters_column_who_waits() {
    if !util::require("flock") {
        return;
    }
    let env = Env::new();
    let dir = env.path().join("locks");
    std::fs::create_dir(&dir).unwrap();
    let lock = dir.join("job.lock");
    std::fs::write(&lock, "").unwrap();
    let holder = flock(&[], &lock, &["sleep", "600"]);
    wait_for("flock to hold it", || {
        let (report, _) = env.scan_json(&[&dir]);
        (report.lock(&lock)?.verdict == "live").then_some(())
    });
    let writer = flock(&[], &lock, &["true"]);
    waited_for(&env, &dir, &lock, pid_of(writer.pid()));

    // What does the holder hold? As lslocks -p: the lock, how, and its report; no --scan
    // needed.
    for args in [&["--pid"][..], &["--scan", "--pid"]] {
        let mut args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        args.push(holder.pid().to_string());
        let out = env.run(&args);
        util::assert_code(&out, 0);
        let text = stdout(&out);
        assert!(
            text.lines().next().unwrap().starts_with(&format!(
                "process {} (flock) holds {} (flock write)",
                holder.pid(),
                lock.display()
            )),
            "{args:?}: {text}"
        );
        assert!(text.contains("● live"), "{text}");
    }
    let out = env.run(["--pid", &holder.pid().to_string(), "--json"]);
    let report = util::parse_report(&out);
    assert_eq!(report.locks.len(), 1, "{:?}", report.locks);
    assert_eq!(
        report.expect_lock(&lock).holders[0].pid,
        pid_of(holder.pid())
    );

    // The WAITERS column, added to the default ones with +.
    let out = env.scan(&["-o", "+waiters"], &dir);
    let text = stdout(&out);
    let mut lines = text.lines();
    assert!(lines.next().unwrap().ends_with("  WAITERS"), "{text}");
    let row = lines.next().unwrap();
    assert!(
        row.starts_with("● live") && row.ends_with(&format!("{} flock", writer.pid())),
        "{text}"
    );

    // Rows only on stdout without headings: a shell loop reads paths and nothing else; the
    // notes and the summary are on stderr.
    let out = env.scan(&["-o", "path", "--noheadings"], &dir);
    assert_eq!(stdout(&out), format!("{}\n", lock.display()));
    let err = util::stderr(&out);
    assert!(
        err.contains("waiting for") && err.contains("1 lock: "),
        "{err}"
    );
}

/// A holder that took the lock for a child which has exited, and that does not reap it (a
/// `flock CMD` wrapper that is not noticing): stuck.
#[test]
fn a_holder_that_does_not_reap_the_child_it_holds_the_lock_for_is_stuck() {
    if !util::require("python3") {
        return;
    }
    let env = Env::new();
    let lock = env.path().join("build.lock");
    std::fs::write(&lock, "").unwrap();
    let mut holder = Guard::spawn(
        Command::new("python3")
            .args([
                "-c",
                "import fcntl, os, sys, time\n\
                 f = open(sys.argv[1], 'w'); fcntl.flock(f, fcntl.LOCK_EX)\n\
                 if os.fork() == 0: os._exit(0)\n\
                 print('ready', flush=True); time.sleep(600)",
            ])
            .arg(&lock)
            .stdout(Stdio::piped())
            .stdin(Stdio::null()),
    );
    let mut line = String::new();
    BufReader::new(holder.0.as_mut().unwrap().stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let stuck = wait_for("the holder's child to be a zombie", || {
        let (report, _) = env.scan_json(&[&lock]);
        report.lock(&lock)?.holder_stuck.clone()
    });
    assert_eq!(stuck.pid, holder.pid() as i64);
    assert!(stuck.why.contains("not reaped"), "{stuck:?}");
}

/// A local registry that accepts connections and never answers: a cargo updating its index
/// from it holds the package cache lock for as long as it waits.
struct SilentRegistry {
    port: u16,
}

impl SilentRegistry {
    fn start() -> SilentRegistry {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        std::thread::spawn(move || {
            let mut held = Vec::new();
            for conn in listener.incoming().flatten() {
                held.push(conn);
            }
        });
        SilentRegistry { port }
    }
}

/// A cargo project depending on one crate of the registry.
fn project(dir: &Path, name: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::create_dir_all(p.join("src")).unwrap();
    std::fs::write(
        p.join("Cargo.toml"),
        format!(
            "[package]\nname = \"{name}\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\nserde = \"1\"\n"
        ),
    )
    .unwrap();
    std::fs::write(p.join("src/main.rs"), "fn main() {}\n").unwrap();
    p
}

#[test]
fn cargo_waits_for_the_package_cache_another_cargo_holds() {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let env = Env::new();
    let home = env.path().join("cargo-home");
    std::fs::create_dir(&home).unwrap();
    let registry = SilentRegistry::start();
    std::fs::write(
        home.join("config.toml"),
        format!(
            "[source.crates-io]\nreplace-with = \"silent\"\n\n[source.silent]\nregistry = \"sparse+http://127.0.0.1:{}/index/\"\n\n[http]\ntimeout = 600\n\n[net]\nretry = 0\n",
            registry.port
        ),
    )
    .unwrap();
    let run = |name: &str| {
        let p = project(env.path(), name);
        let mut c = Command::new(&cargo);
        c.arg("generate-lockfile")
            .current_dir(&p)
            .env("CARGO_HOME", &home)
            .env_remove("CARGO_TARGET_DIR")
            .env("CARGO_TERM_COLOR", "never")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        Guard::spawn(&mut c)
    };
    let cache = home.join(".package-cache");
    let first = run("first");
    wait_for("the first cargo to hold the package cache", || {
        let (report, _) = env.scan_json(&[&home]);
        let l = report.lock(&cache)?;
        (l.verdict == "live" && l.holders.iter().any(|h| h.pid == pid_of(first.pid())))
            .then_some(())
    });
    let mut second = run("second");
    let (report, i) = waited_for(&env, &home, &cache, pid_of(second.pid()));
    let l = &report.locks[i];
    assert_eq!(l.dialect, "tool-flock");
    assert_eq!(l.process.as_ref().map(|p| p.pid), Some(pid_of(first.pid())));
    assert_eq!(l.process.as_ref().map(|p| p.name.as_str()), Some("cargo"));
    let w = waiter(l, pid_of(second.pid()));
    assert_eq!(w.name.as_deref(), Some("cargo"));
    assert_eq!(w.how, "flock");

    // What is the second cargo waiting for? The package cache, held by the first.
    let out = env.run(["--scan", "--json", "--pid", &second.pid().to_string()]);
    let report = util::parse_report(&out);
    let l = report.expect_lock(&cache);
    assert_eq!(l.verdict, "live");
    assert!(
        l.holders.iter().any(|h| h.pid == pid_of(first.pid())),
        "{l:?}"
    );

    // It is the real wait: cargo says so itself.
    let mut stderr = BufReader::new(second.0.as_mut().unwrap().stderr.take().unwrap());
    let said = wait_for("cargo to say it waits", || {
        let mut line = String::new();
        stderr.read_line(&mut line).ok()?;
        line.contains("Blocking waiting for file lock")
            .then_some(line)
    });
    assert!(said.contains("package cache"), "{said}");
}

#[test]
fn gpg_waits_for_a_dotlock_another_process_holds() {
    if !util::require("gpg") || !util::require("gpgconf") {
        return;
    }
    let env = Env::new();
    let home = env.path().join("gnupg");
    std::fs::create_dir(&home).unwrap();
    std::fs::set_permissions(&home, std::fs::Permissions::from_mode(0o700)).unwrap();
    struct Agents(PathBuf);
    impl Drop for Agents {
        fn drop(&mut self) {
            let _ = Command::new("gpgconf")
                .arg("--homedir")
                .arg(&self.0)
                .args(["--kill", "all"])
                .status();
        }
    }
    let _agents = Agents(home.clone());
    let gen_key = |uid: &str| util::gpg_gen_key(&home, &[], uid);
    let out = util::run_bounded(gen_key("A <a@example.org>"), util::DEADLINE);
    assert!(out.status.success(), "{}", util::stderr(&out));

    // The keyring's dotlock, held by a live process of this host, made as GnuPG makes it: its
    // handle written, then linked to the lock.
    let owner = util::sleeper();
    let lock = home.join("pubring.kbx.lock");
    let host = rustix::system::uname()
        .nodename()
        .to_string_lossy()
        .into_owned();
    let handle = home.join(format!(".#lk0x000055d1c2a3b4c0.{host}.{}", owner.pid()));
    std::fs::write(&handle, format!("{:10}\n{host}\n", owner.pid())).unwrap();
    std::fs::hard_link(&handle, &lock).unwrap();
    let mut gpg = Guard::spawn(&mut gen_key("B <b@example.org>"));
    let mut stderr = BufReader::new(gpg.0.as_mut().unwrap().stderr.take().unwrap());
    let said = wait_for("gpg to wait", || {
        let mut line = String::new();
        stderr.read_line(&mut line).ok()?;
        line.contains("waiting for lock").then_some(line)
    });
    assert!(said.contains(&format!("held by {}", owner.pid())), "{said}");
    let (report, i) = waited_for(&env, &home, &lock, pid_of(gpg.pid()));
    let l = &report.locks[i];
    assert_eq!(l.verdict, "live");
    assert_eq!(l.process.as_ref().map(|p| p.pid), Some(pid_of(owner.pid())));
    let w = waiter(l, pid_of(gpg.pid()));
    assert_eq!(w.how, "dotlock");
    assert_eq!(w.name.as_deref(), Some("gpg"));
    assert!(w.evidence.contains("GnuPG lock handle"), "{w:?}");
    assert!(
        w.blocked_in.as_deref().unwrap_or("").contains("select"),
        "{w:?}"
    );

    // One held dotlock is one row: the holder's handle (linked to it) and the waiting gpg's
    // handle are part of it, not locks of their own.
    let handles: Vec<&str> = report
        .locks
        .iter()
        .map(|l| l.path.as_str())
        .filter(|p| p.contains("/.#lk0x"))
        .collect();
    assert!(handles.is_empty(), "handles listed as locks: {handles:?}");
    assert_eq!(
        report
            .locks
            .iter()
            .filter(|l| l.path.ends_with(".lock"))
            .count(),
        1,
        "{:?}",
        report.locks
    );

    // What is gpg waiting for? The keyring's lock, held by the sleeper.
    let out = env.run(["--scan", "--json", "--pid", &gpg.pid().to_string()]);
    let report = util::parse_report(&out);
    let l = report.expect_lock(&lock);
    assert_eq!(l.verdict, "live");
    assert_eq!(
        l.owner.as_ref().and_then(|o| o.pid),
        Some(pid_of(owner.pid()))
    );
}
