//! Bad input (README: Security): a tree built to hurt the scanner. The scan must finish in bounded
//! time, change nothing, judge every hostile lock `unknown` (never `stale` or `live`) or list
//! it as an error, and never let a raw escape byte through to the table or the JSON.

use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::util::*;
use rustix::fs::{Mode, OFlags};

const DEEP: usize = 2_000;
const WIDE: usize = 50_000;
const LIMIT: Duration = Duration::from_secs(180);

/// Builds the hostile tree under `root`; returns the paths that look like locks.
fn build(root: &Path) -> Vec<PathBuf> {
    fs::create_dir_all(root).unwrap();
    let mut locks = Vec::new();
    let mut file = |name: &[u8], content: &[u8]| {
        let p = root.join(OsStr::from_bytes(name));
        fs::write(&p, content).unwrap();
        locks.push(p);
    };
    // Absurd and hostile PIDs.
    file(b"zero.pid", b"0\n");
    file(b"negative.pid", b"-1\n");
    file(b"huge.pid", b"2147483648\n");
    file(b"inject.pid", b"1; rm -rf /\n");
    file(b"LCK..ttyS9", b"99999999999999999999999\n");
    file(
        b"garbage.lock",
        &(0..=255u8).cycle().take(3000).collect::<Vec<_>>(),
    );
    file(b"utf8-garbage.pid", b"\xff\xfe\xfd\x00\x01\n");
    // Names and contents with newlines, escape sequences and bytes that are not UTF-8.
    file(b"\xff\xfe-not-utf8.pid", b"0");
    file(b"new\nline.pid", b"-1");
    file(
        b"\x1b[31mred\x1b[0m.pid",
        b"\x1b[31m4242\x1b[0m\x1b]0;pwned\x07",
    );
    file(b".#\x1b[2Jemacs", b"\x1b[2Juser@\x1bhost.0:\x1b");
    file(b"postmaster.pid", b"\x1b[1mnot-a-pid\ndir\x1b\n-5\n\n");
    file(
        b".terraform.tfstate.lock.info",
        br#"{"ID": 5, "Who": ["\u001b[31m"], "Created": false}"#,
    );
    file(
        b".~lock.report.odt#",
        b"\x1b[31m,\x1b,\x1b,99.99.9999 99:99,\x1b;",
    );
    file(b".bad.txt.swp", b"b0VIM 9.0\x00\x1b[31m garbage block zero");
    file(
        b"record.lock",
        br#"{"pid": "\u001b[31m", "hostname": 5, "boot_id": [], "tool": "locksmith/0"}"#,
    );

    // A FIFO named like a lock (opening it for reading would block forever).
    let fifo = root.join("fifo.lock");
    let ok = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(ok.success());
    locks.push(fifo);
    // A device, a loop and a dangling link named like locks (never followed).
    for (name, target) in [
        ("zero.lock", "/dev/zero"),
        ("loop-a.lock", "loop-b.lock"),
        ("loop-b.lock", "loop-a.lock"),
        ("dangling.pid", "/nonexistent/\x1b[31m"),
    ] {
        symlink(target, root.join(name)).unwrap();
        locks.push(root.join(name));
    }
    symlink(".", root.join("self-loop")).unwrap();
    symlink("/", root.join("to-root")).unwrap();
    // A sparse multi-GiB file named like a lock.
    let big = root.join("big.lock");
    fs::File::create(&big).unwrap().set_len(8 << 30).unwrap();
    locks.push(big);
    locks
}

/// A directory 2,000 levels deep (built with `mkdirat`/`openat`, since its full path is
/// longer than PATH_MAX), with a hostile pidfile at the bottom.
fn build_deep(root: &Path) {
    fs::create_dir(root).unwrap();
    let mut dir =
        rustix::fs::open(root, OFlags::DIRECTORY | OFlags::RDONLY, Mode::empty()).unwrap();
    for _ in 0..DEEP {
        rustix::fs::mkdirat(&dir, "d", Mode::from_raw_mode(0o755)).unwrap();
        dir = rustix::fs::openat(&dir, "d", OFlags::DIRECTORY | OFlags::RDONLY, Mode::empty())
            .unwrap();
    }
    let fd = rustix::fs::openat(
        &dir,
        "deep.pid",
        OFlags::CREATE | OFlags::WRONLY,
        Mode::from_raw_mode(0o644),
    )
    .unwrap();
    rustix::io::write(&fd, b"0\n").unwrap();
}

/// A directory with 50,000 entries, a few of them hostile locks.
fn build_wide(root: &Path) -> Vec<PathBuf> {
    fs::create_dir(root).unwrap();
    for i in 0..WIDE {
        fs::write(root.join(format!("f{i:05}")), b"").unwrap();
    }
    let locks: Vec<PathBuf> = [7usize, 25_000, 49_999]
        .iter()
        .map(|i| root.join(format!("f{i:05}.pid")))
        .collect();
    for l in &locks {
        fs::write(l, b"-1\n").unwrap();
    }
    locks
}

/// Hostile locks with nothing in them that could name an owner: absurd or unparseable PIDs,
/// binary garbage, and entries that are not regular files.
fn must_be_unknown(path: &Path) -> bool {
    let name = path.file_name().unwrap().as_bytes();
    name.ends_with(b".pid")
        || name.starts_with(b"LCK..")
        || [
            &b"garbage.lock"[..],
            b"fifo.lock",
            b"zero.lock",
            b"loop-a.lock",
            b"loop-b.lock",
            b"big.lock",
        ]
        .contains(&name)
}

fn json_path(p: &Path) -> String {
    let mut s = String::new();
    for chunk in p.as_os_str().as_bytes().utf8_chunks() {
        s.push_str(&chunk.valid().replace('\\', "\\\\"));
        for b in chunk.invalid() {
            s.push_str(&format!("\\x{b:02x}"));
        }
    }
    s
}

#[test]
fn hostile_tree_is_survived_judged_unknown_and_left_untouched() {
    let env = Env::new();
    let root = env.path().join("hostile");
    let mut locks = build(&root);
    locks.extend(build_wide(&root.join("wide")));
    build_deep(&root.join("deep"));
    let mut deep = root.join("deep");
    for _ in 0..DEEP {
        deep.push("d");
    }
    locks.push(deep.join("deep.pid"));
    let before = photograph(&root);

    let mut cmd = env.cmd(["--scan".as_ref(), "--json".as_ref(), root.as_os_str()]);
    cmd.env("NO_COLOR", "");
    let out = run_bounded(cmd, LIMIT);
    assert!(!out.stdout.contains(&0x1b), "raw ESC in the JSON");
    assert!(!out.stderr.contains(&0x1b), "raw ESC on stderr");
    assert_eq!(
        out.status.code(),
        Some(0),
        "nothing here is stale: {}",
        stderr(&out)
    );
    let report = parse_report(&out);
    assert!(report.summary.entries as usize >= WIDE + DEEP);

    for lock in &report.locks {
        assert!(
            lock.verdict != "stale" && lock.verdict != "live",
            "a hostile lock judged {}: {lock:#?}",
            lock.verdict
        );
    }
    for path in &locks {
        let p = json_path(path);
        let as_lock = report.locks.iter().find(|l| l.path == p);
        let as_error = report.errors.iter().find(|e| e.path == p);
        match (as_lock, as_error) {
            // A record that parses but names another host may be `foreign`; garbage,
            // absurd PIDs and things that are not files must be `unknown`.
            (Some(l), _) if must_be_unknown(path) => assert_eq!(l.verdict, "unknown", "{l:#?}"),
            (Some(l), _) => assert!(
                ["unknown", "foreign"].contains(&l.verdict.as_str()),
                "{l:#?}"
            ),
            (None, Some(e)) => assert!(!e.error.is_empty()),
            (None, None) => panic!("{p:?} is neither a lock nor an error in the report"),
        }
    }
    let big = report.expect_lock(&root.join("big.lock"));
    assert_eq!(big.size, Some(8 << 30));

    // The table too: run with colors forced, and still no raw escape from the tree.
    let out = run_bounded(
        env.cmd([
            "--scan".as_ref(),
            "--color=never".as_ref(),
            root.as_os_str(),
        ]),
        LIMIT,
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!out.stdout.contains(&0x1b), "raw ESC in the table");
    assert!(!out.stderr.contains(&0x1b), "raw ESC on stderr");
    let table = stdout(&out);
    assert!(table.contains("\\x1b[31mred\\x1b[0m.pid"), "{table}");
    assert!(table.contains("new\\nline.pid"));
    assert!(table.contains("\\xff\\xfe-not-utf8.pid"));
    assert!(
        table
            .lines()
            .all(|l| !l.starts_with("✗") && !l.starts_with("●")),
        "{table}"
    );

    assert_eq!(before, photograph(&root), "the scan changed the tree");
    // The FIFO is still a FIFO and nobody is stuck on it.
    use std::os::unix::fs::FileTypeExt;
    assert!(
        fs::symlink_metadata(root.join("fifo.lock"))
            .unwrap()
            .file_type()
            .is_fifo()
    );
}

#[test]
fn reclaim_never_touches_hostile_locks() {
    let env = Env::new();
    let root = env.path().join("hostile");
    build(&root);
    let before = photograph(&root);
    let out = run_bounded(
        env.cmd([
            "--scan".as_ref(),
            "--reclaim".as_ref(),
            "--json".as_ref(),
            root.as_os_str(),
        ]),
        LIMIT,
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let report = parse_report(&out);
    assert_eq!(report.reclaimed.as_deref().map(<[_]>::len), Some(0));
    assert_eq!(before, photograph(&root));
    assert!(!env.state_dir().exists());
}

/// Text a lock file can carry that a terminal would act on: CSI (color), OSC 52 (write the
/// clipboard), a bidirectional override, a C1 CSI, a zero-width space and a newline.
const HOSTILE: &str = "\x1b[31m\x1b]52;c;ZXZpbA==\x07\u{202e}\u{9b}\u{200b}\n";
/// [`HOSTILE`] as every terminal view shows it: escaped exactly once.
const HOSTILE_SHOWN: &str = "\\x1b[31m\\x1b]52;c;ZXZpbA==\\x07\\u{202e}\\u{9b}\\u{200b}\\n";

/// Whether `s` could make a terminal do something (or read differently than it is).
fn terminal_unsafe(s: &str) -> bool {
    s.chars().any(|c| {
        c != '\n'
            && (c.is_control()
                || matches!(c, '\u{200b}'..='\u{200f}' | '\u{2028}'..='\u{202e}' | '\u{2066}'..='\u{2069}'))
    })
}

/// An engine lock record at `path` owned by `pid` on a host named [`HOSTILE`] (so: foreign).
fn write_record(path: &Path, pid: u32) {
    let record = serde_json::json!({
        "pid": pid,
        "hostname": HOSTILE,
        "created_at": "2026-01-02T03:04:05Z",
        "token": "t",
        "tool": "locksmith/0.1",
    });
    fs::write(path, record.to_string()).unwrap();
}

/// `locksmith lock --timeout 0 PATH -- true`.
fn lock_now(env: &Env, path: &Path) -> std::process::Output {
    env.run([
        "lock".as_ref(),
        "--timeout".as_ref(),
        "0".as_ref(),
        path.as_os_str(),
        "--".as_ref(),
        "true".as_ref(),
    ])
}

#[test]
fn owner_fields_are_escaped_once_in_the_table_and_real_text_in_the_json() {
    let env = Env::new();
    let dir = env.path().join("d");
    fs::create_dir(&dir).unwrap();
    let holder = sleeper();
    // An engine record naming another host (so: foreign) whose host name is hostile, under a
    // name with an escape sequence, a bidi override and a byte that is not UTF-8.
    let lock = dir.join(OsStr::from_bytes(b"evil\x1b[31m\xe2\x80\xae\xff.lock"));
    write_record(&lock, holder.pid());

    let (report, out) = env.scan_json(&[&dir]);
    let l = report
        .locks
        .iter()
        .find(|l| l.path == json_path(&lock))
        .unwrap_or_else(|| panic!("{report:#?}"));
    assert_eq!(l.dialect, "locksmith", "{l:#?}");
    // JSON carries the real text (escaped by JSON itself, never by us).
    assert_eq!(
        l.owner.as_ref().and_then(|o| o.hostname.as_deref()),
        Some(HOSTILE)
    );
    assert!(
        !l.evidence
            .iter()
            .any(|e| e.contains("\\u{1b}") || e.contains("\\x1b")),
        "{l:#?}"
    );
    let raw = stdout(&out);
    assert!(
        !terminal_unsafe(&raw),
        "the JSON text itself is terminal-safe"
    );

    // The table escapes it once: `\x1b`, never `\\x1b` or `\u{1b}`.
    let out = env.run(["--scan", "--color=never", dir.to_str().unwrap()]);
    let table = stdout(&out);
    assert!(!terminal_unsafe(&table), "{table:?}");
    // The HOST column is cut at 24 columns.
    assert!(
        table.contains(&format!("{}…", &HOSTILE_SHOWN[..23])),
        "{table}"
    );
    assert!(
        table.contains("evil\\x1b[31m\\u{202e}\\xff.lock"),
        "{table}"
    );
    assert!(!table.contains("\\\\"), "escaped twice: {table}");
    assert!(!table.contains("\\u{1b}"), "{table}");
}

#[test]
fn lock_held_message_escapes_the_path_and_the_holder_once() {
    let env = Env::new();
    let dir = env.path().join("d");
    fs::create_dir(&dir).unwrap();
    let holder = sleeper();
    let lock = dir.join("job\x1b[31m\u{202e}.lock");
    write_record(&lock, holder.pid());
    let out = lock_now(&env, &lock);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(75), "{err}");
    assert!(!terminal_unsafe(&err), "{err:?}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("job\\x1b[31m\\u{202e}.lock: held"), "{err}");
    assert!(err.contains(&format!("host \"{HOSTILE_SHOWN}\"")), "{err}");
    assert!(!err.contains("\\\\"), "escaped twice: {err}");

    // Held by a live `locksmith lock` whose command line carries the same characters (its
    // command is its child: the whole group goes when the guard drops).
    let other = dir.join("run\u{202e}\x1b[1m.lock");
    let mut first = Group::spawn(env.cmd([
        "lock".as_ref(),
        other.as_os_str(),
        "--".as_ref(),
        "sleep".as_ref(),
        "600".as_ref(),
    ]));
    wait_for("the first lock", || other.exists().then_some(()));
    let out = lock_now(&env, &other);
    first.kill();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(75), "{err}");
    assert!(!terminal_unsafe(&err), "{err:?}");
    assert!(
        err.contains("run\\u{202e}\\x1b[1m.lock: held by pid"),
        "{err}"
    );
    assert!(!err.contains("\\\\"), "escaped twice: {err}");
}

#[test]
fn configuration_errors_escape_the_users_text_once() {
    // Each configuration names a bad value with an escape byte and a bidi override in it.
    for config in [
        serde_json::json!({"dialects": [{
            "name": "mine",
            "patterns": ["[\x1b\u{202e}"],
            "format": "kernel-lock",
        }]}),
        serde_json::json!({"dialects": [{
            "name": "mine",
            "patterns": ["*.mine"],
            "format": "kernel-lock",
            "programs": ["bin/\x1b\u{202e}"],
        }]}),
        serde_json::json!({"dialects": [{
            "name": "mi\x1b\u{202e}ne",
            "patterns": ["*.mine"],
            "format": "kernel-lock",
        }]}),
        serde_json::json!({"ask_hosts": {"hosts": ["[\x1b\u{202e}"]}}),
    ] {
        let env = Env::new();
        let file = env.path().join("config/locksmith/config.json");
        fs::create_dir_all(file.parent().unwrap()).unwrap();
        fs::write(&file, config.to_string()).unwrap();
        let out = env.scan(&["--color=never"], env.path());
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{config}: {err}");
        assert!(!terminal_unsafe(&err), "{err:?}");
        assert_eq!(err.matches("\\x1b\\u{202e}").count(), 1, "{config}: {err}");
        assert!(!err.contains("\\\\"), "escaped twice: {err}");
        assert!(!err.contains("\\u{1b}"), "escaped twice: {err}");
    }
}
