//! Files as the tests lay them out: the captured fixtures, files and symlinks written with
//! their parent directories, and modification times set exactly, of this boot or of an
//! earlier one as the test means.

use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

/// A lock file captured from the real program (`tests/fixtures/REL`, see its README).
pub fn fixture(rel: &str) -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(rel);
    std::fs::read(&path).unwrap_or_else(|e| panic!("fixture {}: {e}", path.display()))
}

/// A text fixture.
pub fn fixture_text(rel: &str) -> String {
    String::from_utf8(fixture(rel)).expect("text fixture")
}

/// The vim swap fixture `rel` with its PID and host name rewritten.
pub fn swap_with(rel: &str, pid: u32, host: &str) -> Vec<u8> {
    let mut b = fixture(rel);
    b[24..28].copy_from_slice(&pid.to_le_bytes());
    let field = &mut b[68..108];
    field.fill(0);
    let h = &host.as_bytes()[..host.len().min(39)];
    field[..h.len()].copy_from_slice(h);
    b
}

/// Writes `bytes` to `path`, creating its parent directories; returns the path.
pub fn write(path: &Path, bytes: impl AsRef<[u8]>) -> PathBuf {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).unwrap();
    }
    std::fs::write(path, bytes).unwrap();
    path.to_path_buf()
}

/// Makes `path` a symlink to `target` (replacing what was there), creating its parent
/// directories; returns the path.
pub fn link(path: &Path, target: &str) -> PathBuf {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).unwrap();
    }
    let _ = std::fs::remove_file(path);
    std::os::unix::fs::symlink(target, path).unwrap();
    path.to_path_buf()
}

/// Milliseconds since the epoch, now.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// Sets a path's mtime and atime (not following a symlink) to `secs` and `nsec` since the
/// epoch.
pub fn set_mtime(path: &Path, secs: i64, nsec: i64) {
    use rustix::fs::{AtFlags, CWD, Timespec, Timestamps, utimensat};
    let t = Timespec {
        tv_sec: secs,
        tv_nsec: nsec as _,
    };
    let times = Timestamps {
        last_access: t,
        last_modification: t,
    };
    utimensat(CWD, path, &times, AtFlags::SYMLINK_NOFOLLOW)
        .unwrap_or_else(|e| panic!("set the mtime of {}: {e}", path.display()));
}

/// [`set_mtime`] to `ms` milliseconds since the epoch.
pub fn set_mtime_ms(path: &Path, ms: i64) {
    set_mtime(path, ms.div_euclid(1000), ms.rem_euclid(1000) * 1_000_000);
}

// Ages. These set a file's mtime, which is what its writer (or anyone who may write it) says
// of it: the report shows it (`modified`, `age_s`), and no rule of the judge believes it (the
// time rules compare the ctime, which nobody can set back, and the clock may have stepped).
// A test that means *when a lock was written* says so in the evidence instead
// (`judging::judge_changed` with `written_ago`, `written_before_boot`, ...). An mtime a test
// sets here is of this boot: [`age`] and [`age_up_to`] check it.

/// Seconds kept between this host's boot and an mtime meant to be of this boot: more than the
/// judges' clock slack and `btime`'s rounding to the second, with room for a small step of the
/// clock.
pub const BOOT_MARGIN_S: u64 = 10;

/// When this host booted, in seconds since the epoch, read as the judges read it (`btime` in
/// `/proc/stat`).
fn boot_time() -> i64 {
    locksmith::probe::host::boot_time().expect("the boot time (btime in /proc/stat)")
}

/// How many seconds back from `now_ms` a file can have been written in this boot, keeping
/// [`BOOT_MARGIN_S`].
fn room_in_this_boot(now_ms: i64) -> u64 {
    let up = now_ms.div_euclid(1000) - boot_time();
    u64::try_from(up - BOOT_MARGIN_S as i64).unwrap_or(0)
}

/// The time `secs` seconds ago, in milliseconds since the epoch, checked to fall in this boot
/// with [`BOOT_MARGIN_S`] to spare: a file written then is of this boot to every judge. Fails
/// the test, naming the uptime, on a machine booted too recently for that.
#[track_caller]
pub fn in_this_boot_ms(secs: u64) -> i64 {
    let now = now_ms();
    let room = room_in_this_boot(now);
    assert!(
        secs <= room,
        "an mtime {secs} s ago would not be of this boot: this host booted {} s ago \
         (btime {}), and {BOOT_MARGIN_S} s are kept from the boot",
        now.div_euclid(1000) - boot_time(),
        boot_time()
    );
    now - secs as i64 * 1000
}

/// Sets a path's mtime (and atime) `secs` seconds into the past, not following a symlink:
/// written in this boot (checked, see [`in_this_boot_ms`]).
#[track_caller]
pub fn age(path: &Path, secs: u64) {
    set_mtime_ms(path, in_this_boot_ms(secs));
}

/// Sets a path's mtime (and atime) `want` seconds into the past, or as far back as this boot
/// allows when the host booted more recently, but never less than `need` seconds (what the
/// test needs: past a window, older than another file); fails the test, naming the uptime,
/// when even that is not of this boot. Returns the age given, in seconds.
#[track_caller]
pub fn age_up_to(path: &Path, want: u64, need: u64) -> u64 {
    assert!(need <= want, "age_up_to: need {need} s > want {want} s");
    let secs = want.min(room_in_this_boot(now_ms())).max(need);
    age(path, secs);
    secs
}

/// A sticky, world-writable directory `name` (like `/tmp`) in the test's directory, which every
/// user may enter.
pub fn sticky_dir(env: &super::Env, name: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(env.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let dir = env.path().join(name);
    std::fs::create_dir(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o1777)).unwrap();
    dir
}
