//! locksmith's system facts: what the lock engine (`locksmith-engine`) and the locksmith scanner
//! both read from the kernel, in one place, and the time rules both judges apply to them (pure
//! functions of numbers), so that the two judges cannot disagree on what a time proves.
//!
//! - [`bounded`]: calls that may block on a file system whose server has stopped answering,
//!   made by a task of their own and waited for at most a deadline;
//! - [`fs`]: the kind of file system a directory is on, and whether it is a network file
//!   system (where kernel locks and PIDs of other hosts cannot be trusted);
//! - [`host`]: host name, boot id, boot time, PID namespaces, a process's state and start
//!   time, the processes that have a file open for writing;
//! - [`locks`]: OFD record locks, anonymous files and linking them into place;
//! - [`clock`]: how far the wall clock may have stepped forward since this boot began, the
//!   margin every time comparison must clear;
//! - [`time`]: times as evidence lines show them, and the time rules (`earlier-boot` by time,
//!   `pid-reused` by time, `heartbeat-expired`): facts in, proven or not (with the words) out.
//!
//! Linux; elsewhere the kernel-lock calls report `Unsupported` (and the engine uses its
//! fallback), and bounded calls are made in place.

// Every `unsafe` block says why it is sound (a `// SAFETY:` comment).
#![deny(clippy::undocumented_unsafe_blocks)]

pub mod bounded;
pub mod clock;
mod fmt;
pub mod fs;
pub mod host;
pub mod locks;
pub mod time;
