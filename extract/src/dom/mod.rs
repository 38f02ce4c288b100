//! The single walk over the parsed DOM that everything else reads from.
//!
//! html5ever builds the tree; this walk visits it once, depth-first, and records plain facts:
//! an arena of elements (tag, parent, class/id hints, boilerplate and hidden flags), the text
//! blocks in document order (each the inline content of one block-level element), the links,
//! the metadata carriers (`<meta>`, `<link>`, JSON-LD, `<time>`, byline candidates), the raw
//! material of the JS-need score, and the structural fingerprints. The interpreting modules
//! (`content`, `metadata`, `js`, `links`) never walk the tree again, which is most of why
//! extraction stays within a few milliseconds.
//!
//! Hidden content (`hidden`, `aria-hidden="true"`, inline `display:none`/`visibility:hidden`,
//! and the common hiding class names) is skipped at every level — blocks, inline runs, links —
//! because a reader never sees it and it is where spam and cloaked keywords live.
//!
//! Here: the walk's driver and the passes after it (hidden blocks dropped, `<noscript>` bodies).
//! `facts` holds what it records, `classify` what an element is (block, skipped, boilerplate,
//! hidden), `state` the walk's state as it descends and climbs.

use crate::fingerprint::Fingerprinter;
use ego_tree::NodeRef;
use scraper::{Html, Node};
use url::Url;

mod classify;
mod facts;
mod state;

pub(crate) use classify::*;
pub use facts::*;
use state::*;

/// Recursion guard for the walk. The sanitizer caps nesting at `sanitize::MAX_DEPTH` open
/// elements, but implicitly closed elements do not count there; this is the hard stop.
const MAX_WALK_DEPTH: u16 = 1_024;

/// Visible text of a subtree, whitespace collapsed (scripts and styles excluded).
pub fn node_text(node: NodeRef<'_, Node>) -> String {
    let mut out = String::new();
    for d in node.descendants() {
        if let Node::Text(t) = d.value() {
            let skip = d.ancestors().any(|a| {
                a.value().as_element().is_some_and(|e| matches!(e.name(), "script" | "style" | "noscript" | "template"))
            });
            if !skip {
                push_collapsed(&mut out, t);
                if !out.ends_with(' ') {
                    out.push(' ');
                }
            }
        }
        if out.len() > 2_000 {
            break;
        }
    }
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A `<noscript>` is a candidate for the page's text from this many characters...
const NOSCRIPT_MIN_CHARS: u32 = 200;
/// ... and is taken when it holds this many times the text visible outside it.
const NOSCRIPT_OVER_VISIBLE: u32 = 2;

/// Characters of text in a piece of markup (what is not whitespace, tags, or script and style
/// bodies): a cheap estimate, to decide whether it is worth parsing.
fn markup_text_chars(markup: &str) -> u32 {
    let lower_starts =
        |rest: &str, p: &str| rest.len() >= p.len() && rest.as_bytes()[..p.len()].eq_ignore_ascii_case(p.as_bytes());
    let mut chars = 0u32;
    let mut rest = markup;
    while let Some(c) = rest.chars().next() {
        if c == '<' {
            let skip_to = if lower_starts(rest, "<script") {
                "</script"
            } else if lower_starts(rest, "<style") {
                "</style"
            } else {
                ">"
            };
            match rest.find(skip_to) {
                Some(i) => rest = &rest[i + skip_to.len()..],
                None => break,
            }
            continue;
        }
        if !c.is_whitespace() {
            chars += 1;
        }
        rest = &rest[c.len_utf8()..];
    }
    chars
}

/// Raw text content of a raw-text element such as `<script>`.
fn node_text_raw(node: NodeRef<'_, Node>) -> String {
    let mut out = String::new();
    for c in node.children() {
        if let Node::Text(t) = c.value() {
            out.push_str(t);
        }
    }
    out
}

/// Walks `doc` once. `base` is only used to report nothing here; links are resolved later.
pub fn walk(doc: &Html) -> Walk<'_> {
    let mut state = State {
        walk: Walk {
            elems: Vec::with_capacity(2_048),
            blocks: Vec::with_capacity(512),
            links: Vec::with_capacity(256),
            meta: MetaFacts::default(),
            js: JsFacts::default(),
            fingerprints: crate::Fingerprints { l1: String::new(), l2: String::new() },
            warnings: Vec::new(),
            noscript_body: None,
        },
        fp: Fingerprinter::new(),
        buf: String::with_capacity(1_024),
        buf_chars: 0,
        buf_link_chars: 0,
        buf_links: Vec::new(),
        owner: NO_PARENT,
        link: None,
        noscript: None,
        depth_warned: false,
    };
    // The root element is <html>; treat its children as content with <html> as parent.
    state.run(doc.tree.root());
    state.flush();
    state.walk.fingerprints = state.fp.finish();
    // Roll text counts up the arena, and the prose (long, link-poor blocks) per element.
    let mut walk = state.walk;
    drop_hidden(&mut walk);
    let visible: u32 = walk.blocks.iter().map(|b| b.chars).sum();
    if let Some((chars, markup)) = state.noscript {
        if chars > NOSCRIPT_OVER_VISIBLE * visible {
            walk.noscript_body = Some(markup);
        }
    }
    let mut prose = vec![0u32; walk.elems.len()];
    for b in 0..walk.blocks.len() {
        let block = &walk.blocks[b];
        let (chars, links, mut e) = (block.chars, block.link_chars, block.elem);
        let p = if chars >= 60 && links * 3 < chars { chars - links } else { 0 };
        while e != NO_PARENT {
            let el = &mut walk.elems[e as usize];
            el.text_chars += chars;
            el.link_chars += links;
            el.blocks += 1;
            prose[e as usize] += p;
            e = el.parent;
        }
    }
    // Which elements contain a strong content hint below them.
    let mut hint_below = vec![false; walk.elems.len()];
    for i in (0..walk.elems.len()).rev() {
        let (parent, mine) = (walk.elems[i].parent, hint_below[i] || walk.elems[i].content_hint);
        if parent != NO_PARENT && mine {
            hint_below[parent as usize] = true;
        }
    }
    // Boilerplate, top-down (the arena is in document order, parents first). A wrapper whose
    // class merely looks like boilerplate (`Page-ad-margins`, `site-header-wrapper`) but holds
    // most of the page's prose, or the marked-up article, is not boilerplate: these wrappers are
    // the commonest way pattern-based cleaners lose a whole article.
    // A discussion's wrapper cleared that way clears the class names below it too: on a
    // discussion page the `comments` wrapper holding the text holds a `comment` per post, each
    // small. (Only a discussion's: a `header-style` wrapper around the whole page clears
    // nothing below it.)
    let mut in_frame = vec![false; walk.elems.len()];
    // The page's prose outside its header, footer, navigation and asides (by tag or role): a
    // cookie notice in the `<header>` must not make the article's `headerWrapper` look small.
    let mut framed = 0u32;
    for (i, el) in walk.elems.iter().enumerate() {
        let outer = el.parent == NO_PARENT || !in_frame[el.parent as usize];
        let own = matches!(el.own_boiler, Some(BoilerBy::Tag | BoilerBy::Role));
        in_frame[i] = own || (el.parent != NO_PARENT && in_frame[el.parent as usize]);
        if own && outer {
            framed += prose[i];
        }
    }
    let total_prose = prose.first().copied().unwrap_or(0).saturating_sub(framed).max(1) as f32;
    let mut cleared = vec![false; walk.elems.len()];
    // The nearest marked-up content (`<article>`, `<main>`, `itemprop=articleBody`) above each
    // element.
    let mut hint_above = vec![NO_PARENT; walk.elems.len()];
    for i in 0..walk.elems.len() {
        let (parent_boiler, parent_cleared) = match walk.elems[i].parent {
            NO_PARENT => (false, false),
            p => {
                let pe = &walk.elems[p as usize];
                hint_above[i] = if pe.content_hint { p } else { hint_above[p as usize] };
                (pe.boiler, cleared[p as usize])
            }
        };
        let share = prose[i] as f32 / total_prose;
        // Most of the marked-up article's prose: its body (`rich-text-newsletter-cms`).
        let article_body = hint_above[i] != NO_PARENT && prose[i] as f32 >= 0.75 * prose[hint_above[i] as usize] as f32;
        let own = match walk.elems[i].own_boiler {
            None => false,
            Some(BoilerBy::ClassId) => {
                let clear = share >= 0.75 || ((hint_below[i] || article_body) && share >= 0.3);
                cleared[i] = clear && is_discussion(&walk.elems[i].label);
                !(clear || parent_cleared)
            }
            // A `<footer>` holding most of the prose (a long legal notice under a short page)
            // is still the footer when the page marks its content elsewhere.
            Some(_) => share < 0.75 || marked_elsewhere(&walk.elems, &prose, i),
        };
        cleared[i] |= parent_cleared;
        walk.elems[i].boiler = parent_boiler || own;
    }
    walk
}

/// Is there marked-up content (`<main>`, `<article>`) with some prose outside element `i`?
fn marked_elsewhere(elems: &[Elem], prose: &[u32], i: usize) -> bool {
    let inside = |mut e: usize, ancestor: usize| loop {
        if e == ancestor {
            return true;
        }
        match elems[e].parent {
            NO_PARENT => return false,
            p => e = p as usize,
        }
    };
    elems
        .iter()
        .enumerate()
        .any(|(h, el)| el.content_hint && prose[h] >= MARKED_PROSE && !inside(h, i) && !inside(i, h))
}

/// Prose (characters) that marked-up content must hold to count as the page's content.
const MARKED_PROSE: u32 = 200;

/// Drops the blocks of hidden elements, and the links in them — except a hidden element that
/// holds most of the page's text: that is a page hidden until its scripts run (a preloader's
/// `class="hide"` on the root, `aria-hidden` set on the page behind an open dialog), and a
/// reader sees it.
fn drop_hidden(walk: &mut Walk) {
    if !walk.elems.iter().any(|e| e.hidden) {
        return;
    }
    let n = walk.elems.len();
    let mut chars = vec![0u32; n];
    for b in &walk.blocks {
        let mut e = b.elem;
        while e != NO_PARENT {
            chars[e as usize] += b.chars;
            e = walk.elems[e as usize].parent;
        }
    }
    let total = chars.first().copied().unwrap_or(0);
    // Parents come before children in the arena: one pass settles every element.
    for (i, &held) in chars.iter().enumerate() {
        let parent = walk.elems[i].parent;
        let parent_hidden = parent != NO_PARENT && walk.elems[parent as usize].hidden;
        let own = walk.elems[i].own_hidden;
        // The revealed page: a hidden root holding most of the text.
        let revealed = own && !parent_hidden && held * 2 > total;
        walk.elems[i].hidden = parent_hidden || (own && !revealed);
    }
    retain_blocks(walk, |e| !e.hidden);
}

/// Keeps the blocks, and the links, whose element passes `keep`; indices between them follow.
fn retain_blocks(walk: &mut Walk, keep: impl Fn(&Elem) -> bool) {
    let kept_link: Vec<bool> =
        walk.links.iter().map(|l| l.elem == NO_PARENT || keep(&walk.elems[l.elem as usize])).collect();
    let mut link_index = vec![u32::MAX; walk.links.len()];
    let mut next = 0u32;
    for (i, k) in kept_link.iter().enumerate() {
        if *k {
            link_index[i] = next;
            next += 1;
        }
    }
    let mut block_index = vec![u32::MAX; walk.blocks.len()];
    let mut blocks = Vec::with_capacity(walk.blocks.len());
    for (i, mut b) in std::mem::take(&mut walk.blocks).into_iter().enumerate() {
        if keep(&walk.elems[b.elem as usize]) {
            block_index[i] = blocks.len() as u32;
            b.links.retain(|&l| kept_link[l as usize]);
            for l in &mut b.links {
                *l = link_index[*l as usize];
            }
            blocks.push(b);
        }
    }
    walk.blocks = blocks;
    let mut k = kept_link.iter();
    walk.links.retain(|_| *k.next().unwrap_or(&false));
    for l in &mut walk.links {
        l.block = l.block.and_then(|b| Some(block_index[b as usize]).filter(|&b| b != u32::MAX));
    }
}

/// Walks `doc`; when its text sits in a `<noscript>` (see [`Walk::noscript_body`]), parses that
/// markup into `noscript_doc` and walks it as the page's body instead, keeping the document's
/// metadata, script facts and fingerprints. A reader without JavaScript sees that markup, and
/// so does a crawler: forum engines serve every post there.
pub fn walk_document<'a>(doc: &'a Html, noscript_doc: &'a mut Option<Html>) -> Walk<'a> {
    let mut outer = walk(doc);
    let Some(markup) = outer.noscript_body.take() else { return outer };
    let inner_doc = noscript_doc.insert(Html::parse_document(&format!("<body>{markup}</body>")));
    let mut inner = walk(inner_doc);
    let mut meta = outer.meta;
    if meta.byline.is_none() {
        meta.byline = inner.meta.byline.take();
    }
    if meta.first_h1.is_none() {
        meta.first_h1 = inner.meta.first_h1.take();
    }
    meta.times.append(&mut inner.meta.times);
    meta.json_ld.append(&mut inner.meta.json_ld);
    outer.warnings.append(&mut inner.warnings);
    Walk {
        elems: inner.elems,
        blocks: inner.blocks,
        links: inner.links,
        meta,
        js: outer.js,
        fingerprints: outer.fingerprints,
        warnings: outer.warnings,
        noscript_body: None,
    }
}

/// Does a class/id label name a discussion (comments, replies)?
fn is_discussion(label: &str) -> bool {
    let l = label.to_ascii_lowercase();
    ["comment", "repl", "discuss"].iter().any(|w| l.contains(w))
}

/// Resolves the document base: `<base href>` when it is valid, else the page URL.
pub fn base_url(meta: &MetaFacts, page: &Url) -> Url {
    meta.base_href.as_deref().and_then(|h| page.join(h.trim()).ok()).unwrap_or_else(|| page.clone())
}
