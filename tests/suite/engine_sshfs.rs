//! The scanner on a real network file system: sshfs over ssh to this machine's loopback address
//! (the engine crate's `sshfs` test helper), mounted as a user would mount it. The scanner
//! calls sshfs a network file system and judges pid files there by the network rules, and an
//! engine lock of this host whose holder was killed is stale there too. (The engine's own
//! tests on sshfs are in its crate.)

use std::path::Path;
use std::process::{Command, Output, Stdio};

use crate::util::engine::*;
use crate::util::sshfs::mount_or_skip as mount;

fn output(mut c: Command) -> Output {
    c.stdout(Stdio::piped()).stderr(Stdio::piped());
    c.output().expect("run locksmith")
}

#[test]
fn the_scanner_calls_sshfs_a_network_file_system() {
    let Some(m) = mount(&[]) else { return };
    let local = tempfile::tempdir().unwrap();
    let dead = dead_pid();
    for d in [m.mnt.as_path(), local.path()] {
        std::fs::write(d.join("app.pid"), format!("{dead}\n")).unwrap();
    }
    // An engine lock of this host whose holder was killed: this host is proven by its boot id.
    let mut holder = hold_with_cli(&m.mnt.join("job.lock"), &[]);
    holder.kill();

    let out = output({
        let mut c = Command::new(BIN);
        c.args(["--scan", "--json"]).arg(&m.mnt).arg(local.path());
        c
    });
    let report: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    let locks = report["locks"].as_array().unwrap();
    let find = |p: &Path| {
        locks
            .iter()
            .find(|l| l["path"] == p.to_str().unwrap())
            .unwrap_or_else(|| panic!("{} not reported: {report}", p.display()))
    };

    let remote = find(&m.mnt.join("app.pid"));
    assert_eq!(remote["fs"]["type"], "fuse.sshfs", "{remote}");
    assert_eq!(remote["fs"]["network"], true, "{remote}");
    // A PID with no host on a network file system may be another machine's: never stale.
    assert_eq!(remote["verdict"], "foreign", "{remote}");

    let here = find(&local.path().join("app.pid"));
    assert_eq!(here["fs"]["network"], false, "{here}");
    assert_eq!(here["verdict"], "stale", "{here}");

    let engine = find(&m.mnt.join("job.lock"));
    assert_eq!(engine["fs"]["network"], true, "{engine}");
    assert_eq!(engine["verdict"], "stale", "{engine}");
}
