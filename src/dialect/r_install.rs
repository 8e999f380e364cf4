//! `r-install`: the lock directories `R CMD INSTALL` (and so `install.packages()`) makes in
//! an R library: `00LOCK-<pkg>/` per package, or `00LOCK/` for the whole library
//! (`--lock`).
//!
//! Format, from R's `src/library/tools/R/install.R` (`.install_packages`): the directory is
//! made with `dir.create(lockdir)`; when the package is already installed, the installed
//! copy is copied into it (`file.copy(instdir, lockdir, recursive = TRUE)`) before the new
//! version replaces it, and on failure R restores it from there (`restoring previous
//! '<pkg>'`). The directory is removed when the install ends. R names no owner; it refuses
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

use super::message::Message;
use super::{Candidate, Dialect, DialectId, EntryKind, Windows, common};
use crate::judge::{Contract, Judgement, Placed, Said, Scope, When, Writers};
use crate::probe::Snapshot;
use crate::verdict::Owner;

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
pub fn held(dir: &Path, snap: &Snapshot) -> std::io::Result<Held> {
    let mut h = Held {
        packages: Vec::new(),
        other: 0,
        staging: false,
    };
    for (name, meta) in snap.list_dir(dir, 256)? {
        let desc = dir.join(&name).join("DESCRIPTION");
        if name == "00new" && meta.is_dir() {
            h.staging = true;
        } else if meta.is_dir()
            && let Some(text) = snap.read_small(&desc, 16 * 1024)
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

/// Whether a `00LOCK` directory is R's: it holds what R puts there (a previous version of a
/// package, its `00new` staging area) or nothing, and lies in an R library (a directory of
/// installed packages, each with its DESCRIPTION), or holds a package itself.
fn r_placed(
    held: &std::io::Result<Held>,
    library: &Path,
    snap: &Snapshot,
) -> Result<Placed, String> {
    let h = held
        .as_ref()
        .map_err(|e| format!("its content cannot be listed ({e})"))?;
    if h.other > 0 && h.packages.is_empty() && !h.staging {
        return Err("it holds what R never puts in its install lock".into());
    }
    let installed = snap
        .list_dir(library, 64)
        .unwrap_or_default()
        .iter()
        .filter(|(n, m)| m.is_dir() && !n.starts_with("00LOCK"))
        .any(|(n, _)| {
            snap.lstat(&library.join(n).join("DESCRIPTION"))
                .is_ok_and(|m| m.is_file())
        });
    if !installed && h.packages.is_empty() {
        return Err(format!(
            "{} is no R library (no installed package with a DESCRIPTION in it)",
            common::field(&library.to_string_lossy())
        ));
    }
    Ok(Placed::by(format!(
        "R's install lock directory (empty, or a previous version of a package, or its 00new) in the R library {}",
        common::field(&library.to_string_lossy())
    )))
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

/// The directories an R command line names: the library of `R CMD INSTALL -l LIB`,
/// `--library=LIB`, and `lib =` arguments of an `install.packages` expression.
fn named_libraries(cmd: &[String]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for arg in cmd.iter().skip(1) {
        for t in arg.split("nextArg") {
            let t = t.strip_prefix("--library=").unwrap_or(t);
            let t = t.trim_matches(|c| c == '\'' || c == '"');
            if !t.is_empty() && !t.starts_with('-') {
                out.push(PathBuf::from(t));
            }
        }
    }
    out
}

/// What `R CMD INSTALL` prints when a library's lock directory is there (in `‘’` quotes in a
/// UTF-8 locale, `''` otherwise).
const MESSAGES: &[Message] = &[
    Message::en(
        "R",
        r"Try removing ['‘](?P<path>[^'’\n]+)['’]",
        &["{path}"],
        "Try removing ‘/home/me/R/library/00LOCK-tinypkg’",
    ),
    Message::en(
        "R",
        r"failed to lock directory ['‘](?P<dir>[^'’\n]+)['’] for modifying",
        &["{dir}/00LOCK*"],
        "ERROR: failed to lock directory '/home/me/R/library' for modifying",
    ),
];

impl Dialect for RInstall {
    fn id(&self) -> DialectId {
        DialectId::R_INSTALL
    }

    fn about(&self) -> super::About {
        super::About {
            writer: "R (`R CMD INSTALL`, `install.packages()`)",
            programs: &["rscript"],
            found_as: "`00LOCK-<pkg>/` and `00LOCK/` directories in an R library; they may hold the previously installed version of the package",
            judged_by: "R's condition: an `R`/`Rscript` whose command line names that library (or working in it): live; none: stale. The evidence says what the directory holds and how to move it back",
            rules: &["writer-absent"],
            source: Some("R `src/library/tools/R/install.R`"),
        }
    }

    fn patterns(&self) -> &'static [&'static str] {
        PATTERNS
    }

    fn messages(&self) -> &'static [Message] {
        MESSAGES
    }

    fn recognise(&self, c: &Candidate<'_>, _snap: &Snapshot) -> bool {
        let name = c.file_name().as_encoded_bytes();
        c.kind == EntryKind::Dir && (name == b"00LOCK" || name.starts_with(b"00LOCK-"))
    }

    fn read(&self, c: &Candidate<'_>, snap: &Snapshot, _windows: &Windows) -> Said {
        if c.kind != EntryKind::Dir {
            return Said::unparseable(
                "R install lock",
                format!("it is {}, not a directory", common::kind_name(c.kind)),
            );
        }
        let lock = snap
            .canonical(c.path)
            .unwrap_or_else(|| c.path.to_path_buf());
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
        let held = held(&lock, snap);
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
        let placed = match r_placed(&held, &library, snap) {
            Ok(p) => p,
            Err(why) => {
                return Judgement::unknown(format!(
                    "named like R's install lock, but {why}: whose it is cannot be told"
                ))
                .into();
            }
        };
        let mut said = Said::claims(owner).claim(Contract {
            placed,
            writer: Writers::named(R_PROGRAMS),
            what: "R",
            at: format!("the library {}", common::field(&library.to_string_lossy())),
            says: "R's own message: \"ERROR: failed to lock directory ... for modifying; try removing\" it (`R CMD INSTALL` holds it only while it installs into that library)".into(),
            place: lock.clone(),
            scope: Scope::Dirs {
                dirs: vec![library.clone(), lock.clone()],
                named: named_libraries,
                env: &["R_LIBS", "R_LIBS_USER"],
            },
            min_hold_ms: 2_000,
        });
        for line in held_lines {
            said = said.note(When::Always, line);
        }
        said
    }
}
