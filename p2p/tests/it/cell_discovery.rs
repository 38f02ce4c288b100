//! A question routed by cells goes out at once: it does not wait for the DHT's providers of its
//! LSH buckets. The wait cost up to 150 ms a question: at N = 20 live, the first of two
//! questions in a row took a median 165 ms and the second, its buckets cached, 13 ms. Routed by
//! the buckets, the same question looks its providers up. Real libp2p on loopback.

use weft_p2p::placement::shipped;
use weft_p2p::search::{PageMeta, RemoteHit, SearchReply, SearchRequest};
use weft_p2p::{NetworkConfig, Routing};

const NODES: usize = 3;

fn config(bootstrap: Vec<String>) -> NetworkConfig {
    NetworkConfig { model: Some("m".into()), ..crate::tcp_config(bootstrap) }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_routed_by_cells_does_not_wait_for_the_dht() {
    let mut nodes = crate::members(NODES, config).await;
    let a = nodes[0].handle.clone();
    for n in nodes.iter_mut().skip(1) {
        let mut queries = std::mem::replace(&mut n.queries, tokio::sync::mpsc::channel(1).1);
        tokio::spawn(async move {
            while let Some(q) = queries.recv().await {
                let hit = RemoteHit {
                    page: PageMeta { url: "http://answer.test/".into(), title: "answer".into(), ..Default::default() },
                    snippet: "an answer".into(),
                    score: 0.9,
                    ..Default::default()
                };
                let _ = q.reply.send(SearchReply::Hits(vec![hit]));
            }
        });
    }
    let request = SearchRequest { model: "m".into(), vector: shipped().cell(7).to_vec(), k: 5, text: None };
    let answer = a.search_with(request.clone(), 2, Routing::Cells).await;
    assert!(!answer.answers.is_empty() && !answer.partial, "{answer:?}");
    assert_eq!(a.status().search.provider_lookups, 0, "routed by cells: no provider lookup");

    // (No member provides a bucket — none has a summary — so it finds no one to ask.)
    let answer = a.search_with(request, 2, Routing::Buckets).await;
    assert!(answer.answers.is_empty(), "{answer:?}");
    assert!(a.status().search.provider_lookups > 0, "routed by the buckets: their providers are looked up");
    for n in nodes {
        n.handle.stop();
        n.task.await.unwrap();
    }
}
