//! Lock dialects: one small module per lock format, plus the registry that maps file-name
//! patterns to them. Adding a dialect is one module (a type implementing [`Dialect`]) and one
//! line in [`registry`]: the scanner, the report and the UI know dialects only through this
//! trait and their `id`.
//!
//! A dialect parses and describes ([`Dialect::read`]: what the lock says of its owner, and the
//! claims the judge checks); it never decides `stale`: only [`crate::judge`] does, through its
//! closed set of rules. The provided [`Dialect::judge`] hands what the dialect said to the
//! judge.
//!
//! Invariant: a dialect's `read` never modifies anything and reads the machine only through
//! the evidence [`Snapshot`] (and the candidate's own bounded content).

pub mod borg;
pub mod breezy;
pub mod chromium;
pub mod common;
pub mod conda;
pub mod cvs;
pub mod declared;
pub mod emacs;
pub mod emacs_desktop;
pub mod firefox;
pub mod flock;
pub mod git;
pub mod gnupg;
pub mod h2;
pub mod hsqldb;
pub mod jetbrains;
pub mod julia;
pub mod libreoffice;
pub mod libreoffice_profile;
pub mod locksmith;
pub mod mercurial;
pub mod message;
pub mod mkdir_lock;
pub mod not_locks;
pub mod nvim_shada;
pub mod pacman;
pub mod pid_record;
pub mod pidfile;
pub mod postgres;
pub mod py_lockfile;
pub mod qt_lockfile;
pub mod r_install;
pub mod rails;
pub mod rehash;
pub mod rpm_db;
pub mod ruby_lockfile;
pub mod start_guard;
pub mod terraform;
pub mod tool_flock;
pub mod vim_swap;
pub mod vmware;
pub mod vscode;
pub mod x11;
pub mod xauth;
pub mod zsh_history;

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use crate::judge::{Claim, Judgement, Place, Said};
use crate::probe::{FileKey, FsInfo, Snapshot, Stat};
pub use message::Message;

/// How much of a lock file is read: enough for every dialect (a vim swap's block 0 is 4 KiB
/// on most systems; the fields we read end at byte 1008).
pub const CONTENT_PREFIX: usize = 4096;

/// What kind of directory entry a candidate is (never followed through symlinks).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum EntryKind {
    File,
    Symlink,
    Dir,
    /// FIFO, socket, device: never opened.
    Other,
}

impl EntryKind {
    pub fn of(meta: &Stat) -> Self {
        if meta.is_symlink() {
            EntryKind::Symlink
        } else if meta.is_dir() {
            EntryKind::Dir
        } else if meta.is_file() {
            EntryKind::File
        } else {
            EntryKind::Other
        }
    }
}

/// Stale windows and other tunables the judges need (from the configuration).
#[derive(Debug, Clone, PartialEq, serde::Deserialize, serde::Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct Windows {
    /// `locksmith`: a heartbeat older than this (with no local evidence of life) is stale.
    pub heartbeat_secs: u64,
    /// `git`: a lock younger than this is never judged stale (git may be just starting).
    pub git_min_age_secs: u64,
}

impl Windows {
    /// The longest window the configuration accepts: ten years.
    pub const MAX_SECS: u64 = 10 * 366 * 86_400;

    /// A window in milliseconds, for comparing with ages: saturates instead of overflowing
    /// (a window is at most [`Windows::MAX_SECS`] once the configuration is checked).
    pub fn ms(secs: u64) -> i64 {
        locksmith_sys::time::window_ms(secs)
    }
}

impl Default for Windows {
    fn default() -> Self {
        Windows {
            heartbeat_secs: locksmith_engine::StaleWindows::default()
                .heartbeat
                .as_secs(),
            git_min_age_secs: 2,
        }
    }
}

/// The engine's part of the windows (its heartbeat window).
impl From<&Windows> for locksmith_engine::StaleWindows {
    fn from(w: &Windows) -> Self {
        locksmith_engine::StaleWindows {
            heartbeat: std::time::Duration::from_secs(w.heartbeat_secs),
        }
    }
}

impl From<Windows> for locksmith_engine::StaleWindows {
    fn from(w: Windows) -> Self {
        (&w).into()
    }
}

/// One file (or directory, or symlink) that looks like a lock, with what the walker already
/// knows about it. Content is a bounded prefix, read only from regular files, never blocking.
#[derive(Debug)]
pub struct Candidate<'a> {
    pub path: &'a Path,
    /// `lstat` of the path.
    pub meta: &'a Stat,
    pub kind: EntryKind,
    /// At most [`CONTENT_PREFIX`] bytes of a regular file; empty for anything else.
    pub content: &'a [u8],
    /// Whether `content` is the whole file.
    pub complete: bool,
    /// The link text of a symlink (not followed).
    pub link_target: Option<&'a Path>,
    pub fs: &'a FsInfo,
}

impl Candidate<'_> {
    pub fn key(&self) -> FileKey {
        FileKey::of(self.meta)
    }

    pub fn file_name(&self) -> &OsStr {
        self.path.file_name().unwrap_or(self.path.as_os_str())
    }

    /// The file's mtime in ms since the epoch.
    pub fn mtime_ms(&self) -> i64 {
        crate::probe::mtime_ms(self.meta)
    }

    /// The lock as the judge sees it.
    pub fn lock(&self) -> crate::judge::Lock<'_> {
        crate::judge::Lock {
            at: crate::judge::At {
                path: self.path,
                meta: self.meta,
                fs: self.fs,
            },
            content: self.content,
            complete: self.complete,
        }
    }

    /// Content as text (lossy), trimmed of surrounding whitespace and NULs.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(self.content)
            .trim_matches(|c: char| c.is_whitespace() || c == '\0')
            .to_string()
    }
}

/// A candidate read from disk the way the walker reads it (lstat, a bounded prefix of a regular
/// file opened with `O_NONBLOCK|O_NOFOLLOW`, the text of a symlink): for judging one path
/// outside a scan, and for tests. It owns its data; [`LoadedCandidate::candidate`] borrows it.
#[derive(Debug)]
pub struct LoadedCandidate {
    pub path: PathBuf,
    pub meta: Stat,
    pub kind: EntryKind,
    pub content: Vec<u8>,
    pub complete: bool,
    pub link_target: Option<PathBuf>,
    pub fs: FsInfo,
}

impl LoadedCandidate {
    /// Reads `path` without following a final symlink and without blocking on FIFOs or
    /// devices (those get no content).
    pub fn load(path: &Path, snap: &Snapshot) -> std::io::Result<Self> {
        let meta = Stat::from(std::fs::symlink_metadata(path)?);
        let kind = EntryKind::of(&meta);
        let (content, complete) = if kind == EntryKind::File {
            read_prefix(path, &meta, CONTENT_PREFIX)?
        } else {
            (Vec::new(), kind != EntryKind::Symlink)
        };
        let link_target = match kind {
            EntryKind::Symlink => Some(std::fs::read_link(path)?),
            _ => None,
        };
        let fs = snap.fs_of(path, &meta);
        Ok(LoadedCandidate {
            path: path.to_path_buf(),
            meta,
            kind,
            content,
            complete,
            link_target,
            fs,
        })
    }

    pub fn candidate(&self) -> Candidate<'_> {
        Candidate {
            path: &self.path,
            meta: &self.meta,
            kind: self.kind,
            content: &self.content,
            complete: self.complete,
            link_target: self.link_target.as_deref(),
            fs: &self.fs,
        }
    }
}

/// Reads at most `max` bytes of a regular file: opened with
/// `O_RDONLY|O_NONBLOCK|O_NOFOLLOW|O_NOCTTY|O_CLOEXEC` (and `O_NOATIME` where allowed, so not
/// even the access time changes), then checked with `fstat` to be the regular file that was
/// `lstat`ed, so a FIFO or device swapped in is never read. Returns the bytes and whether
/// they are the whole file.
///
/// Note: closing a descriptor drops the *classic POSIX* (`F_SETLK`) locks this process holds
/// on that file; OFD and flock locks are unaffected. The scanner is meant to run in a process
/// that holds no classic POSIX locks on the files it scans.
pub fn read_prefix(path: &Path, lstat: &Stat, max: usize) -> std::io::Result<(Vec<u8>, bool)> {
    sys::read_prefix(path, lstat, max)
}

pub use sys::read_opened;

mod sys {
    use std::io;
    use std::path::Path;

    use crate::probe::Stat;

    use rustix::fs::{FileType, OFlags};

    pub fn read_prefix(path: &Path, lstat: &Stat, max: usize) -> io::Result<(Vec<u8>, bool)> {
        let flags =
            OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOFOLLOW | OFlags::NOCTTY | OFlags::CLOEXEC;
        let fd = crate::probe::fs::open_noatime(rustix::fs::CWD, path, flags)?;
        read_opened(fd, lstat, max)
    }

    /// Reads at most `max` bytes of the opened `fd` after checking it is a regular file and the
    /// one `lstat` saw. Returns the bytes and whether they are the whole file.
    pub fn read_opened(
        fd: rustix::fd::OwnedFd,
        lstat: &Stat,
        max: usize,
    ) -> io::Result<(Vec<u8>, bool)> {
        let st = rustix::fs::fstat(&fd)?;
        if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
            return Err(io::Error::other("not a regular file any more"));
        }
        if st.st_dev as u64 != lstat.dev() || st.st_ino as u64 != lstat.ino() {
            return Err(io::Error::other("replaced while being read"));
        }
        // One byte more than the file claims, so that reaching its end is seen.
        let size = st.st_size.max(0) as u64;
        let mut buf = vec![0u8; max.min(size.saturating_add(1).min(max as u64) as usize)];
        let mut len = 0;
        let mut eof = false;
        while len < buf.len() {
            match rustix::io::read(&fd, &mut buf[len..]) {
                Ok(0) => {
                    eof = true;
                    break;
                }
                Ok(n) => len += n,
                Err(rustix::io::Errno::INTR) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        buf.truncate(len);
        let complete = eof || len as u64 == size;
        Ok((buf, complete))
    }
}

/// A dialect's id: the stable name shown in the report, the JSON (`"dialect"`), the metrics and
/// the journal. Built-in dialects have a constant each; a dialect declared in the configuration
/// has its declared name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(transparent)]
pub struct DialectId(&'static str);

impl DialectId {
    pub const BORG: DialectId = DialectId("borg");
    pub const BREEZY: DialectId = DialectId("breezy");
    pub const CHROMIUM: DialectId = DialectId("chromium");
    pub const CONDA: DialectId = DialectId("conda");
    pub const CVS: DialectId = DialectId("cvs");
    pub const EMACS: DialectId = DialectId("emacs");
    pub const EMACS_DESKTOP: DialectId = DialectId("emacs-desktop");
    pub const FIREFOX: DialectId = DialectId("firefox");
    pub const FLOCK: DialectId = DialectId("flock");
    pub const GIT: DialectId = DialectId("git");
    pub const GNUPG: DialectId = DialectId("gnupg");
    pub const H2: DialectId = DialectId("h2");
    pub const HSQLDB: DialectId = DialectId("hsqldb");
    pub const JETBRAINS: DialectId = DialectId("jetbrains");
    pub const JULIA_PIDFILE: DialectId = DialectId("julia-pidfile");
    pub const LIBREOFFICE: DialectId = DialectId("libreoffice");
    pub const LIBREOFFICE_PROFILE: DialectId = DialectId("libreoffice-profile");
    pub const LOCKSMITH: DialectId = DialectId("locksmith");
    pub const MERCURIAL: DialectId = DialectId("mercurial");
    pub const MKDIR_LOCK: DialectId = DialectId("mkdir-lock");
    pub const NVIM_SHADA: DialectId = DialectId("nvim-shada");
    pub const PACMAN: DialectId = DialectId("pacman");
    pub const PIDFILE: DialectId = DialectId("pidfile");
    pub const POSTGRES: DialectId = DialectId("postgres");
    pub const PY_LOCKFILE: DialectId = DialectId("py-lockfile");
    pub const QT_LOCKFILE: DialectId = DialectId("qt-lockfile");
    pub const R_INSTALL: DialectId = DialectId("r-install");
    pub const RAILS: DialectId = DialectId("rails");
    pub const REHASH: DialectId = DialectId("rehash");
    pub const RPM_DB: DialectId = DialectId("rpm-db");
    pub const RUBY_LOCKFILE: DialectId = DialectId("ruby-lockfile");
    pub const START_GUARD: DialectId = DialectId("start-guard");
    pub const TERRAFORM: DialectId = DialectId("terraform");
    pub const TOOL_FLOCK: DialectId = DialectId("tool-flock");
    pub const VIM_SWAP: DialectId = DialectId("vim-swap");
    pub const VMWARE: DialectId = DialectId("vmware");
    pub const VSCODE: DialectId = DialectId("vscode");
    pub const X11: DialectId = DialectId("x11");
    pub const XAUTH: DialectId = DialectId("xauth");
    pub const ZSH_HISTORY: DialectId = DialectId("zsh-history");

    /// The id of a dialect known by name only: one declared in the configuration (see
    /// [`declared`]), or one made for a test.
    pub const fn named(name: &'static str) -> Self {
        DialectId(name)
    }

    pub fn as_str(self) -> &'static str {
        self.0
    }
}

impl std::fmt::Display for DialectId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

/// Comparing with a name read from outside (the configuration, a journal line, a test).
impl PartialEq<str> for DialectId {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<&str> for DialectId {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

/// What a dialect is, for a person: the book's reference table of dialects is made from
/// this, from [`Dialect::patterns`] and from [`Dialect::messages`], so it cannot drift from
/// the code. Data only: nothing here is read by the scanner or the judge.
#[derive(Debug, Clone, Copy, Default)]
pub struct About {
    /// The programs that write this lock.
    pub writer: &'static str,
    /// Those programs by the names text gives them (`git`, `libgit2`): what only this
    /// dialect (and its data) may name, with its file names (a test checks the sources).
    pub programs: &'static [&'static str],
    /// Where it is found and what it looks like (its place and shape), beyond its names.
    pub found_as: &'static str,
    /// How it is judged, in short.
    pub judged_by: &'static str,
    /// The ids of the rules of the judge that can prove it stale (empty: it is never
    /// `stale`). Named, not referred to: a dialect never reaches a rule (a test checks that
    /// each is a rule's id).
    pub rules: &'static [&'static str],
    /// Where the writer's own source states its lock protocol (a file of that program's
    /// source tree), when the dialect follows one.
    pub source: Option<&'static str>,
}

/// What a person may do for a lock besides removing it (recover what it holds, say), handed
/// over by its dialect as data ([`Dialect::action`]): its words, the verdicts it is offered
/// for, and the program that does it. The command itself is asked of the dialect when it is
/// shown or run ([`Dialect::command`]), as the lock is then.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Action {
    /// What it does, as a verb (`recover`), and its past participle (`recovered`).
    pub verb: &'static str,
    pub past: &'static str,
    /// The program that does it, when the lock names one that can.
    pub program: Option<&'static str>,
    /// How the report's summary points at it: the program and its option.
    pub short: &'static str,
    /// For which verdicts it is offered (advice follows the verdict).
    pub offered: Offered,
    /// Why it is not offered while the lock's owner runs.
    pub when_live: &'static str,
    /// What the report says when the file the command writes was written after the lock
    /// last changed, as doing it leaves them (`{file}`, `{command}` filled in).
    pub done_note: &'static str,
    /// The same, in the UI's words, which then shows the command (`{file}` filled in).
    pub done_line: &'static str,
}

/// For which verdicts an [`Action`] is offered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Offered {
    /// Whatever the verdict.
    Always,
    /// Unless the lock's owner is proven running (then what the action would do is that
    /// program's to do).
    UnlessLive,
}

impl Offered {
    pub fn covers(self, v: crate::verdict::Verdict) -> bool {
        match self {
            Offered::Always => true,
            Offered::UnlessLive => v != crate::verdict::Verdict::Live,
        }
    }
}

/// The command that does an [`Action`], for the effective user, on a lock as it is now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Command {
    /// The program and its arguments.
    pub argv: Vec<std::ffi::OsString>,
    /// Where it runs.
    pub dir: Option<PathBuf>,
    /// The file it writes.
    pub writes: PathBuf,
}

impl Command {
    /// The command line: raw text (an argument that is not UTF-8 shown lossily),
    /// shell-quoted when needed; views escape it.
    pub fn shown(&self) -> String {
        self.argv
            .iter()
            .map(|a| crate::text::shell_quote(&a.to_string_lossy()))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// The help of the key that runs a row's own action ([`Action`]), for the UI's key map.
pub const ACTION_KEY_HELP: &str = vim_swap::RECOVER_KEY_HELP;

/// Why nothing was run when a person may not do a lock's action, for the UI: what the
/// action would have done.
pub const ACTION_REFUSED: &str = vim_swap::RECOVER_REFUSED;

/// The action the dialect of a lock hands over for it ([`Dialect::action`]), whatever its
/// verdict.
pub fn action_of(dialect: DialectId, path: &Path, content: &[u8], j: &Judgement) -> Option<Action> {
    by_id(dialect.as_str())?.action(path, content, j)
}

/// The action offered for a lock of `dialect` at `path` (its content `content`) judged `j`:
/// the [`Action`] its dialect hands over when a flag keeps the lock ([`Judgement::keeping`])
/// and the verdict is one the action is offered for, with that flag.
pub fn offered(
    dialect: DialectId,
    path: &Path,
    content: &[u8],
    j: &Judgement,
) -> Option<(crate::verdict::Flag, Action)> {
    let flag = *j.keeping()?;
    let action = by_id(dialect.as_str())?.action(path, content, j)?;
    action.offered.covers(j.verdict()).then_some((flag, action))
}

/// For a lock whose verdict lets it be reclaimed: the action offered for it ([`offered`]),
/// with the command that does it for the effective user now, or why it is not theirs.
pub fn offered_before_reclaim(
    dialect: DialectId,
    path: &Path,
    content: &[u8],
    j: &Judgement,
) -> Option<Offer> {
    if !j.verdict().reclaimable() {
        return None;
    }
    let (flag, action) = offered(dialect, path, content, j)?;
    let d = by_id(dialect.as_str())?;
    let command = command_here(d, path, content);
    let done = command.as_ref().ok().and_then(|_| d.done_since(path));
    Some(Offer {
        flag,
        action,
        command,
        done,
    })
}

/// An action offered for a lock, as the report and reclaim word it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Offer {
    /// The flag that calls for it.
    pub flag: crate::verdict::Flag,
    pub action: Action,
    /// The command for the effective user now, or why it is not theirs.
    pub command: Result<Command, String>,
    /// The file the command writes, when written after the lock last changed
    /// ([`Dialect::done_since`]).
    pub done: Option<PathBuf>,
}

/// [`Dialect::command`] for the lock at `path` now (its owner by `lstat`).
pub fn command_here(d: &dyn Dialect, path: &Path, content: &[u8]) -> Result<Command, String> {
    use std::os::unix::fs::MetadataExt;
    let meta = crate::probe::reach::lstat(path)
        .map_err(|e| format!("{} cannot be examined: {e}", path.display()))?;
    if !meta.file_type().is_file() {
        return Err(format!("{} is not a regular file", path.display()));
    }
    d.command(path, meta.uid(), content)
}

/// A lock format.
pub trait Dialect: Send + Sync {
    /// Stable id used in the report and the JSON.
    fn id(&self) -> DialectId;

    /// File-name globs that make a path a candidate for this dialect. A pattern containing
    /// `/` is matched against the whole path, otherwise against the file name.
    fn patterns(&self) -> &'static [&'static str];

    /// The error messages its program prints when it finds this lock taken (`locksmith why`
    /// starts from them). None by default.
    fn messages(&self) -> &'static [Message] {
        &[]
    }

    /// What the reference says of this dialect ([`About`]): its writer, where and in what
    /// shape its locks are found, how they are judged, and the writer's own source.
    fn about(&self) -> About {
        About::default()
    }

    /// Its place rules ([`Place`]): where a lock's owner works, known from the lock's place
    /// (an application's pid file in the application's own directories). They hold for every
    /// dialect's lock of that place ([`places`]). None by default.
    fn places(&self) -> &'static [Place] {
        &[]
    }

    /// What a person may do for this lock, judged `j`, besides removing it ([`Action`]),
    /// when its content calls for it. None by default.
    fn action(&self, _path: &Path, _content: &[u8], _j: &Judgement) -> Option<Action> {
        None
    }

    /// The command that does this dialect's [`Action`] on the lock at `path` (owned by `uid`,
    /// its content `content`) for the effective user now; or why it is not theirs to run,
    /// in a sentence.
    fn command(&self, _path: &Path, _uid: u32, _content: &[u8]) -> Result<Command, String> {
        Err("nothing is done for it but removing it".into())
    }

    /// The file an [`Action`]'s command writes, when it was written after the lock at `path`
    /// last changed: what doing it leaves, so it may be done already.
    fn done_since(&self, _path: &Path) -> Option<PathBuf> {
        None
    }

    /// Whether a file this dialect judged, found by the walk as `name` in the open directory
    /// `dir` (its status `meta`; `live`: its verdict), is part of another lock's row (a
    /// handle hard-linked to a lock beside it), not a lock of its own. False by default.
    fn part_of_another_lock(
        &self,
        _dir: std::os::fd::BorrowedFd<'_>,
        _name: &OsStr,
        _meta: &Stat,
        _live: bool,
    ) -> bool {
        false
    }

    /// Whether a lock with this content is a dotlock: taken by hard-linking a handle file to
    /// it, so that its holder's handle is a hard link of it and its waiters retry that link.
    /// False by default.
    fn dotlock(&self, _content: &[u8]) -> bool {
        false
    }

    /// Whether this dialect may recognise a file whatever its name (by content, or because a
    /// kernel lock is held on it). Such dialects are asked about every candidate.
    fn any_name(&self) -> bool {
        false
    }

    /// Whether this candidate is really of this dialect (checks content, kind, location).
    /// When no dialect recognises a name-matched candidate, the first dialect whose pattern
    /// matched and that [`Dialect::judges_unrecognised`] judges it anyway and must then answer
    /// `Unknown` for what it cannot parse.
    fn recognise(&self, c: &Candidate<'_>, snap: &Snapshot) -> bool;

    /// Whether a file its patterns name, which no dialect recognised, is still judged by this
    /// dialect (as `unknown` for what it cannot parse). A dialect whose name is another
    /// program's too, and whose files are known by their place and shape (pacman's `db.lck`,
    /// which a Java database names its locks too), says no: a file with the name but not the
    /// place or shape is not its own, and is judged by another dialect that names it, or not
    /// at all.
    fn judges_unrecognised(&self) -> bool {
        true
    }

    /// What the candidate says: its owner, and the claims the judge checks against the
    /// snapshot's evidence (or a verdict that is not `stale`, settled from the evidence).
    fn read(&self, c: &Candidate<'_>, snap: &Snapshot, windows: &Windows) -> Said;

    /// Judges the candidate: what [`Dialect::read`] says, with what a start guard beside it
    /// proves ([`start_guard::beside`]), through the judge.
    fn judge(&self, c: &Candidate<'_>, snap: &Snapshot, windows: &Windows) -> Judgement {
        let mut said = start_guard::beside(c, self.read(c, snap, windows), snap);
        placed(&mut said, c.path);
        crate::judge::judge(c.lock(), said, snap)
    }
}

pub use not_locks::NOT_LOCKS;

/// All dialects, in the order they are tried (most specific first).
pub fn registry() -> &'static [&'static dyn Dialect] {
    &[
        &locksmith::Locksmith,
        // The start guards of `locksmith start` (their record is no engine record),
        &start_guard::StartGuard,
        // Formats recognised by a specific name and content first,
        &vim_swap::VimSwap,
        // (GnuPG's temporary dotlock files before emacs's `.#*`; Qt's QLockFile and
        // LibreOffice's profile lock by their exact content, whatever the name, before the
        // name-based readers that would take their first line for a PID)
        &gnupg::Gnupg,
        &qt_lockfile::QtLockFile,
        &libreoffice_profile::LibreOfficeProfile,
        &emacs::Emacs,
        &libreoffice::LibreOffice,
        &x11::X11,
        &postgres::Postgres,
        &chromium::Chromium,
        &terraform::Terraform,
        // then `*.lock` under a git directory (before the generic `*.lock` readers: an empty
        // `HEAD.lock` is git's, not a flock file),
        &git::Git,
        &mercurial::Mercurial,
        // then other version control systems' locks (CVS's `#cvs.lock` directory before the
        // mkdir-lock reader),
        &breezy::Breezy,
        &cvs::Cvs,
        // then programs' own lock files, found by their names and places,
        &rails::Rails,
        &jetbrains::JetBrains,
        &vscode::VsCode,
        &borg::Borg,
        &r_install::RInstall,
        &vmware::Vmware,
        &pacman::Pacman,
        &hsqldb::Hsqldb,
        &h2::H2,
        // (the records of lock libraries, by their content and the names beside them)
        &ruby_lockfile::RubyLockfile,
        &py_lockfile::PyLockfile,
        &nvim_shada::NvimShada,
        &conda::Conda,
        &julia::Julia,
        &zsh_history::ZshHistory,
        &rpm_db::RpmDb,
        &xauth::Xauth,
        &emacs_desktop::EmacsDesktop,
        &rehash::Rehash,
        // then a PID in a file (`*.pid`, `*.lock`, `lock`, ...): the dialect that judges such
        // names when nothing recognises their content,
        &pidfile::Pidfile,
        // then the kernel-lock files of well-known tools, which hold no PID (before the reader
        // of an empty `*.lock`, which cannot tell its writer),
        &tool_flock::ToolFlock,
        // then Firefox's `lock` symlink and `.parentlock` (after pidfile, so that a regular
        // file named `lock` is never taken for Firefox's),
        &firefox::Firefox,
        // then a lock directory, and a kernel lock on any file.
        &mkdir_lock::MkdirLock,
        &flock::Flock,
    ]
}

/// Whether some dialect reads a lock with this content as a dotlock ([`Dialect::dotlock`]).
pub fn is_dotlock(content: &[u8]) -> bool {
    registry().iter().any(|d| d.dotlock(content))
}

/// Every dialect's place rules, in the registry's order.
pub fn places() -> impl Iterator<Item = &'static Place> {
    registry().iter().flat_map(|d| d.places().iter())
}

/// Gives each owner claim of `said` about the lock at `path` the first place rule that fits
/// it, unless its dialect gave it one.
pub fn placed(said: &mut Said, path: &Path) {
    let fits = places().find(|p| p.app_dir(path).is_some()).copied();
    for claim in &mut said.claims {
        let owners = match claim {
            Claim::Owner(c) => std::slice::from_mut(c),
            Claim::Owners(cs) => cs.as_mut_slice(),
            _ => continue,
        };
        for c in owners.iter_mut().filter(|c| c.place.is_none()) {
            c.place = fits;
        }
    }
}

/// Looks a dialect up by id.
pub fn by_id(id: &str) -> Option<&'static dyn Dialect> {
    registry().iter().copied().find(|d| d.id() == id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judge::{OwnerClaim, Writers};

    /// A place rule a dialect declares holds for whichever dialect judges a lock of that
    /// place: an owner claim without one gets the first that fits, one with its own keeps it.
    #[test]
    fn place_rules_hold_for_every_dialects_owner_claims() {
        let (rule, at) = places()
            .find_map(|p| {
                let within = p.within.join("/");
                let name = p
                    .name
                    .map_or_else(|| format!("x.{}", p.ext.unwrap_or("pid")), str::to_string);
                let at = PathBuf::from(format!("/srv/app/{within}/{name}").replace("//", "/"));
                (p.app_dir(&at).is_some()).then_some((*p, at))
            })
            .expect("some dialect declares a place rule");
        let mut said = Said::default()
            .claim(OwnerClaim::pid(42, Writers::ANY))
            .claim(Claim::Owners(vec![OwnerClaim::pid(43, Writers::ANY)]));
        placed(&mut said, &at);
        for claim in &said.claims {
            let owners = match claim {
                Claim::Owner(c) => vec![c],
                Claim::Owners(cs) => cs.iter().collect(),
                _ => unreachable!(),
            };
            for c in owners {
                assert_eq!(c.place, Some(rule));
            }
        }
        let mut elsewhere = Said::default().claim(OwnerClaim::pid(42, Writers::ANY));
        placed(&mut elsewhere, Path::new("/srv/app/nothing-of-a-rule.txt"));
        let Claim::Owner(c) = &elsewhere.claims[0] else {
            unreachable!()
        };
        assert_eq!(c.place, None);
    }
}
