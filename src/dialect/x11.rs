//! `x11`: the display lock an X server writes as `/tmp/.X<n>-lock` — its PID as 10
//! right-aligned ASCII characters and a newline (`"%10d\n"`). Live when that PID is an X server
//! started before the file was written, or when a process listens on the display's socket.
//! X servers are an open set: a live PID that started before the lock and is not a known X
//! server (`Xkasmvnc`) is `unknown`, never `stale`.

use super::common;
use super::message::Message;
use super::{Candidate, Dialect, DialectId, EntryKind, Windows};
use crate::judge::claims::Match;
use crate::judge::{Judgement, OwnerClaim, Said, Writers};
use crate::probe::Snapshot;
use crate::verdict::Owner;

pub struct X11;

/// Process names of X servers (`*`: any name it begins).
pub const X_SERVERS: &[&str] = &[
    "Xorg*",
    "Xvfb",
    "Xwayland",
    "Xvnc*",
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

/// What an X server (Xorg, Xvfb, Xephyr, Xvnc) prints when its display's lock is taken.
const MESSAGES: &[Message] = &[
    Message::en(
        "X server",
        r"Server is already active for display (?P<display>\d+)",
        &["/tmp/.X{display}-lock"],
        "(EE) Server is already active for display 1",
    ),
    Message::en(
        "X server",
        r"remove (?P<path>/\S*\.X\d+-lock)",
        &["{path}"],
        "\tIf this server is no longer running, remove /tmp/.X1-lock",
    ),
];

impl Dialect for X11 {
    fn id(&self) -> DialectId {
        DialectId::X11
    }

    fn about(&self) -> super::About {
        super::About {
            writer: "X servers (Xorg, Xvfb, Xwayland, Xvnc, ...)",
            programs: &["xorg", "xvfb", "xwayland", "xvnc"],
            found_as: "`/tmp/.X<n>-lock`: the PID right-aligned in 10 characters and a newline",
            judged_by: "a process listening on the display's socket: live; else the PID: live for an X server, unknown for another program",
            rules: &["pid-gone", "pid-reused", "earlier-boot"],
            source: Some("X.Org server `os/utils.c` (`LockServer`)"),
        }
    }

    fn patterns(&self) -> &'static [&'static str] {
        &[".X*-lock"]
    }

    fn messages(&self) -> &'static [Message] {
        MESSAGES
    }

    fn recognise(&self, c: &Candidate<'_>, _snap: &Snapshot) -> bool {
        c.kind == EntryKind::File && display_of(c.file_name().as_encoded_bytes()).is_some()
    }

    fn read(&self, c: &Candidate<'_>, snap: &Snapshot, _windows: &Windows) -> Said {
        let display = display_of(c.file_name().as_encoded_bytes());
        let pid = match common::parse_pid(&String::from_utf8_lossy(c.content)) {
            Ok(pid) => pid,
            Err(why) => return Said::unparseable("X display", why),
        };
        let owner = Owner {
            pid: Some(pid),
            detail: display.map(|d| format!("display :{d}")),
            ..Owner::default()
        };
        // A server answering on the display's socket is alive, whatever PID namespace it
        // runs in (the lock's PID may be of a container's or a sandbox's).
        if let Some(n) = display
            && let Some(socket) = listening_display_socket(n, c, snap)
        {
            let mut j = Judgement::live(format!(
                "a process listens on display :{n}'s socket {socket} (/proc/net/unix)"
            ));
            // The process behind it, for the report's PID and COMMAND: the lock's PID, when
            // it is an X server here.
            if let Ok(p) = i32::try_from(pid)
                && let Some(f) = snap.pid(p).facts().filter(|f| f.state != 'Z')
                && Writers::named(X_SERVERS).of(f) == Match::Exe
            {
                j.process = Some(Box::new(snap.process_info(f)));
            }
            return Said::settled(j).owner(owner);
        }
        Said::claims(owner).claim(OwnerClaim::pid(pid, Writers::named(X_SERVERS)))
    }
}

/// The display's socket (`.X11-unix/X<n>` beside the lock, or its abstract twin for `/tmp`),
/// if a process listens on it.
fn listening_display_socket(n: u32, c: &Candidate<'_>, snap: &Snapshot) -> Option<String> {
    let dir = c.path.parent()?;
    let path = dir.join(".X11-unix").join(format!("X{n}"));
    let path = path.to_str()?.to_string();
    if snap.unix_socket_listening(&path) {
        return Some(common::field(&path));
    }
    let abstract_name = format!("@{path}");
    (dir == std::path::Path::new("/tmp") && snap.unix_socket_listening(&abstract_name))
        .then(|| common::field(&abstract_name))
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
