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

pub use locksmith_sys::time::fmt_ms;

/// The evidence line for a lock written before this host booted (with the clock slack), if it
/// was. Never on a file system that does not survive a reboot (tmpfs, ramfs: `/run`, often
/// `/tmp`): a file there is from this boot whatever its mtime says, so an mtime before boot
/// only shows the clock was stepped since it was written.
pub fn written_before_boot(
    written_ms: i64,
    fs: Option<&FsInfo>,
    snap: &Snapshot,
) -> Option<String> {
    locksmith_sys::time::before_boot(written_ms, snap.host.boot_time, fs)
}

/// [`Rule::EarlierBoot`] by time: the proof, when the lock was written before this boot.
pub(super) fn earlier_boot_by_time(
    written_ms: i64,
    fs: &FsInfo,
    snap: &Snapshot,
) -> Option<Judgement> {
    let line = written_before_boot(written_ms, Some(fs), snap)?;
    let proof = Proof::by(Rule::EarlierBoot)
        .fact("written", fmt_ms(written_ms))
        .fact(
            "boot_time",
            snap.host
                .boot_time
                .map(|b| fmt_ms(b * 1000))
                .unwrap_or_default(),
        )
        .fact("fs", fs.kind.as_str());
    Some(Judgement::stale(proof, line))
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
    // When the lock was written, for the earlier-boot rule: the record's own time, unless
    // it was written in another mount namespace (then only the file's mtime is ours).
    let written_ms = if c.elsewhere.is_some() {
        claim.at.mtime_ms()
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

/// For an application's pid file (`APP/tmp/pids/*.pid`, a `postmaster.pid`), a live owner
/// works in that application's directory: one that works elsewhere may be another
/// application's (a server started with its pid file pointing here), so `unknown`.
fn works_in_app(claim: &Claim<'_>, j: &mut Judgement, pid: i32, snap: &Snapshot) {
    let Some(app) = namespaces::app_dir(claim.at.path) else {
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

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use crate::judge::claims::{OwnerClaim, Writers};
    use crate::probe::ProcFacts;
    use locksmith_sys::time::CLOCK_SLACK_MS;

    /// A lock file of the test's own (a real file: the rules look at who can see it).
    fn lock_file() -> (tempfile::TempDir, std::path::PathBuf, crate::probe::Stat) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.pid");
        std::fs::write(&path, "").unwrap();
        let meta = crate::probe::Stat::from(std::fs::symlink_metadata(&path).unwrap());
        (dir, path, meta)
    }

    fn judged(c: &OwnerClaim, written_ms: i64, fs: &FsInfo, snap: &Snapshot) -> Judgement {
        let (_dir, path, meta) = lock_file();
        judge(
            &Claim {
                c,
                at: At {
                    path: &path,
                    meta: &meta,
                    fs,
                },
                written_ms,
            },
            snap,
        )
    }

    fn facts(pid: i32, comm: &str, exe: Option<&str>) -> ProcFacts {
        ProcFacts {
            pid,
            comm: comm.into(),
            exe: exe.map(str::to_string),
            state: 'S',
            threads: 1,
            start_ms: Some(1_000_000),
            ..Default::default()
        }
    }

    fn alive_as(c: &OwnerClaim, f: &ProcFacts, written_ms: i64) -> Judgement {
        let (_dir, path, meta) = lock_file();
        let fs = FsInfo::new("ext4", false);
        alive(
            &Claim {
                c,
                at: At {
                    path: &path,
                    meta: &meta,
                    fs: &fs,
                },
                written_ms,
            },
            f,
        )
    }

    #[test]
    fn a_name_that_does_not_match_proves_nothing() {
        let vims = OwnerClaim::pid(42, Writers::named(&["vim"]));
        // nano, alive since before the lock: not a vim, but not proven gone either.
        let nano = facts(42, "nano", Some("/usr/bin/nano"));
        let j = alive_as(&vims, &nano, 2_000_000);
        assert_eq!(j.verdict(), Verdict::Unknown, "{j:?}");
        assert!(j.evidence[0].contains("nothing proves"), "{j:?}");
        // Unreadable executable, name vim: live (a name proves only live).
        let editor = facts(42, "vim", None);
        assert_eq!(alive_as(&vims, &editor, 2_000_000).verdict(), Verdict::Live);
        // Any name when the writers are not known.
        let any = OwnerClaim::pid(42, Writers::ANY);
        assert_eq!(alive_as(&any, &nano, 2_000_000).verdict(), Verdict::Live);
        // PID reuse is proven by the start time only.
        let j = alive_as(&vims, &nano, 1_000_000 - CLOCK_SLACK_MS - 1);
        assert_eq!(j.verdict(), Verdict::Stale, "{j:?}");
        assert_eq!(j.proofs()[0].rule, Rule::PidReused);
        // Within the clock slack: not proven.
        let j = alive_as(&vims, &nano, 1_000_000 - CLOCK_SLACK_MS);
        assert_eq!(j.verdict(), Verdict::Unknown, "{j:?}");
    }

    #[test]
    fn another_start_tick_is_pid_reuse() {
        let mut c = OwnerClaim::pid(42, Writers::ANY);
        c.start_ticks = Some(7);
        let mut f = facts(42, "sleep", Some("/usr/bin/sleep"));
        f.start_ticks = 8;
        let j = alive_as(&c, &f, 0);
        assert_eq!(j.verdict(), Verdict::Stale);
        assert_eq!(j.proofs()[0].rule, Rule::PidReused);
        assert_eq!(j.proofs()[0].get("record_start_ticks"), Some(&7.into()));
        f.start_ticks = 7;
        assert_eq!(alive_as(&c, &f, i64::MAX / 2).verdict(), Verdict::Live);
    }

    #[test]
    fn a_zombie_owner_is_gone() {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id() as i64;
        let fs = FsInfo::new("ext4", false);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let j = loop {
            // A fresh snapshot each time: the state of a PID is cached per snapshot.
            let snap = Snapshot::take();
            let j = judged(
                &OwnerClaim::pid(pid, Writers::ANY),
                snap.taken_ms,
                &fs,
                &snap,
            );
            if j.verdict() == Verdict::Stale || std::time::Instant::now() > deadline {
                break j;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        };
        assert_eq!(j.verdict(), Verdict::Stale, "{j:?}");
        assert!(j.evidence[0].contains("zombie"), "{j:?}");
        assert_eq!(j.proofs()[0].rule, Rule::PidGone);
        child.wait().unwrap();
    }

    #[test]
    fn init_and_kernel_threads_are_never_owners() {
        let mut snap = Snapshot::take();
        snap.host.pid_ns = Some(INITIAL_PID_NS);
        let kernel = |pid, comm: &str, kernel_thread| {
            PidState::Alive(ProcFacts {
                kernel_thread,
                ..facts(pid, comm, None)
            })
        };
        assert!(not_an_app_owner(1, &kernel(1, "systemd", false), &snap).is_some());
        assert!(not_an_app_owner(2, &kernel(2, "kthreadd", true), &snap).is_some());
        assert!(not_an_app_owner(77, &kernel(77, "kworker/0:1", true), &snap).is_some());
        assert!(not_an_app_owner(2, &PidState::ExistsOpaque, &snap).is_some());
        assert!(not_an_app_owner(77, &kernel(77, "rails", false), &snap).is_none());
        assert!(not_an_app_owner(1, &PidState::Absent, &snap).is_none());
        // Inside a container, PID 1 is the container's own program: it may own a lock.
        snap.host.pid_ns = Some(4_026_532_999);
        assert!(not_an_app_owner(1, &kernel(1, "postgres", false), &snap).is_none());
        assert!(not_an_app_owner(9, &kernel(9, "kworker", true), &snap).is_some());
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
        let now = snap.taken_ms;
        let ext4 = FsInfo::new("ext4", false);
        let me = std::process::id() as i64;
        let mine = OwnerClaim::pid(me, Writers::ANY);
        assert_eq!(judged(&mine, now, &ext4, &snap).verdict(), Verdict::Live);
        for bad in [0, 1 << 31, -1] {
            let c = OwnerClaim::pid(bad, Writers::ANY);
            assert_eq!(judged(&c, now, &ext4, &snap).verdict(), Verdict::Unknown);
        }
        let other_host = OwnerClaim {
            host: Some("elsewhere.example".into()),
            ..mine.clone()
        };
        let j = judged(&other_host, now, &ext4, &snap);
        assert_eq!(j.verdict(), Verdict::Foreign);
        assert_eq!(j.remote.as_ref().unwrap().host, "elsewhere.example");

        // Our boot id with another hostname: same kernel, so the PID is checked.
        // Our boot id with another hostname and our PID namespace: same kernel, same PIDs,
        // so the PID is checked (a container whose host name changed).
        let renamed = OwnerClaim {
            host: Some("renamed-container".into()),
            boot_id: snap.host.boot_id.clone(),
            pid_ns: snap.host.pid_ns,
            ..mine.clone()
        };
        assert_eq!(judged(&renamed, now, &ext4, &snap).verdict(), Verdict::Live);
        // Without the PID namespace, another host name is another UTS namespace, most likely
        // with PIDs of its own: not checked here.
        let unnamed_ns = OwnerClaim {
            pid_ns: None,
            ..renamed.clone()
        };
        assert_eq!(
            judged(&unnamed_ns, now, &ext4, &snap).verdict(),
            Verdict::Foreign
        );

        let old_boot = OwnerClaim {
            boot_id: Some("00000000-0000-0000-0000-000000000000".into()),
            ..mine.clone()
        };
        let j = judged(&old_boot, now, &ext4, &snap);
        assert_eq!(j.verdict(), Verdict::Stale, "{j:?}");
        assert_eq!(j.proofs()[0].rule, Rule::EarlierBoot);

        // Written long before we started: an earlier boot (ext4) ...
        let j = judged(&mine, now - 10 * 365 * 86_400_000, &ext4, &snap);
        assert_eq!(j.proofs()[0].rule, Rule::EarlierBoot, "{j:?}");
        // ... or PID reuse where no boot survives (tmpfs).
        let tmpfs = FsInfo::new("tmpfs", false);
        let j = judged(&mine, now - 10 * 365 * 86_400_000, &tmpfs, &snap);
        assert_eq!(j.proofs()[0].rule, Rule::PidReused, "{j:?}");

        // Not the program the lock names, alive since before it: not proven.
        let postgres = OwnerClaim::pid(me, Writers::named(&["postgres"]));
        assert_eq!(
            judged(&postgres, now, &ext4, &snap).verdict(),
            Verdict::Unknown
        );

        let nfs = FsInfo::new("nfs", true);
        assert_eq!(judged(&mine, now, &nfs, &snap).verdict(), Verdict::Foreign);

        // On a container's root file system seen from outside, a PID is the container's:
        // neither a dead nor a live host PID proves anything.
        let mut dead = std::process::Command::new("true").spawn().unwrap();
        let dead_pid = dead.id() as i64;
        dead.wait().unwrap();
        let gone = OwnerClaim::pid(dead_pid, Writers::ANY);
        let plain = judged(&gone, now, &ext4, &snap);
        assert_eq!(plain.verdict(), Verdict::Stale, "{plain:?}");
        assert_eq!(plain.proofs()[0].rule, Rule::PidGone);
        let mut overlay = FsInfo::new("overlay", false);
        overlay.container_root = true;
        for c in [&gone, &mine] {
            let j = judged(c, now, &overlay, &snap);
            assert_eq!(j.verdict(), Verdict::Foreign, "{j:?}");
        }
    }
}
