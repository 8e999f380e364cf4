# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_locksmith_global_optspecs
    string join \n scan json format= output= max-lock-series= o/columns= noheadings raw verdict= pid= record= mask reclaim dry-run include-unsaved force= remove-uncopied config= color= ask-hosts no-containers readonly interval= h/help V/version
end

function __fish_locksmith_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_locksmith_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_locksmith_using_subcommand
    set -l cmd (__fish_locksmith_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c locksmith -n "__fish_locksmith_needs_command" -l format -d 'With --scan: the report\'s format. `prometheus` is the text exposition format of Prometheus, for node_exporter\'s textfile collector' -r -f -a "table\t'A table for people, with a summary line (the default)'
json\t'One JSON document (report.schema.json)'
prometheus\t'Prometheus text exposition format'"
complete -c locksmith -n "__fish_locksmith_needs_command" -l output -d 'With --scan: write the report to FILE instead of stdout, atomically (a temporary file in the same directory, renamed over FILE once complete)' -r -F
complete -c locksmith -n "__fish_locksmith_needs_command" -l max-lock-series -d 'With --format prometheus: at most N per-lock age series (stale locks first, then the oldest); the other locks are counted in locksmith_lock_age_omitted' -r
complete -c locksmith -n "__fish_locksmith_needs_command" -s o -l columns -d 'With --scan: the table\'s columns, comma-separated, in that order (default: verdict,dialect,pid,command,host,age,path); `+COL` adds COL to the default columns' -r -f -a "verdict\t'the verdict, with its symbol'
dialect\t'the lock format (pidfile, mkdir-lock, flock, ...)'
pid\t'a live lock\'s holder\'s PID, else the owner\'s'
command\t'the live process\'s name (or a holder\'s)'
host\t'the owner\'s host, or its container (ctr:NAME), sandbox (sandbox:NAME) or PID namespace (ns:INODE)'
age\t'time since the lock was last modified'
path\t'the lock\'s path'
size\t'size in bytes'
kind\t'file, symlink or dir'
modified\t'when the lock was last modified (RFC 3339)'
fs\t'the file system\'s type (ext4, nfs4, fuse.sshfs, ...)'
evidence\t'the first evidence line: why it has its verdict'
waiters\t'the processes waiting for it (PID and name, +N for more): the PID column is what lslocks calls their BLOCKER'"
complete -c locksmith -n "__fish_locksmith_needs_command" -l verdict -d 'With --scan: list only the locks (and what --reclaim did with them) with these verdicts, comma-separated, in every format. The summary still counts every lock, and --reclaim still removes every stale lock' -r -f -a "stale\t''
live\t''
foreign\t''
unknown\t''
free\t''"
complete -c locksmith -n "__fish_locksmith_needs_command" -l pid -d 'Report the locks process N holds (kernel locks on its open files) and those it waits for (blocked in flock or fcntl, or retrying a dotlock), with their holders and verdicts, as lslocks -p does. A report, with or without --scan' -r
complete -c locksmith -n "__fish_locksmith_needs_command" -l record -d 'With --scan: also write everything the verdicts used to FILE (JSON, atomically), so that `locksmith replay FILE` judges them again, on any machine' -r -F
complete -c locksmith -n "__fish_locksmith_needs_command" -l force -d 'With --reclaim: remove the one lock PATH names although it is not proven stale (unknown or foreign): a person\'s decision, never a directory to scan or a batch. Never a live or free lock. Copied, journaled (as forced) and restorable as any reclaim' -r -F
complete -c locksmith -n "__fish_locksmith_needs_command" -l config -d 'Configuration file (default: $XDG_CONFIG_HOME/locksmith/config.json, else built in)' -r -F
complete -c locksmith -n "__fish_locksmith_needs_command" -l color -d 'When to use color' -r -f -a "auto\t''
always\t''
never\t''"
complete -c locksmith -n "__fish_locksmith_needs_command" -l interval -d 'UI: seconds between re-judging the verdicts (at least 0.1; not with --scan)' -r
complete -c locksmith -n "__fish_locksmith_needs_command" -l scan -d 'Print a report instead of opening the terminal UI'
complete -c locksmith -n "__fish_locksmith_needs_command" -l json -d 'With --scan: print the report as JSON (the same as --format json)'
complete -c locksmith -n "__fish_locksmith_needs_command" -l noheadings -d 'With --scan: the table\'s rows only on stdout, no header line; the notes and the summary go to stderr'
complete -c locksmith -n "__fish_locksmith_needs_command" -l raw -d 'With --scan: the table for scripts: no alignment, no summary; fields separated by one space, each escaped to be one word (a space is \\x20), the verdict by its name only'
complete -c locksmith -n "__fish_locksmith_needs_command" -l mask -d 'With --record: replace host names, user names and the names in paths by stand-ins of the same length (the same name always by the same stand-in), before the recording is shared'
complete -c locksmith -n "__fish_locksmith_needs_command" -l reclaim -d 'With --scan: remove every lock that is stale at the moment of removal'
complete -c locksmith -n "__fish_locksmith_needs_command" -l dry-run -d 'With --reclaim: remove nothing, say what would be removed'
complete -c locksmith -n "__fish_locksmith_needs_command" -l include-unsaved -d 'With --reclaim: also remove locks that hold unsaved changes (an editor\'s swap file)'
complete -c locksmith -n "__fish_locksmith_needs_command" -l remove-uncopied -d 'With --reclaim: also remove a lock whose copy the limits forbid (too big for `saved.max_copy_bytes`, or the state directory full); it is journaled without a copy and cannot be restored'
complete -c locksmith -n "__fish_locksmith_needs_command" -l ask-hosts -d 'Ask the hosts that foreign locks name, over ssh, whether their owners live'
complete -c locksmith -n "__fish_locksmith_needs_command" -l no-containers -d 'Do not look inside running containers (their /tmp, /run, /var/lock and the other configured lock places, scanned through /proc/PID/root when no PATH is given)'
complete -c locksmith -n "__fish_locksmith_needs_command" -l readonly -d 'UI: never reclaim anything'
complete -c locksmith -n "__fish_locksmith_needs_command" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c locksmith -n "__fish_locksmith_needs_command" -s V -l version -d 'Print version'
complete -c locksmith -n "__fish_locksmith_needs_command; and __fish_locksmith_first_word" -a "why" -d 'Start from a program\'s error message: which lock it is about, its verdict, what to do'
complete -c locksmith -n "__fish_locksmith_needs_command; and __fish_locksmith_first_word" -a "lock" -d 'Take a lock, run COMMAND while holding it, release it (like flock(1), self-healing)'
complete -c locksmith -n "__fish_locksmith_needs_command; and __fish_locksmith_first_word" -a "start" -d 'Reclaim what is proven stale in PATHs, then become COMMAND (same PID)'
complete -c locksmith -n "__fish_locksmith_needs_command; and __fish_locksmith_first_word" -a "inspect" -d 'Answer, read-only, whether PIDs are alive on this host (what --ask-hosts asks over ssh)'
complete -c locksmith -n "__fish_locksmith_needs_command; and __fish_locksmith_first_word" -a "completions" -d 'Print a shell completion script for SHELL on stdout'
complete -c locksmith -n "__fish_locksmith_needs_command; and __fish_locksmith_first_word" -a "journal" -d 'List what reclaim removed (and what was restored), grouped by run, oldest first'
complete -c locksmith -n "__fish_locksmith_needs_command; and __fish_locksmith_first_word" -a "restore" -d 'Put back what reclaim removed, exactly as it was (only where nothing is there now)'
complete -c locksmith -n "__fish_locksmith_needs_command; and __fish_locksmith_first_word" -a "replay" -d 'Judge again the locks of a recording (`--scan --record FILE`), from the recording alone'
complete -c locksmith -n "__fish_locksmith_needs_command; and __fish_locksmith_first_word" -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c locksmith -n "__fish_locksmith_using_subcommand why" -l config -d 'Configuration file (default: $XDG_CONFIG_HOME/locksmith/config.json, else built in)' -r -F
complete -c locksmith -n "__fish_locksmith_using_subcommand why" -l color -d 'When to use color' -r -f -a "auto\t''
always\t''
never\t''"
complete -c locksmith -n "__fish_locksmith_using_subcommand why" -l json -d 'Print the answer as a report of that one lock (report.schema.json) with a `why` object: the program, what its message named, where the lock was looked for, the next step'
complete -c locksmith -n "__fish_locksmith_using_subcommand why" -l reclaim -d 'Remove the lock if it is stale when judged again (copied and journaled, as every reclaim; never a lock that is not proven stale)'
complete -c locksmith -n "__fish_locksmith_using_subcommand why" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c locksmith -n "__fish_locksmith_using_subcommand lock" -l timeout -d 'Give up after SECS seconds (0: try once). Default: wait as long as it takes' -r
complete -c locksmith -n "__fish_locksmith_using_subcommand lock" -l heartbeat -d 'Refresh the lock\'s heartbeat every SECS seconds while COMMAND runs' -r
complete -c locksmith -n "__fish_locksmith_using_subcommand lock" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c locksmith -n "__fish_locksmith_using_subcommand start" -l wait -d 'Wait up to SECS seconds for the locks in the way to be released (or proven stale), judging them again four times a second. Default: do not wait' -r
complete -c locksmith -n "__fish_locksmith_using_subcommand start" -l config -d 'Configuration file (default: $XDG_CONFIG_HOME/locksmith/config.json, else built in)' -r -F
complete -c locksmith -n "__fish_locksmith_using_subcommand start" -l unshared -d 'The PATHs are on file systems that no other container or host writes to (a volume of this container alone): what this container sees of them is all there is, so a PID proof made here stands for them, as on the container\'s own root'
complete -c locksmith -n "__fish_locksmith_using_subcommand start" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c locksmith -n "__fish_locksmith_using_subcommand inspect" -l pid -d 'A process id to answer about (repeat for several)' -r
complete -c locksmith -n "__fish_locksmith_using_subcommand inspect" -l boot-id -d 'Also say whether this host\'s boot id is ID' -r
complete -c locksmith -n "__fish_locksmith_using_subcommand inspect" -l expect -d 'Program names the process should have (comm, executable or argv[0])' -r
complete -c locksmith -n "__fish_locksmith_using_subcommand inspect" -l json -d 'Print the answer as JSON (what --ask-hosts reads)'
complete -c locksmith -n "__fish_locksmith_using_subcommand inspect" -s h -l help -d 'Print help'
complete -c locksmith -n "__fish_locksmith_using_subcommand completions" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c locksmith -n "__fish_locksmith_using_subcommand journal" -l json -d 'Print the entries as one JSON document (also grouped by run)'
complete -c locksmith -n "__fish_locksmith_using_subcommand journal" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c locksmith -n "__fish_locksmith_using_subcommand restore" -l run -d 'Every lock run ID removed (its id as `locksmith journal` shows it)' -r
complete -c locksmith -n "__fish_locksmith_using_subcommand restore" -l last-batch -d 'The last batch of the journal (what one `--scan --reclaim`, one `d` or one `D` removed last, whoever ran it)'
complete -c locksmith -n "__fish_locksmith_using_subcommand restore" -l dry-run -d 'Show what would be put back, and put back nothing'
complete -c locksmith -n "__fish_locksmith_using_subcommand restore" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c locksmith -n "__fish_locksmith_using_subcommand replay" -l json -d 'Print the report as JSON'
complete -c locksmith -n "__fish_locksmith_using_subcommand replay" -l check -d 'Compare each verdict with the one the recording was made with: list those that differ, and exit 1 if any does (0 if none)'
complete -c locksmith -n "__fish_locksmith_using_subcommand replay" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c locksmith -n "__fish_locksmith_using_subcommand help; and not __fish_seen_subcommand_from why lock start inspect completions journal restore replay help" -f -a "why" -d 'Start from a program\'s error message: which lock it is about, its verdict, what to do'
complete -c locksmith -n "__fish_locksmith_using_subcommand help; and not __fish_seen_subcommand_from why lock start inspect completions journal restore replay help" -f -a "lock" -d 'Take a lock, run COMMAND while holding it, release it (like flock(1), self-healing)'
complete -c locksmith -n "__fish_locksmith_using_subcommand help; and not __fish_seen_subcommand_from why lock start inspect completions journal restore replay help" -f -a "start" -d 'Reclaim what is proven stale in PATHs, then become COMMAND (same PID)'
complete -c locksmith -n "__fish_locksmith_using_subcommand help; and not __fish_seen_subcommand_from why lock start inspect completions journal restore replay help" -f -a "inspect" -d 'Answer, read-only, whether PIDs are alive on this host (what --ask-hosts asks over ssh)'
complete -c locksmith -n "__fish_locksmith_using_subcommand help; and not __fish_seen_subcommand_from why lock start inspect completions journal restore replay help" -f -a "completions" -d 'Print a shell completion script for SHELL on stdout'
complete -c locksmith -n "__fish_locksmith_using_subcommand help; and not __fish_seen_subcommand_from why lock start inspect completions journal restore replay help" -f -a "journal" -d 'List what reclaim removed (and what was restored), grouped by run, oldest first'
complete -c locksmith -n "__fish_locksmith_using_subcommand help; and not __fish_seen_subcommand_from why lock start inspect completions journal restore replay help" -f -a "restore" -d 'Put back what reclaim removed, exactly as it was (only where nothing is there now)'
complete -c locksmith -n "__fish_locksmith_using_subcommand help; and not __fish_seen_subcommand_from why lock start inspect completions journal restore replay help" -f -a "replay" -d 'Judge again the locks of a recording (`--scan --record FILE`), from the recording alone'
complete -c locksmith -n "__fish_locksmith_using_subcommand help; and not __fish_seen_subcommand_from why lock start inspect completions journal restore replay help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'

# A subcommand only as the first word: none after an option or a PATH of the scan.
function __fish_locksmith_first_word
    test (count (commandline -opc)) -eq 1
end
