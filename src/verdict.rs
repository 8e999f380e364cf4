//! Verdicts and the evidence that backs them: the engine's types
//! ([`locksmith_engine::verdict`]), which the scanner, the dialects and the reports share. The
//! scanner's judgement itself is [`crate::judge::Judgement`]: only the judge can make it
//! `stale`.

pub use locksmith_engine::verdict::{
    ByteRange, ContainerId, ContainerInfo, Holder, HolderHow, LockMode, Owner, ProcessInfo, Proof,
    RemoteClaim, Rule, Verdict, describe_holders,
};
