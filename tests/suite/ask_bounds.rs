//! `--ask-hosts` cannot be amplified by lock files: a local user (uid 65534, via `setpriv`)
//! fills a sticky world-writable directory with emacs locks, and root scans and reclaims it.
//! The ssh that locksmith runs is a wrapper that logs each call, so the connections are counted:
//! - 40 stale locks naming one host (a real second host: sshd in a UTS namespace called
//!   `node17`): one connection to ask and one to ask again before the removals, not one per
//!   lock (before: 41);
//! - 40 locks naming 40 distinct hosts: at most `max_hosts` (32 by default) are asked, the
//!   others stay `foreign` saying why (before: 40 connections);
//! - hosts that never answer: the whole round ends at `deadline_secs`, however many hosts there
//!   are.
//!
//! Needs root (to switch users); elsewhere it skips with a message.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::ask_hosts::node17;
use crate::util::*;

/// A sticky, world-writable directory in which uid 65534 made `.#fN.txt` -> `bob@HOST.PID`
/// for each host of `hosts(N)`, N in 0..count.
fn hostile_locks(env: &Env, count: usize, hosts: &str) -> Option<PathBuf> {
    if !can_act_as_nobody() {
        return None;
    }
    let shared = sticky_dir(env, "shared");
    let script = format!(
        "import os, sys\n\
         for i in range({count}):\n    \
             os.symlink('bob@%s.{pid}' % ({hosts}), os.path.join(sys.argv[1], '.#f%02d.txt' % i))\n",
        pid = dead_pid()
    );
    assert!(python_as_nobody(&script, &[shared.as_os_str()]).success());
    Some(shared)
}

/// An ssh that logs its arguments (one line per call) to `log`, then runs `then`.
fn logging_ssh(env: &Env, log: &Path, then: &str) -> PathBuf {
    let path = env.path().join("ssh-wrapper");
    fs::write(
        &path,
        format!(
            "#!/bin/sh\nprintf '%s\\n' \"$*\" >> '{}'\n{then}\n",
            log.display()
        ),
    )
    .unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
    path
}

fn calls(log: &Path) -> Vec<String> {
    fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

fn run(env: &Env, args: &[&std::ffi::OsStr]) -> std::process::Output {
    run_bounded(
        {
            let mut c = env.cmd(args);
            c.stdin(std::process::Stdio::null());
            c
        },
        Duration::from_secs(120),
    )
}

/// `locksmith --scan --json --ask-hosts --config CFG SHARED`.
fn scan_asking(env: &Env, cfg: &Path, shared: &Path) -> std::process::Output {
    run(
        env,
        &[
            "--scan".as_ref(),
            "--json".as_ref(),
            "--ask-hosts".as_ref(),
            "--config".as_ref(),
            cfg.as_os_str(),
            shared.as_os_str(),
        ],
    )
}

#[test]
fn a_reclaim_asks_each_host_once_whatever_the_number_of_its_locks() {
    let env = Env::new();
    let Some(shared) = hostile_locks(&env, 40, "'node17'") else {
        return;
    };
    let Some(node) = node17() else { return };
    let log = env.path().join("ssh.log");
    let ssh = logging_ssh(&env, &log, "exec ssh \"$@\"");
    let cfg = node.config(&env, BIN, &format!(r#", "ssh": "{}""#, ssh.display()));
    let out = run(
        &env,
        &[
            "--scan".as_ref(),
            "--reclaim".as_ref(),
            "--ask-hosts".as_ref(),
            "--config".as_ref(),
            cfg.as_os_str(),
            shared.as_os_str(),
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        stdout(&out),
        stderr(&out)
    );
    let left: Vec<_> = fs::read_dir(&shared).unwrap().collect();
    assert!(left.is_empty(), "{left:?}\n{}", stdout(&out));
    assert_eq!(env.journal().len(), 40);
    let calls = calls(&log);
    assert_eq!(
        calls.len(),
        2,
        "one connection to ask node17, one to ask it again before removing: {calls:#?}"
    );
    // Each call asks about the PID of all 40 locks at once.
    assert!(calls.iter().all(|c| c.contains("node17 ")), "{calls:#?}");
    drop(node);
}

#[test]
fn lock_files_naming_many_hosts_get_at_most_max_hosts_asked() {
    let env = Env::new();
    let Some(shared) = hostile_locks(&env, 40, "'host%02d' % i") else {
        return;
    };
    let log = env.path().join("ssh.log");
    let ssh = logging_ssh(
        &env,
        &log,
        "echo 'ssh: Could not resolve hostname: Name or service not known' >&2; exit 255",
    );
    let cfg = env.path().join("ask.json");
    fs::write(
        &cfg,
        format!(r#"{{"ask_hosts": {{"ssh": "{}"}}}}"#, ssh.display()),
    )
    .unwrap();
    let (report, out) = {
        let out = run(
            &env,
            &[
                "--scan".as_ref(),
                "--json".as_ref(),
                "--ask-hosts".as_ref(),
                "--config".as_ref(),
                cfg.as_os_str(),
                shared.as_os_str(),
            ],
        );
        (parse_report(&out), out)
    };
    let calls = calls(&log);
    assert_eq!(calls.len(), 32, "{calls:#?}");
    assert_eq!(report.locks.len(), 40, "{}", stderr(&out));
    let not_asked: Vec<&str> = report
        .locks
        .iter()
        .inspect(|l| assert_eq!(l.verdict, "foreign", "{l:#?}"))
        .map(|l| l.evidence[0].as_str())
        .filter(|e| e.contains("was not asked over ssh"))
        .collect();
    assert_eq!(not_asked.len(), 8, "{:#?}", report.locks);
    assert!(
        not_asked[0].contains("40 hosts were to be asked, and one round asks at most 32"),
        "{not_asked:#?}"
    );
    // The hosts asked are the first 32 by name.
    assert!(calls.iter().any(|c| c.contains(" host00 ")), "{calls:#?}");
    assert!(!calls.iter().any(|c| c.contains(" host39 ")), "{calls:#?}");
}

#[test]
fn the_whole_round_of_asking_ends_at_its_deadline() {
    let env = Env::new();
    let Some(shared) = hostile_locks(&env, 6, "'quiet%d' % i") else {
        return;
    };
    let log = env.path().join("ssh.log");
    // Connects and never answers.
    let ssh = logging_ssh(&env, &log, "exec sleep 600");
    let cfg = env.path().join("ask.json");
    fs::write(
        &cfg,
        format!(
            r#"{{"ask_hosts": {{"ssh": "{}", "timeout_secs": 2, "concurrency": 1, "deadline_secs": 3}}}}"#,
            ssh.display()
        ),
    )
    .unwrap();
    let started = Instant::now();
    let out = scan_asking(&env, &cfg, &shared);
    let took = started.elapsed();
    let report = parse_report(&out);
    // One host at a time, 2 s each: 12 s without a deadline for the round.
    assert!(took < Duration::from_secs(8), "took {took:?}");
    assert_eq!(calls(&log).len(), 2, "{:#?}", calls(&log));
    let evidence: Vec<&str> = report
        .locks
        .iter()
        .inspect(|l| assert_eq!(l.verdict, "foreign", "{l:#?}"))
        .map(|l| l.evidence[0].as_str())
        .collect();
    let ended = evidence
        .iter()
        .filter(|e| e.contains("was not asked over ssh: this round of asking ended after 3 s"))
        .count();
    assert_eq!(ended, 4, "{evidence:#?}");
    assert!(
        evidence
            .iter()
            .any(|e| e.contains("no answer (no answer in time: gave up at the end of this round")),
        "{evidence:#?}"
    );
}
