//! The perturbation battery: a judgement made from recorded evidence, judged again after every
//! change of that evidence that does not change who holds the lock, with what each change may
//! and may not do to the verdict.
//!
//! A verdict must rest on what its facts prove. Each perturbation here changes a fact that a
//! real machine changes without anyone's lock changing hands: a file's mtime set (by `touch
//! -d`, `cp -p`, `tar x`, an image layer), the file replaced by a copy that keeps its times,
//! the wall clock stepped since boot, a PID namespace unrelated to the lock holding the
//! owner's PID number, a reader of another user holding a shared `flock` on the file, other
//! users' processes larger than a scan reads of them, the host renamed, the scan made by
//! another user. The invariants:
//!
//! - [`Expect::Same`]: the verdict, and the rules that prove a `stale` one, are the ones
//!   judged from the evidence as recorded (a fact no rule may use: an mtime alone, an unrelated
//!   namespace, a reader's lock, which keeps a stale lock from being removed without making it
//!   `live`);
//! - [`Expect::NoNewStale`]: a lock that was not `stale` is still not `stale`, and a `stale`
//!   one is `stale`, `unknown` or `foreign` (a fact that may take a proof away: a later
//!   ctime, a clock that may have stepped, a table cut at its bound).
//!
//! The battery also checks that the evidence as recorded gives the verdict judged live: a
//! recording that leaves out what a rule read would make every replay a guess. A perturbed
//! replay that asks what the recording does not answer fails, naming the perturbation and
//! the questions.

use std::fmt::Write as _;

use locksmith::probe::evidence::{Answer, LockFacts, SeenRec, SightingsRec};
use locksmith::probe::{Evidence, FileKey, PidState, ProcFacts, Snapshot, Stat, clock::Clock};
use locksmith::scan::{self, Config, Finding};
use locksmith::{HolderHow, Verdict};

/// What a perturbation may do to the verdict (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expect {
    Same,
    NoNewStale,
}

/// One change of the evidence that leaves who holds the lock as it is.
pub struct Perturbation {
    pub name: &'static str,
    pub expect: Expect,
    /// Changes `ev` for the lock `lock` judged `base`; `false` when it does not apply to it
    /// (the evidence left unchanged).
    pub apply: fn(&mut Evidence, &LockFacts, &Finding) -> bool,
}

const MINUTE_MS: i64 = 60_000;
const HOUR_MS: i64 = 60 * MINUTE_MS;

/// How far the clock steps in the perturbations that step it.
const STEP_MS: i64 = 6 * HOUR_MS;

/// A PID no process of a recording has: the reader's.
const READER_PID: i32 = 3_999_917;

/// The uid of the reader and of the other users whose processes are cut (`nobody`).
const NOBODY: u32 = 65534;

/// Every perturbation, in the order they are tried.
pub fn all() -> Vec<Perturbation> {
    vec![
        Perturbation {
            name: "the mtime alone set back five minutes",
            expect: Expect::Same,
            apply: |ev, lock, _| {
                let ms = ev.taken_ms - 5 * MINUTE_MS;
                each_stat(ev, lock, |s| s.mtime = secs(ms));
                true
            },
        },
        Perturbation {
            name: "the mtime alone set back to three hours before boot",
            expect: Expect::Same,
            apply: |ev, lock, _| {
                let Some(boot) = ev.host.boot_time else {
                    return false;
                };
                let ms = boot * 1000 - 3 * HOUR_MS;
                each_stat(ev, lock, |s| s.mtime = secs(ms));
                true
            },
        },
        Perturbation {
            name: "the mtime alone set a day ahead",
            expect: Expect::NoNewStale,
            apply: |ev, lock, _| {
                let ms = ev.taken_ms + 24 * HOUR_MS;
                each_stat(ev, lock, |s| s.mtime = secs(ms));
                true
            },
        },
        Perturbation {
            name: "touch -d '5 minutes ago' just before the scan",
            expect: Expect::NoNewStale,
            apply: |ev, lock, _| {
                let (mtime, now) = (ev.taken_ms - 5 * MINUTE_MS, ev.taken_ms - 1000);
                each_stat(ev, lock, |s| {
                    s.mtime = secs(mtime);
                    s.ctime = secs(now.max(s.ctime_ms()));
                });
                true
            },
        },
        Perturbation {
            name: "touch -d to three hours before boot just before the scan",
            expect: Expect::NoNewStale,
            apply: |ev, lock, _| {
                let Some(boot) = ev.host.boot_time else {
                    return false;
                };
                let (mtime, now) = (boot * 1000 - 3 * HOUR_MS, ev.taken_ms - 1000);
                each_stat(ev, lock, |s| {
                    s.mtime = secs(mtime);
                    s.ctime = secs(now.max(s.ctime_ms()));
                });
                true
            },
        },
        Perturbation {
            name: "replaced by a copy that keeps its times (cp -p), nobody holding it",
            expect: Expect::NoNewStale,
            apply: copied_keeping_times,
        },
        Perturbation {
            name: "the wall clock stepped forward six hours after the write, the step seen",
            expect: Expect::NoNewStale,
            apply: |ev, _, _| {
                let Some(step) = ev.clock.as_ref().and_then(|c| c.step_ms) else {
                    return false;
                };
                now_moved(ev, STEP_MS);
                ev.clock = Some(Clock {
                    step_ms: Some(step.max(0) + STEP_MS),
                    how: "the wall clock may have stepped forward by up to 6 h since this boot began (perturbed)".into(),
                });
                true
            },
        },
        Perturbation {
            name: "the wall clock stepped forward after the write, by how much not known",
            expect: Expect::NoNewStale,
            apply: |ev, _, _| {
                now_moved(ev, STEP_MS);
                ev.clock = Some(Clock {
                    step_ms: None,
                    how: "nothing tells whether the wall clock stepped since this boot began (perturbed)".into(),
                });
                true
            },
        },
        Perturbation {
            name: "the wall clock stepped back six hours after the write",
            expect: Expect::NoNewStale,
            apply: |ev, _, _| {
                now_moved(ev, -STEP_MS);
                true
            },
        },
        Perturbation {
            name: "an unrelated PID namespace has a process with the owner's PID",
            expect: Expect::Same,
            apply: unrelated_namespace,
        },
        Perturbation {
            name: "another user's reader holds a shared flock on it",
            expect: Expect::Same,
            apply: reader_flock,
        },
        Perturbation {
            name: "other users' command lines, environments, descriptors and mounts cut at their bounds",
            expect: Expect::NoNewStale,
            apply: others_cut,
        },
        Perturbation {
            name: "the host renamed since",
            expect: Expect::NoNewStale,
            apply: |ev, _, _| {
                ev.host.hostname = format!("{}-renamed", ev.host.hostname);
                true
            },
        },
        Perturbation {
            name: "scanned by another user",
            expect: Expect::NoNewStale,
            apply: |ev, _, _| {
                if ev.euid == NOBODY {
                    return false;
                }
                ev.euid = NOBODY;
                true
            },
        },
    ]
}

/// Judges `lock` from `ev` as recorded (which must give `base`'s verdict), then after every
/// perturbation, and fails the test with every broken invariant. Returns the names of the
/// perturbations that applied.
pub fn check(
    ev: &Evidence,
    lock: &LockFacts,
    base: &Finding,
    config: &Config,
) -> Vec<&'static str> {
    let mut failures = String::new();
    let as_recorded = match replay(ev.clone(), lock, config) {
        Ok(f) => f,
        Err(e) => panic!("{}: the evidence as recorded: {e}", lock.path),
    };
    if as_recorded.judgement.verdict() != base.judgement.verdict()
        || rules(&as_recorded) != rules(base)
    {
        panic!(
            "{}: judged {} {:?} on this machine, but {} {:?} from the evidence recorded of it: \
             the recording leaves out what a rule read\nlive: {:#?}\nrecorded: {:#?}",
            lock.path,
            base.judgement.verdict(),
            rules(base),
            as_recorded.judgement.verdict(),
            rules(&as_recorded),
            base.judgement,
            as_recorded.judgement
        );
    }
    let mut applied = Vec::new();
    for p in all() {
        let mut changed = ev.clone();
        if !(p.apply)(&mut changed, lock, &as_recorded) {
            continue;
        }
        applied.push(p.name);
        let after = match replay(changed, lock, config) {
            Ok(f) => f,
            Err(e) => {
                let _ = writeln!(failures, "- {}: {e}", p.name);
                continue;
            }
        };
        if let Some(broken) = broken(p.expect, &as_recorded, &after, p.name) {
            let _ = writeln!(
                failures,
                "- {}: {broken}\n  before: {}\n  after: {}",
                p.name,
                as_recorded.judgement.evidence.join(" | "),
                after.judgement.evidence.join(" | ")
            );
        }
    }
    assert!(
        failures.is_empty(),
        "{} ({}, {}): perturbations that do not change who holds it changed its verdict:\n{failures}",
        lock.path,
        base.dialect,
        base.judgement.verdict()
    );
    applied
}

/// What `after` breaks of `expect`, judged `before` from the evidence as recorded.
fn broken(expect: Expect, before: &Finding, after: &Finding, name: &str) -> Option<String> {
    let (b, a) = (before.judgement.verdict(), after.judgement.verdict());
    match expect {
        Expect::Same => {
            if a != b || rules(after) != rules(before) {
                return Some(format!(
                    "{b} {:?} became {a} {:?}",
                    rules(before),
                    rules(after)
                ));
            }
            // A reader's lock keeps a stale lock from being removed.
            if name.contains("reader")
                && a == Verdict::Stale
                && !after.judgement.kept_by.iter().any(|h| h.pid == READER_PID)
            {
                return Some("stale, but the reader's lock does not keep it".into());
            }
            None
        }
        Expect::NoNewStale => {
            if b != Verdict::Stale && a == Verdict::Stale {
                return Some(format!("{b} became stale {:?}", rules(after)));
            }
            if b == Verdict::Stale
                && !matches!(a, Verdict::Stale | Verdict::Unknown | Verdict::Foreign)
            {
                return Some(format!("stale became {a}"));
            }
            None
        }
    }
}

/// The rules that prove a stale judgement, in order.
fn rules(f: &Finding) -> Vec<String> {
    f.judgement
        .proofs()
        .iter()
        .map(|p| p.rule.id().to_string())
        .collect()
}

/// `lock` judged from `ev` alone; an error naming what `ev` did not answer.
fn replay(ev: Evidence, lock: &LockFacts, config: &Config) -> Result<Finding, String> {
    // The lock as this evidence holds it (a perturbation may have changed its status).
    let lock = ev
        .locks
        .iter()
        .rev()
        .find(|l| l.path == lock.path)
        .cloned()
        .unwrap_or_else(|| lock.clone());
    let snap = Snapshot::replay(ev);
    let found = scan::judge_recorded(&lock, &snap, config)
        .ok_or_else(|| "no longer taken for a lock".to_string())?;
    let misses = snap.replay_misses();
    if !misses.is_empty() {
        return Err(format!("the evidence does not answer {misses:?}"));
    }
    Ok(found)
}

/// `ms` since the epoch as a status time.
fn secs(ms: i64) -> (i64, i64) {
    (ms.div_euclid(1000), ms.rem_euclid(1000) * 1_000_000)
}

/// The wall clock stepped by `by` ms after every file of the evidence was written: every
/// time read now through it (the evidence's own time, the boot's wall time and every
/// process's start, which is read through it) moves; every file time, written by the clock of
/// then, stays.
fn now_moved(ev: &mut Evidence, by: i64) {
    ev.taken_ms += by;
    ev.host.boot_time = ev.host.boot_time.map(|b| b + by.div_euclid(1000));
    for state in ev.pids.values_mut() {
        if let PidState::Alive(f) | PidState::Zombie(f) = state {
            f.start_ms = f.start_ms.map(|s| s + by);
        }
    }
}

/// Applies `f` to the lock's status wherever the evidence holds it: its own, and the answers
/// of `lstat` and `stat` about its path.
fn each_stat(ev: &mut Evidence, lock: &LockFacts, f: impl Fn(&mut Stat)) {
    for l in ev.locks.iter_mut().filter(|l| l.path == lock.path) {
        f(&mut l.stat);
    }
    for map in [&mut ev.lstat, &mut ev.stat] {
        if let Some(Answer::Ok(s)) = map.get_mut(&lock.path) {
            f(s);
        }
    }
}

/// `cp -p copy path` with nobody holding the file: a new inode, made now, with the old mtime,
/// owner and content. Not for a file someone has open or locked (the copy is not theirs).
fn copied_keeping_times(ev: &mut Evidence, lock: &LockFacts, _: &Finding) -> bool {
    let old = FileKey::of(&lock.stat);
    let held = |m: &std::collections::BTreeMap<FileKey, Vec<locksmith::Holder>>| {
        m.get(&old).is_some_and(|h| !h.is_empty())
    };
    if held(&ev.kernel_holders) || held(&ev.openers) || held(&ev.writers) || held(&ev.mappers) {
        return false;
    }
    let ino = lock.stat.ino + 1_000_003;
    let now = ev.taken_ms - 1000;
    each_stat(ev, lock, |s| {
        s.ino = ino;
        s.ctime = secs(now);
        s.birth_ms = s.birth_ms.map(|_| now);
        s.nlink = 1;
    });
    let new = FileKey { inode: ino, ..old };
    for map in [
        &mut ev.kernel_holders,
        &mut ev.openers,
        &mut ev.writers,
        &mut ev.mappers,
    ] {
        // The copy is a new file that nobody has open or locked (the copier has closed it);
        // the old one keeps what was recorded of it (another name may still link it).
        map.insert(new, Vec::new());
    }
    true
}

/// A PID namespace that shares nothing with the lock (its own root, seeing the file under
/// no tie), where a running process has the PID the lock names.
fn unrelated_namespace(ev: &mut Evidence, lock: &LockFacts, base: &Finding) -> bool {
    let Some(pid) = base.judgement.owner.as_ref().and_then(|o| o.pid) else {
        return false;
    };
    let Ok(pid) = i32::try_from(pid) else {
        return false;
    };
    let Some(inv) = ev.containers.as_ref() else {
        return false;
    };
    let boot_ms = ev.host.boot_time.unwrap_or(0) * 1000;
    let inode = 4_026_599_999;
    let mut v = serde_json::to_value(inv).expect("an inventory");
    let spaces = v["namespaces"].as_array_mut().expect("namespaces");
    let index = spaces.len();
    spaces.push(serde_json::json!({
        "inode": inode,
        "init": READER_PID - 1,
        "pids": { pid.to_string(): READER_PID - 1 },
        "mounts": [],
        "views": [],
        "mounts_cut": false,
        "root": [4242, 2],
        "proven": false,
        "container": { "runtime": "unknown", "id": format!("pid:[{inode}]"), "name": null },
        "hostname": null,
        "maker": null,
        "within": null,
    }));
    v["by_host_pid"][(READER_PID - 1).to_string()] = serde_json::json!([index, pid]);
    ev.containers = Some(match serde_json::from_value(v) {
        Ok(inv) => inv,
        Err(e) => panic!("the inventory's shape changed: {e}"),
    });
    let mut facts = ProcFacts::running(
        READER_PID - 1,
        "sandboxed",
        "/usr/bin/sandboxed",
        boot_ms,
        ev.taken_ms - MINUTE_MS,
    );
    facts.pid_ns = Some(inode);
    ev.pids.insert(READER_PID - 1, PidState::Alive(facts));
    // Who sees the lock: as recorded (a scan with no other namespace asks nobody), and now
    // this namespace as well, under no tie.
    let rec = ev
        .sightings
        .entry(format!("{} {}", lock.stat.dev, lock.path))
        .or_insert_with(|| SightingsRec {
            seen: vec![SeenRec {
                ns: None,
                path: lock.path.clone(),
                layer: None,
                tied: true,
            }],
            mapped: true,
        });
    rec.seen.push(SeenRec {
        ns: Some(inode),
        path: lock.path.clone(),
        layer: None,
        tied: false,
    });
    true
}

/// A process of `nobody` holding a shared flock on the lock file (`flock -s FILE sleep`),
/// which anyone who may read a file can take.
fn reader_flock(ev: &mut Evidence, lock: &LockFacts, base: &Finding) -> bool {
    if base.judgement.verdict() == Verdict::Free || lock.stat.uid == NOBODY {
        return false;
    }
    let key = FileKey::of(&lock.stat);
    let Some(holders) = ev.kernel_holders.get_mut(&key) else {
        // The judge never asked who locks it: nothing of it rests on a kernel lock.
        return false;
    };
    holders.push(locksmith::Holder {
        pid: READER_PID,
        name: Some("flock".into()),
        how: HolderHow::Flock,
        container: None,
        mode: Some(locksmith::verdict::LockMode::Read),
        range: None,
    });
    let boot_ms = ev.host.boot_time.unwrap_or(0) * 1000;
    let mut facts = ProcFacts::running(
        READER_PID,
        "flock",
        "/usr/bin/flock",
        boot_ms,
        ev.taken_ms - MINUTE_MS,
    );
    facts.uid = Some(NOBODY);
    ev.pids.insert(READER_PID, PidState::Alive(facts));
    ev.users.insert(NOBODY, Some("nobody".into()));
    true
}

/// Every process of another user than root and the scanner: its command line, environment and
/// descriptor table cut at their bounds; every other namespace's mounts too.
fn others_cut(ev: &mut Evidence, _: &LockFacts, _: &Finding) -> bool {
    let euid = ev.euid;
    let mut cut = Vec::new();
    for (pid, state) in ev.pids.iter_mut() {
        if let PidState::Alive(f) | PidState::Zombie(f) = state
            && f.uid.is_some_and(|u| u != 0 && u != euid)
        {
            f.cmdline_cut = true;
            cut.push((*pid, f.uid));
        }
    }
    for (pid, uid) in &cut {
        // What a rule may ask next of a process whose command line says too little, which
        // the recording did not need: unread, as of a process whose tables were cut.
        ev.cwd.entry(*pid).or_insert(None);
        ev.working_dir.entry(*pid).or_insert(None);
        ev.cwd_gone.entry(*pid).or_insert(false);
        ev.environ_cut.insert(*pid, true);
        ev.fds_cut.get_or_insert_with(Vec::new).push((
            *pid,
            *uid,
            locksmith::probe::bounds::FDS_PER_PROCESS,
        ));
    }
    if let Some(procs) = ev.processes.as_mut() {
        for p in procs
            .iter_mut()
            .filter(|p| cut.iter().any(|c| c.0 == p.pid))
        {
            p.cmd_cut = true;
        }
    }
    let mut namespaces = false;
    if let Some(inv) = ev.containers.as_mut() {
        // Those whose first process the recording knows (a rule then reads it, and what it
        // would read of another is not recorded).
        for ns in inv.namespaces.iter_mut() {
            if ev.pids.contains_key(&ns.init) {
                ns.mounts_cut = true;
                namespaces = true;
            }
        }
    }
    !cut.is_empty() || namespaces
}

/// [`check`] of the judgement `found` of `path` made with `snap`, a recording: the evidence it
/// kept so far, asked first what a perturbed judgement may ask of the lock (who has it open,
/// who locks it, the clock).
pub fn check_judged(snap: &Snapshot, path: &std::path::Path, found: &Finding, config: &Config) {
    snap.clock();
    if let Ok(meta) = snap.lstat(path) {
        let key = FileKey::of(&meta);
        snap.openers(key);
        snap.kernel_holders(key);
    }
    let Some(ev) = snap.evidence() else {
        return;
    };
    let key = locksmith::probe::evidence::path_key(path);
    let Some(lock) = ev.locks.iter().rev().find(|l| l.path == key).cloned() else {
        panic!("{} was judged but not recorded", path.display());
    };
    check(&ev, &lock, found, config);
}
