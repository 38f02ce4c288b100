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
//! moves when the words or the tracking snippets change. Neither moves with the length of the
//! article either: each element is hashed with its children's hashes, and a child that repeats
//! its previous sibling (the sixth paragraph, the eleventh list item) is folded into it; inline
//! phrasing elements without names (`a`, `em`, `span`, ...) are part of the text, not the
//! skeleton. xxh3 is fast and its output is fixed by
//! its specification, so fingerprints stay comparable across releases and machines.

use xxhash_rust::xxh3::Xxh3;

/// The two signatures of a page, as 16-digit hex strings (JSON numbers lose bits above 2^53).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Fingerprints {
    pub l1: String,
    pub l2: String,
}

/// Phrasing elements without an id or class: part of a paragraph's text, not of the layout.
/// Their children count as their parent's.
const INLINE: [&str; 18] = [
    "a", "em", "strong", "b", "i", "u", "s", "code", "small", "sub", "sup", "mark", "abbr", "cite", "q", "br", "wbr",
    "span",
];

/// An element being hashed: its own tag (and names), and its children's hashes so far.
struct Frame {
    l1_open: u64,
    l2_open: u64,
    children_l1: Vec<u64>,
    children_l2: Vec<u64>,
    transparent: bool,
}

impl Frame {
    fn new(l1_open: u64, l2_open: u64, transparent: bool) -> Frame {
        Frame { l1_open, l2_open, children_l1: Vec::new(), children_l2: Vec::new(), transparent }
    }

    fn digest(&self) -> (u64, u64) {
        let hash = |open: u64, children: &[u64]| {
            let mut h = Xxh3::new();
            h.update(&open.to_le_bytes());
            for c in children {
                h.update(&c.to_le_bytes());
            }
            h.update(b"/");
            h.digest()
        };
        (hash(self.l1_open, &self.children_l1), hash(self.l2_open, &self.children_l2))
    }
}

/// Adds a child's hash unless it repeats the previous sibling's: five paragraphs and six, ten
/// list items and twelve, are the same layout.
fn push_folded_hash(list: &mut Vec<u64>, h: u64) {
    if list.last() != Some(&h) {
        list.push(h);
    }
}

/// Incremental builder, driven by the DOM walk: a tree hash computed bottom-up, each element
/// hashing its tag and names with its children's hashes, consecutive repeats folded.
pub(crate) struct Fingerprinter {
    stack: Vec<Frame>,
    scratch: String,
    classes: Vec<String>,
}

impl Fingerprinter {
    pub fn new() -> Self {
        Fingerprinter { stack: vec![Frame::new(0, 0, false)], scratch: String::new(), classes: Vec::new() }
    }

    /// An element opens. `class` is the raw attribute value.
    pub fn open(&mut self, tag: &str, id: Option<&str>, class: Option<&str>) {
        let id = id.map(str::trim).filter(|s| !s.is_empty());
        let class = class.map(str::trim).filter(|s| !s.is_empty());
        if id.is_none() && class.is_none() && INLINE.contains(&tag) {
            self.stack.push(Frame::new(0, 0, true));
            return;
        }
        let l2_open = xxhash_rust::xxh3::xxh3_64(tag.as_bytes());
        self.scratch.clear();
        self.scratch.push('<');
        self.scratch.push_str(tag);
        if let Some(id) = id {
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
        let l1_open = xxhash_rust::xxh3::xxh3_64(self.scratch.as_bytes());
        self.stack.push(Frame::new(l1_open, l2_open, false));
    }

    /// The element opened last closes.
    pub fn close(&mut self) {
        if self.stack.len() < 2 {
            return;
        }
        let frame = self.stack.pop().expect("checked above");
        let parent = self.stack.last_mut().expect("the root frame stays");
        if frame.transparent {
            for h in frame.children_l1 {
                push_folded_hash(&mut parent.children_l1, h);
            }
            for h in frame.children_l2 {
                push_folded_hash(&mut parent.children_l2, h);
            }
        } else {
            let (h1, h2) = frame.digest();
            push_folded_hash(&mut parent.children_l1, h1);
            push_folded_hash(&mut parent.children_l2, h2);
        }
    }

    pub fn finish(&self) -> Fingerprints {
        // Elements left open (truncated input) close here, in a copy.
        let mut done = Fingerprinter { stack: Vec::new(), scratch: String::new(), classes: Vec::new() };
        done.stack = self
            .stack
            .iter()
            .map(|f| Frame {
                l1_open: f.l1_open,
                l2_open: f.l2_open,
                children_l1: f.children_l1.clone(),
                children_l2: f.children_l2.clone(),
                transparent: f.transparent,
            })
            .collect();
        while done.stack.len() > 1 {
            done.close();
        }
        let (l1, l2) = done.stack[0].digest();
        Fingerprints { l1: format!("{l1:016x}"), l2: format!("{l2:016x}") }
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
