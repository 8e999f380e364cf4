//! File systems: what kind a lock lives on, whether it is a network file system, and the pseudo
//! file systems the walker must not descend into. The engine needs the same answers for the
//! directory it locks in, so they live in the engine's [`locksmith_engine::fs`].

pub use locksmith_engine::fs::*;
