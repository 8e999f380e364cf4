//! The scanner's configuration: which roots to walk (and how deep), which paths to skip, extra
//! file-name patterns for existing dialects, and the stale windows the judges use; with them
//! the sections the layers above read (`ask_hosts` for [`crate::remote`], `saved` for
//! [`crate::reclaim`]) and where locksmith keeps its state ([`default_state_dir`], which the
//! walker never enters).
//!
//! Three layers, each a JSON document of the same shape (`deny_unknown_fields`): the default
//! embedded from `assets/config.json` < the user's `$XDG_CONFIG_HOME/locksmith/config.json`
//! (default `~/.config/locksmith/config.json`, skipped when absent) < an explicit `--config FILE`.
//! A key present in a later layer replaces the value of the earlier ones, except `windows`,
//! which is merged key by key. Every layer is checked on its own, so an error names the file,
//! the line and the column (glob syntax and dialect ids included).

use std::collections::HashSet;
use std::fmt;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, OnceLock};

use globset::{Glob, GlobSet, GlobSetBuilder};
use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize};

use super::matcher::{self, ExtraPatterns, Matcher};
use crate::dialect::declared::{self, Declared};
use crate::dialect::{self, Dialect, Windows};

/// The default configuration, embedded in the binary.
pub const EMBEDDED: &str = include_str!("../../assets/config.json");

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

/// How much the state directory may hold (the `saved` section of the configuration).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CopyLimits {
    /// The largest copy (bytes of data; holes are free).
    pub max_copy_bytes: u64,
    /// All copies together (bytes on disk).
    pub max_total_bytes: u64,
    /// Copies older than this many days are deleted (their journal lines stay).
    pub keep_days: u64,
}

impl Default for CopyLimits {
    fn default() -> Self {
        CopyLimits {
            max_copy_bytes: 64 << 20,
            max_total_bytes: 512 << 20,
            keep_days: 90,
        }
    }
}

/// How locksmith asks other hosts (the `ask_hosts` key of the configuration).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AskConfig {
    /// Host names (globs, `node*`) asked without `--ask-hosts`.
    pub hosts: Vec<String>,
    /// locksmith on the other hosts (a name looked up in their `PATH`, or a path).
    pub program: String,
    /// The ssh client to run.
    pub ssh: String,
    /// More arguments for ssh, before the host (`["-F", "/path/to/ssh_config"]`).
    pub ssh_args: Vec<String>,
    /// `ConnectTimeout` for ssh, seconds.
    pub connect_timeout_secs: u64,
    /// The longest wait for one host's answer, seconds (connection included).
    pub timeout_secs: u64,
    /// How many hosts are asked at once.
    pub concurrency: usize,
    /// The most distinct hosts asked in one round; the others' locks stay `foreign`, saying so.
    pub max_hosts: usize,
    /// The longest a whole round of asking may take, seconds: hosts not asked by then are not
    /// asked, and those still answering are given up.
    pub deadline_secs: u64,
}

impl Default for AskConfig {
    fn default() -> Self {
        AskConfig {
            hosts: Vec::new(),
            program: "locksmith".into(),
            ssh: "ssh".into(),
            ssh_args: Vec::new(),
            connect_timeout_secs: 5,
            timeout_secs: 15,
            concurrency: 8,
            max_hosts: 32,
            deadline_secs: 60,
        }
    }
}

impl AskConfig {
    /// Checks the values; the message names the key at fault.
    pub fn validate(&self) -> Result<(), String> {
        if !(1..=600).contains(&self.connect_timeout_secs) {
            return Err(format!(
                "ask_hosts.connect_timeout_secs must be 1..=600 seconds, not {}",
                self.connect_timeout_secs
            ));
        }
        if !(1..=3600).contains(&self.timeout_secs) {
            return Err(format!(
                "ask_hosts.timeout_secs must be 1..=3600 seconds, not {}",
                self.timeout_secs
            ));
        }
        if !(1..=256).contains(&self.concurrency) {
            return Err(format!(
                "ask_hosts.concurrency must be 1..=256, not {}",
                self.concurrency
            ));
        }
        if !(1..=4096).contains(&self.max_hosts) {
            return Err(format!(
                "ask_hosts.max_hosts must be 1..=4096, not {}",
                self.max_hosts
            ));
        }
        if !(1..=3600).contains(&self.deadline_secs) {
            return Err(format!(
                "ask_hosts.deadline_secs must be 1..=3600 seconds, not {}",
                self.deadline_secs
            ));
        }
        if self.program.trim().is_empty() || self.ssh.trim().is_empty() {
            return Err("ask_hosts.program and ask_hosts.ssh must not be empty".into());
        }
        self.host_set().map(|_| ())
    }

    fn host_set(&self) -> Result<GlobSet, String> {
        let mut b = GlobSetBuilder::new();
        for h in &self.hosts {
            b.add(Glob::new(&h.to_ascii_lowercase()).map_err(|e| {
                format!(
                    "ask_hosts.hosts: \"{h}\" is not a valid host pattern: {}",
                    e.kind()
                )
            })?);
        }
        b.build().map_err(|e| format!("ask_hosts.hosts: {e}"))
    }

    /// Whether `host` is one of the configured hosts.
    pub fn allows(&self, host: &str) -> bool {
        !self.hosts.is_empty()
            && self
                .host_set()
                .is_ok_and(|s| s.is_match(host.to_ascii_lowercase()))
    }
}

/// Where root keeps its state when neither `XDG_STATE_HOME` nor `HOME` is set.
pub const ROOT_FALLBACK: &str = "/var/lib/locksmith";

/// locksmith's state directory (reclaim's copies and journal):
/// `$XDG_STATE_HOME/locksmith`, else `~/.local/state/locksmith` (an `XDG_STATE_HOME` or
/// `HOME` that is not absolute is ignored, as the XDG spec says), else `/var/lib/locksmith`
/// for root. For any other user with neither, the empty path: opening it fails with an error
/// that says what to set (a shared `$TMPDIR` is no place for it).
pub fn default_state_dir() -> PathBuf {
    let abs = |name| {
        std::env::var_os(name)
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
    };
    if let Some(x) = abs("XDG_STATE_HOME") {
        return x.join("locksmith");
    }
    if let Some(home) = abs("HOME") {
        return home.join(".local/state/locksmith");
    }
    if rustix::process::geteuid().is_root() {
        return PathBuf::from(ROOT_FALLBACK);
    }
    PathBuf::new()
}

/// The scanner's configuration (see the module docs for where it comes from).
#[derive(Debug, Clone)]
pub struct Config {
    /// The configured roots, before expansion (see [`Config::roots`]).
    pub roots: Vec<RootSpec>,
    /// Globs of paths not to walk; one containing `/` is matched against the whole path, else
    /// the file name. `DIR/**` also keeps the walker out of `DIR` itself. A root is never
    /// excluded.
    pub exclude: Vec<String>,
    pub extra_patterns: Vec<ExtraPatterns>,
    pub windows: Windows,
    /// Which other hosts to ask about their locks, and how (see [`crate::remote`]).
    pub ask_hosts: AskConfig,
    /// How much the state directory may hold (reclaim's copies).
    pub saved: CopyLimits,
    /// Also scan the lock places of running containers (the absolute configured roots,
    /// through `/proc/<pid>/root`). Off unless the caller turns it on: the command line does
    /// when it scans the configured roots and `--no-containers` is not given.
    pub containers: bool,
    /// Lock formats declared in the configuration (see [`crate::dialect::declared`]).
    pub declared: Vec<Declared>,
    /// The files this configuration was read from, lowest precedence first (the embedded
    /// default is not listed).
    pub sources: Vec<PathBuf>,
    /// The dialects to recognise, in the order they are tried: `base` with the declared
    /// dialects.
    dialects: Dialects,
    /// The built-in dialects this configuration starts from (the registry, unless a program
    /// chose others).
    base: Dialects,
    /// The compiled patterns, built on first use for the `exclude` and `extra_patterns` they
    /// were built from.
    matcher: OnceLock<Arc<Matcher>>,
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

/// A configuration that cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    #[error("cannot read configuration file {}: {error}", path.display())]
    Read {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("bad configuration file {}, line {line} column {column}: {message}", path.display())]
    Parse {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
}

impl ConfigError {
    /// The file at fault.
    pub fn path(&self) -> &Path {
        match self {
            ConfigError::Read { path, .. } | ConfigError::Parse { path, .. } => path,
        }
    }
}

/// One layer as written in a file: every key optional.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Layer {
    roots: Option<Vec<RootSpec>>,
    #[serde(default, deserialize_with = "opt_globs")]
    exclude: Option<Vec<String>>,
    extra_patterns: Option<Vec<ExtraPatterns>>,
    /// Parsed for its errors (with positions); merged key by key from the raw JSON.
    windows: Option<Windows>,
    #[serde(default, deserialize_with = "ask_config")]
    ask_hosts: Option<AskConfig>,
    /// Limits of the copies reclaim keeps (merged key by key too).
    saved: Option<CopyLimits>,
    /// Declared dialects (checked as they are read, so errors carry their position).
    #[serde(default, deserialize_with = "declared::deserialize_list")]
    dialects: Option<Vec<Declared>>,
}

/// The keys set so far of the sections that merge key by key.
#[derive(Default)]
struct Merged {
    windows: serde_json::Map<String, serde_json::Value>,
    saved: serde_json::Map<String, serde_json::Value>,
}

/// The largest configuration file read (a configuration is a few hundred bytes).
pub const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// Reads a configuration file: a regular file (a FIFO, a device or a directory is refused at
/// once, without blocking), at most [`MAX_CONFIG_BYTES`], UTF-8 with or without a byte-order
/// mark. `None` when `missing_ok` and it does not exist.
fn read_file(path: &Path, missing_ok: bool) -> Result<Option<String>, ConfigError> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let err = |error: std::io::Error| ConfigError::Read {
        path: path.to_path_buf(),
        error,
    };
    let other = |msg: String| err(std::io::Error::other(msg));
    // O_NONBLOCK: opening a FIFO must not wait for a writer.
    let file = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
    {
        Ok(f) => f,
        Err(e) if missing_ok && e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(err(e)),
    };
    let meta = file.metadata().map_err(err)?;
    if !meta.is_file() {
        use std::os::unix::fs::FileTypeExt;
        let t = meta.file_type();
        let what = if t.is_dir() {
            "a directory"
        } else if t.is_fifo() {
            "a FIFO"
        } else if t.is_char_device() || t.is_block_device() {
            "a device"
        } else if t.is_socket() {
            "a socket"
        } else {
            "not a regular file"
        };
        return Err(other(format!("it is {what}, not a regular file")));
    }
    if meta.len() > MAX_CONFIG_BYTES {
        return Err(other(format!(
            "it is {} bytes, more than the {MAX_CONFIG_BYTES} a configuration may have",
            meta.len()
        )));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(MAX_CONFIG_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(err)?;
    if bytes.len() as u64 > MAX_CONFIG_BYTES {
        return Err(other(format!(
            "it grew past the {MAX_CONFIG_BYTES} bytes a configuration may have"
        )));
    }
    let body = bytes.strip_prefix(b"\xef\xbb\xbf").unwrap_or(&bytes);
    let text = String::from_utf8(body.to_vec())
        .map_err(|e| other(format!("it is not UTF-8 text ({e})")))?;
    Ok(Some(text))
}

/// Where `"key"` first appears in `text` (1-based line and column), for messages about a
/// value that parsed but is out of range.
fn position_of(text: &str, key: &str) -> (usize, usize) {
    let quoted = format!("\"{key}\"");
    let Some(at) = text.find(&quoted) else {
        return (1, 1);
    };
    let before = &text[..at];
    let line = before.matches('\n').count() + 1;
    let column = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
    (line, column)
}

fn range_error(name: &Path, text: &str, key: &str, message: String) -> ConfigError {
    let (line, column) = position_of(text, key);
    ConfigError::Parse {
        path: name.to_path_buf(),
        line,
        column,
        message,
    }
}

/// Every stale window between 0 and [`Windows::MAX_SECS`] (ten years).
fn check_windows(
    name: &Path,
    text: &str,
    w: &serde_json::Map<String, serde_json::Value>,
) -> Result<(), ConfigError> {
    for (key, value) in w {
        if key == "mkdir_lock_secs" {
            return Err(range_error(
                name,
                text,
                key,
                "windows.mkdir_lock_secs is no longer read: a lock directory's age proves nothing unless its writer promises to refresh it. Declare such a writer in \"dialects\" (format \"existence\", its patterns and stale_after_secs, its refresh window); remove this key".into(),
            ));
        }
        let Some(n) = value.as_u64() else { continue };
        if key.ends_with("_secs") && n > Windows::MAX_SECS {
            return Err(range_error(
                name,
                text,
                key,
                format!(
                    "windows.{key} = {n} is out of range: a window is 0 to {} seconds (ten years)",
                    Windows::MAX_SECS
                ),
            ));
        }
    }
    Ok(())
}

/// Limits that make sense: a copy of at least a page, a total at least one copy, copies kept
/// a day to ten years.
fn check_saved(name: &Path, text: &str, s: &CopyLimits) -> Result<(), ConfigError> {
    if s.max_copy_bytes < 4096 {
        return Err(range_error(
            name,
            text,
            "max_copy_bytes",
            format!(
                "saved.max_copy_bytes = {} is too small (at least 4096)",
                s.max_copy_bytes
            ),
        ));
    }
    if s.max_total_bytes < s.max_copy_bytes {
        return Err(range_error(
            name,
            text,
            "max_total_bytes",
            format!(
                "saved.max_total_bytes = {} is less than saved.max_copy_bytes = {}",
                s.max_total_bytes, s.max_copy_bytes
            ),
        ));
    }
    if !(1..=3660).contains(&s.keep_days) {
        return Err(range_error(
            name,
            text,
            "keep_days",
            format!(
                "saved.keep_days = {} is out of range (1 to 3660 days)",
                s.keep_days
            ),
        ));
    }
    Ok(())
}

impl Config {
    /// Embedded default < `$XDG_CONFIG_HOME/locksmith/config.json` < `explicit` (`--config FILE`).
    /// A missing user file is skipped; a missing explicit file is an error.
    pub fn load(explicit: Option<&Path>) -> Result<Config, ConfigError> {
        Self::load_layers(Self::user_path().as_deref(), explicit)
    }

    /// Like [`Config::load`], with the user configuration file named by the caller (skipped
    /// when it does not exist).
    pub fn load_layers(
        user: Option<&Path>,
        explicit: Option<&Path>,
    ) -> Result<Config, ConfigError> {
        let mut layers = vec![(None, EMBEDDED.to_string())];
        if let Some(p) = user
            && let Some(text) = read_file(p, true)?
        {
            layers.push((Some(p.to_path_buf()), text));
        }
        if let Some(p) = explicit
            && let Some(text) = read_file(p, false)?
        {
            layers.push((Some(p.to_path_buf()), text));
        }
        let mut config = Config {
            roots: Vec::new(),
            exclude: Vec::new(),
            extra_patterns: Vec::new(),
            windows: Windows::default(),
            ask_hosts: AskConfig::default(),
            saved: CopyLimits::default(),
            containers: false,
            declared: Vec::new(),
            sources: Vec::new(),
            dialects: Dialects(dialect::registry()),
            base: Dialects(dialect::registry()),
            matcher: OnceLock::new(),
        };
        let mut merged = Merged::default();
        for (path, text) in layers {
            let name = path.clone().unwrap_or_else(|| PathBuf::from("<embedded>"));
            config.apply(&mut merged, &name, &text)?;
            config.sources.extend(path);
        }
        Ok(config)
    }

    /// Applies one layer over this configuration. `merged` accumulates the keys of the
    /// sections that merge key by key (`windows`, `saved`).
    fn apply(&mut self, merged: &mut Merged, name: &Path, text: &str) -> Result<(), ConfigError> {
        let layer: Layer =
            serde_json::from_str(text).map_err(|e| declared_error(name, text, &e))?;
        if let Some(r) = layer.roots {
            self.roots = r;
        }
        if let Some(x) = layer.exclude {
            self.exclude = x;
        }
        if let Some(x) = layer.extra_patterns {
            self.extra_patterns = x;
        }
        if let Some(x) = layer.ask_hosts {
            self.ask_hosts = x;
        }
        if let Some(d) = layer.dialects {
            self.set_declared(d);
        }
        if layer.windows.is_some() || layer.saved.is_some() {
            // Valid (checked above): take the keys this layer sets.
            let raw: serde_json::Value =
                serde_json::from_str(text).map_err(|e| parse_error(name, &e))?;
            if let Some(serde_json::Value::Object(w)) = raw.get("windows") {
                check_windows(name, text, w)?;
                merged.windows.extend(w.clone());
                self.windows =
                    serde_json::from_value(serde_json::Value::Object(merged.windows.clone()))
                        .map_err(|e| parse_error(name, &e))?;
            }
            if let Some(serde_json::Value::Object(w)) = raw.get("saved") {
                merged.saved.extend(w.clone());
                self.saved =
                    serde_json::from_value(serde_json::Value::Object(merged.saved.clone()))
                        .map_err(|e| parse_error(name, &e))?;
                check_saved(name, text, &self.saved)?;
            }
        }
        self.matcher = OnceLock::new();
        Ok(())
    }

    /// The embedded default configuration.
    pub fn embedded() -> Config {
        Self::load_layers(None, None).expect("the embedded configuration is valid")
    }

    /// Parses one configuration document (the same shape as the files), over the embedded
    /// default. `name` is used in error messages.
    pub fn from_json(name: &Path, text: &str) -> Result<Config, ConfigError> {
        let mut config = Config::embedded();
        let object = |v| match v {
            Ok(serde_json::Value::Object(m)) => m,
            _ => serde_json::Map::new(),
        };
        let mut merged = Merged {
            windows: object(serde_json::to_value(&config.windows)),
            saved: object(serde_json::to_value(config.saved)),
        };
        config.apply(
            &mut merged,
            name,
            text.strip_prefix('\u{feff}').unwrap_or(text),
        )?;
        Ok(config)
    }

    /// `$XDG_CONFIG_HOME/locksmith/config.json`, else `~/.config/locksmith/config.json`.
    pub fn user_path() -> Option<PathBuf> {
        let base = std::env::var_os("XDG_CONFIG_HOME")
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
            .or_else(|| home().map(|h| h.join(".config")))?;
        Some(base.join("locksmith").join("config.json"))
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
                    let path = std::fs::canonicalize(path).ok()?;
                    readable(&path).then_some(Root {
                        path,
                        max_depth: spec.max_depth,
                    })
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

    /// The dialects this configuration recognises, in the order they are tried (default:
    /// [`dialect::registry`]).
    pub fn dialects(&self) -> &'static [&'static dyn Dialect] {
        self.dialects.0
    }

    /// Recognises these dialects instead of the registry's (programs that know only some
    /// lock formats, and tests).
    pub fn with_dialects(mut self, dialects: &'static [&'static dyn Dialect]) -> Self {
        self.base = Dialects(dialects);
        let declared = std::mem::take(&mut self.declared);
        self.set_declared(declared);
        self
    }

    /// Replaces the declared dialects (tried before the built-in ones).
    fn set_declared(&mut self, declared: Vec<Declared>) {
        self.dialects = Dialects(declared::with_base(&declared, self.base.0));
        self.declared = declared;
        self.matcher = OnceLock::new();
    }

    /// The compiled name patterns and excludes (built once per configuration).
    pub(crate) fn matcher(&self) -> Result<Arc<Matcher>, globset::Error> {
        let dialects = self.dialects();
        if let Some(m) = self.matcher.get()
            && m.built_from(dialects, &self.exclude, &self.extra_patterns)
        {
            return Ok(m.clone());
        }
        let m = Arc::new(Matcher::new(dialects, &self.extra_patterns, &self.exclude)?);
        if self.matcher.get().is_none() {
            let _ = self.matcher.set(m.clone());
        }
        Ok(m)
    }
}

fn parse_error(path: &Path, e: &serde_json::Error) -> ConfigError {
    let suffix = format!(" at line {} column {}", e.line(), e.column());
    let full = e.to_string();
    let message = full.strip_suffix(&suffix).unwrap_or(&full).to_string();
    ConfigError::Parse {
        path: path.to_path_buf(),
        line: e.line(),
        column: e.column(),
        message,
    }
}

fn ask_config<'de, D: Deserializer<'de>>(d: D) -> Result<Option<AskConfig>, D::Error> {
    let c = AskConfig::deserialize(d)?;
    c.validate().map_err(de::Error::custom)?;
    Ok(Some(c))
}

/// A parse error, pointing at the key at fault when it is in a declared dialect.
fn declared_error(path: &Path, text: &str, e: &serde_json::Error) -> ConfigError {
    let mut err = parse_error(path, e);
    if let ConfigError::Parse {
        line,
        column,
        message,
        ..
    } = &mut err
        && let Some((l, c)) = declared::locate_error(text, message)
    {
        (*line, *column) = (l, c);
    }
    err
}

fn opt_globs<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<String>>, D::Error> {
    matcher::globs(d).map(Some)
}

/// Whether we may list this directory (or read this file).
fn readable(path: &Path) -> bool {
    use rustix::fs::Access;
    let want = if path.is_dir() {
        Access::READ_OK | Access::EXEC_OK
    } else {
        Access::READ_OK
    };
    rustix::fs::access(path, want).is_ok()
}

fn home() -> Option<PathBuf> {
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
/// shows that directory as the root); a symlink to anything else is the lock itself (emacs and
/// chromium locks are symlinks) and is never followed. Nothing below a root is ever followed.
pub fn absolute(p: &Path) -> PathBuf {
    // `components` drops a trailing `/`, which would otherwise make lstat follow the link.
    let p: PathBuf = p.components().collect();
    let joined = if p.is_absolute() {
        p
    } else {
        std::env::current_dir().map(|d| d.join(&p)).unwrap_or(p)
    };
    let last_is_name = matches!(joined.components().next_back(), Some(Component::Normal(_)));
    let is_link = std::fs::symlink_metadata(&joined).is_ok_and(|m| m.file_type().is_symlink());
    let link_to_dir = is_link && std::fs::metadata(&joined).is_ok_and(|m| m.is_dir());
    if !last_is_name || link_to_dir {
        return std::fs::canonicalize(&joined).unwrap_or(joined);
    }
    match (joined.parent(), joined.file_name()) {
        (Some(parent), Some(name)) => std::fs::canonicalize(parent)
            .map(|d| d.join(name))
            .unwrap_or(joined),
        _ => joined,
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
    fn embedded_parses() {
        let c = Config::embedded();
        assert!(c.roots.iter().any(|r| r.path == "."));
        assert!(
            c.roots
                .iter()
                .any(|r| r.path == "/tmp" && r.max_depth.is_some())
        );
        assert_eq!(c.windows, Windows::default());
        assert!(c.sources.is_empty());
    }

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
    fn windows_out_of_range_are_refused_with_their_position() {
        let text = "{\n  \"windows\": {\n    \"heartbeat_secs\": 18446744073709551615,\n    \"git_min_age_secs\": 2 }\n}";
        let e = Config::from_json(Path::new("c.json"), text).unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains("line 3 column 5"), "{msg}");
        assert!(msg.contains("windows.heartbeat_secs"), "{msg}");
        let ok = format!(
            "{{\"windows\": {{\"heartbeat_secs\": {}}}}}",
            Windows::MAX_SECS
        );
        assert_eq!(
            Config::from_json(Path::new("c.json"), &ok)
                .unwrap()
                .windows
                .heartbeat_secs,
            Windows::MAX_SECS
        );
        let over = format!(
            "{{\"windows\": {{\"heartbeat_secs\": {}}}}}",
            Windows::MAX_SECS + 1
        );
        assert!(Config::from_json(Path::new("c.json"), &over).is_err());
    }

    #[test]
    fn copy_limits_merge_and_are_checked() {
        let c = Config::from_json(Path::new("c.json"), r#"{"saved": {"keep_days": 7}}"#).unwrap();
        assert_eq!(c.saved.keep_days, 7);
        assert_eq!(c.saved.max_copy_bytes, CopyLimits::default().max_copy_bytes);
        for bad in [
            r#"{"saved": {"max_copy_bytes": 10}}"#,
            r#"{"saved": {"max_copy_bytes": 100000, "max_total_bytes": 5000}}"#,
            r#"{"saved": {"keep_days": 0}}"#,
            r#"{"saved": {"keep": 3}}"#,
        ] {
            assert!(
                Config::from_json(Path::new("c.json"), bad).is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn files_must_be_regular_small_utf8_and_may_have_a_bom() {
        let t = tempfile::tempdir().unwrap();
        let bom = t.path().join("bom.json");
        std::fs::write(&bom, b"\xef\xbb\xbf{\"exclude\": [\"x\"]}").unwrap();
        let c = Config::load_layers(None, Some(&bom)).unwrap();
        assert_eq!(c.exclude, vec!["x".to_string()]);

        let fifo = t.path().join("fifo");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        let started = std::time::Instant::now();
        let e = Config::load_layers(None, Some(&fifo)).unwrap_err();
        assert!(e.to_string().contains("a FIFO"), "{e}");
        assert!(started.elapsed() < std::time::Duration::from_secs(2));
        let e = Config::load_layers(None, Some(Path::new("/dev/zero"))).unwrap_err();
        assert!(e.to_string().contains("a device"), "{e}");
        let big = t.path().join("big.json");
        std::fs::write(&big, vec![b' '; MAX_CONFIG_BYTES as usize + 1]).unwrap();
        assert!(Config::load_layers(None, Some(&big)).is_err());
        let latin1 = t.path().join("latin1.json");
        std::fs::write(&latin1, b"{\"exclude\": [\"\xe9\"]}").unwrap();
        let e = Config::load_layers(None, Some(&latin1)).unwrap_err();
        assert!(e.to_string().contains("not UTF-8"), "{e}");
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
