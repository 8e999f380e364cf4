//! `emacs`: the lock Emacs makes beside a file it is editing, `.#NAME` — a symlink whose text
//! is `USER@HOST.PID:BOOT_TIME` (boot time in seconds since the epoch, left out when Emacs
//! cannot tell), or a regular file with the same text where symlinks are not supported.
//!
//! Other editors write the same links: Midnight Commander's editor (`src/editor/editlock.c`),
//! JOE (which writes `me@here.PID` when `USER` and `HOSTNAME` are not exported: `lock_it` in
//! its `joe/ufile.c` takes `$USER` or `me`, `$HOSTNAME` or `here`) and JED.
//!
//! JOE's `here` names no host: it is the host JOE ran on, as a lock that records none. On a
//! local file system that is this host (the PID is checked here); on a network file system it
//! may be any client's, and proves nothing.
//!
//! Liveness: same host, the PID alive and started before the lock was made: `live` when it
//! is one of those editors, `unknown` otherwise (a name proves nothing). Emacs itself treats
//! a lock naming another boot time as stale; here a mismatch is evidence only (Emacs in a
//! container may read its boot time from utmp, which is not the kernel's).

use super::common;
use super::message::Message;
use super::{Candidate, Dialect, DialectId, EntryKind, Windows};
use crate::judge::{Judgement, OwnerClaim, Said, When, Writers, fmt_ms};
use crate::probe::Snapshot;
use crate::verdict::Owner;

pub struct Emacs;

/// Programs known to write this lock: Emacs, and the editors that write Emacs's `.#NAME`
/// links too (Midnight Commander's editor, whose executable is `mc`; JOE and its other
/// names; JED).
pub const WRITERS: &[&str] = &[
    "emacs*", "mc", "mcedit", "joe", "jmacs", "jstar", "jpico", "rjoe", "jed", "xjed",
];

/// The host JOE writes when `HOSTNAME` is not exported (`joe/ufile.c`, `lock_it`).
const JOE_NO_HOST: &str = "here";

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

/// What Emacs asks (or, in batch mode, prints) when a file it edits is locked by another (the
/// file's name abbreviated, `~` for the home directory).
const MESSAGES: &[Message] = &[Message::en(
    "Emacs",
    r"(?m)(?:^|\s)(?P<file>[~/][^\n]*?) locked by [^@\s]+@(?P<host>[^\s(]+) \(pid (?P<pid>\d+)\)",
    &["{file:dir}/.#{file:name}"],
    "~/plan.org locked by me@laptop (pid 4242): (s, q, p, ?)?",
)];

impl Dialect for Emacs {
    fn id(&self) -> DialectId {
        DialectId::EMACS
    }

    fn about(&self) -> super::About {
        super::About {
            writer: "Emacs, and the editors that write its lock links: Midnight Commander's editor, JOE, JED",
            programs: &["emacs"],
            found_as: "`.#NAME` beside the file edited: a symlink (or a regular file) whose text is `user@host.pid:boottime`",
            judged_by: "same host, the PID: live for one of those editors; the boot time is evidence",
            rules: &["pid-gone", "pid-reused", "earlier-boot"],
            source: Some("Emacs `src/filelock.c`; Midnight Commander `src/editor/editlock.c`"),
        }
    }

    fn patterns(&self) -> &'static [&'static str] {
        &[".#*"]
    }

    fn messages(&self) -> &'static [Message] {
        MESSAGES
    }

    fn recognise(&self, c: &Candidate<'_>, _snap: &Snapshot) -> bool {
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

    fn read(&self, c: &Candidate<'_>, snap: &Snapshot, _windows: &Windows) -> Said {
        let Some(text) = lock_text(c) else {
            return Judgement::unknown(
                "named like an emacs lock but is neither a symlink nor a file",
            )
            .into();
        };
        let lock = match parse(&text) {
            Ok(l) => l,
            Err(why) => return Said::unparseable("emacs", why),
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
        // JOE's `here`: no host recorded (a host really named so is this one anyway).
        let unnamed = lock.host == JOE_NO_HOST && lock.host != snap.host.hostname;
        let mut claim = OwnerClaim::pid(lock.pid, Writers::named(WRITERS))
            .host((!unnamed).then(|| lock.host.clone()));
        let mut said = Said::claims(owner);
        if unnamed {
            said = said.note(
                When::Always,
                "its host \"here\" is JOE's when HOSTNAME is not exported: it names no host, so it is the host of the file system it is on",
            );
        }
        let same_host = lock.host == snap.host.hostname || (unnamed && !c.fs.network);
        if let (Some(theirs), Some(ours), true) = (lock.boot_time, snap.host.boot_time, same_host) {
            let (t, o) = (fmt_ms(theirs * 1000), fmt_ms(ours * 1000));
            if (theirs - ours).abs() <= BOOT_SLACK_SECS {
                said = said.note(
                    When::Always,
                    format!("its boot time {t} matches this boot ({o})"),
                );
            } else if c.fs.network {
                claim.elsewhere = Some(format!(
                    "{} and naming boot time {t}, not this host's boot at {o}: it may come from another machine called \"{}\"",
                    c.fs.reached_from_afar(),
                    lock.host
                ));
            } else {
                // Emacs in a container may read its boot time from utmp, which is not the
                // kernel's: a mismatch is evidence, not proof.
                said = said
                    .note(
                        When::IfStale,
                        format!("it was made during another boot: its boot time is {t}, this host booted at {o}"),
                    )
                    .note(
                        When::IfLive,
                        format!("its boot time {t} differs from this host's boot at {o}, but the process is alive and started before the lock"),
                    );
            }
        }
        said.claim(claim)
    }
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
