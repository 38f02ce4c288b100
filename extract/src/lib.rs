//! Pure HTML → structured content for Weft: bytes in, data out, no I/O.
//!
//! This crate is the crawler's hot path, so everything is one pass where it can be:
//!
//! ```text
//! bytes ─ decode ─ sanitize ─ html5ever ─ dom::walk ─┬─ learned::select → text, blocks (content's rules, a model over them)
//!                                                    ├─ metadata        → title, dates, ...
//!                                                    ├─ links::resolve  → normalized links
//!                                                    ├─ classify        → page type, template
//!                                                    ├─ js::score       → JS-need score
//!                                                    └─ (fingerprints, fed during the walk)
//! ```
//!
//! [`extract`] never fails and never panics on any bytes: bad input yields best-effort output
//! and [`Warning`]s. Work is bounded: documents are cut at [`sanitize::MAX_HTML_BYTES`] and
//! nesting at [`sanitize::MAX_DEPTH`], both with a warning.
//!
//! The slow reference extractor (Mozilla Readability in QuickJS) lives in [`reference`] behind
//! the `reference` feature; the node runs it off the hot path.
//!
//! Module order (each module uses only those before it; `tests/architecture/tests/module_graph.rs`
//! checks it): decode, devset, fingerprint, reference, sanitize, sitemap → dom → content, js,
//! links, metadata, template → changes, classify, learned, teacher.

pub mod changes;
pub mod classify;
pub mod content;
pub mod decode;
pub mod devset;
mod dom;
pub mod fingerprint;
pub mod js;
pub mod learned;
pub mod links;
pub mod metadata;
#[cfg(feature = "reference")]
pub mod reference;
pub mod sanitize;
pub mod sitemap;
pub mod teacher;
pub mod template;

pub use classify::{Classification, Hints, PageType};
pub use fingerprint::Fingerprints;
pub use js::{JsScore, Recommendation};
pub use links::Link;
pub use metadata::Metadata;
pub use sitemap::{parse_sitemap, Sitemap, SitemapError};

use url::Url;

/// A non-fatal problem met while extracting. The output is still usable.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Warning {
    /// Bytes that are invalid in the chosen encoding were replaced with U+FFFD.
    InvalidBytes { encoding: String },
    /// The declared charset contradicted the bytes; the bytes won.
    CharsetMismatch { declared: String, used: String },
    /// Double-decoded UTF-8 ("Ã©") was repaired.
    MojibakeRepaired,
    /// The document exceeded the size limit and was cut.
    Truncated { bytes: usize, kept: usize },
    /// Nesting exceeded the depth limit; deeper tags were dropped (their text kept).
    DepthLimited { max_depth: usize, dropped_tags: usize },
    /// An element had more attributes than the limit; the rest were dropped.
    AttributesLimited { max_attributes: usize, elements: usize },
    /// Parsing ran past the time budget; the document was read up to where it got.
    TimeBudget { budget_ms: u64, parsed_bytes: usize, bytes: usize },
    /// No main content could be identified.
    NoMainContent,
}

impl Warning {
    /// A short, stable name for counting warnings by kind.
    pub fn kind(&self) -> &'static str {
        match self {
            Warning::InvalidBytes { .. } => "invalid_bytes",
            Warning::CharsetMismatch { .. } => "charset_mismatch",
            Warning::MojibakeRepaired => "mojibake_repaired",
            Warning::Truncated { .. } => "truncated",
            Warning::DepthLimited { .. } => "depth_limited",
            Warning::AttributesLimited { .. } => "attributes_limited",
            Warning::TimeBudget { .. } => "time_budget",
            Warning::NoMainContent => "no_main_content",
        }
    }
}

/// One block of the main content (seed 004's content blocks): a paragraph, heading, list item,
/// quote... with the links inside it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ContentBlock {
    pub tag: String,
    pub text: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub links: Vec<BlockLink>,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct BlockLink {
    #[serde(serialize_with = "ser_url")]
    pub url: Url,
    pub text: String,
}

/// Everything extracted from one page.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Extracted {
    #[serde(serialize_with = "ser_url")]
    pub url: Url,
    #[serde(flatten)]
    pub metadata: Metadata,
    /// Main text: plain, paragraphs separated by blank lines.
    pub text: String,
    pub word_count: usize,
    pub blocks: Vec<ContentBlock>,
    pub links: Vec<Link>,
    /// Links the normalizer rejected, by kind (`url_scheme` for `javascript:` and `mailto:`,
    /// `url_userinfo`, `url_too_long`, ...).
    pub links_rejected: std::collections::BTreeMap<&'static str, u32>,
    #[serde(flatten)]
    pub classification: Classification,
    pub js: JsScore,
    pub fingerprints: Fingerprints,
    /// 0–1: how sure the extractor is about the main text. Low confidence is when a second
    /// opinion (the reference extractor) is worth its cost.
    pub confidence: f64,
    /// The encoding the bytes were read with, and why.
    pub charset: &'static str,
    pub charset_source: decode::CharsetSource,
    pub warnings: Vec<Warning>,
}

/// Response headers as `(name, value)` pairs; names match case-insensitively.
pub type Headers<'a> = [(&'a str, &'a str)];

fn header<'a>(headers: &'a Headers<'a>, name: &str) -> Option<&'a str> {
    headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| *v)
}

/// Extracts everything from one fetched page. `url` is the final URL (after redirects): links
/// resolve against it unless the page has a valid `<base href>`.
pub fn extract(body: &[u8], headers: &Headers, url: &Url) -> Extracted {
    extract_with_dom(body, headers, url).0
}

/// [`extract`], also returning the parsed document, so the stages after it (layout templates)
/// work on the same DOM instead of parsing the page again: html5ever's parse is most of an
/// extraction's cost.
pub fn extract_with_dom(body: &[u8], headers: &Headers, url: &Url) -> (Extracted, scraper::Html) {
    extract_with(body, headers, url, learned::Selector::default_for_build())
}

/// [`extract_with_dom`] with the blocks chosen by `selector`: the rules alone, or a given model
/// (the `learn` and `eval` examples compare them on the same pages).
#[doc(hidden)]
pub fn extract_with(
    body: &[u8],
    headers: &Headers,
    url: &Url,
    selector: learned::Selector<'_>,
) -> (Extracted, scraper::Html) {
    let mut warnings = Vec::new();
    let decoded = decode::decode(body, header(headers, "content-type"), tld(url).as_deref(), &mut warnings);
    let html = sanitize::sanitize(&decoded.text, &mut warnings);
    let doc = parse(&html, PARSE_BUDGET, &mut warnings);
    let mut noscript_doc = None;
    let walk = dom::walk_document(&doc, &mut noscript_doc);
    warnings.extend(walk.warnings.iter().cloned());
    let base = dom::base_url(&walk.meta, url);
    let metadata = metadata::metadata(&walk.meta, url, &base, header(headers, "content-language"));
    let main = learned::select(&walk, Some(url), selector);

    let in_main: std::collections::HashSet<u32> = main.blocks.iter().map(|&b| b as u32).collect();
    let links::Resolved { links, rejected: links_rejected, by_raw } = links::resolve(&walk.links, &base, |l| {
        !walk.elems[l.elem as usize].boiler && l.block.is_some_and(|b| in_main.contains(&b))
    });
    let mut text = String::new();
    let mut blocks = Vec::with_capacity(main.blocks.len());
    for &bi in &main.blocks {
        let b = &walk.blocks[bi];
        if !text.is_empty() {
            text.push_str("\n\n");
        }
        text.push_str(&b.text);
        let block_links = b
            .links
            .iter()
            .filter_map(|&l| {
                let url = by_raw[l as usize].clone()?;
                Some(BlockLink { url, text: walk.links[l as usize].text.clone() })
            })
            .collect();
        blocks.push(ContentBlock { tag: b.tag.to_string(), text: b.text.clone(), links: block_links });
    }
    // The body the page publishes as data (JSON-LD `articleBody`, a product's description)
    // when the visible text misses most of it: the page renders it with scripts.
    if let Some(body) = metadata.article_body.as_deref().and_then(|b| published_body(b, &text)) {
        if !text.is_empty() {
            text.push_str("\n\n");
        }
        text.push_str(&body);
        blocks.push(ContentBlock { tag: "p".to_string(), text: body, links: Vec::new() });
    }
    if text.is_empty() {
        warnings.push(Warning::NoMainContent);
    }
    let main_chars = text.chars().count();
    let word_count = text.split_whitespace().count();
    let classification = classify::classify(url, main_chars, &links, metadata.content_type.as_deref());
    let visible_chars = walk.elems.first().map(|e| e.text_chars as usize).unwrap_or(0);
    let empty_containers = walk.js.app_containers.iter().filter(|&&e| walk.elems[e as usize].text_chars < 50).count();
    let js = js::score(&walk.js, html.len(), visible_chars, main_chars, empty_containers);
    let extracted = Extracted {
        url: url.clone(),
        metadata,
        text,
        word_count,
        blocks,
        links,
        links_rejected,
        classification,
        js,
        fingerprints: walk.fingerprints.clone(),
        confidence: (f64::from(main.confidence) * 100.0).round() / 100.0,
        charset: decoded.encoding.name(),
        charset_source: decoded.source,
        warnings,
    };
    (extracted, doc)
}

/// The longest html5ever may take over one page. The sanitizer keeps parsing linear on every
/// hostile input known (`sanitize.rs`); this bounds the ones not known yet, so that one page
/// cannot hold a crawl slot for minutes: what was parsed by then is the document. A page at the
/// 8 MiB cap parses in well under a second in a release build.
pub const PARSE_BUDGET: std::time::Duration = std::time::Duration::from_secs(10);
/// The parser is fed this much at a time, and the budget checked in between.
const PARSE_CHUNK: usize = 128 << 10;

/// Parses `html` as a document, within `budget` (see [`PARSE_BUDGET`]).
pub fn parse(html: &str, budget: std::time::Duration, warnings: &mut Vec<Warning>) -> scraper::Html {
    use html5ever::tendril::TendrilSink;
    let started = std::time::Instant::now();
    let sink = scraper::HtmlTreeSink::new(scraper::Html::new_document());
    let mut parser = html5ever::driver::parse_document(sink, Default::default());
    let mut at = 0;
    while at < html.len() {
        let mut end = (at + PARSE_CHUNK).min(html.len());
        while !html.is_char_boundary(end) {
            end += 1;
        }
        parser.process(html[at..end].into());
        at = end;
        if at < html.len() && started.elapsed() > budget {
            warnings.push(Warning::TimeBudget {
                budget_ms: budget.as_millis() as u64,
                parsed_bytes: at,
                bytes: html.len(),
            });
            break;
        }
    }
    parser.finish()
}

/// A published body of at least this many characters is worth adding.
const PUBLISHED_BODY_CHARS: usize = 200;

/// The published body, as plain text, when it is long enough and `text` holds under half of
/// its word 4-grams.
fn published_body(body: &str, text: &str) -> Option<String> {
    let body = if body.contains('<') {
        let frag = scraper::Html::parse_fragment(body);
        frag.root_element().text().collect::<Vec<_>>().join(" ")
    } else {
        body.to_string()
    };
    let body = body.split_whitespace().collect::<Vec<_>>().join(" ");
    if body.chars().count() < PUBLISHED_BODY_CHARS {
        return None;
    }
    let grams = |t: &str| -> std::collections::HashSet<String> {
        let words: Vec<String> =
            t.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_lowercase).collect();
        words.windows(4).map(|w| w.join(" ")).collect()
    };
    let wanted = grams(&body);
    let have = grams(text);
    let covered = wanted.iter().filter(|g| have.contains(*g)).count();
    (!wanted.is_empty() && covered * 2 < wanted.len()).then_some(body)
}

pub(crate) fn ser_url<S: serde::Serializer>(u: &Url, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(u.as_str())
}

pub(crate) fn ser_opt_url<S: serde::Serializer>(u: &Option<Url>, s: S) -> Result<S::Ok, S::Error> {
    match u {
        Some(u) => s.serialize_str(u.as_str()),
        None => s.serialize_none(),
    }
}

pub(crate) fn ser_urls<S: serde::Serializer>(u: &[Url], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(u.iter().map(Url::as_str))
}

/// Development aid for tuning the extractor: an outline of the elements holding more than
/// `min_chars` of text, with the flags and counts content selection sees.
#[doc(hidden)]
pub fn debug_outline(body: &[u8], url: &Url, min_chars: u32) -> String {
    debug_walk(body, Some(url), |walk| outline(walk, min_chars))
}

/// The page walked as [`extract`] walks it without headers (the URL, when given, hints the
/// charset as it does there), for the development aids and the trainer.
fn debug_walk<R>(body: &[u8], url: Option<&Url>, f: impl FnOnce(&dom::Walk) -> R) -> R {
    let mut warnings = Vec::new();
    let decoded = decode::decode(body, None, url.and_then(tld).as_deref(), &mut warnings);
    let html = sanitize::sanitize(&decoded.text, &mut warnings);
    let doc = parse(&html, PARSE_BUDGET, &mut warnings);
    let mut noscript_doc = None;
    f(&dom::walk_document(&doc, &mut noscript_doc))
}

/// The URL's top-level domain, lowercased: the charset detector's hint.
fn tld(url: &Url) -> Option<String> {
    url.host_str().and_then(|h| h.rsplit('.').next()).map(str::to_ascii_lowercase)
}

fn outline(walk: &dom::Walk, min_chars: u32) -> String {
    let main = content::select(walk);
    let mut out = String::new();
    for (i, e) in walk.elems.iter().enumerate() {
        if e.text_chars < min_chars {
            continue;
        }
        let chosen = if main.container == Some(i as u32) { " <== CONTAINER" } else { "" };
        out.push_str(&format!(
            "{}{} [{}] text {} links {} blocks {} w {} boiler {} ({:?}) hint {}{}\n",
            "  ".repeat(e.depth as usize),
            e.tag,
            e.label,
            e.text_chars,
            e.link_chars,
            e.blocks,
            e.weight,
            e.boiler,
            e.own_boiler,
            e.content_hint,
            chosen
        ));
    }
    out
}

/// Training rows for the learned classifier: every block's text and features (see
/// [`learned::features`]), as [`extract`] walks the page.
#[doc(hidden)]
pub fn block_rows(body: &[u8], url: &Url) -> Vec<learned::BlockRow> {
    debug_walk(body, Some(url), |walk| {
        let Some((verdicts, container, confidence)) = content::judge(walk) else { return Vec::new() };
        let (rows, parents, chars) = learned::rows(walk, Some(url), &verdicts, container, confidence);
        let tokens = learned::tokens::blocks(walk);
        walk.blocks
            .iter()
            .zip(rows.into_iter().zip(tokens))
            .zip(parents.into_iter().zip(chars))
            .map(|((b, (features, tokens)), (parent, chars))| learned::BlockRow {
                text: b.text.clone(),
                features,
                tokens,
                parent,
                chars,
            })
            .collect()
    })
}

/// Development aid for tuning the extractor: every block of the page's text with what became
/// of it (see [`content::Verdict`]).
#[doc(hidden)]
pub fn debug_blocks(body: &[u8]) -> Vec<(String, content::Verdict)> {
    debug_walk(body, None, |walk| {
        let Some((verdicts, _, _)) = content::judge(walk) else { return Vec::new() };
        walk.blocks.iter().zip(verdicts).map(|(b, v)| (b.text.clone(), v)).collect()
    })
}
