//! Where to dial a peer: the addresses this node learned for the peers it may dial (identify,
//! the roster's `Where` answers, the members saved at the last run), offered to the swarm when a
//! protocol sends to a peer it is not connected to. Without it a request-response send to a
//! member not connected would have nothing to dial (Weft runs no Kademlia, whose routing table
//! would be that book). A dial that found no address, or none that answered, is
//! reported ([`Event::Unreached`]): the event loop then asks a member that met the peer where
//! it is, so a URL batch, posting or record for a member this node never met goes at its retry.

use libp2p::core::transport::PortUse;
use libp2p::core::Endpoint;
use libp2p::swarm::{
    dummy, ConnectionDenied, ConnectionId, DialError, DialFailure, FromSwarm, NetworkBehaviour, PeerAddresses,
    THandler, THandlerInEvent, THandlerOutEvent, ToSwarm,
};
use libp2p::{Multiaddr, PeerId};
use std::collections::VecDeque;
use std::num::NonZeroUsize;
use std::task::{Context, Poll};

/// Peers whose addresses are kept (the least recently used go first); up to ten addresses each.
pub const MAX_PEERS: usize = 4096;

/// Dial failures reported and not yet taken, at most (a burst of failures to one peer is one).
const MAX_PENDING: usize = 256;

/// What the book tells the event loop.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// A dial to this peer found no address, or none that answered.
    Unreached(PeerId),
}

/// A bounded address book as a behaviour: it answers the swarm's "where is this peer?" and says
/// when it did not know.
pub struct AddressBook {
    addresses: PeerAddresses,
    unreached: VecDeque<PeerId>,
}

impl Default for AddressBook {
    fn default() -> Self {
        AddressBook {
            addresses: PeerAddresses::new(NonZeroUsize::new(MAX_PEERS).expect("non-zero")),
            unreached: VecDeque::new(),
        }
    }
}

impl AddressBook {
    /// `peer` may be dialled at `addr`. A failed dial does not take it out: a member down for a
    /// moment comes back at the same address, and a wrong one costs a failed dial (the
    /// connection proves the peer id).
    pub fn add(&mut self, peer: PeerId, addr: Multiaddr) {
        self.addresses.add(peer, addr);
    }

    /// The addresses known for `peer`.
    pub fn get(&mut self, peer: &PeerId) -> Vec<Multiaddr> {
        self.addresses.get(peer).collect()
    }
}

impl NetworkBehaviour for AddressBook {
    type ConnectionHandler = dummy::ConnectionHandler;
    type ToSwarm = Event;

    fn handle_established_inbound_connection(
        &mut self,
        _: ConnectionId,
        _: PeerId,
        _: &Multiaddr,
        _: &Multiaddr,
    ) -> Result<THandler<Self>, ConnectionDenied> {
        Ok(dummy::ConnectionHandler)
    }

    fn handle_established_outbound_connection(
        &mut self,
        _: ConnectionId,
        _: PeerId,
        _: &Multiaddr,
        _: Endpoint,
        _: PortUse,
    ) -> Result<THandler<Self>, ConnectionDenied> {
        Ok(dummy::ConnectionHandler)
    }

    fn handle_pending_outbound_connection(
        &mut self,
        _: ConnectionId,
        peer: Option<PeerId>,
        _: &[Multiaddr],
        _: Endpoint,
    ) -> Result<Vec<Multiaddr>, ConnectionDenied> {
        Ok(peer.map(|p| self.get(&p)).unwrap_or_default())
    }

    fn on_connection_handler_event(&mut self, _: PeerId, _: ConnectionId, event: THandlerOutEvent<Self>) {
        match event {}
    }

    fn on_swarm_event(&mut self, event: FromSwarm) {
        if let FromSwarm::DialFailure(DialFailure { peer_id: Some(peer), error, .. }) = event {
            let unreached = matches!(error, DialError::NoAddresses | DialError::Transport(_));
            if unreached && !self.unreached.contains(&peer) && self.unreached.len() < MAX_PENDING {
                self.unreached.push_back(peer);
            }
        }
    }

    fn poll(&mut self, _: &mut Context<'_>) -> Poll<ToSwarm<Self::ToSwarm, THandlerInEvent<Self>>> {
        match self.unreached.pop_front() {
            Some(peer) => Poll::Ready(ToSwarm::GenerateEvent(Event::Unreached(peer))),
            None => Poll::Pending,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_book_answers_the_swarm_and_is_bounded() {
        let mut book = AddressBook::default();
        let a = PeerId::random();
        let addr: Multiaddr = "/ip4/127.0.0.1/tcp/7701".parse().unwrap();
        book.add(a, addr.clone());
        let given = book
            .handle_pending_outbound_connection(ConnectionId::new_unchecked(1), Some(a), &[], Endpoint::Dialer)
            .unwrap();
        assert_eq!(given, vec![addr.with_p2p(a).unwrap()]);
        assert!(book.get(&PeerId::random()).is_empty());
        for _ in 0..MAX_PEERS {
            book.add(PeerId::random(), "/ip4/127.0.0.1/tcp/1".parse().unwrap());
        }
        assert!(book.get(&a).is_empty(), "the least recently used went first");
    }

    #[test]
    fn a_dial_that_found_no_address_is_reported_once() {
        let mut book = AddressBook::default();
        let a = PeerId::random();
        for _ in 0..3 {
            book.on_swarm_event(FromSwarm::DialFailure(DialFailure {
                peer_id: Some(a),
                error: &DialError::NoAddresses,
                connection_id: ConnectionId::new_unchecked(1),
            }));
        }
        let waker = futures::task::noop_waker();
        let mut cx = Context::from_waker(&waker);
        assert!(matches!(book.poll(&mut cx), Poll::Ready(ToSwarm::GenerateEvent(Event::Unreached(p))) if p == a));
        assert!(book.poll(&mut cx).is_pending());
    }
}
