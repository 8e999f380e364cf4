//! `vmware`: VMware's lock directories beside a virtual machine's files (`*.vmx.lck/`,
//! `*.vmdk.lck/`, `*.vmem.lck/`, ...).
//!
//! Format, from open-vm-tools `lib/file/fileLockPrimitive.c` and `lib/file/fileLockPosix.c`:
//! a lock is a directory holding one member file per locker, `M<5 digits>.lck` (`D...` while
//! a locker is entering, `E...` for the entry lock), each `FILELOCK_DATA_SIZE` (512) bytes of
//! space-separated text padded with NULs: `machineID executionID lamportNumber lockType
//! (S|X) ...`. The execution id is `FileLockProcessDescriptor`: `pid-creationTime(name)`,
//! the creation time being field 22 of `/proc/<pid>/stat` (clock ticks since boot), or
//! `pid-0` when it could not be read.
//!
//! VMware's rule (`FileLockValidExecutionID`): for a member of this machine, the lock is
//! stale when no process has that PID, or its creation time differs. The machine id is a
//! digest of VMware's own making that cannot be computed here, so: on a local file system
//! (written by this machine) the PID rules of [`crate::judge`] apply with the exact start
//! time; on a network file system an owner may be another machine (`foreign`).

use super::{Candidate, Dialect, DialectId, EntryKind, Windows, common};
use crate::judge::{Claim, Judgement, OwnerClaim, Said, When, Writers};
use crate::probe::Snapshot;
use crate::verdict::Owner;

pub struct Vmware;

const PATTERNS: &[&str] = &[
    "*.vmx.lck",
    "*.vmdk.lck",
    "*.vmem.lck",
    "*.vmss.lck",
    "*.vmsn.lck",
    "*.nvram.lck",
    "*.vmsd.lck",
];

/// One member file's values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    pub machine_id: String,
    pub pid: i64,
    /// Clock ticks since boot; 0 when VMware could not read it.
    pub creation: u64,
    pub process: Option<String>,
    pub lamport: u64,
    pub exclusive: bool,
}

/// Parses a member's content.
pub fn parse_member(content: &[u8]) -> Option<Member> {
    let text = std::str::from_utf8(content).ok()?;
    let text = text.trim_end_matches('\0');
    let mut f = text.split_ascii_whitespace();
    let machine_id = f.next()?.to_string();
    let exec = f.next()?;
    let lamport = f.next()?.parse().ok()?;
    let kind = f.next()?;
    let (exec, process) = match exec.split_once('(') {
        Some((e, rest)) => (e, Some(rest.trim_end_matches(')').to_string())),
        None => (exec, None),
    };
    let (pid, creation) = match exec.split_once('-') {
        Some((p, t)) => (p, t.parse().ok()?),
        None => (exec, 0),
    };
    Some(Member {
        machine_id,
        pid: common::parse_pid(pid).ok()?,
        creation,
        process,
        lamport,
        exclusive: match kind {
            "X" => true,
            "S" => false,
            _ => return None,
        },
    })
}

fn is_member_name(name: &str) -> bool {
    let b = name.as_bytes();
    b.len() > 5
        && matches!(b[0], b'M' | b'D' | b'E')
        && name.ends_with(".lck")
        && name[1..name.len() - 4].bytes().all(|c| c.is_ascii_digit())
}

impl Dialect for Vmware {
    fn id(&self) -> DialectId {
        DialectId::VMWARE
    }

    fn about(&self) -> super::About {
        super::About {
            writer: "VMware Workstation, Player and ESXi clients (open-vm-tools' file locks)",
            programs: &["vmware"],
            found_as: "`*.vmx.lck/`, `*.vmdk.lck/`, ... directories with `M<n>.lck` members of 512 bytes (`machineID pid-creationTime(name) lamport X|S`)",
            judged_by: "VMware's rule: that PID with that exact start time (ticks since boot): live; gone or another start time: stale; on a network file system: foreign",
            rules: &["pid-gone", "pid-reused"],
            source: Some(
                "open-vm-tools `lib/file/fileLockPrimitive.c`, `lib/file/fileLockPosix.c`",
            ),
        }
    }

    fn patterns(&self) -> &'static [&'static str] {
        PATTERNS
    }

    fn recognise(&self, c: &Candidate<'_>, _snap: &Snapshot) -> bool {
        let name = c.file_name().to_string_lossy();
        c.kind == EntryKind::Dir && PATTERNS.iter().any(|p| name.ends_with(&p[1..]))
    }

    fn read(&self, c: &Candidate<'_>, snap: &Snapshot, _windows: &Windows) -> Said {
        if c.kind != EntryKind::Dir {
            return Said::unparseable(
                "VMware",
                format!("it is {}, not a lock directory", common::kind_name(c.kind)),
            );
        }
        let members = match snap.list_dir(c.path, 64) {
            Ok(m) => m,
            Err(e) => {
                return Said::unparseable("VMware", format!("cannot list the lock directory: {e}"));
            }
        };
        let mut owner = Owner::default();
        let mut claims = Vec::new();
        for (name, meta) in &members {
            if !is_member_name(name) {
                continue;
            }
            let content = snap.read_small(&c.path.join(name), 512).unwrap_or_default();
            let label = format!("member {}", crate::text::truncate(name, 40));
            let Some(m) = parse_member(&content) else {
                return Judgement::unknown(format!(
                    "{label} cannot be read as a VMware lock member: {}",
                    common::excerpt(&content)
                ))
                .into();
            };
            owner.pid.get_or_insert(m.pid);
            owner.detail.get_or_insert(format!(
                "{} lock by {} (machine id {})",
                if m.exclusive { "exclusive" } else { "shared" },
                m.process
                    .as_deref()
                    .map(common::field)
                    .unwrap_or_else(|| "a VMware process".into()),
                common::field(&m.machine_id)
            ));
            claims.push(OwnerClaim {
                start_ticks: (m.creation != 0).then_some(m.creation),
                ..OwnerClaim::pid(m.pid, Writers::ANY)
                    .written(Some(meta.ctime_ms()))
                    .label(label)
            });
        }
        if claims.is_empty() {
            return Judgement::unknown(
                "the lock directory holds no member file: it names no owner to check",
            )
            .because(common::age_line(c.meta, snap))
            .into();
        }
        Said::claims(owner).claim(Claim::Owners(claims)).note(
            When::IfStale,
            "VMware itself removes members whose process is gone when it next opens the virtual machine",
        )
    }
}
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_members() {
        let mut data = b"52-aa-bb 4242-123456(vmware-vmx) 7 X vm.vmx lc=1".to_vec();
        data.resize(512, 0);
        let m = parse_member(&data).unwrap();
        assert_eq!(
            (m.pid, m.creation, m.lamport, m.exclusive),
            (4242, 123456, 7, true)
        );
        assert_eq!(m.process.as_deref(), Some("vmware-vmx"));
        assert_eq!(parse_member(b"id 17-0 1 S").unwrap().creation, 0);
        assert!(parse_member(b"id 17-0 1 Q").is_none());
        assert!(is_member_name("M12345.lck"));
        assert!(!is_member_name("x.lck"));
    }
}
