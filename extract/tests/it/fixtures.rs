//! Small fixtures, one concern each, through the public entry point `extract`.

use url::Url;
use weft_extract::{extract, Extracted, PageType, Recommendation};

fn run(html: &str, url: &str) -> Extracted {
    extract(html.as_bytes(), &[], &Url::parse(url).unwrap())
}

/// A page of `tests/pinned` (its `.html` at its `.url`): the pages whose behaviour the learned
/// block classifier is also trained on (the `learn` example reads the same files, with each
/// page's main text in its `.txt`).
fn pinned(name: &str) -> Extracted {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/pinned");
    let read = |ext: &str| {
        let path = dir.join(format!("{name}.{ext}"));
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    };
    run(&read("html"), read("url").trim())
}

/// A paragraph of plausible prose, `n` times.
fn prose(n: usize) -> String {
    "<p>The committee met on Tuesday to discuss the proposal, which had been debated for months. \
     Members raised concerns about cost, timing and the effect on local businesses, and asked for more data.</p>"
        .repeat(n)
}

#[test]
fn windows_1252_page_with_header_charset() {
    let mut body = b"<html><body><article>".to_vec();
    body.extend_from_slice(
        &b"<p>Caf\xe9 cr\xe8me \x96 \x93quoted\x94, na\xefve r\xe9sum\xe9 of the d\xe9j\xe0 vu. </p>".repeat(3),
    );
    body.extend_from_slice(b"</article></body></html>");
    let e =
        extract(&body, &[("Content-Type", "text/html; charset=ISO-8859-1")], &Url::parse("http://a.test/x").unwrap());
    assert_eq!(e.charset, "windows-1252");
    assert!(e.text.contains("Café crème – “quoted”, naïve résumé of the déjà vu."), "{}", e.text);
}

#[test]
fn mojibake_in_a_utf8_page_is_repaired() {
    let html = format!(
        "<article><p>Itâ€™s the cafÃ©â€™s best crÃ¨me brÃ»lÃ©e, everyone agrees on that.</p>{}</article>",
        prose(3)
    );
    let e = run(&html, "http://a.test/x");
    assert!(e.text.starts_with("It’s the café’s best crème brûlée"), "{}", e.text);
    assert!(e.warnings.iter().any(|w| w.kind() == "mojibake_repaired"));
}

#[test]
fn json_ld_graph_wins_over_opengraph_and_meta() {
    let html = format!(
        r#"<html lang="en-GB"><head><title>Doc title | Site</title>
        <meta property="og:title" content="OG title"><meta name="twitter:title" content="Twitter title">
        <meta name="description" content="meta description"><meta property="og:site_name" content="OG Site">
        <meta name="author" content="Meta Author"><meta property="article:published_time" content="2001-01-01T00:00:00Z">
        <script type="application/ld+json">{{"@context":"https://schema.org","@graph":[
          {{"@type":"WebSite","name":"The Site"}},
          {{"@type":"Organization","name":"Publisher Inc"}},
          {{"@type":["NewsArticle"],"headline":"LD headline","author":[{{"@type":"Person","name":"Ann Writer"}},{{"name":"Bo Reporter"}}],
            "datePublished":"2019-11-19T10:00:00-05:00","dateModified":"2019-11-20","description":"LD description"}}
        ]}}</script></head><body><article>{}</article></body></html>"#,
        prose(4)
    );
    let e = run(&html, "https://news.test/2019/11/19/some-long-story-slug");
    let m = &e.metadata;
    assert_eq!(m.title.as_deref(), Some("LD headline"));
    assert_eq!(m.byline.as_deref(), Some("Ann Writer, Bo Reporter"));
    assert_eq!(m.published.as_deref(), Some("2019-11-19T10:00:00-05:00"));
    assert_eq!(m.modified.as_deref(), Some("2019-11-20T00:00:00+00:00"));
    assert_eq!(m.description.as_deref(), Some("LD description"));
    assert_eq!(m.site_name.as_deref(), Some("Publisher Inc"));
    assert_eq!(m.content_type.as_deref(), Some("NewsArticle"));
    assert_eq!(m.language.as_deref(), Some("en-GB"));
}

#[test]
fn opengraph_wins_over_twitter_and_meta_and_heuristics_fill_the_rest() {
    let html = format!(
        r#"<html><head><title>Doc title | Site</title>
        <meta name="twitter:title" content="Twitter title"><meta property="og:title" content="OG title">
        <meta name="description" content="meta description"><meta name="twitter:description" content="tw description">
        <meta property="og:type" content="article"><link rel="canonical" href="/canonical/path?utm_source=x">
        </head><body><div class="byline">By Jane Doe</div><time datetime="2020-02-03T04:05:06Z">Feb 3</time>
        <article>{}</article></body></html>"#,
        prose(4)
    );
    let e = run(&html, "https://news.test/story/12345");
    let m = &e.metadata;
    assert_eq!(m.title.as_deref(), Some("OG title"));
    assert_eq!(m.description.as_deref(), Some("tw description"));
    assert_eq!(m.byline.as_deref(), Some("Jane Doe"));
    assert_eq!(m.published.as_deref(), Some("2020-02-03T04:05:06+00:00"));
    assert_eq!(m.canonical.as_deref(), Some("https://news.test/canonical/path"));
    assert_eq!(m.content_type.as_deref(), Some("Article"));
    // Without OG/Twitter, the <title> minus its site suffix.
    let e = run("<title>A plain page title here | Example</title><p>x</p>", "http://a.test/");
    assert_eq!(e.metadata.title.as_deref(), Some("A plain page title here"));
    // And the URL gives a date when nothing else does.
    let e = run("<p>x</p>", "http://a.test/2018/07/04/fireworks");
    assert_eq!(e.metadata.published.as_deref(), Some("2018-07-04T00:00:00+00:00"));
}

#[test]
fn hidden_content_is_excluded_at_block_inline_and_link_level() {
    let html = format!(
        r#"<body><article>{}
        <p>Visible start <span style="display:none">HIDDENINLINE</span> visible end of a long enough sentence, with commas, to be prose.</p>
        <p hidden>HIDDENBLOCK paragraph that is long enough to be prose if it were visible, with commas, yes.</p>
        <div style="visibility: hidden"><p>HIDDENVIS paragraph that is long enough to be prose, with commas, yes.</p></div>
        <p aria-hidden="true">HIDDENARIA paragraph that is long enough to be prose, with commas, yes indeed.</p>
        <p>Link <a href="/secret" class="visually-hidden">HIDDENLINK</a> and more words in this paragraph, with commas.</p>
        {}</article></body>"#,
        prose(2),
        prose(2)
    );
    let e = run(&html, "http://a.test/story/1");
    assert!(e.text.contains("Visible start visible end"), "{}", e.text);
    for hidden in ["HIDDENINLINE", "HIDDENBLOCK", "HIDDENVIS", "HIDDENARIA", "HIDDENLINK"] {
        assert!(!e.text.contains(hidden), "{hidden} leaked: {}", e.text);
    }
    assert!(e.links.iter().all(|l| l.url.path() != "/secret"));
}

#[test]
fn boilerplate_is_removed() {
    let e = pinned("boilerplate_is_removed");
    assert!(e.text.contains("A subheading inside"));
    assert_eq!(e.text.matches("The committee met").count(), 5);
    for junk in ["Home", "cookies", "Share on", "Related story", "Sidebar", "reader comment", "Copyright"] {
        assert!(!e.text.contains(junk), "{junk} leaked: {}", e.text);
    }
    assert!(e.blocks.iter().any(|b| b.tag == "h2"));
    assert_eq!(e.word_count, e.text.split_whitespace().count());
}

#[test]
fn page_types() {
    let article = run(&format!("<article>{}</article>", prose(3)), "https://n.test/2019/11/19/a-long-story-slug-here");
    assert_eq!(article.classification.page_type, PageType::Article);
    assert_eq!(article.classification.template, "/{yyyy}/{mm}/{dd}/{slug}");

    let links: String =
        (0..30).map(|i| format!("<li><a href=\"/world/story-{i}-about-things\">Story {i} headline</a></li>")).collect();
    let hub = run(&format!("<body><ul>{links}</ul></body>"), "https://n.test/world/africa");
    assert_eq!(hub.classification.page_type, PageType::Hub);
    assert_eq!(hub.classification.template, "/world/{place}");

    let other = run("<body><p>Contact us at the address below.</p></body>", "https://n.test/contact");
    assert_eq!(other.classification.page_type, PageType::Other);

    let short = run("<article><p>Too short to be an article.</p></article>", "https://n.test/article/12345");
    assert_eq!(short.classification.page_type, PageType::Other);

    let paged = run(
        r#"<body><a href="/news?page=3" rel="next">Next</a><a href="/archive/2019">Archive</a></body>"#,
        "https://n.test/news?page=2",
    );
    let hints = &paged.classification.hints;
    assert_eq!(hints.page_number, Some(2));
    assert_eq!(hints.next_page.as_ref().map(|u| u.as_str()), Some("https://n.test/news?page=3"));
    assert_eq!(hints.archives.iter().map(|u| u.as_str()).collect::<Vec<_>>(), ["https://n.test/archive/2019"]);
}

#[test]
fn js_framework_markers() {
    let cases = [
        (
            r#"<body><div id="__next"></div><script id="__NEXT_DATA__" type="application/json">{}</script></body>"#,
            "nextjs",
        ),
        (r#"<body><div id="root" data-reactroot=""></div></body>"#, "react"),
        (r#"<body><div id="app" v-cloak></div></body>"#, "vue"),
        (r#"<body><div id="__nuxt"></div><script>window.__NUXT__={}</script></body>"#, "nuxt"),
        (r#"<body><app-root ng-version="17.0.0"></app-root></body>"#, "angular"),
        (r#"<body><div class="svelte-xyz" data-svelte-h="abc"></div></body>"#, "svelte"),
    ];
    for (html, fw) in cases {
        let e = run(html, "http://a.test/");
        assert_eq!(e.js.framework, Some(fw), "{html}");
        assert!(e.js.signals.iter().any(|s| s == &format!("framework:{fw}")));
    }
}

#[test]
fn js_score_recommendations() {
    let spa = format!(
        r#"<html><body><noscript>You need to enable JavaScript to run this app.</noscript><div id="root"></div>
        <script>{}</script></body></html>"#,
        "var x = 1;".repeat(2_000)
    );
    let e = run(&spa, "http://a.test/");
    assert_eq!(e.js.recommendation, Recommendation::JsRequired, "{:?}", e.js);
    assert!(e.js.score > 0.8);

    let ssr = format!(
        r#"<body><div id="__next"><article>{}</article></div><script id="__NEXT_DATA__">{{}}</script></body>"#,
        prose(8)
    );
    let e = run(&ssr, "http://a.test/a-story-about-something-long");
    assert_eq!(e.js.framework, Some("nextjs"));
    assert_eq!(e.js.recommendation, Recommendation::Static, "{:?}", e.js);

    let half = r#"<body><div id="app"></div><p>Some text, but not a lot of it, on this page here, really.</p><p>More text follows here to fill two hundred characters of visible page text, which is not an article at all, but is not empty.</p></body>"#;
    let e = run(half, "http://a.test/");
    assert_eq!(e.js.recommendation, Recommendation::TryStaticFirst, "{:?}", e.js);
}

#[test]
fn fingerprints_ignore_text_but_see_classes() {
    let page = |text: &str, class: &str| {
        format!(
            r#"<html><head><title>{text}</title><script>var t = "{text}";</script></head>
            <body><div class="{class} wrap-123"><p>{text}</p><p>{text} again</p></div></body></html>"#
        )
    };
    let a = run(&page("first text", "main content"), "http://a.test/");
    let b = run(&page("completely different words here", "content main"), "http://a.test/");
    assert_eq!(a.fingerprints, b.fingerprints, "text, class order and digits must not matter");
    let renamed = run(&page("first text", "main body"), "http://a.test/");
    assert_ne!(a.fingerprints.l1, renamed.fingerprints.l1);
    assert_eq!(a.fingerprints.l2, renamed.fingerprints.l2, "L2 ignores classes");
    let restructured =
        run("<html><head></head><body><div><section><p>first text</p></section></div></body></html>", "http://a.test/");
    assert_ne!(a.fingerprints.l2, restructured.fingerprints.l2);
    // Longer articles, links and emphasis in the text: the same layout.
    let long = run(
        r#"<html><head><title>x</title></head><body><div class="content main wrap-9"><p>One <a href="/a">link</a>.</p>
        <p>Two <em>stressed</em>.</p><p>Three.</p><p>Four <strong><a href="/b">both</a></strong>.</p></div></body></html>"#,
        "http://a.test/",
    );
    assert_eq!(a.fingerprints, long.fingerprints, "paragraph count and inline markup must not matter");
    let with_figure = run(
        r#"<html><head><title>x</title></head><body><div class="content main"><p>One.</p><figure>f</figure><p>Two.</p></div></body></html>"#,
        "http://a.test/",
    );
    assert_ne!(a.fingerprints.l1, with_figure.fingerprints.l1, "a figure in the text is another layout");
}

#[test]
fn base_href_resolves_block_links_too() {
    let html = format!(
        r#"<head><base href="https://cdn.test/base/"></head><body><article>{}<p>See <a href="more.html">the details</a> in the report, which explains everything.</p>{}</article></body>"#,
        prose(2),
        prose(2)
    );
    let e = run(&html, "https://a.test/story/123456");
    let block = e.blocks.iter().find(|b| !b.links.is_empty()).expect("a block with a link");
    assert_eq!(block.links[0].url.as_str(), "https://cdn.test/base/more.html");
    assert_eq!(block.links[0].text, "the details");
    assert!(e.links.iter().any(|l| l.url.as_str() == "https://cdn.test/base/more.html" && l.in_content));
}

#[test]
fn json_output_has_every_contract_field() {
    let e = run(&format!("<article>{}</article>", prose(3)), "https://n.test/article/12345");
    let v = serde_json::to_value(&e).unwrap();
    for key in [
        "url",
        "title",
        "byline",
        "published",
        "modified",
        "language",
        "canonical",
        "site_name",
        "description",
        "content_type",
        "text",
        "word_count",
        "blocks",
        "links",
        "page_type",
        "template",
        "hints",
        "js",
        "fingerprints",
        "confidence",
        "warnings",
    ] {
        assert!(v.get(key).is_some(), "missing {key}");
    }
    assert!(v["fingerprints"]["l1"].as_str().unwrap().len() == 16);
}

#[test]
fn link_text_keeps_word_boundaries_across_blocks_and_line_breaks() {
    // Cards whose link wraps several blocks, a `<br>`, an image: each boundary separates words
    // (a link text of "TidesExplainedWhy the moon" is no anchor text anyone wrote).
    let html = format!(
        "<article>{}<p>Read on:</p>\
         <a href=\"/tides\"><div>Tides explained</div><div>Why the moon pulls</div></a>\
         <a href=\"/waves\"><h3>Waves</h3><p>How wind builds them</p></a>\
         <a href=\"/storms\">Storm<br>surges</a>\
         <a href=\"/reefs\">Coral<img src=\"r.png\">reefs</a>\
         <a href=\"/inline\">in<b>line</b> words stay whole</a></article>",
        prose(3)
    );
    let e = run(&html, "http://a.test/x");
    let text = |path: &str| e.links.iter().find(|l| l.url.path() == path).map(|l| l.text.clone()).unwrap_or_default();
    assert_eq!(text("/tides"), "Tides explained Why the moon pulls");
    assert_eq!(text("/waves"), "Waves How wind builds them");
    assert_eq!(text("/storms"), "Storm surges");
    assert_eq!(text("/reefs"), "Coral reefs");
    assert_eq!(text("/inline"), "inline words stay whole");
}

/// A Q&A page: the question and every answer are content, each answer's comments are not.
/// The best-scoring element is one answer's body; its kind (`post-body`, numbered ids aside)
/// repeats, so the content is the thread that holds them all.
#[test]
fn every_post_of_a_thread_is_content_not_only_the_best_one() {
    let e = pinned("every_post_of_a_thread_is_content_not_only_the_best_one");
    for line in [
        "I want to back up everything",
        "Use an image of the disk",
        "A file-level copy with rsync",
        "test the restore on a spare disk",
    ] {
        assert!(e.text.contains(line), "missing {line:?} in {}", e.text);
    }
    assert!(!e.text.contains("Nice answer"), "comments are not content: {}", e.text);
    assert!(!e.text.contains("Site design"), "{}", e.text);
}

/// An article whose body shares its class with the teasers below it: the teasers (excerpts
/// cut short with an ellipsis) are not posts of a thread, and stay out.
#[test]
fn teasers_of_the_same_kind_as_the_article_stay_out() {
    let e = pinned("teasers_of_the_same_kind_as_the_article_stay_out");
    assert!(e.text.contains("The committee met on Tuesday"), "{}", e.text);
    assert!(!e.text.contains("approved the budget"), "teasers are not content: {}", e.text);
}

/// A class name's hint weighs in proportion to the prose under it: a short box called
/// `modal-content` must not win over the article, whose wrapper is called `widget`.
#[test]
fn a_small_box_with_a_content_class_does_not_outscore_the_article() {
    let e = pinned("a_small_box_with_a_content_class_does_not_outscore_the_article");
    assert_eq!(e.text.matches("Dentistry is evolving quickly").count(), 14, "{}", e.text);
    assert!(!e.text.contains("Subscribe now"), "{}", e.text);
}

/// The body of a marked-up `<article>` whose class happens to look like boilerplate
/// (`rich-text-newsletter`) is the article, not boilerplate.
#[test]
fn the_body_of_the_marked_up_article_is_not_boilerplate_by_its_class() {
    let e = pinned("the_body_of_the_marked_up_article_is_not_boilerplate_by_its_class");
    assert!(e.text.contains("The committee met on Tuesday"), "{}", e.text);
}

/// A short page over a long legal notice: the `<footer>` holds most of the prose, but the page
/// marks its content with `<main>`, so the footer stays the footer.
#[test]
fn a_footer_with_most_of_the_prose_is_still_the_footer_when_main_is_marked() {
    let e = pinned("a_footer_with_most_of_the_prose_is_still_the_footer_when_main_is_marked");
    assert!(e.text.contains("proper screening of prospective renters"), "{}", e.text);
    assert!(!e.text.contains("qualified advisor"), "{}", e.text);
}

/// The service described in a `headerWrapper` section (a class that reads as boilerplate) is
/// the page, even though a long cookie notice inside the page's `<header>` holds prose too:
/// the share of prose that clears a class name is counted outside header and footer tags.
#[test]
fn prose_in_the_header_tag_does_not_hide_the_content_behind_a_boilerplate_class() {
    let e = pinned("prose_in_the_header_tag_does_not_hide_the_content_behind_a_boilerplate_class");
    assert!(e.text.contains("The committee met on Tuesday"), "{}", e.text);
    assert!(!e.text.contains("We use cookies"), "{}", e.text);
}

/// Captions are not the article's text, and a "related posts" list of excerpts cut short
/// after the article is not either.
#[test]
fn captions_and_trailing_teasers_are_not_content() {
    let e = pinned("captions_and_trailing_teasers_are_not_content");
    assert_eq!(e.text.matches("The committee met on Tuesday").count(), 6, "{}", e.text);
    assert!(!e.text.contains("public gallery"), "{}", e.text);
    assert!(!e.text.contains("earbuds"), "{}", e.text);
}

/// A service page: its text is scattered over sections that no one wrapper scores for, with
/// link sliders between them. The content is all the sections, not the best one.
#[test]
fn a_service_page_scattered_over_sections_is_taken_whole() {
    let e = pinned("a_service_page_scattered_over_sections_is_taken_whole");
    for line in [
        "protection from ants",
        "reputation for reliability",
        "gentle on your family",
        "at no extra cost",
        "the whole valley",
    ] {
        assert!(e.text.contains(line), "missing {line:?} in {}", e.text);
    }
    assert!(!e.text.contains("Pest number"), "{}", e.text);
}

/// Near the end of an article, "About the author" starts the site's part of the page: the
/// author's bio reads like prose but is not the article's text.
#[test]
fn the_author_box_after_the_article_is_not_its_text() {
    let e = pinned("the_author_box_after_the_article_is_not_its_text");
    assert_eq!(e.text.matches("The committee met on Tuesday").count(), 8, "{}", e.text);
    assert!(!e.text.contains("experienced journalist"), "{}", e.text);
}

/// A shop renders the product's description with scripts from the JSON-LD it ships: the
/// description is the text. When the visible page already has it, it is not added twice.
#[test]
fn a_products_published_description_is_its_text_when_the_page_lacks_it() {
    let description = "Our signature dark roast, bold and smooth, with notes of dark chocolate and black cherry. \
                       Fair trade beans, roasted in small batches and packed the same day so that every cup tastes as fresh as it can.";
    let ld = format!(
        r#"<script type="application/ld+json">{{"@context":"https://schema.org","@type":"Product","name":"Dark Roast","description":"{description}"}}</script>"#
    );
    let bare = format!("<html><head>{ld}</head><body><h1>Dark Roast</h1><div id=app></div></body></html>");
    let e = run(&bare, "http://shop.test/products/dark-roast");
    assert!(e.text.contains("notes of dark chocolate"), "{}", e.text);
    assert!(!e.warnings.iter().any(|w| w.kind() == "no_main_content"), "{:?}", e.warnings);

    let shown = format!(
        "<html><head>{ld}</head><body><h1>Dark Roast</h1><div class=product><p>{description}</p></div></body></html>"
    );
    let e = run(&shown, "http://shop.test/products/dark-roast");
    assert_eq!(e.text.matches("notes of dark chocolate").count(), 1, "{}", e.text);
}

/// A listing's content is its items: each linked title with its summary.
#[test]
fn a_listings_linked_titles_are_content() {
    let e = pinned("a_listings_linked_titles_are_content");
    for n in 1..=6 {
        assert!(e.text.contains(&format!("Council approves the budget for road {n}")), "{}", e.text);
    }
}

#[test]
fn a_definition_lists_first_term_is_kept_with_its_definition() {
    // A manual's settings page: every term names a setting; the first used to be dropped as
    // a short line before the prose, and with it the name people search for.
    let html = r#"<html><head><title>Error Handling</title></head><body><nav><a href="/">Home</a></nav>
        <div class="sect1"><h2>Error Handling</h2><dl>
        <dt><code>exit_on_error</code> (boolean)</dt><dd><p>If on, any error will terminate the current
        session. By default, this is set to off, so that only FATAL errors will terminate the session.</p></dd>
        <dt><code>restart_after_crash</code> (boolean)</dt><dd><p>When set to on, which is the default, the
        server will automatically reinitialize after a backend crash. Leaving it on is normally best.</p></dd>
        </dl></div></body></html>"#;
    let e = run(html, "https://docs.test/runtime-config-error-handling.html");
    // The term comes before its definition; the section's heading may come first (the
    // benchmarks' labels keep a section's heading with its text).
    let term =
        e.text.find("exit_on_error (boolean)").unwrap_or_else(|| panic!("the first term is dropped: {}", e.text));
    assert!(e.text.find("If on, any error").is_some_and(|d| term < d), "{}", e.text);
    assert!(e.text.contains("restart_after_crash (boolean)"), "{}", e.text);
}
