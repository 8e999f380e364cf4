//! locksmith finds lock files left behind by crashed programs, proves which are still held and
//! which are stale, and removes the stale ones safely. It also ships the lock engine itself, so
//! programs can take locks that heal after a crash.
//!
//! Data flows one way: [`probe`] (the machine) → [`probe::Snapshot`] (one per scan) →
//! [`dialect`] judges (with [`evidence`] rules) → [`scan`] findings → [`report`] / UI →
//! [`reclaim`] through the [`engine`].

pub mod dialect;
pub mod engine;
pub mod evidence;
pub mod outcome;
pub mod probe;
pub mod reclaim;
pub mod remote;
pub mod report;
pub mod scan;
pub mod text;
pub mod verdict;

#[cfg(test)]
mod architecture;

pub use verdict::{Holder, HolderHow, Judgement, Owner, ProcessInfo, Verdict};
