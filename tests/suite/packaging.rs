//! What ships beside the binary, checked with the programs that consume it: the systemd units
//! (`systemd-analyze verify` and `security`, and the capability set they grant, tried with
//! `setpriv`), the alerting rules (`promtool check rules` and `promtool test rules`, against
//! metric names the binary really writes), the completion scripts (loaded by a real bash, as
//! bash-completion would find them after the documented copy step), the man pages
//! (`man -l`), and the help texts.

use std::ffi::OsStr;
use std::fs;
use std::os::unix::fs::{PermissionsExt, chown};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use crate::util::*;

fn assets() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("assets")
}

fn run(cmd: &mut Command) -> Output {
    run_bounded(std::mem::replace(cmd, Command::new("true")), DEADLINE)
}

const UNITS: [&str; 3] = [
    "locksmith-reclaim.service",
    "locksmith-metrics.service",
    "locksmith-metrics.timer",
];

/// The units in a temp dir, with ExecStart pointing at the binary under test (verify checks
/// that the program exists and is executable).
fn units_under_test() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for unit in UNITS {
        let text = fs::read_to_string(assets().join("systemd").join(unit)).unwrap();
        let text = text.replace("/usr/bin/locksmith", BIN);
        fs::write(dir.path().join(unit), text).unwrap();
    }
    dir
}

#[test]
fn systemd_units_verify_and_are_hardened() {
    if !require("systemd-analyze") {
        return;
    }
    let dir = units_under_test();
    let out = run(Command::new("systemd-analyze")
        .args(["verify", "--man=no"])
        .args(UNITS.map(|u| dir.path().join(u))));
    // verify only warns (exit 0) about unknown keys and bad values: both must be silent.
    assert!(
        out.status.success() && out.stderr.is_empty() && out.stdout.is_empty(),
        "systemd-analyze verify:\n{}{}",
        stdout(&out),
        stderr(&out)
    );

    // The sandboxes, as systemd rates them (0 = fully locked down, 10 = none).
    for unit in &UNITS[..2] {
        let out = run(Command::new("systemd-analyze")
            .args(["security", "--offline=true", "--no-pager"])
            .arg(dir.path().join(unit)));
        let text = format!("{}{}", stdout(&out), stderr(&out));
        let level: f64 = text
            .lines()
            .find_map(|l| {
                l.split_once("Overall exposure level for ")?
                    .1
                    .split_once(": ")
            })
            .and_then(|(_, rest)| rest.split_whitespace().next()?.parse().ok())
            .unwrap_or_else(|| panic!("no exposure level for {unit}:\n{text}"));
        assert!(level <= 2.5, "{unit} is exposed at {level}:\n{text}");
    }

    // What the units promise in their comments.
    let reclaim = fs::read_to_string(assets().join("systemd/locksmith-reclaim.service")).unwrap();
    for line in [
        "ExecStart=/usr/bin/locksmith --scan --reclaim",
        "Before=basic.target",
        "DefaultDependencies=no",
        "StateDirectory=locksmith",
        "Environment=XDG_CONFIG_HOME=/etc XDG_STATE_HOME=/var/lib",
        "PrivateTmp=no",
        "NoNewPrivileges=yes",
        "ProtectSystem=full",
    ] {
        assert!(
            reclaim.lines().any(|l| l.starts_with(line)),
            "reclaim unit: {line}"
        );
    }
    let metrics = fs::read_to_string(assets().join("systemd/locksmith-metrics.service")).unwrap();
    for line in [
        "ProtectSystem=strict",
        "PrivateTmp=no",
        "NoNewPrivileges=yes",
    ] {
        assert!(metrics.lines().any(|l| l == line), "metrics unit: {line}");
    }
    assert!(metrics.contains("--format prometheus"));
}

/// The capabilities a unit keeps (`CapabilityBoundingSet=`), as a setpriv argument.
fn bounding_set(unit: &str) -> String {
    let text = fs::read_to_string(assets().join("systemd").join(unit)).unwrap();
    let caps = text
        .lines()
        .find_map(|l| l.strip_prefix("CapabilityBoundingSet="))
        .unwrap_or_else(|| panic!("{unit} sets no CapabilityBoundingSet"));
    let mut arg = "-all".to_string();
    for cap in caps.split_whitespace() {
        arg.push_str(",+");
        arg.push_str(&cap.trim_start_matches("CAP_").to_lowercase());
    }
    arg
}

/// The capability sets of the units are enough: as root limited to them (and with no new
/// privileges), the scan still reads another user's lock files and processes and judges them
/// as a full root does, and reclaim still removes another user's stale lock from a sticky
/// directory it does not own. Without them (the control), it cannot.
#[test]
fn the_units_capabilities_are_enough() {
    if !require_that(
        rustix::process::geteuid().is_root(),
        "needs root (to run as root with a reduced capability set)",
    ) || !require("setpriv")
    {
        return;
    }
    let nobody = 65534;
    let setup = || {
        let env = Env::new();
        // Like /tmp, but owned by someone else: only the file's owner (or CAP_FOWNER) may
        // remove a file from it.
        let dir = env.path().join("sticky");
        fs::create_dir(&dir).unwrap();
        chown(&dir, Some(nobody - 1), Some(nobody - 1)).unwrap();
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o1777)).unwrap();
        let stale = dir.join("gone.pid");
        fs::write(&stale, format!("{}\n", dead_pid())).unwrap();
        // Owned by nobody and unreadable to others.
        let owner = Guard::spawn(
            Command::new("setpriv")
                .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
                .args(["sleep", "600"])
                .stdin(Stdio::null()),
        );
        let live = dir.join("alive.pid");
        fs::write(&live, format!("{}\n", owner.pid())).unwrap();
        for f in [&stale, &live] {
            chown(f, Some(nobody), Some(nobody)).unwrap();
            fs::set_permissions(f, fs::Permissions::from_mode(0o600)).unwrap();
        }
        wait_for("the owner to run as nobody", || {
            let status = fs::read_to_string(format!("/proc/{}/status", owner.pid())).ok()?;
            status
                .lines()
                .any(|l| l.starts_with("Uid:") && l.contains("65534"))
                .then_some(())
        });
        (env, dir, stale, live, owner)
    };
    let limited = |env: &Env, caps: &str, args: &[&OsStr]| {
        let cmd = env.cmd(args);
        let program = cmd.get_program().to_owned();
        let mut wrapped = Command::new("setpriv");
        wrapped
            .arg(format!("--bounding-set={caps}"))
            .arg("--inh-caps=-all")
            .arg("--no-new-privs")
            .arg("--")
            .arg(program)
            .args(cmd.get_args());
        for (k, v) in cmd.get_envs() {
            match v {
                Some(v) => wrapped.env(k, v),
                None => wrapped.env_remove(k),
            };
        }
        wrapped.current_dir(env.path()).stdin(Stdio::null());
        run_bounded(wrapped, DEADLINE)
    };

    // The metrics unit: judges as a full root would.
    let (env, dir, stale, live, owner) = setup();
    let full =
        parse_report(&env.run([OsStr::new("--scan"), OsStr::new("--json"), dir.as_os_str()]));
    let out = limited(
        &env,
        &bounding_set("locksmith-metrics.service"),
        &["--scan".as_ref(), "--json".as_ref(), dir.as_os_str()],
    );
    let reduced = parse_report(&out);
    for path in [&stale, &live] {
        let (a, b) = (full.expect_lock(path), reduced.expect_lock(path));
        assert_eq!(
            (&a.verdict, &a.evidence),
            (&b.verdict, &b.evidence),
            "{path:?}"
        );
    }
    assert_eq!(reduced.expect_lock(&stale).verdict, "stale");
    let l = reduced.expect_lock(&live);
    assert_eq!(l.verdict, "live", "{:?}", l.evidence);
    assert_eq!(l.process.as_ref().map(|p| p.pid), Some(owner.pid() as i64));

    // Control: with no capability, another user's 0600 lock file cannot even be read.
    let out = limited(
        &env,
        "-all",
        &["--scan".as_ref(), "--json".as_ref(), dir.as_os_str()],
    );
    let none = parse_report(&out);
    assert_ne!(
        none.lock(&stale).map(|l| l.verdict.as_str()),
        Some("stale"),
        "without capabilities the file is unreadable, so the test proves something"
    );

    // The reclaim unit: removes the stale lock, keeps the live one.
    let out = limited(
        &env,
        &bounding_set("locksmith-reclaim.service"),
        &["--scan".as_ref(), "--reclaim".as_ref(), dir.as_os_str()],
    );
    assert_code(&out, 0);
    assert!(!stale.exists() && live.exists());
    assert_eq!(env.journal().len(), 1);

    // Control: without CAP_FOWNER/CAP_DAC_OVERRIDE the sticky directory keeps the file.
    let (env, dir, stale, _live, _owner) = setup();
    let caps = bounding_set("locksmith-reclaim.service")
        .replace(",+fowner", "")
        .replace(",+dac_override", "");
    let out = limited(
        &env,
        &caps,
        &["--scan".as_ref(), "--reclaim".as_ref(), dir.as_os_str()],
    );
    assert_code(&out, 1);
    assert!(stale.exists());
}

#[test]
fn alerting_rules_check_and_pass_their_unit_tests() {
    if !require("promtool") {
        return;
    }
    let dir = assets().join("prometheus");
    let out = run(Command::new("promtool")
        .args(["check", "rules"])
        .arg(dir.join("locksmith.rules.yml")));
    assert!(
        out.status.success() && stdout(&out).contains("SUCCESS: 3 rules found"),
        "{}{}",
        stdout(&out),
        stderr(&out)
    );
    let out = run(Command::new("promtool")
        .args(["test", "rules", "locksmith.rules.test.yml"])
        .current_dir(&dir));
    assert!(
        out.status.success() && stdout(&out).contains("SUCCESS"),
        "{}{}",
        stdout(&out),
        stderr(&out)
    );
}

/// Every `locksmith_*` name in the rules (and in their unit tests' input) is a metric the
/// binary writes, with the labels the rules use.
#[test]
fn alerting_rules_use_metrics_the_binary_writes() {
    let env = Env::new();
    let root = env.root_with_a_dead_pidfile();
    let out = env.prometheus(&[], &root);
    let exposition = stdout(&out);
    let written: Vec<&str> = exposition
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert!(
        exposition
            .contains(r#"locksmith_lock_age_seconds{verdict="stale",dialect="pidfile",path="#)
    );
    for file in ["locksmith.rules.yml", "locksmith.rules.test.yml"] {
        let text = fs::read_to_string(assets().join("prometheus").join(file)).unwrap();
        let mut used = 0;
        for (i, _) in text.match_indices("locksmith_") {
            let name: String = text[i..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            // Unit and file names are not metrics.
            if text[..i].ends_with(['-', '/']) || text[i + name.len()..].starts_with('.') {
                continue;
            }
            assert!(
                written.contains(&name.as_str()),
                "{file}: {name} is not written"
            );
            used += 1;
        }
        assert!(used >= 3, "{file} uses the metrics");
    }
}

/// The generated completion script, loaded by a real bash the way bash-completion loads it
/// once `assets/share/` is copied to a `share/` directory, completes options, values and
/// subcommands.
#[test]
fn bash_completes_from_the_installed_script() {
    if !require("bash") {
        return;
    }
    let share = assets().join("share");
    let script = share.join("bash-completion/completions/locksmith");
    let generated = Env::new().run(["completions", "bash"]);
    assert_eq!(generated.status.code(), Some(0));
    assert_eq!(
        generated.stdout,
        fs::read(&script).unwrap(),
        "`locksmith completions bash` is the shipped script"
    );

    // Loading: by bash-completion from $XDG_DATA_HOME when it is installed, else directly.
    let framework = Path::new("/usr/share/bash-completion/bash_completion");
    let load = if framework.exists() {
        format!(". {} && __load_completion locksmith", framework.display())
    } else {
        skip("bash-completion is not installed: the script is sourced directly, not loaded by it");
        format!(". '{}'", script.display())
    };
    let complete = |line: &str| -> Vec<String> {
        let program = format!(
            r#"{load} || exit 3
spec=$(complete -p locksmith) || exit 4
fn=$(sed -E 's/.* -F ([^ ]+) .*/\1/' <<< "$spec")
COMP_LINE="$1"; COMP_POINT=${{#COMP_LINE}}
read -ra COMP_WORDS <<< "$COMP_LINE"
[[ $COMP_LINE == *" " ]] && COMP_WORDS+=("")
COMP_CWORD=$(( ${{#COMP_WORDS[@]}} - 1 ))
COMPREPLY=()
"$fn" locksmith "${{COMP_WORDS[COMP_CWORD]}}" "${{COMP_WORDS[COMP_CWORD-1]}}"
printf '%s\n' "${{COMPREPLY[@]}}"
"#
        );
        let out = run(Command::new("bash")
            .args(["--norc", "--noprofile", "-c", &program, "bash", line])
            .env("XDG_DATA_HOME", &share)
            .env_remove("BASH_COMPLETION_USER_DIR")
            .stdin(Stdio::null()));
        assert!(
            out.status.success(),
            "{line}: {}{}",
            stdout(&out),
            stderr(&out)
        );
        stdout(&out)
            .lines()
            .map(|l| l.trim().to_string())
            .filter(|l| !l.is_empty())
            .collect()
    };
    assert_eq!(complete("locksmith --sc"), ["--scan"]);
    let formats = complete("locksmith --scan --format ");
    assert_eq!(formats, ["table", "json", "prometheus"]);
    assert_eq!(complete("locksmith lock --ti"), ["--timeout"]);
    let shells = complete("locksmith completions ");
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        assert!(shells.iter().any(|s| s == shell), "{shell} in {shells:?}");
    }
    let top = complete("locksmith ");
    for word in ["lock", "completions", "--scan", "--max-lock-series"] {
        assert!(top.iter().any(|s| s == word), "{word} in {top:?}");
    }
}

#[test]
fn other_shells_scripts_are_generated_and_zsh_parses_its_own() {
    let env = Env::new();
    for shell in ["zsh", "fish", "elvish", "powershell"] {
        let out = env.run(["completions", shell]);
        assert_eq!(out.status.code(), Some(0), "{shell}");
        assert!(stdout(&out).contains("--scan"), "{shell}");
    }
    let bad = env.run(["completions", "tcsh"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(stderr(&bad).contains("possible values"));
    let zsh = assets().join("share/zsh/site-functions/_locksmith");
    assert_eq!(
        env.run(["completions", "zsh"]).stdout,
        fs::read(&zsh).unwrap()
    );
    if require("zsh") {
        let out = run(Command::new("zsh").arg("-n").arg(&zsh));
        assert!(out.status.success(), "zsh -n: {}", stderr(&out));
    }
}

#[test]
fn man_pages_render() {
    if !require("man") {
        return;
    }
    let dir = assets().join("share/man/man1");
    let mut pages: Vec<String> = fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    pages.sort();
    assert!(pages.len() >= 3, "{pages:?}");
    let musts: &[(&str, &[&str])] = &[
        (
            "locksmith.1",
            &[
                "SYNOPSIS",
                "--format",
                "EXAMPLES",
                "EXIT STATUS",
                "FILES",
                "locksmith-lock(1)",
            ][..],
        ),
        (
            "locksmith-lock.1",
            &["--timeout", "EXIT STATUS", "75", "126", "127", "128+N"][..],
        ),
        ("locksmith-completions.1", &["bash", "EXAMPLES"][..]),
    ];
    for (page, _) in musts {
        assert!(pages.iter().any(|p| p == page), "{page} in {pages:?}");
    }
    for page in &pages {
        let must = musts
            .iter()
            .find(|(p, _)| p == page)
            .map_or(&["NAME", "SYNOPSIS"][..], |(_, m)| *m);
        let out = run(Command::new("man")
            .args(["--warnings", "-E", "UTF-8", "-l"])
            .arg(dir.join(page))
            .env("MANWIDTH", "80")
            .env("MANPAGER", "cat")
            .env("PAGER", "cat"));
        assert!(out.status.success(), "{page}: {}", stderr(&out));
        assert!(out.stderr.is_empty(), "{page} warns: {}", stderr(&out));
        // Piped, man writes plain text (no overstrike).
        let text = stdout(&out);
        for word in must {
            assert!(text.contains(word), "{page} lacks {word}:\n{text}");
        }
    }
}

#[test]
fn help_names_the_exit_statuses_and_shows_examples() {
    let env = Env::new();
    let lock = stdout(&env.run(["lock", "--help"]));
    for status in ["75", "126", "127", "128+N", "COMMAND's", "Examples:"] {
        assert!(lock.contains(status), "lock --help lacks {status}:\n{lock}");
    }
    let short = stdout(&env.run(["lock", "-h"]));
    assert!(
        short.contains("75") && short.contains("Exit status"),
        "{short}"
    );

    let help = stdout(&env.run(["--help"]));
    for example in [
        "\n    locksmith\n",
        "locksmith --scan /srv",
        "locksmith --scan --json",
        "locksmith --scan --reclaim\n",
        "--dry-run\n",
        "--format prometheus",
        "locksmith lock ",
        "locksmith completions bash",
    ] {
        assert!(help.contains(example), "--help lacks {example:?}:\n{help}");
    }
    assert!(help.contains("Exit status:"));
    let completions = stdout(&env.run(["completions", "--help"]));
    assert!(completions.contains("Examples:"));
}
