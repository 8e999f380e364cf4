//! The terminal UI end to end: the real binary in a pseudo-terminal, its screen read through a
//! vt100 parser on a background thread. A temp tree holds one stale pidfile (a dead PID) and
//! one live pidfile (a `sleep` child started before the file was written); the test selects
//! the stale one, reclaims it with `d` then `y`, checks the file is gone and journaled while
//! the live one stays, and quits with `q`. Every wait has a deadline; the UI process and the
//! `sleep` are killed on every path.

mod common;

use std::io::{Read, Write};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{DEADLINE, Env, spawn_in_pty};
use portable_pty::{Child, MasterPty};

const ROWS: u16 = 30;
const COLS: u16 = 140;

/// The UI running in a pty; killed when dropped.
struct Ui {
    child: Box<dyn Child + Send + Sync>,
    writer: Box<dyn Write + Send>,
    screen: Arc<Mutex<vt100::Parser>>,
    _master: Box<dyn MasterPty + Send>,
}

impl Ui {
    fn start(env: &Env, args: &[&Path], extra_env: &[(&str, &str)]) -> Ui {
        let args: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_os_str()).collect();
        let (child, master) = spawn_in_pty(env, &args, extra_env, ROWS, COLS);
        let mut reader = master.try_clone_reader().expect("pty reader");
        let writer = master.take_writer().expect("pty writer");
        let size = |n: u16| std::num::NonZeroU16::new(n).expect("a non-zero size");
        let screen = Arc::new(Mutex::new(vt100::Parser::new(size(ROWS), size(COLS), 0)));
        let feed = screen.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            loop {
                match reader.read(&mut buf) {
                    Ok(0) | Err(_) => return,
                    Ok(n) => feed.lock().unwrap().process(&buf[..n]),
                }
            }
        });
        Ui {
            child,
            writer,
            screen,
            _master: master,
        }
    }

    fn contents(&self) -> String {
        self.screen.lock().unwrap().screen().contents()
    }

    /// Waits until the screen shows something `ok` accepts; fails with the screen after the
    /// deadline.
    fn wait_for(&self, what: &str, ok: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            let text = self.contents();
            if ok(&text) {
                return text;
            }
            assert!(
                start.elapsed() < DEADLINE,
                "timed out waiting for {what}; the screen:\n{text}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn send(&mut self, keys: &str) {
        self.writer.write_all(keys.as_bytes()).unwrap();
        self.writer.flush().unwrap();
    }

    /// Waits for the process to exit and returns its exit code.
    fn wait_exit(&mut self) -> u32 {
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().expect("poll the UI process") {
                return status.exit_code();
            }
            assert!(
                start.elapsed() < DEADLINE,
                "the UI did not exit; the screen:\n{}",
                self.contents()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Ui {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn line_with<'a>(screen: &'a str, needle: &str) -> Option<&'a str> {
    screen.lines().find(|l| l.contains(needle))
}

#[test]
fn reclaim_a_stale_pidfile_from_the_ui() {
    let env = Env::new();
    let tree = env.path().join("tree");
    std::fs::create_dir(&tree).unwrap();
    let stale = tree.join("stale.pid");
    std::fs::write(&stale, format!("{}\n", common::dead_pid())).unwrap();
    let sleeper = common::sleeper();
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

    ui.send("q");
    assert_eq!(ui.wait_exit(), 0);
    drop(sleeper);
}

#[test]
fn no_color_and_quit_keys_in_a_real_terminal() {
    let env = Env::new();
    let tree = env.path().join("tree");
    std::fs::create_dir(&tree).unwrap();
    std::fs::write(tree.join("gone.pid"), format!("{}\n", common::dead_pid())).unwrap();
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
    let mut sleeper = common::sleeper();
    std::thread::sleep(Duration::from_millis(1100));
    let live = tree.join("owner.pid");
    std::fs::write(&live, format!("{}\n", sleeper.pid())).unwrap();
    let other = tree.join("other.pid");
    std::fs::write(&other, format!("{}\n", common::dead_pid())).unwrap();

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
    let err = common::stderr(&out);
    assert!(
        err.contains("needs a terminal") && err.contains("--scan"),
        "{err}"
    );
    for bad in ["0", "-1", "nan"] {
        let out = env.run([format!("--interval={bad}")]);
        assert_eq!(out.status.code(), Some(2), "--interval {bad}");
        let err = common::stderr(&out);
        assert!(err.contains("--interval"), "{err}");
    }
}
