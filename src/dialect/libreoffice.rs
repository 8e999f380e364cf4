//! `libreoffice`: the lock LibreOffice (and OpenOffice) writes beside a document it opens for
//! editing, `.~lock.NAME#`: one CSV record `LockUser,SysUserName,LockHost,DD.MM.YYYY HH:MM,UserURL;`
//! (the first field is the name from the user profile, often empty; `,` `;` `\` inside a field
//! are escaped with `\`).
//!
//! No PID: live when a process has the document (or the lock) open or holds a kernel lock on
//! it, or when an office process runs on the lock's host (it may have the document loaded
//! without holding it open). The host is decided first: another host → foreign, whatever the
//! times say. Stale when the lock names this host, lies on a local file system and either was
//! written (by its mtime) before this host booted or no office process runs here. The record's
//! own time is local time without a zone: it is shown, never compared.

use std::path::{Path, PathBuf};

use super::common;
use super::{Candidate, Dialect, DialectId, EntryKind, Windows};
use crate::judge::{Contract, Placed, Said, Scope, Writers};
use crate::probe::{FileKey, Snapshot};
use crate::verdict::Owner;

pub struct LibreOffice;

/// Process names of office suites that write these locks.
pub const OFFICE: &[&str] = &["soffice*", "oosplash", "libreoffice*", "openoffice*"];

/// The fields of the lock record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OfficeLock {
    pub name: String,
    pub sys_user: String,
    pub host: String,
    /// `DD.MM.YYYY HH:MM` in the writer's local time, whose zone is not recorded: shown as
    /// written, never compared with an instant (the file's mtime is when it was written).
    pub time: String,
    pub user_url: String,
}

/// Splits the record into fields, honouring `\` escapes, up to the terminating `;`.
fn fields(text: &str) -> Result<Vec<String>, String> {
    let mut out = vec![String::new()];
    let mut chars = text.chars();
    let mut ended = false;
    while let Some(ch) = chars.next() {
        match ch {
            '\\' => match chars.next() {
                Some(e) => out.last_mut().expect("one field").push(e),
                None => return Err("it ends inside an escape".into()),
            },
            ',' => out.push(String::new()),
            ';' => {
                ended = true;
                break;
            }
            c => out.last_mut().expect("one field").push(c),
        }
    }
    if !ended {
        return Err("the record has no terminating ';'".into());
    }
    Ok(out)
}

pub fn parse(content: &[u8]) -> Result<OfficeLock, String> {
    let text = std::str::from_utf8(content)
        .map_err(|_| format!("{} is not text", common::excerpt(content)))?;
    let bad = |why: String| format!("{why}: {}", common::excerpt(content));
    let f = fields(text.trim_start()).map_err(bad)?;
    if f.len() < 5 {
        return Err(bad(format!(
            "{} fields where LibreOffice writes 5",
            f.len()
        )));
    }
    if f[2].is_empty() {
        return Err(bad("the host field is empty".into()));
    }
    Ok(OfficeLock {
        name: common::field(&f[0]),
        sys_user: common::field(&f[1]),
        host: common::field(&f[2]),
        time: common::field(&f[3]),
        user_url: common::field(&f[4]),
    })
}

/// The document a `.~lock.NAME#` file locks: `NAME` in the same directory.
pub fn document_of(lock: &std::path::Path) -> Option<PathBuf> {
    let name = lock.file_name()?.to_str()?;
    let doc = name.strip_prefix(".~lock.")?.strip_suffix('#')?;
    (!doc.is_empty()).then(|| lock.with_file_name(doc))
}

impl Dialect for LibreOffice {
    fn id(&self) -> DialectId {
        DialectId::LIBREOFFICE
    }

    fn about(&self) -> super::About {
        super::About {
            writer: "LibreOffice and OpenOffice (a document open for editing)",
            programs: &["libreoffice", "openoffice", "soffice"],
            found_as: "`.~lock.NAME#` beside the document: one CSV record `name,sysuser,host,DD.MM.YYYY HH:MM,url;`",
            judged_by: "another host: foreign; the document open, or an office process on this host: live; none: stale. The record's time has no zone: shown, never compared",
            rules: &["earlier-boot", "writer-absent"],
            source: Some("LibreOffice `svl/source/misc/documentlockfile.cxx`"),
        }
    }

    fn patterns(&self) -> &'static [&'static str] {
        &[".~lock.*#"]
    }

    fn recognise(&self, c: &Candidate<'_>, _snap: &Snapshot) -> bool {
        c.kind == EntryKind::File && document_of(c.path).is_some()
    }

    fn read(&self, c: &Candidate<'_>, snap: &Snapshot, _windows: &Windows) -> Said {
        let lock = match parse(c.content) {
            Ok(l) => l,
            Err(why) => return Said::unparseable("LibreOffice", why),
        };
        let doc = document_of(c.path);
        let owner = Owner {
            pid: None,
            hostname: Some(lock.host.clone()),
            user: Some(if lock.name.is_empty() {
                lock.sys_user.clone()
            } else {
                format!("{} ({})", lock.sys_user, lock.name)
            }),
            created_at: None,
            detail: Some(format!(
                "{}locked at {} (the writer's local time)",
                doc.as_ref()
                    .map(|d| format!("document {}, ", common::field(&d.to_string_lossy())))
                    .unwrap_or_default(),
                lock.time
            )),
        };
        let place = c.path.parent().unwrap_or(Path::new("/")).to_path_buf();
        let mut said = Said::claims(owner).host(lock.host.clone()).claim(Contract {
            placed: Placed::by(
                "LibreOffice's lock record (name, user, host, local time and profile URL, comma-separated) named .~lock.DOCUMENT#",
            ),
            writer: Writers::named(OFFICE),
            what: "office (soffice)",
            at: "this host".into(),
            says: "LibreOffice's own dialog: the document is locked by another user \"unless the lock file is left from a crash\"; an office program running on this host may have it loaded without holding it open".into(),
            place,
            scope: Scope::Anywhere,
            min_hold_ms: 2_000,
        });
        if let Some(d) = &doc
            && let Ok(m) = snap.lstat(d)
        {
            said = said.held_with(FileKey::of(&m), "the document");
        }
        said
    }
}
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_record() {
        let l = parse(b",root,vm,29.11.2026 23:47,file:///tmp/fx/lohome/.config/libreoffice/4;")
            .unwrap();
        assert_eq!(l.sys_user, "root");
        assert_eq!(l.host, "vm");
        assert_eq!(l.time, "29.11.2026 23:47");
        let l = parse(br"Doe\, Jane,jdoe,ws1,01.02.2024 10:15,file:///x;").unwrap();
        assert_eq!(l.name, "Doe, Jane");
        assert!(parse(b",root,vm,29.11.2026 23:47").is_err());
        assert!(parse(b"a,b;").is_err());
        assert!(parse(b",u,,01.02.2024 10:15,x;").is_err());
    }

    #[test]
    fn finds_the_document() {
        assert_eq!(
            document_of(std::path::Path::new("/d/.~lock.report.odt#")),
            Some(PathBuf::from("/d/report.odt"))
        );
        assert_eq!(document_of(std::path::Path::new("/d/.~lock.#")), None);
    }
}
