//! What an element is, from its tag and attributes: a block, skipped, boilerplate, hidden.

use regex::RegexSet;
use std::sync::OnceLock;

/// Class/id patterns, after Mozilla Readability (the widely tested set).
pub(super) const UNLIKELY: usize = 0;

pub(super) const MAYBE: usize = 1;

pub(super) const POSITIVE: usize = 2;

pub(super) const NEGATIVE: usize = 3;

pub(super) fn patterns() -> &'static RegexSet {
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

pub(super) fn is_block_tag(tag: &str) -> bool {
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
pub(super) fn is_skipped_tag(tag: &str) -> bool {
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

pub(super) fn is_boiler_tag(tag: &str) -> bool {
    matches!(tag, "nav" | "aside" | "footer" | "header" | "menu")
}

pub(super) fn is_boiler_role(role: &str) -> bool {
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
pub(super) fn is_hidden(tag: &str, a: &Attrs) -> bool {
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
pub(super) struct Attrs<'a> {
    pub(super) id: Option<&'a str>,
    pub(super) class: Option<&'a str>,
    style: Option<&'a str>,
    pub(super) role: Option<&'a str>,
    pub(super) itemprop: Option<&'a str>,
    pub(super) href: Option<&'a str>,
    pub(super) rel: Option<&'a str>,
    hidden: bool,
    until_found: bool,
    aria_hidden: bool,
    pub(super) kind: Option<&'a str>,
    pub(super) name: Option<&'a str>,
    pub(super) property: Option<&'a str>,
    pub(super) content: Option<&'a str>,
    pub(super) http_equiv: Option<&'a str>,
    pub(super) datetime: Option<&'a str>,
    pub(super) lang: Option<&'a str>,
    pub(super) marker: Option<&'static str>,
}

pub(super) fn read_attrs<'a>(el: &'a scraper::node::Element) -> Attrs<'a> {
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
