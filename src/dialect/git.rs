//! `git`: the lock files git takes around every update of a repository file — `index.lock`,
//! `HEAD.lock`, `config.lock`, `packed-refs.lock`, `refs/**/*.lock` — which hold the new
//! content being written (an index starts with `DIRC`, a ref lock holds a hash, many are
//! empty). They name no owner. Newer git (`core.lockfilePid`) writes a companion
//! `NAME~pid.lock` holding `pid N`. `git gc` keeps `gc.pid` (`PID HOSTNAME`) while it runs.
//!
//! A ref transaction that deletes a packed ref, or `git pack-refs`, also writes the new
//! `packed-refs` as `packed-refs.new` while it holds `packed-refs.lock` (`refs/packed-backend.c`:
//! `write_with_updates` makes it with `create_tempfile`, `O_CREAT|O_EXCL`, and renames it over
//! `packed-refs` when the transaction commits). A git killed in between leaves both, and once
//! the `.lock` files are gone every later rewrite still fails: "unable to create file
//! .git/packed-refs.new: File exists". `packed-refs.new` is judged with its lock, by the same
//! condition (git at work in the repository, anyone with the lock open), so that a reclaim
//! removes what git refuses to overwrite along with the lock.
//!
//! Liveness: a kernel lock or a process with the file open; the PID of the companion file; a
//! git process working in the repository — its working directory (or `GIT_DIR`, or a
//! directory its command line names) inside the work tree, a linked worktree or the git
//! directory, compared by inode so that symlinks and containers do not hide it (`git commit`
//! waiting in its editor keeps `index.lock` without holding it open). git itself says when
//! such a lock may be removed: "if no other git process is currently running". The judge
//! checks exactly that ([`crate::judge::Contract`]): no git, known by its executable, at work
//! in the repository, nobody with a file of the git directory open (libgit2 and JGit write
//! git's locks too), every process visible, and older than [`Windows::git_min_age_secs`].

use std::path::{Path, PathBuf};

use super::common;
use super::message::Message;
use super::{Candidate, Dialect, DialectId, EntryKind, Windows};
use crate::judge::{Contract, Judgement, OwnerClaim, Placed, Said, Scope, When, Writers};
use crate::probe::{FileKey, Snapshot};
use crate::verdict::Owner;

pub struct Git;

/// Programs that take git locks and work in the repository they lock: git and its helpers
/// (`git-remote-https`, ...), and Jujutsu, which writes git's locks through gitoxide.
pub const GITS: &[&str] = &["git", "git-*", "jj"];

const PATTERNS: &[&str] = &[
    "index.lock",
    "HEAD.lock",
    "*~pid.lock",
    "**/.git/**/*.lock",
    "**/*.git/**/*.lock",
    "**/.git/gc.pid",
    "**/*.git/gc.pid",
    "**/.git/packed-refs.new",
    "**/*.git/packed-refs.new",
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

/// `packed-refs.new`: the new `packed-refs` a transaction writes under `packed-refs.lock`.
fn is_new_packed_refs(c: &Candidate<'_>) -> bool {
    c.file_name() == "packed-refs.new"
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
    /// Finds the repository of a lock path from its ancestors.
    pub fn of(lock: &Path, snap: &Snapshot) -> Option<Repo> {
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
        snap.lstat(&dir.join("HEAD"))
            .is_ok_and(|m| m.is_file())
            .then(|| Repo {
                git_dir: dir.to_path_buf(),
                work_tree: None,
            })
    }

    /// Whether a lock of this repository is git's: the git directory is one (`HEAD`, `objects/`
    /// and `refs/` in it, what git itself asks of a directory before it takes it for one), and
    /// the lock is shaped as git writes it there (an index lock empty or a new index, `DIRC`;
    /// a ref's lock empty, a hash or a symbolic ref). `Err` says what is not.
    fn placed(&self, c: &Candidate<'_>, snap: &Snapshot) -> Result<Placed, String> {
        let head = snap.lstat(&self.git_dir.join("HEAD"));
        let dir = |name: &str| {
            snap.stat(&self.git_dir.join(name))
                .is_ok_and(|m| m.is_dir())
        };
        if !head.is_ok_and(|m| m.is_file() || m.is_symlink()) || !dir("objects") || !dir("refs") {
            return Err(format!(
                "{} is no git directory (git's own test: HEAD, objects/ and refs/)",
                common::field(&self.git_dir.to_string_lossy())
            ));
        }
        let name = c.file_name().as_encoded_bytes();
        let under_refs = c
            .path
            .strip_prefix(&self.git_dir)
            .is_ok_and(|rest| rest.starts_with("refs"));
        let hash = |b: &[u8]| {
            let t = b.trim_ascii();
            (t.len() == 40 || t.len() == 64) && t.iter().all(u8::is_ascii_hexdigit)
        };
        let shape = if name == b"index.lock" || name.ends_with(b"/index.lock") {
            if c.content.is_empty() || c.content.starts_with(b"DIRC") {
                "an index lock (empty, or a new index: DIRC)"
            } else {
                return Err("an index lock holds an index (DIRC), and this one does not".into());
            }
        } else if under_refs || name == b"HEAD.lock" || name.ends_with(b"_HEAD.lock") {
            if c.content.is_empty() || hash(c.content) || c.content.starts_with(b"ref: ") {
                "a ref's lock (empty, a hash or a symbolic ref)"
            } else {
                return Err(
                    "a ref's lock holds a hash or a symbolic ref, and this one does not".into(),
                );
            }
        } else {
            "a lock of a file git rewrites (its new content)"
        };
        Ok(Placed::by(format!(
            "{shape} in the git directory {} (HEAD, objects/, refs/)",
            common::field(&self.git_dir.to_string_lossy())
        )))
    }

    /// The directories a git process working on this repository has its working directory
    /// (or `GIT_DIR`) under: the git directory, the main work tree and every linked worktree
    /// (from `worktrees/*/gitdir`). Nearest to `lock` first: a lock of a linked worktree's
    /// (`worktrees/NAME/index.lock`) puts that worktree and its git directory before the rest.
    fn roots(&self, lock: &Path, snap: &Snapshot) -> Vec<PathBuf> {
        let worktrees = self.git_dir.join("worktrees");
        let own = lock
            .strip_prefix(&worktrees)
            .ok()
            .and_then(|rest| rest.components().next())
            .map(|c| c.as_os_str().to_os_string());
        let mut linked: Vec<(bool, PathBuf)> = Vec::new();
        if let Ok(wts) = snap.list_dir(&worktrees, 256) {
            for (name, _) in wts {
                let gitdir = worktrees.join(&name).join("gitdir");
                if let Some(text) = snap.read_small(&gitdir, 4096) {
                    let dot_git = PathBuf::from(String::from_utf8_lossy(&text).trim());
                    if let Some(tree) = dot_git.parent() {
                        let mine = own.as_deref() == Some(std::ffi::OsStr::new(&name));
                        linked.push((mine, tree.to_path_buf()));
                    }
                }
            }
        }
        let mut dirs: Vec<PathBuf> = Vec::new();
        if let Some(name) = &own {
            dirs.extend(linked.iter().filter(|(o, _)| *o).map(|(_, t)| t.clone()));
            dirs.push(worktrees.join(name));
        }
        dirs.push(self.git_dir.clone());
        dirs.extend(self.work_tree.clone());
        dirs.extend(linked.into_iter().filter(|(o, _)| !*o).map(|(_, t)| t));
        dirs
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
    lock_meta: &crate::probe::Stat,
    snap: &Snapshot,
) -> Option<Result<(Vec<u8>, i64), String>> {
    let meta = match snap.lstat(path) {
        Ok(m) if m.is_file() => m,
        Ok(_) => return None,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
        Err(e) => return Some(Err(format!("its pid file cannot be read: {e}"))),
    };
    if let (Some(pid_born), Some(lock_born)) = (meta.birth_ms, lock_meta.birth_ms)
        && pid_born + 1000 < lock_born
    {
        return None;
    }
    Some(
        snap.read_small(path, super::CONTENT_PREFIX)
            .map(|bytes| (bytes, meta.ctime_ms()))
            .ok_or_else(|| "its pid file cannot be read".to_string()),
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

/// What git prints when it finds one of its locks taken (its own translations too).
const MESSAGES: &[Message] = &[
    Message::en(
        "git",
        r"Unable to create '(?P<path>[^'\n]+)': File exists",
        &["{path}"],
        "fatal: Unable to create '/src/app/.git/index.lock': File exists.",
    ),
    Message::en(
        "git",
        r"could not lock config file (?P<file>[^\s:]+)",
        &["{file}.lock"],
        "error: could not lock config file .git/config: File exists",
    ),
    Message::en(
        "git",
        r"Another git process seems to be running in this repository",
        &["^.git/index.lock"],
        "Another git process seems to be running in this repository, e.g.",
    ),
    Message::tr(
        "de",
        "git",
        r"Konnte '(?P<path>[^'\n]+)' nicht erstellen",
        &["{path}"],
        "Schwerwiegend: Konnte '/src/app/.git/index.lock' nicht erstellen: Die Datei existiert bereits.",
    ),
    Message::tr(
        "fr",
        "git",
        r"Impossible de créer '(?P<path>[^'\n]+)'",
        &["{path}"],
        "fatal : Impossible de créer '/src/app/.git/index.lock' : Le fichier existe.",
    ),
    Message::tr(
        "es",
        "git",
        r"No se pudo crear '(?P<path>[^'\n]+)'",
        &["{path}"],
        "fatal: No se pudo crear '/src/app/.git/index.lock': El archivo existe.",
    ),
    Message::tr(
        "it",
        "git",
        r"Impossibile creare '(?P<path>[^'\n]+)'",
        &["{path}"],
        "fatal: Impossibile creare '/src/app/.git/index.lock': File esistente.",
    ),
];

impl Dialect for Git {
    fn id(&self) -> DialectId {
        DialectId::GIT
    }

    fn about(&self) -> super::About {
        super::About {
            writer: "git (and programs writing git's locks through libgit2)",
            programs: &["git", "libgit2"],
            found_as: "`index.lock`, `HEAD.lock`, `config.lock`, `packed-refs.lock`, `refs/**/*.lock` in a real git directory (HEAD, objects/, refs/), empty or holding the new content (an index starts with `DIRC`); `NAME~pid.lock` (`pid N`), `gc.pid` (`PID HOST`); `packed-refs.new`, which git refuses to overwrite",
            judged_by: "git's own condition, \"if no other git process is currently running\": a git working in that repository, or anyone with a file of the git directory open: live or unknown; none, older than 2 s: stale. `~pid.lock` and `gc.pid` by their PID",
            rules: &["writer-absent", "pid-gone", "pid-reused", "earlier-boot"],
            source: Some("git `lockfile.c`, `refs/packed-backend.c`"),
        }
    }

    fn patterns(&self) -> &'static [&'static str] {
        PATTERNS
    }

    fn messages(&self) -> &'static [Message] {
        MESSAGES
    }

    fn recognise(&self, c: &Candidate<'_>, snap: &Snapshot) -> bool {
        c.kind == EntryKind::File
            && (c.file_name().as_encoded_bytes().ends_with(b".lock")
                || is_gc_pid(c)
                || is_new_packed_refs(c))
            && Repo::of(c.path, snap).is_some()
    }

    fn read(&self, c: &Candidate<'_>, snap: &Snapshot, windows: &Windows) -> Said {
        if c.kind != EntryKind::File {
            return Judgement::unknown(format!(
                "named like a git lock but is {}, not a file",
                common::kind_name(c.kind)
            ))
            .into();
        }
        let Some(repo) = Repo::of(c.path, snap) else {
            return Judgement::unknown("named like a git lock but not inside a git directory")
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
            let (pid, host) = match parse_gc_pid(c.content) {
                Ok(v) => v,
                Err(why) => return Said::unparseable("git gc.pid", why),
            };
            let owner = Owner {
                pid: Some(pid),
                hostname: host.clone(),
                detail: Some(format!("git gc in repository {repo_name}")),
                ..Owner::default()
            };
            return Said::claims(owner)
                .claim(OwnerClaim::pid(pid, Writers::named(GITS)).host(host));
        }
        if is_new_packed_refs(c) {
            return new_packed_refs(c, &repo, &repo_name, snap, windows);
        }
        let recorded = match recorded_pid(c, snap) {
            Ok(r) => r,
            Err((what, why)) => return Said::unparseable(what, why),
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
        let mut said = Said::claims(owner);
        if let Some(pid) = recorded.pid {
            said = said.claim(
                OwnerClaim::pid(pid, Writers::named(GITS))
                    .written(Some(recorded.written_ms))
                    .label(format!("git recorded the lock's owner as PID {pid}")),
            );
        }
        match repo.placed(c, snap) {
            Ok(placed) => said.claim(contract(c.path, &repo, &repo_name, snap, windows, placed)),
            // Not git's by place and shape: git's condition for removing it says nothing.
            Err(why) => said.note(When::Always, format!("named like a git lock, but {why}")),
        }
    }
}

/// git's own condition for removing `lock`, a lock of `repo`.
fn contract(
    lock: &Path,
    repo: &Repo,
    repo_name: &str,
    snap: &Snapshot,
    windows: &Windows,
    placed: Placed,
) -> Contract {
    Contract {
        placed,
        writer: Writers::named(GITS),
        what: "git",
        at: repo_name.to_string(),
        says: "git's own message: \"if no other git process is currently running, remove the file manually\"".into(),
        place: repo.git_dir.clone(),
        scope: Scope::Dirs {
            dirs: repo.roots(lock, snap),
            named: command_line_dirs,
            env: &["GIT_DIR"],
        },
        min_hold_ms: Windows::ms(windows.git_min_age_secs),
    }
}

/// `packed-refs.new`, judged with `packed-refs.lock`, the lock it was written under.
fn new_packed_refs(
    c: &Candidate<'_>,
    repo: &Repo,
    repo_name: &str,
    snap: &Snapshot,
    windows: &Windows,
) -> Said {
    let lock = c.path.with_file_name("packed-refs.lock");
    let placed = match repo.placed(c, snap) {
        Ok(p) => p,
        Err(why) => {
            return Judgement::unknown(format!(
                "named like git's new packed-refs, but {why}: whose it is cannot be told"
            ))
            .into();
        }
    };
    let owner = Owner {
        detail: Some(format!(
            "the new packed-refs of a ref transaction (repository {repo_name})"
        )),
        ..Owner::default()
    };
    let mut said = Said::claims(owner)
        .claim(contract(c.path, repo, repo_name, snap, windows, placed))
        .note(
            When::IfStale,
            "git refuses to rewrite packed-refs while this file exists (\"unable to create file packed-refs.new: File exists\"), even once packed-refs.lock is gone: it goes with the lock",
        );
    match snap.lstat(&lock) {
        Ok(m) => {
            said = said.held_with(
                FileKey::of(&m),
                "packed-refs.lock (the lock it was written under)",
            )
        }
        Err(_) => {
            said = said.note(
                When::Always,
                "packed-refs.lock is gone: no git holds the lock this file was written under",
            )
        }
    }
    said
}

/// The PID git recorded for a lock (in its `~pid.lock` companion, or in this file when it is
/// one), and when it was written.
struct RecordedPid {
    pid: Option<i64>,
    written_ms: i64,
}

/// Reads the recorded PID; `Err` when the pid file cannot be read or, for a `~pid.lock`
/// itself, parsed: what could not be read as a lock, and why.
fn recorded_pid(c: &Candidate<'_>, snap: &Snapshot) -> Result<RecordedPid, (&'static str, String)> {
    let pid_file = if is_pid_file(c.path) {
        Some(Ok((c.content.to_vec(), c.meta.ctime_ms())))
    } else {
        companion(c.path).and_then(|p| companion_pid_file(&p, c.meta, snap))
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
            written_ms: c.meta.ctime_ms(),
        }),
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
        let snap = Snapshot::replay(crate::probe::Evidence::machine(0, 0));
        let r = Repo::of(Path::new("/w/proj/.git/refs/heads/main.lock"), &snap).unwrap();
        assert_eq!(r.git_dir, PathBuf::from("/w/proj/.git"));
        assert_eq!(r.work_tree, Some(PathBuf::from("/w/proj")));
        let bare = Repo::of(Path::new("/srv/proj.git/HEAD.lock"), &snap).unwrap();
        assert_eq!(bare.work_tree, None);
        assert_eq!(
            Repo::of(Path::new("/w/proj/.git/worktrees/wt/index.lock"), &snap)
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
