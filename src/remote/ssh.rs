//! The transport: the user's own `ssh` (their configuration, keys and agent), run once per host
//! with every PID to ask about, never prompting, every wait bounded.

use std::collections::HashMap;
use std::io::Read;
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use globset::{Glob, GlobSet, GlobSetBuilder};
use serde::Deserialize;

use super::{Answer, HostAnswer};
use crate::verdict::RemoteClaim;

/// The most an answer may be (a few PIDs take a few hundred bytes).
const MAX_ANSWER_BYTES: u64 = 1 << 20;

/// How locksmith asks other hosts, as the configuration writes it (its `ask_hosts` key):
/// checked into an [`AskConfig`] by [`AskHosts::validate`].
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AskHosts {
    /// Host names (globs, `node*`) asked without `--ask-hosts`.
    pub hosts: Vec<String>,
    /// locksmith on the other hosts (a name looked up in their `PATH`, or a path).
    pub program: String,
    /// The ssh client to run.
    pub ssh: String,
    /// More arguments for ssh, before the host (`["-F", "/path/to/ssh_config"]`).
    pub ssh_args: Vec<String>,
    /// `ConnectTimeout` for ssh, seconds.
    pub connect_timeout_secs: u64,
    /// The longest wait for one host's answer, seconds (connection included).
    pub timeout_secs: u64,
    /// How many hosts are asked at once.
    pub concurrency: usize,
    /// The most distinct hosts asked in one round; the others' locks stay `foreign`, saying so.
    pub max_hosts: usize,
    /// The longest a whole round of asking may take, seconds: hosts not asked by then are not
    /// asked, and those still answering are given up.
    pub deadline_secs: u64,
}

impl Default for AskHosts {
    fn default() -> Self {
        AskHosts {
            hosts: Vec::new(),
            program: "locksmith".into(),
            ssh: "ssh".into(),
            ssh_args: Vec::new(),
            connect_timeout_secs: 5,
            timeout_secs: 15,
            concurrency: 8,
            max_hosts: 32,
            deadline_secs: 60,
        }
    }
}

/// How locksmith asks other hosts, checked, its host patterns compiled: remote's settings.
#[derive(Debug, Clone)]
pub struct AskConfig {
    /// What the configuration says.
    pub(super) section: AskHosts,
    /// `section.hosts`, compiled (lower case).
    host_set: GlobSet,
}

impl Default for AskConfig {
    fn default() -> Self {
        AskHosts::default()
            .validate()
            .expect("the default ask_hosts is valid")
    }
}

impl AskHosts {
    /// Checks the values and compiles the host patterns; the message names the key at fault.
    pub fn validate(self) -> Result<AskConfig, String> {
        let host_set = self.check()?;
        Ok(AskConfig {
            section: self,
            host_set,
        })
    }

    /// The checks of [`AskHosts::validate`], and the host patterns compiled.
    pub fn check(&self) -> Result<GlobSet, String> {
        if !(1..=600).contains(&self.connect_timeout_secs) {
            return Err(format!(
                "ask_hosts.connect_timeout_secs must be 1..=600 seconds, not {}",
                self.connect_timeout_secs
            ));
        }
        if !(1..=3600).contains(&self.timeout_secs) {
            return Err(format!(
                "ask_hosts.timeout_secs must be 1..=3600 seconds, not {}",
                self.timeout_secs
            ));
        }
        if !(1..=256).contains(&self.concurrency) {
            return Err(format!(
                "ask_hosts.concurrency must be 1..=256, not {}",
                self.concurrency
            ));
        }
        if !(1..=4096).contains(&self.max_hosts) {
            return Err(format!(
                "ask_hosts.max_hosts must be 1..=4096, not {}",
                self.max_hosts
            ));
        }
        if !(1..=3600).contains(&self.deadline_secs) {
            return Err(format!(
                "ask_hosts.deadline_secs must be 1..=3600 seconds, not {}",
                self.deadline_secs
            ));
        }
        if self.program.trim().is_empty() || self.ssh.trim().is_empty() {
            return Err("ask_hosts.program and ask_hosts.ssh must not be empty".into());
        }
        let mut b = GlobSetBuilder::new();
        for h in &self.hosts {
            b.add(Glob::new(&h.to_ascii_lowercase()).map_err(|e| {
                format!(
                    "ask_hosts.hosts: \"{h}\" is not a valid host pattern: {}",
                    e.kind()
                )
            })?);
        }
        b.build().map_err(|e| format!("ask_hosts.hosts: {e}"))
    }
}

impl AskConfig {
    /// The host patterns asked without `--ask-hosts`, as configured.
    pub fn hosts(&self) -> &[String] {
        &self.section.hosts
    }

    /// Whether `host` is one of the configured hosts.
    pub fn allows(&self, host: &str) -> bool {
        !self.section.hosts.is_empty() && self.host_set.is_match(host.to_ascii_lowercase())
    }
}

/// Why a host gave no usable answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum FailureKind {
    /// The name is not a plain host name (it could be taken for an ssh option or a user).
    NotAHostName,
    /// ssh could not start.
    NoSsh,
    /// No connection (refused, no route, name not resolved, connect timeout).
    Unreachable,
    /// The host's key is unknown or has changed.
    HostKey,
    /// ssh would not log in without a password.
    Auth,
    /// locksmith is not installed there (or not at the configured path).
    NoProgram,
    /// No answer within the timeout.
    Timeout,
    /// It answered something that is not an answer.
    BadAnswer,
    /// Not asked: more hosts than `ask_hosts.max_hosts` were to be asked in one round.
    TooManyHosts,
    /// Not asked: the round's deadline (`ask_hosts.deadline_secs`) had passed.
    Deadline,
}

/// A host that gave no usable answer, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AskFailure {
    pub kind: FailureKind,
    pub detail: String,
}

impl AskFailure {
    pub fn new(kind: FailureKind, detail: impl Into<String>) -> Self {
        AskFailure {
            kind,
            detail: detail.into(),
        }
    }

    /// Whether the host was not asked at all (a bound of the round, not the host's fault).
    pub fn not_asked(&self) -> bool {
        matches!(self.kind, FailureKind::TooManyHosts | FailureKind::Deadline)
    }
}

impl std::fmt::Display for AskFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let what = match self.kind {
            FailureKind::NotAHostName => "not a plain host name",
            FailureKind::NoSsh => "ssh could not be run",
            FailureKind::Unreachable => "unreachable",
            FailureKind::HostKey => "its host key is not known or has changed",
            FailureKind::Auth => "ssh cannot log in without a password",
            FailureKind::NoProgram => "locksmith is not installed there",
            FailureKind::Timeout => "no answer in time",
            FailureKind::BadAnswer => "its answer could not be read",
            FailureKind::TooManyHosts | FailureKind::Deadline => "not asked",
        };
        if self.detail.is_empty() {
            f.write_str(what)
        } else {
            write!(f, "{what}: {}", self.detail)
        }
    }
}

/// Whether `host` may be handed to ssh: letters, digits, `.`, `-`, `_`, starting with a letter
/// or digit (so never an option, a user name or a command).
pub fn plain_host_name(host: &str) -> bool {
    !host.is_empty()
        && host.len() <= 253
        && host.as_bytes()[0].is_ascii_alphanumeric()
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_'))
}

/// Asks the hosts in `questions`, each once about all of its PIDs, at most `cfg.section.concurrency`
/// at once, within bounds that no number of lock files can stretch:
/// - at most `cfg.section.max_hosts` hosts: those the configuration lists (`cfg.hosts`) first, then
///   the others by name; the rest are not asked ([`FailureKind::TooManyHosts`]);
/// - the whole round ends `cfg.section.deadline_secs` after it starts: a host still answering then is
///   given up ([`FailureKind::Timeout`]), and one not yet asked is not asked
///   ([`FailureKind::Deadline`]).
///
/// Every host of `questions` gets an answer or a failure. `progress` is told how many hosts
/// are still being asked after each answer.
pub fn ask_hosts(
    questions: &HashMap<String, Vec<RemoteClaim>>,
    cfg: &AskConfig,
    progress: &(dyn Fn(usize) + Sync),
) -> HashMap<String, HostAnswer> {
    let deadline = Instant::now() + Duration::from_secs(cfg.section.deadline_secs);
    let mut hosts: Vec<(&String, &Vec<RemoteClaim>)> = questions.iter().collect();
    hosts.sort_by_cached_key(|(h, _)| (!cfg.allows(h), h.to_ascii_lowercase()));
    let mut answers = HashMap::new();
    for (host, _) in hosts.iter().skip(cfg.section.max_hosts) {
        let why = format!(
            "{} hosts were to be asked, and one round asks at most {} (ask_hosts.max_hosts)",
            questions.len(),
            cfg.section.max_hosts
        );
        answers.insert(
            (*host).clone(),
            Err(AskFailure::new(FailureKind::TooManyHosts, why)),
        );
    }
    hosts.truncate(cfg.section.max_hosts);
    // Popped from the end: the first hosts first.
    hosts.reverse();
    let workers = cfg.section.concurrency.clamp(1, hosts.len().max(1));
    let queue = Mutex::new(hosts);
    let answers = Mutex::new(answers);
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| {
                loop {
                    let next = queue.lock().unwrap_or_else(|e| e.into_inner()).pop();
                    let Some((host, claims)) = next else { break };
                    let answer = match deadline.checked_duration_since(Instant::now()) {
                        Some(left) if !left.is_zero() => ask_host_within(host, claims, cfg, left),
                        _ => Err(AskFailure::new(
                            FailureKind::Deadline,
                            format!(
                                "this round of asking ended after {} s (ask_hosts.deadline_secs)",
                                cfg.section.deadline_secs
                            ),
                        )),
                    };
                    let mut all = answers.lock().unwrap_or_else(|e| e.into_inner());
                    all.insert(host.clone(), answer);
                    progress(questions.len() - all.len());
                }
            });
        }
    });
    answers.into_inner().unwrap_or_else(|e| e.into_inner())
}

/// Asks `host` about the PIDs of `claims` over one ssh connection.
pub fn ask_host(host: &str, claims: &[RemoteClaim], cfg: &AskConfig) -> HostAnswer {
    ask_host_within(host, claims, cfg, Duration::MAX)
}

/// [`ask_host`], given up after `left` if that comes before `cfg.section.timeout_secs` (the end of
/// the round).
fn ask_host_within(
    host: &str,
    claims: &[RemoteClaim],
    cfg: &AskConfig,
    left: Duration,
) -> HostAnswer {
    if !plain_host_name(host) {
        return Err(AskFailure::new(
            FailureKind::NotAHostName,
            format!("\"{host}\" is not asked"),
        ));
    }
    let remote = remote_command(claims, cfg);
    // The ssh client runs with our rights: only one that nobody else may have replaced.
    let ssh = crate::trust::trusted_program(&cfg.section.ssh)
        .map_err(|e| AskFailure::new(FailureKind::NoSsh, e))?;
    let mut cmd = Command::new(&ssh);
    cmd.args(["-o", "BatchMode=yes"])
        .arg("-o")
        .arg(format!(
            "ConnectTimeout={}",
            cfg.section.connect_timeout_secs
        ))
        .args(["-o", "ClearAllForwardings=yes", "-T"])
        .args(&cfg.section.ssh_args)
        .arg("--")
        .arg(host)
        .arg(remote)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = cmd
        .spawn()
        .map_err(|e| AskFailure::new(FailureKind::NoSsh, format!("{}: {e}", cfg.section.ssh)))?;
    let timeout = Duration::from_secs(cfg.section.timeout_secs);
    let (status, out, err) = if left < timeout {
        wait_bounded(child, left).map_err(|e| {
            AskFailure::new(
                e.kind,
                format!(
                    "gave up at the end of this round of asking ({} s, ask_hosts.deadline_secs)",
                    cfg.section.deadline_secs
                ),
            )
        })?
    } else {
        wait_bounded(child, timeout)?
    };
    let err_line = last_line(&err);
    match status {
        Some(0) => {}
        Some(255) => return Err(ssh_failure(&err_line)),
        Some(126) | Some(127) => {
            return Err(AskFailure::new(
                FailureKind::NoProgram,
                format!("{} was not found there ({err_line})", cfg.section.program),
            ));
        }
        Some(code) => {
            return Err(AskFailure::new(
                FailureKind::BadAnswer,
                format!(
                    "{} exited with status {code}: {err_line}",
                    cfg.section.program
                ),
            ));
        }
        None => {
            return Err(AskFailure::new(
                FailureKind::BadAnswer,
                "ssh was killed by a signal",
            ));
        }
    }
    serde_json::from_slice::<Answer>(&out).map_err(|e| {
        AskFailure::new(
            FailureKind::BadAnswer,
            format!("not an answer of locksmith inspect ({e})"),
        )
    })
}

/// `PROGRAM inspect --json --pid N ... [--boot-id ID] [--expect NAME ...]` (each PID once),
/// each word quoted for the remote shell.
fn remote_command(claims: &[RemoteClaim], cfg: &AskConfig) -> String {
    let mut words = vec![
        crate::text::shell_quote(&cfg.section.program),
        "inspect".into(),
        "--json".into(),
    ];
    let mut expect: Vec<&str> = Vec::new();
    let mut boot_id = None;
    let mut pids: Vec<i64> = claims.iter().map(|c| c.pid).collect();
    pids.sort_unstable();
    pids.dedup();
    for pid in pids {
        words.push("--pid".into());
        words.push(pid.to_string());
    }
    for c in claims {
        expect.extend(c.expect.iter().map(String::as_str));
        boot_id = boot_id.or(c.boot_id.as_deref());
    }
    if let Some(b) = boot_id {
        words.push("--boot-id".into());
        words.push(crate::text::shell_quote(b));
    }
    expect.sort_unstable();
    expect.dedup();
    for e in expect {
        words.push("--expect".into());
        words.push(crate::text::shell_quote(e));
    }
    words.join(" ")
}

/// What ssh's last error line says went wrong.
fn ssh_failure(line: &str) -> AskFailure {
    let l = line.to_ascii_lowercase();
    let kind = if l.contains("host key verification failed")
        || l.contains("no matching host key")
        || l.contains("remote host identification has changed")
    {
        FailureKind::HostKey
    } else if l.contains("permission denied") || l.contains("too many authentication failures") {
        FailureKind::Auth
    } else {
        FailureKind::Unreachable
    };
    AskFailure::new(kind, line)
}

/// A finished ssh: its exit code (`None`: killed by a signal), stdout and stderr.
type Finished = (Option<i32>, Vec<u8>, Vec<u8>);

/// Waits for `child` at most `timeout`, reading its output meanwhile (bounded); kills it when
/// the time is up.
fn wait_bounded(mut child: Child, timeout: Duration) -> Result<Finished, AskFailure> {
    let mut stdout = child.stdout.take();
    let mut stderr = child.stderr.take();
    let out = std::thread::spawn(move || read_bounded(stdout.as_mut()));
    let err = std::thread::spawn(move || read_bounded(stderr.as_mut()));
    let deadline = Instant::now() + timeout;
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(10)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(AskFailure::new(
                    FailureKind::Timeout,
                    format!("gave up after {} s", timeout.as_secs()),
                ));
            }
        }
    };
    let out = out.join().unwrap_or_default();
    let err = err.join().unwrap_or_default();
    Ok((status.code(), out, err))
}

fn read_bounded(r: Option<&mut impl Read>) -> Vec<u8> {
    let mut buf = Vec::new();
    if let Some(r) = r {
        let _ = r.take(MAX_ANSWER_BYTES).read_to_end(&mut buf);
    }
    buf
}

/// The last non-empty line of ssh's or the remote's stderr, without control characters.
fn last_line(err: &[u8]) -> String {
    let text = String::from_utf8_lossy(err);
    let line = text
        .lines()
        .map(str::trim)
        .rfind(|l| !l.is_empty())
        .unwrap_or("");
    line.chars().filter(|c| !c.is_control()).take(300).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_host_names_reach_ssh() {
        assert!(plain_host_name("node17"));
        assert!(plain_host_name("gpu-node-3.cluster.example"));
        for bad in [
            "",
            "-oProxyCommand=touch /tmp/x",
            "root@node17",
            "node17 rm",
            "a;b",
            "$(x)",
            "a\nb",
        ] {
            assert!(!plain_host_name(bad), "{bad:?}");
        }
        let e = ask_host("-oProxyCommand=x", &[], &AskConfig::default()).unwrap_err();
        assert_eq!(e.kind, FailureKind::NotAHostName);
    }

    #[test]
    fn one_quoted_command_for_all_pids() {
        let c = |pid, e: &str| RemoteClaim {
            host: "h".into(),
            pid,
            expect: vec![e.into()],
            ..Default::default()
        };
        let cfg = AskHosts {
            program: "/opt/lock smith/locksmith".into(),
            ..AskHosts::default()
        }
        .validate()
        .unwrap();
        assert_eq!(
            remote_command(&[c(7, "emacs"), c(9, "it's")], &cfg),
            "'/opt/lock smith/locksmith' inspect --json --pid 7 --pid 9 --expect emacs --expect 'it'\\''s'"
        );
    }

    #[test]
    fn configuration_is_checked() {
        assert!(AskHosts::default().validate().is_ok());
        let bad = AskHosts {
            timeout_secs: 0,
            ..AskHosts::default()
        };
        assert!(bad.validate().unwrap_err().contains("timeout_secs"));
        let bad = AskHosts {
            hosts: vec!["node[".into()],
            ..AskHosts::default()
        };
        assert!(bad.validate().unwrap_err().contains("node["));
        let cfg = AskHosts {
            hosts: vec!["node*".into()],
            ..AskHosts::default()
        }
        .validate()
        .unwrap();
        assert!(cfg.allows("Node17"));
        assert!(!cfg.allows("laptop"));
        assert!(!AskConfig::default().allows("node17"));
    }

    #[test]
    fn a_missing_ssh_is_a_reason_not_a_crash() {
        let cfg = AskHosts {
            ssh: "/nonexistent/ssh".into(),
            ..AskHosts::default()
        }
        .validate()
        .unwrap();
        let e = ask_host("node17", &[], &cfg).unwrap_err();
        assert_eq!(e.kind, FailureKind::NoSsh);
    }

    #[test]
    fn ssh_errors_are_told_apart() {
        assert_eq!(
            ssh_failure("Host key verification failed.").kind,
            FailureKind::HostKey
        );
        assert_eq!(
            ssh_failure("root@127.0.0.1: Permission denied (publickey).").kind,
            FailureKind::Auth
        );
        assert_eq!(
            ssh_failure("ssh: connect to host 127.0.0.1 port 1: Connection refused").kind,
            FailureKind::Unreachable
        );
        assert_eq!(last_line(b"a\n\x1b[31mb\x1b[0m\n\n"), "[31mb[0m");
    }
}
