//! `hsqldb`: the lock file of an HSQLDB file database, `NAME.lck` beside the database's
//! `NAME.properties` and `NAME.script` (HSQLDB 1.7.2 and later, 2.x, as embedded by
//! LibreOffice Base, OpenOffice and many Java applications).
//!
//! Format, from HSQLDB's `org/hsqldb/persist/LockFile.java`: 16 bytes, the magic `HSQLLOCK`
//! (`MAGIC`, `USED_REGION`) then a heartbeat, the holder's `System.currentTimeMillis()` as a
//! big-endian `long`. The holder opens the file (`openRAF`), keeps that descriptor for as long
//! as it holds the lock and rewrites the heartbeat through it every 10 s
//! (`HEARTBEAT_INTERVAL`, `HeartbeatRunner`); releasing closes it and deletes the file
//! (`tryRelease`). With `hsqldb.lockfile.nio.filelock` it also takes a `FileChannel` lock on it
//! (`NIOLockFile`).
//!
//! HSQLDB's own takeover rule (`checkHeartbeat`, `pollHeartbeat`): a lock file whose heartbeat
//! is within `HEARTBEAT_INTERVAL_PADDED` (10.1 s) of now is held, and the database does not
//! open ("Database lock acquisition failure"); an older heartbeat is a dead holder's, and the
//! next opener takes the file over. No PID, no host: a holder on another machine (a shared
//! directory) is known only by its heartbeat.
//!
//! Whose it is: HSQLDB's, when it has exactly that shape (16 bytes starting with the magic)
//! and lies beside its database's `NAME.properties` or `NAME.script`.
//!
//! Liveness, by the judge's rules: a process with it open (the holder's descriptor) or a
//! kernel lock on it → `live`; a heartbeat within 10.1 s → `live` (HSQLDB's own word); nobody
//! has it open, every process visible, on a local file system → `stale` (`open-released`);
//! elsewhere the heartbeat older than 10.1 s (`heartbeat-expired`, with a network server's
//! clock allowed for).

use super::message::Message;
use super::{Candidate, Dialect, DialectId, EntryKind, Windows, common};
use crate::judge::{Keeps, LockFamily, Placed, Refresh, Said, When};
use crate::probe::Snapshot;
use crate::verdict::Owner;

pub struct Hsqldb;

const PATTERNS: &[&str] = &["*.lck"];

/// `LockFile.MAGIC`.
const MAGIC: &[u8] = b"HSQLLOCK";
/// `LockFile.USED_REGION`: the magic and the heartbeat.
const USED_REGION: usize = 16;
/// `LockFile.HEARTBEAT_INTERVAL_PADDED`: a heartbeat older than this is a dead holder's.
const HEARTBEAT_PADDED_MS: i64 = 10_100;

/// What HSQLDB says when another process holds the database.
const MESSAGES: &[Message] = &[Message::en(
    "HSQLDB",
    r"Database lock acquisition failure: lockFile: \S+\[file =(?P<path>/[^,\]]+)",
    &["{path}"],
    "org.hsqldb.HsqlException: Database lock acquisition failure: lockFile: org.hsqldb.persist.LockFile@4b7ff6bc[file =/srv/app/data/db.lck, exists=true, locked=false, valid=false, ] method: checkHeartbeat read: 2026-12-07 22:33:01 heartbeat - read: -3357 ms.",
)];

/// The heartbeat of an HSQLDB lock file's content, in ms since the epoch.
fn heartbeat(content: &[u8]) -> Option<i64> {
    if content.len() != USED_REGION || !content.starts_with(MAGIC) {
        return None;
    }
    Some(i64::from_be_bytes(content[8..16].try_into().ok()?))
}

/// Why the file is HSQLDB's: its database's files beside it.
fn placed(c: &Candidate<'_>, snap: &Snapshot) -> Option<Placed> {
    let name = c.file_name().to_str()?;
    let base = name.strip_suffix(".lck")?;
    let dir = c.path.parent()?;
    ["properties", "script"].iter().find_map(|ext| {
        let beside = format!("{base}.{ext}");
        snap.lstat(&dir.join(&beside))
            .is_ok_and(|m| m.is_file())
            .then(|| {
                Placed::by(format!(
                    "16 bytes starting with HSQLDB's HSQLLOCK magic, beside its database's {}",
                    common::field(&beside)
                ))
            })
    })
}

impl Dialect for Hsqldb {
    fn id(&self) -> DialectId {
        DialectId::HSQLDB
    }

    fn about(&self) -> super::About {
        super::About {
            writer: "HSQLDB (Java database)",
            programs: &["hsqldb"],
            found_as: "`NAME.lck` of an HSQLDB database: 16 bytes, `HSQLLOCK` then the holder's heartbeat (ms, big-endian), beside `NAME.properties` or `NAME.script`",
            judged_by: "open by a process (HSQLDB keeps it open while it holds it): live; nobody has it open, every process visible: stale; elsewhere a heartbeat older than 10.1 s: stale (a fresh one proves nothing: it may be the last of a holder killed since). HSQLDB itself takes such a lock over",
            rules: &["open-released", "heartbeat-expired"],
            source: Some("HSQLDB `org/hsqldb/persist/LockFile.java`"),
        }
    }

    fn patterns(&self) -> &'static [&'static str] {
        PATTERNS
    }

    fn messages(&self) -> &'static [Message] {
        MESSAGES
    }

    fn recognise(&self, c: &Candidate<'_>, snap: &Snapshot) -> bool {
        c.kind == EntryKind::File
            && c.complete
            && heartbeat(c.content).is_some()
            && placed(c, snap).is_some()
    }

    /// Another program's `*.lck` is not HSQLDB's.
    fn judges_unrecognised(&self) -> bool {
        false
    }

    fn read(&self, c: &Candidate<'_>, snap: &Snapshot, _windows: &Windows) -> Said {
        let (Some(beat), Some(placed)) = (heartbeat(c.content), placed(c, snap)) else {
            return Said::unparseable("HSQLDB", "not 16 bytes of HSQLLOCK and a heartbeat");
        };
        let db = c.path.with_extension("");
        let owner = Owner {
            detail: Some(format!(
                "HSQLDB database lock of {} (heartbeat {})",
                common::field(&db.to_string_lossy()),
                crate::judge::fmt_ms(beat)
            )),
            ..Owner::default()
        };
        Said::claims(owner)
            .writer_locks(LockFamily::Fcntl)
            .claim(Keeps::Open {
                promise: "HSQLDB keeps its lock file open, rewriting the heartbeat through it, for as long as the database is open (LockFile.openRAF)".into(),
                placed: placed.clone(),
            })
            .claim(Refresh {
                last_ms: beat,
                window_ms: HEARTBEAT_PADDED_MS,
                // A fresh heartbeat proves nothing the open descriptor does not: HSQLDB keeps
                // the file open while it holds it, and a heartbeat written a moment ago may be
                // the last of a holder killed since.
                fresh_ms: None,
                promise: "HSQLDB rewrites the heartbeat every 10 s while it holds the database, and takes over a lock whose heartbeat is older than 10.1 s (LockFile.checkHeartbeat)".into(),
                placed,
            })
            .note(
                When::IfStale,
                "HSQLDB itself takes over a lock file whose heartbeat is older than 10.1 s; removing it is safe now",
            )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_heartbeat_is_read_from_hsqldbs_sixteen_bytes_only() {
        let mut rec = b"HSQLLOCK".to_vec();
        rec.extend_from_slice(&1_796_682_748_219_i64.to_be_bytes());
        assert_eq!(heartbeat(&rec), Some(1_796_682_748_219));
        assert_eq!(heartbeat(&rec[..15]), None);
        rec.push(0);
        assert_eq!(heartbeat(&rec), None);
        assert_eq!(heartbeat(b"HSQLLOCX\0\0\0\0\0\0\0\0"), None);
    }
}
