//! Change detection (seed 002): when a template stops validating, what changed in the layout,
//! in words an operator can act on — and, for the commonest case, a repair.
//!
//! At learning time a template keeps a [`Snapshot`] of the layout it was learned on: which
//! (tag, class) pairs it uses and how often, the tag path down to the content, the number of
//! iframes and the page's JavaScript score. [`diagnose`] compares a failing page with it:
//!
//! - **class renames**: a class the template's selectors use is gone, and a new class on the
//!   same tag is used exactly as often — `post-title → title` (the class-map similarity);
//! - **relocated content**: the content's tag path changed (a new wrapper, moved into `main`);
//! - **iframes**: embedded frames appeared, vanished or moved;
//! - **single-page app**: the JavaScript score jumped and the text is gone from the static HTML.
//!
//! [`repair`] applies class renames to the template's selectors; the node validates the result
//! on the page before using it, and the teacher re-learns the layout anyway.

use crate::template::{generated, Template, TemplateError};
use scraper::{ElementRef, Html, Selector};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What a layout looked like when its template was learned.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Snapshot {
    /// (tag, class) → how many elements carry it.
    pub classes: BTreeMap<String, u32>,
    /// Tags from `body` down to the content element, e.g. `body>main>article>div`.
    pub content_path: String,
    pub iframes: u32,
    /// Where the iframes are: each one's tag path (`body>main>article>iframe`).
    #[serde(default)]
    pub iframe_paths: Vec<String>,
    pub js_score: f32,
}

/// What kind of change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ChangeKind {
    ClassRename {
        renames: Vec<(String, String)>,
    },
    Relocated {
        from: String,
        to: String,
    },
    /// Frames appeared or vanished (`before` ≠ `after`), or moved (same count, other places).
    Iframes {
        before: u32,
        after: u32,
    },
    SpaMigration,
    /// The host moved its pages to another URL scheme (`/blog/{slug}` → `/articles/{yyyy}/{slug}`),
    /// seen by the crawl — by counts of URL templates or by redirects (`detected`).
    UrlScheme {
        from: String,
        to: String,
        detected: String,
    },
    Unknown,
}

/// One recorded change of a host's layout.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Change {
    pub kinds: Vec<ChangeKind>,
    /// The facts behind it.
    pub evidence: Vec<String>,
    /// One sentence for the operator.
    pub reason: String,
    /// Whether the template failed (breaking) or only drifted.
    pub breaking: bool,
    pub url: String,
    /// Seconds since the Unix epoch.
    pub at: u64,
}

/// Takes the layout's snapshot from a page (static HTML) and its content selector.
pub fn snapshot(doc: &Html, content_selector: &str, js_score: f32) -> Snapshot {
    let mut classes = BTreeMap::new();
    let mut iframes = 0;
    let mut iframe_paths = Vec::new();
    for node in doc.tree.nodes() {
        let Some(el) = ElementRef::wrap(node) else { continue };
        if el.value().name() == "iframe" {
            iframes += 1;
            iframe_paths.push(tag_path(el));
        }
        for c in el.value().classes().filter(|c| !generated(c)) {
            *classes.entry(format!("{}.{c}", el.value().name())).or_insert(0) += 1;
        }
    }
    let content_path = Selector::parse(content_selector)
        .ok()
        .and_then(|s| doc.select(&s).next())
        .map(|el| tag_path(el))
        .unwrap_or_default();
    Snapshot { classes, content_path, iframes, iframe_paths, js_score }
}

fn tag_path(el: ElementRef<'_>) -> String {
    let mut tags: Vec<&str> = vec![el.value().name()];
    for a in el.ancestors().filter_map(ElementRef::wrap) {
        let name = a.value().name();
        if name == "html" {
            break;
        }
        tags.push(name);
    }
    tags.reverse();
    tags.join(">")
}

/// The `tag.class` pairs a selector names (`div.post-body > p` → `div.post-body`).
fn used_classes(selector: &str) -> Vec<String> {
    selector
        .split(|c: char| c.is_whitespace() || c == '>' || c == '+' || c == '~' || c == ',')
        .filter_map(|part| {
            let (tag, rest) = part.split_once('.')?;
            let class = rest.split(['.', ':', '[', '#']).next()?;
            (!tag.is_empty() && !class.is_empty()).then(|| format!("{tag}.{class}"))
        })
        .collect()
}

/// How alike two class names are: the longest common suffix or prefix, as a share of the
/// longer name (`post-title` / `title` → 0.5).
fn alike(a: &str, b: &str) -> f64 {
    let prefix = a.chars().zip(b.chars()).take_while(|(x, y)| x == y).count();
    let suffix = a.chars().rev().zip(b.chars().rev()).take_while(|(x, y)| x == y).count();
    prefix.max(suffix) as f64 / a.len().max(b.len()).max(1) as f64
}

/// What changed between the layout `t` was learned on and `doc`, on which it failed with
/// `failure` (or `None`: it validated, but the layout drifted).
pub fn diagnose(
    t: &Template,
    before: &Snapshot,
    failure: Option<&TemplateError>,
    doc: &Html,
    js_score: f32,
    url: &str,
    at: u64,
) -> Change {
    let now = snapshot(doc, &t.selectors.content, js_score);
    let mut kinds = Vec::new();
    let mut evidence = Vec::new();
    if let Some(f) = failure {
        evidence.push(format!("template v{} failed: {f}", t.version));
    }
    // Class renames: each class a selector uses that is gone, matched to a new class on the
    // same tag used as often (ties: the most alike name).
    let selectors =
        [Some(&t.selectors.title), Some(&t.selectors.content), t.selectors.date.as_ref(), t.selectors.author.as_ref()];
    let mut renames = Vec::new();
    for used in selectors.into_iter().flatten().flat_map(|s| used_classes(s)) {
        if now.classes.contains_key(&used) || renames.iter().any(|(from, _)| *from == used) {
            continue;
        }
        let Some(&count) = before.classes.get(&used) else { continue };
        let tag = used.split('.').next().unwrap_or_default();
        let candidate = now
            .classes
            .iter()
            .filter(|(k, n)| **n == count && k.split('.').next() == Some(tag) && !before.classes.contains_key(*k))
            .max_by(|a, b| alike(&used, a.0).total_cmp(&alike(&used, b.0)));
        if let Some((to, _)) = candidate {
            evidence.push(format!("class {used} (on {count} elements) is gone; {to} appeared on as many"));
            renames.push((used.clone(), to.clone()));
        }
    }
    if !renames.is_empty() {
        kinds.push(ChangeKind::ClassRename { renames: renames.clone() });
    }
    let repaired = repair(t, &renames);
    let content_now =
        Selector::parse(&repaired.selectors.content).ok().and_then(|s| doc.select(&s).next()).map(tag_path);
    if let Some(path) = content_now.filter(|p| !before.content_path.is_empty() && *p != before.content_path) {
        evidence.push(format!("the content moved from {} to {path}", before.content_path));
        kinds.push(ChangeKind::Relocated { from: before.content_path.clone(), to: path });
    }
    if now.iframes != before.iframes {
        evidence.push(format!("iframes: {} before, {} now", before.iframes, now.iframes));
        kinds.push(ChangeKind::Iframes { before: before.iframes, after: now.iframes });
    } else if now.iframe_paths != before.iframe_paths && !before.iframe_paths.is_empty() {
        evidence.push(format!("iframes moved: {:?} before, {:?} now", before.iframe_paths, now.iframe_paths));
        kinds.push(ChangeKind::Iframes { before: before.iframes, after: now.iframes });
    }
    let text_gone = matches!(failure, Some(TemplateError::Missing { .. } | TemplateError::TooShort { .. }));
    if js_score - before.js_score >= 0.4 && text_gone && renames.is_empty() {
        evidence.push(format!("JavaScript score {:.2} → {js_score:.2}", before.js_score));
        kinds.push(ChangeKind::SpaMigration);
    }
    if kinds.is_empty() {
        kinds.push(ChangeKind::Unknown);
    }
    // The most telling kind explains the change.
    let rank = |k: &ChangeKind| match k {
        ChangeKind::SpaMigration => 0,
        ChangeKind::ClassRename { .. } => 1,
        ChangeKind::Relocated { .. } => 2,
        ChangeKind::Iframes { .. } => 3,
        ChangeKind::UrlScheme { .. } => 4,
        ChangeKind::Unknown => 5,
    };
    let main = kinds.iter().min_by_key(|k| rank(k)).unwrap_or(&ChangeKind::Unknown);
    let reason = match main {
        ChangeKind::ClassRename { renames } => format!(
            "the site renamed classes ({}); the template's selectors were updated and the layout will be re-learned",
            renames.iter().map(|(a, b)| format!("{a} → {b}")).collect::<Vec<_>>().join(", ")
        ),
        ChangeKind::Relocated { to, .. } => format!("the article text moved to {to}; the layout will be re-learned"),
        ChangeKind::Iframes { before, after } if before == after => {
            format!("embedded frames moved ({after} in other places)")
        }
        ChangeKind::Iframes { before, after } => format!("embedded frames changed ({before} → {after})"),
        ChangeKind::SpaMigration => {
            "the site became a single-page app: its text is written by scripts, so its pages are rendered in the browser"
                .to_string()
        }
        ChangeKind::UrlScheme { from, to, .. } => format!("the site moved its pages from {from} to {to}"),
        ChangeKind::Unknown => "the layout changed in a way not recognised; it will be re-learned".to_string(),
    };
    let reason = if failure.is_none() {
        // A drift: the template still works, nothing is re-learned.
        let head = reason.split("; ").next().unwrap_or(&reason).to_string();
        format!("{head}; the template still extracts the page")
    } else {
        reason
    };
    Change { kinds, evidence, reason, breaking: failure.is_some(), url: url.to_string(), at }
}

/// `t` with class renames applied to its selectors and exclusions.
pub fn repair(t: &Template, renames: &[(String, String)]) -> Template {
    let fix = |s: &str| {
        let mut s = s.to_string();
        for (from, to) in renames {
            // `div.post-body` → `div.content`: replace the class, keep the rest of the selector.
            let (Some((_, from_class)), Some((_, to_class))) = (from.split_once('.'), to.split_once('.')) else {
                continue;
            };
            let pattern = format!(".{from_class}");
            let replacement = format!(".{to_class}");
            let mut out = String::new();
            let mut rest = s.as_str();
            while let Some(i) = rest.find(&pattern) {
                let end = i + pattern.len();
                let boundary =
                    rest[end..].chars().next().is_none_or(|c| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'));
                out.push_str(&rest[..i]);
                out.push_str(if boundary { &replacement } else { &pattern });
                rest = &rest[end..];
            }
            out.push_str(rest);
            s = out;
        }
        s
    };
    let mut r = t.clone();
    r.selectors.title = fix(&t.selectors.title);
    r.selectors.content = fix(&t.selectors.content);
    r.selectors.date = t.selectors.date.as_deref().map(fix);
    r.selectors.author = t.selectors.author.as_deref().map(fix);
    r.exclusions = t.exclusions.iter().map(|e| fix(e)).collect();
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::template::{apply, Level, Origin, Selectors};

    fn page(title_class: &str, body_class: &str, wrapper: &str, iframe: bool, app: bool) -> String {
        let body: String = (0..4)
            .map(|i| {
                format!("<p>Sentence number {i} of a long enough article about the sea and the tides and the moon.</p>")
            })
            .collect();
        let frame = if iframe { "<iframe src=\"/embed\"></iframe>" } else { "" };
        if app {
            return "<html><body><div id=\"app\"></div><script src=\"/bundle.js\"></script></body></html>".into();
        }
        format!(
            "<html><body><{wrapper}><article><h1 class=\"{title_class}\">The tide</h1>\
             <div class=\"{body_class}\">{body}{frame}<div class=\"share\">Share</div></div></article></{wrapper}></body></html>"
        )
    }

    fn template() -> Template {
        Template {
            host: "h.test".into(),
            signature: "ab".into(),
            level: Level::L1,
            selectors: Selectors {
                title: "h1.post-title".into(),
                content: "div.post-body".into(),
                date: None,
                author: None,
            },
            exclusions: vec!["div.post-body > div.share".into()],
            confidence: 1.0,
            version: 3,
            origin: Origin::Learned,
            learned_at: 0,
        }
    }

    fn before() -> Snapshot {
        snapshot(&Html::parse_document(&page("post-title", "post-body", "main", false, false)), "div.post-body", 0.1)
    }

    #[test]
    fn renamed_classes_are_found_and_the_template_repaired() {
        let doc = Html::parse_document(&page("title", "content", "main", false, false));
        let err = apply(&doc, &template()).unwrap_err();
        let change = diagnose(&template(), &before(), Some(&err), &doc, 0.1, "http://h.test/2", 7);
        let renames = vec![
            ("h1.post-title".to_string(), "h1.title".to_string()),
            ("div.post-body".to_string(), "div.content".to_string()),
        ];
        assert_eq!(change.kinds, [ChangeKind::ClassRename { renames: renames.clone() }]);
        assert!(change.breaking && change.reason.contains("h1.post-title → h1.title"), "{}", change.reason);
        let fixed = repair(&template(), &renames);
        assert_eq!(fixed.selectors.content, "div.content");
        assert_eq!(fixed.exclusions, ["div.content > div.share"]);
        let text = apply(&doc, &fixed).unwrap();
        assert_eq!(text.title, "The tide");
        assert!(!text.text.contains("Share"));
    }

    #[test]
    fn relocated_content_iframes_and_spa_migrations_are_named() {
        // Moved out of <main> into <section>, with an iframe added: the template still works.
        let doc = Html::parse_document(&page("post-title", "post-body", "section", true, false));
        assert!(apply(&doc, &template()).is_ok());
        let change = diagnose(&template(), &before(), None, &doc, 0.1, "u", 0);
        assert!(!change.breaking);
        assert!(change.kinds.contains(&ChangeKind::Relocated {
            from: "body>main>article>div".into(),
            to: "body>section>article>div".into()
        }));
        assert!(change.kinds.contains(&ChangeKind::Iframes { before: 0, after: 1 }));
        // The site became a single-page app.
        let doc = Html::parse_document(&page("", "", "main", false, true));
        let err = apply(&doc, &template()).unwrap_err();
        let change = diagnose(&template(), &before(), Some(&err), &doc, 0.9, "u", 0);
        assert_eq!(change.kinds, [ChangeKind::SpaMigration]);
        assert!(change.reason.contains("single-page app"));
    }

    #[test]
    fn selector_parts_and_name_likeness() {
        assert_eq!(used_classes("div.post-body > p:nth-of-type(2)"), ["div.post-body"]);
        assert_eq!(used_classes("#main > span.a.b"), ["span.a"]);
        assert!(alike("post-title", "title") > alike("post-title", "content"));
        let mut t = template();
        t.selectors.title = "h1.post-title-x".into();
        assert_eq!(
            repair(&t, &[("h1.post-title".into(), "h1.title".into())]).selectors.title,
            "h1.post-title-x",
            "whole class names only"
        );
    }
}
