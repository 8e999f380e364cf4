//! `vscode`: VS Code's workspace-storage lock `workspaceStorage/<id>/vscode.lock` (desktop,
//! and the server of Remote-SSH / dev containers under `~/.vscode-server/data/User/`), and
//! Remote-SSH's install lock `~/.vscode-server/bin/<commit>/vscode-remote-lock.<user>.<commit>`.
//!
//! `vscode.lock`, from VS Code's `src/vs/workbench/api/node/extHostStoragePaths.ts`: written
//! with `flag: 'wx'` as JSON `{"pid":N,"willReleaseAt":0}` (`willReleaseAt` becomes a time in
//! ms when the window is closing); the holder touches the file's mtime every second
//! (`MTIME_UPDATE_TIME`). VS Code takes a lock over when its PID is gone, when
//! `willReleaseAt` has passed, or when the mtime is older than `STALE_LOCK_TIME` (10
//! minutes, checked twice 2 s apart).
//!
//! Liveness here: a fresh mtime is the holder's heartbeat (`live`, whatever the PID: a dev
//! container's server writes a PID of its own namespace); otherwise the PID rules of
//! [`crate::judge`], and VS Code's own 10-minute rule as a refresh promise.
//!
//! The Remote-SSH lock names no owner: the install script holds it (with `flock`, or as a
//! hard link of a `.target` file) only while it downloads and unpacks the server, and
//! promises nothing by which an old one could be told from a slow install: `unknown`, unless
//! written before this boot.

use super::{Candidate, Dialect, DialectId, EntryKind, Windows};
use crate::judge::{OwnerClaim, Placed, Refresh, Said, When, Writers, fmt_ms};
use crate::probe::Snapshot;
use crate::verdict::Owner;

pub struct VsCode;

const PATTERNS: &[&str] = &["vscode.lock", "vscode-remote-lock.*"];

/// VS Code's `STALE_LOCK_TIME`.
pub const STALE_MS: i64 = 10 * 60 * 1000;
/// A heartbeat this recent proves the holder alive (it refreshes every second).
const FRESH_MS: i64 = 30_000;

/// `{"pid":N,"willReleaseAt":T}`.
#[derive(Debug, serde::Deserialize)]
struct Record {
    pid: i64,
    #[serde(rename = "willReleaseAt", default)]
    will_release_at: Option<f64>,
}

impl Dialect for VsCode {
    fn id(&self) -> DialectId {
        DialectId::VSCODE
    }

    fn about(&self) -> super::About {
        super::About {
            writer: "VS Code (desktop, and its server for Remote-SSH and dev containers)",
            programs: &["vscode"],
            found_as: "`workspaceStorage/<id>/vscode.lock` (`{\"pid\":N,\"willReleaseAt\":T}`), Remote-SSH's `vscode-remote-lock.<user>.<commit>`",
            judged_by: "VS Code refreshes it every second: refreshed within 30 s, live; dead PID, stale; not refreshed for VS Code's own 10 minutes, nothing here holding it, stale. The install lock promises nothing: unknown unless written before this boot",
            rules: &[
                "pid-gone",
                "pid-reused",
                "earlier-boot",
                "heartbeat-expired",
            ],
            source: Some("VS Code `src/vs/workbench/api/node/extHostStoragePaths.ts`"),
        }
    }

    fn patterns(&self) -> &'static [&'static str] {
        PATTERNS
    }

    fn recognise(&self, c: &Candidate<'_>, _snap: &Snapshot) -> bool {
        let name = c.file_name().as_encoded_bytes();
        c.kind == EntryKind::File
            && (name == b"vscode.lock" || name.starts_with(b"vscode-remote-lock."))
    }

    fn read(&self, c: &Candidate<'_>, snap: &Snapshot, _windows: &Windows) -> Said {
        if c.file_name() != "vscode.lock" {
            // Remote-SSH's install lock names no owner and its writer promises nothing.
            let owner = Owner {
                detail: Some("Remote-SSH server install lock".into()),
                ..Owner::default()
            };
            return Said::claims(owner).note(When::Always, IN_PROGRESS);
        }
        let rec: Record = match serde_json::from_slice(c.content) {
            Ok(r) => r,
            Err(e) => return Said::unparseable("VS Code workspace", e),
        };
        let releasing = rec.will_release_at.filter(|t| *t > 0.0).map(|t| t as i64);
        let owner = Owner {
            pid: Some(rec.pid),
            detail: Some(match releasing {
                Some(t) => format!(
                    "workspace storage lock; the window was closing, release announced for {}",
                    fmt_ms(t)
                ),
                None => "workspace storage lock of a VS Code window".into(),
            }),
            ..Owner::default()
        };
        let mut said = Said::claims(owner)
            .claim(Refresh {
                placed: Placed::by(
                    "VS Code's lock record (JSON: pid, willReleaseAt) named vscode.lock in its storage",
                ),
                last_ms: c.meta.changed_ms(),
                window_ms: STALE_MS,
                fresh_ms: Some(FRESH_MS),
                promise: "the holder touches it every second, and VS Code itself takes over a lock not refreshed for 10 minutes".into(),
            })
            .claim(OwnerClaim::pid(rec.pid, Writers::ANY))
            .note(
                When::IfStale,
                "VS Code itself takes over a lock whose PID is gone or that was not refreshed for 10 minutes",
            );
        if let Some(t) = releasing
            && t + 5_000 < snap.taken_ms
        {
            said = said.note(
                When::Otherwise,
                format!("its release was announced for {}", fmt_ms(t)),
            );
        }
        said
    }
}

const IN_PROGRESS: &str = "Remote-SSH reports \"Installation already in progress\" while it exists";
