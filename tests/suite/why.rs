//! `locksmith why`: real programs made to fail on a real lock, their real error message
//! piped to the real binary, which must name that lock, its verdict and the next step (the
//! reclaim command for a stale lock, the holder's PID and command for a live one, what cannot
//! be known for a foreign or unknown one). Each program's test skips when the program is not
//! installed (and fails under CI, which installs them).

use std::ffi::OsStr;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use serde::Deserialize;

use crate::util::*;

/// The `why` object of `locksmith why --json`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)] // the contract's every field, read by a test or not
pub struct Why {
    pub recognised: bool,
    pub program: Option<String>,
    pub dialect: Option<String>,
    pub language: Option<String>,
    pub pid: Option<i64>,
    pub host: Option<String>,
    pub path: Option<String>,
    pub looked: Vec<String>,
    pub next: Next,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)] // the contract's every field, read by a test or not
pub struct Next {
    pub action: String,
    pub text: String,
    pub command: Option<String>,
    pub pid: Option<i64>,
}

/// What `locksmith why` answered: the JSON answer (its report and its `why`), the text
/// answer and the exit status.
#[derive(Debug)]
pub struct Answer {
    pub report: Report,
    pub why: Why,
    pub text: String,
    pub code: Option<i32>,
}

impl Answer {
    /// The lock it names, checked to be `path`.
    #[track_caller]
    pub fn lock(&self, path: &Path) -> &Lock {
        assert_eq!(
            self.why.path.as_deref(),
            path.to_str(),
            "the answer names another lock:\n{}\n{:#?}",
            self.text,
            self.why
        );
        assert_eq!(self.report.locks.len(), 1, "{:#?}", self.report.locks);
        self.report.expect_lock(path)
    }

    /// Checks the program, the lock, its verdict and the next step's action.
    #[track_caller]
    pub fn says(&self, program: &str, path: &Path, verdict: &str, action: &str) -> &Lock {
        assert_eq!(
            self.why.program.as_deref(),
            Some(program),
            "{}\n{:#?}",
            self.text,
            self.why
        );
        let l = self.lock(path);
        assert_eq!(l.verdict, verdict, "{}\n{:#?}", self.text, l.evidence);
        assert_eq!(self.why.next.action, action, "{}", self.text);
        // The text answer says the same.
        assert!(
            self.text.contains(&path.display().to_string()),
            "{}",
            self.text
        );
        assert!(
            self.text.contains(&format!(" {verdict} (")),
            "{}",
            self.text
        );
        let code = if verdict == "stale" { 1 } else { 0 };
        assert_eq!(self.code, Some(code), "{}", self.text);
        l
    }

    /// Checks a stale lock's answer: the reclaim command for that path.
    #[track_caller]
    pub fn stale(&self, program: &str, path: &Path) -> &Lock {
        let l = self.says(program, path, "stale", "reclaim");
        let command = format!(
            "locksmith --scan --reclaim {}",
            locksmith::why::shell_word(path)
        );
        assert_eq!(self.why.next.command.as_deref(), Some(command.as_str()));
        assert!(self.text.contains(&command), "{}", self.text);
        l
    }

    /// Checks a live lock's answer: the process to wait for, by its PID and command.
    #[track_caller]
    pub fn live(&self, program: &str, path: &Path, pid: i32, command: &str) -> &Lock {
        let l = self.says(program, path, "live", "wait");
        assert_eq!(self.why.next.pid, Some(pid as i64), "{}", self.text);
        let named = format!("process {pid} (");
        let line = self
            .text
            .lines()
            .find(|l| l.contains(&named))
            .unwrap_or_else(|| panic!("no {named:?} in:\n{}", self.text));
        let said = &line[line.find(&named).unwrap() + named.len()..];
        assert!(said.contains(command), "not {command:?}: {line}");
        l
    }
}

/// Asks `locksmith why` about `message` (on its standard input), run in `cwd` with `vars`
/// added to its environment: once for the JSON answer (checked against the schema), once for
/// the text.
pub fn ask(env: &Env, message: &str, cwd: &Path, vars: &[(&str, &OsStr)]) -> Answer {
    ask_with(env, message, cwd, vars, &[])
}

fn ask_with(
    env: &Env,
    message: &str,
    cwd: &Path,
    vars: &[(&str, &OsStr)],
    extra: &[&str],
) -> Answer {
    let file = env.path().join("message.txt");
    fs::write(&file, message).unwrap();
    let run = |json: bool| {
        let mut args = vec!["why"];
        if json {
            args.push("--json");
        }
        args.extend(extra);
        let mut c = env.cmd(args);
        c.current_dir(cwd)
            .envs(vars.iter().map(|(k, v)| (k, v)))
            .stdin(fs::File::open(&file).unwrap());
        run_bounded(c, DEADLINE)
    };
    let out = run(true);
    let mut value: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}{}", stdout(&out), stderr(&out)));
    validate(&value);
    let why: Why = serde_json::from_value(value["why"].take()).expect("the why object");
    value.as_object_mut().unwrap().remove("why");
    let report: Report = serde_json::from_value(value).expect("the report");
    let text = run(false);
    assert_eq!(text.status.code(), out.status.code(), "{}", stderr(&text));
    Answer {
        report,
        why,
        text: stdout(&text),
        code: out.status.code(),
    }
}

/// What a program printed on stderr (and stdout), run to its end within a minute.
fn printed(cmd: Command) -> String {
    let out = run_limited(cmd, Duration::from_secs(60));
    both(&out)
}

fn both(out: &Output) -> String {
    format!("{}{}", stderr(out), stdout(out))
}

/// Waits until `path` was last changed (its ctime, which nobody can set back) more than 3 s
/// ago: past the shortest hold of the writers whose own removal condition the judge checks
/// (git, R, rbenv, xauth, pacman: 2 s). What a person sees, who asks a while after the crash.
fn older_than_a_writers_shortest_hold(path: &Path) {
    use std::os::unix::fs::MetadataExt;
    let m = fs::symlink_metadata(path).unwrap();
    let changed_ms = m.ctime() * 1000 + m.ctime_nsec() / 1_000_000;
    let wait = changed_ms + 3_000 - now_ms();
    if wait > 0 {
        std::thread::sleep(Duration::from_millis(wait as u64));
    }
}

/// Writes an executable script.
fn script(path: &Path, text: &str) -> PathBuf {
    write(path, text);
    fs::set_permissions(path, fs::Permissions::from_mode(0o755)).unwrap();
    path.to_path_buf()
}

/// A private locale directory with `de_DE.UTF-8`, made once by `localedef` (the `locales`
/// package) in cargo's temporary directory and kept there for later runs, for running a
/// program in German; `None` (the part skips) without it.
fn german() -> Option<PathBuf> {
    static DIR: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        if !require("localedef")
            || !require_that(
                Path::new("/usr/share/i18n/locales/de_DE").exists(),
                "no locale sources (the `locales` package)",
            )
        {
            return None;
        }
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("locales");
        let made = |d: &Path| d.join("de_DE.UTF-8/LC_MESSAGES").exists();
        if !made(&dir) {
            // Made beside, then renamed into place: another test process may be making it too.
            let part = dir.with_extension(format!("part-{}", std::process::id()));
            let _ = fs::remove_dir_all(&part);
            fs::create_dir_all(&part).unwrap();
            let _ = Command::new("localedef")
                .args(["-i", "de_DE", "-f", "UTF-8"])
                .arg(part.join("de_DE.UTF-8"))
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
            if made(&part) && fs::rename(&part, &dir).is_err() {
                let _ = fs::remove_dir_all(&part);
            }
        }
        if !made(&dir) {
            skip("localedef could not make the de_DE.UTF-8 locale");
            return None;
        }
        Some(dir)
    })
    .clone()
}

/// The environment that runs a program in German.
fn in_german(c: &mut Command, locales: &Path) {
    c.env("LOCPATH", locales)
        .env("LC_ALL", "de_DE.UTF-8")
        .env("LANGUAGE", "de");
}

// ---------------------------------------------------------------------------------------------
// Messages locksmith does not know

#[test]
fn an_unknown_message_says_so_and_suggests_a_scan() {
    let env = Env::new();
    let a = ask(&env, "segmentation fault (core dumped)\n", env.path(), &[]);
    assert!(!a.why.recognised);
    assert!(a.report.locks.is_empty());
    assert_eq!(a.code, Some(3));
    assert_eq!(a.why.next.action, "scan");
    assert_eq!(a.why.next.command.as_deref(), Some("locksmith --scan ."));
    assert!(a.text.contains("does not know this message"), "{}", a.text);
    assert!(a.text.contains("locksmith --scan ."), "{}", a.text);

    // A message in a language no catalogue has, which names its lock file: found by its path.
    let pid = write(&env.path().join("app.pid"), format!("{}\n", dead_pid()));
    let a = ask(
        &env,
        &format!("Fehler: Sperrdatei {} ist vorhanden\n", pid.display()),
        env.path(),
        &[],
    );
    assert!(!a.why.recognised);
    let l = a.lock(&pid);
    assert_eq!(l.verdict, "stale");
    assert!(
        a.text
            .contains("does not know this message, but it names a lock"),
        "{}",
        a.text
    );
    // A program's message whose lock is gone: run it again.
    let a = ask(
        &env,
        &format!(
            "fatal: Unable to create '{}/.git/index.lock': File exists.",
            env.path().display()
        ),
        env.path(),
        &[],
    );
    assert_eq!(a.why.program.as_deref(), Some("git"));
    assert_eq!((a.code, a.why.next.action.as_str()), (Some(3), "retry"));
    assert!(a.text.contains("not there"), "{}", a.text);
}

// ---------------------------------------------------------------------------------------------
// git

/// `git commit -a` waiting in its editor holds `index.lock`: another git's message names
/// that git. Killed, it leaves the lock: the next git's message leads to the reclaim command,
/// `why --reclaim` removes it (copied, journaled), and git works again. The same in German.
#[test]
fn git_index_lock_live_then_stale_then_reclaimed() {
    if !require("git") {
        return;
    }
    let env = Env::new();
    let home = env.path().join("home");
    let repo = env.path().join("repo");
    fs::create_dir_all(&home).unwrap();
    git_repo_with_a_commit(&repo, &home);
    fs::write(repo.join("a.txt"), "two\n").unwrap();
    let editor = script(&env.path().join("editor.sh"), "#!/bin/sh\nexec sleep 600\n");
    let mut commit = Group::spawn(
        git(&repo, &home)
            .args(["commit", "-a"])
            .env("GIT_EDITOR", &editor)
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    );
    let lock = repo.join(".git/index.lock");
    wait_for("git's editor to start", || {
        (lock.exists() && commit.members().iter().any(|(_, c)| c == "sleep")).then_some(())
    });
    let again = || {
        let mut c = git(&repo, &home);
        c.args(["commit", "-a", "-m", "again"]);
        printed(c)
    };
    let message = again();
    assert!(message.contains("Unable to create"), "{message}");
    let a = ask(&env, &message, &repo, &[]);
    a.live("git", &lock, commit.pid(), "git commit -a");

    commit.kill();
    // Asked a little later (a lock younger than git's shortest hold is not proven stale).
    older_than_a_writers_shortest_hold(&lock);
    let message = again();
    let a = ask(&env, &message, &repo, &[]);
    a.stale("git", &lock);
    // Asked from elsewhere: the message has the whole path.
    ask(&env, &message, env.path(), &[]).stale("git", &lock);

    if let Some(locales) = german() {
        // Debian's git reads its catalogue where Debian installs it.
        let mut c = git(&repo, &home);
        c.args(["commit", "-a", "-m", "again"]);
        if Path::new("/usr/bin/git").exists() {
            c = {
                let mut d = Command::new("/usr/bin/git");
                d.current_dir(&repo).env("HOME", &home).stdin(Stdio::null());
                d.args(["commit", "-a", "-m", "again"]);
                d
            };
        }
        in_german(&mut c, &locales);
        let message = printed(c);
        if message.contains("Konnte") {
            let a = ask(&env, &message, &repo, &[]);
            assert_eq!(a.why.language.as_deref(), Some("de"));
            a.stale("git", &lock);
        } else {
            skip(format!("this git prints no German: {message}"));
        }
    }

    let out = env.run(["why".as_ref(), "--reclaim".as_ref(), OsStr::new(&message)]);
    assert_code(&out, 0);
    assert!(!lock.exists(), "{}", stdout(&out));
    assert!(
        stdout(&out).contains(&format!("removed {}", lock.display())),
        "{}",
        stdout(&out)
    );
    assert_eq!(env.journal().len(), 1, "one journal line");
    git_ok(&repo, &home, &["commit", "-q", "-a", "-m", "works"]);
}

// ---------------------------------------------------------------------------------------------
// locksmith lock

#[test]
fn locksmith_lock_names_its_holder() {
    let env = Env::new();
    let lock = env.path().join("job.lock");
    let holder = hold_with_cli(&lock, &[]);
    let out = run_limited(
        {
            let mut c = lock_cmd(&lock, &["--timeout", "0"]);
            c.args(["--", "true"]);
            c
        },
        DEADLINE,
    );
    assert_code(&out, 75);
    let message = stderr(&out);
    let a = ask(&env, &message, env.path(), &[]);
    a.live("locksmith lock", &lock, holder.pid(), "locksmith lock");
}

// ---------------------------------------------------------------------------------------------
// PostgreSQL

/// A PostgreSQL program: on `PATH`, else in Debian's `/usr/lib/postgresql/VERSION/bin`.
fn pg_bin(name: &str) -> Option<PathBuf> {
    which(name).or_else(|| {
        let mut dirs: Vec<PathBuf> = fs::read_dir("/usr/lib/postgresql")
            .ok()?
            .flatten()
            .map(|e| e.path().join("bin").join(name))
            .filter(|p| p.exists())
            .collect();
        dirs.sort();
        dirs.pop()
    })
}

/// `program` run as uid 65534 when we are root (PostgreSQL refuses to run as root), else as
/// ourselves.
fn as_postgres_user(program: &Path) -> Command {
    if rustix::process::geteuid().is_root() {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(program);
        c
    } else {
        Command::new(program)
    }
}

/// A running postmaster refuses a second one on its data directory: its message names the
/// postmaster, live, in English and German. A postmaster.pid naming another live process of
/// the user (started before it was written) is refused too, and is `unknown`: nothing proves
/// that process is not its writer.
#[test]
fn postgres_second_postmaster_names_the_first() {
    let (Some(initdb), Some(pg_ctl), Some(postgres)) =
        (pg_bin("initdb"), pg_bin("pg_ctl"), pg_bin("postgres"))
    else {
        return skip("PostgreSQL is not installed (the `postgresql` package; .ci/run installs it)");
    };
    if rustix::process::geteuid().is_root() && !require("setpriv") {
        return;
    }
    let env = Env::new();
    let top = sticky_dir(&env, "pg");
    let data = top.join("data");
    let run = top.join("run");
    let ok = |mut c: Command| {
        c.stdin(Stdio::null());
        let out = run_limited(c, Duration::from_secs(120));
        assert!(out.status.success(), "{}", both(&out));
    };
    let mut c = as_postgres_user(&initdb);
    c.arg("-D")
        .arg(&data)
        .args(["-A", "trust", "-U", "postgres"]);
    ok(c);
    let mut c = as_postgres_user(&initdb);
    c.arg("--version");
    ok(c);
    fs::create_dir_all(&run).unwrap();
    fs::set_permissions(&run, fs::Permissions::from_mode(0o777)).unwrap();
    let options = format!("-k {} -c listen_addresses=''", run.display());
    struct Stop(Command);
    impl Drop for Stop {
        fn drop(&mut self) {
            let _ = self.0.stdout(Stdio::null()).stderr(Stdio::null()).status();
        }
    }
    let mut stop = as_postgres_user(&pg_ctl);
    stop.arg("-D").arg(&data).args(["stop", "-m", "immediate"]);
    let _stop = Stop(stop);
    let mut start = as_postgres_user(&pg_ctl);
    start
        .arg("-D")
        .arg(&data)
        .args(["-o", &options, "-l"])
        .arg(top.join("log"))
        .args(["-w", "start"])
        .stdout(Stdio::null());
    ok(start);
    let pidfile = data.join("postmaster.pid");
    let record = fs::read_to_string(&pidfile).unwrap();
    let postmaster: i32 = record.lines().next().unwrap().trim().parse().unwrap();

    let second = |german: Option<&Path>| {
        let mut c = as_postgres_user(&postgres);
        c.arg("-D")
            .arg(&data)
            .arg("-k")
            .arg(&run)
            .args(["-c", "listen_addresses="]);
        if let Some(l) = german {
            in_german(&mut c, l);
            c.args(["-c", "lc_messages=de_DE.UTF-8"]);
        }
        printed(c)
    };
    let message = second(None);
    assert!(message.contains("already exists"), "{message}");
    let a = ask(&env, &message, env.path(), &[]);
    a.live("PostgreSQL", &pidfile, postmaster, "postgres");
    assert_eq!(a.why.pid, Some(postmaster as i64));
    if let Some(locales) = german() {
        // A copy the server's user can read, in the test's directory.
        let copy = top.join("locales");
        let out = Command::new("cp")
            .arg("-r")
            .arg(&locales)
            .arg(&copy)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", both(&out));
        let message = second(Some(&copy));
        assert!(message.contains("Sperrdatei"), "{message}");
        let a = ask(&env, &message, env.path(), &[]);
        assert_eq!(a.why.language.as_deref(), Some("de"));
        a.live("PostgreSQL", &pidfile, postmaster, "postgres");
    }
    drop(_stop);
    wait_until("the postmaster to stop", || !alive(postmaster));

    // Another process of the user, older than the file that names it.
    let mut sleeper = Group::spawn(
        as_postgres_user(Path::new("/bin/sleep"))
            .arg("600")
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    );
    let pid = wait_for("the sleeper", || {
        sleeper
            .members()
            .iter()
            .find(|(_, c)| c == "sleep")
            .map(|(p, _)| *p)
    });
    std::thread::sleep(Duration::from_millis(1100));
    let mut lines: Vec<String> = record.lines().map(String::from).collect();
    lines[0] = pid.to_string();
    fs::write(&pidfile, lines.join("\n") + "\n").unwrap();
    let message = second(None);
    assert!(message.contains(&format!("PID {pid}")), "{message}");
    let a = ask(&env, &message, env.path(), &[]);
    a.says("PostgreSQL", &pidfile, "unknown", "decide");
    assert!(
        a.why
            .next
            .command
            .as_deref()
            .is_some_and(|c| c.contains("--force")),
        "{:?}",
        a.why.next
    );
    sleeper.kill();
}

// ---------------------------------------------------------------------------------------------
// GnuPG

/// gpg waits for a dotlock held by a live process of this host, and says so by PID: the
/// answer finds the lock in `$GNUPGHOME` by that PID. Held on another host: foreign.
#[test]
fn gnupg_waiting_for_lock_names_its_holder() {
    if !require("gpg") || !require("gpgconf") {
        return;
    }
    let env = Env::new();
    let home = env.path().join("gnupg");
    fs::create_dir(&home).unwrap();
    fs::set_permissions(&home, fs::Permissions::from_mode(0o700)).unwrap();
    struct Agent(PathBuf);
    impl Drop for Agent {
        fn drop(&mut self) {
            let _ = Command::new("gpgconf")
                .arg("--homedir")
                .arg(&self.0)
                .args(["--kill", "all"])
                .status();
        }
    }
    let _agent = Agent(home.clone());
    let out = gpg_gen_key(&home, &[], "A <a@example.org>")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let lock = home.join("pubring.kbx.lock");
    let sleeper = sleeper();
    let gnupghome = [("GNUPGHOME", home.as_os_str())];
    let waits = || {
        let out = run_limited(
            gpg_gen_key(&home, &["timeout", "3"], "B <b@example.org>"),
            Duration::from_secs(30),
        );
        let message = stderr(&out);
        assert!(message.contains("waiting for lock"), "{message}");
        message
    };
    write(&lock, format!("{:10}\n{}\n", sleeper.pid(), hostname()));
    let a = ask(&env, &waits(), env.path(), &gnupghome);
    a.live("GnuPG", &lock, sleeper.pid() as i32, "sleep");

    write(&lock, format!("{:10}\nelsewhere.example\n", sleeper.pid()));
    let a = ask(&env, &waits(), env.path(), &gnupghome);
    a.says("GnuPG", &lock, "foreign", "decide");
    assert!(a.text.contains("elsewhere.example"), "{}", a.text);
}

// ---------------------------------------------------------------------------------------------
// Emacs

/// A batch Emacs that edits a file holds its `.#` lock; another Emacs's message names it.
/// A lock of another host: foreign.
#[test]
fn emacs_locked_by_names_the_emacs() {
    if !require("emacs") {
        return;
    }
    let env = Env::new();
    let dir = env.path().join("notes");
    write(&dir.join("draft.txt"), "hello\n");
    let emacs = |eval: &str| {
        let mut c = Command::new("emacs");
        c.args(["--batch", "-Q", "--eval", eval])
            .current_dir(&dir)
            .env("HOME", env.path())
            .stdin(Stdio::null());
        c
    };
    let mut holder = Group::spawn(
        emacs("(progn (find-file \"draft.txt\") (insert \"x\") (sleep-for 600))")
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    );
    let lock = dir.join(".#draft.txt");
    wait_until("the emacs lock", || fs::symlink_metadata(&lock).is_ok());
    let second = || printed(emacs("(progn (find-file \"draft.txt\") (insert \"y\"))"));
    let message = second();
    assert!(message.contains("locked by"), "{message}");
    // Emacs names the file from the home directory (`~/notes/draft.txt`).
    let home = [("HOME", env.path().as_os_str())];
    let a = ask(&env, &message, env.path(), &home);
    a.live("Emacs", &lock, holder.pid(), "emacs");

    holder.kill();
    fs::remove_file(&lock).unwrap();
    std::os::unix::fs::symlink("alice@build-7.4242:1", &lock).unwrap();
    let message = second();
    let a = ask(&env, &message, &dir, &home);
    a.says("Emacs", &lock, "foreign", "decide");
    assert_eq!(a.why.host.as_deref(), Some("build-7"));
}

// ---------------------------------------------------------------------------------------------
// X servers

/// A second Xvfb on a display in use: "Server is already active for display N" leads to the
/// display's lock and the server that holds it.
#[test]
fn xvfb_already_active_names_the_server() {
    if !require("Xvfb") {
        return;
    }
    let env = Env::new();
    let mut display = 400 + std::process::id() % 400;
    let (x, lock) = loop {
        let lock = PathBuf::from(format!("/tmp/.X{display}-lock"));
        let socket = PathBuf::from(format!("/tmp/.X11-unix/X{display}"));
        if lock.exists() || socket.exists() {
            display += 1;
            continue;
        }
        let mut x = Group::spawn(
            Command::new("Xvfb")
                .arg(format!(":{display}"))
                .args(["-nolisten", "tcp"])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null()),
        );
        let pid = x.pid();
        let mine = wait_within(30, "Xvfb to start or fail", || {
            if fs::read_to_string(&lock).is_ok_and(|t| t.trim() == pid.to_string()) {
                return Some(true);
            }
            x.child.try_wait().unwrap().map(|_| false)
        });
        if mine {
            break (x, lock);
        }
        x.kill();
        display += 1;
        assert!(display < 1200, "no free X display");
    };
    let mut second = Command::new("Xvfb");
    second
        .arg(format!(":{display}"))
        .args(["-nolisten", "tcp"])
        .stdin(Stdio::null());
    let message = printed(second);
    assert!(message.contains("already active"), "{message}");
    let a = ask(&env, &message, env.path(), &[]);
    a.live("X server", &lock, x.pid(), "Xvfb");
    drop(x);
    let _ = fs::remove_file(&lock);
    let _ = fs::remove_file(format!("/tmp/.X11-unix/X{display}"));
}

// ---------------------------------------------------------------------------------------------
// terraform

/// `terraform apply` waiting at its prompt holds the state lock: another apply's "Error
/// acquiring the state lock" names it.
#[test]
fn terraform_state_lock_names_the_apply() {
    if which("terraform").is_none() {
        return skip_even_under_ci(
            "`terraform` is not installed (no registry .ci/run reaches ships it)",
        );
    }
    let env = Env::new();
    let ws = env.path().join("ws");
    write(
        &ws.join("main.tf"),
        "resource \"terraform_data\" \"stamp\" {\n  input = timestamp()\n}\n",
    );
    write(&ws.join("home/.terraformrc"), "");
    let tf = |args: &[&str]| {
        let mut c = Command::new("terraform");
        c.args(args)
            .current_dir(&ws)
            .env("HOME", ws.join("home"))
            .env("TF_IN_AUTOMATION", "1")
            .env("CHECKPOINT_DISABLE", "1");
        c
    };
    let mut init = tf(&["init", "-input=false", "-no-color"]);
    init.stdin(Stdio::null());
    let out = run_limited(init, Duration::from_secs(120));
    assert!(out.status.success(), "{}", both(&out));
    let apply = Group::spawn(
        tf(&["apply", "-no-color"])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    );
    let info = ws.join(".terraform.tfstate.lock.info");
    wait_until("the state lock", || {
        info.exists()
            && snapshot().kernel_locked(locksmith::probe::FileKey::of(
                &fs::metadata(ws.join("terraform.tfstate")).unwrap(),
            ))
    });
    let mut again = tf(&["apply", "-no-color", "-lock-timeout=0s", "-auto-approve"]);
    again.stdin(Stdio::null());
    let message = printed(again);
    assert!(
        message.contains("Error acquiring the state lock"),
        "{message}"
    );
    let a = ask(&env, &message, &ws, &[]);
    a.live("terraform", &info, apply.pid(), "terraform");
}

// ---------------------------------------------------------------------------------------------
// cargo

/// A cargo building (its build script sleeping) holds the build directory: another cargo
/// blocks, "Blocking waiting for file lock on ... directory", and the answer names the first.
/// The package cache, held by flock(1): the answer names flock.
#[test]
fn cargo_blocking_waiting_names_the_holder() {
    if !require("cargo") {
        return;
    }
    let env = Env::new();
    let krate = env.path().join("hold");
    write(
        &krate.join("Cargo.toml"),
        "[package]\nname = \"hold\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
    );
    write(&krate.join("src/main.rs"), "fn main() {}\n");
    write(
        &krate.join("build.rs"),
        "fn main() {\n    println!(\"cargo:rerun-if-env-changed=HOLD_BUILD\");\n    if let Some(marker) = std::env::var_os(\"HOLD_BUILD\") {\n        std::fs::write(marker, \"\").unwrap();\n        std::thread::sleep(std::time::Duration::from_secs(600));\n    }\n}\n",
    );
    let target = env.path().join("target");
    let cargo_home = env.path().join("cargo-home");
    fs::create_dir_all(&cargo_home).unwrap();
    let marker = env.path().join("building");
    let cargo = |args: &[&str]| {
        let mut c = Command::new("cargo");
        c.args(args)
            .current_dir(&krate)
            .env("CARGO_TARGET_DIR", &target)
            .env("CARGO_HOME", &cargo_home)
            .env_remove("RUSTFLAGS")
            .stdin(Stdio::null());
        c
    };
    // What a blocked cargo says, once it says it.
    let blocked = |mut c: Command| {
        let log = env.path().join("cargo.log");
        let mut waiting = Group::spawn(
            c.stdout(Stdio::null())
                .stderr(fs::File::create(&log).unwrap()),
        );
        let message = wait_for("cargo to block", || {
            fs::read_to_string(&log)
                .ok()
                .filter(|t| t.contains("Blocking waiting"))
        });
        waiting.kill();
        message
    };
    let building = Group::spawn(
        cargo(&["build", "--offline", "--quiet"])
            .env("HOLD_BUILD", &marker)
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    );
    wait_until("cargo to run the build script", || marker.exists());
    let message = blocked(cargo(&["build", "--offline"]));
    let vars = [
        ("CARGO_TARGET_DIR", target.as_os_str()),
        ("CARGO_HOME", cargo_home.as_os_str()),
    ];
    let a = ask(&env, &message, &krate, &vars);
    a.live(
        "cargo",
        &target.join("debug/.cargo-lock"),
        building.pid(),
        "cargo",
    );
    drop(building);

    let cache = cargo_home.join(".package-cache");
    write(&cache, "");
    let flock = hold_flock(&cache);
    let message = blocked(cargo(&["generate-lockfile", "--offline"]));
    assert!(message.contains("package cache"), "{message}");
    let a = ask(&env, &message, &krate, &vars);
    a.live("cargo", &cache, flock.pid(), "flock");
}

// ---------------------------------------------------------------------------------------------
// apt and dpkg

/// dpkg installing a package whose `preinst` sleeps holds the dpkg locks of a private root:
/// apt-get's and another dpkg's messages (in English and in German) name that dpkg. Never
/// the system's dpkg database: everything is under the test's directory.
#[test]
fn apt_and_dpkg_could_not_get_lock_names_dpkg() {
    if !require("dpkg") || !require("apt-get") || !require("dpkg-deb") {
        return;
    }
    if !require_that(
        rustix::process::geteuid().is_root(),
        "needs root (dpkg --root installs with the owners it records)",
    ) {
        return;
    }
    let env = Env::new();
    let root = env.path().join("root");
    let admin = root.join("var/lib/dpkg");
    for d in [
        "var/lib/dpkg/updates",
        "var/lib/dpkg/info",
        "var/lib/dpkg/triggers",
        "var/lib/apt/lists/partial",
        "var/cache/apt/archives/partial",
        "etc/apt/apt.conf.d",
        "etc/apt/preferences.d",
        "etc/apt/sources.list.d",
        "var/log/apt",
    ] {
        fs::create_dir_all(root.join(d)).unwrap();
    }
    write(&admin.join("status"), "");
    write(&root.join("etc/apt/sources.list"), "");
    let pkg = env.path().join("pkg");
    write(
        &pkg.join("DEBIAN/control"),
        "Package: locksmith-test-hold\nVersion: 1.0\nArchitecture: all\nMaintainer: T <t@example.org>\nDescription: holds the dpkg lock\n",
    );
    script(&pkg.join("DEBIAN/preinst"), "#!/bin/sh\nexec sleep 600\n");
    let deb = env.path().join("hold.deb");
    let out = Command::new("dpkg-deb")
        .args(["--root-owner-group", "--build"])
        .arg(&pkg)
        .arg(&deb)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", both(&out));
    let mut install = Command::new("dpkg");
    install
        .arg(format!("--root={}", root.display()))
        .args(["--force-script-chrootless", "--force-not-root", "-i"])
        .arg(&deb)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let dpkg = Group::spawn(&mut install);
    let frontend = admin.join("lock-frontend");
    wait_until("dpkg to run the preinst", || {
        dpkg.members().iter().any(|(_, c)| c == "sleep")
    });
    let apt = |german: Option<&Path>| {
        let mut c = Command::new("apt-get");
        c.arg(format!("-oDir={}", root.display()))
            .arg(format!(
                "-oDir::State::status={}",
                admin.join("status").display()
            ))
            .arg("autoremove")
            .stdin(Stdio::null());
        if let Some(l) = german {
            in_german(&mut c, l);
        }
        printed(c)
    };
    let message = apt(None);
    assert!(message.contains("Could not get lock"), "{message}");
    let a = ask(&env, &message, env.path(), &[]);
    a.live("apt", &frontend, dpkg.pid(), "dpkg");
    if let Some(locales) = german() {
        let message = apt(Some(&locales));
        if message.contains("Sperre") {
            let a = ask(&env, &message, env.path(), &[]);
            assert_eq!(a.why.language.as_deref(), Some("de"));
            a.live("apt", &frontend, dpkg.pid(), "dpkg");
        } else {
            skip(format!("apt prints no German here: {message}"));
        }
    }
    let mut c = Command::new("dpkg");
    c.arg(format!("--admindir={}", admin.display()))
        .args(["--remove", "locksmith-test-hold"])
        .stdin(Stdio::null());
    let message = printed(c);
    assert!(message.contains("locked by another process"), "{message}");
    let a = ask(
        &env,
        &message,
        env.path(),
        &[("DPKG_ADMINDIR", admin.as_os_str())],
    );
    a.live("dpkg", &frontend, dpkg.pid(), "dpkg");
}

impl Answer {
    /// [`Answer::live`] for a holder that is one of `pids` (a program whose main process is
    /// not the one started).
    #[track_caller]
    pub fn live_one_of(&self, program: &str, path: &Path, pids: &[i32], command: &str) -> &Lock {
        let pid = self.why.next.pid.expect("a process to wait for") as i32;
        assert!(
            pids.contains(&pid),
            "{pid} is not one of {pids:?}:\n{}",
            self.text
        );
        self.live(program, path, pid, command)
    }
}

/// A tmux server on its own socket, for programs that need a terminal; killed when dropped.
struct Tmux {
    socket: PathBuf,
}

impl Tmux {
    fn new(env: &Env) -> Option<Tmux> {
        require("tmux").then(|| Tmux {
            socket: env.path().join("tmux.sock"),
        })
    }

    fn cmd(&self) -> Command {
        let mut c = Command::new("tmux");
        c.arg("-S").arg(&self.socket).arg("-f").arg("/dev/null");
        c.env("TERM", "xterm").stdin(Stdio::null());
        c
    }

    fn ok(&self, args: &[&str]) -> String {
        let out = self.cmd().args(args).output().unwrap();
        assert!(out.status.success(), "tmux {args:?}: {}", stderr(&out));
        stdout(&out)
    }

    /// Runs `command` in a new session `name` (80x30) in `dir`.
    fn start(&self, name: &str, command: &str, dir: &Path) {
        let out = self
            .cmd()
            .args(["new-session", "-d", "-s", name, "-x", "80", "-y", "30"])
            .arg(command)
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(out.status.success(), "tmux new-session: {}", stderr(&out));
    }

    fn pid(&self, name: &str) -> i32 {
        self.ok(&["display-message", "-p", "-t", name, "#{pane_pid}"])
            .trim()
            .parse()
            .unwrap()
    }

    /// The screen of session `name` once it shows `what`.
    /// The screen of session `name` once it shows `what` (the last of what a test reads: a
    /// screen captured at its first line may not hold the rest yet).
    fn screen_with(&self, name: &str, what: &str) -> String {
        wait_for(&format!("{what:?} on the screen"), || {
            let s = self.ok(&["capture-pane", "-p", "-J", "-t", name]);
            s.contains(what).then_some(s)
        })
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.cmd().arg("kill-server").output();
    }
}

// ---------------------------------------------------------------------------------------------
// vim and neovim

/// The swap file's E325 screen, as a second editor shows it: with its editor running, the
/// answer names it; killed with unsaved changes, the next step is to recover them first.
fn swap_screen(editor: &str, swap_of: impl Fn(&Path) -> Vec<PathBuf>) {
    if !require(editor) {
        return;
    }
    let env = Env::new();
    let Some(tmux) = Tmux::new(&env) else { return };
    let docs = env.path().join("docs");
    write(&docs.join("notes.txt"), "hello\n");
    // The editor runs with the user's own home (block 0 names the file from it, and the swap
    // file is recovered only for the file its name is for); neovim keeps its swap files in
    // the test's directory.
    let data = env.path().join("data");
    let command = if editor == "nvim" {
        format!(
            "XDG_DATA_HOME={} XDG_STATE_HOME={} exec nvim -u NONE -i NONE notes.txt",
            data.display(),
            data.display()
        )
    } else {
        format!("exec {editor} -u NONE -i NONE -N notes.txt")
    };
    tmux.start("first", &command, &docs);
    let swap = wait_for("the swap file", || {
        swap_of(env.path()).into_iter().find(|s| s.exists())
    });
    let first = tmux.pid("first");
    tmux.ok(&[
        "send-keys",
        "-t",
        "first",
        "i",
        "words never saved",
        "Escape",
        ":preserve",
        "Enter",
    ]);
    wait_for("the text in the swap file", || {
        (fs::metadata(&swap).unwrap().len() > 4096).then_some(())
    });
    tmux.start("second", &command, &docs);
    let screen = tmux.screen_with("second", "(Q)uit");
    let a = ask(&env, &screen, &docs, &[]);
    a.live("vim", &swap, first, editor);
    tmux.ok(&["kill-session", "-t", "second"]);

    kill9(first);
    wait_until("the editor to die", || !alive(first));
    tmux.start("third", &command, &docs);
    let screen = tmux.screen_with("third", "(Q)uit");
    let a = ask(&env, &screen, &docs, &[]);
    a.says("vim", &swap, "stale", "recover");
    assert_eq!(a.lock(&swap).unsaved_changes, Some(true));
    assert!(a.text.contains(" -r "), "{}", a.text);
    assert!(
        a.why
            .next
            .command
            .as_deref()
            .is_some_and(|c| c.contains("--include-unsaved")),
        "{:?}",
        a.why.next
    );
}

#[test]
fn vim_swap_file_screen_names_the_editor_then_recovery() {
    swap_screen("vim", |home| vec![home.join("docs/.notes.txt.swp")]);
}

#[test]
fn neovim_swap_file_screen_names_the_editor_then_recovery() {
    // (Neovim 0.8 and later keep swap files in their state directory, before in their data
    // one: both are the test's `data`.)
    swap_screen("nvim", |dir| {
        let name = format!("{}.swp", dir.join("docs/notes.txt").display()).replace('/', "%");
        ["data/nvim/swap"].map(|d| dir.join(d).join(&name)).to_vec()
    });
}

// ---------------------------------------------------------------------------------------------
// Browsers

/// Chromium refuses a profile locked by a process of another computer: foreign, with that
/// host and PID.
#[test]
fn chromium_profile_in_use_on_another_computer_is_foreign() {
    if !require("chromium") {
        return;
    }
    let env = Env::new();
    let config = env.path().join("config");
    let profile = config.join("chromium");
    fs::create_dir_all(&profile).unwrap();
    let lock = profile.join("SingletonLock");
    std::os::unix::fs::symlink("build-7-4242", &lock).unwrap();
    // (Headless, it uses a temporary profile unless told: this is the default one.)
    let mut c = Command::new("chromium");
    c.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--dump-dom",
    ])
    .arg(format!("--user-data-dir={}", profile.display()))
    .arg("about:blank")
    .env("HOME", env.path())
    .env("XDG_CONFIG_HOME", &config)
    .env("TMPDIR", env.path())
    .stdin(Stdio::null());
    let message = printed(c);
    assert!(
        message.contains("The profile appears to be in use"),
        "{message}"
    );
    let a = ask(
        &env,
        &message,
        env.path(),
        &[("XDG_CONFIG_HOME", config.as_os_str())],
    );
    a.says("Chromium", &lock, "foreign", "decide");
    assert_eq!(
        (a.why.pid, a.why.host.as_deref()),
        (Some(4242), Some("build-7"))
    );
    assert!(a.text.contains("ssh build-7 ps -p 4242"), "{}", a.text);
}

/// A running Firefox holds its default profile: a second one "is already running, but is
/// not responding", and the answer finds the profile's lock and names the first.
#[test]
fn firefox_already_running_names_it() {
    let Some(program) = ["firefox-esr", "firefox"]
        .into_iter()
        .find(|p| which(p).is_some())
    else {
        return skip("`firefox-esr` is not installed (.ci/run installs it)");
    };
    let env = Env::new();
    let home = env.path().join("home");
    fs::create_dir_all(&home).unwrap();
    let firefox = || {
        let mut c = Command::new(program);
        c.args(["--headless", "about:blank"])
            .env("HOME", &home)
            .env("TMPDIR", env.path())
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("MOZ_NO_REMOTE")
            .stdin(Stdio::null());
        c
    };
    let browser = Group::spawn(firefox().stdout(Stdio::null()).stderr(Stdio::null()));
    let lock = wait_within(90, "the profile lock", || {
        // (Firefox 140 and later keep new profiles in ~/.config/mozilla/firefox.)
        let profiles = fs::read_dir(home.join(".config/mozilla/firefox"))
            .or_else(|_| fs::read_dir(home.join(".mozilla/firefox")))
            .ok()?;
        profiles.flatten().map(|e| e.path().join("lock")).find(|l| {
            fs::symlink_metadata(l).is_ok()
                && fs::metadata(l.with_file_name(".parentlock"))
                    .is_ok_and(|m| snapshot().kernel_locked(locksmith::probe::FileKey::of(&m)))
        })
    });
    let mut second = firefox();
    second.arg("--no-remote");
    let message = printed(second);
    assert!(message.contains("already running"), "{message}");
    let a = ask(&env, &message, env.path(), &[("HOME", home.as_os_str())]);
    let pids: Vec<i32> = browser.members().iter().map(|(p, _)| *p).collect();
    a.live_one_of("Firefox", &lock, &pids, "firefox");
}

// ---------------------------------------------------------------------------------------------
// A Rack server

/// A Ruby server that checks its pid file as Rack does (`check_pid!`: a signal 0 to the
/// PID it names) and says so with Rack's message.
const RACK_SERVER: &str = r##"
pid_file = "tmp/pids/server.pid"
if File.exist?(pid_file)
  pid = File.read(pid_file).to_i
  begin
    raise Errno::ESRCH if pid == 0
    Process.kill(0, pid)
    $stderr.puts "A server is already running. Check #{pid_file}."
    exit 1
  rescue Errno::ESRCH
    File.delete(pid_file)
  rescue Errno::EPERM
    $stderr.puts "A server is already running. Check #{pid_file}."
    exit 1
  end
end
Dir.mkdir("tmp") rescue nil
Dir.mkdir("tmp/pids") rescue nil
File.write(pid_file, "#{Process.pid}\n")
$stdout.puts "listening"
$stdout.flush
sleep
"##;

/// A running server: the next one's message names it. Its pid file naming this machine's
/// PID 1 (as one written in a container names the container's first process): Rack sees a
/// live process and refuses; the answer proves the lock stale.
#[test]
fn rack_server_already_running_names_it_or_proves_it_stale() {
    if !require("ruby") {
        return;
    }
    let env = Env::new();
    let app = env.path().join("app");
    let script = write(&app.join("server.rb"), RACK_SERVER);
    let server = || {
        let mut c = Command::new("ruby");
        c.arg(&script).current_dir(&app).stdin(Stdio::null());
        c
    };
    let pidfile = app.join("tmp/pids/server.pid");
    let mut first = Group::spawn(server().stdout(Stdio::null()).stderr(Stdio::null()));
    wait_until("the server's pid file", || {
        fs::read_to_string(&pidfile).is_ok_and(|t| t.trim() == first.pid().to_string())
    });
    let message = printed(server());
    assert!(message.contains("A server is already running"), "{message}");
    let a = ask(&env, &message, &app, &[]);
    a.live("Rack", &pidfile, first.pid(), "ruby");
    first.kill();

    write(&pidfile, "1\n");
    let message = printed(server());
    assert!(message.contains("A server is already running"), "{message}");
    let a = ask(&env, &message, &app, &[]);
    a.stale("Rack", &pidfile);
}

// ---------------------------------------------------------------------------------------------
// Version control: Mercurial, Breezy, CVS

/// hg gives up on a lock held by a live hg (the answer names it), or by a process of another
/// host (foreign).
#[test]
fn mercurial_timed_out_waiting_for_lock() {
    if !require("hg") {
        return;
    }
    let env = Env::new();
    let repo = env.path().join("repo");
    let hg = |args: &[&str]| {
        let mut c = Command::new("hg");
        c.args(args)
            .current_dir(&repo)
            .env("HGRCPATH", "")
            .env("HGUSER", "Test <test@example.org>")
            .stdin(Stdio::null());
        c
    };
    fs::create_dir_all(&repo).unwrap();
    let out = hg(&["init"]).output().unwrap();
    assert!(out.status.success(), "{}", both(&out));
    write(&repo.join("a.txt"), "one\n");
    let commit = || printed(hg(&["--config", "ui.timeout=1", "commit", "-A", "-m", "x"]));
    let holder = Group::spawn(
        hg(&["debuglocks", "--set-wlock"])
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    );
    let wlock = repo.join(".hg/wlock");
    wait_until("hg's lock", || fs::symlink_metadata(&wlock).is_ok());
    let message = commit();
    assert!(message.contains("timed out waiting for lock"), "{message}");
    let a = ask(&env, &message, env.path(), &[]);
    a.live("Mercurial", &wlock, holder.pid(), "hg");
    drop(holder);

    let _ = fs::remove_file(&wlock);
    std::os::unix::fs::symlink("build-7:4242", &wlock).unwrap();
    let message = commit();
    let a = ask(&env, &message, env.path(), &[]);
    a.says("Mercurial", &wlock, "foreign", "decide");
    assert_eq!(a.why.host.as_deref(), Some("build-7"));
}

/// `brz commit` waiting in its editor holds its branch's lock: another commit's message names
/// it.
#[test]
fn breezy_unable_to_obtain_lock_names_the_commit() {
    if !require("brz") {
        return;
    }
    let env = Env::new();
    let home = env.path().join("home");
    let branch = env.path().join("branch");
    fs::create_dir_all(&home).unwrap();
    fs::create_dir_all(&branch).unwrap();
    let brz = |args: &[&str]| {
        let mut c = Command::new("brz");
        c.args(args)
            .current_dir(&branch)
            .env("HOME", &home)
            .env("BRZ_EMAIL", "Test <test@example.com>")
            .stdin(Stdio::null());
        c
    };
    for args in [
        &["init", "-q", "."][..],
        &["add", "-q", "a.txt"],
        &["commit", "-q", "-m", "first"],
    ] {
        if args[0] == "add" {
            write(&branch.join("a.txt"), "one\n");
        }
        let out = brz(args).output().unwrap();
        assert!(out.status.success(), "{}", both(&out));
    }
    write(&branch.join("a.txt"), "two\n");
    let editor = script(&env.path().join("editor.sh"), "#!/bin/sh\nexec sleep 600\n");
    let commit = Group::spawn(
        brz(&["commit"])
            .env("BRZ_EDITOR", &editor)
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    );
    let held = branch.join(".bzr/branch/lock/held");
    wait_until("brz to take its locks", || held.join("info").exists());
    // The working tree's state, which the commit holds with a kernel lock, is refused first:
    // it is data, never a lock, and the commit holds it with the tree's lock directory.
    let mut again = brz(&["commit", "-m", "again"]);
    again.env("BRZ_EDITOR", &editor);
    let message = printed(again);
    assert!(message.contains("Could not acquire lock"), "{message}");
    let a = ask(&env, &message, env.path(), &[]);
    a.live(
        "Breezy",
        &branch.join(".bzr/checkout/lock/held"),
        commit.pid(),
        "brz",
    );
}

/// A `cvs commit` killed while its commitinfo check ran leaves its lock in the repository:
/// the next commit waits for it ("waiting for USER's lock in DIR"), and the answer proves it
/// stale.
#[test]
fn cvs_waiting_for_a_dead_commits_lock() {
    if !require("cvs") {
        return;
    }
    let env = Env::new();
    let root = env.path().join("cvsroot");
    let work = env.path().join("work");
    let marker = env.path().join("hook-ran");
    fs::create_dir_all(&work).unwrap();
    let cvs = |args: &[&str], dir: &Path| {
        let mut c = Command::new("cvs");
        c.arg("-d")
            .arg(&root)
            .args(args)
            .current_dir(dir)
            .env("HOME", env.path())
            .stdin(Stdio::null());
        c
    };
    let ok = |mut c: Command| {
        let out = c.output().unwrap();
        assert!(out.status.success(), "{}", both(&out));
    };
    ok(cvs(&["-Q", "init"], env.path()));
    let import = env.path().join("import");
    write(&import.join("a.txt"), "one\n");
    ok(cvs(
        &["-Q", "import", "-m", "i", "mod", "vendor", "start"],
        &import,
    ));
    ok(cvs(&["-Q", "co", "CVSROOT"], &work));
    let hook = script(
        &env.path().join("hook.sh"),
        &format!("#!/bin/sh\ntouch {}\nexec sleep 600\n", marker.display()),
    );
    let commitinfo = work.join("CVSROOT/commitinfo");
    let mut text = fs::read_to_string(&commitinfo).unwrap();
    text.push_str(&format!("ALL {}\n", hook.display()));
    fs::write(&commitinfo, text).unwrap();
    ok(cvs(&["-Q", "commit", "-m", "hook"], &work.join("CVSROOT")));
    ok(cvs(&["-Q", "co", "mod"], &work));
    let module = work.join("mod");
    write(&module.join("a.txt"), "two\n");
    let mut commit = Group::spawn(
        cvs(&["-Q", "commit", "-m", "two"], &module)
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    );
    wait_until("cvs to run its commitinfo check", || marker.exists());
    let lock = wait_for("cvs's lock", || {
        fs::read_dir(root.join("mod"))
            .ok()?
            .flatten()
            .map(|e| e.path())
            .find(|p| {
                p.file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with("#cvs.")
            })
    });
    commit.kill();
    script(&hook, "#!/bin/sh\nexit 0\n");
    let log = env.path().join("waiting.log");
    let mut waiting = Group::spawn(
        cvs(&["commit", "-m", "two"], &module)
            .stdout(Stdio::null())
            .stderr(fs::File::create(&log).unwrap()),
    );
    let message = wait_for("cvs to wait for the lock", || {
        fs::read_to_string(&log)
            .ok()
            .filter(|t| t.contains("waiting for"))
    });
    waiting.kill();
    let a = ask(&env, &message, env.path(), &[]);
    a.stale("CVS", &lock);
}

// ---------------------------------------------------------------------------------------------
// R, borg

/// `R CMD INSTALL` killed in its configure script leaves `00LOCK-PKG`: the next install
/// fails "Try removing ...", and the answer proves the lock stale.
#[test]
fn r_install_try_removing_the_lock_directory() {
    if !require("R") {
        return;
    }
    let env = Env::new();
    let dir = env.path();
    let lib = dir.join("lib");
    let pkg = dir.join("tinypkg");
    fs::create_dir_all(&lib).unwrap();
    write(
        &pkg.join("DESCRIPTION"),
        "Package: tinypkg\nVersion: 1.0\nTitle: Tiny\nDescription: Tiny.\nLicense: MIT\nAuthor: A\nMaintainer: A <a@example.org>\n",
    );
    write(&pkg.join("NAMESPACE"), "export(f)\n");
    write(&pkg.join("R/f.R"), "f <- function() 1\n");
    let install = || {
        let mut c = Command::new("R");
        c.args(["CMD", "INSTALL", "-l", "lib", "tinypkg"])
            .current_dir(dir)
            .stdin(Stdio::null());
        c
    };
    // A library with the package in it, which the next install replaces.
    let out = run_limited(install(), Duration::from_secs(120));
    assert!(out.status.success(), "{}", both(&out));
    let configure = script(&pkg.join("configure"), "#!/bin/sh\nsleep 600\n");
    let mut r = Group::spawn(install().stdout(Stdio::null()).stderr(Stdio::null()));
    wait_for("R to run configure", || {
        r.members().iter().any(|(_, c)| c == "sleep").then_some(())
    });
    r.kill();
    let lock = lib.join("00LOCK-tinypkg");
    assert!(lock.exists());
    script(&configure, "#!/bin/sh\nexit 0\n");
    // Asked a little later (R's lock is not proven stale younger than its shortest hold).
    older_than_a_writers_shortest_hold(&lock);
    let message = printed(install());
    assert!(message.contains("Try removing"), "{message}");
    let a = ask(&env, &message, dir, &[]);
    a.stale("R", &lock);
}

/// borg holding a repository's lock: another borg times out, and the answer names it.
#[test]
fn borg_failed_to_acquire_the_lock_names_the_holder() {
    if !require("borg") {
        return;
    }
    let env = Env::new();
    let repo = env.path().join("repo");
    let borg = |args: &[&str]| {
        let mut c = Command::new("borg");
        c.args(args)
            .env("BORG_BASE_DIR", env.path().join("base"))
            .env("BORG_RELOCATED_REPO_ACCESS_IS_OK", "yes")
            .env("BORG_UNKNOWN_UNENCRYPTED_REPO_ACCESS_IS_OK", "yes")
            .stdin(Stdio::null());
        c
    };
    let out = borg(&["init", "-e", "none", repo.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", both(&out));
    let holder = Group::spawn(
        borg(&["with-lock", repo.to_str().unwrap(), "sleep", "600"])
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    );
    let exclusive = repo.join("lock.exclusive");
    wait_for("borg to take the lock", || {
        (fs::read_dir(&exclusive).ok()?.count() > 0).then_some(())
    });
    let message = printed(borg(&["list", "--lock-wait", "1", repo.to_str().unwrap()]));
    assert!(
        message.contains("Failed to create/acquire the lock"),
        "{message}"
    );
    let a = ask(&env, &message, env.path(), &[]);
    a.live("borg", &exclusive, holder.pid(), "borg");
}

// ---------------------------------------------------------------------------------------------
// rbenv, xauth

/// A killed `rbenv rehash` leaves its lock: the next rehash "cannot rehash", and the answer
/// proves it stale.
#[test]
fn rbenv_cannot_rehash_proves_the_lock_stale() {
    if !require("rbenv") {
        return;
    }
    let _no_other_rehash = quiet::absent(quiet::Fact::Rehash);
    if !quiet::none_running(quiet::Fact::Rehash) {
        return;
    }
    let env = Env::new();
    let root = env.path().join("rbenv");
    fs::create_dir_all(root.join("versions")).unwrap();
    let marker = env.path().join("rehashing");
    let hooks = env.path().join("hooks");
    write(
        &hooks.join("rehash/hold.bash"),
        format!("touch {}\nsleep 600\n", marker.display()),
    );
    let rbenv = || {
        let mut c = Command::new("rbenv");
        c.arg("rehash")
            .env("RBENV_ROOT", &root)
            .env("HOME", env.path())
            .env_remove("RBENV_HOOK_PATH")
            .stdin(Stdio::null());
        c
    };
    let mut rehash = Group::spawn(
        rbenv()
            .env("RBENV_HOOK_PATH", &hooks)
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    );
    wait_until("rbenv to run its rehash hook", || marker.exists());
    rehash.kill();
    let shim = root.join("shims/.rbenv-shim");
    older_than_a_writers_shortest_hold(&shim);
    let message = printed(rbenv());
    assert!(message.contains("cannot rehash"), "{message}");
    let a = ask(&env, &message, env.path(), &[]);
    a.stale("rbenv", &shim);
}

/// A killed xauth leaves its authority file's lock pair: the next xauth times out, and the
/// answer proves the pair stale.
#[test]
fn xauth_timeout_in_locking_proves_the_pair_stale() {
    if !require("xauth") {
        return;
    }
    let _no_other_tool = quiet::absent(quiet::Fact::AuthorityTool);
    if !quiet::none_running(quiet::Fact::AuthorityTool) {
        return;
    }
    let env = Env::new();
    let home = env.path().join("home");
    fs::create_dir_all(&home).unwrap();
    let file = home.join(".Xauthority");
    let xauth = |args: &[&str]| {
        let mut c = Command::new("xauth");
        c.arg("-f")
            .arg(&file)
            .args(args)
            .env("HOME", &home)
            .stdin(Stdio::null());
        c
    };
    let out = xauth(&["add", ":5", ".", "0123456789abcdef0123456789abcdef"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", both(&out));
    let mut held = Group::spawn(
        xauth(&[])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    );
    let c = home.join(".Xauthority-c");
    wait_until("xauth to take the lock pair", || {
        home.join(".Xauthority-l").exists()
    });
    held.kill();
    older_than_a_writers_shortest_hold(&c);
    let message = printed(xauth(&["list"]));
    assert!(
        message.contains("timeout in locking authority file"),
        "{message}"
    );
    let a = ask(&env, &message, env.path(), &[]);
    a.stale("xauth", &c);
}

// ---------------------------------------------------------------------------------------------
// The terminal UI

/// In a real terminal: git's message, pasted (bracketed paste, as a terminal sends it) into
/// the why prompt of the UI, selects the lock it is about among others, and `d` reclaims it.
#[test]
fn a_pasted_git_message_selects_its_lock_in_the_ui_and_d_reclaims_it() {
    if !require("git") {
        return;
    }
    let env = Env::new();
    let home = env.path().join("home");
    fs::create_dir_all(&home).unwrap();
    let tree = env.path().join("tree");
    let (a, b) = (tree.join("a"), tree.join("b"));
    for r in [&a, &b] {
        git_repo_with_a_commit(r, &home);
        write(&r.join(".git/index.lock"), "");
    }
    older_than_a_writers_shortest_hold(&a.join(".git/index.lock"));
    older_than_a_writers_shortest_hold(&b.join(".git/index.lock"));
    let lock = b.join(".git/index.lock");
    let mut c = git(&b, &home);
    c.args(["add", "a.txt"]);
    let message = printed(c);
    assert!(message.contains("Unable to create"), "{message}");

    let mut ui = crate::util::ui::Ui::start(&env, &[&tree], &[]);
    let row = |s: &str, p: &Path| {
        s.lines()
            .find(|l| l.contains(&*p.display().to_string()))
            .map(String::from)
    };
    ui.wait_for("both locks listed, the first selected", |s| {
        row(s, &a.join(".git/index.lock")).is_some_and(|l| l.starts_with('▶'))
            && row(s, &lock).is_some_and(|l| l.contains("✗ stale"))
    });
    ui.send("w");
    ui.wait_for("the why prompt", |s| s.contains("Why: which lock"));
    ui.send(&format!(
        "\x1b[200~{}\x1b[201~",
        message.replace('\n', "\r")
    ));
    ui.wait_for("the message in the prompt", |s| {
        s.contains("> fatal: Unable to create")
    });
    ui.send("\r");
    ui.wait_for("its lock selected", |s| {
        row(s, &lock).is_some_and(|l| l.starts_with('▶')) && s.contains("git's lock:")
    });
    ui.send("d");
    ui.wait_for("the reclaim dialog", |s| {
        s.contains("Yes") && s.contains("No")
    });
    ui.send("y");
    wait_until("the lock to be removed", || !lock.exists());
    assert!(
        a.join(".git/index.lock").exists(),
        "only the lock the message is about"
    );
    ui.send("q");
    ui.wait_exit();
}

// ---------------------------------------------------------------------------------------------
// pacman

/// A pacman killed in a transaction leaves `db.lck` (empty, mode 0000): every later pacman
/// fails "unable to lock database ... you can remove .../db.lck", and with no package manager
/// running the answer proves it stale. Against a private root and database, never the
/// system's.
#[test]
fn pacman_unable_to_lock_database_proves_it_stale() {
    if !require("pacman") {
        return;
    }
    let env = Env::new();
    let root = env.path().join("root");
    let db = root.join("var/lib/pacman");
    for d in ["local", "sync"] {
        fs::create_dir_all(db.join(d)).unwrap();
    }
    fs::create_dir_all(root.join("var/cache/pacman/pkg")).unwrap();
    let conf = write(
        &env.path().join("pacman.conf"),
        "[options]\nArchitecture = auto\nSigLevel = Never\n",
    );
    let lock = write(&db.join("db.lck"), "");
    fs::set_permissions(&lock, fs::Permissions::from_mode(0o000)).unwrap();
    older_than_a_writers_shortest_hold(&lock);
    let message = {
        // pacman itself is a package manager: the tests that need none wait meanwhile.
        let _pacman = quiet::making(quiet::Fact::PackageManager);
        let mut c = Command::new("pacman");
        c.arg("--config")
            .arg(&conf)
            .arg("--root")
            .arg(&root)
            .arg("--dbpath")
            .arg(&db)
            .args(["-R", "locksmith-test-nothing"])
            .stdin(Stdio::null());
        printed(c)
    };
    assert!(message.contains("unable to lock database"), "{message}");
    let _no_package_manager = quiet::absent(quiet::Fact::PackageManager);
    if !quiet::none_running(quiet::Fact::PackageManager) {
        return;
    }
    let a = ask(&env, &message, env.path(), &[]);
    a.stale("pacman", &lock);
}

// ---------------------------------------------------------------------------------------------
// A Wayland compositor

/// A second Weston on the socket name of a running one: libwayland "unable to lock lockfile",
/// and the answer names the first.
#[test]
fn weston_unable_to_lock_lockfile_names_the_compositor() {
    if !require("weston") {
        return;
    }
    let env = Env::new();
    let runtime = env.path().join("run");
    fs::create_dir_all(&runtime).unwrap();
    fs::set_permissions(&runtime, fs::Permissions::from_mode(0o700)).unwrap();
    let weston = || {
        let mut c = Command::new("weston");
        c.args([
            "--backend=headless-backend.so",
            "--socket=wayland-locksmith",
            "--idle-time=0",
        ])
        .env("XDG_RUNTIME_DIR", &runtime)
        .env_remove("WAYLAND_DISPLAY")
        .env_remove("DISPLAY")
        .stdin(Stdio::null());
        c
    };
    let first = Group::spawn(weston().stdout(Stdio::null()).stderr(Stdio::null()));
    let lock = runtime.join("wayland-locksmith.lock");
    wait_until("Weston to lock its socket", || {
        fs::metadata(&lock)
            .is_ok_and(|m| snapshot().kernel_locked(locksmith::probe::FileKey::of(&m)))
    });
    let mut second = weston();
    second.arg("--idle-time=1");
    let message = printed(second);
    assert!(message.contains("unable to lock lockfile"), "{message}");
    let a = ask(&env, &message, env.path(), &[]);
    a.live("Wayland compositor", &lock, first.pid(), "weston");
}

/// Python's `lockfile` package held by one Python: another's `acquire` with a timeout raises
/// `LockTimeout` naming the path it locks, and the answer is the `PATH.lock` the first holds.
#[test]
fn python_lockfile_timeout_names_the_holder() {
    let py = Path::new("/usr/bin/python3");
    let has = Command::new(py)
        .args(["-c", "import lockfile.linklockfile"])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !require_that(
        has,
        "/usr/bin/python3 has no lockfile package (.ci/run installs python3-lockfile)",
    ) {
        return;
    }
    let env = Env::new();
    let state = env.path().join("state");
    let lock = env.path().join("state.lock");
    let mut c = Command::new(py);
    c.args([
        "-c",
        "import sys, time, lockfile.linklockfile as l\nl.LinkLockFile(sys.argv[1]).acquire()\ntime.sleep(600)\n",
    ])
    .arg(&state)
    .stdin(Stdio::null())
    .stdout(Stdio::null())
    .stderr(Stdio::null());
    let holder = Group::spawn(c);
    wait_until("python to take the lock", || lock.exists());
    let mut again = Command::new(py);
    again
        .args([
            "-c",
            "import sys, lockfile.linklockfile as l\nl.LinkLockFile(sys.argv[1]).acquire(timeout=0.5)\n",
        ])
        .arg(&state)
        .stdin(Stdio::null());
    let message = printed(again);
    assert!(message.contains("LockTimeout"), "{message}");
    let a = ask(&env, &message, env.path(), &[]);
    a.live("Python lockfile", &lock, holder.pid(), "python3");
}
