//! Where to dial a peer: the addresses this node learned for the peers it may dial (identify,
//! the roster's `Where` answers, the members saved at the last run), offered to the swarm when a
//! protocol sends to a peer it is not connected to. Without it a request-response send to a
//! member not connected would have nothing to dial; Kademlia's routing table used to be that
//! book, and Weft runs no Kademlia.

use libp2p::core::transport::PortUse;
use libp2p::core::Endpoint;
use libp2p::swarm::{
    dummy, ConnectionDenied, ConnectionId, FromSwarm, NetworkBehaviour, PeerAddresses, THandler, THandlerInEvent,
    THandlerOutEvent, ToSwarm,
};
use libp2p::{Multiaddr, PeerId};
use std::convert::Infallible;
use std::num::NonZeroUsize;
use std::task::{Context, Poll};

/// Peers whose addresses are kept (the least recently used go first); up to ten addresses each.
pub const MAX_PEERS: usize = 4096;

/// A bounded address book as a behaviour: it only answers the swarm's "where is this peer?".
pub struct AddressBook {
    addresses: PeerAddresses,
}

impl Default for AddressBook {
    fn default() -> Self {
        AddressBook { addresses: PeerAddresses::new(NonZeroUsize::new(MAX_PEERS).expect("non-zero")) }
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
    type ToSwarm = Infallible;

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

    fn on_swarm_event(&mut self, _: FromSwarm) {}

    fn poll(&mut self, _: &mut Context<'_>) -> Poll<ToSwarm<Self::ToSwarm, THandlerInEvent<Self>>> {
        Poll::Pending
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
}
