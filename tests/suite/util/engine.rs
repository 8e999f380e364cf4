//! Shared by the tests of the engine as the app uses it (`locksmith lock`, the scanner's
//! evidence): real processes in their own process groups, hand-written owner records (the
//! engine crate's test helpers, shared).

pub use super::files::*;
pub use super::process::*;
pub use super::{BIN, DEADLINE, hold_with_cli, lock_cmd, lock_once_args};

#[path = "../../../crates/locksmith-engine/tests/engine/util/records.rs"]
mod records;
pub use records::*;
