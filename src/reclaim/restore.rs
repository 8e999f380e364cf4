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

use super::journal::{Entry, Event, InContainer, Meta, Via};
use super::state::StateDir;
use crate::probe::containers::{Inventory, proc_root_path};
use crate::scan::anchor::{self, DirId};
use crate::text;

/// Which reclaims to undo.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selector {
    /// Every reclaim of the last run that reclaimed (the run of the journal's last reclaim
    /// line) not restored yet: what `locksmith restore` offers on a terminal.
    LastRun,
    /// The last batch of the journal (the batch of its last reclaim line, whatever run wrote
    /// it), its reclaims not restored yet: `locksmith restore --last-batch`.
    LastBatch,
    /// The UI's `u`: the last batch that the UI reclaimed (this session's, or an earlier UI
    /// session's in this state directory) with something left to put back, of locks below one
    /// of `roots`; the locks of that batch outside them are in [`Plan::outside`]. Never a
    /// batch of another kind of run (`--scan --reclaim`, `start`, a line that does not say).
    LastOfUi { roots: Vec<PathBuf> },
    /// Every reclaim of this run not restored yet: `locksmith restore --run ID`.
    Run(String),
    /// An entry id, as `locksmith journal --json` shows it, or a run id (every reclaim of
    /// that run not restored yet).
    Id(String),
    /// An entry's number in `locksmith journal` (1 = oldest line).
    Number(usize),
    /// The most recent reclaim of this path not restored yet. The path may be given as
    /// `locksmith journal` prints it (escapes read back, see [`text::path_from_display`]).
    Path(PathBuf),
}

impl Selector {
    /// `None` → [`Selector::LastRun`]; an argument with a `/` is a path, digits are a number,
    /// anything else an id ([`plan`] takes an id that names no entry and no run as a path
    /// relative to the current directory, as `locksmith restore daemon.pid` means).
    pub fn parse(arg: Option<&OsStr>) -> Selector {
        let Some(arg) = arg else {
            return Selector::LastRun;
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

/// What a selector names, to be shown before anything is put back.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Plan {
    /// The run the entries belong to, when the selector named a run or a batch.
    pub run: Option<String>,
    /// The batch, when the selector named one.
    pub batch: Option<u64>,
    /// What kind of run reclaimed them ([`super::Via::as_str`]), when the journal says.
    pub via: Option<String>,
    /// The reclaim entries to put back, newest first, each with its number in `locksmith
    /// journal` in [`Plan::numbers`].
    pub entries: Vec<Entry>,
    /// The journal numbers of `entries` (1 = the oldest line), in the same order.
    pub numbers: Vec<usize>,
    /// Reclaims of the same batch left out: their locks are outside the roots asked for
    /// ([`Selector::LastOfUi`]). Nothing puts them back but naming them.
    pub outside: Vec<Entry>,
}

impl Plan {
    /// When the reclaims were made: the earliest time of its entries (RFC 3339, as written).
    pub fn since(&self) -> Option<&str> {
        self.entries.iter().map(|e| e.time.as_str()).min()
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

/// The ids of the reclaim entries that removed nothing after all (cancelled by a
/// `reclaim-failed` line).
pub fn cancelled_ids(entries: &[Entry]) -> HashSet<&str> {
    entries
        .iter()
        .filter(|e| e.event == Event::ReclaimFailed)
        .filter_map(|e| e.cancels.as_deref())
        .collect()
}

/// The reclaims `selector` names in the journal of `state_dir` (see [`Selector`]); the error
/// says why there is nothing to put back.
pub fn plan(state_dir: &Path, selector: &Selector) -> Result<Plan, String> {
    let state = open(state_dir)?;
    let all = state
        .read_journal()
        .map_err(|e| format!("cannot read the journal: {e}"))?;
    select(&all, selector)
}

/// The reclaims `selector` names in `all` (the whole journal, oldest first, as [`entries`]
/// reads it): what [`plan`] does with a journal read already.
pub fn plan_in(all: &[Entry], selector: &Selector) -> Result<Plan, String> {
    select(all, selector)
}

/// Puts back each reclaim of `plan`, in its order, each exactly as it was (see the module
/// docs) and journaled; one result per entry. An entry restored since the plan was made is
/// not restored twice.
pub fn restore_plan(state_dir: &Path, plan: &Plan) -> Vec<Result<Restored, String>> {
    let done_now = open(state_dir).and_then(|state| {
        let all = state
            .read_journal()
            .map_err(|e| format!("cannot read the journal: {e}"))?;
        let done: HashSet<String> = restored_ids(&all).into_iter().map(String::from).collect();
        Ok((state, done))
    });
    let (state, done) = match done_now {
        Ok(s) => s,
        Err(e) => return plan.entries.iter().map(|_| Err(e.clone())).collect(),
    };
    plan.entries
        .iter()
        .map(|entry| {
            if done.contains(&entry.id) {
                return Err(format!(
                    "{} was restored already",
                    text::display_path(&entry.path_buf())
                ));
            }
            restore_entry(&state, entry)
        })
        .collect()
}

/// [`plan`], then [`restore_plan`].
pub fn restore(
    state_dir: &Path,
    selector: &Selector,
) -> Result<(Plan, Vec<Result<Restored, String>>), String> {
    let plan = plan(state_dir, selector)?;
    let results = restore_plan(state_dir, &plan);
    Ok((plan, results))
}

fn open(state_dir: &Path) -> Result<StateDir, String> {
    StateDir::existing(state_dir)
        .map_err(|e| e.to_string())?
        .ok_or_else(|| {
            format!(
                "nothing to restore: there is no state directory {}",
                state_dir.display()
            )
        })
}

/// The entries of `all` (the whole journal, oldest first) that `selector` names.
fn select(all: &[Entry], selector: &Selector) -> Result<Plan, String> {
    let cancelled = cancelled_ids(all);
    let mut done = restored_ids(all);
    done.extend(cancelled.iter().copied());
    let undoable = |e: &&Entry| e.event == Event::Reclaim && !done.contains(e.id.as_str());
    let number = |e: &Entry| {
        all.iter()
            .position(|x| std::ptr::eq(x, e))
            .map_or(0, |i| i + 1)
    };
    let planned = |run: Option<&str>, batch: Option<u64>, entries: Vec<&Entry>| Plan {
        run: run.map(String::from),
        batch,
        via: entries.first().and_then(|e| e.via.clone()),
        numbers: entries.iter().map(|e| number(e)).collect(),
        entries: entries.into_iter().cloned().collect(),
        outside: Vec::new(),
    };
    let of_run = |run: &str, what: &str| -> Result<Plan, String> {
        let entries: Vec<&Entry> = all
            .iter()
            .rev()
            .filter(|e| e.run == run)
            .filter(undoable)
            .collect();
        if entries.is_empty() {
            return Err(format!(
                "nothing to restore: every reclaim of {what} ({run}) is restored already, or \
                 removed nothing after all (`locksmith journal` lists the runs; `locksmith restore --run RUN` restores another)"
            ));
        }
        Ok(planned(Some(run), None, entries))
    };
    let one = |entry: &Entry| -> Result<Plan, String> {
        if entry.event != Event::Reclaim {
            return Err(format!(
                "journal entry #{} is a {} entry, not a reclaim",
                number(entry),
                entry.event.as_str()
            ));
        }
        if cancelled.contains(entry.id.as_str()) {
            return Err(format!(
                "{} (#{}) was not removed after all (a later reclaim-failed line says why): \
                 there is nothing to put back",
                text::display_path(&entry.path_buf()),
                number(entry)
            ));
        }
        if done.contains(entry.id.as_str()) {
            return Err(format!(
                "{} (#{}) was restored already",
                text::display_path(&entry.path_buf()),
                number(entry)
            ));
        }
        Ok(planned(None, None, vec![entry]))
    };
    match selector {
        Selector::LastRun => {
            let last = all
                .iter()
                .rev()
                .find(|e| e.event == Event::Reclaim)
                .ok_or("nothing to restore: the journal records no reclaim")?;
            of_run(&last.run, "the last run")
        }
        Selector::LastBatch => {
            let last = all
                .iter()
                .rev()
                .find(|e| e.event == Event::Reclaim)
                .ok_or("nothing to restore: the journal records no reclaim")?;
            let entries: Vec<&Entry> = all
                .iter()
                .rev()
                .filter(|e| e.run == last.run && e.batch == last.batch)
                .filter(undoable)
                .collect();
            if entries.is_empty() {
                return Err(format!(
                    "nothing to restore: every reclaim of the last batch (run {}) is restored \
                     already, or removed nothing after all (`locksmith journal` lists the \
                     others)",
                    last.run
                ));
            }
            Ok(planned(Some(&last.run), last.batch, entries))
        }
        Selector::LastOfUi { roots } => {
            let below = |e: &Entry| {
                let p = e.path_buf();
                roots.iter().any(|r| p.starts_with(r))
            };
            let of_ui = |e: &&Entry| e.via.as_deref() == Some(Via::Ui.as_str());
            let Some(last) = all.iter().rev().filter(of_ui).find(undoable) else {
                let any = all.iter().any(|e| e.event == Event::Reclaim && of_ui(&e));
                return Err(if any {
                    "nothing to undo: every reclaim made in the UI is undone already (the \
                     journal view lists the others)"
                        .into()
                } else {
                    "nothing to undo: nothing was reclaimed in the UI (reclaims of other runs, \
                     such as --scan --reclaim, are in the journal view)"
                        .into()
                });
            };
            let (inside, outside): (Vec<&Entry>, Vec<&Entry>) = all
                .iter()
                .rev()
                .filter(|e| e.run == last.run && e.batch == last.batch)
                .filter(undoable)
                .partition(|e| below(e));
            if inside.is_empty() {
                return Err(format!(
                    "nothing to undo here: the last reclaim made in the UI ({} lock{}, such as \
                     {}) is outside the roots on screen; the journal view puts it back",
                    outside.len(),
                    if outside.len() == 1 { "" } else { "s" },
                    text::display_path(&outside[0].path_buf())
                ));
            }
            let mut plan = planned(Some(&last.run), last.batch, inside);
            plan.outside = outside.into_iter().cloned().collect();
            Ok(plan)
        }
        Selector::Run(run) => {
            if !all.iter().any(|e| &e.run == run) {
                return Err(format!(
                    "no run {} in the journal (`locksmith journal` lists the runs)",
                    text::escape(run)
                ));
            }
            of_run(run, "run")
        }
        Selector::Id(id) => {
            if let Some(entry) = all.iter().find(|e| &e.id == id) {
                one(entry)
            } else if all.iter().any(|e| &e.run == id) {
                of_run(id, "run")
            } else {
                select(all, &Selector::Path(PathBuf::from(id)))
            }
        }
        Selector::Number(n) => {
            let entry = n
                .checked_sub(1)
                .and_then(|i| all.get(i))
                .ok_or_else(|| format!("no journal entry number {n} (there are {})", all.len()))?;
            one(entry)
        }
        Selector::Path(p) => {
            // As given (what a shell completes), else as `locksmith journal` prints paths
            // (its escapes read back): a path that is both names the lock it is as given.
            let last_of = |p: &Path| {
                let want = text::json_path(&crate::scan::config::absolute(p));
                all.iter().rev().filter(|e| e.path == want).find(undoable)
            };
            let raw = last_of(p);
            let shown = p
                .to_str()
                .and_then(text::path_from_display)
                .filter(|d| d != p)
                .and_then(|d| last_of(&d));
            match (raw, shown) {
                (Some(e), _) | (None, Some(e)) => one(e),
                (None, None) => Err(format!(
                    "no reclaim of {} left to restore in the journal",
                    text::display_os(p.as_os_str())
                )),
            }
        }
    }
}

/// Puts back one reclaim and journals it.
fn restore_entry(state: &StateDir, entry: &Entry) -> Result<Restored, String> {
    let restored = put_back(state, entry)?;
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

/// The lock's file name, as the journal records its path.
fn inside_name(entry: &Entry) -> std::ffi::OsString {
    entry
        .path_buf()
        .file_name()
        .map_or_else(|| "lock".into(), |n| n.to_os_string())
}

/// The copy's content, checked against the journal's SHA-256: the whole file, or `size`
/// bytes at `saved_offset` of the file its group's copies share.
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
    let bytes = match entry.saved_offset {
        None => super::state::read_all(&fd, super::state::MAX_APPARENT_BYTES)
            .map_err(|e| format!("cannot read its copy: {e}"))?,
        Some(at) => {
            let size = entry
                .size
                .filter(|&n| n <= super::state::PACKED_MAX)
                .ok_or("the journal gives no size (or a bad one) for its copy in a shared file")?;
            let mut bytes = vec![0; size as usize];
            std::os::unix::fs::FileExt::read_exact_at(&std::fs::File::from(fd), &mut bytes, at)
                .map_err(|e| match e.kind() {
                    std::io::ErrorKind::UnexpectedEof => {
                        format!("its copy in {} is cut short", saved.display())
                    }
                    _ => format!("cannot read its copy: {e}"),
                })?;
            bytes
        }
    };
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
pub(super) fn open_recorded_parent(entry: &Entry) -> Result<(OwnedFd, std::ffi::OsString), String> {
    let path = entry.path_buf();
    let shown = path.display();
    let copy = entry
        .saved_to
        .as_deref()
        .and_then(text::path_from_json)
        .unwrap_or_default();
    // A copy in its group's shared file is taken out of it first.
    let (take_out, copy) = match (entry.saved_offset, entry.size) {
        (Some(at), Some(size)) => {
            let alone = PathBuf::from(format!("{}.copy", inside_name(entry).to_string_lossy()));
            let dd = format!(
                "`dd if={} of={} iflag=skip_bytes,count_bytes skip={at} count={size}`",
                text::shell_quote(&copy.to_string_lossy()),
                text::shell_quote(&alone.to_string_lossy())
            );
            (Some(dd), alone)
        }
        _ => (None, copy),
    };
    let first = take_out
        .as_deref()
        .map(|dd| format!("{dd}, then "))
        .unwrap_or_default();
    let in_container = entry.container.as_ref();
    let (top, inside) = match in_container {
        Some(c) => (container_root(c, &path, &copy, &first)?, c.path_buf()),
        None if proc_root_path(&path).is_some() => {
            return Err(format!(
                "{shown} was removed inside a PID namespace that is not a container proven to be \
                 a runtime's, which nothing can find again: restore it by hand from its copy \
                 ({first}{})",
                copy.display()
            ));
        }
        None => (PathBuf::from("/"), path.clone()),
    };
    if entry.dirs.is_empty() {
        return Err(format!(
            "the journal does not record the directories {shown} was removed from (an older \
             journal, or a symlink on the way to the directory that was scanned), so it cannot \
             be put back where it was with certainty: restore it by hand from its copy \
             ({first}{})",
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
fn container_root(
    c: &InContainer,
    path: &Path,
    copy: &Path,
    first: &str,
) -> Result<PathBuf, String> {
    let own = crate::probe::host::pid_ns_of("self");
    let inv = Inventory::read(own);
    if let Some(root) = inv.container_root(&c.runtime, &c.id) {
        return Ok(root);
    }
    Err(format!(
        "{} was removed inside {}, which does not run now: restore it by hand, with {first}{}",
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

    fn reclaim(id: &str, run: &str, batch: Option<u64>, path: &str) -> Entry {
        Entry {
            id: id.into(),
            run: run.into(),
            batch,
            event: Event::Reclaim,
            path: path.into(),
            ..Entry::default()
        }
    }

    fn restore_of(id: &str, run: &str) -> Entry {
        Entry {
            id: format!("r-{id}"),
            run: run.into(),
            event: Event::Restore,
            restores: Some(id.into()),
            ..Entry::default()
        }
    }

    fn ids(p: &Plan) -> Vec<&str> {
        p.entries.iter().map(|e| e.id.as_str()).collect()
    }

    /// Two runs reclaimed into one journal, their lines interleaved, with lines of an older
    /// version before them.
    fn journal() -> Vec<Entry> {
        let mut old = crate::reclaim::journal::parse(
            br#"{"version":1,"time":"2025-01-01T00:00:00Z","event":"reclaim","path":"/old/a.pid"}"#,
        );
        old.extend([
            reclaim("a1", "ui", Some(1), "/srv/a.pid"),
            reclaim("b1", "cli", Some(1), "/tmp/b.pid"),
            reclaim("a2", "ui", Some(2), "/srv/c.pid"),
            reclaim("a3", "ui", Some(2), "/srv/d.pid"),
            reclaim("b2", "cli", Some(1), "/tmp/e.pid"),
        ]);
        old
    }

    #[test]
    fn the_last_run_is_every_reclaim_of_the_run_that_reclaimed_last() {
        let mut all = journal();
        let p = select(&all, &Selector::LastRun).unwrap();
        assert_eq!((p.run.as_deref(), ids(&p)), (Some("cli"), vec!["b2", "b1"]));
        // Its reclaims restored: nothing, and the message names the run.
        all.push(restore_of("b1", "x"));
        all.push(restore_of("b2", "x"));
        let e = select(&all, &Selector::LastRun).unwrap_err();
        assert!(e.contains("the last run (cli)"), "{e}");
        // Another run by its id; an old line is a run of its own.
        let p = select(&all, &Selector::Id("ui".into())).unwrap();
        assert_eq!(ids(&p), ["a3", "a2", "a1"]);
        let p = select(&all, &Selector::Id("line-1".into())).unwrap();
        assert_eq!((p.run.as_deref(), ids(&p)), (None, vec!["line-1"]));
    }

    #[test]
    fn the_ui_undoes_the_last_batch_it_made_below_its_roots_across_its_sessions() {
        let ui = |mut e: Entry| {
            e.via = Some("ui".into());
            e
        };
        let mut all = journal();
        for e in all.iter_mut().filter(|e| e.run == "ui") {
            *e = ui(e.clone());
        }
        let mut cli = reclaim("b3", "cli", Some(2), "/srv/z.pid");
        cli.via = Some("scan".into());
        all.push(cli);
        let last_of_ui = |roots: &[&str]| Selector::LastOfUi {
            roots: roots.iter().map(PathBuf::from).collect(),
        };
        // The UI's last batch, never a --scan --reclaim's, however recent.
        let p = select(&all, &last_of_ui(&["/srv"])).unwrap();
        assert_eq!((p.batch, ids(&p)), (Some(2), vec!["a3", "a2"]));
        assert_eq!(p.via.as_deref(), Some("ui"));
        assert_eq!(p.numbers, [5, 4], "their lines in the journal");
        all.push(restore_of("a3", "ui"));
        all.push(restore_of("a2", "ui"));
        // A later UI session (another run) sees the same history.
        let p = select(&all, &last_of_ui(&["/srv"])).unwrap();
        assert_eq!((p.batch, ids(&p)), (Some(1), vec!["a1"]));
        // A batch of the UI partly outside the roots on screen: those are left out, and said.
        let mut later = ui(reclaim("c1", "ui-2", Some(1), "/srv/in.pid"));
        let out = ui(reclaim("c2", "ui-2", Some(1), "/var/out.pid"));
        later.time = "2026-01-01T00:00:00Z".into();
        all.extend([later, out]);
        let p = select(&all, &last_of_ui(&["/srv"])).unwrap();
        assert_eq!(ids(&p), ["c1"]);
        assert_eq!(
            p.outside.iter().map(|e| e.id.as_str()).collect::<Vec<_>>(),
            ["c2"]
        );
        // Nothing of it below the roots: said, and no older batch is offered instead.
        let e = select(&all, &last_of_ui(&["/elsewhere"])).unwrap_err();
        assert!(e.contains("outside the roots on screen"), "{e}");
        all.push(restore_of("c1", "ui-2"));
        all.push(restore_of("c2", "ui-2"));
        all.push(restore_of("a1", "ui"));
        let e = select(&all, &last_of_ui(&["/srv"])).unwrap_err();
        assert!(e.contains("undone already"), "{e}");
        // Lines that do not say they are the UI's are never its.
        let e = select(&journal(), &last_of_ui(&["/"])).unwrap_err();
        assert!(e.contains("nothing was reclaimed in the UI"), "{e}");
    }

    #[test]
    fn the_last_batch_and_a_run_by_name() {
        let mut all = journal();
        let p = select(&all, &Selector::LastBatch).unwrap();
        assert_eq!((p.run.as_deref(), ids(&p)), (Some("cli"), vec!["b2", "b1"]));
        all.push(reclaim("a4", "ui", Some(3), "/srv/f.pid"));
        let p = select(&all, &Selector::LastBatch).unwrap();
        assert_eq!((p.batch, ids(&p)), (Some(3), vec!["a4"]));
        all.push(restore_of("a4", "x"));
        // Restored: said, and no older batch instead.
        let e = select(&all, &Selector::LastBatch).unwrap_err();
        assert!(e.contains("the last batch"), "{e}");
        let p = select(&all, &Selector::Run("cli".into())).unwrap();
        assert_eq!(ids(&p), ["b2", "b1"]);
        let e = select(&all, &Selector::Run("nope".into())).unwrap_err();
        assert!(e.contains("no run nope"), "{e}");
    }

    #[test]
    fn a_path_is_taken_as_given_or_as_the_journal_prints_it() {
        use std::os::unix::ffi::OsStrExt;
        let raw = Path::new(OsStr::from_bytes(b"/r/a\xff.pid"));
        let literal = Path::new("/r/a\\xff.pid");
        let mut all = vec![
            reclaim("raw", "x", Some(1), &text::json_path(raw)),
            reclaim("lit", "x", Some(1), &text::json_path(literal)),
            reclaim(
                "rlo",
                "x",
                Some(1),
                &text::json_path(Path::new("/r/e\u{202e}d.pid")),
            ),
        ];
        let by = |s: &str| select(&all, &Selector::Path(PathBuf::from(s)));
        // Printed by `journal`, each names its own.
        let shown = |p: &Path| text::display_path(p);
        assert_eq!(ids(&by(&shown(literal)).unwrap()), ["lit"]);
        assert_eq!(ids(&by("/r/e\\u{202e}d.pid").unwrap()), ["rlo"]);
        // `/r/a\xff.pid` is the literal name as given, the raw byte as printed: as given.
        assert_eq!(ids(&by(&shown(raw)).unwrap()), ["lit"]);
        // Once that one is restored, the printed form names the other.
        all.push(restore_of("lit", "x"));
        let by = |s: &str| select(&all, &Selector::Path(PathBuf::from(s)));
        assert_eq!(ids(&by(&shown(raw)).unwrap()), ["raw"]);
        assert!(by("/r/none.pid").unwrap_err().contains("no reclaim of"));
    }

    #[test]
    fn selectors() {
        assert_eq!(Selector::parse(None), Selector::LastRun);
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
