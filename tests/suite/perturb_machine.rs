//! The perturbations a recording cannot stand for, made on the real machine: a PID namespace
//! unrelated to any lock (`unshare --pid`, as browsers' sandboxes and build tools make them,
//! sharing this host's root and mounts, with as many processes as the locks have owners) and a
//! container running beside a scan change no verdict of locks made by real programs, nor the
//! rules that prove the stale ones. (The recorded-evidence battery, `util::perturb`, checks
//! every judging test's lock against the rest.)

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::util::podman::Podman;
use crate::util::quiet::{self, Fact};
use crate::util::{BIN, Env, Guard, kill9, require, require_that, wait_until};

/// Each lock's verdict and the rules that proved it stale, as a scan of `root` reports them.
fn verdicts(env: &Env, root: &Path) -> BTreeMap<String, (String, Vec<String>)> {
    let (report, _) = env.scan_json(&[root]);
    report
        .locks
        .iter()
        .map(|l| {
            let rules = l.proofs.iter().map(|p| p.rule.clone()).collect();
            (l.path.clone(), (l.verdict.clone(), rules))
        })
        .collect()
}

/// `sh -c SCRIPT` in `dir`, left running.
fn sh(dir: &Path, script: &str) -> Guard {
    Guard::spawn(
        Command::new("sh")
            .args(["-c", script])
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    )
}

#[test]
fn an_unrelated_sandbox_and_a_container_beside_a_scan_change_no_verdict() {
    // The sandbox is a PID namespace: made alone (see util/quiet.rs).
    let _namespace = quiet::making(Fact::PidNamespace);
    let probe = Command::new("unshare")
        .args(["--pid", "--fork", "true"])
        .stderr(Stdio::null())
        .status();
    if !require_that(
        probe.is_ok_and(|s| s.success()),
        "unshare --pid is not permitted here (needs root)",
    ) || !require("flock")
    {
        return;
    }
    let Some(pm) = Podman::or_skip("an unrelated container beside a scan") else {
        return;
    };
    let env = Env::new();
    let root = env.path().join("locks");
    std::fs::create_dir_all(&root).unwrap();

    // Locks as real programs leave them: a service's pid file while it runs and after it
    // ended, a lock held with flock(1), `locksmith lock` holding one and one whose holder
    // was killed.
    let mut keep: Vec<Guard> = Vec::new();
    keep.push(sh(&root, "echo $$ > live.pid; exec sleep 600"));
    let ended = Command::new("sh")
        .args(["-c", "echo $$ > ended.pid"])
        .current_dir(&root)
        .status()
        .unwrap();
    assert!(ended.success());
    keep.push(Guard::spawn(
        Command::new("flock")
            .arg(root.join("held.lock"))
            .args(["sleep", "600"])
            .stdin(Stdio::null()),
    ));
    keep.push(Guard::spawn(
        Command::new(BIN)
            .arg("lock")
            .arg(root.join("job.lock"))
            .args(["--", "sleep", "600"])
            .stdin(Stdio::null())
            .stdout(Stdio::null()),
    ));
    let mut killed = Guard::spawn(
        Command::new(BIN)
            .arg("lock")
            .arg(root.join("killed.lock"))
            .args(["--", "sleep", "600"])
            .stdin(Stdio::null())
            .stdout(Stdio::null()),
    );
    let paths: Vec<PathBuf> = [
        "live.pid",
        "ended.pid",
        "held.lock",
        "job.lock",
        "killed.lock",
    ]
    .iter()
    .map(|n| root.join(n))
    .collect();
    wait_until("every lock to be made", || paths.iter().all(|p| p.exists()));
    wait_until("the flock and the engine's lock to be held", || {
        let v = verdicts(&env, &root);
        ["held.lock", "job.lock", "killed.lock"].iter().all(|n| {
            v.get(root.join(n).to_str().unwrap())
                .is_some_and(|(v, _)| v == "live")
        })
    });
    // The engine's holder killed, then its command: the lock is left.
    let leader = killed.pid();
    let children = Command::new("pgrep")
        .args(["-P", &leader.to_string()])
        .output()
        .unwrap();
    killed.kill();
    for child in String::from_utf8_lossy(&children.stdout).split_whitespace() {
        kill9(child.parse().unwrap());
    }

    let before = verdicts(&env, &root);
    let expected = [
        ("live.pid", "live"),
        ("ended.pid", "stale"),
        ("held.lock", "live"),
        ("job.lock", "live"),
        ("killed.lock", "stale"),
    ];
    for (name, verdict) in expected {
        let (v, _) = &before[root.join(name).to_str().unwrap()];
        assert_eq!(v, verdict, "{name}: {before:#?}");
    }

    // Beside it: a sandbox sharing this host's root and mounts, with processes numbered from
    // 1 as the locks' owners' PIDs never are here, and a container.
    keep.push(Guard::spawn(
        Command::new("unshare")
            .args([
                "--pid",
                "--fork",
                "sh",
                "-c",
                "for i in 1 2 3 4 5 6 7 8; do sleep 600 & done; exec sleep 600",
            ])
            .stdin(Stdio::null()),
    ));
    let _container = pm.run_detached("beside", &[], "exec sleep 600");
    let during = verdicts(&env, &root);
    assert_eq!(
        before, during,
        "an unrelated sandbox and a container changed verdicts"
    );
    drop(keep);
}
