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

use crate::fingerprint::Fingerprinter;
use crate::Warning;
use ego_tree::iter::Edge;
use ego_tree::NodeRef;
use regex::RegexSet;
use scraper::{Html, Node};
use std::sync::OnceLock;
use url::Url;

/// Index into [`Walk::elems`].
pub type ElemId = u32;
pub const NO_PARENT: ElemId = u32::MAX;

/// Recursion guard for the walk. The sanitizer caps nesting at `sanitize::MAX_DEPTH` open
/// elements, but implicitly closed elements do not count there; this is the hard stop.
const MAX_WALK_DEPTH: u16 = 1_024;

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

/// Class/id patterns, after Mozilla Readability (the widely tested set).
const UNLIKELY: usize = 0;
const MAYBE: usize = 1;
const POSITIVE: usize = 2;
const NEGATIVE: usize = 3;

fn patterns() -> &'static RegexSet {
    static SET: OnceLock<RegexSet> = OnceLock::new();
    SET.get_or_init(|| {
        RegexSet::new([
            r"(?i)-ad-|ai2html|banner|breadcrumbs|combx|comment|community|cover-wrap|disqus|extra|footer|gdpr|header|legends|menu|related|remark|replies|rss|shoutbox|sidebar|skyscraper|social|sponsor|supplemental|ad-break|agegate|pagination|pager|popup|yom-remote|newsletter|share|sharing|subscribe|promo|cookie|consent|outbrain|taboola|recirc|trending|most-popular|mostpopular|signup|paywall",
            r"(?i)and|article|body|column|content|main|mathjax|shadow|story|entry|post",
            r"(?i)article|body|content|entry|hentry|h-entry|main|page|post|text|blog|story",
            r"(?i)-ad-|hidden|^hid$| hid$| hid |^hid |banner|combx|comment|com-|contact|footer|gdpr|masthead|media|meta|outbrain|promo|related|scroll|share|shoutbox|sidebar|skyscraper|sponsor|shopping|tags|widget|byline|author|caption|credit|newsletter",
        ])
        .expect("valid patterns")
    })
}

fn is_block_tag(tag: &str) -> bool {
    matches!(
        tag,
        "address"
            | "article"
            | "aside"
            | "blockquote"
            | "body"
            | "center"
            | "dd"
            | "details"
            | "dialog"
            | "div"
            | "dl"
            | "dt"
            | "fieldset"
            | "figcaption"
            | "figure"
            | "footer"
            | "form"
            | "h1"
            | "h2"
            | "h3"
            | "h4"
            | "h5"
            | "h6"
            | "header"
            | "hgroup"
            | "hr"
            | "li"
            | "main"
            | "nav"
            | "ol"
            | "p"
            | "pre"
            | "section"
            | "table"
            | "tbody"
            | "thead"
            | "tfoot"
            | "tr"
            | "td"
            | "th"
            | "ul"
            | "caption"
            | "summary"
            | "html"
            | "menu"
            | "legend"
    )
}

/// Elements whose content is never visible page text.
fn is_skipped_tag(tag: &str) -> bool {
    matches!(
        tag,
        "script"
            | "style"
            | "noscript"
            | "template"
            | "svg"
            | "math"
            | "canvas"
            | "iframe"
            | "object"
            | "embed"
            | "video"
            | "audio"
            | "select"
            | "option"
            | "button"
            | "input"
            | "textarea"
            | "head"
            | "picture"
            | "map"
            | "datalist"
            | "dialog"
    )
}

fn is_boiler_tag(tag: &str) -> bool {
    matches!(tag, "nav" | "aside" | "footer" | "header" | "menu")
}

fn is_boiler_role(role: &str) -> bool {
    matches!(
        role.trim().to_ascii_lowercase().as_str(),
        "navigation"
            | "banner"
            | "contentinfo"
            | "complementary"
            | "menu"
            | "menubar"
            | "dialog"
            | "alertdialog"
            | "search"
            | "toolbar"
            | "tablist"
            | "tooltip"
    )
}

/// Class names that hide content in practically every CSS framework.
fn is_hiding_class(class: &str) -> bool {
    class.split_ascii_whitespace().any(|c| {
        matches!(
            c.to_ascii_lowercase().as_str(),
            "hidden"
                | "d-none"
                | "is-hidden"
                | "hide"
                | "visually-hidden"
                | "visuallyhidden"
                | "sr-only"
                | "screen-reader-text"
                | "screenreader-only"
                | "offscreen"
                | "u-hidden"
        )
    })
}

fn style_hides(style: &str) -> bool {
    let compact: String = style.chars().filter(|c| !c.is_whitespace()).collect::<String>().to_ascii_lowercase();
    compact.contains("display:none") || compact.contains("visibility:hidden")
}

/// Is the element hidden from a reader: the `hidden` attribute, `aria-hidden="true"`, an inline
/// `display:none` or `visibility:hidden`, a hiding class, a hidden input — unless it is only
/// collapsed ([`is_collapsed`]).
fn is_hidden(tag: &str, a: &Attrs) -> bool {
    if is_collapsed(a) {
        return false;
    }
    a.hidden
        || a.aria_hidden
        || a.style.is_some_and(style_hides)
        || a.class.is_some_and(is_hiding_class)
        || (tag == "input" && a.kind.is_some_and(|k| k.eq_ignore_ascii_case("hidden")))
}

/// Collapsed is not hidden: content a reader opens with a click on the page — a tab panel, an
/// accordion's or FAQ's answer, a "read more" wrapper, `hidden="until-found"` (which the
/// browser's find-in-page opens) — is the page's text, whatever hides it until then.
fn is_collapsed(a: &Attrs) -> bool {
    a.until_found
        || a.role.is_some_and(|r| r.trim().eq_ignore_ascii_case("tabpanel"))
        || a.class.is_some_and(|c| {
            c.split_ascii_whitespace().any(|t| {
                let t = t.to_ascii_lowercase();
                matches!(t.as_str(), "tab-pane" | "tabpanel" | "read-more" | "readmore" | "more-content")
                    || ["accordion", "tab-", "collaps", "faq", "expand"].iter().any(|w| t.contains(w))
            })
        })
}

/// [`is_hidden`] for an element of a parsed document: the one rule every path that reads
/// text applies (the generic walk here, layout templates in `template::text_of`).
pub(crate) fn hides(el: &scraper::node::Element) -> bool {
    is_hidden(el.name(), &read_attrs(el))
}

/// The attributes of one element that the walk reads, gathered in one pass over them.
#[derive(Default)]
struct Attrs<'a> {
    id: Option<&'a str>,
    class: Option<&'a str>,
    style: Option<&'a str>,
    role: Option<&'a str>,
    itemprop: Option<&'a str>,
    href: Option<&'a str>,
    rel: Option<&'a str>,
    hidden: bool,
    until_found: bool,
    aria_hidden: bool,
    kind: Option<&'a str>,
    name: Option<&'a str>,
    property: Option<&'a str>,
    content: Option<&'a str>,
    http_equiv: Option<&'a str>,
    datetime: Option<&'a str>,
    lang: Option<&'a str>,
    marker: Option<&'static str>,
}

fn read_attrs<'a>(el: &'a scraper::node::Element) -> Attrs<'a> {
    let mut a = Attrs::default();
    for (k, v) in el.attrs() {
        match k {
            "id" => a.id = Some(v),
            "class" => a.class = Some(v),
            "style" => a.style = Some(v),
            "role" => a.role = Some(v),
            "itemprop" => a.itemprop = Some(v),
            "href" => a.href = Some(v),
            "rel" => a.rel = Some(v),
            "hidden" => {
                a.hidden = true;
                a.until_found = v.trim().eq_ignore_ascii_case("until-found");
            }
            "aria-hidden" => a.aria_hidden = v.trim().eq_ignore_ascii_case("true"),
            "type" => a.kind = Some(v),
            "name" => a.name = Some(v),
            "property" => a.property = Some(v),
            "content" => a.content = Some(v),
            "http-equiv" => a.http_equiv = Some(v),
            "datetime" => a.datetime = Some(v),
            "lang" => a.lang = Some(v),
            "data-reactroot" | "data-reactid" => a.marker = Some("data-reactroot"),
            "ng-version" => a.marker = Some("ng-version"),
            "ng-app" | "data-ng-app" => a.marker = Some("ng-app"),
            "v-cloak" => a.marker = Some("v-cloak"),
            "data-server-rendered" => a.marker = Some("data-server-rendered"),
            _ if k.starts_with("data-v-") => a.marker = Some("data-v-"),
            _ if k.starts_with("_nghost") || k.starts_with("_ngcontent") => a.marker = Some("_nghost"),
            _ if k.starts_with("data-svelte") => a.marker = Some("data-svelte"),
            _ => {}
        }
    }
    a
}

/// Appends `text` to `buf` with whitespace runs collapsed to one space (none at the start of
/// the buffer). Returns the number of non-whitespace characters added.
fn push_collapsed(buf: &mut String, text: &str) -> u32 {
    let mut added = 0u32;
    let mut space = false;
    for c in text.chars() {
        if c.is_whitespace() {
            space = true;
            continue;
        }
        if space && !buf.is_empty() && !buf.ends_with([' ', '\n']) {
            buf.push(' ');
        }
        space = false;
        buf.push(c);
        added += 1;
    }
    if space && !buf.is_empty() && !buf.ends_with([' ', '\n']) {
        buf.push(' ');
    }
    added
}

/// One step of the iterative walk: enter a node, or finish an element entered earlier.
enum Step<'a> {
    Enter(NodeRef<'a, Node>, ElemId, u16),
    Exit(Exit),
}

/// What to restore when an element's subtree is done.
struct Exit {
    /// The element was block-level: flush its text, then restore this owner.
    block: Option<ElemId>,
    /// The element was a link: restore this open link.
    link: Option<Option<u32>>,
}

struct State<'a> {
    walk: Walk<'a>,
    fp: Fingerprinter,
    buf: String,
    buf_chars: u32,
    buf_link_chars: u32,
    buf_links: Vec<u32>,
    owner: ElemId,
    /// The open link, if any: index into links; its text accumulates while it is open.
    link: Option<u32>,
    /// The `<noscript>` with the most text (its characters, its markup).
    noscript: Option<(u32, String)>,
    depth_warned: bool,
}

impl<'a> State<'a> {
    fn flush(&mut self) {
        let text = self.buf.trim();
        if !text.is_empty() && self.owner != NO_PARENT {
            let index = self.walk.blocks.len() as u32;
            for &l in &self.buf_links {
                self.walk.links[l as usize].block = Some(index);
            }
            let elem = &self.walk.elems[self.owner as usize];
            self.walk.blocks.push(Block {
                tag: elem.tag,
                elem: self.owner,
                text: text.to_string(),
                chars: self.buf_chars,
                link_chars: self.buf_link_chars.min(self.buf_chars),
                links: std::mem::take(&mut self.buf_links),
            });
        }
        self.buf.clear();
        self.buf_links.clear();
        self.buf_chars = 0;
        self.buf_link_chars = 0;
    }

    /// Runs the walk from `root` with an explicit stack: hostile nesting cannot overflow the
    /// thread's stack, whatever depth html5ever produced.
    fn run(&mut self, root: NodeRef<'a, Node>) {
        let mut stack = vec![Step::Enter(root, NO_PARENT, 0)];
        while let Some(step) = stack.pop() {
            match step {
                Step::Enter(node, parent, depth) => self.enter(node, parent, depth, &mut stack),
                Step::Exit(exit) => self.exit(exit),
            }
        }
    }

    fn enter(&mut self, node: NodeRef<'a, Node>, parent: ElemId, depth: u16, stack: &mut Vec<Step<'a>>) {
        if depth >= MAX_WALK_DEPTH {
            if !self.depth_warned {
                self.depth_warned = true;
                self.walk.warnings.push(Warning::DepthLimited { max_depth: MAX_WALK_DEPTH as usize, dropped_tags: 0 });
            }
            return;
        }
        match node.value() {
            Node::Text(t) => {
                if parent == NO_PARENT {
                    return;
                }
                let added = push_collapsed(&mut self.buf, t);
                self.buf_chars += added;
                if let Some(l) = self.link {
                    self.buf_link_chars += added;
                    push_collapsed(&mut self.walk.links[l as usize].text, t);
                }
            }
            Node::Element(el) => self.element(node, el, parent, depth, stack),
            Node::Document | Node::Fragment => {
                for child in node.children().rev() {
                    stack.push(Step::Enter(child, parent, depth + 1));
                }
            }
            _ => {}
        }
    }

    fn exit(&mut self, exit: Exit) {
        if let Some(saved_link) = exit.link {
            if let Some(l) = self.link {
                let l = &mut self.walk.links[l as usize];
                l.text.truncate(l.text.trim_end().len());
            }
            self.link = saved_link;
        }
        if let Some(saved_owner) = exit.block {
            self.flush();
            self.owner = saved_owner;
            self.separate_link_text();
        }
        self.fp.close();
    }

    /// A block, line break or image inside an open link separates its words: `<a><div>Title
    /// </div><div>Summary</div></a>` reads "Title Summary", not "TitleSummary".
    fn separate_link_text(&mut self) {
        if let Some(l) = self.link {
            let text = &mut self.walk.links[l as usize].text;
            if !text.is_empty() && !text.ends_with(' ') {
                text.push(' ');
            }
        }
    }

    fn element(
        &mut self,
        node: NodeRef<'a, Node>,
        el: &'a scraper::node::Element,
        parent: ElemId,
        depth: u16,
        stack: &mut Vec<Step<'a>>,
    ) {
        let tag = el.name();
        let a = read_attrs(el);
        if let Some(m) = a.marker {
            self.walk.js.markers.push(m);
        }
        self.head_facts(node, tag, &a);
        let pruned = matches!(tag, "script" | "style" | "noscript" | "template");
        if !pruned {
            self.fp.open(tag, a.id, a.class);
        }
        let hidden = is_hidden(tag, &a);
        // A hidden block is walked and dropped after the walk (it may be the whole page, hidden
        // until a script reveals it); hidden inline text is skipped here, inside its block.
        let block = is_block_tag(tag);
        if is_skipped_tag(tag) || (hidden && !block) || parent == NO_PARENT && tag != "html" && tag != "body" {
            // Skipped subtrees still count toward the fingerprint skeleton (not their text).
            if tag == "head" {
                // Head children are metadata, not content: visit them without a parent.
                stack.push(Step::Exit(Exit { block: None, link: None }));
                for child in node.children().rev() {
                    stack.push(Step::Enter(child, NO_PARENT, depth + 1));
                }
                return;
            }
            if !pruned {
                self.fingerprint_subtree(node);
                self.fp.close();
            }
            return;
        }

        // Register the element.
        let mut weight = 0i16;
        let mut unlikely = false;
        let class_id = match (a.class, a.id) {
            (Some(c), Some(i)) => Some(format!("{c} {i}")),
            (Some(c), None) => Some(c.to_string()),
            (None, Some(i)) => Some(i.to_string()),
            (None, None) => None,
        };
        if let Some(ci) = &class_id {
            let m = patterns().matches(ci);
            if m.matched(POSITIVE) {
                weight += 25;
            }
            if m.matched(NEGATIVE) {
                weight -= 25;
            }
            unlikely =
                m.matched(UNLIKELY) && !m.matched(MAYBE) && !matches!(tag, "body" | "html" | "article" | "main" | "a");
        }
        let itemprop_body = a.itemprop.is_some_and(|p| {
            p.split_ascii_whitespace().any(|p| p == "articleBody" || p == "text" || p == "reviewBody")
        });
        let content_hint = matches!(tag, "article" | "main")
            || itemprop_body
            || a.role.is_some_and(|r| r.eq_ignore_ascii_case("main"));
        let own_boiler = if itemprop_body {
            None
        } else if is_boiler_tag(tag) {
            Some(BoilerBy::Tag)
        } else if a.role.is_some_and(is_boiler_role) {
            Some(BoilerBy::Role)
        } else if unlikely {
            Some(BoilerBy::ClassId)
        } else {
            None
        };
        let id = self.walk.elems.len() as ElemId;
        self.walk.elems.push(Elem {
            tag,
            parent,
            depth,
            weight,
            boiler: false,
            own_boiler,
            content_hint,
            hidden: hidden || (parent != NO_PARENT && self.walk.elems[parent as usize].hidden),
            own_hidden: hidden,
            text_chars: 0,
            link_chars: 0,
            blocks: 0,
            label: class_id.unwrap_or_default(),
        });
        if let Some(elem_id) = a.id {
            let lower = elem_id.to_ascii_lowercase();
            if matches!(
                lower.as_str(),
                "app" | "root" | "__next" | "__nuxt" | "___gatsby" | "svelte" | "app-root" | "main-app"
            ) {
                self.walk.js.app_containers.push(id);
            }
        }

        let saved_owner = self.owner;
        if block {
            self.flush();
            self.owner = id;
            self.separate_link_text();
        }
        let is_link = (tag == "a" || tag == "area") && a.href.is_some();
        let saved_link = self.link;
        if is_link {
            let l = self.walk.links.len() as u32;
            self.walk.links.push(RawLink {
                href: a.href.unwrap_or_default().to_string(),
                text: String::new(),
                rel: a.rel.unwrap_or_default().to_string(),
                block: None,
                elem: parent,
            });
            self.buf_links.push(l);
            self.link = Some(l);
        }
        if matches!(tag, "br" | "img") {
            self.separate_link_text();
        }
        if tag == "br" {
            // Keep the break as a line boundary inside the block.
            while self.buf.ends_with(' ') {
                self.buf.pop();
            }
            if !self.buf.is_empty() && !self.buf.ends_with('\n') {
                self.buf.push('\n');
            }
        } else if tag == "img" {
            // Images separate words visually; never glue the words around them.
            if !self.buf.is_empty() && !self.buf.ends_with([' ', '\n']) {
                self.buf.push(' ');
            }
        }
        stack.push(Step::Exit(Exit { block: block.then_some(saved_owner), link: is_link.then_some(saved_link) }));
        for child in node.children().rev() {
            stack.push(Step::Enter(child, id, depth + 1));
        }
    }

    /// Feeds the skeleton of a skipped subtree (hidden or non-text elements) to the fingerprint,
    /// and collects the metadata carriers inside it. Iterative, like the walk.
    fn fingerprint_subtree(&mut self, node: NodeRef<'a, Node>) {
        let mut skip_depth = 0usize; // > 0 while inside a pruned element
        for edge in node.traverse().skip(1) {
            match edge {
                Edge::Open(child) => {
                    let Node::Element(el) = child.value() else { continue };
                    let tag = el.name();
                    if skip_depth > 0 || matches!(tag, "script" | "style" | "noscript" | "template") {
                        if skip_depth == 0 {
                            self.script_facts(child, el);
                        }
                        skip_depth += 1;
                        continue;
                    }
                    let a = read_attrs(el);
                    self.head_facts(child, tag, &a);
                    self.fp.open(tag, a.id, a.class);
                }
                Edge::Close(child) => {
                    if child == node {
                        break;
                    }
                    if !child.value().is_element() {
                        continue;
                    }
                    if skip_depth > 0 {
                        skip_depth -= 1;
                    } else {
                        self.fp.close();
                    }
                }
            }
        }
    }

    fn script_facts(&mut self, node: NodeRef<'a, Node>, el: &'a scraper::node::Element) {
        let tag = el.name();
        let a = read_attrs(el);
        self.head_facts(node, tag, &a);
    }

    /// Metadata carriers and script facts. Called for every element, wherever it sits (html5ever
    /// moves stray `<meta>` and `<script>` into the body).
    fn head_facts(&mut self, node: NodeRef<'a, Node>, tag: &str, a: &Attrs<'a>) {
        let meta = &mut self.walk.meta;
        match tag {
            "html" => meta.html_lang = a.lang.map(|l| l.trim().to_string()).filter(|l| !l.is_empty()),
            "title" if meta.title.is_none() => meta.title = Some(node_text(node)),
            "base" if meta.base_href.is_none() => meta.base_href = a.href.map(str::to_string),
            "meta" => {
                if let Some(content) = a.content {
                    let key = a.property.or(a.name).or(a.itemprop).or(a.http_equiv);
                    if let Some(key) = key {
                        meta.metas.push((key.trim().to_ascii_lowercase(), content.trim().to_string()));
                    }
                }
            }
            "link" => {
                if let (Some(rel), Some(href)) = (a.rel, a.href) {
                    for r in rel.split_ascii_whitespace() {
                        let r = r.to_ascii_lowercase();
                        if matches!(r.as_str(), "canonical" | "next" | "prev" | "author" | "amphtml" | "alternate") {
                            meta.link_rels.push((r, href.trim().to_string()));
                        }
                    }
                }
            }
            "time" => {
                if let Some(dt) = a.datetime {
                    meta.times.push((a.itemprop.map(str::to_string), dt.trim().to_string()));
                }
            }
            "h1" if meta.first_h1.is_none() => {
                let t = node_text(node);
                if !t.is_empty() {
                    meta.first_h1 = Some(t);
                }
            }
            "script" => {
                let text = node_text_raw(node);
                let js = &mut self.walk.js;
                js.script_count += 1;
                js.script_bytes += text.len();
                let kind = a.kind.map(|k| k.trim().to_ascii_lowercase());
                if kind.as_deref() == Some("application/ld+json") {
                    meta.json_ld.push(text);
                } else {
                    if a.id == Some("__NEXT_DATA__") {
                        js.markers.push("__NEXT_DATA__");
                    }
                    for (needle, marker) in [
                        ("__NEXT_DATA__", "__NEXT_DATA__"),
                        ("__NUXT__", "__NUXT__"),
                        ("__INITIAL_STATE__", "__INITIAL_STATE__"),
                        ("__REACT", "__REACT"),
                        ("__VUE__", "__VUE__"),
                        ("__svelte", "__svelte"),
                        ("ng-version", "ng-version"),
                        ("/_next/", "/_next/"),
                    ] {
                        if text.contains(needle) {
                            js.markers.push(marker);
                        }
                    }
                }
                if let Some(src) = node.value().as_element().and_then(|e| e.attr("src")) {
                    if src.contains("/_next/") {
                        js.markers.push("/_next/");
                    } else if src.contains("/_nuxt/") {
                        js.markers.push("__NUXT__");
                    }
                }
            }
            "noscript" => {
                let t = node_text_raw(node);
                let js = &mut self.walk.js;
                if js.noscript_text.len() < 4_096 {
                    js.noscript_text.push_str(&t[..t.floor_char_boundary(4_096)]);
                }
                // A page that serves its content to readers without JavaScript inside
                // `<noscript>` (forum engines do): a candidate for the text, decided after the walk.
                let chars = markup_text_chars(&t);
                if chars >= NOSCRIPT_MIN_CHARS && self.noscript.as_ref().is_none_or(|(c, _)| chars > *c) {
                    self.noscript = Some((chars, t));
                }
            }
            _ => {}
        }
        if self.walk.meta.byline.is_none() && tag != "meta" && tag != "link" {
            let is_author = a.rel.is_some_and(|r| r.split_ascii_whitespace().any(|r| r.eq_ignore_ascii_case("author")))
                || a.itemprop.is_some_and(|p| p.split_ascii_whitespace().any(|p| p == "author" || p == "creator"))
                || a.class.is_some_and(|c| {
                    c.split_ascii_whitespace().any(|c| {
                        let c = c.to_ascii_lowercase();
                        c.contains("byline") || c == "author" || c.ends_with("author-name") || c == "author-name"
                    })
                });
            if is_author {
                let t = node_text(node);
                if !t.is_empty() && t.chars().count() <= 120 {
                    self.walk.meta.byline = Some(t);
                }
            }
        }
    }
}

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
