//! The table view of a [`Report`], in the spirit of `lslocks`: one line per lock with the
//! columns VERDICT, DIALECT, PID, COMMAND, HOST, AGE, PATH, then notes (unsaved vim changes),
//! then a summary line. Each verdict has its own symbol, so the table reads without color;
//! color (ANSI, on the verdict only) is the caller's choice. Every foreign string is escaped.

use std::fmt::Write as _;

use super::{Report, age_secs, human_age};
use crate::dialect::vim_swap;
use crate::outcome::{Action, Outcome};
use crate::scan::Finding;
use crate::text;
use crate::verdict::Verdict;

const HEADERS: [&str; 7] = [
    "VERDICT", "DIALECT", "PID", "COMMAND", "HOST", "AGE", "PATH",
];
/// Longest COMMAND and HOST cells before they are cut with `…`.
const MAX_COMMAND: usize = 20;
const MAX_HOST: usize = 24;
const RESET: &str = "\x1b[0m";

/// The ANSI color of a verdict.
fn color_of(v: Verdict) -> &'static str {
    match v {
        Verdict::Stale => "\x1b[1;31m",
        Verdict::Live => "\x1b[32m",
        Verdict::Free => "\x1b[34m",
        Verdict::Foreign => "\x1b[33m",
        Verdict::Unknown => "\x1b[35m",
    }
}

/// The verdict cell: symbol and name (`✗ stale`).
pub fn verdict_cell(v: Verdict) -> String {
    format!("{} {}", v.symbol(), v.as_str())
}

/// Whom a row names, as raw values: the owner's PID, the command, and the host (or the
/// container, `ctr:web-1`). The table and the terminal UI build their cells from it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Who {
    pub pid: Option<i64>,
    pub command: Option<String>,
    pub host: Option<String>,
}

impl Who {
    pub fn of(f: &Finding) -> Who {
        let j = &f.judgement;
        // A held lock names who holds it now (the PID a file records may be a process that
        // has exited, its lock kept by a child); any other, the owner it records.
        let holding = j
            .process
            .as_ref()
            .map(|p| p.pid as i64)
            .or_else(|| j.holders.iter().find(|h| h.pid > 0).map(|h| h.pid as i64));
        let recorded = j.owner.as_ref().and_then(|o| o.pid);
        let pid = if j.verdict() == Verdict::Live {
            holding.or(recorded)
        } else {
            recorded.or(holding)
        };
        let command = j
            .process
            .as_ref()
            .map(|p| p.name.clone())
            .or_else(|| j.holders.iter().find_map(|h| h.name.clone()));
        // A process in a container is named by its container (`ctr:web-1`).
        let container = j
            .process
            .as_ref()
            .and_then(|p| p.container.as_ref())
            .or_else(|| j.holders.iter().find_map(|h| h.container.as_ref()));
        let host = container
            .map(|c| format!("ctr:{}", c.id.label()))
            .or_else(|| j.owner.as_ref().and_then(|o| o.hostname.clone()));
        Who { pid, command, host }
    }
}

/// The cells of one row, escaped (the verdict cell is uncolored).
pub fn row(f: &Finding, now_ms: i64) -> [String; 7] {
    row_of(f, Who::of(f), now_ms)
}

/// [`row`] with whom it names already known.
pub fn row_of(f: &Finding, who: Who, now_ms: i64) -> [String; 7] {
    let Who { pid, command, host } = who;
    [
        verdict_cell(f.judgement.verdict()),
        text::escape(f.dialect.as_str()),
        pid.map_or_else(|| "-".into(), |p| p.to_string()),
        cut(
            &command.map_or_else(|| "-".into(), |c| text::escape(&c)),
            MAX_COMMAND,
        ),
        cut(
            &host.map_or_else(|| "-".into(), |h| text::escape(&h)),
            MAX_HOST,
        ),
        f.modified_ms
            .map_or_else(|| "-".into(), |m| human_age(age_secs(m, now_ms))),
        text::display_path(&f.path),
    ]
}

/// The table, the notes and the summary line (newline-terminated).
pub fn render(report: &Report, color: bool) -> String {
    let mut out = String::new();
    if !report.findings.is_empty() {
        let rows: Vec<(Verdict, [String; 7])> = report
            .findings
            .iter()
            .map(|f| (f.judgement.verdict(), row(f, report.now_ms)))
            .collect();
        let mut widths = HEADERS.map(width);
        for (_, cells) in &rows {
            for (w, c) in widths.iter_mut().zip(cells) {
                *w = (*w).max(width(c));
            }
        }
        push_line(&mut out, &HEADERS.map(String::from), &widths, None);
        for (v, cells) in &rows {
            push_line(&mut out, cells, &widths, color.then(|| color_of(*v)));
        }
    }
    for f in &report.findings {
        if let Some(hint) = vim_swap::recover_hint(&f.path, &f.content, &f.judgement) {
            let _ = match vim_swap::written_since(&f.path) {
                Some(file) => writeln!(
                    out,
                    "note: {} holds unsaved changes, but {} was written after them (as `{}` then `:w` leaves it): if you recovered them, remove the swap file (--reclaim --include-unsaved); if not, recover first",
                    text::display_path(&f.path),
                    text::display_path(&file),
                    text::escape(&hint)
                ),
                None => writeln!(
                    out,
                    "note: {} holds unsaved changes: recover them with `{}`",
                    text::display_path(&f.path),
                    text::escape(&hint)
                ),
            };
        }
    }
    for f in &report.findings {
        if let Some(w) = report.waiting_of(f) {
            out.push_str(&render_waiting(f, w));
        }
    }
    if let Some(outcomes) = &report.reclaimed {
        out.push_str(&render_reclaimed(outcomes));
    }
    out.push_str(&summary_line(report));
    out.push('\n');
    out
}

/// The notes of one lock's waiters and stuck holder: `waiting for PATH: PID NAME (how, ...)`
/// and `holder of PATH: why`, escaped.
pub fn render_waiting(f: &Finding, w: &super::waiting::Waiting) -> String {
    let mut out = String::new();
    let path = text::display_path(&f.path);
    for x in &w.waiters {
        let _ = writeln!(
            out,
            "waiting for {path}: {}",
            text::escape(&super::waiting::describe_waiter(x))
        );
    }
    if let Some(s) = &w.holder {
        let _ = writeln!(out, "holder of {path}: {}", text::escape(&s.why));
    }
    out
}

/// One line per reclaim outcome: `removed PATH (saved to ...)`, `would remove PATH`,
/// `kept PATH: why`.
pub fn render_reclaimed(outcomes: &[Outcome]) -> String {
    let mut out = String::new();
    for o in outcomes {
        let path = text::display_path(&o.path);
        let _ = match o.action {
            Action::Removed => writeln!(
                out,
                "removed {path}{}",
                o.saved_to
                    .as_ref()
                    .map(|s| format!(" (copy saved to {})", text::display_path(s)))
                    .unwrap_or_default()
            ),
            Action::WouldRemove => writeln!(
                out,
                "would remove {path} ({})",
                text::escape(o.judgement.evidence.first().map_or("", |s| s.as_str()))
            ),
            Action::Kept => writeln!(
                out,
                "kept {path}: {}",
                text::escape(o.error.as_deref().unwrap_or("not stale"))
            ),
        };
    }
    out
}

/// `5 locks: 1 stale, 2 live, 1 free, 0 foreign, 1 unknown; 1 error; 1234 entries in 0.12s`
/// (plus the count of unsaved vim swaps when there are some).
pub fn summary_line(report: &Report) -> String {
    let c = report.counts();
    let mut s = format!(
        "{} lock{}: {} stale, {} live, {} free, {} foreign, {} unknown",
        c.locks,
        if c.locks == 1 { "" } else { "s" },
        c.stale,
        c.live,
        c.free,
        c.foreign,
        c.unknown
    );
    let unsaved = report
        .findings
        .iter()
        .filter(|f| vim_swap::recover_hint(&f.path, &f.content, &f.judgement).is_some())
        .count();
    if unsaved > 0 {
        let _ = write!(
            s,
            " ({unsaved} vim swap{} with unsaved changes: see `vim -r`)",
            if unsaved == 1 { "" } else { "s" }
        );
    }
    let e = report.errors.len();
    let _ = write!(
        s,
        "; {e} error{}; {} entries in {:.2}s",
        if e == 1 { "" } else { "s" },
        report.entries,
        report.elapsed.as_secs_f64()
    );
    if let Some(outcomes) = &report.reclaimed {
        let n = |a: Action| outcomes.iter().filter(|o| o.action == a).count();
        let _ = write!(
            s,
            "; reclaim: {} removed, {} would be removed, {} kept",
            n(Action::Removed),
            n(Action::WouldRemove),
            n(Action::Kept)
        );
    }
    s
}

/// Per-path errors, one line each: `PATH: message`.
pub fn render_errors(report: &Report) -> String {
    let mut out = String::new();
    for e in &report.errors {
        let _ = writeln!(
            out,
            "{}: {}",
            text::display_path(e.path()),
            text::escape(&e.to_string())
        );
    }
    out
}

fn push_line(out: &mut String, cells: &[String; 7], widths: &[usize; 7], color: Option<&str>) {
    for (i, (cell, w)) in cells.iter().zip(widths).enumerate() {
        if i == cells.len() - 1 {
            out.push_str(cell);
            break;
        }
        let pad = w - width(cell);
        match (i, color) {
            (0, Some(c)) => {
                let _ = write!(out, "{c}{cell}{RESET}");
            }
            _ => out.push_str(cell),
        }
        out.extend(std::iter::repeat_n(' ', pad + 2));
    }
    out.push('\n');
}

fn width(s: &str) -> usize {
    s.chars().count()
}

fn cut(s: &str, max: usize) -> String {
    if width(s) <= max {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(max - 1).collect();
        t.push('…');
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judge::Judgement;
    use crate::probe::HostFacts;
    use crate::report::tests::finding;
    use crate::verdict::{Owner, ProcessInfo};
    use std::time::Duration;

    fn report(findings: Vec<Finding>) -> Report {
        Report::new(
            HostFacts::probe(),
            vec!["/x".into()],
            findings,
            vec![crate::scan::ScanError::other(
                "/x/\u{1b}bad",
                "permission denied",
            )],
            42,
            Duration::from_millis(1500),
            1_700_000_300_000,
        )
    }

    #[test]
    fn columns_line_up_and_read_without_color() {
        let mut live = Judgement::live("alive");
        live.owner = Some(Owner {
            pid: Some(4242),
            hostname: Some("box".into()),
            ..Owner::default()
        });
        live.process = Some(ProcessInfo {
            pid: 4242,
            name: "postgres".into(),
            ..ProcessInfo::default()
        });
        let r = report(vec![
            finding("/x/live.pid", "pidfile", live),
            finding("/x/old.lock", "pidfile", Judgement::stale_for_test("gone")),
        ]);
        let text = render(&r, false);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 4, "{text}");
        assert!(lines[0].starts_with("VERDICT  DIALECT  PID   COMMAND   HOST  AGE  PATH"));
        assert_eq!(
            lines[1],
            "✗ stale  pidfile  -     -         -     5m   /x/old.lock"
        );
        assert_eq!(
            lines[2],
            "● live   pidfile  4242  postgres  box   5m   /x/live.pid"
        );
        assert_eq!(
            lines[3],
            "2 locks: 1 stale, 1 live, 0 free, 0 foreign, 0 unknown; 1 error; 42 entries in 1.50s"
        );
        assert!(!text.contains('\x1b'));
        let colored = render(&r, true);
        assert!(colored.contains("\x1b[1;31m✗ stale\x1b[0m"));
        assert_eq!(render_errors(&r), "/x/\\x1bbad: permission denied\n");
    }

    #[test]
    fn a_process_in_a_container_is_named_in_the_host_column() {
        let mut j = Judgement::live("alive");
        j.owner = Some(Owner {
            pid: Some(1),
            ..Owner::default()
        });
        j.process = Some(ProcessInfo {
            pid: 25092,
            name: "puma".into(),
            container: Some(crate::verdict::ContainerInfo {
                id: crate::probe::ContainerId {
                    runtime: "podman".into(),
                    id: "3f2a".repeat(16),
                    name: Some("web-1".into()),
                },
                ns_pid: Some(1),
            }),
            ..ProcessInfo::default()
        });
        let cells = row(&finding("/srv/app/tmp/pids/server.pid", "pidfile", j), 0);
        // Held: the process that holds it, by its PID here (the file records its PID inside).
        assert_eq!(cells[2], "25092");
        assert_eq!(cells[3], "puma");
        assert_eq!(cells[4], "ctr:web-1");
    }

    #[test]
    fn hostile_cells_are_escaped_and_cut() {
        let mut j = Judgement::unknown("garbage");
        j.owner = Some(Owner {
            hostname: Some("\u{1b}[2Jhost-with-a-very-very-long-name".into()),
            ..Owner::default()
        });
        let r = report(vec![finding("/x/a\nb\u{9b}.lock", "pidfile", j)]);
        let text = render(&r, false);
        assert!(
            !text.lines().any(|l| l.chars().any(text::is_unsafe_char)),
            "{text}"
        );
        assert!(text.contains("/x/a\\nb\\u{9b}.lock"));
        assert!(text.contains("  \\x1b[2Jhost-with-a-very…  "), "{text}");
    }

    #[test]
    fn unsaved_vim_swaps_get_the_recover_hint() {
        let mut j = Judgement::stale_for_test("no process 7");
        j.unsaved_changes = Some(true);
        let r = report(vec![finding("/x/.notes.swp", "vim-swap", j)]);
        let text = render(&r, false);
        assert!(
            text.contains(
                "note: /x/.notes.swp holds unsaved changes: recover them with `vim -r /x/.notes.swp`"
            ),
            "{text}"
        );
        assert!(text.contains("(1 vim swap with unsaved changes: see `vim -r`)"));
    }

    #[test]
    fn hostile_text_in_every_part_of_the_table_is_escaped_exactly_once() {
        // CSI, OSC 52 (clipboard), bidi override, C1 CSI, zero-width space, newline.
        const HOSTILE: &str = "\x1b[31m\x1b]52;c;ZXZpbA==\x07\u{202e}\u{9b}\u{200b}\n";
        const SHOWN: &str = "\\x1b[31m\\x1b]52;c;ZXZpbA==\\x07\\u{202e}\\u{9b}\\u{200b}\\n";
        let mut j = Judgement::stale_for_test(format!("owner \"{HOSTILE}\" is gone"));
        j.unsaved_changes = Some(true);
        let swap = format!("/x/.{HOSTILE}.swp");
        let mut r = report(vec![finding(&swap, "vim-swap", j.clone())]);
        r.errors[0] = crate::scan::ScanError::other("/x/bad", format!("cannot read {HOSTILE}"));
        let outcome = |action, error: Option<String>| Outcome {
            path: swap.clone().into(),
            ok: false,
            action,
            saved_to: None,
            error,
            judgement: j.clone(),
        };
        r.reclaimed = Some(vec![
            outcome(
                Action::Kept,
                Some(format!(
                    "it holds unsaved changes: recover them with `vim -r '{swap}'`"
                )),
            ),
            outcome(Action::WouldRemove, None),
        ]);
        let table = render(&r, false);
        let errors = render_errors(&r);
        for out in [&table, &errors] {
            assert!(
                !out.lines().any(|l| l.chars().any(text::is_unsafe_char)),
                "{out}"
            );
            assert!(!out.contains("\\\\"), "escaped twice: {out}");
        }
        let shown_swap = format!("/x/.{SHOWN}.swp");
        assert!(
            table.contains(&format!(
                "note: {shown_swap} holds unsaved changes: recover them with `vim -r '{shown_swap}'`"
            )),
            "{table}"
        );
        assert!(
            table.contains(&format!("kept {shown_swap}: it holds unsaved changes")),
            "{table}"
        );
        assert!(
            table.contains(&format!(
                "would remove {shown_swap} (owner \"{SHOWN}\" is gone)"
            )),
            "{table}"
        );
        assert!(errors.contains(&format!("cannot read {SHOWN}")), "{errors}");
    }
}
