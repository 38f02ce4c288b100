//! Layout templates: the worker's fast path (seed 000's teacher/worker design).
//!
//! A [`Template`] says where a layout keeps its title, main content, date and author, and what
//! inside the content is not content (share bars, related links), as CSS selectors that work on
//! the *static* HTML. A teacher learns one by looking at a rendered page; from then on every
//! page of that layout (same host, same L1 or L2 fingerprint) is extracted with [`apply`], no
//! browser involved. [`apply`] validates as it goes — the required fields must be there and the
//! content long enough — so a layout that changed under a template is noticed on its first
//! page, not after a thousand bad extractions.
//!
//! [`stable_selector`] is the other direction: given an element the teacher chose, the selector
//! that finds it again on other pages of the layout — a unique id, then tag and classes, then
//! a semantic tag, before any position-based chain.

use scraper::{ElementRef, Html, Selector};
use serde::{Deserialize, Serialize};

/// Fewest words a template's content must have to count as valid.
pub const MIN_WORDS: usize = 40;

/// Which fingerprint a template is keyed by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    /// Tags, ids and classes: one template of one site.
    L1,
    /// Tags only: a layout family, for pages whose classes vary.
    L2,
}

/// Where the fields are.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Selectors {
    pub title: String,
    pub content: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub date: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub author: Option<String>,
}

/// How a template came to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Origin {
    /// Learned by the teacher from a rendered page.
    Learned,
    /// From the operator's override file: wins over learned templates.
    Manual,
}

/// A layout's extraction rules.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Template {
    pub host: String,
    /// The fingerprint (16 hex digits) and its level.
    pub signature: String,
    pub level: Level,
    pub selectors: Selectors,
    /// Elements inside the content that are not content.
    #[serde(default)]
    pub exclusions: Vec<String>,
    /// 0–1: how sure the teacher was (agreement of its heuristics and of the pages it
    /// validated on).
    pub confidence: f32,
    /// Grows each time the layout is learned again.
    pub version: u32,
    pub origin: Origin,
    /// Seconds since the Unix epoch.
    pub learned_at: u64,
}

/// What a template extracted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TemplateText {
    pub title: String,
    /// Paragraphs separated by blank lines, like the generic extractor's text.
    pub text: String,
    pub word_count: usize,
    pub date: Option<String>,
    pub author: Option<String>,
}

/// Why a template did not extract a page.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum TemplateError {
    #[error("the {field} selector {selector:?} does not parse: {error}")]
    BadSelector { field: String, selector: String, error: String },
    #[error("no element matches the {field} selector {selector:?}")]
    Missing { field: String, selector: String },
    #[error("the content has {words} words, fewer than {min}")]
    TooShort { words: usize, min: usize },
}

impl TemplateError {
    /// A short stable name for counters.
    pub fn kind(&self) -> &'static str {
        match self {
            TemplateError::BadSelector { .. } => "bad_selector",
            TemplateError::Missing { .. } => "missing",
            TemplateError::TooShort { .. } => "too_short",
        }
    }
}

fn selector(field: &str, s: &str) -> Result<Selector, TemplateError> {
    Selector::parse(s).map_err(|e| TemplateError::BadSelector {
        field: field.to_string(),
        selector: s.to_string(),
        error: e.to_string(),
    })
}

fn first<'a>(doc: &'a Html, field: &str, s: &str) -> Result<ElementRef<'a>, TemplateError> {
    doc.select(&selector(field, s)?)
        .next()
        .ok_or_else(|| TemplateError::Missing { field: field.to_string(), selector: s.to_string() })
}

/// Elements whose text is never content.
const SKIPPED: [&str; 8] = ["script", "style", "noscript", "template", "svg", "button", "form", "iframe"];
/// Elements that end a paragraph.
const BLOCKS: [&str; 24] = [
    "p",
    "div",
    "section",
    "article",
    "main",
    "header",
    "footer",
    "aside",
    "blockquote",
    "pre",
    "ul",
    "ol",
    "li",
    "dl",
    "dt",
    "dd",
    "table",
    "tr",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
];

/// Phrasing elements: their text runs on with their neighbours'.
const INLINE: [&str; 20] = [
    "a", "em", "strong", "b", "i", "u", "s", "code", "small", "sub", "sup", "mark", "abbr", "cite", "q", "span",
    "time", "kbd", "var", "del",
];

/// The text under `root` without the `excluded` subtrees: paragraphs at block boundaries,
/// whitespace collapsed inside them. Iterative, so no nesting depth overflows the stack.
pub fn text_of(root: ElementRef<'_>, excluded: &[Selector]) -> String {
    let mut paragraphs: Vec<String> = Vec::new();
    let mut current = String::new();
    let flush = |current: &mut String, paragraphs: &mut Vec<String>| {
        let p = current.split_whitespace().collect::<Vec<_>>().join(" ");
        if !p.is_empty() {
            paragraphs.push(p);
        }
        current.clear();
    };
    // (node, entering): a block's exit flushes its paragraph; another element's exit (a table
    // cell, a label) separates words. Text is taken as written: `<a>word</a>.` stays `word.`.
    let mut stack = vec![(*root, true)];
    while let Some((node, entering)) = stack.pop() {
        if let Some(el) = ElementRef::wrap(node) {
            let name = el.value().name();
            if entering {
                // Hidden elements by the generic walk's rules (`dom::hides`): what a reader does
                // not see is not content on any path, and is where cloaked text lives.
                if SKIPPED.contains(&name)
                    || (node.id() != root.id()
                        && (crate::dom::hides(el.value()) || excluded.iter().any(|s| s.matches(&el))))
                {
                    continue;
                }
                if name == "br" {
                    current.push('\n');
                }
                let inline = INLINE.contains(&name);
                if BLOCKS.contains(&name) {
                    flush(&mut current, &mut paragraphs);
                } else if !inline {
                    current.push(' ');
                }
                if !inline {
                    stack.push((node, false));
                }
                let children: Vec<_> = node.children().collect();
                stack.extend(children.into_iter().rev().map(|c| (c, true)));
            } else if BLOCKS.contains(&name) {
                flush(&mut current, &mut paragraphs);
            } else {
                current.push(' ');
            }
        } else if let Some(t) = node.value().as_text() {
            current.push_str(t);
        }
    }
    flush(&mut current, &mut paragraphs);
    paragraphs.join("\n\n")
}

fn plain(el: ElementRef<'_>) -> String {
    el.text().collect::<Vec<_>>().join(" ").split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Extracts a parsed page with `t`, or says why it cannot: a selector that does not parse or
/// match a required field (title, content), or content under [`MIN_WORDS`] words. Optional
/// fields that do not match are left empty. A date comes from a `datetime` or `content`
/// attribute when the element has one.
pub fn apply(doc: &Html, t: &Template) -> Result<TemplateText, TemplateError> {
    let title = plain(first(doc, "title", &t.selectors.title)?);
    if title.is_empty() {
        return Err(TemplateError::Missing { field: "title".into(), selector: t.selectors.title.clone() });
    }
    let content = first(doc, "content", &t.selectors.content)?;
    let mut excluded: Vec<Selector> =
        t.exclusions.iter().map(|s| selector("exclusion", s)).collect::<Result<_, _>>()?;
    // The title is its own field, not the text's first line (the generic path leaves it out
    // too: a page read both ways must give the same text, or it is not found as a duplicate).
    excluded.push(selector("title", &t.selectors.title)?);
    let text = text_of(content, &excluded);
    let word_count = text.split_whitespace().count();
    if word_count < MIN_WORDS {
        return Err(TemplateError::TooShort { words: word_count, min: MIN_WORDS });
    }
    let optional = |field: &str, s: &Option<String>| -> Result<Option<ElementRef<'_>>, TemplateError> {
        match s {
            Some(s) => Ok(doc.select(&selector(field, s)?).next()),
            None => Ok(None),
        }
    };
    let date = optional("date", &t.selectors.date)?.map(|el| {
        el.value().attr("datetime").or_else(|| el.value().attr("content")).map_or_else(|| plain(el), str::to_string)
    });
    let author = optional("author", &t.selectors.author)?.map(plain).filter(|a| !a.is_empty());
    Ok(TemplateText { title, text, word_count, date: date.filter(|d| !d.is_empty()), author })
}

/// Whether an id or class looks generated (long digit runs, hashes): such names change
/// between pages or deploys and make brittle selectors.
pub(crate) fn generated(name: &str) -> bool {
    let digits = name.chars().filter(char::is_ascii_digit).count();
    digits >= 3 || name.len() > 40 || (name.len() >= 8 && digits * 4 >= name.len())
}

fn css_ident(s: &str) -> Option<String> {
    let ok = !s.is_empty()
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        && !s.starts_with(|c: char| c.is_ascii_digit())
        && !s.starts_with("--");
    ok.then(|| s.to_string())
}

/// The elements `s` matches.
fn count(doc: &Html, s: &str) -> usize {
    Selector::parse(s).map_or(usize::MAX, |sel| doc.select(&sel).count())
}

fn matches_only(doc: &Html, s: &str, el: ElementRef<'_>) -> bool {
    Selector::parse(s).is_ok_and(|sel| {
        let mut it = doc.select(&sel);
        it.next().is_some_and(|m| m.id() == el.id()) && it.next().is_none()
    })
}

/// This element alone, without looking at its ancestors: `#id`, `tag.class…`, or `tag`, the
/// first of them that names only this element in `doc`.
fn own_selector(doc: &Html, el: ElementRef<'_>) -> Option<String> {
    let tag = el.value().name();
    if let Some(id) = el.value().id().filter(|id| !generated(id)).and_then(css_ident) {
        let s = format!("#{id}");
        if matches_only(doc, &s, el) {
            return Some(s);
        }
    }
    let classes: Vec<String> = el.value().classes().filter(|c| !generated(c)).filter_map(css_ident).collect();
    // One class, then all of them.
    for c in &classes {
        let s = format!("{tag}.{c}");
        if matches_only(doc, &s, el) {
            return Some(s);
        }
    }
    if classes.len() > 1 {
        let s = format!("{tag}.{}", classes.join("."));
        if matches_only(doc, &s, el) {
            return Some(s);
        }
    }
    matches_only(doc, tag, el).then(|| tag.to_string())
}

/// A selector that finds `el` again on pages of the same layout: its own id or classes when
/// they are unique, else the nearest ancestor's stable selector and a child step (classes,
/// then `:nth-of-type` as the last resort). Never `None` for an element of `doc`.
pub fn stable_selector(doc: &Html, el: ElementRef<'_>) -> String {
    if let Some(s) = own_selector(doc, el) {
        return s;
    }
    // Walk up until an ancestor has a selector of its own, then come back down step by step.
    let mut steps: Vec<String> = Vec::new();
    let mut current = el;
    loop {
        let tag = current.value().name().to_string();
        let Some(parent) = current.parent().and_then(ElementRef::wrap) else {
            steps.push(tag);
            break;
        };
        let classes: Vec<String> = current.value().classes().filter(|c| !generated(c)).filter_map(css_ident).collect();
        let siblings = parent.children().filter_map(ElementRef::wrap);
        let same_tag: Vec<ElementRef<'_>> = siblings.filter(|s| s.value().name() == tag).collect();
        let step = if same_tag.len() == 1 {
            tag.clone()
        } else if let Some(c) = classes.iter().find(|c| {
            same_tag.iter().filter(|s| s.value().has_class(c, scraper::CaseSensitivity::CaseSensitive)).count() == 1
        }) {
            format!("{tag}.{c}")
        } else {
            let n = same_tag.iter().position(|s| s.id() == current.id()).unwrap_or(0) + 1;
            format!("{tag}:nth-of-type({n})")
        };
        steps.push(step);
        if let Some(s) = own_selector(doc, parent) {
            steps.push(s);
            break;
        }
        current = parent;
    }
    steps.reverse();
    let s = steps.join(" > ");
    debug_assert!(count(doc, &s) >= 1);
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    const PARAGRAPH: &str = "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore et dolore magna aliqua.";

    fn article(title: &str, title_class: &str, body_class: &str) -> String {
        let body: String = (0..4).map(|i| format!("<p>{PARAGRAPH} Paragraph {i}.</p>")).collect();
        format!(
            "<html><head><title>{title} | Site</title></head><body>\
             <nav class=\"menu\"><a href=\"/\">Home</a></nav>\
             <div class=\"wrap\"><article class=\"post\">\
             <h1 class=\"{title_class}\">{title}</h1>\
             <div class=\"byline\"><span class=\"author\">Ada Lovelace</span> <time datetime=\"2026-11-02\">2 Nov</time></div>\
             <div class=\"{body_class}\">{body}<div class=\"share\">Share on Mastodon</div></div>\
             </article><aside class=\"sidebar\"><h2>Related</h2><p>Other stories</p></aside></div>\
             <footer>© Site</footer></body></html>"
        )
    }

    fn template() -> Template {
        Template {
            host: "news.test".into(),
            signature: "0123456789abcdef".into(),
            level: Level::L1,
            selectors: Selectors {
                title: "h1.post-title".into(),
                content: "div.post-body".into(),
                date: Some("time".into()),
                author: Some("span.author".into()),
            },
            exclusions: vec!["div.share".into()],
            confidence: 0.9,
            version: 1,
            origin: Origin::Learned,
            learned_at: 0,
        }
    }

    #[test]
    fn a_template_extracts_its_fields_without_the_exclusions() {
        let doc = Html::parse_document(&article("Tides explained", "post-title", "post-body"));
        let got = apply(&doc, &template()).unwrap();
        assert_eq!(got.title, "Tides explained");
        assert_eq!(got.author.as_deref(), Some("Ada Lovelace"));
        assert_eq!(got.date.as_deref(), Some("2026-11-02"));
        assert_eq!(got.text.split("\n\n").count(), 4, "{}", got.text);
        assert!(got.text.starts_with("Lorem ipsum") && !got.text.contains("Mastodon") && !got.text.contains("Related"));
        assert!(got.word_count >= MIN_WORDS);
        // Inline markup does not split words or punctuation.
        let doc = Html::parse_document("<div class=\"b\"><p><a href=\"/\">Linked</a>. Then <em>st</em>ress, x<br>y</p><table><tr><td>a</td><td>b</td></tr></table></div>");
        let el = doc.select(&Selector::parse("div.b").unwrap()).next().unwrap();
        assert_eq!(text_of(el, &[]), "Linked. Then stress, x y\n\na b");
    }

    #[test]
    fn a_changed_layout_fails_validation_with_the_reason() {
        // Classes renamed: post-title → title, post-body → content.
        let doc = Html::parse_document(&article("Tides explained", "title", "content"));
        let err = apply(&doc, &template()).unwrap_err();
        assert_eq!(err, TemplateError::Missing { field: "title".into(), selector: "h1.post-title".into() });
        assert_eq!(err.kind(), "missing");
        // Content that is too short.
        let short = Html::parse_document(
            "<h1 class=\"post-title\">T</h1><div class=\"post-body\"><p>Only a few words here.</p></div>",
        );
        assert!(matches!(apply(&short, &template()), Err(TemplateError::TooShort { words: 5, .. })));
        let mut bad = template();
        bad.selectors.content = "div[".into();
        assert!(matches!(apply(&short, &bad), Err(TemplateError::BadSelector { .. })));
    }

    #[test]
    fn stable_selectors_prefer_ids_and_classes_and_find_the_element_again() {
        let html = article("Tides explained", "post-title", "post-body");
        let doc = Html::parse_document(&html);
        let find = |s: &str| doc.select(&Selector::parse(s).unwrap()).next().unwrap();
        assert_eq!(stable_selector(&doc, find("h1")), "h1.post-title");
        assert_eq!(stable_selector(&doc, find(".post-body")), "div.post-body");
        assert_eq!(stable_selector(&doc, find(".author")), "span.author");
        // A paragraph has no name of its own: a path from the nearest named ancestor.
        let third = doc.select(&Selector::parse("div.post-body > p").unwrap()).nth(2).unwrap();
        let s = stable_selector(&doc, third);
        assert_eq!(s, "div.post-body > p:nth-of-type(3)");
        assert_eq!(doc.select(&Selector::parse(&s).unwrap()).next().unwrap().id(), third.id());
        // Ids win; generated ids and classes are not used.
        let doc = Html::parse_document(
            "<div id=\"main\"><div class=\"x-83749234 c\">a</div><div class=\"c\">b</div></div><div id=\"post-8237492\">c</div>",
        );
        let find = |s: &str| doc.select(&Selector::parse(s).unwrap()).next().unwrap();
        assert_eq!(stable_selector(&doc, find("#main")), "#main");
        assert_eq!(stable_selector(&doc, find(".x-83749234")), "#main > div:nth-of-type(1)");
        assert_eq!(stable_selector(&doc, find("#post-8237492")), "body > div:nth-of-type(2)");
    }

    #[test]
    fn deep_nesting_does_not_overflow_and_templates_round_trip() {
        let deep = format!("<div class=\"post-body\">{}{}</div>", "<div>".repeat(20_000), "word ".repeat(50));
        let doc = Html::parse_document(&deep);
        let el = doc.select(&Selector::parse("div.post-body").unwrap()).next().unwrap();
        assert_eq!(text_of(el, &[]).split_whitespace().count(), 50);
        let json = serde_json::to_string(&template()).unwrap();
        assert_eq!(serde_json::from_str::<Template>(&json).unwrap(), template());
    }

    #[test]
    fn hidden_content_is_dropped_and_collapsed_content_kept_on_the_template_path_as_on_the_generic_path() {
        // Every hiding rule of the generic walk, inside a template's content element.
        let hidden = [
            "<p hidden>CLOAK-ATTR buy cheap pills now</p>",
            "<p aria-hidden=\"true\">CLOAK-ARIA buy cheap pills now</p>",
            "<div style=\"display: none\">CLOAK-DISPLAY buy cheap pills now</div>",
            "<div style=\"visibility:hidden\">CLOAK-VISIBILITY buy cheap pills now</div>",
            "<p class=\"note sr-only\">CLOAK-CLASS buy cheap pills now</p>",
            "<p>Visible words around a hidden one, in a paragraph long enough to be <span class=\"d-none\">CLOAK-INLINE</span>kept.</p>",
        ];
        // Collapsed is not hidden: a tab panel, an accordion's answer, `hidden="until-found"`.
        let collapsed = [
            "<div role=\"tabpanel\" hidden><p>TAB-PANEL the second tab tells how the moon pulls the sea twice a day.</p></div>",
            "<div class=\"accordion-body\" style=\"display:none\"><p>ACCORDION spring tides come with the full and the new moon.</p></div>",
            "<div hidden=\"until-found\"><p>UNTIL-FOUND neap tides come when the sun and the moon pull at right angles.</p></div>",
        ];
        let body: String = (0..8)
            .map(|i| format!("<p>Paragraph {i} of the article about tides, long enough to read as prose for sure.</p>"))
            .chain(hidden.iter().chain(collapsed.iter()).map(|h| h.to_string()))
            .collect();
        let html = format!(
            "<html><body><h1 class=\"post-title\">Tides explained</h1><div class=\"post-body\">{body}</div></body></html>"
        );
        let via_template = apply(&Html::parse_document(&html), &template()).unwrap().text;
        let url = url::Url::parse("https://news.test/tides").unwrap();
        let generic = crate::extract(html.as_bytes(), &[], &url).text;
        for text in [&via_template, &generic] {
            assert!(!text.contains("CLOAK"), "{text}");
            assert!(text.contains("Paragraph 7") && text.contains("long enough to be kept."), "{text}");
            for shown in ["TAB-PANEL", "ACCORDION", "UNTIL-FOUND"] {
                assert!(text.contains(shown), "collapsed {shown} missing: {text}");
            }
        }
    }
}
