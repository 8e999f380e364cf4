//! The Debian package under a real systemd. A Debian bookworm system (mmdebstrap's minbase
//! with systemd, dbus and prometheus-node-exporter) boots with systemd as PID 1 in Podman, the
//! package is installed with `apt install ./locksmith_*.deb`, and the machine crashes and
//! boots again. A daemon that refuses to start while its pid file exists starts after the
//! crash because locksmith-reclaim.service removed the stale pid file first (copied and
//! journaled in /var/lib/locksmith); a pid file that a live process of that boot wrote is
//! kept; places added as /etc/locksmith/README says (a volume, home directories) are scanned
//! too; the metrics timer writes the textfile, which `promtool check metrics` and
//! node_exporter accept; no unit fails, and the units' journals show no denial from their
//! sandboxes. The control: the same crash with the boot unit masked leaves the daemon failed.
//!
//! `.ci/run` builds the package and the root file system and names them in
//! `LOCKSMITH_TEST_DEB` and `LOCKSMITH_TEST_ROOTFS`.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::util::machine::Machine;
use crate::util::*;

/// A daemon that refuses to start while its pid file exists, as many do, and removes it when
/// it is stopped; a crash leaves it behind.
const TINYD: &str = r#"#!/bin/sh
pidfile=/var/lib/tinyd/tinyd.pid
if [ -e "$pidfile" ]; then
  echo "tinyd: $pidfile exists: is tinyd running already?" >&2
  exit 1
fi
echo $$ > "$pidfile"
trap 'rm -f "$pidfile"; exit 0' TERM
while :; do sleep 1; done
"#;

/// An ordinary service: the default dependencies order it after basic.target.
const TINYD_UNIT: &str = "[Unit]
Description=tinyd, which refuses to start while its pid file exists

[Service]
ExecStart=/usr/local/bin/tinyd
StateDirectory=tinyd

[Install]
WantedBy=multi-user.target
";

/// Starts a process that lives on, writes its PID in its pid file, and returns.
const KEEPER: &str = "#!/bin/sh
mkdir -p /var/lib/keeper
sleep infinity &
echo $! > /var/lib/keeper/keeper.pid
";

/// Started early at every boot, before the boot unit runs: its pid file is live then.
const KEEPER_UNIT: &str = "[Unit]
Description=keeper, which holds a pid file from early boot
DefaultDependencies=no
After=local-fs.target
Before=locksmith-reclaim.service basic.target

[Service]
Type=forking
ExecStart=/usr/local/bin/keeper
PIDFile=/var/lib/keeper/keeper.pid

[Install]
WantedBy=multi-user.target
";

const TINYD_PID: &str = "/var/lib/tinyd/tinyd.pid";
const KEEPER_PID: &str = "/var/lib/keeper/keeper.pid";
const GIT_LOCK: &str = "/home/alice/notes/.git/index.lock";
const VOLUME_PID: &str = "/data/app/app.pid";
const TEXTFILE: &str = "/var/lib/prometheus/node-exporter/locksmith.prom";

/// The units under test.
const UNITS: [&str; 3] = [
    "locksmith-reclaim.service",
    "locksmith-metrics.service",
    "locksmith-metrics.timer",
];

/// The package and the root file system, from the environment `.ci/run` sets.
fn inputs() -> Option<(PathBuf, PathBuf)> {
    let get = |var: &str| {
        std::env::var_os(var)
            .map(PathBuf::from)
            .filter(|p| p.is_file())
    };
    match (get("LOCKSMITH_TEST_DEB"), get("LOCKSMITH_TEST_ROOTFS")) {
        (Some(deb), Some(rootfs)) => Some((deb, rootfs)),
        _ => {
            assert!(
                std::env::var_os("CI").is_none(),
                "LOCKSMITH_TEST_DEB and LOCKSMITH_TEST_ROOTFS must name the package and the root file system under CI (.ci/run builds them)"
            );
            eprintln!(
                "SKIPPED: LOCKSMITH_TEST_DEB and LOCKSMITH_TEST_ROOTFS are not set (.ci/run builds the package and the root file system)"
            );
            None
        }
    }
}

fn text(bytes: Option<Vec<u8>>) -> Option<String> {
    bytes.map(|b| String::from_utf8_lossy(&b).into_owned())
}

/// What a unit's journal must not say: systemd skipping a sandbox it cannot set up, a system
/// call the filter refused (EPERM, or SIGSYS without SystemCallErrorNumber=), a capability or
/// permission missing.
const DENIALS: [&str; 8] = [
    "ignoring",
    "Operation not permitted",
    "Permission denied",
    "Bad system call",
    "SIGSYS",
    "seccomp",
    "capabilit",
    "Failed",
];

fn assert_no_denials(m: &Machine, unit: &str) {
    let journal = m.journal(&[unit]);
    for word in DENIALS {
        assert!(
            !journal.contains(word),
            "{unit}'s journal says {word:?}:\n{journal}"
        );
    }
    assert_eq!(m.show(unit, "Result"), "success", "{unit}:\n{journal}");
}

#[test]
fn after_a_crash_the_boot_unit_clears_the_way_and_keeps_what_lives() {
    let Some((deb, rootfs)) = inputs() else {
        return;
    };
    if !require("promtool") {
        return;
    }
    let m = match Machine::create(&rootfs) {
        Ok(m) => m,
        Err(why) => {
            skip(format!("podman cannot run here: {why}"));
            return;
        }
    };

    // First boot: a fresh system. The package installs as any other.
    assert_eq!(m.boot(), "running");
    let name = deb.file_name().unwrap().to_string_lossy().into_owned();
    m.put(&format!("/root/{name}"), &fs::read(&deb).unwrap(), 0o644);
    m.sh_ok("cd /root && apt install -y ./locksmith_*.deb");
    let files = m.sh_ok("dpkg -L locksmith");
    for path in [
        "/usr/bin/locksmith",
        "/usr/share/man/man1/locksmith.1.gz",
        "/usr/share/bash-completion/completions/locksmith",
        "/usr/share/zsh/vendor-completions/_locksmith",
        "/usr/share/fish/vendor_completions.d/locksmith.fish",
        "/usr/lib/systemd/system/locksmith-reclaim.service",
        "/usr/lib/systemd/system/locksmith-metrics.service",
        "/usr/lib/systemd/system/locksmith-metrics.timer",
        "/usr/share/locksmith/prometheus/locksmith.rules.yml",
        "/usr/share/doc/locksmith/examples/config.json",
        "/etc/locksmith/config.json",
        "/etc/locksmith/boot.json",
        "/etc/locksmith/README",
    ] {
        assert!(
            files.lines().any(|l| l == path),
            "the package has no {path}:\n{files}"
        );
    }
    // Enabled for the next boot, not run now; the metrics timer is left to the admin.
    assert_eq!(
        m.sh_ok("systemctl is-enabled locksmith-reclaim.service")
            .trim(),
        "enabled"
    );
    assert_eq!(
        m.show("locksmith-reclaim.service", "ActiveState"),
        "inactive"
    );
    assert_eq!(
        text(Some(
            m.sh("systemctl is-enabled locksmith-metrics.timer").stdout
        ))
        .unwrap()
        .trim(),
        "disabled"
    );

    // The daemon, and a service that writes its pid file early at every boot.
    m.put("/usr/local/bin/tinyd", TINYD.as_bytes(), 0o755);
    m.put(
        "/etc/systemd/system/tinyd.service",
        TINYD_UNIT.as_bytes(),
        0o644,
    );
    m.put("/usr/local/bin/keeper", KEEPER.as_bytes(), 0o755);
    m.put(
        "/etc/systemd/system/keeper.service",
        KEEPER_UNIT.as_bytes(),
        0o644,
    );
    m.sh_ok("systemctl daemon-reload && systemctl enable --now keeper.service tinyd.service");
    let stale = wait_for("tinyd to write its pid file", || text(m.read(TINYD_PID)));
    assert_eq!(stale.trim(), m.show("tinyd.service", "MainPID"));
    let out = m.sh("/usr/local/bin/tinyd");
    assert!(
        !out.status.success() && stderr(&out).contains("exists"),
        "tinyd must refuse to start while its pid file exists: {}",
        stderr(&out)
    );

    // Places added as /etc/locksmith/README says: a volume at /data, where an application
    // that has exited left its pid file, and home directories, where git left its
    // index.lock (they also need ProtectHome=no).
    m.sh_ok("mkdir -p /data/app && sh -c 'echo $$' > /data/app/app.pid");
    m.sh_ok(
        "useradd -m alice && runuser -u alice -- sh -c 'mkdir -p ~/notes/.git/objects ~/notes/.git/refs/heads && echo ref: refs/heads/main > ~/notes/.git/HEAD && printf DIRC > ~/notes/.git/index.lock'",
    );
    let boot_json = text(m.read("/etc/locksmith/boot.json")).unwrap();
    let mut config: serde_json::Value = serde_json::from_str(&boot_json).unwrap();
    let roots = config["roots"].as_array_mut().unwrap();
    roots.push(serde_json::json!({ "path": "/data", "max_depth": 2 }));
    roots.push(serde_json::json!({ "path": "/home", "max_depth": 6 }));
    m.put(
        "/etc/locksmith/boot.json",
        serde_json::to_string_pretty(&config).unwrap().as_bytes(),
        0o644,
    );
    m.put(
        "/etc/systemd/system/locksmith-reclaim.service.d/override.conf",
        b"[Service]\nProtectHome=no\n",
        0o644,
    );
    m.sh_ok("systemctl daemon-reload && systemctl enable --now locksmith-metrics.timer");

    // The control: a crash, then a boot without the boot unit. tinyd fails on its pid file.
    m.sh_ok("systemctl mask locksmith-reclaim.service");
    m.crash();
    assert_eq!(m.boot(), "degraded");
    assert_eq!(m.show("tinyd.service", "ActiveState"), "failed");
    assert!(m.journal(&["tinyd.service"]).contains("exists"));
    assert_eq!(text(m.read(TINYD_PID)).as_deref(), Some(stale.as_str()));
    assert!(m.read(GIT_LOCK).is_some() && m.read(VOLUME_PID).is_some());
    m.sh_ok("systemctl unmask locksmith-reclaim.service");
    m.crash();

    // The crash again, and a boot with the boot unit.
    let booted_at = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    let state = m.boot();
    let failed = m.sh_ok("systemctl --failed --no-legend --plain");
    assert_eq!(
        (state.as_str(), failed.trim()),
        ("running", ""),
        "{}",
        m.journal(&["locksmith-reclaim.service", "tinyd.service"])
    );
    let report = m.journal(&["locksmith-reclaim.service"]);

    // tinyd runs: its pid file is its own, written after the boot unit had finished.
    assert_eq!(m.show("tinyd.service", "ActiveState"), "active");
    let pid = m.show("tinyd.service", "MainPID");
    assert_eq!(text(m.read(TINYD_PID)).unwrap().trim(), pid);
    let monotonic = |unit: &str, property: &str| -> u64 {
        m.show(unit, property)
            .parse()
            .unwrap_or_else(|e| panic!("{unit} {property}: {e}"))
    };
    let reclaimed = monotonic(
        "locksmith-reclaim.service",
        "ExecMainExitTimestampMonotonic",
    );
    assert!(reclaimed > 0, "the boot unit did not run:\n{report}");
    assert!(
        reclaimed < monotonic("tinyd.service", "ExecMainStartTimestampMonotonic"),
        "tinyd started before the boot unit had finished"
    );
    // The live pid file, written by a process of this boot before the boot unit ran, is kept.
    assert!(
        monotonic("keeper.service", "ActiveEnterTimestampMonotonic")
            < monotonic(
                "locksmith-reclaim.service",
                "ExecMainStartTimestampMonotonic"
            )
    );
    assert_eq!(
        text(m.read(KEEPER_PID)).unwrap().trim(),
        m.show("keeper.service", "MainPID")
    );
    assert!(
        report
            .lines()
            .any(|l| l.contains("live") && l.ends_with(KEEPER_PID)),
        "the report shows the live pid file:\n{report}"
    );
    // The added places were scanned: the volume's stale pid file is gone; git's index.lock
    // is in the report, and removed only if it was judged stale there.
    assert!(
        m.read(VOLUME_PID).is_none(),
        "{VOLUME_PID} is still there:\n{report}"
    );
    let git_row = report
        .lines()
        .find(|l| l.ends_with(GIT_LOCK))
        .unwrap_or_else(|| panic!("the report does not list {GIT_LOCK}:\n{report}"));
    let git_stale = git_row.contains("stale");
    assert_eq!(m.read(GIT_LOCK).is_none(), git_stale, "{report}");
    let summary = report
        .lines()
        .find(|l| l.contains(" locks: "))
        .unwrap_or_else(|| panic!("no summary in the report:\n{report}"));
    assert!(
        summary.contains("; 0 errors;") && summary.contains(" 0 kept"),
        "{summary}"
    );

    // The copies and the journal, in /var/lib/locksmith.
    let listing = m.sh_ok("XDG_STATE_HOME=/var/lib locksmith journal --json");
    let listing: serde_json::Value = serde_json::from_str(&listing).unwrap();
    assert_eq!(listing["state_dir"], "/var/lib/locksmith");
    let entries = listing["entries"].as_array().unwrap();
    let entry = |path: &str| {
        entries
            .iter()
            .find(|e| e["path"] == path)
            .unwrap_or_else(|| panic!("no journal entry for {path}: {listing:#}"))
    };
    let saved = entry(TINYD_PID)["saved_to"].as_str().unwrap().to_string();
    assert!(saved.starts_with("/var/lib/locksmith/saved/"), "{saved}");
    let copy = m.read(&saved).map(|all| copy_part(entry(TINYD_PID), all));
    assert_eq!(text(copy).as_deref(), Some(stale.as_str()));
    assert_eq!(entry(TINYD_PID)["event"], "reclaim");
    assert_eq!(entry(VOLUME_PID)["event"], "reclaim");
    assert_eq!(entries.iter().any(|e| e["path"] == GIT_LOCK), git_stale);
    assert!(entries.iter().all(|e| e["path"] != KEEPER_PID));
    assert_no_denials(&m, "locksmith-reclaim.service");

    // The metrics timer fires a minute after boot; node_exporter's collector reads the file.
    let metrics = wait_within(240, "the metrics timer to write the textfile", || {
        let t = text(m.read(TEXTFILE))?;
        let at: f64 = t
            .lines()
            .find_map(|l| l.strip_prefix("locksmith_scan_timestamp_seconds "))?
            .parse()
            .ok()?;
        (at >= booted_at).then_some(t)
    });
    assert!(m.show("locksmith-metrics.timer", "LastTriggerUSecMonotonic") != "0");
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("locksmith.prom");
    fs::write(&copy, &metrics).unwrap();
    let out = run_bounded(
        {
            let mut c = std::process::Command::new("promtool");
            c.args(["check", "metrics"])
                .stdin(fs::File::open(&copy).unwrap());
            c
        },
        DEADLINE,
    );
    assert!(
        out.status.success(),
        "promtool check metrics:\n{}{}\n{metrics}",
        stdout(&out),
        stderr(&out)
    );
    assert!(
        metrics.lines().any(|l| l == "locksmith_scan_errors 0"),
        "{metrics}"
    );
    let scraped = m.sh_ok(
        "bash -c 'exec 3<>/dev/tcp/127.0.0.1/9100 && printf \"GET /metrics HTTP/1.0\\r\\n\\r\\n\" >&3 && cat <&3'",
    );
    assert!(
        scraped.lines().any(|l| l == "node_textfile_scrape_error 0")
            && scraped
                .lines()
                .any(|l| l.starts_with("locksmith_build_info{")),
        "node_exporter does not serve the textfile:\n{scraped}"
    );
    assert_no_denials(&m, "locksmith-metrics.service");
    assert_eq!(
        m.sh_ok("systemctl --failed --no-legend --plain").trim(),
        "",
        "{}",
        m.journal(&UNITS)
    );
}

/// The places the boot unit scans are the ones its documentation names: each root of the
/// shipped boot.json, with its depth, in /etc/locksmith/README's table and in the unit's
/// comment.
#[test]
fn the_boot_places_are_documented() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let etc = root.join("assets/debian/etc");
    let config: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(etc.join("boot.json")).unwrap()).unwrap();
    let readme = fs::read_to_string(etc.join("README")).unwrap();
    let unit = fs::read_to_string(root.join("assets/systemd/locksmith-reclaim.service")).unwrap();
    let roots = config["roots"].as_array().unwrap();
    assert!(!roots.is_empty());
    for r in roots {
        let path = r["path"].as_str().unwrap();
        let depth = r["max_depth"].as_u64().unwrap();
        assert!(
            readme.lines().any(|l| {
                let words: Vec<&str> = l.split_whitespace().collect();
                words.len() >= 3 && words[..3] == [path, "depth", &depth.to_string()]
            }),
            "/etc/locksmith/README does not list {path} at depth {depth}"
        );
        assert!(
            unit.contains(path),
            "the unit's comment does not name {path}"
        );
    }
    assert!(unit.contains("--config /etc/locksmith/boot.json"));
}

/// The configuration the package ships parses over the built-in one, as the units read it:
/// /etc/locksmith/config.json as the layer of XDG_CONFIG_HOME=/etc, boot.json (and the
/// example of /usr/share/doc/locksmith/examples) as `--config`. A key the built-in
/// configuration no longer has would stop both units at boot.
#[test]
fn the_shipped_configuration_parses_over_the_built_in_one() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/debian");
    let env = Env::new();
    fs::create_dir_all(env.path().join("config/locksmith")).unwrap();
    fs::copy(
        root.join("etc/config.json"),
        env.path().join("config/locksmith/config.json"),
    )
    .unwrap();
    let empty = env.path().join("empty");
    fs::create_dir(&empty).unwrap();
    for layer in [
        root.join("etc/boot.json"),
        root.join("examples/config.json"),
    ] {
        let out = env.run([
            "--config".as_ref(),
            layer.as_os_str(),
            "--scan".as_ref(),
            empty.as_os_str(),
        ]);
        assert_eq!(
            (out.status.code(), stderr(&out)),
            (Some(0), String::new()),
            "{}",
            layer.display()
        );
    }
}
