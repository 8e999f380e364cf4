//! The journal view.

use crate::tui::testkit::*;

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
    assert!(matches!(app.mode(), Mode::Table));
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
