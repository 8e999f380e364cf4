//! The writer's own removal condition for a lock that names no owner ([`Rule::WriterAbsent`]),
//! and the writer's promise to keep a kernel lock or the file itself for as long as it holds
//! the lock ([`Rule::KernelLockReleased`], [`Rule::OpenReleased`]).
//!
//! A writer census is conclusive only where every process can be seen: we run as root in the
//! host's PID namespace (so every container's processes are in our `/proc`), or the lock is
//! ours, so whoever wrote it runs as us and is visible. A writer is known by its executable;
//! a process whose executable cannot be read but whose name is the writer's may be one, and
//! makes the answer `unknown`. Any process, of any name, with a file of the place open may be
//! writing the lock through a library (a reimplementation of the writer): `unknown` too.

use std::path::PathBuf;

use super::Judgement;
use super::alive::At;
use super::claims::{Contract, Keeps, Match, Scope};

use crate::probe::places::{self, DirId};
use crate::probe::{FileKey, ProcSummary, Snapshot};
use crate::verdict::{Proof, Rule};

/// Inode of the initial PID namespace (`PROC_PID_INIT_INO`).
const INITIAL_PID_NS: u64 = 0xEFFF_FFFC;

/// Whether a missing process proves something: we can read every process's descriptors and
/// working directory (root in the host's PID namespace), or the file is ours, so that whoever
/// would hold it runs as us and is visible. `Err` says why not.
pub fn everyone_visible(meta: &crate::probe::Stat, snap: &Snapshot) -> Result<(), String> {
    let euid = snap.euid();
    let root = euid == 0;
    let host_ns = snap.host.pid_ns.is_none_or(|ns| ns == INITIAL_PID_NS);
    if !host_ns {
        return Err(format!(
            "we run in a PID namespace that is not the host's (pid:[{}]): processes outside it are not visible",
            snap.host.pid_ns.unwrap_or(0)
        ));
    }
    if let Some((pid, uid, read)) = snap.fds_cut().first() {
        return Err(format!(
            "the descriptors of process {pid}{} were read only up to their bound ({read}): whether it has the file open is not known",
            uid.map(|u| format!(" (uid {u})")).unwrap_or_default()
        ));
    }
    if root || meta.uid() == euid {
        return Ok(());
    }
    Err(format!(
        "the file belongs to uid {} and we are not root: that user's processes cannot all be read",
        meta.uid()
    ))
}

/// `9240 (cwd /src/app), 9311 (tool)`: at most eight, each with how it was seen.
fn list(procs: &[(&ProcSummary, String)]) -> String {
    let mut out: Vec<String> = procs
        .iter()
        .take(8)
        .map(|(p, how)| {
            let how = if how.is_empty() {
                crate::text::truncate(&p.name, 32)
            } else {
                how.clone()
            };
            format!("{} ({how})", p.pid)
        })
        .collect();
    if procs.len() > 8 {
        out.push(format!("and {} more", procs.len() - 8));
    }
    out.join(", ")
}

/// Where a writer process works, for the census.
enum Place {
    Inside(String),
    Outside,
    Unreadable,
}

fn place_of(p: &ProcSummary, scope: &Scope, roots: &[DirId], snap: &Snapshot) -> Place {
    match scope {
        Scope::Anywhere => Place::Inside(String::new()),
        Scope::User(user) => {
            let name = snap
                .pid(p.pid)
                .facts()
                .and_then(|f| f.uid)
                .and_then(|u| snap.user_name(u));
            match name {
                Some(n) if &n == user => Place::Inside(format!("user {n}")),
                Some(_) => Place::Outside,
                None => Place::Unreadable,
            }
        }
        Scope::Dirs { named, env, .. } => {
            if p.cmd_cut {
                // What its command line names beyond the bound is not known.
                return Place::Unreadable;
            }
            let mut named_dirs: Vec<(PathBuf, String)> = named(&p.cmd)
                .into_iter()
                .map(|d| {
                    let how = format!("command line names {}", d.display());
                    (d, how)
                })
                .collect();
            for var in env.iter() {
                // A process that may be the writer: its environment is read now. Search paths
                // (`R_LIBS`) list several, `:`-separated; `GIT_DIR` names one.
                if snap.environ_cut(p.pid) {
                    return Place::Unreadable;
                }
                let values: Vec<PathBuf> = match snap.environ_var(p.pid, var) {
                    Some(v) if *var == "GIT_DIR" => vec![PathBuf::from(v)],
                    Some(v) => std::env::split_paths(&v).collect(),
                    None => Vec::new(),
                };
                for d in values {
                    let how = format!("{var} {}", d.display());
                    // A variable may name a file (`XAUTHORITY`): its directory is where the
                    // process works (for a directory, its parent adds nothing).
                    if let Some(parent) = d.parent().filter(|p| !p.as_os_str().is_empty()) {
                        named_dirs.push((parent.to_path_buf(), how.clone()));
                    }
                    named_dirs.push((d, how));
                }
            }
            // A relative directory is relative to where the process started: its working
            // directory, or (after it changed directory) the `PWD` it was started with.
            let start = snap.environ_var(p.pid, "PWD").map(PathBuf::from);
            for (dir, how) in named_dirs {
                let mut tries = vec![places::seen_by(p.pid, &dir)];
                if dir.is_relative()
                    && let Some(start) = &start
                {
                    tries.push(places::seen_by(p.pid, &start.join(&dir)));
                }
                if tries.iter().any(|t| snap.within(t, roots) == Some(true)) {
                    return Place::Inside(crate::text::truncate(&how, 200));
                }
            }
            let cwd = p
                .cwd
                .as_deref()
                .map(|c| crate::text::truncate(&c.to_string_lossy(), 200))
                .unwrap_or_else(|| "?".into());
            match snap.cwd_within(p.pid, roots) {
                Some(true) => Place::Inside(format!("cwd {cwd}")),
                Some(false) => Place::Outside,
                // Listed a moment ago: it may have exited since (a process that is exiting
                // has no working directory any more, ENOENT); only a cwd we may not read
                // leaves the question open.
                None if snap.cwd_gone(p.pid) => Place::Outside,
                None => Place::Unreadable,
            }
        }
    }
}

/// The writer's removal condition, checked.
pub(super) fn writer_absent(at: At<'_>, contract: &Contract, snap: &Snapshot) -> Judgement {
    let procs = snap.processes();
    let me = snap.self_pid();
    if !procs.iter().any(|p| p.pid == me) {
        return Judgement::unknown(
            "the process list cannot be read, so its writer cannot be looked for",
        );
    }
    let roots: Vec<DirId> = match &contract.scope {
        Scope::Dirs { dirs, .. } => snap.dir_ids(dirs),
        _ => Vec::new(),
    };
    let what = contract.what;
    let here = match &contract.scope {
        Scope::Anywhere => "on this host".to_string(),
        Scope::User(u) => format!("for user \"{u}\" on this host"),
        Scope::Dirs { .. } => format!("in {}", contract.at),
    };
    let mut at_work: Vec<(&ProcSummary, String)> = Vec::new();
    let mut maybe: Vec<(&ProcSummary, String)> = Vec::new();
    let mut elsewhere: Vec<(&ProcSummary, String)> = Vec::new();
    for p in procs.iter().filter(|p| p.pid != me) {
        let m = contract.writer.of_listed(p);
        if m == Match::No {
            continue;
        }
        // A process that has exited since it was listed (or waits as a zombie) is at work
        // nowhere.
        if matches!(
            snap.pid(p.pid),
            crate::probe::PidState::Absent | crate::probe::PidState::Zombie(_)
        ) {
            continue;
        }
        match place_of(p, &contract.scope, &roots, snap) {
            Place::Inside(how) if m == Match::Name => {
                maybe.push((p, format!("{how}; its executable cannot be read")))
            }
            Place::Inside(how) => at_work.push((p, how)),
            Place::Outside => {
                let cwd = p
                    .cwd
                    .as_deref()
                    .map(|c| format!("cwd {}", crate::text::truncate(&c.to_string_lossy(), 200)))
                    .unwrap_or_default();
                elsewhere.push((p, cwd))
            }
            Place::Unreadable => maybe.push((p, "where it works cannot be read".into())),
        }
    }
    // Nearest first: the directories come in the dialect's order (the lock's own worktree
    // before the repository's others), and the process named is the one working nearest.
    if roots.len() > 1 {
        at_work.sort_by_cached_key(|(p, _)| {
            (0..roots.len())
                .find(|&i| snap.cwd_within(p.pid, &roots[i..=i]) == Some(true))
                .unwrap_or(roots.len())
        });
    }
    if let Some((first, _)) = at_work.first() {
        let verb = if matches!(contract.scope, Scope::Dirs { .. }) {
            "works"
        } else {
            "runs"
        };
        let mut j = Judgement::live(format!(
            "a {what} process {verb} {here}: {}",
            list(&at_work)
        ));
        j.process = snap
            .pid(first.pid)
            .facts()
            .map(|f| Box::new(snap.process_info(f)));
        return j;
    }
    if !maybe.is_empty() {
        return Judgement::unknown(format!(
            "{} may be a {what} process at work {here}: {}",
            if maybe.len() == 1 {
                "a process"
            } else {
                "processes"
            },
            list(&maybe)
        ));
    }
    let openers = snap.open_under(&contract.place);
    if !openers.is_empty() {
        let mut j = Judgement::unknown(format!(
            "no {what} process is at work {here}, but {} a file of {} open: a program writing this lock through a library is a writer too",
            crate::verdict::describe_holders(&openers),
            contract.place.display()
        ));
        j.holders = openers;
        return j;
    }
    if let Err(why) = everyone_visible(at.meta, snap) {
        return Judgement::unknown(format!(
            "no {what} process is seen at work {here}, but {why}"
        ));
    }
    // The census above may predate the lock (a writer just starting is not in it): one taken
    // now that the lock has been seen holds whoever made it, or it is gone. That order proves
    // it, however young the lock and whatever the clock did; without it, only an age past the
    // writer's shortest hold, beyond any step of the clock, does.
    let first: Vec<i32> = at_work
        .iter()
        .chain(&maybe)
        .chain(&elsewhere)
        .map(|(p, _)| p.pid)
        .collect();
    let late = snap.census_after(at.path, what, |p| {
        p.pid != me && contract.writer.of_listed(p) != Match::No
    });
    // Measured from the file's last change (ctime), which nobody can set back.
    let age = snap.taken_ms - at.written_by_ms();
    let ordered = match late {
        Some(late) => {
            // A writer started since, unless it works elsewhere (another repository's writer).
            let new: Vec<&ProcSummary> = late
                .iter()
                .filter(|p| !first.contains(&p.pid))
                .filter(|p| {
                    !matches!(
                        snap.pid(p.pid),
                        crate::probe::PidState::Absent | crate::probe::PidState::Zombie(_)
                    )
                })
                .filter(|p| !matches!(place_of(p, &contract.scope, &roots, snap), Place::Outside))
                .collect();
            if !new.is_empty() {
                let names: Vec<String> = new
                    .iter()
                    .map(|p| format!("{} ({})", p.pid, crate::text::truncate(&p.name, 64)))
                    .collect();
                return Judgement::unknown(format!(
                    "a {what} process started since the processes were first listed ({}): it may have made this lock and be just starting",
                    names.join(", ")
                ));
            }
            true
        }
        None => {
            if let Err(why) = super::proven_older(at.written_by_ms(), contract.min_hold_ms, snap) {
                return Judgement::unknown(format!(
                    "{why}, less than {} s: its writer may be just starting",
                    contract.min_hold_ms / 1000
                ));
            }
            false
        }
    };
    let checked = if elsewhere.is_empty() {
        format!("no {what} process runs on this host")
    } else {
        format!(
            "checked {} {what} process{}: {}",
            elsewhere.len(),
            if elsewhere.len() == 1 { "" } else { "es" },
            list(&elsewhere)
        )
    };
    let head = match &contract.scope {
        Scope::Anywhere => checked.clone(),
        _ => format!("no {what} process works {here} ({checked})"),
    };
    let proof = Proof::by(Rule::WriterAbsent)
        .fact("writer", what)
        .fact("place", contract.place.to_string_lossy())
        .fact("writers_elsewhere", elsewhere.len())
        .fact("age_s", age / 1000)
        .fact("min_hold_s", contract.min_hold_ms / 1000)
        .fact("census_after_seen", ordered);
    Judgement::stale(proof, head)
        .because(format!(
            "its writer's own condition for removing it holds: {}",
            contract.says
        ))
        .because(format!(
            "no process has the lock or a file of {} open, and no kernel lock is held on it",
            contract.place.display()
        ))
        .because(format!(
            "last changed {} ago ({})",
            super::fmt_age(age),
            at.when_written(at.written_by_ms())
        ))
}

/// What the writer keeps while it holds the lock, checked.
pub(super) fn keeps(at: At<'_>, keeps: &Keeps, snap: &Snapshot) -> Judgement {
    match keeps {
        Keeps::KernelLock {
            path,
            what,
            promise,
            ..
        } => {
            let meta = match snap.lstat(path) {
                Ok(m) => m,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    let proof = Proof::by(Rule::KernelLockReleased)
                        .fact("file", path.to_string_lossy())
                        .fact("checked", "absent");
                    return Judgement::stale(
                        proof,
                        format!("{what} does not exist, so nobody holds its kernel lock"),
                    )
                    .because(promise.clone());
                }
                Err(e) => {
                    return Judgement::unknown(format!("{what} cannot be examined: {e}"));
                }
            };
            let holders = snap.kernel_holders(FileKey::of(&meta));
            if !holders.is_empty() {
                let mut j = Judgement::live(format!(
                    "{what} is locked in the kernel by {} (/proc/locks)",
                    crate::verdict::describe_holders(&holders)
                ))
                .because(promise.clone());
                j.holders = holders;
                return j;
            }
            if !snap.kernel_locks_available() {
                return Judgement::unknown(format!(
                    "/proc/locks cannot be read here, so whether {what} is locked cannot be told"
                ));
            }
            // A read of /proc/locks can miss an entry: ask the kernel about the file itself.
            match snap.held_at(path, FileKey::of(&meta)) {
                Some(false) => {}
                Some(true) => {
                    return Judgement::live(format!(
                        "a kernel lock is held on {what} (F_OFD_GETLK)"
                    ))
                    .because(promise.clone());
                }
                None => {
                    return Judgement::unknown(format!(
                        "{what} cannot be opened to ask the kernel whether it is locked"
                    ));
                }
            }
            let proof = Proof::by(Rule::KernelLockReleased)
                .fact("file", path.to_string_lossy())
                .fact("checked", "F_OFD_GETLK")
                .fact("fs", at.fs.kind.as_str());
            Judgement::stale(
                proof,
                format!("no process holds a kernel lock on {what} (/proc/locks, confirmed by F_OFD_GETLK)"),
            )
            .because(promise.clone())
        }
        Keeps::Open { promise, .. } => {
            let openers = snap.openers(FileKey::of(at.meta));
            if !openers.is_empty() {
                let mut j = Judgement::live(format!(
                    "open in {}",
                    crate::verdict::describe_holders(&openers)
                ))
                .because(promise.clone());
                j.holders = openers;
                return j;
            }
            if let Err(why) = everyone_visible(at.meta, snap) {
                return Judgement::unknown(format!("no visible process has it open, but {why}"));
            }
            let proof = Proof::by(Rule::OpenReleased)
                .fact("file", at.path.to_string_lossy())
                .fact("fs", at.fs.kind.as_str());
            Judgement::stale(
                proof,
                "no process has it open (every process's descriptors were read)",
            )
            .because(promise.clone())
        }
    }
}
