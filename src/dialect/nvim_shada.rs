//! `nvim-shada`: neovim's ShaDa temporary files, `main.shada.tmp.a` ... `main.shada.tmp.z`
//! beside the ShaDa file (`~/.local/state/nvim/shada/`).
//!
//! Format, from neovim's `src/nvim/shada.c` (`shada_write_file`): the new ShaDa file is
//! written to `<name>.tmp.<letter>` (opened `O_CREAT|O_EXCL|O_WRONLY|O_NOFOLLOW`, the first
//! letter whose file does not exist), then renamed over `<name>`. A killed nvim leaves the
//! temporary file behind; the next nvim takes the next letter, and once all 26 exist it stops
//! saving history, marks and registers ("E138: All ... tmp files exist, cannot write ShaDa
//! file!"). The content is binary msgpack and names no owner.
//!
//! Liveness: the writing nvim has the file open → `live`. Nobody has it open, every process
//! that could can be seen, and it is older than a rename takes → `stale`.

use super::message::Message;
use super::{Candidate, Dialect, DialectId, EntryKind, Windows, common};
use crate::judge::{Keeps, Said, When};
use crate::probe::Snapshot;
use crate::verdict::Owner;

pub struct NvimShada;

const PATTERNS: &[&str] = &["*.shada.tmp.[a-z]"];

/// Between closing the file and renaming it nvim holds it closed for an instant.
const MIN_AGE_MS: i64 = 2_000;

/// What neovim says when every temporary name for its ShaDa file is taken.
const MESSAGES: &[Message] = &[Message::en(
    "neovim",
    r"E138: All (?P<file>\S+?)\.tmp\.X files exist",
    &["{file}.tmp.*"],
    "E138: All /home/me/.local/state/nvim/shada/main.shada.tmp.X files exist, cannot write ShaDa file!",
)];

impl Dialect for NvimShada {
    fn id(&self) -> DialectId {
        DialectId::NVIM_SHADA
    }

    fn patterns(&self) -> &'static [&'static str] {
        PATTERNS
    }

    fn messages(&self) -> &'static [Message] {
        MESSAGES
    }

    fn recognise(&self, c: &Candidate<'_>) -> bool {
        let name = c.file_name().as_encoded_bytes();
        c.kind == EntryKind::File
            && name.len() > 11
            && name[..name.len() - 1].ends_with(b".shada.tmp.")
            && name[name.len() - 1].is_ascii_lowercase()
    }

    fn read(&self, c: &Candidate<'_>, snap: &Snapshot, _windows: &Windows) -> Said {
        let name = c.file_name().to_string_lossy();
        let target = name
            .rsplit_once(".tmp.")
            .map(|(t, _)| t)
            .unwrap_or(&name)
            .to_string();
        let owner = Owner {
            detail: Some(format!(
                "neovim ShaDa being written, to replace {}",
                common::field(&target)
            )),
            ..Owner::default()
        };
        let mut said = Said::claims(owner)
            .claim(Keeps::Open {
                promise: format!(
                    "nvim writes the new ShaDa file under this name, holding it open, and renames it over {} at once: one nobody has open was left by an nvim killed while writing",
                    common::field(&target)
                ),
            })
            .note(
                When::IfStale,
                "while such files exist nvim writes the next letter; when all 26 exist it stops saving ShaDa (E138)",
            );
        let age = common::age_ms(c.mtime_ms(), snap);
        if age < MIN_AGE_MS {
            said = said.doubt(format!(
                "written {} ago: nvim may be about to rename it",
                common::fmt_age(age)
            ));
        }
        said
    }
}
