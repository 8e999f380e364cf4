//! `ruby-lockfile`: the locks of Ruby's `lockfile` gem (`Lockfile.new(path).lock`, its
//! `rlock` command), any name the program gives them (`*.lock` usually), and the temporary
//! files `.HOST_PID_PROGRAM_SEC_USEC_RAND.lck` it links them from.
//!
//! Format, from the gem's `lib/lockfile.rb`: `create_tmplock` writes the lock id into a
//! temporary file beside the lock (`tmpnam`: `.HOST_PID_PROGRAM_SEC_USEC_RAND.lck`), then
//! `File.link`s it to the lock path; the id is four lines, `dump_lock_id`:
//! `host: H\npid: P\nppid: PP\ntime: YYYY-MM-DD HH:MM:SS.UUUUUU\n` (`gen_lock_id`:
//! `Socket.gethostname`, `Process.pid`, `Process.ppid`, the holder's local time, no zone).
//! While it holds the lock a refresher thread touches it every `refresh` seconds (8 by
//! default) and checks the id is still its own; `unlock` removes it. A killed holder leaves
//! the lock, and a killed locker the temporary file too.
//!
//! The gem's own takeover rules: a waiter takes a lock over when its mtime is older than
//! `max_age` (`validlock?`: 3600 s by default, `DEFAULT_MAX_AGE`; "lockfiles older than this
//! are stale"), so every other user waits up to an hour; `sweep` removes the temporary files
//! `.HOST_PID*.lck` whose host is this one and whose PID is not alive (`alive?`:
//! `Process.kill 0`).
//!
//! Judged by the same rules as every record: the host first (another host → `foreign`), then
//! the PID (gone or reused → `stale`; a Ruby that started before the lock → `live`), and the
//! refresh under the gem's promise, where no process with its PID runs here: a lock not
//! refreshed for longer than the default `max_age` is one the gem itself takes over (a live
//! process with its PID is left to the PID rules: its age never outweighs a live owner). The
//! `time` line is the writer's local time: it
//! is shown, never compared.

use super::message::Message;
use super::{Candidate, Dialect, DialectId, EntryKind, Windows, common};
use crate::judge::{OwnerClaim, Placed, Refresh, Said, When, Writers};
use crate::probe::Snapshot;
use crate::verdict::Owner;

pub struct RubyLockfile;

/// What the gem prints while a lock is in its way: its errors name no path
/// (`MaxTriesLockError`: "surpased retries"), but with `LOCKFILE_DEBUG` set (or `rlock
/// --debug`) its trace does (`lockfile.rb`, `trace`).
const MESSAGES: &[Message] = &[Message::en(
    "Ruby lockfile",
    r"attempting to lock <(?P<path>/[^>\n]+)>",
    &["{path}"],
    "attempting to lock </srv/app/jobs/nightly.lock>...",
)];

const PATTERNS: &[&str] = &["*.lock", "*.lck", "*.lockfile", "lock"];

/// Ruby interpreters (and JRuby's launcher, `jruby`).
const RUBIES: &[&str] = &["ruby", "ruby*", "rlock", "jruby"];

/// `Lockfile::DEFAULT_MAX_AGE`, in ms.
const MAX_AGE_MS: i64 = 3_600_000;

/// A lock id as `dump_lock_id` writes it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct LockId {
    host: String,
    pid: i64,
    ppid: Option<i64>,
    time: String,
}

fn parse(content: &[u8]) -> Option<LockId> {
    let text = std::str::from_utf8(content).ok()?;
    let lines: Vec<&str> = text.trim_end_matches('\n').split('\n').collect();
    let [host, pid, ppid, time] = lines.as_slice() else {
        return None;
    };
    let value = |line: &str, key: &str| -> Option<String> {
        let (k, v) = line.split_once(':')?;
        (k.trim() == key).then(|| v.trim().to_string())
    };
    let host = value(host, "host")?;
    let pid = common::parse_pid(&value(pid, "pid")?).ok()?;
    let ppid = common::parse_pid(&value(ppid, "ppid")?).ok();
    let time = value(time, "time")?;
    // `timestamp`: `%Y-%m-%d %H:%M:%S.` and six digits.
    let shaped = time.len() == 26
        && time.bytes().enumerate().all(|(i, b)| match i {
            4 | 7 => b == b'-',
            10 => b == b' ',
            13 | 16 => b == b':',
            19 => b == b'.',
            _ => b.is_ascii_digit(),
        });
    (!host.is_empty() && shaped).then_some(LockId {
        host,
        pid,
        ppid,
        time,
    })
}

/// Whether the name is one of the gem's temporary files (`tmpnam`).
fn is_tmplock(c: &Candidate<'_>) -> bool {
    let name = c.file_name().as_encoded_bytes();
    name.starts_with(b".")
        && name.ends_with(b".lck")
        && name.iter().filter(|&&b| b == b'_').count() >= 5
}

impl Dialect for RubyLockfile {
    fn id(&self) -> DialectId {
        DialectId::RUBY_LOCKFILE
    }

    fn about(&self) -> super::About {
        super::About {
            writer: "Ruby's `lockfile` gem",
            programs: &[],
            found_as: "any lock of the gem (`host:`, `pid:`, `ppid:`, `time:` lines, as `dump_lock_id` writes them), and its temporary `.HOST_PID_*.lck` files",
            judged_by: "another host: foreign; the PID: live for a Ruby, gone or reused: stale; not refreshed for the gem's `max_age` (1 h), with which every waiter takes it over, and no process has its PID here: stale. The `time` line is local time: shown, never compared",
            rules: &["pid-gone", "pid-reused", "heartbeat-expired"],
            source: Some("the gem's `lib/lockfile.rb`"),
        }
    }

    fn patterns(&self) -> &'static [&'static str] {
        PATTERNS
    }

    fn messages(&self) -> &'static [Message] {
        MESSAGES
    }

    fn recognise(&self, c: &Candidate<'_>, _snap: &Snapshot) -> bool {
        c.kind == EntryKind::File && c.complete && parse(c.content).is_some()
    }

    /// Another program's file of these names is not the gem's.
    fn judges_unrecognised(&self) -> bool {
        false
    }

    fn read(&self, c: &Candidate<'_>, snap: &Snapshot, _windows: &Windows) -> Said {
        let Some(id) = parse(c.content) else {
            return Said::unparseable(
                "Ruby lockfile",
                "not the gem's four lines host, pid, ppid, time",
            );
        };
        let tmp = is_tmplock(c);
        let host = common::field(&id.host);
        let owner = Owner {
            pid: Some(id.pid),
            hostname: Some(host.clone()),
            detail: Some(format!(
                "{} of Ruby's lockfile gem, taken at {} (the holder's local time){}",
                if tmp { "temporary lock file" } else { "lock" },
                common::field(&id.time),
                id.ppid
                    .map(|p| format!(", parent PID {p}"))
                    .unwrap_or_default()
            )),
            ..Owner::default()
        };
        let mut said = Said::claims(owner)
            .claim(OwnerClaim::pid(id.pid, Writers::named(RUBIES)).host(Some(id.host.clone())));
        if tmp {
            said = said.note(
                When::IfStale,
                "the gem's own sweep removes such a temporary file once its PID is gone on this host; removing it is safe now",
            );
        } else if pid_exists(snap, id.pid) {
            // A process with its PID runs here: the PID rules judge it (a live holder, or one
            // proven to have started after the lock). The age alone does not outweigh a live
            // owner, whatever its refresher did.
            said = said.note(
                When::IfStale,
                "every program using the lockfile gem waits on it up to its max_age (an hour by default) before taking it over; removing it is safe now",
            );
        } else {
            said = said
                .claim(Refresh {
                    // The file's last change (its ctime), which the judge reads itself: a
                    // touch moves it, and nobody can move it back.
                    last_ms: i64::MIN,
                    window_ms: MAX_AGE_MS,
                    fresh_ms: None,
                    promise: "the lockfile gem's holder touches its lock every few seconds (refresh, 8 s by default), and a waiter takes over a lock older than max_age (1 h by default)".into(),
                    placed: Placed::by(
                        "its record is the lockfile gem's four lines (host, pid, ppid, time), as dump_lock_id writes them",
                    ),
                })
                .note(
                    When::IfStale,
                    "every program using the lockfile gem waits on it up to its max_age (an hour by default) before taking it over; removing it is safe now",
                );
        }
        said
    }
}

/// Whether a process (not a zombie) with this PID exists on this machine.
fn pid_exists(snap: &Snapshot, pid: i64) -> bool {
    i32::try_from(pid).is_ok_and(|p| {
        p > 0
            && !matches!(
                snap.pid(p),
                crate::probe::PidState::Absent | crate::probe::PidState::Zombie(_)
            )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gems_four_lines_are_read_and_nothing_else() {
        let id = parse(b"host: build-7\npid: 4242\nppid: 4200\ntime: 2026-12-07 22:33:01.123456\n")
            .unwrap();
        assert_eq!(id.host, "build-7");
        assert_eq!(id.pid, 4242);
        assert_eq!(id.ppid, Some(4200));
        assert!(parse(b"host: build-7\npid: 4242\nppid: 4200\n").is_none());
        assert!(parse(b"host: build-7\npid: 4242\nppid: 4200\ntime: yesterday\n").is_none());
        assert!(
            parse(b"pid: 4242\nhost: build-7\nppid: 4200\ntime: 2026-12-07 22:33:01.123456\n")
                .is_none()
        );
        assert!(
            parse(b"host: \npid: 4242\nppid: 4200\ntime: 2026-12-07 22:33:01.123456\n").is_none()
        );
    }
}
