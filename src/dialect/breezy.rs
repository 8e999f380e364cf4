//! `breezy`: the lock directories of Breezy (`brz`) and Bazaar (`bzr`), wherever they put
//! them:
//!
//! - a control directory's branch, repository and working tree: `.bzr/branch/lock/held/`,
//!   `.bzr/repository/lock/held/`, `.bzr/checkout/lock/held/` (`bzr/branch.py`,
//!   `bzr/repository.py`, `bzr/workingtree_4.py`: `LockableFiles(..., 'lock', LockDir)`), and
//!   the old all-in-one `.bzr/branch-lock/held/`;
//! - a colocated branch: `.bzr/branches/NAME/lock/held/` (`bzr/bzrdir.py`,
//!   `_get_branch_path`: `branches/` and the escaped name);
//! - the control directory's own configuration `control.conf`: `.bzr/branch_lock/held/`
//!   (`config.py`, `ControlStore`: `lock_dir_name='branch_lock'`);
//! - the user's configuration directory, locked to write `breezy.conf` or `locations.conf`:
//!   `lock/held/` in `$BRZ_HOME/breezy`, `$XDG_CONFIG_HOME/breezy`, `~/.config/breezy` or
//!   Bazaar's `~/.bazaar` (`bedding.py`, `_config_dir`; `config.py`, `LockableConfig` and
//!   `LockableIniFileStore`: `lock_name = 'lock'` in the file's directory). Outside a `.bzr`
//!   directory the place alone is not enough: the `info` record must be Breezy's (a `nonce`
//!   and a `start_time` beside the PID).
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

const PATTERNS: &[&str] = &[
    "**/.bzr/**/held",
    "**/breezy/lock/held",
    "**/.bazaar/lock/held",
    "**/bazaar/lock/held",
];

/// The names of the user's configuration directory (`breezy` under `$XDG_CONFIG_HOME` or
/// `$BRZ_HOME`, Bazaar's `.bazaar`, and `bazaar` under `$XDG_CONFIG_HOME`).
const CONFIG_DIRS: &[&str] = &["breezy", ".bazaar", "bazaar"];

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

/// Where a `held` directory sits, when it is where Breezy keeps its locks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    /// In a control directory (`.bzr/**/lock/held`, `.bzr/branch-lock/held`,
    /// `.bzr/branch_lock/held`).
    Control,
    /// In the user's configuration directory (`breezy/lock/held`).
    Config,
}

fn place(c: &Candidate<'_>) -> Option<Place> {
    if c.file_name() != "held" {
        return None;
    }
    let lock = c.path.parent()?;
    let lock_name = lock.file_name()?;
    let in_bzr = lock
        .ancestors()
        .any(|a| a.file_name().is_some_and(|n| n == ".bzr"));
    if in_bzr && (lock_name == "lock" || lock_name == "branch-lock" || lock_name == "branch_lock") {
        return Some(Place::Control);
    }
    let config = lock.parent()?.file_name()?.to_str()?;
    (lock_name == "lock" && CONFIG_DIRS.contains(&config)).then_some(Place::Config)
}

/// Whether a record is shaped as Breezy's `LockDir` writes it: a PID, a nonce and a start
/// time.
fn breezy_shaped(info: &HeldInfo) -> bool {
    info.pid.is_some() && info.nonce.is_some() && info.start_time.is_some()
}

/// What the lock protects, from its place (`.bzr/branch/lock` → the branch).
fn protects(c: &Candidate<'_>, place: Place) -> String {
    let lock = c.path.parent();
    if place == Place::Config {
        let dir = lock
            .and_then(|l| l.parent())
            .map(|p| common::field(&p.to_string_lossy()))
            .unwrap_or_default();
        return format!("configuration directory {dir} (breezy.conf, locations.conf)");
    }
    let root = c
        .path
        .ancestors()
        .find(|a| a.file_name().is_some_and(|n| n == ".bzr"))
        .and_then(|b| b.parent())
        .map(|p| common::field(&p.to_string_lossy()))
        .unwrap_or_default();
    let what = lock.and_then(|l| {
        match l.file_name()?.to_str()? {
            "branch-lock" => return Some("branch".to_string()),
            "branch_lock" => return Some("control directory's control.conf of".to_string()),
            _ => {}
        }
        let owner = l.parent()?;
        if owner.parent()?.file_name()? == "branches" {
            let name = common::field(&owner.file_name()?.to_string_lossy());
            return Some(format!("colocated branch \"{name}\" of"));
        }
        match owner.file_name()?.to_str()? {
            "branch" => Some("branch".to_string()),
            "repository" => Some("repository".to_string()),
            "checkout" => Some("working tree".to_string()),
            _ => None,
        }
    });
    format!(
        "{} {root}",
        what.unwrap_or_else(|| "control directory".to_string())
    )
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
        // The kernel lock on a working tree's `dirstate` (data, never listed) is taken with
        // the tree's write lock, `lock/held` beside it, by the same brz.
        &["{path:dir}/lock/held", "{path}"],
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

    /// A `held/` directory elsewhere, or one whose record is not Breezy's, is not Breezy's.
    fn judges_unrecognised(&self) -> bool {
        false
    }

    fn recognise(&self, c: &Candidate<'_>, snap: &Snapshot) -> bool {
        if c.kind != EntryKind::Dir {
            return false;
        }
        match place(c) {
            Some(Place::Control) => true,
            // Outside a control directory, only a record shaped as Breezy's makes it Breezy's.
            Some(Place::Config) => snap
                .read_small(&c.path.join("info"), super::CONTENT_PREFIX)
                .and_then(|b| parse_info(&b).ok())
                .is_some_and(|i| breezy_shaped(&i)),
            None => false,
        }
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
                protects(c, place(c).unwrap_or(Place::Control)),
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
