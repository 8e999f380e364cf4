//! Undo scoped by run: each process of locksmith is a run of its own in the journal, and what
//! one run reclaimed is put back apart from what another did. Two `--scan --reclaim` processes
//! reclaim in one state directory; `locksmith journal` lists them as two runs (also `--json`).
//! Restoring is as deliberate as removing: without a terminal a bare `locksmith restore`
//! refuses and says how to name what to restore, `--dry-run` shows it, `--last-batch` and
//! `--run ID` put back what they name; on a terminal (the real binary in a pty) a bare
//! `locksmith restore` shows the last run and asks, and only `y` puts it back. A path is taken
//! as `locksmith journal` prints it. In the UI (the real binary in a pty), a fresh session's
//! `u` finds nothing of the UI's to undo and leaves the other run's reclaim alone; after its
//! own `D`, `u` names both locks of that batch and puts back both as one step; a UI started
//! again still undoes what the one before reclaimed, and its journal view puts back the other
//! run's reclaim when it is picked, after a preview.

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

    // Each line says what kind of run wrote it.
    assert!(journal.iter().all(|l| l["via"] == "scan"), "{journal:?}");

    // Bare restore without a terminal: nothing is put back; it says how to name it.
    let bare = env.run(["restore"]);
    assert_code(&bare, 2);
    assert!(
        stderr(&bare).contains("name what to restore") && stderr(&bare).contains("--last-batch"),
        "{bare:?}"
    );
    assert!(b.iter().all(|p| !p.exists()), "nothing put back unasked");

    // --dry-run shows the last run, who made it and when, and changes nothing.
    let dry = env.run(["restore", "--dry-run"]);
    assert_code(&dry, 0);
    let text = stdout(&dry);
    assert!(
        text.starts_with(&format!(
            "would restore the last run that reclaimed, {run_b}: 2 locks reclaimed by a --scan --reclaim at "
        )),
        "{text}"
    );
    assert!(!text.contains("entry"), "no journal ids: {text}");
    assert!(b.iter().all(|p| !p.exists()), "a dry run puts nothing back");

    // --last-batch: listed before anything is put back; the first run stays.
    let out = env.run(["restore", "--last-batch"]);
    assert_code(&out, 0);
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[0].starts_with(&format!("restoring the last batch (run {run_b}): 2 locks")),
        "{text}"
    );
    for p in &b {
        let shown = p.to_str().unwrap();
        let listed = lines.iter().position(|l| l.trim_start().starts_with(shown));
        let restored = lines.iter().position(|l| *l == format!("restored {shown}"));
        assert!(
            matches!((listed, restored), (Some(x), Some(y)) if x < y),
            "{shown} listed, then restored:\n{text}"
        );
        assert!(p.exists(), "{shown} is back");
    }
    assert!(!a[0].exists(), "the first run's lock is not put back");

    // Again: the last batch has nothing left, and nothing else is touched.
    let again = env.run(["restore", "--last-batch"]);
    assert_code(&again, 1);
    assert!(stderr(&again).contains("nothing to restore"), "{again:?}");
    assert!(!a[0].exists());

    // The first run by --run ID.
    let by_run = env.run(["restore", "--run", &run_a]);
    assert_code(&by_run, 0);
    assert!(a[0].exists(), "{by_run:?}");
    assert!(stdout(&by_run).starts_with(&format!("restoring run {run_a}: 1 lock")));
}

#[test]
fn on_a_terminal_bare_restore_shows_the_last_run_and_asks() {
    let env = Env::new();
    let (root, locks) = root_with(&env, "r", &[b"x.pid", b"y.pid"]);
    assert_code(&env.scan(&["--reclaim"], &root), 0);
    assert!(locks.iter().all(|p| !p.exists()));
    // No (Enter alone is no): nothing is put back.
    let mut t = Ui::start(&env, &[Path::new("restore")], &[]);
    let shown = t.wait_for("the last run and the question", |s| {
        s.contains("Put these 2 locks back? [y/N]")
    });
    assert!(
        shown.contains("would restore the last run that reclaimed")
            && shown.contains("reclaimed by a --scan --reclaim"),
        "{shown}"
    );
    for p in &locks {
        assert!(shown.contains(p.to_str().unwrap()), "{shown}");
    }
    t.send("\r");
    t.wait_for("the refusal", |s| s.contains("nothing was restored"));
    assert_eq!(t.wait_exit(), 1);
    assert!(locks.iter().all(|p| !p.exists()), "no is no");
    // y: both come back.
    let mut t = Ui::start(&env, &[Path::new("restore")], &[]);
    t.wait_for("the question", |s| s.contains("[y/N]"));
    t.send("y\r");
    t.wait_for("both restored", |s| {
        locks
            .iter()
            .all(|p| s.contains(&format!("restored {}", p.display())))
    });
    assert_eq!(t.wait_exit(), 0);
    assert!(locks.iter().all(|p| p.exists()));
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
        s.contains("nothing to undo: nothing was reclaimed in the UI")
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
    ui.wait_for("the undo's message", |s| s.contains("restored 2 locks"));
    assert!(ours.iter().all(|p| p.exists()), "both are back");
    assert!(!theirs[0].exists(), "the other run's stays reclaimed");
    ui.send("q");
    assert_eq!(ui.wait_exit(), 0);

    let journal = env.journal();
    let restores = journal.iter().filter(|l| l["event"] == "restore").count();
    assert_eq!(restores, 2, "{journal:?}");
}

#[test]
fn a_ui_started_again_undoes_what_the_one_before_reclaimed_and_picks_other_runs_in_its_journal() {
    let env = Env::new();
    let (other, theirs) = root_with(&env, "other", &[b"theirs.pid"]);
    let (mine, ours) = root_with(&env, "mine", &[b"one.pid", b"two.pid"]);
    assert_code(&env.scan(&["--reclaim"], &other), 0);

    // One UI session reclaims both of mine, then quits.
    let mut ui = Ui::start(&env, &[&mine, &other], &[]);
    ui.wait_for("both stale", |s| s.matches("✗ stale").count() == 2);
    ui.send("D");
    ui.wait_for("the reclaim dialog", |s| {
        s.contains("Reclaim 2 stale locks?")
    });
    ui.send("y");
    ui.wait_for("both removed", |s| {
        ours.iter().all(|p| !p.exists()) && s.contains("no locks found")
    });
    ui.send("q");
    assert_eq!(ui.wait_exit(), 0);
    let journal = env.journal();
    assert!(
        journal
            .iter()
            .filter(|l| l["path"].as_str().is_some_and(|p| p.contains("/mine/")))
            .all(|l| l["via"] == "ui"),
        "{journal:?}"
    );

    // The next UI: u offers that reclaim, saying it was an earlier session's; no is no.
    let mut ui = Ui::start(&env, &[&mine, &other], &[]);
    ui.wait_for("the UI", |s| s.contains("no locks found"));
    ui.send("u");
    let dialog = ui.wait_for("the undo dialog", |s| {
        s.contains("Undo your last reclaim: put these 2 locks back?") && s.contains("[ No ]")
    });
    assert!(dialog.contains("an earlier session of the UI"), "{dialog}");
    assert!(!dialog.contains("theirs.pid"), "{dialog}");
    ui.send("y");
    ui.wait_for("both back", |s| s.contains("restored 2 locks"));
    assert!(ours.iter().all(|p| p.exists()));
    assert!(
        !theirs[0].exists(),
        "u never puts back another kind of run's reclaim"
    );

    // The journal view lists the other run; picked, it is previewed, and put back on yes.
    ui.send("U");
    ui.wait_for("the journal view", |s| {
        // The other run, the first UI session, and this one (its restores).
        s.contains("Journal: 3 runs") && s.contains("a --scan --reclaim")
    });
    ui.send("g");
    ui.wait_for("the first run under the cursor", |s| {
        s.lines()
            .any(|l| l.contains("▶") && l.contains("a --scan --reclaim"))
    });
    ui.send("\r");
    let preview = ui.wait_for("the preview", |s| {
        s.contains("Put this lock back?") && s.contains("theirs.pid") && s.contains("[ No ]")
    });
    assert!(
        preview.contains("what a --scan --reclaim reclaimed"),
        "{preview}"
    );
    assert!(!theirs[0].exists(), "nothing before the yes");
    ui.send("y");
    ui.wait_for("put back", |s| s.contains("restored "));
    assert!(theirs[0].exists());
    ui.send("q");
    assert_eq!(ui.wait_exit(), 0);
}
