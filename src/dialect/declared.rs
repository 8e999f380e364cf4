//! Declared dialects: lock formats a user teaches locksmith in the configuration, without
//! code. A declaration gives a name, file-name patterns, the format (a PID on line N and a
//! host on line M; JSON keys for the PID, host and time; or a kernel lock only), the
//! programs that may own the lock, and optionally a stale window:
//!
//! ```json
//! "dialects": [{
//!   "name": "nightly-backup",
//!   "patterns": ["*.backup-lock"],
//!   "format": { "lines": { "pid": 1, "host": 2 } },
//!   "programs": ["backup.sh", "bash"],
//!   "stale_after_secs": 3600
//! }]
//! ```
//!
//! A declared dialect is judged by the same rules as the built-in ones ([`crate::judge`]): a
//! kernel lock on the file first, then the PID rules with the host it names, the time it
//! records (else its mtime) and the declared programs as its known writers (a live PID
//! running something else that started before the lock is `unknown`: a name proves
//! nothing). `stale_after_secs` is the declared writers' promise to refresh the lock at least
//! that often while they hold it: older, with nothing here holding it, it is stale. An
//! `existence` format names no owner: its age proves something only under that promise. A
//! kernel-lock-only format is `live` while locked and `free` otherwise, never `stale`.
//!
//! Declarations are checked when the configuration is read; a bad one is a configuration
//! error naming the file, the line and the key at fault. Declared dialects are tried before
//! the built-in ones (after locksmith's own records), so a user's patterns win.

use std::sync::Mutex;

use serde::{Deserialize, Deserializer, Serialize, de};

use super::{Candidate, Dialect, DialectId, EntryKind, Windows, common};
use crate::judge::{Judgement, OwnerClaim, Placed, Refresh, Said, Writers};
use crate::probe::Snapshot;
use crate::verdict::Owner;

/// How the owner is written in the file.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub enum Format {
    /// Text lines: the PID on line `pid` (1-based), the host on line `host`.
    Lines {
        pid: usize,
        #[serde(default)]
        host: Option<usize>,
    },
    /// One JSON object: the PID under key `pid`, the host under `host`, the time the lock
    /// was taken (RFC 3339, or seconds / milliseconds since the epoch) under `time`.
    Json {
        pid: String,
        #[serde(default)]
        host: Option<String>,
        #[serde(default)]
        time: Option<String>,
    },
    /// No owner in the file: the lock is a kernel lock (flock/fcntl) held on it.
    KernelLock,
    /// No owner: the lock is the file's (or directory's) existence, as `mkdir LOCK` or
    /// `O_CREAT|O_EXCL` take it. With `stale_after_secs` (the writer's promise to refresh
    /// it: proper-lockfile's `update`), an older one is stale; without, never by its age.
    Existence,
}

/// One declared dialect, checked.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Deserialize, Serialize)]
#[serde(try_from = "Raw")]
pub struct Declared {
    pub name: String,
    pub patterns: Vec<String>,
    pub format: Format,
    pub programs: Vec<String>,
    pub stale_after_secs: Option<u64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Raw {
    name: String,
    patterns: Vec<String>,
    format: Format,
    #[serde(default)]
    programs: Vec<String>,
    #[serde(default)]
    stale_after_secs: Option<u64>,
}

/// The longest line number a `lines` format may name (the scanner reads a bounded prefix).
const MAX_LINE: usize = 64;

impl TryFrom<Raw> for Declared {
    type Error = String;

    fn try_from(r: Raw) -> Result<Self, String> {
        let at =
            |key: &str, msg: String| format!("declared dialect \"{}\", key `{key}`: {msg}", r.name);
        let valid_name = !r.name.is_empty()
            && r.name.len() <= 40
            && r.name
                .bytes()
                .next()
                .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
            && r.name.bytes().all(|b| {
                b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_' || b == b'.'
            });
        if !valid_name {
            return Err(at(
                "name",
                "must be 1 to 40 characters of a-z, 0-9, '-', '_' or '.', starting with a letter or digit".into(),
            ));
        }
        if super::registry().iter().any(|d| d.id() == *r.name) {
            return Err(at(
                "name",
                "is the name of a built-in dialect; choose another".into(),
            ));
        }
        if r.patterns.is_empty() {
            return Err(at(
                "patterns",
                "must list at least one file-name glob".into(),
            ));
        }
        for p in &r.patterns {
            if p.is_empty() {
                return Err(at("patterns", "an empty pattern matches nothing".into()));
            }
            globset::GlobBuilder::new(p)
                .literal_separator(true)
                .backslash_escape(true)
                .build()
                .map_err(|e| at("patterns", format!("bad glob \"{p}\": {}", e.kind())))?;
        }
        match &r.format {
            Format::Lines { pid, host } => {
                if *pid == 0 || *pid > MAX_LINE {
                    return Err(at(
                        "format.lines.pid",
                        format!("must be a line number from 1 to {MAX_LINE}, not {pid}"),
                    ));
                }
                if let Some(h) = host {
                    if *h == 0 || *h > MAX_LINE {
                        return Err(at(
                            "format.lines.host",
                            format!("must be a line number from 1 to {MAX_LINE}, not {h}"),
                        ));
                    }
                    if h == pid {
                        return Err(at(
                            "format.lines.host",
                            "must differ from the PID's line".into(),
                        ));
                    }
                }
            }
            Format::Json { pid, host, time } => {
                for (key, v) in [
                    ("pid", Some(pid)),
                    ("host", host.as_ref()),
                    ("time", time.as_ref()),
                ] {
                    if v.is_some_and(|v| v.is_empty()) {
                        return Err(at(
                            &format!("format.json.{key}"),
                            "must name a JSON key".into(),
                        ));
                    }
                }
            }
            Format::KernelLock => {
                if r.stale_after_secs.is_some() {
                    return Err(at(
                        "stale_after_secs",
                        "a kernel-lock format is never stale by age: leave it out".into(),
                    ));
                }
            }
            Format::Existence => {}
        }
        for p in &r.programs {
            if p.is_empty() || p.contains('/') {
                return Err(at(
                    "programs",
                    format!("\"{p}\" is not a program name (a file name without '/')"),
                ));
            }
        }
        if r.stale_after_secs == Some(0) {
            return Err(at(
                "stale_after_secs",
                "must be at least 1 (leave it out for no window)".into(),
            ));
        }
        Ok(Declared {
            name: r.name,
            patterns: r.patterns,
            format: r.format,
            programs: r.programs,
            stale_after_secs: r.stale_after_secs,
        })
    }
}

/// Deserializes the configuration's `dialects` list: every declaration checked, and names
/// unique.
pub fn deserialize_list<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<Vec<Declared>>, D::Error> {
    let list = Vec::<Declared>::deserialize(d)?;
    for (i, a) in list.iter().enumerate() {
        if list[..i].iter().any(|b| b.name == a.name) {
            return Err(de::Error::custom(format!(
                "declared dialect \"{}\", key `name`: declared twice",
                a.name
            )));
        }
    }
    Ok(Some(list))
}

/// Where in `text` the key named by a declaration error lies (1-based line and column), so
/// that the error points at the bad key rather than at the end of its declaration. `None`
/// when the message is not about a declaration or the key cannot be found.
pub fn locate_error(text: &str, message: &str) -> Option<(usize, usize)> {
    let rest = message.split("declared dialect ").nth(1)?;
    let rest = rest.strip_prefix('"')?;
    let name_end = rest.find("\", key `")?;
    let name = &rest[..name_end];
    let key = rest[name_end + 8..].split('`').next()?;
    let quoted = serde_json::to_string(&name).ok()?;
    // The declaration: the object around `"name": "<name>"`.
    let at = text.match_indices(&quoted).map(|(i, _)| i).find(|&i| {
        text[..i].trim_end().ends_with(':')
            && text[..i]
                .trim_end()
                .trim_end_matches(':')
                .trim_end()
                .ends_with("\"name\"")
    })?;
    let mut depth = 0usize;
    let mut start = None;
    for (i, c) in text[..at].char_indices().rev() {
        match c {
            '}' | ']' => depth += 1,
            '{' | '[' if depth > 0 => depth -= 1,
            '{' => {
                start = Some(i);
                break;
            }
            _ => {}
        }
    }
    let start = start?;
    let last = key.rsplit('.').next()?;
    let pos = start + text[start..].find(&format!("\"{last}\""))?;
    let line = text[..pos].matches('\n').count() + 1;
    let column = pos - text[..pos].rfind('\n').map_or(0, |n| n + 1) + 1;
    Some((line, column))
}

/// A declared dialect ready to judge (its strings made `'static`: dialect ids are).
#[derive(Debug)]
struct DeclaredDialect {
    spec: Declared,
    id: DialectId,
    patterns: &'static [&'static str],
    programs: &'static [&'static str],
}

fn leak_str(s: &str) -> &'static str {
    Box::leak(s.to_string().into_boxed_str())
}

/// Interned dialects and lists, so that reading the same configuration again (the UI, tests)
/// does not leak again.
static INTERNED: Mutex<Vec<(Declared, &'static DeclaredDialect)>> = Mutex::new(Vec::new());
type List = &'static [&'static dyn Dialect];
/// A combined list, by the declarations and the base dialects' ids it was built from.
type Built = (Vec<Declared>, Vec<DialectId>, List);
static LISTS: Mutex<Vec<Built>> = Mutex::new(Vec::new());

fn intern(spec: &Declared) -> &'static DeclaredDialect {
    let mut all = INTERNED.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, d)) = all.iter().find(|(s, _)| s == spec) {
        return d;
    }
    let d: &'static DeclaredDialect = Box::leak(Box::new(DeclaredDialect {
        spec: spec.clone(),
        id: DialectId::named(leak_str(&spec.name)),
        patterns: Box::leak(
            spec.patterns
                .iter()
                .map(|p| leak_str(p))
                .collect::<Vec<_>>()
                .into_boxed_slice(),
        ),
        programs: Box::leak(
            spec.programs
                .iter()
                .map(|p| leak_str(p))
                .collect::<Vec<_>>()
                .into_boxed_slice(),
        ),
    }));
    all.push((spec.clone(), d));
    d
}

/// The dialects to try, in order: `base`'s `locksmith` first (its records are recognised by
/// content and never ambiguous), then the declared dialects, then the rest of `base`.
pub fn with_base(declared: &[Declared], base: List) -> List {
    if declared.is_empty() {
        return base;
    }
    let base_ids: Vec<DialectId> = base.iter().map(|d| d.id()).collect();
    let mut lists = LISTS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, _, l)) = lists
        .iter()
        .find(|(d, b, _)| d == declared && *b == base_ids)
    {
        return l;
    }
    let split = base
        .iter()
        .take_while(|d| d.id() == DialectId::LOCKSMITH)
        .count();
    let mut out: Vec<&'static dyn Dialect> = base[..split].to_vec();
    out.extend(declared.iter().map(|s| intern(s) as &'static dyn Dialect));
    out.extend_from_slice(&base[split..]);
    let l: List = Box::leak(out.into_boxed_slice());
    lists.push((declared.to_vec(), base_ids, l));
    l
}

/// What the owner fields of a file say.
#[derive(Debug, Default)]
struct Fields {
    pid: Option<i64>,
    host: Option<String>,
    time_ms: Option<i64>,
}

fn parse(format: &Format, content: &[u8]) -> Result<Fields, String> {
    match format {
        Format::KernelLock | Format::Existence => Ok(Fields::default()),
        Format::Lines { pid, host } => {
            let text = std::str::from_utf8(content)
                .map_err(|_| format!("{} is not text", common::excerpt(content)))?;
            let lines: Vec<&str> = text.split('\n').map(|l| l.trim_end_matches('\r')).collect();
            let line = |n: usize| lines.get(n - 1).copied().unwrap_or("");
            let p = common::parse_pid(line(*pid)).map_err(|e| format!("line {pid}: {e}"))?;
            let h = match host {
                Some(n) => {
                    let h = line(*n).trim();
                    if h.is_empty() {
                        return Err(format!("line {n} (the host) is empty or missing"));
                    }
                    Some(h.to_string())
                }
                None => None,
            };
            Ok(Fields {
                pid: Some(p),
                host: h,
                time_ms: None,
            })
        }
        Format::Json { pid, host, time } => {
            let v: serde_json::Value =
                serde_json::from_slice(content).map_err(|e| format!("not JSON: {e}"))?;
            let obj = v.as_object().ok_or("not a JSON object")?;
            let p = match obj.get(pid) {
                Some(serde_json::Value::Number(n)) => n
                    .as_i64()
                    .ok_or(format!("key \"{pid}\" is not an integer"))?,
                Some(serde_json::Value::String(s)) => {
                    common::parse_pid(s).map_err(|e| format!("key \"{pid}\": {e}"))?
                }
                Some(_) => return Err(format!("key \"{pid}\" is not a PID")),
                None => return Err(format!("no key \"{pid}\"")),
            };
            let h = match host.as_ref().map(|k| (k, obj.get(k))) {
                Some((_, Some(serde_json::Value::String(s)))) if !s.is_empty() => Some(s.clone()),
                Some((k, _)) => {
                    return Err(format!("key \"{k}\" (the host) is missing or not a string"));
                }
                None => None,
            };
            let t = match time.as_ref().map(|k| (k, obj.get(k))) {
                Some((_, Some(serde_json::Value::String(s)))) => Some(
                    s.parse::<jiff::Timestamp>()
                        .map_err(|e| format!("key \"{}\": {e}", time.as_deref().unwrap_or("")))?
                        .as_millisecond(),
                ),
                Some((_, Some(serde_json::Value::Number(n)))) => {
                    let x = n.as_f64().unwrap_or(0.0);
                    // Seconds until the year 5138; milliseconds beyond.
                    Some(if x < 1e11 {
                        (x * 1000.0) as i64
                    } else {
                        x as i64
                    })
                }
                Some((k, _)) => {
                    return Err(format!("key \"{k}\" (the time) is missing or not a time"));
                }
                None => None,
            };
            Ok(Fields {
                pid: Some(p),
                host: h,
                time_ms: t,
            })
        }
    }
}

impl Dialect for DeclaredDialect {
    fn id(&self) -> DialectId {
        self.id
    }

    fn patterns(&self) -> &'static [&'static str] {
        self.patterns
    }

    fn recognise(&self, c: &Candidate<'_>, _snap: &Snapshot) -> bool {
        match self.spec.format {
            Format::KernelLock | Format::Existence => {
                matches!(c.kind, EntryKind::File | EntryKind::Dir)
            }
            _ => c.kind == EntryKind::File && parse(&self.spec.format, c.content).is_ok(),
        }
    }

    fn read(&self, c: &Candidate<'_>, _snap: &Snapshot, _windows: &Windows) -> Said {
        let what = format!("declared dialect {}", self.id);
        let fields = match parse(&self.spec.format, c.content) {
            Ok(f) => f,
            Err(why) => return Said::unparseable(&what, why),
        };
        let owner = Owner {
            pid: fields.pid,
            hostname: fields.host.as_deref().map(common::field),
            created_at: fields.time_ms.map(crate::judge::fmt_ms),
            detail: Some(format!("{what} (from the configuration)")),
            ..Owner::default()
        };
        if self.spec.format == Format::KernelLock {
            return Said::settled(Judgement::free(
                "no process holds a kernel lock on it (/proc/locks): the file is harmless and must stay, since its programs lock it in place",
            ))
            .owner(owner);
        }
        let mut said = Said::claims(owner);
        if let Some(window) = self.spec.stale_after_secs {
            said = said.claim(Refresh {
                placed: Placed::by(format!(
                    "the configuration declares files named so ({}) to be {}'s",
                    self.spec.patterns.join(", "),
                    what
                )),
                last_ms: c.meta.changed_ms(),
                window_ms: Windows::ms(window),
                fresh_ms: None,
                promise: format!(
                    "the configuration declares that {} refresh it at least every {window} s while they hold it",
                    if self.programs.is_empty() {
                        "its programs".to_string()
                    } else {
                        self.programs.join(", ")
                    }
                ),
            });
        }
        if let Some(pid) = fields.pid {
            let writers = if self.programs.is_empty() {
                Writers::ANY
            } else {
                Writers::named(self.programs)
            };
            said = said.claim(
                OwnerClaim::pid(pid, writers)
                    .host(fields.host)
                    .written(fields.time_ms),
            );
        }
        said
    }
}
#[cfg(test)]
mod tests {
    use super::*;

    fn declare(json: &str) -> Result<Vec<Declared>, String> {
        #[derive(Deserialize)]
        struct W {
            #[serde(deserialize_with = "deserialize_list")]
            dialects: Option<Vec<Declared>>,
        }
        serde_json::from_str::<W>(json)
            .map(|w| w.dialects.unwrap_or_default())
            .map_err(|e| e.to_string())
    }

    #[test]
    fn checks_declarations() {
        let ok = declare(r#"{"dialects": [{"name": "job", "patterns": ["*.job-lock"], "format": {"lines": {"pid": 1, "host": 2}}, "programs": ["job"]}]}"#).unwrap();
        assert_eq!(
            ok[0].format,
            Format::Lines {
                pid: 1,
                host: Some(2)
            }
        );
        let k =
            declare(r#"{"dialects": [{"name": "k", "patterns": ["x"], "format": "kernel-lock"}]}"#)
                .unwrap();
        assert_eq!(k[0].format, Format::KernelLock);
        for (bad, key) in [
            (
                r#"{"name": "Bad Name", "patterns": ["x"], "format": "kernel-lock"}"#,
                "`name`",
            ),
            (
                r#"{"name": "pidfile", "patterns": ["x"], "format": "kernel-lock"}"#,
                "built-in",
            ),
            (
                r#"{"name": "a", "patterns": [], "format": "kernel-lock"}"#,
                "`patterns`",
            ),
            (
                r#"{"name": "a", "patterns": ["[x"], "format": "kernel-lock"}"#,
                "bad glob",
            ),
            (
                r#"{"name": "a", "patterns": ["x"], "format": {"lines": {"pid": 0}}}"#,
                "`format.lines.pid`",
            ),
            (
                r#"{"name": "a", "patterns": ["x"], "format": {"lines": {"pid": 1, "host": 1}}}"#,
                "`format.lines.host`",
            ),
            (
                r#"{"name": "a", "patterns": ["x"], "format": {"json": {"pid": ""}}}"#,
                "`format.json.pid`",
            ),
            (
                r#"{"name": "a", "patterns": ["x"], "format": {"lines": {"pid": 1, "hots": 2}}}"#,
                "unknown field `hots`",
            ),
            (
                r#"{"name": "a", "patterns": ["x"], "format": "yaml"}"#,
                "unknown variant `yaml`",
            ),
            (
                r#"{"name": "a", "patterns": ["x"], "format": "kernel-lock", "programs": ["/bin/x"]}"#,
                "`programs`",
            ),
            (
                r#"{"name": "a", "patterns": ["x"], "format": "kernel-lock", "stale_after_secs": 0}"#,
                "`stale_after_secs`",
            ),
            (
                r#"{"name": "a", "patterns": ["x"], "format": "kernel-lock", "colour": 1}"#,
                "unknown field `colour`",
            ),
        ] {
            let err = declare(&format!(r#"{{"dialects": [{bad}]}}"#)).unwrap_err();
            assert!(err.contains(key), "{bad}: {err}");
        }
        let twice = r#"{"dialects": [{"name": "a", "patterns": ["x"], "format": "kernel-lock"}, {"name": "a", "patterns": ["y"], "format": "kernel-lock"}]}"#;
        assert!(declare(twice).unwrap_err().contains("declared twice"));
    }

    #[test]
    fn points_at_the_bad_key() {
        let text = "{\n  \"dialects\": [\n    { \"name\": \"a\", \"patterns\": [\"x\"], \"format\": \"kernel-lock\" },\n    {\n      \"format\": { \"lines\": { \"pid\": 0 } },\n      \"name\": \"b\",\n      \"patterns\": [\"y\"]\n    }\n  ]\n}";
        let msg = "declared dialect \"b\", key `format.lines.pid`: must be a line number";
        assert_eq!(locate_error(text, msg), Some((5, 30)));
        let msg = "declared dialect \"b\", key `patterns`: bad glob";
        assert_eq!(locate_error(text, msg), Some((7, 7)));
        assert_eq!(locate_error(text, "unknown field `x`"), None);
    }

    #[test]
    fn parses_owner_fields() {
        let lines = Format::Lines {
            pid: 2,
            host: Some(3),
        };
        let f = parse(&lines, b"v1\n4242\nbox\n").unwrap();
        assert_eq!((f.pid, f.host.as_deref()), (Some(4242), Some("box")));
        assert!(parse(&lines, b"v1\n4242\n").is_err());
        let json = Format::Json {
            pid: "owner_pid".into(),
            host: Some("host".into()),
            time: Some("since".into()),
        };
        let f = parse(
            &json,
            br#"{"owner_pid": "77", "host": "h", "since": "2024-01-02T03:04:05Z"}"#,
        )
        .unwrap();
        assert_eq!(f.pid, Some(77));
        assert_eq!(f.time_ms, Some(1_704_164_645_000));
        let f = parse(
            &json,
            br#"{"owner_pid": 77, "host": "h", "since": 1704164645}"#,
        )
        .unwrap();
        assert_eq!(f.time_ms, Some(1_704_164_645_000));
        assert!(parse(&json, br#"{"owner_pid": [1], "host": "h", "since": 1}"#).is_err());
    }
}
