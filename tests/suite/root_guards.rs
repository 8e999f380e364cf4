//! What a local user (uid 65534) can make root's locksmith do, tried for real:
//! - a job that `locksmith lock` runs for root gives up its privileges and tries to rewrite
//!   root's owner record through what it inherited: it cannot, and a crash leaves a lock the
//!   next run proves stale and takes;
//! - a vim swap file the user left (of a root file it may only read) is not recovered by
//!   root's `e` (which would let `:w` write the user's text over the root file), nor offered
//!   as a `vim -r` to run;
//! - `--scan --reclaim` over a container runtime's storage removes nothing there.
//!
//! Needs root (to act as another user) and, for the storage, Podman; elsewhere it skips with a
//! message.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use crate::util::*;

/// The job: as uid 65534, every way to change the lock file through the descriptors it
/// inherited (write, pwrite, ftruncate, and opening `/proc/self/fd/N` anew for writing);
/// writes which worked (or `nothing`) to its report, then waits.
const REWRITE_THE_RECORD: &str = r#"
import os, sys, time
lock, report = sys.argv[1], sys.argv[2]
want = os.stat(lock)
done = []
for fd in os.listdir("/proc/self/fd"):
    n = int(fd)
    try:
        st = os.fstat(n)
    except OSError:
        continue
    if (st.st_dev, st.st_ino) != (want.st_dev, want.st_ino):
        continue
    done.append("inherited")
    for how, f in [
        ("write", lambda: os.write(n, b"garbage")),
        ("pwrite", lambda: os.pwrite(n, b"{}", 0)),
        ("ftruncate", lambda: os.ftruncate(n, 0)),
        ("reopen", lambda: os.close(os.open("/proc/self/fd/%d" % n, os.O_WRONLY))),
    ]:
        try:
            f()
            done.append(how)
        except OSError:
            pass
with open(report + ".tmp", "w") as out:
    out.write(" ".join(done) or "nothing")
os.rename(report + ".tmp", report)
time.sleep(600)
"#;

/// A directory of root's that uid 65534 may write to (for its report).
fn drop_box(env: &Env) -> std::path::PathBuf {
    fs::set_permissions(env.path(), fs::Permissions::from_mode(0o755)).unwrap();
    let out = env.path().join("out");
    fs::create_dir(&out).unwrap();
    fs::set_permissions(&out, fs::Permissions::from_mode(0o777)).unwrap();
    out
}

#[test]
fn a_job_that_drops_its_privileges_cannot_rewrite_roots_lock_record() {
    if !can_act_as_nobody() {
        return;
    }
    let env = Env::new();
    let out = drop_box(&env);
    let lock = env.path().join("job.lock");
    let report = out.join("report");
    let mut job = lock_cmd(&lock, &[]);
    job.args([
        "--",
        "setpriv",
        "--reuid=65534",
        "--regid=65534",
        "--clear-groups",
    ])
    .args([NOBODY_PYTHON, "-c", REWRITE_THE_RECORD])
    .arg(&lock)
    .arg(&report);
    let mut job = Group::spawn(job);
    let did = wait_for("the job's report", || fs::read_to_string(&report).ok());
    let record = fs::read_to_string(&lock).unwrap();
    assert!(
        record.contains(&format!("\"pid\":{}", job.pid())),
        "the record is root's, as written: {record:?} (the job did: {did})"
    );
    assert_eq!(
        did, "inherited",
        "the job holds the lock, and nothing it holds writes the record"
    );
    // While the job runs, the lock is live; a crash of both leaves it stale, and the next
    // run takes it at once.
    let (report_json, _) = env.scan_json(&[env.path()]);
    assert_eq!(report_json.expect_lock(&lock).verdict, "live");
    job.kill();
    let (report_json, _) = env.scan_json(&[env.path()]);
    let l = report_json.expect_lock(&lock);
    assert_eq!(l.verdict, "stale", "{:#?}", l.evidence);
    let mut next = lock_cmd(&lock, &["--timeout", "0"]);
    next.args(["--", "true"]);
    let next = next.output().unwrap();
    assert_eq!(next.status.code(), Some(0), "{}", stderr(&next));
    assert!(!lock.exists());
}

/// The read-only descriptor the job gets keeps the lock held by itself: the `locksmith lock`
/// process killed alone leaves it live while the job runs, and stale once the job is gone.
#[test]
fn the_lock_stays_held_by_the_job_alone_and_heals_when_it_dies() {
    let dir = tempfile::tempdir().unwrap();
    let lock = dir.path().join("job.lock");
    let mut holder = hold_with_cli(&lock, &[]);
    let supervisor = holder.pid();
    let sleep = wait_for("the job to run", || {
        holder
            .members()
            .into_iter()
            .find(|(p, name)| *p != supervisor && name == "sleep")
    })
    .0;
    kill9(supervisor);
    holder.wait(20);
    let j = locksmith::engine::lock(&lock).inspect().unwrap();
    assert_eq!(j.verdict, locksmith::Verdict::Live, "{:?}", j.evidence);
    let mut busy = lock_cmd(&lock, &["--timeout", "0"]);
    busy.args(["--", "true"]);
    assert_eq!(busy.output().unwrap().status.code(), Some(75));

    kill9(sleep);
    wait_until("the job to die", || !alive(sleep));
    let j = locksmith::engine::lock(&lock).inspect().unwrap();
    assert_eq!(j.verdict, locksmith::Verdict::Stale, "{:?}", j.evidence);
    let mut next = lock_cmd(&lock, &["--timeout", "0"]);
    next.args(["--", "true"]);
    assert_eq!(next.output().unwrap().status.code(), Some(0));
    drop(holder);
    assert!(!Path::new(&lock).exists());
}

/// A vim run by uid 65534 on `file` (a root file it may only read), its swap file in
/// `directory` (vim's `'directory'`), given a line it never saves, then killed: the swap file
/// left at `swap`.
fn crashed_vim_as_nobody(file: &Path, directory: &Path, swap: &Path) {
    use std::io::Write;
    let mut vim = as_nobody("vim");
    vim.args(["-u", "NONE", "-i", "NONE", "-N", "-es", "--cmd"])
        .arg(format!("set directory={}", directory.display()))
        .arg(file)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let mut vim = Group::spawn(vim);
    let mut stdin = vim.stdin();
    stdin
        .write_all(b"normal Othe user's text\npreserve\n")
        .unwrap();
    stdin.flush().unwrap();
    wait_until("vim's swap file, its text preserved", || {
        fs::metadata(swap).is_ok_and(|m| m.len() > 4096)
    });
    vim.kill();
    drop(stdin);
}

/// The user edits a root file it may only read; vim keeps the swap file in a directory the
/// user may write to (`/var/tmp`, here a sticky directory of the test), named after the file
/// (`motd.swp`) or, with `directory//`, spelling its path (`%…%motd.swp`, whose name is for the
/// root file itself); the user kills vim. Root's UI lists both as stale swap files with
/// unsaved changes; `e` on each runs nothing and says why. (Before, `e` ran `vim -r` on it,
/// vim named the buffer after the root file, and the `:w` the UI invites wrote the user's text
/// over it.) The report offers no `vim -r` for them either.
#[test]
fn roots_e_never_recovers_a_users_swap_file_over_a_root_file() {
    if !can_act_as_nobody() || !require("vim") {
        return;
    }
    let env = Env::new();
    fs::set_permissions(env.path(), fs::Permissions::from_mode(0o755)).unwrap();
    let root = env.path().canonicalize().unwrap();
    let etc = root.join("etc");
    fs::create_dir(&etc).unwrap();
    let victim = etc.join("motd");
    fs::write(&victim, "root's text\n").unwrap();
    fs::set_permissions(&victim, fs::Permissions::from_mode(0o644)).unwrap();
    let tmp = root.join("var-tmp");
    fs::create_dir(&tmp).unwrap();
    fs::set_permissions(&tmp, fs::Permissions::from_mode(0o1777)).unwrap();
    let plain = tmp.join("motd.swp");
    crashed_vim_as_nobody(&victim, &tmp, &plain);
    let spelt = tmp.join(format!(
        "{}.swp",
        victim.display().to_string().replace('/', "%")
    ));
    crashed_vim_as_nobody(&victim, Path::new(&format!("{}//", tmp.display())), &spelt);

    let table = stdout(&env.run(["--scan".as_ref(), tmp.as_os_str()]));
    assert!(!table.contains("`vim -r /"), "{table}");
    assert_eq!(
        table
            .matches("which are not for you to recover: it belongs to nobody")
            .count(),
        2,
        "{table}"
    );

    let mut ui = crate::util::ui::Ui::start(&env, &[&tmp], &[]);
    ui.wait_for("both swap files, stale with unsaved changes", |s| {
        s.lines().filter(|l| l.contains("✗ stale ✎")).count() == 2
    });
    for (i, swap) in [&spelt, &plain].into_iter().enumerate() {
        if i > 0 {
            ui.send("j");
        }
        let name = swap.file_name().unwrap().to_string_lossy().to_string();
        ui.wait_for("the row selected", |s| {
            s.lines().any(|l| l.starts_with('▶') && l.contains(&name))
        });
        ui.send("e");
        let screen = ui.wait_for("vim, or why not", |s| {
            s.contains("Not recovered") || !s.contains("VERDICT")
        });
        if !screen.contains("Not recovered") {
            // vim runs, the UI suspended: past its messages, what the UI's message then
            // invites: save it.
            std::thread::sleep(std::time::Duration::from_secs(1));
            ui.send("\r");
            ui.send("\x1b:w!\r:qa!\r");
            ui.wait_for("the table back after vim", |s| s.contains("VERDICT"));
        } else {
            assert!(
                screen.contains("it belongs to nobody (uid 65534)"),
                "{screen}"
            );
            ui.send("q");
            ui.wait_for("the pop-up closed", |s| !s.contains("Not recovered"));
        }
        assert_eq!(
            fs::read_to_string(&victim).unwrap(),
            "root's text\n",
            "the root file was overwritten through {}",
            swap.display()
        );
    }
    ui.send("q");
    assert_eq!(ui.wait_exit(), 0);
}

/// A container runtime's storage, where its configuration puts it (here the user's
/// `containers/storage.conf` names a Podman store of the test): an image whose layer holds a
/// stale pid file (its mtime from the image's tarball), and a container that ran and exited,
/// its root unmounted, its run root left. Root's `--scan` lists what is there, but
/// `--scan --reclaim` over the store and `--force` on the layer's file remove nothing, each
/// saying which store it is in; the image is as it was. (Before, the reclaim removed the
/// layer's file, changing the image of every later container.)
#[test]
fn a_container_runtimes_storage_is_never_reclaimed_from() {
    let Some(pm) = crate::util::podman::Podman::or_skip("a container runtime's storage") else {
        return;
    };
    let env = Env::new();
    let conf = env.path().join("config/containers");
    fs::create_dir_all(&conf).unwrap();
    fs::write(
        conf.join("storage.conf"),
        format!(
            "[storage]\ndriver = \"overlay\"\ngraphroot = \"{}\"\nrunroot = \"{}\"\n",
            pm.storage().display(),
            pm.path().join("runroot").display()
        ),
    )
    .unwrap();
    let rootfs = env.path().join("image");
    crate::util::podman::busybox_root(&rootfs).unwrap();
    let pid = format!("{}\n", dead_pid());
    fs::write(rootfs.join("run/app.pid"), &pid).unwrap();
    let image = "localhost/locksmith-stale-layer:test";
    pm.import_dir(&rootfs, image).unwrap();
    let ran = pm.run(&[
        "run",
        "--name",
        "done-1",
        "--network",
        "none",
        image,
        "true",
    ]);
    assert!(ran.status.success(), "{}", stderr(&ran));

    let (report, _) = env.scan_json(&[pm.path()]);
    let layer_file = report
        .locks
        .iter()
        .find(|l| l.path.ends_with("/diff/run/app.pid"))
        .unwrap_or_else(|| panic!("the layer's pid file is listed: {:#?}", report.locks));
    assert_eq!(layer_file.verdict, "stale", "{:#?}", layer_file.evidence);
    let layer_file = std::path::PathBuf::from(&layer_file.path);
    let before: Vec<(String, Vec<u8>)> = report
        .locks
        .iter()
        .map(|l| (l.path.clone(), fs::read(&l.path).unwrap_or_default()))
        .collect();

    let (report, out) = env.reclaim_json(&[], pm.path());
    let reclaimed = report.reclaimed.unwrap();
    assert!(!reclaimed.is_empty(), "{}", stdout(&out));
    for r in &reclaimed {
        assert_eq!(r.action, "kept", "{r:?}");
        let why = r.error.as_deref().unwrap_or_default();
        assert!(
            why.contains(", Podman's storage (graphroot in ")
                || why.contains(", Podman's storage (runroot in "),
            "{r:?}"
        );
    }
    let forced = env.run([
        "--scan".as_ref(),
        "--reclaim".as_ref(),
        "--force".as_ref(),
        layer_file.as_os_str(),
    ]);
    assert!(
        stdout(&forced).contains("a container runtime's own storage is never reclaimed from"),
        "{}",
        stdout(&forced)
    );
    for (path, content) in &before {
        assert_eq!(&fs::read(path).unwrap_or_default(), content, "{path}");
    }
    let cat = pm.run(&[
        "run",
        "--rm",
        "--network",
        "none",
        image,
        "cat",
        "/run/app.pid",
    ]);
    assert_eq!(String::from_utf8_lossy(&cat.stdout), pid);
}
