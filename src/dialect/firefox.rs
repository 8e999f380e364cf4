//! `firefox`: a Firefox (or Thunderbird) profile in use. Firefox on Linux keeps two locks in the
//! profile directory while it runs: an fcntl (POSIX) write lock on the empty file
//! `.parentlock`, and a symlink `lock` whose text is `IP:+PID` (the `+` says the fcntl lock is
//! held too). On a clean exit the symlink goes and `.parentlock` stays. A `lock` symlink is
//! Firefox's only in a profile directory (beside `.parentlock`, `times.json` or `prefs.js`).
//!
//! Liveness: the kernel lock on `.parentlock` settles it. An unlocked `.parentlock` is `free`
//! (harmless, never deleted). A `lock` symlink with the `+` whose `.parentlock` nobody locks,
//! on a local file system, is stale by that promise; otherwise its PID is checked (a live
//! process that is not a Mozilla program is `unknown`).

use super::common;
use super::message::Message;
use super::{Candidate, Dialect, DialectId, EntryKind, Windows};
use crate::judge::{Judgement, Keeps, OwnerClaim, Placed, Said, Writers};
use crate::probe::{FileKey, Snapshot};
use crate::verdict::Owner;

pub struct Firefox;

/// Programs that lock Mozilla profiles.
pub const MOZILLAS: &[&str] = &[
    "firefox*",
    "thunderbird",
    "librewolf",
    "waterfox",
    "floorp",
    "seamonkey",
    "icecat",
    "palemoon",
    "zen",
];

/// What the `lock` symlink says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProfileLock {
    pub ip: String,
    pub pid: i64,
    /// The `+`: Firefox also holds the fcntl lock on `.parentlock`.
    pub fcntl: bool,
}

/// Parses `IP:+PID` (or the older `IP:PID`). IPv6 addresses contain `:`, so the PID is
/// what follows the last one.
pub fn parse(text: &str) -> Result<ProfileLock, String> {
    let (ip, pid) = text
        .rsplit_once(':')
        .ok_or_else(|| format!("{} is not IP:+PID", common::excerpt(text.as_bytes())))?;
    let (fcntl, pid) = match pid.strip_prefix('+') {
        Some(p) => (true, p),
        None => (false, pid),
    };
    if ip.is_empty()
        || !ip
            .chars()
            .all(|ch| ch.is_ascii_hexdigit() || ch == '.' || ch == ':')
    {
        return Err(format!(
            "{} does not start with an IP address",
            common::excerpt(text.as_bytes())
        ));
    }
    Ok(ProfileLock {
        ip: ip.to_string(),
        pid: common::parse_pid(pid)?,
        fcntl,
    })
}

/// A symlink named `lock` in a profile directory: Firefox's (its text is judged, and
/// `unknown` if it is not `IP:+PID`). A profile has its `.parentlock` (while Firefox runs and
/// after), `times.json` (from its creation) or `prefs.js`; other programs' `lock` symlinks
/// (Mercurial's `.hg/store/lock`) are not Firefox's.
fn is_profile_lock_link(c: &Candidate<'_>, snap: &Snapshot) -> bool {
    c.kind == EntryKind::Symlink
        && c.file_name() == "lock"
        && !super::mercurial::is_hg_lock(c.path)
        && c.path.parent().is_some_and(|profile| {
            PROFILE_FILES
                .iter()
                .any(|f| snap.lstat(&profile.join(f)).is_ok())
        })
}

/// Files only a Mozilla profile directory holds.
const PROFILE_FILES: &[&str] = &[".parentlock", "times.json", "prefs.js", "compatibility.ini"];

/// What Firefox (and Thunderbird) says when a profile is locked: the profiles are in
/// `~/.config/mozilla/firefox` (Firefox 140 and later) or `~/.mozilla/firefox`.
const MESSAGES: &[Message] = &[
    Message::en(
        "Firefox",
        r"Firefox is already running, but is not responding",
        &[
            "$XDG_CONFIG_HOME/mozilla/firefox/*/lock",
            "~/.config/mozilla/firefox/*/lock",
            "~/.mozilla/firefox/*/lock",
            "~/snap/firefox/common/.mozilla/firefox/*/lock",
            "$XDG_CONFIG_HOME/mozilla/firefox/*/.parentlock",
            "~/.config/mozilla/firefox/*/.parentlock",
            "~/.mozilla/firefox/*/.parentlock",
        ],
        "Firefox is already running, but is not responding. To use Firefox, you must first close the existing Firefox process, restart your device, or use a different profile.",
    ),
    Message::en(
        "Thunderbird",
        r"Thunderbird is already running, but is not responding",
        &["~/.thunderbird/*/lock", "~/.thunderbird/*/.parentlock"],
        "Thunderbird is already running, but is not responding.",
    ),
];

impl Dialect for Firefox {
    fn id(&self) -> DialectId {
        DialectId::FIREFOX
    }

    fn about(&self) -> super::About {
        super::About {
            writer: "Firefox and Thunderbird (a profile in use)",
            programs: &["firefox", "thunderbird"],
            found_as: "a profile's `lock` symlink (`IP:+PID`), in a directory with `.parentlock`, `times.json` or `prefs.js`; and `.parentlock`",
            judged_by: "the fcntl lock on `.parentlock` (held: live; released with the `+`: stale); an unlocked `.parentlock` is free; else the PID",
            rules: &[
                "kernel-lock-released",
                "pid-gone",
                "pid-reused",
                "earlier-boot",
            ],
            source: None,
        }
    }

    fn patterns(&self) -> &'static [&'static str] {
        &[".parentlock", "lock"]
    }

    fn messages(&self) -> &'static [Message] {
        MESSAGES
    }

    fn recognise(&self, c: &Candidate<'_>, snap: &Snapshot) -> bool {
        (c.kind == EntryKind::File && c.file_name() == ".parentlock")
            || is_profile_lock_link(c, snap)
    }

    fn read(&self, c: &Candidate<'_>, snap: &Snapshot, _windows: &Windows) -> Said {
        if c.file_name() == ".parentlock" && c.kind == EntryKind::File {
            return parentlock(c);
        }
        if c.kind != EntryKind::Symlink {
            return Judgement::unknown(
                "named like a Firefox profile lock but not the symlink IP:+PID Firefox makes",
            )
            .into();
        }
        let text = c
            .link_target
            .map(|t| t.to_string_lossy().into_owned())
            .unwrap_or_default();
        let lock = match parse(&text) {
            Ok(l) => l,
            Err(why) => return Said::unparseable("Firefox profile", why),
        };
        let owner = Owner {
            pid: Some(lock.pid),
            detail: Some(format!("profile lock from IP {}", common::field(&lock.ip))),
            ..Owner::default()
        };
        let parentlock = c.path.with_file_name(".parentlock");
        let mut said =
            Said::claims(owner).claim(OwnerClaim::pid(lock.pid, Writers::named(MOZILLAS)));
        if let Ok(meta) = snap.lstat(&parentlock)
            && meta.is_file()
        {
            said = said.held_with(FileKey::of(&meta), "the profile's .parentlock");
            if lock.fcntl {
                said = said.claim(Keeps::KernelLock {
                    placed: Placed::by(
                        "the profile's lock symlink (IP:+PID, the '+' for an fcntl lock) beside its .parentlock, as Firefox makes them",
                    ),
                    path: parentlock,
                    what: "the profile's .parentlock".into(),
                    promise: "Firefox holds an fcntl lock on .parentlock for as long as it runs (the '+' in the link)".into(),
                });
            }
        }
        said
    }
}

/// `.parentlock`: `live` while locked (the judge asks the kernel first), else `free`: Firefox
/// keeps the file, and it is harmless.
fn parentlock(c: &Candidate<'_>) -> Said {
    let mut j = Judgement::free(
        "no process holds an fcntl lock on .parentlock (/proc/locks): no Firefox uses this profile; the file is harmless and Firefox keeps it",
    );
    if c.fs.network {
        j.evidence.push(format!(
            "{}: a lock held from another machine does not show here",
            c.fs.reached_from_afar()
        ));
    }
    j.into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_link_text() {
        assert_eq!(
            parse("127.0.0.1:+19991"),
            Ok(ProfileLock {
                ip: "127.0.0.1".into(),
                pid: 19991,
                fcntl: true
            })
        );
        let v6 = parse("fe80::1:+42").unwrap();
        assert_eq!((v6.ip.as_str(), v6.pid), ("fe80::1", 42));
        assert!(!parse("10.0.0.2:42").unwrap().fcntl);
        assert!(parse("19991").is_err());
        assert!(parse("host name:+12").is_err());
        assert!(parse("1.2.3.4:+x").is_err());
    }
}
