//! Verdicts and the evidence that backs them, as the engine acts on them.
//!
//! Every lock the engine looks at ends up as one [`Judgement`]: exactly one [`Verdict`] plus
//! the human-readable evidence lines that justify it, the owner the lock claims, and the
//! process holding it now (if one can be named). Invariant: `Verdict::Stale` is a claim of
//! proof; judges that are not sure answer `Foreign` or `Unknown`. A stale judgement names the
//! [`Rule`]s (of a closed set) that proved its owner gone; the engine removes nothing on a
//! `stale` that names none, nor on one that something keeps ([`Judgement::kept_by`]).

use std::any::Any;
use std::sync::Arc;

use serde::Serialize;

/// The one verdict a lock gets (README: Verdicts).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// The owner is provably gone: safe to reclaim.
    Stale,
    /// An owner process is verifiably alive.
    Live,
    /// Owner on another host or PID namespace: cannot be checked here.
    Foreign,
    /// Looks like a lock but cannot be parsed or read.
    Unknown,
    /// A kernel-lock file that nobody locks right now: harmless, never deleted.
    Free,
}

impl Verdict {
    /// All verdicts, stale first (the default sort order).
    pub const ALL: [Verdict; 5] = [
        Verdict::Stale,
        Verdict::Live,
        Verdict::Foreign,
        Verdict::Unknown,
        Verdict::Free,
    ];

    /// The stable id used in JSON and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Live => "live",
            Verdict::Stale => "stale",
            Verdict::Free => "free",
            Verdict::Foreign => "foreign",
            Verdict::Unknown => "unknown",
        }
    }

    /// A distinct marker per verdict, so a table reads without color.
    pub fn symbol(self) -> &'static str {
        match self {
            Verdict::Live => "●",
            Verdict::Stale => "✗",
            Verdict::Free => "○",
            Verdict::Foreign => "⇄",
            Verdict::Unknown => "?",
        }
    }

    /// Whether reclaim may remove a lock with this verdict (without a force flag).
    pub fn reclaimable(self) -> bool {
        self == Verdict::Stale
    }
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The closed set of ways a lock is proven stale. Every `stale` verdict names one of these (a
/// lock with several owners names one per owner); nothing else makes a lock stale. The ids are
/// stable: they appear in the JSON report and the journal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Rule {
    /// No process with the owner's PID exists in the PID namespace that wrote it (`kill(2)`
    /// answers ESRCH), or the process is a zombie: it has exited.
    PidGone,
    /// A process has the owner's PID, but it started at another start time than the record
    /// names, or after the lock was written (its ctime, beyond the clock's margin): the PID
    /// was reused.
    PidReused,
    /// The lock was written during an earlier boot of this host: its boot id is not this
    /// kernel's, or its ctime is before this boot (beyond the clock's margin) on a local file
    /// system that survives reboots. Every process of that boot is gone.
    EarlierBoot,
    /// The lock's writer promises to refresh it while it holds it, and it was not refreshed
    /// for longer than the writer's window (beyond any forward step of the clock), with no
    /// sign of life on this host.
    HeartbeatExpired,
    /// The lock's writer holds a kernel lock on a file for as long as it holds the lock, and
    /// nobody holds that kernel lock (asked of the kernel itself), on a local file system.
    KernelLockReleased,
    /// The lock's writer keeps the lock file open for as long as it holds it, and no process
    /// has it open (every process's descriptors were read), on a local file system.
    OpenReleased,
    /// The lock names no owner, and its writer states when it may be removed (a tool: "if no
    /// other tool process is currently running"): no process of that writer, known by its
    /// executable, is at work at the lock's place in any PID namespace that can see it,
    /// nobody has the lock or a file of the place open, and it is older than the writer's
    /// shortest hold.
    WriterAbsent,
}

impl Rule {
    /// Every rule, in the order the README's audit table lists them.
    pub const ALL: [Rule; 7] = [
        Rule::PidGone,
        Rule::PidReused,
        Rule::EarlierBoot,
        Rule::HeartbeatExpired,
        Rule::KernelLockReleased,
        Rule::OpenReleased,
        Rule::WriterAbsent,
    ];

    /// The stable id used in JSON and the journal.
    pub fn id(self) -> &'static str {
        match self {
            Rule::PidGone => "pid-gone",
            Rule::PidReused => "pid-reused",
            Rule::EarlierBoot => "earlier-boot",
            Rule::HeartbeatExpired => "heartbeat-expired",
            Rule::KernelLockReleased => "kernel-lock-released",
            Rule::OpenReleased => "open-released",
            Rule::WriterAbsent => "writer-absent",
        }
    }

    /// The rule with this id.
    pub fn by_id(id: &str) -> Option<Rule> {
        Rule::ALL.into_iter().find(|r| r.id() == id)
    }
}

impl std::fmt::Display for Rule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.id())
    }
}

impl Serialize for Rule {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.id())
    }
}

/// What the lock itself claims about its owner.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Owner {
    /// The owner's PID, as the lock gives it.
    pub pid: Option<i64>,
    /// The owner's host name, as the lock gives it.
    pub hostname: Option<String>,
    /// The user owning the lock file.
    pub user: Option<String>,
    /// RFC 3339 when known.
    pub created_at: Option<String>,
    /// Anything else worth showing (the file an editor's swap file protects, a data directory, ...).
    pub detail: Option<String>,
}

/// A verdict with everything that justifies it, as the engine acts on it: the verdict, the
/// evidence lines, the owner the record names, the process holding it now (when one can be
/// named), the rules that proved it stale, and what keeps it from being removed.
///
/// A witness that knows more than this (a scanner's holders, containers, the facts of every
/// proof) attaches its own judgement ([`Judgement::attach`]), and the engine hands it back
/// with this one ([`Judgement::attached`]) wherever it returns the judgement it acted on.
#[derive(Clone)]
pub struct Judgement {
    /// The verdict.
    pub verdict: Verdict,
    /// Lines a person can check; never empty.
    pub evidence: Vec<String>,
    /// What the lock's record says of its owner.
    pub owner: Option<Owner>,
    /// The process that holds the lock now, when one can be named on this host (the owner
    /// itself, or a process that inherited its descriptor): its PID in our PID namespace.
    pub holder_pid: Option<i32>,
    /// That process's command line (its command name when the command line cannot be read).
    pub holder_command: Option<String>,
    /// For a `stale` verdict: the rules that proved it (one per owner). Empty otherwise.
    pub rules: Vec<Rule>,
    /// Who keeps the file though they prove nothing about its owner (a reader's kernel lock,
    /// of another user), as a person reads it. A lock they keep is not removed, even when its
    /// owner is proven gone.
    pub kept_by: Option<String>,
    /// The witness's own judgement, when it attached one.
    attached: Option<Arc<dyn Any + Send + Sync>>,
}

impl Judgement {
    /// A judgement with one evidence line and nothing else known.
    pub fn new(verdict: Verdict, evidence: impl Into<String>) -> Self {
        Judgement {
            verdict,
            evidence: vec![evidence.into()],
            owner: None,
            holder_pid: None,
            holder_command: None,
            rules: Vec::new(),
            kept_by: None,
            attached: None,
        }
    }

    /// A `stale` judgement: `rule` proved it.
    pub fn stale(rule: Rule, evidence: impl Into<String>) -> Self {
        let mut j = Judgement::new(Verdict::Stale, evidence);
        j.rules.push(rule);
        j
    }

    /// The judgement, with the owner the lock names.
    pub fn with_owner(mut self, owner: Owner) -> Self {
        self.owner = Some(owner);
        self
    }

    /// Adds an evidence line.
    pub fn because(mut self, line: impl Into<String>) -> Self {
        self.evidence.push(line.into());
        self
    }

    /// Whether the engine may remove the lock on this judgement: proven stale by a rule, and
    /// kept by nobody.
    pub fn removable(&self) -> bool {
        self.verdict == Verdict::Stale && !self.rules.is_empty() && self.kept_by.is_none()
    }

    /// The judgement with the witness's own account of it attached (see [`Judgement`]).
    pub fn attach<T: Any + Send + Sync>(mut self, own: T) -> Self {
        self.attached = Some(Arc::new(own));
        self
    }

    /// The witness's own account of this judgement, if it attached one of type `T`.
    pub fn attached<T: Any>(&self) -> Option<&T> {
        self.attached.as_deref()?.downcast_ref()
    }
}

impl std::fmt::Debug for Judgement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Judgement")
            .field("verdict", &self.verdict)
            .field("evidence", &self.evidence)
            .field("owner", &self.owner)
            .field("holder_pid", &self.holder_pid)
            .field("holder_command", &self.holder_command)
            .field("rules", &self.rules)
            .field("kept_by", &self.kept_by)
            .field("attached", &self.attached.is_some())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_stale_judgement_with_its_rule_and_nobody_keeping_it_is_removable() {
        assert!(Judgement::stale(Rule::PidGone, "gone").removable());
        assert!(!Judgement::new(Verdict::Stale, "no rule").removable());
        assert!(!Judgement::new(Verdict::Live, "alive").removable());
        let mut kept = Judgement::stale(Rule::PidGone, "gone");
        kept.kept_by = Some("pid 7 (flock read)".into());
        assert!(!kept.removable());
    }

    #[test]
    fn a_witness_gets_its_own_judgement_back() {
        #[derive(Debug, PartialEq)]
        struct Richer(u32);
        let j = Judgement::new(Verdict::Live, "alive").attach(Richer(7));
        assert_eq!(j.clone().attached::<Richer>(), Some(&Richer(7)));
        assert_eq!(j.attached::<String>(), None);
        assert_eq!(
            Judgement::new(Verdict::Live, "alive").attached::<Richer>(),
            None
        );
    }
}
