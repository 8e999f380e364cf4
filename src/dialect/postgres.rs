//! `postgres`: `postmaster.pid` in a PostgreSQL data directory, and the socket lock files
//! `.s.PGSQL.<port>.lock` beside the server's unix sockets. `postmaster.pid` has eight lines:
//! postmaster PID, data directory, start time (seconds since the epoch), port, socket
//! directory, listen address, shared-memory key and id, status (`starting`, `ready`,
//! `stopping`, `standby`); a socket lock file has the same first five lines. A standalone
//! backend (`postgres --single`) writes its PID negated; postgres reads the absolute value.
//!
//! Liveness: a postgres process whose working directory is this data directory (the
//! postmaster and every backend `chdir` there; compared by inode, so it also holds for a
//! server in a container seen from the host) proves it live, and for a socket lock so does a
//! process listening on its socket. Otherwise the PID rules, with the recorded start time as
//! when the lock was written — the Docker trap is a restarted container whose old file names
//! a low PID now held by a process that started later: stale by its start time. A live PID
//! that started before and is not a postgres working here is `unknown`. A file recording
//! another data (or socket) directory than the one it lies in was written in another mount
//! namespace, whose PIDs are not ours: foreign unless something else proves it stale.

use std::path::Path;

use super::common;
use super::message::Message;
use super::{Candidate, Dialect, DialectId, EntryKind, Windows};
use crate::judge::{Judgement, OwnerClaim, Said, When, Writers, fmt_ms};
use crate::probe::Snapshot;
use crate::verdict::Owner;

pub struct Postgres;

/// Names of PostgreSQL server processes.
pub const POSTGRES: &[&str] = &["postgres", "postmaster"];

/// What `postmaster.pid` records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PostmasterPid {
    /// The PID (the absolute value of what is written).
    pub pid: i64,
    /// Written negated: a standalone backend (`postgres --single`), not a postmaster.
    pub standalone: bool,
    pub data_dir: String,
    pub start_epoch: Option<i64>,
    pub port: Option<u16>,
    pub socket_dir: Option<String>,
    pub listen: Option<String>,
    pub status: Option<String>,
}

/// Parses the file. The first two lines are required; servers older than 9.1 wrote only
/// those (and the shared-memory line).
pub fn parse(content: &[u8]) -> Result<PostmasterPid, String> {
    let text = std::str::from_utf8(content)
        .map_err(|_| format!("{} is not text", common::excerpt(content)))?;
    let lines: Vec<&str> = text.lines().collect();
    let first = lines.first().copied().unwrap_or("");
    let written = common::parse_pid(first)?;
    // miscinit.c: "if pid < 0, the pid is for postgres, not postmaster".
    let (pid, standalone) = match written {
        w if w < 0 => (w.checked_neg().unwrap_or(0), true),
        w => (w, false),
    };
    let data_dir = lines
        .get(1)
        .map(|l| l.trim_end())
        .filter(|l| !l.is_empty())
        .ok_or("the second line (data directory) is missing")?;
    let opt = |i: usize| {
        lines
            .get(i)
            .map(|l| l.trim())
            .filter(|l| !l.is_empty())
            .map(common::field)
    };
    Ok(PostmasterPid {
        pid,
        standalone,
        data_dir: common::field(data_dir),
        start_epoch: lines.get(2).and_then(|l| l.trim().parse().ok()),
        port: lines.get(3).and_then(|l| l.trim().parse().ok()),
        socket_dir: opt(4),
        listen: opt(5),
        status: opt(7),
    })
}

/// Whether a name is a socket lock file, `.s.PGSQL.<port>.lock`.
pub fn is_socket_lock(name: &std::ffi::OsStr) -> bool {
    name.to_str()
        .and_then(|n| n.strip_prefix(".s.PGSQL.")?.strip_suffix(".lock"))
        .is_some_and(|port| !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()))
}

/// Postgres processes whose working directory is `dir` (by device and inode).
fn servers_in(dir_meta: &crate::probe::Stat, snap: &Snapshot) -> Vec<(i32, String)> {
    Writers::named(POSTGRES)
        .running(snap)
        .into_iter()
        .filter(|p| snap.cwd_is(p.pid, dir_meta) == Some(true))
        .map(|p| (p.pid, crate::text::truncate(&p.name, 32)))
        .collect()
}

/// What the postmaster prints when its data directory's lock is taken (and its translations):
/// it names the file relative to the data directory, which its hint names.
const MESSAGES: &[Message] = &[
    Message::en(
        "PostgreSQL",
        r#"lock file "(?P<path>[^"\n]+)" already exists"#,
        &["{dir}/{path}", "$PGDATA/{path}", "{path}"],
        r#"FATAL:  lock file "postmaster.pid" already exists"#,
    ),
    Message::en(
        "PostgreSQL",
        r#"Is another (?:postmaster|postgres) \(PID (?P<pid>\d+)\) running in data directory "(?P<dir>[^"\n]+)""#,
        &["{dir}/postmaster.pid"],
        r#"HINT:  Is another postmaster (PID 4242) running in data directory "/var/lib/postgresql/15/main"?"#,
    ),
    Message::en(
        "PostgreSQL",
        r#"Is another (?:postmaster|postgres) \(PID (?P<pid>\d+)\) using socket file "(?P<file>[^"\n]+)""#,
        &["{file}.lock"],
        r#"HINT:  Is another postmaster (PID 4242) using socket file "/var/run/postgresql/.s.PGSQL.5432"?"#,
    ),
    Message::tr(
        "de",
        "PostgreSQL",
        r"Sperrdatei »(?P<path>[^«»\n]+)« existiert bereits",
        &["{dir}/{path}", "$PGDATA/{path}", "{path}"],
        "FATAL:  Sperrdatei »postmaster.pid« existiert bereits",
    ),
    Message::tr(
        "de",
        "PostgreSQL",
        r"anderer (?:postmaster|postgres)-Prozess \(PID (?P<pid>\d+)\) im Datenverzeichnis\s+»(?P<dir>[^«»\n]+)«",
        &["{dir}/postmaster.pid"],
        "TIPP:  Läuft bereits ein anderer postmaster-Prozess (PID 4242) im Datenverzeichnis »/srv/pg«?",
    ),
    Message::tr(
        "fr",
        "PostgreSQL",
        r"le fichier verrou « (?P<path>[^«»\n]+) » existe déjà",
        &["{dir}/{path}", "$PGDATA/{path}", "{path}"],
        "FATAL:  le fichier verrou « postmaster.pid » existe déjà",
    ),
    Message::tr(
        "fr",
        "PostgreSQL",
        r"Un autre (?:postmaster|postgres) \(de PID (?P<pid>\d+)\) est-il déjà lancé avec comme répertoire de\s+données « (?P<dir>[^«»\n]+) »",
        &["{dir}/postmaster.pid"],
        "ASTUCE : Un autre postmaster (de PID 4242) est-il déjà lancé avec comme répertoire de données « /srv/pg » ?",
    ),
    Message::tr(
        "es",
        "PostgreSQL",
        r"el archivo de bloqueo «(?P<path>[^«»\n]+)» ya existe",
        &["{dir}/{path}", "$PGDATA/{path}", "{path}"],
        "FATAL:  el archivo de bloqueo «postmaster.pid» ya existe",
    ),
    Message::tr(
        "es",
        "PostgreSQL",
        r"Hay otro (?:postmaster|postgres) \(PID (?P<pid>\d+)\) en ejecución en el directorio de datos «(?P<dir>[^«»\n]+)»",
        &["{dir}/postmaster.pid"],
        "HINT:  ¿Hay otro postmaster (PID 4242) en ejecución en el directorio de datos «/srv/pg»?",
    ),
];

impl Dialect for Postgres {
    fn id(&self) -> DialectId {
        DialectId::POSTGRES
    }

    fn about(&self) -> super::About {
        super::About {
            writer: "PostgreSQL",
            programs: &["postgres", "postgresql", "postmaster"],
            found_as: "`postmaster.pid` in a data directory (eight lines: PID, data directory, start time, port, socket directory, listen address, shared memory key, status), and the socket lock files `.s.PGSQL.<port>.lock` (the same first five lines); a negative PID is a standalone backend",
            judged_by: "postgres processes working in that data directory, or a listener on the socket: live; else the PID with the recorded start time (the Docker trap: a PID now held by a process that started after the server recorded its start is stale)",
            rules: &["pid-gone", "pid-reused", "earlier-boot"],
            source: Some("PostgreSQL `src/backend/utils/init/miscinit.c` (`CreateLockFile`)"),
        }
    }

    /// A `postmaster.pid`: its owner works in the data directory that holds it.
    fn places(&self) -> &'static [crate::judge::Place] {
        &[crate::judge::Place {
            name: Some("postmaster.pid"),
            ext: None,
            within: &[],
        }]
    }

    fn patterns(&self) -> &'static [&'static str] {
        &["postmaster.pid", ".s.PGSQL.*.lock"]
    }

    fn messages(&self) -> &'static [Message] {
        MESSAGES
    }

    fn recognise(&self, c: &Candidate<'_>, _snap: &Snapshot) -> bool {
        c.kind == EntryKind::File
            && (c.file_name() == "postmaster.pid" || is_socket_lock(c.file_name()))
    }

    fn read(&self, c: &Candidate<'_>, snap: &Snapshot, _windows: &Windows) -> Said {
        let socket_lock = is_socket_lock(c.file_name());
        let what = if socket_lock {
            "postgres socket lock"
        } else {
            "postmaster.pid"
        };
        let rec = match parse(c.content) {
            Ok(r) => r,
            Err(why) => return Said::unparseable(what, why),
        };
        if rec.pid == 0 {
            // What postgres itself says: "bogus data in lock file".
            return Said::unparseable(what, "PID 0, which postgres itself rejects as bogus");
        }
        let owner = Owner {
            pid: Some(rec.pid),
            created_at: rec.start_epoch.and_then(crate::probe::rfc3339),
            detail: Some(format!(
                "{}data directory {}{}{}",
                if rec.standalone {
                    "standalone backend (postgres --single), "
                } else {
                    ""
                },
                rec.data_dir,
                rec.port.map(|p| format!(", port {p}")).unwrap_or_default(),
                rec.status
                    .as_deref()
                    .map(|s| format!(", status {s}"))
                    .unwrap_or_default()
            )),
            ..Owner::default()
        };
        if let Some(live) = server_running(c, snap, &rec, socket_lock) {
            return Said::settled(live).owner(owner);
        }
        let dir = c.path.parent().unwrap_or(Path::new("/"));
        let dir_meta = snap.stat(dir).ok();
        // Written in another mount namespace (a container's volume seen from the host)? The
        // directory it records for itself is not the one it lies in, and its PID is not of
        // any namespace known here.
        let recorded_dir = if socket_lock {
            rec.socket_dir.as_deref()
        } else {
            Some(rec.data_dir.as_str())
        };
        let recorded_here = match (&dir_meta, recorded_dir) {
            (Some(m), Some(r)) => snap
                .stat(Path::new(r))
                .is_ok_and(|r| r.dev() == m.dev() && r.ino() == m.ino()),
            // A socket lock that records no socket directory: nothing says it is elsewhere.
            (Some(_), None) => true,
            (None, _) => false,
        };
        let mut claim = OwnerClaim::pid(rec.pid, Writers::named(POSTGRES))
            .written(rec.start_epoch.map(|s| s * 1000));
        if !recorded_here && dir_meta.is_some() {
            claim.elsewhere = Some(format!(
                "it records {} {} but lies in {}: it was written in another mount namespace (a container?)",
                if socket_lock {
                    "socket directory"
                } else {
                    "data directory"
                },
                recorded_dir.unwrap_or_default(),
                common::field(&dir.to_string_lossy()),
            ));
        }
        let mut said = Said::claims(owner).claim(claim).note(
            When::IfStale,
            format!(
                "no postgres process runs in {} data directory",
                if socket_lock { "its" } else { "this" }
            ),
        );
        if socket_lock {
            said = said.note(
                When::IfStale,
                "no process listens on the server's socket beside it",
            );
        }
        if let Some(s) = rec.start_epoch {
            said = said.note(
                When::Always,
                format!("the server recorded its start at {}", fmt_ms(s * 1000)),
            );
        }
        said
    }
}

/// A sign the server runs: postgres processes working in its data directory (the postmaster
/// and every backend `chdir` there), or for a socket lock a process listening on its socket.
fn server_running(
    c: &Candidate<'_>,
    snap: &Snapshot,
    rec: &PostmasterPid,
    socket_lock: bool,
) -> Option<Judgement> {
    // The data directory, as this file lies in it (postmaster.pid) or as it records it
    // (a socket lock, which lies in the socket directory).
    let data_meta = if socket_lock {
        snap.stat(Path::new(&rec.data_dir)).ok()
    } else {
        snap.stat(c.path.parent().unwrap_or(Path::new("/"))).ok()
    };
    if let Some(meta) = &data_meta {
        let servers = servers_in(meta, snap);
        if !servers.is_empty() {
            let list = servers
                .iter()
                .map(|(pid, name)| format!("{pid} ({name})"))
                .collect::<Vec<_>>()
                .join(", ");
            let mut j = Judgement::live(format!(
                "postgres processes run in {}data directory: {list}",
                if socket_lock { "its " } else { "this " }
            ));
            if let Some(f) = snap.pid(servers[0].0).facts() {
                j.process = Some(Box::new(snap.process_info(f)));
            }
            return Some(j);
        }
    }
    if socket_lock && let Some(socket) = listening_socket(c, snap) {
        return Some(Judgement::live(format!(
            "a process listens on the server's socket {socket} (/proc/net/unix)"
        )));
    }
    None
}

/// The unix socket a socket lock file guards (`.s.PGSQL.<port>` beside it), if a process
/// listens on it.
fn listening_socket(c: &Candidate<'_>, snap: &Snapshot) -> Option<String> {
    let name = c.file_name().to_str()?.strip_suffix(".lock")?;
    let path = c.path.with_file_name(name);
    let path = path.to_str()?;
    snap.unix_socket_listening(path)
        .then(|| common::field(path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_eight_lines() {
        let text = b"14928\n/tmp/fx/pg/data\n1795995835\n54329\n/tmp/fx/pg\nlocalhost\n 10010803         4\nready   \n";
        let r = parse(text).unwrap();
        assert_eq!(r.pid, 14928);
        assert_eq!(r.data_dir, "/tmp/fx/pg/data");
        assert_eq!(r.start_epoch, Some(1_795_995_835));
        assert_eq!(r.port, Some(54329));
        assert_eq!(r.status.as_deref(), Some("ready"));
        assert!(parse(b"14928\n").is_err());
        let single = parse(b"-14928\n/tmp/fx/pg/data\n1795995835\n").unwrap();
        assert_eq!((single.pid, single.standalone), (14928, true));
        assert!(parse(b"x\n/data\n").is_err());
    }

    #[test]
    fn socket_lock_names() {
        use std::ffi::OsStr;
        assert!(is_socket_lock(OsStr::new(".s.PGSQL.5432.lock")));
        assert!(!is_socket_lock(OsStr::new(".s.PGSQL.5432")));
        assert!(!is_socket_lock(OsStr::new(".s.PGSQL..lock")));
        assert!(!is_socket_lock(OsStr::new(".s.PGSQL.x.lock")));
    }
}
