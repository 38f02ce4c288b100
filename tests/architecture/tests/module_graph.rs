//! Every crate's modules depend on each other one way, in the order its `lib.rs` documents
//! ("Module order: a, b → c → d": a module uses only modules of the groups before its own).
//! Read from the source, every `crate::module` a module names is an edge. A cycle is how a
//! crate turns into a hub where every change touches everything, and an order that is only
//! written down drifts; this keeps both from happening. A new module must be placed in the
//! documented order to pass.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The workspace's library crates, by source directory (`config/clock`, `index/page` and `index/vecmath` are one
/// file each: no modules to order).
const CRATES: &[&str] = &[
    "config",
    "config/db",
    "frontier/url",
    "frontier",
    "extract",
    "index",
    "p2p",
    "simnet",
    "node/content",
    "node/fetch",
    "node/layouts",
    "node/crawl",
    "node",
    "tests/support",
];

fn src_of(krate: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(krate).join("src")
}

/// Top-level module → the top-level modules it names (`crate::x`, `crate::{x, y::z}`). The
/// crate root and binaries (`lib.rs`, `main.rs`, `bin/`) are not modules of the library.
fn graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for path in rust_files(src) {
        let rel = path.strip_prefix(src).unwrap();
        let first = rel.components().next().unwrap().as_os_str().to_string_lossy().to_string();
        let module = first.trim_end_matches(".rs").to_string();
        if module == "lib" || module == "main" || module == "bin" {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let deps = graph.entry(module.clone()).or_default();
        for name in named_modules(&text) {
            if name != module {
                deps.insert(name);
            }
        }
    }
    graph
}

/// The top-level modules a source text names through `crate::`, comments left out.
fn named_modules(text: &str) -> BTreeSet<String> {
    let code: String = text.lines().map(|l| l.split("//").next().unwrap_or("")).collect::<Vec<_>>().join("\n");
    let mut out = BTreeSet::new();
    let ident = |s: &str| -> String { s.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect() };
    let mut rest = code.as_str();
    while let Some(i) = rest.find("crate::") {
        rest = &rest[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            // `crate::{a::B, c, d::{e, f}}`: the first segment of each top-level item.
            let mut depth = 0;
            let mut at_item = true;
            for (j, ch) in group.char_indices() {
                match ch {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => at_item = true,
                    c if at_item && (c.is_ascii_alphanumeric() || c == '_') => {
                        out.insert(ident(&group[j..]));
                        at_item = false;
                    }
                    _ => {}
                }
            }
        } else {
            let name = ident(rest);
            if !name.is_empty() {
                out.insert(name);
            }
        }
    }
    out
}

/// A cycle in `graph`, if there is one.
fn find_cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|n| n == node) {
            let mut cycle = path[at..].to_vec();
            cycle.push(node.to_string());
            return Some(cycle);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_string());
        for next in graph.get(node).into_iter().flatten() {
            if graph.contains_key(next) {
                if let Some(c) = visit(next, graph, path, done) {
                    return Some(c);
                }
            }
        }
        path.pop();
        done.insert(node.to_string());
        None
    }
    let mut done = BTreeSet::new();
    graph.keys().find_map(|n| visit(n, graph, &mut Vec::new(), &mut done))
}

#[test]
fn the_parser_reads_grouped_and_nested_imports() {
    let text = "use crate::{a::B, c, d::{e, f}};\nuse crate::g::H; // crate::not_this\nlet x = crate::i::j();";
    let got: Vec<String> = named_modules(text).into_iter().collect();
    assert_eq!(got, ["a", "c", "d", "g", "i"]);
    let mut g = BTreeMap::new();
    g.insert("x".to_string(), BTreeSet::from(["y".to_string()]));
    g.insert("y".to_string(), BTreeSet::from(["x".to_string()]));
    assert_eq!(find_cycle(&g), Some(vec!["x".into(), "y".into(), "x".into()]));
}

/// The order a crate's `lib.rs` documents: groups of modules, earliest first.
fn documented_order(src: &Path) -> Vec<BTreeSet<String>> {
    let lib = std::fs::read_to_string(src.join("lib.rs")).unwrap();
    let doc: Vec<&str> = lib.lines().filter_map(|l| l.strip_prefix("//!")).map(str::trim).collect();
    let start = doc
        .iter()
        .position(|l| l.starts_with("Module order"))
        .unwrap_or_else(|| panic!("{}: the crate documentation says its \"Module order\"", src.display()));
    let mut text = String::new();
    for line in &doc[start..] {
        text.push_str(line);
        text.push(' ');
        if line.ends_with('.') {
            break;
        }
    }
    // The list is after the last colon (module names have none).
    let order = text.rsplit_once(':').unwrap().1.trim().trim_end_matches('.');
    order.split('→').map(|group| group.split(',').map(|m| m.trim().to_string()).collect()).collect()
}

#[test]
fn every_crates_modules_follow_its_documented_order() {
    let mut problems = Vec::new();
    for krate in CRATES {
        let src = src_of(krate);
        let g = graph(&src);
        assert!(!g.is_empty(), "{}: the source was not found", src.display());
        if let Some(cycle) = find_cycle(&g) {
            problems.push(format!("{krate}: circular imports: {}", cycle.join(" → ")));
        }
        let order = documented_order(&src);
        let group_of: BTreeMap<&str, usize> =
            order.iter().enumerate().flat_map(|(i, g)| g.iter().map(move |m| (m.as_str(), i))).collect();
        let listed: BTreeSet<&str> = group_of.keys().copied().collect();
        let modules: BTreeSet<&str> = g.keys().map(String::as_str).collect();
        if listed != modules {
            problems.push(format!(
                "{krate}: the documented order lists {:?} but not {:?}",
                listed.difference(&modules).collect::<Vec<_>>(),
                modules.difference(&listed).collect::<Vec<_>>()
            ));
        }
        for (module, uses) in &g {
            for used in uses.iter().filter(|u| g.contains_key(*u)) {
                if let (Some(a), Some(b)) = (group_of.get(module.as_str()), group_of.get(used.as_str())) {
                    if b >= a {
                        problems
                            .push(format!("{krate}: `{module}` uses `{used}`, which its order puts at or after it"));
                    }
                }
            }
        }
    }
    assert!(problems.is_empty(), "module order broken:\n{}", problems.join("\n"));
}

#[test]
fn the_crawl_reaches_the_network_and_the_browser_only_through_traits() {
    // `weft-crawl` is handed a `Route` (the network) and a `Renders` (the browser's queue): it
    // names neither the network's crate nor the node, and the layout tier only where it
    // implements the layout tier's two traits (`layout_tier.rs`, and `metrics.rs` for `Tally`).
    let files = rust_files(&src_of("node/crawl"));
    assert!(files.len() > 10, "read the crawl's sources: {}", files.len());
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap();
        let code: String = text.lines().map(|l| l.split("//").next().unwrap_or("")).collect::<Vec<_>>().join("\n");
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        for crate_name in ["weft_p2p", "weft_node"] {
            assert!(!code.contains(crate_name), "{name} names {crate_name}");
        }
        if name != "layout_tier.rs" && name != "metrics.rs" {
            assert!(!code.contains("weft_layouts"), "{name} names weft_layouts");
        }
    }
    let g = graph(&src_of("node"));
    assert!(!g.contains_key("crawl"), "the crawl is a crate of its own");
}

/// Every `.rs` file under `dir`.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    out
}
