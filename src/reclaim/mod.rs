//! Reclaim: removing a lock proven stale at the moment of removal, safely even when
//! run as root over directories other users can write to.
//!
//! There is one way in, [`Reclaim`], which the command line (`--scan --reclaim`, `locksmith
//! why --reclaim`), `locksmith start` and the UI all take. The verdict a user saw may be
//! seconds old, so a reclaim judges each lock again and removes it only when, at that moment:
//! - it is still `stale` (`unknown` or `foreign` only with [`ReclaimOptions::force`], a
//!   person's decision about one lock they named);
//! - it is still the very file that was judged (device, inode, size, mtime, ctime);
//! - no flag its dialect set keeps it (unsaved changes: [`crate::verdict::Flag::keeps`]),
//!   unless [`ReclaimOptions::include_unsaved`];
//! - it is not in a container runtime's own storage (see `probe::stores`), forced or not; a
//!   lock inside a container is removed through the container's root.
//!
//! How the file is reached and removed:
//! - **From the scan root, never through the path string.** The lock's directory is opened
//!   from the root's descriptor one component at a time without following symlinks, and each
//!   directory must be the one the walker saw (see [`scan::anchor`]). Re-judging reads the
//!   file through that directory's descriptor.
//! - **Moved aside, then verified.** The judged name is renamed to a private name in the same
//!   directory (`renameat2(RENAME_NOREPLACE)`); the inode now under the private name must be
//!   the one that was judged, unchanged, with no kernel lock on it. If it is not, it is put
//!   back (`RENAME_NOREPLACE`, so nothing that appeared at the name since is replaced) and the
//!   lock is reported as kept. A lock renamed over the judged one at any moment is therefore
//!   never removed: either it was moved aside and fails the check, or it took the name after
//!   the judged file had left it.
//! - **Copied and journaled, on disk, then removed.** The copy is written in the state
//!   directory from the judged inode under its name (the link text for a symlink, its
//!   metadata and records for a directory), and its journal line made; the file must still be
//!   the one judged, unchanged, once it is copied. The locks ready so far are then made
//!   durable together: their journal lines appended in one `write`, and one sync (`syncfs(2)`;
//!   `fsync` file by file for a group of a few) puts the copies and the lines on disk. A group
//!   holds at most [`GROUP_LOCKS`] locks and waits at most 250 ms. Only then is each
//!   lock of the group moved aside (see above) and checked once more, as it is at that moment:
//!   the inode copied, unchanged (and a small file's content still its copy's), no kernel lock
//!   on it; then the private name is unlinked (`AT_REMOVEDIR` for a mkdir-lock, which must be
//!   empty). A lock that fails this last check is put back and kept, and its journal line is
//!   cancelled by a `reclaim-failed` line naming it (`restore` never offers it), its copy
//!   deleted. A lock kept before its group's sync leaves neither copy nor line. What the state
//!   directory's limits do not let it copy is kept, unless [`ReclaimOptions::remove_uncopied`].
//! - **Killed at any point, nothing is lost.** A lock is removed only once its copy and
//!   its line are on disk. A process killed in the middle of a group leaves its locks removed,
//!   or where they were, or under their private name (which their line gives); the next
//!   reclaim finds that run ended (see `recover`), puts back what is under a private name,
//!   cancels the lines of what was not removed, and judges those locks again like any other.
//!
//! One evidence snapshot serves a whole batch: the identity check and the move aside carry
//! the safety, and kernel locks, which may be taken on a file without changing it, are asked
//! of the kernel again for each lock once it has been moved aside (`F_OFD_GETLK`, and a
//! non-blocking `flock` of our own, released at once).
//!
//! Locks of the `locksmith` dialect go through the engine's reclaim protocol, which holds the
//! lock's kernel lock while it removes it; it too is given the directory reached from the root,
//! never the path, and its copy and line are put on disk (a group of one) in the engine's
//! call back, before the engine unlinks.
//!
//! The submodules: `pass` carries a reclaim out (the checks, the groups, the removals),
//! `sys` holds its file operations on directory descriptors, `judged` keeps a scan's stale
//! locks compactly for the pass that follows it, `state` is the state directory (copies,
//! journal, run files), [`journal`] its lines, `recover` finishes a run killed in the middle
//! of a group, `removable` says beforehand what this user cannot remove, and [`mod@restore`] puts
//! reclaimed locks back.

use std::borrow::Borrow;
use std::ffi::{OsStr, OsString};
use std::os::fd::{AsFd, BorrowedFd};
use std::path::{Path, PathBuf};

use crate::dialect::Windows;
use crate::probe::Snapshot;
use crate::probe::stores::Stores;
use crate::scan::{self, Finding, ScanError};

pub mod journal;
mod judged;
mod pass;
mod recover;
mod removable;
pub mod restore;
mod state;
mod sys;

pub use crate::outcome::{Action, Outcome};
pub use journal::{Batch, Entry, Event, Meta, Via, run_id, set_via};
pub use judged::JudgedList;
pub use pass::GROUP_LOCKS;
pub use removable::user as user_name;
pub use restore::{Plan, Restored, Selector, plan, restore, restore_plan};
pub use state::{
    CopyLimits, JOURNAL, NotCopied, ROOT_FALLBACK, SAVED, Source, StageError, Staged, StateDir,
    default_state_dir, sha256_hex,
};

use pass::{DirCache, Pass, in_a_store};

/// The marker in the private name a lock is moved to just before it is removed.
pub const ASIDE_MARKER: &str = ".locksmith-aside-";

/// How reclaim behaves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReclaimOptions {
    /// Where copies and the journal go.
    pub state_dir: PathBuf,
    /// Judge and check everything, remove nothing.
    pub dry_run: bool,
    /// Also remove locks a flag keeps ([`crate::verdict::Flag::keeps`]): those holding
    /// unsaved changes.
    pub include_unsaved: bool,
    /// A person decided: also remove a lock that is `unknown` or `foreign` (not proven stale;
    /// never one that is `live` or `free`). Only for a lock the person named, never a batch.
    /// Locks of the `locksmith` dialect are excepted: the engine's protocol removes only stale
    /// ones. The removal is journaled as forced.
    pub force: bool,
    /// How much the state directory may hold (the configuration's `saved` section).
    pub copies: CopyLimits,
    /// Also remove a lock whose copy the limits forbid (it is journaled without a copy).
    pub remove_uncopied: bool,
}

impl ReclaimOptions {
    /// Options with the default state directory and every safety on.
    pub fn new() -> Self {
        ReclaimOptions {
            state_dir: Self::default_state_dir(),
            dry_run: false,
            include_unsaved: false,
            force: false,
            copies: CopyLimits::default(),
            remove_uncopied: false,
        }
    }

    /// The default state directory: see [`default_state_dir`].
    pub fn default_state_dir() -> PathBuf {
        default_state_dir()
    }
}

impl Default for ReclaimOptions {
    fn default() -> Self {
        Self::new()
    }
}

/// How a lock is judged again at the moment of its removal: as the scan that found it judged
/// it. The scanner's settings ([`scan::Config`]) are that judge; reclaim sees nothing else of
/// them.
pub trait Judge {
    /// The stale windows (the engine's protocol removes its locks with them).
    fn windows(&self) -> &Windows;
    /// Judges `finding`'s entry `name` of the open directory `dir` now, reading the file
    /// through `dir`.
    fn judge_at(
        &self,
        dir: BorrowedFd<'_>,
        name: &OsStr,
        finding: &Finding,
        snap: &Snapshot,
    ) -> Result<Option<Finding>, ScanError>;
}

impl Judge for scan::Config {
    fn windows(&self) -> &Windows {
        scan::Config::windows(self)
    }

    fn judge_at(
        &self,
        dir: BorrowedFd<'_>,
        name: &OsStr,
        finding: &Finding,
        snap: &Snapshot,
    ) -> Result<Option<Finding>, ScanError> {
        scan::judge_at(
            dir,
            name,
            &finding.path,
            finding.anchor.as_ref(),
            snap,
            self,
        )
    }
}

/// A reclaim, set up: the one way to remove locks, configured as walkdir's `WalkDir` is.
/// [`Reclaim::new`] takes how each lock is judged again at the moment of its removal (a
/// scan's [`scan::Config`], or a [`Judge`] of the caller's own, as `locksmith start` has);
/// [`Reclaim::options`] (and [`Reclaim::force`], [`Reclaim::include_unsaved`],
/// [`Reclaim::dry_run`] over them) say how; [`Reclaim::settle`] adds a step that completes
/// each fresh judgement before it is checked (the command line and the UI ask a foreign
/// lock's host again there). [`Reclaim::run`] then reclaims the locks, in order, with one
/// fresh evidence snapshot for them all: each is judged again through its directory
/// (reached from its root, see the module docs) and removed only if it is still stale (or
/// foreign, when forced) and still the same file. One outcome per lock, in the same order,
/// each handed out as soon as it is known (its group's removals done).
///
/// ```no_run
/// # use locksmith::reclaim::{Reclaim, ReclaimOptions};
/// # let config = locksmith::config::Settings::embedded().scan;
/// # let finding: locksmith::scan::Finding = unimplemented!();
/// let mut outcomes = Vec::new();
/// Reclaim::new(&config)
///     .options(ReclaimOptions::new())
///     .dry_run(true)
///     .run([&finding], |o| outcomes.push(o));
/// ```
pub struct Reclaim<'a, S = fn(&Finding, &mut Finding)> {
    judge: &'a dyn Judge,
    opts: ReclaimOptions,
    settle: S,
}

impl<'a> Reclaim<'a> {
    /// A reclaim judging each lock again with `judge`, with the default options (the default
    /// state directory, every safety on).
    pub fn new(judge: &'a dyn Judge) -> Self {
        Reclaim {
            judge,
            opts: ReclaimOptions::new(),
            settle: |_, _| {},
        }
    }
}

impl<'a, S: Fn(&Finding, &mut Finding)> Reclaim<'a, S> {
    /// How it behaves: where copies and the journal go, what it may remove (see
    /// [`ReclaimOptions`]).
    pub fn options(mut self, opts: ReclaimOptions) -> Self {
        self.opts = opts;
        self
    }

    /// Judge and check everything, remove nothing ([`ReclaimOptions::dry_run`]).
    pub fn dry_run(mut self, yes: bool) -> Self {
        self.opts.dry_run = yes;
        self
    }

    /// A person's decision about the one lock they named ([`ReclaimOptions::force`]).
    pub fn force(mut self, yes: bool) -> Self {
        self.opts.force = yes;
        self
    }

    /// Also remove locks holding unsaved changes
    /// ([`ReclaimOptions::include_unsaved`]).
    pub fn include_unsaved(mut self, yes: bool) -> Self {
        self.opts.include_unsaved = yes;
        self
    }

    /// A step that completes each fresh judgement before it is checked: `settle(judged,
    /// fresh)` may change `fresh` (asking a foreign lock's host again, say).
    pub fn settle<T: Fn(&Finding, &mut Finding)>(self, settle: T) -> Reclaim<'a, T> {
        Reclaim {
            judge: self.judge,
            opts: self.opts,
            settle,
        }
    }

    /// Reclaims each of `locks` (findings, or what a [`JudgedList`] gives back), in order,
    /// handing each outcome to `on_outcome` as soon as it is known.
    pub fn run<L>(self, locks: L, on_outcome: impl FnMut(Outcome))
    where
        L: IntoIterator,
        L::Item: Borrow<Finding>,
    {
        let snap = Snapshot::take();
        let mut pass = Pass::new(&self.opts, self.judge.windows(), on_outcome);
        for lock in locks {
            let f = lock.borrow();
            pass.reclaim(f, |dir, name| {
                let mut fresh = self.judge.judge_at(dir, name, f, &snap)?;
                if let Some(fresh) = fresh.as_mut() {
                    (self.settle)(f, fresh);
                }
                Ok(fresh)
            });
        }
        pass.finish();
    }
}

/// Why this user cannot remove each of `findings` with `opts`, if it cannot (see
/// `removable`): what a reclaim would refuse before trying, asked without changing
/// anything. Each lock's directory is reached as a reclaim reaches it; one that cannot be
/// reached is not removable either, and says why.
pub fn removal_denied<'a>(
    findings: impl IntoIterator<Item = &'a Finding>,
    opts: &ReclaimOptions,
) -> Vec<Option<String>> {
    let mut dirs = DirCache::default();
    let stores = Stores::read();
    findings
        .into_iter()
        .map(|f| match dirs.open(f) {
            Ok(_)
                if let Some(why) =
                    crate::probe::containers::mounted_layer(&f.path, f.identity.dev) =>
            {
                Some(why)
            }
            Ok((dir, _, anchor)) if let Some(why) = in_a_store(&stores, &anchor, dir.as_fd()) => {
                Some(why)
            }
            Ok((dir, name, _)) => {
                let parent = f.path.parent().unwrap_or(Path::new("/"));
                removable::denied(dir.as_fd(), &name, parent, f.kind, !opts.remove_uncopied)
            }
            Err(e) => Some(format!(
                "cannot open the directory of {} as it was scanned: {e}",
                f.path.display()
            )),
        })
        .collect()
}

/// Finishes the runs killed in the middle of a group of removals (see `recover`), if the
/// state directory of `opts` exists: what one of them left under a private name is put back
/// under its name. A reclaim pass does it before its first removal anyway; a scan that
/// reclaims does it before it scans, so that it finds those locks again.
pub fn recover_killed_runs(opts: &ReclaimOptions) {
    if !opts.dry_run && std::fs::symlink_metadata(&opts.state_dir).is_ok() {
        let _ = open_state(opts);
    }
}

/// The verified state directory of `opts` (see [`StateDir`]). The first time in this process,
/// the runs that were killed in the middle of a group are finished first (see [`recover`]).
fn open_state(opts: &ReclaimOptions) -> Result<std::sync::Arc<StateDir>, String> {
    let state = StateDir::shared(&opts.state_dir, opts.copies)
        .map_err(|e| format!("not removed: no copy can be saved: {e}"))?;
    state
        .recovered
        .call_once(|| recover::finish_dead_runs(&state));
    Ok(state)
}

/// The private name a lock is moved to just before it is removed, made from its journal
/// line's id, so that the next reclaim can find it if this process is killed right then:
/// `NAME.locksmith-aside-HASH`.
fn aside_name(name: &OsStr, id: &str) -> OsString {
    use std::os::unix::ffi::{OsStrExt, OsStringExt};
    let mut out: Vec<u8> = name.as_bytes().iter().copied().take(180).collect();
    out.extend_from_slice(ASIDE_MARKER.as_bytes());
    out.extend_from_slice(&sha256_hex(id.as_bytes()).as_bytes()[..16]);
    OsString::from_vec(out)
}

#[cfg(test)]
mod tests;
