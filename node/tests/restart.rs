//! The real `weft` binary, killed with SIGKILL mid-crawl and restarted on the same data dir.

use std::collections::HashMap;
use std::path::Path;
use std::process::{Child, Command};
use std::time::{Duration, Instant};
use weft_simnet::{generated_site, WebServer};

mod common;

use common::WEFT;

fn write_config(server: &WebServer, dir: &Path) -> std::path::PathBuf {
    let resolve: String = server.hosts().iter().map(|h| format!("\"{h}\" = \"127.0.0.1\"\n")).collect();
    let seeds: Vec<String> = ["k1.test", "k2.test"].iter().map(|h| format!("\"{}\"", server.url(h, "/"))).collect();
    let body = format!(
        "data_dir = \"{}\"\n[crawl]\nseeds = [{}]\n[fetch]\nallow_private_networks = true\n[fetch.resolve]\n{resolve}\
         [politeness]\ndefault_delay_ms = 150\n[frontier]\nseen_capacity = 100000\nsnapshot_interval_secs = 3600\n\
         [api]\nlisten = \"127.0.0.1:0\"\n",
        dir.join("data").display(),
        seeds.join(", "),
    );
    common::write_config_with_model(dir, &body)
}

/// Starts `weft start --exit-when-idle` and returns it with the API address from its JSON log.
fn start(config: &Path) -> (Child, String) {
    let (child, mut logs) = common::spawn_weft(config, &["--exit-when-idle"]);
    // (A thread keeps reading the log into a channel, so the child never blocks on a full pipe.)
    (child, logs.field("addr", "127.0.0.1:"))
}

fn page_fetches(server: &WebServer) -> HashMap<(String, String), usize> {
    let mut counts = HashMap::new();
    for r in server.requests() {
        if r.path == "/" || r.path.starts_with("/p/") {
            *counts.entry((r.host.clone(), r.path.clone())).or_insert(0) += 1;
        }
    }
    counts
}

#[test]
fn kill_9_and_restart_fetches_every_page_exactly_once() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let server = rt
        .block_on(WebServer::start(vec![generated_site("k1.test", 40, 3), generated_site("k2.test", 40, 3)]))
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(&server, dir.path());

    let (mut child, addr) = start(&config);
    // `weft status` against the running node.
    let deadline = Instant::now() + Duration::from_secs(60);
    while page_fetches(&server).len() < 25 {
        assert!(Instant::now() < deadline, "crawl made no progress");
        std::thread::sleep(Duration::from_millis(5));
    }
    let out = Command::new(WEFT).args(["status", "--json", "--api", &addr]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let status: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(status["pages_fetched"].as_u64().unwrap() >= 20, "{status}");
    let human = Command::new(WEFT).args(["status", "--api", &addr]).output().unwrap();
    assert!(String::from_utf8_lossy(&human.stdout).contains("pages fetched"));

    // Kill in a quiet moment: no request being served and the last one answered a little while
    // ago, so its completion has reached the disk. Then SIGKILL: no chance to clean up.
    // With the index on, a page's lease completes only after it is indexed: wait until every
    // fetched page has an index outcome too.
    // (Asked over HTTP, not with `weft status`: starting a process takes longer than the gap
    // between two fetches on a fast machine, and a fetch during the question spoils the moment.)
    let client = reqwest::Client::new();
    let status_url = format!("http://{addr}/status");
    let indexed_all = || {
        let body = rt.block_on(async { client.get(&status_url).send().await?.text().await }).unwrap_or_default();
        let s: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
        let i = &s["index"];
        let done: u64 = ["pages_indexed", "pages_aliased", "pages_failed"].iter().filter_map(|k| i[k].as_u64()).sum();
        // ... and every lease completed and its completion on disk: a page indexed but not yet
        // completed is still in flight for the frontier, and one completed but not flushed is
        // still queued on disk; either is fetched again after a crash.
        s["pages_fetched"].as_u64().is_some_and(|p| p == done) && s["in_flight"] == 0 && s["unflushed"] == 0
    };
    let kill_at = loop {
        let quiet = || {
            server.in_flight() == 0
                && server.requests().last().is_some_and(|r| r.answered.elapsed() > Duration::from_millis(15))
        };
        if quiet() && indexed_all() && quiet() {
            child.kill().unwrap();
            break Instant::now();
        }
        std::thread::sleep(Duration::from_micros(200));
    };
    child.wait().unwrap();
    let before = page_fetches(&server);
    eprintln!("killed with {} of 80 pages fetched", before.len());
    assert!(before.len() < 80, "killed mid-crawl, not after it ({} pages fetched at the kill)", before.len());

    let (mut child, mut logs) = common::spawn_weft(&config, &["--exit-when-idle"]);
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            assert!(status.success(), "restarted node exits cleanly when idle");
            break;
        }
        assert!(Instant::now() < deadline, "restarted node did not finish");
        std::thread::sleep(Duration::from_millis(20));
    }

    let counts = page_fetches(&server);
    assert_eq!(counts.len(), 80, "every page fetched");
    // And every page is in the index once, its vectors consistent with the store.
    {
        let db = sled::open(dir.path().join("data/db")).unwrap();
        let index = weft_index::LocalIndex::open(&db, &dir.path().join("data"), 384, &Default::default()).unwrap();
        let stats = index.stats();
        // Page i of k1.test and of k2.test differ only in the host name: near duplicates.
        assert_eq!((stats.documents, stats.aliases, stats.failed), (40, 40, 0), "{stats:?}");
        assert_eq!(stats.vectors, stats.chunks, "{stats:?}");
    }
    // `weft search` with no node running reads the data dir.
    let out =
        Command::new(WEFT).args(["search", "--json", "--config"]).arg(&config).arg("synthetic page").output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let answer: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(answer["hits"].as_array().unwrap().len(), 10, "{answer}");
    // Only a request that was in flight at the kill could legitimately be repeated; the quiet
    // moment above means there should be none.
    let in_flight_at_kill: Vec<_> = server
        .requests()
        .into_iter()
        .filter(|r| r.started <= kill_at && r.answered + Duration::from_millis(15) >= kill_at)
        .collect();
    let repeated: Vec<_> = counts.iter().filter(|(_, &n)| n > 1).collect();
    let said: Vec<String> = repeated.iter().flat_map(|((_, p), _)| logs.lines_with(p.as_str())).collect();
    assert!(
        repeated.is_empty(),
        "fetched more than once: {repeated:?} (in flight at kill: {in_flight_at_kill:?}); the restarted node said: {said:#?}"
    );
    let robots = server.requests().iter().filter(|r| r.path == "/robots.txt").count();
    assert_eq!(robots, 2, "robots.txt is cached in the data dir across the restart (one per host)");
}

#[test]
fn config_check_and_show() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.toml");
    std::fs::write(&bad, "[fetch]\nmax_redirects = 50\n").unwrap();
    let out = Command::new(WEFT).args(["config", "check"]).arg(&bad).output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("fetch.max_redirects") && err.contains("0 ..= 20") && err.contains("bad.toml"), "{err}");

    let good = dir.path().join("good.toml");
    std::fs::write(&good, "[crawl]\nconcurrency = 4\n").unwrap();
    assert!(Command::new(WEFT).args(["config", "check"]).arg(&good).status().unwrap().success());

    let out = Command::new(WEFT)
        .args(["config", "show", "--config"])
        .arg(&good)
        .env("WEFT_POLITENESS__DEFAULT_DELAY_MS", "2500")
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(shown.contains("concurrency = 4") && shown.contains("default_delay_ms = 2500"), "{shown}");

    let out = Command::new(WEFT).args(["start", "--config"]).arg(&good).env("WEFT_CRAWL__NOPE", "1").output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("WEFT_CRAWL__NOPE"));
}
