//! Where a message's lock is: a place template of [`crate::dialect::Message`] expanded with
//! what the message captured and the environment ([`Context`]) into a [`Place`], an absolute
//! path whose components are either plain names or globs. A place is then found on disk
//! ([`Place::find`]: a bounded listing of each directory a glob is in, never on a mount that
//! may hang) or matched against paths already known ([`Place::matches`], for the terminal UI,
//! which touches no file system).
//!
//! Invariant: text from the message or the environment is never read as a pattern: only the
//! template's own text may hold glob characters.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

/// What a template is expanded in: the current directory, the home directory and the
/// environment of the person who saw the message.
#[derive(Debug, Clone, Default)]
pub struct Context {
    pub cwd: PathBuf,
    pub home: Option<PathBuf>,
    vars: BTreeMap<String, String>,
}

impl Context {
    /// This process's: its working directory, `$HOME` and environment (variables whose value
    /// is not UTF-8 are left out).
    pub fn current() -> Context {
        Context::new(
            std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/")),
            std::env::vars_os()
                .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?))),
        )
    }

    /// A context of `cwd` and these variables (`HOME` among them names the home directory).
    pub fn new(cwd: PathBuf, vars: impl IntoIterator<Item = (String, String)>) -> Context {
        let vars: BTreeMap<String, String> = vars.into_iter().collect();
        let home = vars
            .get("HOME")
            .filter(|h| h.starts_with('/'))
            .map(PathBuf::from);
        Context { cwd, home, vars }
    }

    /// A variable's value, when it is set and not empty.
    pub fn var(&self, name: &str) -> Option<&str> {
        self.vars
            .get(name)
            .map(String::as_str)
            .filter(|v| !v.is_empty())
    }
}

/// One component of a place: a name, or a glob (its pattern text, the literal parts escaped).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Part {
    /// The text as it reads (glob characters of the template kept as they are).
    raw: String,
    /// The glob of it, its literal parts escaped.
    glob: String,
    /// Whether the template put glob characters in it.
    wild: bool,
}

/// An absolute path pattern: where a lock may be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    parts: Vec<Part>,
}

/// At most this many entries of one directory are read to match a glob.
const LIST_LIMIT: usize = 10_000;
/// At most this many paths are found for one place.
const FOUND_LIMIT: usize = 64;

impl Place {
    /// The place as a person reads it (`/home/me/.gnupg/*.lock`).
    pub fn display(&self) -> String {
        let mut s = String::new();
        for p in &self.parts {
            s.push('/');
            s.push_str(&p.raw);
        }
        if s.is_empty() { "/".into() } else { s }
    }

    /// Whether the place is one path (no glob in it).
    pub fn literal(&self) -> bool {
        self.parts.iter().all(|p| !p.wild)
    }

    /// The path, for a place without a glob.
    pub fn path(&self) -> Option<PathBuf> {
        self.literal().then(|| PathBuf::from(self.display()))
    }

    /// Whether `path` (absolute, as a scan reports it) is this place.
    pub fn matches(&self, path: &Path) -> bool {
        let names: Vec<String> = path
            .components()
            .filter_map(|c| match c {
                Component::Normal(n) => Some(n.to_string_lossy().into_owned()),
                _ => None,
            })
            .collect();
        names.len() == self.parts.len()
            && self.parts.iter().zip(&names).all(|(p, n)| {
                if p.wild {
                    glob(&p.glob).is_some_and(|g| g.is_match(n))
                } else {
                    p.raw == *n
                }
            })
    }

    /// The paths on disk this place names, in name order: a place without a glob is its one
    /// path (whether it exists is for the caller to find out: judging it says so); a glob is
    /// matched against a bounded listing of its directory, never on a mount that may hang.
    pub fn find(&self) -> Vec<PathBuf> {
        if let Some(p) = self.path() {
            return vec![p];
        }
        let mounts = crate::probe::fs::MountTable::recent();
        let mut found = vec![PathBuf::from("/")];
        for part in &self.parts {
            let mut next = Vec::new();
            for base in &found {
                if !part.wild {
                    next.push(base.join(&part.raw));
                    continue;
                }
                if mounts.of_path(base).is_some_and(|m| m.may_hang()) {
                    continue;
                }
                let Some(g) = glob(&part.glob) else { continue };
                let Ok(entries) = std::fs::read_dir(base) else {
                    continue;
                };
                let mut names: Vec<PathBuf> = entries
                    .take(LIST_LIMIT)
                    .filter_map(Result::ok)
                    .filter(|e| g.is_match(e.file_name()))
                    .map(|e| e.path())
                    .collect();
                names.sort();
                next.extend(names);
            }
            next.truncate(FOUND_LIMIT);
            found = next;
        }
        found
            .into_iter()
            .filter(|p| std::fs::symlink_metadata(p).is_ok())
            .collect()
    }
}

fn glob(pattern: &str) -> Option<globset::GlobMatcher> {
    globset::GlobBuilder::new(pattern)
        .literal_separator(true)
        .backslash_escape(true)
        .build()
        .ok()
        .map(|g| g.compile_matcher())
}

/// The places of `template` (see [`crate::dialect::message`]) with these captures, in this
/// context: one, or (for a template that starts with `^`) one per directory from the current
/// one up to the root. None when a capture or variable it names is missing.
pub fn expand(
    template: &str,
    captures: &BTreeMap<&'static str, String>,
    ctx: &Context,
) -> Vec<Place> {
    let (up, template) = match template.strip_prefix('^') {
        Some(t) => (true, t),
        None => (false, template),
    };
    let Some(rel) = expand_parts(template, captures, ctx) else {
        return Vec::new();
    };
    if rel.absolute {
        return vec![normal(rel.parts)];
    }
    let bases: Vec<&Path> = if up {
        ctx.cwd.ancestors().collect()
    } else {
        vec![ctx.cwd.as_path()]
    };
    bases
        .into_iter()
        .map(|base| {
            let mut parts = literal_parts(&base.to_string_lossy());
            parts.extend(rel.parts.iter().cloned());
            normal(parts)
        })
        .collect()
}

/// A template expanded: its components, and whether it is absolute.
struct Expanded {
    parts: Vec<Part>,
    absolute: bool,
}

impl Expanded {
    fn new() -> Self {
        Expanded {
            parts: vec![Part::empty()],
            absolute: false,
        }
    }

    /// Appends text: `literal` text of a value (escaped in the glob), or the template's own.
    fn push(&mut self, text: &str, literal: bool) {
        for (i, piece) in text.split('/').enumerate() {
            if i > 0 {
                self.parts.push(Part::empty());
            }
            let last = self.parts.last_mut().expect("never empty");
            last.raw.push_str(piece);
            if literal {
                last.glob.push_str(&globset::escape(piece));
            } else {
                last.glob.push_str(piece);
                last.wild |= piece.contains(['*', '?', '[']);
            }
        }
    }

    /// Appends a value (a capture or a variable): an absolute one replaces what came before.
    fn value(&mut self, value: &str) {
        if value.starts_with('/') {
            *self = Expanded::new();
            self.absolute = true;
        }
        self.push(value, true);
    }
}

impl Part {
    fn empty() -> Part {
        Part {
            raw: String::new(),
            glob: String::new(),
            wild: false,
        }
    }
}

fn literal_parts(path: &str) -> Vec<Part> {
    let mut e = Expanded::new();
    e.push(path, true);
    e.parts
}

/// Drops empty and `.` components and resolves `..` (by name: the place is only where to
/// look).
fn normal(parts: Vec<Part>) -> Place {
    let mut out: Vec<Part> = Vec::new();
    for p in parts {
        match p.raw.as_str() {
            "" | "." if !p.wild => {}
            ".." if !p.wild => {
                out.pop();
            }
            _ => out.push(p),
        }
    }
    Place { parts: out }
}

fn expand_parts(
    template: &str,
    captures: &BTreeMap<&'static str, String>,
    ctx: &Context,
) -> Option<Expanded> {
    let mut e = Expanded::new();
    e.absolute = template.starts_with('/');
    let mut rest = template;
    if let Some(r) = rest.strip_prefix("~/") {
        e.value(&ctx.home.as_ref()?.to_string_lossy());
        e.push("/", false);
        rest = r;
    }
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('{') {
            let end = r.find('}')?;
            let (name, filter) = match r[..end].split_once(':') {
                Some((n, f)) => (n, Some(f)),
                None => (&r[..end], None),
            };
            let value = tilde(captures.get(name)?, ctx)?;
            let value = match filter {
                None => value,
                Some("dir") => {
                    let p = Path::new(&value);
                    match p.parent() {
                        Some(d) if !d.as_os_str().is_empty() => d.to_string_lossy().into_owned(),
                        _ => ".".into(),
                    }
                }
                Some("name") => Path::new(&value)
                    .file_name()?
                    .to_string_lossy()
                    .into_owned(),
                Some(_) => return None,
            };
            e.value(&value);
            rest = &r[end + 1..];
        } else if let Some(r) = rest.strip_prefix('$') {
            let (name, after) = match r.strip_prefix('{') {
                Some(b) => {
                    let end = b.find('}')?;
                    (&b[..end], &b[end + 1..])
                }
                None => {
                    let end = r
                        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                        .unwrap_or(r.len());
                    (&r[..end], &r[end..])
                }
            };
            let value = tilde(ctx.var(name)?, ctx)?;
            e.value(&value);
            rest = after;
        } else {
            let end = rest.find(['{', '$']).unwrap_or(rest.len());
            e.push(&rest[..end], false);
            rest = &rest[end..];
        }
    }
    Some(e)
}

/// A value with a leading `~` or `~user` expanded (as vim and shells write home
/// directories); `None` when that home is not known.
fn tilde(value: &str, ctx: &Context) -> Option<String> {
    let Some(rest) = value.strip_prefix('~') else {
        return Some(value.to_string());
    };
    let (user, tail) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let home = if user.is_empty() {
        ctx.home.clone()?
    } else {
        home_of(user)?
    };
    Some(format!("{}{tail}", home.display()))
}

/// A user's home directory, from `/etc/passwd` (the first 1 MiB of it).
fn home_of(user: &str) -> Option<PathBuf> {
    use std::io::Read;
    let mut text = String::new();
    std::fs::File::open("/etc/passwd")
        .ok()?
        .take(1 << 20)
        .read_to_string(&mut text)
        .ok()?;
    text.lines().find_map(|l| {
        let f: Vec<&str> = l.split(':').collect();
        (f.len() >= 7 && f[0] == user && f[5].starts_with('/')).then(|| PathBuf::from(f[5]))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx() -> Context {
        Context::new(
            "/work/app/src".into(),
            [
                ("HOME".to_string(), "/home/me".to_string()),
                ("PGDATA".to_string(), "/srv/pg".to_string()),
                ("EMPTY".to_string(), String::new()),
            ],
        )
    }

    fn caps(pairs: &[(&'static str, &str)]) -> BTreeMap<&'static str, String> {
        pairs.iter().map(|(k, v)| (*k, v.to_string())).collect()
    }

    fn shown(t: &str, c: &[(&'static str, &str)]) -> Vec<String> {
        expand(t, &caps(c), &ctx())
            .iter()
            .map(Place::display)
            .collect()
    }

    #[test]
    fn captures_variables_and_home_make_absolute_places() {
        assert_eq!(
            shown(
                "{dir}/{path}",
                &[("dir", "/srv/db"), ("path", "postmaster.pid")]
            ),
            ["/srv/db/postmaster.pid"]
        );
        // An absolute capture replaces what came before it.
        assert_eq!(
            shown(
                "{dir}/{path}",
                &[("dir", "/srv/db"), ("path", "/run/pg/.s.PGSQL.5432.lock")]
            ),
            ["/run/pg/.s.PGSQL.5432.lock"]
        );
        assert_eq!(
            shown("$PGDATA/{path}", &[("path", "postmaster.pid")]),
            ["/srv/pg/postmaster.pid"]
        );
        // Relative: in the current directory.
        assert_eq!(
            shown("{path}", &[("path", ".notes.txt.swp")]),
            ["/work/app/src/.notes.txt.swp"]
        );
        assert_eq!(shown("~/.gnupg/*.lock", &[]), ["/home/me/.gnupg/*.lock"]);
        // vim's `~` and its `//` swap directories.
        assert_eq!(
            shown("{path}", &[("path", "~/.vim/swap//%tmp%x.swp")]),
            ["/home/me/.vim/swap/%tmp%x.swp"]
        );
        assert_eq!(
            shown(
                "{file:dir}/{path:name}",
                &[("file", "~/notes/a.txt"), ("path", ".a.txt.swp")]
            ),
            ["/home/me/notes/.a.txt.swp"]
        );
        assert_eq!(
            shown(
                "{file:dir}/.{file:name}.lock.info",
                &[("file", "terraform.tfstate")]
            ),
            ["/work/app/src/.terraform.tfstate.lock.info"]
        );
        assert_eq!(
            shown("/tmp/.X{display}-lock", &[("display", "7")]),
            ["/tmp/.X7-lock"]
        );
        assert_eq!(shown("{dir}/../x", &[("dir", "/a/b")]), ["/a/x"]);
    }

    #[test]
    fn a_missing_capture_or_variable_skips_the_place() {
        assert!(shown("{dir}/postmaster.pid", &[]).is_empty());
        assert!(shown("$NOPE/x", &[]).is_empty());
        assert!(shown("$EMPTY/x", &[]).is_empty());
        assert!(shown("{path:bogus}", &[("path", "x")]).is_empty());
    }

    #[test]
    fn a_caret_looks_in_every_directory_above() {
        assert_eq!(
            shown("^target/*/.cargo-lock", &[]),
            [
                "/work/app/src/target/*/.cargo-lock",
                "/work/app/target/*/.cargo-lock",
                "/work/target/*/.cargo-lock",
                "/target/*/.cargo-lock"
            ]
        );
    }

    #[test]
    fn captured_text_is_never_a_pattern() {
        let p = &expand("{path}", &caps(&[("path", "/tmp/[ab]*.lock")]), &ctx())[0];
        assert!(p.literal());
        assert!(p.matches(Path::new("/tmp/[ab]*.lock")));
        assert!(!p.matches(Path::new("/tmp/a1.lock")));
        let p = &expand("{file}.tmp.*", &caps(&[("file", "/s/ma*n.shada")]), &ctx())[0];
        assert!(!p.literal());
        assert!(p.matches(Path::new("/s/ma*n.shada.tmp.a")));
        assert!(!p.matches(Path::new("/s/maXn.shada.tmp.a")));
        assert!(!p.matches(Path::new("/s/ma*n.shada.tmp.a/b")));
    }

    #[test]
    fn a_glob_is_found_in_its_directory() {
        let dir = tempfile::tempdir().unwrap();
        for n in ["pubring.kbx.lock", "trustdb.gpg.lock", "pubring.kbx"] {
            std::fs::write(dir.path().join(n), "").unwrap();
        }
        let ctx = Context::new(dir.path().to_path_buf(), []);
        let found = expand("*.lock", &BTreeMap::new(), &ctx)[0].find();
        assert_eq!(
            found,
            [
                dir.path().join("pubring.kbx.lock"),
                dir.path().join("trustdb.gpg.lock")
            ]
        );
        let none = expand("nowhere/*.lock", &BTreeMap::new(), &ctx)[0].find();
        assert!(none.is_empty());
    }
}
