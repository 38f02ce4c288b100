//! The memory target: a node whose resident memory is over `crawl.memory_target_mb` starts no
//! new request — `/status` says `throttled` and shows the figures, and the web server's log
//! shows no request while it is.

use crate::common;

use std::time::{Duration, Instant};
use weft_simnet::{generated_site, WebServer};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_its_memory_target_a_node_starts_no_new_request() {
    let server = WebServer::start(vec![generated_site("m.test", 200, 3)]).await.unwrap();
    let dir = common::work_dir();
    let mut c = common::config(&server, dir.path(), 100);
    c.api.listen = "127.0.0.1:0".parse().unwrap();
    c.crawl.seeds = vec![server.url("m.test", "/")];
    // Any process is bigger than 1 MiB.
    c.crawl.memory_target_mb = 1;
    let node = common::Running::start(c).await;
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        let s = node.get("/status").await;
        if s["state"] == "throttled" && server.in_flight() == 0 {
            break s;
        }
        assert!(Instant::now() < deadline, "never throttled: {s}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(status["memory_target_bytes"], 1 << 20);
    assert!(status["memory_bytes"].as_u64().unwrap() > 1 << 20, "{status}");
    let before = server.requests().len();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(server.requests().len(), before, "a request started while throttled");
    let s = node.get("/status").await;
    assert!(s["queued"].as_u64().unwrap() > 0, "the work waits: {s}");
    let metrics = node.text("/metrics").await;
    assert!(metrics.contains("weft_memory_target_bytes 1048576"), "{metrics}");
    node.shutdown().await;
}
