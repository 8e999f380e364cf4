//! The owner record (README: The lock engine): one JSON object, newline-terminated, that the engine writes
//! into every lock file it creates, and the tolerant reader that also accepts the capitalised
//! `PID` / `CreatedAt` / `Hostname` records of Zero's securefile locks.
//!
//! Invariants: a written record is complete before anyone can see it (the engine writes it to
//! a file that is not yet linked into the directory); reading never panics, whatever the
//! bytes, and a field with the wrong type reads as absent (the judge then answers `unknown`
//! where it needs that field).

use std::time::Duration;

use serde::Serialize;
use serde_json::{Map, Value};

/// The `tool` value of records written by this build.
pub(crate) const TOOL: &str = concat!("locksmith/", env!("CARGO_PKG_VERSION"));

/// The owner record: what the engine writes into a lock file, and what a lock file's record
/// says when it is read back ([`Record::parse`]). Every field is optional when read, since the
/// file may come from another version, another program, or be damaged; a record the engine
/// writes has its pid, host name, creation time, token and tool.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Record {
    /// The owner's PID (absent when missing or not an integer).
    pub pid: Option<i64>,
    /// The owner's host name.
    pub hostname: Option<String>,
    /// `/proc/sys/kernel/random/boot_id` of the kernel the owner runs on.
    pub boot_id: Option<String>,
    /// Owner start time in clock ticks since boot (field 22 of `/proc/<pid>/stat`).
    pub start_time: Option<u64>,
    /// Inode of the owner's `/proc/self/ns/pid`.
    pub pid_ns: Option<u64>,
    /// The owner's executable.
    pub exe: Option<String>,
    /// RFC 3339 (when read: only kept when it parses as a timestamp).
    pub created_at: Option<String>,
    /// RFC 3339; present when the owner refreshes a heartbeat (the file's times are touched
    /// at every beat, so the later of the two is the last sign of life).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub heartbeat_at: Option<String>,
    /// The time between two heartbeats, when there is a heartbeat (`heartbeat_secs` in the
    /// file, in seconds).
    #[serde(
        rename = "heartbeat_secs",
        serialize_with = "as_seconds",
        skip_serializing_if = "Option::is_none"
    )]
    pub heartbeat_interval: Option<Duration>,
    /// Whether the owner keeps an OFD write lock on the file for as long as it holds the
    /// lock (then the kernel lock, not the PID, settles liveness on this kernel).
    pub kernel_lock: bool,
    /// Random, identifies this acquisition.
    pub token: Option<String>,
    /// `locksmith/<version>`.
    pub tool: Option<String>,
    /// Read from one of Zero's securefile records (`PID`, `CreatedAt`, `Hostname`).
    #[serde(skip)]
    zero: bool,
}

impl Record {
    /// A record describing the calling process, created now.
    pub(crate) fn for_this_process(kernel_lock: bool, heartbeat: Option<Duration>) -> Self {
        let facts = ProcessFacts::of_this_process();
        let created_at = jiff::Timestamp::now().to_string();
        Record {
            pid: Some(i64::from(facts.pid)),
            hostname: Some(locksmith_sys::host::hostname()),
            boot_id: facts.boot_id,
            start_time: facts.start_time,
            pid_ns: facts.pid_ns,
            exe: facts.exe,
            heartbeat_at: heartbeat.map(|_| created_at.clone()),
            heartbeat_interval: heartbeat,
            created_at: Some(created_at),
            kernel_lock,
            token: Some(new_token()),
            tool: Some(TOOL.to_string()),
            zero: false,
        }
    }

    /// The bytes written to the lock file: the JSON object and a newline.
    pub(crate) fn to_line(&self) -> Vec<u8> {
        let mut v = serde_json::to_vec(self).expect("a record always serialises");
        v.push(b'\n');
        v
    }

    /// The token of a record the engine made (empty for a record read back without one).
    pub(crate) fn token(&self) -> &str {
        self.token.as_deref().unwrap_or("")
    }

    /// Reads a record. `None` when the bytes are not a JSON object shaped like an engine
    /// record (a `tool` starting with `locksmith/`, or `pid` and `token`) or like Zero's
    /// (`PID` with `CreatedAt` or `Hostname`).
    pub fn parse(bytes: &[u8]) -> Option<Self> {
        let start = bytes.iter().position(|b| !b.is_ascii_whitespace())?;
        if bytes[start] != b'{' {
            return None; // cheap rejection of everything that is not an object
        }
        let Ok(Value::Object(map)) = serde_json::from_slice::<Value>(bytes) else {
            return None;
        };
        let engine = map
            .get("tool")
            .and_then(Value::as_str)
            .is_some_and(|t| t.starts_with("locksmith/"))
            || (map.contains_key("pid") && map.contains_key("token"));
        if engine {
            return Some(Self::engine(&map));
        }
        let zero = map.contains_key("PID")
            && (map.contains_key("CreatedAt") || map.contains_key("Hostname"));
        zero.then(|| Self::zero(&map))
    }

    fn engine(map: &Map<String, Value>) -> Self {
        Record {
            pid: map.get("pid").and_then(Value::as_i64),
            hostname: str_field(map, "hostname"),
            boot_id: str_field(map, "boot_id"),
            start_time: map.get("start_time").and_then(Value::as_u64),
            pid_ns: map.get("pid_ns").and_then(Value::as_u64),
            exe: str_field(map, "exe"),
            created_at: time_field(map, "created_at"),
            heartbeat_at: time_field(map, "heartbeat_at"),
            heartbeat_interval: map
                .get("heartbeat_secs")
                .and_then(Value::as_f64)
                .and_then(|s| Duration::try_from_secs_f64(s).ok())
                .filter(|d| !d.is_zero()),
            kernel_lock: map
                .get("kernel_lock")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            token: str_field(map, "token"),
            tool: str_field(map, "tool"),
            zero: false,
        }
    }

    fn zero(map: &Map<String, Value>) -> Self {
        Record {
            pid: map.get("PID").and_then(Value::as_i64),
            hostname: str_field(map, "Hostname"),
            created_at: time_field(map, "CreatedAt"),
            zero: true,
            ..Default::default()
        }
    }

    /// Whether it was read from one of Zero's securefile records (`PID`, `CreatedAt`,
    /// `Hostname`) rather than written by this engine.
    pub fn from_zero(&self) -> bool {
        self.zero
    }

    /// The creation time in milliseconds since the epoch.
    pub fn created_ms(&self) -> Option<i64> {
        ms_of(self.created_at.as_deref())
    }

    /// The last heartbeat the record states, in milliseconds since the epoch.
    pub fn heartbeat_ms(&self) -> Option<i64> {
        ms_of(self.heartbeat_at.as_deref())
    }

    /// Whether the owner refreshes a heartbeat.
    pub fn has_heartbeat(&self) -> bool {
        self.heartbeat_ms().is_some() || self.heartbeat_interval.is_some()
    }
}

/// A duration as the record writes it: seconds, with a fraction.
fn as_seconds<S: serde::Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
    match d {
        Some(d) => s.serialize_f64(d.as_secs_f64()),
        None => s.serialize_none(),
    }
}

/// The parts of a record that stay the same for the life of a process, read once per process
/// (a forked child has another PID and reads its own; `exec` starts afresh anyway). The host
/// name is not among them: it can be changed while we run.
#[derive(Debug, Clone)]
struct ProcessFacts {
    pid: u32,
    boot_id: Option<String>,
    start_time: Option<u64>,
    pid_ns: Option<u64>,
    exe: Option<String>,
}

impl ProcessFacts {
    fn of_this_process() -> ProcessFacts {
        static CACHE: std::sync::Mutex<Option<ProcessFacts>> = std::sync::Mutex::new(None);
        let pid = std::process::id();
        let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(f) = cache.as_ref().filter(|f| f.pid == pid) {
            return f.clone();
        }
        let facts = ProcessFacts {
            pid,
            boot_id: locksmith_sys::host::boot_id(),
            start_time: locksmith_sys::host::own_start_ticks(),
            pid_ns: locksmith_sys::host::pid_ns_of("self"),
            exe: std::env::current_exe()
                .ok()
                .map(|p| p.to_string_lossy().into_owned()),
        };
        *cache = Some(facts.clone());
        facts
    }
}

/// 128 random bits as 32 hex digits (from the kernel's random source; the clock and the PID
/// when it cannot be read, which still makes a token unique enough to tell acquisitions apart).
pub(crate) fn new_token() -> String {
    use std::io::Read;
    let mut buf = [0u8; 16];
    let read = std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut buf));
    if read.is_err() {
        let now = jiff::Timestamp::now().as_nanosecond() as u128;
        let mixed = now ^ ((std::process::id() as u128) << 96);
        buf = mixed.to_le_bytes();
    }
    buf.iter().map(|b| format!("{b:02x}")).collect()
}

fn str_field(map: &Map<String, Value>, key: &str) -> Option<String> {
    map.get(key).and_then(Value::as_str).map(str::to_string)
}

/// A timestamp field: the text, only if it parses as a timestamp.
fn time_field(map: &Map<String, Value>, key: &str) -> Option<String> {
    let text = map.get(key).and_then(Value::as_str)?;
    ms_of(Some(text)).map(|_| text.to_string())
}

/// Milliseconds since the epoch of an RFC 3339 time.
fn ms_of(text: Option<&str>) -> Option<i64> {
    Some(text?.parse::<jiff::Timestamp>().ok()?.as_millisecond())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_a_written_record() {
        let r = Record::for_this_process(true, Some(Duration::from_secs(5)));
        let line = r.to_line();
        assert_eq!(line.last(), Some(&b'\n'));
        let p = Record::parse(&line).expect("parses");
        assert!(!p.from_zero());
        assert_eq!(p, r, "read back as written");
        assert_eq!(p.pid, Some(std::process::id() as i64));
        assert_eq!(p.hostname, r.hostname);
        assert_eq!(p.boot_id, r.boot_id);
        assert_eq!(p.start_time, r.start_time);
        assert_eq!(p.pid_ns, r.pid_ns);
        assert!(p.kernel_lock);
        assert_eq!(p.token, r.token);
        assert_eq!(p.tool.as_deref(), Some(TOOL));
        assert_eq!(p.heartbeat_interval, Some(Duration::from_secs(5)));
        assert!(p.has_heartbeat());
        assert_eq!(p.created_ms(), p.heartbeat_ms());
        let age = jiff::Timestamp::now().as_millisecond() - p.created_ms().unwrap();
        assert!((0..60_000).contains(&age), "{age}");
        assert_eq!(r.token().len(), 32);
        assert_ne!(r.token(), new_token());
    }

    #[test]
    fn reads_zero_records() {
        let z =
            br#"{"PID":4242,"CreatedAt":"2024-05-01T10:00:00.123456789+02:00","Hostname":"box"}"#;
        let p = Record::parse(z).unwrap();
        assert!(p.from_zero());
        assert_eq!(p.pid, Some(4242));
        assert_eq!(p.hostname.as_deref(), Some("box"));
        assert_eq!(p.created_ms(), Some(1_714_550_400_123));
        assert!(!p.kernel_lock && !p.has_heartbeat());
        let only_host = br#"{"PID":1,"Hostname":"h"}"#;
        assert!(Record::parse(only_host).is_some());
    }

    #[test]
    fn tolerates_wrong_types_and_garbage() {
        let wrong = br#"{"tool":"locksmith/9","pid":"12","hostname":7,"boot_id":[],"start_time":-1,
            "pid_ns":1.5,"created_at":"yesterday","heartbeat_at":3,"heartbeat_secs":"x","kernel_lock":"yes"}"#;
        let p = Record::parse(wrong).unwrap();
        assert_eq!(p.pid, None);
        assert_eq!(p.hostname, None);
        assert_eq!(p.boot_id, None);
        assert_eq!(p.start_time, None);
        assert_eq!(p.pid_ns, None);
        assert_eq!((p.created_at.as_deref(), p.created_ms()), (None, None));
        assert!(!p.has_heartbeat() && !p.kernel_lock);

        let huge = br#"{"PID":18446744073709551615,"CreatedAt":"x"}"#;
        assert_eq!(Record::parse(huge).unwrap().pid, None);
        let float = br#"{"pid":12.0,"token":"t"}"#;
        assert_eq!(Record::parse(float).unwrap().pid, None);

        for junk in [
            &b""[..],
            b"   ",
            b"4242\n",
            b"{",
            b"{\"pid\":1",
            b"[1,2]",
            b"{\"other\":1}",
            b"{\"PID\":1}",
            b"\xff\xfe{}",
            b"{\"tool\":\"git/2\"}",
            b"\0\0\0\0",
        ] {
            assert_eq!(Record::parse(junk), None, "{junk:?}");
        }
    }
}
