//! How far the wall clock can be trusted since this boot began ([`Clock`]).
//!
//! A file's ctime is written with the wall clock of the moment it changes; a process's start
//! time is read now as `btime` (the boot's wall time, as the clock says *now*: `CLOCK_REALTIME`
//! less the time since boot) plus its start ticks. If the clock stepped forward between the
//! two (NTP's `makestep` after boot, a board without a real-time clock setting its time, a VM
//! resumed from a snapshot), every file written before the step looks older than it is, next
//! to processes that started before it: "the process started after the lock was written" and
//! "written before this host booted" could then be said of a live owner's lock.
//!
//! The kernel keeps one wall-clock reading from early in the boot: the birth time of the
//! `devtmpfs` it makes before any program runs (`/dev`; in a container, the `/dev` its runtime
//! made just before the container's first process). That instant, read again now through
//! `btime`, tells how far the clock has moved forward since (at most the stamp's own time
//! since boot more: the start of the first program other than init, or of the container's
//! init). A time comparison proves something only beyond that margin; when nothing tells (no
//! birth time), it proves nothing. A step that went forward and back again since the stamp
//! is not seen; a step back never makes a lock look older than it is.

use serde::{Deserialize, Serialize};

use locksmith_sys::time::CLOCK_SLACK_MS;

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
            Some((stamp_ms, by_ms, what)) => {
                // The stamp was taken at most `by_ms` after boot: in today's clock that
                // instant is at most `boot_ms + by_ms`, so the clock moved forward by at most
                // this since.
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
                            locksmith_sys::time::fmt_age(step)
                        ),
                    }
                }
            }
            None => Clock {
                step_ms: None,
                how: "nothing tells whether the wall clock has been stepped since this boot began (no birth time of an early-boot file system)".into(),
            },
        }
    }
}

/// An early-boot wall-clock reading: its time (ms since the epoch, in the clock of that
/// moment), the most time since boot it can have been taken at (ms), and what it is.
#[cfg(target_os = "linux")]
fn stamp() -> Option<(i64, i64, String)> {
    let dev = std::fs::metadata("/dev").ok()?;
    let born = dev.created().ok()?;
    let born_ms =
        i64::try_from(born.duration_since(std::time::UNIX_EPOCH).ok()?.as_millis()).ok()?;
    let ticks = procfs::ticks_per_second().max(1) as i64;
    // devtmpfs answers `statfs` as tmpfs does: the mount table names it.
    let mounts = super::fs::parse_mountinfo(&super::fs::MountTable::recent_text());
    let dev_type = mounts
        .iter()
        .rev()
        .find(|m| m.point == std::path::Path::new("/dev"))
        .map(|m| m.fs_type.clone())
        .unwrap_or_default();
    if dev_type == "devtmpfs" {
        // Made by the kernel before init runs any program: before every process but PID 1
        // (and kernel threads) started.
        let first = first_program_start_ticks()?;
        Some((
            born_ms,
            first as i64 * 1000 / ticks,
            format!(
                "/dev (devtmpfs) was made at {} by the clock of then",
                locksmith_sys::time::fmt_ms(born_ms)
            ),
        ))
    } else if !super::started::is_host_pid_ns(super::host::pid_ns_of("self")) {
        // A container's /dev, made by its runtime before its first process started.
        let init = super::process::stat_of(1)?.starttime;
        Some((
            born_ms,
            init as i64 * 1000 / ticks,
            format!(
                "this container's /dev was made at {} by the clock of then",
                locksmith_sys::time::fmt_ms(born_ms)
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
    locksmith_sys::host::pids()
        .filter(|&p| p != 1)
        .filter_map(|p| {
            let stat = super::process::stat_of(p)?;
            (stat.flags & super::process::PF_KTHREAD == 0).then_some(stat.starttime)
        })
        .min()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_margin_grows_with_a_forward_step_and_is_none_when_unknown() {
        assert_eq!(Clock::steady().margin_ms(), Some(CLOCK_SLACK_MS));
        let stepped = Clock {
            step_ms: Some(3_600_000),
            how: String::new(),
        };
        assert_eq!(stepped.margin_ms(), Some(CLOCK_SLACK_MS + 3_600_000));
        let unknown = Clock {
            step_ms: None,
            how: String::new(),
        };
        assert_eq!(unknown.margin_ms(), None);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn reads_this_machine_without_failing() {
        let c = Clock::read(locksmith_sys::host::boot_time());
        assert!(!c.how.is_empty());
        if let Some(s) = c.step_ms {
            assert!(s >= 0);
        }
    }
}
