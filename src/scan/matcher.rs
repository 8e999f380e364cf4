//! The file-name patterns of every dialect (plus configured extras) and the exclude globs,
//! compiled once per configuration into a few `GlobSet`s, so that the walker matches each
//! name against all dialects in one pass.
//!
//! A pattern containing `/` is matched against the whole (absolute) path, any other against
//! the file name. Whole-path patterns are pre-filtered by their last component, so the walker
//! builds a path only for names that may match.
//!
//! Before any glob is tried, a name must contain the literal text that one of the patterns
//! requires (the longest run of plain characters in each, [`required_literal`]), looked for
//! with one Aho-Corasick automaton: most names of a tree (source files, object stores) contain
//! none and are turned away in a single pass over their bytes.

use std::ffi::OsStr;
use std::path::Path;

use aho_corasick::AhoCorasick;
use globset::{Candidate, Glob, GlobBuilder, GlobSet, GlobSetBuilder};
use serde::Deserialize;
use serde::de::{self, Deserializer};

use crate::dialect::{self, Dialect};

/// File-name patterns added to an existing dialect.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct ExtraPatterns {
    /// A dialect id (`pidfile`, `flock`, ...).
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
    /// The literals the name patterns and the whole-path patterns' last components require:
    /// a name containing none of them matches none of them. `None` when some pattern
    /// requires no literal (then every name is tried).
    required: Option<AhoCorasick>,
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
        // The literal each name-level pattern requires; `None` once one requires none.
        let mut literals: Option<Vec<String>> = Some(Vec::new());
        let mut require = |name_glob: &str| match (&mut literals, required_literal(name_glob)) {
            (Some(v), Some(l)) => v.push(l),
            _ => literals = None,
        };
        for (i, p) in &owned {
            if p.contains('/') {
                paths.add(glob(p)?);
                path_owner.push(*i);
                let tail = p.rsplit('/').next().unwrap_or("");
                if tail.is_empty() || tail.contains("**") {
                    path_any_last = true;
                } else {
                    last.add(glob(tail)?);
                    require(tail);
                }
            } else {
                names.add(glob(p)?);
                name_owner.push(*i);
                require(p);
            }
        }
        let required = match literals {
            Some(mut v) if !path_any_last => {
                v.sort_unstable();
                v.dedup();
                // Only a set beyond the automaton's limits fails to build: then every name is
                // tried.
                AhoCorasick::new(v).ok()
            }
            _ => None,
        };
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
            required,
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
        if let Some(required) = &self.required
            && !required.is_match(name.as_encoded_bytes())
        {
            return false;
        }
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

/// The longest run of literal text that every name matching the glob `p` contains, if it has
/// one: the plain characters (or `\`-escaped ones) between its wildcards, classes and
/// alternations. Whatever is not surely literal ends a run, so the answer is never more than
/// the glob requires.
fn required_literal(p: &str) -> Option<String> {
    let (mut best, mut run) = (String::new(), String::new());
    let mut end_run = |run: &mut String| {
        if run.len() > best.len() {
            best = std::mem::take(run);
        }
        run.clear();
    };
    let mut chars = p.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some(e) => run.push(e),
                None => end_run(&mut run),
            },
            '[' => {
                end_run(&mut run);
                skip_class(&mut chars);
            }
            '{' => {
                end_run(&mut run);
                // An alternation: none of it is required (`\\` escapes inside it too).
                let mut depth = 1;
                while depth > 0 {
                    match chars.next() {
                        Some('\\') => {
                            chars.next();
                        }
                        Some('[') => skip_class(&mut chars),
                        Some('{') => depth += 1,
                        Some('}') => depth -= 1,
                        Some(_) => {}
                        None => break,
                    }
                }
            }
            '*' | '?' | ']' | '}' | ',' => end_run(&mut run),
            c => run.push(c),
        }
    }
    end_run(&mut run);
    (!best.is_empty()).then_some(best)
}

/// Skips the rest of a class after its `[`: `[!...]` or `[^...]` negates, a `]` first in it is
/// one of its characters, and there are no escapes inside.
fn skip_class(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    if matches!(chars.peek(), Some('!' | '^')) {
        chars.next();
    }
    if chars.peek() == Some(&']') {
        chars.next();
    }
    chars.find(|&k| k == ']');
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

    #[test]
    fn the_literal_a_glob_requires_is_its_longest_plain_run() {
        for (glob, want) in [
            ("*.lock", Some(".lock")),
            ("lock", Some("lock")),
            (".*.sw[a-p]", Some(".sw")),
            ("*authority-[cl]", Some("authority-")),
            ("__db.[0-9][0-9][0-9]", Some("__db.")),
            (".~lock.*#", Some(".~lock.")),
            (r"a\*b*c", Some("a*b")),
            ("[]x]yz", Some("yz")),
            ("[!]]q", Some("q")),
            ("{long,other}x", Some("x")),
            (r"{a\},xyz}b", Some("b")),
            ("{[}],xyz}b", Some("b")),
            ("*", None),
            ("?[ab]*", None),
            ("{lock,pid}", None),
        ] {
            assert_eq!(required_literal(glob).as_deref(), want, "{glob}");
        }
    }

    #[test]
    fn a_name_without_any_required_literal_is_turned_away_and_a_pattern_without_one_keeps_all() {
        let m = Matcher::new(dialect::registry(), &[], &[]).unwrap();
        assert!(m.required.is_some());
        for name in ["main.rs", "3f2a9c0d1e", "README.md", "pack-1.idx"] {
            assert!(!m.may_match(OsStr::new(name)), "{name}");
        }
        for name in [
            "job1.lock",
            ".main.rs.swp",
            ".#notes.org",
            "LCK..ttyS0",
            "held",
        ] {
            assert!(m.may_match(OsStr::new(name)), "{name}");
        }
        // An extra pattern with no literal of its own: every name is tried.
        let git = dialect::registry()
            .iter()
            .position(|d| d.id() == "git")
            .unwrap();
        let extra = [ExtraPatterns {
            dialect: "git".into(),
            patterns: vec!["?[0-9]*".into()],
        }];
        let m = Matcher::new(dialect::registry(), &extra, &[]).unwrap();
        assert!(m.required.is_none());
        assert!(m.may_match(OsStr::new("x1.rs")));
        assert!(m.hits(Path::new("/t/x1.rs")).contains(&git));
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]

        /// Whatever a glob matches contains the literal said to be required by it.
        #[test]
        fn every_name_a_glob_matches_contains_its_required_literal(
            parts in proptest::collection::vec(proptest::sample::select(vec![
                "a", "b", ".", "-", "*", "?", "[ab]", "[!a]", "[]a]", "{a,b.}", "{a\\},b}",
                "{[}],a}", "\\*", "\\[", "ab", "b.a",
            ]), 1..7),
            name in "[ab.\\-*\\[}\\]]{0,8}",
        ) {
            let p: String = parts.concat();
            let Ok(g) = glob(&p) else { return Ok(()) };
            if g.compile_matcher().is_match(&name) {
                if let Some(l) = required_literal(&p) {
                    proptest::prop_assert!(name.contains(&l), "{p:?} {name:?} {l:?}");
                }
            }
        }
    }
}
