//! The monitor ring as the network's latest events have it: the members in order of their
//! position (`weft_p2p::roster::event::position`), and who follows or precedes whom — a
//! member's monitors, its sponsors, the members it watches.

use libp2p::PeerId;
use std::collections::BTreeMap;
use weft_p2p::roster::event::position;

/// Members by position.
#[derive(Debug, Clone, Default)]
pub struct MonitorRing {
    members: BTreeMap<u64, u32>,
    /// Every identity's position, by index (hashed once).
    positions: Vec<u64>,
}

impl MonitorRing {
    /// The ring of no members yet, over identities `ids`.
    pub fn new(ids: &[PeerId]) -> MonitorRing {
        MonitorRing { members: BTreeMap::new(), positions: ids.iter().map(position).collect() }
    }

    /// Where member `i` sits.
    pub fn position(&self, i: u32) -> u64 {
        self.positions[i as usize]
    }

    pub fn insert(&mut self, i: u32) {
        self.members.insert(self.position(i), i);
    }

    pub fn remove(&mut self, i: u32) {
        self.members.remove(&self.position(i));
    }

    pub fn contains(&self, i: u32) -> bool {
        self.members.contains_key(&self.position(i))
    }

    pub fn len(&self) -> usize {
        self.members.len()
    }

    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// Every member, in order.
    pub fn members(&self) -> impl Iterator<Item = u32> + '_ {
        self.members.values().copied()
    }

    /// The first `n` members after `i` that `keep` keeps (not `i` itself).
    pub fn after(&self, i: u32, n: usize, keep: impl Fn(u32) -> bool) -> Vec<u32> {
        let pos = self.position(i);
        let after = self.members.range(pos.wrapping_add(1)..).chain(self.members.range(..pos));
        after.map(|(_, j)| *j).filter(|j| *j != i && keep(*j)).take(n).collect()
    }

    /// The first `n` members before `i` that `keep` keeps.
    pub fn before(&self, i: u32, n: usize, keep: impl Fn(u32) -> bool) -> Vec<u32> {
        let pos = self.position(i);
        let before = self.members.range(..pos).rev().chain(self.members.range(pos.wrapping_add(1)..).rev());
        before.map(|(_, j)| *j).filter(|j| *j != i && keep(*j)).take(n).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::MonitorRing;
    use libp2p::PeerId;
    use weft_p2p::roster::event::position;

    #[test]
    fn members_follow_each_other_round_the_ring() {
        let mut peers: Vec<PeerId> = (0..6).map(|_| PeerId::random()).collect();
        peers.sort_by_key(position);
        let mut ring = MonitorRing::new(&peers);
        for i in 0..6 {
            ring.insert(i);
        }
        assert_eq!(ring.after(4, 3, |_| true), vec![5, 0, 1], "round past the end");
        assert_eq!(ring.before(1, 3, |_| true), vec![0, 5, 4]);
        assert_eq!(ring.after(0, 2, |j| j != 1), vec![2, 3]);
        ring.remove(2);
        assert!(!ring.contains(2) && ring.len() == 5);
        assert_eq!(ring.after(1, 1, |_| true), vec![3]);
    }
}
