//! What can go wrong in a scan: a [`ScanError`] is a problem with one path, recorded and
//! reported while the scan goes on (like `walkdir::Error`); a [`FatalError`] is what stops a
//! scan before or instead of its result (patterns that do not compile, no root readable).
//!
//! Both display as the text the report shows: a [`ScanError`] without its path (the report's
//! `errors` entries and the table carry the path apart), a [`FatalError`] as a whole sentence.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A problem with one path that did not stop the scan: the path, how deep below its root it
/// lies (when the walker knows), and the cause, an I/O error with its kind or a finding about
/// the path itself (a root on a pseudo file system).
#[derive(Debug, Clone)]
pub struct ScanError {
    path: PathBuf,
    depth: Option<usize>,
    cause: Cause,
}

#[derive(Debug, Clone)]
enum Cause {
    /// `context` says what was being done ("cannot read directory").
    Io {
        context: Option<&'static str>,
        // Shared so that events can be cloned; `io::Error` is not `Clone`.
        error: Arc<io::Error>,
    },
    Other(String),
}

impl ScanError {
    /// An I/O error on `path`; [`ScanError::during`] says what was being done.
    pub fn io(path: impl Into<PathBuf>, error: io::Error) -> Self {
        ScanError {
            path: path.into(),
            depth: None,
            cause: Cause::Io {
                context: None,
                error: Arc::new(error),
            },
        }
    }

    /// A problem with `path` that is not an I/O error, as a sentence about it.
    pub fn other(path: impl Into<PathBuf>, message: impl Into<String>) -> Self {
        ScanError {
            path: path.into(),
            depth: None,
            cause: Cause::Other(message.into()),
        }
    }

    /// What was being done when the I/O error happened ("cannot stat"): the message starts
    /// with it.
    pub fn during(mut self, what: &'static str) -> Self {
        if let Cause::Io { context, .. } = &mut self.cause {
            *context = Some(what);
        }
        self
    }

    /// How deep below its root the path lies (the root is 0).
    pub fn at_depth(mut self, depth: usize) -> Self {
        self.depth = Some(depth);
        self
    }

    /// The path the problem is about.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// How deep below its root the path lies (the root is 0), when it was found by walking.
    pub fn depth(&self) -> Option<usize> {
        self.depth
    }

    /// The underlying I/O error, if the problem is one.
    pub fn io_error(&self) -> Option<&io::Error> {
        match &self.cause {
            Cause::Io { error, .. } => Some(error),
            Cause::Other(_) => None,
        }
    }

    /// The kind of the underlying I/O error, if the problem is one.
    pub fn kind(&self) -> Option<io::ErrorKind> {
        self.io_error().map(io::Error::kind)
    }
}

/// The problem, without the path ("cannot read directory: Permission denied (os error 13)").
impl fmt::Display for ScanError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.cause {
            Cause::Io {
                context: Some(what),
                error,
            } => write!(f, "{what}: {error}"),
            Cause::Io {
                context: None,
                error,
            } => write!(f, "{error}"),
            Cause::Other(message) => f.write_str(message),
        }
    }
}

impl std::error::Error for ScanError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.cause {
            Cause::Io { error, .. } => Some(error.as_ref()),
            Cause::Other(_) => None,
        }
    }
}

/// What stops a scan: nothing was scanned, or nothing could be.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FatalError {
    /// No root was given.
    #[error("no root to scan")]
    NoRoot,
    /// Every root failed (each also reported as a [`ScanError`]).
    #[error("no root could be read ({})", join(roots))]
    NoRootReadable { roots: Vec<PathBuf> },
}

fn join(paths: &[PathBuf]) -> String {
    let names: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    names.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_io_error_and_says_what_was_done() {
        let e = ScanError::io("/x/y", io::Error::from_raw_os_error(13))
            .during("cannot read directory")
            .at_depth(1);
        assert_eq!(e.path(), Path::new("/x/y"));
        assert_eq!(e.kind(), Some(io::ErrorKind::PermissionDenied));
        assert_eq!(e.io_error().and_then(io::Error::raw_os_error), Some(13));
        assert_eq!(e.depth(), Some(1));
        assert_eq!(
            e.to_string(),
            format!(
                "cannot read directory: {}",
                io::Error::from_raw_os_error(13)
            )
        );
        assert!(std::error::Error::source(&e).is_some());
        let plain = ScanError::io("/x", io::Error::from(io::ErrorKind::NotFound));
        assert_eq!(
            plain.to_string(),
            io::Error::from(io::ErrorKind::NotFound).to_string()
        );
    }

    #[test]
    fn other_problems_have_no_io_error() {
        let e = ScanError::other("/proc", "is on a pseudo file system (proc): not scanned");
        assert_eq!(e.kind(), None);
        assert!(e.io_error().is_none());
        assert_eq!(e.depth(), None);
        assert_eq!(
            e.to_string(),
            "is on a pseudo file system (proc): not scanned"
        );
    }

    #[test]
    fn the_walk_reports_the_io_error_and_the_depth() {
        use std::sync::Mutex;
        use std::sync::atomic::AtomicBool;

        use crate::scan::{Root, ScanEvent, scan};
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing");
        let errors = Mutex::new(Vec::new());
        let sink = |e: ScanEvent| {
            if let ScanEvent::Error(e) = e {
                errors.lock().unwrap().push(e);
            }
        };
        let roots = [
            Root {
                path: missing.clone(),
                max_depth: None,
            },
            Root {
                path: dir.path().to_path_buf(),
                max_depth: None,
            },
        ];
        let snap = crate::probe::Snapshot::take();
        let cancel = AtomicBool::new(false);
        let stats = scan(
            &crate::config::Settings::embedded().scan,
            &roots,
            &snap,
            &cancel,
            &sink,
        )
        .unwrap();
        let errors = errors.into_inner().unwrap();
        assert_eq!(stats.errors, 1, "{errors:?}");
        let e = &errors[0];
        assert_eq!(e.path(), missing);
        assert_eq!(e.kind(), Some(io::ErrorKind::NotFound));
        assert_eq!(e.depth(), Some(0));
        assert!(e.to_string().starts_with("cannot scan: "), "{e}");

        // No root readable: fatal, naming the roots.
        let e = scan(
            &crate::config::Settings::embedded().scan,
            &roots[..1],
            &snap,
            &cancel,
            &|_| {},
        )
        .unwrap_err();
        assert!(matches!(e, FatalError::NoRootReadable { .. }), "{e:?}");
        assert_eq!(
            e.to_string(),
            format!("no root could be read ({})", missing.display())
        );
    }

    #[test]
    fn fatal_errors_name_the_roots() {
        let e = FatalError::NoRootReadable {
            roots: vec!["/a".into(), "/b c".into()],
        };
        assert_eq!(e.to_string(), "no root could be read (/a, /b c)");
        assert_eq!(FatalError::NoRoot.to_string(), "no root to scan");
    }
}
