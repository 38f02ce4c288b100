//! What the block classifier sees of one text block: the facts the walk and the rules already
//! computed, as numbers. The rules' own verdict is among them, so the model learns where to
//! overrule them rather than relearning the page from nothing.
//!
//! Every feature is cheap (one pass over the elements for the inherited ones, one over the
//! blocks) and bounded (ratios, logarithms, flags): nothing here can make a page slow.

/// The words looked for, and a text's counts.
mod words;

use crate::content::{self, Verdict};
use crate::dom::{Block, ElemId, Walk, NO_PARENT};
use words::{
    group_bits, heading_level, page_kinds, text_groups, text_stats, url_kinds, word_set, TextStats, GROUPS, PAGE_KINDS,
    TEXT_GROUPS, URL_KINDS,
};

/// Blocks either side of a block that its context features look at.
const WINDOW: usize = 3;

/// How many numbers describe a block.
pub const COUNT: usize = 50 + 2 * GROUPS.len() + 8 + PAGE_KINDS.len() + URL_KINDS.len() + 1 + 6 + TEXT_GROUPS.len() + 5;

/// The names of the features, in order, for reports (the training example prints the ones the
/// trees split on most).
pub fn names() -> Vec<String> {
    // The features that stand alone, in runs between the grouped ones, in the order `blocks`
    // puts them.
    const FIRST: &[&str] = &[
        "verdict_kept",
        "verdict_bad",
        "verdict_edge",
        "verdict_boiler",
        "verdict_outside",
        "rule_class",
        "ln_chars",
        "link_density",
        "ln_words",
        "mean_word_len",
        "punctuation",
        "ends_sentence",
        "digits",
        "capitalised_words",
        "interface_line",
        "teaser",
        "sentence",
        "heading_level",
        "tag_p",
        "tag_li",
        "tag_cell",
        "tag_pre",
        "tag_blockquote",
        "tag_definition",
        "tag_figcaption",
        "tag_other",
        "depth",
        "in_container",
        "depth_below_container",
        "position",
        "chars_before",
        "own_weight",
        "ancestor_weight",
        "boiler",
        "own_boiler",
        "content_hint_above",
        "parent_link_density",
        "parent_ln_chars",
        "parent_blocks",
        "prev_kept",
        "next_kept",
        "prev_ln_chars",
        "next_ln_chars",
        "prev_link_density",
        "next_link_density",
        "confidence",
        "page_ln_blocks",
        "page_kept_share",
        "siblings_same_tag",
        "commas",
    ];
    const CONTEXT_AROUND: &[&str] = &[
        "window_good",
        "window_kept",
        "window_link_density",
        "ln_distance_to_kept",
        "inside_kept_span",
        "kept_chars_before",
        "title_overlap",
        "is_first_h1",
    ];
    const PLACE: &[&str] = &[
        "url_depth",
        "chars_of_longest",
        "levels_up_to_anchor",
        "anchor_levels_up",
        "same_parent_as_anchor",
        "parent_page_share",
        "grandparent_page_share",
    ];
    const PATH: &[&str] =
        &["same_path_as_anchor", "ln_blocks_on_path", "page_share_on_path", "kept_share_on_path", "good_share_on_path"];
    let one = |names: &'static [&str]| names.iter().map(|n| n.to_string());
    let grouped =
        |prefix: &'static str, groups: &'static [&[&str]]| groups.iter().map(move |g| format!("{prefix}{}", g[0]));
    one(FIRST)
        .chain(grouped("own_", GROUPS))
        .chain(grouped("above_", GROUPS))
        .chain(one(CONTEXT_AROUND))
        .chain(grouped("page_says_", PAGE_KINDS))
        .chain(grouped("url_says_", URL_KINDS))
        .chain(one(PLACE))
        .chain(grouped("says_", TEXT_GROUPS))
        .chain(one(PATH))
        .collect()
}

/// Every element's path from the root — each ancestor's tag and first class word — as a hash:
/// blocks on one path are the repeated parts of one structure (a thread's posts, a product's
/// reviews, a listing's items, an article's paragraphs).
fn path_hashes(walk: &Walk) -> Vec<u64> {
    let mut out: Vec<u64> = Vec::with_capacity(walk.elems.len());
    for e in &walk.elems {
        let parent = if e.parent == NO_PARENT { 0 } else { out[e.parent as usize] };
        let class = e.label.split_ascii_whitespace().next().unwrap_or("");
        let mut h = xxhash_rust::xxh3::Xxh3::with_seed(parent);
        h.update(e.tag.as_bytes());
        h.update(b"\0");
        h.update(class.as_bytes());
        out.push(h.digest());
    }
    out
}

/// The element's ancestors, nearest first, the element included.
fn ancestors<'w>(walk: &'w Walk<'_>, mut e: ElemId) -> impl Iterator<Item = ElemId> + 'w {
    std::iter::from_fn(move || {
        if e == NO_PARENT {
            return None;
        }
        let at = e;
        e = walk.elems[e as usize].parent;
        Some(at)
    })
}

fn ratio(a: u32, b: u32) -> f32 {
    if b == 0 {
        0.0
    } else {
        a as f32 / b as f32
    }
}

fn ln(x: u32) -> f32 {
    (1.0 + x as f32).ln()
}

fn verdict_kept(v: Option<&Verdict>) -> f32 {
    f32::from(u8::from(v == Some(&Verdict::Kept)))
}

/// The features of every block of `walk`, given the rules' verdicts, container and confidence
/// ([`content::judge`]). One row of [`COUNT`] numbers per block, in block order.
pub fn blocks(
    walk: &Walk,
    url: Option<&url::Url>,
    verdicts: &[Verdict],
    container: ElemId,
    confidence: f32,
) -> Vec<[f32; COUNT]> {
    let page = PageFacts::of(walk, url, verdicts, container);
    let mut before = Before::default();
    let mut out = Vec::with_capacity(page.blocks);
    for (i, b) in walk.blocks.iter().enumerate() {
        out.push(block_row(&page, i, b, verdicts, confidence, &before));
        if page.kept[i] {
            before.kept += b.chars;
        }
        before.all += b.chars;
    }
    out
}

/// Characters of the blocks before the one whose row is made: all of them, and the kept ones.
#[derive(Default)]
struct Before {
    all: u32,
    kept: u32,
}

/// What the rows of a page's blocks read of the page as a whole: facts its elements inherit,
/// its totals, where the rules' kept blocks lie, and the anchor (the surest piece of its main
/// text).
struct PageFacts<'a> {
    walk: &'a Walk<'a>,
    own_bits: Vec<u32>,
    above_bits: Vec<u32>,
    ancestor_weight: Vec<i32>,
    hint_above: Vec<bool>,
    in_container: Vec<bool>,
    container_depth: u16,
    total_chars: u32,
    kept_chars: u32,
    /// How many blocks share a parent element and a tag: a list's items, a thread's posts.
    family: std::collections::HashMap<(ElemId, &'a str), u32>,
    blocks: usize,
    good: Vec<f32>,
    kept: Vec<bool>,
    first_kept: Option<usize>,
    last_kept: Option<usize>,
    /// Blocks to the nearest kept block, either way.
    distance: Vec<u32>,
    title: std::collections::HashSet<String>,
    kinds: u32,
    url_bits: u32,
    url_depth: u32,
    anchor: Option<usize>,
    anchor_path: Vec<ElemId>,
    longest: u32,
    root_chars: u32,
    paths: Vec<u64>,
    /// Blocks by the path of their element: how many, their characters, the rules' kept and
    /// good characters.
    on_path: std::collections::HashMap<u64, (u32, u32, u32, u32)>,
    anchor_hash: Option<u64>,
}

impl<'a> PageFacts<'a> {
    fn of(walk: &'a Walk<'a>, url: Option<&url::Url>, verdicts: &[Verdict], container: ElemId) -> PageFacts<'a> {
        let n = walk.elems.len();
        // Inherited facts, top-down (the arena lists parents before children).
        let mut own_bits = vec![0u32; n];
        let mut above_bits = vec![0u32; n];
        let mut ancestor_weight = vec![0i32; n];
        let mut hint_above = vec![false; n];
        let mut in_container = vec![false; n];
        for (i, e) in walk.elems.iter().enumerate() {
            own_bits[i] = group_bits(&e.label);
            if e.parent != NO_PARENT {
                let p = e.parent as usize;
                above_bits[i] = above_bits[p] | own_bits[p];
                ancestor_weight[i] = ancestor_weight[p] + i32::from(walk.elems[p].weight);
                hint_above[i] = hint_above[p] || walk.elems[p].content_hint;
                in_container[i] = in_container[p];
            }
            if i as ElemId == container {
                in_container[i] = true;
            }
        }
        let container_depth = walk.elems.get(container as usize).map_or(0, |e| e.depth);
        let total_chars: u32 = walk.blocks.iter().map(|b| b.chars).sum();
        let kept_chars: u32 =
            walk.blocks.iter().zip(verdicts).filter(|(_, v)| **v == Verdict::Kept).map(|(b, _)| b.chars).sum();
        // How many blocks share a parent element and a tag: a list's items, a thread's posts.
        let mut family: std::collections::HashMap<(ElemId, &str), u32> = std::collections::HashMap::new();
        for b in &walk.blocks {
            *family.entry((walk.elems[b.elem as usize].parent, b.tag)).or_default() += 1;
        }
        let blocks = walk.blocks.len();
        let good: Vec<f32> = walk.blocks.iter().map(|b| f32::from(u8::from(content::rule_class(b) == 0.0))).collect();
        let kept: Vec<bool> = verdicts.iter().map(|v| *v == Verdict::Kept).collect();
        let first_kept = kept.iter().position(|k| *k);
        let last_kept = kept.iter().rposition(|k| *k);
        // Blocks to the nearest kept block, both ways.
        let mut distance = vec![u32::MAX; blocks];
        let mut last = None;
        for i in 0..blocks {
            if kept[i] {
                last = Some(i);
            }
            distance[i] = last.map_or(u32::MAX, |l| (i - l) as u32);
        }
        last = None;
        for i in (0..blocks).rev() {
            if kept[i] {
                last = Some(i);
            }
            distance[i] = distance[i].min(last.map_or(u32::MAX, |l| (l - i) as u32));
        }
        let title = word_set(walk.meta.title.as_deref().unwrap_or_default());
        let kinds = page_kinds(walk);
        let (url_bits, url_depth) = url_kinds(url);
        // The anchor: the block with the most text outside links among the rules' prose — the
        // surest piece of the main text. How far up a block must go to meet it says whether it sits
        // in the same part of the page.
        let anchor = (0..blocks)
            .filter(|&i| good[i] > 0.0)
            .max_by_key(|&i| walk.blocks[i].chars - walk.blocks[i].link_chars.min(walk.blocks[i].chars));
        let anchor_path: Vec<ElemId> =
            anchor.map(|a| ancestors(walk, walk.blocks[a].elem).collect()).unwrap_or_default();
        let longest = walk.blocks.iter().map(|b| b.chars).max().unwrap_or(0);
        let root_chars = walk.elems.first().map_or(0, |e| e.text_chars);
        // Blocks by the path of their element: how many, their characters, the rules' kept and
        // good characters.
        let paths = path_hashes(walk);
        let mut on_path: std::collections::HashMap<u64, (u32, u32, u32, u32)> = std::collections::HashMap::new();
        for (i, b) in walk.blocks.iter().enumerate() {
            let e = on_path.entry(paths[b.elem as usize]).or_default();
            e.0 += 1;
            e.1 += b.chars;
            e.2 += if kept[i] { b.chars } else { 0 };
            e.3 += if good[i] > 0.0 { b.chars } else { 0 };
        }
        let anchor_hash = anchor.map(|a| paths[walk.blocks[a].elem as usize]);
        PageFacts {
            walk,
            own_bits,
            above_bits,
            ancestor_weight,
            hint_above,
            in_container,
            container_depth,
            total_chars,
            kept_chars,
            family,
            blocks,
            good,
            kept,
            first_kept,
            last_kept,
            distance,
            title,
            kinds,
            url_bits,
            url_depth,
            anchor,
            anchor_path,
            longest,
            root_chars,
            paths,
            on_path,
            anchor_hash,
        }
    }
}

/// The row of block `i`, `b`.
fn block_row(
    page: &PageFacts<'_>,
    i: usize,
    b: &Block,
    verdicts: &[Verdict],
    confidence: f32,
    before: &Before,
) -> [f32; COUNT] {
    let mut row = Row { f: [0f32; COUNT], k: 0 };
    let stats = text_stats(&b.text);
    block_itself(&mut row, b, verdicts[i], &stats);
    block_place(&mut row, page, i, b, verdicts, confidence, before, &stats);
    block_context(&mut row, page, i, b, before);
    debug_assert_eq!(row.k, COUNT);
    row.f
}

/// A row being filled, feature by feature in [`COUNT`]'s order.
struct Row {
    f: [f32; COUNT],
    k: usize,
}

impl Row {
    fn put(&mut self, x: f32) {
        self.f[self.k] = x;
        self.k += 1;
    }
}

/// A block's own features: the rules' verdict and class, its text, its tag.
fn block_itself(row: &mut Row, b: &Block, v: Verdict, stats: &TextStats) {
    let tag = b.tag;
    for verdict in [Verdict::Kept, Verdict::Bad, Verdict::Edge, Verdict::Boiler, Verdict::Outside] {
        row.put(f32::from(u8::from(v == verdict)));
    }
    row.put(content::rule_class(b));
    row.put(ln(b.chars));
    row.put(ratio(b.link_chars, b.chars));
    row.put(ln(stats.words));
    row.put(ratio(stats.word_chars, stats.words));
    row.put(ratio(stats.punctuation, b.chars));
    row.put(f32::from(u8::from(b.text.trim_end().ends_with(['.', '!', '?', '"', '”', '…', '。']))));
    row.put(ratio(stats.digits, b.chars));
    row.put(ratio(stats.capitalised, stats.words));
    row.put(f32::from(u8::from(content::is_interface_line(&b.text))));
    row.put(f32::from(u8::from(content::is_teaser(b))));
    row.put(f32::from(u8::from(content::is_sentence(b))));
    row.put(heading_level(tag));
    row.put(f32::from(u8::from(tag == "p")));
    row.put(f32::from(u8::from(tag == "li")));
    row.put(f32::from(u8::from(matches!(tag, "td" | "th"))));
    row.put(f32::from(u8::from(matches!(tag, "pre" | "code"))));
    row.put(f32::from(u8::from(tag == "blockquote")));
    row.put(f32::from(u8::from(matches!(tag, "dt" | "dd"))));
    row.put(f32::from(u8::from(tag == "figcaption")));
    row.put(f32::from(u8::from(
        heading_level(tag) == 0.0
            && !matches!(tag, "p" | "li" | "td" | "th" | "pre" | "code" | "blockquote" | "dt" | "dd" | "figcaption"),
    )));
}

/// Where a block sits: its element's depth, container, weights and parent, its neighbours,
/// and the page's totals.
#[allow(clippy::too_many_arguments)]
fn block_place(
    row: &mut Row,
    page: &PageFacts<'_>,
    i: usize,
    b: &Block,
    verdicts: &[Verdict],
    confidence: f32,
    before: &Before,
    stats: &TextStats,
) {
    let e = &page.walk.elems[b.elem as usize];
    let parent = (e.parent != NO_PARENT).then(|| &page.walk.elems[e.parent as usize]);
    let prev: Option<&Block> = i.checked_sub(1).map(|p| &page.walk.blocks[p]);
    let next: Option<&Block> = page.walk.blocks.get(i + 1);
    let tag = b.tag;
    row.put(f32::from(e.depth));
    let inside = page.in_container[b.elem as usize];
    row.put(f32::from(u8::from(inside)));
    row.put(if inside { f32::from(e.depth.saturating_sub(page.container_depth)) } else { -1.0 });
    row.put(ratio(i as u32, page.blocks as u32));
    row.put(ratio(before.all, page.total_chars));
    row.put(f32::from(e.weight));
    row.put(page.ancestor_weight[b.elem as usize].clamp(-200, 200) as f32);
    row.put(f32::from(u8::from(e.boiler)));
    row.put(match e.own_boiler {
        None => 0.0,
        Some(crate::dom::BoilerBy::Tag) => 1.0,
        Some(crate::dom::BoilerBy::Role) => 2.0,
        Some(crate::dom::BoilerBy::ClassId) => 3.0,
    });
    row.put(f32::from(u8::from(page.hint_above[b.elem as usize] || e.content_hint)));
    row.put(parent.map_or(0.0, |p| ratio(p.link_chars, p.text_chars)));
    row.put(parent.map_or(0.0, |p| ln(p.text_chars)));
    row.put(parent.map_or(0.0, |p| ln(p.blocks)));
    row.put(verdict_kept(i.checked_sub(1).and_then(|p| verdicts.get(p))));
    row.put(verdict_kept(verdicts.get(i + 1)));
    row.put(prev.map_or(0.0, |p| ln(p.chars)));
    row.put(next.map_or(0.0, |p| ln(p.chars)));
    row.put(prev.map_or(0.0, |p| ratio(p.link_chars, p.chars)));
    row.put(next.map_or(0.0, |p| ratio(p.link_chars, p.chars)));
    row.put(confidence);
    row.put(ln(page.blocks as u32));
    row.put(ratio(page.kept_chars, page.total_chars));
    row.put(ln(page.family.get(&(e.parent, tag)).copied().unwrap_or(0)));
    row.put(ln(stats.commas));
}

/// A block in its context: its element's groups and its ancestors', the blocks around it,
/// the title, the page's and the URL's kinds, the anchor, the blocks on its element's path.
fn block_context(row: &mut Row, page: &PageFacts<'_>, i: usize, b: &Block, before: &Before) {
    let e = &page.walk.elems[b.elem as usize];
    let parent = (e.parent != NO_PARENT).then(|| &page.walk.elems[e.parent as usize]);
    for g in 0..GROUPS.len() {
        row.put(f32::from(u8::from(page.own_bits[b.elem as usize] & (1 << g) != 0)));
    }
    for g in 0..GROUPS.len() {
        row.put(f32::from(u8::from(page.above_bits[b.elem as usize] & (1 << g) != 0)));
    }
    let window = i.saturating_sub(WINDOW)..(i + WINDOW + 1).min(page.blocks);
    let others = (window.len() - 1).max(1) as f32;
    let around = |x: &dyn Fn(usize) -> f32| window.clone().filter(|&j| j != i).map(x).sum::<f32>() / others;
    row.put(around(&|j| page.good[j]));
    row.put(around(&|j| f32::from(u8::from(page.kept[j]))));
    row.put(around(&|j| ratio(page.walk.blocks[j].link_chars, page.walk.blocks[j].chars)));
    row.put(if page.distance[i] == u32::MAX { 10.0 } else { ln(page.distance[i]) });
    row.put(f32::from(u8::from(page.first_kept.is_some_and(|f| f <= i) && page.last_kept.is_some_and(|l| i <= l))));
    row.put(ratio(before.kept, page.kept_chars));
    let words = word_set(&b.text);
    row.put(if words.is_empty() {
        0.0
    } else {
        words.iter().filter(|w| page.title.contains(*w)).count() as f32 / words.len() as f32
    });
    row.put(f32::from(u8::from(page.walk.meta.first_h1.as_deref() == Some(b.text.trim()))));
    for g in 0..PAGE_KINDS.len() {
        row.put(f32::from(u8::from(page.kinds & (1 << g) != 0)));
    }
    for g in 0..URL_KINDS.len() {
        row.put(f32::from(u8::from(page.url_bits & (1 << g) != 0)));
    }
    row.put(page.url_depth as f32);
    row.put(ratio(b.chars, page.longest));
    let meet = ancestors(page.walk, b.elem)
        .enumerate()
        .find_map(|(up, a)| page.anchor_path.iter().position(|&x| x == a).map(|au| (up, au)));
    let (up, anchor_up) = meet.map_or((30.0, 30.0), |(u, a)| (u as f32, a as f32));
    row.put(up);
    row.put(anchor_up);
    row.put(f32::from(u8::from(
        page.anchor.is_some_and(|a| page.walk.elems[page.walk.blocks[a].elem as usize].parent == e.parent),
    )));
    row.put(parent.map_or(0.0, |p| ratio(p.text_chars, page.root_chars)));
    let grandparent = parent.and_then(|p| (p.parent != NO_PARENT).then(|| &page.walk.elems[p.parent as usize]));
    row.put(grandparent.map_or(0.0, |g| ratio(g.text_chars, page.root_chars)));
    for share in text_groups(&b.text) {
        row.put(share);
    }
    let path = page.paths[b.elem as usize];
    let (count, path_chars, path_kept, path_good) = page.on_path.get(&path).copied().unwrap_or_default();
    row.put(f32::from(u8::from(page.anchor_hash == Some(path))));
    row.put(ln(count));
    row.put(ratio(path_chars, page.total_chars));
    row.put(ratio(path_kept, path_chars));
    row.put(ratio(path_good, path_chars));
}

/// How many numbers the second stage adds to a block's features: what the first stage
/// thought of the block and of its neighbours.
pub const CONTEXT: usize = 9;

/// The second stage's extra features, from the first stage's probability for every block:
/// its own, its neighbours', the mean over windows around it, over the blocks that share its
/// parent element (`parents`) and over the page weighted by length (`chars`), and its rank in
/// the page.
pub fn context(parents: &[ElemId], chars: &[u32], p: &[f32]) -> Vec<[f32; CONTEXT]> {
    let n = p.len();
    let mut family: std::collections::HashMap<ElemId, (f32, u32)> = std::collections::HashMap::new();
    for (parent, &pb) in parents.iter().zip(p) {
        let e = family.entry(*parent).or_default();
        e.0 += pb;
        e.1 += 1;
    }
    let weighted = {
        let (sum, w) = chars.iter().zip(p).fold((0f32, 0f32), |(s, w), (&c, &pb)| (s + pb * c as f32, w + c as f32));
        if w > 0.0 {
            sum / w
        } else {
            0.0
        }
    };
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| p[b].total_cmp(&p[a]));
    let mut rank = vec![0f32; n];
    for (r, &i) in order.iter().enumerate() {
        rank[i] = r as f32 / n.max(1) as f32;
    }
    let mean = |lo: usize, hi: usize| p[lo..hi].iter().sum::<f32>() / (hi - lo).max(1) as f32;
    (0..n)
        .map(|i| {
            let (sum, count) = family.get(&parents[i]).copied().unwrap_or((0.0, 1));
            [
                p[i],
                if i > 0 { p[i - 1] } else { 0.0 },
                p.get(i + 1).copied().unwrap_or(0.0),
                mean(i.saturating_sub(3), (i + 4).min(n)),
                mean(i.saturating_sub(10), (i + 11).min(n)),
                p[i.saturating_sub(3)..(i + 4).min(n)].iter().copied().fold(0.0, f32::max),
                sum / count.max(1) as f32,
                weighted,
                rank[i],
            ]
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_match_the_count_and_groups_match_words_not_substrings() {
        assert_eq!(names().len(), COUNT);
        assert_eq!(group_bits("site-header ad"), (1 << 2) | (1 << 7));
        assert_eq!(group_bits("shadow"), 0, "`ad` is a whole word, not a substring");
        assert_eq!(group_bits("comments-list"), 1 << 4);
        assert_eq!(group_bits(""), 0);
    }

    #[test]
    fn a_page_s_blocks_get_finite_features_that_say_what_they_are() {
        let html = br#"<html><head><title>Trail pack review</title>
            <script type="application/ld+json">{"@type": "Product", "name": "Trail pack"}</script></head>
            <body><nav class="site-nav"><a href="/">Home</a> <a href="/shop">Shop</a></nav>
            <article class="post-content"><h1>Trail pack review</h1>
            <p>This pack carries a day's gear, with pockets for everything, and it fits most backs well.</p>
            <p>Its fabric sheds rain, its zips run smoothly, and the hip belt takes the weight off.</p></article>
            <footer class="footer">Copyright 2026</footer></body></html>"#;
        let url = url::Url::parse("https://shop.test/product/trail-pack").unwrap();
        let rows = crate::block_rows(html, &url);
        assert!(rows.len() >= 4, "{rows:?}");
        let names = names();
        let at = |name: &str| names.iter().position(|n| n == name).unwrap();
        for r in &rows {
            assert!(r.features.iter().all(|x| x.is_finite()), "{r:?}");
            assert_eq!(r.features[at("page_says_Product")], 1.0, "the JSON-LD type reaches every block");
            assert_eq!(r.features[at("url_says_product")], 1.0);
        }
        let prose = rows.iter().find(|r| r.text.starts_with("This pack")).unwrap();
        assert_eq!(prose.features[at("verdict_kept")], 1.0);
        assert_eq!(prose.features[at("above_content")], 1.0, "inside `post-content`");
        let nav = rows.iter().find(|r| r.text.contains("Home")).unwrap();
        assert_eq!(nav.features[at("verdict_kept")], 0.0);
        assert_eq!(nav.features[at("own_nav")] + nav.features[at("above_nav")], 1.0, "{nav:?}");
        assert!(nav.features[at("link_density")] > 0.9);
    }
}
