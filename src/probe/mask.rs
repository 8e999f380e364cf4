//! Masking a recording before it is shared: host names, user names and the names of the
//! directories the locks lie in (and processes work in) are replaced by stand-ins, everywhere
//! in the recording (paths, lock contents, evidence keys). Each name always gets the same
//! stand-in, of the same length (so that fixed-layout records, such as a vim swap file's block
//! 0, still parse), so what the rules compare (a path below another, a host name equal to
//! ours) compares the same, and a masked recording replays to the same verdicts.
//!
//! Left as they are: file names of locks (the dialects recognise them), the names of system
//! directories (`/tmp`, `/run`, `.git`, `tmp/pids`, ...), names shorter than four bytes,
//! PIDs, times and the rest of the facts.

use std::collections::{BTreeMap, BTreeSet};

use super::evidence::{self, Evidence};

/// Directory names that say nothing about whoever made them, and that rules may look for.
const KEEP: &[&str] = &[
    "bin",
    "boot",
    "cache",
    "containers",
    "data",
    "docker",
    "etc",
    "home",
    "heads",
    "hooks",
    "info",
    "lib",
    "lib64",
    "local",
    "lock",
    "locks",
    "logs",
    "media",
    "mnt",
    "objects",
    "opt",
    "overlay",
    "pids",
    "proc",
    "refs",
    "remotes",
    "root",
    "run",
    "sbin",
    "share",
    "snap",
    "spool",
    "srv",
    "state",
    "storage",
    "sys",
    "tags",
    "tmp",
    "user",
    "usr",
    "var",
    "worktrees",
    ".cache",
    ".config",
    ".git",
    ".hg",
    ".local",
    ".mozilla",
    ".ssh",
    ".vim",
];

/// The recording with its names replaced (see the module docs).
pub fn mask(ev: Evidence) -> Evidence {
    let mut names: BTreeMap<String, char> = BTreeMap::new();
    let mut add = |name: &str, kind: char| {
        if name.len() >= 4 && !KEEP.contains(&name) && !name.bytes().all(|b| b.is_ascii_digit()) {
            names.entry(name.to_string()).or_insert(kind);
        }
    };
    add(&ev.host.hostname, 'h');
    for part in ev.host.hostname.split('.') {
        add(part, 'h');
    }
    for user in ev.users.values().flatten() {
        add(user, 'u');
    }
    let dirs = |path: &str| -> Vec<String> {
        let p = evidence::key_path(path);
        p.parent()
            .into_iter()
            .flat_map(|d| d.components())
            .filter_map(|c| match c {
                std::path::Component::Normal(n) => Some(n.to_string_lossy().into_owned()),
                _ => None,
            })
            .collect()
    };
    for l in &ev.locks {
        for d in dirs(&l.path) {
            add(&d, 'd');
        }
        for h in l.owner_host.iter() {
            add(h, 'h');
            for part in h.split('.') {
                add(part, 'h');
            }
        }
        for u in l.owner_user.iter() {
            add(u, 'u');
        }
    }
    for p in ev.processes.iter().flatten() {
        if let Some(cwd) = &p.cwd {
            for c in cwd.components() {
                if let std::path::Component::Normal(n) = c {
                    add(&n.to_string_lossy(), 'd');
                }
            }
        }
    }
    if let Some(inv) = &ev.containers {
        for ns in &inv.namespaces {
            if let Some(h) = ns.hostname.get() {
                add(h, 'h');
            }
        }
    }
    let stand_ins = stand_ins(&names);
    let Ok(value) = serde_json::to_value(&ev) else {
        return ev;
    };
    let masked = walk(value, &stand_ins);
    serde_json::from_value(masked).unwrap_or(ev)
}

/// A stand-in for each name: its kind's letter, then a number, as long as the name.
fn stand_ins(names: &BTreeMap<String, char>) -> Vec<(String, String)> {
    let mut taken: BTreeSet<String> = BTreeSet::new();
    let mut out = Vec::new();
    let mut n: u64 = 0;
    for (name, kind) in names {
        let len = name.len();
        let stand_in = loop {
            n += 1;
            let digits = format!("{n:0>width$}", width = len - 1);
            let s = format!("{kind}{}", &digits[digits.len() - (len - 1)..]);
            if !names.contains_key(&s) && taken.insert(s.clone()) {
                break s;
            }
        };
        out.push((name.clone(), stand_in));
    }
    // Longest first, so that a name inside a longer one is not replaced before it.
    out.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then(a.0.cmp(&b.0)));
    out
}

/// Replaces every name in every string of `v` (and in the keys of maps that hold data: a
/// key that is a field name, `[a-z_]+`, is left alone).
fn walk(v: serde_json::Value, stand_ins: &[(String, String)]) -> serde_json::Value {
    use serde_json::Value;
    match v {
        Value::String(s) => Value::String(replace(&s, stand_ins)),
        Value::Array(a) => Value::Array(a.into_iter().map(|v| walk(v, stand_ins)).collect()),
        Value::Object(o) => Value::Object(
            o.into_iter()
                .map(|(k, v)| {
                    let field =
                        !k.is_empty() && k.bytes().all(|b| b.is_ascii_lowercase() || b == b'_');
                    let k = if field { k } else { replace(&k, stand_ins) };
                    (k, walk(v, stand_ins))
                })
                .collect(),
        ),
        other => other,
    }
}

fn replace(s: &str, stand_ins: &[(String, String)]) -> String {
    let mut out = s.to_string();
    for (name, stand_in) in stand_ins {
        if out.contains(name.as_str()) {
            out = out.replace(name.as_str(), stand_in);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::evidence::{LockFacts, bytes_key, path_key};
    use crate::probe::{HostFacts, Stat};

    #[test]
    fn names_are_replaced_alike_everywhere_and_keep_their_length() {
        let mut ev = Evidence::new(
            HostFacts {
                hostname: "build-host.corp.example".into(),
                ..HostFacts::default()
            },
            1,
            1,
        );
        ev.users.insert(1000, Some("alice".into()));
        let path = std::path::Path::new("/home/alice/secret-project/.git/index.lock");
        ev.locks.push(LockFacts {
            path: path_key(path),
            stat: Stat::file(0, 0, 0),
            hits: vec!["git".into()],
            lenient: false,
            content: bytes_key(b"alice@build-host.corp.example.42"),
            complete: true,
            read_error: None,
            link_target: None,
            verdict: "stale".into(),
            dialect: "git".into(),
            owner_host: None,
            owner_user: None,
        });
        ev.lstat.insert(
            path_key(std::path::Path::new("/home/alice/secret-project/.git/HEAD")),
            evidence::Answer::not_found(),
        );
        let m = mask(ev.clone());
        let json = m.to_json();
        for secret in ["alice", "secret-project", "build-host", "corp.example"] {
            assert!(!json.contains(secret), "{secret} left in {json}");
        }
        let l = &m.locks[0];
        let p = evidence::key_path(&l.path);
        assert!(p.ends_with(".git/index.lock"), "{}", p.display());
        assert!(p.starts_with("/home/"), "{}", p.display());
        assert_eq!(p.as_os_str().len(), path.as_os_str().len());
        let masked_dir = p.parent().unwrap().parent().unwrap();
        // The same directory, masked alike, in the evidence's keys.
        let head = masked_dir.join(".git/HEAD");
        assert!(
            m.lstat.contains_key(&path_key(&head)),
            "{:?}",
            m.lstat.keys()
        );
        // The host name in the content is the host name of the recording.
        let content = String::from_utf8(evidence::key_bytes(&l.content)).unwrap();
        assert!(
            content.ends_with(&format!("@{}.42", m.host.hostname)),
            "{content}"
        );
        assert_eq!(m.host.hostname.len(), "build-host.corp.example".len());
        assert_eq!(m.users[&1000].as_deref().unwrap().len(), 5);
    }
}
