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

#[cfg(test)]
mod tests {
    use super::*;

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
