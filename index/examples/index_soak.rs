//! The vector index as it grows to millions of chunks (issue 37's soak): at every step, the
//! process's RSS, the snapshot's size on disk, the add rate over the step, search latency
//! p50/p95 and recall@10 of the served (HNSW) search against exact kNN.
//!
//! ```sh
//! cargo run --release -p weft-index --example index_soak -- [--to 3000000] [--step 250000]
//!     [--sample 1000] [--queries 100] [--docs DIR] [--whole]
//! ```
//!
//! Embedding millions of chunks would take the model days, so: `--sample` passages of about
//! 120 words from the PostgreSQL manual that `scripts/setup.sh` installs (`--docs`, else
//! `WEFT_SIMNET_DOCS`, else `/usr/share/doc/postgresql-doc-15/html`; tags stripped) are embedded
//! with the real model, and every vector added is a blend of two of those — `a·x + (1−a)·y`,
//! `a` uniform in [0.2, 0.8] — plus Gaussian noise of norm ~0.35, normalized: points spread
//! over the space the real embeddings span, not clustered on the sample. The queries are the
//! embeddings of further passages of the manual, none of them in the sample.
//!
//! What a node runs is measured (`VectorIndex` with the default `index.*` settings: f16, the
//! newest 16,384 vectors in memory, the rest in sealed segments searched through memory-mapped
//! views, merged four at a time into segments of 65,536); `--whole` measures the index as it was before segments — one HNSW graph held whole in
//! memory — for the comparison. RSS is split into anonymous memory (the process's own) and
//! file-backed pages (the segments' mapped files in the page cache, which the kernel takes back
//! under pressure).

use std::path::PathBuf;
use std::time::Instant;
use weft_config::IndexConfig;
use weft_index::vectors::VectorIndex;

mod support;
use support::{percentile, rss_mib, rss_parts_mib, Rng};

/// The text of an HTML page, crudely: tags dropped, a few entities decoded, whitespace folded.
fn text_of(html: &str) -> String {
    let mut out = String::with_capacity(html.len() / 2);
    let mut in_tag = false;
    for c in html.chars() {
        match c {
            '<' => in_tag = true,
            '>' => {
                in_tag = false;
                out.push(' ');
            }
            _ if !in_tag => out.push(c),
            _ => {}
        }
    }
    let out = out.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&").replace("&nbsp;", " ");
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Passages of about `words` words from the manual's pages, in file-name order.
fn passages(dir: &std::path::Path, words: usize, want: usize) -> Vec<String> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e} (pass --docs DIR or set WEFT_SIMNET_DOCS)", dir.display()))
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "html"))
        .collect();
    files.sort();
    let mut out = Vec::new();
    for f in files {
        let text = text_of(&std::fs::read_to_string(&f).unwrap_or_default());
        let all: Vec<&str> = text.split(' ').collect();
        for piece in all.chunks(words).filter(|p| p.len() == words) {
            out.push(piece.join(" "));
            if out.len() == want {
                return out;
            }
        }
    }
    out
}

fn main() {
    let (mut to, mut step, mut sample, mut queries) = (3_000_000usize, 250_000usize, 1000usize, 100usize);
    let mut whole = false;
    let mut docs = std::env::var_os("WEFT_SIMNET_DOCS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/share/doc/postgresql-doc-15/html"));
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().unwrap_or_else(|| panic!("{flag} needs a value"));
        match flag.as_str() {
            "--to" => to = value().parse().expect("--to N"),
            "--step" => step = value().parse().expect("--step N"),
            "--sample" => sample = value().parse().expect("--sample N"),
            "--queries" => queries = value().parse().expect("--queries N"),
            "--docs" => docs = PathBuf::from(value()),
            "--whole" => whole = true,
            other => panic!("unknown flag {other}"),
        }
    }
    let texts = passages(&docs, 120, sample + queries);
    assert_eq!(texts.len(), sample + queries, "the manual at {} is too short", docs.display());
    let mut embedder = weft_index::Embedder::open(&weft_index::testing::embed_config(), 0).expect("the model");
    let t = Instant::now();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let mut vectors = Vec::with_capacity(refs.len());
    for batch in refs.chunks(16) {
        vectors.extend(embedder.embed(batch).expect("embedding"));
    }
    let query_vectors = vectors.split_off(sample);
    let dims = vectors[0].len();
    println!(
        "embedded {} passages of the manual in {:.0} s ({sample} to blend, {queries} as questions); RSS {:.0} MiB",
        texts.len(),
        t.elapsed().as_secs_f64(),
        rss_mib()
    );
    drop(embedder);

    let config = IndexConfig::default();
    let dir = tempfile::tempdir().expect("a temporary dir");
    let index = VectorIndex::new(dir.path().join("vectors.usearch"), dims, &config).expect("an index");
    if whole {
        index.set_segment_chunks(usize::MAX);
    }
    let (anon, file) = rss_parts_mib();
    println!(
        "{}: USearch HNSW, {:?}, connectivity {}, expansion add/search {}/{}; RSS before {:.0} MiB ({anon:.0} anonymous, {file:.0} file)",
        if whole { "one graph held whole in memory (--whole)" } else { "the newest 16,384 in memory, segments merged to 65,536 searched from disk" },
        config.quantization, config.connectivity, config.expansion_add, config.expansion_search, rss_mib()
    );
    println!(
        "{:>10} {:>9} {:>9} {:>9} {:>10} {:>9} {:>8} {:>11} {:>9} {:>9} {:>10}",
        "chunks",
        "RSS MiB",
        "anon MiB",
        "file MiB",
        "index MiB",
        "disk MiB",
        "segments",
        "adds/s",
        "p50 ms",
        "p95 ms",
        "recall@10"
    );
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let sigma = 0.35 / (dims as f32).sqrt() / (1.0f32 / 3.0).sqrt();
    let mut added = 0usize;
    while added < to {
        let until = (added + step).min(to);
        let t = Instant::now();
        for key in added..until {
            let (x, y) = (&vectors[rng.next() as usize % sample], &vectors[rng.next() as usize % sample]);
            let a = 0.2 + 0.6 * rng.unit();
            let mut v: Vec<f32> = x.iter().zip(y).map(|(x, y)| a * x + (1.0 - a) * y + rng.gauss() * sigma).collect();
            weft_index::embed::normalize(&mut v);
            index.add(key as u64, &v).expect("add");
            // The node merges small segments on its snapshot timer; here after each sealed
            // delta, and the add rate pays for it.
            if !whole && (key + 1) % weft_index::vectors::SEGMENT_CHUNKS == 0 {
                index.merge_small().expect("merge");
            }
        }
        let rate = (until - added) as f64 / t.elapsed().as_secs_f64();
        added = until;
        let mut ms = Vec::with_capacity(queries);
        let mut hits = 0usize;
        for q in &query_vectors {
            let t = Instant::now();
            let found = index.search(q, 10).expect("search");
            ms.push(t.elapsed().as_secs_f64() * 1e3);
            let exact = index.exact_search(q, 10).expect("exact search");
            hits += found.iter().filter(|(k, _)| exact.iter().any(|(e, _)| e == k)).count();
        }
        ms.sort_by(f64::total_cmp);
        index.snapshot().expect("snapshot");
        let disk = weft_index::vectors::disk_bytes(dir.path());
        let (anon, file) = rss_parts_mib();
        println!(
            "{added:>10} {:>9.0} {anon:>9.0} {file:>9.0} {:>10.0} {:>9.0} {:>8} {rate:>11.0} {:>9.2} {:>9.2} {:>10.3}",
            rss_mib(),
            index.memory_usage() as f64 / (1 << 20) as f64,
            disk as f64 / (1 << 20) as f64,
            index.segments().0,
            percentile(&ms, 0.5),
            percentile(&ms, 0.95),
            hits as f64 / (10 * query_vectors.len()) as f64
        );
    }
}
