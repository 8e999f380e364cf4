//! How far the wall clock can be trusted since this boot began ([`Clock`]): the margin every
//! time rule ([`crate::time`]) must clear before a comparison of two wall-clock instants proves
//! anything.
//!
//! A file's ctime is written with the wall clock of the moment it changes; a process's start
//! time is read now as `btime` (the boot's wall time, as the clock says *now*: `CLOCK_REALTIME`
//! less the time since boot) plus its start ticks. If the clock stepped forward between the
//! two (NTP's `makestep` after boot, a board without a real-time clock setting its time, a VM
//! resumed from a snapshot), every file written before the step looks older than it is, next
//! to processes that started before it: "the process started after the lock was written",
//! "written before this host booted" and "not refreshed for longer than its window" could then
//! be said of a live owner's lock.
//!
//! The kernel keeps one wall-clock reading from early in the boot: the birth time of the
//! `devtmpfs` it makes before any program runs (`/dev`; in a container, the `/dev` its runtime
//! made just before the container's first process). That instant, read again now through
//! `btime`, tells how far the clock has moved forward since (at most the stamp's own time
//! since boot more: the start of the first program other than init, or of the container's
//! init). A time comparison proves something only beyond that margin; when nothing tells (no
//! birth time), it proves nothing. A step that went forward and back again since the stamp
//! is not seen; a step back never makes a lock look older than it is.
//!
//! Reading it walks the process table once (the first program's start): a judge reads it only
//! when a time comparison is about to prove something.

use serde::{Deserialize, Serialize};

use crate::fmt::{fmt_age, fmt_ms};

/// Tolerance when comparing a process start time or a boot time with a file time: `btime` has
/// a resolution of one second, so closer than this proves nothing.
pub const CLOCK_SLACK_MS: i64 = 2_000;

/// See the module docs.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Clock {
    /// How much the wall clock may have stepped forward since early in this boot, in ms (0
    /// when it has not, beyond the stamp's own margin). `None`: not known, so no comparison
    /// of a file time with a process start or the boot time proves anything.
    pub step_ms: Option<i64>,
    /// How that was told, for the evidence.
    pub how: String,
}

impl Clock {
    /// A clock known not to have stepped (tests, and hand-made evidence).
    pub fn steady() -> Self {
        Clock {
            step_ms: Some(0),
            how: "the wall clock has not been stepped since this boot began".into(),
        }
    }

    /// A clock that may have stepped forward by up to `step_ms` since this boot began (`None`:
    /// nothing tells), said as `how` (tests, and hand-made evidence).
    pub fn stepped(step_ms: Option<i64>, how: impl Into<String>) -> Self {
        Clock {
            step_ms,
            how: how.into(),
        }
    }

    /// What comparing a file time with a process start or the boot time must clear: the
    /// slack of `btime`'s resolution, and any forward step. `None`: nothing proves.
    pub fn margin_ms(&self) -> Option<i64> {
        self.step_ms.map(|s| CLOCK_SLACK_MS + s.max(0))
    }

    /// Reads it now (`boot_time`: `btime`, seconds since the epoch).
    pub fn read(boot_time: Option<i64>) -> Self {
        let Some(boot_ms) = boot_time.map(|b| b * 1000) else {
            return Clock {
                step_ms: None,
                how: "this host's boot time cannot be read".into(),
            };
        };
        match stamp() {
            Some((stamp_ms, by_ms, what)) => Clock::from_stamp(boot_ms, stamp_ms, by_ms, &what),
            None => Clock {
                step_ms: None,
                how: "nothing tells whether the wall clock has been stepped since this boot began (no birth time of an early-boot file system)".into(),
            },
        }
    }

    /// The clock told by an early-boot stamp: made at `stamp_ms` by the clock of then, at most
    /// `by_ms` after a boot that today's clock puts at `boot_ms`.
    fn from_stamp(boot_ms: i64, stamp_ms: i64, by_ms: i64, what: &str) -> Self {
        // In today's clock that instant is at most `boot_ms + by_ms`, so the clock moved
        // forward by at most this since.
        let step = boot_ms + by_ms - stamp_ms;
        if step <= 0 {
            Clock {
                step_ms: Some(0),
                how: format!(
                    "the wall clock has not stepped forward since this boot began ({what})"
                ),
            }
        } else {
            Clock {
                step_ms: Some(step),
                how: format!(
                    "the wall clock may have stepped forward by up to {} since this boot began ({what})",
                    fmt_age(step)
                ),
            }
        }
    }
}

/// An early-boot wall-clock reading: its time (ms since the epoch, in the clock of that
/// moment), the most time since boot it can have been taken at (ms), and what it is.
#[cfg(target_os = "linux")]
fn stamp() -> Option<(i64, i64, String)> {
    use crate::host;
    let born_ms = crate::fs::birth_ms(std::path::Path::new("/dev"), true)?;
    let ticks = host::ticks_per_second() as i64;
    if crate::fs::mount_type_at(std::path::Path::new("/dev")).as_deref() == Some("devtmpfs") {
        // devtmpfs answers `statfs` as tmpfs does: the mount table names it. Made by the
        // kernel before init runs any program: before every process but PID 1 (and kernel
        // threads) started.
        let first = first_program_start_ticks()?;
        Some((
            born_ms,
            first as i64 * 1000 / ticks,
            format!(
                "/dev (devtmpfs) was made at {} by the clock of then",
                fmt_ms(born_ms)
            ),
        ))
    } else if !host::is_host_pid_ns(host::pid_ns_of("self")) {
        // A container's /dev, made by its runtime before its first process started.
        let init = host::stat_of(1)?.start_ticks;
        Some((
            born_ms,
            init as i64 * 1000 / ticks,
            format!(
                "this container's /dev was made at {} by the clock of then",
                fmt_ms(born_ms)
            ),
        ))
    } else {
        None
    }
}

#[cfg(not(target_os = "linux"))]
fn stamp() -> Option<(i64, i64, String)> {
    None
}

/// The start (ticks since boot) of the first program now running other than PID 1: no
/// later than that, every early-boot file system was made.
#[cfg(target_os = "linux")]
fn first_program_start_ticks() -> Option<u64> {
    crate::host::pids()
        .filter(|&p| p != 1)
        .filter_map(|p| {
            let stat = crate::host::stat_of(p)?;
            (!stat.kernel_thread).then_some(stat.start_ticks)
        })
        .min()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_margin_grows_with_a_forward_step_and_is_none_when_unknown() {
        assert_eq!(Clock::steady().margin_ms(), Some(CLOCK_SLACK_MS));
        let stepped = Clock::stepped(Some(3_600_000), "");
        assert_eq!(stepped.margin_ms(), Some(CLOCK_SLACK_MS + 3_600_000));
        assert_eq!(
            Clock::stepped(Some(-5), "").margin_ms(),
            Some(CLOCK_SLACK_MS)
        );
        assert_eq!(Clock::stepped(None, "").margin_ms(), None);
    }

    #[test]
    fn an_early_stamp_behind_today_s_clock_is_a_forward_step() {
        const BOOT: i64 = 1_800_000_000_000;
        // /dev made 5 s after boot (at most that: the first program started then), by a
        // clock that agrees with today's: no step.
        let c = Clock::from_stamp(BOOT, BOOT + 5_000, 5_000, "/dev");
        assert_eq!(c.step_ms, Some(0), "{c:?}");
        // Made 3 s after boot: it may have been made at 5 s, by a clock 2 s behind.
        let c = Clock::from_stamp(BOOT, BOOT + 3_000, 5_000, "/dev");
        assert_eq!(c.step_ms, Some(2_000), "{c:?}");
        // Made by a clock 35 hours behind today's: a step of up to 35 h (and the 5 s).
        let c = Clock::from_stamp(BOOT, BOOT - 35 * 3_600_000, 5_000, "/dev");
        assert_eq!(c.step_ms, Some(35 * 3_600_000 + 5_000), "{c:?}");
        assert!(c.how.contains("up to 1 d 11 h"), "{}", c.how);
        assert!(c.how.ends_with("(/dev)"), "{}", c.how);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn reads_this_machine_without_failing() {
        let c = Clock::read(crate::host::boot_time());
        assert!(!c.how.is_empty());
        if let Some(s) = c.step_ms {
            assert!(s >= 0);
        }
        assert_eq!(Clock::read(None).step_ms, None);
    }
}
