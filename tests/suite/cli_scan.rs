//! `locksmith --scan`: the JSON document (schema + typed structs), the table, exit codes,
//! colors, per-path errors, a closed pipe, and the promise that a scan changes nothing.

use std::fs;
use std::io::Read;
use std::process::Stdio;

use crate::util::judging::wait_past_shortest_hold;
use crate::util::*;

/// A tree with one stale pidfile (dead PID) and one live pidfile (a running child).
struct Tree {
    env: Env,
    _live_owner: Guard,
    stale: std::path::PathBuf,
    live: std::path::PathBuf,
}

fn tree() -> Tree {
    let env = Env::new();
    let root = env.path().join("root");
    fs::create_dir(&root).unwrap();
    let stale = root.join("gone.pid");
    fs::write(&stale, format!("{}\n", dead_pid())).unwrap();
    let owner = sleeper();
    let live = root.join("alive.pid");
    fs::write(&live, format!("{}\n", owner.pid())).unwrap();
    Tree {
        env,
        _live_owner: owner,
        stale,
        live,
    }
}

#[test]
fn json_report_matches_the_schema_and_the_verdicts() {
    let t = tree();
    let root = t.env.path().join("root");
    let (report, out) = t.env.scan_json(&[&root]);
    assert_eq!(out.status.code(), Some(1), "stale found → 1");
    assert_eq!(report.version, 1);
    assert_eq!(report.roots, [root.to_str().unwrap()]);
    assert!(report.host.boot_id.is_some());
    assert!(!report.host.hostname.is_empty());

    let stale = report.expect_lock(&t.stale);
    assert_eq!(stale.dialect, "pidfile");
    assert_eq!(stale.verdict, "stale");
    assert!(stale.reclaimable);
    assert!(!stale.evidence.is_empty());
    assert_eq!(stale.kind.as_deref(), Some("file"));
    assert!(stale.modified.is_some() && stale.age_s.is_some());

    let live = report.expect_lock(&t.live);
    assert_eq!(live.verdict, "live", "{:?}", live.evidence);
    assert!(!live.reclaimable);
    let process = live.process.as_ref().expect("the live owner process");
    assert_eq!(process.pid, t._live_owner.pid() as i64);
    assert_eq!(process.name, "sleep");

    assert_eq!(report.summary.locks, report.locks.len() as u64);
    assert_eq!(report.summary.stale, 1);
    assert_eq!(report.summary.live, 1);
    assert!(report.summary.entries >= 2);
    assert!(report.reclaimed.is_none());
    // Written as the locks are judged: the summary comes after them.
    let text = stdout(&out);
    assert!(
        text.find("\"locks\": [").unwrap() < text.find("\"summary\": {").unwrap(),
        "{text}"
    );
}

#[test]
fn exit_status_is_0_when_nothing_is_stale() {
    let t = tree();
    fs::remove_file(&t.stale).unwrap();
    let out = t
        .env
        .run(["--scan".as_ref(), t.env.path().join("root").as_os_str()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("1 lock: 0 stale, 1 live"));
}

#[test]
fn table_has_the_lslocks_columns_symbols_and_a_summary() {
    let t = tree();
    let root = t.env.path().join("root");
    let out = t.env.run(["--scan".as_ref(), root.as_os_str()]);
    assert_eq!(out.status.code(), Some(1));
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    let header: Vec<&str> = lines[0].split_whitespace().collect();
    assert_eq!(
        header,
        [
            "VERDICT", "DIALECT", "PID", "COMMAND", "HOST", "AGE", "PATH"
        ]
    );
    assert!(lines[1].starts_with("✗ stale"), "{text}");
    assert!(lines[1].ends_with(t.stale.to_str().unwrap()), "{text}");
    assert!(lines[2].starts_with("● live"), "{text}");
    assert!(lines[2].contains(&t._live_owner.pid().to_string()));
    assert!(lines[2].contains("sleep"));
    assert!(
        lines
            .last()
            .unwrap()
            .starts_with("2 locks: 1 stale, 1 live, 0 free, 0 foreign, 0 unknown; 0 errors;"),
        "{text}"
    );
    assert!(
        !text.contains('\x1b'),
        "no color when stdout is not a terminal"
    );
}

#[test]
fn columns_noheadings_raw_and_the_verdict_filter() {
    let t = tree();
    let root = t.env.path().join("root");
    let spaced = root.join("my dir");
    fs::create_dir(&spaced).unwrap();
    let spaced_lock = spaced.join("w.pid");
    fs::write(&spaced_lock, format!("{}\n", dead_pid())).unwrap();
    let run_both = |extra: &[&str]| {
        let out = t.env.scan(extra, &root);
        assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
        (stdout(&out), stderr(&out))
    };
    let run = |extra: &[&str]| run_both(extra).0;

    // Chosen columns, in the order given, without the header; only the live lock. The rows
    // alone are on stdout; the summary is on stderr.
    let (text, err) = run_both(&["-o", "pid,path", "--noheadings", "--verdict", "live"]);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 1, "{text}");
    let row: Vec<&str> = lines[0].split_whitespace().collect();
    assert_eq!(
        row,
        [
            t._live_owner.pid().to_string().as_str(),
            t.live.to_str().unwrap()
        ]
    );
    // The summary counts every lock, listed or not.
    assert!(err.starts_with("3 locks: 2 stale, 1 live,"), "{err}");
    // With headings the summary follows the table on stdout, as before.
    let text = run(&["-o", "pid,path", "--verdict", "live"]);
    assert!(
        text.lines().last().unwrap().starts_with("3 locks: 2 stale"),
        "{text}"
    );
    // +COL adds to the default columns.
    let text = run(&["-o", "+size,+kind", "--verdict", "live"]);
    let titles: Vec<&str> = text.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(
        titles,
        [
            "VERDICT", "DIALECT", "PID", "COMMAND", "HOST", "AGE", "PATH", "SIZE", "KIND"
        ],
        "{text}"
    );

    // --raw: one word per field, the header, no summary.
    let text = run(&["--raw", "--columns", "VERDICT,path", "--verdict", "stale"]);
    let escaped = spaced_lock.to_str().unwrap().replace(' ', "\\x20");
    let mut want = vec![
        "VERDICT PATH".to_string(),
        format!("stale {}", t.stale.display()),
        format!("stale {escaped}"),
    ];
    want[1..].sort_by_key(|l| l.split(' ').nth(1).unwrap().replace("\\x20", " "));
    assert_eq!(text.lines().collect::<Vec<_>>(), want, "{text}");

    // The table's own options are refused with another format, and a bad name is named.
    for bad in [
        &["--json", "--raw"][..],
        &["--format", "prometheus", "-o", "pid"],
        &["-o", "pid,colour"],
        &["--verdict", "stal"],
    ] {
        let out = t.env.scan(bad, &root);
        assert_eq!(out.status.code(), Some(2), "{bad:?}: {}", stdout(&out));
        if bad.contains(&"--json") {
            // A fatal error of --json is a JSON document too: a report of no lock, with the
            // error in it.
            let doc: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
            assert_eq!(doc["exit_status"], 2, "{bad:?}");
            assert!(
                doc["error"]["message"]
                    .as_str()
                    .unwrap()
                    .contains("--raw is an option of the table"),
                "{doc}"
            );
            assert_eq!(doc["locks"], serde_json::json!([]), "{doc}");
            crate::util::validate(&doc);
        } else {
            assert!(stdout(&out).is_empty(), "{bad:?}");
        }
    }

    // In JSON the filter chooses the locks listed, and with --reclaim the outcomes listed,
    // not what is removed: --verdict live still removes both stale locks.
    let (report, out) = t.env.reclaim_json(&["--verdict", "live"], &root);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(report.locks.len(), 1);
    assert_eq!(report.locks[0].path, t.live.to_str().unwrap());
    assert_eq!((report.summary.locks, report.summary.stale), (3, 2));
    assert_eq!(report.reclaimed.as_deref().map(<[_]>::len), Some(0));
    assert!(!t.stale.exists() && !spaced_lock.exists());
    assert_eq!(t.env.journal().len(), 2);
}

#[test]
fn color_follows_the_flag_and_no_color() {
    let t = tree();
    let root = t.env.path().join("root");
    let always = t.env.run([
        "--scan".as_ref(),
        "--color=always".as_ref(),
        root.as_os_str(),
    ]);
    assert!(stdout(&always).contains("\x1b[1;31m✗ stale\x1b[0m"));
    let never = t.env.run([
        "--scan".as_ref(),
        "--color=never".as_ref(),
        root.as_os_str(),
    ]);
    assert!(!stdout(&never).contains('\x1b'));
    let mut cmd = t.env.cmd(["--scan".as_ref(), root.as_os_str()]);
    cmd.env("NO_COLOR", "1");
    let auto = run_bounded(cmd, DEADLINE);
    assert!(!stdout(&auto).contains('\x1b'));
}

#[test]
fn per_path_errors_are_listed_and_do_not_abort() {
    let t = tree();
    let root = t.env.path().join("root");
    let missing = t.env.path().join("no-such-dir");
    let out = t
        .env
        .run(["--scan".as_ref(), root.as_os_str(), missing.as_os_str()]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stdout(&out).contains("; 1 error;"), "{}", stdout(&out));
    let err = stderr(&out);
    assert!(err.contains(missing.to_str().unwrap()), "{err}");

    let (report, _) = t.env.scan_json(&[&root, &missing]);
    assert_eq!(report.errors.len(), 1);
    assert_eq!(report.errors[0].path, missing.to_str().unwrap());
    assert!(!report.errors[0].error.is_empty());
    assert_eq!(report.summary.errors, 1);
    assert_eq!(report.summary.stale, 1);
}

#[test]
fn fatal_errors_exit_2_with_one_clear_line() {
    let env = Env::new();
    let missing = env.path().join("nothing-here");
    let out = env.run(["--scan".as_ref(), missing.as_os_str()]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("nothing-here"), "{err}");

    let bad = env.path().join("bad.json");
    fs::write(&bad, "{ \"roots\": 5 }").unwrap();
    let out = env.run([
        "--scan".as_ref(),
        "--config".as_ref(),
        bad.as_os_str(),
        env.path().as_os_str(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("bad.json"), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(out.stdout.is_empty());

    let out = env.run(["--json"]);
    assert_eq!(out.status.code(), Some(2), "--json without --scan");
}

#[test]
fn a_closed_pipe_is_a_quiet_exit() {
    let t = tree();
    let root = t.env.path().join("root");
    for i in 0..300 {
        fs::write(root.join(format!("many-{i:03}.pid")), "1\n").unwrap();
    }
    for json in [false, true] {
        let mut cmd = t.env.cmd(["--scan".as_ref(), root.as_os_str()]);
        if json {
            cmd.arg("--json");
        }
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Like `| head -c 0`: the reader goes away before the report is written.
        drop(child.stdout.take());
        let mut err = String::new();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut err)
            .unwrap();
        let status = child.wait().unwrap();
        assert!(status.code().is_some(), "killed by a signal: {status:?}");
        assert_ne!(status.code(), Some(101), "panicked: {err}");
        assert!(err.is_empty(), "stderr: {err}");
    }
}

#[test]
fn a_scan_changes_nothing() {
    let t = tree();
    let root = t.env.path().join("root");
    fs::create_dir(root.join("repo")).unwrap();
    // A git directory as `git init` lays it out (what git asks of one).
    fs::create_dir_all(root.join("repo/.git/refs/heads")).unwrap();
    fs::create_dir_all(root.join("repo/.git/objects")).unwrap();
    fs::write(root.join("repo/.git/HEAD"), "ref: refs/heads/main\n").unwrap();
    let index = root.join("repo/.git/index.lock");
    fs::write(&index, "DIRC").unwrap();
    fs::create_dir(root.join("job.lock")).unwrap();
    std::os::unix::fs::symlink("nowhere", root.join(".#notes.txt")).unwrap();
    fs::write(root.join("empty.lock"), "").unwrap();
    // Past git's start-up allowance: a lock the scan proves stale (and still must not touch).
    wait_past_shortest_hold(&[&index]);
    let before = photograph(t.env.path());
    let out = t
        .env
        .run(["--scan".as_ref(), "--json".as_ref(), root.as_os_str()]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert_eq!(parse_report(&out).expect_lock(&index).verdict, "stale");
    let out = t.env.run(["--scan".as_ref(), root.as_os_str()]);
    assert!(matches!(out.status.code(), Some(0 | 1)));
    assert_eq!(before, photograph(t.env.path()));
}

#[test]
fn help_and_version() {
    let env = Env::new();
    let out = env.run(["--help"]);
    assert_eq!(out.status.code(), Some(0));
    let help = stdout(&out);
    assert!(help.contains("--scan") && help.contains("--json") && help.contains("--reclaim"));
    let out = env.run(["--version"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(stdout(&out).starts_with("locksmith "));
}

/// Runs `locksmith ARGS` in a pseudo-terminal and returns everything it wrote (raw bytes).
fn run_in_pty(env: &Env, args: &[&std::ffi::OsStr], extra_env: &[(&str, &str)]) -> Vec<u8> {
    let _judging = quiet::judging();
    let (mut child, master) = spawn_in_pty(env, args, extra_env, 24, 200);
    let mut reader = master.try_clone_reader().expect("pty reader");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut all = Vec::new();
        let mut buf = [0u8; 8192];
        while let Ok(n) = reader.read(&mut buf) {
            if n == 0 {
                break;
            }
            all.extend_from_slice(&buf[..n]);
        }
        let _ = tx.send(all);
    });
    let start = std::time::Instant::now();
    while child.try_wait().expect("poll").is_none() {
        if start.elapsed() > DEADLINE {
            let _ = child.kill();
            panic!("locksmith --scan did not finish in the pty");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    drop(master);
    rx.recv_timeout(DEADLINE).unwrap_or_default()
}

#[test]
fn a_terminal_gets_color_unless_no_color_is_set() {
    let t = tree();
    let root = t.env.path().join("root");
    let args = ["--scan".as_ref(), root.as_os_str()];
    let colored = run_in_pty(&t.env, &args, &[]);
    let text = String::from_utf8_lossy(&colored);
    assert!(text.contains("\x1b[1;31m✗ stale\x1b[0m"), "{text:?}");
    let plain = run_in_pty(&t.env, &args, &[("NO_COLOR", "1")]);
    let text = String::from_utf8_lossy(&plain);
    assert!(text.contains("✗ stale"), "{text:?}");
    assert!(!text.contains('\x1b'), "{text:?}");
}
