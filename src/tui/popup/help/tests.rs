//! The help: it opens, scrolls and closes, and lists every key.

use crate::tui::testkit::*;

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
    assert!(matches!(app.mode(), Mode::Table));
    keys(&mut app, "?");
    key(&mut app, KeyCode::Esc);
    assert!(matches!(app.mode(), Mode::Table));
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
