//! Which idle connections stay open: those to the peers the roster keeps (`RosterNode::kept`:
//! its view, the members it watches and those that watch it, and the newcomers it would
//! sponsor). Every other connection — a URL batch, a posting, a record, a copy or a question to
//! an owner met once — closes after the swarm's short idle timeout ([`IDLE_TIMEOUT`]).
//!
//! Why: the data plane talks to whoever owns a key, which at thousands of members is someone
//! new for most pages; kept for minutes, those connections would pile up past
//! `p2p.max_connections`. The roster's must stay: a monitor notices a departure by its
//! connection closing, and a sponsor counts a newcomer's probation from their meeting.

use libp2p::core::transport::PortUse;
use libp2p::core::upgrade::DeniedUpgrade;
use libp2p::core::Endpoint;
use libp2p::swarm::handler::{ConnectionEvent, ConnectionHandlerEvent, SubstreamProtocol};
use libp2p::swarm::{
    ConnectionDenied, ConnectionHandler, ConnectionId, FromSwarm, NetworkBehaviour, THandler, THandlerInEvent,
    THandlerOutEvent, ToSwarm,
};
use libp2p::{Multiaddr, PeerId};
use std::collections::HashSet;
use std::convert::Infallible;
use std::sync::{Arc, RwLock};
use std::task::{Context, Poll};
use std::time::Duration;

/// How long a connection nobody wants kept stays open once idle: long enough for a page's
/// postings, record and copies to one owner to share it, short enough that a crawler talking
/// to a new owner every few pages does not hold hundreds.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(20);

/// The peers whose connections are kept open while idle, shared with every connection's handler.
#[derive(Debug, Clone, Default)]
pub struct KeepAlive {
    kept: Arc<RwLock<HashSet<PeerId>>>,
}

impl KeepAlive {
    /// From now on, these peers' connections are kept (and no others').
    pub fn set(&self, peers: impl IntoIterator<Item = PeerId>) {
        let peers: HashSet<PeerId> = peers.into_iter().collect();
        *self.kept.write().unwrap_or_else(|e| e.into_inner()) = peers;
    }

    /// Whether `peer`'s connections are kept.
    pub fn keeps(&self, peer: &PeerId) -> bool {
        self.kept.read().unwrap_or_else(|e| e.into_inner()).contains(peer)
    }

    fn handler(&self, peer: PeerId) -> Handler {
        Handler { peer, kept: self.clone() }
    }
}

impl NetworkBehaviour for KeepAlive {
    type ConnectionHandler = Handler;
    type ToSwarm = Infallible;

    fn handle_established_inbound_connection(
        &mut self,
        _: ConnectionId,
        peer: PeerId,
        _: &Multiaddr,
        _: &Multiaddr,
    ) -> Result<THandler<Self>, ConnectionDenied> {
        Ok(self.handler(peer))
    }

    fn handle_established_outbound_connection(
        &mut self,
        _: ConnectionId,
        peer: PeerId,
        _: &Multiaddr,
        _: Endpoint,
        _: PortUse,
    ) -> Result<THandler<Self>, ConnectionDenied> {
        Ok(self.handler(peer))
    }

    fn on_connection_handler_event(&mut self, _: PeerId, _: ConnectionId, event: THandlerOutEvent<Self>) {
        match event {}
    }

    fn on_swarm_event(&mut self, _: FromSwarm) {}

    fn poll(&mut self, _: &mut Context<'_>) -> Poll<ToSwarm<Self::ToSwarm, THandlerInEvent<Self>>> {
        Poll::Pending
    }
}

/// One connection's say in whether it stays open: kept while its peer is wanted. It speaks no
/// protocol.
pub struct Handler {
    peer: PeerId,
    kept: KeepAlive,
}

impl ConnectionHandler for Handler {
    type FromBehaviour = Infallible;
    type ToBehaviour = Infallible;
    type InboundProtocol = DeniedUpgrade;
    type OutboundProtocol = DeniedUpgrade;
    type InboundOpenInfo = ();
    type OutboundOpenInfo = ();

    fn listen_protocol(&self) -> SubstreamProtocol<Self::InboundProtocol> {
        SubstreamProtocol::new(DeniedUpgrade, ())
    }

    fn connection_keep_alive(&self) -> bool {
        self.kept.keeps(&self.peer)
    }

    fn on_behaviour_event(&mut self, event: Self::FromBehaviour) {
        match event {}
    }

    fn poll(
        &mut self,
        _: &mut Context<'_>,
    ) -> Poll<ConnectionHandlerEvent<Self::OutboundProtocol, (), Self::ToBehaviour>> {
        Poll::Pending
    }

    fn on_connection_event(&mut self, _: ConnectionEvent<Self::InboundProtocol, Self::OutboundProtocol>) {}
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt;
    use libp2p::swarm::{NetworkBehaviour, SwarmEvent};
    use libp2p::{noise, ping, tcp, yamux, Swarm};

    #[derive(NetworkBehaviour)]
    struct Both {
        keep_alive: KeepAlive,
        ping: ping::Behaviour,
    }

    /// A real swarm on TCP with a one-second idle timeout; pings every 200 ms, so its
    /// connections are polled (a handler is asked whether to keep its connection when polled).
    fn swarm(keep_alive: KeepAlive) -> Swarm<Both> {
        libp2p::SwarmBuilder::with_new_identity()
            .with_tokio()
            .with_tcp(tcp::Config::default(), noise::Config::new, yamux::Config::default)
            .unwrap()
            .with_behaviour(|_| Both {
                keep_alive,
                ping: ping::Behaviour::new(ping::Config::new().with_interval(Duration::from_millis(200))),
            })
            .unwrap()
            .with_swarm_config(|c| c.with_idle_connection_timeout(Duration::from_secs(1)))
            .build()
    }

    /// Runs both swarms for `secs` seconds or until a connection closes; whether one did.
    async fn closed_within(a: &mut Swarm<Both>, b: &mut Swarm<Both>, secs: u64) -> bool {
        let until = tokio::time::sleep(Duration::from_secs(secs));
        tokio::pin!(until);
        loop {
            tokio::select! {
                _ = &mut until => return false,
                e = a.select_next_some() => if matches!(e, SwarmEvent::ConnectionClosed { .. }) { return true },
                e = b.select_next_some() => if matches!(e, SwarmEvent::ConnectionClosed { .. }) { return true },
            }
        }
    }

    #[tokio::test]
    async fn a_connection_to_a_wanted_peer_stays_open_while_idle_and_others_close() {
        let (keep_a, keep_b) = (KeepAlive::default(), KeepAlive::default());
        let (mut a, mut b) = (swarm(keep_a.clone()), swarm(keep_b.clone()));
        keep_a.set([*b.local_peer_id()]);
        keep_b.set([*a.local_peer_id()]);
        b.listen_on("/ip4/127.0.0.1/tcp/0".parse().unwrap()).unwrap();
        let addr = loop {
            if let SwarmEvent::NewListenAddr { address, .. } = b.select_next_some().await {
                break address;
            }
        };
        a.dial(addr).unwrap();
        loop {
            tokio::select! {
                e = a.select_next_some() => if matches!(e, SwarmEvent::ConnectionEstablished { .. }) { break },
                _ = b.select_next_some() => {}
            }
        }
        // Wanted by both: open past three idle timeouts.
        assert!(!closed_within(&mut a, &mut b, 3).await, "a wanted peer's connection closed");
        // Wanted by neither any more: closed after the idle timeout.
        keep_a.set([]);
        keep_b.set([]);
        assert!(closed_within(&mut a, &mut b, 5).await, "an unwanted connection stayed open");
    }
}
