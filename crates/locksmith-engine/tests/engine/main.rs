//! The engine's integration tests, one binary, against `locksmith_engine` alone (its `Direct`
//! witness): real processes holding, crashing, reclaiming and racing for locks on real files.
//! `util` holds what they share; helper children are this binary re-executed
//! ([`util::child_main`]). Test names carry their module: `cargo test -p locksmith-engine --test
//! engine -- races::` runs one area.

mod util;

mod direct;
mod leftovers;
mod races;
mod stampede;
