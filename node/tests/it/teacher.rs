//! The teacher with Debian's real Chromium: it renders one page of a layout, learns a template
//! that works on the static HTML, and the worker then extracts twenty more pages of that layout
//! with the template alone — no browser — matching their true text. When the site renames its
//! classes the template stops validating and the teacher learns the new layout; a single-page
//! app whose text a script writes is recognised as needing JavaScript.

use crate::common;

use std::time::Duration;
use weft_extract::teacher::{learn, LearnError};
use weft_extract::template::{apply, Level, TemplateError};
use weft_node::browser::{BrowserPool, BrowserSettings, VIEWPORT};
use weft_simnet::{Resource, Site, WebServer};

use common::coast::{self, Version};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_teacher_learns_a_layout_the_worker_uses_it_and_a_redesign_is_relearned() {
    let mut site = Site::new("coast.test")
        .html("/spa", &coast::spa(99))
        .with("/v4/99.js", Resource::text("application/javascript", coast::spa_js(99)));
    for n in 0..24 {
        site = site.html(&format!("/v1/{n}"), &coast::article(n, Version::V1));
    }
    site = site.html("/v3/0", &coast::article(100, Version::V3));
    let server = WebServer::start(vec![site]).await.unwrap();
    let pool =
        BrowserPool::launch(BrowserSettings { instances: 1, timeout: Duration::from_secs(30), ..Default::default() })
            .await
            .expect("Debian's chromium starts (scripts/setup.sh)");
    let fetch = common::loopback_fetch(&server);
    let viewport = f64::from(VIEWPORT.0);

    // v1: render one page, learn, validate on two more pages of the layout.
    let rendered = pool.render("http://coast.test/v1/0", fetch.clone()).await.unwrap();
    let statics: Vec<String> = (0..3).map(|n| coast::article(n, Version::V1)).collect();
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
        let html = coast::article(n, Version::V1);
        let got = apply(&scraper::Html::parse_document(&html), t).unwrap();
        assert_eq!(got.title, coast::title(n));
        assert_eq!(got.text, coast::paragraphs(n).join("\n\n"), "page {n}");
        assert_eq!(got.author.as_deref(), Some("Grace Hopper"));
        assert_eq!(got.date, Some(coast::date(n)));
    }
    assert_eq!(server.requests().len(), before, "the worker used no browser");

    // v3: classes renamed (post-title → title, post-body → content): the template fails...
    let v3 = coast::article(100, Version::V3);
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
        learn("coast.test", ("0a99", Level::L1), &rendered.html, &rendered.elements, &[&coast::spa(99)], viewport, 2)
            .unwrap_err();
    assert!(matches!(err, LearnError::NotInStaticHtml(_)), "{err}");
    pool.close().await;
}
