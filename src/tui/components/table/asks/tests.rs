//! What the table's destructive keys ask for: `d` and `D` (never a live or free lock; a lock
//! not proven stale only in a dialog of its own), read-only, `y`'s copy, `e` and `o`.

use crate::tui::testkit::*;

#[test]
fn live_and_free_locks_are_never_reclaimed_and_the_status_says_why() {
    let mut app = app();
    let cases = [
        (1, "/srv/app/web.pid", "is live"),
        (4, "/var/lib/dpkg/lock", "is free"),
    ];
    for (i, path, why) in cases {
        keys(&mut app, "g");
        for _ in 0..i {
            keys(&mut app, "j");
        }
        assert_eq!(selected(&app), path);
        assert!(keys(&mut app, "d").is_empty());
        assert!(matches!(app.mode(), Mode::Table), "{path}");
        let s = app.status().cloned().unwrap();
        assert_eq!(s.level, Level::Warn);
        assert!(s.text.contains(why), "{path}: {}", s.text);
        let name = path.rsplit('/').next().unwrap();
        assert!(
            s.text
                .starts_with(&format!("not reclaimable: {name} {why}")),
            "{}",
            s.text
        );
    }
    // A lock not proven stale (foreign, unknown) is removed only on a person's word, in a
    // dialog of its own that defaults to No.
    for (i, path) in [(2, "/mnt/nfs/job.lock"), (3, "/tmp/.X0-lock")] {
        keys(&mut app, "g");
        for _ in 0..i {
            keys(&mut app, "j");
        }
        assert_eq!(selected(&app), path);
        keys(&mut app, "d");
        let Some(d) = app.dialog() else {
            panic!("d on {path} opens the dialog")
        };
        assert!(matches!(d.action, ConfirmAction::Force(_)));
        assert_eq!(d.highlight, Choice::No);
        // Enter keeps the default: No.
        assert!(key(&mut app, KeyCode::Enter).is_none());
        assert!(matches!(app.mode(), Mode::Table));
        keys(&mut app, "d");
        let c = confirmed(keys(&mut app, "y"));
        assert!(c.forced());
        assert_eq!(c.findings()[0].path, PathBuf::from(path));
        app.busy.reclaiming = false;
    }
}

#[test]
fn reclaim_all_takes_the_stale_locks_shown_and_keeps_unsaved_swaps() {
    let mut findings = sample();
    findings.push(finding(
        "/srv/app/other.pid",
        "pidfile",
        Verdict::Stale,
        Some(7),
    ));
    findings.push(vim_unsaved("/work/.notes.txt.swp"));
    let mut app = app_with(findings, opts(Theme::COLOR, false));
    keys(&mut app, "D");
    let Some(d) = app.dialog() else {
        panic!("D opens the dialog")
    };
    assert_eq!(d.highlight, Choice::No);
    let ConfirmAction::Reclaim { findings, kept, .. } = &d.action else {
        panic!("a reclaim")
    };
    let paths: Vec<_> = findings
        .iter()
        .map(|f| f.path.display().to_string())
        .collect();
    assert_eq!(paths, ["/srv/app/other.pid", "/srv/app/worker.pid"]);
    assert_eq!(kept.len(), 1);
    // The dialog lists each lock with its evidence, and the one kept.
    let text = screen(&draw(&mut app, 100, 30));
    for needle in [
        "Reclaim 2 stale locks?",
        "/srv/app/other.pid",
        "no process 7 on this host",
        "/srv/app/worker.pid",
        "no process 4242 on this host",
        "Kept: 1 vim swap file with unsaved changes",
        "/work/.notes.txt.swp",
    ] {
        assert!(text.contains(needle), "{needle:?} missing in\n{text}");
    }
    assert!(key(&mut app, KeyCode::Enter).is_none());
    // With a filter, only what is shown.
    keys(&mut app, "/other");
    key(&mut app, KeyCode::Enter);
    keys(&mut app, "D");
    let c = confirmed(keys(&mut app, "y"));
    assert_eq!(c.findings().len(), 1);
    assert_eq!(c.findings()[0].path, PathBuf::from("/srv/app/other.pid"));
    // Nothing stale shown: no dialog.
    app.busy.reclaiming = false;
    key(&mut app, KeyCode::Esc);
    keys(&mut app, "/web");
    key(&mut app, KeyCode::Enter);
    keys(&mut app, "D");
    assert!(matches!(app.mode(), Mode::Table));
    assert!(app.status().unwrap().text.contains("no stale lock shown"));
}

#[test]
fn readonly_disables_every_reclaim() {
    let mut app = app_with(sample(), opts(Theme::COLOR, true));
    for k in ["d", "D", "F"] {
        assert!(keys(&mut app, k).is_empty());
        assert!(matches!(app.mode(), Mode::Table), "{k}");
        assert!(app.status().unwrap().text.contains("read-only"), "{k}");
    }
    let text = screen(&draw(&mut app, 120, 10));
    let bar = text.lines().last().unwrap();
    assert!(!bar.contains("reclaim"), "{bar}");
    assert!(bar.contains("filter"), "{bar}");
    assert!(text.lines().next().unwrap().contains("read-only"));
}

/// What `y` copies, as the terminal gets it (the OSC 52 bytes), and what a shell makes of it
/// when pasted.
fn copied(app: &mut App) -> Vec<u8> {
    let effects = keys(app, "y");
    let [Effect::Copy(text)] = effects.as_slice() else {
        panic!("y must copy: {effects:?}")
    };
    let mut osc = Vec::new();
    crate::tui::clipboard::write_osc52(&mut osc, text).unwrap();
    let payload = osc
        .strip_prefix(b"\x1b]52;c;")
        .and_then(|p| p.strip_suffix(b"\x07"))
        .unwrap_or_else(|| panic!("not one OSC 52 sequence: {osc:?}"));
    assert!(
        payload
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || b"+/=".contains(b)),
        "{osc:?}"
    );
    text.clone()
}

/// Runs `printf %s PASTED` in bash, in a directory of its own: what the pasted word is, and
/// whether pasting it ran anything (a file `pwned` appears).
fn pasted_into_bash(pasted: &[u8]) -> (Vec<u8>, bool) {
    use std::os::unix::ffi::OsStrExt;
    let dir = tempfile::tempdir().unwrap();
    let mut line = b"printf %s ".to_vec();
    line.extend_from_slice(pasted);
    let out = std::process::Command::new("bash")
        .arg("--norc")
        .arg("-c")
        .arg(std::ffi::OsStr::from_bytes(&line))
        .current_dir(dir.path())
        .output()
        .unwrap();
    (out.stdout, dir.path().join("pwned").exists())
}

#[test]
fn y_never_copies_bytes_that_run_when_pasted() {
    use std::os::unix::ffi::OsStringExt;
    // A name with a newline and a command after it, ESC ending a bracketed paste, a bidi
    // override and a byte that is not UTF-8.
    let raw = b"/tmp/x\ntouch pwned\n\x1b[201~touch pwned;\xe2\x80\xae!!\xff'.pid".to_vec();
    let mut f = finding("/tmp/x.pid", "pidfile", Verdict::Stale, Some(4242));
    f.path = PathBuf::from(std::ffi::OsString::from_vec(raw.clone()));
    let mut app = app_with(vec![f], opts(Theme::COLOR, false));
    let text = copied(&mut app);
    assert!(
        !text.iter().any(|b| b.is_ascii_control() || *b >= 0x80),
        "{:?}",
        String::from_utf8_lossy(&text)
    );
    assert_eq!(
        String::from_utf8(text.clone()).unwrap(),
        r"$'/tmp/x\x0atouch pwned\x0a\x1b[201~touch pwned;\xe2\x80\xae\x21\x21\xff\'.pid'"
    );
    let status = &app.status().unwrap().text;
    assert!(status.contains("control characters"), "{status}");
    let (word, ran) = pasted_into_bash(&text);
    assert!(!ran, "pasting the copy ran a command");
    assert_eq!(word, raw, "bash reads back the exact name");
    // Before: the raw bytes ran `touch pwned` when pasted.
    assert!(pasted_into_bash(&raw).1);
}

#[test]
fn y_copies_a_plain_path_as_shown_and_quotes_the_rest() {
    let mut app = app_with(
        vec![finding(
            "/srv/app/worker.pid",
            "pidfile",
            Verdict::Stale,
            Some(1),
        )],
        opts(Theme::COLOR, false),
    );
    assert_eq!(copied(&mut app), b"/srv/app/worker.pid");
    let mut app = app_with(
        vec![finding(
            "/tmp/a b;$(touch pwned)`touch pwned`.pid",
            "pidfile",
            Verdict::Stale,
            Some(1),
        )],
        opts(Theme::COLOR, false),
    );
    let text = copied(&mut app);
    assert_eq!(text, b"'/tmp/a b;$(touch pwned)`touch pwned`.pid'");
    let (word, ran) = pasted_into_bash(&text);
    assert!(!ran);
    assert_eq!(word, b"/tmp/a b;$(touch pwned)`touch pwned`.pid");
    assert!(app.status().unwrap().text.contains("quoted for the shell"));
}

#[test]
fn y_refuses_a_path_too_long_to_copy_whole_and_says_why() {
    let long = format!(
        "/tmp/{}.pid",
        "\u{1b}".repeat(crate::tui::clipboard::MAX_COPY / 4 + 1)
    );
    let mut app = app_with(
        vec![finding(&long, "pidfile", Verdict::Stale, Some(1))],
        opts(Theme::COLOR, false),
    );
    assert!(keys(&mut app, "y").is_empty());
    let status = app.status().unwrap();
    assert_eq!(status.level, Level::Warn);
    assert!(status.text.starts_with("not copied:"), "{}", status.text);
}

#[test]
fn e_recovers_an_unsaved_swap_in_its_editor_and_o_opens_a_shell_in_the_locks_directory() {
    use crate::tui::msg::{Run, RunResult};
    let swap = PathBuf::from("/work/.notes.txt.swp");
    let mut findings = sample();
    findings.push(vim_unsaved("/work/.notes.txt.swp"));
    let mut app = app_with(findings, opts(Theme::COLOR, false));
    // Only the swap with unsaved changes has something to recover.
    assert!(keys(&mut app, "e").is_empty());
    assert!(app.status().unwrap().text.contains("nothing to recover"));
    keys(&mut app, "f.notes");
    key(&mut app, KeyCode::Enter);
    assert_eq!(selected(&app), "/work/.notes.txt.swp");
    // The key bar is the same on every row: e is in the help, not in the bar.
    let text = screen(&draw(&mut app, 120, 12));
    let bar = text.lines().last().unwrap().to_string();
    keys(&mut app, "g");
    let other = screen(&draw(&mut app, 120, 12));
    assert_eq!(other.lines().last().unwrap(), bar, "the bar follows no row");
    keys(&mut app, "f.notes");
    key(&mut app, KeyCode::Enter);
    let effects = keys(&mut app, "e");
    let [Effect::Run(Run::Recover { swap: s, editor }, f)] = effects.as_slice() else {
        panic!("e runs the editor: {effects:?}")
    };
    assert_eq!((s, *editor), (&swap, "vim"));
    assert_eq!(f.path, swap);
    // When it ends the message says so and the swap file is judged again.
    let effect = app.update(Msg::Ran(RunResult {
        path: swap.clone(),
        ok: true,
        message: "vim -r /work/.notes.txt.swp exited".into(),
        refused: None,
    }));
    let Some(Effect::Rejudge(again)) = effect else {
        panic!("judged again: {effect:?}")
    };
    assert_eq!(again[0].path, swap);
    assert!(app.status().unwrap().text.contains("exited"));
    // One it may not recover (checked when it is about to run): a pop-up says why, and
    // nothing is judged again or run.
    keys(&mut app, "e");
    let effect = app.update(Msg::Ran(RunResult {
        path: swap.clone(),
        ok: false,
        message: "not recovered".into(),
        refused: Some("it belongs to nobody (uid 65534), not to you".into()),
    }));
    assert!(effect.is_none(), "{effect:?}");
    let text = screen(&draw(&mut app, 100, 30));
    assert!(text.contains("Not recovered"), "{text}");
    assert!(text.contains("it belongs to nobody (uid 65534)"), "{text}");
    assert!(text.contains("[ Close ]"), "{text}");
    assert!(keys(&mut app, "q").is_empty());
    let text = screen(&draw(&mut app, 100, 30));
    assert!(!text.contains("Not recovered"), "closed: {text}");
    let effects = keys(&mut app, "o");
    let [Effect::Run(Run::Shell { dir }, _)] = effects.as_slice() else {
        panic!("o runs a shell: {effects:?}")
    };
    assert_eq!(dir, &PathBuf::from("/work"));
}
