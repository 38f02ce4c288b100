//! The lexical index beside the vectors, with the real model, real sled and real tantivy
//! files: a setting's name finds its own page first by BM25 (`work_mem`, not
//! `maintenance_work_mem`) and the fusion keeps it first;
//! replacing and removing documents leaves the lexical index holding exactly sled's chunks;
//! a missing or stale lexical index is rebuilt from sled on open.

use std::path::Path;
use std::sync::Arc;
use weft_config::IndexConfig;
use weft_index::lexical::Rebuilt;
use weft_index::{DocId, Document, Indexer, LocalIndex};

fn open(dir: &Path) -> (sled::Db, Arc<LocalIndex>) {
    weft_index::testing::open_index(dir)
}

fn doc(url: &str, title: &str, text: &str) -> Document {
    Document { url: url.into(), title: title.into(), text: text.into(), fetched_at: 1, ..Default::default() }
}

/// Ten short pages on one subject — database server settings — that a dense model sees as
/// near the same; each names one setting the others do not.
fn settings() -> Vec<Document> {
    let names = [
        ("shared_buffers", "memory the server uses for caching data pages"),
        ("work_mem", "memory a sort or hash operation may use before spilling to disk"),
        ("maintenance_work_mem", "memory for maintenance operations such as building an index"),
        ("effective_cache_size", "the planner's estimate of the memory available for caching"),
        ("wal_buffers", "memory for write-ahead log data not yet written to disk"),
        ("max_connections", "how many clients may be connected at once"),
        ("checkpoint_timeout", "the longest time between automatic checkpoints"),
        ("random_page_cost", "the planner's estimate of the cost of a random page read"),
        ("autovacuum_naptime", "the delay between autovacuum runs on a database"),
        ("log_min_duration_statement", "the duration above which statements are logged"),
    ];
    names
        .iter()
        .map(|(name, what)| {
            let text = format!(
                "This server setting controls {what}. The setting {name} can be changed in the \
                 configuration file and takes effect after a reload. Choosing a good value depends \
                 on the workload and on the machine the database runs on; measure before and after."
            );
            doc(&format!("https://docs.test/{name}"), "Server configuration setting", &text)
        })
        .collect()
}

#[test]
fn words_find_what_meaning_misses_and_the_lexical_index_follows_sled() {
    let dir = tempfile::tempdir().unwrap();
    let (db, index) = open(dir.path());
    assert_eq!(index.lexical_rebuilt(), Some(&Rebuilt::Missing));
    let embed = weft_index::testing::embed_config();
    let mut ix = Indexer::new(index.clone(), &embed, &IndexConfig::default()).unwrap();
    ix.index(settings()).unwrap();
    let chunks = index.store().chunk_count() as u64;
    assert_eq!(index.lexical().len(), chunks, "committed with the batch");

    let mut query_embedder = weft_index::Embedder::open(&embed, 1).unwrap();
    let mut dense_hits = 0;
    let mut hybrid_hits = 0;
    for doc in settings() {
        let name = doc.url.rsplit('/').next().unwrap();
        let vector = query_embedder.embed(&[name]).unwrap().pop().unwrap();
        if index.search(&vector, 1).unwrap()[0].page.url == doc.url {
            dense_hits += 1;
        }
        let hybrid = index.search_hybrid(name, &vector, 3).unwrap();
        assert_eq!(hybrid[0].lexical_rank, Some(1), "{name}: {hybrid:?}");
        assert!(hybrid[0].score > 0.0 && hybrid[0].score <= 1.0, "a cosine: {hybrid:?}");
        if hybrid[0].page.url == doc.url {
            hybrid_hits += 1;
        }
    }
    assert_eq!(hybrid_hits, 10, "every setting's own page first by its name");
    eprintln!("first by the setting's name alone: dense {dense_hits}/10, hybrid {hybrid_hits}/10");

    // Replace one page, remove another: the lexical index holds exactly sled's chunks.
    let mut changed = settings()[0].clone();
    changed.text = "A page rewritten: it now describes huge_pages and nothing else.".into();
    ix.index(vec![changed.clone()]).unwrap();
    assert!(index.remove(DocId::of_url(&settings()[1].url)).unwrap());
    index.sync().unwrap();
    assert_eq!(index.lexical().len(), index.store().chunk_count() as u64);
    let found = |q: &str| index.lexical().search(q, 5).unwrap();
    assert!(found("shared_buffers").is_empty(), "the old text is gone");
    assert!(found("work_mem")
        .iter()
        .all(|(key, _)| { index.store().chunk(*key).unwrap().unwrap().doc != DocId::of_url(&settings()[1].url) }));
    assert_eq!(found("huge_pages").len(), 1);
    // Query syntax in a user's words is text.
    assert!(index.lexical().search("work_mem: (AND \"", 5).is_ok());

    // Reopened: loaded as it is.
    drop(ix);
    drop(index);
    drop(db);
    let (db, index) = open(dir.path());
    assert_eq!(index.lexical_rebuilt(), None);
    let chunks = index.store().chunk_count() as u64;
    // A write that reached sled but not tantivy (a crash between the two): rebuilt on open.
    let extra = weft_index::store::NewChunk {
        key: DocId::of_url("https://docs.test/extra").chunk_key(0),
        record: weft_index::store::ChunkRecord::new(
            DocId::of_url("https://docs.test/extra"),
            0,
            0,
            9,
            3,
            "temp_buffers",
        ),
        vector: vec![0.0; 384],
    };
    let record = weft_index::DocRecord {
        url: "https://docs.test/extra".into(),
        title: "Extra".into(),
        description: None,
        language: None,
        site_name: None,
        published: None,
        page_type: None,
        fetched_at: 1,
        word_count: 1,
        simhash: None,
        chunks: vec![extra.key],
        state: weft_index::DocState::Indexed,
        aliases: Vec::new(),
        modified: None,
        author: None,
        canonical: None,
    };
    index.store().put(DocId::of_url("https://docs.test/extra"), &record, &[extra]).unwrap();
    drop(index);
    drop(db);
    let (db, index) = open(dir.path());
    assert_eq!(index.lexical_rebuilt(), Some(&Rebuilt::Stale { indexed: chunks, chunks: chunks + 1 }));
    assert_eq!(index.lexical().search("temp_buffers", 5).unwrap().len(), 1);
    // Gone altogether: rebuilt too.
    drop(index);
    drop(db);
    std::fs::remove_dir_all(dir.path().join(weft_index::lexical::DIR)).unwrap();
    let (_db, index) = open(dir.path());
    assert_eq!(index.lexical_rebuilt(), Some(&Rebuilt::Missing));
    assert_eq!(index.lexical().len(), chunks + 1);
}
