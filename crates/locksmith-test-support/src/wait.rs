//! Waiting with deadlines: polls often at first and less often as the wait goes on, and fails
//! the test, naming what it waited for, when the deadline passes.

use std::time::{Duration, Instant};

/// How long any one wait in a test may take before it fails.
pub const DEADLINE: Duration = Duration::from_secs(60);

/// Polls `f` until it returns `Some`, failing the test after [`DEADLINE`].
#[track_caller]
pub fn wait_for<T>(what: &str, f: impl FnMut() -> Option<T>) -> T {
    wait_within(DEADLINE.as_secs(), what, f)
}

/// Polls `ok` until it holds, failing the test after [`DEADLINE`].
#[track_caller]
pub fn wait_until(what: &str, mut ok: impl FnMut() -> bool) {
    wait_for(what, || ok().then_some(()))
}

/// Polls `f` until it returns `Some`, failing the test after `secs` seconds. Polls every few
/// milliseconds at first, and at most every 50 ms.
#[track_caller]
pub fn wait_within<T>(secs: u64, what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(secs);
    let mut pause = Duration::from_millis(5);
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(50));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wait_returns_what_it_waited_for() {
        let mut n = 0;
        assert_eq!(
            wait_for("the third try", || {
                n += 1;
                (n == 3).then_some(n)
            }),
            3
        );
    }

    #[test]
    #[should_panic(expected = "timed out waiting for nothing at all")]
    fn a_wait_fails_at_its_deadline() {
        wait_within(0, "nothing at all", || None::<()>);
    }
}
