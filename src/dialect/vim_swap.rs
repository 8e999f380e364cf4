//! `vim-swap`: Vim's swap files (`.NAME.swp`, `.swo`, ... `.swa`; `NAME.swp` without the dot
//! when `'directory'` points elsewhere). Block 0 is binary: magic `b0`, version, then the
//! owner's PID at byte 24 (4 bytes, little-endian), user name at 28 (40 bytes), host name at
//! 68 (40 bytes), the edited file at 108 (900 bytes; its last byte, 1007, is 0x55 when the
//! buffer holds changes that were never written).
//!
//! GNU nano writes the same block 0 as its lock file when locking is on (`--locking`, `set
//! locking`): `b0nano 7.2`, its PID at 24, user at 28, host at 68, the file at 108 and 0x55 at
//! 1007 for a modified buffer (nano's `src/files.c`, `write_lockfile`). It never checks that
//! PID: a nano killed leaves the file, and every later nano asks "File NAME is being edited by
//! USER (with nano 7.2, PID N); open anyway?". nano's lock holds no text, so there is nothing
//! in it to recover, whatever its flag says.
//!
//! Liveness: the PID on the same host is alive and started before the swap file was last
//! written: `live` when it is a vim (or another program known to write this layout), and
//! `unknown` when it is not (other editors write vim's layout too: a name proves nothing). A swap file holding unsaved changes is reported as such, with the
//! command that recovers them, whatever its verdict.

use std::path::{Path, PathBuf};

use super::common;
use super::message::Message;
use super::{Candidate, Dialect, DialectId, EntryKind, Windows};
use crate::judge::{Judgement, OwnerClaim, Said, When, Writers};
use crate::probe::Snapshot;
use crate::verdict::Owner;

pub struct VimSwap;

/// Names of programs that write vim swap files (and nano, which writes the same block 0 as
/// its lock file).
pub const VIMS: &[&str] = &[
    "vim", "vi", "nvim", "gvim", "view", "rvim", "rview", "evim", "gview", "vimdiff", "ex", "nano",
];

const PID_AT: usize = 24;
const USER_AT: usize = 28;
const HOST_AT: usize = 68;
const FNAME_AT: usize = 108;
const FNAME_LEN: usize = 900;
const DIRTY_AT: usize = FNAME_AT + FNAME_LEN - 1;
/// `b0_dirty` when the buffer was changed.
const DIRTY: u8 = 0x55;
/// Where Vim's block 0 ends: the byte-order magics and `b0_magic_char` follow the fields.
const BLOCK0_LEN: usize = 1024;

/// What block 0 of a swap file says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SwapInfo {
    /// `VIM 9.0` and the like.
    pub version: String,
    pub pid: u32,
    pub user: String,
    pub host: String,
    /// The edited file as vim recorded it (absolute, or starting with `~/`); may be empty.
    pub file: String,
    pub dirty: bool,
}

/// A NUL-terminated string field.
fn cstr(bytes: &[u8]) -> String {
    let end = bytes.iter().position(|b| *b == 0).unwrap_or(bytes.len());
    common::field(&String::from_utf8_lossy(&bytes[..end]))
}

/// Parses block 0.
pub fn parse(content: &[u8]) -> Result<SwapInfo, String> {
    if !content.starts_with(b"b0") {
        return Err(format!(
            "it does not start with vim's magic \"b0\" but {}",
            common::excerpt(&content[..content.len().min(8)])
        ));
    }
    if content.len() < DIRTY_AT + 1 {
        return Err(format!(
            "block 0 is cut short: {} bytes where vim writes at least {BLOCK0_LEN}",
            content.len()
        ));
    }
    let pid = u32::from_le_bytes(content[PID_AT..PID_AT + 4].try_into().expect("4 bytes"));
    Ok(SwapInfo {
        version: cstr(&content[2..12]),
        pid,
        user: cstr(&content[USER_AT..USER_AT + 40]),
        host: cstr(&content[HOST_AT..HOST_AT + 40]),
        file: cstr(&content[FNAME_AT..FNAME_AT + FNAME_LEN - 2]),
        dirty: content[DIRTY_AT] == DIRTY,
    })
}

/// Whether the host vim recorded is this host: vim keeps at most 39 bytes of the name.
fn same_host(recorded: &str, ours: &str) -> bool {
    let mut cut = ours.len().min(39);
    while !ours.is_char_boundary(cut) {
        cut -= 1;
    }
    recorded == ours || (recorded.len() >= 39 && recorded == &ours[..cut])
}

fn is_swap_name(name: &[u8]) -> bool {
    let Some(ext) = name.len().checked_sub(4).map(|i| &name[i..]) else {
        return false;
    };
    ext.len() == 4 && ext.starts_with(b".sw") && (b'a'..=b'p').contains(&ext[3])
}

/// What vim (and neovim, and nano for its own lock) shows when it finds a swap file: `E325`
/// and the swap file's name in quotes, whatever the language; the lines after it say which
/// file it protects and which process wrote it. (A long name may be wrapped by the terminal.)
const MESSAGES: &[Message] = &[
    Message::en(
        "vim",
        r#"(?s)E325:.*?"(?P<path>[^"]*?\.sw[a-p])""#,
        &["{path}", "{file:dir}/{path:name}"],
        r#"E325: ATTENTION
Found a swap file by the name ".notes.txt.swp""#,
    ),
    Message::en(
        "vim",
        r"(?m)^\s*file name: (?P<file>.+?)\s*$",
        &[],
        "         file name: ~/notes.txt",
    ),
    Message::en(
        "vim",
        r"(?m)^\s*process ID: (?P<pid>\d+)",
        &[],
        "        process ID: 4242 (STILL RUNNING)",
    ),
    Message::en(
        "nano",
        r"File (?P<file>.+?) is being edited(?: by \S+)? \(with [^,\n]+, PID (?P<pid>\d+)\)",
        &["{file:dir}/.{file:name}.swp"],
        "File notes.txt is being edited by root (with nano 7.2, PID 4242); continue?",
    ),
];

impl Dialect for VimSwap {
    fn id(&self) -> DialectId {
        DialectId::VIM_SWAP
    }

    fn patterns(&self) -> &'static [&'static str] {
        &[".*.sw[a-p]", "*.swp"]
    }

    fn messages(&self) -> &'static [Message] {
        MESSAGES
    }

    fn recognise(&self, c: &Candidate<'_>) -> bool {
        c.kind == EntryKind::File
            && c.content.starts_with(b"b0")
            && is_swap_name(c.file_name().as_encoded_bytes())
    }

    fn read(&self, c: &Candidate<'_>, snap: &Snapshot, _windows: &Windows) -> Said {
        let info = match parse(c.content) {
            Ok(info) => info,
            Err(why) => return Said::unparseable("vim swap", why),
        };
        let owner = Owner {
            pid: Some(info.pid as i64),
            hostname: (!info.host.is_empty()).then(|| info.host.clone()),
            user: (!info.user.is_empty()).then(|| info.user.clone()),
            created_at: None,
            detail: Some(if info.file.is_empty() {
                format!("{}, unnamed buffer", info.version)
            } else {
                format!("{}, editing {}", info.version, info.file)
            }),
        };
        // Vim truncates the host name; compare the way it wrote it.
        let host = (!info.host.is_empty() && !same_host(&info.host, &snap.host.hostname))
            .then(|| info.host.clone());
        let claim = OwnerClaim::pid(info.pid as i64, Writers::named(VIMS)).host(host);
        if info.version.starts_with("nano") {
            // A lock file only: no text in it to recover.
            return Said::claims(owner)
                .claim(claim)
                .unsaved(false)
                .note(
                    When::Always,
                    "nano's lock file (locking on): it holds no text, so there is nothing in it to recover",
                )
                .note(
                    When::IfStale,
                    "nano asks \"File ... is being edited ...; open anyway?\" for as long as it exists",
                );
        }
        let said = Said::claims(owner).claim(claim).unsaved(info.dirty);
        if !info.dirty {
            return said.note(
                When::Always,
                "the swap file holds no unsaved changes (dirty flag not set)",
            );
        }
        // Advice follows the verdict: recovery is for a swap file whose editor is gone.
        let advice = match written_since(c.path) {
            Some(file) => format!(
                "the swap file holds unsaved changes, but {} was written after its last change, as recovering it (`{}`, then `:w`) leaves it: if you have recovered it, the swap file is all that is left to remove; if not, recover first",
                file.display(),
                recover_command(c.path, c.content)
            ),
            None => format!(
                "the swap file holds unsaved changes: recover them with `{}` before removing it",
                recover_command(c.path, c.content)
            ),
        };
        said.note(When::IfStale, advice)
        .note(
            When::IfLive,
            "its editor is running with changes not yet saved: they are in that editor, not something to recover",
        )
        .note(
            When::Otherwise,
            "the swap file holds unsaved changes; whether its editor still runs is not proven, so it is not a case for recovery here",
        )
    }
}

/// For a swap file judged `j`: the command that recovers its unsaved changes, when there are
/// some to recover (advice follows the verdict: recovery is for a swap file whose editor is
/// proven gone, the only verdict reclaim acts on). See [`recover_command`].
pub fn recover_hint(swap: &Path, block0: &[u8], j: &Judgement) -> Option<String> {
    (j.unsaved_changes == Some(true) && j.verdict().reclaimable())
        .then(|| recover_command(swap, block0))
}

/// The editor that recovers a swap file: Neovim for one in Neovim's swap directory
/// (`~/.local/state/nvim/swap/`; Neovim writes the same block 0, "VIM 8.0"), Vim for the
/// others Vim's layout names; `None` when block 0 names another program.
pub fn recovering_editor(swap: &Path, block0: &[u8]) -> Option<&'static str> {
    let version = parse(block0).map(|i| i.version).unwrap_or_default();
    if !version.is_empty() && !version.starts_with("VIM") {
        return None;
    }
    let nvim = swap
        .parent()
        .is_some_and(|d| d.ends_with("nvim/swap") || d.to_string_lossy().contains("/nvim/swap/"));
    Some(if nvim { "nvim" } else { "vim" })
}

/// The command that recovers a swap file's changes, e.g. `vim -r /home/me/notes.txt` (or
/// `nvim -r` for Neovim's swap files): raw text (a path that is not UTF-8 is shown lossily),
/// shell-quoted when needed; views escape it. It names [`recover_target`]. A swap file whose
/// block 0 names another program gets that program's name instead of a command that would
/// recover nothing.
pub fn recover_command(swap: &Path, block0: &[u8]) -> String {
    let target = crate::text::shell_quote(&recover_target(swap).to_string_lossy());
    match recovering_editor(swap, block0) {
        Some(editor) => format!("{editor} -r {target}"),
        None => format!(
            "the recovery of the program that wrote it (its block 0 names \"{}\") on {target}",
            parse(block0).map(|i| i.version).unwrap_or_default()
        ),
    }
}

/// The file to give `vim -r` for a swap file: the file the swap protects when it exists
/// (`.notes.txt.swp` beside `notes.txt`, or `%home%me%notes.txt.swp` in a `directory//` swap
/// directory), else the swap file itself (`vim -r` accepts both).
pub fn recover_target(swap: &Path) -> PathBuf {
    original(swap)
        .filter(|p| crate::probe::reach::lstat(p).is_ok())
        .unwrap_or_else(|| swap.to_path_buf())
}

/// The file a swap file protects, when it was written after the swap file's last change
/// (its mtime is later): what recovering it (`vim -r FILE`, then `:w`) leaves, vim leaving the
/// old swap file in place. Its changes are then probably in the file, though any other write
/// of the file since looks the same: a person decides, the swap file is still reported as
/// holding unsaved changes.
pub fn written_since(swap: &Path) -> Option<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    let file = original(swap)?;
    let f = crate::probe::reach::stat(&file).ok()?;
    let s = crate::probe::reach::lstat(swap).ok()?;
    ((f.mtime(), f.mtime_nsec()) > (s.mtime(), s.mtime_nsec())).then_some(file)
}

/// `dir/.name.swp` → `dir/name`; `dir/name.swp` → `dir/name`; `dir/%a%b%name.swp` →
/// `/a/b/name` (the full-path names of a `directory//` setting).
fn original(swap: &Path) -> Option<PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    let name = swap.file_name()?.as_bytes();
    let stem = name.get(..name.len().checked_sub(4)?)?;
    let ext = &name[stem.len()..];
    if !(ext.len() == 4 && ext.starts_with(b".sw") && (b'a'..=b'p').contains(&ext[3])) {
        return None;
    }
    if stem.starts_with(b"%") {
        let full: Vec<u8> = stem
            .iter()
            .map(|&b| if b == b'%' { b'/' } else { b })
            .collect();
        return Some(PathBuf::from(std::ffi::OsStr::from_bytes(&full)));
    }
    let stem = stem.strip_prefix(b".").unwrap_or(stem);
    if stem.is_empty() {
        return None;
    }
    Some(swap.with_file_name(std::ffi::OsStr::from_bytes(stem)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn swap_names() {
        assert!(is_swap_name(b".notes.txt.swp"));
        assert!(is_swap_name(b".notes.txt.swa"));
        assert!(is_swap_name(b"notes.txt.swp"));
        assert!(!is_swap_name(b".notes.txt.swz"));
        assert!(!is_swap_name(b"swp"));
    }

    #[test]
    fn truncated_host_names() {
        let long = "a".repeat(50);
        assert!(same_host(&"a".repeat(39), &long));
        assert!(same_host("vm", "vm"));
        assert!(!same_host("vm", "vm2"));
    }

    #[test]
    fn short_block_is_an_error() {
        assert!(parse(b"b0VIM 9.0").is_err());
        assert!(parse(&[0u8; 2000]).is_err());
    }

    #[test]
    fn recovery_names_the_protected_file_when_it_exists() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().to_str().unwrap();
        std::fs::write(t.path().join("notes.txt"), "x").unwrap();
        std::fs::write(t.path().join("my notes"), "x").unwrap();
        let mut j = Judgement::stale_for_test("gone");
        j.unsaved_changes = Some(true);
        let block0 = {
            let mut b = vec![0u8; 1024];
            b[..2].copy_from_slice(b"b0");
            b[2..9].copy_from_slice(b"VIM 9.0");
            b
        };
        let hint = |swap: &str| recover_hint(Path::new(swap), &block0, &j);
        assert_eq!(
            hint(&format!("{dir}/.notes.txt.swp")),
            Some(format!("vim -r {dir}/notes.txt"))
        );
        assert_eq!(
            hint(&format!("{dir}/my notes.swo")),
            Some(format!("vim -r '{dir}/my notes'"))
        );
        let encoded = format!("{dir}/notes.txt").replace('/', "%");
        assert_eq!(
            hint(&format!("/var/swap/{encoded}.swp")),
            Some(format!("vim -r {dir}/notes.txt"))
        );
        // No such file: the swap file itself.
        assert_eq!(
            hint(&format!("{dir}/.gone.txt.swp")),
            Some(format!("vim -r {dir}/.gone.txt.swp"))
        );
        assert_eq!(hint("/tmp/.swp"), Some("vim -r /tmp/.swp".into()));
        // A swap whose vim runs: nothing to recover (advice follows the verdict).
        let swap = format!("{dir}/.notes.txt.swp");
        let mut running = Judgement::live("alive");
        running.unsaved_changes = Some(true);
        assert_eq!(recover_hint(Path::new(&swap), &block0, &running), None);
        let mut saved = j.clone();
        saved.unsaved_changes = Some(false);
        assert_eq!(recover_hint(Path::new(&swap), &block0, &saved), None);
        // Neovim's own swap directory: Neovim recovers it.
        let nvim_dir = t.path().join(".local/state/nvim/swap");
        std::fs::create_dir_all(&nvim_dir).unwrap();
        let nvim_swap = nvim_dir.join(format!("{encoded}.swp"));
        assert_eq!(
            recover_command(&nvim_swap, &block0),
            format!("nvim -r {dir}/notes.txt")
        );
        // Another program's block 0: no vim command that would recover nothing.
        let mut other = block0.clone();
        other[2..12].copy_from_slice(b"XED 1.2\0\0\0");
        assert!(
            recover_command(Path::new(&swap), &other).contains("\"XED 1.2\""),
            "{}",
            recover_command(Path::new(&swap), &other)
        );
    }
}
