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

    fn patterns(&self) -> &'static [&'static str] {
        PATTERNS
    }

    fn messages(&self) -> &'static [Message] {
        MESSAGES
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

#[cfg(test)]
mod tests {
    #[test]
    fn parses_the_dotlock_record() {
        assert_eq!(super::parse(b"      4242\nvm\n"), Some((4242, "vm".into())));
        assert_eq!(super::parse(b"4242\nvm\n"), None);
        assert_eq!(super::parse(b"      4242\n"), None);
        assert_eq!(super::parse(b"      4242\nvm\nextra\n"), None);
    }
}
