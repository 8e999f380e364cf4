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

use super::{Candidate, Decision, Dialect, DialectId, EntryKind, Windows, common, support};
use crate::evidence::written_before_boot;
use crate::probe::Snapshot;
use crate::verdict::{Judgement, Owner, Verdict};

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

impl Dialect for Pacman {
    fn id(&self) -> DialectId {
        DialectId::PACMAN
    }

    fn patterns(&self) -> &'static [&'static str] {
        PATTERNS
    }

    fn recognise(&self, c: &Candidate<'_>) -> bool {
        c.kind == EntryKind::File && c.file_name() == "db.lck" && c.content.is_empty()
    }

    fn decide(&self, c: &Candidate<'_>, snap: &Snapshot, _windows: &Windows) -> Decision {
        let owner = Owner {
            detail: Some("libalpm database lock (empty; held open by pacman while it runs)".into()),
            ..Owner::default()
        };
        if c.kind != EntryKind::File {
            return common::unparseable(
                "pacman",
                format!("db.lck is {}, not a file", common::kind_name(c.kind)),
            )
            .into();
        }
        Decision::owned(owner, judge_db_lock(c, snap))
    }
}

/// `db.lck`: held open by pacman, else left by one (unless a front end may be about to take
/// it).
fn judge_db_lock(c: &Candidate<'_>, snap: &Snapshot) -> Judgement {
    if let Some(j) = common::open_live(snap, c.key(), |holders| {
        format!("held open by {holders}: pacman keeps db.lck open for as long as it runs")
    }) {
        return j;
    }
    if let Some(j) = common::kernel_live(snap, c.key(), "db.lck") {
        return j;
    }
    if !c.fs.network
        && let Some(line) = written_before_boot(c.mtime_ms(), Some(c.fs), snap)
    {
        return Judgement::new(Verdict::Stale, line)
            .because("no process has it open: it was left by a pacman that ran before this boot");
    }
    let fronts = support::running(snap, FRONT_ENDS);
    if !fronts.is_empty() {
        return Judgement::new(
            Verdict::Unknown,
            format!(
                "no process has it open, but {} runs: it may be about to take the lock; let it finish or quit it first",
                support::list_procs(&fronts)
            ),
        );
    }
    if c.fs.network {
        return Judgement::new(
            Verdict::Foreign,
            format!(
                "on a network file system ({}): a pacman on another machine may hold it open",
                c.fs.kind
            ),
        );
    }
    if let Some(j) = support::openers_inconclusive(c.meta, snap, "no visible process has it open") {
        return j;
    }
    Judgement::new(
            Verdict::Stale,
            "no process has it open (every process's descriptors were read): pacman keeps db.lck open for as long as it runs",
        )
        .because("no pacman, pamac, yay or other libalpm front end runs")
        .because(support::age_line(c.meta, snap))
        .because("pacman refuses to run while it exists (\"unable to lock database\"); removing it is safe now")
}
