//! Helpers shared by the dialect judges: bounding text taken from lock files, strict PID
//! parsing, kernel-lock and open-file evidence, process matching and ages. Nothing here
//! modifies anything; the only I/O is reading `/proc` for one process when a judge asks.

use std::path::Path;

use super::{Candidate, EntryKind};
use crate::evidence::{PidClaim, judge_pid};
use crate::probe::{FileKey, ProcSummary, Snapshot};
use crate::verdict::{Holder, Judgement, Verdict};

/// Longest excerpt of lock content quoted in an evidence line.
pub const EXCERPT_CHARS: usize = 40;

/// Longest owner field kept from a lock file (host names, user names, paths).
pub const FIELD_CHARS: usize = 512;

/// An owner field from a lock file: raw text (lossy UTF-8), bounded. Views escape it.
pub fn field(s: &str) -> String {
    crate::text::truncate(s, FIELD_CHARS)
}

/// A short quoted excerpt of raw content for an evidence line: raw text (lossy UTF-8),
/// bounded. Views escape it.
pub fn excerpt(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    format!("\"{}\"", crate::text::truncate(&text, EXCERPT_CHARS))
}

/// Parses a decimal PID strictly: optional surrounding whitespace, an optional sign, digits
/// only. Returns the value (which may be 0, negative or absurd: the PID rules reject those
/// with their own evidence) or a sentence saying what is wrong.
pub fn parse_pid(text: &str) -> Result<i64, String> {
    let t = text.trim_matches(|c: char| c.is_ascii_whitespace() || c == '\0');
    if t.is_empty() {
        return Err("it is empty where a PID was expected".into());
    }
    let digits = t.strip_prefix(['-', '+']).unwrap_or(t);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("{} is not a decimal PID", excerpt(t.as_bytes())));
    }
    t.parse::<i64>()
        .map_err(|_| format!("{} is out of range for a PID", excerpt(t.as_bytes())))
}

/// Whether `text` looks like a decimal number (what pid files hold), for `recognise`.
pub fn looks_like_pid(text: &str) -> bool {
    let t = text.trim_matches(|c: char| c.is_ascii_whitespace() || c == '\0');
    let digits = t.strip_prefix('-').unwrap_or(t);
    !digits.is_empty() && digits.len() <= 20 && digits.bytes().all(|b| b.is_ascii_digit())
}

/// The kind of a directory entry, for evidence lines.
pub fn kind_name(kind: EntryKind) -> &'static str {
    match kind {
        EntryKind::File => "a regular file",
        EntryKind::Symlink => "a symlink",
        EntryKind::Dir => "a directory",
        EntryKind::Other => "a special file",
    }
}

pub use crate::verdict::describe_holders;

/// `live` when a kernel lock is held on `key`: the kernel's word beats anything the content
/// says. `what` names the file in the evidence ("the lock file", "terraform.tfstate").
pub fn kernel_live(snap: &Snapshot, key: FileKey, what: &str) -> Option<Judgement> {
    let holders = snap.kernel_holders(key);
    if holders.is_empty() {
        return None;
    }
    let mut j = Judgement::new(
        Verdict::Live,
        format!(
            "{what} is locked in the kernel by {} (/proc/locks)",
            describe_holders(&holders)
        ),
    );
    j.holders = holders;
    Some(j)
}

/// `live` when processes have the file `key` open; `say` words the evidence from the list of
/// them (`pid 42 (open, git)`).
pub fn open_live(
    snap: &Snapshot,
    key: FileKey,
    say: impl FnOnce(&str) -> String,
) -> Option<Judgement> {
    let openers = snap.openers(key);
    if openers.is_empty() {
        return None;
    }
    let mut j = Judgement::new(Verdict::Live, say(&describe_holders(&openers)));
    j.holders = openers;
    Some(j)
}

/// `unknown` because the content could not be parsed; `why` says what was wrong.
pub fn unparseable(dialect: &str, why: impl std::fmt::Display) -> Judgement {
    Judgement::new(
        Verdict::Unknown,
        format!("cannot read this as a {dialect} lock: {why}"),
    )
}

/// Merges holders into a judgement without duplicates.
pub fn add_holders(j: &mut Judgement, holders: Vec<Holder>) {
    merge_holders(&mut j.holders, holders);
}

/// Appends holders not already listed.
pub fn merge_holders(into: &mut Vec<Holder>, more: Vec<Holder>) {
    for h in more {
        if !into.contains(&h) {
            into.push(h);
        }
    }
}

/// A PID record in the candidate's file, judged: `live` when a kernel lock is held on the file
/// (`what` names it in the evidence), else the PID rules of [`crate::evidence`] with the
/// file's own facts (see [`file_claim`]).
pub fn pid_record(
    c: &Candidate<'_>,
    snap: &Snapshot,
    what: &str,
    claim: PidClaim<'_>,
) -> Judgement {
    if let Some(j) = kernel_live(snap, c.key(), what) {
        return j;
    }
    judge_pid(&file_claim(c, claim), snap)
}

/// A claim read from the candidate's file: written at the file's mtime (unless the record says
/// when), on its file system, and judged in every PID namespace that can see the file.
pub fn file_claim<'a>(c: &'a Candidate<'_>, claim: PidClaim<'a>) -> PidClaim<'a> {
    PidClaim {
        written_ms: claim.written_ms.or(Some(c.mtime_ms())),
        fs: Some(c.fs),
        file: Some((c.path, c.meta)),
        ..claim
    }
}

/// Whether a listed process is one of `names` (its name, executable file name or `argv[0]`'s
/// file name equals or starts with one of them).
pub fn proc_is(p: &ProcSummary, names: &[&str]) -> bool {
    let base = |s: &str| s.rsplit('/').next().unwrap_or(s).to_string();
    let mut seen = vec![p.name.clone()];
    if let Some(exe) = &p.exe {
        seen.push(base(exe.to_string_lossy().trim_end_matches(" (deleted)")));
    }
    if let Some(a0) = p.cmd.first() {
        seen.push(base(a0));
    }
    seen.iter()
        .any(|s| names.iter().any(|n| s == n || s.starts_with(n)))
}

/// The names a process goes by: comm, the executable's file name and `argv[0]`'s file name.
pub fn names_of(f: &crate::probe::ProcFacts) -> Vec<String> {
    let base = |s: &str| {
        let s = s.trim_end_matches(" (deleted)");
        s.rsplit('/').next().unwrap_or(s).to_string()
    };
    let mut names = vec![f.comm.clone()];
    names.extend(f.exe.as_deref().map(base));
    names.extend(f.cmdline.first().map(|a| base(a)));
    names
}

/// Age of the candidate's mtime at snapshot time, in milliseconds (negative if in the future).
pub fn age_ms(mtime_ms: i64, snap: &Snapshot) -> i64 {
    snap.taken_ms - mtime_ms
}

/// Formats a duration in ms for evidence lines: `3 s`, `5 min 2 s`, `2 h 10 min`, `3 d 4 h`.
pub fn fmt_age(ms: i64) -> String {
    let s = ms.max(0) / 1000;
    match s {
        0..60 => format!("{s} s"),
        60..3600 => format!("{} min {} s", s / 60, s % 60),
        3600..86_400 => format!("{} h {} min", s / 3600, (s % 3600) / 60),
        _ => format!("{} d {} h", s / 86_400, (s % 86_400) / 3600),
    }
}

/// Whether process `pid` has a file under `dir` open (reads `/proc/<pid>/fd` of that one
/// process). `None` when its descriptors cannot be read. Our own handle on `dir` itself (the
/// judge reads a lock through its directory's descriptor) does not count.
pub fn has_open_under(pid: i32, dir: &Path) -> Option<bool> {
    let dir = std::fs::canonicalize(dir).ok()?;
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?;
    let ours = pid == std::process::id() as i32;
    Some(fds.flatten().any(|fd| {
        std::fs::read_link(fd.path())
            .map(|target| target.starts_with(&dir) && !(ours && target == dir))
            .unwrap_or(false)
    }))
}

/// Whether process `pid`'s working directory is the directory `dir` (compared by device and
/// inode, so it also holds across mount namespaces and symlinks). `None` when unknown.
pub fn cwd_is(pid: i32, dir_meta: &std::fs::Metadata) -> Option<bool> {
    use std::os::unix::fs::MetadataExt;
    let cwd = std::fs::metadata(format!("/proc/{pid}/cwd")).ok()?;
    Some(cwd.dev() == dir_meta.dev() && cwd.ino() == dir_meta.ino())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_and_excerpts_keep_raw_text_and_bound_length() {
        assert_eq!(field("a\x1b[31mb\u{202e}"), "a\x1b[31mb\u{202e}");
        assert_eq!(field(&"x".repeat(600)).chars().count(), FIELD_CHARS + 1);
        assert_eq!(excerpt(b"1; rm -rf /\n"), "\"1; rm -rf /\n\"");
        assert_eq!(excerpt(b"\xff1"), "\"\u{fffd}1\"");
    }

    #[test]
    fn parses_pids_strictly() {
        assert_eq!(parse_pid(" 4242\n"), Ok(4242));
        assert_eq!(parse_pid("-1"), Ok(-1));
        assert_eq!(parse_pid("2147483648"), Ok(2_147_483_648));
        assert!(parse_pid("1; rm -rf /").is_err());
        assert!(parse_pid("").is_err());
        assert!(parse_pid("99999999999999999999999").is_err());
        assert!(parse_pid("12 34").is_err());
        assert!(looks_like_pid("      1234\n"));
        assert!(!looks_like_pid("DIRC"));
        assert!(!looks_like_pid(""));
    }

    #[test]
    fn formats_ages() {
        assert_eq!(fmt_age(3_400), "3 s");
        assert_eq!(fmt_age(302_000), "5 min 2 s");
        assert_eq!(fmt_age(7_800_000), "2 h 10 min");
        assert_eq!(fmt_age(-5), "0 s");
    }
}
