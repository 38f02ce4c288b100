//! Replays routing by cells offline over a finished simulator run (kept with `--keep`): reads
//! every node's own index and cell store from `<work dir>/node<i>/data`, the members' peer ids
//! from the run's report, and the questions asked by cells from `<work dir>/search.json`. For
//! each question it makes the plan the asker would make on the ring of every member — the
//! owners of the question's best `nprobe` cells, up to the fan-out — and scores what the asked
//! peers and the asker hold against the exact top 10 over every node. It prints recall@10 for
//! plans and fan-outs next to the live figure, so the plan can be tuned without rerunning fifty
//! nodes. It assumes the stores held at the questions what they hold at the end (the simulator
//! asks after the crawl and the postings settled).
//!
//! `cargo run --release -p weft-simnet --example cell_replay -- <work dir> <report.json> [models]`

use std::collections::HashSet;
use std::path::PathBuf;
use weft_p2p::placement::{cell_owners, plan, shipped};
use weft_p2p::{PeerId, Ring, DEFAULT_VNODES};
use weft_simnet::search_eval::{exact_top, read_node, Doc};

/// Whom a question asks: `(cell, its owners)` best first → peers chosen.
type Planner = fn(&[(u32, Vec<PeerId>)], &PeerId, usize) -> Vec<PeerId>;

/// The plan the nodes make ([`plan`]: the widest owner of each cell not yet covered).
fn shipped_plan(cells: &[(u32, Vec<PeerId>)], me: &PeerId, budget: usize) -> Vec<PeerId> {
    plan(cells.iter().map(|(c, o)| (*c, o.as_slice())), me, budget, |_| true).into_iter().map(|(p, _)| p).collect()
}

/// The earlier plan, the replay's reference: for each cell in order not yet covered, its first
/// owner.
fn first_owner(cells: &[(u32, Vec<PeerId>)], me: &PeerId, budget: usize) -> Vec<PeerId> {
    let mut chosen: Vec<PeerId> = Vec::new();
    for (_, owners) in cells {
        if owners.contains(me) || owners.iter().any(|o| chosen.contains(o)) {
            continue;
        }
        if chosen.len() < budget {
            chosen.push(owners[0]);
        }
    }
    chosen
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let work = PathBuf::from(args.get(1).expect("work dir"));
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(args.get(2).expect("report.json")).expect("report"))
            .expect("json");
    let models = PathBuf::from(args.get(3).cloned().unwrap_or_else(|| "models".into()));
    let asked: Vec<serde_json::Value> =
        serde_json::from_str(&std::fs::read_to_string(work.join("search.json")).expect("search.json")).expect("json");
    let asked: Vec<&serde_json::Value> =
        asked.iter().filter(|a| a["dense"] == true && a["by_buckets"] != true && a["error"].is_null()).collect();
    let peers: Vec<PeerId> = report["nodes"]
        .as_array()
        .expect("nodes")
        .iter()
        .map(|n| n["peer_id"].as_str().unwrap().parse().unwrap())
        .collect();
    let nodes: Vec<Vec<Doc>> =
        (0..peers.len()).map(|n| read_node(&work.join(format!("node{n}/data")), n).expect("a node's data")).collect();
    let mut embedder = weft_index::Embedder::open(&weft_simnet::search_eval::embed_config(&models), 1).expect("model");
    let texts: Vec<&str> = asked.iter().map(|a| a["query"].as_str().unwrap()).collect();
    let queries = embedder.embed(&texts).expect("embed");
    let ring = Ring::new(peers.clone(), DEFAULT_VNODES);
    let book = shipped();
    let all: Vec<&Doc> = nodes.iter().flatten().collect();
    let truths: Vec<Vec<&Doc>> = queries.iter().map(|q| exact_top(q, &all, 10)).collect();
    // The live figure, judged the same way.
    let live: f64 = asked
        .iter()
        .zip(&truths)
        .map(|(a, truth)| {
            let found: HashSet<&str> = a["results"]
                .as_array()
                .unwrap()
                .iter()
                .flat_map(|r| r.as_array().unwrap())
                .filter_map(|u| u.as_str())
                .collect();
            truth.iter().filter(|d| found.contains(d.url.as_str())).count() as f64 / truth.len().max(1) as f64
        })
        .sum::<f64>()
        / asked.len() as f64;
    println!("{} nodes, {} questions by cells; live recall@10 {live:.3}", peers.len(), asked.len());
    let planners: [(&str, Planner); 2] = [("first owner", first_owner), ("plan (widest)", shipped_plan)];
    for replicas in [3usize] {
        for (name, planner) in planners {
            for nprobe in [8usize, 16, 32] {
                let mut line = format!("r={replicas} {name:<13} nprobe={nprobe:<3}");
                for budget in [4usize, 6, 7, 8] {
                    let mut total = 0.0;
                    let mut cells_covered = 0usize;
                    for ((a, q), truth) in asked.iter().zip(&queries).zip(&truths) {
                        let asker = a["node"].as_u64().unwrap() as usize;
                        let me = peers[asker];
                        let cells: Vec<(u32, Vec<PeerId>)> = book
                            .nearest(q, nprobe)
                            .into_iter()
                            .map(|(c, _)| (c, cell_owners(&ring, book.id(), c, replicas)))
                            .collect();
                        let chosen = planner(&cells, &me, budget);
                        cells_covered += cells
                            .iter()
                            .filter(|(_, o)| o.contains(&me) || o.iter().any(|p| chosen.contains(p)))
                            .count();
                        let asked_nodes: HashSet<usize> =
                            chosen.iter().filter_map(|p| peers.iter().position(|x| x == p)).chain([asker]).collect();
                        let held: Vec<&Doc> = all.iter().copied().filter(|d| asked_nodes.contains(&d.node)).collect();
                        let got: HashSet<&str> = exact_top(q, &held, 10).iter().map(|d| d.url.as_str()).collect();
                        total += truth.iter().filter(|d| got.contains(d.url.as_str())).count() as f64
                            / truth.len().max(1) as f64;
                    }
                    line += &format!(
                        "  F={budget}: {:.3} ({:.1} cells)",
                        total / asked.len() as f64,
                        cells_covered as f64 / asked.len() as f64
                    );
                }
                println!("{line}");
            }
        }
    }
}
