//! `locksmith --scan`: the report, and non-interactive reclaim.

use crate::ScanArgs;

pub fn run(_args: ScanArgs) -> i32 {
    eprintln!("locksmith --scan: not available in this build");
    2
}
