//! `/proc/locks` as a test reads it: in one `read(2)`. The kernel lists the table under its
//! lock only for the length of one read; a table read in pieces (as `read_to_string` does)
//! misses a lock held all the time whenever other processes (the other tests) lock or unlock
//! between two reads and shift the entries.

use std::io::Read;
use std::path::Path;

/// The whole of `/proc/locks`, read at once.
pub fn table() -> String {
    let mut cap = 1 << 20;
    for _ in 0..8 {
        let mut f = std::fs::File::open("/proc/locks").expect("/proc/locks");
        let mut buf = vec![0u8; cap];
        let n = f.read(&mut buf).expect("read /proc/locks");
        // Reached the end in that one read: the next one returns nothing.
        if n < cap && f.read(&mut [0u8; 1]).expect("read /proc/locks") == 0 {
            buf.truncate(n);
            return String::from_utf8_lossy(&buf).into_owned();
        }
        if n == cap {
            cap *= 4;
        }
    }
    panic!("/proc/locks could not be read in one piece");
}

/// Whether a kernel lock (POSIX, flock or OFD) is held on the file at `path`, as `/proc/locks`
/// lists it.
pub fn kernel_locked(path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(path).unwrap();
    let dev = meta.dev();
    let id = format!(
        "{:02x}:{:02x}:{}",
        rustix::fs::major(dev),
        rustix::fs::minor(dev),
        meta.ino()
    );
    table()
        .lines()
        .any(|l| l.split_ascii_whitespace().any(|f| f == id))
}
