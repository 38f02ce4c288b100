//! What identify told of the peers this node met: the addresses each listens on and whether it
//! offers a relay. The roster says who the members are, not where they are: a member behind
//! NAT picks its relays among the members this directory knows to offer one.

use libp2p::{Multiaddr, PeerId};
use std::collections::HashMap;

/// Peers remembered at most (the least recently identified go first).
const MAX_PEERS: usize = 4096;
/// Addresses kept per peer.
const MAX_ADDRS: usize = 8;

#[derive(Debug, Clone)]
struct Identified {
    addrs: Vec<Multiaddr>,
    relay: bool,
    /// Order of identification: the oldest is forgotten first.
    at: u64,
}

/// Peers as identify described them.
#[derive(Debug, Default)]
pub(super) struct Directory {
    peers: HashMap<PeerId, Identified>,
    counter: u64,
}

impl Directory {
    /// `peer` said it listens on `addrs` and whether it serves relay reservations.
    pub(super) fn identified(&mut self, peer: PeerId, addrs: &[Multiaddr], relay: bool) {
        if self.peers.len() >= MAX_PEERS && !self.peers.contains_key(&peer) {
            if let Some(oldest) = self.peers.iter().min_by_key(|(_, i)| i.at).map(|(p, _)| *p) {
                self.peers.remove(&oldest);
            }
        }
        self.counter += 1;
        let addrs = addrs.iter().take(MAX_ADDRS).cloned().collect();
        self.peers.insert(peer, Identified { addrs, relay, at: self.counter });
    }

    /// The peers that offer a relay, among those `keep` accepts.
    pub(super) fn relays(&self, keep: impl Fn(&PeerId) -> bool) -> Vec<PeerId> {
        let mut relays: Vec<PeerId> = self.peers.iter().filter(|(p, i)| i.relay && keep(p)).map(|(p, _)| *p).collect();
        relays.sort();
        relays
    }

    /// Where `peer` said it listens.
    pub(super) fn addrs(&self, peer: &PeerId) -> &[Multiaddr] {
        self.peers.get(peer).map_or(&[], |i| i.addrs.as_slice())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relays_are_the_peers_that_said_they_offer_one_and_the_directory_is_bounded() {
        let mut d = Directory::default();
        let (a, b) = (PeerId::random(), PeerId::random());
        let addr: Multiaddr = "/ip4/198.51.100.7/tcp/7701".parse().unwrap();
        d.identified(a, std::slice::from_ref(&addr), true);
        d.identified(b, &[], false);
        assert_eq!(d.relays(|_| true), vec![a]);
        assert!(d.relays(|p| *p != a).is_empty());
        assert_eq!(d.addrs(&a), &[addr]);
        // It stops offering one (its reachability changed): identify says so again.
        d.identified(a, &[], false);
        assert!(d.relays(|_| true).is_empty());
        for _ in 0..MAX_PEERS + 10 {
            d.identified(PeerId::random(), &[], true);
        }
        assert_eq!(d.peers.len(), MAX_PEERS);
        assert!(!d.peers.contains_key(&a), "the oldest went first");
    }
}
