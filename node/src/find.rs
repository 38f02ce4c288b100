//! The search page for people: `/find` (HTML rendered on the server, no JavaScript),
//! `/find.json` (the same page as JSON, the fields metasearch engines map), `/find/doc/{id}`
//! (the network's stored copy of a page's text, for a page that is gone or slow) and
//! `/opensearch.xml` (so a browser offers to add it as a search engine).
//!
//! The operator's API serves these routes beside its own. With `search_page.enabled` they also
//! get an address of their own ([`bind`]) that serves nothing else — no token, no write, no
//! status — so a household or a LAN can search without reaching the operator's controls; each
//! client address there is rate-limited ([`rate`]). Both answer a question over
//! `search_page.max_query_bytes` or a page past the last with a JSON error, as the API does.

mod answer;
pub mod html;
mod opensearch;
mod rate;

pub use answer::{last_page, results_wanted, FindAnswer, FindResult, MAX_RESULTS};
pub use opensearch::SHORT_NAME;
pub use rate::RateLimit;

use crate::api::{read_document, ApiError, AppState, Connections};
use crate::search::Mode;
use axum::extract::{ConnectInfo, Path, Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use parking_lot::Mutex;
use serde::Deserialize;
use std::net::SocketAddr;
use std::sync::Arc;

/// The search page's query string.
#[derive(Debug, Deserialize)]
pub struct FindParams {
    #[serde(default)]
    pub q: String,
    /// From 1; empty is the first (a browser leaves OpenSearch's optional `{startPage?}` empty).
    pub page: Option<String>,
    /// Results a page, at most 50 (`search_page.per_page` unless given or empty).
    pub per_page: Option<String>,
}

/// A number from the query string: absent or empty is `None`.
fn number(value: Option<&str>, code: &'static str, name: &str) -> Result<Option<usize>, ApiError> {
    match value.map(str::trim).filter(|v| !v.is_empty()) {
        None => Ok(None),
        Some(v) => v.parse().map(Some).map_err(|_| bad(code, format!("{name} {v:?} is not a number"))),
    }
}

/// Results a page may ask for at most.
pub const MAX_PER_PAGE: usize = 50;

/// The routes, for a router over the node's [`AppState`].
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/find", get(find_html))
        .route("/find.json", get(find_json))
        .route("/find/doc/{id}", get(find_doc))
        .route("/opensearch.xml", get(description))
}

/// A checked request: the question (trimmed), its page and the results a page.
struct Asked {
    query: String,
    page: usize,
    per_page: usize,
}

fn bad(code: &'static str, message: String) -> ApiError {
    ApiError::new(StatusCode::BAD_REQUEST, code, message)
}

fn check(params: FindParams, state: &AppState) -> Result<Asked, ApiError> {
    let config = &state.search_page;
    let query = params.q.trim().to_string();
    if query.len() > config.max_query_bytes {
        let max = config.max_query_bytes;
        return Err(bad("query_too_long", format!("the question is {} bytes; at most {max} are taken", query.len())));
    }
    let per_page = number(params.per_page.as_deref(), "bad_per_page", "per_page")?.unwrap_or(config.per_page);
    if !(1..=MAX_PER_PAGE).contains(&per_page) {
        return Err(bad("bad_per_page", format!("per_page {per_page}: from 1 to {MAX_PER_PAGE}")));
    }
    let page = number(params.page.as_deref(), "bad_page", "page")?.unwrap_or(1);
    if !(1..=last_page(per_page)).contains(&page) {
        let last = last_page(per_page);
        return Err(bad("bad_page", format!("page {page}: from 1 to {last} ({MAX_RESULTS} results at most)")));
    }
    Ok(Asked { query, page, per_page })
}

/// Asks the network (or this node alone, outside one) for the page `asked` wants.
async fn search(state: &AppState, asked: &Asked) -> Result<FindAnswer, ApiError> {
    let k = results_wanted(asked.page, asked.per_page);
    let response = state.search(&asked.query, k, None, Mode::Hybrid).await?;
    Ok(FindAnswer::from_search(response, asked.page, asked.per_page))
}

/// This node's peer id, which the page names "this node".
fn me(state: &AppState) -> Option<String> {
    state.network.as_ref().map(|n| n.peer_id().to_string())
}

/// A page for people: never framed, no script, nothing loaded from elsewhere.
fn html_page(body: String) -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (
                header::CONTENT_SECURITY_POLICY,
                "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
            ),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        ],
        body,
    )
        .into_response()
}

async fn find_html(State(state): State<AppState>, Query(params): Query<FindParams>) -> Result<Response, ApiError> {
    let asked = check(params, &state)?;
    let me = me(&state);
    if asked.query.is_empty() {
        return Ok(html_page(html::results_page("", None, me.as_deref())));
    }
    let answer = search(&state, &asked).await?;
    Ok(html_page(html::results_page(&asked.query, Some(&answer), me.as_deref())))
}

async fn find_json(
    State(state): State<AppState>,
    Query(params): Query<FindParams>,
) -> Result<Json<FindAnswer>, ApiError> {
    let asked = check(params, &state)?;
    if asked.query.is_empty() {
        return Err(bad("empty_query", "the question is empty: pass ?q=...".into()));
    }
    search(&state, &asked).await.map(Json)
}

/// `/find/doc/{id}`'s query string: the question (its words are marked) and the member that
/// answered with the page, asked first.
#[derive(Debug, Deserialize)]
pub struct DocParams {
    #[serde(default)]
    pub q: String,
    pub peer: Option<String>,
}

async fn find_doc(
    State(state): State<AppState>,
    Path(id): Path<String>,
    Query(params): Query<DocParams>,
) -> Result<Response, ApiError> {
    let query = params.q.trim();
    if query.len() > state.search_page.max_query_bytes {
        return Err(bad("query_too_long", format!("the question is {} bytes", query.len())));
    }
    let answer = read_document(&state, &id, true, params.peer.as_deref()).await?;
    Ok(html_page(html::document_page(&answer, query, me(&state).as_deref())))
}

async fn description(State(state): State<AppState>, headers: HeaderMap) -> Result<Response, ApiError> {
    let configured = Some(state.search_page.public_url.clone()).filter(|u| !u.is_empty());
    let host = headers.get(header::HOST).and_then(|h| h.to_str().ok());
    let Some(base) = configured.or_else(|| opensearch::base_of(host)) else {
        return Err(bad("bad_host", "the request names no host to build the search address from".into()));
    };
    Ok((
        [(header::CONTENT_TYPE, "application/opensearchdescription+xml; charset=utf-8")],
        opensearch::description(&base),
    )
        .into_response())
}

/// The search page's own address: its routes and nothing else, each client address held to
/// `search_page.requests_per_minute`.
fn public_router(state: AppState) -> Router {
    let limit = Arc::new(Mutex::new(RateLimit::new(state.search_page.requests_per_minute)));
    routes()
        .fallback(|| async {
            ApiError::new(StatusCode::NOT_FOUND, "not_found", "this address serves the search page only: /find")
        })
        .method_not_allowed_fallback(|| async {
            ApiError::new(StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed", "the search page is read-only")
        })
        .layer(axum::middleware::from_fn(move |request: axum::extract::Request, next: axum::middleware::Next| {
            let limit = limit.clone();
            async move { limited(&limit, request, next).await }
        }))
        .with_state(state)
}

/// Refuses a request over the size limits or past its client's rate (`429` with
/// `Retry-After`); the extractors' plain-text errors become JSON.
async fn limited(limit: &Mutex<RateLimit>, request: axum::extract::Request, next: axum::middleware::Next) -> Response {
    if let Some(refused) = crate::api::oversized(&request) {
        return refused.into_response();
    }
    let client = request.extensions().get::<ConnectInfo<SocketAddr>>().map(|c| c.0.ip());
    if let Some(ip) = client {
        if let Err(wait) = limit.lock().take(ip, std::time::Instant::now()) {
            let secs = wait.as_secs_f64().ceil().max(1.0) as u64;
            let message = format!("too many requests from {ip}: try again in {secs} s");
            let mut response = ApiError::new(StatusCode::TOO_MANY_REQUESTS, "rate_limited", message).into_response();
            response.headers_mut().insert(header::RETRY_AFTER, secs.into());
            return response;
        }
    }
    crate::api::json_errors(next.run(request).await).await
}

/// Binds the search page's own address; the caller spawns the returned future.
pub async fn bind(
    addr: SocketAddr,
    state: AppState,
) -> std::io::Result<(SocketAddr, impl std::future::Future<Output = std::io::Result<()>>, Connections)> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let local = listener.local_addr()?;
    let connections = Connections::default();
    Ok((local, crate::api::serve(listener, public_router(state), connections.clone()), connections))
}
