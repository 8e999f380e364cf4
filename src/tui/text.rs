//! Text that reaches the terminal. Everything taken from a lock file, a path or a process (owner
//! fields, content, command lines, evidence quoting them) is raw in the model and goes through
//! [`clean`], [`path`] or [`content_lines`] once, here (the one escaping policy,
//! `locksmith::text`), so an escape sequence hidden in a lock file can never reach the user's
//! terminal: control characters are shown as `\n`, `\x1b`, `\u{202e}`.
//!
//! It also fits text to the screen: wrapping at spaces with a hanging indent ([`wrap_line`]),
//! paths shortened in the middle so the last directories and the file name stay
//! ([`shorten_path`]), and messages cut at a word with an ellipsis ([`fit`]). Widths are in
//! terminal columns (wide characters count two).

use std::fmt::Write as _;

use locksmith::text;
use ratatui::style::Style;
use ratatui::text::{Line, Span};

/// A string safe to draw: control and invisible formatting characters escaped.
pub fn clean(s: &str) -> String {
    text::escape(s)
}

/// A path safe to draw: invalid UTF-8 bytes as `\xNN`, controls escaped.
pub fn path(p: &std::path::Path) -> String {
    text::display_path(p)
}

/// Bytes as text: valid UTF-8 kept (with controls escaped), invalid bytes as `\xNN`.
pub fn bytes(b: &[u8]) -> String {
    text::escape_bytes(b)
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

/// Bytes per line of a hex dump `width` columns wide: `OFFSET  HEX… ASCII` takes 9 columns
/// and 4 per byte; whole groups of 4 bytes (up to 16), or fewer on a very narrow pane.
pub fn hex_bytes_per_line(width: usize) -> usize {
    let fit = width.saturating_sub(9) / 4;
    match fit {
        16.. => 16,
        4..16 => fit / 4 * 4,
        _ => fit.max(1),
    }
}

/// Raw lock content for the detail pane: text is shown line by line (at most `max_lines`)
/// with controls escaped; binary content (at most `max_bytes` of it) as a hex dump (offset,
/// hex, printable ASCII) whose lines fit in `width` columns, with runs of zero lines folded.
pub fn content_lines(b: &[u8], max_lines: usize, max_bytes: usize, width: usize) -> Vec<String> {
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
    let per = hex_bytes_per_line(width);
    let mut off = 0;
    let mut zero_run = 0usize;
    let zeros = |at: usize, n: usize| format!("{at:06x}  (zero ×{n})");
    for row in b[..b.len().min(max_bytes)].chunks(per) {
        if row.iter().all(|&c| c == 0) {
            zero_run += row.len();
            off += row.len();
            continue;
        }
        if zero_run > 0 {
            out.push(zeros(off - zero_run, zero_run));
            zero_run = 0;
        }
        let mut line = format!("{off:06x}  ");
        for i in 0..per {
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
        out.push(zeros(off - zero_run, zero_run));
    }
    if off < b.len() {
        out.push(format!("… {} more bytes", b.len() - off));
    }
    out
}

/// A file mode as `ls -l` writes it: `-rw-r-----`, `lrwxrwxrwx`, `drwxrwxrwt`.
pub fn mode_string(mode: u32) -> String {
    let kind = match mode & 0o170000 {
        0o040000 => 'd',
        0o120000 => 'l',
        0o010000 => 'p',
        0o140000 => 's',
        0o060000 => 'b',
        0o020000 => 'c',
        _ => '-',
    };
    let mut out = String::from(kind);
    for (shift, special, set, unset) in [
        (6, 0o4000, 's', 'S'),
        (3, 0o2000, 's', 'S'),
        (0, 0o1000, 't', 'T'),
    ] {
        let bits = (mode >> shift) & 7;
        out.push(if bits & 4 != 0 { 'r' } else { '-' });
        out.push(if bits & 2 != 0 { 'w' } else { '-' });
        out.push(match (mode & special != 0, bits & 1 != 0) {
            (true, true) => set,
            (true, false) => unset,
            (false, true) => 'x',
            (false, false) => '-',
        });
    }
    out
}

/// The width of a string in terminal columns.
pub fn width(s: &str) -> usize {
    Span::raw(s).width()
}

fn char_width(c: char) -> usize {
    let mut tmp = [0u8; 4];
    width(c.encode_utf8(&mut tmp))
}

/// The longest prefix of `s` at most `max` columns wide.
fn take_width(s: &str, max: usize) -> &str {
    let mut used = 0;
    for (i, c) in s.char_indices() {
        used += char_width(c);
        if used > max {
            return &s[..i];
        }
    }
    s
}

/// The longest suffix of `s` at most `max` columns wide.
fn take_width_end(s: &str, max: usize) -> &str {
    let mut used = 0;
    for (i, c) in s.char_indices().rev() {
        used += char_width(c);
        if used > max {
            return &s[i + c.len_utf8()..];
        }
    }
    s
}

/// `s` in at most `max` columns, cut at its end (`a long sentence…`).
pub fn ellipsize_end(s: &str, max: usize) -> String {
    if width(s) <= max {
        return s.to_string();
    }
    if max == 0 {
        return String::new();
    }
    format!("{}…", take_width(s, max - 1))
}

/// `s` in at most `max` columns, cut in the middle (`verylong…name.pid`), keeping more of the
/// end, which tells files apart (numbers, extensions).
pub fn ellipsize_middle(s: &str, max: usize) -> String {
    if width(s) <= max {
        return s.to_string();
    }
    if max == 0 {
        return String::new();
    }
    let room = max - 1;
    let left = room / 3;
    let head = take_width(s, left);
    let tail = take_width_end(s, room - width(head));
    format!("{head}…{tail}")
}

/// A path (already escaped) in at most `max` columns. What goes is the middle: the file name
/// and as many of the last directories as fit stay, with the first directory in front when
/// that still leaves two directories before the name (`/home/…/src/app/.vcs/work.lock`,
/// `…/app/.vcs/work.lock`); a file name too long by itself is cut in its middle.
pub fn shorten_path(p: &str, max: usize) -> String {
    if width(p) <= max {
        return p.to_string();
    }
    let parts: Vec<&str> = p.split('/').collect();
    let n = parts.len();
    if n >= 2 {
        // "/home" for an absolute path, "src" for a relative one.
        let head_len = if parts[0].is_empty() { 2 } else { 1 };
        let head = parts[..head_len.min(n)].join("/");
        for keep in (3..n.saturating_sub(head_len)).rev() {
            let s = format!("{head}/…/{}", parts[n - keep..].join("/"));
            if width(&s) <= max {
                return s;
            }
        }
        for keep in (1..n).rev() {
            let s = format!("…/{}", parts[n - keep..].join("/"));
            if width(&s) <= max {
                return s;
            }
        }
    }
    ellipsize_middle(parts[n - 1], max)
}

/// A message in at most `lines` lines of `max` columns, wrapped at spaces; when it does not
/// fit, the last line ends at a word with `…`.
pub fn fit(s: &str, max: usize, lines: usize) -> Vec<String> {
    if lines == 0 || max == 0 {
        return Vec::new();
    }
    let mut out: Vec<String> = wrap_line(&Line::raw(s.to_string()), max, 0)
        .iter()
        .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
        .collect();
    if out.len() > lines {
        out.truncate(lines);
        let last = out.last_mut().expect("at least one line");
        let room = max.saturating_sub(1);
        if width(last) <= room {
            last.push('…');
            return out;
        }
        let cut = take_width(last, room);
        // Back to the last space, unless that would leave little.
        let cut = match cut.rfind(' ') {
            Some(i) if i * 2 >= cut.len() => &cut[..i],
            _ => cut,
        };
        *last = format!("{}…", cut.trim_end());
    }
    out
}

/// Wraps a styled line at `width` columns, breaking at spaces where it can, with continuation
/// lines indented by `indent` columns (a hanging indent: wrapped evidence stays in its column).
pub fn wrap_line(line: &Line<'_>, width: usize, indent: usize) -> Vec<Line<'static>> {
    let width = width.max(1);
    let indent = if indent * 2 > width { 0 } else { indent };
    let cells: Vec<(char, Style, usize)> = line
        .spans
        .iter()
        .flat_map(|s| {
            let style = line.style.patch(s.style);
            s.content.chars().map(move |c| (c, style))
        })
        .map(|(c, st)| (c, st, char_width(c)))
        .collect();
    let mut out: Vec<Vec<(char, Style)>> = Vec::new();
    let mut cur: Vec<(char, Style)> = Vec::new();
    let mut cur_w = 0usize;
    // Index in `cur` of the last space a line may break at, and its column.
    let mut brk: Option<usize> = None;
    let pad = |n: usize| std::iter::repeat_n((' ', Style::new()), n).collect::<Vec<_>>();
    for (c, st, w) in cells {
        if cur_w + w > width && cur_w > indent && c == ' ' {
            // The space itself overflows: break here and drop it.
            out.push(std::mem::replace(&mut cur, pad(indent)));
            cur_w = indent;
            brk = None;
            continue;
        }
        if cur_w + w > width && cur_w > indent {
            match brk {
                Some(i) => {
                    let rest = cur.split_off(i + 1);
                    cur.pop();
                    out.push(std::mem::replace(&mut cur, pad(indent)));
                    cur.extend(rest);
                }
                None => out.push(std::mem::replace(&mut cur, pad(indent))),
            }
            cur_w = cur.iter().map(|(c, _)| char_width(*c)).sum();
            brk = None;
        }
        if c == ' ' && cur_w > indent {
            brk = Some(cur.len());
        }
        cur.push((c, st));
        cur_w += w;
    }
    out.push(cur);
    out.into_iter()
        .map(|cells| {
            let mut spans: Vec<Span<'static>> = Vec::new();
            for (c, st) in cells {
                match spans.last_mut() {
                    Some(last) if last.style == st => last.content.to_mut().push(c),
                    _ => spans.push(Span::styled(c.to_string(), st)),
                }
            }
            Line::from(spans)
        })
        .collect()
}

/// Wraps every line; the indent of each continuation is given by `indent_of` its line.
pub fn wrap_all(
    lines: Vec<Line<'static>>,
    width: u16,
    indent_of: impl Fn(&Line<'_>) -> usize,
) -> Vec<Line<'static>> {
    lines
        .iter()
        .flat_map(|l| wrap_line(l, usize::from(width), indent_of(l)))
        .collect()
}

/// The hanging indent of a line of running text: its leading spaces, plus a marker (a bullet
/// `• ` or a verdict symbol `✗ `) so that wrapped text stays under the text, not the marker.
pub fn text_indent(l: &Line<'_>) -> usize {
    let s: String = l.spans.iter().map(|s| s.content.as_ref()).collect();
    let lead = s.len() - s.trim_start_matches(' ').len();
    let mut rest = s[lead..].chars();
    let marker = match (rest.next(), rest.next()) {
        (Some(c), Some(' ')) if !c.is_alphanumeric() => char_width(c) + 1,
        _ => 0,
    };
    lead + marker
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

/// `""` for one, `"s"` for any other count.
pub fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// ` 3-12/40 ↓ more · j/↓ scroll ` for a view of `shown` lines from `scroll` in `total`, or
/// `None` when everything is in view.
pub fn scroll_hint(scroll: u16, shown: u16, total: usize, keys: &str) -> Option<String> {
    let total16 = u16::try_from(total).unwrap_or(u16::MAX);
    if total16 <= shown || shown == 0 {
        return None;
    }
    let last = scroll.saturating_add(shown).min(total16);
    let more = if last < total16 { " ↓ more" } else { "" };
    Some(format!(
        " {}-{last}/{total}{more} · {keys} scroll ",
        scroll + 1
    ))
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
        assert_eq!(content_lines(b"", 5, 64, 80), vec!["(empty)"]);
        assert_eq!(content_lines(b"4242\n", 5, 64, 80), vec!["4242\\n"]);
        assert_eq!(
            content_lines(b"a\nb\nc\nd\n", 2, 64, 80),
            vec!["a\\n", "b\\n", "… 4 more bytes"]
        );
        let mut swap = b"b0VIM 9.0".to_vec();
        swap.resize(64, 0);
        swap.extend_from_slice(b"\x01\x02ABC");
        let lines = content_lines(&swap, 10, 1024, 80);
        assert!(lines[0].starts_with("000000  62 30 56 49 4d"), "{lines:?}");
        assert!(lines[0].ends_with("b0VIM 9.0......."), "{lines:?}");
        assert_eq!(lines[1], "000010  (zero ×48)");
        assert!(lines[2].starts_with("000040  01 02 41 42 43"), "{lines:?}");
        assert!(lines.iter().all(|l| !l.chars().any(char::is_control)));
    }

    #[test]
    fn a_hex_dump_fits_its_width_with_its_ascii_column_whole() {
        let data: Vec<u8> = (0u8..=255).cycle().skip(1).take(700).collect();
        for cols in [20, 30, 41, 50, 57, 60, 73, 80, 120] {
            let per = hex_bytes_per_line(cols);
            let lines = content_lines(&data, 64, 256, cols);
            for l in &lines {
                assert!(width(l) <= cols, "{cols}: {l:?} is {}", width(l));
            }
            // Every full line ends with its `per` ASCII characters, after the hex.
            let first = &lines[0];
            let ascii: String = data[..per]
                .iter()
                .map(|&c| {
                    if c.is_ascii_graphic() || c == b' ' {
                        c as char
                    } else {
                        '.'
                    }
                })
                .collect();
            assert!(first.ends_with(&format!(" {ascii}")), "{cols}: {first:?}");
            assert_eq!(
                lines[1].split_whitespace().next(),
                Some(&*format!("{per:06x}"))
            );
            assert_eq!(lines.last().unwrap(), "… 444 more bytes", "{cols}");
        }
        assert_eq!(hex_bytes_per_line(200), 16);
        assert_eq!(hex_bytes_per_line(9 + 4 * 16), 16);
        assert_eq!(hex_bytes_per_line(9 + 4 * 16 - 1), 12);
        assert_eq!(hex_bytes_per_line(9 + 4 * 8), 8);
        assert_eq!(hex_bytes_per_line(9 + 4 * 3), 3);
        assert_eq!(hex_bytes_per_line(0), 1);
    }

    #[test]
    fn modes_read_as_ls_writes_them() {
        assert_eq!(mode_string(0o100640), "-rw-r-----");
        assert_eq!(mode_string(0o120777), "lrwxrwxrwx");
        assert_eq!(mode_string(0o041777), "drwxrwxrwt");
        assert_eq!(mode_string(0o104755), "-rwsr-xr-x");
        assert_eq!(mode_string(0o102644), "-rw-r-Sr--");
    }

    fn texts(lines: &[Line<'_>]) -> Vec<String> {
        lines
            .iter()
            .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect()
    }

    #[test]
    fn wrapping_breaks_at_spaces_with_a_hanging_indent() {
        let line = Line::from(vec![
            Span::styled("Evidence  ", Style::new().bold()),
            Span::raw("• no process 4242 on this host"),
        ]);
        let out = wrap_line(&line, 24, 12);
        assert_eq!(
            texts(&out),
            [
                "Evidence  • no process",
                "            4242 on this",
                "            host"
            ]
        );
        // Styles survive the split.
        assert_eq!(out[0].spans[0].style, Style::new().bold());
        assert!(out.iter().all(|l| l.width() <= 24));
        // A line that fits is unchanged; a word longer than the width is cut.
        assert_eq!(texts(&wrap_line(&Line::from("short"), 24, 4)), ["short"]);
        let long = wrap_line(&Line::from("/a/very/long/path/without/spaces"), 10, 2);
        assert!(long.iter().all(|l| l.width() <= 10), "{:?}", texts(&long));
        assert_eq!(
            texts(&long).concat().replace(' ', ""),
            "/a/very/long/path/without/spaces"
        );
        // Degenerate widths do not panic.
        for w in 0..4 {
            let _ = wrap_line(&line, w, 12);
        }
    }

    #[test]
    fn paths_keep_their_last_directories_and_file_name() {
        let p = "/home/me/src/app/.git/index.lock";
        assert_eq!(shorten_path(p, 40), p);
        assert_eq!(shorten_path(p, 31), "/home/…/src/app/.git/index.lock");
        assert_eq!(shorten_path(p, 27), "/home/…/app/.git/index.lock");
        assert_eq!(shorten_path(p, 26), "…/src/app/.git/index.lock");
        assert_eq!(shorten_path(p, 21), "…/app/.git/index.lock");
        assert_eq!(shorten_path(p, 17), "…/.git/index.lock");
        assert_eq!(shorten_path(p, 12), "…/index.lock");
        assert_eq!(shorten_path(p, 10), "index.lock");
        assert_eq!(shorten_path(p, 9), "in…x.lock");
        assert_eq!(shorten_path(p, 1), "…");
        assert_eq!(shorten_path(p, 0), "");
        assert_eq!(
            shorten_path("relative/dir/deep/x.pid", 17),
            "…/dir/deep/x.pid"
        );
        for max in 0..40 {
            assert!(width(&shorten_path(p, max)) <= max, "{max}");
        }
        // Wide characters count two columns.
        assert_eq!(shorten_path("/数据/文件/锁文件.lock", 14), "…/锁文件.lock");
    }

    #[test]
    fn messages_fit_at_a_word() {
        let m = "cancelled: nothing was removed from this directory";
        assert_eq!(fit(m, 80, 1), [m]);
        assert_eq!(fit(m, 30, 1), ["cancelled: nothing was…"]);
        assert_eq!(
            fit(m, 30, 2),
            ["cancelled: nothing was removed", "from this directory"]
        );
        assert_eq!(
            fit(m, 24, 2),
            ["cancelled: nothing was", "removed from this…"]
        );
        assert!(fit(m, 0, 2).is_empty());
        for w in 1..60 {
            for l in fit(m, w, 2) {
                assert!(width(&l) <= w, "{w}: {l}");
            }
        }
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
