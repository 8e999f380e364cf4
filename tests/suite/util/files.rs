//! Files as the tests lay them out: the captured fixtures, files and symlinks written with
//! their parent directories, and modification times set exactly.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

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

/// Sets a path's mtime (and atime) `secs` seconds into the past, not following a symlink.
pub fn age(path: &Path, secs: u64) {
    let t = SystemTime::now() - Duration::from_secs(secs);
    let d = t.duration_since(UNIX_EPOCH).unwrap();
    set_mtime(path, d.as_secs() as i64, d.subsec_nanos() as i64);
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
