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
use crate::judge::{Judgement, Keeps, Placed, Said, When};
use crate::probe::Snapshot;
use crate::verdict::Owner;

pub struct NvimShada;

const PATTERNS: &[&str] = &["*.shada.tmp.[a-z]"];

/// Between closing the file and renaming it nvim holds it closed for an instant.
const MIN_AGE_MS: i64 = 2_000;

/// Whether the file is nvim's: shaped as the start of a ShaDa file (empty, as just created,
/// or beginning with a ShaDa header entry, type 1, whose map names its generator `nvim`), in
/// nvim's ShaDa directory (`…/nvim/shada/`) or beside the ShaDa file it is to replace.
fn placed(c: &Candidate<'_>, target: &str, snap: &Snapshot) -> Result<Placed, String> {
    let shape = if c.content.is_empty() {
        "empty, as nvim creates it"
    } else if c.content.first() == Some(&0x01)
        && c.content
            .windows(b"nvim".len())
            .take(256)
            .any(|w| w == b"nvim")
    {
        "a ShaDa header written by nvim"
    } else {
        return Err("its content is no ShaDa file's start (a header entry of nvim's)".into());
    };
    let dir = c.path.parent().unwrap_or(c.path);
    let in_shada_dir = dir.file_name().is_some_and(|n| n == "shada")
        && dir
            .parent()
            .and_then(|p| p.file_name())
            .is_some_and(|n| n == "nvim");
    let beside = snap
        .lstat(&c.path.with_file_name(target))
        .is_ok_and(|m| m.is_file());
    if !in_shada_dir && !beside {
        return Err(format!(
            "it is neither in nvim's ShaDa directory nor beside a ShaDa file {}",
            common::field(target)
        ));
    }
    Ok(Placed::by(format!(
        "{shape}, {}",
        if in_shada_dir {
            "in nvim's ShaDa directory"
        } else {
            "beside the ShaDa file it replaces"
        }
    )))
}

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

    fn about(&self) -> super::About {
        super::About {
            writer: "Neovim (its ShaDa file being written)",
            programs: &["nvim", "neovim"],
            found_as: "`*.shada.tmp.[a-z]` beside the ShaDa file",
            judged_by: "open in a process: live; nobody has it open: stale (nvim was killed while writing; with all 26 letters taken it stops saving ShaDa, E138)",
            rules: &["open-released"],
            source: Some("Neovim `src/nvim/shada.c`"),
        }
    }

    fn patterns(&self) -> &'static [&'static str] {
        PATTERNS
    }

    fn messages(&self) -> &'static [Message] {
        MESSAGES
    }

    fn recognise(&self, c: &Candidate<'_>, _snap: &Snapshot) -> bool {
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
        let placed = match placed(c, &target, snap) {
            Ok(p) => p,
            Err(why) => {
                return Judgement::unknown(format!(
                    "named like a neovim ShaDa temporary file, but {why}: whose it is cannot be told"
                ))
                .into();
            }
        };
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
                placed,
            })
            .note(
                When::IfStale,
                "while such files exist nvim writes the next letter; when all 26 exist it stops saving ShaDa (E138)",
            );
        if let Err(why) = crate::judge::proven_older(c.meta.ctime_ms(), MIN_AGE_MS, snap) {
            said = said.doubt(format!("{why}: nvim may be about to rename it"));
        }
        said
    }
}
