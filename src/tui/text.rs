//! Text that reaches the terminal. Everything taken from a lock file, a path or a process (owner
//! fields, content, command lines, evidence quoting them) goes through [`clean`], [`path`] or
//! [`content_lines`] first (the report's shared escaping), so an escape sequence hidden in a
//! lock file can never reach the user's terminal: control characters are shown as `\n`,
//! `\x1b`, `\u{202e}`.

use std::fmt::Write as _;

use locksmith::report::escape;

/// A string safe to draw: control and invisible formatting characters escaped.
pub fn clean(s: &str) -> String {
    escape::escape_text(s)
}

/// A path safe to draw: invalid UTF-8 bytes as `\xNN`, controls escaped.
pub fn path(p: &std::path::Path) -> String {
    escape::display_path(p)
}

/// Bytes as text: valid UTF-8 kept (with controls escaped), invalid bytes as `\xNN`.
pub fn bytes(b: &[u8]) -> String {
    escape::escape_bytes(b)
}

/// Whether content reads as text (few bytes that are neither printable nor whitespace).
fn looks_textual(b: &[u8]) -> bool {
    if b.is_empty() {
        return true;
    }
    let text = String::from_utf8_lossy(b);
    let odd = text
        .chars()
        .filter(|&c| c == '\u{FFFD}' || (c.is_control() && !matches!(c, '\n' | '\r' | '\t')))
        .count();
    odd * 10 <= text.chars().count()
}

/// Raw lock content for the detail pane, at most `max_lines` lines: text is shown line by line
/// with controls escaped; binary content as a hex dump (offset, hex, printable ASCII), with runs
/// of zero lines folded.
pub fn content_lines(b: &[u8], max_lines: usize) -> Vec<String> {
    let mut out = Vec::new();
    if b.is_empty() {
        out.push("(empty)".to_string());
        return out;
    }
    if looks_textual(b) {
        let mut lines = b.split_inclusive(|&c| c == b'\n').peekable();
        while let Some(line) = lines.next() {
            if out.len() == max_lines {
                let rest: usize = lines.map(<[u8]>::len).sum::<usize>() + line.len();
                out.push(format!("… {rest} more bytes"));
                break;
            }
            out.push(bytes(line));
        }
        return out;
    }
    let mut off = 0;
    let mut zero_run = 0usize;
    for row in b.chunks(16) {
        if row.iter().all(|&c| c == 0) {
            zero_run += 1;
            off += row.len();
            continue;
        }
        if zero_run > 0 {
            out.push(format!(
                "{:06x}  (zero ×{})",
                off - zero_run * 16,
                zero_run * 16
            ));
            zero_run = 0;
        }
        if out.len() >= max_lines {
            out.push(format!("… {} more bytes", b.len() - off));
            return out;
        }
        let mut line = format!("{off:06x}  ");
        for i in 0..16 {
            match row.get(i) {
                Some(c) => {
                    let _ = write!(line, "{c:02x} ");
                }
                None => line.push_str("   "),
            }
        }
        line.push(' ');
        line.extend(row.iter().map(|&c| {
            if c.is_ascii_graphic() || c == b' ' {
                c as char
            } else {
                '.'
            }
        }));
        out.push(line);
        off += row.len();
    }
    if zero_run > 0 {
        out.push(format!(
            "{:06x}  (zero ×{})",
            off - zero_run * 16,
            zero_run * 16
        ));
    }
    out
}

/// A short age: `42s`, `5m`, `3h`, `12d` (as in the `--scan` table).
pub fn age(ms: i64) -> String {
    locksmith::report::human_age((ms.max(0) / 1000) as u64)
}

/// A size in bytes, short.
pub fn size(n: u64) -> String {
    match n {
        0..1024 => format!("{n} B"),
        1024..1_048_576 => format!("{:.1} KiB", n as f64 / 1024.0),
        _ => format!("{:.1} MiB", n as f64 / 1_048_576.0),
    }
}

/// A count with thousands separators: `12,345`.
pub fn count(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_reach_the_screen_as_text() {
        assert_eq!(clean("plain"), "plain");
        assert_eq!(clean("a\x1b[2Jb"), "a\\x1b[2Jb");
        assert_eq!(bytes(b"ok\xff\x07"), "ok\\xff\\x07");
        use std::os::unix::ffi::OsStrExt;
        let p = std::path::Path::new(std::ffi::OsStr::from_bytes(b"/tmp/a\nb\xfe.pid"));
        assert_eq!(path(p), "/tmp/a\\nb\\xfe.pid");
    }

    #[test]
    fn content_is_shown_as_text_or_hex() {
        assert_eq!(content_lines(b"", 5), vec!["(empty)"]);
        assert_eq!(content_lines(b"4242\n", 5), vec!["4242\\n"]);
        assert_eq!(
            content_lines(b"a\nb\nc\nd\n", 2),
            vec!["a\\n", "b\\n", "… 4 more bytes"]
        );
        let mut swap = b"b0VIM 9.0".to_vec();
        swap.resize(64, 0);
        swap.extend_from_slice(b"\x01\x02ABC");
        let lines = content_lines(&swap, 10);
        assert!(lines[0].starts_with("000000  62 30 56 49 4d"), "{lines:?}");
        assert!(lines[0].ends_with("b0VIM 9.0......."), "{lines:?}");
        assert_eq!(lines[1], "000010  (zero ×48)");
        assert!(lines[2].starts_with("000040  01 02 41 42 43"), "{lines:?}");
        assert!(lines.iter().all(|l| !l.chars().any(char::is_control)));
    }

    #[test]
    fn short_numbers() {
        assert_eq!(age(999), "0s");
        assert_eq!(age(61_000), "1m");
        assert_eq!(age(7_200_000), "2h");
        assert_eq!(age(-5), "0s");
        assert_eq!(age(3 * 86_400_000), "3d");
        assert_eq!(size(5), "5 B");
        assert_eq!(size(2048), "2.0 KiB");
        assert_eq!(count(0), "0");
        assert_eq!(count(999), "999");
        assert_eq!(count(1000), "1,000");
        assert_eq!(count(1234567), "1,234,567");
    }
}
