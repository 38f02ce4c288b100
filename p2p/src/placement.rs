//! Semantic placement: a partition of the embedding space that every node computes alike, so
//! that what is indexed can be placed by its meaning and a question can go to the few peers
//! that hold its neighbourhood, whatever the network's size.
//!
//! A [`Codebook`] is a list of unit vectors, the *cells*; a vector belongs to the cells it is
//! most similar to. Each cell has a position on the members' ring ([`cell_point`], blake3 of
//! the codebook's id and the cell's number), and its owners are the first `r` distinct members
//! clockwise from it ([`Ring::owners_of_point`]). A codebook is identified by the blake3 of its
//! encoding, so nodes with different codebooks never mistake each other's cells.
//!
//! A question ranks the cells by similarity and [`plan`]s whom to ask: the best cells first,
//! each covered by an owner already chosen when it has one (a peer answers from everything it
//! holds, not from one cell), else by its first owner that is up, until the budget of peers is
//! spent. Pure: the event loop does the I/O.
//!
//! Measured in `simnet/examples/placement/main.rs` (Debian's manuals, real model, simulated members).
//!
//! The network's codebook ships inside the binary ([`shipped`]): 256 cells trained by k-means
//! (a fixed seed) on 20,000 chunks of Debian's manuals embedded by all-MiniLM-L6-v2, written
//! by `placement --write-codebook`. Every node decodes the same bytes, so every node puts a
//! vector in the same cells. Why 256 and not more: with a question allowed 8 peers, 256 cells
//! (each chunk posted to its best two) reached 0.982 of the exact top 10 at 100 members and
//! 0.965 at 1,000 over 100,838 chunks, 1,024 cells 0.958 at 100 and 4,096 cells 0.930 at
//! 57,500 chunks: finer cells scatter a question's neighbours over more owners than the
//! budget reaches. The cost is balance: at 1,000 members a few owners hold up to 66× an
//! average node's own chunks. Where an asked peer holds about one cell (1,000 members),
//! posting each chunk to three cells instead of two buys back what the small cells lose, at
//! 1.5× the storage — so a large network does ([`cells_per_chunk`]; the figures are in the
//! book's benchmarks).

pub mod ladder;

use crate::ring::Ring;
use half::f16;
pub use ladder::Ladder;
use libp2p::PeerId;

/// The largest codebook accepted.
pub const MAX_CELLS: usize = 65_536;
/// Largest vector dimension accepted.
pub const MAX_DIMS: usize = 4096;
const MAGIC: &[u8; 8] = b"WEFTCB01";
/// The codebook this release ships (see the module doc).
const SHIPPED: &[u8] = include_bytes!("../codebook/cells-256.bin");

/// The levels this release ships below [`SHIPPED`] (see [`ladder`]).
const SHIPPED_LADDER: &[u8] = include_bytes!("../codebook/ladder-256.bin");

/// The network's codebook: the one every node of this release uses.
pub fn shipped() -> &'static Codebook {
    static BOOK: std::sync::OnceLock<Codebook> = std::sync::OnceLock::new();
    BOOK.get_or_init(|| Codebook::decode(SHIPPED).expect("the shipped codebook decodes (a unit test holds it)"))
}

/// The network's ladder of codebooks, [`shipped`] at its first level: the cells every node of
/// this release grows into as the network grows (see [`ladder`]).
pub fn shipped_ladder() -> &'static Ladder {
    static LADDER: std::sync::OnceLock<Ladder> = std::sync::OnceLock::new();
    LADDER.get_or_init(|| {
        Ladder::decode(shipped().clone(), SHIPPED_LADDER).expect("the shipped ladder decodes (a unit test holds it)")
    })
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum CodebookError {
    #[error("not a codebook (bad magic)")]
    Magic,
    #[error("codebook shape: {0}")]
    Shape(String),
}

/// The network's cells: unit vectors, stored as f16 (what every node hashes and compares).
#[derive(Debug, Clone, PartialEq)]
pub struct Codebook {
    dims: usize,
    /// Cells × dims, each cell a unit vector (as decoded from f16).
    cells: Vec<f32>,
    id: String,
}

impl Codebook {
    /// A codebook of `cells` (each normalized, then rounded to f16: the encoding is the truth,
    /// so the vectors a node uses are exactly the ones every other node decodes).
    pub fn new(cells: &[Vec<f32>]) -> Result<Codebook, CodebookError> {
        let dims = cells.first().map_or(0, Vec::len);
        if cells.is_empty() || cells.len() > MAX_CELLS || dims == 0 || dims > MAX_DIMS {
            return Err(CodebookError::Shape(format!("{} cells of {dims} dimensions", cells.len())));
        }
        let mut bytes = Vec::with_capacity(16 + cells.len() * dims * 2);
        bytes.extend_from_slice(MAGIC);
        bytes.extend_from_slice(&(dims as u32).to_le_bytes());
        bytes.extend_from_slice(&(cells.len() as u32).to_le_bytes());
        for c in cells {
            if c.len() != dims {
                return Err(CodebookError::Shape(format!("a cell of {} dimensions among {dims}", c.len())));
            }
            let norm = weft_vecmath::norm(c);
            if !norm.is_finite() || norm == 0.0 {
                return Err(CodebookError::Shape("a cell of norm 0 or not finite".into()));
            }
            for x in c {
                bytes.extend_from_slice(&f16::from_f32(x / norm).to_le_bytes());
            }
        }
        Codebook::decode(&bytes)
    }

    /// Reads an encoded codebook ([`Codebook::encode`]).
    pub fn decode(bytes: &[u8]) -> Result<Codebook, CodebookError> {
        if bytes.len() < 16 || &bytes[..8] != MAGIC {
            return Err(CodebookError::Magic);
        }
        let dims = u32::from_le_bytes(bytes[8..12].try_into().expect("4 bytes")) as usize;
        let n = u32::from_le_bytes(bytes[12..16].try_into().expect("4 bytes")) as usize;
        if n == 0 || n > MAX_CELLS || dims == 0 || dims > MAX_DIMS || bytes.len() != 16 + n * dims * 2 {
            return Err(CodebookError::Shape(format!("{n} cells of {dims} dimensions in {} bytes", bytes.len())));
        }
        let cells: Vec<f32> = bytes[16..].chunks_exact(2).map(|b| f16::from_le_bytes([b[0], b[1]]).to_f32()).collect();
        if cells.iter().any(|x| !x.is_finite()) {
            return Err(CodebookError::Shape("a component that is not finite".into()));
        }
        let id = blake3::hash(bytes).to_hex()[..16].to_string();
        Ok(Codebook { dims, cells, id })
    }

    /// The encoding: magic, dims and cell count (u32 LE), then the cells as f16 LE.
    pub fn encode(&self) -> Vec<u8> {
        let mut bytes = Vec::with_capacity(16 + self.cells.len() * 2);
        bytes.extend_from_slice(MAGIC);
        bytes.extend_from_slice(&(self.dims as u32).to_le_bytes());
        bytes.extend_from_slice(&(self.len() as u32).to_le_bytes());
        for x in &self.cells {
            bytes.extend_from_slice(&f16::from_f32(*x).to_le_bytes());
        }
        bytes
    }

    /// 16 hex digits of blake3 of the encoding: the same codebook, the same id, on every node.
    pub fn id(&self) -> &str {
        &self.id
    }

    pub fn dims(&self) -> usize {
        self.dims
    }

    pub fn len(&self) -> usize {
        self.cells.len() / self.dims
    }

    pub fn is_empty(&self) -> bool {
        self.cells.is_empty()
    }

    pub fn cell(&self, i: u32) -> &[f32] {
        let i = i as usize;
        &self.cells[i * self.dims..(i + 1) * self.dims]
    }

    /// The `n` cells most similar to `v`, best first: (cell, cosine). Empty for a vector of
    /// other dimensions.
    pub fn nearest(&self, v: &[f32], n: usize) -> Vec<(u32, f32)> {
        if v.len() != self.dims {
            return Vec::new();
        }
        let mut scored: Vec<(u32, f32)> =
            (0..self.len() as u32).map(|c| (c, weft_vecmath::dot(self.cell(c), v))).collect();
        let n = n.min(scored.len());
        if n == 0 {
            return Vec::new();
        }
        scored.select_nth_unstable_by(n - 1, |a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        scored.truncate(n);
        scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        scored
    }
}

/// Where cell `cell` of codebook `codebook_id` sits on the members' ring.
pub fn cell_point(codebook_id: &str, cell: u32) -> u64 {
    crate::ring::host_point(&format!("weft/cell/{codebook_id}/{cell}"))
}

/// The owners of `cell`: the first `replicas` distinct members clockwise from its point.
pub fn cell_owners(ring: &Ring, codebook_id: &str, cell: u32, replicas: usize) -> Vec<PeerId> {
    ring.owners_of_point(cell_point(codebook_id, cell), replicas)
}

/// A chunk may be posted to its best cells; this many at most a level (its publisher posts to
/// two or three by the network's size: [`cells_per_chunk`]).
pub const MAX_CELLS_PER_CHUNK: usize = 3;

/// The cells a chunk is posted to while its owners hold this few cells each, on average, or
/// more: two. Below it, three (see [`cells_per_chunk`]).
pub const TWO_CELLS_DOWN_TO: f64 = 2.0;

/// How many cells each chunk is posted to ([`cells_of`]) in a network of `members` members
/// and `cells` cells of `replicas` owners: two while an owner holds at least
/// [`TWO_CELLS_DOWN_TO`] cells on average (`cells × replicas / members`), else three.
///
/// Why it depends on the size: a question asks at most 8 peers and each answers from every
/// cell it holds. In a small network an owner holds many cells, so 8 peers reach most of a
/// question's neighbourhood; in a large one an owner holds about one, and a third cell buys
/// the recall two lose, at half as much storage again, paid only where it buys recall (the
/// figures: the book's search measurements, `simnet/examples/placement`). A publisher decides
/// alone, by its own ring; a receiver accepts any of a chunk's best three cells or its three
/// spread ones ([`MAX_CELLS_PER_CHUNK`]).
pub fn cells_per_chunk(members: usize, cells: usize, replicas: usize) -> usize {
    let held = (cells * replicas.max(1)) as f64 / members.max(1) as f64;
    if held >= TWO_CELLS_DOWN_TO {
        2
    } else {
        3
    }
}

/// The `k` cells a chunk with vector `v` is posted to: its best two in a small network, its
/// three [`spread`] cells in a large one (`k` ≥ 3, see [`cells_per_chunk`]).
///
/// Why spread only where a chunk goes to three cells: there a question's 8 peers reach a small
/// part of the cells, and spread cells catch the questions that fall between a chunk's best
/// ones (+0.015 to +0.04 recall@10 at the same storage from 354 to 6,300 members, and as much
/// under a day of churn: `placement --designs` and `--churn`, benchmarks). In a small network
/// the asker and its peers hold most cells either way (0.992 best, 0.994 spread at 50 members),
/// and where a question asks a single peer, a page worded far from it is found through a cell
/// the question ranks well: a chunk's second-best cell is one more often than a spread one
/// (benchmarks: why spread cells lost a page in the five-node search test).
pub fn cells_of(book: &Codebook, v: &[f32], k: usize) -> Vec<(u32, f32)> {
    if k >= SPREAD_AT {
        spread(book, v, k)
    } else {
        book.nearest(v, k)
    }
}

/// Chunks going to this many cells or more go to spread ones ([`cells_of`]).
pub const SPREAD_AT: usize = 3;

/// The cells [`spread`] chooses among: a vector's best these many.
pub const SPREAD_FROM: usize = 24;

/// The `k` cells a vector is posted to, chosen spread out rather than best (SOAR's spilled
/// assignment: Sun et al., "SOAR: Improved Indexing for Approximate Nearest Neighbor Search",
/// NeurIPS 2023): its best cell, then each next the one among its best [`SPREAD_FROM`] that
/// minimizes `‖v − c‖² + Σⱼ ⟨rⱼ, v − c⟩² / ‖rⱼ‖²` over the residuals `rⱼ = v − cⱼ` of the
/// cells already chosen. A question close to `v` but off in the direction of a residual misses
/// that residual's cell; the cell whose residual is orthogonal to it is the likeliest to catch
/// it. Measured (`placement --designs`, 50,043 chunks of Debian's manuals, 8 peers asked, nine
/// copies a chunk either way): recall@10 0.979 against 0.964 for the best three cells at 354
/// members, 0.968 against 0.953 at 1,000. A prefix of a longer choice is the shorter one. Pure
/// and deterministic: a receiver checks a posting's cell by choosing again. Empty for a vector
/// of other dimensions.
pub fn spread(book: &Codebook, v: &[f32], k: usize) -> Vec<(u32, f32)> {
    let best = book.nearest(v, SPREAD_FROM.max(k));
    let mut chosen: Vec<(u32, f32)> = best.iter().take(1).copied().collect();
    while chosen.len() < k.min(best.len()) {
        let next = best
            .iter()
            .filter(|(c, _)| !chosen.iter().any(|(d, _)| d == c))
            .map(|&(c, sim)| {
                let mut loss = 2.0 - 2.0 * sim;
                for &(j, sim_j) in &chosen {
                    // ⟨v − cⱼ, v − c⟩ for unit v, c and cⱼ.
                    let along = 1.0 - sim - sim_j + weft_vecmath::dot(book.cell(j), book.cell(c));
                    loss += along * along / (2.0 - 2.0 * sim_j).max(1e-6);
                }
                ((c, sim), loss)
            })
            // Ties go to the better cell (`best` is best first), as on every node.
            .reduce(|a, b| if b.1 < a.1 { b } else { a })
            .map(|(c, _)| c);
        match next {
            Some(c) => chosen.push(c),
            None => break,
        }
    }
    chosen
}

/// The first of `cells` that no owner has answered for yet, if any: a peer asked for these
/// cells need not be waited for once this is `None` (its stand-ins answered for all of them).
pub fn unanswered(cells: &[u32], answered: &std::collections::HashSet<u32>) -> Option<u32> {
    cells.iter().copied().find(|c| !answered.contains(c))
}

/// Whom a question asks: for each of `ranked` (cells, best first, with their owners), an owner
/// already chosen covers it; otherwise, while fewer than `budget` peers are chosen, the owner
/// for which `up` holds that covers most of the cells not yet covered, each weighted by its rank
/// (1/(1 + rank): the best cells count most; ties go to the earlier owner). `me` (the asker,
/// which searches its own store anyway) covers the cells it owns. Returns the peers in the
/// order chosen and, for each, the cells it was chosen for.
///
/// Choosing the owner that covers most, rather than each cell's first owner, covers more of a
/// question's best cells with the same peers (replayed over live runs with
/// `simnet/examples/cell_replay.rs`; the figures are in the book's search measurements).
pub fn plan<'a>(
    ranked: impl IntoIterator<Item = (u32, &'a [PeerId])>,
    me: &PeerId,
    budget: usize,
    up: impl Fn(&PeerId) -> bool,
) -> Vec<(PeerId, Vec<u32>)> {
    let ranked: Vec<(u32, &[PeerId])> = ranked.into_iter().collect();
    let mut chosen: Vec<(PeerId, Vec<u32>)> = Vec::new();
    let covered = |chosen: &[(PeerId, Vec<u32>)], owners: &[PeerId]| {
        owners.contains(me) || chosen.iter().any(|(p, _)| owners.contains(p))
    };
    for (i, (cell, owners)) in ranked.iter().enumerate() {
        if owners.contains(me) {
            continue;
        }
        if let Some(c) = chosen.iter_mut().find(|(p, _)| owners.contains(p)) {
            c.1.push(*cell);
            continue;
        }
        if chosen.len() == budget {
            continue;
        }
        let gain = |o: &PeerId| -> f64 {
            ranked[i..]
                .iter()
                .enumerate()
                .filter(|(_, (_, os))| os.contains(o) && !covered(&chosen, os))
                .map(|(j, _)| 1.0 / (1.0 + (i + j) as f64))
                .sum()
        };
        let mut best: Option<(PeerId, f64)> = None;
        for o in owners.iter().filter(|o| up(o)) {
            let g = gain(o);
            if best.is_none_or(|(_, b)| g > b) {
                best = Some((*o, g));
            }
        }
        if let Some((owner, _)) = best {
            chosen.push((owner, vec![*cell]));
        }
    }
    chosen
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(v: &[f32]) -> Vec<f32> {
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.iter().map(|x| x / n).collect()
    }

    #[test]
    fn a_codebook_round_trips_and_its_id_is_its_bytes() {
        let book = Codebook::new(&[unit(&[1.0, 0.0, 0.0]), unit(&[0.0, 1.0, 1.0]), unit(&[0.0, 0.0, 2.0])]).unwrap();
        assert_eq!(book.len(), 3);
        assert_eq!(book.dims(), 3);
        let again = Codebook::decode(&book.encode()).unwrap();
        assert_eq!(again, book);
        assert_eq!(again.id(), book.id());
        let other = Codebook::new(&[unit(&[1.0, 0.0, 0.0]), unit(&[0.0, 1.0, 0.0])]).unwrap();
        assert_ne!(other.id(), book.id());
        // Nearest first; another dimension finds nothing.
        let near = book.nearest(&unit(&[0.1, 0.2, 1.0]), 2);
        assert_eq!(near.iter().map(|c| c.0).collect::<Vec<_>>(), [2, 1]);
        assert!(book.nearest(&[1.0, 0.0], 2).is_empty());
        assert_eq!(book.nearest(&unit(&[1.0, 0.0, 0.0]), 10).len(), 3);
    }

    #[test]
    fn the_shipped_codebook_is_the_one_measured() {
        let book = shipped();
        assert_eq!((book.len(), book.dims()), (256, 384));
        // The id is the blake3 of the bytes: a node with other bytes has other cells.
        assert_eq!(book.id(), "02706a8854f8a690");
        assert_eq!(Codebook::decode(&book.encode()).unwrap().id(), book.id());
    }

    #[test]
    fn bad_codebooks_are_refused() {
        assert_eq!(Codebook::decode(b"nonsense bytes here"), Err(CodebookError::Magic));
        let mut bytes = Codebook::new(&[unit(&[1.0, 0.0])]).unwrap().encode();
        bytes.pop();
        assert!(matches!(Codebook::decode(&bytes), Err(CodebookError::Shape(_))));
        assert!(Codebook::new(&[]).is_err());
        assert!(Codebook::new(&[vec![0.0, 0.0]]).is_err());
        assert!(Codebook::new(&[vec![1.0, 0.0], vec![1.0]]).is_err());
        let mut nan = Codebook::new(&[unit(&[1.0, 0.0])]).unwrap().encode();
        nan[16..18].copy_from_slice(&f16::NAN.to_le_bytes());
        assert!(Codebook::decode(&nan).is_err());
    }

    #[test]
    fn a_plan_reuses_chosen_owners_skips_the_down_and_keeps_the_budget() {
        let p: Vec<PeerId> = (0..6).map(|_| PeerId::random()).collect();
        let me = p[5];
        let owners = [
            vec![p[0], p[1]], // cell 0: p0 chosen
            vec![p[2], p[0]], // cell 1: covered by p0
            vec![p[5], p[3]], // cell 2: the asker holds it
            vec![p[3], p[4]], // cell 3: p3 is down, p4 chosen
            vec![p[1], p[2]], // cell 4: over the budget of 2
        ];
        let ranked = owners.iter().enumerate().map(|(c, o)| (c as u32, o.as_slice()));
        let plan = plan(ranked, &me, 2, |x| *x != p[3]);
        assert_eq!(plan, vec![(p[0], vec![0, 1]), (p[4], vec![3])]);
    }

    #[test]
    fn spread_cells_start_with_the_best_and_then_leave_its_direction() {
        // Cell 1 is the vector's second best but lies on the far side of the best cell (its
        // residual points the same way); cell 2, a little less similar, lies across.
        let v = unit(&[1.0, 0.0, 0.0]);
        let book = Codebook::new(&[
            unit(&[0.95, 0.3, 0.0]),
            unit(&[0.9, 0.45, 0.0]),
            unit(&[0.9, -0.1, 0.45]),
            unit(&[-1.0, 0.0, 0.0]),
        ])
        .unwrap();
        let best: Vec<u32> = book.nearest(&v, 3).iter().map(|c| c.0).collect();
        assert_eq!(best, [0, 1, 2]);
        let chosen: Vec<u32> = spread(&book, &v, 3).iter().map(|c| c.0).collect();
        assert_eq!(chosen, [0, 2, 1], "the best cell, then the one across from it");
        // A prefix of a longer choice is the shorter one, and no cell comes twice.
        for k in 1..=4 {
            let s: Vec<u32> = spread(&book, &v, k).iter().map(|c| c.0).collect();
            assert_eq!(s, [0, 2, 1, 3][..k]);
        }
        assert!(spread(&book, &[1.0, 0.0], 2).is_empty());
        // A small network posts to the best two, a large one to the three spread ones.
        assert_eq!(cells_of(&book, &v, 2), book.nearest(&v, 2));
        assert_eq!(cells_of(&book, &v, 3), spread(&book, &v, 3));
    }

    #[test]
    fn a_plan_takes_the_owner_that_covers_most_of_the_best_cells() {
        let p: Vec<PeerId> = (0..6).map(|_| PeerId::random()).collect();
        let me = p[5];
        let owners = [
            vec![p[0], p[1]], // cell 0: p1 owns cells 2 and 3 too, p0 nothing else
            vec![p[2], p[3]], // cell 1: p2 and p3 own nothing else: the first owner
            vec![p[4], p[1]], // cell 2: covered by p1
            vec![p[1], p[0]], // cell 3: covered by p1
        ];
        let ranked = owners.iter().enumerate().map(|(c, o)| (c as u32, o.as_slice()));
        let plan = plan(ranked, &me, 2, |_| true);
        assert_eq!(plan, vec![(p[1], vec![0, 2, 3]), (p[2], vec![1])]);
    }

    #[test]
    fn a_chunk_goes_to_a_third_cell_only_where_owners_hold_few_cells() {
        // 256 cells, 3 replicas: 768 owner places; two cells each down to 384 members.
        assert_eq!(cells_per_chunk(1, 256, 3), 2);
        assert_eq!(cells_per_chunk(50, 256, 3), 2);
        assert_eq!(cells_per_chunk(384, 256, 3), 2);
        assert_eq!(cells_per_chunk(385, 256, 3), 3);
        assert_eq!(cells_per_chunk(1000, 256, 3), 3);
        // Fewer replicas hold fewer cells each: the third cell comes sooner.
        assert_eq!(cells_per_chunk(300, 256, 1), 3);
        // Nonsense sizes do not divide by zero.
        assert_eq!(cells_per_chunk(0, 256, 0), 2);
    }

    #[test]
    fn every_node_puts_a_cell_on_the_same_owners() {
        let members: Vec<PeerId> = (0..20).map(|_| PeerId::random()).collect();
        let a = Ring::new(members.clone(), 150);
        let mut reversed = members.clone();
        reversed.reverse();
        let b = Ring::new(reversed, 150);
        for cell in 0..50 {
            let owners = cell_owners(&a, "abc", cell, 3);
            assert_eq!(owners.len(), 3);
            assert_eq!(owners, cell_owners(&b, "abc", cell, 3));
        }
        assert_ne!(cell_point("abc", 1), cell_point("abd", 1), "another codebook, other places");
    }

    #[test]
    fn a_peer_is_no_longer_needed_once_every_cell_it_was_asked_for_is_answered() {
        let mut answered = std::collections::HashSet::new();
        assert_eq!(unanswered(&[3, 7], &answered), Some(3));
        answered.insert(3);
        assert_eq!(unanswered(&[3, 7], &answered), Some(7), "one of its two cells is not enough");
        answered.insert(7);
        assert_eq!(unanswered(&[3, 7], &answered), None);
        assert_eq!(unanswered(&[], &answered), None);
    }
}
