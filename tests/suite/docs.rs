//! The README and the book (`docs/src/`) say what is true: every relative link and `#anchor`
//! resolves, every chapter is in the book's summary, the README is a front page that starts
//! with the two set-up commands, and every shell sample runs as shown against the built
//! binary.
//!
//! A shell sample is a ```` ```sh ```` (or `bash`) block (but the README's set-up commands,
//! whose second is this suite). A document's samples run in their order, as a reader runs
//! them, in one scratch directory of its own with `locksmith` on the `PATH`: each with
//! `set -e -o pipefail`, and each must exit 0, or the status its info string names
//! (```` ```sh,exit=1 ````). A sample that cannot run here (another host, root, the network, a
//! package build) is marked ```` ```sh,ignore ````.

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::util;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The README and every Markdown file of the book.
fn documents() -> Vec<PathBuf> {
    let mut files = vec![repo().join("README.md")];
    for entry in walkdir::WalkDir::new(repo().join("docs/src")).sort_by_file_name() {
        let entry = entry.unwrap();
        if entry.path().extension().is_some_and(|e| e == "md") {
            files.push(entry.path().to_path_buf());
        }
    }
    files
}

/// A fenced block: its info string, its first line's number and its text.
struct Block {
    info: String,
    line: usize,
    text: String,
}

/// The document's fenced blocks, and its text outside them (block lines blanked, so that
/// line numbers stay).
fn split(text: &str) -> (Vec<Block>, String) {
    let mut blocks = Vec::new();
    let mut prose = String::new();
    let mut open: Option<(String, usize, String, usize)> = None; // info, line, text, fence len
    for (i, line) in text.lines().enumerate() {
        let fence = line.len() - line.trim_start_matches('`').len();
        match &mut open {
            None if fence >= 3 => {
                open = Some((
                    line[fence..].trim().to_string(),
                    i + 1,
                    String::new(),
                    fence,
                ));
                prose.push('\n');
            }
            Some((_, _, _, len))
                if fence >= *len && line.trim_start_matches('`').trim().is_empty() =>
            {
                let (info, line, text, _) = open.take().unwrap();
                blocks.push(Block { info, line, text });
                prose.push('\n');
            }
            Some((_, _, body, _)) => {
                body.push_str(line);
                body.push('\n');
                prose.push('\n');
            }
            None => {
                prose.push_str(line);
                prose.push('\n');
            }
        }
    }
    assert!(open.is_none(), "a fenced block is not closed");
    (blocks, prose)
}

/// Inline code spans removed (a link inside one is an example, not a link).
fn without_code_spans(line: &str) -> String {
    let mut out = String::new();
    let mut rest = line;
    while let Some(start) = rest.find('`') {
        out.push_str(&rest[..start]);
        let ticks = rest[start..].len() - rest[start..].trim_start_matches('`').len();
        let after = &rest[start + ticks..];
        let closing = "`".repeat(ticks);
        match after.find(&closing) {
            Some(end) => rest = &after[end + ticks..],
            None => {
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// The targets of the Markdown links and images of `prose`, with their line numbers.
fn links(prose: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    for (i, line) in prose.lines().enumerate() {
        let line = without_code_spans(line);
        let mut rest = line.as_str();
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let end = after.find(')').unwrap_or(after.len());
            let target = after[..end].split_whitespace().next().unwrap_or("");
            found.push((i + 1, target.to_string()));
            rest = &after[end..];
        }
    }
    found
}

/// A heading's anchor as mdBook makes it: lower case, spaces as `-`, only letters, digits,
/// `_` and `-` kept.
fn anchor_of(heading: &str) -> String {
    let text = heading.replace('`', "");
    text.trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '_' || c == '-' => Some(c),
            _ => None,
        })
        .collect()
}

/// The anchors of a Markdown file's headings (a repeated one gets `-1`, `-2`, ...).
fn anchors(path: &Path) -> BTreeSet<String> {
    let text = std::fs::read_to_string(path).unwrap();
    let (_, prose) = split(&text);
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut out = BTreeSet::new();
    for line in prose.lines() {
        let hashes = line.len() - line.trim_start_matches('#').len();
        if !(1..=6).contains(&hashes) || !line[hashes..].starts_with(' ') {
            continue;
        }
        let id = anchor_of(&line[hashes..]);
        let n = seen.entry(id.clone()).or_insert(0);
        out.insert(if *n == 0 {
            id.clone()
        } else {
            format!("{id}-{n}")
        });
        *n += 1;
    }
    out
}

#[test]
fn every_link_and_anchor_resolves() {
    let book = repo().join("docs/src");
    let mut broken = Vec::new();
    for doc in documents() {
        let text = std::fs::read_to_string(&doc).unwrap();
        let (_, prose) = split(&text);
        let name = doc.strip_prefix(repo()).unwrap().display().to_string();
        for (line, target) in links(&prose) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue; // another site: not checked offline
            }
            let (file, anchor) = target.split_once('#').unwrap_or((&target, ""));
            let path = if file.is_empty() {
                doc.clone()
            } else {
                let joined = doc.parent().unwrap().join(file);
                match joined.canonicalize() {
                    Ok(p) => p,
                    Err(_) => {
                        broken.push(format!("{name}:{line}: {target}: no such file"));
                        continue;
                    }
                }
            };
            if doc.starts_with(&book)
                && !path.starts_with(book.canonicalize().unwrap())
                && !file.is_empty()
            {
                broken.push(format!(
                    "{name}:{line}: {target}: leaves the book (the built book has only docs/src)"
                ));
            }
            if !anchor.is_empty() {
                if path.extension().is_none_or(|e| e != "md") {
                    broken.push(format!(
                        "{name}:{line}: {target}: an anchor into a file that is not Markdown"
                    ));
                } else if !anchors(&path).contains(anchor) {
                    broken.push(format!("{name}:{line}: {target}: no such heading"));
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn every_chapter_is_in_the_summary() {
    let book = repo().join("docs/src");
    let summary = std::fs::read_to_string(book.join("SUMMARY.md")).unwrap();
    let listed: BTreeSet<String> = links(&summary).into_iter().map(|(_, t)| t).collect();
    let mut missing = Vec::new();
    for doc in documents().into_iter().filter(|d| d.starts_with(&book)) {
        let rel = doc.strip_prefix(&book).unwrap().display().to_string();
        if rel != "SUMMARY.md" && !listed.contains(&rel) {
            missing.push(rel);
        }
    }
    assert!(
        missing.is_empty(),
        "chapters not in docs/src/SUMMARY.md: {missing:?}"
    );
}

#[test]
fn the_readme_is_a_front_page_that_starts_with_the_set_up_commands() {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let lines = readme.lines().count();
    assert!(
        lines <= 400,
        "README.md has {lines} lines: the rest belongs in the book"
    );
    let (blocks, prose) = split(&readme);
    let first = blocks.first().expect("a code block");
    assert_eq!(
        first.text, "cargo run --release -- --scan\ncargo test --workspace\n",
        "the README's first code block is the two set-up commands"
    );
    // CI runs the README's test command: those words, then options only (`--no-fail-fast`)
    // before what takes its output.
    let test_command = first.text.lines().nth(1).unwrap();
    let ci = std::fs::read_to_string(repo().join(".ci/run")).unwrap();
    assert!(
        ci.lines().any(|l| runs_command(l, test_command)),
        ".ci/run does not run the README's test command `{test_command}`"
    );
    // A real picture of the UI.
    let images: Vec<String> = prose
        .lines()
        .filter(|l| l.trim_start().starts_with("!["))
        .flat_map(|l| links(l).into_iter().map(|(_, t)| t))
        .collect();
    assert!(!images.is_empty(), "the README shows no picture");
    for image in images {
        let path = repo().join(&image);
        let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{image}: {e}"));
        let is_image = bytes.starts_with(b"\x89PNG")
            || bytes.starts_with(b"GIF8")
            || String::from_utf8_lossy(&bytes[..bytes.len().min(512)]).contains("<svg");
        assert!(is_image, "{image} is not a PNG, GIF or SVG image");
    }
}

/// Runs `cmd` (made the leader of a process group of its own) on a quiet host, as
/// [`util::run_bounded`] does, its output into files in `dir` (a sample's `sleep 300 &` keeps
/// a pipe open), then kills what it left running in its group. Its exit status and output.
fn run_as_a_group(mut cmd: Command, dir: &Path, limit: Duration) -> (i32, String, String) {
    let _judging = util::quiet::judging();
    util::quiet::settle();
    let (out, err) = (dir.join("sample.stdout"), dir.join("sample.stderr"));
    let mut child = cmd
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .expect("spawn");
    let group = rustix::process::Pid::from_raw(child.id() as i32).expect("a PID");
    let deadline = std::time::Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status.code().unwrap_or(-1);
        }
        if std::time::Instant::now() > deadline {
            let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
            let _ = child.wait();
            panic!(
                "{cmd:?} did not finish within {limit:?}; its output:\n{}{}",
                std::fs::read_to_string(&out).unwrap_or_default(),
                std::fs::read_to_string(&err).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
    let read = |p: &Path| std::fs::read_to_string(p).unwrap_or_default();
    (status, read(&out), read(&err))
}

/// A sample's expected exit status from its info string (`sh,exit=1`), or `None` when it
/// is not a shell sample to run.
fn runnable(info: &str) -> Option<i32> {
    let mut tags = info.split(',').map(str::trim);
    if !matches!(tags.next(), Some("sh" | "bash" | "shell")) {
        return None;
    }
    let mut status = 0;
    for tag in tags {
        match tag.split_once('=') {
            _ if tag == "ignore" => return None,
            Some(("exit", n)) => status = n.parse().expect("exit=N"),
            _ => panic!("unknown tag {tag:?} in the info string {info:?}"),
        }
    }
    Some(status)
}

/// One document's runnable samples as one script, in their order, as a reader runs them one
/// after the other in one directory: each in a subshell with `set -e -o pipefail`, its status
/// checked against the one it should have. The script stops at the first that differs,
/// naming its line on stderr. `None` when the document has none.
fn script(doc: &Path, text: &str) -> Option<(usize, String)> {
    let mut script = String::new();
    let mut count = 0;
    for (i, block) in split(text).0.into_iter().enumerate() {
        if i == 0 && doc.ends_with("README.md") {
            // The set-up commands: the second is this test suite, which CI runs (checked by
            // the_readme_is_a_front_page_that_starts_with_the_set_up_commands).
            continue;
        }
        let Some(want) = runnable(&block.info) else {
            continue;
        };
        count += 1;
        script.push_str(&format!(
            "echo '--- the sample at line {line}' >&2\n(\nset -e -o pipefail\n{body})\n\
             status=$?\nif [ \"$status\" -ne {want} ]; then\n  \
             echo \"the sample at line {line} exited $status, not {want}\" >&2\n  exit 1\nfi\n",
            line = block.line,
            body = block.text,
        ));
    }
    (count > 0).then_some((count, script))
}

#[test]
fn every_shell_sample_runs_as_shown() {
    util::require("bash");
    // `locksmith` on the PATH is the binary under test.
    let bin = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(util::BIN, bin.path().join("locksmith")).unwrap();
    let path = format!(
        "{}:{}",
        bin.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut ran = 0;
    let mut failed = Vec::new();
    for doc in documents() {
        let text = std::fs::read_to_string(&doc).unwrap();
        let name = doc.strip_prefix(repo()).unwrap().display().to_string();
        let Some((count, script)) = script(&doc, &text) else {
            continue;
        };
        ran += count;
        let env = util::Env::new();
        let (home, work) = (env.path().join("home"), env.path().join("work"));
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(&work).unwrap();
        let mut cmd = Command::new("bash");
        cmd.args(["-c", &script])
            .env("PATH", &path)
            .env("HOME", &home)
            .env("XDG_STATE_HOME", env.path().join("state"))
            .env("XDG_CONFIG_HOME", env.path().join("config"))
            .env("NO_COLOR", "1")
            .current_dir(&work)
            .stdin(Stdio::null())
            .process_group(0);
        let (status, stdout, stderr) = run_as_a_group(cmd, env.path(), Duration::from_secs(120));
        if status != 0 {
            failed.push(format!(
                "{name}: {}\n--- stdout\n{stdout}--- stderr\n{stderr}",
                stderr.lines().last().unwrap_or("")
            ));
        }
    }
    assert!(ran >= 5, "only {ran} shell samples found");
    assert!(
        failed.is_empty(),
        "samples that do not run as shown:\n{}",
        failed.join("\n")
    );
}

/// Whether the shell line `line` runs `command`: its words, then only options (words that start
/// with `-`) up to the end of the line or the first pipe, redirection or `||`.
fn runs_command(line: &str, command: &str) -> bool {
    let mut words = line.split_whitespace();
    command.split_whitespace().all(|w| words.next() == Some(w))
        && words
            .take_while(|w| !w.starts_with(['|', '>', '&', '2', ';']))
            .all(|w| w.starts_with('-') && w != "--")
}

#[test]
fn a_ci_line_runs_the_test_command_with_options_only() {
    let cmd = "cargo test --workspace";
    assert!(runs_command("cargo test --workspace", cmd));
    assert!(runs_command(
        "cargo test --workspace --no-fail-fast 2>&1 | tee -a \"$log\" || failed=1",
        cmd
    ));
    assert!(!runs_command("cargo test --workspace -- dialects::", cmd));
    assert!(!runs_command("cargo test --test suite", cmd));
    assert!(!runs_command("# cargo test --workspace", cmd));
}
