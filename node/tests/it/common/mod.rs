//! Helpers shared by the node's integration tests: a config that points every virtual host of
//! the loopback test server at 127.0.0.1.
#![allow(dead_code)]

pub mod coast;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::net::IpAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::Receiver;
use std::time::Duration;
use std::time::Instant;
use weft_config::Config;
use weft_node::{CrawlStatus, Node, RunOptions};
use weft_simnet::WebServer;

/// The `weft` binary Cargo built for these tests.
pub const WEFT: &str = env!("CARGO_BIN_EXE_weft");

pub fn config(server: &WebServer, data_dir: &Path, delay_ms: u64) -> Config {
    let mut c = Config { data_dir: data_dir.to_path_buf(), ..Default::default() };
    c.api.enabled = false;
    // These tests are about crawling: the index (with its model) has its own end-to-end tests
    // (tests/tests/it/search.rs and the default-node tests). Layout learning stays on, as shipped:
    // the teacher's and the browser's requests are crawl requests too.
    c.index.enabled = false;
    c.fetch.allow_private_networks = true;
    let lo: IpAddr = "127.0.0.1".parse().unwrap();
    c.fetch.resolve = server.hosts().into_iter().map(|h| (h, lo)).collect::<BTreeMap<_, _>>();
    c.politeness.default_delay_ms = delay_ms;
    c.frontier.seen_capacity = 100_000;
    c.crawl.concurrency = 8;
    c
}

/// A node's configuration with the defaults (the index with the real model, layouts with
/// Chromium), its data in `data_dir`, allowed to reach loopback: for tests that drive the
/// node's parts themselves (neither the crawl loop nor the API is started by `Node::open`).
pub fn default_config(data_dir: &Path) -> Config {
    let mut c = Config { data_dir: data_dir.to_path_buf(), ..Default::default() };
    c.embed = weft_index::testing::embed_config();
    c.fetch.allow_private_networks = true;
    c
}

/// Crawls until idle (or the timeout) and returns the final status.
pub async fn crawl_until_idle(config: Config, timeout: Duration) -> CrawlStatus {
    let node = Node::open(config).expect("node opens");
    let crawler = node.crawler().clone();
    let (tx, rx) = tokio::sync::watch::channel(false);
    let run = tokio::spawn(node.run(RunOptions { exit_when_idle: true }, rx, |_| {}));
    match tokio::time::timeout(timeout, run).await {
        Ok(joined) => joined.expect("crawl task").expect("crawl ok"),
        Err(_) => {
            let _ = tx.send(true);
            panic!("crawl did not become idle within {timeout:?}: {:?}", crawler.status());
        }
    }
    crawler.status()
}

/// Writes `dir/weft.toml`: `body` (the test's own settings) and an `[embed]` table naming the
/// real model files `scripts/setup.sh` installs, so the node indexes what it crawls. Returns
/// the file's path.
pub fn write_config_with_model(dir: &Path, body: &str) -> std::path::PathBuf {
    let m = weft_index::testing::model_files();
    let toml = format!(
        "{body}[embed]\nmodel = \"{}\"\ntokenizer = \"{}\"\nort_library = \"{}\"\n",
        m.model.display(),
        m.tokenizer.display(),
        m.ort_library.display()
    );
    let path = dir.join("weft.toml");
    std::fs::write(&path, toml).unwrap();
    path
}

/// Starts `weft start --config CONFIG EXTRA...` with JSON logs at the node's default filter
/// (`TEST_NODE_LOG` sets another); returns the child and its log lines.
pub fn spawn_weft(config: &Path, extra: &[&str]) -> (Child, Logs) {
    let mut cmd = Command::new(WEFT);
    match std::env::var("TEST_NODE_LOG") {
        Ok(filter) => cmd.env("RUST_LOG", filter),
        Err(_) => cmd.env_remove("RUST_LOG"),
    };
    let child = cmd
        .args(["--log-format", "json", "start", "--config"])
        .arg(config)
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("weft starts");
    logs_of(child)
}

/// Reads a node's JSON log lines (its stderr, piped) on a thread into [`Logs`].
pub fn logs_of(mut child: Child) -> (Child, Logs) {
    let stderr = child.stderr.take().expect("stderr piped");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Ok(v) = serde_json::from_str::<serde_json::Value>(&line) {
                let _ = tx.send(v);
            } else {
                // Plain lines (a fatal error printed before exit) are kept as messages.
                let _ = tx.send(serde_json::json!({ "fields": { "message": line } }));
            }
        }
    });
    (child, Logs { rx, seen: Vec::new() })
}

/// The log lines of a node, kept so a search never loses a line another search skipped.
pub struct Logs {
    rx: Receiver<serde_json::Value>,
    seen: Vec<serde_json::Value>,
}

impl Logs {
    /// Every line received so far whose text contains `needle` (for a failing test's message).
    pub fn lines_with(&mut self, needle: &str) -> Vec<String> {
        while let Ok(line) = self.rx.try_recv() {
            self.seen.push(line);
        }
        self.seen.iter().map(|l| l.to_string()).filter(|l| l.contains(needle)).collect()
    }

    /// The first `fields.<field>` containing `contains`, waiting for it if needed.
    pub fn field(&mut self, field: &str, contains: &str) -> String {
        let matches = |line: &serde_json::Value| {
            line["fields"][field].as_str().filter(|v| v.contains(contains)).map(str::to_string)
        };
        if let Some(v) = self.seen.iter().find_map(matches) {
            return v;
        }
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let Ok(line) = self.rx.recv_timeout(left) else {
                let last: Vec<String> = self.seen.iter().rev().take(5).map(|l| l.to_string()).collect();
                panic!("no log line with {field} ~ {contains}; the last lines: {last:#?}");
            };
            let found = matches(&line);
            self.seen.push(line);
            if let Some(v) = found {
                return v;
            }
        }
    }
}

/// A browser fetch function that sends each GET `route` accepts — as `(local URL, Host header)`
/// — over real HTTP and answers with the response (status, headers, body); what `route` refuses
/// is blocked. No politeness: for tests of the browser itself and of pages the node serves.
pub fn forward_fetch(
    route: impl Fn(&url::Url) -> Option<(String, String)> + Send + Sync + 'static,
) -> weft_node::browser::Fetch {
    use weft_node::browser::{PageRequest, PageResponse};
    let http = reqwest::Client::builder().no_proxy().build().unwrap();
    let route = std::sync::Arc::new(route);
    std::sync::Arc::new(move |req: PageRequest| {
        let (http, route) = (http.clone(), route.clone());
        Box::pin(async move {
            let url = url::Url::parse(&req.url).ok().filter(|_| req.method == "GET")?;
            let (local, host) = route(&url)?;
            let resp = http.get(local).header("host", host).send().await.ok()?;
            let status = resp.status().as_u16();
            let headers = resp
                .headers()
                .iter()
                .filter_map(|(k, v)| Some((k.to_string(), v.to_str().ok()?.to_string())))
                .collect();
            let body = resp.bytes().await.ok()?.to_vec();
            Some(PageResponse { status, headers, body })
        })
    })
}

/// One of Debian's headless Chromium, for a test that drives a page the node serves.
pub async fn browser() -> weft_node::browser::BrowserPool {
    use weft_node::browser::{BrowserPool, BrowserSettings};
    let settings = BrowserSettings { instances: 1, timeout: Duration::from_secs(60), ..Default::default() };
    BrowserPool::launch(settings).await.expect("Debian's chromium starts (scripts/setup.sh)")
}

/// Answers a page's requests from the server at `addr` (a node's API or search page) alone;
/// anything else is refused and remembered in `foreign`.
pub fn only_from(
    addr: std::net::SocketAddr,
    foreign: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
) -> weft_node::browser::Fetch {
    forward_fetch(move |url| {
        let ours = url.host_str() == Some("127.0.0.1") && url.port() == Some(addr.port());
        if !ours {
            foreign.lock().unwrap().push(url.to_string());
            return None;
        }
        Some((url.to_string(), format!("127.0.0.1:{}", addr.port())))
    })
}

/// Answers `.test` hosts from the loopback server and blocks everything else.
pub fn loopback_fetch(server: &WebServer) -> weft_node::browser::Fetch {
    let port = server.port();
    forward_fetch(move |url| {
        let host = url.host_str().filter(|h| h.ends_with(".test"))?.to_string();
        Some((format!("http://127.0.0.1:{port}{}", &url[url::Position::BeforePath..]), host))
    })
}

pub use weft_test_support::{one_network_at_a_time, skip, work_dir, Running};
