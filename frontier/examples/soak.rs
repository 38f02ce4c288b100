//! Frontier soak benchmark (issue 23): many URLs over many hosts with Zipf-distributed sizes,
//! pushed while URLs are leased and completed, then drained — the shape of a real crawl, whose
//! frontier grows far faster than it drains.
//!
//! Run: `cargo run --release -p weft-frontier --example soak -- [--queued N] [--hosts H] [--cache-mb M]`
//! (defaults: until 10,000,000 URLs are queued, over 100,000 hosts, Zipf exponent 1; about
//! 13.3M pushed and 3.3M completed on the way).
//!
//! Every round pushes 1,000 URLs, then leases and completes 250 (host delays 0), and makes the
//! writes durable (one flush per round, as the node flushes per batch it acknowledges); every
//! 30 s the seen-set is snapshotted, as the node does by default. At each
//! million URLs queued it prints the queue, the process's resident memory (`VmRSS`), the live
//! heap (a counting allocator: the LSM tree's block cache and memtables are in it) and the
//! frontier's files on disk, then the store's own figures; at the end the drain rate and the
//! disk left after draining.

mod support;

use std::time::{Duration, Instant};
use support::{dir_size, heap, mib, rss};
use weft_frontier::*;
use weft_url::*;

/// A small deterministic generator (splitmix64).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Host ranks drawn with probability ∝ 1 / rank (Zipf, exponent 1), by inverse CDF.
struct Zipf {
    cdf: Vec<f64>,
}

impl Zipf {
    fn new(n: usize) -> Zipf {
        let mut cdf = Vec::with_capacity(n);
        let mut sum = 0.0;
        for k in 1..=n {
            sum += 1.0 / k as f64;
            cdf.push(sum);
        }
        for c in &mut cdf {
            *c /= sum;
        }
        Zipf { cdf }
    }

    fn sample(&self, r: &mut Rng) -> usize {
        let u = r.unit();
        self.cdf.partition_point(|&c| c < u).min(self.cdf.len() - 1)
    }
}

/// The node's default `frontier.snapshot_interval_secs`: the seen-set is saved this often and
/// its journal truncated.
const SNAPSHOT_EVERY: Duration = Duration::from_secs(30);

fn arg(name: &str, default: usize) -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.replace('_', "").parse().ok())
        .unwrap_or(default)
}

fn main() {
    let target = arg("--queued", 10_000_000);
    let hosts = arg("--hosts", 100_000);
    // The queue store's block cache (`frontier.cache_mb`), to compare sizes; the default's otherwise.
    let cache_mb = arg("--cache-mb", 0);
    let round = 1_000;
    let drain_per_round = 250;
    let dir = tempfile::tempdir().unwrap();
    let db = open_db(&dir.path().join("db"), 64 << 20).unwrap();
    let mut s = FrontierSettings::default();
    s.politeness.default_delay = Duration::ZERO;
    s.max_pages_per_host = u64::MAX / 2;
    // Sized as a node is (`frontier.seen_capacity`) for what it will have seen.
    s.seen_capacity = (target as u64 * 4 / 3).max(10_000_000);
    if cache_mb > 0 {
        s.cache_bytes = (cache_mb as u64) << 20;
    }
    let mut f = Frontier::open(&db, &dir.path().join("frontier"), s).unwrap();
    let zipf = Zipf::new(hosts);
    let mut rng = Rng(7);
    println!(
        "soak: until {target} URLs are queued, over {hosts} hosts (Zipf 1), rounds of {round} pushed and {drain_per_round} leased + completed"
    );
    println!(
        "{:>10} {:>10} {:>10} {:>9} {:>9} {:>9} {:>12}",
        "pushed", "queued", "completed", "RSS MiB", "heap MiB", "disk MiB", "ops/s"
    );
    let started = Instant::now();
    let (mut pushed, mut completed, mut next_report) = (0usize, 0usize, 1_000_000u64.min(target as u64));
    let mut window = (Instant::now(), 0usize);
    let mut last_snapshot = Instant::now();
    while f.stats().queued < target as u64 {
        for _ in 0..round {
            let h = zipf.sample(&mut rng);
            let u = format!("http://h{h}.example/news/{}/story-{pushed}.html", pushed % 97);
            let _ = f.push(Candidate::page(normalize(&u, None).unwrap(), 1)).unwrap();
            pushed += 1;
        }
        let now = Instant::now();
        for _ in 0..drain_per_round {
            match f.next(now).unwrap() {
                Next::Ready(lease) => {
                    f.complete(lease, Completion::Done { page: true }, false, now).unwrap();
                    completed += 1;
                }
                _ => break,
            }
        }
        f.durability().flush().unwrap();
        if last_snapshot.elapsed() >= SNAPSHOT_EVERY {
            f.snapshot_job().unwrap().write().unwrap();
            if let Some(job) = f.compaction_due() {
                job.run().unwrap();
            }
            last_snapshot = Instant::now();
        }
        if f.stats().queued >= next_report {
            let ops = pushed + completed - window.1;
            let rate = ops as f64 / window.0.elapsed().as_secs_f64();
            window = (Instant::now(), pushed + completed);
            let st = f.stats();
            println!(
                "{pushed:>10} {:>10} {completed:>10} {:>9.0} {:>9.0} {:>9.0} {rate:>12.0}",
                st.queued,
                mib(rss()),
                mib(heap() as u64),
                mib(dir_size(dir.path())),
            );
            println!("           {}", f.store_diagnostics());
            next_report += 1_000_000;
        }
    }
    let push_phase = started.elapsed();
    let t = Instant::now();
    let now = Instant::now();
    let mut drained = 0usize;
    while let Next::Ready(lease) = f.next(now).unwrap() {
        f.complete(lease, Completion::Done { page: true }, false, now).unwrap();
        drained += 1;
        if drained.is_multiple_of(1000) {
            f.durability().flush().unwrap();
        }
    }
    f.durability().flush().unwrap();
    let drain = t.elapsed();
    let disk_drained = dir_size(dir.path());
    // As the node does after its next snapshot: the drained queue's deletions are compacted.
    let t = Instant::now();
    let compacted = f.compaction_due().map(|job| job.run().unwrap()).is_some();
    let compaction = t.elapsed();
    // Measured after a close and reopen: right after a compaction the store still holds the
    // tables it replaced until their last reader lets go.
    let (rss_end, heap_end) = (rss(), heap());
    drop(f);
    let t = Instant::now();
    let f = Frontier::open(&db, &dir.path().join("frontier"), FrontierSettings::default()).unwrap();
    let reopen = t.elapsed();
    assert_eq!(f.stats().queued, 0);
    println!(
        "push phase {:.0} s: {:.0} pushes + leases + completions /s ({pushed} pushed, {completed} completed); drain {drained} in {:.0} s: {:.0} leases + completions /s; RSS {:.0} MiB, heap {:.0} MiB; disk after drain {:.0} MiB, after {} {:.0} MiB",
        push_phase.as_secs_f64(),
        (pushed + completed) as f64 / push_phase.as_secs_f64(),
        drain.as_secs_f64(),
        drained as f64 / drain.as_secs_f64(),
        mib(rss_end),
        mib(heap_end as u64),
        mib(disk_drained),
        if compacted { format!("the compaction ({:.0} s) and a reopen", compaction.as_secs_f64()) } else { "a reopen".into() },
        mib(dir_size(dir.path())),
    );
    println!("reopen with {} hosts: {:.2} s", f.stats().hosts, reopen.as_secs_f64());
}
