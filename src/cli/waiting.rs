//! `locksmith --pid N` (with or without `--scan`): what process N holds and what it waits for,
//! as `lslocks -p N` lists what N holds. The files it holds a kernel lock on (through its own
//! descriptors: see [`locksmith::probe::open_files::locked_by`]) and the lock files it is
//! blocked on (in `flock(2)`/`fcntl(2)`, or retrying a dotlock: see
//! [`locksmith::probe::waiters`]) are judged as `--scan` judges a path, and reported with
//! their holders, verdicts and waiters (N among them); the table view says first what N holds
//! and what it is doing. Exit status as `--scan`: 1 when a lock it waits for is stale, else 0,
//! also when it holds and waits for nothing (it says so).

use std::path::PathBuf;
use std::time::Instant;

use anyhow::anyhow;
use locksmith::probe::{PidState, Snapshot};
use locksmith::probe::{open_files, waiters};
use locksmith::scan::{self, Config, Finding, ScanError};
use locksmith::verdict::Verdict;

/// The locks `pid` waits for, judged, with what the report needs around them, and a line
/// saying what it does for the table.
pub struct Waited {
    /// The snapshot they were judged with (their waiters are found in it).
    pub snap: Snapshot,
    /// The paths it holds, then those it waits for: the report's roots.
    pub roots: Vec<PathBuf>,
    /// Each lock once.
    pub findings: Vec<Finding>,
    pub errors: Vec<ScanError>,
    /// The locks held and the waits found.
    pub entries: u64,
    pub started: Instant,
    /// What it holds and what it waits for, a line each; escaped.
    pub says: String,
}

impl Waited {
    /// Whether a lock it waits for is stale (exit status 1).
    pub fn stale(&self) -> bool {
        self.findings
            .iter()
            .any(|f| f.judgement.verdict() == Verdict::Stale)
    }
}

pub fn find(pid: i32, config: &Config) -> anyhow::Result<Waited> {
    let started = Instant::now();
    let snap = Snapshot::take();
    let facts = match snap.pid(pid) {
        PidState::Alive(f) => f,
        PidState::Zombie(f) => {
            return Err(anyhow!(
                "process {pid} ({}) has exited (a zombie): it waits for nothing",
                f.comm
            ));
        }
        PidState::Absent => return Err(anyhow!("no process {pid} on this host")),
        PidState::ExistsOpaque => {
            return Err(anyhow!(
                "process {pid} exists, but /proc/{pid} cannot be read here: run as root or as its user"
            ));
        }
    };
    let who = format!("process {pid} ({})", facts.comm);
    let held = open_files::locked_by(pid, snap.kernel_locks()).unwrap_or_default();
    let waits = waiters::waiting_for(&snap, pid);
    let mut findings = Vec::new();
    let mut errors = Vec::new();
    let paths = held
        .iter()
        .map(|(p, _)| p)
        .chain(waits.iter().map(|w| &w.path));
    for path in paths {
        match scan::judge_path(path, &snap, config) {
            Ok(Some(f)) => {
                if !findings.iter().any(|x: &Finding| x.path == f.path) {
                    findings.push(f);
                }
            }
            Ok(None) => {}
            Err(e) => errors.push(e),
        }
    }
    errors.sort_by(|a, b| a.path().cmp(b.path()));
    let mut says: Vec<String> = held
        .iter()
        .map(|(path, l)| {
            format!(
                "{who} holds {} ({} {})",
                path.display(),
                l.how.as_str(),
                l.mode.as_str()
            )
        })
        .collect();
    let waiting = if let Some(w) = waits.first() {
        let mut line = format!("{who} waits for {}", describe_paths(&waits));
        line.push_str(&format!(": {}", w.evidence));
        line
    } else if !snap.kernel_locks().blocked_requests_of(pid).is_empty() {
        format!(
            "{who} has a blocked lock request in /proc/locks, but which file it waits for cannot be read here (/proc/{pid}/syscall and fd: run as root or as its user)"
        )
    } else {
        let state = waiters::HolderState::read(pid);
        let doing = state
            .and_then(|s| s.wchan.map(|w| format!(" (state {}, in {w})", s.state)))
            .unwrap_or_default();
        let holds = if held.is_empty() {
            " and holds no kernel lock"
        } else {
            ""
        };
        format!("{who} is not waiting for a lock that can be told{holds}{doing}")
    };
    says.push(waiting);
    let mut roots: Vec<PathBuf> = held.iter().map(|(p, _)| p.clone()).collect();
    roots.extend(waits.iter().map(|w| w.path.clone()));
    Ok(Waited {
        roots,
        entries: (held.len() + waits.len()) as u64,
        snap,
        findings,
        errors,
        started,
        says: says
            .iter()
            .map(|l| locksmith::text::escape(l))
            .collect::<Vec<_>>()
            .join("\n"),
    })
}

fn describe_paths(waits: &[waiters::Wait]) -> String {
    let mut paths: Vec<String> = waits.iter().map(|w| w.path.display().to_string()).collect();
    paths.dedup();
    match paths.len() {
        1 => paths.remove(0),
        n => format!("one of {n} locks ({})", paths.join(", ")),
    }
}
