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
//! id → `foreign`; another boot → `stale`; then the PID rules of [`crate::evidence`] with the
//! application as the expected program.
//!
//! (The generic `pidfile` dialect reads the same record when it is named like a pid file;
//! this dialect recognises it first, whatever its name.)

use super::{Candidate, Decision, Dialect, DialectId, EntryKind, Windows, common, support};
use crate::evidence::{PidClaim, judge_pid};
use crate::probe::Snapshot;
use crate::verdict::{Judgement, Owner, Verdict};

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

    fn patterns(&self) -> &'static [&'static str] {
        &[]
    }

    fn any_name(&self) -> bool {
        true
    }

    fn recognise(&self, c: &Candidate<'_>) -> bool {
        c.kind == EntryKind::File && c.complete && parse(c.content).is_some()
    }

    fn decide(&self, c: &Candidate<'_>, snap: &Snapshot, _windows: &Windows) -> Decision {
        let Some(rec) = parse(c.content) else {
            return common::unparseable("QLockFile", "not the five lines QLockFile writes").into();
        };
        let owner = Owner {
            pid: Some(rec.pid),
            hostname: Some(common::field(&rec.host)),
            detail: Some(format!("QLockFile of {}", common::field(&rec.app))),
            ..Owner::default()
        };
        Decision::owned(owner, judge_owner(c, snap, &rec))
    }
}

/// The owner: a kernel lock, then Qt's own rules (the same machine, the same boot), then the
/// PID as that application.
fn judge_owner(c: &Candidate<'_>, snap: &Snapshot, rec: &QtRecord) -> Judgement {
    if let Some(j) = common::kernel_live(snap, c.key(), "the lock file") {
        return j;
    }
    // Qt's own rule: the same host name, and the same machine id when both are known.
    let ours = snap.host.machine_id.clone().or_else(support::machine_id);
    let same_machine = rec.host == snap.host.hostname
        && match (rec.machine_id.as_str(), ours.as_deref()) {
            ("", _) | (_, None) => true,
            (theirs, Some(ours)) => theirs == ours,
        };
    if !same_machine {
        return Judgement::new(
            Verdict::Foreign,
            format!(
                "written on another machine (host \"{}\", machine id \"{}\"): its PID cannot be checked here",
                common::field(&rec.host),
                common::field(&rec.machine_id)
            ),
        );
    }
    let our_boot = snap.host.boot_id.as_deref();
    if !rec.boot_id.is_empty()
        && let Some(b) = our_boot
        && b != rec.boot_id
    {
        return Judgement::new(
            Verdict::Stale,
            format!(
                "written on this machine during an earlier boot (boot id {}; this boot is {b}): Qt itself treats it as stale",
                rec.boot_id
            ),
        );
    }
    let app = rec.app.rsplit('/').next().unwrap_or("").to_string();
    let expect_owned = [app.as_str()];
    let claim = PidClaim {
        pid: rec.pid,
        boot_id: (!rec.boot_id.is_empty()).then_some(rec.boot_id.as_str()),
        expect: if app.is_empty() { &[] } else { &expect_owned },
        ..PidClaim::default()
    };
    let mut j = judge_pid(&common::file_claim(c, claim), snap);
    if j.verdict == Verdict::Live && !c.fs.network && snap.kernel_locks().available() {
        j.evidence.push(
                "no kernel lock is held on it, although QLockFile holds flock() while it owns the lock: the process may have released it without removing the file".into(),
            );
    }
    j
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
