//! `x11`: the display lock an X server writes as `/tmp/.X<n>-lock` — its PID as 10
//! right-aligned ASCII characters and a newline (`"%10d\n"`). Live when that PID is an X server
//! started before the file was written, or when a process listens on the display's socket.
//! X servers are an open set: a live PID whose name could be an unlisted X server
//! (`Xkasmvnc`) is `unknown`, never `stale`.

use super::common;
use super::{Candidate, Decision, Dialect, DialectId, EntryKind, Windows};
use crate::evidence::{PidClaim, judge_pid};
use crate::probe::Snapshot;
use crate::verdict::{Judgement, Owner, Verdict};

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

/// Whether a process not on [`X_SERVERS`] could still be an X server: the set is open (VNC
/// and remote-desktop servers ship their own, `Xkasmvnc`, `Xorg.bin`, ...), and they are
/// named `X...` or after VNC/NX.
pub fn could_be_an_x_server(f: &crate::probe::ProcFacts) -> bool {
    common::names_of(f).iter().any(|n| {
        let lower = n.to_ascii_lowercase();
        n.starts_with('X')
            || ["vnc", "nxagent", "xpra", "x11"]
                .iter()
                .any(|k| lower.contains(k))
    })
}

/// The display number of a `.X<n>-lock` name.
pub fn display_of(name: &[u8]) -> Option<u32> {
    let n = name.strip_prefix(b".X")?.strip_suffix(b"-lock")?;
    std::str::from_utf8(n).ok()?.parse().ok()
}

impl Dialect for X11 {
    fn id(&self) -> DialectId {
        DialectId::X11
    }

    fn patterns(&self) -> &'static [&'static str] {
        &[".X*-lock"]
    }

    fn recognise(&self, c: &Candidate<'_>) -> bool {
        c.kind == EntryKind::File && display_of(c.file_name().as_encoded_bytes()).is_some()
    }

    fn decide(&self, c: &Candidate<'_>, snap: &Snapshot, _windows: &Windows) -> Decision {
        let display = display_of(c.file_name().as_encoded_bytes());
        let parsed = common::parse_pid(&String::from_utf8_lossy(c.content));
        let owner = Owner {
            pid: parsed.as_ref().ok().copied(),
            detail: display.map(|d| format!("display :{d}")),
            ..Owner::default()
        };
        let j = match (
            common::kernel_live(snap, c.key(), "the display lock"),
            parsed,
        ) {
            (Some(j), _) => j,
            (None, Err(why)) => return common::unparseable("X display", why).into(),
            (None, Ok(pid)) => judge_server(c, snap, pid, display),
        };
        Decision::owned(owner, j)
    }
}

/// The X server the lock names, or one listening on the display's socket.
fn judge_server(c: &Candidate<'_>, snap: &Snapshot, pid: i64, display: Option<u32>) -> Judgement {
    let claim = PidClaim {
        pid,
        expect: X_SERVERS,
        could_be: Some(could_be_an_x_server),
        ..PidClaim::default()
    };
    let mut j = judge_pid(&common::file_claim(c, claim), snap);
    if j.verdict != Verdict::Live
        && let Some(n) = display
        && let Some(socket) = listening_display_socket(n, c, snap)
    {
        // The server answers on its display socket: whatever PID the lock names (one in
        // another PID namespace, say), the display is in use.
        let mut live = Judgement::new(
            Verdict::Live,
            format!("a process listens on display :{n}'s socket {socket} (/proc/net/unix)"),
        );
        live.evidence.push(format!(
            "so the lock's PID {pid} is not this host's view of its X server: {}",
            j.evidence.join("; ")
        ));
        j = live;
    }
    j
}

/// The display's listening socket, `.X11-unix/X<n>` beside the lock (or its abstract twin
/// `@/tmp/.X11-unix/X<n>` for a lock in `/tmp`), if a process listens on it.
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
    fn an_unlisted_x_server_could_be_one() {
        let f = |comm: &str, exe: &str| crate::probe::ProcFacts {
            comm: comm.into(),
            exe: Some(exe.into()),
            ..Default::default()
        };
        assert!(could_be_an_x_server(&f("Xkasmvnc", "/usr/bin/Xkasmvnc")));
        assert!(could_be_an_x_server(&f(
            "Xorg.bin",
            "/usr/lib/xorg/Xorg.bin"
        )));
        assert!(could_be_an_x_server(&f(
            "kasmvncserver",
            "/usr/bin/kasmvncserver"
        )));
        assert!(!could_be_an_x_server(&f("sleep", "/usr/bin/sleep")));
        assert!(!could_be_an_x_server(&f("bash", "/usr/bin/bash")));
    }

    #[test]
    fn reads_display_numbers() {
        assert_eq!(display_of(b".X0-lock"), Some(0));
        assert_eq!(display_of(b".X57-lock"), Some(57));
        assert_eq!(display_of(b".X-lock"), None);
        assert_eq!(display_of(b".Xfoo-lock"), None);
    }
}
