//! Main-content selection: which blocks of the page are the article.
//!
//! Two stages, over the blocks the DOM walk produced:
//!
//! 1. **Container.** Every block that reads like prose (long enough, few links, outside
//!    boilerplate) is "good"; everything else is "bad" in proportion to its links and length. Each
//!    element scores the good text under it minus a share of the bad, scaled by its class/id
//!    hints; the best element is the container. This is Readability's idea (score paragraphs,
//!    credit their ancestors) with the whole subtree credited, so an article split across
//!    sibling `<div>`s by an ad slot is still found whole. The winner then grows up its
//!    ancestors while they add more of the same prose (`grow`), and when it is one of several
//!    posts of its kind (a thread, a Q&A page's answers) the content is all of them
//!    (`repeated`).
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

/// Minimum characters for a block to count as prose on its own (modern pages write in short
/// lines: a product's specs, a service's feature list, a forum's one-line replies).
const GOOD_CHARS: u32 = 40;
/// Link-text share above which a block is navigation.
const MAX_GOOD_LINK_DENSITY: f32 = 0.3;
/// Above it, a block inside the content is navigation; below it, a listing's linked items stay.
const MAX_KEPT_LINK_DENSITY: f32 = 0.7;

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
pub(crate) fn is_interface_line(text: &str) -> bool {
    let t = text.trim().trim_end_matches([':', '.', '»', '›', '→']).trim().to_lowercase();
    if t.chars().count() > 60 {
        return false;
    }
    const EXACT: &[&str] = &[
        "advertisement",
        "advertisment",
        "ad",
        "ads",
        "sponsored",
        "share",
        "share this",
        "share this article",
        "share this story",
        "share on facebook",
        "share on twitter",
        "tweet",
        "email",
        "print",
        "comments",
        "read more",
        "continue reading",
        "related",
        "related articles",
        "related stories",
        "more stories",
        "recommended",
        "you may also like",
        "skip to content",
        "skip to main content",
        "menu",
        "close",
        "subscribe",
        "sign up",
        "log in",
        "sign in",
        "loading",
        "loading...",
        "back to top",
        "top",
        "next",
        "previous",
        "tags",
        "topics",
        "follow us",
        "image",
        "photo",
        "video",
        "listen",
        "play",
        "save",
        "copy link",
        "link copied",
    ];
    if EXACT.contains(&t.as_str()) {
        return true;
    }
    const PREFIX: &[&str] = &[
        "read more:",
        "related:",
        "see also:",
        "tags:",
        "topics:",
        "filed under",
        "share this",
        "follow us on",
        "sign up for",
        "subscribe to",
        "click here",
        "image:",
        "photo:",
        "image credit",
        "photo credit",
        "getty images",
        "copyright ©",
        "©",
        "all rights reserved",
        "advertisement",
    ];
    PREFIX.iter().any(|p| t.starts_with(p))
}

fn classify(b: &Block) -> Class {
    let ld = link_density(b);
    // A heading that is a link is an item's title (a listing's articles, a course catalogue),
    // not navigation: kept between prose like any short line, dropped at the edges.
    let navigation = ld > MAX_KEPT_LINK_DENSITY && !is_heading(b.tag);
    if navigation || is_interface_line(&b.text) || b.tag == "figcaption" {
        Class::Bad
    } else if b.chars >= GOOD_CHARS && ld <= MAX_GOOD_LINK_DENSITY && !is_heading(b.tag) && !is_teaser(b) {
        Class::Good
    } else {
        Class::Short
    }
}

/// The rules' class of a block as a number (good 0, short 1, bad 2), for the learned
/// classifier's features.
pub(crate) fn rule_class(b: &Block) -> f32 {
    match classify(b) {
        Class::Good => 0.0,
        Class::Short => 1.0,
        Class::Bad => 2.0,
    }
}

/// A short excerpt cut off with an ellipsis: a teaser for another page. Not prose on its own
/// (kept between prose, dropped at the content's edges, where "related posts" lists sit).
pub(crate) fn is_teaser(b: &Block) -> bool {
    let end = b.text.trim_end();
    b.chars < 250 && (end.ends_with("...") || end.ends_with('…'))
}

/// A short paragraph that still reads as a sentence: kept even at the edges of the content.
pub(crate) fn is_sentence(b: &Block) -> bool {
    b.tag == "p" && b.chars >= 40 && b.link_chars == 0 && b.text.trim_end().ends_with(['.', '!', '?', '"', '”', '…'])
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

/// The rules' revision, part of [`crate::learned::Selector::id`]: raise it with any change to
/// what the rules, the walk or the features keep of a page, so that nodes holding texts the old
/// rules made extract them again.
pub const RULES_REVISION: u32 = 1;

/// What became of one block of the page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Part of the main content.
    Kept,
    /// Inside the content but navigation or interface (links, "Share this").
    Bad,
    /// Inside the content but a short line at its edges.
    Edge,
    /// In boilerplate (navigation, header, footer, aside, comments...).
    Boiler,
    /// Outside the content's container.
    Outside,
}

/// Selects the main content of a walked page by the rules alone (`extract` may put a learned
/// model over their verdicts: `crate::learned::select`).
pub fn select(walk: &Walk) -> MainContent {
    let Some((verdicts, container, confidence)) = judge(walk) else { return MainContent::default() };
    let blocks = verdicts.iter().enumerate().filter(|(_, v)| **v == Verdict::Kept).map(|(i, _)| i).collect();
    MainContent { blocks, container: Some(container), confidence }
}

/// Every block's verdict, the container and the confidence; `None` for a page without text.
pub(crate) fn judge(walk: &Walk) -> Option<(Vec<Verdict>, ElemId, f32)> {
    if walk.elems.is_empty() || walk.blocks.is_empty() {
        return None;
    }
    let (roots, confidence) = containers(walk)?;
    let mut verdicts: Vec<Verdict> = walk
        .blocks
        .iter()
        .map(|b| {
            if walk.elems[b.elem as usize].boiler {
                Verdict::Boiler
            } else if roots.iter().any(|&r| within(walk, b.elem, r)) {
                Verdict::Kept
            } else {
                Verdict::Outside
            }
        })
        .collect();
    // Stage 2: classify the container's blocks and apply the context rule.
    let candidates: Vec<(usize, Class)> = verdicts
        .iter()
        .enumerate()
        .filter(|(_, v)| **v == Verdict::Kept)
        .map(|(i, _)| (i, classify(&walk.blocks[i])))
        .collect();
    let first_good = candidates.iter().position(|(_, c)| *c == Class::Good);
    let last_good = candidates.iter().rposition(|(_, c)| *c == Class::Good);
    // After the last prose, a heading starts something else ("Recommended", "About the
    // author"): sentences below it no longer count as the text's last lines.
    let mut tail_heading = false;
    for (k, &(i, c)) in candidates.iter().enumerate() {
        let b = &walk.blocks[i];
        tail_heading |= last_good.is_some_and(|last| k > last) && is_heading(b.tag);
        let inside = match (first_good, last_good) {
            (Some(first), Some(last)) => {
                (first..=last).contains(&k)
                    || (!tail_heading && is_sentence(b))
                    // The heading right above the first prose is its heading (not the page's
                    // `<h1>` title, which is metadata); a definition list's first term is
                    // the heading of the definition below it (a manual's first setting).
                    || (k + 1 == first && (is_heading(b.tag) && b.tag != "h1" || b.tag == "dt"))
            }
            _ => true,
        };
        verdicts[i] = match (c, inside) {
            (Class::Bad, _) => Verdict::Bad,
            (_, false) => Verdict::Edge,
            _ => Verdict::Kept,
        };
    }
    // Near the end of the text, a line that announces something else ("About the author",
    // "Related articles", "Was this helpful?") ends it: what follows is the site's, not the
    // article's, however much it reads like prose (a bio, teasers, testimonials).
    let total: u32 = candidates.iter().filter(|(_, c)| *c == Class::Good).map(|&(i, _)| walk.blocks[i].chars).sum();
    let mut seen = 0u32;
    let mut ended = false;
    for &(i, c) in &candidates {
        let b = &walk.blocks[i];
        ended |= seen as f32 >= TAIL * total as f32 && (is_heading(b.tag) || b.chars < 60) && ends_text(&b.text);
        if ended {
            if verdicts[i] == Verdict::Kept {
                verdicts[i] = Verdict::Edge;
            }
        } else if c == Class::Good {
            seen += b.chars;
        }
    }
    Some((verdicts, roots[0], confidence))
}

/// Where the text's tail starts: the share of its prose above.
const TAIL: f32 = 0.8;

/// A line that announces the end of an article's text (matched whole; a few as prefixes).
fn ends_text(text: &str) -> bool {
    let t = text.trim().trim_end_matches([':', '.', '»', '›', '→', '!', '?']).trim().to_lowercase();
    const WHOLE: &[&str] = &[
        "about the author",
        "about the authors",
        "the author",
        "author",
        "authors",
        "written by",
        "related",
        "other articles",
        "more articles",
        "read next",
        "what to read next",
        "more from",
        "you may also like",
        "you might also like",
        "recommended",
        "recommended for you",
        "sources",
        "article sources",
        "did you find this",
        "was this article helpful",
        "was this helpful",
        "was this page helpful",
        "leave a reply",
        "leave a comment",
        "join the discussion",
        "popular posts",
        "latest posts",
        "recent posts",
        "more stories",
        "keep reading",
        "up next",
        "similar articles",
        "other articles you may find interesting",
        "related articles",
        "related posts",
        "related content",
        "related reading",
        "further reading",
        "more like this",
        "explore more",
        "check out other",
    ];
    WHOLE.contains(&t.as_str())
        || ["about the author", "written by", "more from", "did you find this"].iter().any(|p| t.starts_with(p))
}

/// Readability's per-tag starting score for a candidate container.
fn tag_bonus(tag: &str) -> f32 {
    match tag {
        "div" | "article" | "section" | "main" => 5.0,
        "pre" | "td" | "blockquote" => 3.0,
        "address" | "ol" | "ul" | "dl" | "dd" | "dt" | "li" | "form" => -3.0,
        "h1" | "h2" | "h3" | "h4" | "h5" | "h6" | "th" => -5.0,
        _ => 0.0,
    }
}

/// Below this share of the page's prose in the container, the content is scattered.
const SCATTERED: f32 = 0.5;

/// Prose (characters) an element must hold for its class/id hint to weigh in full.
const HINT_FULL_PROSE: f32 = 1_000.0;

/// How many ancestors a paragraph credits, and with what divisor (Readability: parent ×1,
/// grandparent ×½, then ×1/(3·level)).
const LEVELS: usize = 5;

/// Stage 1: the container element(s) of the main content, and a confidence.
///
/// Paragraph-like blocks score `1 + commas + min(chars/100, 3)` and credit their nearest
/// ancestors with decaying weight, so the element that directly holds the most prose wins —
/// not a distant wrapper that also holds teaser lists. The winner moves up to its parent when
/// the parent scores higher (articles split into several wrappers), and siblings that score
/// close to it or read as prose join it (Readability's sibling rule).
fn containers(walk: &Walk) -> Option<(Vec<ElemId>, f32)> {
    let tally = tallies(walk);
    let scores = Scores::of(walk, &tally);
    let Some((top, top_score)) = scores.best(walk) else {
        // No paragraph anywhere: the body, if it has text.
        let body = walk.elems.iter().position(|e| e.tag == "body")?;
        return Some((vec![body as ElemId], 0.0));
    };
    let (top, top_score) = scores.climb(walk, top, top_score);
    let top = grow(walk, top, &tally);
    let top = repeated(walk, top, &tally).unwrap_or(top);
    let roots = scores.with_siblings(walk, top, top_score);
    Some(widened(walk, &tally, scores.prose_total, roots))
}

/// Stage 1's scores: what each element's paragraphs credited it with.
struct Scores {
    score: Vec<f32>,
    scored: Vec<bool>,
    /// The page's prose: good blocks' text outside links, characters.
    prose_total: f32,
}

impl Scores {
    fn of(walk: &Walk, tally: &[Tally]) -> Scores {
        let n = walk.elems.len();
        let mut score = vec![0f32; n];
        let mut scored = vec![false; n];
        let mut prose_total = 0f32;
        for b in &walk.blocks {
            let owner = &walk.elems[b.elem as usize];
            if owner.boiler || b.chars < 25 || is_heading(b.tag) {
                continue;
            }
            let commas = b.text.matches([',', '\u{060C}', '\u{FE50}', '\u{3001}', '\u{FF0C}']).count() as f32;
            let s = 1.0 + (commas + 1.0) + (b.chars as f32 / 100.0).floor().min(3.0);
            if b.chars >= GOOD_CHARS && link_density(b) <= MAX_GOOD_LINK_DENSITY {
                prose_total += (b.chars - b.link_chars) as f32;
            }
            // The owner element itself counts as level 0 when it is a plain text container
            // (a `<div>` with text directly inside); a `<p>` credits its parent first.
            let mut e = if matches!(b.tag, "p" | "pre" | "li" | "dd" | "dt" | "blockquote" | "figcaption") {
                owner.parent
            } else {
                b.elem
            };
            let mut level = 0;
            while e != NO_PARENT && level < LEVELS {
                let el = &walk.elems[e as usize];
                if el.boiler {
                    break;
                }
                if !scored[e as usize] {
                    scored[e as usize] = true;
                    // A class name's hint weighs in full only on an element holding a page of
                    // prose: a 100-character box called `modal-content` must not outscore the
                    // article beside it.
                    let hinted = (tally[e as usize].good as f32 / HINT_FULL_PROSE).min(1.0);
                    score[e as usize] = tag_bonus(el.tag) + el.weight as f32 * hinted;
                }
                let div = match level {
                    0 => 1.0,
                    1 => 2.0,
                    l => l as f32 * 3.0,
                };
                score[e as usize] += s / div;
                e = el.parent;
                level += 1;
            }
        }
        Scores { score, scored, prose_total }
    }

    /// An element's score once its link density and content hint count.
    fn final_score(&self, walk: &Walk, i: usize) -> f32 {
        let el = &walk.elems[i];
        let ld = if el.text_chars > 0 { el.link_chars as f32 / el.text_chars as f32 } else { 0.0 };
        let hint = if el.content_hint { 1.1 } else { 1.0 };
        self.score[i] * (1.0 - ld) * hint
    }

    /// The best-scoring element below `<body>`, and its score.
    fn best(&self, walk: &Walk) -> Option<(usize, f32)> {
        let mut top: Option<(usize, f32)> = None;
        for (i, el) in walk.elems.iter().enumerate() {
            if !self.scored[i] || matches!(el.tag, "html" | "body") {
                continue;
            }
            let f = self.final_score(walk, i);
            if top.is_none_or(|(_, t)| f > t) {
                top = Some((i, f));
            }
        }
        top
    }

    /// `top` moved up while its parent is at least as good (Readability's parent loop), then
    /// while it is an only child (same content, fuller context).
    fn climb(&self, walk: &Walk, top: usize, top_score: f32) -> (usize, f32) {
        let (mut top, mut top_score) = (top, top_score);
        // Move up while the parent is at least as good (Readability's parent loop).
        let threshold = top_score / 3.0;
        let mut last = top_score;
        let mut p = walk.elems[top].parent;
        while p != NO_PARENT && !matches!(walk.elems[p as usize].tag, "body" | "html") {
            if !self.scored[p as usize] {
                p = walk.elems[p as usize].parent;
                continue;
            }
            let ps = self.final_score(walk, p as usize);
            if ps < threshold {
                break;
            }
            if ps > last {
                top = p as usize;
                top_score = ps;
                break;
            }
            last = ps;
            p = walk.elems[p as usize].parent;
        }
        // An only child moves up to its parent (same content, fuller context).
        loop {
            let parent = walk.elems[top].parent;
            if parent == NO_PARENT || matches!(walk.elems[parent as usize].tag, "body" | "html") {
                break;
            }
            if walk.elems[parent as usize].text_chars != walk.elems[top].text_chars {
                break;
            }
            top = parent as usize;
        }
        (top, top_score)
    }

    /// `top` and its siblings that score close to it or read as prose (Readability's sibling
    /// rule).
    fn with_siblings(&self, walk: &Walk, top: usize, top_score: f32) -> Vec<ElemId> {
        let mut roots = vec![top as ElemId];
        let parent = walk.elems[top].parent;
        if parent != NO_PARENT {
            let sib_threshold = (top_score * 0.2).max(10.0);
            for (i, el) in walk.elems.iter().enumerate() {
                if el.parent != parent || i == top || el.boiler || el.text_chars == 0 {
                    continue;
                }
                let ss = if self.scored[i] { self.final_score(walk, i) } else { 0.0 };
                let ld = el.link_chars as f32 / el.text_chars as f32;
                let prose_sibling =
                    el.tag == "p" && ((el.text_chars > 80 && ld < 0.25) || (el.text_chars <= 80 && ld == 0.0));
                if ss >= sib_threshold || prose_sibling {
                    roots.push(i as ElemId);
                }
            }
        }
        roots
    }
}

/// The confidence in `roots`, and `roots` widened when they hold too little of the page's
/// prose.
fn widened(walk: &Walk, tally: &[Tally], prose_total: f32, roots: Vec<ElemId>) -> (Vec<ElemId>, f32) {
    let mut roots = roots;
    let chosen: f32 = walk
        .blocks
        .iter()
        .filter(|b| b.chars >= GOOD_CHARS && link_density(b) <= MAX_GOOD_LINK_DENSITY)
        .filter(|b| !walk.elems[b.elem as usize].boiler && roots.iter().any(|&r| within(walk, b.elem, r)))
        .map(|b| (b.chars - b.link_chars) as f32)
        .sum();
    let confidence =
        if prose_total > 0.0 { (chosen / prose_total).min(1.0) * (chosen / 1_500.0).min(1.0) } else { 0.0 };
    // The container holds too little of the page's prose: the text is scattered over many
    // sections (a service page, a listing) that no one wrapper scores for. Widen it to the
    // nearest ancestor that holds half of the prose; stage 2 drops what is not text in it.
    if prose_total > 0.0 && chosen < SCATTERED * prose_total {
        let total_good = tally.first().map_or(0, |t| t.good) as f32;
        let mut e = roots[0];
        while (tally[e as usize].good as f32) < SCATTERED * total_good && walk.elems[e as usize].tag != "body" {
            match walk.elems[e as usize].parent {
                NO_PARENT => break,
                p => e = p,
            }
        }
        if e != roots[0] {
            roots = vec![e];
        }
    }
    (roots, confidence)
}

/// What an element holds: the prose of its non-boilerplate blocks (good blocks' text outside
/// links); all its text and link text, boilerplate included (from the walk).
#[derive(Debug, Default, Clone, Copy)]
struct Tally {
    chars: u32,
    link_chars: u32,
    good: u32,
}

/// Tallies every element.
fn tallies(walk: &Walk) -> Vec<Tally> {
    let mut t: Vec<Tally> =
        walk.elems.iter().map(|e| Tally { chars: e.text_chars, link_chars: e.link_chars, good: 0 }).collect();
    for b in &walk.blocks {
        if walk.elems[b.elem as usize].boiler || classify(b) != Class::Good {
            continue;
        }
        let good = b.chars - b.link_chars;
        let mut e = b.elem;
        while e != NO_PARENT {
            t[e as usize].good += good;
            e = walk.elems[e as usize].parent;
        }
    }
    t
}

/// Grows the container up its ancestors while what each adds reads as more of the same text.
///
/// Modern pages cut one article, service description or thread into many sibling sections,
/// each wrapped a few levels deep (`row > col > wrapper > text`): the best-scoring element is
/// then one section, and its siblings are too far up for the sibling rule. An ancestor is taken
/// when the text it adds is mostly prose and poor in links — which a list of teasers, a
/// navigation block or a footer is not.
fn grow(walk: &Walk, top: usize, t: &[Tally]) -> usize {
    const FRAME_CHARS: u32 = 120;
    let base = t[top];
    let mut best = top;
    let mut p = walk.elems[top].parent;
    while p != NO_PARENT && !matches!(walk.elems[p as usize].tag, "html") {
        let a = t[p as usize];
        let chars = a.chars - base.chars;
        let links = a.link_chars - base.link_chars;
        let good = a.good - base.good;
        // A few words around the text (a post's author and date, a section's heading) are
        // its frame, not something else.
        let frame = chars <= FRAME_CHARS.max(base.chars / 10);
        if (frame || good as f32 >= 0.6 * chars as f32) && (links as f32) <= 0.2 * chars as f32 {
            best = p as usize;
        }
        // `<main>` is what the page's author calls its content: taken unless links fill it.
        if walk.elems[p as usize].tag == "main" && (a.link_chars as f32) < 0.4 * a.chars as f32 {
            best = p as usize;
        }
        p = walk.elems[p as usize].parent;
    }
    best
}

/// Same kind of element, for spotting repeated items: same tag, same class/id but for numbers
/// (`answer-7811`, `answer-81112`).
fn same_kind(walk: &Walk, a: usize, b: usize) -> bool {
    let (a, b) = (&walk.elems[a], &walk.elems[b]);
    a.tag == b.tag
        && a.label.chars().filter(|c| !c.is_ascii_digit()).eq(b.label.chars().filter(|c| !c.is_ascii_digit()))
}

/// A thread's posts or a Q&A page's answers: when the container is one of several elements of
/// its kind that hold prose, the content is all of them — their nearest common ancestor, when
/// they are most of its prose and links do not fill it.
fn repeated(walk: &Walk, top: usize, t: &[Tally]) -> Option<usize> {
    if walk.elems[top].label.is_empty() {
        return None;
    }
    // The last block of each element: a teaser (an excerpt of another page) ends cut short.
    let mut last = vec![usize::MAX; walk.elems.len()];
    for (b, block) in walk.blocks.iter().enumerate() {
        let mut e = block.elem;
        while e != NO_PARENT {
            last[e as usize] = b;
            e = walk.elems[e as usize].parent;
        }
    }
    let teaser = |i: usize| walk.blocks.get(last[i]).is_some_and(is_teaser);
    let items: Vec<usize> = (0..walk.elems.len())
        .filter(|&i| !walk.elems[i].boiler && t[i].good >= GOOD_CHARS && same_kind(walk, i, top) && !teaser(i))
        .collect();
    if items.len() < 2 {
        return None;
    }
    // Ancestors of the container, nearest first.
    let mut chain = Vec::new();
    let mut e = top as ElemId;
    while e != NO_PARENT {
        chain.push(e);
        e = walk.elems[e as usize].parent;
    }
    let mut lca_pos = 0;
    for &i in &items {
        let mut e = i as ElemId;
        while e != NO_PARENT {
            if let Some(pos) = chain.iter().position(|&c| c == e) {
                lca_pos = lca_pos.max(pos);
                break;
            }
            e = walk.elems[e as usize].parent;
        }
    }
    let lca = chain[lca_pos] as usize;
    if lca == top || matches!(walk.elems[lca].tag, "html" | "body") {
        return None;
    }
    let items_good: u32 = items.iter().map(|&i| t[i].good).sum();
    let a = t[lca];
    if (items_good as f32) < 0.5 * a.good as f32 || a.link_chars as f32 > 0.4 * a.chars as f32 {
        return None;
    }
    Some(lca)
}
