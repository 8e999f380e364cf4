//! Non-interactive commands: `locksmith lock`, `locksmith start`, `locksmith --scan`, `locksmith inspect`,
//! `locksmith completions`, `locksmith journal` and `locksmith restore`.

pub mod completions;
pub mod inspect;
pub mod journal;
pub mod kill;
pub mod lock;
pub mod restore;
pub mod scan;
pub mod start;
pub mod waiting;
