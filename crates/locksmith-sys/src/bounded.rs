//! Bounded calls: a call that may block on a file system whose server has stopped answering
//! (an NFS or FUSE mount gone, or stopped) is made by a task of its own and waited for at most
//! a deadline the caller gives ([`call`]); what calls are kept apart for is a [`Key`] (a
//! mount, or a path whose calls may go anywhere). The same call can be made in place
//! ([`inline`]), on a file system that cannot hang.
//!
//! A task is not a thread of this process: it shares the process's memory and working
//! directory, has a copy of its descriptors (closed at once, but for what the call needs), and
//! makes system calls only, on buffers and copies of descriptors made before it starts (see
//! `task`).
//!
//! Invariants:
//! - a call that gets no answer in time is abandoned, never waited for again: its task stays
//!   blocked in the kernel, holding only copies of descriptors and memory of its own, and its
//!   key is *stuck*: every later call with that key fails at once ([`Unanswered`]), without
//!   a new task, until the abandoned calls return (the server answers again); the task is
//!   then reaped and its memory freed;
//! - a task blocked in a call the kernel cannot interrupt (a FUSE request its daemon has
//!   taken) does not keep this process from exiting: it is not one of its threads;
//! - whoever reads the descriptors of this process's tasks sees its files open there too, for
//!   a moment: [`is_our_task`] says which processes are such tasks.
//!
//! Linux; elsewhere every call is made in place.

use std::collections::HashMap;
use std::ffi::OsString;
use std::os::fd::{BorrowedFd, OwnedFd};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

/// What [`Op::Touch`] reads of a regular file: as much as judging a lock reads of it (the
/// scanner's dialects read this prefix).
pub const TOUCH_PREFIX: usize = 4096;

/// A call that may block on a file system, with what it needs (descriptors are borrowed for
/// the call: the task that makes it works on copies of its own).
#[derive(Debug)]
pub enum Op<'a> {
    /// Opens the directory `chain` (path components, the first one may be a whole path) from
    /// `from` (the current directory when `None`), one component at a time, never following
    /// a symlink; answers the directory's descriptor and (device, inode).
    OpenDir {
        from: Option<BorrowedFd<'a>>,
        chain: Vec<OsString>,
    },
    /// One `getdents64` of the open directory `dir`: its entries (`.` and `..` included) and
    /// whether it ended.
    ReadDir { dir: BorrowedFd<'a> },
    /// `lstat` of `name` in `dir`: its mode.
    StatAt { dir: BorrowedFd<'a>, name: OsString },
    /// Asks of `name` in `dir` what judging it will: its status, then a prefix of a regular
    /// file's content (opened without blocking or following a link) or a symlink's text.
    Touch { dir: BorrowedFd<'a>, name: OsString },
    /// [`Op::Touch`] of a path named on its own (its directory opened by path).
    TouchPath { path: PathBuf },
    /// `lstat` of `path`, then `path` opened `O_PATH` (following symlinks): its mode, device
    /// and inode, and its real path (from the descriptor, which asks no file system). A
    /// symlink that leads nowhere answers its own mode, with no target (a `target_mode` of 0).
    Probe { path: PathBuf },
    /// One `read` of `fd` (at most 16 bytes, which are not kept): a call that waits until its
    /// writer writes (a pipe: how tests make a call that does not answer).
    Read { fd: BorrowedFd<'a> },
}

/// What a call answered. `err` is the error of the call itself.
#[derive(Debug, Default)]
pub struct Answer {
    pub err: Option<std::io::Error>,
    pub fd: Option<OwnedFd>,
    /// `st_mode` (for [`Op::Probe`], of the `lstat`).
    pub mode: u32,
    pub dev: u64,
    pub ino: u64,
    /// [`Op::ReadDir`]: name, `d_type`, inode.
    pub entries: Vec<(OsString, u8, u64)>,
    /// [`Op::ReadDir`]: the end of the directory was reached.
    pub eof: bool,
    /// [`Op::Probe`]: the real path, and the mode of what it names.
    pub real: Option<PathBuf>,
    pub target_mode: u32,
}

impl Answer {
    /// The call's own result: `Ok(self)` unless it failed.
    pub fn ok(mut self) -> std::io::Result<Self> {
        match self.err.take() {
            Some(e) => Err(e),
            None => Ok(self),
        }
    }
}

/// What calls are kept apart for: a mount (its id, device and mount point), or a path whose
/// calls may go anywhere (following symlinks). Calls of one key fail at once while an
/// abandoned one has not returned; calls of other keys are not concerned.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Key {
    Mount { id: u64, dev: u64, point: PathBuf },
    Path(PathBuf),
}

/// A call that got no answer in time, or was not made because an earlier call with the same
/// key has not returned yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unanswered {
    /// How long the oldest unanswered call of its key has waited.
    pub waited: Duration,
}

/// Makes `op` in a task of its own, waiting at most `timeout` for it; `Err` when it does not
/// answer by then (the task is abandoned), or when an earlier call with `key` has not returned
/// yet (no task is started). See the module docs.
pub fn call(key: &Key, op: Op<'_>, timeout: Duration) -> Result<Answer, Unanswered> {
    let cell = cell(key);
    if let Some(waited) = cell.lock().unwrap_or_else(|e| e.into_inner()).stuck() {
        return Err(Unanswered { waited });
    }
    match task::bounded(op, timeout) {
        Ok(a) => Ok(a),
        Err(abandoned) => {
            let waited = abandoned.since.elapsed();
            cell.lock()
                .unwrap_or_else(|e| e.into_inner())
                .abandoned
                .push(abandoned);
            Err(Unanswered { waited })
        }
    }
}

/// Makes `op` here and now (on a file system that cannot hang).
pub fn inline(op: Op<'_>) -> Answer {
    task::inline(op)
}

/// Whether calls with `key` fail at once now, because an earlier one has not returned: how
/// long the oldest of those has waited.
pub fn stuck(key: &Key) -> Option<Duration> {
    let cell = cells()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get(key)
        .cloned()?;
    cell.lock().unwrap_or_else(|e| e.into_inner()).stuck()
}

/// Whether `pid` is a task this process started for a call and has not reaped yet. A task
/// starts with a copy of this process's descriptors and closes them at once: whoever reads
/// the table of descriptors at that moment sees this process's files open in the task too.
pub fn is_our_task(pid: i32) -> bool {
    #[cfg(target_os = "linux")]
    return task::LIVE
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .contains(&pid);
    #[cfg(not(target_os = "linux"))]
    {
        let _ = pid;
        false
    }
}

/// How many tasks the calling thread has started (tests: what was made in place and what was
/// not).
pub fn tasks_started_here() -> usize {
    task::STARTED.with(|n| n.get())
}

/// The calls of one key that were abandoned and have not returned yet.
#[derive(Default)]
struct Cell {
    abandoned: Vec<task::Abandoned>,
}

impl Cell {
    /// How long the oldest abandoned call that has not returned has waited (the ones that
    /// have returned are reaped).
    fn stuck(&mut self) -> Option<Duration> {
        self.abandoned.retain_mut(|a| !a.reap());
        self.abandoned.iter().map(|a| a.since.elapsed()).max()
    }
}

type Cells = Mutex<HashMap<Key, Arc<Mutex<Cell>>>>;

fn cells() -> &'static Cells {
    static CELLS: OnceLock<Cells> = OnceLock::new();
    CELLS.get_or_init(Mutex::default)
}

fn cell(key: &Key) -> Arc<Mutex<Cell>> {
    cells()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .entry(key.clone())
        .or_default()
        .clone()
}

/// The tasks that make calls that may not answer.
///
/// A call is made by a task that shares this process's memory and working directory but is
/// not one of its threads (`clone(2)` with `CLONE_VM | CLONE_FS`, without `CLONE_THREAD`; it
/// gets a copy of the descriptor table): a call the kernel cannot interrupt (a FUSE request its
/// daemon has taken, an NFS hard mount) blocks that task alone, and this process can still
/// exit. The task runs [`run`] only: system calls through rustix (no allocation, no
/// thread-local state, no panic), on buffers and copies of descriptors made before it
/// starts. Its state word says who owns the results: the task sets it to done when it
/// finishes, the caller to abandoned when the time is up; whoever comes second knows the
/// other's part (an abandoned task closes what it opened, and its memory is freed only once
/// it has exited).
mod task {
    use std::ffi::{CString, OsString};
    use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
    use std::os::unix::ffi::OsStringExt;
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::time::{Duration, Instant};

    use super::{Answer, Op};

    const RUNNING: u32 = 0;
    const DONE: u32 = 1;
    const ABANDONED: u32 = 2;

    /// The size of a directory read and of its parsed entries.
    const DIR_BUF: usize = 32 * 1024;
    use super::TOUCH_PREFIX as PREFIX;
    /// The task's stack.
    #[cfg(target_os = "linux")]
    const STACK: usize = 256 * 1024;

    /// The tasks started and not reaped yet, by PID (see [`super::is_our_task`]).
    #[cfg(target_os = "linux")]
    pub(super) static LIVE: std::sync::Mutex<Vec<i32>> = std::sync::Mutex::new(Vec::new());

    thread_local! {
        /// Tasks this thread has started (tests: what was asked in place and what was not).
        pub(super) static STARTED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    }

    #[derive(Clone, Copy, PartialEq, Eq)]
    enum Kind {
        OpenDir,
        ReadDir,
        StatAt,
        Touch,
        TouchPath,
        Probe,
        Read,
    }

    /// Everything a task reads and writes, made before it starts.
    struct Shared {
        state: AtomicU32,
        kind: Kind,
        /// A copy of the caller's descriptor (-1: the current directory), closed by the task.
        dir: RawFd,
        /// Path components (or one path), NUL-terminated.
        names: Vec<CString>,
        scratch: Vec<u8>,
        out: Vec<u8>,
        /// The task's end of the socket it answers on (in its own descriptor table).
        sock: RawFd,
        // Results.
        errno: i32,
        fd: RawFd,
        fd2: RawFd,
        mode: u32,
        mode2: u32,
        dev: u64,
        ino: u64,
        out_len: usize,
        eof: bool,
    }

    impl Shared {
        fn new(op: Op<'_>) -> std::io::Result<Box<Shared>> {
            let cstr = |s: OsString| {
                CString::new(s.into_vec())
                    .map_err(|_| std::io::Error::other("a path with a NUL byte"))
            };
            let dup = |fd: BorrowedFd<'_>| -> std::io::Result<RawFd> {
                let d = rustix::io::fcntl_dupfd_cloexec(fd, 0)?;
                Ok(std::os::fd::IntoRawFd::into_raw_fd(d))
            };
            let (kind, dir, names) = match op {
                Op::OpenDir { from, chain } => (
                    Kind::OpenDir,
                    from.map(dup).transpose()?,
                    chain.into_iter().map(cstr).collect::<Result<_, _>>()?,
                ),
                Op::ReadDir { dir } => (Kind::ReadDir, Some(dup(dir)?), Vec::new()),
                Op::StatAt { dir, name } => (Kind::StatAt, Some(dup(dir)?), vec![cstr(name)?]),
                Op::Touch { dir, name } => (Kind::Touch, Some(dup(dir)?), vec![cstr(name)?]),
                Op::TouchPath { path } => {
                    let parent = path
                        .parent()
                        .filter(|p| !p.as_os_str().is_empty())
                        .unwrap_or(std::path::Path::new("."));
                    let name = path.file_name().unwrap_or_default();
                    (
                        Kind::TouchPath,
                        None,
                        vec![cstr(parent.into())?, cstr(name.into())?],
                    )
                }
                Op::Probe { path } => {
                    let in_root = crate::fs::proc_root_path(&path);
                    let mut names = vec![cstr(path.into())?];
                    // Below a process's root, resolved within that root (see `Kind::Probe`).
                    if let Some((pid, rest)) = in_root {
                        let rest = rest.strip_prefix("/").unwrap_or(&rest);
                        let rest = if rest.as_os_str().is_empty() {
                            std::path::Path::new(".")
                        } else {
                            rest
                        };
                        names.push(cstr(format!("/proc/{pid}/root").into())?);
                        names.push(cstr(rest.into())?);
                    }
                    (Kind::Probe, None, names)
                }
                Op::Read { fd } => (Kind::Read, Some(dup(fd)?), Vec::new()),
            };
            let (scratch, out) = match kind {
                Kind::ReadDir => (vec![0u8; DIR_BUF], vec![0u8; DIR_BUF * 2]),
                Kind::Touch | Kind::TouchPath => (vec![0u8; PREFIX.max(4096)], Vec::new()),
                Kind::Read => (vec![0u8; 16], Vec::new()),
                _ => (Vec::new(), Vec::new()),
            };
            Ok(Box::new(Shared {
                state: AtomicU32::new(RUNNING),
                kind,
                dir: dir.unwrap_or(-1),
                names,
                scratch,
                out,
                sock: -1,
                errno: 0,
                fd: -1,
                fd2: -1,
                mode: 0,
                mode2: 0,
                dev: 0,
                ino: 0,
                out_len: 0,
                eof: false,
            }))
        }

        /// The answer, with the descriptors the call opened (`fds`: as received from a task;
        /// `None`: the call was made here, and they are in `self`).
        fn answer(&mut self, fds: Option<[Option<OwnedFd>; 2]>) -> Answer {
            let take = |fd: &mut RawFd| {
                // SAFETY: a descriptor of ours that the call opened (made here).
                (*fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(std::mem::replace(fd, -1)) })
            };
            let [fd, _] = match fds {
                Some(f) => {
                    // The task's numbers mean nothing here.
                    (self.fd, self.fd2) = (-1, -1);
                    f
                }
                None => [take(&mut self.fd), take(&mut self.fd2)],
            };
            let mut a = Answer {
                err: (self.errno != 0).then(|| std::io::Error::from_raw_os_error(self.errno)),
                mode: self.mode,
                target_mode: self.mode2,
                dev: self.dev,
                ino: self.ino,
                eof: self.eof,
                ..Answer::default()
            };
            if self.kind == Kind::ReadDir {
                a.entries = parse_entries(self.out.get(..self.out_len).unwrap_or_default());
            }
            if self.kind == Kind::Probe {
                // The O_PATH descriptor: only its real path is wanted.
                a.real = fd.and_then(|fd| {
                    std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd()))
                        .ok()
                        .filter(|p| p.is_absolute())
                });
            } else {
                a.fd = fd;
            }
            a
        }
    }

    impl Drop for Shared {
        fn drop(&mut self) {
            for fd in [self.fd, self.fd2] {
                if fd >= 0 {
                    // SAFETY: a descriptor the task opened that no answer took.
                    drop(unsafe { OwnedFd::from_raw_fd(fd) });
                }
            }
        }
    }

    /// Entries as the task writes them: inode (8 bytes), type (1), name length (2), name.
    fn parse_entries(mut b: &[u8]) -> Vec<(OsString, u8, u64)> {
        let mut out = Vec::new();
        while b.len() >= 11 {
            let ino = u64::from_ne_bytes(b[..8].try_into().unwrap_or_default());
            let t = b[8];
            let len = usize::from(u16::from_ne_bytes([b[9], b[10]]));
            let Some(name) = b.get(11..11 + len) else {
                break;
            };
            out.push((OsString::from_vec(name.to_vec()), t, ino));
            b = &b[11 + len..];
        }
        out
    }

    /// Makes the call here and now (a mount that does not hang).
    pub fn inline(op: Op<'_>) -> Answer {
        match Shared::new(op) {
            Ok(mut s) => {
                run(&mut s);
                s.answer(None)
            }
            Err(e) => Answer {
                err: Some(e),
                ..Answer::default()
            },
        }
    }

    /// A task that was not waited for: it is reaped, and its memory freed, once it exits.
    pub struct Abandoned {
        pub since: Instant,
        #[cfg(target_os = "linux")]
        pid: i32,
        #[cfg(target_os = "linux")]
        shared: *mut Shared,
        #[cfg(target_os = "linux")]
        stack: *mut [u8],
        /// Our end of its socket (closed once it has exited).
        #[cfg(target_os = "linux")]
        _sock: OwnedFd,
    }

    // SAFETY: the pointers are only dereferenced (freed) once the task has exited.
    unsafe impl Send for Abandoned {}

    impl Abandoned {
        /// Whether the task has exited (its memory is then freed).
        pub fn reap(&mut self) -> bool {
            #[cfg(target_os = "linux")]
            {
                if !reaped(self.pid, libc::WNOHANG) {
                    return false;
                }
                // SAFETY: the task has exited: nothing uses its memory any more.
                unsafe {
                    let mut s = Box::from_raw(self.shared);
                    // Numbers of the task's own descriptor table, which is gone: not ours.
                    (s.fd, s.fd2) = (-1, -1);
                    drop(s);
                    drop(Box::from_raw(self.stack));
                }
                true
            }
            #[cfg(not(target_os = "linux"))]
            true
        }
    }

    /// Whether the task `pid` has exited and is reaped now (`flags`: `WNOHANG` or 0, to wait).
    #[cfg(target_os = "linux")]
    fn reaped(pid: i32, flags: libc::c_int) -> bool {
        loop {
            let mut status = 0;
            // SAFETY: waitpid on our own child task (`__WCLONE`: it sends no SIGCHLD).
            let r = unsafe { libc::waitpid(pid, &mut status, flags | libc::__WCLONE) };
            if r == pid {
                LIVE.lock().unwrap().retain(|&p| p != pid);
                return true;
            }
            if r < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            return false;
        }
    }

    /// Makes the call in a task of its own, waiting at most `timeout`; the task is abandoned
    /// (`Err`) when it has not answered by then.
    ///
    /// The task shares our memory and working directory, not our descriptor table: it gets a
    /// copy, in which it closes everything but what the call needs (a pipe it kept would not
    /// see its end while the task is blocked), and sends back what the call opened over a
    /// socket (`SCM_RIGHTS`), with one byte that says it is done.
    #[cfg(target_os = "linux")]
    pub fn bounded(op: Op<'_>, timeout: Duration) -> Result<Answer, Abandoned> {
        let since = Instant::now();
        let mut shared = match Shared::new(op) {
            Ok(s) => s,
            Err(e) => {
                return Ok(Answer {
                    err: Some(e),
                    ..Answer::default()
                });
            }
        };
        let mut ends = [0 as libc::c_int; 2];
        // SAFETY: socketpair writes two descriptors into `ends`.
        let made = unsafe {
            libc::socketpair(
                libc::AF_UNIX,
                libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC,
                0,
                ends.as_mut_ptr(),
            )
        };
        if made != 0 {
            // No way to hear a task: make the call here.
            run(&mut shared);
            return Ok(shared.answer(None));
        }
        // SAFETY: both ends are ours; the task gets a copy of the second.
        let ours = unsafe { OwnedFd::from_raw_fd(ends[0]) };
        // SAFETY: as above, the second end, owned once.
        let theirs = unsafe { OwnedFd::from_raw_fd(ends[1]) };
        shared.sock = theirs.as_raw_fd();
        // Our copy of the call's directory: the task has its own once started.
        let dir = shared.dir;
        STARTED.with(|n| n.set(n.get() + 1));
        let stack = Box::into_raw(vec![0u8; STACK].into_boxed_slice());
        let shared = Box::into_raw(shared);
        // The list of tasks is held while the task starts: it is in it before it runs.
        let mut live = LIVE.lock().unwrap();
        // SAFETY: the task runs `task_main` on its own stack (its top, 16-aligned), sharing our
        // memory and working directory; `shared` and `stack` stay allocated until it has
        // exited (below, or when an abandoned task is reaped).
        let pid = unsafe {
            let top = (stack as *mut u8).add(STACK);
            let top = top.sub(top as usize % 16);
            libc::clone(
                task_main,
                top.cast(),
                libc::CLONE_VM | libc::CLONE_FS,
                shared.cast(),
            )
        };
        if pid > 0 {
            live.push(pid);
        }
        drop(live);
        drop(theirs);
        if pid < 0 {
            // SAFETY: no task was started: the memory is ours alone.
            let mut s = unsafe { Box::from_raw(shared) };
            // SAFETY: the same: the stack was never used.
            unsafe { drop(Box::from_raw(stack)) };
            run(&mut s);
            return Ok(s.answer(None));
        }
        if dir >= 0 {
            // SAFETY: our copy of the directory; the task works on its own.
            drop(unsafe { OwnedFd::from_raw_fd(dir) });
        }
        let answered = wait_readable(&ours, timeout.saturating_sub(since.elapsed()));
        // SAFETY: `state` is an atomic the task also uses.
        let state = unsafe { &(*shared).state };
        let abandoned = !answered
            && state
                .compare_exchange(RUNNING, ABANDONED, Ordering::AcqRel, Ordering::Acquire)
                .is_ok();
        if abandoned {
            return Err(Abandoned {
                since,
                pid,
                shared,
                stack,
                _sock: ours,
            });
        }
        let fds = receive_fds(&ours);
        reaped(pid, 0);
        // SAFETY: the task has exited.
        let mut s = unsafe { Box::from_raw(shared) };
        // SAFETY: the task that ran on this stack has exited.
        unsafe { drop(Box::from_raw(stack)) };
        Ok(s.answer(Some(fds)))
    }

    #[cfg(not(target_os = "linux"))]
    pub fn bounded(op: Op<'_>, _timeout: Duration) -> Result<Answer, Abandoned> {
        Ok(inline(op))
    }

    /// Waits until `fd` is readable, at most `timeout`.
    #[cfg(target_os = "linux")]
    fn wait_readable(fd: &OwnedFd, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        loop {
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            let ms = (deadline - now).as_millis().clamp(1, i32::MAX as u128) as libc::c_int;
            let mut fds = [libc::pollfd {
                fd: fd.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            }];
            // SAFETY: poll on one descriptor of ours.
            let r = unsafe { libc::poll(fds.as_mut_ptr(), 1, ms) };
            if r > 0 {
                return true;
            }
            if r < 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
                return false;
            }
        }
    }

    /// The descriptors (at most two) that came with the task's answer on `sock`.
    #[cfg(target_os = "linux")]
    fn receive_fds(sock: &OwnedFd) -> [Option<OwnedFd>; 2] {
        let mut out = [None, None];
        let mut byte = [0u8; 1];
        let mut iov = libc::iovec {
            iov_base: byte.as_mut_ptr().cast(),
            iov_len: 1,
        };
        // Room for two descriptors (u64 words, aligned for cmsghdr).
        let mut control = [0u64; 8];
        // SAFETY: a msghdr over our own buffers, filled by recvmsg.
        unsafe {
            let mut msg: libc::msghdr = std::mem::zeroed();
            msg.msg_iov = &mut iov;
            msg.msg_iovlen = 1;
            msg.msg_control = control.as_mut_ptr().cast();
            msg.msg_controllen = std::mem::size_of_val(&control) as _;
            if libc::recvmsg(sock.as_raw_fd(), &mut msg, libc::MSG_CMSG_CLOEXEC) <= 0 {
                return out;
            }
            let mut c = libc::CMSG_FIRSTHDR(&msg);
            while !c.is_null() {
                if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_RIGHTS {
                    let data = libc::CMSG_DATA(c).cast::<libc::c_int>();
                    let n = ((*c).cmsg_len as usize - libc::CMSG_LEN(0) as usize)
                        / std::mem::size_of::<libc::c_int>();
                    for (i, slot) in out.iter_mut().enumerate().take(n) {
                        *slot = Some(OwnedFd::from_raw_fd(data.add(i).read_unaligned()));
                    }
                }
                c = libc::CMSG_NXTHDR(&msg, c);
            }
        }
        out
    }

    /// The task: closes every descriptor the call does not need, makes the call, then sends
    /// its answer (one byte, and what it opened).
    #[cfg(target_os = "linux")]
    extern "C" fn task_main(arg: *mut libc::c_void) -> libc::c_int {
        // SAFETY: `arg` is the `Shared` the caller made for this task and keeps until it exits;
        // the caller reads the results only after the answer (or never, once abandoned).
        let s = unsafe { &mut *arg.cast::<Shared>() };
        // No signal handler of the process runs here (they were written for its threads).
        let all: u64 = !0;
        // SAFETY: rt_sigprocmask(SIG_SETMASK) of this task alone, from a mask on its stack.
        unsafe {
            libc::syscall(
                libc::SYS_rt_sigprocmask,
                libc::SIG_SETMASK,
                &all as *const u64,
                std::ptr::null_mut::<u64>(),
                8usize,
            );
        }
        // Our copy of the descriptor table: keep the call's directory and the socket only.
        let mut keep = [s.dir, s.sock];
        keep.sort_unstable();
        let mut first = 0i64;
        for k in keep {
            if k >= 0 {
                close_range(first, i64::from(k) - 1);
                first = i64::from(k) + 1;
            }
        }
        close_range(first, i64::from(u32::MAX));
        run(s);
        let _ = s
            .state
            .compare_exchange(RUNNING, DONE, Ordering::AcqRel, Ordering::Acquire);
        send_answer(s.sock, [s.fd, s.fd2]);
        0
    }

    /// `close_range(first, last)` (a raw system call: the task has no errno of its own to
    /// spare, and this one can only fail on kernels without it).
    #[cfg(target_os = "linux")]
    fn close_range(first: i64, last: i64) {
        if first <= last {
            // SAFETY: closes descriptors of the task's own table.
            unsafe {
                libc::syscall(libc::SYS_close_range, first as u32, last as u32, 0u32);
            }
        }
    }

    /// Sends one byte and the descriptors `fds` (those that are open) on `sock`.
    #[cfg(target_os = "linux")]
    fn send_answer(sock: RawFd, fds: [RawFd; 2]) {
        let mut byte = [1u8; 1];
        let mut iov = libc::iovec {
            iov_base: byte.as_mut_ptr().cast(),
            iov_len: 1,
        };
        let open: [RawFd; 2] = match fds {
            [a, b] if a >= 0 && b >= 0 => [a, b],
            [a, _] if a >= 0 => [a, -1],
            [_, b] if b >= 0 => [b, -1],
            _ => [-1, -1],
        };
        let n = open.iter().filter(|f| **f >= 0).count();
        let mut control = [0u64; 8];
        // SAFETY: a msghdr over buffers of this task's stack; sendmsg as a raw system call.
        unsafe {
            let mut msg: libc::msghdr = std::mem::zeroed();
            msg.msg_iov = &mut iov;
            msg.msg_iovlen = 1;
            if n > 0 {
                let len = libc::CMSG_LEN((n * std::mem::size_of::<libc::c_int>()) as u32);
                msg.msg_control = control.as_mut_ptr().cast();
                msg.msg_controllen =
                    libc::CMSG_SPACE((n * std::mem::size_of::<libc::c_int>()) as u32) as _;
                let c = libc::CMSG_FIRSTHDR(&msg);
                (*c).cmsg_level = libc::SOL_SOCKET;
                (*c).cmsg_type = libc::SCM_RIGHTS;
                (*c).cmsg_len = len as _;
                let data = libc::CMSG_DATA(c).cast::<libc::c_int>();
                for (i, fd) in open.iter().take(n).enumerate() {
                    data.add(i).write_unaligned(*fd);
                }
            }
            libc::syscall(
                libc::SYS_sendmsg,
                sock,
                &msg as *const libc::msghdr,
                libc::MSG_NOSIGNAL,
            );
        }
    }

    /// The call itself: system calls only, on what `s` holds (see the module docs).
    fn run(s: &mut Shared) {
        use rustix::fs::{AtFlags, FileType, Mode, OFlags};
        let r = (|| -> rustix::io::Result<()> {
            // SAFETY: `dir` is our own copy, closed here when the call is over.
            let own = (s.dir >= 0).then(|| unsafe { OwnedFd::from_raw_fd(s.dir) });
            s.dir = -1;
            let dir = own.as_ref().map(|d| d.as_fd_borrowed());
            let at = dir.unwrap_or(rustix::fs::CWD);
            let dir_flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
            match s.kind {
                Kind::OpenDir => {
                    let mut cur: Option<OwnedFd> = None;
                    for name in &s.names {
                        let from = cur.as_ref().map(|d| d.as_fd_borrowed()).unwrap_or(at);
                        cur = Some(rustix::fs::openat(
                            from,
                            name.as_c_str(),
                            dir_flags,
                            Mode::empty(),
                        )?);
                    }
                    let Some(d) = cur else {
                        return Err(rustix::io::Errno::INVAL);
                    };
                    let st = rustix::fs::fstat(&d)?;
                    s.mode = st.st_mode as u32;
                    s.dev = st.st_dev as u64;
                    s.ino = st.st_ino as u64;
                    s.fd = std::os::fd::IntoRawFd::into_raw_fd(d);
                }
                Kind::ReadDir => {
                    let Some(d) = dir else {
                        return Err(rustix::io::Errno::BADF);
                    };
                    // SAFETY: `scratch` is a buffer of initialised bytes; RawDir only writes it.
                    let buf = unsafe {
                        std::slice::from_raw_parts_mut(
                            s.scratch.as_mut_ptr().cast::<std::mem::MaybeUninit<u8>>(),
                            s.scratch.len(),
                        )
                    };
                    let mut rd = rustix::fs::RawDir::new(d, buf);
                    let mut at_out = 0usize;
                    loop {
                        let Some(e) = rd.next() else {
                            s.eof = true;
                            break;
                        };
                        let e = e?;
                        let name = e.file_name().to_bytes();
                        let t = file_type_byte(e.file_type());
                        let need = 11 + name.len();
                        let Some(slot) = s.out.get_mut(at_out..at_out + need) else {
                            break;
                        };
                        slot[..8].copy_from_slice(&e.ino().to_ne_bytes());
                        slot[8] = t;
                        slot[9..11].copy_from_slice(&(name.len() as u16).to_ne_bytes());
                        slot[11..].copy_from_slice(name);
                        at_out += need;
                        if rd.is_buffer_empty() {
                            break;
                        }
                    }
                    s.out_len = at_out;
                }
                Kind::StatAt => {
                    let name = s.names.first().ok_or(rustix::io::Errno::INVAL)?;
                    let st = rustix::fs::statat(at, name.as_c_str(), AtFlags::SYMLINK_NOFOLLOW)?;
                    s.mode = st.st_mode as u32;
                    s.dev = st.st_dev as u64;
                    s.ino = st.st_ino as u64;
                }
                Kind::Touch | Kind::TouchPath => {
                    let (from, name) = if s.kind == Kind::TouchPath {
                        let parent = s.names.first().ok_or(rustix::io::Errno::INVAL)?;
                        let p = rustix::fs::openat(
                            rustix::fs::CWD,
                            parent.as_c_str(),
                            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
                            Mode::empty(),
                        )?;
                        (Some(p), s.names.get(1).ok_or(rustix::io::Errno::INVAL)?)
                    } else {
                        (None, s.names.first().ok_or(rustix::io::Errno::INVAL)?)
                    };
                    let d = from.as_ref().map(|d| d.as_fd_borrowed()).unwrap_or(at);
                    let st = rustix::fs::statat(d, name.as_c_str(), AtFlags::SYMLINK_NOFOLLOW)?;
                    s.mode = st.st_mode as u32;
                    match FileType::from_raw_mode(st.st_mode) {
                        FileType::RegularFile => {
                            let flags = OFlags::RDONLY
                                | OFlags::NONBLOCK
                                | OFlags::NOFOLLOW
                                | OFlags::NOCTTY
                                | OFlags::CLOEXEC;
                            let f = rustix::fs::openat(d, name.as_c_str(), flags, Mode::empty())?;
                            rustix::io::read(&f, &mut s.scratch[..])?;
                        }
                        FileType::Symlink => {
                            rustix::fs::readlinkat_raw(d, name.as_c_str(), &mut s.scratch[..])?;
                        }
                        _ => {}
                    }
                }
                Kind::Probe => {
                    let path = s.names.first().ok_or(rustix::io::Errno::INVAL)?;
                    // A path below a process's root (`/proc/PID/root`, names 1 and 2) is
                    // resolved within that root: an absolute symlink there leads to the
                    // process's own `/`, not ours (where the kernel has no `openat2`, as any
                    // path).
                    let open = |flags: OFlags| match (s.names.get(1), s.names.get(2)) {
                        (Some(root), Some(rest)) => {
                            let root = rustix::fs::openat(
                                rustix::fs::CWD,
                                root.as_c_str(),
                                OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
                                Mode::empty(),
                            )?;
                            match rustix::fs::openat2(
                                &root,
                                rest.as_c_str(),
                                flags,
                                Mode::empty(),
                                rustix::fs::ResolveFlags::IN_ROOT,
                            ) {
                                Err(rustix::io::Errno::NOSYS) => rustix::fs::openat(
                                    rustix::fs::CWD,
                                    path.as_c_str(),
                                    flags,
                                    Mode::empty(),
                                ),
                                other => other,
                            }
                        }
                        _ => rustix::fs::openat(
                            rustix::fs::CWD,
                            path.as_c_str(),
                            flags,
                            Mode::empty(),
                        ),
                    };
                    let st = rustix::fs::fstat(open(
                        OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                    )?)?;
                    s.mode = st.st_mode as u32;
                    let f = match open(OFlags::PATH | OFlags::CLOEXEC) {
                        Ok(f) => f,
                        // A symlink that leads nowhere (a lock written as a dangling link): the link itself is
                        // the answer, with no target.
                        Err(_) if FileType::from_raw_mode(st.st_mode) == FileType::Symlink => {
                            return Ok(());
                        }
                        Err(e) => return Err(e),
                    };
                    let st = rustix::fs::fstat(&f)?;
                    s.mode2 = st.st_mode as u32;
                    s.dev = st.st_dev as u64;
                    s.ino = st.st_ino as u64;
                    s.fd = std::os::fd::IntoRawFd::into_raw_fd(f);
                }
                Kind::Read => {
                    let d = dir.ok_or(rustix::io::Errno::BADF)?;
                    s.out_len = rustix::io::read(d, &mut s.scratch[..])?;
                }
            }
            Ok(())
        })();
        if let Err(e) = r {
            s.errno = e.raw_os_error();
        }
    }

    trait Borrowed {
        fn as_fd_borrowed(&self) -> BorrowedFd<'_>;
    }

    impl Borrowed for OwnedFd {
        fn as_fd_borrowed(&self) -> BorrowedFd<'_> {
            std::os::fd::AsFd::as_fd(self)
        }
    }

    /// `d_type` as a byte (DT_DIR 4, DT_UNKNOWN 0, ...).
    fn file_type_byte(t: rustix::fs::FileType) -> u8 {
        use rustix::fs::FileType as T;
        match t {
            T::Fifo => 1,
            T::CharacterDevice => 2,
            T::Directory => 4,
            T::BlockDevice => 6,
            T::RegularFile => 8,
            T::Symlink => 10,
            T::Socket => 12,
            _ => 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::os::fd::AsFd;
    use std::time::Instant;

    use super::*;

    const SHORT: Duration = Duration::from_millis(300);

    fn key(n: &str) -> Key {
        Key::Path(PathBuf::from(format!("/test/bounded-{n}")))
    }

    fn wait(ok: impl Fn() -> bool) {
        let start = Instant::now();
        while !ok() {
            assert!(start.elapsed() < Duration::from_secs(10));
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    #[test]
    fn a_call_that_does_not_answer_is_abandoned_and_its_key_fails_fast_until_it_returns() {
        let k = key("stuck");
        let (r, w) = std::io::pipe().unwrap();
        (&w).write_all(b"a").unwrap();
        let a = call(&k, Op::Read { fd: r.as_fd() }, SHORT).unwrap();
        assert!(a.err.is_none());
        // Nothing to read: the call waits, and is abandoned at the deadline.
        let started = Instant::now();
        let e = call(&k, Op::Read { fd: r.as_fd() }, SHORT).unwrap_err();
        let took = started.elapsed();
        assert!(took >= SHORT && took < SHORT * 4, "{took:?}");
        assert!(e.waited >= SHORT, "{e:?}");
        // The caller's descriptor can go: the task works on a copy of its own.
        drop(r);
        // Later calls with the key fail at once, without a task.
        let dir = std::fs::File::open("/").unwrap();
        let before = tasks_started_here();
        let started = Instant::now();
        assert!(call(&k, Op::ReadDir { dir: dir.as_fd() }, SHORT).is_err());
        assert!(started.elapsed() < SHORT);
        assert_eq!(tasks_started_here(), before);
        assert!(stuck(&k).is_some());
        // Another key is not concerned.
        let a = call(&key("other"), Op::ReadDir { dir: dir.as_fd() }, SHORT).unwrap();
        assert!(
            a.entries.iter().any(|(n, t, _)| n == "proc" && *t == 4),
            "{a:?}"
        );
        // The call returns: the key answers again.
        (&w).write_all(b"b").unwrap();
        wait(|| stuck(&k).is_none());
        let name = "proc".into();
        let a = call(
            &k,
            Op::StatAt {
                dir: dir.as_fd(),
                name,
            },
            SHORT,
        )
        .unwrap();
        assert!(a.err.is_none());
    }

    #[test]
    fn calls_answer_what_the_walker_asks() {
        use std::os::unix::fs::MetadataExt;
        let k = key("walker");
        let ask = |op| call(&k, op, Duration::from_secs(5)).unwrap();
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::fs::write(dir.path().join("sub/x.pid"), "1\n").unwrap();
        std::os::unix::fs::symlink("target", dir.path().join("sub/link")).unwrap();
        let chain = vec![dir.path().as_os_str().to_os_string(), "sub".into()];
        let a = ask(Op::OpenDir { from: None, chain }).ok().unwrap();
        let sub = a.fd.unwrap();
        let meta = std::fs::metadata(dir.path().join("sub")).unwrap();
        assert_eq!((a.dev, a.ino), (meta.dev(), meta.ino()));
        let mut names = Vec::new();
        loop {
            let a = ask(Op::ReadDir { dir: sub.as_fd() }).ok().unwrap();
            names.extend(
                a.entries
                    .into_iter()
                    .filter(|(n, _, _)| n != "." && n != "..")
                    .map(|(n, t, _)| (n, t)),
            );
            if a.eof {
                break;
            }
        }
        names.sort();
        assert_eq!(names, vec![("link".into(), 10), ("x.pid".into(), 8)]);
        for name in ["x.pid", "link"] {
            let name = name.into();
            let a = ask(Op::Touch {
                dir: sub.as_fd(),
                name,
            });
            assert!(a.err.is_none(), "{a:?}");
        }
        // A symlink on the way is not followed.
        let chain = vec![
            dir.path().as_os_str().to_os_string(),
            "sub".into(),
            "link".into(),
        ];
        let a = ask(Op::OpenDir { from: None, chain });
        assert!(a.err.is_some() && a.fd.is_none());
        let p = ask(Op::Probe {
            path: dir.path().join("sub/../sub"),
        });
        let real = std::fs::canonicalize(dir.path().join("sub")).unwrap();
        assert_eq!(p.real.as_deref(), Some(real.as_path()));
        let path = dir.path().join("sub/x.pid");
        assert!(ask(Op::TouchPath { path }).err.is_none());
        // The same calls are made in place.
        let before = tasks_started_here();
        let name = "x.pid".into();
        let a = inline(Op::StatAt {
            dir: sub.as_fd(),
            name,
        });
        assert!(a.err.is_none() && a.mode & 0o170000 == 0o100000, "{a:?}");
        let name = "missing".into();
        assert!(
            inline(Op::StatAt {
                dir: sub.as_fd(),
                name
            })
            .err
            .is_some()
        );
        assert_eq!(tasks_started_here(), before);
    }
}
