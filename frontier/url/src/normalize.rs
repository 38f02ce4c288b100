//! URL normalization: one spelling per resource, so the seen-set and the queue see one URL.
//!
//! The `url` crate (WHATWG URL parsing) already lowercases scheme and host, converts
//! internationalized hosts to punycode (IDNA), drops default ports and resolves dot-segments.
//! On top of that we drop fragments, strip a trailing dot from the host, normalize
//! percent-encoding in the path (uppercase hex, decode unreserved characters), strip tracking
//! parameters and sort the query — and reject what a crawler must not fetch, with a typed
//! reason so it can be counted.

use std::fmt;
use url::Url;

/// Longest URL accepted after normalization. Longer ones are almost always crawler traps
/// (session ids, calendar pages, recursive paths) and many servers refuse them anyway.
pub const MAX_URL_BYTES: usize = 2048;

/// Why a URL was rejected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NormalizeError {
    Parse(url::ParseError),
    UnsupportedScheme(String),
    /// `user:password@host` URLs leak credentials into logs and queues; never crawled.
    UserInfo,
    NoHost,
    TooLong(usize),
}

impl NormalizeError {
    /// A short, stable name for counting errors by kind.
    pub fn kind(&self) -> &'static str {
        match self {
            NormalizeError::Parse(_) => "url_parse",
            NormalizeError::UnsupportedScheme(_) => "url_scheme",
            NormalizeError::UserInfo => "url_userinfo",
            NormalizeError::NoHost => "url_no_host",
            NormalizeError::TooLong(_) => "url_too_long",
        }
    }
}

impl fmt::Display for NormalizeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NormalizeError::Parse(e) => write!(f, "unparseable URL: {e}"),
            NormalizeError::UnsupportedScheme(s) => {
                write!(f, "unsupported scheme \"{s}\" (only http and https)")
            }
            NormalizeError::UserInfo => write!(f, "URL carries user info"),
            NormalizeError::NoHost => write!(f, "URL has no host"),
            NormalizeError::TooLong(n) => {
                write!(f, "URL is {n} bytes long (limit {MAX_URL_BYTES})")
            }
        }
    }
}

impl std::error::Error for NormalizeError {}

/// Query parameters that only track the visitor and never change the page.
fn is_tracking_param(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    name.starts_with("utm_")
        || matches!(
            name.as_str(),
            "fbclid"
                | "gclid"
                | "gclsrc"
                | "dclid"
                | "gbraid"
                | "wbraid"
                | "msclkid"
                | "yclid"
                | "mc_cid"
                | "mc_eid"
                | "_ga"
                | "_gl"
                | "igshid"
                | "mkt_tok"
                | "oly_anon_id"
                | "oly_enc_id"
                | "vero_id"
                | "_hsenc"
                | "_hsmi"
                | "__hssc"
                | "__hstc"
                | "__hsfp"
                | "hsctatracking"
                | "ref_src"
                | "ref_url"
        )
}

/// Parses `input` (relative to `base` when given) and normalizes it.
pub fn normalize(input: &str, base: Option<&Url>) -> Result<Url, NormalizeError> {
    // Reject absurd inputs before parsing them; normalization can only shrink a URL so much.
    if input.len() > MAX_URL_BYTES * 4 {
        return Err(NormalizeError::TooLong(input.len()));
    }
    let parsed = match base {
        Some(b) => b.join(input.trim()),
        None => Url::parse(input.trim()),
    }
    .map_err(NormalizeError::Parse)?;
    normalize_url(parsed)
}

/// Normalizes an already parsed URL.
pub fn normalize_url(mut url: Url) -> Result<Url, NormalizeError> {
    match url.scheme() {
        "http" | "https" => {}
        other => return Err(NormalizeError::UnsupportedScheme(other.to_string())),
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(NormalizeError::UserInfo);
    }
    let host = url.host_str().ok_or(NormalizeError::NoHost)?;
    if host.is_empty() {
        return Err(NormalizeError::NoHost);
    }
    if let Some(stripped) = host.strip_suffix('.') {
        if stripped.is_empty() {
            return Err(NormalizeError::NoHost);
        }
        let stripped = stripped.to_string();
        url.set_host(Some(&stripped)).map_err(NormalizeError::Parse)?;
    }
    url.set_fragment(None);

    let path = normalize_percent_encoding(url.path());
    if path != url.path() {
        url.set_path(&path);
    }

    if let Some(query) = url.query() {
        let mut params: Vec<&str> = query
            .split('&')
            .filter(|p| !p.is_empty())
            .filter(|p| !is_tracking_param(p.split('=').next().unwrap_or("")))
            .collect();
        params.sort_unstable();
        let query = params.join("&");
        let query = normalize_percent_encoding(&query);
        url.set_query(if query.is_empty() { None } else { Some(&query) });
    }

    let len = url.as_str().len();
    if len > MAX_URL_BYTES {
        return Err(NormalizeError::TooLong(len));
    }
    Ok(url)
}

/// Uppercases percent-escape hex digits and decodes escapes of unreserved characters
/// (RFC 3986 §6.2.2.2): `%7e` and `%7E` both become `~`, `%2f` becomes `%2F`.
fn normalize_percent_encoding(s: &str) -> String {
    if !s.contains('%') {
        return s.to_string();
    }
    let bytes = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            let (h, l) = (bytes[i + 1], bytes[i + 2]);
            if let (Some(hv), Some(lv)) = (hex(h), hex(l)) {
                let c = hv * 16 + lv;
                if c.is_ascii_alphanumeric() || matches!(c, b'-' | b'.' | b'_' | b'~') {
                    out.push(c as char);
                } else {
                    out.push('%');
                    out.push(h.to_ascii_uppercase() as char);
                    out.push(l.to_ascii_uppercase() as char);
                }
                i += 3;
                continue;
            }
        }
        // Copy one whole UTF-8 character (the input is a valid &str).
        let ch_len = utf8_len(bytes[i]);
        out.push_str(&s[i..i + ch_len]);
        i += ch_len;
    }
    out
}

fn hex(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

fn utf8_len(first: u8) -> usize {
    match first {
        0x00..=0x7F => 1,
        0xC0..=0xDF => 2,
        0xE0..=0xEF => 3,
        _ => 4,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(s: &str) -> String {
        normalize(s, None).unwrap().to_string()
    }

    #[test]
    fn lowercases_scheme_and_host_and_drops_default_port_and_fragment() {
        assert_eq!(n("HTTP://Example.COM:80/a/b#frag"), "http://example.com/a/b");
        assert_eq!(n("https://example.com:443"), "https://example.com/");
        assert_eq!(n("https://example.com:8443/x"), "https://example.com:8443/x");
    }

    #[test]
    fn idna_hosts_become_punycode() {
        assert_eq!(n("http://bücher.example/"), "http://xn--bcher-kva.example/");
        assert_eq!(n("http://例え.テスト/"), "http://xn--r8jz45g.xn--zckzah/");
    }

    #[test]
    fn resolves_dot_segments_and_trailing_host_dot() {
        assert_eq!(n("http://example.com/a/./b/../c"), "http://example.com/a/c");
        assert_eq!(n("http://example.com./x"), "http://example.com/x");
    }

    #[test]
    fn sorts_query_and_strips_tracking() {
        assert_eq!(n("http://e.com/p?z=1&utm_source=tw&a=2&fbclid=xyz&UTM_Medium=m&gclid=1"), "http://e.com/p?a=2&z=1");
        assert_eq!(n("http://e.com/p?utm_source=x"), "http://e.com/p");
        assert_eq!(n("http://e.com/p?&&b=1&&a"), "http://e.com/p?a&b=1");
    }

    #[test]
    fn normalizes_percent_encoding() {
        assert_eq!(n("http://e.com/%7euser/%2fx%41"), "http://e.com/~user/%2FxA");
        assert_eq!(n("http://e.com/caf%C3%A9"), "http://e.com/caf%C3%A9");
        assert_eq!(n("http://e.com/a%"), "http://e.com/a%");
        assert_eq!(n("http://e.com/a%4"), "http://e.com/a%4");
    }

    #[test]
    fn resolves_relative_against_base() {
        let base = Url::parse("http://e.com/dir/page.html").unwrap();
        assert_eq!(normalize("../x?b=2&a=1#f", Some(&base)).unwrap().as_str(), "http://e.com/x?a=1&b=2");
        assert_eq!(normalize("//other.org/y", Some(&base)).unwrap().as_str(), "http://other.org/y");
    }

    #[test]
    fn rejects_with_typed_reasons() {
        assert!(matches!(normalize("ftp://e.com/", None), Err(NormalizeError::UnsupportedScheme(s)) if s == "ftp"));
        assert!(matches!(normalize("mailto:a@b.c", None), Err(NormalizeError::UnsupportedScheme(_))));
        assert!(matches!(normalize("javascript:alert(1)", None), Err(NormalizeError::UnsupportedScheme(_))));
        assert_eq!(normalize("http://user:pw@e.com/", None), Err(NormalizeError::UserInfo));
        assert_eq!(normalize("http://user@e.com/", None), Err(NormalizeError::UserInfo));
        assert!(matches!(normalize("not a url", None), Err(NormalizeError::Parse(_))));
        let long = format!("http://e.com/{}", "a".repeat(3000));
        assert!(matches!(normalize(&long, None), Err(NormalizeError::TooLong(_))));
        let huge = format!("http://e.com/{}", "a".repeat(100_000));
        assert!(matches!(normalize(&huge, None), Err(NormalizeError::TooLong(_))));
        assert!(matches!(normalize("http://./", None), Err(NormalizeError::NoHost)));
    }

    #[test]
    fn idempotent() {
        for s in ["HTTP://E.com:80/%7ea/../b?z=1&a=2#x", "https://bücher.example/x?utm_a=1", "http://e.com"] {
            let once = n(s);
            assert_eq!(n(&once), once);
        }
    }

    #[test]
    fn never_panics_on_garbage() {
        let samples = [
            "http://",
            "http://[::1",
            "http://%zz/",
            "http://e.com/%",
            "http://e.com/\u{0}x",
            "http:///x",
            "https://e.com:99999/",
        ];
        for s in samples {
            let _ = normalize(s, None);
        }
        for b in 0u8..=255 {
            let s = format!("http://e.com/{}", b as char);
            let _ = normalize(&s, None);
        }
    }
}
