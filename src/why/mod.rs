//! `locksmith why`: from a program's error message to its lock. People arrive with what the
//! program printed ("fatal: Unable to create '.../index.lock': File exists."), not with a path:
//! this module recognises the program by the messages its dialect declares
//! ([`crate::dialect::Dialect::messages`]), finds the lock where the message and the program's
//! defaults say it is ([`place`]), judges it as a scan does ([`crate::scan::judge_path`]), and
//! says what to do next ([`Step`]).
//!
//! Invariants: nothing here modifies anything (reclaiming is the caller's, through the
//! reclaim entry), and nothing here makes a verdict: a message only says where to look, and
//! the lock found is judged by the scanner's one judge. What the message says of the holder
//! (its PID, its host) only chooses between several locks found, never the verdict.

pub mod place;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use regex::Regex;

use crate::dialect::{self, DialectId, Message};
use crate::probe::Snapshot;
use crate::scan::{self, Finding, ScanError};
use crate::verdict::Verdict;

pub use place::{Context, Place};

/// How a program's message is piped in, as the help and the errors show it.
pub const PIPE_EXAMPLE: &str = "git commit 2>&1 | locksmith why";

/// Messages people bring, in a line, as the UI's prompt shows them.
pub const MESSAGE_EXAMPLES: &str = "(git's \"Unable to create ... index.lock\", PostgreSQL's \"lock file ... already \
     exists\", vim's E325, apt's \"Could not get lock\", ...)";

/// A message compiled: its dialect, its declaration and its expression.
struct Compiled {
    dialect: DialectId,
    message: &'static Message,
    regex: Regex,
}

/// Every dialect's messages, compiled once. A pattern that does not compile is left out (a
/// test checks that each does).
fn compiled() -> &'static [Compiled] {
    static ALL: OnceLock<Vec<Compiled>> = OnceLock::new();
    ALL.get_or_init(|| {
        dialect::registry()
            .iter()
            .flat_map(|d| d.messages().iter().map(move |m| (d.id(), m)))
            .filter_map(|(dialect, message)| {
                let regex = regex::RegexBuilder::new(message.pattern)
                    .multi_line(true)
                    .size_limit(1 << 20)
                    .build()
                    .ok()?;
                Some(Compiled {
                    dialect,
                    message,
                    regex,
                })
            })
            .collect()
    })
}

/// A program recognised by its message: what it said, and where its lock may be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recognition {
    /// The dialect whose messages matched.
    pub dialect: DialectId,
    /// The program (`git`, `apt`).
    pub program: &'static str,
    /// The language of the first message that matched (`en`, `de`).
    pub lang: &'static str,
    /// What the messages captured (`path`, `dir`, `pid`, `host`, ...): the first match of
    /// each name, its line breaks taken out (a terminal wraps a long path).
    pub captures: BTreeMap<&'static str, String>,
    /// The place templates of the messages that matched, in the order declared.
    pub templates: Vec<&'static str>,
    /// Where in the text its first message begins (recognitions are in this order).
    pub at: usize,
}

impl Recognition {
    /// The PID the message names.
    pub fn pid(&self) -> Option<i64> {
        self.captures.get("pid").and_then(|p| p.parse().ok())
    }

    /// The host the message names.
    pub fn host(&self) -> Option<&str> {
        self.captures.get("host").map(String::as_str)
    }

    /// Where the lock may be, in the order to try.
    pub fn places(&self, ctx: &Context) -> Vec<Place> {
        let mut out: Vec<Place> = Vec::new();
        for t in &self.templates {
            for p in place::expand(t, &self.captures, ctx) {
                if !out.contains(&p) {
                    out.push(p);
                }
            }
        }
        out
    }
}

/// The programs whose messages are in `text`, in the order they appear in it. A message with
/// no places (a line that only adds what it captures: vim's `process ID:`) recognises nothing
/// by itself.
pub fn recognise(text: &str) -> Vec<Recognition> {
    let mut found: Vec<Recognition> = Vec::new();
    for c in compiled() {
        let Some(caps) = c.regex.captures(text) else {
            continue;
        };
        let at = caps.get(0).map_or(0, |m| m.start());
        let i = match found
            .iter()
            .position(|r| r.dialect == c.dialect && r.program == c.message.program)
        {
            Some(i) => i,
            None => {
                found.push(Recognition {
                    dialect: c.dialect,
                    program: c.message.program,
                    lang: c.message.lang,
                    captures: BTreeMap::new(),
                    templates: Vec::new(),
                    at,
                });
                found.len() - 1
            }
        };
        let r = &mut found[i];
        if !c.message.places.is_empty() && r.templates.is_empty() {
            r.lang = c.message.lang;
            r.at = at;
        } else {
            r.at = r.at.min(at);
        }
        for name in dialect::message::CAPTURES {
            if let Some(m) = caps.name(name)
                && !m.as_str().trim().is_empty()
            {
                // A long path wrapped by the terminal is one path.
                r.captures
                    .entry(name)
                    .or_insert_with(|| m.as_str().trim().replace(['\n', '\r'], ""));
            }
        }
        for t in c.message.places {
            if !r.templates.contains(t) {
                r.templates.push(t);
            }
        }
    }
    found.retain(|r| !r.templates.is_empty());
    found.sort_by_key(|r| r.at);
    found
}

/// The answer to a message: whose it is, the lock found and how it was found.
#[derive(Debug, Clone)]
pub struct Answer {
    /// The program whose message it is (`None`: not a message locksmith knows).
    pub recognised: Option<Recognition>,
    /// The lock, judged.
    pub lock: Option<Finding>,
    /// Where the lock was looked for (the places of the message, or the paths it names).
    pub looked: Vec<String>,
    /// Paths that could not be examined.
    pub errors: Vec<ScanError>,
}

/// Answers a message: recognises its program, finds its lock and judges it (or, for a text
/// that no program's message matches, judges the paths it names). Reads the file system and
/// `snap`; modifies nothing.
pub fn answer(text: &str, ctx: &Context, snap: &Snapshot, config: &scan::Config) -> Answer {
    let recognised = recognise(text);
    let mut looked = Vec::new();
    let mut errors = Vec::new();
    for r in &recognised {
        let places = r.places(ctx);
        let mut found = Vec::new();
        for p in &places {
            looked.push(p.display());
            for path in p.find() {
                judge(&path, snap, config, &mut found, &mut errors);
            }
        }
        if let Some(lock) = best(found, r.pid(), r.host()) {
            return Answer {
                recognised: Some(r.clone()),
                lock: Some(lock),
                looked,
                errors,
            };
        }
    }
    if let Some(r) = recognised.first() {
        return Answer {
            recognised: Some(r.clone()),
            lock: None,
            looked,
            errors,
        };
    }
    // Not a message we know: the paths it names, if one of them is a lock.
    let mut found = Vec::new();
    for path in paths_in(text, ctx) {
        looked.push(path.to_string_lossy().into_owned());
        judge(&path, snap, config, &mut found, &mut errors);
    }
    Answer {
        recognised: None,
        lock: best(found, None, None),
        looked,
        errors,
    }
}

/// Judges `path` as a scan would judge it named alone; a lock is added to `found`.
fn judge(
    path: &Path,
    snap: &Snapshot,
    config: &scan::Config,
    found: &mut Vec<Finding>,
    errors: &mut Vec<ScanError>,
) {
    if found.iter().any(|f| f.path == path) {
        return;
    }
    match scan::judge_path(path, snap, config) {
        Ok(Some(f)) if f.path == path => found.push(f),
        Ok(_) => {}
        Err(e)
            if e.io_error()
                .is_some_and(|e| e.kind() == std::io::ErrorKind::NotFound) => {}
        Err(e) => errors.push(e),
    }
}

/// The lock a message is about, of those found (in the order of its places): the one whose
/// owner or holder is the PID it names, then the host it names, then one that is not `free`
/// (a free kernel-lock file blocks nobody), then the first.
fn best(found: Vec<Finding>, pid: Option<i64>, host: Option<&str>) -> Option<Finding> {
    let score = |f: &Finding| {
        let j = &f.judgement;
        let pids = j
            .owner
            .as_ref()
            .and_then(|o| o.pid)
            .into_iter()
            .chain(j.process.as_ref().map(|p| i64::from(p.pid)))
            .chain(j.holders.iter().map(|h| i64::from(h.pid)));
        let mut s = 0;
        if let Some(pid) = pid
            && pids.into_iter().any(|p| p == pid)
        {
            s += 4;
        }
        if let Some(host) = host
            && j.owner
                .as_ref()
                .and_then(|o| o.hostname.as_deref())
                .is_some_and(|h| h == host || h.split('/').next() == Some(host))
        {
            s += 2;
        }
        if j.verdict() != Verdict::Free {
            s += 1;
        }
        s
    };
    let mut best: Option<(i32, Finding)> = None;
    for f in found {
        let s = score(&f);
        if best.as_ref().is_none_or(|(b, _)| s > *b) {
            best = Some((s, f));
        }
    }
    best.map(|(_, f)| f)
}

/// The paths a text names, in order: absolute paths and `~/` paths, and any quoted text that
/// names something in the current directory.
pub fn paths_in(text: &str, ctx: &Context) -> Vec<PathBuf> {
    static WORD: OnceLock<Regex> = OnceLock::new();
    let word = WORD.get_or_init(|| {
        Regex::new(r#"'([^'\n]+)'|"([^"\n]+)"|«\s?([^»\n]+?)\s?»|»([^«\n]+)«|“([^”\n]+)”|‘([^’\n]+)’|`([^`\n]+)`|((?:~[\w.-]*)?/[^\s'"`«»“”‘’(),;]+)"#)
            .expect("the pattern compiles")
    });
    let mut out: Vec<PathBuf> = Vec::new();
    for caps in word.captures_iter(text).take(256) {
        let Some(m) = caps.iter().skip(1).flatten().next() else {
            continue;
        };
        let s = m.as_str().trim_end_matches(['.', ':', '!', '?']);
        let expanded = place::expand("{path}", &BTreeMap::from([("path", s.to_string())]), ctx);
        let Some(path) = expanded.first().and_then(Place::path) else {
            continue;
        };
        let quoted = caps.get(8).is_none();
        if (quoted && std::fs::symlink_metadata(&path).is_err()) || out.contains(&path) {
            continue;
        }
        out.push(path);
    }
    out
}

/// What to do next about the lock a message is about.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Step {
    /// `reclaim` (it is stale: remove it), `recover` (a swap file's unsaved changes first),
    /// `wait` (a live process holds it), `retry` (nobody holds it now, or it is gone),
    /// `decide` (foreign or unknown: what cannot be known and how to decide), `scan` (the
    /// message was not recognised, or its lock not found).
    pub action: &'static str,
    /// The advice, in a sentence or two (raw text: escape it for a terminal).
    pub text: String,
    /// The command to run, if there is one.
    pub command: Option<String>,
    /// The process to wait for or to stop.
    pub pid: Option<i64>,
}

/// The next step for an answer.
pub fn next_step(a: &Answer, snap: &Snapshot) -> Step {
    let program = a.recognised.as_ref().map(|r| r.program);
    let Some(f) = &a.lock else {
        return not_found(a);
    };
    let path = shell_word(&f.path);
    let j = &f.judgement;
    let step = |action, text: String, command: Option<String>, pid| Step {
        action,
        text,
        command,
        pid,
    };
    match j.verdict() {
        Verdict::Stale => match dialect::offered_before_reclaim(f.dialect, &f.path, &f.content, j) {
            Some(o) => step(
                o.action.verb,
                match o.command {
                    Ok(command) => format!(
                        "its owner is gone, but it holds {}: {} them first ({}), then remove it",
                        o.flag.label,
                        o.action.verb,
                        command.shown()
                    ),
                    Err(why) => format!(
                        "its owner is gone, but it holds {}, which are not to be {} here ({why}): removing it loses them",
                        o.flag.label,
                        o.action.past
                    ),
                },
                Some(format!("locksmith --scan --reclaim --include-unsaved {path}")),
                None,
            ),
            None => step(
                "reclaim",
                "its owner is gone: remove it (a copy is kept, and `locksmith restore` puts it back)".into(),
                Some(format!("locksmith --scan --reclaim {path}")),
                None,
            ),
        },
        Verdict::Live => {
            let (pid, who) = holder(f, snap);
            let who = who.unwrap_or_else(|| "its owner".into());
            let kill = pid.map(|p| format!(" (kill {p})")).unwrap_or_default();
            step(
                "wait",
                format!(
                    "{who} holds it and runs: wait for it to finish, or stop it{kill} before you run {} again. Removing the lock instead would let a second one in beside it",
                    program.unwrap_or("the program")
                ),
                None,
                pid,
            )
        }
        Verdict::Free => step(
            "retry",
            format!(
                "nobody holds it now: run {} again. Do not remove the file: it is locked, never removed, and a process waiting on it would be split from the next one",
                program.unwrap_or("the program")
            ),
            None,
            None,
        ),
        Verdict::Foreign => {
            let owner = j.owner.as_ref();
            let host = owner.and_then(|o| o.hostname.clone());
            let pid = owner.and_then(|o| o.pid);
            let asked = match (&host, pid) {
                (Some(h), Some(p)) => format!(
                    "Check there whether process {p} still runs on {h} (ssh {} ps -p {p}), or let locksmith ask: locksmith --scan --ask-hosts {path}. ",
                    shell_word(Path::new(h))
                ),
                _ => String::new(),
            };
            step(
                "decide",
                format!(
                    "its owner cannot be checked from here (see the evidence). {asked}If you know it is gone, remove it yourself"
                ),
                Some(format!("locksmith --scan --reclaim --force {path}")),
                pid,
            )
        }
        Verdict::Unknown => step(
            "decide",
            format!(
                "nothing proves its owner gone (see the evidence). Make sure no {} is at work on it; then remove it yourself",
                program.unwrap_or("program")
            ),
            Some(format!("locksmith --scan --reclaim --force {path}")),
            j.owner.as_ref().and_then(|o| o.pid),
        ),
    }
}

/// The next step when no lock was found: run the program again when its message named the
/// lock itself (it is gone), else list the locks.
fn not_found(a: &Answer) -> Step {
    let scan = |text: String| Step {
        action: "scan",
        text,
        command: Some("locksmith --scan .".to_string()),
        pid: None,
    };
    let Some(r) = &a.recognised else {
        return scan(
            "locksmith does not know this message, and it names no lock file: list the locks of \
             the directory where the program ran"
                .to_string(),
        );
    };
    let program = r.program;
    match (r.captures.get("path"), a.looked.first()) {
        (Some(_), Some(named)) => Step {
            action: "retry",
            text: format!(
                "this is {program}'s message, and the lock it names ({named}) is not there any \
                 more: run {program} again"
            ),
            command: None,
            pid: None,
        },
        _ => scan(format!(
            "this is {program}'s message, but no lock was found where {program} keeps it ({}): it \
             may be gone (run {program} again), or elsewhere: list the locks there",
            if a.looked.is_empty() {
                "the message does not say where".to_string()
            } else {
                a.looked.join(", ")
            }
        )),
    }
}

/// Who holds a live lock: its PID and `PID (command line)`, from the live process or the
/// first holder.
fn holder(f: &Finding, snap: &Snapshot) -> (Option<i64>, Option<String>) {
    let j = &f.judgement;
    let who = crate::report::table::Who::of(f);
    let pid = who.pid;
    let cmd = j
        .process
        .as_ref()
        .filter(|p| Some(i64::from(p.pid)) == pid && !p.cmd.is_empty())
        .map(|p| p.cmd.join(" "))
        .or_else(|| {
            let p = i32::try_from(pid?).ok()?;
            let facts = snap.pid(p).facts()?.clone();
            (!facts.cmdline.is_empty())
                .then(|| facts.cmdline.join(" "))
                .or(Some(facts.comm))
        })
        .or(who.command);
    let text = match (pid, cmd) {
        (Some(p), Some(c)) => Some(format!("process {p} ({})", crate::text::truncate(&c, 80))),
        (Some(p), None) => Some(format!("process {p}")),
        (None, _) => None,
    };
    (pid, text)
}

/// A path as one word of a shell command that is shown (escaped, then quoted when needed).
pub fn shell_word(path: &Path) -> String {
    crate::text::shell_quote(&crate::text::display_path(path))
}

#[cfg(test)]
mod tests;
