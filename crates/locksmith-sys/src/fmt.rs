//! Times as evidence lines show them (re-exported by [`crate::time`]): one function per view,
//! so that every line, report and table shows one instant alike. A leaf: it reads nothing.

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
