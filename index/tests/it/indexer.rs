//! The index end to end with the real model, real sled and real USearch files: re-crawls
//! replace chunks without orphans, near duplicates are aliases, the vector index survives a
//! clean restart and is rebuilt after a crash, failures are recorded, bad text still indexes.

use std::path::Path;
use std::sync::Arc;
use weft_config::IndexConfig;
use weft_index::vectors::{Opened, FILE};
use weft_index::{DocId, DocState, Document, Indexer, LocalIndex, Outcome};

fn open(dir: &Path) -> (sled::Db, Arc<LocalIndex>) {
    weft_index::testing::open_index(dir)
}

fn indexer(index: &Arc<LocalIndex>) -> Indexer {
    Indexer::new(index.clone(), &weft_index::testing::embed_config(), &IndexConfig::default()).unwrap()
}

fn doc(url: &str, title: &str, text: &str) -> Document {
    Document { url: url.into(), title: title.into(), text: text.into(), fetched_at: 1, ..Default::default() }
}

fn paragraphs(topic: &str, n: usize) -> String {
    (0..n)
        .map(|i| format!("Paragraph {i} about {topic}: the {topic} has many aspects worth describing in detail, from its history to its use today."))
        .collect::<Vec<_>>()
        .join("\n\n")
}

const ARTICLE: &str = "Lighthouses guided ships along dangerous coasts for centuries. Early towers burned wood or \
    coal in open fires; later, oil lamps with polished reflectors and then Fresnel lenses threw a beam many miles \
    out to sea. Each light has its own pattern of flashes, so sailors can tell one from another at night. Keepers \
    lived in the towers with their families, trimming wicks, winding the clockwork that turned the lens and \
    sounding fog signals in bad weather. Today almost every lighthouse is automated, and many of the old keepers' \
    cottages have become museums or holiday homes. Modern ships navigate by satellite, but the lights remain as a \
    backup and as landmarks, and some coastal communities still hold festivals to celebrate them.";

#[test]
fn a_recrawl_replaces_the_old_chunks_and_leaves_no_orphans() {
    let dir = tempfile::tempdir().unwrap();
    let (_db, index) = open(dir.path());
    let mut ix = indexer(&index);
    let url = "https://garden.test/roses";
    let long = paragraphs("rose garden", 60);
    let out = ix.index(vec![doc(url, "Roses", &long)]).unwrap();
    let Outcome::Indexed { chunks: before, replaced: false } = out[0] else { panic!("{out:?}") };
    assert!(before >= 4, "{before} chunks");
    let old = index.document(url).unwrap().unwrap().chunks;
    assert_eq!(index.vectors().len(), before);
    // Chunks link to their neighbours, in document order.
    for (i, key) in old.iter().enumerate() {
        let chunk = index.store().chunk(*key).unwrap().unwrap();
        assert_eq!(chunk.position as usize, i);
        assert_eq!(chunk.prev, i.checked_sub(1).map(|p| old[p]));
        assert_eq!(chunk.next, old.get(i + 1).copied());
    }

    let out =
        ix.index(vec![doc(url, "Roses", "A short note: the roses were all replaced by tulips this year.")]).unwrap();
    assert_eq!(out[0], Outcome::Indexed { chunks: 1, replaced: true });
    let record = index.document(url).unwrap().unwrap();
    assert_eq!(record.chunks.len(), 1);
    assert_eq!(index.store().chunk_count(), 1, "old chunks left in the store");
    assert_eq!(index.store().vector_count(), 1, "old vectors left in the store");
    assert_eq!(index.vectors().len(), 1, "old vectors left in the HNSW index");
    for key in old.iter().skip(1) {
        assert!(!index.vectors().contains(*key) && index.store().chunk(*key).unwrap().is_none());
    }
    let stats = index.stats();
    assert_eq!((stats.documents, stats.chunks, stats.vectors), (1, 1, 1));
}

#[test]
fn a_near_duplicate_is_recorded_as_an_alias_and_not_embedded() {
    let dir = tempfile::tempdir().unwrap();
    let (_db, index) = open(dir.path());
    let mut ix = indexer(&index);
    let a = "https://news.test/2024/lighthouses";
    let b = "https://news.test/print/lighthouses";
    let c = "https://mirror.test/lighthouses";
    let described = Document {
        author: Some("Ada Lovelace".into()),
        published: Some("2024-05-01T08:00:00+00:00".into()),
        modified: Some("2024-05-04T12:00:00+02:00".into()),
        canonical: Some(a.into()),
        ..doc(a, "Lighthouses", ARTICLE)
    };
    let out = ix.index(vec![described]).unwrap();
    assert!(matches!(out[0], Outcome::Indexed { .. }));
    let chunks = index.store().chunk_count();
    // Another batch, and two copies in one batch (the second is caught within the batch).
    let out = ix.index(vec![doc(b, "Lighthouses (print)", ARTICLE)]).unwrap();
    assert_eq!(out[0], Outcome::Alias { canonical: a.into(), distance: 0 });
    let dated = format!("Updated 4 May. {ARTICLE}");
    let out = ix
        .index(vec![doc(c, "Lighthouses", &dated), doc("https://x.test/other", "Other", &paragraphs("tea", 3))])
        .unwrap();
    assert!(matches!(out[0], Outcome::Alias { ref canonical, distance } if canonical == a && distance <= 3), "{out:?}");
    assert!(matches!(out[1], Outcome::Indexed { .. }));

    assert_eq!(index.store().chunk_count(), chunks + 1, "aliases are not embedded");
    let canonical = index.document(a).unwrap().unwrap();
    assert_eq!(canonical.aliases, vec![b.to_string(), c.to_string()]);
    let alias = index.document(b).unwrap().unwrap();
    assert_eq!(alias.state, DocState::Alias { canonical: DocId::of_url(a), distance: 0 });
    assert_eq!(index.stats().aliases, 2);

    // A search finds the canonical page once, naming its aliases.
    let mut e = weft_index::Embedder::open(&weft_index::testing::embed_config(), 1).unwrap();
    let q = e.embed(&["old towers with lamps that warned sailors"]).unwrap().remove(0);
    let hits = index.search(&q, 5).unwrap();
    assert_eq!(hits[0].page.url, a);
    assert_eq!(hits[0].aliases, vec![b.to_string(), c.to_string()]);
    assert_eq!(hits.iter().filter(|h| h.page.url.contains("lighthouses")).count(), 1);
    // What the page said of itself is stored with it and comes back with the hit.
    assert_eq!(hits[0].page.author.as_deref(), Some("Ada Lovelace"));
    assert_eq!(hits[0].page.published.as_deref(), Some("2024-05-01T08:00:00+00:00"));
    assert_eq!(hits[0].page.modified.as_deref(), Some("2024-05-04T12:00:00+02:00"));
    assert_eq!(hits[0].page.canonical.as_deref(), Some(a));

    // Re-crawling the canonical page keeps its aliases.
    ix.index(vec![doc(a, "Lighthouses", ARTICLE)]).unwrap();
    assert_eq!(index.document(a).unwrap().unwrap().aliases.len(), 2);
}

#[test]
fn the_vector_index_is_loaded_after_a_clean_stop_and_caught_up_after_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let docs: Vec<Document> = ["whales", "bicycles", "volcanoes"]
        .iter()
        .map(|t| doc(&format!("https://t.test/{t}"), t, &paragraphs(t, 8)))
        .collect();
    {
        let (_db, index) = open(dir.path());
        assert_eq!(*index.opened(), Opened::New);
        indexer(&index).index(docs[..2].to_vec()).unwrap();
        assert!(index.snapshot().unwrap(), "a changed index writes a snapshot");
        assert!(!index.snapshot().unwrap(), "an unchanged one does not");
    }
    let n = {
        let (_db, index) = open(dir.path());
        assert_eq!(*index.opened(), Opened::Loaded);
        // A crash after this commit and before the next snapshot:
        indexer(&index).index(docs[2..].to_vec()).unwrap();
        index.store().flush().unwrap();
        index.vectors().len()
    };
    // What the snapshot missed is added again from sled: nothing rebuilt.
    let (_db, index) = open(dir.path());
    assert_eq!(*index.opened(), Opened::Loaded);
    assert_eq!(index.vectors().len(), n);
    let mut e = weft_index::Embedder::open(&weft_index::testing::embed_config(), 1).unwrap();
    let q = e.embed(&["volcanoes"]).unwrap().remove(0);
    assert_eq!(index.search(&q, 1).unwrap()[0].page.url, "https://t.test/volcanoes");
    drop((index, _db));

    // A torn or foreign snapshot file is rebuilt too, never trusted.
    std::fs::write(dir.path().join(FILE), b"not a usearch file").unwrap();
    let (_db, index) = open(dir.path());
    assert!(matches!(index.opened(), Opened::Rebuilt { .. }), "{:?}", index.opened());
    assert_eq!(index.vectors().len(), n);
}

/// A flipped byte in the middle of the snapshot's vectors loads without an error and changes
/// search results; the snapshot's checksum catches it and the index is rebuilt from sled.
#[test]
fn a_snapshot_whose_bytes_changed_on_disk_is_rebuilt_not_trusted() {
    let dir = tempfile::tempdir().unwrap();
    let docs: Vec<Document> = ["whales", "bicycles", "volcanoes", "orchards", "glaciers"]
        .iter()
        .map(|t| doc(&format!("https://t.test/{t}"), t, &paragraphs(t, 8)))
        .collect();
    let mut e = weft_index::Embedder::open(&weft_index::testing::embed_config(), 1).unwrap();
    let q = e.embed(&["volcanoes"]).unwrap().remove(0);
    let before = {
        let (_db, index) = open(dir.path());
        indexer(&index).index(docs).unwrap();
        assert!(index.snapshot().unwrap());
        index.search(&q, 5).unwrap().iter().map(|h| (h.page.url.clone(), h.score)).collect::<Vec<_>>()
    };
    assert_eq!(weft_index::vectors::verify_snapshot(dir.path()), Ok(true));
    // Flip 16 bytes in the middle of the file.
    let path = dir.path().join(FILE);
    let mut bytes = std::fs::read(&path).unwrap();
    let mid = bytes.len() / 2;
    for b in &mut bytes[mid..mid + 16] {
        *b ^= 0x5a;
    }
    std::fs::write(&path, &bytes).unwrap();
    let why = weft_index::vectors::verify_snapshot(dir.path()).unwrap_err();
    assert!(matches!(why, weft_index::vectors::SnapshotDamage::Changed(_)), "{why}");
    let (_db, index) = open(dir.path());
    let Opened::Rebuilt { reason, .. } = index.opened() else { panic!("{:?}", index.opened()) };
    assert!(reason.contains("checksum"), "{reason}");
    let after: Vec<(String, f32)> =
        index.search(&q, 5).unwrap().iter().map(|h| (h.page.url.clone(), h.score)).collect();
    assert_eq!(after, before, "the rebuilt index answers as before the damage");
    // The next snapshot is sound again.
    index.vectors().add(u64::MAX, &q).unwrap();
    assert!(index.snapshot().unwrap());
    assert_eq!(weft_index::vectors::verify_snapshot(dir.path()), Ok(true));
}

#[test]
fn a_failing_model_records_the_document_as_failed() {
    let dir = tempfile::tempdir().unwrap();
    let (_db, index) = open(dir.path());
    // Wrong output dimensions: every batch fails (and is retried) with a typed error.
    let mut embed = weft_index::testing::embed_config();
    embed.dims = 512;
    let mut ix = Indexer::new(index.clone(), &embed, &IndexConfig::default()).unwrap();
    let out = ix.index(vec![doc("https://f.test/a", "A", &paragraphs("failure", 2))]).unwrap();
    let Outcome::Failed { reason } = &out[0] else { panic!("{out:?}") };
    assert!(reason.contains("embed.dims"), "{reason}");
    let record = index.document("https://f.test/a").unwrap().unwrap();
    assert!(matches!(record.state, DocState::Failed { .. }));
    let stats = index.stats();
    assert_eq!(stats.failed, 1);
    assert_eq!(stats.recent_failures[0].0, "https://f.test/a");
    assert_eq!(stats.chunks, 0);
}

#[test]
fn empty_huge_non_latin_and_emoji_texts_index() {
    let dir = tempfile::tempdir().unwrap();
    let (_db, index) = open(dir.path());
    let mut ix = indexer(&index);
    let huge = "The quick brown fox jumps over the lazy dog while the river keeps flowing ".repeat(14_000);
    assert!(huge.len() > 1_000_000);
    let docs = vec![
        doc("https://b.test/empty", "Only a title", ""),
        doc("https://b.test/nothing", "", ""),
        doc("https://b.test/huge", "One paragraph of a megabyte", &huge),
        doc("https://b.test/ja", "東京", &"東京は日本の首都です。人口は約千四百万人です。".repeat(30)),
        doc("https://b.test/emoji", "Party", &"🎉🚀 party time 🎈🎂! ".repeat(60)),
    ];
    let out = ix.index(docs).unwrap();
    assert!(matches!(out[0], Outcome::Indexed { chunks: 1, .. }), "a title alone is searchable: {out:?}");
    assert!(matches!(out[1], Outcome::Indexed { chunks: 0, .. }), "{out:?}");
    let Outcome::Indexed { chunks, .. } = out[2] else { panic!("{out:?}") };
    assert!(chunks > 800, "{chunks} chunks for ~200k tokens");
    assert!(
        matches!(out[3], Outcome::Indexed { chunks: 1.., .. })
            && matches!(out[4], Outcome::Indexed { chunks: 1.., .. })
    );
    assert_eq!(index.vectors().len(), index.store().chunk_count());
}

#[test]
fn the_oldest_documents_are_found_and_removed_everywhere() {
    let dir = tempfile::tempdir().unwrap();
    let (_db, index) = open(dir.path());
    let mut ix = indexer(&index);
    let topics = ["roses", "tulips", "ferns", "mosses"];
    let docs: Vec<Document> = topics
        .iter()
        .enumerate()
        .map(|(i, t)| Document {
            fetched_at: 100 + i as u64,
            ..doc(&format!("https://garden.test/{t}"), t, &paragraphs(t, 8))
        })
        .collect();
    ix.index(docs).unwrap();
    let oldest = index.oldest(2).unwrap();
    let urls: Vec<&str> = oldest.iter().map(|(_, r)| r.url.as_str()).collect();
    assert_eq!(urls, ["https://garden.test/roses", "https://garden.test/tulips"]);
    let chunks = oldest[0].1.chunks.clone();
    assert!(index.remove(oldest[0].0).unwrap());
    assert!(!index.remove(oldest[0].0).unwrap(), "already gone");
    assert!(index.document("https://garden.test/roses").unwrap().is_none());
    for key in &chunks {
        assert!(index.store().chunk(*key).unwrap().is_none() && !index.vectors().contains(*key));
        assert!(index.store().vector(*key).unwrap().is_none());
    }
    assert_eq!(index.stats().documents, 3);
    assert_eq!(index.stats().vectors, index.stats().chunks, "no orphans");
    // The removed page no longer answers.
    let query = weft_index::Embedder::open(&weft_index::testing::embed_config(), 1).unwrap().embed(&["roses"]).unwrap();
    let hits = index.search(&query[0], 10).unwrap();
    assert!(hits.iter().all(|h| !h.page.url.ends_with("/roses")), "{hits:?}");
    assert_eq!(hits.len(), 3);
}
