//! Containers and sandboxes (README "Containers and sandboxes"), with real Podman containers and
//! `unshare` namespaces (root's, and a user's made without privilege): every PID is judged in
//! the namespace that wrote it, a proven container is named from its runtime's state only, and
//! what reclaim removes inside one is on its own file system and can be restored there.
//!
//! The Podman tests need root and `podman runc busybox-static` (installed by `.ci/run`); they
//! skip with the reason when Podman cannot run here, and fail instead under CI (`CI` set).

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Stdio};

use crate::util;
use crate::util::btrfs::BtrfsSubvolume;
use crate::util::judging::{
    record_changed, replay, replay_json, scan_replayed, steady, up_for_at_least,
};
use crate::util::podman::{Podman, busybox_root};
use crate::util::quiet::{self, Fact};
use crate::util::userns::UserNamespace;
use crate::util::{Env, Guard, Lock, Report, wait_for};

fn podman_or_skip(test: &str) -> Option<Podman> {
    Podman::or_skip(test)
}

/// `podman run` options that lend a container the host's `/usr` and libraries, so it can run
/// the host's programs (busybox-static has no flock, and no program called `ruby`).
fn host_programs(mut options: Vec<String>) -> Vec<String> {
    options.extend(["-v".into(), "/usr:/usr:ro".into()]);
    for lib in ["/lib", "/lib64"] {
        if Path::new(lib).exists() {
            options.extend(["-v".into(), format!("{lib}:{lib}:ro")]);
        }
    }
    options
}

/// A shell command that runs the host's `sleep` as a program called `ruby` (its `comm` is the
/// name it was started by): what a Rails server looks like to `ps`.
const RUBY_SERVER: &str = "ln -sf /usr/bin/sleep /tmp/ruby && exec /tmp/ruby 1000";

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

fn joined(l: &Lock) -> String {
    l.evidence.join("\n")
}

/// The lock at `path` in `report`, with `verdict` and evidence that says each of `says`.
fn expect_judged<'r>(report: &'r Report, path: &Path, verdict: &str, says: &[&str]) -> &'r Lock {
    let l = report.expect_lock(path);
    assert_eq!(l.verdict, verdict, "{}", joined(l));
    for s in says {
        assert!(joined(l).contains(s), "{s:?} in:\n{}", joined(l));
    }
    l
}

/// A reclaim of `dir` removes `file` (seen from the host at that path), and `restore` puts it
/// back as it was (`content`); what `restore` said.
fn reclaimed_and_restored(env: &Env, dir: &Path, file: &Path, content: &str) -> String {
    let out = env.run(["--scan", "--reclaim", dir.to_str().unwrap()]);
    assert!(
        util::stdout(&out).contains("removed "),
        "{}",
        util::stdout(&out)
    );
    assert!(!file.exists());
    let out = env.run(["restore", "--last-batch"]);
    assert_eq!(out.status.code(), Some(0), "{}", util::stderr(&out));
    assert_eq!(std::fs::read_to_string(file).unwrap(), content);
    util::stdout(&out)
}

/// A reclaim of `dir` removes nothing: its stale lock is a layer file of an overlay mounted
/// now, whose view would be undefined after (the reason names the path to remove it by,
/// ending in `there`).
fn reclaim_keeps_layer_files(env: &Env, dir: &Path, there: &str) {
    let out = env.run(["--scan", "--reclaim", dir.to_str().unwrap()]);
    let said = format!("{}{}", util::stdout(&out), util::stderr(&out));
    assert!(!said.contains("removed "), "{said}");
    assert!(
        said.contains("it is a file of a layer of the overlay ") && said.contains(there),
        "{said}"
    );
}

fn scan(env: &Env, paths: &[&Path]) -> Report {
    env.scan_json(paths).0
}

/// A configuration whose only root is `/run` (one level deep), so a scan without PATH looks
/// at the host's `/run` and at each running container's.
fn run_only_config(env: &Env) -> std::path::PathBuf {
    let cfg = env.path().join("run-only.json");
    std::fs::write(&cfg, r#"{"roots": [{"path": "/run", "max_depth": 1}]}"#).unwrap();
    cfg
}

fn scan_config(env: &Env, args: &[&str]) -> Report {
    let mut all = vec!["--scan", "--json"];
    all.extend_from_slice(args);
    util::parse_report(&env.run(all))
}

#[test]
fn rails_pid_files_of_a_running_and_an_exited_container_sharing_one_app_dir() {
    let Some(pm) = podman_or_skip("rails containers") else {
        return;
    };
    let env = Env::new();
    let srv = env.path().join("srv");
    std::fs::create_dir_all(srv.join("one")).unwrap();
    std::fs::create_dir_all(srv.join("two")).unwrap();
    let vol = format!("{}:/srv", srv.display());
    let write_pid = "mkdir -p tmp/pids && echo 1 > tmp/pids/server.pid";
    let web = |dir: &str| host_programs(vec!["-v".into(), vol.clone(), "-w".into(), dir.into()]);
    // web-2 served /srv/two and was killed: its server.pid stays behind.
    pm.run_detached(
        "web-2",
        &strs(&web("/srv/two")),
        &format!("{write_pid} && {RUBY_SERVER}"),
    );
    let two = srv.join("two/tmp/pids/server.pid");
    pm.wait_file(&two);
    pm.kill("web-2");
    // web-1 serves /srv/one, as PID 1 of its container, started later (by more than the
    // clock slack, as any restart is).
    std::thread::sleep(std::time::Duration::from_secs(3));
    let web1 = pm.run_detached(
        "web-1",
        &strs(&web("/srv/one")),
        &format!("{write_pid} && {RUBY_SERVER}"),
    );
    let one = srv.join("one/tmp/pids/server.pid");
    pm.wait_file(&one);

    // Recorded, and judged again as the recording says on a clock known not to have stepped
    // (the host up for an hour): the exited container's pid file is proven stale by web-1's
    // later start only so.
    let (ev, scanned) = record_changed(&env, &["--json"], &srv, |ev| {
        steady(ev);
        up_for_at_least(ev, 3600);
    });
    let here = util::parse_report(&scanned);
    let (report, _) = replay_json(&env, &ev);
    for report in [&here, &report] {
        let live = report.expect_lock(&one);
        assert_eq!(live.verdict, "live", "{}", joined(live));
    }
    let live = report.expect_lock(&one);
    let p = live.process.as_ref().expect("the owner process");
    assert_eq!(p.pid, web1.pid as i64, "the host PID of web-1's PID 1");
    assert_eq!(p.name, "ruby");
    let c = p.container.as_ref().expect("named container");
    assert_eq!(c.runtime, "podman");
    assert_eq!(c.name.as_deref(), Some("web-1"));
    assert_eq!(c.id, web1.id);
    assert_eq!(c.ns_pid, Some(1));
    assert!(
        joined(live).contains("PID 1 in container web-1 (podman "),
        "{}",
        joined(live)
    );

    // The exited container's pid file names PID 1 too: the host's init and web-1's PID 1
    // (started after the file was written) are the only candidates, and neither is its
    // owner.
    let stale = report.expect_lock(&two);
    let text = joined(stale);
    assert_eq!(stale.verdict, "stale", "{text}");
    assert!(stale.process.is_none());
    assert!(text.contains("this host (as "), "{text}");
    assert!(text.contains("container web-1 (podman "), "{text}");
    assert!(text.contains("/srv/two"), "{text}");
    assert!(text.contains("init"), "{text}");

    // The table says where the owner runs.
    let out = replay(&env, &ev, &[]);
    let table = util::stdout(&out);
    let row = table
        .lines()
        .find(|l| l.contains("one/tmp/pids/server.pid"))
        .unwrap();
    assert!(row.contains("ctr:web-1"), "{table}");
    assert_eq!(out.status.code(), Some(1), "a stale lock: exit 1");

    // Once web-1 is killed too, its pid file is stale, and both are reclaimed: no process
    // that could own either is left (no clock is needed for that).
    pm.kill("web-1");
    let report = scan(&env, &[&srv]);
    let now = report.expect_lock(&one);
    assert_eq!(now.verdict, "stale", "{}", joined(now));
    let out = env.run(["--scan".as_ref(), "--reclaim".as_ref(), srv.as_os_str()]);
    assert_eq!(out.status.code(), Some(0), "{}", util::stdout(&out));
    assert!(!one.exists() && !two.exists());
}

#[test]
fn a_pid_file_inside_a_running_containers_root_is_found_and_reclaimed_there() {
    // Its scans walk every running container's `/run` and reclaim there: no other test's
    // container may run meanwhile.
    let _alone = quiet::absent(Fact::Container);
    if let Some(pm) = podman_or_skip("container root") {
        found_and_reclaimed_in_its_root(pm);
    }
}

/// The same with the container's root mounted by fuse-overlayfs (a mount that may hang, asked
/// through bounded calls, on a device the host has mounted too).
#[test]
fn a_pid_file_inside_a_fuse_overlayfs_containers_root_is_found_and_reclaimed_there() {
    let _alone = quiet::absent(Fact::Container);
    match Podman::start_fuse_overlay() {
        Ok(pm) => found_and_reclaimed_in_its_root(pm),
        Err(why) => util::skip(format!("fuse-overlayfs root: {why}")),
    }
}

fn found_and_reclaimed_in_its_root(pm: Podman) {
    let env = Env::new();
    // A PID no process has here: the host sees the container's root (its overlay is mounted
    // here), so the host's process with that PID, if any, could have written it.
    let gone = util::dead_pid();
    let db = pm.run_detached(
        "db-1",
        &[],
        &format!("echo 1 > /run/app.pid && echo {gone} > /run/old.pid && exec sleep 1000"),
    );
    let inside = Path::new("/proc").join(db.pid.to_string()).join("root/run");
    pm.wait_file(&inside.join("old.pid"));
    let cfg = run_only_config(&env);
    let cfg = cfg.to_str().unwrap();

    let report = scan_config(&env, &["--config", cfg]);
    let app = report.expect_lock(&inside.join("app.pid"));
    assert_eq!(app.verdict, "live", "{}", joined(app));
    let c = app.process.as_ref().unwrap().container.as_ref().unwrap();
    assert_eq!(c.name.as_deref(), Some("db-1"));
    assert_eq!(c.ns_pid, Some(1));
    let old = report.expect_lock(&inside.join("old.pid"));
    assert_eq!(old.verdict, "stale", "{}", joined(old));
    assert!(
        joined(old).contains("container db-1 (podman ")
            && joined(old).contains(&format!("no PID {gone}")),
        "{}",
        joined(old)
    );

    // --no-containers looks only at the host.
    let report = scan_config(&env, &["--config", cfg, "--no-containers"]);
    assert!(
        report.locks.iter().all(|l| !l.path.starts_with("/proc/")),
        "{:?}",
        report.locks.iter().map(|l| &l.path).collect::<Vec<_>>()
    );

    // Reclaim removes the stale one inside the container, and only it.
    let out = env.run(["--scan", "--reclaim", "--config", cfg]);
    let table = util::stdout(&out);
    assert!(table.contains("removed /proc/"), "{table}");
    let ls = pm.run(&["exec", "db-1", "ls", "/run"]);
    let listing = String::from_utf8_lossy(&ls.stdout);
    assert!(
        listing.contains("app.pid") && !listing.contains("old.pid"),
        "{listing}"
    );
    let journal = env.journal();
    assert!(
        journal
            .iter()
            .any(|e| e["path"].as_str() == Some(&*inside.join("old.pid").to_string_lossy())),
        "{journal:?}"
    );

    // The journal names the container (by the runtime's identity of it) and the lock's path
    // there, and the directories from the container's root down to the lock's.
    let line = journal
        .iter()
        .rev()
        .find(|e| e["event"] == "reclaim")
        .unwrap();
    assert_eq!(line["container"]["runtime"], "podman", "{line}");
    assert_eq!(line["container"]["id"], db.id.as_str(), "{line}");
    assert_eq!(line["container"]["name"], "db-1", "{line}");
    assert_eq!(line["container"]["path"], "/run/old.pid", "{line}");
    assert_eq!(line["dirs"].as_array().map(Vec::len), Some(2), "{line}");

    // `restore` puts it back inside the same container, through those same directories.
    let out = env.run(["restore", "--last-batch"]);
    assert_eq!(out.status.code(), Some(0), "{}", util::stderr(&out));
    assert!(
        util::stdout(&out).contains("restored /run/old.pid in container db-1 (podman "),
        "{}",
        util::stdout(&out)
    );
    let cat = pm.run(&["exec", "db-1", "cat", "/run/old.pid"]);
    assert_eq!(String::from_utf8_lossy(&cat.stdout), format!("{gone}\n"));

    // Removed again, then the container stops: restore says how to put it back by hand.
    let out = env.run(["--scan", "--reclaim", "--config", cfg]);
    assert!(
        util::stdout(&out).contains("removed /proc/"),
        "{}",
        util::stdout(&out)
    );
    pm.kill("db-1");
    let out = env.run(["restore", "--last-batch"]);
    let said = util::stderr(&out);
    assert_ne!(out.status.code(), Some(0), "{said}");
    assert!(
        said.contains("container db-1 (podman ")
            && said.contains("does not run now")
            && said.contains("podman cp ")
            && said.contains("db-1:/run/old.pid"),
        "{said}"
    );
}

/// What a container shows of the host is the host's: a host directory mounted at one of its
/// lock places, or below one, is never reclaimed through the container (it is found under its
/// host path when a host root holds it).
#[test]
fn a_host_directory_mounted_into_a_container_is_not_reclaimed_through_it() {
    let Some(pm) = podman_or_skip("host directory in a container") else {
        return;
    };
    let env = Env::new();
    // Root's directory, outside every configured root, with a stale-looking pid file.
    let secret = env.path().join("secret");
    std::fs::create_dir(&secret).unwrap();
    let precious = secret.join("daemon.pid");
    std::fs::write(&precious, "4242\n").unwrap();
    let place = env.path().join("place");
    std::fs::create_dir(&place).unwrap();
    let cfg = env.path().join("place.json");
    std::fs::write(
        &cfg,
        format!(r#"{{"roots": [{{"path": "{}"}}]}}"#, place.display()),
    )
    .unwrap();
    let cfg = cfg.to_str().unwrap();
    // `over` mounts it at the place itself; `under` has the place on its own file system, with
    // the host directory mounted below it, and a stale pid file of its own beside it.
    let over = pm.run_detached(
        "over-1",
        &["-v", &format!("{}:{}", secret.display(), place.display())],
        "exec sleep 1000",
    );
    let under = pm.run_detached(
        "under-1",
        &[
            "-v",
            &format!("{}:{}/sub", secret.display(), place.display()),
        ],
        &format!("echo 4243 > {}/own.pid && exec sleep 1000", place.display()),
    );
    let in_root = |pid: i32, rel: &str| {
        Path::new("/proc")
            .join(pid.to_string())
            .join("root")
            .join(place.strip_prefix("/").unwrap())
            .join(rel)
    };
    let own = in_root(under.pid, "own.pid");
    pm.wait_file(&own);
    assert!(in_root(over.pid, "daemon.pid").exists());
    assert!(in_root(under.pid, "sub/daemon.pid").exists());

    let report = scan_config(&env, &["--config", cfg]);
    assert!(
        report.lock(&in_root(over.pid, "daemon.pid")).is_none(),
        "a host directory mounted at a container's lock place was scanned as the container's"
    );
    assert_eq!(report.expect_lock(&own).verdict, "stale");

    let out = env.run(["--scan", "--reclaim", "--config", cfg]);
    let table = util::stdout(&out);
    assert!(
        precious.exists(),
        "root removed a host file through a container\n{table}"
    );
    assert!(
        !own.exists(),
        "the container's own stale pid file is reclaimed\n{table}"
    );
    assert!(table.contains("on another mount"), "{table}");
}

#[test]
fn a_postmaster_pid_naming_a_containers_pid_1_that_is_another_program_is_stale() {
    let Some(pm) = podman_or_skip("postgres volume") else {
        return;
    };
    let env = Env::new();
    let data = env.path().join("pgdata");
    std::fs::create_dir(&data).unwrap();
    let vol = format!("{}:/var/lib/postgresql/data", data.display());
    let write = "cd /var/lib/postgresql/data && \
        printf '1\\n/var/lib/postgresql/data\\n%s\\n5432\\n/var/run/postgresql\\n*\\n  5432001         0\\nready   \\n' \"$(date +%s)\" > postmaster.pid";
    // The process that wrote it, running on as another program (an entrypoint that wrote the
    // file and exec'd something else): its name proves nothing either way.
    pm.run_detached(
        "pg-1",
        &["-v", &vol],
        &format!("{write} && exec sleep 1000"),
    );
    let pidfile = data.join("postmaster.pid");
    pm.wait_file(&pidfile);
    let report = scan(&env, &[&data]);
    let l = report.expect_lock(&pidfile);
    let text = joined(l);
    assert_eq!(l.dialect, "postgres");
    assert_eq!(l.verdict, "unknown", "{text}");
    assert!(text.contains("container pg-1 (podman "), "{text}");
    assert!(
        text.contains("nothing proves the lock is not its"),
        "{text}"
    );

    // What a postgres container leaves when it is killed and started again with another
    // command: its new PID 1 started after the server recorded its start.
    // (Recorded, and judged again as the recording says on a clock known not to have
    // stepped, the host up for an hour: the later start proves reuse only so.)
    pm.kill("pg-1");
    std::thread::sleep(std::time::Duration::from_secs(3));
    pm.run_detached("pg-2", &["-v", &vol], "exec sleep 1000");
    let (report, _) = scan_replayed(&env, &["--json"], &data, |ev| {
        steady(ev);
        up_for_at_least(ev, 3600);
    });
    let l = report.expect_lock(&pidfile);
    let text = joined(l);
    assert_eq!(l.verdict, "stale", "{text}");
    assert!(text.contains("container pg-2 (podman "), "{text}");
    assert!(text.contains("was reused"), "{text}");
}

/// What a container writes in its own root lands in its overlay's upper directory, in the
/// runtime's storage on the host, and what its image holds is in the layers below: the same
/// files, seen from the host under other paths on another device. Found there, each is judged
/// where the container sees it, by the PIDs it has inside.
#[test]
fn a_pid_file_in_a_containers_storage_is_judged_by_the_container_that_sees_it() {
    if let Some(pm) = podman_or_skip("container storage") {
        pid_files_in_storage(pm);
    }
}

/// The same, with the container's root mounted by a `fuse-overlayfs` daemon (whose layers are
/// on its command line, not in any mount table).
#[test]
fn a_pid_file_in_a_fuse_overlayfs_containers_storage_is_judged_by_the_container() {
    match Podman::start_fuse_overlay() {
        Ok(pm) => pid_files_in_storage(pm),
        Err(why) => util::skip(format!("fuse-overlayfs storage: {why}")),
    }
}

/// Where an image's layers' absolute paths do not fit in a page of mount options (many layers,
/// or a long storage path), Podman and Docker mount a container's root from their storage
/// directory, naming each lower layer by a short symlink (`lowerdir=l/SHORT:...`,
/// `upperdir=ID/diff`): an image layer's pid file is judged by the container all the same,
/// and not removed from under its overlay.
#[test]
fn a_pid_file_in_an_image_layer_named_by_a_short_link_is_judged_by_the_container() {
    let pm = match Podman::start_deep_storage() {
        Ok(pm) => pm,
        Err(why) => return util::skip(format!("a deep container storage: {why}")),
    };
    let env = Env::new();
    let gone = util::dead_pid();
    // An image of three layers: its first with a live and a stale pid file.
    let rootfs = env.path().join("image");
    busybox_root(&rootfs).unwrap();
    std::fs::write(rootfs.join("etc/baked.pid"), "1\n").unwrap();
    std::fs::write(rootfs.join("etc/old.pid"), format!("{gone}\n")).unwrap();
    pm.import_dir(&rootfs, "localhost/locksmith-layers:1")
        .unwrap();
    for (from, to) in [("1", "2"), ("2", "3")] {
        let image = format!("localhost/locksmith-layers:{from}");
        let out = pm.run(&[
            "run",
            "--network",
            "none",
            "--name",
            "step",
            &image,
            "touch",
            "/etc/step",
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let out = pm.run(&[
            "commit",
            "-q",
            "step",
            &format!("localhost/locksmith-layers:{to}"),
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        pm.run(&["rm", "-f", "step"]);
    }
    let app = pm.run_detached_from(
        "localhost/locksmith-layers:3",
        "app-1",
        &[],
        "exec sleep 1000",
    );
    let table = std::fs::read_to_string(format!("/proc/{}/mountinfo", app.pid)).unwrap();
    let root = table
        .lines()
        .find(|l| l.split(' ').nth(4) == Some("/"))
        .unwrap();
    assert!(
        root.contains("lowerdir=l/") && root.contains(",upperdir="),
        "the layers named by short links: {root}"
    );
    let out = pm.run(&["inspect", "-f", "{{.GraphDriver.Data.LowerDir}}", "app-1"]);
    let lower = String::from_utf8_lossy(&out.stdout)
        .trim()
        .split(':')
        .map(|d| std::fs::canonicalize(d).unwrap())
        .find(|d| d.join("etc/baked.pid").exists())
        .expect("the image's first layer");

    let report = scan(&env, &[&pm.storage().join("overlay")]);
    let app = "container app-1 (podman ";
    expect_judged(&report, &lower.join("etc/baked.pid"), "live", &[app]);
    let gone_there = format!("no PID {gone} there");
    let old = lower.join("etc/old.pid");
    expect_judged(
        &report,
        &old,
        "stale",
        &[app, "(as /etc/old.pid)", &gone_there],
    );
    // Not removed from the layer under the mounted overlay.
    reclaim_keeps_layer_files(&env, &lower, "/etc/old.pid");
    assert!(old.exists());
}

/// A runtime inside a container (a Kubernetes node in a container, Podman in Podman) mounts
/// its own containers' roots with layers named by its own paths, here in a volume of the
/// outer container: a pid file of the inner one, found on the host's side of the volume, is
/// judged by the inner namespace's PIDs (PID 4 there is alive; in the outer container there is
/// no PID 4). The inner namespace shares the outer container's cgroup, but it is not that
/// container: a lock reclaimed through its root is restored there, not in the outer one. And
/// a stale one is not removed from the layer under the inner overlay.
#[test]
fn a_pid_file_of_a_container_inside_a_container_is_judged_by_the_inner_one() {
    let Some(pm) = podman_or_skip("a container inside a container") else {
        return;
    };
    let env = Env::new();
    let volume = env.path().join("node-var");
    std::fs::create_dir(&volume).unwrap();
    let gone = util::dead_pid();
    // The inner root: the outer one's busybox as its image layer, in the volume, mounted with
    // the outer container's paths; three short-lived processes first, so that the inner
    // PIDs are not the outer ones.
    let script = format!(
        "i=/var/lib/inner && mkdir -p $i/lower/dev $i/lower/proc $i/lower/app $i/upper $i/work $i/merged && \
         cp -a /bin $i/lower/ && cp -a /dev/null $i/lower/dev/ && \
         mount -t overlay overlay -o lowerdir=$i/lower,upperdir=$i/upper,workdir=$i/work $i/merged && \
         sh -c : && sh -c : && sh -c : && \
         {{ unshare -p -m -f chroot $i/merged sh -c 'mount -t proc proc /proc; mkdir -p /app/tmp/pids; \
            cd /app; sleep 1000 & echo $! > /app/tmp/pids/worker.pid; echo {gone} > /app/tmp/pids/old.pid; \
            exec sleep 1000' & }} && exec sleep 1000"
    );
    let node = pm.run_detached(
        "node-1",
        &[
            "--privileged",
            "-v",
            &format!("{}:/var/lib/inner", volume.display()),
        ],
        &script,
    );
    let pids = volume.join("upper/app/tmp/pids");
    pm.wait_file(&pids.join("old.pid"));
    let worker: i32 = std::fs::read_to_string(pids.join("worker.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let outer = std::fs::read_dir(format!("/proc/{}/root/proc", node.pid))
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .collect::<Vec<_>>();
    assert!(
        !outer.contains(&worker),
        "the outer container has no PID {worker}: {outer:?}"
    );

    let report = scan(&env, &[&volume]);
    let live = report.expect_lock(&pids.join("worker.pid"));
    assert_eq!(live.verdict, "live", "{}", joined(live));
    let c = live.process.as_ref().unwrap().container.as_ref().unwrap();
    assert_eq!(c.ns_pid, Some(i64::from(worker)));
    assert_eq!(c.runtime, "unknown", "not the outer container: {c:?}");
    expect_judged(
        &report,
        &pids.join("old.pid"),
        "stale",
        &["(as /app/tmp/pids/old.pid): no PID"],
    );

    // Not from the volume, nor through the outer container's root: both are the inner
    // overlay's upper layer.
    for dir in [
        pids.clone(),
        Path::new("/proc")
            .join(node.pid.to_string())
            .join("root/var/lib/inner/upper/app/tmp/pids"),
    ] {
        reclaim_keeps_layer_files(&env, &dir, "as /app/tmp/pids/old.pid");
        assert!(pids.join("old.pid").exists());
    }
    // Through the inner root: removed, and put back there.
    let inner = pm_child_in_other_ns(node.pid);
    let inside = Path::new("/proc").join(inner.to_string()).join("root/app");
    reclaimed_and_restored(&env, &inside, &pids.join("old.pid"), &format!("{gone}\n"));
}

/// The host PID of the first descendant of `pid` in another PID namespace than `pid`'s.
fn pm_child_in_other_ns(pid: i32) -> i32 {
    let ns = |p: i32| std::fs::read_link(format!("/proc/{p}/ns/pid")).ok();
    let mut todo = vec![pid];
    while let Some(p) = todo.pop() {
        let children =
            std::fs::read_to_string(format!("/proc/{p}/task/{p}/children")).unwrap_or_default();
        for c in children.split_whitespace().filter_map(|c| c.parse().ok()) {
            if ns(c) != ns(pid) {
                return c;
            }
            todo.push(c);
        }
    }
    panic!("no process of {pid} in a namespace of its own")
}

/// A container that joins another's PID namespace (`--pid container:NAME`, a debugging sidecar,
/// a pod sharing its PIDs) keeps a root of its own: its pid files, in its own storage, are
/// judged in the namespace it shares, seen through its own mount table; a scan of the
/// configured places looks inside its root too, and what a reclaim removes there is restored
/// there.
#[test]
fn a_pid_file_of_a_container_sharing_another_ones_pid_namespace_is_judged_there() {
    // A scan of the configured places walks every container's: no other test's meanwhile.
    let _alone = quiet::absent(Fact::Container);
    let Some(pm) = podman_or_skip("shared PID namespace") else {
        return;
    };
    let env = Env::new();
    pm.run_detached("main-1", &[], "exec sleep 1000");
    let gone = util::dead_pid();
    pm.run_detached(
        "side-1",
        &["--pid", "container:main-1"],
        &format!("echo $$ > /run/side.pid && echo {gone} > /run/old.pid && exec sleep 1000"),
    );
    let out = pm.run(&["inspect", "-f", "{{.GraphDriver.Data.UpperDir}}", "side-1"]);
    let upper = std::fs::canonicalize(String::from_utf8_lossy(&out.stdout).trim()).unwrap();
    pm.wait_file(&upper.join("run/old.pid"));
    let inner: i64 = std::fs::read_to_string(upper.join("run/side.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert_ne!(inner, 1, "the sidecar is not the namespace's PID 1");

    let report = scan(&env, &[&upper]);
    let side = report.expect_lock(&upper.join("run/side.pid"));
    assert_eq!(side.verdict, "live", "{}", joined(side));
    let c = side.process.as_ref().unwrap().container.as_ref().unwrap();
    assert_eq!(c.ns_pid, Some(inner));
    let old = report.expect_lock(&upper.join("run/old.pid"));
    assert_eq!(old.verdict, "stale", "{}", joined(old));
    assert!(
        joined(old).contains("(as /run/old.pid)")
            && joined(old).contains(&format!("no PID {gone} there")),
        "{}",
        joined(old)
    );

    // The sidecar's own /run, found through its own root by a scan without PATH.
    let cfg = run_only_config(&env);
    let cfg = cfg.to_str().unwrap();
    let report = scan_config(&env, &["--config", cfg]);
    let inside = |l: &&Lock| l.path.starts_with("/proc/") && l.path.ends_with("/root/run/old.pid");
    let found: Vec<&Lock> = report.locks.iter().filter(inside).collect();
    assert_eq!(
        found.len(),
        1,
        "{:?}",
        report.locks.iter().map(|l| &l.path).collect::<Vec<_>>()
    );
    assert_eq!(found[0].verdict, "stale", "{}", joined(found[0]));
    let dir = Path::new(&found[0].path).parent().unwrap().to_path_buf();
    let said = reclaimed_and_restored(&env, &dir, &upper.join("run/old.pid"), &format!("{gone}\n"));
    assert!(said.contains("in container side-1 (podman "), "{said}");
}

fn pid_files_in_storage(pm: Podman) {
    let env = Env::new();
    // An image with a pid file naming PID 1 in its one layer.
    let rootfs = env.path().join("image");
    busybox_root(&rootfs).unwrap();
    std::fs::write(rootfs.join("etc/baked.pid"), "1\n").unwrap();
    pm.import_dir(&rootfs, "localhost/locksmith-baked:test")
        .unwrap();

    let gone = util::dead_pid();
    let postmaster = "mkdir -p /var/lib/postgresql/data && cd /var/lib/postgresql/data && \
        printf '1\\n/var/lib/postgresql/data\\n%s\\n5432\\n/var/run/postgresql\\n*\\n  5432001         0\\nready   \\n' \"$(date +%s)\" > postmaster.pid";
    pm.run_detached_from(
        "localhost/locksmith-baked:test",
        "app-1",
        &[],
        &format!(
            "{postmaster} && echo 1 > /run/app.pid && echo {gone} > /run/old.pid && exec sleep 1000"
        ),
    );
    let dir = |key: &str| {
        let out = pm.run(&[
            "inspect",
            "-f",
            &format!("{{{{.GraphDriver.Data.{key}}}}}"),
            "app-1",
        ]);
        let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
        std::fs::canonicalize(text.split(':').next().unwrap()).unwrap()
    };
    let (upper, lower) = (dir("UpperDir"), dir("LowerDir"));
    pm.wait_file(&upper.join("run/old.pid"));
    let storage = pm.path().join("root/overlay");

    let report = scan(&env, &[&storage]);
    let app = report.expect_lock(&upper.join("run/app.pid"));
    assert_eq!(app.verdict, "live", "{}", joined(app));
    let c = app.process.as_ref().unwrap().container.as_ref().unwrap();
    assert_eq!(c.name.as_deref(), Some("app-1"));
    assert_eq!(c.ns_pid, Some(1));
    assert!(
        joined(app).contains("the file is also seen by this host (as "),
        "{}",
        joined(app)
    );
    let app = "container app-1 (podman ";
    let gone_there = format!("no PID {gone} there");
    let old = upper.join("run/old.pid");
    expect_judged(
        &report,
        &old,
        "stale",
        &[app, "(as /run/old.pid)", &gone_there],
    );
    // The image's file, through the image layer the container's root shows.
    expect_judged(&report, &lower.join("etc/baked.pid"), "live", &[app]);
    // A postgres server's file in the container's own root names its PID 1, another program.
    let pg = report.expect_lock(&upper.join("var/lib/postgresql/data/postmaster.pid"));
    assert_eq!(pg.dialect, "postgres");
    assert_eq!(pg.verdict, "unknown", "{}", joined(pg));
    assert!(
        joined(pg).contains("container app-1 (podman "),
        "{}",
        joined(pg)
    );

    // The stale one is not removed from under the mounted overlay (what the overlay shows
    // would be undefined): the reclaim says where to remove it, and keeps it.
    reclaim_keeps_layer_files(&env, &upper, "/run/old.pid");
    assert!(old.exists());
    // Through the container's root it goes, and only it.
    let inside = Path::new("/proc")
        .join(pm.pid("app-1").to_string())
        .join("root");
    let out = env.run(["--scan", "--reclaim", inside.join("run").to_str().unwrap()]);
    assert!(
        util::stdout(&out).contains("removed "),
        "{}",
        util::stdout(&out)
    );
    let ls = pm.run(&["exec", "app-1", "ls", "/run", "/etc"]);
    let listing = String::from_utf8_lossy(&ls.stdout);
    assert!(
        listing.contains("app.pid")
            && listing.contains("baked.pid")
            && !listing.contains("old.pid"),
        "{listing}"
    );
    assert!(
        upper
            .join("var/lib/postgresql/data/postmaster.pid")
            .exists()
    );
    // And `restore` puts it back there.
    let out = env.run(["restore", "--last-batch"]);
    assert_eq!(out.status.code(), Some(0), "{}", util::stderr(&out));
    let cat = pm.run(&["exec", "app-1", "cat", "/run/old.pid"]);
    assert_eq!(String::from_utf8_lossy(&cat.stdout), format!("{gone}\n"));
}

#[test]
fn two_containers_mounting_one_dir_at_different_places() {
    let Some(pm) = podman_or_skip("shared volume") else {
        return;
    };
    let env = Env::new();
    let shared = env.path().join("shared");
    std::fs::create_dir(&shared).unwrap();
    // worker-1 sees the directory at /mnt/work; api-1 serves the app from /data/app.
    pm.run_detached(
        "worker-1",
        &strs(&host_programs(vec![
            "-v".into(),
            format!("{}:/mnt/work", shared.display()),
        ])),
        RUBY_SERVER,
    );
    let api = pm.run_detached(
        "api-1",
        &strs(&host_programs(vec![
            "-v".into(),
            format!("{}:/data", shared.display()),
            "-w".into(),
            "/data".into(),
        ])),
        &format!(
            "mkdir -p app/tmp/pids && cd app && echo 1 > tmp/pids/server.pid && {RUBY_SERVER}"
        ),
    );
    let pidfile = shared.join("app/tmp/pids/server.pid");
    pm.wait_file(&pidfile);

    let report = scan(&env, &[&shared]);
    let l = report.expect_lock(&pidfile);
    let text = joined(l);
    assert_eq!(l.verdict, "live", "{text}");
    let p = l.process.as_ref().unwrap();
    assert_eq!(p.pid, api.pid as i64);
    assert_eq!(
        p.container.as_ref().unwrap().name.as_deref(),
        Some("api-1"),
        "{text}"
    );
    assert!(
        text.contains("container worker-1 (podman ")
            && text.contains("/mnt/work/app/tmp/pids/server.pid"),
        "the other container's view is named: {text}"
    );

    // Without api-1, worker-1's PID 1 (a server working in /, started before the file) may
    // or may not be this app's server: not proven either way.
    pm.kill("api-1");
    let report = scan(&env, &[&shared]);
    let l = report.expect_lock(&pidfile);
    let text = joined(l);
    assert_eq!(l.verdict, "unknown", "{text}");
    assert!(
        text.contains("container worker-1 (podman ")
            && text.contains("not in the application directory /mnt/work/app"),
        "{text}"
    );
    // Once the only container that sees it is one started after it was written, its PID 1
    // was reused.
    pm.kill("worker-1");
    std::thread::sleep(std::time::Duration::from_secs(3));
    pm.run_detached(
        "worker-2",
        &strs(&host_programs(vec![
            "-v".into(),
            format!("{}:/mnt/work", shared.display()),
        ])),
        RUBY_SERVER,
    );
    // (Recorded, and judged again as the recording says on a clock known not to have
    // stepped, the host up for an hour: the later start proves reuse only so.)
    let (report, _) = scan_replayed(&env, &["--json"], &shared, |ev| {
        steady(ev);
        up_for_at_least(ev, 3600);
    });
    let l = report.expect_lock(&pidfile);
    let text = joined(l);
    assert_eq!(l.verdict, "stale", "{text}");
    assert!(
        text.contains("container worker-2 (podman ") && text.contains("was reused"),
        "{text}"
    );
}

/// A sandbox root makes with `unshare --mount` and `unshare --pid --fork`: a root of its own
/// with a `/.flatpak-info`, and a host directory bind-mounted into it where its PID 2 writes
/// `.lock`. Root made its namespaces, so it is proven, but no runtime's state names it: the
/// `/.flatpak-info` in its root (which whoever runs inside may rewrite) names nothing.
#[test]
fn a_sandbox_made_by_root_with_unshare_writing_pid_2() {
    if !util::require_that(
        rustix::process::geteuid().is_root(),
        "the unshare sandbox: unshare --pid --mount needs root",
    ) {
        return;
    }
    // A root of its own: a scan of the configured roots would walk its lock places.
    let _sandbox = quiet::making(Fact::Container);
    let env = Env::new();
    let root = env.path().join("sandbox");
    busybox_root(&root).unwrap();
    std::fs::create_dir_all(root.join("config")).unwrap();
    std::fs::write(
        root.join(".flatpak-info"),
        "[Application]\nname=org.example.Ide\nruntime=runtime/org.example.Platform/x86_64/1\n\n[Instance]\ninstance-id=2718281828\n",
    )
    .unwrap();
    let config = env.path().join("ide-config");
    std::fs::create_dir(&config).unwrap();
    let script = env.path().join("sandbox.sh");
    std::fs::write(
        &script,
        format!(
            "touch '{root}/dev/null' && mount --bind /dev/null '{root}/dev/null' && \
             mount --bind '{config}' '{root}/config' && \
             exec unshare --pid --fork --kill-child chroot '{root}' /bin/sh -c 'sleep 1000 & echo $! > /config/.lock; wait'\n",
            config = config.display(),
            root = root.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut sandbox = Guard::spawn(
        Command::new("unshare")
            .args(["--mount", "--propagation", "private", "sh"])
            .arg(&script)
            .stdout(Stdio::null()),
    );
    let lock = config.join(".lock");
    wait_for("the sandbox to write its lock", || {
        std::fs::read_to_string(&lock)
            .ok()
            .filter(|t| t.trim() == "2")
    });

    let report = scan(&env, &[&config]);
    let l = report.expect_lock(&lock);
    let text = joined(l);
    assert_eq!(l.verdict, "live", "{text}");
    let c = l.process.as_ref().unwrap().container.as_ref().unwrap();
    assert_eq!(c.runtime, "unknown", "{c:?}");
    assert_eq!(c.name, None, "{c:?}");
    assert!(c.id.starts_with("pid:["), "{c:?}");
    assert_eq!(c.ns_pid, Some(2));
    assert!(text.contains("PID 2 in PID namespace pid:["), "{text}");

    // The sandbox ends. Its lock is no longer anybody's: where the host's PID 2 is a kernel
    // thread (kthreadd, on every ordinary Linux machine) that is proof, and the lock is stale;
    // anywhere else it is at least no longer the sandbox's.
    sandbox.kill();
    let kthread = std::fs::read("/proc/2/cmdline").is_ok_and(|c| c.is_empty());
    let report = wait_for("the sandbox to end", || {
        let r = scan(&env, &[&config]);
        let l = r.expect_lock(&lock);
        let gone = l.process.as_ref().is_none_or(|p| p.container.is_none());
        gone.then_some(r)
    });
    let l = report.expect_lock(&lock);
    let text = joined(l);
    if kthread {
        assert_eq!(l.verdict, "stale", "{text}");
        assert!(text.contains("kernel thread"), "{text}");
    }
}

/// The same kind of sandbox made by a user, with no privilege (uid 65534: user, mount and PID
/// namespaces of its own), writing its `/.flatpak-info` and `/etc/hostname`: it is no proven
/// container, so it is called by its namespace only and never named by what it wrote, but
/// the process there whose PID the lock holds is found, and the lock is live.
#[test]
fn a_users_own_sandbox_is_a_pid_namespace_whose_live_owner_is_found() {
    let env = Env::new();
    std::fs::set_permissions(env.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let config = env.path().join("ide-config");
    std::fs::create_dir(&config).unwrap();
    std::os::unix::fs::chown(&config, Some(65534), Some(65534)).unwrap_or(());
    let Some(_ns) = UserNamespace::start_or_skip(
        &env.path().join("sandbox"),
        &[(&config, "/config")],
        "printf '[Application]\\nname=org.example.Ide\\n' > /.flatpak-info && \
         echo devbox > /etc/hostname && \
         sleep 1000 & echo $! > /config/.lock; wait",
        None,
    ) else {
        return;
    };
    let lock = config.join(".lock");
    let ns_pid: i64 = wait_for("the sandbox to write its lock", || {
        std::fs::read_to_string(&lock).ok()?.trim().parse().ok()
    });
    let report = scan(&env, &[&config]);
    let l = report.expect_lock(&lock);
    let text = joined(l);
    assert_eq!(l.verdict, "live", "{text}");
    let c = l.process.as_ref().unwrap().container.as_ref().unwrap();
    assert_eq!(
        (c.runtime.as_str(), c.name.as_deref()),
        ("unknown", None),
        "{c:?}"
    );
    assert_eq!(c.ns_pid, Some(ns_pid));
    assert!(
        !text.contains("org.example.Ide") && !text.contains("devbox"),
        "{text}"
    );
}

#[test]
fn a_kernel_lock_held_in_a_container_names_the_container_of_its_holder() {
    let Some(pm) = podman_or_skip("flock in a container") else {
        return;
    };
    let env = Env::new();
    let data = env.path().join("data");
    std::fs::create_dir(&data).unwrap();
    // util-linux flock(1) from the host (busybox-static has no flock applet), with the host's
    // libraries, as the container's PID 1.
    let options = host_programs(vec!["-v".into(), format!("{}:/data", data.display())]);
    let c = pm.run_detached(
        "cron-1",
        &strs(&options),
        "exec /usr/bin/flock /data/job.lock sleep 1000",
    );
    let lock = data.join("job.lock");
    let report = wait_for("the flock holder", || {
        let r = scan(&env, &[&data]);
        r.lock(&lock)
            .is_some_and(|l| l.verdict == "live")
            .then_some(r)
    });
    let l = report.expect_lock(&lock);
    let h = l
        .holders
        .iter()
        .find(|h| h.container.is_some())
        .unwrap_or_else(|| panic!("a holder in the container: {:?}", l.holders));
    let ctr = h.container.as_ref().unwrap();
    assert_eq!(ctr.name.as_deref(), Some("cron-1"));
    assert_eq!(ctr.runtime, "podman");
    assert_eq!(ctr.ns_pid, Some(1), "flock is PID 1 of the container");
    assert_eq!(h.pid, c.pid as i64);
    let out = env.run(["--scan".as_ref(), data.as_os_str()]);
    assert!(
        util::stdout(&out).contains("ctr:cron-1"),
        "{}",
        util::stdout(&out)
    );
}

/// On btrfs a subvolume's files carry a device number no mount table shows: the container that
/// bind-mounts the subvolume is still found, by the btrfs mount the file lies under.
#[test]
fn a_container_mounting_a_btrfs_subvolume() {
    let Some(pm) = podman_or_skip("btrfs subvolume") else {
        return;
    };
    if !util::require("mkfs.btrfs") {
        return;
    }
    let env = Env::new();
    let vol = match BtrfsSubvolume::make(env.path()) {
        Ok(vol) => vol,
        Err(why) => return util::skip(format!("the btrfs subvolume: {why}")),
    };
    let sub = vol.sub.clone();
    pm.run_detached(
        "web-btrfs",
        &strs(&host_programs(vec![
            "-v".into(),
            format!("{}:/app", sub.display()),
            "-w".into(),
            "/app".into(),
        ])),
        &format!("mkdir -p tmp/pids && echo 1 > tmp/pids/server.pid && {RUBY_SERVER}"),
    );
    let pidfile = sub.join("tmp/pids/server.pid");
    pm.wait_file(&pidfile);
    let l = scan(&env, &[&sub]);
    let l = l.expect_lock(&pidfile);
    assert_eq!(l.verdict, "live", "{}", joined(l));
    let c = l.process.as_ref().unwrap().container.as_ref().unwrap();
    assert_eq!(c.name.as_deref(), Some("web-btrfs"));

    pm.kill("web-btrfs");
    let r = scan(&env, &[&sub]);
    let l = r.expect_lock(&pidfile);
    assert_eq!(l.verdict, "stale", "{}", joined(l));
    // Podman's storage holds nothing on the file system by now: it can be unmounted.
    drop(pm);
    drop(vol);
}

/// A lock that names its PID namespace (as the engine's records and Mercurial's locks do) is
/// judged in that namespace while it runs.
#[test]
fn a_pid_of_a_named_namespace_is_judged_there() {
    use crate::util::snapshot;
    use locksmith::judge::{OwnerClaim, Writers, judge_owner};
    use locksmith::probe::Snapshot;
    use locksmith::verdict::Verdict;
    if !util::require_that(
        rustix::process::geteuid().is_root(),
        "the named namespace: unshare --pid needs root",
    ) {
        return;
    }
    // No container or namespace of another test may be handed this namespace's inode number
    // once it ends (the container's side taken first: see util/quiet.rs).
    let _no_container = quiet::absent(Fact::Container);
    let _namespace = quiet::making(Fact::PidNamespace);
    let mut ns = Guard::spawn(
        Command::new("unshare")
            .args(["--pid", "--fork", "--kill-child", "sleep", "1000"])
            .stdout(Stdio::null()),
    );
    // The namespace's PID 1 is unshare's child: find it and its namespace.
    let (host_pid, inode) = wait_for("the namespace's PID 1", || {
        let children =
            std::fs::read_to_string(format!("/proc/{0}/task/{0}/children", ns.pid())).ok()?;
        let child: i32 = children.split_whitespace().next()?.parse().ok()?;
        let link = std::fs::read_link(format!("/proc/{child}/ns/pid")).ok()?;
        let inode = locksmith::probe::host::parse_ns_link(&link.to_string_lossy())?;
        Some((child, inode))
    });
    let snap = snapshot();
    if snap.host.pid_ns != Some(0xEFFF_FFFC) {
        return util::skip("the named namespace: we do not run in the host's PID namespace");
    }
    let dir = tempfile::tempdir().unwrap();
    let lock = dir.path().join("owner.lock");
    std::fs::write(&lock, "").unwrap();
    let claim = |pid, snap: &Snapshot| OwnerClaim {
        pid_ns: Some(inode),
        written_ms: Some(snap.taken_ms),
        ..OwnerClaim::pid(pid, Writers::ANY)
    };
    let judge_pid = |pid, snap: &Snapshot| judge_owner(&lock, claim(pid, snap), snap).unwrap();
    let live = judge_pid(1, &snap);
    assert_eq!(live.verdict(), Verdict::Live, "{live:?}");
    let p = live.process.expect("the process");
    assert_eq!(p.pid, host_pid);
    let c = p.container.expect("its namespace");
    assert_eq!(c.ns_pid, Some(1));
    assert_eq!(c.id.id, format!("pid:[{inode}]"));
    let gone = judge_pid(77, &snap);
    assert_eq!(gone.verdict(), Verdict::Stale, "{gone:?}");
    assert!(
        gone.evidence[0].contains("no PID 77 in the owner's namespace"),
        "{gone:?}"
    );

    ns.kill();
    wait_for("the namespace to end", || {
        std::fs::metadata(format!("/proc/{host_pid}"))
            .is_err()
            .then_some(())
    });
    // A new namespace may be given the freed inode number: no test of this suite makes one
    // now, but any program on this machine may.
    let reused = || {
        let name = format!("pid:[{inode}]");
        std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
            std::fs::read_link(e.path().join("ns/pid")).is_ok_and(|l| l.to_string_lossy() == name)
        })
    };
    let before = reused();
    let unseen = judge_pid(1, &snapshot());
    if before || reused() {
        return util::skip_even_under_ci(
            "the namespace's inode number went to a namespace of another program: its absence is not checked",
        );
    }
    assert_eq!(unseen.verdict(), Verdict::Foreign, "{unseen:?}");
}

/// Emacs (and vim) write their host name into the lock; in a container that is the
/// container's own host name (from the runtime's `config.json`, not from the container's
/// `/etc/hostname`), and a live owner there is found.
#[test]
fn an_emacs_lock_naming_a_containers_host_name() {
    let Some(pm) = podman_or_skip("emacs lock") else {
        return;
    };
    let env = Env::new();
    let src = env.path().join("src");
    std::fs::create_dir(&src).unwrap();
    // An "emacs" (the host's sleep under that name) editing /src/notes.txt as PID 1, and the
    // lock emacs makes: a symlink `.#notes.txt -> user@host.pid`.
    pm.run_detached(
        "dev-1",
        &strs(&host_programs(vec![
            "-v".into(),
            format!("{}:/src", src.display()),
            "--hostname".into(),
            "devbox".into(),
        ])),
        "ln -s \"root@$(hostname).1\" /src/.#notes.txt && ln -sf /usr/bin/sleep /tmp/emacs && exec /tmp/emacs 1000",
    );
    let lock = src.join(".#notes.txt");
    wait_for("the emacs lock", || lock.symlink_metadata().ok());
    let report = scan(&env, &[&src]);
    let l = report.expect_lock(&lock);
    let text = joined(l);
    assert_eq!(l.dialect, "emacs");
    assert_eq!(l.verdict, "live", "{text}");
    let c = l.process.as_ref().unwrap().container.as_ref().unwrap();
    assert_eq!(c.name.as_deref(), Some("dev-1"));
    assert!(text.contains("the lock names host \"devbox\""), "{text}");
    // Another lock of devbox naming a PID devbox does not have: it may be devbox's emacs
    // that exited, or another machine called devbox writing here (an NFS client of this
    // directory): a host name alone proves nothing, so it is foreign, not stale.
    let other = src.join(".#other.txt");
    std::os::unix::fs::symlink("root@devbox.77", &other).unwrap();
    let report = scan(&env, &[&src]);
    let l = report.expect_lock(&other);
    let text = joined(l);
    assert_eq!(l.verdict, "foreign", "{text}");
    assert!(text.contains("owner host \"devbox\""), "{text}");

    // Once the container is gone, so is its host name: another machine may be called devbox,
    // so its locks are foreign.
    pm.kill("dev-1");
    let report = scan(&env, &[&src]);
    let l = report.expect_lock(&lock);
    assert_eq!(l.verdict, "foreign", "{}", joined(l));
}
