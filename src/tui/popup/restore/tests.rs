//! `u` and the undo dialog.

use crate::tui::testkit::*;

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
    let status = app.status().unwrap().text.clone();
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
    assert!(matches!(app.mode(), Mode::Table));
    assert!(app.status().unwrap().text.contains("nothing was put back"));
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
    assert!(app.status().unwrap().text.contains("already running"));
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
    assert!(matches!(app.mode(), Mode::Table));
    let s = app.status().cloned().unwrap();
    assert_eq!(s.level, Level::Warn);
    assert!(s.text.contains("undone already"), "{}", s.text);
    // A refusal says why; read-only refuses at once.
    app.update(Msg::Restored(RestoreResult {
        findings: Vec::new(),
        restored: false,
        message: "not restored: /srv/app/worker.pid: something stands at its path".into(),
    }));
    assert_eq!(app.status().unwrap().level, Level::Error);
    let mut ro = app_with(sample(), opts(Theme::COLOR, true));
    assert!(keys(&mut ro, "u").is_empty());
    assert!(ro.status().unwrap().text.contains("read-only"));
}
