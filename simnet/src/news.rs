//! News sites for measuring layout learning: hosts in four common page designs (a WordPress
//! blog, a news site, a Bootstrap blog, a magazine of generated-looking class names), each with
//! many articles whose true main text is known. Every design puts boilerplate *inside* the
//! article body — share bars, related links, promos, a newsletter box, a table of contents, an
//! author box, ads — which is where generic extractors go wrong and a learned template's
//! exclusions can help. Articles vary the way real ones do: four to nine paragraphs, links and
//! emphasis in the text, and every fourth one carries a video embed (another layout signature
//! of the same design).

use crate::rng::Rng;
use crate::web::Site;

/// One article of a news site.
#[derive(Debug, Clone)]
pub struct Article {
    pub path: String,
    pub title: String,
    /// Paragraphs separated by blank lines.
    pub text: String,
}

/// A generated news site.
pub struct NewsSite {
    pub site: Site,
    pub articles: Vec<Article>,
}

/// The designs, by index: `wp`, `news`, `blog`, `magazine`.
pub const DESIGNS: [&str; 4] = ["wp", "news", "blog", "magazine"];

const NOUNS: [&str; 24] = [
    "harbour",
    "council",
    "river",
    "festival",
    "library",
    "railway",
    "bridge",
    "market",
    "school",
    "orchard",
    "museum",
    "forest",
    "factory",
    "village",
    "island",
    "garden",
    "stadium",
    "hospital",
    "theatre",
    "canal",
    "airport",
    "vineyard",
    "quarry",
    "lighthouse",
];
const VERBS: [&str; 16] = [
    "reopened",
    "expanded",
    "closed",
    "welcomed",
    "rejected",
    "approved",
    "restored",
    "funded",
    "surveyed",
    "rebuilt",
    "celebrated",
    "delayed",
    "inspected",
    "protected",
    "replaced",
    "measured",
];
const ADJECTIVES: [&str; 16] = [
    "old", "northern", "busy", "quiet", "historic", "flooded", "crowded", "small", "ancient", "coastal", "local",
    "famous", "empty", "new", "western", "rural",
];
const PEOPLE: [&str; 8] = [
    "Ada Lovelace",
    "Grace Hopper",
    "Alan Turing",
    "Katherine Johnson",
    "Claude Shannon",
    "Hedy Lamarr",
    "Edsger Dijkstra",
    "Barbara Liskov",
];

fn pick<'a>(r: &mut Rng, from: &[&'a str]) -> &'a str {
    from[r.below(from.len())]
}

fn sentence(r: &mut Rng) -> String {
    let (a, n, v, a2, n2) =
        (pick(r, &ADJECTIVES), pick(r, &NOUNS), pick(r, &VERBS), pick(r, &ADJECTIVES), pick(r, &NOUNS));
    let tail = match r.below_u64(4) {
        0 => format!(", and the {} said the {} would follow next spring", pick(r, &NOUNS), pick(r, &NOUNS)),
        1 => format!(" after {} months of debate", 2 + r.below_u64(20)),
        2 => format!(" while residents of the {} {} watched", pick(r, &ADJECTIVES), pick(r, &NOUNS)),
        _ => String::new(),
    };
    let mut s = format!("The {a} {n} {v} the {a2} {n2}{tail}.");
    if let Some(c) = s.get_mut(0..1) {
        c.make_ascii_uppercase();
    }
    s
}

/// Paragraph text (the truth) and its HTML (with links and emphasis in some paragraphs).
fn paragraphs(r: &mut Rng) -> Vec<(String, String)> {
    (0..4 + r.below_u64(6))
        .map(|_| {
            let sentences: Vec<String> = (0..3 + r.below_u64(3)).map(|_| sentence(r)).collect();
            let text = sentences.join(" ");
            let html = match r.below_u64(3) {
                0 => {
                    let first = sentences[0].trim_end_matches('.');
                    let rest = sentences[1..].join(" ");
                    format!("<p><a href=\"/topic/{}\">{first}</a>. {rest}</p>", pick(r, &NOUNS))
                }
                1 => {
                    let rest = sentences[1..].join(" ");
                    format!("<p><em>{}</em> {rest}</p>", sentences[0])
                }
                _ => format!("<p>{text}</p>"),
            };
            (text, html)
        })
        .collect()
}

fn links(paths: &[String], titles: &[String]) -> String {
    paths.iter().zip(titles).map(|(p, t)| format!("<li><a href=\"{p}\">{t}</a></li>")).collect()
}

/// A news site on `host` in design `design` (an index into [`DESIGNS`]) with `pages` articles
/// at `/{design}/{n}`, linked from hub pages (`/`, `/page/2`, ...) of twenty-five.
pub fn news_site(host: &str, design: usize, pages: usize) -> NewsSite {
    let name = DESIGNS[design % DESIGNS.len()];
    let paths: Vec<String> = (0..pages).map(|n| format!("/{name}/{n}")).collect();
    news_site_at(host, design, &paths)
}

/// A news site whose articles live at `paths` (one article each, in order; newest first on
/// the hubs): a site's URL scheme is the caller's choice — `/blog/{slug}` before a move,
/// `/articles/{yyyy}/{mm}/{slug}` after it. The texts depend on the host and the number of
/// articles, not on the paths: the same site can be served again under another scheme.
pub fn news_site_at(host: &str, design: usize, paths: &[String]) -> NewsSite {
    let design = design % DESIGNS.len();
    let pages = paths.len();
    let seed = blake3::hash(host.as_bytes());
    let mut r = Rng(u64::from_le_bytes(seed.as_bytes()[..8].try_into().expect("8 bytes")));
    let mut titles = Vec::new();
    for _ in 0..pages {
        let t = format!("The {} {} {}", pick(&mut r, &ADJECTIVES), pick(&mut r, &NOUNS), pick(&mut r, &VERBS));
        titles.push(t);
    }
    let paths: Vec<String> = paths.to_vec();
    let mut site = Site::new(host);
    let mut articles = Vec::new();
    for n in 0..pages {
        let paras = paragraphs(&mut r);
        let text = paras.iter().map(|p| p.0.clone()).collect::<Vec<_>>().join("\n\n");
        let body: Vec<String> = paras.into_iter().map(|p| p.1).collect();
        let related: Vec<usize> = (1..4).map(|k| (n + k * 7) % pages).collect();
        let rel_paths: Vec<String> = related.iter().map(|&k| paths[k].clone()).collect();
        let rel_titles: Vec<String> = related.iter().map(|&k| titles[k].clone()).collect();
        let author = pick(&mut r, &PEOPLE);
        let date = format!("2026-{:02}-{:02}", 1 + n % 12, 1 + n % 28);
        let video = if n % 4 == 3 {
            format!(
                "<div class=\"video-embed\"><iframe src=\"/video/{n}\" width=\"640\" height=\"360\"></iframe></div>"
            )
        } else {
            String::new()
        };
        let page = render(design, host, &titles[n], author, &date, &body, &video, &rel_paths, &rel_titles, &mut r);
        site = site.html(&paths[n], &page);
        articles.push(Article { path: paths[n].clone(), title: titles[n].clone(), text });
    }
    let hubs = pages.div_ceil(25).max(1);
    for h in 0..hubs {
        let range = h * 25..((h + 1) * 25).min(pages);
        let list = links(&paths[range.clone()], &titles[range]);
        let next = if h + 1 < hubs {
            format!("<a class=\"next\" href=\"/page/{}\">Older stories</a>", h + 2)
        } else {
            String::new()
        };
        let html = format!(
            "<!doctype html><html><head><title>{host}</title></head><body><h1>{host}</h1><ul class=\"stories\">{list}</ul>{next}</body></html>"
        );
        let path = if h == 0 { "/".to_string() } else { format!("/page/{}", h + 1) };
        site = site.html(&path, &html);
    }
    NewsSite { site, articles }
}

#[allow(clippy::too_many_arguments)]
fn render(
    design: usize,
    host: &str,
    title: &str,
    author: &str,
    date: &str,
    body: &[String],
    video: &str,
    rel_paths: &[String],
    rel_titles: &[String],
    r: &mut Rng,
) -> String {
    let related = links(rel_paths, rel_titles);
    let nav = "<a href=\"/\">Home</a> <a href=\"/page/2\">Archive</a> <a href=\"/about\">About</a> <a href=\"/contact\">Contact</a>";
    let half = body.len() / 2;
    let (first, second) = (body[..half].concat(), body[half..].concat());
    let comment = sentence(r);
    match design {
        0 => format!(
            "<!doctype html><html><head><title>{title} – {host}</title><style>\
             body {{ font: 16px serif }} .entry-title {{ font-size: 34px }} #primary {{ width: 700px; margin-left: 100px }} \
             #secondary {{ position: absolute; left: 860px; top: 80px; width: 260px; font-size: 13px }}</style></head>\
             <body class=\"single\"><div id=\"page\"><header id=\"masthead\"><p class=\"site-title\"><a href=\"/\">{host}</a></p>\
             <nav class=\"main-navigation\">{nav}</nav></header><div id=\"content\" class=\"site-content\"><div id=\"primary\" class=\"content-area\">\
             <main id=\"main\" class=\"site-main\"><article class=\"post type-post\"><header class=\"entry-header\"><h1 class=\"entry-title\">{title}</h1>\
             <div class=\"entry-meta\"><span class=\"byline\">by <span class=\"author vcard\">{author}</span></span> \
             <time class=\"entry-date published\" datetime=\"{date}\">{date}</time></div>{video}</header>\
             <div class=\"entry-content\">{first}{second}<div class=\"sharedaddy\"><h3>Share this:</h3><ul><li><a href=\"/s/t\">Twitter</a></li>\
             <li><a href=\"/s/f\">Facebook</a></li><li><a href=\"/s/m\">Email</a></li></ul></div>\
             <div id=\"jp-relatedposts\" class=\"jp-relatedposts\"><h3>Related</h3><ul>{related}</ul></div></div>\
             <footer class=\"entry-footer\">Posted in <a href=\"/c/news\">News</a></footer></article>\
             <div id=\"comments\" class=\"comments-area\"><h2>2 thoughts on “{title}”</h2><ol class=\"comment-list\">\
             <li class=\"comment\"><p>{comment} I wonder what the others think about it.</p></li>\
             <li class=\"comment\"><p>Thanks for writing this, it was a good read and I shared it with my neighbours.</p></li></ol></div>\
             </main></div><aside id=\"secondary\" class=\"widget-area\"><h2>Recent posts</h2><ul>{related}</ul></aside></div>\
             <footer id=\"colophon\">Proudly powered by a blog engine</footer></div></body></html>"
        ),
        1 => format!(
            "<!doctype html><html><head><title>{title} | {host}</title><style>\
             body {{ font: 17px sans-serif }} .story-headline {{ font-size: 40px }} .story {{ width: 760px; margin: 0 auto }} \
             .most-popular {{ width: 760px; margin: 0 auto; font-size: 14px }}</style></head><body>\
             <header class=\"site-header\"><div class=\"brand\">{host}</div><nav class=\"sections\">{nav}</nav></header>\
             <main class=\"layout\"><article class=\"story\"><h1 class=\"story-headline\">{title}</h1>\
             <div class=\"story-meta\"><span class=\"story-author\">{author}</span> <time datetime=\"{date}\">{date}</time></div>{video}\
             <figure class=\"story-image\"><img src=\"/img/{date}.jpg\" alt=\"\" width=\"760\" height=\"400\"><figcaption>Photograph: agency</figcaption></figure>\
             <div class=\"story-body\">{first}<aside class=\"inline-promo\"><h4>Read more</h4><ul>{related}</ul></aside>{second}\
             <div class=\"newsletter-box\"><p>Get the morning briefing in your inbox: the stories that matter, explained, every weekday before breakfast.</p>\
             <button>Sign up</button></div></div></article>\
             <section class=\"most-popular\"><h2>Most popular</h2><ol>{related}</ol></section></main>\
             <footer class=\"site-footer\"><a href=\"/terms\">Terms</a> <a href=\"/privacy\">Privacy</a></footer></body></html>"
        ),
        2 => format!(
            "<!doctype html><html><head><title>{title} - {host}</title><style>\
             body {{ font: 16px sans-serif }} .post-title {{ font-size: 30px }} .col-main {{ width: 720px; float: left; margin-left: 60px }} \
             .col-side {{ width: 280px; float: left; font-size: 13px }}</style></head><body>\
             <nav class=\"navbar\"><a class=\"navbar-brand\" href=\"/\">{host}</a> {nav}</nav><div class=\"container\"><div class=\"row\">\
             <div class=\"col-main\"><div class=\"post\"><h2 class=\"post-title\">{title}</h2>\
             <div class=\"post-info\">By <a class=\"post-author\" href=\"/authors\">{author}</a> on <span class=\"post-date\">{date}</span></div>{video}\
             <div class=\"post-content\"><nav class=\"toc\"><p>Contents</p><ol><li><a href=\"#one\">The start</a></li><li><a href=\"#two\">What happened</a></li>\
             <li><a href=\"#three\">What comes next</a></li></ol></nav>{first}{second}\
             <div class=\"author-box\"><p>{author} writes about towns, transport and the people who keep them running.</p></div></div>\
             <div class=\"post-tags\">Tags: <a href=\"/tag/a\">local</a> <a href=\"/tag/b\">news</a></div></div></div>\
             <div class=\"col-side\"><div class=\"widget\"><h4>Popular</h4><ul>{related}</ul></div></div></div></div>\
             <footer class=\"footer\">© {host}</footer></body></html>"
        ),
        _ => format!(
            "<!doctype html><html><head><title>{title}</title><style>\
             body {{ font: 18px Georgia }} .Headline {{ font-size: 44px }} .Layout-main {{ width: 740px; margin: 0 auto }}</style></head><body>\
             <div id=\"root\"><div class=\"css-k008qs\"><header class=\"Masthead\"><a href=\"/\">{host}</a> {nav}</header>\
             <div class=\"Layout-main\"><div class=\"ArticleHeader\"><h1 data-testid=\"headline\" class=\"Headline\">{title}</h1>\
             <div class=\"Byline\"><span class=\"Byline-author\">{author}</span> <time datetime=\"{date}\">{date}</time></div>{video}</div>\
             <div class=\"ArticleBody\">{first}<div class=\"Ad\"><p>Advertisement</p></div>{second}\
             <div class=\"RelatedContent\"><h2>More from {host}</h2><ul>{related}</ul></div></div></div>\
             <footer class=\"Footer\">All rights reserved.</footer></div></div></body></html>"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sites_are_deterministic_and_every_article_has_its_text() {
        let a = news_site("a.test", 1, 30);
        let b = news_site("a.test", 1, 30);
        assert_eq!(a.articles.len(), 30);
        assert_eq!(a.articles[7].text, b.articles[7].text);
        for art in &a.articles {
            let crate::web::Resource::Html(html) = &a.site.routes[&art.path] else { panic!() };
            assert!(html.contains(&art.title));
            let first = art.text.split(". ").next().unwrap();
            assert!(html.contains(first.split(' ').take(3).collect::<Vec<_>>().join(" ").as_str()));
            let paragraphs = art.text.split("\n\n").count();
            assert!((4..=9).contains(&paragraphs));
        }
        assert!(a.site.routes.contains_key("/") && a.site.routes.contains_key("/page/2"));
    }
}
