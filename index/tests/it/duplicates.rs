//! The index's near-duplicate decision with the network's side recorded: this node's tables
//! are asked before the network, the SimHash is carried (computed once), and only indexed
//! documents are published. The network's side itself is the DHT, exercised with real nodes in
//! `tests/tests/it/network_dedup.rs`; here it only records what it is asked.

use std::sync::Mutex;
use weft_config::IndexConfig;
use weft_index::duplicates::{publish_indexed, remote_duplicate, NetworkDuplicates};
use weft_index::{Document, Indexer, Outcome};

#[derive(Default)]
struct Recorded {
    asked: Mutex<Vec<(u64, String)>>,
    published: Mutex<Vec<(u64, String)>>,
    answer: Option<(String, u32)>,
}

impl NetworkDuplicates for Recorded {
    fn find(&self, simhash: u64, _max_distance: u32, url: &str) -> Option<(String, u32)> {
        self.asked.lock().unwrap().push((simhash, url.to_string()));
        self.answer.clone()
    }
    fn publish(&self, simhash: u64, url: &str, _fetched_at: u64) {
        self.published.lock().unwrap().push((simhash, url.to_string()));
    }
}

const STORY: &str = "The harbour council voted on Tuesday to rebuild the old stone pier, which storms damaged \
    last winter. Fishing crews had asked for the repair for months, saying the broken pier made landing a catch \
    dangerous at low tide. Work starts in spring and should take a year; the council will pay for it from the \
    port's reserve and a grant from the regional government.";

fn doc(url: &str, text: &str) -> Document {
    Document { url: url.into(), title: "Pier".into(), text: text.into(), fetched_at: 1, ..Default::default() }
}

#[test]
fn local_copies_are_found_before_the_network_is_asked_and_only_indexed_documents_are_published() {
    let dir = tempfile::tempdir().unwrap();
    let (_db, index) = weft_index::testing::open_index(dir.path());
    let mut indexer =
        Indexer::new(index.clone(), &weft_index::testing::embed_config(), &IndexConfig::default()).unwrap();
    let max = indexer.max_distance();
    assert!(max > 0, "dedup is on by default");
    let net = Recorded { answer: Some(("https://elsewhere.test/pier".into(), 1)), ..Default::default() };

    // Computed once and carried: fingerprinting again keeps the value.
    let first = doc("https://a.test/pier", STORY).fingerprinted();
    let hash = first.simhash.expect("a story has a SimHash");
    assert_eq!(first.clone().fingerprinted().simhash, Some(hash));

    // Nothing like it here: the network is asked, with the carried hash.
    assert_eq!(remote_duplicate(&index, &first, max, &net), net.answer.clone());
    assert_eq!(net.asked.lock().unwrap().as_slice(), [(hash, "https://a.test/pier".to_string())]);

    // Indexed here and published; an alias or a failure is not published.
    let out = indexer.index(vec![first.clone()]).unwrap();
    assert!(matches!(out[0], Outcome::Indexed { .. }), "{out:?}");
    publish_indexed(&net, max, &out[0], first.simhash, &first.url, first.fetched_at);
    let alias = Outcome::Alias { canonical: first.url.clone(), distance: 0 };
    publish_indexed(&net, max, &alias, Some(hash), "https://b.test/pier", 1);
    publish_indexed(&net, max, &Outcome::Failed { reason: "x".into() }, Some(hash), "https://c.test/", 1);
    publish_indexed(&net, 0, &out[0], Some(hash), "https://d.test/", 1);
    assert_eq!(net.published.lock().unwrap().as_slice(), [(hash, "https://a.test/pier".to_string())]);

    // A copy under another URL: this node's tables answer, the network is not asked again.
    let copy = doc("https://b.test/pier", STORY).fingerprinted();
    assert_eq!(remote_duplicate(&index, &copy, max, &net), None);
    assert_eq!(net.asked.lock().unwrap().len(), 1, "no network round trip for a local copy");
    let out = indexer.index(vec![copy]).unwrap();
    assert!(matches!(&out[0], Outcome::Alias { canonical, .. } if canonical == "https://a.test/pier"), "{out:?}");

    // Dedup off, or no fingerprint yet: nothing is asked.
    let other = doc("https://c.test/other", &STORY.replace("pier", "bridge"));
    assert_eq!(remote_duplicate(&index, &other, max, &net), None, "not fingerprinted");
    assert_eq!(remote_duplicate(&index, &other.fingerprinted(), 0, &net), None, "dedup off");
    assert_eq!(net.asked.lock().unwrap().len(), 1);
}
