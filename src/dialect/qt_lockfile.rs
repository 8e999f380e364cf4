//! `qt-lockfile`: lock files taken with Qt's `QLockFile` (KDE applications, Qt Creator, and
//! any Qt program), whatever their name: recognised by content.
//!
//! Format, from Qt's `src/corelib/io/qlockfile.cpp` (`QLockFilePrivate::lockFileContents`)
//! and `qlockfile_unix.cpp`: five lines, `pid`, application name, host name
//! (`QSysInfo::machineHostName`), machine id (`QSysInfo::machineUniqueId`, the content of
//! `/etc/machine-id`) and boot id (`QSysInfo::bootUniqueId`), each ending in `\n`. The file
//! is created with `O_CREAT|O_EXCL`, and `setNativeLocks` takes `flock(LOCK_EX)` (and an
//! fcntl lock) on the descriptor, which stays open while the lock is held.
//!
//! Qt's own rule (`isApparentlyStale`): on the same host (same host name and machine id),
//! another boot id → stale; the PID gone, or running an executable not named like the
//! application → stale. Here: the kernel lock Qt holds → `live`; another host name or machine
//! id → `foreign`; another boot → `stale`; then the PID rules of [`crate::judge`] with the
//! application as the expected program.
//!
//! (The generic `pidfile` dialect reads the same record when it is named like a pid file;
//! this dialect recognises it first, whatever its name.)

use super::{Candidate, Dialect, DialectId, EntryKind, Windows, common};
use crate::judge::{OwnerClaim, Said, When, Writers};
use crate::probe::Snapshot;
use crate::verdict::Owner;

pub struct QtLockFile;

/// What a `QLockFile` records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QtRecord {
    pub pid: i64,
    pub app: String,
    pub host: String,
    pub machine_id: String,
    pub boot_id: String,
}

fn is_hex_id(s: &str) -> bool {
    s.len() == 32 && s.bytes().all(|b| b.is_ascii_hexdigit())
}

fn is_uuid(s: &str) -> bool {
    s.len() == 36
        && s.bytes().enumerate().all(|(i, b)| {
            if matches!(i, 8 | 13 | 18 | 23) {
                b == b'-'
            } else {
                b.is_ascii_hexdigit()
            }
        })
}

/// Parses the five lines strictly (the machine id and boot id may be empty).
pub fn parse(content: &[u8]) -> Option<QtRecord> {
    let text = std::str::from_utf8(content).ok()?;
    let body = text.strip_suffix('\n')?;
    let lines: Vec<&str> = body.split('\n').collect();
    let [pid, app, host, machine, boot] = lines[..] else {
        return None;
    };
    if pid.is_empty() || !pid.bytes().all(|b| b.is_ascii_digit()) || host.is_empty() {
        return None;
    }
    if !(machine.is_empty() || is_hex_id(machine)) || !(boot.is_empty() || is_uuid(boot)) {
        return None;
    }
    Some(QtRecord {
        pid: common::parse_pid(pid).ok()?,
        app: app.to_string(),
        host: host.to_string(),
        machine_id: machine.to_string(),
        boot_id: boot.to_string(),
    })
}

impl Dialect for QtLockFile {
    fn id(&self) -> DialectId {
        DialectId::QT_LOCKFILE
    }

    fn about(&self) -> super::About {
        super::About {
            writer: "Qt's `QLockFile` (KDE applications, Qt Creator, any Qt program)",
            programs: &["QLockFile"],
            found_as: "any file holding QLockFile's five lines: PID, application name, host name, machine id, boot id",
            judged_by: "Qt's flock held: live; another host name or machine id: foreign; another boot id: stale; else the PID: live for that application",
            rules: &["pid-gone", "pid-reused", "earlier-boot"],
            source: Some("Qt `src/corelib/io/qlockfile.cpp`, `qlockfile_unix.cpp`"),
        }
    }

    fn patterns(&self) -> &'static [&'static str] {
        &[]
    }

    fn any_name(&self) -> bool {
        true
    }

    fn recognise(&self, c: &Candidate<'_>, _snap: &Snapshot) -> bool {
        c.kind == EntryKind::File && c.complete && parse(c.content).is_some()
    }

    fn read(&self, c: &Candidate<'_>, snap: &Snapshot, _windows: &Windows) -> Said {
        let Some(rec) = parse(c.content) else {
            return Said::unparseable("QLockFile", "not the five lines QLockFile writes");
        };
        let owner = Owner {
            pid: Some(rec.pid),
            hostname: Some(common::field(&rec.host)),
            detail: Some(format!("QLockFile of {}", common::field(&rec.app))),
            ..Owner::default()
        };
        let app = rec.app.rsplit('/').next().unwrap_or("");
        let claim = OwnerClaim {
            // Qt's own rule: another host name or another machine id is another machine.
            machine_id: Some(rec.machine_id.clone()).filter(|m| !m.is_empty()),
            boot_id: Some(rec.boot_id.clone()).filter(|b| !b.is_empty()),
            ..OwnerClaim::pid(
                rec.pid,
                if app.is_empty() {
                    Writers::ANY
                } else {
                    Writers::program(app)
                },
            )
            .host(Some(rec.host.clone()))
        };
        let mut said = Said::claims(owner).claim(claim);
        if !c.fs.network && snap.kernel_locks_available() {
            said = said.note(
                When::IfLive,
                "no kernel lock is held on it, although QLockFile holds flock() while it owns the lock: the process may have released it without removing the file",
            );
        }
        said
    }
}
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_what_qlockfile_writes() {
        let r = parse(b"31024\npython3.11\nvm\n3d1219c7c4c5404aaa1f6d2a48adfda4\n128f93c2-a81c-40dd-aa25-b85b52c71466\n")
            .unwrap();
        assert_eq!(r.pid, 31024);
        assert_eq!(r.app, "python3.11");
        assert_eq!(r.host, "vm");
        assert!(parse(b"31024\napp\nvm\n\n\n").is_some());
        // py-filelock's soft lock (pid, host, token) and a plain pid file are not Qt's.
        assert!(parse(b"4242\nvm\n").is_none());
        assert!(parse(b"4242\n").is_none());
        assert!(parse(b"4242\napp\nvm\nnot-an-id\n\n").is_none());
    }
}
