//! A fixed overlay for the data plane, one design `data_plane` measures: members placed in a
//! grid by their identity, each connected to the members one coordinate away, a message
//! changing one coordinate a hop. Connections stay bounded (about dims·side·members-per-bucket
//! of them) whatever a member sends, at the price of forwarding.

use libp2p::PeerId;

/// A grid of `side`^`dims` buckets; a member's bucket comes from its identity, so a join or a
/// leave moves no one else. Members in buckets that differ in exactly one coordinate (or in
/// none) are neighbours: about dims·(side − 1)·per_bucket of them.
pub struct Grid {
    side: u32,
    coords: Vec<Vec<u32>>,
    /// The members in each bucket.
    buckets: std::collections::HashMap<Vec<u32>, Vec<u32>>,
}

impl Grid {
    /// A grid for `ids` of `dims` coordinates, about `per_bucket` members a bucket.
    pub fn new(ids: &[PeerId], dims: u32, per_bucket: f64) -> Grid {
        let side = (ids.len() as f64 / per_bucket).powf(1.0 / f64::from(dims)).round().max(2.0) as u32;
        let coords: Vec<Vec<u32>> = ids
            .iter()
            .map(|p| {
                let h = blake3::hash(&p.to_bytes());
                let mut v = u64::from_le_bytes(h.as_bytes()[..8].try_into().expect("8 bytes"));
                (0..dims)
                    .map(|_| {
                        let c = (v % u64::from(side)) as u32;
                        v /= u64::from(side);
                        c
                    })
                    .collect()
            })
            .collect();
        let mut buckets: std::collections::HashMap<Vec<u32>, Vec<u32>> = std::collections::HashMap::new();
        for (i, c) in coords.iter().enumerate() {
            buckets.entry(c.clone()).or_default().push(i as u32);
        }
        Grid { side, coords, buckets }
    }

    /// The members `a` keeps connections to.
    pub fn neighbours(&self, a: u32) -> usize {
        let c = &self.coords[a as usize];
        let mut n = self.buckets[c].len() - 1;
        for dim in 0..c.len() {
            for v in (0..self.side).filter(|v| *v != c[dim]) {
                let mut other = c.clone();
                other[dim] = v;
                n += self.buckets.get(&other).map_or(0, Vec::len);
            }
        }
        n
    }

    /// In how many coordinates `a` and `b` differ.
    pub fn differ(&self, a: u32, b: u32) -> usize {
        (self.coords[a as usize].iter().zip(&self.coords[b as usize])).filter(|(x, y)| x != y).count()
    }

    /// The hops from `a` to `b`: the members it passes, `b` last. Each hop sets one coordinate
    /// to `b`'s, in an order (tried from one `pick` chooses) whose buckets on the way each hold
    /// a member (the one `pick` chooses). When no order does (empty buckets), a detour: one hop
    /// to a member of a bucket one coordinate away, and on from there (up to [`DETOURS`]);
    /// straight to `b` past that.
    pub fn path(&self, a: u32, b: u32, mut pick: impl FnMut(usize) -> usize) -> Vec<u32> {
        let mut at = a;
        let mut hops = Vec::new();
        for _ in 0..=DETOURS {
            if let Some(rest) = self.ordered(at, b, &mut pick) {
                hops.extend(rest);
                return hops;
            }
            // A detour: a member of a bucket one coordinate away.
            let c = &self.coords[at as usize];
            let dim = pick(c.len());
            let mut other = c.clone();
            other[dim] = pick(self.side as usize) as u32;
            if let Some(members) = self.buckets.get(&other) {
                at = members[pick(members.len())];
                hops.push(at);
            }
        }
        vec![b]
    }

    /// A path from `a` to `b` changing one coordinate a hop through buckets that hold a member.
    fn ordered(&self, a: u32, b: u32, pick: &mut impl FnMut(usize) -> usize) -> Option<Vec<u32>> {
        let (from, to) = (&self.coords[a as usize], &self.coords[b as usize]);
        let differing: Vec<usize> = (0..from.len()).filter(|d| from[*d] != to[*d]).collect();
        let orders = permutations(&differing);
        let start = pick(orders.len());
        'orders: for k in 0..orders.len() {
            let order = &orders[(start + k) % orders.len()];
            let mut at = from.clone();
            let mut hops = Vec::new();
            for dim in &order[..order.len().saturating_sub(1)] {
                at[*dim] = to[*dim];
                match self.buckets.get(&at) {
                    Some(members) => hops.push(members[pick(members.len())]),
                    None => continue 'orders,
                }
            }
            hops.push(b);
            return Some(hops);
        }
        None
    }
}

/// Detours a grid path may take around empty buckets.
const DETOURS: usize = 16;

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
    use super::{permutations, Grid, DETOURS};
    use crate::rng::Rng;
    use crate::scale::data_plane::peer;
    use libp2p::PeerId;

    #[test]
    fn a_grid_path_changes_one_coordinate_a_hop_and_ends_at_its_member() {
        let mut rng = Rng(5);
        let ids: Vec<PeerId> = (0..1000).map(|_| peer(&mut rng)).collect();
        let grid = Grid::new(&ids, 3, 2.0);
        let mut straight = 0;
        for _ in 0..2000 {
            let (a, b) = (rng.below(1000) as u32, rng.below(1000) as u32);
            let path = grid.path(a, b, |n| rng.below(n));
            assert_eq!(*path.last().unwrap(), b);
            assert!(path.len() <= 3 + DETOURS, "{path:?}");
            if path.len() == 1 && grid.differ(a, b) > 1 {
                straight += 1;
                continue;
            }
            let mut at = a;
            for hop in path {
                assert!(grid.differ(at, hop) <= 1, "{at} → {hop}");
                at = hop;
            }
        }
        assert!(straight < 20, "{straight} of 2000 sent straight");
        assert_eq!(permutations(&[0, 1, 2]).len(), 6);
    }
}
