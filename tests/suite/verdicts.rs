//! Verdicts that hold on every machine. One lock of every dialect whose owner is verifiably
//! alive (a process of the right name that started before the lock was written, or a kernel
//! lock held), plus locks that are stale or foreign for a reason no environment changes; all
//! built relative to the snapshot (its host name, its boot, now). Then:
//!
//! - the real binary judges them under several time zones (UTC, UTC+14, UTC-12, New York):
//!   every verdict is the expected one, in every zone, as this machine's clock allows and
//!   replayed from its recording on a clock known steady;
//! - the library judges them from this machine's evidence with the boot time moved (earlier
//!   than the real one, with every process's start, and before and after every time the
//!   fixtures record), and the times recorded in the fixtures moved across the boot;
//! - a property test varies the time zone a record's local time was written in, the boot
//!   time, the times recorded in the fixtures and the clock slack between an owner's start
//!   and when its lock was written (the lock's ctime in the evidence): no live-owner lock
//!   ever turns `stale`.
//!
//! The library's judgements are made from the evidence (`judging::judge_all_changed`) on a
//! clock known not to have stepped, whatever this machine's did: every time rule may prove
//! something there, so a wrong `stale` would show.

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use locksmith::Verdict;
use locksmith::config::Settings;
use proptest::prelude::*;

use crate::util::{Guard, hold_ofd};

use crate::util::judging::{
    ask_here, boot_moved, booted_ago, judge_all_changed, read_recording, replay_all, steady,
    written_ago, written_at,
};
use crate::util::{
    Flock, Group, Snap, dead_pid, hold_flock, link, named_sleeper, now_ms, snapshot, swap_with,
    write,
};
use locksmith::probe::Evidence;

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
    /// Lock files whose owner is alive, that owner's PID if a process, and whether the lock
    /// names that PID (rather than being held open, locked, or worked on).
    live: Vec<(PathBuf, Option<i32>, bool)>,
    _owners: Vec<Group>,
    _guards: Vec<crate::util::Guard>,
    _flocks: Vec<Flock>,
    /// Children holding OFD locks.
    _held: Vec<Guard>,
    _engine: Option<locksmith::engine::LockGuard>,
    /// Last: removed once its owners are dead (a process working in a removed directory is
    /// one whose working directory cannot be read: another test's git census would say so).
    dir: tempfile::TempDir,
}

impl World {
    fn build() -> World {
        World::build_with(None)
    }

    /// The world, every owner process named `name` instead of its program's name when one is
    /// given (a wrapper, a re-titled process, an init that started the program).
    fn build_with(name: Option<&str>) -> World {
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
        let user = std::env::var("USER").unwrap_or_else(|_| "root".into());
        let bin = t.join("bin");
        let mut owners = Vec::new();
        let mut guards = Vec::new();
        let mut flocks = Vec::new();
        let mut held = Vec::new();
        let mut live = Vec::new();
        let mut expected = BTreeMap::new();
        let sleeper = |program: &str, cwd: &Path| named_sleeper(&bin, name.unwrap_or(program), cwd);
        // A lock that names its owner's PID, and one whose owner is found otherwise.
        let mut own = |path: PathBuf, p: Group| {
            live.push((path.clone(), Some(p.pid()), true));
            owners.push(p);
        };
        let mut works = Vec::new();

        let p = sleeper("app-server", &t);
        own(write(&t.join("run/app.pid"), format!("{}\n", p.pid())), p);
        let p = sleeper("python3", &t);
        own(
            write(
                &t.join("cache/model.lock"),
                format!("{}\n{host}\n", p.pid()),
            ),
            p,
        );
        let p = sleeper("kate", &t);
        own(
            write(
                &t.join("kde/kate.lock"),
                format!(
                    "{}\n{}\n{host}\n{machine}\n{boot}\n",
                    p.pid(),
                    name.unwrap_or("kate")
                ),
            ),
            p,
        );
        let p = sleeper("vim", &t);
        own(
            write(
                &t.join("edit/.notes.txt.swp"),
                swap_with("vim-swap/clean-swap.bin", p.pid() as u32, &host),
            ),
            p,
        );
        let p = sleeper("emacs", &t);
        own(
            link(
                &t.join("edit/.#draft.txt"),
                &format!("root@{host}.{}", p.pid()),
            ),
            p,
        );
        let p = sleeper("Xvfb", &t);
        own(
            write(&t.join("x/.X93-lock"), format!("{:>10}\n", p.pid())),
            p,
        );
        let data = t.join("pg/data");
        fs::create_dir_all(&data).unwrap();
        let p = sleeper("postgres", &data);
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
            p,
        );
        let p = sleeper("chromium", &t);
        own(
            link(
                &t.join("chromium/SingletonLock"),
                &format!("{host}-{}", p.pid()),
            ),
            p,
        );
        let p = sleeper("firefox-esr", &t);
        write(&t.join("ff/times.json"), "{}");
        own(
            link(&t.join("ff/lock"), &format!("127.0.1.1:+{}", p.pid())),
            p,
        );
        let hg = t.join("hg/.hg/store");
        fs::create_dir_all(&hg).unwrap();
        let p = sleeper("hg", &t);
        own(
            link(&hg.join("lock"), &format!("{host}/{ns:x}:{}", p.pid())),
            p,
        );
        let app = t.join("shop");
        fs::create_dir_all(app.join("tmp/pids")).unwrap();
        let p = sleeper("ruby", &app);
        own(
            write(&app.join("tmp/pids/server.pid"), p.pid().to_string()),
            p,
        );
        let ide = t.join(".config/JetBrains/IntelliJIdea2024.1");
        let p = sleeper("idea", &t);
        own(write(&ide.join(".lock"), p.pid().to_string()), p);
        let p = sleeper("code", &t);
        own(
            write(
                &t.join("Code/User/workspaceStorage/4f1c/vscode.lock"),
                format!("{{\"pid\":{},\"willReleaseAt\":0}}", p.pid()),
            ),
            p,
        );
        let p = sleeper("conda", &t);
        own(
            write(
                &t.join(format!("pkgs/urls.txt.pid{}.conda_lock", p.pid())),
                b"",
            ),
            p,
        );
        let p = sleeper("julia", &t);
        own(
            write(
                &t.join(".julia/compiled/v1.10/Foo.ji.pidfile"),
                format!("{} {host}", p.pid()),
            ),
            p,
        );
        let p = sleeper("ruby", &t);
        own(
            write(
                &t.join("rb/jobs.lock"),
                format!(
                    "host: {host}\npid: {}\nppid: 1\ntime: 2026-12-07 22:33:01.123456\n",
                    p.pid()
                ),
            ),
            p,
        );
        let p = sleeper("python3", &t);
        let py_lock = t.join("py/state.lock");
        write(&py_lock.join(format!("{host}.{}", p.pid())), b"");
        own(py_lock, p);
        let p = sleeper("zsh", &t);
        own(
            link(
                &t.join("home/.zsh_history.LOCK"),
                &format!("/pid-{}/host-{host}", p.pid()),
            ),
            p,
        );
        let p = sleeper("gpg", &t);
        own(
            write(
                &t.join(".gnupg/.#lk0x00005f3e.vm.4242"),
                format!("{:>10}\n{host}\n", p.pid()),
            ),
            p,
        );
        let p = sleeper("vmware-vmx", &t);
        let ticks = start_ticks(p.pid());
        let mut member = format!(
            "52-4d-a1-0c-2b-9e-6f-11 {}-{ticks}(vmware-vmx) 3 X Windows.vmx lc=1",
            p.pid()
        )
        .into_bytes();
        member.resize(512, 0);
        let vmx = t.join("vm/Windows.vmx.lck");
        write(&vmx.join("M12345.lck"), member);
        own(vmx, p);
        let p = sleeper("brz", &t);
        own(
            write(
                &t.join("bzr-branch/.bzr/branch/lock/held/info"),
                format!(
                    "hostname: {host}\nnonce: k2m0jv5h0d8w1c3l9s7q\npid: {}\nstart_time: {}\nuser: T <t@example.com>\n",
                    p.pid(),
                    now_ms() / 1000
                ),
            )
            .parent()
            .unwrap()
            .to_path_buf(),
            p,
        );
        let cvs_dir = t.join("cvsroot/module");
        let p = sleeper("cvs", &t);
        own(
            write(&cvs_dir.join(format!("#cvs.wfl.{host}.{}", p.pid())), b""),
            p,
        );
        let p = sleeper("emacs", &t);
        write(
            &t.join(".emacs.d/.emacs.desktop"),
            ";; -*- mode: emacs-lisp -*-\n",
        );
        own(
            write(&t.join(".emacs.d/.emacs.desktop.lock"), p.pid().to_string()),
            p,
        );
        let mac = snap.mac_nodes().first().copied();
        let p = sleeper("borg", &t);
        let roster = write(
            &t.join("borg-repo/lock.roster"),
            format!(
                "{{\"exclusive\": [[\"{host}@{}\", {}, 0]], \"shared\": []}}",
                mac.unwrap_or(0),
                p.pid()
            ),
        );
        if mac.is_some() {
            own(roster, p);
        } else {
            // No hardware address to name this host by, as borg does: another host's.
            expected.insert(roster, Verdict::Foreign);
            owners.push(p);
        }
        // Owners found by their work, not by a PID in the lock.
        let p = sleeper("soffice.bin", &t);
        works.push((
            write(
                &t.join("docs/.~lock.report.odt#"),
                format!(",jdoe,{host},01.01.2026 10:00,file:///x;"),
            ),
            p,
        ));
        let p = sleeper("soffice.bin", &t);
        works.push((
            write(
                &t.join(".config/libreoffice/4/.lock"),
                format!("[Lockdata]\nUser={user}\nHost={host}\nStamp=-1\nTime=30.11.2026 12:00\nIPCServer=true\n"),
            ),
            p,
        ));
        // A git directory as `git init` lays it out (what git asks of one).
        let repo = t.join("repo");
        fs::create_dir_all(repo.join(".git/refs/heads")).unwrap();
        fs::create_dir_all(repo.join(".git/objects")).unwrap();
        write(&repo.join(".git/HEAD"), "ref: refs/heads/main\n");
        let p = sleeper("git", &repo);
        works.push((write(&repo.join(".git/index.lock"), "DIRC"), p));
        let rbenv = t.join(".rbenv");
        fs::create_dir_all(rbenv.join("shims")).unwrap();
        let p = sleeper("rbenv-rehash", &rbenv);
        works.push((
            write(
                &rbenv.join("shims/.rbenv-shim"),
                "#!/usr/bin/env bash\nset -e\n",
            ),
            p,
        ));
        // An R library with a package installed (as `R CMD INSTALL` leaves its DESCRIPTION),
        // and the install lock of its next version.
        let library = t.join("R/library");
        write(
            &library.join("tinypkg/DESCRIPTION"),
            "Package: tinypkg\nVersion: 1.0\nTitle: Tiny\nDescription: Tiny.\nLicense: MIT\n\
             Built: R 4.2.2; ; 2026-11-30 12:00:00 UTC; unix\n",
        );
        fs::create_dir_all(library.join("00LOCK-tinypkg")).unwrap();
        let p = sleeper("R", &library);
        works.push((library.join("00LOCK-tinypkg"), p));
        for (path, p) in works {
            live.push((path, Some(p.pid()), false));
            owners.push(p);
        }
        // Held open: an X authority file while its lock pair exists (whoever has it open may
        // be writing it under the pair).
        let xauthority = write(&t.join("x11home/.Xauthority"), b"\x01\x00");
        guards.push(crate::util::hold_open(&xauthority));
        let xc = write(&t.join("x11home/.Xauthority-c"), b"");
        let xl = t.join("x11home/.Xauthority-l");
        fs::hard_link(&xc, &xl).unwrap();
        live.push((xc, None, false));
        live.push((xl, None, false));
        // Held open: pacman's database lock (empty, mode 0000, in a libalpm database
        // directory, as libalpm makes them), rpm's environment, nvim's ShaDa temporary (empty,
        // as nvim creates it, in its ShaDa directory).
        let pacman = t.join("var/lib/pacman");
        write(&pacman.join("local/ALPM_DB_VERSION"), "9\n");
        let db_lck = write(&pacman.join("db.lck"), b"");
        fs::set_permissions(&db_lck, fs::Permissions::from_mode(0o000)).unwrap();
        for path in [
            db_lck,
            {
                write(&t.join("rpm/Packages"), b"");
                write(&t.join("rpm/__db.001"), b"")
            },
            write(&t.join("nvim/shada/main.shada.tmp.a"), b""),
        ] {
            guards.push(crate::util::hold_open(&path));
            live.push((path, None, false));
        }
        // HSQLDB's lock file, held open with its heartbeat written (whenever that says).
        write(&t.join("hsql/db.properties"), b"version=2.7.1\n");
        let mut hsql = b"HSQLLOCK".to_vec();
        hsql.extend_from_slice(&now_ms().to_be_bytes());
        let hsql = write(&t.join("hsql/db.lck"), hsql);
        guards.push(crate::util::hold_open(&hsql));
        live.push((hsql, None, false));
        // H2's lock file, its database held open.
        let h2_db = write(&t.join("h2/app.mv.db"), b"H:2,block:2\n");
        guards.push(crate::util::hold_open(&h2_db));
        live.push((
            write(
                &t.join("h2/app.lock.db"),
                b"#FileLock\n#Mon Dec 07 22:38:39 UTC 2026\nid=1a252a8b9b92b6c0\nmethod=file\n",
            ),
            None,
            false,
        ));
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
            false,
        ));
        let lockdir = t.join("node/db.json.lock");
        fs::create_dir_all(&lockdir).unwrap();
        flocks.push(hold_flock(&lockdir));
        live.push((lockdir, None, false));
        let dpkg = write(&t.join("var/lib/dpkg/lock"), "");
        flocks.push(hold_flock(&dpkg));
        live.push((dpkg, None, false));
        let certbot = write(&t.join("etc/letsencrypt/.certbot.lock"), "");
        flocks.push(hold_flock(&certbot));
        live.push((certbot, None, false));
        // `locksmith start`'s guard, held by the service it started: the guard, and its pid
        // file whatever PID that names (here a gone one: a daemon's parent that exited).
        let service_pid = write(&t.join("srv/web.pid"), format!("{}\n", dead_pid()));
        let record = locksmith::start_guard::Record::now(&service_pid, "web".as_ref());
        let start_guard = write(
            &t.join("srv/.web.pid.locksmith-start"),
            serde_json::to_vec(&record).unwrap(),
        );
        // `locksmith start` keeps its guard with an OFD lock (fcntl), as the service it ran.
        held.push(hold_ofd(&start_guard));
        live.push((start_guard, None, false));
        live.push((service_pid, None, false));
        let engine_path = t.join("jobs/nightly.lock");
        fs::create_dir_all(engine_path.parent().unwrap()).unwrap();
        let engine = locksmith::engine::lock(&engine_path)
            .try_acquire()
            .expect("engine lock");
        live.push((engine_path, None, false));
        for (p, _, _) in &live {
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
        // Owner-less locks whose writer promises nothing: never stale on their age.
        let shell_lock = t.join("var/lock/job.lock");
        fs::create_dir_all(&shell_lock).unwrap();
        expected.insert(shell_lock, Verdict::Unknown);
        expected.insert(
            write(
                &t.join(".vscode-server/bin/abc123/vscode-remote-lock.ann.abc123"),
                b"",
            ),
            Verdict::Unknown,
        );
        expected.insert(write(&t.join("spool/queue.lock"), b""), Verdict::Unknown);
        World {
            dir,
            host,
            expected,
            live,
            _owners: owners,
            _guards: guards,
            _flocks: flocks,
            _held: held,
            _engine: Some(engine),
        }
    }

    /// The locks that name no owner and whose writer promises nothing.
    fn unpromised(&self) -> Vec<PathBuf> {
        let t = self.root();
        vec![
            t.join("var/lock/job.lock"),
            t.join(".vscode-server/bin/abc123/vscode-remote-lock.ann.abc123"),
            t.join("spool/queue.lock"),
        ]
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

    /// In `ev`: every live lock written at its owner's start as the evidence says plus
    /// `slack_ms`, never later than the evidence was taken.
    fn written_after_start(&self, ev: &mut Evidence, slack_ms: i64) {
        for (path, pid, _) in &self.live {
            if let Some(start) = pid.and_then(|p| ev.pids.get(&p)?.facts()?.start_ms) {
                written_at(ev, path, (start + slack_ms).min(ev.taken_ms));
            }
        }
    }

    /// Every lock of the world judged on this machine, then again from that evidence changed
    /// by `change` (see `judging::judge_changed`).
    fn judge_all_changed(
        &self,
        change: impl FnOnce(&mut Evidence),
    ) -> BTreeMap<PathBuf, (Verdict, String)> {
        let paths: Vec<&Path> = self.expected.keys().map(PathBuf::as_path).collect();
        let found = judge_all_changed(&paths, &Settings::embedded().scan, change);
        found
            .into_iter()
            .map(|f| {
                let why = format!("{}: {}", f.dialect, f.judgement.evidence.join(" | "));
                (f.path.clone(), (f.judgement.verdict(), why))
            })
            .collect()
    }

    fn judge_all(&self, snap: &Snap) -> BTreeMap<PathBuf, (Verdict, String)> {
        let config = Settings::embedded().scan;
        self.expected
            .keys()
            .map(|p| {
                let f = crate::util::judging::judge_with(p, snap, &config);
                (
                    p.clone(),
                    (
                        f.judgement.verdict(),
                        format!("{}: {}", f.dialect, f.judgement.evidence.join(" | ")),
                    ),
                )
            })
            .collect()
    }
}

/// A process's start time in clock ticks since boot (field 22 of `/proc/<pid>/stat`).
fn start_ticks(pid: i32) -> u64 {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    stat.rsplit_once(')')
        .unwrap()
        .1
        .split_whitespace()
        .nth(19)
        .unwrap()
        .parse()
        .unwrap()
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

        // The same scan recorded, and judged again from the recording with a clock known
        // steady (where every time rule may prove something), in the same zone.
        let recording = world.root().join("recording.json");
        let mut scan = Command::new(crate::util::BIN);
        scan.args(["--scan", "--record"])
            .arg(&recording)
            .arg(world.root())
            .env("TZ", tz)
            .env("XDG_STATE_HOME", world.root().join("state"))
            .env("XDG_CONFIG_HOME", world.root().join("config"))
            .stdin(Stdio::null());
        let out = crate::util::run_bounded(scan, crate::util::DEADLINE);
        assert_eq!(out.status.code(), Some(1), "TZ={tz}: one stale lock");
        let mut ev = read_recording(&recording);
        steady(&mut ev);
        for path in world.expected.keys() {
            ask_here(&mut ev, path);
        }
        replay_all(ev.clone(), &Settings::embedded().scan);
        fs::write(&recording, ev.to_json()).unwrap();
        let mut replay = Command::new(crate::util::BIN);
        replay
            .args(["replay", "--json"])
            .arg(&recording)
            .env("TZ", tz)
            .stdin(Stdio::null());
        let out = crate::util::run_bounded(replay, crate::util::DEADLINE);
        let report = crate::util::parse_report(&out);
        for (path, want) in &world.expected {
            let l = report.expect_lock(path);
            assert_eq!(
                l.verdict,
                want.as_str(),
                "TZ={tz}, replayed on a steady clock: {}\n{:?}",
                path.display(),
                l.evidence
            );
        }
        assert_eq!(out.status.code(), Some(1), "TZ={tz}: one stale lock");
    }
}

/// The boot time before and after every time the fixtures record, and the recorded times
/// before and after the boot: the expected verdicts every time. Judged from the evidence of
/// this machine with its boot moved (with every process's start) and a clock known steady,
/// where every time rule may prove something.
#[test]
fn every_dialect_is_judged_the_same_whatever_the_boot_time() {
    let world = World::build();
    let real = snapshot();
    let boot = real.host.boot_time.expect("boot time");
    drop(real);
    let now = now_ms() / 1000;
    // Recorded long before the boot, just before it, just after it, now, and in the future.
    let recorded = [boot - 400 * 86_400, boot - 60, boot + 1, now, now + 86_400];
    // The boot moved earlier (a machine up for a day, a year): every process and file of
    // this test stays after it, as on a real machine.
    for shift in [0, -86_400, -365 * 86_400] {
        for at_s in recorded {
            for offset_h in [-12, 0, 14] {
                world.record(Recorded { at_s, offset_h });
                let got = world.judge_all_changed(|ev| {
                    steady(ev);
                    boot_moved(ev, shift);
                });
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
/// into `stale` (judged from this machine's evidence changed so, on a clock known steady).
/// One world serves every case (its owners are processes: cheap to reuse, slow to make for
/// each case), and is torn down with its processes when the test ends.
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
        let got = world.judge_all_changed(|ev| {
            steady(ev);
            boot_moved(ev, boot_shift);
            world.written_after_start(ev, slack_ms);
        });
        for (path, _, _) in &world.live {
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
    // A dialect added since belongs in `World::build` too.
    let missing: Vec<&str> = locksmith::dialect::registry()
        .iter()
        .map(|d| d.id().as_str())
        .filter(|id| !dialects.contains(id))
        .collect();
    assert!(
        missing.is_empty(),
        "no lock of {missing:?} in the verdict matrix (judged: {dialects:?})"
    );
}

/// A live process that started before the lock and names it as its owner is never `stale`,
/// whatever its name: every owner of the world runs under names that are none of the
/// programs' (a shell, an init, a wrapper), in every time zone and with any boot time and
/// recorded time (judged from this machine's evidence changed so, on a clock known steady).
#[test]
fn a_name_never_makes_a_live_owner_stale() {
    use proptest::test_runner::{Config as Cases, TestCaseError, TestRunner};
    for name in ["sh", "tini", "nano"] {
        let world = World::build_with(Some(name));
        let mut runner = TestRunner::new(Cases {
            cases: 8,
            failure_persistence: None,
            ..Cases::default()
        });
        // The times the locks record are when they were written (after their owners
        // started); a record claiming an earlier time than its owner's start proves reuse.
        let cases = (-20 * 365 * 86_400i64..=0, -12i8..=14, 0i64..60_000);
        let result = runner.run(&cases, |(boot_shift, offset_h, slack_ms)| {
            let at_s = now_ms() / 1000;
            world.record(Recorded { at_s, offset_h });
            let got = world.judge_all_changed(|ev| {
                steady(ev);
                boot_moved(ev, boot_shift);
                world.written_after_start(ev, slack_ms);
            });
            for (path, _, by_pid) in &world.live {
                let (verdict, why) = &got[path];
                if *by_pid && *verdict == Verdict::Stale {
                    return Err(TestCaseError::fail(format!(
                        "owner named {name}: {}: {why}",
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
}

/// A lock that names no owner, and whose writer promises no refresh, is never `stale` on
/// its age: any age from now to years back, as long as it was written in this boot (judged
/// from this machine's evidence with the lock written then and the host booted before, on a
/// clock known steady).
#[test]
fn no_age_makes_an_unpromised_lock_stale() {
    use proptest::test_runner::{Config as Cases, TestCaseError, TestRunner};
    let world = World::build();
    let mut runner = TestRunner::new(Cases {
        cases: 32,
        failure_persistence: None,
        ..Cases::default()
    });
    let cases = (0i64..20 * 365 * 86_400, 1i64..86_400);
    let config = Settings::embedded().scan;
    let paths = world.unpromised();
    let paths: Vec<&Path> = paths.iter().map(PathBuf::as_path).collect();
    let result = runner.run(&cases, |(age_s, booted_before_s)| {
        let found = judge_all_changed(&paths, &config, |ev| {
            steady(ev);
            // The machine booted before the locks were written.
            booted_ago(ev, age_s + booted_before_s);
            for path in &paths {
                written_ago(ev, path, age_s);
            }
        });
        for f in found {
            if f.judgement.verdict() == Verdict::Stale {
                return Err(TestCaseError::fail(format!(
                    "{} aged {age_s} s: {:?}",
                    f.path.display(),
                    f.judgement.evidence
                )));
            }
        }
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}
