//! A declared dialect in the terminal UI: the user's configuration declares a lock format,
//! the UI lists such a lock under the declared name with its verdict and evidence, and `d`
//! then `y` reclaims it. The real binary runs in a pseudo-terminal; its screen is read
//! through a vt100 parser on a background thread; every wait has a deadline.

use std::io::{Read, Write};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::util;
use crate::util::{DEADLINE, Env, spawn_in_pty};

const ROWS: u16 = 30;
const COLS: u16 = 140;

fn wait_screen(screen: &Mutex<vt100::Parser>, what: &str, ok: impl Fn(&str) -> bool) -> String {
    let start = Instant::now();
    loop {
        let text = screen.lock().unwrap().screen().contents();
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

#[test]
fn a_declared_dialect_is_listed_and_reclaimed_in_the_ui() {
    let env = Env::new();
    std::fs::create_dir_all(env.path().join("config/locksmith")).unwrap();
    std::fs::write(
        env.path().join("config/locksmith/config.json"),
        r#"{"dialects": [{"name": "nightly-backup", "patterns": ["*.backup-lock"],
            "format": {"lines": {"pid": 2, "host": 3}}, "programs": ["backup-job"]}]}"#,
    )
    .unwrap();
    let tree = env.path().join("tree");
    std::fs::create_dir(&tree).unwrap();
    let host = locksmith::probe::HostFacts::probe().hostname;
    let stale = tree.join("nightly.backup-lock");
    std::fs::write(&stale, format!("v1\n{}\n{host}\n", util::dead_pid())).unwrap();

    let args = [tree.as_os_str()];
    let (mut child, master) = spawn_in_pty(&env, &args, &[], ROWS, COLS);
    let mut reader = master.try_clone_reader().unwrap();
    let mut writer = master.take_writer().unwrap();
    let size = |n: u16| std::num::NonZeroU16::new(n).unwrap();
    let screen = Arc::new(Mutex::new(vt100::Parser::new(size(ROWS), size(COLS), 0)));
    let feed = screen.clone();
    std::thread::spawn(move || {
        let mut buf = [0u8; 8192];
        while let Ok(n) = reader.read(&mut buf) {
            if n == 0 {
                return;
            }
            feed.lock().unwrap().process(&buf[..n]);
        }
    });
    let mut send = |keys: &str| {
        writer.write_all(keys.as_bytes()).unwrap();
        writer.flush().unwrap();
    };

    // (the DIALECT column is 11 characters wide; the detail pane names it whole)
    let listed = wait_screen(&screen, "the declared lock listed", |s| {
        s.lines()
            .any(|l| l.contains("nightly-bac") && l.contains("✗ stale"))
    });
    assert!(listed.contains("nightly.backup-lock"), "{listed}");
    send("\r");
    wait_screen(&screen, "its evidence and dialect", |s| {
        s.contains("no process") && s.contains("nightly-backup")
    });
    send("d");
    wait_screen(&screen, "the confirm dialog", |s| {
        s.contains("Reclaim this stale lock?")
    });
    assert!(stale.exists(), "nothing is removed before the yes");
    send("y");
    wait_screen(&screen, "the reclaim result", |s| {
        s.lines()
            .any(|l| l.starts_with("removed ") && l.contains("nightly.backup-lock"))
    });
    assert!(!stale.exists());
    let journal = env.journal();
    assert_eq!(journal.len(), 1, "{journal:?}");
    assert_eq!(journal[0]["dialect"], "nightly-backup");
    send("q");
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            assert_eq!(status.exit_code(), 0);
            break;
        }
        if start.elapsed() > DEADLINE {
            let _ = child.kill();
            panic!("the UI did not exit");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
