//! One reclaim pass, as [`super::Reclaim::run`] carries it out: each lock is reached from its
//! root ([`DirCache`]), judged again, checked (still stale, still the same file, not in a
//! container runtime's storage, removable by this user), copied and journaled; the locks ready
//! to go are made durable together, in groups of at most [`GROUP_LOCKS`], then each is moved
//! aside, checked once more and removed (see the module docs of `reclaim` for each step and
//! why it is safe). Locks of the `locksmith` dialect go through the engine's protocol, one at a
//! time. Outcomes go out in the order of the locks.
//!
//! Invariants: a lock is removed only once its copy and its journal line are on disk; a lock
//! kept after its line was written gets a `reclaim-failed` line cancelling it; nothing is
//! reached through a path string.

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::journal::{Batch, Entry, Meta};
use super::state::{self, Source, StageError, Staged, StateDir, sha256_hex};
use super::{Action, Outcome, ReclaimOptions, aside_name, open_state, removable, sys};
use crate::dialect::{DialectId, EntryKind, Windows};
use crate::judge::Judgement;
use crate::probe::stores::Stores;
use crate::scan::anchor::DirNode;
use crate::scan::{self, Anchor, Finding, Identity, ScanError};
use crate::verdict::Verdict;

/// At most this many locks are made durable together (one sync for all their copies and
/// journal lines), so that a group's memory is bounded...
pub const GROUP_LOCKS: usize = 1024;
/// ... and at most this many directories are held open for them (each lock of a group keeps
/// its directory open until its removal) ...
const GROUP_DIRS: usize = 128;
/// ... and a lock waits at most about this long between its checks and its removal (the
/// removal checks it again, see [`Pass::remove`]).
const GROUP_TIME: Duration = Duration::from_millis(250);

/// The directory of the previous lock, kept open for the next one of a batch in the same
/// directory (the usual case), so that the chain from the root is walked once per directory.
#[derive(Default)]
pub(super) struct DirCache {
    last: Option<(Arc<DirNode>, PathBuf, Arc<OwnedFd>)>,
}

impl DirCache {
    /// The verified directory of `f`, its file name, and the anchor it was reached by (for a
    /// finding made by hand, not found by the scanner: its directory as it is now). On a mount that may hang it is
    /// opened, and the file asked, through the mount's helper ([`scan::open_answering`]): a
    /// mount that does not answer is an error naming it, and the lock is kept.
    pub(super) fn open(&mut self, f: &Finding) -> io::Result<(Arc<OwnedFd>, OsString, Anchor)> {
        if scan::hanging_mount(f).is_some() {
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

/// Why a lock in `dir` (reached by `anchor`) must not be removed because it is in a container
/// runtime's own storage (see `probe::stores`). A lock found inside a container, through its
/// root, is that container's: it is reclaimed there.
pub(super) fn in_a_store(stores: &Stores, anchor: &Anchor, dir: BorrowedFd<'_>) -> Option<String> {
    if anchor.in_container() {
        return None;
    }
    stores.refusal(dir)
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
    if !j.kept_by.is_empty() {
        return Some(format!(
            "a kernel lock is held on it now by {}, which is not its writer: it proves nothing about the owner, but a file is not removed while someone holds a lock on it (stop that process, or wait for it)",
            crate::verdict::describe_holders(&j.kept_by)
        ));
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
    if let Some(why) = crate::probe::containers::mounted_layer(&fresh.path, fresh.identity.dev) {
        return Some(why);
    }
    if let Some(flag) = j.keeping()
        && !opts.include_unsaved
    {
        let label = flag.label;
        let d = crate::dialect::by_id(fresh.dialect.as_str());
        let action = d.and_then(|d| Some((d, d.action(&fresh.path, &fresh.content, j)?)));
        return Some(match action {
            Some((d, action)) => {
                let verb = action.verb;
                match crate::dialect::command_here(d, &fresh.path, &fresh.content) {
                    Ok(c) => format!(
                        "it holds {label}: {verb} them with `{}` (or pass --include-unsaved)",
                        c.shown()
                    ),
                    Err(why) => format!(
                        "it holds {label}, which are not for you to {verb} ({why}); --include-unsaved removes it"
                    ),
                }
            }
            None => format!("it holds {label}; --include-unsaved removes it"),
        });
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
/// lock pair, whose two names are both locks), as that removal left them, by (device, inode).
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

/// One reclaim pass: each lock is checked and its copy written as it comes; the locks ready
/// to go are made durable together, in groups (see [`GROUP_LOCKS`]), then each is removed
/// after checking it once more; outcomes go out in the order of the locks.
pub(super) struct Pass<'p, O: FnMut(Outcome)> {
    opts: &'p ReclaimOptions,
    windows: &'p Windows,
    dirs: DirCache,
    batch: Batch,
    /// The outcomes and the locks waiting for their group's sync, in order.
    queue: Vec<Slot>,
    ready: usize,
    open_dirs: usize,
    since: Option<Instant>,
    /// The state directory, once opened.
    state: Option<Arc<StateDir>>,
    /// Container runtimes' storage, read when the first lock is checked.
    stores: Option<Stores>,
    outcome: O,
}

enum Slot {
    Done(Box<Outcome>),
    Ready(Box<Ready>),
}

/// A lock checked, its copy written and its journal line made: waiting for its group's sync.
struct Ready {
    dir: Arc<OwnedFd>,
    name: OsString,
    /// It as it was when it was copied.
    held: Identity,
    fresh: Finding,
    staged: Staged,
    state: Arc<StateDir>,
}

/// What the checks before any change decided.
enum Checked {
    Done(Box<Outcome>),
    /// Every check passed: `fresh`, judged again in `dir`, is to be removed.
    Remove {
        dir: Arc<OwnedFd>,
        name: OsString,
        fresh: Box<Finding>,
    },
}

impl<'p, O: FnMut(Outcome)> Pass<'p, O> {
    pub(super) fn new(opts: &'p ReclaimOptions, windows: &'p Windows, outcome: O) -> Self {
        Pass {
            opts,
            windows,
            dirs: DirCache::default(),
            batch: Batch::next(),
            queue: Vec::new(),
            ready: 0,
            open_dirs: 0,
            since: None,
            state: None,
            stores: None,
            outcome,
        }
    }

    fn state(&mut self) -> Result<Arc<StateDir>, String> {
        if let Some(s) = &self.state {
            return Ok(s.clone());
        }
        let s = open_state(self.opts)?;
        self.state = Some(s.clone());
        Ok(s)
    }

    pub(super) fn reclaim(
        &mut self,
        finding: &Finding,
        rejudge: impl FnOnce(BorrowedFd<'_>, &OsStr) -> Result<Option<Finding>, ScanError>,
    ) {
        if self.since.is_some_and(|t| t.elapsed() >= GROUP_TIME) {
            self.flush();
        }
        let (dir, name, fresh) = match self.check(finding, rejudge) {
            Checked::Done(o) => return self.done(*o),
            Checked::Remove { dir, name, fresh } => (dir, name, fresh),
        };
        let path = finding.path.as_path();
        if fresh.dialect == DialectId::LOCKSMITH {
            // One at a time, inside the engine's protocol.
            self.flush();
            let o = match remove_through_engine(
                &dir,
                &name,
                &fresh,
                self.opts,
                self.windows,
                self.batch,
            ) {
                Ok((saved_to, error)) => removed(path, saved_to, error, fresh.judgement),
                Err((e, now)) => Outcome::kept(path, now.map_or(fresh.judgement, |j| *j), e),
            };
            return self.done(o);
        }
        match self
            .state()
            .and_then(|state| stage(&dir, &name, &fresh, self.opts, &state, self.batch))
        {
            Ok((held, staged, state)) => {
                let new_dir = !matches!(self.queue.iter().rev().find_map(|s| match s {
                    Slot::Ready(r) => Some(&r.dir),
                    Slot::Done(_) => None,
                }), Some(d) if Arc::ptr_eq(d, &dir));
                self.open_dirs += usize::from(new_dir);
                self.ready += 1;
                self.since.get_or_insert_with(Instant::now);
                self.queue.push(Slot::Ready(Box::new(Ready {
                    dir,
                    name,
                    held,
                    fresh: *fresh,
                    staged,
                    state,
                })));
                if self.ready >= GROUP_LOCKS || self.open_dirs >= GROUP_DIRS {
                    self.flush();
                }
            }
            Err(why) => self.done(Outcome::kept(path, fresh.judgement, why)),
        }
    }

    fn done(&mut self, o: Outcome) {
        if self.queue.is_empty() {
            (self.outcome)(o);
        } else {
            self.queue.push(Slot::Done(Box::new(o)));
        }
    }

    /// Every check made before anything is changed (see the module docs).
    fn check(
        &mut self,
        finding: &Finding,
        rejudge: impl FnOnce(BorrowedFd<'_>, &OsStr) -> Result<Option<Finding>, ScanError>,
    ) -> Checked {
        let path = finding.path.as_path();
        let kept = |j: Judgement, why: String| Checked::Done(Box::new(Outcome::kept(path, j, why)));
        let (dir, name, anchor) = match self.dirs.open(finding) {
            Ok(d) => d,
            Err(e) => {
                let why = format!(
                    "cannot open the directory of {} as it was scanned: {e}",
                    path.display()
                );
                return kept(Judgement::unknown(why.clone()), why);
            }
        };
        let mut fresh = match rejudge(dir.as_fd(), &name) {
            Ok(Some(f)) => f,
            Ok(None) => {
                let why = "it is no longer a lock (removed or replaced since it was judged)";
                return kept(Judgement::unknown(why), why.into());
            }
            Err(e) => {
                let why = format!("it could not be judged again: {e}");
                return kept(Judgement::unknown(why.clone()), why);
            }
        };
        if let Some(why) = refusal(finding, &fresh, self.opts) {
            return kept(fresh.judgement, why);
        }
        if let Some(why) = in_a_store(
            self.stores.get_or_insert_with(Stores::read),
            &anchor,
            dir.as_fd(),
        ) {
            return kept(fresh.judgement, why);
        }
        // What the kernel would refuse is told now, in a dry run as in a real one.
        let parent = path.parent().unwrap_or(Path::new("/"));
        if let Some(why) = removable::denied(
            dir.as_fd(),
            &name,
            parent,
            fresh.kind,
            !self.opts.remove_uncopied,
        ) {
            return kept(fresh.judgement, why);
        }
        // Where it was reached is what the journal records, for `restore` to check again.
        fresh.anchor = Some(anchor);
        if let Err(why) = on_the_places_mount(&fresh, &dir, &name) {
            return kept(fresh.judgement, why);
        }
        if self.opts.dry_run {
            return Checked::Done(Box::new(Outcome {
                path: path.to_path_buf(),
                ok: true,
                action: Action::WouldRemove,
                saved_to: None,
                saved_offset: None,
                error: None,
                judgement: fresh.judgement,
            }));
        }
        Checked::Remove {
            dir,
            name,
            fresh: Box::new(fresh),
        }
    }

    /// Makes the waiting group durable, removes its locks (each checked once more), cancels
    /// the journal lines of those kept after all, and hands out the outcomes in order.
    fn flush(&mut self) {
        let queue = std::mem::take(&mut self.queue);
        self.ready = 0;
        self.open_dirs = 0;
        self.since = None;
        for o in settle_group(queue) {
            (self.outcome)(o);
        }
    }

    pub(super) fn finish(mut self) {
        self.flush();
    }
}

/// The outcome of a lock removed, its copy `saved` (the file, and the offset in it).
fn removed(
    path: &Path,
    saved: Option<(PathBuf, Option<u64>)>,
    error: Option<String>,
    judgement: Judgement,
) -> Outcome {
    let (saved_to, saved_offset) = saved.map_or((None, None), |(p, at)| (Some(p), at));
    Outcome {
        path: path.to_path_buf(),
        ok: true,
        action: Action::Removed,
        saved_to,
        saved_offset,
        error,
        judgement,
    }
}

/// The outcomes of `queue`, its group settled: its copies and journal lines put on disk
/// with one sync, then each lock removed (see [`remove_staged`]) or, when its last check
/// fails, kept and its line cancelled.
fn settle_group(mut queue: Vec<Slot>) -> Vec<Outcome> {
    let state = queue.iter().find_map(|s| match s {
        Slot::Ready(r) => Some(r.state.clone()),
        Slot::Done(_) => None,
    });
    let durable = match &state {
        Some(state) => {
            let mut staged: Vec<&mut Staged> = queue
                .iter_mut()
                .filter_map(|s| match s {
                    Slot::Ready(r) => Some(&mut r.staged),
                    Slot::Done(_) => None,
                })
                .collect();
            state.make_durable(&mut staged)
        }
        None => Ok(()),
    };
    let mut cancelled = Vec::new();
    let mut kept = Vec::new();
    let mut outcomes: Vec<Outcome> = queue
        .into_iter()
        .enumerate()
        .map(|(i, slot)| {
            let r = match slot {
                Slot::Done(o) => return *o,
                Slot::Ready(r) => *r,
            };
            let result = match &durable {
                Ok(()) => remove_staged(&r.dir, &r.name, &r.held, &r.fresh, r.staged.entry()),
                Err(e) => Err(format!(
                    "not removed: its copy and journal line could not be put on disk in {}: {e}",
                    r.state.path().display()
                )),
            };
            match result {
                Ok(()) => removed(&r.fresh.path, r.staged.keep(), None, r.fresh.judgement),
                Err(why) => {
                    kept.push(i);
                    cancelled.push((r.staged, why.clone()));
                    Outcome::kept(&r.fresh.path, r.fresh.judgement, why)
                }
            }
        })
        .collect();
    if let Some(state) = state {
        if !cancelled.is_empty()
            && let Err(e) = state.cancel(cancelled)
        {
            for i in kept {
                let o = &mut outcomes[i];
                let why = o.error.take().unwrap_or_default();
                o.error = Some(format!(
                    "{why}; its journal line could not be marked as not removed in {}: {e}",
                    state.path().display()
                ));
            }
        }
        state.batch_done();
    }
    outcomes
}

/// Checks that `name` in `dir` is still the file `f` judged, and writes its copy (the file
/// as it is under its name: the link text for a symlink, the records of a lock directory)
/// with its journal line, neither on disk yet (see [`settle_group`]). Returns the file as it
/// was copied, and the copy.
fn stage(
    dir: &OwnedFd,
    name: &OsStr,
    f: &Finding,
    opts: &ReclaimOptions,
    state: &Arc<StateDir>,
    batch: Batch,
) -> Result<(Identity, Staged, Arc<StateDir>), String> {
    // The judged inode: it is what the name must still be, and what is copied.
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
    let staged = match f.kind {
        EntryKind::File => {
            let fd = sys::open_file_at(dir, name, &held_id)
                .map_err(|e| format!("cannot save a copy first: {e}"))?;
            state.stage(f, Source::File(fd.as_fd()), batch)
        }
        EntryKind::Symlink | EntryKind::Dir => state.stage(f, Source::At(dir.as_fd(), name), batch),
        EntryKind::Other => return Err("it is not a file, a symlink or a directory".into()),
    };
    let mut staged = uncopied_or(staged, f, opts, state, batch, || {
        sys::meta_at(dir, name).map_err(|e| format!("cannot stat it: {e}"))
    })?;
    // Changed while it was copied: someone has it open and is using it.
    match sys::identity_at(dir, name) {
        Ok(now) if now == held_id => {}
        Ok(now) => {
            return Err(format!(
                "it changed while it was copied ({})",
                identity_change(&held_id, &now)
            ));
        }
        Err(e) => return Err(format!("cannot stat it: {e}")),
    }
    staged.set_judgement(&f.judgement);
    Ok((held_id, staged, state.clone()))
}

/// Removes the lock `name` in `dir`, whose copy and journal line `entry` are on disk: it must
/// still be the file that was copied (`held`); it is moved aside under a private name (see
/// the module docs), checked there (the same inode, unchanged, no kernel lock on it, the same
/// content or records as its copy), then removed. When any check fails it is put back, and
/// the error says why (the caller cancels the journal line).
fn remove_staged(
    dir: &OwnedFd,
    name: &OsStr,
    held_id: &Identity,
    f: &Finding,
    entry: &Entry,
) -> Result<(), String> {
    let held = sys::open_path(dir, name).map_err(|e| match e.kind() {
        io::ErrorKind::NotFound => "it was removed meanwhile".to_string(),
        _ => format!("cannot open it: {e}"),
    })?;
    let now = sys::identity_fd(&held).map_err(|e| format!("cannot stat it: {e}"))?;
    // Another name of the same file removed in this group moved its ctime, as that removal
    // left it: it is still the file that was copied.
    if !still_as_judged(held_id, &now) {
        return Err(format!(
            "the file changed since it was copied ({})",
            identity_change(held_id, &now)
        ));
    }
    let held_id = &now;
    let aside = sys::move_aside(dir, name, &aside_name(name, &entry.id))
        .map_err(|e| format!("cannot move it aside: {e}"))?;
    let shown_aside = Path::new(&aside).display();
    // Any refusal from here on puts the file back first, and says so when it cannot.
    let put_back = |why: String| -> String {
        match sys::put_back(dir, &aside, name) {
            Ok(()) => why,
            Err(e) => format!(
                "{why}; it stays under the name {shown_aside} beside it: it could not be put \
                 back ({e})"
            ),
        }
    };
    let check = |when: &str| -> Result<(), String> {
        let now = sys::identity_at(dir, &aside).map_err(|e| format!("cannot stat it: {e}"))?;
        if !same_file(held_id, &now) {
            return Err(format!(
                "another file took its name {when} ({})",
                identity_change(held_id, &now)
            ));
        }
        Ok(())
    };
    check("just before it was moved aside").map_err(&put_back)?;
    // A kernel lock can be taken without changing the file, so it is looked for now, with the
    // file out of reach of anyone who has not opened it already.
    match f.kind {
        EntryKind::File => {
            let fd = sys::open_file_at(dir, &aside, held_id)
                .map_err(|e| put_back(format!("cannot open it again: {e}")))?;
            if sys::kernel_locked(fd.as_fd(), held_id) {
                return Err(put_back("a kernel lock is held on it now".into()));
            }
            // A write within the same clock tick as the copy leaves the mtime as it was: a
            // small file (every lock format) is compared with its copy.
            if let Some(want) = &entry.sha256
                && held_id.size <= SAME_CONTENT_BYTES
            {
                let mut bytes = vec![0; held_id.size as usize + 1];
                let n = rustix::io::pread(&fd, &mut bytes, 0)
                    .map_err(|e| put_back(format!("cannot read it again: {e}")))?;
                if sha256_hex(&bytes[..n]) != *want {
                    return Err(put_back("it was written to since it was copied".into()));
                }
            }
        }
        EntryKind::Dir => {
            if sys::dir_locked(dir, &aside, held_id) {
                return Err(put_back("a kernel lock is held on it now".into()));
            }
            match state::lock_records(dir.as_fd(), &aside) {
                Ok(now) if now == entry.members => {}
                _ => {
                    return Err(put_back(
                        "its records changed since they were copied".into(),
                    ));
                }
            }
        }
        EntryKind::Symlink | EntryKind::Other => {}
    }
    let links = sys::links(&held);
    // A lock directory goes with the records it holds (copied with it, put back by restore).
    if f.kind == EntryKind::Dir
        && let Err(e) = sys::remove_records(dir, &aside, &entry.members)
    {
        return Err(put_back(format!("cannot remove its records: {e}")));
    }
    if let Err(e) = sys::unlink_at(dir, &aside, f.kind == EntryKind::Dir) {
        if f.kind == EntryKind::Dir {
            let _ = sys::write_records(dir, &aside, &entry.members);
        }
        return Err(put_back(format!("cannot remove it: {e}")));
    }
    // Only the file's owner (or anyone, in a directory without the sticky bit) could have put
    // another file under the private name since it was checked: say so if it happened. A FUSE
    // file system may count a removed name of an open file still (fuse-overlayfs does): there
    // an unchanged count tells nothing, and the check made just before the removal stands.
    if f.kind != EntryKind::Dir
        && let (Some(before), Some(after)) = (links, sys::links(&held))
        && after + 1 != before
        && !(after == before && before > 0 && f.fs.kind.is_fuse())
    {
        return Err(format!(
            "the name {shown_aside} was taken by another file just before it was removed: \
             that file was removed, and the judged one is still there, unlinked or not"
        ));
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
    Ok(())
}

/// A file this small is compared with its copy just before it is removed.
const SAME_CONTENT_BYTES: u64 = 64 * 1024;

/// Our own dialect goes through the engine's reclaim protocol: the engine takes the stale
/// lock's kernel lock, checks the identity again and calls back before it unlinks, so the copy
/// is made, and it and the journal line put on disk, while no one else can take or reclaim
/// that lock (a group of one); the line is cancelled if the engine does not remove the lock
/// after all. The engine works in the directory reached from the root, never through the
/// path. A refusal comes back with the engine's judgement of the moment.
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
            let s = staged.insert((s, at_removal.judgement));
            s.0.make_durable(&s.1)
        },
    );
    let outcome = match (result, staged) {
        (Ok(_), Some((s, _))) => Ok((s.keep(), None)),
        (Ok(_), None) => Err((
            "the engine removed it without saving a copy first".into(),
            None,
        )),
        (Err(e), staged) => {
            let now = e.judgement().cloned().map(|j| {
                let mut now = crate::judge::engine_judgement(j);
                // A `foreign` owner keeps what to ask its host, as when the scan judged this
                // very record (the same owner): it can be asked about again.
                if now.verdict() == Verdict::Foreign
                    && let Some(claim) = &f.judgement.remote
                    && now.owner.as_ref().is_some_and(|o| {
                        o.pid == Some(claim.pid) && o.hostname.as_deref() == Some(&claim.host)
                    })
                {
                    now.remote = Some(claim.clone());
                }
                Box::new(now)
            });
            let why = format!("not removed: {}", e.kind());
            if let Some((s, _)) = staged {
                let _ = state.cancel(vec![(s, why.clone())]);
            }
            Err((why, now))
        }
    };
    state.batch_done();
    outcome
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
type Removed = (Option<(PathBuf, Option<u64>)>, Option<String>);
