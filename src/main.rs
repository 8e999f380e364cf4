//! The `locksmith` binary: command-line parsing and dispatch only. The terminal UI lives in
//! `tui/`, the non-interactive commands in `cli/`; the real work is in the library.

// Every `unsafe` block says why it is sound (a `// SAFETY:` comment).
#![deny(clippy::undocumented_unsafe_blocks)]

mod cli;
mod tui;

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum, ValueHint};

/// Find lock files left behind by crashed programs, prove which are stale, remove them safely.
///
/// With no command, opens the terminal UI on PATHs (default: the current directory and the
/// well-known lock locations of the configuration).
#[derive(Debug, Parser)]
#[command(
    name = "locksmith",
    version,
    args_conflicts_with_subcommands = true,
    after_help = "Run `locksmith --help` for examples and exit statuses.",
    after_long_help = MAIN_EXAMPLES
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,

    #[command(flatten)]
    pub scan: ScanArgs,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Start from a program's error message: which lock it is about, its verdict, what to do.
    ///
    /// MESSAGE is what the program printed (or pipe it in: `PROGRAM 2>&1 | locksmith why`).
    /// The program is recognised by its message, its lock found where the message and the
    /// program's defaults say (the current directory, the paths and PIDs the message names,
    /// $PGDATA, $CARGO_HOME, $GNUPGHOME, the display number, ...), and judged as --scan judges
    /// it. Nothing is removed unless --reclaim is given.
    #[command(after_help = WHY_EXIT_STATUS, after_long_help = WHY_EXAMPLES)]
    Why(WhyArgs),
    /// Take a lock, run COMMAND while holding it, release it (like flock(1), self-healing).
    ///
    /// SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 sent to this process are
    /// forwarded to COMMAND, which is waited for; then the lock is released.
    #[command(after_help = LOCK_EXIT_STATUS, after_long_help = LOCK_EXAMPLES)]
    Lock(LockArgs),
    /// Reclaim what is proven stale in PATHs, then become COMMAND (same PID).
    ///
    /// For a container's entrypoint, systemd's ExecStartPre= (without COMMAND) and an init
    /// container: a lock that is live, foreign or unknown is never removed; nothing is run,
    /// one line on stderr says why, and the exit status is 75 (after --wait SECS, if given).
    /// Removed locks are copied and journaled as every reclaim.
    ///
    /// With COMMAND, each PATH that names a file gets a start guard beside it
    /// (.NAME.locksmith-start): a kernel lock taken before anything is judged, which COMMAND
    /// inherits (one more descriptor) and holds while it runs. A guard held elsewhere is a
    /// service started this way that still runs; a guard released proves, in any container of
    /// this machine, that the service started last for that PATH is gone.
    #[command(after_help = START_EXIT_STATUS, after_long_help = START_EXAMPLES)]
    Start(StartArgs),
    /// Answer, read-only, whether PIDs are alive on this host (what --ask-hosts asks over ssh).
    Inspect(InspectArgs),

    /// Print a shell completion script for SHELL on stdout.
    #[command(after_long_help = COMPLETIONS_EXAMPLES)]
    Completions {
        /// The shell to complete for.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },

    /// List what reclaim removed (and what was restored), grouped by run, oldest first.
    #[command(after_long_help = JOURNAL_EXAMPLES)]
    Journal(JournalArgs),
    /// Put back what reclaim removed, exactly as it was (only where nothing is there now).
    ///
    /// What is named (an entry, a path, --last-batch, --run ID) is listed, then put back.
    /// Without a name, on a terminal, the last run that reclaimed is listed and put back
    /// only after a yes (default no); without a terminal, nothing: name what to restore.
    /// A symlink comes back as a symlink, a lock directory as a directory, a file byte for
    /// byte, with its mode, owner and mtime; the copy's sha256 is checked first, and the
    /// restore is journaled. --dry-run lists and puts back nothing.
    #[command(after_help = RESTORE_EXIT_STATUS, after_long_help = RESTORE_EXAMPLES)]
    Restore(RestoreArgs),
    /// Judge again the locks of a recording (`--scan --record FILE`), from the recording alone.
    ///
    /// Nothing of this machine is read: every fact the verdicts use comes from FILE, so the
    /// verdicts of another machine (attached to a bug report, say) can be read and checked
    /// here. The report is the one `--scan` prints.
    #[command(after_long_help = REPLAY_EXAMPLES)]
    Replay(ReplayArgs),
}

#[derive(Debug, Args, Clone)]
pub struct ReplayArgs {
    /// The recording (`locksmith --scan --record FILE`).
    #[arg(value_name = "FILE", value_hint = ValueHint::FilePath)]
    pub file: PathBuf,

    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,

    /// Compare each verdict with the one the recording was made with: list those that
    /// differ, and exit 1 if any does (0 if none).
    #[arg(long)]
    pub check: bool,
}

#[derive(Debug, Args, Clone)]
pub struct WhyArgs {
    /// Print the answer as a report of that one lock (report.schema.json) with a `why`
    /// object: the program, what its message named, where the lock was looked for, the next
    /// step.
    #[arg(long)]
    pub json: bool,

    /// Remove the lock if it is stale when judged again (copied and journaled, as every
    /// reclaim; never a lock that is not proven stale).
    #[arg(long)]
    pub reclaim: bool,

    /// Configuration file (default: $XDG_CONFIG_HOME/locksmith/config.json, else built in).
    #[arg(long, value_name = "FILE", value_hint = ValueHint::FilePath)]
    pub config: Option<PathBuf>,

    /// When to use color.
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto, value_name = "WHEN")]
    pub color: ColorChoice,

    /// The error message (default: read from standard input).
    #[arg(
        value_name = "MESSAGE",
        trailing_var_arg = true,
        allow_hyphen_values = true
    )]
    pub message: Vec<String>,
}

#[derive(Debug, Args, Clone)]
pub struct JournalArgs {
    /// Print the entries as one JSON document (also grouped by run).
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args, Clone)]
pub struct RestoreArgs {
    /// A journal entry (its number in `locksmith journal`, or its id), a run's id (all of
    /// that run), or the path of a removed lock (as given, or as `locksmith journal` prints
    /// it). Without it (and without --last-batch or --run), on a terminal: the last run that
    /// reclaimed, shown first and put back only after a yes; elsewhere nothing.
    #[arg(value_name = "ENTRY|RUN|PATH", value_hint = ValueHint::AnyPath,
          conflicts_with_all = ["last_batch", "run"])]
    pub entry: Option<std::ffi::OsString>,

    /// The last batch of the journal (what one `--scan --reclaim`, one `d` or one `D`
    /// removed last, whoever ran it).
    #[arg(long, conflicts_with = "run")]
    pub last_batch: bool,

    /// Every lock run ID removed (its id as `locksmith journal` shows it).
    #[arg(long, value_name = "ID")]
    pub run: Option<String>,

    /// Show what would be put back, and put back nothing.
    #[arg(long)]
    pub dry_run: bool,
}

/// Options of the scan, the report and the UI. The report's options need `--scan` or `--pid`
/// (both are reports).
#[derive(Debug, Args, Clone)]
#[command(group(clap::ArgGroup::new("report").args(["scan", "pid"]).multiple(true)))]
pub struct ScanArgs {
    /// Print a report instead of opening the terminal UI.
    ///
    /// The report is a table on stdout with a summary line; per-path errors (unreadable
    /// files, missing paths) follow on stderr. With --json, everything is one JSON document on
    /// stdout; --format prometheus writes metrics for node_exporter. Exit status: 0 no stale
    /// lock, 1 stale locks found (after --reclaim: some remain), 2 fatal error.
    #[arg(long)]
    pub scan: bool,

    /// With --scan: print the report as JSON (the same as --format json).
    #[arg(long, requires = "report", conflicts_with = "format")]
    pub json: bool,

    /// With --scan: the report's format. `prometheus` is the text exposition format of
    /// Prometheus, for node_exporter's textfile collector.
    #[arg(long, requires = "report", value_enum, value_name = "FORMAT")]
    pub format: Option<ReportFormat>,

    /// With --scan: write the report to FILE instead of stdout, atomically (a temporary file
    /// in the same directory, renamed over FILE once complete).
    #[arg(long, requires = "report", value_name = "FILE", value_hint = ValueHint::FilePath)]
    pub output: Option<PathBuf>,

    /// With --format prometheus: at most N per-lock age series (stale locks first, then the
    /// oldest); the other locks are counted in locksmith_lock_age_omitted.
    #[arg(long, requires = "report", value_name = "N",
          default_value_t = locksmith::report::prometheus::DEFAULT_MAX_LOCK_SERIES)]
    pub max_lock_series: usize,

    /// With --scan: the table's columns, comma-separated, in that order (default:
    /// verdict,dialect,pid,command,host,age,path); `+COL` adds COL to the default columns.
    #[arg(short = 'o', long, requires = "report", value_name = "COLS", value_delimiter = ',',
          value_parser = ColumnParser)]
    pub columns: Vec<String>,

    /// With --scan: the table's rows only on stdout, no header line; the notes and the
    /// summary go to stderr.
    #[arg(long, requires = "report")]
    pub noheadings: bool,

    /// With --scan: the table for scripts: no alignment, no summary; fields separated by one
    /// space, each escaped to be one word (a space is \x20), the verdict by its name only.
    #[arg(long, requires = "report")]
    pub raw: bool,

    /// With --scan: list only the locks (and what --reclaim did with them) with these
    /// verdicts, comma-separated, in every format. The summary still counts every lock, and
    /// --reclaim still removes every stale lock.
    #[arg(long, requires = "report", value_name = "VERDICTS", value_delimiter = ',',
          value_parser = verdict_names())]
    pub verdict: Vec<String>,

    /// Report the locks process N holds (kernel locks on its open files) and those it waits
    /// for (blocked in flock or fcntl, or retrying a dotlock), with their holders and
    /// verdicts, as lslocks -p does. A report, with or without --scan.
    #[arg(long = "pid", value_name = "N", conflicts_with_all = ["reclaim", "paths"])]
    pub pid: Option<i32>,

    /// With --scan: also write everything the verdicts used to FILE (JSON, atomically), so that
    /// `locksmith replay FILE` judges them again, on any machine.
    ///
    /// A recording holds the facts the rules asked for (the host, the processes and files
    /// asked about, kernel locks, namespaces) and what was read of each lock; no environment
    /// but the variables a rule asked for by name.
    #[arg(long, requires = "scan", value_name = "FILE", value_hint = ValueHint::FilePath,
          conflicts_with = "pid")]
    pub record: Option<PathBuf>,

    /// With --record: replace host names, user names and the names in paths by stand-ins of
    /// the same length (the same name always by the same stand-in), before the recording is
    /// shared.
    #[arg(long, requires = "record")]
    pub mask: bool,

    /// With --scan: remove every lock that is stale at the moment of removal.
    #[arg(long, requires = "scan")]
    pub reclaim: bool,

    /// With --reclaim: remove nothing, say what would be removed.
    #[arg(long, requires = "reclaim")]
    pub dry_run: bool,

    /// With --reclaim: also remove locks that hold unsaved changes (an editor's swap file).
    #[arg(long, requires = "reclaim")]
    pub include_unsaved: bool,

    /// With --reclaim: remove the one lock PATH names although it is not proven stale
    /// (unknown or foreign): a person's decision, never a directory to scan or a batch.
    /// Never a live or free lock. Copied, journaled (as forced) and restorable as any reclaim.
    #[arg(long, requires = "reclaim", value_name = "LOCK", value_hint = ValueHint::AnyPath,
          conflicts_with = "paths")]
    pub force: Option<PathBuf>,

    /// With --reclaim: also remove a lock whose copy the limits forbid (too big for
    /// `saved.max_copy_bytes`, or the state directory full); it is journaled without a copy
    /// and cannot be restored.
    #[arg(long, requires = "reclaim")]
    pub remove_uncopied: bool,

    /// Configuration file (default: $XDG_CONFIG_HOME/locksmith/config.json, else built in).
    #[arg(long, value_name = "FILE", value_hint = ValueHint::FilePath)]
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

    /// Do not look inside running containers (their /tmp, /run, /var/lock and the other
    /// configured lock places, scanned through /proc/PID/root when no PATH is given).
    #[arg(long)]
    pub no_containers: bool,

    /// UI: never reclaim anything.
    #[arg(long)]
    pub readonly: bool,

    /// UI: seconds between re-judging the verdicts (at least 0.1; not with --scan).
    #[arg(long, default_value_t = 2.0, value_name = "SECS", value_parser = interval,
          conflicts_with = "scan")]
    pub interval: f64,

    /// Directories or files to scan (replace the configured roots).
    #[arg(value_name = "PATH", value_hint = ValueHint::AnyPath)]
    pub paths: Vec<PathBuf>,
}

/// The table's columns (`--columns`): a column's name (any case), or `+NAME` to add it to
/// the default columns; `--help` and the completions list the names with what each shows.
#[derive(Debug, Clone, Copy)]
struct ColumnParser;

impl clap::builder::TypedValueParser for ColumnParser {
    type Value = String;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        _arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<String, clap::Error> {
        let text = value.to_string_lossy();
        let name = text.strip_prefix('+').unwrap_or(&text);
        match locksmith::report::Column::by_name(name) {
            Some(c) if text.starts_with('+') => Ok(format!("+{}", c.name())),
            Some(c) => Ok(c.name().to_string()),
            None => {
                let names: Vec<&str> = locksmith::report::Column::ALL
                    .iter()
                    .map(|c| c.name())
                    .collect();
                Err(clap::Error::raw(
                    clap::error::ErrorKind::InvalidValue,
                    format!(
                        "no column named {name:?} for '--columns <COLS>': the columns are {} \
                         (+COL adds one to the default columns)\n",
                        names.join(", ")
                    ),
                )
                .with_cmd(cmd))
            }
        }
    }

    fn possible_values(
        &self,
    ) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        Some(Box::new(locksmith::report::Column::ALL.iter().map(|c| {
            clap::builder::PossibleValue::new(c.name()).help(c.about())
        })))
    }
}

/// The verdicts (`--verdict`).
fn verdict_names() -> clap::builder::PossibleValuesParser {
    locksmith::Verdict::ALL
        .iter()
        .map(|v| clap::builder::PossibleValue::new(v.as_str()))
        .collect::<Vec<_>>()
        .into()
}

/// `--interval SECS`: a number of seconds of at least 0.1.
fn interval(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.1 => Ok(v),
        _ => Err(format!(
            "must be a number of seconds of at least 0.1 (got {s})"
        )),
    }
}

/// The format of the `--scan` report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ReportFormat {
    /// A table for people, with a summary line (the default).
    Table,
    /// One JSON document (report.schema.json).
    Json,
    /// Prometheus text exposition format.
    Prometheus,
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
    #[arg(value_hint = ValueHint::FilePath)]
    pub lockpath: PathBuf,

    /// The command to run while holding the lock.
    #[arg(last = true, required = true, value_name = "COMMAND")]
    pub command: Vec<std::ffi::OsString>,
}

#[derive(Debug, Args, Clone)]
pub struct StartArgs {
    /// Wait up to SECS seconds for the locks in the way to be released (or proven stale),
    /// judging them again four times a second. Default: do not wait.
    #[arg(long, value_name = "SECS")]
    pub wait: Option<f64>,

    /// The PATHs are on file systems that no other container or host writes to (a volume
    /// of this container alone): what this container sees of them is all there is, so a PID
    /// proof made here stands for them, as on the container's own root.
    #[arg(long)]
    pub unshared: bool,

    /// Configuration file (default: $XDG_CONFIG_HOME/locksmith/config.json, else built in).
    #[arg(long, value_name = "FILE", value_hint = ValueHint::FilePath)]
    pub config: Option<PathBuf>,

    /// The service's lock files, or directories of them (a PATH that does not exist is not
    /// in the way).
    #[arg(value_name = "PATH", required = true, value_hint = ValueHint::AnyPath)]
    pub paths: Vec<PathBuf>,

    /// The service to run in this process once PATHs are clear (none: exit 0).
    #[arg(last = true, value_name = "COMMAND")]
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
    use locksmith::reclaim::{Via, set_via};
    set_via(match &cli.command {
        Some(Command::Start(_)) => Via::Start,
        Some(Command::Restore(_)) => Via::Restore,
        _ if cli.scan.scan => Via::Scan,
        _ => Via::Ui,
    });
    let code = match cli.command {
        Some(Command::Why(args)) => cli::why::run(args),
        Some(Command::Lock(args)) => cli::lock::run(args),
        Some(Command::Start(args)) => cli::start::run(args),
        Some(Command::Inspect(args)) => cli::inspect::run(args),
        Some(Command::Completions { shell }) => cli::completions::run(shell),
        Some(Command::Journal(args)) => cli::journal::run(args),
        Some(Command::Restore(args)) => cli::restore::run(args),
        Some(Command::Replay(args)) => cli::replay::run(args),
        // `--pid N` is a report, with or without --scan.
        None if cli.scan.scan || cli.scan.pid.is_some() => cli::scan::run(cli.scan),
        None => tui::run(cli.scan),
    };
    std::process::exit(code);
}

// The texts after `--help`: an example of each use, and the exit statuses. The man pages
// render them as their EXAMPLES and EXIT STATUS sections.

const MAIN_EXAMPLES: &str = include_str!("cli/help/main-examples.txt");

const WHY_EXIT_STATUS: &str = "\
Exit status: 0 the lock was found and is not stale (or --reclaim removed it); 1 it is stale
and still there; 2 error; 3 no lock found (a message locksmith does not know, or its lock is
not where its program keeps it).";

const WHY_EXAMPLES: &str = include_str!("cli/help/why-examples.txt");

const START_EXIT_STATUS: &str = "\
Exit status: COMMAND's own (it runs in this process); without COMMAND, 0 once PATHs are
clear; 75 a lock is in the way (live, foreign, unknown, or not removable); 2 bad argument or
configuration, or a PATH that cannot be examined; 126 COMMAND cannot be run; 127 COMMAND not
found.";

const START_EXAMPLES: &str = include_str!("cli/help/start-examples.txt");

const LOCK_EXIT_STATUS: &str = "\
Exit status: COMMAND's own status; 75 the lock is still held when --timeout runs out; 2 bad
argument, missing directory, permission denied, or not a lock file; 126 COMMAND cannot be run;
127 COMMAND not found; 128+N COMMAND was killed by signal N.";

const LOCK_EXAMPLES: &str = "\
Examples:
  Run a nightly job at most once at a time; a crash (even kill -9) never
  leaves the lock behind:
    locksmith lock /var/lock/nightly.lock -- /usr/local/bin/nightly --full
  Give up after 30 seconds if someone else holds it:
    locksmith lock --timeout 30 build.lock -- make release
  Try once, and tell a held lock from a failure in a script:
    locksmith lock --timeout 0 job.lock -- ./job.sh; [ $? -eq 75 ] && echo busy

Exit status:
  COMMAND's   COMMAND ran: its own exit status is passed on
  75          the lock is still held (by a live owner, or one not provably
              gone) when --timeout runs out (EX_TEMPFAIL); a line on stderr
              names the holder
  2           bad argument, missing directory, permission denied, the path
              is a directory or not a lock file
  126         COMMAND cannot be run
  127         COMMAND not found
  128+N       COMMAND was killed by signal N";

const JOURNAL_EXAMPLES: &str = "\
Examples:
  What reclaim removed, by run, numbered for `locksmith restore`:
    locksmith journal
  The same for a script (paths lossless: `\\\\` is a backslash, `\\xNN` a raw byte):
    locksmith journal --json | jq '.entries[] | select(.event == \"reclaim\") | .path'

Exit status:
  0   listed
  2   the state directory cannot be used (refused as unsafe, or no HOME)";

const RESTORE_EXIT_STATUS: &str = "\
Exit status: 0 every lock named was restored (with --dry-run: there is something to
restore); 1 nothing to restore, the answer was no, or a lock was refused (something stands
at its path, no copy was kept, already restored, a symlink on the way) or failed, and that
lock was not changed; 2 nothing named and no terminal to ask on.";

const RESTORE_EXAMPLES: &str = "\
Examples:
  See what the last run that reclaimed removed, and put it back after a yes:
    locksmith restore
  Undo entry 3 of `locksmith journal`, or the last reclaim of a path:
    locksmith restore 3
    locksmith restore /run/user/1000/daemon.pid
  In a script: what the last batch removed, first shown, then put back:
    locksmith restore --last-batch --dry-run
    locksmith restore --last-batch
  Undo an older run, by the id `locksmith journal` shows:
    locksmith restore --run 20261130T165939.566Z-1082-3fa2c1d9

Exit status:
  0   every lock named was restored (--dry-run: something to restore)
  1   nothing to restore, the answer was no, or a lock was refused
      (something stands at its path, no copy was kept, already restored,
      a symlink on the way) or failed; that lock was not changed
  2   nothing named, and no terminal to ask on";

const REPLAY_EXAMPLES: &str = "\
Examples:
  Record what a scan saw, with names masked, to attach to a bug report:
    locksmith --scan --record evidence.json --mask /srv/app
  Judge it again here, and say whether any verdict comes out otherwise:
    locksmith replay evidence.json
    locksmith replay --check evidence.json

Exit status:
  0   no stale lock (with --check: every verdict as recorded)
  1   stale locks (with --check: some verdict differs)
  2   the recording cannot be read";

const COMPLETIONS_EXAMPLES: &str = "\
Examples:
  bash (bash-completion loads it on demand):
    locksmith completions bash \\
      > ~/.local/share/bash-completion/completions/locksmith
  zsh (a directory in your $fpath):
    locksmith completions zsh > ~/.zfunc/_locksmith
  fish:
    locksmith completions fish > ~/.config/fish/completions/locksmith.fish";
