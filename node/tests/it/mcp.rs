//! `weft mcp` driven by a real MCP client (the official Rust SDK's, over the child's stdio):
//! initialize, list the tools, call each against a node (the real model) that crawled the
//! topic web — a search finds the page a question is about, the document is read back by the
//! id the hit carries and by URL, the status explains a page — and bad calls are errors the
//! model can read.

use crate::common;

use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use rmcp::ServiceExt;
use serde_json::{json, Value};
use std::time::Duration;
use weft_simnet::{topic_site, WebServer, TOPICS};

fn args(v: Value) -> rmcp::model::JsonObject {
    v.as_object().cloned().unwrap()
}

fn structured(r: &CallToolResult) -> &Value {
    assert_eq!(r.is_error, Some(false), "{r:?}");
    r.structured_content.as_ref().expect("structured content")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_client_lists_and_calls_every_tool() {
    let server = WebServer::start(vec![topic_site("topics.test")]).await.unwrap();
    let dir = common::work_dir();
    let mut c = common::config(&server, dir.path(), 0);
    c.index.enabled = true;
    c.embed = weft_index::testing::embed_config();
    c.crawl.seeds = vec![server.url("topics.test", "/")];
    let pages = TOPICS.len() as u64 + 1;
    let node = common::Running::start(c).await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(180);
    loop {
        let s = node.get("/status").await;
        if s["state"] == "idle" && s["index"]["documents"].as_u64() == Some(pages) {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "the crawl did not finish: {s}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    let api = node.api.to_string();
    let command = tokio::process::Command::new(common::WEFT).configure(|cmd| {
        cmd.args(["mcp", "--api", &api]).env("RUST_LOG", "warn");
    });
    let client = ().serve(TokioChildProcess::new(command).unwrap()).await.expect("initialize");
    let info = client.peer_info().expect("the server's info");
    assert_eq!(info.server_info.as_ref().map(|s| s.name.as_str()), Some("weft"));
    assert!(info.capabilities.tools.is_some());

    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(names, ["search", "get_document", "crawl_status"]);
    assert!(tools.iter().all(|t| t.description.as_deref().is_some_and(|d| d.len() > 40)));

    let call = |name: &'static str, a: Value| {
        let client = &client;
        async move { client.call_tool(CallToolRequestParams::new(name).with_arguments(args(a))).await.unwrap() }
    };

    // search: the page the question is about comes first, with its provenance.
    let t = &TOPICS[7];
    let found = call("search", json!({ "query": t.question, "k": 3, "scope": "local" })).await;
    let hits = structured(&found)["hits"].as_array().unwrap().clone();
    assert!(!hits.is_empty() && hits.len() <= 3, "{hits:?}");
    let top = &hits[0];
    assert!(top["url"].as_str().unwrap().ends_with(&format!("/t/{}", t.slug)), "{top}");
    assert_eq!(top["title"], t.title);
    assert!(top["score"].as_f64().unwrap() > 0.0 && !top["snippet"].as_str().unwrap().is_empty(), "{top}");
    assert_eq!(top["provenance"]["model"].as_str().map(str::len), Some(16), "{top}");

    // get_document, by the hit's id and by URL: the whole text.
    let doc = call("get_document", json!({ "id": top["id"] })).await;
    let doc = structured(&doc).clone();
    assert_eq!(doc["url"], top["url"]);
    assert!(t.paragraphs.iter().all(|p| doc["text"].as_str().unwrap().contains(p)), "{doc}");
    assert!(doc.get("chunks").is_none(), "chunks only when asked");
    let by_url = call("get_document", json!({ "url": top["url"], "chunks": true })).await;
    assert_eq!(structured(&by_url)["id"], top["id"]);
    assert!(!structured(&by_url)["chunks"].as_array().unwrap().is_empty());

    // crawl_status, and why a page is in the index.
    let status = call("crawl_status", json!({ "url": top["url"] })).await;
    let status = structured(&status);
    assert_eq!((status["state"].as_str(), status["index"]["documents"].as_u64()), (Some("idle"), Some(pages)));
    assert!(status["url"]["explanation"].as_str().unwrap().starts_with("indexed"), "{status}");

    // Mistakes come back as tool errors the model can read.
    for (name, a, says) in [
        ("search", json!({ "query": "  " }), "query"),
        ("search", json!({ "query": "x", "scope": "everywhere" }), "scope"),
        ("get_document", json!({}), "id"),
        ("get_document", json!({ "id": "0".repeat(32) }), "no document"),
        ("get_document", json!({ "id": "nope" }), "document id"),
    ] {
        let r = call(name, a).await;
        assert_eq!(r.is_error, Some(true), "{name}: {r:?}");
        let text = serde_json::to_string(&r.content).unwrap();
        assert!(text.contains(says), "{name}: {text}");
    }
    let unknown = client.call_tool(CallToolRequestParams::new("delete_everything")).await;
    assert!(unknown.is_err(), "an unknown tool is a protocol error");
    client.cancel().await.unwrap();

    // With no node behind it, a tool says how to start one.
    let command = tokio::process::Command::new(common::WEFT).configure(|cmd| {
        cmd.args(["mcp", "--api", "127.0.0.1:1"]).env("RUST_LOG", "warn");
    });
    let alone = ().serve(TokioChildProcess::new(command).unwrap()).await.unwrap();
    let r = alone.call_tool(CallToolRequestParams::new("crawl_status")).await.unwrap();
    assert_eq!(r.is_error, Some(true));
    assert!(serde_json::to_string(&r.content).unwrap().contains("weft start"), "{r:?}");
    alone.cancel().await.unwrap();
}
