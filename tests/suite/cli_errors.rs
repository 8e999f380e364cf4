//! What the command line says when something is wrong, and what it completes: `--scan --json`
//! prints a report with the error in it on a fatal error (a report to the schema, and its
//! `$defs/fatal_error`), a bad or misplaced `--interval` is refused, a permission error comes
//! with a hint naming the path, its owner, its mode and the right this user lacks (locksmith run
//! as uid 65534 via `setpriv`), a root that cannot be read says why, and the bash completion
//! offers paths, not `restore`, where a PATH goes (the real script, sourced in bash).

use std::os::unix::fs::PermissionsExt;
use std::process::{Command, Stdio};

use crate::util::{self, DEADLINE, Env, assert_code, require, stderr, stdout};

/// A fatal error's document is a report (of no lock) and has the error: it validates against
/// the report's schema and its `$defs/fatal_error`.
fn validate_fatal(doc: &serde_json::Value) {
    util::validate(doc);
    let schema = util::schema();
    let fatal = &schema["$defs"]["fatal_error"];
    assert!(fatal.is_object(), "the schema defines fatal_error");
    let validator = jsonschema::validator_for(fatal).expect("fatal_error compiles");
    let errors: Vec<String> = validator.iter_errors(doc).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:?}\n{doc:#}");
}

#[test]
fn a_fatal_error_of_scan_json_is_a_json_document_too() {
    let env = Env::new();
    let bad = env.path().join("bad.json");
    std::fs::write(&bad, "{").unwrap();
    let out = env.run([
        "--scan".as_ref(),
        "--json".as_ref(),
        "--config".as_ref(),
        bad.as_os_str(),
        env.path().as_os_str(),
    ]);
    assert_code(&out, 2);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("stdout is JSON ({e}): {}", stdout(&out)));
    validate_fatal(&doc);
    let message = doc["error"]["message"].as_str().unwrap();
    assert!(message.contains("bad configuration file"), "{doc}");
    assert!(stderr(&out).contains(message), "the same on stderr");
    assert_eq!(doc["exit_status"], 2);
    assert_eq!(doc["locks"], serde_json::json!([]));
    // The table prints nothing on stdout.
    let table = env.run([
        "--scan".as_ref(),
        "--config".as_ref(),
        bad.as_os_str(),
        env.path().as_os_str(),
    ]);
    assert_code(&table, 2);
    assert!(table.stdout.is_empty());
}

#[test]
fn a_bad_or_misplaced_interval_is_refused() {
    let env = Env::new();
    for args in [
        &["--scan", "--interval", "0", "."][..],
        &["--scan", "--interval=-1", "."],
        &["--scan", "--interval", "nan", "."],
        &["--scan", "--interval", "5", "."],
    ] {
        let out = env.run(args);
        assert_code(&out, 2);
        assert!(stderr(&out).contains("--interval"), "{args:?}: {out:?}");
        assert!(out.stdout.is_empty());
    }
    let out = env.run(["--scan", "--interval", "0", "."]);
    assert!(
        stderr(&out).contains("at least 0.1"),
        "says what is wanted: {out:?}"
    );
}

#[test]
fn a_permission_error_names_the_path_its_owner_and_what_to_do() {
    if !util::can_run_as_nobody() {
        return;
    }
    let env = Env::new();
    std::fs::set_permissions(env.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let private = env.path().join("private.json");
    std::fs::write(&private, "{}").unwrap();
    std::fs::set_permissions(&private, std::fs::Permissions::from_mode(0o600)).unwrap();
    let mut c = env.cmd_as_nobody(["--scan", "--json", "--config"]);
    c.arg(&private).arg(env.path());
    let out = util::run_bounded(c, DEADLINE);
    assert_code(&out, 2);
    let err = stderr(&out);
    let hint = err
        .lines()
        .find(|l| l.starts_with("locksmith: hint: "))
        .unwrap_or_else(|| panic!("a hint: {err}"));
    let shown = private.to_str().unwrap();
    assert!(
        hint.contains(&format!("{shown} belongs to root (uid 0), mode 600"))
            && hint.contains("(uid 65534)")
            && hint.contains("run as its owner or as root"),
        "{hint}"
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    validate_fatal(&doc);
    assert!(
        doc["error"]["hint"].as_str().unwrap().contains(shown),
        "{doc}"
    );
}

#[test]
fn a_root_that_cannot_be_read_says_why_and_what_to_do() {
    if !util::can_run_as_nobody() {
        return;
    }
    let env = Env::new();
    std::fs::set_permissions(env.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let closed = env.path().join("closed");
    std::fs::create_dir_all(closed.join("inner")).unwrap();
    std::fs::set_permissions(&closed, std::fs::Permissions::from_mode(0o700)).unwrap();
    let inner = closed.join("inner");
    // The table: the root's error, then why (whose directory, its mode, the right missing)
    // and what to do, then the fatal line.
    let mut c = env.cmd_as_nobody(["--scan"]);
    c.arg(&inner);
    let out = util::run_bounded(c, DEADLINE);
    assert_code(&out, 2);
    assert!(out.stdout.is_empty());
    let err = stderr(&out);
    let hint = format!(
        "locksmith: hint: the directory {} belongs to root (uid 0), mode 700, and this user, \
         nobody (uid 65534), has no search (x) right on it (so nothing below it, {}, can be \
         reached): run as its owner or as root, or give the right (chmod o+x {})",
        closed.display(),
        inner.display(),
        closed.display()
    );
    let lines: Vec<&str> = err.lines().collect();
    assert!(
        lines[0].starts_with(&format!("locksmith: {}: ", inner.display()))
            && lines[0].contains("Permission denied"),
        "{err}"
    );
    assert_eq!(lines[1], hint, "{err}");
    assert!(lines[2].contains("no root could be read"), "{err}");
    // The JSON: a report of no lock, the root's error in its errors, the error and the hint.
    let mut c = env.cmd_as_nobody(["--scan", "--json"]);
    c.arg(&inner);
    let out = util::run_bounded(c, DEADLINE);
    assert_code(&out, 2);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    validate_fatal(&doc);
    assert_eq!(doc["errors"][0]["path"], inner.to_str().unwrap());
    assert_eq!(doc["roots"][0], inner.to_str().unwrap());
    assert!(
        doc["error"]["hint"]
            .as_str()
            .unwrap()
            .contains("has no search (x) right"),
        "{doc}"
    );
    // A directory it may enter but not list: the read right is what is missing.
    std::fs::set_permissions(&closed, std::fs::Permissions::from_mode(0o711)).unwrap();
    std::fs::set_permissions(&inner, std::fs::Permissions::from_mode(0o711)).unwrap();
    let mut c = env.cmd_as_nobody(["--scan"]);
    c.arg(&inner);
    let out = util::run_bounded(c, DEADLINE);
    assert_code(&out, 2);
    assert!(
        stderr(&out).contains(&format!(
            "the directory {} belongs to root (uid 0), mode 711, and this user, nobody (uid \
             65534), has no read (r) right on it: run as its owner or as root, or give the \
             right (chmod o+r {})",
            inner.display(),
            inner.display()
        )),
        "{}",
        stderr(&out)
    );
}

/// What the bash completion offers for the words `words` (the last one being completed).
fn bash_completes(env: &Env, script: &std::path::Path, words: &[&str]) -> Vec<String> {
    let quoted: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
    let prog = format!(
        "source '{}'; compopt() {{ :; }}; COMP_WORDS=({}); COMP_CWORD={}; \
         _locksmith locksmith \"${{COMP_WORDS[-1]}}\" \"${{COMP_WORDS[-2]}}\"; \
         printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        script.display(),
        quoted.join(" "),
        words.len() - 1
    );
    let mut c = Command::new("bash");
    c.args(["--norc", "--noprofile", "-c", &prog])
        .current_dir(env.path())
        .stdin(Stdio::null());
    let out = util::run_bounded(c, DEADLINE);
    assert!(out.status.success(), "{out:?}");
    stdout(&out).lines().map(String::from).collect()
}

#[test]
fn bash_completes_paths_where_a_path_goes_and_a_subcommand_only_first() {
    if !require("bash") {
        return;
    }
    let env = Env::new();
    std::fs::create_dir(env.path().join("root")).unwrap();
    let out = env.run(["completions", "bash"]);
    assert_code(&out, 0);
    let script = env.path().join("locksmith.bash");
    std::fs::write(&script, &out.stdout).unwrap();

    let after_scan = bash_completes(&env, &script, &["locksmith", "--scan", "r"]);
    assert_eq!(after_scan, ["root"], "a path, not `restore`");
    let after_path = bash_completes(&env, &script, &["locksmith", "--scan", "root", "r"]);
    assert_eq!(after_path, ["root"]);
    let first = bash_completes(&env, &script, &["locksmith", "r"]);
    assert!(
        first.contains(&"restore".to_string()) && first.contains(&"root".to_string()),
        "the first word may be either: {first:?}"
    );
    let option = bash_completes(&env, &script, &["locksmith", "--scan", "--conf"]);
    assert_eq!(option, ["--config"]);
}

/// The zsh completion in a real interactive zsh (driven through `zpty`): what a Tab after
/// each of `lines` lists, in a directory holding `root/` and `rx/`. Each wait is for a pattern,
/// bounded by [`DEADLINE`].
fn zsh_completes(env: &Env, functions: &std::path::Path, lines: &[&str]) -> Vec<String> {
    let mut prog = format!(
        r#"zmodload zsh/zpty
zpty z zsh -f -i
zpty -w z "fpath=('{}' \$fpath); autoload -U compinit; compinit -u; PS1='%% '; print RE''ADY"
zpty -r z out '*READY*'
"#,
        functions.display()
    );
    for line in lines {
        prog.push_str(&format!(
            r#"zpty -w -n z '{line}'$'\t'
zpty -r z out '*rx/*'
print -r -- "=== $out"
zpty -w -n z $'\x15'
zpty -w z "print DO''NE"
zpty -r z out '*DONE*'
"#
        ));
    }
    prog.push_str("zpty -d z\n");
    let mut c = Command::new("zsh");
    c.args(["-f", "-c", &prog])
        .current_dir(env.path())
        .stdin(Stdio::null());
    let out = util::run_bounded(c, DEADLINE);
    assert!(out.status.success(), "{out:?}");
    stdout(&out)
        .split("=== ")
        .skip(1)
        .map(String::from)
        .collect()
}

#[test]
fn zsh_completes_paths_after_an_option_or_a_path_and_a_subcommand_only_first() {
    if !require("zsh") {
        return;
    }
    let env = Env::new();
    for d in ["root", "rx"] {
        std::fs::create_dir(env.path().join(d)).unwrap();
    }
    let out = env.run(["completions", "zsh"]);
    assert_code(&out, 0);
    let functions = env.path().join("functions");
    std::fs::create_dir(&functions).unwrap();
    std::fs::write(functions.join("_locksmith"), &out.stdout).unwrap();
    let listed = zsh_completes(
        &env,
        &functions,
        &[
            "locksmith --scan r",
            "locksmith --scan root r",
            "locksmith r",
        ],
    );
    assert_eq!(listed.len(), 3, "{listed:?}");
    for (i, what) in ["after --scan", "after a PATH"].iter().enumerate() {
        assert!(
            listed[i].contains("root/") && !listed[i].contains("restore"),
            "{what}: paths only: {:?}",
            listed[i]
        );
    }
    assert!(
        listed[2].contains("restore") && listed[2].contains("root/"),
        "the first word may be either: {:?}",
        listed[2]
    );
}
