//! The engine's own evidence (`Direct`), without any scanner: records of dead, reused, live,
//! rebooted and remote owners, judged as the README's Evidence section says, and a stale one reclaimed.

use std::io::Write;
use std::path::Path;
use std::process::{Child, Command};

use locksmith_engine::{ErrorKind, Lock, Record, Verdict};

use crate::util::{dead_pid, require};

/// A fallback record (no kernel lock) naming `pid`, written on this host and boot: the record
/// of a lock this process takes, with another owner.
fn record_of(pid: u32) -> Record {
    let scratch = tempfile::tempdir().unwrap();
    let guard = Lock::new(scratch.path().join("mine.lock"))
        .force_fallback(true)
        .acquire()
        .unwrap();
    let mut r = guard.record().clone();
    r.pid = Some(i64::from(pid));
    r.start_time = None;
    r
}

/// Writes `r` as the engine does: one JSON object and a newline.
fn write(path: &Path, r: &Record) {
    let mut line = serde_json::to_vec(r).unwrap();
    line.push(b'\n');
    std::fs::File::create(path)
        .unwrap()
        .write_all(&line)
        .unwrap();
}

struct Sleeper(Child);

impl Drop for Sleeper {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn a_dead_owner_is_stale_and_reclaimed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dead.lock");
    write(&path, &record_of(dead_pid() as u32));
    let j = Lock::new(&path).inspect().unwrap();
    assert_eq!(j.verdict, Verdict::Stale, "{j:?}");
    assert!(j.evidence.iter().any(|e| e.contains("ESRCH")), "{j:?}");
    Lock::new(&path).reclaim().unwrap();
    assert!(!path.exists());
}

#[test]
fn a_live_owner_is_live_and_its_lock_is_not_taken() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("live.lock");
    if !require("sleep") {
        return;
    }
    let sleeper = Sleeper(Command::new("sleep").arg("300").spawn().unwrap());
    write(&path, &record_of(sleeper.0.id()));
    let j = Lock::new(&path).inspect().unwrap();
    assert_eq!(j.verdict, Verdict::Live, "{j:?}");
    assert_eq!(j.holder_pid, Some(sleeper.0.id() as i32));
    assert_eq!(j.holder_command.as_deref(), Some("sleep 300"));
    let e = Lock::new(&path).try_acquire().unwrap_err();
    assert!(e.is_held(), "{e}");
    assert!(matches!(
        Lock::new(&path).reclaim().unwrap_err().kind(),
        ErrorKind::NotStale(_)
    ));
    assert!(path.exists());
}

#[test]
fn a_reused_pid_is_stale_and_another_host_or_namespace_is_foreign() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.lock");
    if !require("sleep") {
        return;
    }
    let sleeper = Sleeper(Command::new("sleep").arg("300").spawn().unwrap());

    // The PID is alive, but it is not the process that wrote the record.
    let mut reused = record_of(sleeper.0.id());
    reused.start_time = Some(1);
    write(&path, &reused);
    let j = Lock::new(&path).inspect().unwrap();
    assert_eq!(j.verdict, Verdict::Stale, "{j:?}");
    assert!(j.evidence[0].contains("reused"), "{j:?}");

    let mut remote = record_of(dead_pid() as u32);
    remote.hostname = Some("another-host.invalid".into());
    remote.boot_id = Some("00000000-0000-0000-0000-000000000001".into());
    write(&path, &remote);
    assert_eq!(
        Lock::new(&path).inspect().unwrap().verdict,
        Verdict::Foreign
    );

    let mut namespaced = record_of(dead_pid() as u32);
    namespaced.pid_ns = Some(1);
    write(&path, &namespaced);
    assert_eq!(
        Lock::new(&path).inspect().unwrap().verdict,
        Verdict::Foreign
    );
}

#[test]
fn a_record_from_an_earlier_boot_of_this_host_is_stale() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("boot.lock");
    if !require("sleep") {
        return;
    }
    let sleeper = Sleeper(Command::new("sleep").arg("300").spawn().unwrap());
    let mut old = record_of(sleeper.0.id());
    old.boot_id = Some("00000000-0000-0000-0000-000000000001".into());
    write(&path, &old);
    let j = Lock::new(&path).inspect().unwrap();
    assert_eq!(j.verdict, Verdict::Stale, "{j:?}");
    assert!(j.evidence[0].contains("earlier boot"), "{j:?}");
}

/// A heartbeat proves an owner gone only by what nobody can set back: the record's own beat
/// and the file's mtime are the writer's word (or anyone's who may write the file: `touch -d`,
/// `cp -p`, `tar x`), its ctime is not. A remote owner's record whose beat and mtime both say
/// two hours ago, written just now, is still `foreign`, and is neither taken nor reclaimed.
#[test]
fn a_heartbeat_set_back_with_the_mtime_proves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("beat.lock");
    let two_hours_ago = jiff::Timestamp::now() - jiff::SignedDuration::from_hours(2);
    let mut remote = record_of(dead_pid() as u32);
    remote.hostname = Some("another-host.invalid".into());
    remote.boot_id = Some("00000000-0000-0000-0000-000000000001".into());
    remote.created_at = Some(two_hours_ago.to_string());
    remote.heartbeat_at = Some(two_hours_ago.to_string());
    remote.heartbeat_interval = Some(std::time::Duration::from_secs(1));
    write(&path, &remote);
    std::fs::File::options()
        .write(true)
        .open(&path)
        .unwrap()
        .set_modified(std::time::SystemTime::now() - std::time::Duration::from_secs(7200))
        .unwrap();

    let j = Lock::new(&path).inspect().unwrap();
    assert_eq!(j.verdict, Verdict::Foreign, "{j:?}");
    assert!(j.rules.is_empty(), "{j:?}");
    assert!(
        j.evidence.iter().any(|e| e.contains("within its writer's")),
        "the ctime is the last beat: {j:?}"
    );
    assert!(Lock::new(&path).try_acquire().unwrap_err().is_held());
    assert!(matches!(
        Lock::new(&path).reclaim().unwrap_err().kind(),
        ErrorKind::NotStale(_)
    ));
    assert!(path.exists());
}
