//! The teacher's reasoning: from a rendered page's layout to a [`Template`] for its static HTML.
//!
//! The browser (in the node) renders the page and reports every element's box, font size,
//! visibility and text ([`ElementBox`]); this module, pure, decides with visual heuristics:
//!
//! - **content**: start from the element holding the most non-link text and descend while one
//!   child holds at least [`TIGHTEN`] of it — the tightest box around the article's text, not
//!   the page wrapper; elements far off the page's centre line count less;
//! - **title**: the largest-font visible heading (or large text) at or above the content's top;
//! - **date** and **author**: short elements near the top whose tag or names say so (`time`,
//!   `date`, `published`, `author`, `byline`);
//! - **exclusions**: blocks inside the content that are mostly links or named like boilerplate
//!   (share bars, related stories, ads).
//!
//! Each choice becomes a [`stable_selector`] on the rendered DOM, and the template is validated
//! with [`apply`] on the *static* HTML of this page and of other pages with the same
//! signature. A page whose static HTML does not hold what the browser showed (a script wrote
//! it) yields [`LearnError::NotInStaticHtml`]: it needs JavaScript rendering, not a template.

use crate::template::{apply, stable_selector, Level, Origin, Selectors, Template, TemplateError};
use scraper::{Html, Selector};
use serde::{Deserialize, Serialize};

/// A child that holds this share of its parent's text becomes the content candidate.
pub const TIGHTEN: f64 = 0.8;
/// Fewest characters of text the content must have in the rendered page.
const MIN_CONTENT_CHARS: usize = 200;

/// An element of a rendered page: what the browser measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ElementBox {
    /// A CSS path that finds this element in the rendered HTML (`html > body > div:nth-child(2)`).
    pub path: String,
    pub tag: String,
    #[serde(default)]
    pub id: String,
    #[serde(default)]
    pub classes: Vec<String>,
    pub x: f64,
    pub y: f64,
    pub width: f64,
    pub height: f64,
    pub font_size: f64,
    pub visible: bool,
    /// Characters of text in the element and its descendants, and of that in links.
    pub text_chars: usize,
    #[serde(default)]
    pub link_chars: usize,
    /// The first 200 characters of its text.
    pub text: String,
}

impl ElementBox {
    fn names(&self) -> String {
        format!("{} {} {}", self.tag, self.id, self.classes.join(" ")).to_ascii_lowercase()
    }

    /// Whether `other` is inside this element.
    fn contains(&self, other: &ElementBox) -> bool {
        other.path.len() > self.path.len()
            && other.path.starts_with(&self.path)
            && other.path[self.path.len()..].starts_with(" > ")
    }

    fn is_child(&self, other: &ElementBox) -> bool {
        self.contains(other) && !other.path[self.path.len() + 3..].contains(" > ")
    }

    fn own_text(&self) -> f64 {
        self.text_chars as f64 - 2.0 * self.link_chars as f64
    }
}

/// Why no template was learned.
#[derive(Debug, Clone, PartialEq, thiserror::Error, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum LearnError {
    #[error("no block of text of at least {MIN_CONTENT_CHARS} characters in the rendered page")]
    NoContent,
    #[error("no title above the content")]
    NoTitle,
    #[error("the rendered element {0:?} is not in the rendered HTML")]
    Lost(String),
    /// The template fails on the static HTML although the text is there.
    #[error("the template does not work on the static HTML ({0}), whose text is there")]
    Unusable(TemplateError),
    /// The static HTML does not hold what the browser showed: a script wrote it.
    #[error("the template does not work on the static HTML ({0}): the page needs JavaScript")]
    NotInStaticHtml(TemplateError),
}

/// What the teacher concluded, with its reasons.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Lesson {
    pub template: Template,
    /// How many of the static pages the template validated on (this page first).
    pub validated: usize,
    pub pages: usize,
    /// Human-readable reasons for each choice.
    pub evidence: Vec<String>,
}

fn boilerplate(names: &str) -> bool {
    const WORDS: [&str; 14] = [
        "share",
        "social",
        "related",
        "promo",
        "newsletter",
        "subscribe",
        "comment",
        "advert",
        "sponsor",
        "sidebar",
        "recommend",
        "outbrain",
        "taboola",
        "ad-",
    ];
    WORDS.iter().any(|w| names.contains(w))
}

/// Whether the static HTML holds `rendered` (the start of an element's visible text), compared
/// without whitespace: the browser's `innerText` breaks lines where the source has none.
fn in_static_html(html: &str, rendered: &str) -> bool {
    let squeeze = |s: &str| s.chars().filter(|c| !c.is_whitespace()).collect::<String>();
    let probe: String = squeeze(rendered).chars().take(80).collect();
    if probe.is_empty() {
        return true;
    }
    let doc = Html::parse_document(html);
    squeeze(&doc.root_element().text().collect::<String>()).contains(&probe)
}

/// Learns the template of a layout from one rendered page: `rendered_html` and `boxes` as the
/// browser saw them, `statics` the static HTML of this page and of other pages with the same
/// signature (this page first), `viewport_width` the window it was laid out in.
pub fn learn(
    host: &str,
    signature: (&str, Level),
    rendered_html: &str,
    boxes: &[ElementBox],
    statics: &[&str],
    viewport_width: f64,
    now: u64,
) -> Result<Lesson, LearnError> {
    let visible: Vec<&ElementBox> = boxes.iter().filter(|b| b.visible).collect();
    let mut evidence = Vec::new();
    let content = find_content(&visible, viewport_width, &mut evidence)?;
    let title = find_title(&visible, content, &mut evidence)?;
    let (date, author) = date_and_author(&visible, content, title);
    let excluded = exclusions(&visible, content);
    let found = Found { title, content, date, author, excluded };
    let (selectors, exclusions) = selectors(rendered_html, &found, &mut evidence)?;
    let mut template = Template {
        host: host.to_string(),
        signature: signature.0.to_string(),
        level: signature.1,
        selectors,
        exclusions,
        confidence: 0.0,
        version: 1,
        origin: Origin::Learned,
        learned_at: now,
    };
    let validated = validate(&mut template, statics, content, &mut evidence)?;
    let share = validated as f32 / statics.len().max(1) as f32;
    template.confidence = (0.5 * template.confidence + 0.5 * share).clamp(0.0, 1.0);
    Ok(Lesson { template, validated, pages: statics.len(), evidence })
}

/// The boxes a lesson found on the rendered page.
struct Found<'b> {
    title: &'b ElementBox,
    content: &'b ElementBox,
    date: Option<&'b ElementBox>,
    author: Option<&'b ElementBox>,
    /// The outermost boilerplate blocks inside the content.
    excluded: Vec<&'b ElementBox>,
}

/// The content's box: the most text, then tighter while one child holds most of it.
fn find_content<'b>(
    visible: &[&'b ElementBox],
    viewport_width: f64,
    evidence: &mut Vec<String>,
) -> Result<&'b ElementBox, LearnError> {
    let centrality = |b: &ElementBox| {
        let centre = b.x + b.width / 2.0;
        1.0 - 0.5 * ((centre - viewport_width / 2.0).abs() / (viewport_width / 2.0)).min(1.0)
    };
    let mut content = *visible
        .iter()
        .filter(|b| b.text_chars.saturating_sub(b.link_chars) >= MIN_CONTENT_CHARS)
        .max_by(|a, b| (a.own_text() * centrality(a)).total_cmp(&(b.own_text() * centrality(b))))
        .ok_or(LearnError::NoContent)?;
    loop {
        let best_child =
            visible.iter().filter(|c| content.is_child(c)).max_by(|a, b| a.own_text().total_cmp(&b.own_text()));
        match best_child {
            Some(c) if c.own_text() >= TIGHTEN * content.own_text() && c.text_chars >= MIN_CONTENT_CHARS => content = c,
            _ => break,
        }
    }
    evidence.push(format!(
        "content: <{}> with {} characters of text ({} in links), {:.0} px wide, centred {:.0}%",
        content.tag,
        content.text_chars,
        content.link_chars,
        content.width,
        centrality(content) * 100.0
    ));

    Ok(content)
}

/// The title's box: the largest text at or above the content's top, short enough to be a
/// title, and larger than the body text (the font most of the content's characters are set in).
fn find_title<'b>(
    visible: &[&'b ElementBox],
    content: &ElementBox,
    evidence: &mut Vec<String>,
) -> Result<&'b ElementBox, LearnError> {
    let body_font = {
        let mut sizes: Vec<(f64, usize)> = visible
            .iter()
            .filter(|b| content.contains(b) || *b == &content)
            .map(|b| (b.font_size, b.text_chars))
            .collect();
        sizes.sort_by_key(|s| std::cmp::Reverse(s.1));
        sizes.first().map_or(16.0, |s| s.0)
    };
    let title = visible
        .iter()
        .filter(|b| (5..=300).contains(&b.text_chars) && b.link_chars * 2 < b.text_chars.max(1))
        .filter(|b| matches!(b.tag.as_str(), "h1" | "h2" | "h3") || b.font_size >= 1.4 * body_font)
        .filter(|b| b.y <= content.y + 60.0 && !boilerplate(&b.names()))
        .max_by(|a, b| a.font_size.total_cmp(&b.font_size).then_with(|| b.y.total_cmp(&a.y)))
        .ok_or(LearnError::NoTitle)?;
    evidence.push(format!(
        "title: <{}> at {:.0} px font (body text {:.0} px): {:?}",
        title.tag, title.font_size, body_font, title.text
    ));

    Ok(title)
}

/// The date's and the author's boxes: short, near the top, named so.
fn date_and_author<'b>(
    visible: &[&'b ElementBox],
    content: &ElementBox,
    title: &ElementBox,
) -> (Option<&'b ElementBox>, Option<&'b ElementBox>) {
    let near_top =
        |b: &&&ElementBox| b.text_chars > 0 && b.text_chars <= 80 && b.y <= content.y + 200.0 && b.y + 400.0 >= title.y;
    let date = visible.iter().filter(near_top).find(|b| {
        b.tag == "time" || ["date", "published", "posted", "timestamp"].iter().any(|w| b.names().contains(w))
    });
    // An element named for the author beats the byline around it (which often holds the date).
    let named = |words: &[&str]| visible.iter().filter(near_top).find(|b| words.iter().any(|w| b.names().contains(w)));
    let author = named(&["author", "writer"]).or_else(|| named(&["byline"]));
    (date.copied(), author.copied())
}

/// The outermost boilerplate blocks inside the content. Containers only: a link inside a
/// paragraph is text, and a paragraph is never boilerplate by itself.
fn exclusions<'b>(visible: &[&'b ElementBox], content: &ElementBox) -> Vec<&'b ElementBox> {
    const CONTAINERS: [&str; 13] = [
        "div",
        "section",
        "aside",
        "nav",
        "ul",
        "ol",
        "dl",
        "figure",
        "form",
        "table",
        "header",
        "footer",
        "blockquote",
    ];
    let mut excluded: Vec<&ElementBox> = Vec::new();
    for b in visible.iter().filter(|b| content.contains(b) && CONTAINERS.contains(&b.tag.as_str())) {
        let links = b.text_chars >= 20 && b.link_chars as f64 >= 0.6 * b.text_chars as f64;
        if (links || boilerplate(&b.names())) && !excluded.iter().any(|e| e.contains(b)) {
            excluded.push(b);
        }
    }

    excluded
}

/// The selectors of what was found, stable ones read from the rendered HTML, and the
/// exclusions' (an exclusion found only by position is left out).
fn selectors(
    rendered_html: &str,
    found: &Found<'_>,
    evidence: &mut Vec<String>,
) -> Result<(Selectors, Vec<String>), LearnError> {
    let doc = Html::parse_document(rendered_html);
    let selector_of = |b: &ElementBox| -> Result<String, LearnError> {
        let sel = Selector::parse(&b.path).map_err(|_| LearnError::Lost(b.path.clone()))?;
        let el = doc.select(&sel).next().ok_or_else(|| LearnError::Lost(b.path.clone()))?;
        Ok(stable_selector(&doc, el))
    };
    let selectors = Selectors {
        title: selector_of(found.title)?,
        content: selector_of(found.content)?,
        date: found.date.map(|b| selector_of(b)).transpose()?,
        author: found.author.map(|b| selector_of(b)).transpose()?,
    };
    // An exclusion found by position would remove whatever sits there on other pages.
    let mut exclusions: Vec<String> = Vec::new();
    for b in &found.excluded {
        let s = selector_of(b)?;
        if s.contains(":nth-of-type") {
            evidence.push(format!("not excluded (no stable name): <{}> {:?}", b.tag, b.text));
        } else if !exclusions.contains(&s) {
            exclusions.push(s);
        }
    }
    evidence.push(format!("selectors: {selectors:?}, exclusions {exclusions:?}"));
    Ok((selectors, exclusions))
}

/// Validates `template` on the static HTML: the page it was learned on must work (its text
/// sets the template's confidence), the others say how general it is; returns how many work.
fn validate(
    template: &mut Template,
    statics: &[&str],
    content: &ElementBox,
    evidence: &mut Vec<String>,
) -> Result<usize, LearnError> {
    let mut validated = 0;
    for (i, html) in statics.iter().enumerate() {
        match apply(&Html::parse_document(html), template) {
            Ok(text) => {
                validated += 1;
                if i == 0 {
                    // The static text should be what the browser showed in that box.
                    let ratio = text.text.len().min(content.text_chars) as f64
                        / text.text.len().max(content.text_chars).max(1) as f64;
                    evidence.push(format!(
                        "static text {} characters, rendered {} ({:.0}%)",
                        text.text.len(),
                        content.text_chars,
                        ratio * 100.0
                    ));
                    template.confidence = ratio as f32;
                }
            }
            Err(e) if i == 0 => {
                // Only a script can explain text the browser showed and the HTML lacks; text
                // that is there but escaped the selectors is a failed lesson, not JavaScript.
                return Err(if in_static_html(html, &content.text) {
                    LearnError::Unusable(e)
                } else {
                    LearnError::NotInStaticHtml(e)
                });
            }
            Err(e) => evidence.push(format!("page {} of the layout: {e}", i + 1)),
        }
    }
    Ok(validated)
}
