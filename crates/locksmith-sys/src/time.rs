//! Times as evidence lines show them, and what a comparison of a file time with a process
//! start time or the boot time can prove.

use crate::fs::FsInfo;

/// Tolerance when comparing a process start time or a boot time with a file time: `btime` has
/// a resolution of one second, so closer than this proves nothing.
pub const CLOCK_SLACK_MS: i64 = 2_000;

/// Formats milliseconds since the epoch as RFC 3339 with second precision.
pub fn fmt_ms(ms: i64) -> String {
    // Truncated, as `ps` and `stat` show a time: the second it falls in. Every view of one
    // instant (evidence, the process line, the JSON report) is written by this function.
    jiff::Timestamp::from_second(ms.div_euclid(1000))
        .map(|t| t.to_string())
        .unwrap_or_else(|_| format!("{ms} ms"))
}

/// Formats a duration in ms for evidence lines: `3 s`, `5 min 2 s`, `2 h 10 min`, `3 d 4 h`.
pub fn fmt_age(ms: i64) -> String {
    let s = ms.max(0) / 1000;
    match s {
        0..60 => format!("{s} s"),
        60..3600 => format!("{} min {} s", s / 60, s % 60),
        3600..86_400 => format!("{} h {} min", s / 3600, (s % 3600) / 60),
        _ => format!("{} d {} h", s / 86_400, (s % 86_400) / 3600),
    }
}

/// A window in seconds as milliseconds, for comparing with ages: saturates instead of
/// overflowing.
pub fn window_ms(secs: u64) -> i64 {
    i64::try_from(secs)
        .ok()
        .and_then(|s| s.checked_mul(1000))
        .unwrap_or(i64::MAX)
}

/// The evidence line for a lock written before this host booted (at `boot_time`, seconds since
/// the epoch), with the clock slack, if it was. Never on a file system that does not survive a
/// reboot (tmpfs, ramfs: `/run`, often `/tmp`): a file there is from this boot whatever its
/// mtime says, so an mtime before boot only shows the clock was stepped since it was written.
pub fn before_boot(written_ms: i64, boot_time: Option<i64>, fs: Option<&FsInfo>) -> Option<String> {
    if fs.is_some_and(|f| f.kind.is_volatile()) {
        return None;
    }
    let bt = boot_time?;
    (written_ms + CLOCK_SLACK_MS < bt * 1000).then(|| {
        format!(
            "written at {}, before this host booted at {}",
            fmt_ms(written_ms),
            fmt_ms(bt * 1000)
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn before_boot_only_where_a_file_survives_a_reboot() {
        let ext4 = FsInfo::new("ext4", false);
        let tmpfs = FsInfo::new("tmpfs", false);
        assert!(before_boot(0, Some(100), Some(&ext4)).is_some());
        assert!(before_boot(0, Some(100), Some(&tmpfs)).is_none());
        assert!(
            before_boot(99_000, Some(100), None).is_none(),
            "within the slack"
        );
        assert!(before_boot(0, None, None).is_none());
    }
}
