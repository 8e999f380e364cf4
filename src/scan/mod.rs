//! The scanner: walks the configured roots, finds lock candidates by name (and by kernel
//! lock), judges each with its dialect against one evidence snapshot, and streams findings.
//! The scanner never modifies anything.
//!
//! - [`config`]: the scanner's settings (roots, excludes, patterns, stale windows), made from
//!   the configuration by [`crate::config`];
//! - [`scan`]: walks the roots on several threads and streams [`ScanEvent`]s;
//! - [`judge_path`], [`rejudge`], [`judge_at`]: judge one lock again now (reclaim, the UI's
//!   refresh);
//! - [`anchor`]: where a finding was found, checked again before anything acts on it;
//! - [`ScanError`]: a problem with one path (its `io::Error`, path and depth), reported while
//!   the scan goes on; [`FatalError`]: what stops a scan.
//!
//! One [`Snapshot`] serves a whole scan: the caller takes it and passes it in.
//!
//! Every finding is read through its directory's descriptor, never through its path string:
//! the walker opens each directory from its parent's descriptor without following symlinks and
//! records the chain of (device, inode) in the finding's [`Anchor`].

pub mod anchor;
pub mod config;
mod containers;
mod error;
mod judge;
mod matcher;
mod walk;

use std::ffi::{OsStr, OsString};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

pub use crate::dialect::read_prefix;
pub use crate::probe::Identity;
pub use anchor::Anchor;
pub use config::{Config, Root, RootSpec, Spec};
pub use containers::{Place, container_roots};
pub use error::{FatalError, ScanError};
pub use judge::judge_recorded;
pub use matcher::ExtraPatterns;
pub(crate) use matcher::globs;

use crate::dialect::{DialectId, EntryKind};
use crate::judge::Judgement;
use crate::probe::fs::Mount;
use crate::probe::reach;
use crate::probe::{FsInfo, Snapshot};

/// One lock found and judged.
#[derive(Debug, Clone)]
pub struct Finding {
    pub path: PathBuf,
    pub dialect: DialectId,
    pub kind: EntryKind,
    pub size: Option<u64>,
    /// mtime in ms since the epoch.
    pub modified_ms: Option<i64>,
    pub identity: Identity,
    pub fs: FsInfo,
    pub judgement: Judgement,
    /// The bounded content prefix that was judged (for the detail pane).
    pub content: Vec<u8>,
    /// The link text, for symlink locks.
    pub link_target: Option<PathBuf>,
    /// Where it was found (root and directory chain); reclaim and re-judging go through it.
    /// `None` only for findings made by hand.
    pub anchor: Option<Anchor>,
}

impl Finding {}

/// What a running scan reports, in order.
#[derive(Debug, Clone)]
pub enum ScanEvent {
    Progress { entries: u64, locks: u64 },
    Found(Box<Finding>),
    Error(ScanError),
}

/// What a finished (or cancelled) scan did, in numbers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ScanStats {
    /// Directory entries walked (a root that is a file counts as one).
    pub entries: u64,
    /// Findings reported.
    pub locks: u64,
    /// Per-path errors reported.
    pub errors: u64,
    pub elapsed_ms: u64,
}

/// Walks the roots and streams events to `sink` (called from any scanning thread): every lock
/// found, judged against `snap`, each per-path problem, and progress at most every ~50 ms.
/// Stops early when `cancel` is set. A root that cannot be read is a [`ScanEvent::Error`], not
/// a failure; returns a [`FatalError`] only when no root is readable. Never modifies anything.
pub fn scan(
    config: &Config,
    roots: &[Root],
    snap: &Snapshot,
    cancel: &AtomicBool,
    sink: &(dyn Fn(ScanEvent) + Sync),
) -> Result<ScanStats, FatalError> {
    let start = Instant::now();
    // The containers' places are walked beside the host's, from the moment the inventory of
    // namespaces says where they are and the host's walk has probed its roots (a place that is
    // one of them is theirs): the host's walk does not wait for it. Progress is the host
    // walk's until both are done.
    let (host, inside) = std::thread::scope(|s| {
        let (started, host_ids) = std::sync::mpsc::sync_channel(1);
        let inside = config.containers.then(|| {
            s.spawn(move || {
                let inv = snap.containers();
                // Nothing, if the host's walk ended without saying (it panicked).
                let ours = host_ids.recv().unwrap_or_default();
                let places = container_roots(config, inv, &ours, &|e| sink(ScanEvent::Error(e)));
                let (roots, opened): (Vec<Root>, Vec<OwnedFd>) =
                    places.into_iter().map(|p| (p.root, p.dir)).unzip();
                let quiet = |e: ScanEvent| {
                    if !matches!(e, ScanEvent::Progress { .. }) {
                        sink(e)
                    }
                };
                let counts = (!roots.is_empty()).then(|| {
                    walk::Walk::new(config, &config.matcher, snap, cancel, &quiet, &roots)
                        .with_open_roots(opened)
                        .run()
                });
                (counts.unwrap_or_default(), roots)
            })
        });
        // Told once; dropped as the walk ends (or unwinds), so the other side never waits.
        let tell = |ids| {
            let _ = started.send(ids);
        };
        let host = walk::Walk::new(config, &config.matcher, snap, cancel, sink, roots)
            .on_roots_started(&tell)
            .run();
        drop(started);
        let inside = inside.map(|t| t.join().unwrap_or_else(|p| std::panic::resume_unwind(p)));
        (host, inside)
    });
    let (inside, inside_roots) = inside.unwrap_or_default();
    let mut counts = host + inside;
    // What the evidence could read of other users' processes and namespaces only up to a
    // bound, and what that leaves unproven, is reported with the scan's errors.
    for (path, what) in snap.bound_hits() {
        counts.errors += 1;
        sink(ScanEvent::Error(ScanError::other(path, what)));
    }
    if inside.entries > 0 {
        sink(ScanEvent::Progress {
            entries: counts.entries,
            locks: counts.locks,
        });
    }
    let stats = ScanStats {
        entries: counts.entries,
        locks: counts.locks,
        errors: counts.errors,
        elapsed_ms: start.elapsed().as_millis() as u64,
    };
    let cancelled = cancel.load(std::sync::atomic::Ordering::Relaxed);
    if counts.roots_read == 0 && !cancelled {
        return Err(if roots.is_empty() && inside_roots.is_empty() {
            FatalError::NoRoot
        } else {
            FatalError::NoRootReadable {
                roots: roots
                    .iter()
                    .chain(&inside_roots)
                    .map(|r| r.path.clone())
                    .collect(),
            }
        });
    }
    Ok(stats)
}

/// Re-judges one path now, whatever its name (a path named on its own): the dialects matched
/// by name are asked first, then any other. Its directory is opened once and becomes the
/// finding's anchor. `Ok(None)` if the path no longer exists or is no longer a lock; `Err` if
/// it cannot be examined.
pub fn judge_path(
    path: &Path,
    snap: &Snapshot,
    config: &Config,
) -> Result<Option<Finding>, ScanError> {
    if let Some(m) = reach::hanging_mount(None, path) {
        reach::touch_path(path, Some(&m)).map_err(|e| ScanError::other(path, e.to_string()))?;
    }
    let hits = config.matcher.hits(path);
    judge::examine(path, &hits, judge::Mode::Lenient, snap, config)
}

/// Judges a finding again now, through its anchor: its directory is reached again from the
/// root it was found in, checking every directory on the way (see [`anchor`]); a finding
/// without an anchor is judged by its path ([`judge_path`]).
pub fn rejudge(
    finding: &Finding,
    snap: &Snapshot,
    config: &Config,
) -> Result<Option<Finding>, ScanError> {
    if finding.anchor.is_none() {
        return judge_path(&finding.path, snap, config);
    }
    let (dir, name, _) = open_answering(finding)?;
    judge_at(
        dir.as_fd(),
        &name,
        &finding.path,
        finding.anchor.as_ref(),
        snap,
        config,
    )
}

/// The mount a finding is on, when calls on it may wait on a server ([`reach::hanging_mount`]).
pub fn hanging_mount(finding: &Finding) -> Option<Arc<Mount>> {
    reach::hanging_mount(Some(finding.identity.dev), &finding.path)
}

/// Opens a finding's directory again as [`Anchor::open_parent`] does (or by its path, for a
/// finding made by hand) and returns it with the file's name. On a mount that may hang, the
/// file is first asked what judging it will (its status, content, link text) through
/// [`reach::touch`]: a mount that does not answer, now or before, is an error naming it, and what
/// follows (opening, judging, reclaim) runs on a mount that has just answered for this file.
pub fn open_answering(finding: &Finding) -> Result<(OwnedFd, OsString, Anchor), ScanError> {
    let open = || match &finding.anchor {
        Some(a) => a
            .open_parent(&finding.path)
            .map(|(dir, name)| (dir, name, a.clone())),
        None => Anchor::of_parent(&finding.path).map(|(a, dir, name)| (dir, name, a)),
    };
    let Some(m) = hanging_mount(finding) else {
        return open().map_err(|e| ScanError::io(&finding.path, e));
    };
    // Asked first through a task of the mount's: then opened here, the mount having just
    // answered for this very file.
    match reach::touch(&m, &finding.path) {
        Ok(_) => open().map_err(|e| ScanError::io(&finding.path, e)),
        Err(e) => Err(ScanError::other(&m.point, e.to_string())),
    }
}

/// Judges the entry `name` of the open directory `dir` now (`path` is its full path, for
/// messages and the dialects; `anchor` is carried into the finding). Everything about the
/// file is read through `dir`.
pub fn judge_at(
    dir: BorrowedFd<'_>,
    name: &OsStr,
    path: &Path,
    anchor: Option<&Anchor>,
    snap: &Snapshot,
    config: &Config,
) -> Result<Option<Finding>, ScanError> {
    let hits = config.matcher.hits(path);
    judge::examine_at(
        dir,
        name,
        path,
        &hits,
        judge::Mode::Lenient,
        snap,
        config,
        anchor,
    )
}
