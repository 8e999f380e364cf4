//! `locksmith completions SHELL`, and the files shipped under `assets/share/` (the man pages
//! and the completion scripts), all generated from the one clap definition in `main.rs`, so
//! they cannot drift from the real options.
//!
//! `assets/share/` mirrors a `share/` directory (`man/man1`, `bash-completion/completions`,
//! `zsh/site-functions`, `fish/vendor_completions.d`), so one copy installs everything:
//! `cp -r assets/share/. ~/.local/share/` (or `/usr/local/share/`). A test regenerates the
//! files and compares them with the ones in the tree; `LOCKSMITH_BLESS=1 cargo test --bin
//! locksmith assets` writes them anew.

use std::io::{self, Write};

use clap::CommandFactory;
use clap_complete::Shell;

use crate::Cli;

/// Prints the completion script for `shell` on stdout.
pub fn run(shell: Shell) -> i32 {
    let mut out = io::stdout().lock();
    match out.write_all(&completion(shell)).and_then(|()| out.flush()) {
        Ok(()) => 0,
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => 0,
        Err(e) => {
            eprintln!("locksmith: cannot write the completion script: {e}");
            2
        }
    }
}

/// The completion script for `shell`.
pub fn completion(shell: Shell) -> Vec<u8> {
    let mut cmd = Cli::command();
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut cmd, "locksmith", &mut out);
    // Built by `generate`: the subcommands include `help` now.
    let subcommands: Vec<&str> = cmd.get_subcommands().map(|s| s.get_name()).collect();
    let script = String::from_utf8(out).expect("clap_complete writes UTF-8");
    let script = match shell {
        Shell::Bash => bash_paths(script, &subcommands),
        Shell::Fish => fish_paths(script),
        Shell::Zsh => zsh_paths(script),
        _ => script,
    };
    script.into_bytes()
}

/// The generated bash script offers the subcommands, never a path, wherever a PATH goes
/// (`locksmith --scan r<Tab>` gave `restore`): a subcommand is offered as the first word only
/// (the options and PATHs of the scan cannot come before one), and paths wherever a PATH may
/// stand.
fn bash_paths(script: String, subcommands: &[&str]) -> String {
    let start = script
        .find("        locksmith)\n")
        .expect("the bash script has a case for the top level");
    let end = start
        + script[start..]
            .find("        locksmith__subcmd__")
            .expect("and cases for the subcommands after it");
    let mut block = script[start..end].to_string();
    let first = "if [[ ${cur} == -* || ${COMP_CWORD} -eq 1 ]] ; then";
    assert!(block.contains(first), "the top level's option test");
    block = block.replacen(first, "if [[ ${cur} == -* ]] ; then", 1);
    let last =
        "            COMPREPLY=( $(compgen -W \"${opts}\" -- \"${cur}\") )\n            return 0\n";
    let at = block.rfind(last).expect("the top level's last reply");
    let paths = format!(
        "            # A subcommand only as the first word; paths wherever a PATH may stand.
            if [[ ${{COMP_CWORD}} -gt 1 ]] ; then
                opts=\"${{opts% {}}}\"
            fi
            COMPREPLY=( $(compgen -W \"${{opts}}\" -- \"${{cur}}\") )
            local oldifs=\"$IFS\"
            IFS=$'\\n'
            COMPREPLY+=( $(compgen -f -- \"${{cur}}\") )
            IFS=\"$oldifs\"
            if [[ \"${{BASH_VERSINFO[0]}}\" -ge 4 ]]; then
                compopt -o filenames
            fi
            return 0
",
        subcommands.join(" ")
    );
    block.replace_range(at..at + last.len(), &paths);
    format!("{}{block}{}", &script[..start], &script[end..])
}

/// The generated zsh script offers the subcommands as the second word after a PATH
/// (`locksmith --scan root r<Tab>` gave `restore`): a subcommand only as the first word now,
/// paths after an option or a PATH.
fn zsh_paths(script: String) -> String {
    let spec = "\":: :_locksmith_commands\" \\\n";
    assert!(
        script.contains(spec),
        "the zsh script's subcommand argument"
    );
    let script = script.replacen(spec, "\":: :_locksmith_commands_first\" \\\n", 1);
    let tail = "\nif [ \"$funcstack[1]\" = \"_locksmith\" ]; then";
    let at = script.rfind(tail).expect("the zsh script's last lines");
    format!(
        "{}
(( $+functions[_locksmith_commands_first] )) ||
_locksmith_commands_first() {{
    # A subcommand only as the first word: none after an option or a PATH of the scan.
    if (( CURRENT == 1 )); then
        _locksmith_commands \"$@\"
    else
        _files \"$@\"
    fi
}}
{}",
        &script[..at],
        &script[at..]
    )
}

/// The generated fish script offers the subcommands after an option or a PATH too: only as
/// the first word now (paths are offered as well, as fish does by default).
fn fish_paths(script: String) -> String {
    let needs = "-n \"__fish_locksmith_needs_command\" -a ";
    assert!(
        script.contains(needs),
        "the fish script offers the subcommands"
    );
    let script = script.replace(
        needs,
        "-n \"__fish_locksmith_needs_command; and __fish_locksmith_first_word\" -a ",
    );
    format!(
        "{script}
# A subcommand only as the first word: none after an option or a PATH of the scan.
function __fish_locksmith_first_word
    test (count (commandline -opc)) -eq 1
end
"
    )
}

/// The generator of the files under `assets/share/`: only the test that keeps them current
/// runs it.
#[cfg(test)]
mod share {
    use super::*;
    use clap_mangen::Man;
    use clap_mangen::roff::{Roff, bold, italic, roman};

    /// Every generated file under `assets/share/`, as (path relative to it, content).
    pub fn share_files() -> Vec<(String, Vec<u8>)> {
        let mut files = vec![
            (
                "bash-completion/completions/locksmith".to_string(),
                completion(Shell::Bash),
            ),
            (
                "zsh/site-functions/_locksmith".to_string(),
                completion(Shell::Zsh),
            ),
            (
                "fish/vendor_completions.d/locksmith.fish".to_string(),
                completion(Shell::Fish),
            ),
        ];
        for (name, page) in man_pages() {
            files.push((format!("man/man1/{name}"), page));
        }
        files
    }

    /// The man pages: `locksmith.1` and one per subcommand (`locksmith-lock.1`, ...).
    pub fn man_pages() -> Vec<(String, Vec<u8>)> {
        let mut cmd = Cli::command().disable_help_subcommand(true);
        cmd.build();
        let mut pages = vec![("locksmith.1".to_string(), man_page(&cmd, &cmd, "locksmith"))];
        for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
            // Built, a subcommand is displayed as `locksmith-lock`, used as `locksmith lock`.
            let name = format!("locksmith-{}", sub.get_name());
            pages.push((format!("{name}.1"), man_page(sub, &cmd, &name)));
        }
        pages
    }

    /// One page: clap_mangen's sections, then the command's after-help text rendered as sections
    /// of its own (`Examples:` → EXAMPLES, `Exit status:` → EXIT STATUS), kept as written
    /// (no filling, so examples and tables stay aligned), then FILES, ENVIRONMENT and SEE ALSO.
    fn man_page(cmd: &clap::Command, root: &clap::Command, title: &str) -> Vec<u8> {
        let man = Man::new(cmd.clone())
            .title(title.to_uppercase())
            // An empty date would be dropped from `.TH` and shift the fields after it.
            .date(env!("CARGO_PKG_VERSION"))
            .source("locksmith")
            .manual("User Commands");
        // clap_mangen's sections, without its EXTRA section (the after-help text, filled
        // into one paragraph), which is rendered below instead.
        let mut out = Vec::new();
        let write = |r: io::Result<()>| r.expect("writing to memory");
        write(man.render_title(&mut out));
        write(man.render_name_section(&mut out));
        let mut head = Roff::default();
        synopsis(&mut head, cmd, title);
        out.extend_from_slice(head.to_roff().as_bytes());
        write(man.render_description_section(&mut out));
        if cmd.get_arguments().any(|a| !a.is_hide_set()) {
            write(man.render_options_section(&mut out));
        }
        if cmd.has_subcommands() {
            write(man.render_subcommands_section(&mut out));
        }

        let mut roff = Roff::default();
        if let Some(after) = cmd.get_after_long_help().or_else(|| cmd.get_after_help()) {
            after_help_sections(&mut roff, &after.to_string());
        }
        let is_root = std::ptr::eq(cmd, root);
        if is_root {
            verdicts(&mut roff);
            key_map(&mut roff);
            files_and_environment(&mut roff);
        }
        roff.control("SH", ["SEE ALSO"]);
        let mut see_also: Vec<String> = if is_root {
            root.get_subcommands()
                .filter(|s| !s.is_hide_set())
                .map(|s| format!("locksmith-{}(1)", s.get_name()))
                .collect()
        } else {
            vec!["locksmith(1)".to_string()]
        };
        if title == "locksmith-lock" {
            see_also.push("flock(1)".to_string());
        }
        roff.text([roman(see_also.join(", "))]);
        out.extend_from_slice(roff.to_roff().as_bytes());
        if cmd.get_version().is_some() {
            write(man.render_version_section(&mut out));
        }
        out
    }

    /// SYNOPSIS: the command as it is typed (`locksmith lock`), each option with its value's
    /// placeholder (`--config FILE`), the positional arguments, and the subcommands.
    fn synopsis(roff: &mut Roff, cmd: &clap::Command, title: &str) {
        roff.control("SH", ["SYNOPSIS"]);
        let mut line = vec![bold(title.replacen('-', " ", 1))];
        for arg in cmd.get_arguments().filter(|a| !a.is_hide_set()) {
            let value = || {
                arg.get_value_names()
                    .map(|v| {
                        v.iter()
                            .map(|n| n.to_string())
                            .collect::<Vec<_>>()
                            .join(" ")
                    })
                    .unwrap_or_else(|| arg.get_id().as_str().to_uppercase())
            };
            let many = arg.get_num_args().is_some_and(|n| n.max_values() > 1)
                || matches!(arg.get_action(), clap::ArgAction::Append);
            line.push(roman(" "));
            if arg.is_positional() {
                let open = if arg.is_required_set() { "" } else { "[" };
                let close = if arg.is_required_set() { "" } else { "]" };
                if arg.is_last_set() {
                    line.push(roman(open));
                    line.push(bold("--"));
                    line.push(roman(" "));
                } else {
                    line.push(roman(open));
                }
                line.push(italic(value()));
                line.push(roman(format!("{close}{}", if many { "..." } else { "" })));
                continue;
            }
            let mut names = Vec::new();
            if let Some(c) = arg.get_short() {
                names.push(format!("-{c}"));
            }
            if let Some(l) = arg.get_long() {
                names.push(format!("--{l}"));
            }
            let (open, close) = if arg.is_required_set() {
                ("", "")
            } else {
                ("[", "]")
            };
            line.push(roman(open));
            for (i, n) in names.iter().enumerate() {
                if i > 0 {
                    line.push(roman("|"));
                }
                line.push(bold(n.clone()));
            }
            if arg.get_action().takes_values() {
                line.push(roman(" "));
                line.push(italic(value()));
            }
            line.push(roman(format!("{close}{}", if many { "..." } else { "" })));
        }
        roff.text(line);
        if cmd.has_subcommands() {
            roff.control("br", []);
            roff.text([
                bold(title.replacen('-', " ", 1)),
                roman(" "),
                italic("COMMAND"),
                roman(" ["),
                italic("ARGS"),
                roman("]"),
            ]);
        }
    }

    /// What the verdicts mean.
    fn verdicts(roff: &mut Roff) {
        roff.control("SH", ["VERDICTS"]);
        for (marker, verdict, meaning) in VERDICTS {
            roff.control("TP", []);
            roff.text([bold(format!("{marker} {verdict}"))]);
            roff.text([roman(*meaning)]);
        }
    }

    /// The verdicts, as the README's table says them.
    const VERDICTS: &[(&str, &str, &str)] = &[
        (
            "✗",
            "stale",
            "The owner is provably gone (no such process, PID reused, an earlier boot, an \
             expired heartbeat, a kernel lock or open file released, the writer's own removal \
             condition). Reclaimable.",
        ),
        (
            "●",
            "live",
            "An owner is verifiably alive (a kernel lock held, the file open, or the owner PID \
             alive and proven the same process). Never removed.",
        ),
        (
            "⇄",
            "foreign",
            "The owner is on another host or in another PID namespace and cannot be checked \
             here. Removed only by a person naming it (d in the UI, --force LOCK).",
        ),
        (
            "?",
            "unknown",
            "Cannot be parsed or read, or nothing proves its owner gone. Removed only by a \
             person naming it (d in the UI, --force LOCK).",
        ),
        (
            "○",
            "free",
            "A lock file nobody locks now, of a writer known to use kernel locks (dpkg, apt, \
             cargo): harmless, never removed.",
        ),
    ];

    /// Splits an after-help text into sections at its unindented `Heading:` lines and writes
    /// each body unfilled.
    fn after_help_sections(roff: &mut Roff, text: &str) {
        let mut open = false;
        for line in text.lines() {
            if let Some(heading) = line.strip_suffix(':').filter(|h| !h.starts_with(' ')) {
                if open {
                    roff.control("fi", []);
                }
                roff.control("SH", [heading.to_uppercase().as_str()]);
                roff.control("nf", []);
                open = true;
            } else if open && !line.is_empty() {
                roff.text([roman(line)]);
            } else if open {
                roff.control("sp", []);
            }
        }
        if open {
            roff.control("fi", []);
        }
    }

    /// The terminal UI's keys, from its key map (the same the UI's help shows), section by
    /// section.
    fn key_map(roff: &mut Roff) {
        roff.control("SH", ["KEYS"]);
        roff.text([roman(
            "In the terminal UI (locksmith with no --scan), ? shows these keys too.",
        )]);
        let mut section = "";
        for (title, keys, what) in crate::tui::key_map() {
            if title != section {
                roff.control("SS", [title]);
                section = title;
            }
            roff.control("TP", ["16"]);
            roff.text([bold(keys)]);
            roff.text([roman(what)]);
        }
    }

    fn files_and_environment(roff: &mut Roff) {
        roff.control("SH", ["FILES"]);
        for (path, what) in [
            (
                "$XDG_CONFIG_HOME/locksmith/config.json",
                "The user configuration (default ~/.config/locksmith/config.json), layered over \
                 the built-in one; --config FILE is layered over both.",
            ),
            (
                "$XDG_STATE_HOME/locksmith/",
                "The state directory (default ~/.local/state/locksmith/): a copy of every lock \
                 reclaim removed, and journal.jsonl, one line per removal.",
            ),
        ] {
            roff.control("TP", []);
            roff.text([bold(path)]);
            roff.text([roman(what)]);
        }
        roff.control("SH", ["ENVIRONMENT"]);
        for (var, what) in [
            (
                "NO_COLOR",
                "When set to a non-empty value, --color auto never colors.",
            ),
            (
                "XDG_CONFIG_HOME, XDG_STATE_HOME, HOME",
                "Where the configuration and the state directory are.",
            ),
        ] {
            roff.control("TP", []);
            roff.text([bold(var)]);
            roff.text([roman(what)]);
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;
        use std::path::Path;

        /// The files under `assets/share/` are what the clap definition generates now.
        #[test]
        fn assets_are_current() {
            let share = Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/share");
            let bless = std::env::var_os("LOCKSMITH_BLESS").is_some_and(|v| !v.is_empty());
            let mut stale = Vec::new();
            for (rel, content) in share_files() {
                let path = share.join(&rel);
                if bless {
                    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                    std::fs::write(&path, &content).unwrap();
                } else if std::fs::read(&path).ok().as_deref() != Some(&content[..]) {
                    stale.push(rel);
                }
            }
            assert!(
                stale.is_empty(),
                "assets/share/ is out of date with the command line ({}).\n\
                 Regenerate it with: LOCKSMITH_BLESS=1 cargo test --bin locksmith assets",
                stale.join(", ")
            );
        }

        #[test]
        fn pages_have_the_sections_a_reader_looks_for() {
            let pages = man_pages();
            let names: Vec<&str> = pages.iter().map(|(n, _)| n.as_str()).collect();
            assert_eq!(names[0], "locksmith.1");
            let subcommands = Cli::command()
                .get_subcommands()
                .filter(|s| !s.is_hide_set())
                .count();
            assert_eq!(names.len(), 1 + subcommands, "one page per subcommand");
            assert_eq!(names[1], "locksmith-why.1", "the way in comes first");
            let lock_page = names
                .iter()
                .position(|n| *n == "locksmith-lock.1")
                .expect("a page for lock");
            assert!(names.contains(&"locksmith-completions.1"));
            let text = |i: usize| String::from_utf8(pages[i].1.clone()).unwrap();
            for section in ["EXAMPLES", "EXIT STATUS", "FILES", "SEE ALSO", "\\-\\-scan"] {
                assert!(text(0).contains(section), "locksmith.1 lacks {section}");
            }
            // The UI's keys, every one of them, from the key map itself.
            let main = text(0);
            assert!(main.contains(".SH KEYS"), "locksmith.1 lacks its key map");
            for (section, _, what) in crate::tui::key_map() {
                assert!(main.contains(section), "{section:?} missing");
                // (roff escapes dashes)
                let what = what.replace('-', "\\-");
                assert!(main.contains(&what), "{what:?} missing from locksmith.1");
            }
            assert!(
                !text(lock_page).contains(".SH KEYS"),
                "only the UI's page lists them"
            );
            let lock = text(lock_page);
            assert!(lock.contains(".SH \"EXIT STATUS\"") || lock.contains(".SH EXIT STATUS"));
            assert!(lock.contains("75"));
            assert!(
                lock.contains("locksmith\\-lock"),
                "titled with its full name"
            );
        }

        #[test]
        fn completion_scripts_name_the_options() {
            let bash = String::from_utf8(completion(Shell::Bash)).unwrap();
            assert!(bash.contains("--scan") && bash.contains("--format"));
            let zsh = String::from_utf8(completion(Shell::Zsh)).unwrap();
            assert!(zsh.starts_with("#compdef locksmith"));
        }
    }
}
