//! What a crash in the fallback leaves behind (a temporary file of an acquirer killed before it
//! removed it, a reclaim guard of a reclaimer killed while it held it) is cleared by the next
//! holder at release, once its creator is provably gone; another process's or another kernel's
//! is left alone.

use locksmith_engine::Lock;

use crate::util::*;

/// Our PID namespace (the inode of `/proc/self/ns/pid`).
fn own_pid_ns() -> u64 {
    let link = std::fs::read_link("/proc/self/ns/pid").unwrap();
    let link = link.to_string_lossy();
    link.trim_start_matches("pid:[")
        .trim_end_matches(']')
        .parse()
        .unwrap()
}

/// Our start time in clock ticks since boot (field 22 of `/proc/self/stat`).
fn own_start_ticks() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    stat[stat.rfind(')')? + 2..]
        .split_ascii_whitespace()
        .nth(19)?
        .parse()
        .ok()
}

#[test]
fn a_killed_fallback_acquirer_leaves_nothing_for_long() {
    // A temporary file of a process killed before it could remove it (made by hand here, named
    // as the engine names them, for a PID that is gone): the next holder clears it at release.
    let dir = tempfile::tempdir().unwrap();
    let dead = dead_pid();
    // `.locksmith-<boot id, 8 hex digits>-<PID namespace>-<pid>-<start ticks>-<token>.tmp`.
    let temp = |pid: u32, start: Option<u64>, boot: Option<String>| {
        let boot: String = boot
            .unwrap_or_else(boot_id)
            .chars()
            .filter(char::is_ascii_hexdigit)
            .take(8)
            .collect();
        let ns = own_pid_ns();
        let start = start.map_or("x".to_string(), |t| t.to_string());
        format!(".locksmith-{boot}-{ns}-{pid}-{start}-0123456789abcdef.tmp")
    };
    let leftover = temp(dead as u32, Some(1), None);
    std::fs::write(dir.path().join(&leftover), "").unwrap();
    // One of a live process (ours) and one of another kernel: both are left alone.
    let ours = temp(std::process::id(), own_start_ticks(), None);
    std::fs::write(dir.path().join(&ours), "").unwrap();
    let other = temp(dead as u32, Some(1), Some("0badc0de".into()));
    std::fs::write(dir.path().join(&other), "").unwrap();
    // An abandoned reclaim guard: a record of a dead process.
    std::fs::write(
        dir.path().join("job.lock.reclaim"),
        engine_record(dead as i64, &[("kernel_lock", "false".into())]),
    )
    .unwrap();

    let g = Lock::new(dir.path().join("job.lock"))
        .force_fallback(true)
        .try_acquire()
        .unwrap();
    g.release().unwrap();
    let mut want = vec![ours, other];
    want.sort();
    assert_eq!(names(dir.path()), want);
}
