//! Where the engine's judge ([`super::judge`]) gets its evidence on an existing lock file: the
//! [`Witness`](super::judge::Witness) of the lock's [`Place`] (the engine's own
//! [`Direct`](super::judge::Direct) unless the caller gave another).

use std::fs::Metadata;

use super::StaleWindows;
use super::judge::LockFile;
use super::place::Place;
use super::verdict::{Holder, Judgement};

/// Judges an open lock file with fresh evidence.
pub fn judge(
    place: &Place,
    meta: &Metadata,
    content: &[u8],
    complete: bool,
    windows: &StaleWindows,
) -> Judgement {
    let file = LockFile::on(&place.path, meta, content, complete, place.fs.clone());
    place.witness.judge(&file, windows)
}

/// The processes holding a kernel lock on the file `meta` describes, asked now.
pub fn kernel_holders(place: &Place, meta: &Metadata) -> Vec<Holder> {
    let file = LockFile::on(&place.path, meta, &[], true, place.fs.clone());
    place.witness.kernel_holders(&file)
}
