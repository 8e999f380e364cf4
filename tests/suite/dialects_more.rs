//! The dialects of programs' own lock files (borg, QLockFile, zsh, neovim, GnuPG, R, pacman,
//! rpm, Rails, JetBrains, VS Code, VMware, conda, Julia, LibreOffice's profile) and declared
//! dialects. Where Debian packages the program, the real program makes the lock, held and
//! then left behind by SIGKILL as a user's crash would; the rest are written exactly as the
//! program's source writes them, relative to now and to this host's name (never baked
//! times). Owners are real processes: a process with the program's name is a copy of
//! `sleep` under that name.
//!
//! Paths are judged as reclaim and the UI re-judge them (`scan::judge_path` with the embedded
//! configuration), so dialect choice and patterns are tested too; declared dialects run
//! through the real binary, from the configuration file to the report and reclaim.

use std::ffi::OsStr;
use std::fs;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::util;
use crate::util::judging::{
    ask_here, assert_evidence, booted_ago, expect, judge, judge_changed, on_nfs, record_scan,
    replay_json, steady, try_judge, up_for_at_least, written_ago_this_boot, written_before_boot,
};
use crate::util::quiet::{self, Fact};
use crate::util::{
    Env, Group, Guard, dead_pid, hold_open, hostname, named_sleeper, require, require_that,
    wait_for, write,
};
use locksmith::Verdict;

// ---------------------------------------------------------------------------------------------
// Helpers

fn tempdir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("locksmith-more-")
        .tempdir()
        .unwrap()
}

/// `/usr/bin/python3` with PyQt5 (Debian's python3-pyqt5), if installed.
fn pyqt5() -> Option<PathBuf> {
    let py = PathBuf::from("/usr/bin/python3");
    let ok = Command::new(&py)
        .args(["-c", "import PyQt5.QtCore"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    require_that(ok, "python3-pyqt5 is not installed (.ci/run installs it)").then_some(py)
}

// ---------------------------------------------------------------------------------------------
// Real programs

/// `borg with-lock` holds a repository's exclusive lock (the `lock.exclusive/` directory and
/// the roster) for as long as its command runs; SIGKILL leaves both behind.
#[test]
fn borg_lock_held_then_left_by_a_killed_borg() {
    if !require("borg") {
        return;
    }
    let dir = tempdir();
    let repo = dir.path().join("repo");
    let borg = |args: &[&str]| {
        let mut c = Command::new("borg");
        c.args(args)
            .env("BORG_BASE_DIR", dir.path().join("base"))
            .env("BORG_RELOCATED_REPO_ACCESS_IS_OK", "yes")
            .env("BORG_UNKNOWN_UNENCRYPTED_REPO_ACCESS_IS_OK", "yes")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        c
    };
    let st = borg(&["init", "-e", "none", repo.to_str().unwrap()])
        .status()
        .unwrap();
    assert!(st.success(), "borg init failed");
    let mut holder = Group::spawn(&mut borg(&[
        "with-lock",
        repo.to_str().unwrap(),
        "sleep",
        "600",
    ]));
    let exclusive = repo.join("lock.exclusive");
    let roster = repo.join("lock.roster");
    wait_for("borg to take the lock", || {
        (fs::read_dir(&exclusive).ok()?.count() > 0 && roster.exists()).then_some(())
    });
    let f = expect(&exclusive, "borg", Verdict::Live);
    assert_eq!(
        f.judgement.owner.as_ref().and_then(|o| o.pid),
        Some(holder.pid() as i64)
    );
    expect(&roster, "borg", Verdict::Live);

    holder.kill();
    let f = expect(&exclusive, "borg", Verdict::Stale);
    assert_evidence(&f, "borg break-lock");
    expect(&roster, "borg", Verdict::Stale);

    // The same owner written on another host: borg assumes it alive, and so do we.
    let member = fs::read_dir(&exclusive)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let name = member.file_name().unwrap().to_str().unwrap().to_string();
    let (hostid, rest) = name.rsplit_once('.').unwrap();
    let (_, node) = hostid.rsplit_once('@').unwrap();
    fs::rename(
        &member,
        exclusive.join(format!("elsewhere.example@{node}.{rest}")),
    )
    .unwrap();
    let f = expect(&exclusive, "borg", Verdict::Foreign);
    assert_evidence(&f, "elsewhere.example");
    let text = fs::read_to_string(&roster)
        .unwrap()
        .replace(hostid, "elsewhere.example@1");
    fs::write(&roster, text).unwrap();
    expect(&roster, "borg", Verdict::Foreign);
}

/// A `QLockFile` taken through PyQt5: Qt holds flock() on it while locked; SIGKILL leaves
/// the five lines behind. Another boot id is Qt's own proof of staleness; another machine
/// cannot be checked.
#[test]
fn qt_lockfile_from_pyqt5() {
    let Some(py) = pyqt5() else { return };
    let dir = tempdir();
    let lock = dir.path().join("session.lock");
    let script = format!(
        "from PyQt5 import QtCore\nimport time\nl = QtCore.QLockFile({:?})\nassert l.tryLock(0)\nopen({:?}, 'w').close()\ntime.sleep(600)\n",
        lock.to_str().unwrap(),
        dir.path().join("ready").to_str().unwrap()
    );
    let mut holder = Group::spawn(Command::new(&py).args(["-c", &script]).stdin(Stdio::null()));
    wait_for("Qt to take the lock", || {
        dir.path().join("ready").exists().then_some(())
    });
    let f = expect(&lock, "qt-lockfile", Verdict::Live);
    assert_evidence(&f, "locked in the kernel");
    let content = fs::read_to_string(&lock).unwrap();
    let lines: Vec<&str> = content.lines().collect();
    assert_eq!(lines[0], holder.pid().to_string());
    assert_eq!(lines[2], hostname());

    holder.kill();
    let f = expect(&lock, "qt-lockfile", Verdict::Stale);
    assert_evidence(&f, &format!("no process {}", lines[0]));

    let mut other = lines.clone();
    other[4] = "00000000-0000-4000-8000-000000000000";
    fs::write(&lock, format!("{}\n", other.join("\n"))).unwrap();
    let f = expect(&lock, "qt-lockfile", Verdict::Stale);
    assert_evidence(&f, "earlier boot");

    other[2] = "elsewhere.example";
    other[3] = "0123456789abcdef0123456789abcdef";
    fs::write(&lock, format!("{}\n", other.join("\n"))).unwrap();
    expect(&lock, "qt-lockfile", Verdict::Foreign);
}

/// zsh takes `$HISTFILE.LOCK` (a symlink to `/pid-N/host-H`) while it writes its history.
/// With `HISTFILE` a FIFO and no copy-on-save, zsh blocks writing it, lock held; SIGKILL
/// leaves the link.
#[test]
fn zsh_history_lock_held_then_left() {
    if !require("zsh") || !require("mkfifo") {
        return;
    }
    let dir = tempdir();
    let hist = dir.path().join(".zsh_history");
    assert!(
        Command::new("mkfifo")
            .arg(&hist)
            .status()
            .unwrap()
            .success()
    );
    let script = write(
        &dir.path().join("commands"),
        "HISTSIZE=100\nSAVEHIST=100\nunsetopt HIST_SAVE_BY_COPY\necho hi\nfc -W\n",
    );
    let mut zsh = Group::spawn(
        Command::new("zsh")
            .arg("-fi")
            .env("HISTFILE", &hist)
            .stdin(fs::File::open(&script).unwrap())
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    );
    let lock = dir.path().join(".zsh_history.LOCK");
    wait_for("zsh to take the history lock", || {
        fs::symlink_metadata(&lock).ok().map(|_| ())
    });
    let target = fs::read_link(&lock).unwrap();
    assert_eq!(
        target.to_str().unwrap(),
        format!("/pid-{}/host-{}", zsh.pid(), hostname())
    );
    expect(&lock, "zsh-history", Verdict::Live);

    let pid = zsh.pid();
    zsh.kill();
    let f = expect(&lock, "zsh-history", Verdict::Stale);
    assert_evidence(&f, &format!("no process {pid}"));

    fs::remove_file(&lock).unwrap();
    symlink("/pid-1/host-elsewhere.example", &lock).unwrap();
    expect(&lock, "zsh-history", Verdict::Foreign);
}

/// nvim writes a new ShaDa file as `main.shada.tmp.a` and renames it over `main.shada`. With
/// a register of ~100 MB the write takes long enough to judge it open, and to SIGKILL nvim
/// mid-write, which leaves the temporary file behind.
#[test]
fn nvim_shada_temp_file_open_then_left() {
    if !require("nvim") {
        return;
    }
    let dir = tempdir();
    let shada = dir.path().join("main.shada");
    let nvim = |shada: &Path| {
        let mut c = Command::new("nvim");
        c.args(["--headless", "-u", "NONE", "-i"])
            .arg(shada)
            .args([
                "--cmd",
                "set shada='100,<4000000,s4000000",
                "-c",
                "call setreg('a', repeat([repeat('x', 72)], 3000000))",
                "-c",
                "wshada",
                "-c",
                "qa!",
            ])
            .env("HOME", dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        c
    };
    // A first run makes main.shada, so that the next one writes to a temporary file.
    let st = nvim(&shada).status().unwrap();
    assert!(
        st.success() && shada.exists(),
        "nvim did not write {shada:?}"
    );
    let tmp = dir.path().join("main.shada.tmp.a");
    let mut writer = Group::spawn(&mut nvim(&shada));
    wait_for("nvim to start writing ShaDa", || tmp.exists().then_some(()));
    // The write may just have finished (renamed away): then the path is gone, and nothing is
    // there to judge.
    let config = locksmith::config::Settings::embedded().scan;
    if let Some(f) = try_judge(&tmp, &quiet::snapshot(), &config).unwrap() {
        assert_eq!(f.dialect, "nvim-shada");
        assert_ne!(f.judgement.verdict(), Verdict::Stale, "{:#?}", f.judgement);
    }
    writer.kill();
    if !tmp.exists() {
        // As nvim leaves it: the start of a ShaDa file, nvim's own header first.
        eprintln!("nvim finished before it was killed; the leftover is made by hand");
        let start = fs::read(&shada).unwrap();
        write(&tmp, &start[..start.len().min(4096)]);
    }
    // Judged as left 30 s ago (longer than a rename takes), in this boot.
    let f = judge_changed(&tmp, |ev| written_ago_this_boot(ev, &tmp, 30));
    assert_eq!(f.dialect, "nvim-shada");
    assert_eq!(f.judgement.verdict(), Verdict::Stale, "{:#?}", f.judgement);
    assert_evidence(&f, "killed while writing");
    // Held open by a process: live.
    let _holder = hold_open(&tmp);
    expect(&tmp, "nvim-shada", Verdict::Live);
}

/// GnuPG's dotlock (`%10d\n<node>\n`, read by the pidfile dialect's multi-line records),
/// judged as gpg itself judges it: gpg waits for a lock whose PID lives and removes one whose
/// PID is gone ("removing stale lockfile"). The temporary file a dotlock is linked from is the
/// `gnupg` dialect's.
#[test]
fn gnupg_dotlock_agrees_with_gpg() {
    if !require("gpg") || !require("gpgconf") {
        return;
    }
    let dir = tempdir();
    let home = dir.path().join("gnupg");
    fs::create_dir(&home).unwrap();
    fs::set_permissions(&home, fs::Permissions::from_mode(0o700)).unwrap();
    struct Agent(PathBuf);
    impl Drop for Agent {
        fn drop(&mut self) {
            let _ = Command::new("gpgconf")
                .args(["--homedir"])
                .arg(&self.0)
                .args(["--kill", "all"])
                .status();
        }
    }
    let _agent = Agent(home.clone());
    // `gpg --quick-gen-key UID` in `home`, run through `wrapper` (such as `timeout 3`).
    let gen_key = |wrapper: &[&str], uid: &str| util::gpg_gen_key(&home, wrapper, uid);
    let out = gen_key(&[], "A <a@example.org>").output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lock = home.join("pubring.kbx.lock");
    assert!(!lock.exists());

    // A lock of a live process: ours says live, and gpg waits for it.
    let sleeper = util::sleeper();
    write(&lock, format!("{:10}\n{}\n", sleeper.pid(), hostname()));
    expect(&lock, "pidfile", Verdict::Live);
    let out = util::run_bounded(
        gen_key(&["timeout", "3"], "B <b@example.org>"),
        Duration::from_secs(30),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("waiting for lock"), "gpg did not wait: {err}");

    // A lock whose PID is gone: ours says stale, and gpg removes it itself.
    let dead = dead_pid();
    write(&lock, format!("{dead:10}\n{}\n", hostname()));
    let f = expect(&lock, "pidfile", Verdict::Stale);
    assert_evidence(&f, &format!("no process {dead}"));
    let out = gen_key(&[], "C <c@example.org>").output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("removing stale lockfile"), "gpg said: {err}");

    // Another node: not checkable here.
    write(&lock, format!("{:10}\nelsewhere.example\n", sleeper.pid()));
    expect(&lock, "pidfile", Verdict::Foreign);
    fs::remove_file(&lock).unwrap();

    // The temporary file of a gpg killed between writing it and linking it into place.
    let tmp = write(
        &home.join(format!(".#lk0x00005603a1b2c3d0.{}.{dead}", hostname())),
        format!("{dead:10}\n{}\n", hostname()),
    );
    let f = expect(&tmp, "gnupg", Verdict::Stale);
    assert_evidence(&f, &format!("no process {dead}"));
    write(&tmp, format!("{:10}\n{}\n", sleeper.pid(), hostname()));
    expect(&tmp, "gnupg", Verdict::Live);
}

/// `R CMD INSTALL` of a tiny package whose configure script hangs: R's `00LOCK-<pkg>`
/// directory, with the previously installed version in it, is live while R runs and stale
/// after SIGKILL, and the evidence says what it holds.
#[test]
fn r_install_lock_from_a_killed_install() {
    if !require("R") {
        return;
    }
    let dir = tempdir();
    let lib = dir.path().join("lib");
    let pkg = dir.path().join("tinypkg");
    fs::create_dir_all(&lib).unwrap();
    let desc = |v: &str| {
        format!(
            "Package: tinypkg\nVersion: {v}\nTitle: Tiny\nDescription: Tiny.\nLicense: MIT\nAuthor: A\nMaintainer: A <a@example.org>\n"
        )
    };
    write(&pkg.join("DESCRIPTION"), desc("1.0"));
    write(&pkg.join("NAMESPACE"), "export(f)\n");
    write(&pkg.join("R/f.R"), "f <- function() 1\n");
    let install = || {
        let mut c = Command::new("R");
        c.args(["CMD", "INSTALL", "-l", "lib", "tinypkg"])
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        c
    };
    assert!(
        install().status().unwrap().success(),
        "R CMD INSTALL failed"
    );
    assert!(lib.join("tinypkg/DESCRIPTION").exists());

    write(&pkg.join("DESCRIPTION"), desc("2.0"));
    let configure = write(&pkg.join("configure"), "#!/bin/sh\nsleep 600\n");
    fs::set_permissions(&configure, fs::Permissions::from_mode(0o755)).unwrap();
    let mut r = Group::spawn(&mut install());
    let lock = lib.join("00LOCK-tinypkg");
    wait_for("R to run configure", || {
        r.members().iter().any(|(_, c)| c == "sleep").then_some(())
    });
    let f = expect(&lock, "r-install", Verdict::Live);
    assert_evidence(&f, "process works in the library");

    r.kill();
    // Judged as left 10 s ago (older than R's shortest hold), in this boot.
    let left = || {
        let f = judge_changed(&lock, |ev| written_ago_this_boot(ev, &lock, 10));
        assert_eq!(f.dialect, "r-install");
        assert_eq!(f.judgement.verdict(), Verdict::Stale, "{:#?}", f.judgement);
        f
    };
    let f = left();
    let all = f.judgement.evidence.join("\n");
    assert!(!all.contains("just a lock"), "{all}");
    if lock.join("tinypkg/DESCRIPTION").exists() {
        assert_evidence(
            &f,
            "previously installed copy of package tinypkg version 1.0",
        );
        assert_evidence(&f, "move ");
    }
    // An R that runs, but on another library, does not keep it alive.
    let other = dir.path().join("other");
    fs::create_dir(&other).unwrap();
    let r = named_sleeper(&dir.path().join("bin"), "R", &other);
    let f = left();
    assert_evidence(&f, "no R process works in the library");
    assert_evidence(&f, &format!("{} (cwd {}", r.pid(), other.display()));
}

/// rpm's Berkeley DB environment (`__db.001`, ...): live while mapped or while rpm's
/// transaction lock is held, stale with the advice to rebuild the database when nothing uses
/// it. (This rpm uses the sqlite backend; the files are laid out as the bdb backend leaves
/// them.)
#[test]
fn rpm_db_environment_files() {
    // Stale only while no package manager runs on this host (this test runs rpm itself).
    let _no_package_manager = quiet::absent(Fact::PackageManager);
    if !quiet::none_running(Fact::PackageManager) {
        return;
    }
    let dir = tempdir();
    let db = dir.path().join("rpm");
    fs::create_dir_all(&db).unwrap();
    if require("rpm") {
        let _rpm = quiet::making(Fact::PackageManager);
        // The real rpm creates its database and transaction lock file in the directory.
        let st = Command::new("rpm")
            .arg("--dbpath")
            .arg(&db)
            .arg("--initdb")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .unwrap();
        assert!(st.success(), "rpm --initdb failed");
    }
    write(&db.join("Packages"), vec![0u8; 4096]);
    let region = write(&db.join("__db.001"), vec![0u8; 8192]);
    if !db.join(".rpm.lock").exists() {
        write(&db.join(".rpm.lock"), b"");
    }
    // Judged as left two minutes ago (older than rpm's shortest hold), in this boot.
    let f = judge_changed(&region, |ev| written_ago_this_boot(ev, &region, 120));
    assert_eq!(f.dialect, "rpm-db");
    assert_eq!(f.judgement.verdict(), Verdict::Stale, "{:#?}", f.judgement);
    assert_evidence(&f, "--rebuilddb");

    // A transaction holds .rpm.lock.
    if require("flock") {
        // flock(1) runs sleep as its child: the whole group goes when the guard drops.
        let holder = Group::spawn(
            Command::new("flock")
                .arg(db.join(".rpm.lock"))
                .args(["sleep", "600"])
                .stdin(Stdio::null()),
        );
        let pid = holder.pid();
        wait_for("flock to take .rpm.lock", || {
            util::proc_locks::table()
                .lines()
                .any(|l| l.split_whitespace().nth(4) == Some(&pid.to_string()))
                .then_some(())
        });
        expect(&region, "rpm-db", Verdict::Live);
    }
    // A process that maps the region.
    let mapper = Guard::spawn(
        Command::new("/usr/bin/python3")
            .args([
                "-c",
                "import mmap,sys,time\nf=open(sys.argv[1],'r+b')\nm=mmap.mmap(f.fileno(),0)\nf.close()\nopen(sys.argv[2],'w').close()\ntime.sleep(600)",
            ])
            .arg(&region)
            .arg(dir.path().join("mapped"))
            .stdin(Stdio::null()),
    );
    wait_for("python to map it", || {
        dir.path().join("mapped").exists().then_some(())
    });
    let f = expect(&region, "rpm-db", Verdict::Live);
    assert!(
        f.judgement
            .holders
            .iter()
            .any(|h| h.pid == mapper.pid() as i32)
    );
}

// ---------------------------------------------------------------------------------------------
// Formats written as their programs' sources write them

/// pacman's `db.lck`: empty, mode 0000, held open by pacman while it runs. Where pacman is
/// installed, the real pacman makes its database directory and the lock: a `pacman -Sy` of a
/// repository whose database is a FIFO nobody writes waits there holding it, and is killed;
/// elsewhere both are made as libalpm makes them.
#[test]
fn pacman_db_lock() {
    // Stale only while no package manager runs on this host.
    let _no_package_manager = quiet::absent(Fact::PackageManager);
    if !quiet::none_running(Fact::PackageManager) {
        return;
    }
    let dir = tempdir();
    let dbpath = dir.path().join("var/lib/pacman");
    let lock = dbpath.join("db.lck");
    if util::which("pacman").is_some() {
        let srv = dir.path().join("srv");
        let cache = dir.path().join("cache");
        fs::create_dir_all(&srv).unwrap();
        fs::create_dir_all(&cache).unwrap();
        fs::create_dir_all(dir.path().join("root")).unwrap();
        // pacman makes what is inside its database directory, not the directory.
        fs::create_dir_all(&dbpath).unwrap();
        rustix::fs::mknodat(
            rustix::fs::CWD,
            srv.join("hang.db"),
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o644),
            0,
        )
        .unwrap();
        let d = dir.path().display();
        let conf = write(
            &dir.path().join("pacman.conf"),
            format!(
                "[options]\nRootDir = {d}/root\nDBPath = {}/\nCacheDir = {}/\n\
                 LogFile = {d}/pacman.log\nGPGDir = {d}/gnupg/\nArchitecture = auto\n\
                 SigLevel = Never\n[hang]\nServer = file://{}\n",
                dbpath.display(),
                cache.display(),
                srv.display()
            ),
        );
        let _pacman = quiet::making(Fact::PackageManager);
        let mut pacman = Group::spawn(
            Command::new("pacman")
                .arg("--config")
                .arg(&conf)
                .arg("-Sy")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null()),
        );
        let pid = pacman.pid();
        wait_for("pacman to take db.lck", || {
            fs::read_dir(format!("/proc/{pid}/fd"))
                .ok()?
                .flatten()
                .any(|fd| fs::read_link(fd.path()).is_ok_and(|t| t == lock))
                .then_some(())
        });
        let f = expect(&lock, "pacman", Verdict::Live);
        assert!(
            f.judgement.holders.iter().any(|h| h.pid == pid),
            "{:#?}",
            f.judgement
        );
        pacman.kill();
    } else {
        fs::create_dir_all(dbpath.join("local")).unwrap();
        fs::create_dir_all(dbpath.join("sync")).unwrap();
        write(&lock, b"");
        fs::set_permissions(&lock, fs::Permissions::from_mode(0o000)).unwrap();
        // Not yet a libalpm database (libalpm writes local/ALPM_DB_VERSION when it makes
        // one): the name alone does not make it pacman's.
        let f = judge(&lock);
        assert_ne!(f.dialect, "pacman", "{:#?}", f.judgement);
        write(&dbpath.join("local/ALPM_DB_VERSION"), "9\n");
    }
    assert!(dbpath.join("local/ALPM_DB_VERSION").is_file());
    let meta = fs::metadata(&lock).unwrap();
    assert_eq!((meta.len(), meta.permissions().mode() & 0o7777), (0, 0));
    let f = expect(&lock, "pacman", Verdict::Stale);
    assert_evidence(&f, "no pacman, pamac, yay");
    assert_evidence(&f, "libalpm database directory");

    // A pacman that runs (without the file open) may be about to take it.
    let bin = dir.path().join("bin");
    {
        let _pacman = named_sleeper(&bin, "pacman", dir.path());
        let f = expect(&lock, "pacman", Verdict::Unknown);
        assert_evidence(&f, "pacman (pid");
    }
    // Held open: live.
    let holder = hold_open(&lock);
    let pid = holder.pid();
    let f = expect(&lock, "pacman", Verdict::Live);
    assert!(f.judgement.holders.iter().any(|h| h.pid == pid as i32));
    drop(holder);

    // The same file where no libalpm database is (no local/ALPM_DB_VERSION): not pacman's,
    // whatever runs or not.
    let elsewhere = dir.path().join("app/db.lck");
    fs::create_dir_all(dir.path().join("app/local")).unwrap();
    fs::copy(&lock, &elsewhere).unwrap();
    fs::set_permissions(&elsewhere, fs::Permissions::from_mode(0o000)).unwrap();
    let f = judge(&elsewhere);
    assert_ne!(f.dialect, "pacman", "{:#?}", f.judgement);
}

/// A Rack/Rails `tmp/pids/server.pid`: the PID must be a Ruby working in that app.
#[test]
fn rails_server_pid() {
    let dir = tempdir();
    let app = dir.path().join("app");
    let pidfile = app.join("tmp/pids/server.pid");
    fs::create_dir_all(pidfile.parent().unwrap()).unwrap();
    let bin = dir.path().join("bin");

    let ruby = named_sleeper(&bin, "ruby", &app);
    write(&pidfile, ruby.pid().to_string());
    let f = expect(&pidfile, "rails", Verdict::Live);
    assert_evidence(&f, "works in the application's directory");

    // A Ruby working elsewhere may be another app's server: not proof either way.
    let elsewhere = named_sleeper(&bin, "ruby", dir.path());
    write(&pidfile, elsewhere.pid().to_string());
    expect(&pidfile, "rails", Verdict::Unknown);

    // The PID now names something that is no Ruby but started before the file (a
    // container's PID 1 that is a shell, an init that started the server): not proven.
    let sleeper = named_sleeper(&bin, "sleep", &app);
    write(&pidfile, sleeper.pid().to_string());
    let f = expect(&pidfile, "rails", Verdict::Unknown);
    assert_evidence(&f, "nothing proves the lock is not its");

    write(&pidfile, dead_pid().to_string());
    let f = expect(&pidfile, "rails", Verdict::Stale);
    assert_evidence(&f, "rails server");
}

/// JetBrains IDEs: `.port` is a unix socket the running IDE listens on; `.lock` holds its PID.
#[test]
fn jetbrains_port_socket_and_lock() {
    let dir = tempdir();
    let config = dir.path().join(".config/JetBrains/IntelliJIdea2024.1");
    let system = dir.path().join(".cache/JetBrains/IntelliJIdea2024.1");
    fs::create_dir_all(&config).unwrap();
    fs::create_dir_all(&system).unwrap();
    let port = system.join(".port");
    let lock = config.join(".lock");

    let listener = std::os::unix::net::UnixListener::bind(&port).unwrap();
    let dead = dead_pid();
    write(&lock, dead.to_string());
    expect(&port, "jetbrains", Verdict::Live);
    // The IDE answers on its socket: its lock is live whatever PID it names (a Flatpak IDE
    // writes its sandbox's PID).
    let f = expect(&lock, "jetbrains", Verdict::Live);
    assert_evidence(&f, "the IDE answers");

    drop(listener);
    // Nobody answers here; an IDE in another network namespace would not show: not proven
    // (a starting IDE takes the files over by itself).
    let f = expect(&port, "jetbrains", Verdict::Unknown);
    assert_evidence(&f, "nobody listens");
    let f = expect(&lock, "jetbrains", Verdict::Stale);
    assert_evidence(&f, &format!("no process {dead}"));

    let ide = util::sleeper();
    write(&lock, ide.pid().to_string());
    expect(&lock, "jetbrains", Verdict::Live);
}

/// VS Code's `vscode.lock` (`{"pid":N,"willReleaseAt":0}`, mtime refreshed every second) and
/// Remote-SSH's install lock.
#[test]
fn vscode_workspace_and_remote_locks() {
    let dir = tempdir();
    let lock = dir
        .path()
        .join(".config/Code/User/workspaceStorage/0123456789abcdef0123456789abcdef/vscode.lock");
    let holder = util::sleeper();
    write(
        &lock,
        format!("{{\"pid\":{},\"willReleaseAt\":0}}", holder.pid()),
    );
    let f = expect(&lock, "vscode", Verdict::Live);
    assert_evidence(&f, "refreshed");

    // Its PID gone and not refreshed for a minute (as the evidence says, in this boot): VS
    // Code itself takes it over.
    write(
        &lock,
        format!("{{\"pid\":{},\"willReleaseAt\":0}}", dead_pid()),
    );
    let judged = |change: &dyn Fn(&mut locksmith::probe::Evidence), verdict: Verdict| {
        let f = judge_changed(&lock, change);
        assert_eq!(f.dialect, "vscode");
        assert_eq!(f.judgement.verdict(), verdict, "{:#?}", f.judgement);
        f
    };
    let f = judged(&|ev| written_ago_this_boot(ev, &lock, 60), Verdict::Stale);
    assert_evidence(&f, "whose PID is gone");
    // Refreshed a moment ago, whatever the PID says (a dev container's server writes a PID of
    // its own namespace): live.
    judged(&|ev| written_ago_this_boot(ev, &lock, 1), Verdict::Live);
    // On a network file system nobody here can vouch for the PID; not refreshed for 11
    // minutes (on a clock known steady), VS Code's own rule makes it stale. (A minute more
    // is allowed for the file server's clock; on a network file system no earlier-boot rule
    // applies.)
    judged(
        &|ev| {
            on_nfs(ev, &lock);
            written_ago_this_boot(ev, &lock, 1);
        },
        Verdict::Foreign,
    );
    let f = judged(
        &|ev| {
            steady(ev);
            on_nfs(ev, &lock);
            written_ago_this_boot(ev, &lock, 12 * 60);
        },
        Verdict::Stale,
    );
    assert_evidence(&f, "not refreshed for 10 minutes");

    let remote = write(
        &dir.path()
            .join(".vscode-server/bin/abc123/vscode-remote-lock.ann.abc123"),
        b"",
    );
    expect(&remote, "vscode", Verdict::Unknown);
    // Its writer (a shell script) promises nothing: however old, not proven (two hours, in
    // this boot, on a clock known steady) ...
    let remote_judged = |change: &dyn Fn(&mut locksmith::probe::Evidence), verdict: Verdict| {
        let f = judge_changed(&remote, change);
        assert_eq!(f.dialect, "vscode");
        assert_eq!(f.judgement.verdict(), verdict, "{:#?}", f.judgement);
        f
    };
    let f = remote_judged(
        &|ev| {
            steady(ev);
            written_ago_this_boot(ev, &remote, 2 * 3600);
        },
        Verdict::Unknown,
    );
    assert_evidence(&f, "its age proves nothing");
    // ... unless written before this boot.
    let f = remote_judged(
        &|ev| {
            steady(ev);
            up_for_at_least(ev, 3600);
            written_before_boot(ev, &remote, 3600);
        },
        Verdict::Stale,
    );
    assert_evidence(&f, "Installation already in progress");
    // Its mtime set back to before this boot proves nothing (anyone who may write it can set
    // it): the kernel's ctime says it changed after the boot.
    util::set_mtime_ms(&remote, util::now_ms() - 2 * 3600 * 1000);
    let f = remote_judged(
        &|ev| {
            steady(ev);
            booted_ago(ev, 3600);
        },
        Verdict::Unknown,
    );
    assert_evidence(&f, "its age proves nothing");
    let _opener = hold_open(&remote);
    expect(&remote, "vscode", Verdict::Live);
}

/// VMware's lock directory: members `M<digits>.lck` of 512 bytes naming
/// `pid-creationTime(name)`, the creation time in clock ticks since boot.
#[test]
fn vmware_lock_directory() {
    let dir = tempdir();
    let lck = dir.path().join("vm/Windows.vmx.lck");
    fs::create_dir_all(&lck).unwrap();
    let vmx = util::sleeper();
    let pid = vmx.pid() as i32;
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let ticks: u64 = stat
        .rsplit_once(')')
        .unwrap()
        .1
        .split_whitespace()
        .nth(19)
        .unwrap()
        .parse()
        .unwrap();
    let member = |exec: &str| {
        let mut data = format!("52-4d-a1-0c-2b-9e-6f-11 {exec} 3 X Windows.vmx lc=1").into_bytes();
        data.resize(512, 0);
        write(&lck.join("M12345.lck"), data);
    };
    member(&format!("{pid}-{ticks}(sleep)"));
    let f = expect(&lck, "vmware", Verdict::Live);
    assert_eq!(
        f.judgement.owner.as_ref().and_then(|o| o.pid),
        Some(pid as i64)
    );

    // The same PID with another creation time: the PID was reused.
    member(&format!("{pid}-{}(vmware-vmx)", ticks + 1));
    let f = expect(&lck, "vmware", Verdict::Stale);
    assert_evidence(&f, "reused");

    member(&format!("{}-0", dead_pid()));
    expect(&lck, "vmware", Verdict::Stale);

    fs::remove_file(lck.join("M12345.lck")).unwrap();
    expect(&lck, "vmware", Verdict::Unknown);
}

/// conda's `<path>.pid<N>.conda_lock`, Julia's `*.pidfile` (`pid host`), LibreOffice's
/// profile `.lock` (`[Lockdata]`).
#[test]
fn conda_julia_and_libreoffice_profile() {
    let dir = tempdir();
    let bin = dir.path().join("bin");

    let python = named_sleeper(&bin, "conda", dir.path());
    let conda = write(
        &dir.path()
            .join(format!("pkgs/urls.txt.pid{}.conda_lock", python.pid())),
        b"",
    );
    expect(&conda, "conda", Verdict::Live);
    let conda_dead = write(
        &dir.path()
            .join(format!("pkgs/cache.pid{}.conda_lock", dead_pid())),
        b"",
    );
    let f = expect(&conda_dead, "conda", Verdict::Stale);
    assert_evidence(&f, "conda clean --lock");

    let julia = named_sleeper(&bin, "julia", dir.path());
    let pidfile = write(
        &dir.path().join(".julia/compiled/v1.10/Foo.ji.pidfile"),
        format!("{} {}", julia.pid(), hostname()),
    );
    expect(&pidfile, "julia-pidfile", Verdict::Live);
    write(&pidfile, format!("{} elsewhere.example", julia.pid()));
    expect(&pidfile, "julia-pidfile", Verdict::Foreign);
    write(&pidfile, format!("{} {}", dead_pid(), hostname()));
    expect(&pidfile, "julia-pidfile", Verdict::Stale);

    let user = std::env::var("USER").unwrap_or_else(|_| "root".into());
    let profile = dir.path().join(".config/libreoffice/4/.lock");
    let lockdata = |host: &str| {
        format!(
            "[Lockdata]\nUser={user}\nHost={host}\nStamp=-12345\nTime=30.11.2026 12:00\nIPCServer=true\n"
        )
    };
    write(&profile, lockdata(&hostname()));
    // Judged as written 10 s ago, in this boot: older than LibreOffice's start-up (a lock
    // made a moment ago proves nothing).
    let judge_profile = |verdict: Verdict| {
        let f = judge_changed(&profile, |ev| written_ago_this_boot(ev, &profile, 10));
        assert_eq!(f.dialect, "libreoffice-profile");
        assert_eq!(f.judgement.verdict(), verdict, "{:#?}", f.judgement);
    };
    {
        // Stale only while no office program runs on this host.
        let _no_office = quiet::absent(Fact::Office);
        if quiet::none_running(Fact::Office) {
            judge_profile(Verdict::Stale);
            let _soffice = named_sleeper(&bin, "soffice.bin", dir.path());
            judge_profile(Verdict::Live);
        }
    }
    write(&profile, lockdata("elsewhere.example"));
    expect(&profile, "libreoffice-profile", Verdict::Foreign);
}

/// Package-manager manifests named like locks are not locks; a pid file with such content
/// under an ordinary name still is.
#[test]
fn package_manager_manifests_are_not_locks() {
    let env = Env::new();
    let root = env.path().join("src");
    let dead = dead_pid();
    for name in [
        "Gopkg.lock",
        "Chart.lock",
        "MODULE.bazel.lock",
        "pixi.lock",
        "stack.yaml.lock",
        "conan.lock",
        "Cargo.lock",
    ] {
        write(&root.join(name), format!("{dead}\n"));
    }
    let real = write(&root.join("worker.lock"), format!("{dead}\n"));
    let (report, _) = env.scan_json(&[&root]);
    let paths: Vec<&str> = report.locks.iter().map(|l| l.path.as_str()).collect();
    assert_eq!(paths, vec![real.to_str().unwrap()], "{paths:#?}");
}

// ---------------------------------------------------------------------------------------------
// Declared dialects, end to end through the binary

const DECLARED: &str = r#"{
  "dialects": [
    {
      "name": "nightly-backup",
      "patterns": ["*.backup-lock"],
      "format": { "lines": { "pid": 2, "host": 3 } },
      "programs": ["backup-job"],
      "stale_after_secs": 3600
    },
    {
      "name": "render-farm",
      "patterns": ["**/jobs/*.claim"],
      "format": { "json": { "pid": "owner_pid", "host": "node", "time": "claimed_at" } },
      "programs": ["render"]
    },
    {
      "name": "spool",
      "patterns": ["spool.guard"],
      "format": "kernel-lock"
    }
  ]
}"#;

#[test]
fn declared_dialect_from_configuration_to_reclaim() {
    let env = Env::new();
    let config = write(&env.path().join("config/locksmith/config.json"), DECLARED);
    let root = env.path().join("work");
    let bin = env.path().join("bin");
    let host = hostname();

    let job = named_sleeper(&bin, "backup-job", env.path());
    let live = write(
        &root.join("a.backup-lock"),
        format!("v1\n{}\n{host}\n", job.pid()),
    );
    let dead = write(
        &root.join("b.backup-lock"),
        format!("v1\n{}\n{host}\n", dead_pid()),
    );
    let reused = {
        let other = util::sleeper();
        let p = write(
            &root.join("c.backup-lock"),
            format!("v1\n{}\n{host}\n", other.pid()),
        );
        (p, other)
    };
    let foreign = write(
        &root.join("d.backup-lock"),
        format!("v1\n{}\nelsewhere.example\n", job.pid()),
    );
    let foreign_old = write(
        &root.join("e.backup-lock"),
        format!("v1\n{}\nelsewhere.example\n", job.pid()),
    );
    // Its mtime set two hours back: anyone who may write the file can, so it proves no
    // missed heartbeat (its ctime is now).
    util::set_mtime_ms(&foreign_old, util::now_ms() - 2 * 3600 * 1000);
    let garbage = write(&root.join("f.backup-lock"), "not a pid\n");
    let now = jiff::Timestamp::now();
    let claim = write(
        &root.join("jobs/frame-0042.claim"),
        format!(
            r#"{{"owner_pid": {}, "node": "{host}", "claimed_at": "{now}"}}"#,
            dead_pid()
        ),
    );
    let guard = write(&root.join("spool.guard"), b"");

    let (mut ev, out) = record_scan(&env, &["--json"], &root);
    let report = util::parse_report(&out);
    assert_eq!(out.status.code(), Some(1), "stale locks were found");
    let v = |d: &str, x: &str| (d.to_string(), x.to_string());
    let check = |report: &util::Report, foreign_old_verdict: &str| {
        let verdict = |p: &Path| {
            let l = report.expect_lock(p);
            (l.dialect.clone(), l.verdict.clone())
        };
        assert_eq!(verdict(&live), v("nightly-backup", "live"));
        assert_eq!(verdict(&dead), v("nightly-backup", "stale"));
        // A live PID running another program than the declared ones, since before the lock:
        // a name proves nothing either way.
        assert_eq!(verdict(&reused.0), v("nightly-backup", "unknown"));
        assert_eq!(verdict(&foreign), v("nightly-backup", "foreign"));
        assert_eq!(
            verdict(&foreign_old),
            v("nightly-backup", foreign_old_verdict)
        );
        assert_eq!(verdict(&garbage), v("nightly-backup", "unknown"));
        assert_eq!(verdict(&claim), v("render-farm", "stale"));
        assert_eq!(verdict(&guard), v("spool", "free"));
    };
    // Another host's lock whose mtime alone is old: foreign, like the fresh one, on this
    // machine's clock and on one known steady (the file's times as the scan found them).
    check(&report, "foreign");
    let mut on_a_steady_clock = ev.clone();
    steady(&mut on_a_steady_clock);
    ask_here(&mut on_a_steady_clock, &foreign_old);
    check(&replay_json(&env, &on_a_steady_clock).0, "foreign");
    // The same scan with that lock really untouched for two hours (in its evidence, in this
    // boot, on a clock known steady): longer than the declared window, stale.
    steady(&mut ev);
    written_ago_this_boot(&mut ev, &foreign_old, 2 * 3600);
    ask_here(&mut ev, &foreign_old);
    let (replayed, out) = replay_json(&env, &ev);
    assert_eq!(out.status.code(), Some(1), "stale locks were found");
    check(&replayed, "stale");
    assert!(
        replayed
            .expect_lock(&foreign_old)
            .evidence
            .iter()
            .any(|e| e.contains("longer than its writer's 3600 s window")),
        "{:#?}",
        replayed.expect_lock(&foreign_old)
    );
    let l = report.expect_lock(&live);
    assert_eq!(l.owner.as_ref().and_then(|o| o.pid), Some(job.pid() as i64));
    assert_eq!(
        l.owner.as_ref().and_then(|o| o.hostname.clone()),
        Some(host.clone())
    );

    // The table names the dialect too.
    let table = util::stdout(&env.run([OsStr::new("--scan"), root.as_os_str()]));
    assert!(
        table.contains("nightly-backup") && table.contains("render-farm"),
        "{table}"
    );

    // Reclaim removes exactly the stale ones, through the same declarations: on this
    // machine the other host's lock is not proven stale (its heartbeat is the file's ctime,
    // now), and is kept.
    let out = env.scan(&["--reclaim", "--json"], &root);
    let report = util::parse_report(&out);
    let removed: Vec<&str> = report
        .reclaimed
        .as_ref()
        .unwrap()
        .iter()
        .filter(|r| r.ok)
        .map(|r| r.path.as_str())
        .collect();
    for p in [&dead, &claim] {
        assert!(
            !p.exists(),
            "{} was not reclaimed: {removed:?}",
            p.display()
        );
    }
    for p in [&live, &reused.0, &foreign, &foreign_old, &garbage, &guard] {
        assert!(p.exists(), "{} was removed", p.display());
    }
    assert!(
        env.journal()
            .iter()
            .any(|j| j["dialect"] == "nightly-backup")
    );
    drop(config);
}

#[test]
fn a_bad_declaration_names_the_file_line_and_key() {
    let env = Env::new();
    let cases = [
        (
            r#"{"dialects": [{"name": "x", "patterns": ["*.x"],
  "format": {"lines": {"pid": 0}}}]}"#,
            "format.lines.pid",
            2,
        ),
        (
            r#"{"dialects": [
  {"name": "pidfile", "patterns": ["*.x"], "format": "kernel-lock"}]}"#,
            "`name`",
            2,
        ),
        (
            r#"{"dialects": [{"name": "x", "patterns": ["*.x"],
  "format": {"json": {"pid": "pid", "hots": "h"}}}]}"#,
            "hots",
            2,
        ),
    ];
    for (text, key, line) in cases {
        let file = write(&env.path().join("bad.json"), text);
        let out = env.run([
            OsStr::new("--scan"),
            OsStr::new("--config"),
            file.as_os_str(),
            env.path().as_os_str(),
        ]);
        assert_eq!(out.status.code(), Some(2), "{text}");
        let err = util::stderr(&out);
        assert!(err.contains(file.to_str().unwrap()), "{err}");
        assert!(err.contains(&format!("line {line}")), "{err}");
        assert!(err.contains(key), "{err}");
    }
}
