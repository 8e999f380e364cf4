//! Where a finding was found, in a form that can be checked again: the scan root's path and
//! the (device, inode) of every directory from that root down to the finding's own directory,
//! as the walker opened them.
//!
//! Re-judging and reclaim never resolve a finding's path string again. They open the root as
//! the walker did, then each directory below it one component at a time from the previous
//! one's descriptor, without following any symlink (`openat2` with `RESOLVE_BENEATH |
//! RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS` where the kernel has it, `openat` with
//! `O_NOFOLLOW` otherwise), and check that each directory is the one recorded. A directory
//! swapped for a symlink, or for another directory, on the way is refused, so what is judged
//! and removed is always inside the tree that was scanned.
//!
//! A root inside a container (`/proc/<pid>/root/...`, see `scan::containers`) is a place of
//! the container's own file system: below it nothing on another mount is followed (a
//! directory of the host the container mounts there is not the container's), by mount id
//! (`statx(STATX_MNT_ID)`), which tells bind mounts of one file system apart.
//!
//! [`Anchor::from_top`] gives the whole chain, from `/` (or the container's root) down, which
//! the journal keeps so that `restore` checks the same directories again.

use std::ffi::{OsStr, OsString};
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Component, Path};
use std::sync::Arc;

/// A directory's identity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct DirId {
    pub dev: u64,
    pub ino: u64,
}

/// One directory on the way from a root to a finding, linked to its parent.
#[derive(Debug)]
pub struct DirNode {
    pub id: DirId,
    pub parent: Option<Arc<DirNode>>,
}

impl Drop for DirNode {
    /// Unlinks the chain iteratively, so that dropping a very deep one cannot overflow the
    /// stack.
    fn drop(&mut self) {
        let mut next = self.parent.take();
        while let Some(node) = next {
            next = match Arc::try_unwrap(node) {
                Ok(mut n) => n.parent.take(),
                Err(_) => None,
            };
        }
    }
}

/// Where a finding was found: its root and the directories down to its own.
#[derive(Debug, Clone)]
pub struct Anchor {
    /// The root as it was given to the walker (or the finding's own directory, for a path
    /// judged on its own).
    pub root: Arc<Path>,
    /// The finding's directory; its ancestors lead up to `root`.
    pub dir: Arc<DirNode>,
}

impl Anchor {
    /// The recorded directories, the root first.
    pub fn chain(&self) -> Vec<DirId> {
        let mut out = Vec::new();
        let mut node = Some(&self.dir);
        while let Some(n) = node {
            out.push(n.id);
            node = n.parent.as_ref();
        }
        out.reverse();
        out
    }

    /// Opens the directory of `path` (a path found below this anchor's root) by walking from
    /// the root, checking every directory against the recorded chain. Returns it with the
    /// last component of `path`.
    pub fn open_parent(&self, path: &Path) -> io::Result<(OwnedFd, OsString)> {
        let rel = path.strip_prefix(&self.root).map_err(|_| {
            io::Error::other(format!(
                "{} is not below the root it was found in",
                path.display()
            ))
        })?;
        let mut names = Vec::new();
        for c in rel.components() {
            match c {
                Component::Normal(n) => names.push(n),
                _ => return Err(io::Error::other("the path has an unexpected component")),
            }
        }
        let Some(name) = names.pop() else {
            return Err(io::Error::other("the path has no file name below its root"));
        };
        let chain = self.chain();
        if chain.len() != names.len() + 1 {
            return Err(io::Error::other(
                "the path does not match the directories it was found in",
            ));
        }
        let mut dir = sys::open_root(&self.root)?;
        expect(&dir, chain[0], &self.root)?;
        let mount = match self.in_container() {
            true => Some(mount_id(dir.as_fd())?),
            false => None,
        };
        for (i, n) in names.iter().enumerate() {
            let next = sys::open_child(dir.as_fd(), n).map_err(|e| {
                io::Error::new(
                    e.kind(),
                    format!(
                        "cannot open {} without following a symlink: {e}",
                        self.root
                            .join(names[..=i].iter().collect::<std::path::PathBuf>())
                            .display()
                    ),
                )
            })?;
            let here = self
                .root
                .join(names[..=i].iter().collect::<std::path::PathBuf>());
            expect(&next, chain[i + 1], &here)?;
            if let Some(m) = mount {
                self.expect_mount(next.as_fd(), m, &here)?;
            }
            dir = next;
        }
        Ok((dir, name.to_os_string()))
    }

    /// Whether the root is a place inside a container (`/proc/<pid>/root/...`).
    pub fn in_container(&self) -> bool {
        crate::probe::containers::proc_root_path(&self.root).is_some()
    }

    /// For a root inside a container: refuses `fd` (a directory or the lock itself, reached
    /// below the root) unless it is on the root's mount `root_mount`.
    pub fn expect_mount(&self, fd: BorrowedFd<'_>, root_mount: u64, path: &Path) -> io::Result<()> {
        if mount_id(fd)? != root_mount {
            return Err(io::Error::other(format!(
                "{} is on another mount than the container's place {} (something mounted into \
                 the container, such as a directory of the host), which is never followed",
                path.display(),
                self.root.display()
            )));
        }
        Ok(())
    }

    /// The (device, inode) of every directory from the top down to the finding's own: from
    /// `/`, or for a root inside a container from that container's root directory; the part
    /// above the root is opened now by name (never following a symlink) and must lead to the
    /// root that was recorded. An error when it does not (a symlink on the way, a directory
    /// replaced since).
    pub fn from_top(&self) -> io::Result<Vec<DirId>> {
        let chain = self.chain();
        let (top, rel) = match crate::probe::containers::proc_root_path(&self.root) {
            Some((pid, rest)) => (format!("/proc/{pid}/root/."), rest),
            None if self.root.is_absolute() => ("/".to_string(), self.root.to_path_buf()),
            None => return Err(io::Error::other("the root is not an absolute path")),
        };
        let mut dir = sys::open_root(Path::new(&top))?;
        let mut out = vec![dir_id(dir.as_fd())?];
        for c in rel.components() {
            match c {
                Component::RootDir => continue,
                Component::Normal(n) => {
                    dir = sys::open_child(dir.as_fd(), n)?;
                    out.push(dir_id(dir.as_fd())?);
                }
                _ => return Err(io::Error::other("the root has an unexpected component")),
            }
        }
        if out.last() != chain.first() {
            return Err(io::Error::other(format!(
                "{} is not the directory that was scanned",
                self.root.display()
            )));
        }
        out.extend_from_slice(&chain[1..]);
        Ok(out)
    }

    /// An anchor for `path` judged on its own: its directory, opened now (without following
    /// a symlink in the directory's last component), is the root. Returns the open directory
    /// too.
    pub fn of_parent(path: &Path) -> io::Result<(Anchor, OwnedFd, OsString)> {
        let name = match path.file_name() {
            Some(n) => n.to_os_string(),
            None => return Err(io::Error::other("the path has no file name")),
        };
        let parent = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        let dir = sys::open_root(parent)?;
        let id = dir_id(dir.as_fd())?;
        let anchor = Anchor {
            root: Arc::from(parent),
            dir: Arc::new(DirNode { id, parent: None }),
        };
        Ok((anchor, dir, name))
    }
}

/// The (device, inode) of an open directory.
pub fn dir_id(fd: BorrowedFd<'_>) -> io::Result<DirId> {
    let st = rustix::fs::fstat(fd)?;
    #[allow(clippy::unnecessary_cast)]
    Ok(DirId {
        dev: st.st_dev as u64,
        ino: st.st_ino as u64,
    })
}

/// The mount an open file is on (`statx(STATX_MNT_ID)`, Linux 5.8); an error where the
/// kernel cannot say.
pub fn mount_id(fd: BorrowedFd<'_>) -> io::Result<u64> {
    id_and_mount(fd).map(|(_, mount)| mount)
}

/// An open directory's (device, inode) and the mount it is on, with one `statx`
/// (`STATX_MNT_ID`, Linux 5.8); an error where the kernel cannot say which mount.
#[cfg(target_os = "linux")]
pub fn id_and_mount(fd: BorrowedFd<'_>) -> io::Result<(DirId, u64)> {
    use rustix::fs::{AtFlags, StatxFlags};
    let st = rustix::fs::statx(
        fd,
        "",
        AtFlags::EMPTY_PATH,
        StatxFlags::INO | StatxFlags::MNT_ID,
    )?;
    if st.stx_mask & StatxFlags::MNT_ID.bits() == 0 {
        return Err(io::Error::other(
            "the kernel does not say which mount a file is on (statx STATX_MNT_ID, Linux 5.8)",
        ));
    }
    let id = DirId {
        dev: rustix::fs::makedev(st.stx_dev_major, st.stx_dev_minor),
        ino: st.stx_ino,
    };
    Ok((id, st.stx_mnt_id))
}

#[cfg(not(target_os = "linux"))]
pub fn id_and_mount(_fd: BorrowedFd<'_>) -> io::Result<(DirId, u64)> {
    Err(io::Error::other("mount ids are Linux's"))
}

fn expect(dir: &OwnedFd, want: DirId, path: &Path) -> io::Result<()> {
    if dir_id(dir.as_fd())? != want {
        return Err(io::Error::other(format!(
            "{} is not the directory that was scanned (it was replaced since)",
            path.display()
        )));
    }
    Ok(())
}

/// Opens the directory `rel` (relative, without `..`) below the open directory `root`, never
/// following a symlink on the way; the walker uses it for directories too deep to keep their
/// parent open. One `openat2` where the kernel has it (like an open by path, it fails beyond
/// `PATH_MAX`), else one `openat(O_NOFOLLOW)` per component.
pub fn open_beneath(root: BorrowedFd<'_>, rel: &Path) -> io::Result<OwnedFd> {
    let mut names = Vec::new();
    for c in rel.components() {
        let Component::Normal(n) = c else {
            return Err(io::Error::other("the path has an unexpected component"));
        };
        names.push(n);
    }
    if names.is_empty() {
        return Ok(rustix::io::fcntl_dupfd_cloexec(root, 0)?);
    }
    if let Some(fd) = sys::open_beneath_at_once(root, rel)? {
        return Ok(fd);
    }
    let mut dir: Option<OwnedFd> = None;
    for n in names {
        let at = dir.as_ref().map_or(root, |d| d.as_fd());
        dir = Some(sys::open_child(at, n)?);
    }
    Ok(dir.expect("at least one component"))
}

pub(crate) mod sys {
    #[cfg(target_os = "linux")]
    use std::sync::atomic::{AtomicU8, Ordering};

    #[cfg(target_os = "linux")]
    use rustix::fs::ResolveFlags;
    use rustix::fs::{Mode, OFlags};
    #[cfg(target_os = "linux")]
    use rustix::io::Errno;

    use super::*;

    /// Directories are opened `O_PATH`: nothing is read through them, and no read permission
    /// is needed to work inside one.
    #[cfg(target_os = "linux")]
    fn dir_flags() -> OFlags {
        OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC
    }

    #[cfg(not(target_os = "linux"))]
    fn dir_flags() -> OFlags {
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC
    }

    /// Opens a root directory by its path, as given (a symlink as the last component is not
    /// followed).
    pub fn open_root(path: &Path) -> io::Result<OwnedFd> {
        Ok(rustix::fs::openat(
            rustix::fs::CWD,
            path,
            dir_flags(),
            Mode::empty(),
        )?)
    }

    /// Whether `openat2` works here: 0 unknown, 1 yes, 2 no.
    #[cfg(target_os = "linux")]
    static OPENAT2: AtomicU8 = AtomicU8::new(0);

    /// `openat2(root, rel, RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)`:
    /// `None` when the kernel does not have it.
    #[cfg(target_os = "linux")]
    pub fn open_beneath_at_once(root: BorrowedFd<'_>, rel: &Path) -> io::Result<Option<OwnedFd>> {
        if OPENAT2.load(Ordering::Relaxed) == 2 {
            return Ok(None);
        }
        let resolve =
            ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS;
        match rustix::fs::openat2(root, rel, dir_flags(), Mode::empty(), resolve) {
            Ok(fd) => {
                OPENAT2.store(1, Ordering::Relaxed);
                Ok(Some(fd))
            }
            Err(Errno::NOSYS) | Err(Errno::PERM) if OPENAT2.load(Ordering::Relaxed) == 0 => {
                OPENAT2.store(2, Ordering::Relaxed);
                Ok(None)
            }
            Err(e) => Err(e.into()),
        }
    }

    #[cfg(not(target_os = "linux"))]
    pub fn open_beneath_at_once(_root: BorrowedFd<'_>, _rel: &Path) -> io::Result<Option<OwnedFd>> {
        Ok(None)
    }

    /// Opens the directory `name` (one component) in `dir`, never following a symlink.
    pub fn open_child(dir: BorrowedFd<'_>, name: &OsStr) -> io::Result<OwnedFd> {
        if name.is_empty() || name == ".." || name == "." || name.as_encoded_bytes().contains(&b'/')
        {
            return Err(io::Error::other("not a single path component"));
        }
        #[cfg(target_os = "linux")]
        if OPENAT2.load(Ordering::Relaxed) != 2 {
            let resolve =
                ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS;
            match rustix::fs::openat2(dir, name, dir_flags(), Mode::empty(), resolve) {
                Ok(fd) => {
                    OPENAT2.store(1, Ordering::Relaxed);
                    return Ok(fd);
                }
                // Before Linux 5.6, or refused by a seccomp filter.
                Err(Errno::NOSYS) | Err(Errno::PERM) if OPENAT2.load(Ordering::Relaxed) == 0 => {
                    OPENAT2.store(2, Ordering::Relaxed);
                }
                Err(e) => return Err(e.into()),
            }
        }
        Ok(rustix::fs::openat(dir, name, dir_flags(), Mode::empty())?)
    }
}

#[cfg(test)]
mod tests {
    use std::fs;

    use super::*;

    fn anchor_of(root: &Path, dirs: &[&Path]) -> Anchor {
        let mut node: Option<Arc<DirNode>> = None;
        for d in dirs {
            let fd = sys::open_root(d).unwrap();
            node = Some(Arc::new(DirNode {
                id: dir_id(fd.as_fd()).unwrap(),
                parent: node,
            }));
        }
        Anchor {
            root: Arc::from(root),
            dir: node.unwrap(),
        }
    }

    #[test]
    fn opens_the_recorded_directories_only() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().join("root");
        fs::create_dir_all(root.join("a/b")).unwrap();
        let a = anchor_of(&root, &[&root, &root.join("a"), &root.join("a/b")]);
        assert_eq!(a.chain().len(), 3);
        let (dir, name) = a.open_parent(&root.join("a/b/x.pid")).unwrap();
        assert_eq!(name, "x.pid");
        assert_eq!(dir_id(dir.as_fd()).unwrap(), *a.chain().last().unwrap());

        // A path that does not fit the chain, or leaves the root.
        assert!(a.open_parent(&root.join("a/x.pid")).is_err());
        assert!(a.open_parent(&t.path().join("x.pid")).is_err());
        assert!(a.open_parent(&root.join("a/../a/b/x.pid")).is_err());

        // `a` swapped for a symlink to a copy of the tree elsewhere.
        let elsewhere = t.path().join("elsewhere");
        fs::create_dir_all(elsewhere.join("b")).unwrap();
        fs::rename(root.join("a"), t.path().join("moved")).unwrap();
        std::os::unix::fs::symlink(&elsewhere, root.join("a")).unwrap();
        let e = a.open_parent(&root.join("a/b/x.pid")).unwrap_err();
        assert!(e.to_string().contains("without following a symlink"), "{e}");

        // `a` swapped for another real directory.
        fs::remove_file(root.join("a")).unwrap();
        fs::create_dir_all(root.join("a/b")).unwrap();
        let e = a.open_parent(&root.join("a/b/x.pid")).unwrap_err();
        assert!(
            e.to_string().contains("not the directory that was scanned"),
            "{e}"
        );
    }

    #[test]
    fn a_deep_chain_drops_without_recursion() {
        let mut node: Option<Arc<DirNode>> = None;
        for i in 0..200_000 {
            node = Some(Arc::new(DirNode {
                id: DirId { dev: 1, ino: i },
                parent: node,
            }));
        }
        drop(node);
    }
}
