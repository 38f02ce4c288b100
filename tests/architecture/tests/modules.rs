//! A child module owns an idea behind explicit imports: it names what it takes from its
//! parent (`use super::{EventLoop, Frame}`) rather than taking everything (`use super::*`), so
//! that a reader sees a file's dependencies at its top and a parent's private helpers do not
//! leak into every child. Test modules (`mod tests { use super::*; … }` and `tests.rs` files)
//! test their parent's internals and may.

use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every `.rs` file under the product crates' `src/` directories.
fn sources() -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack: Vec<PathBuf> =
        ["config", "frontier", "extract", "index", "p2p", "node", "simnet"].iter().map(|d| repo().join(d)).collect();
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().to_string();
            if path.is_dir() {
                // Integration tests, fuzzing and benchmarks are not the product's modules.
                if !matches!(name.as_str(), "tests" | "fuzz" | "target" | "examples" | "benches") {
                    stack.push(path);
                }
            } else if name.ends_with(".rs") && path.components().any(|c| c.as_os_str() == "src") {
                out.push(path);
            }
        }
    }
    out
}

#[test]
fn no_child_module_takes_its_parents_names_wholesale() {
    let files = sources();
    assert!(files.len() > 100, "found the sources: {}", files.len());
    let mut offenders = Vec::new();
    for path in files {
        if path.file_stem().is_some_and(|s| s == "tests") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        // At the top level of a file: a module's own imports (an indented one is inside an
        // inline test module).
        if text.lines().any(|l| l.starts_with("use super::*;")) {
            offenders.push(path.strip_prefix(repo()).unwrap_or(&path).display().to_string());
        }
    }
    offenders.sort();
    assert!(offenders.is_empty(), "`use super::*` outside tests (name what the file takes):\n{}", offenders.join("\n"));
}
