//! The members' keys and the roster events they sign: every event of a run carries real
//! ed25519 signatures, which the observers' real rosters check.

use crate::scale::member::Node;
use libp2p::identity::Keypair;
use weft_p2p::roster::event::{Event, What};

/// The points a member holds when fully admitted.
const VNODES: u16 = weft_p2p::DEFAULT_VNODES as u16;

/// The keys of a run's members, derived from its seed when first needed.
pub struct Keys {
    seed: u64,
    keys: Vec<Option<Keypair>>,
}

impl Keys {
    pub fn new(seed: u64, members: usize) -> Keys {
        Keys { seed, keys: vec![None; members] }
    }

    fn key(&mut self, i: u32) -> &Keypair {
        let seed = self.seed;
        self.keys[i as usize].get_or_insert_with(|| Node::key(seed, i as usize))
    }

    /// `i`'s join at `at`, admitted at `since`, signed by itself and `sponsors` (none, and an
    /// earlier `since`: a refutation).
    pub fn joined(&mut self, i: u32, at: u64, since: u64, sponsors: &[u32]) -> Event {
        let peer = self.key(i).public().to_peer_id();
        let mut e = Event::new(&peer, at, What::Joined { vnodes: VNODES, since, block: 0 }).signed_by(self.key(i));
        for s in sponsors {
            e = e.signed_by(self.key(*s));
        }
        e
    }

    /// `i`'s own departure.
    pub fn left(&mut self, i: u32, at: u64) -> Event {
        let peer = self.key(i).public().to_peer_id();
        Event::new(&peer, at, What::Left).signed_by(self.key(i))
    }

    /// `i`'s death, signed by `accusers`.
    pub fn dead(&mut self, i: u32, at: u64, accusers: &[u32]) -> Event {
        let peer = self.key(i).public().to_peer_id();
        accusers.iter().fold(Event::new(&peer, at, What::Dead), |e, a| e.signed_by(self.key(*a)))
    }
}

#[cfg(test)]
mod tests {
    use super::Keys;
    use crate::scale::member::Node;
    use crate::scale::sessions::Kind;

    #[test]
    fn each_member_signs_with_its_own_key_the_same_in_every_run_of_a_seed() {
        let mut keys = Keys::new(7, 4);
        let joined = keys.joined(0, 100, 100, &[1, 2]);
        let (peer, signers) = joined.signers().unwrap();
        assert_eq!(peer, Node::new(7, 0, Kind::Core, true).id);
        assert_eq!(signers.len(), 3);
        assert_eq!(Keys::new(7, 4).joined(0, 100, 100, &[1, 2]), joined);
        assert_eq!(keys.dead(3, 5, &[0, 1]).signers().unwrap().1.len(), 2);
        assert_eq!(keys.left(3, 5).signers().unwrap().1, vec![Node::new(7, 3, Kind::Core, true).id]);
    }
}
