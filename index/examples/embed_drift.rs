//! Does an embedding session's memory keep growing over many runs of every length, as a
//! crawl's are? Runs `--runs` batches of random texts (1–8 texts of 5–300 words each, seeded),
//! printing the allocator's live and free heap and the process's anonymous memory every
//! `--every` runs (docs/src/benchmarks.md, issue 37).
//!
//! `cargo run --release -p weft-index --example embed_drift -- [--runs 6000] [--every 500]`

mod support;
use support::{flag, rss_parts_mib, Rng};
use weft_index::Embedder;

fn main() {
    let (runs, every) = (flag("--runs", 6000), flag("--every", 500));
    let config = weft_index::testing::embed_config();
    let mut embedder = Embedder::open(&config, 1).expect("the model (bash scripts/setup.sh)");
    let words: Vec<String> = (0..2000).map(|i| format!("w{}x{}", i * 7919 % 1000, i % 37)).collect();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    println!("{:>6} {:>9} {:>9} {:>9}", "runs", "live MiB", "free MiB", "anon MiB");
    for run in 1..=runs {
        let n = 1 + (rng.next() % 8) as usize;
        let texts: Vec<String> = (0..n)
            .map(|_| {
                let len = 5 + (rng.next() % 296) as usize;
                (0..len).map(|_| words[(rng.next() % 2000) as usize].as_str()).collect::<Vec<_>>().join(" ")
            })
            .collect();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        embedder.embed(&refs).expect("embedding runs");
        if run % every == 0 {
            let (live, free) = weft_index::embed::heap_bytes();
            let (anon, _) = rss_parts_mib();
            println!("{run:>6} {:>9.1} {:>9.1} {anon:>9.1}", live as f64 / 1048576.0, free as f64 / 1048576.0);
        }
    }
}
