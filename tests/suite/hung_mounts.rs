//! A mount whose server stopped, inside a scanned root: sshfs to an sshd on 127.0.0.1 whose
//! processes are then stopped with SIGSTOP, so every call on the mount waits for ever. Beside
//! it, on the local disk, a stale pid file. `--scan`, `--scan --reclaim`, the boot unit's
//! command and the terminal UI all finish (or stay responsive) in bounded time, name the mount
//! that did not answer among their errors, and judge (and reclaim) the local lock. Before,
//! each of them blocked until killed.
//!
//! Needs root, sshd, sshfs and /dev/fuse (and podman for the container's volume); elsewhere it
//! skips with a message.

use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::util::judging::{ask_here, read_recording, replay_json, written_ago_this_boot};
use crate::util::podman::{Podman, busybox_root};
use crate::util::sshfs::Sshfs;
use crate::util::ui::Ui;
use crate::util::*;

/// The longest any command may take here: the mount's bound (5 s) a few times over, far
/// less than the boot unit's 2 minutes.
const BOUND: Duration = Duration::from_secs(30);

/// sshfs with nothing cached, by sshfs or the kernel: any question about the mount waits.
const UNCACHED: [&str; 3] = ["cache=no", "attr_timeout=0", "entry_timeout=0"];

/// The processes of a tree, stopped with SIGSTOP until dropped (then SIGCONT).
struct Stopped(Vec<i32>);

impl Stopped {
    /// Stops `top` and every process under it, again until no new one appears (a process
    /// forked while the others were being stopped is stopped too).
    fn tree(top: i32) -> Stopped {
        let mut pids: Vec<i32> = Vec::new();
        loop {
            let now = descendants(top);
            let new: Vec<i32> = now.into_iter().filter(|p| !pids.contains(p)).collect();
            if new.is_empty() {
                return Stopped(pids);
            }
            for &pid in &new {
                signal(pid, rustix::process::Signal::STOP);
            }
            pids.extend(new);
        }
    }
}

/// `top` and the processes under it.
fn descendants(top: i32) -> Vec<i32> {
    let mut pids = vec![top];
    let mut i = 0;
    while i < pids.len() {
        let parent = pids[i];
        for e in fs::read_dir("/proc").unwrap().flatten() {
            let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
                continue;
            };
            let Ok(stat) = fs::read_to_string(format!("/proc/{pid}/stat")) else {
                continue;
            };
            // pid (comm) state ppid ...: comm may hold spaces, so split after the last ')'.
            let ppid = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().nth(1))
                .and_then(|p| p.parse::<i32>().ok());
            if ppid == Some(parent) && !pids.contains(&pid) {
                pids.push(pid);
            }
        }
        i += 1;
    }
    pids
}

impl Drop for Stopped {
    fn drop(&mut self) {
        for &pid in &self.0 {
            signal(pid, rustix::process::Signal::CONT);
        }
    }
}

fn signal(pid: i32, sig: rustix::process::Signal) {
    if let Some(p) = rustix::process::Pid::from_raw(pid) {
        let _ = rustix::process::kill_process(p, sig);
    }
}

/// A root holding `export/local.pid` (a dead PID, on the local disk) and `mnt`, the sshfs
/// mount of `export`, whose server is stopped. The mount has not been looked at, so nothing
/// of it is cached on this side: every call on it goes to the stopped server.
struct DeadMount {
    root: PathBuf,
    local: PathBuf,
    mnt: PathBuf,
    // Dropped first: the server goes on before the mount is unmounted.
    _stopped: Stopped,
    _sshfs: Sshfs,
}

fn dead_mount() -> Option<DeadMount> {
    dead_mount_with(&[], |_| ()).map(|(d, ())| d)
}

/// [`dead_mount`], with `before(mnt)` run while the server still answers (to open files on
/// the mount, say).
fn dead_mount_with<T>(options: &[&str], before: impl FnOnce(&Path) -> T) -> Option<(DeadMount, T)> {
    let sshfs = match Sshfs::start_with(options) {
        Ok(s) => s,
        Err(why) => {
            skip(why);
            return None;
        }
    };
    let mnt = sshfs.mnt.clone();
    let root = mnt.parent().unwrap().to_path_buf();
    let local = sshfs.export.join("local.pid");
    fs::write(&local, format!("{}\n", dead_pid())).unwrap();
    let made = before(&mnt);
    // The session is up and serving (a statfs, which nothing caches, was answered), so
    // stopping the server now stops the process that serves the mount.
    let statfs = Command::new("stat")
        .args(["-f", "-c", "%T"])
        .arg(&mnt)
        .output()
        .unwrap();
    assert!(statfs.status.success(), "{statfs:?}");
    let stopped = Stopped::tree(sshfs.server_pid() as i32);
    Some((
        DeadMount {
            root,
            local,
            mnt,
            _stopped: stopped,
            _sshfs: sshfs,
        },
        made,
    ))
}

/// Runs `locksmith ARGS` with a deadline well past [`BOUND`], and checks it ended within it.
fn bounded(cmd: Command, what: &str) -> Output {
    let started = Instant::now();
    let out = run_bounded(cmd, BOUND + Duration::from_secs(30));
    let took = started.elapsed();
    assert!(
        took < BOUND,
        "{what} took {took:?}: {}{}",
        stdout(&out),
        stderr(&out)
    );
    out
}

/// The report's one error for `mnt`: the sshfs mount that did not answer in time.
fn reports_the_dead_mount(report: &Report, mnt: &Path) {
    let errors: Vec<_> = report
        .errors
        .iter()
        .filter(|e| e.path == mnt.display().to_string())
        .collect();
    assert_eq!(errors.len(), 1, "{:#?}", report.errors);
    assert!(
        errors[0]
            .error
            .starts_with("the fuse.sshfs mount of root@127.0.0.1:")
            && errors[0].error.contains("did not answer within 5 s"),
        "{:#?}",
        errors[0]
    );
}

/// `locksmith --scan --json --config CFG`, within [`BOUND`].
fn scan_with(env: &Env, cfg: &Path, what: &str) -> Output {
    let mut cmd = env.cmd(["--scan", "--json", "--config", cfg.to_str().unwrap()]);
    cmd.stdin(Stdio::null());
    bounded(cmd, what)
}

/// A lock whose dialect asked about the dead mount: not stale, and its evidence says which
/// mount did not answer.
fn left_unexamined(found: &Lock) {
    assert!(
        found.evidence.iter().any(|e| e.starts_with(
            "not everything it names could be examined: the fuse.sshfs mount of root@127.0.0.1:"
        ) && e.contains("did not answer within 5 s")),
        "{found:#?}"
    );
    assert_ne!(found.verdict, "stale", "{found:#?}");
}

fn names_the_dead_mount(text: &str, mnt: &Path) -> bool {
    text.lines().any(|l| {
        l.contains(&mnt.display().to_string())
            && l.contains("fuse.sshfs mount")
            && l.contains("did not answer")
    })
}

#[test]
fn a_scan_reports_a_mount_that_does_not_answer_and_judges_the_rest() {
    let Some(d) = dead_mount() else { return };
    let env = Env::new();
    let mut cmd = env.cmd(["--scan".as_ref(), "--json".as_ref(), d.root.as_os_str()]);
    cmd.stdin(Stdio::null());
    let out = bounded(cmd, "--scan --json");
    assert_code(&out, 1);
    let report = parse_report(&out);
    assert_eq!(report.expect_lock(&d.local).verdict, "stale");
    reports_the_dead_mount(&report, &d.mnt);

    // The table says it too (on stderr), and so do the metrics (an error counted).
    let mut cmd = env.cmd(["--scan".as_ref(), d.root.as_os_str()]);
    cmd.stdin(Stdio::null());
    let out = bounded(cmd, "--scan");
    assert_code(&out, 1);
    assert!(stdout(&out).contains("local.pid"), "{}", stdout(&out));
    assert!(
        names_the_dead_mount(&stderr(&out), &d.mnt),
        "{}",
        stderr(&out)
    );
}

/// A container whose lock place holds a volume of the dead mount (`-v MNT:PLACE/remote`,
/// started while the server answered): the place itself is on the container's own file
/// system and is walked there, the volume is known from the container's own mount table to
/// be an sshfs mount, so it alone is asked through the bounded helpers. The scan and the
/// reclaim finish, name the mount as the container shows it, and judge and reclaim the
/// container's own stale pid file beside it.
#[test]
fn a_dead_mount_inside_a_containers_lock_place_is_reported_and_the_rest_judged() {
    let Some(pm) = Podman::or_skip("a dead mount in a container") else {
        return;
    };
    let env = Env::new();
    let (place, cfg) = own_place(&env);
    let script = format!("echo 4243 > {}/own.pid && exec sleep 1000", place.display());
    let Some((_dead, c)) = dead_mount_with(&[], |mnt| {
        let volume = format!("{}:{}/remote", mnt.display(), place.display());
        pm.run_detached("dead-volume-1", &["-v", &volume], &script)
    }) else {
        return;
    };
    let inside = seen_inside(c.pid, &place);
    let own = inside.join("own.pid");
    pm.wait_file(&own);
    let remote = inside.join("remote");

    let out = scan_with(&env, &cfg, "--scan --json with a dead mount in a container");
    let report = parse_report(&out);
    assert_eq!(report.expect_lock(&own).verdict, "stale");
    reports_the_dead_mount(&report, &remote);

    let mut cmd = env.cmd(["--scan", "--reclaim", "--config", cfg.to_str().unwrap()]);
    cmd.stdin(Stdio::null());
    let out = bounded(cmd, "--scan --reclaim with a dead mount in a container");
    assert_code(&out, 0);
    assert!(!own.exists(), "{}", stdout(&out));
    assert!(
        names_the_dead_mount(&stderr(&out), &remote),
        "{}",
        stderr(&out)
    );
}

#[test]
fn reclaim_and_the_boot_unit_finish_and_remove_the_stale_lock_beside_a_dead_mount() {
    let Some(d) = dead_mount() else { return };
    let env = Env::new();
    let mut cmd = env.cmd(["--scan".as_ref(), "--reclaim".as_ref(), d.root.as_os_str()]);
    cmd.stdin(Stdio::null());
    let out = bounded(cmd, "--scan --reclaim");
    assert_code(&out, 0);
    assert!(!d.local.exists(), "{}", stdout(&out));
    assert_eq!(env.journal().len(), 1);
    assert!(
        names_the_dead_mount(&stderr(&out), &d.mnt),
        "{}",
        stderr(&out)
    );

    // The boot unit's own command, with its environment, over a configuration whose root
    // holds the dead mount.
    fs::write(&d.local, format!("{}\n", dead_pid())).unwrap();
    let unit = fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/systemd/locksmith-reclaim.service"),
    )
    .unwrap();
    let exec: Vec<&str> = unit
        .lines()
        .find_map(|l| l.strip_prefix("ExecStart="))
        .expect("the unit's ExecStart")
        .split_whitespace()
        .collect();
    assert!(exec[0].ends_with("/locksmith"), "{exec:?}");
    let etc = env.path().join("etc");
    fs::create_dir_all(etc.join("locksmith")).unwrap();
    let config = etc.join("locksmith/boot.json");
    fs::write(
        &config,
        format!(r#"{{"roots": [{{"path": "{}"}}]}}"#, d.root.display()),
    )
    .unwrap();
    // The unit's arguments, with its configuration file replaced by this test's.
    let mut args: Vec<OsString> = Vec::new();
    let mut rest = exec[1..].iter();
    while let Some(a) = rest.next() {
        args.push(a.into());
        if *a == "--config" {
            rest.next().expect("--config names a file");
            args.push(config.clone().into());
        }
    }
    assert!(args.iter().any(|a| a == "--reclaim"), "{exec:?}");
    let mut cmd = Command::new(BIN);
    cmd.args(&args)
        .env("XDG_CONFIG_HOME", &etc)
        .env("XDG_STATE_HOME", env.path().join("var-lib"))
        .stdin(Stdio::null());
    let out = bounded(cmd, "the boot unit's command");
    assert_code(&out, 0);
    assert!(!d.local.exists(), "{}", stdout(&out));
    assert!(
        names_the_dead_mount(&stderr(&out), &d.mnt),
        "{}",
        stderr(&out)
    );
}

#[test]
fn the_ui_stays_responsive_and_says_which_mount_did_not_answer() {
    let Some(d) = dead_mount() else { return };
    let env = Env::new();
    let mut ui = Ui::start(&env, &[&d.root], &[]);
    ui.wait_for("the local stale lock", |s| {
        s.lines()
            .any(|l| l.contains("local.pid") && l.contains("stale"))
    });
    ui.wait_for("the mount that did not answer", |s| {
        s.contains("did not answer")
    });
    // Keys are handled at once while the mount stays dead (and verdicts are refreshed).
    let started = Instant::now();
    ui.send("?");
    ui.wait_for("the help", |s| s.contains("Copy the path"));
    ui.send("\x1b");
    ui.wait_for("the help closed", |s| !s.contains("Copy the path"));
    assert!(started.elapsed() < Duration::from_secs(5));
    // The stale lock is reclaimed from the UI too.
    ui.send("d");
    ui.wait_for("the dialog", |s| s.contains("Reclaim this stale lock?"));
    ui.send("y");
    wait_until("local.pid removed", || !d.local.exists());
    ui.send("q");
    assert_eq!(ui.wait_exit(), 0);
}

/// A process with a file open on the dead mount and its working directory there (a shell in
/// an sshfs mount whose server stopped, an editor with a file open on it) is looked at by the
/// evidence of every scan, whatever its roots: its descriptors and working directory are read
/// from what the kernel knows, without asking the server. A scan of another tree, whose git
/// and LibreOffice locks need every process's open files and working directories, finishes and
/// judges them.
#[test]
fn a_process_with_files_open_on_a_dead_mount_does_not_stop_the_evidence() {
    // The LibreOffice lock is stale only while no office program runs on this host.
    let _no_office = quiet::absent(quiet::Fact::Office);
    if !quiet::none_running(quiet::Fact::Office) {
        return;
    }
    let tools = tempfile::tempdir().unwrap();
    // A process named git, so that git's judge looks at its working directory.
    let git = tools.path().join("git");
    fs::copy(which("sleep").expect("sleep"), &git).unwrap();
    // Nothing of the mount's files is cached, by sshfs or the kernel: every look that asks
    // goes to the stopped server.
    let Some((d, _holder)) = dead_mount_with(&UNCACHED, |mnt| {
        fs::write(mnt.join("held.txt"), "open on the mount\n").unwrap();
        let mut c = Command::new("sh");
        c.args(["-c", "exec 3<\"$1\"; cd \"$2\" && exec \"$3\" 300", "sh"])
            .arg(mnt.join("held.txt"))
            .arg(mnt)
            .arg(&git);
        let holder = Group::spawn(c);
        let pid = holder.pid();
        wait_within(10, "the holder to open its file on the mount", || {
            let cwd = fs::read_link(format!("/proc/{pid}/cwd")).ok()?;
            let fd = fs::read_link(format!("/proc/{pid}/fd/3")).ok()?;
            (cwd == mnt && fd == mnt.join("held.txt") && comm(pid) == "git").then_some(())
        });
        holder
    }) else {
        return;
    };
    let tree = tempfile::tempdir().unwrap();
    let repo = tree.path().join("repo");
    // A git directory as `git init` lays it out (what git asks of one).
    fs::create_dir_all(repo.join(".git/objects")).unwrap();
    fs::create_dir_all(repo.join(".git/refs/heads")).unwrap();
    fs::write(repo.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
    fs::write(repo.join(".git/index.lock"), "").unwrap();
    let host = rustix::system::uname()
        .nodename()
        .to_string_lossy()
        .into_owned();
    let office = tree.path().join(".~lock.report.odt#");
    fs::write(&office, format!("me,me,{host},01.12.2026 10:00,file:///x;")).unwrap();
    fs::write(tree.path().join("report.odt"), "").unwrap();
    let env = Env::new();
    let recording = env.path().join("recording.json");
    let mut cmd = env.cmd([
        "--scan".as_ref(),
        "--json".as_ref(),
        "--record".as_ref(),
        recording.as_os_str(),
        tree.path().as_os_str(),
    ]);
    cmd.stdin(Stdio::null());
    let out = bounded(cmd, "--scan --json of another tree");
    parse_report(&out);
    // The scan's evidence judged again with the locks ten minutes old, past their writers'
    // start-up, and of this boot, so that the census of processes it read decides (before
    // it, the earlier-boot rule would, without looking at them).
    let mut ev = read_recording(&recording);
    for lock in [&repo.join(".git/index.lock"), &office] {
        written_ago_this_boot(&mut ev, lock, 600);
        ask_here(&mut ev, lock);
    }
    let (report, _) = replay_json(&env, &ev);
    assert_eq!(
        report.expect_lock(&repo.join(".git/index.lock")).verdict,
        "stale",
        "{}",
        stdout(&out)
    );
    let office = report.expect_lock(&office);
    assert_eq!(office.verdict, "stale", "{}", stdout(&out));
    drop(d);
}

/// A container whose lock place is itself a volume of the dead mount (`-v MNT:PLACE`), with
/// the mount a root of the host's too, and nothing cached, by sshfs or the kernel: any question
/// about the mount waits. The container's mount table says the place is on a mount that may
/// hang, so it is asked through the bounded helpers; the host's root is known from the host's
/// own walk. The scan finishes, reports the mount as each sees it, and finds nothing through
/// the container there.
#[test]
fn a_containers_lock_place_that_is_a_dead_mount_is_left_without_waiting() {
    let Some(pm) = Podman::or_skip("a dead mount as a container's lock place") else {
        return;
    };
    let env = Env::new();
    let (place, cfg) = own_place(&env);
    let Some((dead, c)) = dead_mount_with(&UNCACHED, |mnt| {
        let volume = format!("{}:{}", mnt.display(), place.display());
        pm.run_detached("dead-place-1", &["-v", &volume], "exec sleep 1000")
    }) else {
        return;
    };
    fs::write(
        &cfg,
        format!(
            r#"{{"roots": [{{"path": "{}"}}, {{"path": "{}"}}]}}"#,
            place.display(),
            dead.mnt.display()
        ),
    )
    .unwrap();
    let out = scan_with(
        &env,
        &cfg,
        "--scan --json with a dead mount as a container's place",
    );
    let report = parse_report(&out);
    let inside = seen_inside(c.pid, &place);
    assert!(
        !report
            .locks
            .iter()
            .any(|l| Path::new(&l.path).starts_with(&inside)),
        "{}",
        stdout(&out)
    );
    reports_the_dead_mount(&report, &inside);
    // The host's root itself: it cannot be scanned, for the same reason.
    let host = dead.mnt.display().to_string();
    assert!(
        report.errors.iter().any(|e| e.path == host
            && e.error
                .starts_with("cannot scan: the fuse.sshfs mount of root@127.0.0.1:")
            && e.error.contains("did not answer within 5 s")),
        "{:#?}",
        report.errors
    );
}

/// A container whose root file system is on the dead mount (`--rootfs MNT`, started while
/// the server answered, nothing cached): its root is asked about only through a bounded task,
/// since its own mount table says it may hang. The scan finishes, judging the host's place.
#[test]
fn a_container_whose_root_is_on_a_dead_mount_does_not_stop_the_scan() {
    let Some(pm) = Podman::or_skip("a container whose root is on a dead mount") else {
        return;
    };
    let env = Env::new();
    let (place, cfg) = own_place(&env);
    let gone = place.join("gone.pid");
    fs::write(&gone, format!("{}\n", dead_pid())).unwrap();
    let Some((_dead, ())) = dead_mount_with(&UNCACHED, |mnt| {
        busybox_root(mnt).unwrap();
        let root = mnt.to_str().unwrap();
        let out = pm.run(&[
            "run",
            "-d",
            "--network",
            "none",
            "--name",
            "dead-root-1",
            "--rootfs",
            root,
            "sh",
            "-c",
            "exec sleep 1000",
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_ne!(pm.pid("dead-root-1"), 0);
    }) else {
        return;
    };
    let out = scan_with(
        &env,
        &cfg,
        "--scan --json with a container's root on a dead mount",
    );
    assert_eq!(parse_report(&out).expect_lock(&gone).verdict, "stale");
}

/// Inside a container: its lock place holds a vim swap file beside a `notes.txt` that is a
/// symlink to `/data/notes.txt`, and `/data` is the container's volume of the dead mount
/// (`-v MNT:/data`, started while the server answered). Seen from here the symlink leads into
/// `/proc/PID/root/data`, a mount only the container's own mount table shows: the way is
/// resolved inside the container's root, by that table, and the mount asked through a bounded
/// task. The scan finishes and says which mount did not answer.
#[test]
fn a_containers_lock_that_leads_onto_its_dead_volume_is_judged_without_waiting() {
    let Some(pm) = Podman::or_skip("a container's lock leading onto a dead volume") else {
        return;
    };
    let env = Env::new();
    let (place, cfg) = own_place(&env);
    let script = format!("mkdir -p {} && exec sleep 1000", place.display());
    let Some((_dead, c)) = dead_mount_with(&UNCACHED, |mnt| {
        fs::write(mnt.join("notes.txt"), "x").unwrap();
        let volume = format!("{}:/data", mnt.display());
        pm.run_detached("dead-volume-1", &["-v", &volume], &script)
    }) else {
        return;
    };
    let inside = seen_inside(c.pid, &place);
    wait_for("the container's place", || inside.is_dir().then_some(()));
    let swap = write(
        &inside.join(".notes.txt.swp"),
        swap_with("vim-swap/dirty-swap.bin", 4242, "elsewhere"),
    );
    link(&inside.join("notes.txt"), "/data/notes.txt");
    let out = scan_with(
        &env,
        &cfg,
        "--scan --json of a container's lock leading onto its dead volume",
    );
    let report = parse_report(&out);
    left_unexamined(report.expect_lock(&swap));
}

/// A directory of the test's own and a configuration whose only root it is: a lock place the
/// test's containers have too, at the same path inside them.
fn own_place(env: &Env) -> (PathBuf, PathBuf) {
    let place = env.path().join("place");
    fs::create_dir(&place).unwrap();
    let cfg = env.path().join("place.json");
    fs::write(
        &cfg,
        format!(r#"{{"roots": [{{"path": "{}"}}]}}"#, place.display()),
    )
    .unwrap();
    (place, cfg)
}

/// `place` inside the container whose PID 1 is `pid`, as seen from here.
fn seen_inside(pid: impl std::fmt::Display, place: &Path) -> PathBuf {
    Path::new("/proc")
        .join(pid.to_string())
        .join("root")
        .join(place.strip_prefix("/").unwrap())
}

/// Lock files whose names or contents lead onto the dead mount, in a directory of the local
/// disk that is scanned alone (the mount itself is never walked): a vim swap file in a
/// `directory//` swap directory, whose name spells out the file it protects
/// (`%MNT%notes.txt.swp`), one beside a `notes.txt` that is a symlink onto the mount, a
/// and a postmaster.pid whose data directory is on the mount. The scan finishes (it waited
/// for ever before), and says of each lock what could not be examined: none is called stale
/// on what is left.
#[test]
fn locks_that_name_files_on_a_dead_mount_are_judged_without_waiting() {
    let Some((dead, ())) = dead_mount_with(&UNCACHED, |mnt| {
        fs::write(mnt.join("notes.txt"), "x").unwrap();
        fs::create_dir(mnt.join("pgdata")).unwrap();
    }) else {
        return;
    };
    let env = Env::new();
    let place = env.path().join("locks");
    let on_mount = dead.mnt.join("notes.txt");
    let spelled = on_mount.display().to_string().replace('/', "%");
    let swap = swap_with("vim-swap/dirty-swap.bin", dead_pid() as u32, &hostname());
    let spelled = write(&place.join("swap").join(format!("{spelled}.swp")), &swap);
    let beside = write(&place.join("edit/.notes.txt.swp"), &swap);
    link(&place.join("edit/notes.txt"), on_mount.to_str().unwrap());
    let pg = place.join("pg");
    let pid_file = write(
        &pg.join("postmaster.pid"),
        format!(
            "{}\n{}\n1700000000\n5432\n/run/postgresql\n*\n  5432001    131072\nready\n",
            dead_pid(),
            dead.mnt.join("pgdata").display()
        ),
    );
    let out = {
        let mut cmd = env.cmd(["--scan".as_ref(), "--json".as_ref(), place.as_os_str()]);
        cmd.stdin(Stdio::null());
        bounded(cmd, "--scan --json of locks naming files on a dead mount")
    };
    let report = parse_report(&out);
    for lock in [&spelled, &beside, &pid_file] {
        let found = report.expect_lock(lock);
        left_unexamined(found);
    }
    // The swap files' editor is gone, but what they name could not be examined.
    for swap in [&spelled, &beside] {
        assert_eq!(report.expect_lock(swap).verdict, "unknown");
    }
    // The table says the same, in bounded time.
    let mut cmd = env.cmd(["--scan".as_ref(), place.as_os_str()]);
    cmd.stdin(Stdio::null());
    let out = bounded(cmd, "--scan of locks naming files on a dead mount");
    assert!(stdout(&out).contains("notes.txt.swp"), "{}", stdout(&out));
}
