//! The local HTTP API: `GET /health`, `GET /status` (JSON), `GET /metrics` (Prometheus).
//! Bound to 127.0.0.1 by default — it is the operator's window into the node.

use crate::crawler::Crawler;
use crate::metrics::render_prometheus;
use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;
use axum::{Json, Router};
use std::net::SocketAddr;

pub fn router(crawler: Crawler) -> Router {
    Router::new()
        .route("/health", get(|| async { "ok\n" }))
        .route("/status", get(status))
        .route("/metrics", get(metrics))
        .with_state(crawler)
}

async fn status(State(crawler): State<Crawler>) -> impl IntoResponse {
    Json(crawler.status())
}

async fn metrics(State(crawler): State<Crawler>) -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "application/openmetrics-text; version=1.0.0; charset=utf-8")],
        render_prometheus(&crawler.status()),
    )
}

/// Binds the API; the caller spawns the returned future.
pub async fn bind(
    addr: SocketAddr,
    crawler: Crawler,
) -> std::io::Result<(SocketAddr, impl std::future::Future<Output = std::io::Result<()>>)> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let local = listener.local_addr()?;
    Ok((local, async move { axum::serve(listener, router(crawler)).await }))
}
