//! Semantic placement at scale, in-process: how much of the exact answer a question reaches when
//! it may ask at most `budget` peers, with content placed by host (today: each node holds what
//! it crawled, and queries are routed by 32-centroid summaries) or by meaning (every chunk also
//! posted to the owners of its cell in a network-wide codebook, queries routed by cell).
//!
//! The text is real: Debian's documentation packages (the PostgreSQL, Python, Rust, Git, Linux
//! kernel, Django and SQLite manuals, the Debian reference and the Debian Administrator's
//! Handbook; `scripts/bench-placement.sh` installs them), split into
//! hosts the way the simulator splits the PostgreSQL manual (a directory's pages, forty to a
//! host), extracted by `weft-extract` and indexed by the real indexer (chunker, model, dedup)
//! into a real index under `target/placement/` — embedded once, reused by later runs.
//!
//! The questions are page titles (section numbers dropped), a seeded sample; the truth is the
//! exact top 10 documents by cosine over every chunk (a document's best chunk, as `/search`
//! ranks). Each asked peer returns its own top 10 documents over the chunks it holds; the
//! asker merges them with its own. Recall@10 is the share of the exact top 10 in the merged
//! top 10. Nodes are simulated: a member set on the real ring (`weft_p2p::Ring`), no sockets.
//!
//! The codebook is trained on chunks of half the hosts (a blake3 bit of the host name) and
//! judged on questions from the other half ("held-out"), and beside that on a sample of all
//! ("in-sample").
//!
//! ```sh
//! bash scripts/bench-placement.sh                      # installs the manuals, runs this
//! cargo run --release -p weft-simnet --example placement -- --nodes 100,1000 --chunks 100000
//! ```
//!
//! `--churn HOURS` (with `--grow`, `--held`, `--designs`, `--seed`) asks the questions while
//! members come and go instead (see [`churn`]); `--climb FROM,TO` while the network grows
//! across the codebook ladder's levels (see [`climb`]).
//!
//! `--grow 0.125,0.25,0.5,1` judges cells that grow with the network instead (see [`grow`]),
//! for each of `--designs` (`3x3,1x9s`: owners a cell × cells a chunk, `s` for spread cells).
//! With `--ladder DEPTH`, those cells are split from the shipped size rather than trained
//! afresh at each size (see [`ladder`]).
//!
//! `WEFT_PLACEMENT_DOCS` (colon-separated directories) replaces the default manuals.
//! `--write-codebook PATH --cells N` trains the codebook the network ships (N cells, on a seeded
//! sample of every host's chunks) and writes it to PATH instead of measuring;
//! `--write-ladder PATH` splits the shipped codebook into the levels the network grows into
//! (`weft_p2p::placement::ladder`), over every host's chunks.

mod churn;
mod climb;
mod compare;
mod corpus;
mod ladder;

use corpus::{corpus, subset, Corpus, DEFAULT_DOCS};

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::Instant;
use weft_index::embed::cosine;
use weft_index::kmeans::kmeans;
use weft_index::Embedder;
use weft_p2p::placement::{cell_owners, plan, spread, Codebook};
use weft_p2p::ring::{Ring, DEFAULT_VNODES};
use weft_p2p::PeerId;
use weft_simnet::rng::Rng;

/// Centroids in today's routing summary.
const SUMMARY_CENTROIDS: usize = 32;
/// Chunks the codebooks are trained on.
const TRAIN_SAMPLE: usize = 20_000;

struct Args {
    nodes: Vec<usize>,
    chunks: usize,
    queries: usize,
    cells: Vec<usize>,
    budgets: Vec<usize>,
    replicas: usize,
    /// Train the network's codebook (of `cells[0]` cells, on a sample of every host) and write
    /// it here instead of measuring.
    write_codebook: Option<PathBuf>,
    /// Also measure codebooks balanced on their training sample: no cell takes more than
    /// (1 + this) × its even share of the sample (see [`balance`]).
    balance: Option<f32>,
    /// `--grow`: instead of the fixed-size runs, the network growing with its content (see
    /// [`grow`]): these shares of the hosts, ...
    grow: Vec<f64>,
    /// ... each member bringing this many chunks ...
    per_member: usize,
    /// ... and a codebook of as many cells as make each owner hold these many cells ...
    held: Vec<f64>,
    /// ... for each of these designs.
    designs: Vec<Design>,
    /// `--churn HOURS`: instead, questions asked while members come and go (see [`churn`]).
    churn_hours: f64,
    /// The churn's draw.
    seed: u64,
    /// `--nprobe`: cells a question ranks in a `--churn` run (the node's `search.nprobe`).
    nprobe: usize,
    /// `--ladder DEPTH`: instead, a codebook grown by splitting its cells this many times,
    /// judged at the sizes of `--grow` (see [`ladder`]).
    ladder: Option<usize>,
    /// `--climb FROM,TO`: instead, a network growing from FROM to TO members over `--churn`
    /// hours, its postings climbing the ladder (see [`climb`]).
    climb: Option<(usize, usize)>,
    /// `--write-ladder PATH`: split the shipped codebook `--ladder` times (4 unless given) over
    /// every host's chunks and write the levels below it here instead of measuring.
    write_ladder: Option<PathBuf>,
}

fn list(s: &str) -> Vec<usize> {
    s.split(',').map(|x| x.trim().parse().expect("a number")).collect()
}

fn floats(s: &str) -> Vec<f64> {
    s.split(',').map(|x| x.trim().parse().expect("a number")).collect()
}

fn args() -> Args {
    let mut a = Args {
        nodes: vec![20, 100, 1000],
        chunks: 100_000,
        queries: 1000,
        cells: vec![256, 1024, 4096],
        budgets: vec![4, 8],
        replicas: 3,
        write_codebook: None,
        balance: None,
        grow: Vec::new(),
        per_member: 100,
        held: vec![3.0, 1.5, 0.77],
        designs: designs("3x2,3x3"),
        churn_hours: 0.0,
        seed: 1,
        nprobe: weft_config::SearchConfig::default().nprobe,
        ladder: None,
        write_ladder: None,
        climb: None,
    };
    let argv: Vec<String> = std::env::args().skip(1).collect();
    for pair in argv.chunks(2) {
        let v = pair.get(1).map(String::as_str).unwrap_or_else(|| panic!("{} needs a value", pair[0]));
        match pair[0].as_str() {
            "--nodes" => a.nodes = list(v),
            "--chunks" => a.chunks = v.parse().expect("a number"),
            "--queries" => a.queries = v.parse().expect("a number"),
            "--cells" => a.cells = list(v),
            "--budget" => a.budgets = list(v),
            "--replicas" => a.replicas = v.parse().expect("a number"),
            "--write-codebook" => a.write_codebook = Some(PathBuf::from(v)),
            "--balance" => a.balance = Some(v.parse().expect("a number")),
            "--grow" => a.grow = floats(v),
            "--per-member" => a.per_member = v.parse().expect("a number"),
            "--held" => a.held = floats(v),
            "--designs" => a.designs = designs(v),
            "--churn" => a.churn_hours = v.parse().expect("a number of hours"),
            "--seed" => a.seed = v.parse().expect("a number"),
            "--nprobe" => a.nprobe = v.parse().expect("a number"),
            "--ladder" => a.ladder = Some(v.parse().expect("a number of levels")),
            "--write-ladder" => a.write_ladder = Some(PathBuf::from(v)),
            "--climb" => {
                let l = list(v);
                a.climb = Some((l[0], *l.get(1).expect("--climb FROM,TO")));
            }
            other => panic!("unknown flag {other}"),
        }
    }
    a
}

/// The best `k` documents among `chunks` for `q`: (score, doc), a document's best chunk.
fn top_docs(corpus: &Corpus, q: &[f32], chunks: impl Iterator<Item = usize>, k: usize) -> Vec<(f32, u32)> {
    let mut best: HashMap<u32, f32> = HashMap::new();
    for c in chunks {
        let s = cosine(q, corpus.vector(c));
        let e = best.entry(corpus.chunk_doc[c]).or_insert(f32::MIN);
        if s > *e {
            *e = s;
        }
    }
    let mut v: Vec<(f32, u32)> = best.into_iter().map(|(d, s)| (s, d)).collect();
    v.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    v.truncate(k);
    v
}

/// Merges peers' answers: one entry per document, best score first, `k` kept.
fn merge(lists: Vec<Vec<(f32, u32)>>, k: usize) -> Vec<u32> {
    let mut best: HashMap<u32, f32> = HashMap::new();
    for (s, d) in lists.into_iter().flatten() {
        let e = best.entry(d).or_insert(f32::MIN);
        if s > *e {
            *e = s;
        }
    }
    let mut v: Vec<(f32, u32)> = best.into_iter().map(|(d, s)| (s, d)).collect();
    v.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    v.into_iter().take(k).map(|(_, d)| d).collect()
}

/// Runs `one` for every question on two threads: mean recall, mean and most peers asked.
fn judge(questions: usize, one: impl Fn(usize) -> (f64, usize) + Sync) -> (f64, f64, usize) {
    let halves: Vec<Vec<(f64, usize)>> = std::thread::scope(|s| {
        let one = &one;
        let mid = questions / 2;
        let a = s.spawn(move || (0..mid).map(one).collect::<Vec<_>>());
        let b = s.spawn(move || (mid..questions).map(one).collect::<Vec<_>>());
        vec![a.join().expect("a judging thread"), b.join().expect("a judging thread")]
    });
    let all: Vec<(f64, usize)> = halves.concat();
    let n = all.len().max(1) as f64;
    (
        all.iter().map(|r| r.0).sum::<f64>() / n,
        all.iter().map(|r| r.1 as f64).sum::<f64>() / n,
        all.iter().map(|r| r.1).max().unwrap_or(0),
    )
}

fn recall(found: &[u32], truth: &[u32]) -> f64 {
    let truth: HashSet<u32> = truth.iter().copied().collect();
    found.iter().filter(|d| truth.contains(d)).count() as f64 / truth.len().max(1) as f64
}

/// Questions: titles of documents on held-out hosts, section numbers dropped, two words at
/// least, one per title.
fn questions(corpus: &Corpus, n: usize, held_out: &dyn Fn(&str) -> bool) -> Vec<String> {
    let mut seen = HashSet::new();
    let mut titles: Vec<String> = corpus
        .docs
        .iter()
        .filter(|(_, _, h)| held_out(&corpus.hosts[*h]))
        .map(|(_, t, _)| t.trim_start_matches(|c: char| c.is_ascii_digit() || c == '.' || c == ' ').trim().to_string())
        .filter(|t| t.split_whitespace().count() >= 2 && t.len() <= 200)
        .filter(|t| seen.insert(t.clone()))
        .collect();
    Rng(0x5155_4553).shuffle(&mut titles); // "QUES"
    titles.truncate(n);
    titles
}

fn held_out(host: &str) -> bool {
    blake3::hash(host.as_bytes()).as_bytes()[0] & 1 == 1
}

fn peers(n: usize) -> Vec<PeerId> {
    (0..n).map(|_| PeerId::random()).collect()
}

struct Row {
    what: String,
    recall: f64,
    asked_mean: f64,
    asked_max: usize,
    storage: f64,
    storage_max: f64,
}

/// Moves k-means centroids so that each takes about an even share of `vectors`: the points are
/// assigned most confident first (the widest margin between their best and second cells),
/// each to its nearest cell with room (at most (1 + `slack`) × n / k), and each centroid moves
/// to the mean of its points; `rounds` times. Chunks are then placed by their nearest
/// centroid as before (the capacity exists only here): what this buys is centroids packed
/// where the text is dense, so that no cell of the network takes a large part of it.
fn balance(vectors: &[Vec<f32>], mut centroids: Vec<Vec<f32>>, slack: f32, rounds: usize) -> Vec<Vec<f32>> {
    let (n, k) = (vectors.len(), centroids.len());
    let cap = ((n as f32 / k as f32) * (1.0 + slack)).ceil() as usize;
    for _ in 0..rounds {
        let sims: Vec<Vec<f32>> = vectors.iter().map(|v| centroids.iter().map(|c| cosine(v, c)).collect()).collect();
        let prefs: Vec<Vec<usize>> = sims
            .iter()
            .map(|row| {
                let mut order: Vec<usize> = (0..k).collect();
                order.sort_by(|a, b| row[*b].total_cmp(&row[*a]));
                order
            })
            .collect();
        let margin = |i: usize| sims[i][prefs[i][0]] - prefs[i].get(1).map_or(0.0, |c| sims[i][*c]);
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by(|a, b| margin(*b).total_cmp(&margin(*a)));
        let mut load = vec![0usize; k];
        let mut sums = vec![vec![0f32; vectors[0].len()]; k];
        for i in order {
            let cell = prefs[i].iter().copied().find(|c| load[*c] < cap).unwrap_or(prefs[i][0]);
            load[cell] += 1;
            sums[cell].iter_mut().zip(&vectors[i]).for_each(|(s, x)| *s += x);
        }
        for (c, sum) in centroids.iter_mut().zip(sums) {
            let norm = sum.iter().map(|x| x * x).sum::<f32>().sqrt();
            if norm > 0.0 {
                *c = sum.iter().map(|x| x / norm).collect();
            }
        }
    }
    centroids
}

/// How unevenly `book` spreads `corpus` (each chunk to its nearest cell): the fullest cell's
/// chunks against the mean cell's.
fn cell_spread(book: &Codebook, corpus: &Corpus) -> f64 {
    let mut mass = vec![0usize; book.len()];
    for c in 0..corpus.len() {
        mass[book.nearest(corpus.vector(c), 1)[0].0 as usize] += 1;
    }
    *mass.iter().max().unwrap_or(&0) as f64 / (corpus.len() as f64 / book.len() as f64)
}

fn print_rows(title: &str, rows: &[Row]) {
    println!("\n{title}");
    println!(
        "| placement and routing | recall@10 | peers asked mean / max | postings held per node, × the mean node's own chunks (mean / max) |"
    );
    println!("|---|---|---|---|");
    for r in rows {
        println!(
            "| {} | {:.3} | {:.1} / {} | {:.2} / {:.2} |",
            r.what, r.recall, r.asked_mean, r.asked_max, r.storage, r.storage_max
        );
    }
}

fn main() -> anyhow::Result<()> {
    let a = args();
    let roots: Vec<PathBuf> = match std::env::var("WEFT_PLACEMENT_DOCS") {
        Ok(v) => v.split(':').map(PathBuf::from).collect(),
        Err(_) => DEFAULT_DOCS.iter().map(PathBuf::from).filter(|p| p.exists()).collect(),
    };
    let corpus = corpus(&roots, a.chunks)?;
    println!(
        "corpus: {} chunks of {} documents on {} hosts ({} dims)",
        corpus.len(),
        corpus.docs.len(),
        corpus.hosts.len(),
        corpus.dims
    );
    if let Some(path) = &a.write_codebook {
        return write_codebook(&corpus, &a, path);
    }
    if let Some(path) = &a.write_ladder {
        return write_ladder(&corpus, &a, path);
    }
    let mut embedder = Embedder::open(&weft_index::testing::embed_config(), 2)?;
    if let Some(sizes) = a.climb {
        return climb::climb(&corpus, &a, sizes, &mut embedder);
    }
    if a.churn_hours > 0.0 {
        return churn::churn(&corpus, &a, &mut embedder);
    }
    if let Some(depth) = a.ladder {
        return ladder::ladder(&corpus, &a, depth, &mut embedder);
    }
    if !a.grow.is_empty() {
        return grow(&corpus, &a, &mut embedder);
    }
    compare::compare(&corpus, &a, &mut embedder)
}

/// The shipped codebook: every host's chunks may be in the sample (it is public text).
fn write_codebook(corpus: &Corpus, a: &Args, path: &Path) -> anyhow::Result<()> {
    let mut idx: Vec<usize> = (0..corpus.len()).collect();
    Rng(0x434f_4445).shuffle(&mut idx); // "CODE"
    idx.truncate(TRAIN_SAMPLE);
    let sample: Vec<Vec<f32>> = idx.into_iter().map(|c| corpus.vector(c).to_vec()).collect();
    let started = Instant::now();
    let book = Codebook::new(&kmeans(&sample, a.cells[0]).centroids)?;
    std::fs::write(path, book.encode())?;
    println!(
        "codebook of {} cells trained on {} chunks in {:.0} s: {} (id {})",
        book.len(),
        sample.len(),
        started.elapsed().as_secs_f64(),
        path.display(),
        book.id()
    );
    Ok(())
}

/// The ladder below the shipped codebook. Like the shipped codebook, every host's chunks may be
/// in the sample: all of them.
fn write_ladder(corpus: &Corpus, a: &Args, path: &Path) -> anyhow::Result<()> {
    let mut idx: Vec<usize> = (0..corpus.len()).collect();
    Rng(0x434f_4445).shuffle(&mut idx); // "CODE"
    let sample: Vec<Vec<f32>> = idx.into_iter().map(|c| corpus.vector(c).to_vec()).collect();
    let started = Instant::now();
    let depth = a.ladder.unwrap_or(4);
    let ladder = ladder::split(weft_p2p::placement::shipped().clone(), &sample, depth)?;
    std::fs::write(path, ladder.encode_below())?;
    println!(
        "a ladder of {} levels below the shipped codebook ({} cells at the deepest), split over {} chunks in {:.0} s: {}",
        depth,
        ladder.level(depth).len(),
        sample.len(),
        started.elapsed().as_secs_f64(),
        path.display()
    );
    Ok(())
}

/// Training chunks a codebook's cell gets (the fixed-size runs train 256 cells on 20,000).
const SAMPLE_PER_CELL: usize = 80;

/// How postings are placed in a `--grow` run: each cell owned by `replicas` members, each
/// chunk posted to `per_chunk` cells: its best ones, or (`spread`) its best one and then, one
/// at a time, the cell that is near the chunk but off the directions it already has (see
/// [`spread`]). Storage is `replicas × per_chunk` copies of each chunk either way.
#[derive(Clone, Copy, Debug)]
struct Design {
    replicas: usize,
    per_chunk: usize,
    spread: bool,
}

impl std::fmt::Display for Design {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let how = if self.spread { "spread" } else { "best" };
        write!(f, "r = {}, {} {how} cells", self.replicas, self.per_chunk)
    }
}

/// `3x3,1x9s`: replicas × cells a chunk, `s` for spread cells.
fn designs(s: &str) -> Vec<Design> {
    s.split(',')
        .map(|d| {
            let d = d.trim();
            let spread = d.ends_with('s');
            let (r, k) = d.trim_end_matches('s').split_once('x').expect("a design is RxK, e.g. 3x3");
            Design { replicas: r.parse().expect("a number"), per_chunk: k.parse().expect("a number"), spread }
        })
        .collect()
}

/// `--grow`: cells that grow with the network, judged the way the network grows. At each share
/// of the hosts the network has `chunks / per_member` members (each bringing the same content
/// as at every other size) and, for each design, a codebook of `held × members / replicas`
/// cells, so that an owner holds `held` cells at every size and a cell holds the same number of
/// chunks. If recall@10 holds as the share grows, it holds at sizes this corpus cannot reach,
/// as long as cells keep growing with the members. Codebooks are trained on the other half of
/// the hosts, `SAMPLE_PER_CELL` chunks a cell. Each budget of `--budget` is judged on the same
/// network.
fn grow(corpus: &Corpus, a: &Args, embedder: &mut Embedder) -> anyhow::Result<()> {
    println!("\nCells growing with the network: {} chunks a member", a.per_member);
    println!(
        "| share of hosts | chunks | members | design | cells | an owner holds | chunks a cell | peers at most | recall@10 | peers asked | postings × own, mean / max |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    for &share in &a.grow {
        let started = Instant::now();
        let sub = subset(corpus, share);
        let g = Grown::new(&sub, a, embedder)?;
        let (n, network) = (g.members.len(), g.network(&sub));
        let mut train: Vec<usize> =
            (0..sub.len()).filter(|c| !held_out(&sub.hosts[sub.docs[sub.chunk_doc[*c] as usize].2])).collect();
        Rng(0x434f_4445).shuffle(&mut train); // "CODE"
        for &h in &a.held {
            for d in &a.designs {
                let cells = ((h * n as f64 / d.replicas as f64).round() as usize).max(1);
                let sample: Vec<Vec<f32>> =
                    train.iter().take(SAMPLE_PER_CELL * cells).map(|c| sub.vector(*c).to_vec()).collect();
                let book = Codebook::new(&kmeans(&sample, cells).centroids)?;
                let chunk_cells = design_cells(&sub, &book, *d);
                let owners: Vec<Vec<PeerId>> =
                    (0..book.len() as u32).map(|c| cell_owners(&g.ring, book.id(), c, d.replicas)).collect();
                let held = place(&sub, &g.node_of, &owners, &chunk_cells, d.per_chunk, d.per_chunk, 0.0);
                let (mean, most) = storage(&held, sub.len());
                for &budget in &a.budgets {
                    let (recall, asked, _) = network.ask_by_cell(&book, &owners, &held, budget);
                    println!(
                        "| {share} | {} | {n} | {d} | {} | {:.2} | {:.0} | {budget} | {recall:.3} | {asked:.1} | {mean:.1} / {most:.1} |",
                        sub.len(),
                        book.len(),
                        (book.len() * d.replicas) as f64 / n as f64,
                        (sub.len() * d.per_chunk) as f64 / book.len() as f64,
                    );
                }
            }
        }
        eprintln!("  share {share}: {} questions, {:.0} s", g.qvecs.len(), started.elapsed().as_secs_f64());
    }
    Ok(())
}

/// Each chunk's cells under `design`: its best `per_chunk`, or its first `per_chunk` spread
/// cells as the node chooses them ([`spread`]); on two threads.
fn design_cells(corpus: &Corpus, book: &Codebook, design: Design) -> Vec<Vec<(u32, f32)>> {
    if !design.spread {
        return nearest_cells(corpus, book, design.per_chunk);
    }
    let mid = corpus.len() / 2;
    let k = design.per_chunk;
    std::thread::scope(|s| {
        let a = s.spawn(|| (0..mid).map(|c| spread(book, corpus.vector(c), k)).collect::<Vec<_>>());
        let b = s.spawn(|| (mid..corpus.len()).map(|c| spread(book, corpus.vector(c), k)).collect::<Vec<_>>());
        [a.join().expect("a thread"), b.join().expect("a thread")].concat()
    })
}

/// Each chunk's `n` best cells, on two threads.
fn nearest_cells(corpus: &Corpus, book: &Codebook, n: usize) -> Vec<Vec<(u32, f32)>> {
    let mid = corpus.len() / 2;
    std::thread::scope(|s| {
        let a = s.spawn(|| (0..mid).map(|c| book.nearest(corpus.vector(c), n)).collect::<Vec<_>>());
        let b = s.spawn(|| (mid..corpus.len()).map(|c| book.nearest(corpus.vector(c), n)).collect::<Vec<_>>());
        [a.join().expect("a thread"), b.join().expect("a thread")].concat()
    })
}

/// The questions' vectors.
fn embed_all(embedder: &mut Embedder, qs: &[String]) -> anyhow::Result<Vec<Vec<f32>>> {
    Ok(qs
        .chunks(32)
        .map(|b| embedder.embed(&b.iter().map(String::as_str).collect::<Vec<_>>()))
        .collect::<Result<Vec<_>, _>>()?
        .concat())
}

/// Each question's exact top 10 documents over the whole corpus.
fn exact(corpus: &Corpus, qvecs: &[Vec<f32>]) -> Vec<Vec<u32>> {
    qvecs.iter().map(|q| top_docs(corpus, q, 0..corpus.len(), 10).into_iter().map(|(_, d)| d).collect()).collect()
}

/// Where each chunk's postings are held: the owners of its best `always` cells, and of up to
/// `most` when within `margin` of the best. Per node, the chunks it holds.
fn place(
    corpus: &Corpus,
    node_of: &HashMap<PeerId, usize>,
    owners: &[Vec<PeerId>],
    chunk_cells: &[Vec<(u32, f32)>],
    always: usize,
    most: usize,
    margin: f32,
) -> Vec<Vec<usize>> {
    let mut held: Vec<Vec<usize>> = vec![Vec::new(); node_of.len()];
    for (c, best) in chunk_cells.iter().enumerate().take(corpus.len()) {
        let mut nodes: Vec<usize> = best
            .iter()
            .enumerate()
            .take_while(|(i, (_, sim))| *i < always || (*i < most && best[0].1 - sim <= margin))
            .flat_map(|(_, (cell, _))| owners[*cell as usize].iter().map(|m| node_of[m]))
            .collect();
        nodes.sort_unstable();
        nodes.dedup();
        for node in nodes {
            held[node].push(c);
        }
    }
    held
}

/// Postings held per node, in units of the mean node's own index (corpus / N): mean and most.
fn storage(held: &[Vec<usize>], corpus_len: usize) -> (f64, f64) {
    let n = held.len().max(1) as f64;
    let mean_own = corpus_len as f64 / n;
    (
        held.iter().map(Vec::len).sum::<usize>() as f64 / n / mean_own,
        held.iter().map(Vec::len).max().unwrap_or(0) as f64 / mean_own,
    )
}

/// A network grown over a share of the corpus, a member for every `--per-member` chunks: the
/// questions (titles of held-out hosts) and their exact answers, the members on one ring, and
/// who asks each question.
struct Grown {
    qvecs: Vec<Vec<f32>>,
    truth: Vec<Vec<u32>>,
    members: Vec<PeerId>,
    node_of: HashMap<PeerId, usize>,
    ring: Ring,
    /// Per member, the chunks it crawled: those of the hosts it owns.
    own: Vec<Vec<usize>>,
    askers: Vec<usize>,
}

impl Grown {
    fn new(sub: &Corpus, a: &Args, embedder: &mut Embedder) -> anyhow::Result<Grown> {
        let n = (sub.len() / a.per_member.max(1)).max(2);
        let qs = questions(sub, a.queries, &held_out);
        let qvecs = embed_all(embedder, &qs)?;
        let truth = exact(sub, &qvecs);
        let members = peers(n);
        let ring = Ring::new(members.clone(), DEFAULT_VNODES);
        let askers = (0..qs.len()).map(|i| (i * 7919) % n).collect();
        let node_of: HashMap<PeerId, usize> = members.iter().enumerate().map(|(i, m)| (*m, i)).collect();
        let mut own: Vec<Vec<usize>> = vec![Vec::new(); n];
        for c in 0..sub.len() {
            let host = &sub.hosts[sub.docs[sub.chunk_doc[c] as usize].2];
            own[node_of[ring.owner(host).expect("members")]].push(c);
        }
        Ok(Grown { qvecs, truth, members, node_of, ring, own, askers })
    }

    /// The network as `corpus`'s questions find it.
    fn network<'a>(&'a self, corpus: &'a Corpus) -> Network<'a> {
        Network {
            corpus,
            qvecs: &self.qvecs,
            truth: &self.truth,
            members: &self.members,
            node_of: &self.node_of,
            own: &self.own,
            askers: &self.askers,
        }
    }
}

/// A network as the questions find it: its chunks, the questions and their exact answers, the
/// members (each crawled the hosts it owns on one ring: `own`) and who asks each question.
struct Network<'a> {
    corpus: &'a Corpus,
    qvecs: &'a [Vec<f32>],
    truth: &'a [Vec<u32>],
    members: &'a [PeerId],
    node_of: &'a HashMap<PeerId, usize>,
    own: &'a [Vec<usize>],
    askers: &'a [usize],
}

impl Network<'_> {
    /// Every question asked by cell, as a node plans it: the owners of its best cells of `book`
    /// until `budget` peers; each answers from the postings it holds (`held`), the asker from
    /// its own index and its postings. Mean recall@10, mean and most peers asked.
    fn ask_by_cell(
        &self,
        book: &Codebook,
        owners: &[Vec<PeerId>],
        held: &[Vec<usize>],
        budget: usize,
    ) -> (f64, f64, usize) {
        judge(self.qvecs.len(), |qi| {
            let (q, asker) = (&self.qvecs[qi], self.askers[qi]);
            let ranked = book.nearest(q, 64);
            let cells = ranked.iter().map(|(c, _)| (*c, owners[*c as usize].as_slice()));
            let chosen: Vec<usize> =
                plan(cells, &self.members[asker], budget, |_| true).iter().map(|(p, _)| self.node_of[p]).collect();
            let mine = self.own[asker].iter().chain(&held[asker]).copied();
            let mut lists = vec![top_docs(self.corpus, q, mine, 10)];
            lists.extend(chosen.iter().map(|p| top_docs(self.corpus, q, held[*p].iter().copied(), 10)));
            (recall(&merge(lists, 10), &self.truth[qi]), chosen.len())
        })
    }
}

/// How much of a member's content is close to `query` by its routing summary, as the network
/// ranked peers before questions were routed by cells: a soft maximum over its centroids, each
/// weighted by the chunks it stands for, `1 + τ·ln Σ wᵢ·exp((simᵢ − 1)/τ)` with τ = 0.02 (the
/// centroids as computed here, not rounded to f16 as they were gossiped). `None` for a member
/// with nothing indexed.
fn summary_score(centroids: &[Vec<f32>], weights: &[u32], query: &[f32]) -> Option<f32> {
    const SOFTNESS: f64 = 0.02;
    let sum: f64 = centroids
        .iter()
        .zip(weights)
        .filter(|(c, w)| c.len() == query.len() && **w > 0)
        .map(|(c, w)| f64::from(*w) * ((f64::from(weft_vecmath::dot(c, query)) - 1.0) / SOFTNESS).exp())
        .sum();
    (sum > 0.0).then(|| (1.0 + SOFTNESS * sum.ln()) as f32)
}
