//! Engine errors: always the lock path plus a [`ErrorKind`] that says what went wrong, in words
//! a user can act on. Text that comes from a lock file (host names, commands) and the path are
//! kept as they are: a program that shows an error on a terminal escapes it there.

use std::fmt::Write as _;
use std::io;
use std::path::PathBuf;
use std::time::Duration;

use super::verdict::{Judgement, Verdict};

/// An engine operation failed on `path`.
#[derive(Debug, thiserror::Error)]
#[error("{}: {kind}", path.display())]
pub struct EngineError {
    /// The lock path the operation was given.
    pub path: PathBuf,
    /// What went wrong.
    pub kind: ErrorKind,
}

impl EngineError {
    pub(crate) fn new(path: impl Into<PathBuf>, kind: ErrorKind) -> Self {
        EngineError {
            path: path.into(),
            kind,
        }
    }

    pub(crate) fn io(path: impl Into<PathBuf>, op: &'static str, source: io::Error) -> Self {
        let kind = match source.kind() {
            io::ErrorKind::PermissionDenied => ErrorKind::PermissionDenied { op },
            _ => ErrorKind::Io { op, source },
        };
        Self::new(path, kind)
    }

    /// What went wrong.
    pub fn kind(&self) -> &ErrorKind {
        &self.kind
    }

    /// The judgement behind a refusal (held, not stale), if there is one.
    pub fn judgement(&self) -> Option<&Judgement> {
        match &self.kind {
            ErrorKind::Held { judgement, .. }
            | ErrorKind::NotStale(judgement)
            | ErrorKind::Kept(judgement)
            | ErrorKind::Unrecognised(judgement) => Some(judgement),
            _ => None,
        }
    }

    /// Whether the lock exists and may not be taken now (held, or not provably stale).
    pub fn is_held(&self) -> bool {
        matches!(self.kind, ErrorKind::Held { .. })
    }
}

/// What went wrong.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The lock exists and is not stale: live, foreign or unknown (its verdict says which).
    #[error("{}{}", describe(judgement), waited_suffix(*waited))]
    Held {
        /// The judgement of the lock in the way.
        judgement: Box<Judgement>,
        /// How long acquisition waited before giving up.
        waited: Duration,
    },
    /// Something exists at the lock path that is not a lock this engine can judge (not an
    /// owner record, or a record without a valid pid): it will never become free by itself,
    /// so acquisition gives up at once instead of waiting.
    #[error(
        "exists but is not a locksmith lock ({}); remove it if it is a leftover, or use another path",
        evidence_line(.0)
    )]
    Unrecognised(Box<Judgement>),
    /// Reclaim refused: the lock is not stale at this moment.
    #[error("is {} now, not stale: {}", .0.verdict, describe(.0))]
    NotStale(Box<Judgement>),
    /// Reclaim refused: its owner is proven gone, but processes that prove nothing about it
    /// keep the file (another user's shared lock): it is not removed while they do.
    #[error(
        "its owner is gone, but it is kept by {} and is not removed while they hold it: {}",
        .0.kept_by.as_deref().unwrap_or("another process"),
        evidence_line(.0)
    )]
    Kept(Box<Judgement>),
    /// The path no longer names the file that was judged, or that file changed.
    #[error("{0}")]
    Changed(String),
    /// The path names something the engine does not lock (a directory, a symlink, a FIFO...).
    #[error("is {0}, not a lock file")]
    NotALockFile(&'static str),
    /// There is no lock file at the path.
    #[error("no such lock file")]
    NotFound,
    /// The directory that should hold the lock file does not exist or is not a directory.
    #[error("directory {} {}", .dir.display(), if *.exists { "is not a directory" } else { "does not exist" })]
    NoDirectory {
        /// The directory of the lock path.
        dir: PathBuf,
        /// Whether something that is not a directory is there.
        exists: bool,
    },
    /// The path cannot name a lock file (empty, or ends in `..` or `/`).
    #[error("not a file path ({0})")]
    InvalidPath(&'static str),
    /// The operation `op` was refused by the file system's permissions.
    #[error("permission denied ({op})")]
    PermissionDenied {
        /// What the engine was doing.
        op: &'static str,
    },
    /// The file system of the lock's directory cannot give the guarantees a lock needs (no
    /// hard links, a `link()` that reports what it did not do). Nothing was left at the path.
    #[error("cannot lock on this file system ({fs}): {why}; nothing was created")]
    Unsupported {
        /// The file system's type, as mountinfo or `statfs` names it (`fuse.sshfs`, `nfs`).
        fs: String,
        /// What it lacks.
        why: &'static str,
    },
    /// Release found that the path no longer names our lock: someone removed or replaced it
    /// while we held it. Nothing was removed.
    #[error("the lock file was removed or replaced by someone else while held; left it alone")]
    Lost,
    /// `before_unlink` refused: nothing was removed.
    #[error("not removed: {0}")]
    Aborted(#[source] io::Error),
    /// Any other I/O error, while the engine was doing `op`.
    #[error("{op}: {source}")]
    Io {
        /// What the engine was doing.
        op: &'static str,
        /// The error the system reported.
        #[source]
        source: io::Error,
    },
}

fn evidence_line(j: &Judgement) -> String {
    j.evidence.join("; ")
}

fn waited_suffix(waited: Duration) -> String {
    if waited < Duration::from_millis(100) {
        String::new()
    } else {
        format!(" (waited {:.1} s)", waited.as_secs_f64())
    }
}

/// One line naming who holds a lock (pid, command, host, since when) or, when nobody can be
/// named, why it cannot be taken. Used for `locksmith lock`'s "held" message. The text is raw
/// (host names and commands as the record and the process table have them).
fn describe(j: &Judgement) -> String {
    let owner = j.owner.as_ref();
    let pid = j
        .holder_pid
        .map(i64::from)
        .or_else(|| owner.and_then(|o| o.pid));
    let mut s = String::new();
    match j.verdict {
        Verdict::Live => s.push_str("held by "),
        Verdict::Foreign => s.push_str("held (cannot be checked from here) by "),
        Verdict::Stale if j.kept_by.is_some() => {
            let _ = write!(
                s,
                "kept by {} though its owner is gone; was held by ",
                j.kept_by.as_deref().unwrap_or_default()
            );
        }
        Verdict::Stale => s.push_str("stale, was held by "),
        Verdict::Unknown | Verdict::Free => {
            let _ = write!(
                s,
                "cannot tell who holds it: {}",
                j.evidence
                    .first()
                    .map(String::as_str)
                    .unwrap_or("no evidence")
            );
            return s;
        }
    }
    match pid {
        Some(p) => {
            let _ = write!(s, "pid {p}");
        }
        None => s.push_str("an unknown process"),
    }
    if let Some(c) = &j.holder_command {
        let c: String = c.chars().take(120).collect();
        let _ = write!(s, " ({c})");
    }
    if let Some(h) = owner.and_then(|o| o.hostname.as_deref()) {
        let _ = write!(s, " on host \"{h}\"");
    }
    if let Some(t) = owner.and_then(|o| o.created_at.as_deref()) {
        let _ = write!(s, " since {t}");
    }
    if j.verdict == Verdict::Foreign
        && let Some(e) = j.evidence.first()
    {
        let _ = write!(s, ": {e}");
    } else if pid.is_none()
        && let Some(e) = j.evidence.last()
    {
        // Nobody to name: say why (e.g. another user's record we may not read).
        let _ = write!(s, ": {e}");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verdict::{Owner, Rule};

    #[test]
    fn describes_holders_with_raw_text() {
        let mut j = Judgement::new(Verdict::Live, "alive").with_owner(Owner {
            pid: Some(42),
            hostname: Some("box\x1b[31m".into()),
            created_at: Some("2026-01-02T03:04:05Z".into()),
            ..Default::default()
        });
        j.holder_pid = Some(42);
        j.holder_command = Some("sleep 100".into());
        assert_eq!(
            describe(&j),
            "held by pid 42 (sleep 100) on host \"box\x1b[31m\" since 2026-01-02T03:04:05Z"
        );
        let e = EngineError::new(
            "/tmp/L",
            ErrorKind::Held {
                judgement: Box::new(j),
                waited: Duration::from_millis(1500),
            },
        );
        assert!(e.to_string().starts_with("/tmp/L: held by pid 42"));
        assert!(e.to_string().ends_with("(waited 1.5 s)"), "{e}");
        let u = Judgement::new(Verdict::Unknown, "not a record");
        assert_eq!(describe(&u), "cannot tell who holds it: not a record");
    }

    #[test]
    fn a_kept_lock_says_who_keeps_it() {
        let mut j = Judgement::stale(Rule::PidGone, "no process 42").with_owner(Owner {
            pid: Some(42),
            ..Default::default()
        });
        j.kept_by = Some("pid 7 (flock read, less)".into());
        assert_eq!(
            describe(&j),
            "kept by pid 7 (flock read, less) though its owner is gone; was held by pid 42"
        );
        let e = EngineError::new("/tmp/L", ErrorKind::Kept(Box::new(j)));
        assert_eq!(
            e.to_string(),
            "/tmp/L: its owner is gone, but it is kept by pid 7 (flock read, less) and is not removed while they hold it: no process 42"
        );
        assert!(e.judgement().is_some());
    }
}
