//! Directories this host serves to other machines: a real Samba server (`smbd`, started by the
//! test with a configuration of its own on a port of its own) shares a directory, and a real
//! client (`smbclient`) writes a pid file into it through the server. The PID in it may be the
//! client machine's, so on this host it proves nothing: the lock is `foreign`, never `stale`,
//! and reclaim keeps it; the same file in a directory no server shares is `stale`. A lock that
//! names this host (an emacs lock) is still judged by this host's PIDs.

use std::path::Path;
use std::process::{Command, Stdio};

use crate::util::{self, Env, Group, require, wait_within};

/// `smbd` serving `share` as `[data]` (writable, guests allowed) on a free local port, with
/// its state in `state`; the port.
fn samba(state: &Path, share: &Path) -> (Group, u16) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut conf = format!(
        "[global]\n   server role = standalone server\n   smb ports = {port}\n   interfaces = lo\n   \
         bind interfaces only = yes\n   disable netbios = yes\n   map to guest = bad user\n   \
         load printers = no\n   printing = bsd\n   printcap name = /dev/null\n   \
         disable spoolss = yes\n   log file = {}/log.%m\n",
        state.display()
    );
    for (key, dir) in [
        ("private dir", "private"),
        ("lock directory", "lock"),
        ("state directory", "state"),
        ("cache directory", "cache"),
        ("pid directory", "pid"),
        ("ncalrpc dir", "ncalrpc"),
    ] {
        std::fs::create_dir_all(state.join(dir)).unwrap();
        conf.push_str(&format!("   {key} = {}\n", state.join(dir).display()));
    }
    conf.push_str(&format!(
        "[data]\n   path = {}\n   read only = no\n   guest ok = yes\n   force user = root\n",
        share.display()
    ));
    let file = state.join("smb.conf");
    std::fs::write(&file, conf).unwrap();
    let mut c = Command::new("smbd");
    c.args(["--foreground", "--no-process-group", "-s"])
        .arg(&file)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let server = Group::spawn(c);
    wait_within(30, "smbd to listen", || {
        std::net::TcpStream::connect(("127.0.0.1", port)).ok()
    });
    (server, port)
}

/// `smbclient` puts `local` into the share as `name`.
fn put(port: u16, local: &Path, name: &str) {
    let out = Command::new("smbclient")
        .args(["//127.0.0.1/data", "-N", "-p", &port.to_string(), "-c"])
        .arg(format!("put {} {name}", local.display()))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "smbclient put: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_pid_file_a_client_wrote_into_a_samba_share_is_foreign_never_stale() {
    if !require("smbd") || !require("smbclient") {
        return;
    }
    if !util::require_that(
        rustix::process::geteuid().is_root(),
        "a Samba server of the test's own runs as root",
    ) {
        return;
    }
    let env = Env::new();
    let share = env.path().join("share");
    let elsewhere = env.path().join("elsewhere");
    std::fs::create_dir(&share).unwrap();
    std::fs::create_dir(&elsewhere).unwrap();
    let (_server, port) = samba(&env.path().join("samba"), &share);

    let dead = util::dead_pid();
    let written = env.path().join("written.pid");
    std::fs::write(&written, format!("{dead}\n")).unwrap();
    put(port, &written, "app.pid");
    std::fs::copy(&written, elsewhere.join("app.pid")).unwrap();
    // An emacs of this host's, gone, left its lock beside a file of the share.
    std::os::unix::fs::symlink(
        format!("root@{}.{dead}", util::hostname()),
        share.join(".#notes.txt"),
    )
    .unwrap();

    let report = env.scan_json(&[&share, &elsewhere]).0;
    let shared = report.expect_lock(&share.join("app.pid"));
    assert_eq!(shared.verdict, "foreign", "{:?}", shared.evidence);
    assert!(shared.fs.network);
    assert_eq!(
        shared.fs.shared.as_deref(),
        Some(format!("Samba share [data] at {}", share.display()).as_str())
    );
    assert!(
        shared.evidence[0]
            .contains("in a directory this host shares with other machines (Samba share [data]")
            && shared.evidence[0].contains(&format!("PID {dead} may belong to another machine")),
        "{:?}",
        shared.evidence
    );
    let local = report.expect_lock(&elsewhere.join("app.pid"));
    assert_eq!(local.verdict, "stale", "{:?}", local.evidence);
    assert_eq!(local.fs.shared, None);
    let emacs = report.expect_lock(&share.join(".#notes.txt"));
    assert_eq!(emacs.verdict, "stale", "{:?}", emacs.evidence);

    let out = env.run([
        "--scan".as_ref(),
        "--reclaim".as_ref(),
        share.as_os_str(),
        elsewhere.as_os_str(),
    ]);
    assert!(share.join("app.pid").exists(), "{}", util::stdout(&out));
    assert!(
        !elsewhere.join("app.pid").exists(),
        "{}",
        util::stdout(&out)
    );
}
