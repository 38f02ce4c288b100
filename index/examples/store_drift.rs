//! Does the local index's memory keep growing as documents are committed, without the model?
//! Commits `--docs` documents of one chunk (a random unit vector, ~1,200 characters of text
//! from a 5,000-word vocabulary) to a real local index (sled with the node's 32 MiB cache,
//! tantivy, the vector delta and segments) in batches of 32 with a lexical commit after each,
//! as the indexer does, and prints the allocator's live and free heap, the process's
//! anonymous memory and the vectors' in-memory part every `--every` documents (issue 37).
//!
//! `--part store|lexical|vectors` commits to that part alone (sled's documents, tantivy's
//! words, the vectors), to tell which one grows; `--part fjall` writes the same records, as
//! the sled store encodes them, to three fjall keyspaces instead (fjall as the frontier opens
//! it, with sled's 32 MiB as its block cache): what the documents would cost there.
//!
//! `cargo run --release -p weft-index --example store_drift -- [--docs 200000] [--every 20000] [--part all] [--sled-cache-mb 32]`

mod support;
use support::{flag, rss_parts_mib, trim, Rng};
use weft_index::store::{ChunkRecord, NewChunk};
use weft_index::DocId;

fn main() {
    let (docs, every) = (flag("--docs", 200_000), flag("--every", 20_000));
    let args: Vec<String> = std::env::args().collect();
    let part = args.iter().position(|a| a == "--part").and_then(|i| args.get(i + 1)).map_or("all", String::as_str);
    // A mistyped part would otherwise measure the whole index under another name.
    assert!(
        ["all", "store", "lexical", "vectors", "fjall"].contains(&part),
        "--part {part}: all, store, lexical, vectors or fjall"
    );
    println!("part: {part}");
    let dir = tempfile::tempdir().expect("a temporary directory");
    // sled's cache as the node sets it (`storage.cache_mb`), or `--sled-cache-mb`.
    let db = weft_db::open_db(&dir.path().join("db"), (flag("--sled-cache-mb", 32) as u64) << 20).expect("sled opens");
    let index = weft_index::LocalIndex::open(&db, dir.path(), 384, &weft_config::IndexConfig::default())
        .expect("the index opens");
    let words: Vec<String> = (0..5000).map(|i| format!("w{i}")).collect();
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    // Opened only when measured: its caches and workers would count in the other parts' memory.
    let lsm = (part == "fjall").then(|| {
        let db = fjall::Database::builder(dir.path().join("lsm")).cache_size(32 << 20).open().expect("fjall opens");
        let ks = |name: &str| {
            db.keyspace(name, || fjall::KeyspaceCreateOptions::default().max_memtable_size(8 << 20))
                .expect("a keyspace")
        };
        let keyspaces = (ks("docs"), ks("chunks"), ks("vectors"));
        (db, keyspaces)
    });
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
            "fjall" => {
                let (db, (docs_ks, chunks_ks, vectors_ks)) = lsm.as_ref().expect("opened for this part");
                let mut batch = db.batch();
                batch.insert(docs_ks, id.0, postcard::to_allocvec(&record).expect("encodes"));
                batch.insert(chunks_ks, key.to_be_bytes(), postcard::to_allocvec(&chunk.record).expect("encodes"));
                batch.insert(vectors_ks, key.to_be_bytes(), weft_index::store::vector_bytes(&chunk.vector));
                batch.commit().expect("fjall commit");
            }
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
