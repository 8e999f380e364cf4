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
    /// Starts sshd in a new UTS namespace whose host name is `hostname` (another "machine").
    pub fn start(hostname: &str) -> Sshd {
        Sshd::start_as(Some(hostname))
    }

    /// Starts sshd on this host as it is (`hostname` `None`), or in a new UTS namespace whose
    /// host name is `hostname`. It serves SFTP too (for sshfs).
    pub fn start_as(hostname: Option<&str>) -> Sshd {
        let dir = tempfile::Builder::new()
            .prefix("locksmith-sshd-")
            .tempdir()
            .unwrap();
        let d = dir.path();
        keygen(&d.join("host_key"));
        keygen(&d.join("user_key"));
        std::fs::copy(d.join("user_key.pub"), d.join("authorized_keys")).unwrap();
        let name = hostname.map(str::to_string).unwrap_or_else(|| {
            rustix::system::uname()
                .nodename()
                .to_string_lossy()
                .into_owned()
        });
        let host_pub = std::fs::read_to_string(d.join("host_key.pub")).unwrap();
        let host_pub = host_pub
            .split_whitespace()
            .take(2)
            .collect::<Vec<_>>()
            .join(" ");
        std::fs::write(d.join("known_hosts"), format!("{name} {host_pub}\n")).unwrap();
        // Privilege separation needs this directory.
        std::fs::create_dir_all("/run/sshd").unwrap();
        // A free port can be taken by someone else between our probe and sshd's bind: retry.
        for _ in 0..5 {
            let port = free_port();
            std::fs::write(
                d.join("sshd_config"),
                format!(
                    "Port {port}\nListenAddress 127.0.0.1\nHostKey {hk}\nPidFile none\n\
                     AuthorizedKeysFile {ak}\nStrictModes no\nUsePAM no\n\
                     PermitRootLogin prohibit-password\nPasswordAuthentication no\n\
                     KbdInteractiveAuthentication no\nLogLevel ERROR\n\
                     Subsystem sftp internal-sftp\n",
                    hk = d.join("host_key").display(),
                    ak = d.join("authorized_keys").display(),
                ),
            )
            .unwrap();
            let sshd = format!(
                "exec /usr/sbin/sshd -D -e -f {}",
                d.join("sshd_config").display()
            );
            let script = match hostname {
                Some(h) => format!("hostname {h} && {sshd}"),
                None => sshd,
            };
            let mut cmd = match hostname {
                Some(_) => {
                    let mut c = Command::new("unshare");
                    c.args(["-u", "sh", "-c"]);
                    c
                }
                None => {
                    let mut c = Command::new("sh");
                    c.arg("-c");
                    c
                }
            };
            let mut child = cmd
                .arg(script)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            if listening(port, &mut child) {
                return Sshd {
                    dir,
                    port,
                    hostname: name,
                    child,
                };
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        panic!("sshd did not start");
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// The server's PID (its sessions are its children).
    pub fn pid(&self) -> u32 {
        self.child.id()
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

/// Waits until something accepts connections on `port` while `sshd` still runs.
fn listening(port: u16, sshd: &mut Child) -> bool {
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        if sshd.try_wait().ok().flatten().is_some() {
            return false;
        }
        if TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

impl Drop for Sshd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
