//! The API against its specification (`docs/openapi.json`) on a real node over HTTP: every
//! documented operation exists and answers one of its documented statuses, every route is
//! documented, errors are JSON with stable codes, and the write endpoints refuse without the
//! data dir's token — and with it add seeds, pause and resume the crawl, and block a host
//! (checked against the web server's log).

use crate::common;

use reqwest::{Method, StatusCode};
use serde_json::Value;
use std::collections::BTreeSet;
use std::time::{Duration, Instant};
use weft_node::api::ROUTES;
use weft_simnet::{generated_site, WebServer};

fn spec() -> Value {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/openapi.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// `(METHOD, path)` → documented statuses.
fn operations(spec: &Value) -> Vec<(String, String, BTreeSet<u16>, bool)> {
    let mut out = Vec::new();
    for (path, item) in spec["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            let codes = op["responses"].as_object().unwrap().keys().map(|k| k.parse().unwrap()).collect();
            let secured = op.get("security").is_some();
            out.push((method.to_uppercase(), path.clone(), codes, secured));
        }
    }
    out
}

struct Api {
    base: String,
    client: reqwest::Client,
}

impl Api {
    async fn call(&self, method: Method, path: &str, token: Option<&str>, body: Option<Value>) -> (StatusCode, Value) {
        let mut req = self.client.request(method, format!("{}{path}", self.base));
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        if let Some(b) = body {
            req = req.json(&b);
        }
        let resp = req.send().await.unwrap();
        let status = resp.status();
        let text = resp.text().await.unwrap();
        (status, serde_json::from_str(&text).unwrap_or(Value::String(text)))
    }

    async fn status(&self) -> Value {
        self.call(Method::GET, "/status", None, None).await.1
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_api_matches_its_spec_and_write_endpoints_want_the_token() {
    let server =
        WebServer::start(vec![generated_site("a.test", 30, 3), generated_site("b.test", 30, 3)]).await.unwrap();
    let dir = common::work_dir();
    let mut c = common::config(&server, dir.path(), 150);
    c.api.listen = "127.0.0.1:0".parse().unwrap();
    c.crawl.concurrency = 2;
    let node = common::Running::start(c).await;
    let api =
        Api { base: format!("http://{}", node.api), client: reqwest::Client::builder().no_proxy().build().unwrap() };
    let token = std::fs::read_to_string(dir.path().join(weft_node::token::FILE)).unwrap().trim().to_string();
    assert_eq!(token.len(), 64);

    // The spec and the routes agree.
    let spec = spec();
    let ops = operations(&spec);
    let documented: BTreeSet<(String, String)> = ops.iter().map(|o| (o.0.clone(), o.1.clone())).collect();
    let routed: BTreeSet<(String, String)> = ROUTES.iter().map(|(m, p)| (m.to_string(), p.to_string())).collect();
    assert_eq!(documented, routed, "docs/openapi.json must document exactly the routes");

    // Every operation answers one of its documented statuses; secured ones refuse without the
    // token (and with a wrong one), with the documented error shape.
    let codes: BTreeSet<String> = spec["components"]["schemas"]["Error"]["properties"]["error"]["properties"]["code"]
        ["enum"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap().to_string())
        .collect();
    for (method, path, documented, secured) in &ops {
        let concrete = path.replace("{host}", "nothing.test").replace("{id}", &"0".repeat(32));
        let concrete = match concrete.as_str() {
            "/search" => "/search?q=tides".to_string(),
            "/urls" => "/urls?url=http://nothing.test/".to_string(),
            _ => concrete,
        };
        let method = Method::from_bytes(method.as_bytes()).unwrap();
        let body = (path == "/seeds").then(|| serde_json::json!({ "urls": ["http://nothing.test/"] }));
        if *secured {
            for wrong in [None, Some("0".repeat(64).as_str())] {
                let (status, v) = api.call(method.clone(), &concrete, wrong, body.clone()).await;
                assert_eq!(status, StatusCode::UNAUTHORIZED, "{method} {path}: {v}");
                assert_eq!(v["error"]["code"], "unauthorized", "{v}");
                assert!(documented.contains(&401));
            }
        } else {
            let (status, v) = api.call(method.clone(), &concrete, None, body).await;
            assert!(
                documented.contains(&status.as_u16()),
                "{method} {path} answered {status}, documented {documented:?}: {v}"
            );
            if !status.is_success() {
                assert!(codes.contains(v["error"]["code"].as_str().unwrap()), "{v}");
            }
        }
    }
    assert_eq!(api.status().await["urls_queued"], 0, "nothing was added without the token");
    let (status, v) = api.call(Method::GET, "/nowhere", None, None).await;
    assert_eq!((status, v["error"]["code"].as_str()), (StatusCode::NOT_FOUND, Some("not_found")));
    let (status, v) = api.call(Method::DELETE, "/status", None, None).await;
    assert_eq!((status, v["error"]["code"].as_str()), (StatusCode::METHOD_NOT_ALLOWED, Some("method_not_allowed")));
    let (status, v) = api.call(Method::POST, "/seeds", Some(&token), Some(serde_json::json!({"url": 1}))).await;
    assert_eq!((status, v["error"]["code"].as_str()), (StatusCode::BAD_REQUEST, Some("bad_body")));
    for bad in ["bad%20host", "::::", "a..b", ".a.test", "a.test:99999", "[zz]"] {
        let (status, v) = api.call(Method::PUT, &format!("/hosts/{bad}/block"), Some(&token), None).await;
        assert_eq!((status, v["error"]["code"].as_str()), (StatusCode::BAD_REQUEST, Some("bad_host")), "{bad}");
    }

    // With the token: seeds, a block, pause and resume.
    let b_host = format!("b.test:{}", server.port());
    let seeds = serde_json::json!({ "urls": [server.url("a.test", "/"), server.url("b.test", "/"), "ftp://x.test/"] });
    let (status, v) = api.call(Method::POST, "/seeds", Some(&token), Some(seeds)).await;
    assert_eq!(status, StatusCode::OK, "{v}");
    let outcomes: Vec<&str> = v["results"].as_array().unwrap().iter().map(|r| r["outcome"].as_str().unwrap()).collect();
    assert_eq!(outcomes, ["queued", "queued", "rejected"], "{v}");
    // Let b.test be asked a little (its home page processed: the third request follows one of
    // its links, so the rest are queued), then block it.
    let deadline = Instant::now() + Duration::from_secs(30);
    while server.requests().iter().filter(|r| r.host.starts_with("b.test") && r.path != "/robots.txt").count() < 3 {
        assert!(Instant::now() < deadline, "b.test was never crawled");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (status, v) = api.call(Method::PUT, &format!("/hosts/{b_host}/block"), Some(&token), None).await;
    assert_eq!((status, v["blocked"].as_bool()), (StatusCode::OK, Some(true)), "{v}");
    assert!(v["dropped"].as_u64().unwrap() > 0, "b.test still had URLs queued: {v}");
    let blocked_at = std::time::Instant::now();
    let (_, v) = api.call(Method::GET, "/hosts/blocked", None, None).await;
    assert_eq!(v["hosts"], serde_json::json!([b_host]));

    let (status, _) = api.call(Method::POST, "/crawl/pause", Some(&token), None).await;
    assert_eq!(status, StatusCode::OK);
    let deadline = Instant::now() + Duration::from_secs(20);
    // Paused, and nothing the node started is still on its way: the node reports no fetch in
    // flight and the server is answering none.
    loop {
        let s = api.status().await;
        if s["state"] == "paused" && s["in_flight"] == 0 && server.in_flight() == 0 {
            break;
        }
        assert!(Instant::now() < deadline, "not paused: {s}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let before = server.requests().len();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(server.requests().len(), before, "no request while paused");
    assert!(api.status().await["queued"].as_u64().unwrap() > 0, "work was left when paused");

    let (status, _) = api.call(Method::POST, "/crawl/resume", Some(&token), None).await;
    assert_eq!(status, StatusCode::OK);
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let s = api.status().await;
        if s["state"] == "idle" {
            break;
        }
        assert!(Instant::now() < deadline, "the crawl did not finish after resuming: {s}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let log = server.requests();
    assert!(log.len() > before, "the crawl went on");
    let a_pages = log
        .iter()
        .filter(|r| r.host.starts_with("a.test") && !r.path.ends_with(".txt") && !r.path.ends_with(".xml"))
        .count();
    assert_eq!(a_pages, 30, "every page of a.test");
    // A request in flight at the block finished; nothing of b.test started afterwards.
    let settled = blocked_at + Duration::from_millis(200);
    let late = log.iter().filter(|r| r.host.starts_with("b.test") && r.started > settled).count();
    assert_eq!(late, 0, "b.test was asked after its block");
    let (status, v) = api.call(Method::DELETE, &format!("/hosts/{b_host}/block"), Some(&token), None).await;
    assert_eq!((status, v["was_blocked"].as_bool()), (StatusCode::OK, Some(true)), "{v}");

    node.shutdown().await;
}

/// The API's own defences, on a real node over real TCP: requests naming a foreign host (DNS
/// rebinding) are refused, no CORS header invites other origins, over-long targets and
/// headers and bad query strings answer the documented JSON, and half-sent requests neither
/// hold the server (each is closed after the header-read timeout) nor keep `/health` from
/// answering.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_api_refuses_foreign_hosts_and_bounds_slow_and_oversized_requests() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let server = WebServer::start(vec![generated_site("a.test", 5, 2)]).await.unwrap();
    let dir = common::work_dir();
    let mut c = common::config(&server, dir.path(), 150);
    c.api.listen = "127.0.0.1:0".parse().unwrap();
    c.api.allowed_hosts = vec!["weft.home.arpa".into()];
    let node = common::Running::start(c).await;
    let base = format!("http://{}", node.api);
    // A new connection per request: a kept-alive one would skip the queue of half-sent requests
    // below, and the server closes it after HEADER_READ_TIMEOUT idle — the test's last request
    // once met that close half-way (connection reset, CI).
    let client = reqwest::Client::builder().no_proxy().pool_max_idle_per_host(0).build().unwrap();
    let error_code = |v: &Value| v["error"]["code"].as_str().unwrap_or("").to_string();
    let get = |path: &str, headers: &[(&str, String)]| {
        let mut req = client.get(format!("{base}{path}"));
        for (k, v) in headers {
            req = req.header(*k, v);
        }
        async move {
            let resp = req.send().await.unwrap();
            let (status, headers) = (resp.status(), resp.headers().clone());
            let body: Value = serde_json::from_str(&resp.text().await.unwrap()).unwrap_or(Value::Null);
            (status, headers, body)
        }
    };
    let port = node.api.port();

    // DNS rebinding: a page at evil.example (resolving to 127.0.0.1) asking from the browser.
    let origin = ("origin", "http://evil.example".to_string());
    let (status, headers, body) = get("/status", &[("host", format!("evil.example:{port}")), origin.clone()]).await;
    assert_eq!((status, error_code(&body).as_str()), (StatusCode::FORBIDDEN, "host_not_allowed"), "{body}");
    assert!(headers.get("access-control-allow-origin").is_none());
    let (status, headers, _) = get("/status", &[origin]).await;
    assert_eq!(status, StatusCode::OK);
    assert!(headers.get("access-control-allow-origin").is_none(), "no CORS: {headers:?}");
    for host in [format!("localhost:{port}"), format!("weft.home.arpa:{port}"), format!("[::1]:{port}")] {
        assert_eq!(get("/health", &[("host", host.clone())]).await.0, StatusCode::OK, "{host}");
    }

    // Oversized target and headers, a bad query string: the documented JSON.
    let long = format!("/search?q={}", "a".repeat(weft_node::api::MAX_URI_BYTES));
    let (status, _, body) = get(&long, &[]).await;
    assert_eq!((status, error_code(&body).as_str()), (StatusCode::URI_TOO_LONG, "uri_too_long"));
    let big = ("x-big", "b".repeat(weft_node::api::MAX_HEADER_BYTES));
    let (status, _, body) = get("/health", &[big]).await;
    assert_eq!(
        (status, error_code(&body).as_str()),
        (StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE, "headers_too_large")
    );
    let (status, _, body) = get("/hosts/top?n=many", &[]).await;
    assert_eq!((status, error_code(&body).as_str()), (StatusCode::BAD_REQUEST, "bad_request"), "{body}");
    assert!(body["error"]["message"].as_str().unwrap().contains("query"), "{body}");

    // More half-sent requests than the API serves at once.
    let slow = weft_node::api::MAX_CONNECTIONS + 144;
    let mut sockets = Vec::new();
    for _ in 0..slow {
        let mut s = tokio::net::TcpStream::connect(node.api).await.unwrap();
        s.write_all(b"GET /status HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ").await.unwrap();
        sockets.push(s);
    }
    let opened = Instant::now();
    // /health gets through: at worst it waits for the first slots to time out.
    let (status, _, _) = get("/health", &[]).await;
    assert_eq!(status, StatusCode::OK);
    let waited = opened.elapsed();
    assert!(waited < weft_node::api::HEADER_READ_TIMEOUT + Duration::from_secs(10), "/health took {waited:?}");
    // Every half-sent request is closed by the server (those waiting in the backlog once they
    // get a slot): end of stream, within two timeouts.
    let deadline = opened + 2 * weft_node::api::HEADER_READ_TIMEOUT + Duration::from_secs(15);
    for (i, s) in sockets.iter_mut().enumerate() {
        let left = deadline.saturating_duration_since(Instant::now());
        let mut buf = [0u8; 512];
        let read = tokio::time::timeout(left, s.read(&mut buf)).await;
        assert!(
            matches!(read, Ok(Ok(_)) | Ok(Err(_))),
            "half-sent request {i} of {slow} still open after {:?}",
            opened.elapsed()
        );
    }
    assert_eq!(get("/health", &[]).await.0, StatusCode::OK, "the API serves on");
    node.shutdown().await;
}
