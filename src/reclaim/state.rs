//! The state directory: where reclaim keeps a copy of every lock it removes and the
//! `journal.jsonl` that maps each copy back to its original path (spec §5).

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::report::escape;
use crate::scan::Finding;

/// Name of the journal file in the state directory.
pub const JOURNAL: &str = "journal.jsonl";

/// `$XDG_STATE_HOME/locksmith`, else `~/.local/state/locksmith` (an `XDG_STATE_HOME` that
/// is not absolute is ignored, as the XDG spec says).
pub fn default_state_dir() -> PathBuf {
    if let Some(x) = std::env::var_os("XDG_STATE_HOME").map(PathBuf::from)
        && x.is_absolute()
    {
        return x.join("locksmith");
    }
    match std::env::var_os("HOME").map(PathBuf::from) {
        Some(home) if home.is_absolute() => home.join(".local/state/locksmith"),
        _ => std::env::temp_dir().join("locksmith-state"),
    }
}

/// Saves `content` as a new file under `state_dir/saved/` and appends the journal line that
/// points to it. Returns the copy's path.
pub fn save_and_journal(state_dir: &Path, f: &Finding, content: &[u8]) -> io::Result<PathBuf> {
    let saved_dir = state_dir.join("saved");
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&saved_dir)?;
    let stamp = jiff::Timestamp::now()
        .strftime("%Y%m%dT%H%M%S%.3fZ")
        .to_string();
    let name = safe_file_name(&f.path);
    let mut n = 0u32;
    let (copy_path, mut file) = loop {
        let candidate = saved_dir.join(match n {
            0 => format!("{stamp}-{name}"),
            n => format!("{stamp}-{n}-{name}"),
        });
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&candidate)
        {
            Ok(file) => break (candidate, file),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && n < 1000 => n += 1,
            Err(e) => return Err(e),
        }
    };
    file.write_all(content)?;
    file.sync_all()?;
    let j = &f.judgement;
    journal_append(
        state_dir,
        &serde_json::json!({
            "time": now_rfc3339(),
            "event": "reclaim",
            "path": escape::json_path(&f.path),
            "dialect": f.dialect,
            "kind": f.kind,
            "verdict": j.verdict,
            "evidence": j.evidence,
            "owner": j.owner,
            "unsaved_changes": j.unsaved_changes,
            "size": content.len(),
            "sha256": sha256_hex(content),
            "saved_to": escape::json_path(&copy_path),
        }),
    )?;
    Ok(copy_path)
}

/// Appends one JSON line to the journal (one `write` on an `O_APPEND` file).
pub(super) fn journal_append(state_dir: &Path, entry: &serde_json::Value) -> io::Result<()> {
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(state_dir)?;
    let mut line = serde_json::to_vec(entry).map_err(io::Error::other)?;
    line.push(b'\n');
    let mut f = OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        .open(state_dir.join(JOURNAL))?;
    f.write_all(&line)?;
    f.sync_data()
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

pub(super) fn now_rfc3339() -> String {
    jiff::Timestamp::now().to_string()
}

/// A file name for the copy: the lock's own name with anything but `[A-Za-z0-9._-]` replaced,
/// never starting with a dot, at most 100 bytes.
fn safe_file_name(path: &Path) -> String {
    let raw = path.file_name().map_or(&b"lock"[..], |n| n.as_bytes());
    let mut s: String = raw
        .iter()
        .map(|&b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'.' | b'_' | b'-' => b as char,
            _ => '_',
        })
        .take(100)
        .collect();
    if s.starts_with('.') {
        s.replace_range(0..1, "_");
    }
    if s.is_empty() {
        s.push_str("lock");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copy_names_are_safe() {
        assert_eq!(safe_file_name(Path::new("/x/.a b\n.lock")), "_a_b_.lock");
        assert_eq!(safe_file_name(Path::new("/")), "lock");
    }
}
