//! `pacman`: libalpm's database lock `db.lck` in pacman's database directory
//! (`/var/lib/pacman/db.lck`, or under any `--dbpath`).
//!
//! Format, from pacman's `lib/libalpm/handle.c` (`_alpm_handle_lock`): the file is created
//! with `open(O_WRONLY|O_CREAT|O_EXCL|O_CLOEXEC, 0000)`, nothing is written to it, and the
//! descriptor stays open in `handle->lockfd` until `_alpm_handle_unlock` closes and unlinks
//! it. pacman itself never judges it: it refuses to run ("unable to lock database") and
//! tells the user to remove it if no pacman runs.
//!
//! Liveness: a process with the file open holds it (`live`). Nobody has it open, every
//! process's descriptors were read, and no pacman, pamac or yay (or another libalpm front
//! end) runs: `stale`. A front end that runs without the file open may be about to take it
//! (`unknown`).

use super::message::Message;
use super::{Candidate, Dialect, DialectId, EntryKind, Windows, common};
use crate::judge::{Keeps, Said, When, Writers};
use crate::probe::Snapshot;
use crate::verdict::Owner;

pub struct Pacman;

const PATTERNS: &[&str] = &["db.lck"];

/// Programs that drive libalpm and take this lock (or run pacman to take it).
pub const FRONT_ENDS: &[&str] = &[
    "pacman",
    "pamac",
    "yay",
    "paru",
    "pikaur",
    "trizen",
    "aura",
    "octopi",
    "packagekitd",
    "powerpill",
    "pacaur",
    "makepkg",
];

/// What pacman prints when its database lock is there.
const MESSAGES: &[Message] = &[
    Message::en(
        "pacman",
        r"you can remove (?P<path>/\S*db\.lck)",
        &["{path}"],
        "  running, you can remove /var/lib/pacman/db.lck",
    ),
    Message::en(
        "pacman",
        r"(?:unable to lock database|could not lock database)",
        &["/var/lib/pacman/db.lck"],
        "error: failed to init transaction (unable to lock database)",
    ),
];

impl Dialect for Pacman {
    fn id(&self) -> DialectId {
        DialectId::PACMAN
    }

    fn patterns(&self) -> &'static [&'static str] {
        PATTERNS
    }

    fn messages(&self) -> &'static [Message] {
        MESSAGES
    }

    fn recognise(&self, c: &Candidate<'_>) -> bool {
        c.kind == EntryKind::File && c.file_name() == "db.lck" && c.content.is_empty()
    }

    fn read(&self, c: &Candidate<'_>, snap: &Snapshot, _windows: &Windows) -> Said {
        if c.kind != EntryKind::File {
            return Said::unparseable(
                "pacman",
                format!("db.lck is {}, not a file", common::kind_name(c.kind)),
            );
        }
        let owner = Owner {
            detail: Some("libalpm database lock (empty; held open by pacman while it runs)".into()),
            ..Owner::default()
        };
        let mut said = Said::claims(owner)
            .claim(Keeps::Open {
                promise: "pacman keeps db.lck open for as long as it runs".into(),
            })
            .note(
                When::IfStale,
                "no pacman, pamac, yay or other libalpm front end runs",
            )
            .note(
                When::IfStale,
                "pacman refuses to run while it exists (\"unable to lock database\"); removing it is safe now",
            );
        let fronts = Writers::named(FRONT_ENDS).running(snap);
        if !fronts.is_empty() {
            let list: Vec<String> = fronts
                .iter()
                .take(8)
                .map(|p| format!("{} (pid {})", crate::text::truncate(&p.name, 32), p.pid))
                .collect();
            said = said.doubt(format!(
                "{} runs: it may be about to take the lock; let it finish or quit it first",
                list.join(", ")
            ));
        }
        said
    }
}
