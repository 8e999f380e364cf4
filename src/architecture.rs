//! The layering, checked: code flows one way, probe → evidence → dialects → scan → report/UI →
//! reclaim, with the engine at the bottom, used by all. This test reads the sources of every
//! crate of the workspace (`src/**/*.rs`, the library's and the binary's, and
//! `crates/*/src/**/*.rs`), builds each crate's graph of which top-level module refers to which
//! (and, inside each module, which submodule refers to which sibling, at every depth), and
//! fails naming every cycle, with the crate and the lines that make it.
//!
//! A reference is any path through `crate::`, `super::` or `self::` in code (and `locksmith::`
//! in the root crate; `use` lists included, re-exports followed to the submodule that defines
//! the item); comments, strings and `#[cfg(test)]` code are left out: tests may reach across
//! layers. Paths into other crates make no edge: crates depend one way by construction (cargo
//! refuses a cycle between them).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

/// A reference from one module to another, and where it is written.
#[derive(Debug, Clone)]
struct Edge {
    file: PathBuf,
    line: usize,
}

#[derive(Default)]
struct Graph {
    /// from → to → the first place that makes the edge.
    edges: BTreeMap<String, BTreeMap<String, Edge>>,
}

impl Graph {
    fn add(&mut self, from: &str, to: &str, at: Edge) {
        if from != to {
            self.edges
                .entry(from.to_string())
                .or_default()
                .entry(to.to_string())
                .or_insert(at);
        }
    }

    fn has(&self, from: &str, to: &str) -> bool {
        self.edges.get(from).is_some_and(|t| t.contains_key(to))
    }

    /// The strongly connected components with more than one module (Tarjan's algorithm).
    fn cycles(&self) -> Vec<Vec<String>> {
        struct State<'a> {
            g: &'a Graph,
            index: HashMap<&'a str, usize>,
            low: HashMap<&'a str, usize>,
            stack: Vec<&'a str>,
            on_stack: BTreeSet<&'a str>,
            out: Vec<Vec<String>>,
        }
        fn visit<'a>(s: &mut State<'a>, v: &'a str) {
            let i = s.index.len();
            s.index.insert(v, i);
            s.low.insert(v, i);
            s.stack.push(v);
            s.on_stack.insert(v);
            if let Some(next) = s.g.edges.get(v) {
                for w in next.keys() {
                    let w = w.as_str();
                    if !s.index.contains_key(w) {
                        visit(s, w);
                        let lw = s.low[w];
                        let lv = s.low.get_mut(v).unwrap();
                        *lv = (*lv).min(lw);
                    } else if s.on_stack.contains(w) {
                        let iw = s.index[w];
                        let lv = s.low.get_mut(v).unwrap();
                        *lv = (*lv).min(iw);
                    }
                }
            }
            if s.low[v] == s.index[v] {
                let mut scc = Vec::new();
                loop {
                    let w = s.stack.pop().unwrap();
                    s.on_stack.remove(w);
                    scc.push(w.to_string());
                    if w == v {
                        break;
                    }
                }
                if scc.len() > 1 {
                    scc.sort();
                    s.out.push(scc);
                }
            }
        }
        let mut s = State {
            g: self,
            index: HashMap::new(),
            low: HashMap::new(),
            stack: Vec::new(),
            on_stack: BTreeSet::new(),
            out: Vec::new(),
        };
        for v in self.edges.keys() {
            if !s.index.contains_key(v.as_str()) {
                visit(&mut s, v);
            }
        }
        s.out
    }

    /// A readable account of one cycle: a closed walk through its modules, with the line of
    /// each step.
    fn describe(&self, scc: &[String], prefix: &str) -> String {
        let members: BTreeSet<&str> = scc.iter().map(String::as_str).collect();
        let start = scc[0].as_str();
        // Shortest way back to the start from each of its successors in the component.
        let mut best: Option<Vec<&str>> = None;
        for first in self.edges[start]
            .keys()
            .filter(|k| members.contains(k.as_str()))
        {
            let mut prev: HashMap<&str, &str> = HashMap::new();
            let mut queue = std::collections::VecDeque::from([first.as_str()]);
            prev.insert(first.as_str(), start);
            while let Some(v) = queue.pop_front() {
                if v == start {
                    break;
                }
                for w in self.edges.get(v).into_iter().flat_map(|e| e.keys()) {
                    if members.contains(w.as_str()) && !prev.contains_key(w.as_str()) {
                        prev.insert(w.as_str(), v);
                        queue.push_back(w.as_str());
                    }
                }
            }
            if !prev.contains_key(start) || first == start {
                continue;
            }
            let mut path = vec![start];
            let mut v = start;
            loop {
                v = prev[v];
                path.push(v);
                if v == start {
                    break;
                }
            }
            path.reverse();
            if best.as_ref().is_none_or(|b| path.len() < b.len()) {
                best = Some(path);
            }
        }
        let path = best.unwrap_or_default();
        let mut out = format!(
            "cycle among {{{}}}: {}\n",
            scc.iter()
                .map(|m| format!("{prefix}{m}"))
                .collect::<Vec<_>>()
                .join(", "),
            path.iter()
                .map(|m| format!("{prefix}{m}"))
                .collect::<Vec<_>>()
                .join(" -> ")
        );
        for w in path.windows(2) {
            let e = &self.edges[w[0]][w[1]];
            out.push_str(&format!(
                "  {prefix}{} -> {prefix}{}: {}:{}\n",
                w[0],
                w[1],
                e.file.display(),
                e.line
            ));
        }
        out
    }
}

/// Blanks comments, string and character literals (keeping line breaks), so that only code
/// is searched.
fn strip(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = b.to_vec();
    let blank = |out: &mut Vec<u8>, from: usize, to: usize| {
        for c in &mut out[from..to] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
    };
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'/' if b.get(i + 1) == Some(&b'/') => {
                let end = b[i..]
                    .iter()
                    .position(|&c| c == b'\n')
                    .map_or(b.len(), |p| i + p);
                blank(&mut out, i, end);
                i = end;
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let (mut depth, mut j) = (1, i + 2);
                while j < b.len() && depth > 0 {
                    if b[j] == b'/' && b.get(j + 1) == Some(&b'*') {
                        depth += 1;
                        j += 2;
                    } else if b[j] == b'*' && b.get(j + 1) == Some(&b'/') {
                        depth -= 1;
                        j += 2;
                    } else {
                        j += 1;
                    }
                }
                blank(&mut out, i, j);
                i = j;
            }
            b'r' | b'b' if !ident_before(b, i) && raw_string_at(b, i).is_some() => {
                let end = raw_string_at(b, i).unwrap();
                blank(&mut out, i, end);
                i = end;
            }
            b'"' => {
                let mut j = i + 1;
                while j < b.len() && b[j] != b'"' {
                    j += if b[j] == b'\\' { 2 } else { 1 };
                }
                blank(&mut out, i, (j + 1).min(b.len()));
                i = j + 1;
            }
            b'\'' => {
                // A character literal ('x', '\n', '\u{..}'), not a lifetime ('a).
                let end = if b.get(i + 1) == Some(&b'\\') {
                    b[i + 2..]
                        .iter()
                        .position(|&c| c == b'\'')
                        .map(|p| i + 2 + p + 1)
                } else {
                    let ch = text[i + 1..].chars().next().map_or(1, char::len_utf8);
                    (b.get(i + 1 + ch) == Some(&b'\'')).then_some(i + 2 + ch)
                };
                match end {
                    Some(end) => {
                        blank(&mut out, i, end);
                        i = end;
                    }
                    None => i += 1,
                }
            }
            _ => i += 1,
        }
    }
    String::from_utf8(out).expect("blanking keeps UTF-8 intact outside literals")
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

fn ident_before(b: &[u8], i: usize) -> bool {
    i > 0 && is_ident(b[i - 1])
}

/// The end of a raw (or byte) string literal starting at `i` (`r"…"`, `r#"…"#`, `br"…"`).
fn raw_string_at(b: &[u8], i: usize) -> Option<usize> {
    let mut j = i;
    if b[j] == b'b' {
        j += 1;
    }
    if b.get(j) != Some(&b'r') {
        return None;
    }
    j += 1;
    let hashes = b[j..].iter().take_while(|&&c| c == b'#').count();
    j += hashes;
    if b.get(j) != Some(&b'"') {
        return None;
    }
    let close: Vec<u8> = std::iter::once(b'"')
        .chain(std::iter::repeat_n(b'#', hashes))
        .collect();
    let rest = &b[j + 1..];
    let p = rest
        .windows(close.len())
        .position(|w| w == close.as_slice())?;
    Some(j + 1 + p + close.len())
}

/// Blanks the items under `#[cfg(test)]` (or `#[cfg(all(test, …))]`) and returns the names of
/// the test-only modules declared as files (`#[cfg(test)] mod tests;`).
fn drop_test_code(code: &mut String) -> Vec<String> {
    let mut files = Vec::new();
    for attr in ["#[cfg(test)]", "#[cfg(all(test"] {
        while let Some(start) = code.find(attr) {
            let b = code.as_bytes();
            let after = start + attr.len();
            let open = b[after..].iter().position(|&c| c == b'{' || c == b';');
            let Some(open) = open.map(|p| after + p) else {
                break;
            };
            let end = if b[open] == b';' {
                let item = code[after..open].trim_start();
                let item = item.strip_prefix(")]").unwrap_or(item).trim();
                if let Some(name) = item
                    .strip_prefix("pub ")
                    .unwrap_or(item)
                    .strip_prefix("mod ")
                {
                    files.push(name.trim().to_string());
                }
                open + 1
            } else {
                let mut depth = 0usize;
                let mut j = open;
                loop {
                    match b[j] {
                        b'{' => depth += 1,
                        b'}' => {
                            depth -= 1;
                            if depth == 0 {
                                break j + 1;
                            }
                        }
                        _ => {}
                    }
                    j += 1;
                }
            };
            let blanked: String = code[start..end]
                .chars()
                .map(|c| if c == '\n' { '\n' } else { ' ' })
                .collect();
            code.replace_range(start..end, &blanked);
        }
    }
    files
}

/// Every path in `code` that starts with `crate`, `locksmith`, `super` or `self`, as segments
/// (a `use` group `a::{b, c::d}` gives one path per member), with its line, and the module
/// path (inline `mod x { … }` blocks included) it is written in, relative to the file's.
fn paths(code: &str) -> Vec<(Vec<String>, usize, Vec<String>)> {
    let b = code.as_bytes();
    let mut out = Vec::new();
    let mut line = 1;
    let mut depth = 0usize;
    // Inline modules open at this point: (name, brace depth inside it).
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut pending_mod: Option<String> = None;
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c == b'\n' {
            line += 1;
        }
        if c == b'{' {
            depth += 1;
            if let Some(name) = pending_mod.take() {
                inline.push((name, depth));
            }
            i += 1;
            continue;
        }
        if c == b'}' {
            if inline.last().is_some_and(|(_, d)| *d == depth) {
                inline.pop();
            }
            depth = depth.saturating_sub(1);
            i += 1;
            continue;
        }
        if c == b';' {
            pending_mod = None;
        }
        if !is_ident(c) || ident_before(b, i) || (i >= 2 && &b[i - 2..i] == b"::") {
            i += 1;
            continue;
        }
        let word_end = i + b[i..].iter().take_while(|&&c| is_ident(c)).count();
        let word = &code[i..word_end];
        if word == "mod" {
            let rest = &code[word_end..];
            let name: String = rest
                .trim_start()
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            pending_mod = Some(name);
        } else if matches!(word, "crate" | "locksmith" | "super" | "self")
            && code[word_end..].starts_with("::")
        {
            let here: Vec<String> = inline.iter().map(|(n, _)| n.clone()).collect();
            let (list, end) = parse_path(code, i);
            for p in list {
                out.push((p, line, here.clone()));
            }
            line += code[i..end].matches('\n').count();
            i = end;
            continue;
        }
        i = word_end;
    }
    out
}

/// Parses `a::b::{c, d::e}` at `i`: the paths it names and where it ends.
fn parse_path(code: &str, mut i: usize) -> (Vec<Vec<String>>, usize) {
    let b = code.as_bytes();
    let skip_ws = |mut i: usize| {
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        i
    };
    let mut segs = Vec::new();
    loop {
        i = skip_ws(i);
        if i < b.len() && b[i] == b'{' {
            let mut all = Vec::new();
            i += 1;
            loop {
                i = skip_ws(i);
                if i >= b.len() || b[i] == b'}' {
                    i += 1;
                    break;
                }
                if b[i] == b',' {
                    i += 1;
                    continue;
                }
                if b[i] == b'*' {
                    i += 1;
                    continue;
                }
                let (subs, end) = parse_path(code, i);
                for s in subs {
                    let mut p = segs.clone();
                    p.extend(s);
                    all.push(p);
                }
                i = end;
                // Skip an `as name`.
                let j = skip_ws(i);
                if code[j..].starts_with("as ") {
                    i = skip_ws(j + 3);
                    i += b[i..].iter().take_while(|&&c| is_ident(c)).count();
                }
            }
            return (all, i);
        }
        let start = i;
        i += b[i..].iter().take_while(|&&c| is_ident(c)).count();
        if i == start {
            break;
        }
        segs.push(code[start..i].to_string());
        let j = skip_ws(i);
        if code[j..].starts_with("::") {
            i = j + 2;
        } else {
            break;
        }
    }
    (vec![segs], i)
}

/// One source file: its module path and what it says.
struct Source {
    /// Relative to the workspace (`src/scan/walk.rs`, `crates/locksmith-engine/src/judge.rs`).
    rel: PathBuf,
    module: Vec<String>,
    code: String,
}

fn module_of(rel: &Path) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .iter()
        .skip(1)
        .map(|s| s.to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().unwrap_or_default();
    let stem = last.strip_suffix(".rs").unwrap_or(&last);
    if !matches!(stem, "mod" | "lib" | "main") {
        parts.push(stem.to_string());
    }
    parts
}

/// The sources of the root crate (`src/`).
fn sources() -> Vec<Source> {
    sources_of(Path::new(env!("CARGO_MANIFEST_DIR")))
}

/// Every crate of the workspace: the root crate, then each `crates/<name>` (all of which the
/// workspace lists as members).
fn crates() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let mut all = vec![root.to_path_buf()];
    let mut members: Vec<PathBuf> = std::fs::read_dir(root.join("crates"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("Cargo.toml").is_file())
        .collect();
    members.sort();
    for m in &members {
        let name = format!("\"crates/{}\"", m.file_name().unwrap().to_string_lossy());
        assert!(
            manifest.contains(&name),
            "{} is not a member of the workspace",
            m.display()
        );
    }
    all.extend(members);
    all
}

/// The sources of the crate at `root` (its `src/`), relative to `root`.
fn sources_of(root: &Path) -> Vec<Source> {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut all = Vec::new();
    let mut test_files = BTreeSet::new();
    for entry in walkdir::WalkDir::new(root.join("src")).sort_by_file_name() {
        let entry = entry.unwrap();
        if entry.path().extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let module = module_of(entry.path().strip_prefix(root).unwrap());
        // Named from the workspace's root in messages.
        let rel = entry.path().strip_prefix(workspace).unwrap().to_path_buf();
        let mut code = strip(&std::fs::read_to_string(entry.path()).unwrap());
        for name in drop_test_code(&mut code) {
            let mut m = module.clone();
            m.push(name);
            test_files.insert(m);
        }
        all.push(Source { rel, module, code });
    }
    all.retain(|s| !test_files.contains(&s.module));
    all
}

/// Names re-exported by each module (`pub use child::{A, B}`) → the child that defines them.
fn reexports(sources: &[Source]) -> HashMap<Vec<String>, HashMap<String, String>> {
    let mut out: HashMap<Vec<String>, HashMap<String, String>> = HashMap::new();
    for s in sources {
        let names = out.entry(s.module.clone()).or_default();
        for stmt in s.code.split(';') {
            let stmt = stmt.trim();
            let Some(rest) = stmt
                .strip_prefix("pub use ")
                .or_else(|| stmt.strip_prefix("pub(crate) use "))
            else {
                continue;
            };
            let rest = rest.trim_start_matches("self::");
            let (list, _) = parse_path(rest, 0);
            for p in list {
                if p.len() >= 2 && !matches!(p[0].as_str(), "crate" | "super" | "locksmith") {
                    names.insert(p[p.len() - 1].clone(), p[0].clone());
                }
            }
        }
    }
    out
}

/// The absolute module path a reference leads to (re-exports followed one level), or `None`
/// for another crate.
fn resolve(
    from: &[String],
    path: &[String],
    reexports: &HashMap<Vec<String>, HashMap<String, String>>,
) -> Option<Vec<String>> {
    let mut abs: Vec<String>;
    let mut rest = path;
    match path.first().map(String::as_str) {
        Some("crate" | "locksmith") => {
            abs = Vec::new();
            rest = &path[1..];
        }
        Some("self") => {
            abs = from.to_vec();
            rest = &path[1..];
        }
        Some("super") => {
            abs = from.to_vec();
            while rest.first().is_some_and(|s| s == "super") {
                abs.pop();
                rest = &rest[1..];
            }
        }
        _ => return None,
    }
    for seg in rest.iter().filter(|s| *s != "self") {
        let via = reexports.get(&abs).and_then(|r| r.get(seg));
        abs.push(via.unwrap_or(seg).clone());
    }
    Some(abs)
}

/// The module graphs, by parent module (`""` for the top level, `"tui"` for the submodules of
/// `tui`, ...): a reference from one module to another is an edge between the two children of
/// their closest common ancestor that contain them.
fn graphs(root: &Path) -> BTreeMap<String, Graph> {
    let sources = sources_of(root);
    let modules: BTreeSet<Vec<String>> = sources.iter().map(|s| s.module.clone()).collect();
    let reexports = reexports(&sources);
    let mut graphs: BTreeMap<String, Graph> = BTreeMap::new();
    for s in &sources {
        // A crate root (no module path) declares the modules; it is above them all.
        for (path, line, inline) in paths(&s.code) {
            let mut here = s.module.clone();
            here.extend(inline);
            let Some(abs) = resolve(&here, &path, &reexports) else {
                continue;
            };
            let common = s
                .module
                .iter()
                .zip(&abs)
                .take_while(|(a, b)| a == b)
                .count();
            if common >= s.module.len() || common >= abs.len() || !modules.contains(&abs[..=common])
            {
                continue; // within the module itself, to an ancestor, or to an item
            }
            graphs.entry(abs[..common].join("::")).or_default().add(
                &s.module[common],
                &abs[common],
                Edge {
                    file: s.rel.clone(),
                    line,
                },
            );
        }
    }
    graphs
}

#[test]
fn no_module_import_cycles_in_any_crate() {
    let crates = crates();
    assert!(crates.len() >= 2, "the root crate and the engine at least");
    let mut report = String::new();
    for root in &crates {
        let graphs = graphs(root);
        assert!(
            graphs.contains_key(""),
            "{}: no module graph read",
            root.display()
        );
        let name = root.file_name().unwrap().to_string_lossy();
        for (parent, g) in &graphs {
            let prefix = if parent.is_empty() {
                String::new()
            } else {
                format!("{parent}::")
            };
            for scc in g.cycles() {
                report.push_str(&format!("{name}: {}", g.describe(&scc, &prefix)));
            }
        }
    }
    assert!(report.is_empty(), "module import cycles:\n{report}");
}

#[test]
fn the_graph_sees_references_of_every_form() {
    let code = strip(
        "use crate::{probe::{self, Snapshot}, verdict::Verdict};\n\
         // crate::tui in a comment\n\
         let s = \"crate::report\";\n\
         fn f() { super::matcher::glob(p); locksmith::scan::scan(); }\n\
         mod sys { use super::super::evidence; }\n",
    );
    let found: Vec<(Vec<String>, usize, Vec<String>)> = paths(&code);
    let flat: Vec<String> = found
        .iter()
        .map(|(p, l, inline)| format!("{}@{l}{}", p.join("::"), inline.join("/")))
        .collect();
    assert_eq!(
        flat,
        [
            "crate::probe::self@1",
            "crate::probe::Snapshot@1",
            "crate::verdict::Verdict@1",
            "super::matcher::glob@4",
            "locksmith::scan::scan@4",
            "super::super::evidence@5sys",
        ]
    );
    let mut g = Graph::default();
    let at = || Edge {
        file: "x.rs".into(),
        line: 1,
    };
    g.add("a", "b", at());
    g.add("b", "c", at());
    g.add("c", "a", at());
    g.add("c", "d", at());
    assert_eq!(g.cycles(), vec![vec!["a", "b", "c"]]);
    assert!(
        g.describe(&g.cycles()[0], "")
            .starts_with("cycle among {a, b, c}: a -> b -> c -> a\n")
    );
    assert!(g.has("c", "d") && !g.has("d", "c"));
    let mut test_only =
        "#[cfg(test)]\nmod tests;\n#[cfg(test)]\nmod more { use crate::x; }\n".to_string();
    assert_eq!(drop_test_code(&mut test_only), ["tests"]);
    assert!(!test_only.contains("crate"));
}

/// Dialects parse and describe; only the judge proves a lock stale. The types already keep a
/// dialect from building a stale judgement (the verdict is private to `crate::judge`); this
/// keeps them from reaching around it: no dialect's code (tests left out) names a stale
/// verdict, a proof or a rule, turns an engine judgement into the scanner's, or calls the
/// engine's judge itself.
#[test]
fn no_dialect_reaches_a_proof() {
    const FORBIDDEN: &[&str] = &[
        "Verdict::Stale",
        "Proof",
        "Rule::",
        "engine_judgement",
        "stale_for_test",
        "for_test",
        "locksmith_engine::verdict",
        "locksmith_engine::judge::judge",
        "from_engine",
    ];
    let mut found = Vec::new();
    for s in sources() {
        if s.module.first().map(String::as_str) != Some("dialect") {
            continue;
        }
        for (n, line) in s.code.lines().enumerate() {
            for word in FORBIDDEN {
                if line.contains(word) {
                    found.push(format!("{}:{}: {word}", s.rel.display(), n + 1));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "dialects must leave proofs to the judge:\n{}",
        found.join("\n")
    );
}

/// The project stands alone: what the code relies on is written in the repository (the README,
/// `docs/`), so no source, test, asset or document refers to an outside document by section
/// number.
#[test]
fn nothing_cites_an_outside_document_by_section() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let section = "\u{a7}";
    let mut offenders = Vec::new();
    for top in [
        "src",
        "crates",
        "tests",
        "assets",
        "benches",
        "docs",
        ".ci",
        "README.md",
    ] {
        for entry in walkdir::WalkDir::new(root.join(top))
            .into_iter()
            .filter_entry(|e| e.file_name() != "target")
            .flatten()
        {
            if !entry.file_type().is_file() {
                continue;
            }
            let Ok(text) = std::fs::read_to_string(entry.path()) else {
                continue; // not text
            };
            for (i, line) in text.lines().enumerate() {
                let cites = line.match_indices(section).any(|(at, s)| {
                    line[at + s.len()..]
                        .trim_start()
                        .starts_with(|c: char| c.is_ascii_digit())
                });
                if cites {
                    offenders.push(format!("{}:{}", entry.path().display(), i + 1));
                }
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "section references to an outside document (say what is meant, or point at the README):\n{}",
        offenders.join("\n")
    );
}

/// What names the bounded calls (calls that may hang on a mount, made by a task of their own
/// with a deadline): the executor's module, `locksmith_sys::bounded`, and the entry points of
/// `probe::fs` built on it. Only `probe` (and `locksmith-sys` itself) may name them: the rest
/// of locksmith reaches paths and mounts through `probe::reach`.
const BOUNDED_ENTRY_POINTS: &[&str] = &["call", "call_path", "not_answering", "Op"];

/// The places in `code` (stripped of comments and strings) that name the bounded calls: each
/// path written (`use` groups expanded) that goes through a module `bounded`, names one of
/// [`BOUNDED_ENTRY_POINTS`] in a module `fs`, or imports all of a module `fs` of this crate.
/// With their line.
fn bounded_calls_named(code: &str) -> Vec<(usize, String)> {
    let b = code.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if !is_ident(b[i]) || ident_before(b, i) {
            i += 1;
            continue;
        }
        let word_end = i + b[i..].iter().take_while(|&&c| is_ident(c)).count();
        let after_path_sep = code[..i].trim_end().ends_with("::");
        if after_path_sep || !code[word_end..].trim_start().starts_with("::") {
            i = word_end;
            continue;
        }
        let (list, end) = parse_path(code, i);
        let line = code[..i].matches('\n').count() + 1;
        let glob = code[end.min(code.len())..].starts_with('*');
        for p in list {
            let named = p.iter().skip(1).any(|s| s == "bounded")
                || (p.len() > 1 && p[0] == "bounded")
                || p.windows(2)
                    .any(|w| w[0] == "fs" && BOUNDED_ENTRY_POINTS.contains(&w[1].as_str()))
                || (glob
                    && p.last().is_some_and(|s| s == "fs")
                    && matches!(p[0].as_str(), "crate" | "locksmith" | "super" | "self"));
            if named {
                out.push((line, p.join("::")));
            }
        }
        i = end.max(word_end);
    }
    out
}

/// The bounded calls have one door: no code outside `src/probe/` and `crates/locksmith-sys`
/// (tests, benches and every other crate included) names the executor or `probe::fs`'s entry
/// points to it; the scanner, reclaim and the rest ask `probe::reach`.
#[test]
fn bounded_calls_are_made_by_probe_only() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let allowed = [root.join("src/probe"), root.join("crates/locksmith-sys")];
    let mut found = Vec::new();
    let mut read = 0;
    for top in ["src", "crates", "tests", "benches"] {
        for entry in walkdir::WalkDir::new(root.join(top))
            .into_iter()
            .filter_entry(|e| e.file_name() != "target")
            .flatten()
        {
            let path = entry.path();
            if path.extension().is_none_or(|e| e != "rs")
                || allowed.iter().any(|a| path.starts_with(a))
            {
                continue;
            }
            read += 1;
            let code = strip(&std::fs::read_to_string(path).unwrap());
            for (line, named) in bounded_calls_named(&code) {
                let rel = path.strip_prefix(root).unwrap();
                found.push(format!("{}:{line}: {named}", rel.display()));
            }
        }
    }
    assert!(read > 100, "only {read} sources read");
    assert!(
        found.is_empty(),
        "bounded calls are made through probe::reach only:\n{}",
        found.join("\n")
    );
}

/// The names only a dialect may speak: the programs each dialect declares as its writers
/// ([`crate::dialect::About::programs`]) and the file names its patterns spell out (a literal
/// last part with a dot in it, `postmaster.pid`, and the literal directories before it,
/// `tmp/pids`). Our own program's dialects name none.
fn dialect_names() -> (BTreeSet<String>, BTreeSet<String>) {
    let mut programs = BTreeSet::new();
    let mut files = BTreeSet::new();
    let literal = |s: &str| !s.is_empty() && !s.contains(['*', '?', '[', '{']);
    for d in crate::dialect::registry() {
        for p in d.about().programs {
            programs.insert(p.to_ascii_lowercase());
        }
        for pattern in d.patterns() {
            let parts: Vec<&str> = pattern.split('/').collect();
            let (last, dirs) = parts.split_last().expect("a pattern has a part");
            if literal(last) && last.trim_start_matches('.').contains('.') {
                files.insert(last.to_string());
            }
            let run: Vec<&str> = dirs
                .iter()
                .rev()
                .take_while(|d| literal(d))
                .copied()
                .collect();
            if run.len() >= 2 {
                files.insert(run.into_iter().rev().collect::<Vec<_>>().join("/"));
            }
        }
    }
    (programs, files)
}

/// Where the names of [`dialect_names`] occur in `text` (comments and strings included): a
/// program as a whole word in any case, a file name as written. Lines as `file:line: name`.
fn names_in(
    rel: &Path,
    text: &str,
    programs: &BTreeSet<String>,
    files: &BTreeSet<String>,
) -> Vec<String> {
    let mut found = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let lower = line.to_ascii_lowercase();
        for word in lower.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
            if programs.contains(word) {
                found.push(format!("{}:{}: {word}", rel.display(), n + 1));
            }
        }
        for f in files {
            if line.contains(f.as_str()) {
                found.push(format!("{}:{}: {f}", rel.display(), n + 1));
            }
        }
    }
    found
}

/// `text` with its test-only code blanked (as [`drop_test_code`] finds it in the code
/// without comments and strings), and the test-only modules it declares as files.
fn without_test_code(text: &str) -> (String, Vec<String>) {
    let stripped = strip(text);
    let mut code = stripped.clone();
    let files = drop_test_code(&mut code);
    // Blanked by `drop_test_code`: from the first to the last character it blanked in each
    // item, which spans the item's comments and strings too.
    let (s, c) = (stripped.as_bytes(), code.as_bytes());
    let mut out = text.as_bytes().to_vec();
    let mut i = 0;
    while i < s.len() {
        if s[i] != c[i] {
            // An item starts with its attribute; it ends at the last character blanked
            // before the next one kept as it was.
            let mut end = i;
            let mut j = i;
            while j < s.len() && (s[j] == c[j] || c[j] == b' ') {
                if s[j] != c[j] {
                    end = j + 1;
                }
                if s[j] == c[j] && !s[j].is_ascii_whitespace() {
                    break;
                }
                j += 1;
            }
            for b in &mut out[i..end] {
                if *b != b'\n' {
                    *b = b' ';
                }
            }
            i = end.max(i + 1);
        } else {
            i += 1;
        }
    }
    (String::from_utf8_lossy(&out).into_owned(), files)
}

/// A program's knowledge stays in its dialect: no source names a program a dialect writes
/// for, or a file name of its patterns, outside `src/dialect/` and `src/why/` (the messages
/// programs print, and where their locks are), in code, strings or comments. Tests are left
/// out, as are the book and the README. What the rest of the app shows of a dialect (a flag
/// such as unsaved changes, an action such as a recovery, files removed together) comes from
/// the dialect as data.
///
/// Not checked yet: the probe layer (`src/probe/`), which names the places it keeps
/// unmasked, and the walker (`src/scan/walk.rs`).
#[test]
fn no_program_is_named_outside_its_dialect() {
    let (programs, files) = dialect_names();
    for expected in ["git", "postmaster.pid", "tmp/pids"] {
        assert!(
            programs.contains(expected) || files.contains(expected),
            "{expected} is declared by a dialect: {programs:?} {files:?}"
        );
    }
    // A writer that is also something else here: a shell, which completions and quoted
    // command lines are made for.
    const OTHER_ROLES: &[(&str, &[&str])] = &[(
        "zsh",
        &[
            "src/cli/completions.rs",
            "src/main.rs",
            "src/text.rs",
            "src/tui/clipboard.rs",
            "src/tui/components/table/asks.rs",
        ],
    )];
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR"));
    let exempt = |rel: &Path| {
        // The test-support crate is test code: it runs the programs the tests need.
        [
            "src/dialect/",
            "src/why/",
            "src/probe/",
            "src/scan/walk.rs",
            "crates/locksmith-test-support/",
        ]
        .iter()
        .any(|p| rel.starts_with(p))
    };
    let mut found = Vec::new();
    for root in crates() {
        let mut test_files = BTreeSet::new();
        let mut all = Vec::new();
        for entry in walkdir::WalkDir::new(root.join("src")).sort_by_file_name() {
            let entry = entry.unwrap();
            if entry.path().extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let module = module_of(entry.path().strip_prefix(&root).unwrap());
            let rel = entry.path().strip_prefix(workspace).unwrap().to_path_buf();
            let (text, tests) = without_test_code(&std::fs::read_to_string(entry.path()).unwrap());
            for name in tests {
                let mut m = module.clone();
                m.push(name);
                test_files.insert(m);
            }
            all.push((rel, module, text));
        }
        for (rel, module, text) in all {
            if test_files.contains(&module) || exempt(&rel) {
                continue;
            }
            found.extend(
                names_in(&rel, &text, &programs, &files)
                    .into_iter()
                    .filter(|hit| {
                        !OTHER_ROLES.iter().any(|(name, files)| {
                            hit.ends_with(&format!(": {name}"))
                                && files.iter().any(|f| rel == Path::new(f))
                        })
                    }),
            );
        }
    }
    assert!(
        found.is_empty(),
        "a program's names belong to its dialect (render what it hands over as data):\n{}",
        found.join("\n")
    );
}

#[test]
fn every_way_of_naming_a_bounded_call_is_seen() {
    let code = strip(
        "use locksmith_sys::{bounded, fs};\n\
         let a = crate::probe::fs::call(None, op);\n\
         use crate::probe::fs::{self, Mount, Op};\n\
         fs::call_path(p, None, fs::Op::Probe { path });\n\
         // fs::call in a comment\n\
         let s = \"fs::not_answering\";\n\
         use super::fs::*;\n\
         use crate::probe::{fs::not_answering as n, reach};\n\
         locksmith_sys::bounded::inline(op); reach::touch(m, p); fs::describe(d, 0);\n\
         use rustix::fs::{OFlags, Mode}; std::fs::read(p); let bounded = 1; call(x);\n",
    );
    let found: Vec<String> = bounded_calls_named(&code)
        .into_iter()
        .map(|(line, p)| format!("{line}:{p}"))
        .collect();
    assert_eq!(
        found,
        [
            "1:locksmith_sys::bounded",
            "2:crate::probe::fs::call",
            "3:crate::probe::fs::Op",
            "4:fs::call_path",
            "4:fs::Op::Probe",
            "7:super::fs",
            "8:crate::probe::fs::not_answering",
            "9:locksmith_sys::bounded::inline",
        ]
    );
}

#[test]
fn names_are_found_in_code_strings_and_comments_but_not_in_tests() {
    let programs = BTreeSet::from(["git".to_string()]);
    let files = BTreeSet::from(["tmp/pids".to_string()]);
    let text = "// a Git lock\nfn f() { g(\"/a/tmp/pids/x\"); digit(); }\n\
                #[cfg(test)]\nmod tests { fn t() { g(\"git\"); } }\nfn h() {}\n";
    let (kept, tests) = without_test_code(text);
    assert!(tests.is_empty());
    assert!(
        kept.contains("fn h()") && !kept.contains("g(\"git\")"),
        "{kept}"
    );
    let found = names_in(Path::new("x.rs"), &kept, &programs, &files);
    assert_eq!(found, ["x.rs:1: git", "x.rs:2: tmp/pids"]);
}
