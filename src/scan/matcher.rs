//! The file-name patterns of every dialect (plus configured extras) and the exclude globs,
//! compiled once per configuration into a few `GlobSet`s, so that the walker matches each
//! name against all dialects in one pass.
//!
//! A pattern containing `/` is matched against the whole (absolute) path, any other against
//! the file name. Whole-path patterns are pre-filtered by their last component, so the walker
//! builds a path only for names that may match.

use std::ffi::OsStr;
use std::path::Path;

use globset::{Candidate, Glob, GlobBuilder, GlobSet, GlobSetBuilder};
use serde::Deserialize;
use serde::de::{self, Deserializer};

use crate::dialect::{self, Dialect};

/// File-name patterns added to an existing dialect.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExtraPatterns {
    /// A dialect id (`pidfile`, `git`, ...).
    #[serde(deserialize_with = "dialect_id")]
    pub dialect: String,
    /// Globs; one containing `/` is matched against the whole path, else the file name.
    #[serde(deserialize_with = "globs")]
    pub patterns: Vec<String>,
}

/// Checks a dialect id as the configuration names it.
fn dialect_id<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    let id = String::deserialize(d)?;
    if dialect::by_id(&id).is_none() {
        let known: Vec<&str> = dialect::registry()
            .iter()
            .map(|d| d.id().as_str())
            .collect();
        return Err(de::Error::custom(format!(
            "unknown dialect {id:?} in extra_patterns (known dialects: {})",
            if known.is_empty() {
                "none".to_string()
            } else {
                known.join(", ")
            }
        )));
    }
    Ok(id)
}

/// Checks a list of globs as the configuration gives them.
pub(crate) fn globs<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    let v = Vec::<String>::deserialize(d)?;
    for p in &v {
        glob(p).map_err(|e| de::Error::custom(format!("bad glob {p:?}: {}", e.kind())))?;
    }
    Ok(v)
}

/// Compiles one glob the way the scanner uses it (`*` does not cross `/`, `\` escapes).
pub(crate) fn glob(p: &str) -> Result<Glob, globset::Error> {
    GlobBuilder::new(p)
        .literal_separator(true)
        .backslash_escape(true)
        .build()
}

/// Every pattern the scanner matches, compiled.
#[derive(Debug, Clone)]
pub struct Matcher {
    names: GlobSet,
    /// Dialect (registry index) of each pattern in `names`.
    name_owner: Vec<usize>,
    paths: GlobSet,
    path_owner: Vec<usize>,
    /// The last components of the whole-path patterns (a cheap pre-filter on the name).
    path_last: GlobSet,
    /// Some whole-path pattern ends in `**` (its last component filters nothing).
    path_any_last: bool,
    /// [`dialect::NOT_LOCKS`]: names that match lock patterns but are never locks.
    not_locks: GlobSet,
    exclude_names: GlobSet,
    exclude_paths: GlobSet,
}

impl Matcher {
    /// Compiles the patterns of `dialects` (hits are indices into it), `extra` (for those of
    /// `dialects` they name) and `exclude`.
    pub fn new(
        dialects: &[&'static dyn Dialect],
        extra: &[ExtraPatterns],
        exclude: &[String],
    ) -> Result<Self, globset::Error> {
        let mut owned: Vec<(usize, String)> = Vec::new();
        for (i, d) in dialects.iter().enumerate() {
            owned.extend(d.patterns().iter().map(|p| (i, (*p).to_string())));
        }
        for x in extra {
            if let Some(i) = dialects.iter().position(|d| d.id() == *x.dialect) {
                owned.extend(x.patterns.iter().map(|p| (i, p.clone())));
            }
        }
        let (mut names, mut paths, mut last) = (
            GlobSetBuilder::new(),
            GlobSetBuilder::new(),
            GlobSetBuilder::new(),
        );
        let (mut name_owner, mut path_owner) = (Vec::new(), Vec::new());
        let mut path_any_last = false;
        for (i, p) in &owned {
            if p.contains('/') {
                paths.add(glob(p)?);
                path_owner.push(*i);
                let tail = p.rsplit('/').next().unwrap_or("");
                if tail.is_empty() || tail.contains("**") {
                    path_any_last = true;
                } else {
                    last.add(glob(tail)?);
                }
            } else {
                names.add(glob(p)?);
                name_owner.push(*i);
            }
        }
        let (mut ex_names, mut ex_paths) = (GlobSetBuilder::new(), GlobSetBuilder::new());
        for p in exclude {
            if p.contains('/') {
                ex_paths.add(glob(p)?);
                // `DIR/**` excludes everything below DIR: do not even enter DIR.
                if let Some(dir) = p.strip_suffix("/**")
                    && !dir.is_empty()
                {
                    if dir.contains('/') {
                        ex_paths.add(glob(dir)?);
                    } else {
                        ex_names.add(glob(dir)?);
                    }
                }
            } else {
                ex_names.add(glob(p)?);
            }
        }
        Ok(Matcher {
            names: names.build()?,
            name_owner,
            paths: paths.build()?,
            path_owner,
            path_last: last.build()?,
            path_any_last,
            not_locks: {
                let mut b = GlobSetBuilder::new();
                for p in dialect::NOT_LOCKS {
                    b.add(glob(p)?);
                }
                b.build()?
            },
            exclude_names: ex_names.build()?,
            exclude_paths: ex_paths.build()?,
        })
    }

    /// Cheap test on a file name alone: may some dialect pattern match an entry with this
    /// name? (`false` means surely not.)
    pub fn may_match(&self, name: &OsStr) -> bool {
        let c = Candidate::new(Path::new(name));
        (self.names.is_match_candidate(&c) && !self.not_locks.is_match_candidate(&c))
            || (!self.paths.is_empty()
                && (self.path_any_last || self.path_last.is_match_candidate(&c)))
    }

    /// The dialects (registry indices, ascending, no duplicates) whose patterns match `path`.
    pub fn hits(&self, path: &Path) -> Vec<usize> {
        let mut out = Vec::new();
        if let Some(name) = path.file_name()
            && !self.not_locks.is_match(Path::new(name))
        {
            for i in self.names.matches(Path::new(name)) {
                out.push(self.name_owner[i]);
            }
        }
        if !self.paths.is_empty() {
            for i in self.paths.matches(path) {
                out.push(self.path_owner[i]);
            }
        }
        out.sort_unstable();
        out.dedup();
        out
    }

    /// Whether `path` is excluded by the configuration.
    pub fn excluded(&self, path: &Path) -> bool {
        let by_name = !self.exclude_names.is_empty()
            && path
                .file_name()
                .is_some_and(|n| self.exclude_names.is_match(Path::new(n)));
        by_name || (!self.exclude_paths.is_empty() && self.exclude_paths.is_match(path))
    }

    /// Whether any exclude is configured.
    pub fn has_excludes(&self) -> bool {
        !self.exclude_names.is_empty() || !self.exclude_paths.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dependency_lock_files_are_not_locks() {
        let m = Matcher::new(dialect::registry(), &[], &[]).unwrap();
        assert!(m.hits(Path::new("/src/app/Cargo.lock")).is_empty());
        assert!(m.hits(Path::new("/src/web/yarn.lock")).is_empty());
        assert!(!m.hits(Path::new("/src/app/app.lock")).is_empty());
        // A whole-path pattern still matches: a git ref named `Cargo` is locked as Cargo.lock.
        assert!(
            !m.hits(Path::new("/r/.git/refs/heads/Cargo.lock"))
                .is_empty()
        );
    }

    #[test]
    fn excludes_by_name_and_path() {
        let m = Matcher::new(
            &[],
            &[],
            &[
                "/proc".into(),
                "**/node_modules".into(),
                "**/build/**".into(),
                "*.tmpdir".into(),
            ],
        )
        .unwrap();
        assert!(m.excluded(Path::new("/proc")));

        assert!(!m.excluded(Path::new("/procx")));
        assert!(m.excluded(Path::new("/a/node_modules")));
        assert!(m.excluded(Path::new("/a/b/build")));
        assert!(m.excluded(Path::new("/a/b/build/x")));
        assert!(m.excluded(Path::new("/a/x.tmpdir")));
        assert!(!m.excluded(Path::new("/a/.git")));
    }
}
