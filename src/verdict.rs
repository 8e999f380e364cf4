//! Verdicts and the evidence that backs them: the engine's types ([`locksmith_engine::verdict`]),
//! which the scanner, the dialects and the reports share.

pub use locksmith_engine::verdict::*;
