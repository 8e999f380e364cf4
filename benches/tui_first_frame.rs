//! Benchmark of the terminal UI's responsiveness on a large tree: the real binary in a
//! pseudo-terminal, its output parsed by vt100 on a reader thread, and three times measured
//! from spawn:
//! - first frame: the header is on screen (target ≤ 100 ms);
//! - first row: a lock is listed and selected (target ≤ 1 s);
//! - scan done: the header no longer says "scanning";
//!
//! and one while the scan runs: from a key press (`?`) to the help on screen, which must not
//! wait for the scan. Then, with every lock listed, the time from a key to its effect on
//! screen: `j` (the selection moves), `G` (to the last row), `s` (sorted by the next column),
//! `S` (the order inverted), `/` and a character (the list filtered), Esc (the filter gone).
//!
//! With `TUI_BENCH_LOCKS=N` the tree is N stale pid files instead (1,000 per directory, all
//! listed: the UI with a million rows is `TUI_BENCH_LOCKS=1000000`; make it on tmpfs with
//! `TMPDIR=/dev/shm`).
//!
//! Run: `cargo bench --bench tui_first_frame` (env: `TUI_BENCH_DIRS`, `TUI_BENCH_FILES` per
//! directory, `TUI_BENCH_RUNS`). The tree is generated in a temp dir: DIRS directories of
//! FILES empty files each, with a stale pidfile in one directory of every 50. Or point
//! `TUI_BENCH_TREE` at an existing tree (e.g. one made by `benches/make_tree.py`), and
//! `TUI_BENCH_BIN` at another build of locksmith to compare two builds on the same tree.

use std::io::{Read, Write};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use portable_pty::{CommandBuilder, PtySize, native_pty_system};

const ROWS: u16 = 40;
const COLS: u16 = 140;
const DEADLINE: Duration = Duration::from_secs(600);

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A PID that names no process: a child that has exited.
fn dead_pid() -> u32 {
    let mut c = std::process::Command::new("true").spawn().unwrap();
    let pid = c.id();
    c.wait().unwrap();
    pid
}

/// `locks` stale pid files, 1,000 per directory.
fn make_locks(root: &Path, locks: usize) -> usize {
    let dead = dead_pid();
    for i in 0..locks {
        let dir = root.join(format!("d{:04}", i / 1000));
        if i % 1000 == 0 {
            std::fs::create_dir_all(&dir).unwrap();
        }
        std::fs::write(dir.join(format!("job{i:07}.pid")), format!("{dead}\n")).unwrap();
    }
    locks
}

fn make_tree(root: &Path, dirs: usize, files: usize) -> usize {
    let dead = dead_pid();
    let mut locks = 0;
    for d in 0..dirs {
        let dir = root.join(format!("d{:03}/sub{d:05}", d % 100));
        std::fs::create_dir_all(&dir).unwrap();
        for f in 0..files {
            std::fs::write(dir.join(format!("file{f:04}.txt")), b"").unwrap();
        }
        if d % 50 == 25 {
            std::fs::write(dir.join("app.pid"), format!("{dead}\n")).unwrap();
            locks += 1;
        }
    }
    locks
}

struct Times {
    first_frame: Duration,
    first_row: Duration,
    key_to_help: Option<Duration>,
    scan_done: Duration,
    /// With every lock listed: each probe's key and the time to its effect.
    keys: Vec<(&'static str, Duration)>,
}

/// A key, and how its effect shows on screen (`locks`: how many are listed).
struct Probe {
    name: &'static str,
    keys: &'static [u8],
    done: fn(&str, usize) -> bool,
}

const PROBES: &[Probe] = &[
    Probe {
        name: "j (down)",
        keys: b"j",
        done: |s, n| s.contains(&format!("2/{n}")),
    },
    Probe {
        name: "G (last row)",
        keys: b"G",
        done: |s, n| s.contains(&format!("{n}/{n}")),
    },
    Probe {
        name: "g (first row)",
        keys: b"g",
        done: |s, n| s.contains(&format!("1/{n}")),
    },
    Probe {
        name: "s (sort)",
        keys: b"s",
        done: |s, _| s.contains("DIALECT ▲"),
    },
    Probe {
        name: "S (invert)",
        keys: b"S",
        done: |s, _| s.contains("DIALECT ▼"),
    },
    Probe {
        name: "/ filter",
        keys: b"/7",
        done: |s, n| s.contains(&format!(" of {n} match")) && s.contains("/7"),
    },
    Probe {
        name: "Esc (unfilter)",
        keys: b"\x1b",
        done: |s, _| !s.contains(" match"),
    },
];

fn run_once(tree: &Path, state: &Path) -> Times {
    let pair = native_pty_system()
        .openpty(PtySize {
            rows: ROWS,
            cols: COLS,
            pixel_width: 0,
            pixel_height: 0,
        })
        .unwrap();
    let bin =
        std::env::var_os("TUI_BENCH_BIN").unwrap_or_else(|| env!("CARGO_BIN_EXE_locksmith").into());
    let mut cmd = CommandBuilder::new(bin);
    cmd.arg(tree);
    cmd.arg("--readonly");
    cmd.env("TERM", "xterm-256color");
    cmd.env("XDG_STATE_HOME", state);
    let start = Instant::now();
    let mut child = pair.slave.spawn_command(cmd).unwrap();
    drop(pair.slave);
    let mut reader = pair.master.try_clone_reader().unwrap();
    let mut writer = pair.master.take_writer().unwrap();
    let size = |n: u16| std::num::NonZeroU16::new(n).unwrap();
    let parser = Arc::new(Mutex::new(vt100::Parser::new(size(ROWS), size(COLS), 0)));
    let feed = parser.clone();
    std::thread::spawn(move || {
        let mut buf = [0u8; 16384];
        while let Ok(n) = reader.read(&mut buf) {
            if n == 0 {
                return;
            }
            feed.lock().unwrap().process(&buf[..n]);
        }
    });
    let screen = || parser.lock().unwrap().screen().contents();
    let wait = |what: &str, ok: &dyn Fn(&str) -> bool| -> Duration {
        loop {
            if ok(&screen()) {
                return start.elapsed();
            }
            assert!(start.elapsed() < DEADLINE, "no {what}:\n{}", screen());
            std::thread::sleep(Duration::from_micros(500));
        }
    };
    let first_frame = wait("first frame", &|s| s.contains(" locksmith "));
    let first_row = wait("first row", &|s| s.lines().any(|l| l.starts_with('▶')));
    // A key while the scan runs (if it still runs).
    let key_to_help = if screen().contains("scanning…") {
        let sent = Instant::now();
        writer.write_all(b"?").unwrap();
        writer.flush().unwrap();
        wait("help", &|s| s.contains("Show this help"));
        let t = sent.elapsed();
        writer.write_all(b"?").unwrap();
        writer.flush().unwrap();
        Some(t)
    } else {
        None
    };
    let scan_done = wait("end of scan", &|s| {
        s.lines()
            .next()
            .is_some_and(|l| !l.contains("scanning…") && l.contains("entries"))
    });
    let listed = screen()
        .split_whitespace()
        .find_map(|w| w.strip_prefix("1/")?.parse().ok())
        .unwrap_or(0);
    let mut keys = Vec::new();
    for p in PROBES {
        let sent = Instant::now();
        writer.write_all(p.keys).unwrap();
        writer.flush().unwrap();
        wait(p.name, &|s| (p.done)(s, listed));
        keys.push((p.name, sent.elapsed()));
    }
    writer.write_all(b"q").unwrap();
    writer.flush().unwrap();
    let quit_by = Instant::now() + Duration::from_secs(10);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > quit_by {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    Times {
        first_frame,
        first_row,
        key_to_help,
        scan_done,
        keys,
    }
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` does not: then run small.
    let benching = std::env::args().any(|a| a == "--bench");
    let dirs = env_usize("TUI_BENCH_DIRS", if benching { 2000 } else { 50 });
    let files = env_usize("TUI_BENCH_FILES", if benching { 100 } else { 5 });
    let runs = env_usize("TUI_BENCH_RUNS", if benching { 5 } else { 1 });
    let tmp = tempfile::tempdir().unwrap();
    let tree = match std::env::var_os("TUI_BENCH_TREE") {
        // A tree made elsewhere, e.g. by the scan benchmark's `benches/make_tree.py TREE`.
        Some(t) => {
            eprintln!("tree: {}", Path::new(&t).display());
            Path::new(&t).to_path_buf()
        }
        None if std::env::var_os("TUI_BENCH_LOCKS").is_some() => {
            let tree = tmp.path().join("tree");
            let made = Instant::now();
            let locks = make_locks(&tree, env_usize("TUI_BENCH_LOCKS", 1000));
            eprintln!(
                "tree: {locks} stale pidfiles (made in {:.1} s)",
                made.elapsed().as_secs_f64()
            );
            tree
        }
        None => {
            let tree = tmp.path().join("tree");
            let made = Instant::now();
            let locks = make_tree(&tree, dirs, files);
            eprintln!(
                "tree: {} entries, {locks} stale pidfiles (made in {:.1} s)",
                dirs * (files + 1) + locks,
                made.elapsed().as_secs_f64()
            );
            tree
        }
    };
    let all: Vec<Times> = (0..runs)
        .map(|_| run_once(&tree, &tmp.path().join("state")))
        .collect();
    let col = |f: &dyn Fn(&Times) -> Option<Duration>| -> String {
        let v: Vec<Duration> = all.iter().filter_map(f).collect();
        if v.is_empty() {
            return "-".into();
        }
        format!(
            "median {:>9}  min {:>9}  max {:>9}",
            ms(median(v.clone())),
            ms(*v.iter().min().unwrap()),
            ms(*v.iter().max().unwrap())
        )
    };
    println!("tui_first_frame ({runs} runs, {COLS}x{ROWS} pty)");
    println!("  first frame   {}", col(&|t| Some(t.first_frame)));
    println!("  first row     {}", col(&|t| Some(t.first_row)));
    println!("  key → help    {}", col(&|t| t.key_to_help));
    println!("  scan done     {}", col(&|t| Some(t.scan_done)));
    println!("  with every lock listed, a key to its effect:");
    for (i, p) in PROBES.iter().enumerate() {
        println!("  {:<14}{}", p.name, col(&|t| Some(t.keys[i].1)));
    }
}
