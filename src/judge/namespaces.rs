//! PIDs judged in the PID namespaces that can see the lock file. A lock under a directory that
//! containers mount, or under a container's root, may carry a PID of those containers'
//! namespaces: every namespace that sees the file is a candidate, and the owner is proven gone
//! only when no candidate has it: in each, the PID does not exist, is a zombie, started after
//! the lock was written, or (on the host) is init or a kernel thread, which never own an
//! application's lock. A live process that started before the lock, in any candidate, is
//! `live` when it is one of the lock's writers and `unknown` otherwise.

use std::path::{Path, PathBuf};

use super::Judgement;
use super::alive::{Claim, INITIAL_PID_NS, alive, not_an_app_owner};
use crate::probe::containers::Seen;
use crate::probe::{PidState, Snapshot};
use crate::verdict::{Proof, Rule, Verdict};
use locksmith_sys::time::fmt_ms;

/// What one namespace that sees the lock file says about its PID.
enum Sighting {
    /// A process there is the owner (a `live` judgement, process included).
    Owner(Box<Judgement>),
    /// Proven not to be there or not to be the owner: how (`ESRCH`, `zombie`, `started
    /// after`, `init`, `kernel thread`) and why, in words.
    NotOwner(&'static str, String),
    /// Cannot tell: why.
    Unsure(String),
}

/// The application directory of a lock at `seen` (a path of the namespace that sees it), by
/// the claim's place rule ([`super::Place`]): its owner works in that directory.
pub(super) fn app_dir(claim: &Claim<'_>, seen: &Path) -> Option<PathBuf> {
    claim.c.place?.app_dir(seen)
}

/// Judges the lock's PID in every PID namespace that can see the file: `live` when one of
/// them has the owner; `stale` when none has, with every candidate named; `unknown` when
/// some cannot be told; `foreign` when namespaces we cannot see (or cannot follow the file
/// into) may have written it. `None` when the ordinary host rules apply: no other namespace
/// sees the file and the host's process with that PID is not one that can never own it, or
/// we run inside a PID namespace ourselves (and cannot see the others).
pub(super) fn judge(claim: &Claim<'_>, snap: &Snapshot) -> Option<Judgement> {
    let (path, meta) = (claim.at.path, claim.at.meta);
    if claim.c.pid_ns.is_some() || claim.pid() <= 0 || claim.pid() > snap.pid_max {
        return None;
    }
    if snap.host.pid_ns? != INITIAL_PID_NS {
        return None;
    }
    let pid = claim.pid() as i32;
    let host_state = snap.pid(pid);
    let host_never = not_an_app_owner(pid, &host_state, snap);
    let inv = snap.containers();
    if inv.namespaces.is_empty() && host_never.is_none() {
        return None;
    }
    let sightings = snap.who_sees(path, meta.dev());
    // Only a namespace tied to the file may have written its PID: one whose root the file is
    // on, or that mounts a volume holding it. One that shares our root and our mounts (a
    // sandbox made with `unshare -p`, a browser's) never changes the verdict.
    let seen: Vec<Seen<'_>> = sightings.seen.into_iter().filter(|s| s.tied).collect();
    // A namespace whose mount tables were read only up to their bound may see the file
    // beyond them: a live PID of the lock's there may be its owner.
    if let Some(ns) = inv.namespaces.iter().find(|n| {
        n.mounts_cut
            && !seen
                .iter()
                .any(|s| s.ns.is_some_and(|o| o.inode == n.inode))
            && n.host_pid(pid)
                .is_some_and(|h| matches!(snap.pid(h), PidState::Alive(_) | PidState::ExistsOpaque))
    }) {
        return Some(Judgement::unknown(format!(
            "PID {pid} is alive in {}, whose mount tables were read only up to their bound: whether it sees this file (and may own it) is not known",
            ns.container.describe()
        )));
    }
    if !seen.iter().any(|s| s.ns.is_some()) && host_never.is_none() {
        return None;
    }
    let mut lines: Vec<String> = Vec::new();
    let mut unsure = false;
    let mut how: Vec<serde_json::Value> = Vec::new();
    let mut owners: Vec<(Judgement, &Seen<'_>)> = Vec::new();
    for s in &seen {
        match sighting(claim, pid, s, snap) {
            Sighting::Owner(j) => owners.push((*j, s)),
            Sighting::NotOwner(seen_as, why) => {
                how.push(serde_json::json!({ "where": where_seen(s), "seen": seen_as }));
                lines.push(format!("{}: {why}", where_seen(s)));
            }
            Sighting::Unsure(why) => {
                unsure = true;
                lines.push(format!("{}: {why}", where_seen(s)));
            }
        }
    }
    if let Some((mut j, first)) = owners.first().cloned() {
        let others: Vec<String> = owners[1..]
            .iter()
            .map(|(o, _)| o.evidence[0].clone())
            .collect();
        if !others.is_empty() {
            j.evidence.push(format!(
                "PID {pid} is also alive where others see this file, and either may own it: {}",
                others.join("; ")
            ));
        }
        let seen_by: Vec<String> = seen
            .iter()
            .filter(|o| o.ns.map(|n| n.inode) != first.ns.map(|n| n.inode))
            .map(where_seen)
            .collect();
        if !seen_by.is_empty() {
            j.evidence
                .push(format!("the file is also seen by {}", seen_by.join("; ")));
        }
        return Some(j);
    }
    let mut j = if unsure {
        Judgement::unknown(format!(
            "cannot tell whether a process with PID {pid} in a namespace that sees this file owns it"
        ))
    } else if !inv.complete && meta.uid() != snap.euid() {
        Judgement::foreign(format!(
            "no namespace seen here that sees this file has an owner with PID {pid}, but this user (uid {}) cannot read the namespaces of other users' processes, and the file belongs to uid {}: it may have been written in one of them, where it cannot be checked",
            snap.euid(),
            meta.uid()
        ))
    } else if !sightings.mapped {
        Judgement::foreign(format!(
            "no namespace seen here has an owner with PID {pid}, but this file's device is in no mount table read here, so the namespaces that see it cannot all be told: it may have been written in another, where it cannot be checked"
        ))
    } else {
        // Every candidate is proven not to hold the owner: by a missing PID in at least
        // one, else by start times alone.
        let rule = if how.iter().any(|h| h["seen"] == "started after")
            && how.iter().all(|h| h["seen"] == "started after")
        {
            Rule::PidReused
        } else {
            Rule::PidGone
        };
        let proof = Proof::by(rule)
            .fact("pid", pid)
            .fact("namespaces", serde_json::Value::Array(how));
        Judgement::stale(
            proof,
            format!("no PID namespace that can see this file has an owner with PID {pid}"),
        )
    };
    j.evidence.extend(lines);
    Some(j)
}

/// Judges a PID in the PID namespace the lock names (an engine record's `pid_ns`), when that
/// namespace runs on this machine and we can see every namespace: `live` when it has the
/// process (and it is the owner), `stale` when it runs without it. `None` otherwise: a
/// namespace we do not find may be one we cannot see, so its PID stays `foreign`.
pub(super) fn judge_in_named_namespace(
    claim: &Claim<'_>,
    ns_inode: u64,
    snap: &Snapshot,
) -> Option<Judgement> {
    if snap.host.pid_ns? != INITIAL_PID_NS {
        return None;
    }
    let inv = snap.containers();
    if !inv.complete {
        return None;
    }
    let pid = claim.pid() as i32;
    let ns = inv.namespaces.iter().find(|n| n.inode == ns_inode)?;
    let who = ns.container.describe();
    let gone = |seen: &str, line: String| {
        Judgement::stale(
            Proof::by(Rule::PidGone)
                .fact("pid", pid)
                .fact("seen", seen)
                .fact("pid_ns", ns_inode),
            line,
        )
    };
    let Some(host_pid) = ns.host_pid(pid) else {
        return Some(gone(
            "ESRCH",
            format!("no PID {pid} in the owner's namespace, {who} (pid:[{ns_inode}])"),
        ));
    };
    Some(match snap.pid(host_pid) {
        PidState::Absent => gone("ESRCH", format!("PID {pid} in {who} has exited")),
        PidState::Zombie(f) => gone(
            "zombie",
            format!("PID {pid} in {who} ({}) is a zombie: it has exited", f.comm),
        ),
        PidState::ExistsOpaque => Judgement::live(format!(
            "PID {pid} in {who} exists (host process {host_pid}, not readable)"
        )),
        PidState::Alive(f) => {
            let mut j = alive(claim, &f);
            let first = format!("PID {pid} in {who} is host process {host_pid}: ");
            j.evidence[0] = format!("{first}{}", j.evidence[0]);
            if j.verdict() == Verdict::Live {
                j.process = Some(Box::new(snap.process_info(&f)));
            }
            j
        }
    })
}

/// Looks for the lock's owner in a running container whose host name is the one the lock
/// names (editors write their host name, and a container has its own): `live`
/// when the PID is its owner there. `None` otherwise (no such container sees the file, none
/// of them has the owner, or on a network file system): another machine may carry the same
/// name (a client of an NFS export here, say), so a host name alone never maps the lock to a
/// namespace, and the lock stays `foreign`. Only proven containers have a host name.
pub(super) fn live_in_named_host(
    claim: &Claim<'_>,
    host: &str,
    snap: &Snapshot,
) -> Option<Judgement> {
    let (path, meta) = (claim.at.path, claim.at.meta);
    if claim.at.fs.network || snap.host.pid_ns? != INITIAL_PID_NS || claim.c.pid_ns.is_some() {
        return None;
    }
    if claim.pid() <= 0 || claim.pid() > snap.pid_max {
        return None;
    }
    let inv = snap.containers();
    if inv
        .namespaces
        .iter()
        .all(|n| n.hostname.get() != Some(host))
    {
        return None;
    }
    let pid = claim.pid() as i32;
    let sightings = snap.who_sees(path, meta.dev());
    let named = sightings
        .seen
        .iter()
        .filter(|s| s.ns.is_some_and(|n| n.hostname.get() == Some(host)));
    for s in named {
        if let Sighting::Owner(j) = sighting(claim, pid, s, snap) {
            let mut j = *j;
            j.evidence.push(format!(
                "the lock names host \"{host}\", the host name of {}",
                s.ns.map(|n| n.container.describe()).unwrap_or_default()
            ));
            return Some(j);
        }
    }
    None
}

/// `the host (as /srv/app/run/app.pid)`, `container web-1 (podman be9b…) (as /app/...)`.
fn where_seen(s: &Seen<'_>) -> String {
    let who = match s.ns {
        None => "this host".to_string(),
        Some(ns) => ns.container.describe(),
    };
    format!("{who} (as {})", s.path.display())
}

/// What a namespace's process with the lock's PID says, by the PID rules: gone, reused,
/// the owner, or nothing proven.
fn verdict_of_alive(j: Judgement, label: impl Fn(&str) -> String) -> Sighting {
    match j.verdict() {
        Verdict::Live => Sighting::Owner(Box::new(j)),
        Verdict::Stale => Sighting::NotOwner("started after", label(&j.evidence.join("; "))),
        _ => Sighting::Unsure(label(&j.evidence.join("; "))),
    }
}

fn sighting(claim: &Claim<'_>, pid: i32, s: &Seen<'_>, snap: &Snapshot) -> Sighting {
    let app = app_dir(claim, &s.path);
    let Some(ns) = s.ns else {
        let state = snap.pid(pid);
        if let Some(why) = not_an_app_owner(pid, &state, snap) {
            let seen = if pid == 1 { "init" } else { "kernel thread" };
            return Sighting::NotOwner(seen, why);
        }
        return match state {
            PidState::Absent => Sighting::NotOwner("ESRCH", format!("no process {pid} (ESRCH)")),
            PidState::Zombie(f) => Sighting::NotOwner(
                "zombie",
                format!("process {pid} ({}) is a zombie: it has exited", f.comm),
            ),
            PidState::ExistsOpaque => {
                Sighting::Unsure(format!("process {pid} exists but cannot be read"))
            }
            PidState::Alive(f) => {
                let mut j = alive(claim, &f);
                if j.verdict() == Verdict::Live
                    && let Some(app) = &app
                    && !snap.cwd_of(f.pid).is_some_and(|cwd| cwd.starts_with(app))
                {
                    // A process elsewhere is not proof of death: the application may chdir
                    // away.
                    return Sighting::Unsure(format!(
                        "process {pid} ({}) is alive but does not work in {}",
                        f.comm,
                        app.display()
                    ));
                }
                if j.verdict() == Verdict::Live {
                    j.process = Some(Box::new(snap.process_info(&f)));
                }
                verdict_of_alive(j, |l| l.to_string())
            }
        };
    };
    let who = ns.container.describe();
    let Some(host_pid) = ns.host_pid(pid) else {
        return Sighting::NotOwner("ESRCH", format!("no PID {pid} there"));
    };
    let f = match snap.pid(host_pid) {
        PidState::Absent => {
            return Sighting::NotOwner("ESRCH", format!("PID {pid} there has exited"));
        }
        PidState::Zombie(f) => {
            return Sighting::NotOwner(
                "zombie",
                format!("PID {pid} there ({}) is a zombie: it has exited", f.comm),
            );
        }
        PidState::ExistsOpaque => {
            return Sighting::Unsure(format!(
                "PID {pid} there (host process {host_pid}) cannot be read"
            ));
        }
        PidState::Alive(f) => f,
    };
    let mut j = alive(claim, &f);
    // `alive` speaks of host PIDs.
    let inside = |line: &str| {
        line.replacen(
            &format!("process {host_pid} "),
            &format!("PID {pid} there (host process {host_pid}) "),
            1,
        )
        .replacen(&format!("PID {host_pid} "), &format!("PID {pid} "), 1)
    };
    if j.verdict() != Verdict::Live {
        return verdict_of_alive(j, inside);
    }
    if let Some(app) = &app {
        match snap.working_dir(host_pid) {
            Some(cwd) if cwd.starts_with(app) => j.evidence.push(format!(
                "it works in {} (its working directory there)",
                app.display()
            )),
            Some(cwd) => {
                return Sighting::Unsure(format!(
                    "PID {pid} there is {} working in {}, not in the application directory {}: it may have moved away",
                    f.comm,
                    cwd.display(),
                    app.display()
                ));
            }
            None => {
                return Sighting::Unsure(format!(
                    "PID {pid} there is {}, and where it works cannot be read",
                    f.comm
                ));
            }
        }
    }
    let started = f
        .start_ms
        .map(fmt_ms)
        .unwrap_or_else(|| "at an unknown time".into());
    let mut evidence = vec![format!(
        "PID {pid} in {who} is alive: host process {host_pid} ({}), started {started}",
        f.comm
    )];
    evidence.extend(j.evidence.drain(1..));
    j.evidence = evidence;
    j.process = Some(Box::new(snap.process_info(&f)));
    Sighting::Owner(Box::new(j))
}
