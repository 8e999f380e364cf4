//! The reference chapters of the book (`docs/src/reference/`), made from the code so that they
//! cannot drift from it: the command line from the one clap definition (`main.rs`), the keys
//! from the key map (`src/tui/keymap.rs`), the dialects from each dialect's own data
//! ([`locksmith::dialect::About`], its patterns and its messages) and the JSON report's
//! fields from its schema (`tests/report.schema.json`).
//!
//! A test makes them again and fails when a file in the tree differs;
//! `LOCKSMITH_BLESS=1 cargo test --bin locksmith reference` writes them anew. Another test
//! fails when a dialect module under `src/dialect/` has no entry.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use clap::CommandFactory;
use locksmith::dialect::{self, Dialect};
use serde_json::Value;

use crate::Cli;

/// Where the generated chapters live.
fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/src/reference")
}

/// Every generated chapter: its file name and its text.
fn chapters() -> Vec<(&'static str, String)> {
    vec![
        ("cli.md", command_line()),
        ("keys.md", keys()),
        ("dialects.md", dialects()),
        ("json.md", json_report()),
    ]
}

const GENERATED: &str = "<!-- Generated from the code by `LOCKSMITH_BLESS=1 cargo test --bin locksmith reference`: do not edit. -->\n\n";

/// Text for one cell of a Markdown table: one line, `|` escaped.
fn cell(text: &str) -> String {
    text.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .replace('|', "\\|")
}

// ---------------------------------------------------------------------------------------
// The command line.

fn command_line() -> String {
    let mut cmd = Cli::command();
    cmd.build();
    let mut out = String::from(GENERATED);
    out.push_str("# Command line\n\n");
    out.push_str(
        "Every command and option of `locksmith`, as `--help` gives them (the man pages and the \
         shell completions in `assets/share/` are made from the same definition).\n\n",
    );
    command(&mut out, &cmd, "locksmith");
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        if sub.get_name() == "help" {
            continue;
        }
        command(&mut out, sub, &format!("locksmith {}", sub.get_name()));
    }
    out
}

fn command(out: &mut String, cmd: &clap::Command, name: &str) {
    let _ = writeln!(out, "## `{name}`\n");
    if let Some(about) = cmd.get_long_about().or(cmd.get_about()) {
        let _ = writeln!(out, "{}\n", about.to_string().trim());
    }
    let usage = cmd.clone().render_usage().to_string();
    let _ = writeln!(out, "```text\n{}\n```\n", usage.trim());
    let args: Vec<&clap::Arg> = cmd
        .get_arguments()
        .filter(|a| !a.is_hide_set() && a.get_id() != "help" && a.get_id() != "version")
        .collect();
    if !args.is_empty() {
        out.push_str("| argument | what it does |\n|---|---|\n");
        for a in args {
            let _ = writeln!(out, "| {} | {} |", arg_name(a), cell(&arg_help(a)));
        }
        out.push('\n');
    }
    if let Some(after) = cmd.get_after_long_help().or(cmd.get_after_help()) {
        let _ = writeln!(out, "```text\n{}\n```\n", after.to_string().trim_end());
    }
}

fn arg_name(a: &clap::Arg) -> String {
    let values: Vec<String> = a
        .get_value_names()
        .map(|v| v.iter().map(|n| n.to_string()).collect())
        .unwrap_or_else(|| vec![a.get_id().to_string().to_uppercase()]);
    if a.is_positional() {
        let v = values.join(" ");
        return match a.get_num_args() {
            Some(r) if r.max_values() > 1 => format!("`{v}...`"),
            _ => format!("`{v}`"),
        };
    }
    let mut names = Vec::new();
    if let Some(s) = a.get_short() {
        names.push(format!("-{s}"));
    }
    if let Some(l) = a.get_long() {
        names.push(format!("--{l}"));
    }
    let takes = a.get_num_args().is_some_and(|r| r.takes_values());
    let flag = names.join(", ");
    if takes {
        format!("`{flag} {}`", values.join(" "))
    } else {
        format!("`{flag}`")
    }
}

fn arg_help(a: &clap::Arg) -> String {
    let text = a
        .get_long_help()
        .or(a.get_help())
        .map(|h| h.to_string())
        .unwrap_or_default();
    let mut text = text.trim_end().to_string();
    let sentence = |text: &mut String, more: String| {
        if !text.is_empty() && !text.ends_with('.') {
            text.push('.');
        }
        if !text.is_empty() {
            text.push(' ');
        }
        text.push_str(&more);
    };
    let possible: Vec<String> = a
        .get_possible_values()
        .iter()
        .filter(|v| !v.is_hide_set())
        .map(|v| format!("`{}`", v.get_name()))
        .collect();
    if !possible.is_empty() {
        sentence(&mut text, format!("Values: {}.", possible.join(", ")));
    }
    let takes_values = a.get_num_args().is_some_and(|r| r.takes_values());
    let defaults: Vec<String> = a
        .get_default_values()
        .iter()
        .map(|v| format!("`{}`", v.to_string_lossy()))
        .collect();
    if takes_values && !defaults.is_empty() {
        sentence(&mut text, format!("Default: {}.", defaults.join(", ")));
    }
    text
}

// ---------------------------------------------------------------------------------------
// The keys.

fn keys() -> String {
    let mut out = String::from(GENERATED);
    out.push_str("# Keys\n\n");
    out.push_str(
        "Every key of the terminal UI, by where it works. The UI's key bar, its `?` help and \
         every message that names a key are made from the same key map, so they agree with \
         this table.\n\n",
    );
    out.push_str(&crate::tui::key_map_markdown());
    out
}

// ---------------------------------------------------------------------------------------
// The dialects.

fn dialects() -> String {
    let mut out = String::from(GENERATED);
    out.push_str("# Dialects\n\n");
    out.push_str(
        "Every lock format locksmith knows, in the order they are tried. What each dialect \
         says of its lock is checked by the judge; only the rules named here can make it \
         `stale` (see [the rules](../proof.md#every-path-to-stale)). Any lock naming an owner \
         PID is also `stale` by `kernel-lock-released` once the start guard beside it, held \
         by the service `locksmith start` started, is released. A dialect of your own is \
         declared in the configuration ([declared dialects](../configuration.md#declared-dialects)).\n\n",
    );
    out.push_str("| dialect | writer | can be proven stale by |\n|---|---|---|\n");
    for d in dialect::registry() {
        let a = d.about();
        let _ = writeln!(
            out,
            "| [`{id}`](#{id}) | {} | {} |",
            cell(a.writer),
            rules(&a),
            id = d.id()
        );
    }
    out.push('\n');
    for d in dialect::registry() {
        entry(&mut out, *d);
    }
    out
}

fn rules(a: &dialect::About) -> String {
    if a.rules.is_empty() {
        "never stale".into()
    } else {
        let ids: Vec<String> = a.rules.iter().map(|r| format!("`{r}`")).collect();
        ids.join(", ")
    }
}

fn entry(out: &mut String, d: &dyn Dialect) {
    let a = d.about();
    let _ = writeln!(out, "## `{}`\n", d.id());
    let _ = writeln!(out, "- **Writer**: {}", a.writer);
    let names: Vec<String> = d
        .patterns()
        .iter()
        .map(|p| format!("`{}`", p.replace('`', "'")))
        .collect();
    if names.is_empty() {
        let _ = writeln!(
            out,
            "- **File names**: any (recognised by content or by a kernel lock)"
        );
    } else {
        let _ = writeln!(out, "- **File names**: {}", names.join(", "));
    }
    if d.any_name() && !names.is_empty() {
        let _ = writeln!(
            out,
            "- **Also**: any other name, recognised by content or by a kernel lock"
        );
    }
    let _ = writeln!(out, "- **Place and shape**: {}", a.found_as);
    let _ = writeln!(out, "- **Judged by**: {}", a.judged_by);
    let _ = writeln!(out, "- **Can be proven stale by**: {}", rules(&a));
    if let Some(source) = a.source {
        let _ = writeln!(out, "- **The writer's own source**: {source}");
    }
    let mut programs: Vec<&str> = Vec::new();
    for m in d.messages() {
        if !programs.contains(&m.program) {
            programs.push(m.program);
        }
    }
    if !programs.is_empty() {
        let count = d.messages().len();
        let _ = writeln!(
            out,
            "- **Error messages** (`locksmith why`): {count} of {} ([the list](../why.md#error-messages))",
            programs.join(", ")
        );
    }
    out.push('\n');
}

// ---------------------------------------------------------------------------------------
// The JSON report.

fn json_report() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/report.schema.json");
    let schema: Value =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("the schema")).unwrap();
    let mut out = String::from(GENERATED);
    out.push_str("# The JSON report\n\n");
    let _ = writeln!(
        out,
        "The fields of the document `locksmith --scan --json` prints (and `locksmith why \
         --json`, `locksmith replay --json`), from its JSON Schema, `tests/report.schema.json`. \
         A field marked *required* is always there (its value may be `null` where the type \
         allows it).\n"
    );
    out.push_str("| field | type | | what it is |\n|---|---|---|---|\n");
    fields(&mut out, "", &schema);
    if let Some(defs) = schema.get("$defs").and_then(Value::as_object) {
        for (name, def) in defs {
            let _ = writeln!(out, "\n## `{name}`\n");
            if let Some(d) = def.get("description").and_then(Value::as_str) {
                let _ = writeln!(out, "{d}\n");
            }
            out.push_str("| field | type | | what it is |\n|---|---|---|---|\n");
            fields(&mut out, "", def);
        }
    }
    out
}

/// One row per property of `schema` (an object), then the properties of its objects and of
/// the objects its arrays hold, depth first, each path written `a.b[].c`.
fn fields(out: &mut String, prefix: &str, schema: &Value) {
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return;
    };
    for (name, prop) in props {
        let path = format!("{prefix}{name}");
        let _ = writeln!(
            out,
            "| `{path}` | {} | {} | {} |",
            type_of(prop),
            if required.contains(&name.as_str()) {
                "required"
            } else {
                ""
            },
            cell(
                prop.get("description")
                    .and_then(Value::as_str)
                    .unwrap_or("")
            )
        );
        fields(out, &format!("{path}."), prop);
        if let Some(items) = prop.get("items") {
            fields(out, &format!("{path}[]."), items);
        }
    }
}

fn type_of(prop: &Value) -> String {
    if let Some(c) = prop.get("const") {
        return format!("`{c}`");
    }
    if let Some(e) = prop.get("enum").and_then(Value::as_array) {
        let values: Vec<String> = e.iter().map(|v| format!("`{v}`")).collect();
        return values.join(" \\| ");
    }
    if let Some(r) = prop.get("$ref").and_then(Value::as_str) {
        return format!("see `{r}`");
    }
    let types: Vec<String> = match prop.get("type") {
        Some(Value::String(t)) => vec![t.clone()],
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .map(String::from)
            .collect(),
        _ => Vec::new(),
    };
    let types: Vec<String> = types
        .into_iter()
        .map(|t| match (t.as_str(), prop.get("items")) {
            ("array", Some(items)) => format!("array of {}", type_of(items)),
            _ => t,
        })
        .collect();
    types.join(" or ")
}

// ---------------------------------------------------------------------------------------

mod tests {
    use super::*;

    #[test]
    fn reference_is_current() {
        let bless = std::env::var_os("LOCKSMITH_BLESS").is_some_and(|v| !v.is_empty());
        let mut stale = Vec::new();
        for (name, text) in chapters() {
            let path = dir().join(name);
            if std::fs::read_to_string(&path).ok().as_deref() == Some(text.as_str()) {
                continue;
            }
            if bless {
                std::fs::create_dir_all(dir()).unwrap();
                std::fs::write(&path, text).unwrap();
            } else {
                stale.push(path.display().to_string());
            }
        }
        assert!(
            stale.is_empty(),
            "the reference differs from the code: {}\n\
             Regenerate it with: LOCKSMITH_BLESS=1 cargo test --bin locksmith reference",
            stale.join(", ")
        );
    }

    /// Every module under `src/dialect/` that implements a dialect is in the registry, has
    /// its data, and so its entry in the generated reference.
    #[test]
    fn every_dialect_module_has_its_entry() {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/dialect");
        let ids = std::fs::read_to_string(src.join("mod.rs")).unwrap();
        let reference = dialects();
        let mut modules = 0;
        for entry in std::fs::read_dir(&src).unwrap() {
            let path = entry.unwrap().path();
            let text = std::fs::read_to_string(&path).unwrap();
            if !text.contains("impl Dialect for") || path.ends_with("declared.rs") {
                continue; // helpers, and the dialects declared in a configuration
            }
            modules += 1;
            let name = path.file_name().unwrap().to_string_lossy();
            let (_, after) = text
                .split_once("fn id(&self) -> DialectId {")
                .unwrap_or_else(|| panic!("{name}: no fn id"));
            let constant = after
                .split_once("DialectId::")
                .and_then(|(_, c)| {
                    c.split(|ch: char| !ch.is_ascii_alphanumeric() && ch != '_')
                        .next()
                })
                .unwrap_or_else(|| panic!("{name}: fn id names no DialectId constant"));
            let decl = format!("pub const {constant}: DialectId = DialectId(\"");
            let id = ids
                .split_once(&decl)
                .and_then(|(_, rest)| rest.split_once('"'))
                .map(|(id, _)| id)
                .unwrap_or_else(|| panic!("{name}: DialectId::{constant} is not declared"));
            let d =
                dialect::by_id(id).unwrap_or_else(|| panic!("{name}: {id} is not in the registry"));
            let a = d.about();
            for (field, value) in [
                ("writer", a.writer),
                ("found_as", a.found_as),
                ("judged_by", a.judged_by),
            ] {
                assert!(
                    !value.trim().is_empty(),
                    "{name}: dialect {id} has no `{field}` in its `about()`"
                );
            }
            for rule in a.rules {
                assert!(
                    locksmith::Rule::by_id(rule).is_some(),
                    "{name}: dialect {id} names `{rule}`, which is no rule of the judge"
                );
            }
            assert!(
                reference.contains(&format!("\n## `{id}`\n")),
                "{name}: no entry for {id} in the reference"
            );
        }
        assert_eq!(
            modules,
            dialect::registry().len(),
            "every dialect of the registry is a module of its own under src/dialect/"
        );
    }
}
