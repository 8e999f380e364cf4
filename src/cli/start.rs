//! `locksmith start [--wait SECS] PATH... [-- COMMAND [ARGS...]]`: reclaim what is proven stale
//! in PATHs, then become COMMAND (`execve`, same PID: PID 1 of a container stays PID 1). With
//! no COMMAND, exit 0 once PATHs are clear (systemd's `ExecStartPre=`, an init container).
//!
//! Every lock found in PATHs is judged as `--scan` judges it, then:
//! - `stale`: reclaimed as every reclaim is (judged again at the moment of removal, the same
//!   file, a copy and a journal line in the state directory);
//! - `free` (a kernel-lock file nobody locks): harmless, left where it is;
//! - naming this very process (a service restarting under its old PID, the container's PID 1
//!   again): see [`decide`];
//! - `live`, `foreign`, `unknown`, or a lock that could not be removed: nothing is run. One line
//!   on stderr says why, and the exit status is 75; with `--wait SECS` every lock is judged
//!   again every quarter of a second until PATHs are clear or SECS have passed.
//!
//! Inside a PID namespace that is not the host's (a container), only this namespace's
//! processes can be seen. A PID proof (the PID is gone, or reused by a process that started
//! after the lock was written), or an open file released, stands only for a lock on the
//! container's own root file system, which nothing outside the container writes to. On a
//! volume or any other mount from outside, another container may have written that PID, or
//! hold that file open, unseen from here: such a lock is kept (an earlier boot, an expired
//! heartbeat and a kernel lock released prove the owner gone wherever it ran, and stand),
//! unless its start guard proves more, or `--unshared` says that no one else uses the volume.
//!
//! The start guard ([`locksmith::start_guard`]): with a COMMAND, each PATH that is not a
//! directory gets a guard beside it, whose kernel lock this process takes before it judges
//! anything, and COMMAND inherits. A guard held elsewhere means a service started this way for
//! that PATH runs: in the way. A guard taken whose record says a service was started for that
//! PATH means that service is gone, in any container of this kernel (and through NFS's lock
//! manager): the PID proofs made here then stand for the pid file, as on the container's own
//! root. Without such a record (the first start, or a pid file from before `locksmith start`)
//! the guard proves nothing, and the lock is judged as without it.
//!
//! Nothing else is added to what COMMAND inherits: its arguments and environment are ours, no
//! other descriptor is opened without close-on-exec, and signals come back to their
//! dispositions (a handler for SIGTERM and SIGINT, installed only while waiting and only where
//! they were at their default, so that `podman stop` ends a wait, is undone by `execve`
//! itself). Everything locksmith says goes to stderr.
//!
//! Exit status (when COMMAND does not run): 0 PATHs are clear and no COMMAND was given; 75 a
//! lock is still in the way; 2 bad arguments or configuration, or a PATH that cannot be
//! examined; 126 COMMAND cannot be run; 127 COMMAND not found.

use std::io;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use locksmith::config::{RawConfig, Settings};
use locksmith::dialect::DialectId;
use locksmith::judge::{Judgement, fmt_ms};
use locksmith::outcome::{Action, Outcome};
use locksmith::probe::kernel_locks::{self, FileKey};
use locksmith::probe::{PidState, Snapshot, started};
use locksmith::reclaim::{self, Reclaim};
use locksmith::scan::{self, Finding, ScanError, ScanEvent};
use locksmith::start_guard::{self, Before, Guard, Take};
use locksmith::text;
use locksmith::verdict::{Rule, Verdict};

use super::Failure;
use super::lock::{EXIT_CANNOT_EXECUTE, EXIT_ERROR, EXIT_HELD, EXIT_NOT_FOUND};
use crate::StartArgs;

/// How often locks are judged again while `--wait` runs.
const POLL: Duration = Duration::from_millis(250);

/// How much later than the lock's last change (its ctime) a process must have started for the
/// lock to be older than it, on a clock that has not stepped: two clock ticks of its start
/// time, and the file system's coarse timestamps. (A start time read through `btime`, which
/// is whole seconds, is never later than the real one.)
const STARTED_AFTER_MS: i64 = 50;

pub fn run(args: StartArgs) -> i32 {
    match start(args) {
        Ok(code) => code,
        Err(f) => {
            say(&f.message);
            f.code
        }
    }
}

/// One line on stderr, raw text escaped.
fn say(line: &str) {
    eprintln!("locksmith start: {}", text::escape(line));
}

fn start(args: StartArgs) -> Result<i32, Failure> {
    let wait = match args.wait {
        None => Duration::ZERO,
        Some(s) if s.is_finite() && s >= 0.0 => Duration::try_from_secs_f64(s)
            .map_err(|_| Failure::new(EXIT_ERROR, format!("--wait {s}: too long")))?,
        Some(s) => {
            return Err(Failure::new(
                EXIT_ERROR,
                format!("--wait must be a number of seconds >= 0 (got {s})"),
            ));
        }
    };
    // Only the named locks: no container's lock places.
    let settings = RawConfig::load(args.config.as_deref())
        .and_then(|raw| {
            for note in &raw.notes {
                say(note);
            }
            raw.validate()
        })
        .map_err(|e| Failure::new(EXIT_ERROR, format!("{e:#}")))?;
    let paths = absolute(&args.paths)?;
    let deadline = Instant::now() + wait;
    let me = Me::now(args.unshared);
    let mut told: Vec<String> = Vec::new();
    // Only a start that runs COMMAND keeps guards: without one, no service would hold them.
    // One per file, however often it is named (a second would wait for the first).
    let mut guarded: Vec<PathBuf> = Vec::new();
    if !args.command.is_empty() {
        for p in &paths {
            if std::fs::metadata(p).map_or(true, |m| !m.is_dir()) && !guarded.contains(p) {
                guarded.push(p.clone());
            }
        }
    }
    let mut said_impossible = false;
    let guards = loop {
        let guards = Guards::take(&guarded);
        if !said_impossible {
            for (path, why) in guards.impossible() {
                say(&format!(
                    "no start guard for {}: {why}; a pid file COMMAND leaves there is judged without one",
                    path.display()
                ));
            }
            said_impossible = true;
        }
        let pass = clear(&paths, &settings, &me, &guards)?;
        for line in pass.done {
            say(&line);
        }
        if pass.in_the_way.is_empty() {
            break guards;
        }
        // Released while waiting: a waiting start is no running service.
        drop(guards);
        let now = Instant::now();
        if now >= deadline {
            if told != pass.in_the_way {
                for line in &pass.in_the_way {
                    say(line);
                }
            }
            let waited = if wait.is_zero() {
                String::new()
            } else {
                format!(" after waiting {} s", wait.as_secs_f64())
            };
            say(&format!(
                "not starting{waited}: {} lock{} in the way (exit {EXIT_HELD})",
                pass.in_the_way.len(),
                if pass.in_the_way.len() == 1 {
                    " is"
                } else {
                    "s are"
                }
            ));
            return Ok(EXIT_HELD);
        }
        if told != pass.in_the_way {
            for line in &pass.in_the_way {
                say(&format!("{line}; waiting (up to {} s)", wait.as_secs_f64()));
            }
            told = pass.in_the_way;
        }
        stop_on_signals();
        std::thread::sleep(POLL.min(deadline - now));
    };
    let Some((program, rest)) = args.command.split_first() else {
        return Ok(0);
    };
    guards.hand_over(program);
    // Only returns on failure.
    let e = std::process::Command::new(program).args(rest).exec();
    guards.erase();
    let code = if e.kind() == io::ErrorKind::NotFound {
        EXIT_NOT_FOUND
    } else {
        EXIT_CANNOT_EXECUTE
    };
    let why = match e.kind() {
        io::ErrorKind::NotFound => "command not found".to_string(),
        io::ErrorKind::PermissionDenied => "permission denied (is it executable?)".to_string(),
        _ => e.to_string(),
    };
    Err(Failure::new(
        code,
        format!("cannot run \"{}\": {why}", program.to_string_lossy()),
    ))
}

/// PATHs made absolute (from the working directory), as the scanner reports them.
fn absolute(paths: &[PathBuf]) -> Result<Vec<PathBuf>, Failure> {
    paths
        .iter()
        .map(|p| {
            std::path::absolute(p).map_err(|e| {
                Failure::new(EXIT_ERROR, format!("cannot resolve {}: {e}", p.display()))
            })
        })
        .collect()
}

/// What one pass did: what it removed (lines to say) and what is in the way (why, one line
/// per lock).
struct Pass {
    done: Vec<String>,
    in_the_way: Vec<String>,
}

/// Judges every lock in `paths` now, reclaims what may go, and says what stays in the way.
fn clear(
    paths: &[PathBuf],
    settings: &Settings,
    me: &Me,
    guards: &Guards,
) -> Result<Pass, Failure> {
    let mut pass = Pass {
        done: Vec::new(),
        in_the_way: Vec::new(),
    };
    // A lock that is not there is not in the way (the usual case: a clean stop); one whose
    // guard is held is, whatever it says (its service runs).
    let present: Vec<PathBuf> = paths
        .iter()
        .filter(|p| std::fs::symlink_metadata(p).is_ok())
        .filter(|p| guards.busy().all(|(busy, _, _)| busy != p.as_path()))
        .cloned()
        .collect();
    if present.is_empty() && guards.busy().next().is_none() {
        return Ok(pass);
    }
    let snap = Snapshot::take();
    for (path, guard, meta) in guards.busy() {
        pass.in_the_way.push(busy(path, guard, meta, &snap));
    }
    if present.is_empty() {
        return Ok(pass);
    }
    let config = &settings.scan;
    let roots = config.roots(&present);
    let found: Mutex<(Vec<Finding>, Vec<ScanError>)> = Mutex::default();
    let sink = |event: ScanEvent| {
        let mut found = found.lock().unwrap_or_else(|e| e.into_inner());
        match event {
            ScanEvent::Found(f) => found.0.push(*f),
            ScanEvent::Error(e) => found.1.push(e),
            ScanEvent::Progress { .. } => {}
        }
    };
    let cancel = AtomicBool::new(false);
    if let Err(e) = scan::scan(config, &roots, &snap, &cancel, &sink) {
        // Every PATH vanished since it was looked at: nothing is in the way.
        if present
            .iter()
            .all(|p| std::fs::symlink_metadata(p).is_err())
        {
            return Ok(pass);
        }
        return Err(Failure::new(EXIT_ERROR, e.to_string()));
    }
    let (findings, errors) = found.into_inner().unwrap_or_else(|e| e.into_inner());
    for e in errors {
        if e.kind() == Some(io::ErrorKind::NotFound) {
            continue;
        }
        return Err(Failure::new(
            EXIT_ERROR,
            format!("{} cannot be examined: {e}", e.path().display()),
        ));
    }
    for f in findings {
        match decide(&f, &snap, me, guards) {
            Decision::Leave => {}
            Decision::Ours(why) => pass
                .done
                .push(format!("{}: kept for COMMAND: {why}", f.path.display())),
            Decision::InTheWay(why) => pass
                .in_the_way
                .push(format!("{} stays: {why}", f.path.display())),
            decision @ (Decision::Reclaim(_) | Decision::Restart(_) | Decision::Vouched(_)) => {
                let forced = !matches!(decision, Decision::Reclaim(_));
                let restart = matches!(decision, Decision::Restart(_));
                let o = remove(&f, settings, me, guards, forced);
                match (o.action, &o.error) {
                    (Action::Removed, error) => {
                        let why = o.judgement.evidence.first().cloned().unwrap_or_default();
                        let copy = o
                            .copy_shown(|s| s.display().to_string())
                            .map(|s| format!("; its copy is {s}"))
                            .unwrap_or_default();
                        let what = match (restart, names_us(&o.judgement, me)) {
                            (true, _) => "left by the service's previous run: ".to_string(),
                            _ if forced => "foreign as judged in this container, but ".to_string(),
                            (false, Some(pid)) => format!(
                                "stale, and PID {pid} is {}: the service restarting: ",
                                whose(pid, me)
                            ),
                            (false, None) => "stale: ".to_string(),
                        };
                        pass.done
                            .push(format!("removed {} ({what}{why}{copy})", f.path.display()));
                        if let Some(e) = error {
                            pass.done.push(format!("warning: {e}"));
                        }
                    }
                    (_, error) => pass.in_the_way.push(format!(
                        "{} was not removed: {}",
                        f.path.display(),
                        error.as_deref().unwrap_or("refused")
                    )),
                }
            }
        }
    }
    Ok(pass)
}

/// Reclaims one lock: judged again at the moment of removal, and removed only if the same
/// decision holds then (see [`decide`]). A restart, and a lock its guard vouches for, are
/// removed as a person's decision (`forced` in the journal), with the evidence that decided.
fn remove(f: &Finding, settings: &Settings, me: &Me, guards: &Guards, forced: bool) -> Outcome {
    let judge = Again {
        config: &settings.scan,
        me,
        guards,
        forced,
    };
    let mut out = None;
    Reclaim::new(&judge)
        .options(settings.reclaim.clone())
        .force(forced)
        .run([f], |o| out = Some(o));
    out.expect("one outcome per lock")
}

/// How `start` judges a lock again at the moment of its removal: as `--scan` does, then
/// [`decide`] as when it was first judged; the lock is to be removed only when the decision
/// is the same.
struct Again<'a> {
    config: &'a scan::Config,
    me: &'a Me,
    guards: &'a Guards,
    forced: bool,
}

impl reclaim::Judge for Again<'_> {
    fn windows(&self) -> &locksmith::dialect::Windows {
        self.config.windows()
    }

    fn judge_at(
        &self,
        dir: std::os::fd::BorrowedFd<'_>,
        name: &std::ffi::OsStr,
        f: &Finding,
        snap: &Snapshot,
    ) -> Result<Option<Finding>, ScanError> {
        let Some(mut fresh) =
            scan::judge_at(dir, name, &f.path, f.anchor.as_ref(), snap, self.config)?
        else {
            return Ok(None);
        };
        match decide(&fresh, snap, self.me, self.guards) {
            Decision::Reclaim(why) => {
                fresh.judgement.evidence.extend(why);
            }
            Decision::Restart(lines) | Decision::Vouched(lines) if self.forced => {
                let mut j = Judgement::unknown(lines[0].clone());
                j.evidence.extend(lines[1..].iter().cloned());
                j.evidence.extend(
                    fresh
                        .judgement
                        .evidence
                        .iter()
                        .map(|l| format!("(judged alone: {l})")),
                );
                j.owner = fresh.judgement.owner.take();
                j.process = fresh.judgement.process.take();
                fresh.judgement = j;
            }
            other => {
                let why = match other {
                    Decision::InTheWay(why) | Decision::Ours(why) => why,
                    _ => "it is no longer what it was judged to be".into(),
                };
                if self.forced && fresh.judgement.verdict() != Verdict::Live {
                    return Err(ScanError::other(&f.path, why));
                }
                fresh.judgement.doubt(why);
            }
        }
        Ok(Some(fresh))
    }
}

/// What `start` does with one lock.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Decision {
    /// Not in the way (`free`, or a start guard).
    Leave,
    /// Stale, here: reclaim it. Why the proof stands for this place, when it is not the
    /// host's nor the container's own root (an evidence line).
    Reclaim(Option<String>),
    /// It names this process (or its parent), which started after it was written: the
    /// service restarting under its old PID. The evidence lines.
    Restart(Vec<String>),
    /// `foreign` as judged here (its PID may be another namespace's, or another machine's),
    /// but its start guard proves that the service that writes it is gone, or `--unshared`
    /// says that nothing outside this container writes there. The evidence lines.
    Vouched(Vec<String>),
    /// Held by this very process (a lock it inherited, or a pid file it wrote before it
    /// became `locksmith start`): COMMAND will hold it. Why.
    Ours(String),
    /// Nothing may remove it: why.
    InTheWay(String),
}

/// This process, as the decisions need it.
struct Me {
    pid: i32,
    ppid: i32,
    /// Whether we run in the host's PID namespace.
    host_ns: bool,
    /// `--unshared`: the PATHs are on file systems no other container or host writes.
    unshared: bool,
}

impl Me {
    fn now(unshared: bool) -> Self {
        Me {
            pid: std::process::id() as i32,
            ppid: rustix::process::getppid().map_or(0, |p| p.as_raw_nonzero().get()),
            host_ns: started::is_host_pid_ns(locksmith::probe::host::pid_ns_of("self")),
            unshared,
        }
    }
}

/// The decision for one judged lock.
///
/// A lock naming this process's own PID (or its parent's, the shell of an entrypoint that
/// runs `locksmith start` and then the service), is a service restarting under the PID it
/// had before: in a container after `podman start`, its PID 1 is `locksmith start` again.
/// The process with that PID here is this one (or its parent), which is not the lock's
/// writer when it started after the lock was written (its start is known to the clock tick:
/// [`started::start_ms`]), so the lock is its previous run's (a database server may reason
/// the same way about its own pid file, ignoring its own, its parent's and its grandparent's
/// PID).
/// A pid file written after this process started, naming it, was written by this process
/// before it ran `locksmith start` (`echo $$ > app.pid; exec locksmith start ...`): it is
/// COMMAND's, and kept. Naming the parent that started before it, it is the parent's: in the
/// way, as judged. None of this applies to a lock held by a kernel lock or an open file of
/// another process, nor where the PID may be another namespace's (see the module docs).
fn decide(f: &Finding, snap: &Snapshot, me: &Me, guards: &Guards) -> Decision {
    let j = &f.judgement;
    // A start guard is never in the way itself: what it proves is its pid file's.
    if f.dialect == DialectId::START_GUARD {
        return Decision::Leave;
    }
    if j.verdict() == Verdict::Live
        && let Some(why) = held_here(f, snap)
    {
        return Decision::Ours(why);
    }
    let guard = guards.proof(&f.path, snap);
    let guarded = guard.is_ok();
    let private = private_place(f, me, guard);
    // On a network file system, what this container cannot prove is another machine's.
    if let Err(why) = &private
        && f.fs.network
        && !matches!(j.verdict(), Verdict::Live | Verdict::Free)
        && !(j.verdict() == Verdict::Stale && j.proofs().iter().all(|p| holds_anywhere(p.rule)))
    {
        return Decision::InTheWay(format!("foreign: {why}"));
    }
    let names_us = names_us(j, me);
    // What makes a `foreign` judged in this container removable: the guard, or `--unshared`
    // for a lock that names no host, on a local file system.
    let vouched = guarded
        || (me.unshared && !f.fs.network && j.owner.as_ref().is_none_or(|o| o.hostname.is_none()));
    match j.verdict() {
        Verdict::Free => Decision::Leave,
        Verdict::Stale => match private {
            Ok(why) => Decision::Reclaim(why),
            Err(_) if j.proofs().iter().all(|p| holds_anywhere(p.rule)) => Decision::Reclaim(None),
            Err(why) => Decision::InTheWay(format!(
                "proven stale by {} on what this container can see, but {why}",
                rules(j)
            )),
        },
        _ => match (names_us, private) {
            (Some(pid), Ok(why)) if j.holders.is_empty() => {
                match restart_or_not(f, pid, snap, me) {
                    Decision::Restart(mut lines) => {
                        lines.extend(why);
                        Decision::Restart(lines)
                    }
                    other => other,
                }
            }
            (Some(pid), Err(why)) => {
                Decision::InTheWay(format!("PID {pid} is {} here, but {why}", whose(pid, me)))
            }
            (None, Ok(Some(why))) if j.verdict() == Verdict::Foreign && vouched => {
                Decision::Vouched(vec![why])
            }
            _ => Decision::InTheWay(format!(
                "{}: {}",
                j.verdict(),
                j.evidence.first().map_or("no evidence", String::as_str)
            )),
        },
    }
}

/// Why the lock is this process's own, when every kernel lock on it is held through this
/// process's own descriptors (taken by a parent on a description this process inherited:
/// COMMAND inherits it in turn).
fn held_here(f: &Finding, snap: &Snapshot) -> Option<String> {
    let key = FileKey::from_dev_ino(f.identity.dev, f.identity.ino);
    let all = snap.kernel_locks().on(key).len();
    let ours = kernel_locks::held_by_own_descriptors(key).len();
    (all > 0 && ours >= all).then(|| {
        format!(
            "its kernel lock ({}) is held through a descriptor this process inherited, and COMMAND inherits it in turn",
            locksmith::verdict::describe_holders(&f.judgement.holders)
        )
    })
}

/// The PID of this process or of its parent, when the judge found that the lock's owner PID
/// names one of them here (in this PID namespace).
fn names_us(j: &Judgement, me: &Me) -> Option<i32> {
    let owner_pid = j.owner.as_ref().and_then(|o| o.pid)?;
    let p = j.process.as_ref()?;
    (p.container.is_none() && p.pid as i64 == owner_pid)
        .then_some(p.pid)
        .filter(|&p| p == me.pid || (p == me.ppid && p > 0))
}

/// The decision for a lock naming this process or its parent (see [`decide`]).
fn restart_or_not(f: &Finding, pid: i32, snap: &Snapshot, me: &Me) -> Decision {
    let who = whose(pid, me);
    let facts = match snap.pid(pid) {
        PidState::Alive(f) => f,
        _ => return Decision::InTheWay(format!("the state of {who} (PID {pid}) cannot be read")),
    };
    let started = started::start_ms(facts.start_ticks, snap.host.ticks_per_sec);
    // The latest the lock can have been written: its ctime, which nobody can set back (its
    // mtime proves nothing: anyone who may write the file can set it, and copies keep it).
    let written = f.identity.ctime_ns.div_euclid(1_000_000) as i64;
    let Some(started) = started else {
        return Decision::InTheWay(format!(
            "PID {pid} is {who}, and it cannot be told whether it started before the lock was written"
        ));
    };
    // In a container, its runtime made its /dev just before its first process started: a
    // lock last changed before that is from an earlier run of the container. Both are wall
    // clock readings of their moment, compared without `btime`'s whole seconds; a step forward
    // between them only makes the lock look earlier, which it was.
    if !me.host_ns
        && let Some(dev_ms) = container_dev_made_ms()
        && written + STARTED_AFTER_MS < dev_ms
    {
        return Decision::Restart(vec![
            format!(
                "PID {pid} is {who}, in a container whose /dev its runtime made at {}, after the lock was last changed at {}: the lock is from the container's previous run (the service restarting)",
                exact_ms(dev_ms),
                exact_ms(written)
            ),
            "a PID names one process at a time, and this one has not become the service yet: the process that wrote the lock is gone".to_string(),
        ]);
    }
    // A process's start is read through the boot's wall time as the clock says now: a step
    // forward since the lock was written makes it look that much later.
    let clock = snap.clock();
    let Some(step) = clock.step_ms else {
        return Decision::InTheWay(format!(
            "PID {pid} is {who}, and it cannot be told whether it started before the lock was written: {}",
            clock.how
        ));
    };
    if started > written + STARTED_AFTER_MS + step.max(0) {
        let lines = vec![
            format!(
                "PID {pid} is {who}, which started at {}, after the lock was last changed at {}: the lock is from the service's previous run under this PID (the service restarting)",
                exact_ms(started),
                exact_ms(written)
            ),
            "a PID names one process at a time, and this one has not become the service yet: the process that wrote the lock is gone".to_string(),
        ];
        return Decision::Restart(lines);
    }
    if pid == me.pid {
        return Decision::Ours(format!(
            "it names this process (PID {pid}), which started at {}, before the lock was last changed at {}: this process wrote it before it became `locksmith start`, for COMMAND",
            exact_ms(started),
            exact_ms(written)
        ));
    }
    Decision::InTheWay(format!(
        "it names the parent of `locksmith start` (PID {pid}, {}), which started at {}, before the lock was last changed at {}: the parent may hold it",
        facts.comm,
        exact_ms(started),
        exact_ms(written)
    ))
}

/// When this container's /dev was made (its birth time, ms since the epoch), where it is not
/// the host's devtmpfs: a container runtime makes it for the container just before its first
/// process starts.
fn container_dev_made_ms() -> Option<i64> {
    let dev = std::path::Path::new("/dev");
    let ms = locksmith_sys::fs::birth_ms(dev, true)?;
    (locksmith_sys::fs::mount_type_at(dev)? != "devtmpfs").then_some(ms)
}

/// A time to the millisecond (the restart rule compares times closer than the judge's
/// seconds).
fn exact_ms(ms: i64) -> String {
    jiff::Timestamp::from_millisecond(ms)
        .map(|t| t.to_string())
        .unwrap_or_else(|_| fmt_ms(ms))
}

fn whose(pid: i32, me: &Me) -> &'static str {
    if pid == me.pid {
        "this process, `locksmith start`"
    } else {
        "the parent of `locksmith start`"
    }
}

/// Whether a PID proof and a census of this namespace stand for this lock: we run in the
/// host's PID namespace, or the lock is on the container's own root file system (an
/// overlay nothing outside the container writes to), or its start guard proves that no
/// service started for it runs anywhere (`guard`: the evidence line), or `--unshared` says
/// that no one else writes there. `Ok` with the evidence line that says why, where it is
/// not the obvious; why not, otherwise.
fn private_place(
    f: &Finding,
    me: &Me,
    guard: Result<String, String>,
) -> Result<Option<String>, String> {
    if me.host_ns || (f.fs.own_root && f.fs.kind.is_overlay()) {
        return Ok(None);
    }
    if me.unshared {
        return Ok(Some(
            "--unshared: the user declared that no other container or host writes to this file system, so what this container sees of it is all there is".to_string(),
        ));
    }
    let guard = match guard {
        Ok(line) => return Ok(Some(line)),
        Err(why) => why,
    };
    if f.fs.network {
        return Err(format!(
            "the lock is {}: a process on another machine may have written it, or hold it, unseen from here; {guard}",
            f.fs.reached_from_afar()
        ));
    }
    Err(format!(
        "this process runs in a PID namespace of its own (a container), and the lock is on {}, a file system that is not the container's own root: another container sharing it may have written it, or hold it, unseen from here; {guard}. If its service is gone, remove it once by hand; for a volume that no other container or host uses, start with --unshared",
        f.fs.kind
    ))
}

/// Rules whose proof holds whichever PID namespace the owner ran in (a kernel lock is asked
/// of the kernel, which knows every namespace's; on a network file system the judge does not
/// take its release as proof).
fn holds_anywhere(rule: Rule) -> bool {
    matches!(
        rule,
        Rule::EarlierBoot | Rule::HeartbeatExpired | Rule::KernelLockReleased
    )
}

fn rules(j: &Judgement) -> String {
    let ids: Vec<&str> = j.proofs().iter().map(|p| p.rule.id()).collect();
    ids.join(", ")
}

/// While waiting: SIGTERM and SIGINT end the wait (a container's PID 1 ignores what it has
/// no handler for, so `podman stop` would wait for its timeout). Installed only where the
/// signal is at its default, so an ignored signal stays ignored for COMMAND; a caught signal
/// returns to its default at `execve`.
fn stop_on_signals() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        for sig in [libc::SIGTERM, libc::SIGINT] {
            // SAFETY: sigaction with a null new action only reads the current one; the
            // handler calls only `_exit`, which is async-signal-safe.
            unsafe {
                let mut old: libc::sigaction = std::mem::zeroed();
                if libc::sigaction(sig, std::ptr::null(), &mut old) != 0
                    || old.sa_sigaction != libc::SIG_DFL
                {
                    continue;
                }
                let mut sa: libc::sigaction = std::mem::zeroed();
                sa.sa_sigaction = on_signal as *const () as usize;
                libc::sigemptyset(&mut sa.sa_mask);
                libc::sigaction(sig, &sa, std::ptr::null_mut());
            }
        }
    });
}

extern "C" fn on_signal(sig: libc::c_int) {
    // SAFETY: `_exit` is async-signal-safe.
    unsafe { libc::_exit(128 + sig) }
}

/// The start guards of the PATHs that are not directories (none without COMMAND), as this
/// pass took them.
struct Guards {
    /// Each guarded PATH, and how taking its guard went.
    taken: Vec<(PathBuf, Take)>,
}

impl Guards {
    fn take(paths: &[PathBuf]) -> Self {
        Guards {
            taken: paths
                .iter()
                .map(|p| (p.clone(), start_guard::take(p)))
                .collect(),
        }
    }

    /// The PATHs beside which no guard can be kept, and why.
    fn impossible(&self) -> impl Iterator<Item = (&Path, &str)> {
        self.taken.iter().filter_map(|(p, t)| match t {
            Take::Impossible(why) => Some((p.as_path(), why.as_str())),
            _ => None,
        })
    }

    /// The PATHs whose guard another process holds: the guard and its status.
    fn busy(&self) -> impl Iterator<Item = (&Path, &Path, &locksmith::probe::Stat)> {
        self.taken.iter().filter_map(|(p, t)| match t {
            Take::Busy { path, meta } => Some((p.as_path(), path.as_path(), meta)),
            _ => None,
        })
    }

    fn held(&self) -> impl Iterator<Item = (&Path, &Guard)> {
        self.taken.iter().filter_map(|(p, t)| match t {
            Take::Held(g) => Some((p.as_path(), g)),
            _ => None,
        })
    }

    /// What the guard of the lock at `path` proves: that no service started by `locksmith
    /// start` for it runs anywhere its kernel lock reaches (the evidence line), or why it
    /// proves nothing.
    fn proof(&self, path: &Path, snap: &Snapshot) -> Result<String, String> {
        let Some((_, take)) = self.taken.iter().find(|(p, _)| p == path) else {
            return Err(
                "no start guard is kept for it (only for a PATH that names a file, by a start with a COMMAND)"
                    .into(),
            );
        };
        let g = match take {
            Take::Held(g) => g,
            Take::Busy { path, .. } => {
                return Err(format!("its start guard {} is held", path.display()));
            }
            Take::Impossible(why) => {
                return Err(format!("no start guard can be kept beside it: {why}"));
            }
        };
        let guard = g.path().display();
        let name = path.file_name().unwrap_or_default();
        let record = match g.before() {
            Before::Record(r) if r.is_for(name) => r,
            Before::Record(r) => {
                return Err(format!(
                    "its start guard {guard} was last used for {}, not for this file",
                    r.guards
                ));
            }
            Before::Made => {
                return Err(format!(
                    "it has no start guard yet ({guard} did not exist before this start): it was left by a service not started by `locksmith start`, or before `locksmith start` was used here; the next start can prove this from the guard"
                ));
            }
            Before::Empty => {
                return Err(format!(
                    "its start guard {guard} has no record: no service was started under it yet (the starts before this one did not run one), so it was left by a service not started by `locksmith start`"
                ));
            }
            Before::Unreadable(why) => return Err(format!("its start guard {guard}: {why}")),
        };
        g.trusted()
            .map_err(|why| format!("its start guard proves nothing: {why}"))?;
        let fs = snap.fs_of(g.path(), g.meta());
        start_guard::reaches_every_writer(&fs, g.meta().dev())
            .map_err(|why| format!("its start guard {guard} is {why}"))?;
        Ok(format!(
            "its start guard {guard} was locked by no one when this start took its kernel lock (F_OFD_SETLK): the service `locksmith start` started last for it ({}) is gone, in whatever container of this kernel it ran{}",
            record.describe(),
            if fs.network {
                " (and on any machine: NFS's lock manager holds the locks of all)"
            } else {
                ""
            }
        ))
    }

    /// Before `execve`: each guard gets the record of the service about to start, and its
    /// descriptor is left open for COMMAND.
    fn hand_over(&self, program: &std::ffi::OsStr) {
        for (path, g) in self.held() {
            let written = g.write(&start_guard::Record::now(path, program));
            if let Err(e) = written.and_then(|()| g.inherit()) {
                say(&format!(
                    "warning: the start guard {} cannot be kept for COMMAND: {e}",
                    g.path().display()
                ));
            }
        }
    }

    /// COMMAND did not run: no service holds the guards.
    fn erase(&self) {
        for (_, g) in self.held() {
            let _ = g.erase();
        }
    }
}

/// Why a PATH whose guard is held elsewhere is in the way: the guard's holders.
fn busy(path: &Path, guard: &Path, meta: &locksmith::probe::Stat, snap: &Snapshot) -> String {
    let holders = snap.kernel_holders(FileKey::of(meta));
    let by = if holders.is_empty() {
        // Gone from /proc/locks since, or held from another machine (NFS).
        "by a process not listed here".to_string()
    } else {
        locksmith::verdict::describe_holders(&holders)
    };
    format!(
        "{} stays: live: its start guard {} is locked in the kernel by {by}: a service `locksmith start` started for it runs",
        path.display(),
        guard.display()
    )
}
