//! A virtual-host web server on loopback with a request log.

use axum::body::Body;
use axum::extract::{Request as HttpRequest, State};
use axum::http::{header, HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::Response;
use bytes::Bytes;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What a path serves.
#[derive(Debug, Clone)]
pub enum Resource {
    /// 200 `text/html; charset=utf-8`.
    Html(String),
    /// Any status, headers and body.
    Raw { status: u16, headers: Vec<(String, String)>, body: Vec<u8> },
    /// A redirect to `location` (absolute or relative).
    Redirect { status: u16, location: String },
    /// 200 HTML whose body trickles out: `chunk` bytes every `interval`, `chunks` times.
    SlowDrip { chunk: usize, interval: Duration, chunks: usize },
    /// 200 HTML of `bytes` bytes, streamed.
    Huge { bytes: usize },
    /// The n-th request gets the n-th resource; the last one repeats.
    Sequence(Vec<Resource>),
    /// `inner`, answered after `delay`.
    Delayed { delay: Duration, inner: Box<Resource> },
}

impl Resource {
    pub fn status(code: u16) -> Resource {
        Resource::Raw { status: code, headers: vec![], body: vec![] }
    }

    pub fn text(content_type: &str, body: impl Into<Vec<u8>>) -> Resource {
        Resource::Raw { status: 200, headers: vec![("content-type".into(), content_type.into())], body: body.into() }
    }

    pub fn robots(body: &str) -> Resource {
        Resource::text("text/plain", body)
    }
}

/// One virtual host: paths (with query, e.g. `/a?x=1`) to resources.
#[derive(Debug, Clone, Default)]
pub struct Site {
    pub host: String,
    pub routes: HashMap<String, Resource>,
    /// Answers every `/p/{n}` path no route names, when set.
    pub farm: Option<LinkFarm>,
}

/// An endless site of link-heavy pages, made up on request: the shape of the real web, where
/// every page brings dozens of URLs never seen before, so a crawl's frontier grows far faster
/// than it drains. Page `/p/{n}` of a host links to `links` pages: most on the same host, every
/// fifth on another host of `hosts`, all numbered by a hash of (host, n, k) — new URLs almost
/// every time, and the same page always has the same links.
#[derive(Debug, Clone)]
pub struct LinkFarm {
    pub links: usize,
    /// The hosts of the farm, as `name:port`.
    pub hosts: Arc<Vec<String>>,
}

impl LinkFarm {
    /// The HTML of page `n` of `host` (~120 words of text and the links).
    pub fn page(&self, host: &str, n: u64) -> String {
        let h = |k: u64| {
            let x = blake3::hash(format!("{host}/{n}/{k}").as_bytes());
            u64::from_le_bytes(x.as_bytes()[..8].try_into().expect("8 bytes"))
        };
        let mut links = String::new();
        for k in 0..self.links as u64 {
            let v = h(k);
            let target = v % (1 << 40);
            if k % 5 == 4 && !self.hosts.is_empty() {
                let other = &self.hosts[(v >> 40) as usize % self.hosts.len()];
                links.push_str(&format!("<li><a href=\"http://{other}/p/{target}\">elsewhere {target}</a></li>"));
            } else {
                links.push_str(&format!("<li><a href=\"/p/{target}\">page {target}</a></li>"));
            }
        }
        let words = ["crawl", "frontier", "queue", "host", "polite", "index", "search", "vector", "peer", "ring"];
        let text: Vec<&str> = (0..120).map(|i| words[((h(1000 + i / 10) >> (i % 10 * 4)) % 10) as usize]).collect();
        format!(
            "<!doctype html><html><head><title>{host} page {n}</title></head><body><article><h1>Page {n} of {host}</h1>\
             <p>{}</p></article><nav><ul>{links}</ul></nav></body></html>",
            text.join(" ")
        )
    }
}

impl Site {
    pub fn new(host: &str) -> Site {
        Site { host: host.to_string(), routes: HashMap::new(), farm: None }
    }

    /// A [`LinkFarm`] host: robots.txt allows everything, `/` is page 0.
    pub fn link_farm(host: &str, farm: LinkFarm) -> Site {
        let mut site = Site::new(host).with("/robots.txt", Resource::robots("User-agent: *\nAllow: /\n"));
        site.farm = Some(farm);
        site
    }

    pub fn with(mut self, path: &str, r: Resource) -> Site {
        self.routes.insert(path.to_string(), r);
        self
    }

    pub fn html(self, path: &str, html: &str) -> Site {
        self.with(path, Resource::Html(html.to_string()))
    }
}

/// A site of `pages` pages (`/`, `/p/1` … `/p/{pages-1}`), each linking to a few others so the
/// whole site is reachable from `/` by following links only; robots.txt allows everything.
pub fn generated_site(host: &str, pages: usize, links_per_page: usize) -> Site {
    let mut site = Site::new(host).with("/robots.txt", Resource::robots("User-agent: *\nAllow: /\n"));
    for i in 0..pages {
        let mut links = String::new();
        // A tree (i → 2i+1, 2i+2) guarantees reachability; extra links add cross edges.
        for child in [2 * i + 1, 2 * i + 2].into_iter().chain((1..links_per_page).map(|k| (i * 7 + k * 13) % pages)) {
            if child < pages && child != i {
                links.push_str(&format!("<li><a href=\"{}\">page {child}</a></li>\n", page_path(child)));
            }
        }
        let html = format!(
            "<!doctype html><html><head><title>{host} page {i}</title></head><body><article><h1>Page {i} of {host}</h1>\
             <p>Synthetic text for page {i}. Weft crawls politely and remembers what it has seen.</p></article>\
             <nav><ul>{links}</ul></nav></body></html>"
        );
        site = site.html(&page_path(i), &html);
    }
    site
}

fn page_path(i: usize) -> String {
    if i == 0 {
        "/".to_string()
    } else {
        format!("/p/{i}")
    }
}

/// One request as the server saw it.
#[derive(Debug, Clone)]
pub struct Request {
    pub host: String,
    /// Path and query.
    pub path: String,
    pub user_agent: String,
    pub started: Instant,
    /// When the handler returned the response head (bodies may still be streaming).
    pub answered: Instant,
    pub status: u16,
}

struct Shared {
    sites: parking_lot::RwLock<HashMap<String, Site>>,
    log: Mutex<Vec<Request>>,
    counters: Mutex<HashMap<(String, String), usize>>,
    in_flight: AtomicUsize,
}

/// A running server; stops when dropped.
pub struct WebServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
}

impl WebServer {
    /// Starts serving `sites` on 127.0.0.1 with an OS-chosen port. Needs a tokio runtime.
    pub async fn start(sites: Vec<Site>) -> std::io::Result<WebServer> {
        WebServer::start_with(|_| sites).await
    }

    /// Like [`WebServer::start`], for sites that need to know the port (absolute URLs in
    /// sitemaps, robots.txt or redirects).
    pub async fn start_with(sites: impl FnOnce(u16) -> Vec<Site>) -> std::io::Result<WebServer> {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await?;
        WebServer::serve(listener, sites)
    }

    /// Serves on a listener made elsewhere — inside a network namespace of the NAT lab
    /// ([`crate::natlab`]), where this process's own sockets cannot bind.
    pub fn start_on(
        listener: std::net::TcpListener,
        sites: impl FnOnce(u16) -> Vec<Site>,
    ) -> std::io::Result<WebServer> {
        listener.set_nonblocking(true)?;
        WebServer::serve(tokio::net::TcpListener::from_std(listener)?, sites)
    }

    fn serve(listener: tokio::net::TcpListener, sites: impl FnOnce(u16) -> Vec<Site>) -> std::io::Result<WebServer> {
        let addr = listener.local_addr()?;
        let sites = sites(addr.port());
        let shared = Arc::new(Shared {
            sites: parking_lot::RwLock::new(sites.into_iter().map(|s| (s.host.to_ascii_lowercase(), s)).collect()),
            log: Mutex::new(Vec::new()),
            counters: Mutex::new(HashMap::new()),
            in_flight: AtomicUsize::new(0),
        });
        let app = axum::Router::new().fallback(handle).with_state(shared.clone());
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async {
                    let _ = rx.await;
                })
                .await;
        });
        Ok(WebServer { addr, shared, shutdown: Some(tx) })
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// `http://{host}:{port}{path}` for a virtual host.
    pub fn url(&self, host: &str, path: &str) -> String {
        format!("http://{host}:{}{path}", self.port())
    }

    /// Every request received so far, in arrival order.
    pub fn requests(&self) -> Vec<Request> {
        self.shared.log.lock().clone()
    }

    /// Requests being handled right now.
    pub fn in_flight(&self) -> usize {
        self.shared.in_flight.load(Ordering::SeqCst)
    }

    /// The virtual host names, for a resolver override.
    pub fn hosts(&self) -> Vec<String> {
        self.shared.sites.read().keys().cloned().collect()
    }

    /// Serves `site` from now on in place of the site of the same host (a redesign, a
    /// migration): same host, same port, new pages.
    pub fn replace_site(&self, site: Site) {
        self.shared.sites.write().insert(site.host.to_ascii_lowercase(), site);
    }
}

impl Drop for WebServer {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
    }
}

struct InFlight<'a>(&'a AtomicUsize);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

async fn handle(State(shared): State<Arc<Shared>>, req: HttpRequest) -> Response {
    let started = Instant::now();
    shared.in_flight.fetch_add(1, Ordering::SeqCst);
    let _guard = InFlight(&shared.in_flight);
    let host_header = req.headers().get(header::HOST).and_then(|h| h.to_str().ok()).unwrap_or("").to_ascii_lowercase();
    let host = host_header.rsplit_once(':').map(|(h, _)| h.to_string()).unwrap_or(host_header);
    let path = req.uri().path_and_query().map(|p| p.as_str().to_string()).unwrap_or_else(|| "/".into());
    let user_agent = req.headers().get(header::USER_AGENT).and_then(|h| h.to_str().ok()).unwrap_or("").to_string();
    let if_none_match = req.headers().get(header::IF_NONE_MATCH).and_then(|h| h.to_str().ok()).map(str::to_string);

    let resource = shared.sites.read().get(&host).and_then(|s| {
        s.routes.get(&path).cloned().or_else(|| {
            let farm = s.farm.as_ref()?;
            let n = if path == "/" { 0 } else { path.strip_prefix("/p/")?.parse().ok()? };
            Some(Resource::Html(farm.page(&host, n)))
        })
    });
    let resource = match resource {
        Some(Resource::Sequence(seq)) => {
            let mut counters = shared.counters.lock();
            let n = counters.entry((host.clone(), path.clone())).or_insert(0);
            let r = seq.get(*n).or(seq.last()).cloned();
            *n += 1;
            r
        }
        other => other,
    };
    let response = match resource {
        None => plain(404, vec![], b"not found".to_vec()),
        Some(r) => render(r, if_none_match.as_deref()).await,
    };
    shared.log.lock().push(Request {
        host,
        path,
        user_agent,
        started,
        answered: Instant::now(),
        status: response.status().as_u16(),
    });
    response
}

fn plain(status: u16, headers: Vec<(String, String)>, body: Vec<u8>) -> Response {
    let mut res = Response::new(Body::from(body));
    *res.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    set_headers(res.headers_mut(), headers);
    res
}

fn set_headers(map: &mut HeaderMap, headers: Vec<(String, String)>) {
    for (k, v) in headers {
        if let (Ok(k), Ok(v)) = (HeaderName::try_from(k), HeaderValue::try_from(v)) {
            map.insert(k, v);
        }
    }
}

fn html_headers() -> Vec<(String, String)> {
    vec![("content-type".into(), "text/html; charset=utf-8".into())]
}

/// The entity tag of an HTML page: a hash of its bytes, so a changed page has a new one.
pub fn etag(html: &str) -> String {
    format!("\"{}\"", &blake3::hash(html.as_bytes()).to_hex()[..16])
}

/// Serves `r`; an HTML page carries an `ETag` and answers `304 Not Modified` to a request
/// whose `If-None-Match` names it (what the crawler's revisits send).
async fn render(r: Resource, if_none_match: Option<&str>) -> Response {
    let r = match r {
        Resource::Delayed { delay, inner } => {
            tokio::time::sleep(delay).await;
            *inner
        }
        other => other,
    };
    match r {
        Resource::Html(html) => {
            let tag = etag(&html);
            if if_none_match.is_some_and(|v| v.split(',').any(|t| t.trim() == tag)) {
                return plain(304, vec![("etag".into(), tag)], Vec::new());
            }
            let mut headers = html_headers();
            headers.push(("etag".into(), tag));
            plain(200, headers, html.into_bytes())
        }
        Resource::Raw { status, headers, body } => plain(status, headers, body),
        Resource::Redirect { status, location } => plain(status, vec![("location".into(), location)], vec![]),
        Resource::SlowDrip { chunk, interval, chunks } => {
            let stream = futures_util::stream::unfold(0usize, move |i| async move {
                if i >= chunks {
                    return None;
                }
                tokio::time::sleep(interval).await;
                Some((Ok::<Bytes, std::io::Error>(Bytes::from(vec![b'x'; chunk])), i + 1))
            });
            let mut res = Response::new(Body::from_stream(stream));
            set_headers(res.headers_mut(), html_headers());
            res
        }
        Resource::Huge { bytes } => {
            const CHUNK: usize = 64 * 1024;
            let stream = futures_util::stream::unfold(0usize, move |sent| async move {
                if sent >= bytes {
                    return None;
                }
                let n = CHUNK.min(bytes - sent);
                Some((Ok::<Bytes, std::io::Error>(Bytes::from(vec![b'a'; n])), sent + n))
            });
            let mut res = Response::new(Body::from_stream(stream));
            set_headers(res.headers_mut(), html_headers());
            res
        }
        Resource::Sequence(_) | Resource::Delayed { .. } => plain(500, vec![], b"nested resource".to_vec()),
    }
}
