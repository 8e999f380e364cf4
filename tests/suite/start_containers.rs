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

/// The image of the services below: busybox, and the application's `/app/tmp/pids`, which
/// an empty named volume mounted at `/app/tmp` gets a copy of when it is first mounted (as a
/// Rails image has `tmp/pids/.keep`).
const APP_IMAGE: &str = "localhost/locksmith-app:test";

fn import_app_image(pm: &Podman) {
    let rootfs = pm.path().join("app-rootfs");
    crate::util::podman::busybox_root(&rootfs).unwrap();
    std::fs::create_dir_all(rootfs.join("app/tmp/pids")).unwrap();
    pm.import_dir(&rootfs, APP_IMAGE).unwrap();
}

/// A Rails-like service: writes its PID to its pid file (PID 1 once `locksmith start` has
/// become it), counts its runs, and stays.
const APP_SERVICE: &str = "echo $$ > /app/tmp/pids/server.pid; echo run >> /app/tmp/runs; \
     exec sleep 1000";

/// `podman run` arguments for the README's compose service on `volume`: `locksmith start
/// --wait WAIT /app/tmp/pids/server.pid -- sh -c SCRIPT`, as root without HOME (state in
/// `/var/lib/locksmith`).
fn app_args(volume: &str, wait: &str, extra: &[&str], script: &str) -> Vec<String> {
    let mut args = with_locksmith(vec!["-v".into(), format!("{volume}:/app/tmp")]);
    args.push(APP_IMAGE.into());
    args.extend(["env", "-u", "HOME", IN_CONTAINER, "start", "--wait", wait].map(String::from));
    args.extend(extra.iter().map(|s| s.to_string()));
    args.extend(["/app/tmp/pids/server.pid", "--", "sh", "-c", script].map(String::from));
    args
}

fn run_app(pm: &Podman, name: &str, volume: &str, wait: &str, script: &str) {
    let args = app_args(volume, wait, &[], script);
    let mut all: Vec<&str> = vec!["run", "-d", "--network", "none", "--name", name];
    all.extend(args.iter().map(String::as_str));
    let out = pm.run(&all);
    assert!(
        out.status.success(),
        "podman run {name}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The host directory of a named volume.
fn volume_dir(pm: &Podman, volume: &str) -> std::path::PathBuf {
    let out = pm.run(&["volume", "inspect", "-f", "{{.Mountpoint}}", volume]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::path::PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
}

fn runs_in(dir: &Path) -> usize {
    std::fs::read_to_string(dir.join("runs"))
        .unwrap_or_default()
        .lines()
        .count()
}

/// The README's compose file: the pid file on a named volume, `locksmith start --wait 30`.
/// After `podman kill` + `podman start` the service starts again, twice: the start guard
/// beside the pid file, released when the killed service died, proves that no service started
/// this way still runs, in any container; so the PID proof made inside the container stands.
#[test]
fn on_a_named_volume_kill_and_start_restart_the_service() {
    let Some(pm) = Podman::or_skip("start on a named volume") else {
        return;
    };
    import_app_image(&pm);
    assert!(pm.run(&["volume", "create", "app-tmp"]).status.success());
    let dir = volume_dir(&pm, "app-tmp");
    run_app(&pm, "web", "app-tmp", "30", APP_SERVICE);
    let pid_file = dir.join("pids/server.pid");
    let guard = dir.join("pids/.server.pid.locksmith-start");
    wait_for("the service to write its pid file", || {
        (std::fs::read_to_string(&pid_file).ok()?.trim() == "1").then_some(())
    });
    assert_eq!(runs_in(&dir), 1);

    // On the host, the pid file is live by its guard, held by the service.
    let env = util::Env::new();
    let (report, _) = env.scan_json(&[&dir]);
    let lock = report.expect_lock(&pid_file);
    assert_eq!(lock.verdict, "live", "{:?}", lock.evidence);
    assert!(
        lock.evidence[0].contains("its start guard"),
        "{:?}",
        lock.evidence
    );
    assert_eq!(report.expect_lock(&guard).verdict, "live");

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
            (runs_in(&dir) == round).then_some(())
        });
        assert_eq!(exec(&pm, "web", &["cat", "/proc/1/comm"]).trim(), "sleep");
        let log = logs(&pm, "web");
        assert_eq!(
            log.matches("removed /app/tmp/pids/server.pid").count(),
            round - 1,
            "{log}"
        );
        let entries = journal(&pm, "web");
        assert_eq!(entries.len(), round - 1, "{entries:?}");
        let last = entries.last().unwrap();
        assert_eq!(last["path"], "/app/tmp/pids/server.pid");
        let evidence = last["evidence"].to_string();
        assert!(
            evidence.contains(
                "its start guard /app/tmp/pids/.server.pid.locksmith-start was locked by no one"
            ),
            "{evidence}"
        );
    }
    assert!(guard.exists());
}

/// A service whose pid file names one of its children (a worker), not its PID 1: after
/// `podman kill` + `podman start`, that PID names no process of the new container, and may be
/// another container's as far as the new one can see (`foreign` as judged there). The guard
/// proves that the service that wrote it is gone: it goes, journaled as a decision made on
/// that proof (forced), with what the judge alone said.
#[test]
fn a_pid_file_naming_a_worker_of_the_killed_container_goes_by_its_guard() {
    let Some(pm) = Podman::or_skip("a worker's pid file on a volume") else {
        return;
    };
    import_app_image(&pm);
    assert!(pm.run(&["volume", "create", "jobs"]).status.success());
    let dir = volume_dir(&pm, "jobs");
    let service =
        "sleep 1000 & echo $! > /app/tmp/pids/server.pid; echo run >> /app/tmp/runs; wait";
    run_app(&pm, "worker", "jobs", "30", service);
    let pid_file = dir.join("pids/server.pid");
    wait_for("the service to write its pid file", || {
        let pid: i32 = std::fs::read_to_string(&pid_file)
            .ok()?
            .trim()
            .parse()
            .ok()?;
        (pid > 1).then_some(())
    });
    pm.kill("worker");
    // Past the judge's clock slack: what the judge says is not about time.
    std::thread::sleep(Duration::from_millis(2500));
    let out = pm.run(&["start", "worker"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    wait_for("the service to run again", || {
        (runs_in(&dir) == 2).then_some(())
    });
    let log = logs(&pm, "worker");
    assert!(
        log.contains("removed /app/tmp/pids/server.pid (foreign as judged in this container, but its start guard"),
        "{log}"
    );
    let entries = journal(&pm, "worker");
    assert_eq!(entries.len(), 1, "{entries:?}");
    assert_eq!(entries[0]["forced"], true, "{:?}", entries[0]);
    let evidence = entries[0]["evidence"].to_string();
    assert!(
        evidence.contains("was locked by no one") && evidence.contains("(judged alone: "),
        "{evidence}"
    );
}

/// Two replicas of the compose service on one volume: while the first runs, the second
/// waits for the guard its service holds and gives up (75) without touching the pid file;
/// started again with a longer wait, it starts once the first is gone, and only then.
#[test]
fn two_replicas_on_one_volume_the_second_starts_once_the_first_is_gone() {
    let Some(pm) = Podman::or_skip("two replicas on one volume") else {
        return;
    };
    import_app_image(&pm);
    assert!(pm.run(&["volume", "create", "shared"]).status.success());
    let dir = volume_dir(&pm, "shared");
    run_app(&pm, "first", "shared", "30", APP_SERVICE);
    let pid_file = dir.join("pids/server.pid");
    wait_for("the first to write its pid file", || {
        (std::fs::read_to_string(&pid_file).ok()?.trim() == "1").then_some(())
    });
    let before = std::fs::read(&pid_file).unwrap();

    let second = "touch /app/tmp/second-ran; echo $$ > /app/tmp/pids/server.pid; exec sleep 1000";
    let mut all: Vec<String> = vec![
        "run".into(),
        "--rm".into(),
        "--network".into(),
        "none".into(),
    ];
    all.extend(app_args("shared", "1", &[], second));
    let all: Vec<&str> = all.iter().map(String::as_str).collect();
    let began = std::time::Instant::now();
    let out = pm.run(&all);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(75), "{err}");
    assert!(began.elapsed() >= Duration::from_secs(1));
    assert!(
        err.contains("/app/tmp/pids/server.pid stays: live: its start guard /app/tmp/pids/.server.pid.locksmith-start is locked in the kernel")
            && err.contains("after waiting 1 s: 1 lock is in the way"),
        "{err}"
    );
    assert!(!dir.join("second-ran").exists());
    assert_eq!(std::fs::read(&pid_file).unwrap(), before);

    run_app(&pm, "second", "shared", "60", second);
    wait_for("the second to wait", || {
        logs(&pm, "second")
            .contains("waiting (up to 60 s)")
            .then_some(())
    });
    std::thread::sleep(Duration::from_millis(600));
    assert!(!dir.join("second-ran").exists(), "{}", logs(&pm, "second"));
    pm.kill("first");
    wait_for("the second to start", || {
        dir.join("second-ran").exists().then_some(())
    });
    assert_eq!(
        exec(&pm, "second", &["cat", "/proc/1/comm"]).trim(),
        "sleep"
    );
    let log = logs(&pm, "second");
    assert!(log.contains("removed /app/tmp/pids/server.pid"), "{log}");
    // The first's pid file went, as the journal of the second says, with the guard's proof.
    let entries = journal(&pm, "second");
    assert_eq!(entries.len(), 1, "{entries:?}");
    assert!(
        entries[0]["evidence"]
            .to_string()
            .contains("was locked by no one"),
        "{:?}",
        entries[0]
    );
}

/// A pid file on a volume that no guard vouches for (written by a service started without
/// `locksmith start`, or before it was used): the first start is refused, and says how to
/// go on; a start that was refused leaves a guard with no record, which proves nothing
/// either. `--unshared` (no other container or host uses this volume) starts it, and from
/// then on the guard is kept.
#[test]
fn a_pid_file_from_before_the_guard_is_kept_unless_the_volume_is_declared_unshared() {
    let Some(pm) = Podman::or_skip("the first start on a volume") else {
        return;
    };
    import_app_image(&pm);
    assert!(pm.run(&["volume", "create", "old"]).status.success());
    let dir = volume_dir(&pm, "old");
    // The service, as it ran before `locksmith start`: its PID 1 wrote the pid file.
    let out = pm.run(&[
        "run",
        "--rm",
        "--network",
        "none",
        "-v",
        "old:/app/tmp",
        APP_IMAGE,
        "sh",
        "-c",
        "echo $$ > /app/tmp/pids/server.pid",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let pid_file = dir.join("pids/server.pid");
    assert_eq!(std::fs::read_to_string(&pid_file).unwrap(), "1\n");
    let ran = "touch /app/tmp/ran";

    for expected in [
        "it has no start guard yet",
        "has no record: no service was started under it yet",
    ] {
        let mut all: Vec<String> = vec![
            "run".into(),
            "--rm".into(),
            "--network".into(),
            "none".into(),
        ];
        all.extend(app_args("old", "0", &[], ran));
        let all: Vec<&str> = all.iter().map(String::as_str).collect();
        let out = pm.run(&all);
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(75), "{err}");
        assert!(
            err.contains(expected) && err.contains("start with --unshared"),
            "{expected}: {err}"
        );
        assert!(pid_file.exists() && !dir.join("ran").exists());
    }

    let mut all: Vec<String> = vec![
        "run".into(),
        "--rm".into(),
        "--network".into(),
        "none".into(),
    ];
    all.extend(app_args("old", "0", &["--unshared"], ran));
    let all: Vec<&str> = all.iter().map(String::as_str).collect();
    let out = pm.run(&all);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(dir.join("ran").exists());
    assert!(!pid_file.exists(), "{err}");
    assert!(err.contains("removed /app/tmp/pids/server.pid"), "{err}");
    let guard = std::fs::read_to_string(dir.join("pids/.server.pid.locksmith-start")).unwrap();
    assert!(guard.contains("\"guards\":\"server.pid\""), "{guard}");
}

/// The volume on a network file system, shared with a container on another machine: sshfs
/// to this machine's loopback address (NFS cannot run in every test machine), whose server
/// side is the other machine (a container of another host name, on the exported directory).
/// The other machine's service runs under `locksmith start` and holds its guard there, in a
/// lock this mount knows nothing of (sshfs keeps kernel locks on the machine that takes
/// them, as any client of a network file system without a lock manager does): here the guard
/// seems free, and nothing can prove from here that the other machine's service is gone. The
/// pid file is `foreign` on the host, and the start here is refused.
#[test]
fn a_service_of_another_machine_on_a_network_volume_is_foreign_here() {
    let Some(pm) = Podman::or_skip("start on a network volume") else {
        return;
    };
    let Some(near) = crate::util::sshfs::mount_or_skip(&[]) else {
        return;
    };
    import_app_image(&pm);
    std::fs::create_dir(near.export.join("pids")).unwrap();

    // The other machine: a container of another host name, on the exported directory.
    let far_volume = near.export.display().to_string();
    let mut all: Vec<String> = vec![
        "run".into(),
        "-d".into(),
        "--network".into(),
        "none".into(),
        "--name".into(),
        "far".into(),
        "--hostname".into(),
        "far-host".into(),
    ];
    all.extend(app_args(&far_volume, "0", &[], APP_SERVICE));
    let all: Vec<&str> = all.iter().map(String::as_str).collect();
    let out = pm.run(&all);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let pid_file = near.mnt.join("pids/server.pid");
    wait_for("the far service to write its pid file", || {
        (std::fs::read_to_string(&pid_file).ok()?.trim() == "1").then_some(())
    });
    let guard = near.mnt.join("pids/.server.pid.locksmith-start");

    let env = util::Env::new();
    let (report, _) = env.scan_json(&[&near.mnt]);
    let lock = report.expect_lock(&pid_file);
    assert_eq!(lock.verdict, "foreign", "{:?}", lock.evidence);
    let g = report.expect_lock(&guard);
    assert_eq!(
        (g.dialect.as_str(), g.verdict.as_str()),
        ("start-guard", "free")
    );
    assert!(
        g.evidence
            .iter()
            .any(|l| l.contains("a lock held from another machine does not show here")),
        "{:?}",
        g.evidence
    );

    let near_volume = near.mnt.display().to_string();
    let mut all: Vec<String> = vec![
        "run".into(),
        "--rm".into(),
        "--network".into(),
        "none".into(),
    ];
    all.extend(app_args(&near_volume, "0", &[], "touch /app/tmp/near-ran"));
    let all: Vec<&str> = all.iter().map(String::as_str).collect();
    let out = pm.run(&all);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(75), "{err}");
    assert!(
        err.contains("/app/tmp/pids/server.pid stays: foreign")
            && err.contains("network file system (fuse.sshfs)"),
        "{err}"
    );
    assert!(!near.mnt.join("near-ran").exists());
    assert_eq!(std::fs::read_to_string(&pid_file).unwrap(), "1\n");
    pm.kill("far");
    drop(near);
}
