//! Semantic placement end to end: three real nodes on loopback (real libp2p, the real model,
//! sled, USearch and tantivy), the default configuration but for the replicas. Node A crawls
//! and indexes thirty pages on thirty subjects; each chunk is published to the owners of its
//! two best cells. Then A stops, and every page is still found from node C: by C's own cell
//! store, or by B answering from the postings it holds for A's pages.

use crate::common;

use std::collections::HashMap;
use std::time::{Duration, Instant};
use weft_node::Node;
use weft_simnet::{topic_page, Site, WebServer, TOPICS};

const NODES: usize = 3;
const CANDIDATES: usize = 60;

fn host(topic: usize, j: usize) -> String {
    format!("c{topic}-{j}.test")
}

async fn until(what: &str, limit: Duration, mut ok: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !ok() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_indexed_on_a_node_that_left_are_found_through_their_cells_owners() {
    let _network = common::one_network_at_a_time();
    let sites: Vec<Site> = (0..TOPICS.len())
        .flat_map(|t| (0..CANDIDATES).map(move |j| Site::new(&host(t, j)).html("/", &topic_page(&TOPICS[t]))))
        .collect();
    let server = WebServer::start(sites).await.unwrap();
    let dirs: Vec<common::WorkDir> = (0..NODES).map(|_| common::work_dir()).collect();
    let mut bootstrap = Vec::new();
    let (mut nets, mut indexes, mut crawlers, mut apis, mut stops, mut runs) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for (n, dir) in dirs.iter().enumerate() {
        let mut c = common::member_config(&server, dir.path(), n, bootstrap.clone(), 0);
        c.crawl.max_depth = 0;
        c.p2p.leave_timeout_secs = 5;
        // Two owners per cell, not three: with three members, three would put every cell on
        // every node, and C would answer everything from its own store.
        c.search.replicas = 2;
        let node = Node::open(c).unwrap();
        let net = node.network().unwrap().clone();
        tokio::time::timeout(Duration::from_secs(10), net.wait_for(|s| !s.listen_addrs.is_empty())).await.unwrap();
        if n == 0 {
            bootstrap = vec![net.status().listen_addrs[0].clone()];
        }
        indexes.push(node.index().unwrap().clone());
        crawlers.push(node.crawler().clone());
        let (tx, rx) = tokio::sync::watch::channel(false);
        let (api_tx, api_rx) = tokio::sync::oneshot::channel();
        runs.push(tokio::spawn(node.run(weft_node::RunOptions::default(), rx, move |a| {
            let _ = api_tx.send(a);
        })));
        apis.push(api_rx.await.unwrap());
        stops.push(tx);
        nets.push(net);
    }
    for net in &nets {
        tokio::time::timeout(Duration::from_secs(60), net.wait_for(|s| s.members.len() == NODES))
            .await
            .expect("members");
    }
    let (a, b, c) = (0, 1, 2);
    let ids: Vec<String> = nets.iter().map(|n| n.peer_id().to_string()).collect();

    // Every topic on a host node A owns.
    let ring = nets[a].ring();
    let mut page_of: HashMap<usize, String> = HashMap::new();
    for t in 0..TOPICS.len() {
        let h = (0..CANDIDATES).map(|j| host(t, j)).find(|h| ring.owner(h).is_some_and(|o| o.to_string() == ids[a]));
        page_of.insert(t, server.url(&h.unwrap(), "/"));
    }
    crawlers[a].add_seeds(&page_of.values().cloned().collect::<Vec<_>>()).await;
    until("node A indexes the thirty pages", Duration::from_secs(180), || {
        indexes[a].status().stored.documents == TOPICS.len() as u64
    })
    .await;
    // Every page's postings reached its cells' owners: each page is held by B or C (every
    // pair of owners has one of them), and nothing waits at A.
    let docs: Vec<weft_index::DocId> = (0..TOPICS.len()).map(|t| weft_index::DocId::of_url(&page_of[&t])).collect();
    let holds = |n: usize, d: &weft_index::DocId| indexes[n].cells().unwrap().provenance(d).unwrap().is_some();
    until("node A's postings are stored by their owners", Duration::from_secs(60), || {
        docs.iter().all(|d| holds(b, d) || holds(c, d)) && nets[a].status().postings.backlog == 0
    })
    .await;
    let chunks = indexes[a].status().stored.chunks;
    let status = nets[a].status().postings;
    eprintln!("A: {chunks} chunks, {} postings published; {status:?}", status.published);
    assert_eq!((status.replicas, status.dropped, status.refused), (2, 0, 0), "{status:?}");
    for n in [b, c] {
        let held = indexes[n].cells().unwrap().counts();
        let p = nets[n].status().postings;
        eprintln!("node {n} holds {held:?} of A's chunks (documents, chunks); {p:?}");
        assert!(p.received > 0 && p.refused == 0, "{p:?}");
        assert!(p.cells_owned > 0 && p.cells_owned < 256, "two owners of 256 cells among three members: {p:?}");
    }

    // A stops: its index goes with it.
    stops[a].send(true).unwrap();
    runs.remove(a).await.unwrap().unwrap();
    until("B and C see A gone", Duration::from_secs(30), || {
        nets[b].status().members.len() == 2 && nets[c].status().members.len() == 2
    })
    .await;

    let http = reqwest::Client::builder().no_proxy().build().unwrap();
    // Asked from B and from C. A page the asker does not hold (none of its cells is the
    // asker's) can only come from the other: answered by it.
    let mut remote = 0;
    for (asker, other) in [(c, b), (b, c)] {
        let mut found = 0;
        for (t, topic) in TOPICS.iter().enumerate() {
            let url = &page_of[&t];
            let r = http.get(format!("http://{}/search", apis[asker])).query(&[("q", topic.question), ("k", "5")]);
            let v: serde_json::Value = r.send().await.unwrap().json().await.unwrap();
            let top = &v["hits"][0];
            if top["url"].as_str() != Some(url.as_str()) {
                eprintln!("{}: not first at node {asker}: {v:#}", topic.slug);
                continue;
            }
            found += 1;
            // The page's metadata crossed the network in its postings.
            assert_eq!(top["title"].as_str(), Some(TOPICS[t].title), "{v:#}");
            assert_eq!(top["author"], "Topic Web Editors", "{v:#}");
            let doc = weft_index::DocId::of_url(url);
            if indexes[asker].cells().unwrap().provenance(&doc).unwrap().is_none() {
                assert_eq!(
                    top["peer"].as_str(),
                    Some(ids[other].as_str()),
                    "{}: only node {other} holds it",
                    topic.slug
                );
                remote += 1;
            }
        }
        eprintln!("from node {asker} with A gone: {found}/{} found first", TOPICS.len());
        assert_eq!(found, TOPICS.len(), "every page of the node that left is found from node {asker}");
    }
    eprintln!("{remote} answers came from the other node's cell store");
    assert!(remote > 0, "some pages were held by one of B and C only");

    for (stop, run) in stops.into_iter().skip(1).zip(runs) {
        stop.send(true).unwrap();
        run.await.unwrap().unwrap();
    }
}
