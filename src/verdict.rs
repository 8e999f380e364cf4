//! Verdicts and the evidence that backs them: the engine's types ([`crate::engine::verdict`]),
//! which the scanner, the dialects and the reports share.

pub use crate::engine::verdict::*;
