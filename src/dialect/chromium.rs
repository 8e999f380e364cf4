//! `chromium`: the `SingletonLock` symlink a Chromium-family browser (and every Electron app)
//! keeps in its user-data directory while it runs; its text is `HOSTNAME-PID`.
//!
//! Liveness: a browser listening on the profile's `SingletonSocket` is alive, whatever PID
//! namespace it runs in; so is the lock's PID when it has files in this profile open (Electron
//! apps are named after themselves). Otherwise the PID rules: same host, the PID alive and
//! started before the link was made — `live` for a known browser, `unknown` for any other
//! name (a name proves nothing).

use super::common;
use super::message::Message;
use super::{Candidate, Dialect, DialectId, EntryKind, Windows};
use crate::judge::{Judgement, OwnerClaim, Said, Writers};
use crate::probe::Snapshot;
use crate::verdict::Owner;

pub struct Chromium;

/// Names of Chromium-family browsers and common Electron apps.
pub const BROWSERS: &[&str] = &[
    "chromium",
    "chrome",
    "google-chrome",
    "headless_shell",
    "brave",
    "msedge",
    "microsoft-edge",
    "vivaldi",
    "opera",
    "yandex_browser",
    "thorium",
    "electron",
    "code",
    "codium",
    "cursor",
    "slack",
    "discord",
    "signal-desktop",
    "obsidian",
    "teams",
];

/// Parses `HOSTNAME-PID` (the host name may itself contain `-`).
pub fn parse(text: &str) -> Result<(String, i64), String> {
    let (host, pid) = text
        .rsplit_once('-')
        .ok_or_else(|| format!("{} is not HOSTNAME-PID", common::excerpt(text.as_bytes())))?;
    if host.is_empty() {
        return Err(format!(
            "{} names no host",
            common::excerpt(text.as_bytes())
        ));
    }
    Ok((common::field(host), common::parse_pid(pid)?))
}

/// What Chromium (and Chrome) prints when its profile is locked by a process on another host.
const MESSAGES: &[Message] = &[Message::en(
    "Chromium",
    r"The profile appears to be in use by another [^\n(]*?process \((?P<pid>\d+)\) on another computer \((?P<host>[^)\n]+)\)",
    &[
        "$CHROME_USER_DATA_DIR/SingletonLock",
        "$CHROME_CONFIG_HOME/chromium/SingletonLock",
        "$XDG_CONFIG_HOME/chromium/SingletonLock",
        "~/.config/chromium/SingletonLock",
        "$CHROME_CONFIG_HOME/google-chrome/SingletonLock",
        "$XDG_CONFIG_HOME/google-chrome/SingletonLock",
        "~/.config/google-chrome/SingletonLock",
        "~/snap/chromium/common/chromium/SingletonLock",
    ],
    "The profile appears to be in use by another Chromium process (4242) on another computer (build-7). Chromium has locked the profile so that it doesn't get corrupted.",
)];

impl Dialect for Chromium {
    fn id(&self) -> DialectId {
        DialectId::CHROMIUM
    }

    fn about(&self) -> super::About {
        super::About {
            writer: "Chromium-family browsers and every Electron application",
            programs: &["chromium", "electron"],
            found_as: "the `SingletonLock` symlink in a user-data directory, whose text is `hostname-pid`",
            judged_by: "a listener on `SingletonSocket`, or the PID with files of the profile open: live; else the PID: live for a browser",
            rules: &["pid-gone", "pid-reused", "earlier-boot"],
            source: Some("Chromium `chrome/browser/process_singleton_posix.cc`"),
        }
    }

    fn patterns(&self) -> &'static [&'static str] {
        &["SingletonLock"]
    }

    fn messages(&self) -> &'static [Message] {
        MESSAGES
    }

    fn recognise(&self, c: &Candidate<'_>, _snap: &Snapshot) -> bool {
        c.kind == EntryKind::Symlink && c.file_name() == "SingletonLock"
    }

    fn read(&self, c: &Candidate<'_>, snap: &Snapshot, _windows: &Windows) -> Said {
        let Some(target) = c.link_target.filter(|_| c.kind == EntryKind::Symlink) else {
            return Judgement::unknown(
                "named SingletonLock but is not a symlink: Chromium's lock is a symlink HOSTNAME-PID",
            )
            .into();
        };
        let text = String::from_utf8_lossy(target.as_os_str().as_encoded_bytes()).into_owned();
        let (host, pid) = match parse(&text) {
            Ok(v) => v,
            Err(why) => return Said::unparseable("Chromium SingletonLock", why),
        };
        let owner = Owner {
            pid: Some(pid),
            hostname: Some(host.clone()),
            ..Owner::default()
        };
        let profile = c.path.parent().unwrap_or(std::path::Path::new("/"));
        // The browser answers on its socket: alive, whatever PID namespace it runs in (a
        // Flatpak sandbox, a container sharing this host name).
        if let Some(socket) = listening_singleton_socket(c.path, snap) {
            return Said::settled(Judgement::live(format!(
                "a process listens on the profile's SingletonSocket {} (/proc/net/unix)",
                common::field(&socket)
            )))
            .owner(owner);
        }
        // Electron apps are named after themselves: the lock's PID with files of this profile
        // open is its owner, whatever its name.
        if host == snap.host.hostname
            && let Ok(p) = i32::try_from(pid)
            && let Some(f) = snap.pid(p).facts().filter(|f| f.state != 'Z')
            && snap.has_open_under(p, profile) == Some(true)
        {
            let mut j = Judgement::live(format!(
                "process {pid} ({}) has files in this profile open",
                crate::text::truncate(&f.comm, 32)
            ));
            j.process = Some(Box::new(snap.process_info(f)));
            return Said::settled(j).owner(owner);
        }
        Said::claims(owner).claim(OwnerClaim::pid(pid, Writers::named(BROWSERS)).host(Some(host)))
    }
}

/// The path the profile's `SingletonSocket` symlink names, if a process listens on a unix
/// socket bound there.
fn listening_singleton_socket(lock: &std::path::Path, snap: &Snapshot) -> Option<String> {
    let target = snap
        .read_link(&lock.with_file_name("SingletonSocket"))
        .ok()?;
    let target = target.to_str()?.to_string();
    snap.unix_socket_listening(&target).then_some(target)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_link_text() {
        assert_eq!(parse("vm-16150"), Ok(("vm".into(), 16150)));
        assert_eq!(parse("my-laptop.lan-42"), Ok(("my-laptop.lan".into(), 42)));
        assert!(parse("16150").is_err());
        assert!(parse("-16150").is_err());
        assert!(parse("vm-abc").is_err());
    }
}
