//! `--ladder DEPTH`: a codebook that grows by splitting its cells, judged against codebooks
//! trained afresh at each size.
//!
//! The network ships one codebook of 256 cells, and past 768 members (256 cells × 3 owners) its
//! owners stop growing in number. A network cannot retrain its codebook as it grows: every node
//! must compute the same cells, and nobody coordinates them. What a release can ship instead is
//! a *ladder*: 256 cells and, at each level below, every cell of the level above split in two
//! (2-means over the training chunks that fall in it). Every node holds the same ladder and
//! takes the level its network's size calls for.
//!
//! Two questions decide how the node should use it, each asked at every size of `--grow`, for
//! each of `--designs`, at the level whose owners hold closest to each of `--held` cells:
//!
//! 1. **Does a split cell lose recall against as many cells trained at once?** `trained` is a
//!    k-means codebook of the level's size over the same training chunks; `ladder` is the
//!    level's split cells; each chunk goes to its best (or spread) cells of that codebook.
//! 2. **Can a posting name one cell for good?** A posting's cell is under its publisher's
//!    signature, so an owner cannot move it to another cell when the network climbs a level;
//!    re-posting everything at every level is what a fixed cell would save. `ladder, fine`: each
//!    chunk goes to its cells of the finest level, and a fine cell is owned, and ranked by a
//!    question, as its ancestor at the network's level (so a chunk whose fine cells share an
//!    ancestor has fewer copies there).
//!
//! The ladder and the trained codebooks learn from the chunks of the training half of the hosts
//! (the questions come from the other half), at most `SAMPLE_PER_CELL` chunks a cell. A fourth
//! row, `shipped ladder`, is the release's own (`weft_p2p::placement::shipped_ladder`) at the
//! level the node takes: split over every host's chunks (`--write-ladder`), so it has seen the
//! text of the questions' hosts, though not the questions.

use crate::{design_cells, held_out, place, storage, subset, Args, Corpus, Design, Grown, Network, SAMPLE_PER_CELL};
use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::time::Instant;
use weft_index::kmeans::kmeans;
use weft_index::Embedder;
use weft_p2p::placement::{cell_owners, Codebook, Ladder};
use weft_p2p::ring::Ring;
use weft_p2p::PeerId;
use weft_simnet::rng::Rng;

/// The ladder's first level: the size of the codebook the network ships.
const FIRST_LEVEL: usize = 256;

/// A ladder `depth` levels below `base`: each next level by splitting every cell in two
/// (2-means over the training chunks nearest it), cell `p`'s halves numbered `2p` and `2p + 1`.
/// A cell with fewer than two chunks keeps its place twice (the copy never wins a chunk: ties
/// go to the lower cell).
pub fn split(base: Codebook, train: &[Vec<f32>], depth: usize) -> anyhow::Result<Ladder> {
    let mut levels = vec![base];
    for _ in 0..depth {
        let above = levels.last().expect("level 0");
        let mut members: Vec<Vec<Vec<f32>>> = vec![Vec::new(); above.len()];
        for (v, c) in train.iter().zip(nearest_of(above, train)) {
            members[c as usize].push(v.clone());
        }
        let mut cells = Vec::new();
        for (c, points) in members.iter().enumerate() {
            let halves = kmeans(points, 2).centroids;
            cells.extend(if halves.len() == 2 { halves } else { vec![above.cell(c as u32).to_vec(); 2] });
        }
        levels.push(Codebook::new(&cells)?);
    }
    Ok(Ladder::new(levels)?)
}

/// Each vector's nearest cell, on two threads.
fn nearest_of(book: &Codebook, vectors: &[Vec<f32>]) -> Vec<u32> {
    let mid = vectors.len() / 2;
    let one = |v: &Vec<f32>| book.nearest(v, 1).first().map_or(0, |c| c.0);
    std::thread::scope(|s| {
        let a = s.spawn(|| vectors[..mid].iter().map(one).collect::<Vec<_>>());
        let b = s.spawn(|| vectors[mid..].iter().map(one).collect::<Vec<_>>());
        [a.join().expect("a thread"), b.join().expect("a thread")].concat()
    })
}

pub fn ladder(corpus: &Corpus, a: &Args, depth: usize, embedder: &mut Embedder) -> anyhow::Result<()> {
    let started = Instant::now();
    let mut train: Vec<usize> =
        (0..corpus.len()).filter(|c| !held_out(&corpus.hosts[corpus.docs[corpus.chunk_doc[*c] as usize].2])).collect();
    Rng(0x434f_4445).shuffle(&mut train); // "CODE"
    let sample = |cells: usize| -> Vec<Vec<f32>> {
        train.iter().take(SAMPLE_PER_CELL * cells).map(|c| corpus.vector(*c).to_vec()).collect()
    };
    let finest = FIRST_LEVEL << depth;
    let ladder = split(Codebook::new(&kmeans(&sample(finest), FIRST_LEVEL).centroids)?, &sample(finest), depth)?;
    println!(
        "\nA ladder of {} levels ({}–{} cells) over {} training chunks, built in {:.0} s; {} chunks a member",
        depth + 1,
        FIRST_LEVEL,
        finest,
        sample(finest).len(),
        started.elapsed().as_secs_f64(),
        a.per_member
    );
    println!(
        "| members | design | codebook | level | cells | an owner holds | peers at most | recall@10 | peers asked | postings × own, mean / max |"
    );
    println!("|---:|---|---|---:|---:|---:|---:|---:|---:|---:|");
    let mut trained: HashMap<usize, Codebook> = HashMap::new();
    for &share in &a.grow {
        let started = Instant::now();
        let sub = subset(corpus, share);
        let g = Grown::new(&sub, a, embedder)?;
        let (n, network) = (g.members.len(), g.network(&sub));
        for &held in &a.held {
            for d in &a.designs {
                let level = ladder.level_holding(n, d.replicas, held);
                let cells = ladder.level(level).len();
                if let Entry::Vacant(e) = trained.entry(cells) {
                    e.insert(Codebook::new(&kmeans(&sample(cells), cells).centroids)?);
                }
                let fine_cells = design_cells(&sub, ladder.level(depth), *d);
                let fine: Vec<Vec<(u32, f32)>> = fine_cells
                    .iter()
                    .map(|cs| {
                        let mut up: Vec<(u32, f32)> = Vec::new();
                        for &(c, sim) in cs {
                            let a = Ladder::ancestor(c, depth, level);
                            if !up.iter().any(|(u, _)| *u == a) {
                                up.push((a, sim));
                            }
                        }
                        up
                    })
                    .collect();
                let runs = [
                    ("trained", &trained[&cells], design_cells(&sub, &trained[&cells], *d)),
                    ("ladder", ladder.level(level), design_cells(&sub, ladder.level(level), *d)),
                    ("ladder, fine", ladder.level(level), fine),
                ];
                // The product's own ladder at the level the node takes: split over every host's
                // chunks, those of the questions' hosts among them.
                let shipped = weft_p2p::placement::shipped_ladder();
                let at = shipped.asked_level(n, d.replicas);
                let own_row = ("shipped ladder", shipped.level(at), design_cells(&sub, shipped.level(at), *d));
                for (what, book, chunk_cells) in runs.into_iter().chain([own_row]) {
                    let level = if what == "shipped ladder" { at } else { level };
                    one_row(&network, &g.ring, book, &chunk_cells, *d, a, n, (what, level))?;
                }
            }
        }
        eprintln!(
            "  share {share}: {n} members, {} questions, {:.0} s",
            g.qvecs.len(),
            started.elapsed().as_secs_f64()
        );
    }
    Ok(())
}

/// Places every chunk in `chunk_cells` on the owners of those cells of `book`, asks every
/// question by `book`'s cells, and prints the row.
#[allow(clippy::too_many_arguments)]
fn one_row(
    network: &Network,
    ring: &Ring,
    book: &Codebook,
    chunk_cells: &[Vec<(u32, f32)>],
    d: Design,
    a: &Args,
    n: usize,
    (what, level): (&str, usize),
) -> anyhow::Result<()> {
    let owners: Vec<Vec<PeerId>> =
        (0..book.len() as u32).map(|c| cell_owners(ring, book.id(), c, d.replicas)).collect();
    let held = place(network.corpus, network.node_of, &owners, chunk_cells, d.per_chunk, d.per_chunk, 0.0);
    let (mean, most) = storage(&held, network.corpus.len());
    for &budget in &a.budgets {
        let (recall, asked, _) = network.ask_by_cell(book, &owners, &held, budget);
        println!(
            "| {n} | {d} | {what} | {level} | {} | {:.2} | {budget} | {recall:.3} | {asked:.1} | {mean:.1} / {most:.1} |",
            book.len(),
            (book.len() * d.replicas) as f64 / n as f64,
        );
    }
    Ok(())
}
