//! Files that are not locks are never listed: the dependency lock files of 26 ecosystems
//! (`tests/fixtures/not-locks/`, taken from real projects, see its README), under their own
//! names and under names lock patterns match; a directory of dependency metadata named
//! `NAME.lock`; databases in use by the real programs (SQLite in WAL mode, GDBM), which hold
//! kernel locks on their own files, and database files known by their magic bytes (Berkeley DB,
//! LMDB); CVS's backup copies; sockets.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use locksmith::probe::FileKey;

use crate::util::judging::scan_findings;
use crate::util::{Env, Group, require, snapshot, wait_until, write};

/// The corpus: one directory per ecosystem.
fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/not-locks")
}

/// Every file of the corpus (recursively), with its path below the corpus.
fn corpus_files() -> Vec<(PathBuf, PathBuf)> {
    walkdir::WalkDir::new(corpus())
        .into_iter()
        .flatten()
        .filter(|e| e.file_type().is_file())
        .map(|e| {
            let rel = e.path().strip_prefix(corpus()).unwrap().to_path_buf();
            (e.path().to_path_buf(), rel)
        })
        .filter(|(_, rel)| rel != Path::new("README.md"))
        .collect()
}

/// `locksmith --scan --json ROOT` with the real binary: the paths it lists.
fn listed(env: &Env, root: &Path) -> Vec<String> {
    let (report, out) = env.scan_json(&[root]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    report
        .locks
        .iter()
        .map(|l| format!("{} ({}: {})", l.path, l.dialect, l.verdict))
        .collect()
}

#[test]
fn dependency_lock_files_of_every_ecosystem_are_not_listed() {
    let ecosystems = fs::read_dir(corpus())
        .unwrap()
        .flatten()
        .filter(|e| e.path().is_dir())
        .count();
    assert!(ecosystems >= 25, "the corpus has {ecosystems} ecosystems");
    let env = Env::new();
    let tree = env.path().join("projects");
    for (from, rel) in corpus_files() {
        let to = tree.join(&rel);
        fs::create_dir_all(to.parent().unwrap()).unwrap();
        fs::copy(&from, &to).unwrap();
    }
    assert_eq!(listed(&env, &tree), Vec::<String>::new());
}

/// The same files under names that lock patterns match (`ECOSYSTEM.lock`, `lock`): known by
/// their content, not their name.
#[test]
fn dependency_lock_files_are_known_by_their_content() {
    let env = Env::new();
    let tree = env.path().join("renamed");
    let mut n = 0;
    for (from, rel) in corpus_files() {
        // The esy.lock directory's own members are judged as a directory below.
        if rel.components().count() != 2 {
            continue;
        }
        let ecosystem = rel.components().next().unwrap().as_os_str().to_owned();
        let dir = tree.join(&ecosystem);
        fs::create_dir_all(&dir).unwrap();
        fs::copy(
            &from,
            dir.join(format!("{}.lock", ecosystem.to_string_lossy())),
        )
        .unwrap();
        fs::copy(&from, dir.join("lock")).unwrap();
        n += 1;
    }
    assert!(n >= 25, "{n} files");
    assert_eq!(listed(&env, &tree), Vec::<String>::new());
}

/// esy's `esy.lock/` (with its `opam/` metadata), and the flat one of a project without opam
/// packages (`index.json`, `.gitattributes`, `.gitignore`: a few small files, as a `mkdir`
/// lock's records would be): directories of dependency metadata, not `mkdir` locks.
#[test]
fn a_directory_of_dependency_metadata_named_lock_is_not_a_lock_directory() {
    let env = Env::new();
    for (from, rel) in corpus_files() {
        if rel.starts_with("ocaml-esy") {
            write(&env.path().join(&rel), fs::read(&from).unwrap());
        }
    }
    let flat = env.path().join("ocaml-esy/no-opam/esy.lock");
    let members = fs::read_dir(&flat).unwrap().count();
    assert_eq!(members, 3);
    assert!(
        fs::read_dir(&flat)
            .unwrap()
            .flatten()
            .all(|e| e.metadata().unwrap().len() < 4096)
    );
    assert_eq!(listed(&env, env.path()), Vec::<String>::new());
    // A lock directory beside them still is one.
    let lock = env.path().join("ocaml-esy/no-opam/job.lock");
    fs::create_dir(&lock).unwrap();
    let found = listed(&env, env.path());
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].contains("mkdir-lock"), "{found:?}");
}

/// A SQLite database in WAL mode, open in `sqlite3` inside a transaction: the database and
/// its `-shm` carry the kernel locks SQLite takes on them, and none is a lock file; nor are
/// they after sqlite3 is killed.
#[test]
fn a_sqlite_database_in_use_is_not_a_lock() {
    if !require("sqlite3") {
        return;
    }
    let env = Env::new();
    let dir = env.path().join("data");
    fs::create_dir_all(&dir).unwrap();
    let db = dir.join("app.db");
    let mut sqlite = Group::spawn(
        Command::new("sqlite3")
            .arg(&db)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    );
    {
        use std::io::Write;
        let mut stdin = sqlite.child.stdin.as_ref().unwrap();
        stdin
            .write_all(
                b"PRAGMA journal_mode=WAL;\nCREATE TABLE t(x);\nINSERT INTO t VALUES (1);\nBEGIN;\nINSERT INTO t VALUES (2);\n",
            )
            .unwrap();
        stdin.flush().unwrap();
    }
    let shm = dir.join("app.db-shm");
    wait_until("sqlite3 to lock its WAL index", || {
        fs::metadata(&shm).is_ok_and(|m| snapshot().kernel_locked(FileKey::of(&m)))
    });
    assert!(dir.join("app.db-wal").exists());
    let found: Vec<PathBuf> = scan_findings(&dir).into_iter().map(|f| f.path).collect();
    assert_eq!(found, Vec::<PathBuf>::new());
    assert_eq!(listed(&env, &dir), Vec::<String>::new());

    sqlite.kill();
    assert_eq!(listed(&env, &dir), Vec::<String>::new());
}

/// A GDBM database open for writing (Perl's GDBM_File, over libgdbm) is flocked by libgdbm;
/// Berkeley DB (Perl's DB_File) and LMDB (`mdb_load`) databases are data too. Named on the
/// command line (every dialect is asked), none is a lock.
#[test]
fn gdbm_berkeley_db_and_lmdb_databases_are_not_locks() {
    if !require("perl") {
        return;
    }
    let env = Env::new();
    let dir = env.path().join("db");
    fs::create_dir_all(&dir).unwrap();
    let gdbm = dir.join("index.db");
    let ready = env.path().join("ready");
    let _holder = Group::spawn(
        Command::new("perl")
            .arg("-MGDBM_File")
            .arg("-e")
            .arg(
                "tie %h, 'GDBM_File', $ARGV[0], &GDBM_WRCREAT, 0644 or die; $h{a} = 1; \
                 open(my $f, '>', $ARGV[1]); close $f; sleep 600",
            )
            .arg(&gdbm)
            .arg(&ready)
            .stdin(Stdio::null()),
    );
    wait_until("GDBM to open its database", || ready.exists());
    assert!(snapshot().kernel_locked(FileKey::of(&fs::metadata(&gdbm).unwrap())));
    let bdb = dir.join("cache.db");
    let out = Command::new("perl")
        .arg("-MDB_File")
        .arg("-e")
        .arg("tie %h, 'DB_File', $ARGV[0], O_RDWR|O_CREAT, 0644, $DB_HASH or die; $h{a} = 1; untie %h")
        .arg(&bdb)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let mut roots = vec![gdbm.clone(), bdb.clone()];
    if require("mdb_load") {
        let lmdb = dir.join("lmdb");
        fs::create_dir_all(&lmdb).unwrap();
        let mut load = Command::new("mdb_load");
        load.arg("-f")
            .arg("/dev/stdin")
            .arg(&lmdb)
            .stdin(Stdio::piped());
        let mut child = load.spawn().unwrap();
        {
            use std::io::Write;
            child
                .stdin
                .take()
                .unwrap()
                .write_all(b"VERSION=3\nformat=print\ntype=btree\nmapsize=1048576\nHEADER=END\n a\n b\nDATA=END\n")
                .unwrap();
        }
        assert!(child.wait().unwrap().success());
        roots.push(lmdb.join("data.mdb"));
    }
    let refs: Vec<&Path> = roots.iter().map(PathBuf::as_path).collect();
    let (report, _) = env.scan_json(&refs);
    assert!(report.locks.is_empty(), "{:#?}", report.locks);
    assert_eq!(listed(&env, &dir), Vec::<String>::new());
}

/// `cvs init` leaves backup copies `.#NAME` of CVSROOT's administrative files: named like
/// Emacs's locks, they are not locks.
#[test]
fn cvs_backup_copies_are_not_emacs_locks() {
    if !require("cvs") {
        return;
    }
    let env = Env::new();
    let root = env.path().join("cvsroot");
    let out = Command::new("cvs")
        .arg("-d")
        .arg(&root)
        .args(["-Q", "init"])
        .env("HOME", env.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let backups = fs::read_dir(root.join("CVSROOT"))
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(".#"))
        .count();
    assert!(backups > 0, "cvs init made no backup copies");
    assert_eq!(listed(&env, &root), Vec::<String>::new());
    // An Emacs lock beside them still is one.
    std::os::unix::fs::symlink("jdoe@elsewhere.example.42:1", root.join("CVSROOT/.#notes"))
        .unwrap();
    let found = listed(&env, &root);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].contains("emacs"), "{found:?}");
}

/// A listening socket, even named like a lock, is not a lock file.
#[test]
fn sockets_are_not_listed() {
    let env = Env::new();
    let dir = env.path().join("run");
    fs::create_dir_all(&dir).unwrap();
    let _a = std::os::unix::net::UnixListener::bind(dir.join("daemon.lock")).unwrap();
    let _b = std::os::unix::net::UnixListener::bind(dir.join("worker.pid")).unwrap();
    assert_eq!(listed(&env, &dir), Vec::<String>::new());
}
