//! Requirements and skips. A test that needs a program or a capability the machine lacks
//! skips (says so on stderr and writes a line to the skip log, which `.ci/run` and
//! `tests/steady.sh` sum up at the end of a run); under CI (`CI` set), where `.ci/run`
//! installs every program the tests drive, nothing may be skipped: the test fails instead.
//! The one exception, [`skip_even_under_ci`], is for what no machine can provide every time.

use std::path::PathBuf;

use crate::{append_line, log_dir, which};

/// The environment variable naming the skip log, one `TEST<TAB>KIND: WHY` line per skip:
/// `$LOCKSMITH_TEST_SKIP_LOG`, else `skipped-tests.log` in the target directory's `tmp/`.
pub const SKIP_LOG: &str = "LOCKSMITH_TEST_SKIP_LOG";

/// Whether a program the test drives is installed. A missing one skips the test (or the
/// part that needs it) through [`skip`]: a failure under CI, where `.ci/run` installs it.
pub fn require(program: &str) -> bool {
    if which(program).is_some() {
        return true;
    }
    skip(format!(
        "`{program}` is not installed (.ci/run installs it)"
    ));
    false
}

/// Whether the test may go on with `what` (a capability: root, a mount, a namespace);
/// otherwise skips it through [`skip`], saying `why`.
pub fn require_that(ok: bool, why: impl std::fmt::Display) -> bool {
    if !ok {
        skip(why);
    }
    ok
}

/// Skips the test, or the part of it the caller leaves out, because of `why`. Under CI (`CI`
/// set) nothing may be left out: this fails the test. Otherwise it says so on stderr and
/// appends a line to the skip log ([`SKIP_LOG`]).
#[track_caller]
pub fn skip(why: impl std::fmt::Display) {
    assert!(
        std::env::var_os("CI").is_none(),
        "nothing may be skipped under CI: {why}"
    );
    record_skip("skipped", &why.to_string());
}

/// Skips because of something no machine can be made to provide every time (a number the
/// kernel hands out by chance, say): the one skip that CI allows. Use it only for that.
pub fn skip_even_under_ci(why: impl std::fmt::Display) {
    record_skip("skipped by chance", &why.to_string());
}

/// The skip log this process writes to ([`SKIP_LOG`]).
pub fn skip_log() -> PathBuf {
    std::env::var_os(SKIP_LOG)
        .map(PathBuf::from)
        .unwrap_or_else(|| log_dir().join("skipped-tests.log"))
}

fn record_skip(kind: &str, why: &str) {
    let test = std::thread::current()
        .name()
        .unwrap_or("(unnamed thread)")
        .to_string();
    eprintln!("{}: {test}: {why}", kind.to_uppercase());
    append_line(
        &skip_log(),
        &format!("{test}\t{kind}: {}\n", why.replace('\n', " ")),
    );
}
