//! The evidence rules for locks that name an owner PID (spec §3), shared by every PID-based
//! dialect and by the engine. A lock is `stale` only when one of the rules proves the owner
//! gone, and the evidence line says which rule; anything inconclusive is `foreign` or
//! `unknown`, never `stale`.

use std::path::{Path, PathBuf};

use crate::probe::containers::Seen;
use crate::probe::{FsInfo, PidState, Snapshot};
use crate::verdict::{Judgement, RemoteClaim, Verdict};
use locksmith_engine::judge::CLOCK_SLACK_MS;

/// What a lock claims about its owner, as far as the PID rules need it.
#[derive(Debug, Clone, Default)]
pub struct PidClaim<'a> {
    pub pid: i64,
    /// The host the lock names, if it names one.
    pub hostname: Option<&'a str>,
    /// The boot id the lock names (engine records only).
    pub boot_id: Option<&'a str>,
    /// When the lock was written (record time, else the file's mtime), ms since the epoch.
    pub written_ms: Option<i64>,
    /// Process names the owner must have (comm, exe or argv[0]); empty accepts any.
    pub expect: &'a [&'a str],
    /// Whether the writers are an open set: for a live process not on `expect`, says whether
    /// it could still be an unlisted writer (an X server called `Xkasmvnc`), which makes the
    /// name check inconclusive (`unknown`). `None`: `expect` is the closed, known set of
    /// writers, and a process certainly none of them is not the owner.
    pub could_be: Option<fn(&crate::probe::ProcFacts) -> bool>,
    /// The machine id the lock names (Qt's `QLockFile`): another machine id is another
    /// machine, whatever its host name.
    pub machine_id: Option<&'a str>,
    /// Exact owner start time in ticks since boot (engine records only).
    pub start_ticks: Option<u64>,
    /// The owner's PID namespace inode, if the lock names it.
    pub pid_ns: Option<u64>,
    /// The file system the lock lives on (network? a container's root seen from outside? our
    /// own root?), when known.
    pub fs: Option<&'a FsInfo>,
    /// The lock file itself (path and `lstat`): its PID is judged in every PID namespace that
    /// can see it (spec §10). Every dialect that judges a PID from a file sets it
    /// (`file: Some((c.path, c.meta))`); without it, only the host's view counts.
    pub file: Option<(&'a Path, &'a std::fs::Metadata)>,
}

/// Inode of the initial PID namespace (`PROC_PID_INIT_INO`): the host's, outside any container.
const INITIAL_PID_NS: u64 = 0xEFFF_FFFC;

impl PidClaim<'_> {
    /// What to ask `host` about this claim (see [`crate::remote`]).
    pub fn remote(&self, host: &str) -> RemoteClaim {
        RemoteClaim {
            host: host.to_string(),
            pid: self.pid,
            boot_id: self.boot_id.map(str::to_string),
            pid_ns: self.pid_ns,
            written_ms: self.written_ms,
            start_ticks: self.start_ticks,
            expect: self.expect.iter().map(|s| s.to_string()).collect(),
        }
    }

    fn network_fs(&self) -> bool {
        self.fs.is_some_and(|f| f.network)
    }

    fn container_fs(&self) -> bool {
        self.fs.is_some_and(|f| f.container_root)
    }
}

pub use locksmith_engine::judge::fmt_ms;

/// The evidence line for a lock written before this host booted (with the clock slack), if it
/// was. Never on a file system that does not survive a reboot (tmpfs, ramfs: `/run`, often
/// `/tmp`): a file there is from this boot whatever its mtime says, so an mtime before boot
/// only shows the clock was stepped since it was written.
pub fn written_before_boot(
    written_ms: i64,
    fs: Option<&FsInfo>,
    snap: &Snapshot,
) -> Option<String> {
    locksmith_engine::judge::before_boot(written_ms, snap.host.boot_time, fs)
}

/// Whether a claimed host is this host: same boot id (same kernel, whatever the hostname
/// says), or the same name when no boot id is known.
pub fn same_host(claim: &PidClaim<'_>, snap: &Snapshot) -> bool {
    if let (Some(b), Some(ours)) = (claim.boot_id, snap.host.boot_id.as_deref())
        && b == ours
    {
        return true;
    }
    match claim.hostname {
        Some(h) => h == snap.host.hostname,
        None => true,
    }
}

/// Why a PID that exists here cannot be the owner of an application's lock, if it cannot:
/// this machine's PID 1 (init, in the host's PID namespace) or a kernel thread. Neither ever
/// writes an application's lock file, so a lock naming one was written in another PID
/// namespace (a container's PID 1, a Flatpak sandbox's PID 2) and says nothing about a
/// process here: never `live` on this evidence. `None` when the PID may be an owner.
pub fn not_an_app_owner(pid: i32, state: &PidState, snap: &Snapshot) -> Option<String> {
    let host_ns = snap.host.pid_ns.is_none_or(|ns| ns == INITIAL_PID_NS);
    let facts = state.facts();
    if facts.is_some_and(|f| f.kernel_thread) || (host_ns && pid == 2 && facts.is_none()) {
        let name = facts.map(|f| f.comm.as_str()).unwrap_or("kthreadd");
        return Some(format!(
            "process {pid} ({}) is a kernel thread, which never owns a lock file",
            crate::text::truncate(name, 32)
        ));
    }
    if host_ns && pid == 1 && !matches!(state, PidState::Absent) {
        let name = facts.map(|f| f.comm.as_str()).unwrap_or("init");
        return Some(format!(
            "process 1 ({}) is this machine's init, which never owns an application's lock",
            crate::text::truncate(name, 32)
        ));
    }
    None
}

/// The judgement for a lock whose PID names no possible owner here ([`not_an_app_owner`]).
fn not_an_owner_here(claim: &PidClaim<'_>, pid: i32, why: String, snap: &Snapshot) -> Judgement {
    if claim.pid_ns.is_some() && claim.pid_ns == snap.host.pid_ns {
        // Recorded in our own namespace, yet naming init or a kernel thread: not a record
        // any writer makes.
        return Judgement::new(Verdict::Unknown, why).because(format!(
            "the lock records our own PID namespace, so PID {pid} cannot be an owner elsewhere either: its owner cannot be told"
        ));
    }
    Judgement::new(Verdict::Foreign, why).because(format!(
        "the lock was most likely written in another PID namespace (a container or a sandbox), where PID {pid} is another process: it cannot be checked from here"
    ))
}

/// Judges a PID-based lock by the rules of spec §3.
pub fn judge_pid(claim: &PidClaim<'_>, snap: &Snapshot) -> Judgement {
    let pid = claim.pid;
    if pid <= 0 || pid > snap.pid_max {
        return Judgement::new(
            Verdict::Unknown,
            format!("PID {pid} is not a valid process id (1..={})", snap.pid_max),
        );
    }
    let pid = pid as i32;
    let our_boot = snap.host.boot_id.as_deref();
    let same_kernel = matches!((claim.boot_id, our_boot), (Some(a), Some(b)) if a == b);

    if !same_kernel
        && let Some(h) = claim.hostname
        && h != snap.host.hostname
    {
        if let Some(j) = judge_in_named_host(claim, h, snap) {
            return j;
        }
        let mut j = Judgement::new(
            Verdict::Foreign,
            format!(
                "owner host \"{h}\" is not this host \"{}\": its PID {pid} cannot be checked here",
                snap.host.hostname
            ),
        );
        j.remote = Some(claim.remote(h));
        return j;
    }
    if !same_kernel
        && let (Some(theirs), Some(ours)) = (claim.machine_id, snap.host.machine_id.as_deref())
        && !theirs.eq_ignore_ascii_case(ours)
    {
        return Judgement::new(
            Verdict::Foreign,
            format!(
                "written on another machine (machine id {theirs}; this machine is {ours}), though its host name is ours: its PID {pid} cannot be checked here"
            ),
        );
    }
    if let (Some(theirs), Some(ours)) = (claim.boot_id, our_boot)
        && theirs != ours
    {
        return locksmith_engine::judge::another_boot(
            theirs,
            ours,
            claim.hostname.is_some(),
            claim.network_fs(),
        );
    }
    if claim.network_fs() && claim.hostname.is_none() && !same_kernel {
        // Other machines see this file too: an owner found here (on this host or in a
        // container that mounts it) is live; nothing found here proves nothing.
        if let Some(j) = judge_in_namespaces(claim, snap)
            && j.verdict == Verdict::Live
        {
            return j;
        }
        return Judgement::new(
            Verdict::Foreign,
            format!(
                "on a network file system and naming no host: PID {pid} may belong to another machine"
            ),
        );
    }
    if let Some(line) = claim
        .written_ms
        .and_then(|w| written_before_boot(w, claim.fs, snap))
    {
        return Judgement::new(Verdict::Stale, line);
    }
    if let Some(j) = judge_in_namespaces(claim, snap) {
        return j;
    }
    if claim.container_fs() && claim.pid_ns.is_none() && !same_kernel {
        return Judgement::new(
            Verdict::Foreign,
            format!(
                "on the root file system of a container (an overlay that is not ours): PID {pid} belongs to the container's PID namespace and cannot be checked here"
            ),
        );
    }
    if let (Some(theirs), Some(ours)) = (claim.pid_ns, snap.host.pid_ns)
        && theirs != ours
    {
        if let Some(j) = judge_in_named_namespace(claim, theirs, snap) {
            return j;
        }
        return Judgement::new(
            Verdict::Foreign,
            format!(
                "owner is in another PID namespace (pid:[{theirs}], ours pid:[{ours}]): PID {pid} cannot be checked here"
            ),
        );
    }

    let state = snap.pid(pid);
    if let Some(why) = not_an_app_owner(pid, &state, snap) {
        return not_an_owner_here(claim, pid, why, snap);
    }
    match state {
        PidState::Absent if !pid_space_is_ours(claim, snap) => Judgement::new(
            Verdict::Foreign,
            format!(
                "no process {pid} in our PID namespace, but we run inside one that is not the host's (pid:[{}]) and this file is on a mount shared with the outside: PID {pid} may belong to a process outside it",
                snap.host.pid_ns.unwrap_or(0)
            ),
        ),
        PidState::Absent => Judgement::new(
            Verdict::Stale,
            format!("no process {pid} on this host (kill({pid}, 0): ESRCH)"),
        ),
        PidState::Zombie(f) => Judgement::new(
            Verdict::Stale,
            format!("process {pid} ({}) is a zombie: it has exited", f.comm),
        ),
        PidState::ExistsOpaque => Judgement::new(
            Verdict::Live,
            format!("process {pid} exists (kill({pid}, 0): EPERM; /proc/{pid} not readable)"),
        ),
        PidState::Alive(f) => {
            let mut j = judge_alive(claim, &f);
            j.process = Some(snap.process_info(&f));
            j
        }
    }
}

/// Whether the PIDs of this lock are numbered in our PID namespace, so that ESRCH proves the
/// owner gone: we run in the host's namespace, or the lock records our namespace, or (inside a
/// container) it lies on our own container image root (an overlay), which processes outside
/// the container do not write to. A root shared with the host (plain `unshare --pid`) is not
/// private.
fn pid_space_is_ours(claim: &PidClaim<'_>, snap: &Snapshot) -> bool {
    let ours = snap.host.pid_ns;
    ours.is_none_or(|ns| ns == INITIAL_PID_NS)
        || (claim.pid_ns.is_some() && claim.pid_ns == ours)
        || claim.fs.is_some_and(|f| f.own_root && f.kind.is_overlay())
}

/// What one namespace that sees the lock file says about its PID.
enum Sighting {
    /// A process there is the owner (a `live` judgement, process included).
    Owner(Box<Judgement>),
    /// Proven not to be there, or not to be the owner: why.
    NotOwner(String),
    /// Cannot tell: why.
    Unsure(String),
}

/// The application directory of an app's pid file, as a path of the namespace that sees it:
/// `APP/tmp/pids/*.pid` (Rails, Puma, Rack) → `APP`; a `postmaster.pid` → its data directory.
/// The owner of such a file works in that directory.
fn app_dir(seen: &Path) -> Option<PathBuf> {
    let parent = seen.parent()?;
    if seen.file_name()? == "postmaster.pid" {
        return Some(parent.to_path_buf());
    }
    let is_pid = seen.extension().is_some_and(|e| e == "pid");
    if is_pid && parent.file_name()? == "pids" && parent.parent()?.file_name()? == "tmp" {
        return Some(parent.parent()?.parent()?.to_path_buf());
    }
    None
}

/// Judges the lock's PID in every PID namespace that can see the file (spec §10): `live` when
/// one of them has that PID, started before the lock was written, and it is the lock's
/// program (for an app's pid file: working in the app's directory as that namespace sees it);
/// `stale` when none has, with every candidate named; `unknown` when some cannot be told;
/// `foreign` when namespaces we cannot see (or cannot follow the file into) may have written
/// it. `None` when the ordinary host rules apply: no other namespace sees the file and the
/// host's process with that PID is not one that can never own it, or we run inside a PID
/// namespace ourselves (and cannot see the others).
pub fn judge_in_namespaces(claim: &PidClaim<'_>, snap: &Snapshot) -> Option<Judgement> {
    let (path, meta) = claim.file?;
    if claim.pid_ns.is_some() || claim.pid <= 0 || claim.pid > snap.pid_max {
        return None;
    }
    if snap.host.pid_ns? != INITIAL_PID_NS {
        return None;
    }
    let pid = claim.pid as i32;
    let host_state = snap.pid(pid);
    let host_never = not_an_app_owner(pid, &host_state, snap);
    let inv = snap.containers();
    if inv.namespaces.is_empty() && host_never.is_none() {
        return None;
    }
    let sightings = inv.who_sees(path, meta);
    let seen = sightings.seen;
    if !seen.iter().any(|s| s.ns.is_some()) && host_never.is_none() {
        return None;
    }
    let mut lines: Vec<String> = Vec::new();
    let mut unsure = false;
    let mut owners: Vec<(Judgement, &Seen<'_>)> = Vec::new();
    for s in &seen {
        match sighting(claim, pid, s, snap) {
            Sighting::Owner(j) => owners.push((*j, s)),
            Sighting::NotOwner(why) => lines.push(format!("{}: {why}", where_seen(s))),
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
    let (verdict, head) = if unsure {
        (
            Verdict::Unknown,
            format!(
                "cannot tell whether a process with PID {pid} in a namespace that sees this file owns it"
            ),
        )
    } else if !inv.complete {
        (
            Verdict::Foreign,
            format!(
                "no namespace seen here that sees this file has an owner with PID {pid}, but the namespaces of some processes cannot be read (not root): it may have been written in one of them, where it cannot be checked"
            ),
        )
    } else if !sightings.mapped {
        (
            Verdict::Foreign,
            format!(
                "no namespace seen here has an owner with PID {pid}, but this file's device is in no mount table read here, so the namespaces that see it cannot all be told: it may have been written in another, where it cannot be checked"
            ),
        )
    } else {
        (
            Verdict::Stale,
            format!("no PID namespace that can see this file has an owner with PID {pid}"),
        )
    };
    let mut j = Judgement::new(verdict, head);
    j.evidence.extend(lines);
    Some(j)
}

/// Judges a PID in the PID namespace the lock names (an engine record's `pid_ns`), when that
/// namespace runs on this machine and we can see every namespace: `live` when it has the
/// process (and it is the owner), `stale` when it runs without it. `None` otherwise: a
/// namespace we do not find may be one we cannot see, so its PID stays `foreign`.
fn judge_in_named_namespace(
    claim: &PidClaim<'_>,
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
    let pid = claim.pid as i32;
    let ns = inv.namespaces.iter().find(|n| n.inode == ns_inode)?;
    let who = ns.container.describe();
    let Some(host_pid) = ns.host_pid(pid) else {
        return Some(Judgement::new(
            Verdict::Stale,
            format!("no PID {pid} in the owner's namespace, {who} (pid:[{ns_inode}])"),
        ));
    };
    Some(match snap.pid(host_pid) {
        PidState::Absent => {
            Judgement::new(Verdict::Stale, format!("PID {pid} in {who} has exited"))
        }
        PidState::Zombie(f) => Judgement::new(
            Verdict::Stale,
            format!("PID {pid} in {who} ({}) is a zombie: it has exited", f.comm),
        ),
        PidState::ExistsOpaque => Judgement::new(
            Verdict::Live,
            format!("PID {pid} in {who} exists (host process {host_pid}, not readable)"),
        ),
        PidState::Alive(f) => {
            let mut j = judge_alive(claim, &f);
            let first = format!("PID {pid} in {who} is host process {host_pid}: ");
            j.evidence[0] = format!("{first}{}", j.evidence[0]);
            if j.verdict == Verdict::Live {
                j.process = Some(snap.process_info(&f));
            }
            j
        }
    })
}

/// Judges a lock that names another host name, when that name is the host name of a running
/// container that sees the file (vim, emacs and others write their host name, and a
/// container has its own): `live` when the PID is its owner there. `None` otherwise (no such
/// container sees the file, none of them has the owner, or on a network file system): another
/// machine may carry the same name (a client of an NFS export here, say), so a host name alone
/// never maps the lock to a namespace, and the lock stays `foreign`.
fn judge_in_named_host(claim: &PidClaim<'_>, host: &str, snap: &Snapshot) -> Option<Judgement> {
    let (path, meta) = claim.file?;
    if claim.network_fs() || snap.host.pid_ns? != INITIAL_PID_NS || claim.pid_ns.is_some() {
        return None;
    }
    let inv = snap.containers();
    if inv
        .namespaces
        .iter()
        .all(|n| n.hostname.as_deref() != Some(host))
    {
        return None;
    }
    let pid = claim.pid as i32;
    let sightings = inv.who_sees(path, meta);
    let named = sightings
        .seen
        .iter()
        .filter(|s| s.ns.is_some_and(|n| n.hostname.as_deref() == Some(host)));
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

/// `the host (as /srv/app/tmp/pids/server.pid)`, `container web-1 (podman be9b…) (as /app/...)`.
fn where_seen(s: &Seen<'_>) -> String {
    let who = match s.ns {
        None => "this host".to_string(),
        Some(ns) => ns.container.describe(),
    };
    format!("{who} (as {})", s.path.display())
}

fn sighting(claim: &PidClaim<'_>, pid: i32, s: &Seen<'_>, snap: &Snapshot) -> Sighting {
    let app = app_dir(&s.path);
    let Some(ns) = s.ns else {
        let state = snap.pid(pid);
        if let Some(why) = not_an_app_owner(pid, &state, snap) {
            return Sighting::NotOwner(why);
        }
        return match state {
            PidState::Absent => Sighting::NotOwner(format!("no process {pid} (ESRCH)")),
            PidState::Zombie(f) => Sighting::NotOwner(format!(
                "process {pid} ({}) is a zombie: it has exited",
                f.comm
            )),
            PidState::ExistsOpaque => {
                Sighting::Unsure(format!("process {pid} exists but cannot be read"))
            }
            PidState::Alive(f) => {
                let mut j = judge_alive(claim, &f);
                if j.verdict == Verdict::Live
                    && let Some(app) = &app
                    && !works_in(f.pid, app).unwrap_or(false)
                {
                    // On the host, a process elsewhere is not proof of death: the
                    // application may chdir away.
                    return Sighting::Unsure(format!(
                        "process {pid} ({}) is alive but does not work in {}",
                        f.comm,
                        app.display()
                    ));
                }
                match j.verdict {
                    Verdict::Live => {
                        j.process = Some(snap.process_info(&f));
                        Sighting::Owner(Box::new(j))
                    }
                    Verdict::Stale => Sighting::NotOwner(j.evidence.join("; ")),
                    _ => Sighting::Unsure(j.evidence.join("; ")),
                }
            }
        };
    };
    let who = ns.container.describe();
    let Some(host_pid) = ns.host_pid(pid) else {
        return Sighting::NotOwner(format!("no PID {pid} there"));
    };
    let f = match snap.pid(host_pid) {
        PidState::Absent => return Sighting::NotOwner(format!("PID {pid} there has exited")),
        PidState::Zombie(f) => {
            return Sighting::NotOwner(format!(
                "PID {pid} there ({}) is a zombie: it has exited",
                f.comm
            ));
        }
        PidState::ExistsOpaque => {
            return Sighting::Unsure(format!(
                "PID {pid} there (host PID {host_pid}) cannot be read"
            ));
        }
        PidState::Alive(f) => f,
    };
    let mut j = judge_alive(claim, &f);
    // judge_alive speaks of host PIDs.
    let inside = |line: &str| {
        line.replacen(
            &format!("process {host_pid} "),
            &format!("PID {pid} there (host process {host_pid}) "),
            1,
        )
        .replacen(&format!("PID {host_pid} "), &format!("PID {pid} "), 1)
    };
    match j.verdict {
        Verdict::Live => {}
        Verdict::Stale => return Sighting::NotOwner(inside(&j.evidence.join("; "))),
        _ => return Sighting::Unsure(inside(&j.evidence.join("; "))),
    }
    if let Some(app) = &app {
        match works_in(host_pid, app) {
            Some(true) => j.evidence.push(format!(
                "it works in {} (its working directory there)",
                app.display()
            )),
            Some(false) => {
                let cwd = std::fs::read_link(format!("/proc/{host_pid}/cwd"))
                    .map(|c| c.display().to_string())
                    .unwrap_or_else(|_| "elsewhere".into());
                return Sighting::NotOwner(format!(
                    "PID {pid} there is {} working in {cwd}, not in the application directory {}",
                    f.comm,
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
    j.process = Some(snap.process_info(&f));
    Sighting::Owner(Box::new(j))
}

/// Whether a process works in `dir` (a path as its own mount namespace sees it): its working
/// directory is `dir` or below it. `None` when that cannot be read.
fn works_in(host_pid: i32, dir: &Path) -> Option<bool> {
    let cwd = std::fs::read_link(format!("/proc/{host_pid}/cwd")).ok()?;
    Some(cwd.starts_with(dir))
}

fn judge_alive(claim: &PidClaim<'_>, f: &crate::probe::ProcFacts) -> Judgement {
    let pid = f.pid;
    if let Some(want) = claim.start_ticks
        && want != f.start_ticks
    {
        return Judgement::new(
            Verdict::Stale,
            format!(
                "PID {pid} was reused: the owner started at tick {want} after boot, process {pid} ({}) at tick {}",
                f.comm, f.start_ticks
            ),
        );
    }
    if let (Some(w), Some(s)) = (claim.written_ms, f.start_ms)
        && claim.start_ticks.is_none()
        && s > w + CLOCK_SLACK_MS
    {
        return Judgement::new(
            Verdict::Stale,
            format!(
                "PID {pid} was reused: process {pid} ({}) started at {}, after the lock was written at {}",
                f.comm,
                fmt_ms(s),
                fmt_ms(w)
            ),
        );
    }
    if !claim.expect.is_empty() && !f.is_one_of(claim.expect) && f.exe.is_none() {
        // comm and argv[0] can be anything (`editor` for vim): without the executable the
        // name proves nothing.
        return Judgement::new(
            Verdict::Unknown,
            format!(
                "process {pid} is \"{}\" and its executable cannot be read here, so it cannot be told whether it is {}",
                f.comm,
                claim.expect.join("/")
            ),
        );
    }
    if !claim.expect.is_empty()
        && !f.is_one_of(claim.expect)
        && claim.could_be.is_some_and(|could| could(f))
    {
        return Judgement::new(
            Verdict::Unknown,
            format!(
                "process {pid} is \"{}\" ({}), not one of the known {}, but its name says it could be an unlisted one: the name check proves nothing",
                f.comm,
                f.exe.as_deref().unwrap_or("exe unknown"),
                claim.expect.join("/")
            ),
        );
    }
    if !claim.expect.is_empty() && !f.is_one_of(claim.expect) {
        return Judgement::new(
            Verdict::Stale,
            format!(
                "process {pid} is \"{}\" ({}), not {}: the PID belongs to an unrelated process",
                f.comm,
                f.exe.as_deref().unwrap_or("exe unknown"),
                claim.expect.join("/")
            ),
        );
    }
    let started = f
        .start_ms
        .map(fmt_ms)
        .unwrap_or_else(|| "at an unknown time".into());
    let mut j = Judgement::new(
        Verdict::Live,
        format!("process {pid} ({}) is alive, started {started}", f.comm),
    );
    if claim.start_ticks.is_some() {
        j.evidence.push(format!(
            "its start time matches the record (tick {})",
            f.start_ticks
        ));
    } else if let Some(w) = claim.written_ms {
        j.evidence.push(format!(
            "it started before the lock was written at {}",
            fmt_ms(w)
        ));
    }
    j
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    fn claim(pid: i64) -> PidClaim<'static> {
        PidClaim {
            pid,
            ..Default::default()
        }
    }

    #[test]
    fn a_name_mismatch_without_the_executable_proves_nothing() {
        let f = crate::probe::ProcFacts {
            pid: 42,
            comm: "editor".into(),
            state: 'S',
            threads: 1,
            ..Default::default()
        };
        let c = PidClaim {
            pid: 42,
            expect: &["vim"],
            ..Default::default()
        };
        assert_eq!(judge_alive(&c, &f).verdict, Verdict::Unknown);
        let nano = crate::probe::ProcFacts {
            exe: Some("/usr/bin/nano".into()),
            ..f
        };
        assert_eq!(judge_alive(&c, &nano).verdict, Verdict::Stale);
    }

    #[test]
    fn a_zombie_owner_is_gone() {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id() as i64;
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let j = loop {
            // A fresh snapshot each time: the state of a PID is cached per snapshot.
            let j = judge_pid(&claim(pid), &Snapshot::take());
            if j.verdict == Verdict::Stale || std::time::Instant::now() > deadline {
                break j;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        };
        assert_eq!(j.verdict, Verdict::Stale, "{j:?}");
        assert!(j.evidence[0].contains("zombie"), "{j:?}");
        child.wait().unwrap();
    }

    #[test]
    fn init_and_kernel_threads_are_never_owners() {
        let mut snap = Snapshot::take();
        snap.host.pid_ns = Some(INITIAL_PID_NS);
        let facts = |pid, comm: &str, kernel_thread| {
            PidState::Alive(crate::probe::ProcFacts {
                pid,
                comm: comm.into(),
                state: 'S',
                threads: 1,
                kernel_thread,
                ..Default::default()
            })
        };
        assert!(not_an_app_owner(1, &facts(1, "systemd", false), &snap).is_some());
        assert!(not_an_app_owner(2, &facts(2, "kthreadd", true), &snap).is_some());
        assert!(not_an_app_owner(77, &facts(77, "kworker/0:1", true), &snap).is_some());
        assert!(not_an_app_owner(2, &PidState::ExistsOpaque, &snap).is_some());
        assert!(not_an_app_owner(77, &facts(77, "rails", false), &snap).is_none());
        assert!(not_an_app_owner(1, &PidState::Absent, &snap).is_none());
        // Inside a container, PID 1 is the container's own program: it may own a lock.
        snap.host.pid_ns = Some(4_026_532_999);
        assert!(not_an_app_owner(1, &facts(1, "postgres", false), &snap).is_none());
        assert!(not_an_app_owner(9, &facts(9, "kworker", true), &snap).is_some());

        // Judged: foreign (written in another namespace), or unknown if the lock says the
        // namespace is ours.
        snap.host.pid_ns = Some(INITIAL_PID_NS);
        let c = claim(1);
        let j = not_an_owner_here(&c, 1, "init".into(), &snap);
        assert_eq!(j.verdict, Verdict::Foreign);
        let ours = PidClaim {
            pid_ns: Some(INITIAL_PID_NS),
            ..claim(1)
        };
        assert_eq!(
            not_an_owner_here(&ours, 1, "init".into(), &snap).verdict,
            Verdict::Unknown
        );
    }

    #[test]
    fn an_open_set_of_writers_makes_a_name_check_inconclusive() {
        let f = crate::probe::ProcFacts {
            pid: 42,
            comm: "Xkasmvnc".into(),
            exe: Some("/usr/bin/Xkasmvnc".into()),
            state: 'S',
            threads: 1,
            ..Default::default()
        };
        let closed = PidClaim {
            pid: 42,
            expect: &["Xorg", "Xvfb"],
            ..Default::default()
        };
        assert_eq!(judge_alive(&closed, &f).verdict, Verdict::Stale);
        let open = PidClaim {
            could_be: Some(|f| f.comm.starts_with('X')),
            ..closed.clone()
        };
        assert_eq!(judge_alive(&open, &f).verdict, Verdict::Unknown);
        let sleep = crate::probe::ProcFacts {
            comm: "sleep".into(),
            exe: Some("/usr/bin/sleep".into()),
            ..f
        };
        assert_eq!(judge_alive(&open, &sleep).verdict, Verdict::Stale);
    }

    #[test]
    fn files_on_tmpfs_are_never_from_an_earlier_boot() {
        let snap = Snapshot::take();
        let long_ago = snap.taken_ms - 10 * 365 * 86_400_000;
        let ext4 = FsInfo::new("ext4", false);
        let tmpfs = FsInfo::new("tmpfs", false);
        assert!(written_before_boot(long_ago, Some(&ext4), &snap).is_some());
        assert!(written_before_boot(long_ago, None, &snap).is_some());
        assert!(written_before_boot(long_ago, Some(&tmpfs), &snap).is_none());
        assert!(written_before_boot(snap.taken_ms, Some(&ext4), &snap).is_none());
    }

    #[test]
    fn rules() {
        let snap = Snapshot::take();
        let me = std::process::id() as i64;
        assert_eq!(judge_pid(&claim(me), &snap).verdict, Verdict::Live);
        assert_eq!(judge_pid(&claim(0), &snap).verdict, Verdict::Unknown);
        assert_eq!(judge_pid(&claim(1 << 31), &snap).verdict, Verdict::Unknown);
        assert_eq!(judge_pid(&claim(-1), &snap).verdict, Verdict::Unknown);

        let other_host = PidClaim {
            hostname: Some("elsewhere.example"),
            ..claim(me)
        };
        assert_eq!(judge_pid(&other_host, &snap).verdict, Verdict::Foreign);

        // Our boot id with another hostname: same kernel, so the PID is checked.
        let renamed = PidClaim {
            hostname: Some("renamed-container"),
            boot_id: snap.host.boot_id.as_deref(),
            ..claim(me)
        };
        assert_eq!(judge_pid(&renamed, &snap).verdict, Verdict::Live);

        let old_boot = PidClaim {
            boot_id: Some("00000000-0000-0000-0000-000000000000"),
            ..claim(me)
        };
        let j = judge_pid(&old_boot, &snap);
        assert_eq!(j.verdict, Verdict::Stale, "{j:?}");

        // Written long before we started: PID reuse.
        let reused = PidClaim {
            written_ms: Some(snap.taken_ms - 10 * 365 * 86_400_000),
            ..claim(me)
        };
        let j = judge_pid(&reused, &snap);
        assert_eq!(j.verdict, Verdict::Stale, "{j:?}");

        let wrong_exe = PidClaim {
            expect: &["postgres"],
            ..claim(me)
        };
        assert_eq!(judge_pid(&wrong_exe, &snap).verdict, Verdict::Stale);

        let nfs = FsInfo::new("nfs", true);
        let on_nfs = PidClaim {
            fs: Some(&nfs),
            ..claim(me)
        };
        assert_eq!(judge_pid(&on_nfs, &snap).verdict, Verdict::Foreign);

        // On a container's root file system seen from outside, a PID is the container's:
        // neither a dead nor a live host PID proves anything.
        let mut dead = std::process::Command::new("true").spawn().unwrap();
        let dead_pid = dead.id() as i64;
        dead.wait().unwrap();
        let plain = judge_pid(&claim(dead_pid), &snap);
        assert_eq!(plain.verdict, Verdict::Stale, "{plain:?}");
        let mut overlay = FsInfo::new("overlay", false);
        overlay.container_root = true;
        for pid in [dead_pid, me] {
            let in_container = PidClaim {
                fs: Some(&overlay),
                ..claim(pid)
            };
            let j = judge_pid(&in_container, &snap);
            assert_eq!(j.verdict, Verdict::Foreign, "{j:?}");
        }
    }
}
