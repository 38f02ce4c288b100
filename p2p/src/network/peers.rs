//! What identify told of the peers this node met — the addresses each listens on and whether it
//! offers a relay — and the addresses other peers gave for members it had not met. The roster
//! says who the members are, not where they are: a member behind NAT, reachable only through
//! its relays' circuits, is found by asking a peer that met it (`/weft/roster/1`'s `Where`), and
//! a node behind NAT picks its relays among the members this directory knows to offer one.

use libp2p::{Multiaddr, PeerId};
use std::collections::HashMap;

/// Peers remembered at most (the least recently identified go first).
const MAX_PEERS: usize = 4096;
/// Addresses kept per peer.
const MAX_ADDRS: usize = 8;
/// A member's addresses are asked for at most this often.
pub(super) const ASK_EVERY: std::time::Duration = std::time::Duration::from_secs(30);

#[derive(Debug, Clone)]
struct Identified {
    addrs: Vec<Multiaddr>,
    relay: bool,
    /// Order of identification: the oldest is forgotten first.
    at: u64,
    /// A dial failed since these addresses were told.
    stale: bool,
}

/// Peers as identify described them.
#[derive(Debug, Default)]
pub(super) struct Directory {
    peers: HashMap<PeerId, Identified>,
    counter: u64,
    /// When each peer's addresses were last asked of another peer.
    asked: HashMap<PeerId, std::time::Instant>,
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
        self.peers.insert(peer, Identified { addrs, relay, at: self.counter, stale: false });
    }

    /// Another peer said `peer` is at `addrs` (what it offers is not known until identify
    /// tells).
    pub(super) fn found(&mut self, peer: PeerId, addrs: &[Multiaddr]) {
        let relay = self.peers.get(&peer).is_some_and(|i| i.relay);
        if !addrs.is_empty() {
            self.identified(peer, addrs, relay);
        }
    }

    /// Whether `peer`'s addresses may be asked for at `now`: not within [`ASK_EVERY`].
    pub(super) fn may_ask(&mut self, peer: PeerId, now: std::time::Instant) -> bool {
        if self.asked.len() >= MAX_PEERS {
            self.asked.retain(|_, at| now.saturating_duration_since(*at) < ASK_EVERY);
        }
        match self.asked.get(&peer) {
            Some(at) if now.saturating_duration_since(*at) < ASK_EVERY => false,
            _ => {
                self.asked.insert(peer, now);
                true
            }
        }
    }

    /// A question of where `peer` is went unanswered: it may be asked again at once.
    pub(super) fn ask_failed(&mut self, peer: &PeerId) {
        self.asked.remove(peer);
    }

    /// A dial to `peer` failed: the addresses known may be stale (a member behind NAT that moved
    /// to other relays), so they are asked for again (they are kept meanwhile: a peer down for a
    /// moment comes back at them).
    pub(super) fn unreached(&mut self, peer: &PeerId) {
        if let Some(i) = self.peers.get_mut(peer) {
            i.stale = true;
        }
    }

    /// Whether `peer`'s addresses are worth asking another peer for: none known, or a dial at
    /// them failed since identify last told them.
    pub(super) fn wants_addrs(&self, peer: &PeerId) -> bool {
        self.peers.get(peer).is_none_or(|i| i.addrs.is_empty() || i.stale)
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

    #[test]
    fn a_lookup_adds_addresses_keeps_the_relay_flag_and_is_not_repeated_soon() {
        let mut d = Directory::default();
        let (a, b) = (PeerId::random(), PeerId::random());
        let circuit: Multiaddr = "/ip4/198.51.100.7/tcp/7701/p2p-circuit".parse().unwrap();
        d.identified(a, &[], true);
        d.found(a, std::slice::from_ref(&circuit));
        d.found(b, &[]);
        assert_eq!((d.addrs(&a), d.relays(|_| true)), (std::slice::from_ref(&circuit), vec![a]));
        assert!(d.addrs(&b).is_empty());
        let t0 = std::time::Instant::now();
        assert!(d.may_ask(b, t0) && !d.may_ask(b, t0 + ASK_EVERY / 2));
        assert!(d.may_ask(b, t0 + ASK_EVERY));
        // A failed dial makes a's circuit worth asking about again; it is kept meanwhile, and a
        // new answer replaces it.
        assert!(!d.wants_addrs(&a) && d.wants_addrs(&b));
        d.unreached(&a);
        assert!(d.wants_addrs(&a));
        assert_eq!(d.addrs(&a), std::slice::from_ref(&circuit));
        let moved: Multiaddr = "/ip4/203.0.113.9/tcp/7701/p2p-circuit".parse().unwrap();
        d.found(a, std::slice::from_ref(&moved));
        assert!(!d.wants_addrs(&a));
        assert_eq!(d.addrs(&a), std::slice::from_ref(&moved));
    }
}
