//! `x11`: the display lock an X server writes as `/tmp/.X<n>-lock` — its PID as 10
//! right-aligned ASCII characters and a newline (`"%10d\n"`). Live when that PID is an X server
//! started before the file was written.

use super::common;
use super::{Candidate, Dialect, EntryKind, Windows};
use crate::evidence::{PidClaim, judge_pid};
use crate::probe::Snapshot;
use crate::verdict::{Judgement, Owner};

pub struct X11;

/// Process names of X servers (compared as prefixes of comm, exe and `argv[0]`).
pub const X_SERVERS: &[&str] = &[
    "Xorg",
    "Xvfb",
    "Xwayland",
    "Xvnc",
    "Xtigervnc",
    "Xtightvnc",
    "Xephyr",
    "Xnest",
    "Xdummy",
    "Xquartz",
    "Xsun",
    "Xming",
    "Xpra",
    "nxagent",
];

/// The display number of a `.X<n>-lock` name.
pub fn display_of(name: &[u8]) -> Option<u32> {
    let n = name.strip_prefix(b".X")?.strip_suffix(b"-lock")?;
    std::str::from_utf8(n).ok()?.parse().ok()
}

impl Dialect for X11 {
    fn id(&self) -> &'static str {
        "x11"
    }

    fn patterns(&self) -> &'static [&'static str] {
        &[".X*-lock"]
    }

    fn recognise(&self, c: &Candidate<'_>) -> bool {
        c.kind == EntryKind::File && display_of(c.file_name().as_encoded_bytes()).is_some()
    }

    fn judge(&self, c: &Candidate<'_>, snap: &Snapshot, _windows: &Windows) -> Judgement {
        let display = display_of(c.file_name().as_encoded_bytes());
        let parsed = common::parse_pid(&String::from_utf8_lossy(c.content));
        let owner = Owner {
            pid: parsed.as_ref().ok().copied(),
            detail: display.map(|d| format!("display :{d}")),
            ..Owner::default()
        };
        if let Some(j) = common::kernel_live(snap, c.key(), "the display lock") {
            return common::with_owner(j, owner);
        }
        let pid = match parsed {
            Ok(pid) => pid,
            Err(why) => return common::unparseable("X display", why),
        };
        let claim = PidClaim {
            pid,
            written_ms: Some(c.mtime_ms()),
            expect: X_SERVERS,
            fs: Some(c.fs),
            ..PidClaim::default()
        };
        common::with_owner(judge_pid(&claim, snap), owner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_display_numbers() {
        assert_eq!(display_of(b".X0-lock"), Some(0));
        assert_eq!(display_of(b".X57-lock"), Some(57));
        assert_eq!(display_of(b".X-lock"), None);
        assert_eq!(display_of(b".Xfoo-lock"), None);
    }
}
