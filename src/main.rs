//! The `locksmith` binary: command-line parsing and dispatch only. The terminal UI lives in
//! `tui/`, the non-interactive commands in `cli/`; the real work is in the library.

mod cli;
mod tui;

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// Find lock files left behind by crashed programs, prove which are stale, remove them safely.
///
/// With no command, opens the terminal UI on PATHs (default: the current directory and the
/// well-known lock locations of the configuration).
#[derive(Debug, Parser)]
#[command(name = "locksmith", version, args_conflicts_with_subcommands = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,

    #[command(flatten)]
    pub scan: ScanArgs,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Take a lock, run COMMAND while holding it, release it (like flock(1), self-healing).
    Lock(LockArgs),
    /// Answer, read-only, whether PIDs are alive on this host (what --ask-hosts asks over ssh).
    Inspect(InspectArgs),
}

/// Options of the scan, the report and the UI.
#[derive(Debug, Args, Clone)]
pub struct ScanArgs {
    /// Print a report instead of opening the terminal UI.
    ///
    /// The report is a table on stdout with a summary line; per-path errors (unreadable
    /// files, missing paths) follow on stderr. With --json, everything is one JSON document on
    /// stdout. Exit status: 0 no stale lock, 1 stale locks found (after --reclaim: some remain),
    /// 2 fatal error.
    #[arg(long)]
    pub scan: bool,

    /// With --scan: print the report as JSON.
    #[arg(long, requires = "scan")]
    pub json: bool,

    /// With --scan: remove every lock that is stale at the moment of removal.
    #[arg(long, requires = "scan")]
    pub reclaim: bool,

    /// With --reclaim: remove nothing, say what would be removed.
    #[arg(long, requires = "reclaim")]
    pub dry_run: bool,

    /// With --reclaim: also remove vim swap files that hold unsaved changes.
    #[arg(long, requires = "reclaim")]
    pub include_unsaved: bool,

    /// Configuration file (default: $XDG_CONFIG_HOME/locksmith/config.json, else built in).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// When to use color.
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto, value_name = "WHEN")]
    pub color: ColorChoice,

    /// Ask the hosts that foreign locks name, over ssh, whether their owners live.
    ///
    /// Runs `ssh -o BatchMode=yes HOST locksmith inspect --json --pid N ...` once per host (the
    /// configuration's `ask_hosts` sets the program, ssh arguments, timeouts, and the hosts
    /// asked even without this flag). A host that cannot answer leaves its locks foreign.
    #[arg(long)]
    pub ask_hosts: bool,

    /// UI: never reclaim anything.
    #[arg(long)]
    pub readonly: bool,

    /// UI: seconds between re-judging the verdicts.
    #[arg(long, default_value_t = 2.0, value_name = "SECS")]
    pub interval: f64,

    /// Directories or files to scan (replace the configured roots).
    #[arg(value_name = "PATH")]
    pub paths: Vec<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ColorChoice {
    Auto,
    Always,
    Never,
}

#[derive(Debug, Args, Clone)]
pub struct LockArgs {
    /// Give up after SECS seconds (0: try once). Default: wait as long as it takes.
    #[arg(long, value_name = "SECS")]
    pub timeout: Option<f64>,

    /// Refresh the lock's heartbeat every SECS seconds while COMMAND runs.
    #[arg(long, value_name = "SECS")]
    pub heartbeat: Option<f64>,

    /// The lock file to take.
    pub lockpath: PathBuf,

    /// The command to run while holding the lock.
    #[arg(last = true, required = true, value_name = "COMMAND")]
    pub command: Vec<std::ffi::OsString>,
}

#[derive(Debug, Args, Clone)]
pub struct InspectArgs {
    /// A process id to answer about (repeat for several).
    #[arg(
        long = "pid",
        value_name = "N",
        required = true,
        allow_hyphen_values = true
    )]
    pub pids: Vec<i64>,

    /// Also say whether this host's boot id is ID.
    #[arg(long, value_name = "ID")]
    pub boot_id: Option<String>,

    /// Program names the process should have (comm, executable or argv[0]).
    #[arg(long, value_name = "PROGRAM")]
    pub expect: Vec<String>,

    /// Print the answer as JSON (what --ask-hosts reads).
    #[arg(long)]
    pub json: bool,
}

fn main() {
    let cli = Cli::parse();
    let code = match cli.command {
        Some(Command::Lock(args)) => cli::lock::run(args),
        Some(Command::Inspect(args)) => cli::inspect::run(args),
        None if cli.scan.scan => cli::scan::run(cli.scan),
        None => tui::run(cli.scan),
    };
    std::process::exit(code);
}
