//! The swarm and its event loop: listen, join through bootstrap peers (retrying with backoff
//! while none answers), keep the roster with the other
//! members (the member set the ring is built from), send URLs to the members that own their hosts
//! and take the ones sent to this node (validated, rate-limited, acknowledged once the node has
//! queued them; a peer that sends invalid data is banned), and publish what it knows as a
//! [`NetworkStatus`] and the current [`Ring`].
//!
//! One task owns the swarm; everything else talks to it through [`NetworkHandle`].

use crate::behaviour::{Behaviour, BehaviourEvent};
use crate::codec::{Codec, RequestBudget};
use crate::exchange::{RateLimit, WireUrl};
use crate::membership::Members;
use crate::reachability::{self, Reachability};
use crate::ring::Ring;
use crate::versions;
use futures::StreamExt;
use libp2p::identity::Keypair;
use libp2p::swarm::SwarmEvent;
use libp2p::{identify, noise, ping, tcp, yamux, Multiaddr, PeerId, Swarm};
use std::collections::{BTreeSet, HashSet};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;
use weft_page::PeerName;

/// The housekeeping tick (see `network/tick.rs`).
const TICK: Duration = Duration::from_secs(5);
/// URL deliveries to the node that may wait for it.
const INBOUND_QUEUE: usize = 64;
pub use conduct::BAN;
pub use dht::{DHT_FLOOD, DHT_STORES_PER_SEC};

/// Starts listening and joining (inside a tokio runtime); the task runs until
/// [`NetworkHandle::stop`].
pub fn start(key: Keypair, config: NetworkConfig) -> Result<Started, P2pError> {
    let peer_id = key.public().to_peer_id();
    // A node that listens on loopback only has nothing for a router to map: no gateway search
    // (it would send SSDP multicast out of the machine from a test on 127.0.0.1).
    let upnp = config.upnp && config.listen.iter().any(|a| !reachability::is_loopback(a));
    let (urls_codec, urls_budget) = Codec::new();
    let (search_codec, search_budget) = Codec::new();
    let (postings_codec, postings_budget) = Codec::new();
    let (docs_codec, docs_budget) = Codec::new();
    let (roster_codec, roster_budget) = Codec::new();
    let (records_codec, records_budget) = Codec::new();
    let settings = crate::behaviour::Settings {
        max_connections: config.max_connections,
        relay: config.relay.clone(),
        upnp,
        urls: urls_codec,
        search: search_codec,
        postings: postings_codec,
        docs: docs_codec,
        roster: roster_codec,
        records: records_codec,
    };
    // Members saved at the last run are asked for the roster too: a node whose bootstrap peers
    // are gone (or that never had any, the network's founder) finds its network through them.
    let saved_peers: Vec<(PeerId, Vec<Multiaddr>)> = (config.saved_peers.as_deref().map(saved::load))
        .unwrap_or_default()
        .into_iter()
        .filter(|(p, _)| *p != peer_id)
        .collect();
    let mut boot_peers: Vec<PeerId> = config.bootstrap.iter().map(|(p, _)| *p).filter(|p| *p != peer_id).collect();
    boot_peers.extend(saved_peers.iter().map(|(p, _)| *p));
    let may_found = config.bootstrap.is_empty();
    let roster = roster::State::new(key.clone(), config.vnodes, boot_peers, may_found, config.saved_peers.clone());
    let signer = key.clone();
    let record_signer = key.clone();
    let mut swarm = libp2p::SwarmBuilder::with_existing_identity(key)
        .with_tokio()
        .with_tcp(tcp::Config::default().nodelay(true), noise::Config::new, yamux::Config::default)
        .map_err(|e| P2pError::Build(e.to_string()))?
        .with_quic()
        .with_relay_client(noise::Config::new, yamux::Config::default)
        .map_err(|e| P2pError::Build(e.to_string()))?
        .with_behaviour(|key, relay_client| Behaviour::new(key, relay_client, settings).map_err(Into::into))
        .map_err(|e| P2pError::Build(e.to_string()))?
        .with_swarm_config(|c| c.with_idle_connection_timeout(crate::keep_alive::IDLE_TIMEOUT))
        .build();
    for addr in &config.listen {
        swarm
            .listen_on(addr.clone())
            .map_err(|e| P2pError::Listen { addr: addr.to_string(), reason: e.to_string() })?;
    }

    let reach = Reachability::new(config.private_addrs, upnp, std::time::Instant::now());
    let members = Members::new(peer_id, config.vnodes, std::time::Instant::now());
    let overlay = overlay::Overlay::new(peer_id, config.grid_from_members);
    let (status_tx, status) =
        watch::channel(NetworkStatus { peer_id: PeerName::from(peer_id.to_string()), ..Default::default() });
    let (ring_tx, ring) = watch::channel(Arc::new(members.ring().clone()));
    let (stop_tx, stop_rx) = watch::channel(false);
    let (urls_tx, urls_rx) = mpsc::unbounded_channel();
    let (commands_tx, commands_rx) = mpsc::unbounded_channel();
    let (inbound_tx, inbound) = mpsc::channel(INBOUND_QUEUE);
    let (acked_tx, acked) = mpsc::unbounded_channel();
    let (queries_tx, queries) = mpsc::channel(querying::INBOUND_QUERIES);
    let query_rate = RateLimit::new(config.search.peer_queries_per_sec);
    let (postings_tx, postings_rx) = mpsc::channel(postings::INBOUND_POSTINGS);
    let (docs_tx, docs_rx) = mpsc::channel(documents::INBOUND_READS);
    let cell_replicas = config.search.replicas.max(1);
    let postings =
        postings::State::new(signer, config.model.clone(), config.search.replicas, config.doc_replicas, postings_tx);
    let mut event_loop = EventLoop {
        querying: querying::State::new(queries_tx, query_rate),
        postings,
        documents: documents::State::new(docs_tx),
        swarm,
        config,
        members,
        peers: peers::Directory::default(),
        listen: BTreeSet::new(),
        reach,
        relaying: relays::Relaying::default(),
        connected: HashSet::new(),
        bootstrap: bootstrap::Bootstrap::default(),
        status: status_tx,
        ring: ring_tx,
        urls: urls::State::new(inbound_tx, acked_tx),
        conduct: conduct::Conduct::default(),
        dht: dht::State::new(record_signer),
        shown: Shown::default(),
        budgets: Budgets {
            urls: urls_budget,
            search: search_budget,
            postings: postings_budget,
            docs: docs_budget,
            roster: roster_budget,
            records: records_budget,
        },
        roster,
        overlay,
    };
    event_loop.dial_bootstrap();
    event_loop.dial_saved(saved_peers);
    let task = tokio::spawn(event_loop.run(stop_rx, urls_rx, commands_rx));
    let handle = NetworkHandle {
        peer_id,
        status,
        ring,
        stop: Arc::new(stop_tx),
        urls: urls_tx,
        commands: commands_tx,
        cell_replicas,
    };
    Ok(Started { handle, task, inbound, acked, queries, postings: postings_rx, documents: docs_rx })
}

/// The bytes each protocol's requests hold while they are read (see [`RequestBudget`]).
struct Budgets {
    urls: Arc<RequestBudget>,
    search: Arc<RequestBudget>,
    postings: Arc<RequestBudget>,
    docs: Arc<RequestBudget>,
    roster: Arc<RequestBudget>,
    records: Arc<RequestBudget>,
}

impl Budgets {
    fn all(&self) -> [&RequestBudget; 6] {
        [&self.urls, &self.search, &self.postings, &self.docs, &self.roster, &self.records]
    }
}

mod bootstrap;
mod conduct;
mod config;
mod connections;
mod dht;
mod documents;
mod handle;
mod overlay;
mod peers;
mod postings;
mod querying;
mod relays;
mod roster;
mod saved;
mod status;
mod tick;
mod urls;
pub use config::{tcp_target, NetworkConfig, P2pError};
pub use documents::{DocAnswer, DocInbound, DocsStatus};
use handle::Command;
pub use handle::{Inbound, NetworkHandle, Started};
pub use postings::{PostingsInbound, PostingsStatus};
pub use querying::{NetworkAnswer, PeerAnswer, SearchInbound, SearchStatus};
pub use roster::RosterStatus;
pub use status::{GridStatus, Joining, NetworkStatus};
use status::{Latencies, Shown};

struct EventLoop {
    swarm: Swarm<Behaviour>,
    /// Network search: queries in flight, answers to others' queries.
    querying: querying::State,
    /// Semantic placement: postings out to their cells' owners, and in for the cells held here.
    postings: postings::State,
    /// Documents read from their holders, and others' reads answered.
    documents: documents::State,
    config: NetworkConfig,
    /// The rings, following the roster.
    members: Members,
    /// What identify told of each peer met: where it listens, whether it offers a relay.
    peers: peers::Directory,
    listen: BTreeSet<Multiaddr>,
    /// Reachability: what this node advertises, DHT and relay roles, relay slots it needs.
    reach: Reachability,
    /// Relay slots held, the relay offered, and what reachability last applied.
    relaying: relays::Relaying,
    connected: HashSet<PeerId>,
    /// Joining through the bootstrap peers, and dialling them again while none answers.
    bootstrap: bootstrap::Bootstrap,
    status: watch::Sender<NetworkStatus>,
    ring: watch::Sender<Arc<Ring>>,
    /// URL exchange: batches out to their hosts' owners, batches in for the node to queue.
    urls: urls::State,
    /// Bans, stalls and peers refused for another protocol version.
    conduct: conduct::Conduct,
    /// The near-duplicate records this node holds and the lookups it waits on.
    dht: dht::State,
    /// The costly parts of the status, kept until what they show changes.
    shown: Shown,
    /// What requests being read hold, by protocol.
    budgets: Budgets,
    /// The roster: the member set, kept with the other members (see `network/roster.rs`).
    roster: roster::State,
    /// The grid URL batches are forwarded over at scale (see `network/overlay.rs`).
    overlay: overlay::Overlay,
}

impl EventLoop {
    async fn run(
        mut self,
        mut stop: watch::Receiver<bool>,
        mut urls: mpsc::UnboundedReceiver<(Vec<WireUrl>, bool, Vec<PeerId>)>,
        mut commands: mpsc::UnboundedReceiver<Command>,
    ) {
        let mut tick = tokio::time::interval(TICK);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut roster_tick = tokio::time::interval(Duration::from_secs(1));
        roster_tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            let retry = async {
                match self.bootstrap.retry_at() {
                    Some(t) => tokio::time::sleep_until(t).await,
                    None => std::future::pending().await,
                }
            };
            let next_due = self.urls.outbox.next_due();
            let flush = async {
                match next_due {
                    Some(t) => tokio::time::sleep_until(t.into()).await,
                    None => std::future::pending().await,
                }
            };
            let postings_due = self.postings.next_due();
            let postings_timer = async {
                match postings_due {
                    Some(t) => tokio::time::sleep_until(t.into()).await,
                    None => std::future::pending().await,
                }
            };
            let search_due = self.querying.next_due();
            let search_timer = async {
                match search_due {
                    Some(t) => tokio::time::sleep_until(t.into()).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                event = self.swarm.select_next_some() => self.on_event(event),
                _ = search_timer => self.on_search_timer(),
                _ = postings_timer => self.flush_postings(),
                Some((channel, refused, taken)) = self.postings.replies.next(), if !self.postings.replies.is_empty() => {
                    self.on_postings_stored(channel, refused, taken);
                }
                Some(checked) = self.postings.checking.next(), if !self.postings.checking.is_empty() => {
                    if let Some(checked) = checked {
                        self.on_posting_checked(checked);
                    }
                }
                Some((channel, found)) = self.documents.replies.next(), if !self.documents.replies.is_empty() => {
                    self.on_read_answered(channel, found);
                }
                Some((channel, reply)) = self.querying.replies.next(), if !self.querying.replies.is_empty() => {
                    let _ = self.swarm.behaviour_mut().search.send_response(channel, reply);
                }
                _ = tick.tick() => self.on_tick(),
                _ = roster_tick.tick() => self.roster_tick(),
                _ = retry => self.dial_bootstrap(),
                Some((batch, now, joined)) = urls.recv() => {
                    let me = *self.swarm.local_peer_id();
                    self.urls.outbox.mark_handoff(joined);
                    let mine = self.urls.outbox.route(batch, 0, self.members.ring(), &me, std::time::Instant::now());
                    self.deliver(mine, None, false);
                    self.flush(now);
                }
                _ = flush => self.flush(false),
                Some(command) = commands.recv() => self.on_command(command),
                Some(taken) = self.urls.replies.next(), if !self.urls.replies.is_empty() => self.answer(taken),
                _ = stop.changed() => {
                    self.save_members();
                    break;
                }
            }
            self.apply_reachability();
            self.publish_status();
        }
        tracing::info!("p2p stopped");
    }

    fn dial_bootstrap(&mut self) {
        if self.config.bootstrap.is_empty() {
            return;
        }
        self.bootstrap.dialing();
        for (peer, addr) in self.config.bootstrap.clone() {
            if peer == *self.swarm.local_peer_id() {
                continue;
            }
            self.swarm.behaviour_mut().addresses.add(peer, addr.clone());
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
        if self.config.bootstrap.is_empty() || self.config.bootstrap.iter().any(|(p, _)| self.connected.contains(p)) {
            return;
        }
        let shown = error.clone();
        if let Some(delay) = self.bootstrap.retry(error, Instant::now()) {
            let attempt = self.bootstrap.attempt();
            tracing::warn!(attempt, retry_in_secs = delay.as_secs(), "no bootstrap peer answers: {shown}");
        }
    }

    /// One event of the swarm, dispatched to the part of the loop it concerns.
    fn on_event(&mut self, event: SwarmEvent<BehaviourEvent>) {
        if let Some(peer) = match &event {
            SwarmEvent::Behaviour(event) => event.message_peer(),
            SwarmEvent::ConnectionEstablished { peer_id, .. } => Some(*peer_id),
            _ => None,
        } {
            self.swarm.behaviour().keep_alive.used(peer);
        }
        match event {
            SwarmEvent::ConnectionEstablished { peer_id, endpoint, connection_id, .. } => {
                self.on_connected(peer_id, &endpoint, connection_id)
            }
            SwarmEvent::ConnectionClosed { peer_id, num_established, connection_id, cause, .. } => {
                self.on_disconnected(peer_id, num_established, connection_id, cause.map(|c| c.to_string()))
            }
            SwarmEvent::OutgoingConnectionError { peer_id: Some(peer), error, .. } => {
                self.on_dial_failed(peer, error.to_string())
            }
            SwarmEvent::Behaviour(BehaviourEvent::Identify(identify::Event::Received { peer_id, info, .. })) => {
                self.on_identified(peer_id, info)
            }
            SwarmEvent::Behaviour(BehaviourEvent::Ping(ping::Event { peer, result, .. })) => match result {
                Ok(_) => self.members.alive(&peer),
                Err(e) => tracing::debug!(%peer, "ping failed: {e}"),
            },
            SwarmEvent::Behaviour(BehaviourEvent::Urls(event)) => self.on_urls(event),
            SwarmEvent::Behaviour(BehaviourEvent::Search(event)) => self.on_search(event),
            SwarmEvent::Behaviour(BehaviourEvent::Postings(event)) => self.on_postings(event),
            SwarmEvent::Behaviour(BehaviourEvent::Docs(event)) => self.on_docs(event),
            SwarmEvent::Behaviour(BehaviourEvent::Roster(event)) => self.on_roster(event),
            SwarmEvent::Behaviour(BehaviourEvent::Records(event)) => self.on_records(event),
            SwarmEvent::Behaviour(BehaviourEvent::Addresses(crate::address_book::Event::Unreached(peer))) => {
                self.unreached(peer)
            }
            SwarmEvent::Behaviour(BehaviourEvent::Relay(event)) => self.on_relay_served(event),
            // Listen and external addresses, AutoNAT, relay slots, hole punching, UPnP.
            other => self.on_reachability_event(other),
        }
    }

    fn on_command(&mut self, command: Command) {
        match command {
            Command::FindDuplicate { hash, max_distance, url, reply } => {
                self.find_duplicate(hash, max_distance, url, reply)
            }
            Command::Leave => {
                tracing::info!(members = self.members.len().saturating_sub(1), "leaving the network");
                self.members.leave(std::time::Instant::now());
                self.roster_leave();
                self.ring.send_replace(Arc::new(self.members.ring().clone()));
                // Batches already waiting go to the new owners now.
                self.flush(true);
            }
            Command::Search { request, fanout, reply } => self.start_search(request, fanout, reply),
            Command::PublishPostings { postings, withdrawals, replicas } => {
                self.publish_postings(postings, withdrawals, replicas)
            }
            Command::HandOverReplicas { to, replicas } => self.hand_over_replicas(to, replicas),
            Command::AskDocument { peer, ask, reply } => self.ask_document(peer, ask, reply),
            Command::HandOverPostings { to, postings } => self.hand_over_postings(to, postings),
            Command::SendSecondCopies { peer, urls, reply } => self.send_second_copies(peer, urls, reply),
            Command::LeftWithLastWord { peer, reply } => {
                let event = self.roster.node.roster().event_of(&peer);
                let _ = reply.send(event.is_some_and(|e| matches!(e.what, crate::roster::event::What::Left)));
            }
            Command::Publish { simhash, url, time } => self.publish_record(simhash, url, time),
        }
    }

    /// A request from `peer` was not one: oversized or undecodable bans at once; a stall
    /// bans at the [`conduct::MAX_STALLS`]th within [`BAN`] (a loaded box stalls honest senders too).
    fn refused(&mut self, peer: PeerId, why: &crate::codec::Refusal) {
        if let crate::codec::Refusal::Stalled { .. } = why {
            if let conduct::Stall::Counted(stalls) = self.conduct.stalled(peer, std::time::Instant::now()) {
                tracing::info!(%peer, stalls, "a request stalled: {why}");
                return;
            }
        }
        self.ban(peer, &why.to_string());
    }

    /// Bans `peer` for [`BAN`]: its connections close and new ones are refused.
    fn ban(&mut self, peer: PeerId, why: &str) {
        tracing::warn!(%peer, "peer banned for {} s: {why}", BAN.as_secs());
        self.conduct.ban(peer, std::time::Instant::now());
        self.swarm.behaviour_mut().blocked.block_peer(peer);
    }

    /// Refuses a peer that speaks another version: disconnected, never asked for the roster, blocked
    /// for [`versions::REFUSED_FOR`] (see `crate::versions`).
    fn refuse_version(&mut self, peer: PeerId, other: versions::OtherVersion) {
        if self.conduct.refuse_version(peer, other.clone(), std::time::Instant::now()) {
            tracing::warn!(%peer, "peer refused for {} s: {other}", versions::REFUSED_FOR.as_secs());
        }
        self.swarm.behaviour_mut().blocked.block_peer(peer);
        let _ = self.swarm.disconnect_peer_id(peer);
    }

    fn add_peer_address(&mut self, peer: PeerId, addr: Multiaddr) {
        if peer == *self.swarm.local_peer_id() {
            return;
        }
        let via = self.reach.remote_of(&peer);
        if reachability::usable(&addr, via.as_ref(), self.config.private_addrs) {
            self.swarm.behaviour_mut().addresses.add(peer, addr);
        }
    }
}
