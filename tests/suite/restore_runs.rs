//! Undo scoped by run: each process of locksmith is a run of its own in the journal, and what
//! one run reclaimed is put back apart from what another did. Two `--scan --reclaim` processes
//! reclaim in one state directory; `locksmith journal` lists them as two runs (also `--json`),
//! bare `locksmith restore` lists and puts back the last run only, a run's id puts back that
//! run, and a path is taken as `locksmith journal` prints it. In the UI (the real binary in a
//! pty), a fresh session's `u` finds nothing of its own to undo and leaves the other run's
//! reclaim alone; after its own `D`, `u` names both locks of that batch and puts back both as
//! one step.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::util::ui::Ui;
use crate::util::{self, Env, assert_code, stderr, stdout};

/// A directory `name` in the test's directory holding one pidfile of a dead PID per name.
fn root_with(env: &Env, name: &str, locks: &[&[u8]]) -> (PathBuf, Vec<PathBuf>) {
    let root = env.path().join(name);
    std::fs::create_dir(&root).unwrap();
    let paths = locks
        .iter()
        .map(|l| {
            let p = root.join(OsStr::from_bytes(l));
            std::fs::write(&p, format!("{}\n", util::dead_pid())).unwrap();
            p
        })
        .collect();
    (root, paths)
}

fn line_of<'a>(journal: &'a [serde_json::Value], path: &Path) -> &'a serde_json::Value {
    let want = path.to_str().unwrap();
    journal
        .iter()
        .find(|l| l["event"] == "reclaim" && l["path"] == want)
        .unwrap_or_else(|| panic!("no reclaim of {want}: {journal:?}"))
}

#[test]
fn bare_restore_puts_back_the_last_run_only_and_lists_it_first() {
    let env = Env::new();
    let (first, a) = root_with(&env, "first", &[b"a.pid"]);
    let (second, b) = root_with(&env, "second", &[b"b1.pid", b"b2.pid"]);
    // Two processes, one after the other, in one state directory.
    assert_code(&env.scan(&["--reclaim"], &first), 0);
    assert_code(&env.scan(&["--reclaim"], &second), 0);
    assert!(
        a.iter().chain(&b).all(|p| !p.exists()),
        "all three reclaimed"
    );

    let journal = env.journal();
    assert_eq!(journal.len(), 3, "{journal:?}");
    let (la, lb1, lb2) = (
        line_of(&journal, &a[0]),
        line_of(&journal, &b[0]),
        line_of(&journal, &b[1]),
    );
    let run_a = la["run"].as_str().expect("a run id").to_string();
    let run_b = lb1["run"].as_str().expect("a run id").to_string();
    assert_ne!(run_a, run_b, "two processes are two runs");
    assert_eq!(lb2["run"], lb1["run"], "one process is one run");
    assert!(lb1["batch"].is_u64(), "{lb1}");
    assert_eq!(
        lb2["batch"], lb1["batch"],
        "one --scan --reclaim is one batch"
    );

    // The journal, grouped by run, the first run first.
    let listed = env.run(["journal"]);
    assert_code(&listed, 0);
    let text = stdout(&listed);
    let title_a = text.find(&format!("run {run_a}: 1 reclaimed"));
    let title_b = text.find(&format!("run {run_b}: 2 reclaimed"));
    assert!(
        matches!((title_a, title_b), (Some(x), Some(y)) if x < y),
        "{text}"
    );
    let json = env.run(["journal", "--json"]);
    assert_code(&json, 0);
    let doc: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let runs = doc["runs"].as_array().expect("runs");
    assert_eq!(runs.len(), 2, "{doc}");
    assert_eq!(runs[0]["run"], run_a.as_str());
    assert_eq!(runs[1]["run"], run_b.as_str());
    assert_eq!(runs[1]["entries"].as_array().unwrap().len(), 2, "{doc}");

    // Bare restore: the last run, listed before anything is put back; the first run stays.
    let out = env.run(["restore"]);
    assert_code(&out, 0);
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[0].starts_with(&format!(
            "restoring the last run, {run_b}: 2 locks reclaimed"
        )),
        "{text}"
    );
    for p in &b {
        let shown = p.to_str().unwrap();
        let listed = lines.iter().position(|l| l.trim_start().starts_with(shown));
        let restored = lines
            .iter()
            .position(|l| l.starts_with(&format!("restored {shown} ")));
        assert!(
            matches!((listed, restored), (Some(x), Some(y)) if x < y),
            "{shown} listed, then restored:\n{text}"
        );
        assert!(p.exists(), "{shown} is back");
    }
    assert!(!a[0].exists(), "the first run's lock is not put back");

    // Again: the last run has nothing left, and nothing else is touched.
    let again = env.run(["restore"]);
    assert_code(&again, 1);
    assert!(stderr(&again).contains("nothing to restore"), "{again:?}");
    assert!(!a[0].exists());

    // The first run by its id.
    let by_run = env.run(["restore", &run_a]);
    assert_code(&by_run, 0);
    assert!(a[0].exists(), "{by_run:?}");
    assert!(stdout(&by_run).starts_with(&format!("restoring run {run_a}: 1 lock")));
}

#[test]
fn restore_takes_a_path_as_journal_prints_it() {
    let env = Env::new();
    // A name with a newline and a byte that is not UTF-8: `journal` prints it escaped.
    let (root, locks) = root_with(&env, "odd", &[b"we\nird\xff.pid"]);
    assert_code(&env.scan(&["--reclaim"], &root), 0);
    assert!(!locks[0].exists());
    let text = stdout(&env.run(["journal"]));
    let shown = format!("{}/we\\nird\\xff.pid", root.display());
    let row = text
        .lines()
        .find(|l| l.contains(" reclaim "))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(row.ends_with(&shown), "{row}");
    let out = env.run(["restore", &shown]);
    assert_code(&out, 0);
    assert!(locks[0].exists(), "{out:?}");
}

#[test]
fn a_fresh_uis_undo_never_touches_another_runs_reclaim() {
    let env = Env::new();
    let (other, theirs) = root_with(&env, "other", &[b"theirs.pid"]);
    let (mine, ours) = root_with(&env, "mine", &[b"one.pid", b"two.pid"]);
    // Another run reclaims first.
    assert_code(&env.scan(&["--reclaim"], &other), 0);
    assert!(!theirs[0].exists());

    let mut ui = Ui::start(&env, &[&mine, &other], &[]);
    ui.wait_for("both of mine listed as stale", |s| {
        ["one.pid", "two.pid"]
            .iter()
            .all(|n| s.lines().any(|l| l.contains(n) && l.contains("✗ stale")))
    });
    // Nothing of this session to undo: said, and the other run's lock stays reclaimed.
    ui.send("u");
    ui.wait_for("nothing to undo", |s| {
        s.contains("nothing to undo: nothing was reclaimed in this session")
    });
    assert!(!theirs[0].exists(), "another run's reclaim is never undone");

    // D reclaims both of mine as one batch.
    ui.send("D");
    ui.wait_for("the reclaim dialog", |s| {
        s.contains("Reclaim 2 stale locks?")
    });
    ui.send("y");
    ui.wait_for("both removed, their rows gone", |s| {
        ours.iter().all(|p| !p.exists()) && s.contains("no locks found")
    });

    // u names both, asks, and puts both back as one step.
    ui.send("u");
    let dialog = ui.wait_for("the undo dialog", |s| {
        s.contains("put these 2 locks back?") && s.contains("[ No ]")
    });
    for p in &ours {
        assert!(dialog.contains(p.to_str().unwrap()), "{dialog}");
    }
    assert!(!dialog.contains("theirs.pid"), "{dialog}");
    assert!(ours.iter().all(|p| !p.exists()), "nothing before the yes");
    ui.send("y");
    ui.wait_for("the undo's message", |s| {
        s.contains("restored the 2 locks of the last reclaim")
    });
    assert!(ours.iter().all(|p| p.exists()), "both are back");
    assert!(!theirs[0].exists(), "the other run's stays reclaimed");
    ui.send("q");
    assert_eq!(ui.wait_exit(), 0);

    let journal = env.journal();
    let restores = journal.iter().filter(|l| l["event"] == "restore").count();
    assert_eq!(restores, 2, "{journal:?}");
}
