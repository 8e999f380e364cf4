//! Judging one path as reclaim and the UI do (`scan::judge_path` with the embedded
//! configuration), with assertions that print the whole judgement when they fail. Every
//! judgement is made with a [`Snap`]: on a quiet host, with a snapshot younger than the
//! fixture (see [`super::quiet`]).
//!
//! Judging from changed evidence. What a real program did stays as it did it; the *time* a
//! rule compares (when the lock was written, the boot, the clock's steadiness, how much time
//! has passed) is set in the evidence, never by backdating a file's mtime (which proves
//! nothing: anyone who may write the file can set it) nor left to this machine's clock (which
//! may have stepped: every time rule is then `unknown`). [`judge_changed`] records a
//! judgement on this machine and judges it again from the recording changed as the test says
//! ([`written_ago`], [`written_ago_this_boot`], [`written_before_boot`], [`changed_ago`],
//! [`steady`], [`up_for_at_least`], [`booted_ago`], [`boot_moved`], [`on_nfs`]);
//! [`judge_all_changed`] does so for many paths. For the real binary, [`record_scan`] and
//! [`scan_replayed`] record a scan (`--scan --record`) and [`replay`] judges the changed
//! recording with `locksmith replay`. Each fails the test when the changed evidence leaves a
//! question of the judge unanswered.

use std::ffi::OsStr;
use std::path::Path;
use std::process::Output;

use locksmith::config::Settings;
use locksmith::scan::{self, Config, Finding};
use locksmith::{HolderHow, Verdict};

use super::quiet::{Snap, recording, snapshot};
use super::{Env, Report};
use locksmith::probe::evidence::{self, Answer};
use locksmith::probe::{Evidence, PidState, Snapshot, clock::Clock};

/// The findings of a real scan of `root` with the embedded configuration and a fresh
/// snapshot.
pub fn scan_findings(root: &Path) -> Vec<Finding> {
    let config = Settings::embedded().scan;
    let roots = config.roots(&[root.to_path_buf()]);
    let found = std::sync::Mutex::new(Vec::new());
    let sink = |e: scan::ScanEvent| {
        if let scan::ScanEvent::Found(f) = e {
            found.lock().unwrap().push(*f);
        }
    };
    let cancel = std::sync::atomic::AtomicBool::new(false);
    scan::scan(&config, &roots, &snapshot(), &cancel, &sink).unwrap();
    found.into_inner().unwrap()
}

/// Asks `snap` (a recording) what a rule may ask of the lock file at `path` once its times are
/// changed, which the judgement on this machine's own times may not have asked: who has it
/// open, who holds a kernel lock on it (a heartbeat past its window asks; a fresh one does
/// not), and how far this machine's clock can be trusted (a replay that finds no clock takes
/// one that has not stepped: a test that means one says so, with [`steady`]).
fn ask_of_the_lock(snap: &Snapshot, path: &Path) {
    snap.clock();
    if let Ok(meta) = snap.lstat(path) {
        let key = locksmith::probe::FileKey::of(&meta);
        snap.openers(key);
        snap.kernel_holders(key);
    }
}

/// Adds to `ev` (a recording of the binary's) what a rule may ask of the lock file at `path`
/// once its times are changed (see [`ask_of_the_lock`]), as this machine answers now: for a
/// fixture the test left as the scan found it. Answers the recording has stay.
pub fn ask_here(ev: &mut Evidence, path: &Path) {
    let snap = recording();
    ask_of_the_lock(&snap, path);
    let here = snap.evidence().unwrap();
    for (k, v) in here.openers {
        ev.openers.entry(k).or_insert(v);
    }
    for (k, v) in here.kernel_holders {
        ev.kernel_holders.entry(k).or_insert(v);
    }
}

/// Every lock of `ev` judged from it alone; fails the test when a question of the judge is
/// left unanswered.
pub fn replay_all(ev: Evidence, config: &Config) -> Vec<Finding> {
    let locks = ev.locks.clone();
    let replay = Snapshot::replay(ev);
    let found = locks
        .iter()
        .filter_map(|l| scan::judge_recorded(l, &replay, config))
        .collect();
    let misses = replay.replay_misses();
    assert!(
        misses.is_empty(),
        "the changed evidence does not answer {misses:?}"
    );
    found
}

/// `locksmith --scan --record FILE EXTRA... ROOT` in `env`: what it recorded, and its
/// output.
pub fn record_scan(env: &Env, extra: &[&str], root: &Path) -> (Evidence, Output) {
    let file = env.path().join("recorded.json");
    let _ = std::fs::remove_file(&file);
    let mut args: Vec<&OsStr> = vec!["--record".as_ref(), file.as_os_str()];
    args.extend(extra.iter().map(OsStr::new));
    let out = env.scan(&args, root);
    if !file.exists() {
        panic!(
            "no recording: {}{}",
            super::stdout(&out),
            super::stderr(&out)
        );
    }
    (read_recording(&file), out)
}

/// A recording of a scan of this machine (`--scan --record FILE`), with this machine's clock
/// where no rule asked for it (a replay that finds no clock takes one that has not stepped:
/// a test that means one says so, with [`steady`]).
pub fn read_recording(file: &Path) -> Evidence {
    let text = std::fs::read_to_string(file)
        .unwrap_or_else(|e| panic!("the recording {}: {e}", file.display()));
    let mut ev = Evidence::from_json(&text).expect("a recording");
    if ev.clock.is_none() {
        ev.clock = Some(Clock::read(ev.host.boot_time));
    }
    ev
}

/// `locksmith --scan --record FILE EXTRA... ROOT` in `env`, its recording changed by
/// `change` (and answering, as this machine does now, what a rule may ask of each lock once
/// its times are changed: see [`ask_here`]), judged again by `locksmith replay --json`: that
/// report, and the output of the scan itself.
pub fn scan_replayed(
    env: &Env,
    extra: &[&str],
    root: &Path,
    change: impl FnOnce(&mut Evidence),
) -> (Report, Output) {
    let (ev, scanned) = record_changed(env, extra, root, change);
    let (report, _) = replay_json(env, &ev);
    (report, scanned)
}

/// The recording of [`scan_replayed`], changed, before it is replayed (for a test that
/// replays it otherwise: as a table, with `--check`).
pub fn record_changed(
    env: &Env,
    extra: &[&str],
    root: &Path,
    change: impl FnOnce(&mut Evidence),
) -> (Evidence, Output) {
    let (mut ev, scanned) = record_scan(env, extra, root);
    change(&mut ev);
    for l in ev.locks.clone() {
        ask_here(&mut ev, &evidence::key_path(&l.path));
    }
    (ev, scanned)
}

/// `locksmith replay ARGS... FILE` in `env`, of `ev` written to a file: its output. Judges
/// `ev` with the library first, failing the test when it leaves a question of the judge
/// unanswered (the binary does not say).
pub fn replay(env: &Env, ev: &Evidence, args: &[&str]) -> Output {
    let config = match &ev.settings {
        Some(v) => {
            let mut raw = locksmith::config::RawConfig::judging_with(
                serde_json::from_value(v.clone()).expect("the recording's settings"),
            );
            // As `replay` does: it writes nothing.
            raw.state_dir = Default::default();
            raw.validate()
                .expect("the recording's settings are valid")
                .scan
        }
        None => Settings::embedded().scan,
    };
    replay_all(ev.clone(), &config);
    let file = env.path().join("replayed.json");
    std::fs::write(&file, ev.to_json()).unwrap();
    let mut all: Vec<&OsStr> = vec!["replay".as_ref()];
    all.extend(args.iter().map(OsStr::new));
    all.push(file.as_os_str());
    env.run(all)
}

/// `locksmith replay --json` of `ev` (see [`replay`]), checked against the schema and
/// parsed.
pub fn replay_json(env: &Env, ev: &Evidence) -> (Report, Output) {
    let out = replay(env, ev, &["--json"]);
    (super::parse_report(&out), out)
}

/// Judges one path with a given snapshot, as `judge` does with a fresh one.
pub fn judge_in(path: &Path, snap: &Snap) -> Finding {
    judge_with(path, snap, &Settings::embedded().scan)
}

/// `scan::judge_path` with a [`Snap`], which must be younger than the file: how every test
/// judges a path (a test checks that none calls `scan::judge_path` itself).
pub fn try_judge(
    path: &Path,
    snap: &Snap,
    config: &Config,
) -> Result<Option<Finding>, scan::ScanError> {
    snap.assert_younger_than(path);
    scan::judge_path(path, snap, config)
}

/// Judges one path with a given snapshot and configuration.
pub fn judge_with(path: &Path, snap: &Snap, config: &Config) -> Finding {
    try_judge(path, snap, config)
        .unwrap_or_else(|e| panic!("{}: {e:?}", path.display()))
        .unwrap_or_else(|| panic!("{} was not taken for a lock", path.display()))
}

/// Judges one path as reclaim and the UI do: a fresh snapshot, the embedded config.
pub fn judge(path: &Path) -> Finding {
    judge_in(path, &snapshot())
}

/// `expect` with a given snapshot.
pub fn expect_in(snap: &Snap, path: &Path, dialect: &str, verdict: Verdict) -> Finding {
    let f = judge_in(path, snap);
    assert_eq!(f.dialect, dialect, "{}: {:#?}", path.display(), f.judgement);
    assert_eq!(
        f.judgement.verdict(),
        verdict,
        "{}: {:#?}",
        path.display(),
        f.judgement
    );
    assert!(!f.judgement.evidence.is_empty());
    f
}

/// Judges and checks the dialect and verdict, printing the whole judgement on failure.
pub fn expect(path: &Path, dialect: &str, verdict: Verdict) -> Finding {
    expect_in(&snapshot(), path, dialect, verdict)
}

/// Every evidence line, one per line.
pub fn evidence(f: &Finding) -> String {
    f.judgement.evidence.join("\n")
}

pub fn assert_evidence(f: &Finding, needle: &str) {
    let all = evidence(f);
    assert!(
        all.contains(needle),
        "evidence lacks {needle:?}:\n{all}\n{:#?}",
        f.judgement
    );
}

/// Asserts that this test process is listed among the holders, with the file open (not
/// locked).
pub fn assert_open_here(f: &Finding) {
    let me = std::process::id() as i32;
    assert!(
        f.judgement
            .holders
            .iter()
            .any(|h| h.pid == me && h.how == HolderHow::Open),
        "not listed as open by this process: {:#?}",
        f.judgement
    );
}

/// Judges `path` on this machine, keeping the evidence, then again from that evidence changed
/// by `change`: the facts a rule reads, as the test sets them (when the lock was written, the
/// clock, when it is judged, a process added). What a real program did stays as it did it;
/// only what the test names changes. Fails the test when the changed evidence leaves a
/// question of the judge unanswered.
pub fn judge_changed(path: &Path, change: impl FnOnce(&mut Evidence)) -> Finding {
    judge_changed_with(path, &Settings::embedded().scan, change)
}

/// [`judge_changed`] with a given configuration.
pub fn judge_changed_with(
    path: &Path,
    config: &Config,
    change: impl FnOnce(&mut Evidence),
) -> Finding {
    let mut found = judge_all_changed(&[path], config, change);
    found.pop().unwrap()
}

/// [`judge_changed`] for several paths: each judged on this machine with one snapshot, then
/// again from its evidence changed by `change`. The findings, in the order of `paths`; fails
/// the test when the changed evidence leaves a question of the judge unanswered.
pub fn judge_all_changed(
    paths: &[&Path],
    config: &Config,
    change: impl FnOnce(&mut Evidence),
) -> Vec<Finding> {
    let snap = recording();
    for path in paths {
        judge_with(path, &snap, config);
        ask_of_the_lock(&snap, path);
    }
    let mut ev = snap
        .evidence()
        .expect("a recording snapshot keeps its evidence");
    change(&mut ev);
    let locks: Vec<_> = paths
        .iter()
        .map(|path| {
            let key = evidence::path_key(path);
            ev.locks
                .iter()
                .rev()
                .find(|l| l.path == key)
                .cloned()
                .unwrap_or_else(|| panic!("{} was not recorded", path.display()))
        })
        .collect();
    let replay = Snapshot::replay(ev);
    let found: Vec<Finding> = locks
        .iter()
        .map(|lock| {
            scan::judge_recorded(lock, &replay, config)
                .unwrap_or_else(|| panic!("{} is no lock in the changed evidence", lock.path))
        })
        .collect();
    let misses = replay.replay_misses();
    assert!(
        misses.is_empty(),
        "the changed evidence does not answer {misses:?}: {:#?}",
        found.iter().map(|f| &f.judgement).collect::<Vec<_>>()
    );
    found
}

/// In `ev`: the file at `path` as if it had been written at `ms` (ms since the epoch) and not
/// changed since: its mtime and ctime (and birth) there, as the lock's status and as every
/// answer about it says.
pub fn written_at(ev: &mut Evidence, path: &Path, ms: i64) {
    let key = evidence::path_key(path);
    let set = |s: &mut locksmith::probe::Stat| {
        let t = (ms.div_euclid(1000), ms.rem_euclid(1000) * 1_000_000);
        s.mtime = t;
        s.ctime = t;
        s.birth_ms = s.birth_ms.map(|b| b.min(ms));
    };
    for l in ev.locks.iter_mut().filter(|l| l.path == key) {
        set(&mut l.stat);
    }
    for map in [&mut ev.lstat, &mut ev.stat] {
        if let Some(Answer::Ok(s)) = map.get_mut(&key) {
            set(s);
        }
    }
}

/// In `ev`: the file at `path` written `secs` seconds before the evidence was taken.
#[allow(dead_code)]
pub fn written_ago(ev: &mut Evidence, path: &Path, secs: i64) {
    let ms = ev.taken_ms - secs * 1000;
    written_at(ev, path, ms);
}

/// In `ev`: the file at `path` written `secs` seconds before the evidence was taken, in this
/// boot (the host up for an hour more than that at least, see [`up_for_at_least`]).
pub fn written_ago_this_boot(ev: &mut Evidence, path: &Path, secs: i64) {
    up_for_at_least(ev, secs + 3600);
    written_ago(ev, path, secs);
}

/// In `ev`: the file at `path` last changed `secs` seconds before the evidence was taken, by
/// the kernel's account (its ctime, and birth), its mtime left as the file has it: what a
/// file whose mtime was set (`touch -d`, `cp -p`, `tar x`) says of itself.
pub fn changed_ago(ev: &mut Evidence, path: &Path, secs: i64) {
    let ms = ev.taken_ms - secs * 1000;
    let key = evidence::path_key(path);
    let set = |s: &mut locksmith::probe::Stat| {
        s.ctime = (ms.div_euclid(1000), ms.rem_euclid(1000) * 1_000_000);
        s.birth_ms = s.birth_ms.map(|b| b.min(ms));
    };
    for l in ev.locks.iter_mut().filter(|l| l.path == key) {
        set(&mut l.stat);
    }
    for map in [&mut ev.lstat, &mut ev.stat] {
        if let Some(Answer::Ok(s)) = map.get_mut(&key) {
            set(s);
        }
    }
}

/// In `ev`: the file at `path` written `secs` seconds before this host booted. Fails the test
/// when the evidence puts it on a file system no boot survives (tmpfs, ramfs), where nothing
/// is of an earlier boot.
pub fn written_before_boot(ev: &mut Evidence, path: &Path, secs: i64) {
    let boot = ev.host.boot_time.expect("the boot time") * 1000;
    let volatile: Vec<&String> = ev
        .fs
        .iter()
        .filter(|(k, f)| fs_key_holds(k, path) && f.kind.is_volatile())
        .map(|(k, _)| k)
        .collect();
    assert!(
        volatile.is_empty(),
        "{} is on a file system no boot survives ({volatile:?}): nothing there is of an \
         earlier boot",
        path.display()
    );
    written_at(ev, path, boot - secs * 1000);
}

/// Whether a key of the evidence's file systems (`DEV DIR`) is the one of `path` (a
/// directory's own, or a file's directory's).
fn fs_key_holds(key: &str, path: &Path) -> bool {
    let dir = |p: &Path| evidence::path_key(p);
    let of = key.split_once(' ').map(|(_, d)| d);
    of == Some(dir(path).as_str()) || path.parent().is_some_and(|p| of == Some(dir(p).as_str()))
}

/// In `ev`: the file at `path` on an NFS mount (as its file system is asked).
pub fn on_nfs(ev: &mut Evidence, path: &Path) {
    let nfs =
        locksmith::probe::evidence::FsFacts::from(&locksmith::probe::FsInfo::new("nfs", true));
    let mut found = false;
    for (_, f) in ev.fs.iter_mut().filter(|(k, _)| fs_key_holds(k, path)) {
        *f = nfs.clone();
        found = true;
    }
    assert!(
        found,
        "no file system of {} in the evidence",
        path.display()
    );
}

/// In `ev`: this host up for at least `secs` seconds when the evidence was taken (its boot
/// moved back when this machine booted later, never forward: every process of the evidence
/// still started after it). Every time a test gives within those `secs` is of this boot.
pub fn up_for_at_least(ev: &mut Evidence, secs: i64) {
    let latest = ev.taken_ms.div_euclid(1000) - secs;
    ev.host.boot_time = Some(ev.host.boot_time.map_or(latest, |b| b.min(latest)));
}

/// In `ev`: a wall clock known not to have stepped since this boot began (whatever this
/// machine's did).
pub fn steady(ev: &mut Evidence) {
    ev.clock = Some(Clock::steady());
}

/// In `ev`: this host booted `secs` seconds before the evidence was taken (whenever this
/// machine really booted): every time the test gives after that is of this boot.
pub fn booted_ago(ev: &mut Evidence, secs: i64) {
    ev.host.boot_time = Some(ev.taken_ms / 1000 - secs);
}

/// In `ev`: this host booted `secs` seconds later than it says (earlier when negative), and
/// every process's start with it (a start is the boot time plus the process's start ticks):
/// the machine's whole history moves, as on one that booted then.
pub fn boot_moved(ev: &mut Evidence, secs: i64) {
    ev.host.boot_time = ev.host.boot_time.map(|b| b + secs);
    for state in ev.pids.values_mut() {
        if let PidState::Alive(f) | PidState::Zombie(f) = state {
            f.start_ms = f.start_ms.map(|s| s + secs * 1000);
        }
    }
}

/// In `ev`: the start time (ms since the epoch) of process `pid`, as the evidence says.
pub fn started_ms(ev: &Evidence, pid: i32) -> i64 {
    ev.pids
        .get(&pid)
        .and_then(|s| s.facts())
        .and_then(|f| f.start_ms)
        .unwrap_or_else(|| panic!("no start time of process {pid} in the evidence"))
}

/// Waits until every file of `paths` was last changed (its ctime, which nobody can set back)
/// longer ago than any writer's shortest hold (2 s): what a real reclaim of a lock proven by
/// its writer's absence needs. Real time passes; no clock is compared.
pub fn wait_past_shortest_hold(paths: &[&Path]) {
    use std::os::unix::fs::MetadataExt;
    const HOLD_MS: i64 = 2_000;
    // btime and ctime resolution aside, a little more than the hold.
    const MORE_MS: i64 = 500;
    for p in paths {
        let meta = std::fs::symlink_metadata(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        let ctime_ms = meta.ctime() * 1000 + meta.ctime_nsec() / 1_000_000;
        let wait = ctime_ms + HOLD_MS + MORE_MS - super::now_ms();
        if wait > 0 {
            std::thread::sleep(std::time::Duration::from_millis(wait as u64));
        }
    }
}
