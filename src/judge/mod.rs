//! The judge: the one place where a lock is found `stale`. Dialects parse a lock and say what
//! it claims ([`Said`]: owner PIDs, hosts, boot ids, start times, the writer and what it
//! promises); the judge turns those claims plus the scan's evidence [`Snapshot`] into one
//! verdict, through a closed, enumerated set of proofs ([`crate::verdict::Rule`]):
//!
//! | rule | proves the owner gone when |
//! |---|---|
//! | `pid-gone` | no process with the owner's PID in the PID namespace that wrote it (ESRCH), or a zombie |
//! | `pid-reused` | the process with that PID started after the lock was written, or at another start tick than the record's |
//! | `earlier-boot` | the lock was written in an earlier boot of this host (boot id, or mtime before boot on a local file system that survives reboots) |
//! | `heartbeat-expired` | a writer that promises to refresh the lock did not, for longer than its window, and nothing here holds it |
//! | `kernel-lock-released` | a writer that holds a kernel lock for as long as it holds the lock, and nobody holds it (asked of the kernel) |
//! | `open-released` | a writer that keeps the lock file open for as long as it holds it, and nobody has it open |
//! | `writer-absent` | an owner-less lock whose writer says when it may be removed, and that holds: no such writer at work, nobody with a file of the place open |
//!
//! Every `stale` judgement carries the [`Proof`] of its rule (the JSON report's `proofs`), and
//! [`Judgement`]'s constructors make any other path to `stale` impossible outside this module.
//! A name never proves `stale`: a live process that started before the lock is `live` when it
//! is a known writer and `unknown` otherwise. An age proves `stale` only under a writer's
//! promise to refresh ([`Refresh`]). When nothing is conclusive the answer is `foreign` or
//! `unknown`.
//!
//! How claims combine: a kernel lock on the lock file (or a file held with it) makes it
//! `live`; then a verdict the dialect settled stands; then every claim is checked and any
//! `live` wins; a proof stands unless the dialect doubts it, except that a writer census
//! (`writer-absent`, `open-released`) does not overrule an owner PID that is `foreign`; then
//! `foreign`, then `unknown`. A lock that names no owner and whose writer promises nothing is
//! `stale` only when written before this boot on a local file system.

mod absence;
mod alive;
pub mod claims;
mod judgement;
mod namespaces;
pub mod pid;
pub mod remote;

pub use alive::{At, not_an_app_owner};
pub use claims::{
    Claim, Contract, Keeps, LockFamily, Match, Note, OwnerClaim, Place, Placed, Refresh, Said,
    Scope, When, Writers,
};
pub use judgement::Judgement;
pub use pid::{Timed, fmt_ms, written_before_boot};

use crate::probe::{FileKey, Snapshot};
use crate::verdict::{Holder, Owner, Proof, Verdict, describe_holders};

use locksmith_sys::time;
pub use locksmith_sys::time::fmt_age;

/// The lock being judged: where it is, and what was read of it.
#[derive(Debug, Clone, Copy)]
pub struct Lock<'a> {
    pub at: At<'a>,
    /// The bounded prefix of a regular file's content (an engine record is judged from it).
    pub content: &'a [u8],
    pub complete: bool,
}

/// Judges one lock from what its dialect said of it.
pub fn judge(lock: Lock<'_>, said: Said, snap: &Snapshot) -> Judgement {
    let mut j = decide(lock, &said, snap);
    let verdict = j.verdict();
    for note in &said.notes {
        let add = match note.when {
            When::Always => true,
            When::IfStale => verdict == Verdict::Stale,
            When::IfLive => verdict == Verdict::Live,
            When::Otherwise => !matches!(verdict, Verdict::Stale | Verdict::Live),
        };
        if add {
            j.evidence.push(note.line.clone());
        }
    }
    if said.owner != Owner::default() {
        j.owner = Some(Box::new(said.owner));
    }
    if !said.flags.is_empty() {
        j.flags = said.flags;
    }
    if j.evidence.iter().all(|l| l.trim().is_empty()) {
        j = Judgement::unknown("the judge found no evidence either way");
    }
    j
}

/// The engine's judgement of one of its own records (a reclaim through the engine protocol,
/// judged by the [`crate::engine::ScannerWitness`]), as the scanner reports it: its `stale` stands only with
/// the proof of one of the rules.
pub fn engine_judgement(j: locksmith_engine::Judgement) -> Judgement {
    Judgement::from_engine(j)
}

/// Judges what `claim` says of the owner of the lock file at `path`, by the PID rules alone
/// (for a caller that read the claim itself: a program's own lock format).
pub fn judge_owner(
    path: &std::path::Path,
    claim: OwnerClaim,
    snap: &Snapshot,
) -> std::io::Result<Judgement> {
    let meta = snap.lstat(path)?;
    let fs = snap.fs_of(path, &meta);
    let at = At {
        path,
        meta: &meta,
        fs: &fs,
    };
    Ok(owner(at, &claim, snap))
}

/// A judgement made without the file's content: never `stale` on that basis.
pub fn without_content(mut j: Judgement, e: &std::io::Error) -> Judgement {
    j.doubt(format!("cannot read its content: {e}"));
    j
}

/// Which kind of claim an outcome came from.
/// How long ago a file last changed (its ctime), as far as the clock proves it: `Ok(age)`
/// when it is proven at least `min_ms` old, the clock's possible forward step since taken
/// off; `Err(why)` when it may be younger (by the clock, or because the clock may have stepped
/// forward by more than what is left, or nothing tells how far it stepped).
pub fn proven_older(ctime_ms: i64, min_ms: i64, snap: &Snapshot) -> Result<i64, String> {
    let age = snap.taken_ms - ctime_ms;
    if min_ms <= 0 {
        return Ok(age);
    }
    if age < min_ms {
        return Err(format!("made {} ago", fmt_age(age.max(0))));
    }
    let clock = snap.clock();
    match clock.step_ms {
        Some(step) if age - step.max(0) >= min_ms => Ok(age),
        _ => Err(format!(
            "made {} ago by the clock, but {}: it may have been made less than {} ago",
            fmt_age(age),
            clock.how,
            fmt_age(min_ms)
        )),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// The lock's owner PID(s).
    Owner,
    /// Evidence that holds across hosts and PID namespaces: a kernel lock on this kernel, a
    /// heartbeat written into the file.
    Settles,
    /// A census of this host's processes and descriptors.
    Local,
    /// Evidence that would prove it held, which cannot be read here (a refresh the clock
    /// cannot date): nothing else proves it stale.
    MayBeLive,
}

fn decide(lock: Lock<'_>, said: &Said, snap: &Snapshot) -> Judgement {
    let at = lock.at;
    let (held, others) = kernel_held(at, said, snap);
    if let Some(j) = held {
        return j;
    }
    let mut j = decide_unheld(at, said, snap);
    if !others.is_empty() {
        held_by_others(&mut j, others);
    }
    j
}

/// A lock that no writer holds a kernel lock on.
fn decide_unheld(at: At<'_>, said: &Said, snap: &Snapshot) -> Judgement {
    if let Some(j) = &said.settled {
        return j.clone();
    }
    if said.open_for_writing_holds
        && let Some(j) = opened_for_writing(at, snap)
    {
        return j;
    }
    let owner_less = !said.names_owner();
    // Whoever has an owner-less lock open holds it; so does whoever has open a lock whose
    // writer keeps it open or works on it through its files.
    let open_holds = owner_less
        || said
            .claims
            .iter()
            .any(|c| matches!(c, Claim::Writer(_) | Claim::Keeps(Keeps::Open { .. })));
    if open_holds && let Some(j) = opened(at, said, snap) {
        return j;
    }
    if owner_less {
        if let Some(h) = &said.host
            && h != &snap.host.hostname
        {
            return Judgement::foreign(format!(
                "written on host \"{h}\", not this host \"{}\": its writer there cannot be checked from here",
                snap.host.hostname
            ));
        }
        if !at.fs.network
            && let Some(j) = pid::earlier_boot_by_time(at.written_by_ms(), at.fs, snap)
        {
            return j;
        }
    }
    if said.claims.is_empty() {
        return nothing_promised(at);
    }
    let outcomes: Vec<(Kind, Judgement)> = said.claims.iter().map(|c| check(at, c, snap)).collect();
    combine(outcomes, &said.doubts)
}

/// A lock that names no owner and whose writer promises nothing: its age proves nothing.
fn nothing_promised(at: At<'_>) -> Judgement {
    if at.fs.network {
        return Judgement::foreign(format!(
            "{}, naming no owner: a process on another machine may hold it",
            at.fs.reached_from_afar()
        ));
    }
    Judgement::unknown(
        "it names no owner, and nothing is known of a writer that would refresh it or say when it may be removed: however old, its age proves nothing",
    )
    .because(
        "no process has it open and no kernel lock is held on it: if you know its program has ended, reclaim it by hand (it is not proven stale)",
    )
}

/// `live` when a kernel lock that a writer of this lock may have taken is held on the lock
/// file or on a file held with it; with it, the holders of the lock file that cannot be its
/// writers.
///
/// Anyone who can read a file can take a shared lock on it (`flock -s`, a POSIX read lock),
/// so a kernel lock proves its holder holds the lock only where the lock's writer takes one:
/// on the files it keeps locked ([`Keeps::KernelLock`], [`Said::held_with`]), and on the lock
/// file itself when its writer locks it ([`Said::writer_locks`]). On any other lock file a
/// kernel lock is a writer's only when a writer could have taken it: it is held by the PID the
/// lock names, or it is a write lock (which needs the file open for writing), or its holder
/// runs as the file's owner or as root. Any other holder is named, and keeps the lock from
/// being removed, but proves nothing about its owner.
fn kernel_held(at: At<'_>, said: &Said, snap: &Snapshot) -> (Option<Judgement>, Vec<Holder>) {
    let mut keys: Vec<(FileKey, String, Option<LockFamily>)> = vec![(
        FileKey::of(at.meta),
        "the lock file".into(),
        said.writer_locks,
    )];
    keys.extend(
        said.held_with
            .iter()
            .map(|(k, w)| (*k, w.clone(), Some(LockFamily::Any))),
    );
    // The files its writer keeps locked while it holds the lock.
    for c in &said.claims {
        if let Claim::Keeps(Keeps::KernelLock { path, what, .. }) = c
            && let Ok(meta) = snap.lstat(path)
        {
            let key = FileKey::of(&meta);
            match keys.iter_mut().find(|k| k.0 == key) {
                Some(k) => k.2 = Some(LockFamily::Any),
                None => keys.push((key, what.clone(), Some(LockFamily::Any))),
            }
        }
    }
    let owners: Vec<i64> = said
        .claims
        .iter()
        .flat_map(|c| match c {
            Claim::Owner(o) => vec![o.pid],
            Claim::Owners(list) => list.iter().map(|o| o.pid).collect(),
            _ => Vec::new(),
        })
        .collect();
    let mut others = Vec::new();
    for (key, what, writer_locks) in keys {
        let holders = snap.kernel_holders(key);
        let (writers, readers): (Vec<Holder>, Vec<Holder>) =
            holders.into_iter().partition(|h| match writer_locks {
                Some(family) => family.holds(h.how),
                None => may_be_writers_lock(h, &owners, at.meta.uid(), snap),
            });
        if !writers.is_empty() {
            let mut j = Judgement::live(format!(
                "{what} is locked in the kernel by {} (/proc/locks)",
                describe_holders(&writers)
            ));
            j.holders = writers;
            j.process = process_of(&j.holders, snap).map(Box::new);
            return (Some(j), Vec::new());
        }
        others.extend(readers);
    }
    (None, others)
}

/// Whether a kernel lock on a lock file whose writer takes none may still be its writer's
/// (see [`kernel_held`]).
fn may_be_writers_lock(h: &Holder, owners: &[i64], file_uid: u32, snap: &Snapshot) -> bool {
    if owners.contains(&i64::from(h.pid)) {
        return true;
    }
    if h.mode == Some(crate::verdict::LockMode::Write) && h.how != crate::verdict::HolderHow::Flock
    {
        return true;
    }
    if h.pid <= 0 {
        // Held by a description no visible process has: whose it is cannot be told.
        return true;
    }
    match snap.pid(h.pid).facts().and_then(|f| f.uid) {
        Some(uid) => uid == 0 || uid == file_uid,
        None => true,
    }
}

/// What a lock held by processes that cannot be its writers says: the holders, named, and
/// that the lock is kept while they hold it.
fn held_by_others(j: &mut Judgement, others: Vec<Holder>) {
    j.evidence.push(format!(
        "a kernel lock is held on it by {}, which cannot be its writer (a reader's lock, of another user): it proves nothing about its owner, and the file is not removed while it is held",
        describe_holders(&others)
    ));
    for h in others {
        if !j.holders.contains(&h) {
            j.holders.push(h.clone());
        }
        j.kept_by.push(h);
    }
}

/// `live` when a process has the lock file open for writing: the owner's descriptor, which
/// a child that outlived it inherited.
fn opened_for_writing(at: At<'_>, snap: &Snapshot) -> Option<Judgement> {
    let writers = snap.writers_of(FileKey::of(at.meta));
    if writers.is_empty() {
        return None;
    }
    let mut j = Judgement::live(format!(
        "{} the lock file open for writing: it holds the owner's descriptor",
        describe_holders(&writers)
    ));
    j.process = process_of(&writers, snap).map(Box::new);
    j.holders = writers;
    Some(j)
}

/// `live` when a process has the lock (or a file held with it) open: for a lock that names no
/// owner, whoever has it open holds it.
fn opened(at: At<'_>, said: &Said, snap: &Snapshot) -> Option<Judgement> {
    let mut keys: Vec<(FileKey, String)> = vec![(FileKey::of(at.meta), "the lock".into())];
    keys.extend(said.held_with.iter().cloned());
    let mut holders = Vec::new();
    let mut whats = Vec::new();
    for (key, what) in keys {
        let openers = snap.openers(key);
        if !openers.is_empty() {
            whats.push(what);
            for h in openers {
                if !holders.contains(&h) {
                    holders.push(h);
                }
            }
        }
    }
    if holders.is_empty() {
        return None;
    }
    let mut j = Judgement::live(format!(
        "{} open in {}",
        whats.join(" and "),
        describe_holders(&holders)
    ));
    j.process = process_of(&holders, snap).map(Box::new);
    j.holders = holders;
    Some(j)
}

/// The first holder that is a live process, for the report's PID and COMMAND columns.
fn process_of(
    holders: &[crate::verdict::Holder],
    snap: &Snapshot,
) -> Option<crate::verdict::ProcessInfo> {
    holders
        .iter()
        .filter(|h| h.pid > 0)
        .find_map(|h| match snap.pid(h.pid) {
            crate::probe::PidState::Alive(f) => Some(snap.process_info(&f)),
            _ => None,
        })
}

fn check(at: At<'_>, claim: &Claim, snap: &Snapshot) -> (Kind, Judgement) {
    match claim {
        Claim::Owner(c) => (Kind::Owner, owner(at, c, snap)),
        Claim::Owners(list) => (Kind::Owner, owners(at, list, snap)),
        Claim::Keeps(k) => {
            let kind = match k {
                Keeps::KernelLock { .. } => Kind::Settles,
                Keeps::Open { .. } => Kind::Local,
            };
            if at.fs.network {
                return (kind, on_network(at));
            }
            (kind, placed(absence::keeps(at, k, snap), k.placed()))
        }
        Claim::Refreshed(r) => {
            let (j, may_be_live) = refreshed(at, r, snap);
            let kind = if may_be_live {
                Kind::MayBeLive
            } else {
                Kind::Settles
            };
            (kind, placed(j, &r.placed))
        }
        Claim::Writer(c) => {
            if at.fs.network {
                return (Kind::Local, on_network(at));
            }
            (
                Kind::Local,
                placed(absence::writer_absent(at, c, snap), &c.placed),
            )
        }
    }
}

/// A judgement by a writer's promise or condition, with why the lock is that writer's (a
/// proof names it among its facts).
fn placed(mut j: Judgement, p: &Placed) -> Judgement {
    if j.verdict() == Verdict::Stale {
        j.place_proofs(p.why());
        j.evidence.push(format!("it is its writer's: {}", p.why()));
    }
    j
}

fn on_network(at: At<'_>) -> Judgement {
    Judgement::foreign(format!(
        "{}: a process on another machine may hold it, and it does not show here",
        at.fs.reached_from_afar()
    ))
}

/// One owner PID, by the PID rules.
fn owner(at: At<'_>, c: &OwnerClaim, snap: &Snapshot) -> Judgement {
    let clock = snap.clock();
    let claim = alive::Claim {
        c,
        at,
        written_ms: at.latest_write_ms(c.written_ms),
        clock: &clock,
    };
    let mut j = pid::judge(&claim, snap);
    if let Some(label) = &c.label
        && let Some(first) = j.evidence.first_mut()
    {
        *first = format!("{label}: {first}");
    }
    j
}

/// Several owners: held while any lives, stale only when every one is proven gone.
fn owners(at: At<'_>, list: &[OwnerClaim], snap: &Snapshot) -> Judgement {
    if list.is_empty() {
        return Judgement::unknown("it lists no owner to check");
    }
    let parts: Vec<(String, Judgement)> = list
        .iter()
        .map(|c| {
            let label = c
                .label
                .clone()
                .unwrap_or_else(|| format!("owner {}", c.pid));
            let unlabelled = OwnerClaim {
                label: None,
                ..c.clone()
            };
            (label, owner(at, &unlabelled, snap))
        })
        .collect();
    let lines = |parts: &[(String, Judgement)]| -> Vec<String> {
        parts
            .iter()
            .flat_map(|(label, j)| j.evidence.iter().map(move |l| format!("{label}: {l}")))
            .collect()
    };
    let mut holders = Vec::new();
    for (_, j) in &parts {
        for h in &j.holders {
            if !holders.contains(h) {
                holders.push(h.clone());
            }
        }
    }
    let rank = |v: Verdict| match v {
        Verdict::Live => 0,
        Verdict::Foreign => 1,
        Verdict::Unknown => 2,
        Verdict::Free => 3,
        Verdict::Stale => 4,
    };
    let worst = parts
        .iter()
        .map(|(_, j)| j.verdict())
        .min_by_key(|v| rank(*v))
        .unwrap_or(Verdict::Unknown);
    let mut j = if worst == Verdict::Stale {
        let proofs: Vec<Proof> = parts
            .iter()
            .flat_map(|(_, j)| j.proofs().iter().cloned())
            .collect();
        Judgement::stale_by_all(proofs, lines(&parts))
    } else {
        let mut j = Judgement::unknown("");
        j.set_unproven(worst);
        j.evidence = lines(&parts);
        j.process = parts
            .iter()
            .find(|(_, p)| p.verdict() == worst)
            .and_then(|(_, p)| p.process.clone());
        j
    };
    j.holders = holders;
    j
}

/// A writer's promise to refresh: fresh proves it held (or nothing), expired proves it gone
/// when nothing here holds it, by the time rule both judges share
/// ([`locksmith_sys::time::Refresh`]).
/// With whether a fresh refresh, which would prove it held, is not excluded (the clock cannot
/// date the last one): no other rule may then call it stale.
fn refreshed(at: At<'_>, r: &Refresh, snap: &Snapshot) -> (Judgement, bool) {
    // The last refresh is the later of what the writer says and the file's last change (a
    // refresh moves both; nobody can move the ctime back), unless what it says is set ahead.
    let (last_ms, set_ahead) =
        time::last_refresh(r.last_ms, at.written_by_ms(), snap.taken_ms, at.fs);
    let with = |mut j: Judgement| {
        j.evidence.extend(set_ahead.clone());
        j
    };
    let rule = time::Refresh {
        last_ms,
        window_ms: r.window_ms,
        fresh_ms: r.fresh_ms,
        fs: at.fs,
        promise: &r.promise,
    };
    let age = match rule.at(snap.taken_ms, || snap.clock()) {
        time::Refreshed::Fresh(line) => return (with(Judgement::live(line)), false),
        time::Refreshed::Unproven(line) => return (with(Judgement::unknown(line)), false),
        time::Refreshed::MayBeFresh(line) => return (with(Judgement::unknown(line)), true),
        time::Refreshed::Overdue { age_ms } => age_ms,
    };
    (with(overdue(at, &rule, age, snap)), false)
}

/// [`refreshed`] past the freshness that would prove it held, overdue by `age` ms: live while
/// it is open here, stale when the clock proves it expired.
fn overdue(at: At<'_>, rule: &time::Refresh<'_>, age: i64, snap: &Snapshot) -> Judgement {
    let openers = snap.openers(FileKey::of(at.meta));
    if !openers.is_empty() {
        let mut j = Judgement::live(format!(
            "not refreshed for {}, but open in {}",
            fmt_age(age),
            describe_holders(&openers)
        ));
        j.holders = openers;
        return j;
    }
    // A clock that stepped forward since the last refresh makes it look older than it is.
    let e = match rule.expired(age, || snap.clock()) {
        Ok(e) => e,
        Err(line) => return Judgement::unknown(line),
    };
    let proof = Proof::by(crate::verdict::Rule::HeartbeatExpired)
        .fact("last_refresh", fmt_ms(rule.last_ms))
        .fact("age_s", e.age_ms / 1000)
        .fact("window_s", e.window_s)
        .fact("clock_step_ms", e.step_ms);
    Judgement::stale(proof, e.line)
        .because("no process has it open and no kernel lock is held on it")
        .because(e.clock_line)
}

/// The verdict of several outcomes (see the module docs).
fn combine(outcomes: Vec<(Kind, Judgement)>, doubts: &[String]) -> Judgement {
    if let Some((_, j)) = outcomes.iter().find(|(_, j)| j.verdict() == Verdict::Live) {
        return j.clone();
    }
    let owner_foreign = outcomes
        .iter()
        .any(|(k, j)| *k == Kind::Owner && j.verdict() == Verdict::Foreign);
    let may_be_live = outcomes.iter().any(|(k, _)| *k == Kind::MayBeLive);
    let proof = outcomes.iter().position(|(k, j)| {
        !may_be_live && j.verdict() == Verdict::Stale && (*k != Kind::Local || !owner_foreign)
    });
    if let Some(i) = proof {
        let mut j = outcomes[i].1.clone();
        for (n, (_, other)) in outcomes.iter().enumerate() {
            if n != i {
                j.evidence.extend(other.evidence.iter().cloned());
            }
        }
        if !doubts.is_empty() {
            j.doubt(doubts.join("; "));
        }
        return j;
    }
    let first = |v: Verdict| outcomes.iter().position(|(_, j)| j.verdict() == v);
    let lead = first(Verdict::Foreign)
        .or_else(|| outcomes.iter().position(|(k, _)| *k == Kind::MayBeLive))
        .or_else(|| first(Verdict::Unknown))
        .or_else(|| first(Verdict::Free))
        .unwrap_or(0);
    let Some((_, lead_j)) = outcomes.get(lead) else {
        return Judgement::unknown("nothing to judge");
    };
    let mut j = lead_j.clone();
    for (n, (_, other)) in outcomes.iter().enumerate() {
        if n != lead {
            j.evidence.extend(other.evidence.iter().cloned());
            if j.process.is_none() {
                j.process = other.process.clone();
            }
        }
    }
    j.evidence.extend(doubts.iter().cloned());
    j
}

#[cfg(test)]
mod tests {
    use crate::verdict::Rule;

    /// The book's audit table (`docs/src/proof.md`) lists exactly the judge's rules: one row
    /// per rule, by id.
    #[test]
    fn the_book_audit_table_is_the_set_of_rules() {
        let readme =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/src/proof.md"))
                .unwrap();
        let section = readme
            .split("\n## Every path to `stale`\n")
            .nth(1)
            .expect("the book has its verdict audit")
            .split("\n## ")
            .next()
            .unwrap();
        let table: Vec<&str> = section
            .lines()
            .skip_while(|l| !l.starts_with("| rule |"))
            .skip(2)
            .take_while(|l| l.starts_with('|'))
            .collect();
        let ids: Vec<String> = table
            .iter()
            .map(|row| {
                row.split('|')
                    .nth(1)
                    .unwrap()
                    .trim()
                    .trim_matches('`')
                    .to_string()
            })
            .collect();
        let want: Vec<String> = Rule::ALL.iter().map(|r| r.id().to_string()).collect();
        assert_eq!(
            ids,
            want,
            "the book's audit table rows:\n{}",
            table.join("\n")
        );
        for id in &ids {
            assert!(Rule::by_id(id).is_some(), "{id}");
        }
    }
}
