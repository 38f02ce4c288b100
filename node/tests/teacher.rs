//! The teacher with Debian's real Chromium: it renders one page of a layout, learns a template
//! that works on the static HTML, and the worker then extracts twenty more pages of that layout
//! with the template alone — no browser — matching their true text. When the site renames its
//! classes the template stops validating and the teacher learns the new layout; a single-page
//! app whose text a script writes is recognised as needing JavaScript.

mod common;

use std::time::Duration;
use weft_extract::teacher::{learn, LearnError};
use weft_extract::template::{apply, Level, TemplateError};
use weft_node::browser::{BrowserPool, BrowserSettings, VIEWPORT};
use weft_simnet::{Resource, Site, WebServer};

const WORDS: [&str; 12] =
    ["tide", "moon", "ocean", "current", "harbour", "sailor", "wave", "shore", "storm", "reef", "gull", "lighthouse"];

/// The true text of article `n`: five paragraphs of distinct sentences.
fn paragraphs(n: usize) -> Vec<String> {
    (0..5)
        .map(|p| {
            (0..4)
                .map(|s| {
                    let w = |k: usize| WORDS[(n * 7 + p * 3 + s + k) % WORDS.len()];
                    format!("The {} met the {} near the {} in story {n}, part {p}.{s}.", w(0), w(1), w(2))
                })
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

/// article_v1: the layout's static pages. `title_class`/`body_class` change in v3.
fn article(n: usize, title_class: &str, body_class: &str) -> String {
    let body: String = paragraphs(n).iter().map(|p| format!("<p>{p}</p>")).collect();
    format!(
        "<!doctype html><html><head><title>Story {n} | Coast News</title>\
         <style>h1 {{ font-size: 38px }} .sidebar {{ float: right; width: 220px; font-size: 13px }} \
         .{body_class} {{ width: 720px; font-size: 18px }}</style></head><body>\
         <header><nav class=\"menu\"><a href=\"/\">Home</a> <a href=\"/world\">World</a> <a href=\"/about\">About us</a></nav></header>\
         <aside class=\"sidebar\"><h3>Most read</h3><ul><li><a href=\"/a\">A story that everyone read today</a></li>\
         <li><a href=\"/b\">Another story people liked a lot</a></li></ul></aside>\
         <main><article class=\"post\"><h1 class=\"{title_class}\">Story {n}: the tide</h1>\
         <div class=\"byline\"><span class=\"author\">Grace Hopper</span> · <time datetime=\"2026-10-{day:02}\">{day} Oct</time></div>\
         <div class=\"{body_class}\">{body}<div class=\"share-bar\"><a href=\"/s1\">Share on Mastodon</a> <a href=\"/s2\">Share by mail</a></div></div>\
         </article></main><footer><a href=\"/privacy\">Privacy</a> © Coast News</footer></body></html>",
        day = 1 + n % 28
    )
}

/// article_v4: a single-page app; the text arrives from a script.
const SPA: &str = "<!doctype html><html><head><title>Coast News</title></head><body><div id=\"app\"></div>\
                   <script src=\"/app.js\"></script></body></html>";

fn app_js() -> String {
    let body: String = paragraphs(99).iter().map(|p| format!("<p>{p}</p>")).collect();
    format!(
        "document.getElementById('app').innerHTML = '<article><h1 style=\"font-size:38px\">Story 99</h1><div class=\"text\">{body}</div></article>';"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_teacher_learns_a_layout_the_worker_uses_it_and_a_redesign_is_relearned() {
    let mut site =
        Site::new("coast.test").html("/spa", SPA).with("/app.js", Resource::text("application/javascript", app_js()));
    for n in 0..24 {
        site = site.html(&format!("/v1/{n}"), &article(n, "post-title", "post-body"));
    }
    site = site.html("/v3/0", &article(100, "title", "content"));
    let server = WebServer::start(vec![site]).await.unwrap();
    let pool =
        BrowserPool::launch(BrowserSettings { instances: 1, timeout: Duration::from_secs(30), ..Default::default() })
            .await
            .expect("Debian's chromium starts (scripts/setup.sh)");
    let fetch = common::loopback_fetch(&server);
    let viewport = f64::from(VIEWPORT.0);

    // v1: render one page, learn, validate on two more pages of the layout.
    let rendered = pool.render("http://coast.test/v1/0", fetch.clone()).await.unwrap();
    let statics: Vec<String> = (0..3).map(|n| article(n, "post-title", "post-body")).collect();
    let statics_ref: Vec<&str> = statics.iter().map(String::as_str).collect();
    let lesson =
        learn("coast.test", ("00ff", Level::L1), &rendered.html, &rendered.elements, &statics_ref, viewport, 0)
            .unwrap_or_else(|e| panic!("{e}"));
    let t = &lesson.template;
    assert_eq!(t.selectors.title, "h1.post-title", "{:#?}", lesson.evidence);
    assert_eq!(t.selectors.content, "div.post-body", "{:#?}", lesson.evidence);
    assert_eq!(t.selectors.author.as_deref(), Some("span.author"));
    assert_eq!(t.selectors.date.as_deref(), Some("time"));
    assert_eq!(t.exclusions, ["div.share-bar"], "{:#?}", lesson.evidence);
    assert_eq!((lesson.validated, lesson.pages), (3, 3));
    assert!(t.confidence > 0.8, "{}", t.confidence);

    // The worker: twenty more pages, static HTML only, each matching its true text.
    let before = server.requests().len();
    for n in 4..24 {
        let html = article(n, "post-title", "post-body");
        let got = apply(&scraper::Html::parse_document(&html), t).unwrap();
        assert_eq!(got.title, format!("Story {n}: the tide"));
        assert_eq!(got.text, paragraphs(n).join("\n\n"), "page {n}");
        assert_eq!(got.author.as_deref(), Some("Grace Hopper"));
        assert_eq!(got.date.as_deref(), Some(format!("2026-10-{:02}", 1 + n % 28).as_str()));
    }
    assert_eq!(server.requests().len(), before, "the worker used no browser");

    // v3: classes renamed (post-title → title, post-body → content): the template fails...
    let v3 = article(100, "title", "content");
    let err = apply(&scraper::Html::parse_document(&v3), t).unwrap_err();
    assert!(matches!(err, TemplateError::Missing { .. }), "{err}");
    // ... and the teacher learns the new layout.
    let rendered = pool.render("http://coast.test/v3/0", fetch.clone()).await.unwrap();
    let relearned =
        learn("coast.test", ("00ff", Level::L1), &rendered.html, &rendered.elements, &[&v3], viewport, 1).unwrap();
    assert_eq!(relearned.template.selectors.title, "h1.title");
    assert_eq!(relearned.template.selectors.content, "div.content");

    // v4: a single-page app. The browser shows the article; the static HTML has an empty #app.
    let rendered = pool.render("http://coast.test/spa", fetch.clone()).await.unwrap();
    assert!(rendered.html.contains("Story 99"));
    let err =
        learn("coast.test", ("0a99", Level::L1), &rendered.html, &rendered.elements, &[SPA], viewport, 2).unwrap_err();
    assert!(matches!(err, LearnError::NotInStaticHtml(_)), "{err}");
    pool.close().await;
}
