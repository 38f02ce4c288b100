//! Replays network-search routing offline over a finished simulator run: reads every node's
//! chunk vectors from its data dir (`<work dir>/node<i>/data`), the questions from
//! `<work dir>/search.json`, and prints recall@10 for ranking policies and fan-outs, next to the
//! oracle (the best peers chosen knowing the answer). For tuning the ranking without rerunning
//! the network: `cargo run --release -p weft-simnet --example route_replay -- <work dir> [models]`.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use weft_index::kmeans::kmeans;
use weft_vecmath::dot;

/// A ranking rule: a peer's score for a query.
type Policy<'a> = Box<dyn Fn(&[f32], usize) -> f32 + 'a>;

struct Doc {
    node: usize,
    url: String,
    vectors: Vec<Vec<f32>>,
}

fn read(dir: &Path, node: usize) -> Vec<Doc> {
    let db = sled::Config::new().path(dir.join("db")).open().expect("sled");
    let store = weft_index::store::DocStore::open(dir, &db).expect("store");
    let mut out = Vec::new();
    for e in store.docs() {
        let (_, r) = e.expect("doc");
        if r.state != weft_index::DocState::Indexed {
            continue;
        }
        let vectors = r.chunks.iter().filter_map(|k| store.vector(*k).ok().flatten()).collect();
        out.push(Doc { node, url: r.url, vectors });
    }
    out
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let work = PathBuf::from(args.get(1).expect("work dir"));
    let models = PathBuf::from(args.get(2).cloned().unwrap_or_else(|| "models".into()));
    let asked: Vec<serde_json::Value> =
        serde_json::from_str(&std::fs::read_to_string(work.join("search.json")).expect("search.json")).expect("json");
    let mut docs = Vec::new();
    let mut n = 0;
    while work.join(format!("node{n}/data/db")).exists() {
        docs.extend(read(&work.join(format!("node{n}/data")), n));
        n += 1;
    }
    let nodes = n;
    let mut embedder = weft_index::Embedder::open(&weft_simnet::search_eval::embed_config(&models), 1).expect("model");
    let texts: Vec<&str> = asked.iter().map(|a| a["query"].as_str().unwrap()).collect();
    let queries = embedder.embed(&texts).expect("embed");
    let per_node: Vec<Vec<Vec<f32>>> =
        (0..nodes).map(|i| docs.iter().filter(|d| d.node == i).flat_map(|d| d.vectors.clone()).collect()).collect();
    println!("{nodes} nodes, {} documents, {} questions", docs.len(), queries.len());
    for k in [16usize, 32, 64] {
        let summaries: Vec<_> = per_node.iter().map(|v| kmeans(v, k)).collect();
        let policies: Vec<(String, Policy)> = vec![
            (
                "max".into(),
                Box::new(|q: &[f32], i: usize| {
                    summaries[i].centroids.iter().map(|c| dot(q, c)).fold(f32::MIN, f32::max)
                }),
            ),
            ("soft0.02".into(), Box::new(|q: &[f32], i: usize| soft(q, &summaries[i], 0.02))),
            ("soft0.05".into(), Box::new(|q: &[f32], i: usize| soft(q, &summaries[i], 0.05))),
            ("soft0.1".into(), Box::new(|q: &[f32], i: usize| soft(q, &summaries[i], 0.1))),
        ];
        for (name, score) in &policies {
            let mut line = format!("k={k:<3} {name:<9}");
            for fanout in [2usize, 4, 6, 8, 10] {
                let mut total = 0.0;
                for (a, q) in asked.iter().zip(&queries) {
                    let me = a["node"].as_u64().unwrap() as usize;
                    let truth = top10(q, &docs);
                    let mut ranked: Vec<usize> = (0..nodes).filter(|i| *i != me && !per_node[*i].is_empty()).collect();
                    ranked.sort_by(|x, y| score(q, *y).total_cmp(&score(q, *x)));
                    let chosen: HashSet<usize> = ranked.into_iter().take(fanout).chain([me]).collect();
                    total +=
                        truth.iter().filter(|d| chosen.contains(&d.node)).count() as f64 / truth.len().max(1) as f64;
                }
                line += &format!("  F={fanout}: {:.3}", total / queries.len() as f64);
            }
            println!("{line}");
        }
    }
    let mut line = "oracle         ".to_string();
    for fanout in [2usize, 4, 6, 8, 10] {
        let mut total = 0.0;
        for (a, q) in asked.iter().zip(&queries) {
            let me = a["node"].as_u64().unwrap() as usize;
            let truth = top10(q, &docs);
            let mut count: HashMap<usize, usize> = HashMap::new();
            for d in &truth {
                *count.entry(d.node).or_default() += 1;
            }
            let mine = count.remove(&me).unwrap_or(0);
            let mut c: Vec<usize> = count.into_values().collect();
            c.sort_unstable_by(|a, b| b.cmp(a));
            let got = mine + c.into_iter().take(fanout).sum::<usize>();
            total += got as f64 / truth.len().max(1) as f64;
        }
        line += &format!("  F={fanout}: {:.3}", total / queries.len() as f64);
    }
    println!("{line}");
    let spread: f64 = queries
        .iter()
        .map(|q| top10(q, &docs).iter().map(|d| d.node).collect::<HashSet<_>>().len() as f64)
        .sum::<f64>()
        / queries.len() as f64;
    println!("nodes holding a question's exact top 10, on average: {spread:.2}");
}

fn soft(q: &[f32], s: &weft_index::kmeans::Centroids, tau: f32) -> f32 {
    s.centroids.iter().zip(&s.weights).map(|(c, w)| *w as f32 * ((dot(q, c) - 1.0) / tau).exp()).sum()
}

fn top10<'a>(q: &[f32], docs: &'a [Doc]) -> Vec<&'a Doc> {
    let mut s: Vec<(f32, &Doc)> =
        docs.iter().map(|d| (d.vectors.iter().map(|v| dot(q, v)).fold(f32::MIN, f32::max), d)).collect();
    s.sort_by(|a, b| b.0.total_cmp(&a.0));
    let mut seen = HashSet::new();
    s.into_iter().filter(|(_, d)| seen.insert(d.url.clone())).take(10).map(|(_, d)| d).collect()
}
