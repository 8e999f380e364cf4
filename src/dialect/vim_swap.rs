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
//!
//! Recovering is writing: `vim -r` names its buffer after the file block 0 records, so the
//! `:w` that follows writes what the swap file holds over that file, as whoever runs it. So
//! what locksmith offers to recover (the UI's `e`, every `vim -r` it suggests) is only a swap
//! file of the effective user whose block 0 names the very file its own name is for, in
//! directories nobody else can change ([`recovery`]); of any other it says why not.

use std::path::{Path, PathBuf};

use super::common;
use super::message::Message;
use super::{Action, Candidate, Command, Dialect, DialectId, EntryKind, Offered, Windows};
use crate::judge::{Judgement, OwnerClaim, Said, When, Writers};
use crate::probe::Snapshot;
use crate::verdict::{Flag, Owner};

pub struct VimSwap;

/// Names of programs that write vim swap files (and nano, which writes the same block 0 as
/// its lock file).
pub const VIMS: &[&str] = &[
    "vim", "vi", "nvim", "gvim", "view", "rvim", "rview", "evim", "gview", "vimdiff", "ex", "nano",
];

/// A swap file's flag: whether it holds changes never saved (removing it loses them).
pub fn unsaved(set: bool) -> Flag {
    Flag {
        key: Flag::UNSAVED_CHANGES,
        set,
        label: "unsaved changes",
        what: "vim swap",
        line: "this swap file holds edits that were never saved.",
        line_live: "Unsaved changes in a running editor: they are in that editor, save them there.",
        keeps: true,
    }
}

/// The help of the UI's key that recovers a swap file.
pub const RECOVER_KEY_HELP: &str =
    "Recover a vim swap file's unsaved changes: runs vim -r (or nvim -r) here, then comes back";

/// What recovering would have done, when it is refused ([`recovery`]).
pub const RECOVER_REFUSED: &str = "Recovering runs vim as you, and its :w writes the swap file's text over \
     the file its block 0 names: only your own swap file, naming the file its \
     name is for, is recovered here.";

/// What is done for a swap file holding unsaved changes: recover them in the editor that
/// wrote it (`vim -r`, `nvim -r`), offered unless that editor runs.
fn recover(editor: Option<&'static str>) -> Action {
    Action {
        verb: "recover",
        past: "recovered",
        program: editor,
        short: "vim -r",
        offered: Offered::UnlessLive,
        when_live: "its editor is running: save the changes there",
        done_note: "{file} was written after them (as `{command}` then `:w` leaves it): if you recovered them, remove the swap file (--reclaim --include-unsaved); if not, recover first",
        done_line: "{file} was written after them: if you recovered them, this swap file is all that is left to remove; if not:",
    }
}

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

    fn about(&self) -> super::About {
        super::About {
            writer: "Vim, Neovim (the same layout), GNU nano with `--locking`",
            programs: &["vim", "nvim", "neovim", "gvim", "nano"],
            found_as: "`.NAME.sw[a-p]`, and `NAME.swp` in a swap directory, starting with `b0`: block 0 with the PID at byte 24, user at 28, host at 68, the file at 108, 0x55 at 1007 for unsaved changes",
            judged_by: "the owner PID on this host: live for a vim, nvim or nano; reports unsaved changes and the editor that recovers them (`vim -r`, `nvim -r`); a nano lock holds no text to recover",
            rules: &["pid-gone", "pid-reused", "earlier-boot"],
            source: Some("Vim `src/memline.c` (block 0), nano `src/files.c` (`write_lockfile`)"),
        }
    }

    fn patterns(&self) -> &'static [&'static str] {
        &[".*.sw[a-p]", "*.swp"]
    }

    fn messages(&self) -> &'static [Message] {
        MESSAGES
    }

    fn action(&self, path: &Path, content: &[u8], j: &Judgement) -> Option<Action> {
        (j.flag(Flag::UNSAVED_CHANGES) == Some(true))
            .then(|| recover(recovering_editor(path, content)))
    }

    fn command(&self, path: &Path, uid: u32, content: &[u8]) -> Result<Command, String> {
        let r = recovery(path, uid, content)?;
        Ok(Command {
            // The swap file itself: vim recovers that very file, not any other swap file of
            // the same name it would find in its 'directory'.
            argv: vec![r.editor.into(), "-r".into(), r.swap.clone().into()],
            dir: path.parent().map(Path::to_path_buf),
            writes: r.file,
        })
    }

    fn done_since(&self, path: &Path) -> Option<PathBuf> {
        written_since(path)
    }

    fn recognise(&self, c: &Candidate<'_>, _snap: &Snapshot) -> bool {
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
                .flag(unsaved(false))
                .note(
                    When::Always,
                    "nano's lock file (locking on): it holds no text, so there is nothing in it to recover",
                )
                .note(
                    When::IfStale,
                    "nano asks \"File ... is being edited ...; open anyway?\" for as long as it exists",
                );
        }
        let said = Said::claims(owner).claim(claim).flag(unsaved(info.dirty));
        if !info.dirty {
            return said.note(
                When::Always,
                "the swap file holds no unsaved changes (dirty flag not set)",
            );
        }
        // Advice follows the verdict: recovery is for a swap file whose editor is gone, and
        // for the effective user's own (see `recovery`).
        let advice = match (
            recovery(c.path, c.meta.uid(), c.content),
            written_since(c.path),
        ) {
            (Err(why), _) => format!(
                "the swap file holds unsaved changes, which are not for you to recover: {why}"
            ),
            (Ok(r), Some(file)) => format!(
                "the swap file holds unsaved changes, but {} was written after its last change, as recovering it (`{}`, then `:w`) leaves it: if you have recovered it, the swap file is all that is left to remove; if not, recover first",
                file.display(),
                r.command()
            ),
            (Ok(r), None) => format!(
                "the swap file holds unsaved changes: recover them with `{}` before removing it",
                r.command()
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

/// For a swap file judged `j`, when it holds unsaved changes to recover (advice follows the
/// verdict: recovery is for a swap file whose editor is proven gone, the only verdict reclaim
/// acts on): the command that recovers them, or why they are not for the effective user to
/// recover ([`recovery_here`]).
pub fn recover_hint(swap: &Path, block0: &[u8], j: &Judgement) -> Option<Result<String, String>> {
    (j.flag(Flag::UNSAVED_CHANGES) == Some(true) && j.verdict().reclaimable())
        .then(|| recovery_here(swap, block0).map(|r| r.command()))
}

/// The editor that recovers a swap file: Neovim for one in Neovim's swap directory
/// (`~/.local/state/nvim/swap/`; Neovim writes the same block 0, "VIM 8.0"), Vim for the
/// others Vim's layout names; `None` when block 0 names another program. Says nothing of
/// whether it may be recovered here: see [`recovery`].
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

/// A recovery the effective user may make ([`recovery`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recovery {
    /// `vim` or `nvim`.
    pub editor: &'static str,
    /// The swap file, which the editor is given itself (`vim -r SWAP` recovers that very
    /// file; `vim -r FILE` would take any swap file of FILE it finds in `'directory'`).
    pub swap: PathBuf,
    /// The file its block 0 names, which `:w` then writes: the one its name is for.
    pub file: PathBuf,
}

impl Recovery {
    /// `vim -r SWAP`: raw text (a path that is not UTF-8 is shown lossily), shell-quoted when
    /// needed; views escape it.
    pub fn command(&self) -> String {
        format!(
            "{} -r {}",
            self.editor,
            crate::text::shell_quote(&self.swap.to_string_lossy())
        )
    }
}

/// Whether the effective user may recover the swap file `swap` (owned by `uid`, its block 0
/// `block0`) with `vim -r`, and how; else why not, in a sentence. Recovering is writing (see
/// the module docs), so only when:
/// - block 0 names Vim or Neovim;
/// - the swap file is the effective user's: recovering another user's would write what they
///   wrote, as us;
/// - block 0 names the file the swap file's name is for (`.NAME.swp` beside `NAME`, `NAME.swp`
///   in another directory, `%dir%NAME.swp` in a `directory//` one): resolved as vim does (a
///   leading `~` from `$HOME`, a relative name from the swap file's directory), both lead to
///   the same file (device and inode), or, while it does not exist, to the same name in the
///   same directory; a name with `$` in it (which vim would expand) or `~user` is refused;
/// - nobody but the effective user and root can change the directories that lead to the swap
///   file and to that file (each owned by one of them, and not writable by others unless
///   sticky): no one can put another swap file, or another file, in their place before vim
///   reads or writes them.
pub fn recovery(swap: &Path, uid: u32, block0: &[u8]) -> Result<Recovery, String> {
    let info = parse(block0).map_err(|why| format!("its block 0 cannot be read: {why}"))?;
    let Some(editor) = recovering_editor(swap, block0) else {
        return Err(format!(
            "its block 0 names \"{}\", not Vim: `vim -r` would recover nothing",
            info.version
        ));
    };
    let me = rustix::process::geteuid().as_raw();
    if uid != me {
        return Err(format!(
            "it belongs to {}, and you are {}: `{editor} -r` would write what they wrote, as you, over {}; leave it to them",
            user(uid),
            user(me),
            if info.file.is_empty() {
                "whatever they name".into()
            } else {
                format!("the file its block 0 names ({})", info.file)
            }
        ));
    }
    if info.file.is_empty() {
        return Err(
            "its block 0 names no file, so it says nothing of where `:w` would write".into(),
        );
    }
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let recorded = recorded_path(swap, &info.file, home.as_deref())?;
    let Some(beside) = original(swap) else {
        return Err("its name does not say which file it is for".into());
    };
    if !same_file(&recorded, &beside, swap) {
        return Err(format!(
            "its block 0 names {}, not {}, which its name is for: `{editor} -r` would write what it holds over {}",
            recorded.display(),
            beside.display(),
            recorded.display()
        ));
    }
    for dir in [swap.parent(), recorded.parent()].into_iter().flatten() {
        steady_dirs(dir, me)
            .map_err(|why| format!("{why}: someone else could put another file in its place before {editor} reads or writes it"))?;
    }
    Ok(Recovery {
        editor,
        swap: swap.to_path_buf(),
        file: recorded,
    })
}

/// [`recovery`] for the swap file at `swap` now (its owner by `lstat`).
pub fn recovery_here(swap: &Path, block0: &[u8]) -> Result<Recovery, String> {
    use std::os::unix::fs::MetadataExt;
    let meta = crate::probe::reach::lstat(swap)
        .map_err(|e| format!("{} cannot be examined: {e}", swap.display()))?;
    if !meta.file_type().is_file() {
        return Err(format!("{} is not a regular file", swap.display()));
    }
    recovery(swap, meta.uid(), block0)
}

use crate::probe::host::user;

/// The file block 0 names, as vim makes it when it recovers (`expand_env`, then the full
/// name from its current directory, which is the swap file's when locksmith runs it).
fn recorded_path(swap: &Path, file: &str, home: Option<&Path>) -> Result<PathBuf, String> {
    if file.contains('$') {
        return Err(format!(
            "its block 0 names {file}, which vim would expand (a `$`): not a file this can be checked against"
        ));
    }
    let path = if file == "~" || file.starts_with("~/") {
        let home = home
            .filter(|h| h.is_absolute())
            .ok_or_else(|| format!("its block 0 names {file}, and HOME is not set"))?;
        home.join(file.trim_start_matches('~').trim_start_matches('/'))
    } else if let Some(rest) = file.strip_prefix('~') {
        // Vim writes `~NAME/…` for a file under its user's `$HOME`, and reads it back as
        // NAME's home in the password database.
        let (name, tail) = rest.split_once('/').unwrap_or((rest, ""));
        let me = crate::probe::host::passwd_entry(rustix::process::geteuid().as_raw());
        match me {
            Some((mine, home)) if mine == name && home.is_absolute() => home.join(tail),
            _ => {
                return Err(format!(
                    "its block 0 names {file}, in another user's home, not the file beside it"
                ));
            }
        }
    } else {
        swap.parent().unwrap_or(Path::new("/")).join(file)
    };
    Ok(path)
}

/// Whether `recorded` and `beside` are one file: the same inode when both exist, else (not
/// yet written) the same name in the same directory; for a `%`-named swap file, also when
/// `recorded` is spelt out by its name (vim writes a `%` in a directory's name as it is, so
/// the name alone cannot be read back).
fn same_file(recorded: &Path, beside: &Path, swap: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    let id = |p: &Path| crate::probe::reach::stat(p).map(|m| (m.dev(), m.ino()));
    match (id(recorded), id(beside)) {
        (Ok(a), Ok(b)) => return a == b,
        (Err(a), Err(b))
            if a.kind() == std::io::ErrorKind::NotFound
                && b.kind() == std::io::ErrorKind::NotFound =>
        {
            let same_dir = match (recorded.parent(), beside.parent()) {
                (Some(x), Some(y)) => matches!((id(x), id(y)), (Ok(a), Ok(b)) if a == b),
                _ => false,
            };
            if same_dir && recorded.file_name() == beside.file_name() {
                return true;
            }
        }
        _ => {}
    }
    // `%dir%NAME.swp`: the name spelt out from the recorded file, as vim makes it.
    let spelt = |p: &Path| {
        use std::os::unix::ffi::OsStrExt;
        let mut b: Vec<u8> = p
            .as_os_str()
            .as_bytes()
            .iter()
            .map(|&c| if c == b'/' { b'%' } else { c })
            .collect();
        b.extend_from_slice(b".sw");
        b
    };
    swap.file_name().is_some_and(|n| {
        use std::os::unix::ffi::OsStrExt;
        let n = n.as_bytes();
        n.starts_with(b"%") && n.len() > 1 && n[..n.len() - 1] == spelt(recorded)[..]
    })
}

/// Checks that `dir` and every directory above it (symlinks resolved) are owned by `me` or
/// root and not writable by others unless sticky; says which is not.
fn steady_dirs(dir: &Path, me: u32) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    let real = crate::probe::reach::canonical(dir)
        .ok_or_else(|| format!("{} cannot be resolved", dir.display()))?;
    for d in real.ancestors() {
        let m = crate::probe::reach::stat(d)
            .map_err(|e| format!("{} cannot be examined ({e})", d.display()))?;
        if m.uid() != 0 && m.uid() != me {
            return Err(format!("{} belongs to {}", d.display(), user(m.uid())));
        }
        if m.mode() & 0o022 != 0 && m.mode() & 0o1000 == 0 {
            return Err(format!(
                "{} may be written by others and is not sticky (mode {:o})",
                d.display(),
                m.mode() & 0o7777
            ));
        }
    }
    Ok(())
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

    /// Block 0 of a swap file of `version` that records `file`, with unsaved changes.
    fn block0(version: &str, file: &str) -> Vec<u8> {
        let mut b = vec![0u8; BLOCK0_LEN];
        b[..2].copy_from_slice(b"b0");
        b[2..2 + version.len()].copy_from_slice(version.as_bytes());
        b[FNAME_AT..FNAME_AT + file.len()].copy_from_slice(file.as_bytes());
        b[DIRTY_AT] = DIRTY;
        b
    }

    fn me() -> u32 {
        rustix::process::geteuid().as_raw()
    }

    /// The command that recovers `swap`, recording `file`, owned by us; or why not.
    fn recover(swap: &Path, file: &str) -> Result<String, String> {
        std::fs::write(swap, block0("VIM 9.0", file)).unwrap();
        recovery(swap, me(), &block0("VIM 9.0", file)).map(|r| r.command())
    }

    #[test]
    fn only_our_own_swap_naming_the_file_beside_it_is_recovered() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().canonicalize().unwrap();
        let d = dir.to_str().unwrap();
        std::fs::write(dir.join("notes.txt"), "x").unwrap();
        std::fs::write(dir.join("my notes"), "x").unwrap();
        // The swap file itself is what vim is given.
        let swap = dir.join(".notes.txt.swp");
        assert_eq!(
            recover(&swap, &format!("{d}/notes.txt")),
            Ok(format!("vim -r {d}/.notes.txt.swp"))
        );
        assert_eq!(
            recover(&dir.join("my notes.swo"), &format!("{d}/my notes")),
            Ok(format!("vim -r '{d}/my notes.swo'"))
        );
        // A relative name is the swap file's directory's, as vim (run there) makes it.
        assert!(recover(&swap, "notes.txt").is_ok());
        // Not yet written: the same name in the same directory.
        assert!(recover(&dir.join(".new.txt.swp"), &format!("{d}/new.txt")).is_ok());
        // A swap file in another directory (`directory//`), its name spelling the path.
        let swaps = dir.join("swaps");
        std::fs::create_dir(&swaps).unwrap();
        let spelt = format!("{d}/notes.txt").replace('/', "%");
        assert!(
            recover(
                &swaps.join(format!("{spelt}.swp")),
                &format!("{d}/notes.txt")
            )
            .is_ok()
        );
        let spelt_new = format!("{d}/later.txt").replace('/', "%");
        assert!(
            recover(
                &swaps.join(format!("{spelt_new}.swp")),
                &format!("{d}/later.txt")
            )
            .is_ok()
        );

        // Block 0 naming another file than the one the name is for.
        let why = recover(&swap, "/etc/passwd").unwrap_err();
        assert!(
            why.contains("its block 0 names /etc/passwd, not") && why.contains("notes.txt"),
            "{why}"
        );
        let why = recover(
            &swaps.join(format!("{spelt}.swp")),
            &format!("{d}/my notes"),
        )
        .unwrap_err();
        assert!(why.contains("its block 0 names"), "{why}");
        // A plain name in another directory is for the file of that name there, not elsewhere.
        let why = recover(&swaps.join("notes.txt.swp"), &format!("{d}/notes.txt")).unwrap_err();
        assert!(why.contains("its block 0 names"), "{why}");
        // What vim would expand, or another user's home.
        assert!(
            recover(&swap, "$HOME/notes.txt")
                .unwrap_err()
                .contains("`$`")
        );
        assert!(
            recover(&swap, "~no-such-user-here/notes.txt")
                .unwrap_err()
                .contains("another user's home")
        );
        assert!(recover(&swap, "").unwrap_err().contains("names no file"));

        // Another user's swap file, whatever it names.
        let b = block0("VIM 9.0", &format!("{d}/notes.txt"));
        let why = recovery(&swap, me() + 1, &b).unwrap_err();
        assert!(
            why.contains("it belongs to") && why.contains("and you are"),
            "{why}"
        );
        // Another program's block 0: no vim command that would recover nothing.
        let why = recovery(&swap, me(), &block0("XED 1.2", &format!("{d}/notes.txt"))).unwrap_err();
        assert!(why.contains("\"XED 1.2\""), "{why}");
        // A directory others may change.
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&swaps, std::fs::Permissions::from_mode(0o777)).unwrap();
        let why = recover(
            &swaps.join(format!("{spelt}.swp")),
            &format!("{d}/notes.txt"),
        )
        .unwrap_err();
        assert!(why.contains("may be written by others"), "{why}");
        std::fs::set_permissions(&swaps, std::fs::Permissions::from_mode(0o1777)).unwrap();
        assert!(
            recover(
                &swaps.join(format!("{spelt}.swp")),
                &format!("{d}/notes.txt")
            )
            .is_ok()
        );
        // Neovim's own swap directory: Neovim recovers it.
        let nvim_dir = dir.join(".local/state/nvim/swap");
        std::fs::create_dir_all(&nvim_dir).unwrap();
        let nvim_swap = nvim_dir.join(format!("{spelt}.swp"));
        assert_eq!(
            recover(&nvim_swap, &format!("{d}/notes.txt")),
            Ok(format!("nvim -r {}", nvim_swap.display()))
        );
    }

    #[test]
    fn a_leading_tilde_is_home() {
        let swap = Path::new("/w/.n.swp");
        let home = Some(Path::new("/home/me"));
        assert_eq!(
            recorded_path(swap, "~/n", home),
            Ok(PathBuf::from("/home/me/n"))
        );
        assert_eq!(recorded_path(swap, "n", home), Ok(PathBuf::from("/w/n")));
        assert!(recorded_path(swap, "~/n", None).is_err());
        // `~NAME/`, as vim writes it for its user's files: our own home in the password
        // database, as vim reads it back.
        let (name, passwd_home) =
            crate::probe::host::passwd_entry(rustix::process::geteuid().as_raw()).unwrap();
        assert_eq!(
            recorded_path(swap, &format!("~{name}/n"), home),
            Ok(passwd_home.join("n"))
        );
        assert!(recorded_path(swap, "~no-such-user-here/n", home).is_err());
    }

    #[test]
    fn advice_follows_the_verdict() {
        let t = tempfile::tempdir().unwrap();
        let swap = t.path().join(".notes.txt.swp");
        let b = block0("VIM 9.0", &t.path().join("notes.txt").to_string_lossy());
        std::fs::write(&swap, &b).unwrap();
        let mut stale = Judgement::stale_for_test("gone");
        stale.flags.push(unsaved(true));
        assert!(recover_hint(&swap, &b, &stale).is_some_and(|r| r.is_ok()));
        // A swap whose vim runs: nothing to recover.
        let mut running = Judgement::live("alive");
        running.flags.push(unsaved(true));
        assert_eq!(recover_hint(&swap, &b, &running), None);
        let mut saved = stale.clone();
        saved.flags = vec![unsaved(false)];
        assert_eq!(recover_hint(&swap, &b, &saved), None);
    }
}
