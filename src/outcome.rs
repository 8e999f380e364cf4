//! What reclaim did with one lock: the model the reclaim pass ([`crate::reclaim`]) produces
//! and the views (the report, the UI) show. It lives apart from reclaim so that the views need
//! not depend on reclaim, nor reclaim on the views.

use std::path::{Path, PathBuf};

use crate::judge::Judgement;

/// What reclaim did with one lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Removed,
    /// Dry run: every check passed, nothing was removed.
    WouldRemove,
    Kept,
}

/// The result of reclaiming one lock.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub path: PathBuf,
    /// Whether reclaim did what was asked (removed it, or would have in a dry run).
    pub ok: bool,
    pub action: Action,
    /// Where the copy of the removed lock is.
    pub saved_to: Option<PathBuf>,
    /// Why the lock was kept, or what failed.
    pub error: Option<String>,
    /// The verdict at the moment of reclaim (judged again just before removal).
    pub judgement: Judgement,
}

impl Outcome {
    pub(crate) fn kept(path: &Path, judgement: Judgement, why: impl Into<String>) -> Self {
        Outcome {
            path: path.to_path_buf(),
            ok: false,
            action: Action::Kept,
            saved_to: None,
            error: Some(why.into()),
            judgement,
        }
    }
}
