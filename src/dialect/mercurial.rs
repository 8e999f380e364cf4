//! `mercurial`: the locks `hg` takes in a repository, `.hg/wlock` (the working directory) and
//! `.hg/store/lock` (the store). Mercurial makes each one a symlink whose text is `host:pid`,
//! or a regular file holding the same text where symlinks fail (`mercurial/lock.py`). On Linux
//! `host` is `hostname/<PID namespace inode in hex>` (`_getlockprefix`), so a lock taken in a
//! container names that container's namespace.
//!
//! Liveness, as Mercurial judges it with our proof standard on top: the lock's host (and
//! namespace) must be ours, then its PID must be alive, have started before the lock was
//! written: `live` for Mercurial (or the Python that runs it), `unknown` for any other live
//! process (a WSGI server hosting hgweb writes these locks too: a name proves nothing).
//! Another host → foreign; another PID namespace → judged there, or foreign.

use super::common;
use super::message::Message;
use super::{Candidate, Dialect, DialectId, EntryKind, Windows};
use crate::judge::{Judgement, OwnerClaim, Said, Writers};
use crate::probe::Snapshot;
use crate::verdict::Owner;

pub struct Mercurial;

/// Names of Mercurial's own programs (the `hg` script runs with comm `hg`).
pub const MERCURIALS: &[&str] = &["hg", "chg", "thg"];

/// What a Mercurial lock says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HgLock {
    pub hostname: String,
    /// The PID namespace inode, when the lock names it (Linux, Mercurial 4.x and later).
    pub pid_ns: Option<u64>,
    pub pid: i64,
}

/// Parses `host:pid` or `host/<ns hex>:pid`.
pub fn parse(text: &str) -> Result<HgLock, String> {
    let bad = || format!("{} is not HOST:PID", common::excerpt(text.as_bytes()));
    let (host, pid) = text.trim().rsplit_once(':').ok_or_else(bad)?;
    let (hostname, pid_ns) = match host.rsplit_once('/') {
        Some((name, ns)) => (name, Some(u64::from_str_radix(ns, 16).map_err(|_| bad())?)),
        None => (host, None),
    };
    if hostname.is_empty() {
        return Err(bad());
    }
    Ok(HgLock {
        hostname: common::field(hostname),
        pid_ns,
        pid: common::parse_pid(pid).map_err(|why| format!("{}: {why}", bad()))?,
    })
}

/// Whether a path is one of Mercurial's locks: `.hg/wlock` or `.hg/store/lock`.
pub fn is_hg_lock(path: &std::path::Path) -> bool {
    let parent = |p: &std::path::Path| p.parent().and_then(|d| d.file_name()).map(|n| n.to_owned());
    match path.file_name().and_then(|n| n.to_str()) {
        Some("wlock") => parent(path).is_some_and(|d| d == ".hg"),
        Some("lock") => {
            parent(path).is_some_and(|d| d == "store")
                && path.parent().and_then(parent).is_some_and(|d| d == ".hg")
        }
        _ => false,
    }
}

fn lock_text(c: &Candidate<'_>) -> Option<String> {
    match c.kind {
        EntryKind::Symlink => c
            .link_target
            .map(|t| String::from_utf8_lossy(t.as_os_str().as_encoded_bytes()).into_owned()),
        EntryKind::File => Some(String::from_utf8_lossy(c.content).into_owned()),
        _ => None,
    }
}

/// What Mercurial prints while it waits for a lock, and when it gives up.
const MESSAGES: &[Message] = &[
    Message::en(
        "Mercurial",
        r"lock on working directory of (?P<dir>.+?) held by process '(?P<pid>\d+)' on host '(?P<host>[^'\n]+)'",
        &["{dir}/.hg/wlock"],
        "waiting for lock on working directory of /src/app held by process '4242' on host 'build-7'",
    ),
    Message::en(
        "Mercurial",
        r"lock on repository (?P<dir>.+?) held by process '(?P<pid>\d+)' on host '(?P<host>[^'\n]+)'",
        &["{dir}/.hg/store/lock"],
        "waiting for lock on repository /src/app held by process '4242' on host 'build-7'",
    ),
    Message::en(
        "Mercurial",
        r"abort: working directory of (?P<dir>.+?): timed out waiting for lock held by '(?P<host>[^'\n]+):(?P<pid>\d+)'",
        &["{dir}/.hg/wlock"],
        "abort: working directory of /src/app: timed out waiting for lock held by 'build-7:4242'",
    ),
    Message::en(
        "Mercurial",
        r"abort: repository (?P<dir>.+?): timed out waiting for lock held by '(?P<host>[^'\n]+):(?P<pid>\d+)'",
        &["{dir}/.hg/store/lock"],
        "abort: repository /src/app: timed out waiting for lock held by 'build-7:4242'",
    ),
];

impl Dialect for Mercurial {
    fn id(&self) -> DialectId {
        DialectId::MERCURIAL
    }

    fn about(&self) -> super::About {
        super::About {
            writer: "Mercurial (`hg`, and servers hosting hgweb)",
            programs: &["mercurial", "hg"],
            found_as: "`.hg/wlock` and `.hg/store/lock`: a symlink (or a file where symlinks fail) whose text is `host/<PID namespace in hex>:pid`",
            judged_by: "same host and PID namespace, the PID: live for `hg` or the Python that runs it; another namespace: judged there, or foreign; another host: foreign",
            rules: &["pid-gone", "pid-reused", "earlier-boot"],
            source: Some("Mercurial `mercurial/lock.py`"),
        }
    }

    fn patterns(&self) -> &'static [&'static str] {
        &["**/.hg/wlock", "**/.hg/store/lock"]
    }

    fn messages(&self) -> &'static [Message] {
        MESSAGES
    }

    fn recognise(&self, c: &Candidate<'_>, _snap: &Snapshot) -> bool {
        matches!(c.kind, EntryKind::Symlink | EntryKind::File) && is_hg_lock(c.path)
    }

    fn read(&self, c: &Candidate<'_>, _snap: &Snapshot, _windows: &Windows) -> Said {
        let Some(text) = lock_text(c) else {
            return Judgement::unknown(format!(
                "named like a Mercurial lock but is {}",
                common::kind_name(c.kind)
            ))
            .into();
        };
        let lock = match parse(&text) {
            Ok(l) => l,
            Err(why) => return Said::unparseable("Mercurial", why),
        };
        let which = if c.file_name() == "wlock" {
            "working-directory lock"
        } else {
            "store lock"
        };
        let owner = Owner {
            pid: Some(lock.pid),
            hostname: Some(lock.hostname.clone()),
            detail: Some(match lock.pid_ns {
                Some(ns) => format!("Mercurial {which}, PID namespace pid:[{ns}]"),
                None => format!("Mercurial {which}"),
            }),
            ..Owner::default()
        };
        let claim = OwnerClaim {
            pid_ns: lock.pid_ns,
            ..OwnerClaim::pid(lock.pid, Writers::named(MERCURIALS)).host(Some(lock.hostname))
        };
        Said::claims(owner).claim(claim)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn parses_lock_text() {
        assert_eq!(
            parse("vm/effffffc:4242"),
            Ok(HgLock {
                hostname: "vm".into(),
                pid_ns: Some(0xEFFF_FFFC),
                pid: 4242
            })
        );
        let old = parse("build.example.com:17").unwrap();
        assert_eq!(
            (old.hostname.as_str(), old.pid_ns),
            ("build.example.com", None)
        );
        assert!(parse("vm/zz:1").is_err());
        assert!(parse(":12").is_err());
        assert!(parse("vm:x").is_err());
        assert!(parse("no pid").is_err());
    }

    #[test]
    fn knows_its_paths() {
        assert!(is_hg_lock(Path::new("/r/.hg/wlock")));
        assert!(is_hg_lock(Path::new("/r/.hg/store/lock")));
        assert!(!is_hg_lock(Path::new("/r/store/lock")));
        assert!(!is_hg_lock(Path::new("/profile/lock")));
        assert!(!is_hg_lock(Path::new("/r/.git/wlock")));
    }
}
