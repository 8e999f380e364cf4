//! `breezy`: the lock directories of Breezy (`brz`) and Bazaar (`bzr`) branches, repositories
//! and working trees: `.bzr/branch/lock/held/`, `.bzr/repository/lock/held/`,
//! `.bzr/checkout/lock/held/` (and the old all-in-one `.bzr/branch-lock/held/`).
//!
//! Format, from Breezy's `breezy/lockdir.py` (Bazaar's `bzrlib/lockdir.py` writes the same):
//! the lock directory `lock/` always exists; taking the lock renames a fresh `lock/<random>.tmp/`
//! holding an `info` record to `lock/held/`, releasing renames `held/` away and deletes it. The
//! record is YAML (Bazaar: `key: value` lines too): `hostname`, `pid`, `nonce`, `start_time`
//! (seconds since the epoch), `user`. A killed brz leaves `held/` behind and every later command
//! waits 30 s for it, then fails "Could not acquire lock"; `brz break-lock` removes it. Breezy
//! steals a lock itself when its host and user are ours and its PID is gone (`locks.steal_dead`,
//! on by default in Breezy): the lock stays in the way for another user, another host of the
//! same name, and Bazaar.
//!
//! Liveness: the record's PID by the PID rules, written at `start_time`, on the host it names
//! (another host → foreign): live for brz or bzr (Python programs: their executable is a
//! Python). The lock is the `held/` directory, removed with its record.

use super::message::Message;
use super::{Candidate, Dialect, DialectId, EntryKind, Windows, common};
use crate::judge::{OwnerClaim, Said, When, Writers};
use crate::probe::Snapshot;
use crate::verdict::Owner;

pub struct Breezy;

const PATTERNS: &[&str] = &["**/.bzr/**/held"];

/// Breezy and Bazaar, and the Python that runs them.
const BREEZIES: &[&str] = &["brz", "bzr", "python*"];

/// What `held/info` says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HeldInfo {
    pub hostname: Option<String>,
    pub pid: Option<i64>,
    pub nonce: Option<String>,
    /// Seconds since the epoch.
    pub start_time: Option<i64>,
    pub user: Option<String>,
}

/// Parses the record (`key: value` lines, as both YAML and Bazaar's rio write them).
pub fn parse_info(bytes: &[u8]) -> Result<HeldInfo, String> {
    let text = std::str::from_utf8(bytes).map_err(|_| "the record is not text".to_string())?;
    let mut info = HeldInfo::default();
    for line in text.lines() {
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim().trim_matches(|c| c == '\'' || c == '"');
        match key.trim() {
            "hostname" => info.hostname = Some(common::field(value)),
            "pid" => info.pid = Some(common::parse_pid(value)?),
            "nonce" => info.nonce = Some(common::field(value)),
            "start_time" => {
                // Written as an integer; older releases wrote a float.
                let secs = value.split('.').next().unwrap_or("");
                info.start_time = secs.parse().ok();
            }
            "user" => info.user = Some(common::field(value)),
            _ => {}
        }
    }
    if info.pid.is_none() {
        return Err(format!(
            "the record names no pid ({})",
            common::excerpt(bytes)
        ));
    }
    Ok(info)
}

/// Whether `held` sits where Breezy keeps its locks: `.bzr/**/lock/held` or
/// `.bzr/branch-lock/held`.
fn in_bzr_lock(c: &Candidate<'_>) -> bool {
    if c.file_name() != "held" {
        return false;
    }
    let Some(lock) = c.path.parent() else {
        return false;
    };
    let lock_name = lock.file_name().unwrap_or_default();
    (lock_name == "lock" || lock_name == "branch-lock")
        && lock
            .ancestors()
            .any(|a| a.file_name().is_some_and(|n| n == ".bzr"))
}

/// What the lock protects, from its place (`.bzr/branch/lock` → the branch).
fn protects(c: &Candidate<'_>) -> String {
    let lock = c.path.parent();
    let what = lock
        .and_then(|l| {
            if l.file_name().is_some_and(|n| n == "branch-lock") {
                return Some("branch");
            }
            match l.parent()?.file_name()?.to_str()? {
                "branch" => Some("branch"),
                "repository" => Some("repository"),
                "checkout" => Some("working tree"),
                _ => None,
            }
        })
        .unwrap_or("control directory");
    let root = c
        .path
        .ancestors()
        .find(|a| a.file_name().is_some_and(|n| n == ".bzr"))
        .and_then(|b| b.parent())
        .map(|p| common::field(&p.to_string_lossy()))
        .unwrap_or_default();
    format!("{what} {root}")
}

/// What Breezy (brz, bzr) prints when a branch, checkout or repository lock is held.
const MESSAGES: &[Message] = &[
    Message::en(
        "Breezy",
        r"Unable to obtain lock file://(?P<dir>/\S*?)/? held by .*? on (?:host )?(?P<host>\S+) \[?\(?process #(?P<pid>\d+)",
        &["{dir}/.bzr/*/lock/held", "{dir}/lock/held"],
        "Unable to obtain lock file:///src/app/ held by Me <me@example.org> on laptop (process #4242), acquired 5 seconds ago.",
    ),
    Message::en(
        "Breezy",
        r#"Could not acquire lock "(?P<path>[^"\n]+)""#,
        &["{path}"],
        r#"brz: ERROR: Could not acquire lock "/src/app/.bzr/checkout/dirstate": [Errno 11] Resource temporarily unavailable"#,
    ),
];

impl Dialect for Breezy {
    fn id(&self) -> DialectId {
        DialectId::BREEZY
    }

    fn about(&self) -> super::About {
        super::About {
            writer: "Breezy (`brz`) and Bazaar (`bzr`)",
            programs: &["brz", "bzr", "breezy"],
            found_as: "`.bzr/**/lock/held/` directories and their `info` record (`hostname`, `pid`, `nonce`, `start_time`, `user`)",
            judged_by: "another host: foreign; the PID, written at `start_time`: live for brz or bzr (their Python); removed with its record, advising `brz break-lock`",
            rules: &["pid-gone", "pid-reused", "earlier-boot"],
            source: Some("Breezy `breezy/lockdir.py`, Bazaar `bzrlib/lockdir.py`"),
        }
    }

    fn patterns(&self) -> &'static [&'static str] {
        PATTERNS
    }

    fn messages(&self) -> &'static [Message] {
        MESSAGES
    }

    fn recognise(&self, c: &Candidate<'_>, _snap: &Snapshot) -> bool {
        c.kind == EntryKind::Dir && in_bzr_lock(c)
    }

    fn read(&self, c: &Candidate<'_>, snap: &Snapshot, _windows: &Windows) -> Said {
        if c.kind != EntryKind::Dir {
            return Said::unparseable(
                "Breezy",
                format!("held is {}, not a directory", common::kind_name(c.kind)),
            );
        }
        let Some(bytes) = snap.read_small(&c.path.join("info"), super::CONTENT_PREFIX) else {
            return Said::unparseable(
                "Breezy",
                "held/ has no readable info record (Breezy may be writing it)",
            );
        };
        let info = match parse_info(&bytes) {
            Ok(i) => i,
            Err(why) => return Said::unparseable("Breezy", why),
        };
        let pid = info.pid.unwrap_or_default();
        let written = info.start_time.map(|s| s.saturating_mul(1000));
        let owner = Owner {
            pid: Some(pid),
            hostname: info.hostname.clone(),
            user: info.user.clone(),
            created_at: written.map(crate::judge::fmt_ms),
            detail: Some(format!(
                "Breezy/Bazaar write lock on the {}{}",
                protects(c),
                info.nonce
                    .as_deref()
                    .map(|n| format!(" (nonce {n})"))
                    .unwrap_or_default()
            )),
        };
        Said::claims(owner)
            .claim(
                OwnerClaim::pid(pid, Writers::named(BREEZIES))
                    .host(info.hostname.clone())
                    .written(written),
            )
            .note(
                When::IfStale,
                "brz waits 30 s for it, then fails \"Could not acquire lock\"; `brz break-lock` removes it (Breezy steals it only for its own user on this host)",
            )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_yaml_record() {
        let i = parse_info(
            b"hostname: vm\nnonce: y7iwna5fcepaf0zzjmea\npid: 6218\nstart_time: 1796163704\nuser: root <root@vm>\n",
        )
        .unwrap();
        assert_eq!(i.pid, Some(6218));
        assert_eq!(i.hostname.as_deref(), Some("vm"));
        assert_eq!(i.start_time, Some(1_796_163_704));
        assert_eq!(i.user.as_deref(), Some("root <root@vm>"));
        assert!(parse_info(b"hostname: vm\n").is_err());
        assert!(parse_info(b"pid: 12; rm\n").is_err());
    }
}
