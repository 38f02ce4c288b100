//! The facts the walk records: the element arena, text blocks, links, metadata carriers and the
//! raw material of the JS-need score.

use crate::Warning;

/// Index into [`Walk::elems`].
pub type ElemId = u32;

pub const NO_PARENT: ElemId = u32::MAX;

#[derive(Debug)]
pub struct Elem<'a> {
    pub tag: &'a str,
    pub parent: ElemId,
    pub depth: u16,
    /// Readability-style class/id weight: +25 positive, −25 negative.
    pub weight: i16,
    /// This element or an ancestor is navigation, header/footer, aside, comments, share bars...
    /// Decided after the walk (see [`walk`]), from `own_boiler` and the subtree's prose.
    pub boiler: bool,
    /// The element itself looks like boilerplate: by tag, ARIA role, or class/id pattern.
    pub own_boiler: Option<BoilerBy>,
    /// Strong content hint: `<article>`, `<main>`, `itemprop="articleBody"`, `role="main"`.
    pub content_hint: bool,
    /// This element or an ancestor is hidden (see `drop_hidden` for the one exception).
    pub hidden: bool,
    /// The element itself is hidden (attribute, ARIA, inline style or hiding class).
    pub own_hidden: bool,
    /// Visible text characters in the subtree, and how many of them are link text. Filled in
    /// after the walk from the blocks.
    pub text_chars: u32,
    pub link_chars: u32,
    pub blocks: u32,
    /// `class id` as written, for the development outline.
    pub label: String,
}

/// Why an element looks like boilerplate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BoilerBy {
    Tag,
    Role,
    ClassId,
}

#[derive(Debug)]
pub struct Block<'a> {
    /// Tag of the block-level element that owns this text.
    pub tag: &'a str,
    pub elem: ElemId,
    /// Whitespace-collapsed text; `<br>` becomes a newline.
    pub text: String,
    pub chars: u32,
    pub link_chars: u32,
    /// Indices into [`Walk::links`].
    pub links: Vec<u32>,
}

#[derive(Debug)]
pub struct RawLink {
    pub href: String,
    pub text: String,
    pub rel: String,
    pub block: Option<u32>,
    /// The element the link sits in (its parent).
    pub elem: ElemId,
}

/// Metadata carriers found anywhere in the document.
#[derive(Debug, Default)]
pub struct MetaFacts {
    pub title: Option<String>,
    pub html_lang: Option<String>,
    pub base_href: Option<String>,
    /// `(key, content)`: key is the lowercased `property`, `name`, `itemprop` or `http-equiv`.
    pub metas: Vec<(String, String)>,
    /// `(rel, href)` of `<link>` elements with a `rel` we care about.
    pub link_rels: Vec<(String, String)>,
    pub json_ld: Vec<String>,
    /// `datetime` of `<time>` elements with their `itemprop` (if any), in document order.
    pub times: Vec<(Option<String>, String)>,
    /// Text of the first element marked as the author (rel/itemprop/class `author`, `byline`).
    pub byline: Option<String>,
    pub first_h1: Option<String>,
}

/// Raw material of the JS-need score.
#[derive(Debug, Default)]
pub struct JsFacts {
    pub script_bytes: usize,
    pub script_count: usize,
    /// Marker strings seen in attributes, ids or inline scripts (e.g. `data-reactroot`).
    pub markers: Vec<&'static str>,
    /// Elements with an app-container id (`app`, `root`, `__next`, ...).
    pub app_containers: Vec<ElemId>,
    pub noscript_text: String,
}

pub struct Walk<'a> {
    pub elems: Vec<Elem<'a>>,
    pub blocks: Vec<Block<'a>>,
    pub links: Vec<RawLink>,
    pub meta: MetaFacts,
    pub js: JsFacts,
    pub fingerprints: crate::Fingerprints,
    pub warnings: Vec<Warning>,
    /// The markup inside a `<noscript>` that holds the page's text: far more than everything
    /// visible outside it (see [`walk`]). The caller parses and walks it as the page's body.
    pub noscript_body: Option<String>,
}
