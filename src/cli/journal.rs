//! `locksmith journal [--json]`: what reclaim removed (and what was restored), grouped by run
//! (one process of locksmith: a `--scan --reclaim`, a UI session, a `restore`), the runs in
//! the order they first wrote, the entries of each oldest first, from the state directory's
//! `journal.jsonl`. Entries are numbered by their line in the journal (what `locksmith
//! restore N` takes), whatever their run.

use std::collections::HashMap;
use std::io::{self, Write};

use locksmith::reclaim::{self, Entry, Event, ReclaimOptions, restore};
use locksmith::text;

use crate::JournalArgs;

pub fn run(args: JournalArgs) -> i32 {
    let state_dir = ReclaimOptions::default_state_dir();
    let entries = match restore::entries(&state_dir) {
        Ok(e) => e,
        Err(e) => {
            super::report_error("journal", &e.to_string());
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
            super::report_error("journal", &e.to_string());
            2
        }
    }
}

/// The runs of `entries`, in the order each first wrote, each with its entries (and their
/// numbers, from 1) oldest first.
fn runs(entries: &[Entry]) -> Vec<(&str, Vec<(usize, &Entry)>)> {
    let mut order: Vec<(&str, Vec<(usize, &Entry)>)> = Vec::new();
    let mut at: HashMap<&str, usize> = HashMap::new();
    for (i, e) in entries.iter().enumerate() {
        let slot = *at.entry(e.run.as_str()).or_insert_with(|| {
            order.push((e.run.as_str(), Vec::new()));
            order.len() - 1
        });
        order[slot].1.push((i + 1, e));
    }
    order
}

fn json(state_dir: &std::path::Path, entries: &[Entry]) -> String {
    let runs: Vec<serde_json::Value> = runs(entries)
        .into_iter()
        .map(|(run, items)| {
            let listed: Vec<serde_json::Value> = items
                .iter()
                .map(|(n, e)| {
                    let mut v = serde_json::to_value(e).unwrap_or_default();
                    v["number"] = (*n).into();
                    v
                })
                .collect();
            serde_json::json!({ "run": run, "entries": listed })
        })
        .collect();
    let doc = serde_json::json!({
        "version": reclaim::journal::VERSION,
        "state_dir": text::json_path(state_dir),
        "runs": runs,
        "entries": entries,
    });
    let pretty = serde_json::to_string_pretty(&doc).unwrap_or_default();
    format!("{}\n", text::terminal_safe_json(&pretty))
}

fn table(entries: &[Entry]) -> String {
    if entries.is_empty() {
        return "the journal is empty: nothing was reclaimed\n".into();
    }
    let done = restore::restored_ids(entries);
    let cancelled = restore::cancelled_ids(entries);
    let number: HashMap<&str, usize> = entries
        .iter()
        .enumerate()
        .map(|(i, e)| (e.id.as_str(), i + 1))
        .collect();
    let header = [
        "#", "TIME", "BATCH", "EVENT", "DIALECT", "KIND", "STATE", "PATH",
    ]
    .map(String::from);
    let mut groups = Vec::new();
    for (run, items) in runs(entries) {
        let reclaimed = items
            .iter()
            .filter(|(_, e)| e.event == Event::Reclaim)
            .count();
        let undoable = items
            .iter()
            .filter(|(_, e)| {
                e.event == Event::Reclaim
                    && e.not_saved.is_none()
                    && !done.contains(e.id.as_str())
                    && !cancelled.contains(e.id.as_str())
            })
            .count();
        let restored = items
            .iter()
            .filter(|(_, e)| e.event == Event::Restore)
            .count();
        let mut what = Vec::new();
        if reclaimed > 0 {
            what.push(format!("{reclaimed} reclaimed ({undoable} undoable)"));
        }
        if restored > 0 {
            what.push(format!("{restored} restored"));
        }
        let failed = items.len() - reclaimed - restored;
        if failed > 0 {
            what.push(format!("{failed} failed"));
        }
        let title = format!("run {}: {}", text::escape(run), what.join(", "));
        let rows: Vec<[String; 8]> = items
            .iter()
            .map(|(n, e)| {
                let state = match e.event {
                    Event::Reclaim if done.contains(e.id.as_str()) => "restored".to_string(),
                    Event::Reclaim if cancelled.contains(e.id.as_str()) => "not removed".into(),
                    Event::Reclaim if e.not_saved.is_some() => "no copy".into(),
                    Event::Reclaim => "undoable".into(),
                    Event::Restore => e
                        .restores
                        .as_deref()
                        .and_then(|id| number.get(id))
                        .map_or_else(|| "-".into(), |n| format!("of #{n}")),
                    Event::ReclaimFailed => "kept".into(),
                };
                let time = e.time.get(..19).unwrap_or(&e.time).replace('T', " ");
                [
                    n.to_string(),
                    text::escape(&time),
                    e.batch.map_or_else(|| "-".into(), |b| b.to_string()),
                    e.event.as_str().to_string(),
                    text::escape(e.dialect.as_deref().unwrap_or("-")),
                    text::escape(e.meta.as_ref().map_or("-", |m| m.kind.as_str())),
                    state,
                    text::display_path(&e.path_buf()),
                ]
            })
            .collect();
        groups.push((title, rows));
    }
    // One set of column widths for every run, so that they line up.
    let mut widths = [0usize; 8];
    for r in std::iter::once(&header).chain(groups.iter().flat_map(|(_, rows)| rows)) {
        for (w, c) in widths.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line = |r: &[String; 8]| -> String {
        let mut line = String::new();
        for (i, (c, w)) in r.iter().zip(widths).enumerate() {
            if i + 1 == r.len() {
                line.push_str(c);
            } else {
                line.push_str(&format!("{c:<w$}  "));
            }
        }
        format!("{}\n", line.trim_end())
    };
    let mut out = String::new();
    for (i, (title, rows)) in groups.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(title);
        out.push('\n');
        out.push_str(&line(&header));
        for r in rows {
            out.push_str(&line(r));
        }
    }
    out.push_str(
        "\nrestore one with `locksmith restore #` (or its path as shown), a run with `locksmith \
         restore --run ID`, the last batch with `--last-batch`; `--dry-run` shows what would \
         come back\n",
    );
    out
}
