//! A question goes to the owners of its best cells on the asker's ring at once: nothing to
//! discover first. A vector of another dimension than the codebook's
//! has no cells and asks nobody. Real libp2p on loopback.

use weft_p2p::placement::{cell_owners, shipped};
use weft_p2p::search::{PageMeta, RemoteHit, SearchReply, SearchRequest};
use weft_p2p::NetworkConfig;

/// Four members, three owners a cell: the asker owns three cells in four, and asks others for
/// the fourth.
const NODES: usize = 4;

fn config(bootstrap: Vec<String>) -> NetworkConfig {
    NetworkConfig { model: Some("m".into()), ..crate::tcp_config(bootstrap) }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_asks_the_owners_of_its_cells_and_an_unplaceable_one_asks_nobody() {
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
    // A question whose best cell is one the asker does not own (the cell's own centroid).
    let (book, replicas) = (shipped(), weft_config::SearchConfig::default().replicas);
    let ring = a.ring();
    let owners = |c: u32| cell_owners(&ring, book.id(), c, replicas);
    let cell = (0..book.len() as u32).find(|c| !owners(*c).contains(&a.peer_id())).expect("a cell of others");
    let request = SearchRequest { model: "m".into(), vector: book.cell(cell).to_vec(), k: 5, text: None };
    let answer = a.search(request.clone(), 2).await;
    assert!(!answer.answers.is_empty() && !answer.partial, "{answer:?}");
    // The first peer asked was chosen for that cell, the question's best, and owns it.
    let (first, cells) = &answer.by_cell[0];
    assert_eq!(cells[0], cell, "{answer:?}");
    assert!(owners(cell).iter().any(|o| o.to_string() == *first), "{first} is not among {:?}", owners(cell));
    assert_eq!(answer.contacted[0], *first);

    let other = SearchRequest { vector: vec![0.5; 16], ..request };
    let answer = a.search(other, 2).await;
    assert!(answer.contacted.is_empty() && answer.answers.is_empty() && !answer.partial, "{answer:?}");
    for n in nodes {
        n.handle.stop();
        n.task.await.unwrap();
    }
}
