//! The house rules of `src/`, read from its imports: no import circle
//! among the modules of one folder, and no import up (or across) the
//! layers listed under `# Layers` in `src/lib.rs`. Every `crate::` and
//! `super::` path counts, in `use` lines and in code, tests included;
//! comments and strings do not. A failure names the files.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

#[test]
fn src_has_no_circle_in_a_folder_and_no_import_up_the_layers() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let problems = house(&src);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn a_planted_circle_and_an_upward_import_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let files = [
        (
            "lib.rs",
            "//! # Layers\n//!\n//! ```text\n//! top\n//! low\n//! ```\npub mod low;\npub mod top;\n",
        ),
        ("top/mod.rs", "pub mod a;\n"),
        ("top/a.rs", "use crate::low::b::X; // crate::top\n"),
        ("low/mod.rs", "pub mod a;\npub mod b;\n"),
        (
            "low/a.rs",
            "use super::b::X;\nconst S: &str = \"crate::top\";\n",
        ),
        (
            "low/b.rs",
            "pub struct X;\nfn f() { let _ = super::a::g(); let _ = crate::top::a::h; }\n",
        ),
    ];
    for (path, text) in files {
        let path = dir.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    let problems = house(dir.path());
    assert_eq!(problems.len(), 2, "{problems:#?}");
    assert!(
        problems[0].contains("circle in src/low/: a -> b (src/low/a.rs), b -> a (src/low/b.rs)"),
        "{}",
        problems[0]
    );
    assert!(
        problems[1].contains("src/low/b.rs (low) imports crate::top::a::h"),
        "{}",
        problems[1]
    );
}

/// The imports among the modules of one folder: (from, to) -> the files.
type Edges = BTreeMap<(String, String), BTreeSet<String>>;

/// Every breach of the rules in the tree at `src`, one line each.
fn house(src: &Path) -> Vec<String> {
    let lib = std::fs::read_to_string(src.join("lib.rs")).expect("lib.rs");
    let layers = layers(&lib);
    let mut problems = Vec::new();
    let declared = top_modules(&lib);
    for name in &declared {
        if !layers.contains_key(name) {
            problems.push(format!(
                "src/lib.rs: module `{name}` is on no line under `# Layers`"
            ));
        }
    }
    for name in layers.keys().filter(|l| !declared.contains(l)) {
        problems.push(format!(
            "src/lib.rs: `{name}` under `# Layers` is no module of the crate"
        ));
    }
    let mut edges: BTreeMap<Vec<String>, Edges> = BTreeMap::new();
    for file in rust_files(src) {
        let rel = file
            .strip_prefix(src)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        if rel == "main.rs" {
            continue; // the binary: `elicitkit::`, not `crate::`
        }
        let module = module_path(&rel);
        let rel = format!("src/{rel}");
        let text = std::fs::read_to_string(&file).unwrap();
        for path in references(&module, &strip(&text)) {
            if let (Some(from), Some(to)) = (module.first(), path.first())
                && from != to
                && let (Some(&f), Some(&t)) = (layers.get(from), layers.get(to))
                && t <= f
            {
                problems.push(format!(
                    "{rel} ({from}) imports crate::{}: `{to}` is not on a line below `{from}` \
                     in src/lib.rs's layers",
                    path.join("::")
                ));
            }
            for depth in 1..module.len() {
                let folder = &module[..depth];
                if path.len() > depth
                    && path[..depth] == *folder
                    && path[depth] != module[depth]
                    && is_child(src, folder, &path[depth])
                {
                    edges
                        .entry(folder.to_vec())
                        .or_default()
                        .entry((module[depth].clone(), path[depth].clone()))
                        .or_default()
                        .insert(rel.clone());
                }
            }
        }
    }
    for (folder, edges) in &edges {
        for part in circles(edges.keys()) {
            let steps: Vec<String> = edges
                .iter()
                .filter(|((a, b), _)| part.contains(a) && part.contains(b))
                .map(|((a, b), files)| {
                    let files: Vec<&str> = files.iter().map(String::as_str).collect();
                    format!("{a} -> {b} ({})", files.join(", "))
                })
                .collect();
            let folder: String = folder.iter().map(|m| format!("/{m}")).collect();
            problems.push(format!("circle in src{folder}/: {}", steps.join(", ")));
        }
    }
    problems.sort_by_key(|p| !p.starts_with("circle"));
    problems
}

/// The lines of the fenced block under `# Layers`: module -> line number,
/// the top line first.
fn layers(lib: &str) -> BTreeMap<String, usize> {
    let doc: Vec<&str> = lib
        .lines()
        .filter_map(|l| l.strip_prefix("//!"))
        .map(str::trim)
        .collect();
    let start = doc
        .iter()
        .position(|l| *l == "# Layers")
        .expect("src/lib.rs has a `# Layers` section");
    let fence = start
        + doc[start..]
            .iter()
            .position(|l| l.starts_with("```"))
            .expect("a fenced block under `# Layers`");
    let mut out = BTreeMap::new();
    for (n, line) in doc[fence + 1..]
        .iter()
        .take_while(|l| !l.starts_with("```"))
        .enumerate()
    {
        for name in line.split_whitespace() {
            assert!(
                out.insert(name.to_owned(), n).is_none(),
                "`{name}` is on two lines"
            );
        }
    }
    out
}

/// The modules `lib.rs` declares.
fn top_modules(lib: &str) -> Vec<String> {
    lib.lines()
        .filter_map(|l| l.trim().strip_prefix("pub mod "))
        .map(|l| l.trim_end_matches(';').to_owned())
        .collect()
}

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    out.sort();
    out
}

/// `fuzz/blackbox/rerun.rs` -> `[fuzz, blackbox, rerun]`; a `mod.rs` is
/// its folder's module.
fn module_path(rel: &str) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .trim_end_matches(".rs")
        .split('/')
        .map(str::to_owned)
        .collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
        parts.pop();
    }
    parts
}

/// Whether `name` is a module of the folder `folder` (a file or a folder).
fn is_child(src: &Path, folder: &[String], name: &str) -> bool {
    let dir = folder.iter().fold(src.to_path_buf(), |d, m| d.join(m));
    dir.join(format!("{name}.rs")).is_file() || dir.join(name).is_dir()
}

/// The text with comments, strings and character literals blanked.
fn strip(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let ident = |at: usize| at > 0 && (b[at - 1].is_ascii_alphanumeric() || b[at - 1] == b'_');
    while i < b.len() {
        let rest = &text[i..];
        if rest.starts_with("//") {
            i += rest.find('\n').unwrap_or(rest.len());
        } else if rest.starts_with("/*") {
            let mut depth = 0;
            while i < b.len() {
                if text[i..].starts_with("/*") {
                    depth += 1;
                    i += 2;
                } else if text[i..].starts_with("*/") {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            out.push(' ');
        } else if let Some(hashes) = raw_string_start(rest).filter(|_| !ident(i)) {
            let open = rest.find('"').unwrap() + 1;
            let close = format!("\"{}", "#".repeat(hashes));
            i += open + rest[open..].find(&close).unwrap() + close.len();
            out.push_str("\"\"");
        } else if (b[i] == b'"' || rest.starts_with("b\"")) && !ident(i) {
            i += rest.find('"').unwrap() + 1;
            while b[i] != b'"' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
            out.push_str("\"\"");
        } else if b[i] == b'\'' && char_literal_len(rest).is_some() {
            i += char_literal_len(rest).unwrap();
            out.push_str("' '");
        } else {
            let c = rest.chars().next().unwrap();
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}

/// `r"`, `r#"`, `br##"`...: the number of `#`.
fn raw_string_start(rest: &str) -> Option<usize> {
    let r = rest.strip_prefix('b').unwrap_or(rest).strip_prefix('r')?;
    let hashes = r.len() - r.trim_start_matches('#').len();
    r[hashes..].starts_with('"').then_some(hashes)
}

/// The length of a character literal at the start (`'a'`, `'\n'`,
/// `'\u{1F600}'`), or `None` for a lifetime.
fn char_literal_len(rest: &str) -> Option<usize> {
    let mut chars = rest.char_indices().skip(1);
    let (_, c) = chars.next()?;
    if c == '\\' {
        return rest[2..].find('\'').map(|at| at + 3);
    }
    let (at, close) = chars.next()?;
    (close == '\'').then_some(at + 1)
}

fn tokens(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut i = 0;
    let b = text.as_bytes();
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            out.push(&text[start..i]);
        } else if text[i..].starts_with("::") {
            out.push("::");
            i += 2;
        } else {
            let len = text[i..].chars().next().unwrap().len_utf8();
            out.push(&text[i..i + len]);
            i += len;
        }
    }
    out
}

fn is_ident(t: &str) -> bool {
    t.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
}

/// Every `crate::`, `super::` and `self::` path of the (stripped) file of
/// `module`, made absolute (without `crate`), through `use` trees and
/// inline modules.
fn references(module: &[String], text: &str) -> Vec<Vec<String>> {
    let toks = tokens(text);
    let mut out = Vec::new();
    let mut inline: Vec<(usize, String)> = Vec::new(); // (brace depth, name)
    let mut depth = 0;
    let mut i = 0;
    while i < toks.len() {
        let here: Vec<String> = module
            .iter()
            .cloned()
            .chain(inline.iter().map(|(_, m)| m.clone()))
            .collect();
        match toks[i] {
            "{" => depth += 1,
            "}" => {
                depth -= 1;
                inline.retain(|(d, _)| *d <= depth);
            }
            "mod" if toks.get(i + 2) == Some(&"{") => {
                inline.push((depth + 1, toks[i + 1].to_owned()));
            }
            "use" if i == 0 || matches!(toks[i - 1], ";" | "{" | "}" | "]" | "pub" | ")") => {
                let mut paths = Vec::new();
                i = use_tree(&toks, i + 1, Vec::new(), &mut paths);
                out.extend(paths.iter().filter_map(|p| absolute(&here, p)));
                continue;
            }
            "crate" | "super" | "self"
                if toks.get(i + 1) == Some(&"::")
                    && (i == 0 || toks[i - 1] != "::")
                    && !(i >= 2 && toks[i - 1] == "(" && toks[i - 2] == "pub") =>
            {
                let mut path = vec![toks[i]];
                let mut j = i + 1;
                while toks.get(j) == Some(&"::") && toks.get(j + 1).is_some_and(|t| is_ident(t)) {
                    path.push(toks[j + 1]);
                    j += 2;
                }
                out.extend(absolute(&here, &path));
                i = j;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    out
}

/// Reads the use tree at `i` under `prefix` into `out`; returns where it
/// ends.
fn use_tree<'a>(
    toks: &[&'a str],
    mut i: usize,
    mut prefix: Vec<&'a str>,
    out: &mut Vec<Vec<&'a str>>,
) -> usize {
    loop {
        match toks.get(i) {
            Some(&"{") => {
                i += 1;
                while toks.get(i).is_some_and(|t| *t != "}") {
                    i = use_tree(toks, i, prefix.clone(), out);
                    if toks.get(i) == Some(&",") {
                        i += 1;
                    }
                }
                return i + 1;
            }
            Some(&"::") => i += 1,
            Some(&"as") => {
                out.push(prefix);
                return i + 2;
            }
            Some(t) if is_ident(t) => {
                prefix.push(t);
                i += 1;
                if toks.get(i) != Some(&"::") && toks.get(i) != Some(&"as") {
                    out.push(prefix);
                    return i;
                }
            }
            _ => {
                out.push(prefix);
                return i + usize::from(toks.get(i) == Some(&"*"));
            }
        }
    }
}

/// `path` as seen from `here`, from the crate root; `None` for a path
/// that does not start at `crate`, `super` or `self`.
fn absolute(here: &[String], path: &[&str]) -> Option<Vec<String>> {
    let mut at = here.to_vec();
    let rest = match *path.first()? {
        "crate" => {
            at.clear();
            &path[1..]
        }
        "self" => &path[1..],
        "super" => {
            let ups = path.iter().take_while(|p| **p == "super").count();
            at.truncate(at.len().saturating_sub(ups));
            &path[ups..]
        }
        _ => return None,
    };
    at.extend(rest.iter().map(|s| (*s).to_owned()));
    Some(at)
}

/// The circles of a directed graph: its strongly connected parts of two
/// or more nodes (Tarjan's algorithm).
fn circles<'a>(edges: impl Iterator<Item = &'a (String, String)>) -> Vec<Vec<String>> {
    let mut next: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (a, b) in edges {
        next.entry(a).or_default().push(b);
        next.entry(b).or_default();
    }
    struct Tarjan<'a> {
        next: BTreeMap<&'a str, Vec<&'a str>>,
        index: BTreeMap<&'a str, (usize, usize)>,
        stack: Vec<&'a str>,
        parts: Vec<Vec<&'a str>>,
    }
    impl<'a> Tarjan<'a> {
        fn visit(&mut self, v: &'a str) {
            let n = self.index.len();
            self.index.insert(v, (n, n));
            self.stack.push(v);
            for w in self.next[v].clone() {
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let low = self.index[w].1.min(self.index[v].1);
                    self.index.get_mut(v).unwrap().1 = low;
                } else if self.stack.contains(&w) {
                    let low = self.index[w].0.min(self.index[v].1);
                    self.index.get_mut(v).unwrap().1 = low;
                }
            }
            if self.index[v].0 == self.index[v].1 {
                let at = self.stack.iter().position(|x| *x == v).unwrap();
                let part = self.stack.split_off(at);
                if part.len() > 1 {
                    self.parts.push(part);
                }
            }
        }
    }
    let nodes: Vec<&str> = next.keys().copied().collect();
    let mut t = Tarjan {
        next,
        index: BTreeMap::new(),
        stack: Vec::new(),
        parts: Vec::new(),
    };
    for v in nodes {
        if !t.index.contains_key(v) {
            t.visit(v);
        }
    }
    t.parts
        .into_iter()
        .map(|part| part.into_iter().map(str::to_owned).collect())
        .collect()
}
