//! `mkdir-lock`: a directory named `*.lock`, taken with `mkdir` (atomic everywhere, NFS
//! included): shell scripts (`mkdir /var/lock/job.lock || exit`), proper-lockfile, and many
//! others. It names no owner, unless a record inside does (`mkdir $L && echo $$ > $L/pid`).
//!
//! Liveness: a kernel lock on the directory or a process with it open proves it held; a
//! record inside naming a PID is judged by the PID rules. Otherwise nothing proves it stale
//! but an earlier boot: shell scripts never refresh their lock and may hold it for hours, and
//! a naming convention that other writers share is not a promise to refresh. A writer that
//! does refresh it (proper-lockfile's `update`) is declared in the configuration, with its
//! window (a declared dialect of format `existence`), and then its age is proof.
//!
//! What a person would look for with `pgrep -af` is said too: a running process that names the
//! directory in its command line (`backup.sh /var/lock/backup.lock`) or works in it. That is a
//! clue, an evidence line and never a rule: it proves nothing either way, never makes a lock
//! stale, and is what the "not proven" dialog shows beside the rest.
//!
//! A directory named `*.lock` that holds anything but a few small files (subdirectories, many
//! entries, large files: some package managers keep metadata in such directories), or that
//! holds dependency metadata (esy's `esy.lock/index.json`, a `.gitattributes`: see
//! [`super::not_locks::dependency_dir`]), is not a lock directory, and is not listed.

use std::path::Path;

use super::{Candidate, Dialect, DialectId, EntryKind, Windows, common};
use crate::judge::{Judgement, OwnerClaim, Said, When, Writers, fmt_ms};
use crate::probe::Snapshot;
use crate::verdict::Owner;

pub struct MkdirLock;

/// At most this many entries in a lock directory.
const MAX_MEMBERS: usize = 8;
/// A record inside is small.
const MAX_RECORD: u64 = 4096;

/// Names of records that say who holds a lock directory.
fn is_record_name(name: &str) -> bool {
    matches!(
        name,
        "pid" | "owner" | "lock" | "info" | "holder" | "lockinfo"
    ) || name.ends_with(".pid")
}

/// Whether a directory looks like a lock directory: a few small files at most, no
/// subdirectories. `None` when it cannot be listed.
fn lock_like(dir: &Path, snap: &Snapshot) -> Option<bool> {
    let members = snap.list_dir(dir, MAX_MEMBERS + 1).ok()?;
    if members.len() > MAX_MEMBERS {
        return Some(false);
    }
    for (_, m) in members {
        if m.is_dir() || (m.is_file() && m.len() > MAX_RECORD) {
            return Some(false);
        }
    }
    Some(true)
}

/// A record inside: `PID` or `PID HOST` on its first line.
fn parse_record(bytes: &[u8]) -> Option<(i64, Option<String>)> {
    let text = std::str::from_utf8(bytes).ok()?;
    let line = text.lines().next()?.trim();
    let (pid, host) = match line.split_once(char::is_whitespace) {
        Some((p, h)) => (p, Some(common::field(h.trim())).filter(|h| !h.is_empty())),
        None => (line, None),
    };
    Some((common::parse_pid(pid).ok()?, host))
}

/// At most this many processes that name a lock directory are said.
const MAX_NAMING: usize = 3;

/// The evidence lines of the running processes that name the lock directory `dir` in their
/// command line (an argument that is its path, as given or relative to the process's working
/// directory, or that holds its path, as `--lock=/var/lock/job.lock`) or that work in it or
/// below it: a clue for a person (the holder may be among them), never a proof.
fn naming_processes(dir: &Path, snap: &Snapshot) -> Vec<String> {
    use std::os::unix::ffi::OsStrExt;
    let path = dir.as_os_str().as_bytes();
    let mut out = Vec::new();
    let me = std::process::id() as i32;
    for p in snap.processes().iter().filter(|p| p.pid != me) {
        if out.len() == MAX_NAMING {
            out.push("(more processes name it: `pgrep -af` lists them)".to_string());
            break;
        }
        let names = p.cmd.iter().skip(1).any(|a| {
            let arg = Path::new(a);
            let resolved = match (&p.cwd, arg.is_relative()) {
                (Some(cwd), true) => cwd.join(arg),
                _ => arg.to_path_buf(),
            };
            // Compared as written (`.` and a trailing `/` left out): what the process was
            // told, not what a symlink on the way leads to.
            resolved.components().collect::<std::path::PathBuf>() == dir
                || a.as_bytes().windows(path.len()).any(|w| w == path)
        });
        let works_in = p.cwd.as_deref().is_some_and(|c| c.starts_with(dir));
        let name = crate::text::truncate(&p.name, 32);
        let line = match (names, works_in) {
            (true, _) => format!(
                "process {} ({name}) names this directory in its command line ({}): it may be \
                 its holder, which nothing here proves or rules out",
                p.pid,
                crate::text::truncate(&p.cmd.join(" "), 120)
            ),
            (false, true) => format!(
                "process {} ({name}) works in this directory (its working directory): it may be \
                 its holder, which nothing here proves or rules out",
                p.pid
            ),
            (false, false) => continue,
        };
        out.push(line);
    }
    out
}

impl Dialect for MkdirLock {
    fn id(&self) -> DialectId {
        DialectId::MKDIR_LOCK
    }

    fn about(&self) -> super::About {
        super::About {
            writer: "shell scripts (`mkdir LOCK || exit`), proper-lockfile, and many others",
            programs: &[],
            found_as: "a directory named `*.lock` holding at most a few small files (a directory of package metadata so named, esy's `esy.lock/`, is not one)",
            judged_by: "a kernel lock or an opener: live; a record inside (`pid`, `*.pid`, `owner`): the PID; else unknown however old (stale only from an earlier boot); a writer that refreshes it is declared with its window. A process naming the directory in its command line is a clue in the evidence, never a proof",
            rules: &["pid-gone", "pid-reused", "earlier-boot"],
            source: None,
        }
    }

    fn patterns(&self) -> &'static [&'static str] {
        &["*.lock"]
    }

    fn recognise(&self, c: &Candidate<'_>, snap: &Snapshot) -> bool {
        c.kind == EntryKind::Dir
            && c.file_name().as_encoded_bytes().ends_with(b".lock")
            && lock_like(c.path, snap) != Some(false)
            && !super::not_locks::dependency_dir(c.path, snap)
    }

    fn read(&self, c: &Candidate<'_>, snap: &Snapshot, _windows: &Windows) -> Said {
        if c.kind != EntryKind::Dir {
            return Judgement::unknown(
                "named like a lock, but its content is neither a PID nor anything else recognised",
            )
            .because(format!(
                "content starts with {}",
                common::excerpt(&c.content[..c.content.len().min(64)])
            ))
            .into();
        }
        let mut owner = Owner {
            detail: Some(format!(
                "lock directory, last touched {}",
                fmt_ms(c.mtime_ms())
            )),
            ..Owner::default()
        };
        let members = snap.list_dir(c.path, MAX_MEMBERS + 1).unwrap_or_default();
        let mut said = Said::default();
        for (name, meta) in members
            .iter()
            .filter(|(n, m)| is_record_name(n) && m.is_file())
        {
            let Some(bytes) = snap.read_small(&c.path.join(name), MAX_RECORD as usize) else {
                continue;
            };
            let Some((pid, host)) = parse_record(&bytes) else {
                continue;
            };
            owner.pid.get_or_insert(pid);
            if owner.hostname.is_none() {
                owner.hostname.clone_from(&host);
            }
            said = said.claim(
                OwnerClaim::pid(pid, Writers::ANY)
                    .host(host)
                    .written(Some(meta.ctime_ms()))
                    .label(format!(
                        "the record {} inside",
                        crate::text::truncate(name, 64)
                    )),
            );
        }
        for line in naming_processes(c.path, snap) {
            said = said.note(When::Always, line);
        }
        if !members.is_empty() && owner.pid.is_none() {
            owner.detail = Some(format!(
                "lock directory holding {} entr{} but no PID record, last touched {}",
                members.len(),
                if members.len() == 1 { "y" } else { "ies" },
                fmt_ms(c.mtime_ms())
            ));
        }
        said.owner(owner)
    }
}
