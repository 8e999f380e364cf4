//! What `y` puts on the clipboard, and the OSC 52 sequence that puts it there.
//!
//! A path comes from whoever created the file, and what is copied is pasted, often into a
//! shell (root's, when root triages `/tmp`). So the clipboard never gets a path's raw bytes
//! when they could do anything on their own: it gets a form that a shell reads back as exactly
//! that path and that runs nothing when pasted, because it holds no control character (no
//! newline, no ESC that could end a bracketed paste), no invisible formatting character and no
//! byte that is not UTF-8:
//!
//! - a path of plain characters (letters, digits, `/._-+,:@%=`) as it is: what the screen shows;
//! - any other printable path single-quoted (`'/tmp/a b;c'`), read back as it is by every
//!   POSIX shell;
//! - a path with control characters, bidirectional or zero-width characters, or bytes that are
//!   not UTF-8 as `$'…'` with those bytes written `\xNN` (and `\\`, `\'`, and `!` as `\x21`, so
//!   that no history expansion sees it): bash, zsh and ksh read it back byte for byte; other
//!   shells read a harmless wrong word.
//!
//! A path whose safe form would be longer than [`MAX_COPY`] is not copied at all (terminals
//! drop or cut long OSC 52 sequences, and a cut form is not the path); the status says why.

use std::fmt::Write as _;
use std::io::{self, Write};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// The longest text copied (well under what terminals and tmux accept in one OSC 52).
pub const MAX_COPY: usize = 32 * 1024;

/// How a path was put in a form safe to paste.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// As it is (plain characters only).
    Plain,
    /// Single-quoted for the shell.
    Quoted,
    /// `$'…'` with escapes, for a name holding control or invisible characters or bytes that
    /// are not UTF-8.
    Escaped,
}

/// The text to copy for `path`, and how it was quoted; `Err` says why it is not copied.
pub fn text_for(path: &Path) -> Result<(String, Form), String> {
    let bytes = path.as_os_str().as_bytes();
    let out = match std::str::from_utf8(bytes) {
        Ok(s) if !s.chars().any(locksmith::text::is_unsafe_char) => {
            let quoted = locksmith::text::shell_quote(s);
            let form = if quoted == s {
                Form::Plain
            } else {
                Form::Quoted
            };
            (quoted, form)
        }
        _ => (ansi_c_quote(bytes), Form::Escaped),
    };
    if out.0.len() > MAX_COPY {
        return Err(format!(
            "not copied: the path is {} bytes, more than a terminal takes at once over OSC 52 \
             ({MAX_COPY} bytes)",
            bytes.len()
        ));
    }
    Ok(out)
}

/// `$'…'` quoting (bash, zsh, ksh): printable characters as they are, every byte of anything
/// else (controls, invisible formatting characters, bytes that are not UTF-8) as `\xNN`.
fn ansi_c_quote(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() + 3);
    out.push_str("$'");
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '\\' => out.push_str("\\\\"),
                '\'' => out.push_str("\\'"),
                '!' => out.push_str("\\x21"),
                c if locksmith::text::is_unsafe_char(c) => {
                    let mut buf = [0u8; 4];
                    for b in c.encode_utf8(&mut buf).bytes() {
                        let _ = write!(out, "\\x{b:02x}");
                    }
                }
                c => out.push(c),
            }
        }
        for b in chunk.invalid() {
            let _ = write!(out, "\\x{b:02x}");
        }
    }
    out.push('\'');
    out
}

/// Writes the OSC 52 sequence that puts `text` on the clipboard (terminals and tmux with
/// `set-clipboard on` take it; others ignore it).
pub fn write_osc52(out: &mut impl Write, text: &[u8]) -> io::Result<()> {
    write!(out, "\x1b]52;c;{}\x07", base64(text))?;
    out.flush()
}

/// Standard base64 (RFC 4648, with padding), for OSC 52.
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = u32::from(b[0]) << 16 | u32::from(b[1]) << 8 | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn base64_as_in_rfc_4648() {
        for (plain, coded) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(super::base64(plain.as_bytes()), coded);
        }
        assert_eq!(super::base64(&[0xff, 0xfe, 0x00]), "//4A");
    }
}
