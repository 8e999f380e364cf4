//! A lock that heals itself after a crash.
//!
//! ```sh
//! cargo run -p locksmith-engine --example heal -- crash /tmp/heal.lock  # takes it, then is killed (SIGKILL)
//! cargo run -p locksmith-engine --example heal -- /tmp/heal.lock        # takes it again: healed
//! ```
//!
//! The first run takes the lock and kills itself with SIGKILL, as `kill -9` or the OOM killer
//! would: no destructor runs, and the lock file stays behind. The second run finds that file,
//! judges it stale (its owner's kernel lock died with it), reclaims it and takes the lock.

use std::path::Path;
use std::time::Duration;

use locksmith_engine::Lock;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let first = args.next().ok_or("usage: heal [crash] LOCKPATH")?;
    let (crash, path) = if first == "crash" {
        (true, args.next().ok_or("usage: heal crash LOCKPATH")?)
    } else {
        (false, first)
    };
    let lock = Lock::new(&path).timeout(Duration::from_secs(5));
    if crash {
        let guard = lock.acquire()?;
        println!(
            "pid {} holds {path} (kernel lock: {}); crashing",
            std::process::id(),
            guard.kernel_lock()
        );
        // Killed, not exiting: nothing is released, the lock file stays.
        rustix::process::kill_process(rustix::process::getpid(), rustix::process::Signal::KILL)?;
        unreachable!("SIGKILL cannot be caught");
    }
    if Path::new(&path).exists() {
        let j = lock.inspect()?;
        println!("found a lock: {} ({})", j.verdict, j.evidence.join("; "));
    }
    let guard = lock.acquire()?;
    println!("acquired {path} (token {})", guard.token());
    guard.release()?;
    println!("released");
    Ok(())
}
