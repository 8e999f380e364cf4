//! `--ask-hosts` against a real second "host": sshd on 127.0.0.1 in a UTS namespace of its own
//! whose host name is `node17`, reached through an ssh config file of the test's own. Locks
//! written under that host name by real programs (emacs in the same UTS namespace) are
//! `foreign` here until node17 is asked; then `live` while held and `stale` after SIGKILL.
//! Hosts that cannot answer keep their locks `foreign`, with the reason, in bounded time.

use std::fs;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::util::sshd::{self, Sshd};
use crate::util::*;

/// A second host, its ssh config, and a locksmith configuration that asks it.
pub(crate) struct Node {
    /// Kept running while the node is in use.
    _server: Sshd,
    ssh_config: PathBuf,
}

pub(crate) fn node17() -> Option<Node> {
    if let Some(why) = sshd::unavailable() {
        skip(why);
        return None;
    }
    let sshd = Sshd::start("node17");
    // A key that is not the server's, for the "host key changed" case.
    let other = sshd.path("other_key");
    let out = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-f"])
        .arg(&other)
        .output()
        .unwrap();
    assert!(out.status.success());
    let other_pub = fs::read_to_string(sshd.path("other_key.pub")).unwrap();
    let other_pub: Vec<&str> = other_pub.split_whitespace().take(2).collect();
    fs::write(
        sshd.path("wrong_known_hosts"),
        format!("node17 {}\n", other_pub.join(" ")),
    )
    .unwrap();
    let mut cfg = sshd.client_block("node17", "known_hosts");
    cfg += &sshd
        .client_block("node-badkey", "wrong_known_hosts")
        .replace(
            &format!("HostKeyAlias {}", sshd.hostname),
            "HostKeyAlias node17",
        );
    cfg += &format!(
        "Host node-down\n  HostName 127.0.0.1\n  Port {}\n  User root\n  BatchMode yes\n",
        sshd::free_port()
    );
    let ssh_config = sshd.path("ssh_config");
    fs::write(&ssh_config, cfg).unwrap();
    Some(Node {
        _server: sshd,
        ssh_config,
    })
}

impl Node {
    /// A locksmith configuration file asking through this node's ssh config.
    pub(crate) fn config(&self, env: &Env, program: &str, extra: &str) -> PathBuf {
        let path = env.path().join("ask.json");
        fs::write(
            &path,
            format!(
                r#"{{"ask_hosts": {{"ssh_args": ["-F", "{}"], "program": "{program}", "timeout_secs": 20, "connect_timeout_secs": 5{extra}}}}}"#,
                self.ssh_config.display()
            ),
        )
        .unwrap();
        path
    }
}

/// `locksmith --scan --json --config CFG [EXTRA...] ROOT`, parsed.
fn scan(env: &Env, cfg: &Path, extra: &[&str], root: &Path) -> Report {
    let mut args: Vec<&std::ffi::OsStr> = vec![
        "--scan".as_ref(),
        "--json".as_ref(),
        "--config".as_ref(),
        cfg.as_os_str(),
    ];
    args.extend(extra.iter().map(std::ffi::OsStr::new));
    args.push(root.as_os_str());
    parse_report(&env.run(args))
}

/// `locksmith --scan --reclaim --config CFG [EXTRA...] ROOT`, which must succeed.
fn reclaim(env: &Env, cfg: &Path, extra: &[&str], root: &Path) -> Output {
    let mut args: Vec<&std::ffi::OsStr> = vec![
        "--scan".as_ref(),
        "--reclaim".as_ref(),
        "--config".as_ref(),
        cfg.as_os_str(),
    ];
    args.extend(extra.iter().map(std::ffi::OsStr::new));
    args.push(root.as_os_str());
    let out = env.run(args);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    out
}

/// emacs visiting `file` with a modified buffer, in a UTS namespace called `host`: it writes
/// the lock `.#NAME` -> `user@host.PID` next to the file, as on a machine of that name.
fn emacs_on(host: &str, file: &Path) -> Group {
    Group::spawn(
        Command::new("unshare")
            .args(["-u", "sh", "-c"])
            .arg(format!(
                "hostname {host} && exec emacs --batch --eval '(progn (find-file \"{}\") (insert \"x\") (sleep-for 600))'",
                file.display()
            ))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    )
}

#[test]
fn a_foreign_emacs_lock_is_proven_live_then_stale_by_asking_its_host() {
    if !require("emacs") || !require("unshare") {
        return;
    }
    let Some(node) = node17() else { return };
    let env = Env::new();
    let work = env.path().join("shared");
    fs::create_dir(&work).unwrap();
    let file = work.join("notes.txt");
    fs::write(&file, "hello\n").unwrap();
    let lock = work.join(".#notes.txt");
    let mut emacs = emacs_on("node17", &file);
    let target = wait_for("emacs's lock", || fs::read_link(&lock).ok());
    let target = target.to_string_lossy().into_owned();
    assert!(target.contains("@node17."), "{target}");
    let pid: i64 = target
        .rsplit('.')
        .next()
        .and_then(|s| s.split(':').next())
        .and_then(|s| s.parse().ok())
        .unwrap();
    let cfg = node.config(&env, BIN, "");

    // Without asking: another host, so foreign.
    let r = scan(&env, &cfg, &[], &work);
    let l = r.expect_lock(&lock);
    assert_eq!(l.verdict, "foreign", "{l:#?}");

    // Asking node17: its emacs is alive.
    let r = scan(&env, &cfg, &["--ask-hosts"], &work);
    let l = r.expect_lock(&lock);
    assert_eq!(l.verdict, "live", "{l:#?}");
    assert!(
        l.evidence[0].starts_with(&format!("asked node17 over ssh: process {pid} (emacs")),
        "{l:#?}"
    );
    // A reclaim asks again and keeps it.
    reclaim(&env, &cfg, &["--ask-hosts"], &work);
    assert!(fs::symlink_metadata(&lock).is_ok());

    // The owner is SIGKILLed on node17: asking proves it gone.
    emacs.kill();
    assert!(!alive(pid as i32));
    let r = scan(&env, &cfg, &["--ask-hosts"], &work);
    let l = r.expect_lock(&lock);
    assert_eq!(l.verdict, "stale", "{l:#?}");
    assert_eq!(
        l.evidence[0],
        format!("asked node17 over ssh: no process {pid} (kill({pid}, 0): ESRCH)")
    );
    // Without asking it stays foreign: nothing is removed on a foreign verdict.
    reclaim(&env, &cfg, &[], &work);
    assert!(fs::symlink_metadata(&lock).is_ok());
    // With asking, reclaim asks again right before removal and removes it.
    let out = reclaim(&env, &cfg, &["--ask-hosts"], &work);
    assert!(fs::symlink_metadata(&lock).is_err(), "{}", stdout(&out));
    let journal = env.journal();
    assert_eq!(journal.len(), 1, "{journal:#?}");
    assert!(
        journal[0]["evidence"][0]
            .as_str()
            .unwrap()
            .starts_with("asked node17 over ssh: no process"),
        "{journal:#?}"
    );
    drop(node);
}

#[test]
fn configured_hosts_are_asked_without_the_flag() {
    let Some(node) = node17() else { return };
    let env = Env::new();
    let work = env.path().join("shared");
    fs::create_dir(&work).unwrap();
    // An emacs lock of node17 naming a process that does not exist there (nor here).
    let dead = dead_pid();
    std::os::unix::fs::symlink(format!("alice@node17.{dead}"), work.join(".#a.txt")).unwrap();
    let cfg = node.config(&env, BIN, r#", "hosts": ["node1*"]"#);
    let r = scan(&env, &cfg, &[], &work);
    let l = r.expect_lock(&work.join(".#a.txt"));
    assert_eq!(l.verdict, "stale", "{l:#?}");
    assert!(l.evidence[0].starts_with("asked node17 over ssh: no process"));
    // A host that is not listed is not asked.
    std::os::unix::fs::symlink(format!("alice@laptop.{dead}"), work.join(".#b.txt")).unwrap();
    let r = scan(&env, &cfg, &[], &work);
    let l = r.expect_lock(&work.join(".#b.txt"));
    assert_eq!(l.verdict, "foreign", "{l:#?}");
    assert!(!l.evidence[0].contains("asked"), "{l:#?}");
}

#[test]
fn hosts_that_cannot_answer_keep_their_locks_foreign_with_the_reason() {
    let Some(node) = node17() else { return };
    let env = Env::new();
    let work = env.path().join("shared");
    fs::create_dir(&work).unwrap();
    let dead = dead_pid();
    let mk = |name: &str, host: &str| {
        let p = work.join(format!(".#{name}"));
        std::os::unix::fs::symlink(format!("bob@{host}.{dead}"), &p).unwrap();
        p
    };
    let badkey = mk("k.txt", "node-badkey");
    let down = mk("d.txt", "node-down");
    let unknown = mk("u.txt", "nosuchhost.invalid");

    let cfg = node.config(&env, BIN, "");
    let started = Instant::now();
    let r = scan(&env, &cfg, &["--ask-hosts"], &work);
    assert!(started.elapsed() < Duration::from_secs(30));
    let reason = |p: &Path| {
        let l = r.expect_lock(p);
        assert_eq!(l.verdict, "foreign", "{l:#?}");
        l.evidence[0].clone()
    };
    assert!(
        reason(&badkey).contains("host key is not known or has changed"),
        "{}",
        reason(&badkey)
    );
    assert!(reason(&down).contains("unreachable"), "{}", reason(&down));
    assert!(
        reason(&unknown).contains("unreachable"),
        "{}",
        reason(&unknown)
    );

    // node17 without locksmith at the configured path.
    let lock = mk("n.txt", "node17");
    let cfg = node.config(&env, "/nonexistent/locksmith", "");
    let r = scan(&env, &cfg, &["--ask-hosts"], &work);
    let l = r.expect_lock(&lock);
    assert_eq!(l.verdict, "foreign", "{l:#?}");
    assert!(
        l.evidence[0].contains("locksmith is not installed there"),
        "{l:#?}"
    );
}

#[test]
fn a_host_that_never_answers_is_given_up_in_bounded_time() {
    if let Some(why) = sshd::unavailable() {
        return skip(why);
    }
    // Accepts the connection and never says a word.
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    let env = Env::new();
    let ssh_config = env.path().join("ssh_config");
    fs::write(
        &ssh_config,
        format!("Host quiet\n  HostName 127.0.0.1\n  Port {port}\n"),
    )
    .unwrap();
    let cfg = env.path().join("ask.json");
    fs::write(
        &cfg,
        format!(
            r#"{{"ask_hosts": {{"ssh_args": ["-F", "{}"], "timeout_secs": 2, "connect_timeout_secs": 30}}}}"#,
            ssh_config.display()
        ),
    )
    .unwrap();
    let work = env.path().join("shared");
    fs::create_dir(&work).unwrap();
    let lock = work.join(".#q.txt");
    std::os::unix::fs::symlink(format!("bob@quiet.{}", dead_pid()), &lock).unwrap();
    let started = Instant::now();
    let r = scan(&env, &cfg, &["--ask-hosts"], &work);
    let took = started.elapsed();
    let l = r.expect_lock(&lock);
    assert_eq!(l.verdict, "foreign", "{l:#?}");
    assert!(l.evidence[0].contains("no answer in time"), "{l:#?}");
    assert!(took < Duration::from_secs(15), "took {took:?}");
    drop(silent);
}

#[test]
fn inspect_answers_and_changes_nothing() {
    let env = Env::new();
    let me = std::process::id();
    let out = env.run([
        "inspect",
        "--json",
        "--pid",
        &me.to_string(),
        "--pid",
        &dead_pid().to_string(),
        "--pid",
        "-1",
        "--expect",
        &comm(me as i32),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["version"], 1);
    let ps = v["processes"].as_array().unwrap();
    assert_eq!(ps[0]["state"], "alive");
    assert_eq!(ps[0]["expected"], true);
    assert_eq!(ps[1]["state"], "absent");
    assert_eq!(ps[2]["state"], "invalid");
    let out = env.run(["inspect", "--pid", "1x"]);
    assert_eq!(out.status.code(), Some(2));
}

/// A process in a UTS namespace called `host` (a program of that "machine").
fn sleeper_on(host: &str) -> Group {
    Group::spawn(
        Command::new("unshare")
            .args(["-u", "sh", "-c"])
            .arg(format!("hostname {host} && exec sleep 600"))
            .stdin(Stdio::null()),
    )
}

#[test]
fn locksmith_records_of_another_host_are_settled_by_asking_it() {
    let Some(node) = node17() else { return };
    let env = Env::new();
    let work = env.path().join("shared");
    fs::create_dir(&work).unwrap();
    let cfg = node.config(&env, BIN, "");

    // A real `locksmith lock` on node17 (this kernel): its kernel lock settles it, asked or not.
    let held = work.join("job.lock");
    let mut holder = Group::spawn(
        Command::new("unshare")
            .args(["-u", "sh", "-c"])
            .arg(format!(
                "hostname node17 && exec {} lock {} -- sleep 600",
                BIN,
                held.display()
            ))
            .stdin(Stdio::null()),
    );
    wait_for("the engine's record", || {
        fs::read_to_string(&held)
            .ok()
            .filter(|t| t.contains("\"node17\""))
    });
    let r = scan(&env, &cfg, &["--ask-hosts"], &work);
    assert_eq!(r.expect_lock(&held).verdict, "live", "{r:#?}");
    holder.kill();
    let r = scan(&env, &cfg, &["--ask-hosts"], &work);
    let l = r.expect_lock(&held);
    assert_eq!(l.verdict, "stale", "{l:#?}");
    assert!(!l.evidence[0].contains("asked"), "{l:#?}");
    fs::remove_file(&held).unwrap();

    // A Zero securefile record (PID, CreatedAt, Hostname) of a process on node17: asked.
    let mut owner = sleeper_on("node17");
    let pid = wait_for("the sleep on node17", || {
        group_members(owner.pid())
            .into_iter()
            .find(|(_, name)| name == "sleep")
            .map(|(pid, _)| pid)
    });
    let zero = work.join("zero.lock");
    let created = jiff::Timestamp::now().to_string();
    fs::write(
        &zero,
        format!(r#"{{"PID":{pid},"CreatedAt":"{created}","Hostname":"node17"}}"#),
    )
    .unwrap();
    asked_live_then_stale(&env, &cfg, &work, &zero, pid.into(), "sleep)", || {
        owner.kill()
    });

    // An engine record of node17 from a boot that is over: node17's boot id differs.
    let old = work.join("old.lock");
    fs::write(
        &old,
        format!(
            r#"{{"pid":{},"hostname":"node17","boot_id":"00000000-1111-2222-3333-444444444444","start_time":5,"created_at":"{created}","token":"0123456789abcdef0123456789abcdef","tool":"locksmith/0.1.0"}}"#,
            std::process::id()
        ),
    )
    .unwrap();
    let r = scan(&env, &cfg, &["--ask-hosts"], &work);
    let l = r.expect_lock(&old);
    assert_eq!(l.verdict, "stale", "{l:#?}");
    assert!(l.evidence[0].contains("has booted again"), "{l:#?}");
}

#[test]
fn a_soft_file_lock_of_another_host_is_proven_by_asking_it() {
    let Some(py) = python_with_filelock4() else {
        return;
    };
    let Some(node) = node17() else { return };
    let env = Env::new();
    let work = env.path().join("shared");
    fs::create_dir(&work).unwrap();
    let lock = work.join("train.lock");
    let mut job = hold_soft_file_lock(&py, &lock, Some("node17"));
    let pid: i64 = fs::read_to_string(&lock)
        .unwrap()
        .lines()
        .next()
        .and_then(|l| l.trim().parse().ok())
        .unwrap();
    let cfg = node.config(&env, BIN, "");
    let r = scan(&env, &cfg, &[], &work);
    assert_eq!(r.expect_lock(&lock).verdict, "foreign", "{r:#?}");
    asked_live_then_stale(&env, &cfg, &work, &lock, pid, "python", || job.kill());
}

/// Asking node17 proves `lock` live, its owner `pid` named `program...` in the evidence; after
/// `kill`, asking proves it stale.
fn asked_live_then_stale(
    env: &Env,
    cfg: &Path,
    work: &Path,
    lock: &Path,
    pid: i64,
    program: &str,
    kill: impl FnOnce(),
) {
    let r = scan(env, cfg, &["--ask-hosts"], work);
    let l = r.expect_lock(lock);
    assert_eq!(l.verdict, "live", "{l:#?}");
    assert!(
        l.evidence[0].starts_with(&format!("asked node17 over ssh: process {pid} ({program}")),
        "{l:#?}"
    );
    kill();
    let r = scan(env, cfg, &["--ask-hosts"], work);
    let l = r.expect_lock(lock);
    assert_eq!(l.verdict, "stale", "{l:#?}");
    assert!(
        l.evidence[0].contains(&format!("no process {pid}")),
        "{l:#?}"
    );
}
