//! `postgres`: `postmaster.pid` in a PostgreSQL data directory. Eight lines: postmaster PID,
//! data directory, start time (seconds since the epoch), port, socket directory, listen
//! address, shared-memory key and id, status (`starting`, `ready`, `stopping`, `standby`).
//!
//! Liveness: a postgres process whose working directory is this data directory (the
//! postmaster and every backend `chdir` there; compared by inode, so it also holds for a
//! server in a container seen from the host) proves it live. Otherwise the PID must be a
//! postgres started before the recorded start time — the Docker trap is a restarted container
//! whose old file names a low PID now held by an unrelated process: stale, naming it. A file
//! recording another data directory than the one it lies in was written in another mount
//! namespace, whose PIDs are not ours: foreign unless something else proves it stale.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use super::common;
use super::{Candidate, Dialect, EntryKind, Windows};
use crate::evidence::{PidClaim, fmt_ms, judge_pid};
use crate::probe::{PidState, Snapshot};
use crate::verdict::{Judgement, Owner, Verdict};

pub struct Postgres;

/// Names of PostgreSQL server processes.
pub const POSTGRES: &[&str] = &["postgres", "postmaster"];

/// What `postmaster.pid` records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PostmasterPid {
    pub pid: i64,
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
    let pid = common::parse_pid(first)?;
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
        data_dir: common::field(data_dir),
        start_epoch: lines.get(2).and_then(|l| l.trim().parse().ok()),
        port: lines.get(3).and_then(|l| l.trim().parse().ok()),
        socket_dir: opt(4),
        listen: opt(5),
        status: opt(7),
    })
}

/// Postgres processes whose working directory is `dir` (by device and inode).
fn servers_in(dir_meta: &std::fs::Metadata, snap: &Snapshot) -> Vec<(i32, String)> {
    snap.processes()
        .iter()
        .filter(|p| common::proc_is(p, POSTGRES))
        .filter(|p| common::cwd_is(p.pid, dir_meta) == Some(true))
        .map(|p| (p.pid, common::escape(&p.name, 32)))
        .collect()
}

impl Dialect for Postgres {
    fn id(&self) -> &'static str {
        "postgres"
    }

    fn patterns(&self) -> &'static [&'static str] {
        &["postmaster.pid"]
    }

    fn recognise(&self, c: &Candidate<'_>) -> bool {
        c.kind == EntryKind::File && c.file_name() == "postmaster.pid"
    }

    fn judge(&self, c: &Candidate<'_>, snap: &Snapshot, _windows: &Windows) -> Judgement {
        let rec = match parse(c.content) {
            Ok(r) => r,
            Err(why) => return common::unparseable("postmaster.pid", why),
        };
        let owner = Owner {
            pid: Some(rec.pid),
            created_at: rec.start_epoch.and_then(crate::probe::rfc3339),
            detail: Some(format!(
                "data directory {}{}{}",
                rec.data_dir,
                rec.port.map(|p| format!(", port {p}")).unwrap_or_default(),
                rec.status
                    .as_deref()
                    .map(|s| format!(", status {s}"))
                    .unwrap_or_default()
            )),
            ..Owner::default()
        };
        if let Some(j) = common::kernel_live(snap, c.key(), "postmaster.pid") {
            return common::with_owner(j, owner);
        }
        let dir = c.path.parent().unwrap_or(Path::new("/"));
        let dir_meta = std::fs::metadata(dir).ok();

        if let Some(meta) = &dir_meta {
            let servers = servers_in(meta, snap);
            if !servers.is_empty() {
                let list = servers
                    .iter()
                    .map(|(pid, name)| format!("{pid} ({name})"))
                    .collect::<Vec<_>>()
                    .join(", ");
                let mut j = Judgement::new(
                    Verdict::Live,
                    format!("postgres processes run in this data directory: {list}"),
                );
                if let Some(f) = snap.pid(servers[0].0).facts() {
                    j.process = Some(snap.process_info(f));
                }
                return common::with_owner(j, owner);
            }
        }

        let written_ms = rec.start_epoch.map(|s| s * 1000).unwrap_or(c.mtime_ms());
        let claim = PidClaim {
            pid: rec.pid,
            written_ms: Some(written_ms),
            expect: POSTGRES,
            fs: Some(c.fs),
            ..PidClaim::default()
        };
        let mut j = judge_pid(&claim, snap);

        // Written in another mount namespace (a container's volume seen from the host)?
        let recorded_here = dir_meta.as_ref().is_some_and(|m| {
            std::fs::metadata(&rec.data_dir).is_ok_and(|r| r.dev() == m.dev() && r.ino() == m.ino())
        });
        if !recorded_here && dir_meta.is_some() && j.verdict != Verdict::Unknown {
            let before_boot = crate::evidence::written_before_boot(c.mtime_ms(), Some(c.fs), snap);
            if let Some(line) = before_boot {
                return common::with_owner(Judgement::new(Verdict::Stale, line), owner);
            }
            let mut f = Judgement::new(
                Verdict::Foreign,
                format!(
                    "it records data directory {} but lies in {}: it was written in another mount namespace (a container?), whose PID {} cannot be checked here",
                    rec.data_dir,
                    common::field(&dir.to_string_lossy()),
                    rec.pid
                ),
            );
            f.evidence
                .push("no postgres process runs in this directory".into());
            return common::with_owner(f, owner);
        }

        if j.verdict == Verdict::Live
            && let PidState::Alive(f) = snap.pid(rec.pid as i32)
            && let Some(meta) = &dir_meta
            && common::cwd_is(f.pid, meta) == Some(false)
        {
            let cwd = f
                .cwd
                .as_deref()
                .map(|p| common::field(&p.to_string_lossy()))
                .unwrap_or_else(|| "elsewhere".into());
            j.verdict = Verdict::Stale;
            j.evidence = vec![format!(
                "process {} is a postgres serving another data directory ({cwd}), not this one",
                f.pid
            )];
        } else if j.verdict == Verdict::Stale {
            j.evidence
                .push("no postgres process runs in this data directory".into());
        }
        if let Some(s) = rec.start_epoch {
            j.evidence.push(format!(
                "the server recorded its start at {}",
                fmt_ms(s * 1000)
            ));
        }
        common::with_owner(j, owner)
    }
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
        assert!(parse(b"x\n/data\n").is_err());
    }
}
