//! `pidfile`: a file holding the decimal PID of its owner, optionally padded and followed by a
//! newline — `*.pid` (`/run/*.pid`, `start-stop-daemon --make-pidfile`), and `*.lock`,
//! `*.lck`, `LCK..*` and plain `lock` whose content is a PID (dotlockfile, lockfile-progs with `--use-pid`,
//! nightlyone/lockfile, UUCP/HDB `LCK..ttyS0` with a 10-character right-aligned PID, or the
//! older binary form: the PID as a 4-byte native integer) — or a PID record of several lines,
//! read whole ([`super::pid_record`]: py-filelock's `SoftFileLock`, GnuPG's dotlock, Qt's
//! `QLockFile`), whose host, PID namespace, machine, boot and start time are checked too.
//!
//! Liveness: a kernel lock on the file (daemons often `lockf` their pid file), then the PID
//! rules of [`crate::judge`] with the file's mtime as the time it was written. A plain pid
//! file names no host: on a network file system its PID may belong to another machine
//! (foreign); a record naming another host is foreign wherever it lies.

use super::common;
use super::pid_record::{self, Form, PidRecord};
use super::{Candidate, Dialect, DialectId, EntryKind, Windows};
use crate::judge::{Judgement, OwnerClaim, Said, When, Writers};
use crate::probe::Snapshot;
use crate::verdict::Owner;

pub struct Pidfile;

const PATTERNS: &[&str] = &["*.pid", "*.lock", "*.lck", "LCK..*", "lock"];

/// What the content says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PidContent {
    /// A decimal PID (first line), with the form it was written in.
    Text { pid: i64, padded: bool },
    /// UUCP's binary form: 4 bytes, native byte order (little-endian on Linux hosts).
    Binary(i64),
    /// A PID followed by more lines (host, application, ids...), read whole.
    Record(PidRecord),
}

impl PidContent {
    pub fn pid(&self) -> i64 {
        match self {
            PidContent::Text { pid, .. } | PidContent::Binary(pid) => *pid,
            PidContent::Record(r) => r.pid,
        }
    }
}

/// Parses pid-file content. `uucp` allows the 4-byte binary form.
pub fn parse(content: &[u8], uucp: bool) -> Result<PidContent, String> {
    if content.is_empty() {
        return Err("the file is empty where a PID was expected".into());
    }
    let text_like = content
        .iter()
        .all(|b| b.is_ascii_digit() || b.is_ascii_whitespace() || *b == b'-' || *b == b'+');
    if uucp && content.len() == 4 && !text_like {
        let n = i32::from_ne_bytes([content[0], content[1], content[2], content[3]]);
        return Ok(PidContent::Binary(n as i64));
    }
    let text = std::str::from_utf8(content)
        .map_err(|_| format!("{} is not text", common::excerpt(content)))?;
    if let Some(record) = pid_record::parse(text) {
        return record.map(PidContent::Record);
    }
    let first = text.lines().next().unwrap_or("");
    let pid = common::parse_pid(first)?;
    Ok(PidContent::Text {
        pid,
        padded: first.starts_with(' '),
    })
}

fn is_uucp_name(c: &Candidate<'_>) -> bool {
    c.file_name().as_encoded_bytes().starts_with(b"LCK..")
}

impl Dialect for Pidfile {
    fn id(&self) -> DialectId {
        DialectId::PIDFILE
    }

    fn about(&self) -> super::About {
        super::About {
            writer: "daemons and scripts (`start-stop-daemon --make-pidfile`, dotlockfile, lockfile-progs, UUCP, nightlyone/lockfile), py-filelock's `SoftFileLock`, GnuPG's dotlocks",
            programs: &[],
            found_as: "`*.pid`, and `*.lock`, `*.lck`, `LCK..*`, `lock` holding a decimal PID (padded, or UUCP's binary integer), or a PID record of several lines read whole (`pid`, `host`, a start token; GnuPG's `pid`, `host`)",
            judged_by: "another host: foreign; a kernel lock on the file: live; then the PID (its start token, boot id, machine id and application where recorded). A PID with no host on a network file system: foreign",
            rules: &["pid-gone", "pid-reused", "earlier-boot"],
            source: None,
        }
    }

    fn patterns(&self) -> &'static [&'static str] {
        PATTERNS
    }

    fn recognise(&self, c: &Candidate<'_>, _snap: &Snapshot) -> bool {
        if c.kind != EntryKind::File {
            return false;
        }
        let uucp = is_uucp_name(c);
        if c.file_name().as_encoded_bytes().ends_with(b".pid") {
            return true;
        }
        parse(c.content, uucp).is_ok()
    }

    fn read(&self, c: &Candidate<'_>, snap: &Snapshot, _windows: &Windows) -> Said {
        if c.kind != EntryKind::File {
            return Judgement::unknown(format!(
                "named like a pid file but is {}, not a file",
                common::kind_name(c.kind)
            ))
            .into();
        }
        let content = match parse(c.content, is_uucp_name(c)) {
            Ok(content) => content,
            Err(why) => return Said::unparseable("pid file", why),
        };
        let owner = match &content {
            PidContent::Record(r) => Owner {
                pid: Some(r.pid),
                hostname: r.host_written.clone(),
                detail: Some(record_detail(r)),
                ..Owner::default()
            },
            p => Owner {
                pid: Some(p.pid()),
                detail: matches!(p, PidContent::Binary(_))
                    .then(|| "PID stored as a 4-byte binary integer (UUCP)".to_string()),
                ..Owner::default()
            },
        };
        let mut said = Said::claims(owner).claim(owner_claim(&content, snap));
        if let PidContent::Record(r) = &content {
            if r.form() == Form::Unread {
                // The lines after the PID may name another host or namespace.
                said = said.doubt(format!(
                    "after its PID the file holds {} in no format this tool reads: they may say the PID is another host's",
                    r.unread.as_deref().unwrap_or("more lines")
                ));
            }
            said = said.note(When::Always, format!("the file is {}", r.form().describe()));
        }
        if content.pid() == 0 {
            said = said.note(
                When::Always,
                "liblockfile writes 0 when it records no PID (lockfile-create without --use-pid); such a lock carries no owner to check",
            );
        }
        said
    }
}

/// The PID (and what else a record says) as a claim. A multi-line record naming another host
/// is that host's, whatever else it says (even our boot id: these writers never break another
/// host's lock, nor do we); that host can be asked (`--ask-hosts`).
fn owner_claim(content: &PidContent, snap: &Snapshot) -> OwnerClaim {
    let PidContent::Record(r) = content else {
        return OwnerClaim::pid(content.pid(), Writers::ANY);
    };
    // Qt's own rule: the live PID must be that application.
    let app = r
        .app
        .as_deref()
        .map(|a| a.rsplit('/').next().unwrap_or(a))
        .filter(|a| !a.is_empty());
    let ours = r
        .hostname
        .as_deref()
        .is_none_or(|h| h == snap.host.hostname);
    OwnerClaim {
        pid: r.pid,
        host: r.hostname.clone(),
        // Another host's record is foreign whatever boot id it carries.
        boot_id: r.boot_id.clone().filter(|_| ours),
        machine_id: r.machine_id.clone(),
        pid_ns: r.pid_ns,
        start_ticks: r.start_ticks,
        writers: app.map(Writers::program).unwrap_or(Writers::ANY),
        ..OwnerClaim::default()
    }
}

/// The owner detail of a multi-line record.
fn record_detail(r: &PidRecord) -> String {
    let mut parts = vec![r.form().describe().to_string()];
    if let Some(app) = &r.app {
        parts.push(format!("application {app}"));
    }
    if let Some(ns) = r.pid_ns {
        parts.push(format!("PID namespace pid:[{ns}]"));
    }
    if let Some(m) = &r.machine_id {
        parts.push(format!("machine id {m}"));
    }
    if let Some(b) = &r.boot_id {
        parts.push(format!("boot id {b}"));
    }
    if let Some(t) = r.start_ticks {
        parts.push(format!("owner started at tick {t} after boot"));
    }
    parts.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_written_forms() {
        assert_eq!(
            parse(b"15075\n", false),
            Ok(PidContent::Text {
                pid: 15075,
                padded: false
            })
        );
        assert_eq!(
            parse(b"     14675\n", false),
            Ok(PidContent::Text {
                pid: 14675,
                padded: true
            })
        );
        assert_eq!(
            parse(&4242i32.to_ne_bytes(), true),
            Ok(PidContent::Binary(4242))
        );
        // Four ASCII digits stay text even in a UUCP lock.
        assert_eq!(
            parse(b"1234", true),
            Ok(PidContent::Text {
                pid: 1234,
                padded: false
            })
        );
        assert!(parse(&4242i32.to_ne_bytes(), false).is_err());
        assert!(parse(b"1; rm -rf /", false).is_err());
        assert!(parse(b"", false).is_err());
        assert!(parse(b"abc\n123\n", false).is_err());
        // A PID record of several lines is read whole.
        match parse(b"4242\nlaptop\n", false) {
            Ok(PidContent::Record(r)) => assert_eq!(r.hostname.as_deref(), Some("laptop")),
            other => panic!("{other:?}"),
        }
    }
}
