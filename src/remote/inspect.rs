//! The answering side (`locksmith inspect`): what this host says about a few PIDs. It reads
//! `/proc` and calls `kill(pid, 0)`; it opens nothing for writing and takes no lock, so a
//! question can never make this host change anything.

use super::{ANSWER_VERSION, Answer, PidAnswer, PidStatus};
use crate::probe::{HostFacts, PidState, process};

/// Answers about `pids` on this host. `boot_id`, when given, is compared with this host's;
/// `expect` (program names) with each live process's comm, executable and `argv[0]`.
pub fn inspect(pids: &[i64], boot_id: Option<&str>, expect: &[String]) -> Answer {
    let host = HostFacts::probe();
    let pid_max = process::pid_max();
    let expect: Vec<&str> = expect.iter().map(String::as_str).collect();
    let processes = pids
        .iter()
        .map(|&pid| one(pid, pid_max, &host, &expect))
        .collect();
    Answer {
        version: ANSWER_VERSION,
        host: host.hostname.clone(),
        boot_id_matches: boot_id.map(|b| host.boot_id.as_deref() == Some(b)),
        boot_id: host.boot_id,
        boot_time: host.boot_time,
        pid_ns: host.pid_ns,
        processes,
    }
}

fn one(pid: i64, pid_max: i64, host: &HostFacts, expect: &[&str]) -> PidAnswer {
    let mut a = PidAnswer {
        pid,
        state: PidStatus::Invalid,
        name: None,
        exe: None,
        cmdline: Vec::new(),
        start_ms: None,
        start_ticks: None,
        pid_ns: None,
        kernel_thread: false,
        expected: None,
    };
    if pid <= 0 || pid > pid_max {
        return a;
    }
    let facts = match process::probe(pid as i32, host) {
        PidState::Absent => {
            a.state = PidStatus::Absent;
            return a;
        }
        PidState::ExistsOpaque => {
            a.state = PidStatus::Exists;
            return a;
        }
        PidState::Zombie(f) => {
            a.state = PidStatus::Zombie;
            f
        }
        PidState::Alive(f) => {
            a.state = PidStatus::Alive;
            f
        }
    };
    a.kernel_thread = is_kernel_thread(pid);
    a.expected = (!expect.is_empty()).then(|| facts.is_one_of(expect));
    a.name = Some(facts.comm);
    a.exe = facts.exe;
    a.cmdline = facts.cmdline;
    a.start_ms = facts.start_ms;
    a.start_ticks = Some(facts.start_ticks);
    a.pid_ns = facts.pid_ns;
    a
}

#[cfg(target_os = "linux")]
fn is_kernel_thread(pid: i64) -> bool {
    process::stat_of(pid as i32).is_some_and(|s| s.flags & process::PF_KTHREAD != 0)
}

#[cfg(not(target_os = "linux"))]
fn is_kernel_thread(_pid: i64) -> bool {
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_about_ourselves_a_kernel_thread_and_nobody() {
        let me = i64::from(std::process::id());
        let a = inspect(&[me, 2, 0], None, &["locksmith".to_string()]);
        assert_eq!(a.version, ANSWER_VERSION);
        assert_eq!(a.host, crate::probe::host::hostname());
        assert_eq!(a.boot_id_matches, None);
        let p = &a.processes[0];
        assert_eq!(p.state, PidStatus::Alive);
        assert!(!p.kernel_thread);
        assert!(p.start_ms.is_some());
        // The test binary is `locksmith-<hash>`: a prefix match.
        assert_eq!(p.expected, Some(true), "{p:?}");
        assert_eq!(a.processes[2].state, PidStatus::Invalid);
        // PID 2 is kthreadd where we see the host's PID space.
        let k = &a.processes[1];
        if k.state == PidStatus::Alive {
            assert!(k.kernel_thread, "{k:?}");
        }
        let b = crate::probe::host::boot_id();
        let a = inspect(&[], b.as_deref(), &[]);
        assert_eq!(a.boot_id_matches, b.map(|_| true));
        assert_eq!(
            inspect(&[], Some("not-a-boot-id"), &[]).boot_id_matches,
            Some(false)
        );
    }
}
