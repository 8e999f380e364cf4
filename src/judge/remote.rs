//! Answers from the owner's host ([`crate::remote`]) judged by the same rules as local
//! evidence: `stale` when the host says the PID does not exist there or is a zombie
//! ([`Rule::PidGone`]), that it booted again since the record was written
//! ([`Rule::EarlierBoot`]), or that the process there started well after the lock was written
//! or at another start tick ([`Rule::PidReused`]); `live` when the process is alive there and
//! is not proven to be another; anything else keeps `foreign`, with the reason.

use serde::{Deserialize, Serialize};

use super::Judgement;
use super::pid::fmt_ms;
use crate::verdict::{Proof, RemoteClaim, Rule, Verdict};

/// The version of the [`Answer`] document; an answer of another version is not understood.
pub const ANSWER_VERSION: u32 = 1;

/// How much later than the lock a process on another host must have started before that
/// proves the PID was reused: the two times come from different clocks (the file's mtime is
/// set by the file server, the start time by the other host), so a small difference proves
/// nothing.
pub const CROSS_HOST_SLACK_MS: i64 = 5 * 60 * 1000;

/// What a host says about itself and the PIDs it was asked about (`locksmith inspect --json`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Answer {
    pub version: u32,
    /// The answering host's name (`uname -n`).
    pub host: String,
    pub boot_id: Option<String>,
    /// Seconds since the epoch.
    pub boot_time: Option<i64>,
    /// The PID namespace the question was answered in.
    pub pid_ns: Option<u64>,
    /// Whether the boot id asked about (`--boot-id`) is this host's, when one was asked.
    pub boot_id_matches: Option<bool>,
    pub processes: Vec<PidAnswer>,
}

/// One PID as the host sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PidAnswer {
    pub pid: i64,
    pub state: PidStatus,
    /// `comm`.
    pub name: Option<String>,
    pub exe: Option<String>,
    #[serde(default)]
    pub cmdline: Vec<String>,
    /// Start time in ms since the epoch (by that host's clock).
    pub start_ms: Option<i64>,
    /// Start time in clock ticks since that host booted (field 22 of `/proc/<pid>/stat`).
    pub start_ticks: Option<u64>,
    pub pid_ns: Option<u64>,
    /// A kernel thread (`PF_KTHREAD`): never the owner of a lock file.
    #[serde(default)]
    pub kernel_thread: bool,
    /// Whether it is one of the `--expect` programs, when some were named.
    pub expected: Option<bool>,
}

/// What `kill(pid, 0)` and `/proc/<pid>` said.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PidStatus {
    /// ESRCH: no such process.
    Absent,
    Alive,
    /// Exited, waiting to be reaped.
    Zombie,
    /// EPERM: it exists, but `/proc/<pid>` is not readable.
    Exists,
    /// Not a valid process id.
    Invalid,
}

/// Whether the name a host gives itself is the name the lock records: equal (ignoring case), or
/// one is the other's first label (`node17` and `node17.cluster.example`).
pub fn same_host_name(recorded: &str, answered: &str) -> bool {
    let (r, a) = (recorded.to_ascii_lowercase(), answered.to_ascii_lowercase());
    let first = |s: &str| s.split('.').next().unwrap_or("").to_string();
    r == a || first(&r) == a || first(&a) == r
}

/// Judges a foreign lock again with its host's answer. Returns the new judgement (the claim is
/// kept on it, so a reclaim can ask again), or the old one with the reason it stays `foreign`.
/// `answer` is the host's answer, or the line saying why there is none.
pub fn settle(old: &Judgement, claim: &RemoteClaim, answer: Result<&Answer, String>) -> Judgement {
    let mut j = match answer {
        Err(line) => Judgement::foreign(line),
        Ok(a) => from_answer(claim, a),
    };
    if j.verdict() == Verdict::Foreign {
        j.evidence.extend(old.evidence.iter().cloned());
    }
    j.owner = old.owner.clone();
    j.holders = old.holders.clone();
    j.flags = old.flags.clone();
    j.remote = Some(Box::new(claim.clone()));
    j
}

fn proof(rule: Rule, claim: &RemoteClaim) -> Proof {
    Proof::by(rule)
        .fact("pid", claim.pid)
        .fact("host", claim.host.as_str())
        .fact("asked", "ssh")
}

fn from_answer(claim: &RemoteClaim, a: &Answer) -> Judgement {
    let host = &claim.host;
    let pid = claim.pid;
    if a.version != ANSWER_VERSION {
        return Judgement::foreign(format!(
            "asked {host} over ssh: its answer is of version {} (this locksmith reads {ANSWER_VERSION})",
            a.version
        ));
    }
    if !same_host_name(host, &a.host) {
        return Judgement::foreign(format!(
            "asked {host} over ssh, but the host that answered is called \"{}\": not the lock's host",
            a.host
        ));
    }
    if let (Some(theirs), Some(now)) = (&claim.boot_id, &a.boot_id)
        && theirs != now
    {
        return Judgement::stale(
            proof(Rule::EarlierBoot, claim)
                .fact("boot_id", theirs.as_str())
                .fact("this_boot_id", now.as_str()),
            format!(
                "asked {host} over ssh: it has booted again since the lock was written (boot id {theirs}; now {now})"
            ),
        );
    }
    let Some(p) = a.processes.iter().find(|p| p.pid == pid) else {
        return Judgement::foreign(format!(
            "asked {host} over ssh: its answer says nothing about PID {pid}"
        ));
    };
    if let (Some(theirs), Some(answered)) = (claim.pid_ns, a.pid_ns)
        && theirs != answered
    {
        return Judgement::foreign(format!(
            "asked {host} over ssh, but the lock's owner is in PID namespace pid:[{theirs}] there and the answer came from pid:[{answered}]"
        ));
    }
    let boot_note = if claim.boot_id.is_some() {
        ", boot id unchanged"
    } else {
        ""
    };
    let name = p.name.as_deref().unwrap_or("?");
    match p.state {
        PidStatus::Invalid => Judgement::foreign(format!(
            "asked {host} over ssh: PID {pid} is not a valid process id there"
        )),
        PidStatus::Absent => Judgement::stale(
            proof(Rule::PidGone, claim).fact("seen", "ESRCH"),
            format!("asked {host} over ssh: no process {pid} (kill({pid}, 0): ESRCH){boot_note}"),
        ),
        PidStatus::Zombie => Judgement::stale(
            proof(Rule::PidGone, claim).fact("seen", "zombie"),
            format!("asked {host} over ssh: process {pid} ({name}) is a zombie: it has exited"),
        ),
        PidStatus::Exists => Judgement::live(format!(
            "asked {host} over ssh: process {pid} exists (EPERM; not readable there)"
        )),
        PidStatus::Alive if pid == 1 || p.kernel_thread => Judgement::foreign(format!(
            "asked {host} over ssh: PID {pid} there is {} ({name}), which owns no lock file: the lock was written in another PID namespace",
            if pid == 1 {
                "its init"
            } else {
                "a kernel thread"
            }
        )),
        PidStatus::Alive => {
            if let (Some(theirs), Some(now)) = (claim.start_ticks, p.start_ticks)
                && claim.boot_id.is_some()
                && theirs != now
            {
                return Judgement::stale(
                    proof(Rule::PidReused, claim)
                        .fact("record_start_ticks", theirs)
                        .fact("process_start_ticks", now),
                    format!(
                        "asked {host} over ssh: PID {pid} was reused: the owner started at tick {theirs} of this boot, process {pid} ({name}) at tick {now}"
                    ),
                );
            }
            if let (Some(started), Some(written)) = (p.start_ms, claim.written_ms)
                && started > written + CROSS_HOST_SLACK_MS
            {
                return Judgement::stale(
                    proof(Rule::PidReused, claim)
                        .fact("started", fmt_ms(started))
                        .fact("written", fmt_ms(written))
                        .fact("slack_ms", CROSS_HOST_SLACK_MS),
                    format!(
                        "asked {host} over ssh: PID {pid} was reused: process {pid} ({name}) started at {}, after the lock was written at {}",
                        fmt_ms(started),
                        fmt_ms(written)
                    ),
                );
            }
            if p.expected == Some(false) {
                return Judgement::unknown(format!(
                    "asked {host} over ssh: process {pid} is alive there since before the lock, but is {name}, not {}: nothing proves the lock is not its",
                    claim.expect.join("/")
                ));
            }
            let since = p
                .start_ms
                .map(|ms| format!(", started {}", fmt_ms(ms)))
                .unwrap_or_default();
            let before = match (p.start_ms, claim.written_ms) {
                (Some(s), Some(w)) if s <= w => ", before the lock was written",
                _ => "",
            };
            Judgement::live(format!(
                "asked {host} over ssh: process {pid} ({name}) is alive{since}{before}"
            ))
        }
    }
}
