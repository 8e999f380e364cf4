//! A declared dialect in the terminal UI: the user's configuration declares a lock format,
//! the UI lists such a lock under the declared name with its verdict and evidence, and `d`
//! then `y` reclaims it. The real binary runs in a pseudo-terminal; its screen is read
//! through a vt100 parser on a background thread; every wait has a deadline.

use crate::util;
use crate::util::Env;
use crate::util::ui::Ui;

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

    let mut ui = Ui::start(&env, &[&tree], &[]);

    // (the DIALECT column is 11 characters wide; the detail pane names it whole)
    let listed = ui.wait_for("the declared lock listed", |s| {
        s.lines()
            .any(|l| l.contains("nightly-bac") && l.contains("✗ stale"))
    });
    assert!(listed.contains("nightly.backup-lock"), "{listed}");
    ui.send("\r");
    ui.wait_for("its evidence and dialect", |s| {
        s.contains("no process") && s.contains("nightly-backup")
    });
    ui.send("d");
    ui.wait_for("the confirm dialog", |s| {
        s.contains("Reclaim this stale lock?")
    });
    assert!(stale.exists(), "nothing is removed before the yes");
    ui.send("y");
    ui.wait_for("the reclaim result", |s| {
        s.lines()
            .any(|l| l.starts_with("removed ") && l.contains("nightly.backup-lock"))
    });
    assert!(!stale.exists());
    let journal = env.journal();
    assert_eq!(journal.len(), 1, "{journal:?}");
    assert_eq!(journal[0]["dialect"], "nightly-backup");
    ui.send("q");
    assert_eq!(ui.wait_exit(), 0);
}
