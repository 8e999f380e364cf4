//! The walk on mounts that may hang: every call on such a mount (listing a directory,
//! opening one, asking what judging a candidate will ask, telling a directory from a file) goes
//! through [`reach`], which makes it through a bounded call of that mount; a mount that does
//! not answer is reported once per walk, and nothing more on it is asked.

use std::ffi::{OsStr, OsString};
use std::os::fd::AsFd;
use std::path::Path;
use std::sync::Arc;

use super::{Here, Job, Opened, Walk, anchor, sys};
use crate::probe::fs::{Mount, NotAnswering};
use crate::probe::reach;
use crate::scan::ScanError;

impl Walk<'_> {
    /// [`sys::read_entries`] on a mount that may hang: one `getdents` buffer at a time on the
    /// mount's helper. A mount that stops answering ends the listing (it is reported once).
    pub(super) fn read_entries_bounded(
        &self,
        m: &Arc<Mount>,
        dir: &Arc<sys::DirHandle>,
        buf: &mut Vec<u8>,
        mut f: impl FnMut(&OsStr, sys::DType, u64) -> bool,
    ) -> std::io::Result<()> {
        let _ = buf;
        loop {
            let (entries, end) = match reach::read_dir_at(m, dir.as_fd()) {
                Ok(read) => read?,
                Err(e) => {
                    self.not_answering(m, e);
                    return Ok(());
                }
            };
            for (name, t, ino) in &entries {
                let dtype = match *t {
                    4 => sys::DType::Dir,
                    0 => sys::DType::Unknown,
                    _ => sys::DType::Other,
                };
                if name == "." || name == ".." {
                    continue;
                }
                if !f(name, dtype, *ino) {
                    return Ok(());
                }
            }
            if end {
                return Ok(());
            }
        }
    }

    /// [`open_job`] on a mount that may hang, through [`reach::open_dir_at`]: the directory is opened
    /// component by component without following symlinks, as [`anchor::open_beneath`] does.
    pub(super) fn open_job_bounded(
        &self,
        m: &Arc<Mount>,
        job: &Job,
        root_path: &Path,
    ) -> Result<std::io::Result<Opened>, (Arc<Mount>, NotAnswering)> {
        let name = || job.path.file_name().map(OsStr::to_os_string);
        let (from, chain) = match (job.parent.as_deref(), job.root_dir.as_deref()) {
            (Some(p), _) => (Some(p.as_fd()), name().into_iter().collect()),
            (None, None) => (None, vec![job.path.as_os_str().to_os_string()]),
            (None, Some(r)) => {
                let Ok(rel) = job.path.strip_prefix(root_path) else {
                    return Ok(Err(std::io::Error::other("not below its root")));
                };
                let chain: Vec<OsString> = rel
                    .components()
                    .map(|c| c.as_os_str().to_os_string())
                    .collect();
                (Some(r.as_fd()), chain)
            }
        };
        let opened = reach::open_dir_at(m, from, chain).map_err(|e| (m.clone(), e))?;
        Ok(opened.map(|d| {
            (
                d.fd,
                anchor::DirId {
                    dev: d.dev,
                    ino: d.ino,
                },
            )
        }))
    }

    /// Whether the entry `name` of `at` answers (always, off a mount that may hang): what
    /// judging it will ask of the file system (its status, a prefix of its content, its link
    /// text) is asked first through the mount's helper, so that a candidate is judged only
    /// when its mount has just answered for it.
    pub(super) fn answers(&self, at: &Here<'_>, name: &OsStr) -> bool {
        let Some(m) = at.mount else { return true };
        match reach::touch_at(m, at.dir.as_fd(), name) {
            Ok(_) => true,
            Err(e) => {
                self.not_answering(m, e);
                false
            }
        }
    }

    /// [`sys::is_dir_at`], through the mount's helper where the mount may hang.
    pub(super) fn is_dir_at(&self, at: &Here<'_>, name: &OsStr) -> bool {
        let Some(m) = at.mount else {
            return sys::is_dir_at(at.dir, name);
        };
        match reach::lstat_at(Some(m), at.dir.as_fd(), name) {
            Ok(st) => st.is_ok_and(|st| {
                rustix::fs::FileType::from_raw_mode(st.mode) == rustix::fs::FileType::Directory
            }),
            Err(e) => {
                self.not_answering(m, e);
                false
            }
        }
    }

    /// Reports a mount that does not answer, once per walk.
    pub(super) fn not_answering(&self, m: &Mount, e: NotAnswering) {
        if self.dead.lock().unwrap().insert(m.point.clone()) {
            self.error(ScanError::other(&m.point, e.to_string()));
        }
    }
}
