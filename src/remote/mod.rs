//! Asking the owner's host: turning `foreign` into proof when the host a lock names can answer.
//!
//! A lock whose owner is on another host is `foreign` here (README: Evidence): only that host can tell
//! whether the PID lives. Where the user lets us (`--ask-hosts`, or the `ask_hosts` hosts of the
//! configuration), locksmith runs itself on that host over the user's own ssh
//! (`ssh -o BatchMode=yes HOST locksmith inspect --json --pid N ...`) and asks one narrow,
//! read-only question per lock: is this PID alive there, since when, which program, and what is
//! that host's boot id. The answer becomes evidence here:
//!
//! - `stale` when the host answers that no such process exists (ESRCH) or it is a zombie, or that
//!   it booted again since the record was written (the record's boot id is not its boot id), or
//!   that the process there started well after the lock was written (PID reuse);
//! - `live` when the process is alive there, and is the lock's program;
//! - anything else (unreachable, timeout, host key unknown, no locksmith there, an answer from a
//!   host with another name, a PID that is that host's init or a kernel thread, another program
//!   than the lock names, another PID namespace) keeps `foreign`, with the reason.
//!
//! Invariants: one ssh connection per host per scan, and one more per host for a reclaim
//! ([`Reask`]), whatever the number of locks; hosts asked in parallel with a bound; at most
//! `max_hosts` hosts in a round and a deadline for the whole round, so lock files naming many
//! hosts cannot stretch a scan ([`ssh::ask_hosts`]); every wait bounded; never a password prompt
//! (`BatchMode=yes`); a host name taken from a lock file is used only when it is a plain host
//! name (it can never become an ssh option or a user name). The remote side ([`mod@inspect`]) only
//! reads `/proc`.

pub mod inspect;
pub mod ssh;

use std::collections::HashMap;

use crate::judge::Judgement;
use crate::scan::Finding;
use crate::verdict::{RemoteClaim, Verdict};

pub use inspect::inspect;
pub use ssh::{AskConfig, AskFailure, AskHosts, ask_host};

pub use crate::judge::remote::{
    ANSWER_VERSION, Answer, CROSS_HOST_SLACK_MS, PidAnswer, PidStatus, same_host_name,
};

/// The outcome of asking one host.
pub type HostAnswer = Result<Answer, AskFailure>;

/// Judges a foreign lock again with its host's answer (by the judge's rules: see
/// [`crate::judge::remote`]).
pub fn settle(old: &Judgement, claim: &RemoteClaim, answer: &HostAnswer) -> Judgement {
    let host = &claim.host;
    let answer = answer.as_ref().map_err(|e| {
        if e.not_asked() {
            format!("{host} was not asked over ssh: {}", e.detail)
        } else {
            format!("asked {host} over ssh: no answer ({e})")
        }
    });
    crate::judge::remote::settle(old, claim, answer)
}

/// Asks every host named by a `foreign` finding that `cfg` allows (all of them with
/// `all_hosts`), one connection per host, and judges those findings again with the answers.
/// `progress` is told how many hosts remain as answers come in. Returns the hosts asked.
pub fn ask_and_settle(
    findings: &mut [Finding],
    cfg: &AskConfig,
    all_hosts: bool,
    progress: &(dyn Fn(usize) + Sync),
) -> Vec<String> {
    let questions = questions(findings.iter(), cfg, all_hosts);
    if questions.is_empty() {
        return Vec::new();
    }
    let answers = ssh::ask_hosts(&questions, cfg, progress);
    for f in findings.iter_mut() {
        if let Some(claim) = askable(f, cfg, all_hosts)
            && let Some(answer) = answers.get(&claim.host)
        {
            f.judgement = settle(&f.judgement, &claim, answer);
        }
    }
    let mut hosts: Vec<String> = answers.into_keys().collect();
    hosts.sort();
    hosts
}

/// Asking for a program that judges again and again (the UI): each host's answer is kept for a
/// while, so a host is asked at most once per `ttl` whatever the number of rounds, and never
/// twice at the same time. Asking blocks; callers run [`Asker::ask`] on a thread of its own.
#[derive(Debug)]
pub struct Asker {
    cfg: AskConfig,
    all_hosts: bool,
    ttl: std::time::Duration,
    cache: std::sync::Mutex<HashMap<String, (std::time::Instant, HostAnswer)>>,
    in_flight: std::sync::Mutex<std::collections::HashSet<String>>,
}

impl Asker {
    /// An asker, when there is anything to ask: `all_hosts` (`--ask-hosts`) or hosts listed
    /// in `cfg`.
    pub fn new(cfg: AskConfig, all_hosts: bool, ttl: std::time::Duration) -> Option<Self> {
        (all_hosts || !cfg.hosts().is_empty()).then(|| Asker {
            cfg,
            all_hosts,
            ttl,
            cache: Default::default(),
            in_flight: Default::default(),
        })
    }

    /// Judges `f` again with its host's kept answer when that answer is recent. Returns the
    /// claim to ask about when its host has no recent answer.
    pub fn settle_cached(&self, f: &mut Finding) -> Option<RemoteClaim> {
        let claim = askable(f, &self.cfg, self.all_hosts)?;
        let cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        match cache.get(&claim.host) {
            Some((at, answer)) if at.elapsed() < self.ttl => {
                f.judgement = settle(&f.judgement, &claim, answer);
                None
            }
            _ => Some(claim),
        }
    }

    /// The hosts of `claims` that no one is asking now, with their claims; they are marked as
    /// being asked until [`Asker::ask`] has their answers.
    pub fn take_unasked(&self, claims: Vec<RemoteClaim>) -> HashMap<String, Vec<RemoteClaim>> {
        let mut busy = self.in_flight.lock().unwrap_or_else(|e| e.into_inner());
        let mut out: HashMap<String, Vec<RemoteClaim>> = HashMap::new();
        for c in claims {
            if out.contains_key(&c.host) || busy.insert(c.host.clone()) {
                out.entry(c.host.clone()).or_default().push(c);
            }
        }
        out
    }

    /// Asks the hosts of `questions` (from [`Asker::take_unasked`]), keeps their answers and
    /// returns them.
    pub fn ask(
        &self,
        questions: &HashMap<String, Vec<RemoteClaim>>,
    ) -> HashMap<String, HostAnswer> {
        let answers = ssh::ask_hosts(questions, &self.cfg, &|_| {});
        let now = std::time::Instant::now();
        {
            let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
            for (host, a) in &answers {
                cache.insert(host.clone(), (now, a.clone()));
            }
        }
        let mut busy = self.in_flight.lock().unwrap_or_else(|e| e.into_inner());
        for host in questions.keys() {
            busy.remove(host);
        }
        answers
    }

    /// Asking again for a reclaim of `batch`, whatever is kept (see [`Reask`]).
    pub fn reask<'a>(&'a self, batch: impl IntoIterator<Item = &'a Finding>) -> Reask<'a> {
        Reask::new(&self.cfg, self.all_hosts, batch)
    }

    /// Judges `f` again with `answers`, if one is for its host.
    pub fn settle_with(&self, f: &mut Finding, answers: &HashMap<String, HostAnswer>) {
        if let Some(claim) = askable(f, &self.cfg, self.all_hosts)
            && let Some(a) = answers.get(&claim.host)
        {
            f.judgement = settle(&f.judgement, &claim, a);
        }
    }
}

/// Asking again right before a reclaim removes locks proven stale by asking: each host once
/// per reclaim, about all of the batch's PIDs on it, however many of its locks there are
/// (one ssh connection per host, with the bounds of [`ssh::ask_hosts`]). The hosts are asked
/// when the first such lock is about to be removed, all at once.
#[derive(Debug)]
pub struct Reask<'a> {
    cfg: &'a AskConfig,
    all_hosts: bool,
    questions: HashMap<String, Vec<RemoteClaim>>,
    answers: std::sync::OnceLock<HashMap<String, HostAnswer>>,
}

impl<'a> Reask<'a> {
    /// Asking again about the locks of `batch` that were judged by asking their host.
    pub fn new(
        cfg: &'a AskConfig,
        all_hosts: bool,
        batch: impl IntoIterator<Item = &'a Finding>,
    ) -> Self {
        let asked = batch.into_iter().filter(|f| f.judgement.remote.is_some());
        Reask {
            cfg,
            all_hosts,
            questions: questions(asked, cfg, all_hosts),
            answers: std::sync::OnceLock::new(),
        }
    }

    /// Judges `fresh` (`judged`, judged again now) with its host's answer of this reclaim,
    /// asking every host of the batch the first time one is needed. A lock whose host gives
    /// no answer, or that names another host now, stays `foreign`.
    pub fn settle(&self, judged: &Finding, fresh: &mut Finding) {
        if judged.judgement.remote.is_none() {
            return;
        }
        let Some(claim) = askable(fresh, self.cfg, self.all_hosts) else {
            return;
        };
        let answers = self
            .answers
            .get_or_init(|| ssh::ask_hosts(&self.questions, self.cfg, &|_| {}));
        // A lock that names another host now than when it was judged keeps the verdict of
        // its own evidence (`foreign`).
        let Some(answer) = answers.get(&claim.host) else {
            return;
        };
        fresh.judgement = settle(&fresh.judgement, &claim, answer);
    }
}

/// The claim of a finding that may be asked about, if it may.
fn askable(f: &Finding, cfg: &AskConfig, all_hosts: bool) -> Option<RemoteClaim> {
    let claim = f.judgement.remote.as_ref()?;
    let asked_before = f.judgement.verdict() != Verdict::Foreign;
    let wanted = all_hosts || cfg.allows(&claim.host);
    (wanted && (f.judgement.verdict() == Verdict::Foreign || asked_before))
        .then(|| (**claim).clone())
}

/// The PIDs to ask each host about.
fn questions<'a>(
    findings: impl Iterator<Item = &'a Finding>,
    cfg: &AskConfig,
    all_hosts: bool,
) -> HashMap<String, Vec<RemoteClaim>> {
    let mut by_host: HashMap<String, Vec<RemoteClaim>> = HashMap::new();
    for f in findings {
        if let Some(claim) = askable(f, cfg, all_hosts) {
            by_host.entry(claim.host.clone()).or_default().push(claim);
        }
    }
    by_host
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claim() -> RemoteClaim {
        RemoteClaim {
            host: "node17".into(),
            pid: 4242,
            boot_id: None,
            pid_ns: None,
            written_ms: Some(1_000_000_000),
            start_ticks: None,
            expect: vec!["emacs".into()],
        }
    }

    fn answer(p: PidAnswer) -> Answer {
        Answer {
            version: ANSWER_VERSION,
            host: "node17".into(),
            boot_id: Some("b".into()),
            boot_time: Some(1),
            pid_ns: Some(7),
            boot_id_matches: None,
            processes: vec![p],
        }
    }

    fn alive(start_ms: i64, expected: Option<bool>) -> PidAnswer {
        PidAnswer {
            pid: 4242,
            state: PidStatus::Alive,
            name: Some("emacs".into()),
            exe: None,
            cmdline: vec![],
            start_ms: Some(start_ms),
            start_ticks: Some(100),
            pid_ns: Some(7),
            kernel_thread: false,
            expected,
        }
    }

    fn old() -> Judgement {
        Judgement::foreign("owner host \"node17\" is not this host")
    }

    fn verdict(c: &RemoteClaim, a: HostAnswer) -> Judgement {
        settle(&old(), c, &a)
    }

    #[test]
    fn alive_before_the_lock_is_live() {
        let j = verdict(&claim(), Ok(answer(alive(999_000_000, Some(true)))));
        assert_eq!(j.verdict(), Verdict::Live, "{j:?}");
        assert!(j.evidence[0].contains("is alive"), "{j:?}");
        assert!(j.evidence[0].contains("before the lock"), "{j:?}");
        assert!(j.remote.is_some());
    }

    #[test]
    fn absent_is_stale_and_names_the_host() {
        let mut p = alive(0, None);
        p.state = PidStatus::Absent;
        let mut c = claim();
        c.boot_id = Some("b".into());
        let j = verdict(&c, Ok(answer(p)));
        assert_eq!(j.verdict(), Verdict::Stale);
        assert_eq!(
            j.evidence[0],
            "asked node17 over ssh: no process 4242 (kill(4242, 0): ESRCH), boot id unchanged"
        );
    }

    #[test]
    fn another_boot_is_stale() {
        let mut c = claim();
        c.boot_id = Some("old".into());
        let j = verdict(&c, Ok(answer(alive(0, Some(true)))));
        assert_eq!(j.verdict(), Verdict::Stale);
        assert!(j.evidence[0].contains("booted again"), "{j:?}");
    }

    #[test]
    fn reuse_needs_more_than_the_clock_slack() {
        let w = claim().written_ms.unwrap();
        let near = verdict(&claim(), Ok(answer(alive(w + 60_000, Some(true)))));
        assert_eq!(near.verdict(), Verdict::Live, "{near:?}");
        let far = verdict(
            &claim(),
            Ok(answer(alive(w + CROSS_HOST_SLACK_MS + 1, Some(true)))),
        );
        assert_eq!(far.verdict(), Verdict::Stale, "{far:?}");
    }

    #[test]
    fn another_start_tick_in_the_same_boot_is_reuse() {
        let mut c = claim();
        c.boot_id = Some("b".into());
        c.start_ticks = Some(100);
        assert_eq!(
            verdict(&c, Ok(answer(alive(0, Some(true))))).verdict(),
            Verdict::Live
        );
        c.start_ticks = Some(99);
        let j = verdict(&c, Ok(answer(alive(0, Some(true)))));
        assert_eq!(j.verdict(), Verdict::Stale, "{j:?}");
        assert!(j.evidence[0].contains("was reused"), "{j:?}");
    }

    #[test]
    fn what_proves_nothing_stays_foreign() {
        // Another program, alive since before the lock: a name proves nothing either way.
        let j = verdict(&claim(), Ok(answer(alive(0, Some(false)))));
        assert_eq!(j.verdict(), Verdict::Unknown, "{j:?}");
        assert!(j.evidence[0].contains("nothing proves"), "{j:?}");
        // Init and kernel threads.
        let mut init = alive(0, Some(true));
        init.pid = 1;
        let mut c = claim();
        c.pid = 1;
        assert_eq!(verdict(&c, Ok(answer(init))).verdict(), Verdict::Foreign);
        let mut k = alive(0, Some(true));
        k.kernel_thread = true;
        assert_eq!(verdict(&claim(), Ok(answer(k))).verdict(), Verdict::Foreign);
        // Another host answered.
        let mut a = answer(alive(0, Some(true)));
        a.host = "node18".into();
        let j = verdict(&claim(), Ok(a));
        assert_eq!(j.verdict(), Verdict::Foreign);
        assert!(j.evidence[0].contains("\"node18\""), "{j:?}");
        // Another PID namespace.
        let mut c = claim();
        c.pid_ns = Some(9);
        assert_eq!(
            verdict(&c, Ok(answer(alive(0, Some(true))))).verdict(),
            Verdict::Foreign
        );
        // Another version.
        let mut a = answer(alive(0, Some(true)));
        a.version = 99;
        assert_eq!(verdict(&claim(), Ok(a)).verdict(), Verdict::Foreign);
        // No answer: the reason first, the old evidence kept.
        let j = verdict(
            &claim(),
            Err(AskFailure::new(
                ssh::FailureKind::Unreachable,
                "connection refused",
            )),
        );
        assert_eq!(j.verdict(), Verdict::Foreign);
        assert!(j.evidence[0].contains("connection refused"), "{j:?}");
        assert_eq!(j.evidence[1], old().evidence[0]);
    }

    #[test]
    fn host_names_match_by_first_label() {
        assert!(same_host_name("node17", "node17.cluster.example"));
        assert!(same_host_name("Node17.cluster", "node17"));
        assert!(!same_host_name("node17", "node171"));
        assert!(!same_host_name("node17.a", "node17.b"));
    }
}
