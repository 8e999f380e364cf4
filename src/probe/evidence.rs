//! The evidence as a value ([`Evidence`]): every fact a verdict used, as plain data that can be
//! written down, read back and judged again anywhere. The [`super::Snapshot`] is how the rules
//! ask for facts; a snapshot that records keeps each answer it gave here (the first answer to
//! a question is the one every later asker gets), and a snapshot made from a recording
//! answers from it alone, reading nothing of the machine it runs on. So
//! `judge(lock facts, claims, evidence)` reads nothing but its arguments when replayed, and a
//! recording replays the verdicts it was made with.
//!
//! What a recording holds is what the rules asked, and no more: the host (host name, boot id
//! and time, the clock's state, our PID namespace), each process asked about (its state,
//! start, identity, namespaces, a command line cut to what a dialect matches), kernel-lock and
//! open-file answers about the files asked, the file facts near each lock (status, link text,
//! small contents, directory listings), the namespaces and containers, and each lock the scan
//! found: its status, kind, content prefix and link text. No environment but the variables a
//! rule asked for, by name. [`super::mask`] replaces host names, user names and path
//! components before a recording is shared.
//!
//! A question a recording does not answer (a test that describes a machine by hand, a
//! perturbation that adds a process) gets the answer of a machine that has nothing more:
//! no such process, no such file, no holder, nothing open.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::containers::Inventory;
use super::host::HostFacts;
use super::kernel_locks::FileKey;
use super::process::PidState;
use super::process::ProcSummary;
use super::stat::Stat;
use crate::verdict::Holder;
use locksmith_sys::fs::FsInfo;

/// The version of the recording format.
pub const FORMAT: u32 = 1;

/// What a recording says it is, for a person who opens one.
pub const ABOUT: &str = "locksmith evidence: what the verdicts of one scan used (locksmith replay FILE judges them again)";

/// See the module docs.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Evidence {
    pub about: String,
    pub format: u32,
    pub host: HostFacts,
    /// When the evidence was taken, ms since the epoch: every age is measured from it.
    pub taken_ms: i64,
    pub pid_max: i64,
    /// The effective user the scan ran as.
    pub euid: u32,
    /// The scanning process's own PID (never the owner of what it judges).
    pub self_pid: i32,
    /// The device of our own `/`.
    pub root_dev: Option<u64>,
    /// How far the wall clock can be trusted since this boot began (asked once).
    pub clock: Option<super::clock::Clock>,
    /// Whether `/proc/locks` could be read (without it, "no kernel lock" proves nothing).
    pub kernel_locks_available: bool,
    /// Where a read of what other users control stopped at its bound ([`super::bounds`]):
    /// what was cut (a path of `/proc`) and what that leaves unproven.
    pub bounds: Vec<(String, String)>,
    /// The processes whose descriptors were not all read: PID, user, how many were read.
    pub fds_cut: Option<Vec<(i32, Option<u32>, usize)>>,
    pub pids: BTreeMap<i32, PidState>,
    pub users: BTreeMap<u32, Option<String>>,
    pub kernel_holders: BTreeMap<FileKey, Vec<Holder>>,
    pub held_at: BTreeMap<String, Option<bool>>,
    pub openers: BTreeMap<FileKey, Vec<Holder>>,
    pub writers: BTreeMap<FileKey, Vec<Holder>>,
    pub open_under: BTreeMap<String, Vec<Holder>>,
    pub has_open_under: BTreeMap<String, Option<bool>>,
    pub mappers: BTreeMap<FileKey, Vec<Holder>>,
    pub environ: BTreeMap<String, Option<String>>,
    pub environ_cut: BTreeMap<i32, bool>,
    pub cwd_within: BTreeMap<String, Option<bool>>,
    pub within: BTreeMap<String, Option<bool>>,
    pub cwd_is: BTreeMap<String, Option<bool>>,
    pub cwd: BTreeMap<i32, Option<String>>,
    pub cwd_gone: BTreeMap<i32, bool>,
    pub working_dir: BTreeMap<i32, Option<String>>,
    pub lstat: BTreeMap<String, Answer<Stat>>,
    pub stat: BTreeMap<String, Answer<Stat>>,
    pub read_link: BTreeMap<String, Answer<String>>,
    pub canonical: BTreeMap<String, Option<String>>,
    pub small: BTreeMap<String, Option<String>>,
    pub dirs: BTreeMap<String, Answer<Vec<(String, Stat)>>>,
    pub dir_ids: BTreeMap<String, Option<(u64, u64)>>,
    pub tcp_listening: BTreeMap<u16, bool>,
    pub unix_listening: BTreeMap<String, bool>,
    pub mac_nodes: BTreeMap<String, Vec<u64>>,
    pub fs: BTreeMap<String, FsFacts>,
    pub processes: Option<Vec<ProcSummary>>,
    pub containers: Option<Inventory>,
    pub sightings: BTreeMap<String, SightingsRec>,
    /// A writer's processes in a census taken after a lock was seen (`WRITER PATH`): `None`
    /// when no process list could be read.
    pub late_census: BTreeMap<String, Option<Vec<ProcSummary>>>,
    pub locks: Vec<LockFacts>,
    /// The configuration's part that judging depends on (the stale windows, the declared
    /// dialects and the extra patterns), as the configuration writes them.
    pub settings: Option<serde_json::Value>,
}

impl Evidence {
    /// An empty value for this host's basic facts (what a recording starts from).
    pub fn new(host: HostFacts, taken_ms: i64, pid_max: i64) -> Self {
        Evidence {
            about: ABOUT.into(),
            format: FORMAT,
            host,
            taken_ms,
            pid_max,
            euid: rustix::process::geteuid().as_raw(),
            self_pid: std::process::id() as i32,
            kernel_locks_available: true,
            ..Evidence::default()
        }
    }

    /// A machine described by hand, for tests and perturbations: host `here` (boot id
    /// `b0000000-…`, machine id `0…0`) in the host's PID namespace, booted at `boot_ms` with a
    /// steady clock, the evidence taken at `taken_ms` by root, `/proc/locks` readable, and no
    /// process, file or namespace but those added.
    pub fn machine(boot_ms: i64, taken_ms: i64) -> Self {
        Evidence {
            about: ABOUT.into(),
            format: FORMAT,
            host: HostFacts {
                hostname: "here".into(),
                boot_id: Some("b0000000-0000-4000-8000-000000000000".into()),
                machine_id: Some("0".repeat(32)),
                boot_time: Some(boot_ms.div_euclid(1000)),
                pid_ns: Some(super::started::HOST_PID_NS),
                in_container: false,
                ticks_per_sec: 100,
            },
            taken_ms,
            pid_max: 4_194_304,
            euid: 0,
            self_pid: 4_000_000,
            root_dev: Some(1),
            clock: Some(super::clock::Clock::steady()),
            kernel_locks_available: true,
            processes: Some(Vec::new()),
            containers: Some(Inventory::default()),
            ..Evidence::default()
        }
    }

    /// This evidence with a live process (and in the census).
    pub fn with_process(mut self, f: super::ProcFacts) -> Self {
        self.census(&f);
        self.pids.insert(f.pid, PidState::Alive(f));
        self
    }

    /// This evidence with a zombie (exited, not reaped).
    pub fn with_zombie(mut self, f: super::ProcFacts) -> Self {
        let f = super::ProcFacts { state: 'Z', ..f };
        self.pids.insert(f.pid, PidState::Zombie(f));
        self
    }

    fn census(&mut self, f: &super::ProcFacts) {
        if f.kernel_thread {
            return;
        }
        let list = self.processes.get_or_insert_with(Vec::new);
        list.retain(|p| p.pid != f.pid);
        list.push(ProcSummary {
            pid: f.pid,
            name: f.comm.clone(),
            exe: f.exe.as_ref().map(PathBuf::from),
            cmd: f.cmdline.clone(),
            cmd_cut: f.cmdline_cut,
            cwd: f.cwd.clone(),
        });
    }

    /// Reads a recording.
    pub fn from_json(text: &str) -> Result<Self, String> {
        let ev: Evidence = serde_json::from_str(text).map_err(|e| e.to_string())?;
        if ev.format != FORMAT {
            return Err(format!(
                "recording format {} is not the one this locksmith reads ({FORMAT})",
                ev.format
            ));
        }
        Ok(ev)
    }

    /// The recording as JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }
}

/// An answer that may be an error (`lstat` of a missing file).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Answer<T> {
    Ok(T),
    /// The error's kind (`NotFound`, `PermissionDenied`, ...) and message.
    Err(String, String),
}

impl<T: Clone> Answer<T> {
    pub fn of(r: &std::io::Result<T>) -> Self {
        match r {
            Ok(v) => Answer::Ok(v.clone()),
            Err(e) => Answer::Err(format!("{:?}", e.kind()), e.to_string()),
        }
    }

    pub fn result(&self) -> std::io::Result<T> {
        match self {
            Answer::Ok(v) => Ok(v.clone()),
            Answer::Err(kind, msg) => Err(std::io::Error::new(error_kind(kind), msg.clone())),
        }
    }

    /// A missing file's answer.
    pub fn not_found() -> Self {
        Answer::Err(
            "NotFound".into(),
            "No such file or directory (os error 2)".into(),
        )
    }
}

fn error_kind(name: &str) -> std::io::ErrorKind {
    use std::io::ErrorKind as K;
    match name {
        "NotFound" => K::NotFound,
        "PermissionDenied" => K::PermissionDenied,
        "AlreadyExists" => K::AlreadyExists,
        "WouldBlock" => K::WouldBlock,
        "InvalidInput" => K::InvalidInput,
        "InvalidData" => K::InvalidData,
        "TimedOut" => K::TimedOut,
        "Interrupted" => K::Interrupted,
        "NotADirectory" => K::NotADirectory,
        "IsADirectory" => K::IsADirectory,
        "Unsupported" => K::Unsupported,
        _ => K::Other,
    }
}

/// A file system as a lock's facts name it (every field, unlike the report's).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FsFacts {
    pub kind: locksmith_sys::fs::FsKind,
    pub network: bool,
    pub shared: Option<String>,
    pub container_root: bool,
    pub own_root: bool,
}

impl From<&FsInfo> for FsFacts {
    fn from(f: &FsInfo) -> Self {
        FsFacts {
            kind: f.kind.clone(),
            network: f.network,
            shared: f.shared.clone(),
            container_root: f.container_root,
            own_root: f.own_root,
        }
    }
}

impl From<&FsFacts> for FsInfo {
    fn from(f: &FsFacts) -> Self {
        FsInfo {
            kind: f.kind.clone(),
            network: f.network,
            shared: f.shared.clone(),
            container_root: f.container_root,
            own_root: f.own_root,
        }
    }
}

/// The namespaces that see one file, as [`Inventory::who_sees`] found them: each by its
/// namespace's inode (`None`: ours), with the path it sees the file under.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SightingsRec {
    pub seen: Vec<SeenRec>,
    pub mapped: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeenRec {
    pub ns: Option<u64>,
    pub path: String,
    pub layer: Option<i32>,
    /// Whether the namespace is tied to the file (see `Seen::tied`).
    #[serde(default = "yes")]
    pub tied: bool,
}

fn yes() -> bool {
    true
}

/// One lock the scan found, as it read it: what the dialects and the judge were given.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LockFacts {
    /// The path (see [`path_key`]).
    pub path: String,
    pub stat: Stat,
    /// The dialects whose file-name patterns matched it.
    pub hits: Vec<String>,
    /// Named on its own (every dialect may recognise it) rather than found by the walker.
    pub lenient: bool,
    /// The bounded prefix of a regular file's content (see [`bytes_key`]).
    pub content: String,
    pub complete: bool,
    pub read_error: Option<String>,
    pub link_target: Option<String>,
    /// The verdict the scan gave it (for comparing a replay).
    pub verdict: String,
    pub dialect: String,
    /// The host and user its owner record names (what a masked recording masks too).
    #[serde(default)]
    pub owner_host: Option<String>,
    #[serde(default)]
    pub owner_user: Option<String>,
}

/// A path as a recording writes it (lossless: a byte that is not UTF-8 is `\xNN`, a backslash
/// `\\`).
pub fn path_key(p: &std::path::Path) -> String {
    crate::text::json_path(p)
}

/// The path a [`path_key`] stands for.
pub fn key_path(s: &str) -> PathBuf {
    crate::text::path_from_json(s).unwrap_or_else(|| PathBuf::from(s))
}

/// Bytes as a recording writes them (as [`path_key`]).
pub fn bytes_key(b: &[u8]) -> String {
    use std::os::unix::ffi::OsStrExt;
    crate::text::json_path(std::path::Path::new(std::ffi::OsStr::from_bytes(b)))
}

/// The bytes a [`bytes_key`] stands for.
pub fn key_bytes(s: &str) -> Vec<u8> {
    use std::os::unix::ffi::OsStringExt;
    key_path(s).into_os_string().into_vec()
}

/// `serde(with)` for a [`PathBuf`] written as [`path_key`].
pub mod serde_path {
    use std::path::PathBuf;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(p: &std::path::Path, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&super::path_key(p))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<PathBuf, D::Error> {
        Ok(super::key_path(&String::deserialize(d)?))
    }

    /// For an `Option<PathBuf>`.
    pub mod opt {
        use std::path::PathBuf;

        use serde::{Deserialize, Deserializer, Serializer};

        pub fn serialize<S: Serializer>(p: &Option<PathBuf>, s: S) -> Result<S::Ok, S::Error> {
            match p {
                Some(p) => s.serialize_some(&super::super::path_key(p)),
                None => s.serialize_none(),
            }
        }

        pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<PathBuf>, D::Error> {
            Ok(Option::<String>::deserialize(d)?.map(|s| super::super::key_path(&s)))
        }
    }

    /// For a `Vec<PathBuf>`.
    pub mod vec {
        use std::path::PathBuf;

        use serde::{Deserialize, Deserializer, Serializer};

        pub fn serialize<S: Serializer>(p: &[PathBuf], s: S) -> Result<S::Ok, S::Error> {
            s.collect_seq(p.iter().map(|p| super::super::path_key(p)))
        }

        pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<PathBuf>, D::Error> {
            Ok(Vec::<String>::deserialize(d)?
                .iter()
                .map(|s| super::super::key_path(s))
                .collect())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_and_bytes_survive_a_recording() {
        use std::os::unix::ffi::OsStrExt;
        let odd = std::path::Path::new(std::ffi::OsStr::from_bytes(b"/t/\xff\\x.lock"));
        assert_eq!(key_path(&path_key(odd)), odd);
        let bytes = b"b0VIM 9.0\x00\x1b[2J\xff".to_vec();
        assert_eq!(key_bytes(&bytes_key(&bytes)), bytes);
    }

    #[test]
    fn a_recording_reads_back_and_refuses_another_format() {
        let mut ev = Evidence::new(HostFacts::probe(), 1_000, 4_194_304);
        ev.pids.insert(7, PidState::Absent);
        ev.lstat
            .insert("/x".into(), Answer::Ok(Stat::file(3, 1_000, 2_000)));
        let back = Evidence::from_json(&ev.to_json()).unwrap();
        assert_eq!(back.pids.get(&7), Some(&PidState::Absent));
        assert_eq!(
            back.lstat.get("/x").unwrap().result().unwrap().ctime_ms(),
            2_000
        );
        let other = ev.to_json().replace("\"format\": 1", "\"format\": 99");
        assert!(Evidence::from_json(&other).unwrap_err().contains("99"));
    }
}
