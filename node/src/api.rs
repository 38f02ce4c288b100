//! The local HTTP API, documented route by route in `docs/openapi.json` (a test holds the two
//! together): health, status (JSON) and metrics (Prometheus), search (the network's or this
//! node's), the layout store, and the operator's controls — seeds, pause/resume, host blocks —
//! which want the data dir's token ([`crate::token`]). Every error is JSON with a stable code:
//! `{"error": {"code": "empty_query", "message": "..."}}`. Bound to 127.0.0.1 by default — it
//! is the operator's window into the node.

use crate::indexing::{IndexService, SearchError};
use crate::search::Searcher;
pub use crate::search::{ApiHit, Scope, SearchResponse, Timings};
use crate::status::{render_prometheus, Status};
use axum::extract::{Path, Query, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};
use axum::{Json, Router};
use serde::Deserialize;
use std::net::SocketAddr;
use std::sync::Arc;
use weft_crawl::Crawler;

/// Results a search returns at most.
mod documents;
pub(crate) use documents::read_document;
use documents::{get_document, get_response, list_copies, list_documents, recent_documents};
pub use documents::{DocumentAnswer, DocumentParams, DocumentSource, DocumentsParams, DEFAULT_PAGE};

pub const MAX_K: usize = 100;

/// What the API serves from.
#[derive(Clone)]
pub struct AppState {
    pub crawler: Crawler,
    pub index: Option<Arc<IndexService>>,
    pub network: Option<weft_p2p::NetworkHandle>,
    /// `None` when the node does not index.
    pub searcher: Option<Arc<Searcher>>,
    /// `None` when `layouts.enabled = false`.
    pub layouts: Option<weft_layouts::Layouts>,
    /// The write endpoints' token.
    pub token: crate::token::ApiToken,
    /// Host names requests may name besides IP addresses and `localhost` (`api.allowed_hosts`).
    pub allowed_hosts: Arc<Vec<String>>,
    /// The search page's settings (`/find`; see [`crate::find`]).
    pub search_page: Arc<weft_config::SearchPageConfig>,
}

/// Every route, as `(method, path)` — what `docs/openapi.json` must document.
pub const ROUTES: &[(&str, &str)] = &[
    ("GET", "/"),
    ("GET", "/health"),
    ("GET", "/history"),
    ("GET", "/hosts/top"),
    ("GET", "/documents"),
    ("GET", "/documents/recent"),
    ("GET", "/documents/{id}"),
    ("GET", "/documents/{id}/response"),
    ("GET", "/copies"),
    ("GET", "/urls"),
    ("GET", "/outcomes"),
    ("GET", "/status"),
    ("GET", "/metrics"),
    ("GET", "/search"),
    ("GET", "/find"),
    ("GET", "/find.json"),
    ("GET", "/find/doc/{id}"),
    ("GET", "/opensearch.xml"),
    ("GET", "/templates"),
    ("GET", "/templates/{host}"),
    ("GET", "/templates/{host}/changes"),
    ("POST", "/templates/{host}/relearn"),
    ("POST", "/seeds"),
    ("POST", "/crawl/pause"),
    ("POST", "/crawl/resume"),
    ("GET", "/hosts/blocked"),
    ("PUT", "/hosts/{host}/block"),
    ("DELETE", "/hosts/{host}/block"),
];

/// An error answer: an HTTP status, a stable code for programs and a message for people.
#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
}

/// `ok`, until the storage fails.
async fn health(State(state): State<AppState>) -> Result<&'static str, ApiError> {
    match state.crawler.storage().fault() {
        None => Ok("ok\n"),
        Some(f) => Err(ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "storage_fault", f.to_string())),
    }
}

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> ApiError {
        ApiError { status, code, message: message.into() }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = serde_json::json!({ "error": { "code": self.code, "message": self.message } });
        (self.status, Json(body)).into_response()
    }
}

impl AppState {
    /// Asks the searcher for `k` results (`index_disabled` on a node that does not index),
    /// timing the answer in the search histograms; its errors answered as the API answers them.
    pub(crate) async fn search(
        &self,
        q: &str,
        k: usize,
        scope: Option<Scope>,
        mode: crate::search::Mode,
    ) -> Result<SearchResponse, ApiError> {
        let Some(searcher) = &self.searcher else {
            let why = "this node does not index (index.enabled = false)";
            return Err(ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "index_disabled", why));
        };
        let started = std::time::Instant::now();
        let answer = searcher.search(q, k, scope, mode).await.map_err(|e| match e {
            SearchError::EmptyQuery => {
                ApiError::new(StatusCode::BAD_REQUEST, "empty_query", format!("{e}: pass ?q=..."))
            }
            SearchError::Busy => ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "busy", e.to_string()),
            e => internal(e),
        })?;
        let h = &self.crawler.metrics().histograms;
        let h = if answer.scope == Scope::Local { &h.search_local } else { &h.search_network };
        h.observe(started.elapsed().as_secs_f64());
        Ok(answer)
    }

    /// The node's status: the crawl's and each part's section.
    pub fn status(&self) -> Status {
        Status::gather(&self.crawler, self.index.as_ref(), self.network.as_ref(), self.layouts.as_ref())
    }
}

/// The API's routes, with `pages` — routes served beside them, over the same state (the search
/// page's, `crate::find::routes`, which uses this module and so is handed in).
pub fn router(state: AppState, pages: Router<AppState>) -> Router {
    let writes = Router::new()
        .route("/seeds", post(add_seeds))
        .route("/crawl/pause", post(pause))
        .route("/crawl/resume", post(resume))
        .route("/hosts/{host}/block", put(block).delete(unblock))
        .route("/templates/{host}/relearn", post(relearn))
        .route_layer(axum::middleware::from_fn_with_state(state.clone(), require_token));
    Router::new()
        .route("/", get(dashboard))
        .route("/health", get(health))
        .route("/history", get(history))
        .route("/hosts/top", get(top_hosts))
        .route("/documents", get(list_documents))
        .route("/documents/recent", get(recent_documents))
        .route("/documents/{id}", get(get_document))
        .route("/documents/{id}/response", get(get_response))
        .route("/copies", get(list_copies))
        .route("/urls", get(url_report))
        .route("/outcomes", get(list_outcomes))
        .route("/status", get(status))
        .route("/metrics", get(metrics))
        .route("/search", get(search))
        .route("/templates", get(templates))
        .route("/templates/{host}", get(templates_of))
        .route("/templates/{host}/changes", get(changes_of))
        .route("/hosts/blocked", get(blocked))
        .merge(pages)
        .merge(writes)
        .fallback(|| async {
            ApiError::new(StatusCode::NOT_FOUND, "not_found", "no such route (see docs/openapi.json)")
        })
        .method_not_allowed_fallback(|| async {
            ApiError::new(StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed", "this route does not take that method")
        })
        .layer(axum::middleware::from_fn_with_state(state.clone(), guard))
        .with_state(state)
}

/// Longest request target answered (a longer one is `414`).
pub const MAX_URI_BYTES: usize = 8 << 10;
/// Most header bytes answered (more is `431`; hyper closes the connection past 64 KiB).
pub const MAX_HEADER_BYTES: usize = 16 << 10;

/// Every request passes here first: a request target or headers over the limits, or a `Host`
/// this API does not answer to, are refused; the errors axum's extractors answer in plain text
/// (a bad query string, a bad JSON body) become the documented JSON.
async fn guard(
    State(state): State<AppState>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    if let Some(refused) = oversized(&request) {
        return refused.into_response();
    }
    if let Some(host) = request.headers().get(header::HOST) {
        if !host_allowed(host.to_str().unwrap_or(""), &state.allowed_hosts) {
            let msg = "this API answers to IP addresses, localhost and api.allowed_hosts only";
            return ApiError::new(StatusCode::FORBIDDEN, "host_not_allowed", msg).into_response();
        }
    }
    json_errors(next.run(request).await).await
}

/// A request whose target or headers are over [`MAX_URI_BYTES`] or [`MAX_HEADER_BYTES`].
pub(crate) fn oversized(request: &axum::extract::Request) -> Option<ApiError> {
    if request.uri().path_and_query().map_or(0, |p| p.as_str().len()) > MAX_URI_BYTES {
        let msg = format!("the request target is over {MAX_URI_BYTES} bytes");
        return Some(ApiError::new(StatusCode::URI_TOO_LONG, "uri_too_long", msg));
    }
    let header_bytes: usize = request.headers().iter().map(|(k, v)| k.as_str().len() + v.len() + 4).sum();
    if header_bytes > MAX_HEADER_BYTES {
        let msg = format!("the request's headers are over {MAX_HEADER_BYTES} bytes");
        return Some(ApiError::new(StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE, "headers_too_large", msg));
    }
    None
}

/// Whether a `Host` header names this API: an IP address, `localhost`, or a listed name (any
/// port: the port a client dialled is the one it reached).
fn host_allowed(host: &str, allowed: &[String]) -> bool {
    let name = match host.strip_prefix('[') {
        Some(v6) => return v6.split(']').next().is_some_and(|a| a.parse::<std::net::Ipv6Addr>().is_ok()),
        None => host.rsplit_once(':').filter(|(_, p)| p.parse::<u16>().is_ok()).map_or(host, |(n, _)| n),
    };
    let name = name.trim_end_matches('.').to_ascii_lowercase();
    name.parse::<std::net::Ipv4Addr>().is_ok()
        || name == "localhost"
        || allowed.iter().any(|a| a.trim_end_matches('.').eq_ignore_ascii_case(&name))
}

/// A client error answered in plain text by an extractor becomes `{"error": {...}}`.
pub(crate) async fn json_errors(response: Response) -> Response {
    let status = response.status();
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if !status.is_client_error() || is_json {
        return response;
    }
    let code = match status {
        StatusCode::BAD_REQUEST => "bad_request",
        StatusCode::PAYLOAD_TOO_LARGE => "too_large",
        StatusCode::UNSUPPORTED_MEDIA_TYPE => "unsupported_media_type",
        StatusCode::UNPROCESSABLE_ENTITY => "unprocessable",
        _ => "client_error",
    };
    let body = axum::body::to_bytes(response.into_body(), 4096).await.unwrap_or_default();
    let message = String::from_utf8_lossy(&body).trim().to_string();
    ApiError::new(status, code, message).into_response()
}

/// The dashboard: one page, its script and style inline — no CDN, nothing fetched but this
/// API.
const DASHBOARD: &str = include_str!("../assets/dashboard.html");

async fn dashboard() -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (
                header::CONTENT_SECURITY_POLICY,
                "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src 'self' data:",
            ),
        ],
        DASHBOARD,
    )
        .into_response()
}

async fn history(State(state): State<AppState>) -> Response {
    Json(serde_json::json!({ "interval_secs": HISTORY_SECS, "samples": state.crawler.metrics().history() }))
        .into_response()
}

#[derive(Debug, Deserialize)]
pub struct TopParams {
    pub n: Option<usize>,
}

async fn top_hosts(State(state): State<AppState>, Query(p): Query<TopParams>) -> Response {
    let n = p.n.unwrap_or(10).clamp(1, 100);
    Json(serde_json::json!({ "hosts": state.crawler.top_hosts(n) })).into_response()
}

#[derive(Debug, Deserialize)]
pub struct UrlParams {
    pub url: Option<String>,
}

#[derive(Debug, Deserialize)]
pub struct OutcomesParams {
    /// The last URL of the previous page.
    pub cursor: Option<String>,
    pub limit: Option<usize>,
}

/// Every URL's latest crawl outcome on this node, a page at a time in URL order.
async fn list_outcomes(
    State(state): State<AppState>,
    Query(p): Query<OutcomesParams>,
) -> Result<Json<weft_content::urls::OutcomePage>, ApiError> {
    let limit = p.limit.unwrap_or(DEFAULT_PAGE).clamp(1, weft_content::urls::MAX_OUTCOMES_PAGE);
    let outcomes = state.crawler.outcomes();
    let page =
        tokio::task::spawn_blocking(move || weft_content::urls::outcomes_page(&outcomes, p.cursor.as_deref(), limit))
            .await
            .map_err(internal)?
            .map_err(internal)?;
    Ok(Json(page))
}

/// What this node knows of one URL: frontier, outcome, document, owner, in one sentence.
async fn url_report(
    State(state): State<AppState>,
    Query(p): Query<UrlParams>,
) -> Result<Json<weft_content::urls::UrlReport>, ApiError> {
    let bad = |m: String| ApiError::new(StatusCode::BAD_REQUEST, "bad_url", m);
    let raw = p.url.filter(|u| !u.trim().is_empty()).ok_or_else(|| bad("pass ?url=https://...".into()))?;
    let url = weft_url::normalize(raw.trim(), None).map_err(|e| bad(format!("{raw:?}: {e}")))?;
    let crawler = state.crawler.clone();
    let index = state.index.as_ref().map(|i| i.index().clone());
    let report = tokio::task::spawn_blocking(move || {
        let crawl = crawler.url_report(&url)?;
        let document = match index {
            Some(index) => {
                let id = weft_index::DocId::of_url(url.as_str());
                match index.store().doc(&id)? {
                    Some(r) => Some(weft_index::documents::meta(index.store(), &id, &r)?.into()),
                    None => None,
                }
            }
            None => None,
        };
        anyhow::Ok(weft_content::urls::UrlReport::new(url.to_string(), crawl, document))
    })
    .await
    .map_err(internal)?
    .map_err(internal)?;
    Ok(Json(report))
}

/// Seconds between the samples behind `/history`.
pub const HISTORY_SECS: u64 = 5;

/// Write endpoints want `Authorization: Bearer <token>` (the data dir's `api.token`).
async fn require_token(
    State(state): State<AppState>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let given = request.headers().get(header::AUTHORIZATION).and_then(|v| v.to_str().ok());
    if state.token.accepts(given) {
        next.run(request).await
    } else {
        ApiError::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "this endpoint wants Authorization: Bearer <token>, the token being in the data dir's api.token",
        )
        .into_response()
    }
}

#[derive(Debug, Deserialize)]
pub struct SeedsRequest {
    pub urls: Vec<String>,
}

/// One seed's fate: `queued`, `already_seen`, `sent_to_owner`, or a rejection with its reason.
#[derive(Debug, serde::Serialize, Deserialize)]
pub struct SeedResult {
    pub url: String,
    pub outcome: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

async fn add_seeds(
    State(state): State<AppState>,
    body: Result<Json<SeedsRequest>, axum::extract::rejection::JsonRejection>,
) -> Response {
    let Ok(Json(req)) = body else {
        return ApiError::new(StatusCode::BAD_REQUEST, "bad_body", "expected JSON {\"urls\": [\"https://...\"]}")
            .into_response();
    };
    if req.urls.is_empty() || req.urls.len() > 1000 {
        return ApiError::new(StatusCode::BAD_REQUEST, "bad_body", "between 1 and 1000 URLs").into_response();
    }
    let results: Vec<SeedResult> = state
        .crawler
        .add_seeds(&req.urls)
        .await
        .into_iter()
        .map(|(url, r)| match r {
            Ok(Some(o)) => {
                let outcome = match o {
                    weft_frontier::PushOutcome::Queued => "queued",
                    weft_frontier::PushOutcome::AlreadySeen => "already_seen",
                    weft_frontier::PushOutcome::TooDeep => "too_deep",
                    weft_frontier::PushOutcome::Binary => "binary",
                    weft_frontier::PushOutcome::HostBudgetExhausted => "host_budget_exhausted",
                    weft_frontier::PushOutcome::Blocked => "host_blocked",
                };
                SeedResult { url, outcome: outcome.into(), error: None }
            }
            Ok(None) => SeedResult { url, outcome: "sent_to_owner".into(), error: None },
            Err(e) => SeedResult { url, outcome: "rejected".into(), error: Some(e) },
        })
        .collect();
    state.crawler.wake();
    Json(serde_json::json!({ "results": results })).into_response()
}

async fn pause(State(state): State<AppState>) -> Response {
    state.crawler.pause();
    Json(serde_json::json!({ "paused": true })).into_response()
}

async fn resume(State(state): State<AppState>) -> Response {
    state.crawler.resume();
    Json(serde_json::json!({ "paused": false })).into_response()
}

/// A host key as the frontier keeps it: lower case, `name` or `name:port`.
/// A host key from a path (`name` or `name:port`), as the frontier spells it: a name of
/// non-empty labels, an IPv4 address or a bracketed IPv6 one, a numeric port. `..`, `::::` or
/// `a..b` name no host and are refused rather than blocked.
fn host_param(host: &str) -> Result<String, ApiError> {
    let h = host.trim().to_ascii_lowercase();
    let chars_ok = !h.is_empty()
        && h.len() <= 260
        && h.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':' | '[' | ']' | '_'));
    let parsed = chars_ok.then(|| url::Url::parse(&format!("http://{h}/")).ok()).flatten();
    let key = parsed.filter(|u| match u.host() {
        Some(url::Host::Domain(d)) => d.split('.').all(|l| !l.is_empty() && l.len() <= 63),
        Some(_) => true,
        None => false,
    });
    if let Some(u) = key {
        // The frontier's spelling (a default port dropped, IPv4 canonical).
        Ok(weft_url::HostKey::of(&u).into_string())
    } else {
        Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "bad_host",
            format!("{host:?} is not a host name (name or name:port)"),
        ))
    }
}

async fn block(State(state): State<AppState>, Path(host): Path<String>) -> Result<Json<serde_json::Value>, ApiError> {
    let host = host_param(&host)?;
    let dropped = state.crawler.block_host(&host).await.map_err(internal)?;
    Ok(Json(serde_json::json!({ "host": host, "blocked": true, "dropped": dropped })))
}

async fn unblock(State(state): State<AppState>, Path(host): Path<String>) -> Result<Json<serde_json::Value>, ApiError> {
    let host = host_param(&host)?;
    let was = state.crawler.unblock_host(&host).await.map_err(internal)?;
    Ok(Json(serde_json::json!({ "host": host, "blocked": false, "was_blocked": was })))
}

pub(crate) fn internal(e: impl std::fmt::Display) -> ApiError {
    ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", e.to_string())
}

async fn blocked(State(state): State<AppState>) -> Response {
    Json(serde_json::json!({ "hosts": state.crawler.blocked_hosts() })).into_response()
}

async fn status(State(state): State<AppState>) -> impl IntoResponse {
    Json(weft_crawl::storage::blocking(|| state.status()))
}

async fn metrics(State(state): State<AppState>) -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "application/openmetrics-text; version=1.0.0; charset=utf-8")],
        render_prometheus(&weft_crawl::storage::blocking(|| state.status()), &state.crawler.metrics().histograms),
    )
}

#[derive(Debug, Deserialize)]
pub struct SearchParams {
    #[serde(default)]
    pub q: String,
    pub k: Option<usize>,
    /// `network` (the default in a network) or `local`.
    pub scope: Option<Scope>,
    /// `hybrid` (meaning and words, the default) or `dense` (meaning alone).
    #[serde(default)]
    pub mode: crate::search::Mode,
}

async fn search(
    State(state): State<AppState>,
    Query(params): Query<SearchParams>,
) -> Result<Json<SearchResponse>, ApiError> {
    let k = params.k.unwrap_or(10).clamp(1, MAX_K);
    state.search(&params.q, k, params.scope, params.mode).await.map(Json)
}

/// Runs a layout-store read on the blocking pool and answers it as JSON.
async fn layout_read<T: serde::Serialize + Send + 'static>(
    state: &AppState,
    read: impl FnOnce(&weft_layouts::LayoutStore) -> Result<T, weft_layouts::LayoutError> + Send + 'static,
) -> Response {
    let Some(store) = state.layouts.as_ref().map(|l| l.store.clone()) else {
        return ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "layouts_disabled",
            "layout learning is off (layouts.enabled = false)",
        )
        .into_response();
    };
    match tokio::task::spawn_blocking(move || read(&store)).await {
        Ok(Ok(v)) => Json(v).into_response(),
        Ok(Err(e)) => internal(e).into_response(),
        Err(e) => internal(e).into_response(),
    }
}

async fn templates(State(state): State<AppState>) -> Response {
    layout_read(&state, |s| s.overview()).await
}

async fn templates_of(State(state): State<AppState>, Path(host): Path<String>) -> Response {
    let patterns = state.crawler.patterns().clone();
    layout_read(&state, move |s| {
        let mut detail = s.detail(&host)?;
        detail.url_patterns = patterns.host(&host)?;
        Ok(detail)
    })
    .await
}

/// The host's change log: layout changes and URL-scheme changes (the latter also with layout
/// learning off).
async fn changes_of(State(state): State<AppState>, Path(host): Path<String>) -> Response {
    let patterns = state.crawler.patterns().clone();
    let store = state.layouts.as_ref().map(|l| l.store.clone());
    let read = move || weft_layouts::change_log(store.as_ref(), patterns.changes(&host)?, &host);
    match tokio::task::spawn_blocking(read).await {
        Ok(Ok(v)) => Json(v).into_response(),
        Ok(Err(e)) => internal(e).into_response(),
        Err(e) => internal(e).into_response(),
    }
}

/// Forgets what was learned of a host (templates, signatures, the browser decision, URL
/// patterns): its layouts are learned again from its next pages.
async fn relearn(State(state): State<AppState>, Path(host): Path<String>) -> Response {
    let host = host.trim().to_ascii_lowercase();
    let patterns = state.crawler.patterns().clone();
    layout_read(&state, move |s| weft_layouts::relearn(s, &patterns, &host)).await
}

/// Connections served at once; more wait in the kernel's backlog (no descriptor, no memory
/// here) until one closes. The operator's dashboard, scripts and `weft` commands need a few.
pub const MAX_CONNECTIONS: usize = 256;
/// A client has this long to send a request's headers (the first, and each next one on a
/// kept-alive connection); then its connection closes. Half-sent requests cannot hold slots.
pub const HEADER_READ_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);
/// A connection is asked to close after this long (it finishes the request in progress).
pub const CONNECTION_LIFETIME: std::time::Duration = std::time::Duration::from_secs(300);

/// The API's open connections: each holds the node's state (the data dir's lock with it), so
/// a node that stops waits for them to be gone before it returns.
#[derive(Clone, Default)]
pub struct Connections(Arc<()>);

impl Connections {
    /// Waits up to `bound` until no connection task is left (the serve future, dropped, has
    /// aborted them; an abort completes when the runtime next reaches the task).
    pub async fn closed(&self, bound: std::time::Duration) {
        let deadline = tokio::time::Instant::now() + bound;
        while Arc::strong_count(&self.0) > 1 && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    }
}

/// Binds the API; the caller spawns the returned future (dropping it ends every connection:
/// see [`Connections::closed`]).
pub async fn bind(
    addr: SocketAddr,
    state: AppState,
    pages: Router<AppState>,
) -> std::io::Result<(SocketAddr, impl std::future::Future<Output = std::io::Result<()>>, Connections)> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let local = listener.local_addr()?;
    let connections = Connections::default();
    Ok((local, serve(listener, router(state, pages), connections.clone()), connections))
}

/// The accept loop: at most [`MAX_CONNECTIONS`] at once, each with [`HEADER_READ_TIMEOUT`]
/// and [`CONNECTION_LIFETIME`]. (`axum::serve` has neither bound: 20,000 half-sent requests
/// once held 20,000 descriptors and 850 MB.)
///
/// Each request carries its client's address (`ConnectInfo<SocketAddr>`), which the search
/// page's rate limit reads.
pub(crate) async fn serve(listener: tokio::net::TcpListener, app: Router, live: Connections) -> std::io::Result<()> {
    let slots = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    // Owned here: when the server's task ends, its connections end with it.
    let mut connections = tokio::task::JoinSet::new();
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(hyper_util::rt::TokioTimer::new()).header_read_timeout(HEADER_READ_TIMEOUT).max_buf_size(64 << 10);
    let http = Arc::new(http);
    loop {
        while connections.try_join_next().is_some() {}
        let slot = slots.clone().acquire_owned().await.expect("the semaphore is never closed");
        let (stream, client) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(e) => {
                // Out of descriptors, or a connection reset before it was accepted: go on.
                tracing::debug!("API accept: {e}");
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                continue;
            }
        };
        let (app, http, live) = (app.clone(), http.clone(), live.clone());
        connections.spawn(async move {
            let _held = (slot, live);
            let app = app.layer(axum::Extension(axum::extract::ConnectInfo(client)));
            let service = hyper_util::service::TowerToHyperService::new(app);
            let conn = http.serve_connection(hyper_util::rt::TokioIo::new(stream), service);
            tokio::pin!(conn);
            tokio::select! {
                _ = conn.as_mut() => return,
                _ = tokio::time::sleep(CONNECTION_LIFETIME) => {}
            }
            conn.as_mut().graceful_shutdown();
            let _ = tokio::time::timeout(HEADER_READ_TIMEOUT, conn).await;
        });
    }
}

#[cfg(test)]
mod tests {
    use super::{host_allowed, host_param};

    #[test]
    fn the_api_answers_to_ip_addresses_localhost_and_listed_names_only() {
        let listed = vec!["weft.home.arpa".to_string()];
        for ok in ["127.0.0.1:7700", "127.0.0.1", "[::1]:7700", "localhost:7700", "LOCALHOST", "weft.home.arpa:80"] {
            assert!(host_allowed(ok, &listed), "{ok}");
        }
        for refused in ["evil.example:7700", "127.0.0.1.evil.example", "localhost.evil.example", "[evil]:1", ""] {
            assert!(!host_allowed(refused, &listed), "{refused}");
        }
    }

    #[test]
    fn a_block_names_a_host_as_the_frontier_spells_it_or_nothing() {
        for (given, key) in [
            ("Example.COM", "example.com"),
            ("a.test:8080", "a.test:8080"),
            ("a.test:80", "a.test"),
            ("127.0.0.1:9", "127.0.0.1:9"),
            ("[::1]:8080", "[::1]:8080"),
        ] {
            assert_eq!(host_param(given).ok().as_deref(), Some(key), "{given}");
        }
        // `..` arrives only from a client that does not normalize paths (curl --path-as-is).
        for bad in ["..", ".", "::::", "a..b", ".a.test", "a.test:99999", "[zz]", "", "a/b", "a b"] {
            assert!(host_param(bad).is_err(), "{bad:?}");
        }
    }
}
