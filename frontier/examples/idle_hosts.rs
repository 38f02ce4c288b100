//! What idle hosts cost in memory, before and after they leave it (`Frontier::evict_idle`).
//!
//! Run: `cargo run --release -p weft-frontier --example idle_hosts -- [--hosts N]` (default
//! 200,000). Every host gets one page, fetched at once: then nothing is queued anywhere — the
//! shape a page of links to many dead hosts leaves behind. It prints the live heap (a counting
//! allocator, exact) with every host in memory and after the idle ones left, per host; how
//! fast hosts come back when a URL of theirs arrives; and the reopen time.

mod support;

use std::time::{Duration, Instant};
use support::{heap, mib};
use weft_frontier::*;
use weft_url::*;

fn main() {
    let mut args = std::env::args().skip(1);
    let mut hosts = 200_000usize;
    while let Some(a) = args.next() {
        match a.as_str() {
            "--hosts" => hosts = args.next().and_then(|v| v.parse().ok()).expect("--hosts N"),
            other => panic!("unknown argument {other}"),
        }
    }
    let dir = tempfile::tempdir().expect("a temp dir");
    let mut s = FrontierSettings::default();
    s.politeness.default_delay = Duration::ZERO;
    s.seen_capacity = hosts as u64 * 4;
    let db = open_db(&dir.path().join("db"), 8 << 20).expect("sled");
    let mut f = Frontier::open(&db, &dir.path().join("frontier"), s.clone()).expect("frontier");
    let url = |i: usize, page: &str| normalize(&format!("http://h{i}.example/{page}"), None).expect("a URL");
    for i in 0..hosts {
        f.push(Candidate::page(url(i, "a"), 0)).expect("push");
    }
    let now = Instant::now();
    for _ in 0..hosts {
        match f.next(now).expect("next") {
            Next::Ready(l) => {
                f.complete(l, Completion::Done { page: true }, true, now).expect("complete");
            }
            other => panic!("expected a ready URL, got {other:?}"),
        }
    }
    let all = heap();
    let st = f.stats();
    println!("{hosts} hosts, none with work: {} in memory, live heap {:.1} MiB", st.hosts_in_memory, mib(all as u64));
    let started = Instant::now();
    let left = f.evict_idle(now + IDLE_FOR + Duration::from_secs(1)).expect("evict");
    let took = started.elapsed();
    let after = heap();
    println!(
        "after evict_idle ({:.0} ms): {left} left memory, {} in memory, live heap {:.1} MiB: {:.0} bytes per idle host freed",
        took.as_secs_f64() * 1000.0,
        f.stats().hosts_in_memory,
        mib(after as u64),
        (all.saturating_sub(after)) as f64 / left.max(1) as f64
    );
    let back = hosts.min(20_000);
    let started = Instant::now();
    for i in 0..back {
        f.push(Candidate::page(url(i, "b"), 0)).expect("push");
    }
    let took = started.elapsed();
    println!(
        "{back} idle hosts brought back by a new URL each: {:.1} µs per host (a store read and a write)",
        took.as_secs_f64() * 1e6 / back as f64
    );
    f.durability().flush().expect("flush");
    drop(f);
    let started = Instant::now();
    let f = Frontier::open(&db, &dir.path().join("frontier"), s).expect("reopen");
    let st = f.stats();
    println!(
        "reopen: {:.2} s, {} hosts known, {} in memory (those with work)",
        started.elapsed().as_secs_f64(),
        st.hosts,
        st.hosts_in_memory
    );
}
