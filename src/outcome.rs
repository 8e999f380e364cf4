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
    /// Where the copy of the removed lock is: the file, and where in it the copy starts when
    /// it shares the file with the other copies of its group.
    pub saved_to: Option<PathBuf>,
    pub saved_offset: Option<u64>,
    /// Why the lock was kept, or what failed.
    pub error: Option<String>,
    /// The verdict at the moment of reclaim (judged again just before removal).
    pub judgement: Judgement,
}

impl Outcome {
    /// Where its copy is, for a person: `FILE`, or `FILE at byte N` for a copy in the file its
    /// group's copies share (`FILE` as `show` shows a path).
    pub fn copy_shown(&self, show: impl Fn(&Path) -> String) -> Option<String> {
        let file = show(self.saved_to.as_deref()?);
        Some(match self.saved_offset {
            Some(at) => format!("{file} at byte {at}"),
            None => file,
        })
    }

    pub(crate) fn kept(path: &Path, judgement: Judgement, why: impl Into<String>) -> Self {
        Outcome {
            path: path.to_path_buf(),
            ok: false,
            action: Action::Kept,
            saved_to: None,
            saved_offset: None,
            error: Some(why.into()),
            judgement,
        }
    }
}
