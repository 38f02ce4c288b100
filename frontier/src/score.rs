//! URL priority: which queued URL of a host to fetch first.
//!
//! The weights are the seed design's: breadth-first bias (−0.1 per hop), popularity (+0.2 per
//! known inlink, capped), freshness (+0.5 for news/blog-looking URLs) and +0.2 for paths that
//! look like HTML pages. Sitemaps are fetched before pages because they feed the queue, and
//! revisits (due hubs) before new pages for the same reason; links found on a hub gain
//! [`HUB_BOOST`] (seed 001: hubs lead to the articles).
//! Binary resources are never queued: a text search engine has nothing to gain from them.

use url::Url;

/// What a queued URL is fetched for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum UrlKind {
    Page,
    /// A sitemap or sitemap index (XML, possibly gzipped).
    Sitemap,
    /// A page fetched again on the freshness loop's schedule (a hub, see `revisits`): queued
    /// although the seen-set has it, fetched with a conditional request.
    Revisit,
}

/// Extensions of resources that are never HTML pages.
const BINARY_EXTENSIONS: &[&str] = &[
    "7z", "aac", "apk", "avi", "avif", "bin", "bmp", "bz2", "css", "csv", "dmg", "doc", "docx", "eot", "epub", "exe",
    "flac", "flv", "gif", "gz", "heic", "ico", "iso", "jar", "jpeg", "jpg", "js", "json", "m4a", "m4v", "mkv", "mov",
    "mp3", "mp4", "mpeg", "mpg", "msi", "odp", "ods", "odt", "ogg", "otf", "pdf", "png", "ppt", "pptx", "psd", "rar",
    "rpm", "rss", "svg", "tar", "tgz", "tif", "tiff", "ttf", "wav", "webm", "webp", "wmv", "woff", "woff2", "xls",
    "xlsx", "xml", "xz", "zip", "zst", "atom", "deb", "swf", "wasm",
];

/// Extensions that are HTML pages.
const HTML_EXTENSIONS: &[&str] = &["html", "htm", "xhtml", "shtml", "php", "asp", "aspx", "jsp", "cfm", "cgi", "pl"];

/// Path segments that mark time-sensitive content.
const NEWS_SEGMENTS: &[&str] =
    &["news", "blog", "blogs", "article", "articles", "post", "posts", "story", "stories", "press", "updates"];

fn last_segment(url: &Url) -> &str {
    url.path().rsplit('/').next().unwrap_or("")
}

fn extension(url: &Url) -> Option<String> {
    let last = last_segment(url);
    let (stem, ext) = last.rsplit_once('.')?;
    if stem.is_empty() || ext.is_empty() || ext.len() > 5 {
        return None;
    }
    Some(ext.to_ascii_lowercase())
}

/// True for URLs of binary or non-page resources (images, archives, media, documents, feeds).
pub fn is_binary(url: &Url, kind: UrlKind) -> bool {
    match (kind, extension(url)) {
        (UrlKind::Sitemap | UrlKind::Revisit, _) => false,
        (UrlKind::Page, Some(ext)) => BINARY_EXTENSIONS.contains(&ext.as_str()),
        (UrlKind::Page, None) => false,
    }
}

/// True when the path looks like an HTML page: a directory, no extension, or a page extension.
pub fn looks_like_html(url: &Url) -> bool {
    match extension(url) {
        None => true,
        Some(ext) => HTML_EXTENSIONS.contains(&ext.as_str()),
    }
}

/// True for news- and blog-looking URLs: a news-like path segment or a `/yyyy/mm/` date.
pub fn looks_like_news(url: &Url) -> bool {
    let segments: Vec<&str> = url.path().split('/').filter(|s| !s.is_empty()).collect();
    if segments.iter().any(|s| NEWS_SEGMENTS.contains(&s.to_ascii_lowercase().as_str())) {
        return true;
    }
    if let Some(host) = url.host_str() {
        if host.starts_with("news.") || host.starts_with("blog.") {
            return true;
        }
    }
    segments.windows(2).any(|w| {
        let year = w[0].len() == 4 && w[0].parse::<u32>().is_ok_and(|y| (1990..=2100).contains(&y));
        let month = (1..=2).contains(&w[1].len()) && w[1].parse::<u32>().is_ok_and(|m| (1..=12).contains(&m));
        year && month
    })
}

/// What each known inlink adds to a page's priority (up to the cap).
pub const INLINK_WEIGHT: f32 = 0.2;

/// What a link found on a hub page adds to its priority.
pub const HUB_BOOST: f32 = 0.5;

/// Priority of a URL: higher is fetched sooner.
pub fn score(url: &Url, kind: UrlKind, depth: u32, inlinks: u32, inlink_cap: u32) -> f32 {
    match kind {
        UrlKind::Sitemap => return 10.0,
        UrlKind::Revisit => return 5.0,
        UrlKind::Page => {}
    }
    let mut s = 1.0 - 0.1 * depth as f32 + INLINK_WEIGHT * inlinks.min(inlink_cap) as f32;
    if looks_like_news(url) {
        s += 0.5;
    }
    if looks_like_html(url) {
        s += 0.2;
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    #[test]
    fn binaries_are_recognised() {
        assert!(is_binary(&u("http://e.com/a/photo.JPG"), UrlKind::Page));
        assert!(is_binary(&u("http://e.com/file.tar.gz"), UrlKind::Page));
        assert!(!is_binary(&u("http://e.com/sitemap.xml.gz"), UrlKind::Sitemap));
        assert!(!is_binary(&u("http://e.com/a/page.html"), UrlKind::Page));
        assert!(!is_binary(&u("http://e.com/v1.2/docs"), UrlKind::Page));
        assert!(!is_binary(&u("http://e.com/.well-known"), UrlKind::Page));
    }

    #[test]
    fn html_and_news_detection() {
        assert!(looks_like_html(&u("http://e.com/a/")));
        assert!(looks_like_html(&u("http://e.com/index.php?x=1")));
        assert!(!looks_like_html(&u("http://e.com/data.csv")));
        assert!(looks_like_news(&u("http://e.com/news/world")));
        assert!(looks_like_news(&u("http://e.com/2024/05/some-slug")));
        assert!(looks_like_news(&u("http://blog.e.com/x")));
        assert!(!looks_like_news(&u("http://e.com/2024/99/x")));
        assert!(!looks_like_news(&u("http://e.com/about")));
    }

    #[test]
    fn weights_follow_the_design() {
        let plain = u("http://e.com/about");
        let base = score(&plain, UrlKind::Page, 0, 0, 5);
        assert!((score(&plain, UrlKind::Page, 3, 0, 5) - (base - 0.3)).abs() < 1e-6);
        assert!((score(&plain, UrlKind::Page, 0, 2, 5) - (base + 0.4)).abs() < 1e-6);
        assert_eq!(score(&plain, UrlKind::Page, 0, 50, 5), score(&plain, UrlKind::Page, 0, 5, 5), "inlinks capped");
        assert!((score(&u("http://e.com/news/x"), UrlKind::Page, 0, 0, 5) - (base + 0.5)).abs() < 1e-6);
        assert!(score(&u("http://e.com/x.pdf"), UrlKind::Page, 0, 0, 5) < base);
        assert!(score(&u("http://e.com/sitemap.xml"), UrlKind::Sitemap, 0, 0, 5) > base + 1.0);
    }
}
