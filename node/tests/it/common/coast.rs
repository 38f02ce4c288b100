//! Coast News, the layout-learning fixture: one site in four versions (issue 8).
//!
//! - **v1** static articles: title `h1.post-title`, body `div.post-body` with a share bar inside,
//!   a sidebar of links, a video iframe in the sidebar;
//! - **v2** the same classes, the article wrapped in a new `section` and the iframe moved into
//!   the article (the template still fits: a drift, not a break);
//! - **v3** classes renamed: `post-title` → `title`, `post-body` → `content`;
//! - **v4** a single-page app: an empty `#app` filled by a script.
#![allow(dead_code)]

const WORDS: [&str; 12] =
    ["tide", "moon", "ocean", "current", "harbour", "sailor", "wave", "shore", "storm", "reef", "gull", "lighthouse"];

/// The true text of article `n`: five paragraphs of distinct sentences.
pub fn paragraphs(n: usize) -> Vec<String> {
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

pub fn title(n: usize) -> String {
    format!("Story {n}: the tide")
}

pub fn date(n: usize) -> String {
    format!("2026-10-{:02}", 1 + n % 28)
}

/// Words of article `n`'s true text.
pub fn words(n: usize) -> usize {
    paragraphs(n).iter().map(|p| p.split_whitespace().count()).sum()
}

/// Which version of the layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    V1,
    V2,
    V3,
}

/// Article `n` in layout `v` (static HTML).
pub fn article(n: usize, v: Version) -> String {
    let body: String = paragraphs(n).iter().map(|p| format!("<p>{p}</p>")).collect();
    article_with(n, v, &body)
}

/// A short item in layout v1: the first two sentences of article `n` (~24 words, under a
/// template's 40-word minimum) — a brief, not a changed layout.
pub fn short_article(n: usize) -> String {
    let first = &paragraphs(n)[0];
    let two: Vec<&str> = first.split_inclusive(". ").take(2).collect();
    article_with(n, Version::V1, &format!("<p>{}</p>", two.concat().trim()))
}

fn article_with(n: usize, v: Version, body: &str) -> String {
    let (title_class, body_class) = if v == Version::V3 { ("title", "content") } else { ("post-title", "post-body") };
    let iframe = format!("<iframe class=\"video\" src=\"/embed/{n}\" width=\"200\" height=\"120\"></iframe>");
    let (aside_iframe, article_iframe) = if v == Version::V2 { ("", iframe.as_str()) } else { (iframe.as_str(), "") };
    let (open, close) = if v == Version::V2 { ("<section class=\"story\">", "</section>") } else { ("", "") };
    format!(
        "<!doctype html><html><head><title>Story {n} | Coast News</title>\
         <style>h1 {{ font-size: 38px }} .sidebar {{ float: right; width: 220px; font-size: 13px }} \
         .{body_class} {{ width: 720px; font-size: 18px }}</style></head><body>\
         <header><nav class=\"menu\"><a href=\"/\">Home</a> <a href=\"/world\">World</a> <a href=\"/about\">About us</a></nav></header>\
         <aside class=\"sidebar\"><h3>Most read</h3><ul><li><a href=\"/a\">A story that everyone read today</a></li>\
         <li><a href=\"/b\">Another story people liked a lot</a></li></ul>{aside_iframe}</aside>\
         <main>{open}<article class=\"post\"><h1 class=\"{title_class}\">{title}</h1>\
         <div class=\"byline\"><span class=\"author\">Grace Hopper</span> · <time datetime=\"{date}\">{day} Oct</time></div>\
         {article_iframe}<div class=\"{body_class}\">{body}<div class=\"share-bar\"><a href=\"/s1\">Share on Mastodon</a> <a href=\"/s2\">Share by mail</a></div></div>\
         </article>{close}</main><footer><a href=\"/privacy\">Privacy</a> © Coast News</footer></body></html>",
        title = title(n),
        date = date(n),
        day = 1 + n % 28
    )
}

/// v4: the single-page app's shell for article `n`; the text arrives from `/v4/{n}.js`.
pub fn spa(n: usize) -> String {
    format!(
        "<!doctype html><html><head><title>Coast News</title></head><body><div id=\"app\"></div>\
         <script src=\"/v4/{n}.js\"></script></body></html>"
    )
}

/// The script that writes article `n` into `#app`.
pub fn spa_js(n: usize) -> String {
    let body: String = paragraphs(n).iter().map(|p| format!("<p>{p}</p>")).collect();
    format!(
        "document.getElementById('app').innerHTML = '<article><h1 style=\"font-size:38px\">{}</h1><div class=\"text\">{body}</div></article>';",
        title(n)
    )
}

/// A page of links.
pub fn hub(links: &[String]) -> String {
    let items: String = links.iter().map(|l| format!("<li><a href=\"{l}\">{l}</a></li>")).collect();
    format!("<!doctype html><html><head><title>Coast News</title></head><body><ul>{items}</ul></body></html>")
}
