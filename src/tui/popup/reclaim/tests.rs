//! The reclaim dialog: *No* by default, what *Yes* confirms, the risk of a forced removal,
//! long lists, and locks this user cannot remove.

use crate::tui::testkit::*;

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
    assert!(matches!(app.mode(), Mode::Table));
    assert!(app.status().unwrap().text.contains("nothing was removed"));
    assert!(!app.busy.reclaiming);
    // n and Esc cancel too, and q in the dialog does not quit.
    for k in [KeyCode::Char('n'), KeyCode::Esc, KeyCode::Char('q')] {
        keys(&mut app, "d");
        assert!(key(&mut app, k).is_none(), "{k:?}");
        assert!(matches!(app.mode(), Mode::Table), "{k:?}");
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
    assert!(app.busy.reclaiming);
    // A second d while it runs is refused.
    assert!(keys(&mut app, "d").is_empty());
    assert!(matches!(app.mode(), Mode::Table));
    assert!(app.status().unwrap().text.contains("already running"));
    // Tab then Enter is yes as well.
    app.busy.reclaiming = false;
    keys(&mut app, "d");
    key(&mut app, KeyCode::Tab);
    assert!(matches!(
        key(&mut app, KeyCode::Enter),
        Some(Effect::Reclaim(_))
    ));
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
    assert!(matches!(app.mode(), Mode::Table));
    let s = app.status().cloned().unwrap();
    assert!(s.text.starts_with("nothing was removed: "), "{}", s.text);
    assert!(s.text.contains("is sticky"), "{}", s.text);
    assert!(!app.busy.reclaiming);

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
