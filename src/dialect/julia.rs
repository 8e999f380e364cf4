//! `julia-pidfile`: pid locks taken with Julia's `FileWatching.Pidfile.mkpidlock`
//! (precompilation caches under `~/.julia/compiled/`, and packages that use it).
//!
//! Format, from Julia's `stdlib/FileWatching/src/pidfile.jl` (`write_pidfile`): one line,
//! `"$pid $(gethostname())"`. The holder refreshes the mtime every `stale_age / 2` while it
//! holds the lock. Julia's own rule (`isvalidpid`, `stale_pidfile`): the lock is valid while
//! the host is this one and the PID exists; an invalid one is removed once older than
//! `stale_age`.
//!
//! Liveness: a kernel lock on it, then the PID rules of [`crate::judge`] with the host
//! it names and a Julia process as the owner.

use super::{Candidate, Dialect, DialectId, EntryKind, Windows, common};
use crate::judge::{OwnerClaim, Said, Writers};
use crate::probe::Snapshot;
use crate::verdict::Owner;

pub struct Julia;

const PATTERNS: &[&str] = &["*.pidfile"];

/// `pid host`: the host may be empty (Julia then skips the host check).
pub fn parse(content: &[u8]) -> Result<(i64, Option<String>), String> {
    let text = std::str::from_utf8(content)
        .map_err(|_| format!("{} is not text", common::excerpt(content)))?;
    let line = text.trim_matches(|c: char| c.is_whitespace() || c == '\0');
    let (pid, host) = match line.split_once(' ') {
        Some((p, h)) => (p, Some(h.trim().to_string()).filter(|h| !h.is_empty())),
        None => (line, None),
    };
    if line.contains('\n') {
        return Err(format!(
            "{} is not one `pid host` line",
            common::excerpt(content)
        ));
    }
    Ok((common::parse_pid(pid)?, host))
}

impl Dialect for Julia {
    fn id(&self) -> DialectId {
        DialectId::JULIA_PIDFILE
    }

    fn about(&self) -> super::About {
        super::About {
            writer: "Julia (`FileWatching.Pidfile.mkpidlock`: precompilation caches, packages)",
            programs: &["julia"],
            found_as: "`*.pidfile` holding `pid host`",
            judged_by: "same host, the PID: live for julia",
            rules: &["pid-gone", "pid-reused", "earlier-boot"],
            source: Some("Julia `stdlib/FileWatching/src/pidfile.jl`"),
        }
    }

    fn patterns(&self) -> &'static [&'static str] {
        PATTERNS
    }

    fn recognise(&self, c: &Candidate<'_>, _snap: &Snapshot) -> bool {
        c.kind == EntryKind::File
            && c.file_name().as_encoded_bytes().ends_with(b".pidfile")
            && parse(c.content).is_ok()
    }

    fn read(&self, c: &Candidate<'_>, _snap: &Snapshot, _windows: &Windows) -> Said {
        let (pid, host) = match parse(c.content) {
            Ok(p) => p,
            Err(why) => return Said::unparseable("Julia pidfile", why),
        };
        let owner = Owner {
            pid: Some(pid),
            hostname: host.as_deref().map(common::field),
            detail: Some("Julia FileWatching.Pidfile lock".into()),
            ..Owner::default()
        };
        Said::claims(owner).claim(OwnerClaim::pid(pid, Writers::named(&["julia*"])).host(host))
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn parses_pid_and_host() {
        assert_eq!(super::parse(b"4242 vm"), Ok((4242, Some("vm".into()))));
        assert_eq!(super::parse(b"4242"), Ok((4242, None)));
        assert!(super::parse(b"abc vm").is_err());
        assert!(super::parse(b"1 a\n2 b").is_err());
    }
}
