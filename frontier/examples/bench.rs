//! Frontier and seen-set benchmark. Run: `cargo run --release -p weft-frontier --example bench`
//!
//! - push + pop throughput for 1M URLs over 10k hosts (delays 0), heap held by the frontier
//!   and the size of its sled files;
//! - seen-set memory and measured false-positive rate at 10M URLs, sized for 10M at 1%.
//!
//! Heap figures come from a counting global allocator (live bytes, exact); sled's page cache
//! is bounded to 64 MiB and counted in them.

mod support;

use std::time::{Duration, Instant};
use support::{dir_size, heap, mib};
use weft_frontier::*;
use weft_url::*;

fn frontier_bench(urls: usize, hosts: usize) {
    let dir = tempfile::tempdir().unwrap();
    let base = heap();
    let db = open_db(&dir.path().join("db"), 64 << 20).unwrap();
    let mut s = FrontierSettings::default();
    s.politeness.default_delay = Duration::ZERO;
    s.max_pages_per_host = u64::MAX / 2;
    s.seen_capacity = urls as u64;
    let mut f = Frontier::open(&db, &dir.path().join("frontier"), s).unwrap();
    let candidates: Vec<Candidate> = (0..urls)
        .map(|i| {
            let u = format!("http://host{}.example/section/{}/page-{i}.html", i % hosts, i / hosts % 50);
            Candidate::page(normalize(&u, None).unwrap(), 1)
        })
        .collect();
    let t = Instant::now();
    let mut queued = 0usize;
    for c in candidates {
        // The rest are Bloom false positives (≤ 1%): new URLs the seen-set mistakes for old.
        queued += (f.push(c).unwrap() == PushOutcome::Queued) as usize;
    }
    f.durability().flush().unwrap();
    let push = t.elapsed();
    let heap = heap() - base;
    let now = Instant::now();
    let t = Instant::now();
    let mut popped = 0;
    while let Next::Ready(lease) = f.next(now).unwrap() {
        f.complete(lease, Completion::Done { page: true }, false, now).unwrap();
        popped += 1;
    }
    f.durability().flush().unwrap();
    let pop = t.elapsed();
    assert_eq!(popped, queued);
    println!(
        "frontier: {urls} URLs over {hosts} hosts ({:.3}% dropped as seen-set false positives): push {:.0}/s ({:.1} s), pop+complete {:.0}/s ({:.1} s); heap after push {:.1} MiB ({:.0} B/URL, sled cache included); sled on disk after push+drain {:.1} MiB",
        (urls - queued) as f64 * 100.0 / urls as f64,
        urls as f64 / push.as_secs_f64(),
        push.as_secs_f64(),
        urls as f64 / pop.as_secs_f64(),
        pop.as_secs_f64(),
        mib(heap as u64),
        heap as f64 / urls as f64,
        mib(dir_size(dir.path())),
    );
}

fn seen_bench(n: u64) {
    let base = heap();
    let mut s = SeenSet::with_capacity(n, 0.01);
    let t = Instant::now();
    for i in 0..n {
        s.insert(&format!("http://h{}.example/a/{i}", i % 100_003));
    }
    let insert = t.elapsed();
    let heap = heap() - base;
    let probes = 1_000_000u64;
    let fp = (0..probes).filter(|i| s.contains(&format!("https://other{}.example/b/{i}", i % 997))).count();
    println!(
        "seen-set: {n} URLs sized for {n} at 1%: {:.2} MiB heap ({:.2} MiB bit array; bound at 1% is {:.2} MiB), measured false positives {:.3}% over {probes} non-members, insert {:.0}/s",
        mib(heap as u64),
        mib(s.memory_bytes() as u64),
        mib((n as f64 * std::f64::consts::LOG2_E * (1.0f64 / 0.01).log2() / 8.0) as u64),
        fp as f64 * 100.0 / probes as f64,
        n as f64 / insert.as_secs_f64(),
    );
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let seen_only = std::env::args().any(|a| a == "--seen-only");
    let (urls, seen) = if quick { (100_000, 1_000_000) } else { (1_000_000, 10_000_000) };
    if !seen_only {
        frontier_bench(urls, 10_000);
    }
    seen_bench(seen);
}
