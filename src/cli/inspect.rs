//! `locksmith inspect`: this host's read-only answer about a few PIDs, for `--ask-hosts` on
//! another host (JSON) or for a person (one line per PID). Exit status 0, or 2 when the answer
//! cannot be written.

use std::io::{self, Write};

use locksmith::remote::{self, PidStatus};
use locksmith::text::escape;

use crate::InspectArgs;

pub fn run(args: InspectArgs) -> i32 {
    let answer = remote::inspect(&args.pids, args.boot_id.as_deref(), &args.expect);
    let mut out = io::stdout().lock();
    let written = if args.json {
        serde_json::to_writer(&mut out, &answer)
            .map_err(io::Error::other)
            .and_then(|()| writeln!(out))
    } else {
        answer.processes.iter().try_for_each(|p| {
            let what = match p.state {
                PidStatus::Alive => format!(
                    "alive: {}{}",
                    escape(p.name.as_deref().unwrap_or("?")),
                    p.start_ms
                        .map(|ms| format!(", started {}", locksmith::judge::fmt_ms(ms)))
                        .unwrap_or_default()
                ),
                PidStatus::Absent => "no such process".into(),
                PidStatus::Zombie => "a zombie (exited)".into(),
                PidStatus::Exists => "exists (not readable)".into(),
                PidStatus::Invalid => "not a valid process id".into(),
            };
            writeln!(out, "{} on {}: {what}", p.pid, escape(&answer.host))
        })
    };
    match written.and_then(|()| out.flush()) {
        Ok(()) => 0,
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => 0,
        Err(e) => {
            eprintln!("locksmith inspect: cannot write the answer: {e}");
            2
        }
    }
}
