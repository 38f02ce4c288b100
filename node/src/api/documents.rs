//! The document endpoints: the latest indexed, a listing by host and time, and one document
//! in full — from this node's index, a copy it holds for the owners of the document's id, or
//! (in a network) read from a member that holds it (`/weft/doc/1`), with where it came from.

use super::{host_param, internal, ApiError, AppState};
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::{Deserialize, Serialize};
use std::time::Duration;
use weft_index::PeerName;

pub(super) async fn recent_documents(State(state): State<AppState>) -> Response {
    let documents = state.index.as_ref().map(|i| i.recent()).unwrap_or_default();
    Json(serde_json::json!({ "documents": documents })).into_response()
}

#[derive(Debug, Deserialize)]
pub struct DocumentsParams {
    pub host: Option<String>,
    /// RFC 3339, or seconds since the Unix epoch.
    pub since: Option<String>,
    pub cursor: Option<String>,
    pub limit: Option<usize>,
}

/// Documents a listing page holds unless `limit` says otherwise.
pub const DEFAULT_PAGE: usize = 100;

/// Runs a read of the document store on the blocking pool.
async fn index_read<T: Send + 'static>(
    state: &AppState,
    read: impl FnOnce(&weft_index::store::DocStore) -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    // An operator may run a crawl-only node (`index.enabled = false`, not the default): its
    // document endpoints say so rather than answer empty.
    let Some(index) = state.index.as_ref().map(|i| i.index().clone()) else {
        return Err(ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "index_disabled",
            "this node does not index (index.enabled = false)",
        ));
    };
    tokio::task::spawn_blocking(move || read(index.store())).await.map_err(internal)?
}

/// A moment as the API takes it: RFC 3339 or Unix seconds.
fn moment(s: &str) -> Result<u64, ApiError> {
    weft_index::documents::parse_moment(s).ok_or_else(|| {
        ApiError::new(StatusCode::BAD_REQUEST, "bad_since", format!("{s:?} is not RFC 3339 nor Unix seconds"))
    })
}

pub(super) async fn list_documents(
    State(state): State<AppState>,
    Query(p): Query<DocumentsParams>,
) -> Result<Json<weft_index::DocumentPage>, ApiError> {
    let listing = weft_index::Listing {
        host: p.host.map(|h| host_param(&h)).transpose()?,
        since: p.since.as_deref().map(moment).transpose()?,
        cursor: p.cursor,
        limit: p.limit.unwrap_or(DEFAULT_PAGE).clamp(1, weft_index::documents::MAX_PAGE),
    };
    if let Some(c) = &listing.cursor {
        weft_index::DocId::parse_hex(c)
            .map_err(|e| ApiError::new(StatusCode::BAD_REQUEST, "bad_cursor", e.to_string()))?;
    }
    let page = index_read(&state, move |store| weft_index::documents::list(store, &listing).map_err(internal)).await?;
    Ok(Json(page))
}

#[derive(Debug, Deserialize)]
pub struct CopiesParams {
    pub cursor: Option<String>,
    pub limit: Option<usize>,
}

/// The copies this node holds for other members' documents, a page at a time in id order
/// (what `weft export --copies` adds, marked `held: replica`).
pub(super) async fn list_copies(
    State(state): State<AppState>,
    Query(p): Query<CopiesParams>,
) -> Result<Json<weft_content::copies::HeldPage>, ApiError> {
    let cursor = p
        .cursor
        .as_deref()
        .map(weft_index::DocId::parse_hex)
        .transpose()
        .map_err(|e| ApiError::new(StatusCode::BAD_REQUEST, "bad_cursor", e.to_string()))?;
    let limit = p.limit.unwrap_or(DEFAULT_PAGE).clamp(1, weft_index::documents::MAX_PAGE);
    let cells = state.index.as_ref().and_then(|i| i.cells().cloned());
    let page = index_read(&state, move |_| match cells {
        Some(c) => weft_content::copies::held_page(c.replicas(), cursor.as_ref(), limit).map_err(internal),
        None => Ok(weft_content::copies::HeldPage::default()),
    })
    .await?;
    Ok(Json(page))
}

#[derive(Debug, Deserialize)]
pub struct DocumentParams {
    /// `network` (the default in a network): a document this node does not hold is read from
    /// a member that does; `local`: this node's index and copies only.
    pub scope: Option<String>,
    /// A peer to ask first (the `peer` a network search hit named).
    pub peer: Option<String>,
}

/// Where a document was read: this node's own index, a copy this node holds for the owners of
/// the document's id, or another member.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DocumentSource {
    /// `local`, `copy` or `peer`.
    pub held: String,
    /// The member that answered (for `peer`), and the one that crawled the page (for a copy:
    /// its publisher, who signed it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peer: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crawled_by: Option<PeerName>,
    /// For `peer`: how long the read took, and the members asked before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub asked: Vec<(String, String)>,
}

/// A document and where it was read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DocumentAnswer {
    #[serde(flatten)]
    pub document: weft_index::DocumentView,
    pub source: DocumentSource,
}

/// How long a read from another member may take, and how long one holder is waited for
/// before the next is asked too.
const DOC_DEADLINE: Duration = Duration::from_secs(5);
const DOC_HEDGE: Duration = Duration::from_millis(400);

pub(super) async fn get_document(
    State(state): State<AppState>,
    Path(id): Path<String>,
    Query(p): Query<DocumentParams>,
) -> Result<Json<DocumentAnswer>, ApiError> {
    let network_scope = match p.scope.as_deref() {
        None | Some("network") => true,
        Some("local") => false,
        Some(other) => {
            return Err(ApiError::new(StatusCode::BAD_REQUEST, "bad_scope", format!("{other:?}: use local or network")))
        }
    };
    read_document(&state, &id, network_scope, p.peer.as_deref()).await.map(Json)
}

/// The document of id `id` (hex): from this node's index, a copy it holds, or — with
/// `network_scope` — a member that holds it, `first` asked first.
pub(crate) async fn read_document(
    state: &AppState,
    id: &str,
    network_scope: bool,
    first: Option<&str>,
) -> Result<DocumentAnswer, ApiError> {
    let id = weft_index::DocId::parse_hex(id)
        .map_err(|e| ApiError::new(StatusCode::BAD_REQUEST, "bad_id", e.to_string()))?;
    let first: Vec<weft_p2p::PeerId> = match first {
        Some(peer) => vec![peer
            .parse()
            .map_err(|_| ApiError::new(StatusCode::BAD_REQUEST, "bad_peer", format!("{peer:?} is not a peer id")))?],
        None => Vec::new(),
    };
    let cells = state.index.as_ref().and_then(|i| i.cells().cloned());
    let found = index_read(state, move |store| {
        if let Some(view) = weft_index::documents::document(store, &id).map_err(internal)? {
            let source =
                DocumentSource { held: "local".into(), peer: None, crawled_by: None, ms: None, asked: Vec::new() };
            return Ok(Some(DocumentAnswer { document: view, source }));
        }
        let Some(copy) = cells.map(|c| weft_content::copies::held(&c, &id)).transpose().map_err(internal)?.flatten()
        else {
            return Ok(None);
        };
        Ok(weft_content::copies::view_of(&copy).map(|document| {
            let crawled_by = copy.publisher_id().map(|p| PeerName::from(p.to_string()));
            DocumentAnswer {
                document,
                source: DocumentSource { held: "copy".into(), peer: None, crawled_by, ms: None, asked: Vec::new() },
            }
        }))
    })
    .await?;
    if let Some(answer) = found {
        return Ok(answer);
    }
    let missing = |m: String| ApiError::new(StatusCode::NOT_FOUND, "no_document", m);
    let Some(network) = state.network.as_ref().filter(|_| network_scope) else {
        return Err(missing("this node holds no document with that id".into()));
    };
    // Every member, in the order of the id's owners: its holders first.
    let everyone = network.ring().members().len();
    let answer = network.get_document(&id.hex(), &first, everyone, DOC_HEDGE, DOC_DEADLINE).await;
    let asked: Vec<(String, String)> = answer.asked.iter().map(|(p, said)| (p.to_string(), said.clone())).collect();
    match answer.found.and_then(|(peer, copy)| weft_content::copies::view_of(&copy).map(|v| (peer, copy, v))) {
        Some((peer, copy, document)) => {
            let source = DocumentSource {
                held: "peer".into(),
                peer: Some(peer.to_string()),
                crawled_by: copy.publisher_id().map(|p| PeerName::from(p.to_string())),
                ms: Some(answer.ms),
                asked,
            };
            Ok(DocumentAnswer { document, source })
        }
        None => Err(missing(format!(
            "no member holds a document with that id ({} asked: {})",
            asked.len(),
            asked.iter().map(|(p, s)| format!("{p}: {s}")).collect::<Vec<_>>().join("; ")
        ))),
    }
}

/// `GET /documents/{id}/response`: the HTTP response kept for the document (with
/// `crawl.keep_responses`), for `weft export --format warc` against a running node.
pub(super) async fn get_response(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<weft_content::responses::ResponseJson>, ApiError> {
    let id = weft_index::DocId::parse_hex(&id)
        .map_err(|e| ApiError::new(StatusCode::BAD_REQUEST, "bad_id", e.to_string()))?;
    let missing = |m: &str| ApiError::new(StatusCode::NOT_FOUND, "no_response", m.to_string());
    let Some(store) = state.crawler.responses().cloned() else {
        return Err(missing("this node keeps no responses (crawl.keep_responses = false)"));
    };
    let kept = tokio::task::spawn_blocking(move || store.get(&id)).await.map_err(internal)?.map_err(internal)?;
    kept.map(|r| Json(r.into())).ok_or_else(|| missing("no response kept for that document"))
}
