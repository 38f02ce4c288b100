//! Small fixtures, one concern each, through the public entry point `extract`.

use url::Url;
use weft_extract::{extract, Extracted, PageType, Recommendation};

fn run(html: &str, url: &str) -> Extracted {
    extract(html.as_bytes(), &[], &Url::parse(url).unwrap())
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
    let html = format!(
        r#"<body><header><nav><a href="/">Home</a> <a href="/world">World</a></nav></header>
        <div class="cookie-banner"><p>We use cookies to improve your experience on our website, by continuing you accept them.</p></div>
        <main><article><h1>Headline</h1>{}<h2>A subheading inside</h2>{}
        <div class="share-bar"><a href="/s">Share on Facebook</a></div>
        <section class="related-articles"><p><a href="/r1">Related story one with a long enough title</a></p></section>
        </article></main>
        <aside><p>Sidebar text that is long enough to look like prose, with commas, and so on and on.</p></aside>
        <div id="comments"><p>A reader comment that is long enough to look like prose, with commas, and so on.</p></div>
        <footer><p>Copyright 2020 The Site. All rights reserved. Contact us, privacy policy, terms of use.</p></footer></body>"#,
        prose(3),
        prose(2)
    );
    let e = run(&html, "http://a.test/story/123456");
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
    let post = |id: u32, text: &str| {
        format!(
            "<div class=\"answer\" id=\"answer-{id}\"><div class=\"post-layout\"><div class=\"answercell\">\
             <div class=\"post-body\" id=\"body-{id}\">{text}</div></div>\
             <div class=\"comments\">{}</div></div></div>",
            "<p>Nice answer, thanks a lot for writing this all up so carefully. It did not work for me on \
             version two of the tool though, any ideas what could be different there?</p>"
                .repeat(4)
        )
    };
    let html = format!(
        "<html><body><nav><a href=/a>Home</a> <a href=/b>Questions</a></nav><div id=\"mainbar\">\
         <div class=\"question\"><h1>How do I back up a whole system?</h1>{}</div>{}{}{}</div>\
         <footer><p>Site design by the company, all rights reserved, every year since it began.</p></footer></body></html>",
        post(1, "<p>I want to back up everything, the operating system included, and restore it after a crash.</p>"),
        post(2, &format!("<p>Use an image of the disk: it copies the boot loader too.</p>{}", prose(4))),
        post(3, "<p>A file-level copy with rsync works as well, as long as you exclude /proc and /sys.</p>"),
        post(4, "<p>Whatever you do, test the restore on a spare disk before you need it for real.</p>"),
    );
    let e = run(&html, "http://qa.test/questions/1");
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
    let teaser = |n: u32| {
        format!(
            "<div class=\"entry-content\"><h4><a href=\"/news/{n}\">Council approves the budget for road {n}</a></h4>\
             <p>Front page</p><p>THE TOWN council approved the budget for road number {n} on Tuesday after a long \
             debate about the cost of repairs and...</p></div>"
        )
    };
    let html = format!(
        "<html><body><div class=\"wrap\"><div class=\"entry-content\">{}</div><h3>Also in the news</h3>{}{}{}</div>\
         </body></html>",
        prose(6),
        teaser(1),
        teaser(2),
        teaser(3)
    );
    let e = run(&html, "http://news.test/story");
    assert!(e.text.contains("The committee met on Tuesday"), "{}", e.text);
    assert!(!e.text.contains("approved the budget"), "teasers are not content: {}", e.text);
}

/// A class name's hint weighs in proportion to the prose under it: a short box called
/// `modal-content` must not win over the article, whose wrapper is called `widget`.
#[test]
fn a_small_box_with_a_content_class_does_not_outscore_the_article() {
    let html = format!(
        "<html><body><div class=\"elementor-widget-container\">{}</div>\
         <footer><a href=/a>About the practice</a> <a href=/b>Our services</a> <a href=/c>Contact us</a> \
         <a href=/d>Book an appointment</a></footer>\
         <div class=\"subscription-modal\"><div class=\"modal-content\"><p>Discover more from us, now.</p>\
         <p>Subscribe now to keep reading and get access to the full archive.</p></div></div></body></html>",
        "<p>Dentistry is evolving quickly and this year is shaping up to be a most innovative one for the patients and for \
         all the dentists alike.</p>"
            .repeat(14)
    );
    let e = run(&html, "http://dentist.test/blog/trends");
    assert_eq!(e.text.matches("Dentistry is evolving quickly").count(), 14, "{}", e.text);
    assert!(!e.text.contains("Subscribe now"), "{}", e.text);
}

/// The body of a marked-up `<article>` whose class happens to look like boilerplate
/// (`rich-text-newsletter`) is the article, not boilerplate.
#[test]
fn the_body_of_the_marked_up_article_is_not_boilerplate_by_its_class() {
    let html = format!(
        "<html><body><main><article class=\"newsletter-content\"><div class=\"rich-text-newsletter\">{}</div>\
         </article><section class=\"testimonials\">{}</section></main></body></html>",
        prose(8),
        "<p>What a wonderful newsletter, I read every issue and learn something new each month.</p>".repeat(12)
    );
    let e = run(&html, "http://lab.test/newsletter/fitness");
    assert!(e.text.contains("The committee met on Tuesday"), "{}", e.text);
}

/// A short page over a long legal notice: the `<footer>` holds most of the prose, but the page
/// marks its content with `<main>`, so the footer stays the footer.
#[test]
fn a_footer_with_most_of_the_prose_is_still_the_footer_when_main_is_marked() {
    let html = format!(
        "<html><body><main><h1>Rental fleet safety</h1>\
         <p>A good risk management program requires proper screening of prospective renters.</p>\
         <p>Implementing sound practices at the rental counter is the first step in keeping the fleet safe.</p>\
         <p>Key topics discussed include driver screening, vehicle inspection and incident reporting.</p>\
         </main><footer>{}</footer></body></html>",
        "<p>This material is not intended to replace the advice of a qualified advisor, and information has \
         been obtained from sources believed to be reliable, but it is not guaranteed as to accuracy.</p>"
            .repeat(8)
    );
    let e = run(&html, "http://insure.test/programs/rental");
    assert!(e.text.contains("proper screening of prospective renters"), "{}", e.text);
    assert!(!e.text.contains("qualified advisor"), "{}", e.text);
}

/// The service described in a `headerWrapper` section (a class that reads as boilerplate) is
/// the page, even though a long cookie notice inside the page's `<header>` holds prose too:
/// the share of prose that clears a class name is counted outside header and footer tags.
#[test]
fn prose_in_the_header_tag_does_not_hide_the_content_behind_a_boilerplate_class() {
    let html = format!(
        "<html><body><header><div class=\"cookie-faq\">{}</div><ul><li><a href=/a>Services</a></li></ul></header>\
         <div class=\"content-wrapper\"><section class=\"headerWrapper\"><h1>Quality engineering</h1>{}</section>\
         <div class=\"contact\"><p>Write to us about your project, a reply comes within a day or two.</p></div></div>\
         </body></html>",
        "<p>We use cookies to improve the experience of the site, to measure its audience and to remember \
         what you chose on your last visit, as the law requires us to explain.</p>"
            .repeat(6),
        prose(8)
    );
    let e = run(&html, "http://qa.test/services/testing");
    assert!(e.text.contains("The committee met on Tuesday"), "{}", e.text);
    assert!(!e.text.contains("We use cookies"), "{}", e.text);
}

/// Captions are not the article's text, and a "related posts" list of excerpts cut short
/// after the article is not either.
#[test]
fn captions_and_trailing_teasers_are_not_content() {
    let html = format!(
        "<html><body><article>{}<figure><img src=a.jpg><figcaption>Above: the committee room on Tuesday, \
         photographed from the public gallery.</figcaption></figure>{}<h3>Recommended</h3>\
         <p>Imagine slipping on your earbuds not just to drown out the world, but to invite in a gentle wave...</p>\
         <p>In 2025, earbuds come in every flavor, from cheap steals to flagships. But does more money alw...</p>\
         </article></body></html>",
        prose(3),
        prose(3)
    );
    let e = run(&html, "http://news.test/story");
    assert_eq!(e.text.matches("The committee met on Tuesday").count(), 6, "{}", e.text);
    assert!(!e.text.contains("public gallery"), "{}", e.text);
    assert!(!e.text.contains("earbuds"), "{}", e.text);
}

/// A service page: its text is scattered over sections that no one wrapper scores for, with
/// link sliders between them. The content is all the sections, not the best one.
#[test]
fn a_service_page_scattered_over_sections_is_taken_whole() {
    let section = |class: &str, heading: &str, text: &str| {
        format!(
            "<div class=\"{class}\"><div class=\"container\"><div class=\"rich-text\"><h2>{heading}</h2>\
             <p>{text}</p></div></div></div>"
        )
    };
    let slider: String =
        (0..30).map(|i| format!("<div class=\"slide\"><a href=\"/pests/{i}\">Pest number {i}</a></div>")).collect();
    let html = format!(
        "<html><body><header><a href=/>Home</a> <a href=/services>Services</a></header><div>{}<div class=\"slider\">{slider}</div>{}{}{}{}</div>\
         <footer><a href=/privacy>Privacy</a> <a href=/terms>Terms</a></footer></body></html>",
        section("intro", "Pest control in Queen Creek", &"If you are looking for protection from ants, spiders and termites, we are here to help you keep them out. ".repeat(3)),
        section("why-us", "Why choose us", "Your home deserves the best protection, and with a reputation for reliability and results we go beyond."),
        section("eco", "Eco-friendly treatments", "Tough on pests but gentle on your family, our treatments use products that are safe around children."),
        section("guarantee", "Our guarantee", "If pests come back between scheduled visits, so do we, at no extra cost to you, for as long as needed."),
        section("areas", "Areas we serve", "Besides Queen Creek we serve the whole valley, from the east side towns to the far west of the county."),
    );
    let e = run(&html, "http://pest.test/queen-creek");
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
    let html = format!(
        "<html><body><div class=\"post\">{}<h3>About the Author</h3>\
         <p>Jane Doe is an experienced journalist who has been covering local politics for the past ten years.</p>\
         <p>She lives in the city with her two children and writes about council meetings and budgets.</p></div>\
         </body></html>",
        prose(8)
    );
    let e = run(&html, "http://news.test/story");
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
    let item = |n: u32| {
        format!(
            "<div class=\"card\"><h3><a href=\"/news/{n}\">Council approves the budget for road {n}</a></h3>\
             <p>The town council approved the budget for road number {n} after a long debate about repairs.</p></div>"
        )
    };
    let items: String = (1..=6).map(item).collect();
    let html = format!(
        "<html><body><nav><a href=/>Home</a> <a href=/news>News</a></nav><main><h1>Latest news</h1>{items}</main></body></html>"
    );
    let e = run(&html, "http://news.test/news");
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
    assert!(e.text.starts_with("exit_on_error (boolean)"), "{}", e.text);
    assert!(e.text.contains("restart_after_crash (boolean)"), "{}", e.text);
}
