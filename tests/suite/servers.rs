//! Servers, Java databases, a disk-image tool and lock libraries, run for real: MariaDB, QEMU's
//! `qemu-nbd`, etcd and H2 lock their data files in the kernel (never listed, live or killed);
//! Tor and Derby lock files that exist only to be locked (live, then free once killed); HSQLDB
//! writes a heartbeat and keeps its lock file open; Ruby's `lockfile` gem and Python's
//! `lockfile` package name their owner (live, stale once killed, a reused PID, another host).
//! Each test runs the program live, SIGKILLs it, reclaims with the real binary where the lock
//! is stale, and shows the program working again. A test whose program is not installed says
//! so and skips (under CI it fails: `.ci/run` installs them).

use std::fs;
use std::io::Write;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use locksmith::Verdict;
use locksmith::probe::FileKey;

use crate::util::judging::{
    assert_evidence, expect, judge_changed, scan_findings, started_ms, steady, written_at,
};
use crate::util::{Env, Group, require, run_bounded, snapshot, stderr, stdout, wait_until, write};

/// Waits until a kernel lock is held on `path`.
fn wait_locked(what: &str, path: &Path) {
    wait_until(what, || {
        fs::metadata(path).is_ok_and(|m| snapshot().kernel_locked(FileKey::of(&m)))
    });
}

/// Runs `cmd` to success (within two minutes), returning its output.
fn ok(mut cmd: Command) -> std::process::Output {
    cmd.stdin(Stdio::null());
    let out = run_bounded(cmd, Duration::from_secs(120));
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    out
}

/// `--scan --reclaim ROOT` with the real binary; the paths it removed.
fn reclaim(env: &Env, root: &Path) -> Vec<PathBuf> {
    let (report, _) = env.reclaim_json(&[], root);
    report
        .reclaimed
        .unwrap_or_default()
        .into_iter()
        .filter(|r| r.ok && r.action == "removed")
        .map(|r| PathBuf::from(r.path))
        .collect()
}

/// The paths a scan of `root` lists.
fn listed(root: &Path) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = scan_findings(root).into_iter().map(|f| f.path).collect();
    paths.sort();
    paths
}

/// A TCP port on the loopback address that nothing listens on now.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The Java jars of a Debian package, or a skip.
fn jars(names: &[&str]) -> Option<String> {
    if !require("java") {
        return None;
    }
    let mut paths = Vec::new();
    for n in names {
        let p = Path::new("/usr/share/java").join(n);
        if !crate::util::require_that(
            p.is_file(),
            format!("{} is not installed (.ci/run installs it)", p.display()),
        ) {
            return None;
        }
        paths.push(p.to_string_lossy().into_owned());
    }
    Some(paths.join(":"))
}

/// Asserts that a scan of `root` lists none of `data` (files a server locks while it works).
fn none_listed(root: &Path, data: &[PathBuf], when: &str) {
    let found = listed(root);
    for d in data {
        assert!(
            !found.contains(d),
            "{when}: the data file {} is listed: {found:#?}",
            d.display()
        );
    }
}

/// Waits until every one of `data` exists and at least one carries a kernel lock.
fn wait_data_locked(what: &str, data: &[PathBuf]) {
    wait_until(what, || {
        let snap = snapshot();
        data.iter().all(|d| d.exists())
            && data
                .iter()
                .any(|d| fs::metadata(d).is_ok_and(|m| snap.kernel_locked(FileKey::of(&m))))
    });
}

// ---------------------------------------------------------------------------------------------
// Data files that servers lock in the kernel

/// MariaDB locks its InnoDB system tablespace and Aria's control file (POSIX locks) while it
/// runs: they are data, never rows; its pid file is a lock, live and then stale.
#[test]
fn mariadb_data_files_are_never_listed() {
    if !require("mariadbd") || !require("mariadb-install-db") {
        return;
    }
    let env = Env::new();
    let data = env.path().join("maria");
    let mut install = Command::new("mariadb-install-db");
    install
        .arg("--no-defaults")
        .arg(format!("--datadir={}", data.display()))
        .arg("--user=root")
        .arg("--auth-root-authentication-method=normal")
        .arg("--skip-test-db");
    ok(install);
    let pid_file = data.join("mariadb.pid");
    let start = || {
        let mut c = Command::new("mariadbd");
        c.arg("--no-defaults")
            .arg(format!("--datadir={}", data.display()))
            .arg("--user=root")
            .arg("--skip-networking")
            .arg(format!(
                "--socket={}",
                env.path().join("maria.sock").display()
            ))
            .arg(format!("--pid-file={}", pid_file.display()))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        Group::spawn(c)
    };
    let files = [data.join("ibdata1"), data.join("aria_log_control")];
    let mut server = start();
    wait_data_locked("mariadbd to lock its tablespace", &files);
    wait_until("mariadbd to write its pid file", || {
        fs::read_to_string(&pid_file).is_ok_and(|t| t.trim() == server.pid().to_string())
    });
    none_listed(env.path(), &files, "running");
    expect(&pid_file, "pidfile", Verdict::Live);

    server.kill();
    none_listed(env.path(), &files, "killed");
    expect(&pid_file, "pidfile", Verdict::Stale);
    let mut again = start();
    wait_data_locked("mariadbd to run again", &files);
    none_listed(env.path(), &files, "running again");
    again.kill();
}

/// `qemu-nbd` (as `qemu-img` and `qemu-system-*` do) locks the disk image it serves with OFD
/// byte-range locks: an image is never a row.
#[test]
fn a_qemu_disk_image_is_never_listed() {
    if !require("qemu-img") || !require("qemu-nbd") {
        return;
    }
    let env = Env::new();
    let image = env.path().join("disk.qcow2");
    let mut create = Command::new("qemu-img");
    create
        .args(["create", "-q", "-f", "qcow2"])
        .arg(&image)
        .arg("16M");
    ok(create);
    let raw = env.path().join("disk.img");
    let mut create = Command::new("qemu-img");
    create
        .args(["create", "-q", "-f", "raw"])
        .arg(&raw)
        .arg("1M");
    ok(create);
    let serve = |img: &Path, sock: &str, fmt: &str| {
        let mut c = Command::new("qemu-nbd");
        c.args(["-f", fmt, "-t", "-k"])
            .arg(env.path().join(sock))
            .arg(img)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        Group::spawn(c)
    };
    let images = [image.clone(), raw.clone()];
    let mut a = serve(&image, "a.sock", "qcow2");
    let mut b = serve(&raw, "b.sock", "raw");
    wait_until("qemu-nbd to lock both images", || {
        let snap = snapshot();
        images
            .iter()
            .all(|d| fs::metadata(d).is_ok_and(|m| snap.kernel_locked(FileKey::of(&m))))
    });
    none_listed(env.path(), &images, "served");
    a.kill();
    b.kill();
    none_listed(env.path(), &images, "killed");
}

/// etcd locks its write-ahead log segments and its bolt database (`member/snap/db`) with
/// flock: data, never rows.
#[test]
fn etcds_wal_and_bolt_database_are_never_listed() {
    if !require("etcd") {
        return;
    }
    let env = Env::new();
    let dir = env.path().join("etcd");
    let (client, peer) = (free_port(), free_port());
    let mut c = Command::new("etcd");
    c.args(["--name", "t", "--data-dir"])
        .arg(&dir)
        .arg(format!("--listen-client-urls=http://127.0.0.1:{client}"))
        .arg(format!("--advertise-client-urls=http://127.0.0.1:{client}"))
        .arg(format!("--listen-peer-urls=http://127.0.0.1:{peer}"))
        .arg(format!(
            "--initial-advertise-peer-urls=http://127.0.0.1:{peer}"
        ))
        .arg(format!("--initial-cluster=t=http://127.0.0.1:{peer}"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut etcd = Group::spawn(c);
    let bolt = dir.join("member/snap/db");
    wait_data_locked(
        "etcd to lock its bolt database",
        std::slice::from_ref(&bolt),
    );
    let wal: Vec<PathBuf> = fs::read_dir(dir.join("member/wal"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert!(!wal.is_empty());
    let data: Vec<PathBuf> = wal.into_iter().chain([bolt]).collect();
    none_listed(env.path(), &data, "running");
    assert!(listed(env.path()).is_empty(), "{:#?}", listed(env.path()));
    etcd.kill();
    none_listed(env.path(), &data, "killed");
}

/// H2 (2.x, MVStore) locks its `.mv.db` with a `FileChannel` lock while the database is open:
/// data, never a row.
#[test]
fn an_h2_database_file_is_never_listed() {
    let Some(cp) = jars(&["h2.jar"]) else {
        return;
    };
    let env = Env::new();
    let db = env.path().join("h2/app");
    let mut c = Command::new("java");
    c.args(["-cp", &cp, "org.h2.tools.Shell", "-url"])
        .arg(format!("jdbc:h2:{}", db.display()))
        .args(["-user", "sa", "-password", ""])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut shell = Group::spawn(c);
    let _stdin = shell.stdin();
    let file = env.path().join("h2/app.mv.db");
    wait_data_locked("H2 to lock its database file", std::slice::from_ref(&file));
    none_listed(env.path(), std::slice::from_ref(&file), "open");
    shell.kill();
    none_listed(env.path(), std::slice::from_ref(&file), "killed");
}

/// H2 with `FILE_LOCK=FILE` writes `NAME.lock.db` (no PID; its watchdog answers for it): live
/// while the database is open, stale once the JVM is killed (nobody has the database open, no
/// Java works there), reclaimed, and H2 opens the database again.
#[test]
fn an_h2_lock_db_is_live_then_stale() {
    let Some(cp) = jars(&["h2.jar"]) else {
        return;
    };
    let env = Env::new();
    let db = env.path().join("h2/app");
    let open = |sql: Option<&str>| {
        let mut c = Command::new("java");
        c.args(["-cp", &cp, "org.h2.tools.Shell", "-url"])
            .arg(format!("jdbc:h2:{};FILE_LOCK=FILE", db.display()))
            .args(["-user", "sa", "-password", ""])
            .current_dir(env.path())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        if let Some(sql) = sql {
            c.args(["-sql", sql]);
        }
        c
    };
    let lock = env.path().join("h2/app.lock.db");
    let mut shell = Group::spawn(open(None).stdin(Stdio::piped()).stdout(Stdio::null()));
    let _stdin = shell.stdin();
    wait_until("H2 to write its lock file", || {
        fs::read_to_string(&lock).is_ok_and(|t| t.contains("method=file"))
            && env.path().join("h2/app.mv.db").is_file()
    });
    // Live once H2 has opened the database file (it writes the lock first).
    let f = crate::util::wait_for("H2 to open its database", || {
        let f = crate::util::judging::judge(&lock);
        (f.judgement.verdict() == Verdict::Live).then_some(f)
    });
    assert_eq!(f.dialect, "h2");
    assert!(
        f.judgement.holders.iter().any(|h| h.pid == shell.pid()),
        "{:#?}",
        f.judgement
    );
    shell.kill();
    // Unknown while younger (by its ctime) than H2's own 2 s: an opener may be just writing.
    let f = crate::util::wait_for("the lock to be older than H2's 2 s", || {
        let f = crate::util::judging::judge(&lock);
        (f.judgement.verdict() != Verdict::Unknown).then_some(f)
    });
    assert_eq!(f.judgement.verdict(), Verdict::Stale, "{:#?}", f.judgement);
    assert_evidence(&f, "no H2 (Java) process works in database");
    assert_eq!(reclaim(&env, env.path()), std::slice::from_ref(&lock));
    ok(open(Some("SELECT 1")));
}

// ---------------------------------------------------------------------------------------------
// Kernel-lock files of servers

/// Tor locks its data directory's `lock` (flock) and never removes it: live while it runs,
/// free (harmless, kept) once it is killed, and Tor starts again on it.
#[test]
fn tor_data_directory_lock_is_live_then_free() {
    if !require("tor") {
        return;
    }
    let env = Env::new();
    let data = env.path().join("tor");
    fs::create_dir(&data).unwrap();
    fs::set_permissions(&data, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
    let torrc = write(&env.path().join("torrc"), b"");
    let start = || {
        // No network: Tor makes and accepts no connection.
        let mut c = Command::new("tor");
        c.arg("--defaults-torrc")
            .arg(&torrc)
            .arg("-f")
            .arg(&torrc)
            .arg("--DataDirectory")
            .arg(&data)
            .args([
                "--SocksPort",
                "0",
                "--DisableNetwork",
                "1",
                "--Log",
                "err stderr",
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        Group::spawn(c)
    };
    let lock = data.join("lock");
    let mut tor = start();
    wait_locked("tor to lock its data directory", &lock);
    let f = expect(&lock, "tool-flock", Verdict::Live);
    assert_eq!(f.judgement.holders[0].pid, tor.pid());
    tor.kill();
    let f = expect(&lock, "tool-flock", Verdict::Free);
    assert_evidence(&f, "Tor's lock on its data directory");
    let (report, _) = env.reclaim_json(&[], env.path());
    assert!(
        report.reclaimed.unwrap_or_default().is_empty(),
        "a free lock is never reclaimed"
    );
    let mut again = start();
    wait_locked("tor to run again", &lock);
    again.kill();
}

/// Derby boots a database by locking `dbex.lck` (a `FileChannel` lock) and writing its id into
/// `db.lck`: both live while the database is booted, free once the JVM is killed, and Derby
/// boots it again. Neither is pacman's `db.lck`.
#[test]
fn derby_lock_files_are_live_then_free() {
    let Some(cp) = jars(&["derby.jar", "derbytools.jar"]) else {
        return;
    };
    let env = Env::new();
    let db = env.path().join("derby/app");
    let boot = || {
        let mut c = Command::new("java");
        c.args(["-cp", &cp, "org.apache.derby.tools.ij"])
            .current_dir(env.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let mut ij = Group::spawn(c);
        let mut stdin = ij.stdin();
        writeln!(stdin, "connect 'jdbc:derby:{};create=true';", db.display()).unwrap();
        (ij, stdin)
    };
    let (dbex, dblck) = (db.join("dbex.lck"), db.join("db.lck"));
    let booted = || {
        wait_locked("Derby to boot the database", &dbex);
        wait_until("Derby to write the database", || {
            db.join("service.properties").is_file() && db.join("seg0").is_dir()
        });
    };
    let (mut ij, _stdin) = boot();
    booted();
    for f in [&dbex, &dblck] {
        let found = expect(f, "tool-flock", Verdict::Live);
        assert_eq!(
            found.judgement.holders[0].pid,
            ij.pid(),
            "{:#?}",
            found.judgement
        );
    }
    // db.lck is held by the lock on dbex.lck.
    assert_evidence(
        &expect(&dblck, "tool-flock", Verdict::Live),
        "dbex.lck is locked",
    );
    ij.kill();
    for f in [&dbex, &dblck] {
        expect(f, "tool-flock", Verdict::Free);
    }
    let (mut again, _stdin) = boot();
    wait_locked("Derby to boot the database again", &dbex);
    expect(&dbex, "tool-flock", Verdict::Live);
    again.kill();
}

// ---------------------------------------------------------------------------------------------
// HSQLDB

/// HSQLDB's `db.lck`: its heartbeat and the descriptor its server keeps make it live; killed,
/// it is stale once nobody has it open and its heartbeat is older than HSQLDB's 10.1 s,
/// reclaimed, and the server opens the database again. It is named like pacman's lock, and is
/// not pacman's.
#[test]
fn hsqldb_lock_file_is_live_then_stale() {
    let Some(cp) = jars(&["hsqldb.jar"]) else {
        return;
    };
    let env = Env::new();
    let db = env.path().join("hsql/db");
    let serve = || {
        let mut c = Command::new("java");
        c.args(["-cp", &cp, "org.hsqldb.server.Server", "--database.0"])
            .arg(format!("file:{}", db.display()))
            .args(["--dbname.0", "t", "--address", "127.0.0.1", "--port"])
            .arg(free_port().to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        Group::spawn(c)
    };
    let lock = env.path().join("hsql/db.lck");
    let mut server = serve();
    // The lock is HSQLDB's beside its database's files, which it writes after taking it.
    let taken = || {
        fs::read(&lock).is_ok_and(|b| b.len() == 16 && b.starts_with(b"HSQLLOCK"))
            && env.path().join("hsql/db.properties").is_file()
    };
    wait_until("HSQLDB to take its lock", taken);
    let f = expect(&lock, "hsqldb", Verdict::Live);
    assert_eq!(f.judgement.holders[0].pid, server.pid());
    server.kill();
    // HSQLDB's own rule: a heartbeat within 10.1 s is a holder's. Once older, nobody has it
    // open: stale.
    let f = crate::util::wait_for("the heartbeat to age past HSQLDB's window", || {
        let f = crate::util::judging::judge(&lock);
        (f.judgement.verdict() != Verdict::Live).then_some(f)
    });
    assert_eq!(f.judgement.verdict(), Verdict::Stale, "{:#?}", f.judgement);
    assert_evidence(&f, "no process has it open");
    assert_eq!(reclaim(&env, env.path()), std::slice::from_ref(&lock));
    let mut again = serve();
    wait_until("HSQLDB to open the database again", taken);
    expect(&lock, "hsqldb", Verdict::Live);
    again.kill();
}

// ---------------------------------------------------------------------------------------------
// Ruby's lockfile gem

/// A Ruby holding `path` with the gem until killed.
fn ruby_lock(path: &Path) -> Group {
    let mut c = Command::new("ruby");
    c.arg("-rlockfile")
        .arg("-e")
        .arg("Lockfile.new(ARGV[0]).lock; $stdout.puts 'locked'; $stdout.flush; sleep")
        .arg(path)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    Group::spawn(c)
}

/// The gem's lock: live for its Ruby, stale once it is killed (every later user waits up to
/// its max_age), foreign when another host wrote it, stale when its PID now names a process
/// that started after it; reclaimed, the gem takes it at once.
#[test]
fn ruby_lockfile_gem_lock_live_killed_reused_and_foreign() {
    if !require("ruby")
        || !crate::util::require_that(
            Command::new("ruby")
                .args(["-rlockfile", "-e", "exit 0"])
                .stdin(Stdio::null())
                .status()
                .is_ok_and(|s| s.success()),
            "Ruby's lockfile gem is not installed (.ci/run installs ruby-lockfile)",
        )
    {
        return;
    }
    let env = Env::new();
    let lock = env.path().join("jobs/nightly.lock");
    fs::create_dir_all(lock.parent().unwrap()).unwrap();
    let mut holder = ruby_lock(&lock);
    wait_until("ruby to take the lock", || {
        fs::read_to_string(&lock).is_ok_and(|t| t.contains(&format!("pid: {}\n", holder.pid())))
    });
    let f = expect(&lock, "ruby-lockfile", Verdict::Live);
    assert_eq!(
        f.judgement.owner.as_ref().unwrap().pid,
        Some(holder.pid() as i64)
    );
    holder.kill();
    let f = expect(&lock, "ruby-lockfile", Verdict::Stale);
    assert_evidence(&f, "max_age");

    // The PID reused: a process that started after the lock was written.
    let text = fs::read_to_string(&lock).unwrap();
    let bin = env.path().join("bin");
    let later = crate::util::named_sleeper(&bin, "ruby", env.path());
    let reused = lock.with_file_name("reused.lock");
    let record: String = text
        .lines()
        .map(|l| {
            if l.starts_with("pid:") {
                format!("pid: {}\n", later.pid())
            } else {
                format!("{l}\n")
            }
        })
        .collect();
    write(&reused, record.as_bytes());
    let f = judge_changed(&reused, |ev| {
        steady(ev);
        let start = started_ms(ev, later.pid());
        written_at(ev, &reused, start - 60_000);
    });
    assert_eq!(f.judgement.verdict(), Verdict::Stale, "{:#?}", f.judgement);
    assert_evidence(&f, "started");
    fs::remove_file(&reused).unwrap();

    // Another host's lock: nothing here proves it gone.
    let theirs = lock.with_file_name("theirs.lock");
    write(
        &theirs,
        text.replacen("host: ", "host: elsewhere-", 1).as_bytes(),
    );
    expect(&theirs, "ruby-lockfile", Verdict::Foreign);
    fs::remove_file(&theirs).unwrap();

    assert_eq!(reclaim(&env, env.path()), std::slice::from_ref(&lock));
    let mut c = Command::new("ruby");
    c.arg("-rlockfile")
        .arg("-e")
        .arg("Lockfile.new(ARGV[0], :retries => 0).lock { }")
        .arg(&lock);
    ok(c);
}

// ---------------------------------------------------------------------------------------------
// Python's lockfile package

/// A Python with the `lockfile` package, or a skip.
fn python_with_lockfile() -> Option<PathBuf> {
    let candidates = std::env::var_os("LOCKSMITH_TEST_PYTHON")
        .map(PathBuf::from)
        .into_iter()
        .chain([PathBuf::from("/usr/bin/python3"), PathBuf::from("python3")]);
    for py in candidates {
        let has = Command::new(&py)
            .args(["-c", "import lockfile.mkdirlockfile, lockfile.linklockfile"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if has {
            return Some(py);
        }
    }
    crate::util::skip("no python3 with the lockfile package (.ci/run installs python3-lockfile)");
    None
}

/// The three styles of the package that name their holder: live for its Python, stale once
/// it is killed (an acquire then times out), stale when the PID now names a process that
/// started after them; reclaimed, the package takes them at once.
#[test]
fn python_lockfile_link_symlink_and_mkdir_locks() {
    let Some(py) = python_with_lockfile() else {
        return;
    };
    let env = Env::new();
    let dir = env.path().join("work");
    fs::create_dir(&dir).unwrap();
    let script = "import sys, time\n\
        import lockfile.linklockfile as l, lockfile.symlinklockfile as s, lockfile.mkdirlockfile as m\n\
        d = sys.argv[1]\n\
        for cls, name in ((l.LinkLockFile, 'link'), (s.SymlinkLockFile, 'sym'), (m.MkdirLockFile, 'mk')):\n\
        \x20   cls(d + '/' + name, timeout=int(sys.argv[2])).acquire()\n\
        if sys.argv[2] == '-1': time.sleep(1000)\n";
    let take = |timeout: &str| {
        let mut c = Command::new(&py);
        c.arg("-c")
            .arg(script)
            .arg(&dir)
            .arg(timeout)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        c
    };
    let locks = [
        dir.join("link.lock"),
        dir.join("sym.lock"),
        dir.join("mk.lock"),
    ];
    let mut holder = Group::spawn(take("-1"));
    wait_until("python to take the three locks", || {
        locks.iter().all(|l| fs::symlink_metadata(l).is_ok())
    });
    for l in &locks {
        let f = expect(l, "py-lockfile", Verdict::Live);
        assert!(
            evidence_names(&f, holder.pid()),
            "{}: {:#?}",
            l.display(),
            f.judgement
        );
    }
    holder.kill();
    for l in &locks {
        expect(l, "py-lockfile", Verdict::Stale);
    }
    // Stuck: the package never takes a lock over.
    let out = run_bounded(take("1"), Duration::from_secs(60));
    assert!(!out.status.success());
    assert!(stderr(&out).contains("LockTimeout"), "{}", stderr(&out));

    // The PID reused (the mkdir style names it plainly when not threaded).
    let bin = env.path().join("bin");
    let later = crate::util::named_sleeper(&bin, "python3", env.path());
    let host = snapshot().host.hostname.clone();
    let reused = dir.join("reused.lock");
    write(&reused.join(format!("{host}.{}", later.pid())), b"");
    let f = judge_changed(&reused, |ev| {
        steady(ev);
        let start = started_ms(ev, later.pid());
        written_at(ev, &reused, start - 60_000);
    });
    assert_eq!(f.judgement.verdict(), Verdict::Stale, "{:#?}", f.judgement);
    fs::remove_dir_all(&reused).unwrap();
    // Another host's.
    let theirs = dir.join("theirs.lock");
    write(
        &theirs.join(format!("elsewhere-{host}.{}", later.pid())),
        b"",
    );
    expect(&theirs, "py-lockfile", Verdict::Foreign);
    fs::remove_dir_all(&theirs).unwrap();

    let mut removed = reclaim(&env, env.path());
    removed.sort();
    let mut want = locks.to_vec();
    want.sort();
    assert_eq!(removed, want);
    ok(take("1"));
}

/// Whether the judgement names `pid` (as its owner, or among the readings of the name).
fn evidence_names(f: &locksmith::scan::Finding, pid: i32) -> bool {
    f.judgement.owner.as_ref().and_then(|o| o.pid) == Some(pid as i64)
        || f.judgement
            .evidence
            .iter()
            .any(|l| l.contains(&format!("PID {pid}")) || l.contains(&format!("process {pid}")))
}
