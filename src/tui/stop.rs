//! Stopping the processes that hold a lock (`x`): a hung tool holding its lock, say.
//!
//! The processes are the lock's holders now (the judgement's `holders`), or, when nothing holds
//! it open or locked, the live owner process it names, each followed by the processes it
//! started and waits for (its descendants: the editor of a commit that keeps its
//! lock, the shell between them), so that the dialog names every process of the
//! chain. [`plan`] looks at each one in `/proc` and keeps those this user may stop: a process
//! of this user, or any process when running as root; never PID 1 and never the UI itself.
//! Each target is remembered with its start time, and [`send`] signals it through a pidfd
//! opened first and checked against that start time, so a PID reused since the question is
//! never signalled.
//!
//! The signals are those a person needs ([`Sig::ALL`]): SIGTERM, SIGINT (what Ctrl-C would
//! have sent), SIGHUP (what closing its terminal would have), SIGKILL, and SIGCONT for a
//! stopped holder (Ctrl-Z, a debugger), which resumes it so that it can finish and let go;
//! the dialog offers SIGCONT first when a target is stopped. Each signal that asks a process
//! to end is followed by SIGCONT, so that a stopped one acts on it. After one of those,
//! [`send`] waits up to [`GRACE`] for the targets to exit; the UI offers SIGKILL for those
//! that did not.

use std::time::{Duration, Instant};

use locksmith::Judgement;
use locksmith::probe::{HostFacts, PidState, ProcFacts, Snapshot, process};
use locksmith::report::waiting::Stuck;
use locksmith::scan::Finding;

/// How long the targets of a SIGTERM have to exit before SIGKILL is offered.
pub const GRACE: Duration = Duration::from_secs(5);
/// How often [`send`] looks whether the targets are gone.
const POLL: Duration = Duration::from_millis(50);

/// The signals the UI sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sig {
    /// Asks the process to exit (it may clean up, and may ignore it).
    Term,
    /// An interrupt, as Ctrl-C in its terminal (it may clean up, and may ignore it).
    Int,
    /// A hangup, as when its terminal goes away (many programs save and exit; daemons may
    /// reload instead).
    Hup,
    /// Ends it at once (no clean-up).
    Kill,
    /// Resumes a stopped process (it goes on with what it was doing).
    Cont,
}

impl Sig {
    /// Every signal the dialog offers, in the order `s` cycles through them.
    pub const ALL: [Sig; 5] = [Sig::Term, Sig::Int, Sig::Hup, Sig::Kill, Sig::Cont];

    pub fn name(self) -> &'static str {
        match self {
            Sig::Term => "SIGTERM",
            Sig::Int => "SIGINT",
            Sig::Hup => "SIGHUP",
            Sig::Kill => "SIGKILL",
            Sig::Cont => "SIGCONT",
        }
    }

    /// Whether it asks the process to end (and SIGKILL is offered when it does not).
    pub fn asks_to_end(self) -> bool {
        matches!(self, Sig::Term | Sig::Int | Sig::Hup)
    }

    /// The next signal of [`Sig::ALL`] (`forward`) or the previous one, wrapping around.
    pub fn cycle(self, forward: bool) -> Sig {
        let n = Sig::ALL.len();
        let i = Sig::ALL.iter().position(|&s| s == self).unwrap_or(0);
        Sig::ALL[if forward {
            (i + 1) % n
        } else {
            (i + n - 1) % n
        }]
    }
}

/// A process to signal, as it was when the user was asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub pid: i32,
    /// Start time in clock ticks since boot: what tells this process from a later one that
    /// got its PID.
    pub start_ticks: u64,
    /// Its name (comm), raw.
    pub name: String,
    /// Its user's name (or uid), raw.
    pub user: String,
    /// Its command line, raw.
    pub cmdline: String,
    /// How it holds the lock (`flock write`, `open`, ...), `owner` for the process the lock
    /// names, or `started by PID NAME` for a process of the chain below a holder.
    pub how: String,
    /// The holder it was started by (directly or not), for a process of a holder's chain.
    pub under: Option<i32>,
    /// Stopped (state `T` or `t`): it acts on no signal but SIGKILL until it runs again.
    pub stopped: bool,
}

impl Target {
    /// `pid 4242 tool (user me)`: raw text, a view escapes it.
    pub fn describe(&self) -> String {
        format!("pid {} {} (user {})", self.pid, self.name, self.user)
    }
}

/// What the user is asked to confirm.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The lock they hold.
    pub finding: Box<Finding>,
    pub signal: Sig,
    pub targets: Vec<Target>,
    /// Processes that hold the lock but are not signalled, each with why (raw text).
    pub refused: Vec<String>,
    /// SIGKILL offered after this signal asked the targets to end and they did not within
    /// [`GRACE`].
    pub after: Option<Sig>,
    /// A holder seen stuck (stopped, or not reaping the children it holds the lock for), with
    /// why: the dialog names it.
    pub stuck: Option<Stuck>,
}

/// The processes `x` is about for a judgement: every holder visible here (once each, in
/// order), else the live owner process; each with how it holds the lock.
pub fn candidates(j: &Judgement) -> Vec<(i32, String)> {
    let mut out: Vec<(i32, String)> = Vec::new();
    for h in &j.holders {
        if h.pid > 0 && !out.iter().any(|(p, _)| *p == h.pid) {
            out.push((h.pid, h.describe_how()));
        }
    }
    if out.is_empty()
        && let Some(p) = &j.process
        && p.pid > 0
    {
        out.push((p.pid, "owner".to_string()));
    }
    out
}

/// Whether this user may signal a process of `uid` with PID `pid`: `Err` says why not.
/// `me` is our effective uid, `own_pid` our PID.
pub fn allowed(pid: i32, uid: Option<u32>, me: u32, own_pid: i32) -> Result<(), String> {
    if pid == 1 {
        return Err(format!("pid {pid} is the init process: never signalled"));
    }
    if pid == own_pid {
        return Err(format!("pid {pid} is this UI: never signalled"));
    }
    if me == 0 {
        return Ok(());
    }
    match uid {
        Some(u) if u == me => Ok(()),
        Some(u) => Err(format!(
            "pid {pid} belongs to uid {u}: only processes of your own user (uid {me}) are stopped, or any as root"
        )),
        None => Err(format!("pid {pid}: whose process it is cannot be read")),
    }
}

fn target_of(f: &ProcFacts, how: String, snap: &Snapshot) -> Target {
    let user = f
        .uid
        .map(|u| snap.user_name(u).unwrap_or_else(|| format!("uid {u}")))
        .unwrap_or_else(|| "?".into());
    Target {
        pid: f.pid,
        start_ticks: f.start_ticks,
        name: f.name().to_string(),
        user,
        cmdline: f.cmdline.join(" "),
        how,
        under: None,
        stopped: matches!(f.state, 'T' | 't'),
    }
}

/// At most this many processes of a holder's chain are named (its descendants).
const CHAIN_MAX: usize = 16;

/// The processes `pid` started, directly or not, that are still there (breadth first, at
/// most [`CHAIN_MAX`]): from `/proc/PID/task/*/children`, else from every process's parent.
pub fn descendants(pid: i32) -> Vec<i32> {
    let mut out = Vec::new();
    let mut queue = std::collections::VecDeque::from([pid]);
    let mut parents: Option<Vec<(i32, i32)>> = None;
    while let Some(p) = queue.pop_front() {
        let kids = children_of(p).unwrap_or_else(|| {
            parents
                .get_or_insert_with(all_parents)
                .iter()
                .filter(|&&(_, parent)| parent == p)
                .map(|&(child, _)| child)
                .collect()
        });
        for k in kids {
            if k != pid && !out.contains(&k) && out.len() < CHAIN_MAX {
                out.push(k);
                queue.push_back(k);
            }
        }
    }
    out
}

/// The children of `pid` from `/proc/PID/task/*/children` (`None` where the kernel has no such
/// file).
fn children_of(pid: i32) -> Option<Vec<i32>> {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
    let mut out = Vec::new();
    for t in tasks.flatten() {
        let text = std::fs::read_to_string(t.path().join("children")).ok()?;
        out.extend(
            text.split_whitespace()
                .filter_map(|n| n.parse::<i32>().ok()),
        );
    }
    Some(out)
}

/// Every process with its parent, from `/proc/PID/stat`.
fn all_parents() -> Vec<(i32, i32)> {
    locksmith_sys::host::pids()
        .filter_map(|pid| {
            let stat = locksmith_sys::host::read_proc(format!("/proc/{pid}/stat")).ok()?;
            let stat = String::from_utf8_lossy(&stat);
            let after = &stat[stat.rfind(')')? + 1..];
            let ppid = after.split_whitespace().nth(1)?.parse().ok()?;
            Some((pid, ppid))
        })
        .collect()
}

/// Looks at the processes `x` is about for `finding` (each holder, then the chain it started)
/// and keeps those this user may stop. `Err` (a sentence) when none is left.
pub fn plan(finding: &Finding) -> Result<Plan, String> {
    let holders = candidates(&finding.judgement);
    if holders.is_empty() {
        return Err("nothing holds this lock now: there is no process to stop".into());
    }
    let mut candidates: Vec<(i32, String, Option<i32>)> = Vec::new();
    for (pid, how) in holders {
        if candidates.iter().any(|(p, ..)| *p == pid) {
            continue;
        }
        candidates.push((pid, how, None));
        for child in descendants(pid) {
            if !candidates.iter().any(|(p, ..)| *p == child) {
                candidates.push((child, String::new(), Some(pid)));
            }
        }
    }
    let host = HostFacts::probe();
    let snap = Snapshot::take();
    let me = rustix::process::geteuid().as_raw();
    let own = std::process::id() as i32;
    let mut targets = Vec::new();
    let mut refused = Vec::new();
    for (pid, how, under) in candidates {
        match process::probe(pid, &host) {
            PidState::Alive(f) if f.kernel_thread => {
                refused.push(format!("pid {pid} is a kernel thread"));
            }
            PidState::Alive(f) => match allowed(pid, f.uid, me, own) {
                Ok(()) => {
                    let how = match under {
                        Some(top) => {
                            let name = targets
                                .iter()
                                .find(|t: &&Target| t.pid == top)
                                .map_or_else(String::new, |t| format!(" {}", t.name));
                            format!("started by {top}{name}")
                        }
                        None => how,
                    };
                    let mut t = target_of(&f, how, &snap);
                    t.under = under;
                    targets.push(t);
                }
                // A process of the chain we may not stop is said only when it matters: a
                // holder's.
                Err(why) if under.is_none() => refused.push(why),
                Err(_) => {}
            },
            PidState::Zombie(_) | PidState::Absent if under.is_none() => {
                refused.push(format!("pid {pid} has exited already"));
            }
            PidState::ExistsOpaque if under.is_none() => refused.push(format!(
                "pid {pid} cannot be read here: not a process of yours"
            )),
            _ => {}
        }
    }
    if targets.is_empty() {
        return Err(format!("no process to stop: {}", refused.join("; ")));
    }
    // A stopped holder is first offered SIGCONT: resumed, it can finish and let go.
    let signal = if targets.iter().any(|t| t.stopped) {
        Sig::Cont
    } else {
        Sig::Term
    };
    Ok(Plan {
        finding: Box::new(finding.clone()),
        signal,
        targets,
        refused,
        after: None,
        stuck: None,
    })
}

/// What came of signalling a plan's targets.
#[derive(Debug, Clone, Default)]
pub struct Sent {
    /// Signalled, and gone (within [`GRACE`] of a SIGTERM).
    pub exited: Vec<Target>,
    /// Signalled, still running after [`GRACE`] (a signal that asks them to end).
    pub survivors: Vec<Target>,
    /// Resumed (SIGCONT): they go on.
    pub resumed: Vec<Target>,
    /// Not signalled, or the signal failed: a sentence each (raw text).
    pub errors: Vec<String>,
}

impl Sent {
    /// What came of signalling `plan`'s processes, in a sentence, and whether anything went
    /// wrong (an error, or a process still running).
    pub fn said(&self, plan: &Plan) -> (String, bool) {
        let sig = plan.signal.name();
        let names = |ts: &[Target]| -> String {
            ts.iter()
                .map(|t| super::text::clean(&t.describe()))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut parts = Vec::new();
        if !self.resumed.is_empty() {
            parts.push(format!(
                "{sig}: {} resumed; the lock goes once {} done",
                names(&self.resumed),
                if self.resumed.len() == 1 {
                    "it is"
                } else {
                    "they are"
                }
            ));
        }
        if !self.exited.is_empty() {
            parts.push(format!("{sig}: {} exited", names(&self.exited)));
        }
        if !self.survivors.is_empty() {
            parts.push(format!(
                "{} still running after {} s",
                names(&self.survivors),
                GRACE.as_secs()
            ));
        }
        parts.extend(self.errors.iter().map(|e| super::text::clean(e)));
        let wrong = !self.errors.is_empty() || !self.survivors.is_empty();
        (parts.join("; "), wrong)
    }

    /// SIGKILL for the processes `plan`'s signal asked to end and did not end, if any.
    pub fn again(&self, plan: &Plan) -> Option<Plan> {
        (plan.signal.asks_to_end() && !self.survivors.is_empty()).then(|| Plan {
            signal: Sig::Kill,
            targets: self.survivors.clone(),
            refused: Vec::new(),
            after: Some(plan.signal),
            finding: plan.finding.clone(),
            stuck: plan.stuck.clone(),
        })
    }
}

/// Whether the process a target names is gone (exited, a zombie, or its PID now another
/// process's).
fn gone(t: &Target, host: &HostFacts) -> bool {
    match process::probe(t.pid, host) {
        PidState::Alive(f) => f.start_ticks != t.start_ticks,
        PidState::Zombie(_) | PidState::Absent => true,
        PidState::ExistsOpaque => false,
    }
}

/// Signals every target of `plan` (each through a pidfd, checked to be the same process the
/// user confirmed), then, after SIGTERM, waits up to [`GRACE`] for them to exit.
pub fn send(plan: &Plan) -> Sent {
    let host = HostFacts::probe();
    let mut out = Sent::default();
    let mut sent = Vec::new();
    for t in &plan.targets {
        match sys::signal(t, plan.signal, &host) {
            Ok(()) => sent.push(t.clone()),
            Err(why) => out.errors.push(why),
        }
    }
    let wait = match plan.signal {
        s if s.asks_to_end() => GRACE,
        // SIGKILL cannot be caught: the process ends as soon as the kernel gets to it.
        Sig::Kill => Duration::from_secs(1),
        // Resumed, it goes on: nothing to wait for.
        _ => {
            out.resumed = sent;
            return out;
        }
    };
    let start = Instant::now();
    loop {
        let (done, running): (Vec<Target>, Vec<Target>) =
            sent.iter().cloned().partition(|t| gone(t, &host));
        if running.is_empty() || start.elapsed() >= wait {
            out.exited = done;
            out.survivors = running;
            return out;
        }
        std::thread::sleep(POLL);
    }
}

#[cfg(target_os = "linux")]
mod sys {
    use super::{HostFacts, PidState, Sig, Target, process};
    use rustix::process::{Pid, PidfdFlags, Signal, pidfd_open, pidfd_send_signal};

    /// Opens a pidfd for the target's PID, checks that it still names the process confirmed
    /// (same start time: the pidfd pins the PID from here on), and signals it through the
    /// pidfd (`pidfd_open(2)`, `pidfd_send_signal(2)`). A signal that asks it to end comes
    /// with SIGCONT: a stopped process acts on no signal but SIGKILL until it runs again.
    pub fn signal(t: &Target, sig: Sig, host: &HostFacts) -> Result<(), String> {
        let pid = Pid::from_raw(t.pid).ok_or_else(|| format!("pid {} is not a PID", t.pid))?;
        let fd = pidfd_open(pid, PidfdFlags::empty())
            .map_err(|e| format!("pid {}: cannot open it (pidfd_open: {e})", t.pid))?;
        match process::probe(t.pid, host) {
            PidState::Alive(f) if f.start_ticks == t.start_ticks => {}
            PidState::Alive(_) => {
                return Err(format!(
                    "pid {} is another process now (the one you confirmed exited): not signalled",
                    t.pid
                ));
            }
            _ => return Err(format!("pid {} has exited already", t.pid)),
        }
        let signal = match sig {
            Sig::Term => Signal::TERM,
            Sig::Int => Signal::INT,
            Sig::Hup => Signal::HUP,
            Sig::Kill => Signal::KILL,
            Sig::Cont => Signal::CONT,
        };
        pidfd_send_signal(&fd, signal)
            .map_err(|e| format!("pid {}: {} failed: {e}", t.pid, sig.name()))?;
        if sig.asks_to_end() {
            pidfd_send_signal(&fd, Signal::CONT)
                .map_err(|e| format!("pid {}: SIGCONT failed: {e}", t.pid))?;
        }
        Ok(())
    }
}

#[cfg(not(target_os = "linux"))]
mod sys {
    use super::{HostFacts, Sig, Target};

    pub fn signal(t: &Target, _sig: Sig, _host: &HostFacts) -> Result<(), String> {
        Err(format!(
            "pid {}: stopping processes is supported on Linux only",
            t.pid
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn init_and_the_ui_are_never_signalled_and_users_only_their_own() {
        let own = 4242;
        assert!(allowed(1, Some(0), 0, own).unwrap_err().contains("init"));
        assert!(
            allowed(own, Some(0), 0, own)
                .unwrap_err()
                .contains("this UI")
        );
        // Root may stop anyone else's.
        assert_eq!(allowed(77, Some(1000), 0, own), Ok(()));
        assert_eq!(allowed(77, None, 0, own), Ok(()));
        // A user only their own.
        assert_eq!(allowed(77, Some(1000), 1000, own), Ok(()));
        let other = allowed(77, Some(1001), 1000, own).unwrap_err();
        assert!(
            other.contains("uid 1001") && other.contains("or any as root"),
            "{other}"
        );
        assert!(allowed(77, None, 1000, own).is_err());
        assert!(allowed(1, Some(1000), 1000, own).is_err());
    }

    #[test]
    fn the_holders_now_come_first_then_the_owner_process() {
        use locksmith::{Holder, HolderHow, ProcessInfo};
        let holder = |pid, how| Holder {
            pid,
            name: Some("flock".into()),
            how,
            mode: None,
            range: None,
            container: None,
        };
        let mut j = Judgement::live("held");
        j.process = Some(Box::new(ProcessInfo {
            pid: 10,
            name: "sleep".into(),
            exe: None,
            cmd: Vec::new(),
            user: None,
            start_time: None,
            container: None,
        }));
        assert_eq!(candidates(&j), [(10, "owner".to_string())]);
        j.holders = vec![
            holder(20, HolderHow::Flock),
            holder(-1, HolderHow::Posix),
            holder(20, HolderHow::Open),
            holder(21, HolderHow::Open),
        ];
        assert_eq!(
            candidates(&j),
            [(20, "flock".to_string()), (21, "open".to_string())],
            "each holder once; one not visible here is left out"
        );
    }

    #[test]
    fn the_signals_cycle_both_ways_and_those_that_ask_to_end_are_told() {
        assert_eq!(Sig::Term.cycle(true), Sig::Int);
        assert_eq!(Sig::Cont.cycle(true), Sig::Term, "wraps around");
        assert_eq!(Sig::Term.cycle(false), Sig::Cont);
        for s in Sig::ALL {
            assert_eq!(s.cycle(true).cycle(false), s);
        }
        assert!(Sig::Hup.asks_to_end() && Sig::Int.asks_to_end());
        assert!(!Sig::Kill.asks_to_end() && !Sig::Cont.asks_to_end());
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn the_chain_under_a_holder_is_what_it_started() {
        // A shell that waits for its sleep (as git waits for its editor).
        let mut sh = std::process::Command::new("sh")
            .args(["-c", "sleep 60; exit 0"])
            .spawn()
            .unwrap();
        let pid = sh.id() as i32;
        let sleep = (0..500)
            .find_map(|_| {
                let kids = descendants(pid);
                if kids.is_empty() {
                    std::thread::sleep(Duration::from_millis(10));
                }
                kids.first().copied()
            })
            .expect("the shell starts its sleep");
        let host = HostFacts::probe();
        let PidState::Alive(f) = process::probe(sleep, &host) else {
            panic!("the sleep runs");
        };
        assert_eq!(f.ppid, pid);
        assert_eq!(f.comm, "sleep");
        assert!(!descendants(pid).contains(&pid), "not itself");
        let _ = rustix::process::kill_process(
            rustix::process::Pid::from_raw(sleep).unwrap(),
            rustix::process::Signal::KILL,
        );
        sh.wait().unwrap();
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_stopped_holder_ends_on_sigterm() {
        use std::os::unix::process::ExitStatusExt;
        let mut child = std::process::Command::new("sleep")
            .arg("600")
            .spawn()
            .unwrap();
        let pid = child.id() as i32;
        let host = HostFacts::probe();
        rustix::process::kill_process(
            rustix::process::Pid::from_raw(pid).unwrap(),
            rustix::process::Signal::STOP,
        )
        .unwrap();
        let PidState::Alive(f) = process::probe(pid, &host) else {
            panic!("the sleep runs");
        };
        let t = target_of(&f, "owner".into(), &Snapshot::take());
        sys::signal(&t, Sig::Term, &host).unwrap();
        // Stopped, it would act on SIGTERM only once continued: SIGCONT came with it.
        let status = child.wait().unwrap();
        assert_eq!(status.signal(), Some(libc::SIGTERM));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_signal_never_reaches_a_process_that_is_not_the_one_confirmed() {
        let mut child = std::process::Command::new("sleep")
            .arg("60")
            .spawn()
            .unwrap();
        let pid = child.id() as i32;
        let host = HostFacts::probe();
        let PidState::Alive(f) = process::probe(pid, &host) else {
            panic!("the sleep runs");
        };
        // Another start time: a later process with the same PID.
        let mut t = target_of(&f, "owner".into(), &Snapshot::take());
        t.start_ticks += 1;
        let err = sys::signal(&t, Sig::Term, &host).unwrap_err();
        assert!(err.contains("another process"), "{err}");
        assert!(child.try_wait().unwrap().is_none(), "not signalled");
        // The one confirmed is.
        t.start_ticks -= 1;
        sys::signal(&t, Sig::Term, &host).unwrap();
        let status = child.wait().unwrap();
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(status.signal(), Some(15));
    }
}
