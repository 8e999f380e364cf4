//! The why prompt: a pasted error message selects its lock.

use crate::tui::testkit::*;

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
    let status = app.status().unwrap();
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
        app.status()
            .unwrap()
            .text
            .starts_with("this is apt's message, but its lock is not in the list"),
        "{:?}",
        app.status()
    );
    assert_eq!(selected(&app), "/tmp/.X7-lock", "the selection stays");
    keys(&mut app, "w");
    app.update(Msg::Paste("segmentation fault".into()));
    key(&mut app, KeyCode::Enter);
    assert_eq!(
        app.status().unwrap().text,
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
