//! `locksmith start` as a real Podman container's entrypoint (the binary bind-mounted in, the
//! host's libraries lent read-only): the classic case, a pid file naming PID 1 written by the
//! container's previous run, after `podman kill` + `podman start`: the service starts, as PID
//! 1, and the removal is journaled in the container's state directory (root without HOME:
//! `/var/lib/locksmith`). With a second live container holding the same pid file on a shared
//! volume, the lock is kept and the second service does not start.
//!
//! Needs root and `podman runc busybox-static` (`.ci/run` installs them); skips with the
//! reason otherwise, and fails instead under CI.

use std::path::Path;
use std::time::Duration;

use crate::util::podman::{IMAGE, Podman};
use crate::util::{self, BIN, wait_for};

/// Where the binary is inside the containers.
const IN_CONTAINER: &str = "/usr/local/bin/locksmith";

/// `podman run` options: the host's libraries (the binary is linked against them) and the
/// binary itself, read-only.
fn with_locksmith(mut options: Vec<String>) -> Vec<String> {
    for lib in ["/lib", "/lib64"] {
        if Path::new(lib).exists() {
            options.extend(["-v".into(), format!("{lib}:{lib}:ro")]);
        }
    }
    options.extend(["-v".into(), format!("{BIN}:{IN_CONTAINER}:ro")]);
    options
}

/// `podman run -d --name NAME OPTIONS... IMAGE ARGS...`.
fn run_detached(pm: &Podman, name: &str, options: &[String], args: &[&str]) {
    let mut all: Vec<&str> = vec!["run", "-d", "--network", "none", "--name", name];
    all.extend(options.iter().map(String::as_str));
    all.push(IMAGE);
    all.extend_from_slice(args);
    let out = pm.run(&all);
    assert!(
        out.status.success(),
        "podman run {name}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `podman exec NAME ARGS...`'s stdout (empty when it fails).
fn exec(pm: &Podman, name: &str, args: &[&str]) -> String {
    let mut all = vec!["exec", name];
    all.extend_from_slice(args);
    String::from_utf8_lossy(&pm.run(&all).stdout).into_owned()
}

fn logs(pm: &Podman, name: &str) -> String {
    let out = pm.run(&["logs", name]);
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The service: writes its PID (`$$`, PID 1 once `locksmith start` has become it) to its pid
/// file again and again, as a server updating its status does, and counts its runs.
const SERVICE: &str = "mkdir -p /srv/run; echo run >> /srv/runs; \
     while :; do echo $$ > /srv/run/app.pid; sleep 0.2; done";

/// The journal lines in the container's state directory.
fn journal(pm: &Podman, name: &str) -> Vec<serde_json::Value> {
    exec(pm, name, &["cat", "/var/lib/locksmith/journal.jsonl"])
        .lines()
        .map(|l| serde_json::from_str(l).expect("a journal line is JSON"))
        .collect()
}

#[test]
fn a_restarted_containers_pid_file_naming_pid_1_goes_and_the_service_starts_as_pid_1() {
    let Some(pm) = Podman::or_skip("start as a container entrypoint") else {
        return;
    };
    let opts = with_locksmith(Vec::new());
    run_detached(
        &pm,
        "web",
        &opts,
        // Podman always sets HOME (to `/` in this image): `env -u HOME`, which execs,
        // makes root without HOME, whose state directory is `/var/lib/locksmith`.
        &[
            "env",
            "-u",
            "HOME",
            IN_CONTAINER,
            "start",
            "/srv/run/app.pid",
            "--",
            "sh",
            "-c",
            SERVICE,
        ],
    );
    let runs = |pm: &Podman| exec(pm, "web", &["cat", "/srv/runs"]).lines().count();
    wait_for("the service to write its pid file", || {
        (exec(&pm, "web", &["cat", "/srv/run/app.pid"]).trim() == "1").then_some(())
    });
    assert_eq!(runs(&pm), 1);
    assert_eq!(exec(&pm, "web", &["cat", "/proc/1/comm"]).trim(), "sh");

    // Killed twice: once at once (the pid file a fraction of a second old: within the
    // judge's clock slack, so only the restart rule can tell), once after the judge's slack.
    for (round, pause) in [(2, Duration::ZERO), (3, Duration::from_millis(3500))] {
        let out = pm.run(&["kill", "web"]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        pm.wait_exited("web");
        std::thread::sleep(pause);
        let out = pm.run(&["start", "web"]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        wait_for("the service to run again", || {
            (runs(&pm) == round).then_some(())
        });
        // The service is PID 1: `locksmith start` became it.
        let host_pid = pm.pid("web");
        assert!(host_pid > 0);
        assert_eq!(exec(&pm, "web", &["cat", "/proc/1/comm"]).trim(), "sh");
        assert_eq!(util::comm(host_pid), "sh");
        let log = logs(&pm, "web");
        let removals: Vec<&str> = log
            .lines()
            .filter(|l| l.contains("removed /srv/run/app.pid"))
            .collect();
        assert_eq!(removals.len(), round - 1, "{log}");
        assert!(
            removals[round - 2].contains("PID 1 is this process, `locksmith start`"),
            "{log}"
        );
        let entries = journal(&pm, "web");
        assert_eq!(entries.len(), round - 1, "{entries:?}");
        let last = entries.last().unwrap();
        assert_eq!(last["event"], "reclaim");
        assert_eq!(last["path"], "/srv/run/app.pid");
        let evidence = last["evidence"].to_string();
        if last["forced"] == true {
            // Within the slack the judge alone says live (PID 1 is alive, started "before"
            // the file within the slack): the restart rule removed it, and said why.
            assert!(evidence.contains("the service restarting"), "{evidence}");
            assert_eq!(last["verdict"], "unknown");
        } else {
            assert_eq!(last["verdict"], "stale");
            assert_eq!(last["proofs"][0]["rule"], "pid-reused", "{last}");
        }
        if round == 3 {
            assert_ne!(
                last["forced"], true,
                "past the slack the judge proves it: {last}"
            );
        }
        let copy = last["saved_to"].as_str().unwrap();
        assert!(copy.starts_with("/var/lib/locksmith/"), "{copy}");
        let all = exec(&pm, "web", &["cat", copy]).into_bytes();
        assert_eq!(
            String::from_utf8(util::copy_part(last, all))
                .unwrap()
                .trim(),
            "1"
        );
    }
}

#[test]
fn a_pid_file_on_a_volume_another_live_container_holds_is_kept() {
    let Some(pm) = Podman::or_skip("start beside a container sharing a volume") else {
        return;
    };
    let shared = pm.path().join("shared");
    std::fs::create_dir(&shared).unwrap();
    let volume = format!("{}:/data", shared.display());
    let pid_file = shared.join("server.pid");
    run_detached(
        &pm,
        "first",
        &["-v".into(), volume.clone()],
        &["sh", "-c", "echo $$ > /data/server.pid; exec sleep 1000"],
    );
    pm.wait_file(&pid_file);
    assert_eq!(std::fs::read_to_string(&pid_file).unwrap(), "1\n");
    let before = std::fs::metadata(&pid_file).unwrap();

    // The host sees both containers: the lock is live, held by the first one's PID 1.
    let env = util::Env::new();
    let (report, _) = env.scan_json(&[&pid_file]);
    let lock = report.expect_lock(&pid_file);
    assert_eq!(lock.verdict, "live", "{:?}", lock.evidence);

    // A second container with the same volume: its PID 1 is `locksmith start` itself, and
    // PID 1 of another container sharing the volume cannot be seen from inside it.
    let ran = shared.join("second-ran");
    for wait in [None, Some("1")] {
        let mut args: Vec<String> = vec!["run".into(), "--network".into(), "none".into()];
        args.extend(with_locksmith(vec!["-v".into(), volume.clone()]));
        args.extend([IMAGE.into(), IN_CONTAINER.into(), "start".into()]);
        if let Some(w) = wait {
            args.extend(["--wait".into(), w.into()]);
        }
        args.extend(
            [
                "/data/server.pid",
                "--",
                "sh",
                "-c",
                "touch /data/second-ran; echo $$ > /data/server.pid",
            ]
            .map(String::from),
        );
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let started = std::time::Instant::now();
        let out = pm.run(&args);
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(75), "{err}");
        assert!(
            err.contains("/data/server.pid stays")
                && err.contains("a PID namespace of its own")
                && err.contains("another container sharing it"),
            "{err}"
        );
        if wait.is_some() {
            assert!(started.elapsed() >= Duration::from_secs(1));
            assert!(err.contains("after waiting 1 s"), "{err}");
        }
        assert!(!ran.exists(), "the second service must not start");
        let after = std::fs::metadata(&pid_file).unwrap();
        use std::os::unix::fs::MetadataExt;
        assert_eq!(
            (after.ino(), after.mtime_nsec(), after.len()),
            (before.ino(), before.mtime_nsec(), before.len())
        );
    }
    let (report, _) = env.scan_json(&[&pid_file]);
    assert_eq!(report.expect_lock(&pid_file).verdict, "live");
}
