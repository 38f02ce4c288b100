//! Page classification (seed 001): article, hub or other; the URL template the page matches;
//! pagination and archive links as hints for the frontier.
//!
//! The URL template replaces each variable path segment with a typed placeholder: `{yyyy}`,
//! `{mm}`, `{dd}` for dates, `{id}` for numbers and opaque tokens, `{slug}` for hyphenated
//! phrases, `{place}` for country and region names, `{name}` for other single words below a
//! section. `/world/africa` → `/world/{place}`, `/article/12345` → `/article/{id}`,
//! `/2019/11/some-long-headline` → `/{yyyy}/{mm}/{slug}`. Templates are what the crawler counts
//! to learn a site's article and hub patterns.
//!
//! - **article**: an article-like URL (a slug, an id or a date in the path) or article markup
//!   (JSON-LD/OpenGraph type), and more than 500 characters of main text;
//! - **hub**: a section-like URL (short, word-only segments) with more than 10 links and little
//!   prose around them;
//! - **other**: everything else.

use crate::links::Link;
use url::Url;

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PageType {
    Article,
    Hub,
    Other,
}

/// Where the crawler may find more of the site.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Hints {
    /// The next page of a paginated listing: `rel="next"` or the URL's `?page=N` / `/page/N`
    /// with N + 1.
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "crate::ser_opt_url")]
    pub next_page: Option<Url>,
    /// The page number, when the URL is one page of a listing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub page_number: Option<u32>,
    /// Archive and sitemap links found on the page.
    #[serde(skip_serializing_if = "Vec::is_empty", serialize_with = "crate::ser_urls")]
    pub archives: Vec<Url>,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Classification {
    pub page_type: PageType,
    /// The URL's template, e.g. `/{yyyy}/{mm}/{slug}`.
    pub template: String,
    pub hints: Hints,
}

/// Country, continent and region names as they appear in section URLs (lowercase, hyphenated).
const PLACES: &[&str] = &[
    "afghanistan",
    "africa",
    "albania",
    "algeria",
    "americas",
    "argentina",
    "armenia",
    "asia",
    "asia-pacific",
    "australia",
    "austria",
    "azerbaijan",
    "bangladesh",
    "belarus",
    "belgium",
    "bolivia",
    "bosnia",
    "brazil",
    "bulgaria",
    "cambodia",
    "cameroon",
    "canada",
    "caribbean",
    "chile",
    "china",
    "colombia",
    "congo",
    "croatia",
    "cuba",
    "cyprus",
    "czech-republic",
    "czechia",
    "denmark",
    "ecuador",
    "egypt",
    "england",
    "estonia",
    "ethiopia",
    "europe",
    "finland",
    "france",
    "georgia",
    "germany",
    "ghana",
    "greece",
    "guatemala",
    "haiti",
    "honduras",
    "hong-kong",
    "hungary",
    "iceland",
    "india",
    "indonesia",
    "iran",
    "iraq",
    "ireland",
    "israel",
    "italy",
    "jamaica",
    "japan",
    "jordan",
    "kazakhstan",
    "kenya",
    "korea",
    "kosovo",
    "kuwait",
    "latin-america",
    "latvia",
    "lebanon",
    "libya",
    "lithuania",
    "luxembourg",
    "malaysia",
    "mali",
    "mexico",
    "middle-east",
    "moldova",
    "mongolia",
    "morocco",
    "mozambique",
    "myanmar",
    "nepal",
    "netherlands",
    "new-zealand",
    "nicaragua",
    "niger",
    "nigeria",
    "north-america",
    "north-korea",
    "northern-ireland",
    "norway",
    "oceania",
    "pakistan",
    "palestine",
    "panama",
    "paraguay",
    "peru",
    "philippines",
    "poland",
    "portugal",
    "qatar",
    "romania",
    "russia",
    "rwanda",
    "saudi-arabia",
    "scotland",
    "senegal",
    "serbia",
    "singapore",
    "slovakia",
    "slovenia",
    "somalia",
    "south-africa",
    "south-america",
    "south-korea",
    "spain",
    "sri-lanka",
    "sudan",
    "sweden",
    "switzerland",
    "syria",
    "taiwan",
    "tanzania",
    "thailand",
    "tunisia",
    "turkey",
    "uganda",
    "uk",
    "ukraine",
    "united-kingdom",
    "united-states",
    "uruguay",
    "us",
    "usa",
    "uzbekistan",
    "venezuela",
    "vietnam",
    "wales",
    "yemen",
    "zambia",
    "zimbabwe",
];

fn is_place(seg: &str) -> bool {
    PLACES.binary_search(&seg).is_ok()
}

fn is_year(seg: &str) -> bool {
    seg.len() == 4 && seg.parse::<u32>().is_ok_and(|y| (1990..=2100).contains(&y))
}

/// Template placeholder for one path segment, or `None` to keep it literally.
fn placeholder(seg: &str, prev: Option<&str>, index: usize) -> Option<&'static str> {
    let lower = seg.to_ascii_lowercase();
    let stem = lower
        .rsplit_once('.')
        .map(|(s, ext)| if matches!(ext, "html" | "htm" | "php" | "aspx" | "asp" | "shtml") { s } else { &lower[..] })
        .unwrap_or(&lower);
    if is_year(stem) {
        return Some("{yyyy}");
    }
    if stem.len() <= 2 && stem.parse::<u32>().is_ok() {
        if prev == Some("{yyyy}") && stem.parse::<u32>().is_ok_and(|m| (1..=12).contains(&m)) {
            return Some("{mm}");
        }
        if prev == Some("{mm}") && stem.parse::<u32>().is_ok_and(|d| (1..=31).contains(&d)) {
            return Some("{dd}");
        }
        return Some("{id}");
    }
    let digits = stem.bytes().filter(u8::is_ascii_digit).count();
    let hyphens = stem.matches(['-', '_']).count();
    if hyphens >= 2 && stem.len() >= 15 {
        return Some("{slug}");
    }
    if !stem.is_empty() && digits == stem.len() {
        return Some("{id}");
    }
    if digits >= 4 || (stem.len() >= 16 && digits > 0 && stem.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')) {
        return Some("{id}");
    }
    if is_place(stem) {
        return Some("{place}");
    }
    if index >= 1 && hyphens <= 1 && digits == 0 && prev.is_none() {
        return Some("{name}");
    }
    None
}

/// The URL template of `url`'s path.
pub fn template(url: &Url) -> String {
    let segs: Vec<&str> = url.path_segments().map(|s| s.filter(|s| !s.is_empty()).collect()).unwrap_or_default();
    if segs.is_empty() {
        return "/".into();
    }
    let mut out = String::new();
    let mut prev: Option<&'static str> = None;
    let mut literal_before = false;
    for (i, seg) in segs.iter().enumerate() {
        // Only the first literal segment (the section) is kept before words become `{name}`.
        let ph = placeholder(seg, prev, if literal_before { i } else { 0 });
        out.push('/');
        match ph {
            Some(p) => out.push_str(p),
            None => {
                out.push_str(&seg.to_ascii_lowercase());
                literal_before = true;
            }
        }
        prev = ph;
    }
    out
}

fn is_article_template(t: &str) -> bool {
    t.contains("{slug}") || t.contains("{id}") || t.contains("{dd}") || (t.contains("{yyyy}") && t.contains("{mm}"))
}

fn is_section_template(t: &str) -> bool {
    !is_article_template(t) && t.matches('/').count() <= 3
}

/// Page number of a paginated URL and the URL of the next page.
fn pagination(url: &Url) -> Option<(u32, Url)> {
    for (k, v) in url.query_pairs() {
        if matches!(k.as_ref(), "page" | "p" | "pg" | "paged" | "pagenum") {
            if let Ok(n) = v.parse::<u32>() {
                let mut next = url.clone();
                let pairs: Vec<(String, String)> =
                    url.query_pairs()
                        .map(|(a, b)| {
                            if a == k {
                                (a.into_owned(), (n + 1).to_string())
                            } else {
                                (a.into_owned(), b.into_owned())
                            }
                        })
                        .collect();
                next.query_pairs_mut().clear().extend_pairs(pairs);
                return Some((n, next));
            }
        }
    }
    let segs: Vec<&str> = url.path_segments()?.collect();
    for (i, w) in segs.windows(2).enumerate() {
        if w[0].eq_ignore_ascii_case("page") {
            if let Ok(n) = w[1].parse::<u32>() {
                let mut new: Vec<String> = segs.iter().map(|s| s.to_string()).collect();
                new[i + 1] = (n + 1).to_string();
                let mut next = url.clone();
                next.set_path(&new.join("/"));
                return Some((n, next));
            }
        }
    }
    None
}

fn is_archive(url: &Url) -> bool {
    let p = url.path().to_ascii_lowercase();
    p.contains("sitemap") || p.contains("/archive") || p.ends_with("/archives") || p.contains("/all-stories")
}

/// Classifies a page from its URL, main-text length, links and markup type.
pub fn classify(url: &Url, main_chars: usize, links: &[Link], content_type: Option<&str>) -> Classification {
    let template = template(url);
    let article_markup = content_type.is_some_and(crate::metadata::is_article_type);
    let content_links = links.len();
    let link_text: usize = links.iter().map(|l| l.text.chars().count()).sum();
    let page_type = if main_chars > 500 && (is_article_template(&template) || article_markup) {
        PageType::Article
    } else if is_section_template(&template)
        && content_links > 10
        && main_chars < 20 * content_links.max(1) + link_text / 2
    {
        PageType::Hub
    } else {
        PageType::Other
    };
    let mut hints = Hints::default();
    if let Some((n, next)) = pagination(url) {
        hints.page_number = Some(n);
        hints.next_page = Some(next);
    }
    if let Some(next) = links.iter().find(|l| l.rel.iter().any(|r| r == "next")) {
        hints.next_page = Some(next.url.clone());
    }
    hints.archives = links.iter().filter(|l| is_archive(&l.url)).map(|l| l.url.clone()).take(20).collect();
    Classification { page_type, template, hints }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(u: &str) -> String {
        template(&Url::parse(u).unwrap())
    }

    #[test]
    fn places_are_sorted_for_binary_search() {
        assert!(PLACES.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn templates() {
        assert_eq!(t("https://n.test/world/africa"), "/world/{place}");
        assert_eq!(t("https://n.test/article/12345"), "/article/{id}");
        assert_eq!(t("https://n.test/2019/11/some-long-headline-here"), "/{yyyy}/{mm}/{slug}");
        assert_eq!(t("https://n.test/2019/11/19/politics/story.html"), "/{yyyy}/{mm}/{dd}/politics/{name}");
        assert_eq!(t("https://n.test/news/technology"), "/news/{name}");
        assert_eq!(t("https://n.test/sports"), "/sports");
        assert_eq!(t("https://n.test/"), "/");
        assert_eq!(
            t("https://n.test/news/us/article/New-SUVs-and-electric-vehicles-14848164.php"),
            "/news/{place}/article/{slug}"
        );
    }

    #[test]
    fn pagination_predicts_the_next_page() {
        let (n, next) = pagination(&Url::parse("https://n.test/news?page=3&x=1").unwrap()).unwrap();
        assert_eq!((n, next.as_str()), (3, "https://n.test/news?page=4&x=1"));
        let (n, next) = pagination(&Url::parse("https://n.test/blog/page/7/").unwrap()).unwrap();
        assert_eq!((n, next.as_str()), (7, "https://n.test/blog/page/8/"));
        assert!(pagination(&Url::parse("https://n.test/blog/pager").unwrap()).is_none());
    }
}
