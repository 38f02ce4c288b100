//! The default measure: at each network size, recall@10 within a budget of peers for content
//! placed by host (routed by summaries, and an oracle's best peers as its ceiling) and by cell
//! (each codebook, each spill of a chunk over its best cells).

use crate::corpus::Corpus;
use crate::{
    balance, cell_spread, embed_all, exact, held_out, judge, merge, nearest_cells, peers, place, print_rows, questions,
    recall, storage, summary_score, top_docs, Args, Network, Row, SUMMARY_CENTROIDS, TRAIN_SAMPLE,
};
use std::collections::HashMap;
use std::time::Instant;
use weft_index::kmeans::kmeans;
use weft_index::Embedder;
use weft_p2p::placement::{cell_owners, cells_per_chunk, Codebook};
use weft_p2p::ring::{Ring, DEFAULT_VNODES};
use weft_p2p::PeerId;
use weft_simnet::rng::Rng;

/// Questions from the held-out hosts, their exact answers, the codebooks, then each size's rows.
pub(crate) fn compare(corpus: &Corpus, a: &Args, embedder: &mut Embedder) -> anyhow::Result<()> {
    let qs = questions(corpus, a.queries, &held_out);
    let started = Instant::now();
    let qvecs = embed_all(embedder, &qs)?;
    let truth = exact(corpus, &qvecs);
    println!("{} questions, exact answers in {:.1} s", qs.len(), started.elapsed().as_secs_f64());

    let codebooks = codebooks(corpus, a)?;
    // Each chunk's three best cells.
    let chunk_cells: Vec<Vec<Vec<(u32, f32)>>> =
        codebooks.iter().map(|(_, book)| nearest_cells(corpus, book, 3)).collect();
    for &n in &a.nodes {
        let members = peers(n);
        let ring = Ring::new(members.clone(), DEFAULT_VNODES);
        let node_of: HashMap<PeerId, usize> = members.iter().enumerate().map(|(i, m)| (*m, i)).collect();
        // Host placement: what each node crawled.
        let mut own: Vec<Vec<usize>> = vec![Vec::new(); n];
        for c in 0..corpus.len() {
            let host = &corpus.hosts[corpus.docs[corpus.chunk_doc[c] as usize].2];
            own[node_of[ring.owner(host).unwrap()]].push(c);
        }
        let askers: Vec<usize> = (0..qs.len()).map(|i| (i * 7919) % n).collect();
        let network = Network {
            corpus,
            qvecs: &qvecs,
            truth: &truth,
            members: &members,
            node_of: &node_of,
            own: &own,
            askers: &askers,
        };
        let mut rows = summary_rows(&network, a);
        rows.extend(oracle_rows(&network, &ring, a));
        rows.extend(cell_rows(&network, &ring, a, &codebooks, &chunk_cells));
        print_rows(
            &format!("N = {n} ({} questions, codebook trained on the other half of the hosts)", qs.len()),
            &rows,
        );
    }
    Ok(())
}

/// Codebooks trained on the other half of the hosts (held out), at each `--cells`, and
/// balanced with `--balance`.
fn codebooks(corpus: &Corpus, a: &Args) -> anyhow::Result<Vec<(String, Codebook)>> {
    let mut rng = Rng(0x434f_4445); // "CODE"
    let sample = |filter: &dyn Fn(usize) -> bool, rng: &mut Rng| -> Vec<Vec<f32>> {
        let mut idx: Vec<usize> = (0..corpus.len()).filter(|c| filter(*c)).collect();
        rng.shuffle(&mut idx);
        idx.truncate(TRAIN_SAMPLE);
        idx.into_iter().map(|c| corpus.vector(c).to_vec()).collect()
    };
    let train_half = sample(&|c| !held_out(&corpus.hosts[corpus.docs[corpus.chunk_doc[c] as usize].2]), &mut rng);
    let mut codebooks: Vec<(String, Codebook)> = Vec::new();
    for &cells in &a.cells {
        let started = Instant::now();
        let centroids = kmeans(&train_half, cells).centroids;
        let book = Codebook::new(&centroids)?;
        println!(
            "codebook of {cells} cells ({} kept) in {:.0} s; fullest cell {:.1}× the mean over the corpus",
            book.len(),
            started.elapsed().as_secs_f64(),
            cell_spread(&book, corpus)
        );
        codebooks.push((format!("{cells} cells"), book));
        if let Some(slack) = a.balance {
            let started = Instant::now();
            let book = Codebook::new(&balance(&train_half, centroids, slack, 10))?;
            println!(
                "balanced (slack {slack}) in {:.0} s; fullest cell {:.1}× the mean over the corpus",
                started.elapsed().as_secs_f64(),
                cell_spread(&book, corpus)
            );
            codebooks.push((format!("{cells} cells balanced ({slack})"), book));
        }
    }
    Ok(codebooks)
}

/// Today: summaries of 32 centroids, the best-scoring peers asked.
fn summary_rows(network: &Network<'_>, a: &Args) -> Vec<Row> {
    let (corpus, qvecs, truth, own, askers) =
        (network.corpus, network.qvecs, network.truth, network.own, network.askers);
    let n = network.members.len();
    let mut rows = Vec::new();
    let summaries: Vec<_> = own
        .iter()
        .map(|chunks| {
            let vs: Vec<Vec<f32>> = chunks.iter().map(|c| corpus.vector(*c).to_vec()).collect();
            kmeans(&vs, SUMMARY_CENTROIDS)
        })
        .collect();
    for &budget in &a.budgets {
        let (recall_mean, asked_mean, asked_max) = judge(qvecs.len(), |qi| {
            let (q, asker) = (&qvecs[qi], askers[qi]);
            let mut ranked: Vec<(f32, usize)> = (0..n)
                .filter(|p| *p != asker)
                .filter_map(|p| summary_score(&summaries[p].centroids, &summaries[p].weights, q).map(|s| (s, p)))
                .collect();
            ranked.sort_by(|a, b| b.0.total_cmp(&a.0));
            let asked: Vec<usize> = ranked.iter().take(budget).map(|(_, p)| *p).collect();
            let mut lists = vec![top_docs(corpus, q, own[asker].iter().copied(), 10)];
            lists.extend(asked.iter().map(|p| top_docs(corpus, q, own[*p].iter().copied(), 10)));
            (recall(&merge(lists, 10), &truth[qi]), asked.len())
        });
        rows.push(Row {
            what: format!("by host, {SUMMARY_CENTROIDS}-centroid summaries, budget {budget}"),
            recall: recall_mean,
            asked_mean,
            asked_max,
            storage: 0.0,
            storage_max: 0.0,
        });
    }
    rows
}

/// The ceiling of host placement: an oracle asks the peers holding most of the answer.
fn oracle_rows(network: &Network<'_>, ring: &Ring, a: &Args) -> Vec<Row> {
    let (corpus, qvecs, truth, node_of, askers) =
        (network.corpus, network.qvecs, network.truth, network.node_of, network.askers);
    let mut rows = Vec::new();
    let node_of_doc: Vec<usize> =
        corpus.docs.iter().map(|(_, _, h)| node_of[ring.owner(&corpus.hosts[*h]).unwrap()]).collect();
    for &budget in &a.budgets {
        let (recall_mean, asked_mean, asked_max) = judge(qvecs.len(), |qi| {
            let mut holding: HashMap<usize, usize> = HashMap::new();
            for d in &truth[qi] {
                *holding.entry(node_of_doc[*d as usize]).or_default() += 1;
            }
            let mut best: Vec<(usize, usize)> = holding.into_iter().map(|(node, k)| (k, node)).collect();
            best.sort_by(|a, b| b.cmp(a));
            let asker = askers[qi];
            let asked: Vec<usize> = best.iter().map(|(_, p)| *p).filter(|p| *p != asker).take(budget).collect();
            let found = truth[qi].iter().filter(|d| {
                let holder = node_of_doc[**d as usize];
                holder == asker || asked.contains(&holder)
            });
            (found.count() as f64 / truth[qi].len().max(1) as f64, asked.len())
        });
        rows.push(Row {
            what: format!("by host, an oracle's best peers (the ceiling), budget {budget}"),
            recall: recall_mean,
            asked_mean,
            asked_max,
            storage: 0.0,
            storage_max: 0.0,
        });
    }
    rows
}

/// By cell: each chunk posted to the owners of its best cell (or two), queries asking owners of
/// the best cells until the budget is spent.
fn cell_rows(
    network: &Network<'_>,
    ring: &Ring,
    a: &Args,
    codebooks: &[(String, Codebook)],
    chunk_cells: &[Vec<Vec<(u32, f32)>>],
) -> Vec<Row> {
    let (corpus, node_of) = (network.corpus, network.node_of);
    let n = network.members.len();
    let mut rows = Vec::new();
    for (bi, (name, book)) in codebooks.iter().enumerate() {
        let owners: Vec<Vec<PeerId>> =
            (0..book.len() as u32).map(|c| cell_owners(ring, book.id(), c, a.replicas)).collect();
        // Its best `always` cells, and up to `most` when within `margin` of the best (a
        // chunk near a border): the best cell; the second only near it; the best two (what
        // a small network ships); the third only near the best; the best three (what a
        // large network ships).
        let spills = [
            ("top 1", 1, 1, 0.0f32),
            ("top 2 within 0.03", 1, 2, 0.03),
            ("top 2", 2, 2, 0.0),
            ("top 2, a third within 0.03", 2, 3, 0.03),
            ("top 3", 3, 3, 0.0),
        ];
        // What a node of this network posts to (two cells, three in a large network).
        let shipped = cells_per_chunk(n, book.len(), a.replicas);
        for (spill, always, most, margin) in spills {
            let spill = if always == shipped && most == shipped {
                format!("{spill} (shipped at this size)")
            } else {
                spill.to_string()
            };
            let held = place(corpus, &node_of, &owners, &chunk_cells[bi], always, most, margin);
            let (storage, storage_max) = storage(&held, corpus.len());
            for &budget in &a.budgets {
                let (recall_mean, asked_mean, asked_max) = network.ask_by_cell(book, &owners, &held, budget);
                rows.push(Row {
                    what: format!("by cell, {name}, {spill}, r = {}, budget {budget}", a.replicas),
                    recall: recall_mean,
                    asked_mean,
                    asked_max,
                    storage,
                    storage_max,
                });
            }
        }
    }
    rows
}
