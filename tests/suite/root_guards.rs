//! What a local user (uid 65534) can make root's locksmith do, tried for real:
//! - a job that `locksmith lock` runs for root gives up its privileges and tries to rewrite
//!   root's owner record through what it inherited: it cannot, and a crash leaves a lock the
//!   next run proves stale and takes;
//! - a vim swap file the user left (of a root file it may only read) is not recovered by
//!   root's `e` (which would let `:w` write the user's text over the root file), nor offered
//!   as a `vim -r` to run;
//! - `--scan --reclaim` over a container runtime's storage removes nothing there.
//!
//! Needs root (to act as another user) and, for the storage, Podman; elsewhere it skips with a
//! message.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use crate::util::*;

/// The job: as uid 65534, every way to change the lock file through the descriptors it
/// inherited (write, pwrite, ftruncate, and opening `/proc/self/fd/N` anew for writing);
/// writes which worked (or `nothing`) to its report, then waits.
const REWRITE_THE_RECORD: &str = r#"
import os, sys, time
lock, report = sys.argv[1], sys.argv[2]
want = os.stat(lock)
done = []
for fd in os.listdir("/proc/self/fd"):
    n = int(fd)
    try:
        st = os.fstat(n)
    except OSError:
        continue
    if (st.st_dev, st.st_ino) != (want.st_dev, want.st_ino):
        continue
    done.append("inherited")
    for how, f in [
        ("write", lambda: os.write(n, b"garbage")),
        ("pwrite", lambda: os.pwrite(n, b"{}", 0)),
        ("ftruncate", lambda: os.ftruncate(n, 0)),
        ("reopen", lambda: os.close(os.open("/proc/self/fd/%d" % n, os.O_WRONLY))),
    ]:
        try:
            f()
            done.append(how)
        except OSError:
            pass
with open(report + ".tmp", "w") as out:
    out.write(" ".join(done) or "nothing")
os.rename(report + ".tmp", report)
time.sleep(600)
"#;

/// A directory of root's that uid 65534 may write to (for its report).
fn drop_box(env: &Env) -> std::path::PathBuf {
    fs::set_permissions(env.path(), fs::Permissions::from_mode(0o755)).unwrap();
    let out = env.path().join("out");
    fs::create_dir(&out).unwrap();
    fs::set_permissions(&out, fs::Permissions::from_mode(0o777)).unwrap();
    out
}

#[test]
fn a_job_that_drops_its_privileges_cannot_rewrite_roots_lock_record() {
    if !can_act_as_nobody() {
        return;
    }
    let env = Env::new();
    let out = drop_box(&env);
    let lock = env.path().join("job.lock");
    let report = out.join("report");
    let mut job = lock_cmd(&lock, &[]);
    job.args([
        "--",
        "setpriv",
        "--reuid=65534",
        "--regid=65534",
        "--clear-groups",
    ])
    .args([NOBODY_PYTHON, "-c", REWRITE_THE_RECORD])
    .arg(&lock)
    .arg(&report);
    let mut job = Group::spawn(job);
    let did = wait_for("the job's report", || fs::read_to_string(&report).ok());
    let record = fs::read_to_string(&lock).unwrap();
    assert!(
        record.contains(&format!("\"pid\":{}", job.pid())),
        "the record is root's, as written: {record:?} (the job did: {did})"
    );
    assert_eq!(
        did, "inherited",
        "the job holds the lock, and nothing it holds writes the record"
    );
    // While the job runs, the lock is live; a crash of both leaves it stale, and the next
    // run takes it at once.
    let (report_json, _) = env.scan_json(&[env.path()]);
    assert_eq!(report_json.expect_lock(&lock).verdict, "live");
    job.kill();
    let (report_json, _) = env.scan_json(&[env.path()]);
    let l = report_json.expect_lock(&lock);
    assert_eq!(l.verdict, "stale", "{:#?}", l.evidence);
    let mut next = lock_cmd(&lock, &["--timeout", "0"]);
    next.args(["--", "true"]);
    let next = next.output().unwrap();
    assert_eq!(next.status.code(), Some(0), "{}", stderr(&next));
    assert!(!lock.exists());
}

/// The read-only descriptor the job gets keeps the lock held by itself: the `locksmith lock`
/// process killed alone leaves it live while the job runs, and stale once the job is gone.
#[test]
fn the_lock_stays_held_by_the_job_alone_and_heals_when_it_dies() {
    let dir = tempfile::tempdir().unwrap();
    let lock = dir.path().join("job.lock");
    let mut holder = hold_with_cli(&lock, &[]);
    let supervisor = holder.pid();
    let sleep = wait_for("the job to run", || {
        holder
            .members()
            .into_iter()
            .find(|(p, name)| *p != supervisor && name == "sleep")
    })
    .0;
    kill9(supervisor);
    holder.wait(20);
    let j = locksmith::engine::lock(&lock).inspect().unwrap();
    assert_eq!(j.verdict, locksmith::Verdict::Live, "{:?}", j.evidence);
    let mut busy = lock_cmd(&lock, &["--timeout", "0"]);
    busy.args(["--", "true"]);
    assert_eq!(busy.output().unwrap().status.code(), Some(75));

    kill9(sleep);
    wait_until("the job to die", || !alive(sleep));
    let j = locksmith::engine::lock(&lock).inspect().unwrap();
    assert_eq!(j.verdict, locksmith::Verdict::Stale, "{:?}", j.evidence);
    let mut next = lock_cmd(&lock, &["--timeout", "0"]);
    next.args(["--", "true"]);
    assert_eq!(next.output().unwrap().status.code(), Some(0));
    drop(holder);
    assert!(!Path::new(&lock).exists());
}
