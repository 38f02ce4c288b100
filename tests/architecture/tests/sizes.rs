//! Files and functions a reader can hold in mind: no Rust file over [`MAX_FILE_LINES`] lines,
//! and no function outside tests over [`MAX_FN_LINES`]. A file that grows past the bound holds
//! more than one idea (split it by concept, as `store/keys.rs` left `store.rs`); a function that
//! does is a sequence of steps that want names (as the simulator's run became serve, form,
//! crawl, ask, read back and judge). Checked here so the bound holds after the split.

use std::path::{Path, PathBuf};

const MAX_FILE_LINES: usize = 700;
const MAX_FN_LINES: usize = 120;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every `.rs` file of the workspace: sources, tests, examples and benchmarks.
fn rust_files() -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack: Vec<PathBuf> = ["config", "frontier", "extract", "index", "p2p", "node", "simnet", "tests"]
        .iter()
        .map(|d| repo().join(d))
        .collect();
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().to_string();
            if path.is_dir() {
                if !matches!(name.as_str(), "target" | "node_modules") {
                    stack.push(path);
                }
            } else if name.ends_with(".rs") {
                out.push(path);
            }
        }
    }
    out
}

/// Whether `path` holds tests only: an integration test (under a `tests/` directory, the test
/// support crate aside) or a `tests.rs` module.
fn test_file(path: &Path) -> bool {
    let rel = path.strip_prefix(repo()).unwrap_or(path).to_string_lossy().to_string();
    if rel.starts_with("tests/support/") || rel.starts_with("tests/architecture/") {
        return false;
    }
    path.file_name().is_some_and(|n| n == "tests.rs")
        || rel.starts_with("tests/")
        || rel.split('/').any(|part| part == "tests")
}

/// The functions of `text` before its inline test module, as (name, first line, lines). A
/// function runs from its `fn` line to the first line after it that closes at its indentation.
fn functions(text: &str) -> Vec<(String, usize, usize)> {
    let lines: Vec<&str> = text.lines().collect();
    let end = (0..lines.len())
        .find(|&i| lines[i].trim() == "#[cfg(test)]" && lines.get(i + 1).is_some_and(|l| l.contains("mod ")))
        .unwrap_or(lines.len());
    let mut out = Vec::new();
    let mut i = 0;
    while i < end {
        let line = lines[i];
        let indent = &line[..line.len() - line.trim_start().len()];
        let words: Vec<&str> = line.trim_start().split_whitespace().collect();
        let at = words.iter().position(|w| *w == "fn");
        let signature = at.is_some_and(|at| {
            words[..at].iter().all(|w| w.starts_with("pub") || matches!(*w, "async" | "const" | "unsafe" | "extern"))
        });
        if !signature {
            i += 1;
            continue;
        }
        let name: String = words[at.unwrap() + 1].chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
        // The body opens where the signature ends; a declaration without one ends with `;`.
        let mut j = i;
        while j < end && !lines[j].trim_end().ends_with('{') && !lines[j].trim_end().ends_with(';') {
            j += 1;
        }
        if j >= end || lines[j].trim_end().ends_with(';') {
            i = j + 1;
            continue;
        }
        let close = format!("{indent}}}");
        let mut k = j + 1;
        while k < end && lines[k] != close {
            k += 1;
        }
        out.push((name, i + 1, k - i + 1));
        i = k + 1;
    }
    out
}

#[test]
fn the_reader_finds_functions_and_their_ends() {
    let text = "fn a() {\n    x();\n}\n\npub(crate) async fn b(\n    y: u8,\n) -> u8 {\n    y\n}\n\nfn c();\n\n#[cfg(test)]\nmod tests {\n    fn d() {}\n}\n";
    let got: Vec<(String, usize, usize)> = functions(text);
    assert_eq!(got, vec![("a".to_string(), 1, 3), ("b".to_string(), 5, 5)]);
}

#[test]
fn no_file_is_longer_than_its_bound() {
    let files = rust_files();
    assert!(files.len() > 300, "found the sources: {}", files.len());
    let mut long: Vec<String> = files
        .iter()
        .filter_map(|p| {
            let n = std::fs::read_to_string(p).unwrap().lines().count();
            (n > MAX_FILE_LINES).then(|| format!("{} ({n} lines)", p.strip_prefix(repo()).unwrap_or(p).display()))
        })
        .collect();
    long.sort();
    assert!(long.is_empty(), "files over {MAX_FILE_LINES} lines (split them by concept):\n{}", long.join("\n"));
}

#[test]
fn no_function_outside_tests_is_longer_than_its_bound() {
    let mut long = Vec::new();
    for path in rust_files().into_iter().filter(|p| !test_file(p)) {
        let text = std::fs::read_to_string(&path).unwrap();
        for (name, line, lines) in functions(&text) {
            if lines > MAX_FN_LINES {
                long.push(format!(
                    "{}:{line} {name} ({lines} lines)",
                    path.strip_prefix(repo()).unwrap_or(&path).display()
                ));
            }
        }
    }
    long.sort();
    assert!(long.is_empty(), "functions over {MAX_FN_LINES} lines (name their steps):\n{}", long.join("\n"));
}
