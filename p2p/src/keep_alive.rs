//! Which idle connections stay open, and for how long after their last message.
//!
//! - The peers the roster keeps (`RosterNode::kept`: its view, the members it watches and those
//!   that watch it, the newcomers it would sponsor) and, at scale, this node's grid links
//!   (`network/overlay.rs`) stay open while idle, for as long as they are wanted.
//! - Every other connection — a posting, a record, a copy or a question to an owner met once —
//!   stays open [`LINGER`] after its last message while the network is small (the grid not in
//!   use), and closes [`IDLE_TIMEOUT`] after its last stream at scale.
//!
//! Why: the data plane talks to whoever owns a key, which at thousands of members is someone
//! new for most pages; kept for seconds, those connections would pile up past 64 (each of a
//! page's ~23 messages goes to a member met for the first time in a while). Closing them at
//! once costs a handshake a message, which the grid saves for the small ones (URLs). On a small
//! network a member meets every other often, so keeping them a while saves the handshakes and
//! holds few. The roster's must stay: a monitor notices a departure by its connection closing,
//! and a sponsor counts a newcomer's probation from their meeting.

use libp2p::core::transport::PortUse;
use libp2p::core::upgrade::DeniedUpgrade;
use libp2p::core::Endpoint;
use libp2p::swarm::handler::{ConnectionEvent, ConnectionHandlerEvent, SubstreamProtocol};
use libp2p::swarm::{
    ConnectionDenied, ConnectionHandler, ConnectionId, FromSwarm, NetworkBehaviour, THandler, THandlerInEvent,
    THandlerOutEvent, ToSwarm,
};
use libp2p::{Multiaddr, PeerId};
use std::collections::{HashMap, HashSet};
use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, RwLock};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

/// The swarm's idle timeout: how long a connection nobody keeps stays open after its last
/// stream closes. Half a second holds a page's postings, record and copies to one owner (they
/// leave together) and a search's answers, and at a page a second keeps a member's short-lived
/// connections in the tens (the data-plane model, `weft-simnet data-plane`).
pub const IDLE_TIMEOUT: Duration = Duration::from_millis(500);

/// How long a connection stays open after its last message while the network is small:
/// a member there talks to the same few owners again within seconds.
pub const LINGER: Duration = Duration::from_secs(20);

/// Which peers' connections are kept while idle, and the lingering ones' last messages; shared
/// with every connection's handler.
#[derive(Debug, Clone, Default)]
pub struct KeepAlive {
    state: Arc<RwLock<Kept>>,
}

#[derive(Debug)]
struct Kept {
    peers: HashSet<PeerId>,
    /// How long a connection stays after its last message (zero: [`IDLE_TIMEOUT`] after its
    /// last stream).
    linger: Duration,
    /// The last message with each peer, while it lingers.
    used: HashMap<PeerId, Instant>,
}

impl Default for Kept {
    /// Before the ring is known, a network is taken to be small.
    fn default() -> Kept {
        Kept { peers: HashSet::new(), linger: LINGER, used: HashMap::new() }
    }
}

impl Kept {
    fn until(&self, peer: &PeerId) -> Option<Instant> {
        self.used.get(peer).map(|at| *at + self.linger)
    }
}

impl KeepAlive {
    /// From now on, these peers' connections are kept (and no others'), and others stay
    /// `linger` after their last message.
    pub fn set(&self, peers: impl IntoIterator<Item = PeerId>, linger: Duration) {
        let mut state = self.state.write().unwrap_or_else(|e| e.into_inner());
        state.peers = peers.into_iter().collect();
        state.linger = linger;
        let now = Instant::now();
        state.used.retain(|_, at| *at + linger > now);
    }

    /// A message went to or came from `peer`: its connection lingers from now.
    pub fn used(&self, peer: PeerId) {
        // At scale nothing lingers: no write lock on every message while handlers read.
        if self.state.read().unwrap_or_else(|e| e.into_inner()).linger.is_zero() {
            return;
        }
        let mut state = self.state.write().unwrap_or_else(|e| e.into_inner());
        if !state.linger.is_zero() {
            state.used.insert(peer, Instant::now());
        }
    }

    /// Whether `peer`'s connections are kept while idle at `now`.
    pub fn keeps(&self, peer: &PeerId, now: Instant) -> bool {
        let state = self.state.read().unwrap_or_else(|e| e.into_inner());
        state.peers.contains(peer) || state.until(peer).is_some_and(|until| until > now)
    }

    /// When `peer`'s connections stop lingering, if they linger now.
    fn lingers_until(&self, peer: &PeerId, now: Instant) -> Option<Instant> {
        let state = self.state.read().unwrap_or_else(|e| e.into_inner());
        state.until(peer).filter(|until| *until > now)
    }

    fn handler(&self, peer: PeerId) -> Handler {
        Handler { peer, kept: self.clone(), wake: None }
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

/// One connection's say in whether it stays open: kept while its peer is wanted or lingers. It
/// speaks no protocol.
pub struct Handler {
    peer: PeerId,
    kept: KeepAlive,
    /// Wakes the connection when its linger ends, so it asks again whether to stay (a
    /// connection asks only when polled).
    wake: Option<Pin<Box<tokio::time::Sleep>>>,
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
        self.kept.keeps(&self.peer, Instant::now())
    }

    fn on_behaviour_event(&mut self, event: Self::FromBehaviour) {
        match event {}
    }

    fn poll(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<ConnectionHandlerEvent<Self::OutboundProtocol, (), Self::ToBehaviour>> {
        match self.kept.lingers_until(&self.peer, Instant::now()) {
            Some(until) => {
                let until = tokio::time::Instant::from_std(until);
                let wake = self.wake.get_or_insert_with(|| Box::pin(tokio::time::sleep_until(until)));
                if wake.deadline() != until {
                    wake.as_mut().reset(until);
                }
                // Pending until then; once it fires, the next poll finds the linger over or moved.
                let _ = wake.as_mut().poll(cx);
            }
            None => self.wake = None,
        }
        Poll::Pending
    }

    fn on_connection_event(&mut self, _: ConnectionEvent<Self::InboundProtocol, Self::OutboundProtocol>) {}
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt;
    use libp2p::swarm::behaviour::toggle::Toggle;
    use libp2p::swarm::{NetworkBehaviour, SwarmEvent};
    use libp2p::{noise, ping, tcp, yamux, Swarm};

    #[derive(NetworkBehaviour)]
    struct Both {
        keep_alive: KeepAlive,
        ping: Toggle<ping::Behaviour>,
    }

    /// A real swarm on TCP with a one-second idle timeout. With `ping`, it pings every 200 ms,
    /// so its connections are polled often (a handler is asked whether to keep its connection
    /// when polled); without, only when something wakes them.
    fn swarm(keep_alive: KeepAlive, ping: bool) -> Swarm<Both> {
        libp2p::SwarmBuilder::with_new_identity()
            .with_tokio()
            .with_tcp(tcp::Config::default(), noise::Config::new, yamux::Config::default)
            .unwrap()
            .with_behaviour(|_| Both {
                keep_alive,
                ping: Toggle::from(
                    ping.then(|| ping::Behaviour::new(ping::Config::new().with_interval(Duration::from_millis(200)))),
                ),
            })
            .unwrap()
            .with_swarm_config(|c| c.with_idle_connection_timeout(Duration::from_secs(1)))
            .build()
    }

    /// Runs both swarms for `secs` seconds or until a connection closes; whether one did.
    async fn closed_within(a: &mut Swarm<Both>, b: &mut Swarm<Both>, secs: f64) -> bool {
        let until = tokio::time::sleep(Duration::from_secs_f64(secs));
        tokio::pin!(until);
        loop {
            tokio::select! {
                _ = &mut until => return false,
                e = a.select_next_some() => if matches!(e, SwarmEvent::ConnectionClosed { .. }) { return true },
                e = b.select_next_some() => if matches!(e, SwarmEvent::ConnectionClosed { .. }) { return true },
            }
        }
    }

    async fn connected(a: &mut Swarm<Both>, b: &mut Swarm<Both>) {
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
    }

    #[tokio::test]
    async fn a_connection_to_a_wanted_peer_stays_open_while_idle_and_others_close() {
        let (keep_a, keep_b) = (KeepAlive::default(), KeepAlive::default());
        let (mut a, mut b) = (swarm(keep_a.clone(), true), swarm(keep_b.clone(), true));
        keep_a.set([*b.local_peer_id()], Duration::ZERO);
        keep_b.set([*a.local_peer_id()], Duration::ZERO);
        connected(&mut a, &mut b).await;
        // Wanted by both: open past three idle timeouts.
        assert!(!closed_within(&mut a, &mut b, 3.0).await, "a wanted peer's connection closed");
        // Wanted by neither any more: closed after the idle timeout.
        keep_a.set([], Duration::ZERO);
        keep_b.set([], Duration::ZERO);
        assert!(closed_within(&mut a, &mut b, 5.0).await, "an unwanted connection stayed open");
    }

    #[tokio::test]
    async fn a_connection_lingers_after_its_last_message_and_closes_when_nothing_else_wakes_it() {
        let (keep_a, keep_b) = (KeepAlive::default(), KeepAlive::default());
        // No pings: only the handler's own wake makes the connection ask again.
        let (mut a, mut b) = (swarm(keep_a.clone(), false), swarm(keep_b.clone(), false));
        let linger = Duration::from_secs(3);
        keep_a.set([], linger);
        keep_b.set([], linger);
        let (pa, pb) = (*a.local_peer_id(), *b.local_peer_id());
        keep_a.used(pb);
        keep_b.used(pa);
        connected(&mut a, &mut b).await;
        // Open past the idle timeout while it lingers; a message moves the linger on.
        assert!(!closed_within(&mut a, &mut b, 1.5).await, "closed while lingering");
        keep_a.used(pb);
        keep_b.used(pa);
        assert!(!closed_within(&mut a, &mut b, 2.0).await, "closed though a message moved its linger on");
        // Then closed soon after the linger and the idle timeout.
        assert!(closed_within(&mut a, &mut b, 3.0).await, "a connection stayed open past its linger");
        // At scale (no linger), a message keeps nothing.
        keep_a.set([], Duration::ZERO);
        keep_a.used(pb);
        assert!(!keep_a.keeps(&pb, Instant::now()));
    }
}
