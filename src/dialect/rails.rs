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
//! of [`crate::judge`]: `live` for a Ruby interpreter (Rack servers run in `ruby`, `jruby` on
//! `java`, or `truffleruby`) that started before the file was written and works in this
//! application's directory; `unknown` for any other live process that started before it (a
//! container's PID 1 may be a shell or an init that started the server).

use super::message::Message;
use super::{Candidate, Dialect, DialectId, EntryKind, Windows, common};
use crate::judge::{OwnerClaim, Said, When, Writers};
use crate::probe::Snapshot;
use crate::verdict::Owner;

pub struct Rails;

const PATTERNS: &[&str] = &["**/tmp/pids/server.pid"];

/// The interpreters a Rack server runs in.
const RUBIES: &[&str] = &["ruby*", "jruby", "truffleruby", "java", "puma*", "rails"];

/// What Rails and Rack print when their pid file is there.
const MESSAGES: &[Message] = &[
    Message::en(
        "Rails",
        r"A server is already running \(pid: (?P<pid>\d+), file: (?P<path>[^)\n]+)\)",
        &["{path}"],
        "A server is already running (pid: 4242, file: /app/tmp/pids/server.pid).",
    ),
    Message::en(
        "Rack",
        r"(?m)A server is already running\. Check (?P<path>\S+?)\.?$",
        &["{path}", "tmp/pids/server.pid"],
        "A server is already running. Check tmp/pids/server.pid.",
    ),
];

impl Dialect for Rails {
    fn id(&self) -> DialectId {
        DialectId::RAILS
    }

    fn about(&self) -> super::About {
        super::About {
            writer: "Rack, Rails (`rails server`), Puma",
            programs: &["rails", "puma"],
            found_as: "`tmp/pids/server.pid` of an application: the decimal PID, often the container's PID 1",
            judged_by: "the PID: live for a Ruby interpreter working in the application's directory (as its namespace sees it); a Ruby working elsewhere or another program: unknown; reused or gone: stale",
            rules: &["pid-gone", "pid-reused", "earlier-boot"],
            source: Some("Rack `lib/rack/server.rb` (`write_pid`), Puma `lib/puma/launcher.rb`"),
        }
    }

    /// An application's pid file (`APP/tmp/pids/*.pid`, Rails', Puma's and Rack's, whoever
    /// judges it): its owner works in `APP`.
    fn places(&self) -> &'static [crate::judge::Place] {
        &[crate::judge::Place {
            name: None,
            ext: Some("pid"),
            within: &["tmp", "pids"],
        }]
    }

    fn patterns(&self) -> &'static [&'static str] {
        PATTERNS
    }

    fn messages(&self) -> &'static [Message] {
        MESSAGES
    }

    fn recognise(&self, c: &Candidate<'_>, _snap: &Snapshot) -> bool {
        c.kind == EntryKind::File
            && c.path.ends_with("tmp/pids/server.pid")
            && common::looks_like_pid(&c.text())
    }

    fn read(&self, c: &Candidate<'_>, _snap: &Snapshot, _windows: &Windows) -> Said {
        let app = c
            .path
            .parent()
            .and_then(|p| p.parent())
            .and_then(|p| p.parent())
            .unwrap_or(c.path);
        let pid = match common::parse_pid(&c.text()) {
            Ok(p) => p,
            Err(why) => return Said::unparseable("Rack server pid file", why),
        };
        let owner = Owner {
            pid: Some(pid),
            detail: Some(format!(
                "server pid file of the Rack/Rails app in {}",
                common::field(&app.to_string_lossy())
            )),
            ..Owner::default()
        };
        Said::claims(owner)
            .claim(OwnerClaim::pid(pid, Writers::named(RUBIES)))
            .note(
                When::IfStale,
                "`rails server` refuses to start while this file names a live process; removing it lets the server start",
            )
    }
}
