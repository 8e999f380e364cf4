//! locksmith finds lock files left behind by crashed programs, proves which are still held and
//! which are stale, and removes the stale ones safely. It also ships the lock engine itself, so
//! programs can take locks that heal after a crash.
//!
//! Data flows one way: [`probe`] (the machine) → [`probe::Snapshot`] (one per scan) →
//! [`dialect`]s say what each lock claims → the [`judge`] turns claims and evidence into a
//! verdict → [`scan`] findings → [`report`] / UI → [`reclaim`] through the [`engine`]. The
//! [`config`] is read once and checked into one settings value per layer. [`why`] starts from a
//! program's error message instead of a path: the message says where its lock is, and the scan
//! judges it.

// Every `unsafe` block says why it is sound (a `// SAFETY:` comment).
#![deny(clippy::undocumented_unsafe_blocks)]

pub mod config;
pub mod dialect;
pub mod engine;
pub mod judge;
pub mod outcome;
pub mod probe;
pub mod reclaim;
pub mod remote;
pub mod report;
pub mod scan;
pub mod start_guard;
pub mod text;
pub mod trust;
pub mod verdict;
pub mod why;

#[cfg(test)]
mod architecture;

// The book's Rust samples are compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../docs/src/engine.md")]
struct BookEngineDoctest;

pub use judge::Judgement;
pub use verdict::{Holder, HolderHow, Owner, ProcessInfo, Proof, Rule, Verdict};
