//! `vim-swap`: Vim's swap files (`.NAME.swp`, `.swo`, ... `.swa`; `NAME.swp` without the dot
//! when `'directory'` points elsewhere). Block 0 is binary: magic `b0`, version, then the
//! owner's PID at byte 24 (4 bytes, little-endian), user name at 28 (40 bytes), host name at
//! 68 (40 bytes), the edited file at 108 (900 bytes; its last byte, 1007, is 0x55 when the
//! buffer holds changes that were never written).
//!
//! Liveness: the PID on the same host is alive, is a vim and started before the swap file
//! was last written. A swap file holding unsaved changes is reported as such, with the
//! command that recovers them, whatever its verdict.

use super::common;
use super::{Candidate, Decision, Dialect, DialectId, EntryKind, Windows};
use crate::evidence::{PidClaim, judge_pid};
use crate::probe::Snapshot;
use crate::verdict::{Owner, Verdict};

pub struct VimSwap;

/// Names of programs that write vim swap files.
pub const VIMS: &[&str] = &[
    "vim", "vi", "nvim", "gvim", "view", "rvim", "rview", "evim", "gview", "vimdiff", "ex",
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

impl Dialect for VimSwap {
    fn id(&self) -> DialectId {
        DialectId::VIM_SWAP
    }

    fn patterns(&self) -> &'static [&'static str] {
        &[".*.sw[a-p]", "*.swp"]
    }

    fn recognise(&self, c: &Candidate<'_>) -> bool {
        c.kind == EntryKind::File
            && c.content.starts_with(b"b0")
            && is_swap_name(c.file_name().as_encoded_bytes())
    }

    fn decide(&self, c: &Candidate<'_>, snap: &Snapshot, _windows: &Windows) -> Decision {
        let info = match parse(c.content) {
            Ok(info) => info,
            Err(why) => return common::unparseable("vim swap", why).into(),
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
        let mut j = match common::kernel_live(snap, c.key(), "the swap file") {
            Some(j) => j,
            None => {
                // Vim truncates the host name; compare the way it wrote it.
                let host = if info.host.is_empty() || same_host(&info.host, &snap.host.hostname) {
                    None
                } else {
                    Some(info.host.as_str())
                };
                let claim = PidClaim {
                    pid: info.pid as i64,
                    hostname: host,
                    expect: VIMS,
                    ..PidClaim::default()
                };
                judge_pid(&common::file_claim(c, claim), snap)
            }
        };
        j.unsaved_changes = Some(info.dirty);
        // Advice follows the verdict: recovery is for a swap file whose vim is gone.
        match (info.dirty, j.verdict) {
            (true, Verdict::Stale) => {
                let file = std::path::Path::new(&info.file);
                let target = if file.is_absolute() && file.symlink_metadata().is_ok() {
                    common::shell_quote(&info.file)
                } else {
                    common::shell_quote(&common::field(&c.path.to_string_lossy()))
                };
                j.evidence.push(format!(
                    "the swap file holds unsaved changes: recover them with `vim -r {target}` before removing it"
                ));
            }
            (true, Verdict::Live) => j.evidence.push(
                "its vim is running with changes not yet saved: they are in that vim, not something to recover"
                    .into(),
            ),
            (true, _) => j.evidence.push(
                "the swap file holds unsaved changes; whether its vim still runs is not proven, so it is not a case for recovery here"
                    .into(),
            ),
            (false, _) => j
                .evidence
                .push("the swap file holds no unsaved changes (dirty flag not set)".into()),
        }
        Decision::owned(owner, j)
    }
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
}
