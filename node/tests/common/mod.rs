//! Helpers shared by the node's integration tests: a config that points every virtual host of
//! the loopback test server at 127.0.0.1.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::Path;
use std::time::Duration;
use weft_config::Config;
use weft_node::{Node, RunOptions, Status};
use weft_simnet::WebServer;

pub fn config(server: &WebServer, data_dir: &Path, delay_ms: u64) -> Config {
    let mut c = Config { data_dir: data_dir.to_path_buf(), ..Default::default() };
    c.api.enabled = false;
    // These tests are about crawling; the index has its own (tests/tests/search.rs).
    c.index.enabled = false;
    c.fetch.allow_private_networks = true;
    let lo: IpAddr = "127.0.0.1".parse().unwrap();
    c.fetch.resolve = server.hosts().into_iter().map(|h| (h, lo)).collect::<BTreeMap<_, _>>();
    c.politeness.default_delay_ms = delay_ms;
    c.frontier.seen_capacity = 100_000;
    c.crawl.concurrency = 8;
    c
}

/// Crawls until idle (or the timeout) and returns the final status.
pub async fn crawl_until_idle(config: Config, timeout: Duration) -> Status {
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
