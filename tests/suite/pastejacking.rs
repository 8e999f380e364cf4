//! `y` in the terminal UI against a hostile file name: a local user (uid 65534, via
//! `setpriv`) creates, in a sticky world-writable directory, a stale pid file whose name holds
//! newlines with a command after each, ESC ending a bracketed paste, a bidi override and a byte
//! that is not UTF-8. Root runs the UI over that directory and presses `y`: the OSC 52 sequence
//! read from the terminal carries no control character, and pasted into bash it is read back as
//! the exact name and runs nothing. (Before, the raw bytes went on the clipboard and the paste
//! ran `touch pwned`.) Needs root to switch users; elsewhere it skips with a message.

use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::process::Command;

use crate::util::ui::Ui;
use crate::util::{self, Env};

const NAME: &[u8] = b"x\ntouch pwned\n\x1b[201~touch pwned;\xe2\x80\xae\xff'.pid";

#[test]
fn y_copies_a_hostile_name_in_a_form_that_runs_nothing_when_pasted() {
    if !util::can_act_as_nobody() || !util::require("base64") {
        return;
    }
    let env = Env::new();
    let shared = util::sticky_dir(&env, "shared");
    let lock = shared.join(OsStr::from_bytes(NAME));
    let content = format!("{}\n", util::dead_pid());
    let made = util::python_as_nobody(
        "import sys, os; open(os.fsencode(sys.argv[1]), 'w').write(sys.argv[2])",
        &[lock.as_os_str(), content.as_ref()],
    );
    assert!(made.success());
    use std::os::unix::fs::MetadataExt;
    assert_eq!(fs::symlink_metadata(&lock).unwrap().uid(), 65534);

    let mut ui = Ui::start(&env, &[&shared], &[]);
    ui.wait_for("the hostile lock listed", |s| {
        s.lines()
            .any(|l| l.contains("stale") && l.contains("touch pwned"))
    });
    ui.send("y");
    let osc = util::wait_for("the OSC 52 sequence", || osc52_payload(&ui.raw()));
    let text = base64_decode(&osc);
    assert!(
        !text.iter().any(|b| b.is_ascii_control() || *b >= 0x80),
        "the clipboard holds raw control or non-ASCII bytes: {:?}",
        String::from_utf8_lossy(&text)
    );
    ui.wait_for("the status", |s| s.contains("to the clipboard"));
    ui.send("q");
    assert_eq!(ui.wait_exit(), 0);

    // Pasted into bash as the argument of a command: the exact path, and nothing run.
    let cwd = tempfile::tempdir().unwrap();
    let mut line = b"printf %s ".to_vec();
    line.extend_from_slice(&text);
    let out = Command::new("bash")
        .args(["--norc", "-c"])
        .arg(OsStr::from_bytes(&line))
        .current_dir(cwd.path())
        .output()
        .unwrap();
    assert!(
        !cwd.path().join("pwned").exists(),
        "pasting the copy ran a command: {:?}",
        String::from_utf8_lossy(&text)
    );
    assert_eq!(out.stdout, lock.as_os_str().as_bytes());
}

/// The base64 payload of the first complete OSC 52 sequence in `raw`.
fn osc52_payload(raw: &[u8]) -> Option<Vec<u8>> {
    const START: &[u8] = b"\x1b]52;c;";
    let at = raw.windows(START.len()).position(|w| w == START)? + START.len();
    let len = raw[at..].iter().position(|&b| b == 0x07)?;
    Some(raw[at..at + len].to_vec())
}

/// Decodes base64 with coreutils' `base64 -d`, independently of the UI's encoder.
fn base64_decode(coded: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut child = Command::new("base64")
        .arg("-d")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(coded).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "not base64: {coded:?}");
    out.stdout
}
