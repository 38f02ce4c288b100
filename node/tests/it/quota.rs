//! The disk quota on a real node (real model, sled, USearch file): a node that crawled and
//! indexed a news site is restarted with a quota below what its data dir uses; it evicts the
//! documents fetched longest ago, keeps the rest searchable, and its use goes back down.

use crate::common;
use std::collections::BTreeMap;
use std::net::IpAddr;
use std::time::{Duration, Instant};

use weft_node::{Node, RunOptions};
use weft_simnet::news::news_site;
use weft_simnet::WebServer;

const HOST: &str = "news1.test";
const ARTICLES: usize = 160;

fn config(server: &WebServer, dir: &std::path::Path) -> weft_config::Config {
    let mut c = weft_config::Config { data_dir: dir.to_path_buf(), ..Default::default() };
    c.fetch.allow_private_networks = true;
    let lo: IpAddr = "127.0.0.1".parse().unwrap();
    c.fetch.resolve = BTreeMap::from([(HOST.to_string(), lo)]);
    c.politeness.default_delay_ms = 0;
    c.frontier.seen_capacity = 10_000;
    c.api.listen = "127.0.0.1:0".parse().unwrap();
    c.crawl.seeds = vec![server.url(HOST, "/")];
    c.embed = weft_index::testing::embed_config();
    // About the index's disk quota: the sizes it measures must be the index's alone, not the
    // layout store's samples and templates growing beside them.
    c.layouts.enabled = false;
    c
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_its_disk_quota_a_node_evicts_its_oldest_documents() {
    let news = news_site(HOST, 1, ARTICLES);
    let server = WebServer::start(vec![news.site.clone()]).await.unwrap();
    let dir = common::work_dir();
    let c = config(&server, dir.path());
    let (_stop, rx) = tokio::sync::watch::channel(false);
    Node::open(c.clone()).unwrap().run(RunOptions { exit_when_idle: true }, rx, |_| {}).await.unwrap();
    let documents = {
        let db = weft_frontier::open_db(&dir.path().join("db"), 8 << 20).unwrap();
        let index = weft_index::LocalIndex::open(&db, dir.path(), c.embed.dims, &c.index).unwrap();
        let s = index.stats();
        s.documents + s.aliases + s.failed
    };
    // Measured after a reopen, as the restarted node measures it: the document store's
    // journal is written into tables when it is opened again.
    let used = {
        let db = weft_frontier::open_db(&dir.path().join("db"), 8 << 20).unwrap();
        weft_node::quota::used_bytes(&db, dir.path())
    };
    eprintln!("data dir after the crawl: {used} bytes");
    assert!(documents > ARTICLES as u64, "{documents}");

    // Restart with a quota well under that: nothing new to crawl, the quota is what acts.
    let mut c = config(&server, dir.path());
    c.index.disk_quota_mb = ((used >> 20) * 6 / 10).max(1);
    assert!(c.index.disk_quota_mb << 20 < used, "the fixture must be over the quota: {used} bytes");
    c.index.quota_check_secs = 1;
    let node = common::Running::start(c).await;
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        let s = node.get("/status").await;
        if s["index"]["evicted"].as_u64().unwrap_or(0) > 0 {
            break s;
        }
        assert!(Instant::now() < deadline, "nothing was evicted: {s}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let index = &status["index"];
    let (left, evicted) = (index["documents"].as_u64().unwrap(), index["evicted"].as_u64().unwrap());
    assert!(left > 0 && left < documents, "{status}");
    assert_eq!(
        left + evicted + index["aliases"].as_u64().unwrap() + index["failed"].as_u64().unwrap(),
        documents,
        "{status}"
    );
    assert_eq!(index["chunks"], index["vectors"], "no orphans: {status}");
    // What is left still answers.
    let answer = node.get("/search?q=the%20harbour%20council&k=3").await;
    assert!(!answer["hits"].as_array().unwrap().is_empty(), "{answer}");
    node.shutdown().await;
}
