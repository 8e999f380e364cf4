//! Stampede: a stale lock and several processes reclaiming it at the same instant, round after
//! round. Exactly one process must win each round: the seed's "remove, then retry" lets a
//! second reclaimer remove the fresh lock of the first, and then both win.
//!
//! The processes are this test binary re-executed (see `engine_util::child_main`). Each round
//! the winner "crashes" (exits without releasing), which leaves the stale lock of the next
//! round, and is replaced by a new process.

mod engine_util;

use std::io::Write;
use std::path::Path;

use engine_util::*;
use locksmith::Verdict;

const CONTENDERS: usize = 8;
const ROUNDS: usize = 100;

/// Helper children re-enter the test binary here.
#[test]
fn child_entry() {
    child_main();
}

struct Contender {
    group: Group,
    stdin: std::process::ChildStdin,
    answers: Answers,
}

impl Contender {
    fn spawn(mode: &str, path: &Path) -> Contender {
        let mut group = spawn_child("child_entry", mode, path);
        let stdin = group.stdin();
        let answers = Answers::of(&mut group);
        assert_eq!(answers.next(30), "ready");
        Contender {
            group,
            stdin,
            answers,
        }
    }

    fn tell(&mut self, line: &str) {
        writeln!(self.stdin, "{line}").expect("write to contender");
        self.stdin.flush().unwrap();
    }
}

fn stampede(mode: &str) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("herd.lock");
    let mut herd: Vec<Contender> = (0..CONTENDERS)
        .map(|_| Contender::spawn(mode, &path))
        .collect();

    for round in 0..ROUNDS {
        if round > 0 {
            let j = locksmith::engine::inspect(&path).expect("a lock left by the crash");
            assert_eq!(j.verdict, Verdict::Stale, "round {round}: {j:?}");
        }
        // Everyone goes at the same instant, a little ahead so all lines are delivered.
        let at = jiff::Timestamp::now().as_millisecond() + 30;
        for c in herd.iter_mut() {
            c.tell(&format!("go {at}"));
        }
        let answers: Vec<String> = herd.iter().map(|c| c.answers.next(30)).collect();
        let winners: Vec<usize> = answers
            .iter()
            .enumerate()
            .filter(|(_, a)| *a == "won")
            .map(|(i, _)| i)
            .collect();
        assert_eq!(winners.len(), 1, "round {round}: {answers:#?}");
        for a in &answers {
            assert!(a == "won" || a.starts_with("lost "), "round {round}: {a}");
        }

        // The winner crashes, holding the lock: the next round starts from a stale lock.
        let w = winners[0];
        herd[w].tell("crash");
        let status = herd[w].group.wait(30);
        assert!(
            status.success(),
            "round {round}: the winner exited with {status}"
        );
        herd[w] = Contender::spawn(mode, &path);
    }
    drop(herd);
}

#[test]
fn stampede_with_kernel_locks_has_one_winner_per_round() {
    stampede("stampede");
}

#[test]
fn stampede_in_the_fallback_has_one_winner_per_round() {
    stampede("stampede-fallback");
}
