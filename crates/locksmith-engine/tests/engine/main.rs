//! The engine's integration tests, one binary, against `locksmith_engine` alone (its `Direct`
//! witness): real processes holding, crashing, reclaiming and racing for locks on real files,
//! on file systems that fail (full, read-only) and on a real network file system (sshfs).
//! `util` holds what they share; helper children are this binary re-executed
//! ([`util::child_main`]). Test names carry their module: `cargo test -p locksmith-engine --test
//! engine -- races::` runs one area.

mod util;

mod direct;
mod failures;
mod leftovers;
mod protocol;
mod races;
mod sshfs;
mod stampede;
mod torture;
