//! The PID rules: a lock that names its owner's PID is judged by what this host (and the PID
//! namespaces that can see the file) says of that PID. Host first: an owner on another host
//! is `foreign`, and no time rule applies to it. On this host, the owner is proven gone only
//! by [`Rule::PidGone`] (no such process, or a zombie), [`Rule::PidReused`] (the process now
//! holding the PID started after the lock was written, or at another start tick than the
//! record's) or [`Rule::EarlierBoot`]; a live process that started before the lock is `live`
//! when it is one of the lock's known writers and `unknown` otherwise: a name proves only
//! `live`, never `stale`.

pub use super::alive::{At, not_an_app_owner};
use super::alive::{Claim, INITIAL_PID_NS, alive, gone};
use super::{Judgement, namespaces};
use crate::probe::{FsInfo, PidState, Snapshot};
use crate::verdict::{Proof, Rule, Verdict};

pub use locksmith_sys::time::{Timed, fmt_ms};

/// Whether a lock written at `written_ms` (the latest it can have been, by the clock of
/// then) was written before this host booted, by the time rule both judges share
/// ([`locksmith_sys::time::written_before_boot`]): beyond the clock's margin ([`Clock`]), on a
/// file system that survives a reboot and that no other machine writes to.
///
/// [`Clock`]: crate::probe::clock::Clock
pub fn written_before_boot(written_ms: i64, fs: Option<&FsInfo>, snap: &Snapshot) -> Timed {
    locksmith_sys::time::written_before_boot(written_ms, snap.host.boot_time, fs, || snap.clock())
}

/// [`Rule::EarlierBoot`] by time: the proof, when the lock was written before this boot.
pub(super) fn earlier_boot_by_time(
    written_ms: i64,
    fs: &FsInfo,
    snap: &Snapshot,
) -> Option<Judgement> {
    let Timed::Proven { line, margin_ms } = written_before_boot(written_ms, Some(fs), snap) else {
        return None;
    };
    let proof = Proof::by(Rule::EarlierBoot)
        .fact("written", fmt_ms(written_ms))
        .fact(
            "boot_time",
            snap.host
                .boot_time
                .map(|b| fmt_ms(b * 1000))
                .unwrap_or_default(),
        )
        .fact("margin_ms", margin_ms)
        .fact("fs", fs.kind.as_str());
    Some(Judgement::stale(proof, line).because(snap.clock().how))
}

/// The judgement for a lock whose PID names no possible owner here ([`not_an_app_owner`]).
fn not_an_owner_here(claim: &Claim<'_>, pid: i32, why: String, snap: &Snapshot) -> Judgement {
    if claim.c.pid_ns.is_some() && claim.c.pid_ns == snap.host.pid_ns {
        // Recorded in our own namespace, yet naming init or a kernel thread: not a record
        // any writer makes.
        return Judgement::unknown(why).because(format!(
            "the lock records our own PID namespace, so PID {pid} cannot be an owner elsewhere either: its owner cannot be told"
        ));
    }
    Judgement::foreign(why).because(format!(
        "the lock was most likely written in another PID namespace (a container or a sandbox), where PID {pid} is another process: it cannot be checked from here"
    ))
}

/// The PID rule for an owner of another kernel (its boot id `theirs` is not this kernel's
/// `ours`) that names no other host: an earlier boot of this host, so `stale`; unless it names
/// no host at all and lies on a network file system, where another machine may have written
/// it: `foreign`. (The engine's own evidence words it alike.)
fn another_boot(theirs: &str, ours: &str, names_host: bool, fs: &FsInfo) -> Judgement {
    if !names_host && fs.network {
        return Judgement::foreign(format!(
            "written by another kernel (boot id {theirs}) {}, naming no host",
            fs.reached_from_afar()
        ));
    }
    Judgement::stale(
        Proof::by(Rule::EarlierBoot)
            .fact("boot_id", theirs)
            .fact("this_boot_id", ours),
        format!(
            "written during an earlier boot of this host (boot id {theirs}; this boot is {ours})"
        ),
    )
}

/// Judges a PID-based lock by the PID rules.
pub(super) fn judge(claim: &Claim<'_>, snap: &Snapshot) -> Judgement {
    let c = claim.c;
    let pid = c.pid;
    if pid <= 0 || pid > snap.pid_max {
        return Judgement::unknown(format!(
            "PID {pid} is not a valid process id (1..={})",
            snap.pid_max
        ));
    }
    let pid = pid as i32;
    let our_boot = snap.host.boot_id.as_deref();
    let same_kernel = matches!((c.boot_id.as_deref(), our_boot), (Some(a), Some(b)) if a == b);
    let network = claim.at.fs.network;

    // Our boot id settles the host only where the record also names its PID namespace (the
    // engine's records): a writer on this kernel under another host name runs in another UTS
    // namespace, most likely with PIDs of its own.
    if !(same_kernel && c.pid_ns.is_some())
        && let Some(h) = c.host.as_deref()
        && h != snap.host.hostname
    {
        if let Some(j) = namespaces::live_in_named_host(claim, h, snap) {
            return j;
        }
        let mut j = Judgement::foreign(format!(
            "owner host \"{h}\" is not this host \"{}\": its PID {pid} cannot be checked here",
            snap.host.hostname
        ));
        j.remote = Some(Box::new(claim.remote(h)));
        return j;
    }
    if !same_kernel
        && let (Some(theirs), Some(ours)) =
            (c.machine_id.as_deref(), snap.host.machine_id.as_deref())
        && !theirs.eq_ignore_ascii_case(ours)
    {
        return Judgement::foreign(format!(
            "written on another machine (machine id {theirs}; this machine is {ours}), though its host name is ours: its PID {pid} cannot be checked here"
        ));
    }
    if let (Some(theirs), Some(ours)) = (c.boot_id.as_deref(), our_boot)
        && theirs != ours
    {
        return another_boot(theirs, ours, c.host.is_some(), claim.at.fs);
    }
    if network && c.host.is_none() && !same_kernel {
        // Other machines see this file too: an owner found here (on this host or in a
        // container that mounts it) is live; nothing found here proves nothing.
        if let Some(j) = namespaces::judge(claim, snap)
            && j.verdict() == Verdict::Live
        {
            return j;
        }
        return Judgement::foreign(format!(
            "{} and naming no host: PID {pid} may belong to another machine",
            claim.at.fs.reached_from_afar()
        ));
    }
    // When the lock was written, for the earlier-boot rule: the latest it can have been by
    // the record's own time, unless it was written in another mount namespace (then only the
    // file's ctime is ours).
    let written_ms = if c.elsewhere.is_some() {
        claim.at.written_by_ms()
    } else {
        claim.written_ms
    };
    if let Some(j) = earlier_boot_by_time(written_ms, claim.at.fs, snap) {
        return j;
    }
    if let Some(j) = namespaces::judge(claim, snap) {
        return j;
    }
    if let Some(why) = &c.elsewhere {
        return Judgement::foreign(format!(
            "{why}: its PID {pid} is of a PID namespace that cannot be checked here"
        ));
    }
    if claim.at.fs.container_root && c.pid_ns.is_none() && !same_kernel {
        return Judgement::foreign(format!(
            "on the root file system of a container (an overlay that is not ours): PID {pid} belongs to the container's PID namespace and cannot be checked here"
        ));
    }
    if let (Some(theirs), Some(ours)) = (c.pid_ns, snap.host.pid_ns)
        && theirs != ours
    {
        if let Some(j) = namespaces::judge_in_named_namespace(claim, theirs, snap) {
            return j;
        }
        return Judgement::foreign(format!(
            "owner is in another PID namespace (pid:[{theirs}], ours pid:[{ours}]): PID {pid} cannot be checked here"
        ));
    }

    let state = snap.pid(pid);
    if let Some(why) = not_an_app_owner(pid, &state, snap) {
        return not_an_owner_here(claim, pid, why, snap);
    }
    match state {
        PidState::Absent if !pid_space_is_ours(claim, snap) => Judgement::foreign(format!(
            "no process {pid} in our PID namespace, but we run inside one that is not the host's (pid:[{}]) and this file is on a mount shared with the outside: PID {pid} may belong to a process outside it",
            snap.host.pid_ns.unwrap_or(0)
        )),
        PidState::Absent => gone(
            pid,
            "ESRCH",
            format!("no process {pid} on this host (kill({pid}, 0): ESRCH)"),
        ),
        PidState::Zombie(f) => gone(
            pid,
            "zombie",
            format!("process {pid} ({}) is a zombie: it has exited", f.comm),
        ),
        PidState::ExistsOpaque => Judgement::live(format!(
            "process {pid} exists (kill({pid}, 0): EPERM; /proc/{pid} not readable)"
        )),
        PidState::Alive(f) => {
            let mut j = alive(claim, &f);
            if j.verdict() == Verdict::Live {
                works_in_app(claim, &mut j, f.pid, snap);
            }
            j.process = Some(Box::new(snap.process_info(&f)));
            j
        }
    }
}

/// For an application's pid file (one its dialect's place rule fits), a live owner works
/// in that application's directory: one that works elsewhere may be another
/// application's (a server started with its pid file pointing here), so `unknown`.
fn works_in_app(claim: &Claim<'_>, j: &mut Judgement, pid: i32, snap: &Snapshot) {
    let Some(app) = namespaces::app_dir(claim, claim.at.path) else {
        return;
    };
    let ids = snap.dir_ids(std::slice::from_ref(&app));
    if ids.is_empty() {
        return;
    }
    match snap.cwd_within(pid, &ids) {
        Some(true) => j
            .evidence
            .push(format!("it works in the application's directory {}", app.display())),
        Some(false) => {
            let cwd = snap
                .cwd_of(pid)
                .map(|p| crate::text::truncate(&p.to_string_lossy(), 200))
                .unwrap_or_else(|| "elsewhere".into());
            j.set_unproven(Verdict::Unknown);
            j.evidence.push(format!(
                "but it works in {cwd}, not in the application's directory {}: it may be another application's server",
                app.display()
            ));
        }
        None => j.evidence.push(
            "its working directory cannot be read, so it is not known whether it serves this application".into(),
        ),
    }
}

/// Whether the PIDs of this lock are numbered in our PID namespace, so that ESRCH proves the
/// owner gone: we run in the host's namespace, or the lock records our namespace, or (inside a
/// container) it lies on our own container image root (an overlay), which processes outside
/// the container do not write to. A root shared with the host (plain `unshare --pid`) is not
/// private.
fn pid_space_is_ours(claim: &Claim<'_>, snap: &Snapshot) -> bool {
    let ours = snap.host.pid_ns;
    ours.is_none_or(|ns| ns == INITIAL_PID_NS)
        || (claim.c.pid_ns.is_some() && claim.c.pid_ns == ours)
        || (claim.at.fs.own_root && claim.at.fs.kind.is_overlay())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judge::claims::{OwnerClaim, Writers};
    use crate::probe::clock::Clock;
    use crate::probe::{Evidence, ProcFacts, Stat};
    use locksmith_sys::time::CLOCK_SLACK_MS;

    /// The machine of these tests: booted at BOOT, judged a day later.
    const BOOT: i64 = 1_800_000_000_000;
    const NOW: i64 = BOOT + 86_400_000;
    const HOUR: i64 = 3_600_000;

    fn machine() -> Evidence {
        Evidence::machine(BOOT, NOW)
    }

    /// A lock file last changed at `ctime_ms`, whose mtime says `mtime_ms`.
    fn lock(mtime_ms: i64, ctime_ms: i64) -> Stat {
        Stat::file(0, mtime_ms, ctime_ms)
    }

    fn judged(c: &OwnerClaim, meta: &Stat, fs: &FsInfo, ev: Evidence) -> Judgement {
        let snap = Snapshot::replay(ev);
        let path = std::path::Path::new("/srv/x.pid");
        let clock = snap.clock();
        let at = At { path, meta, fs };
        judge(
            &Claim {
                c,
                at,
                written_ms: at.latest_write_ms(c.written_ms),
                clock: &clock,
            },
            &snap,
        )
    }

    fn ext4() -> FsInfo {
        FsInfo::new("ext4", false)
    }

    #[test]
    fn a_name_that_does_not_match_proves_nothing() {
        let started = NOW - 2 * HOUR;
        let nano = ProcFacts::running(42, "nano", "/usr/bin/nano", BOOT, started);
        let ev = machine().with_process(nano);
        let vims = OwnerClaim::pid(42, Writers::named(&["vim"]));
        // nano, alive since before the lock: not a vim, but not proven gone either.
        let written = lock(NOW - HOUR, NOW - HOUR);
        let j = judged(&vims, &written, &ext4(), ev.clone());
        assert_eq!(j.verdict(), Verdict::Unknown, "{j:?}");
        assert!(j.evidence[0].contains("nothing proves"), "{j:?}");
        // Any name when the writers are not known.
        let any = OwnerClaim::pid(42, Writers::ANY);
        assert_eq!(
            judged(&any, &written, &ext4(), ev.clone()).verdict(),
            Verdict::Live
        );
        // PID reuse is proven by the start time only: written before it started.
        let before = lock(started - CLOCK_SLACK_MS - 1, started - CLOCK_SLACK_MS - 1);
        let j = judged(&vims, &before, &ext4(), ev.clone());
        assert_eq!(j.verdict(), Verdict::Stale, "{j:?}");
        assert_eq!(j.proofs()[0].rule, Rule::PidReused);
        // Within the clock slack: not proven.
        let close = lock(started - CLOCK_SLACK_MS, started - CLOCK_SLACK_MS);
        assert_eq!(
            judged(&vims, &close, &ext4(), ev).verdict(),
            Verdict::Unknown
        );
    }

    #[test]
    fn an_mtime_set_back_proves_nothing() {
        // A live daemon's pid file, `touch -d`ed to before the daemon started, even to before
        // this host booted: its ctime says when it was really last changed.
        let started = NOW - 2 * HOUR;
        let daemon = ProcFacts::running(42, "daemon", "/usr/sbin/daemon", BOOT, started);
        let ev = machine().with_process(daemon);
        let c = OwnerClaim::pid(42, Writers::ANY);
        for mtime in [started - 5 * 60_000, BOOT - 3 * HOUR, 0] {
            let touched = lock(mtime, NOW - HOUR);
            let j = judged(&c, &touched, &ext4(), ev.clone());
            assert_eq!(j.verdict(), Verdict::Live, "mtime {mtime}: {j:?}");
            assert!(
                j.evidence.iter().any(|l| l.contains("mtime says")),
                "the evidence shows the mtime for what it is: {j:?}"
            );
        }
    }

    #[test]
    fn a_clock_stepped_forward_since_boot_keeps_time_rules_from_proving() {
        // The clock moved forward by a day after the daemon started and wrote its pid file:
        // the file looks a day older next to the daemon's start time (read through `btime`
        // now), and to the boot time.
        let started = NOW - 2 * HOUR;
        let step = 24 * HOUR;
        let daemon = ProcFacts::running(42, "daemon", "/usr/sbin/daemon", BOOT, started);
        let mut ev = machine().with_process(daemon);
        ev.clock = Some(Clock {
            step_ms: Some(step + 1000),
            how: "the wall clock may have stepped forward by up to 1 d 0 h since this boot began"
                .into(),
        });
        let c = OwnerClaim::pid(42, Writers::ANY);
        let before_step = lock(started + 60_000 - step, started + 60_000 - step);
        let j = judged(&c, &before_step, &ext4(), ev.clone());
        assert_ne!(j.verdict(), Verdict::Stale, "{j:?}");
        assert!(
            j.evidence.iter().any(|l| l.contains("stepped forward")),
            "the evidence says why: {j:?}"
        );
        // Nor written before boot, by a clock that may have stepped.
        let gone = OwnerClaim::pid(43, Writers::ANY);
        let long_ago = lock(BOOT - HOUR, BOOT - HOUR);
        let j = judged(&gone, &long_ago, &ext4(), ev.clone());
        assert_eq!(
            j.proofs().first().map(|p| p.rule),
            Some(Rule::PidGone),
            "{j:?}"
        );
        // A clock that nothing tells about proves nothing either.
        ev.clock = Some(Clock {
            step_ms: None,
            how: "nothing tells".into(),
        });
        let j = judged(&c, &before_step, &ext4(), ev.clone());
        assert_ne!(j.verdict(), Verdict::Stale, "{j:?}");
        // Beyond the step, the proof stands.
        ev.clock = Some(Clock {
            step_ms: Some(HOUR),
            how: String::new(),
        });
        let written = lock(started - 2 * HOUR, started - 2 * HOUR);
        let j = judged(&c, &written, &ext4(), ev);
        assert_eq!(j.proofs()[0].rule, Rule::PidReused, "{j:?}");
    }

    #[test]
    fn another_start_tick_is_pid_reuse_whatever_the_clock() {
        let mut f = ProcFacts::running(42, "sleep", "/usr/bin/sleep", BOOT, NOW - HOUR);
        f.start_ticks = 8;
        let mut ev = machine().with_process(f.clone());
        ev.clock = Some(Clock {
            step_ms: None,
            how: String::new(),
        });
        let mut c = OwnerClaim::pid(42, Writers::ANY);
        c.start_ticks = Some(7);
        let written = lock(NOW, NOW);
        let j = judged(&c, &written, &ext4(), ev.clone());
        assert_eq!(j.verdict(), Verdict::Stale);
        assert_eq!(j.proofs()[0].rule, Rule::PidReused);
        assert_eq!(j.proofs()[0].get("record_start_ticks"), Some(&7.into()));
        c.start_ticks = Some(8);
        assert_eq!(judged(&c, &written, &ext4(), ev).verdict(), Verdict::Live);
    }

    #[test]
    fn a_zombie_owner_is_gone() {
        let f = ProcFacts::running(42, "true", "/usr/bin/true", BOOT, NOW - HOUR);
        let ev = machine().with_zombie(f);
        let j = judged(
            &OwnerClaim::pid(42, Writers::ANY),
            &lock(NOW, NOW),
            &ext4(),
            ev,
        );
        assert_eq!(j.verdict(), Verdict::Stale, "{j:?}");
        assert!(j.evidence[0].contains("zombie"), "{j:?}");
        assert_eq!(j.proofs()[0].rule, Rule::PidGone);
    }

    #[test]
    fn init_and_kernel_threads_are_never_owners() {
        let mut ev = machine();
        let snap = Snapshot::replay(ev.clone());
        let kernel = |pid, comm: &str, kernel_thread| {
            PidState::Alive(ProcFacts {
                kernel_thread,
                ..ProcFacts::running(pid, comm, "/x", BOOT, BOOT)
            })
        };
        assert!(not_an_app_owner(1, &kernel(1, "systemd", false), &snap).is_some());
        assert!(not_an_app_owner(2, &kernel(2, "kthreadd", true), &snap).is_some());
        assert!(not_an_app_owner(77, &kernel(77, "kworker/0:1", true), &snap).is_some());
        assert!(not_an_app_owner(2, &PidState::ExistsOpaque, &snap).is_some());
        assert!(not_an_app_owner(77, &kernel(77, "rails", false), &snap).is_none());
        assert!(not_an_app_owner(1, &PidState::Absent, &snap).is_none());
        // Inside a container, PID 1 is the container's own program: it may own a lock.
        ev.host.pid_ns = Some(4_026_532_999);
        let snap = Snapshot::replay(ev);
        assert!(not_an_app_owner(1, &kernel(1, "postgres", false), &snap).is_none());
        assert!(not_an_app_owner(9, &kernel(9, "kworker", true), &snap).is_some());
    }

    #[test]
    fn files_on_tmpfs_are_never_from_an_earlier_boot() {
        let snap = Snapshot::replay(machine());
        let long_ago = NOW - 10 * 365 * 86_400_000;
        let tmpfs = FsInfo::new("tmpfs", false);
        let proven = |t: Timed| matches!(t, Timed::Proven { .. });
        assert!(proven(written_before_boot(long_ago, Some(&ext4()), &snap)));
        assert!(proven(written_before_boot(long_ago, None, &snap)));
        assert_eq!(
            written_before_boot(long_ago, Some(&tmpfs), &snap),
            Timed::No
        );
        assert_eq!(written_before_boot(NOW, Some(&ext4()), &snap), Timed::No);
    }

    #[test]
    fn rules() {
        let me = 4242;
        let ev = machine().with_process(ProcFacts::running(
            me,
            "app",
            "/usr/bin/app",
            BOOT,
            NOW - HOUR,
        ));
        let now = lock(NOW, NOW);
        let mine = OwnerClaim::pid(me as i64, Writers::ANY);
        assert_eq!(
            judged(&mine, &now, &ext4(), ev.clone()).verdict(),
            Verdict::Live
        );
        for bad in [0, 1 << 31, -1] {
            let c = OwnerClaim::pid(bad, Writers::ANY);
            assert_eq!(
                judged(&c, &now, &ext4(), ev.clone()).verdict(),
                Verdict::Unknown
            );
        }
        let other_host = OwnerClaim {
            host: Some("elsewhere.example".into()),
            ..mine.clone()
        };
        let j = judged(&other_host, &now, &ext4(), ev.clone());
        assert_eq!(j.verdict(), Verdict::Foreign);
        assert_eq!(j.remote.as_ref().unwrap().host, "elsewhere.example");

        // Our boot id with another hostname and our PID namespace: same kernel, same PIDs,
        // so the PID is checked (a container whose host name changed).
        let renamed = OwnerClaim {
            host: Some("renamed-container".into()),
            boot_id: ev.host.boot_id.clone(),
            pid_ns: ev.host.pid_ns,
            ..mine.clone()
        };
        assert_eq!(
            judged(&renamed, &now, &ext4(), ev.clone()).verdict(),
            Verdict::Live
        );
        // Without the PID namespace, another host name is another UTS namespace, most likely
        // with PIDs of its own: not checked here.
        let unnamed_ns = OwnerClaim {
            pid_ns: None,
            ..renamed.clone()
        };
        assert_eq!(
            judged(&unnamed_ns, &now, &ext4(), ev.clone()).verdict(),
            Verdict::Foreign
        );

        let old_boot = OwnerClaim {
            boot_id: Some("00000000-0000-0000-0000-000000000000".into()),
            ..mine.clone()
        };
        let j = judged(&old_boot, &now, &ext4(), ev.clone());
        assert_eq!(j.verdict(), Verdict::Stale, "{j:?}");
        assert_eq!(j.proofs()[0].rule, Rule::EarlierBoot);

        // Written long before boot: an earlier boot (ext4) ...
        let ancient = lock(NOW - 10 * 365 * 86_400_000, NOW - 10 * 365 * 86_400_000);
        let j = judged(&mine, &ancient, &ext4(), ev.clone());
        assert_eq!(j.proofs()[0].rule, Rule::EarlierBoot, "{j:?}");
        // ... or PID reuse where no boot survives (tmpfs).
        let tmpfs = FsInfo::new("tmpfs", false);
        let j = judged(&mine, &ancient, &tmpfs, ev.clone());
        assert_eq!(j.proofs()[0].rule, Rule::PidReused, "{j:?}");

        // Not the program the lock names, alive since before it: not proven.
        let postgres = OwnerClaim::pid(me as i64, Writers::named(&["postgres"]));
        assert_eq!(
            judged(&postgres, &now, &ext4(), ev.clone()).verdict(),
            Verdict::Unknown
        );

        let nfs = FsInfo::new("nfs", true);
        assert_eq!(
            judged(&mine, &now, &nfs, ev.clone()).verdict(),
            Verdict::Foreign
        );

        // On a container's root file system seen from outside, a PID is the container's:
        // neither a dead nor a live host PID proves anything.
        let gone = OwnerClaim::pid(4243, Writers::ANY);
        let plain = judged(&gone, &now, &ext4(), ev.clone());
        assert_eq!(plain.verdict(), Verdict::Stale, "{plain:?}");
        assert_eq!(plain.proofs()[0].rule, Rule::PidGone);
        let mut overlay = FsInfo::new("overlay", false);
        overlay.container_root = true;
        for c in [&gone, &mine] {
            let j = judged(c, &now, &overlay, ev.clone());
            assert_eq!(j.verdict(), Verdict::Foreign, "{j:?}");
        }
    }
}
