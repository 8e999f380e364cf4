//! `locksmith lock`: acquire, run COMMAND, release.

use crate::LockArgs;

pub fn run(args: LockArgs) -> i32 {
    eprintln!(
        "locksmith lock: not available in this build ({})",
        args.lockpath.display()
    );
    2
}
