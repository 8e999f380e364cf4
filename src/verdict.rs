//! Verdicts and the evidence that backs them, as the scanner, the dialects and the reports
//! share them: the verdict, the rules and the owner a lock claims are the lock engine's (from
//! [`locksmith_engine`], which acts on them too); the scanner's model of what it found around
//! a lock is here: the processes holding a file ([`Holder`]: how, in which mode, over which
//! bytes), the live process behind an owner ([`ProcessInfo`]) and the container it runs in,
//! the [`Proof`] of a rule with the facts it rested on, and what only the scanner asks
//! ([`RemoteClaim`]). The scanner's judgement itself is [`crate::judge::Judgement`]: only the
//! judge can make it `stale`.

use serde::{Deserialize, Serialize};

pub use locksmith_engine::{Owner, Rule, Verdict};

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

/// Something a dialect read in a lock that matters beyond its verdict (a lock holding work
/// never saved), handed over as data: the report, reclaim and the UI show it and act on it
/// as it says, whatever the lock's format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Flag {
    /// Its name in the JSON report and the journal (`unsaved_changes`).
    pub key: &'static str,
    /// Whether the lock has it (not set: its dialect looked, and the lock has not).
    pub set: bool,
    /// What it is, in a few words (`unsaved changes`).
    pub label: &'static str,
    /// What has it, as the report and the UI count such locks (`swap`).
    pub what: &'static str,
    /// The line that says so (`this swap file holds edits that were never saved`).
    pub line: &'static str,
    /// The line that says so while its program runs: then it is that program's to handle.
    pub line_live: &'static str,
    /// Removing the lock while the flag is set loses something: reclaim keeps it unless told
    /// to include such locks ([`crate::reclaim::ReclaimOptions::include_unsaved`]).
    pub keeps: bool,
}

impl Flag {
    /// The key of the flag the JSON report shows as its `unsaved_changes` field.
    pub const UNSAVED_CHANGES: &'static str = "unsaved_changes";
}

impl ProcessInfo {
    /// `pid 4242 server`, or for a process in a container
    /// `PID 1 in container web-1 (podman 3f2a…) · host pid 25092 server` (unescaped).
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

/// Lists holders as `pid 42 (flock write, installer)`: raw text, names as the process table has
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

/// What a lock claims about an owner on another host, for asking that host (an owner
/// on another host is `foreign` here; only that host can tell whether the PID lives).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RemoteClaim {
    /// The host name the lock names.
    pub host: String,
    pub pid: i64,
    /// The boot id the lock names (engine records only).
    pub boot_id: Option<String>,
    /// The owner's PID namespace inode, if the lock names it.
    pub pid_ns: Option<u64>,
    /// When the lock was written (ms since the epoch, by the file's clock).
    pub written_ms: Option<i64>,
    /// The owner's exact start time in clock ticks since its host booted (engine records).
    pub start_ticks: Option<u64>,
    /// Program names the owner must have; empty accepts any.
    pub expect: Vec<String>,
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
