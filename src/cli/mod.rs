//! Non-interactive commands: `locksmith lock`, `locksmith --scan`, `locksmith inspect` and
//! `locksmith completions`.

pub mod completions;
pub mod inspect;
pub mod lock;
pub mod scan;
