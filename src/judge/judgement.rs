//! The judgement the scanner, the reports, reclaim and the UI share: one verdict, the evidence
//! lines that justify it, what the lock says of its owner, the live process behind it and the
//! processes holding the file.
//!
//! Invariant, kept by the type: a `stale` judgement is made only by the judge ([`super`]),
//! through one of its closed set of [`Rule`]s, and carries the [`Proof`]s that rule produced.
//! Outside `crate::judge` a judgement can be `live`, `free`, `foreign` or `unknown`, and can
//! lose a `stale` verdict ([`Judgement::doubt`]), but nothing can give it one.

use crate::verdict::{
    Flag, Holder, Owner, ProcessInfo, Proof, RemoteClaim, Verdict, describe_holders,
};

/// A verdict with everything that justifies it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Judgement {
    verdict: Verdict,
    /// For `stale`: what proved it, one proof per owner. Empty for every other verdict.
    proofs: Vec<Proof>,
    /// Lines a person can check; never empty.
    pub evidence: Vec<String>,
    /// What the lock says of its owner, the live process behind it and the claim its host
    /// may be asked about are boxed: most locks have few of them, and a million judgements
    /// are kept by the terminal UI.
    pub owner: Option<Box<Owner>>,
    pub process: Option<Box<ProcessInfo>>,
    pub holders: Vec<Holder>,
    /// What its dialect read in it that matters beyond the verdict ([`Flag`]): shown, and
    /// kept from an unattended reclaim when a set flag says so.
    pub flags: Vec<Flag>,
    /// For a lock whose owner is on another named host: what that host could be asked about
    /// it (a scanner asks that host). Not part of the report.
    pub remote: Option<Box<RemoteClaim>>,
    /// Processes that hold a kernel lock on the file that its writer does not take (a
    /// reader's shared lock): they prove nothing about the owner, but the file is not removed
    /// while they hold it.
    pub kept_by: Vec<Holder>,
}

impl Judgement {
    fn with(verdict: Verdict, evidence: impl Into<String>) -> Self {
        Judgement {
            verdict,
            proofs: Vec::new(),
            evidence: vec![evidence.into()],
            owner: None,
            process: None,
            holders: Vec::new(),
            flags: Vec::new(),
            remote: None,
            kept_by: Vec::new(),
        }
    }

    /// Whether the flag `key` is set, `None` when its dialect did not look.
    pub fn flag(&self, key: &str) -> Option<bool> {
        self.flags.iter().find(|f| f.key == key).map(|f| f.set)
    }

    /// The set flag that keeps this lock from an unattended reclaim (removing it loses
    /// something), if any.
    pub fn keeping(&self) -> Option<&Flag> {
        self.flags.iter().find(|f| f.set && f.keeps)
    }

    /// An owner is verifiably alive (a kernel lock held, the file open, a live owner process).
    pub fn live(evidence: impl Into<String>) -> Self {
        Judgement::with(Verdict::Live, evidence)
    }

    /// A kernel-lock file that nobody locks now, of a writer known to use kernel locks.
    pub fn free(evidence: impl Into<String>) -> Self {
        Judgement::with(Verdict::Free, evidence)
    }

    /// The owner may be where it cannot be checked from here (another host, another PID
    /// namespace, a network file system).
    pub fn foreign(evidence: impl Into<String>) -> Self {
        Judgement::with(Verdict::Foreign, evidence)
    }

    /// Nothing conclusive: the content cannot be read or parsed, or the evidence proves
    /// neither life nor death.
    pub fn unknown(evidence: impl Into<String>) -> Self {
        Judgement::with(Verdict::Unknown, evidence)
    }

    /// A `stale` judgement: `proof` names the rule that proved the owner gone. Only the judge
    /// makes one.
    pub(in crate::judge) fn stale(proof: Proof, evidence: impl Into<String>) -> Self {
        let mut j = Judgement::with(Verdict::Stale, evidence);
        j.proofs.push(proof);
        j
    }

    /// Adds to each proof why the lock is its writer's (see [`super::Placed`]).
    pub(in crate::judge) fn place_proofs(&mut self, why: &str) {
        for p in &mut self.proofs {
            p.facts.insert("placed".into(), why.into());
        }
    }

    /// A judgement of a lock with several owners, every one proven gone.
    pub(in crate::judge) fn stale_by_all(proofs: Vec<Proof>, evidence: Vec<String>) -> Self {
        debug_assert!(!proofs.is_empty());
        let mut j = Judgement::with(Verdict::Stale, "");
        j.evidence = evidence;
        j.proofs = proofs;
        j
    }

    /// The engine's judgement of one of its own records, as the scanner reports it: the
    /// scanner's own judgement where its witness attached it ([`Judgement::into_engine`]),
    /// else what the engine's judgement says, each of its rules a proof without facts. Its
    /// `stale` stands only with the rule that proved it, and only when nothing keeps the file.
    pub(in crate::judge) fn from_engine(j: locksmith_engine::Judgement) -> Self {
        let mut out = match j.attached::<Judgement>() {
            Some(own) => own.clone(),
            None => Judgement {
                verdict: j.verdict,
                proofs: j.rules.iter().map(|r| Proof::by(*r)).collect(),
                evidence: j.evidence.clone(),
                owner: j.owner.clone().map(Box::new),
                process: None,
                holders: Vec::new(),
                flags: Vec::new(),
                remote: None,
                kept_by: Vec::new(),
            },
        };
        if out.verdict == Verdict::Stale && out.proofs.is_empty() {
            out.doubt("the engine called it stale without naming the rule that proved it");
        }
        if let Some(kept) = j.kept_by.as_deref()
            && out.kept_by.is_empty()
        {
            out.doubt(format!(
                "it is kept by {kept}, which proves nothing about its owner: it is not removed while they hold it"
            ));
        }
        if out.verdict != Verdict::Stale {
            out.proofs.clear();
        }
        out
    }

    /// The judgement in the engine's terms (what the engine acts on: the verdict, the
    /// evidence, the owner, the process holding it, the rules of its proofs and who keeps
    /// it), with this judgement attached whole for [`Judgement::from_engine`] (the proofs'
    /// facts, the holders, the claim to ask another host about).
    pub(crate) fn into_engine(self) -> locksmith_engine::Judgement {
        let mut j = locksmith_engine::Judgement::new(self.verdict, "");
        j.evidence = self.evidence.clone();
        j.owner = self.owner.as_deref().cloned();
        match &self.process {
            Some(p) => {
                j.holder_pid = Some(p.pid);
                j.holder_command = Some(if p.cmd.is_empty() {
                    p.name.clone()
                } else {
                    p.cmd.join(" ")
                });
            }
            None => {
                j.holder_pid = self.holders.iter().find(|h| h.pid > 0).map(|h| h.pid);
                j.holder_command = self.holders.iter().find_map(|h| h.name.clone());
            }
        }
        j.rules = self.proofs.iter().map(|p| p.rule).collect();
        if !self.kept_by.is_empty() {
            j.kept_by = Some(describe_holders(&self.kept_by));
        }
        j.attach(self)
    }

    /// Changes a verdict that is not `stale` into another one that is not (`live` into
    /// `unknown`, ...); the judge's combination of claims uses it.
    pub(in crate::judge) fn set_unproven(&mut self, verdict: Verdict) {
        debug_assert_ne!(verdict, Verdict::Stale);
        if verdict != Verdict::Stale {
            self.verdict = verdict;
            self.proofs.clear();
        }
    }

    pub fn verdict(&self) -> Verdict {
        self.verdict
    }

    /// What proved a `stale` verdict (empty for any other verdict).
    pub fn proofs(&self) -> &[Proof] {
        &self.proofs
    }

    pub fn with_owner(mut self, owner: Owner) -> Self {
        self.owner = Some(Box::new(owner));
        self
    }

    /// Adds an evidence line.
    pub fn because(mut self, line: impl Into<String>) -> Self {
        self.evidence.push(line.into());
        self
    }

    /// What a caller does when it learns that this judgement cannot stand as proof (its
    /// content could not be read, ...): a `stale` verdict becomes `unknown`, its evidence kept
    /// as not conclusive; any other verdict stays and gets `why` as one more line.
    pub fn doubt(&mut self, why: impl Into<String>) {
        let why = why.into();
        if self.verdict == Verdict::Stale {
            self.verdict = Verdict::Unknown;
            self.proofs.clear();
            let old = std::mem::take(&mut self.evidence);
            self.evidence.push(why);
            self.evidence
                .extend(old.into_iter().map(|l| format!("(not conclusive: {l})")));
        } else {
            self.evidence.push(why);
        }
    }

    /// A judgement of any verdict for the tests of the views (a `stale` one as
    /// [`Judgement::stale_for_test`] makes it).
    #[cfg(test)]
    pub(crate) fn for_test(verdict: Verdict, evidence: impl Into<String>) -> Self {
        match verdict {
            Verdict::Stale => Judgement::stale_for_test(evidence),
            v => Judgement::with(v, evidence),
        }
    }

    /// A `stale` judgement for the tests of the views (reports, UI, reclaim's bookkeeping),
    /// which need one without judging a real lock.
    #[cfg(test)]
    pub(crate) fn stale_for_test(evidence: impl Into<String>) -> Self {
        Judgement::stale(
            Proof::by(crate::verdict::Rule::PidGone).fact("pid", 0),
            evidence,
        )
    }
}
