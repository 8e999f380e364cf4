//! The timing log: how long each test that used this crate took, so that a run can name its
//! slowest tests (libtest's own `--report-time` is unstable). A test is timed from the start
//! of its thread (libtest runs each test on a thread of its own, named after it) to the end
//! of that thread, and written as one `SECONDS<TAB>TEST` line when the thread ends. Only
//! tests that call into this crate (a temp dir, a child, a wait, a requirement) are timed;
//! the log is written only when [`TIME_LOG`] names it.

use std::cell::RefCell;
use std::path::PathBuf;

use crate::append_line;

/// The environment variable naming the timing log; unset, nothing is timed.
pub const TIME_LOG: &str = "LOCKSMITH_TEST_TIME_LOG";

/// Times the current test (once; later calls do nothing), when [`TIME_LOG`] is set.
pub fn record_time() {
    TIMER.with(|t| {
        let mut t = t.borrow_mut();
        if t.is_none()
            && let Some(log) = std::env::var_os(TIME_LOG)
        {
            *t = timer(PathBuf::from(log));
        }
    });
}

/// The timer of the current thread, writing to `log`: none on the main thread (not a test's).
fn timer(log: PathBuf) -> Option<Timer> {
    let name = std::thread::current().name()?.to_string();
    (name != "main").then(|| Timer {
        log,
        test: name,
        started: thread_started().unwrap_or_else(boot_clock),
    })
}

thread_local! {
    static TIMER: RefCell<Option<Timer>> = const { RefCell::new(None) };
}

struct Timer {
    log: PathBuf,
    test: String,
    /// When the test's thread started, in seconds on the boot clock.
    started: f64,
}

impl Drop for Timer {
    /// The thread is ending: the test is over.
    fn drop(&mut self) {
        let secs = (boot_clock() - self.started).max(0.0);
        append_line(&self.log, &format!("{secs:.2}\t{}\n", self.test));
    }
}

/// Seconds since boot (`CLOCK_BOOTTIME`, the clock of a thread's start time in `/proc`).
fn boot_clock() -> f64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::Boottime);
    t.tv_sec as f64 + t.tv_nsec as f64 / 1e9
}

/// When the current thread started, in seconds since boot: field 22 of
/// `/proc/thread-self/stat`, in clock ticks.
fn thread_started() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").ok()?;
    let rest = &stat[stat.rfind(')')? + 2..];
    // After the name: field 3 (state) is the first; field 22 (starttime) the 20th.
    let ticks: u64 = rest.split_whitespace().nth(19)?.parse().ok()?;
    Some(ticks as f64 / rustix::param::clock_ticks_per_second() as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_test_is_timed_from_the_start_of_its_thread_to_its_end() {
        let dir = crate::temp_dir();
        let log = dir.path().join("times.log");
        let to = log.clone();
        std::thread::Builder::new()
            .name("timed::test".into())
            .spawn(move || {
                std::thread::sleep(std::time::Duration::from_millis(300));
                let t = timer(to);
                std::thread::sleep(std::time::Duration::from_millis(200));
                drop(t);
            })
            .unwrap()
            .join()
            .unwrap();
        let text = std::fs::read_to_string(&log).unwrap();
        let (secs, test) = text.trim_end().split_once('\t').expect("SECONDS<TAB>TEST");
        assert_eq!(test, "timed::test");
        let secs: f64 = secs.parse().unwrap();
        // Ticks of the thread's start time are at most 10 ms long.
        assert!((0.49..60.0).contains(&secs), "{secs} s");
    }

    #[test]
    fn a_thread_started_before_the_time_it_reads() {
        let started = thread_started().expect("the thread's start time");
        let now = boot_clock();
        // Ticks are at most 10 ms long.
        assert!(started <= now + 0.011, "started {started}, now {now}");
        assert!(now - started < 600.0, "started {started}, now {now}");
    }
}
