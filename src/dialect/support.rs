//! Helpers shared by the dialects of programs' own lock formats (pacman, R, borg, VMware,
//! ...): which processes of a family run, whether every process's descriptors can be seen,
//! bounded listings of lock directories, memory mappings, this machine's identities, and
//! the aggregation of several owners' verdicts into one. Nothing here modifies anything.

use std::fs::Metadata;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use super::common;
use crate::probe::{FileKey, PidState, ProcSummary, Snapshot};
use crate::verdict::{Judgement, Verdict};

/// Inode of the initial PID namespace (`PROC_PID_INIT_INO`).
const INITIAL_PID_NS: u64 = 0xEFFF_FFFC;

/// The live processes whose name, executable's file name or `argv[0]`'s file name is one of
/// `names` exactly (zombies and kernel threads are not running programs).
pub fn running<'a>(snap: &'a Snapshot, names: &[&str]) -> Vec<&'a ProcSummary> {
    let base = |s: &str| s.rsplit('/').next().unwrap_or(s).to_string();
    snap.processes()
        .iter()
        .filter(|p| p.pid as u32 != std::process::id())
        .filter(|p| {
            let mut seen = vec![p.name.clone()];
            if let Some(exe) = &p.exe {
                seen.push(base(exe.to_string_lossy().trim_end_matches(" (deleted)")));
            }
            if let Some(a0) = p.cmd.first() {
                seen.push(base(a0));
            }
            seen.iter().any(|s| names.contains(&s.as_str()))
        })
        .filter(|p| matches!(snap.pid(p.pid), PidState::Alive(_) | PidState::ExistsOpaque))
        .collect()
}

/// `pacman (pid 12), yay (pid 40)`.
pub fn list_procs(procs: &[&ProcSummary]) -> String {
    procs
        .iter()
        .take(8)
        .map(|p| format!("{} (pid {})", crate::text::truncate(&p.name, 32), p.pid))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Whether a missing opener proves something: we can read every process's descriptors
/// (root in the host's PID namespace), or the file is ours, so that whoever would hold it
/// runs as us and is visible. `Err` says why not.
pub fn openers_conclusive(meta: &Metadata, snap: &Snapshot) -> Result<(), String> {
    let root = rustix::process::geteuid().is_root();
    let host_ns = snap.host.pid_ns.is_none_or(|ns| ns == INITIAL_PID_NS);
    if !host_ns {
        return Err(format!(
            "we run in a PID namespace that is not the host's (pid:[{}]): processes outside it are not visible",
            snap.host.pid_ns.unwrap_or(0)
        ));
    }
    if root || meta.uid() == rustix::process::geteuid().as_raw() {
        return Ok(());
    }
    Err(format!(
        "the file belongs to uid {} and we are not root: that user's open files cannot be read",
        meta.uid()
    ))
}

/// `unknown` when a missing opener proves nothing (see [`openers_conclusive`]): `seen` says
/// what was seen ("no visible process has it open").
pub fn openers_inconclusive(meta: &Metadata, snap: &Snapshot, seen: &str) -> Option<Judgement> {
    let why = openers_conclusive(meta, snap).err()?;
    Some(Judgement::new(
        Verdict::Unknown,
        format!("{seen}, but {why}"),
    ))
}

/// Entries of a lock directory (names lossy, `lstat`ed), at most `max`, sorted by name.
pub fn list_dir(dir: &Path, max: usize) -> std::io::Result<Vec<(String, Metadata)>> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir)? {
        let e = e?;
        if out.len() == max {
            break;
        }
        if let Ok(m) = std::fs::symlink_metadata(e.path()) {
            out.push((e.file_name().to_string_lossy().into_owned(), m));
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

/// Reads a small member file of a lock directory (bounded, never blocking).
pub fn read_member(path: &Path, meta: &Metadata, max: usize) -> Option<Vec<u8>> {
    if !meta.file_type().is_file() {
        return None;
    }
    super::read_prefix(path, meta, max).ok().map(|(b, _)| b)
}

/// The processes that have this file mapped into memory (`/proc/<pid>/maps`): Berkeley DB
/// maps its region files and may close the descriptor.
pub fn mappers(key: FileKey) -> Vec<i32> {
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let dev = format!("{:02x}:{:02x}", key.major, key.minor);
    let ino = key.inode.to_string();
    let mut out = Vec::new();
    for p in procs.flatten() {
        let Some(pid) = p.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        let Ok(maps) = std::fs::read_to_string(format!("/proc/{pid}/maps")) else {
            continue;
        };
        let hit = maps.lines().any(|l| {
            let mut f = l.split_ascii_whitespace().skip(3);
            f.next() == Some(dev.as_str()) && f.next() == Some(ino.as_str())
        });
        if hit {
            out.push(pid);
        }
    }
    out
}

/// This machine's id (`/etc/machine-id`, else D-Bus's copy), as Qt and systemd read it.
pub fn machine_id() -> Option<String> {
    ["/etc/machine-id", "/var/lib/dbus/machine-id"]
        .iter()
        .find_map(|p| std::fs::read_to_string(p).ok())
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

/// The hardware addresses of this machine's network interfaces as 48-bit integers (what
/// Python's `uuid.getnode()` returns for one of them).
pub fn mac_nodes() -> Vec<u64> {
    let Ok(dir) = std::fs::read_dir("/sys/class/net") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| std::fs::read_to_string(e.path().join("address")).ok())
        .filter_map(|a| {
            let hex: String = a.trim().split(':').collect();
            (hex.len() == 12).then(|| u64::from_str_radix(&hex, 16).ok())?
        })
        .filter(|n| *n != 0)
        .collect()
}

/// One verdict for a lock with several owners (a borg roster, a VMware lock directory):
/// held if any owner is alive, else not checkable if any is foreign or unknown, and stale
/// only when every owner is proven gone. Evidence lines are prefixed with `label(i)`.
pub fn aggregate(parts: Vec<(String, Judgement)>) -> Judgement {
    let rank = |v: Verdict| match v {
        Verdict::Live => 0,
        Verdict::Foreign => 1,
        Verdict::Unknown => 2,
        Verdict::Free => 3,
        Verdict::Stale => 4,
    };
    let verdict = parts
        .iter()
        .map(|(_, j)| j.verdict)
        .min_by_key(|v| rank(*v))
        .unwrap_or(Verdict::Unknown);
    let mut out = Judgement::new(verdict, "");
    out.evidence.clear();
    for (label, j) in parts {
        for line in &j.evidence {
            out.evidence.push(format!("{label}: {line}"));
        }
        if out.process.is_none() && j.verdict == verdict {
            out.process = j.process;
        }
        common::merge_holders(&mut out.holders, j.holders);
    }
    out
}

/// The age of a path's mtime, for the evidence.
pub fn age_line(meta: &Metadata, snap: &Snapshot) -> String {
    let ms = crate::probe::mtime_ms(meta);
    format!(
        "last modified {} ago ({})",
        common::fmt_age(common::age_ms(ms, snap)),
        crate::evidence::fmt_ms(ms)
    )
}
