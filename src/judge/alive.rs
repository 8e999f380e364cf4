//! What one live process says about a lock's owner claim: the claim settled against the lock
//! file ([`Claim`]), which PIDs can never own an application's lock, and the rule for a live
//! process with the owner's PID ([`alive`]): reused (by its start time), the owner, or not
//! proven either way. Shared by the PID rules on this host and in other PID namespaces.

use std::path::Path;

use super::Judgement;
use super::claims::{Match, OwnerClaim};
use crate::probe::{FsInfo, PidState, ProcFacts, Snapshot, Stat};
use crate::verdict::{Proof, RemoteClaim, Rule};
use locksmith_sys::time::{self, Timed, fmt_ms};

/// Inode of the initial PID namespace (`PROC_PID_INIT_INO`): the host's, outside any container.
pub(crate) const INITIAL_PID_NS: u64 = 0xEFFF_FFFC;

/// The lock file as the rules see it.
#[derive(Debug, Clone, Copy)]
pub struct At<'a> {
    pub path: &'a Path,
    /// `lstat` of the path.
    pub meta: &'a Stat,
    pub fs: &'a FsInfo,
}

impl At<'_> {
    /// The file's mtime: what its writer (or anyone who may write it) set. Shown, never proof
    /// of when anything happened.
    pub fn mtime_ms(&self) -> i64 {
        self.meta.mtime_ms()
    }

    /// The latest the file can have been written, by the clock of then: its ctime, which
    /// nobody can set back.
    pub fn written_by_ms(&self) -> i64 {
        self.meta.ctime_ms()
    }

    /// The latest the lock can have been written given what its record says (`record_ms`,
    /// the writer's own time, believed when it is not later than the ctime).
    pub fn latest_write_ms(&self, record_ms: Option<i64>) -> i64 {
        time::latest_write_ms(record_ms, self.written_by_ms())
    }

    /// `last changed at T (ctime)`, with the mtime when it says otherwise (by more than a
    /// second).
    pub fn when_written(&self, written_ms: i64) -> String {
        time::when_written(written_ms, self.mtime_ms(), self.written_by_ms())
    }
}

/// An owner claim with the time it was written settled (the latest it can have been: the
/// record's time, or the file's ctime), and the clock that time was read with.
pub(super) struct Claim<'a> {
    pub c: &'a OwnerClaim,
    pub at: At<'a>,
    pub written_ms: i64,
    pub clock: &'a crate::probe::clock::Clock,
}

impl Claim<'_> {
    pub fn pid(&self) -> i64 {
        self.c.pid
    }

    /// What to ask `host` about this claim (see [`crate::remote`]).
    pub(super) fn remote(&self, host: &str) -> RemoteClaim {
        RemoteClaim {
            host: host.to_string(),
            pid: self.c.pid,
            boot_id: self.c.boot_id.clone(),
            pid_ns: self.c.pid_ns,
            written_ms: Some(self.written_ms),
            start_ticks: self.c.start_ticks,
            expect: self.c.writers.names.iter().map(|s| s.to_string()).collect(),
        }
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

/// [`Rule::PidGone`]: no process `pid` (ESRCH), or a zombie.
pub(super) fn gone(pid: i32, seen: &str, line: String) -> Judgement {
    Judgement::stale(
        Proof::by(Rule::PidGone).fact("pid", pid).fact("seen", seen),
        line,
    )
}

/// A live process with the lock's PID: [`Rule::PidReused`] when it started after the lock was
/// written (or at another tick than the record names); otherwise `live` when it is one of the
/// lock's writers and `unknown` when it is not (its name proves nothing).
pub(super) fn alive(claim: &Claim<'_>, f: &ProcFacts) -> Judgement {
    let pid = f.pid;
    let c = claim.c;
    if let Some(want) = c.start_ticks
        && want != f.start_ticks
    {
        let proof = Proof::by(Rule::PidReused)
            .fact("pid", pid)
            .fact("record_start_ticks", want)
            .fact("process_start_ticks", f.start_ticks);
        return Judgement::stale(
            proof,
            format!(
                "PID {pid} was reused: the owner started at tick {want} after boot, process {pid} ({}) at tick {}",
                f.comm, f.start_ticks
            ),
        );
    }
    let w = claim.written_ms;
    let mut after_unproven = None;
    if let Some(s) = f.start_ms
        && c.start_ticks.is_none()
    {
        let written = claim.at.when_written(w);
        match time::started_after_written(pid, &f.comm, s, w, &written, || claim.clock.clone()) {
            Timed::Proven { line, margin_ms } => {
                let proof = Proof::by(Rule::PidReused)
                    .fact("pid", pid)
                    .fact("started", fmt_ms(s))
                    .fact("written", fmt_ms(w))
                    .fact("margin_ms", margin_ms);
                return Judgement::stale(proof, line).because(claim.clock.how.clone());
            }
            Timed::Unproven(line) => after_unproven = Some(line),
            Timed::No => {}
        }
    }
    let started = f
        .start_ms
        .map(fmt_ms)
        .unwrap_or_else(|| "at an unknown time".into());
    let before = if c.start_ticks.is_some() {
        format!("its start time matches the record (tick {})", f.start_ticks)
    } else if let Some(line) = after_unproven {
        line
    } else {
        format!(
            "it started before the lock was {}",
            claim.at.when_written(w)
        )
    };
    if c.writers.of(f) == Match::No {
        return Judgement::unknown(format!(
            "process {pid} is \"{}\" ({}), alive and not proven to have started after the lock: not a {}, but nothing proves the lock is not its",
            f.comm,
            f.exe.as_deref().unwrap_or("executable not readable"),
            c.writers.describe()
        ))
        .because(before);
    }
    Judgement::live(format!(
        "process {pid} ({}) is alive, started {started}",
        f.comm
    ))
    .because(before)
}
