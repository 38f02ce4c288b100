//! The HTTP fetch engine (tier 1: plain HTTP with reqwest).
//!
//! One pooled client for the whole node: HTTP/1.1 and HTTP/2 (ALPN), gzip and brotli, connect,
//! per-read and total timeouts, the SSRF-guarded resolver, no proxy from the environment. The
//! client never follows redirects itself: each hop goes back through the frontier so that its
//! target is normalized, deduplicated, checked against its own host's robots.txt and waits its
//! host's politeness delay like any other URL. Bodies are streamed and cut off at the cap
//! instead of being buffered whole. A revisit is a conditional request (`If-None-Match`,
//! `If-Modified-Since`); a 304 comes back as [`Fetched::NotModified`]. A refusal whose body is a
//! bot check comes back as [`Fetched::Challenge`], so the crawl can tell a blocked host.

use crate::guard::{check_literal, Blocked, GuardedResolver, Reach, NO_CONTACT};
use bytes::Bytes;
use reqwest::header::{HeaderMap, CONTENT_TYPE, LOCATION, RETRY_AFTER};
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use url::Url;
use weft_config::FetchConfig;
use weft_frontier::health::is_challenge;
pub use weft_frontier::revisits::Validators;

/// A response the crawler can act on.
#[derive(Debug)]
pub enum Fetched {
    /// 2xx with an acceptable content type and a body within the cap; `validators` are its
    /// `ETag` and `Last-Modified`, for a conditional request next time.
    Body {
        status: u16,
        content_type: Option<String>,
        content_language: Option<String>,
        body: Bytes,
        validators: Validators,
        /// The exchange's head, for a node that keeps responses (`crawl.keep_responses`).
        head: Box<HttpHead>,
    },
    /// 304: the page did not change since the validators sent.
    NotModified,
    /// A bot-check page (a captcha, a "checking your browser" challenge) instead of the page,
    /// with a 4xx or 5xx status (one with 2xx is a [`Fetched::Body`] the crawl recognizes).
    Challenge { status: u16 },
    /// 3xx with a `Location`.
    Redirect { status: u16, location: String },
    /// 429 or 503: slow down.
    RateLimited { status: u16, retry_after: Option<Duration> },
    /// Any other non-2xx status.
    Status { status: u16 },
}

/// The request sent and the head of the response received: what a WARC record needs besides
/// the body. Empty for a page that came from elsewhere (the browser's document). Held as
/// reqwest has them (the response's map is the one the fetch reads anyway): turned into text
/// only for a node that keeps responses.
#[derive(Debug, Clone, Default)]
pub struct HttpHead {
    pub version: reqwest::Version,
    /// Response headers (repeated names kept).
    pub headers: HeaderMap,
    /// Request headers sent: this request's, and the client's own reqwest adds when it sends.
    pub request: HeaderMap,
}

/// Headers as text, in order.
pub fn header_list(headers: &HeaderMap) -> Vec<(String, String)> {
    headers.iter().map(|(k, v)| (k.as_str().to_string(), String::from_utf8_lossy(v.as_bytes()).into_owned())).collect()
}

/// Why a fetch produced nothing usable. [`FetchError::kind`] names are what `/status` counts.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    #[error(transparent)]
    Blocked(#[from] Blocked),
    #[error("DNS resolution failed: {0}")]
    Dns(String),
    #[error("connection failed: {0}")]
    Connect(String),
    #[error("timed out")]
    Timeout,
    #[error("body exceeds {limit} bytes")]
    BodyTooLarge { limit: u64 },
    #[error("content type {0:?} is not HTML")]
    NotHtml(String),
    #[error("redirect without a usable Location header")]
    BadRedirect,
    #[error("HTTP error: {0}")]
    Http(String),
}

impl FetchError {
    pub fn kind(&self) -> &'static str {
        match self {
            FetchError::Blocked(b) if b.reason == NO_CONTACT => "no_contact",
            FetchError::Blocked(_) => "ssrf_blocked",
            FetchError::Dns(_) => "dns",
            FetchError::Connect(_) => "connect",
            FetchError::Timeout => "timeout",
            FetchError::BodyTooLarge { .. } => "body_too_large",
            FetchError::NotHtml(_) => "not_html",
            FetchError::BadRedirect => "bad_redirect",
            FetchError::Http(_) => "http",
        }
    }

    /// Worth retrying later (the same request may succeed).
    pub fn is_transient(&self) -> bool {
        matches!(self, FetchError::Dns(_) | FetchError::Connect(_) | FetchError::Timeout | FetchError::Http(_))
    }

    fn from_reqwest(e: reqwest::Error) -> FetchError {
        if e.is_timeout() {
            return FetchError::Timeout;
        }
        // The guard's refusal travels as the source of a connect error.
        let mut source: Option<&(dyn std::error::Error + 'static)> = Some(&e);
        while let Some(s) = source {
            if let Some(b) = s.downcast_ref::<Blocked>() {
                return FetchError::Blocked(b.clone());
            }
            if let Some(io) = s.downcast_ref::<std::io::Error>() {
                if io.kind() == std::io::ErrorKind::TimedOut {
                    return FetchError::Timeout;
                }
            }
            source = s.source();
        }
        let text = error_chain(&e);
        if e.is_connect() {
            if text.contains("dns error") || text.contains("failed to lookup") || text.contains("no addresses") {
                FetchError::Dns(text)
            } else {
                FetchError::Connect(text)
            }
        } else {
            FetchError::Http(text)
        }
    }
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

/// What a fetch expects to find, which decides the content types accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expect {
    Html,
    /// Sitemaps: XML, gzip or text.
    Sitemap,
    /// robots.txt: anything; the body is truncated at the robots cap instead of failing.
    Robots,
    /// A browser's subresource (script, stylesheet, data): any content type.
    Resource,
}

/// The node's HTTP client.
#[derive(Clone)]
pub struct Fetcher {
    client: reqwest::Client,
    max_body: u64,
    robots_max: u64,
    reach: Reach,
    /// The User-Agent the client sends (validated printable ASCII), for the request kept.
    user_agent: Option<reqwest::header::HeaderValue>,
}

impl Fetcher {
    pub fn new(cfg: &FetchConfig, robots_max_bytes: u64) -> Result<Fetcher, reqwest::Error> {
        let reach = Reach::of(cfg);
        let resolver = GuardedResolver::new(cfg.resolve.clone(), reach);
        let client = reqwest::Client::builder()
            .user_agent(cfg.user_agent_header())
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .dns_resolver(Arc::new(resolver))
            .connect_timeout(Duration::from_millis(cfg.connect_timeout_ms))
            .read_timeout(Duration::from_millis(cfg.read_timeout_ms))
            .timeout(Duration::from_millis(cfg.total_timeout_ms))
            .pool_max_idle_per_host(2)
            .pool_idle_timeout(Duration::from_secs(60))
            .tcp_nodelay(true)
            .build()?;
        Ok(Fetcher {
            client,
            max_body: cfg.max_body_bytes,
            robots_max: robots_max_bytes,
            reach,
            user_agent: reqwest::header::HeaderValue::from_str(&cfg.user_agent_header()).ok(),
        })
    }

    /// One GET, no redirect following.
    pub async fn fetch(&self, url: &Url, expect: Expect) -> Result<Fetched, FetchError> {
        self.fetch_if_changed(url, expect, None).await
    }

    /// One GET, conditional on the page having changed since it was served with `validators`
    /// (`If-None-Match`, `If-Modified-Since`): [`Fetched::NotModified`] if it did not.
    pub async fn fetch_if_changed(
        &self,
        url: &Url,
        expect: Expect,
        validators: Option<&Validators>,
    ) -> Result<Fetched, FetchError> {
        check_literal(url, self.reach)?;
        let accept = match expect {
            Expect::Html => "text/html,application/xhtml+xml;q=0.9,*/*;q=0.1",
            Expect::Sitemap => "application/xml,text/xml;q=0.9,*/*;q=0.5",
            Expect::Robots => "text/plain,*/*;q=0.5",
            Expect::Resource => "*/*",
        };
        let mut request = self.client.get(url.clone()).header(reqwest::header::ACCEPT, accept);
        if let Some(v) = validators {
            if let Some(etag) = &v.etag {
                request = request.header(reqwest::header::IF_NONE_MATCH, etag);
            }
            if let Some(date) = &v.last_modified {
                request = request.header(reqwest::header::IF_MODIFIED_SINCE, date);
            }
        }
        let request = request.build().map_err(FetchError::from_reqwest)?;
        // What goes on the wire: this request's headers, and the client's own that reqwest adds
        // when it sends (its User-Agent, and the encodings it decodes).
        let mut sent = request.headers().clone();
        if let Some(ua) = &self.user_agent {
            sent.insert(reqwest::header::USER_AGENT, ua.clone());
        }
        sent.insert(reqwest::header::ACCEPT_ENCODING, reqwest::header::HeaderValue::from_static("gzip, br"));
        let mut resp = self.client.execute(request).await.map_err(FetchError::from_reqwest)?;
        let status = resp.status().as_u16();
        let version = resp.version();
        let headers = resp.headers().clone();
        if status == 304 {
            return Ok(Fetched::NotModified);
        }
        if matches!(status, 401 | 403 | 429 | 451 | 503) {
            // Bot checks answer with these: a look at the start of the body tells them apart.
            let mut head = Vec::new();
            while head.len() < CHALLENGE_HEAD {
                match resp.chunk().await {
                    Ok(Some(chunk)) => head.extend_from_slice(&chunk[..chunk.len().min(CHALLENGE_HEAD - head.len())]),
                    _ => break,
                }
            }
            if is_challenge(status, &head) {
                return Ok(Fetched::Challenge { status });
            }
        }
        if (300..400).contains(&status) && status != 304 {
            let location = headers.get(LOCATION).and_then(|v| v.to_str().ok()).map(str::trim).unwrap_or("");
            if location.is_empty() {
                return Err(FetchError::BadRedirect);
            }
            return Ok(Fetched::Redirect { status, location: location.to_string() });
        }
        if status == 429 || status == 503 {
            return Ok(Fetched::RateLimited { status, retry_after: retry_after(&headers, SystemTime::now()) });
        }
        if !(200..300).contains(&status) {
            return Ok(Fetched::Status { status });
        }
        let content_type = headers.get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).map(|s| s.to_ascii_lowercase());
        let content_language =
            headers.get(reqwest::header::CONTENT_LANGUAGE).and_then(|v| v.to_str().ok()).map(str::to_string);
        if expect == Expect::Html {
            if let Some(ct) = &content_type {
                let mime = ct.split(';').next().unwrap_or("").trim();
                if !(mime == "text/html" || mime == "application/xhtml+xml" || mime.is_empty()) {
                    return Err(FetchError::NotHtml(mime.to_string()));
                }
            }
        }
        let (limit, truncate) = match expect {
            Expect::Robots => (self.robots_max, true),
            _ => (self.max_body, false),
        };
        if let Some(len) = resp.content_length() {
            if len > limit && !truncate {
                return Err(FetchError::BodyTooLarge { limit });
            }
        }
        let mut body = Vec::new();
        while let Some(chunk) = resp.chunk().await.map_err(FetchError::from_reqwest)? {
            let room = (limit as usize).saturating_sub(body.len());
            if chunk.len() > room {
                if truncate {
                    body.extend_from_slice(&chunk[..room]);
                    break;
                }
                return Err(FetchError::BodyTooLarge { limit });
            }
            body.extend_from_slice(&chunk);
        }
        if expect == Expect::Html && content_type.is_none() && !looks_like_html(&body) {
            return Err(FetchError::NotHtml("(none, and the body does not look like HTML)".into()));
        }
        let header =
            |name| headers.get(name).and_then(|v: &reqwest::header::HeaderValue| v.to_str().ok()).map(str::to_string);
        let validators =
            Validators { etag: header(reqwest::header::ETAG), last_modified: header(reqwest::header::LAST_MODIFIED) };
        let head = Box::new(HttpHead { version, headers, request: sent });
        Ok(Fetched::Body { status, content_type, content_language, body: Bytes::from(body), validators, head })
    }
}

/// How much of a refusal's body is read to recognize a bot check.
const CHALLENGE_HEAD: usize = 16 * 1024;

/// `Retry-After` as seconds or an HTTP date.
pub fn retry_after(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    let value = headers.get(RETRY_AFTER)?.to_str().ok()?.trim();
    if let Ok(secs) = value.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    let when = httpdate::parse_http_date(value).ok()?;
    Some(when.duration_since(now).unwrap_or(Duration::ZERO))
}

/// Sniffs an untyped body: markup within the first bytes.
fn looks_like_html(body: &[u8]) -> bool {
    let head = &body[..body.len().min(1024)];
    let text = String::from_utf8_lossy(head).to_ascii_lowercase();
    let t = text.trim_start_matches('\u{feff}').trim_start();
    t.starts_with("<!doctype html") || t.starts_with("<html") || t.contains("<head") || t.contains("<body")
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    #[test]
    fn retry_after_seconds_and_date() {
        let now = SystemTime::now();
        let mut h = HeaderMap::new();
        h.insert(RETRY_AFTER, HeaderValue::from_static("120"));
        assert_eq!(retry_after(&h, now), Some(Duration::from_secs(120)));
        let later = httpdate::fmt_http_date(now + Duration::from_secs(3600));
        h.insert(RETRY_AFTER, HeaderValue::from_str(&later).unwrap());
        let d = retry_after(&h, now).unwrap();
        assert!(d > Duration::from_secs(3590) && d <= Duration::from_secs(3600));
        h.insert(RETRY_AFTER, HeaderValue::from_static("soon"));
        assert_eq!(retry_after(&h, now), None);
    }

    #[test]
    fn sniffing() {
        assert!(looks_like_html(b"\xef\xbb\xbf  <!DOCTYPE html><p>"));
        assert!(looks_like_html(b"<html>"));
        assert!(!looks_like_html(b"%PDF-1.4"));
        assert!(!looks_like_html(b"{\"a\":1}"));
    }
}
