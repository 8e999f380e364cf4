use super::*;
use crate::dialect::message::CAPTURES;

/// Every message of every dialect.
fn all() -> Vec<(DialectId, &'static Message)> {
    dialect::registry()
        .iter()
        .flat_map(|d| d.messages().iter().map(move |m| (d.id(), m)))
        .collect()
}

#[test]
fn every_message_compiles_captures_known_names_and_matches_its_example() {
    assert!(all().len() >= 40, "the messages are declared");
    assert_eq!(compiled().len(), all().len(), "every pattern compiles");
    for (d, m) in all() {
        let re = regex::RegexBuilder::new(m.pattern)
            .multi_line(true)
            .build()
            .unwrap();
        for name in re.capture_names().flatten() {
            assert!(CAPTURES.contains(&name), "{d}: unknown capture {name}");
        }
        assert!(
            re.is_match(m.example),
            "{d}: the example {:?} does not match {:?}",
            m.example,
            m.pattern
        );
        // Each capture a place uses is captured by some message of the same program.
        for t in m.places {
            for (i, _) in t.match_indices('{') {
                let name = t[i + 1..].split(['}', ':']).next().unwrap();
                let captured = all().iter().any(|(d2, m2)| {
                    *d2 == d
                        && m2.program == m.program
                        && regex::Regex::new(m2.pattern)
                            .unwrap()
                            .capture_names()
                            .flatten()
                            .any(|n| n == name)
                });
                assert!(captured, "{d}: {t} uses {name}, which no message captures");
            }
        }
    }
}

#[test]
fn each_example_is_recognised_as_its_program() {
    for (d, m) in all() {
        if m.places.is_empty() {
            continue;
        }
        let r = recognise(m.example);
        assert!(
            r.iter().any(|r| r.dialect == d && r.program == m.program),
            "{d}: {:?} recognised as {r:#?}",
            m.example
        );
    }
}

#[test]
fn a_message_gives_its_lock_with_what_it_says() {
    let ctx = Context::new(
        "/home/me/app".into(),
        [("HOME".to_string(), "/home/me".to_string())],
    );
    let first = |text: &str| recognise(text).into_iter().next().expect(text);
    let places = |text: &str| -> Vec<String> {
        first(text)
            .places(&ctx)
            .iter()
            .map(Place::display)
            .collect()
    };
    assert_eq!(
        places("fatal: Unable to create '/src/app/.git/index.lock': File exists."),
        ["/src/app/.git/index.lock"]
    );
    // Postgres names the file; its hint names the data directory and the PID.
    let pg = "2026-12-07 19:43:27.926 UTC [21686] FATAL:  lock file \"postmaster.pid\" already exists\n\
              2026-12-07 19:43:27.926 UTC [21686] HINT:  Is another postmaster (PID 21584) running in data directory \"/srv/pg\"?\n";
    let r = first(pg);
    assert_eq!((r.program, r.pid()), ("PostgreSQL", Some(21584)));
    assert_eq!(
        places(pg),
        ["/srv/pg/postmaster.pid", "/home/me/app/postmaster.pid"]
    );
    let de = "FATAL:  Sperrdatei »postmaster.pid« existiert bereits\n\
              TIPP:  Läuft bereits ein anderer postmaster-Prozess (PID 7) im Datenverzeichnis »/srv/pg«?";
    assert_eq!((first(de).lang, first(de).pid()), ("de", Some(7)));
    assert_eq!(places(de)[0], "/srv/pg/postmaster.pid");
    // vim: the swap file in quotes, and the file it protects.
    let vim = "E325: ATTENTION\nFound a swap file by the name \".notes.txt.swp\"\n          owned by: me   dated: Mon Dec 07 19:53:45 2026\n         file name: ~/docs/notes.txt\n          modified: no\n        process ID: 11926 (STILL RUNNING)\n";
    assert_eq!(first(vim).pid(), Some(11926));
    assert_eq!(
        places(vim),
        [
            "/home/me/app/.notes.txt.swp",
            "/home/me/docs/.notes.txt.swp"
        ]
    );
    assert_eq!(
        places(
            "(EE) Server is already active for display 57\n\tIf this server is no longer running, remove /tmp/.X57-lock\n"
        ),
        ["/tmp/.X57-lock"]
    );
    let apt = "E: Could not get lock /var/lib/dpkg/lock-frontend. It is held by process 19780 (apt-get)\n";
    assert_eq!(first(apt).pid(), Some(19780));
    assert_eq!(places(apt), ["/var/lib/dpkg/lock-frontend"]);
    let lists = "E: Could not get lock /var/lib/apt/lists/lock - open (11: Resource temporarily unavailable)";
    assert_eq!(places(lists), ["/var/lib/apt/lists/lock"]);
    assert_eq!(
        places(
            "Error: Error acquiring the state lock\n\nLock Info:\n  ID:  x\n  Path:      envs/prod.tfstate\n"
        ),
        [
            "/home/me/app/envs/.prod.tfstate.lock.info",
            "/home/me/app/.terraform.tfstate.lock.info"
        ]
    );
    let gpg = first("gpg: waiting for lock (held by 4242) ...");
    assert_eq!((gpg.program, gpg.pid()), ("GnuPG", Some(4242)));
    let hg = first(
        "abort: working directory of /src/r: timed out waiting for lock held by 'build-7:4242'",
    );
    assert_eq!(hg.host(), Some("build-7"));
    // Text that is no program's message recognises nothing.
    assert!(recognise("everything is fine").is_empty());
    assert!(
        recognise("        process ID: 4242").is_empty(),
        "a supporting line alone"
    );
}

#[test]
fn the_paths_a_text_names() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("run.lock"), "").unwrap();
    let ctx = Context::new(dir.path().to_path_buf(), []);
    let text = format!(
        "erreur : impossible de verrouiller « run.lock » (et '{}/x.pid'); /tmp/a.pid, \"nope\"",
        dir.path().display()
    );
    assert_eq!(
        paths_in(&text, &ctx),
        [dir.path().join("run.lock"), PathBuf::from("/tmp/a.pid")]
    );
}

/// The book's list of messages (`docs/src/why.md`, `## Error messages`) is made from the
/// declarations: run with `LOCKSMITH_BLESS=1` to write it again.
#[test]
fn the_book_lists_every_message() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/src/why.md");
    let readme = std::fs::read_to_string(path).unwrap();
    let (start, end) = (
        "<!-- messages: made from the dialects' declarations -->\n",
        "<!-- end of messages -->\n",
    );
    let table = messages_table();
    let (Some(a), Some(b)) = (readme.find(start), readme.find(end)) else {
        panic!("docs/src/why.md has no list of messages between {start:?} and {end:?}");
    };
    let current = &readme[a + start.len()..b];
    if current != table {
        if std::env::var_os("LOCKSMITH_BLESS").is_some() {
            let new = format!("{}{table}{}", &readme[..a + start.len()], &readme[b..]);
            std::fs::write(path, new).unwrap();
        } else {
            panic!(
                "the list of messages in docs/src/why.md is out of date: run LOCKSMITH_BLESS=1 cargo test --lib why::tests::the_book_lists_every_message"
            );
        }
    }
}

/// The table of messages: program, dialect, what it prints (the English example, its
/// first line), the languages matched.
fn messages_table() -> String {
    let mut rows: Vec<(String, DialectId, String, Vec<&str>)> = Vec::new();
    for (d, m) in all() {
        if m.places.is_empty() {
            continue;
        }
        let first = m
            .example
            .lines()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("");
        let row = rows.iter_mut().find(|r| r.0 == m.program && r.1 == d);
        match row {
            Some(r) if m.lang != "en" => {
                if !r.3.contains(&m.lang) {
                    r.3.push(m.lang);
                }
            }
            _ => rows.push((
                m.program.to_string(),
                d,
                first.trim().to_string(),
                vec![m.lang],
            )),
        }
    }
    let mut out = String::from("| program | dialect | message | languages |\n|---|---|---|---|\n");
    for (program, d, text, langs) in rows {
        let text = text.replace('|', "\\|");
        out.push_str(&format!(
            "| {program} | `{d}` | `{text}` | {} |\n",
            langs.join(", ")
        ));
    }
    out
}
