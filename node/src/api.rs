//! The local HTTP API: `GET /health`, `GET /status` (JSON), `GET /metrics` (Prometheus),
//! `GET /search?q=&k=&scope=network|local` (the network's best documents, or this node's) and
//! the layout store: `GET /templates`, `/templates/{host}`, `/templates/{host}/changes`. Bound
//! to 127.0.0.1 by default — it is the operator's window into the node.

use crate::crawler::Crawler;
use crate::indexing::{IndexService, SearchError};
use crate::metrics::{render_prometheus, Status};
use crate::search::Searcher;
pub use crate::search::{ApiHit, Scope, SearchResponse};
use axum::extract::{Path, Query, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde::Deserialize;
use std::net::SocketAddr;
use std::sync::Arc;

/// Results a search returns at most.
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
    pub layouts: Option<crate::node::Layouts>,
}

impl AppState {
    /// The crawler's status with the index's section.
    pub fn status(&self) -> Status {
        let mut s = self.crawler.status();
        s.index = self.index.as_ref().map(|i| i.status());
        s.network = self.network.as_ref().map(|n| n.status());
        s.layouts = self.layouts.as_ref().map(|l| {
            let mut status = l.store.status();
            status.browser_available = l.pool.available().load(std::sync::atomic::Ordering::Acquire);
            if let Some(pool) = l.pool.started() {
                status.browsers_running = pool.instances() as u64;
                status.browser_memory_bytes = pool.memory();
            }
            status
        });
        s
    }
}

pub fn router(state: AppState) -> Router {
    Router::new()
        .route("/health", get(|| async { "ok\n" }))
        .route("/status", get(status))
        .route("/metrics", get(metrics))
        .route("/search", get(search))
        .route("/templates", get(templates))
        .route("/templates/{host}", get(templates_of))
        .route("/templates/{host}/changes", get(changes_of))
        .with_state(state)
}

async fn status(State(state): State<AppState>) -> impl IntoResponse {
    Json(state.status())
}

async fn metrics(State(state): State<AppState>) -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "application/openmetrics-text; version=1.0.0; charset=utf-8")],
        render_prometheus(&state.status()),
    )
}

#[derive(Debug, Deserialize)]
pub struct SearchParams {
    #[serde(default)]
    pub q: String,
    pub k: Option<usize>,
    /// `network` (the default in a network) or `local`.
    pub scope: Option<Scope>,
}

fn error(status: StatusCode, message: String) -> Response {
    (status, Json(serde_json::json!({ "error": message }))).into_response()
}

async fn search(State(state): State<AppState>, Query(params): Query<SearchParams>) -> Response {
    let Some(searcher) = &state.searcher else {
        return error(StatusCode::SERVICE_UNAVAILABLE, "this node does not index (index.enabled = false)".into());
    };
    let k = params.k.unwrap_or(10).clamp(1, MAX_K);
    match searcher.search(&params.q, k, params.scope).await {
        Ok(answer) => Json(answer).into_response(),
        Err(e @ SearchError::EmptyQuery) => error(StatusCode::BAD_REQUEST, format!("{e}: pass ?q=...")),
        Err(e @ SearchError::Busy) => error(StatusCode::SERVICE_UNAVAILABLE, e.to_string()),
        Err(e) => error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}

/// Runs a layout-store read on the blocking pool and answers it as JSON.
async fn layout_read<T: serde::Serialize + Send + 'static>(
    state: &AppState,
    read: impl FnOnce(&crate::layouts::LayoutStore) -> Result<T, crate::layouts::LayoutError> + Send + 'static,
) -> Response {
    let Some(store) = state.layouts.as_ref().map(|l| l.store.clone()) else {
        return error(StatusCode::SERVICE_UNAVAILABLE, "layout learning is off (layouts.enabled = false)".into());
    };
    match tokio::task::spawn_blocking(move || read(&store)).await {
        Ok(Ok(v)) => Json(v).into_response(),
        Ok(Err(e)) => error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
        Err(e) => error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}

async fn templates(State(state): State<AppState>) -> Response {
    layout_read(&state, |s| s.overview()).await
}

async fn templates_of(State(state): State<AppState>, Path(host): Path<String>) -> Response {
    layout_read(&state, move |s| s.detail(&host)).await
}

async fn changes_of(State(state): State<AppState>, Path(host): Path<String>) -> Response {
    layout_read(&state, move |s| s.changes(&host)).await
}

/// Binds the API; the caller spawns the returned future.
pub async fn bind(
    addr: SocketAddr,
    state: AppState,
) -> std::io::Result<(SocketAddr, impl std::future::Future<Output = std::io::Result<()>>)> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let local = listener.local_addr()?;
    Ok((local, async move { axum::serve(listener, router(state)).await }))
}
