//! What a scan keeps of its stale locks for the reclaim pass that follows it ([`JudgedList`]):
//! only what judging each again and removing it need, some 96 bytes a lock, so that a scan of
//! millions of stale locks reclaims them in bounded memory. The judgement is not kept: the
//! reclaim reports what each lock is found to be at the moment of removal.

use std::ffi::OsStr;
use std::path::Path;
use std::sync::Arc;

use crate::dialect::{DialectId, EntryKind};
use crate::judge::Judgement;
use crate::scan::anchor::DirNode;
use crate::scan::{Anchor, Finding, Identity};
use crate::verdict::RemoteClaim;

/// A stale lock as a scan keeps it for the reclaim pass that follows: what judging it again
/// and removing it need (where it is and how it was reached, what file it was, its dialect
/// and kind, the claim its host may be asked about again), and nothing else of its
/// judgement: the reclaim reports what the lock is found to be at the moment of removal.
/// Some 96 bytes, its name kept apart and its root and dialect shared (see [`JudgedList`]).
#[derive(Debug)]
pub(super) struct Judged {
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
