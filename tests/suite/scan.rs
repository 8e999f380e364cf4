//! The scanner on real trees in temporary directories: configuration layers, the walker
//! (excludes, depth, symlinks, pseudo file systems, errors, FIFOs, kernel locks, deep and hostile
//! trees), dialect choice, and the promise that a scan modifies nothing.
//!
//! Walker mechanics are tested with small test dialects (`RawConfig::validate_with`), so they do
//! not depend on how the real dialects judge; the last tests use the real registry.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

use locksmith::config::{ConfigError, RawConfig, Settings};
use locksmith::dialect::{Candidate, Dialect, DialectId, EntryKind, Windows};
use locksmith::judge::Said;
use locksmith::scan::{self, Config, FatalError, Finding, Root, ScanError, ScanEvent, ScanStats};
use locksmith::{Holder, HolderHow, Judgement, Verdict};

use locksmith::probe::Snapshot;

use crate::util::judging::try_judge;
use crate::util::quiet::{self, Fact};
use crate::util::{
    Group, Guard, as_nobody, photograph_with_atimes, require_that, snapshot, wait_until, write,
};

// ---------------------------------------------------------------------------------------------
// Test dialects: each reports in its evidence what it was shown.

/// Matches `*.lock` and `*.lck`; recognises regular files starting with `A`.
struct DialectA;
/// Matches `*.lock` and `*.b`; recognises regular files starting with `B`.
struct DialectB;
/// Any name; recognises regular files starting with `C`.
struct DialectC;
/// Whole-path pattern: `*.lock` directly under a `.git` directory; recognises what is in one.
struct DialectGit;
/// Judges kernel-locked files nothing else claims (recognises nothing by itself).
struct DialectFlock;

fn seen(c: &Candidate<'_>) -> String {
    format!(
        "kind={:?} bytes={} complete={} link={:?}",
        c.kind,
        c.content.len(),
        c.complete,
        c.link_target
    )
}

impl Dialect for DialectA {
    fn id(&self) -> DialectId {
        DialectId::named("test-a")
    }
    fn patterns(&self) -> &'static [&'static str] {
        &["*.lock", "*.lck"]
    }
    fn recognise(&self, c: &Candidate<'_>, _snap: &Snapshot) -> bool {
        c.kind == EntryKind::File && c.content.starts_with(b"A")
    }
    fn read(&self, c: &Candidate<'_>, _: &Snapshot, _: &Windows) -> Said {
        Judgement::unknown(seen(c)).into()
    }
}

impl Dialect for DialectB {
    fn id(&self) -> DialectId {
        DialectId::named("test-b")
    }
    fn patterns(&self) -> &'static [&'static str] {
        &["*.lock", "*.b"]
    }
    fn recognise(&self, c: &Candidate<'_>, _snap: &Snapshot) -> bool {
        c.kind == EntryKind::File && c.content.starts_with(b"B")
    }
    fn read(&self, c: &Candidate<'_>, _: &Snapshot, _: &Windows) -> Said {
        Judgement::unknown(seen(c)).into()
    }
}

impl Dialect for DialectC {
    fn id(&self) -> DialectId {
        DialectId::named("test-c")
    }
    fn patterns(&self) -> &'static [&'static str] {
        &[]
    }
    fn any_name(&self) -> bool {
        true
    }
    fn recognise(&self, c: &Candidate<'_>, _snap: &Snapshot) -> bool {
        c.kind == EntryKind::File && c.content.starts_with(b"C")
    }
    fn read(&self, c: &Candidate<'_>, _: &Snapshot, _: &Windows) -> Said {
        Judgement::unknown(seen(c)).into()
    }
}

impl Dialect for DialectGit {
    fn id(&self) -> DialectId {
        DialectId::named("test-git")
    }
    fn patterns(&self) -> &'static [&'static str] {
        &["**/.git/*.lock"]
    }
    fn recognise(&self, c: &Candidate<'_>, _snap: &Snapshot) -> bool {
        c.path.parent().and_then(Path::file_name) == Some(OsStr::new(".git"))
    }
    fn read(&self, c: &Candidate<'_>, _: &Snapshot, _: &Windows) -> Said {
        Judgement::unknown(seen(c)).into()
    }
}

impl Dialect for DialectFlock {
    fn id(&self) -> DialectId {
        DialectId::named("flock")
    }
    fn patterns(&self) -> &'static [&'static str] {
        &[]
    }
    fn recognise(&self, _: &Candidate<'_>, _snap: &Snapshot) -> bool {
        false
    }
    fn read(&self, c: &Candidate<'_>, snap: &Snapshot, _: &Windows) -> Said {
        let holders: Vec<Holder> = snap.kernel_holders(c.key());
        let mut j = if holders.is_empty() {
            Judgement::free("no kernel lock")
        } else {
            Judgement::live(format!("{} holder(s)", holders.len()))
        };
        j.holders = holders;
        j.into()
    }
}

static TEST_DIALECTS: &[&dyn Dialect] =
    &[&DialectGit, &DialectA, &DialectB, &DialectC, &DialectFlock];

/// The embedded configuration without its excludes, to be made into [`tested`] settings.
fn test_raw() -> RawConfig {
    let mut c = RawConfig::embedded();
    c.exclude.clear();
    c
}

/// The scanner's settings of `raw`, recognising the test dialects.
fn tested(raw: RawConfig) -> Config {
    raw.validate_with(TEST_DIALECTS).unwrap().scan
}

/// The scanner's settings with the test dialects and no excludes.
fn test_config() -> Config {
    tested(test_raw())
}

fn root(p: &Path) -> Root {
    Root {
        path: p.to_path_buf(),
        max_depth: None,
    }
}

struct Outcome {
    found: Vec<Finding>,
    errors: Vec<ScanError>,
    progress: Vec<(u64, u64)>,
    result: Result<ScanStats, FatalError>,
}

impl Outcome {
    fn finding(&self, p: &Path) -> Option<&Finding> {
        self.found.iter().find(|f| f.path == p)
    }

    fn paths(&self) -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = self.found.iter().map(|f| f.path.clone()).collect();
        v.sort();
        v
    }
}

/// Runs a scan on its own thread and fails the test if it does not finish within a minute.
fn run_scan(config: &Config, roots: &[Root]) -> Outcome {
    run_scan_cancel(config, roots, Arc::new(AtomicBool::new(false)))
}

fn run_scan_cancel(config: &Config, roots: &[Root], cancel: Arc<AtomicBool>) -> Outcome {
    let (tx, rx) = mpsc::channel();
    let config = config.clone();
    let roots = roots.to_vec();
    std::thread::spawn(move || {
        let snap = snapshot();
        let events = Mutex::new(Vec::new());
        let sink = |e: ScanEvent| events.lock().unwrap().push(e);
        let result = scan::scan(&config, &roots, &snap, &cancel, &sink);
        let _ = tx.send((events.into_inner().unwrap(), result));
    });
    let (events, result) = rx
        .recv_timeout(Duration::from_secs(60))
        .expect("the scan did not finish within 60 s");
    let mut out = Outcome {
        found: Vec::new(),
        errors: Vec::new(),
        progress: Vec::new(),
        result,
    };
    for e in events {
        match e {
            ScanEvent::Found(f) => out.found.push(*f),
            ScanEvent::Error(e) => out.errors.push(e),
            ScanEvent::Progress { entries, locks } => out.progress.push((entries, locks)),
        }
    }
    out
}

fn mkfifo(p: &Path) {
    rustix::fs::mknodat(
        rustix::fs::CWD,
        p,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o644),
        0,
    )
    .unwrap();
}

// ---------------------------------------------------------------------------------------------
// Configuration

#[test]
fn embedded_default_parses_and_expands() {
    let c = RawConfig::embedded();
    assert!(c.sources.is_empty());
    assert_eq!(c.windows, Windows::default());
    assert!(c.roots.iter().any(|r| r.path == "."));
    assert!(c.exclude.iter().any(|x| x == "/proc"));
    let roots = c.validate().unwrap().scan.roots(&[]);
    let cwd = std::fs::canonicalize(".").unwrap();
    assert!(roots.iter().any(|r| r.path == cwd), "{roots:?}");
    for r in &roots {
        assert!(r.path.is_absolute() && r.path.exists(), "{r:?}");
    }
}

#[test]
fn user_config_and_explicit_config_override_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let user = dir.path().join("user.json");
    let explicit = dir.path().join("explicit.json");
    write(
        &user,
        br#"{
  "roots": [{ "path": "/from-user", "max_depth": 3 }],
  "exclude": ["**/user-excluded"],
  "windows": { "git_min_age_secs": 30, "heartbeat_secs": 90 }
}"#,
    );
    write(
        &explicit,
        br#"{ "exclude": ["**/explicit-excluded"], "windows": { "heartbeat_secs": 5 } }"#,
    );

    let c = RawConfig::load_layers(Some(&user), Some(&explicit)).unwrap();
    assert_eq!(c.sources, vec![user.clone(), explicit.clone()]);
    assert_eq!(c.roots.len(), 1);
    assert_eq!(c.roots[0].path, "/from-user");
    assert_eq!(c.roots[0].max_depth, Some(3));
    assert_eq!(c.exclude, vec!["**/explicit-excluded".to_string()]);
    assert_eq!(c.windows.git_min_age_secs, 30, "user value kept");
    assert_eq!(c.windows.heartbeat_secs, 5, "explicit value wins");

    // A missing user file is skipped; a missing explicit file is an error naming it.
    let missing = dir.path().join("missing.json");
    let c = RawConfig::load_layers(Some(&missing), None).unwrap();
    assert!(c.sources.is_empty());
    assert_eq!(c.roots, RawConfig::embedded().roots);
    let e = RawConfig::load_layers(None, Some(&missing)).unwrap_err();
    assert!(matches!(e, ConfigError::Read { .. }), "{e:?}");
    assert_eq!(e.path(), missing);
    assert!(e.to_string().contains("missing.json"), "{e}");
}

#[test]
fn bad_config_errors_name_file_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("bad.json");
    let check = |text: &str, line: usize, needle: &str| {
        write(&p, text.as_bytes());
        let e = RawConfig::load_layers(None, Some(&p)).unwrap_err();
        let ConfigError::Parse {
            path,
            line: l,
            column,
            message,
        } = &e
        else {
            panic!("not a parse error: {e:?}");
        };
        assert_eq!(path, &p);
        assert_eq!(*l, line, "{e}");
        assert!(*column > 0 || text.is_empty(), "{e}");
        assert!(message.contains(needle), "{message:?} lacks {needle:?}");
        let shown = e.to_string();
        assert!(shown.contains("bad.json"), "{shown}");
        assert!(
            shown.contains(&format!("line {line} column {column}")),
            "{shown}"
        );
    };
    // Syntax error.
    check(
        "{\n  \"roots\": [\n    { \"path\": \"/x\" },,\n  ]\n}",
        3,
        "",
    );
    // Unknown key.
    check("{\n  \"rootz\": []\n}", 2, "rootz");
    // Unknown key in a root.
    check(
        "{\"roots\": [\n {\"path\": \"/x\", \"depth\": 2}]}",
        2,
        "depth",
    );
    // Wrong type.
    check("{\"windows\":\n {\"git_min_age_secs\": \"ten\"}}", 2, "");
    // Unknown key in the windows.
    check("{\"windows\":\n {\"mkdir_lock\": 10}}", 2, "mkdir_lock");
    // Unknown dialect id in extra patterns, named.
    check(
        "{\"extra_patterns\": [\n  {\"dialect\": \"no-such-dialect\", \"patterns\": [\"*.x\"]}]}",
        2,
        "no-such-dialect",
    );
    // A glob that does not compile, named.
    check("{\n\"exclude\": [\"a[\"]}", 2, "a[");
    // An empty file.
    check("", 1, "EOF");
}

#[test]
fn extra_patterns_add_names_to_a_dialect() {
    // An extra pattern makes a new name a candidate for a registered dialect.
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("daemon.pidlock");
    write(&pidfile, format!("{}\n", std::process::id()).as_bytes());
    let out = run_scan(&Settings::embedded().scan, &[root(dir.path())]);
    assert!(out.finding(&pidfile).is_none());
    let c = RawConfig::from_json(
        Path::new("x.json"),
        r#"{"extra_patterns": [{"dialect": "pidfile", "patterns": ["*.pidlock"]}]}"#,
    )
    .and_then(RawConfig::validate)
    .unwrap();
    let out = run_scan(&c.scan, &[root(dir.path())]);
    let f = out.finding(&pidfile).expect("found by the extra pattern");
    assert_eq!(f.dialect, "pidfile");
    assert_eq!(f.judgement.verdict(), Verdict::Live, "{:?}", f.judgement);
    std::fs::remove_file(&pidfile).unwrap();

    // With the test dialects: an extra pattern makes a new name a candidate for test-a.
    let file = dir.path().join("thing.custom");
    write(&file, b"A record");
    let mut raw = test_raw();
    let out = run_scan(&tested(raw.clone()), &[root(dir.path())]);
    assert!(out.finding(&file).is_none());
    raw.extra_patterns = vec![locksmith::scan::ExtraPatterns {
        dialect: "test-a".into(),
        patterns: vec!["*.custom".into()],
    }];
    let out = run_scan(&tested(raw), &[root(dir.path())]);
    assert_eq!(
        out.finding(&file).map(|f| f.dialect.as_str()),
        Some("test-a")
    );
}

#[test]
fn paths_replace_roots_and_missing_configured_roots_are_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(dir.path()).unwrap();
    std::fs::create_dir(base.join("a")).unwrap();
    std::fs::create_dir(base.join("b")).unwrap();
    write(&base.join("single.lock"), b"A");
    let text = format!(
        r#"{{"roots": [
            {{"path": "{0}/a", "max_depth": 2}},
            {{"path": "{0}/missing"}},
            {{"path": "$LOCKSMITH_TEST_SURELY_UNSET/x"}},
            {{"path": "{0}/a/inner", "max_depth": 1}},
            {{"path": "{0}/b"}}
        ]}}"#,
        base.display()
    );
    std::fs::create_dir(base.join("a/inner")).unwrap();
    let c = RawConfig::from_json(Path::new("roots.json"), &text)
        .and_then(RawConfig::validate)
        .unwrap()
        .scan;
    let roots = c.roots(&[]);
    assert_eq!(
        roots,
        vec![
            Root {
                path: base.join("a"),
                max_depth: Some(2)
            },
            root(&base.join("b")),
        ],
        "missing skipped, a/inner covered by a"
    );

    // PATH arguments replace them, even when they do not exist (the scan reports those).
    let roots = c.roots(&[base.join("single.lock"), base.join("nope")]);
    assert_eq!(
        roots,
        vec![root(&base.join("single.lock")), root(&base.join("nope"))]
    );
    // Relative PATHs become absolute.
    let rel = c.roots(&[PathBuf::from(".")]);
    assert_eq!(rel, vec![root(&std::fs::canonicalize(".").unwrap())]);
}

// ---------------------------------------------------------------------------------------------
// Walker

#[test]
fn a_single_file_is_a_root() {
    let dir = tempfile::tempdir().unwrap();
    let lock = dir.path().join("one.lock");
    write(&lock, b"B here");
    // An unusual name is recognised by content when named explicitly.
    let odd = dir.path().join("record.dat");
    write(&odd, b"A record");
    let out = run_scan(&test_config(), &[root(&lock), root(&odd)]);
    let stats = out.result.as_ref().unwrap();
    assert_eq!(stats.entries, 2);
    assert_eq!(out.finding(&lock).unwrap().dialect, "test-b");
    assert_eq!(out.finding(&odd).unwrap().dialect, "test-a");
    assert_eq!(stats.locks, 2);
}

#[test]
fn dialect_choice_follows_registry_order_and_falls_back_to_the_name() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let cases = [
        ("a.lock", &b"A..."[..], "test-a"),
        ("b.lock", b"B...", "test-b"),
        ("garbage.lock", b"zzz", "test-a"), // nobody recognises it: first name match
        ("c.lock", b"C...", "test-c"),      // any-name dialect
        ("x.b", b"A...", "test-b"),         // test-a did not match the name
        ("unrelated.txt", b"A...", ""),     // no name match, no kernel lock: not a candidate
    ];
    for (name, content, _) in cases {
        write(&d.join(name), content);
    }
    std::fs::create_dir(d.join("repo")).unwrap();
    write(&d.join("repo/.git/index.lock"), b"DIRC");
    write(&d.join("repo/.git/refs/heads/main.lock"), b"zzz");
    let out = run_scan(&test_config(), &[root(d)]);
    for (name, _, want) in cases {
        let got = out
            .finding(&d.join(name))
            .map(|f| f.dialect.as_str())
            .unwrap_or("");
        assert_eq!(got, want, "{name}");
    }
    // Whole-path patterns match the path, others the name.
    assert_eq!(
        out.finding(&d.join("repo/.git/index.lock"))
            .unwrap()
            .dialect,
        "test-git"
    );
    assert_eq!(
        out.finding(&d.join("repo/.git/refs/heads/main.lock"))
            .unwrap()
            .dialect,
        "test-a"
    );

    // judge_path asks the name-matched dialects first, then every dialect.
    let snap = snapshot();
    let config = test_config();
    let f = try_judge(&d.join("x.b"), &snap, &config).unwrap().unwrap();
    assert_eq!(f.dialect, "test-a");
    let f = try_judge(&d.join("b.lock"), &snap, &config)
        .unwrap()
        .unwrap();
    assert_eq!(f.dialect, "test-b");
    assert!(
        try_judge(&d.join("nothing-here.lock"), &snap, &config)
            .unwrap()
            .is_none()
    );
    // With a snapshot taken once it exists: an older one's kernel-lock table may name its
    // inode number, another test's file that was locked then.
    write(&d.join("plain.txt"), b"just text");
    assert!(
        try_judge(&d.join("plain.txt"), &snapshot(), &config)
            .unwrap()
            .is_none()
    );
}

#[test]
fn excludes_and_depth_limits() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for p in [
        "top.lock",
        "one/l1.lock",
        "one/two/l2.lock",
        "one/two/three/l3.lock",
        "node_modules/pkg/x.lock",
        "build/out/y.lock",
        "keep/.git/index.lock",
        "skip.lock",
    ] {
        write(&d.join(p), b"A");
    }
    let mut raw = test_raw();
    raw.exclude = vec![
        "**/node_modules".into(),
        "**/build/**".into(),
        "skip.lock".into(),
    ];
    let config = tested(raw);
    let out = run_scan(&config, &[root(d)]);
    let names: Vec<String> = out
        .paths()
        .iter()
        .map(|p| p.strip_prefix(d).unwrap().display().to_string())
        .collect();
    assert_eq!(
        names,
        vec![
            "keep/.git/index.lock",
            "one/l1.lock",
            "one/two/l2.lock",
            "one/two/three/l3.lock",
            "top.lock"
        ]
    );

    let limited = |depth| {
        let out = run_scan(
            &config,
            &[Root {
                path: d.to_path_buf(),
                max_depth: Some(depth),
            }],
        );
        out.paths().len()
    };
    assert_eq!(limited(1), 1, "top.lock only");
    assert_eq!(limited(2), 2, "and one/l1.lock");
    assert_eq!(limited(3), 4, "and one/two/l2.lock, keep/.git/index.lock");

    // A nested root with its own depth is walked on its own terms, and nothing twice.
    let out = run_scan(
        &config,
        &[
            Root {
                path: d.to_path_buf(),
                max_depth: Some(2),
            },
            root(&d.join("one")),
        ],
    );
    assert_eq!(out.paths().len(), 4, "{:?}", out.paths());
}

#[test]
fn symlinks_are_never_followed() {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(&outside.path().join("outside.lock"), b"A");
    symlink(outside.path(), d.join("link-to-dir")).unwrap();
    symlink(outside.path().join("outside.lock"), d.join("link.lock")).unwrap();
    symlink("/dev/zero", d.join("zero.lock")).unwrap();
    symlink(d.join("loop-b.lock"), d.join("loop-a.lock")).unwrap();
    symlink(d.join("loop-a.lock"), d.join("loop-b.lock")).unwrap();
    symlink("user@host.1234:1700000000", d.join("dangling.lock")).unwrap();

    let out = run_scan(&test_config(), &[root(d)]);
    assert!(out.result.is_ok());
    assert!(out.errors.is_empty(), "{:?}", out.errors);
    assert!(
        out.found.iter().all(|f| f.path.starts_with(d)),
        "followed a link out of the root: {:?}",
        out.paths()
    );
    for name in [
        "link.lock",
        "zero.lock",
        "loop-a.lock",
        "loop-b.lock",
        "dangling.lock",
    ] {
        let f = out.finding(&d.join(name)).unwrap();
        assert_eq!(f.kind, EntryKind::Symlink, "{name}");
        assert!(f.content.is_empty(), "{name}: a link's target was read");
        assert_eq!(
            f.link_target.as_deref(),
            Some(std::fs::read_link(d.join(name)).unwrap().as_path())
        );
    }
}

#[test]
fn fifos_and_devices_named_like_locks_are_never_opened() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    mkfifo(&d.join("pipe.lock"));
    // A device node (as root; elsewhere a FIFO stands in).
    let dev = d.join("null.lock");
    if rustix::fs::mknodat(
        rustix::fs::CWD,
        &dev,
        rustix::fs::FileType::CharacterDevice,
        rustix::fs::Mode::from_raw_mode(0o644),
        rustix::fs::makedev(1, 3),
    )
    .is_err()
    {
        mkfifo(&dev);
    }
    let out = run_scan(&test_config(), &[root(d)]);
    assert!(out.result.is_ok());
    for p in [d.join("pipe.lock"), dev] {
        let f = out.finding(&p).expect("reported");
        assert_eq!(f.kind, EntryKind::Other);
        assert_eq!(f.judgement.verdict(), Verdict::Unknown);
        assert!(f.content.is_empty());
        assert!(
            f.judgement.evidence[0].contains("not opened"),
            "{:?}",
            f.judgement.evidence
        );
    }
    // judge_path does not open it either.
    let f = try_judge(&d.join("pipe.lock"), &snapshot(), &test_config())
        .unwrap()
        .unwrap();
    assert_eq!(f.judgement.verdict(), Verdict::Unknown);
}

#[test]
fn content_is_a_bounded_prefix() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(&d.join("small.lock"), b"A small");
    write(&d.join("exact.lock"), [b'A'; 4096]);
    write(&d.join("empty.lock"), b"");
    // A sparse 8 GiB file: only the prefix is read.
    let sparse = std::fs::File::create(d.join("sparse.lock")).unwrap();
    sparse.set_len(8 << 30).unwrap();
    drop(sparse);
    let out = run_scan(&test_config(), &[root(d)]);
    let ev = |n: &str| out.finding(&d.join(n)).unwrap().judgement.evidence[0].clone();
    assert_eq!(
        ev("small.lock"),
        "kind=File bytes=7 complete=true link=None"
    );
    assert_eq!(
        ev("exact.lock"),
        "kind=File bytes=4096 complete=true link=None"
    );
    assert_eq!(
        ev("empty.lock"),
        "kind=File bytes=0 complete=true link=None"
    );
    assert_eq!(
        ev("sparse.lock"),
        "kind=File bytes=4096 complete=false link=None"
    );
    let f = out.finding(&d.join("sparse.lock")).unwrap();
    assert_eq!(f.size, Some(8 << 30));
    assert_eq!(f.content.len(), 4096);
}

#[test]
fn pseudo_file_systems_are_skipped() {
    // As roots: reported, not walked.
    let out = run_scan(&test_config(), &[root(Path::new("/proc"))]);
    let e = out.result.unwrap_err();
    assert!(e.to_string().contains("no root could be read"), "{e:?}");
    assert_eq!(out.errors.len(), 1);
    assert!(
        out.errors[0].to_string().contains("pseudo file system"),
        "{:?}",
        out.errors
    );

    // Below a root: a shallow walk of / sees /proc and /sys but does not enter them.
    let mut raw = test_raw();
    raw.extra_patterns = vec![locksmith::scan::ExtraPatterns {
        dialect: "test-a".into(),
        patterns: vec!["*".into()],
    }];
    let out = run_scan(
        &tested(raw),
        &[Root {
            path: "/".into(),
            max_depth: Some(2),
        }],
    );
    assert!(out.result.is_ok());
    assert!(
        out.finding(Path::new("/etc/hostname")).is_some() || !Path::new("/etc/hostname").exists()
    );
    let inside: Vec<&PathBuf> = out
        .found
        .iter()
        .map(|f| &f.path)
        .filter(|p| p.starts_with("/proc/") || p.starts_with("/sys/"))
        .collect();
    assert!(
        inside.is_empty(),
        "walked into a pseudo file system: {inside:?}"
    );
}

#[test]
fn per_path_errors_are_collected_and_the_walk_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(&d.join("ok/found.lock"), b"A");
    let missing = d.join("does-not-exist");

    // One root missing: an error event, and the other root is scanned.
    let out = run_scan(&test_config(), &[root(&missing), root(d)]);
    assert!(out.result.is_ok());
    assert_eq!(out.errors.len(), 1, "{:?}", out.errors);
    assert_eq!(out.errors[0].path(), missing);
    assert!(
        out.errors[0].to_string().contains("No such file"),
        "{:?}",
        out.errors
    );
    assert!(out.finding(&d.join("ok/found.lock")).is_some());
    assert_eq!(out.result.unwrap().errors, 1);

    // No root readable: Err.
    let out = run_scan(&test_config(), &[root(&missing)]);
    assert!(out.result.is_err());
    let out = run_scan(&test_config(), &[]);
    assert!(out.result.is_err());
}

#[test]
fn an_unreadable_directory_is_reported_and_the_walk_goes_on() {
    // Root reads everything: run the real binary as nobody (setpriv, util-linux).
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let d = std::fs::canonicalize(dir.path()).unwrap();
    std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)).unwrap();
    write(&d.join("open/visible.pid"), b"999999999\n");
    write(&d.join("closed/hidden.pid"), b"999999999\n");
    for sub in ["open", "closed"] {
        std::fs::set_permissions(d.join(sub), std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    std::fs::set_permissions(d.join("closed"), std::fs::Permissions::from_mode(0o700)).unwrap();
    let out = as_nobody(crate::util::BIN)
        .args(["--scan", "--json"])
        .arg(&d)
        .env("XDG_CONFIG_HOME", &d)
        .env("HOME", &d)
        .stdin(Stdio::null())
        .output()
        .expect("setpriv from util-linux");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(2), "{stderr}");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("a JSON report");
    let paths: Vec<&str> = report["locks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, vec![d.join("open/visible.pid").to_str().unwrap()]);
    let errors = report["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0]["path"], d.join("closed").to_str().unwrap());
    assert!(
        errors[0]["error"]
            .as_str()
            .unwrap()
            .contains("Permission denied"),
        "{errors:?}"
    );
}

/// Creates `levels` nested directories named `dd` below `base` (with fds: the path soon
/// exceeds PATH_MAX) and a lock file at `lock_at` levels.
fn deep_tree(base: &Path, levels: usize, lock_at: usize) {
    use rustix::fs::{Mode, OFlags};
    let mut fd = rustix::fs::open(base, OFlags::DIRECTORY | OFlags::RDONLY, Mode::empty()).unwrap();
    for i in 0..levels {
        rustix::fs::mkdirat(&fd, "dd", Mode::from_raw_mode(0o755)).unwrap();
        fd = rustix::fs::openat(&fd, "dd", OFlags::DIRECTORY | OFlags::RDONLY, Mode::empty())
            .unwrap();
        if i + 1 == lock_at {
            let f = rustix::fs::openat(
                &fd,
                "deep.lock",
                OFlags::CREATE | OFlags::WRONLY,
                Mode::from_raw_mode(0o644),
            )
            .unwrap();
            rustix::io::write(&f, b"A").unwrap();
        }
    }
}

/// Removes a tree too deep for `remove_dir_all` (which keeps one descriptor per level).
struct DeepTree(tempfile::TempDir);

impl Drop for DeepTree {
    fn drop(&mut self) {
        let _ = Command::new("rm").arg("-rf").arg(self.0.path()).status();
    }
}

#[test]
fn very_deep_trees_do_not_crash() {
    let dir = DeepTree(tempfile::tempdir().unwrap());
    let dir = &dir.0;
    deep_tree(dir.path(), 3000, 50);
    let out = run_scan(&test_config(), &[root(dir.path())]);
    assert!(out.result.is_ok());
    let lock = (0..50)
        .fold(dir.path().to_path_buf(), |p, _| p.join("dd"))
        .join("deep.lock");
    assert!(out.finding(&lock).is_some());
    // Beyond PATH_MAX the walk reports an error instead of crashing or stopping.
    assert_eq!(out.errors.len(), 1, "{:?}", out.errors.len());
    assert!(
        out.errors[0].to_string().contains("too long"),
        "{}",
        out.errors[0]
    );
    assert!(out.result.unwrap().entries > 1000);
}

#[test]
fn wide_directories_and_progress() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for i in 0..30_000 {
        std::fs::File::create(d.join(format!("f{i}"))).unwrap();
    }
    for i in 0..10 {
        write(&d.join(format!("sub{i}/x{i}.lock")), b"A");
    }
    let out = run_scan(&test_config(), &[root(d)]);
    let stats = out.result.unwrap();
    assert_eq!(stats.entries, 30_000 + 10 + 10);
    assert_eq!(stats.locks, 10);
    assert_eq!(out.found.len(), 10);
    // The last progress event has the final counts.
    assert_eq!(out.progress.last(), Some(&(stats.entries, stats.locks)));
    assert!(
        out.progress
            .windows(2)
            .all(|w| w[0].0 <= w[1].0 || w[0].1 <= w[1].1)
    );
}

#[test]
fn cancel_stops_the_scan() {
    let dir = tempfile::tempdir().unwrap();
    write(&dir.path().join("sub/x.lock"), b"A");
    let cancel = Arc::new(AtomicBool::new(true));
    let out = run_scan_cancel(&test_config(), &[root(dir.path())], cancel);
    let stats = out.result.unwrap();
    assert_eq!(stats.entries, 0);
    assert!(out.found.is_empty());
}

#[test]
fn non_utf8_and_newline_names() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let odd = d.join(OsStr::from_bytes(b"caf\xe9\n\x1b[31m.lock"));
    write(&odd, b"B");
    let out = run_scan(&test_config(), &[root(d)]);
    let f = out.finding(&odd).unwrap();
    assert_eq!(f.dialect, "test-b");
}

#[test]
fn a_kernel_locked_file_with_any_name_is_found() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let file = d.join("state.db");
    write(&file, b"not a lock by name");
    write(&d.join("other.db"), b"nobody locks this");
    // flock(1) runs sleep as its child: the whole group goes when the guard drops.
    let guard = Group::spawn(
        Command::new("flock")
            .arg("--exclusive")
            .arg(&file)
            .args(["sleep", "60"])
            .stdin(Stdio::null())
            .stdout(Stdio::null()),
    );
    let key = locksmith::probe::FileKey::of(&std::fs::metadata(&file).unwrap());
    wait_until("the flock to show in /proc/locks", || {
        snapshot().kernel_locked(key)
    });

    let out = run_scan(&test_config(), &[root(d)]);
    assert_eq!(out.paths(), vec![file.clone()]);
    let f = out.finding(&file).unwrap();
    assert_eq!(f.dialect, "flock");
    assert_eq!(f.judgement.verdict(), Verdict::Live);
    assert!(
        f.judgement
            .holders
            .iter()
            .any(|h| h.pid == guard.pid() && h.how == HolderHow::Flock),
        "{:?}",
        f.judgement.holders
    );
    drop(guard);
}

// ---------------------------------------------------------------------------------------------
// A scan modifies nothing (real dialects).

/// A tree with many kinds of locks and hostile entries.
fn hostile_tree(d: &Path) {
    let me = std::process::id();
    write(&d.join("app.pid"), format!("{me}\n").as_bytes());
    write(&d.join("dead.pid"), b"999999999\n");
    write(&d.join("zero.pid"), b"0\n");
    write(&d.join("minus.pid"), b"-1\n");
    write(&d.join("big.pid"), b"2147483648\n");
    write(&d.join("inject.lock"), b"1; rm -rf /\n");
    write(&d.join("escape.lock"), b"\x1b]0;owned\x07\x1b[2J4242\n");
    write(&d.join("garbage.lck"), [0xff, 0x00, 0xfe, 0x80, 0x01]);
    write(&d.join("LCK..ttyS0"), 1234u32.to_le_bytes());
    write(&d.join("empty.lock"), b"");
    write(
        &d.join("wrong-types.lock"),
        br#"{"pid": "x", "hostname": 7}"#,
    );
    write(&d.join("repo/.git/index.lock"), b"DIRC\x00\x00\x00\x02");
    write(
        &d.join("repo/.git/refs/heads/main.lock"),
        b"0123456789abcdef\n",
    );
    write(&d.join("repo/.git/HEAD.lock"), b"");
    write(
        &d.join("postgres/postmaster.pid"),
        b"1\n/var/lib/pg\n1700000000\n5432\n/tmp\n*\n  1 2\nready\n",
    );
    write(&d.join("docs/.report.odt.swp"), b"b0VIM 9.0\x00garbage");
    write(
        &d.join("docs/.~lock.report.odt#"),
        b"Jo,jo,host,01.01.2024 10:00,file:///x;",
    );
    write(&d.join(".X42-lock"), b"      4242\n");
    write(
        &d.join("proj/.terraform.tfstate.lock.info"),
        br#"{"ID":"x","Who":"a@b"}"#,
    );
    std::fs::create_dir_all(d.join("npm/thing.lock")).unwrap();
    symlink(
        "user@otherhost.4242:1700000000",
        d.join("docs/.#report.txt"),
    )
    .unwrap();
    std::fs::create_dir_all(d.join("chrome")).unwrap();
    symlink("otherhost-4242", d.join("chrome/SingletonLock")).unwrap();
    symlink("/dev/zero", d.join("zero.lock")).unwrap();
    symlink("loop2.lock", d.join("loop1.lock")).unwrap();
    symlink("loop1.lock", d.join("loop2.lock")).unwrap();
    symlink("/", d.join("root-link")).unwrap();
    mkfifo(&d.join("fifo.lock"));
    mkfifo(&d.join("fifo.pid"));
    let sparse = std::fs::File::create(d.join("huge.lock")).unwrap();
    sparse.set_len(4 << 30).unwrap();
    drop(sparse);
    write(&d.join(OsStr::from_bytes(b"bad\xffname\n.lock")), b"12\n");
    deep_tree(d, 200, 100);
}

#[test]
fn a_scan_modifies_nothing_and_survives_hostile_input() {
    let dir = tempfile::tempdir().unwrap();
    let d = std::fs::canonicalize(dir.path()).unwrap();
    hostile_tree(&d);
    // Reading a directory sets its access time once (relatime): read them all first, then let
    // the clock move on, so that any access by the scan would show.
    photograph_with_atimes(&d);
    std::thread::sleep(Duration::from_millis(20));
    let before = photograph_with_atimes(&d);

    // The real dialects, then the test dialects made to read every file.
    let mut every_file = test_raw();
    every_file.extra_patterns = vec![locksmith::scan::ExtraPatterns {
        dialect: "test-a".into(),
        patterns: vec!["*".into()],
    }];
    for config in [Settings::embedded().scan, tested(every_file)] {
        // (the photograph has the root too)
        scan_and_rejudge(&config, &d, before.len() - 1);
    }

    let after = photograph_with_atimes(&d);
    assert_eq!(before.len(), after.len());
    for (p, b) in &before {
        assert_eq!(Some(b), after.get(p), "{} changed", p.display());
    }
}

fn scan_and_rejudge(config: &Config, d: &Path, entries: usize) {
    let out = run_scan(config, &[root(d)]);
    let stats = out.result.as_ref().expect("scan ok");
    assert!(stats.entries as usize >= entries);
    // Every finding is inside the root and has evidence.
    for f in &out.found {
        assert!(f.path.starts_with(d), "{:?}", f.path);
        assert!(!f.judgement.evidence.is_empty(), "{f:?}");
        assert!(f.content.len() <= locksmith::dialect::CONTENT_PREFIX);
    }
    // Re-judging every finding works too.
    let snap = snapshot();
    for f in &out.found {
        let again = try_judge(&f.path, &snap, config).unwrap();
        assert_eq!(again.map(|g| g.dialect), Some(f.dialect), "{:?}", f.path);
    }
}

#[test]
fn real_dialects_judge_what_the_walker_finds() {
    let dir = tempfile::tempdir().unwrap();
    let d = std::fs::canonicalize(dir.path()).unwrap();
    hostile_tree(&d);
    let out = run_scan(&Settings::embedded().scan, &[root(&d)]);
    assert!(out.result.is_ok());
    assert!(out.errors.is_empty(), "{:?}", out.errors);
    let expect: &[(&str, &str, Option<Verdict>)] = &[
        ("app.pid", "pidfile", Some(Verdict::Live)),
        ("dead.pid", "pidfile", None),
        ("zero.pid", "pidfile", Some(Verdict::Unknown)),
        ("minus.pid", "pidfile", Some(Verdict::Unknown)),
        ("big.pid", "pidfile", Some(Verdict::Unknown)),
        ("inject.lock", "pidfile", Some(Verdict::Unknown)),
        ("escape.lock", "pidfile", Some(Verdict::Unknown)),
        ("garbage.lck", "pidfile", Some(Verdict::Unknown)),
        ("wrong-types.lock", "pidfile", Some(Verdict::Unknown)),
        ("fifo.lock", "pidfile", Some(Verdict::Unknown)),
        ("fifo.pid", "pidfile", Some(Verdict::Unknown)),
        ("zero.lock", "pidfile", Some(Verdict::Unknown)),
        ("huge.lock", "pidfile", Some(Verdict::Unknown)),
        ("empty.lock", "flock", Some(Verdict::Unknown)),
        ("LCK..ttyS0", "pidfile", None),
        ("repo/.git/index.lock", "git", None),
        ("repo/.git/HEAD.lock", "git", None),
        ("repo/.git/refs/heads/main.lock", "git", None),
        ("postgres/postmaster.pid", "postgres", None),
        ("docs/.report.odt.swp", "vim-swap", Some(Verdict::Unknown)),
        ("docs/.~lock.report.odt#", "libreoffice", None),
        ("docs/.#report.txt", "emacs", Some(Verdict::Foreign)),
        ("chrome/SingletonLock", "chromium", Some(Verdict::Foreign)),
        (".X42-lock", "x11", None),
        ("proj/.terraform.tfstate.lock.info", "terraform", None),
        ("npm/thing.lock", "mkdir-lock", None),
    ];
    for (name, dialect, verdict) in expect {
        let f = out
            .finding(&d.join(name))
            .unwrap_or_else(|| panic!("{name} not found"));
        assert_eq!(f.dialect, *dialect, "{name}: {:?}", f.judgement);
        if let Some(v) = verdict {
            assert_eq!(f.judgement.verdict(), *v, "{name}: {:?}", f.judgement);
        }
    }
    let odd = d.join(OsStr::from_bytes(b"bad\xffname\n.lock"));
    assert_eq!(
        out.finding(&odd).map(|f| f.dialect.as_str()),
        Some("pidfile")
    );
    // Nothing else is a lock (the loops and the link to / are not followed, so not seen as
    // locks; the deep tree holds one test lock file).
    let deep = (0..100)
        .fold(d.clone(), |p, _| p.join("dd"))
        .join("deep.lock");
    let mut extra: Vec<&Path> = out
        .found
        .iter()
        .map(|f| f.path.as_path())
        .filter(|p| *p != odd && *p != deep && !expect.iter().any(|(n, ..)| d.join(n) == *p))
        .collect();
    extra.sort();
    assert_eq!(extra, vec![d.join("loop1.lock"), d.join("loop2.lock")]);
}

/// A pid file on a container's root file system (an overlay mount that is not our root), seen
/// from outside: its PID belongs to the container's PID namespace, so a PID absent here proves
/// nothing (`foreign`); the same file through a plain directory is judged by the PID rules.
#[cfg(target_os = "linux")]
#[test]
fn pid_file_on_a_container_overlay_is_foreign() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for sub in ["lower", "upper", "work", "merged"] {
        std::fs::create_dir(d.join(sub)).unwrap();
    }
    let opts = format!(
        "lowerdir={},upperdir={},workdir={}",
        d.join("lower").display(),
        d.join("upper").display(),
        d.join("work").display()
    );
    let merged = d.join("merged");
    let mounted = Command::new("mount")
        .args(["-t", "overlay", "overlay", "-o", &opts])
        .arg(&merged)
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !require_that(
        mounted,
        "cannot mount an overlay file system here (needs root and mount rights)",
    ) {
        return;
    }
    struct Unmount(PathBuf);
    impl Drop for Unmount {
        // Detached even while busy (a child another test forks holds copies of this
        // process's descriptors until it execs): a mount left behind outlives the run.
        fn drop(&mut self) {
            let _ = Command::new("umount").arg("-l").arg(&self.0).status();
        }
    }
    let _unmount = Unmount(merged.clone());

    let mut gone = Command::new("true").spawn().unwrap();
    let dead = gone.id();
    gone.wait().unwrap();
    std::fs::write(merged.join("nginx.pid"), format!("{dead}\n")).unwrap();

    let snap = snapshot();
    let config = Settings::embedded().scan;
    let inside = try_judge(&merged.join("nginx.pid"), &snap, &config)
        .unwrap()
        .expect("a pid file");
    assert!(inside.fs.container_root, "{:?}", inside.fs);
    assert_eq!(inside.judgement.verdict(), Verdict::Foreign, "{inside:?}");

    let plain = try_judge(&d.join("upper/nginx.pid"), &snap, &config)
        .unwrap()
        .expect("a pid file");
    assert!(!plain.fs.container_root);
    assert_eq!(plain.judgement.verdict(), Verdict::Stale, "{plain:?}");
}

/// A process whose main thread has exited (`pthread_exit`) while another thread runs shows
/// state `Z`, yet it is alive: its pid file must not be stale.
#[cfg(target_os = "linux")]
#[test]
fn pid_file_of_a_process_whose_main_thread_exited_is_live() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("leader.c");
    std::fs::write(
        &src,
        "#include <pthread.h>\n#include <unistd.h>\n\
         static void *work(void *a) { (void)a; sleep(60); return 0; }\n\
         int main(void) { pthread_t t; pthread_create(&t, 0, work, 0); pthread_exit(0); }\n",
    )
    .unwrap();
    let bin = dir.path().join("leader");
    let built = Command::new("cc")
        .arg(&src)
        .arg("-pthread")
        .arg("-o")
        .arg(&bin)
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !require_that(built, "no C compiler (cc) to build the test program") {
        return;
    }
    let child = Guard::spawn(&mut Command::new(&bin));
    let pid = child.pid();
    wait_until("the main thread to exit", || {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .unwrap_or_default()
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z'))
    });
    let pidfile = dir.path().join("app.pid");
    std::fs::write(&pidfile, format!("{pid}\n")).unwrap();
    let f = try_judge(&pidfile, &snapshot(), &Settings::embedded().scan)
        .unwrap()
        .expect("a pid file");
    assert_eq!(f.judgement.verdict(), Verdict::Live, "{:?}", f.judgement);
}

/// Inside a PID namespace that is not the host's, a PID missing from our namespace may be a
/// process outside it: a pid file on a mount shared with the host is `foreign`, never `stale`,
/// whether its PID is alive on the host or gone. From the host, the same files are judged.
#[cfg(target_os = "linux")]
#[test]
fn inside_a_pid_namespace_absent_pids_prove_nothing() {
    // Made alone: another test's namespace may judge a record naming its own, ended one,
    // whose inode number one of these could be handed (see util/quiet.rs).
    let _namespace = quiet::making(Fact::PidNamespace);
    let probe = Command::new("unshare")
        .args(["--pid", "--fork", "--mount-proc", "true"])
        .stderr(Stdio::null())
        .status();
    if !require_that(
        probe.is_ok_and(|s| s.success()),
        "unshare --pid is not permitted here (needs root)",
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let host_sleep = Guard::spawn(Command::new("sleep").arg("60"));
    std::fs::write(
        dir.path().join("host.pid"),
        format!("{}\n", host_sleep.pid()),
    )
    .unwrap();
    let mut gone = Command::new("true").spawn().unwrap();
    let dead = gone.id();
    gone.wait().unwrap();
    std::fs::write(dir.path().join("gone.pid"), format!("{dead}\n")).unwrap();

    let verdicts = |cmd: &mut Command| -> BTreeMap<String, String> {
        let out = cmd.output().unwrap();
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
        doc["locks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| {
                let name = l["path"].as_str().unwrap().rsplit('/').next().unwrap();
                (name.to_string(), l["verdict"].as_str().unwrap().to_string())
            })
            .collect()
    };
    let bin = crate::util::BIN;
    let inside = verdicts(
        Command::new("unshare")
            .args(["--pid", "--fork", "--mount-proc", bin, "--scan", "--json"])
            .arg(dir.path()),
    );
    assert_eq!(inside["host.pid"], "foreign", "{inside:?}");
    assert_eq!(inside["gone.pid"], "foreign", "{inside:?}");
    let outside = verdicts(Command::new(bin).args(["--scan", "--json"]).arg(dir.path()));
    assert_eq!(outside["host.pid"], "live", "{outside:?}");
    assert_eq!(outside["gone.pid"], "stale", "{outside:?}");
}
