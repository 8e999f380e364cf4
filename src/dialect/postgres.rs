//! `postgres`: `postmaster.pid` in a PostgreSQL data directory, and the socket lock files
//! `.s.PGSQL.<port>.lock` beside the server's unix sockets. `postmaster.pid` has eight lines:
//! postmaster PID, data directory, start time (seconds since the epoch), port, socket
//! directory, listen address, shared-memory key and id, status (`starting`, `ready`,
//! `stopping`, `standby`); a socket lock file has the same first five lines. A standalone
//! backend (`postgres --single`) writes its PID negated; postgres reads the absolute value.
//!
//! Liveness: a postgres process whose working directory is this data directory (the
//! postmaster and every backend `chdir` there; compared by inode, so it also holds for a
//! server in a container seen from the host) proves it live, and for a socket lock so does a
//! process listening on its socket. Otherwise the PID must be a postgres started before the
//! recorded start time — the Docker trap is a restarted container whose old file names a low
//! PID now held by an unrelated process: stale, naming it. A file recording another data (or
//! socket) directory than the one it lies in was written in another mount namespace, whose
//! PIDs are not ours: foreign unless something else proves it stale.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use super::common;
use super::{Candidate, Decision, Dialect, DialectId, EntryKind, Windows};
use crate::evidence::{PidClaim, fmt_ms, judge_pid};
use crate::probe::{PidState, Snapshot};
use crate::verdict::{Judgement, Owner, Verdict};

pub struct Postgres;

/// Names of PostgreSQL server processes.
pub const POSTGRES: &[&str] = &["postgres", "postmaster"];

/// What `postmaster.pid` records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PostmasterPid {
    /// The PID (the absolute value of what is written).
    pub pid: i64,
    /// Written negated: a standalone backend (`postgres --single`), not a postmaster.
    pub standalone: bool,
    pub data_dir: String,
    pub start_epoch: Option<i64>,
    pub port: Option<u16>,
    pub socket_dir: Option<String>,
    pub listen: Option<String>,
    pub status: Option<String>,
}

/// Parses the file. The first two lines are required; servers older than 9.1 wrote only
/// those (and the shared-memory line).
pub fn parse(content: &[u8]) -> Result<PostmasterPid, String> {
    let text = std::str::from_utf8(content)
        .map_err(|_| format!("{} is not text", common::excerpt(content)))?;
    let lines: Vec<&str> = text.lines().collect();
    let first = lines.first().copied().unwrap_or("");
    let written = common::parse_pid(first)?;
    // miscinit.c: "if pid < 0, the pid is for postgres, not postmaster".
    let (pid, standalone) = match written {
        w if w < 0 => (w.checked_neg().unwrap_or(0), true),
        w => (w, false),
    };
    let data_dir = lines
        .get(1)
        .map(|l| l.trim_end())
        .filter(|l| !l.is_empty())
        .ok_or("the second line (data directory) is missing")?;
    let opt = |i: usize| {
        lines
            .get(i)
            .map(|l| l.trim())
            .filter(|l| !l.is_empty())
            .map(common::field)
    };
    Ok(PostmasterPid {
        pid,
        standalone,
        data_dir: common::field(data_dir),
        start_epoch: lines.get(2).and_then(|l| l.trim().parse().ok()),
        port: lines.get(3).and_then(|l| l.trim().parse().ok()),
        socket_dir: opt(4),
        listen: opt(5),
        status: opt(7),
    })
}

/// Whether a name is a socket lock file, `.s.PGSQL.<port>.lock`.
pub fn is_socket_lock(name: &std::ffi::OsStr) -> bool {
    name.to_str()
        .and_then(|n| n.strip_prefix(".s.PGSQL.")?.strip_suffix(".lock"))
        .is_some_and(|port| !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()))
}

/// Postgres processes whose working directory is `dir` (by device and inode).
fn servers_in(dir_meta: &std::fs::Metadata, snap: &Snapshot) -> Vec<(i32, String)> {
    snap.processes()
        .iter()
        .filter(|p| common::proc_is(p, POSTGRES))
        .filter(|p| common::cwd_is(p.pid, dir_meta) == Some(true))
        .map(|p| (p.pid, crate::text::truncate(&p.name, 32)))
        .collect()
}

impl Dialect for Postgres {
    fn id(&self) -> DialectId {
        DialectId::POSTGRES
    }

    fn patterns(&self) -> &'static [&'static str] {
        &["postmaster.pid", ".s.PGSQL.*.lock"]
    }

    fn recognise(&self, c: &Candidate<'_>) -> bool {
        c.kind == EntryKind::File
            && (c.file_name() == "postmaster.pid" || is_socket_lock(c.file_name()))
    }

    fn decide(&self, c: &Candidate<'_>, snap: &Snapshot, _windows: &Windows) -> Decision {
        let socket_lock = is_socket_lock(c.file_name());
        let what = if socket_lock {
            "postgres socket lock"
        } else {
            "postmaster.pid"
        };
        let rec = match parse(c.content) {
            Ok(r) => r,
            Err(why) => return common::unparseable(what, why).into(),
        };
        if rec.pid == 0 {
            // What postgres itself says: "bogus data in lock file".
            return common::unparseable(what, "PID 0, which postgres itself rejects as bogus")
                .into();
        }
        let owner = Owner {
            pid: Some(rec.pid),
            created_at: rec.start_epoch.and_then(crate::probe::rfc3339),
            detail: Some(format!(
                "{}data directory {}{}{}",
                if rec.standalone {
                    "standalone backend (postgres --single), "
                } else {
                    ""
                },
                rec.data_dir,
                rec.port.map(|p| format!(", port {p}")).unwrap_or_default(),
                rec.status
                    .as_deref()
                    .map(|s| format!(", status {s}"))
                    .unwrap_or_default()
            )),
            ..Owner::default()
        };
        Decision::owned(owner, judge_server(c, snap, &rec, socket_lock, what))
    }
}

/// The server: a kernel lock, postgres processes in its data directory, a listener on its
/// socket, then the PID it recorded (in every namespace that sees the data directory).
fn judge_server(
    c: &Candidate<'_>,
    snap: &Snapshot,
    rec: &PostmasterPid,
    socket_lock: bool,
    what: &str,
) -> Judgement {
    if let Some(j) = common::kernel_live(snap, c.key(), what) {
        return j;
    }
    let dir = c.path.parent().unwrap_or(Path::new("/"));
    let dir_meta = std::fs::metadata(dir).ok();
    // The data directory, as this file lies in it (postmaster.pid) or as it records it
    // (a socket lock, which lies in the socket directory).
    let data_meta = if socket_lock {
        std::fs::metadata(&rec.data_dir).ok()
    } else {
        dir_meta.clone()
    };

    if let Some(meta) = &data_meta {
        let servers = servers_in(meta, snap);
        if !servers.is_empty() {
            let list = servers
                .iter()
                .map(|(pid, name)| format!("{pid} ({name})"))
                .collect::<Vec<_>>()
                .join(", ");
            let mut j = Judgement::new(
                Verdict::Live,
                format!(
                    "postgres processes run in {}data directory: {list}",
                    if socket_lock { "its " } else { "this " }
                ),
            );
            if let Some(f) = snap.pid(servers[0].0).facts() {
                j.process = Some(snap.process_info(f));
            }
            return j;
        }
    }
    if socket_lock && let Some(socket) = listening_socket(c, snap) {
        return Judgement::new(
            Verdict::Live,
            format!("a process listens on the server's socket {socket} (/proc/net/unix)"),
        );
    }

    let claim = PidClaim {
        pid: rec.pid,
        written_ms: rec.start_epoch.map(|s| s * 1000),
        expect: POSTGRES,
        ..PidClaim::default()
    };
    let claim = common::file_claim(c, claim);
    // Judged in the namespaces that see the data directory (a volume of a container):
    // their view of the recorded data directory is theirs, not ours.
    if let Some(mut j) = crate::evidence::judge_in_namespaces(&claim, snap) {
        if let Some(s) = rec.start_epoch {
            j.evidence.push(format!(
                "the server recorded its start at {}",
                fmt_ms(s * 1000)
            ));
        }
        return j;
    }
    let mut j = judge_pid(&claim, snap);

    // Written in another mount namespace (a container's volume seen from the host)? The
    // directory it records for itself is not the one it lies in.
    let recorded_dir = if socket_lock {
        rec.socket_dir.as_deref()
    } else {
        Some(rec.data_dir.as_str())
    };
    let recorded_here = match (&dir_meta, recorded_dir) {
        (Some(m), Some(r)) => {
            std::fs::metadata(r).is_ok_and(|r| r.dev() == m.dev() && r.ino() == m.ino())
        }
        // A socket lock that records no socket directory: nothing says it is elsewhere.
        (Some(_), None) => true,
        (None, _) => false,
    };
    if !recorded_here && dir_meta.is_some() && j.verdict != Verdict::Unknown {
        if !c.fs.network
            && let Some(line) = crate::evidence::written_before_boot(c.mtime_ms(), Some(c.fs), snap)
        {
            return Judgement::new(Verdict::Stale, line);
        }
        let mut f = Judgement::new(
            Verdict::Foreign,
            format!(
                "it records {} {} but lies in {}: it was written in another mount namespace (a container?), whose PID {} cannot be checked here",
                if socket_lock {
                    "socket directory"
                } else {
                    "data directory"
                },
                recorded_dir.unwrap_or_default(),
                common::field(&dir.to_string_lossy()),
                rec.pid
            ),
        );
        f.evidence
            .push("no postgres process runs in this directory".into());
        return f;
    }

    if j.verdict == Verdict::Live
        && let PidState::Alive(f) = snap.pid(rec.pid as i32)
        && let Some(meta) = &data_meta
        && common::cwd_is(f.pid, meta) == Some(false)
    {
        let cwd = f
            .cwd
            .as_deref()
            .map(|p| common::field(&p.to_string_lossy()))
            .unwrap_or_else(|| "elsewhere".into());
        j.verdict = Verdict::Stale;
        j.evidence = vec![format!(
            "process {} is a postgres serving another data directory ({cwd}), not {}",
            f.pid,
            if socket_lock {
                rec.data_dir.as_str()
            } else {
                "this one"
            }
        )];
    } else if j.verdict == Verdict::Stale {
        j.evidence.push(format!(
            "no postgres process runs in {} data directory",
            if socket_lock { "its" } else { "this" }
        ));
        if socket_lock {
            j.evidence
                .push("no process listens on the server's socket beside it".into());
        }
    }
    if let Some(s) = rec.start_epoch {
        j.evidence.push(format!(
            "the server recorded its start at {}",
            fmt_ms(s * 1000)
        ));
    }
    j
}

/// The unix socket a socket lock file guards (`.s.PGSQL.<port>` beside it), if a process
/// listens on it.
fn listening_socket(c: &Candidate<'_>, snap: &Snapshot) -> Option<String> {
    let name = c.file_name().to_str()?.strip_suffix(".lock")?;
    let path = c.path.with_file_name(name);
    let path = path.to_str()?;
    snap.unix_socket_listening(path)
        .then(|| common::field(path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_eight_lines() {
        let text = b"14928\n/tmp/fx/pg/data\n1795995835\n54329\n/tmp/fx/pg\nlocalhost\n 10010803         4\nready   \n";
        let r = parse(text).unwrap();
        assert_eq!(r.pid, 14928);
        assert_eq!(r.data_dir, "/tmp/fx/pg/data");
        assert_eq!(r.start_epoch, Some(1_795_995_835));
        assert_eq!(r.port, Some(54329));
        assert_eq!(r.status.as_deref(), Some("ready"));
        assert!(parse(b"14928\n").is_err());
        let single = parse(b"-14928\n/tmp/fx/pg/data\n1795995835\n").unwrap();
        assert_eq!((single.pid, single.standalone), (14928, true));
        assert!(parse(b"x\n/data\n").is_err());
    }

    #[test]
    fn socket_lock_names() {
        use std::ffi::OsStr;
        assert!(is_socket_lock(OsStr::new(".s.PGSQL.5432.lock")));
        assert!(!is_socket_lock(OsStr::new(".s.PGSQL.5432")));
        assert!(!is_socket_lock(OsStr::new(".s.PGSQL..lock")));
        assert!(!is_socket_lock(OsStr::new(".s.PGSQL.x.lock")));
    }
}
