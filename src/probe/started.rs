//! When a process started, to the clock tick, in wall-clock time; and whether we run in the
//! host's PID namespace.
//!
//! [`super::ProcFacts::start_ms`] adds the start ticks to the boot time of `/proc/stat`, which
//! the kernel rounds to the second, so it may be a second off (the judge allows a clock slack
//! for that). The time since a process started is known exactly: the uptime
//! (`/proc/uptime`, `CLOCK_BOOTTIME`) less its start ticks. Subtracted from the wall clock
//! now, that is its start to within a tick or two, good enough to tell a file written before a
//! process started from one written after (as long as the wall clock was not stepped since).

/// Inode of the initial PID namespace (`PROC_PID_INIT_INO` in the kernel): the host's.
pub const HOST_PID_NS: u64 = 0xEFFF_FFFC;

/// Whether `pid_ns` (the inode of `/proc/self/ns/pid`) is the host's PID namespace. An
/// unreadable namespace (`None`: not Linux, or no `/proc`) counts as the host's, as it does
/// for the judge.
pub fn is_host_pid_ns(pid_ns: Option<u64>) -> bool {
    pid_ns.is_none_or(|ns| ns == HOST_PID_NS)
}

/// The wall-clock time (ms since the epoch) at which a process started `start_ticks` clock
/// ticks after boot, measured against the uptime now.
pub fn start_ms(start_ticks: u64, ticks_per_sec: u64) -> Option<i64> {
    let uptime_ms = uptime_ms()?;
    let now_ms = jiff::Timestamp::now().as_millisecond();
    let started_after_boot_ms = (start_ticks as i128 * 1000 / ticks_per_sec.max(1) as i128) as i64;
    Some(now_ms - (uptime_ms - started_after_boot_ms))
}

/// Milliseconds since boot (`/proc/uptime`, in hundredths of a second).
fn uptime_ms() -> Option<i64> {
    let text = locksmith_sys::host::read_proc_text("/proc/uptime").ok()?;
    parse_uptime_ms(&text)
}

fn parse_uptime_ms(text: &str) -> Option<i64> {
    let first = text.split_whitespace().next()?;
    let (secs, frac) = first.split_once('.').unwrap_or((first, "0"));
    let secs: i64 = secs.parse().ok()?;
    let frac: String = frac.chars().chain("000".chars()).take(3).collect();
    Some(secs * 1000 + frac.parse::<i64>().ok()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_uptime() {
        assert_eq!(parse_uptime_ms("12345.67 54321.00\n"), Some(12_345_670));
        assert_eq!(parse_uptime_ms("7 1"), Some(7000));
        assert_eq!(parse_uptime_ms(""), None);
        assert_eq!(parse_uptime_ms("x.5"), None);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_child_started_between_two_clock_readings() {
        let before = jiff::Timestamp::now().as_millisecond();
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        let after = jiff::Timestamp::now().as_millisecond();
        let host = super::super::HostFacts::probe();
        let facts = super::super::process::probe(child.id() as i32, &host);
        let ticks = facts.facts().unwrap().start_ticks;
        let started = start_ms(ticks, host.ticks_per_sec).unwrap();
        child.kill().unwrap();
        child.wait().unwrap();
        // Within two ticks and the clock reading's own rounding.
        let tick = 1000 / host.ticks_per_sec as i64;
        assert!(
            started >= before - 3 * tick && started <= after + 3 * tick,
            "{before} <= {started} <= {after}"
        );
        assert!(is_host_pid_ns(None));
        assert!(is_host_pid_ns(Some(HOST_PID_NS)));
        assert!(!is_host_pid_ns(Some(4_026_532_999)));
    }
}
