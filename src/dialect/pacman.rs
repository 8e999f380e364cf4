//! `pacman`: libalpm's database lock `db.lck` in pacman's database directory
//! (`/var/lib/pacman/db.lck`, or under any `--dbpath`).
//!
//! Format, from pacman's `lib/libalpm/handle.c` (`_alpm_handle_lock`): the file is created
//! with `open(O_WRONLY|O_CREAT|O_EXCL|O_CLOEXEC, 0000)`, nothing is written to it, and the
//! descriptor stays open in `handle->lockfd` until `_alpm_handle_unlock` closes and unlinks
//! it. pacman itself never judges it: it refuses to run ("unable to lock database") and
//! tells the user to remove it if no pacman runs.
//!
//! Whose it is: libalpm's, when it is shaped as libalpm makes it (empty, mode 0000: no
//! program makes a lock unreadable to its own user otherwise) in a libalpm database directory
//! (one holding `local/ALPM_DB_VERSION`, which libalpm writes when it creates the local
//! database). Another program's `db.lck` (a Java database's, say) is not pacman's, whatever
//! runs or not: it is neither recognised nor judged here.
//!
//! Liveness: a process with the file open holds it (`live`). Nobody has it open, every
//! process's descriptors were read, and no pacman, pamac or yay (or another libalpm front
//! end) runs: `stale`. A front end that runs without the file open may be about to take it
//! (`unknown`).

use super::message::Message;
use super::{Candidate, Dialect, DialectId, EntryKind, Windows, common};
use crate::judge::{Judgement, Keeps, Placed, Said, When, Writers};
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

/// Whether `db.lck` is libalpm's (see the module docs).
fn placed(c: &Candidate<'_>, snap: &Snapshot) -> Result<Placed, String> {
    if !c.content.is_empty() || c.meta.permissions() & 0o777 != 0 {
        return Err(format!(
            "it is not shaped as libalpm makes it (empty, mode 0000; this one is {} bytes, mode {:o})",
            c.meta.len(),
            c.meta.permissions()
        ));
    }
    let dir = c.path.parent().unwrap_or(c.path);
    let version = dir.join("local/ALPM_DB_VERSION");
    if !snap.lstat(&version).is_ok_and(|m| m.is_file()) {
        return Err(format!(
            "{} is no libalpm database directory (no local/ALPM_DB_VERSION)",
            common::field(&dir.to_string_lossy())
        ));
    }
    Ok(Placed::by(format!(
        "empty and mode 0000, as libalpm makes it, in the libalpm database directory {}",
        common::field(&dir.to_string_lossy())
    )))
}

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

    fn about(&self) -> super::About {
        super::About {
            writer: "pacman (libalpm)",
            programs: &["pacman", "libalpm"],
            found_as: "`db.lck` in a libalpm database directory (one holding `local/ALPM_DB_VERSION`), empty, mode 0000",
            judged_by: "held open by pacman: live; nobody has it open (every process's descriptors read): stale; a libalpm front end that runs: unknown",
            rules: &["open-released"],
            source: Some("pacman `lib/libalpm/handle.c` (`_alpm_handle_lock`)"),
        }
    }

    fn patterns(&self) -> &'static [&'static str] {
        PATTERNS
    }

    fn messages(&self) -> &'static [Message] {
        MESSAGES
    }

    fn recognise(&self, c: &Candidate<'_>, snap: &Snapshot) -> bool {
        c.kind == EntryKind::File && c.file_name() == "db.lck" && placed(c, snap).is_ok()
    }

    /// `db.lck` is other programs' name too (HSQLDB's, Derby's): only one shaped and placed
    /// as libalpm makes it is pacman's.
    fn judges_unrecognised(&self) -> bool {
        false
    }

    fn read(&self, c: &Candidate<'_>, snap: &Snapshot, _windows: &Windows) -> Said {
        if c.kind != EntryKind::File {
            return Said::unparseable(
                "pacman",
                format!("db.lck is {}, not a file", common::kind_name(c.kind)),
            );
        }
        let placed = match placed(c, snap) {
            Ok(p) => p,
            Err(why) => {
                return Judgement::unknown(format!(
                    "named like pacman's database lock, but {why}: whose it is cannot be told"
                ))
                .into();
            }
        };
        let owner = Owner {
            detail: Some("libalpm database lock (empty; held open by pacman while it runs)".into()),
            ..Owner::default()
        };
        let mut said = Said::claims(owner)
            .claim(Keeps::Open {
                promise: "pacman keeps db.lck open for as long as it runs".into(),
                placed,
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
