//! What comes back to the table: reclaim outcomes, and locks that are gone.

use crate::tui::testkit::*;

#[test]
fn reclaim_outcomes_update_rows_and_status() {
    let mut app = app();
    app.busy.reclaiming = true;
    app.update(Msg::Reclaimed(vec![ReclaimResult {
        path: PathBuf::from("/srv/app/worker.pid"),
        removed: true,
        gone: false,
        message: "removed /srv/app/worker.pid (copy: /s/saved/1)".into(),
        judgement: None,
    }]));
    app.refresh();
    assert!(!app.busy.reclaiming);
    assert_eq!(app.visible_len(), 4);
    assert_eq!(app.status().cloned().unwrap().level, Level::Info);
    assert!(
        app.status()
            .cloned()
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
    let s = app.status().cloned().unwrap();
    assert_eq!(s.level, Level::Error);
    assert!(
        s.text.contains("not removed") && s.text.contains("live now"),
        "{}",
        s.text
    );
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
    assert!(app.status().unwrap().text.contains("is live"));
    app.update(Msg::Rejudged(vec![(
        PathBuf::from("/srv/app/web.pid"),
        Rejudge::Gone,
    )]));
    app.refresh();
    assert_ne!(selected(&app), "/srv/app/web.pid");
    assert!(app.status().unwrap().text.contains("is live"));
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
    let s = app.status().cloned().unwrap();
    assert_eq!(s.level, Level::Warn);
    assert!(s.text.contains("is gone"), "{}", s.text);
    assert!(!s.text.contains("undoes"), "{}", s.text);
}
