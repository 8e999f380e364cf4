//! `h2`: the lock file of an H2 database, `NAME.lock.db` beside `NAME.mv.db` (or the older
//! `NAME.h2.db`), written when the database is opened with `FILE_LOCK=FILE` (H2 1.x's default)
//! or `FILE_LOCK=SOCKET`. (With H2 2.x's default, `FILE_LOCK=FS`, no lock file is written: the
//! `.mv.db` itself carries a `FileChannel` lock, and is data, never listed.)
//!
//! Format, from H2's `h2/src/main/org/h2/store/FileLock.java`: a Java properties file saved
//! with the comment `FileLock` (`MAGIC`), the date, then `id=` (the holder's start time in hex
//! and random hex digits), `method=file` or `method=socket` (with `ipAddress=` and the `port=`
//! the holder listens on), and `server=` when the database also serves others
//! (`AUTO_SERVER`). Nothing names a PID. The holder's watchdog thread rewrites the file
//! whenever it changes (`run`); `unlock` deletes it.
//!
//! H2's own takeover rule (`lockFile`): an opener waits until the file is older than 2 s
//! (`waitUntilOld`, `TIME_GRANULARITY`), writes its own id, sleeps twice the lock's sleep, and
//! if its id is still there no watchdog answered: the holder is gone and the file is taken
//! over ("Locked by another process" otherwise). For `method=socket` it connects to the port
//! instead.
//!
//! Whose it is: H2's, when it is shaped as `FileLock.save` writes it (the `#FileLock` header
//! and a `method=` line) and lies beside its database's `NAME.mv.db` or `NAME.h2.db`.
//!
//! Liveness, by the judge's rules: the database file open or locked by a process (an H2 that
//! has the database open keeps it so), or a listener on the recorded port (`method=socket`) →
//! `live`. Otherwise the writer's condition: no Java process at work on that directory (its
//! working directory, or a `jdbc:h2:` URL on its command line naming it), nobody with a file
//! of the directory open, every process visible, older than H2's 2 s → `stale`.

use std::path::{Path, PathBuf};

use super::message::Message;
use super::{Candidate, Dialect, DialectId, EntryKind, Windows, common};
use crate::judge::{Contract, Judgement, Placed, Said, Scope, When, Writers};
use crate::probe::{FileKey, Snapshot};
use crate::verdict::Owner;

pub struct H2;

const PATTERNS: &[&str] = &["*.lock.db"];

/// The JVM launchers H2 runs in.
const JAVAS: &[&str] = &["java", "javaw"];

/// `FileLock.TIME_GRANULARITY`: a lock file changed within this is one H2 itself waits on.
const TIME_GRANULARITY_MS: i64 = 2_000;

/// What H2 says when another process holds the database.
const MESSAGES: &[Message] = &[Message::en(
    "H2",
    r"Locked by another process: (?P<path>/\S+\.lock\.db)",
    &["{path}"],
    "org.h2.jdbc.JdbcSQLNonTransientConnectionException: Database may be already in use: \"Locked by another process: /srv/app/data/app.lock.db\". Possible solutions: close all other connection(s); use the server mode [90020-214]",
)];

/// The properties `FileLock.save` wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Record {
    method: String,
    id: Option<String>,
    port: Option<u16>,
    ip: Option<String>,
}

fn parse(content: &[u8]) -> Option<Record> {
    let text = std::str::from_utf8(content).ok()?;
    let mut lines = text.lines();
    if lines.next()?.trim_end() != "#FileLock" {
        return None;
    }
    let mut method = None;
    let mut rec = Record {
        method: String::new(),
        id: None,
        port: None,
        ip: None,
    };
    for line in lines {
        if line.starts_with('#') {
            continue;
        }
        let (k, v) = line.split_once('=')?;
        match k.trim() {
            "method" => method = Some(v.trim().to_string()),
            "id" => rec.id = Some(v.trim().to_string()),
            "port" => rec.port = v.trim().parse().ok(),
            "ipAddress" => rec.ip = Some(v.trim().to_string()),
            _ => {}
        }
    }
    rec.method = method?;
    Some(rec)
}

/// The database file beside the lock (`NAME.mv.db`, `NAME.h2.db`).
fn database(c: &Candidate<'_>, snap: &Snapshot) -> Option<PathBuf> {
    let name = c.file_name().to_str()?;
    let base = name.strip_suffix(".lock.db")?;
    let dir = c.path.parent()?;
    ["mv.db", "h2.db"]
        .iter()
        .map(|ext| dir.join(format!("{base}.{ext}")))
        .find(|p| snap.lstat(p).is_ok_and(|m| m.is_file()))
}

/// The directories `jdbc:h2:` URLs on a command line name (`jdbc:h2:/srv/db/app`,
/// `jdbc:h2:file:...`, `jdbc:h2:tcp://...` names none here).
fn jdbc_dirs(args: &[String]) -> Vec<PathBuf> {
    args.iter()
        .flat_map(|a| a.match_indices("jdbc:h2:").map(move |(i, _)| &a[i + 8..]))
        .filter_map(|url| {
            let url = url.strip_prefix("file:").unwrap_or(url);
            let path = url.split([';', ' ', '"', '\'']).next()?;
            let path = Path::new(path);
            (path.is_absolute() || path.starts_with("."))
                .then(|| path.parent().unwrap_or(path).to_path_buf())
        })
        .collect()
}

impl Dialect for H2 {
    fn id(&self) -> DialectId {
        DialectId::H2
    }

    fn about(&self) -> super::About {
        super::About {
            writer: "H2 (Java database)",
            programs: &[],
            found_as: "`NAME.lock.db` of an H2 database (`FILE_LOCK=FILE` or `SOCKET`: the `#FileLock` properties `method`, `id`, `port`), beside `NAME.mv.db` or `NAME.h2.db`",
            judged_by: "its database file open or locked by a process, or a listener on the recorded port: live; else H2's condition: no Java at work on that directory (working there, or a `jdbc:h2:` URL naming it), nobody with a file of it open: stale. (H2 2.x's default `FILE_LOCK=FS` writes no lock file: the locked `.mv.db` is data, not listed)",
            rules: &["writer-absent"],
            source: Some("H2 `org/h2/store/FileLock.java`"),
        }
    }

    fn patterns(&self) -> &'static [&'static str] {
        PATTERNS
    }

    fn messages(&self) -> &'static [Message] {
        MESSAGES
    }

    fn recognise(&self, c: &Candidate<'_>, snap: &Snapshot) -> bool {
        c.kind == EntryKind::File && parse(c.content).is_some() && database(c, snap).is_some()
    }

    fn judges_unrecognised(&self) -> bool {
        false
    }

    fn read(&self, c: &Candidate<'_>, snap: &Snapshot, _windows: &Windows) -> Said {
        let (Some(rec), Some(db)) = (parse(c.content), database(c, snap)) else {
            return Said::unparseable("H2", "not H2's FileLock properties beside its database");
        };
        let dir = c.path.parent().unwrap_or(c.path).to_path_buf();
        let shown_db = common::field(&db.to_string_lossy());
        let owner = Owner {
            detail: Some(format!(
                "H2 lock of the database {shown_db} (method {}{})",
                common::field(&rec.method),
                rec.port.map(|p| format!(", port {p}")).unwrap_or_default()
            )),
            ..Owner::default()
        };
        if rec.method == "socket"
            && let Some(port) = rec.port
            && snap.tcp_listening(port)
        {
            return Said::settled(Judgement::live(format!(
                "TCP port {port} is listened on: H2's FILE_LOCK=SOCKET holder answers there"
            )))
            .owner(owner);
        }
        let mut said = Said::claims(owner);
        if let Ok(meta) = snap.lstat(&db) {
            said = said.held_with(FileKey::of(&meta), format!("its database {shown_db}"));
        }
        said.claim(Contract {
            writer: Writers::named(JAVAS),
            what: "H2 (Java)",
            at: format!("database {shown_db}"),
            says: "H2's FileLock: a lock file its holder's watchdog does not answer for is a dead holder's, and the next opener takes it over; a live H2 keeps its database file open".into(),
            place: dir.clone(),
            scope: Scope::Dirs {
                dirs: vec![dir],
                named: jdbc_dirs,
                env: &[],
            },
            min_hold_ms: TIME_GRANULARITY_MS,
            placed: Placed::by(format!(
                "H2's FileLock properties (#FileLock, method={}) beside its database {shown_db}",
                common::field(&rec.method)
            )),
        })
        .note(
            When::IfStale,
            "H2 itself takes such a lock over after a few seconds; removing it is safe now",
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_lock_properties_are_read() {
        let rec = parse(
            b"#FileLock\n#Mon Dec 07 22:38:39 UTC 2026\nmethod=file\nid=1a252a8b9b92b6c08a25\n",
        )
        .unwrap();
        assert_eq!(rec.method, "file");
        let rec =
            parse(b"#FileLock\n#x\nipAddress=127.0.0.1\nmethod=socket\nport=40123\n").unwrap();
        assert_eq!(rec.port, Some(40123));
        assert!(parse(b"#FileLock\nid=1\n").is_none());
        assert!(parse(b"method=file\n").is_none());
    }

    #[test]
    fn jdbc_urls_name_their_directories() {
        let args = [
            "java",
            "-url",
            "jdbc:h2:/srv/db/app;FILE_LOCK=FILE",
            "jdbc:h2:file:/x/y",
            "jdbc:h2:tcp://h/z",
        ]
        .map(String::from);
        assert_eq!(
            jdbc_dirs(&args),
            [PathBuf::from("/srv/db"), PathBuf::from("/x")]
        );
    }
}
