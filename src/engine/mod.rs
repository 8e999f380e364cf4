//! The lock engine: the record, acquire/release, inspect and reclaim.
