//! What identifies the exact file that was judged (the engine's [`locksmith_engine::Identity`]:
//! reclaim and the engine's own reclaim check it before removing anything).

pub use locksmith_engine::Identity;
