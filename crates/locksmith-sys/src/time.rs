//! Times as evidence lines show them, and the time rules: what comparing two wall-clock
//! instants proves, decided once for both judges (the scanner's and the engine's own), as pure
//! functions of numbers (a file's written-by bound, a process start, the boot time, a
//! heartbeat window, now) and the [`Clock`] they were read with.
//!
//! What a file's times prove: the latest a file can have been written is its ctime, which
//! nobody can set back (its mtime can be set to anything: `touch -d`, `cp -p`, `tar x`, image
//! layers), so the callers hand these rules a ctime bound, never an mtime. A comparison proves
//! something only beyond the clock's margin ([`Clock::margin_ms`]: `btime`'s resolution and
//! how far the wall clock may have stepped forward since this boot began); where the clock
//! cannot be trusted it proves nothing, and the rule says why.

pub use crate::clock::CLOCK_SLACK_MS;
use crate::clock::Clock;
pub use crate::fmt::{fmt_age, fmt_ms};
use crate::fs::FsInfo;

/// How far a file server's clock may be from ours before a heartbeat on it proves anything.
pub const NETWORK_SKEW_MS: i64 = 60_000;

/// A window in seconds as milliseconds, for comparing with ages: saturates instead of
/// overflowing.
pub fn window_ms(secs: u64) -> i64 {
    i64::try_from(secs)
        .ok()
        .and_then(|s| s.checked_mul(1000))
        .unwrap_or(i64::MAX)
}

/// The latest a lock can have been written: its writer's own time (`record_ms`, believed when
/// it is not later than the file's ctime), else the ctime, which nobody can set back.
pub fn latest_write_ms(record_ms: Option<i64>, ctime_ms: i64) -> i64 {
    record_ms.map_or(ctime_ms, |r| r.min(ctime_ms))
}

/// "written at T", or, when that is the file's ctime and its mtime says otherwise (by more
/// than a second), "last changed at T (ctime; its mtime says M, ...)".
pub fn when_written(written_ms: i64, mtime_ms: i64, ctime_ms: i64) -> String {
    if (mtime_ms - written_ms).abs() > 1000 && written_ms == ctime_ms {
        format!(
            "last changed at {} (ctime; its mtime says {}, which anyone who may write it can set)",
            fmt_ms(written_ms),
            fmt_ms(mtime_ms)
        )
    } else {
        format!("written at {}", fmt_ms(written_ms))
    }
}

/// What a time rule found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Timed {
    /// Proven, beyond the clock's margin (`margin_ms`): the evidence line.
    Proven {
        /// What was proven, as an evidence line.
        line: String,
        /// The margin it cleared (ms), for the proof's facts.
        margin_ms: i64,
    },
    /// It looks so by the clock, but the clock may have stepped that far: the line says so,
    /// and that it proves nothing.
    Unproven(String),
    /// It does not look so at all.
    No,
}

/// `earlier-boot` by time: whether a lock written at `written_ms` (the latest it can have
/// been, by the clock of then: a ctime bound) was written before this host booted (at
/// `boot_time`, seconds since the epoch), beyond the clock's margin. Never on a file system
/// that does not survive a reboot (tmpfs, ramfs: `/run`, often `/tmp`; a file there is from
/// this boot whatever its times say), nor on one another machine writes to (its server's
/// clock sets the times there). `clock` is read only when the comparison comes to it.
pub fn written_before_boot(
    written_ms: i64,
    boot_time: Option<i64>,
    fs: Option<&FsInfo>,
    clock: impl FnOnce() -> Clock,
) -> Timed {
    if fs.is_some_and(|f| f.kind.is_volatile() || f.network) {
        return Timed::No;
    }
    let Some(boot_ms) = boot_time.map(|b| b * 1000) else {
        return Timed::No;
    };
    if written_ms + CLOCK_SLACK_MS >= boot_ms {
        return Timed::No;
    }
    let clock = clock();
    match clock.margin_ms() {
        Some(margin_ms) if written_ms + margin_ms < boot_ms => Timed::Proven {
            line: format!(
                "written at {}, before this host booted at {}",
                fmt_ms(written_ms),
                fmt_ms(boot_ms)
            ),
            margin_ms,
        },
        _ => Timed::Unproven(format!(
            "written at {}, before this host booted at {} by the clock, but {}: that proves nothing",
            fmt_ms(written_ms),
            fmt_ms(boot_ms),
            clock.how
        )),
    }
}

/// `pid-reused` by time: whether process `pid` (`comm`), which started at `start_ms`, started
/// after the lock was written (at `written_ms`, a ctime bound, said as `written`: see
/// [`when_written`]), beyond the clock's margin. `clock` is read only when the comparison
/// comes to it.
pub fn started_after_written(
    pid: i32,
    comm: &str,
    start_ms: i64,
    written_ms: i64,
    written: &str,
    clock: impl FnOnce() -> Clock,
) -> Timed {
    if start_ms <= written_ms + CLOCK_SLACK_MS {
        return Timed::No;
    }
    // Started after the lock was written, by the clock: proof only if the clock cannot have
    // stepped forward by that much in between.
    let clock = clock();
    match clock.margin_ms() {
        Some(margin_ms) if start_ms > written_ms + margin_ms => Timed::Proven {
            line: format!(
                "PID {pid} was reused: process {pid} ({comm}) started at {}, after the lock was {written}",
                fmt_ms(start_ms)
            ),
            margin_ms,
        },
        _ => Timed::Unproven(format!(
            "it started at {}, after the lock was {written}, but {}: that it started later proves nothing",
            fmt_ms(start_ms),
            clock.how
        )),
    }
}

/// A writer's promise to refresh a lock while it holds it (a heartbeat), as the time rule
/// sees it.
#[derive(Debug, Clone, Copy)]
pub struct Refresh<'a> {
    /// The last refresh: the later of what the writer says and the file's last change (a
    /// refresh moves both; nobody can move the ctime back), ms since the epoch.
    pub last_ms: i64,
    /// How long the writer may go without refreshing while it holds the lock (ms).
    pub window_ms: i64,
    /// Refreshed more recently than this (ms), the writer's promise proves it held, where
    /// this host's clock set the time.
    pub fresh_ms: Option<i64>,
    /// The file system the lock is on: where a server's clock sets the times, they may be
    /// off by [`NETWORK_SKEW_MS`].
    pub fs: &'a FsInfo,
    /// The writer's promise, in words (`its owner refreshes a heartbeat while it holds the
    /// lock (last T)`).
    pub promise: &'a str,
}

/// A lock's last refresh: the later of what its writer says (`said_ms`: a heartbeat it
/// records, or the file's mtime) and the file's last change by the kernel's account
/// (`ctime_ms`: a refresh moves both; nobody can move the ctime back), unless what it says is
/// ahead of the clock at `now_ms` (`touch -d`, a record's field set ahead) while the ctime is
/// not: the ctime is taken then, with the line that says so.
pub fn last_refresh(
    said_ms: i64,
    ctime_ms: i64,
    now_ms: i64,
    fs: &FsInfo,
) -> (i64, Option<String>) {
    let tolerance = NETWORK_SKEW_MS
        + if fs.remote_clock() {
            NETWORK_SKEW_MS
        } else {
            0
        };
    let last = said_ms.max(ctime_ms);
    if last - now_ms > tolerance && ctime_ms - now_ms <= tolerance {
        return (
            ctime_ms,
            Some(format!(
                "its mtime or record says {}, ahead of the clock: its last change by the kernel's account (ctime) is taken",
                fmt_ms(said_ms)
            )),
        );
    }
    (last, None)
}

/// What a lock's refreshes say now, before anything else on this host is asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refreshed {
    /// Refreshed recently enough that the writer's promise proves it held (`live`).
    Fresh(String),
    /// It proves nothing either way (`unknown`): why.
    Unproven(String),
    /// A refresh recent enough to prove it held is not excluded: the clock cannot date the
    /// last one (it may have stepped since, or it says the refresh is ahead of it). Nothing
    /// may then prove it stale: why.
    MayBeFresh(String),
    /// Not refreshed for longer than its window (and any server clock's skew) by the clock,
    /// `age_ms`: expired, if nothing on this host holds the lock and the clock can be trusted
    /// that far ([`Refresh::expired`]).
    Overdue {
        /// How long since the last refresh, by the clock (ms).
        age_ms: i64,
    },
}

/// A heartbeat proven expired: the evidence lines and the facts of the proof.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expired {
    /// What was proven: not refreshed for longer than the window, under the writer's promise.
    pub line: String,
    /// Whose clock set the times, and what was allowed for it.
    pub clock_line: String,
    /// How long since the last refresh (ms).
    pub age_ms: i64,
    /// The window, in seconds, as the proof states it.
    pub window_s: i64,
    /// How far the clock may have stepped forward, which the age cleared on top of the
    /// window (ms).
    pub step_ms: i64,
}

impl Refresh<'_> {
    /// The skew allowed for a server's clock (0 where this host's clock sets the times).
    fn skew_ms(&self) -> i64 {
        if self.fs.remote_clock() {
            NETWORK_SKEW_MS
        } else {
            0
        }
    }

    /// What the refreshes say at `now_ms` (`clock` is read only when a fresh refresh, which
    /// would prove it held, must be told from an older one).
    pub fn at(&self, now_ms: i64, clock: impl FnOnce() -> Clock) -> Refreshed {
        let age = now_ms - self.last_ms;
        let skew = self.skew_ms();
        let window_s = self.window_ms / 1000;
        // A server's clock sets a network file's times: a fresh one proves nothing there.
        let fresh = self.fresh_ms.filter(|_| !self.fs.remote_clock());
        if age < -(NETWORK_SKEW_MS + skew) {
            let line = format!(
                "its last refresh is {} in the future: the clocks disagree, so the heartbeat proves nothing",
                fmt_age(-age)
            );
            return match fresh {
                Some(_) => Refreshed::MayBeFresh(line),
                None => Refreshed::Unproven(line),
            };
        }
        if let Some(fresh) = fresh {
            if age <= fresh {
                return Refreshed::Fresh(format!(
                    "refreshed {} ago ({})",
                    fmt_age(age.max(0)),
                    self.promise
                ));
            }
            // A clock stepped forward since the refresh makes it look older than it is.
            let clock = clock();
            if !matches!(clock.step_ms, Some(step) if age - step.max(0) > fresh) {
                return Refreshed::MayBeFresh(format!(
                    "refreshed {} ago by the clock, but {}: it may have been refreshed within {} ({}), which would prove it held",
                    fmt_age(age),
                    clock.how,
                    fmt_age(fresh),
                    self.promise
                ));
            }
        }
        if age <= self.window_ms {
            return Refreshed::Unproven(format!(
                "refreshed {} ago, within its writer's {window_s} s window ({}): its holder may still be there",
                fmt_age(age.max(0)),
                self.promise
            ));
        }
        if age <= self.window_ms.saturating_add(skew) {
            return Refreshed::Unproven(format!(
                "not refreshed for {}, past its writer's {window_s} s window, but on a network file system ({}) whose server clock may differ from ours by up to {} s",
                fmt_age(age),
                self.fs.kind,
                NETWORK_SKEW_MS / 1000
            ));
        }
        Refreshed::Overdue { age_ms: age }
    }

    /// `heartbeat-expired`: whether a lock [`Refreshed::Overdue`] by `age_ms` (and that
    /// nothing on this host holds: the caller asked) is proven expired, beyond any forward
    /// step of the clock since this boot began (a step since the last refresh makes it look
    /// older than it is). `Err`: the line saying why it proves nothing. `clock` is read only
    /// here.
    pub fn expired(&self, age_ms: i64, clock: impl FnOnce() -> Clock) -> Result<Expired, String> {
        let window_s = self.window_ms / 1000;
        let clock = clock();
        let step_ms = match clock.step_ms {
            Some(s) if age_ms - s.max(0) > self.window_ms.saturating_add(self.skew_ms()) => {
                s.max(0)
            }
            _ => {
                return Err(format!(
                    "not refreshed for {} by the clock, longer than its writer's {window_s} s window, but {}: that proves nothing",
                    fmt_age(age_ms),
                    clock.how
                ));
            }
        };
        Ok(Expired {
            line: format!(
                "not refreshed for {}, longer than its writer's {window_s} s window: {}",
                fmt_age(age_ms),
                self.promise
            ),
            clock_line: if self.fs.remote_clock() {
                format!(
                    "on a network file system ({}): {} s were allowed for the server's clock",
                    self.fs.kind,
                    NETWORK_SKEW_MS / 1000
                )
            } else {
                "on a local file system: its mtime comes from this host's clock".to_string()
            },
            age_ms,
            window_s,
            step_ms,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The machine of these tests: booted at BOOT, judged a day later.
    const BOOT_S: i64 = 1_800_000_000;
    const BOOT: i64 = BOOT_S * 1000;
    const NOW: i64 = BOOT + 86_400_000;
    const HOUR: i64 = 3_600_000;

    fn steady() -> Clock {
        Clock::steady()
    }

    /// A clock that may have stepped forward by up to 35 hours since boot.
    fn stepped() -> Clock {
        Clock::stepped(
            Some(35 * HOUR),
            "the wall clock may have stepped forward by up to 35 h",
        )
    }

    fn unknown() -> Clock {
        Clock::stepped(
            None,
            "nothing tells whether the wall clock has been stepped",
        )
    }

    fn no_clock() -> Clock {
        panic!("the clock is read only when the comparison comes to it")
    }

    #[test]
    fn a_time_is_shown_as_the_second_it_falls_in() {
        assert_eq!(fmt_ms(1_000), "1970-01-01T00:00:01Z");
        assert_eq!(fmt_ms(1_999), "1970-01-01T00:00:01Z");
        assert_eq!(fmt_ms(-1), "1969-12-31T23:59:59Z");
    }

    #[test]
    fn windows_saturate() {
        assert_eq!(window_ms(60), 60_000);
        assert_eq!(window_ms(u64::MAX), i64::MAX);
    }

    #[test]
    fn the_ctime_bounds_when_a_lock_was_written() {
        // The record's own time is believed when it is not later than the ctime.
        assert_eq!(latest_write_ms(Some(NOW - HOUR), NOW), NOW - HOUR);
        assert_eq!(latest_write_ms(Some(NOW + HOUR), NOW), NOW);
        assert_eq!(latest_write_ms(None, NOW), NOW);
        // An mtime set back is named as what it is, beside the ctime.
        let w = when_written(NOW, NOW - 10 * HOUR, NOW);
        assert!(w.starts_with("last changed at "), "{w}");
        assert!(w.contains("its mtime says"), "{w}");
        assert_eq!(
            when_written(NOW, NOW, NOW),
            format!("written at {}", fmt_ms(NOW))
        );
    }

    #[test]
    fn written_before_boot_on_a_steady_clock_only_where_a_file_survives_a_reboot() {
        let ext4 = FsInfo::new("ext4", false);
        let tmpfs = FsInfo::new("tmpfs", false);
        let nfs = FsInfo::new("nfs", true);
        let long_ago = BOOT - 10 * HOUR;
        let proven = written_before_boot(long_ago, Some(BOOT_S), Some(&ext4), steady);
        assert!(
            matches!(&proven, Timed::Proven { line, margin_ms } if line.contains("before this host booted") && *margin_ms == CLOCK_SLACK_MS),
            "{proven:?}"
        );
        assert_eq!(
            written_before_boot(long_ago, Some(BOOT_S), None, steady),
            proven
        );
        for fs in [&tmpfs, &nfs] {
            assert_eq!(
                written_before_boot(long_ago, Some(BOOT_S), Some(fs), no_clock),
                Timed::No
            );
        }
        // Within the slack: not even a look at the clock.
        let close = BOOT - CLOCK_SLACK_MS;
        assert_eq!(
            written_before_boot(close, Some(BOOT_S), Some(&ext4), no_clock),
            Timed::No
        );
        assert!(matches!(
            written_before_boot(close - 1, Some(BOOT_S), Some(&ext4), steady),
            Timed::Proven { .. }
        ));
        assert_eq!(
            written_before_boot(long_ago, None, Some(&ext4), no_clock),
            Timed::No
        );
    }

    #[test]
    fn written_before_boot_proves_nothing_on_a_stepped_or_unknown_clock() {
        let ext4 = FsInfo::new("ext4", false);
        // Ten hours before boot by a clock that may have stepped 35 hours: nothing.
        let t = written_before_boot(BOOT - 10 * HOUR, Some(BOOT_S), Some(&ext4), stepped);
        assert!(
            matches!(&t, Timed::Unproven(line) if line.contains("35 h") && line.ends_with("proves nothing")),
            "{t:?}"
        );
        let t = written_before_boot(BOOT - 10 * HOUR, Some(BOOT_S), Some(&ext4), unknown);
        assert!(matches!(t, Timed::Unproven(_)), "{t:?}");
        // Beyond the step: proven.
        let t = written_before_boot(BOOT - 36 * HOUR, Some(BOOT_S), Some(&ext4), stepped);
        assert!(
            matches!(t, Timed::Proven { margin_ms, .. } if margin_ms == CLOCK_SLACK_MS + 35 * HOUR),
            "{t:?}"
        );
    }

    #[test]
    fn an_mtime_set_back_proves_no_earlier_boot() {
        // A file written an hour ago, its mtime set to a year before boot: the callers hand
        // the rules the ctime bound, and by that it is of this boot.
        let ext4 = FsInfo::new("ext4", false);
        let (mtime, ctime) = (BOOT - 365 * 24 * HOUR, NOW - HOUR);
        assert_eq!(
            written_before_boot(
                latest_write_ms(None, ctime),
                Some(BOOT_S),
                Some(&ext4),
                steady
            ),
            Timed::No
        );
        // And nothing started after it, for a process that started two hours ago.
        let written = latest_write_ms(None, ctime);
        let words = when_written(written, mtime, ctime);
        assert_eq!(
            started_after_written(42, "app", NOW - 2 * HOUR, written, &words, no_clock),
            Timed::No
        );
    }

    #[test]
    fn a_process_that_started_after_the_lock_was_written() {
        let w = NOW - 2 * HOUR;
        let words = when_written(w, w, w);
        // Beyond the slack on a steady clock: proven.
        let t = started_after_written(42, "sleep", w + CLOCK_SLACK_MS + 1, w, &words, steady);
        assert!(
            matches!(&t, Timed::Proven { line, .. } if line.starts_with("PID 42 was reused: process 42 (sleep) started at")),
            "{t:?}"
        );
        // Within the slack: not even a look at the clock.
        assert_eq!(
            started_after_written(42, "sleep", w + CLOCK_SLACK_MS, w, &words, no_clock),
            Timed::No
        );
        // An hour later, on a clock that may have stepped 35 hours: not proven, and said so.
        let t = started_after_written(42, "sleep", w + HOUR, w, &words, stepped);
        assert!(
            matches!(&t, Timed::Unproven(line) if line.contains("proves nothing") && line.contains("35 h")),
            "{t:?}"
        );
        assert!(matches!(
            started_after_written(42, "sleep", w + HOUR, w, &words, unknown),
            Timed::Unproven(_)
        ));
        // Started before: nothing.
        assert_eq!(
            started_after_written(42, "sleep", w - HOUR, w, &words, no_clock),
            Timed::No
        );
    }

    fn refresh<'a>(last_ms: i64, window_ms: i64, fs: &'a FsInfo) -> Refresh<'a> {
        Refresh {
            last_ms,
            window_ms,
            fresh_ms: None,
            fs,
            promise: "its owner refreshes a heartbeat",
        }
    }

    #[test]
    fn a_fresh_refresh_the_clock_cannot_date_is_not_excluded() {
        let ext4 = FsInfo::new("ext4", false);
        let r = Refresh {
            fresh_ms: Some(10_000),
            ..refresh(NOW - 2 * HOUR, 60_000, &ext4)
        };
        // Two hours ago by a clock that may have stepped forward by three since: maybe fresh.
        let stepped = || Clock {
            step_ms: Some(3 * HOUR),
            how: "stepped".into(),
        };
        assert!(matches!(r.at(NOW, stepped), Refreshed::MayBeFresh(_)));
        let unknown = || Clock {
            step_ms: None,
            how: "unknown".into(),
        };
        assert!(matches!(r.at(NOW, unknown), Refreshed::MayBeFresh(_)));
        assert_eq!(
            r.at(NOW, Clock::steady),
            Refreshed::Overdue { age_ms: 2 * HOUR }
        );
        // Ahead of the clock: the clocks disagree, and a fresh one is not excluded.
        let ahead = Refresh {
            last_ms: NOW + 2 * HOUR,
            ..r
        };
        assert!(matches!(
            ahead.at(NOW, Clock::steady),
            Refreshed::MayBeFresh(_)
        ));
    }

    #[test]
    fn a_time_set_ahead_gives_way_to_the_ctime() {
        let ext4 = FsInfo::new("ext4", false);
        let (last, line) = last_refresh(NOW + 24 * HOUR, NOW - 1_000, NOW, &ext4);
        assert_eq!(last, NOW - 1_000);
        assert!(line.unwrap().contains("ahead of the clock"));
        assert_eq!(
            last_refresh(NOW - 5_000, NOW - 9_000, NOW, &ext4),
            (NOW - 5_000, None)
        );
        // Both ahead (the clock stepped back since): the later stands, and proves nothing.
        assert_eq!(
            last_refresh(NOW + 3 * HOUR, NOW + 2 * HOUR, NOW, &ext4),
            (NOW + 3 * HOUR, None)
        );
    }

    #[test]
    fn a_heartbeat_within_its_window_proves_nothing_past_it_on_a_steady_clock_expires() {
        let ext4 = FsInfo::new("ext4", false);
        let r = refresh(NOW - 30_000, 60_000, &ext4);
        assert!(
            matches!(r.at(NOW, Clock::steady), Refreshed::Unproven(l) if l.contains("within its writer's 60 s window"))
        );
        let r = refresh(NOW - 61_000, 60_000, &ext4);
        assert_eq!(
            r.at(NOW, Clock::steady),
            Refreshed::Overdue { age_ms: 61_000 }
        );
        let e = r.expired(61_000, steady).unwrap();
        assert_eq!((e.age_ms, e.window_s, e.step_ms), (61_000, 60, 0));
        assert!(e.line.starts_with("not refreshed for 1 min 1 s"), "{e:?}");
        assert!(e.clock_line.contains("local file system"), "{e:?}");
        // The writer's fresh promise, where this host's clock sets the times.
        let fresh = Refresh {
            fresh_ms: Some(10_000),
            ..refresh(NOW - 5_000, 60_000, &ext4)
        };
        assert!(matches!(fresh.at(NOW, Clock::steady), Refreshed::Fresh(_)));
        // A refresh far in the future: the clocks disagree.
        let r = refresh(NOW + 2 * HOUR, 60_000, &ext4);
        assert!(
            matches!(r.at(NOW, Clock::steady), Refreshed::Unproven(l) if l.contains("in the future"))
        );
    }

    #[test]
    fn a_heartbeat_on_a_server_s_clock_gets_its_skew() {
        let sshfs = FsInfo::new("fuse.sshfs", true);
        let r = refresh(NOW - 61_000, 60_000, &sshfs);
        assert!(
            matches!(r.at(NOW, Clock::steady), Refreshed::Unproven(l) if l.contains("server clock"))
        );
        let fresh = Refresh {
            fresh_ms: Some(10_000),
            ..refresh(NOW - 5_000, 60_000, &sshfs)
        };
        assert!(
            matches!(fresh.at(NOW, Clock::steady), Refreshed::Unproven(_)),
            "a server's clock proves no refresh fresh"
        );
        let age = 60_000 + NETWORK_SKEW_MS + 1;
        let r = refresh(NOW - age, 60_000, &sshfs);
        assert_eq!(r.at(NOW, Clock::steady), Refreshed::Overdue { age_ms: age });
        let e = r.expired(age, steady).unwrap();
        assert!(e.clock_line.contains("60 s were allowed"), "{e:?}");
    }

    #[test]
    fn a_heartbeat_proves_no_expiry_on_a_stepped_or_unknown_clock() {
        let ext4 = FsInfo::new("ext4", false);
        let r = refresh(NOW - 2 * HOUR, 60_000, &ext4);
        let age = 2 * HOUR;
        assert_eq!(r.at(NOW, Clock::steady), Refreshed::Overdue { age_ms: age });
        let why = r.expired(age, stepped).unwrap_err();
        assert!(
            why.contains("35 h") && why.ends_with("proves nothing"),
            "{why}"
        );
        assert!(r.expired(age, unknown).is_err());
        // Beyond the step and the window: proven, naming the step.
        let old = 36 * HOUR;
        let e = refresh(NOW - old, 60_000, &ext4)
            .expired(old, stepped)
            .unwrap();
        assert_eq!(e.step_ms, 35 * HOUR);
    }
}
