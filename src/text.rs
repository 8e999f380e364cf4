//! Text for people and for programs: the one escaping policy of every view, shell quoting,
//! and the lossless coding of paths in JSON. Everything may use this module; it uses nothing
//! of the crate.
//!
//! The policy: the model (judgements, owner fields, findings, journal entries, errors) keeps
//! the raw text it read, bounded in length ([`truncate`]) but never escaped. Each view escapes
//! once, when it writes to a terminal: the table, the terminal UI and the error messages on
//! stderr pass every foreign string through [`escape`] (or [`escape_bytes`], [`display_path`],
//! [`display_os`] for bytes), and the JSON document carries the real text (serde_json escapes
//! control characters itself).
//!
//! Invariant: the output of [`escape`], [`escape_bytes`] and [`display_path`] contains no
//! control character (C0, DEL, C1), no bidirectional-override or zero-width formatting
//! character, and no invalid UTF-8: each is written as a visible escape (`\n`, `\t`, `\x1b`,
//! `\u{9b}`, `\u{202e}`, ...), and a literal backslash is doubled so that escapes cannot be
//! forged. A newline is data and is escaped too; a view that prints several lines escapes each
//! line's text and writes the line breaks itself.
//!
//! [`json_path`] is the JSON flavour for paths, lossless and unambiguous: valid UTF-8 is kept
//! as it is (JSON escapes control characters itself, and a script must get the real path back)
//! except the backslash, written `\\`; bytes that are not UTF-8 are written as `\xNN`. So a
//! name with the four characters `\xff` and one with the byte 0xFF give different strings, and
//! [`path_from_json`] gets the exact bytes back. [`terminal_safe_json`] makes a JSON text safe
//! to print on a terminal without changing what it means (the JSON report and the journal go
//! through it when stdout is a terminal).

use std::ffi::OsStr;
use std::fmt::Write as _;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// A path as a single-line, terminal-safe string.
pub fn display_path(path: &Path) -> String {
    escape_bytes(path.as_os_str().as_bytes())
}

/// The path a [`display_path`] string stands for (the inverse: `\\`, `\n`, `\r`, `\t`, `\xNN`
/// and `\u{X}` read back), so that a path can be given as a view printed it; `None` if `s` is
/// not such a string (a backslash followed by anything else).
pub fn path_from_display(s: &str) -> Option<std::path::PathBuf> {
    use std::os::unix::ffi::OsStringExt;
    let mut out = Vec::with_capacity(s.len());
    let mut chars = s.char_indices();
    while let Some((i, c)) = chars.next() {
        if c != '\\' {
            let mut buf = [0u8; 4];
            out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            continue;
        }
        match chars.next()?.1 {
            '\\' => out.push(b'\\'),
            'n' => out.push(b'\n'),
            'r' => out.push(b'\r'),
            't' => out.push(b'\t'),
            'x' => {
                let hex = s.get(i + 2..i + 4)?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                chars.nth(1)?;
            }
            'u' => {
                let rest = s.get(i + 2..)?.strip_prefix('{')?;
                let end = rest.find('}')?;
                let c = char::from_u32(u32::from_str_radix(&rest[..end], 16).ok()?)?;
                let mut buf = [0u8; 4];
                out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                // `{`, the digits and `}`.
                chars.nth(end + 1)?;
            }
            _ => return None,
        }
    }
    Some(std::ffi::OsString::from_vec(out).into())
}

/// An `OsStr` (a file name, an argument) as a single-line, terminal-safe string.
pub fn display_os(s: &OsStr) -> String {
    escape_bytes(s.as_bytes())
}

/// Text (already UTF-8) as a single-line, terminal-safe string: the one escape function.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    push_escaped_str(&mut out, text);
    out
}

/// Bytes of unknown encoding (lock-file content, raw names) as a single-line, terminal-safe
/// string: valid UTF-8 is kept (escaped like [`escape`]), other bytes become `\xNN`.
pub fn escape_bytes(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        push_escaped_str(&mut out, chunk.valid());
        for b in chunk.invalid() {
            let _ = write!(out, "\\x{b:02x}");
        }
    }
    out
}

/// `text` cut to at most `max` characters, with `…` in place of what was cut. Raw text read
/// from outside is bounded with this before it is kept; escaping is a separate step, done by
/// the view.
pub fn truncate(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_string(),
        Some((end, _)) => format!("{}…", &text[..end]),
    }
}

/// Quotes a string for a POSIX shell when it needs it: a word of letters, digits and
/// `/._-+,:@%=` (not starting with `=`, which zsh expands) stays as it is, anything else is
/// single-quoted. Quote a raw string for a command line that is run, an escaped one
/// ([`display_path`]) for a command line that is shown.
pub fn shell_quote(s: &str) -> String {
    let plain = !s.is_empty()
        && !s.starts_with('=')
        && s.chars()
            .all(|c| c.is_alphanumeric() || "/._-+,:@%=".contains(c));
    if plain {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// A path for a JSON document: valid UTF-8 unchanged except `\` written as `\\`, bytes that
/// are not UTF-8 as `\xNN` (see the module docs; [`path_from_json`] is the inverse).
pub fn json_path(path: &Path) -> String {
    let bytes = path.as_os_str().as_bytes();
    let mut out = String::with_capacity(bytes.len() + 8);
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            if c == '\\' {
                out.push_str("\\\\");
            } else {
                out.push(c);
            }
        }
        for b in chunk.invalid() {
            let _ = write!(out, "\\x{b:02x}");
        }
    }
    out
}

/// The path bytes a [`json_path`] string stands for; `None` if it is not one (a backslash
/// followed by anything but `\` or `xNN`).
pub fn path_from_json(s: &str) -> Option<std::path::PathBuf> {
    use std::os::unix::ffi::OsStringExt;
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'\\' {
            out.push(b[i]);
            i += 1;
            continue;
        }
        match b.get(i + 1) {
            Some(b'\\') => {
                out.push(b'\\');
                i += 2;
            }
            Some(b'x') => {
                let hex = s.get(i + 2..i + 4)?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 4;
            }
            _ => return None,
        }
    }
    Some(std::ffi::OsString::from_vec(out).into())
}

/// Rewrites the characters a terminal could act on (C1 controls, DEL, bidirectional and
/// zero-width formatting) in a JSON text as `\uXXXX`. They can only occur inside JSON strings
/// (the structure is ASCII), where `\uXXXX` means the same character, so the document stays
/// equivalent: a program reading it gets the real text, a terminal showing it stays sane.
pub fn terminal_safe_json(text: &str) -> std::borrow::Cow<'_, str> {
    // serde_json escapes every C0 control inside strings, so a raw newline is layout.
    let unsafe_char = |c: char| c != '\n' && is_unsafe_char(c);
    if !text.chars().any(unsafe_char) {
        return text.into();
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if unsafe_char(c) {
            let mut units = [0u16; 2];
            for u in c.encode_utf16(&mut units) {
                let _ = write!(out, "\\u{u:04x}");
            }
        } else {
            out.push(c);
        }
    }
    out.into()
}

/// Whether a character must not reach a terminal as it is: control characters (C0, DEL, C1,
/// which include ESC and CSI) and the invisible formatting characters that can make a line
/// read differently from what it is (bidirectional overrides and isolates, zero-width marks,
/// line and paragraph separators, the byte-order mark).
pub fn is_unsafe_char(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{200b}'..='\u{200f}'
                | '\u{2028}'..='\u{202e}'
                | '\u{2060}'..='\u{2069}'
                | '\u{feff}'
                | '\u{061c}'
        )
}

fn push_escaped_str(out: &mut String, s: &str) {
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x80 && is_unsafe_char(c) => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if is_unsafe_char(c) => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsStr;

    #[test]
    fn plain_text_is_unchanged() {
        assert_eq!(escape("/tmp/x/index.lock"), "/tmp/x/index.lock");
        assert_eq!(escape("héllo wörld ✓"), "héllo wörld ✓");
    }

    #[test]
    fn control_characters_are_visible_escapes() {
        assert_eq!(escape("a\nb\tc\rd"), "a\\nb\\tc\\rd");
        assert_eq!(escape("\x1b[31mred"), "\\x1b[31mred");
        assert_eq!(escape("bell\x07del\x7f"), "bell\\x07del\\x7f");
        assert_eq!(escape("csi\u{9b}31m"), "csi\\u{9b}31m");
        assert_eq!(escape("evil\u{202e}txt.exe"), "evil\\u{202e}txt.exe");
    }

    #[test]
    fn backslashes_are_doubled_so_escapes_cannot_be_forged() {
        assert_eq!(escape("a\\x1b"), "a\\\\x1b");
        assert_ne!(escape("a\\x1b"), escape("a\x1b"));
    }

    #[test]
    fn a_displayed_path_reads_back_exactly() {
        for raw in [
            &b"/tmp/plain.lock"[..],
            b"/tmp/a\\xff.pid",
            b"/tmp/a\xff.pid",
            b"/tmp/\x1b[2J\n\t\r.lock",
            "/tmp/evil\u{202e}dip.pid".as_bytes(),
            "/tmp/h\u{e9}llo \u{9b}.lock".as_bytes(),
        ] {
            let p = Path::new(OsStr::from_bytes(raw));
            let shown = display_path(p);
            assert_eq!(path_from_display(&shown).as_deref(), Some(p), "{shown}");
        }
        for bad in [
            "/tmp/a\\",
            "/tmp/\\q",
            "/tmp/\\xz1",
            "/tmp/\\u{110000}",
            "/tmp/\\u{41",
        ] {
            assert_eq!(path_from_display(bad), None, "{bad}");
        }
    }

    #[test]
    fn invalid_utf8_bytes_are_hex_escaped() {
        assert_eq!(escape_bytes(b"ab\xff\xfecd"), "ab\\xff\\xfecd");
        assert_eq!(escape_bytes(b"\xc3\xa9\xc3"), "é\\xc3");
        let p = Path::new(OsStr::from_bytes(b"/tmp/\x1b[2J\xff.lock"));
        assert_eq!(display_path(p), "/tmp/\\x1b[2J\\xff.lock");
    }

    #[test]
    fn output_never_contains_raw_controls() {
        let mut all = Vec::new();
        for b in 0u8..=255 {
            all.push(b);
        }
        all.extend_from_slice("\u{85}\u{9b}\u{2066}".as_bytes());
        let s = escape_bytes(&all);
        assert!(!s.chars().any(is_unsafe_char), "{s:?}");
    }

    #[test]
    fn json_paths_keep_utf8_and_escape_only_backslashes_and_invalid_bytes() {
        assert_eq!(json_path(Path::new("/a b/c\nd.lock")), "/a b/c\nd.lock");
        let p = Path::new(OsStr::from_bytes(b"/x/\xffy.lock"));
        assert_eq!(json_path(p), "/x/\\xffy.lock");
        assert_eq!(json_path(Path::new("/x/a\\b")), "/x/a\\\\b");
    }

    #[test]
    fn json_paths_are_unambiguous_and_lossless() {
        let literal = Path::new("/t/\\xff.lock");
        let byte = Path::new(OsStr::from_bytes(b"/t/\xff.lock"));
        assert_ne!(json_path(literal), json_path(byte));
        let mut all: Vec<u8> = (1u8..=255).collect();
        all.extend_from_slice(b"\\x41\\\\xzz\\");
        for bytes in [&all[..], b"/a\\", b"\\\\", b"\xc3\xa9\xc3", b"/t/\xff.lock"] {
            let p = Path::new(OsStr::from_bytes(bytes));
            assert_eq!(
                path_from_json(&json_path(p)).as_deref(),
                Some(p),
                "{bytes:?}"
            );
        }
        assert_eq!(path_from_json("/a\\qb"), None);
        assert_eq!(path_from_json("/a\\x4"), None);
    }

    #[test]
    fn truncation_counts_characters_and_marks_the_cut() {
        assert_eq!(truncate("abcdef", 3), "abc…");
        assert_eq!(truncate("abc", 3), "abc");
        assert_eq!(truncate("été\x1b", 2), "ét…");
        // Raw text stays raw: escaping is the view's step.
        assert_eq!(truncate("\x1b[31m", 40), "\x1b[31m");
    }

    #[test]
    fn shell_quoting_leaves_plain_words_and_quotes_the_rest() {
        assert_eq!(shell_quote("/tmp/a.txt"), "/tmp/a.txt");
        assert_eq!(shell_quote("/tmp/it's here"), "'/tmp/it'\\''s here'");
        assert_eq!(shell_quote(""), "''");
        assert_eq!(shell_quote("~/x"), "'~/x'");
        assert_eq!(shell_quote("=cmd"), "'=cmd'");
        assert_eq!(shell_quote("a;rm -rf /"), "'a;rm -rf /'");
        assert_eq!(shell_quote("$HOME`x`"), "'$HOME`x`'");
    }
}
