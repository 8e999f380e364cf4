//! The journal: one JSON object per line in `journal.jsonl`, one per event (a lock reclaimed,
//! a reclaim that failed after its checks, a lock restored).
//!
//! Each line is an [`Entry`] (`"version": 1`). Paths are written with
//! [`crate::text::json_path`] (lossless: a backslash is `\\`, a
//! byte that is not UTF-8 `\xNN`); other text is the real text, with the characters a terminal
//! could act on written as `\uXXXX` escapes, so `cat journal.jsonl` is safe and a program
//! reading it gets the exact strings back.
//!
//! A reclaim line records where the lock was as reclaim reached it: `dirs`, the (device,
//! inode) of every directory from `/` down to the lock's own, and for a lock removed inside a
//! container, `container` (which one, and the lock's path there), `dirs` then starting at the
//! container's root directory. `restore` goes back through these same directories only.
//!
//! A reclaim line is on disk, with the lock's copy, before the lock is removed; a lock whose
//! check at the moment of removal fails after that gets a `reclaim-failed` line that
//! `cancels` its reclaim line.
//!
//! Every line names its run: one process of locksmith ([`run_id`]: the time it first wrote,
//! its pid and a random part); a reclaim line also names its batch in that run ([`Batch`]:
//! what one `--scan --reclaim`, one `d` or one `D` removed). Undo is scoped by them: the UI's
//! `u` puts back the last batch of the UI's own reclaims, `locksmith restore` what it is told.
//! A line of an older version, which has neither, is a run of its own. Every line also says
//! what kind of run wrote it ([`Via`]: the UI, `--scan --reclaim`, `start`, `restore`), so that
//! the UI's undo is never another kind of run's (a root cron's reclaim, say), across restarts
//! of the UI too; a line that does not say is no UI's.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};

use crate::judge::Judgement;
use crate::scan::Finding;
use crate::scan::anchor::DirId;
use crate::text;

/// The version of the journal line format this module writes.
pub const VERSION: u32 = 1;

/// The run of this process, made once: `20261130T165939.566Z-1082-3fa2c1d9` (the time of its
/// first use, the pid, and a random part, so that a pid used again never continues a run).
pub fn run_id() -> &'static str {
    static RUN: OnceLock<String> = OnceLock::new();
    RUN.get_or_init(|| {
        use std::hash::BuildHasher;
        let now = jiff::Timestamp::now();
        let pid = std::process::id();
        let random = std::collections::hash_map::RandomState::new().hash_one((
            pid,
            now.as_nanosecond(),
            std::thread::current().id(),
        ));
        format!(
            "{}-{pid}-{:08x}",
            now.strftime("%Y%m%dT%H%M%S%.3fZ"),
            random as u32
        )
    })
}

/// What kind of run of locksmith writes the journal lines of this process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    /// The terminal UI.
    Ui,
    /// `locksmith --scan --reclaim`.
    Scan,
    /// `locksmith start`.
    Start,
    /// `locksmith restore`.
    Restore,
}

impl Via {
    /// The name the journal records (`"via"`).
    pub fn as_str(self) -> &'static str {
        match self {
            Via::Ui => "ui",
            Via::Scan => "scan",
            Via::Start => "start",
            Via::Restore => "restore",
        }
    }

    /// What the run is, in a few words: `the UI`, `a --scan --reclaim`, ... (`None`: a line
    /// that does not say).
    pub fn describe(name: Option<&str>) -> &'static str {
        match name {
            Some("ui") => "the UI",
            Some("scan") => "a --scan --reclaim",
            Some("start") => "a locksmith start",
            Some("restore") => "a locksmith restore",
            _ => "a run that did not say what it was",
        }
    }
}

static VIA: OnceLock<Via> = OnceLock::new();

/// Says what kind of run this process is, before it writes its first journal line (the first
/// call wins); a process that never says writes lines that name no kind (no UI's).
pub fn set_via(via: Via) {
    let _ = VIA.set(via);
}

/// A batch of reclaims in this run: the locks one reclaim pass removes (one `--scan
/// --reclaim`, one `d`, one `D`), numbered from 1 in the order the passes start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Batch(pub u64);

impl Batch {
    /// A new batch of this run.
    pub fn next() -> Batch {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        Batch(NEXT.fetch_add(1, Ordering::Relaxed))
    }
}

/// What happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Event {
    /// A lock was removed (with a copy in `saved_to`, or none and `not_saved` says why).
    #[default]
    Reclaim,
    /// The checks passed but the removal failed; nothing was removed. When the reclaim line
    /// was written first (a batch makes its lines durable before its removals), `cancels`
    /// names it.
    ReclaimFailed,
    /// A reclaimed lock was put back (`restores` names the entry).
    Restore,
}

impl Event {
    pub fn as_str(self) -> &'static str {
        match self {
            Event::Reclaim => "reclaim",
            Event::ReclaimFailed => "reclaim-failed",
            Event::Restore => "restore",
        }
    }
}

/// What a removed lock was, so that it can be put back exactly.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Meta {
    /// `file`, `symlink` or `dir`.
    pub kind: String,
    /// Permission bits (with set-id and sticky bits).
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
    /// Modification time: seconds since the epoch and nanoseconds.
    pub mtime: i64,
    pub mtime_nsec: u32,
    /// Apparent size in bytes.
    pub size: u64,
}

impl Meta {
    #[allow(clippy::unnecessary_cast)]
    pub fn of(st: &rustix::fs::Stat) -> Meta {
        use rustix::fs::FileType;
        let kind = match FileType::from_raw_mode(st.st_mode) {
            FileType::RegularFile => "file",
            FileType::Symlink => "symlink",
            FileType::Directory => "dir",
            _ => "other",
        };
        Meta {
            kind: kind.into(),
            mode: (st.st_mode as u32) & 0o7777,
            uid: st.st_uid,
            gid: st.st_gid,
            mtime: st.st_mtime as i64,
            mtime_nsec: st.st_mtime_nsec as u32,
            size: st.st_size as u64,
        }
    }

    /// For content whose file could not be looked at: a file of ours, 0644, mtime now.
    pub fn unknown(size: u64) -> Meta {
        let now = jiff::Timestamp::now();
        Meta {
            kind: "file".into(),
            mode: 0o644,
            uid: rustix::process::geteuid().as_raw(),
            gid: rustix::process::getegid().as_raw(),
            mtime: now.as_second(),
            mtime_nsec: now.subsec_nanosecond().max(0) as u32,
            size,
        }
    }
}

/// One line of the journal.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Entry {
    pub version: u32,
    /// Unique and sortable (time, process, sequence); what `locksmith restore ENTRY` takes.
    /// Lines of older versions, which had none, get `line-N`.
    pub id: String,
    /// The run that wrote the line ([`run_id`]). Lines of older versions, which had none, are
    /// each a run of their own: their id.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub run: String,
    /// What kind of run wrote it ([`Via::as_str`]); absent in lines of older versions and of
    /// processes that did not say.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub via: Option<String>,
    /// For a reclaim (or a reclaim that failed): its [`Batch`] in the run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub batch: Option<u64>,
    /// RFC 3339.
    pub time: String,
    pub event: Event,
    /// The lock's path ([`text::json_path`]; [`Entry::path_buf`] gets the bytes back).
    pub path: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dialect: Option<String>,
    /// The verdict at the moment of removal.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verdict: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub evidence: Vec<String>,
    /// What proved it stale: each proof's rule id and the facts it used (the JSON report's
    /// `proofs`), for auditing removals. Empty for a lock removed by a person's decision.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub proofs: Vec<serde_json::Value>,
    /// Removed on a person's word (`d` on a lock not proven stale, `--force`), not by proof.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub forced: bool,
    /// For a lock directory: the small records it held (`pid`, `owner`, ...), removed with it
    /// and put back by `restore`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub members: Vec<Member>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub owner: Option<serde_json::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unsaved_changes: Option<bool>,
    /// What the lock was (type, mode, owner, mtime).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Size of the copy's content (the file's, the link text's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    /// Where the copy is ([`text::json_path`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub saved_to: Option<String>,
    /// Where in `saved_to` the copy starts, when it shares that file with the other copies of
    /// its group (`size` bytes from there); absent when the copy is the whole file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub saved_offset: Option<u64>,
    /// Why no copy was kept (removed without one because the user asked).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_saved: Option<String>,
    /// The (device, inode) of every directory from `/` (inside a container: from its root
    /// directory) down to the lock's own, as reclaim reached them; empty when they could not
    /// be told (a symlink on the way to the scan root), and in lines of older versions.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub dirs: Vec<DirId>,
    /// For a lock removed inside a proven container: which one, and its path there.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub container: Option<InContainer>,
    /// For a restore: the id of the reclaim entry put back.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub restores: Option<String>,
    /// For a reclaim that failed after its reclaim line was on disk: the id of that line,
    /// which removed nothing (the lock is where it was; `restore` never offers it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cancels: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A record inside a removed lock directory, with its metadata and its bytes.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Member {
    /// Its name ([`text::json_path`]).
    pub name: String,
    pub meta: Meta,
    /// Its content, coded as [`text::json_path`] codes paths (lossless for any bytes).
    pub content: String,
}

impl Member {
    /// The member's name as bytes.
    pub fn name_os(&self) -> std::ffi::OsString {
        text::path_from_json(&self.name)
            .unwrap_or_else(|| PathBuf::from(&self.name))
            .into_os_string()
    }

    /// The member's content as bytes.
    pub fn bytes(&self) -> Vec<u8> {
        use std::os::unix::ffi::OsStringExt;
        text::path_from_json(&self.content)
            .map(|p| p.into_os_string().into_vec())
            .unwrap_or_else(|| self.content.clone().into_bytes())
    }
}

/// A container a lock was removed in: the runtime's identity of it (never its own word, see
/// `probe::containers`), and the lock's path as the container sees it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct InContainer {
    pub runtime: String,
    pub id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The lock's path inside ([`text::json_path`]).
    pub path: String,
}

impl InContainer {
    /// The lock's path inside, as bytes.
    pub fn path_buf(&self) -> PathBuf {
        text::path_from_json(&self.path).unwrap_or_else(|| PathBuf::from(&self.path))
    }

    /// `container web-1 (podman 3f2a…)`.
    pub fn describe(&self) -> String {
        crate::verdict::ContainerId {
            runtime: self.runtime.clone(),
            id: self.id.clone(),
            name: self.name.clone(),
        }
        .describe()
    }
}

impl Entry {
    /// The lock's path as bytes (`None` if `path` is not a [`text::json_path`] string).
    pub fn path_buf(&self) -> PathBuf {
        text::path_from_json(&self.path).unwrap_or_else(|| PathBuf::from(&self.path))
    }

    /// A new entry of this version and this run, stamped now.
    pub fn new(id: String, event: Event, path: &Path) -> Entry {
        Entry {
            version: VERSION,
            id,
            run: run_id().to_string(),
            via: VIA.get().map(|v| v.as_str().to_string()),
            time: jiff::Timestamp::now().to_string(),
            event,
            path: text::json_path(path),
            ..Entry::default()
        }
    }
}

/// The entry for a lock about to be removed in `batch` (judgement filled in at commit).
pub(super) fn reclaim_entry(id: String, f: &Finding, meta: Meta, batch: Batch) -> Entry {
    let mut e = Entry::new(id, Event::Reclaim, &f.path);
    e.batch = Some(batch.0);
    e.dialect = Some(f.dialect.to_string());
    e.meta = Some(meta);
    set_judgement(&mut e, &f.judgement);
    if let Some(anchor) = &f.anchor {
        e.dirs = dirs_from_top(anchor);
    }
    if let Some((pid, inside)) = crate::probe::containers::proc_root_path(&f.path) {
        e.container = crate::probe::containers::proven_container(pid).map(|c| InContainer {
            runtime: c.runtime,
            id: c.id,
            name: c.name,
            path: text::json_path(&inside),
        });
        if e.container.is_none() {
            // Not a container proven to be a runtime's: nothing can find it again.
            e.dirs.clear();
        }
    }
    e
}

/// [`crate::scan::Anchor::from_top`], with the part above the root (opened by name from `/`,
/// one directory at a time) looked at again at most every [`TOP_AGAIN`] for locks of the same
/// root: a reclaim of many locks does not walk it once per lock. An empty chain when it cannot
/// be told (`restore` then refuses to guess).
fn dirs_from_top(anchor: &crate::scan::Anchor) -> Vec<DirId> {
    use std::sync::Mutex;
    use std::time::Instant;
    /// The last root: its path, its own directory, the chain from the top to it, and when.
    type Top = (std::sync::Arc<Path>, DirId, Vec<DirId>, Instant);
    static LAST: Mutex<Option<Top>> = Mutex::new(None);
    let chain = anchor.chain();
    let Some(&first) = chain.first() else {
        return Vec::new();
    };
    let mut last = LAST.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((root, id, top, when)) = last.as_ref()
        && *root == anchor.root
        && *id == first
        && when.elapsed() < TOP_AGAIN
    {
        return top.iter().chain(&chain[1..]).copied().collect();
    }
    let Ok(all) = anchor.from_top() else {
        return Vec::new();
    };
    let top = all[..all.len() + 1 - chain.len()].to_vec();
    *last = Some((anchor.root.clone(), first, top, Instant::now()));
    all
}

/// How long the directories above a root, once looked at, serve for its locks.
const TOP_AGAIN: std::time::Duration = std::time::Duration::from_secs(1);

/// Records the judgement of the moment in `e`.
pub(super) fn set_judgement(e: &mut Entry, j: &Judgement) {
    e.verdict = Some(j.verdict().as_str().to_string());
    e.forced = j.verdict() != crate::verdict::Verdict::Stale;
    e.evidence = j.evidence.clone();
    e.proofs = j
        .proofs()
        .iter()
        .filter_map(|p| serde_json::to_value(p).ok())
        .collect();
    e.owner = j.owner.as_ref().and_then(|o| serde_json::to_value(o).ok());
    e.unsaved_changes = j.flag(crate::verdict::Flag::UNSAVED_CHANGES);
    e.time = jiff::Timestamp::now().to_string();
}

/// Parses the journal's text; lines that are not entries are skipped, entries without an id
/// (older versions) get `line-N`, and entries without a run are each a run of their own (their
/// id).
pub fn parse(text: &[u8]) -> Vec<Entry> {
    text.split(|&b| b == b'\n')
        .enumerate()
        .filter_map(|(i, line)| {
            let mut e: Entry = serde_json::from_slice(line).ok()?;
            if e.id.is_empty() {
                e.id = format!("line-{}", i + 1);
            }
            if e.run.is_empty() {
                e.run = e.id.clone();
            }
            Some(e)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_of_older_versions_are_each_a_run_of_their_own() {
        let text = br#"{"version":1,"time":"2026-01-01T00:00:00Z","event":"reclaim","path":"/a"}
{"version":1,"id":"x-1","time":"2026-01-01T00:00:01Z","event":"reclaim","path":"/b"}
not json
{"version":1,"id":"y-1","run":"r-1","batch":2,"time":"2026-01-01T00:00:02Z","event":"reclaim","path":"/c"}
"#;
        let e = parse(text);
        let runs: Vec<(&str, &str, Option<u64>)> = e
            .iter()
            .map(|e| (e.id.as_str(), e.run.as_str(), e.batch))
            .collect();
        assert_eq!(
            runs,
            [
                ("line-1", "line-1", None),
                ("x-1", "x-1", None),
                ("y-1", "r-1", Some(2))
            ]
        );
    }

    #[test]
    fn a_run_is_made_once_and_batches_follow_each_other() {
        assert_eq!(run_id(), run_id());
        let pid = std::process::id().to_string();
        let parts: Vec<&str> = run_id().split('-').collect();
        assert_eq!(parts.len(), 3, "{}", run_id());
        assert_eq!(parts[1], pid);
        assert_eq!(parts[2].len(), 8);
        let (a, b) = (Batch::next(), Batch::next());
        assert!(b.0 > a.0);
        let e = Entry::new("i".into(), Event::Restore, Path::new("/x"));
        assert_eq!(e.run, run_id());
    }
}
