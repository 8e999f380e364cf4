//! `rehash`: the prototype shim of rbenv, pyenv, nodenv, goenv and plenv
//! (`$RBENV_ROOT/shims/.rbenv-shim`, `$PYENV_ROOT/shims/.pyenv-shim`, ...), which is also the
//! lock of their `rehash`.
//!
//! Format, from rbenv's `libexec/rbenv-rehash` (pyenv's `libexec/pyenv-rehash` and the other
//! ports are the same script): with the shell's `noclobber` set, `echo > .rbenv-shim` takes the
//! lock (it fails if the file exists), then the shim script is written into it and hard-linked
//! or copied for every executable; a trap removes it when the rehash exits. A rehash killed
//! with SIGKILL cannot run its trap: every later `rbenv rehash` (and every `gem install` and
//! `rbenv install` that rehashes) fails "rbenv: cannot rehash: ROOT/shims/.rbenv-shim exists"
//! (pyenv retries for `PYENV_REHASH_TIMEOUT`, 60 s, then says the same). The file names no
//! owner.
//!
//! Liveness: the writer's condition, its own message: no rehash may be running for that root.
//! The rehash is a shell script run by its interpreter (`bash .../libexec/rbenv-rehash`: its
//! name is the interpreter's, the script is its first argument), so a process running the
//! script `rbenv-rehash` (`pyenv-rehash`, ...) makes the lock `live`, unless the root its
//! `RBENV_ROOT` (`PYENV_ROOT`, ..., which `rbenv` exports to every subcommand) names, as that
//! process sees it, is another directory: a rehash of another root writes another lock. Otherwise
//! the judge checks the condition ([`crate::judge::Contract`]): no rbenv (pyenv, ...) process
//! by name with the root as its working directory or its `RBENV_ROOT` (`PYENV_ROOT`, ...),
//! nobody with a file of the shims directory open, every process visible, older than 2 s →
//! stale.

use std::path::{Path, PathBuf};

use super::message::Message;
use super::{Candidate, Dialect, DialectId, EntryKind, Windows, common};
use crate::judge::{Contract, Judgement, Placed, Said, Scope, When, Writers};
use crate::probe::{PidState, ProcSummary, Snapshot, places};
use crate::verdict::Owner;

pub struct Rehash;

const PATTERNS: &[&str] = &[".*env-shim"];

/// Each version manager: its shim's name, its programs (shell scripts, known by their names)
/// and the variable naming its root.
const MANAGERS: &[(&str, &[&str], &str)] = &[
    (".rbenv-shim", &["rbenv", "rbenv-*"], "rbenv"),
    (".pyenv-shim", &["pyenv", "pyenv-*"], "pyenv"),
    (".nodenv-shim", &["nodenv", "nodenv-*"], "nodenv"),
    (".goenv-shim", &["goenv", "goenv-*"], "goenv"),
    (".plenv-shim", &["plenv", "plenv-*"], "plenv"),
];

/// The variables the version managers export with their root.
const ROOT_VARS: &[&str] = &[
    "RBENV_ROOT",
    "PYENV_ROOT",
    "NODENV_ROOT",
    "GOENV_ROOT",
    "PLENV_ROOT",
];

fn manager(c: &Candidate<'_>) -> Option<(&'static [&'static str], &'static str)> {
    let name = c.file_name();
    let (_, programs, tool) = MANAGERS.iter().find(|(n, _, _)| name == *n)?;
    Some((programs, tool))
}

/// A process running the `TOOL-rehash` script (by its interpreter, or exec'd by its name) that
/// may rehash `root`: its `TOOL_ROOT` names `root` as it sees it, or is relative, or cannot be
/// read or placed.
fn rehash_running<'a>(snap: &'a Snapshot, tool: &str, root: &Path) -> Option<&'a ProcSummary> {
    let script = format!("{tool}-rehash");
    let var = format!("{}_ROOT", tool.to_uppercase());
    let root = snap.dir_ids(&[root.to_path_buf()]);
    let me = snap.self_pid();
    snap.processes().iter().find(|p| {
        p.pid != me
            && !matches!(snap.pid(p.pid), PidState::Absent | PidState::Zombie(_))
            && (p.name == script
                || p.cmd.iter().take(3).any(|a| {
                    Path::new(a)
                        .file_name()
                        .is_some_and(|n| n == script.as_str())
                }))
            && snap.environ_var(p.pid, &var).is_none_or(|theirs| {
                // A relative root is relative to where it started, not to the shims directory
                // the script works in: it may be ours.
                let theirs = Path::new(&theirs);
                root.is_empty()
                    || theirs.is_relative()
                    || snap.within(&places::seen_by(p.pid, theirs), &root) != Some(false)
            })
    })
}

fn in_shims(path: &Path) -> bool {
    path.parent()
        .and_then(|d| d.file_name())
        .is_some_and(|n| n == "shims")
}

/// No directory on the command line: the root is in the environment.
fn no_dirs(_: &[String]) -> Vec<PathBuf> {
    Vec::new()
}

/// What rbenv (pyenv, nodenv, ...) prints when its rehash lock is there.
const MESSAGES: &[Message] = &[Message::en(
    "rbenv",
    r"cannot rehash: (?P<path>/\S+) exists",
    &["{path}"],
    "rbenv: cannot rehash: /home/me/.rbenv/shims/.rbenv-shim exists",
)];

impl Dialect for Rehash {
    fn id(&self) -> DialectId {
        DialectId::REHASH
    }

    fn about(&self) -> super::About {
        super::About {
            writer: "rbenv, pyenv, nodenv, goenv and plenv (their `rehash`)",
            programs: &["rbenv", "pyenv", "nodenv", "goenv", "plenv"],
            found_as: "the prototype shim `shims/.rbenv-shim` (`.pyenv-shim`, `.nodenv-shim`, `.goenv-shim`, `.plenv-shim`)",
            judged_by: "a process running the rehash script for that root: live; else the tool's condition (\"cannot rehash: ... exists\"): no rbenv working on that root, nobody with a file of `shims/` open, every process visible, older than 2 s: stale",
            rules: &["writer-absent"],
            source: Some("rbenv `libexec/rbenv-rehash`, pyenv `libexec/pyenv-rehash`"),
        }
    }

    fn patterns(&self) -> &'static [&'static str] {
        PATTERNS
    }

    fn messages(&self) -> &'static [Message] {
        MESSAGES
    }

    fn recognise(&self, c: &Candidate<'_>, _snap: &Snapshot) -> bool {
        c.kind == EntryKind::File && manager(c).is_some() && in_shims(c.path)
    }

    fn read(&self, c: &Candidate<'_>, snap: &Snapshot, _windows: &Windows) -> Said {
        let Some((programs, tool)) = manager(c) else {
            return Said::unparseable("rehash", "not a version manager's prototype shim");
        };
        let shims = c.path.parent().unwrap_or(Path::new("/")).to_path_buf();
        let root = shims.parent().unwrap_or(&shims).to_path_buf();
        let shown = common::field(&root.to_string_lossy());
        let owner = Owner {
            detail: Some(format!(
                "{tool} rehash lock (its prototype shim) in {shown}/shims"
            )),
            ..Owner::default()
        };
        if let Some(p) = rehash_running(snap, tool, &root) {
            let mut j = Judgement::live(format!(
                "a {tool} rehash runs: process {} ({})",
                p.pid,
                crate::text::truncate(&p.cmd.join(" "), 120)
            ));
            j.process = snap
                .pid(p.pid)
                .facts()
                .map(|f| Box::new(snap.process_info(f)));
            return Said::settled(j).owner(owner);
        }
        let versions = snap.stat(&root.join("versions")).is_ok_and(|m| m.is_dir());
        let shaped = c.content.is_empty() || c.content.starts_with(b"#!");
        if !versions || !shaped {
            return Judgement::unknown(format!(
                "named like {tool}'s prototype shim, but {}: whose it is cannot be told",
                if shaped {
                    format!("{shown} has no versions/ directory, as a {tool} root has")
                } else {
                    "it is neither empty nor a shim script, as the prototype shim is".into()
                }
            ))
            .into();
        }
        Said::claims(owner)
            .claim(Contract {
                placed: Placed::by(format!(
                    "{tool}'s prototype shim (empty, or a shim script) in the shims/ of the {tool} root {shown} (versions/ beside)"
                )),
                writer: Writers::named(programs),
                what: tool,
                at: format!("{tool} root {shown}"),
                says: format!(
                    "{tool}'s own message, \"cannot rehash: {}/shims/.{tool}-shim exists\": only a running rehash of this root may hold it",
                    shown
                ),
                place: shims,
                scope: Scope::Dirs {
                    dirs: vec![root],
                    named: no_dirs,
                    env: ROOT_VARS,
                },
                min_hold_ms: 2_000,
            })
            .note(
                When::IfStale,
                format!("`{tool} rehash` fails while it exists; removing it lets the next rehash rebuild the shims"),
            )
            .note(
                When::Always,
                "the file is the shim script itself: the shims are copies or hard links of it",
            )
    }
}
