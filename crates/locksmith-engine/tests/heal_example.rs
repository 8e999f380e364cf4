//! The `heal` example, run as a user would: a holder killed with SIGKILL, then a second run
//! that takes the lock over. `cargo test` builds the examples before it runs the tests.

use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::Command;

/// `target/<profile>/examples/heal`, next to this test's own `deps` directory.
fn example() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let profile_dir = exe.parent().and_then(|deps| deps.parent()).unwrap();
    let heal = profile_dir.join("examples").join("heal");
    assert!(heal.exists(), "{} is not built", heal.display());
    heal
}

#[test]
fn a_holder_killed_with_sigkill_leaves_a_lock_the_next_run_heals() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("heal.lock");

    let crashed = Command::new(example())
        .arg("crash")
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(crashed.status.signal(), Some(9), "{crashed:?}");
    let said = String::from_utf8_lossy(&crashed.stdout);
    assert!(said.contains("(kernel lock: true); crashing"), "{said}");
    assert!(path.exists(), "the killed holder left its lock file");

    let healed = Command::new(example()).arg(&path).output().unwrap();
    let said = String::from_utf8_lossy(&healed.stdout);
    assert!(healed.status.success(), "{healed:?}");
    assert!(said.contains("found a lock: stale"), "{said}");
    assert!(
        said.contains("acquired") && said.contains("released"),
        "{said}"
    );
    assert!(!path.exists(), "released: nothing is left behind");
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert!(left.is_empty(), "{left:?}");
}
