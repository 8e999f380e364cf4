//! What root's locksmith takes from other users: a local user (uid 65534) prepares what root's
//! locksmith would otherwise obey, and root runs it.
//! - A configuration in the user's home: found by root under `sudo -E` (`HOME` is the user's)
//!   or after `su` (which keeps `XDG_CONFIG_HOME`). Its `ask_hosts.ssh` would run as root as soon
//!   as a lock names another host; it is not read, and root is told so.
//! - A program named by root's own configuration but replaceable by the user: not run.
//!
//! Needs root (to act as another user); elsewhere it skips with a message.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

use crate::util::*;

/// The user's home (owned by uid 65534) with a configuration that asks every host through the
/// user's own "ssh", which records who ran it in `pwned`. Every file in it is made by the user.
fn hostile_home(env: &Env) -> PathBuf {
    fs::set_permissions(env.path(), fs::Permissions::from_mode(0o755)).unwrap();
    let home = env.path().join("home");
    fs::create_dir(&home).unwrap();
    std::os::unix::fs::chown(&home, Some(65534), Some(65534)).unwrap();
    let script = r##"
import os, sys
home = sys.argv[1]
os.makedirs(os.path.join(home, ".config/locksmith"))
os.makedirs(os.path.join(home, "bin"))
ssh = os.path.join(home, "bin/ssh")
with open(ssh, "w") as f:
    f.write("#!/bin/sh\nid -u > '%s'\nexit 255\n" % os.path.join(home, "pwned"))
os.chmod(ssh, 0o755)
with open(os.path.join(home, ".config/locksmith/config.json"), "w") as f:
    f.write('{"ask_hosts": {"hosts": ["*"], "ssh": "%s"}, "exclude": ["**/*"]}' % ssh)
"##;
    assert!(python_as_nobody(script, &[home.as_os_str()]).success());
    home
}

/// A directory of root's with an emacs lock naming another host.
fn lock_of_another_host(env: &Env) -> (PathBuf, PathBuf) {
    let dir = env.path().join("work");
    fs::create_dir(&dir).unwrap();
    let lock = dir.join(".#notes.txt");
    std::os::unix::fs::symlink("bob@node42.4242", &lock).unwrap();
    (dir, lock)
}

#[test]
fn root_never_reads_another_users_configuration() {
    if !can_act_as_nobody() {
        return;
    }
    let env = Env::new();
    let home = hostile_home(&env);
    let (dir, lock) = lock_of_another_host(&env);
    let pwned = home.join("pwned");
    // `sudo -E`: HOME is the user's; `su`: XDG_CONFIG_HOME is the user's.
    for (var, value) in [
        ("HOME", home.clone()),
        ("XDG_CONFIG_HOME", home.join(".config")),
    ] {
        let mut cmd = env.cmd(["--scan".as_ref(), "--json".as_ref(), dir.as_os_str()]);
        cmd.env_remove("XDG_CONFIG_HOME").env(var, &value);
        let out = run_bounded(cmd, DEADLINE);
        assert!(
            !pwned.exists(),
            "{var}={}: the user's ssh ran as uid {}",
            value.display(),
            fs::read_to_string(&pwned).unwrap_or_default().trim()
        );
        let err = stderr(&out);
        assert!(
            err.contains("is not read") && err.contains("owned by uid 65534"),
            "{var}: root is told the configuration was not read: {err}"
        );
        // Its `exclude` hides nothing: the lock is listed, judged without asking.
        let report = parse_report(&out);
        assert_eq!(report.expect_lock(&lock).verdict, "foreign", "{var}");
    }
}

#[test]
fn root_runs_no_program_another_user_can_replace() {
    if !can_act_as_nobody() {
        return;
    }
    let env = Env::new();
    let home = hostile_home(&env);
    let (dir, lock) = lock_of_another_host(&env);
    // Root's own configuration, naming the user's ssh.
    let cfg = env.path().join("config/locksmith/config.json");
    fs::create_dir_all(cfg.parent().unwrap()).unwrap();
    fs::write(
        &cfg,
        format!(
            r#"{{"ask_hosts": {{"hosts": ["*"], "ssh": "{}"}}}}"#,
            home.join("bin/ssh").display()
        ),
    )
    .unwrap();
    let (report, out) = env.scan_json(&[&dir]);
    assert!(!home.join("pwned").exists(), "the user's ssh ran as root");
    let l = report.expect_lock(&lock);
    assert_eq!(l.verdict, "foreign", "{}", stderr(&out));
    assert!(
        l.evidence.iter().any(|e| e.contains("is not run")),
        "the evidence says why node42 was not asked: {:?}",
        l.evidence
    );
}

#[test]
fn a_configuration_others_may_write_is_refused_by_name() {
    let env = Env::new();
    let cfg = env.path().join("shared.json");
    fs::write(&cfg, "{}").unwrap();
    fs::set_permissions(&cfg, fs::Permissions::from_mode(0o666)).unwrap();
    let out = env.run([
        "--scan".as_ref(),
        "--config".as_ref(),
        cfg.as_os_str(),
        env.path().as_os_str(),
    ]);
    assert_code(&out, 2);
    let err = stderr(&out);
    assert!(
        err.contains(&cfg.display().to_string()) && err.contains("may be written by others"),
        "{err}"
    );
    // The user's own configuration, the same: skipped, saying so, the scan goes on.
    let user = env.path().join("config/locksmith/config.json");
    fs::create_dir_all(user.parent().unwrap()).unwrap();
    fs::write(&user, r#"{"exclude": ["**/*"]}"#).unwrap();
    fs::set_permissions(&user, fs::Permissions::from_mode(0o666)).unwrap();
    let out = env.run(["--scan".as_ref(), env.path().as_os_str()]);
    assert!(out.status.code() != Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("is not read"), "{}", stderr(&out));
}
