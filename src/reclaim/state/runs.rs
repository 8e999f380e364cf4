//! Run files: each process that journals reclaims holds a file in `runs/` (locked with
//! `flock(2)` while it lives) that says where its batch in progress starts in the journal, so
//! that a run killed in the middle of a batch is found, and finished, by the next one (see
//! `recover`). A run file whose lock can be taken belongs to a run that has ended.

use std::io;
use std::os::fd::{AsFd, OwnedFd};

use rustix::fs::{AtFlags, Mode, OFlags};

use super::super::journal;
use super::dir::{check_own_file, names_in, read_all, sub_dir};
use super::{RUNS, StateDir};

impl StateDir {
    /// The batch in progress is over (every lock of it removed or cancelled).
    pub fn batch_done(&self) {
        let _ = self.mark_run(None, false);
    }

    /// Writes where this run's batch in progress starts in the journal (`None`: no batch in
    /// progress) into its run file, made and locked at the first call.
    pub(super) fn mark_run(&self, start: Option<u64>, sync: bool) -> io::Result<()> {
        let mut run = self.run_file.lock().unwrap_or_else(|e| e.into_inner());
        if run.is_none() {
            if start.is_none() {
                return Ok(());
            }
            let runs = sub_dir(&self.dir, &self.path, RUNS, true)?.expect("created");
            let fd = rustix::fs::openat(
                &runs,
                journal::run_id(),
                OFlags::RDWR | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::from_raw_mode(0o600),
            )?;
            check_own_file(&fd, &self.path.join(RUNS).join(journal::run_id()))?;
            rustix::fs::flock(&fd, rustix::fs::FlockOperation::NonBlockingLockExclusive)?;
            rustix::fs::fsync(&runs)?;
            *run = Some(fd);
        }
        let fd = run.as_ref().expect("just made");
        let text = match start {
            Some(n) => format!("{n:>20}\n"),
            None => format!("{:>20}\n", "-"),
        };
        rustix::io::pwrite(fd, text.as_bytes(), 0)?;
        if sync {
            rustix::fs::fdatasync(fd)?;
        }
        Ok(())
    }

    /// The run files in `runs/` of runs that have ended (their lock can be taken), each
    /// with where its batch in progress started (`None`: none was), held locked until
    /// [`DeadRun::finished`].
    pub(in crate::reclaim) fn dead_runs(&self) -> io::Result<Vec<DeadRun>> {
        let Some(runs) = sub_dir(&self.dir, &self.path, RUNS, false)? else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        for name in names_in(runs.as_fd())? {
            let Some(run) = name.to_str().filter(|n| !n.starts_with('.')) else {
                continue;
            };
            if run == journal::run_id() {
                continue;
            }
            let Ok(fd) = rustix::fs::openat(
                &runs,
                run,
                OFlags::RDWR | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
                Mode::empty(),
            ) else {
                continue;
            };
            if check_own_file(&fd, &self.path.join(RUNS).join(run)).is_err()
                || rustix::fs::flock(&fd, rustix::fs::FlockOperation::NonBlockingLockExclusive)
                    .is_err()
            {
                continue;
            }
            let text = read_all(&fd, 64).unwrap_or_default();
            let start = std::str::from_utf8(&text)
                .ok()
                .and_then(|t| t.trim().parse().ok());
            out.push(DeadRun {
                run: run.to_string(),
                start,
                runs: runs.try_clone()?,
                _held: fd,
            });
        }
        Ok(out)
    }
}

/// A run that ended (see [`StateDir::dead_runs`]), its run file held locked.
pub(in crate::reclaim) struct DeadRun {
    pub run: String,
    /// Where its batch in progress started in the journal, if one was.
    pub start: Option<u64>,
    runs: OwnedFd,
    _held: OwnedFd,
}

impl DeadRun {
    /// Its batch is finished: its run file goes.
    pub fn finished(self) {
        let _ = rustix::fs::unlinkat(&self.runs, self.run.as_str(), AtFlags::empty());
    }
}
