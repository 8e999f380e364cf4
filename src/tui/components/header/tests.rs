//! The header and the scans' progress it shows.

use crate::tui::testkit::*;

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
fn scan_events_stream_in_and_a_complete_scan_drops_what_it_did_not_find() {
    let mut app = app();
    let old = app.progress().generation;
    let Some(Effect::Scan { generation }) = keys(&mut app, "r").pop() else {
        panic!("r rescans")
    };
    assert_eq!(generation, old + 1);
    assert!(app.progress().scanning);
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
    assert_eq!(app.progress().entries, 77);
    assert_eq!(app.progress().errors, 1);
    scan_done(&mut app, generation, 80, 1, 10);
    app.refresh();
    assert!(!app.progress().scanning);
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
    let s = app.status().cloned().unwrap();
    assert_eq!(s.level, Level::Error);
    assert!(s.text.contains("no root could be read"));
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
    assert!(app.status().is_none(), "{:?}", app.status());
    let text = screen(&draw(&mut app, 120, 12));
    assert!(
        text.contains("12,346 entries") && text.contains("1 error"),
        "{text}"
    );
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
    let s = app.status().cloned().unwrap();
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
