//! Whose files a configuration may come from. A configuration decides what is hidden, what is
//! removed and which programs run (the ssh client that asks other hosts), so a file is read
//! only when nobody but the effective user and root can have written it: the file and every
//! directory above it are owned by the effective user or root, and none of them may be
//! written by others (a directory others may write to counts only when it is sticky, as `/tmp`
//! is: nobody else can then move or replace what is in it). A symbolic link on the way is
//! followed only when it too is owned by the effective user or root, and the directories it
//! leads to are checked like the rest. The same rule holds for a program the configuration
//! names.
//!
//! So root never reads another user's configuration: not under `sudo -E` (which keeps the
//! user's `HOME`), nor after `su` (which keeps `XDG_CONFIG_HOME`).

use std::fs::File;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Component, Path, PathBuf};

/// Why a file may not be trusted: a sentence about the path at fault.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Untrusted {
    /// The file or directory at fault.
    pub at: PathBuf,
    /// What is wrong with it (`is owned by uid 1000`).
    pub why: String,
    /// The uid the file or directory belongs to, when that is what is wrong.
    pub owner: Option<u32>,
}

impl std::fmt::Display for Untrusted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.at.display(), self.why)
    }
}

/// Whether `uid` may have written what this process reads as its own: the effective user or
/// root.
fn trusted_owner(uid: u32, me: u32) -> bool {
    uid == 0 || uid == me
}

fn owner_line(uid: u32, me: u32) -> String {
    if me == 0 {
        format!("is owned by uid {uid}: root reads only files owned by root")
    } else {
        format!("is owned by uid {uid}, not by you (uid {me}) or root")
    }
}

/// Checks that `meta` (of a directory above the file) was made by a trusted owner and that
/// nobody else may change what it holds.
fn check_dir(at: &Path, meta: &std::fs::Metadata, me: u32) -> Result<(), Untrusted> {
    if !trusted_owner(meta.uid(), me) {
        return Err(Untrusted {
            at: at.to_path_buf(),
            why: format!("(a directory above it) {}", owner_line(meta.uid(), me)),
            owner: Some(meta.uid()),
        });
    }
    let mode = meta.mode();
    if mode & 0o022 != 0 && mode & 0o1000 == 0 {
        return Err(Untrusted {
            at: at.to_path_buf(),
            why: format!(
                "(a directory above it) may be written by others and is not sticky (mode {:o}; chmod go-w it)",
                mode & 0o7777
            ),
            owner: None,
        });
    }
    Ok(())
}

/// Checks the symbolic links on the way to `path` (each must be owned by a trusted owner: its
/// target is then what that owner chose).
fn check_links(path: &Path, me: u32) -> Result<(), Untrusted> {
    let mut prefix = PathBuf::new();
    for c in path.components() {
        prefix.push(c);
        if !matches!(c, Component::Normal(_)) {
            continue;
        }
        if let Ok(m) = std::fs::symlink_metadata(&prefix)
            && m.file_type().is_symlink()
            && !trusted_owner(m.uid(), me)
        {
            return Err(Untrusted {
                at: prefix,
                why: format!("(a symbolic link on the way) {}", owner_line(m.uid(), me)),
                owner: Some(m.uid()),
            });
        }
    }
    Ok(())
}

/// Opens `path` for reading when nobody but the effective user and root can have written it
/// (see the module docs). `Ok(Err(..))` says why it is not trusted; `Err(..)` is an error
/// reading it (not found, permission denied). A FIFO is opened without waiting for a writer.
pub fn open_trusted(path: &Path) -> std::io::Result<Result<File, Untrusted>> {
    let me = rustix::process::geteuid().as_raw();
    let abs = std::path::absolute(path)?;
    if let Err(u) = check_links(&abs, me) {
        return Ok(Err(u));
    }
    let real = std::fs::canonicalize(&abs)?;
    let mut dir = real.parent();
    let mut above = Vec::new();
    while let Some(d) = dir {
        above.push(d);
        dir = d.parent();
    }
    for d in above.into_iter().rev() {
        let meta = std::fs::metadata(d)?;
        if let Err(u) = check_dir(d, &meta, me) {
            return Ok(Err(u));
        }
    }
    // The directories above cannot change now: open the file itself, never through a link.
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_NOFOLLOW)
        .open(&real)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        // No configuration at all (a FIFO, a device): the caller refuses it for what it is.
        return Ok(Ok(file));
    }
    if !trusted_owner(meta.uid(), me) {
        return Ok(Err(Untrusted {
            at: path.to_path_buf(),
            why: owner_line(meta.uid(), me),
            owner: Some(meta.uid()),
        }));
    }
    if meta.mode() & 0o022 != 0 {
        return Ok(Err(Untrusted {
            at: path.to_path_buf(),
            why: format!(
                "may be written by others (mode {:o}; chmod go-w it)",
                meta.mode() & 0o7777
            ),
            owner: None,
        }));
    }
    Ok(Ok(file))
}

/// Checks a program the configuration names (a path, or a name looked up in `PATH`) by the
/// same rule, and returns the path to run: a program found in a directory others may write
/// to would run their code.
pub fn trusted_program(name: &str) -> Result<PathBuf, String> {
    let found = if name.contains('/') {
        Some(PathBuf::from(name))
    } else {
        std::env::var_os("PATH").and_then(|paths| {
            std::env::split_paths(&paths)
                .filter(|d| d.is_absolute())
                .map(|d| d.join(name))
                .find(|p| std::fs::metadata(p).is_ok_and(|m| m.is_file()))
        })
    };
    let Some(path) = found else {
        return Err(format!("{name}: not found in PATH"));
    };
    match open_trusted(&path) {
        Ok(Ok(_)) => Ok(path),
        Ok(Err(u)) => Err(format!("{name} is not run: {u}")),
        Err(e) => Err(format!("{}: {e}", path.display())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn chmod(p: &Path, mode: u32) {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    #[test]
    fn a_file_that_others_may_write_is_not_trusted() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("config.json");
        std::fs::write(&file, "{}").unwrap();
        chmod(&file, 0o644);
        assert!(open_trusted(&file).unwrap().is_ok());
        chmod(&file, 0o664);
        let u = open_trusted(&file).unwrap().unwrap_err();
        assert!(u.why.contains("may be written by others"), "{u}");
        chmod(&file, 0o644);
        // A directory above it that others may write to, not sticky.
        chmod(dir.path(), 0o777);
        let u = open_trusted(&file).unwrap().unwrap_err();
        assert_eq!(u.at, dir.path().canonicalize().unwrap(), "{u}");
        assert!(u.why.contains("not sticky"), "{u}");
        // Sticky: others cannot move or replace what is in it.
        chmod(dir.path(), 0o1777);
        assert!(open_trusted(&file).unwrap().is_ok());
    }

    #[test]
    fn missing_files_are_errors_not_verdicts() {
        let dir = tempfile::tempdir().unwrap();
        let e = open_trusted(&dir.path().join("nope.json")).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::NotFound);
    }

    #[test]
    fn programs_are_found_in_path_and_checked() {
        let sh = trusted_program("sh").unwrap();
        assert!(sh.is_absolute(), "{}", sh.display());
        assert!(trusted_program("no-such-program-here").is_err());
        let dir = tempfile::tempdir().unwrap();
        let prog = dir.path().join("ssh");
        std::fs::write(&prog, "#!/bin/sh\n").unwrap();
        chmod(&prog, 0o777);
        let e = trusted_program(prog.to_str().unwrap()).unwrap_err();
        assert!(e.contains("may be written by others"), "{e}");
        chmod(&prog, 0o755);
        assert_eq!(trusted_program(prog.to_str().unwrap()).unwrap(), prog);
    }

    #[test]
    fn root_trusts_no_other_users_file() {
        if !rustix::process::geteuid().is_root() {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("config.json");
        std::fs::write(&file, "{}").unwrap();
        std::os::unix::fs::chown(&file, Some(65534), None).unwrap();
        let u = open_trusted(&file).unwrap().unwrap_err();
        assert_eq!(u.owner, Some(65534));
        assert!(u.why.contains("root reads only files owned by root"), "{u}");
        std::os::unix::fs::chown(&file, Some(0), None).unwrap();
        // The user's directory above it, or a link the user made on the way.
        let sub = dir.path().join("home");
        std::fs::create_dir(&sub).unwrap();
        std::fs::write(sub.join("config.json"), "{}").unwrap();
        std::os::unix::fs::chown(&sub, Some(65534), None).unwrap();
        let u = open_trusted(&sub.join("config.json")).unwrap().unwrap_err();
        assert_eq!(u.owner, Some(65534), "{u}");
        let link = dir.path().join("link.json");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        std::os::unix::fs::lchown(&link, Some(65534), None).unwrap();
        let u = open_trusted(&link).unwrap().unwrap_err();
        assert!(u.why.contains("symbolic link"), "{u}");
    }
}
