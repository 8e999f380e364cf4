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

use super::{Candidate, Dialect, DialectId, EntryKind, Windows, common};
use crate::judge::{Contract, Judgement, Placed, Said, Scope, When, Writers};
use crate::probe::{FileKey, Snapshot};
use crate::verdict::Owner;

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
fn is_rpm_db(dir: &Path, snap: &Snapshot) -> bool {
    [
        "Packages",
        "Packages.db",
        ".rpm.lock",
        "Name",
        "rpmdb.sqlite",
    ]
    .iter()
    .any(|f| snap.lstat(&dir.join(f)).is_ok())
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

    fn about(&self) -> super::About {
        super::About {
            writer: "rpm, and dnf, yum, zypper and PackageKit through librpm",
            programs: &["rpm", "dnf", "yum", "zypper", "librpm"],
            found_as: "the Berkeley DB environment files `__db.001`, `__db.002`, ... of an rpm database (`/var/lib/rpm`)",
            judged_by: "open or mapped by a process, or `.rpm.lock` held: live; an rpm, dnf, yum or zypper at work: unknown; none, every process visible: stale, advising `rpm --rebuilddb`",
            rules: &["writer-absent"],
            source: Some("rpm `lib/backend/db3.c`, `lib/rpmlock.c`"),
        }
    }

    fn patterns(&self) -> &'static [&'static str] {
        PATTERNS
    }

    /// `__db.NNN` is every Berkeley DB environment's (a Subversion repository's `db/` has
    /// them too): only one in an rpm database is rpm's.
    fn judges_unrecognised(&self) -> bool {
        false
    }

    fn recognise(&self, c: &Candidate<'_>, snap: &Snapshot) -> bool {
        let name = c.file_name().as_encoded_bytes();
        c.kind == EntryKind::File
            && name.len() == 8
            && name.starts_with(b"__db.")
            && name[5..].iter().all(u8::is_ascii_digit)
            && c.path.parent().is_some_and(|d| is_rpm_db(d, snap))
    }

    fn read(&self, c: &Candidate<'_>, snap: &Snapshot, _windows: &Windows) -> Said {
        let dir = c.path.parent().unwrap_or(Path::new("/"));
        if !is_rpm_db(dir, snap) {
            return Judgement::unknown(
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
        // Berkeley DB maps its region files and may close the descriptor.
        let mappers = snap.mappers(c.key());
        if !mappers.is_empty() {
            let mut j =
                Judgement::live(format!("mapped by {}", common::describe_holders(&mappers)));
            j.holders = mappers;
            return Said::settled(j).owner(owner);
        }
        let mut said = Said::claims(owner)
            .claim(Contract {
                placed: Placed::by(format!(
                    "a Berkeley DB environment file (__db.NNN) of the rpm database {}",
                    common::field(&dir.to_string_lossy())
                )),
                writer: Writers::named(RPM_USERS),
                what: "rpm, dnf, yum or zypper",
                at: format!("the rpm database {}", common::field(&dir.to_string_lossy())),
                says: "rpm's own advice: with no rpm, dnf, yum or zypper running, the environment files are leftovers and `rpm --rebuilddb` rebuilds them".into(),
                place: dir.to_path_buf(),
                scope: Scope::Anywhere,
                min_hold_ms: 2_000,
            })
            .note(When::IfStale, advice(dir));
        if let Ok(m) = snap.lstat(&dir.join(".rpm.lock")) {
            said = said.held_with(FileKey::of(&m), ".rpm.lock (rpm's transaction lock)");
        }
        said
    }
}
