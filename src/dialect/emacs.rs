//! `emacs`: the lock Emacs makes beside a file it is editing, `.#NAME` — a symlink whose text
//! is `USER@HOST.PID:BOOT_TIME` (boot time in seconds since the epoch, left out when Emacs
//! cannot tell), or a regular file with the same text where symlinks are not supported.
//!
//! Liveness: same host, the PID alive, an emacs, started before the lock was made. Emacs
//! itself treats a lock naming another boot time as stale; here a mismatch is evidence, and
//! decides only when the PID does not prove a live emacs (Emacs in a container may read its
//! boot time from utmp, which is not the kernel's).

use super::common;
use super::{Candidate, Decision, Dialect, DialectId, EntryKind, Windows};
use crate::evidence::{PidClaim, fmt_ms, judge_pid};
use crate::probe::Snapshot;
use crate::verdict::{Judgement, Owner, Verdict};

pub struct Emacs;

/// Emacs boot times are rounded; closer than this is the same boot.
const BOOT_SLACK_SECS: i64 = 60;

/// What an Emacs lock says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmacsLock {
    pub user: String,
    pub host: String,
    pub pid: i64,
    pub boot_time: Option<i64>,
}

/// Parses `USER@HOST.PID[:BOOT_TIME]` the way Emacs does: the user is everything before the
/// last `@`, the PID everything after the last `.` of the rest.
pub fn parse(text: &str) -> Result<EmacsLock, String> {
    let bad = || {
        format!(
            "{} is not USER@HOST.PID[:BOOT]",
            common::excerpt(text.as_bytes())
        )
    };
    let (user, rest) = text.rsplit_once('@').ok_or_else(bad)?;
    let (host, tail) = rest.rsplit_once('.').ok_or_else(bad)?;
    let (pid, boot) = match tail.split_once(':') {
        Some((p, b)) => (p, Some(b)),
        None => (tail, None),
    };
    if host.is_empty() {
        return Err(bad());
    }
    let pid = common::parse_pid(pid).map_err(|why| format!("{}: {why}", bad()))?;
    let boot_time = match boot {
        Some(b) => Some(b.trim().parse::<i64>().map_err(|_| bad())?),
        None => None,
    };
    Ok(EmacsLock {
        user: common::field(user),
        host: common::field(host),
        pid,
        boot_time,
    })
}

/// The lock text: the link target of a symlink, else the file content.
fn lock_text(c: &Candidate<'_>) -> Option<String> {
    match c.kind {
        EntryKind::Symlink => c
            .link_target
            .map(|t| String::from_utf8_lossy(t.as_os_str().as_encoded_bytes()).into_owned()),
        EntryKind::File => Some(String::from_utf8_lossy(c.content).trim().to_string()),
        _ => None,
    }
}

impl Dialect for Emacs {
    fn id(&self) -> DialectId {
        DialectId::EMACS
    }

    fn patterns(&self) -> &'static [&'static str] {
        &[".#*"]
    }

    fn recognise(&self, c: &Candidate<'_>) -> bool {
        if !c.file_name().as_encoded_bytes().starts_with(b".#") {
            return false;
        }
        match c.kind {
            EntryKind::Symlink => true,
            // CVS keeps `.#file.1.2` backups: only a short text in the lock format is ours.
            EntryKind::File => {
                c.content.len() < 1024 && lock_text(c).is_some_and(|t| parse(&t).is_ok())
            }
            _ => false,
        }
    }

    fn decide(&self, c: &Candidate<'_>, snap: &Snapshot, _windows: &Windows) -> Decision {
        let Some(text) = lock_text(c) else {
            return Judgement::new(
                Verdict::Unknown,
                "named like an emacs lock but is neither a symlink nor a file",
            )
            .into();
        };
        let lock = match parse(&text) {
            Ok(l) => l,
            Err(why) => return common::unparseable("emacs", why).into(),
        };
        let owner = Owner {
            pid: Some(lock.pid),
            hostname: Some(lock.host.clone()),
            user: Some(lock.user.clone()),
            created_at: None,
            detail: lock
                .boot_time
                .map(|b| format!("emacs boot time {}", fmt_ms(b * 1000))),
        };
        let j = common::kernel_live(snap, c.key(), "the lock")
            .unwrap_or_else(|| judge_owner(c, snap, &lock));
        Decision::owned(owner, j)
    }
}

/// The owner the lock names, by the PID rules, with what its boot time says.
fn judge_owner(c: &Candidate<'_>, snap: &Snapshot, lock: &EmacsLock) -> Judgement {
    let claim = PidClaim {
        pid: lock.pid,
        hostname: Some(&lock.host),
        expect: &["emacs"],
        // xemacs, remacs, an emacs built under another name: any "*emacs*" could be one.
        could_be: Some(|f| {
            common::names_of(f)
                .iter()
                .any(|n| n.to_ascii_lowercase().contains("emacs"))
        }),
        ..PidClaim::default()
    };
    let mut j = judge_pid(&common::file_claim(c, claim), snap);
    let same_host = lock.host == snap.host.hostname;
    if let (Some(theirs), Some(ours), true) = (lock.boot_time, snap.host.boot_time, same_host) {
        if (theirs - ours).abs() <= BOOT_SLACK_SECS {
            j.evidence.push(format!(
                "its boot time {} matches this boot ({})",
                fmt_ms(theirs * 1000),
                fmt_ms(ours * 1000)
            ));
        } else if j.verdict == Verdict::Live {
            j.evidence.push(format!(
                    "its boot time {} differs from this host's boot at {}, but the process is a live emacs that started before the lock",
                    fmt_ms(theirs * 1000),
                    fmt_ms(ours * 1000)
                ));
        } else if j.verdict == Verdict::Stale && c.fs.network {
            // On a shared file system another machine may carry the same host name.
            j = Judgement::new(
                Verdict::Foreign,
                format!(
                    "on a network file system ({}) and naming boot time {}, not this host's boot at {}: it may come from another machine called \"{}\"",
                    c.fs.kind,
                    fmt_ms(theirs * 1000),
                    fmt_ms(ours * 1000),
                    lock.host
                ),
            );
        } else if j.verdict == Verdict::Stale {
            j.evidence.push(format!(
                "it was made during another boot: its boot time is {}, this host booted at {}",
                fmt_ms(theirs * 1000),
                fmt_ms(ours * 1000)
            ));
        }
    }
    j
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_lock_text() {
        assert_eq!(
            parse("root@vm.14485"),
            Ok(EmacsLock {
                user: "root".into(),
                host: "vm".into(),
                pid: 14485,
                boot_time: None
            })
        );
        let l = parse("jane@build.example.com.4242:1700000000").unwrap();
        assert_eq!(l.host, "build.example.com");
        assert_eq!(l.pid, 4242);
        assert_eq!(l.boot_time, Some(1_700_000_000));
        assert!(parse("no-at-sign.12").is_err());
        assert!(parse("u@host.12x").is_err());
        assert!(parse("u@host.12:abc").is_err());
        assert!(parse("u@.12").is_err());
    }
}
