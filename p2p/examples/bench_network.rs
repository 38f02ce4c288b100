//! Network figures on loopback, real libp2p over TCP:
//! - URL exchange throughput between two nodes: node A routes N URLs of hosts node B owns;
//!   timed until B has acknowledged all of them (B's side takes each batch at once);
//! - near-duplicate lookup latency in a 5-node network: fingerprints published from every node
//!   to the owners of their blocks, then lookups (a request to the first owner of each of the
//!   four blocks) from every node; p50 and p99.
//!
//! ```sh
//! cargo run --release -p weft-p2p --example bench_network -- [--urls 200000] [--lookups 500]
//! ```

use std::time::{Duration, Instant};
use weft_config::P2pConfig;
use weft_p2p::{NetworkConfig, Started, UrlKind, WireUrl};

fn config(bootstrap: Vec<String>) -> NetworkConfig {
    let c = P2pConfig { enabled: true, listen: vec!["/ip4/127.0.0.1/tcp/0".into()], bootstrap, ..P2pConfig::default() };
    NetworkConfig::from_config(&c).unwrap()
}

fn start(bootstrap: Vec<String>) -> Started {
    weft_p2p::start(libp2p::identity::Keypair::generate_ed25519(), config(bootstrap)).unwrap()
}

/// Answers every delivery at once, counting the URLs.
fn drain(mut started_inbound: tokio::sync::mpsc::Receiver<weft_p2p::Inbound>) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        while let Some(i) = started_inbound.recv().await {
            if let Some(reply) = i.reply {
                let _ = reply.send(i.urls.len() as u32);
            }
        }
    })
}

async fn first_addr(s: &Started) -> String {
    s.handle.wait_for(|s| !s.listen_addrs.is_empty()).await;
    s.handle.status().listen_addrs[0].clone()
}

fn main() {
    let mut urls = 200_000usize;
    let mut lookups = 500usize;
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let v = it.next().and_then(|v| v.parse().ok());
        match flag.as_str() {
            "--urls" => urls = v.expect("--urls N"),
            "--lookups" => lookups = v.expect("--lookups N"),
            other => panic!("unknown flag {other}"),
        }
    }
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    rt.block_on(async {
        // --- URL exchange between two nodes.
        let a = start(vec![]);
        let boot = first_addr(&a).await;
        let b = start(vec![boot]);
        for s in [&a, &b] {
            s.handle.wait_for(|s| s.members.len() == 2).await;
        }
        let ring = a.handle.ring();
        let b_id = b.handle.peer_id();
        let hosts: Vec<String> =
            (0..).map(|i| format!("www.site{i}.example")).filter(|h| ring.owner(h) == Some(&b_id)).take(500).collect();
        let batch: Vec<WireUrl> = (0..urls)
            .map(|i| {
                let url = format!("https://{}/articles/{}/some-readable-slug-{i}", hosts[i % hosts.len()], i / hosts.len());
                WireUrl::new(url, 2, UrlKind::Page)
            })
            .collect();
        let _da = drain(a.inbound);
        let _db = drain(b.inbound);
        let started = Instant::now();
        for chunk in batch.chunks(1000) {
            a.handle.send_urls(chunk.to_vec());
        }
        while a.handle.status().urls_sent < urls as u64 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let secs = started.elapsed().as_secs_f64();
        let bytes: usize = batch.iter().map(|u| u.url.len()).sum();
        println!(
            "URL exchange, 2 nodes: {urls} URLs ({:.0} bytes avg) acknowledged in {secs:.2} s = {:.0} URLs/s",
            bytes as f64 / urls as f64,
            urls as f64 / secs
        );
        a.handle.stop();
        b.handle.stop();

        // --- Near-duplicate lookups in a 5-node network.
        let first = start(vec![]);
        let boot = first_addr(&first).await;
        let mut nodes = vec![first];
        for _ in 0..4 {
            nodes.push(start(vec![boot.clone()]));
        }
        for s in &nodes {
            s.handle.wait_for(|s| s.members.len() == 5).await;
        }
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let published: Vec<u64> = (0..200).map(|_| next()).collect();
        for (i, h) in published.iter().enumerate() {
            let n = &nodes[i % 5].handle;
            n.publish_fingerprint(*h, format!("https://p{i}.example/"), 1);
        }
        tokio::time::sleep(Duration::from_secs(3)).await;
        let handles: Vec<_> = nodes.iter().map(|s| s.handle.clone()).collect();
        let (found, latencies) = tokio::task::spawn_blocking(move || {
            let mut found = 0;
            let mut latencies = Vec::new();
            for i in 0..lookups {
                // Half near a published fingerprint (2 bits off), half random.
                let h = if i % 2 == 0 { published[i % published.len()] ^ 0b101 } else { next() };
                let t = Instant::now();
                if handles[i % 5].find_duplicate_blocking(h, 3, "https://probe.example/", Duration::from_secs(10)).is_some() {
                    found += 1;
                }
                latencies.push(t.elapsed().as_secs_f64() * 1e3);
            }
            (found, latencies)
        })
        .await
        .unwrap();
        let mut sorted = latencies.clone();
        sorted.sort_by(f64::total_cmp);
        let p = |q: f64| sorted[((sorted.len() as f64 * q) as usize).min(sorted.len() - 1)];
        println!(
            "near-duplicate lookup, 5 nodes: {lookups} lookups (one request to each block's first owner), p50 {:.2} ms, p99 {:.2} ms; found {found} of {} planted near-duplicates",
            p(0.5),
            p(0.99),
            lookups.div_ceil(2)
        );
        for s in &nodes {
            s.handle.stop();
        }
    });
}
