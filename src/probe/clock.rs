//! How far the wall clock can be trusted since this boot began: locksmith-sys's
//! [`Clock`], which the engine's own judge reads too. The scanner
//! reads it once per evidence snapshot, when a rule first compares times, and records it with
//! the evidence (it serialises), so that a replay decides the time rules as the scan did.

pub use locksmith_sys::clock::Clock;
