//! Uncontended acquire + release with the engine, next to the primitives it is made of:
//! raw `flock(2)` (open, lock, close) and an `O_EXCL` create + unlink.
//!
//! `cargo bench --bench engine` (a plain main: no harness). Prints the median time of one
//! lock/unlock cycle over several batches, on the local file system of the target directory.

use std::fs::OpenOptions;
use std::hint::black_box;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::time::Instant;

use locksmith::engine::lock;

const BATCHES: usize = 15;
const PER_BATCH: usize = 2000;

/// Median nanoseconds per call of `f` over the batches.
fn measure(mut f: impl FnMut()) -> f64 {
    for _ in 0..PER_BATCH / 4 {
        f(); // warm up
    }
    let mut per_op: Vec<f64> = (0..BATCHES)
        .map(|_| {
            let start = Instant::now();
            for _ in 0..PER_BATCH {
                f();
            }
            start.elapsed().as_nanos() as f64 / PER_BATCH as f64
        })
        .collect();
    per_op.sort_by(f64::total_cmp);
    per_op[BATCHES / 2]
}

fn flock_cycle(path: &Path) {
    let f = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(path)
        .unwrap();
    rustix::fs::flock(&f, rustix::fs::FlockOperation::LockExclusive).unwrap();
    black_box(&f);
    drop(f); // closing the last descriptor unlocks
}

fn excl_cycle(path: &Path) {
    let mut f = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .unwrap();
    f.write_all(b"4242\n").unwrap();
    drop(f);
    std::fs::remove_file(path).unwrap();
}

fn main() {
    let base = std::env::var_os("LOCKSMITH_BENCH_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| env!("CARGO_TARGET_TMPDIR").into());
    std::fs::create_dir_all(&base).unwrap();
    let dir = tempfile::tempdir_in(&base).unwrap();
    let fs = {
        use std::os::unix::fs::MetadataExt;
        let dev = std::fs::metadata(dir.path()).unwrap().dev();
        locksmith::probe::fs::describe(dir.path(), dev)
    };

    let engine_path = dir.path().join("engine.lock");
    let engine = lock(&engine_path);
    let fallback = lock(dir.path().join("fallback.lock")).force_fallback(true);
    let flock_path = dir.path().join("flock.lock");
    let excl_path = dir.path().join("excl.lock");

    let rows = [
        (
            "engine: try_acquire + release (OFD lock)",
            measure(|| engine.try_acquire().unwrap().release().unwrap()),
        ),
        (
            "engine: try_acquire + release (fallback, no kernel lock)",
            measure(|| fallback.try_acquire().unwrap().release().unwrap()),
        ),
        (
            "flock(2): open + LOCK_EX + close",
            measure(|| flock_cycle(&flock_path)),
        ),
        (
            "O_EXCL: create + write pid + close + unlink",
            measure(|| excl_cycle(&excl_path)),
        ),
    ];
    let flock_ns = rows[2].1;
    println!(
        "uncontended lock + unlock, median of {BATCHES} batches of {PER_BATCH}, on {} ({})",
        fs.kind,
        dir.path().display()
    );
    for (name, ns) in rows {
        println!(
            "{name:<58} {:>9.2} µs   {:>6.1}x flock(2)",
            ns / 1000.0,
            ns / flock_ns
        );
    }
}
