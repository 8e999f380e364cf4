//! Verdicts and the evidence that backs them.
//!
//! Every lock the scanner or the engine looks at ends up as one [`Judgement`]: exactly one
//! [`Verdict`] plus the human-readable evidence lines that justify it, the owner the lock
//! claims, the live process behind that owner (if any) and the processes holding the file.
//! Invariant: `Verdict::Stale` is a claim of proof; judges that are not sure answer
//! `Foreign` or `Unknown`. A stale judgement carries its [`Proof`]s: which of the closed set
//! of [`Rule`]s proved the owner gone, and the facts that rule used.

use serde::{Deserialize, Serialize};

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
    /// A process has the owner's PID, but it started after the lock was written (beyond the
    /// clock slack), or at another start time than the record names: the PID was reused.
    PidReused,
    /// The lock was written during an earlier boot of this host: its boot id is not this
    /// kernel's, or its mtime is before this boot on a local file system that survives
    /// reboots. Every process of that boot is gone.
    EarlierBoot,
    /// The lock's writer promises to refresh it while it holds it, and it was not refreshed
    /// for longer than the writer's window, with no sign of life on this host.
    HeartbeatExpired,
    /// The lock's writer holds a kernel lock on a file for as long as it holds the lock, and
    /// nobody holds that kernel lock (asked of the kernel itself), on a local file system.
    KernelLockReleased,
    /// The lock's writer keeps the lock file open for as long as it holds it, and no process
    /// has it open (every process's descriptors were read), on a local file system.
    OpenReleased,
    /// The lock names no owner, and its writer states when it may be removed (git: "if no
    /// other git process is currently running"): no process of that writer, known by its
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

/// Why one owner of a lock is proven gone: the rule, and the facts it rested on (stable keys
/// per rule, such as `pid`, `written`, `started`, `boot_id`), so that a script can audit every
/// removal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Proof {
    /// The rule that proved the owner gone.
    pub rule: Rule,
    /// The facts it rested on (stable keys per rule).
    pub facts: serde_json::Map<String, serde_json::Value>,
}

impl Proof {
    /// A proof by `rule` with no facts yet.
    pub fn by(rule: Rule) -> Self {
        Proof {
            rule,
            facts: serde_json::Map::new(),
        }
    }

    /// Adds a fact.
    pub fn fact(mut self, key: &str, value: impl Into<serde_json::Value>) -> Self {
        self.facts.insert(key.to_string(), value.into());
        self
    }

    /// A fact's value, if the proof has it.
    pub fn get(&self, key: &str) -> Option<&serde_json::Value> {
        self.facts.get(key)
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
    /// Anything else worth showing (the file a vim swap protects, a postgres data dir, ...).
    pub detail: Option<String>,
}

/// The live process behind `owner.pid` on this host.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ProcessInfo {
    /// Its PID in our PID namespace.
    pub pid: i32,
    /// Its command name (`/proc/<pid>/comm`).
    pub name: String,
    /// Its executable.
    pub exe: Option<String>,
    /// Its command line.
    pub cmd: Vec<String>,
    /// The user it runs as.
    pub user: Option<String>,
    /// RFC 3339.
    pub start_time: Option<String>,
    /// The container or sandbox it runs in (`None`: our own PID namespace).
    pub container: Option<ContainerInfo>,
}

impl ProcessInfo {
    /// `pid 4242 postgres`, or for a process in a container
    /// `PID 1 in container web-1 (podman 3f2a…) · host pid 25092 puma` (unescaped).
    pub fn headline(&self) -> String {
        match &self.container {
            Some(c) => format!("{} · host pid {} {}", c.describe(), self.pid, self.name),
            None => format!("pid {} {}", self.pid, self.name),
        }
    }
}

/// Who a container or sandbox is.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ContainerId {
    /// `podman`, `docker`, `containerd`, `kubernetes`, `flatpak`, `snap`, `nspawn`, `lxc`, or
    /// `unknown` (a PID namespace no runtime claims, such as one made with `unshare`).
    pub runtime: String,
    /// The runtime's id (a container id, a machine name, a Flatpak instance), or
    /// `pid:[INODE]` for a namespace no runtime names.
    pub id: String,
    /// The name the runtime gives it, when its state on disk says.
    pub name: Option<String>,
}

impl ContainerId {
    /// The id cut to 12 characters (as `docker ps` shows it), with `…` when cut.
    pub fn short_id(&self) -> String {
        let n = self.id.chars().count();
        if n > 12 && self.id.chars().all(|c| c.is_ascii_hexdigit()) {
            format!("{}…", self.id.chars().take(12).collect::<String>())
        } else {
            self.id.clone()
        }
    }

    /// The name, else the short id: what a table cell shows.
    pub fn label(&self) -> String {
        self.name.clone().unwrap_or_else(|| self.short_id())
    }

    /// `container web-1 (podman be9b0aff69eb…)`, `sandbox org.gnome.Builder (flatpak 1234)`,
    /// `PID namespace pid:[4026532252]`.
    pub fn describe(&self) -> String {
        let what = match self.runtime.as_str() {
            "flatpak" | "snap" => "sandbox",
            "nspawn" | "lxc" => "machine",
            "unknown" => return format!("PID namespace {}", self.id),
            _ => "container",
        };
        match &self.name {
            Some(name) => format!("{what} {name} ({} {})", self.runtime, self.short_id()),
            None => format!("{what} {} ({})", self.short_id(), self.runtime),
        }
    }
}

/// The container (or sandbox, or bare PID namespace) a process runs in, and its PID there.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ContainerInfo {
    /// Which container.
    #[serde(flatten)]
    pub id: ContainerId,
    /// The PID as seen inside.
    pub ns_pid: Option<i32>,
}

impl ContainerInfo {
    /// `PID 1 in container web-1 (podman be9b0aff69eb…)`.
    pub fn describe(&self) -> String {
        match self.ns_pid {
            Some(p) => format!("PID {p} in {}", self.id.describe()),
            None => format!("in {}", self.id.describe()),
        }
    }
}

/// How a holder holds a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HolderHow {
    /// A flock(2) lock.
    Flock,
    /// A POSIX record lock (`F_SETLK`).
    Posix,
    /// An open file description lock (`F_OFD_SETLK`).
    Ofd,
    /// The file open, without a lock.
    Open,
}

impl HolderHow {
    /// Its name (`flock`, `posix`, `ofd`, `open`).
    pub fn as_str(self) -> &'static str {
        match self {
            HolderHow::Flock => "flock",
            HolderHow::Posix => "posix",
            HolderHow::Ofd => "ofd",
            HolderHow::Open => "open",
        }
    }
}

/// The mode of a kernel lock: shared (`READ`) or exclusive (`WRITE`), as `/proc/locks` and
/// lslocks print it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LockMode {
    /// Shared.
    Read,
    /// Exclusive.
    Write,
}

impl LockMode {
    /// Its name (`read`, `write`).
    pub fn as_str(self) -> &'static str {
        match self {
            LockMode::Read => "read",
            LockMode::Write => "write",
        }
    }
}

/// The bytes a POSIX or OFD lock covers: from `start` to `end` inclusive, or to the end of
/// the file, however long it grows (`end: None`, the kernel's `EOF`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ByteRange {
    /// The first byte.
    pub start: u64,
    /// The last byte (`None`: the end of the file).
    pub end: Option<u64>,
}

impl ByteRange {
    /// Whether it covers the whole file (`0 EOF`).
    pub fn whole(self) -> bool {
        self.start == 0 && self.end.is_none()
    }
}

impl std::fmt::Display for ByteRange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.end {
            Some(end) => write!(f, "bytes {}-{end}", self.start),
            None => write!(f, "bytes {}-EOF", self.start),
        }
    }
}

/// A process holding a kernel lock on the file or having it open.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Holder {
    /// Its PID in our PID namespace (0 or less when it cannot be named: an OFD lock carries
    /// no PID).
    pub pid: i32,
    /// Its command name.
    pub name: Option<String>,
    /// How it holds the file.
    pub how: HolderHow,
    /// The container it runs in (`None`: our own PID namespace).
    pub container: Option<ContainerInfo>,
    /// A kernel lock's mode (`None` for a process that only has the file open).
    pub mode: Option<LockMode>,
    /// The bytes a POSIX or OFD lock covers (`None` for a flock, which covers the file, and
    /// for an open file).
    pub range: Option<ByteRange>,
}

impl Holder {
    /// A process that has the file open, without a lock.
    pub fn open(pid: i32, name: Option<String>) -> Holder {
        Holder {
            pid,
            name,
            how: HolderHow::Open,
            container: None,
            mode: None,
            range: None,
        }
    }

    /// How it holds the file, as a person reads it: `flock write`, `posix read bytes 0-99`,
    /// `open`.
    pub fn describe_how(&self) -> String {
        let mut s = self.how.as_str().to_string();
        if let Some(m) = self.mode {
            s.push(' ');
            s.push_str(m.as_str());
        }
        if let Some(r) = self.range.filter(|r| !r.whole()) {
            s.push_str(&format!(" {r}"));
        }
        s
    }
}

/// Lists holders as `pid 42 (flock write, apt-get)`: raw text, names as the process table has
/// them (a view escapes it).
pub fn describe_holders(holders: &[Holder]) -> String {
    holders
        .iter()
        .map(|h| {
            let pid = if h.pid > 0 {
                format!("pid {}", h.pid)
            } else {
                "a process not visible here".to_string()
            };
            match &h.name {
                Some(n) => format!("{pid} ({}, {})", h.describe_how(), n),
                None => format!("{pid} ({})", h.describe_how()),
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// A verdict with everything that justifies it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Judgement {
    /// The verdict.
    pub verdict: Verdict,
    /// Lines a person can check; never empty.
    pub evidence: Vec<String>,
    /// What the lock's record says of its owner.
    pub owner: Option<Owner>,
    /// The live process behind the owner (or a holder), when there is one on this host.
    pub process: Option<ProcessInfo>,
    /// The processes holding a kernel lock on the file, or having it open.
    pub holders: Vec<Holder>,
    /// For a `stale` verdict: what proved it (one proof per owner). Empty otherwise.
    pub proofs: Vec<Proof>,
}

impl Judgement {
    /// A judgement with one evidence line and nothing else known.
    pub fn new(verdict: Verdict, evidence: impl Into<String>) -> Self {
        Judgement {
            verdict,
            evidence: vec![evidence.into()],
            owner: None,
            process: None,
            holders: Vec::new(),
            proofs: Vec::new(),
        }
    }

    /// A `stale` judgement: `proof` says which rule proved it.
    pub fn stale(proof: Proof, evidence: impl Into<String>) -> Self {
        let mut j = Judgement::new(Verdict::Stale, evidence);
        j.proofs.push(proof);
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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_in_a_container_is_described_by_its_container() {
        let mut p = ProcessInfo {
            pid: 25092,
            name: "puma".into(),
            ..ProcessInfo::default()
        };
        assert_eq!(p.headline(), "pid 25092 puma");
        p.container = Some(ContainerInfo {
            id: ContainerId {
                runtime: "podman".into(),
                id: "3f2a".repeat(16),
                name: Some("web-1".into()),
            },
            ns_pid: Some(1),
        });
        assert_eq!(
            p.headline(),
            "PID 1 in container web-1 (podman 3f2a3f2a3f2a…) · host pid 25092 puma"
        );
        let json = serde_json::to_value(&p).unwrap();
        assert_eq!(json["container"]["runtime"], "podman");
        assert_eq!(json["container"]["name"], "web-1");
        assert_eq!(json["container"]["ns_pid"], 1);
        assert_eq!(json["container"]["id"].as_str().unwrap().len(), 64);
    }
}
