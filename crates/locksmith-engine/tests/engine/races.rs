//! The reclaim races, made deterministic: a reclaimer is stopped while it holds the right to
//! remove a stale lock (in `reclaim_with`'s `before_unlink`), and other processes act
//! meanwhile.
//!
//! - Reclaimers in kernel-lock mode and in the fallback must exclude each other, whatever
//!   mode wrote the stale lock: otherwise one removes the stale lock and takes the lock, and
//!   the other, resuming, removes that fresh lock.
//! - A reclaimer whose guard file was taken from it must not remove anything.
//! - A guard with a kernel lock held on it is never abandoned, however old.

use std::io::Write;
use std::path::Path;

use crate::util::*;
use locksmith_engine::Lock;
use locksmith_engine::Verdict;

/// Leaves a stale lock at `path`: its holder (kernel lock or fallback) is SIGKILLed.
fn stale_lock(path: &Path, kernel_lock: bool) {
    let mode = if kernel_lock { "hold" } else { "hold-fallback" };
    let mut g = spawn_child(mode, path);
    let answers = Answers::of(&mut g);
    assert!(answers.next(30).starts_with("held "));
    g.kill();
    let j = Lock::new(path).inspect().unwrap();
    assert_eq!(j.verdict, Verdict::Stale, "{j:?}");
}

/// A process stopped inside `reclaim_with`, holding the right to remove the lock at `path`.
struct Paused {
    group: Group,
    stdin: std::process::ChildStdin,
    answers: Answers,
}

impl Paused {
    fn start(path: &Path) -> Paused {
        let mut group = spawn_child("reclaim-pause", path);
        let stdin = group.stdin();
        let answers = Answers::of(&mut group);
        assert_eq!(answers.next(30), "paused");
        Paused {
            group,
            stdin,
            answers,
        }
    }

    /// Lets it go on; its answer (`reclaimed` or `error <why>`).
    fn resume(mut self) -> String {
        writeln!(self.stdin, "go").unwrap();
        self.stdin.flush().unwrap();
        let answer = self.answers.next(30);
        self.group.kill();
        answer
    }
}

fn mixed_reclaimers_exclude_each_other(stale_has_kernel_lock: bool) {
    for fallback in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.lock");
        stale_lock(&path, stale_has_kernel_lock);
        let paused = Paused::start(&path);

        // Another reclaimer, of either mode, must not get in while the first holds the right.
        let r = Lock::new(&path).force_fallback(fallback).try_acquire();
        let won = r.is_ok();
        let answer = paused.resume();
        assert!(
            !won,
            "fallback={fallback}: took the lock while another process was removing it"
        );
        assert!(r.unwrap_err().is_held());
        assert_eq!(answer, "reclaimed", "fallback={fallback}");
        assert!(!path.exists());

        // Afterwards the lock is free for anyone.
        let g = Lock::new(&path)
            .force_fallback(fallback)
            .try_acquire()
            .unwrap();
        assert!(g.still_ours().unwrap());
        g.release().unwrap();
    }
}

#[test]
fn reclaimers_of_both_modes_exclude_each_other_on_a_kernel_locked_stale_lock() {
    mixed_reclaimers_exclude_each_other(true);
}

#[test]
fn reclaimers_of_both_modes_exclude_each_other_on_a_fallback_stale_lock() {
    mixed_reclaimers_exclude_each_other(false);
}

#[test]
fn a_reclaimer_whose_guard_was_taken_removes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.lock");
    let guard = dir.path().join("x.lock.reclaim");
    stale_lock(&path, false);
    let before = std::fs::read(&path).unwrap();
    let paused = Paused::start(&path);
    assert!(
        guard.exists(),
        "a fallback record is reclaimed under the guard"
    );

    // Someone else removes the guard and puts their own in its place.
    std::fs::remove_file(&guard).unwrap();
    std::fs::write(&guard, engine_record(std::process::id() as i64, &[])).unwrap();

    let answer = paused.resume();
    assert!(answer.starts_with("error "), "{answer}");
    assert_eq!(
        std::fs::read(&path).unwrap(),
        before,
        "the lock was removed"
    );
    assert!(guard.exists(), "the other process's guard was removed");
}

#[test]
fn a_guard_with_a_kernel_lock_held_is_never_abandoned() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.lock");
    let guard = dir.path().join("x.lock.reclaim");
    stale_lock(&path, false);

    // A live process holds the guard (with its OFD lock), for longer than any guard lives
    // (30 s).
    let mut holder = spawn_child("hold", &guard);
    let answers = Answers::of(&mut holder);
    assert!(answers.next(30).starts_with("held "));
    age(&guard, 60);
    let before = std::fs::read(&guard).unwrap();

    for fallback in [true, false] {
        let r = Lock::new(&path).force_fallback(fallback).try_acquire();
        assert!(
            r.is_err(),
            "fallback={fallback}: took the lock past a held guard"
        );
        assert!(r.unwrap_err().is_held());
        assert_eq!(
            std::fs::read(&guard).unwrap(),
            before,
            "the guard was removed"
        );
        assert!(path.exists());
    }

    // Once its holder is gone the guard is abandoned: cleared, and the lock reclaimed.
    holder.kill();
    let g = Lock::new(&path).force_fallback(true).try_acquire().unwrap();
    assert!(!guard.exists());
    g.release().unwrap();
}
