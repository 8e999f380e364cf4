//! The configuration: what the configuration files and the command line say ([`RawConfig`]),
//! checked into one settings value per layer ([`Settings`]): the scanner's
//! ([`scan::Config`], its patterns compiled), reclaim's ([`ReclaimOptions`]: where the state
//! directory is, how much it may hold) and the asking of other hosts ([`AskConfig`]). Each
//! layer is handed only its own.
//!
//! Three layers of files, each a JSON document of the same shape (`deny_unknown_fields`): the
//! default embedded from `assets/config.json` < the user's
//! `$XDG_CONFIG_HOME/locksmith/config.json` (default `~/.config/locksmith/config.json`, skipped
//! when absent) < an explicit `--config FILE`. A key present in a later layer replaces the
//! value of the earlier ones, except `windows` and `saved`, which are merged key by key. Every
//! layer is checked on its own, so an error names the file, the line and the column (glob
//! syntax and dialect ids included).

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde::de::{self, Deserializer};

use crate::dialect::declared::{self, Declared};
use crate::dialect::{self, Dialect, Windows};
use crate::reclaim::{CopyLimits, ReclaimOptions};
use crate::remote::{AskConfig, AskHosts};
use crate::scan::config::{RootSpec, home};
use crate::scan::{self, ExtraPatterns};

use crate::trust;

/// The part of a configuration that judging depends on: the stale windows, the declared
/// dialects and the extra patterns. A recording keeps it ([`crate::probe::Evidence::settings`]),
/// so that its locks are judged again as they were.
#[derive(Debug, Clone, PartialEq, serde::Serialize, Deserialize)]
pub struct JudgingSettings {
    pub windows: Windows,
    pub declared: Vec<Declared>,
    pub extra_patterns: Vec<ExtraPatterns>,
}

impl RawConfig {
    /// What of this configuration judging depends on.
    pub fn judging(&self) -> JudgingSettings {
        JudgingSettings {
            windows: self.windows.clone(),
            declared: self.declared.clone(),
            extra_patterns: self.extra_patterns.clone(),
        }
    }

    /// The embedded configuration with these judging settings.
    pub fn judging_with(s: JudgingSettings) -> RawConfig {
        let mut raw = RawConfig::embedded();
        raw.windows = s.windows;
        raw.declared = s.declared;
        raw.extra_patterns = s.extra_patterns;
        raw
    }
}

/// The default configuration, embedded in the binary.
pub const EMBEDDED: &str = include_str!("../assets/config.json");

/// The configuration as the files and the command line give it, each section parsed (and
/// checked where it is read, so that errors carry their position), not yet made into the
/// layers' settings: see [`RawConfig::validate`].
#[derive(Debug, Clone)]
pub struct RawConfig {
    /// The configured roots, before expansion.
    pub roots: Vec<RootSpec>,
    /// Globs of paths not to walk (see [`scan::Spec::exclude`]).
    pub exclude: Vec<String>,
    /// More file-name patterns for existing dialects.
    pub extra_patterns: Vec<ExtraPatterns>,
    /// The dialects' stale windows.
    pub windows: Windows,
    /// Which other hosts to ask about their locks, and how (see [`crate::remote`]).
    pub ask_hosts: AskHosts,
    /// How much the state directory may hold (reclaim's copies).
    pub saved: CopyLimits,
    /// Lock formats declared in the configuration (see [`crate::dialect::declared`]).
    pub declared: Vec<Declared>,
    /// The files this configuration was read from, lowest precedence first (the embedded
    /// default is not listed).
    pub sources: Vec<PathBuf>,
    /// Also scan the lock places of running containers. Off unless the caller turns it on:
    /// the command line does when it scans the configured roots and `--no-containers` is not
    /// given.
    pub containers: bool,
    /// locksmith's state directory (default: [`crate::reclaim::default_state_dir`]), where
    /// reclaim keeps its copies and journal; the scanner never walks it.
    pub state_dir: PathBuf,
    /// What the user is told about how the configuration was read (a user configuration file
    /// skipped because someone else may have written it).
    pub notes: Vec<String>,
}

/// The configuration made into one settings value per layer, each checked and complete.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The scanner's (and the judges'): roots, patterns, windows.
    pub scan: scan::Config,
    /// Reclaim's: the state directory and its limits, every safety on (a command turns on
    /// what its flags ask).
    pub reclaim: ReclaimOptions,
    /// Asking other hosts.
    pub remote: AskConfig,
}

impl Settings {
    /// The settings of the embedded default configuration.
    pub fn embedded() -> Settings {
        RawConfig::embedded()
            .validate()
            .expect("the embedded configuration is valid")
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
    /// A file that someone other than the effective user or root may have written
    /// ([`trust`]).
    #[error("configuration file {} is not read: {why}", path.display())]
    Untrusted { path: PathBuf, why: String },
    /// A value that cannot be used, found when the configuration is made into settings.
    #[error("bad configuration {}: {message}", path.display())]
    Invalid {
        /// The last file read (`<embedded>` for the default alone).
        path: PathBuf,
        message: String,
    },
}

impl ConfigError {
    /// The file at fault.
    pub fn path(&self) -> &Path {
        match self {
            ConfigError::Read { path, .. }
            | ConfigError::Untrusted { path, .. }
            | ConfigError::Parse { path, .. }
            | ConfigError::Invalid { path, .. } => path,
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
    ask_hosts: Option<AskHosts>,
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
/// mark, that nobody but the effective user and root can have written ([`trust`]). `None`
/// when `missing_ok` and it does not exist.
fn read_file(path: &Path, missing_ok: bool) -> Result<Option<String>, ConfigError> {
    use std::io::Read;
    let err = |error: std::io::Error| ConfigError::Read {
        path: path.to_path_buf(),
        error,
    };
    let other = |msg: String| err(std::io::Error::other(msg));
    let file = match trust::open_trusted(path) {
        Ok(Ok(f)) => f,
        Ok(Err(u)) => {
            return Err(ConfigError::Untrusted {
                path: path.to_path_buf(),
                why: untrusted_line(&u),
            });
        }
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

/// Why a configuration file is not read, and what to do about it.
fn untrusted_line(u: &trust::Untrusted) -> String {
    let me = rustix::process::geteuid().as_raw();
    let fix = if me == 0 && u.owner.is_some_and(|uid| uid != 0) {
        " (root never reads another user's configuration: under sudo, use `sudo -H`, or give root a file of its own with --config)"
    } else {
        ""
    };
    format!("{u}: someone other than you or root may have written it{fix}")
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

impl RawConfig {
    /// Embedded default < `$XDG_CONFIG_HOME/locksmith/config.json` < `explicit` (`--config FILE`).
    /// A missing user file is skipped; a missing explicit file is an error.
    pub fn load(explicit: Option<&Path>) -> Result<RawConfig, ConfigError> {
        Self::load_layers(Self::user_path().as_deref(), explicit)
    }

    /// Like [`RawConfig::load`], with the user configuration file named by the caller (skipped
    /// when it does not exist).
    pub fn load_layers(
        user: Option<&Path>,
        explicit: Option<&Path>,
    ) -> Result<RawConfig, ConfigError> {
        let mut layers = vec![(None, EMBEDDED.to_string())];
        let mut notes = Vec::new();
        if let Some(p) = user {
            match read_file(p, true) {
                Ok(Some(text)) => layers.push((Some(p.to_path_buf()), text)),
                Ok(None) => {}
                // Another user's file (`sudo -E`, `su`): skipped, saying so.
                Err(e @ ConfigError::Untrusted { .. }) => notes.push(e.to_string()),
                Err(e) => return Err(e),
            }
        }
        if let Some(p) = explicit
            && let Some(text) = read_file(p, false)?
        {
            layers.push((Some(p.to_path_buf()), text));
        }
        let mut config = RawConfig {
            roots: Vec::new(),
            exclude: Vec::new(),
            extra_patterns: Vec::new(),
            windows: Windows::default(),
            ask_hosts: AskHosts::default(),
            saved: CopyLimits::default(),
            declared: Vec::new(),
            sources: Vec::new(),
            containers: false,
            state_dir: crate::reclaim::default_state_dir(),
            notes,
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
            self.declared = d;
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
        Ok(())
    }

    /// The embedded default configuration.
    pub fn embedded() -> RawConfig {
        Self::load_layers(None, None).expect("the embedded configuration is valid")
    }

    /// Parses one configuration document (the same shape as the files), over the embedded
    /// default. `name` is used in error messages.
    pub fn from_json(name: &Path, text: &str) -> Result<RawConfig, ConfigError> {
        let mut config = RawConfig::embedded();
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

    /// Checks the configuration and makes it into the layers' settings, with the registry's
    /// dialects (and the declared ones).
    pub fn validate(self) -> Result<Settings, ConfigError> {
        self.validate_with(dialect::registry())
    }

    /// [`RawConfig::validate`] recognising the dialects `base` (and the declared ones) instead
    /// of the registry's: programs that know only some lock formats, and tests.
    pub fn validate_with(
        self,
        base: &'static [&'static dyn Dialect],
    ) -> Result<Settings, ConfigError> {
        let invalid = |message: String| ConfigError::Invalid {
            path: self
                .sources
                .last()
                .cloned()
                .unwrap_or_else(|| PathBuf::from("<embedded>")),
            message,
        };
        let remote = self.ask_hosts.validate().map_err(invalid)?;
        let scan = scan::Config::new(scan::Spec {
            roots: self.roots,
            exclude: self.exclude,
            extra_patterns: self.extra_patterns,
            windows: self.windows,
            dialects: declared::with_base(&self.declared, base),
            containers: self.containers,
            never_walk: (!self.state_dir.as_os_str().is_empty()).then(|| self.state_dir.clone()),
        })
        .map_err(|e| invalid(format!("bad pattern: {e}")))?;
        Ok(Settings {
            scan,
            reclaim: ReclaimOptions {
                state_dir: self.state_dir,
                copies: self.saved,
                ..ReclaimOptions::new()
            },
            remote,
        })
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

/// The `ask_hosts` section, checked as it is read (so that an error has its position).
fn ask_config<'de, D: Deserializer<'de>>(d: D) -> Result<Option<AskHosts>, D::Error> {
    let c = AskHosts::deserialize(d)?;
    c.check().map_err(de::Error::custom)?;
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
    scan::globs(d).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_parses() {
        let c = RawConfig::embedded();
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
    fn windows_out_of_range_are_refused_with_their_position() {
        let text = "{\n  \"windows\": {\n    \"heartbeat_secs\": 18446744073709551615,\n    \"git_min_age_secs\": 2 }\n}";
        let e = RawConfig::from_json(Path::new("c.json"), text).unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains("line 3 column 5"), "{msg}");
        assert!(msg.contains("windows.heartbeat_secs"), "{msg}");
        let ok = format!(
            "{{\"windows\": {{\"heartbeat_secs\": {}}}}}",
            Windows::MAX_SECS
        );
        assert_eq!(
            RawConfig::from_json(Path::new("c.json"), &ok)
                .unwrap()
                .windows
                .heartbeat_secs,
            Windows::MAX_SECS
        );
        let over = format!(
            "{{\"windows\": {{\"heartbeat_secs\": {}}}}}",
            Windows::MAX_SECS + 1
        );
        assert!(RawConfig::from_json(Path::new("c.json"), &over).is_err());
    }

    #[test]
    fn copy_limits_merge_and_are_checked() {
        let c =
            RawConfig::from_json(Path::new("c.json"), r#"{"saved": {"keep_days": 7}}"#).unwrap();
        assert_eq!(c.saved.keep_days, 7);
        assert_eq!(c.saved.max_copy_bytes, CopyLimits::default().max_copy_bytes);
        for bad in [
            r#"{"saved": {"max_copy_bytes": 10}}"#,
            r#"{"saved": {"max_copy_bytes": 100000, "max_total_bytes": 5000}}"#,
            r#"{"saved": {"keep_days": 0}}"#,
            r#"{"saved": {"keep": 3}}"#,
        ] {
            assert!(
                RawConfig::from_json(Path::new("c.json"), bad).is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn files_must_be_regular_small_utf8_and_may_have_a_bom() {
        let t = tempfile::tempdir().unwrap();
        let bom = t.path().join("bom.json");
        std::fs::write(&bom, b"\xef\xbb\xbf{\"exclude\": [\"x\"]}").unwrap();
        let c = RawConfig::load_layers(None, Some(&bom)).unwrap();
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
        let e = RawConfig::load_layers(None, Some(&fifo)).unwrap_err();
        assert!(e.to_string().contains("a FIFO"), "{e}");
        assert!(started.elapsed() < std::time::Duration::from_secs(2));
        let e = RawConfig::load_layers(None, Some(Path::new("/dev/zero"))).unwrap_err();
        assert!(e.to_string().contains("a device"), "{e}");
        let big = t.path().join("big.json");
        std::fs::write(&big, vec![b' '; MAX_CONFIG_BYTES as usize + 1]).unwrap();
        assert!(RawConfig::load_layers(None, Some(&big)).is_err());
        let latin1 = t.path().join("latin1.json");
        std::fs::write(&latin1, b"{\"exclude\": [\"\xe9\"]}").unwrap();
        let e = RawConfig::load_layers(None, Some(&latin1)).unwrap_err();
        assert!(e.to_string().contains("not UTF-8"), "{e}");
    }
}
