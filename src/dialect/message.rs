//! The error messages a program prints when it finds its lock taken, declared by each dialect
//! beside its file-name patterns ([`super::Dialect::messages`]), so that `locksmith why` can
//! go from what a person sees ("fatal: Unable to create '.../index.lock': File exists.") to the
//! lock itself. A message is data: a regular expression with named captures, and the places
//! where its program keeps the lock. Adding a program's message is one [`Message`] line.
//!
//! Invariant: a message only says where to look. What is found there is judged by the scanner
//! like any other path (`scan::judge_path`); a message never makes a verdict.
//!
//! # Patterns
//!
//! `pattern` is a regular expression of the `regex` crate, matched against the whole text
//! (with `^` and `$` at line ends). Its named captures are what the message says:
//!
//! | capture | what |
//! |---|---|
//! | `path` | the lock file itself |
//! | `dir` | a directory the lock is in (a data directory, a repository) |
//! | `file` | a file the lock protects (the lock is named after it) |
//! | `pid` | the process that holds it, as the program says |
//! | `host` | the host of that process |
//! | `display` | an X display number |
//!
//! # Places
//!
//! Each of `places` is a path template, tried in order (every place of every message of the
//! program that matched):
//!
//! - `{path}`, `{dir}`, ... a capture; `{file:dir}` its directory, `{file:name}` its last
//!   component. A capture that is an absolute path replaces what comes before it (as
//!   `Path::join` does), and a capture is never read as a pattern;
//! - `$NAME` an environment variable (the program's own: `$PGDATA`, `$CARGO_HOME`,
//!   `$GNUPGHOME`); `~/` the home directory, `~user/` that user's;
//! - `*`, `?`, `[...]` in the template: a glob, matched in the directory it names;
//! - a leading `^`: the relative path in the current directory or any directory above it
//!   (`^target/*/.cargo-lock`);
//! - any other relative path is in the current directory.
//!
//! A template whose capture or variable is missing is skipped.

/// One message of one program, in one language.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Message {
    /// The program that prints it (`git`, `apt`, `Xvfb`).
    pub program: &'static str,
    /// The language of its text: `en`, or the code of a translation (`de`, `fr`).
    pub lang: &'static str,
    /// A regular expression with named captures (see the module's documentation).
    pub pattern: &'static str,
    /// Where the lock is, tried in order (see the module's documentation).
    pub places: &'static [&'static str],
    /// The message as the program prints it (the README lists it; a test matches it).
    pub example: &'static str,
}

impl Message {
    /// A message in English (the text the program's source has).
    pub const fn en(
        program: &'static str,
        pattern: &'static str,
        places: &'static [&'static str],
        example: &'static str,
    ) -> Message {
        Message {
            program,
            lang: "en",
            pattern,
            places,
            example,
        }
    }

    /// A translation of a message, as the program's own catalogue has it.
    pub const fn tr(
        lang: &'static str,
        program: &'static str,
        pattern: &'static str,
        places: &'static [&'static str],
        example: &'static str,
    ) -> Message {
        Message {
            program,
            lang,
            pattern,
            places,
            example,
        }
    }
}

/// The capture names a pattern may use.
pub const CAPTURES: &[&str] = &["path", "dir", "file", "pid", "host", "display"];
