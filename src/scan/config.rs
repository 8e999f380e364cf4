//! The scanner's settings: which roots to walk (and how deep), which paths to skip, the name
//! patterns of the dialects (with the configuration's extra ones), the dialects' stale windows,
//! whether running containers' lock places are scanned, and the directory the walker never
//! enters (locksmith's state directory).
//!
//! A [`Config`] is checked and complete when it exists: its patterns are compiled once, by
//! [`Config::new`], and it cannot be changed afterwards. It is made from the configuration
//! files by [`crate::config::RawConfig::validate`], which gives the other layers their own
//! settings beside it.

use std::collections::HashSet;
use std::fmt;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use serde::Deserialize;

use super::matcher::{ExtraPatterns, Matcher};
use crate::dialect::{Dialect, Windows};
use crate::probe::fs;
use crate::probe::reach::{self, Reached};

/// One directory (or file) to scan.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Root {
    /// Absolute path.
    pub path: PathBuf,
    /// How deep to walk below `path`: 1 = only its direct entries; `None` = no limit.
    pub max_depth: Option<usize>,
}

/// A root as written in the configuration, before expansion.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RootSpec {
    /// A path; `~` (home), `$VAR`/`${VAR}` (environment) and relative paths (to the current
    /// directory) are expanded when the scan starts.
    pub path: String,
    #[serde(default)]
    pub max_depth: Option<usize>,
}

/// What the scanner is told, before its patterns are compiled (see [`Config::new`]).
#[derive(Clone)]
pub struct Spec {
    /// The configured roots, before expansion (see [`Config::roots`]).
    pub roots: Vec<RootSpec>,
    /// Globs of paths not to walk; one containing `/` is matched against the whole path, else
    /// the file name. `DIR/**` also keeps the walker out of `DIR` itself. A root is never
    /// excluded.
    pub exclude: Vec<String>,
    /// More file-name patterns for existing dialects.
    pub extra_patterns: Vec<ExtraPatterns>,
    pub windows: Windows,
    /// The dialects to recognise, in the order they are tried.
    pub dialects: &'static [&'static dyn Dialect],
    /// Also scan the lock places of running containers (the absolute configured roots,
    /// through `/proc/<pid>/root`).
    pub containers: bool,
    /// A directory never walked (locksmith's state directory, where removed locks are kept).
    pub never_walk: Option<PathBuf>,
}

/// The scanner's settings, checked, with their patterns compiled (see the module docs).
#[derive(Debug, Clone)]
pub struct Config {
    pub(super) roots: Vec<RootSpec>,
    pub(super) windows: Windows,
    pub(super) containers: bool,
    pub(super) never_walk: Option<PathBuf>,
    dialects: Dialects,
    pub(super) matcher: Arc<Matcher>,
}

/// A list of dialects (shown by id).
#[derive(Clone, Copy)]
struct Dialects(&'static [&'static dyn Dialect]);

impl fmt::Debug for Dialects {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.0.iter().map(|d| d.id()))
            .finish()
    }
}

impl Config {
    /// Compiles the patterns of `spec` (the dialects' own, the extra ones, the excludes): an
    /// error names the pattern that does not compile.
    pub fn new(spec: Spec) -> Result<Config, globset::Error> {
        let matcher = Matcher::new(spec.dialects, &spec.extra_patterns, &spec.exclude)?;
        Ok(Config {
            roots: spec.roots,
            windows: spec.windows,
            containers: spec.containers,
            never_walk: spec.never_walk,
            dialects: Dialects(spec.dialects),
            matcher: Arc::new(matcher),
        })
    }

    /// The roots to scan. PATH arguments (`paths`) replace the configured roots: each is made
    /// absolute (a final symlink is not followed unless it names a directory) and kept even if
    /// it does not exist, so the scan reports it. Otherwise the configured roots are expanded
    /// (`~`, `$VAR`, the current directory), canonicalized, and those missing, unreadable or
    /// naming an unset variable are skipped. Duplicates are dropped, and so is a root that another one
    /// already covers at its depth.
    pub fn roots(&self, paths: &[PathBuf]) -> Vec<Root> {
        let roots: Vec<Root> = if paths.is_empty() {
            self.roots
                .iter()
                .filter_map(|spec| {
                    let path = expand(&spec.path)?;
                    let root = |path| Root {
                        path,
                        max_depth: spec.max_depth,
                    };
                    let (path, dir, local) = match resolved(&path) {
                        Ok(r) => r?,
                        // Kept: the walk reports the mount that does not answer.
                        Err(_) => return Some(root(path)),
                    };
                    // Asked only where asking cannot wait on a server.
                    (!local || readable(&path, dir)).then(|| root(path))
                })
                .collect()
        } else {
            paths
                .iter()
                .map(|p| Root {
                    path: absolute(p),
                    max_depth: None,
                })
                .collect()
        };
        prune_roots(roots)
    }

    /// The dialects recognised, in the order they are tried.
    pub fn dialects(&self) -> &'static [&'static dyn Dialect] {
        self.dialects.0
    }

    /// The stale windows the dialects judge with.
    pub fn windows(&self) -> &Windows {
        &self.windows
    }

    /// Whether the lock places of running containers are scanned too.
    pub fn containers(&self) -> bool {
        self.containers
    }
}

/// Whether we may list this directory (or read this file).
fn readable(path: &Path, dir: bool) -> bool {
    use rustix::fs::Access;
    let want = if dir {
        Access::READ_OK | Access::EXEC_OK
    } else {
        Access::READ_OK
    };
    rustix::fs::access(path, want).is_ok()
}

pub(crate) fn home() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
}

/// Expands `~`, `$VAR` and `${VAR}`, and makes the path absolute. `None` when a variable (or
/// the home directory) is unset or empty.
pub fn expand(spec: &str) -> Option<PathBuf> {
    let mut out = String::new();
    let rest = if spec == "~" || spec.starts_with("~/") {
        out.push_str(home()?.to_str()?);
        &spec[1..]
    } else {
        spec
    };
    let mut chars = rest.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if c != '$' {
            out.push(c);
            continue;
        }
        let (name, end) = if rest[i + 1..].starts_with('{') {
            let close = rest[i + 2..].find('}')? + i + 2;
            (&rest[i + 2..close], close + 1)
        } else {
            let len = rest[i + 1..]
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(rest.len() - i - 1);
            (&rest[i + 1..i + 1 + len], i + 1 + len)
        };
        if name.is_empty() {
            out.push('$');
            continue;
        }
        let value = std::env::var(name).ok().filter(|v| !v.is_empty())?;
        out.push_str(&value);
        while chars.peek().is_some_and(|(j, _)| *j < end) {
            chars.next();
        }
    }
    if out.is_empty() {
        return None;
    }
    Some(absolute(Path::new(&out)))
}

/// An absolute form of `p` without following a final symlink unless it names a directory:
/// the parent is canonicalized when it exists, else `p` is joined to the current directory.
///
/// The rule for a root given as a symlink, the same with or without a trailing `/`: a symlink
/// to a directory is resolved here, once, and the directory it names is scanned (the report
/// shows that directory as the root); a symlink to anything else is the lock itself (some
/// editors' and browsers' locks are symlinks) and is never followed. Nothing below a root is ever followed.
///
/// Nothing here waits on a mount that does not answer: the path is resolved by [`reach`]
/// (through local mounts by locksmith itself, one `openat2` for a plain path; onto a mount that
/// may hang, by a bounded task), and left as written when its mount does not answer (the walk
/// then reports that mount).
pub fn absolute(p: &Path) -> PathBuf {
    // `components` drops a trailing `/`, which would otherwise make lstat follow the link.
    let p: PathBuf = p.components().collect();
    let joined = if p.is_absolute() {
        p
    } else {
        std::env::current_dir().map(|d| d.join(&p)).unwrap_or(p)
    };
    let last_is_name = matches!(joined.components().next_back(), Some(Component::Normal(_)));
    let parent_real = |joined: PathBuf| match (joined.parent(), joined.file_name()) {
        (Some(parent), Some(name)) => match reach::probe(parent) {
            Ok(Some(a)) => a.real.map_or(joined.clone(), |d| d.join(name)),
            _ => joined,
        },
        _ => joined,
    };
    match reach::probe(&joined) {
        Ok(Some(a)) => {
            use rustix::fs::FileType;
            let is_link = FileType::from_raw_mode(a.mode) == FileType::Symlink;
            let to_dir = FileType::from_raw_mode(a.target_mode) == FileType::Directory;
            if !last_is_name || !is_link || to_dir {
                // Not a link (its real path is its parent's, and its name), or a link to a
                // directory: where it leads.
                return a.real.unwrap_or(joined);
            }
            parent_real(joined)
        }
        // Missing, or a link that leads nowhere: the name in its parent's canonical form.
        Ok(None) if last_is_name => parent_real(joined),
        Ok(None) | Err(_) => joined,
    }
}

/// The canonical form of `path` (every symlink followed), whether it is a directory, and
/// whether it lies on local mounts all the way (so that asking it more cannot wait on a
/// server), without waiting on a mount that does not answer: `Ok(None)` when it does not
/// exist (or cannot be resolved), `Err` when the mount it leads onto did not answer.
fn resolved(path: &Path) -> Result<Option<(PathBuf, bool, bool)>, fs::NotAnswering> {
    use rustix::fs::FileType;
    let is_dir = |mode: u32| FileType::from_raw_mode(mode) == FileType::Directory;
    match reach::reach(path, true) {
        Ok(Reached::Here(fd, real)) => {
            // `st_mode` is of another width on some systems.
            #[allow(clippy::unnecessary_cast)]
            let dir = rustix::fs::fstat(&fd).is_ok_and(|st| is_dir(st.st_mode as u32));
            Ok(Some((real, dir, true)))
        }
        Ok(Reached::Missing) | Err(_) => Ok(None),
        Ok(Reached::Away(..)) => {
            Ok(reach::probe(path)?.and_then(|a| Some((a.real?, is_dir(a.target_mode), false))))
        }
    }
}

/// Drops duplicate roots and roots another root covers completely (same or ancestor path,
/// walked at least as deep).
fn prune_roots(roots: Vec<Root>) -> Vec<Root> {
    let mut out: Vec<Root> = Vec::new();
    let mut seen = HashSet::new();
    for r in roots {
        if seen.insert(r.clone()) {
            out.push(r);
        }
    }
    let covered = |inner: &Root, outer: &Root| -> bool {
        let Ok(rel) = inner.path.strip_prefix(&outer.path) else {
            return false;
        };
        let below = rel.components().count();
        match (outer.max_depth, inner.max_depth) {
            (None, _) => true,
            (Some(_), None) => false,
            (Some(o), Some(i)) => below + i <= o,
        }
    };
    let mut keep = vec![true; out.len()];
    for i in 0..out.len() {
        for j in 0..out.len() {
            if i != j && keep[j] && covered(&out[i], &out[j]) {
                // Of two roots covering each other (same path, same depth) keep the first.
                if covered(&out[j], &out[i]) && j > i {
                    continue;
                }
                keep[i] = false;
                break;
            }
        }
    }
    out.into_iter()
        .zip(keep)
        .filter_map(|(r, k)| k.then_some(r))
        .collect()
}

impl fmt::Display for Root {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.max_depth {
            Some(d) => write!(f, "{} (depth {d})", self.path.display()),
            None => write!(f, "{}", self.path.display()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expands_variables_and_home() {
        let home = home().unwrap();
        assert_eq!(expand("~/x").unwrap(), absolute(&home.join("x")));
        assert_eq!(expand("$HOME/y").unwrap(), absolute(&home.join("y")));
        assert_eq!(expand("${HOME}/z").unwrap(), absolute(&home.join("z")));
        assert_eq!(expand("$LOCKSMITH_SURELY_UNSET_VARIABLE/x"), None);
        assert_eq!(expand("/a$/b").unwrap(), PathBuf::from("/a$/b"));
    }

    #[test]
    fn a_root_symlink_to_a_directory_is_resolved_with_or_without_a_slash() {
        let t = tempfile::tempdir().unwrap();
        let real = std::fs::canonicalize(t.path()).unwrap().join("real");
        std::fs::create_dir(&real).unwrap();
        std::fs::write(real.join("a.pid"), "1\n").unwrap();
        let link = t.path().join("link");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let file_link = t.path().join("f.pid");
        std::os::unix::fs::symlink(real.join("a.pid"), &file_link).unwrap();
        assert_eq!(absolute(&link), real);
        let mut slash = link.into_os_string();
        slash.push("/");
        assert_eq!(absolute(Path::new(&slash)), real);
        assert_eq!(
            absolute(&file_link),
            std::fs::canonicalize(t.path()).unwrap().join("f.pid")
        );
    }

    #[test]
    fn prunes_covered_roots() {
        let r = |p: &str, d: Option<usize>| Root {
            path: p.into(),
            max_depth: d,
        };
        let got = prune_roots(vec![
            r("/a", None),
            r("/a/b", Some(2)),
            r("/t", Some(2)),
            r("/t/x", Some(1)),
            r("/t/y", Some(3)),
            r("/t", Some(2)),
            r("/c", Some(1)),
            r("/c", None),
        ]);
        assert_eq!(
            got,
            vec![
                r("/a", None),
                r("/t", Some(2)),
                r("/t/y", Some(3)),
                r("/c", None)
            ]
        );
    }
}
