//! `locksmith --scan --format prometheus [--output FILE]`: the exposition is accepted by
//! Prometheus' own parser and linter (`promtool check metrics`) and by a real node_exporter's
//! textfile collector, hostile paths included; its values are those of the scan; the per-lock
//! series are bounded; `--output` replaces the file atomically, for every format.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::fs;
use std::io::{Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::util::*;

/// One sample of the exposition: name, labels (unescaped), value.
#[derive(Debug, Clone, PartialEq)]
struct Sample {
    name: String,
    labels: BTreeMap<String, String>,
    value: f64,
}

/// Reads the samples of a text exposition, strictly: a label value may only use the escapes
/// `\\`, `\"` and `\n`, and every line must be a comment or a whole sample.
fn samples(text: &str) -> Vec<Sample> {
    let mut out = Vec::new();
    for line in text.lines() {
        if line.starts_with('#') {
            continue;
        }
        let name_end = line
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
            .unwrap_or_else(|| panic!("no value: {line:?}"));
        let name = line[..name_end].to_string();
        let mut rest = &line[name_end..];
        let mut labels = BTreeMap::new();
        if let Some(r) = rest.strip_prefix('{') {
            rest = r;
            loop {
                if let Some(r) = rest.strip_prefix('}') {
                    rest = r;
                    break;
                }
                rest = rest.strip_prefix(',').unwrap_or(rest);
                let (key, r) = rest.split_once("=\"").expect("label=\"");
                let mut value = String::new();
                let mut chars = r.char_indices();
                let end = loop {
                    match chars.next().expect("closing quote") {
                        (i, '"') => break i,
                        (_, '\\') => match chars.next().expect("escape").1 {
                            '\\' => value.push('\\'),
                            '"' => value.push('"'),
                            'n' => value.push('\n'),
                            c => panic!("invalid escape \\{c} in {line:?}"),
                        },
                        (_, c) => value.push(c),
                    }
                };
                labels.insert(key.to_string(), value);
                rest = &r[end + 1..];
            }
        }
        let value = rest
            .strip_prefix(' ')
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or_else(|| panic!("bad value in {line:?}"));
        out.push(Sample {
            name,
            labels,
            value,
        });
    }
    out
}

fn find<'a>(all: &'a [Sample], name: &str, labels: &[(&str, &str)]) -> Vec<&'a Sample> {
    all.iter()
        .filter(|s| s.name == name)
        .filter(|s| {
            labels
                .iter()
                .all(|(k, v)| s.labels.get(*k).map(String::as_str) == Some(*v))
        })
        .collect()
}

fn value(all: &[Sample], name: &str, labels: &[(&str, &str)]) -> f64 {
    let found = find(all, name, labels);
    assert_eq!(found.len(), 1, "one {name}{labels:?} in {all:#?}");
    found[0].value
}

/// `promtool check metrics`: Prometheus' parser and its linter; both must be silent.
fn promtool_check(text: &str) {
    let mut child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success() && out.stdout.is_empty() && out.stderr.is_empty(),
        "promtool check metrics: {}{}\n{text}",
        stdout(&out),
        stderr(&out)
    );
}

/// A tree of locks: stale (dead PID, aged), live, foreign (another host), unknown (garbage),
/// and stale ones with hostile names.
struct Tree {
    env: Env,
    _owner: Guard,
    root: std::path::PathBuf,
    /// The age given to `old.pid`, in seconds.
    old_age: u64,
}

const HOSTILE: &[&[u8]] = &[
    b"quo\"te.pid",
    b"back\\slash.pid",
    b"new\nline.pid",
    b"bad\xff\xfeutf8.pid",
    b"esc\x1b[31m.pid",
];

/// The tree's stale pidfiles (the old and the young one, and those with hostile names) are
/// counted in `locksmith_locks`.
fn assert_stale_pidfiles_counted(all: &[Sample]) {
    assert_eq!(
        value(
            all,
            "locksmith_locks",
            &[("verdict", "stale"), ("dialect", "pidfile")]
        ),
        (2 + HOSTILE.len()) as f64
    );
}

fn tree() -> Tree {
    let env = Env::new();
    let root = env.path().join("root");
    fs::create_dir(&root).unwrap();
    let dead = dead_pid();
    fs::write(root.join("old.pid"), format!("{dead}\n")).unwrap();
    // Of this boot, so that their dead PIDs decide: an hour old (or as old as this boot
    // allows, still twice as old as the young one) and a minute old.
    let old_age = age_up_to(&root.join("old.pid"), 3600, 120);
    fs::write(root.join("young.pid"), format!("{dead}\n")).unwrap();
    age(&root.join("young.pid"), 60);
    let owner = sleeper();
    fs::write(root.join("live.pid"), format!("{}\n", owner.pid())).unwrap();
    fs::write(root.join("garbage.pid"), "not a pid\n").unwrap();
    // An emacs lock naming another host: foreign.
    std::os::unix::fs::symlink(
        "someone@far-away-host.4242:1700000000",
        root.join(".#notes.org"),
    )
    .unwrap();
    for name in HOSTILE {
        fs::write(root.join(OsStr::from_bytes(name)), format!("{dead}\n")).unwrap();
    }
    Tree {
        env,
        _owner: owner,
        root,
        old_age,
    }
}

#[test]
fn metrics_parse_and_carry_the_scan() {
    let t = tree();
    let out = t.env.prometheus(&[], &t.root);
    assert_eq!(
        out.status.code(),
        Some(1),
        "stale locks → 1: {}",
        stderr(&out)
    );
    let text = String::from_utf8(out.stdout.clone()).expect("the exposition is UTF-8");
    if require("promtool") {
        promtool_check(&text);
    }
    let all = samples(&text);

    // The counts agree with the JSON report of the same tree.
    let (report, _) = t.env.scan_json(&[&t.root]);
    for v in ["stale", "live", "foreign", "unknown", "free"] {
        let json = report.locks.iter().filter(|l| l.verdict == v).count();
        let metric: f64 = find(&all, "locksmith_locks", &[("verdict", v)])
            .iter()
            .map(|s| s.value)
            .sum();
        assert_eq!(metric as usize, json, "{v}");
    }
    assert_stale_pidfiles_counted(&all);
    assert_eq!(
        value(
            &all,
            "locksmith_locks",
            &[("verdict", "foreign"), ("dialect", "emacs")]
        ),
        1.0
    );
    // No zero for a verdict and dialect without locks; every verdict has its total, zero
    // included.
    assert!(
        find(&all, "locksmith_locks", &[("verdict", "free")]).is_empty(),
        "no sample for a pair without locks"
    );
    for v in ["stale", "live", "foreign", "unknown", "free"] {
        let json = report.locks.iter().filter(|l| l.verdict == v).count();
        assert_eq!(
            value(&all, "locksmith_locks_by_verdict", &[("verdict", v)]),
            json as f64,
            "{v}"
        );
    }

    // Ages: one series per stale, foreign or unknown lock, none for the live one.
    let ages = find(&all, "locksmith_lock_age_seconds", &[]);
    let root = t.root.to_str().unwrap();
    let age_of = |name: &str| {
        value(
            &all,
            "locksmith_lock_age_seconds",
            &[("path", &format!("{root}/{name}"))],
        )
    };
    let old = t.old_age as f64;
    assert!((old - 10.0..old + 100.0).contains(&age_of("old.pid")));
    assert!((50.0..200.0).contains(&age_of("young.pid")));
    assert!(age_of("garbage.pid") < 600.0);
    assert!(
        find(
            &all,
            "locksmith_lock_age_seconds",
            &[("path", &format!("{root}/live.pid"))]
        )
        .is_empty()
    );
    assert_eq!(ages.len(), 2 + HOSTILE.len() + 2);
    // Stale first, the oldest first.
    assert_eq!(ages[0].labels["path"], format!("{root}/old.pid"));
    assert!(
        ages[..2 + HOSTILE.len()]
            .iter()
            .all(|s| s.labels["verdict"] == "stale")
    );

    // Hostile names arrive as the table shows them: one line, escaped, valid UTF-8.
    let paths: Vec<&str> = ages.iter().map(|s| s.labels["path"].as_str()).collect();
    for expected in [
        "quo\"te.pid",
        "back\\\\slash.pid",
        "new\\nline.pid",
        "bad\\xff\\xfeutf8.pid",
        "esc\\x1b[31m.pid",
    ] {
        assert!(
            paths.contains(&format!("{root}/{expected}").as_str()),
            "{expected} in {paths:#?}"
        );
    }
    assert!(!text.contains('\x1b'));

    // The scan itself.
    assert!(value(&all, "locksmith_scan_entries", &[]) >= 9.0);
    assert_eq!(value(&all, "locksmith_scan_errors", &[]), 0.0);
    let duration = value(&all, "locksmith_scan_duration_seconds", &[]);
    assert!(duration > 0.0 && duration < 60.0);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    let when = value(&all, "locksmith_scan_timestamp_seconds", &[]);
    assert!(now - when >= 0.0 && now - when < 120.0, "{when} vs {now}");
    assert!(
        find(&all, "locksmith_reclaims", &[]).is_empty(),
        "no reclaim pass"
    );
    assert_eq!(
        value(
            &all,
            "locksmith_build_info",
            &[("version", env!("CARGO_PKG_VERSION"))]
        ),
        1.0
    );
}

#[test]
fn age_series_are_bounded_and_the_rest_counted() {
    let t = tree();
    let out = t
        .env
        .prometheus(&[OsStr::new("--max-lock-series"), OsStr::new("3")], &t.root);
    let text = stdout(&out);
    if require("promtool") {
        promtool_check(&text);
    }
    let all = samples(&text);
    let ages = find(&all, "locksmith_lock_age_seconds", &[]);
    assert_eq!(ages.len(), 3);
    assert_eq!(
        ages[0].labels["path"],
        format!("{}/old.pid", t.root.display()),
        "the oldest stale lock always has its series"
    );
    let stale = 2 + HOSTILE.len();
    assert_eq!(
        value(&all, "locksmith_lock_age_omitted", &[("verdict", "stale")]),
        (stale - 3) as f64
    );
    assert_eq!(
        value(
            &all,
            "locksmith_lock_age_omitted",
            &[("verdict", "foreign")]
        ),
        1.0
    );
    assert_eq!(
        value(
            &all,
            "locksmith_lock_age_omitted",
            &[("verdict", "unknown")]
        ),
        1.0
    );
}

#[test]
fn reclaims_are_counted() {
    let env = Env::new();
    let root = env.root_with_a_dead_pidfile();
    let out = env.prometheus(&[OsStr::new("--reclaim")], &root);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!root.join("gone.pid").exists());
    let all = samples(&stdout(&out));
    assert_eq!(
        value(&all, "locksmith_reclaims", &[("outcome", "removed")]),
        1.0
    );
    assert_eq!(
        value(&all, "locksmith_reclaims", &[("outcome", "kept")]),
        0.0
    );
    if require("promtool") {
        promtool_check(&stdout(&out));
    }
}

/// Runs `locksmith ARGS` with umask 022, as a service would.
fn run_umask_022(env: &Env, args: &[&OsStr]) -> std::process::Output {
    let mut cmd = env.cmd(args);
    // SAFETY: umask is async-signal-safe and touches no memory.
    unsafe {
        cmd.pre_exec(|| {
            libc::umask(0o022);
            Ok(())
        });
    }
    run_bounded(cmd, DEADLINE)
}

#[test]
fn output_replaces_the_file_atomically_for_every_format() {
    let t = tree();
    let dir = t.env.path().join("textfile");
    fs::create_dir(&dir).unwrap();
    let file = dir.join("locksmith.prom");
    fs::write(&file, "old complete content\n").unwrap();
    // A reader that opened the old file keeps reading the old, whole content: the new one is
    // a new inode renamed over the path, never the old file truncated and rewritten.
    let mut reader = fs::File::open(&file).unwrap();
    let old_ino = fs::metadata(&file).unwrap().ino();

    let out = run_umask_022(
        &t.env,
        &[
            "--scan".as_ref(),
            "--format".as_ref(),
            "prometheus".as_ref(),
            "--output".as_ref(),
            file.as_os_str(),
            t.root.as_os_str(),
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(out.stdout.is_empty(), "the report goes to the file only");
    let meta = fs::metadata(&file).unwrap();
    assert_ne!(meta.ino(), old_ino, "renamed into place");
    assert_eq!(
        meta.permissions().mode() & 0o777,
        0o644,
        "readable by a collector"
    );
    let mut old = String::new();
    reader.read_to_string(&mut old).unwrap();
    assert_eq!(old, "old complete content\n");
    let text = fs::read_to_string(&file).unwrap();
    assert!(text.ends_with("\n") && text.contains("locksmith_scan_timestamp_seconds"));
    if require("promtool") {
        promtool_check(&text);
    }
    let names: Vec<_> = fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["locksmith.prom"], "no temporary file left behind");

    // JSON and the table too; a relative FILE is relative to the working directory.
    let out = t.env.scan(&["--json", "--output", "report.json"], &t.root);
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    let doc: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(t.env.path().join("report.json")).unwrap())
            .unwrap();
    validate(&doc);
    let out = t.env.scan(
        &[
            "--format",
            "table",
            "--color",
            "always",
            "--output",
            "report.txt",
        ],
        &t.root,
    );
    assert_eq!(out.status.code(), Some(1));
    let table = fs::read_to_string(t.env.path().join("report.txt")).unwrap();
    assert!(table.starts_with("VERDICT") && table.contains("old.pid"));
    assert!(!table.contains('\x1b'), "a file gets no color");
}

#[test]
fn output_failures_are_fatal_and_leave_nothing_behind() {
    let t = tree();
    let missing = t.env.path().join("no-such-dir/locksmith.prom");
    let out = t
        .env
        .prometheus(&[OsStr::new("--output"), missing.as_os_str()], &t.root);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("cannot write the report to") && err.contains("no-such-dir/locksmith.prom"),
        "{err}"
    );

    // A directory in the way: the rename fails, the temporary file is removed.
    let dir = t.env.path().join("out");
    fs::create_dir_all(dir.join("locksmith.prom")).unwrap();
    let out = t.env.prometheus(
        &[
            OsStr::new("--output"),
            dir.join("locksmith.prom").as_os_str(),
        ],
        &t.root,
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let names: Vec<_> = fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["locksmith.prom"]);
}

#[test]
fn json_flag_and_format_flag() {
    let t = tree();
    let a = t.env.scan(&["--json"], &t.root);
    let b = t.env.scan(&["--format", "json"], &t.root);
    let (ra, rb) = (parse_report(&a), parse_report(&b));
    assert_eq!(ra.locks.len(), rb.locks.len());
    let both = t.env.scan(&["--json", "--format", "table"], &t.root);
    assert_eq!(both.status.code(), Some(2));
    assert!(
        stderr(&both).contains("cannot be used with"),
        "{}",
        stderr(&both)
    );
    let no_scan = t.env.run(["--format", "prometheus"]);
    assert_eq!(no_scan.status.code(), Some(2), "--format needs --scan");
}

/// A real node_exporter (Debian's prometheus-node-exporter) reads the file through its
/// textfile collector and serves our metrics without a scrape error.
#[test]
fn node_exporter_serves_the_metrics_file() {
    let exporter = "prometheus-node-exporter";
    if !require(exporter) {
        return;
    }
    let t = tree();
    let dir = t.env.path().join("textfile");
    fs::create_dir(&dir).unwrap();
    let out = t.env.prometheus(
        &[
            OsStr::new("--output"),
            dir.join("locksmith.prom").as_os_str(),
        ],
        &t.root,
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));

    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let _exporter = Guard::spawn(
        Command::new(exporter)
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .arg("--collector.disable-defaults")
            .arg("--collector.textfile")
            .arg(format!("--collector.textfile.directory={}", dir.display()))
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    );
    let body = wait_for("node_exporter to serve /metrics", || {
        let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
        s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
        s.write_all(b"GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n")
            .ok()?;
        let mut body = String::new();
        s.read_to_string(&mut body).ok()?;
        body.contains("node_textfile_scrape_error").then_some(body)
    });
    let (_, body) = body.split_once("\r\n\r\n").unwrap();
    let all = samples(body);
    assert_eq!(
        value(&all, "node_textfile_scrape_error", &[]),
        0.0,
        "{body}"
    );
    assert_stale_pidfiles_counted(&all);
    let root = t.root.to_str().unwrap();
    assert_eq!(
        find(
            &all,
            "locksmith_lock_age_seconds",
            &[("path", &format!("{root}/new\\nline.pid"))]
        )
        .len(),
        1,
        "{body}"
    );
}
