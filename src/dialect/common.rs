//! Helpers shared by the dialects: bounding text taken from lock files, strict PID parsing,
//! and the words evidence lines use. Nothing here reads the machine.

use super::EntryKind;
use crate::probe::Snapshot;

pub use crate::judge::fmt_age;

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

/// Age at snapshot time of a time in ms since the epoch (negative if in the future).
pub fn age_ms(at_ms: i64, snap: &Snapshot) -> i64 {
    snap.taken_ms - at_ms
}

/// How long ago a path last changed (its ctime, which nobody can set back), for the evidence;
/// with its mtime when that says otherwise.
pub fn age_line(meta: &crate::probe::Stat, snap: &Snapshot) -> String {
    let ms = meta.ctime_ms();
    let mtime = meta.mtime_ms();
    let said = if (mtime - ms).abs() > 1000 {
        format!("; its mtime says {}", crate::judge::fmt_ms(mtime))
    } else {
        String::new()
    };
    format!(
        "last changed {} ago ({}{said})",
        fmt_age(age_ms(ms, snap)),
        crate::judge::fmt_ms(ms)
    )
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
