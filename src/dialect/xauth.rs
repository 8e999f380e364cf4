//! `xauth`: the lock pair of an X authority file (`~/.Xauthority-c` and `~/.Xauthority-l`, the
//! same beside `$XAUTHORITY`, startx's `.serverauth.N`, a display manager's `xauth_XXXXXX`) and
//! of an ICE authority file (`~/.ICEauthority-c`, `-l`).
//!
//! Format, from libXau's `AuLock.c` (`XauLockAuth`) and libICE's `authutil.c`
//! (`IceLockAuthFile`), which take the same lock: `FILE-c` is created empty with
//! `O_CREAT|O_EXCL`, then hard-linked to `FILE-l`; the lock is held while `FILE-l` exists, and
//! `XauUnlockAuth` unlinks both. Nothing names the holder. xauth (`process.c`) takes it with 10
//! tries 2 s apart and a dead time of 600 s: while the pair is younger than that, every xauth
//! gives up after 20 s, "timeout in locking authority file", and breaks it itself only once
//! `FILE-c` is ten minutes old (or with `xauth -b`). iceauth (`process.c`) does the same for
//! the ICE authority file; session managers (gnome-session, xfce4-session, ksmserver, xsm)
//! lock it with `IceLockAuthFile` when they write it. Interactive xauth holds the lock for its
//! whole session.
//!
//! Liveness: only a live process of the tool proves the pair held. The judge checks the
//! tool's condition ([`crate::judge::Contract`]): no xauth (for an ICE authority file, no
//! iceauth or session manager) at work on that authority file, known by its executable (one
//! works on the file its `-f` names, else on `$XAUTHORITY` (`$ICEAUTHORITY`), else on
//! `$HOME/.Xauthority` (`.ICEauthority`): `XauFileName` in libXau's `AuFileName.c`, xauth's
//! `main`; it counts when that names the file's directory, or when it works there), nobody with the
//! pair or the authority file itself open (the authority file is held with the pair), every
//! process visible, older than 2 s → stale. Both names of the pair are listed: xauth is stuck
//! while either exists.

use std::path::{Path, PathBuf};

use super::message::Message;
use super::{Candidate, Dialect, DialectId, EntryKind, Windows, common};
use crate::judge::{Contract, Placed, Said, Scope, When, Writers};
use crate::probe::{FileKey, Snapshot};
use crate::verdict::Owner;

pub struct Xauth;

const PATTERNS: &[&str] = &[
    "*authority-[cl]",
    "xauth_*-[cl]",
    ".serverauth.*-[cl]",
    ".xauth*-[cl]",
];

/// Programs that take an X authority file's lock: xauth (which startx, sshd, sddm and
/// LightDM run), and xdm, which calls `XauLockAuth` itself.
pub const X_WRITERS: &[&str] = &["xauth", "xdm"];

/// Programs that take an ICE authority file's lock: iceauth and the session managers.
pub const ICE_WRITERS: &[&str] = &[
    "iceauth",
    "gnome-session*",
    "xfce4-session",
    "ksmserver",
    "xsm",
    "lxsession",
    "mate-session",
];

/// The directory of the authority file an xauth or iceauth command line names with `-f`
/// (relative to where it started).
fn dash_f_dirs(args: &[String]) -> Vec<PathBuf> {
    args.windows(2)
        .filter(|w| w[0] == "-f")
        .map(|w| {
            let file = Path::new(&w[1]);
            match file.parent() {
                Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
                _ => PathBuf::from("."),
            }
        })
        .collect()
}

/// The environment variables that name an authority file, or the home it defaults to.
const AUTHORITY_VARS: &[&str] = &["XAUTHORITY", "ICEAUTHORITY", "HOME"];

/// Which authority file a pair locks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    X,
    Ice,
}

/// The authority file a lock name belongs to, its partner (`-c` ↔ `-l`) and its kind.
fn parts(lock: &Path) -> Option<(PathBuf, PathBuf, Kind)> {
    let name = lock.file_name()?.to_str()?;
    let (base, partner) = if let Some(b) = name.strip_suffix("-c") {
        (b, format!("{b}-l"))
    } else {
        let b = name.strip_suffix("-l")?;
        (b, format!("{b}-c"))
    };
    if base.is_empty() {
        return None;
    }
    let kind = if base.contains("ICEauthority") {
        Kind::Ice
    } else {
        Kind::X
    };
    Some((
        lock.with_file_name(base),
        lock.with_file_name(partner),
        kind,
    ))
}

/// What xauth and iceauth print when the authority file's lock pair is there.
const MESSAGES: &[Message] = &[Message::en(
    "xauth",
    r"timeout in locking authority file (?P<file>\S+)",
    &["{file}-c", "{file}-l"],
    "xauth:  timeout in locking authority file /home/me/.Xauthority",
)];

impl Dialect for Xauth {
    fn id(&self) -> DialectId {
        DialectId::XAUTH
    }

    fn about(&self) -> super::About {
        super::About {
            writer: "xauth and everything using libXau; iceauth and session managers through libICE",
            programs: &["xauth", "iceauth", "libxau", "libice"],
            found_as: "the lock pair `FILE-c` and `FILE-l` (empty, hard-linked) beside an X authority file (`~/.Xauthority`, startx's `.serverauth.N`, `xauth_*`) or an ICE authority file (`~/.ICEauthority`)",
            judged_by: "the tool's own condition: an xauth (for ICE: iceauth or a session manager) running on this host, or anyone with the pair or the authority file open: live; none, every process visible, older than 2 s: stale. Either name alone makes every xauth give up after 20 s",
            rules: &["writer-absent"],
            source: Some(
                "libXau `AuLock.c`, libICE `authutil.c`, xauth's and iceauth's `process.c`",
            ),
        }
    }

    fn patterns(&self) -> &'static [&'static str] {
        PATTERNS
    }

    fn messages(&self) -> &'static [Message] {
        MESSAGES
    }

    fn recognise(&self, c: &Candidate<'_>, _snap: &Snapshot) -> bool {
        c.kind == EntryKind::File && c.complete && c.content.is_empty() && parts(c.path).is_some()
    }

    fn read(&self, c: &Candidate<'_>, snap: &Snapshot, _windows: &Windows) -> Said {
        let Some((file, partner, kind)) = parts(c.path) else {
            return Said::unparseable("X authority", "its name is not FILE-c or FILE-l");
        };
        if !c.content.is_empty() {
            return Said::unparseable("X authority", "the lock pair is empty, this file is not");
        }
        let shown = common::field(&file.to_string_lossy());
        let (what, writers, tool) = match kind {
            Kind::X => ("X authority file", X_WRITERS, "xauth"),
            Kind::Ice => ("ICE authority file", ICE_WRITERS, "iceauth"),
        };
        let owner = Owner {
            detail: Some(format!(
                "lock pair of the {what} {shown} (FILE-c made first, FILE-l linked to it; empty)"
            )),
            ..Owner::default()
        };
        let mut said = Said::claims(owner)
            .claim(Contract {
                placed: Placed::by(format!(
                    "an empty {tool} lock pair (FILE-c, FILE-l) named after the {what} {shown}"
                )),
                writer: Writers::named(writers),
                what: tool,
                at: format!("the directory of the {what} {shown}"),
                says: format!(
                    "{tool} breaks the pair itself only once FILE-c is 10 minutes old (its dead time) or with `{tool} -b`: a pair held by no running {tool} is left behind"
                ),
                place: file.clone(),
                scope: Scope::Dirs {
                    dirs: vec![file.parent().unwrap_or(&file).to_path_buf()],
                    named: dash_f_dirs,
                    env: AUTHORITY_VARS,
                },
                min_hold_ms: 2_000,
            })
            .note(
                When::IfStale,
                format!(
                    "while FILE-c or FILE-l exists, {tool} tries 10 times 2 s apart and gives up: \"timeout in locking authority file {shown}\"; both go"
                ),
            );
        if let Ok(m) = snap.lstat(&file) {
            said = said.held_with(FileKey::of(&m), format!("the {what} itself"));
        }
        if let Ok(m) = snap.lstat(&partner)
            && FileKey::of(&m) != c.key()
        {
            said = said.held_with(FileKey::of(&m), "the other file of the pair");
        }
        said
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_the_authority_file_and_the_partner() {
        let (file, partner, kind) = parts(Path::new("/home/a/.Xauthority-c")).unwrap();
        assert_eq!(file, Path::new("/home/a/.Xauthority"));
        assert_eq!(partner, Path::new("/home/a/.Xauthority-l"));
        assert_eq!(kind, Kind::X);
        let (_, partner, kind) = parts(Path::new("/home/a/.ICEauthority-l")).unwrap();
        assert_eq!(partner, Path::new("/home/a/.ICEauthority-c"));
        assert_eq!(kind, Kind::Ice);
        assert!(parts(Path::new("/x/-c")).is_none());
        assert!(parts(Path::new("/x/auth")).is_none());
    }

    #[test]
    fn dash_f_names_the_authority_files_directory() {
        let args = ["xauth", "-f", "/tmp/a/auth", "list", "-f", "rel"].map(String::from);
        assert_eq!(
            dash_f_dirs(&args),
            [PathBuf::from("/tmp/a"), PathBuf::from(".")]
        );
    }
}
