//! `conda`: conda's lock files `<path>.pid<N>.conda_lock`, left in package caches and
//! environments by an interrupted conda.
//!
//! Format, from conda's `conda/lock.py` (`FileLock`, `DirectoryLock`): the lock is an empty
//! file touched at `"%s.pid{0}.%s" % (path, "conda_lock")`, the PID of the conda process in
//! its name. conda never judges it: it retries, then gives up with "LOCKERROR: It looks
//! like conda is already doing something" and suggests `conda clean --lock`.
//!
//! Liveness: a kernel lock on it, then the PID rules of [`crate::judge`] for the PID in
//! the name, with conda (a Python program) as the owner.

use super::{Candidate, Dialect, DialectId, EntryKind, Windows, common};
use crate::judge::{Judgement, OwnerClaim, Said, When, Writers};
use crate::probe::Snapshot;
use crate::verdict::Owner;

pub struct Conda;

const PATTERNS: &[&str] = &["*.conda_lock"];

/// conda runs in Python (or as a frozen `conda` / `mamba` binary).
const CONDA: &[&str] = &["conda", "mamba", "micromamba"];

/// The PID in `<path>.pid<N>.conda_lock`.
pub fn pid_in_name(name: &str) -> Option<i64> {
    let stem = name.strip_suffix(".conda_lock")?;
    let (_, pid) = stem.rsplit_once(".pid")?;
    common::parse_pid(pid).ok()
}

impl Dialect for Conda {
    fn id(&self) -> DialectId {
        DialectId::CONDA
    }

    fn about(&self) -> super::About {
        super::About {
            writer: "conda",
            programs: &["conda", "mamba", "micromamba"],
            found_as: "`*.pid<N>.conda_lock`: empty, the PID in its name",
            judged_by: "the PID in the name: live for conda. Advises `conda clean --lock`",
            rules: &["pid-gone", "pid-reused", "earlier-boot"],
            source: Some("conda `conda/lock.py`"),
        }
    }

    fn patterns(&self) -> &'static [&'static str] {
        PATTERNS
    }

    fn recognise(&self, c: &Candidate<'_>, _snap: &Snapshot) -> bool {
        matches!(c.kind, EntryKind::File | EntryKind::Dir)
            && c.file_name().as_encoded_bytes().ends_with(b".conda_lock")
    }

    fn read(&self, c: &Candidate<'_>, _snap: &Snapshot, _windows: &Windows) -> Said {
        let name = c.file_name().to_string_lossy();
        let Some(pid) = pid_in_name(&name) else {
            return Judgement::unknown(
                "named like a conda lock but without .pid<N> in its name: no owner to check",
            )
            .into();
        };
        let owner = Owner {
            pid: Some(pid),
            detail: Some("conda lock (PID in the file name)".into()),
            ..Owner::default()
        };
        Said::claims(owner)
            .claim(OwnerClaim::pid(pid, Writers::named(CONDA)))
            .note(
                When::IfStale,
                "`conda clean --lock` removes conda's leftover locks too",
            )
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn reads_the_pid_from_the_name() {
        assert_eq!(super::pid_in_name("pkgs.pid4242.conda_lock"), Some(4242));
        assert_eq!(super::pid_in_name("/a/b.c.pid7.conda_lock"), Some(7));
        assert_eq!(super::pid_in_name("x.conda_lock"), None);
    }
}
