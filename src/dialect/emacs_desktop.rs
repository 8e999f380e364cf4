//! `emacs-desktop`: the lock of an Emacs desktop file, `.emacs.desktop.lock` beside
//! `.emacs.desktop` (in `~/.emacs.d/`, `~/.config/emacs/`, `~`, or any `desktop-dirname`).
//!
//! Format, from Emacs's `lisp/desktop.el`: `desktop-claim-lock` writes the owner's
//! `(emacs-pid)` in decimal, nothing else; `desktop-release-lock` deletes it when Emacs saves
//! its desktop for the last time. `desktop-owner` reads the PID back without checking that it
//! runs, so after a crash every later Emacs asks "Warning: desktop file appears to be in use
//! by process with PID N ... Use desktop file anyway?" (or, in a daemon, or with
//! `desktop-load-locked-desktop` nil, does not load the desktop: "Desktop file in use; not
//! loaded.").
//!
//! Liveness: the PID by the PID rules, written when the file was: live for an Emacs.

use super::message::Message;
use super::{Candidate, Dialect, DialectId, EntryKind, Windows, common};
use crate::judge::{OwnerClaim, Said, When, Writers};
use crate::probe::Snapshot;
use crate::verdict::Owner;

pub struct EmacsDesktop;

const PATTERNS: &[&str] = &[".emacs.desktop.lock"];

/// Emacs under its usual executable names (`emacs`, `emacs-gtk`, `emacs-nox`, `emacs-29.1`).
const EMACSES: &[&str] = &["emacs", "emacs-*"];

/// What Emacs asks when its desktop file is locked.
const MESSAGES: &[Message] = &[Message::en(
    "Emacs",
    r"desktop file appears to be in use by (?:process with )?PID (?P<pid>\d+)",
    &[
        "~/.emacs.d/.emacs.desktop.lock",
        "~/.config/emacs/.emacs.desktop.lock",
        "~/.emacs.desktop.lock",
    ],
    "Warning: desktop file appears to be in use by process with PID 4242.",
)];

impl Dialect for EmacsDesktop {
    fn id(&self) -> DialectId {
        DialectId::EMACS_DESKTOP
    }

    fn about(&self) -> super::About {
        super::About {
            writer: "Emacs (its desktop file)",
            programs: &["emacs"],
            found_as: "`.emacs.desktop.lock` beside `.emacs.desktop`, holding the owner's PID",
            judged_by: "the PID: live for an Emacs",
            rules: &["pid-gone", "pid-reused", "earlier-boot"],
            source: Some("Emacs `lisp/desktop.el` (`desktop-claim-lock`)"),
        }
    }

    fn patterns(&self) -> &'static [&'static str] {
        PATTERNS
    }

    fn messages(&self) -> &'static [Message] {
        MESSAGES
    }

    fn recognise(&self, c: &Candidate<'_>, _snap: &Snapshot) -> bool {
        c.kind == EntryKind::File
            && c.file_name() == ".emacs.desktop.lock"
            && common::looks_like_pid(&c.text())
    }

    fn read(&self, c: &Candidate<'_>, _snap: &Snapshot, _windows: &Windows) -> Said {
        let pid = match common::parse_pid(&c.text()) {
            Ok(p) => p,
            Err(why) => return Said::unparseable("Emacs desktop", why),
        };
        let desktop = c.path.with_file_name(".emacs.desktop");
        let owner = Owner {
            pid: Some(pid),
            detail: Some(format!(
                "Emacs desktop lock of {}",
                common::field(&desktop.to_string_lossy())
            )),
            ..Owner::default()
        };
        Said::claims(owner)
            .claim(OwnerClaim::pid(pid, Writers::named(EMACSES)))
            .note(
                When::IfStale,
                "every Emacs that reads this desktop asks whether to use it anyway, \"in use by process with PID\", until it is gone",
            )
    }
}
