//! `locksmith --scan --pid N`: what process N waits for. The lock files it is blocked on (in
//! `flock(2)`/`fcntl(2)`, or retrying a GnuPG dotlock: see [`locksmith::probe::waiters`]) are
//! judged as `--scan` judges a path, and reported with their holders, verdicts and waiters
//! (N among them); the table view says first what N is doing. Exit status as `--scan`: 1
//! when a lock it waits for is stale, else 0, also when it waits for nothing (it says so).

use std::path::PathBuf;
use std::time::Instant;

use anyhow::anyhow;
use locksmith::probe::waiters;
use locksmith::probe::{PidState, Snapshot};
use locksmith::scan::{self, Config, Finding, ScanError};
use locksmith::verdict::Verdict;

/// The locks `pid` waits for, judged, with what the report needs around them, and a line
/// saying what it does for the table.
pub struct Waited {
    /// The snapshot they were judged with (their waiters are found in it).
    pub snap: Snapshot,
    /// The paths it waits for: the report's roots.
    pub roots: Vec<PathBuf>,
    /// Each lock once.
    pub findings: Vec<Finding>,
    pub errors: Vec<ScanError>,
    /// The waits found.
    pub entries: u64,
    pub started: Instant,
    /// Escaped.
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
    let waits = waiters::waiting_for(&snap, pid);
    let mut findings = Vec::new();
    let mut errors = Vec::new();
    for w in &waits {
        match scan::judge_path(&w.path, &snap, config) {
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
    let says = if let Some(w) = waits.first() {
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
        format!("{who} is not waiting for a lock that can be told{doing}")
    };
    Ok(Waited {
        roots: waits.iter().map(|w| w.path.clone()).collect(),
        entries: waits.len() as u64,
        snap,
        findings,
        errors,
        started,
        says: locksmith::text::escape(&says),
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
