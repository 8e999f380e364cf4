//! `locksmith journal [--json]`: what reclaim removed (and what was restored), oldest first,
//! from the state directory's `journal.jsonl`.

use std::io::{self, Write};

use locksmith::reclaim::{self, Event, ReclaimOptions, restore};
use locksmith::text;

use crate::JournalArgs;

pub fn run(args: JournalArgs) -> i32 {
    let state_dir = ReclaimOptions::default_state_dir();
    let entries = match restore::entries(&state_dir) {
        Ok(e) => e,
        Err(e) => {
            eprintln!("locksmith journal: {}", text::escape(&e.to_string()));
            return 2;
        }
    };
    let out = if args.json {
        json(&state_dir, &entries)
    } else {
        table(&entries)
    };
    match io::stdout().lock().write_all(out.as_bytes()) {
        Ok(()) => 0,
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => 0,
        Err(e) => {
            eprintln!("locksmith journal: {e}");
            2
        }
    }
}

fn json(state_dir: &std::path::Path, entries: &[reclaim::Entry]) -> String {
    let doc = serde_json::json!({
        "version": reclaim::journal::VERSION,
        "state_dir": text::json_path(state_dir),
        "entries": entries,
    });
    let pretty = serde_json::to_string_pretty(&doc).unwrap_or_default();
    format!("{}\n", text::terminal_safe_json(&pretty))
}

fn table(entries: &[reclaim::Entry]) -> String {
    if entries.is_empty() {
        return "the journal is empty: nothing was reclaimed\n".into();
    }
    let done = restore::restored_ids(entries);
    let mut rows = vec![[
        "#".to_string(),
        "TIME".into(),
        "EVENT".into(),
        "DIALECT".into(),
        "KIND".into(),
        "STATE".into(),
        "PATH".into(),
    ]];
    for (i, e) in entries.iter().enumerate() {
        let state = match e.event {
            Event::Reclaim if done.contains(e.id.as_str()) => "restored",
            Event::Reclaim if e.not_saved.is_some() => "no copy",
            Event::Reclaim => "undoable",
            Event::Restore => "-",
            Event::ReclaimFailed => "kept",
        };
        let time = e.time.get(..19).unwrap_or(&e.time).replace('T', " ");
        rows.push([
            (i + 1).to_string(),
            text::escape(&time),
            e.event.as_str().to_string(),
            text::escape(e.dialect.as_deref().unwrap_or("-")),
            text::escape(e.meta.as_ref().map_or("-", |m| m.kind.as_str())),
            state.to_string(),
            text::display_path(&e.path_buf()),
        ]);
    }
    let mut widths = [0usize; 7];
    for r in &rows {
        for (w, c) in widths.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    let mut out = String::new();
    for r in &rows {
        let mut line = String::new();
        for (i, (c, w)) in r.iter().zip(widths).enumerate() {
            if i + 1 == r.len() {
                line.push_str(c);
            } else {
                line.push_str(&format!("{c:<w$}  "));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out.push_str("restore one with `locksmith restore #` (or its path; no argument: the last)\n");
    out
}
