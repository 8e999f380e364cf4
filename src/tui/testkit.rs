//! Test support for the UI's tests: findings built with fixed paths, PIDs and times (so
//! frames are deterministic), an app fed a scan of them, keys, frames drawn into ratatui's
//! `TestBackend` and read back as text, and a few readings of the app's state. Each
//! component's tests sit beside it and use these.

#![allow(dead_code)]

use std::path::Path;

pub(super) use std::path::PathBuf;

pub(super) use locksmith::scan::{Finding, ScanError, ScanEvent};
pub(super) use locksmith::{Holder, HolderHow, Judgement, Verdict};
pub(super) use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

pub(super) use super::app::{App, Mode, Options};
pub(super) use super::confirm::{Choice, ConfirmAction};
pub(super) use super::keymap::{self, Context};
pub(super) use super::msg::{Effect, Msg, ReclaimResult, Rejudge, RestoreResult, ScanSummary};
pub(super) use super::queue::Level;
pub(super) use super::rows::Column;
pub(super) use super::theme::Theme;

use locksmith::dialect::{DialectId, EntryKind};
use locksmith::probe::FsInfo;
use locksmith::scan::Identity;
use locksmith::{Owner, ProcessInfo};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;

use super::components::table::ContentWidths;
use super::confirm::ConfirmDialog;
use super::keymap::Action;
use super::popup::Popup;
use super::rows::Row;

/// Readings of the app's state the tests make, from its components.
impl App {
    /// The rows shown, in order (refresh the view first with [`App::refresh`]).
    pub fn visible(&self) -> impl ExactSizeIterator<Item = &Row> + Clone {
        self.table.list.visible()
    }

    pub fn visible_len(&self) -> usize {
        self.table.list.shown()
    }

    /// All listed rows, unfiltered.
    pub fn rows(&self) -> &[Row] {
        self.table.list.rows()
    }

    pub fn cursor(&self) -> Option<usize> {
        self.table.cursor()
    }

    pub fn selected_row(&self) -> Option<&Row> {
        self.table.selected_row()
    }

    pub fn is_marked(&self, path: &Path) -> bool {
        self.table.list.is_marked(path)
    }

    pub fn marked(&self) -> usize {
        self.table.list.marked()
    }

    pub fn popup(&self) -> Option<&dyn Popup> {
        self.layer.get()
    }

    pub fn dialog(&self) -> Option<&ConfirmDialog> {
        self.layer.dialog()
    }

    pub fn help_open(&self) -> bool {
        self.layer.help_open()
    }

    pub fn enabled(&self, action: Action) -> bool {
        self.bar().enabled(action)
    }

    pub fn content_widths(&self) -> &ContentWidths {
        self.table.list.content_widths()
    }

    pub fn filter(&self) -> &str {
        self.table.list.filter()
    }

    pub fn sort(&self) -> Column {
        self.table.list.sort()
    }

    pub fn descending(&self) -> bool {
        self.table.list.descending()
    }

    pub fn verdict_filter(&self) -> Option<Verdict> {
        self.table.list.verdict_filter()
    }
}

/// A judgement with `verdict` and one evidence line. A `stale` one is made the only way
/// there is: by the judge, of a real pid file naming a process that has exited (judged once
/// per test run); its evidence is then replaced for the test.
pub fn judged_as(verdict: Verdict, evidence: String) -> Judgement {
    let mut j = match verdict {
        Verdict::Live => Judgement::live(""),
        Verdict::Free => Judgement::free(""),
        Verdict::Foreign => Judgement::foreign(""),
        Verdict::Unknown => Judgement::unknown(""),
        Verdict::Stale => proven_stale().clone(),
    };
    j.evidence = vec![evidence];
    j
}

pub fn proven_stale() -> &'static Judgement {
    static STALE: std::sync::OnceLock<Judgement> = std::sync::OnceLock::new();
    STALE.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        let path = dir.path().join("gone.pid");
        std::fs::write(&path, format!("{pid}\n")).unwrap();
        let snap = locksmith::probe::Snapshot::take();
        let c = locksmith::dialect::LoadedCandidate::load(&path, &snap).unwrap();
        let j = locksmith::dialect::by_id("pidfile").unwrap().judge(
            &c.candidate(),
            &snap,
            &locksmith::dialect::Windows::default(),
        );
        assert_eq!(j.verdict(), Verdict::Stale, "{j:?}");
        j
    })
}

/// The fixed "now" of every test: 2026-01-01T00:00:00Z.
pub const NOW: i64 = 1_767_225_600_000;

pub fn opts(theme: Theme, readonly: bool) -> Options {
    Options {
        readonly,
        theme,
        state_dir: Some(PathBuf::from("/home/me/.local/state/locksmith")),
        roots: ["/srv", "/var/lib", "/mnt/nfs", "/tmp"]
            .into_iter()
            .map(PathBuf::from)
            .collect(),
    }
}

pub fn finding(path: &str, dialect: &'static str, verdict: Verdict, pid: Option<i64>) -> Finding {
    let evidence = match verdict {
        Verdict::Stale => format!("no process {} on this host (kill: ESRCH)", pid.unwrap_or(0)),
        Verdict::Live => format!(
            "process {} is alive and started before the lock was written",
            pid.unwrap_or(0)
        ),
        Verdict::Foreign => {
            "owner host \"build-7\" is not this host \"laptop\": its PID cannot be checked here"
                .into()
        }
        Verdict::Unknown => "content is not a PID: \"garbage\"".into(),
        Verdict::Free => "no process holds a kernel lock on it (/proc/locks)".into(),
    };
    let host = if verdict == Verdict::Foreign {
        "build-7"
    } else {
        "laptop"
    };
    let mut j = judged_as(verdict, evidence);
    if pid.is_some() {
        j = j.with_owner(Owner {
            pid,
            hostname: Some(host.into()),
            ..Owner::default()
        });
    }
    let ino = path.bytes().map(u64::from).sum();
    Finding {
        path: PathBuf::from(path),
        dialect: DialectId::named(dialect),
        kind: EntryKind::File,
        size: Some(5),
        modified_ms: Some(NOW - 90_000),
        identity: Identity {
            dev: 2049,
            ino,
            size: 5,
            mtime_ns: 0,
            ctime_ns: 0,
        },
        fs: FsInfo::new("ext4", false),
        judgement: j,
        content: format!("{}\n", pid.unwrap_or(0)).into_bytes(),
        link_target: None,
        anchor: None,
    }
}

pub fn live_with_process(path: &str) -> Finding {
    let mut f = finding(path, "pidfile", Verdict::Live, Some(4321));
    f.judgement.process = Some(Box::new(ProcessInfo {
        pid: 4321,
        name: "sleep".into(),
        exe: Some("/usr/bin/sleep".into()),
        cmd: vec!["sleep".into(), "1000".into()],
        user: Some("root".into()),
        start_time: Some("2025-12-31T23:58:00Z".into()),
        container: None,
    }));
    f.judgement.holders = vec![Holder {
        pid: 4321,
        name: Some("sleep".into()),
        how: HolderHow::Flock,
        container: None,
        mode: Some(locksmith::verdict::LockMode::Write),
        range: None,
    }];
    f
}

pub fn vim_unsaved(path: &str) -> Finding {
    let mut f = finding(path, "vim-swap", Verdict::Stale, Some(777));
    f.judgement
        .flags
        .push(locksmith::dialect::vim_swap::unsaved(true));
    f.judgement.owner = Some(Box::new(Owner {
        pid: Some(777),
        hostname: Some("laptop".into()),
        user: Some("me".into()),
        created_at: None,
        detail: Some("editing /work/notes.txt".into()),
    }));
    let mut content = b"b0VIM 9.1".to_vec();
    content.resize(128, 0);
    f.content = content;
    f
}

/// One lock of each verdict.
pub fn sample() -> Vec<Finding> {
    vec![
        live_with_process("/srv/app/web.pid"),
        finding("/srv/app/worker.pid", "pidfile", Verdict::Stale, Some(4242)),
        finding("/var/lib/dpkg/lock", "flock", Verdict::Free, None),
        finding("/mnt/nfs/job.lock", "pidfile", Verdict::Foreign, Some(99)),
        finding("/tmp/.X0-lock", "x11", Verdict::Unknown, None),
    ]
}

/// Feeds a finding of scan `generation` to the app.
pub fn found(app: &mut App, generation: u64, f: Finding) {
    app.update(Msg::Scan {
        generation,
        event: ScanEvent::Found(Box::new(f)),
    });
}

/// Feeds a "permission denied" error at `path` of scan `generation` to the app.
pub fn denied(app: &mut App, generation: u64, path: &str) {
    app.update(Msg::Scan {
        generation,
        event: ScanEvent::Error(ScanError::other(PathBuf::from(path), "permission denied")),
    });
}

/// Feeds the progress of scan `generation` to the app.
pub fn progress(app: &mut App, generation: u64, entries: u64, locks: u64) {
    app.update(Msg::Scan {
        generation,
        event: ScanEvent::Progress { entries, locks },
    });
}

/// Ends scan `generation` with these counts.
pub fn scan_done(app: &mut App, generation: u64, entries: u64, locks: u64, elapsed_ms: u64) {
    app.update(Msg::ScanDone {
        generation,
        summary: ScanSummary {
            entries,
            locks,
            elapsed_ms,
            ..ScanSummary::default()
        },
    });
}

pub fn app_with(findings: Vec<Finding>, o: Options) -> App {
    let mut app = App::new(o, NOW);
    let Effect::Scan { generation } = app.rescan() else {
        panic!("rescan must start a scan")
    };
    for f in findings {
        found(&mut app, generation, f);
    }
    progress(&mut app, generation, 12_345, 5);
    scan_done(&mut app, generation, 12_345, 5, 420);
    app.refresh();
    app
}

pub fn app() -> App {
    app_with(sample(), opts(Theme::COLOR, false))
}

pub fn key(app: &mut App, code: KeyCode) -> Option<Effect> {
    app.update(Msg::Key(KeyEvent::new(code, KeyModifiers::NONE)))
}

pub fn keys(app: &mut App, s: &str) -> Vec<Effect> {
    s.chars()
        .filter_map(|c| key(app, KeyCode::Char(c)))
        .collect()
}

pub fn selected(app: &App) -> String {
    app.selected_row()
        .map(|r| r.finding.path.display().to_string())
        .unwrap_or_default()
}

pub fn order(app: &App) -> Vec<String> {
    app.visible()
        .map(|r| r.finding.path.display().to_string())
        .collect()
}

pub fn draw(app: &mut App, w: u16, h: u16) -> Buffer {
    app.update(Msg::Resize {
        width: w,
        height: h,
    });
    app.refresh();
    let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
    t.draw(|f| f.render_widget(&*app, f.area())).unwrap();
    t.backend().buffer().clone()
}

/// The buffer as text, trailing spaces trimmed.
pub fn screen(buf: &Buffer) -> String {
    let w = usize::from(buf.area.width);
    let mut out = String::new();
    for row in buf.content.chunks(w) {
        let mut line = String::new();
        let mut skip = 0usize;
        for c in row {
            if skip == 0 {
                line.push_str(c.symbol());
            }
            let width = ratatui::text::Span::raw(c.symbol()).width();
            skip = skip.max(width).saturating_sub(1);
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// No cell holds a character a terminal would act on (controls, bidi and zero-width).
pub fn assert_no_raw_control(buf: &Buffer) {
    for c in &buf.content {
        assert!(
            !c.symbol()
                .chars()
                .any(|ch| ch.is_control() || locksmith::text::is_unsafe_char(ch)),
            "raw control {:?} in a cell",
            c.symbol()
        );
    }
}

pub fn line_with<'a>(text: &'a str, needle: &str) -> &'a str {
    text.lines()
        .find(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("no line with {needle:?} in\n{text}"))
}

/// How far the help is scrolled, when it is open.
pub fn help_scroll(app: &App) -> Option<u16> {
    app.help_open().then(|| app.popup().unwrap().scroll())
}

/// The one confirmed reclaim among `effects` (besides the checks the dialogs ask for).
pub fn confirmed(mut effects: Vec<Effect>) -> crate::tui::confirm::ConfirmedAction {
    effects.retain(|e| !matches!(e, Effect::Check(_)));
    match (effects.pop(), effects.is_empty()) {
        (Some(Effect::Reclaim(c)), true) => c,
        other => panic!("expected one confirmed reclaim, got {other:?}"),
    }
}

/// `n` stale pidfiles `/d/000.pid`, `/d/001.pid`, ... owned by PIDs from `first_pid` up.
pub fn stale_pidfiles(n: usize, first_pid: i64) -> Vec<Finding> {
    (0..n)
        .map(|i| {
            finding(
                &format!("/d/{i:03}.pid"),
                "pidfile",
                Verdict::Stale,
                Some(first_pid + i as i64),
            )
        })
        .collect()
}

/// `n` stale pidfiles `/d/000.pid`… and, for the filter, three notes (one stale, one live,
/// one unknown) that sort among them.
pub fn many_with_notes(n: usize) -> Vec<Finding> {
    let mut out = stale_pidfiles(n, 100);
    out.push(finding(
        "/home/me/notes/.a.swp",
        "vim-swap",
        Verdict::Stale,
        Some(7),
    ));
    out.push(live_with_process("/home/me/notes/b.pid"));
    out.push(finding(
        "/home/me/notes/c.lock",
        "pidfile",
        Verdict::Unknown,
        None,
    ));
    out
}

pub fn ctrl(app: &mut App, c: char) -> Option<Effect> {
    app.update(Msg::Key(KeyEvent::new(
        KeyCode::Char(c),
        KeyModifiers::CONTROL,
    )))
}

/// The column of `needle` in `line`, in characters (the sort marker is one character but
/// several bytes).
pub fn column_of(line: &str, needle: &str) -> usize {
    let at = line
        .find(needle)
        .unwrap_or_else(|| panic!("{needle:?} not in {line:?}"));
    line[..at].chars().count()
}
