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
//! [`crate::evidence`], and VS Code's own 10-minute rule.
//!
//! The Remote-SSH lock names no owner: the install script holds it (with `flock`, or as a
//! hard link of a `.target` file) only while it downloads and unpacks the server.

use super::{Candidate, Decision, Dialect, DialectId, EntryKind, Windows, common};
use crate::evidence::{PidClaim, fmt_ms, judge_pid, written_before_boot};
use crate::probe::Snapshot;
use crate::verdict::{Judgement, Owner, Verdict};

pub struct VsCode;

const PATTERNS: &[&str] = &["vscode.lock", "vscode-remote-lock.*"];

/// VS Code's `STALE_LOCK_TIME`.
pub const STALE_MS: i64 = 10 * 60 * 1000;
/// A heartbeat this recent proves the holder alive (it refreshes every second).
const FRESH_MS: i64 = 30_000;
/// An install lock older than this, with nobody holding it, is left over.
const INSTALL_MS: i64 = 30 * 60 * 1000;

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

    fn patterns(&self) -> &'static [&'static str] {
        PATTERNS
    }

    fn recognise(&self, c: &Candidate<'_>) -> bool {
        let name = c.file_name().as_encoded_bytes();
        c.kind == EntryKind::File
            && (name == b"vscode.lock" || name.starts_with(b"vscode-remote-lock."))
    }

    fn decide(&self, c: &Candidate<'_>, snap: &Snapshot, _windows: &Windows) -> Decision {
        if c.file_name() != "vscode.lock" {
            return remote_lock(c, snap);
        }
        let rec: Record = match serde_json::from_slice(c.content) {
            Ok(r) => r,
            Err(e) => return common::unparseable("VS Code workspace", e).into(),
        };
        let age = common::age_ms(c.mtime_ms(), snap);
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
        Decision::owned(owner, judge_window(c, snap, &rec, age, releasing))
    }
}

/// The window: refreshed every second while it runs; VS Code's own 10-minute rule.
fn judge_window(
    c: &Candidate<'_>,
    snap: &Snapshot,
    rec: &Record,
    age: i64,
    releasing: Option<i64>,
) -> Judgement {
    if age.abs() <= FRESH_MS && !c.fs.network {
        return Judgement::new(
            Verdict::Live,
            format!(
                "refreshed {} ago: the holder touches it every second",
                common::fmt_age(age)
            ),
        );
    }
    let claim = PidClaim {
        pid: rec.pid,
        ..PidClaim::default()
    };
    let mut j = judge_pid(&common::file_claim(c, claim), snap);
    let old = format!(
        "not refreshed for {}, longer than VS Code's own 10-minute rule (the holder refreshes it every second)",
        common::fmt_age(age)
    );
    match j.verdict {
        Verdict::Live if age > STALE_MS => {
            j.verdict = Verdict::Stale;
            j.evidence.push(format!(
                "but it has {old}: VS Code itself takes such a lock over"
            ));
        }
        Verdict::Foreign | Verdict::Unknown if age > STALE_MS => {
            j.evidence
                .push(format!("and it has {old}, with no sign of life here"));
            j.verdict = Verdict::Stale;
        }
        Verdict::Stale => j
            .evidence
            .push("VS Code itself takes over a lock whose PID is gone".into()),
        _ => {}
    }
    if let Some(t) = releasing
        && t + 5_000 < snap.taken_ms
        && j.verdict != Verdict::Live
    {
        j.evidence
            .push(format!("its release was announced for {}", fmt_ms(t)));
    }
    j
}

const IN_PROGRESS: &str = "Remote-SSH reports \"Installation already in progress\" while it exists";

/// Remote-SSH's install lock.
fn remote_lock(c: &Candidate<'_>, snap: &Snapshot) -> Decision {
    let owner = Owner {
        detail: Some("Remote-SSH server install lock".into()),
        ..Owner::default()
    };
    Decision::owned(owner, judge_install(c, snap))
}

/// The install: locked or open, else its age against the time an install takes.
fn judge_install(c: &Candidate<'_>, snap: &Snapshot) -> Judgement {
    if let Some(j) = common::kernel_live(snap, c.key(), "the install lock") {
        return j;
    }
    if let Some(j) = common::open_live(snap, c.key(), |holders| format!("open in {holders}")) {
        return j;
    }
    if let Some(line) = written_before_boot(c.mtime_ms(), Some(c.fs), snap)
        && !c.fs.network
    {
        return Judgement::new(Verdict::Stale, line).because(IN_PROGRESS);
    }
    let age = common::age_ms(c.mtime_ms(), snap);
    if age > INSTALL_MS && !c.fs.network {
        Judgement::new(
            Verdict::Stale,
            format!(
                "nobody locks it or has it open, and it is {} old: the install script holds it only while it downloads and unpacks the server",
                common::fmt_age(age)
            ),
        )
        .because(IN_PROGRESS)
    } else {
        Judgement::new(
            Verdict::Unknown,
            format!(
                "nobody locks it or has it open, but it is only {} old: an install may be running on a slow link",
                common::fmt_age(age)
            ),
        )
    }
}
