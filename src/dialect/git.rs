//! `git`: the lock files git takes around every update of a repository file — `index.lock`,
//! `HEAD.lock`, `config.lock`, `packed-refs.lock`, `refs/**/*.lock` — which hold the new
//! content being written (an index starts with `DIRC`, a ref lock holds a hash, many are
//! empty). They name no owner. Newer git (`core.lockfilePid`) writes a companion
//! `NAME~pid.lock` holding `pid N`. `git gc` keeps `gc.pid` (`PID HOSTNAME`) while it runs.
//!
//! Liveness: a kernel lock or a process with the file open; the PID of the companion file; a
//! git process working in the repository — its working directory (or `GIT_DIR`) inside the
//! work tree, a linked worktree or the git directory, compared by inode so that symlinks and
//! containers do not hide it (`git commit` waiting in its editor keeps `index.lock` without
//! holding it open). With none of those, on a local file system, a lock older than
//! [`Windows::git_min_age_secs`] is stale; the evidence lists the git processes checked.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use super::common;
use super::{Candidate, Decision, Dialect, DialectId, EntryKind, Windows};
use crate::evidence::{PidClaim, judge_pid};
use crate::probe::{HostFacts, PidState, ProcSummary, Snapshot};
use crate::verdict::{Judgement, Owner, Verdict};

pub struct Git;

/// Processes that take git locks and work in the repository they lock.
pub const GITS: &[&str] = &["git", "jj"];

const PATTERNS: &[&str] = &[
    "index.lock",
    "HEAD.lock",
    "*~pid.lock",
    "**/.git/**/*.lock",
    "**/*.git/**/*.lock",
    "**/.git/gc.pid",
    "**/*.git/gc.pid",
];

/// Parses `gc.pid`: `PID HOSTNAME` (git writes both; the host may be missing).
pub fn parse_gc_pid(content: &[u8]) -> Result<(i64, Option<String>), String> {
    let text = String::from_utf8_lossy(content);
    let line = text.lines().next().unwrap_or("").trim();
    let (pid, host) = match line.split_once(' ') {
        Some((p, h)) => (p, Some(h.trim())),
        None => (line, None),
    };
    let pid =
        common::parse_pid(pid).map_err(|why| format!("{why} (gc.pid holds \"PID HOSTNAME\")"))?;
    Ok((pid, host.filter(|h| !h.is_empty()).map(common::field)))
}

fn is_gc_pid(c: &Candidate<'_>) -> bool {
    c.file_name() == "gc.pid"
}

/// `gc.pid`: the PID (and host) of a running `git gc`.
fn judge_gc_pid(c: &Candidate<'_>, snap: &Snapshot, repo_name: &str) -> Decision {
    let (pid, host) = match parse_gc_pid(c.content) {
        Ok(v) => v,
        Err(why) => return common::unparseable("git gc.pid", why).into(),
    };
    let owner = Owner {
        pid: Some(pid),
        hostname: host.clone(),
        detail: Some(format!("git gc in repository {repo_name}")),
        ..Owner::default()
    };
    let claim = PidClaim {
        pid,
        hostname: host.as_deref(),
        expect: GITS,
        ..PidClaim::default()
    };
    Decision::owned(owner, common::pid_record(c, snap, "gc.pid", claim))
}

/// Where a lock lives: the git directory holding it and the directories git processes working
/// on it may sit in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repo {
    /// The (common) git directory: `.git`, or a bare `NAME.git`.
    pub git_dir: PathBuf,
    /// The main work tree, when the git directory is a `.git` inside one.
    pub work_tree: Option<PathBuf>,
}

impl Repo {
    /// Finds the repository of a lock path from its ancestors (no I/O).
    pub fn of(lock: &Path) -> Option<Repo> {
        for dir in lock.ancestors().skip(1) {
            let Some(name) = dir.file_name().map(|n| n.as_encoded_bytes()) else {
                break;
            };
            if name == b".git" {
                return Some(Repo {
                    git_dir: dir.to_path_buf(),
                    work_tree: dir.parent().map(Path::to_path_buf),
                });
            }
            if name.ends_with(b".git") {
                return Some(Repo {
                    git_dir: dir.to_path_buf(),
                    work_tree: None,
                });
            }
        }
        // A git directory with another name (`--separate-git-dir`): the lock's own directory
        // when it holds `HEAD` (one stat, only for `index.lock` / `HEAD.lock` by name).
        let dir = lock.parent()?;
        std::fs::symlink_metadata(dir.join("HEAD"))
            .is_ok_and(|m| m.is_file())
            .then(|| Repo {
                git_dir: dir.to_path_buf(),
                work_tree: None,
            })
    }

    /// The directories a git process working on this repository has its working directory
    /// (or `GIT_DIR`) under: the git directory, the main work tree and every linked worktree
    /// (from `worktrees/*/gitdir`).
    fn roots(&self) -> Vec<(PathBuf, u64, u64)> {
        let mut dirs: Vec<PathBuf> = vec![self.git_dir.clone()];
        dirs.extend(self.work_tree.clone());
        if let Ok(wts) = std::fs::read_dir(self.git_dir.join("worktrees")) {
            for wt in wts.flatten().take(256) {
                if let Ok(text) = std::fs::read_to_string(wt.path().join("gitdir")) {
                    let dot_git = PathBuf::from(text.trim());
                    if let Some(tree) = dot_git.parent() {
                        dirs.push(tree.to_path_buf());
                    }
                }
            }
        }
        dirs.into_iter()
            .filter_map(|d| {
                let m = std::fs::metadata(&d).ok()?;
                Some((d, m.dev(), m.ino()))
            })
            .collect()
    }
}

/// Whether the directory behind `start` (a `/proc/<pid>/cwd`-style path) is one of `roots`
/// or below one, walking up with `..` (inode comparison, up to 256 levels).
fn within(start: &Path, roots: &[(PathBuf, u64, u64)]) -> Option<bool> {
    let mut path = start.to_path_buf();
    let mut last: Option<(u64, u64)> = None;
    for _ in 0..256 {
        let m = std::fs::metadata(&path).ok()?;
        let id = (m.dev(), m.ino());
        if roots.iter().any(|(_, d, i)| (*d, *i) == id) {
            return Some(true);
        }
        if last == Some(id) {
            return Some(false); // reached the root
        }
        last = Some(id);
        path.push("..");
    }
    Some(false)
}

/// How a git process relates to the repository.
enum Seen {
    Inside(String),
    Outside(String),
    Unreadable,
    /// Exited since the process list was read.
    Gone,
}

fn place_of(p: &ProcSummary, roots: &[(PathBuf, u64, u64)], host: &HostFacts) -> Seen {
    let proc_dir = PathBuf::from(format!("/proc/{}", p.pid));
    if let Some(gd) = &p.git_dir {
        let base = if gd.is_absolute() {
            proc_dir
                .join("root")
                .join(gd.strip_prefix("/").unwrap_or(gd))
        } else {
            proc_dir.join("cwd").join(gd)
        };
        if within(&base, roots) == Some(true) {
            return Seen::Inside(format!("GIT_DIR {}", common::field(&gd.to_string_lossy())));
        }
    }
    for dir in command_line_dirs(&p.cmd) {
        let base = if dir.is_absolute() {
            proc_dir
                .join("root")
                .join(dir.strip_prefix("/").unwrap_or(&dir))
        } else {
            proc_dir.join("cwd").join(&dir)
        };
        if within(&base, roots) == Some(true) {
            return Seen::Inside(format!(
                "command line names {}",
                common::field(&dir.to_string_lossy())
            ));
        }
    }
    let cwd_text = p
        .cwd
        .as_deref()
        .map(|c| common::field(&c.to_string_lossy()))
        .unwrap_or_else(|| "?".into());
    match within(&proc_dir.join("cwd"), roots) {
        Some(true) => Seen::Inside(format!("cwd {cwd_text}")),
        Some(false) => Seen::Outside(format!("cwd {cwd_text}")),
        // Listed a moment ago: it may have exited (or be a zombie) since. A process that is
        // exiting has no working directory any more (ENOENT) before it becomes a zombie;
        // only a cwd we may not read (EACCES) leaves the question open.
        None => match crate::probe::process::probe(p.pid, host) {
            PidState::Absent | PidState::Zombie(_) => Seen::Gone,
            _ if std::fs::metadata(proc_dir.join("cwd"))
                .is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound) =>
            {
                Seen::Gone
            }
            _ => Seen::Unreadable,
        },
    }
}

/// The directories a git command line points at before its subcommand: `-C DIR` (cumulative),
/// `--git-dir[=]DIR` and `--work-tree[=]DIR` (relative ones under the `-C`s before them). A git
/// run as `git --git-dir=/srv/mirror.git fetch` from elsewhere works in that repository although
/// its working directory is not there (and git sets `GIT_DIR` only after it started).
pub fn command_line_dirs(cmd: &[String]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut base = PathBuf::new();
    let mut args = cmd.iter().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "-C" => {
                if let Some(d) = args.next() {
                    base = base.join(d);
                    out.push(base.clone());
                }
            }
            "--git-dir" | "--work-tree" => {
                if let Some(d) = args.next() {
                    out.push(base.join(d));
                }
            }
            // Options with a separate value.
            "-c" | "--config-env" | "--namespace" | "--exec-path" | "--super-prefix" => {
                args.next();
            }
            _ => {
                if let Some(d) = a
                    .strip_prefix("--git-dir=")
                    .or_else(|| a.strip_prefix("--work-tree="))
                {
                    out.push(base.join(d));
                } else if !a.starts_with('-') {
                    break; // the subcommand: what follows is its own
                }
            }
        }
    }
    out
}

/// Parses the content of a `NAME~pid.lock` file: `pid N`.
pub fn parse_pid_file(content: &[u8]) -> Result<i64, String> {
    let text = String::from_utf8_lossy(content);
    let rest = text
        .trim()
        .strip_prefix("pid ")
        .ok_or_else(|| format!("{} is not \"pid N\"", common::excerpt(content)))?;
    common::parse_pid(rest)
}

/// `NAME~pid.lock` → `NAME.lock`, and back.
fn companion(lock: &Path) -> Option<PathBuf> {
    let name = lock.file_name()?.to_str()?;
    if let Some(base) = name.strip_suffix("~pid.lock") {
        Some(lock.with_file_name(format!("{base}.lock")))
    } else {
        let base = name.strip_suffix(".lock")?;
        Some(lock.with_file_name(format!("{base}~pid.lock")))
    }
}

/// Reads the `~pid.lock` companion of a lock: its bytes and mtime. `None` when there is none,
/// or when it was made before the lock itself (a leftover of an older lock: git writes it
/// right after creating the lock).
fn companion_pid_file(
    path: &Path,
    lock_meta: &std::fs::Metadata,
) -> Option<Result<(Vec<u8>, i64), String>> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) if m.is_file() => m,
        Ok(_) => return None,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
        Err(e) => return Some(Err(format!("its pid file cannot be read: {e}"))),
    };
    if let (Ok(pid_born), Ok(lock_born)) = (meta.created(), lock_meta.created())
        && pid_born + std::time::Duration::from_secs(1) < lock_born
    {
        return None;
    }
    Some(
        super::read_prefix(path, &meta, super::CONTENT_PREFIX)
            .map(|(bytes, _)| (bytes, crate::probe::mtime_ms(&meta)))
            .map_err(|e| format!("its pid file cannot be read: {e}")),
    )
}

fn is_pid_file(path: &Path) -> bool {
    path.file_name()
        .is_some_and(|n| n.as_encoded_bytes().ends_with(b"~pid.lock"))
}

/// What the lock holds, for the owner's detail line.
fn describe_content(c: &Candidate<'_>) -> &'static str {
    if c.content.is_empty() {
        "empty"
    } else if c.content.starts_with(b"DIRC") {
        "a new index being written"
    } else if c.content.len() >= 40 && c.content[..40].iter().all(u8::is_ascii_hexdigit) {
        "a new ref value"
    } else if c.content.starts_with(b"ref: ") {
        "a new symbolic ref"
    } else {
        "new content being written"
    }
}

impl Dialect for Git {
    fn id(&self) -> DialectId {
        DialectId::GIT
    }

    fn patterns(&self) -> &'static [&'static str] {
        PATTERNS
    }

    fn recognise(&self, c: &Candidate<'_>) -> bool {
        c.kind == EntryKind::File
            && (c.file_name().as_encoded_bytes().ends_with(b".lock") || is_gc_pid(c))
            && Repo::of(c.path).is_some()
    }

    fn decide(&self, c: &Candidate<'_>, snap: &Snapshot, windows: &Windows) -> Decision {
        if c.kind != EntryKind::File {
            return Judgement::new(
                Verdict::Unknown,
                format!(
                    "named like a git lock but is {}, not a file",
                    common::kind_name(c.kind)
                ),
            )
            .into();
        }
        let Some(repo) = Repo::of(c.path) else {
            return Judgement::new(
                Verdict::Unknown,
                "named like a git lock but not inside a git directory",
            )
            .into();
        };
        let repo_name = common::field(
            &repo
                .work_tree
                .as_deref()
                .unwrap_or(&repo.git_dir)
                .to_string_lossy(),
        );
        if is_gc_pid(c) {
            return judge_gc_pid(c, snap, &repo_name);
        }
        let recorded = match recorded_pid(c) {
            Ok(r) => r,
            Err((what, why)) => return common::unparseable(what, why).into(),
        };
        let owner = Owner {
            pid: recorded.pid,
            detail: Some(if is_pid_file(c.path) {
                format!("pid file of a lock in repository {repo_name}")
            } else {
                format!("{} (repository {repo_name})", describe_content(c))
            }),
            ..Owner::default()
        };
        let j = held(c, snap)
            .or_else(|| judge_recorded_pid(c, snap, &recorded))
            .or_else(|| written_before_boot(c, snap))
            .unwrap_or_else(|| match Census::take(&repo, snap) {
                Some(census) => census.judge(c, snap, windows, &repo_name),
                None => Judgement::new(
                    Verdict::Unknown,
                    "the process list cannot be read, so git processes cannot be checked",
                ),
            });
        Decision::owned(owner, j)
    }
}

/// The PID git recorded for a lock (in its `~pid.lock` companion, or in this file when it is
/// one), and when it was written.
struct RecordedPid {
    pid: Option<i64>,
    written_ms: i64,
}

/// Reads the recorded PID; `Err` when the pid file cannot be read or, for a `~pid.lock`
/// itself, parsed: what could not be read as a lock, and why.
fn recorded_pid(c: &Candidate<'_>) -> Result<RecordedPid, (&'static str, String)> {
    let pid_file = if is_pid_file(c.path) {
        Some(Ok((c.content.to_vec(), c.mtime_ms())))
    } else {
        companion(c.path).and_then(|p| companion_pid_file(&p, c.meta))
    };
    match pid_file {
        Some(Ok((bytes, written_ms))) => match parse_pid_file(&bytes) {
            Ok(p) => Ok(RecordedPid {
                pid: Some(p),
                written_ms,
            }),
            Err(why) if is_pid_file(c.path) => Err(("git pid", why)),
            Err(_) => Ok(RecordedPid {
                pid: None,
                written_ms,
            }),
        },
        Some(Err(why)) => Err(("git", why)),
        None => Ok(RecordedPid {
            pid: None,
            written_ms: c.mtime_ms(),
        }),
    }
}

/// `live` when a kernel lock is held on the lock or a process has it open.
fn held(c: &Candidate<'_>, snap: &Snapshot) -> Option<Judgement> {
    common::kernel_live(snap, c.key(), "the lock").or_else(|| {
        common::open_live(snap, c.key(), |holders| {
            format!("the lock is open in {holders}")
        })
    })
}

/// The recorded PID by the PID rules, when they conclude anything.
fn judge_recorded_pid(
    c: &Candidate<'_>,
    snap: &Snapshot,
    recorded: &RecordedPid,
) -> Option<Judgement> {
    let pid = recorded.pid?;
    let claim = PidClaim {
        pid,
        written_ms: Some(recorded.written_ms),
        expect: GITS,
        ..PidClaim::default()
    };
    let mut j = judge_pid(&common::file_claim(c, claim), snap);
    if j.verdict == Verdict::Unknown {
        return None;
    }
    j.evidence
        .insert(0, format!("git recorded the lock's owner as PID {pid}"));
    Some(j)
}

/// `stale` when a lock on a local file system was written before this boot.
fn written_before_boot(c: &Candidate<'_>, snap: &Snapshot) -> Option<Judgement> {
    if c.fs.network {
        return None;
    }
    crate::evidence::written_before_boot(c.mtime_ms(), Some(c.fs), snap)
        .map(|line| Judgement::new(Verdict::Stale, line))
}

/// The git processes of this host, by where they work.
struct Census {
    /// Those working in the repository, with how that was seen.
    inside: Vec<String>,
    first_inside: Option<i32>,
    /// Those working elsewhere.
    outside: Vec<String>,
    /// Those whose working directory cannot be read.
    unreadable: Vec<String>,
}

impl Census {
    /// Places every git process; `None` when the process list cannot be read.
    fn take(repo: &Repo, snap: &Snapshot) -> Option<Census> {
        let procs = snap.processes();
        let me = std::process::id() as i32;
        if !procs.iter().any(|p| p.pid == me) {
            return None;
        }
        let roots = repo.roots();
        let mut census = Census {
            inside: Vec::new(),
            first_inside: None,
            outside: Vec::new(),
            unreadable: Vec::new(),
        };
        for p in procs.iter().filter(|p| common::proc_is(p, GITS)) {
            match place_of(p, &roots, &snap.host) {
                Seen::Inside(how) => {
                    census.first_inside.get_or_insert(p.pid);
                    census.inside.push(format!("{} ({how})", p.pid))
                }
                Seen::Outside(how) => census.outside.push(format!("{} ({how})", p.pid)),
                Seen::Unreadable => census.unreadable.push(p.pid.to_string()),
                Seen::Gone => {}
            }
        }
        Some(census)
    }

    /// `live` when a git works in the repository; `stale` when none does (none may, unseen)
    /// and the lock is older than git's start-up window.
    fn judge(
        &self,
        c: &Candidate<'_>,
        snap: &Snapshot,
        windows: &Windows,
        repo_name: &str,
    ) -> Judgement {
        if !self.inside.is_empty() {
            let mut j = Judgement::new(
                Verdict::Live,
                format!(
                    "a git process works in {repo_name}: {}",
                    self.inside.join(", ")
                ),
            );
            // The report's PID and COMMAND columns show the (first) git working there.
            j.process = self
                .first_inside
                .and_then(|pid| snap.pid(pid).facts().map(|f| snap.process_info(f)));
            return j;
        }
        if !self.unreadable.is_empty() {
            return Judgement::new(
                Verdict::Unknown,
                format!(
                    "the working directory of git process {} cannot be read: it may work in {repo_name}",
                    self.unreadable.join(", ")
                ),
            );
        }
        if c.fs.network {
            return Judgement::new(
                Verdict::Foreign,
                format!(
                    "on a network file system ({}): no git process here works in {repo_name}, but one on another machine may",
                    c.fs.kind
                ),
            );
        }
        let age = common::age_ms(c.mtime_ms(), snap);
        if age < Windows::ms(windows.git_min_age_secs) {
            return Judgement::new(
                Verdict::Unknown,
                format!(
                    "made {} ago, less than {} s: git may be just starting",
                    common::fmt_age(age),
                    windows.git_min_age_secs
                ),
            );
        }
        let mut j = Judgement::new(
            Verdict::Stale,
            format!("no git process works in {repo_name} ({})", self.checked()),
        );
        j.evidence
            .push("no process has the lock open and no kernel lock is held on it".into());
        j.evidence.push(format!(
            "last modified {} ago (older than {} s)",
            common::fmt_age(age),
            windows.git_min_age_secs
        ));
        j
    }

    /// The git processes checked, for the evidence of a stale lock.
    fn checked(&self) -> String {
        let outside = &self.outside;
        if outside.is_empty() {
            return "no git process runs on this host".to_string();
        }
        let shown: Vec<&str> = outside.iter().take(8).map(String::as_str).collect();
        let more = outside.len().saturating_sub(shown.len());
        format!(
            "checked {} git process{}: {}{}",
            outside.len(),
            if outside.len() == 1 { "" } else { "es" },
            shown.join(", "),
            if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_repository_directories_from_the_command_line() {
        let v = |args: &[&str]| {
            command_line_dirs(&args.iter().map(|s| s.to_string()).collect::<Vec<_>>())
        };
        assert_eq!(
            v(&["git", "--git-dir=/srv/m.git", "fetch", "--git-dir=/x"]),
            [PathBuf::from("/srv/m.git")]
        );
        assert_eq!(
            v(&[
                "git",
                "-C",
                "/w",
                "-C",
                "proj",
                "--git-dir",
                ".git",
                "status"
            ]),
            [
                PathBuf::from("/w"),
                PathBuf::from("/w/proj"),
                PathBuf::from("/w/proj/.git")
            ]
        );
        assert_eq!(
            v(&["git", "-c", "--git-dir=/no", "log"]),
            Vec::<PathBuf>::new()
        );
        assert!(v(&["git"]).is_empty());
    }

    #[test]
    fn finds_the_repository() {
        let r = Repo::of(Path::new("/w/proj/.git/refs/heads/main.lock")).unwrap();
        assert_eq!(r.git_dir, PathBuf::from("/w/proj/.git"));
        assert_eq!(r.work_tree, Some(PathBuf::from("/w/proj")));
        let bare = Repo::of(Path::new("/srv/proj.git/HEAD.lock")).unwrap();
        assert_eq!(bare.work_tree, None);
        assert_eq!(
            Repo::of(Path::new("/w/proj/.git/worktrees/wt/index.lock"))
                .unwrap()
                .git_dir,
            PathBuf::from("/w/proj/.git")
        );
    }

    #[test]
    fn pid_companions() {
        assert_eq!(parse_pid_file(b"pid 99999"), Ok(99999));
        assert!(parse_pid_file(b"99999").is_err());
        assert_eq!(
            companion(Path::new("/r/.git/index~pid.lock")),
            Some(PathBuf::from("/r/.git/index.lock"))
        );
        assert_eq!(
            companion(Path::new("/r/.git/index.lock")),
            Some(PathBuf::from("/r/.git/index~pid.lock"))
        );
    }
}
