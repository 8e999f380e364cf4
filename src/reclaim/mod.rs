//! Reclaim: removing a lock proven stale at the moment of removal (spec §5).
//!
//! The verdict a user saw may be seconds old, so [`reclaim`] judges the path again with a fresh
//! evidence snapshot and removes it only when, at that moment:
//! - it is still `stale` (`foreign` only with [`ReclaimOptions::force_foreign`]);
//! - the path still names the very file that was judged (device, inode, size, mtime);
//! - it is not a vim swap holding unsaved changes (unless [`ReclaimOptions::include_unsaved`]).
//!
//! Removal goes through a directory descriptor opened `O_NOFOLLOW|O_DIRECTORY` and `unlinkat`
//! on the last component (`AT_REMOVEDIR` for a mkdir-lock); a symlink lock is removed as a
//! link and never followed. Nothing is lost: before removal the file (or the link text, or a
//! note for a directory) is copied into the state directory and a line is appended to its
//! `journal.jsonl`. Locks of the `locksmith` dialect go through the engine's reclaim protocol,
//! which holds the lock's kernel lock while it removes it.

use std::io;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};

use crate::dialect::{EntryKind, Windows};
use crate::probe::Snapshot;
use crate::report::escape;
use crate::scan::{self, Finding, Identity, ScanError};
use crate::verdict::{Judgement, Verdict};

pub mod journal;
pub mod restore;
mod state;

pub use journal::{Entry, Event, Meta};
pub use restore::{Restored, Selector, restore, restore_last};
pub use state::{
    CopyLimits, JOURNAL, NotCopied, ROOT_FALLBACK, SAVED, Source, StageError, Staged, StateDir,
    sha256_hex,
};

/// How reclaim behaves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReclaimOptions {
    /// Where copies and the journal go.
    pub state_dir: PathBuf,
    /// Judge and check everything, remove nothing.
    pub dry_run: bool,
    /// Also remove vim swap files that hold unsaved changes.
    pub include_unsaved: bool,
    /// Also remove `foreign` locks (owner on another host or PID namespace). Locks of the
    /// `locksmith` dialect are excepted: the engine's protocol removes only stale ones.
    pub force_foreign: bool,
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
            force_foreign: false,
            copies: CopyLimits::default(),
            remove_uncopied: false,
        }
    }

    /// The default state directory: see [`state::default_state_dir`].
    pub fn default_state_dir() -> PathBuf {
        state::default_state_dir()
    }
}

impl Default for ReclaimOptions {
    fn default() -> Self {
        Self::new()
    }
}

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
    fn kept(path: &Path, judgement: Judgement, why: impl Into<String>) -> Self {
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

/// Reclaims one lock: judges it again with a fresh snapshot and the scanner's rules, and
/// removes it only if it is still stale and still the same file (see the module docs).
pub fn reclaim(finding: &Finding, config: &scan::Config, opts: &ReclaimOptions) -> Outcome {
    reclaim_rejudged(finding, opts, &config.windows, |path| {
        let snap = Snapshot::take();
        scan::judge_path(path, &snap, config)
    })
}

/// [`reclaim`] with the re-judging step given by the caller (`rejudge` must look at the
/// machine now, as [`scan::judge_path`] with a fresh [`Snapshot`] does).
pub fn reclaim_rejudged(
    finding: &Finding,
    opts: &ReclaimOptions,
    windows: &Windows,
    rejudge: impl FnOnce(&Path) -> Result<Option<Finding>, ScanError>,
) -> Outcome {
    let path = finding.path.as_path();
    let fresh = match rejudge(path) {
        Ok(Some(f)) => f,
        Ok(None) => {
            let why = "it is no longer a lock (removed or replaced since it was judged)";
            return Outcome::kept(path, Judgement::new(Verdict::Unknown, why), why);
        }
        Err(e) => {
            let why = format!("it could not be judged again: {}", e.error);
            return Outcome::kept(path, Judgement::new(Verdict::Unknown, why.clone()), why);
        }
    };
    if let Some(why) = refusal(finding, &fresh, opts) {
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
    let result = if fresh.dialect == "locksmith" {
        remove_through_engine(&fresh, opts, windows)
    } else {
        remove_file(&fresh, opts).map_err(|e| (e, None))
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

/// Why the freshly judged lock must not be removed, if it must not.
fn refusal(judged: &Finding, fresh: &Finding, opts: &ReclaimOptions) -> Option<String> {
    // What it is now is the more useful reason ("it is live now"), so it comes first.
    let j = &fresh.judgement;
    let allowed = match j.verdict {
        Verdict::Stale => true,
        Verdict::Foreign => opts.force_foreign,
        _ => false,
    };
    if !allowed {
        let first = j.evidence.first().map_or("", String::as_str);
        return Some(format!("it is {} now: {first}", j.verdict));
    }
    if fresh.identity != judged.identity {
        return Some(format!(
            "the file changed since it was judged ({})",
            identity_change(&judged.identity, &fresh.identity)
        ));
    }
    if fresh.kind == EntryKind::Other {
        return Some("it is not a regular file, a symlink or a directory".into());
    }
    if j.unsaved_changes == Some(true) && !opts.include_unsaved {
        let hint = crate::report::vim_recover_hint(fresh)
            .unwrap_or_else(|| format!("vim -r {}", escape::display_path(&fresh.path)));
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

/// Copies, removes and journals a lock of any dialect but ours. Returns where the copy is.
fn remove_file(f: &Finding, opts: &ReclaimOptions) -> Result<Removed, String> {
    let path = &f.path;
    let (dir, name) = sys::open_parent(path).map_err(|e| {
        format!(
            "cannot open the directory of {}: {e}",
            escape::display_path(path)
        )
    })?;
    let check = || -> Result<(), String> {
        let now = sys::identity_at(&dir, &name).map_err(|e| format!("cannot stat it: {e}"))?;
        if now != f.identity {
            return Err(format!(
                "the file changed since it was judged ({})",
                identity_change(&f.identity, &now)
            ));
        }
        Ok(())
    };
    check()?;
    let state = open_state(opts)?;
    let staged = match f.kind {
        EntryKind::File => {
            let fd = sys::open_file_at(&dir, &name, &f.identity)
                .map_err(|e| format!("cannot save a copy first: {e}"))?;
            state.stage(f, Source::File(fd.as_fd()))
        }
        EntryKind::Symlink | EntryKind::Dir => state.stage(f, Source::At(dir.as_fd(), &name)),
        EntryKind::Other => return Err("it is not a file, a symlink or a directory".into()),
    };
    let staged = uncopied_or(staged, f, opts, &state, || {
        sys::meta_at(&dir, &name).map_err(|e| format!("cannot stat it: {e}"))
    })?;
    // The copy took time: the file must still be the one that was judged and copied.
    let removed = check().and_then(|()| {
        sys::unlink_at(&dir, &name, f.kind == EntryKind::Dir)
            .map_err(|e| format!("cannot remove it: {e}"))
    });
    match removed {
        Ok(()) => Ok(committed(staged.commit(&f.judgement), &state)),
        Err(e) => {
            staged.discard();
            let mut line = Entry::new(state.next_id(), Event::ReclaimFailed, path);
            line.dialect = Some(f.dialect.to_string());
            line.error = Some(e.clone());
            let _ = state.append(&line);
            Err(e)
        }
    }
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
    meta: impl FnOnce() -> Result<Meta, String>,
) -> Result<Staged, String> {
    match staged {
        Ok(s) => Ok(s),
        Err(StageError::NotCopied(why)) if opts.remove_uncopied => {
            Ok(state.uncopied(f, meta()?, &why))
        }
        Err(StageError::NotCopied(why)) => Err(format!(
            "not removed, as no copy is kept: {} (--remove-uncopied removes it without one)",
            why.0
        )),
        Err(StageError::Io(e)) => Err(format!(
            "cannot save a copy in {}: {e}",
            escape::display_path(state.path())
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
                escape::display_path(state.path())
            )),
        ),
    }
}

/// Our own dialect goes through the engine's reclaim protocol: the engine takes the stale
/// lock's kernel lock, checks the identity again and calls back before it unlinks, so the copy
/// is made while no one else can take or reclaim that lock; it is journaled once the engine
/// has removed the lock. A refusal comes back with the engine's judgement of the moment.
fn remove_through_engine(
    f: &Finding,
    opts: &ReclaimOptions,
    windows: &Windows,
) -> Result<Removed, (String, Option<Box<Judgement>>)> {
    let state = open_state(opts).map_err(|e| (e, None))?;
    let meta = sys::meta_of_path(&f.path).ok();
    let mut staged = None;
    let result = crate::engine::reclaim_with_windows(
        &f.path,
        Some(f.identity),
        windows,
        |content, judgement| {
            let mut at_removal = f.clone();
            at_removal.judgement = judgement.clone();
            let s = state.stage(&at_removal, Source::Bytes(content, meta.clone()));
            let s = uncopied_or(s, &at_removal, opts, &state, || {
                meta.clone().ok_or_else(|| "cannot stat it".to_string())
            })
            .map_err(io::Error::other)?;
            staged = Some((s, judgement.clone()));
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
            let now = e.judgement().cloned().map(Box::new);
            Err((format!("not removed: {}", e.kind()), now))
        }
    }
}

/// The file operations, relative to a directory descriptor that was opened without following
/// a symlink in its last component.
mod sys {
    use std::ffi::OsString;
    use std::os::fd::OwnedFd;

    use rustix::fs::{AtFlags, FileType, Mode, OFlags};

    use super::*;

    /// Opens the parent directory of `path` with `O_DIRECTORY|O_NOFOLLOW` (open(2)) and
    /// returns it with the last component.
    pub fn open_parent(path: &Path) -> io::Result<(OwnedFd, OsString)> {
        let name = path
            .file_name()
            .ok_or_else(|| io::Error::other("the path has no file name"))?;
        let parent = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        let dir = rustix::fs::open(
            parent,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        Ok((dir, name.to_os_string()))
    }

    /// `fstatat(dir, name, AT_SYMLINK_NOFOLLOW)` (stat(2)) as an [`Identity`].
    pub fn identity_at(dir: &OwnedFd, name: &OsString) -> io::Result<Identity> {
        let st = rustix::fs::statat(dir, name.as_os_str(), AtFlags::SYMLINK_NOFOLLOW)?;
        Ok(identity_of(&st))
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

    /// Opens a regular file through `openat(O_NOFOLLOW|O_NONBLOCK)` (openat(2)), after
    /// checking that the opened file is the judged one.
    pub fn open_file_at(
        dir: &OwnedFd,
        name: &OsString,
        expected: &Identity,
    ) -> io::Result<OwnedFd> {
        let fd = rustix::fs::openat(
            dir,
            name.as_os_str(),
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
    pub fn meta_at(dir: &OwnedFd, name: &OsString) -> io::Result<Meta> {
        let st = rustix::fs::statat(dir, name.as_os_str(), AtFlags::SYMLINK_NOFOLLOW)?;
        Ok(Meta::of(&st))
    }

    /// The same for a path (the last component not followed).
    pub fn meta_of_path(path: &Path) -> io::Result<Meta> {
        let (dir, name) = open_parent(path)?;
        meta_at(&dir, &name)
    }

    /// `unlinkat(dir, name, 0 or AT_REMOVEDIR)` (unlinkat(2)): removes the entry itself, a
    /// symlink as a link.
    pub fn unlink_at(dir: &OwnedFd, name: &OsString, is_dir: bool) -> io::Result<()> {
        let flags = if is_dir {
            AtFlags::REMOVEDIR
        } else {
            AtFlags::empty()
        };
        rustix::fs::unlinkat(dir, name.as_os_str(), flags)?;
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
            dialect: "pidfile",
            kind: EntryKind::of(&meta),
            size: Some(meta.len()),
            modified_ms: Some(crate::probe::mtime_ms(&meta)),
            identity: Identity::of(&meta),
            fs: FsInfo::unknown(),
            judgement: Judgement::new(verdict, "test verdict"),
            content: Vec::new(),
            link_target: None,
        }
    }

    fn opts(dir: &Path) -> ReclaimOptions {
        ReclaimOptions {
            state_dir: dir.join("state"),
            dry_run: false,
            include_unsaved: false,
            force_foreign: false,
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
        let o = reclaim_rejudged(&f, &opts(t.path()), &Windows::default(), |p| {
            Ok(Some(found(p, Verdict::Stale)))
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
            let o = reclaim_rejudged(&f, &opts(t.path()), &Windows::default(), |p| {
                Ok(Some(found(p, now)))
            });
            assert_eq!((o.ok, o.action), (false, Action::Kept));
            assert_eq!(o.judgement.verdict, now);
            assert!(o.error.unwrap().contains(now.as_str()));
        }
        let o = reclaim_rejudged(&f, &opts(t.path()), &Windows::default(), |_| Ok(None));
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
        o.force_foreign = true;
        let out = reclaim_rejudged(&f, &o, &Windows::default(), |p| {
            Ok(Some(found(p, Verdict::Foreign)))
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
        let o = reclaim_rejudged(&f, &opts(t.path()), &Windows::default(), |p| {
            Ok(Some(found(p, Verdict::Stale)))
        });
        assert_eq!(o.action, Action::Kept);
        assert!(o.error.unwrap().contains("changed since it was judged"));
        assert_eq!(fs::read(&lock).unwrap(), b"2\n");
        // Rewritten in place (same inode, new size).
        let f = found(&lock, Verdict::Stale);
        fs::write(&lock, "12345\n").unwrap();
        let o = reclaim_rejudged(&f, &opts(t.path()), &Windows::default(), |p| {
            Ok(Some(found(p, Verdict::Stale)))
        });
        assert_eq!(o.action, Action::Kept);
        assert!(lock.exists());
    }

    #[test]
    fn dry_run_removes_nothing() {
        let t = tempfile::tempdir().unwrap();
        let lock = t.path().join("x.pid");
        fs::write(&lock, "1\n").unwrap();
        let mut o = opts(t.path());
        o.dry_run = true;
        let f = found(&lock, Verdict::Stale);
        let out = reclaim_rejudged(&f, &o, &Windows::default(), |p| {
            Ok(Some(found(p, Verdict::Stale)))
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
        let o = reclaim_rejudged(&f, &opts(t.path()), &Windows::default(), |p| {
            Ok(Some(found(p, Verdict::Stale)))
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
    fn a_lock_directory_is_removed_with_rmdir_only_when_empty() {
        let t = tempfile::tempdir().unwrap();
        let lock = t.path().join("job.lock");
        fs::create_dir(&lock).unwrap();
        let f = found(&lock, Verdict::Stale);
        let o = reclaim_rejudged(&f, &opts(t.path()), &Windows::default(), |p| {
            Ok(Some(found(p, Verdict::Stale)))
        });
        assert_eq!(o.action, Action::Removed, "{o:?}");
        assert!(!lock.exists());

        fs::create_dir(&lock).unwrap();
        fs::write(lock.join("inside"), "data").unwrap();
        let f = found(&lock, Verdict::Stale);
        let o = reclaim_rejudged(&f, &opts(t.path()), &Windows::default(), |p| {
            Ok(Some(found(p, Verdict::Stale)))
        });
        assert_eq!(o.action, Action::Kept);
        assert!(lock.join("inside").exists());
        let j = journal(t.path());
        assert_eq!(j.last().unwrap()["event"], "reclaim-failed");
        // The kept lock left no copy and no "reclaim" line: only the first removal did.
        let reclaims = j.iter().filter(|e| e["event"] == "reclaim").count();
        assert_eq!(reclaims, 1, "{j:?}");
        let copies = fs::read_dir(t.path().join("state").join(SAVED))
            .unwrap()
            .count();
        assert_eq!(copies, 1);
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
        let o = reclaim_rejudged(&f, &opts(t.path()), &Windows::default(), |p| {
            Ok(Some(found(p, Verdict::Stale)))
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
            f.dialect = "vim-swap";
            f.judgement.unsaved_changes = Some(true);
            f
        };
        let f = vim(&lock);
        let o = reclaim_rejudged(&f, &opts(t.path()), &Windows::default(), |p| {
            Ok(Some(vim(p)))
        });
        assert_eq!(o.action, Action::Kept);
        let why = o.error.unwrap();
        assert!(why.contains("vim -r "), "{why}");
        assert!(why.contains("notes.txt`"), "{why}");
        let mut all = opts(t.path());
        all.include_unsaved = true;
        let o = reclaim_rejudged(&f, &all, &Windows::default(), |p| Ok(Some(vim(p))));
        assert_eq!(o.action, Action::Removed);
        assert!(!lock.exists());
    }
}
