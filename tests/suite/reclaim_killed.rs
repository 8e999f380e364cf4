//! A reclaim killed with SIGKILL at random points loses nothing: the real binary reclaims
//! 10,000 stale pid files and is killed, several times, at a random moment (a random delay
//! after it starts, or after its journal has grown by a random amount, then a random delay:
//! before its first group, while a group is copied, between a group's sync and its last
//! removal). After each kill, every lock gone from its name has one reclaim line that nothing
//! cancels, whose copy holds the lock's exact content, and no lock has two such lines. A
//! reclaim run to its end then removes the rest (putting back what a killed run left under a
//! private name), and `locksmith restore` brings back a sample of them, identical: content,
//! mode and mtime. The seed is printed; `LOCKSMITH_KILL_SEED=N` runs the same draws again.

use std::collections::{HashMap, HashSet};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::util::{self, Env, assert_code};

const LOCKS: usize = 10_000;
const PER_DIR: usize = 1_000;
const KILLS: usize = 3;

/// xorshift64*: the draws of one seed, the same on every machine.
struct Draws(u64);

impl Draws {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

fn seed() -> u64 {
    if let Some(s) = std::env::var("LOCKSMITH_KILL_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
    {
        return s;
    }
    use std::hash::{BuildHasher, RandomState};
    RandomState::new().hash_one(std::time::SystemTime::now()) | 1
}

/// One lock of the tree: its path and what it was.
struct Lock {
    path: PathBuf,
    content: Vec<u8>,
    mtime: (i64, i64),
    mode: u32,
}

fn make_tree(root: &Path) -> Vec<Lock> {
    // Twenty different dead PIDs, so that the copies differ from each other.
    let dead: Vec<i32> = (0..20).map(|_| util::dead_pid()).collect();
    // Written a minute ago, in this boot: their dead PIDs prove them stale, on any machine.
    let base = util::in_this_boot_ms(60).div_euclid(1000);
    (0..LOCKS)
        .map(|i| {
            let dir = root.join(format!("d{:02}", i / PER_DIR));
            if i % PER_DIR == 0 {
                std::fs::create_dir_all(&dir).unwrap();
            }
            let path = dir.join(format!("job{i:05}.pid"));
            let content = format!("{}\n", dead[i % dead.len()]).into_bytes();
            std::fs::write(&path, &content).unwrap();
            let mtime = (base + (i / 1000) as i64, (i % 1000) as i64 * 1_000_000 + 7);
            util::set_mtime(&path, mtime.0, mtime.1);
            let mode = std::fs::metadata(&path).unwrap().mode() & 0o7777;
            Lock {
                path,
                content,
                mtime,
                mode,
            }
        })
        .collect()
}

/// The journal's entries (a line cut short by a kill is skipped: there is at most one per
/// kill, and it never counts), and how many lines did not parse.
fn journal(env: &Env) -> (Vec<serde_json::Value>, usize) {
    let text = std::fs::read(env.state_dir().join("journal.jsonl")).unwrap_or_default();
    let mut bad = 0;
    let entries = text
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .filter_map(|l| {
            let v = serde_json::from_slice(l).ok();
            bad += usize::from(v.is_none());
            v
        })
        .collect();
    (entries, bad)
}

/// The reclaim lines that nothing cancels or restores, by path.
fn standing(entries: &[serde_json::Value]) -> HashMap<String, Vec<&serde_json::Value>> {
    let settled: HashSet<&str> = entries
        .iter()
        .filter_map(|e| e["cancels"].as_str().or(e["restores"].as_str()))
        .collect();
    let mut out: HashMap<String, Vec<&serde_json::Value>> = HashMap::new();
    for e in entries {
        if e["event"] == "reclaim" && !settled.contains(e["id"].as_str().unwrap()) {
            out.entry(e["path"].as_str().unwrap().to_string())
                .or_default()
                .push(e);
        }
    }
    out
}

/// Every lock gone from its name has exactly one standing reclaim line whose copy is the
/// lock (read for the locks not in `seen`, which gets them), and no lock has two; no id is
/// journaled twice. Returns how many are gone.
fn check(
    env: &Env,
    locks: &[Lock],
    seen: &mut HashSet<(String, Option<u64>)>,
    when: &str,
) -> usize {
    let (entries, bad) = journal(env);
    let mut ids = HashSet::new();
    for e in &entries {
        assert!(
            ids.insert(e["id"].as_str().unwrap()),
            "{when}: {e} journaled twice"
        );
    }
    let standing = standing(&entries);
    let mut gone = 0;
    for lock in locks {
        let key = lock.path.to_str().unwrap();
        let lines = standing.get(key).map_or(&[][..], Vec::as_slice);
        assert!(
            lines.len() <= 1,
            "{when}: {key} journaled {} times: {lines:?}",
            lines.len()
        );
        if lock.path.exists() {
            continue;
        }
        gone += 1;
        let [line] = lines else {
            panic!("{when}: {key} is gone and no reclaim line stands for it ({bad} lines cut)");
        };
        let saved_to = line["saved_to"].as_str().unwrap();
        let at = line["saved_offset"].as_u64();
        if !seen.insert((saved_to.to_string(), at)) {
            continue;
        }
        let copy = std::fs::read(saved_to)
            .map(|all| util::copy_part(line, all))
            .unwrap_or_else(|e| panic!("{when}: the copy of {key}: {e}: {line}"));
        assert_eq!(copy, lock.content, "{when}: the copy of {key}");
        assert_eq!(line["meta"]["mtime"], lock.mtime.0, "{when}: {line}");
        assert_eq!(line["meta"]["mtime_nsec"], lock.mtime.1, "{when}: {line}");
    }
    gone
}

/// The names left under a private name beside the locks.
fn aside(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for d in std::fs::read_dir(root).unwrap() {
        for e in std::fs::read_dir(d.unwrap().path()).unwrap() {
            let p = e.unwrap().path();
            if p.to_string_lossy().contains(".locksmith-aside-") {
                out.push(p);
            }
        }
    }
    out
}

/// The test's directory on tmpfs (`/dev/shm`, `TMPFS_MAGIC`) when there is one: a kill cannot lose what
/// the page cache holds, so the disk adds only its sync latency (and its other writers').
// The type of `f_type` differs between platforms.
#[allow(clippy::unnecessary_cast)]
fn env_in_memory() -> Env {
    let shm = Path::new("/dev/shm");
    let on_tmpfs = rustix::fs::statfs(shm).is_ok_and(|s| s.f_type as i64 == 0x0102_1994);
    if !on_tmpfs {
        return Env::new();
    }
    let dir = tempfile::Builder::new()
        .prefix("locksmith-test-")
        .tempdir_in(shm)
        .unwrap();
    std::fs::create_dir_all(dir.path().join("config")).unwrap();
    Env { dir }
}

#[test]
fn a_reclaim_killed_at_random_points_loses_nothing_and_the_next_finishes_it() {
    let seed = seed();
    eprintln!("kill -9 reclaim: seed {seed} (LOCKSMITH_KILL_SEED={seed} draws the same again)");
    let mut draws = Draws(seed);
    let env = env_in_memory();
    let root = env.path().join("tree");
    let locks = make_tree(&root);
    let journal_path = env.state_dir().join("journal.jsonl");
    let mut gone = 0;
    let mut left_aside = 0;
    let mut seen = HashSet::new();
    for kill in 0..KILLS {
        let size = |p: &Path| std::fs::metadata(p).map_or(0, |m| m.len());
        let before = size(&journal_path);
        // A journal line is some 700 bytes: a random point among the lines still to come, or
        // (one time in four) a random moment from the start, scan included.
        let to_come = (LOCKS - gone) as u64 * 700;
        let (grown, delay) = if draws.below(4) == 0 {
            (0, Duration::from_millis(draws.below(3000)))
        } else {
            (
                1 + draws.below(to_come),
                Duration::from_millis(draws.below(300)),
            )
        };
        let mut child = env
            .cmd([
                "--scan".as_ref(),
                "--reclaim".as_ref(),
                "--json".as_ref(),
                root.as_os_str(),
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let started = Instant::now();
        let mut exited = None;
        while exited.is_none() && size(&journal_path) < before + grown {
            assert!(
                started.elapsed() < util::DEADLINE,
                "the reclaim never got there"
            );
            exited = child.try_wait().unwrap();
            std::thread::sleep(Duration::from_millis(2));
        }
        std::thread::sleep(delay);
        if exited.is_none() {
            rustix::process::kill_process(
                rustix::process::Pid::from_child(&child),
                rustix::process::Signal::KILL,
            )
            .unwrap();
        }
        let status = child.wait().unwrap();
        let ran = started.elapsed();
        let now = check(&env, &locks, &mut seen, &format!("after kill {kill}"));
        let moved = aside(&root).len();
        eprintln!(
            "kill {kill}: {status} after {ran:?}, the journal grown by {} bytes, then \
             {delay:?}: {} gone now, {moved} of them under a private name",
            size(&journal_path) - before,
            now as i64 - gone as i64,
        );
        // Only what a killed run left under a private name comes back (put back by the next).
        assert!(now + left_aside >= gone, "a lock came back");
        gone = now;
        left_aside = moved;
    }

    // One reclaim to its end finishes the rest.
    let out = env.run(["--scan".as_ref(), "--reclaim".as_ref(), root.as_os_str()]);
    assert_code(&out, 0);
    assert_eq!(
        aside(&root),
        Vec::<PathBuf>::new(),
        "left under a private name"
    );
    assert_eq!(
        check(&env, &locks, &mut seen, "after the last reclaim"),
        LOCKS
    );

    // A sample put back by `locksmith restore`, each exactly as it was (each restore reads
    // the whole journal: a few).
    let (entries, _) = journal(&env);
    let standing = standing(&entries);
    for _ in 0..4 {
        let lock = &locks[draws.below(LOCKS as u64) as usize];
        if lock.path.exists() {
            continue;
        }
        let id = standing[lock.path.to_str().unwrap()][0]["id"]
            .as_str()
            .unwrap()
            .to_string();
        assert_code(&env.run(["restore", id.as_str()]), 0);
        assert_eq!(std::fs::read(&lock.path).unwrap(), lock.content);
        let m = std::fs::symlink_metadata(&lock.path).unwrap();
        assert_eq!((m.mtime(), m.mtime_nsec()), lock.mtime);
        assert_eq!(m.mode() & 0o7777, lock.mode, "{}", lock.path.display());
    }
}
