//! `rails`: the server pid file of a Rack application, `tmp/pids/server.pid` (Rails' `rails
//! server`, Rack's `rackup`, Puma).
//!
//! Format, from Rack's `lib/rack/server.rb` (`write_pid`: `::File.open(options[:pid],
//! ::File::CREAT | ::File::EXCL | ::File::WRONLY){ |f| f.write("#{Process.pid}") }`) and
//! Puma's `lib/puma/launcher.rb` (`write_pid`: `File.write(path, Process.pid)`): the decimal
//! PID, no newline. Rack refuses to start while it names a live process ("A server is
//! already running"), and deletes it when the PID is dead (`pidfile_process_status`).
//!
//! In docker-compose setups the file lives in a bind-mounted app directory and names the
//! container's PID 1, so a host PID with that number proves nothing. Liveness: the PID rules
//! of [`crate::evidence`], where the owner must be a Ruby interpreter (Rack servers run in
//! `ruby`, `jruby` on `java`, or `truffleruby`) that started before the file was written,
//! working in this application's directory.

use std::path::Path;

use super::{Candidate, Decision, Dialect, DialectId, EntryKind, Windows, common};
use crate::evidence::{PidClaim, judge_pid};
use crate::probe::Snapshot;
use crate::verdict::{Judgement, Owner, Verdict};

pub struct Rails;

const PATTERNS: &[&str] = &["**/tmp/pids/server.pid"];

/// The interpreters a Rack server runs in.
const RUBIES: &[&str] = &["ruby", "jruby", "truffleruby", "java"];

impl Dialect for Rails {
    fn id(&self) -> DialectId {
        DialectId::RAILS
    }

    fn patterns(&self) -> &'static [&'static str] {
        PATTERNS
    }

    fn recognise(&self, c: &Candidate<'_>) -> bool {
        c.kind == EntryKind::File
            && c.path.ends_with("tmp/pids/server.pid")
            && common::looks_like_pid(&c.text())
    }

    fn decide(&self, c: &Candidate<'_>, snap: &Snapshot, _windows: &Windows) -> Decision {
        let app = c
            .path
            .parent()
            .and_then(|p| p.parent())
            .and_then(|p| p.parent())
            .unwrap_or(c.path);
        let pid = match common::parse_pid(&c.text()) {
            Ok(p) => p,
            Err(why) => return common::unparseable("Rack server pid file", why).into(),
        };
        let owner = Owner {
            pid: Some(pid),
            detail: Some(format!(
                "server pid file of the Rack/Rails app in {}",
                common::field(&app.to_string_lossy())
            )),
            ..Owner::default()
        };
        let j = common::kernel_live(snap, c.key(), "the pid file")
            .unwrap_or_else(|| judge_server(c, snap, pid, app));
        Decision::owned(owner, j)
    }
}

/// The server the pid file names: a Ruby process, working in the app's directory.
fn judge_server(c: &Candidate<'_>, snap: &Snapshot, pid: i64, app: &Path) -> Judgement {
    let claim = PidClaim {
        pid,
        expect: RUBIES,
        ..PidClaim::default()
    };
    let mut j = judge_pid(&common::file_claim(c, claim), snap);
    if j.verdict == Verdict::Live
        && let Ok(app_meta) = std::fs::metadata(app)
    {
        // The process as this host numbers it (a container's PID 1 is another PID here).
        let host_pid = j.process.as_ref().map_or(pid as i32, |p| p.pid);
        match common::cwd_is(host_pid, &app_meta) {
                Some(true) => j
                    .evidence
                    .push(format!("it works in the app's directory {}", app.display())),
                Some(false) => {
                    let cwd = std::fs::read_link(format!("/proc/{host_pid}/cwd"))
                        .map(|p| common::field(&p.to_string_lossy()))
                        .unwrap_or_else(|_| "elsewhere".into());
                    j.verdict = Verdict::Unknown;
                    j.evidence.push(format!(
                        "but it works in {cwd}, not in this app's directory: it may be another app's server (a server started with --pid pointing here would work elsewhere)"
                    ));
                }
                None => j.evidence.push(
                    "its working directory cannot be read, so it is not known whether it serves this app".into(),
                ),
            }
    }
    if j.verdict == Verdict::Stale {
        j.evidence.push(
                "`rails server` refuses to start while this file names a live process; removing it lets the server start".into(),
            );
    }
    j
}
