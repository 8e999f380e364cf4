//! `jetbrains`: the instance locks of JetBrains IDEs (IntelliJ IDEA, PyCharm, CLion, ...,
//! and Android Studio): `.lock` in the IDE's configuration directory
//! (`~/.config/JetBrains/<Product><version>/.lock`) and `.port` in its system directory
//! (`~/.cache/JetBrains/<Product><version>/.port`), also under Flatpak's
//! `~/.var/app/<id>/{config,cache}/`.
//!
//! Format, from the IntelliJ platform's `platform/platform-impl/src/com/intellij/idea/
//! DirectoryLock.kt`: `.lock` holds the decimal PID of the IDE process; `.port` is the unix
//! domain socket the running instance listens on (older releases wrote a text file with a
//! TCP port of the built-in server). A starting IDE connects to `.port`; when nobody
//! answers it takes over both files.
//!
//! Liveness: someone listens on `.port` → `live`; nobody → `unknown` (an IDE in another
//! network namespace does not show in our socket tables, and a starting IDE takes the files
//! over by itself). For `.lock`, the listening `.port` of the same product, then the PID rules
//! of [`crate::judge`]. A Flatpak IDE writes a PID of its sandbox's namespace, which the PID
//! rules judge there.

use std::path::{Path, PathBuf};

use super::message::Message;
use super::{Candidate, Dialect, DialectId, EntryKind, Windows, common};
use crate::judge::{Judgement, OwnerClaim, Said, Writers};
use crate::probe::Snapshot;
use crate::verdict::Owner;

pub struct JetBrains;

const PATTERNS: &[&str] = &[
    "**/JetBrains/*/.lock",
    "**/JetBrains/*/.port",
    "**/Google/AndroidStudio*/.lock",
    "**/Google/AndroidStudio*/.port",
];

/// The `.port` of the IDE whose configuration directory holds `lock`, if it can be told.
fn port_of(lock: &Path) -> Option<PathBuf> {
    let s = lock.parent()?.to_str()?;
    for (from, to) in [("/.config/", "/.cache/"), ("/config/", "/cache/")] {
        if let Some(i) = s.rfind(from) {
            return Some(PathBuf::from(format!(
                "{}{to}{}/.port",
                &s[..i],
                &s[i + from.len()..]
            )));
        }
    }
    None
}

/// Judges a `.port`: `Some(line)` when someone answers on it, else `Err(line)`.
fn port_state(
    path: &Path,
    meta: &crate::probe::Stat,
    content: &[u8],
    snap: &Snapshot,
) -> Result<String, String> {
    if meta.is_socket() {
        let p = path.to_string_lossy();
        return if snap.unix_socket_listening(&p) {
            Ok(format!(
                "a process listens on the socket {}",
                common::field(&p)
            ))
        } else {
            Err(format!(
                "nobody listens on the socket {} (/proc/net/unix)",
                common::field(&p)
            ))
        };
    }
    let text = String::from_utf8_lossy(content).trim().to_string();
    if let Ok(port) = text.parse::<u16>() {
        return if snap.tcp_listening(port) {
            Ok(format!("a process listens on TCP port {port}"))
        } else {
            Err(format!("nobody listens on TCP port {port} (/proc/net/tcp)"))
        };
    }
    if text.starts_with('/') {
        return if snap.unix_socket_listening(&text) {
            Ok(format!(
                "a process listens on the socket {}",
                common::field(&text)
            ))
        } else {
            Err(format!(
                "nobody listens on the socket {}",
                common::field(&text)
            ))
        };
    }
    Err(format!(
        "it names no socket or port: {}",
        common::excerpt(content)
    ))
}

/// What a JetBrains IDE's launcher prints when another instance holds its configuration.
const MESSAGES: &[Message] = &[Message::en(
    "JetBrains IDE",
    r"Cannot connect to already running IDE instance",
    &["~/.config/JetBrains/*/.lock"],
    "Cannot connect to already running IDE instance. Exception: Process 4242 is still running",
)];

impl Dialect for JetBrains {
    fn id(&self) -> DialectId {
        DialectId::JETBRAINS
    }

    fn about(&self) -> super::About {
        super::About {
            writer: "JetBrains IDEs (IntelliJ IDEA, PyCharm, CLion, ...) and Android Studio",
            programs: &["jetbrains", "intellij", "pycharm", "clion"],
            found_as: "`.lock` (the IDE's PID) in its configuration directory, `.port` (a listening unix socket, or a TCP port in older releases) in its system directory; Flatpak's too",
            judged_by: "someone listens on `.port`: live, also for `.lock`; nobody: `.port` unknown (the IDE takes it over by itself), `.lock` by its PID",
            rules: &["pid-gone", "pid-reused", "earlier-boot"],
            source: Some(
                "IntelliJ platform `platform/platform-impl/src/com/intellij/idea/DirectoryLock.kt`",
            ),
        }
    }

    fn patterns(&self) -> &'static [&'static str] {
        PATTERNS
    }

    fn messages(&self) -> &'static [Message] {
        MESSAGES
    }

    fn recognise(&self, c: &Candidate<'_>, _snap: &Snapshot) -> bool {
        let dir = c.path.parent();
        let product = dir
            .and_then(|d| d.file_name())
            .and_then(|n| n.to_str())
            .unwrap_or("");
        let vendor = dir
            .and_then(|d| d.parent())
            .and_then(|d| d.file_name())
            .and_then(|n| n.to_str())
            .unwrap_or("");
        if !(vendor == "JetBrains" || (vendor == "Google" && product.starts_with("AndroidStudio")))
        {
            return false;
        }
        match c.file_name().to_str() {
            Some(".lock") => c.kind == EntryKind::File && common::looks_like_pid(&c.text()),
            Some(".port") => matches!(c.kind, EntryKind::File | EntryKind::Other),
            _ => false,
        }
    }

    fn read(&self, c: &Candidate<'_>, snap: &Snapshot, _windows: &Windows) -> Said {
        let dir = c.path.parent().unwrap_or(c.path);
        let product = dir
            .file_name()
            .map(|n| common::field(&n.to_string_lossy()))
            .unwrap_or_default();
        if c.file_name() == ".port" {
            let owner = Owner {
                detail: Some(format!("{product}: the running IDE's socket")),
                ..Owner::default()
            };
            let j = match port_state(c.path, c.meta, c.content, snap) {
                Ok(line) => Judgement::live(line),
                Err(line) => Judgement::unknown(line).because(
                    "the IDE listens on .port for as long as it runs, but one in another network namespace (a container, a sandbox) does not show here; a starting IDE that gets no answer takes it over by itself",
                ),
            };
            return Said::settled(j).owner(owner);
        }
        let pid = match common::parse_pid(&c.text()) {
            Ok(p) => p,
            Err(why) => return Said::unparseable("JetBrains IDE", why),
        };
        let owner = Owner {
            pid: Some(pid),
            detail: Some(format!("{product}: configuration directory lock")),
            ..Owner::default()
        };
        // The IDE answering on its `.port` holds the lock, whatever PID namespace it runs in.
        if let Some(port) = port_of(c.path)
            && let Ok(meta) = snap.lstat(&port)
        {
            let content = snap.read_small(&port, 256).unwrap_or_default();
            if let Ok(line) = port_state(&port, &meta, &content, snap) {
                return Said::settled(Judgement::live(format!(
                    "the IDE answers: {line} ({})",
                    port.display()
                )))
                .owner(owner);
            }
        }
        Said::claims(owner).claim(OwnerClaim::pid(pid, Writers::ANY))
    }
}
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_system_directory_of_a_configuration_directory() {
        assert_eq!(
            port_of(Path::new(
                "/home/u/.config/JetBrains/IntelliJIdea2024.1/.lock"
            )),
            Some(PathBuf::from(
                "/home/u/.cache/JetBrains/IntelliJIdea2024.1/.port"
            ))
        );
        assert_eq!(
            port_of(Path::new(
                "/home/u/.var/app/com.jetbrains.PyCharm-Community/config/JetBrains/PyCharmCE2024.1/.lock"
            )),
            Some(PathBuf::from(
                "/home/u/.var/app/com.jetbrains.PyCharm-Community/cache/JetBrains/PyCharmCE2024.1/.port"
            ))
        );
    }
}
