//! Stampede: a stale lock and several processes reclaiming it at the same instant, round after
//! round. Exactly one process must win each round: the seed's "remove, then retry" lets a
//! second reclaimer remove the fresh lock of the first, and then both win.
//!
//! The mixed variant puts reclaimers that keep kernel locks and reclaimers forced to the
//! fallback in the same herd (they must exclude each other whatever mode wrote the stale
//! lock), and now and then leaves the guard file of a reclaimer that was SIGKILLed while
//! holding it.
//!
//! The processes are this test binary re-executed (see `engine_util::child_main`). Each round
//! the winner "crashes" (exits without releasing), which leaves the stale lock of the next
//! round, and is replaced by a new process.

use std::io::Write;
use std::path::Path;

use crate::util::*;
use locksmith_engine::Verdict;

const CONTENDERS: usize = 8;
const ROUNDS: usize = 100;

struct Contender {
    group: Group,
    stdin: std::process::ChildStdin,
    answers: Answers,
}

impl Contender {
    fn spawn(mode: &str, path: &Path) -> Contender {
        let mut group = spawn_child(mode, path);
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

/// Leaves at `guard` what a reclaimer SIGKILLed while holding the guard leaves: a guard
/// record (with a kernel lock or not) whose owner is dead and holds nothing.
fn abandoned_guard(guard: &Path, kernel_lock: bool) {
    let mode = if kernel_lock { "hold" } else { "hold-fallback" };
    let mut g = spawn_child(mode, guard);
    let answers = Answers::of(&mut g);
    assert!(answers.next(30).starts_with("held "));
    g.kill();
    assert!(guard.exists(), "the killed holder left its guard");
}

/// `mode_of(i)`: the helper mode of contender `i`. `guard_every`: every so many rounds, an
/// abandoned guard is left before the round (0: never).
fn stampede(mode_of: fn(usize) -> &'static str, guard_every: usize) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("herd.lock");
    let guard = dir.path().join("herd.lock.reclaim");
    let mut herd: Vec<Contender> = (0..CONTENDERS)
        .map(|i| Contender::spawn(mode_of(i), &path))
        .collect();

    for round in 0..ROUNDS {
        if round > 0 {
            let j = locksmith_engine::Lock::new(&path)
                .inspect()
                .expect("a lock left by the crash");
            assert_eq!(j.verdict, Verdict::Stale, "round {round}: {j:?}");
            if guard_every > 0 && round % guard_every == 0 {
                abandoned_guard(&guard, round % (2 * guard_every) == 0);
            }
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
        herd[w] = Contender::spawn(mode_of(w), &path);
    }
    drop(herd);
}

#[test]
fn stampede_with_kernel_locks_has_one_winner_per_round() {
    stampede(|_| "stampede", 0);
}

#[test]
fn stampede_in_the_fallback_has_one_winner_per_round() {
    stampede(|_| "stampede-fallback", 0);
}

#[test]
fn stampede_of_mixed_modes_with_abandoned_guards_has_one_winner_per_round() {
    stampede(
        |i| {
            if i % 2 == 0 {
                "stampede"
            } else {
                "stampede-fallback"
            }
        },
        5,
    );
}
