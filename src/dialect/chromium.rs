//! `chromium`: the `SingletonLock` symlink a Chromium-family browser (and every Electron app)
//! keeps in its user-data directory while it runs; its text is `HOSTNAME-PID`.
//!
//! Liveness: same host, the PID alive, started before the link was made, and a browser. A
//! process with another name proves nothing by its name alone (Electron apps are named after
//! themselves), so it counts as the owner when it has files in this profile open, and as an
//! unrelated process (stale) when it has none. Before anything is called stale, the profile's
//! `SingletonSocket` is looked up: a browser listening on it is alive, whatever PID namespace
//! it runs in.

use super::common;
use super::{Candidate, Decision, Dialect, DialectId, EntryKind, Windows};
use crate::evidence::{PidClaim, judge_pid};
use crate::probe::{PidState, Snapshot};
use crate::verdict::{Judgement, Owner, Verdict};

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

impl Dialect for Chromium {
    fn id(&self) -> DialectId {
        DialectId::CHROMIUM
    }

    fn patterns(&self) -> &'static [&'static str] {
        &["SingletonLock"]
    }

    fn recognise(&self, c: &Candidate<'_>) -> bool {
        c.kind == EntryKind::Symlink && c.file_name() == "SingletonLock"
    }

    fn decide(&self, c: &Candidate<'_>, snap: &Snapshot, _windows: &Windows) -> Decision {
        let Some(target) = c.link_target.filter(|_| c.kind == EntryKind::Symlink) else {
            return Judgement::new(
                Verdict::Unknown,
                "named SingletonLock but is not a symlink: Chromium's lock is a symlink HOSTNAME-PID",
            )
            .into();
        };
        let text = String::from_utf8_lossy(target.as_os_str().as_encoded_bytes()).into_owned();
        let (host, pid) = match parse(&text) {
            Ok(v) => v,
            Err(why) => return common::unparseable("Chromium SingletonLock", why).into(),
        };
        let owner = Owner {
            pid: Some(pid),
            hostname: Some(host.clone()),
            ..Owner::default()
        };
        let claim = PidClaim {
            pid,
            hostname: Some(&host),
            ..PidClaim::default()
        };
        let mut j = judge_pid(&common::file_claim(c, claim), snap);
        if j.verdict == Verdict::Live
            && let PidState::Alive(f) = snap.pid(pid as i32)
            && !f.is_one_of(BROWSERS)
        {
            let profile = c.path.parent().unwrap_or(std::path::Path::new("/"));
            match common::has_open_under(f.pid, profile) {
                Some(true) => j.evidence.push(format!(
                    "process {} ({}) is not a known browser name, but has files in this profile open",
                    f.pid,
                    crate::text::truncate(&f.comm, 32)
                )),
                Some(false) => {
                    j.verdict = Verdict::Stale;
                    j.evidence = vec![format!(
                        "process {} is \"{}\" ({}), not a browser, and has no file of this profile open: the PID belongs to an unrelated process",
                        f.pid,
                        crate::text::truncate(&f.comm, 32),
                        f.exe.as_deref().map(|e| crate::text::truncate(e, 200)).unwrap_or_else(|| "exe unknown".into())
                    )];
                }
                None => j.evidence.push(format!(
                    "process {} ({}) is not a known browser name; its open files cannot be read",
                    f.pid,
                    crate::text::truncate(&f.comm, 32)
                )),
            }
        }
        if j.verdict == Verdict::Stale
            && let Some(socket) = listening_singleton_socket(c.path, snap)
        {
            // The browser answers on its socket: its PID must be in another PID namespace
            // (a Flatpak sandbox, a container sharing this host name).
            let mut live = Judgement::new(
                Verdict::Live,
                format!(
                    "a process listens on the profile's SingletonSocket {} (/proc/net/unix)",
                    common::field(&socket)
                ),
            );
            live.evidence.push(format!(
                "so PID {pid} is not this host's view of the browser: {}",
                j.evidence.join("; ")
            ));
            j = live;
        }
        Decision::owned(owner, j)
    }
}

/// The path the profile's `SingletonSocket` symlink names, if a process listens on a unix
/// socket bound there.
fn listening_singleton_socket(lock: &std::path::Path, snap: &Snapshot) -> Option<String> {
    let target = std::fs::read_link(lock.with_file_name("SingletonSocket")).ok()?;
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
