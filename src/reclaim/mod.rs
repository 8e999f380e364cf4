//! Reclaim: removing a lock proven stale at the moment of removal, safely even when
//! run as root over directories other users can write to.
//!
//! The verdict a user saw may be seconds old, so [`reclaim_all`] judges each lock again and
//! removes it only when, at that moment:
//! - it is still `stale` (`unknown` or `foreign` only with [`ReclaimOptions::force`], a
//!   person's decision about one lock they named);
//! - it is still the very file that was judged (device, inode, size, mtime, ctime);
//! - it is not a vim swap holding unsaved changes (unless [`ReclaimOptions::include_unsaved`]);
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

use std::borrow::Cow;
use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::dialect::{DialectId, EntryKind, Windows};
use crate::judge::Judgement;
use crate::probe::Snapshot;
use crate::probe::stores::Stores;
use crate::scan::anchor::DirNode;
use crate::scan::{self, Anchor, Finding, Identity, ScanError};
use crate::verdict::{RemoteClaim, Verdict};

pub mod journal;
mod recover;
mod removable;
pub mod restore;
mod state;

pub use crate::outcome::{Action, Outcome};
pub use journal::{Batch, Entry, Event, Meta, Via, run_id, set_via};
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

/// At most this many locks are made durable together (one sync for all their copies and
/// journal lines), so that a group's memory is bounded...
pub const GROUP_LOCKS: usize = 1024;
/// ... and at most this many directories are held open for them (each lock of a group keeps
/// its directory open until its removal) ...
const GROUP_DIRS: usize = 128;
/// ... and a lock waits at most about this long between its checks and its removal (the
/// removal checks it again, see [`Pass::remove`]).
const GROUP_TIME: Duration = Duration::from_millis(250);

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

/// [`reclaim_all_settled`] handing each outcome to `outcome` as soon as it is known (its
/// group's removals done, in the order of `findings`), instead of keeping them all.
pub fn reclaim_each_settled<'a>(
    findings: impl IntoIterator<Item = &'a Finding>,
    judge: &dyn Judge,
    opts: &ReclaimOptions,
    settle: impl Fn(&Finding, &mut Finding),
    outcome: impl FnMut(Outcome),
) {
    run_pass(
        findings.into_iter().map(Cow::Borrowed),
        judge,
        opts,
        settle,
        outcome,
    );
}

/// [`reclaim_each_settled`] for the locks of a [`JudgedList`] (what a scan keeps of its
/// stale locks for the reclaim pass that follows it).
pub fn reclaim_judged(
    judged: &JudgedList,
    judge: &dyn Judge,
    opts: &ReclaimOptions,
    settle: impl Fn(&Finding, &mut Finding),
    outcome: impl FnMut(Outcome),
) {
    run_pass(
        judged.findings().map(Cow::Owned),
        judge,
        opts,
        settle,
        outcome,
    );
}

fn run_pass<'a>(
    findings: impl Iterator<Item = Cow<'a, Finding>>,
    judge: &dyn Judge,
    opts: &ReclaimOptions,
    settle: impl Fn(&Finding, &mut Finding),
    outcome: impl FnMut(Outcome),
) {
    let snap = Snapshot::take();
    let mut pass = Pass::new(opts, judge.windows(), outcome);
    for f in findings {
        let f = &*f;
        pass.reclaim(f, |dir, name| {
            let mut fresh = judge.judge_at(dir, name, f, &snap)?;
            if let Some(fresh) = fresh.as_mut() {
                settle(f, fresh);
            }
            Ok(fresh)
        });
    }
    pass.finish();
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
    let mut out = None;
    let mut pass = Pass::new(opts, windows, |o| out = Some(o));
    pass.reclaim(finding, rejudge);
    pass.finish();
    out.expect("one outcome per finding")
}

/// A stale lock as a scan keeps it for the reclaim pass that follows: what judging it again
/// and removing it need (where it is and how it was reached, what file it was, its dialect
/// and kind, the claim its host may be asked about again), and nothing else of its
/// judgement: the reclaim reports what the lock is found to be at the moment of removal.
/// Some 96 bytes, its name kept apart and its root and dialect shared (see [`JudgedList`]).
#[derive(Debug)]
struct Judged {
    /// Its directory's path, shared by the locks of one directory.
    dir: Arc<Path>,
    /// The directory it was found in (its anchor's), `None` for a lock not found by a scan.
    node: Option<Arc<DirNode>>,
    remote: Option<Box<RemoteClaim>>,
    dev: u64,
    ino: u64,
    size: u64,
    /// Modification and status change times: seconds, and nanoseconds.
    mtime: i64,
    ctime: i64,
    mtime_nsec: u32,
    ctime_nsec: u32,
    /// Its name: where in its chunk's names, and how long.
    name_at: u32,
    name_len: u16,
    /// Its anchor's root and its dialect, in the list's tables.
    root: u32,
    dialect: u16,
    kind: EntryKind,
}

/// Nanoseconds as seconds and nanoseconds (as `stat` gives them), and back.
fn split_ns(ns: i128) -> (i64, u32) {
    let secs = ns.div_euclid(1_000_000_000);
    (
        i64::try_from(secs).unwrap_or(if secs < 0 { i64::MIN } else { i64::MAX }),
        ns.rem_euclid(1_000_000_000) as u32,
    )
}

fn join_ns((secs, nsec): (i64, u32)) -> i128 {
    i128::from(secs) * 1_000_000_000 + i128::from(nsec)
}

/// The stale locks a scan keeps for its reclaim pass, compactly: in chunks (no list grows by
/// doubling), their names in one buffer per chunk, the path of a directory shared by its
/// locks, the roots and dialects in tables.
#[derive(Debug, Default)]
pub struct JudgedList {
    chunks: Vec<Chunk>,
    roots: Vec<Arc<Path>>,
    dialects: Vec<DialectId>,
    /// The directories of the latest locks (the scanner's threads interleave a few).
    recent: Vec<Arc<Path>>,
}

#[derive(Debug, Default)]
struct Chunk {
    locks: Vec<Judged>,
    names: Vec<u8>,
}

impl JudgedList {
    const CHUNK: usize = 4096;
    const RECENT: usize = 16;

    /// Keeps what a reclaim of `f` needs.
    pub fn push(&mut self, f: &Finding) {
        use std::os::unix::ffi::OsStrExt;
        let parent = f.path.parent().unwrap_or(Path::new(""));
        let dir = match self.recent.iter().position(|d| **d == *parent) {
            Some(i) => self.recent[i].clone(),
            None => {
                let d: Arc<Path> = Arc::from(parent);
                if self.recent.len() == Self::RECENT {
                    self.recent.remove(0);
                }
                self.recent.push(d.clone());
                d
            }
        };
        let root = match &f.anchor {
            Some(a) => match self
                .roots
                .iter()
                .position(|r| Arc::ptr_eq(r, &a.root) || *r == a.root)
            {
                Some(i) => i,
                None => {
                    self.roots.push(a.root.clone());
                    self.roots.len() - 1
                }
            },
            None => usize::MAX,
        };
        let dialect = match self.dialects.iter().position(|d| *d == f.dialect) {
            Some(i) => i,
            None => {
                self.dialects.push(f.dialect);
                self.dialects.len() - 1
            }
        };
        if self
            .chunks
            .last()
            .is_none_or(|c| c.locks.len() == Self::CHUNK)
        {
            self.chunks.push(Chunk {
                locks: Vec::with_capacity(Self::CHUNK),
                names: Vec::with_capacity(Self::CHUNK * 16),
            });
        }
        let chunk = self.chunks.last_mut().expect("just made");
        let name = f.path.file_name().unwrap_or_default().as_bytes();
        let name = &name[..name.len().min(usize::from(u16::MAX))];
        let judged = Judged {
            dir,
            node: f.anchor.as_ref().map(|a| a.dir.clone()),
            remote: f.judgement.remote.clone(),
            dev: f.identity.dev,
            ino: f.identity.ino,
            size: f.identity.size,
            mtime: split_ns(f.identity.mtime_ns).0,
            mtime_nsec: split_ns(f.identity.mtime_ns).1,
            ctime: split_ns(f.identity.ctime_ns).0,
            ctime_nsec: split_ns(f.identity.ctime_ns).1,
            name_at: chunk.names.len() as u32,
            name_len: name.len() as u16,
            root: u32::try_from(root).unwrap_or(u32::MAX),
            dialect: dialect as u16,
            kind: f.kind,
        };
        chunk.names.extend_from_slice(name);
        chunk.locks.push(judged);
    }

    pub fn len(&self) -> usize {
        self.chunks.iter().map(|c| c.locks.len()).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.chunks.is_empty()
    }

    /// Each lock as a [`Finding`] to judge again, in the order they came (its judgement holds
    /// only the claim its host may be asked about).
    pub fn findings(&self) -> impl Iterator<Item = Finding> + '_ {
        self.chunks
            .iter()
            .flat_map(move |c| c.locks.iter().map(move |j| self.finding(c, j)))
    }

    /// The locks whose host may be asked about them again, as findings.
    pub fn asked(&self) -> Vec<Finding> {
        self.chunks
            .iter()
            .flat_map(|c| c.locks.iter().map(move |j| (c, j)))
            .filter(|(_, j)| j.remote.is_some())
            .map(|(c, j)| self.finding(c, j))
            .collect()
    }

    fn finding(&self, chunk: &Chunk, j: &Judged) -> Finding {
        use std::os::unix::ffi::OsStrExt;
        let at = j.name_at as usize;
        let name = OsStr::from_bytes(&chunk.names[at..at + usize::from(j.name_len)]);
        let mut judgement = Judgement::unknown("judged when it was found; judged again now");
        judgement.remote = j.remote.clone();
        let identity = Identity {
            dev: j.dev,
            ino: j.ino,
            size: j.size,
            mtime_ns: join_ns((j.mtime, j.mtime_nsec)),
            ctime_ns: join_ns((j.ctime, j.ctime_nsec)),
        };
        let anchor = match (&j.node, self.roots.get(j.root as usize)) {
            (Some(dir), Some(root)) => Some(Anchor {
                root: root.clone(),
                dir: dir.clone(),
            }),
            _ => None,
        };
        Finding {
            path: j.dir.join(name),
            dialect: self.dialects[usize::from(j.dialect)],
            kind: j.kind,
            size: Some(j.size),
            modified_ms: i64::try_from(identity.mtime_ns.div_euclid(1_000_000)).ok(),
            identity,
            fs: crate::probe::FsInfo::unknown(),
            judgement,
            content: Vec::new(),
            link_target: None,
            anchor,
        }
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
fn in_a_store(stores: &Stores, anchor: &Anchor, dir: BorrowedFd<'_>) -> Option<String> {
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
    if j.unsaved_changes == Some(true) && !opts.include_unsaved {
        return Some(
            match crate::dialect::vim_swap::recovery_here(&fresh.path, &fresh.content) {
                Ok(r) => format!(
                    "it holds unsaved changes: recover them with `{}` (or pass --include-unsaved)",
                    r.command()
                ),
                Err(why) => format!(
                    "it holds unsaved changes, which are not for you to recover ({why}); --include-unsaved removes it"
                ),
            },
        );
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

/// One reclaim pass: each lock is checked and its copy written as it comes; the locks ready
/// to go are made durable together, in groups (see [`GROUP_LOCKS`]), then each is removed
/// after checking it once more; outcomes go out in the order of the locks.
struct Pass<'p, O: FnMut(Outcome)> {
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
    fn new(opts: &'p ReclaimOptions, windows: &'p Windows, outcome: O) -> Self {
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

    fn reclaim(
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

    fn finish(mut self) {
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

/// The private name a lock is moved to just before it is removed, made from its journal
/// line's id, so that the next reclaim can find it if this process is killed right then:
/// `NAME.locksmith-aside-HASH`.
pub(super) fn aside_name(name: &OsStr, id: &str) -> OsString {
    use std::os::unix::ffi::{OsStrExt, OsStringExt};
    let mut out: Vec<u8> = name.as_bytes().iter().copied().take(180).collect();
    out.extend_from_slice(ASIDE_MARKER.as_bytes());
    out.extend_from_slice(&sha256_hex(id.as_bytes()).as_bytes()[..16]);
    OsString::from_vec(out)
}

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

/// The verified state directory of `opts` (see [`StateDir`]).
/// Finishes the runs killed in the middle of a group of removals (see `recover`), if the
/// state directory of `opts` exists: what one of them left under a private name is put back
/// under its name. A reclaim pass does it before its first removal anyway; a scan that
/// reclaims does it before it scans, so that it finds those locks again.
pub fn recover_killed_runs(opts: &ReclaimOptions) {
    if !opts.dry_run && std::fs::symlink_metadata(&opts.state_dir).is_ok() {
        let _ = open_state(opts);
    }
}

/// The first time in this process, the runs that were killed in the middle of a group are
/// finished first (see [`recover`]).
fn open_state(opts: &ReclaimOptions) -> Result<std::sync::Arc<StateDir>, String> {
    let state = StateDir::shared(&opts.state_dir, opts.copies)
        .map_err(|e| format!("not removed: no copy can be saved: {e}"))?;
    state
        .recovered
        .call_once(|| recover::finish_dead_runs(&state));
    Ok(state)
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
    fn random_aside_name(name: &OsStr) -> OsString {
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

    /// Renames `name` to the private name `first` in the same directory, or, if that is
    /// taken, to a new random one, never replacing anything (`renameat2(RENAME_NOREPLACE)`).
    /// Returns the private name.
    pub fn move_aside(dir: &OwnedFd, name: &OsStr, first: &OsStr) -> io::Result<OsString> {
        for i in 0..16 {
            let aside = if i == 0 {
                first.to_os_string()
            } else {
                random_aside_name(name)
            };
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
        let meta = crate::probe::Stat::from(fs::symlink_metadata(path).unwrap());
        Finding {
            path: path.to_path_buf(),
            dialect: DialectId::PIDFILE,
            kind: EntryKind::of(&meta),
            size: Some(meta.len()),
            modified_ms: Some(crate::probe::mtime_ms(&meta)),
            identity: meta.identity(),
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
    /// judge was told nothing about) is put back under its name; its reclaim line, on disk
    /// before the removal was tried, is cancelled, and its copy deleted.
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
        let j = journal(t.path());
        assert_eq!(j.len(), 2, "{j:?}");
        assert_eq!(j[0]["event"], "reclaim");
        assert_eq!(j[1]["event"], "reclaim-failed");
        assert_eq!(j[1]["cancels"], j[0]["id"]);
        assert!(
            j[1]["error"].as_str().unwrap().contains("kernel lock"),
            "{j:?}"
        );
        let saved = t.path().join("state").join(SAVED);
        assert_eq!(fs::read_dir(&saved).unwrap().count(), 0);
        let e = restore::plan(&t.path().join("state"), &Selector::LastRun).unwrap_err();
        assert!(e.contains("nothing to restore"), "{e}");
        drop(held);
        // The rename there and back moved its ctime: judged anew.
        let f = found(&lock, Verdict::Stale);
        let o = reclaim_rejudged(&f, &opts(t.path()), &Windows::default(), |_, _| {
            Ok(Some(found(&lock, Verdict::Stale)))
        });
        assert_eq!(o.action, Action::Removed, "{o:?}");
        assert_eq!(fs::read_dir(&dir).unwrap().count(), 0);
    }

    /// What a scan keeps of a stale lock gives back the finding a reclaim needs: its path,
    /// identity (times to the nanosecond), kind, dialect and anchor, in the order kept.
    #[test]
    fn the_compact_list_gives_back_what_reclaim_needs() {
        let t = tempfile::tempdir().unwrap();
        let mut list = JudgedList::default();
        let mut kept = Vec::new();
        for (i, name) in ["a.pid", "b.pid", ".#c"].iter().enumerate() {
            let p = t.path().join(format!("d{}", i % 2)).join(name);
            fs::create_dir_all(p.parent().unwrap()).unwrap();
            fs::write(&p, "1\n").unwrap();
            let mut f = found(&p, Verdict::Stale);
            if i > 0 {
                f.anchor = Some(Anchor::of_parent(&p).unwrap().0);
            }
            f.dialect = [DialectId::PIDFILE, DialectId::VIM_SWAP][i % 2];
            f.identity.mtime_ns = -1_500_000_001 + i as i128;
            list.push(&f);
            kept.push(f);
        }
        assert_eq!(list.len(), 3);
        for (a, b) in list.findings().zip(&kept) {
            assert_eq!(a.path, b.path);
            assert_eq!(a.identity, b.identity);
            assert_eq!((a.kind, a.dialect), (b.kind, b.dialect));
            assert_eq!(
                a.anchor.as_ref().map(|x| (x.root.clone(), x.chain())),
                b.anchor.as_ref().map(|x| (x.root.clone(), x.chain()))
            );
        }
        assert!(std::mem::size_of::<Judged>() <= 96);
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
        let mut block0 = vec![0u8; 1024];
        block0[..9].copy_from_slice(b"b0VIM 9.0");
        let notes = t.path().join("notes.txt");
        let name = notes.as_os_str().as_encoded_bytes();
        block0[108..108 + name.len()].copy_from_slice(name);
        block0[1007] = 0x55;
        fs::write(&lock, &block0).unwrap();
        fs::write(&notes, "saved text").unwrap();
        let vim = |p: &Path| {
            let mut f = found(p, Verdict::Stale);
            f.dialect = DialectId::VIM_SWAP;
            f.judgement.unsaved_changes = Some(true);
            f.content = block0.clone();
            f
        };
        let f = vim(&lock);
        let o = reclaim_rejudged(&f, &opts(t.path()), &Windows::default(), |_, _| {
            Ok(Some(vim(&lock)))
        });
        assert_eq!(o.action, Action::Kept);
        let why = o.error.unwrap();
        assert!(why.contains("vim -r "), "{why}");
        assert!(why.contains(".notes.txt.swp`"), "{why}");
        let mut all = opts(t.path());
        all.include_unsaved = true;
        let o = reclaim_rejudged(&f, &all, &Windows::default(), |_, _| Ok(Some(vim(&lock))));
        assert_eq!(o.action, Action::Removed);
        assert!(!lock.exists());
    }
}
