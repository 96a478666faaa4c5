//! No import circle in `cli/src`, and the layers under the tools stay
//! under them: read from the source, the module paths each file's
//! non-test code names (`crate::a::b`, `super::a`, `use super::{a, b}`),
//! resolved to the module files they name, must form no cycle between
//! files, nor between top-level modules; `exec/` names nothing of `tools/`,
//! `gate/` nothing of `exec/` or `tools/`, `call/` none of the three.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

type Module = Vec<String>;

/// Every module file under `src`, by module path (`tools/browser/mod.rs`
/// is `["tools", "browser"]`, `lib.rs` is `[]`).
fn modules(src: &Path) -> BTreeMap<Module, PathBuf> {
    fn walk(dir: &Path, prefix: &Module, found: &mut BTreeMap<Module, PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if path.is_dir() {
                let mut inner = prefix.clone();
                inner.push(name);
                walk(&path, &inner, found);
            } else if let Some(stem) = name.strip_suffix(".rs") {
                let mut module = prefix.clone();
                if !matches!(stem, "mod" | "lib") {
                    module.push(stem.to_owned());
                }
                if stem != "main" {
                    found.insert(module, path);
                }
            }
        }
    }
    let mut found = BTreeMap::new();
    walk(src, &Vec::new(), &mut found);
    found
}

/// The file's code before its test module, without comments and
/// without visibilities (`pub(super)`, `pub(in crate::exec)` name no
/// module the code uses).
fn production_code(text: &str) -> String {
    let cut = text.find("#[cfg(test)]\nmod tests").unwrap_or(text.len());
    let mut code = text[..cut]
        .lines()
        .map(|line| match line.find("//") {
            Some(at) => &line[..at],
            None => line,
        })
        .collect::<Vec<_>>()
        .join("\n")
        .replace("pub(super)", "pub");
    while let Some(start) = code.find("pub(in ") {
        let end = code[start..]
            .find(')')
            .map_or(code.len(), |at| start + at + 1);
        code.replace_range(start..end, "pub");
    }
    code
}

/// The module paths `code` names, as written relative to `module`.
fn named_paths(module: &Module, code: &str) -> Vec<Module> {
    let words: Vec<char> = code.chars().collect();
    let mut found = Vec::new();
    let ident = |at: usize| -> (String, usize) {
        let mut end = at;
        while end < words.len() && (words[end].is_alphanumeric() || words[end] == '_') {
            end += 1;
        }
        (words[at..end].iter().collect(), end)
    };
    let mut at = 0;
    while at < words.len() {
        let starts_word = at == 0 || !(words[at - 1].is_alphanumeric() || words[at - 1] == '_');
        if !starts_word {
            at += 1;
            continue;
        }
        let (word, end) = ident(at);
        if word != "crate" && word != "super" {
            at = end.max(at + 1);
            continue;
        }
        // The path: `crate` or one `super` per level, then segments.
        let mut base: Module = if word == "crate" {
            Vec::new()
        } else {
            module[..module.len().saturating_sub(1)].to_vec()
        };
        let mut cursor = end;
        let mut segments: Vec<Module> = vec![Vec::new()];
        while words.get(cursor) == Some(&':') && words.get(cursor + 1) == Some(&':') {
            cursor += 2;
            if words.get(cursor) == Some(&'{') {
                // `{a, b::c}`: the first segment of each item.
                let close = words[cursor..]
                    .iter()
                    .position(|c| *c == '}')
                    .map_or(words.len(), |p| cursor + p);
                let inner: String = words[cursor + 1..close].iter().collect();
                segments = inner
                    .split(',')
                    .filter_map(|item| {
                        let first = item.trim().split("::").next()?.trim();
                        let first = first.split_whitespace().next()?;
                        (!first.is_empty() && first != "self").then(|| vec![first.to_owned()])
                    })
                    .collect();
                cursor = close;
                break;
            }
            let (segment, next) = ident(cursor);
            if segment.is_empty() {
                break;
            }
            if segment == "super" && segments[0].is_empty() {
                base.pop();
            } else {
                segments[0].push(segment);
            }
            cursor = next;
        }
        for tail in segments {
            let mut path = base.clone();
            path.extend(tail);
            found.push(path);
        }
        at = cursor.max(at + 1);
    }
    found
}

/// The module file a path names: its longest prefix that is one.
fn resolve(modules: &BTreeMap<Module, PathBuf>, path: &Module) -> Module {
    (0..=path.len())
        .rev()
        .map(|len| path[..len].to_vec())
        .find(|prefix| modules.contains_key(prefix))
        .unwrap_or_default()
}

fn find_cycle(edges: &BTreeMap<Module, BTreeSet<Module>>) -> Option<Vec<Module>> {
    fn visit(
        node: &Module,
        edges: &BTreeMap<Module, BTreeSet<Module>>,
        state: &mut BTreeMap<Module, u8>,
        stack: &mut Vec<Module>,
    ) -> Option<Vec<Module>> {
        match state.get(node) {
            Some(2) => return None,
            Some(1) => {
                let from = stack.iter().position(|n| n == node).unwrap_or(0);
                let mut cycle = stack[from..].to_vec();
                cycle.push(node.clone());
                return Some(cycle);
            }
            _ => {}
        }
        state.insert(node.clone(), 1);
        stack.push(node.clone());
        for next in edges.get(node).into_iter().flatten() {
            if let Some(cycle) = visit(next, edges, state, stack) {
                return Some(cycle);
            }
        }
        stack.pop();
        state.insert(node.clone(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for node in edges.keys() {
        if let Some(cycle) = visit(node, edges, &mut state, &mut Vec::new()) {
            return Some(cycle);
        }
    }
    None
}

fn show(cycle: &[Module]) -> String {
    cycle
        .iter()
        .map(|module| format!("crate::{}", module.join("::")))
        .collect::<Vec<_>>()
        .join(" -> ")
}

type Edges = BTreeMap<Module, BTreeSet<Module>>;

/// The edges between a crate's module files and between its top-level
/// modules, checked for circles.
fn acyclic_edges(src: &Path) -> (Edges, Edges) {
    let modules = modules(src);
    assert!(modules.len() > 30, "{} modules found", modules.len());
    let mut files: BTreeMap<Module, BTreeSet<Module>> = BTreeMap::new();
    let mut folders: BTreeMap<Module, BTreeSet<Module>> = BTreeMap::new();
    for (module, path) in &modules {
        let text = std::fs::read_to_string(path).expect("source is UTF-8");
        let code = production_code(&text);
        for named in named_paths(module, &code) {
            let target = resolve(&modules, &named);
            // A module naming itself or one of its own descendants (its
            // `mod` and `pub use` lines) is not an edge back.
            if target.starts_with(module) {
                continue;
            }
            files
                .entry(module.clone())
                .or_default()
                .insert(target.clone());
            if let (Some(from), Some(to)) = (module.first(), target.first()) {
                if from != to {
                    folders
                        .entry(vec![from.clone()])
                        .or_default()
                        .insert(vec![to.clone()]);
                }
            }
        }
    }
    if let Some(cycle) = find_cycle(&files) {
        panic!("import circle between files: {}", show(&cycle));
    }
    // Nor between the top-level modules (folders and single files):
    // every one sits above or below every other.
    if let Some(cycle) = find_cycle(&folders) {
        panic!("import circle between top-level modules: {}", show(&cycle));
    }
    (files, folders)
}

#[test]
fn no_import_circle_in_cli_and_the_layers_hold() {
    let (_files, folders) = acyclic_edges(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    let below = |folder: &str, never: &[&str]| {
        let named = folders
            .get(&vec![folder.to_owned()])
            .cloned()
            .unwrap_or_default();
        for upper in never {
            assert!(
                !named.contains(&vec![(*upper).to_owned()]),
                "{folder}/ names {upper}/: {named:?}"
            );
        }
    };
    below("call", &["gate", "exec", "tools", "agent"]);
    below("gate", &["exec", "tools", "agent"]);
    below("exec", &["tools", "agent"]);
    below("tools", &["agent", "commands"]);
    // The check sees edges at all: the tools use the gate and exec.
    let tools = &folders[&vec!["tools".to_owned()]];
    assert!(tools.contains(&vec!["exec".to_owned()]), "{tools:?}");
    assert!(tools.contains(&vec!["gate".to_owned()]), "{tools:?}");
}

/// The relay is read by the same parser (kept here so there is one).
#[test]
fn no_import_circle_in_relay() {
    let relay = Path::new(env!("CARGO_MANIFEST_DIR")).join("../relay/src");
    let (files, _folders) = acyclic_edges(&relay);
    // The check sees edges at all: the HTTP handlers use the store.
    assert!(
        files
            .keys()
            .any(|module| module.first().map(String::as_str) == Some("http")),
        "{files:?}"
    );
}
