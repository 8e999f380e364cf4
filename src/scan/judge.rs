//! Classification and judging of one candidate: `lstat` it, read a bounded prefix of a regular
//! file without ever blocking or following a link, pick its dialect, let the dialect judge it
//! against the scan's snapshot, and build the [`Finding`].
//!
//! Dialect choice: the first dialect in registry order that was matched by name (or that
//! accepts any name) and recognises the candidate; otherwise the first dialect matched by name
//! judges it anyway (and answers `unknown` for what it cannot parse). A directory no dialect
//! recognises is just a directory (unless a kernel lock is held on it); a kernel-locked entry
//! that no dialect claims is judged by `flock`. In *lenient* mode (a file named on the command
//! line, or a path re-judged on request) every dialect is asked last, so a lock with an unusual
//! name is still recognised by its content.
//!
//! A file whose content cannot be read is `unknown` (or, when a dialect judged it anyway, never
//! `stale`); a FIFO, socket or device is never opened.

use std::fs::Metadata;
use std::io;
use std::path::Path;

use super::config::Config;
use super::{Finding, Identity, ScanError};
use crate::dialect::{self, Candidate, EntryKind};
use crate::probe::{FileKey, Snapshot};
use crate::verdict::{Judgement, Verdict};

/// The dialect that judges kernel-locked files no other dialect claims.
const FLOCK: &str = "flock";

/// Why a path is looked at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Found by the walker: a name matched, or a kernel lock may be held on it.
    Walk,
    /// Named explicitly: every dialect may recognise it.
    Lenient,
}

/// Examines one path. `hits` are the dialects (registry indices) whose patterns matched it.
/// `Ok(None)`: no longer there, or not a lock.
pub(crate) fn examine(
    path: &Path,
    hits: &[usize],
    mode: Mode,
    snap: &Snapshot,
    config: &Config,
) -> Result<Option<Finding>, ScanError> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(error(path, "cannot stat", &e)),
    };
    examine_meta(path, &meta, hits, mode, snap, config)
}

pub(crate) fn examine_meta(
    path: &Path,
    meta: &Metadata,
    hits: &[usize],
    mode: Mode,
    snap: &Snapshot,
    config: &Config,
) -> Result<Option<Finding>, ScanError> {
    let kernel_locked = snap.kernel_locked(FileKey::of(meta));
    let registry = config.dialects();
    if hits.is_empty() && !kernel_locked && mode == Mode::Walk {
        return Ok(None);
    }
    let kind = EntryKind::of(meta);
    let (content, complete, read_error) = if kind == EntryKind::File {
        match dialect::read_prefix(path, meta, dialect::CONTENT_PREFIX) {
            Ok((c, complete)) => (c, complete, None),
            Err(e) => (Vec::new(), false, Some(e)),
        }
    } else {
        (Vec::new(), true, None)
    };
    let link_target = if kind == EntryKind::Symlink {
        std::fs::read_link(path).ok()
    } else {
        None
    };
    let fs = snap.fs_of(path, meta);
    let cand = Candidate {
        path,
        meta,
        kind,
        content: &content,
        complete,
        link_target: link_target.as_deref(),
        fs: &fs,
    };

    let asked = |i: usize| hits.contains(&i) || registry[i].any_name();
    let mut chosen = (0..registry.len()).find(|&i| asked(i) && registry[i].recognise(&cand));
    if chosen.is_none() && mode == Mode::Lenient {
        chosen = (0..registry.len()).find(|&i| !asked(i) && registry[i].recognise(&cand));
    }
    let (dialect, judgement) = match chosen {
        Some(i) => {
            let d = registry[i];
            let mut j = d.judge(&cand, snap, &config.windows);
            if let Some(e) = &read_error {
                j = unreadable(j, e);
            }
            (d.id(), j)
        }
        None => {
            // A name-matched file no dialect recognises is judged by the first dialect that
            // matched its name; a kernel-locked entry nothing else claims, by `flock`.
            let flock = || registry.iter().position(|d| d.id() == FLOCK);
            let fallback = match (kind, kernel_locked) {
                (EntryKind::Dir, false) => None,
                (_, false) => hits.first().copied(),
                (_, true) => hits.first().copied().or_else(flock),
            };
            let Some(i) = fallback else {
                return Ok(None);
            };
            let d = registry[i];
            let j = match (kind, &read_error) {
                _ if kernel_locked => {
                    let j = d.judge(&cand, snap, &config.windows);
                    match &read_error {
                        Some(e) => unreadable(j, e),
                        None => j,
                    }
                }
                (EntryKind::Other, _) => Judgement::new(
                    Verdict::Unknown,
                    format!(
                        "{}, not a lock file this tool reads: it was not opened",
                        describe_other(meta)
                    ),
                ),
                (_, Some(e)) => Judgement::new(Verdict::Unknown, format!("cannot read it: {e}")),
                _ => d.judge(&cand, snap, &config.windows),
            };
            (d.id(), j)
        }
    };
    Ok(Some(Finding {
        path: path.to_path_buf(),
        dialect,
        kind,
        size: matches!(kind, EntryKind::File | EntryKind::Symlink).then(|| meta.len()),
        modified_ms: Some(crate::probe::mtime_ms(meta)),
        identity: Identity::of(meta),
        fs,
        judgement: checked(judgement, dialect),
        content,
        link_target,
    }))
}

/// A judgement made without the file's content: never `stale` on that basis.
fn unreadable(mut j: Judgement, e: &io::Error) -> Judgement {
    let line = format!("cannot read its content: {e}");
    if j.verdict == Verdict::Stale {
        let mut u = Judgement::new(Verdict::Unknown, line);
        u.evidence.extend(
            j.evidence
                .into_iter()
                .map(|l| format!("(not conclusive without the content) {l}")),
        );
        u.owner = j.owner;
        u.holders = j.holders;
        return u;
    }
    j.evidence.push(line);
    j
}

/// Keeps the invariant that every verdict has evidence, and that `stale` is never claimed
/// without it.
fn checked(mut j: Judgement, dialect: &str) -> Judgement {
    if j.evidence.iter().all(|l| l.trim().is_empty()) {
        j.verdict = Verdict::Unknown;
        j.evidence = vec![format!("the {dialect} judge gave no evidence")];
    }
    j
}

fn describe_other(meta: &Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let t = meta.file_type();
    if t.is_fifo() {
        "a FIFO (named pipe)"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else {
        "a special file"
    }
}

pub(crate) fn error(path: &Path, what: &str, e: &io::Error) -> ScanError {
    ScanError {
        path: path.to_path_buf(),
        error: format!("{what}: {}", io_message(e)),
    }
}

/// An `io::Error` as a short sentence ("Permission denied (os error 13)").
pub(crate) fn io_message(e: &io::Error) -> String {
    e.to_string()
}
