//! Does the local index's memory keep growing as documents are committed, without the model?
//! Commits `--docs` documents of one chunk (a random unit vector, ~1,200 characters of text
//! from a 5,000-word vocabulary) to a real local index (the document store in fjall, tantivy,
//! the vector delta and segments) in batches of 32 with a lexical commit after each,
//! as the indexer does, and prints the allocator's live and free heap, the process's
//! anonymous memory and the vectors' in-memory part every `--every` documents (issue 37).
//!
//! `--part store|lexical|vectors` commits to that part alone (the documents, tantivy's words,
//! the vectors), to tell which one grows. (The documents were in sled until this example showed
//! sled growing with them: 33 → 74 MiB over 150,000 documents with a 32 MiB cache.)
//!
//! `cargo run --release -p weft-index --example store_drift -- [--docs 200000] [--every 20000] [--part all]`

mod support;
use support::{flag, rss_parts_mib, trim, Rng};
use weft_index::store::{ChunkRecord, NewChunk};
use weft_index::DocId;

fn main() {
    let (docs, every) = (flag("--docs", 200_000), flag("--every", 20_000));
    let args: Vec<String> = std::env::args().collect();
    let part = args.iter().position(|a| a == "--part").and_then(|i| args.get(i + 1)).map_or("all", String::as_str);
    // A mistyped part would otherwise measure the whole index under another name.
    assert!(["all", "store", "lexical", "vectors"].contains(&part), "--part {part}: all, store, lexical or vectors");
    println!("part: {part}");
    let dir = tempfile::tempdir().expect("a temporary directory");
    // The node's sled database as the node opens it (`storage.cache_mb`): the index no longer
    // writes to it.
    let db = weft_db::open_db(&dir.path().join("db"), 8 << 20).expect("sled opens");
    let index = weft_index::LocalIndex::open(&db, dir.path(), 384, &weft_config::IndexConfig::default())
        .expect("the index opens");
    let words: Vec<String> = (0..5000).map(|i| format!("w{i}")).collect();
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    println!("{:>8} {:>9} {:>9} {:>9} {:>11}", "docs", "live MiB", "free MiB", "anon MiB", "vectors MiB");
    for n in 0..docs {
        let url = format!("http://farm{}.test/p/{n}", n % 500);
        let id = DocId::of_url(&url);
        let text: String = (0..200).map(|_| words[(rng.next() % 5000) as usize].as_str()).collect::<Vec<_>>().join(" ");
        let mut vector: Vec<f32> = (0..384).map(|_| rng.gauss()).collect();
        weft_index::embed::normalize(&mut vector);
        let key = rng.next();
        let record =
            weft_index::testing::indexed_record(&url, &format!("page {n}"), 1_700_000_000 + n as u64, 200, vec![key]);
        let chunk = NewChunk { key, record: ChunkRecord::new(id, 0, 0, text.len(), 256, &text), vector };
        match part {
            "store" => drop(index.store().put(id, &record, &[chunk]).expect("put")),
            "lexical" => index.lexical().replace(&id, &record.title, &[(key, text.as_str())]).expect("replace"),
            "vectors" => index.vectors().add(key, &chunk.vector).expect("add"),
            _ => index.commit(id, &record, vec![chunk]).expect("commit"),
        }
        if n % 32 == 31 {
            index.sync().expect("lexical commit");
        }
        if (n + 1) % every == 0 {
            trim();
            let (live, free) = weft_index::embed::heap_bytes();
            let (anon, _) = rss_parts_mib();
            let vectors = index.vectors().memory_usage() as f64 / 1048576.0;
            println!(
                "{:>8} {:>9.1} {:>9.1} {anon:>9.1} {vectors:>11.1}",
                n + 1,
                live as f64 / 1048576.0,
                free as f64 / 1048576.0
            );
        }
    }
}
