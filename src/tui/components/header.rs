//! The header line: the roots scanned, the scan's progress (entries walked, locks found, how
//! long it took, the hosts being asked about their foreign locks, the errors), the count of each
//! verdict, the active filters, the marks and read-only. It keeps the scan's [`Progress`]: a
//! scan started with `r` shows its numbers as it goes; a periodic one in the background keeps
//! the last scan's numbers until it ends, and only counts its errors. The header shows the
//! most detailed variant that fits the width, dropping detail first, so the counts of every
//! verdict, the marks and the filters stay at any width.

use locksmith::Verdict;
use locksmith::scan::ScanError;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget};

use super::super::msg::ScanSummary;
use super::super::queue::{Level, Queue};
use super::super::text::{self, plural};
use super::super::theme::Theme;

/// Scan progress, for the header.
#[derive(Debug, Clone, Default)]
pub struct Progress {
    pub generation: u64,
    pub scanning: bool,
    /// The running scan is a periodic one in the background: the header keeps showing the
    /// last scan's numbers, and its errors are only counted.
    pub quiet: bool,
    /// Errors of the running quiet scan (shown when it ends).
    quiet_errors: u64,
    pub entries: u64,
    pub locks: u64,
    pub errors: u64,
    pub elapsed_ms: Option<u64>,
    /// Hosts being asked about their foreign locks now.
    pub asking: Vec<String>,
}

/// The header, and the progress of the scans it shows.
#[derive(Debug, Default)]
pub struct Header {
    pub progress: Progress,
}

impl Header {
    /// A scan starts from scratch: its numbers replace the last scan's as it goes. Returns its
    /// generation.
    pub fn start(&mut self) -> u64 {
        self.progress = Progress {
            generation: self.progress.generation + 1,
            scanning: true,
            ..Progress::default()
        };
        self.progress.generation
    }

    /// A periodic scan starts in the background, unless one runs: returns its generation.
    pub fn start_quietly(&mut self) -> Option<u64> {
        if self.progress.scanning {
            return None;
        }
        let p = &mut self.progress;
        p.generation += 1;
        p.scanning = true;
        p.quiet = true;
        p.quiet_errors = 0;
        Some(p.generation)
    }

    /// The running scan has walked `entries` and found `locks`.
    pub fn walked(&mut self, entries: u64, locks: u64) {
        if !self.progress.quiet {
            self.progress.entries = entries;
            self.progress.locks = locks;
        }
    }

    /// The running scan has found `found` locks so far.
    pub fn found(&mut self, found: usize) {
        self.progress.locks = self.progress.locks.max(found as u64);
    }

    /// The running scan met an error: the status bar says so, unless the scan runs in the
    /// background (it is only counted then).
    pub fn error(&mut self, e: &ScanError, queue: &mut Queue) {
        if self.progress.quiet {
            self.progress.quiet_errors += 1;
            return;
        }
        self.progress.errors += 1;
        let said = format!("{}: {}", text::path(e.path()), text::clean(&e.to_string()));
        queue.say(Level::Warn, said);
    }

    /// The running scan ended as `s` says (the status bar says so when a scan started with `r`
    /// could not run at all).
    pub fn done(&mut self, s: &ScanSummary, queue: &mut Queue) {
        let p = &mut self.progress;
        p.scanning = false;
        let quiet = std::mem::take(&mut p.quiet);
        if quiet && s.failed.is_none() && !s.cancelled {
            p.entries = s.entries;
            p.locks = s.locks;
            p.errors = p.quiet_errors;
        } else if !quiet {
            p.entries = p.entries.max(s.entries);
            p.locks = p.locks.max(s.locks);
        }
        if !quiet || s.failed.is_none() {
            p.elapsed_ms = Some(s.elapsed_ms);
        }
        if let Some(why) = &s.failed
            && !s.cancelled
            && !quiet
        {
            queue.say(Level::Error, format!("scan failed: {}", text::clean(why)));
        }
    }

    /// These hosts are being asked about their foreign locks.
    pub fn asking(&mut self, hosts: Vec<String>) {
        for h in hosts {
            if !self.progress.asking.contains(&h) {
                self.progress.asking.push(h);
            }
        }
    }

    /// They answered (`failed` of them could not): the status bar says so.
    pub fn asked(&mut self, hosts: &[String], failed: usize, queue: &mut Queue) {
        self.progress.asking.retain(|h| !hosts.contains(h));
        let names: Vec<String> = hosts.iter().map(|h| text::clean(h)).collect();
        let text = match failed {
            0 => format!("asked {} over ssh", names.join(", ")),
            n => format!(
                "asked {} over ssh: {n} could not answer (their locks stay foreign; see the details)",
                names.join(", ")
            ),
        };
        let level = if failed == 0 {
            Level::Info
        } else {
            Level::Warn
        };
        queue.say(level, text);
    }

    pub fn render(&self, facts: &Facts<'_>, area: Rect, buf: &mut Buffer) {
        render_header(&self.progress, facts, area, buf);
    }
}

/// What the header shows of the rest of the screen.
pub struct Facts<'a> {
    pub theme: Theme,
    /// Locks listed now (reclaims and re-judging remove some after the scan).
    pub listed: usize,
    pub counts: [usize; 5],
    pub verdict_filter: Option<Verdict>,
    /// The text filter, when one is set and not being typed.
    pub filter: Option<&'a str>,
    pub readonly: bool,
    /// The roots scanned.
    pub roots: &'a [std::path::PathBuf],
    /// How many rows are marked.
    pub marked: usize,
}

/// How much of the roots the header names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Roots {
    All,
    First,
    None,
}

/// The roots as the header names them: every one (`~/src, /run/lock`), the first with how many
/// more (`~/src +5`), or nothing. `$HOME` is written `~`.
fn roots_text(roots: &[std::path::PathBuf], how: Roots) -> Option<String> {
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    let name = |p: &std::path::Path| -> String {
        match home.as_deref().and_then(|h| p.strip_prefix(h).ok()) {
            Some(rest) if home.as_deref() != Some(std::path::Path::new("/")) => {
                if rest.as_os_str().is_empty() {
                    "~".into()
                } else {
                    format!("~/{}", text::path(rest))
                }
            }
            _ => text::path(p),
        }
    };
    match (how, roots) {
        (Roots::None, _) | (_, []) => None,
        (Roots::All, _) => Some(roots.iter().map(|r| name(r)).collect::<Vec<_>>().join(", ")),
        (Roots::First, [one]) => Some(name(one)),
        (Roots::First, [first, rest @ ..]) => Some(format!("{} +{}", name(first), rest.len())),
    }
}

fn counted(n: u64, one: &str, many: &str) -> String {
    format!("{} {}", text::count(n), if n == 1 { one } else { many })
}

/// The header line: the most detailed variant that fits. Detail goes first (the names of the
/// verdicts, every root, seconds, the entries walked, the first root, then the title), so the
/// counts of every verdict, the marks and the active filters stay at any width.
fn render_header(p: &Progress, h: &Facts<'_>, area: Rect, buf: &mut Buffer) {
    let theme = h.theme;
    let scanning = p.scanning && !p.quiet;
    // (title, roots, progress detail 0..=2, verdict names)
    let variants = [
        (true, Roots::All, 2, true),
        (true, Roots::All, 2, false),
        (true, Roots::First, 2, false),
        (true, Roots::First, 1, false),
        (true, Roots::First, 0, false),
        (true, Roots::None, 0, false),
        (false, Roots::None, 0, false),
    ];
    let build = |(title, roots, detail, names): (bool, Roots, u8, bool)| -> Vec<Span<'static>> {
        let mut spans = Vec::new();
        if title {
            spans.push(Span::styled(" locksmith ", theme.title()));
        } else {
            spans.push(Span::raw(" "));
        }
        if let Some(r) = roots_text(h.roots, roots) {
            spans.push(Span::styled(r, theme.label()));
            spans.push(Span::styled(" │ ", theme.dim()));
        }
        let locks = if scanning { p.locks } else { h.listed as u64 };
        let mut parts: Vec<String> = Vec::new();
        if scanning {
            parts.push("scanning…".into());
        }
        if detail >= 1 {
            parts.push(counted(p.entries, "entry", "entries"));
        }
        parts.push(counted(locks, "lock", "locks"));
        if detail >= 2
            && !scanning
            && let Some(ms) = p.elapsed_ms
        {
            parts.push(format!("{:.1} s", ms as f64 / 1000.0));
        }
        let progress = if scanning {
            format!("{} {}", parts[0], parts[1..].join(" · "))
        } else {
            parts.join(" · ")
        };
        spans.push(Span::raw(progress));
        if !p.asking.is_empty() {
            let what = match p.asking.as_slice() {
                [one] => text::clean(one),
                many => format!("{} hosts", many.len()),
            };
            spans.push(Span::raw(format!(" · asking {what}…")));
        }
        if p.errors > 0 {
            spans.push(Span::styled(
                format!(" · {} error{}", p.errors, plural(p.errors as usize)),
                theme.warn(),
            ));
        }
        spans.push(Span::styled(" │", theme.dim()));
        for (v, n) in Verdict::ALL.iter().zip(h.counts) {
            if n > 0 {
                let s = if names {
                    format!(" {} {n} {v}", v.symbol())
                } else {
                    format!(" {}{n}", v.symbol())
                };
                spans.push(Span::styled(s, theme.verdict(*v)));
            }
        }
        if let Some(v) = h.verdict_filter {
            spans.push(Span::styled(" │ showing ", theme.dim()));
            spans.push(Span::styled(
                format!("{} {v}", v.symbol()),
                theme.verdict(v),
            ));
        }
        if let Some(f) = h.filter {
            spans.push(Span::styled(" │ filter ", theme.dim()));
            spans.push(Span::raw(format!("/{}", text::clean(f))));
        }
        if h.marked > 0 {
            spans.push(Span::styled(" │ ", theme.dim()));
            spans.push(Span::styled(format!("{} marked", h.marked), theme.key()));
        }
        if h.readonly {
            spans.push(Span::styled(" │ read-only", theme.warn()));
        }
        spans
    };
    let width = |spans: &[Span<'_>]| spans.iter().map(Span::width).sum::<usize>();
    let spans = variants
        .iter()
        .map(|&v| build(v))
        .find(|s| width(s) <= usize::from(area.width))
        .unwrap_or_else(|| build(variants[variants.len() - 1]));
    Paragraph::new(Line::from(spans)).render(area, buf);
}

#[cfg(test)]
mod tests;
