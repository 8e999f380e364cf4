//! The state directory as a hostile local user would attack it while root reclaims, its
//! bounded copies, the configuration's limits, the journal's text, and undo
//! (`locksmith restore`, `locksmith journal`), all through the real binary.
//!
//! The attacks run the attacker as uid 65534 (`setpriv`), which needs root; run as another
//! user, those tests say so and pass without checking anything.

use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use crate::util::*;

const NOBODY: u32 = 65534;

fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// Runs `sh -c script` as uid/gid 65534 with no supplementary groups.
fn as_nobody(script: &str) {
    let st = Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "sh",
            "-c",
            script,
        ])
        .status()
        .expect("setpriv");
    assert!(st.success(), "as nobody: {script}");
}

/// An environment whose top directory others may enter (not write), with a sticky
/// world-writable `shared/` like `/tmp`, and a stale pid file in `root/`.
struct Attack {
    env: Env,
    shared: PathBuf,
    lock: PathBuf,
    content: String,
}

impl Attack {
    fn new() -> Self {
        let env = Env::new();
        fs::set_permissions(env.path(), fs::Permissions::from_mode(0o755)).unwrap();
        let shared = env.path().join("shared");
        fs::create_dir(&shared).unwrap();
        fs::set_permissions(&shared, fs::Permissions::from_mode(0o1777)).unwrap();
        let root = env.path().join("root");
        fs::create_dir(&root).unwrap();
        let lock = root.join("job.pid");
        let content = format!("{}\n", dead_pid());
        fs::write(&lock, &content).unwrap();
        Attack {
            env,
            shared,
            lock,
            content,
        }
    }

    /// `locksmith --scan --reclaim root/` with `XDG_STATE_HOME` set to `state_home`.
    fn reclaim(&self, state_home: &Path) -> Output {
        let mut cmd = self.env.cmd([
            "--scan".as_ref(),
            "--reclaim".as_ref(),
            self.lock.parent().unwrap().as_os_str(),
        ]);
        cmd.env("XDG_STATE_HOME", state_home);
        run_bounded(cmd, DEADLINE)
    }

    /// A root-only directory with a file in it, which root must not write to.
    fn victim(&self) -> PathBuf {
        let v = self.env.path().join("victim");
        fs::create_dir(&v).unwrap();
        fs::set_permissions(&v, fs::Permissions::from_mode(0o700)).unwrap();
        fs::write(v.join("precious"), "root's own\n").unwrap();
        v
    }

    fn assert_refused(&self, out: &Output, why: &str) {
        let err = stdout(out) + &stderr(out);
        assert!(err.contains("refusing the state directory"), "{err}");
        assert!(err.contains(why), "wanted {why:?}: {err}");
        assert_eq!(out.status.code(), Some(1), "the stale lock remains: {err}");
        assert_eq!(fs::read_to_string(&self.lock).unwrap(), self.content);
    }
}

fn listing(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .map(|d| {
            d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

#[test]
fn a_state_directory_symlinked_into_a_root_only_directory_is_refused() {
    if !require_that(is_root(), "needs root to play the attacker with setpriv") {
        return;
    }
    let a = Attack::new();
    let victim = a.victim();
    // In a sticky /tmp-like directory, the attacker's symlink is the state directory.
    as_nobody(&format!(
        "ln -s {} {}/locksmith",
        victim.display(),
        a.shared.display()
    ));
    let out = a.reclaim(&a.shared);
    a.assert_refused(&out, "is a symlink");
    assert_eq!(listing(&victim), ["precious"]);

    // One level up: XDG_STATE_HOME itself is the attacker's directory.
    as_nobody(&format!(
        "mkdir {0}/home && ln -s {1} {0}/home/locksmith",
        a.shared.display(),
        victim.display()
    ));
    let out = a.reclaim(&a.shared.join("home"));
    a.assert_refused(&out, "owned by uid 65534");
    assert_eq!(listing(&victim), ["precious"]);
}

#[test]
fn a_state_directory_made_first_by_another_user_is_refused() {
    if !require_that(is_root(), "needs root to play the attacker with setpriv") {
        return;
    }
    let a = Attack::new();
    let elsewhere = a.env.path().join("elsewhere");
    fs::create_dir(&elsewhere).unwrap();
    as_nobody(&format!(
        "mkdir -m 0777 {0}/locksmith && ln -s {1} {0}/locksmith/saved",
        a.shared.display(),
        elsewhere.display()
    ));
    let out = a.reclaim(&a.shared);
    a.assert_refused(&out, "owned by uid 65534");
    assert_eq!(listing(&a.shared.join("locksmith")), ["saved"]);
    assert!(listing(&elsewhere).is_empty());

    // Ours, but others may write to it: refused too, and nothing written in it.
    let loose = a.env.path().join("loose");
    fs::create_dir_all(loose.join("locksmith")).unwrap();
    fs::set_permissions(loose.join("locksmith"), fs::Permissions::from_mode(0o777)).unwrap();
    let out = a.reclaim(&loose);
    a.assert_refused(&out, "may be written by others");
    assert!(listing(&loose.join("locksmith")).is_empty());
}

#[test]
fn a_journal_symlinked_to_a_root_file_is_refused_before_anything_is_removed() {
    let a = Attack::new();
    let precious = a.env.path().join("precious");
    fs::write(&precious, "root's own\n").unwrap();
    let state = a.env.path().join("st");
    fs::create_dir_all(state.join("locksmith")).unwrap();
    std::os::unix::fs::symlink(&precious, state.join("locksmith/journal.jsonl")).unwrap();
    let out = a.reclaim(&state);
    a.assert_refused(&out, "journal.jsonl is a symlink");
    assert_eq!(fs::read_to_string(&precious).unwrap(), "root's own\n");
    assert!(listing(&state.join("locksmith/saved")).is_empty());
}

#[test]
fn without_home_root_uses_var_lib_and_others_get_an_error_not_tmp() {
    let env = Env::new();
    let tmp = env.path().join("tmp");
    fs::create_dir(&tmp).unwrap();
    fs::set_permissions(env.path(), fs::Permissions::from_mode(0o755)).unwrap();
    fs::set_permissions(&tmp, fs::Permissions::from_mode(0o1777)).unwrap();
    let bin = std::path::PathBuf::from(BIN);
    let bare = |cmd: &mut Command| {
        cmd.env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("TMPDIR", &tmp)
            .current_dir(&tmp);
    };
    if is_root() {
        let mut cmd = Command::new(&bin);
        cmd.args(["journal", "--json"]);
        bare(&mut cmd);
        let out = run_bounded(cmd, DEADLINE);
        assert!(out.status.success(), "{}", stderr(&out));
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(doc["state_dir"], "/var/lib/locksmith");
    }
    if is_root() {
        let mut cmd = Command::new("setpriv");
        cmd.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(&bin)
            .args(["journal"]);
        bare(&mut cmd);
        let out = run_bounded(cmd, DEADLINE);
        assert_eq!(out.status.code(), Some(2));
        assert!(
            stderr(&out).contains("neither XDG_STATE_HOME nor HOME is set"),
            "{}",
            stderr(&out)
        );
        assert!(listing(&tmp).is_empty(), "{:?}", listing(&tmp));
    }
}

/// A config file in the environment with `saved` limits.
fn limits_config(env: &Env, json: &str) -> PathBuf {
    let p = env.path().join("limits.json");
    fs::write(&p, json).unwrap();
    p
}

#[test]
fn a_sparse_lock_is_copied_sparse_and_caps_keep_what_cannot_be_copied() {
    let env = Env::new();
    let root = env.path().join("root");
    fs::create_dir(&root).unwrap();
    let pid = dead_pid();
    // 60 MB long, one block of data.
    let sparse = root.join("sparse.pid");
    let f = fs::File::create(&sparse).unwrap();
    f.set_len(60 << 20).unwrap();
    std::os::unix::fs::FileExt::write_at(&f, format!("{pid}\n").as_bytes(), 0).unwrap();
    drop(f);
    let out = env.run(["--scan".as_ref(), "--reclaim".as_ref(), sparse.as_os_str()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let copies = listing(&env.state_dir().join("saved"));
    assert_eq!(copies.len(), 1);
    let m = fs::metadata(env.state_dir().join("saved").join(&copies[0])).unwrap();
    assert_eq!(m.len(), 60 << 20);
    assert!(
        m.blocks() * 512 <= 64 << 10,
        "{} bytes on disk",
        m.blocks() * 512
    );

    // A lock with more data than a copy may hold is kept, and says how to remove it anyway.
    let dense = root.join("dense.pid");
    let mut content = format!("{pid}\n").into_bytes();
    content.resize(100_000, b'\n');
    fs::write(&dense, &content).unwrap();
    let config = limits_config(&env, r#"{"saved": {"max_copy_bytes": 65536}}"#);
    let args = |extra: Option<&'static str>| {
        let mut v: Vec<std::ffi::OsString> = vec![
            "--scan".into(),
            "--reclaim".into(),
            "--config".into(),
            config.clone().into_os_string(),
        ];
        v.extend(extra.map(Into::into));
        v.push(dense.clone().into_os_string());
        v
    };
    let out = env.run(args(None));
    assert_eq!(out.status.code(), Some(1));
    let text = stdout(&out);
    assert!(text.contains("saved.max_copy_bytes"), "{text}");
    assert!(text.contains("--remove-uncopied"), "{text}");
    assert_eq!(fs::read(&dense).unwrap(), content);
    assert_eq!(listing(&env.state_dir().join("saved")).len(), 1);

    // Asked explicitly: removed, journaled without a copy.
    let out = env.run(args(Some("--remove-uncopied")));
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert!(!dense.exists());
    let j = env.journal();
    let last = j.last().unwrap();
    assert_eq!(last["event"], "reclaim");
    assert!(last.get("saved_to").is_none());
    assert!(
        last["not_saved"]
            .as_str()
            .unwrap()
            .contains("max_copy_bytes")
    );
    let out = env.run(["restore".as_ref(), dense.as_os_str()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("without a copy"), "{}", stderr(&out));
}

#[test]
fn the_total_cap_keeps_the_locks_it_has_no_room_for() {
    let env = Env::new();
    let root = env.path().join("root");
    fs::create_dir(&root).unwrap();
    let pid = dead_pid();
    let content = format!("{pid}\n");
    // Small copies share their group's file and count by their bytes: room for `fit` of them,
    // and three more locks.
    let cap = 4096;
    let fit = cap / content.len();
    let locks: Vec<PathBuf> = (0..fit + 3)
        .map(|i| root.join(format!("{i}.pid")))
        .collect();
    for l in &locks {
        fs::write(l, &content).unwrap();
    }
    let config = limits_config(
        &env,
        &format!(r#"{{"saved": {{"max_copy_bytes": {cap}, "max_total_bytes": {cap}}}}}"#),
    );
    let out = env.run([
        "--scan".as_ref(),
        "--reclaim".as_ref(),
        "--config".as_ref(),
        config.as_os_str(),
        root.as_os_str(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    let left = locks.iter().filter(|l| l.exists()).count();
    assert_eq!(left, 3, "{}", stdout(&out));
    assert!(stdout(&out).contains("max_total_bytes"), "{}", stdout(&out));
    let saved: u64 = env
        .journal()
        .iter()
        .filter(|l| l["event"] == "reclaim")
        .map(|l| l["size"].as_u64().unwrap())
        .sum();
    assert!(saved as usize <= cap, "{saved}");
}

#[test]
fn a_full_state_directory_leaves_no_partial_copies_and_keeps_the_lock() {
    if !require_that(is_root(), "mounting a small tmpfs needs root") {
        return;
    }
    let env = Env::new();
    let state = env.path().join("small");
    fs::create_dir(&state).unwrap();
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=64k,mode=0700", "tmpfs"])
        .arg(&state)
        .status()
        .is_ok_and(|s| s.success());
    if !require_that(mounted, "cannot mount a tmpfs here") {
        return;
    }
    struct Unmount(PathBuf);
    impl Drop for Unmount {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg(&self.0).status();
        }
    }
    let _unmount = Unmount(state.clone());
    let root = env.path().join("root");
    fs::create_dir(&root).unwrap();
    let lock = root.join("big.pid");
    let mut content = format!("{}\n", dead_pid()).into_bytes();
    content.resize(200_000, b'\n');
    fs::write(&lock, &content).unwrap();
    let mut cmd = env.cmd(["--scan".as_ref(), "--reclaim".as_ref(), lock.as_os_str()]);
    cmd.env("XDG_STATE_HOME", &state);
    let out = run_bounded(cmd, DEADLINE);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert!(
        stdout(&out).contains("cannot save a copy"),
        "{}",
        stdout(&out)
    );
    assert_eq!(fs::read(&lock).unwrap(), content);
    assert!(listing(&state.join("locksmith/saved")).is_empty());
    let journal = fs::read_to_string(state.join("locksmith/journal.jsonl")).unwrap();
    assert!(journal.is_empty(), "{journal}");
}

#[test]
fn windows_that_overflow_are_a_configuration_error() {
    let env = Env::new();
    let repo = env.path().join("repo");
    fs::create_dir_all(repo.join(".git")).unwrap();
    fs::write(repo.join(".git/index.lock"), "").unwrap();
    let config = limits_config(
        &env,
        r#"{"windows": {"heartbeat_secs": 18446744073709551615, "git_min_age_secs": 18446744073709551615}}"#,
    );
    let out = env.run([
        "--scan".as_ref(),
        "--reclaim".as_ref(),
        "--config".as_ref(),
        config.as_os_str(),
        repo.as_os_str(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("out of range"), "{}", stderr(&out));
    assert!(repo.join(".git/index.lock").exists());
}

#[test]
fn a_fifo_or_a_device_as_configuration_is_an_error_at_once() {
    let env = Env::new();
    let fifo = env.path().join("fifo");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    for (path, what) in [
        (fifo.as_path(), "a FIFO"),
        (Path::new("/dev/zero"), "a device"),
    ] {
        let started = Instant::now();
        let out = run_bounded(
            env.cmd(["--scan".as_ref(), "--config".as_ref(), path.as_os_str()]),
            Duration::from_secs(10),
        );
        assert!(started.elapsed() < Duration::from_secs(5));
        assert_eq!(out.status.code(), Some(2));
        assert!(stderr(&out).contains(what), "{}", stderr(&out));
    }
    let bom = env.path().join("bom.json");
    fs::write(
        &bom,
        b"\xef\xbb\xbf{\"windows\": {\"git_min_age_secs\": 5}}",
    )
    .unwrap();
    let out = env.run([
        "--scan".as_ref(),
        "--config".as_ref(),
        bom.as_os_str(),
        env.path().as_os_str(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

#[test]
fn json_paths_tell_a_literal_backslash_from_a_raw_byte_and_the_journal_is_terminal_safe() {
    let env = Env::new();
    let root = env.path().join("root");
    fs::create_dir(&root).unwrap();
    let pid = dead_pid();
    let literal = root.join("a\\xff.pid");
    let raw = root.join(OsStr::from_bytes(b"a\xff.pid"));
    let rlo = root.join("evil\u{202e}dip.pid");
    for p in [&literal, &raw, &rlo] {
        fs::write(p, format!("{pid}\n")).unwrap();
    }
    let (report, _) = env.scan_json(&[&root]);
    let mut paths: Vec<&str> = report.locks.iter().map(|l| l.path.as_str()).collect();
    paths.sort();
    paths.dedup();
    assert_eq!(paths.len(), 3, "{paths:?}");
    let r = root.to_str().unwrap();
    assert!(
        paths.contains(&format!("{r}/a\\\\xff.pid").as_str()),
        "{paths:?}"
    );
    assert!(
        paths.contains(&format!("{r}/a\\xff.pid").as_str()),
        "{paths:?}"
    );

    let out = env.run(["--scan".as_ref(), "--reclaim".as_ref(), root.as_os_str()]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    let bytes = fs::read(env.state_dir().join("journal.jsonl")).unwrap();
    assert!(
        !bytes.windows(3).any(|w| w == "\u{202e}".as_bytes()),
        "raw U+202E in the journal"
    );
    let j = env.journal();
    assert!(j.iter().any(|e| e["path"] == rlo.to_str().unwrap()));
    assert_eq!(j.len(), 3);
    // Each comes back under its own name.
    for p in [&literal, &raw, &rlo] {
        let out = env.run(["restore".as_ref(), p.as_os_str()]);
        assert!(out.status.success(), "{}", stderr(&out));
        assert_eq!(fs::read_to_string(p).unwrap(), format!("{pid}\n"));
    }
    let out = env.run(["journal"]);
    assert!(!stdout(&out).contains('\u{202e}'));
    assert!(stdout(&out).contains("\\u{202e}"), "{}", stdout(&out));
}

/// What a restore must put back.
#[derive(Debug, PartialEq)]
struct Photo {
    kind: &'static str,
    content: Vec<u8>,
    mode: u32,
    uid: u32,
    gid: u32,
    mtime: (i64, i64),
}

fn photo(p: &Path) -> Photo {
    let m = fs::symlink_metadata(p).unwrap();
    let (kind, content) = if m.file_type().is_symlink() {
        (
            "symlink",
            fs::read_link(p).unwrap().into_os_string().into_vec(),
        )
    } else if m.is_dir() {
        ("dir", Vec::new())
    } else {
        ("file", fs::read(p).unwrap())
    };
    Photo {
        kind,
        content,
        mode: if kind == "symlink" {
            0
        } else {
            m.mode() & 0o7777
        },
        uid: m.uid(),
        gid: m.gid(),
        mtime: (m.mtime(), m.mtime_nsec()),
    }
}

use std::os::unix::ffi::OsStringExt;

#[test]
fn restore_puts_back_a_symlink_lock_a_vim_swap_and_a_pid_file_exactly() {
    let env = Env::new();
    let root = env.path().join("root");
    fs::create_dir(&root).unwrap();
    let pid = dead_pid();
    let host = fs::read_to_string("/proc/sys/kernel/hostname")
        .unwrap()
        .trim()
        .to_string();
    let emacs = root.join(".#notes.txt");
    fs::write(root.join("notes.txt"), "text\n").unwrap();
    std::os::unix::fs::symlink(format!("someone@{host}.{pid}:1700000000"), &emacs).unwrap();
    let swap = root.join(".notes.txt.swp");
    fs::write(
        &swap,
        swap_with("vim-swap/clean-swap.bin", pid as u32, &host),
    )
    .unwrap();
    let pidfile = root.join("daemon.pid");
    fs::write(&pidfile, format!("{pid}\n")).unwrap();
    fs::set_permissions(&swap, fs::Permissions::from_mode(0o600)).unwrap();
    fs::set_permissions(&pidfile, fs::Permissions::from_mode(0o640)).unwrap();
    let owner = if is_root() {
        NOBODY
    } else {
        rustix::process::geteuid().as_raw()
    };
    for p in [&emacs, &swap, &pidfile] {
        rustix::fs::chownat(
            rustix::fs::CWD,
            p.as_path(),
            Some(rustix::fs::Uid::from_raw(owner)),
            Some(rustix::fs::Gid::from_raw(owner)),
            rustix::fs::AtFlags::SYMLINK_NOFOLLOW,
        )
        .unwrap();
    }
    // Times of their own, to the nanosecond, in this boot: their dead PIDs prove them stale on
    // any machine.
    let ago = |secs| in_this_boot_ms(secs).div_euclid(1000);
    set_mtime(&emacs, ago(100), 123_456_789);
    set_mtime(&swap, ago(50), 987_654_321);
    set_mtime(&pidfile, ago(120), 5);
    let before: Vec<Photo> = [&emacs, &swap, &pidfile].map(|p| photo(p)).into();

    let out = env.run(["--scan".as_ref(), "--reclaim".as_ref(), root.as_os_str()]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    for p in [&emacs, &swap, &pidfile] {
        assert!(fs::symlink_metadata(p).is_err(), "{p:?} not removed");
    }

    // Something stands at the path: refused, nothing replaced.
    fs::write(&pidfile, "new\n").unwrap();
    let out = env.run(["restore".as_ref(), pidfile.as_os_str()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("something stands at"),
        "{}",
        stderr(&out)
    );
    assert_eq!(fs::read_to_string(&pidfile).unwrap(), "new\n");
    fs::remove_file(&pidfile).unwrap();

    // By path, by number (from `locksmith journal`), and the last one.
    let out = env.run(["restore".as_ref(), pidfile.as_os_str()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let listed = stdout(&env.run(["journal"]));
    let number = listed
        .lines()
        .find(|l| l.contains("undoable") && l.ends_with(".#notes.txt"))
        .and_then(|l| l.split_whitespace().next())
        .unwrap_or_else(|| panic!("{listed}"))
        .to_string();
    let out = env.run(["restore", number.as_str()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = env.run(["restore", "--last-batch"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let after: Vec<Photo> = [&emacs, &swap, &pidfile].map(|p| photo(p)).into();
    assert_eq!(after, before);

    // Nothing left to undo; every restore is journaled.
    let out = env.run(["restore", "--last-batch"]);
    assert_eq!(out.status.code(), Some(1));
    let out = env.run(["journal", "--json"]);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let entries = doc["entries"].as_array().unwrap();
    assert_eq!(
        entries.iter().filter(|e| e["event"] == "restore").count(),
        3
    );
    assert!(entries.iter().all(|e| e["version"] == 1));
}

#[test]
fn restore_never_follows_a_symlink_put_on_the_way() {
    let env = Env::new();
    let dir = env.path().join("run");
    fs::create_dir(&dir).unwrap();
    let lock = dir.join("daemon.pid");
    fs::write(&lock, format!("{}\n", dead_pid())).unwrap();
    let out = env.run(["--scan".as_ref(), "--reclaim".as_ref(), dir.as_os_str()]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    // The directory is swapped for a symlink to somewhere else before the restore.
    let elsewhere = env.path().join("elsewhere");
    fs::create_dir(&elsewhere).unwrap();
    let moved = env.path().join("run.moved");
    fs::rename(&dir, &moved).unwrap();
    std::os::unix::fs::symlink(&elsewhere, &dir).unwrap();
    let out = env.run(["restore", "--last-batch"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("symlink"), "{}", stderr(&out));
    assert!(listing(&elsewhere).is_empty());
    // Another directory by that name is not the one the lock was removed from: refused.
    fs::remove_file(&dir).unwrap();
    fs::create_dir(&dir).unwrap();
    let out = env.run(["restore", "--last-batch"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("replaced"), "{}", stderr(&out));
    assert!(!lock.exists());
    // The very directory back in its place: the restore goes through.
    fs::remove_dir(&dir).unwrap();
    fs::rename(&moved, &dir).unwrap();
    let out = env.run(["restore", "--last-batch"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(lock.exists());
}
