//! The terminal UI.

use crate::ScanArgs;

pub fn run(_args: ScanArgs) -> i32 {
    eprintln!("locksmith: the terminal UI is not available in this build");
    2
}
