//! Non-interactive commands: `locksmith lock` and `locksmith --scan`.

pub mod inspect;
pub mod lock;
pub mod scan;
