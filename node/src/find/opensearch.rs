//! `/opensearch.xml`: the OpenSearch 1.1 description a browser reads to offer "add Weft as a
//! search engine" (the search page's `<head>` links it). Its templates must be absolute, so
//! they name the address the request reached — or `search_page.public_url` behind a proxy.

use super::html::escape;

/// The name browsers show (OpenSearch's `ShortName`: 16 characters at most).
pub const SHORT_NAME: &str = "Weft";

/// The description for a search page reached at `base` (`http://host:port`, no trailing slash).
pub fn description(base: &str) -> String {
    let base = escape(base.trim_end_matches('/'));
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
         <OpenSearchDescription xmlns=\"http://a9.com/-/spec/opensearch/1.1/\">\n\
         \x20 <ShortName>{SHORT_NAME}</ShortName>\n\
         \x20 <Description>Search the pages a Weft peer-to-peer network crawled, by meaning.</Description>\n\
         \x20 <InputEncoding>UTF-8</InputEncoding>\n\
         \x20 <OutputEncoding>UTF-8</OutputEncoding>\n\
         \x20 <Url type=\"text/html\" method=\"get\" template=\"{base}/find?q={{searchTerms}}&amp;page={{startPage?}}\"/>\n\
         \x20 <Url type=\"application/json\" method=\"get\" template=\"{base}/find.json?q={{searchTerms}}&amp;page={{startPage?}}\"/>\n\
         \x20 <Url type=\"application/opensearchdescription+xml\" rel=\"self\" template=\"{base}/opensearch.xml\"/>\n\
         </OpenSearchDescription>\n"
    )
}

/// The base a request reached: `http://` and its `Host`, when that is a plain authority
/// (a name or an address and a port; nothing that could break out of the XML or the URL).
pub fn base_of(host: Option<&str>) -> Option<String> {
    let host = host?;
    let ok = !host.is_empty()
        && host.len() <= 255
        && host.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':' | '[' | ']' | '_'));
    ok.then(|| format!("http://{host}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_host_header_that_is_no_plain_authority_gives_no_base() {
        assert_eq!(base_of(Some("127.0.0.1:7701")).as_deref(), Some("http://127.0.0.1:7701"));
        assert_eq!(base_of(Some("[::1]:7701")).as_deref(), Some("http://[::1]:7701"));
        for bad in ["", "a\"b", "a/b", "a b", "x<y>", "evil.test/#"] {
            assert_eq!(base_of(Some(bad)), None, "{bad:?}");
        }
        assert_eq!(base_of(None), None);
    }
}
