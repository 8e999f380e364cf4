//! Reclaim: removing a lock proven stale at the moment of removal, safely even when
//! run as root over directories other users can write to.
//!
//! The verdict a user saw may be seconds old, so [`reclaim_all`] judges each lock again and
//! removes it only when, at that moment:
//! - it is still `stale` (`unknown` or `foreign` only with [`ReclaimOptions::force`], a
//!   person's decision about one lock they named);
//! - it is still the very file that was judged (device, inode, size, mtime, ctime);
//! - it is not a vim swap holding unsaved changes (unless [`ReclaimOptions::include_unsaved`]).
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
//! - **Copied, removed, then journaled.** The copy is staged in the state directory from the
//!   file under the private name (exactly the file that is then removed: the link text for a
//!   symlink, its metadata for a directory), then the private name is unlinked (`AT_REMOVEDIR`
//!   for a mkdir-lock, which must be empty), and only then the copy is named and the journal
//!   line written; a lock that is kept leaves neither. What the state directory's limits do
//!   not let it copy is kept, unless [`ReclaimOptions::remove_uncopied`].
//!
//! One evidence snapshot serves a whole batch: the identity check and the move aside carry
//! the safety, and kernel locks, which may be taken on a file without changing it, are asked
//! of the kernel again for each lock once it has been moved aside (`F_OFD_GETLK`, and a
//! non-blocking `flock` of our own, released at once).
//!
//! Locks of the `locksmith` dialect go through the engine's reclaim protocol, which holds the
//! lock's kernel lock while it removes it; it too is given the directory reached from the root,
//! never the path.

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::dialect::{DialectId, EntryKind, Windows};
use crate::judge::Judgement;
use crate::probe::Snapshot;
use crate::scan::anchor::DirNode;
use crate::scan::{self, Anchor, Finding, Identity, ScanError};
use crate::verdict::Verdict;

pub mod journal;
mod removable;
pub mod restore;
mod state;

pub use crate::outcome::{Action, Outcome};
pub use journal::{Batch, Entry, Event, Meta, run_id};
pub use removable::user as user_name;
pub use restore::{Plan, Restored, Selector, plan, restore, restore_plan};
pub use state::{
    CopyLimits, JOURNAL, NotCopied, ROOT_FALLBACK, SAVED, Source, StageError, Staged, StateDir,
    default_state_dir, sha256_hex,
};

/// The marker in the private name a lock is moved to just before it is removed.
pub const ASIDE_MARKER: &str = ".locksmith-aside-";

/// How reclaim behaves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReclaimOptions {
    /// Where copies and the journal go.
    pub state_dir: PathBuf,
    /// Judge and check everything, remove nothing.
    pub dry_run: bool,
    /// Also remove vim swap files that hold unsaved changes.
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

/// Reclaims one lock: see [`reclaim_all`].
pub fn reclaim(finding: &Finding, judge: &dyn Judge, opts: &ReclaimOptions) -> Outcome {
    reclaim_all([finding], judge, opts)
        .pop()
        .expect("one outcome per finding")
}

/// Reclaims each of `findings`, in order, with one fresh evidence snapshot for the batch:
/// each is judged again through its directory (reached from its root, see the module docs)
/// and removed only if it is still stale (or foreign, when forced) and still the same file.
/// One outcome per finding, in the same order.
pub fn reclaim_all<'a>(
    findings: impl IntoIterator<Item = &'a Finding>,
    judge: &dyn Judge,
    opts: &ReclaimOptions,
) -> Vec<Outcome> {
    reclaim_all_settled(findings, judge, opts, |_, _| {})
}

/// [`reclaim_all`] with a step that completes each fresh judgement before it is checked:
/// `settle(judged, fresh)` may change `fresh` (the command line asks a foreign lock's host
/// again there).
pub fn reclaim_all_settled<'a>(
    findings: impl IntoIterator<Item = &'a Finding>,
    judge: &dyn Judge,
    opts: &ReclaimOptions,
    settle: impl Fn(&Finding, &mut Finding),
) -> Vec<Outcome> {
    let mut outcomes = Vec::new();
    reclaim_each_settled(findings, judge, opts, settle, |o| outcomes.push(o));
    outcomes
}

/// [`reclaim_all_settled`] handing each outcome to `outcome` as soon as it is known, instead
/// of keeping them all.
pub fn reclaim_each_settled<'a>(
    findings: impl IntoIterator<Item = &'a Finding>,
    judge: &dyn Judge,
    opts: &ReclaimOptions,
    settle: impl Fn(&Finding, &mut Finding),
    mut outcome: impl FnMut(Outcome),
) {
    let snap = Snapshot::take();
    let mut dirs = DirCache::default();
    let batch = Batch::next();
    for f in findings {
        outcome(reclaim_in(
            f,
            opts,
            judge.windows(),
            &mut dirs,
            batch,
            |dir, name| {
                let mut fresh = judge.judge_at(dir, name, f, &snap)?;
                if let Some(fresh) = fresh.as_mut() {
                    settle(f, fresh);
                }
                Ok(fresh)
            },
        ));
    }
}

/// [`reclaim`] with the re-judging step given by the caller: `rejudge` gets the lock's
/// directory (reached as the module docs say) and name, and must look at the machine now,
/// reading the file through that directory, as [`scan::judge_at`] with a fresh [`Snapshot`]
/// does.
pub fn reclaim_rejudged(
    finding: &Finding,
    opts: &ReclaimOptions,
    windows: &Windows,
    rejudge: impl FnOnce(BorrowedFd<'_>, &OsStr) -> Result<Option<Finding>, ScanError>,
) -> Outcome {
    let batch = Batch::next();
    reclaim_in(
        finding,
        opts,
        windows,
        &mut DirCache::default(),
        batch,
        rejudge,
    )
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
    findings
        .into_iter()
        .map(|f| match dirs.open(f) {
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

/// The directory of the previous lock, kept open for the next one of a batch in the same
/// directory (the usual case), so that the chain from the root is walked once per directory.
#[derive(Default)]
struct DirCache {
    last: Option<(Arc<DirNode>, PathBuf, Arc<OwnedFd>)>,
}

impl DirCache {
    /// The verified directory of `f`, its file name, and the anchor it was reached by (for a
    /// finding made by hand, not found by the scanner: its directory as it is now). On a mount that may hang it is
    /// opened, and the file asked, through the mount's helper ([`scan::open_answering`]): a
    /// mount that does not answer is an error naming it, and the lock is kept.
    fn open(&mut self, f: &Finding) -> io::Result<(Arc<OwnedFd>, OsString, Anchor)> {
        if scan::hanging_mount(f, &crate::probe::fs::MountTable::recent()).is_some() {
            self.last = None;
            let (dir, name, anchor) = scan::open_answering(f).map_err(|e| match e.io_error() {
                Some(io) => io::Error::new(io.kind(), e.to_string()),
                None => io::Error::other(format!("{}: {e}", e.path().display())),
            })?;
            return Ok((Arc::new(dir), name, anchor));
        }
        let parent = f.path.parent().unwrap_or(Path::new("")).to_path_buf();
        let name = f
            .path
            .file_name()
            .ok_or_else(|| io::Error::other("the path has no file name"))?
            .to_os_string();
        let Some(anchor) = &f.anchor else {
            let (anchor, dir, name) = Anchor::of_parent(&f.path)?;
            return Ok((Arc::new(dir), name, anchor));
        };
        if let Some((node, p, dir)) = &self.last
            && Arc::ptr_eq(node, &anchor.dir)
            && *p == parent
        {
            return Ok((dir.clone(), name, anchor.clone()));
        }
        self.last = None;
        let (dir, name) = anchor.open_parent(&f.path)?;
        let dir = Arc::new(dir);
        self.last = Some((anchor.dir.clone(), parent, dir.clone()));
        Ok((dir, name, anchor.clone()))
    }
}

fn reclaim_in(
    finding: &Finding,
    opts: &ReclaimOptions,
    windows: &Windows,
    dirs: &mut DirCache,
    batch: Batch,
    rejudge: impl FnOnce(BorrowedFd<'_>, &OsStr) -> Result<Option<Finding>, ScanError>,
) -> Outcome {
    let path = finding.path.as_path();
    let (dir, name, anchor) = match dirs.open(finding) {
        Ok(d) => d,
        Err(e) => {
            let why = format!(
                "cannot open the directory of {} as it was scanned: {e}",
                path.display()
            );
            return Outcome::kept(path, Judgement::unknown(why.clone()), why);
        }
    };
    let mut fresh = match rejudge(dir.as_fd(), &name) {
        Ok(Some(f)) => f,
        Ok(None) => {
            let why = "it is no longer a lock (removed or replaced since it was judged)";
            return Outcome::kept(path, Judgement::unknown(why), why);
        }
        Err(e) => {
            let why = format!("it could not be judged again: {e}");
            return Outcome::kept(path, Judgement::unknown(why.clone()), why);
        }
    };
    if let Some(why) = refusal(finding, &fresh, opts) {
        return Outcome::kept(path, fresh.judgement, why);
    }
    // What the kernel would refuse is told now, in a dry run as in a real one.
    let parent = path.parent().unwrap_or(Path::new("/"));
    if let Some(why) = removable::denied(
        dir.as_fd(),
        &name,
        parent,
        fresh.kind,
        !opts.remove_uncopied,
    ) {
        return Outcome::kept(path, fresh.judgement, why);
    }
    // Where it was reached is what the journal records, for `restore` to check again.
    fresh.anchor = Some(anchor);
    if let Err(why) = on_the_places_mount(&fresh, &dir, &name) {
        return Outcome::kept(path, fresh.judgement, why);
    }
    if opts.dry_run {
        return Outcome {
            path: path.to_path_buf(),
            ok: true,
            action: Action::WouldRemove,
            saved_to: None,
            error: None,
            judgement: fresh.judgement,
        };
    }
    let result = if fresh.dialect == DialectId::LOCKSMITH {
        remove_through_engine(&dir, &name, &fresh, opts, windows, batch)
    } else {
        remove_aside(&dir, &name, &fresh, opts, batch).map_err(|e| (e, None))
    };
    match result {
        Ok((saved_to, error)) => Outcome {
            path: path.to_path_buf(),
            ok: true,
            action: Action::Removed,
            saved_to,
            error,
            judgement: fresh.judgement,
        },
        Err((e, now)) => Outcome::kept(path, now.map_or(fresh.judgement, |j| *j), e),
    }
}

/// Inside a container, the lock must be on the mount of the place it was found in, like its
/// directory (see [`scan::anchor`]): a file mounted there from elsewhere (a file of the host
/// bind-mounted into the container) is not the container's to lose.
fn on_the_places_mount(f: &Finding, dir: &OwnedFd, name: &OsStr) -> Result<(), String> {
    let Some(anchor) = f.anchor.as_ref().filter(|a| a.in_container()) else {
        return Ok(());
    };
    let check = || -> io::Result<()> {
        let mount = scan::anchor::mount_id(dir.as_fd())?;
        let entry = sys::open_path(dir, name)?;
        anchor.expect_mount(entry.as_fd(), mount, &f.path)
    };
    check().map_err(|e| format!("not removed: {e}"))
}

/// Why the freshly judged lock must not be removed, if it must not.
fn refusal(judged: &Finding, fresh: &Finding, opts: &ReclaimOptions) -> Option<String> {
    // What it is now is the more useful reason ("it is live now"), so it comes first.
    let j = &fresh.judgement;
    let allowed = match j.verdict() {
        Verdict::Stale => true,
        Verdict::Foreign | Verdict::Unknown => opts.force,
        _ => false,
    };
    if !allowed {
        let first = j.evidence.first().map_or("", String::as_str);
        return Some(format!("it is {} now: {first}", j.verdict()));
    }
    if !still_as_judged(&judged.identity, &fresh.identity) {
        return Some(format!(
            "the file changed since it was judged ({})",
            identity_change(&judged.identity, &fresh.identity)
        ));
    }
    if fresh.kind == EntryKind::Other {
        return Some("it is not a regular file, a symlink or a directory".into());
    }
    if j.unsaved_changes == Some(true) && !opts.include_unsaved {
        let hint = crate::dialect::vim_swap::recover_command(&fresh.path, &fresh.content);
        return Some(format!(
            "it holds unsaved changes: recover them with `{hint}` (or pass --include-unsaved)"
        ));
    }
    None
}

fn identity_change(a: &Identity, b: &Identity) -> String {
    let mut what = Vec::new();
    if (a.dev, a.ino) != (b.dev, b.ino) {
        what.push(format!("inode {} is now {}", a.ino, b.ino));
    }
    if a.size != b.size {
        what.push(format!("size {} is now {}", a.size, b.size));
    }
    if a.mtime_ns != b.mtime_ns {
        what.push("modified again".to_string());
    } else if a.ctime_ns != b.ctime_ns {
        what.push("changed again (status change time)".to_string());
    }
    what.join(", ")
}

/// Files with other names left when this process removed one of their names (a hard-linked
/// lock pair, such as xauth's `-c` and `-l`), as that removal left them, by (device, inode).
/// Removing a name moves the file's ctime, which would otherwise make its other names look
/// changed since they were judged.
static LEFT_BY_REMOVAL: std::sync::Mutex<Option<HashMap<(u64, u64), Identity>>> =
    std::sync::Mutex::new(None);

/// Whether `now` is the file that was judged as `judged`, unchanged: the same identity, or a
/// file this process removed another name of since, exactly as that removal left it (only the
/// ctime moved, by that removal).
fn still_as_judged(judged: &Identity, now: &Identity) -> bool {
    if judged == now {
        return true;
    }
    let same_content = (judged.dev, judged.ino, judged.size, judged.mtime_ns)
        == (now.dev, now.ino, now.size, now.mtime_ns);
    same_content
        && LEFT_BY_REMOVAL
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .and_then(|m| m.get(&(now.dev, now.ino)))
            == Some(now)
}

/// Whether `now` (under the private name) is the file `held` was, unchanged: the same inode,
/// size and mtime (the rename itself moves the ctime).
fn same_file(held: &Identity, now: &Identity) -> bool {
    (held.dev, held.ino, held.size, held.mtime_ns) == (now.dev, now.ino, now.size, now.mtime_ns)
}

/// Moves the judged file aside, checks it, stages a copy of it, removes it and journals it
/// (see the module docs). Returns where the copy is.
fn remove_aside(
    dir: &OwnedFd,
    name: &OsStr,
    f: &Finding,
    opts: &ReclaimOptions,
    batch: Batch,
) -> Result<Removed, String> {
    // Hold the judged inode: it is what the name must still be, and what is removed.
    let held = sys::open_path(dir, name).map_err(|e| match e.kind() {
        io::ErrorKind::NotFound => "it was removed meanwhile".to_string(),
        _ => format!("cannot open it: {e}"),
    })?;
    let held_id = sys::identity_fd(&held).map_err(|e| format!("cannot stat it: {e}"))?;
    if !still_as_judged(&f.identity, &held_id) {
        return Err(format!(
            "the file changed since it was judged ({})",
            identity_change(&f.identity, &held_id)
        ));
    }
    // No copy can be kept: nothing is moved.
    let state = open_state(opts)?;
    let aside = sys::move_aside(dir, name).map_err(|e| format!("cannot move it aside: {e}"))?;
    let shown_aside = Path::new(&aside).display();
    // Any refusal from here on puts the file back first, and says so when it cannot.
    let put_back = |why: String| -> String {
        match sys::put_back(dir, &aside, name) {
            Ok(()) => why,
            Err(e) => {
                let why = format!(
                    "{why}; it stays under the name {shown_aside} beside it: it could not be \
                     put back ({e})"
                );
                journal_failure(&state, f, &why, batch);
                why
            }
        }
    };
    let check = |when: &str| -> Result<(), String> {
        let now = sys::identity_at(dir, &aside).map_err(|e| format!("cannot stat it: {e}"))?;
        if !same_file(&held_id, &now) {
            return Err(format!(
                "another file took its name {when} ({})",
                identity_change(&held_id, &now)
            ));
        }
        Ok(())
    };
    check("just before it was moved aside").map_err(&put_back)?;
    // A kernel lock can be taken without changing the file, so it is looked for now, with the
    // file out of reach of anyone who has not opened it already; then the copy is staged from
    // the file under the private name.
    let staged = match f.kind {
        EntryKind::File => {
            let fd = sys::open_file_at(dir, &aside, &held_id)
                .map_err(|e| put_back(format!("cannot save a copy first: {e}")))?;
            if sys::kernel_locked(fd.as_fd(), &held_id) {
                return Err(put_back("a kernel lock is held on it now".into()));
            }
            state.stage(f, Source::File(fd.as_fd()), batch)
        }
        EntryKind::Symlink => state.stage(f, Source::At(dir.as_fd(), &aside), batch),
        EntryKind::Dir => {
            if sys::dir_locked(dir, &aside, &held_id) {
                return Err(put_back("a kernel lock is held on it now".into()));
            }
            state.stage(f, Source::At(dir.as_fd(), &aside), batch)
        }
        EntryKind::Other => {
            return Err(put_back(
                "it is not a file, a symlink or a directory".into(),
            ));
        }
    };
    let staged = uncopied_or(staged, f, opts, &state, batch, || {
        sys::meta_at(dir, &aside).map_err(|e| format!("cannot stat it: {e}"))
    })
    .map_err(&put_back)?;
    // Written to while it was copied: someone has it open and is using it.
    if check("while it was copied").is_err() {
        staged.discard();
        return Err(put_back("it was written to while it was copied".into()));
    }
    let links = sys::links(&held);
    // A lock directory goes with the records it holds (copied with it, put back by restore).
    if f.kind == EntryKind::Dir
        && let Err(e) = sys::remove_records(dir, &aside, &staged.entry().members)
    {
        staged.discard();
        let why = put_back(format!("cannot remove its records: {e}"));
        journal_failure(&state, f, &why, batch);
        return Err(why);
    }
    if let Err(e) = sys::unlink_at(dir, &aside, f.kind == EntryKind::Dir) {
        if f.kind == EntryKind::Dir {
            let _ = sys::write_records(dir, &aside, &staged.entry().members);
        }
        staged.discard();
        let why = put_back(format!("cannot remove it: {e}"));
        journal_failure(&state, f, &why, batch);
        return Err(why);
    }
    // Only the file's owner (or anyone, in a directory without the sticky bit) could have put
    // another file under the private name since it was checked: say so if it happened.
    if f.kind != EntryKind::Dir
        && let (Some(before), Some(after)) = (links, sys::links(&held))
        && after + 1 != before
    {
        staged.discard();
        let why = format!(
            "the name {shown_aside} was taken by another file just before it was removed: \
             that file was removed, and the judged one is still there, unlinked or not"
        );
        journal_failure(&state, f, &why, batch);
        return Err(why);
    }
    if f.kind != EntryKind::Dir
        && links.is_some_and(|n| n > 1)
        && let Ok(left) = sys::identity_fd(&held)
    {
        LEFT_BY_REMOVAL
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_or_insert_with(HashMap::new)
            .insert((left.dev, left.ino), left);
    }
    Ok(committed(staged.commit(&f.judgement), &state))
}

/// The verified state directory of `opts` (see [`StateDir`]).
fn open_state(opts: &ReclaimOptions) -> Result<std::sync::Arc<StateDir>, String> {
    StateDir::shared(&opts.state_dir, opts.copies)
        .map_err(|e| format!("not removed: no copy can be saved: {e}"))
}

/// A staged copy, or, when the limits forbid one and the user asked to remove such locks
/// anyway, a journal entry without a copy; otherwise why the lock is kept.
fn uncopied_or(
    staged: Result<Staged, StageError>,
    f: &Finding,
    opts: &ReclaimOptions,
    state: &std::sync::Arc<StateDir>,
    batch: Batch,
    meta: impl FnOnce() -> Result<Meta, String>,
) -> Result<Staged, String> {
    match staged {
        Ok(s) => Ok(s),
        Err(StageError::NotCopied(why)) if opts.remove_uncopied => {
            Ok(state.uncopied(f, meta()?, &why, batch))
        }
        Err(StageError::NotCopied(why)) => Err(format!(
            "not removed, as no copy is kept: {} (--remove-uncopied removes it without one)",
            why.0
        )),
        Err(StageError::Io(e)) => Err(format!(
            "cannot save a copy in {}: {e}",
            state.path().display()
        )),
    }
}

/// Where the copy of a removed lock is, and what went wrong after the removal.
type Removed = (Option<PathBuf>, Option<String>);

/// The lock is gone whatever happens to its journal line; a failure to write it is reported.
fn committed(r: io::Result<Option<PathBuf>>, state: &StateDir) -> Removed {
    match r {
        Ok(saved) => (saved, None),
        Err(e) => (
            None,
            Some(format!(
                "removed, but its copy could not be named or journaled in {}: {e}",
                state.path().display()
            )),
        ),
    }
}

/// A `reclaim-failed` journal line for `f`, in `batch`.
fn journal_failure(state: &StateDir, f: &Finding, error: &str, batch: Batch) {
    let mut line = Entry::new(state.next_id(), Event::ReclaimFailed, &f.path);
    line.batch = Some(batch.0);
    line.dialect = Some(f.dialect.to_string());
    line.error = Some(error.to_string());
    let _ = state.append(&line);
}

/// Our own dialect goes through the engine's reclaim protocol: the engine takes the stale
/// lock's kernel lock, checks the identity again and calls back before it unlinks, so the copy
/// is made while no one else can take or reclaim that lock; it is journaled once the engine
/// has removed the lock. The engine works in the directory reached from the root, never
/// through the path. A refusal comes back with the engine's judgement of the moment.
fn remove_through_engine(
    dir: &OwnedFd,
    name: &OsStr,
    f: &Finding,
    opts: &ReclaimOptions,
    windows: &Windows,
    batch: Batch,
) -> Result<Removed, (String, Option<Box<Judgement>>)> {
    let state = open_state(opts).map_err(|e| (e, None))?;
    let meta = sys::meta_at(dir, name).ok();
    let dir = dir
        .try_clone()
        .map_err(|e| (format!("cannot use its directory: {e}"), None))?;
    let mut staged = None;
    let result = crate::engine::lock(&f.path).windows(windows).reclaim_at(
        dir,
        name,
        Some(f.identity),
        |content, judgement| {
            let mut at_removal = f.clone();
            at_removal.judgement = crate::judge::engine_judgement(judgement.clone());
            let s = state.stage(&at_removal, Source::Bytes(content, meta.clone()), batch);
            let s = uncopied_or(s, &at_removal, opts, &state, batch, || {
                meta.clone().ok_or_else(|| "cannot stat it".to_string())
            })
            .map_err(io::Error::other)?;
            staged = Some((s, at_removal.judgement));
            Ok(())
        },
    );
    match (result, staged) {
        (Ok(_), Some((s, judgement))) => Ok(committed(s.commit(&judgement), &state)),
        (Ok(_), None) => Err((
            "the engine removed it without saving a copy first".into(),
            None,
        )),
        (Err(e), _) => {
            let now = e
                .judgement()
                .cloned()
                .map(|j| Box::new(crate::judge::engine_judgement(j)));
            Err((format!("not removed: {}", e.kind()), now))
        }
    }
}

/// The file operations, all relative to the lock's verified directory descriptor.
mod sys {
    use std::hash::BuildHasher;
    use std::os::unix::ffi::{OsStrExt, OsStringExt};
    use std::sync::atomic::{AtomicU64, Ordering};

    use rustix::fs::{AtFlags, FileType, FlockOperation, Mode, OFlags, RenameFlags};
    use rustix::io::Errno;

    use super::*;
    use crate::probe::{FileKey, KernelLocks};

    /// Opens the entry itself, whatever it is, without following a symlink or opening a
    /// device (`O_PATH|O_NOFOLLOW`).
    pub fn open_path(dir: &OwnedFd, name: &OsStr) -> io::Result<OwnedFd> {
        Ok(rustix::fs::openat(
            dir,
            name,
            OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )?)
    }

    pub fn identity_fd(fd: &OwnedFd) -> io::Result<Identity> {
        Ok(identity_of(&rustix::fs::fstat(fd)?))
    }

    /// `fstatat(dir, name, AT_SYMLINK_NOFOLLOW)` (stat(2)) as an [`Identity`].
    pub fn identity_at(dir: &OwnedFd, name: &OsStr) -> io::Result<Identity> {
        let st = rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW)?;
        Ok(identity_of(&st))
    }

    /// The link count of an open file, if it can be read.
    #[allow(clippy::unnecessary_cast)]
    pub fn links(fd: &OwnedFd) -> Option<u64> {
        rustix::fs::fstat(fd).ok().map(|st| st.st_nlink as u64)
    }

    // The field types of `struct stat` differ between platforms.
    #[allow(clippy::unnecessary_cast)]
    fn identity_of(st: &rustix::fs::Stat) -> Identity {
        Identity {
            dev: st.st_dev as u64,
            ino: st.st_ino as u64,
            size: st.st_size as u64,
            mtime_ns: st.st_mtime as i128 * 1_000_000_000 + st.st_mtime_nsec as i128,
            ctime_ns: st.st_ctime as i128 * 1_000_000_000 + st.st_ctime_nsec as i128,
        }
    }

    /// Whether a kernel lock is held on the open file `fd` now: a POSIX or OFD lock
    /// (`F_OFD_GETLK`, which takes nothing), or a `flock(2)` lock (a non-blocking exclusive
    /// `flock` of our own fails; when it succeeds it is released at once). Where the kernel
    /// cannot tell, `/proc/locks` is read.
    pub fn kernel_locked(fd: BorrowedFd<'_>, id: &Identity) -> bool {
        match crate::probe::kernel_locks::write_lock_conflict(fd) {
            Ok(true) => return true,
            Ok(false) => {}
            Err(_) => return listed(id),
        }
        match rustix::fs::flock(fd, FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => {
                let _ = rustix::fs::flock(fd, FlockOperation::Unlock);
                false
            }
            Err(Errno::WOULDBLOCK) => true,
            Err(_) => listed(id),
        }
    }

    /// Whether `/proc/locks` lists a lock on the file.
    fn listed(id: &Identity) -> bool {
        !KernelLocks::read()
            .on(FileKey::from_dev_ino(id.dev, id.ino))
            .is_empty()
    }

    /// Whether a kernel lock is held on the directory `name` in `dir` (which must be the
    /// expected one); one that cannot be opened counts as locked.
    pub fn dir_locked(dir: &OwnedFd, name: &OsStr, expected: &Identity) -> bool {
        let fd = match rustix::fs::openat(
            dir,
            name,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        ) {
            Ok(fd) => fd,
            Err(_) => return true,
        };
        match identity_fd(&fd) {
            Ok(id) if (id.dev, id.ino) == (expected.dev, expected.ino) => {
                kernel_locked(fd.as_fd(), expected)
            }
            _ => true,
        }
    }

    /// A private name for `name` in its directory: `NAME.locksmith-aside-RANDOM`.
    fn aside_name(name: &OsStr) -> OsString {
        static COUNT: AtomicU64 = AtomicU64::new(0);
        let n = COUNT.fetch_add(1, Ordering::Relaxed);
        let random = std::collections::hash_map::RandomState::new().hash_one((
            std::process::id(),
            n,
            std::time::SystemTime::now(),
        ));
        let mut out: Vec<u8> = name.as_bytes().iter().copied().take(180).collect();
        out.extend_from_slice(ASIDE_MARKER.as_bytes());
        out.extend_from_slice(format!("{random:016x}").as_bytes());
        OsString::from_vec(out)
    }

    /// Renames `name` to a new private name in the same directory, never replacing anything
    /// (`renameat2(RENAME_NOREPLACE)`). Returns the private name.
    pub fn move_aside(dir: &OwnedFd, name: &OsStr) -> io::Result<OsString> {
        for _ in 0..16 {
            let aside = aside_name(name);
            match rustix::fs::renameat_with(dir, name, dir, &aside, RenameFlags::NOREPLACE) {
                Ok(()) => return Ok(aside),
                Err(Errno::EXIST) => continue,
                // The file system cannot refuse to replace: the private name is random and
                // was just seen free.
                Err(Errno::INVAL) | Err(Errno::NOSYS) => {
                    match rustix::fs::statat(dir, &aside, AtFlags::SYMLINK_NOFOLLOW) {
                        Err(Errno::NOENT) => {
                            rustix::fs::renameat(dir, name, dir, &aside)?;
                            return Ok(aside);
                        }
                        _ => continue,
                    }
                }
                Err(e) => return Err(e.into()),
            }
        }
        Err(io::Error::other("no free private name"))
    }

    /// Renames the private name back to `name`, unless something has taken `name` since.
    pub fn put_back(dir: &OwnedFd, aside: &OsStr, name: &OsStr) -> io::Result<()> {
        match rustix::fs::renameat_with(dir, aside, dir, name, RenameFlags::NOREPLACE) {
            Ok(()) => Ok(()),
            Err(Errno::EXIST) => Err(io::Error::other(format!(
                "{} exists again",
                Path::new(name).display()
            ))),
            // No RENAME_NOREPLACE here: a hard link cannot replace anything either.
            Err(Errno::INVAL) | Err(Errno::NOSYS) => {
                rustix::fs::linkat(dir, aside, dir, name, AtFlags::empty())?;
                rustix::fs::unlinkat(dir, aside, AtFlags::empty())?;
                Ok(())
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Opens a regular file through `openat(O_NOFOLLOW|O_NONBLOCK)` (openat(2)), after
    /// checking that the opened file is the expected one.
    pub fn open_file_at(dir: &OwnedFd, name: &OsStr, expected: &Identity) -> io::Result<OwnedFd> {
        let fd = rustix::fs::openat(
            dir,
            name,
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        let st = rustix::fs::fstat(&fd)?;
        if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
            return Err(io::Error::other("it is no longer a regular file"));
        }
        let id = identity_of(&st);
        if (id.dev, id.ino) != (expected.dev, expected.ino) {
            return Err(io::Error::other("it was replaced while being opened"));
        }
        Ok(fd)
    }

    /// The metadata a restore needs, of `name` in `dir` (never followed).
    pub fn meta_at(dir: &OwnedFd, name: &OsStr) -> io::Result<Meta> {
        let st = rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW)?;
        Ok(Meta::of(&st))
    }

    /// `unlinkat(dir, name, 0 or AT_REMOVEDIR)` (unlinkat(2)): removes the entry itself, a
    /// symlink as a link.
    /// Removes the records `members` from the lock directory `name` in `dir` (each still a
    /// regular file: a name that became anything else is left, and the directory with it).
    pub fn remove_records(
        dir: &OwnedFd,
        name: &OsStr,
        members: &[crate::reclaim::journal::Member],
    ) -> io::Result<()> {
        if members.is_empty() {
            return Ok(());
        }
        let inner = rustix::fs::openat(
            dir,
            name,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        for m in members {
            let n = m.name_os();
            let st = rustix::fs::statat(&inner, &n, AtFlags::SYMLINK_NOFOLLOW)?;
            if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
                return Err(io::Error::other(format!(
                    "{} is no longer a regular file",
                    m.name
                )));
            }
            rustix::fs::unlinkat(&inner, &n, AtFlags::empty())?;
        }
        Ok(())
    }

    /// Writes the records `members` back into the lock directory `name` (when it could not be
    /// removed after them).
    pub fn write_records(
        dir: &OwnedFd,
        name: &OsStr,
        members: &[crate::reclaim::journal::Member],
    ) -> io::Result<()> {
        let inner = rustix::fs::openat(
            dir,
            name,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        for m in members {
            let fd = rustix::fs::openat(
                &inner,
                m.name_os(),
                OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::from_raw_mode(m.meta.mode & 0o7777),
            )?;
            rustix::io::write(&fd, &m.bytes())?;
        }
        Ok(())
    }

    pub fn unlink_at(dir: &OwnedFd, name: &OsStr, is_dir: bool) -> io::Result<()> {
        let flags = if is_dir {
            AtFlags::REMOVEDIR
        } else {
            AtFlags::empty()
        };
        rustix::fs::unlinkat(dir, name, flags)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::fs;
    use std::os::unix::ffi::OsStrExt;

    use super::*;
    use crate::probe::FsInfo;

    /// A finding for `path` as it is on disk now, with the given verdict (what a judge would
    /// return; the judging itself is the scanner's and is tested there).
    fn found(path: &Path, verdict: Verdict) -> Finding {
        let meta = fs::symlink_metadata(path).unwrap();
        Finding {
            path: path.to_path_buf(),
            dialect: DialectId::PIDFILE,
            kind: EntryKind::of(&meta),
            size: Some(meta.len()),
            modified_ms: Some(crate::probe::mtime_ms(&meta)),
            identity: Identity::of(&meta),
            fs: FsInfo::unknown(),
            judgement: Judgement::for_test(verdict, "test verdict"),
            content: Vec::new(),
            link_target: None,
            anchor: None,
        }
    }

    fn opts(dir: &Path) -> ReclaimOptions {
        ReclaimOptions {
            state_dir: dir.join("state"),
            dry_run: false,
            include_unsaved: false,
            force: false,
            copies: CopyLimits::default(),
            remove_uncopied: false,
        }
    }

    fn journal(dir: &Path) -> Vec<serde_json::Value> {
        fs::read_to_string(dir.join("state").join(JOURNAL))
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    #[test]
    fn removes_a_stale_file_after_saving_and_journaling_it() {
        let t = tempfile::tempdir().unwrap();
        let lock = t.path().join("x.pid");
        fs::write(&lock, "999999\n").unwrap();
        let f = found(&lock, Verdict::Stale);
        let o = reclaim_rejudged(&f, &opts(t.path()), &Windows::default(), |_, _| {
            Ok(Some(found(&f.path, Verdict::Stale)))
        });
        assert_eq!((o.ok, o.action), (true, Action::Removed), "{o:?}");
        assert!(!lock.exists());
        let saved = o.saved_to.unwrap();
        assert_eq!(fs::read(&saved).unwrap(), b"999999\n");
        let j = journal(t.path());
        assert_eq!(j.len(), 1);
        assert_eq!(j[0]["event"], "reclaim");
        assert_eq!(j[0]["path"], lock.to_str().unwrap());
        assert_eq!(j[0]["verdict"], "stale");
        assert_eq!(j[0]["sha256"], sha256_hex(b"999999\n"));
        assert_eq!(j[0]["saved_to"], saved.to_str().unwrap());
    }

    #[test]
    fn keeps_what_is_not_stale_now() {
        let t = tempfile::tempdir().unwrap();
        let lock = t.path().join("x.pid");
        fs::write(&lock, "1\n").unwrap();
        let f = found(&lock, Verdict::Stale);
        for now in [
            Verdict::Live,
            Verdict::Free,
            Verdict::Unknown,
            Verdict::Foreign,
        ] {
            let o = reclaim_rejudged(&f, &opts(t.path()), &Windows::default(), |_, _| {
                Ok(Some(found(&lock, now)))
            });
            assert_eq!((o.ok, o.action), (false, Action::Kept));
            assert_eq!(o.judgement.verdict(), now);
            assert!(o.error.unwrap().contains(now.as_str()));
        }
        let o = reclaim_rejudged(&f, &opts(t.path()), &Windows::default(), |_, _| Ok(None));
        assert_eq!(o.action, Action::Kept);
        assert!(lock.exists());
        assert!(journal(t.path()).is_empty());
    }

    #[test]
    fn foreign_only_with_force() {
        let t = tempfile::tempdir().unwrap();
        let lock = t.path().join("x.pid");
        fs::write(&lock, "1\n").unwrap();
        let f = found(&lock, Verdict::Foreign);
        let mut o = opts(t.path());
        o.force = true;
        let out = reclaim_rejudged(&f, &o, &Windows::default(), |_, _| {
            Ok(Some(found(&f.path, Verdict::Foreign)))
        });
        assert_eq!(out.action, Action::Removed);
        assert!(!lock.exists());
    }

    #[test]
    fn refuses_a_replaced_or_rewritten_file() {
        let t = tempfile::tempdir().unwrap();
        let lock = t.path().join("x.pid");
        fs::write(&lock, "1\n").unwrap();
        let f = found(&lock, Verdict::Stale);
        // Replaced by another file (new inode) that a judge would also call stale.
        fs::write(t.path().join("new"), "2\n").unwrap();
        fs::rename(t.path().join("new"), &lock).unwrap();
        let o = reclaim_rejudged(&f, &opts(t.path()), &Windows::default(), |_, _| {
            Ok(Some(found(&f.path, Verdict::Stale)))
        });
        assert_eq!(o.action, Action::Kept);
        assert!(o.error.unwrap().contains("changed since it was judged"));
        assert_eq!(fs::read(&lock).unwrap(), b"2\n");
        // Rewritten in place (same inode, new size).
        let f = found(&lock, Verdict::Stale);
        fs::write(&lock, "12345\n").unwrap();
        let o = reclaim_rejudged(&f, &opts(t.path()), &Windows::default(), |_, _| {
            Ok(Some(found(&f.path, Verdict::Stale)))
        });
        assert_eq!(o.action, Action::Kept);
        assert!(lock.exists());
    }

    /// A file moved aside that fails a check (here: a kernel lock is held on it, which the
    /// judge was told nothing about) is put back under its name, and nothing is journaled.
    #[test]
    fn a_file_moved_aside_that_fails_a_check_is_put_back() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("d");
        fs::create_dir(&dir).unwrap();
        let lock = dir.join("x.pid");
        fs::write(&lock, "1\n").unwrap();
        let held = fs::File::open(&lock).unwrap();
        rustix::fs::flock(&held, rustix::fs::FlockOperation::NonBlockingLockExclusive).unwrap();
        let f = found(&lock, Verdict::Stale);
        let o = reclaim_rejudged(&f, &opts(t.path()), &Windows::default(), |_, _| {
            Ok(Some(found(&lock, Verdict::Stale)))
        });
        assert_eq!(o.action, Action::Kept, "{o:?}");
        assert!(o.error.unwrap().contains("kernel lock"));
        let names: Vec<_> = fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("x.pid")]);
        assert_eq!(fs::read(&lock).unwrap(), b"1\n");
        assert!(journal(t.path()).is_empty());
        drop(held);
        // The rename there and back moved its ctime: judged anew.
        let f = found(&lock, Verdict::Stale);
        let o = reclaim_rejudged(&f, &opts(t.path()), &Windows::default(), |_, _| {
            Ok(Some(found(&lock, Verdict::Stale)))
        });
        assert_eq!(o.action, Action::Removed, "{o:?}");
        assert_eq!(fs::read_dir(&dir).unwrap().count(), 0);
    }

    #[test]
    fn dry_run_removes_nothing() {
        let t = tempfile::tempdir().unwrap();
        let lock = t.path().join("x.pid");
        fs::write(&lock, "1\n").unwrap();
        let mut o = opts(t.path());
        o.dry_run = true;
        let f = found(&lock, Verdict::Stale);
        let out = reclaim_rejudged(&f, &o, &Windows::default(), |_, _| {
            Ok(Some(found(&f.path, Verdict::Stale)))
        });
        assert_eq!((out.ok, out.action), (true, Action::WouldRemove));
        assert!(lock.exists());
        assert!(!t.path().join("state").exists());
    }

    #[test]
    fn a_symlink_lock_is_removed_as_a_link_and_its_target_survives() {
        let t = tempfile::tempdir().unwrap();
        let target = t.path().join("precious");
        fs::write(&target, "keep me").unwrap();
        let lock = t.path().join(".#notes.txt");
        std::os::unix::fs::symlink(&target, &lock).unwrap();
        let f = found(&lock, Verdict::Stale);
        let o = reclaim_rejudged(&f, &opts(t.path()), &Windows::default(), |_, _| {
            Ok(Some(found(&f.path, Verdict::Stale)))
        });
        assert_eq!(o.action, Action::Removed, "{o:?}");
        assert!(fs::symlink_metadata(&lock).is_err());
        assert_eq!(fs::read(&target).unwrap(), b"keep me");
        assert_eq!(
            fs::read(o.saved_to.unwrap()).unwrap(),
            target.as_os_str().as_bytes()
        );
    }

    #[test]
    fn a_lock_directory_goes_with_its_small_records_only() {
        let t = tempfile::tempdir().unwrap();
        let lock = t.path().join("job.lock");
        fs::create_dir(&lock).unwrap();
        let reclaim = || {
            let f = found(&lock, Verdict::Stale);
            reclaim_rejudged(&f, &opts(t.path()), &Windows::default(), |_, _| {
                Ok(Some(found(&f.path, Verdict::Stale)))
            })
        };
        let o = reclaim();
        assert_eq!(o.action, Action::Removed, "{o:?}");
        assert!(!lock.exists());

        // A record inside goes with it, into the journal line.
        fs::create_dir(&lock).unwrap();
        fs::write(lock.join("pid"), "4242\n").unwrap();
        let o = reclaim();
        assert_eq!(o.action, Action::Removed, "{o:?}");
        assert!(!lock.exists());
        let j = journal(t.path());
        let members = j.last().unwrap()["members"].as_array().unwrap().clone();
        assert_eq!(members.len(), 1, "{j:?}");
        assert_eq!(members[0]["name"], "pid");
        assert_eq!(members[0]["content"], "4242\n");

        // Anything else inside (a subdirectory: package metadata, not a lock's record): kept,
        // with no copy and no journal line.
        fs::create_dir_all(lock.join("registry")).unwrap();
        let o = reclaim();
        assert_eq!(o.action, Action::Kept, "{o:?}");
        assert!(lock.join("registry").is_dir());
        assert!(
            o.error
                .as_deref()
                .unwrap_or("")
                .contains("not a small record"),
            "{o:?}"
        );
        let j = journal(t.path());
        let reclaims = j.iter().filter(|e| e["event"] == "reclaim").count();
        assert_eq!(reclaims, 2, "{j:?}");
        let copies = fs::read_dir(t.path().join("state").join(SAVED))
            .unwrap()
            .count();
        assert_eq!(copies, 2);
    }

    #[test]
    fn a_parent_symlink_in_last_position_is_not_followed() {
        let t = tempfile::tempdir().unwrap();
        let real = t.path().join("real");
        fs::create_dir(&real).unwrap();
        fs::write(real.join("x.pid"), "1\n").unwrap();
        std::os::unix::fs::symlink(&real, t.path().join("link")).unwrap();
        let via_link = t.path().join("link/x.pid");
        let f = found(&via_link, Verdict::Stale);
        let o = reclaim_rejudged(&f, &opts(t.path()), &Windows::default(), |_, _| {
            Ok(Some(found(&f.path, Verdict::Stale)))
        });
        assert_eq!(o.action, Action::Kept);
        assert!(o.error.unwrap().contains("cannot open the directory"));
        assert!(real.join("x.pid").exists());
    }

    #[test]
    fn unsaved_vim_changes_are_kept_unless_asked() {
        let t = tempfile::tempdir().unwrap();
        let lock = t.path().join(".notes.txt.swp");
        fs::write(&lock, "b0VIM 9.0").unwrap();
        fs::write(t.path().join("notes.txt"), "saved text").unwrap();
        let vim = |p: &Path| {
            let mut f = found(p, Verdict::Stale);
            f.dialect = DialectId::VIM_SWAP;
            f.judgement.unsaved_changes = Some(true);
            f
        };
        let f = vim(&lock);
        let o = reclaim_rejudged(&f, &opts(t.path()), &Windows::default(), |_, _| {
            Ok(Some(vim(&lock)))
        });
        assert_eq!(o.action, Action::Kept);
        let why = o.error.unwrap();
        assert!(why.contains("vim -r "), "{why}");
        assert!(why.contains("notes.txt`"), "{why}");
        let mut all = opts(t.path());
        all.include_unsaved = true;
        let o = reclaim_rejudged(&f, &all, &Windows::default(), |_, _| Ok(Some(vim(&lock))));
        assert_eq!(o.action, Action::Removed);
        assert!(!lock.exists());
    }
}
