//! The README and the book (`docs/src/`) stay true to the repository: every relative link
//! points at a file that exists (and, with a `#fragment`, at a heading in it), and every `weft`
//! command they name is one the binary has (`weft <command> --help` succeeds). Docs that name a
//! renamed flag's command or a moved chapter fail here instead of misleading a volunteer.

use crate::common::WEFT;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").canonicalize().unwrap()
}

/// The README, ARCHITECTURE.md and every chapter of the book.
fn documents() -> Vec<PathBuf> {
    let root = repo();
    let mut docs = vec![root.join("README.md"), root.join("ARCHITECTURE.md")];
    let mut chapters: Vec<PathBuf> = std::fs::read_dir(root.join("docs/src"))
        .expect("docs/src/ holds the book")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    chapters.sort();
    assert!(chapters.len() >= 10, "the book has its chapters: {chapters:?}");
    docs.extend(chapters);
    docs
}

/// Markdown link targets: `[text](target)`, outside code.
fn links(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in prose_and_code(text).0 {
        // A link inside inline code is not a link.
        let line: String = line.split('`').step_by(2).collect();
        let mut rest = line.as_str();
        while let Some(i) = rest.find("](") {
            rest = &rest[i + 2..];
            if let Some(end) = rest.find(')') {
                out.push(rest[..end].to_string());
                rest = &rest[end..];
            }
        }
    }
    out
}

/// A Markdown text's prose (lines outside fenced code blocks) and its code (fenced lines, and
/// each inline code span).
fn prose_and_code(text: &str) -> (Vec<String>, Vec<String>) {
    let (mut prose, mut code) = (Vec::new(), Vec::new());
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if fenced {
            code.push(line.to_string());
        } else {
            prose.push(line.to_string());
            code.extend(line.split('`').skip(1).step_by(2).map(str::to_string));
        }
    }
    (prose, code)
}

/// GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

fn anchors(text: &str) -> BTreeSet<String> {
    prose_and_code(text).0.iter().filter(|l| l.starts_with('#')).map(|l| slug(l.trim_start_matches('#'))).collect()
}

#[test]
fn every_relative_link_in_the_readme_and_the_book_resolves() {
    let mut broken = Vec::new();
    let mut checked = 0;
    for doc in documents() {
        let text = std::fs::read_to_string(&doc).unwrap();
        for target in links(&text) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            checked += 1;
            let (file, fragment) = match target.split_once('#') {
                Some((f, a)) => (f, Some(a)),
                None => (target.as_str(), None),
            };
            let path = if file.is_empty() { doc.clone() } else { doc.parent().unwrap().join(file) };
            if !path.exists() {
                broken.push(format!("{}: {target} (no such file)", doc.display()));
                continue;
            }
            if let Some(fragment) = fragment {
                let headings = anchors(&std::fs::read_to_string(&path).unwrap_or_default());
                if !headings.contains(fragment) {
                    broken.push(format!("{}: {target} (no such heading; {headings:?})", doc.display()));
                }
            }
        }
    }
    assert!(checked >= 30, "only {checked} relative links found: is the parser still reading them?");
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

/// `weft` followed by a subcommand (and a sub-subcommand where the first one has them), as
/// written in code: `weft config show`, `weft start --seed …`.
fn commands(text: &str) -> BTreeSet<Vec<String>> {
    let mut out = BTreeSet::new();
    for line in prose_and_code(text).1 {
        // A shell comment is prose (`# embedding, weft vs Python`).
        let line = match line.find(" #") {
            Some(i) => &line[..i],
            None if line.trim_start().starts_with('#') => "",
            None => line.as_str(),
        };
        let words: Vec<&str> = line.split_whitespace().collect();
        for (i, w) in words.iter().enumerate() {
            // `weft` itself, or a path to it (target/release/weft); not weft-simnet, not .weft/.
            if *w != "weft" && !w.ends_with("/weft") {
                continue;
            }
            let word = |j: usize| {
                words.get(j).filter(|s| s.chars().all(|c| c.is_ascii_lowercase() || c == '-') && !s.starts_with('-'))
            };
            if let Some(first) = word(i + 1) {
                let mut command = vec![first.to_string()];
                if let Some(second) = word(i + 2) {
                    command.push(second.to_string());
                }
                out.insert(command);
            }
        }
    }
    out
}

#[test]
fn every_weft_command_the_readme_and_the_book_name_exists() {
    let mut named = BTreeSet::new();
    for doc in documents() {
        named.extend(commands(&std::fs::read_to_string(&doc).unwrap()));
    }
    assert!(named.len() >= 10, "only {} commands found: {named:?}", named.len());
    let mut missing = Vec::new();
    for command in &named {
        // A second word may be an argument (`weft search what`): then the first alone must
        // exist and take arguments; `--help` after an argument still prints the help.
        let ok = |args: &[String]| {
            let out = Command::new(WEFT).args(args).arg("--help").output().unwrap();
            out.status.success()
        };
        if !ok(command) {
            missing.push(command.join(" "));
        }
    }
    assert!(missing.is_empty(), "named in the docs, unknown to `weft`: {missing:?}");
    // The words checked as subcommands include the ones a volunteer needs first.
    for first in ["start", "status", "search", "doctor", "export", "mcp"] {
        assert!(named.iter().any(|c| c[0] == first), "the docs name `weft {first}`: {named:?}");
    }
}

#[test]
fn the_readme_stays_short() {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let lines = readme.lines().count();
    assert!(lines <= 150, "README.md has {lines} lines: reference belongs in docs/src/");
    // A table row is a line a reader scans: its figures and their story belong in the book.
    for row in readme.lines().filter(|l| l.starts_with('|')) {
        for cell in row.split('|') {
            let chars = cell.trim().chars().count();
            assert!(chars <= 300, "a README table cell of {chars} characters (at most 300): {cell}");
        }
    }
}
