//! Verdicts that hold on every machine. One lock of every dialect whose owner is verifiably
//! alive (a process of the right name that started before the lock was written, or a kernel
//! lock held), plus locks that are stale or foreign for a reason no environment changes; all
//! built relative to the snapshot (its host name, its boot, now). Then:
//!
//! - the real binary judges them under several time zones (UTC, UTC+14, UTC-12, New York):
//!   every verdict is the expected one, in every zone;
//! - the library judges them with the snapshot's boot time moved (earlier than the real one,
//!   and before and after every time the fixtures record), and the times recorded in the
//!   fixtures moved across the boot;
//! - a property test varies the time zone a record's local time was written in, the boot
//!   time, the times recorded in the fixtures and the clock slack between an owner's start
//!   and its lock's mtime: no live-owner lock ever turns `stale`.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use locksmith::Verdict;
use locksmith::scan::Config;
use proptest::prelude::*;

use crate::util::{
    Flock, Group, Snap, dead_pid, hold_flock, link, named_sleeper, now_ms, set_mtime_ms, snapshot,
    swap_with, write,
};

/// The times a fixture records in its content (not its mtime), varied by the tests.
#[derive(Debug, Clone, Copy)]
struct Recorded {
    /// An instant, seconds since the epoch (Terraform's `Created`, postgres's start time,
    /// emacs's boot time).
    at_s: i64,
    /// The UTC offset, in hours, of the local time LibreOffice wrote (its zone is not
    /// recorded).
    offset_h: i8,
}

/// One lock of every dialect, each with a live owner; and locks whose verdict no time zone
/// or boot time may change. Owners live as long as the value.
struct World {
    host: String,
    /// Path → expected verdict.
    expected: BTreeMap<PathBuf, Verdict>,
    /// Lock files whose owner is alive, and that owner's PID, if a process.
    live: Vec<(PathBuf, Option<i32>)>,
    _owners: Vec<Group>,
    _flocks: Vec<Flock>,
    _engine: Option<locksmith::engine::LockGuard>,
    /// Last: removed once its owners are dead (a process working in a removed directory is
    /// one whose working directory cannot be read: another test's git census would say so).
    dir: tempfile::TempDir,
}

impl World {
    fn build() -> World {
        let dir = tempfile::Builder::new()
            .prefix("locksmith-verdicts-")
            .tempdir()
            .unwrap();
        let t = dir.path().to_path_buf();
        let snap = snapshot();
        let host = snap.host.hostname.clone();
        let ns = snap.host.pid_ns.unwrap_or(0xEFFF_FFFC);
        let boot = snap.host.boot_id.clone().unwrap_or_default();
        let machine = snap
            .host
            .machine_id
            .clone()
            .unwrap_or_else(|| "0".repeat(32));
        let bin = t.join("bin");
        let mut owners = Vec::new();
        let mut flocks = Vec::new();
        let mut live = Vec::new();
        let mut expected = BTreeMap::new();
        let mut own = |path: PathBuf, p: Option<Group>| {
            live.push((path.clone(), p.as_ref().map(Group::pid)));
            expected.insert(path, Verdict::Live);
            owners.extend(p);
        };

        let p = named_sleeper(&bin, "app-server", &t);
        own(
            write(&t.join("run/app.pid"), format!("{}\n", p.pid())),
            Some(p),
        );
        let p = named_sleeper(&bin, "python3", &t);
        own(
            write(
                &t.join("cache/model.lock"),
                format!("{}\n{host}\n", p.pid()),
            ),
            Some(p),
        );
        let p = named_sleeper(&bin, "kate", &t);
        own(
            write(
                &t.join("kde/kate.lock"),
                format!("{}\nkate\n{host}\n{machine}\n{boot}\n", p.pid()),
            ),
            Some(p),
        );
        let p = named_sleeper(&bin, "vim", &t);
        own(
            write(
                &t.join("edit/.notes.txt.swp"),
                swap_with("vim-swap/clean-swap.bin", p.pid() as u32, &host),
            ),
            Some(p),
        );
        let p = named_sleeper(&bin, "emacs", &t);
        own(
            link(
                &t.join("edit/.#draft.txt"),
                &format!("root@{host}.{}", p.pid()),
            ),
            Some(p),
        );
        let p = named_sleeper(&bin, "Xvfb", &t);
        own(
            write(&t.join("x/.X93-lock"), format!("{:>10}\n", p.pid())),
            Some(p),
        );
        let data = t.join("pg/data");
        fs::create_dir_all(&data).unwrap();
        let p = named_sleeper(&bin, "postgres", &data);
        own(
            write(
                &data.join("postmaster.pid"),
                format!(
                    "{}\n{}\n{}\n5432\n/tmp\nlocalhost\n  5432001 65536\nready   \n",
                    p.pid(),
                    data.display(),
                    now_ms() / 1000
                ),
            ),
            Some(p),
        );
        let p = named_sleeper(&bin, "chromium", &t);
        own(
            link(
                &t.join("chromium/SingletonLock"),
                &format!("{host}-{}", p.pid()),
            ),
            Some(p),
        );
        let p = named_sleeper(&bin, "firefox-esr", &t);
        write(&t.join("ff/times.json"), "{}");
        own(
            link(&t.join("ff/lock"), &format!("127.0.1.1:+{}", p.pid())),
            Some(p),
        );
        let p = named_sleeper(&bin, "soffice.bin", &t);
        own(
            write(
                &t.join("docs/.~lock.report.odt#"),
                format!(",jdoe,{host},01.01.2026 10:00,file:///x;"),
            ),
            Some(p),
        );
        let repo = t.join("repo");
        fs::create_dir_all(repo.join(".git/refs/heads")).unwrap();
        write(&repo.join(".git/HEAD"), "ref: refs/heads/main\n");
        let p = named_sleeper(&bin, "git", &repo);
        own(write(&repo.join(".git/index.lock"), "DIRC"), Some(p));
        let hg = t.join("hg/.hg/store");
        fs::create_dir_all(&hg).unwrap();
        let p = named_sleeper(&bin, "hg", &t);
        own(
            link(&hg.join("lock"), &format!("{host}/{ns:x}:{}", p.pid())),
            Some(p),
        );
        // Kernel locks: Terraform's state, a lock directory, dpkg's lock, our engine.
        let state = write(&t.join("tf/terraform.tfstate"), "{}");
        flocks.push(hold_flock(&state));
        live.push((
            write(
                &t.join("tf/.terraform.tfstate.lock.info"),
                format!(
                    "{{\"ID\":\"x\",\"Operation\":\"OperationTypeApply\",\"Who\":\"root@{host}\",\"Version\":\"1.11.4\",\"Created\":\"{}\",\"Path\":\"terraform.tfstate\"}}",
                    jiff::Timestamp::now()
                ),
            ),
            None,
        ));
        let lockdir = t.join("node/db.json.lock");
        fs::create_dir_all(&lockdir).unwrap();
        flocks.push(hold_flock(&lockdir));
        live.push((lockdir, None));
        let dpkg = write(&t.join("var/lib/dpkg/lock"), "");
        flocks.push(hold_flock(&dpkg));
        live.push((dpkg, None));
        let engine_path = t.join("jobs/nightly.lock");
        fs::create_dir_all(engine_path.parent().unwrap()).unwrap();
        let engine = locksmith::engine::Lock::new(&engine_path)
            .try_acquire()
            .expect("engine lock");
        live.push((engine_path, None));
        for (p, _) in &live {
            expected.insert(p.clone(), Verdict::Live);
        }

        // Verdicts no environment changes: a dead PID of this host; other hosts.
        let dead = dead_pid();
        expected.insert(
            write(&t.join("run/dead.pid"), format!("{dead}\n")),
            Verdict::Stale,
        );
        expected.insert(
            write(&t.join("cache/theirs.lock"), format!("{dead}\nlaptop\n")),
            Verdict::Foreign,
        );
        expected.insert(
            write(
                &t.join("docs/.~lock.theirs.odt#"),
                ",jdoe,laptop,29.11.2026 23:47,file:///x;",
            ),
            Verdict::Foreign,
        );
        expected.insert(
            link(&t.join("edit/.#theirs.txt"), &format!("root@laptop.{dead}")),
            Verdict::Foreign,
        );
        expected.insert(
            write(
                &t.join("edit/.theirs.txt.swp"),
                swap_with("vim-swap/clean-swap.bin", dead as u32, "laptop"),
            ),
            Verdict::Foreign,
        );
        expected.insert(
            link(&t.join("hg2/.hg/wlock"), &format!("laptop/{ns:x}:{dead}")),
            Verdict::Foreign,
        );
        World {
            dir,
            host,
            expected,
            live,
            _owners: owners,
            _flocks: flocks,
            _engine: Some(engine),
        }
    }

    fn root(&self) -> &Path {
        self.dir.path()
    }

    /// Rewrites the times the fixtures record in their content.
    fn record(&self, r: Recorded) {
        let t = self.root();
        let local = jiff::Timestamp::from_second(r.at_s)
            .unwrap()
            .to_zoned_datetime(jiff::tz::TimeZone::fixed(
                jiff::tz::Offset::from_hours(r.offset_h).unwrap(),
            ));
        let stamp = local.strftime("%d.%m.%Y %H:%M").to_string();
        write(
            &t.join("docs/.~lock.report.odt#"),
            format!(",jdoe,{},{stamp},file:///x;", self.host),
        );
        let created = jiff::Timestamp::from_second(r.at_s).unwrap();
        let info = t.join("tf/.terraform.tfstate.lock.info");
        let text = fs::read_to_string(&info).unwrap();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        let mut v = v.as_object().unwrap().clone();
        v.insert("Created".into(), created.to_string().into());
        fs::write(&info, serde_json::to_string(&v).unwrap()).unwrap();
        let pm = t.join("pg/data/postmaster.pid");
        let text = fs::read_to_string(&pm).unwrap();
        let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
        lines[2] = r.at_s.to_string();
        fs::write(&pm, lines.join("\n") + "\n").unwrap();
        let emacs = t.join("edit/.#draft.txt");
        let target = fs::read_link(&emacs).unwrap();
        let target = target.to_str().unwrap();
        let base = target.split(':').next().unwrap();
        link(&emacs, &format!("{base}:{}", r.at_s));
    }

    /// Sets every live lock's mtime to its owner's start as `snap` sees it (its boot time
    /// plus the owner's start ticks) plus `slack_ms`, never later than now: with the boot
    /// moved earlier, the whole history moves with it, as on a machine that booted then.
    fn written_after_start(&self, snap: &Snap, slack_ms: i64) {
        let now = now_ms();
        for (path, pid) in &self.live {
            if let Some(start) = pid.and_then(|p| snap.pid(p).facts().and_then(|f| f.start_ms)) {
                set_mtime_ms(path, (start + slack_ms).min(now));
            }
        }
    }

    fn judge_all(&self, snap: &Snap) -> BTreeMap<PathBuf, (Verdict, String)> {
        let config = Config::embedded();
        self.expected
            .keys()
            .map(|p| {
                let f = crate::util::judging::judge_with(p, snap, &config);
                (
                    p.clone(),
                    (
                        f.judgement.verdict,
                        format!("{}: {}", f.dialect, f.judgement.evidence.join(" | ")),
                    ),
                )
            })
            .collect()
    }
}

fn snapshot_with_boot_shift(shift_s: i64) -> Snap {
    let mut snap = snapshot();
    snap.host.boot_time = snap.host.boot_time.map(|b| b + shift_s);
    snap
}

fn assert_expected(world: &World, got: &BTreeMap<PathBuf, (Verdict, String)>, case: &str) {
    for (path, want) in &world.expected {
        let (verdict, why) = &got[path];
        assert_eq!(
            verdict,
            want,
            "{case}: {}\n{why}",
            path.strip_prefix(world.root()).unwrap().display()
        );
    }
}

/// The real binary, under several time zones: the same, expected verdicts in each.
#[test]
fn every_dialect_is_judged_the_same_in_every_time_zone() {
    let world = World::build();
    for tz in [
        "UTC",
        "Pacific/Kiritimati",
        "Etc/GMT+12",
        "America/New_York",
    ] {
        let mut scan = Command::new(crate::util::BIN);
        scan.args(["--scan", "--json"])
            .arg(world.root())
            .env("TZ", tz)
            .env("XDG_STATE_HOME", world.root().join("state"))
            .env("XDG_CONFIG_HOME", world.root().join("config"))
            .stdin(Stdio::null());
        let out = crate::util::run_bounded(scan, crate::util::DEADLINE);
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "{tz}: not JSON ({e}): {}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
        let mut seen = BTreeMap::new();
        for l in report["locks"].as_array().unwrap() {
            seen.insert(
                PathBuf::from(l["path"].as_str().unwrap()),
                (
                    l["verdict"].as_str().unwrap().to_string(),
                    l["evidence"].to_string(),
                ),
            );
        }
        for (path, want) in &world.expected {
            let (verdict, why) = seen
                .get(path)
                .unwrap_or_else(|| panic!("TZ={tz}: {} not found", path.display()));
            assert_eq!(verdict, want.as_str(), "TZ={tz}: {}\n{why}", path.display());
        }
        assert_eq!(out.status.code(), Some(1), "TZ={tz}: one stale lock");
    }
}

/// The snapshot's boot time before and after every time the fixtures record, and the
/// recorded times before and after the boot: the expected verdicts every time.
#[test]
fn every_dialect_is_judged_the_same_whatever_the_boot_time() {
    let world = World::build();
    let real = snapshot();
    let boot = real.host.boot_time.expect("boot time");
    let now = now_ms() / 1000;
    // Recorded long before the boot, just before it, just after it, now, and in the future.
    let recorded = [boot - 400 * 86_400, boot - 60, boot + 1, now, now + 86_400];
    // The boot moved earlier (a machine up for a day, a year): every process and file of
    // this test stays after it, as on a real machine.
    for shift in [0, -86_400, -365 * 86_400] {
        for at_s in recorded {
            for offset_h in [-12, 0, 14] {
                world.record(Recorded { at_s, offset_h });
                let snap = snapshot_with_boot_shift(shift);
                let got = world.judge_all(&snap);
                assert_expected(
                    &world,
                    &got,
                    &format!("boot shifted {shift} s, recorded at {at_s} (UTC{offset_h:+})"),
                );
            }
        }
    }
}

/// No time zone, boot time, recorded time or clock slack turns a lock whose owner is alive
/// into `stale`. One world serves every case (its owners are processes: cheap to reuse, slow
/// to make for each case), and is torn down with its processes when the test ends.
#[test]
fn a_live_owner_is_never_stale() {
    use proptest::test_runner::{Config as Cases, TestCaseError, TestRunner};
    let world = World::build();
    let mut runner = TestRunner::new(Cases {
        cases: 24,
        failure_persistence: None,
        ..Cases::default()
    });
    let cases = (
        -20 * 365 * 86_400i64..=0,
        0i64..4_102_444_800,
        -12i8..=14,
        // A lock written up to 2 s before its owner's start (a coarse mtime, btime's one
        // second) or up to a minute after it.
        prop_oneof![-1_999i64..=0, 0i64..60_000],
    );
    let result = runner.run(&cases, |(boot_shift, at_s, offset_h, slack_ms)| {
        world.record(Recorded { at_s, offset_h });
        let snap = snapshot_with_boot_shift(boot_shift);
        world.written_after_start(&snap, slack_ms);
        let got = world.judge_all(&snap);
        for (path, _) in &world.live {
            let (verdict, why) = &got[path];
            if *verdict != Verdict::Live {
                return Err(TestCaseError::fail(format!(
                    "{verdict}: {}: {why}",
                    path.display()
                )));
            }
        }
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}

#[test]
fn the_world_has_every_dialect() {
    let world = World::build();
    let got = world.judge_all(&snapshot());
    let dialects: std::collections::BTreeSet<&str> = got
        .values()
        .map(|(_, why)| why.split(':').next().unwrap())
        .collect();
    for id in COVERED {
        assert!(
            dialects.contains(id),
            "no {id} lock in the world: {dialects:?}"
        );
    }
    // A dialect added since: it belongs in `World::build` too.
    for d in locksmith::dialect::registry() {
        if !dialects.contains(d.id().as_str()) {
            eprintln!(
                "NOTE: the {} dialect has no lock in this matrix yet",
                d.id()
            );
        }
    }
}

/// The dialects `World::build` makes a lock of.
const COVERED: &[&str] = &[
    "locksmith",
    "pidfile",
    "git",
    "vim-swap",
    "emacs",
    "libreoffice",
    "x11",
    "postgres",
    "chromium",
    "firefox",
    "terraform",
    "mercurial",
    "mkdir-lock",
    "flock",
];
