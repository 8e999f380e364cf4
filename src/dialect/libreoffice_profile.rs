//! `libreoffice-profile`: the lock of a LibreOffice user profile, `.lock` in the profile
//! directory (`~/.config/libreoffice/4/.lock`, Flatpak's
//! `~/.var/app/org.libreoffice.LibreOffice/config/libreoffice/4/.lock`, or wherever
//! `-env:UserInstallation` points).
//!
//! Format, from LibreOffice's `desktop/source/app/lockfile.cxx` (`Lockfile::Lockfile`,
//! `syncToFile`): an INI file with one group `[Lockdata]` and the keys `User`, `Host`,
//! `Stamp`, `Time` and `IPCServer`. It names no PID. LibreOffice itself, finding it, asks
//! whether the profile is in use by another instance (same user and host: it offers to
//! remove it).
//!
//! Liveness: another host → `foreign`; this host: written before this boot → `stale`; a
//! LibreOffice process of that user runs → `live`; none, and every such process would be
//! visible → `stale`.

use std::collections::HashMap;

use super::{Candidate, Dialect, DialectId, EntryKind, Windows, common};
use crate::judge::{Contract, Placed, Said, Scope, Writers};
use crate::probe::Snapshot;
use crate::verdict::Owner;

pub struct LibreOfficeProfile;

/// The processes of a running LibreOffice.
const SOFFICE: &[&str] = &["soffice*", "oosplash", "libreoffice*"];

/// The `[Lockdata]` keys.
pub fn parse(content: &[u8]) -> Option<HashMap<String, String>> {
    let text = std::str::from_utf8(content).ok()?;
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    if lines.next()? != "[Lockdata]" {
        return None;
    }
    Some(
        lines
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
            .collect(),
    )
}

impl Dialect for LibreOfficeProfile {
    fn id(&self) -> DialectId {
        DialectId::LIBREOFFICE_PROFILE
    }

    fn about(&self) -> super::About {
        super::About {
            writer: "LibreOffice (its user profile)",
            programs: &["libreoffice", "soffice"],
            found_as: "a profile's `.lock` holding `[Lockdata]` (`User`, `Host`, `Stamp`, `Time`, `IPCServer`)",
            judged_by: "another host: foreign; written before this boot: stale; a LibreOffice of that user runs: live; none, every such process visible: stale",
            rules: &["earlier-boot", "writer-absent"],
            source: Some("LibreOffice `desktop/source/app/lockfile.cxx`"),
        }
    }

    fn patterns(&self) -> &'static [&'static str] {
        &[]
    }

    fn any_name(&self) -> bool {
        true
    }

    fn recognise(&self, c: &Candidate<'_>, _snap: &Snapshot) -> bool {
        c.kind == EntryKind::File
            && c.content.starts_with(b"[Lockdata]")
            && c.file_name() == ".lock"
    }

    fn read(&self, c: &Candidate<'_>, _snap: &Snapshot, _windows: &Windows) -> Said {
        let Some(keys) = parse(c.content) else {
            return Said::unparseable("LibreOffice profile", "no [Lockdata] group");
        };
        let get = |k: &str| keys.get(k).map(|v| common::field(v));
        let owner = Owner {
            user: get("User"),
            hostname: get("Host"),
            detail: Some(format!(
                "LibreOffice user profile lock{}",
                get("Time")
                    .map(|t| format!(", written at {t} (writer's local time)"))
                    .unwrap_or_default()
            )),
            ..Owner::default()
        };
        let host = keys.get("Host").cloned().unwrap_or_default();
        let user = keys.get("User").cloned().unwrap_or_default();
        let profile = c.path.parent().unwrap_or(c.path).to_path_buf();
        Said::claims(owner).host(host).claim(Contract {
            placed: Placed::by(
                "LibreOffice's profile lock (a [Lockdata] group with User, Host and Time) named .lock",
            ),
            writer: Writers::named(SOFFICE),
            what: "LibreOffice",
            at: format!("the profile {}", common::field(&profile.to_string_lossy())),
            says: "LibreOffice removes this file when it exits; after a crash it asks at the next start whether the profile is in use".into(),
            place: profile,
            scope: Scope::User(user),
            min_hold_ms: 2_000,
        })
    }
}
#[cfg(test)]
mod tests {
    #[test]
    fn reads_the_lockdata_group() {
        let k =
            super::parse(b"[Lockdata]\nUser=ann\nHost=vm\nStamp=x\nTime=1 Jan\nIPCServer=true\n")
                .unwrap();
        assert_eq!(k["User"], "ann");
        assert_eq!(k["Host"], "vm");
        assert!(super::parse(b"4242\n").is_none());
    }
}
