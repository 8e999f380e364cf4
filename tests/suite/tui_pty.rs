//! The terminal UI end to end: the real binary in a pseudo-terminal, its screen read through a
//! vt100 parser on a background thread. A temp tree holds one stale pidfile (a dead PID) and
//! one live pidfile (a `sleep` child started before the file was written); the test selects
//! the stale one, reclaims it with `d` then `y`, checks the file is gone and journaled while
//! the live one stays, undoes it with `u` and `y` (content, mode and mtime back), and quits
//! with `q`. Other tests drive the mouse (SGR reports, as terminals send them), watch a new
//! lock file appear without `r`, and read the OSC 52 clipboard sequence of `y` from the raw
//! output. Every wait has a deadline; the UI process and the `sleep` are killed on every
//! path.

use std::io::Write;
use std::path::Path;
use std::time::Duration;

use crate::util;
use crate::util::Env;
use crate::util::ui::{COLS, ROWS, Ui};

fn line_with<'a>(screen: &'a str, needle: &str) -> Option<&'a str> {
    screen.lines().find(|l| l.contains(needle))
}

#[test]
fn reclaim_a_stale_pidfile_from_the_ui() {
    let env = Env::new();
    let tree = env.path().join("tree");
    std::fs::create_dir(&tree).unwrap();
    let stale = tree.join("stale.pid");
    let content = format!("{}\n", util::dead_pid());
    std::fs::write(&stale, &content).unwrap();
    // A mode and a time of its own, which undo must put back.
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&stale, std::fs::Permissions::from_mode(0o640)).unwrap();
    let mtime = std::time::SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    std::fs::File::options()
        .write(true)
        .open(&stale)
        .unwrap()
        .set_modified(mtime)
        .unwrap();
    let sleeper = util::sleeper();
    // Written after the sleeper started: its owner is provably this very process.
    std::thread::sleep(Duration::from_millis(1100));
    let live = tree.join("live.pid");
    std::fs::write(&live, format!("{}\n", sleeper.pid())).unwrap();

    let mut ui = Ui::start(&env, &[&tree], &[]);
    let screen = ui.wait_for("both locks listed", |s| {
        line_with(s, "stale.pid").is_some_and(|l| l.contains("✗ stale"))
            && line_with(s, "live.pid").is_some_and(|l| l.contains("● live"))
    });
    // Stale first, and selected.
    let stale_row = screen
        .lines()
        .position(|l| l.contains("stale.pid"))
        .unwrap();
    let live_row = screen.lines().position(|l| l.contains("live.pid")).unwrap();
    assert!(stale_row < live_row, "stale first:\n{screen}");
    assert!(
        line_with(&screen, "stale.pid").unwrap().starts_with('▶'),
        "{screen}"
    );

    // d on a live lock is refused with the reason; nothing opens.
    ui.send("j");
    ui.wait_for("the live row selected", |s| {
        line_with(s, "live.pid").is_some_and(|l| l.starts_with('▶'))
    });
    ui.send("d");
    ui.wait_for("the refusal", |s| {
        s.contains("not reclaimable") && s.contains("is live")
    });
    ui.send("k");

    ui.send("d");
    let dialog = ui.wait_for("the confirm dialog", |s| {
        s.contains("Reclaim this stale lock?") && s.contains("[ No ]")
    });
    assert!(dialog.contains("Why it is stale:"), "{dialog}");
    assert!(stale.exists(), "nothing is removed before the yes");
    ui.send("y");
    ui.wait_for("the reclaim result", |s| {
        s.lines()
            .any(|l| l.starts_with("removed ") && l.contains("stale.pid"))
    });
    assert!(!stale.exists(), "the stale pidfile is gone");
    assert!(live.exists(), "the live pidfile stays");
    let journal = env.journal();
    assert_eq!(journal.len(), 1, "{journal:?}");
    let entry = journal[0].to_string();
    assert!(entry.contains("stale.pid"), "{entry}");
    ui.wait_for("the stale row gone, the live one kept", |s| {
        // (the status line names the removed file; the table must not)
        let row = |name: &str| s.lines().any(|l| l.contains("pidfile") && l.contains(name));
        !row("stale.pid") && row("live.pid")
    });

    // u names what it will put back and asks; on y it puts it back as it was, and journals
    // it; its row returns.
    ui.send("u");
    let asked = ui.wait_for("the undo dialog", |s| {
        s.contains("put this lock back?") && s.contains("[ No ]")
    });
    assert!(line_with(&asked, "stale.pid").is_some(), "{asked}");
    assert!(!stale.exists(), "nothing is put back before the yes");
    ui.send("y");
    ui.wait_for("the undo result", |s| {
        s.lines()
            .any(|l| l.starts_with("restored ") && l.contains("stale.pid"))
    });
    assert_eq!(std::fs::read_to_string(&stale).unwrap(), content);
    let meta = std::fs::metadata(&stale).unwrap();
    assert_eq!(meta.permissions().mode() & 0o7777, 0o640);
    assert_eq!(meta.modified().unwrap(), mtime);
    let journal = env.journal();
    assert_eq!(journal.len(), 2, "{journal:?}");
    assert_eq!(journal[1]["event"], "restore", "{journal:?}");
    ui.wait_for("the stale row back", |s| {
        s.lines()
            .any(|l| l.contains("pidfile") && l.contains("stale.pid") && l.contains("✗ stale"))
    });
    // A second u has nothing left to undo, and says so.
    ui.send("u");
    ui.wait_for("nothing to undo", |s| {
        s.contains("nothing to undo: every reclaim of this session is undone already")
    });

    ui.send("q");
    assert_eq!(ui.wait_exit(), 0);
    drop(sleeper);
}

#[test]
fn no_color_and_quit_keys_in_a_real_terminal() {
    let env = Env::new();
    let tree = env.path().join("tree");
    std::fs::create_dir(&tree).unwrap();
    std::fs::write(tree.join("gone.pid"), format!("{}\n", util::dead_pid())).unwrap();
    let mut ui = Ui::start(&env, &[&tree], &[("NO_COLOR", "1")]);
    ui.wait_for("the stale row", |s| {
        line_with(s, "gone.pid").is_some_and(|l| l.contains("✗ stale"))
    });
    {
        let parser = ui.screen.lock().unwrap();
        let screen = parser.screen();
        for row in 0..ROWS {
            for col in 0..COLS {
                if let Some(cell) = screen.cell(row, col) {
                    assert_eq!(cell.fgcolor(), vt100::Color::Default, "({row},{col})");
                    assert_eq!(cell.bgcolor(), vt100::Color::Default, "({row},{col})");
                }
            }
        }
    }
    // Help, then Esc closes it; Esc again quits.
    ui.send("?");
    ui.wait_for("the help", |s| s.contains("Show this help"));
    ui.send("\x1b");
    ui.wait_for("the help closed", |s| !s.contains("Show this help"));
    ui.send("\x1b");
    assert_eq!(ui.wait_exit(), 0);
}

#[test]
fn verdicts_are_judged_again_while_the_ui_runs() {
    let env = Env::new();
    let tree = env.path().join("tree");
    std::fs::create_dir(&tree).unwrap();
    let mut sleeper = util::sleeper();
    std::thread::sleep(Duration::from_millis(1100));
    let live = tree.join("owner.pid");
    std::fs::write(&live, format!("{}\n", sleeper.pid())).unwrap();
    let other = tree.join("other.pid");
    std::fs::write(&other, format!("{}\n", util::dead_pid())).unwrap();

    let interval = Path::new("0.2");
    let mut ui = Ui::start(&env, &[&tree, Path::new("--interval"), interval], &[]);
    ui.wait_for("the live lock", |s| {
        line_with(s, "owner.pid").is_some_and(|l| l.contains("● live"))
    });
    // Its owner dies: the row turns stale on screen, without a key press.
    sleeper.kill();
    ui.wait_for("the lock judged stale", |s| {
        line_with(s, "owner.pid").is_some_and(|l| l.contains("✗ stale"))
    });
    // Someone else removes a lock: its row goes.
    std::fs::remove_file(&other).unwrap();
    ui.wait_for("the removed lock gone", |s| {
        line_with(s, "other.pid").is_none()
    });
    ui.send("q");
    assert_eq!(ui.wait_exit(), 0);
}

#[test]
fn without_a_terminal_or_with_a_bad_interval_it_says_why_and_exits_2() {
    let env = Env::new();
    let out = env.run([env.path().as_os_str()]);
    assert_eq!(out.status.code(), Some(2));
    let err = util::stderr(&out);
    assert!(
        err.contains("needs a terminal") && err.contains("--scan"),
        "{err}"
    );
    for bad in ["0", "-1", "nan"] {
        let out = env.run([format!("--interval={bad}")]);
        assert_eq!(out.status.code(), Some(2), "--interval {bad}");
        let err = util::stderr(&out);
        assert!(err.contains("--interval"), "{err}");
    }
}

/// The screen row (0-based) of the first line containing `needle`.
fn row_of(screen: &str, needle: &str) -> Option<u16> {
    screen
        .lines()
        .position(|l| l.contains(needle))
        .map(|r| r as u16)
}

#[test]
fn the_mouse_selects_sorts_and_scrolls() {
    let env = Env::new();
    let tree = env.path().join("tree");
    std::fs::create_dir(&tree).unwrap();
    for name in ["a.pid", "b.pid", "c.pid"] {
        std::fs::write(tree.join(name), format!("{}\n", util::dead_pid())).unwrap();
    }
    let mut ui = Ui::start(&env, &[&tree], &[]);
    let screen = ui.wait_for("three rows", |s| {
        ["a.pid", "b.pid", "c.pid"]
            .iter()
            .all(|n| line_with(s, n).is_some_and(|l| l.contains("✗ stale")))
    });
    assert!(
        line_with(&screen, "a.pid").unwrap().starts_with('▶'),
        "{screen}"
    );
    // A click on a row selects it.
    let c_row = row_of(&screen, "c.pid").unwrap();
    ui.mouse(0, 10, c_row);
    ui.wait_for("c.pid selected", |s| {
        line_with(s, "c.pid").is_some_and(|l| l.starts_with('▶'))
    });
    // A click on the PATH title sorts by path; a second click inverts.
    let titles = row_of(&screen, "VERDICT").unwrap();
    let head = line_with(&screen, "VERDICT").unwrap();
    let path_col = head[..head.find("PATH").unwrap()].chars().count() as u16;
    ui.mouse(0, path_col + 1, titles);
    ui.wait_for("sorted by path", |s| s.contains("PATH ▲"));
    ui.mouse(0, path_col + 1, titles);
    let inverted = ui.wait_for("sorted by path, inverted", |s| s.contains("PATH ▼"));
    assert!(
        row_of(&inverted, "c.pid") < row_of(&inverted, "a.pid"),
        "{inverted}"
    );
    // The wheel moves the selection (it stays on screen).
    ui.send("g");
    ui.wait_for("the first row selected", |s| {
        line_with(s, "c.pid").is_some_and(|l| l.starts_with('▶'))
    });
    ui.mouse(65, 10, titles + 1);
    ui.wait_for("the wheel moved down", |s| {
        line_with(s, "a.pid").is_some_and(|l| l.starts_with('▶'))
    });
    ui.send("q");
    assert_eq!(ui.wait_exit(), 0);
    // Mouse reporting is switched off again on the way out (the reader thread may still be
    // feeding the last bytes the UI wrote before it exited).
    util::wait_until("mouse reporting switched off", || {
        ui.screen.lock().unwrap().screen().mouse_protocol_mode() == vt100::MouseProtocolMode::None
    });
}

#[test]
fn a_new_lock_file_appears_without_a_key_and_y_copies_its_path() {
    let env = Env::new();
    let tree = env.path().join("tree");
    std::fs::create_dir(&tree).unwrap();
    std::fs::write(tree.join("first.pid"), format!("{}\n", util::dead_pid())).unwrap();
    let mut ui = Ui::start(&env, &[&tree], &[]);
    ui.wait_for("the first lock", |s| {
        line_with(s, "first.pid").is_some_and(|l| l.contains("✗ stale"))
    });
    ui.wait_for("the scan done", |s| !s.contains("scanning"));
    let late = tree.join("late.pid");
    std::fs::write(&late, format!("{}\n", util::dead_pid())).unwrap();
    ui.wait_for("the new lock listed, no key pressed", |s| {
        line_with(s, "late.pid").is_some_and(|l| l.contains("✗ stale"))
    });
    // y on it: the path goes out as OSC 52.
    ui.send("G");
    ui.wait_for("late.pid selected", |s| {
        line_with(s, "late.pid").is_some_and(|l| l.starts_with('▶'))
    });
    ui.send("y");
    let encoded = base64(late.as_os_str().as_encoded_bytes());
    ui.wait_for_raw(
        "the OSC 52 sequence",
        format!("\x1b]52;c;{encoded}\x07").as_bytes(),
    );
    ui.wait_for("the status", |s| s.contains("to the clipboard"));
    ui.send("q");
    assert_eq!(ui.wait_exit(), 0);
}

/// Standard base64, to check the clipboard sequence independently of the UI's own encoder.
fn base64(bytes: &[u8]) -> String {
    let out = std::process::Command::new("base64")
        .arg("-w0")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            c.stdin.take().unwrap().write_all(bytes)?;
            c.wait_with_output()
        })
        .expect("run base64");
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn after_a_resize_the_selection_and_every_count_stay_on_screen() {
    let env = Env::new();
    let tree = env.path().join("tree");
    std::fs::create_dir(&tree).unwrap();
    for i in 0..40 {
        std::fs::write(
            tree.join(format!("p{i:02}.pid")),
            format!("{}\n", util::dead_pid()),
        )
        .unwrap();
    }
    // Not a PID: unknown, sorted last.
    std::fs::write(tree.join("zz.pid"), "garbage\n").unwrap();
    let mut ui = Ui::start(&env, &[&tree], &[]);
    ui.wait_for("every lock listed", |s| {
        s.contains("41 locks") && !s.contains("scanning")
    });
    ui.send("G");
    ui.wait_for("the last row selected", |s| s.contains("41/41"));
    ui.resize(15, 60);
    let small = ui.wait_for("the small screen", |s| {
        s.lines().count() <= 15 && line_with(s, "zz.pid").is_some_and(|l| l.starts_with('▶'))
    });
    let header = small.lines().next().unwrap();
    assert!(header.contains("✗40") && header.contains("?1"), "{small}");
    ui.send("q");
    assert_eq!(ui.wait_exit(), 0);
}

#[test]
fn foreign_locks_are_asked_about_in_the_background_and_reclaimed_after_asking_again() {
    if let Some(why) = util::sshd::unavailable() {
        return util::skip(why);
    }
    // A second host, node17, reached through an ssh config of this test's own.
    let node = util::sshd::Sshd::start("node17");
    let ssh_config = node.path("ssh_config");
    std::fs::write(&ssh_config, node.client_block("node17", "known_hosts")).unwrap();
    let env = Env::new();
    let cfg = env.path().join("ask.json");
    std::fs::write(
        &cfg,
        format!(
            r#"{{"ask_hosts": {{"ssh_args": ["-F", "{}"], "program": "{}"}}}}"#,
            ssh_config.display(),
            crate::util::BIN
        ),
    )
    .unwrap();
    let tree = env.path().join("shared");
    std::fs::create_dir(&tree).unwrap();
    // An emacs lock of node17 naming a process that is gone there.
    let lock = tree.join(".#notes.txt");
    std::os::unix::fs::symlink(format!("bob@node17.{}", util::dead_pid()), &lock).unwrap();

    let mut ui = Ui::start(
        &env,
        &[Path::new("--ask-hosts"), Path::new("--config"), &cfg, &tree],
        &[],
    );
    ui.wait_for("the lock proven stale by node17's answer", |s| {
        line_with(s, ".#notes.txt").is_some_and(|l| l.contains("✗ stale"))
    });
    ui.send("\r");
    ui.wait_for("the answer in the details", |s| {
        s.contains("asked node17 over ssh: no process")
    });
    ui.send("d");
    ui.wait_for("the confirm dialog", |s| {
        s.contains("Reclaim this stale lock?")
    });
    ui.send("y");
    ui.wait_for("the reclaim result", |s| {
        s.lines()
            .any(|l| l.starts_with("removed ") && l.contains(".#notes.txt"))
    });
    assert!(std::fs::symlink_metadata(&lock).is_err());
    let journal = env.journal();
    assert_eq!(journal.len(), 1, "{journal:?}");
    assert!(
        journal[0]["evidence"][0]
            .as_str()
            .unwrap()
            .starts_with("asked node17 over ssh"),
        "{journal:?}"
    );
    ui.send("q");
    assert_eq!(ui.wait_exit(), 0);
}
