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
}

impl MonitorRing {
    pub fn insert(&mut self, peer: &PeerId, member: u32) {
        self.members.insert(position(peer), member);
    }

    pub fn remove(&mut self, peer: &PeerId) {
        self.members.remove(&position(peer));
    }

    pub fn contains(&self, peer: &PeerId) -> bool {
        self.members.contains_key(&position(peer))
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

    /// The first `n` members after `peer` that `keep` keeps (not `peer` itself).
    pub fn after(&self, peer: &PeerId, n: usize, keep: impl Fn(u32) -> bool) -> Vec<u32> {
        let pos = position(peer);
        let me = self.members.get(&pos).copied();
        let after = self.members.range(pos.wrapping_add(1)..).chain(self.members.range(..pos));
        after.map(|(_, j)| *j).filter(|j| Some(*j) != me && keep(*j)).take(n).collect()
    }

    /// The first `n` members before `peer` that `keep` keeps.
    pub fn before(&self, peer: &PeerId, n: usize, keep: impl Fn(u32) -> bool) -> Vec<u32> {
        let pos = position(peer);
        let me = self.members.get(&pos).copied();
        let before = self.members.range(..pos).rev().chain(self.members.range(pos.wrapping_add(1)..).rev());
        before.map(|(_, j)| *j).filter(|j| Some(*j) != me && keep(*j)).take(n).collect()
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
        let mut ring = MonitorRing::default();
        for (i, p) in peers.iter().enumerate() {
            ring.insert(p, i as u32);
        }
        assert_eq!(ring.after(&peers[4], 3, |_| true), vec![5, 0, 1], "round past the end");
        assert_eq!(ring.before(&peers[1], 3, |_| true), vec![0, 5, 4]);
        assert_eq!(ring.after(&peers[0], 2, |j| j != 1), vec![2, 3]);
        ring.remove(&peers[2]);
        assert!(!ring.contains(&peers[2]) && ring.len() == 5);
        assert_eq!(ring.after(&peers[1], 1, |_| true), vec![3]);
    }
}
