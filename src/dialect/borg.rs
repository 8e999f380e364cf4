//! `borg`: BorgBackup's repository and cache locks, the `lock.exclusive/` directory and the
//! `lock.roster` file beside it.
//!
//! Format, from borg 1.x `src/borg/locking.py` and `src/borg/platform/base.py`: the owner id
//! is `(hostid, pid, thread)` with `hostid = "<hostname>@<uuid.getnode()>"` (or
//! `BORG_HOST_ID`). `ExclusiveLock` makes `lock.exclusive/` with `mkdir` and an empty member
//! file named `"%s.%d-%x" % (hostid, pid, thread)`; `LockRoster` keeps
//! `{"exclusive": [[hostid, pid, thread], ...], "shared": [...]}` as JSON.
//!
//! borg's own rule (`kill_stale_locks`, `platform.process_alive`): an owner on this host
//! whose PID does not exist is stale; an owner on another host is assumed alive. Here: the
//! host id must be this host's (its name and one of its network hardware addresses), then
//! the PID rules of [`crate::judge`] with a borg (or Python) process as the owner; another
//! host is `foreign`. A lock with several owners is held while any of them is.

use std::path::Path;

use super::message::Message;
use super::{Candidate, Dialect, DialectId, EntryKind, Windows, common};
use crate::judge::{Claim, Contract, Judgement, OwnerClaim, Placed, Said, Scope, When, Writers};
use crate::probe::Snapshot;
use crate::verdict::Owner;

pub struct Borg;

const PATTERNS: &[&str] = &["lock.exclusive", "lock.roster"];

/// borg runs as `borg` (a frozen binary) or in a Python interpreter.
const BORG: &[&str] = &["borg", "borg.exe"];

/// One owner: `(hostid, pid, thread)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BorgId {
    pub host: String,
    pub pid: i64,
    pub thread: u64,
}

/// Parses a member file name `hostid.pid-thread`.
pub fn parse_member(name: &str) -> Option<BorgId> {
    let (host_pid, thread) = name.rsplit_once('-')?;
    let (host, pid) = host_pid.rsplit_once('.')?;
    Some(BorgId {
        host: host.to_string(),
        pid: common::parse_pid(pid).ok()?,
        thread: u64::from_str_radix(thread, 16).ok()?,
    })
}

/// Parses a roster: every owner, exclusive and shared.
pub fn parse_roster(content: &[u8]) -> Result<Vec<(&'static str, BorgId)>, String> {
    let v: serde_json::Value = serde_json::from_slice(content).map_err(|e| e.to_string())?;
    let obj = v.as_object().ok_or("the roster is not a JSON object")?;
    let mut out = Vec::new();
    for kind in ["exclusive", "shared"] {
        let Some(list) = obj.get(kind) else { continue };
        let list = list.as_array().ok_or(format!("{kind:?} is not a list"))?;
        for e in list {
            let t = e.as_array().filter(|t| t.len() == 3).ok_or(format!(
                "an entry of {kind:?} is not [host, pid, thread]: {}",
                crate::text::truncate(&e.to_string(), 60)
            ))?;
            let (Some(host), Some(pid), Some(thread)) =
                (t[0].as_str(), t[1].as_i64(), t[2].as_u64())
            else {
                return Err(format!(
                    "bad entry in {kind:?}: {}",
                    crate::text::truncate(&e.to_string(), 60)
                ));
            };
            out.push((
                kind,
                BorgId {
                    host: host.to_string(),
                    pid,
                    thread,
                },
            ));
        }
    }
    Ok(out)
}

fn is_this_host(hostid: &str, snap: &Snapshot) -> bool {
    let Some((name, node)) = hostid.rsplit_once('@') else {
        return false;
    };
    name == snap.host.hostname
        && node
            .parse::<u64>()
            .is_ok_and(|n| snap.mac_nodes().contains(&n))
}

/// One owner as a claim: its host as borg names it (`HOSTNAME@NODE`) when that is not this
/// host, where borg itself assumes the owner alive; a thread cannot outlive its process, so
/// the process's PID is what is checked.
fn owner_claim(id: &BorgId, written_ms: i64, label: String, snap: &Snapshot) -> OwnerClaim {
    let host = (!is_this_host(&id.host, snap)).then(|| id.host.clone());
    OwnerClaim::pid(id.pid, Writers::named(BORG))
        .host(host)
        .written(Some(written_ms))
        .label(label)
}

/// The lock directory `lock.exclusive`: one member file per owner.
fn read_dir(c: &Candidate<'_>, snap: &Snapshot) -> Said {
    let members = match snap.list_dir(c.path, 64) {
        Ok(m) => m,
        Err(e) => {
            return Said::unparseable("borg", format!("cannot list the lock directory: {e}"));
        }
    };
    let mut owner = Owner::default();
    let mut claims = Vec::new();
    for (name, meta) in &members {
        let label = format!("owner {}", crate::text::truncate(name, 80));
        match parse_member(name) {
            Some(id) => {
                owner.pid.get_or_insert(id.pid);
                owner.hostname.get_or_insert(common::field(&id.host));
                claims.push(owner_claim(&id, meta.ctime_ms(), label, snap));
            }
            None => {
                return Judgement::unknown(format!(
                    "member {} is not named host.pid-thread as borg names its members",
                    crate::text::truncate(name, 80)
                ))
                .into();
            }
        }
    }
    if claims.is_empty() {
        return Judgement::unknown(
            "the lock directory is empty: borg makes it, then writes its member file; it names no owner to check",
        )
        .because(common::age_line(c.meta, snap))
        .into();
    }
    owner.detail = Some(repo_detail(c.path));
    Said::claims(owner)
        .claim(Claim::Owners(claims))
        .note(When::IfStale, advice(c.path))
}

/// The roster `lock.roster`: every exclusive and shared owner.
fn read_roster(c: &Candidate<'_>, snap: &Snapshot) -> Said {
    let owners = match parse_roster(c.content) {
        Ok(o) => o,
        Err(why) => return Said::unparseable("borg roster", why),
    };
    let mut owner = Owner {
        detail: Some(repo_detail(c.path)),
        ..Owner::default()
    };
    if owners.is_empty() {
        let exclusive = c.path.with_file_name("lock.exclusive");
        if snap.lstat(&exclusive).is_ok() {
            return Judgement::unknown(
                "the roster lists no owner, but lock.exclusive exists beside it: a borg may be updating it",
            )
            .into();
        }
        // borg removes the roster when its last owner leaves: an empty one was left by a
        // borg that stopped while writing it, if no borg works on this repository.
        let repo = c.path.parent().unwrap_or(c.path).to_path_buf();
        let config = snap
            .read_small(&repo.join("config"), 4096)
            .unwrap_or_default();
        let kind = if config.starts_with(b"[repository]") {
            "repository"
        } else if config.starts_with(b"[cache]") {
            "cache"
        } else {
            return Judgement::unknown(format!(
                "an empty borg roster, but {} is no borg repository or cache (its config names none): whose it is cannot be told",
                common::field(&repo.to_string_lossy())
            ))
            .into();
        };
        return Said::claims(owner).claim(Contract {
            placed: Placed::by(format!(
                "a borg roster (JSON of exclusive and shared owners) in the borg {kind} {} (its config says so)",
                common::field(&repo.to_string_lossy())
            )),
            writer: Writers::named(BORG),
            what: "borg",
            at: format!("repository {}", common::field(&repo.to_string_lossy())),
            says: "borg removes the roster when its last owner leaves (`borg break-lock` removes a leftover one)".into(),
            place: repo.clone(),
            scope: Scope::Dirs {
                dirs: vec![repo],
                named: repository_args,
                env: &["BORG_REPO"],
            },
            min_hold_ms: 2_000,
        });
    }
    let mut claims = Vec::new();
    for (kind, id) in &owners {
        owner.pid.get_or_insert(id.pid);
        owner.hostname.get_or_insert(common::field(&id.host));
        let label = format!(
            "{kind} owner {}.{}-{:x}",
            crate::text::truncate(&id.host, 80),
            id.pid,
            id.thread
        );
        claims.push(owner_claim(id, c.meta.ctime_ms(), label, snap));
    }
    Said::claims(owner)
        .claim(Claim::Owners(claims))
        .note(When::IfStale, advice(c.path))
}

/// The repositories a borg command line names: `REPO` or `REPO::ARCHIVE` arguments that are
/// paths.
fn repository_args(cmd: &[String]) -> Vec<std::path::PathBuf> {
    cmd.iter()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .map(|a| a.split("::").next().unwrap_or(a))
        .filter(|a| a.contains('/') && !a.contains("://"))
        .map(std::path::PathBuf::from)
        .collect()
}

fn repo_detail(path: &Path) -> String {
    let dir = path.parent().unwrap_or(path);
    format!("borg lock of {}", common::field(&dir.to_string_lossy()))
}

fn advice(path: &Path) -> String {
    let dir = path.parent().unwrap_or(path);
    format!(
        "`borg break-lock {}` removes borg's locks of this repository or cache",
        crate::text::shell_quote(&common::field(&dir.to_string_lossy()))
    )
}

/// What borg prints when it cannot take a repository's (or its cache's) lock.
const MESSAGES: &[Message] = &[Message::en(
    "borg",
    r"Failed to create/acquire the lock (?P<path>/\S+?) \(",
    &["{path}"],
    "Failed to create/acquire the lock /srv/backup/lock.exclusive (timeout).",
)];

impl Dialect for Borg {
    fn id(&self) -> DialectId {
        DialectId::BORG
    }

    fn about(&self) -> super::About {
        super::About {
            writer: "BorgBackup",
            programs: &["borg"],
            found_as: "`lock.exclusive/` (members `hostid.pid-thread`) and `lock.roster` (JSON) in a borg repository or cache",
            judged_by: "borg's rule: host id (`hostname@MAC`) ours and PID gone: stale; another host: foreign; several owners: live if any lives; an empty roster by borg's condition. Advises `borg break-lock`",
            rules: &["pid-gone", "pid-reused", "earlier-boot", "writer-absent"],
            source: Some("borg `src/borg/locking.py`"),
        }
    }

    fn patterns(&self) -> &'static [&'static str] {
        PATTERNS
    }

    fn messages(&self) -> &'static [Message] {
        MESSAGES
    }

    fn recognise(&self, c: &Candidate<'_>, _snap: &Snapshot) -> bool {
        match c.file_name().to_str() {
            Some("lock.exclusive") => c.kind == EntryKind::Dir,
            Some("lock.roster") => c.kind == EntryKind::File && c.content.first() == Some(&b'{'),
            _ => false,
        }
    }

    fn read(&self, c: &Candidate<'_>, snap: &Snapshot, _windows: &Windows) -> Said {
        match c.kind {
            EntryKind::Dir => read_dir(c, snap),
            EntryKind::File => read_roster(c, snap),
            k => Said::unparseable("borg", format!("it is {}", common::kind_name(k))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_members_and_rosters() {
        assert_eq!(
            parse_member("vm@3281355014145.2120-0"),
            Some(BorgId {
                host: "vm@3281355014145".into(),
                pid: 2120,
                thread: 0
            })
        );
        assert_eq!(
            parse_member("my.host.example@1.42-1f").map(|i| (i.pid, i.thread)),
            Some((42, 0x1f))
        );
        assert_eq!(parse_member("garbage"), None);
        let r = parse_roster(br#"{"exclusive": [["vm@1", 2120, 0]], "shared": [["b@2", 7, 0]]}"#)
            .unwrap();
        assert_eq!(r.len(), 2);
        assert_eq!(r[1].0, "shared");
        assert!(parse_roster(br#"{"exclusive": [["vm@1", "x", 0]]}"#).is_err());
        assert!(parse_roster(b"[]").is_err());
    }
}
