//! The lock table's tests: the selection, scrolling, the filter and find prompts, sorting,
//! marks, and the rows as they come and go.

use crate::tui::testkit::*;

#[test]
fn stale_first_then_by_path() {
    let app = app();
    assert_eq!(
        order(&app),
        [
            "/srv/app/worker.pid",
            "/srv/app/web.pid",
            "/mnt/nfs/job.lock",
            "/tmp/.X0-lock",
            "/var/lib/dpkg/lock",
        ]
    );
    assert_eq!(selected(&app), "/srv/app/worker.pid");
}

#[test]
fn the_first_row_stays_selected_while_rows_stream_in_until_the_user_moves() {
    let mut app = App::new(opts(Theme::COLOR, false), NOW);
    let Effect::Scan { generation } = app.rescan() else {
        unreachable!()
    };
    let show = |app: &mut App, f: Finding| {
        found(app, generation, f);
        app.refresh();
    };
    show(&mut app, live_with_process("/srv/app/web.pid"));
    assert_eq!(selected(&app), "/srv/app/web.pid");
    show(
        &mut app,
        finding("/srv/app/worker.pid", "pidfile", Verdict::Stale, Some(1)),
    );
    assert_eq!(
        selected(&app),
        "/srv/app/worker.pid",
        "the stale lock on top is selected"
    );
    keys(&mut app, "j");
    show(
        &mut app,
        finding("/a/first.pid", "pidfile", Verdict::Stale, Some(2)),
    );
    assert_eq!(
        selected(&app),
        "/srv/app/web.pid",
        "after a move, the selection follows"
    );
}

#[test]
fn navigation_keys_move_the_selection_and_clamp() {
    let mut app = app();
    keys(&mut app, "jj");
    assert_eq!(app.cursor(), Some(2));
    keys(&mut app, "k");
    assert_eq!(app.cursor(), Some(1));
    key(&mut app, KeyCode::Down);
    assert_eq!(app.cursor(), Some(2));
    key(&mut app, KeyCode::Up);
    assert_eq!(app.cursor(), Some(1));
    keys(&mut app, "G");
    assert_eq!(app.cursor(), Some(4));
    keys(&mut app, "jjj");
    assert_eq!(app.cursor(), Some(4), "j at the bottom stays");
    keys(&mut app, "g");
    assert_eq!(app.cursor(), Some(0));
    keys(&mut app, "k");
    assert_eq!(app.cursor(), Some(0), "k at the top stays");
    // A table of 3 rows on screen: header, column titles, 3 rows, status, key bar.
    app.update(Msg::Resize {
        width: 80,
        height: 7,
    });
    assert_eq!(app.page(), 3);
    key(&mut app, KeyCode::PageDown);
    assert_eq!(app.cursor(), Some(3));
    key(&mut app, KeyCode::PageDown);
    assert_eq!(app.cursor(), Some(4));
    key(&mut app, KeyCode::PageUp);
    assert_eq!(app.cursor(), Some(1));
    key(&mut app, KeyCode::End);
    assert_eq!(app.cursor(), Some(4));
    key(&mut app, KeyCode::Home);
    assert_eq!(app.cursor(), Some(0));
}

#[test]
fn navigation_on_an_empty_list_does_nothing() {
    let mut app = app_with(Vec::new(), opts(Theme::COLOR, false));
    for c in "jkgG".chars() {
        key(&mut app, KeyCode::Char(c));
    }
    key(&mut app, KeyCode::PageDown);
    assert_eq!(app.cursor(), None);
    assert!(app.selected_row().is_none());
    assert!(keys(&mut app, "d").is_empty());
    assert_eq!(app.status().unwrap().text, "no lock selected");
}

#[test]
fn selection_follows_the_path_across_refreshes() {
    let mut app = app();
    keys(&mut app, "j"); // web.pid (live)
    assert_eq!(selected(&app), "/srv/app/web.pid");
    // New stale locks sort before it: it keeps the selection.
    let generation = app.progress().generation;
    for p in ["/a/1.pid", "/a/2.pid"] {
        found(
            &mut app,
            generation,
            finding(p, "pidfile", Verdict::Stale, Some(5)),
        );
    }
    app.refresh();
    assert_eq!(selected(&app), "/srv/app/web.pid");
    assert_eq!(app.cursor(), Some(3));
    // Its owner dies: re-judged stale, it moves up and stays selected.
    let now_stale = finding("/srv/app/web.pid", "pidfile", Verdict::Stale, Some(4321));
    app.update(Msg::Rejudged(vec![(
        PathBuf::from("/srv/app/web.pid"),
        Rejudge::Judged(Box::new(now_stale)),
    )]));
    app.refresh();
    assert_eq!(selected(&app), "/srv/app/web.pid");
    assert_eq!(app.selected_row().unwrap().verdict(), Verdict::Stale);
    assert_eq!(app.cursor(), Some(2));
    // Someone else removes it: the row goes, the selection stays at that position.
    app.update(Msg::Rejudged(vec![(
        PathBuf::from("/srv/app/web.pid"),
        Rejudge::Gone,
    )]));
    app.refresh();
    assert!(!order(&app).contains(&"/srv/app/web.pid".to_string()));
    assert_eq!(app.cursor(), Some(2));
    assert_eq!(selected(&app), "/srv/app/worker.pid");
}

#[test]
fn rejudging_never_adds_rows_and_failures_keep_them() {
    let mut app = app();
    app.update(Msg::Rejudged(vec![
        (
            PathBuf::from("/new/x.pid"),
            Rejudge::Judged(Box::new(finding(
                "/new/x.pid",
                "pidfile",
                Verdict::Stale,
                Some(1),
            ))),
        ),
        (
            PathBuf::from("/srv/app/worker.pid"),
            Rejudge::Failed("permission denied".into()),
        ),
    ]));
    app.refresh();
    assert_eq!(app.visible_len(), 5);
    assert!(order(&app).contains(&"/srv/app/worker.pid".to_string()));
}

#[test]
fn filter_narrows_incrementally_and_esc_clears() {
    let mut app = app();
    assert!(keys(&mut app, "/").is_empty());
    assert!(matches!(app.mode(), Mode::Filter));
    // Letters bound in the table are text here: q does not quit, d does not reclaim.
    assert!(keys(&mut app, "srv").is_empty());
    assert_eq!(app.filter(), "srv");
    assert_eq!(order(&app), ["/srv/app/worker.pid", "/srv/app/web.pid"]);
    keys(&mut app, "/web");
    assert!(order(&app).is_empty(), "{:?}", order(&app));
    for _ in 0..4 {
        key(&mut app, KeyCode::Backspace);
    }
    keys(&mut app, "q");
    assert!(order(&app).is_empty());
    key(&mut app, KeyCode::Backspace);
    assert_eq!(app.visible_len(), 2);
    // Filter matches dialect, host and pid too, case-insensitively.
    key(&mut app, KeyCode::Esc);
    assert!(matches!(app.mode(), Mode::Table));
    assert_eq!(app.filter(), "");
    assert_eq!(app.visible_len(), 5);
    keys(&mut app, "/X11");
    assert_eq!(order(&app), ["/tmp/.X0-lock"]);
    key(&mut app, KeyCode::Esc);
    keys(&mut app, "/build-7");
    assert_eq!(order(&app), ["/mnt/nfs/job.lock"]);
    key(&mut app, KeyCode::Esc);
    keys(&mut app, "/4242");
    assert_eq!(order(&app), ["/srv/app/worker.pid"]);
    // Enter keeps the filter; in the table, Esc clears it, and never quits.
    key(&mut app, KeyCode::Enter);
    assert!(matches!(app.mode(), Mode::Table));
    assert_eq!(app.visible_len(), 1);
    assert!(key(&mut app, KeyCode::Esc).is_none());
    assert_eq!(app.visible_len(), 5);
    assert!(key(&mut app, KeyCode::Esc).is_none());
}

#[test]
fn sort_cycles_columns_and_inverts() {
    let mut app = app();
    assert_eq!(app.sort(), Column::Verdict);
    keys(&mut app, "s");
    assert_eq!(app.sort(), Column::Dialect);
    assert_eq!(
        order(&app)[0],
        "/var/lib/dpkg/lock",
        "flock < pidfile < x11"
    );
    assert_eq!(order(&app)[4], "/tmp/.X0-lock");
    keys(&mut app, "S");
    assert!(app.descending());
    assert_eq!(order(&app)[0], "/tmp/.X0-lock");
    keys(&mut app, "S");
    keys(&mut app, "s");
    assert_eq!(app.sort(), Column::Pid);
    assert_eq!(order(&app)[0], "/tmp/.X0-lock", "no pid first");
    assert_eq!(order(&app)[4], "/srv/app/web.pid", "4321 > 4242 > 99");
    keys(&mut app, "sssss");
    assert_eq!(app.sort(), Column::Verdict, "the cycle wraps");
    assert_eq!(order(&app)[0], "/srv/app/worker.pid");
}

#[test]
fn tab_cycles_the_verdict_filter() {
    let mut app = app();
    let mut seen = Vec::new();
    for _ in 0..6 {
        key(&mut app, KeyCode::Tab);
        seen.push((app.verdict_filter(), app.visible_len()));
        if let Some(v) = app.verdict_filter() {
            assert!(app.visible().all(|r| r.verdict() == v));
        }
    }
    assert_eq!(
        seen,
        [
            (Some(Verdict::Stale), 1),
            (Some(Verdict::Live), 1),
            (Some(Verdict::Foreign), 1),
            (Some(Verdict::Unknown), 1),
            (Some(Verdict::Free), 1),
            (None, 5),
        ]
    );
    key(&mut app, KeyCode::BackTab);
    assert_eq!(app.verdict_filter(), Some(Verdict::Free));
}

#[test]
fn long_paths_keep_their_end() {
    let long = format!("/very{}/deep/app.pid", "/nested".repeat(30));
    let mut app = app_with(
        vec![finding(&long, "pidfile", Verdict::Stale, Some(1))],
        opts(Theme::COLOR, false),
    );
    let text = screen(&draw(&mut app, 80, 6));
    let row = line_with(&text, "app.pid");
    assert!(row.ends_with("/nested/nested/deep/app.pid"), "{text}");
    assert!(
        row.contains("/very/…/nested/"),
        "the first directory stays:\n{text}"
    );
}

#[test]
fn scrolling_keeps_the_selection_on_screen() {
    let mut app = app_with(stale_pidfiles(100, 0), opts(Theme::COLOR, false));
    let _ = draw(&mut app, 80, 12);
    for _ in 0..30 {
        keys(&mut app, "j");
    }
    let text = screen(&draw(&mut app, 80, 12));
    assert!(line_with(&text, "/d/030.pid").starts_with("▶"), "{text}");
    keys(&mut app, "G");
    let text = screen(&draw(&mut app, 80, 12));
    assert!(line_with(&text, "/d/099.pid").starts_with("▶"), "{text}");
    // PgUp moves by the table's height on screen.
    key(&mut app, KeyCode::PageUp);
    assert_eq!(app.cursor(), Some(99 - app.page()));
}

#[test]
fn a_filter_after_the_end_of_a_long_list_shows_every_match() {
    let mut app = app_with(many_with_notes(80), opts(Theme::COLOR, false));
    let _ = draw(&mut app, 80, 24);
    keys(&mut app, "G");
    let _ = draw(&mut app, 80, 24);
    keys(&mut app, "/notes");
    let text = screen(&draw(&mut app, 80, 24));
    for name in [".a.swp", "b.pid", "c.lock"] {
        assert!(text.contains(name), "{name} hidden:\n{text}");
    }
    // The same with the verdict filter: the stale rows are all on screen from the first.
    let mut app = app_with(many_with_notes(80), opts(Theme::COLOR, false));
    let _ = draw(&mut app, 80, 24);
    keys(&mut app, "G");
    let _ = draw(&mut app, 80, 24);
    key(&mut app, KeyCode::Tab);
    key(&mut app, KeyCode::Tab); // live: one row
    let text = screen(&draw(&mut app, 80, 24));
    assert!(text.contains("b.pid"), "{text}");
    key(&mut app, KeyCode::BackTab); // stale: 81 rows, the first on top
    let text = screen(&draw(&mut app, 80, 24));
    assert!(text.contains("/d/000.pid"), "{text}");
}

#[test]
fn invert_works_for_every_column_and_every_sorted_column_shows_its_arrow() {
    let mut app = app();
    keys(&mut app, "ssssss");
    assert_eq!(app.sort(), Column::Path);
    let up = order(&app);
    assert_eq!(up[0], "/mnt/nfs/job.lock");
    keys(&mut app, "S");
    let down = order(&app);
    assert_eq!(
        down,
        up.iter().rev().cloned().collect::<Vec<_>>(),
        "S inverts the path order"
    );
    let text = screen(&draw(&mut app, 120, 12));
    assert!(text.contains("PATH ▼"), "{text}");
    keys(&mut app, "S");
    for (presses, title) in [
        (1, "VERDICT ▲"),
        (1, "DIALECT ▲"),
        (1, "PID ▲"),
        (1, "COMMAND ▲"),
        (1, "HOST ▲"),
        (1, "AGE ▲"),
    ] {
        for _ in 0..presses {
            keys(&mut app, "s");
        }
        for (w, h) in [(120, 12), (80, 24)] {
            let text = screen(&draw(&mut app, w, h));
            let head = text.lines().nth(1).unwrap_or_default();
            // Columns may give way at 80, but a column shown shows its arrow.
            if w == 120 || head.contains(title.split(' ').next().unwrap()) {
                assert!(head.contains(title), "{w}x{h}: {title} in\n{text}");
            }
        }
    }
}

#[test]
fn paths_keep_the_repository_at_80x24_and_empty_columns_give_way() {
    let mut app = app_with(
        vec![
            finding(
                "/home/alice/projects/company-website/.git/index.lock",
                "git",
                Verdict::Stale,
                None,
            ),
            finding("/srv/app/worker.pid", "pidfile", Verdict::Stale, Some(4242)),
        ],
        opts(Theme::COLOR, false),
    );
    let text = screen(&draw(&mut app, 80, 24));
    assert!(
        text.contains("company-website/.git/index.lock"),
        "which repository:\n{text}"
    );
    assert!(!text.contains("COMMAND"), "no command known:\n{text}");
}

#[test]
fn a_tick_between_a_removal_and_the_refresh_is_harmless() {
    let mut app = app();
    for p in [
        "/srv/app/worker.pid",
        "/srv/app/web.pid",
        "/mnt/nfs/job.lock",
    ] {
        app.update(Msg::Rejudged(vec![(PathBuf::from(p), Rejudge::Gone)]));
    }
    app.update(Msg::Tick { now_ms: NOW + 1000 });
    let text = screen(&draw(&mut app, 80, 10));
    assert!(!text.contains("worker.pid"), "{text}");
    assert_eq!(app.visible_len(), 2);
}

#[test]
fn the_pid_column_names_the_holders_now_and_the_detail_pane_lists_each() {
    let mut f = finding("/srv/app/build.lock", "flock", Verdict::Live, Some(99));
    f.judgement.holders = vec![
        Holder {
            pid: 5001,
            name: Some("sleep".into()),
            how: HolderHow::Flock,
            mode: None,
            range: None,
            container: None,
        },
        Holder {
            pid: 5001,
            name: Some("sleep".into()),
            how: HolderHow::Open,
            mode: None,
            range: None,
            container: None,
        },
        Holder {
            pid: 5002,
            name: Some("make".into()),
            how: HolderHow::Open,
            mode: None,
            range: None,
            container: None,
        },
    ];
    let mut app = app_with(vec![f], opts(Theme::COLOR, false));
    let text = screen(&draw(&mut app, 120, 12));
    let row = line_with(&text, "build.lock");
    assert!(row.contains("5001+1") && row.contains("sleep"), "{text}");
    assert!(
        !row.contains("99 "),
        "not the owner the file records:\n{text}"
    );
    key(&mut app, KeyCode::Enter);
    let text = screen(&draw(&mut app, 120, 30));
    assert!(
        text.contains("Holders   • pid 5001 sleep (flock)"),
        "{text}"
    );
    assert!(text.contains("• pid 5002 make (open)"), "{text}");
}

#[test]
fn an_unsaved_vim_swap_is_marked_in_the_table() {
    let mut findings = sample();
    findings.push(vim_unsaved("/work/.notes.txt.swp"));
    findings.push(finding(
        "/work/.plain.txt.swp",
        "vim-swap",
        Verdict::Stale,
        Some(778),
    ));
    let mut app = app_with(findings, opts(Theme::COLOR, false));
    let text = screen(&draw(&mut app, 120, 14));
    assert!(
        line_with(&text, "/work/.notes.txt.swp").contains("✗ stale ✎"),
        "{text}"
    );
    assert!(
        !line_with(&text, "/work/.plain.txt.swp").contains('✎'),
        "{text}"
    );
    let dialect = |l: &str| column_of(l, "vim-swap");
    assert_eq!(
        dialect(line_with(&text, ".notes.txt.swp")),
        dialect(line_with(&text, ".plain.txt.swp")),
        "the mark has a place of its own"
    );
}

#[test]
fn f_finds_without_hiding_rows_and_n_and_shift_n_go_to_the_next_and_previous_match() {
    let mut app = app();
    keys(&mut app, "G");
    assert_eq!(selected(&app), "/var/lib/dpkg/lock");
    keys(&mut app, "f");
    keys(&mut app, "srv");
    assert_eq!(
        selected(&app),
        "/srv/app/worker.pid",
        "found as it is typed"
    );
    key(&mut app, KeyCode::Enter);
    assert_eq!(app.visible_len(), 5, "nothing is hidden");
    assert!(app.status().unwrap().text.contains("match 1 of 2"));
    keys(&mut app, "n");
    assert_eq!(selected(&app), "/srv/app/web.pid");
    keys(&mut app, "n");
    assert_eq!(selected(&app), "/srv/app/worker.pid");
    assert!(app.status().unwrap().text.contains("(from the top)"));
    keys(&mut app, "N");
    assert_eq!(selected(&app), "/srv/app/web.pid");
    assert!(app.status().unwrap().text.contains("(from the bottom)"));
    // Esc goes back to where the selection was.
    keys(&mut app, "fX0");
    assert_eq!(selected(&app), "/tmp/.X0-lock");
    key(&mut app, KeyCode::Esc);
    assert_eq!(selected(&app), "/srv/app/web.pid");
    assert!(matches!(app.mode(), Mode::Table));
}

#[test]
fn the_filter_keeps_the_selection_while_it_matches_else_selects_the_first_match() {
    let mut app = app();
    keys(&mut app, "j");
    assert_eq!(selected(&app), "/srv/app/web.pid");
    keys(&mut app, "/app");
    assert_eq!(selected(&app), "/srv/app/web.pid", "still matches: stays");
    keys(&mut app, "/wo");
    assert_eq!(order(&app), ["/srv/app/worker.pid"]);
    assert_eq!(selected(&app), "/srv/app/worker.pid");
    // Widening again keeps it.
    key(&mut app, KeyCode::Backspace);
    key(&mut app, KeyCode::Backspace);
    assert_eq!(app.visible_len(), 2);
    assert_eq!(selected(&app), "/srv/app/worker.pid");
    // Narrowing to rows that do not hold the selection selects the first match, not the last.
    key(&mut app, KeyCode::Backspace);
    keys(&mut app, "lock");
    assert_eq!(app.filter(), "applock");
    ctrl(&mut app, 'u');
    assert_eq!(app.filter(), "");
    keys(&mut app, "lock");
    assert_eq!(
        order(&app),
        ["/mnt/nfs/job.lock", "/tmp/.X0-lock", "/var/lib/dpkg/lock"]
    );
    assert_eq!(selected(&app), "/mnt/nfs/job.lock");
    // Ctrl-W deletes the last word, as in a shell.
    keys(&mut app, " job");
    ctrl(&mut app, 'w');
    assert_eq!(app.filter(), "lock ");
    ctrl(&mut app, 'w');
    assert_eq!(app.filter(), "");
}

#[test]
fn the_sort_marker_never_moves_a_column_and_a_new_sort_column_starts_ascending() {
    let mut app = app();
    let head = |app: &mut App| {
        screen(&draw(app, 120, 12))
            .lines()
            .nth(1)
            .unwrap()
            .to_string()
    };
    let titles = ["DIALECT", "PID", "COMMAND", "HOST", "AGE", "PATH"];
    let first = head(&mut app);
    let at = |h: &str| -> Vec<usize> { titles.iter().map(|t| column_of(h, t)).collect() };
    for _ in 0..8 {
        keys(&mut app, "s");
        assert!(!app.descending(), "a new sort column starts ascending");
        let h = head(&mut app);
        assert_eq!(at(&h), at(&first), "{first}\n{h}");
        keys(&mut app, "S");
        assert!(app.descending());
        let h = head(&mut app);
        assert!(h.contains('▼'), "{h}");
        assert_eq!(at(&h), at(&first), "{first}\n{h}");
    }
}

#[test]
fn n_and_n_find_again_what_the_filter_looked_for_once_it_is_cleared() {
    let mut findings = sample();
    findings.push(finding(
        "/srv/app/other.pid",
        "pidfile",
        Verdict::Live,
        Some(5),
    ));
    let mut app = app_with(findings, opts(Theme::COLOR, false));
    // Nothing looked for yet: n does nothing, and the bar does not offer it.
    let before = selected(&app);
    keys(&mut app, "n");
    assert_eq!(selected(&app), before);
    let bar = screen(&draw(&mut app, 200, 12));
    assert!(!bar.lines().last().unwrap().contains("next match"), "{bar}");
    // Filter with /, keep it, clear it with Esc: the whole list is back ...
    keys(&mut app, "/app/");
    key(&mut app, KeyCode::Enter);
    assert_eq!(app.visible_len(), 3);
    key(&mut app, KeyCode::Esc);
    assert_eq!(app.visible_len(), 6);
    // ... and n / N walk the rows the filter matched, in the list's order, wrapping around.
    let matches: Vec<String> = order(&app)
        .into_iter()
        .filter(|p| p.contains("/app/"))
        .collect();
    assert_eq!(matches.len(), 3);
    keys(&mut app, "G");
    keys(&mut app, "n");
    assert_eq!(
        selected(&app),
        matches[0],
        "from the bottom to the first match"
    );
    keys(&mut app, "n");
    assert_eq!(selected(&app), matches[1]);
    keys(&mut app, "N");
    assert_eq!(selected(&app), matches[0]);
    let status = app.status().unwrap().text.clone();
    assert!(status.contains("match 1 of 3"), "{status}");
    // The key bar says n/N find again.
    let text = screen(&draw(&mut app, 200, 12));
    assert!(
        text.lines().last().unwrap().contains("n/N next match"),
        "{text}"
    );
    // A filter typed and dropped with Esc is not looked for again.
    keys(&mut app, "/web");
    key(&mut app, KeyCode::Esc);
    keys(&mut app, "n");
    assert!(selected(&app).contains("/app/"), "{}", selected(&app));
}

#[test]
fn a_long_host_keeps_its_kind_and_start_and_a_namespace_is_no_container() {
    let container =
        |runtime: &str, id: &str, name: Option<&str>| locksmith::verdict::ContainerInfo {
            id: locksmith::probe::ContainerId {
                runtime: runtime.into(),
                id: id.into(),
                name: name.map(String::from),
            },
            ns_pid: Some(2),
        };
    let mut long = live_with_process("/srv/app/long.pid");
    long.judgement.process.as_mut().unwrap().container = Some(container(
        "podman",
        &"3f2a".repeat(16),
        Some("kube-apiserver-control-plane"),
    ));
    let mut sandbox = live_with_process("/home/me/.cache/sandbox.pid");
    sandbox.judgement.process.as_mut().unwrap().container =
        Some(container("unknown", "pid:[4026532252]", None));
    let mut app = app_with(vec![long, sandbox], opts(Theme::COLOR, false));
    let text = screen(&draw(&mut app, 120, 12));
    let row = |name: &str| {
        text.lines()
            .find(|l| l.contains(name))
            .unwrap_or_else(|| panic!("{name}: {text}"))
            .to_string()
    };
    assert!(row("long.pid").contains(" ctr:kube-apiser… "), "{text}");
    assert!(row("sandbox.pid").contains(" ns:4026532252 "), "{text}");
    assert!(!text.contains("ctr:pid"), "{text}");
}

#[test]
fn space_marks_rows_and_d_reclaims_the_marked_leaving_alone_the_ones_not_stale() {
    let mut findings = sample();
    findings.push(finding(
        "/srv/app/other.pid",
        "pidfile",
        Verdict::Stale,
        Some(7),
    ));
    let mut app = app_with(findings, opts(Theme::COLOR, false));
    assert_eq!(selected(&app), "/srv/app/other.pid");
    // Space marks and moves down: other.pid, then web.pid (live) after skipping worker.pid.
    keys(&mut app, " ");
    assert_eq!(selected(&app), "/srv/app/worker.pid");
    keys(&mut app, "j ");
    assert_eq!(selected(&app), "/mnt/nfs/job.lock");
    assert_eq!(app.marked(), 2);
    let text = screen(&draw(&mut app, 120, 12));
    assert!(
        line_with(&text, "/srv/app/other.pid").starts_with(" *✗ stale"),
        "{text}"
    );
    assert!(
        line_with(&text, "/srv/app/web.pid").starts_with(" *● live"),
        "{text}"
    );
    assert!(line_with(&text, "/srv/app/worker.pid").starts_with("  ✗ stale"));
    assert!(
        text.lines().next().unwrap().ends_with("│ 2 marked"),
        "{text}"
    );
    let bar = text.lines().last().unwrap();
    assert!(
        bar.contains("D reclaim 2 marked") || bar.contains("D 2 marked"),
        "{bar}"
    );
    // The marks go with the rows through a sort.
    keys(&mut app, "S");
    assert!(app.is_marked(std::path::Path::new("/srv/app/other.pid")));
    keys(&mut app, "S");

    keys(&mut app, "D");
    let d = app.dialog().expect("D opens the dialog");
    let ConfirmAction::Reclaim {
        findings,
        kept,
        skipped,
    } = &d.action
    else {
        panic!("a reclaim")
    };
    let paths = |fs: &[Finding]| -> Vec<String> {
        fs.iter().map(|f| f.path.display().to_string()).collect()
    };
    assert_eq!(paths(findings), ["/srv/app/other.pid"], "only the marked");
    assert!(kept.is_empty());
    assert_eq!(
        paths(skipped),
        ["/srv/app/web.pid"],
        "the live one is left alone"
    );
    let text = screen(&draw(&mut app, 100, 30));
    assert!(text.contains("Reclaim this stale lock?"), "{text}");
    assert!(
        text.contains("Left alone: 1 marked lock not proven stale"),
        "{text}"
    );
    let c = confirmed(keys(&mut app, "y"));
    assert_eq!(paths(c.findings()), ["/srv/app/other.pid"]);
    app.update(Msg::Reclaimed(vec![ReclaimResult {
        path: PathBuf::from("/srv/app/other.pid"),
        removed: true,
        gone: false,
        message: "removed /srv/app/other.pid (copy saved as x)".into(),
        judgement: None,
    }]));
    app.refresh();
    assert_eq!(app.marked(), 1, "the mark goes with its row");
    // Esc clears the marks (there is no filter), and says so; it does not quit.
    assert!(key(&mut app, KeyCode::Esc).is_none());
    assert_eq!(app.marked(), 0);
    assert!(app.status().unwrap().text.contains("1 mark cleared"));
    // With nothing marked, D is every stale lock shown again.
    keys(&mut app, "D");
    let c = confirmed(keys(&mut app, "y"));
    assert_eq!(paths(c.findings()), ["/srv/app/worker.pid"]);
}

#[test]
fn marking_only_locks_that_are_not_stale_reclaims_nothing() {
    let mut app = app();
    keys(&mut app, "j "); // web.pid, live
    assert_eq!(app.marked(), 1);
    assert!(keys(&mut app, "D").is_empty());
    assert!(app.popup().is_none());
    let s = app.status().cloned().unwrap();
    assert!(s.text.contains("no marked lock is stale"), "{}", s.text);
}
