//! The JSON view of a [`Report`]: one document matching `report.schema.json` (version 1).
//!
//! `null` stands for "not known"; paths are absolute, lossless and unambiguous: a backslash is
//! written `\\` and a byte that is not UTF-8 `\xNN` ([`text::json_path`]); `reclaimable` is
//! [`Verdict::reclaimable`]. Besides the escapes JSON requires, every C1 control, DEL and
//! invisible formatting character is written as `\uXXXX`, so printing the document to a
//! terminal is safe ([`text::terminal_safe_json`]).

use std::io::{self, Write};

use serde::Serialize;

use super::waiting::Waiting;
use super::{Counts, Report, age_secs};
use crate::dialect::EntryKind;
use crate::judge::fmt_ms;
use crate::outcome::{Action, Outcome};
use crate::scan::{Finding, ScanError};
use crate::text;
use crate::verdict::{Holder, Owner, ProcessInfo, Proof, Verdict};

/// The schema version this module writes.
pub const VERSION: u32 = 1;

#[derive(Debug, Serialize)]
pub struct Document<'a> {
    pub version: u32,
    pub host: Host,
    pub roots: Vec<String>,
    pub summary: Summary,
    pub locks: Vec<Lock<'a>>,
    pub errors: Vec<Error>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reclaimed: Option<Vec<Reclaimed>>,
}

#[derive(Debug, Serialize)]
pub struct Host {
    pub hostname: String,
    pub boot_id: Option<String>,
    pub boot_time: Option<String>,
    pub pid_ns: Option<u64>,
    pub in_container: bool,
}

#[derive(Debug, Serialize)]
pub struct Summary {
    pub entries: u64,
    /// `locks` and the count of each verdict, in the schema's order.
    #[serde(flatten)]
    pub counts: Counts,
    pub errors: u64,
    pub elapsed_ms: u64,
}

#[derive(Debug, Serialize)]
pub struct Lock<'a> {
    pub path: String,
    pub dialect: &'a str,
    pub verdict: Verdict,
    pub evidence: Vec<String>,
    pub reclaimable: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<&'static str>,
    pub size: Option<u64>,
    pub modified: Option<String>,
    pub age_s: Option<u64>,
    pub owner: Option<&'a Owner>,
    pub process: Option<&'a ProcessInfo>,
    pub holders: &'a [Holder],
    pub fs: &'a crate::probe::FsInfo,
    pub unsaved_changes: Option<bool>,
    /// For `stale`: the rules that proved it, with the facts each used; empty otherwise.
    pub proofs: &'a [Proof],
    /// Processes waiting for it.
    pub waiters: Vec<Waiter<'a>>,
    /// A live holder that shows it will not release the lock by itself.
    pub holder_stuck: Option<Stuck<'a>>,
}

#[derive(Debug, Serialize)]
pub struct Waiter<'a> {
    /// `-1` for a waiting OFD request whose process cannot be seen.
    pub pid: i32,
    pub name: Option<&'a str>,
    pub cmd: &'a [String],
    /// `flock`, `posix`, `ofd` (a blocked kernel request) or `dotlock` (a GnuPG dotlock
    /// retried).
    pub how: &'static str,
    /// `read`, `write`, or `null` when not known.
    pub mode: Option<&'static str>,
    /// When its process started (RFC 3339): the earliest it can have begun waiting.
    pub started: Option<String>,
    /// The call it is blocked in (`flock(3, LOCK_EX) in locks_lock_inode_wait`).
    pub blocked_in: Option<&'a str>,
    pub evidence: &'a str,
    pub container: Option<&'a crate::verdict::ContainerInfo>,
}

#[derive(Debug, Serialize)]
pub struct Stuck<'a> {
    pub pid: i32,
    pub name: &'a str,
    pub why: &'a str,
}

#[derive(Debug, Serialize)]
pub struct Error {
    pub path: String,
    pub error: String,
}

#[derive(Debug, Serialize)]
pub struct Reclaimed {
    pub path: String,
    pub ok: bool,
    /// `removed`, `would-remove` (dry run) or `kept`.
    pub action: &'static str,
    /// The verdict when the lock was judged again just before removal.
    pub verdict: Verdict,
    pub saved_to: Option<String>,
    pub error: Option<String>,
}

impl Report {
    /// The JSON document of this report.
    pub fn document(&self) -> Document<'_> {
        let counts = self.counts();
        Document {
            version: VERSION,
            host: Host {
                hostname: self.host.hostname.clone(),
                boot_id: self.host.boot_id.clone(),
                boot_time: self.host.boot_time_rfc3339(),
                pid_ns: self.host.pid_ns,
                in_container: self.host.in_container,
            },
            roots: self.roots.iter().map(|p| text::json_path(p)).collect(),
            summary: Summary {
                entries: self.entries,
                counts,
                errors: self.errors.len() as u64,
                elapsed_ms: self.elapsed.as_millis() as u64,
            },
            locks: self
                .findings
                .iter()
                .map(|f| lock(f, self.now_ms, self.waiting_of(f)))
                .collect(),
            errors: self.errors.iter().map(error).collect(),
            reclaimed: self
                .reclaimed
                .as_ref()
                .map(|v| v.iter().map(reclaimed).collect()),
        }
    }

    /// Writes the JSON document (pretty, newline-terminated).
    pub fn write_json(&self, mut w: impl Write) -> io::Result<()> {
        let doc = serde_json::to_string_pretty(&self.document()).map_err(io::Error::other)?;
        w.write_all(text::terminal_safe_json(&doc).as_bytes())?;
        w.write_all(b"\n")
    }
}

fn lock<'a>(f: &'a Finding, now_ms: i64, waiting: Option<&'a Waiting>) -> Lock<'a> {
    let j = &f.judgement;
    let evidence = if j.evidence.is_empty() {
        vec![format!("the {} judge gave no evidence line", f.dialect)]
    } else {
        j.evidence.clone()
    };
    Lock {
        path: text::json_path(&f.path),
        dialect: f.dialect.as_str(),
        verdict: j.verdict(),
        evidence,
        reclaimable: j.verdict().reclaimable(),
        kind: match f.kind {
            EntryKind::File => Some("file"),
            EntryKind::Symlink => Some("symlink"),
            EntryKind::Dir => Some("dir"),
            EntryKind::Other => None,
        },
        size: f.size,
        modified: f.modified_ms.map(fmt_ms),
        age_s: f.modified_ms.map(|m| age_secs(m, now_ms)),
        owner: j.owner.as_ref(),
        process: j.process.as_ref(),
        holders: &j.holders,
        fs: &f.fs,
        unsaved_changes: j.unsaved_changes,
        proofs: j.proofs(),
        waiters: waiting
            .map(|w| w.waiters.iter().map(waiter).collect())
            .unwrap_or_default(),
        holder_stuck: waiting.and_then(|w| w.holder.as_ref()).map(|s| Stuck {
            pid: s.pid,
            name: &s.name,
            why: &s.why,
        }),
    }
}

fn waiter(w: &crate::probe::waiters::Waiter) -> Waiter<'_> {
    Waiter {
        pid: w.pid,
        name: w.name.as_deref(),
        cmd: &w.cmd,
        how: w.how.as_str(),
        mode: w.write.map(|x| if x { "write" } else { "read" }),
        started: w.started_ms.map(fmt_ms),
        blocked_in: w.blocked_in.as_deref(),
        evidence: &w.evidence,
        container: w.container.as_ref(),
    }
}

fn error(e: &ScanError) -> Error {
    Error {
        path: text::json_path(e.path()),
        error: e.to_string(),
    }
}

fn reclaimed(o: &Outcome) -> Reclaimed {
    Reclaimed {
        path: text::json_path(&o.path),
        ok: o.ok,
        action: o.action.as_str(),
        verdict: o.judgement.verdict(),
        saved_to: o.saved_to.as_deref().map(text::json_path),
        error: o.error.clone(),
    }
}

impl Action {
    /// The id used in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Removed => "removed",
            Action::WouldRemove => "would-remove",
            Action::Kept => "kept",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judge::Judgement;
    use crate::probe::HostFacts;
    use crate::report::tests::finding;
    use std::time::Duration;

    #[test]
    fn unsafe_characters_become_unicode_escapes_and_the_value_is_unchanged() {
        let mut j = Judgement::unknown("content \u{1b}[31m\u{9b}2J\u{7f}\u{202e}");
        j.owner = Some(Owner {
            hostname: Some("evil\u{1b}]0;title\u{7}".into()),
            ..Owner::default()
        });
        let r = Report::new(
            HostFacts::probe(),
            vec!["/x".into()],
            vec![finding("/x/a\u{1b}.lock", "pidfile", j.clone())],
            vec![],
            3,
            Duration::from_millis(5),
            1_700_000_001_000,
        );
        let mut out = Vec::new();
        r.write_json(&mut out).unwrap();
        let doc = String::from_utf8(out).unwrap();
        assert!(
            !doc.chars().any(|c| c != '\n' && text::is_unsafe_char(c)),
            "{doc}"
        );
        let v: serde_json::Value = serde_json::from_str(&doc).unwrap();
        assert_eq!(v["locks"][0]["evidence"][0], j.evidence[0].as_str());
        assert_eq!(v["locks"][0]["path"], "/x/a\u{1b}.lock");
        assert_eq!(v["locks"][0]["age_s"], 1);
        assert_eq!(v["summary"]["entries"], 3);
        assert_eq!(v["summary"]["unknown"], 1);
        assert!(v.get("reclaimed").is_none());
    }
}
