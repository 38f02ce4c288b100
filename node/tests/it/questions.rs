//! A node's questions and searches on their own threads (`node::indexing`): the question thread
//! embeds this node's questions with the shared model; the search thread answers searches, this
//! node's and its peers', which need no model. A search must not wait for a queue of questions.

use crate::common;

use std::time::Instant;

/// Forty-eight long questions are queued for the model, then a search (as a peer's arrives,
/// with its vector): the search is answered while questions are still being embedded. With one
/// thread for both (before), it waited behind all forty-eight.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_search_is_answered_while_questions_wait_for_the_model() {
    let dir = common::work_dir();
    let node = weft_node::Node::open(common::default_config(dir.path())).unwrap();
    let index = node.index().expect("the index is on by default").clone();
    let vector = index.embed_query("how tides follow the moon").await.unwrap();
    // ~256 tokens each: long enough that the queue takes a while to embed on any machine.
    let questions: Vec<String> =
        (0..48).map(|i| (0..200).map(|w| format!("word{}", (w * 7 + i) % 97)).collect::<Vec<_>>().join(" ")).collect();
    let embedded = futures::future::join_all(questions.iter().map(|q| {
        let index = index.clone();
        async move {
            index.embed_query(q).await.expect("embedded");
            Instant::now()
        }
    }));
    let searched = async {
        let hits = index.search_query(vector, None, 10).await.expect("searched");
        (hits, Instant::now())
    };
    // `join!` polls in order: every question is queued before the search.
    let (embedded, (hits, searched)) = tokio::join!(embedded, searched);
    assert!(hits.is_empty(), "nothing is indexed");
    let after = embedded.iter().filter(|t| **t > searched).count();
    assert!(after > 0, "the search was answered after every question was embedded");
    index.stop();
}
