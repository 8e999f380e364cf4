//! Undo: puts a reclaimed lock back from its copy, exactly as it was (a symlink as a symlink,
//! a lock directory as a directory; mode, owner and mtime), and journals it.
//!
//! The lock goes back into the very directory it was removed from, never to whatever has its
//! name now: the journal records the (device, inode) of every directory from `/` down to the
//! lock's own as reclaim reached them, and restore opens them again one component at a time
//! from `/` without following any symlink, refusing if any of them is not the recorded one (a
//! directory moved away and another put in its place, by anyone who may write to its parent).
//! A lock removed inside a container goes back into that same container while it runs: the
//! runtime's identity of it is recorded, its root is reached through `/proc/<pid>/root` of the
//! proven container with that identity now, and the recorded chain starts at that root (so
//! a container restarted since, with a new root, is refused too, saying how to copy the lock
//! back by hand). An entry without the chain (older journals) is refused with its copy named.
//!
//! The lock is rebuilt under a private name in that directory and renamed into place with
//! `RENAME_NOREPLACE`: if anything stands at the path by then, nothing is replaced and the
//! restore is refused. The copy's SHA-256 is checked against the journal first.

use std::collections::HashSet;
use std::ffi::OsStr;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use rustix::fs::{AtFlags, FileType, Mode, OFlags, Timespec, Timestamps};
use rustix::io::Errno;

use super::journal::{Entry, Event, InContainer, Meta};
use super::state::StateDir;
use crate::probe::containers::{Inventory, proc_root_path};
use crate::scan::anchor::{self, DirId};
use crate::text;

/// Which reclaim to undo.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selector {
    /// The most recent reclaim not restored yet.
    Last,
    /// An entry id, as `locksmith journal` shows it.
    Id(String),
    /// An entry's number in `locksmith journal` (1 = oldest line).
    Number(usize),
    /// The most recent reclaim of this path not restored yet.
    Path(PathBuf),
}

impl Selector {
    /// `None` → [`Selector::Last`]; an argument with a `/` is a path, digits are a number,
    /// anything else an id ([`restore`] takes an id that names no entry as a path relative to
    /// the current directory, as `locksmith restore daemon.pid` means).
    pub fn parse(arg: Option<&OsStr>) -> Selector {
        let Some(arg) = arg else {
            return Selector::Last;
        };
        let b = arg.as_bytes();
        if b.contains(&b'/') {
            return Selector::Path(PathBuf::from(arg));
        }
        if !b.is_empty()
            && b.iter().all(u8::is_ascii_digit)
            && let Ok(n) = arg.to_string_lossy().parse()
        {
            return Selector::Number(n);
        }
        match arg.to_str() {
            Some(s) => Selector::Id(s.to_string()),
            None => Selector::Path(PathBuf::from(arg)),
        }
    }
}

/// What a restore did.
#[derive(Debug, Clone)]
pub struct Restored {
    /// The reclaim entry that was undone.
    pub id: String,
    pub path: PathBuf,
    /// For a lock put back inside a container: `container web-1 (podman 3f2a…)` and its path
    /// there.
    pub inside: Option<(String, PathBuf)>,
    pub kind: String,
    /// What could not be put back as it was (an owner we may not give away).
    pub warnings: Vec<String>,
}

/// The journal's entries, oldest first (none if there is no state directory).
pub fn entries(state_dir: &Path) -> io::Result<Vec<Entry>> {
    match StateDir::existing(state_dir)? {
        Some(s) => s.read_journal(),
        None => Ok(Vec::new()),
    }
}

/// The ids of the reclaim entries already restored.
pub fn restored_ids(entries: &[Entry]) -> HashSet<&str> {
    entries
        .iter()
        .filter(|e| e.event == Event::Restore)
        .filter_map(|e| e.restores.as_deref())
        .collect()
}

/// Undoes the most recent reclaim that is not undone yet.
pub fn restore_last(state_dir: &Path) -> Result<Restored, String> {
    restore(state_dir, &Selector::Last)
}

/// Undoes the reclaim `selector` names (see the module docs). The error says why nothing was
/// done.
pub fn restore(state_dir: &Path, selector: &Selector) -> Result<Restored, String> {
    let state = StateDir::existing(state_dir)
        .map_err(|e| e.to_string())?
        .ok_or_else(|| {
            format!(
                "nothing to restore: there is no state directory {}",
                state_dir.display()
            )
        })?;
    let all = state
        .read_journal()
        .map_err(|e| format!("cannot read the journal: {e}"))?;
    let done = restored_ids(&all);
    let undoable = |e: &&Entry| e.event == Event::Reclaim && !done.contains(e.id.as_str());
    let entry = match selector {
        Selector::Last => all
            .iter()
            .rev()
            .find(undoable)
            .ok_or("nothing to restore: every reclaim in the journal is restored already")?,
        Selector::Id(id) if all.iter().any(|e| &e.id == id) => {
            all.iter().find(|e| &e.id == id).expect("checked")
        }
        Selector::Id(name) => {
            return restore(state_dir, &Selector::Path(PathBuf::from(name)));
        }
        Selector::Number(n) => n
            .checked_sub(1)
            .and_then(|i| all.get(i))
            .ok_or_else(|| format!("no journal entry number {n} (there are {})", all.len()))?,
        Selector::Path(p) => {
            let want = text::json_path(&crate::scan::config::absolute(p));
            all.iter()
                .rev()
                .filter(|e| e.path == want)
                .find(undoable)
                .ok_or_else(|| {
                    format!(
                        "no reclaim of {} left to restore in the journal",
                        p.display()
                    )
                })?
        }
    };
    if entry.event != Event::Reclaim {
        return Err(format!(
            "journal entry {} is a {} entry, not a reclaim",
            entry.id,
            entry.event.as_str()
        ));
    }
    if done.contains(entry.id.as_str()) {
        return Err(format!(
            "{} (entry {}) was restored already",
            entry.path_buf().display(),
            entry.id
        ));
    }
    let restored = put_back(&state, entry)?;
    let mut line = Entry::new(state_next_id(&entry.id), Event::Restore, &restored.path);
    line.dialect = entry.dialect.clone();
    line.meta = entry.meta.clone();
    line.restores = Some(entry.id.clone());
    line.sha256 = entry.sha256.clone();
    if !restored.warnings.is_empty() {
        line.error = Some(restored.warnings.join("; "));
    }
    state.append(&line).map_err(|e| {
        format!(
            "{} was restored, but the journal could not be written: {e}",
            restored.path.display()
        )
    })?;
    Ok(restored)
}

fn state_next_id(of: &str) -> String {
    let stamp = jiff::Timestamp::now().strftime("%Y%m%dT%H%M%S%.3fZ");
    format!("{stamp}-restore-{of}")
}

fn put_back(state: &StateDir, entry: &Entry) -> Result<Restored, String> {
    let path = entry.path_buf();
    let shown = path.display();
    if let Some(why) = &entry.not_saved {
        return Err(format!(
            "{shown} was removed without a copy ({why}); it cannot be restored"
        ));
    }
    let meta = entry.meta.as_ref().ok_or_else(|| {
        format!("{shown}: the journal entry has no metadata (an older journal); restore it by hand from its copy")
    })?;
    let (dir, name) = open_recorded_parent(entry)?;
    match rustix::fs::statat(&dir, &*name, AtFlags::SYMLINK_NOFOLLOW) {
        Err(Errno::NOENT) => {}
        Ok(_) => {
            return Err(format!(
                "something stands at {shown} now; nothing was restored (move it away first)"
            ));
        }
        Err(e) => return Err(format!("cannot look at {shown}: {e}")),
    }
    let content = match meta.kind.as_str() {
        "file" | "symlink" => Some(read_copy(state, entry).map_err(|e| format!("{shown}: {e}"))?),
        _ => None,
    };
    let temp = format!(".locksmith-restore-{}", std::process::id());
    let mut warnings = Vec::new();
    let made = build(
        &dir,
        &temp,
        meta,
        content.as_ref(),
        &entry.members,
        &mut warnings,
    );
    let fd = match made {
        Ok(fd) => fd,
        Err(e) => {
            remove_temp(&dir, &temp, meta, &entry.members);
            return Err(format!("cannot restore {shown}: {e}"));
        }
    };
    match rustix::fs::renameat_with(
        &dir,
        temp.as_str(),
        &dir,
        &*name,
        rustix::fs::RenameFlags::NOREPLACE,
    ) {
        Ok(()) => {}
        Err(Errno::EXIST) => {
            remove_temp(&dir, &temp, meta, &entry.members);
            return Err(format!(
                "something appeared at {shown} meanwhile; nothing was restored"
            ));
        }
        Err(e) => {
            remove_temp(&dir, &temp, meta, &entry.members);
            return Err(format!("cannot put {shown} in place: {e}"));
        }
    }
    // A directory's times may move when it is renamed: set them again on the inode we hold.
    if let Some(fd) = fd {
        let _ = rustix::fs::futimens(&fd, &times(meta));
    }
    Ok(Restored {
        id: entry.id.clone(),
        path,
        inside: entry
            .container
            .as_ref()
            .map(|c| (c.describe(), c.path_buf())),
        kind: meta.kind.clone(),
        warnings,
    })
}

/// The copy's content, checked against the journal's SHA-256.
fn read_copy(state: &StateDir, entry: &Entry) -> Result<Vec<u8>, String> {
    let saved = entry
        .saved_to
        .as_deref()
        .and_then(text::path_from_json)
        .ok_or("the journal entry names no copy")?;
    let name = saved.file_name().ok_or("the journal names a bad copy")?;
    let saved_dir = state
        .saved_fd()
        .ok_or("its copy is gone (there is no directory of copies)")?;
    let fd = match rustix::fs::openat(
        saved_dir,
        name,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
        Mode::empty(),
    ) {
        Ok(fd) => fd,
        Err(Errno::NOENT) => {
            return Err(format!(
                "its copy {} is gone (copies older than saved.keep_days are deleted)",
                saved.display()
            ));
        }
        Err(e) => return Err(format!("cannot open its copy: {e}")),
    };
    let st = rustix::fs::fstat(&fd).map_err(|e| e.to_string())?;
    if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
        return Err("its copy is not a regular file".into());
    }
    let bytes = super::state::read_all(&fd, super::state::MAX_APPARENT_BYTES)
        .map_err(|e| format!("cannot read its copy: {e}"))?;
    if let Some(want) = &entry.sha256 {
        let got = super::state::sha256_hex(&bytes);
        if &got != want {
            return Err(format!(
                "its copy does not match the journal (sha256 {got}, journaled {want})"
            ));
        }
    }
    Ok(bytes)
}

fn times(meta: &Meta) -> Timestamps {
    let t = Timespec {
        tv_sec: meta.mtime,
        tv_nsec: meta.mtime_nsec.into(),
    };
    Timestamps {
        last_access: t,
        last_modification: t,
    }
}

/// Makes the lock under `temp` in `dir` with its content and metadata. Returns a descriptor
/// on a directory (to set its times again after the rename).
fn build(
    dir: &OwnedFd,
    temp: &str,
    meta: &Meta,
    content: Option<&Vec<u8>>,
    members: &[super::journal::Member],
    warnings: &mut Vec<String>,
) -> io::Result<Option<OwnedFd>> {
    let owner = |r: rustix::io::Result<()>, warnings: &mut Vec<String>| {
        if let Err(e) = r {
            warnings.push(format!(
                "owner {}:{} not restored ({e})",
                meta.uid, meta.gid
            ));
        }
    };
    let uid = Some(rustix::fs::Uid::from_raw(meta.uid));
    let gid = Some(rustix::fs::Gid::from_raw(meta.gid));
    match meta.kind.as_str() {
        "file" => {
            let fd = rustix::fs::openat(
                dir,
                temp,
                OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::from_raw_mode(0o600),
            )?;
            let bytes = content.map_or(&[][..], Vec::as_slice);
            write_sparse(&fd, bytes)?;
            rustix::fs::ftruncate(&fd, bytes.len() as u64)?;
            owner(rustix::fs::fchown(&fd, uid, gid), warnings);
            rustix::fs::fchmod(&fd, Mode::from_raw_mode(meta.mode))?;
            rustix::fs::futimens(&fd, &times(meta))?;
            rustix::fs::fsync(&fd)?;
            Ok(None)
        }
        "symlink" => {
            let target = OsStr::from_bytes(content.map_or(&[][..], Vec::as_slice));
            rustix::fs::symlinkat(target, dir, temp)?;
            owner(
                rustix::fs::chownat(dir, temp, uid, gid, AtFlags::SYMLINK_NOFOLLOW),
                warnings,
            );
            rustix::fs::utimensat(dir, temp, &times(meta), AtFlags::SYMLINK_NOFOLLOW)?;
            Ok(None)
        }
        "dir" => {
            rustix::fs::mkdirat(dir, temp, Mode::from_raw_mode(0o700))?;
            let fd = rustix::fs::openat(
                dir,
                temp,
                OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::empty(),
            )?;
            // The records it held, each as it was.
            for m in members {
                let file = rustix::fs::openat(
                    &fd,
                    m.name_os(),
                    OFlags::WRONLY
                        | OFlags::CREATE
                        | OFlags::EXCL
                        | OFlags::NOFOLLOW
                        | OFlags::CLOEXEC,
                    Mode::from_raw_mode(0o600),
                )?;
                write_sparse(&file, &m.bytes())?;
                let (uid, gid) = (
                    Some(rustix::fs::Uid::from_raw(m.meta.uid)),
                    Some(rustix::fs::Gid::from_raw(m.meta.gid)),
                );
                owner(rustix::fs::fchown(&file, uid, gid), warnings);
                rustix::fs::fchmod(&file, Mode::from_raw_mode(m.meta.mode))?;
                rustix::fs::futimens(&file, &times(&m.meta))?;
                rustix::fs::fsync(&file)?;
            }
            owner(rustix::fs::fchown(&fd, uid, gid), warnings);
            rustix::fs::fchmod(&fd, Mode::from_raw_mode(meta.mode))?;
            rustix::fs::futimens(&fd, &times(meta))?;
            Ok(Some(fd))
        }
        other => Err(io::Error::other(format!(
            "cannot restore a lock of type {other}"
        ))),
    }
}

/// Writes `bytes`, leaving runs of zero blocks as holes (the copy kept the file sparse).
fn write_sparse(fd: &OwnedFd, bytes: &[u8]) -> io::Result<()> {
    const BLOCK: usize = 4096;
    let mut off = 0usize;
    while off < bytes.len() {
        let end = (off + BLOCK).min(bytes.len());
        let chunk = &bytes[off..end];
        if chunk.len() < BLOCK || chunk.iter().any(|&b| b != 0) {
            let mut done = 0;
            while done < chunk.len() {
                done += rustix::io::pwrite(fd, &chunk[done..], (off + done) as u64)?;
            }
        }
        off = end;
    }
    Ok(())
}

fn remove_temp(dir: &OwnedFd, temp: &str, meta: &Meta, members: &[super::journal::Member]) {
    let flags = if meta.kind == "dir" {
        if let Ok(inner) = rustix::fs::openat(
            dir,
            temp,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        ) {
            for m in members {
                let _ = rustix::fs::unlinkat(&inner, m.name_os(), AtFlags::empty());
            }
        }
        AtFlags::REMOVEDIR
    } else {
        AtFlags::empty()
    };
    let _ = rustix::fs::unlinkat(dir, temp, flags);
}

/// Opens the directory the lock of `entry` was removed from, through the directories the
/// journal recorded (see the module docs), and returns it with the lock's name.
fn open_recorded_parent(entry: &Entry) -> Result<(OwnedFd, std::ffi::OsString), String> {
    let path = entry.path_buf();
    let shown = path.display();
    let copy = entry
        .saved_to
        .as_deref()
        .and_then(text::path_from_json)
        .unwrap_or_default();
    let in_container = entry.container.as_ref();
    let (top, inside) = match in_container {
        Some(c) => (container_root(c, &path, &copy)?, c.path_buf()),
        None if proc_root_path(&path).is_some() => {
            return Err(format!(
                "{shown} was removed inside a PID namespace that is not a container proven to be \
                 a runtime's, which nothing can find again: restore it by hand from its copy {}",
                copy.display()
            ));
        }
        None => (PathBuf::from("/"), path.clone()),
    };
    if entry.dirs.is_empty() {
        return Err(format!(
            "the journal does not record the directories {shown} was removed from (an older \
             journal, or a symlink on the way to the directory that was scanned), so it cannot \
             be put back where it was with certainty: restore it by hand from its copy {}",
            copy.display()
        ));
    }
    let name = inside
        .file_name()
        .ok_or_else(|| format!("{shown}: the path has no file name"))?
        .to_os_string();
    let mut names = Vec::new();
    for c in inside.parent().unwrap_or(Path::new("/")).components() {
        match c {
            Component::RootDir | Component::CurDir => {}
            Component::Normal(n) => names.push(n),
            _ => return Err(format!("{shown}: the journal names a path with `..`")),
        }
    }
    if !inside.is_absolute() || names.len() + 1 != entry.dirs.len() {
        return Err(format!(
            "{shown}: the journal's directories do not fit its path; nothing was restored"
        ));
    }
    let replaced = |here: &Path| {
        format!(
            "{} is not the directory {} was removed from (it was replaced since); nothing was \
             restored",
            here.display(),
            text::display_os(&name)
        )
    };
    let check = |fd: &OwnedFd, want: DirId, here: &Path| -> Result<(), String> {
        match anchor::dir_id(fd.as_fd()) {
            Ok(id) if id == want => Ok(()),
            Ok(_) => Err(replaced(here)),
            Err(e) => Err(format!("cannot look at {}: {e}", here.display())),
        }
    };
    let mut dir = anchor::sys::open_root(&top.join("."))
        .map_err(|e| format!("cannot open {}: {e}", top.display()))?;
    match (check(&dir, entry.dirs[0], &top), in_container) {
        (Err(_), Some(c)) => {
            return Err(format!(
                "{shown} was removed inside {}, whose root is another one now (it was started \
                 again since): restore it by hand, with {}",
                c.describe(),
                by_hand(c, &copy)
            ));
        }
        (r, _) => r?,
    }
    let mut here = top.clone();
    for (i, n) in names.iter().enumerate() {
        here.push(n);
        dir = match anchor::sys::open_child(dir.as_fd(), n) {
            Ok(fd) => fd,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Err(format!("{shown}: its directory {} is gone", here.display()));
            }
            Err(e) => {
                return Err(format!(
                    "{shown}: {} is not a directory that can be opened without following a \
                     symlink (restore never follows one): {e}",
                    here.display()
                ));
            }
        };
        check(&dir, entry.dirs[i + 1], &here)?;
    }
    Ok((dir, name))
}

/// The root directory (`/proc/<pid>/root`) of the proven container a lock was removed in, if
/// it runs now; else why not, and how to put the lock back by hand.
fn container_root(c: &InContainer, path: &Path, copy: &Path) -> Result<PathBuf, String> {
    let own = crate::probe::host::pid_ns_of("self");
    let inv = Inventory::read(own);
    if let Some(ns) = inv.proven_container(&c.runtime, &c.id) {
        return Ok(ns.root_path());
    }
    Err(format!(
        "{} was removed inside {}, which does not run now: restore it by hand, with {}",
        path.display(),
        c.describe(),
        by_hand(c, copy)
    ))
}

/// How to put a lock removed inside container `c` back by hand from its copy.
fn by_hand(c: &InContainer, copy: &Path) -> String {
    let inside = c.path_buf();
    match c.runtime.as_str() {
        "podman" | "docker" => format!(
            "`{} cp {} {}` (then give it the owner and mode the journal records)",
            c.runtime,
            text::shell_quote(&copy.to_string_lossy()),
            text::shell_quote(&format!(
                "{}:{}",
                c.name.as_deref().unwrap_or(&c.id),
                inside.to_string_lossy()
            )),
        ),
        _ => format!(
            "a copy of {} at {} inside it",
            copy.display(),
            inside.display()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selectors() {
        assert_eq!(Selector::parse(None), Selector::Last);
        assert_eq!(Selector::parse(Some(OsStr::new("3"))), Selector::Number(3));
        assert_eq!(
            Selector::parse(Some(OsStr::new("/tmp/x.pid"))),
            Selector::Path("/tmp/x.pid".into())
        );
        assert_eq!(
            Selector::parse(Some(OsStr::new("20260101T000000.000Z-1-0"))),
            Selector::Id("20260101T000000.000Z-1-0".into())
        );
    }
}
