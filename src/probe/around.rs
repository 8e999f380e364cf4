//! The evidence [`Snapshot`] about the places around a lock: which processes work in a
//! directory or have a file of it open, which map a file, a process's environment, and the
//! lock's own siblings (read bounded, never following a final symlink or blocking). The
//! dialects and the judge read the machine through these.

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};

use super::evidence::{Answer, key_bytes, key_path, path_key};
use super::kernel_locks::FileKey;
use super::places::{self, DirId, major, minor, same_mount_ns, seen_by, within};
use super::reach;
use super::snapshot::Snapshot;
use super::stat::Stat;
use crate::verdict::{Holder, HolderHow};

/// `dev:ino,dev:ino`: directories as a recording names them.
fn ids_key(roots: &[DirId]) -> String {
    roots
        .iter()
        .map(|(_, d, i)| format!("{d}:{i}"))
        .collect::<Vec<_>>()
        .join(",")
}

impl Snapshot {
    /// The processes (not this one) with a regular file under `dir` open, each once: a
    /// program at work in that place (a library writing a lock there, an editor with a file
    /// of it open).
    pub fn open_under(&self, dir: &Path) -> Vec<Holder> {
        self.answer(
            |e| &mut e.open_under,
            || path_key(dir),
            || self.open_under_now(dir),
            Vec::new,
        )
    }

    fn open_under_now(&self, dir: &Path) -> Vec<Holder> {
        let Some(ids) = places::dir_ids(&[dir.to_path_buf()]).into_iter().next() else {
            return Vec::new();
        };
        let canon = self
            .canonical_dirs()
            .of(dir)
            .unwrap_or_else(|| dir.to_path_buf());
        let mut pids: Vec<i32> = Vec::new();
        let targets = self.fd_table();
        for (pid, target, key) in &targets.files {
            if pids.contains(pid) || (key.major, key.minor) != (major(ids.1), minor(ids.1)) {
                continue;
            }
            if opened_under(*pid, target, targets.our_ns.contains(pid), &canon, &ids) {
                pids.push(*pid);
            }
        }
        pids.into_iter()
            .map(|pid| self.holder(pid, HolderHow::Open))
            .collect()
    }

    /// Whether process `pid` (this one too) has a regular file under `dir` open. `None` when
    /// its descriptors cannot be read.
    pub fn has_open_under(&self, pid: i32, dir: &Path) -> Option<bool> {
        self.answer(
            |e| &mut e.has_open_under,
            || format!("{pid} {}", path_key(dir)),
            || self.has_open_under_now(pid, dir),
            || Some(false),
        )
    }

    fn has_open_under_now(&self, pid: i32, dir: &Path) -> Option<bool> {
        let ids = places::dir_ids(&[dir.to_path_buf()]).into_iter().next()?;
        let canon = self
            .canonical_dirs()
            .of(dir)
            .unwrap_or_else(|| dir.to_path_buf());
        let same_ns = pid == std::process::id() as i32 || same_mount_ns(pid);
        let files = super::open_files::regular_files_of(pid)?;
        Some(
            files
                .iter()
                .any(|t| opened_under(pid, t, same_ns, &canon, &ids)),
        )
    }

    /// The processes (not this one: a reclaim has the file open) that have the file `key` open
    /// for writing.
    pub fn writers_of(&self, key: FileKey) -> Vec<Holder> {
        self.answer(
            |e| &mut e.writers,
            || key,
            || self.writers_of_now(key),
            Vec::new,
        )
    }

    fn writers_of_now(&self, key: FileKey) -> Vec<Holder> {
        let dev = rustix::fs::makedev(key.major, key.minor);
        let me = std::process::id() as i32;
        self.openers(key)
            .into_iter()
            .filter(|h| h.pid != me)
            .filter(|h| locksmith_sys::host::open_for_writing(h.pid, dev, key.inode))
            .collect()
    }

    /// The processes whose descriptors could not be read (so [`Snapshot::open_under`] may
    /// miss theirs).
    pub fn fds_unreadable(&self) -> &[i32] {
        &self.fd_table().unreadable
    }

    /// The processes that map this file into memory (`/proc/<pid>/maps`; Berkeley DB maps
    /// its region files and may close the descriptor). Read when asked.
    pub fn mappers(&self, key: FileKey) -> Vec<Holder> {
        self.answer(
            |e| &mut e.mappers,
            || key,
            || self.mappers_now(key),
            Vec::new,
        )
    }

    fn mappers_now(&self, key: FileKey) -> Vec<Holder> {
        let dev = format!("{:02x}:{:02x}", key.major, key.minor);
        let ino = key.inode.to_string();
        let me = std::process::id() as i32;
        let mut out = Vec::new();
        for pid in locksmith_sys::host::pids() {
            if pid == me {
                continue;
            }
            let Ok((maps, whole)) = locksmith_sys::host::read_proc_bounded(
                format!("/proc/{pid}/maps"),
                super::bounds::MAPS_BYTES,
            ) else {
                continue;
            };
            let maps = String::from_utf8_lossy(&maps);
            let hit = maps.lines().any(|l| {
                let mut f = l.split_ascii_whitespace().skip(3);
                f.next() == Some(dev.as_str()) && f.next() == Some(ino.as_str())
            });
            if !whole {
                // What it maps beyond the bound is not known: it may map this file.
                self.hit_bound(
                    PathBuf::from(format!("/proc/{pid}/maps")),
                    format!(
                        "its memory maps were read up to their bound ({} bytes): it is taken as mapping what it may map beyond",
                        super::bounds::MAPS_BYTES
                    ),
                );
            }
            if hit || !whole {
                out.push(self.holder(pid, HolderHow::Open));
            }
        }
        out
    }

    /// One variable of a process's environment (`/proc/<pid>/environ`), when readable.
    pub fn environ_var(&self, pid: i32, name: &str) -> Option<OsString> {
        self.answer(
            |e| &mut e.environ,
            || format!("{pid} {name}"),
            || {
                let (env, _) = locksmith_sys::host::read_proc_bounded(
                    format!("/proc/{pid}/environ"),
                    super::bounds::ENVIRON_BYTES,
                )
                .ok()?;
                let prefix = format!("{name}=");
                env.split(|b| *b == 0)
                    .find_map(|kv| kv.strip_prefix(prefix.as_bytes()))
                    .map(super::evidence::bytes_key)
            },
            || None,
        )
        .map(|v| OsString::from_vec(key_bytes(&v)))
    }

    /// Whether process `pid`'s environment is longer than its bound
    /// ([`super::bounds::ENVIRON_BYTES`]): a variable not found in it may be set beyond.
    pub fn environ_cut(&self, pid: i32) -> bool {
        let cut = self.answer(
            |e| &mut e.environ_cut,
            || pid,
            || {
                locksmith_sys::host::read_proc_bounded(
                    format!("/proc/{pid}/environ"),
                    super::bounds::ENVIRON_BYTES,
                )
                .is_ok_and(|(_, whole)| !whole)
            },
            || false,
        );
        if cut {
            self.hit_bound(
                PathBuf::from(format!("/proc/{pid}/environ")),
                format!(
                    "its environment was read up to its bound ({} bytes): the variables it sets beyond are not known",
                    super::bounds::ENVIRON_BYTES
                ),
            );
        }
        cut
    }

    /// Whether process `pid`'s working directory is one of `roots` or below one. `None` when
    /// it cannot be read.
    pub fn cwd_within(&self, pid: i32, roots: &[DirId]) -> Option<bool> {
        self.answer(
            |e| &mut e.cwd_within,
            || format!("{pid} {}", ids_key(roots)),
            || within(&PathBuf::from(format!("/proc/{pid}/cwd")), roots),
            || None,
        )
    }

    /// Whether the directory `start` stands for (a path below `/proc/PID/root` or `cwd`: what
    /// a process names, as [`places::seen_by`] puts it) is one of `roots` or below one.
    pub fn within(&self, start: &Path, roots: &[DirId]) -> Option<bool> {
        self.answer(
            |e| &mut e.within,
            || format!("{} {}", path_key(start), ids_key(roots)),
            || within(start, roots),
            || None,
        )
    }

    /// Whether process `pid`'s working directory is exactly `dir` (by device and inode).
    pub fn cwd_is(&self, pid: i32, dir: &super::Stat) -> Option<bool> {
        self.answer(
            |e| &mut e.cwd_is,
            || format!("{pid} {}:{}", dir.dev, dir.ino),
            || {
                let cwd = super::fs::known(Path::new(&format!("/proc/{pid}/cwd"))).ok()?;
                Some(cwd.dev == dir.dev() && cwd.ino == dir.ino())
            },
            || None,
        )
    }

    /// Process `pid`'s working directory, as our namespace reads its link (`None`: it cannot
    /// be read, or it has exited).
    pub fn cwd_of(&self, pid: i32) -> Option<PathBuf> {
        self.answer(
            |e| &mut e.cwd,
            || pid,
            || {
                std::fs::read_link(format!("/proc/{pid}/cwd"))
                    .ok()
                    .map(|p| path_key(&p))
            },
            || None,
        )
        .map(|p| key_path(&p))
    }

    /// Process `pid`'s working directory as it sees it: below its own root (a process changed
    /// into a root of its own with `chroot`, not `pivot_root`, shows its working directory
    /// from its mount namespace's root).
    pub fn working_dir(&self, pid: i32) -> Option<PathBuf> {
        self.answer(
            |e| &mut e.working_dir,
            || pid,
            || {
                let cwd = std::fs::read_link(format!("/proc/{pid}/cwd")).ok()?;
                let root = std::fs::read_link(format!("/proc/{pid}/root")).ok()?;
                let seen = match cwd.strip_prefix(&root) {
                    Ok(rest) => Path::new("/").join(rest),
                    Err(_) => cwd,
                };
                Some(path_key(&seen))
            },
            || None,
        )
        .map(|p| key_path(&p))
    }

    /// The ids of the directories that exist ([`places::dir_ids`]).
    pub fn dir_ids(&self, dirs: &[PathBuf]) -> Vec<DirId> {
        dirs.iter()
            .filter_map(|d| {
                let id = self.answer(
                    |e| &mut e.dir_ids,
                    || path_key(d),
                    || {
                        places::dir_ids(std::slice::from_ref(d))
                            .first()
                            .map(|(_, dev, ino)| (*dev, *ino))
                    },
                    || None,
                )?;
                Some((d.clone(), id.0, id.1))
            })
            .collect()
    }

    /// Whether the kernel says a lock is held on the file at `path` (`F_OFD_GETLK`: a read of
    /// `/proc/locks` can miss an entry), if it is still the file `key` names. `None` when it
    /// cannot be asked.
    pub fn held_at(&self, path: &Path, key: FileKey) -> Option<bool> {
        self.answer(
            |e| &mut e.held_at,
            || format!("{key} {}", path_key(path)),
            || {
                let dev = rustix::fs::makedev(key.major, key.minor);
                super::kernel_locks::held_at(path, dev, key.inode)
            },
            || Some(false),
        )
    }
}

/// The file system around a lock, read through the snapshot: the dialects read the lock's
/// siblings (a document beside its lock, a profile's other files, a lock directory's members)
/// and the paths a lock names only through these, which never wait on a mount that does not
/// answer, wherever a name or a symlink leads ([`reach`]), never follow a final
/// symlink unless they say so, and never block on a FIFO.
impl Snapshot {
    /// `lstat` of a path (a final symlink is not followed).
    pub fn lstat(&self, path: &Path) -> std::io::Result<Stat> {
        self.answer(
            |e| &mut e.lstat,
            || path_key(path),
            || Answer::of(&reach::lstat(path).map(Stat::from)),
            Answer::not_found,
        )
        .result()
    }

    /// `stat` of a path (symlinks followed: a directory named by a lock).
    pub fn stat(&self, path: &Path) -> std::io::Result<Stat> {
        self.answer(
            |e| &mut e.stat,
            || path_key(path),
            || Answer::of(&reach::stat(path).map(Stat::from)),
            Answer::not_found,
        )
        .result()
    }

    /// The text of a symlink (never followed).
    pub fn read_link(&self, path: &Path) -> std::io::Result<PathBuf> {
        self.answer(
            |e| &mut e.read_link,
            || path_key(path),
            || Answer::of(&reach::read_link(path).map(|p| path_key(&p))),
            Answer::not_found,
        )
        .result()
        .map(|p| key_path(&p))
    }

    /// The canonical form of a path, when it exists.
    pub fn canonical(&self, path: &Path) -> Option<PathBuf> {
        self.answer(
            |e| &mut e.canonical,
            || path_key(path),
            || reach::canonical(path).map(|p| path_key(&p)),
            || None,
        )
        .map(|p| key_path(&p))
    }

    /// At most `max` bytes of a small regular file, opened without following a symlink or
    /// blocking (a FIFO or device is never read). `None` when it is not a readable regular
    /// file.
    pub fn read_small(&self, path: &Path, max: usize) -> Option<Vec<u8>> {
        self.answer(
            |e| &mut e.small,
            || format!("{max} {}", path_key(path)),
            || reach::read_small(path, max).map(|b| super::evidence::bytes_key(&b)),
            || None,
        )
        .map(|b| key_bytes(&b))
    }

    /// Entries of a directory (names lossy, `lstat`ed), at most `max`, sorted by name.
    pub fn list_dir(&self, dir: &Path, max: usize) -> std::io::Result<Vec<(String, Stat)>> {
        self.answer(
            |e| &mut e.dirs,
            || format!("{max} {}", path_key(dir)),
            || {
                Answer::of(&reach::list_dir(dir, max).map(|l| {
                    l.into_iter()
                        .map(|(n, m)| (n, Stat::from(m)))
                        .collect::<Vec<_>>()
                }))
            },
            Answer::not_found,
        )
        .result()
    }

    /// Whether a TCP port is listened on (`/proc/net/tcp` and `tcp6`, state `0A`).
    pub fn tcp_listening(&self, port: u16) -> bool {
        self.answer(
            |e| &mut e.tcp_listening,
            || port,
            || tcp_listening_now(port),
            || false,
        )
    }

    /// The hardware addresses of this machine's network interfaces as 48-bit integers (what
    /// Python's `uuid.getnode()` returns for one of them).
    pub fn mac_nodes(&self) -> Vec<u64> {
        self.answer(
            |e| &mut e.mac_nodes,
            || "interfaces".to_string(),
            mac_nodes_now,
            Vec::new,
        )
    }
}

/// Whether a TCP port is listened on now.
fn tcp_listening_now(port: u16) -> bool {
    let want = format!(":{port:04X}");
    ["/proc/net/tcp", "/proc/net/tcp6"].iter().any(|f| {
        std::fs::read_to_string(f).is_ok_and(|t| {
            t.lines().skip(1).any(|l| {
                let cols: Vec<&str> = l.split_whitespace().collect();
                cols.len() > 3 && cols[1].ends_with(&want) && cols[3] == "0A"
            })
        })
    })
}

/// The hardware addresses of this machine's network interfaces now.
fn mac_nodes_now() -> Vec<u64> {
    let Ok(dir) = std::fs::read_dir("/sys/class/net") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| std::fs::read_to_string(e.path().join("address")).ok())
        .filter_map(|a| {
            let hex: String = a.trim().split(':').collect();
            (hex.len() == 12).then(|| u64::from_str_radix(&hex, 16).ok())?
        })
        .filter(|n| *n != 0)
        .collect()
}

/// Whether `target`, the path by which process `pid` has a file open, is under the directory
/// `ids` (`canon` its canonical form here): compared as text when `pid` sees paths as we do
/// (`same_ns`), else by walking up from where its own namespace puts the file's directory.
fn opened_under(pid: i32, target: &Path, same_ns: bool, canon: &Path, ids: &DirId) -> bool {
    if same_ns {
        target.starts_with(canon)
    } else {
        target
            .parent()
            .and_then(|p| within(&seen_by(pid, p), std::slice::from_ref(ids)))
            .unwrap_or(false)
    }
}
