//! Reaching a path that a lock names or leads to (a sibling, the document beside it, a data
//! directory its record names, the file a vim swap file's name spells out, wherever a symlink
//! there leads) without ever waiting on a mount that does not answer.
//!
//! A lock's name and content are written by whoever could write its directory: they may name
//! any path, through any symlink, on any mount. [`reach`] resolves such a path itself, one
//! component at a time, through local mounts only (each mount point it passes is looked up in
//! the mount table before it is entered; each symlink read and followed here, at most 40),
//! and answers where it ended:
//! - [`Reached::Here`]: on local mounts all the way, opened `O_PATH`, with its canonical path:
//!   what is asked of it is asked of that descriptor (no second resolution a symlink swapped
//!   in since could lead elsewhere);
//! - [`Reached::Missing`]: a component does not exist, or is no directory;
//! - [`Reached::Away`]: the way enters a mount that may hang: what is asked is asked there
//!   through a bounded task first (`fs::call`, keyed by that mount, so that a mount
//!   that did not answer once fails every later call at once), and only then, answered, here.
//!
//! A path of the first kind with no symlink and no `..` costs one `openat2`
//! (`RESOLVE_NO_SYMLINKS`). Paths inside a container (`/proc/PID/root/...`) are resolved
//! inside its root, by the mounts its process sees.
//!
//! A call that was not answered is remembered by the thread that asked ([`Watch`]): the scan
//! judges no lock `stale` when something its dialect asked about was not answered.
//!
//! This module is the door to mounts that may hang for the rest of locksmith: besides the
//! paths above, it makes the calls of a caller that already knows the mount (the walker's,
//! a finding's directory asked again, a container's place): [`open_dir_at`], [`read_dir_at`],
//! [`lstat_at`], [`touch_at`], [`touch`], [`touch_path`], [`probe_path`], and tells which
//! mount a path is on when it may hang ([`hanging_mount`]) or has stopped answering
//! ([`not_answering`]). No code outside `probe` makes a bounded call itself.

use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use std::ffi::{OsStr, OsString};
use std::fs::Metadata;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use super::fs::{Answer, Mount, MountTable, NotAnswering, Op, RECENT_MOUNTS};

/// Where a path led.
#[derive(Debug)]
pub enum Reached {
    /// On local mounts all the way: the file, opened `O_PATH` (the final symlink itself when
    /// it was not to be followed), and its canonical path.
    Here(OwnedFd, PathBuf),
    /// A component does not exist, or is no directory.
    Missing,
    /// The way enters `mount`, which may hang: `path` (canonical up to that mount, the rest as
    /// named) is to be asked there through bounded calls.
    Away(Arc<Mount>, PathBuf),
}

/// How many symlinks one resolution follows, as the kernel's own limit.
#[cfg(target_os = "linux")]
const MAX_LINKS: usize = 40;

/// Resolves `path` (absolute; a relative one is taken from the current directory) without
/// waiting on a mount that may hang: see the module docs. `follow` follows a final symlink.
pub fn reach(path: &Path, follow: bool) -> std::io::Result<Reached> {
    let path = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir()?.join(path)
    };
    #[cfg(target_os = "linux")]
    {
        let (base, table) = view(&path)?;
        let rel = path.strip_prefix(&base.path).unwrap_or(Path::new(""));
        if let Some(r) = plainly(&base, &table, rel, follow) {
            return Ok(r);
        }
        resolve(&base, &table, rel, follow)
    }
    // Elsewhere every path is asked as on a mount that may hang (which is asked in place there:
    // see `fs::call`).
    #[cfg(not(target_os = "linux"))]
    {
        let _ = follow;
        Ok(Reached::Away(
            Arc::new(Mount::unknown(Path::new("/"), "unknown")),
            path,
        ))
    }
}

/// The root a path is resolved in: `/`, or a container's root (`/proc/PID/root`), opened.
#[cfg(target_os = "linux")]
struct Base {
    path: PathBuf,
    /// `None` for `/`, opened only when a path is resolved a component at a time.
    fd: Option<OwnedFd>,
}

/// The base of `path` and the mounts seen there.
#[cfg(target_os = "linux")]
fn view(path: &Path) -> std::io::Result<(Base, Arc<MountTable>)> {
    use rustix::fs::{Mode, OFlags};
    let open = |p: &Path| -> std::io::Result<OwnedFd> {
        Ok(rustix::fs::open(
            p,
            OFlags::PATH | OFlags::CLOEXEC,
            Mode::empty(),
        )?)
    };
    if let Some(pid) = container_pid(path) {
        let root = Path::new("/proc").join(pid.to_string()).join("root");
        // The magic link is followed by the kernel to the process's root directory (asking no
        // file system): `/proc` is local.
        let fd = open(&root)?;
        let table = seen_by(pid, &root);
        return Ok((
            Base {
                path: root,
                fd: Some(fd),
            },
            table,
        ));
    }
    Ok((
        Base {
            path: PathBuf::from("/"),
            fd: None,
        },
        MountTable::recent(),
    ))
}

/// The PID of `/proc/PID/root/...` in `path`.
fn container_pid(path: &Path) -> Option<i32> {
    super::fs::proc_root_path(path).map(|(pid, _)| pid)
}

/// The mounts process `pid` sees, seen from here through `root` (its `/proc/PID/root`): read
/// from its `mountinfo` at most [`RECENT_MOUNTS`] ago (as our own table is). Empty when it cannot be read: then no mount
/// point is known there, and every way in is taken as possibly hanging (see [`unknown_way`]).
#[cfg(target_os = "linux")]
fn seen_by(pid: i32, root: &Path) -> Arc<MountTable> {
    type Recent = HashMap<i32, (Instant, Arc<MountTable>)>;
    static SEEN: Mutex<Option<Recent>> = Mutex::new(None);
    let mut seen = SEEN.lock().unwrap_or_else(|e| e.into_inner());
    let seen = seen.get_or_insert_with(HashMap::new);
    if let Some((at, t)) = seen.get(&pid)
        && at.elapsed() < RECENT_MOUNTS
    {
        return t.clone();
    }
    let mut table = MountTable::default();
    if let Ok(text) = locksmith_sys::host::read_proc(format!("/proc/{pid}/mountinfo")) {
        table.add_seen_through(root, &super::fs::parse_mountinfo(&text));
    }
    let table = Arc::new(table);
    seen.retain(|_, (at, _)| at.elapsed() < RECENT_MOUNTS);
    seen.insert(pid, (Instant::now(), table.clone()));
    table
}

/// The mount at `point` (exactly), when entering it may wait ([`Mount::may_wait`]).
#[cfg(target_os = "linux")]
fn hangs_at<'t>(table: &'t MountTable, point: &Path) -> Option<&'t Arc<Mount>> {
    table.at(point).filter(|m| m.may_wait())
}

/// A way that cannot be told: a container's root whose mounts could not be read.
#[cfg(target_os = "linux")]
fn unknown_way(base: &Base, table: &MountTable, path: &Path) -> Option<Reached> {
    table.at(&base.path).is_none().then(|| {
        Reached::Away(
            Arc::new(Mount::unknown(&base.path, "unknown")),
            path.to_path_buf(),
        )
    })
}

/// The one-call answer for a path with no symlink and no `..` whose every mount is local:
/// `openat2` with `RESOLVE_NO_SYMLINKS` (the final symlink opened itself, when not
/// followed). `None` when it cannot say (a symlink on the way, a mount that may hang).
#[cfg(target_os = "linux")]
fn plainly(base: &Base, table: &MountTable, rel: &Path, follow: bool) -> Option<Reached> {
    let full = base.path.join(rel);
    if let Some(r) = unknown_way(base, table, &full) {
        return Some(r);
    }
    if rel
        .components()
        .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir))
    {
        return None;
    }
    if !table.local_way(&base.path, &full) {
        return None;
    }
    {
        use rustix::fs::{Mode, OFlags, ResolveFlags};
        let nofollow = if follow {
            OFlags::empty()
        } else {
            OFlags::NOFOLLOW
        };
        // From the base's descriptor, or (for `/`) the absolute path itself.
        let (from, rel) = match &base.fd {
            Some(fd) if rel.as_os_str().is_empty() => (fd.as_fd(), Path::new(".")),
            Some(fd) => (fd.as_fd(), rel),
            None => (rustix::fs::CWD, full.as_path()),
        };
        match rustix::fs::openat2(
            from,
            rel,
            OFlags::PATH | OFlags::CLOEXEC | nofollow,
            Mode::empty(),
            ResolveFlags::NO_SYMLINKS,
        ) {
            Ok(fd) => Some(Reached::Here(fd, full.components().collect())),
            Err(rustix::io::Errno::NOENT | rustix::io::Errno::NOTDIR) => Some(Reached::Missing),
            Err(_) => None,
        }
    }
}

/// Resolves `rel` from `base` one component at a time (see the module docs).
#[cfg(target_os = "linux")]
fn resolve(base: &Base, table: &MountTable, rel: &Path, follow: bool) -> std::io::Result<Reached> {
    use rustix::fs::{FileType, Mode, OFlags};
    // A base on a mount that may hang (a root file system on NFS, a container's `--rootfs` on
    // one): every way from it starts there.
    if let Some(m) = hangs_at(table, &base.path) {
        return Ok(Reached::Away(m.clone(), base.path.join(rel)));
    }
    let dup =
        |fd: &OwnedFd| -> std::io::Result<OwnedFd> { Ok(rustix::io::fcntl_dupfd_cloexec(fd, 0)?) };
    // The directories resolved so far, from the base down.
    let top = match &base.fd {
        Some(fd) => dup(fd)?,
        None => rustix::fs::open("/", OFlags::PATH | OFlags::CLOEXEC, Mode::empty())?,
    };
    let mut dirs: Vec<(OwnedFd, PathBuf)> = vec![(top, base.path.clone())];
    let mut todo: VecDeque<OsString> = parts(rel).collect();
    let mut links = 0;
    while let Some(name) = todo.pop_front() {
        if name == ".." {
            if dirs.len() > 1 {
                dirs.pop();
            }
            continue;
        }
        let (dir, dir_path) = dirs.last().expect("the base is never popped");
        let here = dir_path.join(&name);
        if let Some(m) = hangs_at(table, &here) {
            let rest: PathBuf = todo.iter().collect();
            return Ok(Reached::Away(m.clone(), here.join(rest)));
        }
        let last = todo.is_empty();
        let fd = match rustix::fs::openat(
            dir,
            name.as_os_str(),
            OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        ) {
            Ok(fd) => fd,
            Err(rustix::io::Errno::NOENT | rustix::io::Errno::NOTDIR) => {
                return Ok(Reached::Missing);
            }
            Err(e) => return Err(e.into()),
        };
        let kind = FileType::from_raw_mode(rustix::fs::fstat(&fd)?.st_mode);
        if kind == FileType::Symlink && (!last || follow) {
            links += 1;
            if links > MAX_LINKS {
                return Err(rustix::io::Errno::LOOP.into());
            }
            let target = PathBuf::from(<OsString as std::os::unix::ffi::OsStringExt>::from_vec(
                rustix::fs::readlinkat(&fd, "", Vec::new())?.into_bytes(),
            ));
            if target.is_absolute() {
                dirs.truncate(1);
            }
            for part in parts(&target).collect::<Vec<_>>().into_iter().rev() {
                todo.push_front(part);
            }
            continue;
        }
        if last {
            return Ok(Reached::Here(fd, here));
        }
        if kind != FileType::Directory {
            return Ok(Reached::Missing);
        }
        dirs.push((fd, here));
    }
    let (fd, path) = dirs.pop().expect("the base is never popped");
    Ok(Reached::Here(fd, path))
}

/// The names and `..`s of a path, in order (`/` and `.` dropped).
#[cfg(target_os = "linux")]
fn parts(p: &Path) -> impl Iterator<Item = OsString> + '_ {
    p.components().filter_map(|c| match c {
        Component::Normal(n) => Some(n.to_os_string()),
        Component::ParentDir => Some("..".into()),
        _ => None,
    })
}

/// `lstat` of `path` (a final symlink is not followed), wherever it leads ([`reach`]).
pub fn lstat(path: &Path) -> std::io::Result<Metadata> {
    status(path, false)
}

/// `stat` of `path` (symlinks followed), wherever it leads ([`reach`]).
pub fn stat(path: &Path) -> std::io::Result<Metadata> {
    status(path, true)
}

fn status(path: &Path, follow: bool) -> std::io::Result<Metadata> {
    match reach(path, follow)? {
        Reached::Here(fd, _) => std::fs::File::from(fd).metadata(),
        Reached::Missing => Err(std::io::ErrorKind::NotFound.into()),
        Reached::Away(m, p) if follow => {
            ask(&m, Op::Probe { path: p.clone() })?.ok()?;
            std::fs::metadata(&p)
        }
        Reached::Away(m, p) => {
            ask(&m, Op::TouchPath { path: p.clone() })?.ok()?;
            std::fs::symlink_metadata(&p)
        }
    }
}

/// The text of the symlink `path` (never followed), wherever its directory is ([`reach`]).
pub fn read_link(path: &Path) -> std::io::Result<PathBuf> {
    match reach(path, false)? {
        Reached::Here(fd, _) => {
            let text = rustix::fs::readlinkat(&fd, "", Vec::new()).map_err(|e| match e {
                // What readlink(2) says of a file that is no symlink.
                rustix::io::Errno::NOENT => rustix::io::Errno::INVAL,
                e => e,
            })?;
            Ok(PathBuf::from(
                <OsString as std::os::unix::ffi::OsStringExt>::from_vec(text.into_bytes()),
            ))
        }
        Reached::Missing => Err(std::io::ErrorKind::NotFound.into()),
        Reached::Away(m, p) => {
            ask(&m, Op::TouchPath { path: p.clone() })?.ok()?;
            std::fs::read_link(&p)
        }
    }
}

/// The canonical form of `path`, when it exists ([`reach`]).
pub fn canonical(path: &Path) -> Option<PathBuf> {
    probe(path).ok()??.real
}

/// What [`Op::Probe`] answers of `path` (its `lstat` mode, and the mode, device, inode and
/// real path of what it leads to: none for a symlink that leads nowhere), reached without
/// waiting on a mount that does not answer ([`reach`]): `Ok(None)` when it does not exist or
/// cannot be resolved, `Err` when the mount it leads onto did not answer.
pub fn probe(path: &Path) -> Result<Option<Answer>, NotAnswering> {
    // `st_mode` and `st_dev` are of other widths on some systems.
    #[allow(clippy::unnecessary_cast)]
    let stat = |fd: &OwnedFd| {
        rustix::fs::fstat(fd).map_or((0, 0, 0), |st| {
            (st.st_mode as u32, st.st_dev as u64, st.st_ino as u64)
        })
    };
    let away = |m: &Mount, p: PathBuf| {
        let mut a = ask(m, Op::Probe { path: p.clone() })?.ok().ok();
        if let Some(a) = a.as_mut() {
            a.real = a.real.take().map(|real| in_its_root(&p, real));
        }
        Ok(a)
    };
    let (fd, real) = match reach(path, false) {
        Ok(Reached::Here(fd, real)) => (fd, real),
        Ok(Reached::Away(m, p)) => return away(&m, p),
        Ok(Reached::Missing) | Err(_) => return Ok(None),
    };
    let (mode, dev, ino) = stat(&fd);
    let mut a = Answer {
        mode,
        ..Answer::default()
    };
    if rustix::fs::FileType::from_raw_mode(mode) != rustix::fs::FileType::Symlink {
        (a.target_mode, a.dev, a.ino, a.real) = (mode, dev, ino, Some(real));
        return Ok(Some(a));
    }
    match reach(path, true) {
        Ok(Reached::Here(target, real)) => {
            (a.target_mode, a.dev, a.ino) = stat(&target);
            a.real = Some(real);
        }
        Ok(Reached::Away(m, p)) => {
            if let Some(b) = away(&m, p)? {
                (a.target_mode, a.dev, a.ino, a.real) = (b.target_mode, b.dev, b.ino, b.real);
            }
        }
        // A symlink that leads nowhere: the link itself, with no target.
        Ok(Reached::Missing) | Err(_) => {}
    }
    Ok(Some(a))
}

/// The real path of what `path` names, for a `path` below a process's root (`/proc/PID/root`):
/// the descriptor's link text is the path from our root where that root is within ours (a
/// chroot), and the path from that root where it is not (a container's, after `pivot_root`),
/// so it is taken below `/proc/PID/root` as the path asked was. Any other path's is kept.
fn in_its_root(path: &Path, real: PathBuf) -> PathBuf {
    let Some(pid) = container_pid(path) else {
        return real;
    };
    let root = Path::new("/proc").join(pid.to_string()).join("root");
    let Ok(seen) = std::fs::read_link(&root) else {
        return real;
    };
    match real.strip_prefix(&seen) {
        Ok(rest) if rest.as_os_str().is_empty() => root,
        Ok(rest) => root.join(rest),
        Err(_) => real,
    }
}

/// At most `max` bytes of the regular file `path` (not followed if a symlink), read without
/// blocking (a FIFO or a device is never opened for reading), wherever its directory is
/// ([`reach`]). `None` when it is not a readable regular file.
pub fn read_small(path: &Path, max: usize) -> Option<Vec<u8>> {
    use std::io::Read;
    let (f, _) = open_file(path).ok()?;
    let mut out = Vec::new();
    f.take(max as u64).read_to_end(&mut out).ok()?;
    Some(out)
}

/// The regular file `path` (not followed if a symlink) opened for reading without blocking
/// and, where we may, without touching its access time, wherever its directory is
/// ([`reach`]), with its status: `InvalidInput` when it is no regular file (a FIFO or a device
/// is never opened for reading).
pub fn open_file(path: &Path) -> std::io::Result<(std::fs::File, Metadata)> {
    use rustix::fs::OFlags;
    use std::os::unix::fs::MetadataExt;
    let flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC;
    let open = |p: &Path, flags| -> std::io::Result<std::fs::File> {
        Ok(super::fs::open_noatime(rustix::fs::CWD, p, flags)?.into())
    };
    let no_file = || std::io::Error::from(std::io::ErrorKind::InvalidInput);
    let (f, meta) = match reach(path, false)? {
        Reached::Here(fd, _) => {
            let meta = std::fs::File::from(rustix::io::fcntl_dupfd_cloexec(&fd, 0)?).metadata()?;
            if !meta.is_file() {
                return Err(no_file());
            }
            // The file this descriptor names, opened again for reading (the magic link is
            // the file itself: no path is resolved again).
            let fd_path = format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(&fd));
            (open(Path::new(&fd_path), flags)?, meta)
        }
        Reached::Missing => return Err(std::io::ErrorKind::NotFound.into()),
        Reached::Away(m, p) => {
            ask(&m, Op::TouchPath { path: p.clone() })?.ok()?;
            let meta = std::fs::symlink_metadata(&p)?;
            if !meta.is_file() {
                return Err(no_file());
            }
            (open(&p, flags | OFlags::NOFOLLOW)?, meta)
        }
    };
    let opened = f.metadata()?;
    if !opened.is_file() || opened.ino() != meta.ino() || opened.dev() != meta.dev() {
        return Err(no_file());
    }
    Ok((f, opened))
}

/// The entries of the directory `dir` (a final symlink followed) with their `lstat`, at most
/// `max`, sorted by name (names lossy), wherever it is ([`reach`]).
pub fn list_dir(dir: &Path, max: usize) -> std::io::Result<Vec<(String, Metadata)>> {
    let (dir, names) = listed(dir, max)?;
    let mut out: Vec<(String, Metadata)> = names
        .into_iter()
        .filter_map(|name| {
            let m = lstat(&dir.join(&name)).ok()?;
            Some((name.to_string_lossy().into_owned(), m))
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

/// The names of at most `max` entries of the directory `dir` (a final symlink followed), in
/// the directory's order (`.` and `..` left out), wherever it is ([`reach`]).
pub fn names(dir: &Path, max: usize) -> std::io::Result<Vec<OsString>> {
    Ok(listed(dir, max)?.1)
}

/// [`names`], with the directory's canonical path (up to a mount that may hang).
fn listed(dir: &Path, max: usize) -> std::io::Result<(PathBuf, Vec<OsString>)> {
    let mut names: Vec<OsString> = Vec::new();
    let mut add = |name: &[u8]| {
        if name != b"." && name != b".." && names.len() < max {
            names.push(<OsString as std::os::unix::ffi::OsStringExt>::from_vec(
                name.to_vec(),
            ));
        }
        names.len() < max
    };
    let dir = match reach(dir, true)? {
        Reached::Here(fd, p) => {
            use rustix::fs::{Mode, OFlags};
            let d = rustix::fs::openat(
                &fd,
                ".",
                OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
                Mode::empty(),
            )?;
            for e in rustix::fs::Dir::read_from(&d)? {
                if !add(e?.file_name().to_bytes()) {
                    break;
                }
            }
            p
        }
        Reached::Missing => return Err(std::io::ErrorKind::NotFound.into()),
        Reached::Away(m, p) => {
            let opened = ask(
                &m,
                Op::OpenDir {
                    from: None,
                    chain: vec![p.clone().into()],
                },
            )?
            .ok()?;
            let d = opened.fd.ok_or(std::io::ErrorKind::NotFound)?;
            loop {
                let read = ask(&m, Op::ReadDir { dir: d.as_fd() })?.ok()?;
                let more = read
                    .entries
                    .iter()
                    .all(|(n, _, _)| add(std::os::unix::ffi::OsStrExt::as_bytes(n.as_os_str())));
                if read.eof || !more {
                    break;
                }
            }
            p
        }
    };
    Ok((dir, names))
}

/// `op` on the way into `mount`, through a bounded call; one not answered is remembered for
/// [`Watch`].
fn ask(mount: &Mount, op: Op<'_>) -> Result<Answer, NotAnswering> {
    super::fs::call(Some(mount), op).inspect_err(unanswered)
}

thread_local! {
    /// How many calls this thread made were not answered, and the latest.
    static UNANSWERED: RefCell<(usize, Option<NotAnswering>)> = const { RefCell::new((0, None)) };
}

/// Remembers, for [`Watch`], a call this thread made that was not answered.
pub fn unanswered(e: &NotAnswering) {
    UNANSWERED.with(|u| {
        let mut u = u.borrow_mut();
        u.0 += 1;
        u.1 = Some(e.clone());
    });
}

/// What a piece of work (judging one lock) asked that was not answered: started before it,
/// read after it, on the same thread.
pub struct Watch(usize);

impl Watch {
    pub fn start() -> Watch {
        Watch(UNANSWERED.with(|u| u.borrow().0))
    }

    /// The latest call not answered since the watch started.
    pub fn unanswered(self) -> Option<NotAnswering> {
        UNANSWERED.with(|u| {
            let u = u.borrow();
            (u.0 > self.0).then(|| u.1.clone()).flatten()
        })
    }
}

/// The mount that `path` (on the device `dev`, when known) is on, when entering it may hang:
/// by the device first, else by the path, in the mount table as read at most
/// `RECENT_MOUNTS` ago.
pub fn hanging_mount(dev: Option<u64>, path: &Path) -> Option<Arc<Mount>> {
    let table = MountTable::recent();
    dev.and_then(|d| table.of_dev(d))
        .or_else(|| table.of_path(path))
        .filter(|m| m.may_hang())
        .cloned()
}

// Calls on a mount the caller already knows (the walker's, the scan's, the containers'
// places): made where they are asked when `mount` is local (or `None`), else through a bounded
// call on that mount (see `super::fs::call`). `Err` when the mount does not answer, now or
// before. Unlike the path functions above, they leave [`Watch`] alone: what the caller asks
// on its own behalf is its to report.

/// A directory opened on a mount: its descriptor, device and inode.
#[derive(Debug)]
pub struct OpenedDir {
    pub fd: OwnedFd,
    pub dev: u64,
    pub ino: u64,
}

/// A file's `lstat`: its mode, device and inode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Status {
    pub mode: u32,
    pub dev: u64,
    pub ino: u64,
}

/// The directory `chain` (path components; the first may be a whole path) opened from `from`
/// (the current directory when `None`) one component at a time, never following a symlink.
pub fn open_dir_at(
    mount: &Mount,
    from: Option<BorrowedFd<'_>>,
    chain: Vec<OsString>,
) -> Result<std::io::Result<OpenedDir>, NotAnswering> {
    let a = super::fs::call(Some(mount), Op::OpenDir { from, chain })?;
    Ok(a.ok().and_then(|a| {
        let fd = a.fd.ok_or_else(|| std::io::Error::other("no directory"))?;
        Ok(OpenedDir {
            fd,
            dev: a.dev,
            ino: a.ino,
        })
    }))
}

/// One `getdents` buffer of the open directory `dir`: its entries (name, `d_type`, inode;
/// `.` and `..` included) and whether the directory ended.
#[allow(clippy::type_complexity)]
pub fn read_dir_at(
    mount: &Mount,
    dir: BorrowedFd<'_>,
) -> Result<std::io::Result<(Vec<(OsString, u8, u64)>, bool)>, NotAnswering> {
    let a = super::fs::call(Some(mount), Op::ReadDir { dir })?;
    Ok(a.ok().map(|a| (a.entries, a.eof)))
}

/// `lstat` of `name` in `dir`.
pub fn lstat_at(
    mount: Option<&Mount>,
    dir: BorrowedFd<'_>,
    name: &OsStr,
) -> Result<std::io::Result<Status>, NotAnswering> {
    let name = name.to_os_string();
    let a = super::fs::call(mount, Op::StatAt { dir, name })?;
    Ok(a.ok().map(|a| Status {
        mode: a.mode,
        dev: a.dev,
        ino: a.ino,
    }))
}

/// Asks of `name` in `dir` what judging it will (its status, a prefix of a regular file's
/// content, a symlink's text): `Ok` when the mount answered, whatever the answer.
pub fn touch_at(mount: &Mount, dir: BorrowedFd<'_>, name: &OsStr) -> Result<(), NotAnswering> {
    let name = name.to_os_string();
    super::fs::call(Some(mount), Op::Touch { dir, name }).map(drop)
}

/// [`touch_at`] of a path named on its own, on `mount` (the calls of which fail at once once
/// one was not answered).
pub fn touch(mount: &Mount, path: &Path) -> Result<(), NotAnswering> {
    let path = path.to_path_buf();
    super::fs::call(Some(mount), Op::TouchPath { path }).map(drop)
}

/// [`touch`] of `path` through calls of its own (keyed by the path, not by a mount: `mount`,
/// the mount it lies in as written, is what an error names).
pub fn touch_path(path: &Path, mount: Option<&Mount>) -> Result<(), NotAnswering> {
    let touch = Op::TouchPath {
        path: path.to_path_buf(),
    };
    super::fs::call_path(path, mount, touch).map(drop)
}

/// What [`probe`] answers of `path`, asked here and now by path (a way known to be local).
pub fn probe_in_place(path: &Path) -> Answer {
    let probe = Op::Probe {
        path: path.to_path_buf(),
    };
    super::fs::call(None, probe).unwrap_or_else(|e| Answer {
        err: Some(e.into()),
        ..Answer::default()
    })
}

/// What [`probe`] answers of `path`, asked by path through calls of its own (keyed by the path,
/// following symlinks anywhere; `mount`, the mount it lies in as written, is what an error
/// names).
pub fn probe_path(path: &Path, mount: Option<&Mount>) -> Result<Answer, NotAnswering> {
    let probe = Op::Probe {
        path: path.to_path_buf(),
    };
    super::fs::call_path(path, mount, probe)
}

/// Whether calls on `mount` fail at once now because an earlier one was not answered.
pub fn not_answering(mount: &Mount) -> Option<NotAnswering> {
    super::fs::not_answering(mount)
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    #[test]
    fn a_real_path_below_a_process_root_is_kept_below_it() {
        // Our own root is `/`: what the kernel names `/tmp` is `/tmp` below it.
        let me = Path::new("/proc")
            .join(std::process::id().to_string())
            .join("root");
        assert_eq!(
            in_its_root(&me.join("tmp/x"), PathBuf::from("/tmp/x")),
            me.join("tmp/x")
        );
        assert_eq!(in_its_root(&me, PathBuf::from("/")), me);
        assert_eq!(
            in_its_root(Path::new("/srv/x"), PathBuf::from("/srv/y")),
            PathBuf::from("/srv/y")
        );
    }

    fn here(r: Reached) -> PathBuf {
        match r {
            Reached::Here(_, p) => p,
            other => panic!("not here: {other:?}"),
        }
    }

    #[test]
    fn resolves_symlinks_and_dotdot_as_the_kernel_does() {
        let t = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(t.path()).unwrap();
        std::fs::create_dir_all(base.join("a/b")).unwrap();
        std::fs::write(base.join("a/b/f"), "x").unwrap();
        std::os::unix::fs::symlink("a/b", base.join("rel")).unwrap();
        std::os::unix::fs::symlink(base.join("a"), base.join("abs")).unwrap();
        std::os::unix::fs::symlink("f", base.join("a/b/link")).unwrap();
        std::os::unix::fs::symlink("loop", base.join("loop")).unwrap();
        for (p, want) in [
            ("a/b/f", "a/b/f"),
            ("rel/f", "a/b/f"),
            ("abs/b/../b/f", "a/b/f"),
            ("rel/../b/f", "a/b/f"),
            ("a/b/link", "a/b/f"),
            ("rel", "a/b"),
        ] {
            let got = here(reach(&base.join(p), true).unwrap());
            assert_eq!(got, base.join(want), "{p}");
            assert_eq!(
                std::fs::canonicalize(base.join(p)).unwrap(),
                got,
                "as the kernel: {p}"
            );
        }
        // Not following the final symlink: the link itself.
        assert_eq!(
            here(reach(&base.join("rel/link"), false).unwrap()),
            base.join("a/b/link")
        );
        for p in ["missing", "a/b/f/under-a-file", "rel/missing/x"] {
            assert!(
                matches!(reach(&base.join(p), true).unwrap(), Reached::Missing),
                "{p}"
            );
        }
        assert_eq!(
            reach(&base.join("loop"), true).unwrap_err().raw_os_error(),
            Some(libc::ELOOP)
        );
    }

    #[test]
    fn proc_links_are_read_as_links() {
        // The magic links of /proc: read, never followed by their text.
        assert_eq!(
            read_link(Path::new("/proc/self/cwd")).unwrap(),
            std::env::current_dir().unwrap()
        );
        let me = std::process::id();
        let t = tempfile::NamedTempFile::new().unwrap();
        let real = std::fs::canonicalize(t.path()).unwrap();
        let seen = PathBuf::from(format!("/proc/{me}/root")).join(real.strip_prefix("/").unwrap());
        assert_eq!(
            stat(&seen).unwrap().ino(),
            t.as_file().metadata().unwrap().ino()
        );
        assert_eq!(canonical(&seen).unwrap(), seen, "resolved inside that root");
    }

    #[test]
    fn a_way_into_a_mount_that_may_hang_stops_there() {
        // A table where `/x/net` is an sshfs mount: nothing below it is resolved here.
        let t = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(t.path()).unwrap();
        std::fs::create_dir_all(base.join("net/d")).unwrap();
        std::os::unix::fs::symlink(base.join("net/d"), base.join("to-net")).unwrap();
        let info = format!(
            "1 0 8:1 / / rw - ext4 /dev/sda1 rw\n2 1 0:50 / {} rw - fuse.sshfs me@far: rw\n",
            base.join("net").display()
        );
        let table = MountTable::parse(info.as_bytes());
        let root = Base {
            path: PathBuf::from("/"),
            fd: None,
        };
        for p in ["net/d/f", "to-net/f"] {
            let rel = base.join(p);
            let rel = rel.strip_prefix("/").unwrap();
            assert!(plainly(&root, &table, rel, true).is_none(), "{p}");
            match resolve(&root, &table, rel, true).unwrap() {
                Reached::Away(m, path) => {
                    assert_eq!(m.fs_type, "fuse.sshfs");
                    assert_eq!(path, base.join("net/d/f"), "{p}");
                }
                other => panic!("{p}: {other:?}"),
            }
        }
        // An automount point is not entered here either.
        std::fs::create_dir_all(base.join("auto/share")).unwrap();
        let info = format!(
            "{info}3 1 0:51 / {} rw - autofs map rw\n",
            base.join("auto").display()
        );
        let table = MountTable::parse(info.as_bytes());
        let rel = base.join("auto/share");
        match resolve(&root, &table, rel.strip_prefix("/").unwrap(), true).unwrap() {
            Reached::Away(m, path) => assert_eq!((m.fs_type.as_str(), path), ("autofs", rel)),
            other => panic!("{other:?}"),
        }
        // A root on a mount that may hang: nothing from it is resolved here.
        let nfs_root = MountTable::parse(b"1 0 0:60 / / rw - nfs4 far:/ rw\n");
        match resolve(&root, &nfs_root, Path::new("tmp/x"), true).unwrap() {
            Reached::Away(m, path) => {
                assert_eq!((m.fs_type.as_str(), path), ("nfs4", "/tmp/x".into()))
            }
            other => panic!("{other:?}"),
        }
        // Beside the mounts, the way is local.
        std::fs::write(base.join("local"), "").unwrap();
        let rel = base.join("local");
        assert!(matches!(
            plainly(&root, &table, rel.strip_prefix("/").unwrap(), true),
            Some(Reached::Here(..))
        ));
    }

    #[test]
    fn a_watch_sees_what_was_not_answered_on_its_thread_only() {
        let e = NotAnswering {
            point: PathBuf::from("/far"),
            fs_type: "nfs4".into(),
            source: None,
            waited: std::time::Duration::ZERO,
        };
        let w = Watch::start();
        let other = e.clone();
        std::thread::spawn(move || unanswered(&other))
            .join()
            .unwrap();
        assert!(Watch(0).unanswered().is_none(), "another thread's call");
        unanswered(&e);
        assert_eq!(w.unanswered().unwrap().point, Path::new("/far"));
        assert!(Watch::start().unanswered().is_none());
    }
}
