//! The engine's public surface stays small: at most 16 items reachable from the crate root
//! (every name a `pub use` brings in, and every `pub` item of `src/lib.rs` itself), and none
//! of them a scanner's model of holders, processes, containers or proofs. Counted from the
//! source, so no rustdoc is needed: the crate's modules are private (a `pub mod` fails here),
//! so the root is all there is.

use std::path::Path;

/// The most items the root may have.
const MOST: usize = 16;

/// What belongs to a scanner, not to a lock engine (fd-lock, fs2 and py-filelock export one
/// to three types).
const NOT_THE_ENGINE_S: &[&str] = &[
    "ByteRange",
    "ContainerId",
    "ContainerInfo",
    "Direct",
    "Holder",
    "HolderHow",
    "LockMode",
    "ParsedRecord",
    "ProcessInfo",
    "Proof",
    "RecordFormat",
    "describe_holders",
];

/// The names the crate root makes public, from its source.
fn root_items(lib_rs: &str) -> Result<Vec<String>, String> {
    let mut items = Vec::new();
    let mut pending: Option<String> = None;
    for line in lib_rs.lines() {
        if let Some(p) = &mut pending {
            p.push_str(line);
            if line.contains(';') {
                items.extend(use_names(&pending.take().unwrap()));
            }
            continue;
        }
        if line.starts_with("#[macro_export]") {
            return Err("an exported macro is public at the root".into());
        }
        // Items at the root are not indented; methods in `impl` blocks are. `pub(crate)` is
        // not public.
        let Some(rest) = line.strip_prefix("pub ") else {
            continue;
        };
        if let Some(u) = rest.strip_prefix("use ") {
            if u.contains(';') {
                items.extend(use_names(u));
            } else {
                pending = Some(u.to_string());
            }
            continue;
        }
        let mut words = rest.split_whitespace();
        let mut kind = words.next().unwrap_or_default();
        if matches!(kind, "unsafe" | "async") || rest.starts_with("const fn") {
            kind = words.next().unwrap_or_default();
        }
        match kind {
            "mod" => return Err(format!("a public module makes all of it public: {line}")),
            "struct" | "enum" | "trait" | "fn" | "const" | "type" | "static" | "union" => {
                let name: String = words
                    .next()
                    .unwrap_or_default()
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                items.push(name);
            }
            _ => return Err(format!("an item this count does not know: {line}")),
        }
    }
    Ok(items)
}

/// The names a `use` path brings in: `a::{B, C}` → B, C; `a::B as D` → D; `a::*` is refused
/// by the caller (it shows as `*`).
fn use_names(u: &str) -> Vec<String> {
    let body = u.trim().trim_end_matches(';');
    let list = match (body.find('{'), body.rfind('}')) {
        (Some(open), Some(close)) => &body[open + 1..close],
        _ => body.rsplit("::").next().unwrap_or(body),
    };
    list.split(',')
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .map(|n| match n.split_once(" as ") {
            Some((_, alias)) => alias.trim().to_string(),
            None => n.rsplit("::").next().unwrap_or(n).to_string(),
        })
        .collect()
}

#[test]
fn the_root_has_at_most_16_items_and_no_scanner_model() {
    let lib = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs");
    let source = std::fs::read_to_string(&lib).unwrap();
    let items = root_items(&source).unwrap_or_else(|e| panic!("{}: {e}", lib.display()));
    assert!(
        !items.iter().any(|i| i == "*" || i == "self"),
        "a glob or module re-export hides how many items it brings: {items:?}"
    );
    assert!(
        items.len() <= MOST,
        "{} public items at the root, at most {MOST}: {items:?}",
        items.len()
    );
    let scanners: Vec<&String> = items
        .iter()
        .filter(|i| NOT_THE_ENGINE_S.contains(&i.as_str()))
        .collect();
    assert!(
        scanners.is_empty(),
        "the scanner's model belongs to the scanner: {scanners:?}"
    );
}

#[test]
fn the_count_sees_every_kind_of_root_item() {
    let source = "\
//! docs
pub use error::{EngineError, ErrorKind};
pub use judge::{
    LockFile,
    Witness,
};
pub use record::Record as OwnerRecord;
pub(crate) use hidden::Thing;
use private::Other;
pub const DEFAULT: u32 = 1;
pub struct Lock {
    pub field: u32,
}
impl Lock {
    pub fn method(&self) {}
}
pub fn free() {}
pub trait T {}
pub enum E { A }
pub type Alias = u32;
pub static S: u32 = 0;
";
    assert_eq!(
        root_items(source).unwrap(),
        [
            "EngineError",
            "ErrorKind",
            "LockFile",
            "Witness",
            "OwnerRecord",
            "DEFAULT",
            "Lock",
            "free",
            "T",
            "E",
            "Alias",
            "S"
        ]
    );
    assert!(root_items("pub mod judge;").is_err());
    assert!(root_items("#[macro_export]\nmacro_rules! m { () => {} }").is_err());
    assert_eq!(root_items("pub use judge::*;").unwrap(), ["*"]);
}
