//! The JSON view: one document matching `report.schema.json` (version 1), written as the scan
//! goes. Its head (`version`, `host`, `roots`) comes with the first lock, each lock as soon as
//! it is judged, then `errors`, the reclaim pass's `reclaimed`, and the `summary` last, once
//! its numbers are known. Nothing of a lock is kept once it is written.
//!
//! `null` stands for "not known"; paths are absolute, lossless and unambiguous: a backslash is
//! written `\\` and a byte that is not UTF-8 `\xNN` ([`text::json_path`]); `reclaimable` is
//! [`Verdict::reclaimable`]. Besides the escapes JSON requires, every C1 control, DEL and
//! invisible formatting character is written as `\uXXXX`, so printing the document to a
//! terminal is safe ([`text::terminal_safe_json`]). The layout is serde_json's pretty one
//! (two spaces per level), the same as if the document had been written at once.

use std::io::{self, Write};

use serde::Serialize;

use super::waiting::Waiting;
use super::{Counts, Head, Options, Scanned, Tail, age_secs};
use crate::dialect::EntryKind;
use crate::judge::fmt_ms;
use crate::outcome::{Action, Outcome};
use crate::scan::{Finding, ScanError};
use crate::text;
use crate::verdict::{Holder, Owner, ProcessInfo, Proof, Verdict};

/// The schema version this module writes.
pub const VERSION: u32 = 1;

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
    pub evidence: Evidence<'a>,
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
    /// `flock`, `posix`, `ofd` (a blocked kernel request) or `dotlock` (a dotlock
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

/// A lock's evidence lines (never empty: a judge that gave none is said to have).
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum Evidence<'a> {
    Lines(&'a [String]),
    None([String; 1]),
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
    /// Where in `saved_to` the copy starts, when the copies of its group share that file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub saved_offset: Option<u64>,
    pub error: Option<String>,
}

/// The JSON [`super::Writer`].
pub struct Writer<W> {
    out: W,
    /// Until the document's head is written.
    head: Option<Head>,
    now_ms: i64,
    reclaim: bool,
    /// Items written in the array being written.
    items: u64,
}

impl<W: Write + Send> Writer<W> {
    pub fn new(head: Head, _opts: &Options, out: W) -> Self {
        Writer {
            out,
            now_ms: head.now_ms,
            reclaim: head.reclaim,
            head: Some(head),
            items: 0,
        }
    }

    /// `{`, `version`, `host`, `roots` and the opening of `locks`, once.
    fn begin(&mut self) -> io::Result<()> {
        let Some(head) = self.head.take() else {
            return Ok(());
        };
        let host = Host {
            hostname: head.host.hostname.clone(),
            boot_id: head.host.boot_id.clone(),
            boot_time: head.host.boot_time_rfc3339(),
            pid_ns: head.host.pid_ns,
            in_container: head.host.in_container,
        };
        let roots: Vec<String> = head.roots.iter().map(|p| text::json_path(p)).collect();
        self.out.write_all(b"{\n")?;
        self.field("version", &VERSION)?;
        self.field("host", &host)?;
        self.field("roots", &roots)?;
        self.open("locks")
    }

    /// `  "key": VALUE,\n`.
    fn field(&mut self, key: &str, value: &impl Serialize) -> io::Result<()> {
        write!(self.out, "  \"{key}\": ")?;
        self.value(value, 1)?;
        self.out.write_all(b",\n")
    }

    /// A value, pretty, its lines indented by `level` levels after the first.
    fn value(&mut self, value: &impl Serialize, level: usize) -> io::Result<()> {
        let text = serde_json::to_string_pretty(value).map_err(io::Error::other)?;
        let text = text::terminal_safe_json(&text);
        let indent = "  ".repeat(level);
        for (i, line) in text.split('\n').enumerate() {
            if i > 0 {
                self.out.write_all(b"\n")?;
                self.out.write_all(indent.as_bytes())?;
            }
            self.out.write_all(line.as_bytes())?;
        }
        Ok(())
    }

    fn open(&mut self, key: &str) -> io::Result<()> {
        write!(self.out, "  \"{key}\": [")?;
        self.items = 0;
        Ok(())
    }

    fn item(&mut self, value: &impl Serialize) -> io::Result<()> {
        self.out.write_all(if self.items == 0 {
            b"\n    "
        } else {
            b",\n    "
        })?;
        self.items += 1;
        self.value(value, 2)
    }

    fn close(&mut self) -> io::Result<()> {
        if self.items == 0 {
            self.out.write_all(b"],\n")
        } else {
            self.out.write_all(b"\n  ],\n")
        }
    }
}

impl<W: Write + Send> super::Writer for Writer<W> {
    fn lock(&mut self, f: &Finding, waiting: &Waiting) -> io::Result<()> {
        self.begin()?;
        self.item(&lock(f, self.now_ms, waiting))
    }

    fn scanned(&mut self, scan: &Scanned<'_>) -> io::Result<()> {
        self.begin()?;
        self.close()?;
        self.open("errors")?;
        for e in scan.errors {
            self.item(&error(e))?;
        }
        self.close()?;
        if self.reclaim {
            self.open("reclaimed")?;
        }
        Ok(())
    }

    fn reclaimed(&mut self, o: &Outcome) -> io::Result<()> {
        self.item(&reclaimed(o))
    }

    fn finish(&mut self, tail: &Tail) -> io::Result<()> {
        if self.reclaim {
            self.close()?;
        }
        let summary = Summary {
            entries: tail.entries,
            counts: tail.counts,
            errors: tail.errors,
            elapsed_ms: tail.elapsed.as_millis() as u64,
        };
        self.out.write_all(b"  \"summary\": ")?;
        self.value(&summary, 1)?;
        self.out.write_all(b"\n}\n")?;
        self.out.flush()
    }
}

/// The JSON object of one lock, with its waiters and stuck holder from `waiting`.
pub fn lock<'a>(f: &'a Finding, now_ms: i64, waiting: &'a Waiting) -> Lock<'a> {
    let j = &f.judgement;
    let evidence = if j.evidence.is_empty() {
        Evidence::None([format!("the {} judge gave no evidence line", f.dialect)])
    } else {
        Evidence::Lines(&j.evidence)
    };
    Lock {
        path: text::json_path(&f.path),
        dialect: f.dialect.as_str(),
        verdict: j.verdict(),
        evidence,
        reclaimable: j.verdict().reclaimable() && j.kept_by.is_empty(),
        kind: match f.kind {
            EntryKind::File => Some("file"),
            EntryKind::Symlink => Some("symlink"),
            EntryKind::Dir => Some("dir"),
            EntryKind::Other => None,
        },
        size: f.size,
        modified: f.modified_ms.map(fmt_ms),
        age_s: f.modified_ms.map(|m| age_secs(m, now_ms)),
        owner: j.owner.as_deref(),
        process: j.process.as_deref(),
        holders: &j.holders,
        fs: &f.fs,
        unsaved_changes: j.flag(crate::verdict::Flag::UNSAVED_CHANGES),
        proofs: j.proofs(),
        waiters: waiting.waiters.iter().map(waiter).collect(),
        holder_stuck: waiting.holder.as_ref().map(|s| Stuck {
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
        saved_offset: o.saved_offset,
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
    use crate::report::tests::{finding, written};
    use crate::report::{Format, Options};

    #[test]
    fn unsafe_characters_become_unicode_escapes_and_the_value_is_unchanged() {
        let mut j = Judgement::unknown("content \u{1b}[31m\u{9b}2J\u{7f}\u{202e}");
        j.owner = Some(Box::new(Owner {
            hostname: Some("evil\u{1b}]0;title\u{7}".into()),
            ..Owner::default()
        }));
        let mut f = finding("/x/a\u{1b}.lock", "pidfile", j.clone());
        f.modified_ms = Some(1_700_000_299_000);
        let (doc, _) = written(Format::Json, &Options::default(), &[f], &[], None);
        assert!(
            !doc.chars().any(|c| c != '\n' && text::is_unsafe_char(c)),
            "{doc}"
        );
        let v: serde_json::Value = serde_json::from_str(&doc).unwrap();
        assert_eq!(v["locks"][0]["evidence"][0], j.evidence[0].as_str());
        assert_eq!(v["locks"][0]["path"], "/x/a\u{1b}.lock");
        assert_eq!(v["locks"][0]["age_s"], 1);
        assert_eq!(v["summary"]["entries"], 42);
        assert_eq!(v["summary"]["unknown"], 1);
        assert!(v.get("reclaimed").is_none());
    }

    /// The streamed document is the one serde_json would write at once: the same layout, in
    /// the order its parts are known (the locks as judged, the summary last).
    #[test]
    fn the_streamed_document_is_the_one_serde_json_writes_at_once() {
        #[derive(Serialize)]
        struct Document<'a> {
            version: u32,
            host: Host,
            roots: Vec<String>,
            locks: Vec<Lock<'a>>,
            errors: Vec<Error>,
            #[serde(skip_serializing_if = "Option::is_none")]
            reclaimed: Option<Vec<Reclaimed>>,
            summary: Summary,
        }
        let findings = [
            finding("/x/b.pid", "pidfile", Judgement::live("alive")),
            finding("/x/a.pid", "pidfile", Judgement::stale_for_test("gone")),
        ];
        let errors = [ScanError::other("/x/bad", "permission denied")];
        let outcome = Outcome {
            path: "/x/a.pid".into(),
            ok: true,
            action: Action::Removed,
            saved_to: Some("/s/saved/a.pid.saved".into()),
            saved_offset: None,
            error: None,
            judgement: Judgement::stale_for_test("gone"),
        };
        let none = Waiting::default();
        let no_findings: &[Finding] = &[];
        for (findings, outcomes) in [
            (no_findings, None),
            (&findings[..], None),
            (&findings[..], Some(&[][..])),
            (&findings[..], Some(std::slice::from_ref(&outcome))),
        ] {
            let (doc, tail) = written(
                Format::Json,
                &Options::default(),
                findings,
                &errors,
                outcomes,
            );
            let host = crate::probe::HostFacts::probe();
            let at_once = Document {
                version: VERSION,
                host: Host {
                    hostname: host.hostname.clone(),
                    boot_id: host.boot_id.clone(),
                    boot_time: host.boot_time_rfc3339(),
                    pid_ns: host.pid_ns,
                    in_container: host.in_container,
                },
                roots: vec!["/x".into()],
                locks: findings
                    .iter()
                    .map(|f| lock(f, 1_700_000_300_000, &none))
                    .collect(),
                errors: errors.iter().map(error).collect(),
                reclaimed: outcomes.map(|o| o.iter().map(reclaimed).collect()),
                summary: Summary {
                    entries: 42,
                    counts: tail.counts,
                    errors: 1,
                    elapsed_ms: 1500,
                },
            };
            let want = serde_json::to_string_pretty(&at_once).unwrap();
            assert_eq!(doc, format!("{}\n", text::terminal_safe_json(&want)));
            assert_eq!(tail.counts.locks, findings.len() as u64);
        }
    }
}
