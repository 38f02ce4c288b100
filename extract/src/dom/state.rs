//! The walk's state as it descends and climbs: open blocks, inline runs, links being read.

use super::{
    is_block_tag, is_boiler_role, is_boiler_tag, is_hidden, is_skipped_tag, markup_text_chars, node_text,
    node_text_raw, patterns, read_attrs, Attrs, Block, BoilerBy, Elem, ElemId, RawLink, Walk, MAX_WALK_DEPTH, MAYBE,
    NEGATIVE, NOSCRIPT_MIN_CHARS, NO_PARENT, POSITIVE, UNLIKELY,
};
use crate::fingerprint::Fingerprinter;
use crate::Warning;
use ego_tree::iter::Edge;
use ego_tree::NodeRef;
use scraper::Node;

/// Appends `text` to `buf` with whitespace runs collapsed to one space (none at the start of
/// the buffer). Returns the number of non-whitespace characters added.
pub(super) fn push_collapsed(buf: &mut String, text: &str) -> u32 {
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
    pub(super) link: Option<Option<u32>>,
}

pub(super) struct State<'a> {
    pub(super) walk: Walk<'a>,
    pub(super) fp: Fingerprinter,
    pub(super) buf: String,
    pub(super) buf_chars: u32,
    pub(super) buf_link_chars: u32,
    pub(super) buf_links: Vec<u32>,
    pub(super) owner: ElemId,
    /// The open link, if any: index into links; its text accumulates while it is open.
    pub(super) link: Option<u32>,
    /// The `<noscript>` with the most text (its characters, its markup).
    pub(super) noscript: Option<(u32, String)>,
    pub(super) depth_warned: bool,
}

impl<'a> State<'a> {
    pub(super) fn flush(&mut self) {
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
    pub(super) fn run(&mut self, root: NodeRef<'a, Node>) {
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
            self.skip(node, tag, pruned, depth, stack);
            return;
        }
        let id = self.register(tag, &a, parent, depth, hidden);
        let saved_owner = self.owner;
        if block {
            self.flush();
            self.owner = id;
            self.separate_link_text();
        }
        let is_link = (tag == "a" || tag == "area") && a.href.is_some();
        let saved_link = self.link;
        if is_link {
            self.open_link(&a, parent);
        }
        self.inline_break(tag);
        stack.push(Step::Exit(Exit { block: block.then_some(saved_owner), link: is_link.then_some(saved_link) }));
        for child in node.children().rev() {
            stack.push(Step::Enter(child, id, depth + 1));
        }
    }

    /// A subtree that holds no content: `<head>`'s children are visited without a parent (they
    /// are metadata); any other still counts toward the fingerprint's skeleton (not its text).
    fn skip(&mut self, node: NodeRef<'a, Node>, tag: &str, pruned: bool, depth: u16, stack: &mut Vec<Step<'a>>) {
        if tag == "head" {
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
    }

    /// Adds the element to the walk, with what its class, id, role and itemprop say of it
    /// (weight, content hint, boilerplate), and notes an app's mount point.
    fn register(&mut self, tag: &'a str, a: &Attrs<'a>, parent: ElemId, depth: u16, hidden: bool) -> ElemId {
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

        id
    }

    /// Opens the link `a` describes, inside `parent`.
    fn open_link(&mut self, a: &Attrs<'a>, parent: ElemId) {
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

    /// A `<br>` is a line boundary inside the block, an `<img>` separates words.
    fn inline_break(&mut self, tag: &str) {
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
