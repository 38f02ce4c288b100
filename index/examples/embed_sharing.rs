//! One model for indexing and questions, or two: the memory a node saves by sharing its
//! indexer's sessions with its questions ([`weft_index::Embedder::share`]), what a question
//! pays for it while the indexer is busy, and what the indexer's yielding buys back
//! ([`weft_index::Embedder::set_yielding`]).
//!
//! ```sh
//! cargo run --release -p weft-index --example embed_sharing -- [--rounds 3] [--questions 40]
//!     [--batch-tokens 1024] [--load 3]
//! ```
//!
//! Each round runs the layouts, rotating which goes first, each in a fresh process (resident
//! memory is per process): `separate` opens a second embedder for questions (the earlier
//! design, the reference); `shared` hands the questions a handle on the indexer's; `yielding` is
//! `shared` with the indexer yielding its runs to the questions, as a node runs now. In each,
//! one thread embeds pages of 16 chunks of 256 tokens without pause (the indexer during a
//! crawl, `embed.threads` = 1) while another asks a one-line question every 100 ms; then the
//! same questions with the indexer idle. `--load K` adds K threads that embed without pause on
//! models of their own — the other nodes' indexers on a box running many (the simulator); their
//! models count in the memory columns. Printed: resident memory after loading and while busy,
//! question latency p50/p95 busy and idle, the indexer's chunks/s; medians over the rounds.

use std::time::{Duration, Instant};
use weft_index::Embedder;

extern "C" {
    fn malloc_trim(pad: usize) -> i32;
}

fn rss_mib() -> f64 {
    // Free pages the allocator kept would blur the comparison; the node trims as well.
    unsafe { malloc_trim(0) };
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kb = s.lines().find(|l| l.starts_with("VmRSS:")).and_then(|l| l.split_whitespace().nth(1));
    kb.and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0) / 1024.0
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

/// A page's chunks: different words so no two runs are alike, ~256 tokens each.
fn page(n: usize) -> Vec<String> {
    const WORDS: [&str; 16] = [
        "vacuum",
        "table",
        "index",
        "replication",
        "query",
        "planner",
        "buffer",
        "checkpoint",
        "tuple",
        "lock",
        "transaction",
        "snapshot",
        "partition",
        "statistics",
        "function",
        "trigger",
    ];
    (0..16).map(|c| (0..200).map(|w| WORDS[(n * 31 + c * 7 + w * 13) % 16]).collect::<Vec<_>>().join(" ")).collect()
}

/// Embeds page `n`'s chunks; returns how many.
fn embed_page(embedder: &mut Embedder, n: usize) -> usize {
    let texts = page(n);
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    embedder.embed(&refs).unwrap().len()
}

fn child(mode: &str, questions: usize, batch_tokens: usize, load: usize) {
    let mut config = weft_index::testing::embed_config();
    config.batch_tokens = batch_tokens;
    let base = rss_mib();
    let mut indexer = Embedder::open(&config, 1).expect("the model (bash scripts/setup.sh)");
    let mut asker = if mode == "separate" { Embedder::open(&config, 1).unwrap() } else { indexer.share() };
    indexer.set_yielding(mode == "yielding");
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    // The other nodes' indexers: a model each, embedding without pause.
    let others: Vec<_> = (0..load)
        .map(|k| {
            let mut other = Embedder::open(&config, 1).unwrap();
            let flag = stop.clone();
            std::thread::spawn(move || {
                let mut n = 1000 * (k + 1);
                while !flag.load(std::sync::atomic::Ordering::Relaxed) {
                    embed_page(&mut other, n);
                    n += 1;
                }
            })
        })
        .collect();
    let loaded = rss_mib() - base;
    let flag = stop.clone();
    let worker = std::thread::spawn(move || {
        let (mut chunks, started, mut n) = (0usize, Instant::now(), 0);
        while !flag.load(std::sync::atomic::Ordering::Relaxed) {
            chunks += embed_page(&mut indexer, n);
            n += 1;
        }
        chunks as f64 / started.elapsed().as_secs_f64()
    });
    let mut ask = |busy: &mut Vec<f64>| {
        for q in 0..questions {
            let t = Instant::now();
            asker.embed(&[format!("how does the planner choose an index {q}").as_str()]).unwrap();
            busy.push(t.elapsed().as_secs_f64() * 1000.0);
            std::thread::sleep(Duration::from_millis(100));
        }
    };
    std::thread::sleep(Duration::from_millis(500));
    let mut busy = Vec::new();
    ask(&mut busy);
    // While the indexer still holds its handle: dropping it frees a separate model.
    let end = rss_mib() - base;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let rate = worker.join().unwrap();
    others.into_iter().for_each(|o| o.join().unwrap());
    let mut idle = Vec::new();
    ask(&mut idle);
    busy.sort_by(f64::total_cmp);
    idle.sort_by(f64::total_cmp);
    println!(
        "{mode} {loaded:.1} {end:.1} {:.1} {:.1} {:.1} {:.1} {rate:.1}",
        percentile(&busy, 0.5),
        percentile(&busy, 0.95),
        percentile(&idle, 0.5),
        percentile(&idle, 0.95)
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let flag = |name: &str, default: usize| {
        args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).map_or(default, |v| v.parse().unwrap())
    };
    let questions = flag("--questions", 40);
    let load = flag("--load", 0);
    if let Some(i) = args.iter().position(|a| a == "--child") {
        return child(&args[i + 1], questions, flag("--batch-tokens", 1024), load);
    }
    let rounds = flag("--rounds", 3);
    let tokens = flag("--batch-tokens", weft_config::EmbedConfig::default().batch_tokens);
    let mut rows: Vec<(String, Vec<f64>)> = Vec::new();
    const LAYOUTS: [&str; 3] = ["separate", "shared", "yielding"];
    for round in 0..rounds {
        for i in 0..LAYOUTS.len() {
            let mode = LAYOUTS[(round + i) % LAYOUTS.len()];
            let out = std::process::Command::new(&args[0])
                .args(["--child", mode, "--questions", &questions.to_string(), "--batch-tokens", &tokens.to_string()])
                .args(["--load", &load.to_string()])
                .output()
                .expect("running a round");
            let line = String::from_utf8_lossy(&out.stdout);
            let mut f = line.split_whitespace();
            let name = f.next().unwrap_or_else(|| panic!("round failed: {}", String::from_utf8_lossy(&out.stderr)));
            rows.push((name.to_string(), f.map(|v| v.parse().unwrap()).collect()));
        }
    }
    println!(
        "medians over {rounds} rounds, {questions} questions each busy and idle, embed.batch_tokens {tokens}, \
         {load} other indexers:"
    );
    println!("layout    model MiB  busy MiB  busy p50/p95 ms  idle p50/p95 ms  indexer chunks/s");
    for mode in LAYOUTS {
        let median = |k: usize| {
            let mut v: Vec<f64> = rows.iter().filter(|r| r.0 == mode).map(|r| r.1[k]).collect();
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        println!(
            "{mode:<9} {:>9.0} {:>8.0} {:>8.1} / {:<6.1} {:>8.1} / {:<6.1} {:>10.1}",
            median(0),
            median(1),
            median(2),
            median(3),
            median(4),
            median(5),
            median(6)
        );
    }
}
