//! What a rendered page may ask of the web, and what it costs.
//!
//! A page goes to the browser only after the crawler (or the teacher's sample store) already
//! holds its HTML, so its document is answered from that body: rendering never fetches a page
//! a second time. What the page then asks for — scripts, stylesheets, XHRs, iframes — goes
//! through the crawl's rules ([`RenderFetcher`], over `Crawler::fetch_for_browser`), and is
//! made cheap here:
//!
//! - images, fonts, media, favicons, pings, prefetches and the like are refused outright: the
//!   teacher reasons over boxes and text, which none of them change;
//! - the same subresource URL is fetched at most once per node run ([`SubresourceCache`]; the
//!   cache is bounded in bytes, and a refusal is remembered too);
//! - one render answers at most `layouts.max_subresources` subresource fetches; the rest fail
//!   in the browser like blocked requests.

use super::browser::{Fetch, PageRequest, PageResponse};
use super::store::StoredPage;
use crate::crawl::CrawlHandle;
use crate::events::{Event, RenderRequest, Tally};
use parking_lot::Mutex;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use url::Url;
use weft_fetch::fetcher::Fetched;

/// Memory for rendered pages' subresources kept for the run.
const SUBRESOURCE_CACHE_BYTES: usize = 32 << 20;

/// Makes the fetch function of each render (for the render queue and the teacher), sharing
/// one subresource cache for the node's run.
#[derive(Clone)]
pub struct RenderFetcher {
    crawler: CrawlHandle,
    metrics: Arc<dyn Tally>,
    cache: Arc<Mutex<SubresourceCache>>,
    /// Subresources being fetched, one gate each: two renders asking for the same one at once
    /// (pages of one site share their scripts) fetch it once, the second reading the cache.
    fetching: Arc<Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>>,
    /// Subresource fetches one render may make (`layouts.max_subresources`).
    max_subresources: usize,
}

impl RenderFetcher {
    pub fn new(crawler: CrawlHandle, max_subresources: usize) -> RenderFetcher {
        let metrics = crawler.tally();
        let cache = Arc::new(Mutex::new(SubresourceCache::new(SUBRESOURCE_CACHE_BYTES)));
        RenderFetcher { crawler, metrics, cache, fetching: Arc::default(), max_subresources }
    }

    /// The fetch function for one render of `page`: the document is answered from
    /// `document`, the body the crawl already has (fetched once under the crawl's rules only
    /// when there is none); images, fonts, media and favicons are refused; other subresources
    /// come from the node's cache or go out under the crawl's rules (robots.txt, the host's
    /// delay and backoff, the SSRF guard, waiting at most `patience` for a host), at most
    /// `layouts.max_subresources` per render. What they refuse fails in the browser. The
    /// session tells afterwards which document the page was rendered from.
    pub fn for_page(
        &self,
        page: &Url,
        document: Option<StoredPage>,
        patience: Duration,
    ) -> (Fetch, Arc<RenderSession>) {
        let session = Arc::new(RenderSession::new(page.clone(), document, self.max_subresources));
        let this = self.clone();
        let s = session.clone();
        let fetch: Fetch = Arc::new(move |req: PageRequest| {
            let (this, session) = (this.clone(), s.clone());
            Box::pin(async move { this.answer(req, &session, patience).await })
        });
        (fetch, session)
    }

    /// Drops the gate of `url` once no render holds or awaits it (and the gates a cancelled
    /// render left behind, when they pile up).
    fn release(&self, url: &str, gate: Option<Arc<tokio::sync::Mutex<()>>>) {
        let mut fetching = self.fetching.lock();
        // Ours and the map's: nobody else is waiting.
        if gate.is_some_and(|g| Arc::strong_count(&g) <= 2) {
            fetching.remove(url);
        }
        if fetching.len() > 1024 {
            fetching.retain(|_, g| Arc::strong_count(g) > 1);
        }
    }

    async fn answer(&self, req: PageRequest, session: &RenderSession, patience: Duration) -> Option<PageResponse> {
        let m = &self.metrics;
        let decision = decide(&req, &session.page);
        let url = Url::parse(&req.url).ok()?;
        match decision {
            Decision::Refuse(why) => {
                m.count_event(Event::RenderRequest(RenderRequest::Refused(why)));
                return None;
            }
            Decision::Document => {
                if let Some(d) = session.document() {
                    m.count_event(Event::RenderRequest(RenderRequest::DocumentFromCrawl));
                    return Some(document_response(&d));
                }
            }
            Decision::Subresource => {
                if let Some(cached) = self.cache.lock().get(url.as_str()) {
                    m.count_event(Event::RenderRequest(RenderRequest::SubresourceCached));
                    return cached;
                }
                if !session.take_subresource() {
                    m.count_event(Event::RenderRequest(RenderRequest::SubresourceOverCap));
                    return None;
                }
            }
        }
        // Held while this subresource is fetched (documents are not shared: no gate).
        let gate = (decision == Decision::Subresource)
            .then(|| self.fetching.lock().entry(url.as_str().to_string()).or_default().clone());
        let turn = match &gate {
            Some(gate) => Some(gate.clone().lock_owned().await),
            None => None,
        };
        if gate.is_some() {
            if let Some(cached) = self.cache.lock().get(url.as_str()) {
                // Fetched by another render while this one waited.
                drop(turn);
                self.release(url.as_str(), gate);
                m.count_event(Event::RenderRequest(RenderRequest::SubresourceCached));
                return cached;
            }
        }
        let empty = |status: u16| PageResponse { status, headers: Vec::new(), body: Vec::new() };
        let fetched = self.crawler.fetch_for_browser(&url, patience).await;
        if decision == Decision::Document {
            *session.document_failed.lock() = DocumentFailure::of(&fetched);
        }
        let answer = match fetched {
            Ok(Fetched::Body { status, content_type, body, .. }) => {
                if decision == Decision::Document {
                    session.set_document(StoredPage {
                        status,
                        content_type: content_type.clone(),
                        body: body.to_vec(),
                    });
                }
                Some(PageResponse {
                    status,
                    headers: content_type.map(|c| vec![("content-type".to_string(), c)]).unwrap_or_default(),
                    body: body.to_vec(),
                })
            }
            Ok(Fetched::Redirect { status, location }) => {
                Some(PageResponse { status, headers: vec![("location".to_string(), location)], body: Vec::new() })
            }
            Ok(Fetched::RateLimited { status, .. } | Fetched::Status { status } | Fetched::Challenge { status }) => {
                Some(empty(status))
            }
            Ok(Fetched::NotModified) => Some(empty(304)),
            Err(e) => {
                tracing::debug!(url = %url, "browser request refused: {e}");
                None
            }
        };
        if decision == Decision::Subresource {
            m.count_event(Event::RenderRequest(RenderRequest::SubresourceFetched));
            self.cache.lock().put(url.as_str(), answer.clone());
            drop(turn);
            self.release(url.as_str(), gate);
        } else {
            m.count_event(Event::RenderRequest(RenderRequest::DocumentFetched));
        }
        answer
    }
}

/// The browser's answer for a page's own document: the HTML the crawl already fetched.
pub fn document_response(page: &StoredPage) -> PageResponse {
    PageResponse {
        status: page.status,
        headers: vec![(
            "content-type".to_string(),
            page.content_type.clone().unwrap_or_else(|| "text/html; charset=utf-8".to_string()),
        )],
        body: page.body.clone(),
    }
}

/// What to do with one of a rendered page's requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// The page itself: answered from the crawled body (or fetched once if there is none).
    Document,
    /// Never fetched: it cannot change the page's text or layout enough to matter.
    Refuse(&'static str),
    /// A subresource worth fetching (cache first, within the render's cap).
    Subresource,
}

/// Resource types (CDP `Network.ResourceType`, as the browser pool spells them) refused
/// outright.
const REFUSED_TYPES: [&str; 12] = [
    "Image",
    "Font",
    "Media",
    "TextTrack",
    "Ping",
    "Prefetch",
    "Manifest",
    "CspViolationReport",
    "SignedExchange",
    "WebSocket",
    "EventSource",
    "Preflight",
];

/// Decides what to do with `request`, made while rendering `page`.
pub fn decide(request: &PageRequest, page: &Url) -> Decision {
    if request.method != "GET" {
        return Decision::Refuse("method");
    }
    let Ok(url) = Url::parse(&request.url) else { return Decision::Refuse("unparsable") };
    if !matches!(url.scheme(), "http" | "https") {
        return Decision::Refuse("scheme");
    }
    if same_page(&url, page) && request.resource_type == "Document" {
        return Decision::Document;
    }
    if REFUSED_TYPES.contains(&request.resource_type.as_str()) {
        return Decision::Refuse("type");
    }
    let path = url.path().to_ascii_lowercase();
    if path.ends_with("/favicon.ico") || path.ends_with("/apple-touch-icon.png") {
        return Decision::Refuse("favicon");
    }
    const MEDIA: [&str; 14] = [
        ".png", ".jpg", ".jpeg", ".gif", ".webp", ".avif", ".svg", ".ico", ".woff", ".woff2", ".ttf", ".otf", ".mp4",
        ".webm",
    ];
    if MEDIA.iter().any(|ext| path.ends_with(ext)) {
        return Decision::Refuse("media");
    }
    Decision::Subresource
}

/// The page and the URL Chromium asked for are the same document (fragments aside).
fn same_page(a: &Url, b: &Url) -> bool {
    let strip = |u: &Url| {
        let mut u = u.clone();
        u.set_fragment(None);
        u
    };
    strip(a) == strip(b)
}

/// Subresource answers by URL, for the node's run: a script every page of a site includes is
/// fetched once. Bounded in bytes; the oldest entries go first.
pub struct SubresourceCache {
    entries: HashMap<String, Option<PageResponse>>,
    order: VecDeque<String>,
    bytes: usize,
    budget: usize,
}

impl SubresourceCache {
    pub fn new(budget: usize) -> SubresourceCache {
        SubresourceCache { entries: HashMap::new(), order: VecDeque::new(), bytes: 0, budget }
    }

    /// `Some(answer)` if the URL was asked before (`answer` `None`: it was refused then).
    pub fn get(&self, url: &str) -> Option<Option<PageResponse>> {
        self.entries.get(url).cloned()
    }

    pub fn put(&mut self, url: &str, answer: Option<PageResponse>) {
        let size = answer.as_ref().map_or(0, |a| a.body.len()) + url.len();
        if size > self.budget || self.entries.contains_key(url) {
            return;
        }
        while self.bytes + size > self.budget {
            let Some(old) = self.order.pop_front() else { break };
            if let Some(a) = self.entries.remove(&old) {
                self.bytes -= a.as_ref().map_or(0, |a| a.body.len()) + old.len();
            }
        }
        self.bytes += size;
        self.order.push_back(url.to_string());
        self.entries.insert(url.to_string(), answer);
    }
}

/// One render's requests: its document and how many subresources it has used.
pub struct RenderSession {
    pub page: Url,
    document: Mutex<Option<StoredPage>>,
    /// Why the page's own document could not be had during the render (an error status, a
    /// refusal), when it could not: the browser then rendered an error, not the page.
    document_failed: Mutex<Option<DocumentFailure>>,
    subresources: AtomicUsize,
    cap: usize,
}

/// Why a render's document is missing, and whether asking again later may get it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocumentFailure {
    pub reason: String,
    /// A 5xx, a 429, a bot check, a timeout, robots.txt unavailable, the host's delay: the
    /// page may come later. A 4xx, a refusal by robots.txt or the SSRF guard: it will not.
    pub transient: bool,
}

impl DocumentFailure {
    /// What the crawl's answer for a page's document says about the page, when it is not
    /// the page: `None` for a body, and for a redirect — the browser follows it, and the page
    /// it lands on is what is rendered (a redirect met by the fetch after a failed render
    /// leaves the page as before: not indexed, not tried again).
    pub fn of(fetched: &Result<Fetched, weft_fetch::BrowserFetchError>) -> Option<DocumentFailure> {
        use weft_fetch::BrowserFetchError as E;
        let (reason, transient) = match fetched {
            Ok(Fetched::Body { .. }) => return None,
            Ok(Fetched::Status { status }) => (format!("HTTP {status}"), *status >= 500),
            Ok(Fetched::RateLimited { status, .. }) => (format!("HTTP {status} (rate limited)"), true),
            Ok(Fetched::Challenge { status }) => (format!("HTTP {status} bot-check page"), true),
            Ok(Fetched::Redirect { .. }) => return None,
            Ok(Fetched::NotModified) => ("HTTP 304 without a page held".to_string(), false),
            Err(e @ (E::NoHost | E::Disallowed | E::Blocked)) => (e.to_string(), false),
            Err(e @ (E::RobotsUnavailable | E::Impatient)) => (e.to_string(), true),
            Err(e @ E::Fetch { transient, .. }) => (e.to_string(), *transient),
        };
        Some(DocumentFailure { reason, transient })
    }
}

impl RenderSession {
    pub fn new(page: Url, document: Option<StoredPage>, cap: usize) -> RenderSession {
        RenderSession {
            page,
            document: Mutex::new(document),
            document_failed: Mutex::new(None),
            subresources: AtomicUsize::new(0),
            cap,
        }
    }

    /// Why the document could not be had during the render, if it could not.
    pub fn document_failed(&self) -> Option<DocumentFailure> {
        self.document_failed.lock().clone()
    }

    /// The page's HTML: the one given, or the one fetched during the render.
    pub fn document(&self) -> Option<StoredPage> {
        self.document.lock().clone()
    }

    pub fn set_document(&self, d: StoredPage) {
        *self.document.lock() = Some(d);
    }

    /// Takes one of the render's subresource fetches; false once the cap is reached.
    pub fn take_subresource(&self) -> bool {
        self.subresources.fetch_add(1, Ordering::Relaxed) < self.cap
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(url: &str, kind: &str) -> PageRequest {
        PageRequest { url: url.into(), method: "GET".into(), resource_type: kind.into() }
    }

    #[test]
    fn decisions() {
        let page = Url::parse("http://a.test/x/").unwrap();
        assert_eq!(decide(&req("http://a.test/x/", "Document"), &page), Decision::Document);
        assert_eq!(decide(&req("http://a.test/x/#top", "Document"), &page), Decision::Document);
        assert_eq!(decide(&req("http://a.test/frame.html", "Document"), &page), Decision::Subresource);
        assert_eq!(decide(&req("http://a.test/app.js", "Script"), &page), Decision::Subresource);
        assert_eq!(decide(&req("http://a.test/data.json", "Fetch"), &page), Decision::Subresource);
        assert_eq!(decide(&req("http://a.test/site.css", "Stylesheet"), &page), Decision::Subresource);
        assert_eq!(decide(&req("http://a.test/favicon.ico", "Other"), &page), Decision::Refuse("favicon"));
        assert_eq!(decide(&req("http://a.test/logo.png", "Image"), &page), Decision::Refuse("type"));
        assert_eq!(decide(&req("http://a.test/logo.png", "Other"), &page), Decision::Refuse("media"));
        assert_eq!(decide(&req("http://a.test/f.woff2", "Font"), &page), Decision::Refuse("type"));
        assert_eq!(decide(&req("data:text/plain,x", "Other"), &page), Decision::Refuse("scheme"));
        let post = PageRequest { method: "POST".into(), ..req("http://a.test/api", "XHR") };
        assert_eq!(decide(&post, &page), Decision::Refuse("method"));
    }

    #[test]
    fn the_cache_is_bounded_and_remembers_refusals() {
        let mut c = SubresourceCache::new(100);
        let body = |n: usize| Some(PageResponse { status: 200, headers: vec![], body: vec![b'x'; n] });
        c.put("u1", body(40));
        c.put("u2", None);
        assert_eq!(c.get("u2"), Some(None));
        assert_eq!(c.get("u1").unwrap().unwrap().body.len(), 40);
        c.put("u3", body(60));
        assert!(c.get("u1").is_none(), "the oldest went to make room");
        assert!(c.get("u3").is_some());
        c.put("big", body(1000));
        assert!(c.get("big").is_none(), "larger than the budget: not kept");
    }

    #[test]
    fn a_render_has_a_subresource_cap() {
        let s = RenderSession::new(Url::parse("http://a.test/").unwrap(), None, 2);
        assert!(s.take_subresource() && s.take_subresource());
        assert!(!s.take_subresource());
    }
}
