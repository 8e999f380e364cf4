//! `zsh-history`: zsh's history file lock, `$HISTFILE.LOCK` (`~/.zsh_history.LOCK`).
//!
//! Format, from zsh's `Src/hist.c` (`lockhistfile`): a symlink whose target text is
//! `/pid-<pid>/host-<$HOST>`, made with `symlink()` (atomic on every file system) while zsh
//! rewrites or appends to the history file, removed right after. zsh's own rule: a lock
//! older than 10 seconds is broken by the next zsh that wants it.
//!
//! Liveness: another host → `foreign`; then the PID rules of [`crate::judge`] with zsh as
//! the owner.

use super::{Candidate, Dialect, DialectId, EntryKind, Windows, common};
use crate::judge::{OwnerClaim, Said, When, Writers};
use crate::probe::Snapshot;
use crate::verdict::Owner;

pub struct ZshHistory;

const PATTERNS: &[&str] = &["*hist*.LOCK", "*HIST*.LOCK"];

/// Parses `/pid-<pid>/host-<host>`.
pub fn parse(target: &str) -> Option<(i64, String)> {
    let rest = target.strip_prefix("/pid-")?;
    let (pid, host) = rest.split_once("/host-")?;
    Some((common::parse_pid(pid).ok()?, host.to_string()))
}

impl Dialect for ZshHistory {
    fn id(&self) -> DialectId {
        DialectId::ZSH_HISTORY
    }

    fn about(&self) -> super::About {
        super::About {
            writer: "zsh",
            programs: &["zsh"],
            found_as: "`$HISTFILE.LOCK`: a symlink to `/pid-N/host-H`",
            judged_by: "another host: foreign; same host, the PID: live for zsh",
            rules: &["pid-gone", "pid-reused", "earlier-boot"],
            source: Some("zsh `Src/hist.c` (`lockhistfile`)"),
        }
    }

    fn patterns(&self) -> &'static [&'static str] {
        PATTERNS
    }

    fn recognise(&self, c: &Candidate<'_>, _snap: &Snapshot) -> bool {
        c.kind == EntryKind::Symlink
            && c.file_name().as_encoded_bytes().ends_with(b".LOCK")
            && c.link_target
                .and_then(|t| t.to_str())
                .is_some_and(|t| parse(t).is_some())
    }

    fn read(&self, c: &Candidate<'_>, snap: &Snapshot, _windows: &Windows) -> Said {
        let target = c
            .link_target
            .map(|t| t.to_string_lossy().into_owned())
            .unwrap_or_default();
        let Some((pid, host)) = parse(&target) else {
            return Said::unparseable(
                "zsh history",
                format!(
                    "{} is not a /pid-N/host-NAME link",
                    common::excerpt(target.as_bytes())
                ),
            );
        };
        let histfile = c.file_name().to_string_lossy();
        let owner = Owner {
            pid: Some(pid),
            hostname: Some(common::field(&host)),
            detail: Some(format!(
                "zsh history lock of {}",
                common::field(histfile.strip_suffix(".LOCK").unwrap_or(&histfile))
            )),
            ..Owner::default()
        };
        // zsh writes `$HOST`, which may be empty when unset.
        let host = Some(host).filter(|h| !h.is_empty());
        let mut said =
            Said::claims(owner).claim(OwnerClaim::pid(pid, Writers::named(&["zsh"])).host(host));
        let age = common::age_ms(c.meta.ctime_ms(), snap);
        if age > 10_000 {
            said = said.note(
                When::IfLive,
                format!(
                    "it is {} old: zsh holds it only while writing history, and the next zsh breaks a lock older than 10 s",
                    common::fmt_age(age)
                ),
            );
        }
        said
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn parses_the_link_text() {
        assert_eq!(super::parse("/pid-1130/host-vm"), Some((1130, "vm".into())));
        assert_eq!(super::parse("/pid-1/host-"), Some((1, String::new())));
        assert_eq!(super::parse("/pid-x/host-vm"), None);
        assert_eq!(super::parse("vm.1130"), None);
    }
}
