//! The local index at 100k chunks: insert rate through the node's commit path (sled document
//! store + USearch HNSW, 10 chunks per document), query latency p50/p99 of the HNSW search and
//! of the full local search (kNN + grouping by document + snippets from sled), memory per 100k
//! chunks, and recall@10 of the HNSW index against exact f32 search.
//!
//! ```sh
//! cargo run --release -p weft-index --example bench_index -- [--vectors 100000] [--quantization f16|f32|bf16|i8] [--random]
//! ```
//!
//! Embedding 100k chunks would take the model most of an hour, so the vectors are synthetic:
//! unit vectors scattered around 2,000 topic centres (cosine to their centre ~0.75), the way
//! real page embeddings cluster by subject; `--random` uses uniform random unit vectors, the
//! hardest case for a graph index.

use std::time::Instant;
use weft_config::{IndexConfig, Quantization};
use weft_index::store::{ChunkRecord, NewChunk};
use weft_index::{DocId, DocRecord, DocState, LocalIndex};

mod support;
use support::{percentile, Rng};

const DIMS: usize = 384;
const CHUNKS_PER_DOC: usize = 10;

fn unit(mut v: Vec<f32>) -> Vec<f32> {
    weft_index::embed::normalize(&mut v);
    v
}

fn dir_size(path: &std::path::Path) -> u64 {
    std::fs::read_dir(path)
        .map(|rd| {
            rd.flatten()
                .map(|e| {
                    let m = e.metadata().unwrap();
                    if m.is_dir() {
                        dir_size(&e.path())
                    } else {
                        m.len()
                    }
                })
                .sum()
        })
        .unwrap_or(0)
}

fn main() {
    let mut n = 100_000usize;
    let mut config = IndexConfig::default();
    let mut random = false;
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        match flag.as_str() {
            "--vectors" => n = it.next().and_then(|v| v.parse().ok()).expect("--vectors N"),
            "--quantization" => {
                config.quantization = match it.next().as_deref() {
                    Some("f32") => Quantization::F32,
                    Some("f16") => Quantization::F16,
                    Some("bf16") => Quantization::Bf16,
                    Some("i8") => Quantization::I8,
                    other => panic!("unknown quantization {other:?}"),
                }
            }
            "--random" => random = true,
            other => panic!("unknown flag {other}"),
        }
    }
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let centres: Vec<Vec<f32>> = (0..2000).map(|_| unit((0..DIMS).map(|_| rng.gauss()).collect())).collect();
    let sample = |rng: &mut Rng| -> Vec<f32> {
        if random {
            return unit((0..DIMS).map(|_| rng.gauss()).collect());
        }
        let c = &centres[(rng.next() % centres.len() as u64) as usize];
        // Noise of norm ~0.9 around a unit centre: cosine to the centre ~0.75.
        let sigma = 0.9 / (DIMS as f32).sqrt() / 0.577;
        unit(c.iter().map(|x| x + rng.gauss() * sigma).collect())
    };
    let vectors: Vec<Vec<f32>> = (0..n).map(|_| sample(&mut rng)).collect();
    let queries: Vec<Vec<f32>> = (0..1000).map(|_| sample(&mut rng)).collect();
    println!(
        "{n} {} vectors of {DIMS} dims, {:?}, connectivity {}, expansion add/search {}/{}",
        if random { "uniform random" } else { "clustered" },
        config.quantization,
        config.connectivity,
        config.expansion_add,
        config.expansion_search
    );

    let dir = tempfile::tempdir().unwrap();
    let db = sled::Config::new().path(dir.path().join("db")).cache_capacity(64 << 20).open().unwrap();
    let index = LocalIndex::open(&db, dir.path(), DIMS, &config).unwrap();

    let started = Instant::now();
    let keys = insert_all(&index, &vectors, &mut rng);
    let insert = started.elapsed().as_secs_f64();
    let started = Instant::now();
    index.snapshot().unwrap();
    let snapshot = started.elapsed().as_secs_f64();
    println!(
        "\ninsert (sled + HNSW, {CHUNKS_PER_DOC} chunks per document): {:.0} chunks/s ({insert:.1} s)",
        n as f64 / insert
    );
    println!("snapshot (flush sled, write + fsync + rename vectors.usearch): {snapshot:.2} s");

    latency(&index, &queries);
    recall(&index, &vectors, &keys, &queries);
    let hnsw_bytes = index.vectors().memory_usage();
    let snapshot_bytes = weft_index::vectors::disk_bytes(dir.path());
    db.flush().unwrap();
    let sled_bytes = dir_size(&dir.path().join("db"));
    let per = |b: u64| b as f64 * 100_000.0 / n as f64 / (1 << 20) as f64;
    println!(
        "memory per 100k chunks: HNSW {:.1} MiB in RAM (snapshot file {:.1} MiB); sled on disk {:.1} MiB (texts, f16 vectors, records)",
        per(hnsw_bytes as u64),
        per(snapshot_bytes),
        per(sled_bytes)
    );
}

/// Commits the vectors as documents of `CHUNKS_PER_DOC` chunks; returns the chunks' keys.
fn insert_all(index: &LocalIndex, vectors: &[Vec<f32>], rng: &mut Rng) -> Vec<u64> {
    let n = vectors.len();
    let text = "A chunk of about two hundred bytes of text stands in for the real thing here, compressed with \
        LZ4 in the document store the way every indexed chunk is, so the store's size is realistic enough.";
    let mut keys = Vec::with_capacity(n);
    for (d, doc_vectors) in vectors.chunks(CHUNKS_PER_DOC).enumerate() {
        let url = format!("https://site{}.test/page/{d}", d % 500);
        let id = DocId::of_url(&url);
        let chunks: Vec<NewChunk> = doc_vectors
            .iter()
            .enumerate()
            .map(|(p, v)| NewChunk {
                key: id.chunk_key(p as u32),
                record: ChunkRecord::new(id, p as u32, 0, text.len(), 48, text),
                vector: v.clone(),
            })
            .collect();
        keys.extend(chunks.iter().map(|c| c.key));
        let record = DocRecord {
            url,
            title: format!("Page {d}"),
            description: None,
            language: Some("en".into()),
            site_name: None,
            published: None,
            page_type: Some("article".into()),
            fetched_at: 0,
            word_count: 400,
            simhash: Some(rng.next()),
            chunks: chunks.iter().map(|c| c.key).collect(),
            state: DocState::Indexed,
            aliases: vec![],
            modified: None,
            author: None,
            canonical: None,
        };
        index.commit(id, &record, chunks).unwrap();
    }
    keys
}

/// The vector index's kNN and the local search, p50 and p99 over the queries.
fn latency(index: &LocalIndex, queries: &[Vec<f32>]) {
    let mut hnsw = Vec::new();
    let mut local = Vec::new();
    for q in queries {
        let t = Instant::now();
        let hits = index.vectors().search(q, 10).unwrap();
        hnsw.push(t.elapsed().as_secs_f64() * 1e3);
        assert_eq!(hits.len(), 10);
        let t = Instant::now();
        let docs = index.search(q, 10).unwrap();
        local.push(t.elapsed().as_secs_f64() * 1e3);
        assert!(!docs.is_empty());
    }
    hnsw.sort_by(f64::total_cmp);
    local.sort_by(f64::total_cmp);
    println!("HNSW kNN k=10:             p50 {:.3} ms, p99 {:.3} ms", percentile(&hnsw, 0.5), percentile(&hnsw, 0.99));
    println!(
        "local search (k=10 docs):  p50 {:.3} ms, p99 {:.3} ms  (kNN of 50 chunks + grouping + sled reads + snippets)",
        percentile(&local, 0.5),
        percentile(&local, 0.99)
    );
}

/// Recall@10 against exact search over the original f32 vectors.
fn recall(index: &LocalIndex, vectors: &[Vec<f32>], keys: &[u64], queries: &[Vec<f32>]) {
    let probes = 200;
    let mut found = 0;
    for q in queries.iter().take(probes) {
        let mut exact: Vec<(f32, u64)> =
            vectors.iter().zip(keys).map(|(v, k)| (weft_index::embed::cosine(q, v), *k)).collect();
        exact.select_nth_unstable_by(9, |a, b| b.0.total_cmp(&a.0));
        let truth: std::collections::HashSet<u64> = exact[..10].iter().map(|(_, k)| *k).collect();
        found += index.vectors().search(q, 10).unwrap().iter().filter(|(k, _)| truth.contains(k)).count();
    }
    println!("recall@10 vs exact f32 search ({probes} queries): {:.4}", found as f64 / (probes * 10) as f64);
}
