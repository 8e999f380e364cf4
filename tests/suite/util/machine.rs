//! A Debian system booted by a real systemd: PID 1 of a Podman container
//! (`podman run --systemd=always IMAGE /sbin/init`, runc, cgroupfs, no network), from a root
//! file system tarball (`.ci/run` builds one with mmdebstrap). Its disk (the container's
//! overlay) outlives each boot; [`Machine::crash`] kills every process at once, as a power cut
//! would (nothing is stopped, no file removed), and [`Machine::boot`] starts it again.

use std::path::Path;
use std::process::Output;

use super::podman::Podman;
use super::wait_within;

/// The image the root file system is imported as.
const IMAGE: &str = "localhost/locksmith-debian:test";

/// The container's name.
const NAME: &str = "locksmith-machine";

/// Added to Podman's default capability set: what systemd needs to give the units the mount,
/// UTS and network namespaces of their sandboxes (it skips a sandbox it cannot set up, with
/// an "ignoring" in the journal), and the capabilities the units keep for themselves. With
/// them systemd applies each unit's settings as it would on a machine of its own.
const CAPS: &str = "SYS_ADMIN,NET_ADMIN,SYS_PTRACE,DAC_READ_SEARCH";

pub struct Machine {
    podman: Podman,
}

impl Machine {
    /// Imports `rootfs` into a private Podman store and creates the machine (not booted).
    /// `Err` with the reason when Podman cannot run here.
    pub fn create(rootfs: &Path) -> Result<Machine, String> {
        let podman = Podman::store()?;
        podman.import(rootfs, IMAGE)?;
        let out = podman.run(&[
            "create",
            "--name",
            NAME,
            "--systemd=always",
            "--network",
            "none",
            "--cap-add",
            CAPS,
            IMAGE,
            "/sbin/init",
        ]);
        if !out.status.success() {
            return Err(format!(
                "podman create: {}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        Ok(Machine { podman })
    }

    /// Starts the machine and waits until systemd has finished booting; returns what
    /// `systemctl is-system-running` says then (`running`, or `degraded` when a unit failed).
    pub fn boot(&self) -> String {
        let out = self.podman.run(&["start", NAME]);
        assert!(
            out.status.success(),
            "podman start: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        // Until systemd listens, systemctl cannot ask it (and says so).
        wait_within(180, "systemd to finish booting", || {
            let out = self.sh("systemctl is-system-running --wait");
            let state = String::from_utf8_lossy(&out.stdout).trim().to_string();
            matches!(state.as_str(), "running" | "degraded" | "maintenance").then_some(state)
        })
    }

    /// Kills every process of the machine at once (SIGKILL to its PID 1 from outside), and
    /// waits until it is down.
    pub fn crash(&self) {
        let out = self.podman.run(&["kill", "--signal", "KILL", NAME]);
        assert!(
            out.status.success(),
            "podman kill: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        self.podman.wait_exited(NAME);
    }

    /// Runs `sh -c SCRIPT` as root on the machine.
    pub fn sh(&self, script: &str) -> Output {
        self.podman.run(&["exec", NAME, "sh", "-c", script])
    }

    /// [`Machine::sh`], which must succeed; its standard output.
    pub fn sh_ok(&self, script: &str) -> String {
        let out = self.sh(script);
        assert!(
            out.status.success(),
            "on the machine: {script}\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Writes a file on the machine (its directory is made), owned by root.
    pub fn put(&self, path: &str, content: &[u8], mode: u32) {
        let staged = tempfile::NamedTempFile::new_in(self.podman.path()).unwrap();
        std::fs::write(staged.path(), content).unwrap();
        let dir = Path::new(path)
            .parent()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        self.sh_ok(&format!("mkdir -p '{dir}'"));
        let out = self.podman.run(&[
            "cp",
            &staged.path().to_string_lossy(),
            &format!("{NAME}:{path}"),
        ]);
        assert!(
            out.status.success(),
            "podman cp to {path}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        self.sh_ok(&format!(
            "chown root:root '{path}' && chmod {mode:o} '{path}'"
        ));
    }

    /// A file's content on the machine, `None` when it does not exist.
    pub fn read(&self, path: &str) -> Option<Vec<u8>> {
        let out = self.podman.run(&["exec", NAME, "cat", path]);
        out.status.success().then_some(out.stdout)
    }

    /// A property of a unit (`systemctl show -P PROPERTY UNIT`).
    pub fn show(&self, unit: &str, property: &str) -> String {
        self.sh_ok(&format!("systemctl show -P {property} {unit}"))
            .trim()
            .to_string()
    }

    /// The journal of this boot for some units, messages only (systemd's own lines about
    /// them included).
    pub fn journal(&self, units: &[&str]) -> String {
        let units: Vec<String> = units.iter().map(|u| format!("-u {u}")).collect();
        self.sh_ok(&format!(
            "journalctl -b --no-pager -o cat {}",
            units.join(" ")
        ))
    }
}
