//! Homelab reachability, measured in the NAT lab (root): a public node and three home nodes —
//! two behind cone NATs (hole punching can make them direct) and one behind a symmetric NAT
//! (it stays relayed) — crawl a small web with release `weft` binaries, then search and
//! exchange URLs. Prints, per round and as medians: time from a home node's start until it is
//! reachable (relay slot) and until its first direct connection by hole punching, the share of
//! hole punches that worked, search latency to a peer direct / hole-punched / relayed, and URL
//! exchange throughput direct vs relayed.
//!
//! `cargo build --release -p weft-node && cargo run --release -p weft-simnet --example nat_bench -- [rounds]`

use std::time::Duration;
use weft_simnet::docs::{docs_dir, WebSpec};
use weft_simnet::natlab::{run_lab, LabReport, LabSpec, Nat};

fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    Some(v[v.len() / 2])
}

fn show(v: Option<f64>, unit: &str) -> String {
    v.map_or("—".into(), |x| format!("{x:.1} {unit}"))
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let rounds: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(3);
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let weft = root.join("target/release/weft");
    if !weft.is_file() {
        eprintln!("build the node first: cargo build --release -p weft-node");
        std::process::exit(2);
    }
    let mut tally = Tally::default();
    for round in 0..rounds {
        let work = tempfile::tempdir().expect("temp dir");
        let spec = spec(&root, &weft, work.path(), round);
        let report: LabReport = match run_lab(&spec).await {
            Ok(r) => r,
            Err(e) => {
                eprintln!("the NAT lab cannot run here: {e}");
                std::process::exit(2);
            }
        };
        tally.add(&report);
        print_round(round, &report);
    }
    tally.print(rounds);
}

/// A round's lab: a public node and three homes (two cone NATs, one symmetric) on a small web.
fn spec(root: &std::path::Path, weft: &std::path::Path, work: &std::path::Path, round: usize) -> LabSpec {
    LabSpec {
        weft: weft.to_path_buf(),
        models: root.join("models"),
        docs: docs_dir(),
        work_dir: work.to_path_buf(),
        homes: vec![Nat::Cone, Nat::Cone, Nat::Symmetric],
        web: WebSpec {
            hosts: 12,
            pages: 96,
            seed: round as u64 + 1,
            news_sites: 1,
            news_articles: 6,
            ..WebSpec::default()
        },
        timeout: Duration::from_secs(240),
        searches: 10,
        exchange_urls: 1000,
    }
}

/// Whether `from` reached `to` only through a relay at the end of the run.
fn relayed_between(report: &LabReport, from: &str, to: &str) -> bool {
    let to_id = report.nodes.iter().find(|n| n.name == to).map(|n| n.peer_id.clone()).unwrap_or_default();
    report.nodes.iter().find(|n| n.name == from).is_some_and(|n| {
        n.reachability["relayed_only"].as_array().is_some_and(|a| a.iter().any(|p| p.as_str() == Some(&to_id)))
    })
}

/// A round's coverage, each node's reachability, and each URL exchange.
fn print_round(round: usize, report: &LabReport) {
    println!(
        "round {}: covered {}/{} in {}; {}",
        round + 1,
        report.web.covered,
        report.web.reachable,
        report.settled_secs.map_or("—".into(), |s| format!("{s:.0} s")),
        report
            .nodes
            .iter()
            .map(|n| format!("{} {}", n.name, n.reachability["summary"].as_str().unwrap_or("?")))
            .collect::<Vec<_>>()
            .join("; ")
    );
    for e in &report.exchanges {
        println!(
            "  {} URLs {} → {} ({}): {:.2} s",
            e.urls,
            e.from,
            e.to,
            if e.relayed || relayed_between(report, &e.from, &e.to) { "relayed" } else { "direct" },
            e.secs
        );
    }
}

/// What the rounds measured.
#[derive(Default)]
struct Tally {
    reachable: Vec<f64>,
    direct: Vec<f64>,
    punched: u64,
    punch_failed: u64,
    search_direct: Vec<f64>,
    search_punched: Vec<f64>,
    search_relayed: Vec<f64>,
    ex_direct: Vec<f64>,
    ex_relayed: Vec<f64>,
}

impl Tally {
    fn add(&mut self, report: &LabReport) {
        let nat_of = |name: &str| report.nodes.iter().find(|n| n.name == name).and_then(|n| n.nat.clone());
        // Which peers of a node hole-punched: a home node whose summary names punches.
        for n in report.nodes.iter().filter(|n| n.nat.is_some()) {
            let r = &n.reachability;
            if let Some(s) = r["reachable_after_secs"].as_f64() {
                self.reachable.push(s);
            }
            if let Some(s) = r["direct_after_secs"].as_f64() {
                self.direct.push(s);
            }
            self.punched += r["hole_punches"].as_u64().unwrap_or(0);
            self.punch_failed += r["hole_punch_failures"].as_u64().unwrap_or(0);
        }
        // Relayed: the asking node reached the peer only through a relay at the end of the run.
        for s in &report.searches {
            for (peer, ms) in &s.answered {
                if nat_of(&s.from).is_none() || nat_of(peer).is_none() {
                    self.search_direct.push(*ms);
                } else if relayed_between(report, &s.from, peer) {
                    self.search_relayed.push(*ms);
                } else {
                    self.search_punched.push(*ms);
                }
            }
        }
        for e in &report.exchanges {
            let rate = e.urls as f64 / e.secs;
            if e.relayed || relayed_between(report, &e.from, &e.to) {
                self.ex_relayed.push(rate);
            } else {
                self.ex_direct.push(rate);
            }
        }
    }

    fn print(self, rounds: usize) {
        let Tally {
            reachable,
            direct,
            punched,
            punch_failed,
            search_direct,
            search_punched,
            search_relayed,
            ex_direct,
            ex_relayed,
        } = self;
        println!("\nmedians over {rounds} rounds (2 cone NATs, 1 symmetric NAT, 1 public node):");
        println!("  reachable after start (relay slot)   {}", show(median(reachable), "s"));
        println!("  first direct connection (hole punch) {}", show(median(direct), "s"));
        let tried = punched + punch_failed;
        println!(
            "  hole punches that worked             {punched}/{tried} ({:.0}%)",
            if tried == 0 { 0.0 } else { punched as f64 * 100.0 / tried as f64 }
        );
        println!(
            "  search latency per peer: direct {}, hole-punched {}, relayed {}",
            show(median(search_direct), "ms"),
            show(median(search_punched), "ms"),
            show(median(search_relayed), "ms")
        );
        println!(
            "  URL exchange (1000 URLs, one full batch): direct {}, relayed {}",
            show(median(ex_direct), "URLs/s"),
            show(median(ex_relayed), "URLs/s")
        );
    }
}
