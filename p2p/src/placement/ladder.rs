//! The codebook's ladder: cells that grow in number with the network.
//!
//! A fixed codebook stops spreading the network's postings once every cell has its owners: 256
//! cells × 3 owners make 768 owner places, and past 768 members the others hold nothing while
//! each owner takes a growing share of all postings. Nobody can retrain the codebook as the
//! network grows (every node must compute the same cells, and nobody coordinates them), so a
//! release ships a *ladder*: the [`shipped`](super::shipped) 256 cells at level 0 and, at each
//! level below, every cell of the level above split in two (2-means over the chunks it took),
//! cell `p`'s halves numbered `2p` and `2p + 1`. Split cells read as well as cells trained at
//! that size (`placement --ladder`: recall@10 0.914 against 0.916 at 10,008 members).
//!
//! A network takes the level whose owners hold closest to [`HELD`] cells each
//! ([`Ladder::asked_level`]): bigger cells let 8 peers reach more of a question's
//! neighbourhood, but below about one cell an owner, members hold nothing. Members count
//! their network alike to within a few (the rings agree), but not exactly, so a chunk is posted
//! at every level a node counting [`LEVEL_MARGIN`] more or fewer members would ask at
//! ([`Ladder::posted_levels`]): two levels near a step, one elsewhere, and whatever level an
//! asker takes, the postings are there.

use super::{Codebook, CodebookError, MAX_CELLS_PER_CHUNK};
use crate::ring::Ring;
use libp2p::PeerId;
use std::ops::RangeInclusive;

/// Cells an owner holds on average at the level a network asks at (as near as the ladder's
/// halvings allow). Measured with cells grown at 0.77, 1.5 and 3 cells an owner: the biggest
/// cells read best at every size (0.966 against 0.947 at 1,003 members, 8 peers asked).
pub const HELD: f64 = 0.77;

/// How far apart two members' counts of the network may be, as a share, and still find each
/// other's postings ([`Ladder::posted_levels`]). Members' rings differ by a few members at most
/// (0.02% of hosts a minute after a change at ten thousand members, simulated), so 5% is wide;
/// and around each step it sets the sizes where a chunk is posted at two levels, at twice the
/// storage: 14% of all sizes at 5%, 40% at 15%.
pub const LEVEL_MARGIN: f64 = 0.05;

/// The counts a member counting within [`LEVEL_MARGIN`] of `members` may have.
fn within_margin(members: usize) -> (usize, usize) {
    let fewer = (members as f64 / (1.0 + LEVEL_MARGIN)).floor() as usize;
    let more = (members as f64 * (1.0 + LEVEL_MARGIN)).ceil() as usize;
    (fewer, more)
}

/// The deepest ladder accepted.
pub const MAX_DEPTH: usize = 8;

const MAGIC: &[u8; 8] = b"WEFTLD01";

/// A level a ring change brings into the posted levels ([`Ladder::climbs`]): the postings
/// held at `from` are to be placed at `to` too, by their holders ([`Ladder::placer`]), since
/// their publishers may be away.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Climb {
    pub from: usize,
    pub to: usize,
    /// Cells a chunk was posted to at `from` (on the ring before) and goes to at `to`.
    pub from_cells: usize,
    pub to_cells: usize,
}

/// Codebooks of `base × 2^l` cells for `l` in `0..=depth`, cell `c` of level `l + 1` a half of
/// cell `c / 2` of level `l`.
#[derive(Debug, Clone, PartialEq)]
pub struct Ladder {
    levels: Vec<Codebook>,
    /// The cells an owner should hold at the level asked ([`HELD`] in the network).
    held: f64,
}

impl Ladder {
    /// A ladder of these levels: each twice as many cells as the one above, of the same
    /// dimensions, at most [`MAX_DEPTH`] below the first.
    pub fn new(levels: Vec<Codebook>) -> Result<Ladder, CodebookError> {
        let Some(base) = levels.first() else {
            return Err(CodebookError::Shape("a ladder of no levels".into()));
        };
        if levels.len() > MAX_DEPTH + 1 {
            return Err(CodebookError::Shape(format!("a ladder of {} levels", levels.len())));
        }
        for (l, book) in levels.iter().enumerate() {
            if book.dims() != base.dims() || book.len() != base.len() << l {
                return Err(CodebookError::Shape(format!(
                    "level {l} has {} cells of {} dimensions under {} of {}",
                    book.len(),
                    book.dims(),
                    base.len(),
                    base.dims()
                )));
            }
        }
        Ok(Ladder { levels, held: HELD })
    }

    /// Reads the levels below `base` ([`Ladder::encode_below`]).
    pub fn decode(base: Codebook, bytes: &[u8]) -> Result<Ladder, CodebookError> {
        if bytes.len() < 12 || &bytes[..8] != MAGIC {
            return Err(CodebookError::Magic);
        }
        let depth = u32::from_le_bytes(bytes[8..12].try_into().expect("4 bytes")) as usize;
        if depth > MAX_DEPTH {
            return Err(CodebookError::Shape(format!("a ladder {depth} levels deep")));
        }
        let mut levels = vec![base];
        let mut rest = &bytes[12..];
        for l in 1..=depth {
            let cells = levels[0].len() << l;
            let len = 16 + cells * levels[0].dims() * 2;
            if rest.len() < len {
                return Err(CodebookError::Shape(format!("level {l} cut short")));
            }
            levels.push(Codebook::decode(&rest[..len])?);
            rest = &rest[len..];
        }
        if !rest.is_empty() {
            return Err(CodebookError::Shape(format!("{} bytes after the last level", rest.len())));
        }
        Ladder::new(levels)
    }

    /// The levels below the first: magic, the depth (u32 LE), then each level's
    /// [`Codebook::encode`]. The first level is the codebook a release already ships.
    pub fn encode_below(&self) -> Vec<u8> {
        let mut bytes = MAGIC.to_vec();
        bytes.extend_from_slice(&(self.depth() as u32).to_le_bytes());
        for book in &self.levels[1..] {
            bytes.extend_from_slice(&book.encode());
        }
        bytes
    }

    /// The same ladder, asked at the level whose owners hold closest to `held` cells each
    /// rather than [`HELD`]: for the placement benchmark, which weighs the choice (bigger cells
    /// let 8 peers reach more; smaller ones spread the postings over more members).
    pub fn aiming_at(self, held: f64) -> Ladder {
        Ladder { held, ..self }
    }

    /// Levels below the first.
    pub fn depth(&self) -> usize {
        self.levels.len() - 1
    }

    /// The codebook of level `l` (the deepest for a larger `l`).
    pub fn level(&self, l: usize) -> &Codebook {
        &self.levels[l.min(self.depth())]
    }

    /// The level of the codebook with this id, if it is one of the ladder's.
    pub fn level_of(&self, codebook_id: &str) -> Option<usize> {
        self.levels.iter().position(|b| b.id() == codebook_id)
    }

    /// The cell of level `to` that cell `cell` of level `from` was split from (itself when
    /// `to ≥ from`).
    pub fn ancestor(cell: u32, from: usize, to: usize) -> u32 {
        cell >> from.saturating_sub(to).min(31)
    }

    /// The ladder's cells numbered across its levels: level `l`'s cells follow those of every
    /// level above, so that level 0's numbers are the shipped codebook's own (what postings
    /// and cell stores have always named) and a number says its level. This is a posting's
    /// `cell` on the wire and in a cell store.
    pub fn global(&self, level: usize, cell: u32) -> u32 {
        let base = self.levels[0].len() as u32;
        base * ((1u32 << level) - 1) + cell
    }

    /// The level and the cell within it of global cell `global`; `None` past the deepest level.
    pub fn locate(&self, global: u32) -> Option<(usize, u32)> {
        (0..self.levels.len()).find_map(|l| {
            let first = self.global(l, 0);
            let cell = global.checked_sub(first)?;
            ((cell as usize) < self.levels[l].len()).then_some((l, cell))
        })
    }

    /// The global cells of `levels` (the deepest level's for levels past it).
    pub fn cells_of_levels(&self, levels: RangeInclusive<usize>) -> std::ops::Range<u32> {
        let (first, last) = ((*levels.start()).min(self.depth()), (*levels.end()).min(self.depth()));
        self.global(first, 0)..self.global(last, 0) + self.levels[last].len() as u32
    }

    /// Where global cell `global` sits on the members' ring: its level's codebook's point for
    /// it ([`super::cell_point`]); `None` for a cell of no level.
    pub fn point(&self, global: u32) -> Option<u64> {
        let (l, cell) = self.locate(global)?;
        Some(super::cell_point(self.levels[l].id(), cell))
    }

    /// The owners of global cell `global`: the first `replicas` distinct members clockwise from
    /// its [`point`](Ladder::point). None for a cell of no level.
    pub fn owners(&self, ring: &Ring, global: u32, replicas: usize) -> Vec<PeerId> {
        self.point(global).map(|p| ring.owners_of_point(p, replicas)).unwrap_or_default()
    }

    /// The global cells a chunk with vector `v` is posted to at each of `levels`: `k` a level
    /// ([`super::cells_of`]).
    pub fn placed(&self, v: &[f32], levels: RangeInclusive<usize>, k: usize) -> Vec<u32> {
        let mut out = Vec::new();
        for l in levels.filter(|l| *l <= self.depth()) {
            out.extend(super::cells_of(&self.levels[l], v, k).into_iter().map(|(c, _)| self.global(l, c)));
        }
        out
    }

    /// Every global cell of `levels` a chunk with vector `v` may be posted to, whatever the
    /// network's size when it was: its best and its spread cells, [`MAX_CELLS_PER_CHUNK`]
    /// of each, at each level; sorted, once each.
    pub fn cells_near(&self, v: &[f32], levels: RangeInclusive<usize>) -> Vec<u32> {
        let mut out = Vec::new();
        for l in levels.filter(|l| *l <= self.depth()) {
            out.extend(self.placed(v, l..=l, MAX_CELLS_PER_CHUNK));
            out.extend(self.nearest(l, v, MAX_CELLS_PER_CHUNK).into_iter().map(|(c, _)| c));
        }
        out.sort_unstable();
        out.dedup();
        out
    }

    /// The global cells of level `level` most similar to `v`, best first (what a question at
    /// that level ranks): `n` of them, with their cosines.
    pub fn nearest(&self, level: usize, v: &[f32], n: usize) -> Vec<(u32, f32)> {
        let l = level.min(self.depth());
        self.levels[l].nearest(v, n).into_iter().map(|(c, sim)| (self.global(l, c), sim)).collect()
    }

    /// The levels a receiver takes postings at in a network of `members`: those any member
    /// counting within [`LEVEL_MARGIN`] of it would post at ([`Ladder::posted_levels`]).
    pub fn accepted_levels(&self, members: usize, replicas: usize) -> RangeInclusive<usize> {
        let (fewer, more) = within_margin(members);
        *self.posted_levels(fewer, replicas).start()..=*self.posted_levels(more, replicas).end()
    }

    /// The levels a change from `before` to `after` members brings into the posted levels,
    /// each to be placed from the nearest level posted before (see [`Climb`]).
    pub fn climbs(&self, before: usize, after: usize, replicas: usize) -> Vec<Climb> {
        let (was, now) = (self.posted_levels(before, replicas), self.posted_levels(after, replicas));
        let per_chunk =
            |members: usize, level: usize| super::cells_per_chunk(members, self.level(level).len(), replicas);
        now.filter(|l| !was.contains(l))
            .map(|to| {
                let from = if to > *was.end() { *was.end() } else { *was.start() };
                Climb { from, to, from_cells: per_chunk(before, from), to_cells: per_chunk(after, to) }
            })
            .collect()
    }

    /// The member that places a chunk with vector `v` at `climb.to` when the ring goes from
    /// `before` to `after`: of the chunk's cells at `climb.from` (as its publisher placed it),
    /// the first with a former owner still a member, and of that cell's former owners the first
    /// still a member — the rule a cell's hand-over follows. One member, whichever holder asks.
    pub fn placer(&self, climb: &Climb, v: &[f32], before: &Ring, after: &Ring, replicas: usize) -> Option<PeerId> {
        self.placed(v, climb.from..=climb.from, climb.from_cells)
            .into_iter()
            .find_map(|cell| self.owners(before, cell, replicas).into_iter().find(|o| after.contains(o)))
    }

    /// The level a network of `members`, each cell owned by `replicas`, asks its questions at:
    /// the one whose owners hold closest to [`HELD`] cells each, on a log scale (a tie goes to
    /// the bigger cells).
    pub fn asked_level(&self, members: usize, replicas: usize) -> usize {
        self.level_holding(members, replicas, self.held)
    }

    /// The level whose owners hold closest to `held` cells each, on a log scale, in a network
    /// of `members` with `replicas` owners a cell (a tie goes to the bigger cells).
    pub fn level_holding(&self, members: usize, replicas: usize, held: f64) -> usize {
        let distance = |l: usize| {
            let h = (self.levels[l].len() * replicas.max(1)) as f64 / members.max(1) as f64;
            (h / held).ln().abs()
        };
        (0..self.levels.len()).fold(0, |best, l| if distance(l) < distance(best) { l } else { best })
    }

    /// The levels a chunk is posted at in a network of `members`: every level a member counting
    /// up to [`LEVEL_MARGIN`] fewer or more members would ask at.
    pub fn posted_levels(&self, members: usize, replicas: usize) -> RangeInclusive<usize> {
        let (fewer, more) = within_margin(members);
        self.asked_level(fewer, replicas)..=self.asked_level(more, replicas)
    }
}

#[cfg(test)]
mod tests {
    use super::{Climb, Ladder, HELD};
    use crate::placement::{shipped, Codebook};

    fn unit(v: &[f32]) -> Vec<f32> {
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.iter().map(|x| x / n).collect()
    }

    /// A ladder of 4, 8 and 16 cells in two dimensions, each cell's halves on either side of it.
    fn small() -> Ladder {
        let at = |n: usize| -> Codebook {
            let cells: Vec<Vec<f32>> = (0..n)
                .map(|i| {
                    let a = (i as f32 + 0.5) / n as f32 * std::f32::consts::TAU;
                    unit(&[a.cos(), a.sin()])
                })
                .collect();
            Codebook::new(&cells).unwrap()
        };
        Ladder::new(vec![at(4), at(8), at(16)]).unwrap()
    }

    #[test]
    fn a_ladder_round_trips_below_its_first_level() {
        let ladder = small();
        let bytes = ladder.encode_below();
        assert_eq!(Ladder::decode(ladder.level(0).clone(), &bytes).unwrap(), ladder);
        assert_eq!(ladder.depth(), 2);
        assert_eq!(ladder.level_of(ladder.level(1).id()), Some(1));
        assert_eq!(ladder.level_of("elsewhere"), None);
        assert_eq!(ladder.level(9), ladder.level(2), "past the deepest, the deepest");
        // Cut short, padded, another first level, nonsense: refused, never a panic.
        assert!(Ladder::decode(ladder.level(0).clone(), &bytes[..bytes.len() - 1]).is_err());
        let mut padded = bytes.clone();
        padded.push(0);
        assert!(Ladder::decode(ladder.level(0).clone(), &padded).is_err());
        assert!(Ladder::decode(ladder.level(1).clone(), &bytes).is_err());
        assert!(Ladder::decode(ladder.level(0).clone(), b"WEFTLD01\xff\xff\xff\xff").is_err());
        assert!(Ladder::decode(ladder.level(0).clone(), b"nonsense").is_err());
        // Each level twice the one above.
        assert!(Ladder::new(vec![ladder.level(0).clone(), ladder.level(2).clone()]).is_err());
        assert!(Ladder::new(Vec::new()).is_err());
    }

    #[test]
    fn a_cell_descends_from_its_halving() {
        assert_eq!(Ladder::ancestor(13, 2, 0), 3);
        assert_eq!(Ladder::ancestor(13, 2, 1), 6);
        assert_eq!(Ladder::ancestor(13, 2, 2), 13);
        assert_eq!(Ladder::ancestor(13, 1, 2), 13);
        // In the small ladder a vector's best cell lies under its best cell of the level above.
        let ladder = small();
        let v = unit(&[0.3, 1.0]);
        let fine = ladder.level(2).nearest(&v, 1)[0].0;
        assert_eq!(Ladder::ancestor(fine, 2, 0), ladder.level(0).nearest(&v, 1)[0].0);
    }

    #[test]
    fn global_cells_number_every_level_after_the_levels_above() {
        let ladder = small();
        assert_eq!(
            (ladder.global(0, 3), ladder.global(1, 0), ladder.global(2, 0), ladder.global(2, 15)),
            (3, 4, 12, 27)
        );
        for g in 0..28 {
            let (l, c) = ladder.locate(g).unwrap();
            assert_eq!(ladder.global(l, c), g);
        }
        assert_eq!(ladder.locate(28), None);
        assert_eq!(ladder.cells_of_levels(0..=0), 0..4);
        assert_eq!(ladder.cells_of_levels(1..=2), 4..28);
        // Level 0 sits where the codebook alone put it; another level elsewhere.
        assert_eq!(ladder.point(2), Some(crate::placement::cell_point(ladder.level(0).id(), 2)));
        assert_eq!(ladder.point(6), Some(crate::placement::cell_point(ladder.level(1).id(), 2)));
        assert_eq!(ladder.point(28), None);
        let members: Vec<libp2p::PeerId> = (0..10).map(|_| libp2p::PeerId::random()).collect();
        let ring = crate::ring::Ring::new(members, 50);
        assert_eq!(ladder.owners(&ring, 2, 3), crate::placement::cell_owners(&ring, ladder.level(0).id(), 2, 3));
        assert!(ladder.owners(&ring, 99, 3).is_empty());
        // A chunk's cells at two levels; a question's at one.
        let v = unit(&[0.3, 1.0]);
        let placed = ladder.placed(&v, 0..=1, 2);
        assert_eq!(placed.len(), 4);
        assert!(placed[..2].iter().all(|g| *g < 4) && placed[2..].iter().all(|g| (4..12).contains(g)));
        assert_eq!(ladder.nearest(2, &v, 1)[0].0, ladder.global(2, ladder.level(2).nearest(&v, 1)[0].0));
    }

    #[test]
    fn a_network_asks_where_owners_hold_about_held_cells() {
        let ladder = small();
        // 4 cells × 3 owners: 12 owner places; 0.77 cells an owner at ~16 members.
        assert_eq!(ladder.asked_level(1, 3), 0);
        assert_eq!(ladder.asked_level(16, 3), 0);
        assert_eq!(ladder.asked_level(40, 3), 1);
        assert_eq!(ladder.asked_level(1000, 3), 2, "the deepest, however large");
        // Monotone in the members, and every level's owners hold within √2 of HELD cells.
        let mut last = 0;
        for n in 1..200 {
            let l = ladder.asked_level(n, 3);
            assert!(l >= last);
            last = l;
            let held = (ladder.level(l).len() * 3) as f64 / n as f64;
            if l > 0 && l < ladder.depth() {
                assert!((held / HELD).ln().abs() <= std::f64::consts::LN_2 / 2.0 + 1e-9, "{n}: {held}");
            }
        }
    }

    #[test]
    fn postings_go_to_every_level_a_neighbouring_count_would_ask_at() {
        let ladder = small();
        for n in 1..200 {
            let posted = ladder.posted_levels(n, 3);
            assert!(posted.contains(&ladder.asked_level(n, 3)));
            // Whoever counts within the margin asks at a level posted to.
            let margin = 1.0 + super::LEVEL_MARGIN;
            for m in [(n as f64 / margin) as usize, (n as f64 * margin) as usize] {
                assert!(posted.contains(&ladder.asked_level(m.max(1), 3)), "{n} members, {m} counted");
            }
            assert!(posted.end() - posted.start() <= 1, "one step at a time");
        }
        // Far from a step, one level.
        assert_eq!(ladder.posted_levels(16, 3), 0..=0);
        assert_eq!(ladder.posted_levels(1000, 3), 2..=2);
        // A receiver takes what a member counting within the margin posts.
        for n in 1..200 {
            let taken = ladder.accepted_levels(n, 3);
            let margin = 1.0 + super::LEVEL_MARGIN;
            for m in [(n as f64 / margin) as usize, n, (n as f64 * margin) as usize] {
                let posted = ladder.posted_levels(m.max(1), 3);
                assert!(taken.contains(posted.start()) && taken.contains(posted.end()), "{n} members, {m} counted");
            }
        }
    }

    #[test]
    fn a_growing_network_places_its_postings_at_the_next_level_before_it_asks_there() {
        let ladder = crate::placement::shipped_ladder();
        assert!(ladder.climbs(5, 50, 3).is_empty(), "small networks stay at the first level");
        assert!(ladder.climbs(2000, 2000, 3).is_empty());
        // Growing towards the first step: level 1 comes in while questions still go to level 0.
        let step = (1..5000).find(|n| ladder.posted_levels(*n, 3) == (0..=1)).unwrap();
        assert_eq!(ladder.asked_level(step, 3), 0);
        let up = ladder.climbs(step - 1, step, 3);
        assert_eq!(up, vec![Climb { from: 0, to: 1, from_cells: 3, to_cells: 3 }]);
        // Shrinking back below it: level 0 was posted all along, nothing to place.
        assert!(ladder.climbs(step, step - 1, 3).is_empty());
        // Shrinking from past the step: level 0 comes back, placed from level 1.
        let past = (step..20_000).find(|n| ladder.posted_levels(*n, 3) == (1..=1)).unwrap();
        let down = ladder.climbs(past, past - 1, 3);
        assert_eq!(down.iter().map(|c| (c.from, c.to)).collect::<Vec<_>>(), vec![(1, 0)]);
    }

    #[test]
    fn the_shipped_ladder_starts_with_the_shipped_codebook() {
        let ladder = crate::placement::shipped_ladder();
        assert_eq!(ladder.level(0), shipped());
        assert_eq!(ladder.depth(), 4);
        assert_eq!(ladder.level(4).len(), 4096);
        // The network of the live tests asks at the first level; ten thousand members at 2,048
        // cells.
        assert_eq!(ladder.asked_level(50, 3), 0);
        assert_eq!(ladder.posted_levels(50, 3), 0..=0);
        assert_eq!(ladder.asked_level(10_000, 3), 3);
    }
}
