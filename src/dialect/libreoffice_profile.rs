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

use super::{Candidate, Decision, Dialect, DialectId, EntryKind, Windows, common, support};
use crate::evidence::written_before_boot;
use crate::probe::Snapshot;
use crate::verdict::{Judgement, Owner, Verdict};

pub struct LibreOfficeProfile;

/// The processes of a running LibreOffice.
const SOFFICE: &[&str] = &["soffice.bin", "soffice", "oosplash", "libreoffice"];

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

    fn patterns(&self) -> &'static [&'static str] {
        &[]
    }

    fn any_name(&self) -> bool {
        true
    }

    fn recognise(&self, c: &Candidate<'_>) -> bool {
        c.kind == EntryKind::File
            && c.content.starts_with(b"[Lockdata]")
            && c.file_name() == ".lock"
    }

    fn decide(&self, c: &Candidate<'_>, snap: &Snapshot, _windows: &Windows) -> Decision {
        let Some(keys) = parse(c.content) else {
            return common::unparseable("LibreOffice profile", "no [Lockdata] group").into();
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
        Decision::owned(owner, judge_profile(c, snap, &keys))
    }
}

/// The profile's owner: on this host, and a LibreOffice of its user running.
fn judge_profile(c: &Candidate<'_>, snap: &Snapshot, keys: &HashMap<String, String>) -> Judgement {
    let host = keys.get("Host").cloned().unwrap_or_default();
    if host != snap.host.hostname {
        return Judgement::new(
            Verdict::Foreign,
            format!(
                "profile locked by host \"{}\", not this host \"{}\": a LibreOffice there cannot be seen from here",
                common::field(&host),
                snap.host.hostname
            ),
        );
    }
    if !c.fs.network
        && let Some(line) = written_before_boot(c.mtime_ms(), Some(c.fs), snap)
    {
        return Judgement::new(Verdict::Stale, line);
    }
    let user = keys.get("User").cloned().unwrap_or_default();
    let running = support::running(snap, SOFFICE);
    let mine: Vec<_> = running
        .iter()
        .copied()
        .filter(|p| {
            snap.pid(p.pid)
                .facts()
                .and_then(|f| f.uid)
                .and_then(|u| snap.user_name(u))
                .is_none_or(|n| n == user)
        })
        .collect();
    if !mine.is_empty() {
        Judgement::new(
            Verdict::Live,
            format!(
                "LibreOffice runs for user \"{}\" on this host: {}",
                common::field(&user),
                support::list_procs(&mine)
            ),
        )
    } else if let Some(j) =
        support::openers_inconclusive(c.meta, snap, "no visible LibreOffice runs")
    {
        j
    } else {
        Judgement::new(
                Verdict::Stale,
                format!(
                    "no LibreOffice process runs for user \"{}\" on this host, which wrote the lock",
                    common::field(&user)
                ),
            )
            .because("LibreOffice removes this file when it exits; after a crash it asks whether the profile is in use at the next start")
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
