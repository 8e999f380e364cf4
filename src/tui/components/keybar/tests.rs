//! The key bar: read from the key map, fitted to the width with the same words.

use crate::tui::testkit::*;

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
        assert!(crate::tui::text::width(bar) <= 80, "{bar}");
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
