//! State and rendering tests of the UI: keys → actions → state through `App::update`, and
//! frames drawn into ratatui's `TestBackend` (asserted line by line and with insta
//! snapshots). Findings are built here with fixed paths, PIDs and times, so frames are
//! deterministic.

use std::path::PathBuf;

use locksmith::dialect::{DialectId, EntryKind};
use locksmith::probe::FsInfo;
use locksmith::scan::{Finding, Identity, ScanError, ScanEvent};
use locksmith::{Holder, HolderHow, Judgement, Owner, ProcessInfo, Verdict};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::style::Color;

use super::app::{
    App, Column, Effect, Level, Mode, Msg, Options, ReclaimResult, Rejudge, RestoreResult,
    ScanSummary,
};
use super::confirm::{Choice, ConfirmAction};
use super::keymap::{self, Context};
use super::theme::Theme;

/// A judgement with `verdict` and one evidence line. A `stale` one is made the only way
/// there is: by the judge, of a real pid file naming a process that has exited (judged once
/// per test run); its evidence is then replaced for the test.
fn judged_as(verdict: Verdict, evidence: String) -> Judgement {
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

fn proven_stale() -> &'static Judgement {
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
const NOW: i64 = 1_767_225_600_000;

fn opts(theme: Theme, readonly: bool) -> Options {
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

pub(super) fn finding(
    path: &str,
    dialect: &'static str,
    verdict: Verdict,
    pid: Option<i64>,
) -> Finding {
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

fn live_with_process(path: &str) -> Finding {
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

pub(super) fn vim_unsaved(path: &str) -> Finding {
    let mut f = finding(path, "vim-swap", Verdict::Stale, Some(777));
    f.judgement.unsaved_changes = Some(true);
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
fn sample() -> Vec<Finding> {
    vec![
        live_with_process("/srv/app/web.pid"),
        finding("/srv/app/worker.pid", "pidfile", Verdict::Stale, Some(4242)),
        finding("/var/lib/dpkg/lock", "flock", Verdict::Free, None),
        finding("/mnt/nfs/job.lock", "pidfile", Verdict::Foreign, Some(99)),
        finding("/tmp/.X0-lock", "x11", Verdict::Unknown, None),
    ]
}

/// Feeds a finding of scan `generation` to the app.
fn found(app: &mut App, generation: u64, f: Finding) {
    app.update(Msg::Scan {
        generation,
        event: ScanEvent::Found(Box::new(f)),
    });
}

/// Feeds a "permission denied" error at `path` of scan `generation` to the app.
fn denied(app: &mut App, generation: u64, path: &str) {
    app.update(Msg::Scan {
        generation,
        event: ScanEvent::Error(ScanError::other(PathBuf::from(path), "permission denied")),
    });
}

/// Feeds the progress of scan `generation` to the app.
fn progress(app: &mut App, generation: u64, entries: u64, locks: u64) {
    app.update(Msg::Scan {
        generation,
        event: ScanEvent::Progress { entries, locks },
    });
}

/// Ends scan `generation` with these counts.
fn scan_done(app: &mut App, generation: u64, entries: u64, locks: u64, elapsed_ms: u64) {
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

fn app_with(findings: Vec<Finding>, o: Options) -> App {
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

fn app() -> App {
    app_with(sample(), opts(Theme::COLOR, false))
}

fn key(app: &mut App, code: KeyCode) -> Option<Effect> {
    app.update(Msg::Key(KeyEvent::new(code, KeyModifiers::NONE)))
}

fn keys(app: &mut App, s: &str) -> Vec<Effect> {
    s.chars()
        .filter_map(|c| key(app, KeyCode::Char(c)))
        .collect()
}

fn selected(app: &App) -> String {
    app.selected_row()
        .map(|r| r.finding.path.display().to_string())
        .unwrap_or_default()
}

fn order(app: &App) -> Vec<String> {
    app.visible()
        .map(|r| r.finding.path.display().to_string())
        .collect()
}

fn draw(app: &mut App, w: u16, h: u16) -> Buffer {
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
fn screen(buf: &Buffer) -> String {
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
fn assert_no_raw_control(buf: &Buffer) {
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

fn line_with<'a>(text: &'a str, needle: &str) -> &'a str {
    text.lines()
        .find(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("no line with {needle:?} in\n{text}"))
}

/// How far the help is scrolled, when it is open.
fn help_scroll(app: &App) -> Option<u16> {
    app.help_open().then(|| app.popup().unwrap().scroll())
}

/// The one confirmed reclaim among `effects` (besides the checks the dialogs ask for).
fn confirmed(mut effects: Vec<Effect>) -> super::confirm::ConfirmedAction {
    effects.retain(|e| !matches!(e, Effect::Check(_)));
    match (effects.pop(), effects.is_empty()) {
        (Some(Effect::Reclaim(c)), true) => c,
        other => panic!("expected one confirmed reclaim, got {other:?}"),
    }
}

// ----- state -----

#[test]
fn stale_first_then_by_path() {
    let app = app();
    assert_eq!(
        order(&app),
        [
            "/srv/app/worker.pid",
            "/srv/app/web.pid",
            "/mnt/nfs/job.lock",
            "/tmp/.X0-lock",
            "/var/lib/dpkg/lock",
        ]
    );
    assert_eq!(selected(&app), "/srv/app/worker.pid");
}

#[test]
fn the_first_row_stays_selected_while_rows_stream_in_until_the_user_moves() {
    let mut app = App::new(opts(Theme::COLOR, false), NOW);
    let Effect::Scan { generation } = app.rescan() else {
        unreachable!()
    };
    let show = |app: &mut App, f: Finding| {
        found(app, generation, f);
        app.refresh();
    };
    show(&mut app, live_with_process("/srv/app/web.pid"));
    assert_eq!(selected(&app), "/srv/app/web.pid");
    show(
        &mut app,
        finding("/srv/app/worker.pid", "pidfile", Verdict::Stale, Some(1)),
    );
    assert_eq!(
        selected(&app),
        "/srv/app/worker.pid",
        "the stale lock on top is selected"
    );
    keys(&mut app, "j");
    show(
        &mut app,
        finding("/a/first.pid", "pidfile", Verdict::Stale, Some(2)),
    );
    assert_eq!(
        selected(&app),
        "/srv/app/web.pid",
        "after a move, the selection follows"
    );
}

#[test]
fn navigation_keys_move_the_selection_and_clamp() {
    let mut app = app();
    keys(&mut app, "jj");
    assert_eq!(app.cursor(), Some(2));
    keys(&mut app, "k");
    assert_eq!(app.cursor(), Some(1));
    key(&mut app, KeyCode::Down);
    assert_eq!(app.cursor(), Some(2));
    key(&mut app, KeyCode::Up);
    assert_eq!(app.cursor(), Some(1));
    keys(&mut app, "G");
    assert_eq!(app.cursor(), Some(4));
    keys(&mut app, "jjj");
    assert_eq!(app.cursor(), Some(4), "j at the bottom stays");
    keys(&mut app, "g");
    assert_eq!(app.cursor(), Some(0));
    keys(&mut app, "k");
    assert_eq!(app.cursor(), Some(0), "k at the top stays");
    // A table of 3 rows on screen: header, column titles, 3 rows, status, key bar.
    app.update(Msg::Resize {
        width: 80,
        height: 7,
    });
    assert_eq!(app.page(), 3);
    key(&mut app, KeyCode::PageDown);
    assert_eq!(app.cursor(), Some(3));
    key(&mut app, KeyCode::PageDown);
    assert_eq!(app.cursor(), Some(4));
    key(&mut app, KeyCode::PageUp);
    assert_eq!(app.cursor(), Some(1));
    key(&mut app, KeyCode::End);
    assert_eq!(app.cursor(), Some(4));
    key(&mut app, KeyCode::Home);
    assert_eq!(app.cursor(), Some(0));
}

#[test]
fn navigation_on_an_empty_list_does_nothing() {
    let mut app = app_with(Vec::new(), opts(Theme::COLOR, false));
    for c in "jkgG".chars() {
        key(&mut app, KeyCode::Char(c));
    }
    key(&mut app, KeyCode::PageDown);
    assert_eq!(app.cursor(), None);
    assert!(app.selected_row().is_none());
    assert!(keys(&mut app, "d").is_empty());
    assert_eq!(app.status.as_ref().unwrap().text, "no lock selected");
}

#[test]
fn selection_follows_the_path_across_refreshes() {
    let mut app = app();
    keys(&mut app, "j"); // web.pid (live)
    assert_eq!(selected(&app), "/srv/app/web.pid");
    // New stale locks sort before it: it keeps the selection.
    let generation = app.progress.generation;
    for p in ["/a/1.pid", "/a/2.pid"] {
        found(
            &mut app,
            generation,
            finding(p, "pidfile", Verdict::Stale, Some(5)),
        );
    }
    app.refresh();
    assert_eq!(selected(&app), "/srv/app/web.pid");
    assert_eq!(app.cursor(), Some(3));
    // Its owner dies: re-judged stale, it moves up and stays selected.
    let now_stale = finding("/srv/app/web.pid", "pidfile", Verdict::Stale, Some(4321));
    app.update(Msg::Rejudged(vec![(
        PathBuf::from("/srv/app/web.pid"),
        Rejudge::Judged(Box::new(now_stale)),
    )]));
    app.refresh();
    assert_eq!(selected(&app), "/srv/app/web.pid");
    assert_eq!(app.selected_row().unwrap().verdict(), Verdict::Stale);
    assert_eq!(app.cursor(), Some(2));
    // Someone else removes it: the row goes, the selection stays at that position.
    app.update(Msg::Rejudged(vec![(
        PathBuf::from("/srv/app/web.pid"),
        Rejudge::Gone,
    )]));
    app.refresh();
    assert!(!order(&app).contains(&"/srv/app/web.pid".to_string()));
    assert_eq!(app.cursor(), Some(2));
    assert_eq!(selected(&app), "/srv/app/worker.pid");
}

#[test]
fn rejudging_never_adds_rows_and_failures_keep_them() {
    let mut app = app();
    app.update(Msg::Rejudged(vec![
        (
            PathBuf::from("/new/x.pid"),
            Rejudge::Judged(Box::new(finding(
                "/new/x.pid",
                "pidfile",
                Verdict::Stale,
                Some(1),
            ))),
        ),
        (
            PathBuf::from("/srv/app/worker.pid"),
            Rejudge::Failed("permission denied".into()),
        ),
    ]));
    app.refresh();
    assert_eq!(app.visible_len(), 5);
    assert!(order(&app).contains(&"/srv/app/worker.pid".to_string()));
}

#[test]
fn filter_narrows_incrementally_and_esc_clears() {
    let mut app = app();
    assert!(keys(&mut app, "/").is_empty());
    assert!(matches!(app.mode, Mode::Filter));
    // Letters bound in the table are text here: q does not quit, d does not reclaim.
    assert!(keys(&mut app, "srv").is_empty());
    assert_eq!(app.filter, "srv");
    assert_eq!(order(&app), ["/srv/app/worker.pid", "/srv/app/web.pid"]);
    keys(&mut app, "/web");
    assert!(order(&app).is_empty(), "{:?}", order(&app));
    for _ in 0..4 {
        key(&mut app, KeyCode::Backspace);
    }
    keys(&mut app, "q");
    assert!(order(&app).is_empty());
    key(&mut app, KeyCode::Backspace);
    assert_eq!(app.visible_len(), 2);
    // Filter matches dialect, host and pid too, case-insensitively.
    key(&mut app, KeyCode::Esc);
    assert!(matches!(app.mode, Mode::Table));
    assert_eq!(app.filter, "");
    assert_eq!(app.visible_len(), 5);
    keys(&mut app, "/X11");
    assert_eq!(order(&app), ["/tmp/.X0-lock"]);
    key(&mut app, KeyCode::Esc);
    keys(&mut app, "/build-7");
    assert_eq!(order(&app), ["/mnt/nfs/job.lock"]);
    key(&mut app, KeyCode::Esc);
    keys(&mut app, "/4242");
    assert_eq!(order(&app), ["/srv/app/worker.pid"]);
    // Enter keeps the filter; in the table, Esc clears it, and never quits.
    key(&mut app, KeyCode::Enter);
    assert!(matches!(app.mode, Mode::Table));
    assert_eq!(app.visible_len(), 1);
    assert!(key(&mut app, KeyCode::Esc).is_none());
    assert_eq!(app.visible_len(), 5);
    assert!(key(&mut app, KeyCode::Esc).is_none());
}

#[test]
fn sort_cycles_columns_and_inverts() {
    let mut app = app();
    assert_eq!(app.sort, Column::Verdict);
    keys(&mut app, "s");
    assert_eq!(app.sort, Column::Dialect);
    assert_eq!(
        order(&app)[0],
        "/var/lib/dpkg/lock",
        "flock < pidfile < x11"
    );
    assert_eq!(order(&app)[4], "/tmp/.X0-lock");
    keys(&mut app, "S");
    assert!(app.descending);
    assert_eq!(order(&app)[0], "/tmp/.X0-lock");
    keys(&mut app, "S");
    keys(&mut app, "s");
    assert_eq!(app.sort, Column::Pid);
    assert_eq!(order(&app)[0], "/tmp/.X0-lock", "no pid first");
    assert_eq!(order(&app)[4], "/srv/app/web.pid", "4321 > 4242 > 99");
    keys(&mut app, "sssss");
    assert_eq!(app.sort, Column::Verdict, "the cycle wraps");
    assert_eq!(order(&app)[0], "/srv/app/worker.pid");
}

#[test]
fn tab_cycles_the_verdict_filter() {
    let mut app = app();
    let mut seen = Vec::new();
    for _ in 0..6 {
        key(&mut app, KeyCode::Tab);
        seen.push((app.verdict_filter, app.visible_len()));
        if let Some(v) = app.verdict_filter {
            assert!(app.visible().all(|r| r.verdict() == v));
        }
    }
    assert_eq!(
        seen,
        [
            (Some(Verdict::Stale), 1),
            (Some(Verdict::Live), 1),
            (Some(Verdict::Foreign), 1),
            (Some(Verdict::Unknown), 1),
            (Some(Verdict::Free), 1),
            (None, 5),
        ]
    );
    key(&mut app, KeyCode::BackTab);
    assert_eq!(app.verdict_filter, Some(Verdict::Free));
}

#[test]
fn the_dialog_defaults_to_no() {
    let mut app = app();
    assert_eq!(selected(&app), "/srv/app/worker.pid");
    let effects = keys(&mut app, "d");
    assert!(
        matches!(effects.as_slice(), [Effect::Check(_)]),
        "{effects:?}"
    );
    let Some(d) = app.dialog() else {
        panic!("d on a stale lock opens the dialog")
    };
    assert_eq!(d.highlight, Choice::No);
    // Enter right after d takes the highlighted choice: No.
    assert!(key(&mut app, KeyCode::Enter).is_none());
    assert!(matches!(app.mode, Mode::Table));
    assert!(
        app.status
            .as_ref()
            .unwrap()
            .text
            .contains("nothing was removed")
    );
    assert!(!app.reclaiming);
    // n and Esc cancel too, and q in the dialog does not quit.
    for k in [KeyCode::Char('n'), KeyCode::Esc, KeyCode::Char('q')] {
        keys(&mut app, "d");
        assert!(key(&mut app, k).is_none(), "{k:?}");
        assert!(matches!(app.mode, Mode::Table), "{k:?}");
    }
    // Moving the highlight and back keeps No.
    keys(&mut app, "d");
    key(&mut app, KeyCode::Left);
    key(&mut app, KeyCode::Right);
    assert!(key(&mut app, KeyCode::Enter).is_none());
    keys(&mut app, "d");
    key(&mut app, KeyCode::Tab);
    key(&mut app, KeyCode::Tab);
    assert!(key(&mut app, KeyCode::Enter).is_none());
    assert_eq!(app.visible_len(), 5);
}

#[test]
fn yes_confirms_the_reclaim_of_the_selected_lock() {
    let mut app = app();
    keys(&mut app, "d");
    let effects = keys(&mut app, "y");
    let [Effect::Reclaim(c)] = effects.as_slice() else {
        panic!("y must confirm: {effects:?}")
    };
    assert_eq!(c.findings().len(), 1);
    assert_eq!(c.findings()[0].path, PathBuf::from("/srv/app/worker.pid"));
    assert!(!c.forced());
    assert!(!c.include_unsaved());
    assert!(app.reclaiming);
    // A second d while it runs is refused.
    assert!(keys(&mut app, "d").is_empty());
    assert!(matches!(app.mode, Mode::Table));
    assert!(
        app.status
            .as_ref()
            .unwrap()
            .text
            .contains("already running")
    );
    // Tab then Enter is yes as well.
    app.reclaiming = false;
    keys(&mut app, "d");
    key(&mut app, KeyCode::Tab);
    assert!(matches!(
        key(&mut app, KeyCode::Enter),
        Some(Effect::Reclaim(_))
    ));
}

#[test]
fn live_and_free_locks_are_never_reclaimed_and_the_status_says_why() {
    let mut app = app();
    let cases = [
        (1, "/srv/app/web.pid", "is live"),
        (4, "/var/lib/dpkg/lock", "is free"),
    ];
    for (i, path, why) in cases {
        keys(&mut app, "g");
        for _ in 0..i {
            keys(&mut app, "j");
        }
        assert_eq!(selected(&app), path);
        assert!(keys(&mut app, "d").is_empty());
        assert!(matches!(app.mode, Mode::Table), "{path}");
        let s = app.status.clone().unwrap();
        assert_eq!(s.level, Level::Warn);
        assert!(s.text.contains(why), "{path}: {}", s.text);
        let name = path.rsplit('/').next().unwrap();
        assert!(
            s.text
                .starts_with(&format!("not reclaimable: {name} {why}")),
            "{}",
            s.text
        );
    }
    // A lock not proven stale (foreign, unknown) is removed only on a person's word, in a
    // dialog of its own that defaults to No.
    for (i, path) in [(2, "/mnt/nfs/job.lock"), (3, "/tmp/.X0-lock")] {
        keys(&mut app, "g");
        for _ in 0..i {
            keys(&mut app, "j");
        }
        assert_eq!(selected(&app), path);
        keys(&mut app, "d");
        let Some(d) = app.dialog() else {
            panic!("d on {path} opens the dialog")
        };
        assert!(matches!(d.action, ConfirmAction::Force(_)));
        assert_eq!(d.highlight, Choice::No);
        // Enter keeps the default: No.
        assert!(key(&mut app, KeyCode::Enter).is_none());
        assert!(matches!(app.mode, Mode::Table));
        keys(&mut app, "d");
        let c = confirmed(keys(&mut app, "y"));
        assert!(c.forced());
        assert_eq!(c.findings()[0].path, PathBuf::from(path));
        app.reclaiming = false;
    }
}

#[test]
fn reclaim_all_takes_the_stale_locks_shown_and_keeps_unsaved_swaps() {
    let mut findings = sample();
    findings.push(finding(
        "/srv/app/other.pid",
        "pidfile",
        Verdict::Stale,
        Some(7),
    ));
    findings.push(vim_unsaved("/work/.notes.txt.swp"));
    let mut app = app_with(findings, opts(Theme::COLOR, false));
    keys(&mut app, "D");
    let Some(d) = app.dialog() else {
        panic!("D opens the dialog")
    };
    assert_eq!(d.highlight, Choice::No);
    let ConfirmAction::Reclaim { findings, kept, .. } = &d.action else {
        panic!("a reclaim")
    };
    let paths: Vec<_> = findings
        .iter()
        .map(|f| f.path.display().to_string())
        .collect();
    assert_eq!(paths, ["/srv/app/other.pid", "/srv/app/worker.pid"]);
    assert_eq!(kept.len(), 1);
    // The dialog lists each lock with its evidence, and the one kept.
    let text = screen(&draw(&mut app, 100, 30));
    for needle in [
        "Reclaim 2 stale locks?",
        "/srv/app/other.pid",
        "no process 7 on this host",
        "/srv/app/worker.pid",
        "no process 4242 on this host",
        "Kept: 1 vim swap file with unsaved changes",
        "/work/.notes.txt.swp",
    ] {
        assert!(text.contains(needle), "{needle:?} missing in\n{text}");
    }
    assert!(key(&mut app, KeyCode::Enter).is_none());
    // With a filter, only what is shown.
    keys(&mut app, "/other");
    key(&mut app, KeyCode::Enter);
    keys(&mut app, "D");
    let c = confirmed(keys(&mut app, "y"));
    assert_eq!(c.findings().len(), 1);
    assert_eq!(c.findings()[0].path, PathBuf::from("/srv/app/other.pid"));
    // Nothing stale shown: no dialog.
    app.reclaiming = false;
    key(&mut app, KeyCode::Esc);
    keys(&mut app, "/web");
    key(&mut app, KeyCode::Enter);
    keys(&mut app, "D");
    assert!(matches!(app.mode, Mode::Table));
    assert!(
        app.status
            .as_ref()
            .unwrap()
            .text
            .contains("no stale lock shown")
    );
}

#[test]
fn a_single_unsaved_swap_can_be_reclaimed_after_the_warning() {
    let mut app = app_with(
        vec![vim_unsaved("/work/.notes.txt.swp")],
        opts(Theme::COLOR, false),
    );
    keys(&mut app, "d");
    let c = confirmed(keys(&mut app, "y"));
    assert!(c.include_unsaved(), "the user saw the warning");
}

#[test]
fn readonly_disables_every_reclaim() {
    let mut app = app_with(sample(), opts(Theme::COLOR, true));
    for k in ["d", "D", "F"] {
        assert!(keys(&mut app, k).is_empty());
        assert!(matches!(app.mode, Mode::Table), "{k}");
        assert!(
            app.status.as_ref().unwrap().text.contains("read-only"),
            "{k}"
        );
    }
    let text = screen(&draw(&mut app, 120, 10));
    let bar = text.lines().last().unwrap();
    assert!(!bar.contains("reclaim"), "{bar}");
    assert!(bar.contains("filter"), "{bar}");
    assert!(text.lines().next().unwrap().contains("read-only"));
}

#[test]
fn quit_keys() {
    let mut app = app();
    assert!(matches!(keys(&mut app, "q").as_slice(), [Effect::Quit]));
    let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
    for mode in ["", "/", "?", "d"] {
        let mut app = app_with(sample(), opts(Theme::COLOR, false));
        keys(&mut app, mode);
        assert!(
            matches!(app.update(Msg::Key(ctrl_c)), Some(Effect::Quit)),
            "Ctrl-C after {mode:?}"
        );
    }
}

#[test]
fn help_opens_and_closes() {
    let mut app = app();
    keys(&mut app, "?");
    assert_eq!(help_scroll(&app), Some(0));
    keys(&mut app, "jj");
    assert_eq!(help_scroll(&app), Some(2));
    assert_eq!(
        app.cursor(),
        Some(0),
        "scrolling the help does not move the table"
    );
    assert!(
        keys(&mut app, "q").is_empty(),
        "q closes the help, it does not quit"
    );
    assert!(matches!(app.mode, Mode::Table));
    keys(&mut app, "?");
    key(&mut app, KeyCode::Esc);
    assert!(matches!(app.mode, Mode::Table));
}

#[test]
fn scan_events_stream_in_and_a_complete_scan_drops_what_it_did_not_find() {
    let mut app = app();
    let old = app.progress.generation;
    let Some(Effect::Scan { generation }) = keys(&mut app, "r").pop() else {
        panic!("r rescans")
    };
    assert_eq!(generation, old + 1);
    assert!(app.progress.scanning);
    assert_eq!(app.visible_len(), 5, "rows stay while the new scan runs");
    // Events of the old scan are ignored.
    found(
        &mut app,
        old,
        finding("/old/x.pid", "pidfile", Verdict::Stale, Some(3)),
    );
    found(
        &mut app,
        generation,
        finding("/srv/app/worker.pid", "pidfile", Verdict::Stale, Some(4242)),
    );
    denied(&mut app, generation, "/root/secret");
    progress(&mut app, generation, 77, 1);
    assert_eq!(app.progress.entries, 77);
    assert_eq!(app.progress.errors, 1);
    scan_done(&mut app, generation, 80, 1, 10);
    app.refresh();
    assert!(!app.progress.scanning);
    assert_eq!(order(&app), ["/srv/app/worker.pid"]);
}

#[test]
fn a_scan_that_can_read_no_root_is_shown_and_drops_the_rows_of_the_removed_roots() {
    let mut app = app();
    let Effect::Scan { generation } = app.rescan() else {
        unreachable!()
    };
    app.update(Msg::ScanDone {
        generation,
        summary: ScanSummary {
            failed: Some("no root could be read (/nope)".into()),
            ..ScanSummary::default()
        },
    });
    app.refresh();
    // The roots are gone, and their locks with them: no row stays to be reclaimed in vain.
    assert_eq!(app.visible_len(), 0);
    let s = app.status.clone().unwrap();
    assert_eq!(s.level, Level::Error);
    assert!(s.text.contains("no root could be read"));
}

#[test]
fn reclaim_outcomes_update_rows_and_status() {
    let mut app = app();
    app.reclaiming = true;
    app.update(Msg::Reclaimed(vec![ReclaimResult {
        path: PathBuf::from("/srv/app/worker.pid"),
        removed: true,
        gone: false,
        message: "removed /srv/app/worker.pid (copy: /s/saved/1)".into(),
        judgement: None,
    }]));
    app.refresh();
    assert!(!app.reclaiming);
    assert_eq!(app.visible_len(), 4);
    assert_eq!(app.status.clone().unwrap().level, Level::Info);
    assert!(
        app.status
            .clone()
            .unwrap()
            .text
            .starts_with("removed /srv/app/worker.pid")
    );
    // Refused: it became live in the meantime; the row shows the new verdict.
    let mut app = self::app();
    let became_live = Judgement::live("process 4242 is alive");
    app.update(Msg::Reclaimed(vec![ReclaimResult {
        path: PathBuf::from("/srv/app/worker.pid"),
        removed: false,
        gone: false,
        message: "it is live now: process 4242 is alive".into(),
        judgement: Some(became_live),
    }]));
    app.refresh();
    assert_eq!(app.visible_len(), 5);
    let row = app
        .visible()
        .find(|r| r.finding.path.ends_with("worker.pid"))
        .unwrap();
    assert_eq!(row.verdict(), Verdict::Live);
    let s = app.status.clone().unwrap();
    assert_eq!(s.level, Level::Error);
    assert!(
        s.text.contains("not removed") && s.text.contains("live now"),
        "{}",
        s.text
    );
}

// ----- rendering -----

#[test]
fn table_shows_every_verdict_with_symbol_and_color() {
    let mut app = app();
    let buf = draw(&mut app, 120, 12);
    let text = screen(&buf);
    for (path, v) in [
        ("/srv/app/worker.pid", Verdict::Stale),
        ("/srv/app/web.pid", Verdict::Live),
        ("/mnt/nfs/job.lock", Verdict::Foreign),
        ("/tmp/.X0-lock", Verdict::Unknown),
        ("/var/lib/dpkg/lock", Verdict::Free),
    ] {
        let line = line_with(&text, path);
        assert!(line.contains(&format!("{} {}", v.symbol(), v)), "{line}");
        // The verdict cell is colored with the verdict's color.
        let y = text.lines().position(|l| l.contains(path)).unwrap() as u16;
        let x = line
            .chars()
            .position(|c| c == v.symbol().chars().next().unwrap())
            .unwrap() as u16;
        assert_eq!(
            buf[(x, y)].fg,
            Theme::COLOR.verdict(v).fg.unwrap(),
            "{path}"
        );
    }
    assert!(
        line_with(&text, "web.pid").contains("sleep 1000")
            || line_with(&text, "web.pid").contains("sleep")
    );
    assert!(
        line_with(&text, "worker.pid").starts_with("▶"),
        "the selection is marked"
    );
    insta::assert_snapshot!("table_120x12", text);
}

#[test]
fn no_color_keeps_symbols_and_drops_colors() {
    let mut app = app_with(sample(), opts(Theme::MONO, false));
    let buf = draw(&mut app, 120, 12);
    assert!(
        buf.content
            .iter()
            .all(|c| c.fg == Color::Reset && c.bg == Color::Reset),
        "no colors at all"
    );
    let text = screen(&buf);
    for v in Verdict::ALL {
        assert!(text.contains(&format!("{} {}", v.symbol(), v)), "{v}");
    }
    let mut colored = self::app();
    assert_eq!(
        screen(&draw(&mut colored, 120, 12)),
        text,
        "same text either way"
    );
}

#[test]
fn table_at_80x24() {
    let mut app = app();
    let text = screen(&draw(&mut app, 80, 24));
    assert!(
        text.lines()
            .next()
            .unwrap()
            .contains("12,345 entries · 5 locks · 0.4 s")
    );
    insta::assert_snapshot!("table_80x24", text);
}

#[test]
fn long_paths_keep_their_end() {
    let long = format!("/very{}/deep/app.pid", "/nested".repeat(30));
    let mut app = app_with(
        vec![finding(&long, "pidfile", Verdict::Stale, Some(1))],
        opts(Theme::COLOR, false),
    );
    let text = screen(&draw(&mut app, 80, 6));
    let row = line_with(&text, "app.pid");
    assert!(row.ends_with("/nested/nested/deep/app.pid"), "{text}");
    assert!(
        row.contains("/very/…/nested/"),
        "the first directory stays:\n{text}"
    );
}

#[test]
fn detail_pane_shows_the_evidence_owner_process_and_escaped_content() {
    let mut app = app();
    keys(&mut app, "j"); // the live web.pid
    key(&mut app, KeyCode::Enter);
    assert!(app.show_details);
    let text = screen(&draw(&mut app, 100, 30));
    for needle in [
        "Details: web.pid",
        "Path      /srv/app/web.pid",
        "Verdict   ● live",
        "Evidence  • process 4321 is alive",
        "Owner     pid 4321 · host laptop",
        "Process   pid 4321 sleep · user root · started 2025-12-31T23:58:00Z",
        "sleep 1000",
        "Holders   • pid 4321 sleep (flock write)",
        "FS        ext4 (local)",
        "Content   4321\\n",
    ] {
        assert!(text.contains(needle), "{needle:?} missing in\n{text}");
    }
    insta::assert_snapshot!("detail_100x30", text);
    key(&mut app, KeyCode::Enter);
    assert!(!screen(&draw(&mut app, 100, 30)).contains("Details:"));
}

#[test]
fn hostile_text_from_lock_files_never_reaches_the_terminal_raw() {
    let mut f = finding("/tmp/evil\x1b[2J.pid", "pidfile", Verdict::Stale, Some(1));
    f.content = "1 written by the build script\x1b]0;pwned\x07\r\n\u{9b}31m".into();
    f.judgement.owner.as_mut().unwrap().hostname = Some("h\x1b[31mx\u{202e}".into());
    f.judgement.evidence.push("content says \"\x1b[5m\"".into());
    let mut app = app_with(vec![f], opts(Theme::COLOR, false));
    key(&mut app, KeyCode::Enter);
    let buf = draw(&mut app, 120, 30);
    assert_no_raw_control(&buf);
    let text = screen(&buf);
    assert!(text.contains("/tmp/evil\\x1b[2J.pid"), "{text}");
    assert!(
        text.contains("1 written by the build script\\x1b]0;pwned\\x07\\r\\n"),
        "{text}"
    );
    assert!(text.contains("\\u{9b}31m"), "{text}");
    keys(&mut app, "d");
    let buf = draw(&mut app, 120, 30);
    assert!(
        buf.content
            .iter()
            .all(|c| !c.symbol().chars().any(char::is_control))
    );
}

#[test]
fn a_judged_lock_files_hostile_text_is_escaped_exactly_once() {
    use std::os::unix::ffi::OsStrExt;
    let dir = tempfile::tempdir().unwrap();
    // The name has an escape sequence, a bidi override and a byte that is not UTF-8; the
    // owner's host name CSI, OSC 52, a bidi override, a C1 CSI, a zero-width space and a
    // newline.
    let path = dir.path().join(std::ffi::OsStr::from_bytes(
        b"evil\x1b[31m\xe2\x80\xae\xff.lock",
    ));
    let hostile = "\x1b[31m\x1b]52;c;ZXZpbA==\x07\u{202e}\u{9b}\u{200b}\nbox";
    let record = serde_json::json!({
        "pid": 1,
        "hostname": hostile,
        "token": "t",
        "tool": "locksmith/0.1",
    });
    std::fs::write(&path, record.to_string()).unwrap();
    let snap = locksmith::probe::Snapshot::take();
    let config = locksmith::config::Settings::embedded().scan;
    let f = locksmith::scan::judge_path(&path, &snap, &config)
        .unwrap()
        .expect("an engine record is a lock");
    // The model keeps the raw text.
    let owner = f.judgement.owner.as_ref().unwrap();
    assert_eq!(owner.hostname.as_deref(), Some(hostile));
    let mut app = app_with(vec![f], opts(Theme::COLOR, false));
    key(&mut app, KeyCode::Enter);
    let buf = draw(&mut app, 200, 40);
    assert_no_raw_control(&buf);
    let text = screen(&buf);
    let shown = "\\x1b[31m\\x1b]52;c;ZXZpbA==\\x07\\u{202e}\\u{9b}\\u{200b}\\nbox";
    assert!(text.contains(&format!("host {shown}")), "{text}");
    assert!(text.contains("evil\\x1b[31m\\u{202e}\\xff.lock"), "{text}");
    // Escaped once: no doubled backslash, no Rust-style `\u{1b}` (the raw content, which
    // holds backslashes of its own, is the only line with `\\`).
    for needle in ["Path ", "Evidence", "Owner", "foreign locksmith"] {
        let line = line_with(&text, needle);
        assert!(!line.contains("\\\\"), "{line}");
        assert!(!line.contains("\\u{1b}"), "{line}");
    }
    assert!(line_with(&text, "Evidence").contains(shown), "{text}");
}

#[test]
fn vim_swap_with_unsaved_changes_warns_and_shows_vim_r() {
    // The hint names the swap file, ours, naming the file beside it (as the report does).
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path().canonicalize().unwrap();
    std::fs::write(dir.join("notes.txt"), "old\n").unwrap();
    let swap = dir.join(".notes.txt.swp");
    let hint = format!("vim -r {}", swap.display());
    let mut f = vim_unsaved(swap.to_str().unwrap());
    let mut block0 = f.content.clone();
    block0.resize(1024, 0);
    let name = dir.join("notes.txt");
    let name = name.as_os_str().as_encoded_bytes();
    block0[108..108 + name.len()].copy_from_slice(name);
    block0[1007] = 0x55;
    std::fs::write(&swap, &block0).unwrap();
    f.content = block0;
    let mut app = app_with(vec![f], opts(Theme::COLOR, false));
    key(&mut app, KeyCode::Enter);
    let text = screen(&draw(&mut app, 120, 30));
    assert!(text.contains("UNSAVED CHANGES"), "{text}");
    assert!(text.contains(&hint), "{text}");
    // Binary content as a hex dump, with the zero run folded.
    assert!(text.contains("000000  62 30 56 49 4d"), "{text}");
    assert!(text.contains("(zero ×"), "{text}");
    keys(&mut app, "d");
    let text = screen(&draw(&mut app, 120, 30));
    assert!(text.contains("UNSAVED CHANGES"), "{text}");
    assert!(text.contains(&hint), "{text}");
    // One it cannot check: no command, and why.
    let mut app = app_with(
        vec![vim_unsaved("/nonexistent/.notes.txt.swp")],
        opts(Theme::COLOR, false),
    );
    key(&mut app, KeyCode::Enter);
    let text = screen(&draw(&mut app, 120, 30));
    assert!(text.contains("Not for you to recover: "), "{text}");
    assert!(!text.contains("vim -r"), "{text}");
}

#[test]
fn reclaim_dialog_says_what_and_why_and_highlights_no() {
    let mut app = app();
    keys(&mut app, "d");
    app.update(Msg::Checked(vec![(
        PathBuf::from("/srv/app/worker.pid"),
        None,
    )]));
    let buf = draw(&mut app, 80, 24);
    let text = screen(&buf);
    for needle in [
        "Reclaim this stale lock?",
        "/srv/app/worker.pid",
        "Why it is stale:",
        "• no process 4242 on this host (kill: ESRCH)",
        "judged again just before removal",
        "/home/me/.local/state/locksmith",
        "[ No ]",
    ] {
        assert!(text.contains(needle), "{needle:?} missing in\n{text}");
    }
    assert!(!text.contains("[ Yes ]"));
    // The key bar is the dialog's.
    assert!(text.lines().last().unwrap().starts_with("y yes"));
    insta::assert_snapshot!("dialog_80x24", text);
    key(&mut app, KeyCode::Left);
    let text = screen(&draw(&mut app, 80, 24));
    assert!(text.contains("[ Yes ]") && !text.contains("[ No ]"));
}

#[test]
fn force_dialog_states_the_risk() {
    let mut app = app();
    keys(&mut app, "jj");
    assert_eq!(selected(&app), "/mnt/nfs/job.lock");
    keys(&mut app, "d");
    let text = screen(&draw(&mut app, 90, 30));
    assert!(text.contains("NOT PROVEN STALE"), "{text}");
    assert!(text.contains("is foreign, not stale"), "{text}");
    assert!(text.contains("RISK"), "{text}");
    assert!(text.contains("build-7"), "{text}");
}

#[test]
fn help_is_generated_from_the_key_map() {
    let mut app = app();
    keys(&mut app, "?");
    let text = screen(&draw(&mut app, 100, 120));
    // Every binding of every context, each on its line before the help wraps them.
    let lines: Vec<String> = super::popup::help::lines(Theme::COLOR, super::popup::ALL)
        .iter()
        .map(|l| l.to_string())
        .collect();
    let contexts = [
        Context::Table,
        Context::Detail,
        Context::Filter,
        Context::Find,
    ]
    .into_iter()
    .chain(super::popup::ALL.iter().map(|&k| Context::Popup(k)));
    for ctx in contexts {
        // (The help scrolls: its end is below the screen.)
        assert!(
            lines.iter().any(|l| l.contains(ctx.title())),
            "{:?} missing from the help",
            ctx.title()
        );
        for b in ctx.own() {
            assert!(
                lines
                    .iter()
                    .any(|l| l.contains(&b.label()) && l.ends_with(b.long)),
                "{:?} missing from the help",
                b.long
            );
        }
    }
    for v in Verdict::ALL {
        let legend = format!("{} {}", v.symbol(), v);
        assert!(lines.iter().any(|l| l.contains(&legend)), "{legend:?}");
    }
    insta::assert_snapshot!("help_100x120", text);
    // Small: scrolls instead of overflowing, and no further than the end.
    let _ = draw(&mut app, 60, 12);
    keys(&mut app, "jjjjj");
    let small = screen(&draw(&mut app, 60, 12));
    assert!(
        !small.contains("Lock table"),
        "scrolled past the first title:\n{small}"
    );
    for _ in 0..500 {
        keys(&mut app, "j");
    }
    let scroll = help_scroll(&app).expect("still in the help");
    let (shown, max) = super::popup::extent(
        app.popup().unwrap(),
        &app.popup_env(),
        app.screen().popups(),
    );
    assert!(shown > 0);
    assert_eq!(scroll, max);
    let bottom = screen(&draw(&mut app, 60, 12));
    assert!(
        bottom.contains("lock (the detail pane names them)"),
        "the end of the help is in view:\n{bottom}"
    );
    keys(&mut app, "k");
    let up = help_scroll(&app).expect("still in the help");
    assert_eq!(up, scroll - 1, "one k scrolls back at once");
}

#[test]
fn key_bar_is_generated_from_the_key_map() {
    let mut app = app();
    let bar = screen(&draw(&mut app, 200, 8))
        .lines()
        .last()
        .unwrap()
        .to_string();
    for b in Context::Table
        .own()
        .filter(|b| b.bar != keymap::Bar::No && app.enabled(b.action))
    {
        assert!(
            bar.contains(&format!("{} {}", b.bar_label(), b.short)),
            "{bar}"
        );
    }
    keys(&mut app, "/");
    let bar = screen(&draw(&mut app, 200, 8))
        .lines()
        .last()
        .unwrap()
        .to_string();
    assert!(bar.starts_with("Enter keep  Esc cancel"), "{bar}");
}

#[test]
fn progress_shows_while_scanning() {
    let mut app = App::new(opts(Theme::COLOR, false), NOW);
    let Effect::Scan { generation } = app.rescan() else {
        unreachable!()
    };
    let text = screen(&draw(&mut app, 80, 10));
    assert!(text.contains("scanning… 0 entries · 0 locks"), "{text}");
    assert!(text.contains("looking for locks…"), "{text}");
    progress(&mut app, generation, 123_456, 0);
    let text = screen(&draw(&mut app, 80, 10));
    assert!(text.contains("scanning… 123,456 entries"), "{text}");
}

#[test]
fn tiny_terminals_render_in_every_mode() {
    let setups: [&str; 6] = ["", "\n", "/", "?", "d", "j\nF"];
    for setup in setups {
        for w in [1u16, 2, 5, 10, 20, 33, 44, 45, 69, 70, 99, 100] {
            for h in [1u16, 2, 3, 4, 5, 8, 24] {
                let mut app = app();
                for part in setup.split('\n') {
                    keys(&mut app, part);
                }
                if setup.contains('\n') && setup != "j\nF" {
                    key(&mut app, KeyCode::Enter);
                }
                let _ = draw(&mut app, w, h);
            }
        }
    }
    let mut app = app();
    let text = screen(&draw(&mut app, 20, 5));
    assert!(text.contains("✗"), "{text}");
    insta::assert_snapshot!("table_20x5", text);
}

#[test]
fn resize_redraws_at_the_new_size() {
    let mut app = app();
    app.refresh();
    let mut t = Terminal::new(TestBackend::new(100, 20)).unwrap();
    t.draw(|f| f.render_widget(&app, f.area())).unwrap();
    assert!(screen(t.backend().buffer()).contains("HOST"));
    t.backend_mut().resize(50, 10);
    app.update(Msg::Resize {
        width: 50,
        height: 10,
    });
    t.draw(|f| f.render_widget(&app, f.area())).unwrap();
    let text = screen(t.backend().buffer());
    assert_eq!(text.lines().count(), 10);
    assert!(!text.contains("HOST"), "narrow: fewer columns\n{text}");
    assert!(text.contains("worker.pid"));
}

#[test]
fn scrolling_keeps_the_selection_on_screen() {
    let mut app = app_with(stale_pidfiles(100, 0), opts(Theme::COLOR, false));
    let _ = draw(&mut app, 80, 12);
    for _ in 0..30 {
        keys(&mut app, "j");
    }
    let text = screen(&draw(&mut app, 80, 12));
    assert!(line_with(&text, "/d/030.pid").starts_with("▶"), "{text}");
    keys(&mut app, "G");
    let text = screen(&draw(&mut app, 80, 12));
    assert!(line_with(&text, "/d/099.pid").starts_with("▶"), "{text}");
    // PgUp moves by the table's height on screen.
    key(&mut app, KeyCode::PageUp);
    assert_eq!(app.cursor(), Some(99 - app.page()));
}

#[test]
fn a_long_reclaim_dialog_keeps_its_buttons_on_screen() {
    let mut app = app_with(stale_pidfiles(30, 0), opts(Theme::COLOR, false));
    keys(&mut app, "D");
    let text = screen(&draw(&mut app, 80, 24));
    assert!(text.contains("Reclaim 30 stale locks?"), "{text}");
    assert!(text.contains("↓ more"), "the list says it goes on:\n{text}");
    assert!(text.contains("[ No ]"), "{text}");
    let small = screen(&draw(&mut app, 40, 10));
    assert!(small.contains("[ No ]"), "{small}");
    let c = confirmed(keys(&mut app, "y"));
    assert_eq!(c.findings().len(), 30, "all of them, not only those listed");
}

#[test]
fn a_running_vims_unsaved_changes_are_not_a_case_for_recovery() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "old\n").unwrap();
    let swap = dir.path().join(".notes.txt.swp");
    let mut f = vim_unsaved(swap.to_str().unwrap());
    let unsaved = f.judgement.unsaved_changes;
    f.judgement = Judgement::live("process 4242 (vim) is alive, started before the swap file");
    f.judgement.unsaved_changes = unsaved;
    let mut app = app_with(vec![f], opts(Theme::COLOR, false));
    key(&mut app, KeyCode::Enter);
    let text = screen(&draw(&mut app, 120, 30));
    assert!(
        text.contains("Unsaved changes in a running editor"),
        "{text}"
    );
    assert!(!text.contains("vim -r"), "{text}");
}

// ----- scrolling, fitting and messages -----

/// `n` stale pidfiles `/d/000.pid`, `/d/001.pid`, ... owned by PIDs from `first_pid` up.
fn stale_pidfiles(n: usize, first_pid: i64) -> Vec<Finding> {
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
fn many_with_notes(n: usize) -> Vec<Finding> {
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

#[test]
fn a_filter_after_the_end_of_a_long_list_shows_every_match() {
    let mut app = app_with(many_with_notes(80), opts(Theme::COLOR, false));
    let _ = draw(&mut app, 80, 24);
    keys(&mut app, "G");
    let _ = draw(&mut app, 80, 24);
    keys(&mut app, "/notes");
    let text = screen(&draw(&mut app, 80, 24));
    for name in [".a.swp", "b.pid", "c.lock"] {
        assert!(text.contains(name), "{name} hidden:\n{text}");
    }
    // The same with the verdict filter: the stale rows are all on screen from the first.
    let mut app = app_with(many_with_notes(80), opts(Theme::COLOR, false));
    let _ = draw(&mut app, 80, 24);
    keys(&mut app, "G");
    let _ = draw(&mut app, 80, 24);
    key(&mut app, KeyCode::Tab);
    key(&mut app, KeyCode::Tab); // live: one row
    let text = screen(&draw(&mut app, 80, 24));
    assert!(text.contains("b.pid"), "{text}");
    key(&mut app, KeyCode::BackTab); // stale: 81 rows, the first on top
    let text = screen(&draw(&mut app, 80, 24));
    assert!(text.contains("/d/000.pid"), "{text}");
}

#[test]
fn invert_works_for_every_column_and_every_sorted_column_shows_its_arrow() {
    let mut app = app();
    keys(&mut app, "ssssss");
    assert_eq!(app.sort, Column::Path);
    let up = order(&app);
    assert_eq!(up[0], "/mnt/nfs/job.lock");
    keys(&mut app, "S");
    let down = order(&app);
    assert_eq!(
        down,
        up.iter().rev().cloned().collect::<Vec<_>>(),
        "S inverts the path order"
    );
    let text = screen(&draw(&mut app, 120, 12));
    assert!(text.contains("PATH ▼"), "{text}");
    keys(&mut app, "S");
    for (presses, title) in [
        (1, "VERDICT ▲"),
        (1, "DIALECT ▲"),
        (1, "PID ▲"),
        (1, "COMMAND ▲"),
        (1, "HOST ▲"),
        (1, "AGE ▲"),
    ] {
        for _ in 0..presses {
            keys(&mut app, "s");
        }
        for (w, h) in [(120, 12), (80, 24)] {
            let text = screen(&draw(&mut app, w, h));
            let head = text.lines().nth(1).unwrap_or_default();
            // Columns may give way at 80, but a column shown shows its arrow.
            if w == 120 || head.contains(title.split(' ').next().unwrap()) {
                assert!(head.contains(title), "{w}x{h}: {title} in\n{text}");
            }
        }
    }
}

#[test]
fn the_detail_pane_scrolls_to_the_evidence_and_the_whole_hex_dump() {
    let mut f = vim_unsaved("/home/me/work/.notes.txt.swp");
    // 512 bytes with no zero rows: a dump of 32 lines.
    f.content = (0..512u32).map(|i| (i % 251) as u8 + 1).collect();
    let mut app = app_with(vec![f], opts(Theme::COLOR, false));
    key(&mut app, KeyCode::Enter);
    let text = screen(&draw(&mut app, 60, 15));
    assert!(
        !text.contains("Evidence"),
        "too small to show it at once:\n{text}"
    );
    assert!(
        text.contains("J/K scroll"),
        "the border says how to scroll:\n{text}"
    );
    let mut seen_evidence = false;
    for _ in 0..100 {
        keys(&mut app, "J");
        let text = screen(&draw(&mut app, 60, 15));
        seen_evidence |= text.contains("Evidence");
    }
    assert!(seen_evidence, "J scrolls down to the evidence");
    let text = screen(&draw(&mut app, 60, 15));
    assert!(text.contains("0001f0"), "the end of the dump:\n{text}");
    keys(&mut app, "K");
    let up_one = screen(&draw(&mut app, 60, 15));
    assert_ne!(up_one, text, "one K scrolls back at once");
    // At 120x40 the whole dump is reachable too.
    let text = screen(&draw(&mut app, 120, 40));
    assert!(!text.contains("more bytes"), "{text}");
}

#[test]
fn the_dialog_of_many_locks_lists_and_scrolls_to_every_one() {
    let mut app = app_with(stale_pidfiles(20, 0), opts(Theme::COLOR, false));
    keys(&mut app, "D");
    let text = screen(&draw(&mut app, 80, 24));
    assert!(text.contains("/d/000.pid"), "{text}");
    assert!(!text.contains("/d/019.pid"), "{text}");
    let mut seen = std::collections::BTreeSet::new();
    for _ in 0..60 {
        let text = screen(&draw(&mut app, 80, 24));
        assert!(text.contains("[ No ]"), "the buttons stay:\n{text}");
        for i in 0..20 {
            if text.contains(&format!("/d/{i:03}.pid")) {
                seen.insert(i);
            }
        }
        keys(&mut app, "j");
    }
    assert_eq!(seen.len(), 20, "every lock can be read: {seen:?}");
}

#[test]
fn status_messages_fit_at_a_word_and_expire() {
    let mut app = app();
    keys(&mut app, "j"); // the live lock
    keys(&mut app, "d");
    let message = app.status.as_ref().unwrap().text.clone();
    assert!(message.len() > 60, "{message}");
    let text = screen(&draw(&mut app, 60, 15));
    let words: Vec<&str> = message.split(' ').collect();
    let lines: Vec<&str> = text.lines().collect();
    let status: Vec<&str> = lines[lines.len() - 3..lines.len() - 1].to_vec();
    for l in &status {
        for w in l.split(' ').filter(|w| !w.is_empty() && !w.contains('/')) {
            let w = w.trim_end_matches('…');
            assert!(words.contains(&w), "{w:?} is cut, in\n{text}");
        }
    }
    assert!(
        status.iter().any(|l| l.starts_with("not reclaimable")),
        "{text}"
    );
    // It goes after a while.
    app.update(Msg::Tick {
        now_ms: NOW + 60_000,
    });
    assert!(app.status.is_none());
    let text = screen(&draw(&mut app, 60, 15));
    assert!(!text.contains("not reclaimable"), "{text}");
    // A cancelled dialog's message does not stay under the next dialog.
    keys(&mut app, "k");
    keys(&mut app, "dn");
    assert!(screen(&draw(&mut app, 80, 24)).contains("cancelled: nothing was removed"));
    keys(&mut app, "d");
    let text = screen(&draw(&mut app, 80, 24));
    assert!(!text.contains("cancelled"), "{text}");
}

#[test]
fn paths_keep_the_repository_at_80x24_and_empty_columns_give_way() {
    let mut app = app_with(
        vec![
            finding(
                "/home/alice/projects/company-website/.git/index.lock",
                "git",
                Verdict::Stale,
                None,
            ),
            finding("/srv/app/worker.pid", "pidfile", Verdict::Stale, Some(4242)),
        ],
        opts(Theme::COLOR, false),
    );
    let text = screen(&draw(&mut app, 80, 24));
    assert!(
        text.contains("company-website/.git/index.lock"),
        "which repository:\n{text}"
    );
    assert!(!text.contains("COMMAND"), "no command known:\n{text}");
}

#[test]
fn the_header_keeps_every_count_when_narrow_and_its_indent_when_empty() {
    let mut app = app();
    let text = screen(&draw(&mut app, 60, 15));
    let header = text.lines().next().unwrap();
    for v in Verdict::ALL {
        assert!(
            header.contains(&format!("{}1", v.symbol())),
            "{v}: {header}"
        );
    }
    let mut one = app_with(
        vec![finding("/a.pid", "pidfile", Verdict::Stale, Some(1))],
        opts(Theme::COLOR, false),
    );
    let text = screen(&draw(&mut one, 120, 10));
    assert!(text.lines().next().unwrap().contains("1 lock "), "{text}");
    let mut none = app_with(Vec::new(), opts(Theme::COLOR, false));
    let text = screen(&draw(&mut none, 80, 10));
    assert!(
        text.lines().nth(1).unwrap().starts_with("  VERDICT"),
        "{text}"
    );
    assert!(text.contains("0 locks"), "{text}");
}

#[test]
fn help_lists_every_key_and_shows_there_is_more() {
    let mut app = app();
    keys(&mut app, "?");
    let text = screen(&draw(&mut app, 100, 90));
    for k in ["PgDn/Ctrl-F", "PgUp/Ctrl-B", "g/Home", "G/End"] {
        assert!(text.contains(k), "{k} missing:\n{text}");
    }
    let small = screen(&draw(&mut app, 60, 15));
    assert!(small.contains("↓ more"), "{small}");
    key(&mut app, KeyCode::End);
    let end = screen(&draw(&mut app, 60, 15));
    assert!(!end.contains("↓ more"), "{end}");
    assert!(end.contains("○ free"), "{end}");
    key(&mut app, KeyCode::Home);
    assert_eq!(screen(&draw(&mut app, 60, 15)), small);
    key(&mut app, KeyCode::PageDown);
    assert_ne!(screen(&draw(&mut app, 60, 15)), small);
}

#[test]
fn left_is_yes_and_right_is_no_without_wrapping() {
    let mut app = app();
    keys(&mut app, "d");
    for (k, want) in [
        (KeyCode::Left, Choice::Yes),
        (KeyCode::Left, Choice::Yes),
        (KeyCode::Right, Choice::No),
        (KeyCode::Right, Choice::No),
    ] {
        key(&mut app, k);
        let Some(d) = app.dialog() else {
            panic!("the dialog stays open")
        };
        assert_eq!(d.highlight, want, "{k:?}");
    }
}

#[test]
fn a_tick_between_a_removal_and_the_refresh_is_harmless() {
    let mut app = app();
    for p in [
        "/srv/app/worker.pid",
        "/srv/app/web.pid",
        "/mnt/nfs/job.lock",
    ] {
        app.update(Msg::Rejudged(vec![(PathBuf::from(p), Rejudge::Gone)]));
    }
    app.update(Msg::Tick { now_ms: NOW + 1000 });
    let text = screen(&draw(&mut app, 80, 10));
    assert!(!text.contains("worker.pid"), "{text}");
    assert_eq!(app.visible_len(), 2);
}

#[test]
fn a_background_rescan_adds_and_drops_rows_quietly() {
    let mut app = app();
    let Some(Effect::Scan { generation }) = app.rescan_quietly() else {
        panic!("a quiet rescan starts when no scan runs")
    };
    assert!(app.rescan_quietly().is_none(), "never two at once");
    // The header keeps the last scan's numbers meanwhile; errors are only counted.
    let text = screen(&draw(&mut app, 120, 12));
    assert!(!text.contains("scanning"), "{text}");
    assert!(text.contains("12,345 entries"), "{text}");
    for f in sample().into_iter().skip(1) {
        found(&mut app, generation, f);
    }
    found(
        &mut app,
        generation,
        finding("/srv/app/new.pid", "pidfile", Verdict::Stale, Some(77)),
    );
    denied(&mut app, generation, "/root/private");
    scan_done(&mut app, generation, 12_346, 5, 300);
    app.refresh();
    let paths = order(&app);
    assert!(paths.contains(&"/srv/app/new.pid".to_string()), "{paths:?}");
    assert!(
        !paths.contains(&"/srv/app/web.pid".to_string()),
        "not found again: dropped"
    );
    assert!(app.status.is_none(), "{:?}", app.status);
    let text = screen(&draw(&mut app, 120, 12));
    assert!(
        text.contains("12,346 entries") && text.contains("1 error"),
        "{text}"
    );
}

#[test]
fn the_mouse_selects_sorts_and_scrolls() {
    use ratatui::crossterm::event::{MouseButton, MouseEvent, MouseEventKind};
    let mouse = |kind, column, row| {
        Msg::Mouse(MouseEvent {
            kind,
            column,
            row,
            modifiers: KeyModifiers::NONE,
        })
    };
    let click = |column, row| mouse(MouseEventKind::Down(MouseButton::Left), column, row);
    let mut app = app();
    let text = screen(&draw(&mut app, 120, 12));
    let row = |text: &str, needle: &str| text.lines().position(|l| l.contains(needle)).unwrap();
    app.update(click(5, row(&text, "job.lock") as u16));
    assert_eq!(selected(&app), "/mnt/nfs/job.lock");
    // The PATH title sorts by path; again inverts.
    let titles = text.lines().nth(1).unwrap();
    let x = titles[..titles.find("PATH").unwrap()].chars().count() as u16;
    app.update(click(x, 1));
    assert_eq!((app.sort, app.descending), (Column::Path, false));
    app.update(click(x, 1));
    assert_eq!((app.sort, app.descending), (Column::Path, true));
    // The wheel over the table moves the selection; over the detail pane, scrolls it.
    keys(&mut app, "g");
    app.update(mouse(MouseEventKind::ScrollDown, 5, 4));
    assert_eq!(app.cursor(), Some(3));
    app.update(mouse(MouseEventKind::ScrollUp, 5, 4));
    assert_eq!(app.cursor(), Some(0));
    key(&mut app, KeyCode::Enter);
    let _ = draw(&mut app, 60, 15);
    let detail_y = app.screen().detail.unwrap().y + 2;
    app.update(mouse(MouseEventKind::ScrollDown, 5, detail_y));
    assert!(app.detail_scroll > 0);
    assert_eq!(app.cursor(), Some(0), "the selection stays");
}

/// A journal entry of a reclaim, as the undo dialog names it.
fn reclaimed_entry(path: &str, batch: u64) -> locksmith::reclaim::Entry {
    locksmith::reclaim::Entry {
        id: format!("20260101T000000.000Z-1-{batch}"),
        run: "20260101T000000.000Z-1-0a0b0c0d".into(),
        batch: Some(batch),
        event: locksmith::reclaim::Event::Reclaim,
        path: path.into(),
        dialect: Some("pidfile".into()),
        meta: Some(locksmith::reclaim::Meta {
            kind: "file".into(),
            ..Default::default()
        }),
        ..Default::default()
    }
}

#[test]
fn u_names_what_the_last_reclaim_of_this_session_removed_and_puts_it_back_on_yes() {
    let mut app = app();
    // After a reclaim, the status says which key undoes it.
    let c = confirmed(keys(&mut app, "dy"));
    app.update(Msg::Reclaimed(vec![ReclaimResult {
        path: c.findings()[0].path.clone(),
        removed: true,
        gone: false,
        message: "removed /srv/app/worker.pid (copy saved as 2026-worker.pid.copy)".into(),
        judgement: None,
    }]));
    app.refresh();
    assert!(!order(&app).contains(&"/srv/app/worker.pid".to_string()));
    let status = app.status.as_ref().unwrap().text.clone();
    assert!(status.ends_with("(u undoes it)"), "{status}");
    // u asks the runtime what the last reclaim of this session was; nothing is put back yet.
    let effects = keys(&mut app, "u");
    assert!(
        matches!(effects.as_slice(), [Effect::PlanUndo]),
        "{effects:?}"
    );
    let plan = locksmith::reclaim::Plan {
        run: Some("20260101T000000.000Z-1-0a0b0c0d".into()),
        batch: Some(3),
        entries: vec![
            reclaimed_entry("/srv/app/worker.pid", 3),
            reclaimed_entry("/srv/app/other.pid", 3),
        ],
        ..Default::default()
    };
    app.update(Msg::UndoPlanned(Ok(plan.clone())));
    let Some(d) = app.dialog() else {
        panic!("the plan opens the dialog")
    };
    assert_eq!(d.highlight, Choice::No);
    // The dialog names what comes back, the whole batch as one step.
    let text = screen(&draw(&mut app, 100, 24));
    for needle in [
        "Undo your last reclaim: put these 2 locks back?",
        "/srv/app/worker.pid",
        "/srv/app/other.pid",
        "an earlier session of the UI",
        "as one step",
        "journal view (U)",
        "[ No ]",
    ] {
        assert!(text.contains(needle), "{needle:?} missing in\n{text}");
    }
    // Enter keeps No: nothing is put back.
    assert!(key(&mut app, KeyCode::Enter).is_none());
    assert!(matches!(app.mode, Mode::Table));
    assert!(
        app.status
            .as_ref()
            .unwrap()
            .text
            .contains("nothing was put back")
    );
    // y puts the batch back, off the UI thread; a second u waits for it.
    keys(&mut app, "u");
    app.update(Msg::UndoPlanned(Ok(plan)));
    let effects = keys(&mut app, "y");
    let [Effect::Restore(c)] = effects.as_slice() else {
        panic!("y confirms the undo: {effects:?}")
    };
    assert_eq!(c.restore_plan().unwrap().entries.len(), 2);
    assert!(c.findings().is_empty());
    assert!(keys(&mut app, "u").is_empty());
    assert!(
        app.status
            .as_ref()
            .unwrap()
            .text
            .contains("already running")
    );
    // The locks put back return to the table.
    app.update(Msg::Restored(RestoreResult {
        findings: vec![
            finding("/srv/app/worker.pid", "pidfile", Verdict::Stale, Some(4242)),
            finding("/srv/app/other.pid", "pidfile", Verdict::Stale, Some(7)),
        ],
        restored: true,
        message: "restored 2 locks: /srv/app/worker.pid, /srv/app/other.pid".into(),
    }));
    app.refresh();
    assert!(order(&app).contains(&"/srv/app/worker.pid".to_string()));
    assert!(order(&app).contains(&"/srv/app/other.pid".to_string()));
    let text = screen(&draw(&mut app, 100, 12));
    assert!(text.contains("restored 2 locks"), "{text}");
    // Nothing left to undo in this session: said, no dialog.
    keys(&mut app, "u");
    app.update(Msg::UndoPlanned(Err(
        "nothing to undo: every reclaim of this session is undone already".into(),
    )));
    assert!(matches!(app.mode, Mode::Table));
    let s = app.status.clone().unwrap();
    assert_eq!(s.level, Level::Warn);
    assert!(s.text.contains("undone already"), "{}", s.text);
    // A refusal says why; read-only refuses at once.
    app.update(Msg::Restored(RestoreResult {
        findings: Vec::new(),
        restored: false,
        message: "not restored: /srv/app/worker.pid: something stands at its path".into(),
    }));
    assert_eq!(app.status.as_ref().unwrap().level, Level::Error);
    let mut ro = app_with(sample(), opts(Theme::COLOR, true));
    assert!(keys(&mut ro, "u").is_empty());
    assert!(ro.status.as_ref().unwrap().text.contains("read-only"));
}

#[test]
fn a_lock_this_user_cannot_remove_is_said_in_the_dialog_which_offers_no_yes() {
    let mut app = app();
    let effects = keys(&mut app, "d");
    let [Effect::Check(asked)] = effects.as_slice() else {
        panic!("d asks which locks this user may remove: {effects:?}")
    };
    assert_eq!(asked.len(), 1);
    let path = asked[0].path.clone();
    // Until the answer is back, the dialog says it is checking.
    let text = screen(&draw(&mut app, 100, 30));
    assert!(
        text.contains("Checking that this user may remove it"),
        "{text}"
    );
    let why = "cannot be removed by this user, me (uid 1000): its directory /srv/app is sticky \
               (mode 1777), so only the lock's owner root (uid 0) or root may remove it";
    // An answer about other locks (a dialog opened since) changes nothing.
    app.update(Msg::Checked(vec![(
        PathBuf::from("/elsewhere"),
        Some(why.into()),
    )]));
    let Some(d) = app.dialog() else {
        panic!("the dialog stays")
    };
    assert!(d.offers_yes() && d.denied.is_none());
    app.update(Msg::Checked(vec![(path.clone(), Some(why.into()))]));
    let Some(d) = app.dialog() else {
        panic!("the dialog stays")
    };
    assert!(!d.offers_yes());
    let text = screen(&draw(&mut app, 100, 30));
    for needle in [
        "This lock cannot be reclaimed",
        "It cannot be removed here",
        "/srv/app/worker.pid",
        "is sticky",
        "[ Close ]",
    ] {
        assert!(text.contains(needle), "{needle:?} missing in\n{text}");
    }
    assert!(!text.contains("Yes"), "{text}");
    assert!(!text.contains("Checking"), "{text}");
    // The key bar shows only what works: closing.
    let bar = text.lines().last().unwrap_or_default().to_string();
    assert!(bar.contains("n/Esc close"), "{bar}");
    for gone in ["y yes", "move", "choose"] {
        assert!(!bar.contains(gone), "{gone:?} in {bar}");
    }
    // Neither y nor a moved highlight removes anything.
    key(&mut app, KeyCode::Left);
    assert!(key(&mut app, KeyCode::Enter).is_none());
    keys(&mut app, "d");
    app.update(Msg::Checked(vec![(path.clone(), Some(why.into()))]));
    assert!(keys(&mut app, "y").is_empty());
    assert!(matches!(app.mode, Mode::Table));
    let s = app.status.clone().unwrap();
    assert!(s.text.starts_with("nothing was removed: "), "{}", s.text);
    assert!(s.text.contains("is sticky"), "{}", s.text);
    assert!(!app.reclaiming);

    // D: the locks this user cannot remove are left out, with why; the others go.
    let mut findings = sample();
    findings.push(finding(
        "/srv/app/other.pid",
        "pidfile",
        Verdict::Stale,
        Some(7),
    ));
    let mut app = app_with(findings, opts(Theme::COLOR, false));
    let effects = keys(&mut app, "D");
    let [Effect::Check(asked)] = effects.as_slice() else {
        panic!("D asks too: {effects:?}")
    };
    let answers = asked
        .iter()
        .map(|f| {
            let denied = f.path.ends_with("worker.pid").then(|| why.to_string());
            (f.path.clone(), denied)
        })
        .collect();
    app.update(Msg::Checked(answers));
    let text = screen(&draw(&mut app, 100, 30));
    for needle in [
        "Reclaim this stale lock?",
        "/srv/app/other.pid",
        "Left out: 1 lock this user cannot remove:",
        "/srv/app/worker.pid",
        "is sticky",
    ] {
        assert!(text.contains(needle), "{needle:?} missing in\n{text}");
    }
    let c = confirmed(keys(&mut app, "y"));
    let paths: Vec<_> = c.findings().iter().map(|f| f.path.clone()).collect();
    assert_eq!(paths, [PathBuf::from("/srv/app/other.pid")]);
}

#[test]
fn asking_other_hosts_shows_in_the_header_then_in_the_status() {
    let mut app = app();
    app.update(Msg::Asking(vec!["node17".into()]));
    let text = screen(&draw(&mut app, 120, 20));
    assert!(
        text.lines().next().unwrap().contains("asking node17…"),
        "{text}"
    );
    app.update(Msg::Asking(vec!["node18".into(), "node17".into()]));
    let text = screen(&draw(&mut app, 120, 20));
    assert!(
        text.lines().next().unwrap().contains("asking 2 hosts…"),
        "{text}"
    );
    app.update(Msg::Asked {
        hosts: vec!["node17".into(), "node18".into()],
        failed: 1,
    });
    let text = screen(&draw(&mut app, 120, 20));
    assert!(!text.lines().next().unwrap().contains("asking"), "{text}");
    let s = app.status.clone().unwrap();
    assert_eq!(s.level, Level::Warn);
    assert_eq!(
        s.text,
        "asked node17, node18 over ssh: 1 could not answer (their locks stay foreign; see the details)"
    );
    // Host names come from lock files: escaped before they reach the terminal.
    app.update(Msg::Asking(vec!["evil\x1b[2J".into()]));
    let text = screen(&draw(&mut app, 120, 20));
    assert!(!text.contains('\x1b'), "{text}");
}

/// What `y` copies, as the terminal gets it (the OSC 52 bytes), and what a shell makes of it
/// when pasted.
fn copied(app: &mut App) -> Vec<u8> {
    let effects = keys(app, "y");
    let [Effect::Copy(text)] = effects.as_slice() else {
        panic!("y must copy: {effects:?}")
    };
    let mut osc = Vec::new();
    super::clipboard::write_osc52(&mut osc, text).unwrap();
    let payload = osc
        .strip_prefix(b"\x1b]52;c;")
        .and_then(|p| p.strip_suffix(b"\x07"))
        .unwrap_or_else(|| panic!("not one OSC 52 sequence: {osc:?}"));
    assert!(
        payload
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || b"+/=".contains(b)),
        "{osc:?}"
    );
    text.clone()
}

/// Runs `printf %s PASTED` in bash, in a directory of its own: what the pasted word is, and
/// whether pasting it ran anything (a file `pwned` appears).
fn pasted_into_bash(pasted: &[u8]) -> (Vec<u8>, bool) {
    use std::os::unix::ffi::OsStrExt;
    let dir = tempfile::tempdir().unwrap();
    let mut line = b"printf %s ".to_vec();
    line.extend_from_slice(pasted);
    let out = std::process::Command::new("bash")
        .arg("--norc")
        .arg("-c")
        .arg(std::ffi::OsStr::from_bytes(&line))
        .current_dir(dir.path())
        .output()
        .unwrap();
    (out.stdout, dir.path().join("pwned").exists())
}

#[test]
fn y_never_copies_bytes_that_run_when_pasted() {
    use std::os::unix::ffi::OsStringExt;
    // A name with a newline and a command after it, ESC ending a bracketed paste, a bidi
    // override and a byte that is not UTF-8.
    let raw = b"/tmp/x\ntouch pwned\n\x1b[201~touch pwned;\xe2\x80\xae!!\xff'.pid".to_vec();
    let mut f = finding("/tmp/x.pid", "pidfile", Verdict::Stale, Some(4242));
    f.path = PathBuf::from(std::ffi::OsString::from_vec(raw.clone()));
    let mut app = app_with(vec![f], opts(Theme::COLOR, false));
    let text = copied(&mut app);
    assert!(
        !text.iter().any(|b| b.is_ascii_control() || *b >= 0x80),
        "{:?}",
        String::from_utf8_lossy(&text)
    );
    assert_eq!(
        String::from_utf8(text.clone()).unwrap(),
        r"$'/tmp/x\x0atouch pwned\x0a\x1b[201~touch pwned;\xe2\x80\xae\x21\x21\xff\'.pid'"
    );
    let status = &app.status.as_ref().unwrap().text;
    assert!(status.contains("control characters"), "{status}");
    let (word, ran) = pasted_into_bash(&text);
    assert!(!ran, "pasting the copy ran a command");
    assert_eq!(word, raw, "bash reads back the exact name");
    // Before: the raw bytes ran `touch pwned` when pasted.
    assert!(pasted_into_bash(&raw).1);
}

#[test]
fn y_copies_a_plain_path_as_shown_and_quotes_the_rest() {
    let mut app = app_with(
        vec![finding(
            "/srv/app/worker.pid",
            "pidfile",
            Verdict::Stale,
            Some(1),
        )],
        opts(Theme::COLOR, false),
    );
    assert_eq!(copied(&mut app), b"/srv/app/worker.pid");
    let mut app = app_with(
        vec![finding(
            "/tmp/a b;$(touch pwned)`touch pwned`.pid",
            "pidfile",
            Verdict::Stale,
            Some(1),
        )],
        opts(Theme::COLOR, false),
    );
    let text = copied(&mut app);
    assert_eq!(text, b"'/tmp/a b;$(touch pwned)`touch pwned`.pid'");
    let (word, ran) = pasted_into_bash(&text);
    assert!(!ran);
    assert_eq!(word, b"/tmp/a b;$(touch pwned)`touch pwned`.pid");
    assert!(
        app.status
            .as_ref()
            .unwrap()
            .text
            .contains("quoted for the shell")
    );
}

#[test]
fn y_refuses_a_path_too_long_to_copy_whole_and_says_why() {
    let long = format!(
        "/tmp/{}.pid",
        "\u{1b}".repeat(super::clipboard::MAX_COPY / 4 + 1)
    );
    let mut app = app_with(
        vec![finding(&long, "pidfile", Verdict::Stale, Some(1))],
        opts(Theme::COLOR, false),
    );
    assert!(keys(&mut app, "y").is_empty());
    let status = app.status.as_ref().unwrap();
    assert_eq!(status.level, Level::Warn);
    assert!(status.text.starts_with("not copied:"), "{}", status.text);
}

// ----- backing out, marks, stopping holders, running programs, finding -----

fn ctrl(app: &mut App, c: char) -> Option<Effect> {
    app.update(Msg::Key(KeyEvent::new(
        KeyCode::Char(c),
        KeyModifiers::CONTROL,
    )))
}

/// The column of `needle` in `line`, in characters (the sort marker is one character but
/// several bytes).
fn column_of(line: &str, needle: &str) -> usize {
    let at = line
        .find(needle)
        .unwrap_or_else(|| panic!("{needle:?} not in {line:?}"));
    line[..at].chars().count()
}

#[test]
fn esc_and_q_back_out_of_the_detail_pane_and_every_pop_up_and_only_the_table_quits() {
    let mut app = app();
    for close in [KeyCode::Char('q'), KeyCode::Esc] {
        key(&mut app, KeyCode::Enter);
        assert!(app.details_open());
        assert!(
            key(&mut app, close).is_none(),
            "{close:?} in the detail pane"
        );
        assert!(!app.details_open(), "{close:?} closes the detail pane");
    }
    // The help and the dialog, over the table and over the detail pane.
    for details in [false, true] {
        if details {
            key(&mut app, KeyCode::Enter);
        }
        for open in ["?", "d"] {
            for close in [KeyCode::Char('q'), KeyCode::Esc] {
                keys(&mut app, open);
                assert!(app.popup().is_some(), "{open} opens a pop-up");
                assert!(key(&mut app, close).is_none(), "{close:?} after {open}");
                assert!(app.popup().is_none(), "{close:?} closes what {open} opened");
                assert_eq!(app.details_open(), details, "the pane stays as it was");
            }
        }
    }
    key(&mut app, KeyCode::Esc);
    assert!(!app.details_open());
    // On the table Esc clears the filter, then the marks, and never quits (however many
    // times it is pressed): it says that q quits. q and Ctrl-C quit.
    keys(&mut app, "/web");
    key(&mut app, KeyCode::Enter);
    keys(&mut app, " ");
    assert!(key(&mut app, KeyCode::Esc).is_none());
    assert!(app.filter.is_empty());
    assert_eq!(app.marked(), 1, "the filter first");
    assert!(key(&mut app, KeyCode::Esc).is_none());
    assert_eq!(app.marked(), 0);
    for _ in 0..3 {
        assert!(key(&mut app, KeyCode::Esc).is_none(), "Esc never quits");
    }
    assert!(matches!(app.mode, Mode::Table));
    assert!(
        app.status.as_ref().unwrap().text.contains("q quits"),
        "{:?}",
        app.status
    );
    assert!(matches!(keys(&mut app, "q").as_slice(), [Effect::Quit]));
    let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
    assert!(matches!(app.update(Msg::Key(ctrl_c)), Some(Effect::Quit)));
}

#[test]
fn space_marks_rows_and_d_reclaims_the_marked_leaving_alone_the_ones_not_stale() {
    let mut findings = sample();
    findings.push(finding(
        "/srv/app/other.pid",
        "pidfile",
        Verdict::Stale,
        Some(7),
    ));
    let mut app = app_with(findings, opts(Theme::COLOR, false));
    assert_eq!(selected(&app), "/srv/app/other.pid");
    // Space marks and moves down: other.pid, then web.pid (live) after skipping worker.pid.
    keys(&mut app, " ");
    assert_eq!(selected(&app), "/srv/app/worker.pid");
    keys(&mut app, "j ");
    assert_eq!(selected(&app), "/mnt/nfs/job.lock");
    assert_eq!(app.marked(), 2);
    let text = screen(&draw(&mut app, 120, 12));
    assert!(
        line_with(&text, "/srv/app/other.pid").starts_with(" *✗ stale"),
        "{text}"
    );
    assert!(
        line_with(&text, "/srv/app/web.pid").starts_with(" *● live"),
        "{text}"
    );
    assert!(line_with(&text, "/srv/app/worker.pid").starts_with("  ✗ stale"));
    assert!(
        text.lines().next().unwrap().ends_with("│ 2 marked"),
        "{text}"
    );
    let bar = text.lines().last().unwrap();
    assert!(
        bar.contains("D reclaim 2 marked") || bar.contains("D 2 marked"),
        "{bar}"
    );
    // The marks go with the rows through a sort.
    keys(&mut app, "S");
    assert!(app.is_marked(std::path::Path::new("/srv/app/other.pid")));
    keys(&mut app, "S");

    keys(&mut app, "D");
    let d = app.dialog().expect("D opens the dialog");
    let ConfirmAction::Reclaim {
        findings,
        kept,
        skipped,
    } = &d.action
    else {
        panic!("a reclaim")
    };
    let paths = |fs: &[Finding]| -> Vec<String> {
        fs.iter().map(|f| f.path.display().to_string()).collect()
    };
    assert_eq!(paths(findings), ["/srv/app/other.pid"], "only the marked");
    assert!(kept.is_empty());
    assert_eq!(
        paths(skipped),
        ["/srv/app/web.pid"],
        "the live one is left alone"
    );
    let text = screen(&draw(&mut app, 100, 30));
    assert!(text.contains("Reclaim this stale lock?"), "{text}");
    assert!(
        text.contains("Left alone: 1 marked lock not proven stale"),
        "{text}"
    );
    let c = confirmed(keys(&mut app, "y"));
    assert_eq!(paths(c.findings()), ["/srv/app/other.pid"]);
    app.update(Msg::Reclaimed(vec![ReclaimResult {
        path: PathBuf::from("/srv/app/other.pid"),
        removed: true,
        gone: false,
        message: "removed /srv/app/other.pid (copy saved as x)".into(),
        judgement: None,
    }]));
    app.refresh();
    assert_eq!(app.marked(), 1, "the mark goes with its row");
    // Esc clears the marks (there is no filter), and says so; it does not quit.
    assert!(key(&mut app, KeyCode::Esc).is_none());
    assert_eq!(app.marked(), 0);
    assert!(app.status.as_ref().unwrap().text.contains("1 mark cleared"));
    // With nothing marked, D is every stale lock shown again.
    keys(&mut app, "D");
    let c = confirmed(keys(&mut app, "y"));
    assert_eq!(paths(c.findings()), ["/srv/app/worker.pid"]);
}

#[test]
fn marking_only_locks_that_are_not_stale_reclaims_nothing() {
    let mut app = app();
    keys(&mut app, "j "); // web.pid, live
    assert_eq!(app.marked(), 1);
    assert!(keys(&mut app, "D").is_empty());
    assert!(app.popup().is_none());
    let s = app.status.clone().unwrap();
    assert!(s.text.contains("no marked lock is stale"), "{}", s.text);
}

fn target(pid: i32) -> super::stop::Target {
    super::stop::Target {
        pid,
        start_ticks: 1234,
        name: "sleep".into(),
        user: "me".into(),
        cmdline: "sleep 1000".into(),
        how: "flock".into(),
        under: None,
        stopped: false,
    }
}

/// A lock with a waiter and a stopped holder: the detail pane lists the waiter and says the
/// holder is stuck; `x` opens its dialog (No by default) naming that process and why it is
/// stuck, and only its Yes signals it; `e` stays the recovery of a vim swap.
#[test]
fn a_stuck_holder_is_shown_with_its_waiters_and_stopped_with_x_only_on_yes() {
    use super::app::StopResult;
    use super::stop::{Plan, Sent, Sig};
    use locksmith::probe::waiters::{WaitHow, Waiter};
    use locksmith::report::waiting::{Stuck, Waiting};
    let path = "/home/me/.cargo/.package-cache";
    let mut app = app_with(vec![live_with_process(path)], opts(Theme::COLOR, false));
    let waiting = Waiting {
        waiters: vec![Waiter {
            pid: 4400,
            name: Some("cargo".into()),
            cmd: vec!["cargo".into(), "build".into()],
            how: WaitHow::Flock,
            write: Some(true),
            started_ms: Some(NOW - 60_000),
            blocked_in: Some("flock(3, LOCK_EX) in locks_lock_inode_wait".into()),
            evidence: "a blocked flock request for a write lock on this file (/proc/locks)".into(),
            container: None,
        }],
        holder: None,
        handles: vec![".#lk0x00005603a1b2c3d0.laptop.4321".into()],
    };
    app.update(Msg::Waiting {
        judged: vec![PathBuf::from(path)],
        waiting: [(PathBuf::from(path), waiting.clone())].into(),
    });
    key(&mut app, KeyCode::Enter);
    let text = screen(&draw(&mut app, 120, 40));
    assert!(
        line_with(&text, "Waiting").contains("4400 cargo (flock, write;"),
        "{text}"
    );
    assert!(text.contains("blocked in flock(3, LOCK_EX)"), "{text}");
    // A handle of a GnuPG dotlock is shown as part of its lock.
    assert!(
        line_with(&text, "Handles").contains(".#lk0x00005603a1b2c3d0.laptop.4321  a hard link"),
        "{text}"
    );
    assert!(!text.contains("Stuck"), "not stuck yet:\n{text}");
    let stuck = Stuck {
        pid: 4321,
        name: "sleep".into(),
        start_ticks: 1234,
        why: "process 4321 (sleep) is stopped (state T, by SIGSTOP or Ctrl-Z)".into(),
    };
    app.update(Msg::Waiting {
        judged: vec![PathBuf::from(path)],
        waiting: [(
            PathBuf::from(path),
            Waiting {
                holder: Some(stuck.clone()),
                ..waiting
            },
        )]
        .into(),
    });
    let text = screen(&draw(&mut app, 120, 40));
    assert!(line_with(&text, "Stuck").contains("is stopped"), "{text}");
    assert!(text.contains("x stops process 4321"), "{text}");
    // e is the recovery of a vim swap, not a way to end a holder.
    assert!(keys(&mut app, "e").is_empty());
    assert!(app.popup().is_none());

    let plan_of = |f: &Finding| Plan {
        finding: Box::new(f.clone()),
        signal: Sig::Term,
        targets: vec![target(4321)],
        refused: Vec::new(),
        after: None,
        stuck: None,
    };
    let effects = keys(&mut app, "x");
    let [Effect::PlanStop(f)] = effects.as_slice() else {
        panic!("x looks at the holders off the UI thread: {effects:?}")
    };
    let plan = plan_of(f);
    app.update(Msg::StopPlanned(Ok(plan.clone())));
    let Some(d) = app.dialog() else {
        panic!("x opens its dialog")
    };
    assert_eq!(d.highlight, Choice::No);
    let text = screen(&draw(&mut app, 120, 40));
    for needle in [
        "Send SIGTERM to this process?",
        "● pid 4321 sleep (user me)",
        "Stuck: process 4321 (sleep) is stopped (state T",
        "[ No ]",
    ] {
        assert!(text.contains(needle), "{needle:?} missing in\n{text}");
    }
    // Enter takes No.
    assert!(key(&mut app, KeyCode::Enter).is_none());
    assert!(app.popup().is_none());
    keys(&mut app, "x");
    app.update(Msg::StopPlanned(Ok(plan)));
    let effects = keys(&mut app, "y");
    let [Effect::Stop(c)] = effects.as_slice() else {
        panic!("y signals: {effects:?}")
    };
    let confirmed = c.signal().unwrap().clone();
    assert_eq!(confirmed.stuck, Some(stuck));
    assert_eq!(confirmed.targets, [target(4321)]);
    let effect = app.update(Msg::Stopped(StopResult {
        plan: confirmed,
        sent: Sent {
            exited: vec![target(4321)],
            ..Sent::default()
        },
    }));
    assert!(matches!(effect, Some(Effect::Rejudge(_))), "{effect:?}");
    assert!(
        app.status.as_ref().unwrap().text.contains("exited"),
        "{:?}",
        app.status
    );
}

#[test]
fn x_asks_before_sigterm_offers_sigkill_after_and_judges_the_lock_again() {
    use super::app::StopResult;
    use super::stop::{Plan, Sent, Sig};
    let web = PathBuf::from("/srv/app/web.pid");
    let mut app = app();
    // A stale lock has nobody to stop.
    assert!(keys(&mut app, "x").is_empty());
    assert!(
        app.status
            .as_ref()
            .unwrap()
            .text
            .contains("no process holds it now")
    );
    keys(&mut app, "j");
    let effects = keys(&mut app, "x");
    let [Effect::PlanStop(f)] = effects.as_slice() else {
        panic!("x looks at the holders off the UI thread: {effects:?}")
    };
    assert_eq!(f.path, web);
    assert!(keys(&mut app, "x").is_empty(), "one at a time");
    let plan = Plan {
        finding: f.clone(),
        signal: Sig::Term,
        targets: vec![target(4321)],
        refused: vec!["pid 1 is the init process: never signalled".into()],
        after: None,
        stuck: None,
    };
    app.update(Msg::StopPlanned(Ok(plan.clone())));
    let text = screen(&draw(&mut app, 100, 30));
    for needle in [
        "Send SIGTERM to this process?",
        "This process holds the lock /srv/app/web.pid:",
        "● pid 4321 sleep (user me)  (flock)",
        "sleep 1000",
        "Not signalled (1 holder):",
        "pid 1 is the init process: never signalled",
        "[ No ]",
    ] {
        assert!(text.contains(needle), "{needle:?} missing in\n{text}");
    }
    assert!(
        text.lines().last().unwrap().starts_with("y yes"),
        "the dialog keeps the key bar:\n{text}"
    );
    // No is the default.
    assert!(key(&mut app, KeyCode::Enter).is_none());
    assert!(app.popup().is_none());
    assert!(
        app.status
            .as_ref()
            .unwrap()
            .text
            .contains("no signal was sent")
    );
    app.update(Msg::StopPlanned(Ok(plan)));
    let effects = keys(&mut app, "y");
    let [Effect::Stop(c)] = effects.as_slice() else {
        panic!("y sends: {effects:?}")
    };
    let sent = c.signal().unwrap().clone();
    assert_eq!(sent.signal, Sig::Term);
    assert_eq!(sent.targets, [target(4321)]);
    assert!(app.stopping);
    // It did not exit within the grace period: SIGKILL is offered, the lock judged again.
    let effect = app.update(Msg::Stopped(StopResult {
        plan: sent,
        sent: Sent {
            exited: Vec::new(),
            survivors: vec![target(4321)],
            errors: Vec::new(),
            resumed: Vec::new(),
        },
    }));
    let Some(Effect::Rejudge(again)) = effect else {
        panic!("judged again: {effect:?}")
    };
    assert_eq!(again[0].path, web);
    let text = screen(&draw(&mut app, 100, 30));
    assert!(text.contains("Send SIGKILL to this process?"), "{text}");
    assert!(text.contains("still running 5 s after SIGTERM"), "{text}");
    let effects = keys(&mut app, "y");
    let [Effect::Stop(c)] = effects.as_slice() else {
        panic!("y sends SIGKILL: {effects:?}")
    };
    let kill = c.signal().unwrap().clone();
    assert_eq!(kill.signal, Sig::Kill);
    app.update(Msg::Stopped(StopResult {
        plan: kill,
        sent: Sent {
            exited: vec![target(4321)],
            survivors: Vec::new(),
            errors: Vec::new(),
            resumed: Vec::new(),
        },
    }));
    assert!(app.popup().is_none(), "nothing more to offer");
    assert!(!app.stopping);
    let s = app.status.clone().unwrap();
    assert!(
        s.text
            .starts_with("SIGKILL: pid 4321 sleep (user me) exited"),
        "{}",
        s.text
    );
    // Judged again, the lock turns stale on screen.
    app.update(Msg::Rejudged(vec![(
        web.clone(),
        Rejudge::Judged(Box::new(finding(
            "/srv/app/web.pid",
            "pidfile",
            Verdict::Stale,
            Some(4321),
        ))),
    )]));
    let text = screen(&draw(&mut app, 120, 12));
    assert!(
        line_with(&text, "/srv/app/web.pid").contains("✗ stale"),
        "{text}"
    );
    // --readonly never signals.
    let mut ro = app_with(sample(), opts(Theme::COLOR, true));
    keys(&mut ro, "j");
    assert!(keys(&mut ro, "x").is_empty());
    assert!(ro.status.as_ref().unwrap().text.contains("read-only"));
}

#[test]
fn the_pid_column_names_the_holders_now_and_the_detail_pane_lists_each() {
    let mut f = finding("/srv/app/build.lock", "flock", Verdict::Live, Some(99));
    f.judgement.holders = vec![
        Holder {
            pid: 5001,
            name: Some("sleep".into()),
            how: HolderHow::Flock,
            mode: None,
            range: None,
            container: None,
        },
        Holder {
            pid: 5001,
            name: Some("sleep".into()),
            how: HolderHow::Open,
            mode: None,
            range: None,
            container: None,
        },
        Holder {
            pid: 5002,
            name: Some("make".into()),
            how: HolderHow::Open,
            mode: None,
            range: None,
            container: None,
        },
    ];
    let mut app = app_with(vec![f], opts(Theme::COLOR, false));
    let text = screen(&draw(&mut app, 120, 12));
    let row = line_with(&text, "build.lock");
    assert!(row.contains("5001+1") && row.contains("sleep"), "{text}");
    assert!(
        !row.contains("99 "),
        "not the owner the file records:\n{text}"
    );
    key(&mut app, KeyCode::Enter);
    let text = screen(&draw(&mut app, 120, 30));
    assert!(
        text.contains("Holders   • pid 5001 sleep (flock)"),
        "{text}"
    );
    assert!(text.contains("• pid 5002 make (open)"), "{text}");
}

#[test]
fn e_recovers_an_unsaved_swap_in_its_editor_and_o_opens_a_shell_in_the_locks_directory() {
    use super::app::{Run, RunResult};
    let swap = PathBuf::from("/work/.notes.txt.swp");
    let mut findings = sample();
    findings.push(vim_unsaved("/work/.notes.txt.swp"));
    let mut app = app_with(findings, opts(Theme::COLOR, false));
    // Only the swap with unsaved changes has something to recover.
    assert!(keys(&mut app, "e").is_empty());
    assert!(
        app.status
            .as_ref()
            .unwrap()
            .text
            .contains("nothing to recover")
    );
    keys(&mut app, "f.notes");
    key(&mut app, KeyCode::Enter);
    assert_eq!(selected(&app), "/work/.notes.txt.swp");
    // The key bar is the same on every row: e is in the help, not in the bar.
    let text = screen(&draw(&mut app, 120, 12));
    let bar = text.lines().last().unwrap().to_string();
    keys(&mut app, "g");
    let other = screen(&draw(&mut app, 120, 12));
    assert_eq!(other.lines().last().unwrap(), bar, "the bar follows no row");
    keys(&mut app, "f.notes");
    key(&mut app, KeyCode::Enter);
    let effects = keys(&mut app, "e");
    let [Effect::Run(Run::Recover { swap: s, editor }, f)] = effects.as_slice() else {
        panic!("e runs the editor: {effects:?}")
    };
    assert_eq!((s, *editor), (&swap, "vim"));
    assert_eq!(f.path, swap);
    // When it ends the message says so and the swap file is judged again.
    let effect = app.update(Msg::Ran(RunResult {
        path: swap.clone(),
        ok: true,
        message: "vim -r /work/.notes.txt.swp exited".into(),
        refused: None,
    }));
    let Some(Effect::Rejudge(again)) = effect else {
        panic!("judged again: {effect:?}")
    };
    assert_eq!(again[0].path, swap);
    assert!(app.status.as_ref().unwrap().text.contains("exited"));
    // One it may not recover (checked when it is about to run): a pop-up says why, and
    // nothing is judged again or run.
    keys(&mut app, "e");
    let effect = app.update(Msg::Ran(RunResult {
        path: swap.clone(),
        ok: false,
        message: "not recovered".into(),
        refused: Some("it belongs to nobody (uid 65534), not to you".into()),
    }));
    assert!(effect.is_none(), "{effect:?}");
    let text = screen(&draw(&mut app, 100, 30));
    assert!(text.contains("Not recovered"), "{text}");
    assert!(text.contains("it belongs to nobody (uid 65534)"), "{text}");
    assert!(text.contains("[ Close ]"), "{text}");
    assert!(keys(&mut app, "q").is_empty());
    let text = screen(&draw(&mut app, 100, 30));
    assert!(!text.contains("Not recovered"), "closed: {text}");
    let effects = keys(&mut app, "o");
    let [Effect::Run(Run::Shell { dir }, _)] = effects.as_slice() else {
        panic!("o runs a shell: {effects:?}")
    };
    assert_eq!(dir, &PathBuf::from("/work"));
}

#[test]
fn an_unsaved_vim_swap_is_marked_in_the_table() {
    let mut findings = sample();
    findings.push(vim_unsaved("/work/.notes.txt.swp"));
    findings.push(finding(
        "/work/.plain.txt.swp",
        "vim-swap",
        Verdict::Stale,
        Some(778),
    ));
    let mut app = app_with(findings, opts(Theme::COLOR, false));
    let text = screen(&draw(&mut app, 120, 14));
    assert!(
        line_with(&text, "/work/.notes.txt.swp").contains("✗ stale ✎"),
        "{text}"
    );
    assert!(
        !line_with(&text, "/work/.plain.txt.swp").contains('✎'),
        "{text}"
    );
    let dialect = |l: &str| column_of(l, "vim-swap");
    assert_eq!(
        dialect(line_with(&text, ".notes.txt.swp")),
        dialect(line_with(&text, ".plain.txt.swp")),
        "the mark has a place of its own"
    );
}

#[test]
fn f_finds_without_hiding_rows_and_n_and_shift_n_go_to_the_next_and_previous_match() {
    let mut app = app();
    keys(&mut app, "G");
    assert_eq!(selected(&app), "/var/lib/dpkg/lock");
    keys(&mut app, "f");
    keys(&mut app, "srv");
    assert_eq!(
        selected(&app),
        "/srv/app/worker.pid",
        "found as it is typed"
    );
    key(&mut app, KeyCode::Enter);
    assert_eq!(app.visible_len(), 5, "nothing is hidden");
    assert!(app.status.as_ref().unwrap().text.contains("match 1 of 2"));
    keys(&mut app, "n");
    assert_eq!(selected(&app), "/srv/app/web.pid");
    keys(&mut app, "n");
    assert_eq!(selected(&app), "/srv/app/worker.pid");
    assert!(app.status.as_ref().unwrap().text.contains("(from the top)"));
    keys(&mut app, "N");
    assert_eq!(selected(&app), "/srv/app/web.pid");
    assert!(
        app.status
            .as_ref()
            .unwrap()
            .text
            .contains("(from the bottom)")
    );
    // Esc goes back to where the selection was.
    keys(&mut app, "fX0");
    assert_eq!(selected(&app), "/tmp/.X0-lock");
    key(&mut app, KeyCode::Esc);
    assert_eq!(selected(&app), "/srv/app/web.pid");
    assert!(matches!(app.mode, Mode::Table));
}

#[test]
fn the_filter_keeps_the_selection_while_it_matches_else_selects_the_first_match() {
    let mut app = app();
    keys(&mut app, "j");
    assert_eq!(selected(&app), "/srv/app/web.pid");
    keys(&mut app, "/app");
    assert_eq!(selected(&app), "/srv/app/web.pid", "still matches: stays");
    keys(&mut app, "/wo");
    assert_eq!(order(&app), ["/srv/app/worker.pid"]);
    assert_eq!(selected(&app), "/srv/app/worker.pid");
    // Widening again keeps it.
    key(&mut app, KeyCode::Backspace);
    key(&mut app, KeyCode::Backspace);
    assert_eq!(app.visible_len(), 2);
    assert_eq!(selected(&app), "/srv/app/worker.pid");
    // Narrowing to rows that do not hold the selection selects the first match, not the last.
    key(&mut app, KeyCode::Backspace);
    keys(&mut app, "lock");
    assert_eq!(app.filter, "applock");
    ctrl(&mut app, 'u');
    assert_eq!(app.filter, "");
    keys(&mut app, "lock");
    assert_eq!(
        order(&app),
        ["/mnt/nfs/job.lock", "/tmp/.X0-lock", "/var/lib/dpkg/lock"]
    );
    assert_eq!(selected(&app), "/mnt/nfs/job.lock");
    // Ctrl-W deletes the last word, as in a shell.
    keys(&mut app, " job");
    ctrl(&mut app, 'w');
    assert_eq!(app.filter, "lock ");
    ctrl(&mut app, 'w');
    assert_eq!(app.filter, "");
}

#[test]
fn a_message_about_a_row_goes_when_the_selection_moves_and_every_message_after_a_while() {
    let mut app = app();
    keys(&mut app, "j");
    keys(&mut app, "d");
    assert!(
        app.status
            .as_ref()
            .unwrap()
            .text
            .contains("not reclaimable")
    );
    keys(&mut app, "j");
    assert!(
        app.status.is_none(),
        "about web.pid, which is not selected any more"
    );
    // One about no row stays while the selection moves, until it expires.
    keys(&mut app, "gd");
    key(&mut app, KeyCode::Esc);
    let text = app.status.clone().unwrap().text;
    assert!(text.contains("nothing was removed"), "{text}");
    keys(&mut app, "jj");
    assert!(app.status.is_some());
    app.update(Msg::Tick {
        now_ms: NOW + 4_000,
    });
    assert!(app.status.is_some());
    app.update(Msg::Tick {
        now_ms: NOW + 6_000,
    });
    assert!(app.status.is_none(), "gone after a while");
}

#[test]
fn the_sort_marker_never_moves_a_column_and_a_new_sort_column_starts_ascending() {
    let mut app = app();
    let head = |app: &mut App| {
        screen(&draw(app, 120, 12))
            .lines()
            .nth(1)
            .unwrap()
            .to_string()
    };
    let titles = ["DIALECT", "PID", "COMMAND", "HOST", "AGE", "PATH"];
    let first = head(&mut app);
    let at = |h: &str| -> Vec<usize> { titles.iter().map(|t| column_of(h, t)).collect() };
    for _ in 0..8 {
        keys(&mut app, "s");
        assert!(!app.descending, "a new sort column starts ascending");
        let h = head(&mut app);
        assert_eq!(at(&h), at(&first), "{first}\n{h}");
        keys(&mut app, "S");
        assert!(app.descending);
        let h = head(&mut app);
        assert!(h.contains('▼'), "{h}");
        assert_eq!(at(&h), at(&first), "{first}\n{h}");
    }
}

#[test]
fn the_header_names_the_roots_and_the_key_bar_keeps_sort_rescan_and_undo_at_80_columns() {
    let mut app = app();
    let text = screen(&draw(&mut app, 120, 12));
    assert!(
        text.lines()
            .next()
            .unwrap()
            .starts_with(" locksmith /srv, /var/lib, /mnt/nfs, /tmp │"),
        "{text}"
    );
    let narrow = screen(&draw(&mut app, 80, 24));
    assert!(
        narrow
            .lines()
            .next()
            .unwrap()
            .starts_with(" locksmith /srv +3 │"),
        "{narrow}"
    );
    // In the table, with marks, and in the detail pane.
    for setup in ["", " ", "\n"] {
        let mut app = self::app();
        for c in setup.chars() {
            if c == '\n' {
                key(&mut app, KeyCode::Enter);
            } else {
                keys(&mut app, &c.to_string());
            }
        }
        let text = screen(&draw(&mut app, 80, 24));
        let bar = text.lines().last().unwrap();
        let quit = if setup == "\n" {
            "q/Esc close"
        } else {
            "q quit"
        };
        for k in ["d reclaim", "s sort", "u undo", "? help", quit] {
            assert!(
                bar.contains(k),
                "{k:?} missing at 80 columns ({setup:?}): {bar}"
            );
        }
        if setup == " " {
            assert!(
                bar.contains("D reclaim 1 marked"),
                "what marks are for: {bar}"
            );
        }
        assert!(super::text::width(bar) <= 80, "{bar}");
        // The words of every entry are those of the wide bar: a narrow bar only has fewer.
        let wide = screen(&draw(&mut app, 200, 24));
        let wide = wide.lines().last().unwrap().to_string();
        for entry in bar.split("  ").filter(|e| !e.trim().is_empty()) {
            assert!(
                wide.contains(entry.trim()),
                "{entry:?} at 80 columns is not in the wide bar: {wide}"
            );
        }
    }
}

#[test]
fn pop_ups_never_cover_the_key_bar() {
    for (open, bar) in [("?", "?/q close"), ("d", "y yes"), ("D", "y yes")] {
        for (w, h) in [(80, 24), (120, 40), (60, 10)] {
            let mut app = app_with(many_with_notes(60), opts(Theme::COLOR, false));
            keys(&mut app, open);
            assert!(app.popup().is_some(), "{open}");
            let text = screen(&draw(&mut app, w, h));
            let last = text.lines().last().unwrap();
            assert!(last.starts_with(bar), "{open} at {w}x{h}: {last:?}\n{text}");
        }
    }
}

#[test]
fn a_lock_that_is_gone_loses_its_row_and_its_mark_and_d_on_it_says_so() {
    let mut app = app();
    keys(&mut app, " ");
    assert_eq!(app.marked(), 1);
    app.update(Msg::Rejudged(vec![(
        PathBuf::from("/srv/app/worker.pid"),
        Rejudge::Gone,
    )]));
    app.refresh();
    assert_eq!(app.visible_len(), 4);
    assert_eq!(app.marked(), 0);
    // A message about a row that goes stays until it expires (the selection moved because
    // the row went, not because the user left it).
    keys(&mut app, "gd");
    assert_eq!(selected(&app), "/srv/app/web.pid");
    assert!(app.status.as_ref().unwrap().text.contains("is live"));
    app.update(Msg::Rejudged(vec![(
        PathBuf::from("/srv/app/web.pid"),
        Rejudge::Gone,
    )]));
    app.refresh();
    assert_ne!(selected(&app), "/srv/app/web.pid");
    assert!(app.status.as_ref().unwrap().text.contains("is live"));
    // Gone between the listing and the reclaim: the row goes, the status says why.
    let mut app = self::app();
    let c = confirmed(keys(&mut app, "dy"));
    app.update(Msg::Reclaimed(vec![ReclaimResult {
        path: c.findings()[0].path.clone(),
        removed: false,
        gone: true,
        message: "/srv/app/worker.pid is gone (it or its directory was removed since it was listed): nothing to reclaim".into(),
        judgement: None,
    }]));
    app.refresh();
    assert_eq!(app.visible_len(), 4);
    let s = app.status.clone().unwrap();
    assert_eq!(s.level, Level::Warn);
    assert!(s.text.contains("is gone"), "{}", s.text);
    assert!(!s.text.contains("undoes"), "{}", s.text);
}

// ----- the view kept up to date as rows come and go -----

/// What can happen to the table between two frames.
#[derive(Debug, Clone)]
enum Step {
    /// A lock found (or found again, judged anew): path number, verdict, dialect, PID, age.
    Found(u8, Verdict, &'static str, Option<i64>, i64),
    /// A re-judge round found the lock gone.
    Gone(u8),
    /// Keys pressed: `s` and `S` sort, Tab filters by verdict, `/x` filters by text.
    Keys(&'static str),
    /// The clock advances.
    Tick(i64),
    /// A frame: the view is brought up to date.
    Frame,
}

fn step() -> impl proptest::strategy::Strategy<Value = Step> {
    use proptest::prelude::*;
    let verdict = proptest::sample::select(Verdict::ALL.to_vec());
    let dialect = proptest::sample::select(vec!["pidfile", "git", "flock", "vim-swap"]);
    let pid = proptest::option::of(1i64..6);
    let found = (0u8..40, verdict, dialect, pid, 0i64..200_000)
        .prop_map(|(n, v, d, p, age)| Step::Found(n, v, d, p, age));
    let keys = proptest::sample::select(vec![
        "s",
        "S",
        "\t",
        "/1\n",
        "/2\n",
        "/pid\n",
        "/\x1b",
        "/\x7f\x7f\x7f\x7f\n",
    ]);
    prop_oneof![
        6 => found,
        2 => (0u8..40).prop_map(Step::Gone),
        2 => keys.prop_map(Step::Keys),
        1 => (0i64..120_000).prop_map(Step::Tick),
        3 => Just(Step::Frame),
    ]
}

/// The view as a rebuild from scratch makes it: the rows that pass the filters, sorted by the
/// sort column (inverted when descending), then by path.
fn view_built_anew(app: &App) -> Vec<String> {
    let needle = app.filter.to_lowercase();
    let mut rows: Vec<&super::app::Row> = app
        .rows()
        .iter()
        .filter(|r| app.verdict_filter.is_none_or(|v| r.verdict() == v))
        .filter(|r| r.cells.search.contains(&needle))
        .collect();
    rows.sort_by(|a, b| {
        let primary = match app.sort {
            Column::Verdict => a.verdict().cmp(&b.verdict()),
            Column::Dialect => a.cells.dialect.cmp(&b.cells.dialect),
            Column::Pid => a.cells.owner_pid.cmp(&b.cells.owner_pid),
            Column::Command => a.cells.command.cmp(&b.cells.command),
            Column::Host => a.cells.host.cmp(&b.cells.host),
            Column::Age => {
                super::app::age_ms(a, app.now_ms).cmp(&super::app::age_ms(b, app.now_ms))
            }
            Column::Path => a.finding.path.cmp(&b.finding.path),
            c => panic!("the UI does not sort by {c:?}"),
        };
        let primary = if app.descending {
            primary.reverse()
        } else {
            primary
        };
        primary.then_with(|| a.finding.path.cmp(&b.finding.path))
    });
    rows.iter()
        .map(|r| r.finding.path.display().to_string())
        .collect()
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(200))]

    /// Rows added, judged anew, removed, sorted and filtered in any order: after each frame the
    /// view (kept up to date a change at a time) is the one a rebuild makes, the selection is
    /// on a shown row, and the columns are as wide as their widest shown cell.
    #[test]
    fn the_view_kept_up_to_date_is_the_view_built_anew(steps in proptest::collection::vec(step(), 1..80)) {
        let mut app = App::new(opts(Theme::COLOR, false), NOW);
        let Effect::Scan { generation } = app.rescan() else { panic!("a scan starts") };
        let path = |n: u8| format!("/srv/d{}/lock{n}.pid", n % 3);
        for s in steps {
            match s {
                Step::Found(n, v, d, pid, age) => {
                    let mut f = finding(&path(n), d, v, pid);
                    f.modified_ms = Some(NOW - age);
                    found(&mut app, generation, f);
                }
                Step::Gone(n) => {
                    app.update(Msg::Rejudged(vec![(PathBuf::from(path(n)), Rejudge::Gone)]));
                }
                Step::Keys(k) => {
                    for c in k.chars() {
                        let code = match c {
                            '\t' => KeyCode::Tab,
                            '\n' => KeyCode::Enter,
                            '\x1b' => KeyCode::Esc,
                            '\x7f' => KeyCode::Backspace,
                            c => KeyCode::Char(c),
                        };
                        key(&mut app, code);
                    }
                }
                Step::Tick(ms) => {
                    let now = app.now_ms + ms;
                    app.update(Msg::Tick { now_ms: now });
                }
                Step::Frame => {
                    app.refresh();
                    proptest::prop_assert_eq!(order(&app), view_built_anew(&app));
                    if let Some(sel) = app.selected_row() {
                        proptest::prop_assert!(order(&app).contains(&sel.finding.path.display().to_string()));
                    }
                    let measured = super::table::content_widths(app.visible());
                    proptest::prop_assert_eq!(app.content_widths(), &measured);
                }
            }
        }
    }
}

#[test]
fn n_and_n_find_again_what_the_filter_looked_for_once_it_is_cleared() {
    let mut findings = sample();
    findings.push(finding(
        "/srv/app/other.pid",
        "pidfile",
        Verdict::Live,
        Some(5),
    ));
    let mut app = app_with(findings, opts(Theme::COLOR, false));
    // Nothing looked for yet: n does nothing, and the bar does not offer it.
    let before = selected(&app);
    keys(&mut app, "n");
    assert_eq!(selected(&app), before);
    let bar = screen(&draw(&mut app, 200, 12));
    assert!(!bar.lines().last().unwrap().contains("next match"), "{bar}");
    // Filter with /, keep it, clear it with Esc: the whole list is back ...
    keys(&mut app, "/app/");
    key(&mut app, KeyCode::Enter);
    assert_eq!(app.visible_len(), 3);
    key(&mut app, KeyCode::Esc);
    assert_eq!(app.visible_len(), 6);
    // ... and n / N walk the rows the filter matched, in the list's order, wrapping around.
    let matches: Vec<String> = order(&app)
        .into_iter()
        .filter(|p| p.contains("/app/"))
        .collect();
    assert_eq!(matches.len(), 3);
    keys(&mut app, "G");
    keys(&mut app, "n");
    assert_eq!(
        selected(&app),
        matches[0],
        "from the bottom to the first match"
    );
    keys(&mut app, "n");
    assert_eq!(selected(&app), matches[1]);
    keys(&mut app, "N");
    assert_eq!(selected(&app), matches[0]);
    let status = app.status.as_ref().unwrap().text.clone();
    assert!(status.contains("match 1 of 3"), "{status}");
    // The key bar says n/N find again.
    let text = screen(&draw(&mut app, 200, 12));
    assert!(
        text.lines().last().unwrap().contains("n/N next match"),
        "{text}"
    );
    // A filter typed and dropped with Esc is not looked for again.
    keys(&mut app, "/web");
    key(&mut app, KeyCode::Esc);
    keys(&mut app, "n");
    assert!(selected(&app).contains("/app/"), "{}", selected(&app));
}

fn journal_entry(
    n: usize,
    run: &str,
    via: Option<&str>,
    event: locksmith::reclaim::Event,
    path: &str,
) -> locksmith::reclaim::Entry {
    locksmith::reclaim::Entry {
        id: format!("{run}-{n}"),
        run: run.into(),
        via: via.map(String::from),
        batch: Some(1),
        time: "2026-01-01T00:00:00Z".into(),
        event,
        path: path.into(),
        dialect: Some("pidfile".into()),
        meta: Some(locksmith::reclaim::Meta {
            kind: "file".into(),
            ..Default::default()
        }),
        ..Default::default()
    }
}

#[test]
fn the_journal_view_lists_runs_and_undoes_what_is_picked_after_a_preview() {
    use locksmith::reclaim::Event;
    let mut app = app();
    let effects = keys(&mut app, "U");
    assert!(
        matches!(effects.as_slice(), [Effect::ReadJournal]),
        "{effects:?}"
    );
    let mut restored = journal_entry(3, "ui-1", Some("ui"), Event::Restore, "/srv/a.pid");
    restored.restores = Some("ui-1-2".into());
    app.update(Msg::JournalRead(Ok(vec![
        journal_entry(
            1,
            "cron",
            Some("scan"),
            Event::Reclaim,
            "/var/lib/app/x.pid",
        ),
        journal_entry(2, "ui-1", Some("ui"), Event::Reclaim, "/srv/a.pid"),
        restored,
        journal_entry(
            4,
            "cron",
            Some("scan"),
            Event::Reclaim,
            "/opt/elsewhere/y.pid",
        ),
    ])));
    let text = screen(&draw(&mut app, 120, 24));
    for needle in [
        "Journal: 2 runs",
        "a --scan --reclaim, 2026-01-01 00:00: 2 reclaimed (2 to undo)",
        "the UI, 2026-01-01 00:00: 1 reclaimed (0 to undo), 1 put back",
        "(outside the roots on screen)",
        "restored",
    ] {
        assert!(text.contains(needle), "{needle:?} missing in\n{text}");
    }
    // The cursor starts on the newest reclaim left to undo; the key bar shows the view's keys.
    let cursor = |t: &str| {
        t.lines()
            .find(|l| l.contains("│▶"))
            .unwrap_or("")
            .to_string()
    };
    assert!(cursor(&text).contains("/opt/elsewhere/y.pid"), "{text}");
    assert!(
        text.lines().last().unwrap().contains("Enter/u undo"),
        "{text}"
    );
    // The cursor moves over runs and what can be undone, skipping the rest (a blank line,
    // a reclaim restored already, a restore line).
    keys(&mut app, "j");
    let text = screen(&draw(&mut app, 120, 24));
    assert!(cursor(&text).contains("the UI,"), "{text}");
    keys(&mut app, "j");
    let text = screen(&draw(&mut app, 120, 24));
    assert!(cursor(&text).contains("the UI,"), "the last one: {text}");
    keys(&mut app, "kk");
    let text = screen(&draw(&mut app, 120, 24));
    assert!(cursor(&text).contains("/var/lib/app/x.pid"), "{text}");
    keys(&mut app, "g");
    let text = screen(&draw(&mut app, 120, 24));
    assert!(cursor(&text).contains("a --scan --reclaim"), "{text}");
    // Picking the run opens the preview, No highlighted, one lock outside the roots said.
    key(&mut app, KeyCode::Enter);
    let d = app.dialog().expect("the undo dialog");
    assert_eq!(d.highlight, Choice::No);
    let text = screen(&draw(&mut app, 120, 30));
    for needle in [
        "Put these 2 locks back?",
        "what a --scan --reclaim reclaimed",
        "/var/lib/app/x.pid",
        "/opt/elsewhere/y.pid",
        "outside the roots on screen",
        "[ No ]",
    ] {
        assert!(text.contains(needle), "{needle:?} missing in\n{text}");
    }
    // No: nothing; yes: the restore, off the UI thread.
    assert!(key(&mut app, KeyCode::Enter).is_none());
    assert!(matches!(app.mode, Mode::Table));
    keys(&mut app, "U");
    app.update(Msg::JournalRead(Ok(vec![journal_entry(
        1,
        "cron",
        Some("scan"),
        Event::Reclaim,
        "/var/lib/app/x.pid",
    )])));
    keys(&mut app, "u");
    let effects = keys(&mut app, "y");
    let [Effect::Restore(c)] = effects.as_slice() else {
        panic!("y puts it back: {effects:?}")
    };
    assert_eq!(c.restore_plan().unwrap().entries.len(), 1);
    // Esc closes the view and does not quit.
    keys(&mut app, "U");
    app.update(Msg::JournalRead(Ok(Vec::new())));
    let text = screen(&draw(&mut app, 80, 24));
    assert!(text.contains("The journal is empty"), "{text}");
    assert!(key(&mut app, KeyCode::Esc).is_none());
    assert!(app.popup().is_none());
}

#[test]
fn a_long_host_keeps_its_kind_and_start_and_a_namespace_is_no_container() {
    let container =
        |runtime: &str, id: &str, name: Option<&str>| locksmith::verdict::ContainerInfo {
            id: locksmith::probe::ContainerId {
                runtime: runtime.into(),
                id: id.into(),
                name: name.map(String::from),
            },
            ns_pid: Some(2),
        };
    let mut long = live_with_process("/srv/app/long.pid");
    long.judgement.process.as_mut().unwrap().container = Some(container(
        "podman",
        &"3f2a".repeat(16),
        Some("kube-apiserver-control-plane"),
    ));
    let mut sandbox = live_with_process("/home/me/.cache/sandbox.pid");
    sandbox.judgement.process.as_mut().unwrap().container =
        Some(container("unknown", "pid:[4026532252]", None));
    let mut app = app_with(vec![long, sandbox], opts(Theme::COLOR, false));
    let text = screen(&draw(&mut app, 120, 12));
    let row = |name: &str| {
        text.lines()
            .find(|l| l.contains(name))
            .unwrap_or_else(|| panic!("{name}: {text}"))
            .to_string()
    };
    assert!(row("long.pid").contains(" ctr:kube-apiser… "), "{text}");
    assert!(row("sandbox.pid").contains(" ns:4026532252 "), "{text}");
    assert!(!text.contains("ctr:pid"), "{text}");
}

/// `w` opens the why prompt; a pasted message (its line ends as a terminal pastes them) and
/// Enter select the lock it is about, clearing a filter that hid it; the PID it names picks
/// between two locks at the places of its program.
#[test]
fn a_pasted_error_message_selects_its_lock() {
    let mut app = app_with(
        vec![
            finding("/srv/a/.git/index.lock", "git", Verdict::Stale, None),
            finding("/srv/b/.git/index.lock", "git", Verdict::Stale, None),
            finding("/srv/app/worker.pid", "pidfile", Verdict::Stale, Some(4242)),
            finding("/tmp/.X7-lock", "x11", Verdict::Live, Some(555)),
        ],
        opts(Theme::COLOR, false),
    );
    keys(&mut app, "/worker");
    key(&mut app, KeyCode::Enter);
    assert_eq!(order(&app), ["/srv/app/worker.pid"]);
    keys(&mut app, "w");
    assert!(app.popup().is_some(), "w opens the prompt");
    // Typed text goes to the prompt, not to the table's keys.
    keys(&mut app, "jq");
    app.update(Msg::Paste(
        "\rfatal: Unable to create '/srv/b/.git/index.lock': File exists.\r\rAnother git process\r"
            .into(),
    ));
    let buf = draw(&mut app, 100, 30);
    assert!(screen(&buf).contains("> jq"), "{}", screen(&buf));
    assert!(
        screen(&buf).contains("> fatal: Unable to create"),
        "{}",
        screen(&buf)
    );
    key(&mut app, KeyCode::Enter);
    assert!(app.popup().is_none());
    assert_eq!(selected(&app), "/srv/b/.git/index.lock");
    assert_eq!(order(&app).len(), 4, "the filter that hid it is cleared");
    let status = app.status.as_ref().unwrap();
    assert_eq!(status.text, "git's lock: /srv/b/.git/index.lock (stale)");

    // A paste into the table opens the prompt with it.
    app.update(Msg::Paste(
        "(EE) Server is already active for display 7\n".into(),
    ));
    assert!(app.popup().is_some());
    key(&mut app, KeyCode::Enter);
    assert_eq!(selected(&app), "/tmp/.X7-lock");

    // A message of a program whose lock is not listed, and one nobody knows.
    keys(&mut app, "w");
    app.update(Msg::Paste(
        "E: Could not get lock /var/lib/dpkg/lock-frontend".into(),
    ));
    key(&mut app, KeyCode::Enter);
    assert!(
        app.status
            .as_ref()
            .unwrap()
            .text
            .starts_with("this is apt's message, but its lock is not in the list"),
        "{:?}",
        app.status
    );
    assert_eq!(selected(&app), "/tmp/.X7-lock", "the selection stays");
    keys(&mut app, "w");
    app.update(Msg::Paste("segmentation fault".into()));
    key(&mut app, KeyCode::Enter);
    assert_eq!(
        app.status.as_ref().unwrap().text,
        "locksmith does not know this message, and it names no lock in the list"
    );
    // Esc cancels, selecting nothing.
    keys(&mut app, "w");
    app.update(Msg::Paste("/srv/app/worker.pid".into()));
    key(&mut app, KeyCode::Esc);
    assert!(app.popup().is_none());
    assert_eq!(selected(&app), "/tmp/.X7-lock");
    // An unknown message that names a listed lock selects it.
    keys(&mut app, "w");
    app.update(Msg::Paste("Fehler: /srv/app/worker.pid ist belegt".into()));
    key(&mut app, KeyCode::Enter);
    assert_eq!(selected(&app), "/srv/app/worker.pid");
}
