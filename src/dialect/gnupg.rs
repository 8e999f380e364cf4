//! `gnupg`: the temporary files GnuPG's dotlocks are linked from,
//! `.#lk0x<address>.<host>.<pid>`, left beside `pubring.kbx`, `trustdb.gpg`, ... in `~/.gnupg`
//! when gpg dies while taking a lock. (The dotlocks themselves, `pubring.kbx.lock`,
//! `trustdb.gpg.lock`, ..., are read by the `pidfile` dialect's multi-line records, with the
//! same rule.)
//!
//! Format, from libgpg-error's `src/dotlock.c` (formerly GnuPG's `common/dotlock.c`,
//! `dotlock_take_unix` / `read_lockfile`): the PID formatted `"%10d\n"` (right-aligned in 10
//! columns), then the node name and `"\n"`. The lock is made by writing the temporary file
//! and `link()`ing it to `<file>.lock`. GnuPG's own rule: a lock naming this node whose PID
//! does not exist is stale and removed; one of another node is waited for.
//!
//! Liveness: a kernel lock, then the PID rules of [`crate::judge`] with the host it names.
//!
//! One held dotlock is one lock: a handle that is a hard link of a `*.lock` beside it (the
//! holder's: `link()` made the lock from it) or the handle of a live process of this host
//! while a `*.lock` is beside it (a waiter's, retrying) belongs to that lock
//! ([`belongs_to_a_lock`]): the scan lists the lock, not the handle, and the lock's detail
//! names its handles and waiters. Only a handle left alone (its process gone, or no lock
//! beside it) is a lock of its own here.

use super::message::Message;
use super::{Candidate, Dialect, DialectId, EntryKind, Windows, common};
use crate::judge::{OwnerClaim, Said, Writers};
use crate::probe::Snapshot;
use crate::verdict::Owner;

pub struct Gnupg;

const PATTERNS: &[&str] = &[".#lk0x*"];

/// `%10d\n<node>\n`.
pub fn parse(content: &[u8]) -> Option<(i64, String)> {
    let text = std::str::from_utf8(content).ok()?;
    let (pid, rest) = text.split_at_checked(11)?;
    let pid = pid.strip_suffix('\n')?;
    let host = rest.strip_suffix('\n')?;
    if host.is_empty()
        || host.contains('\n')
        || !pid.trim_start().bytes().all(|b| b.is_ascii_digit())
    {
        return None;
    }
    Some((common::parse_pid(pid).ok()?, host.to_string()))
}

/// What GnuPG's programs (gpg, gpgsm, gpg-agent, dirmngr) print while a dotlock is held (and
/// the translations): the PID, not the file, which is in the GnuPG home.
const MESSAGES: &[Message] = &[
    Message::en(
        "GnuPG",
        r"waiting for lock \(held by (?P<pid>\d+)",
        &[
            "$GNUPGHOME/*.lock",
            "$GNUPGHOME/public-keys.d/*.lock",
            "~/.gnupg/*.lock",
            "~/.gnupg/public-keys.d/*.lock",
        ],
        "gpg: waiting for lock (held by 4242) ...",
    ),
    Message::en(
        "GnuPG",
        r"waiting for lock (?P<path>/\S+?)\.\.\.",
        &["{path}"],
        "gpg: waiting for lock /home/me/.gnupg/pubring.kbx.lock...",
    ),
    Message::tr(
        "de",
        "GnuPG",
        r"warte auf die Freigabe der Sperre \(gehalten von (?P<pid>\d+)",
        &[
            "$GNUPGHOME/*.lock",
            "$GNUPGHOME/public-keys.d/*.lock",
            "~/.gnupg/*.lock",
            "~/.gnupg/public-keys.d/*.lock",
        ],
        "gpg: warte auf die Freigabe der Sperre (gehalten von 4242) ...",
    ),
    Message::tr(
        "fr",
        "GnuPG",
        r"attente du verrou \(appartenant à (?P<pid>\d+)",
        &[
            "$GNUPGHOME/*.lock",
            "$GNUPGHOME/public-keys.d/*.lock",
            "~/.gnupg/*.lock",
            "~/.gnupg/public-keys.d/*.lock",
        ],
        "gpg: attente du verrou (appartenant à 4242) …",
    ),
    Message::tr(
        "es",
        "GnuPG",
        r"esperando al bloqueo \(que mantiene (?P<pid>\d+)",
        &[
            "$GNUPGHOME/*.lock",
            "$GNUPGHOME/public-keys.d/*.lock",
            "~/.gnupg/*.lock",
            "~/.gnupg/public-keys.d/*.lock",
        ],
        "gpg: esperando al bloqueo (que mantiene 4242) ...",
    ),
];

impl Dialect for Gnupg {
    fn id(&self) -> DialectId {
        DialectId::GNUPG
    }

    fn about(&self) -> super::About {
        super::About {
            writer: "GnuPG (libgpg-error's dotlocks)",
            programs: &["gnupg", "gpg", "gpg-agent"],
            found_as: "the temporary files `.#lk0x<address>.<host>.<pid>` the dotlocks are linked from, beside `pubring.kbx`, `trustdb.gpg`, ...; the dotlocks themselves (`*.lock`: the PID in 10 columns, then the host) are `pidfile` records. One held dotlock is one row: a handle linked to a `*.lock` beside it, or kept by a live waiter, is part of that lock",
            judged_by: "GnuPG's rule: same host and PID gone: stale (gpg itself then removes a dotlock so judged); another host: foreign",
            rules: &["pid-gone", "pid-reused", "earlier-boot"],
            source: Some("libgpg-error `src/dotlock.c`"),
        }
    }

    fn patterns(&self) -> &'static [&'static str] {
        PATTERNS
    }

    fn messages(&self) -> &'static [Message] {
        MESSAGES
    }

    fn part_of_another_lock(
        &self,
        dir: std::os::fd::BorrowedFd<'_>,
        name: &std::ffi::OsStr,
        meta: &crate::probe::Stat,
        live: bool,
    ) -> bool {
        belongs_to_a_lock(dir, name, meta, live)
    }

    fn dotlock(&self, content: &[u8]) -> bool {
        parse(content).is_some()
    }

    fn recognise(&self, c: &Candidate<'_>, _snap: &Snapshot) -> bool {
        c.kind == EntryKind::File
            && c.file_name().as_encoded_bytes().starts_with(b".#lk0x")
            && c.complete
            && parse(c.content).is_some()
    }

    fn read(&self, c: &Candidate<'_>, _snap: &Snapshot, _windows: &Windows) -> Said {
        let Some((pid, host)) = parse(c.content) else {
            return Said::unparseable("GnuPG dotlock", common::excerpt(c.content));
        };
        let locked = c.file_name().to_string_lossy();
        let owner = Owner {
            pid: Some(pid),
            hostname: Some(common::field(&host)),
            detail: Some(format!(
                "GnuPG dotlock temporary file {}",
                common::field(&locked)
            )),
            ..Owner::default()
        };
        Said::claims(owner).claim(OwnerClaim::pid(pid, Writers::ANY).host(Some(host)))
    }
}

/// Whether the handle `name` (of the open directory `dir`, with status `meta`) belongs to a
/// dotlock beside it: it is a hard link of a `*.lock` regular file there, or its process is
/// alive on this host (`live`: its verdict) and a `*.lock` file is there, which it is retrying
/// to take. Reads the directory's entries and the status of its `*.lock` files only.
pub fn belongs_to_a_lock(
    dir: std::os::fd::BorrowedFd<'_>,
    name: &std::ffi::OsStr,
    meta: &crate::probe::Stat,
    live: bool,
) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(entries) = rustix::fs::Dir::read_from(dir) else {
        return false;
    };
    let mut any_lock = false;
    for e in entries.flatten() {
        let n = e.file_name();
        let n = std::ffi::OsStr::from_bytes(n.to_bytes());
        if n == name || !n.as_bytes().ends_with(b".lock") {
            continue;
        }
        let Ok(st) = rustix::fs::statat(dir, n, rustix::fs::AtFlags::SYMLINK_NOFOLLOW) else {
            continue;
        };
        if rustix::fs::FileType::from_raw_mode(st.st_mode) != rustix::fs::FileType::RegularFile {
            continue;
        }
        any_lock = true;
        #[allow(clippy::unnecessary_cast)]
        if meta.nlink() > 1 && st.st_ino as u64 == meta.ino() && st.st_dev as u64 == meta.dev() {
            return true;
        }
    }
    live && any_lock
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_handle_belongs_to_the_lock_it_is_linked_to_or_that_its_live_process_retries() {
        use std::os::fd::AsFd;
        let dir = tempfile::tempdir().unwrap();
        let open = || std::fs::File::open(dir.path()).unwrap();
        let handle = dir.path().join(".#lk0x0000aa.vm.4242");
        std::fs::write(&handle, "      4242\nvm\n").unwrap();
        let meta = || std::fs::symlink_metadata(&handle).unwrap();
        let name = handle.file_name().unwrap();
        let d = open();
        // Alone: a lock of its own, whatever its process.
        assert!(!super::belongs_to_a_lock(
            d.as_fd(),
            name,
            &crate::probe::Stat::from(meta()),
            true
        ));
        // A lock beside it: a live process retries it; a dead one's handle is left over.
        std::fs::write(dir.path().join("pubring.kbx.lock"), "      7\nvm\n").unwrap();
        let d = open();
        assert!(super::belongs_to_a_lock(
            d.as_fd(),
            name,
            &crate::probe::Stat::from(meta()),
            true
        ));
        assert!(!super::belongs_to_a_lock(
            d.as_fd(),
            name,
            &crate::probe::Stat::from(meta()),
            false
        ));
        // Linked to a lock: that lock's, whatever its process.
        std::fs::hard_link(&handle, dir.path().join("trustdb.gpg.lock")).unwrap();
        let d = open();
        assert!(super::belongs_to_a_lock(
            d.as_fd(),
            name,
            &crate::probe::Stat::from(meta()),
            false
        ));
    }

    #[test]
    fn parses_the_dotlock_record() {
        assert_eq!(super::parse(b"      4242\nvm\n"), Some((4242, "vm".into())));
        assert_eq!(super::parse(b"4242\nvm\n"), None);
        assert_eq!(super::parse(b"      4242\n"), None);
        assert_eq!(super::parse(b"      4242\nvm\nextra\n"), None);
    }
}
