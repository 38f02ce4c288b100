//! ARCHITECTURE.md's "Dependencies" paragraph against the manifests: its first sentence names,
//! for every crate of the product, the crates of ours it depends on (`` `a` → `b`, `c`; ``,
//! several on the left sharing a right side, `→ nothing of ours` for none), and `cargo
//! metadata` says what each manifest depends on (dev-dependencies aside). A dependency added or
//! dropped without the paragraph following fails here, as a paragraph edited without the code
//! does.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

fn repo() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

/// A package's short name, as the paragraph writes it: `weft-node` → `node`.
fn short(package: &str) -> Option<&str> {
    package.strip_prefix("weft-")
}

/// The packages that hold only tests: not part of the product's graph.
const TEST_PACKAGES: &[&str] = &["tests", "architecture", "test-support"];

/// Each product crate → the crates of ours it depends on, from `cargo metadata`.
fn manifests() -> BTreeMap<String, BTreeSet<String>> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = std::process::Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--no-deps", "--offline"])
        .current_dir(repo())
        .output()
        .expect("cargo runs");
    assert!(out.status.success(), "cargo metadata: {}", String::from_utf8_lossy(&out.stderr));
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).expect("cargo metadata's JSON");
    let packages = meta["packages"].as_array().expect("packages");
    let ours: BTreeSet<&str> = packages.iter().filter_map(|p| p["name"].as_str()).collect();
    let mut graph = BTreeMap::new();
    for p in packages {
        let Some(name) = p["name"].as_str().and_then(short) else { continue };
        if TEST_PACKAGES.contains(&name) {
            continue;
        }
        let deps: BTreeSet<String> = p["dependencies"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|d| d["kind"].is_null())
            .filter_map(|d| d["name"].as_str())
            .filter(|d| ours.contains(d))
            .filter_map(short)
            .map(str::to_string)
            .collect();
        graph.insert(name.to_string(), deps);
    }
    graph
}

/// The crates named in `text`'s backticks, in order.
fn names(text: &str) -> Vec<String> {
    text.split('`').skip(1).step_by(2).map(str::to_string).collect()
}

/// Each crate → its dependencies, from the paragraph's first sentence.
fn paragraph(architecture: &str) -> BTreeMap<String, BTreeSet<String>> {
    let section = architecture.split("### Dependencies").nth(1).expect("a Dependencies section");
    let sentence = section.split("nothing of ours.").next().expect("a sentence ending `nothing of ours.`");
    let sentence = format!("{sentence}nothing of ours");
    let mut graph = BTreeMap::new();
    for clause in sentence.split(';') {
        let (left, right) = clause.split_once('→').unwrap_or_else(|| panic!("a clause without →: {clause:?}"));
        let right: BTreeSet<String> =
            if right.trim() == "nothing of ours" { BTreeSet::new() } else { names(right).into_iter().collect() };
        let left = names(left);
        assert!(!left.is_empty(), "a clause naming no crate: {clause:?}");
        for crate_name in left {
            assert!(graph.insert(crate_name.clone(), right.clone()).is_none(), "`{crate_name}` is named twice");
        }
    }
    graph
}

#[test]
fn the_architecture_s_dependency_paragraph_is_the_manifests() {
    let text = std::fs::read_to_string(repo().join("ARCHITECTURE.md")).unwrap();
    let written = paragraph(&text);
    let built = manifests();
    assert!(built.contains_key("node") && built.contains_key("p2p"), "{built:?}");
    assert_eq!(
        written, built,
        "ARCHITECTURE.md's Dependencies paragraph (left) against the manifests (right): change whichever is wrong"
    );
    for (krate, deps) in &built {
        assert!(!deps.contains("node"), "`{krate}` depends on node: nothing of the product may");
        if krate != "simnet" {
            assert!(!deps.contains("simnet"), "`{krate}` depends on simnet: nothing of the product may");
        }
    }
}

#[test]
fn the_paragraph_parser_reads_shared_right_sides_and_none() {
    let text = "### Dependencies\n\n`a` → `b`, `c`; `d`, `e` → `b`; `b`, `c` → nothing of ours. Only ...";
    let g = paragraph(text);
    assert_eq!(g["a"], BTreeSet::from(["b".to_string(), "c".to_string()]));
    assert_eq!(g["e"], BTreeSet::from(["b".to_string()]));
    assert!(g["c"].is_empty() && g.len() == 5, "{g:?}");
}
