//! `cvs`: the locks CVS takes in a repository directory: read locks `#cvs.rfl.HOST.PID`,
//! promotable locks `#cvs.pfl.HOST.PID` and write locks `#cvs.wfl.HOST.PID` (empty files), and
//! the master lock directory `#cvs.lock` (and `CVSROOT/#cvs.history.lock`,
//! `#cvs.val-tags.lock`).
//!
//! Format, from CVS's `src/lock.c` and `src/cvs.h` (`CVSLCK`, `CVSRFL`, `CVSPFL`, `CVSWFL`):
//! a lock file's name is its prefix, the host name and the PID (`"%s.%s.%ld"`); the master
//! lock is made with `mkdir` and held while a lock file is created, and for the whole of a
//! write (beside the writer's `#cvs.wfl` file). A killed cvs leaves them, and every later cvs
//! waits for them forever, "waiting for USER's lock in DIR", every 30 s. CVS itself never
//! removes another process's lock: its manual says to remove it by hand once sure that no cvs
//! holds it.
//!
//! Liveness: a lock file by the PID its name gives, on the host it names (another host →
//! foreign): live for cvs. The master lock directory by the PIDs of the write locks beside it
//! (several owners: stale only when every one is gone); with none, by CVS's condition: no cvs
//! running on this host (the repository's server runs there), nobody with a file of the
//! directory open, every process visible.

use std::path::Path;

use super::message::Message;
use super::{Candidate, Dialect, DialectId, EntryKind, Windows, common};
use crate::judge::{Claim, Contract, Judgement, OwnerClaim, Placed, Said, Scope, When, Writers};
use crate::probe::Snapshot;
use crate::verdict::Owner;

pub struct Cvs;

const PATTERNS: &[&str] = &["#cvs.rfl.*", "#cvs.pfl.*", "#cvs.wfl.*", "#cvs.*lock"];

const CVSES: &[&str] = &["cvs"];

/// The master lock directories CVS makes.
const MASTER: &[&str] = &["#cvs.lock", "#cvs.history.lock", "#cvs.val-tags.lock"];

/// A lock file's kind, host and PID, from its name.
fn parse_name(name: &str) -> Option<(&'static str, String, i64)> {
    let (kind, rest) = [
        ("read lock", "#cvs.rfl."),
        ("promotable lock", "#cvs.pfl."),
        ("write lock", "#cvs.wfl."),
    ]
    .into_iter()
    .find_map(|(k, p)| Some((k, name.strip_prefix(p)?)))?;
    let (host, pid) = rest.rsplit_once('.')?;
    // CVSNT writes `host(user)`.
    let host = host.split('(').next().unwrap_or(host);
    let pid = common::parse_pid(pid).ok()?;
    (!host.is_empty()).then(|| (kind, common::field(host), pid))
}

fn repository(c: &Candidate<'_>) -> String {
    common::field(&c.path.parent().unwrap_or(Path::new("/")).to_string_lossy())
}

/// What CVS prints while it waits for another user's lock in the repository.
const MESSAGES: &[Message] = &[Message::en(
    "CVS",
    r"waiting for \S+'s lock in (?P<dir>/\S+)",
    &["{dir}/#cvs.lock", "{dir}/#cvs.*"],
    "cvs commit: [12:00:00] waiting for me's lock in /srv/cvs/project",
)];

impl Dialect for Cvs {
    fn id(&self) -> DialectId {
        DialectId::CVS
    }

    fn about(&self) -> super::About {
        super::About {
            writer: "CVS",
            programs: &["cvs"],
            found_as: "`#cvs.rfl.HOST.PID`, `#cvs.pfl.HOST.PID`, `#cvs.wfl.HOST.PID` (empty files) and the `#cvs.lock` directory in a repository directory",
            judged_by: "a lock file by the host and PID its name gives (live for cvs); `#cvs.lock` by the write locks beside it, or with none by CVS's condition: no cvs on this host, nobody with a file of the directory open",
            rules: &["pid-gone", "pid-reused", "earlier-boot", "writer-absent"],
            source: Some("CVS `src/lock.c`, `src/cvs.h`"),
        }
    }

    fn patterns(&self) -> &'static [&'static str] {
        PATTERNS
    }

    fn messages(&self) -> &'static [Message] {
        MESSAGES
    }

    fn recognise(&self, c: &Candidate<'_>, _snap: &Snapshot) -> bool {
        let Some(name) = c.file_name().to_str() else {
            return false;
        };
        match c.kind {
            EntryKind::File => parse_name(name).is_some(),
            EntryKind::Dir => MASTER.contains(&name),
            _ => false,
        }
    }

    fn read(&self, c: &Candidate<'_>, snap: &Snapshot, _windows: &Windows) -> Said {
        let name = c.file_name().to_string_lossy().into_owned();
        let note = |s: Said| {
            s.note(
                When::IfStale,
                "every later cvs waits for it forever (\"waiting for USER's lock in DIR\"); CVS never removes another process's lock itself",
            )
        };
        if c.kind == EntryKind::File {
            let Some((kind, host, pid)) = parse_name(&name) else {
                return Said::unparseable("CVS", "its name is not #cvs.[rpw]fl.HOST.PID");
            };
            let owner = Owner {
                pid: Some(pid),
                hostname: Some(host.clone()),
                detail: Some(format!("CVS {kind} in {}", repository(c))),
                ..Owner::default()
            };
            return note(
                Said::claims(owner)
                    .claim(OwnerClaim::pid(pid, Writers::named(CVSES)).host(Some(host))),
            );
        }
        if c.kind != EntryKind::Dir || !MASTER.contains(&name.as_str()) {
            return Said::unparseable("CVS", format!("{name} is not a CVS lock"));
        }
        let dir = c.path.parent().unwrap_or(Path::new("/"));
        // The write locks beside the master lock name its holders.
        let writers: Vec<OwnerClaim> = snap
            .list_dir(dir, 4096)
            .unwrap_or_default()
            .into_iter()
            .filter(|(_, m)| m.is_file())
            .filter_map(|(n, m)| {
                let (kind, host, pid) = parse_name(&n)?;
                (kind == "write lock").then(|| {
                    OwnerClaim::pid(pid, Writers::named(CVSES))
                        .host(Some(host))
                        .written(Some(m.ctime_ms()))
                        .label(format!("write lock {}", crate::text::truncate(&n, 80)))
                })
            })
            .collect();
        let owner = Owner {
            pid: writers.first().map(|w| w.pid),
            detail: Some(format!("CVS master lock of {}", repository(c))),
            ..Owner::default()
        };
        let said = if writers.is_empty() {
            let placed = match cvs_placed(c, dir, snap) {
                Ok(p) => p,
                Err(why) => {
                    return Judgement::unknown(format!(
                        "named like CVS's master lock, but {why}: whose it is cannot be told"
                    ))
                    .into();
                }
            };
            Said::claims(owner).claim(Contract {
                placed,
                writer: Writers::named(CVSES),
                what: "cvs",
                at: format!("repository directory {}", repository(c)),
                says: "CVS's manual: remove a lock left in the repository once sure that no cvs holds it".into(),
                place: dir.to_path_buf(),
                scope: Scope::Anywhere,
                min_hold_ms: 2_000,
            })
        } else {
            Said::claims(owner).claim(Claim::Owners(writers))
        };
        note(said)
    }
}

/// Whether a master lock is CVS's: an empty directory (CVS makes it so) in a directory of a
/// CVS repository (RCS files `NAME,v` beside it, or a `CVSROOT` in a directory above).
fn cvs_placed(c: &Candidate<'_>, dir: &Path, snap: &Snapshot) -> Result<Placed, String> {
    if !snap.list_dir(c.path, 1).is_ok_and(|l| l.is_empty()) {
        return Err("it is not empty, as CVS makes its master lock".into());
    }
    let rcs = snap
        .list_dir(dir, 4096)
        .unwrap_or_default()
        .iter()
        .any(|(n, m)| m.is_file() && n.ends_with(",v"));
    let root = dir
        .ancestors()
        .take(32)
        .any(|a| snap.stat(&a.join("CVSROOT")).is_ok_and(|m| m.is_dir()));
    if !rcs && !root {
        return Err(format!(
            "{} is no directory of a CVS repository (no RCS file beside it, no CVSROOT above)",
            common::field(&dir.to_string_lossy())
        ));
    }
    Ok(Placed::by(format!(
        "an empty master lock directory in the CVS repository directory {}",
        common::field(&dir.to_string_lossy())
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_host_and_pid_from_the_name() {
        assert_eq!(
            parse_name("#cvs.pfl.vm.8608"),
            Some(("promotable lock", "vm".to_string(), 8608))
        );
        assert_eq!(
            parse_name("#cvs.rfl.build.example.org.77"),
            Some(("read lock", "build.example.org".to_string(), 77))
        );
        assert_eq!(
            parse_name("#cvs.wfl.host(jdoe).12"),
            Some(("write lock", "host".to_string(), 12))
        );
        assert_eq!(parse_name("#cvs.rfl.vm"), None);
        assert_eq!(parse_name("#cvs.lock"), None);
    }
}
