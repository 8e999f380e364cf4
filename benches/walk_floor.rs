//! The floor of any walk of a tree on this machine: every directory opened (relative to its
//! parent), read with `getdents64` into a 32 KiB buffer and closed, on as many threads as there
//! are cores, and nothing else (no name is matched, no file examined, nothing printed but the
//! count). What the kernel spends here (on ext4, hashing and sorting each directory's entries
//! for `getdents`) every program that lists the tree pays too: `benches/scan_vs_fd.sh` times it
//! beside locksmith and fd, so a ratio to fd can be read against what is possible at all.
//!
//! Run: `cargo bench --bench walk_floor -- TREE` (prints the entries seen). Without a TREE it
//! says how to run it and does nothing (as under a plain `cargo bench`).

use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use rustix::fd::OwnedFd;
use rustix::fs::{AtFlags, FileType, Mode, OFlags, RawDir};

/// A directory to read: its name in its open parent (no parent: a path from here).
struct Job {
    parent: Option<Arc<OwnedFd>>,
    name: OsString,
}

#[derive(Default)]
struct Queue {
    jobs: Vec<Job>,
    /// Jobs taken and not finished: the walk is over when none is queued or running.
    running: usize,
}

struct Walk {
    queue: Mutex<Queue>,
    more: Condvar,
    entries: AtomicU64,
    errors: AtomicU64,
}

impl Walk {
    fn take(&self) -> Option<Job> {
        let mut q = self.queue.lock().unwrap();
        loop {
            if let Some(job) = q.jobs.pop() {
                q.running += 1;
                return Some(job);
            }
            if q.running == 0 {
                self.more.notify_all();
                return None;
            }
            q = self.more.wait(q).unwrap();
        }
    }

    fn worker(&self) {
        let mut buf: Vec<u8> = Vec::with_capacity(32 * 1024);
        while let Some(job) = self.take() {
            let found = self.read(&job, &mut buf);
            let mut q = self.queue.lock().unwrap();
            q.running -= 1;
            let woke = !found.is_empty() || q.running == 0;
            q.jobs.extend(found);
            drop(q);
            if woke {
                self.more.notify_all();
            }
        }
    }

    /// Reads one directory: its subdirectories, as jobs.
    fn read(&self, job: &Job, buf: &mut Vec<u8>) -> Vec<Job> {
        let open = |flags| match &job.parent {
            Some(p) => rustix::fs::openat(p, &job.name, flags, Mode::empty()),
            None => rustix::fs::openat(rustix::fs::CWD, &job.name, flags, Mode::empty()),
        };
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        // As the scan's walk: no access time written where allowed (it needs ownership).
        let opened = match open(flags | OFlags::NOATIME) {
            Err(rustix::io::Errno::PERM) => open(flags),
            other => other,
        };
        let Ok(fd) = opened else {
            self.errors.fetch_add(1, Ordering::Relaxed);
            return Vec::new();
        };
        let fd = Arc::new(fd);
        let mut subdirs = Vec::new();
        let mut n = 0;
        let mut dir = RawDir::new(&*fd, buf.spare_capacity_mut());
        while let Some(entry) = dir.next() {
            let Ok(entry) = entry else {
                self.errors.fetch_add(1, Ordering::Relaxed);
                break;
            };
            let name = entry.file_name();
            if name.to_bytes() == b"." || name.to_bytes() == b".." {
                continue;
            }
            n += 1;
            let is_dir = match entry.file_type() {
                FileType::Directory => true,
                FileType::Unknown => rustix::fs::statat(&*fd, name, AtFlags::SYMLINK_NOFOLLOW)
                    .is_ok_and(|st| FileType::from_raw_mode(st.st_mode) == FileType::Directory),
                _ => false,
            };
            if is_dir {
                subdirs.push(OsString::from(std::ffi::OsStr::from_bytes(name.to_bytes())));
            }
        }
        self.entries.fetch_add(n, Ordering::Relaxed);
        subdirs
            .into_iter()
            .map(|name| Job {
                parent: Some(fd.clone()),
                name,
            })
            .collect()
    }
}

fn main() {
    let Some(tree) = std::env::args_os().skip(1).find(|a| a != "--bench") else {
        eprintln!("usage: cargo bench --bench walk_floor -- TREE (the entries below TREE)");
        return;
    };
    let walk = Walk {
        queue: Mutex::new(Queue {
            jobs: vec![Job {
                parent: None,
                name: PathBuf::from(tree).into_os_string(),
            }],
            running: 0,
        }),
        more: Condvar::new(),
        entries: AtomicU64::new(0),
        errors: AtomicU64::new(0),
    };
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| walk.worker());
        }
    });
    println!(
        "{} entries, {} errors",
        walk.entries.load(Ordering::Relaxed),
        walk.errors.load(Ordering::Relaxed)
    );
}
