//! Three nodes form one crawler over real libp2p on loopback: only the first is seeded, with a
//! hub page linking twelve hosts; every host is crawled by exactly the member that owns it on
//! the ring, each page once — judged from the test web server's log, where each node signs its
//! requests with its own User-Agent.

use crate::common;

use std::collections::{HashMap, HashSet};
use std::time::Duration;
use weft_node::Node;
use weft_simnet::{Site, WebServer};

const HOSTS: usize = 12;

fn sites(port: u16) -> Vec<Site> {
    let links: String =
        (0..HOSTS).map(|i| format!("<li><a href=\"http://h{i}.test:{port}/\">host {i}</a></li>")).collect();
    let mut sites = vec![Site::new("hub.test").html("/", &format!("<html><body><ul>{links}</ul></body></html>"))];
    for i in 0..HOSTS {
        let page = |p: &str| {
            format!("<html><body><h1>h{i}{p}</h1><p>Page {p} of host {i}.</p><a href=\"/a\">a</a> <a href=\"/b\">b</a></body></html>")
        };
        sites.push(
            Site::new(&format!("h{i}.test")).html("/", &page("/")).html("/a", &page("/a")).html("/b", &page("/b")),
        );
    }
    sites
}

fn config(server: &WebServer, dir: &std::path::Path, n: usize, bootstrap: Vec<String>) -> weft_config::Config {
    let mut c = common::member_config(server, dir, n, bootstrap, 0);
    c.index.enabled = false;
    c
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_host_is_crawled_by_its_owner_alone() {
    let _network = common::one_of_several_networks();
    let server = WebServer::start_with(sites).await.unwrap();
    let dirs: Vec<_> = (0..3).map(|_| common::work_dir()).collect();

    let first = Node::open(config(&server, dirs[0].path(), 0, vec![])).unwrap();
    let net = first.network().unwrap().clone();
    tokio::time::timeout(Duration::from_secs(10), net.wait_for(|s| !s.listen_addrs.is_empty())).await.unwrap();
    let boot = net.status().listen_addrs[0].clone();
    let mut nodes = vec![first];
    for (n, dir) in dirs.iter().enumerate().skip(1) {
        nodes.push(Node::open(config(&server, dir.path(), n, vec![boot.clone()])).unwrap());
    }
    let handles: Vec<_> = nodes.iter().map(|n| n.network().unwrap().clone()).collect();
    let crawlers: Vec<_> = nodes.iter().map(|n| n.crawler().clone()).collect();
    let mut stops = Vec::new();
    let mut runs = Vec::new();
    for node in nodes {
        let (tx, rx) = tokio::sync::watch::channel(false);
        stops.push(tx);
        runs.push(tokio::spawn(node.run(weft_node::RunOptions::default(), rx, |_| {})));
    }
    common::all_members(&handles.iter().collect::<Vec<_>>(), 3, Duration::from_secs(60)).await;
    // Peer id → node number, through the User-Agent each node fetches with.
    let node_of: HashMap<weft_p2p::PeerId, usize> = handles.iter().enumerate().map(|(i, h)| (h.peer_id(), i)).collect();
    let ring = handles[0].ring();
    let owners: HashSet<usize> = (0..HOSTS).map(|i| node_of[ring.owner(&format!("h{i}.test")).unwrap()]).collect();
    assert!(owners.len() >= 2, "the test needs hosts owned by more than one node: {owners:?}");

    // Only node 0 is told about the hub.
    crawlers[0].add_seeds(&[server.url("hub.test", "/")]).await;
    let pages = 1 + HOSTS * 3;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(90);
    loop {
        let fetched: HashSet<(String, String)> = server
            .requests()
            .into_iter()
            .filter(|r| r.path != "/robots.txt" && r.path != "/sitemap.xml")
            .map(|r| (r.host, r.path))
            .collect();
        if fetched.len() == pages {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "only {} of {pages} pages fetched", fetched.len());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Every page was asked for once; judge from the server's log when every crawler says it
    // is idle (nothing queued, nothing in flight) and the server is answering nothing, so a
    // repeat still on its way is counted.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while server.in_flight() > 0 || crawlers.iter().any(|c| c.state() != weft_node::CrawlState::Idle) {
        let states: Vec<_> = crawlers.iter().map(|c| c.state().as_str()).collect();
        assert!(tokio::time::Instant::now() < deadline, "the crawlers never went idle: {states:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let mut by_host: HashMap<String, HashSet<usize>> = HashMap::new();
    let mut count: HashMap<(String, String), usize> = HashMap::new();
    for r in server.requests() {
        let n = (0..3).find(|n| r.user_agent.contains(&format!("WeftTestNode{n}"))).expect("a node's request");
        by_host.entry(r.host.clone()).or_default().insert(n);
        *count.entry((r.host, r.path)).or_default() += 1;
    }
    for host in std::iter::once("hub.test".to_string()).chain((0..HOSTS).map(|i| format!("h{i}.test"))) {
        let owner = node_of[ring.owner(&host).unwrap()];
        assert_eq!(by_host[&host], HashSet::from([owner]), "{host} is owned by node {owner}");
    }
    let repeated: Vec<_> = count.iter().filter(|(_, n)| **n > 1).collect();
    assert!(repeated.is_empty(), "requested more than once: {repeated:?}");
    let sent: u64 = handles[0].status().urls_sent;
    let received: u64 = handles[1..].iter().map(|h| h.status().urls_received).sum();
    assert!(sent > 0 && received > 0, "URLs crossed the network: sent {sent}, received {received}");

    // One at a time: each leaves the network and hands its hosts to the members still there
    // (the last one, alone, keeps its own).
    for (tx, run) in stops.into_iter().zip(runs) {
        tx.send(true).unwrap();
        run.await.unwrap().unwrap();
    }
    // Every URL sent to another member, while crawling or when leaving, was acknowledged: no
    // node's outbox journal holds any.
    drop(crawlers); // they hold the databases open
    for dir in &dirs {
        let db = weft_frontier::open_db(&dir.path().join("db"), 8 << 20).unwrap();
        assert_eq!(db.open_tree("p2p.outbox").unwrap().len(), 0, "unacknowledged URLs left");
    }
}
