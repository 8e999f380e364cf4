//! The status bar: messages fit at a word, and go when they should.

use crate::tui::testkit::*;

#[test]
fn status_messages_fit_at_a_word_and_expire() {
    let mut app = app();
    keys(&mut app, "j"); // the live lock
    keys(&mut app, "d");
    let message = app.status().unwrap().text.clone();
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
    assert!(app.status().is_none());
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
fn a_message_about_a_row_goes_when_the_selection_moves_and_every_message_after_a_while() {
    let mut app = app();
    keys(&mut app, "j");
    keys(&mut app, "d");
    assert!(app.status().unwrap().text.contains("not reclaimable"));
    keys(&mut app, "j");
    assert!(
        app.status().is_none(),
        "about web.pid, which is not selected any more"
    );
    // One about no row stays while the selection moves, until it expires.
    keys(&mut app, "gd");
    key(&mut app, KeyCode::Esc);
    let text = app.status().cloned().unwrap().text;
    assert!(text.contains("nothing was removed"), "{text}");
    keys(&mut app, "jj");
    assert!(app.status().is_some());
    app.update(Msg::Tick {
        now_ms: NOW + 4_000,
    });
    assert!(app.status().is_some());
    app.update(Msg::Tick {
        now_ms: NOW + 6_000,
    });
    assert!(app.status().is_none(), "gone after a while");
}
