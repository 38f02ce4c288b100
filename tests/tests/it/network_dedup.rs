//! A story syndicated on two hosts that belong to different nodes is indexed once in the
//! network: the second node finds the first one's fingerprint on its blocks' owners (real libp2p over
//! loopback, the real embedding model) and records its copy as an alias without embedding it.

use crate::common;

use std::time::Duration;
use weft_node::Node;
use weft_simnet::{Site, WebServer, TOPICS};

fn story(chrome: &str) -> String {
    let text: String = TOPICS[..4].iter().flat_map(|t| t.paragraphs).map(|p| format!("<p>{p}</p>")).collect();
    format!("<html><head><title>A syndicated story</title></head><body><nav>{chrome}</nav><article><h1>A syndicated story</h1>{text}</article></body></html>")
}

fn config(server: &WebServer, dir: &std::path::Path, n: usize, bootstrap: Vec<String>) -> weft_config::Config {
    common::member_config(server, dir, n, bootstrap, 0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_syndicated_story_is_indexed_once_in_the_network() {
    let _network = common::one_of_several_networks();
    let sites: Vec<Site> =
        (0..16).map(|i| Site::new(&format!("s{i}.test")).html("/story", &story(&format!("Site {i}")))).collect();
    let server = WebServer::start(sites).await.unwrap();
    let (d0, d1) = (common::work_dir(), common::work_dir());
    let first = Node::open(config(&server, d0.path(), 0, vec![])).unwrap();
    let net0 = first.network().unwrap().clone();
    tokio::time::timeout(Duration::from_secs(10), net0.wait_for(|s| !s.listen_addrs.is_empty())).await.unwrap();
    let second = Node::open(config(&server, d1.path(), 1, vec![net0.status().listen_addrs[0].clone()])).unwrap();
    let net1 = second.network().unwrap().clone();
    let (index0, index1) = (first.index().unwrap().clone(), second.index().unwrap().clone());
    let crawler = first.crawler().clone();
    let mut runs = Vec::new();
    let mut stops = Vec::new();
    for node in [first, second] {
        let (tx, rx) = tokio::sync::watch::channel(false);
        stops.push(tx);
        runs.push(tokio::spawn(node.run(weft_node::RunOptions::default(), rx, |_| {})));
    }
    common::all_members(&[&net0, &net1], 2, Duration::from_secs(60)).await;
    let ring = net0.ring();
    let (id0, id1) = (net0.peer_id(), net1.peer_id());
    let host_of = |owner: &weft_p2p::PeerId| {
        (0..16).map(|i| format!("s{i}.test")).find(|h| ring.owner(h) == Some(owner)).unwrap()
    };
    let (a, b) = (host_of(&id0), host_of(&id1));

    // The copy on node 0's host is crawled and indexed first, and its fingerprint published.
    crawler.add_seeds(&[server.url(&a, "/story")]).await;
    tokio::time::timeout(Duration::from_secs(60), async {
        while index0.status().pages_indexed < 1 || net0.status().dht_published < 1 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("node 0 indexes and publishes");
    // Node 1 can see it (the publication is a request to each owner; wait for it to be kept).
    let url_a = server.url(&a, "/story");
    let hash = weft_index::dedup::simhash(&weft_extract_text(&story("x"))).unwrap();
    let probe = net1.clone();
    tokio::time::timeout(Duration::from_secs(30), async move {
        loop {
            let p = probe.clone();
            let found = tokio::task::spawn_blocking(move || {
                p.find_duplicate_blocking(hash, 3, "http://probe.test/", Duration::from_secs(5))
            })
            .await
            .unwrap();
            if found.is_some() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await
    .expect("the fingerprint reaches its owners");

    // The copy on node 1's host: found on the owners, recorded as an alias, not embedded.
    crawler.add_seeds(&[server.url(&b, "/story")]).await;
    tokio::time::timeout(Duration::from_secs(60), async {
        while index1.status().pages_aliased + index1.status().pages_indexed < 1 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("node 1 handles its copy");
    let (s0, s1) = (index0.status(), index1.status());
    assert_eq!((s0.stored.documents, s0.stored.aliases), (1, 0), "{s0:?}");
    assert_eq!((s1.stored.documents, s1.stored.aliases, s1.stored.chunks), (0, 1, 0), "{s1:?}");
    let alias = index1.index().document(&server.url(&b, "/story")).unwrap().unwrap();
    assert_eq!(alias.state, weft_index::DocState::Alias { canonical: weft_index::DocId::of_url(&url_a), distance: 0 });
    assert!(net1.status().dht_duplicates_found >= 1);

    for tx in stops {
        tx.send(true).unwrap();
    }
    for run in runs {
        run.await.unwrap().unwrap();
    }
}

/// The main text the extractor gives for a story page (what the index fingerprints).
fn weft_extract_text(html: &str) -> String {
    let url = url::Url::parse("http://x.test/story").unwrap();
    weft_extract::extract(html.as_bytes(), &[], &url).text
}
