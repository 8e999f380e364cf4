//! `rpm-db`: the Berkeley DB environment files `__db.001`, `__db.002`, ... of an rpm
//! database (`/var/lib/rpm/`, or any `--dbpath`).
//!
//! Format, from rpm's `lib/backend/db3.c` (the `bdb` backend; Berkeley DB's
//! `env/env_region.c` names the region files `__db.NNN`): shared-memory regions of the
//! database environment, created when rpm opens the database and mapped by every process
//! that uses it. A killed rpm leaves them with stale locks inside, and the next rpm hangs or
//! fails with `DB_RUNRECOVERY`; the cure is `rpm --rebuilddb`. Transactions also hold an
//! fcntl lock on `.rpm.lock` in the same directory (`lib/rpmlock.c`).
//!
//! Liveness: a process has the file open or mapped, or holds `.rpm.lock` → `live`; an rpm
//! (or dnf, yum, zypper, PackageKit) runs → `unknown`; none, with every process visible →
//! `stale`, with the advice to run `rpm --rebuilddb`.

use std::path::Path;

use super::{Candidate, Decision, Dialect, DialectId, EntryKind, Windows, common, support};
use crate::probe::{FileKey, Snapshot};
use crate::verdict::{Holder, HolderHow, Judgement, Owner, Verdict};

pub struct RpmDb;

const PATTERNS: &[&str] = &["__db.[0-9][0-9][0-9]"];

/// Programs that open the rpm database.
const RPM_USERS: &[&str] = &[
    "rpm",
    "rpmdb",
    "rpmkeys",
    "rpmbuild",
    "rpmquery",
    "rpmverify",
    "dnf",
    "dnf5",
    "yum",
    "microdnf",
    "tdnf",
    "zypper",
    "packagekitd",
    "up2date",
    "rpm-ostree",
];

/// Whether the directory is an rpm database (its packages table, or rpm's lock file, or
/// named like one).
fn is_rpm_db(dir: &Path) -> bool {
    [
        "Packages",
        "Packages.db",
        ".rpm.lock",
        "Name",
        "rpmdb.sqlite",
    ]
    .iter()
    .any(|f| std::fs::symlink_metadata(dir.join(f)).is_ok())
        || dir.file_name().is_some_and(|n| n == "rpm" || n == "rpmdb")
}

fn advice(dir: &Path) -> String {
    let dbpath = common::field(&dir.to_string_lossy());
    if dbpath == "/var/lib/rpm" {
        "run `rpm --rebuilddb` (as root): it rebuilds the database and its environment files".into()
    } else {
        format!(
            "run `rpm --dbpath {} --rebuilddb` (as root): it rebuilds the database and its environment files",
            crate::text::shell_quote(&dbpath)
        )
    }
}

impl Dialect for RpmDb {
    fn id(&self) -> DialectId {
        DialectId::RPM_DB
    }

    fn patterns(&self) -> &'static [&'static str] {
        PATTERNS
    }

    fn recognise(&self, c: &Candidate<'_>) -> bool {
        let name = c.file_name().as_encoded_bytes();
        c.kind == EntryKind::File
            && name.len() == 8
            && name.starts_with(b"__db.")
            && name[5..].iter().all(u8::is_ascii_digit)
            && c.path.parent().is_some_and(is_rpm_db)
    }

    fn decide(&self, c: &Candidate<'_>, snap: &Snapshot, _windows: &Windows) -> Decision {
        let dir = c.path.parent().unwrap_or(Path::new("/"));
        if !is_rpm_db(dir) {
            return Judgement::new(
                Verdict::Unknown,
                "a Berkeley DB environment file outside an rpm database: its program is not known",
            )
            .into();
        }
        let owner = Owner {
            detail: Some(format!(
                "Berkeley DB environment of the rpm database in {}",
                common::field(&dir.to_string_lossy())
            )),
            ..Owner::default()
        };
        Decision::owned(owner, judge_env(c, snap, dir))
    }
}

/// The database environment: open or mapped, rpm's transaction lock held, or an rpm
/// front end running.
fn judge_env(c: &Candidate<'_>, snap: &Snapshot, dir: &Path) -> Judgement {
    let mut holders = snap.openers(c.key());
    for pid in support::mappers(c.key()) {
        if !holders.iter().any(|h| h.pid == pid) {
            let state = snap.pid(pid);
            holders.push(Holder {
                pid,
                name: state.facts().map(|f| f.comm.clone()),
                how: HolderHow::Open,
                container: state.facts().and_then(|f| snap.container_of(f)),
            });
        }
    }
    if !holders.is_empty() {
        let mut j = Judgement::new(
            Verdict::Live,
            format!("open or mapped by {}", common::describe_holders(&holders)),
        );
        j.holders = holders;
        return j;
    }
    if let Ok(m) = std::fs::symlink_metadata(dir.join(".rpm.lock"))
        && let Some(j) =
            common::kernel_live(snap, FileKey::of(&m), ".rpm.lock (rpm's transaction lock)")
    {
        return j;
    }
    let users = support::running(snap, RPM_USERS);
    if !users.is_empty() {
        Judgement::new(
            Verdict::Unknown,
            format!(
                "nobody has it open or mapped, but {} runs and may open the database at any moment",
                support::list_procs(&users)
            ),
        )
    } else if c.fs.network {
        Judgement::new(
            Verdict::Foreign,
            format!(
                "on a network file system ({}): another machine may use this database",
                c.fs.kind
            ),
        )
    } else if let Some(j) =
        support::openers_inconclusive(c.meta, snap, "no visible process has it open")
    {
        j
    } else {
        Judgement::new(
                Verdict::Stale,
                "no process has it open or mapped, nobody holds .rpm.lock, and no rpm, dnf, yum or zypper runs: left by an rpm that was interrupted",
            )
            .because(support::age_line(c.meta, snap))
            .because(advice(dir))
    }
}
