//! The bounds on every read of what another user controls. Any user may make their processes'
//! command lines and environments megabytes long, hold tens of thousands of descriptors, and
//! stack tens of thousands of mounts in a namespace of their own (the kernel's cost of
//! printing such a mount table grows with the square of the stack). Read whole, these made one
//! scan of a single directory take a minute and 4 GB. Each read stops at its bound, and what a
//! bound cuts is reported (the scan's errors, the recording's `bounds`) and leaves unproven
//! what it may hide: a verdict that needed the rest is `unknown`, saying which bound, never
//! `stale` on a guess.
//!
//! | what | bound | what a cut leaves unproven |
//! |---|---|---|
//! | a process's command line | [`CMDLINE_BYTES`] | the places a writer's command line names (`git -C DIR`): a writer cut so may be at work there |
//! | a process's environment | [`ENVIRON_BYTES`] | the places its variables name (`GIT_DIR`) |
//! | another user's process's descriptors | [`FDS_PER_PROCESS`], and [`FDS_PER_USER`] for all of that user's | that nobody has a file open |
//! | root's or our own process's descriptors | [`FDS_PER_OWN_PROCESS`] | the same |
//! | another namespace's mount table | [`MOUNT_LINES`] lines, [`MOUNT_BYTES`] | what that namespace sees beyond the cut: a PID of it may be the owner |
//! | a process's memory maps | [`MAPS_BYTES`] | that nobody maps a file (Berkeley DB's region files) |
//!
//! Our own mount table, `/proc/locks` (at most 64 MiB) and the kernel's own files are read
//! whole: no other user can make them longer than the system lets them.

/// The most of a process's command line read: what a rule looks for (a program's options
/// and the paths they name) is at its start.
pub const CMDLINE_BYTES: usize = locksmith_sys::host::CMDLINE_MAX;

/// The most of a process's environment read, for the variables a rule asks of a writer.
pub const ENVIRON_BYTES: usize = 256 << 10;

/// The descriptors read of one process of another user (not root, not us).
pub const FDS_PER_PROCESS: usize = 4096;

/// The descriptors read of all the processes of one other user together.
pub const FDS_PER_USER: usize = 16_384;

/// The descriptors read of one process of root's or ours (what root runs is root's to make
/// large).
pub const FDS_PER_OWN_PROCESS: usize = 1 << 16;

/// The lines read of another namespace's mount table (a container has some dozens).
pub const MOUNT_LINES: usize = 1024;

/// The bytes read of another namespace's mount table.
pub const MOUNT_BYTES: usize = 128 << 10;

/// The bytes read of a process's memory maps.
pub const MAPS_BYTES: usize = 4 << 20;

/// How many descriptors of process `pid` (of user `uid`) may be read, given what is left of
/// that user's budget (`left`, updated), by the effective user `me`.
pub fn fd_budget(
    uid: Option<u32>,
    me: u32,
    left: &mut std::collections::HashMap<u32, usize>,
) -> usize {
    match uid {
        Some(u) if u == 0 || u == me => FDS_PER_OWN_PROCESS,
        Some(u) => (*left.entry(u).or_insert(FDS_PER_USER)).min(FDS_PER_PROCESS),
        None => FDS_PER_PROCESS,
    }
}

/// Takes `used` descriptors from user `uid`'s budget.
pub fn spend(
    uid: Option<u32>,
    me: u32,
    used: usize,
    left: &mut std::collections::HashMap<u32, usize>,
) {
    if let Some(u) = uid
        && u != 0
        && u != me
    {
        let l = left.entry(u).or_insert(FDS_PER_USER);
        *l = l.saturating_sub(used);
    }
}
