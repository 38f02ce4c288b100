//! The data plane's overlay: members placed in a grid of buckets by their identity, each keeping
//! connections to its bucket-mates and to one member (the one of its rank) in each bucket one
//! coordinate away, a message forwarded one coordinate a hop (pure).
//!
//! Why: a member's URLs and near-duplicate records go to the owners of their keys, which at
//! thousands of members is someone new for most pages. Sent straight, a member talks to about a
//! thousand peers within 20 s, or, closing each connection half a second after
//! use, opens forty a second (each a handshake, a third of them hole punches: `weft-simnet
//! data-plane`, in `docs/src/benchmarks.md`). Over a grid of [`DIMS`] coordinates with about
//! [`PER_BUCKET`] members a bucket, a member keeps ~15 links whatever it sends, opened once,
//! and a small message takes about four hops. Linking every member of the buckets one
//! coordinate away instead held ~35 and, around crowded buckets, 55: with the roster's view
//! and monitors on top, past the 64 connections a member aims at.
//!
//! A member's bucket comes from its identity and the grid's [`Shape`], so a join or a leave
//! moves nobody else to another bucket (it moves the later members of its own bucket a rank,
//! and with it their links). The shape follows the network's size in steps
//! ([`Shape::network`]), a function of the member count alone, so members whose rings agree
//! agree on it. At a step every member's links change at once: ~15 new connections a member,
//! once. Members whose counts straddle a step for a moment disagree on paths; a batch then
//! takes more hops, and past [`GRID_HOPS`] goes straight, so nothing is lost.

use libp2p::PeerId;
use std::collections::HashMap;
use std::hash::Hash;

/// Hops a message may take over the grid: a path's five coordinates, a hop to a bucket-mate
/// with the link its sender lacks, one to its member inside the last bucket, and a detour around
/// an empty bucket. Past them it goes straight to its member.
pub const GRID_HOPS: u8 = 8;
/// A message (a URL batch, a record request) is handed on at most this many times: over the
/// grid up to [`GRID_HOPS`], and twice more where the sender's ring was stale, then the next
/// one's.
pub const MAX_HOPS: u8 = GRID_HOPS + 2;

/// Coordinates of the grid the network uses.
pub const DIMS: u32 = 5;
/// Members a bucket on average (3.2 at ten thousand members, the side rounded to 5): ~19 links
/// a member, and few buckets empty along a path. A bucket's members cost a member one link
/// each only in its own bucket, so fuller buckets are cheap; at 1.5 a third of the buckets at
/// three thousand members were empty, and the paths that found no way round them went
/// straight, 80 peers for a popular owner (`weft-simnet data-plane`).
pub const PER_BUCKET: f64 = 2.5;
/// The network forwards URL batches over the grid once it holds more members than this: below,
/// a member can hold a connection to every other besides the roster's ~20 within the 64 the
/// network aims at.
pub const FROM_MEMBERS: usize = 32;
/// Most coordinates a shape may have.
pub const MAX_DIMS: u32 = 6;
/// Detours a path may take around empty buckets before it gives up and goes straight.
pub const DETOURS: usize = 16;

/// A grid's coordinates and the values each takes (`side` of them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Shape {
    pub dims: u32,
    pub side: u32,
}

/// A bucket: a value of each coordinate (the unused ones 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Bucket([u32; MAX_DIMS as usize]);

impl Shape {
    /// The shape of `dims` coordinates (1 to [`MAX_DIMS`]) with about `per_bucket` members a
    /// bucket among `members`: a side of at least 2.
    pub fn fitting(members: usize, dims: u32, per_bucket: f64) -> Shape {
        let dims = dims.clamp(1, MAX_DIMS);
        let side = (members as f64 / per_bucket.max(f64::MIN_POSITIVE)).powf(1.0 / f64::from(dims));
        Shape { dims, side: side.round().clamp(2.0, f64::from(u32::MAX)) as u32 }
    }

    /// The shape a network of `members` fits: [`PER_BUCKET`] members a bucket, a side of 2 and
    /// fewer coordinates while the network is small (below ~80 members), [`DIMS`] coordinates
    /// and a longer side as it grows.
    pub fn network(members: usize) -> Shape {
        let buckets = (members as f64 / PER_BUCKET).max(1.0);
        let dims = (buckets.log2().floor() as u32).clamp(1, DIMS);
        Shape::fitting(members, dims, PER_BUCKET)
    }

    /// `peer`'s bucket: its identity's hash read as digits of base `side`.
    pub fn bucket(&self, peer: &PeerId) -> Bucket {
        let h = blake3::hash(&peer.to_bytes());
        let bytes = h.as_bytes();
        let mut out = [0u32; MAX_DIMS as usize];
        for (d, c) in out.iter_mut().enumerate().take(self.dims as usize) {
            // Five bytes a coordinate: uniform enough for any side below 2³².
            let mut v = [0u8; 8];
            v[..5].copy_from_slice(&bytes[5 * d..5 * d + 5]);
            *c = (u64::from_le_bytes(v) % u64::from(self.side)) as u32;
        }
        Bucket(out)
    }
}

impl Bucket {
    /// In how many coordinates two buckets differ.
    pub fn differ(&self, other: &Bucket) -> usize {
        self.0.iter().zip(&other.0).filter(|(a, b)| a != b).count()
    }
}

/// The members of a network placed in a grid. `T` names a member: a [`PeerId`] in the node, an
/// index in the simulator.
///
/// Which members are linked: every two in one bucket, and across two buckets one coordinate
/// apart the members of the same *rank* (their place in their bucket, by identity) — a
/// matching, so a member keeps one link into each neighbouring bucket that holds as many
/// members as its rank, never all of a crowded one. A bucket's first member has a link into
/// every neighbouring bucket that holds anyone; a later one without a link into the bucket it
/// needs hands the message to a bucket-mate that has one (a hop within its bucket).
pub struct Grid<T> {
    shape: Shape,
    bucket_of: HashMap<T, Bucket>,
    /// The members in each bucket, by identity (the same order on every member).
    buckets: HashMap<Bucket, Vec<T>>,
    /// Each member's place in its bucket.
    rank: HashMap<T, usize>,
}

impl<T: Copy + Eq + Hash> Grid<T> {
    /// The grid of `shape` over `members`, each with its identity.
    pub fn new<'a>(shape: Shape, members: impl IntoIterator<Item = (T, &'a PeerId)>) -> Grid<T> {
        let mut bucket_of = HashMap::new();
        let mut keyed: HashMap<Bucket, Vec<(Vec<u8>, T)>> = HashMap::new();
        for (m, peer) in members {
            let b = shape.bucket(peer);
            if bucket_of.insert(m, b).is_none() {
                keyed.entry(b).or_default().push((peer.to_bytes(), m));
            }
        }
        let mut buckets = HashMap::new();
        let mut rank = HashMap::new();
        for (b, mut members) in keyed {
            members.sort_by(|x, y| x.0.cmp(&y.0));
            rank.extend(members.iter().enumerate().map(|(i, (_, m))| (*m, i)));
            buckets.insert(b, members.into_iter().map(|(_, m)| m).collect());
        }
        Grid { shape, bucket_of, buckets, rank }
    }

    pub fn shape(&self) -> Shape {
        self.shape
    }

    /// The members `me` keeps links to: the others in its bucket, and in each bucket one
    /// coordinate away the member of its rank, if that bucket holds one. Empty for a
    /// non-member.
    pub fn neighbours(&self, me: T) -> Vec<T> {
        let Some(c) = self.bucket_of.get(&me) else { return Vec::new() };
        let rank = self.rank[&me];
        let mut out: Vec<T> = self.buckets[c].iter().copied().filter(|m| *m != me).collect();
        for dim in 0..self.shape.dims as usize {
            for v in (0..self.shape.side).filter(|v| *v != c.0[dim]) {
                let mut other = *c;
                other.0[dim] = v;
                out.extend(self.buckets.get(&other).and_then(|m| m.get(rank)).copied());
            }
        }
        out
    }

    /// `me`'s place in its bucket, by identity (`None` for a non-member): the buckets one
    /// coordinate away it has a link into are those holding more members than this.
    pub fn rank(&self, me: T) -> Option<usize> {
        self.rank.get(&me).copied()
    }

    /// In how many coordinates `a`'s and `b`'s buckets differ (`None` for a non-member).
    pub fn differ(&self, a: T, b: T) -> Option<usize> {
        Some(self.bucket_of.get(&a)?.differ(self.bucket_of.get(&b)?))
    }

    /// The hops from `a` to `b`, `b` last, each over a link (see [`Grid`]): each sets one
    /// coordinate to `b`'s, in an order (the first tried chosen by `pick`) whose buckets on the
    /// way each hold a member, with a hop to a bucket-mate first where this member has no link
    /// into the next bucket, and one to `b` inside its bucket last. When no order does (empty
    /// buckets), a detour to a bucket one coordinate away and on from there, up to
    /// [`DETOURS`]; straight to `b` past that, and for a non-member. `pick(n)` answers below
    /// `n`.
    pub fn path(&self, a: T, b: T, mut pick: impl FnMut(usize) -> usize) -> Vec<T> {
        if a == b || !self.bucket_of.contains_key(&a) || !self.bucket_of.contains_key(&b) {
            return vec![b];
        }
        let mut at = a;
        let mut hops = Vec::new();
        for _ in 0..=DETOURS {
            if let Some(buckets) = self.ordered(self.bucket_of[&at], self.bucket_of[&b], &mut pick) {
                for bucket in buckets {
                    self.step(&mut at, &bucket, &mut hops, &mut pick);
                }
                if at != b {
                    hops.push(b);
                }
                return hops;
            }
            // A bucket one coordinate away (never this one: the detour must move).
            let mut other = self.bucket_of[&at];
            let dim = pick(self.shape.dims as usize);
            let v = pick(self.shape.side as usize - 1) as u32;
            other.0[dim] = if v >= other.0[dim] { v + 1 } else { v };
            if self.buckets.contains_key(&other) {
                self.step(&mut at, &other, &mut hops, &mut pick);
            }
        }
        vec![b]
    }

    /// From `at` into `bucket` (one coordinate away, holding a member) over a link: to the
    /// member of its rank, through a bucket-mate of a rank `bucket` holds when it has none.
    fn step(&self, at: &mut T, bucket: &Bucket, hops: &mut Vec<T>, pick: &mut impl FnMut(usize) -> usize) {
        let next = &self.buckets[bucket];
        if next.len() <= self.rank[at] {
            *at = self.buckets[&self.bucket_of[at]][pick(next.len())];
            hops.push(*at);
        }
        *at = next[self.rank[at]];
        hops.push(*at);
    }

    /// The buckets from `from` to `to` (`to` last) changing one coordinate a step, each holding
    /// a member.
    fn ordered(&self, from: Bucket, to: Bucket, pick: &mut impl FnMut(usize) -> usize) -> Option<Vec<Bucket>> {
        let differing: Vec<usize> = (0..self.shape.dims as usize).filter(|d| from.0[*d] != to.0[*d]).collect();
        let orders = permutations(&differing);
        let start = pick(orders.len());
        'orders: for k in 0..orders.len() {
            let mut at = from;
            let mut buckets = Vec::new();
            for dim in &orders[(start + k) % orders.len()] {
                at.0[*dim] = to.0[*dim];
                if !self.buckets.contains_key(&at) {
                    continue 'orders;
                }
                buckets.push(at);
            }
            return Some(buckets);
        }
        None
    }
}

/// Every order of `items`.
fn permutations(items: &[usize]) -> Vec<Vec<usize>> {
    if items.len() <= 1 {
        return vec![items.to_vec()];
    }
    let mut out = Vec::new();
    for (i, first) in items.iter().enumerate() {
        let rest: Vec<usize> = items.iter().enumerate().filter(|(j, _)| *j != i).map(|(_, x)| *x).collect();
        for mut tail in permutations(&rest) {
            tail.insert(0, *first);
            out.push(tail);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{permutations, Grid, Shape, DETOURS, DIMS, PER_BUCKET};
    use libp2p::identity::Keypair;
    use libp2p::PeerId;

    fn peers(n: usize, seed: u8) -> Vec<PeerId> {
        (0..n)
            .map(|i| {
                let mut bytes = [seed; 32];
                bytes[..8].copy_from_slice(&(i as u64).to_le_bytes());
                Keypair::ed25519_from_bytes(bytes).expect("32 bytes").public().to_peer_id()
            })
            .collect()
    }

    /// A small deterministic stream for `pick`.
    fn picker(mut state: u64) -> impl FnMut(usize) -> usize {
        move |n| {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((state >> 33) % n.max(1) as u64) as usize
        }
    }

    #[test]
    fn a_path_changes_one_coordinate_a_hop_and_ends_at_its_member() {
        let ids = peers(1000, 5);
        let grid = Grid::new(Shape::fitting(1000, 3, 2.0), ids.iter().enumerate().map(|(i, p)| (i, p)));
        let mut pick = picker(5);
        let mut straight = 0;
        for _ in 0..2000 {
            let (a, b) = (pick(1000), pick(1000));
            if a == b {
                continue;
            }
            let path = grid.path(a, b, &mut pick);
            assert_eq!(*path.last().unwrap(), b);
            // Three coordinates, a hop to a bucket-mate and one inside the last bucket; two hops a
            // detour.
            assert!(path.len() <= 5 + 2 * DETOURS, "{path:?}");
            if path.len() == 1 && grid.differ(a, b) > Some(1) {
                straight += 1;
                continue;
            }
            let mut at = a;
            for hop in path {
                assert_ne!(at, hop, "a hop to itself");
                assert!(grid.differ(at, hop) <= Some(1), "{at} → {hop}");
                assert!(at == hop || grid.neighbours(at).contains(&hop), "{at} → {hop} is not a link");
                at = hop;
            }
        }
        assert!(straight < 20, "{straight} of 2000 sent straight");
        assert_eq!(permutations(&[0, 1, 2]).len(), 6);
    }

    #[test]
    fn the_network_s_shape_holds_about_twenty_links_a_member_at_ten_thousand() {
        let ids = peers(10_000, 1);
        let shape = Shape::network(ids.len());
        assert_eq!(shape, Shape { dims: DIMS, side: 5 });
        let grid = Grid::new(shape, ids.iter().map(|p| (*p, p)));
        let degrees: Vec<usize> = ids.iter().take(2000).map(|p| grid.neighbours(*p).len()).collect();
        let mean = degrees.iter().sum::<usize>() as f64 / degrees.len() as f64;
        // A bucket holds Poisson(λ) members, λ = 10,000 / 5⁵: a member's bucket-mates (λ), and
        // in each of the dims · (side − 1) = 20 buckets one coordinate away the member of its
        // rank r (uniform below its bucket's size), there when that bucket holds more than r.
        let l: f64 = 10_000.0 / 3125.0;
        let poisson = |k: i32| (-l).exp() * l.powi(k) / (1..=k).map(f64::from).product::<f64>();
        let more_than = |r: i32| 1.0 - (0..=r).map(poisson).sum::<f64>();
        let linked = (0..30).map(|k| poisson(k) * (0..=k).map(more_than).sum::<f64>() / f64::from(k + 1)).sum::<f64>();
        let expected = l + 20.0 * linked;
        assert!((mean - expected).abs() < 0.05 * expected, "{mean} against {expected}");
        // Never all of a crowded bucket: one link a bucket one coordinate away, at most.
        assert!(*degrees.iter().max().unwrap() <= 20 + 12, "{:?}", degrees.iter().max());
        // Links go both ways.
        for p in ids.iter().take(200) {
            for n in grid.neighbours(*p) {
                assert!(grid.neighbours(n).contains(p), "{p} → {n} one way");
            }
        }
        assert!(grid.neighbours(PeerId::random()).is_empty());
    }

    #[test]
    fn a_small_network_takes_fewer_coordinates_of_two_values() {
        assert_eq!(Shape::network(1), Shape { dims: 1, side: 2 });
        assert_eq!(Shape::network(5), Shape { dims: 1, side: 2 });
        assert_eq!(Shape::network(20), Shape { dims: 3, side: 2 });
        assert_eq!(Shape::network(50), Shape { dims: 4, side: 2 });
        assert_eq!(Shape::network(100), Shape { dims: DIMS, side: 2 });
        assert_eq!(Shape::network(1000), Shape { dims: DIMS, side: 3 });
        // Every size up to ten thousand: about PER_BUCKET members a bucket, within (2.5 / 2)⁵
        // either way (a side rounded from 2.49 to 2).
        for n in (2..10_000).step_by(7) {
            let s = Shape::network(n);
            let per = n as f64 / f64::from(s.side).powi(s.dims as i32);
            assert!(per > PER_BUCKET / 3.1 && per < PER_BUCKET * 3.1, "{n}: {s:?}, {per}");
        }
    }

    #[test]
    fn a_bucket_depends_on_the_identity_alone() {
        let ids = peers(50, 9);
        let shape = Shape::fitting(50, DIMS, PER_BUCKET);
        let all = Grid::new(shape, ids.iter().map(|p| (*p, p)));
        let fewer = Grid::new(shape, ids[..25].iter().map(|p| (*p, p)));
        for p in &ids[..25] {
            assert_eq!(all.bucket_of[p], fewer.bucket_of[p]);
            assert!(shape.bucket(p).0.iter().all(|c| *c < shape.side));
        }
        // A path to or from a non-member goes straight.
        assert_eq!(all.path(ids[0], PeerId::random(), |_| 0).len(), 1);
    }
}
