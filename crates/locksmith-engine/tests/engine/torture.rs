//! Torture: workers run critical sections in helper children (each takes the lock with
//! `acquire` and runs a shell while it holds it) while a killer SIGKILLs whole holder process
//! groups (the helper and its shell) at random. The critical section
//! checks that nobody else is inside (a process killed inside has left its marker behind, so
//! a marker naming a dead or zombie process is ignored) and increments a counter. At the end:
//! no overlap was seen, no counter update was lost, and nothing was left behind.

use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::Stdio;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use crate::util::*;

/// The size of a run.
pub struct Params {
    pub workers: usize,
    /// Completed critical sections per worker.
    pub sections: usize,
    /// At least this many holder groups must have been killed.
    pub min_kills: usize,
    /// The killer stops after this many holder kills, so the workers finish.
    pub max_kills: usize,
}

/// The critical section, run by `sh` in the test directory while the lock is held. A holder
/// killed inside has left its marker behind: its shell is no holder any more once it is gone, a
/// zombie, exiting (`PF_EXITING` in its `stat` flags) or has SIGKILL pending (its group was
/// killed: it cannot run another step of the section, though it may not have been scheduled to
/// die yet while its helper, killed with it, has already exited and released the lock).
const SECTION: &str = r#"
dead() {
  pid=$1
  st=$(cat /proc/$pid/stat 2>/dev/null) || return 0
  set -- ${st##*) }
  case $1 in Z|X) return 0 ;; esac
  [ $(( $7 & 4 )) -ne 0 ] && return 0
  for m in $(sed -n 's/^[SH][hi][dg]Pnd:[[:space:]]*/0x/p' /proc/$pid/status 2>/dev/null); do
    [ $(( m & 256 )) -ne 0 ] && return 0
  done
  return 1
}
if [ -e inside ]; then
  p=
  read p < inside || true
  if [ -n "$p" ] && ! dead "$p"; then
    echo "$$ entered while $p was inside: $(grep -E '^(State|SigPnd|ShdPnd)' /proc/$p/status 2>/dev/null | tr '\n' ' ')" >> overlaps
  fi
fi
echo $$ > inside
read n < counter
sleep 0.01
echo $((n + 1)) > counter.$$
mv -f counter.$$ counter
rm -f inside
"#;

/// A small xorshift generator (the test needs randomness, not quality).
struct Rng(u64);

impl Rng {
    fn new(salt: u64) -> Rng {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64;
        Rng((t ^ salt.wrapping_mul(0x9E37_79B9_7F4A_7C15)) | 1)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// Runs the torture in directory `d` (which it fills with `counter`, `job.lock`, ...).
pub fn run(d: &Path, p: Params) {
    std::fs::write(d.join("counter"), "0\n").unwrap();

    // Process groups currently running a `locksmith lock`, by group id.
    let running: Mutex<Vec<i32>> = Mutex::new(Vec::new());
    let done = AtomicBool::new(false);
    let holder_kills = AtomicUsize::new(0);
    let completed = AtomicUsize::new(0);
    let killed = AtomicUsize::new(0);

    std::thread::scope(|s| {
        let workers: Vec<_> = (0..p.workers)
            .map(|_| {
                s.spawn(|| {
                    let mut mine = 0;
                    while mine < p.sections {
                        let mut c = child("section", &d.join("job.lock"));
                        c.current_dir(d)
                            .env("LOCKSMITH_ENGINE_TEST_SECTION", SECTION)
                            .stdin(Stdio::null())
                            .stdout(Stdio::null())
                            .stderr(Stdio::piped());
                        let mut g = Group::spawn(c);
                        running.lock().unwrap().push(g.pid());
                        let status = g.wait(120);
                        running.lock().unwrap().retain(|&p| p != g.pid());
                        if status.success() {
                            mine += 1;
                            completed.fetch_add(1, Ordering::SeqCst);
                        } else if status.signal() == Some(libc::SIGKILL) {
                            killed.fetch_add(1, Ordering::SeqCst);
                        } else {
                            let mut err = String::new();
                            if let Some(mut e) = g.child.stderr.take() {
                                use std::io::Read;
                                let _ = e.read_to_string(&mut err);
                            }
                            panic!("a worker failed with {status}: {err}");
                        }
                    }
                })
            })
            .collect();

        let killer = s.spawn(|| {
            let mut rng = Rng::new(7);
            while !done.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(2 + rng.below(20)));
                if holder_kills.load(Ordering::SeqCst) >= p.max_kills {
                    continue;
                }
                // The group of whoever is inside right now.
                let Some(inside) = std::fs::read_to_string(d.join("inside"))
                    .ok()
                    .and_then(|s| s.trim().parse::<i32>().ok())
                else {
                    continue;
                };
                let Some((state, pgid)) = proc_state(inside) else {
                    continue;
                };
                if state == 'Z' || !running.lock().unwrap().contains(&pgid) {
                    continue;
                }
                kill_group(pgid);
                holder_kills.fetch_add(1, Ordering::SeqCst);
                // Now and then a waiter too (it may be reclaiming the stale lock).
                if rng.below(3) == 0 {
                    let others = running.lock().unwrap().clone();
                    if !others.is_empty() {
                        kill_group(others[rng.below(others.len() as u64) as usize]);
                    }
                }
            }
        });

        // Stop the killer whatever happened to the workers, then report a failed worker.
        let results: Vec<_> = workers.into_iter().map(|w| w.join()).collect();
        done.store(true, Ordering::SeqCst);
        killer.join().unwrap();
        for r in results {
            if let Err(panic) = r {
                std::panic::resume_unwind(panic);
            }
        }
    });

    let overlaps = std::fs::read_to_string(d.join("overlaps")).unwrap_or_default();
    assert!(
        overlaps.is_empty(),
        "two holders inside at once:\n{overlaps}"
    );

    let completed = completed.load(Ordering::SeqCst);
    let killed = killed.load(Ordering::SeqCst);
    let counter: usize = std::fs::read_to_string(d.join("counter"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert_eq!(completed, p.workers * p.sections);
    // Every completed section incremented; a killed one may or may not have.
    assert!(
        counter >= completed,
        "lost updates: counter {counter} < {completed} completed sections"
    );
    assert!(
        counter <= completed + killed,
        "counter {counter} > {completed} completed + {killed} killed"
    );
    let holder_kills = holder_kills.load(Ordering::SeqCst);
    assert!(
        holder_kills >= p.min_kills,
        "only {holder_kills} holder groups were killed"
    );
    assert!(killed >= p.min_kills, "only {killed} runs died by SIGKILL");

    assert!(!d.join("job.lock").exists(), "the last holder released");
    let litter: Vec<_> = std::fs::read_dir(d)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".locksmith") || n.ends_with(".reclaim"))
        .collect();
    assert!(litter.is_empty(), "left behind: {litter:?}");
}

#[test]
fn no_overlap_no_lost_update_under_random_sigkill() {
    let dir = tempfile::tempdir().unwrap();
    run(
        dir.path(),
        Params {
            workers: 6,
            sections: 50,
            min_kills: 20,
            max_kills: 40,
        },
    );
}
