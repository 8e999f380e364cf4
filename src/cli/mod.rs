//! Non-interactive commands: `locksmith lock`, `locksmith start`, `locksmith --scan`, `locksmith inspect`,
//! `locksmith completions`, `locksmith journal`, `locksmith restore` and `locksmith why`.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

pub mod completions;
pub mod inspect;
pub mod journal;
pub mod lock;
#[cfg(test)]
mod reference;
pub mod replay;
pub mod restore;
pub mod scan;
pub mod start;
pub mod waiting;
pub mod why;

/// A hint for an error that says this user was denied (`EACCES`, "os error 13", or `EPERM`):
/// which path, whose it is, and to run as its owner or as root. `None` for any other error.
pub fn permission_hint(message: &str) -> Option<String> {
    let denied = [
        "(os error 13)",
        "(os error 1)",
        "Permission denied",
        "EACCES",
    ];
    if !denied.iter().any(|d| message.contains(d)) {
        return None;
    }
    let me = locksmith::reclaim::user_name(rustix::process::geteuid().as_raw());
    // The first path the message names, and the deepest part of it this user can see.
    let path = message
        .split_whitespace()
        .map(|w| {
            w.trim_start_matches('(')
                .trim_end_matches([':', ',', ';', ')'])
        })
        .find(|w| w.starts_with('/'));
    let Some(path) = path else {
        return Some(format!(
            "this user, {me}, was denied: run as the owner of the file or as root"
        ));
    };
    if let Some(why) = missing_right(Path::new(path), &me) {
        return Some(why);
    }
    let mut at = Path::new(path);
    let seen = loop {
        if let Ok(m) = std::fs::symlink_metadata(at) {
            break Some(m);
        }
        match at.parent() {
            Some(p) => at = p,
            None => break None,
        }
    };
    Some(match seen {
        Some(m) => {
            let whose = format!(
                "belongs to {}, mode {:o}",
                locksmith::reclaim::user_name(m.uid()),
                m.mode() & 0o7777
            );
            let at = at.display();
            if at.to_string() == path {
                format!("{path} {whose}, and this user is {me}: run as its owner or as root")
            } else {
                format!(
                    "this user, {me}, may not use {path}; {at} {whose}: run as its owner or as \
                     root"
                )
            }
        }
        None => format!("this user, {me}, may not use {path}: run as its owner or as root"),
    })
}

/// The first right this user lacks on the way to `path`, as the kernel would refuse it: search
/// (x) on a directory above it, then read (r) on it and, for a directory, search (x) too;
/// said with whose it is, its mode, and what to do (run as its owner or as root, or grant
/// the right with the `chmod` that would). `None` when nothing is missing that can be told.
fn missing_right(path: &Path, me: &str) -> Option<String> {
    use rustix::fs::{Access, AtFlags, CWD};
    let may = |p: &Path, a: Access| rustix::fs::accessat(CWD, p, a, AtFlags::EACCESS).is_ok();
    let mut ancestors: Vec<&Path> = path.ancestors().skip(1).collect();
    ancestors.reverse();
    let missing = ancestors
        .into_iter()
        .filter(|d| !d.as_os_str().is_empty())
        .find(|d| !may(d, Access::EXEC_OK))
        .map(|d| (d, 'x', "search", true))
        .or_else(|| {
            let m = std::fs::symlink_metadata(path).ok()?;
            if !may(path, Access::READ_OK) {
                Some((path, 'r', "read", m.is_dir()))
            } else if m.is_dir() && !may(path, Access::EXEC_OK) {
                Some((path, 'x', "search", true))
            } else {
                None
            }
        })?;
    let (at, right, name, dir) = missing;
    let m = std::fs::symlink_metadata(at).ok()?;
    let uid = rustix::process::geteuid().as_raw();
    let gids: Vec<u32> = std::iter::once(rustix::process::getegid().as_raw())
        .chain(
            rustix::process::getgroups()
                .unwrap_or_default()
                .into_iter()
                .map(|g| g.as_raw()),
        )
        .collect();
    let who = if m.uid() == uid {
        'u'
    } else if gids.contains(&m.gid()) {
        'g'
    } else {
        'o'
    };
    let what = if dir { "directory" } else { "file" };
    let below = if at == path {
        String::new()
    } else {
        format!(" (so nothing below it, {}, can be reached)", path.display())
    };
    Some(format!(
        "the {what} {} belongs to {}, mode {:o}, and this user, {me}, has no {name} ({right}) \
         right on it{below}: run as its owner or as root, or give the right (chmod \
         {who}+{right} {})",
        at.display(),
        locksmith::reclaim::user_name(m.uid()),
        m.mode() & 0o7777,
        locksmith::text::shell_quote(&at.to_string_lossy())
    ))
}

/// Prints `locksmith[ WHAT]: MESSAGE` on stderr, and the hint of a permission error after it.
pub fn report_error(what: &str, message: &str) {
    let name = if what.is_empty() {
        "locksmith".to_string()
    } else {
        format!("locksmith {what}")
    };
    eprintln!("{name}: {}", locksmith::text::escape(message));
    if let Some(hint) = permission_hint(message) {
        eprintln!("{name}: hint: {}", locksmith::text::escape(&hint));
    }
}

/// An error a command prints (one line, raw text: the caller escapes it) and the exit status
/// that goes with it.
pub struct Failure {
    pub code: i32,
    pub message: String,
}

impl Failure {
    pub fn new(code: i32, message: impl Into<String>) -> Self {
        Failure {
            code,
            message: message.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_permission_error_names_the_path_its_owner_and_what_to_do() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("config.json");
        std::fs::write(&file, "{}").unwrap();
        let msg = format!(
            "cannot read configuration file {}: Permission denied (os error 13)",
            file.display()
        );
        let hint = permission_hint(&msg).unwrap();
        assert!(
            hint.starts_with(&format!("{} belongs to ", file.display())),
            "{hint}"
        );
        assert!(hint.contains("run as its owner or as root"), "{hint}");
        assert!(hint.contains("(uid "), "{hint}");
        // A path that does not exist: its deepest existing part.
        let gone = dir.path().join("no/such/file");
        let hint = permission_hint(&format!("{}: (os error 13)", gone.display())).unwrap();
        assert!(
            hint.contains(&format!("{} belongs to", dir.path().display())),
            "{hint}"
        );
        assert_eq!(
            permission_hint("No such file or directory (os error 2)"),
            None
        );
    }
}
