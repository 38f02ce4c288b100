//! `weft mcp`: the node as a Model Context Protocol server on stdio, so LLM tools (Claude
//! Desktop, IDE assistants, agents) can search what the network crawled and read it.
//!
//! Three tools, each a call to the running node's local API (the node owns the index and the
//! network; this process is a thin adapter started by the LLM tool):
//! - `search`: meaning-based search of the network (or this node): chunks with url, title,
//!   score, snippet and provenance (the peer holding them, the embedding model);
//! - `get_document`: a document's full main text and metadata, by id (as hits carry it) or URL;
//! - `crawl_status`: what the node is doing, and — given a URL — why that page is or is not in
//!   the index.
//!
//! The protocol (JSON-RPC framing, version negotiation, capabilities) is the official Rust
//! SDK's, `rmcp`. Logs go to stderr: stdout carries the protocol.

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation, JsonObject, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, ServiceExt};
use serde_json::{json, Value};
use std::sync::Arc;

/// The MCP server: a client of the node's API.
#[derive(Clone)]
pub struct WeftMcp {
    base: String,
    http: reqwest::Client,
}

fn schema(v: Value) -> Arc<JsonObject> {
    Arc::new(v.as_object().cloned().unwrap_or_default())
}

/// The tools, as `tools/list` shows them.
pub fn tools() -> Vec<Tool> {
    vec![
        Tool::new(
            "search",
            "Search what the Weft network crawled, by meaning. Returns the best-matching chunks of \
             web pages: url, title, score (what they are ordered by: the meaning's cosine plus the words' \
             share), cosine, snippet, the document id (for get_document), the page's \
             author and dates when known, and provenance (the peer holding it, the embedding model).",
            schema(json!({
                "type": "object",
                "properties": {
                    "query": { "type": "string", "description": "What to look for, in plain words" },
                    "k": { "type": "integer", "minimum": 1, "maximum": 100, "default": 5,
                           "description": "How many results" },
                    "scope": { "type": "string", "enum": ["network", "local"], "default": "network",
                               "description": "The whole network, or this node's index only" }
                },
                "required": ["query"]
            })),
        ),
        Tool::new(
            "get_document",
            "Read one crawled page in full: its main text and metadata (title, author, dates, \
             language, page type, canonical URL, aliases), by the id a search result carries or by \
             its URL — from this node, or from the peer of the network that holds it (the answer's \
             `source` says which). Pass chunks=true for the chunks with their positions.",
            schema(json!({
                "type": "object",
                "properties": {
                    "id": { "type": "string", "description": "A document id (32 hex digits)" },
                    "url": { "type": "string", "description": "The page's URL, instead of an id" },
                    "peer": { "type": "string", "description": "The peer a search result named (asked first)" },
                    "chunks": { "type": "boolean", "default": false }
                }
            })),
        ),
        Tool::new(
            "crawl_status",
            "What the Weft node is doing: crawl state and counters, the index, the network. Given \
             a url, also why that page is or is not in the index (fetched, redirected, failed, \
             disallowed by robots.txt, a duplicate of another page, owned by another peer...).",
            schema(json!({
                "type": "object",
                "properties": {
                    "url": { "type": "string", "description": "A page to explain" }
                }
            })),
        ),
    ]
}

/// A tool call that cannot be answered, said to the model (an error result, not a protocol
/// error: the model can read it and try otherwise).
struct ToolError(String);

impl<E: std::fmt::Display> From<E> for ToolError {
    fn from(e: E) -> ToolError {
        ToolError(e.to_string())
    }
}

fn arg<'a>(args: &'a JsonObject, name: &str) -> Option<&'a Value> {
    args.get(name).filter(|v| !v.is_null())
}

impl WeftMcp {
    pub fn new(api: std::net::SocketAddr) -> anyhow::Result<WeftMcp> {
        let http = reqwest::Client::builder().no_proxy().timeout(std::time::Duration::from_secs(60)).build()?;
        Ok(WeftMcp { base: format!("http://{api}"), http })
    }

    /// `GET path` on the node's API; `None` on 404.
    async fn get(&self, path: &str, query: &[(&str, String)]) -> Result<Option<Value>, ToolError> {
        let resp = self.http.get(format!("{}{path}", self.base)).query(query).send().await.map_err(|e| {
            ToolError(format!("no weft node answers at {} ({e}): start one with `weft start`", self.base))
        })?;
        let status = resp.status();
        let body = resp.bytes().await?;
        if status == reqwest::StatusCode::NOT_FOUND {
            return Ok(None);
        }
        if !status.is_success() {
            return Err(ToolError(format!("the node answered HTTP {status}: {}", crate::client::error_message(&body))));
        }
        Ok(Some(serde_json::from_slice(&body)?))
    }

    async fn search(&self, args: &JsonObject) -> Result<Value, ToolError> {
        let query = arg(args, "query").and_then(Value::as_str).filter(|q| !q.trim().is_empty());
        let query = query.ok_or_else(|| ToolError("`query` is required: what to look for".into()))?;
        let k = arg(args, "k").and_then(Value::as_u64).unwrap_or(5).clamp(1, 100);
        let scope = match arg(args, "scope").and_then(Value::as_str) {
            None | Some("network") => "network",
            Some("local") => "local",
            Some(other) => return Err(ToolError(format!("scope {other:?}: use \"network\" or \"local\""))),
        };
        let params = [("q", query.to_string()), ("k", k.to_string()), ("scope", scope.to_string())];
        let answer = self.get("/search", &params).await?.unwrap_or_default();
        let status = self.get("/status", &[]).await?.unwrap_or_default();
        let model = status["index"]["model"].clone();
        let hits: Vec<Value> = answer["hits"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|h| {
                json!({
                    "id": h["id"], "url": h["url"], "title": h["title"], "score": h["rank_score"], "cosine": h["score"],
                    "snippet": h["snippet"], "chunk": h["chunk"], "author": h["author"],
                    "published": h["published"], "modified": h["modified"], "canonical": h["canonical"],
                    "provenance": { "peer": h["peer"], "model": model },
                })
            })
            .collect();
        Ok(json!({ "query": query, "scope": answer["scope"], "partial": answer["partial"], "hits": hits }))
    }

    async fn get_document(&self, args: &JsonObject) -> Result<Value, ToolError> {
        let id = match (arg(args, "id").and_then(Value::as_str), arg(args, "url").and_then(Value::as_str)) {
            (Some(id), _) => weft_index::DocId::parse_hex(id.trim())?.hex(),
            (None, Some(url)) => {
                let url = weft_url::normalize(url.trim(), None)?;
                weft_index::DocId::of_url(url.as_str()).hex()
            }
            (None, None) => return Err(ToolError("pass `id` (from a search result) or `url`".into())),
        };
        let peer = arg(args, "peer").and_then(Value::as_str).map(|p| ("peer", p.trim().to_string()));
        let query: Vec<(&str, String)> = peer.into_iter().collect();
        let Some(mut doc) = self.get(&format!("/documents/{id}"), &query).await? else {
            return Err(ToolError(format!(
                "no document {id} on this node nor on the peers that would hold it; crawl_status with \
                 the url says what this node knows of the page"
            )));
        };
        if !arg(args, "chunks").and_then(Value::as_bool).unwrap_or(false) {
            if let Some(d) = doc.as_object_mut() {
                d.remove("chunks");
            }
        }
        Ok(doc)
    }

    async fn crawl_status(&self, args: &JsonObject) -> Result<Value, ToolError> {
        let s = self.get("/status", &[]).await?.unwrap_or_default();
        let mut out = json!({
            "state": s["state"],
            "uptime_secs": s["uptime_secs"],
            "pages_fetched": s["pages_fetched"],
            "pages_per_sec": s["pages_per_sec"],
            "urls_queued": s["urls_queued"],
            "hosts": s["hosts"],
            "errors": s["errors"],
            "index": {
                "documents": s["index"]["documents"], "aliases": s["index"]["aliases"],
                "chunks": s["index"]["chunks"], "model": s["index"]["model"],
            },
            "network": {
                "peer_id": s["network"]["peer_id"],
                "members": s["network"]["members"].as_array().map_or(Value::Null, |m| json!(m.len())),
            },
        });
        if let Some(url) = arg(args, "url").and_then(Value::as_str) {
            out["url"] = self.get("/urls", &[("url", url.to_string())]).await?.unwrap_or_default();
        }
        Ok(out)
    }
}

impl ServerHandler for WeftMcp {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("weft", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Weft is a peer-to-peer web crawler and semantic search network. Use `search` to find \
                 pages by meaning, `get_document` to read one in full, `crawl_status` to see what the node \
                 is doing or why a page is missing.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let args = request.arguments.unwrap_or_default();
        let result = match request.name.as_ref() {
            "search" => self.search(&args).await,
            "get_document" => self.get_document(&args).await,
            "crawl_status" => self.crawl_status(&args).await,
            other => return Err(McpError::invalid_params(format!("no tool named {other:?}"), None)),
        };
        Ok(match result {
            Ok(v) => CallToolResult::structured(v),
            Err(ToolError(message)) => CallToolResult::error(vec![ContentBlock::text(message)]),
        }
        .into())
    }
}

/// Serves MCP on stdin/stdout until the client closes them.
pub async fn serve(api: std::net::SocketAddr) -> anyhow::Result<()> {
    let service = WeftMcp::new(api)?.serve(rmcp::transport::stdio()).await?;
    service.waiting().await?;
    Ok(())
}
