//! Facts about the host we run on: hostname, boot id, boot time, our PID namespace and whether
//! we run inside a container. Read once per scan (or per engine operation).

use std::path::Path;

pub use locksmith_sys::host::{boot_id, boot_time, hostname, parse_ns_link, pid_ns_of};

/// Host facts used by the evidence rules (README: Evidence).
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct HostFacts {
    pub hostname: String,
    /// `/proc/sys/kernel/random/boot_id`: names one running kernel.
    pub boot_id: Option<String>,
    /// `/etc/machine-id` (32 hex digits): names this installation across boots; a clone of
    /// a machine image may share it, another machine of the same name does not.
    pub machine_id: Option<String>,
    /// Seconds since the epoch (`btime` in `/proc/stat`).
    pub boot_time: Option<i64>,
    /// Inode of `/proc/self/ns/pid`.
    pub pid_ns: Option<u64>,
    pub in_container: bool,
    /// Clock ticks per second (for `/proc/<pid>/stat` start times).
    pub ticks_per_sec: u64,
}

impl HostFacts {
    /// Reads the facts of the running host. Never fails: what cannot be read is `None`.
    pub fn probe() -> Self {
        HostFacts {
            hostname: hostname(),
            boot_id: boot_id(),
            machine_id: machine_id(),
            boot_time: boot_time(),
            pid_ns: pid_ns_of("self"),
            in_container: in_container(),
            ticks_per_sec: ticks_per_sec(),
        }
    }

    /// Boot time as RFC 3339.
    pub fn boot_time_rfc3339(&self) -> Option<String> {
        self.boot_time.and_then(super::rfc3339)
    }
}

/// The machine id (`/etc/machine-id`, else D-Bus's copy), lower-case hex.
pub fn machine_id() -> Option<String> {
    ["/etc/machine-id", "/var/lib/dbus/machine-id"]
        .iter()
        .find_map(|p| std::fs::read_to_string(p).ok())
        .map(|s| s.trim().to_ascii_lowercase())
        .filter(|s| s.len() == 32 && s.bytes().all(|b| b.is_ascii_hexdigit()))
}

fn ticks_per_sec() -> u64 {
    #[cfg(target_os = "linux")]
    {
        procfs::ticks_per_second()
    }
    #[cfg(not(target_os = "linux"))]
    {
        100
    }
}

/// Whether we run inside a container (Docker, Podman, systemd-nspawn, LXC, ...).
pub fn in_container() -> bool {
    if Path::new("/.dockerenv").exists() || Path::new("/run/.containerenv").exists() {
        return true;
    }
    // PID 1's environment (readable as root) names the container manager.
    if let Ok(env) = locksmith_sys::host::read_proc("/proc/1/environ")
        && env
            .split(|b| *b == 0)
            .any(|kv| kv.starts_with(b"container="))
    {
        return true;
    }
    if let Ok(cg) = locksmith_sys::host::read_proc_text("/proc/1/cgroup")
        && ["docker", "kubepods", "containerd", "libpod", "lxc"]
            .iter()
            .any(|hint| cg.contains(hint))
    {
        return true;
    }
    false
}

/// A user as messages name it: `alice (uid 1000)`, or `uid 1000` without a name.
pub fn user(uid: u32) -> String {
    static USERS: std::sync::OnceLock<Option<sysinfo::Users>> = std::sync::OnceLock::new();
    let name = USERS
        .get_or_init(|| sysinfo::Users::new_with_refreshed_list().ok())
        .as_ref()
        .and_then(|users| users.iter().find(|u| **u.id() == uid))
        .map(|u| u.name().to_string());
    match name {
        Some(n) => format!("{} (uid {uid})", crate::text::escape(&n)),
        None => format!("uid {uid}"),
    }
}

/// A user's name and home directory in the password database (`getpwuid_r(3)`), as a
/// program of that user expands `~NAME` (vim does, recovering a swap file).
pub fn passwd_entry(uid: u32) -> Option<(String, std::path::PathBuf)> {
    use std::ffi::CStr;
    use std::os::unix::ffi::OsStrExt;
    let mut buf = vec![0u8; 4096];
    loop {
        // SAFETY: `passwd` is a plain C struct of pointers and integers, valid all-zero.
        let mut pw: libc::passwd = unsafe { std::mem::zeroed() };
        let mut found: *mut libc::passwd = std::ptr::null_mut();
        // SAFETY: every pointer is to live memory of ours, `buf` of the length given; on
        // success the strings `pw` points to are in `buf`, read before it changes.
        let r = unsafe {
            libc::getpwuid_r(uid, &mut pw, buf.as_mut_ptr().cast(), buf.len(), &mut found)
        };
        if r == libc::ERANGE && buf.len() < 1 << 20 {
            buf.resize(buf.len() * 4, 0);
            continue;
        }
        if r != 0 || found.is_null() || pw.pw_name.is_null() || pw.pw_dir.is_null() {
            return None;
        }
        // SAFETY: getpwuid_r succeeded: both are NUL-terminated strings in `buf`.
        let (name, dir) = unsafe { (CStr::from_ptr(pw.pw_name), CStr::from_ptr(pw.pw_dir)) };
        return Some((
            name.to_string_lossy().into_owned(),
            std::path::PathBuf::from(std::ffi::OsStr::from_bytes(dir.to_bytes())),
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(target_os = "linux")]
    #[test]
    fn the_password_database_names_root() {
        let (name, home) = passwd_entry(0).unwrap();
        assert_eq!(name, "root");
        assert!(home.is_absolute(), "{}", home.display());
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn probes_this_host() {
        let h = HostFacts::probe();
        assert!(!h.hostname.is_empty());
        assert_eq!(h.boot_id.as_deref().map(str::len), Some(36));
        assert!(h.boot_time.unwrap() > 1_000_000_000);
        assert!(h.pid_ns.is_some());
        assert!(h.ticks_per_sec > 0);
    }
}
