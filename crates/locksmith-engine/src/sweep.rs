//! Leftovers of crashed acquisitions in the fallback: a process killed between creating its
//! named temporary file and removing that name again leaves `.locksmith-….tmp` behind, and one
//! killed while holding the reclaim guard leaves `<name>.reclaim`. The holder of a lock clears
//! them when it releases it, so a crash never leaves litter for long (the guard by the
//! protocol of `remove`, the temporary files here).
//!
//! A temporary file is only ever used by the process that created it, so removing one whose
//! creator is gone can never break a lock (a lock file is a separate name for the same file).
//! The creator is named in the file name itself (the record inside may never have been
//! written): `.locksmith-<boot id prefix>-<PID namespace>-<pid>-<start ticks>-<token>.tmp`.
//! One written on this kernel, in our PID namespace, is removed once that PID is gone or
//! names a process started at another time; any other one (another host, another namespace)
//! only after [`FOREIGN_TEMP_MAX_AGE_MS`], far longer than a temporary file lives.

use std::ffi::{OsStr, OsString};
use std::os::fd::AsFd;
use std::os::unix::ffi::OsStrExt;

use rustix::fs::{AtFlags, Mode, OFlags};

use super::place::Place;
use super::record::Record;
use locksmith_sys::host::Process;

/// Prefix and suffix of the engine's temporary file names.
const PREFIX: &str = ".locksmith-";
const SUFFIX: &str = ".tmp";

/// A temporary file whose creator cannot be checked from here is removed after this long.
const FOREIGN_TEMP_MAX_AGE_MS: i64 = 3_600_000;

/// The name of a new temporary file for `record`'s creator (this process): it names the
/// creator (boot id prefix, PID namespace, PID, start ticks), so that a holder can clear the
/// leftovers of creators that are gone at release.
pub(crate) fn temp_name(record: &Record) -> OsString {
    let boot: String = record
        .boot_id
        .as_deref()
        .unwrap_or("x")
        .chars()
        .filter(char::is_ascii_hexdigit)
        .take(8)
        .collect();
    let opt = |v: Option<u64>| v.map_or("x".to_string(), |v| v.to_string());
    OsString::from(format!(
        "{PREFIX}{boot}-{}-{}-{}-{}{SUFFIX}",
        opt(record.pid_ns),
        record.pid.unwrap_or(0),
        opt(record.start_time),
        &record.token()[..record.token().len().min(16)],
    ))
}

/// The creator named by a temporary file name.
#[derive(Debug, PartialEq, Eq)]
struct Creator {
    boot: String,
    pid_ns: Option<u64>,
    pid: i32,
    start_ticks: Option<u64>,
}

fn parse_temp_name(name: &OsStr) -> Option<Creator> {
    let s = name.to_str()?;
    let body = s.strip_prefix(PREFIX)?.strip_suffix(SUFFIX)?;
    let mut it = body.split('-');
    let boot = it.next()?.to_string();
    let pid_ns = it.next()?.parse().ok();
    let pid = it.next()?.parse().ok()?;
    let start_ticks = it.next()?.parse().ok();
    let _token = it.next()?;
    if it.next().is_some() || boot.is_empty() {
        return None;
    }
    Some(Creator {
        boot,
        pid_ns,
        pid,
        start_ticks,
    })
}

/// What a temporary file's creator is compared with: this kernel and PID namespace.
#[derive(Debug, Clone)]
struct Here {
    boot_id: Option<String>,
    pid_ns: Option<u64>,
}

impl Here {
    fn probe() -> Here {
        Here {
            boot_id: locksmith_sys::host::boot_id(),
            pid_ns: locksmith_sys::host::pid_ns_of("self"),
        }
    }
}

/// Whether the creator is provably gone, judged from this host.
fn creator_gone(c: &Creator, host: &Here) -> bool {
    let ours = host.boot_id.as_deref().is_some_and(|b| {
        b.chars()
            .filter(char::is_ascii_hexdigit)
            .take(8)
            .eq(c.boot.chars())
    });
    if !ours || c.pid_ns.is_none() || c.pid_ns != host.pid_ns {
        return false;
    }
    match locksmith_sys::host::process(c.pid) {
        Process::Absent | Process::Exited => true,
        Process::Running { start_ticks } => c.start_ticks.is_some_and(|t| t != start_ticks),
        Process::Hidden => false,
    }
}

/// Removes abandoned temporary files in the lock's directory. Best effort: errors are ignored
/// (what stays is cleared next time). Returns whether the listing showed this lock's reclaim
/// guard (`None` when the directory cannot be listed), so that the caller looks the guard up
/// by name only when it may be there (one lookup less on a network file system).
pub fn temp_files(place: &Place) -> Option<bool> {
    let fd = rustix::fs::openat(
        place.dir.as_fd(),
        ".",
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .ok()?;
    let dir = rustix::fs::Dir::read_from(&fd).ok()?;
    let mut guard_name = place.name.clone();
    guard_name.push(".reclaim");
    let mut guard_seen = false;
    let mut host = None;
    let now_ms = jiff::Timestamp::now().as_millisecond();
    for entry in dir.flatten() {
        let name = OsStr::from_bytes(entry.file_name().to_bytes());
        if name == guard_name {
            guard_seen = true;
        }
        if !name.as_bytes().starts_with(PREFIX.as_bytes())
            || !name.as_bytes().ends_with(SUFFIX.as_bytes())
        {
            continue;
        }
        let gone = match parse_temp_name(name) {
            Some(c) => creator_gone(&c, host.get_or_insert_with(Here::probe)),
            None => false,
        };
        let old = || {
            rustix::fs::statat(place.dir.as_fd(), name, AtFlags::SYMLINK_NOFOLLOW).is_ok_and(|st| {
                rustix::fs::FileType::from_raw_mode(st.st_mode) == rustix::fs::FileType::RegularFile
                    && now_ms - st.st_mtime * 1000 > FOREIGN_TEMP_MAX_AGE_MS
            })
        };
        if gone || old() {
            let _ = rustix::fs::unlinkat(place.dir.as_fd(), name, AtFlags::empty());
        }
    }
    Some(guard_seen)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temp_names_name_their_creator() {
        let r = Record::for_this_process(false, None);
        let name = temp_name(&r);
        let c = parse_temp_name(&name).expect("parses");
        assert_eq!(Some(i64::from(c.pid)), r.pid);
        assert_eq!(c.pid_ns, r.pid_ns);
        assert_eq!(c.start_ticks, r.start_time);
        // This process is alive: its temporary files are not leftovers.
        assert!(!creator_gone(&c, &Here::probe()));
        for bad in [
            ".locksmith-x.tmp",
            ".locksmith-a-b-c-d-e.tmp",
            "other",
            ".locksmith-.tmp",
        ] {
            assert_eq!(parse_temp_name(OsStr::new(bad)), None, "{bad}");
        }
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_dead_creator_is_gone_another_kernel_is_not_judged() {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id() as i32;
        child.wait().unwrap();
        let host = Here::probe();
        let mut rec = Record::for_this_process(false, None);
        rec.pid = Some(i64::from(pid));
        rec.start_time = Some(1);
        let dead = parse_temp_name(&temp_name(&rec)).expect("parses");
        assert!(creator_gone(&dead, &host));
        rec.boot_id = Some("00000000".into());
        let elsewhere = parse_temp_name(&temp_name(&rec)).expect("parses");
        assert!(!creator_gone(&elsewhere, &host));
    }
}
