//! What a lock record says about its owner's machine and process: host name, boot id, PID
//! namespace and start time, each read from the kernel (uname(2), `/proc/sys/kernel/random/
//! boot_id`, `/proc/<pid>/ns/pid`, `/proc/self/stat`). Small reads of single files: the engine
//! never walks all of `/proc`.

/// What a read of a `/proc` or `/sys` file starts with: room for most of them at once.
const PROC_READ: usize = 16 << 10;

/// A `/proc` (or `/sys`) file, read whole. The kernel gives these files no size, so a read that
/// sizes its buffer by the file (`std::fs::read`, `File::read_to_end`: a `statx` and an `lseek`
/// first) grows it from a few bytes, one `read(2)` each time (some eight for a `status`): this
/// one starts with room for most of them, and reads on until the end.
pub fn read_proc(path: impl AsRef<std::path::Path>) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut f = std::fs::File::open(path)?;
    let mut buf = vec![0u8; PROC_READ];
    let mut len = 0;
    loop {
        if len == buf.len() {
            buf.resize(buf.len() * 2, 0);
        }
        match f.read(&mut buf[len..]) {
            Ok(0) => break,
            Ok(n) => len += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    buf.truncate(len);
    Ok(buf)
}

/// At most `max` bytes of a `/proc` file, and whether that is all of it: for what another user
/// controls (a command line, an environment, a mount table), which may be made as long as
/// they like, the bound keeps one read from costing more than a moment or more memory than
/// `max`.
pub fn read_proc_bounded(
    path: impl AsRef<std::path::Path>,
    max: usize,
) -> std::io::Result<(Vec<u8>, bool)> {
    use std::io::Read;
    let mut f = std::fs::File::open(path)?;
    let mut buf = vec![0u8; PROC_READ.min(max + 1)];
    let mut len = 0;
    loop {
        if len == buf.len() {
            if buf.len() > max {
                break;
            }
            buf.resize((buf.len() * 2).min(max + 1), 0);
        }
        match f.read(&mut buf[len..]) {
            Ok(0) => break,
            Ok(n) => len += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    let whole = len <= max;
    buf.truncate(len.min(max));
    Ok((buf, whole))
}

/// [`read_proc`] as text (a byte that is not UTF-8 is replaced).
pub fn read_proc_text(path: impl AsRef<std::path::Path>) -> std::io::Result<String> {
    read_proc(path).map(|b| match String::from_utf8(b) {
        Ok(s) => s,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    })
}

/// The host name (uname(2) `nodename`).
pub fn hostname() -> String {
    rustix::system::uname()
        .nodename()
        .to_string_lossy()
        .into_owned()
}

/// This kernel's boot id: a new random UUID at every boot.
pub fn boot_id() -> Option<String> {
    let s = read_proc_text("/proc/sys/kernel/random/boot_id").ok()?;
    let s = s.trim();
    (!s.is_empty()).then(|| s.to_string())
}

/// Boot time in seconds since the epoch.
pub fn boot_time() -> Option<i64> {
    let stat = read_proc_text("/proc/stat").ok()?;
    stat.lines()
        .find_map(|l| l.strip_prefix("btime "))
        .and_then(|v| v.trim().parse().ok())
}

/// The inode of `/proc/<who>/ns/pid` (`who` is a PID or `self`): which PID namespace the
/// process runs in.
pub fn pid_ns_of(who: &str) -> Option<u64> {
    let target = std::fs::read_link(format!("/proc/{who}/ns/pid")).ok()?;
    parse_ns_link(&target.to_string_lossy())
}

/// `pid:[4026531836]` → 4026531836.
pub fn parse_ns_link(s: &str) -> Option<u64> {
    s.split_once(":[")?.1.strip_suffix(']')?.parse().ok()
}

/// Our own start time in clock ticks since boot (field 22 of `/proc/self/stat`).
pub fn own_start_ticks() -> Option<u64> {
    let stat = read_proc("/proc/self/stat").ok()?;
    start_ticks_of_stat(&stat)
}

/// The start time (field 22) of a `/proc/<pid>/stat` line.
pub fn start_ticks_of_stat(stat: &[u8]) -> Option<u64> {
    stat_fields(stat)?.nth(19)?.parse().ok()
}

/// What a `/proc/<pid>/stat` line says of when a process started and what it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StatLine {
    /// Its start time in clock ticks since boot (field 22).
    pub start_ticks: u64,
    /// A kernel thread (`PF_KTHREAD` in the flags, field 9): no program, no user space.
    pub kernel_thread: bool,
}

/// `PF_KTHREAD` in `include/linux/sched.h`: the task is a kernel thread.
const PF_KTHREAD: u64 = 0x0020_0000;

/// Parses a `/proc/<pid>/stat` line ([`StatLine`]).
pub fn parse_stat(stat: &[u8]) -> Option<StatLine> {
    let mut f = stat_fields(stat)?;
    let flags: u64 = f.nth(6)?.parse().ok()?;
    let start_ticks = f.nth(12)?.parse().ok()?;
    Some(StatLine {
        start_ticks,
        kernel_thread: flags & PF_KTHREAD != 0,
    })
}

/// `/proc/<pid>/stat` of a process, parsed ([`StatLine`]).
pub fn stat_of(pid: i32) -> Option<StatLine> {
    parse_stat(&read_proc(format!("/proc/{pid}/stat")).ok()?)
}

/// Clock ticks per second (`sysconf(_SC_CLK_TCK)`): the unit of start times.
pub fn ticks_per_second() -> u64 {
    #[cfg(target_os = "linux")]
    {
        rustix::param::clock_ticks_per_second().max(1)
    }
    #[cfg(not(target_os = "linux"))]
    {
        100
    }
}

/// Milliseconds since boot (`/proc/uptime`, in hundredths of a second).
pub fn uptime_ms() -> Option<i64> {
    parse_uptime_ms(&read_proc_text("/proc/uptime").ok()?)
}

fn parse_uptime_ms(text: &str) -> Option<i64> {
    let first = text.split_whitespace().next()?;
    let (secs, frac) = first.split_once('.').unwrap_or((first, "0"));
    let secs: i64 = secs.parse().ok()?;
    let frac: String = frac.chars().chain("000".chars()).take(3).collect();
    Some(secs * 1000 + frac.parse::<i64>().ok()?)
}

/// The wall-clock time (ms since the epoch, by today's clock) at which a process started
/// `start_ticks` clock ticks after boot: the wall clock now, less the time since it started
/// (the uptime less its start ticks), exact to a tick or two.
pub fn start_ms(start_ticks: u64) -> Option<i64> {
    let uptime_ms = uptime_ms()?;
    let now_ms = jiff::Timestamp::now().as_millisecond();
    let after_boot_ms = (start_ticks as i128 * 1000 / ticks_per_second() as i128) as i64;
    Some(now_ms - (uptime_ms - after_boot_ms))
}

/// Inode of the initial PID namespace (`PROC_PID_INIT_INO` in the kernel): the host's.
pub const HOST_PID_NS: u64 = 0xEFFF_FFFC;

/// Whether `pid_ns` (the inode of `/proc/self/ns/pid`) is the host's PID namespace. An
/// unreadable namespace (`None`: not Linux, or no `/proc`) counts as the host's.
pub fn is_host_pid_ns(pid_ns: Option<u64>) -> bool {
    pid_ns.is_none_or(|ns| ns == HOST_PID_NS)
}

/// The fields of a `/proc/<pid>/stat` line from field 3 (the state) on. The command name
/// (field 2) is in parentheses and may contain spaces and parentheses itself: fields are
/// counted after the last `)`.
fn stat_fields(stat: &[u8]) -> Option<std::str::SplitAsciiWhitespace<'_>> {
    let after = stat.iter().rposition(|b| *b == b')')?;
    Some(
        std::str::from_utf8(&stat[after + 1..])
            .ok()?
            .split_ascii_whitespace(),
    )
}

/// What this kernel says about a PID, in this process's PID namespace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Process {
    /// No such process (kill(2) with signal 0: `ESRCH`).
    Absent,
    /// A zombie: it has exited and waits for its parent to reap it.
    Exited,
    /// Running, started at `start_ticks` clock ticks after boot.
    Running { start_ticks: u64 },
    /// It exists (`EPERM`), but `/proc` does not show it to us.
    Hidden,
}

/// Probes `pid`: kill(2) with signal 0, then `/proc/<pid>/stat` for its state and start time.
pub fn process(pid: i32) -> Process {
    if pid <= 0 {
        return Process::Absent;
    }
    let Some(p) = rustix::process::Pid::from_raw(pid) else {
        return Process::Absent;
    };
    if rustix::process::test_kill_process(p) == Err(rustix::io::Errno::SRCH) {
        return Process::Absent;
    }
    let stat = read_proc(format!("/proc/{pid}/stat")).ok();
    let fields = stat.as_deref().and_then(|s| {
        let mut f = stat_fields(s)?;
        let state = f.next()?.chars().next()?;
        let threads: i64 = f.nth(16)?.parse().ok()?;
        let start_ticks: u64 = f.nth(1)?.parse().ok()?;
        Some((state, threads, start_ticks))
    });
    match fields {
        Some((state, threads, _)) if matches!(state, 'Z' | 'X') && threads <= 1 => Process::Exited,
        Some((_, _, start_ticks)) => Process::Running { start_ticks },
        // Raced with exit, or /proc hides it: ask the kernel once more.
        None if rustix::process::test_kill_process(p) == Err(rustix::io::Errno::SRCH) => {
            Process::Absent
        }
        None => Process::Hidden,
    }
}

/// The PIDs `/proc` lists now (none where it cannot be read).
pub fn pids() -> impl Iterator<Item = i32> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
}

/// The command name of a process (`/proc/<pid>/comm`).
pub fn comm(pid: i32) -> Option<String> {
    let s = read_proc_text(format!("/proc/{pid}/comm")).ok()?;
    Some(s.trim_end_matches('\n').to_string())
}

/// The arguments of a process (`/proc/<pid>/cmdline`; a byte that is not UTF-8 replaced, empty
/// arguments left out): empty when it cannot be read, as a kernel thread's or a zombie's.
pub fn cmdline(pid: i32) -> Vec<String> {
    cmdline_bounded(pid, CMDLINE_MAX).0
}

/// The most of a process's command line read ([`cmdline_bounded`]): any process may make
/// its own as long as the kernel lets it (several MB), and what a rule looks for (a program's
/// options and the paths they name) is at its start.
pub const CMDLINE_MAX: usize = 32 << 10;

/// A process's command line, at most `max` bytes of it, and whether that was all of it (the
/// last argument of a cut one is cut too).
pub fn cmdline_bounded(pid: i32, max: usize) -> (Vec<String>, bool) {
    match read_proc_bounded(format!("/proc/{pid}/cmdline"), max) {
        Ok((b, whole)) => (
            b.split(|&c| c == 0)
                .filter(|a| !a.is_empty())
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect(),
            whole,
        ),
        Err(_) => (Vec::new(), true),
    }
}

/// The processes of this host that have the file `(dev, ino)` open for writing, from their
/// descriptors (`/proc/<pid>/fd`, `/proc/<pid>/fdinfo`). Read-only openers (a scanner, an
/// acquirer reading the record) are no evidence of an owner. Processes we may not inspect
/// are not seen.
pub fn writers(dev: u64, ino: u64) -> Vec<i32> {
    pids()
        .filter(|pid| open_for_writing(*pid, dev, ino))
        .collect()
}

/// Whether process `pid` has the file `(dev, ino)` open for writing.
pub fn open_for_writing(pid: i32, dev: u64, ino: u64) -> bool {
    use std::os::unix::fs::MetadataExt;
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return false;
    };
    for fd in fds.flatten() {
        let Ok(meta) = std::fs::metadata(fd.path()) else {
            continue;
        };
        if (meta.dev(), meta.ino()) != (dev, ino) {
            continue;
        }
        let info = std::fs::read_to_string(format!(
            "/proc/{pid}/fdinfo/{}",
            fd.file_name().to_string_lossy()
        ))
        .unwrap_or_default();
        let flags = info
            .lines()
            .find_map(|l| l.strip_prefix("flags:"))
            .and_then(|v| u32::from_str_radix(v.trim(), 8).ok());
        if flags.is_some_and(|f| f & libc::O_ACCMODE as u32 != libc::O_RDONLY as u32) {
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_files_are_read_whole() {
        // Larger than the first read: read on to the end.
        let maps = read_proc("/proc/self/maps").unwrap();
        assert!(maps.ends_with(b"\n"));
        let mut env = String::new();
        for i in 0..20_000 {
            env.push_str(&format!("{i} "));
        }
        let out = std::process::Command::new("cat")
            .arg("/proc/self/environ")
            .env("LOCKSMITH_LONG", &env)
            .output()
            .unwrap();
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .env("LOCKSMITH_LONG", &env)
            .spawn()
            .unwrap();
        let pid = child.id();
        let read = (0..200)
            .map(|_| {
                std::thread::sleep(std::time::Duration::from_millis(10));
                read_proc(format!("/proc/{pid}/environ")).unwrap()
            })
            .find(|e| e.len() > PROC_READ)
            .expect("the child's environment, after its exec");
        child.kill().unwrap();
        child.wait().unwrap();
        assert_eq!(read, out.stdout);
        assert!(
            read_proc_text("/proc/self/status")
                .unwrap()
                .contains("\nPid:")
        );
        assert!(read_proc("/proc/self/no-such-file").is_err());
    }

    #[test]
    fn parses_namespace_links() {
        assert_eq!(parse_ns_link("pid:[4026531836]"), Some(4026531836));
        assert_eq!(parse_ns_link("pid:4026531836"), None);
    }

    #[test]
    fn reads_the_start_time_after_the_command() {
        let line =
            b"42 (a) b (c)) S 1 42 42 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 123456 1000 10";
        assert_eq!(start_ticks_of_stat(line), Some(123456));
        assert_eq!(start_ticks_of_stat(b"42 (x) S 1"), None);
        assert_eq!(start_ticks_of_stat(b"garbage"), None);
        let kthread = b"2 (kthreadd) S 0 0 0 0 -1 2129984 0 0 0 0 0 0 0 0 20 0 1 0 7 0 0";
        assert_eq!(
            parse_stat(kthread),
            Some(StatLine {
                start_ticks: 7,
                kernel_thread: true
            })
        );
        assert_eq!(
            parse_stat(line),
            Some(StatLine {
                start_ticks: 123456,
                kernel_thread: false
            })
        );
        assert_eq!(parse_stat(b"42 (x) S 1"), None);
    }

    #[test]
    fn parses_the_uptime() {
        assert_eq!(parse_uptime_ms("12345.67 54321.00\n"), Some(12_345_670));
        assert_eq!(parse_uptime_ms("7 1"), Some(7000));
        assert_eq!(parse_uptime_ms(""), None);
        assert_eq!(parse_uptime_ms("x.5"), None);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn this_process() {
        assert!(!hostname().is_empty());
        assert_eq!(boot_id().as_deref().map(str::len), Some(36));
        assert!(pid_ns_of("self").is_some());
        let ours = own_start_ticks().expect("start time");
        assert_eq!(
            process(std::process::id() as i32),
            Process::Running { start_ticks: ours }
        );
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id() as i32;
        // Not reaped yet: a zombie once it has exited.
        while process(pid) != Process::Exited {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        child.wait().unwrap();
        assert_eq!(process(pid), Process::Absent);
        assert_eq!(process(0), Process::Absent);
        assert_eq!(process(-1), Process::Absent);
        // Our own start, in wall-clock time: before now, after boot (by today's clock).
        let started = start_ms(ours).expect("uptime");
        let now = jiff::Timestamp::now().as_millisecond();
        assert!(started <= now, "{started} {now}");
        assert!(started >= boot_time().unwrap() * 1000 - 1000, "{started}");
        assert!(!stat_of(std::process::id() as i32).unwrap().kernel_thread);
        assert_eq!(
            stat_of(std::process::id() as i32).unwrap().start_ticks,
            ours
        );
    }
}
