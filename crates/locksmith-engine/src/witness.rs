//! Where the engine's judge gets its evidence on an existing lock file: the
//! [`Witness`](super::judge::Witness) of the lock's [`Place`] (the engine's own
//! [`Direct`](super::judge::Direct) unless the caller gave another).
//!
//! Invariant: a `stale` that names no rule is not acted on: it reaches the engine as `unknown`.

use std::fs::Metadata;

use super::StaleWindows;
use super::judge::LockFile;
use super::place::Place;
use super::verdict::{Judgement, Verdict};

/// Judges an open lock file with fresh evidence.
pub fn judge(
    place: &Place,
    meta: &Metadata,
    content: &[u8],
    complete: bool,
    windows: &StaleWindows,
) -> Judgement {
    let file = LockFile::on(&place.path, meta, content, complete, place.fs.clone());
    let mut j = place.witness.judge(&file, windows);
    if j.verdict == Verdict::Stale && j.rules.is_empty() {
        j.verdict = Verdict::Unknown;
        j.evidence.insert(
            0,
            "its witness called it stale without naming the rule that proved it".into(),
        );
    }
    j
}

/// Who holds a kernel lock on the file `meta` describes, asked now (`None`: nobody).
pub fn kernel_lock_holders(place: &Place, meta: &Metadata) -> Option<String> {
    let file = LockFile::on(&place.path, meta, &[], true, place.fs.clone());
    place.witness.kernel_lock_holders(&file)
}
