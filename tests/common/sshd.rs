//! A throw-away ssh server on 127.0.0.1 for tests: its own host key, user key, configuration
//! and port, optionally in a UTS namespace of its own with another host name (a second "host"
//! on this machine). Stopped when dropped.

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Why the tests that need an ssh server cannot run here, if they cannot.
pub fn unavailable() -> Option<String> {
    for p in ["/usr/sbin/sshd", "/usr/bin/ssh", "/usr/bin/ssh-keygen"] {
        if !Path::new(p).exists() {
            return Some(format!("{p} is missing (Debian: openssh-server)"));
        }
    }
    if !rustix::process::geteuid().is_root() {
        return Some("sshd for tests needs root".into());
    }
    None
}

pub struct Sshd {
    pub dir: tempfile::TempDir,
    pub port: u16,
    /// The host name the server's shell sees (`uname -n`).
    pub hostname: String,
    child: Child,
}

/// A port nobody listens on now.
pub fn free_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

fn keygen(path: &Path) {
    let out = Command::new("ssh-keygen")
        .args([
            "-q",
            "-t",
            "ed25519",
            "-N",
            "",
            "-C",
            "locksmith-test",
            "-f",
        ])
        .arg(path)
        .output()
        .unwrap();
    assert!(out.status.success(), "ssh-keygen: {out:?}");
}

impl Sshd {
    /// Starts sshd in a new UTS namespace whose host name is `hostname`.
    pub fn start(hostname: &str) -> Sshd {
        let dir = tempfile::Builder::new()
            .prefix("locksmith-sshd-")
            .tempdir()
            .unwrap();
        let d = dir.path();
        keygen(&d.join("host_key"));
        keygen(&d.join("user_key"));
        std::fs::copy(d.join("user_key.pub"), d.join("authorized_keys")).unwrap();
        let host_pub = std::fs::read_to_string(d.join("host_key.pub")).unwrap();
        let host_pub = host_pub
            .split_whitespace()
            .take(2)
            .collect::<Vec<_>>()
            .join(" ");
        std::fs::write(d.join("known_hosts"), format!("{hostname} {host_pub}\n")).unwrap();
        // Privilege separation needs this directory.
        std::fs::create_dir_all("/run/sshd").unwrap();
        let port = free_port();
        std::fs::write(
            d.join("sshd_config"),
            format!(
                "Port {port}\nListenAddress 127.0.0.1\nHostKey {hk}\nPidFile {pid}\n\
                 AuthorizedKeysFile {ak}\nStrictModes no\nUsePAM no\n\
                 PermitRootLogin prohibit-password\nPasswordAuthentication no\n\
                 KbdInteractiveAuthentication no\nLogLevel ERROR\n",
                hk = d.join("host_key").display(),
                pid = d.join("sshd.pid").display(),
                ak = d.join("authorized_keys").display(),
            ),
        )
        .unwrap();
        let child = Command::new("unshare")
            .args(["-u", "sh", "-c"])
            .arg(format!(
                "hostname {hostname} && exec /usr/sbin/sshd -D -e -f {}",
                d.join("sshd_config").display()
            ))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let sshd = Sshd {
            dir,
            port,
            hostname: hostname.to_string(),
            child,
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "sshd did not start on {port}");
            std::thread::sleep(Duration::from_millis(50));
        }
        sshd
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// An ssh_config block that reaches this server as `alias`, trusting `known_hosts`
    /// (a file in this server's directory).
    pub fn client_block(&self, alias: &str, known_hosts: &str) -> String {
        format!(
            "Host {alias}\n  HostName 127.0.0.1\n  Port {}\n  User root\n  IdentityFile {}\n  \
             IdentitiesOnly yes\n  HostKeyAlias {}\n  UserKnownHostsFile {}\n  \
             GlobalKnownHostsFile /dev/null\n  LogLevel ERROR\n",
            self.port,
            self.path("user_key").display(),
            self.hostname,
            self.path(known_hosts).display(),
        )
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
