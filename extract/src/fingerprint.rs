//! Structural fingerprints (seed 000 §3): two 64-bit hashes of a page's skeleton, fed during the
//! same DOM walk that extracts the text.
//!
//! - **L1, the template signature**: tags plus `id` and `class` (classes sorted, digit runs
//!   folded to `0` so `post-1234` and `post-987` agree). Pages rendered by the same template
//!   share it, whatever their text — the key for learned extraction rules.
//! - **L2, the structural signature**: tags only. Broad layout families (a feed, a three-column
//!   article page) share it across sites and class-name churn.
//!
//! Text, comments, `script`, `style`, `noscript` and `template` are pruned, so neither signature
//! moves when the words or the tracking snippets change. xxh3 is fast and its output is fixed by
//! its specification, so fingerprints stay comparable across releases and machines.

use xxhash_rust::xxh3::Xxh3;

/// The two signatures of a page, as 16-digit hex strings (JSON numbers lose bits above 2^53).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Fingerprints {
    pub l1: String,
    pub l2: String,
}

/// Incremental builder, driven by the DOM walk.
pub(crate) struct Fingerprinter {
    l1: Xxh3,
    l2: Xxh3,
    scratch: String,
    classes: Vec<String>,
}

impl Fingerprinter {
    pub fn new() -> Self {
        Fingerprinter { l1: Xxh3::new(), l2: Xxh3::new(), scratch: String::new(), classes: Vec::new() }
    }

    /// An element opens. `class` is the raw attribute value.
    pub fn open(&mut self, tag: &str, id: Option<&str>, class: Option<&str>) {
        self.l2.update(b"<");
        self.l2.update(tag.as_bytes());
        self.l2.update(b">");
        self.scratch.clear();
        self.scratch.push('<');
        self.scratch.push_str(tag);
        if let Some(id) = id.map(str::trim).filter(|s| !s.is_empty()) {
            self.scratch.push('#');
            push_folded(&mut self.scratch, id);
        }
        if let Some(class) = class {
            self.classes.clear();
            for c in class.split_ascii_whitespace() {
                let mut folded = String::with_capacity(c.len());
                push_folded(&mut folded, c);
                self.classes.push(folded);
            }
            self.classes.sort_unstable();
            self.classes.dedup();
            for c in &self.classes {
                self.scratch.push('.');
                self.scratch.push_str(c);
            }
        }
        self.scratch.push('>');
        self.l1.update(self.scratch.as_bytes());
    }

    /// The element opened last closes.
    pub fn close(&mut self) {
        self.l1.update(b"/");
        self.l2.update(b"/");
    }

    pub fn finish(&self) -> Fingerprints {
        Fingerprints { l1: format!("{:016x}", self.l1.digest()), l2: format!("{:016x}", self.l2.digest()) }
    }
}

/// Appends `s` with every run of ASCII digits replaced by a single `0`.
fn push_folded(out: &mut String, s: &str) {
    let mut in_digits = false;
    for c in s.chars() {
        if c.is_ascii_digit() {
            if !in_digits {
                out.push('0');
            }
            in_digits = true;
        } else {
            out.push(c);
            in_digits = false;
        }
    }
}
