//! Outbound links of an HTML page.

use scraper::{Html, Selector};
use std::sync::OnceLock;
use url::Url;

/// One outbound link, resolved to an absolute URL (not yet normalized: that is the
/// frontier's job, so there is exactly one normalizer).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    pub url: Url,
    /// Visible anchor text, whitespace collapsed.
    pub text: String,
    /// `rel="nofollow"` (or `ugc`/`sponsored`): the site asks crawlers not to follow it.
    pub nofollow: bool,
}

fn selectors() -> &'static (Selector, Selector) {
    static S: OnceLock<(Selector, Selector)> = OnceLock::new();
    S.get_or_init(|| {
        (
            Selector::parse("base[href]").expect("valid selector"),
            Selector::parse("a[href], area[href]").expect("valid selector"),
        )
    })
}

/// Extracts the links of `html`, resolved against `<base href>` (when valid) or `page_url`.
///
/// Parsing never fails: html5ever recovers from any markup, and hrefs that do not resolve to a
/// URL are skipped. `javascript:`, `mailto:` and other schemes are returned as they are; the
/// frontier's normalizer rejects them with a typed reason.
pub fn extract_links(html: &str, page_url: &Url) -> Vec<Link> {
    let doc = Html::parse_document(html);
    let (base_sel, link_sel) = selectors();
    let base = doc
        .select(base_sel)
        .next()
        .and_then(|b| b.value().attr("href"))
        .and_then(|href| page_url.join(href.trim()).ok())
        .unwrap_or_else(|| page_url.clone());
    let mut links = Vec::new();
    for el in doc.select(link_sel) {
        let Some(href) = el.value().attr("href") else { continue };
        let href = href.trim();
        if href.is_empty() || href.starts_with('#') {
            continue;
        }
        let Ok(url) = base.join(href) else { continue };
        let nofollow = el
            .value()
            .attr("rel")
            .map(|rel| {
                rel.split_ascii_whitespace()
                    .any(|r| matches!(r.to_ascii_lowercase().as_str(), "nofollow" | "ugc" | "sponsored"))
            })
            .unwrap_or(false);
        let text = el.text().flat_map(|t| t.split_whitespace()).collect::<Vec<_>>().join(" ");
        links.push(Link { url, text, nofollow });
    }
    links
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page() -> Url {
        Url::parse("http://a.test/dir/page.html").unwrap()
    }

    #[test]
    fn resolves_relative_and_base_href() {
        let html = r##"<html><head><base href="http://cdn.test/root/"></head><body>
            <a href="x.html">X <b>bold</b></a><a href="/abs">abs</a><a href="#top">skip</a>
            <a href=" http://b.test/ ">b</a><a>no href</a><area href="map.html"></body></html>"##;
        let links = extract_links(html, &page());
        let urls: Vec<_> = links.iter().map(|l| l.url.as_str()).collect();
        assert_eq!(
            urls,
            ["http://cdn.test/root/x.html", "http://cdn.test/abs", "http://b.test/", "http://cdn.test/root/map.html"]
        );
        assert_eq!(links[0].text, "X bold");
    }

    #[test]
    fn nofollow_is_flagged() {
        let links = extract_links(
            r#"<a rel="NoFollow noopener" href="/a">a</a><a rel="ugc" href="/b">b</a><a href="/c">c</a>"#,
            &page(),
        );
        assert_eq!(links.iter().map(|l| l.nofollow).collect::<Vec<_>>(), [true, true, false]);
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
            let _ = extract_links(html, &page());
        }
        assert_eq!(extract_links("<a href='/z'>z", &page())[0].url.as_str(), "http://a.test/z");
    }
}
