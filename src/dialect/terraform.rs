//! `terraform`: the lock info Terraform's local backend writes beside the state it locks,
//! `.NAME.lock.info` for `NAME` (`.terraform.tfstate.lock.info`), a JSON object with `ID`,
//! `Operation`, `Info`, `Who` (`user@host`), `Version`, `Created` (RFC 3339) and `Path`.
//!
//! Liveness: Terraform holds an fcntl (POSIX) lock on the state file for as long as the lock
//! info exists; that kernel lock settles it on this kernel. No lock held, same host, local file
//! system → stale. Another host, or a network file system → foreign, decided before any time
//! rule (and the file's mtime, not `Created` from the writer's clock, is when it was written).

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::common;
use super::message::Message;
use super::{Candidate, Dialect, DialectId, EntryKind, Windows};
use crate::judge::{Judgement, Keeps, Placed, Said, fmt_ms};
use crate::probe::Snapshot;
use crate::verdict::Owner;

pub struct Terraform;

/// Terraform's `LockInfo`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct LockInfo {
    #[serde(rename = "ID")]
    pub id: String,
    #[serde(default)]
    pub operation: String,
    #[serde(default)]
    pub info: String,
    #[serde(default)]
    pub who: String,
    #[serde(default)]
    pub version: String,
    #[serde(default)]
    pub created: String,
    #[serde(default)]
    pub path: String,
}

impl LockInfo {
    /// `(user, host)` from `Who`.
    pub fn who(&self) -> (Option<&str>, Option<&str>) {
        match self.who.rsplit_once('@') {
            Some((u, h)) => (Some(u), Some(h)),
            None if self.who.is_empty() => (None, None),
            None => (Some(self.who.as_str()), None),
        }
    }

    /// `Created` in ms since the epoch.
    pub fn created_ms(&self) -> Option<i64> {
        self.created
            .parse::<jiff::Timestamp>()
            .ok()
            .map(|t| t.as_millisecond())
    }
}

pub fn parse(content: &[u8]) -> Result<LockInfo, String> {
    serde_json::from_slice(content).map_err(|e| {
        format!(
            "not Terraform lock info JSON ({e}): {}",
            common::excerpt(content)
        )
    })
}

/// The state file a lock info belongs to: `.NAME.lock.info` → `NAME`, in the same directory.
pub fn state_path(lock: &Path) -> Option<PathBuf> {
    let name = lock.file_name()?.to_str()?;
    let state = name.strip_prefix('.')?.strip_suffix(".lock.info")?;
    (!state.is_empty()).then(|| lock.with_file_name(state))
}

/// What terraform prints when the state lock is held; its lock info names the state file,
/// whose lock info file is beside it.
const MESSAGES: &[Message] = &[Message::en(
    "terraform",
    r"Error acquiring the state lock(?s:.*?\n\s*Path:\s+(?P<file>\S+))?",
    &[
        "{file:dir}/.{file:name}.lock.info",
        ".terraform.tfstate.lock.info",
    ],
    "Error: Error acquiring the state lock",
)];

impl Dialect for Terraform {
    fn id(&self) -> DialectId {
        DialectId::TERRAFORM
    }

    fn about(&self) -> super::About {
        super::About {
            writer: "Terraform (its local backend)",
            programs: &["terraform"],
            found_as: "`.terraform.tfstate.lock.info` (`.NAME.lock.info` beside the state `NAME`): JSON with `ID`, `Operation`, `Info`, `Who`, `Version`, `Created`, `Path`",
            judged_by: "the fcntl lock Terraform holds on the state file: held, live; released on this host and a local file system, stale; another host or a network file system, foreign",
            rules: &["kernel-lock-released"],
            source: Some("Terraform `internal/states/statemgr/filesystem.go`"),
        }
    }

    fn patterns(&self) -> &'static [&'static str] {
        &[".*.tfstate.lock.info", ".terraform.tfstate.lock.info"]
    }

    fn messages(&self) -> &'static [Message] {
        MESSAGES
    }

    fn recognise(&self, c: &Candidate<'_>, _snap: &Snapshot) -> bool {
        c.kind == EntryKind::File && state_path(c.path).is_some()
    }

    fn read(&self, c: &Candidate<'_>, _snap: &Snapshot, _windows: &Windows) -> Said {
        let info = match parse(c.content) {
            Ok(i) => i,
            Err(why) => return Said::unparseable("Terraform", why),
        };
        let (user, host) = info.who();
        let owner = Owner {
            pid: None,
            hostname: host.map(common::field),
            user: user.map(common::field),
            created_at: info.created_ms().map(fmt_ms),
            detail: Some(format!(
                "{} by Terraform {} (lock ID {})",
                common::field(&info.operation),
                common::field(&info.version),
                common::field(&info.id)
            )),
        };
        let Some(state) = state_path(c.path) else {
            return Judgement::unknown(
                "cannot tell which state file this lock info belongs to from its name",
            )
            .into();
        };
        let what = common::field(&state.to_string_lossy());
        let mut said = Said::claims(owner).claim(Keeps::KernelLock {
            placed: Placed::by(
                "Terraform's lock info (JSON: ID, Operation, Who, Version, Created) named after its state file",
            ),
            path: state,
            what,
            promise: format!(
                "Terraform holds an fcntl lock on the state for as long as the lock info exists; written by {}",
                common::field(&info.who)
            ),
        });
        if let Some(h) = host {
            said = said.host(h);
        }
        said
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_lock_info() {
        let text = br#"{"ID":"169b2d50-6a3c-c13a-8f51-290b21f84c1a","Operation":"OperationTypeApply","Info":"","Who":"root@vm","Version":"1.11.4","Created":"2026-11-29T23:44:26.945849266Z","Path":"terraform.tfstate"}"#;
        let info = parse(text).unwrap();
        assert_eq!(info.who(), (Some("root"), Some("vm")));
        assert!(info.created_ms().is_some());
        assert!(parse(b"{\"ID\": 5}").is_err());
        assert!(parse(b"").is_err());
    }

    #[test]
    fn finds_the_state_file() {
        assert_eq!(
            state_path(Path::new("/w/.terraform.tfstate.lock.info")),
            Some(PathBuf::from("/w/terraform.tfstate"))
        );
        assert_eq!(
            state_path(Path::new("/w/.prod.tfstate.lock.info")),
            Some(PathBuf::from("/w/prod.tfstate"))
        );
        assert_eq!(state_path(Path::new("/w/.lock.info")), None);
    }
}
