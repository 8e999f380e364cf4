//! Where the engine's judge ([`super::judge`]) gets its evidence on an existing lock file: the
//! [`Witness`](super::judge::Witness) of the lock's [`Place`] (the engine's own
//! [`Direct`](super::judge::Direct) unless the caller gave another).

use std::fs::Metadata;

use super::StaleWindows;
use super::judge::{LockFile, RECORD_PREFIX};
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
    let file = LockFile {
        path: &place.path,
        meta,
        regular: true,
        content: &content[..content.len().min(RECORD_PREFIX)],
        complete: complete && content.len() <= RECORD_PREFIX,
        fs: &place.fs,
    };
    super::judge::judge(&file, place.witness.look().as_ref(), windows)
}

/// The processes holding a kernel lock on the file `meta` describes, asked now.
pub fn kernel_holders(place: &Place, meta: &Metadata) -> Vec<Holder> {
    let file = LockFile {
        path: &place.path,
        meta,
        regular: true,
        content: &[],
        complete: true,
        fs: &place.fs,
    };
    place.witness.look().kernel_holders(&file)
}
