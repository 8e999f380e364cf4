//! Other users' processes cannot make root's scan slow or large: a local user (uid 65534,
//! `benches/hostile_users.py`) holds some 20,000 descriptors in each of ten processes on one
//! file with a 4 KB path, runs processes with megabyte command lines, and stacks thousands of
//! mounts in a namespace of its own. Root scans a directory holding a stale git `index.lock`,
//! which needs every process's descriptors read. Read whole, this made a scan take most of a
//! gigabyte; each read now stops at its bound, the scan stays small, the bound is reported
//! with the scan's errors and in the recording, and the lock the cut tables may hide is
//! `unknown`, saying why, never `stale` on a guess.
//!
//! Needs root (to act as another user) and user namespaces for that user; elsewhere it skips
//! with a message.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};

use crate::util::*;
use locksmith::probe::Evidence;

/// The load of uid 65534, kept while this lives: the leader of a process group of its own,
/// which every process it starts joins (its namespace's too).
struct Load {
    child: std::process::Child,
}

impl Drop for Load {
    fn drop(&mut self) {
        // The whole group, at once: the load would kill what it started when its standard
        // input closes, but `unshare` leaves the PID 1 of its namespace behind when killed,
        // and the shells with long command lines leave their `sleep`.
        let pgid = self.child.id() as i32;
        drop(self.child.stdin.take());
        kill_group(pgid);
        let _ = self.child.wait();
        wait_until("the load's processes to die", || {
            group_members(pgid).is_empty()
        });
    }
}

fn start_load(dir: &Path, args: &[&str]) -> Option<Load> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/hostile_users.py");
    use std::os::unix::process::CommandExt;
    let mut child = Command::new("setpriv")
        .process_group(0)
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            NOBODY_PYTHON,
        ])
        .arg(&script)
        .arg(dir)
        .args(args)
        .env("PATH", "/usr/bin:/bin")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start the load");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let load = Load { child };
    if line.trim() != "ready" {
        skip("the load of uid 65534 could not be started here (user namespaces of its own?)");
        return None;
    }
    Some(load)
}

#[test]
fn other_users_processes_cannot_make_roots_scan_large_and_what_a_bound_hides_stays_unproven() {
    if !can_act_as_nobody() || !require("git") || !require("unshare") {
        return;
    }
    let env = Env::new();
    std::fs::set_permissions(
        env.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let repo = env.path().join("repo");
    git_repo_with_a_commit(&repo, env.path());
    let lock = repo.join(".git/index.lock");
    std::fs::write(&lock, "").unwrap();
    // A pid file of a dead process: its PID is looked for in every PID namespace, the load's
    // too (whose mount table is then read).
    let pid_file = repo.join("server.pid");
    std::fs::write(&pid_file, format!("{}\n", dead_pid())).unwrap();
    // git's shortest hold is not what this test is about: a lock made a moment ago counts.
    let cfg = env.path().join("config/locksmith/config.json");
    std::fs::create_dir_all(cfg.parent().unwrap()).unwrap();
    std::fs::write(&cfg, r#"{"windows": {"git_min_age_secs": 0}}"#).unwrap();
    let load_dir = sticky_dir(&env, "load");
    // No other test judges while the load runs: it makes every verdict that needs nobody to
    // have a file open unknown.
    let _over = crate::util::quiet::making(crate::util::quiet::Fact::OverBounds);
    let Some(_load) = start_load(
        &load_dir,
        &[
            "--fds",
            "10,19900",
            "--argv",
            "2,1000000",
            "--mounts",
            "2000",
        ],
    ) else {
        return;
    };

    let record = env.path().join("evidence.json");
    let mut cmd = Command::new("/usr/bin/time");
    cmd.args(["-f", "peak %M KiB", BIN, "--scan", "--json", "--record"])
        .arg(&record)
        .arg(&repo)
        .env("XDG_STATE_HOME", env.path().join("state"))
        .env("XDG_CONFIG_HOME", env.path().join("config"))
        .stdin(Stdio::null());
    let out = run_bounded(cmd, DEADLINE);
    let err = stderr(&out);
    let peak: u64 = err
        .lines()
        .find_map(|l| l.strip_prefix("peak ")?.strip_suffix(" KiB")?.parse().ok())
        .unwrap_or_else(|| panic!("no peak memory in: {err}"));
    assert!(
        peak < 64 * 1024,
        "root's scan took {peak} KiB beside the load (bound: 64 MiB)"
    );
    let report = parse_report(&out);
    let l = report.expect_lock(&lock);
    assert_eq!(l.verdict, "unknown", "{:#?}", l.evidence);
    assert!(
        l.evidence.iter().any(|e| e.contains("bound")),
        "the evidence says a bound leaves it unproven: {:#?}",
        l.evidence
    );
    let reported = |what: &str| {
        report
            .errors
            .iter()
            .any(|e| e.path.ends_with(what) && e.error.contains("bound"))
    };
    for what in ["/fd", "/cmdline", "/mountinfo"] {
        assert!(
            reported(what),
            "no bound reported on {what}: {:#?}",
            report.errors
        );
    }
    // The recording says what was cut, and keeps only the bounded part.
    let ev = Evidence::from_json(&std::fs::read_to_string(&record).unwrap()).unwrap();
    assert!(!ev.bounds.is_empty());
    let long = ev
        .processes
        .iter()
        .flatten()
        .filter(|p| p.cmd_cut)
        .collect::<Vec<_>>();
    assert_eq!(long.len(), 2, "the two long command lines are cut");
    for p in long {
        // The arguments and the NULs between them.
        let len: usize = p.cmd.iter().map(String::len).sum::<usize>() + p.cmd.len() - 1;
        assert!(len <= 32 << 10, "{len} bytes kept of a cut command line");
    }
    assert!(
        ev.containers
            .iter()
            .flat_map(|i| &i.namespaces)
            .any(|n| n.mounts_cut),
        "the stacked mount table is cut"
    );

    // A PID lock needs no descriptor table: proven as ever.
    assert_eq!(report.expect_lock(&pid_file).verdict, "stale");

    // Once the load is gone, the same lock is proven stale (git's own condition).
    drop(_load);
    let (report, _) = env.scan_json(&[&repo]);
    assert_eq!(report.expect_lock(&lock).verdict, "stale");
}
