//! `tool-flock`: the kernel-lock files of well-known tools. Each of these programs takes a
//! kernel lock (`flock`, `fcntl`/`lockf`, OFD, Java's `FileChannel.lock`) on a file that exists
//! only to be locked, and never relies on the file's existence: a lock is released by the
//! kernel when its holder dies, and the file left behind is harmless (`free`) and must stay
//! (a program waiting on it would be split from the next one). Deleting such a file is the
//! usual "fix" people are told, and it fixes nothing: when the program still waits, a live
//! process holds the lock, and this dialect names it.
//!
//! | file | program | where its source locks it |
//! |---|---|---|
//! | `/etc/.pwd.lock` | glibc's `lckpwdf`, taken by shadow's `vipw`, `vigr`, `useradd`, `usermod`, `passwd`, `chpasswd`, ... | glibc `shadow/lckpwdf.c` (`PWD_LOCKFILE`, `fcntl(F_SETLKW)`; never removed) |
//! | `.certbot.lock` in certbot's config, work and logs directories (and a web server's) | certbot | `certbot/_internal/lock.py` (`lock_dir`: `fcntl.lockf(LOCK_EX \| LOCK_NB)`; removed on release, left by a killed certbot) |
//! | `.rpm.lock` in an rpm database | rpm and everything built on librpm (dnf, yum, zypper) | rpm `lib/rpmts.c` (`RPMLOCK_PATH`, `%_rpmlock_path`) and `lib/rpmlock.c` (`fcntl`) |
//! | `db/write-lock`, `db/txn-current-lock`, `db/pack-lock` in a Subversion repository; `locks/db.lock`, `locks/db-logs.lock` in a Berkeley DB one (`db/fs-type` `bdb`, or none: older than FSFS) | svnadmin, svnserve, mod_dav_svn, svnlook | Subversion `subversion/libsvn_fs_fs/fs.h` (`PATH_LOCK_FILE`, `PATH_TXN_CURRENT_LOCK`, `PATH_PACK_LOCK_FILE`), `subversion/libsvn_repos/repos.h` (`db.lock`, `db-logs.lock`), locked with `svn_io_file_lock2`; `repos.c` (`lock_repos`) locks `db.lock` only when the repository's type is `SVN_FS_TYPE_BDB`, so in an FSFS (or FSX) repository both are never locked and are not listed ([`super::not_locks`]) |
//! | `lock` in a Prometheus TSDB directory (beside `wal/`, `chunks_head/`) | Prometheus (`--storage.tsdb.use-lockfile`) | `tsdb/tsdbutil/dir_locker.go` (`fileutil.Flock`; "A lockfile from a previous execution already existed. It was replaced") |
//! | `.cargo-lock` in a build directory (`target/debug/`) | cargo ("Blocking waiting for file lock on build directory") | cargo `src/cargo/core/compiler/layout.rs` (`open_rw_exclusive_create(".cargo-lock")`, `flock`) |
//! | `.package-cache`, `.package-cache-mutate` in `$CARGO_HOME` | cargo ("Blocking waiting for file lock on package cache") | cargo `src/cargo/util/cache_lock.rs` (`flock` on both files) |
//! | `.lock` in rustdoc's output directory (beside `static.files/` or `search-index.js`) | rustdoc, through `cargo doc` | rustdoc `src/librustdoc/html/render/write_shared.rs` (`flock::Lock::new` on the output directory's `.lock`) |
//! | `wayland-N.lock` beside the `wayland-N` socket | every Wayland compositor (libwayland-server: Weston, Mutter, KWin, sway) | wayland `src/wayland-server.c` (`wl_socket_lock`: `flock(LOCK_EX \| LOCK_NB)`, `LOCK_SUFFIX`) |
//! | `pipewire-N.lock` beside the `pipewire-N` socket | PipeWire | pipewire `src/modules/module-protocol-native.c` (`lock_socket`: `flock`) |
//! | `*.lock` under a Go module cache's `@v/` directories | the go command | Go `src/cmd/go/internal/modfetch/fetch.go` (`lockVersion`: `lockedfile.MutexAt(...).Lock()`, `flock`) |
//! | `.metadata/.lock` in a workspace | Eclipse ("Workspace in use or cannot be created") | Eclipse `org.eclipse.osgi` `internal/location/Locker_JavaNio.java` (`FileChannel.tryLock`) |
//! | `bin/cache/lockfile` in a Flutter SDK | flutter ("Waiting for another flutter command to release the startup lock...") | Flutter `packages/flutter_tools/lib/src/cache.dart` (`Cache.lock`: `RandomAccessFile.lockSync`) |
//! | `write.lock` in a Lucene index (beside `segments_N`) | Lucene, and Elasticsearch, OpenSearch and Solr on it | Lucene `store/NativeFSLockFactory.java` ("Lucene will never actively remove the lock files, so although you see them, the index may not be locked") |
//! | `*.lock` under a `.gradle/` directory | Gradle ("Timeout waiting to lock ... It is currently in use by another Gradle instance") | Gradle `org/gradle/cache/internal/DefaultFileLockManager.java` (`FileChannel.lock` on the file's regions) |
//! | `/run/xtables.lock` (or `$XTABLES_LOCKFILE`) | iptables, ip6tables, ebtables ("Another app is currently holding the xtables lock") | iptables `iptables/xshared.c` (`XT_LOCK_NAME`, `flock(LOCK_EX)`) |
//! | `flintlock` in a Xapian database | Xapian: notmuch, recoll, mu | Xapian `backends/flint_lock.cc` (an OFD or `fcntl` lock) |
//! | `ACCOUNT.lock` in `~/.offlineimap/` | OfflineIMAP ("Another OfflineIMAP is running with the same metadatadir") | offlineimap `offlineimap/accounts.py` (`fcntl.lockf(LOCK_EX \| LOCK_NB)`) |
//! | `.lock` in an OSTree repository (beside `config`, `objects/`) | ostree, flatpak, rpm-ostree | ostree `src/libostree/ostree-repo-locking.c` (`flock` on the repository's `.lock`) |
//! | `lock` in a Tor data directory (empty, beside `state`, `keys/` or `cached-*`) | tor ("It looks like another Tor process is running with the same data directory") | Tor `src/app/config/config.c` (`try_locking`: `tor_lockfile_lock` on the data directory's `lock`), `src/lib/fs/lockfile.c` (`flock(LOCK_EX \| LOCK_NB)`; unlocking closes the file, never removes it) |
//! | `dbex.lck` in a Derby database directory (beside `service.properties` and `seg0/`) | Apache Derby, embedded or its network server ("Another instance of Derby may have already booted the database") | Derby `java/engine/org/apache/derby/impl/store/raw/data/BaseDataFileFactory.java` (`privGetJBMSLockOnDB`: `getExclusiveFileLock` on `DB_EX_LOCKFILE_NAME`, a `FileChannel.tryLock`) |
//! | `db.lck` in a Derby database directory | Apache Derby | the same `privGetJBMSLockOnDB`: `db.lck` holds the booting JVM's UUID, rewritten at every boot; where file locks work, only the lock on `dbex.lck` refuses a second boot (XSDB6), so `db.lck` is held while `dbex.lck` is |
//!
//! Verdict: a kernel lock held on the file makes it `live`, with its holders (the judge sees
//! to that first); otherwise `free`.

use std::path::Path;

use super::message::Message;
use super::{Candidate, Dialect, DialectId, EntryKind, Windows};
use crate::judge::{Judgement, LockFamily, Said};
use crate::probe::Snapshot;
use crate::verdict::Owner;

pub struct ToolFlock;

const PATTERNS: &[&str] = &[
    ".pwd.lock",
    ".certbot.lock",
    ".rpm.lock",
    "**/db/write-lock",
    "**/db/txn-current-lock",
    "**/db/pack-lock",
    "**/locks/db.lock",
    "**/locks/db-logs.lock",
    "lock",
    ".cargo-lock",
    ".package-cache",
    ".package-cache-mutate",
    "wayland-*.lock",
    "pipewire-*.lock",
    "**/@v/*.lock",
    "**/.metadata/.lock",
    "**/bin/cache/lockfile",
    "write.lock",
    "**/.gradle/**/*.lock",
    "xtables.lock",
    "flintlock",
    "**/.offlineimap/*.lock",
    ".lock",
    "dbex.lck",
    "db.lck",
];

/// A well-known kernel-lock file: what it is, for the evidence.
struct Tool {
    /// The program and its lock, as the owner detail names them.
    what: &'static str,
    matches: fn(&Candidate<'_>, &str, &Snapshot) -> bool,
    /// The file beside it whose kernel lock holds this one too (Derby's `dbex.lck` for its
    /// `db.lck`), if its own lock is not the one taken.
    held_with: Option<&'static str>,
}

fn parent_named(path: &Path, name: &str) -> bool {
    path.parent()
        .and_then(|p| p.file_name())
        .is_some_and(|n| n == name)
}

fn sibling(path: &Path, name: &str, snap: &Snapshot) -> bool {
    path.parent()
        .is_some_and(|d| snap.lstat(&d.join(name)).is_ok())
}

fn sibling_dir(path: &Path, name: &str, snap: &Snapshot) -> bool {
    path.parent()
        .is_some_and(|d| snap.lstat(&d.join(name)).is_ok_and(|m| m.is_dir()))
}

fn under(path: &Path, name: &str) -> bool {
    path.ancestors()
        .skip(1)
        .any(|a| a.file_name().is_some_and(|n| n == name))
}

/// Subversion's repository: `format` and `db/` at its top.
fn in_svn_repo(path: &Path, snap: &Snapshot) -> bool {
    let top = path.parent().and_then(Path::parent);
    top.is_some_and(|t| {
        let stat = |name: &str| snap.stat(&t.join(name));
        stat("format").is_ok_and(|m| m.is_file())
            && stat("db").is_ok_and(|m| m.is_dir())
            && stat("hooks").is_ok_and(|m| m.is_dir())
    })
}

/// A Subversion repository's back end, from `db/fs-type` (`fsfs`, `bdb`, `fsx`) under its
/// top `top`; a repository made before FSFS existed has no `fs-type` and is Berkeley DB's.
/// `None` when the file cannot be read.
pub(super) fn svn_fs_type(top: &Path, snap: &Snapshot) -> Option<String> {
    let at = top.join("db/fs-type");
    match snap.read_small(&at, 64) {
        Some(b) => Some(String::from_utf8_lossy(&b).trim().to_string()),
        None if snap
            .lstat(&at)
            .is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound) =>
        {
            Some("bdb".into())
        }
        None => None,
    }
}

/// `locks/db.lock` or `locks/db-logs.lock` in a Subversion repository whose back end never
/// locks them (FSFS, FSX: `lock_repos` in `repos.c` locks only a Berkeley DB repository's).
pub(super) fn svn_unused_lock(path: &Path, snap: &Snapshot) -> bool {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    matches!(name, "db.lock" | "db-logs.lock")
        && parent_named(path, "locks")
        && in_svn_repo(path, snap)
        && path
            .parent()
            .and_then(Path::parent)
            .and_then(|top| svn_fs_type(top, snap))
            .is_some_and(|t| t != "bdb")
}

/// Lucene's index: a `segments_N` beside the lock.
fn in_lucene_index(path: &Path, snap: &Snapshot) -> bool {
    let Some(dir) = path.parent() else {
        return false;
    };
    snap.list_dir(dir, 4096)
        .is_ok_and(|names| names.iter().any(|(n, _)| n.starts_with("segments_")))
}

const TOOLS: &[Tool] = &[
    Tool {
        what: "glibc's lckpwdf lock on the account files (vipw, useradd, usermod, passwd, chpasswd)",
        matches: |c, name, _snap| name == ".pwd.lock" && parent_named(c.path, "etc"),
        held_with: None,
    },
    Tool {
        what: "certbot's lock on its directory",
        matches: |_, name, _| name == ".certbot.lock",
        held_with: None,
    },
    Tool {
        what: "rpm's transaction lock",
        matches: |_, name, _| name == ".rpm.lock",
        held_with: None,
    },
    Tool {
        what: "a Subversion repository's lock (svnadmin, svnserve, mod_dav_svn)",
        matches: |c, name, snap| {
            let in_db = matches!(name, "write-lock" | "txn-current-lock" | "pack-lock")
                && parent_named(c.path, "db");
            let in_locks = matches!(name, "db.lock" | "db-logs.lock")
                && parent_named(c.path, "locks")
                && !svn_unused_lock(c.path, snap);
            (in_db || in_locks) && in_svn_repo(c.path, snap)
        },
        held_with: None,
    },
    Tool {
        what: "Prometheus's lock on its TSDB directory",
        matches: |c, name, snap| {
            name == "lock"
                && (sibling_dir(c.path, "wal", snap) || sibling_dir(c.path, "chunks_head", snap))
                && (sibling(c.path, "queries.active", snap)
                    || sibling_dir(c.path, "chunks_head", snap))
        },
        held_with: None,
    },
    Tool {
        what: "cargo's lock on a build directory",
        matches: |c, name, snap| {
            name == ".cargo-lock"
                && (sibling_dir(c.path, "deps", snap)
                    || sibling_dir(c.path, ".fingerprint", snap)
                    || sibling_dir(c.path, "build", snap))
        },
        held_with: None,
    },
    Tool {
        what: "cargo's lock on its package cache",
        matches: |_, name, _| name == ".package-cache" || name == ".package-cache-mutate",
        held_with: None,
    },
    Tool {
        what: "rustdoc's lock on its output directory",
        matches: |c, name, snap| {
            name == ".lock"
                && (sibling_dir(c.path, "static.files", snap)
                    || sibling(c.path, "search-index.js", snap))
        },
        held_with: None,
    },
    Tool {
        what: "a Wayland compositor's lock on its socket (libwayland-server)",
        matches: |_, name, _| name.starts_with("wayland-") && name.ends_with(".lock"),
        held_with: None,
    },
    Tool {
        what: "PipeWire's lock on its socket",
        matches: |_, name, _| name.starts_with("pipewire-") && name.ends_with(".lock"),
        held_with: None,
    },
    Tool {
        what: "the go command's lock on a module version in its module cache",
        matches: |c, name, _snap| {
            name.ends_with(".lock") && parent_named(c.path, "@v") && under(c.path, "download")
        },
        held_with: None,
    },
    Tool {
        what: "Eclipse's lock on its workspace",
        matches: |c, name, _snap| name == ".lock" && parent_named(c.path, ".metadata"),
        held_with: None,
    },
    Tool {
        what: "the Flutter tool's startup lock",
        matches: |c, name, _snap| {
            name == "lockfile"
                && parent_named(c.path, "cache")
                && c.path
                    .parent()
                    .and_then(Path::parent)
                    .and_then(|b| b.file_name())
                    .is_some_and(|n| n == "bin")
        },
        held_with: None,
    },
    Tool {
        what: "Lucene's write lock on an index (Elasticsearch, OpenSearch, Solr)",
        matches: |c, name, snap| name == "write.lock" && in_lucene_index(c.path, snap),
        held_with: None,
    },
    Tool {
        what: "Gradle's lock on a cache or a project's .gradle directory",
        matches: |c, name, _snap| name.ends_with(".lock") && under(c.path, ".gradle"),
        held_with: None,
    },
    Tool {
        what: "the iptables lock (iptables, ip6tables, ebtables)",
        matches: |_, name, _| name == "xtables.lock",
        held_with: None,
    },
    Tool {
        what: "Xapian's write lock on a database (notmuch, recoll, mu)",
        matches: |c, name, snap| {
            name == "flintlock"
                && (sibling(c.path, "iamglass", snap)
                    || sibling(c.path, "iamchert", snap)
                    || sibling(c.path, "iamhoney", snap))
        },
        held_with: None,
    },
    Tool {
        what: "OfflineIMAP's lock on an account",
        matches: |c, name, _snap| name.ends_with(".lock") && parent_named(c.path, ".offlineimap"),
        held_with: None,
    },
    Tool {
        what: "OSTree's lock on a repository (ostree, flatpak, rpm-ostree)",
        matches: |c, name, snap| {
            name == ".lock"
                && sibling(c.path, "config", snap)
                && sibling_dir(c.path, "objects", snap)
                && sibling_dir(c.path, "refs", snap)
        },
        held_with: None,
    },
    Tool {
        what: "Tor's lock on its data directory",
        matches: |c, name, snap| {
            name == "lock" && c.complete && c.content.is_empty() && in_tor_data_dir(c.path, snap)
        },
        held_with: None,
    },
    Tool {
        what: "Apache Derby's exclusive lock on a database (dbex.lck)",
        matches: |c, name, snap| name == "dbex.lck" && in_derby_db(c.path, snap),
        held_with: None,
    },
    Tool {
        what: "Apache Derby's boot record of a database (db.lck: the booting JVM's id, held by the lock on dbex.lck)",
        matches: |c, name, snap| name == "db.lck" && in_derby_db(c.path, snap),
        held_with: Some("dbex.lck"),
    },
];

/// Tor's data directory: its state file, its keys or its cached directory documents beside.
fn in_tor_data_dir(path: &Path, snap: &Snapshot) -> bool {
    sibling_dir(path, "keys", snap)
        || [
            "state",
            "cached-certs",
            "cached-microdesc-consensus",
            "cached-consensus",
        ]
        .iter()
        .any(|n| sibling(path, n, snap))
}

/// Derby's database directory: `service.properties` and the `seg0/` segment beside.
fn in_derby_db(path: &Path, snap: &Snapshot) -> bool {
    sibling(path, "service.properties", snap) && sibling_dir(path, "seg0", snap)
}

fn tool(c: &Candidate<'_>, snap: &Snapshot) -> Option<&'static Tool> {
    let name = c.file_name().to_str()?;
    TOOLS.iter().find(|t| (t.matches)(c, name, snap))
}

/// What the tools print while their kernel lock is held by another process.
const MESSAGES: &[Message] = &[
    Message::en(
        "cargo",
        r"Blocking waiting for file lock on package cache",
        &[
            "$CARGO_HOME/.package-cache",
            "$CARGO_HOME/.package-cache-mutate",
            "~/.cargo/.package-cache",
            "~/.cargo/.package-cache-mutate",
        ],
        "    Blocking waiting for file lock on package cache",
    ),
    Message::en(
        "cargo",
        r"Blocking waiting for file lock on (?:build|artifact) directory",
        &[
            "$CARGO_TARGET_DIR/*/.cargo-lock",
            "$CARGO_BUILD_TARGET_DIR/*/.cargo-lock",
            "^target/*/.cargo-lock",
        ],
        "    Blocking waiting for file lock on build directory",
    ),
    Message::en(
        "rpm",
        r"can't create transaction lock on (?P<path>/\S+)",
        &["{path}"],
        "error: can't create transaction lock on /var/lib/rpm/.rpm.lock (Resource temporarily unavailable)",
    ),
    Message::en(
        "Wayland compositor",
        r"unable to lock lockfile (?P<path>/\S+?),",
        &["{path}"],
        "unable to lock lockfile /run/user/1000/wayland-0.lock, maybe another compositor is running",
    ),
    Message::en(
        "Xapian (notmuch)",
        r"Unable to get write lock on (?P<dir>/\S+?):? already locked",
        &["{dir}/flintlock"],
        "A Xapian exception occurred opening database: Unable to get write lock on /home/me/mail/.notmuch/xapian: already locked",
    ),
    Message::en(
        "OfflineIMAP",
        r"Another OfflineIMAP is running with the same metadatadir",
        &["~/.offlineimap/*.lock", "~/.offlineimap/lock"],
        "ERROR: Another OfflineIMAP is running with the same metadatadir; exiting.",
    ),
    Message::en(
        "certbot",
        r"Another instance of Certbot is already running",
        &[
            "/etc/letsencrypt/.certbot.lock",
            "/var/lib/letsencrypt/.certbot.lock",
            "/var/log/letsencrypt/.certbot.lock",
        ],
        "Another instance of Certbot is already running.",
    ),
    Message::en(
        "tor",
        r"another Tor process is running with the same data directory",
        &["/var/lib/tor/lock", "~/.tor/lock"],
        "[warn] It looks like another Tor process is running with the same data directory.  Waiting 5 seconds to see if it goes away.",
    ),
    Message::en(
        "Apache Derby",
        r"Another instance of Derby may have already booted the database (?P<dir>/\S+?)\.?(?:\s|$)",
        &["{dir}/dbex.lck", "{dir}/db.lck"],
        "ERROR XSDB6: Another instance of Derby may have already booted the database /srv/app/db.",
    ),
    Message::en(
        "iptables",
        r"Another app is currently holding the xtables lock",
        &["$XTABLES_LOCKFILE", "/run/xtables.lock"],
        "Another app is currently holding the xtables lock. Perhaps you want to use the -w option?",
    ),
];

impl Dialect for ToolFlock {
    fn id(&self) -> DialectId {
        DialectId::TOOL_FLOCK
    }

    fn about(&self) -> super::About {
        super::About {
            writer: "well-known tools that lock a file in the kernel and never rely on its existence (glibc's `lckpwdf`, certbot, rpm, Subversion, Prometheus, cargo, rustdoc, Wayland, PipeWire, go, Eclipse, Flutter, Lucene, Gradle, iptables, Xapian, OfflineIMAP, OSTree)",
            programs: &["certbot", "lckpwdf"],
            found_as: "each tool's kernel-lock file, by its name and place (the table in the dialects chapter)",
            judged_by: "a kernel lock held: live, with its holders; none: free: the file is harmless and must stay",
            rules: &[],
            source: None,
        }
    }

    fn patterns(&self) -> &'static [&'static str] {
        PATTERNS
    }

    fn messages(&self) -> &'static [Message] {
        MESSAGES
    }

    /// These names are other programs' too (`lock`, `.lock`, `db.lck`, `write.lock`): only a
    /// file in its writer's place is that writer's.
    fn judges_unrecognised(&self) -> bool {
        false
    }

    fn recognise(&self, c: &Candidate<'_>, snap: &Snapshot) -> bool {
        c.kind == EntryKind::File && tool(c, snap).is_some()
    }

    fn read(&self, c: &Candidate<'_>, snap: &Snapshot, _windows: &Windows) -> Said {
        let Some(t) = tool(c, snap) else {
            return Said::unparseable("kernel-lock", "not a lock file of a known tool");
        };
        let owner = Owner {
            detail: Some(t.what.to_string()),
            ..Owner::default()
        };
        // A kernel lock held on it makes it `live` before this verdict is looked at.
        let j = super::flock::unlocked(
            Judgement::free(
                "no process holds a kernel lock on it (/proc/locks): its program locks it in the kernel and never relies on the file's existence, so it is harmless and must stay",
            )
            .because(format!("it is {}", t.what)),
            c,
            snap,
        );
        let mut said = Said::settled(j).owner(owner).writer_locks(LockFamily::Any);
        if let Some(name) = t.held_with
            && let Some(dir) = c.path.parent()
            && let Ok(meta) = snap.lstat(&dir.join(name))
        {
            said = said.held_with(crate::probe::FileKey::of(&meta), name);
        }
        said
    }
}
