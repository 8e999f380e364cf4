//! `r-install`: the lock directories `R CMD INSTALL` (and so `install.packages()`) makes in
//! an R library: `00LOCK-<pkg>/` per package, or `00LOCK/` for the whole library
//! (`--lock`).
//!
//! Format, from R's `src/library/tools/R/install.R` (`.install_packages`): the directory is
//! made with `dir.create(lockdir)`; when the package is already installed, the installed
//! copy is copied into it (`file.copy(instdir, lockdir, recursive = TRUE)`) before the new
//! version replaces it, and on failure R restores it from there ("restoring previous
//! '<pkg>'"). The directory is removed when the install ends. R names no owner; it refuses
//! to install while the directory exists ("failed to lock directory ... Try removing
//! '.../00LOCK-pkg'").
//!
//! So this directory is not only a lock: after a killed install it may hold the only copy of
//! the previously installed version. The evidence says what it holds.
//!
//! Liveness: an R process (`R`, `Rscript`, the `R CMD INSTALL` engine) whose command line
//! names this library, or working inside it or the lock directory → `live`; none → `stale`,
//! when every process can be seen.

use std::path::{Path, PathBuf};

use super::{Candidate, Decision, Dialect, DialectId, EntryKind, Windows, common, support};
use crate::probe::{ProcSummary, Snapshot};
use crate::verdict::{Judgement, Owner, Verdict};

pub struct RInstall;

const PATTERNS: &[&str] = &["00LOCK", "00LOCK-*"];

/// The R engine and its front ends.
const R_PROGRAMS: &[&str] = &["R", "Rscript", "rsession", "radian"];

/// What the lock directory holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Held {
    /// Packages kept in it: (directory name, `Version:` from its DESCRIPTION).
    pub packages: Vec<(String, Option<String>)>,
    /// Other entries.
    pub other: usize,
    /// `00new/`: where R stages the version being installed.
    pub staging: bool,
}

/// Lists what a lock directory holds (bounded).
pub fn held(dir: &Path) -> std::io::Result<Held> {
    let mut h = Held {
        packages: Vec::new(),
        other: 0,
        staging: false,
    };
    for (name, meta) in support::list_dir(dir, 256)? {
        let desc = dir.join(&name).join("DESCRIPTION");
        if name == "00new" && meta.is_dir() {
            h.staging = true;
        } else if meta.is_dir()
            && let Ok(m) = std::fs::symlink_metadata(&desc)
            && let Some(text) = support::read_member(&desc, &m, 16 * 1024)
        {
            let text = String::from_utf8_lossy(&text);
            let version = text
                .lines()
                .find_map(|l| l.strip_prefix("Version:"))
                .map(|v| common::field(v.trim()));
            h.packages.push((common::field(&name), version));
        } else {
            h.other += 1;
        }
    }
    Ok(h)
}

impl Held {
    /// Evidence lines (and the advice that goes with them).
    fn lines(&self, lock: &Path, library: &Path) -> Vec<String> {
        if self.packages.is_empty() && self.other == 0 && !self.staging {
            return vec![
                "it is empty: R had not copied a previously installed version into it (a first install, or the install had not got that far)".into(),
            ];
        }
        let mut out = Vec::new();
        for (pkg, version) in &self.packages {
            let v = version
                .as_deref()
                .map(|v| format!(" version {v}"))
                .unwrap_or_default();
            out.push(format!(
                "it holds the previously installed copy of package {pkg}{v}: R keeps it here while the new version is installed and restores it when an install fails; after a killed install this may be the only copy"
            ));
            out.push(format!(
                "to keep that version, move {} back to {} (if the library has no {pkg} now); otherwise reinstall {pkg}",
                crate::text::shell_quote(&common::field(&lock.join(pkg).to_string_lossy())),
                crate::text::shell_quote(&common::field(&library.join(pkg).to_string_lossy())),
            ));
        }
        if self.staging {
            out.push("it holds 00new/, where R stages the new version (incomplete until the install ends)".into());
        }
        if self.other > 0 {
            out.push(format!(
                "it also holds {} other entr{}",
                self.other,
                if self.other == 1 { "y" } else { "ies" }
            ));
        }
        out
    }
}

/// The directory a process was started in, from `PWD` in its environment (R changes its
/// working directory while it installs, so relative arguments are resolved against this too).
fn start_dir(pid: i32) -> Option<PathBuf> {
    let env = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
    env.split(|b| *b == 0)
        .find_map(|kv| kv.strip_prefix(b"PWD="))
        .map(|v| PathBuf::from(String::from_utf8_lossy(v).into_owned()))
}

/// Whether an R process works on `library` (or in `lock`): a command-line token naming it
/// (`-l LIB`, `--library=LIB`, and `R CMD INSTALL`'s `nextArg`-joined form; relative ones
/// against its working directory or the one it started in), or a working directory inside
/// either. `None`: its command line cannot be read.
fn works_on(p: &ProcSummary, library: &Path, lock: &Path) -> Option<bool> {
    if p.cmd.is_empty() {
        return None;
    }
    if let Some(cwd) = &p.cwd
        && (cwd.starts_with(lock) || cwd.starts_with(library))
    {
        return Some(true);
    }
    let bases: Vec<PathBuf> = p.cwd.iter().cloned().chain(start_dir(p.pid)).collect();
    let names = |t: &str| -> bool {
        let t = t.strip_prefix("--library=").unwrap_or(t);
        let t = t.trim_matches(|c| c == '\'' || c == '"');
        if t.is_empty() || t.starts_with('-') {
            return false;
        }
        let path = Path::new(t);
        let candidates: Vec<PathBuf> = if path.is_absolute() {
            vec![path.to_path_buf()]
        } else {
            bases.iter().map(|b| b.join(path)).collect()
        };
        candidates
            .into_iter()
            .filter_map(|c| std::fs::canonicalize(c).ok())
            .any(|r| r == library || r == lock)
    };
    Some(p.cmd.iter().any(|arg| arg.split("nextArg").any(names)))
}

impl Dialect for RInstall {
    fn id(&self) -> DialectId {
        DialectId::R_INSTALL
    }

    fn patterns(&self) -> &'static [&'static str] {
        PATTERNS
    }

    fn recognise(&self, c: &Candidate<'_>) -> bool {
        let name = c.file_name().as_encoded_bytes();
        c.kind == EntryKind::Dir && (name == b"00LOCK" || name.starts_with(b"00LOCK-"))
    }

    fn decide(&self, c: &Candidate<'_>, snap: &Snapshot, _windows: &Windows) -> Decision {
        if c.kind != EntryKind::Dir {
            return common::unparseable(
                "R install lock",
                format!("it is {}, not a directory", common::kind_name(c.kind)),
            )
            .into();
        }
        let lock = std::fs::canonicalize(c.path).unwrap_or_else(|_| c.path.to_path_buf());
        let library = lock.parent().unwrap_or(Path::new("/")).to_path_buf();
        let name = c.file_name().to_string_lossy().into_owned();
        let pkg = name.strip_prefix("00LOCK-").map(common::field);
        let what = match &pkg {
            Some(p) => format!(
                "R's install lock for package {p} in library {}",
                library.display()
            ),
            None => format!("R's whole-library install lock of {}", library.display()),
        };
        let held = held(&lock);
        let mut owner = Owner {
            detail: Some(common::field(&what)),
            ..Owner::default()
        };
        let held_lines = match &held {
            Ok(h) => {
                if let Some((p, v)) = h.packages.first() {
                    owner.detail = Some(format!(
                        "{}; holds the previous {p}{}",
                        common::field(&what),
                        v.as_deref().map(|v| format!(" {v}")).unwrap_or_default()
                    ));
                }
                h.lines(&lock, &library)
            }
            Err(e) => vec![format!("its content cannot be listed: {e}")],
        };
        let mut j = judge_library(c, snap, &lock, &library);
        j.evidence.extend(held_lines);
        Decision::owned(owner, j)
    }
}

/// Whether an R process works on the library (or inside the lock directory).
fn judge_library(c: &Candidate<'_>, snap: &Snapshot, lock: &Path, library: &Path) -> Judgement {
    let rs = support::running(snap, R_PROGRAMS);
    let mut blind = Vec::new();
    for p in &rs {
        match works_on(p, library, lock) {
            Some(true) => {
                return Judgement::new(
                    Verdict::Live,
                    format!(
                        "{} is working on this library: {}",
                        support::list_procs(&[p]),
                        crate::text::truncate(&p.cmd.join(" "), 120)
                    ),
                );
            }
            None => blind.push(*p),
            Some(false) => {}
        }
    }
    if let Some(p) = snap
        .processes()
        .iter()
        .find(|p| p.cwd.as_ref().is_some_and(|d| d.starts_with(lock)))
    {
        return Judgement::new(
            Verdict::Live,
            format!(
                "{} works inside the lock directory",
                support::list_procs(&[p])
            ),
        );
    }
    if !blind.is_empty() {
        return Judgement::new(
            Verdict::Unknown,
            format!(
                "{} runs and its command line cannot be read: it may be installing into this library",
                support::list_procs(&blind)
            ),
        );
    }
    if c.fs.network {
        return Judgement::new(
            Verdict::Foreign,
            format!(
                "on a network file system ({}): an R on another machine may be installing into this library",
                c.fs.kind
            ),
        );
    }
    if let Some(j) =
        support::openers_inconclusive(c.meta, snap, "no visible R process works on this library")
    {
        return j;
    }
    let others = if rs.is_empty() {
        "no R process runs".to_string()
    } else {
        format!(
            "{} run{}, none on this library",
            support::list_procs(&rs),
            if rs.len() == 1 { "s" } else { "" }
        )
    };
    Judgement::new(
            Verdict::Stale,
            format!("{others}: the install that made this directory is gone, and R refuses to install into the library while it exists"),
        )
        .because(support::age_line(c.meta, snap))
}
