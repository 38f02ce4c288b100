//! Sitemaps (sitemaps.org protocol): `<urlset>` of pages or `<sitemapindex>` of sitemaps,
//! plain or gzipped.

use quick_xml::events::Event;
use quick_xml::Reader;
use std::io::Read;
use url::Url;

/// The protocol's own limit for an uncompressed sitemap; a bigger one is cut off there, which
/// also defuses gzip bombs.
pub const MAX_SITEMAP_BYTES: u64 = 50 * 1024 * 1024;
/// The protocol's limit of entries per file.
pub const MAX_SITEMAP_ENTRIES: usize = 50_000;

/// What a sitemap lists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sitemap {
    /// Page URLs (`<urlset>`).
    Pages(Vec<Url>),
    /// Further sitemaps (`<sitemapindex>`).
    Index(Vec<Url>),
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SitemapError {
    #[error("sitemap is not valid gzip: {0}")]
    Gzip(String),
    #[error("sitemap XML is malformed: {0}")]
    Xml(String),
    #[error("document is neither <urlset> nor <sitemapindex>")]
    NotASitemap,
}

impl SitemapError {
    pub fn kind(&self) -> &'static str {
        match self {
            SitemapError::Gzip(_) => "sitemap_gzip",
            SitemapError::Xml(_) => "sitemap_xml",
            SitemapError::NotASitemap => "sitemap_not_sitemap",
        }
    }
}

/// Parses a sitemap body; gzip is detected by its magic bytes. `<loc>` values are resolved
/// against `sitemap_url`; ones that do not parse are skipped.
pub fn parse_sitemap(body: &[u8], sitemap_url: &Url) -> Result<Sitemap, SitemapError> {
    let inflated;
    let xml: &[u8] = if body.starts_with(&[0x1f, 0x8b]) {
        let mut out = Vec::new();
        flate2::read::MultiGzDecoder::new(body)
            .take(MAX_SITEMAP_BYTES)
            .read_to_end(&mut out)
            .map_err(|e| SitemapError::Gzip(e.to_string()))?;
        inflated = out;
        &inflated
    } else {
        body
    };
    let mut reader = Reader::from_reader(xml);
    reader.config_mut().trim_text(true);
    let mut root: Option<bool> = None; // Some(true) = index
    let mut in_loc = false;
    let mut urls = Vec::new();
    let mut buf = Vec::new();
    loop {
        match reader.read_event_into(&mut buf) {
            Ok(Event::Start(e)) => {
                let name = e.local_name();
                let name = name.as_ref();
                if root.is_none() {
                    root = match name {
                        b"urlset" => Some(false),
                        b"sitemapindex" => Some(true),
                        _ => return Err(SitemapError::NotASitemap),
                    };
                } else if name == b"loc" {
                    in_loc = true;
                }
            }
            Ok(Event::End(e)) if e.local_name().as_ref() == b"loc" => in_loc = false,
            Ok(Event::Text(t)) if in_loc => {
                let text = match t.unescape() {
                    Ok(text) => text.into_owned(),
                    Err(_) => String::from_utf8_lossy(&t).into_owned(),
                };
                if let Ok(u) = sitemap_url.join(text.trim()) {
                    urls.push(u);
                }
            }
            Ok(Event::CData(t)) if in_loc => {
                if let Ok(u) = sitemap_url.join(String::from_utf8_lossy(&t).trim()) {
                    urls.push(u);
                }
            }
            Ok(Event::Eof) => break,
            Err(e) => {
                if urls.is_empty() {
                    return Err(SitemapError::Xml(e.to_string()));
                }
                break; // keep what was read before the damage
            }
            _ => {}
        }
        if urls.len() >= MAX_SITEMAP_ENTRIES {
            break;
        }
        buf.clear();
    }
    match root {
        Some(true) => Ok(Sitemap::Index(urls)),
        Some(false) => Ok(Sitemap::Pages(urls)),
        None => Err(SitemapError::NotASitemap),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn base() -> Url {
        Url::parse("http://a.test/sitemap.xml").unwrap()
    }

    #[test]
    fn urlset_and_index() {
        let xml = br#"<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
            <url><loc>http://a.test/1?x=1&amp;y=2</loc><lastmod>2024-01-01</lastmod></url>
            <url><loc> /2 </loc></url><url><loc><![CDATA[http://a.test/3]]></loc></url></urlset>"#;
        let Sitemap::Pages(urls) = parse_sitemap(xml, &base()).unwrap() else { panic!() };
        let urls: Vec<_> = urls.iter().map(Url::as_str).collect();
        assert_eq!(urls, ["http://a.test/1?x=1&y=2", "http://a.test/2", "http://a.test/3"]);
        let idx = br#"<sitemapindex><sitemap><loc>http://a.test/s1.xml.gz</loc></sitemap></sitemapindex>"#;
        assert_eq!(
            parse_sitemap(idx, &base()).unwrap(),
            Sitemap::Index(vec![Url::parse("http://a.test/s1.xml.gz").unwrap()])
        );
    }

    #[test]
    fn gzip_is_detected() {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(b"<urlset><url><loc>http://a.test/z</loc></url></urlset>").unwrap();
        let body = gz.finish().unwrap();
        assert_eq!(
            parse_sitemap(&body, &base()).unwrap(),
            Sitemap::Pages(vec![Url::parse("http://a.test/z").unwrap()])
        );
    }

    #[test]
    fn garbage_is_a_typed_error() {
        assert_eq!(parse_sitemap(b"<html><body>hi</body></html>", &base()), Err(SitemapError::NotASitemap));
        assert!(matches!(parse_sitemap(&[0x1f, 0x8b, 1, 2, 3], &base()), Err(SitemapError::Gzip(_))));
        assert_eq!(parse_sitemap(b"", &base()), Err(SitemapError::NotASitemap));
        let _ = parse_sitemap(b"<urlset><url><loc>http://a.test/1</loc></url><url><loc>", &base());
        let _ = parse_sitemap(&[0xff, 0xfe, 0x00, 0x3c], &base());
    }
}
