//! The terminal UI end to end: the real binary in a pseudo-terminal, its screen read through a
//! vt100 parser on a background thread. A temp tree holds one stale pidfile (a dead PID) and
//! one live pidfile (a `sleep` child started before the file was written); the test selects
//! the stale one, reclaims it with `d` then `y`, checks the file is gone and journaled while
//! the live one stays, undoes it with `u` and `y` (content, mode and mtime back), and quits
//! with `q`. Other tests drive the mouse (SGR reports, as terminals send them), watch a new
//! lock file appear without `r`, and read the OSC 52 clipboard sequence of `y` from the raw
//! output. Others mark two of three stale locks with Space and reclaim just those with `D`;
//! stop two live owners with `x` (one exits on SIGTERM, one ignores it and gets the SIGKILL
//! offered after the grace period; both rows turn stale); stop a `flock` holder stopped with
//! SIGSTOP, which the `x` dialog names as stuck, and see its lock let go; and run real
//! `vim -r` on the swap file of a crashed vim, then a shell, with the UI suspended and drawn
//! again when they end.
//! Every wait has a deadline; the UI process and the processes the tests start are killed on
//! every path.

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
        s.contains("nothing to undo: every reclaim made in the UI is undone already")
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
    // Help, then Esc closes it; Esc again does not quit (it says what does); q quits.
    ui.send("?");
    ui.wait_for("the help", |s| {
        s.contains("┌ Help ") && s.contains("Select the next lock")
    });
    ui.send("\x1b");
    ui.wait_for("the help closed", |s| !s.contains("┌ Help "));
    ui.send("\x1b");
    ui.wait_for("the hint", |s| s.contains("nothing to close: q quits"));
    ui.send("q");
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

#[test]
fn space_marks_two_stale_locks_and_d_reclaims_just_those() {
    let env = Env::new();
    let tree = env.path().join("tree");
    std::fs::create_dir(&tree).unwrap();
    let [a, b, c] = ["a.pid", "b.pid", "c.pid"].map(|n| tree.join(n));
    for p in [&a, &b, &c] {
        std::fs::write(p, format!("{}\n", util::dead_pid())).unwrap();
    }
    let mut ui = Ui::start(&env, &[&tree], &[]);
    ui.wait_for("three stale locks", |s| {
        ["a.pid", "b.pid", "c.pid"]
            .iter()
            .all(|n| line_with(s, n).is_some_and(|l| l.contains("✗ stale")))
    });
    // a is selected; Space marks it and moves to b; j skips b; Space marks c.
    ui.send(" j ");
    let screen = ui.wait_for("two marks", |s| s.contains("│ 2 marked"));
    assert!(
        line_with(&screen, "a.pid").unwrap().contains("*✗"),
        "{screen}"
    );
    assert!(
        !line_with(&screen, "b.pid").unwrap().contains('*'),
        "{screen}"
    );
    assert!(
        line_with(&screen, "c.pid").unwrap().contains("*✗"),
        "{screen}"
    );
    let bar = screen.lines().last().unwrap();
    assert!(
        bar.contains("D reclaim 2 marked") || bar.contains("D 2 marked"),
        "{screen}"
    );
    ui.send("D");
    ui.wait_for("the dialog of the marked", |s| {
        s.contains("Reclaim 2 stale locks?") && s.contains("[ No ]")
    });
    ui.send("y");
    ui.wait_for("the reclaim result", |s| {
        s.contains("reclaimed 2 stale locks")
    });
    assert!(!a.exists() && !c.exists(), "the marked are removed");
    assert!(b.exists(), "the one not marked stays");
    assert_eq!(env.journal().len(), 2);
    let screen = ui.wait_for("only b listed, no marks", |s| {
        line_with(s, "a.pid").is_none() && line_with(s, "c.pid").is_none()
    });
    assert!(line_with(&screen, "b.pid").is_some(), "{screen}");
    assert!(!screen.contains("marked"), "{screen}");
    ui.send("q");
    assert_eq!(ui.wait_exit(), 0);
}

/// A `sleep` that ignores SIGTERM when `stubborn`, started by a shell that waits for it (so it
/// is reaped as soon as it dies); its PID is written to `pid_at` once it runs.
fn holder(stubborn: bool, pid_at: &Path) -> util::Group {
    let trap = if stubborn { "trap '' TERM; " } else { "" };
    let script = format!("{trap}sleep 600 & echo $! > \"$1\"; wait");
    let g = util::Group::spawn(
        std::process::Command::new("sh")
            .args(["-c", &script, "sh"])
            .arg(pid_at)
            .stdin(std::process::Stdio::null()),
    );
    util::wait_until("the holder's PID", || {
        std::fs::read_to_string(pid_at).is_ok_and(|s| s.ends_with('\n'))
    });
    g
}

#[test]
fn x_stops_a_live_owner_with_sigterm_then_sigkill_and_its_lock_turns_stale() {
    let env = Env::new();
    let tree = env.path().join("tree");
    std::fs::create_dir(&tree).unwrap();
    let _meek = holder(false, &env.path().join("meek"));
    let _stubborn = holder(true, &env.path().join("stubborn"));
    let pid_of = |n: &str| -> i32 {
        std::fs::read_to_string(env.path().join(n))
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    };
    let (meek, stubborn) = (pid_of("meek"), pid_of("stubborn"));
    // Written after they started: each owner is provably the process named.
    std::thread::sleep(Duration::from_millis(1100));
    std::fs::write(tree.join("a-meek.pid"), format!("{meek}\n")).unwrap();
    std::fs::write(tree.join("b-stubborn.pid"), format!("{stubborn}\n")).unwrap();

    let mut ui = Ui::start(&env, &[&tree], &[]);
    ui.wait_for("both live", |s| {
        ["a-meek.pid", "b-stubborn.pid"]
            .iter()
            .all(|n| line_with(s, n).is_some_and(|l| l.contains("● live")))
    });
    // The first row: its sleep exits on SIGTERM.
    ui.send("x");
    let dialog = ui.wait_for("the SIGTERM dialog", |s| {
        s.contains("Send SIGTERM to this process?") && s.contains("[ No ]")
    });
    assert!(dialog.contains(&format!("pid {meek} sleep")), "{dialog}");
    assert!(util::alive(meek), "nothing is sent before the yes");
    ui.send("y");
    ui.wait_for("the lock stale on screen", |s| {
        line_with(s, "a-meek.pid").is_some_and(|l| l.contains("✗ stale"))
    });
    assert!(!util::alive(meek));
    // The second ignores SIGTERM: after the grace period SIGKILL is offered.
    ui.send("j");
    ui.wait_for("the stubborn row selected", |s| {
        line_with(s, "b-stubborn.pid").is_some_and(|l| l.starts_with('▶'))
    });
    ui.send("x");
    ui.wait_for("the SIGTERM dialog", |s| {
        s.contains("Send SIGTERM to this process?")
    });
    ui.send("y");
    let dialog = ui.wait_for("the SIGKILL offer", |s| {
        s.contains("Send SIGKILL to this process?") && s.contains("[ No ]")
    });
    assert!(
        dialog.contains("still running 5 s after SIGTERM"),
        "{dialog}"
    );
    assert!(util::alive(stubborn), "SIGTERM is ignored");
    ui.send("y");
    ui.wait_for("the stubborn lock stale on screen", |s| {
        line_with(s, "b-stubborn.pid").is_some_and(|l| l.contains("✗ stale"))
    });
    assert!(!util::alive(stubborn));
    ui.send("q");
    assert_eq!(ui.wait_exit(), 0);
}

/// A `flock` holder stopped with SIGSTOP: the detail pane says it is stuck, and `x` names it
/// and why in its dialog, with the command it started (and waits for) under it, and offers
/// SIGCONT first (resuming a stopped holder is what ends the least); `s` chooses SIGTERM, and
/// on yes (SIGTERM, with SIGCONT so that it acts on it) both end, and nobody holds the lock
/// any more.
#[test]
fn x_names_a_stopped_flock_holder_and_why_it_is_stuck_and_ends_it_on_yes() {
    if !util::require("flock") {
        return;
    }
    let env = Env::new();
    let tree = env.path().join("tree");
    std::fs::create_dir(&tree).unwrap();
    let lock = tree.join("job.lock");
    let holder = util::Group::spawn(
        std::process::Command::new("flock")
            .arg(&lock)
            .args(["sleep", "600"])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null()),
    );
    let pid = holder.pid();
    let interval = Path::new("0.2");
    let mut ui = Ui::start(&env, &[&tree, Path::new("--interval"), interval], &[]);
    ui.wait_for("the lock held", |s| {
        line_with(s, "job.lock").is_some_and(|l| l.contains("● live"))
    });
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(pid).unwrap(),
        rustix::process::Signal::STOP,
    )
    .unwrap();
    ui.send("\r");
    // The pane's end (J scrolls it) says the holder is stuck, once a re-judge round saw it.
    let pane = util::wait_for("the holder seen stuck", || {
        ui.send("JJJJJJJJ");
        std::thread::sleep(Duration::from_millis(200));
        let s = ui.contents();
        line_with(&s, "Stuck")
            .is_some_and(|l| l.contains("is stopped"))
            .then_some(s)
    });
    assert!(pane.contains(&format!("x stops process {pid}")), "{pane}");
    ui.send("x");
    let dialog = ui.wait_for("the stop dialog", |s| {
        s.contains("Send SIGCONT to these 2 processes?") && s.contains("[ No ]")
    });
    assert!(dialog.contains(&format!("pid {pid} flock")), "{dialog}");
    assert!(dialog.contains("stopped)"), "{dialog}");
    assert!(
        dialog.contains(&format!("started by {pid} flock)")),
        "the command it holds the lock for, under it: {dialog}"
    );
    assert!(
        dialog.contains(&format!("Stuck: process {pid} (flock) is stopped")),
        "{dialog}"
    );
    assert!(dialog.contains("[SIGCONT]"), "{dialog}");
    ui.send("s");
    ui.wait_for("SIGTERM chosen", |s| {
        s.contains("Send SIGTERM to these 2 processes?") && s.contains("[SIGTERM]")
    });
    assert!(util::alive(pid), "nothing is sent before the yes");
    ui.send("y");
    // Nobody holds it now (an empty file of no known writer: not proven a kernel-lock file).
    ui.wait_for("the lock let go on screen", |s| {
        line_with(s, "job.lock").is_some_and(|l| l.contains("? unknown"))
    });
    assert!(!util::alive(pid), "the stopped flock acted on SIGTERM");
    // q closes the detail pane, then quits.
    ui.send("q");
    ui.wait_for("the pane closed", |s| !s.contains("Details: job.lock"));
    ui.send("q");
    assert_eq!(ui.wait_exit(), 0);
}

#[test]
fn e_runs_vim_r_with_the_ui_suspended_and_o_a_shell_in_the_locks_directory() {
    if !util::require("vim") {
        return;
    }
    let env = Env::new();
    let tree = env.path().join("tree");
    std::fs::create_dir(&tree).unwrap();
    let file = tree.join("notes.txt");
    std::fs::write(&file, "one\n").unwrap();
    // A vim with unsaved changes that crashes: its swap file holds them.
    let mut vim = util::Group::spawn(
        std::process::Command::new("vim")
            .args(["-u", "NONE", "-i", "NONE", "-N", "-es"])
            .arg(&file)
            .current_dir(&tree)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null()),
    );
    let swap = tree.join(".notes.txt.swp");
    util::wait_until("the swap file", || {
        std::fs::metadata(&swap).is_ok_and(|m| m.len() >= 1024)
    });
    let mut stdin = vim.stdin();
    stdin
        .write_all(b"normal Ounsaved line\npreserve\n")
        .unwrap();
    stdin.flush().unwrap();
    std::thread::sleep(Duration::from_millis(500));
    vim.kill();
    drop(stdin);

    let marker = env.path().join("shell-was-in");
    let mut ui = Ui::start(&env, &[&tree], &[("SHELL", "/bin/sh")]);
    ui.wait_for("the swap with unsaved changes", |s| {
        line_with(s, ".notes.txt.swp").is_some_and(|l| l.contains("✗ stale ✎"))
    });
    ui.send("e");
    ui.wait_for("vim recovering the file", |s| {
        s.contains("Recovery completed")
    });
    // The UI is suspended: its table is not on screen while vim runs.
    assert!(!ui.contents().contains("VERDICT"));
    // Past vim's recovery message, the changes that were never saved.
    ui.send("\r");
    ui.wait_for("the recovered text", |s| s.contains("unsaved line"));
    ui.send("\x1b:wq\r");
    ui.wait_for("the table back after vim", |s| {
        s.contains("VERDICT") && s.contains("exited; the swap file is judged again")
    });
    let saved = std::fs::read_to_string(&file).unwrap();
    assert!(saved.contains("unsaved line"), "{saved:?}");
    // A shell in the lock's directory; exiting it brings the list back.
    ui.send("o");
    ui.wait_for("the shell", |s| s.contains("locksmith: a shell in"));
    ui.send(&format!("pwd > '{}'; exit\r", marker.display()));
    ui.wait_for("the table back after the shell", |s| {
        s.contains("VERDICT") && s.contains("back from the shell in")
    });
    assert_eq!(
        std::fs::read_to_string(&marker).unwrap().trim(),
        tree.display().to_string()
    );
    // Keys reach the UI again.
    ui.send("q");
    assert_eq!(ui.wait_exit(), 0);
}

/// `git commit -a` waits in its editor and keeps `index.lock`: `x` on the lock names git and,
/// under it, the editor it waits for (and the shell between), every process of the chain.
#[test]
fn x_names_the_editor_a_git_commit_waits_for() {
    if !util::require("git") {
        return;
    }
    let env = Env::new();
    let repo = env.path().join("repo");
    util::git_repo_with_a_commit(&repo, env.path());
    std::fs::write(repo.join("a.txt"), "two\n").unwrap();
    let commit = util::Group::spawn(
        util::git(&repo, env.path())
            .args(["commit", "-a"])
            .env("GIT_EDITOR", "sleep 600 #")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null()),
    );
    util::wait_until("git to start its editor", || {
        util::group_members(commit.pid())
            .iter()
            .any(|(_, comm)| comm == "sleep")
    });
    let git_pid = commit.pid();
    let mut ui = Ui::start(&env, &[&repo], &[]);
    ui.wait_for("index.lock live", |s| {
        line_with(s, "index.lock").is_some_and(|l| l.contains("● live"))
    });
    ui.send("x");
    let dialog = ui.wait_for("the stop dialog", |s| {
        s.contains("Send SIGTERM to") && s.contains("[ No ]")
    });
    assert!(dialog.contains(&format!("pid {git_pid} git")), "{dialog}");
    assert!(
        dialog.contains(&format!("started by {git_pid} git)")),
        "{dialog}"
    );
    assert!(
        dialog.lines().any(|l| l.contains(" sleep (user ")),
        "the editor is named: {dialog}"
    );
    ui.send("n");
    ui.wait_for("cancelled", |s| s.contains("no signal was sent"));
    assert!(util::alive(git_pid));
    ui.send("q");
    assert_eq!(ui.wait_exit(), 0);
}
