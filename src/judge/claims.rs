//! What a dialect tells the judge about one lock: what the lock says of its owner, and the
//! claims the judge checks against the evidence snapshot. A dialect parses and describes; it
//! never decides `stale` (it has no way to build such a judgement): a verdict it settles by
//! itself is `live`, `free`, `foreign` or `unknown` ([`Said::settled`]), and everything else
//! is a list of [`Claim`]s for the judge's rules.

use std::path::PathBuf;

use crate::probe::{FileKey, ProcFacts, ProcSummary};
use crate::verdict::{Flag, Owner};

use super::Judgement;

/// What a dialect read from a lock.
#[derive(Debug, Default)]
pub struct Said {
    /// What the lock says of its owner (shown; empty when it names none).
    pub owner: Owner,
    /// A verdict the dialect settled from the evidence itself (a sign of life it found, a
    /// content it cannot parse, a kernel-lock file nobody locks): never `stale`.
    pub settled: Option<Judgement>,
    /// What the judge checks, in order of authority (see [`super::judge`]).
    pub claims: Vec<Claim>,
    /// The host the lock names when it names no owner PID (an office document, a state file): another
    /// host is `foreign`, decided before any time rule.
    pub host: Option<String>,
    /// Other files whose kernel locks and openers hold this lock too (a document
    /// locked beside it, a tool's kernel-lock file), with the name the evidence gives them.
    pub held_with: Vec<(FileKey, String)>,
    /// The lock's writer takes a kernel lock of this family on the lock file itself for as
    /// long as it holds it (the engine's OFD lock): whoever holds one of that family there
    /// holds the lock. For any other lock, and a lock of another family (a `flock` never
    /// conflicts with an OFD lock), a kernel lock proves a holder only when a writer could
    /// have taken it (see [`super::judge`]).
    pub writer_locks: Option<LockFamily>,
    /// The writer keeps the lock file open for writing, and a process that has it open so
    /// holds it (the engine's owner descriptor, inherited by a child that outlived it).
    pub open_for_writing_holds: bool,
    /// Why this lock cannot be proven stale, whatever the rules find (a writer that may be
    /// about to take it): a proof becomes `unknown` with these lines.
    pub doubts: Vec<String>,
    /// Lines added to the evidence depending on the verdict (advice follows the verdict).
    pub notes: Vec<Note>,
    /// What the dialect read in the lock that matters beyond its verdict ([`Flag`]).
    pub flags: Vec<Flag>,
}

impl Said {
    /// Claims about a lock that says `owner` of its owner.
    pub fn claims(owner: Owner) -> Self {
        Said {
            owner,
            ..Said::default()
        }
    }

    /// A verdict the dialect settled itself.
    pub fn settled(j: Judgement) -> Self {
        Said {
            settled: Some(j),
            ..Said::default()
        }
    }

    /// `unknown` because the content cannot be read as this dialect's lock.
    pub fn unparseable(dialect: &str, why: impl std::fmt::Display) -> Self {
        Said::settled(Judgement::unknown(format!(
            "cannot read this as a {dialect} lock: {why}"
        )))
    }

    pub fn owner(mut self, owner: Owner) -> Self {
        self.owner = owner;
        self
    }

    pub fn claim(mut self, claim: impl Into<Claim>) -> Self {
        self.claims.push(claim.into());
        self
    }

    pub fn host(mut self, host: impl Into<String>) -> Self {
        self.host = Some(host.into());
        self
    }

    pub fn held_with(mut self, key: FileKey, what: impl Into<String>) -> Self {
        self.held_with.push((key, what.into()));
        self
    }

    /// The writer takes a kernel lock of `family` on the lock file itself
    /// ([`Said::writer_locks`]).
    pub fn writer_locks(mut self, family: LockFamily) -> Self {
        self.writer_locks = Some(family);
        self
    }

    pub fn doubt(mut self, why: impl Into<String>) -> Self {
        self.doubts.push(why.into());
        self
    }

    pub fn note(mut self, when: When, line: impl Into<String>) -> Self {
        self.notes.push(Note {
            when,
            line: line.into(),
        });
        self
    }

    pub fn flag(mut self, flag: Flag) -> Self {
        self.flags.push(flag);
        self
    }

    /// Whether the lock names an owner PID (some claim is about one, or its record names one
    /// that a kernel lock settles).
    pub fn names_owner(&self) -> bool {
        self.owner.pid.is_some()
            || self
                .claims
                .iter()
                .any(|c| matches!(c, Claim::Owner(_) | Claim::Owners(_)))
    }
}

/// A verdict the dialect settled, with nothing for the judge to check.
impl From<Judgement> for Said {
    fn from(j: Judgement) -> Self {
        Said::settled(j)
    }
}

/// An evidence line that depends on the verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    pub when: When,
    pub line: String,
}

/// When a [`Note`] is added.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum When {
    Always,
    IfStale,
    IfLive,
    /// Neither stale nor live.
    Otherwise,
}

/// One thing the lock says that the judge can check.
#[derive(Debug, Clone)]
pub enum Claim {
    /// The lock names its owner's PID.
    Owner(OwnerClaim),
    /// The lock names several owners (a roster, a lock directory's members): it
    /// is held while any lives, and stale only when every one is proven gone.
    Owners(Vec<OwnerClaim>),
    /// The writer keeps something for as long as it holds the lock.
    Keeps(Keeps),
    /// The writer refreshes the lock while it holds it.
    Refreshed(Refresh),
    /// The writer states when its owner-less lock may be removed.
    Writer(Contract),
}

impl From<OwnerClaim> for Claim {
    fn from(c: OwnerClaim) -> Self {
        Claim::Owner(c)
    }
}

impl From<Keeps> for Claim {
    fn from(k: Keeps) -> Self {
        Claim::Keeps(k)
    }
}

impl From<Refresh> for Claim {
    fn from(r: Refresh) -> Self {
        Claim::Refreshed(r)
    }
}

impl From<Contract> for Claim {
    fn from(c: Contract) -> Self {
        Claim::Writer(c)
    }
}

/// What a lock says about its owner process.
#[derive(Debug, Clone, Default)]
pub struct OwnerClaim {
    pub pid: i64,
    /// The host the lock names (as written), if it names one.
    pub host: Option<String>,
    /// The boot id the lock names (engine records, Qt, py-filelock's start token).
    pub boot_id: Option<String>,
    /// The machine id the lock names (Qt): another machine id is another machine.
    pub machine_id: Option<String>,
    /// The owner's PID namespace inode, if the lock names it.
    pub pid_ns: Option<u64>,
    /// The owner's exact start time in clock ticks since boot, if the lock names it.
    pub start_ticks: Option<u64>,
    /// When the lock was written (a time the record gives), in ms since the epoch; `None`:
    /// the file's mtime.
    pub written_ms: Option<i64>,
    /// The programs known to write this lock: a live PID that started before the lock is
    /// `live` when it is one of them, `unknown` otherwise (a name proves only `live`).
    pub writers: Writers,
    /// Why this PID is not numbered in any PID namespace we know (the lock records another
    /// directory than the one it lies in: it was written in another mount namespace).
    pub elsewhere: Option<String>,
    /// Which owner of several this is, for the evidence (`member M01.lck`).
    pub label: Option<String>,
    /// Where its owner works, known from the lock's place (a dialect's [`Place`] rule).
    pub place: Option<Place>,
}

/// A place rule a dialect declares: a lock of this name (or extension) in these directories
/// belongs to the application in the directory above them, and its owner works there (one
/// that works elsewhere may be another application's). Data: it names no program.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Place {
    /// The lock's whole name; `None`: any name with [`Place::ext`].
    pub name: Option<&'static str>,
    /// The lock's extension, when no name is given.
    pub ext: Option<&'static str>,
    /// The directories right above the lock, outermost first (`["run", "app"]`); empty: the
    /// application's directory is the lock's own.
    pub within: &'static [&'static str],
}

impl Place {
    /// The application's directory of a lock at `seen` (as a namespace sees it), when the
    /// rule fits it.
    pub fn app_dir(&self, seen: &std::path::Path) -> Option<PathBuf> {
        let fits = match (self.name, self.ext) {
            (Some(name), _) => seen.file_name()? == name,
            (None, Some(ext)) => seen.extension().is_some_and(|e| e == ext),
            (None, None) => false,
        };
        if !fits {
            return None;
        }
        let mut dir = seen.parent()?;
        for want in self.within.iter().rev() {
            if dir.file_name()? != *want {
                return None;
            }
            dir = dir.parent()?;
        }
        Some(dir.to_path_buf())
    }
}

impl OwnerClaim {
    pub fn pid(pid: i64, writers: Writers) -> Self {
        OwnerClaim {
            pid,
            writers,
            ..OwnerClaim::default()
        }
    }

    pub fn host(mut self, host: Option<impl Into<String>>) -> Self {
        self.host = host.map(Into::into);
        self
    }

    pub fn written(mut self, ms: Option<i64>) -> Self {
        self.written_ms = ms;
        self
    }

    pub fn label(mut self, label: impl Into<String>) -> Self {
        self.label = Some(label.into());
        self
    }
}

/// Why a file is its writer's: the place only that writer uses and the shape it gives the
/// file, as the dialect checked them, in words (`a repository directory (HEAD, objects/, refs/)`).
/// What a writer promises or says ([`Keeps`], [`Refresh`], [`Contract`]) is checked only of
/// a file shown its writer's so, never by its name alone: other programs use the same names
/// (another program's file of the same name is not the writer's). A dialect makes one only once it has checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placed(String);

impl Placed {
    /// The file is its writer's because `why`.
    pub fn by(why: impl Into<String>) -> Self {
        Placed(why.into())
    }

    pub fn why(&self) -> &str {
        &self.0
    }
}

/// What a writer keeps for as long as it holds its lock.
#[derive(Debug, Clone)]
pub enum Keeps {
    /// A kernel lock (flock, fcntl or OFD) on `path` (the lock file itself, or a file beside
    /// it: a browser profile's lock, a state file).
    KernelLock {
        path: PathBuf,
        /// The file, as the evidence names it.
        what: String,
        /// The writer and its promise, in words (`the browser holds ... while it runs`).
        promise: String,
        /// Why the lock is that writer's.
        placed: Placed,
    },
    /// The lock file itself, open (a package database's lock, an editor's temporary file).
    Open { promise: String, placed: Placed },
}

impl Keeps {
    /// Why the lock is its writer's.
    pub fn placed(&self) -> &Placed {
        match self {
            Keeps::KernelLock { placed, .. } | Keeps::Open { placed, .. } => placed,
        }
    }
}

/// Which kernel locks a writer takes: the locks that conflict with its own. `flock(2)` locks
/// and `fcntl` record locks (POSIX and OFD) are separate tables on Linux: a `flock` on a file
/// never keeps a writer that takes an OFD lock from taking it, so it proves nothing of that
/// writer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockFamily {
    /// `fcntl` record locks: POSIX (`F_SETLK`) and OFD (`F_OFD_SETLK`), which conflict.
    Fcntl,
    /// Any kernel lock (a writer whose lock call is not known).
    Any,
}

impl LockFamily {
    /// Whether a lock held `how` is of this family.
    pub fn holds(self, how: crate::verdict::HolderHow) -> bool {
        use crate::verdict::HolderHow;
        match self {
            LockFamily::Any => how != HolderHow::Open,
            LockFamily::Fcntl => matches!(how, HolderHow::Posix | HolderHow::Ofd),
        }
    }
}

/// A writer's promise to refresh its lock while it holds it.
#[derive(Debug, Clone)]
pub struct Refresh {
    /// When it was last refreshed (its mtime, or a heartbeat the record gives), ms.
    pub last_ms: i64,
    /// Longer than this without a refresh, and the writer no longer holds it.
    pub window_ms: i64,
    /// Refreshed within this, the holder is alive (`live`); `None`: a refresh within the
    /// window proves nothing either way.
    pub fresh_ms: Option<i64>,
    /// Who promises what, in words (`VS Code touches it every second`).
    pub promise: String,
    /// Why the lock is that writer's.
    pub placed: Placed,
}

/// A writer's own condition for removing an owner-less lock.
#[derive(Debug, Clone)]
pub struct Contract {
    /// The writer, known by its executable.
    pub writer: Writers,
    /// The writer as the evidence names it (`tool`).
    pub what: &'static str,
    /// The place as the evidence names it (`repository /src/app`).
    pub at: String,
    /// The writer's own words (`tool: "if no other tool process is currently running"`).
    pub says: String,
    /// The directory whose files the writer works on: any process with a file there open
    /// may be writing the lock through a library.
    pub place: PathBuf,
    /// Where a running writer counts as at work on this lock.
    pub scope: Scope,
    /// A lock younger than this proves nothing: the writer may be just starting.
    pub min_hold_ms: i64,
    /// Why the lock is that writer's.
    pub placed: Placed,
}

/// Where a running writer counts as at work.
#[derive(Debug, Clone)]
pub enum Scope {
    /// Anywhere on this host (one database per machine: a package manager; an office program may
    /// have the document loaded).
    Anywhere,
    /// Running as this user (a per-user profile).
    User(String),
    /// Working in one of `dirs`: its working directory there, or a directory its command line
    /// (`named`, relative to its working directory) or one of the environment variables
    /// `env` names.
    Dirs {
        dirs: Vec<PathBuf>,
        named: fn(&[String]) -> Vec<PathBuf>,
        env: &'static [&'static str],
    },
}

/// The programs that write a lock, by name: the one process matcher every dialect and rule
/// uses. A name ending in `*` matches any name it begins (`python*`: `python3.11`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Writers {
    pub names: &'static [&'static str],
    /// One more name known only from the lock itself (a Qt record names its application).
    pub also: Option<std::sync::Arc<str>>,
}

/// How a process matches [`Writers`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Match {
    /// Its executable's file name is one of the writers.
    Exe,
    /// Its name (comm or `argv[0]`) is one of them but its executable cannot be read.
    Name,
    /// Its name is one of them, but its executable is not: a process title or a wrapper.
    Title,
    No,
}

impl Writers {
    /// No list: any process may be the writer.
    pub const ANY: Writers = Writers {
        names: &[],
        also: None,
    };

    pub const fn named(names: &'static [&'static str]) -> Self {
        Writers { names, also: None }
    }

    /// The one program a lock names (a Qt application).
    pub fn program(name: &str) -> Self {
        Writers {
            names: &[],
            also: Some(name.into()),
        }
    }

    pub fn is_any(&self) -> bool {
        self.names.is_empty() && self.also.is_none()
    }

    /// Whether a process name (or an executable's path) is one of the writers.
    pub fn hit(&self, name: &str) -> bool {
        let name = name.trim_end_matches(" (deleted)");
        let name = name.rsplit('/').next().unwrap_or(name);
        self.also.as_deref() == Some(name)
            || self.names.iter().any(|w| match w.strip_suffix('*') {
                Some(prefix) => name.starts_with(prefix),
                None => name == *w,
            })
    }

    fn judge(&self, comm: &str, exe: Option<&str>, argv0: Option<&str>) -> Match {
        if self.is_any() {
            return Match::Exe;
        }
        if exe.is_some_and(|e| self.hit(e)) {
            return Match::Exe;
        }
        let named = self.hit(comm) || argv0.is_some_and(|a| self.hit(a));
        match (named, exe) {
            (true, None) => Match::Name,
            (true, Some(_)) => Match::Title,
            (false, _) => Match::No,
        }
    }

    /// How a process (read from `/proc`) matches.
    pub fn of(&self, f: &ProcFacts) -> Match {
        self.judge(
            &f.comm,
            f.exe.as_deref(),
            f.cmdline.first().map(String::as_str),
        )
    }

    /// How a listed process matches.
    pub fn of_listed(&self, p: &ProcSummary) -> Match {
        let exe = p.exe.as_ref().map(|e| e.to_string_lossy());
        self.judge(&p.name, exe.as_deref(), p.cmd.first().map(String::as_str))
    }

    /// The live processes of the snapshot that are one of the writers by any of their names
    /// (zombies and kernel threads are not running programs), this one left out.
    pub fn running<'a>(&self, snap: &'a crate::probe::Snapshot) -> Vec<&'a ProcSummary> {
        let me = snap.self_pid();
        snap.processes()
            .iter()
            .filter(|p| p.pid != me && self.of_listed(p) != Match::No)
            .filter(|p| {
                matches!(
                    snap.pid(p.pid),
                    crate::probe::PidState::Alive(_) | crate::probe::PidState::ExistsOpaque
                )
            })
            .collect()
    }

    /// `editor/editor-gtk`, for the evidence.
    pub fn describe(&self) -> String {
        let mut names: Vec<&str> = self.also.as_deref().into_iter().collect();
        names.extend(self.names.iter().take(6).map(|n| n.trim_end_matches('*')));
        names.join("/") + if self.names.len() > 6 { "/..." } else { "" }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(comm: &str, exe: Option<&str>, argv0: &str) -> ProcFacts {
        ProcFacts {
            comm: comm.into(),
            exe: exe.map(str::to_string),
            cmdline: vec![argv0.into()],
            ..ProcFacts::default()
        }
    }

    #[test]
    fn writers_are_matched_by_executable_first() {
        let w = Writers::named(&["vim", "python*"]);
        assert_eq!(w.of(&facts("vim", Some("/usr/bin/vim"), "vim")), Match::Exe);
        assert_eq!(
            w.of(&facts("x", Some("/usr/bin/python3.11 (deleted)"), "x")),
            Match::Exe
        );
        // A title that says vim, an executable that is not.
        assert_eq!(
            w.of(&facts("vim", Some("/usr/bin/sleep"), "sleep")),
            Match::Title
        );
        assert_eq!(w.of(&facts("editor", None, "/usr/bin/vim")), Match::Name);
        assert_eq!(
            w.of(&facts("nano", Some("/usr/bin/nano"), "nano")),
            Match::No
        );
        assert_eq!(
            Writers::ANY.of(&facts("nano", Some("/usr/bin/nano"), "nano")),
            Match::Exe
        );
        assert_eq!(w.describe(), "vim/python");
    }

    #[test]
    fn a_place_rule_finds_the_application_directory() {
        use std::path::Path;
        let app = Place {
            name: None,
            ext: Some("pid"),
            within: &["run", "pids"],
        };
        assert_eq!(
            app.app_dir(Path::new("/srv/app/run/pids/web.pid")),
            Some(PathBuf::from("/srv/app"))
        );
        assert_eq!(app.app_dir(Path::new("/srv/app/pids/web.pid")), None);
        assert_eq!(app.app_dir(Path::new("/srv/app/run/pids/web.lock")), None);
        assert_eq!(
            app.app_dir(Path::new("/run/pids/web.pid")),
            Some(PathBuf::from("/"))
        );
        let data = Place {
            name: Some("server.lock"),
            ext: None,
            within: &[],
        };
        assert_eq!(
            data.app_dir(Path::new("/var/lib/db/server.lock")),
            Some(PathBuf::from("/var/lib/db"))
        );
        assert_eq!(data.app_dir(Path::new("/var/lib/db/other.lock")), None);
    }
}
