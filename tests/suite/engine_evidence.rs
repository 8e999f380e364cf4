//! The evidence rules as the engine applies them to real files and real processes: PID reuse,
//! earlier boots, other hosts (with and without a heartbeat), PID namespaces, Zero's records.
//! The engine judges with a live snapshot of this machine, whose clock may have stepped: its
//! verdicts and reclaims here rest on proofs that need no clock (start ticks, a boot id, a
//! dead PID, a kernel lock released); what compares times (a start with a written time, a
//! heartbeat's age) is judged by the library from this machine's evidence with the times and
//! the clock as the test sets them (`judging::judge_changed`).

use std::path::Path;
use std::process::Command;

use crate::util::engine::*;
use crate::util::judging::{assert_evidence, judge_changed, steady, up_for_at_least, written_ago};
use crate::util::quiet::{self, Fact};
use locksmith::Verdict;
use locksmith::engine::{ErrorKind, lock};

/// A live `sleep` in its own process group (killed when dropped).
fn live_process() -> Group {
    let mut c = Command::new("sleep");
    c.arg("300");
    let g = Group::spawn(c);
    wait_within(10, "sleep to run", || alive(g.pid()).then_some(()));
    g
}

fn start_ticks(pid: i32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    rest.split_whitespace().nth(19).unwrap().parse().unwrap()
}

fn assert_stale_and_reclaimed(path: &Path, because: &str) {
    let j = lock(path).inspect().unwrap();
    assert_eq!(j.verdict, Verdict::Stale, "{j:?}");
    assert!(
        j.evidence.iter().any(|e| e.contains(because)),
        "expected evidence mentioning {because:?}: {:?}",
        j.evidence
    );
    let removed = lock(path).reclaim().expect("reclaimed");
    assert_eq!(removed.verdict, Verdict::Stale);
    assert!(!path.exists());
}

#[test]
fn a_live_process_that_started_after_the_record_was_written_is_pid_reuse() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("reused.lock");
    let p = live_process();

    // Engine record of a fallback holder: the start time names another process.
    let wrong_start = start_ticks(p.pid()).saturating_sub(500).to_string();
    write(
        &path,
        engine_record(
            p.pid() as i64,
            &[
                ("kernel_lock", "false".into()),
                ("start_time", wrong_start),
                ("created_at", ago(10)),
            ],
        ),
    );
    assert_stale_and_reclaimed(&path, "reused");

    // No start time (Zero's format): the process started after the record was written (10 s
    // ago, well after this host booted, well before the process started). A start time
    // compared with a written one proves reuse only on a clock known not to have stepped
    // since: judged from the evidence on one (the host up for an hour), and on one that may
    // have stepped forward by an hour. (No reclaim here: the engine would judge with this
    // machine's clock; the start-tick proof above needs none, and is reclaimed.)
    write(
        &path,
        format!(
            r#"{{"PID":{},"CreatedAt":{},"Hostname":"{}"}}"#,
            p.pid(),
            ago(10),
            hostname()
        ),
    );
    let f = judge_changed(&path, |ev| {
        steady(ev);
        up_for_at_least(ev, 3600);
    });
    assert_eq!(f.judgement.verdict(), Verdict::Stale, "{:#?}", f.judgement);
    assert_eq!(f.judgement.proofs()[0].rule, locksmith::Rule::PidReused);
    assert_evidence(&f, "reused");
    let f = judge_changed(&path, |ev| {
        up_for_at_least(ev, 3600);
        ev.clock = Some(locksmith::probe::clock::Clock {
            step_ms: Some(3600 * 1000),
            how: "the wall clock may have stepped forward by up to 1 h since this boot began"
                .into(),
        });
    });
    assert_eq!(f.judgement.verdict(), Verdict::Live, "{:#?}", f.judgement);
    assert_evidence(&f, "that it started later proves nothing");

    // The same process with its real start time: live, and not reclaimed.
    write(
        &path,
        engine_record(
            p.pid() as i64,
            &[
                ("kernel_lock", "false".into()),
                ("start_time", start_ticks(p.pid()).to_string()),
            ],
        ),
    );
    let j = lock(&path).inspect().unwrap();
    assert_eq!(j.verdict, Verdict::Live, "{j:?}");
    assert_eq!(j.process.as_ref().map(|x| x.pid), Some(p.pid()));
    let e = lock(&path).reclaim().unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::NotStale(_)), "{e}");
    assert!(e.to_string().contains("is live now"), "{e}");
    assert!(path.exists());
}

#[test]
fn a_record_from_an_earlier_boot_of_this_host_is_stale() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("reboot.lock");
    // Even naming a live PID: that PID belongs to this boot, not to the writer.
    let p = live_process();
    write(
        &path,
        engine_record(
            p.pid() as i64,
            &[("boot_id", "\"00000000-1111-2222-3333-444444444444\"".into())],
        ),
    );
    assert_stale_and_reclaimed(&path, "earlier boot");

    // And the engine takes such a lock at once.
    write(
        &path,
        engine_record(
            p.pid() as i64,
            &[("boot_id", "\"00000000-1111-2222-3333-444444444444\"".into())],
        ),
    );
    let g = lock(&path).try_acquire().expect("reclaimed on the way");
    g.release().unwrap();
}

#[test]
fn a_record_from_another_host_is_foreign_until_its_heartbeat_expires() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("remote.lock");
    let other = |fields: &[(&str, String)]| {
        let mut all = vec![
            ("hostname", "\"elsewhere.example\"".to_string()),
            (
                "boot_id",
                "\"99999999-8888-7777-6666-555555555555\"".to_string(),
            ),
        ];
        all.extend(fields.iter().cloned());
        engine_record(dead_pid() as i64, &all)
    };

    // No heartbeat: foreign, never reclaimed, not taken.
    write(&path, other(&[]));
    let j = lock(&path).inspect().unwrap();
    assert_eq!(j.verdict, Verdict::Foreign, "{j:?}");
    assert_eq!(
        j.owner.as_ref().unwrap().hostname.as_deref(),
        Some("elsewhere.example")
    );
    let e = lock(&path).reclaim().unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::NotStale(_)), "{e}");
    let e = lock(&path).try_acquire().unwrap_err();
    assert!(e.is_held(), "{e}");
    assert!(e.to_string().contains("elsewhere.example"), "{e}");
    assert!(path.exists());

    // A heartbeat that is still beating: foreign.
    write(
        &path,
        other(&[("heartbeat_at", ago(5)), ("heartbeat_secs", "10".into())]),
    );
    assert_eq!(lock(&path).inspect().unwrap().verdict, Verdict::Foreign);
    assert!(lock(&path).reclaim().is_err());

    // The record's heartbeat is old but the file's mtime (touched at every beat) is fresh:
    // still beating.
    write(
        &path,
        other(&[
            ("heartbeat_at", ago(7200)),
            ("heartbeat_secs", "10".into()),
            ("created_at", ago(7200)),
        ]),
    );
    assert_eq!(lock(&path).inspect().unwrap().verdict, Verdict::Foreign);

    // Its mtime set two hours back too proves no missed beat (anyone who may write the file
    // can set it): the file's ctime says it changed now. So on this machine's clock (and
    // not reclaimed), and on one known steady.
    set_mtime_ms(&path, now_ms() - 7_200_000);
    assert_eq!(lock(&path).inspect().unwrap().verdict, Verdict::Foreign);
    let e = lock(&path).reclaim().unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::NotStale(_)), "{e}");
    let f = judge_changed(&path, steady);
    assert_eq!(
        f.judgement.verdict(),
        Verdict::Foreign,
        "{:#?}",
        f.judgement
    );

    // No beat for two hours (record and file, in the evidence, on a clock known steady):
    // stale. (The record is another host's: this host's boot says nothing of it, whenever it
    // was. No reclaim here: the engine would judge with this machine's clock.)
    let beat_two_hours_ago = |path: &Path| {
        judge_changed(path, |ev| {
            steady(ev);
            written_ago(ev, path, 7200);
        })
    };
    let f = beat_two_hours_ago(&path);
    assert_eq!(f.judgement.verdict(), Verdict::Stale, "{:#?}", f.judgement);
    assert_eq!(
        f.judgement.proofs()[0].rule,
        locksmith::Rule::HeartbeatExpired
    );
    assert_evidence(&f, "not refreshed for 2 h");

    // A slow heartbeat interval widens the window: 3 intervals of 3000 s.
    write(
        &path,
        other(&[
            ("heartbeat_at", ago(7200)),
            ("heartbeat_secs", "3000".into()),
        ]),
    );
    let f = beat_two_hours_ago(&path);
    assert_eq!(
        f.judgement.verdict(),
        Verdict::Foreign,
        "{:#?}",
        f.judgement
    );
}

#[test]
fn zero_securefile_records_are_read() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("zero.lock");
    let p = live_process();
    write(
        &path,
        format!(
            r#"{{"PID":{},"CreatedAt":{},"Hostname":"{}"}}"#,
            p.pid(),
            ago(0),
            hostname()
        ),
    );
    let j = lock(&path).inspect().unwrap();
    assert_eq!(j.verdict, Verdict::Live, "{j:?}");
    let owner = j.owner.unwrap();
    assert_eq!(owner.pid, Some(p.pid() as i64));
    assert_eq!(owner.hostname.as_deref(), Some(hostname().as_str()));
    assert!(owner.created_at.is_some());
    assert!(owner.detail.unwrap().contains("Zero"));

    write(
        &path,
        format!(
            r#"{{"PID":{},"CreatedAt":{},"Hostname":"{}"}}"#,
            dead_pid(),
            ago(0),
            hostname()
        ),
    );
    assert_stale_and_reclaimed(&path, "ESRCH");

    write(
        &path,
        r#"{"PID":1,"CreatedAt":"2020-01-01T00:00:00Z","Hostname":"another-box"}"#,
    );
    assert_eq!(lock(&path).inspect().unwrap().verdict, Verdict::Foreign);

    write(&path, r#"{"PID":"twelve","Hostname":7}"#);
    assert_eq!(lock(&path).inspect().unwrap().verdict, Verdict::Unknown);
    assert!(lock(&path).reclaim().is_err());
    let e = lock(&path).try_acquire().unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::Unrecognised(_)), "{e}");
}

#[test]
fn reclaim_with_checks_identity_and_lets_the_caller_veto() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("veto.lock");
    let content = engine_record(dead_pid() as i64, &[]);
    write(&path, &content);
    let judged = locksmith::scan::Identity::of(&std::fs::metadata(&path).unwrap());

    // The caller refuses: nothing removed.
    let e = lock(&path)
        .reclaim_with(Some(judged), |bytes, j| {
            assert_eq!(bytes, content.as_bytes());
            assert_eq!(j.verdict, Verdict::Stale);
            Err(std::io::Error::other("could not save a copy"))
        })
        .unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::Aborted(_)), "{e}");
    assert!(path.exists());

    // Another file at the same path (different inode): refused.
    std::fs::remove_file(&path).unwrap();
    write(&path, &content);
    let e = lock(&path)
        .reclaim_with(Some(judged), |_, _| Ok(()))
        .unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::Changed(_)), "{e}");
    assert!(path.exists());

    // The right file: removed, after the callback saw it.
    let now = locksmith::scan::Identity::of(&std::fs::metadata(&path).unwrap());
    let mut saw = None;
    let j = lock(&path)
        .reclaim_with(Some(now), |bytes, _| {
            saw = Some(bytes.to_vec());
            Ok(())
        })
        .unwrap();
    assert_eq!(j.verdict, Verdict::Stale);
    assert_eq!(saw.as_deref(), Some(content.as_bytes()));
    assert!(!path.exists());
}

#[test]
fn a_lock_held_in_another_pid_namespace_is_live_and_reclaimed_once_it_is_killed() {
    // No container or sandbox of another test starts meanwhile: its new PID namespace could
    // take the inode number of this one once it is dead (see below).
    let _no_container = quiet::absent(Fact::Container);
    // Nor another test's namespace (see util/quiet.rs).
    let _namespace = quiet::making(Fact::PidNamespace);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ns.lock");
    let mut c = Command::new("unshare");
    c.args(["--pid", "--fork", "--mount-proc", BIN, "lock"])
        .arg(&path)
        .args(["--", "sleep", "300"])
        .stderr(std::process::Stdio::piped());
    let mut ns = Group::spawn(c);
    let held = wait_within(20, "the namespaced holder", || {
        if let Ok(Some(status)) = ns.child.try_wait() {
            return Some(Err(status));
        }
        lock(&path)
            .inspect()
            .ok()
            .filter(|j| j.verdict == Verdict::Live)
            .map(Ok)
    });
    let j = match held {
        Ok(j) => j,
        Err(status) => {
            let mut err = String::new();
            if let Some(mut e) = ns.child.stderr.take() {
                use std::io::Read;
                let _ = e.read_to_string(&mut err);
            }
            return skip(format!(
                "unshare --pid --fork --mount-proc is not permitted here ({status}: {err})"
            ));
        }
    };
    let rec = locksmith_engine::ParsedRecord::parse(&std::fs::read(&path).unwrap()).unwrap();
    let our_ns = locksmith::probe::host::pid_ns_of("self");
    assert_ne!(
        rec.pid_ns, our_ns,
        "the holder runs in another PID namespace"
    );
    assert!(rec.pid.unwrap() <= 3, "a PID of the new namespace: {rec:?}");
    // Live from outside: the kernel lock, attributed to processes we can see.
    let members = group_pids(ns.pid());
    assert!(
        j.holders
            .iter()
            .any(|h| h.pid > 0 && members.contains(&h.pid)),
        "{j:?} / {members:?}"
    );
    assert!(lock(&path).try_acquire().unwrap_err().is_held());

    ns.kill();
    // The processes in the namespace now: (pid, state, command line).
    let in_namespace = || -> Vec<(u32, char, String)> {
        std::fs::read_dir("/proc")
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
            .filter(|pid| locksmith::probe::host::pid_ns_of(&pid.to_string()) == rec.pid_ns)
            .map(|pid| {
                let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
                let state = stat
                    .rsplit_once(") ")
                    .and_then(|(_, rest)| rest.chars().next())
                    .unwrap_or('?');
                let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
                (pid, state, String::from_utf8_lossy(&cmd).replace('\0', " "))
            })
            .collect()
    };
    // The namespace lives on until its last process is reaped: its PID 1, left to this
    // machine's init by the killed `unshare`, may be a zombie for a moment.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let j = loop {
        let j = lock(&path).inspect().unwrap();
        let zombies_only = in_namespace().iter().all(|&(_, state, _)| state == 'Z');
        if j.verdict == Verdict::Stale || !zombies_only || std::time::Instant::now() > deadline {
            break j;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    // The kernel hands a PID namespace's inode number to the next namespace made: another
    // program's (a container started meanwhile) makes the dead one's owner look alive, which
    // is the safe side. This suite's own wait (the facts above); no test can hold off others.
    let there = in_namespace();
    if j.verdict != Verdict::Stale && !there.is_empty() {
        return skip_even_under_ci(format!(
            "the dead namespace's inode {:?} names another namespace now, with {there:?} ({:?}: {:?})",
            rec.pid_ns, j.verdict, j.evidence
        ));
    }
    assert_eq!(j.verdict, Verdict::Stale, "{j:?}");
    assert!(
        j.evidence
            .iter()
            .any(|e| e.contains("another PID namespace")),
        "{j:?}"
    );
    let g = lock(&path).try_acquire().expect("reclaimed at once");
    g.release().unwrap();
}
