//! Main-content selection: which blocks of the page are the article.
//!
//! Two stages, over the blocks the DOM walk produced:
//!
//! 1. **Container.** Every block that reads like prose (long enough, few links, outside
//!    boilerplate) is "good"; everything else is "bad" in proportion to its links and length. Each
//!    element scores the good text under it minus a share of the bad, scaled by its class/id
//!    hints; the best element is the container. This is Readability's idea (score paragraphs,
//!    credit their ancestors) with the whole subtree credited, so an article split across
//!    sibling `<div>`s by an ad slot is still found whole.
//! 2. **Blocks.** Inside the container, blocks are classified as good, short or bad and short
//!    ones are kept only between good ones (jusText's context rule): a subheading or a one-line
//!    paragraph inside the article stays, while the "Share this" and "Tags:" lines at its edges
//!    go.

use crate::dom::{Block, ElemId, Walk, NO_PARENT};

/// The selected main content.
#[derive(Debug, Default)]
pub struct MainContent {
    /// Indices into `Walk::blocks`, in document order.
    pub blocks: Vec<usize>,
    pub container: Option<ElemId>,
    /// 0–1: how sure the extractor is that this is the page's main text.
    pub confidence: f32,
}

/// Minimum characters for a block to count as prose on its own.
const GOOD_CHARS: u32 = 60;
/// Link-text share above which a block is navigation.
const MAX_GOOD_LINK_DENSITY: f32 = 0.3;
const MAX_KEPT_LINK_DENSITY: f32 = 0.5;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    Good,
    Short,
    Bad,
}

fn link_density(b: &Block) -> f32 {
    if b.chars == 0 {
        0.0
    } else {
        b.link_chars as f32 / b.chars as f32
    }
}

fn is_heading(tag: &str) -> bool {
    matches!(tag, "h1" | "h2" | "h3" | "h4" | "h5" | "h6")
}

/// Short lines that are interface, not content, in any site's article template.
fn is_interface_line(text: &str) -> bool {
    let t = text.trim().trim_end_matches([':', '.', '»', '›', '→']).trim().to_lowercase();
    if t.chars().count() > 60 {
        return false;
    }
    const EXACT: &[&str] = &[
        "advertisement", "advertisment", "ad", "ads", "sponsored", "share", "share this", "share this article",
        "share this story", "share on facebook", "share on twitter", "tweet", "email", "print", "comments",
        "read more", "continue reading", "related", "related articles", "related stories", "more stories",
        "recommended", "you may also like", "skip to content", "skip to main content", "menu", "close", "subscribe",
        "sign up", "log in", "sign in", "loading", "loading...", "back to top", "top", "next", "previous", "tags",
        "topics", "follow us", "image", "photo", "video", "listen", "play", "save", "copy link", "link copied",
    ];
    if EXACT.contains(&t.as_str()) {
        return true;
    }
    const PREFIX: &[&str] = &[
        "read more:", "related:", "see also:", "tags:", "topics:", "filed under", "share this", "follow us on",
        "sign up for", "subscribe to", "click here", "image:", "photo:", "image credit", "photo credit", "getty images",
        "copyright ©", "©", "all rights reserved", "advertisement",
    ];
    PREFIX.iter().any(|p| t.starts_with(p))
}

fn classify(b: &Block) -> Class {
    let ld = link_density(b);
    if ld > MAX_KEPT_LINK_DENSITY || is_interface_line(&b.text) {
        Class::Bad
    } else if b.chars >= GOOD_CHARS && ld <= MAX_GOOD_LINK_DENSITY && !is_heading(b.tag) {
        Class::Good
    } else {
        Class::Short
    }
}

/// Is `elem` inside (or equal to) `ancestor`?
fn within(walk: &Walk, mut elem: ElemId, ancestor: ElemId) -> bool {
    while elem != NO_PARENT {
        if elem == ancestor {
            return true;
        }
        elem = walk.elems[elem as usize].parent;
    }
    false
}

/// Selects the main content of a walked page.
pub fn select(walk: &Walk) -> MainContent {
    let n = walk.elems.len();
    if n == 0 || walk.blocks.is_empty() {
        return MainContent::default();
    }
    // Stage 1: good and bad text per element, rolled up the ancestor chain.
    let mut good = vec![0f32; n];
    let mut bad = vec![0f32; n];
    let mut total_good = 0f32;
    for b in &walk.blocks {
        if walk.elems[b.elem as usize].boiler {
            continue;
        }
        let ld = link_density(b);
        let (g, x) = if b.chars >= GOOD_CHARS && ld <= MAX_GOOD_LINK_DENSITY && !is_interface_line(&b.text) {
            // Prose; punctuation is a cheap signal of sentences rather than labels.
            let commas = b.text.matches([',', '.', ';']).count() as f32;
            ((b.chars - b.link_chars) as f32 + 10.0 * commas.min(20.0), b.link_chars as f32)
        } else {
            (0.0, b.link_chars as f32 + 0.25 * (b.chars - b.link_chars) as f32)
        };
        total_good += g;
        let mut e = b.elem;
        while e != NO_PARENT {
            good[e as usize] += g;
            bad[e as usize] += x;
            e = walk.elems[e as usize].parent;
        }
    }
    let mut best: Option<(ElemId, f32)> = None;
    for (i, el) in walk.elems.iter().enumerate() {
        if el.boiler || good[i] == 0.0 {
            continue;
        }
        let mut score = good[i] - 0.5 * bad[i];
        score *= 1.0 + el.weight as f32 / 100.0;
        if el.content_hint {
            score *= 1.1;
        }
        // `>=`: the arena is in document order, ancestors first, so ties go to the deeper element.
        if best.is_none_or(|(_, s)| score >= s) {
            best = Some((i as ElemId, score));
        }
    }
    let Some((container, _)) = best else {
        return MainContent::default();
    };

    // Stage 2: classify the container's blocks and apply the context rule.
    let candidates: Vec<(usize, Class)> = walk
        .blocks
        .iter()
        .enumerate()
        .filter(|(_, b)| !walk.elems[b.elem as usize].boiler && within(walk, b.elem, container))
        .map(|(i, b)| (i, classify(b)))
        .collect();
    let first_good = candidates.iter().position(|(_, c)| *c == Class::Good);
    let last_good = candidates.iter().rposition(|(_, c)| *c == Class::Good);
    let blocks = match (first_good, last_good) {
        (Some(first), Some(last)) => candidates[first..=last]
            .iter()
            .filter(|(_, c)| *c != Class::Bad)
            .map(|(i, _)| *i)
            .collect(),
        _ => candidates.iter().filter(|(_, c)| *c != Class::Bad).map(|(i, _)| *i).collect(),
    };
    let chosen_good = good[container as usize];
    let confidence = if total_good > 0.0 {
        (chosen_good / total_good) * (chosen_good / 1_500.0).min(1.0)
    } else {
        0.0
    };
    MainContent { blocks, container: Some(container), confidence }
}
