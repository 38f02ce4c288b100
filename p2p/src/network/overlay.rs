//! The grid this node sends URL batches over (see [`crate::grid`]): rebuilt from the ring when
//! its members change, in use once the ring holds more than
//! [`NetworkConfig::grid_from_members`](super::NetworkConfig) members. Below that a member can
//! hold a connection to every other within the 64 the network aims at, so batches go straight.

use crate::grid::{Grid, Shape, GRID_HOPS};
use crate::ring::Ring;
use libp2p::PeerId;

pub(super) struct Overlay {
    me: PeerId,
    /// The grid is used on rings of more members than this.
    from_members: usize,
    grid: Option<Grid<PeerId>>,
    /// This node's neighbours on the grid: the links it keeps.
    neighbours: Vec<PeerId>,
    /// The state of the draws that spread paths over a bucket's members.
    draws: u64,
}

impl Overlay {
    pub(super) fn new(me: PeerId, from_members: usize) -> Overlay {
        let draws = u64::from_le_bytes(blake3::hash(&me.to_bytes()).as_bytes()[..8].try_into().expect("8 bytes"));
        Overlay { me, from_members, grid: None, neighbours: Vec::new(), draws }
    }

    /// Places the members of `ring` (called when they change).
    pub(super) fn follow(&mut self, ring: &Ring) {
        let members = ring.members();
        if members.len() <= self.from_members || !ring.contains(&self.me) {
            self.grid = None;
            self.neighbours.clear();
            return;
        }
        let grid = Grid::new(Shape::network(members.len()), members.iter().map(|p| (*p, p)));
        self.neighbours = grid.neighbours(self.me);
        self.grid = Some(grid);
    }

    /// The members whose connections this node keeps for the grid (none when it is not in use).
    pub(super) fn neighbours(&self) -> &[PeerId] {
        &self.neighbours
    }

    /// The grid's shape, when it is in use.
    pub(super) fn shape(&self) -> Option<Shape> {
        self.grid.as_ref().map(Grid::shape)
    }

    /// Whom a message for `owner` that has taken `hops` hops goes to: the first hop of a path
    /// over the grid, or `owner` itself when the grid is not in use, has no path, or the message
    /// has taken [`GRID_HOPS`] hops already (the last hops of [`MAX_HOPS`](crate::grid::MAX_HOPS)
    /// are left for rings that changed on the way).
    pub(super) fn next_hop(&mut self, owner: PeerId, hops: u8) -> PeerId {
        let Some(grid) = &self.grid else { return owner };
        if hops >= GRID_HOPS {
            return owner;
        }
        let draws = &mut self.draws;
        let mut pick = |n: usize| {
            // SplitMix64: the draws only spread paths, so any fair stream will do.
            *draws = draws.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = *draws;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            ((z ^ (z >> 31)) % n.max(1) as u64) as usize
        };
        grid.path(self.me, owner, &mut pick).first().copied().unwrap_or(owner)
    }
}

#[cfg(test)]
mod tests {
    use super::Overlay;
    use crate::grid::GRID_HOPS;
    use crate::ring::Ring;
    use libp2p::PeerId;

    #[test]
    fn batches_go_straight_on_a_small_ring_and_over_links_kept_on_a_large_one() {
        let members: Vec<PeerId> = (0..200).map(|_| PeerId::random()).collect();
        let me = members[0];
        let mut overlay = Overlay::new(me, 32);
        overlay.follow(&Ring::new(members[..20].iter().copied(), 10));
        assert!(overlay.neighbours().is_empty() && overlay.shape().is_none());
        assert_eq!(overlay.next_hop(members[7], 0), members[7]);

        overlay.follow(&Ring::new(members.iter().copied(), 10));
        let neighbours = overlay.neighbours().to_vec();
        assert!(!neighbours.is_empty() && neighbours.len() < 64, "{}", neighbours.len());
        for owner in &members[1..] {
            let hop = overlay.next_hop(*owner, 0);
            assert!(hop == *owner || neighbours.contains(&hop), "{hop} is neither the owner nor a link");
        }
        // Some owners are beyond the links: their batches take a hop first.
        assert!(members[1..].iter().any(|o| !neighbours.contains(o) && overlay.next_hop(*o, 0) != *o));
        // One that has taken the grid's hops goes straight.
        assert!(members[1..].iter().all(|o| overlay.next_hop(*o, GRID_HOPS) == *o));

        // A node off the ring (it left) sends straight.
        overlay.follow(&Ring::new(members[1..].iter().copied(), 10));
        assert_eq!(overlay.next_hop(members[9], 0), members[9]);
    }
}
