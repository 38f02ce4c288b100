//! Outbound links of a page, absolute and normalized with the frontier's normalizer, so the
//! URL a link carries here is byte-for-byte the URL the seen-set will test.

use crate::dom::RawLink;
use std::collections::BTreeMap;
use url::Url;

/// One outbound link.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Link {
    #[serde(serialize_with = "crate::ser_url")]
    pub url: Url,
    /// Visible anchor text, whitespace collapsed.
    pub text: String,
    /// `rel` tokens, lowercased (`nofollow`, `ugc`, `sponsored`, `next`, ...).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rel: Vec<String>,
    /// `rel` contains `nofollow`, `ugc` or `sponsored`: the site asks crawlers not to follow it.
    pub nofollow: bool,
    /// The link sits in the main content (not navigation, sidebars or footers).
    pub in_content: bool,
}

/// The links of a page after resolution.
pub struct Resolved {
    /// Unique links in document order.
    pub links: Vec<Link>,
    /// How many the normalizer rejected, by kind.
    pub rejected: BTreeMap<&'static str, u32>,
    /// The normalized URL of every raw link, by its index (duplicates included), so content
    /// blocks can name their links without normalizing them again.
    pub by_raw: Vec<Option<Url>>,
}

/// Resolves and normalizes the raw links of a walk. Hidden links never reach here (the walk
/// skips hidden subtrees). Rejections are counted by kind (`url_scheme` for
/// `javascript:`/`mailto:`, `url_userinfo`, `url_too_long`, ...). Duplicate URLs keep their
/// first occurrence.
pub fn resolve(raw: &[RawLink], base: &Url, in_content: impl Fn(&RawLink) -> bool) -> Resolved {
    let mut links = Vec::with_capacity(raw.len());
    let mut seen = std::collections::HashSet::with_capacity(raw.len());
    let mut rejected = BTreeMap::new();
    let mut by_raw = Vec::with_capacity(raw.len());
    for r in raw {
        let href = r.href.trim();
        if href.is_empty() || href.starts_with('#') {
            by_raw.push(None);
            continue;
        }
        let url = match weft_url::normalize(href, Some(base)) {
            Ok(url) => url,
            Err(e) => {
                *rejected.entry(e.kind()).or_insert(0) += 1;
                by_raw.push(None);
                continue;
            }
        };
        by_raw.push(Some(url.clone()));
        if !seen.insert(url.as_str().to_string()) {
            continue;
        }
        let rel: Vec<String> = r.rel.split_ascii_whitespace().map(|t| t.to_ascii_lowercase()).collect();
        let nofollow = rel.iter().any(|t| matches!(t.as_str(), "nofollow" | "ugc" | "sponsored"));
        links.push(Link { url, text: r.text.clone(), rel, nofollow, in_content: in_content(r) });
    }
    Resolved { links, rejected, by_raw }
}

#[cfg(test)]
mod tests {
    use crate::extract;
    use url::Url;

    fn page() -> Url {
        Url::parse("http://a.test/dir/page.html").unwrap()
    }

    fn links(html: &str) -> Vec<crate::Link> {
        extract(html.as_bytes(), &[], &page()).links
    }

    #[test]
    fn resolves_relative_and_base_href_and_normalizes() {
        let html = r##"<html><head><base href="http://cdn.test/root/"></head><body>
            <a href="x.html#frag">X <b>bold</b></a><a href="/abs?utm_source=x&b=2&a=1">abs</a><a href="#top">skip</a>
            <a href=" HTTP://B.test:80/ ">b</a><a>no href</a><a href="mailto:x@y.z">mail</a>
            <area href="map.html"><a href="/abs?a=1&b=2">duplicate</a></body></html>"##;
        let links = links(html);
        let urls: Vec<_> = links.iter().map(|l| l.url.as_str()).collect();
        assert_eq!(
            urls,
            [
                "http://cdn.test/root/x.html",
                "http://cdn.test/abs?a=1&b=2",
                "http://b.test/",
                "http://cdn.test/root/map.html"
            ]
        );
        assert_eq!(links[0].text, "X bold");
    }

    #[test]
    fn nofollow_and_rel_are_reported() {
        let links =
            links(r#"<a rel="NoFollow noopener" href="/a">a</a><a rel="ugc" href="/b">b</a><a href="/c">c</a>"#);
        assert_eq!(links.iter().map(|l| l.nofollow).collect::<Vec<_>>(), [true, true, false]);
        assert_eq!(links[0].rel, ["nofollow", "noopener"]);
    }

    #[test]
    fn hidden_links_are_skipped() {
        let html = r#"<body><p>Text <a href="/seen">seen</a> <a href="/h1" style="display: none">h</a>
            <span hidden><a href="/h2">h</a></span> <a href="/h3" aria-hidden="true">h</a>
            <a href="/h4" class="sr-only">h</a></p></body>"#;
        let urls: Vec<_> = links(html).into_iter().map(|l| l.url.path().to_string()).collect();
        assert_eq!(urls, ["/seen"]);
    }

    #[test]
    fn links_know_whether_they_are_in_the_content() {
        let para = "This is a long paragraph of article prose, with commas, and enough words to count as content. ";
        let html = format!(
            r#"<body><nav><a href="/home">Home</a></nav><article><p>{para}<a href="/cited">a cited source</a> {para}</p>
            <p>{para}{para}</p></article><footer><a href="/about">About</a></footer></body>"#
        );
        let links = links(&html);
        let flags: Vec<_> = links.iter().map(|l| (l.url.path().to_string(), l.in_content)).collect();
        assert_eq!(flags, [("/home".to_string(), false), ("/cited".to_string(), true), ("/about".to_string(), false)]);
    }

    #[test]
    fn broken_markup_never_fails() {
        let nasty = [
            "<a href=\"/x\"<<p>>",
            "<a href==/y>y</a>",
            "\0<a\0 href='/z'>",
            "</a></div><a href='/w'>",
            &"<div>".repeat(20_000),
        ];
        for html in nasty {
            let _ = links(html);
        }
        assert_eq!(links("<a href='/z'>z")[0].url.as_str(), "http://a.test/z");
    }
}
