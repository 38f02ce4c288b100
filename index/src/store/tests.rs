//! The document store's tests: replacing and removing without orphans, aliases, syncs, and the
//! move from sled.

use super::*;

fn open(dir: &Path) -> (sled::Db, DocStore) {
    let db = weft_db::open_db(&dir.join("db"), 8 << 20).unwrap();
    let store = DocStore::open(dir, &db).unwrap();
    (db, store)
}

fn record(url: &str, chunks: &[u64], simhash: u64) -> DocRecord {
    DocRecord { simhash: Some(simhash), ..crate::testing::indexed_record(url, "T", 1, 100, chunks.to_vec()) }
}

fn chunk(doc: DocId, key: u64, position: u32, text: &str) -> NewChunk {
    NewChunk { key, record: ChunkRecord::new(doc, position, 0, text.len(), 3, text), vector: vec![0.5; 4] }
}

/// Every key of a keyspace.
fn keys(ks: &Keyspace) -> Vec<Vec<u8>> {
    ks.iter().map(|i| i.key().unwrap().to_vec()).collect()
}

/// A document replaced with some of the same chunk keys, then removed: the counts follow,
/// a key written again in the same batch is not lost to its own removal, and nothing of
/// the document is left behind (chunks, vectors, SimHash blocks, links).
#[test]
fn replacing_and_removing_a_document_leaves_no_orphans_and_counts_follow() {
    let dir = tempfile::tempdir().unwrap();
    let (_db, store) = open(dir.path());
    let id = DocId::of_url("https://a.test/1");
    let other = DocId::of_url("https://a.test/2");
    store.put(other, &record("https://a.test/2", &[9], 0xffff_0000_ffff_0000), &[chunk(other, 9, 0, "nine")]).unwrap();
    let first = [chunk(id, 1, 0, "one"), chunk(id, 2, 1, "two")];
    let replaced = store.put(id, &record("https://a.test/1", &[1, 2], 0x1234), &first).unwrap();
    assert!(replaced.old_state.is_none() && replaced.removed.is_empty());
    assert_eq!((store.doc_count(), store.chunk_count()), (2, 3));

    // Key 2 stays (new text), 1 goes, 3 arrives; the fingerprint changes.
    let second = [chunk(id, 2, 0, "two again"), chunk(id, 3, 1, "three")];
    let replaced = store.put(id, &record("https://a.test/1", &[2, 3], 0xabcd_0000), &second).unwrap();
    assert_eq!((replaced.old_state, replaced.removed), (Some(DocState::Indexed), vec![1]));
    assert_eq!((store.doc_count(), store.chunk_count()), (2, 3));
    assert_eq!(store.chunk(2).unwrap().unwrap().text().unwrap(), "two again");
    assert!(store.chunk(1).unwrap().is_none() && !store.has_vector(1) && store.has_vector(2));
    assert_eq!(store.near_duplicate(0xabcd_0000, 0, &other).unwrap(), Some((id, 0)));
    assert_eq!(store.near_duplicate(0x1234, 0, &other).unwrap(), None, "the old fingerprint's blocks went");

    store.set_links(&id, &["https://a.test/3".into()]).unwrap();
    assert_eq!(store.remove(id).unwrap().unwrap().chunks, vec![2, 3]);
    assert_eq!(store.remove(id).unwrap(), None);
    assert_eq!((store.doc_count(), store.chunk_count()), (1, 1));
    assert_eq!(keys(&store.chunks), vec![9u64.to_be_bytes().to_vec()]);
    assert_eq!(keys(&store.vectors), vec![9u64.to_be_bytes().to_vec()]);
    assert!(keys(&store.blocks).iter().all(|k| k[3..] == other.0), "only the other document's blocks");
    assert!(store.links(&id).unwrap().is_empty());

    // The counts are the store's after a reopen too.
    drop(store);
    let (_db2, store) = {
        drop(_db);
        open(dir.path())
    };
    assert_eq!((store.doc_count(), store.chunk_count(), store.vector_count()), (1, 1, 1));
}

/// A sync after nothing new was written is skipped; after a write it is made.
#[test]
fn a_sync_is_made_only_for_writes_not_yet_synced() {
    let dir = tempfile::tempdir().unwrap();
    let (_db, store) = open(dir.path());
    let before = store.syncs.count();
    let id = DocId::of_url("https://a.test/s");
    store.put(id, &record("https://a.test/s", &[1], 1), &[chunk(id, 1, 0, "s")]).unwrap();
    store.flush().unwrap();
    store.flush().unwrap();
    assert_eq!(store.syncs.count(), before + 1, "the second had nothing to sync");
    store.set_links(&id, &["https://a.test/t".into()]).unwrap();
    store.flush().unwrap();
    assert_eq!(store.syncs.count(), before + 2);
}

/// A near duplicate recorded as an alias is added to its canonical document's list, and
/// that list survives the canonical document's re-crawl.
#[test]
fn aliases_are_recorded_on_their_canonical_document_and_kept_across_recrawls() {
    let dir = tempfile::tempdir().unwrap();
    let (_db, store) = open(dir.path());
    let canonical = DocId::of_url("https://a.test/c");
    store.put(canonical, &record("https://a.test/c", &[1], 7), &[chunk(canonical, 1, 0, "c")]).unwrap();
    let alias = DocRecord { state: DocState::Alias { canonical, distance: 1 }, ..record("https://a.test/c?x", &[], 7) };
    store.put(DocId::of_url("https://a.test/c?x"), &alias, &[]).unwrap();
    assert_eq!(store.doc(&canonical).unwrap().unwrap().aliases, vec!["https://a.test/c?x".to_string()]);
    store.put(canonical, &record("https://a.test/c", &[1], 7), &[chunk(canonical, 1, 0, "c2")]).unwrap();
    assert_eq!(store.doc(&canonical).unwrap().unwrap().aliases, vec!["https://a.test/c?x".to_string()]);
    assert_eq!((store.doc_count(), store.chunk_count()), (2, 1));
    assert_eq!(store.doc_counts(), DocCounts { indexed: 1, aliases: 1, failed: 0 });
}

/// Writes documents into sled as the release before kept them.
fn write_legacy(db: &sled::Db, n: u64) {
    let (docs, chunks, vectors) = (
        db.open_tree("index.docs").unwrap(),
        db.open_tree("index.chunks").unwrap(),
        db.open_tree("index.vectors").unwrap(),
    );
    db.open_tree("index.simhash").unwrap();
    for i in 0..n {
        let url = format!("https://old.test/{i}");
        let id = DocId::of_url(&url);
        docs.insert(id.0, encode(&record(&url, &[i], i))).unwrap();
        chunks.insert(i.to_be_bytes(), encode(&ChunkRecord::new(id, 0, 0, 3, 1, "old"))).unwrap();
        vectors.insert(i.to_be_bytes(), vector_bytes(&[0.25; 4])).unwrap();
    }
    db.flush().unwrap();
}

/// A store an earlier release kept in sled is moved over when first opened, and the sled
/// trees are dropped; a move stopped after its copy (the key written, sled not yet
/// emptied) only drops, and never copies old records over newer ones.
#[test]
fn documents_kept_in_sled_by_an_earlier_release_are_moved_once() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = weft_db::open_db(&dir.path().join("db"), 8 << 20).unwrap();
        write_legacy(&db, 5000);
        assert_eq!(legacy::pending(&db), Some(5000));
    }
    let (db, store) = open(dir.path());
    assert_eq!((store.doc_count(), store.chunk_count()), (5000, 5000));
    assert_eq!(store.chunk(4999).unwrap().unwrap().text().unwrap(), "old");
    assert_eq!(store.vector(17).unwrap().unwrap(), vec![0.25; 4]);
    assert_eq!(legacy::pending(&db), None);
    assert!(!db.tree_names().iter().any(|n| n.starts_with(b"index.")), "the sled trees are gone");

    // Stopped after the copy: sled still has trees (here: written again), the key is there.
    let id = DocId::of_url("https://old.test/3");
    store.put(id, &record("https://old.test/3", &[3], 3), &[chunk(id, 3, 0, "newer")]).unwrap();
    write_legacy(&db, 10);
    drop(store);
    let store = DocStore::open(dir.path(), &db).unwrap();
    assert_eq!(store.chunk(3).unwrap().unwrap().text().unwrap(), "newer", "not overwritten by the old copy");
    assert_eq!(legacy::pending(&db), None);
    assert_eq!(store.doc_count(), 5000);
}

fn v1() -> DocRecordV1 {
    DocRecordV1 {
        url: "https://a.test/x".into(),
        title: "X".into(),
        description: None,
        language: Some("en".into()),
        site_name: None,
        published: Some("2026-03-01T09:00:00+00:00".into()),
        page_type: Some("article".into()),
        fetched_at: 7,
        word_count: 300,
        simhash: Some(42),
        chunks: vec![1, 2],
        state: DocState::Alias { canonical: DocId([3; 16]), distance: 2 },
        aliases: vec!["https://a.test/y".into()],
    }
}

#[test]
fn documents_written_by_the_first_release_still_read() {
    let old = decode_doc(&encode(&v1())).unwrap();
    assert_eq!((old.url.as_str(), old.word_count, old.chunks.len()), ("https://a.test/x", 300, 2));
    assert_eq!(old.state, DocState::Alias { canonical: DocId([3; 16]), distance: 2 });
    assert_eq!((old.modified, old.author, old.canonical), (None, None, None));
    // And this release's records read back whole.
    let new = DocRecord {
        modified: Some("2026-04-02T10:30:00+00:00".into()),
        author: Some("Ada Lovelace".into()),
        canonical: Some("https://a.test/x".into()),
        ..decode_doc(&encode(&v1())).unwrap()
    };
    assert_eq!(decode_doc(&encode(&new)).unwrap(), new);
    assert!(matches!(decode_doc(b"\xff\xff"), Err(IndexError::Corrupt(_))));
}
