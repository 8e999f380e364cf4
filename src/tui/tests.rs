//! Tests of the whole screen: the app routing keys and the mouse to the part that has them,
//! and frames drawn into ratatui's `TestBackend` with every component in place (asserted
//! line by line and with insta snapshots).

use crate::tui::testkit::*;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::style::Color;

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
fn detail_pane_shows_the_evidence_owner_process_and_escaped_content() {
    let mut app = app();
    keys(&mut app, "j"); // the live web.pid
    key(&mut app, KeyCode::Enter);
    assert!(app.detail.show);
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
fn help_is_generated_from_the_key_map() {
    let mut app = app();
    keys(&mut app, "?");
    let text = screen(&draw(&mut app, 100, 120));
    // Every binding of every context, each on its line before the help wraps them.
    let lines: Vec<String> = crate::tui::popup::help::lines(Theme::COLOR, crate::tui::popup::ALL)
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
    .chain(crate::tui::popup::ALL.iter().map(|&k| Context::Popup(k)));
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
    let (shown, max) = crate::tui::popup::extent(
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
    assert!(app.filter().is_empty());
    assert_eq!(app.marked(), 1, "the filter first");
    assert!(key(&mut app, KeyCode::Esc).is_none());
    assert_eq!(app.marked(), 0);
    for _ in 0..3 {
        assert!(key(&mut app, KeyCode::Esc).is_none(), "Esc never quits");
    }
    assert!(matches!(app.mode(), Mode::Table));
    assert!(
        app.status().unwrap().text.contains("q quits"),
        "{:?}",
        app.status()
    );
    assert!(matches!(keys(&mut app, "q").as_slice(), [Effect::Quit]));
    let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
    assert!(matches!(app.update(Msg::Key(ctrl_c)), Some(Effect::Quit)));
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
    assert_eq!((app.sort(), app.descending()), (Column::Path, false));
    app.update(click(x, 1));
    assert_eq!((app.sort(), app.descending()), (Column::Path, true));
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
    assert!(app.detail.scroll > 0);
    assert_eq!(app.cursor(), Some(0), "the selection stays");
}
