//! The swarm and its event loop: listen, join through bootstrap peers (retrying with backoff
//! while none answers), keep Kademlia's routing table fresh, announce this node on the
//! membership topic and listen to the others, and publish what it knows as a
//! [`NetworkStatus`] and the current [`Ring`].
//!
//! One task owns the swarm; everything else talks to it through [`NetworkHandle`].

use crate::behaviour::{Behaviour, BehaviourEvent};
use crate::membership::{Change, Heartbeat, Members, TOPIC};
use crate::ring::Ring;
use futures::StreamExt;
use libp2p::identity::Keypair;
use libp2p::multiaddr::Protocol;
use libp2p::swarm::SwarmEvent;
use libp2p::{gossipsub, identify, kad, noise, tcp, yamux, Multiaddr, PeerId, Swarm};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeSet, HashSet};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use tokio::time::Instant;
use weft_config::P2pConfig;

/// First delay before dialling the bootstrap peers again when none answered; doubles up to
/// [`MAX_RETRY`].
const FIRST_RETRY: Duration = Duration::from_secs(1);
const MAX_RETRY: Duration = Duration::from_secs(60);

#[derive(Debug, thiserror::Error)]
pub enum P2pError {
    #[error("p2p.{key}: {value:?} is not a multiaddr: {reason}")]
    BadAddr { key: &'static str, value: String, reason: String },
    #[error("p2p.bootstrap: {0:?} does not end in /p2p/<peer id> (copy the address a running node logs)")]
    NoPeerId(String),
    #[error("cannot listen on {addr}: {reason}")]
    Listen { addr: String, reason: String },
    #[error("cannot build the libp2p swarm: {0}")]
    Build(String),
}

/// The network settings, parsed.
#[derive(Debug, Clone)]
pub struct NetworkConfig {
    pub listen: Vec<Multiaddr>,
    pub bootstrap: Vec<(PeerId, Multiaddr)>,
    pub vnodes: usize,
    pub heartbeat: Duration,
    pub missed_heartbeats: u32,
    pub refresh: Duration,
    pub max_connections: u32,
    pub capacity: u32,
}

impl NetworkConfig {
    pub fn from_config(c: &P2pConfig) -> Result<NetworkConfig, P2pError> {
        let parse = |key: &'static str, s: &String| {
            s.parse::<Multiaddr>().map_err(|e| P2pError::BadAddr { key, value: s.clone(), reason: e.to_string() })
        };
        let listen = c.listen.iter().map(|s| parse("listen", s)).collect::<Result<_, _>>()?;
        let mut bootstrap = Vec::new();
        for s in &c.bootstrap {
            let addr = parse("bootstrap", s)?;
            match addr.iter().last() {
                Some(Protocol::P2p(peer)) => bootstrap.push((peer, addr)),
                _ => return Err(P2pError::NoPeerId(s.clone())),
            }
        }
        Ok(NetworkConfig {
            listen,
            bootstrap,
            vnodes: c.vnodes,
            heartbeat: Duration::from_secs(c.heartbeat_secs),
            missed_heartbeats: c.missed_heartbeats,
            refresh: Duration::from_secs(c.bootstrap_interval_secs),
            max_connections: c.max_connections,
            capacity: c.capacity,
        })
    }
}

/// Where joining the network stands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case", tag = "state")]
pub enum Joining {
    /// No bootstrap peers configured: this node is the first (others join through it).
    #[default]
    First,
    Connecting,
    /// Connected to at least one bootstrap peer.
    Joined,
    /// No bootstrap peer answered; dialling again after a backoff.
    Retrying {
        attempt: u32,
        next_in_secs: u64,
        last_error: String,
    },
}

/// `/status`'s view of the network.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct NetworkStatus {
    pub peer_id: String,
    /// Full addresses, `/p2p/<peer id>` included: what another volunteer bootstraps from.
    pub listen_addrs: Vec<String>,
    pub connected_peers: usize,
    /// Members, this node included, sorted by peer id.
    pub members: Vec<String>,
    /// This node's share of the ring's hash space (≈ of all hosts).
    pub ring_share: f64,
    pub joining: Joining,
    /// Heartbeats rejected (too large, undecodable, signed by another peer).
    pub rejected_heartbeats: u64,
}

/// Talks to the running network task.
#[derive(Clone)]
pub struct NetworkHandle {
    peer_id: PeerId,
    status: watch::Receiver<NetworkStatus>,
    ring: watch::Receiver<Arc<Ring>>,
    stop: Arc<watch::Sender<bool>>,
}

impl NetworkHandle {
    pub fn peer_id(&self) -> PeerId {
        self.peer_id
    }

    pub fn status(&self) -> NetworkStatus {
        self.status.borrow().clone()
    }

    /// The ring of the current member set.
    pub fn ring(&self) -> Arc<Ring> {
        self.ring.borrow().clone()
    }

    /// Waits until `check` holds for the status (or the network stops).
    pub async fn wait_for(&self, mut check: impl FnMut(&NetworkStatus) -> bool) {
        let mut rx = self.status.clone();
        let _ = rx.wait_for(|s| check(s)).await;
    }

    /// Stops the network task.
    pub fn stop(&self) {
        let _ = self.stop.send(true);
    }
}

/// Starts listening and joining; the returned task runs until [`NetworkHandle::stop`].
pub async fn start(
    key: Keypair,
    config: NetworkConfig,
) -> Result<(NetworkHandle, tokio::task::JoinHandle<()>), P2pError> {
    let peer_id = key.public().to_peer_id();
    let (max, refresh) = (config.max_connections, config.refresh);
    let mut swarm = libp2p::SwarmBuilder::with_existing_identity(key)
        .with_tokio()
        .with_tcp(tcp::Config::default().nodelay(true), noise::Config::new, yamux::Config::default)
        .map_err(|e| P2pError::Build(e.to_string()))?
        .with_quic()
        .with_behaviour(|key| Behaviour::new(key, max, refresh).map_err(Into::into))
        .map_err(|e| P2pError::Build(e.to_string()))?
        .with_swarm_config(|c| c.with_idle_connection_timeout(Duration::from_secs(300)))
        .build();
    for addr in &config.listen {
        swarm
            .listen_on(addr.clone())
            .map_err(|e| P2pError::Listen { addr: addr.to_string(), reason: e.to_string() })?;
    }
    let topic = gossipsub::IdentTopic::new(TOPIC);
    swarm.behaviour_mut().gossipsub.subscribe(&topic).map_err(|e| P2pError::Build(e.to_string()))?;

    let me = Heartbeat { peer: peer_id.to_string(), addrs: Vec::new(), capacity: config.capacity };
    let ttl = config.heartbeat * config.missed_heartbeats;
    let members = Members::new(me, ttl, config.vnodes);
    let (status_tx, status) = watch::channel(NetworkStatus { peer_id: peer_id.to_string(), ..Default::default() });
    let (ring_tx, ring) = watch::channel(Arc::new(members.ring().clone()));
    let (stop_tx, stop_rx) = watch::channel(false);
    let mut event_loop = EventLoop {
        swarm,
        config,
        topic,
        members,
        listen: BTreeSet::new(),
        connected: HashSet::new(),
        joining: Joining::First,
        retry_at: None,
        attempt: 0,
        rejected: 0,
        status: status_tx,
        ring: ring_tx,
    };
    event_loop.dial_bootstrap();
    let task = tokio::spawn(event_loop.run(stop_rx));
    Ok((NetworkHandle { peer_id, status, ring, stop: Arc::new(stop_tx) }, task))
}

struct EventLoop {
    swarm: Swarm<Behaviour>,
    config: NetworkConfig,
    topic: gossipsub::IdentTopic,
    members: Members,
    listen: BTreeSet<Multiaddr>,
    connected: HashSet<PeerId>,
    joining: Joining,
    retry_at: Option<Instant>,
    attempt: u32,
    rejected: u64,
    status: watch::Sender<NetworkStatus>,
    ring: watch::Sender<Arc<Ring>>,
}

impl EventLoop {
    async fn run(mut self, mut stop: watch::Receiver<bool>) {
        let mut heartbeat = tokio::time::interval(self.config.heartbeat);
        heartbeat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            let retry = async {
                match self.retry_at {
                    Some(t) => tokio::time::sleep_until(t).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                event = self.swarm.select_next_some() => self.on_event(event),
                _ = heartbeat.tick() => self.on_heartbeat(),
                _ = retry => {
                    self.retry_at = None;
                    self.dial_bootstrap();
                }
                _ = stop.changed() => break,
            }
            self.publish_status();
        }
        tracing::info!("p2p stopped");
    }

    fn dial_bootstrap(&mut self) {
        if self.config.bootstrap.is_empty() {
            return;
        }
        if matches!(self.joining, Joining::First) {
            self.joining = Joining::Connecting;
        }
        for (peer, addr) in self.config.bootstrap.clone() {
            if peer == *self.swarm.local_peer_id() {
                continue;
            }
            self.swarm.behaviour_mut().kad.add_address(&peer, addr.clone());
            if let Err(e) = self.swarm.dial(addr.clone()) {
                tracing::debug!(%addr, "dial failed: {e}");
            }
        }
    }

    fn is_bootstrap(&self, peer: &PeerId) -> bool {
        self.config.bootstrap.iter().any(|(p, _)| p == peer)
    }

    /// Schedules the next round of bootstrap dials while no bootstrap peer is connected.
    fn schedule_retry(&mut self, error: String) {
        if self.config.bootstrap.is_empty()
            || self.retry_at.is_some()
            || self.config.bootstrap.iter().any(|(p, _)| self.connected.contains(p))
        {
            return;
        }
        let delay = FIRST_RETRY.saturating_mul(1 << self.attempt.min(10)).min(MAX_RETRY);
        self.attempt += 1;
        self.retry_at = Some(Instant::now() + delay);
        tracing::warn!(attempt = self.attempt, retry_in_secs = delay.as_secs(), "no bootstrap peer answers: {error}");
        self.joining = Joining::Retrying { attempt: self.attempt, next_in_secs: delay.as_secs(), last_error: error };
    }

    fn on_event(&mut self, event: SwarmEvent<BehaviourEvent>) {
        match event {
            SwarmEvent::NewListenAddr { address, .. } => {
                let full = address.clone().with_p2p(*self.swarm.local_peer_id()).unwrap_or(address.clone());
                tracing::info!(addr = %full, "p2p listening (bootstrap other nodes from this address)");
                self.listen.insert(address);
                self.update_me();
            }
            SwarmEvent::ExpiredListenAddr { address, .. } => {
                self.listen.remove(&address);
                self.update_me();
            }
            SwarmEvent::ConnectionEstablished { peer_id, endpoint, .. } => {
                self.connected.insert(peer_id);
                if self.is_bootstrap(&peer_id) && !matches!(self.joining, Joining::Joined) {
                    tracing::info!(peer = %peer_id, addr = %endpoint.get_remote_address(), "joined the network");
                    self.joining = Joining::Joined;
                    self.attempt = 0;
                    self.retry_at = None;
                    if let Err(e) = self.swarm.behaviour_mut().kad.bootstrap() {
                        tracing::debug!("kademlia bootstrap: {e}");
                    }
                }
            }
            SwarmEvent::ConnectionClosed { peer_id, num_established: 0, .. } => {
                self.connected.remove(&peer_id);
                if self.connected.is_empty() && !self.config.bootstrap.is_empty() {
                    self.joining = Joining::Connecting;
                    self.schedule_retry("every connection closed".into());
                }
            }
            SwarmEvent::OutgoingConnectionError { peer_id: Some(peer), error, .. } if self.is_bootstrap(&peer) => {
                self.schedule_retry(error.to_string());
            }
            SwarmEvent::Behaviour(BehaviourEvent::Identify(identify::Event::Received { peer_id, info, .. })) => {
                // What a peer says it listens on goes into the routing table, so Kademlia
                // queries can reach it.
                for addr in info.listen_addrs.into_iter().take(16) {
                    self.swarm.behaviour_mut().kad.add_address(&peer_id, addr);
                }
            }
            SwarmEvent::Behaviour(BehaviourEvent::Gossipsub(gossipsub::Event::Message { message, .. })) => {
                self.on_gossip(message);
            }
            SwarmEvent::Behaviour(BehaviourEvent::Kad(kad::Event::OutboundQueryProgressed {
                result: kad::QueryResult::Bootstrap(result),
                ..
            })) => match result {
                Ok(ok) => tracing::debug!(remaining = ok.num_remaining, "kademlia bootstrap step"),
                Err(e) => tracing::debug!("kademlia bootstrap: {e:?}"),
            },
            _ => {}
        }
    }

    fn on_gossip(&mut self, message: gossipsub::Message) {
        if message.topic != self.topic.hash() {
            return;
        }
        let Some(source) = message.source else { return };
        match Heartbeat::decode(&message.data, &source.to_string()) {
            Ok(hb) => {
                if let Some(change) = self.members.observe(hb, std::time::Instant::now()) {
                    self.on_change(change);
                }
            }
            Err(e) => {
                self.rejected += 1;
                tracing::debug!(peer = %source, "heartbeat rejected: {e}");
            }
        }
    }

    fn on_heartbeat(&mut self) {
        let me = self.members.me().encode();
        if let Err(e) = self.swarm.behaviour_mut().gossipsub.publish(self.topic.clone(), me) {
            // Alone in the network (InsufficientPeers) is normal for the first node.
            tracing::trace!("heartbeat not published: {e}");
        }
        for change in self.members.expire(std::time::Instant::now()) {
            self.on_change(change);
        }
    }

    fn on_change(&mut self, change: Change) {
        match &change {
            Change::Joined(peer) => tracing::info!(peer, members = self.members.len(), "member joined"),
            Change::Left(peer) => tracing::info!(peer, members = self.members.len(), "member left"),
        }
        self.ring.send_replace(Arc::new(self.members.ring().clone()));
    }

    fn update_me(&mut self) {
        let mut me = self.members.me().clone();
        me.addrs = self.listen.iter().map(ToString::to_string).collect();
        self.members.set_me(me);
    }

    fn publish_status(&mut self) {
        let local = *self.swarm.local_peer_id();
        let status = NetworkStatus {
            peer_id: local.to_string(),
            listen_addrs: self
                .listen
                .iter()
                .map(|a| a.clone().with_p2p(local).unwrap_or_else(|a| a).to_string())
                .collect(),
            connected_peers: self.connected.len(),
            members: self.members.peers(),
            ring_share: self.members.ring().share(&local.to_string()),
            joining: self.joining.clone(),
            rejected_heartbeats: self.rejected,
        };
        self.status.send_if_modified(|s| {
            if *s == status {
                false
            } else {
                *s = status;
                true
            }
        });
    }
}
