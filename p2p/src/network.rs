//! The swarm and its event loop: listen, join through bootstrap peers (retrying with backoff
//! while none answers), keep Kademlia's routing table fresh, announce this node on the
//! membership topic and listen to the others, send URLs to the members that own their hosts
//! and take the ones sent to this node (validated, rate-limited, acknowledged once the node has
//! queued them; a peer that sends invalid data is banned), and publish what it knows as a
//! [`NetworkStatus`] and the current [`Ring`].
//!
//! One task owns the swarm; everything else talks to it through [`NetworkHandle`].

use crate::behaviour::{Behaviour, BehaviourEvent};
use crate::codec::{Codec, Frame, RequestBudget};
use crate::exchange::{
    check_batch, check_url, BatchReply, InFlight, Outbox, RateLimit, UrlBatch, UrlKind, WireUrl, BUSY_DELAY, MAX_HOPS,
    NOT_MEMBER_DELAY,
};
use crate::membership::{Change, Heartbeat, Members, TOPIC};
use crate::reachability::{self, Reachability, ReachabilityStatus};
use crate::records::{self, DupEntry};
use crate::ring::Ring;
use crate::search::SearchRequest;
use futures::future::BoxFuture;
use futures::stream::FuturesUnordered;
use futures::StreamExt;
use libp2p::core::transport::ListenerId;
use libp2p::identity::Keypair;
use libp2p::multiaddr::Protocol;
use libp2p::request_response::{self, OutboundRequestId, ResponseChannel};
use libp2p::swarm::SwarmEvent;
use libp2p::{autonat, dcutr, gossipsub, identify, kad, noise, relay, tcp, upnp, yamux, Multiaddr, PeerId, Swarm};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot, watch};
use tokio::time::Instant;
use weft_config::P2pConfig;

/// First delay before dialling the bootstrap peers again when none answered; doubles up to
/// [`MAX_RETRY`].
const FIRST_RETRY: Duration = Duration::from_secs(1);
const MAX_RETRY: Duration = Duration::from_secs(60);
/// How long a peer that sent invalid data stays banned.
pub const BAN: Duration = Duration::from_secs(600);
/// URL deliveries to the node that may wait for it.
const INBOUND_QUEUE: usize = 64;
/// DHT stores (records, provider announcements) one peer may ask for per second on average
/// (burst of twice that): a node publishing four records per page it indexes stays far below.
pub const DHT_STORES_PER_SEC: f64 = 100.0;
/// Stores over the rate that get a peer banned.
pub const DHT_FLOOD: u32 = 1000;

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
    /// Accept URLs whose host is a private IP literal (tests, intranets); mirrors
    /// `fetch.allow_private_networks`.
    pub allow_private: bool,
    /// Network search: deadline, hedging, multi-probe, per-peer query rate.
    pub search: weft_config::SearchConfig,
    /// Reachability (see [`crate::reachability`]): advertise private addresses anyway, map a
    /// port with UPnP, how many relays to reserve behind NAT, how long to wait for AutoNAT, and
    /// the limits of the relay this node offers while public.
    pub private_addrs: bool,
    pub upnp: bool,
    pub relays: usize,
    pub autonat_timeout: Duration,
    pub relay: weft_config::RelayConfig,
    /// Unix seconds since this node has been a member without a break (its heartbeat says so;
    /// its ring points grow with it: see [`crate::membership`]). Now, unless the node kept it
    /// across a short restart.
    pub joined: u64,
    /// How long after the start the members met are taken at their word about when they
    /// joined ([`crate::membership::SETTLE`]; a test of admission shortens it).
    pub settle: Duration,
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
            allow_private: false,
            search: weft_config::SearchConfig::default(),
            private_addrs: c.private_addrs,
            upnp: c.upnp,
            relays: c.relays,
            autonat_timeout: Duration::from_secs(c.autonat_timeout_secs),
            relay: c.relay.clone(),
            joined: crate::membership::unix_now(),
            settle: crate::membership::SETTLE,
        })
    }
}

/// The host and TCP port a multiaddr dials (`/ip4/1.2.3.4/tcp/7701/...`, `/dns4/name/tcp/...`),
/// for checking reachability outside libp2p (`weft doctor`).
pub fn tcp_target(addr: &Multiaddr) -> Option<(String, u16)> {
    let mut host = None;
    for p in addr.iter() {
        match p {
            Protocol::Ip4(ip) => host = Some(ip.to_string()),
            Protocol::Ip6(ip) => host = Some(ip.to_string()),
            Protocol::Dns(h) | Protocol::Dns4(h) | Protocol::Dns6(h) => host = Some(h.to_string()),
            Protocol::Tcp(port) => return host.map(|h| (h, port)),
            _ => {}
        }
    }
    None
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
    /// The part of its full ring points this node holds: a newcomer to an older network
    /// starts at a quarter and grows to all of them (see [`crate::membership`]).
    pub admitted: f64,
    pub joining: Joining,
    /// Heartbeats rejected (too large, undecodable, signed by another peer).
    pub rejected_heartbeats: u64,
    /// Peers heard of (their heartbeats arrived) that this node has not met yet: not members
    /// until it has had a connection with them.
    pub member_candidates: usize,
    /// URLs other members acknowledged from this node.
    pub urls_sent: u64,
    /// URLs received for this node's hosts and queued (or already seen).
    pub urls_received: u64,
    /// URLs received for another member's hosts and passed on.
    pub urls_forwarded: u64,
    /// URLs received and dropped (bad scheme, too long, private address, hop limit).
    pub urls_rejected: u64,
    /// URLs waiting to be sent or retried.
    pub urls_waiting: u64,
    /// URLs sent and not yet acknowledged.
    pub urls_in_flight: u64,
    /// Batches refused outright (malformed, oversized, too many URLs); each bans its sender.
    pub batches_refused: u64,
    /// Batches answered `Busy` because their sender was over its rate.
    pub batches_rate_limited: u64,
    /// Bytes held now by requests (URL batches, search requests) still being read.
    pub requests_buffered_bytes: u64,
    /// Requests dropped while being read because those being read held their budget.
    pub requests_cut: u64,
    /// Batches answered `NotMember`: their sender is not a member here (a stranger, or a
    /// node whose heartbeat has not arrived yet; it announces itself and retries).
    pub batches_not_member: u64,
    /// URLs sent as done by a peer that did not own their host, now or before the last
    /// membership changes: refused, so a peer cannot keep pages from being fetched.
    pub done_refused: u64,
    pub banned_peers: usize,
    /// Near-duplicate lookups in the DHT (four record queries each), and how many found one.
    pub dht_lookups: u64,
    pub dht_duplicates_found: u64,
    /// Fingerprints published (four records each).
    pub dht_published: u64,
    /// Records and provider announcements other peers asked this node to store that it
    /// refused (not Weft's, malformed, or over the sender's rate).
    pub dht_refused: u64,
    /// Latency of the recent lookups, milliseconds.
    pub dht_lookup_ms_p50: f64,
    pub dht_lookup_ms_p99: f64,
    pub search: SearchStatus,
    /// Public, behind NAT or relayed; what is advertised; direct and relayed peers.
    pub reachability: ReachabilityStatus,
}

/// Requests to the network task besides URLs.
enum Command {
    FindDuplicate {
        hash: u64,
        max_distance: u32,
        url: String,
        reply: std::sync::mpsc::SyncSender<Option<(DupEntry, u32)>>,
    },
    Publish(DupEntry),
    Leave,
    /// Ask the peers most likely to hold content like the query.
    Search {
        request: SearchRequest,
        fanout: usize,
        reply: oneshot::Sender<NetworkAnswer>,
    },
    /// This node's routing summary changed.
    SetSummary {
        model: String,
        centroids: Vec<Vec<f32>>,
        weights: Vec<u32>,
    },
}

/// A near-duplicate lookup waiting for its four record queries.
struct Lookup {
    hash: u64,
    max_distance: u32,
    url: String,
    left: usize,
    entries: Vec<DupEntry>,
    reply: std::sync::mpsc::SyncSender<Option<(DupEntry, u32)>>,
    started: std::time::Instant,
}

/// URLs for this node to queue: from another member (with a reply to acknowledge them once
/// queued) or handed back by this node's own outbox after a ring change.
#[derive(Debug)]
pub struct Inbound {
    pub urls: Vec<WireUrl>,
    pub from: Option<PeerId>,
    /// Send how many were queued; the sender's batch is acknowledged then.
    pub reply: Option<oneshot::Sender<u32>>,
    /// The sender's hand-over marker ([`crate::exchange::UrlBatch::handoff`]): with these
    /// URLs, it has said what it had for this node's hosts.
    pub handoff: bool,
}

/// Talks to the running network task.
#[derive(Clone)]
pub struct NetworkHandle {
    peer_id: PeerId,
    status: watch::Receiver<NetworkStatus>,
    ring: watch::Receiver<Arc<Ring>>,
    stop: Arc<watch::Sender<bool>>,
    urls: mpsc::UnboundedSender<(Vec<WireUrl>, bool, Vec<PeerId>)>,
    commands: mpsc::UnboundedSender<Command>,
}

impl NetworkHandle {
    /// Sends `request` to at most `fanout` peers chosen by their routing summaries and the
    /// DHT's semantic buckets (more only to replace peers that fail or stay silent), and
    /// returns what they answered by the deadline (`search.deadline_ms`).
    pub async fn search(&self, request: SearchRequest, fanout: usize) -> NetworkAnswer {
        let (reply, answer) = oneshot::channel();
        if self.commands.send(Command::Search { request, fanout, reply }).is_err() {
            return NetworkAnswer { partial: true, ..Default::default() };
        }
        answer.await.unwrap_or(NetworkAnswer { partial: true, ..Default::default() })
    }

    /// Publishes this node's routing summary (gossip) and provides its centroids' LSH buckets
    /// in the DHT; republished for members that join later.
    pub fn set_summary(&self, model: String, centroids: Vec<Vec<f32>>, weights: Vec<u32>) {
        let _ = self.commands.send(Command::SetSummary { model, centroids, weights });
    }

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

    /// A receiver that sees every new ring (a member joined or left).
    pub fn ring_changes(&self) -> watch::Receiver<Arc<Ring>> {
        self.ring.clone()
    }

    /// Waits until `check` holds for the status (or the network stops).
    pub async fn wait_for(&self, mut check: impl FnMut(&NetworkStatus) -> bool) {
        let mut rx = self.status.clone();
        let _ = rx.wait_for(|s| check(s)).await;
    }

    /// Sends URLs of hosts other members own to them (batched, retried, re-routed). Call it
    /// with the URLs this node does not own on [`NetworkHandle::ring`].
    pub fn send_urls(&self, urls: Vec<WireUrl>) {
        if !urls.is_empty() {
            let _ = self.urls.send((urls, false, Vec::new()));
        }
    }

    /// Like [`NetworkHandle::send_urls`], without waiting to fill batches: for hosts changing
    /// hands, whose new owners should know at once what is queued and what is done. `joined`
    /// (members that just joined, and gained hosts from this node) get a hand-over marker with
    /// it, or alone when this node had nothing for them.
    pub fn hand_off(&self, urls: Vec<WireUrl>, joined: Vec<PeerId>) {
        if !urls.is_empty() || !joined.is_empty() {
            let _ = self.urls.send((urls, true, joined));
        }
    }

    /// Asks the DHT for an indexed document within `max_distance` bits of `hash` (other than
    /// `url`); blocking, for the indexing thread. `None` when there is none, or no answer within
    /// `timeout`.
    pub fn find_duplicate_blocking(
        &self,
        hash: u64,
        max_distance: u32,
        url: &str,
        timeout: Duration,
    ) -> Option<(DupEntry, u32)> {
        let (reply, answer) = std::sync::mpsc::sync_channel(1);
        let command = Command::FindDuplicate { hash, max_distance, url: url.to_string(), reply };
        self.commands.send(command).ok()?;
        answer.recv_timeout(timeout).ok().flatten()
    }

    /// Publishes an indexed document's fingerprint under its four block keys.
    pub fn publish_fingerprint(&self, entry: DupEntry) {
        let _ = self.commands.send(Command::Publish(entry));
    }

    /// Leaves the network for good: announces it at once (members drop this node without
    /// waiting for missed heartbeats) and takes this node off its own ring, so every URL sent
    /// from now on — the node's handed-off queue, batches still arriving — goes to the new
    /// owners. Keep the network running until [`NetworkStatus::urls_waiting`] and
    /// [`NetworkStatus::urls_in_flight`] are zero, then [`NetworkHandle::stop`].
    pub fn leave(&self) {
        let _ = self.commands.send(Command::Leave);
    }

    /// Stops the network task.
    pub fn stop(&self) {
        let _ = self.stop.send(true);
    }
}

/// A started network: the handle, the task that owns the swarm, and the URLs for this node.
pub struct Started {
    pub handle: NetworkHandle,
    pub task: tokio::task::JoinHandle<()>,
    pub inbound: mpsc::Receiver<Inbound>,
    /// URLs their owner acknowledged: the node may forget them (see its outbox journal).
    pub acked: mpsc::UnboundedReceiver<Vec<String>>,
    /// Queries from other nodes for this node's index.
    pub queries: mpsc::Receiver<SearchInbound>,
}

/// Starts listening and joining (inside a tokio runtime); the task runs until
/// [`NetworkHandle::stop`].
pub fn start(key: Keypair, config: NetworkConfig) -> Result<Started, P2pError> {
    let peer_id = key.public().to_peer_id();
    // A node that listens on loopback only has nothing for a router to map: no gateway search
    // (it would send SSDP multicast out of the machine from a test on 127.0.0.1).
    let upnp = config.upnp && config.listen.iter().any(|a| !reachability::is_loopback(a));
    let (urls_codec, urls_budget) = Codec::new();
    let (search_codec, search_budget) = Codec::new();
    let settings = crate::behaviour::Settings {
        max_connections: config.max_connections,
        refresh: config.refresh,
        relay: config.relay.clone(),
        upnp,
        urls: urls_codec,
        search: search_codec,
    };
    let mut swarm = libp2p::SwarmBuilder::with_existing_identity(key)
        .with_tokio()
        .with_tcp(tcp::Config::default().nodelay(true), noise::Config::new, yamux::Config::default)
        .map_err(|e| P2pError::Build(e.to_string()))?
        .with_quic()
        .with_relay_client(noise::Config::new, yamux::Config::default)
        .map_err(|e| P2pError::Build(e.to_string()))?
        .with_behaviour(|key, relay_client| Behaviour::new(key, relay_client, settings).map_err(Into::into))
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
    let summary_topic = gossipsub::IdentTopic::new(crate::summaries::TOPIC);
    swarm.behaviour_mut().gossipsub.subscribe(&summary_topic).map_err(|e| P2pError::Build(e.to_string()))?;

    let me = Heartbeat {
        peer: peer_id.to_string(),
        addrs: Vec::new(),
        capacity: config.capacity,
        leaving: false,
        relay: false,
        joined: config.joined,
        left: Vec::new(),
    };
    let reach = Reachability::new(config.private_addrs, upnp, std::time::Instant::now());
    let ttl = config.heartbeat * config.missed_heartbeats;
    let members = Members::new(peer_id, me, ttl, config.vnodes).settling_for(config.settle);
    let (status_tx, status) = watch::channel(NetworkStatus { peer_id: peer_id.to_string(), ..Default::default() });
    let (ring_tx, ring) = watch::channel(Arc::new(members.ring().clone()));
    let (stop_tx, stop_rx) = watch::channel(false);
    let (urls_tx, urls_rx) = mpsc::unbounded_channel();
    let (commands_tx, commands_rx) = mpsc::unbounded_channel();
    let (inbound_tx, inbound) = mpsc::channel(INBOUND_QUEUE);
    let (acked_tx, acked) = mpsc::unbounded_channel();
    let (queries_tx, queries) = mpsc::channel(querying::INBOUND_QUERIES);
    let query_rate = RateLimit::new(config.search.peer_queries_per_sec);
    let mut event_loop = EventLoop {
        querying: querying::State::new(summary_topic, queries_tx, query_rate),
        swarm,
        config,
        topic,
        members,
        listen: BTreeSet::new(),
        reach,
        relay_listeners: HashMap::new(),
        relay_served: RelayServed::default(),
        applied_dht: None,
        connected: HashSet::new(),
        joining: Joining::First,
        retry_at: None,
        attempt: 0,
        rejected: 0,
        status: status_tx,
        ring: ring_tx,
        outbox: Outbox::default(),
        in_flight: HashMap::new(),
        replies: FuturesUnordered::new(),
        inbound: inbound_tx,
        acked: acked_tx,
        rate: RateLimit::default(),
        dht_rate: RateLimit::new(DHT_STORES_PER_SEC),
        dht_over: HashMap::new(),
        banned: HashMap::new(),
        counts: Counts::default(),
        lookup_queries: HashMap::new(),
        lookups: HashMap::new(),
        next_lookup: 0,
        publishing: HashMap::new(),
        latencies: std::collections::VecDeque::new(),
        announced_at: None,
        budgets: [urls_budget, search_budget],
    };
    event_loop.dial_bootstrap();
    let task = tokio::spawn(event_loop.run(stop_rx, urls_rx, commands_rx));
    let handle = NetworkHandle { peer_id, status, ring, stop: Arc::new(stop_tx), urls: urls_tx, commands: commands_tx };
    Ok(Started { handle, task, inbound, acked, queries })
}

/// Counters for the status.
#[derive(Debug, Default)]
struct Counts {
    sent: u64,
    received: u64,
    forwarded: u64,
    rejected: u64,
    refused: u64,
    rate_limited: u64,
    not_member: u64,
    done_refused: u64,
    dht_lookups: u64,
    dht_found: u64,
    dht_published: u64,
    dht_refused: u64,
}

/// What the relay this node offers is doing.
#[derive(Debug, Default)]
struct RelayServed {
    reservations: HashSet<PeerId>,
    circuits: usize,
    circuits_served: u64,
}

/// Recent lookup latencies kept for the status percentiles.
const LATENCIES: usize = 1000;

/// The `p` quantile of recent latencies (0 when there are none).
fn percentile(latencies: &std::collections::VecDeque<f64>, p: f64) -> f64 {
    if latencies.is_empty() {
        return 0.0;
    }
    let mut v: Vec<f64> = latencies.iter().copied().collect();
    v.sort_by(f64::total_cmp);
    v[((v.len() as f64 * p) as usize).min(v.len() - 1)]
}

mod querying;
pub use querying::{NetworkAnswer, PeerAnswer, SearchInbound, SearchStatus};

/// A received batch waiting for the node to queue its URLs: the answer goes out when it has.
type PendingReply = BoxFuture<'static, (ResponseChannel<BatchReply>, u32, u32, Option<u32>)>;

struct EventLoop {
    swarm: Swarm<Behaviour>,
    /// Network search: summaries, queries in flight, answers to others' queries.
    querying: querying::State,
    config: NetworkConfig,
    topic: gossipsub::IdentTopic,
    members: Members,
    listen: BTreeSet<Multiaddr>,
    /// Reachability: what this node advertises, DHT and relay roles, relay slots it needs.
    reach: Reachability,
    /// Relay → the `/p2p-circuit` listener reserving a slot on it.
    relay_listeners: HashMap<PeerId, ListenerId>,
    relay_served: RelayServed,
    /// The DHT mode last applied (server: true).
    applied_dht: Option<bool>,
    connected: HashSet<PeerId>,
    joining: Joining,
    retry_at: Option<Instant>,
    attempt: u32,
    rejected: u64,
    status: watch::Sender<NetworkStatus>,
    ring: watch::Sender<Arc<Ring>>,
    outbox: Outbox,
    in_flight: HashMap<OutboundRequestId, InFlight>,
    replies: FuturesUnordered<PendingReply>,
    inbound: mpsc::Sender<Inbound>,
    acked: mpsc::UnboundedSender<Vec<String>>,
    rate: RateLimit,
    /// Stores (records, provider announcements) each peer may ask for.
    dht_rate: RateLimit,
    /// Stores refused per peer for being over its rate (a flood is banned).
    dht_over: HashMap<PeerId, u32>,
    banned: HashMap<PeerId, std::time::Instant>,
    counts: Counts,
    /// Record query → the lookup it belongs to.
    lookup_queries: HashMap<kad::QueryId, u64>,
    lookups: HashMap<u64, Lookup>,
    next_lookup: u64,
    /// Record query → (key, the entry to add, entries found so far) of a publication.
    publishing: HashMap<kad::QueryId, (Vec<u8>, DupEntry, Vec<DupEntry>)>,
    latencies: std::collections::VecDeque<f64>,
    /// When this node last published its heartbeat out of turn (an owner did not know it).
    announced_at: Option<std::time::Instant>,
    /// What requests being read hold, URL batches and search requests.
    budgets: [Arc<RequestBudget>; 2],
}

impl EventLoop {
    async fn run(
        mut self,
        mut stop: watch::Receiver<bool>,
        mut urls: mpsc::UnboundedReceiver<(Vec<WireUrl>, bool, Vec<PeerId>)>,
        mut commands: mpsc::UnboundedReceiver<Command>,
    ) {
        let mut heartbeat = tokio::time::interval(self.config.heartbeat);
        heartbeat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            let retry = async {
                match self.retry_at {
                    Some(t) => tokio::time::sleep_until(t).await,
                    None => std::future::pending().await,
                }
            };
            let next_due = self.outbox.next_due();
            let flush = async {
                match next_due {
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
                Some((channel, reply)) = self.querying.replies.next(), if !self.querying.replies.is_empty() => {
                    let _ = self.swarm.behaviour_mut().search.send_response(channel, reply);
                }
                _ = heartbeat.tick() => self.on_heartbeat(),
                _ = retry => {
                    self.retry_at = None;
                    self.dial_bootstrap();
                }
                Some((batch, now, joined)) = urls.recv() => {
                    let me = *self.swarm.local_peer_id();
                    self.outbox.mark_handoff(joined);
                    let mine = self.outbox.route(batch, 0, self.members.ring(), &me, std::time::Instant::now());
                    self.deliver(mine, None, None, false);
                    self.flush(now);
                }
                _ = flush => self.flush(false),
                Some(command) = commands.recv() => self.on_command(command),
                Some((channel, forwarded, rejected, queued)) = self.replies.next(), if !self.replies.is_empty() => {
                    let reply = match queued {
                        Some(accepted) => {
                            self.counts.received += u64::from(accepted);
                            BatchReply::Ack { accepted, forwarded, rejected }
                        }
                        None => BatchReply::Busy,
                    };
                    let _ = self.swarm.behaviour_mut().urls.send_response(channel, reply);
                }
                _ = stop.changed() => break,
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
            SwarmEvent::NewListenAddr { address, .. } if reachability::is_relayed(&address) => {
                tracing::info!(addr = %address, "reachable through a relay");
            }
            SwarmEvent::NewListenAddr { address, .. } => {
                let full = address.clone().with_p2p(*self.swarm.local_peer_id()).unwrap_or(address.clone());
                tracing::info!(addr = %full, "p2p listening (bootstrap other nodes from this address)");
                self.listen.insert(address.clone());
                self.reach.listen_addr(address, true);
            }
            SwarmEvent::ExpiredListenAddr { address, .. } => {
                self.listen.remove(&address);
                self.reach.listen_addr(address, false);
            }
            SwarmEvent::ListenerClosed { listener_id, reason, .. } => {
                let relay = self.relay_listeners.iter().find(|(_, l)| **l == listener_id).map(|(p, _)| *p);
                if let Some(relay) = relay {
                    tracing::info!(%relay, "relay slot closed: {reason:?}");
                    self.relay_listeners.remove(&relay);
                    self.reach.reservation(relay, false, std::time::Instant::now());
                }
            }
            SwarmEvent::ExternalAddrConfirmed { address } => {
                tracing::info!(addr = %address, "external address confirmed");
                self.reach.external(address, true, std::time::Instant::now());
            }
            SwarmEvent::ExternalAddrExpired { address } => {
                self.reach.external(address, false, std::time::Instant::now());
            }
            SwarmEvent::ConnectionEstablished { peer_id, endpoint, connection_id, .. } => {
                self.reach.connected(connection_id, peer_id, endpoint.get_remote_address().clone());
                // A connection accepted from outside on a public address of this node proves
                // it reachable there (AutoNAT v2 only probes over connections this node
                // dialled, and a public node that others join through may dial nobody).
                if let libp2p::core::ConnectedPoint::Listener { local_addr, send_back_addr } = &endpoint {
                    if reachability::proves_reachable(local_addr, send_back_addr)
                        && !self.swarm.external_addresses().any(|a| a == local_addr)
                    {
                        tracing::info!(addr = %local_addr, from = %send_back_addr, "reachable: a peer connected in from outside");
                        // (The swarm tells the behaviours, not this loop.)
                        self.swarm.add_external_address(local_addr.clone());
                        self.reach.external(local_addr.clone(), true, std::time::Instant::now());
                    }
                }
                self.connected.insert(peer_id);
                let now = std::time::Instant::now();
                if let Some(change) = self.members.present(&peer_id, endpoint.get_remote_address(), now) {
                    self.on_change(change);
                }
                // A URL batch waiting for this peer can go now.
                if self.outbox.next_due().is_some() {
                    self.flush(false);
                }
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
            SwarmEvent::ConnectionClosed { peer_id, num_established, connection_id, .. } => {
                self.reach.disconnected(connection_id);
                if num_established == 0 {
                    self.connected.remove(&peer_id);
                    if self.connected.is_empty() && !self.config.bootstrap.is_empty() {
                        self.joining = Joining::Connecting;
                        self.schedule_retry("every connection closed".into());
                    }
                }
            }
            SwarmEvent::OutgoingConnectionError { peer_id: Some(peer), error, .. } if self.is_bootstrap(&peer) => {
                self.schedule_retry(error.to_string());
            }
            SwarmEvent::Behaviour(BehaviourEvent::Identify(identify::Event::Received { peer_id, info, .. })) => {
                // What a peer says it can be reached at goes into the routing table, so
                // Kademlia queries can reach it (private addresses only from the same network).
                for addr in info.listen_addrs.into_iter().take(16) {
                    self.add_peer_address(peer_id, addr);
                }
            }
            SwarmEvent::Behaviour(BehaviourEvent::Autonat(autonat::v2::client::Event {
                tested_addr,
                server,
                result,
                ..
            })) => {
                match &result {
                    Ok(()) => tracing::info!(addr = %tested_addr, %server, "AutoNAT: reachable at this address"),
                    Err(e) => {
                        tracing::info!(addr = %tested_addr, %server, "AutoNAT: not reachable at this address: {e}")
                    }
                }
                self.reach.probe(result.is_ok());
            }
            SwarmEvent::Behaviour(BehaviourEvent::RelayClient(relay::client::Event::ReservationReqAccepted {
                relay_peer_id,
                renewal,
                ..
            })) => {
                if !renewal {
                    tracing::info!(relay = %relay_peer_id, "relay slot reserved");
                }
                self.reach.reservation(relay_peer_id, true, std::time::Instant::now());
            }
            SwarmEvent::Behaviour(BehaviourEvent::Relay(event)) => self.on_relay_served(event),
            SwarmEvent::Behaviour(BehaviourEvent::Dcutr(dcutr::Event { remote_peer_id, result })) => {
                match &result {
                    Ok(_) => tracing::info!(peer = %remote_peer_id, "hole punched: direct connection"),
                    Err(e) => tracing::info!(peer = %remote_peer_id, "hole punching failed, staying relayed: {e}"),
                }
                self.reach.hole_punch(remote_peer_id, result.is_ok(), std::time::Instant::now());
            }
            SwarmEvent::Behaviour(BehaviourEvent::Upnp(event)) => {
                let state = match event {
                    upnp::Event::NewExternalAddr { external_addr, .. } => {
                        tracing::info!(addr = %external_addr, "UPnP: the router maps a port to this node");
                        "mapped"
                    }
                    upnp::Event::ExpiredExternalAddr { .. } => "expired",
                    upnp::Event::GatewayNotFound => "no gateway",
                    upnp::Event::NonRoutableGateway => "gateway not public",
                };
                self.reach.upnp(state);
            }
            SwarmEvent::Behaviour(BehaviourEvent::Gossipsub(gossipsub::Event::Message {
                message,
                propagation_source,
                ..
            })) => {
                self.on_gossip(message, propagation_source);
            }
            SwarmEvent::Behaviour(BehaviourEvent::Urls(event)) => self.on_urls(event),
            SwarmEvent::Behaviour(BehaviourEvent::Search(event)) => self.on_search(event),
            SwarmEvent::Behaviour(BehaviourEvent::Kad(kad::Event::InboundRequest { request })) => {
                self.on_dht_store(request);
            }
            SwarmEvent::Behaviour(BehaviourEvent::Kad(kad::Event::OutboundQueryProgressed {
                id,
                result: kad::QueryResult::GetProviders(result),
                step,
                ..
            })) => self.on_providers(id, result, step.last),
            SwarmEvent::Behaviour(BehaviourEvent::Kad(kad::Event::OutboundQueryProgressed {
                id,
                result: kad::QueryResult::GetRecord(result),
                step,
                ..
            })) => {
                let (found, done) = match result {
                    Ok(kad::GetRecordOk::FoundRecord(r)) => (records::decode(&r.record.value), step.last),
                    Ok(kad::GetRecordOk::FinishedWithNoAdditionalRecord { .. }) => (Vec::new(), true),
                    Err(_) => (Vec::new(), true),
                };
                self.on_records(id, found, done);
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

    fn on_gossip(&mut self, message: gossipsub::Message, via: PeerId) {
        let Some(source) = message.source else { return };
        if message.topic == self.querying.topic.hash() {
            self.on_summary(source, &message.data);
            return;
        }
        if message.topic != self.topic.hash() {
            return;
        }
        match Heartbeat::decode(&message.data, &source.to_string()) {
            Ok(hb) => {
                // Members must be reachable for URL batches: their addresses go to Kademlia.
                for addr in hb.addrs.iter().take(8).filter_map(|a| a.parse::<Multiaddr>().ok()) {
                    self.add_peer_address(source, addr);
                }
                // A member only once this node has met it (see `membership`).
                let remote = if self.connected.contains(&source) { self.reach.remote_of(&source) } else { None };
                let candidates = self.members.candidates();
                if let Some(change) = self.members.observe(hb, via, remote.as_ref(), std::time::Instant::now()) {
                    self.on_change(change);
                }
                // A new candidate is dialled at once; the rest wait for the next heartbeat tick.
                if self.members.candidates() > candidates {
                    self.dial_members();
                }
            }
            Err(e) => {
                self.rejected += 1;
                tracing::debug!(peer = %source, "heartbeat rejected: {e}");
            }
        }
    }

    fn on_heartbeat(&mut self) {
        self.reach.give_up_waiting(self.config.autonat_timeout, std::time::Instant::now());
        self.apply_reachability();
        self.manage_relays();
        self.publish_heartbeat();
        // Members this node is connected to are present; candidates it is connected to join.
        let now = std::time::Instant::now();
        let connected: Vec<PeerId> = self.connected.iter().copied().collect();
        for peer in connected {
            if let Some(remote) = self.reach.remote_of(&peer) {
                if let Some(change) = self.members.present(&peer, &remote, now) {
                    self.on_change(change);
                }
            }
        }
        for change in self.members.expire(now) {
            self.on_change(change);
        }
        self.dial_members();
        self.republish_summary();
        let now = std::time::Instant::now();
        let expired: Vec<PeerId> = self.banned.iter().filter(|(_, until)| **until <= now).map(|(p, _)| *p).collect();
        for peer in expired {
            self.banned.remove(&peer);
            self.swarm.behaviour_mut().blocked.unblock_peer(peer);
            tracing::info!(%peer, "ban lifted");
        }
    }

    fn publish_heartbeat(&mut self) {
        let me = self.members.heartbeat(std::time::Instant::now()).encode();
        if let Err(e) = self.swarm.behaviour_mut().gossipsub.publish(self.topic.clone(), me) {
            // Alone in the network (InsufficientPeers) is normal for the first node.
            tracing::trace!("heartbeat not published: {e}");
        }
    }

    /// Publishes this node's heartbeat out of turn, at most once per [`NOT_MEMBER_DELAY`].
    fn announce(&mut self) {
        let now = std::time::Instant::now();
        if self.announced_at.is_none_or(|at| now.saturating_duration_since(at) >= NOT_MEMBER_DELAY) {
            self.announced_at = Some(now);
            self.publish_heartbeat();
        }
    }

    fn on_command(&mut self, command: Command) {
        match command {
            Command::FindDuplicate { hash, max_distance, url, reply } => {
                self.counts.dht_lookups += 1;
                let id = self.next_lookup;
                self.next_lookup += 1;
                for key in records::keys(hash) {
                    let q = self.swarm.behaviour_mut().kad.get_record(kad::RecordKey::new(&key));
                    self.lookup_queries.insert(q, id);
                }
                let started = std::time::Instant::now();
                self.lookups
                    .insert(id, Lookup { hash, max_distance, url, left: 4, entries: Vec::new(), reply, started });
            }
            Command::Leave => {
                tracing::info!(members = self.members.len().saturating_sub(1), "leaving the network");
                self.members.leave();
                self.on_heartbeat();
                self.ring.send_replace(Arc::new(self.members.ring().clone()));
                // Batches already waiting go to the new owners now.
                self.flush(true);
            }
            Command::Search { request, fanout, reply } => self.start_search(request, fanout, reply),
            Command::SetSummary { model, centroids, weights } => self.set_summary(model, centroids, weights),
            Command::Publish(entry) => {
                self.counts.dht_published += 1;
                // Read, merge, write: other documents may share a block.
                for key in records::keys(entry.simhash) {
                    let q = self.swarm.behaviour_mut().kad.get_record(kad::RecordKey::new(&key));
                    self.publishing.insert(q, (key, entry.clone(), Vec::new()));
                }
            }
        }
    }

    fn on_records(&mut self, query: kad::QueryId, found: Vec<DupEntry>, done: bool) {
        if let Some(&id) = self.lookup_queries.get(&query) {
            if let Some(lookup) = self.lookups.get_mut(&id) {
                lookup.entries.extend(found);
                if done {
                    lookup.left -= 1;
                }
            }
            if done {
                self.lookup_queries.remove(&query);
                if self.lookups.get(&id).is_some_and(|l| l.left == 0) {
                    let l = self.lookups.remove(&id).expect("lookup present");
                    let best = records::nearest(&l.entries, l.hash, l.max_distance, &l.url);
                    if best.is_some() {
                        self.counts.dht_found += 1;
                    }
                    if self.latencies.len() == LATENCIES {
                        self.latencies.pop_front();
                    }
                    self.latencies.push_back(l.started.elapsed().as_secs_f64() * 1e3);
                    let _ = l.reply.send(best);
                }
            }
        } else if let Some((_, _, entries)) = self.publishing.get_mut(&query) {
            entries.extend(found);
            if done {
                let (key, entry, entries) = self.publishing.remove(&query).expect("publication present");
                let value = records::encode(&records::merge(entries, entry));
                let record = kad::Record::new(kad::RecordKey::new(&key), value);
                if let Err(e) = self.swarm.behaviour_mut().kad.put_record(record, kad::Quorum::One) {
                    tracing::debug!("fingerprint record not stored: {e}");
                }
            }
        }
    }

    /// A peer asks this node to store a record or a provider announcement: only Weft's own
    /// keys with values of their shape are stored, at most [`DHT_STORES_PER_SEC`] per peer.
    /// Anything else bans its sender (an honest node never sends it), as does a flood
    /// ([`DHT_FLOOD`] stores over the rate). Without this, 50,000 records of 8 KiB from one peer
    /// took 390 MB.
    fn on_dht_store(&mut self, request: kad::InboundRequest) {
        let (source, valid) = match &request {
            kad::InboundRequest::PutRecord { source, record: Some(r), .. } => {
                (*source, records::decode_strict(r.key.as_ref(), &r.value).map(|_| ()).map_err(|e| e.to_string()))
            }
            kad::InboundRequest::AddProvider { record: Some(p) } => {
                let ok = crate::summaries::is_bucket_key(p.key.as_ref());
                (p.provider, if ok { Ok(()) } else { Err("not a Weft bucket key".to_string()) })
            }
            _ => return,
        };
        if let Err(why) = valid {
            self.counts.dht_refused += 1;
            self.ban(source, &format!("DHT store refused: {why}"));
            return;
        }
        if !self.dht_rate.allow(&source.to_string(), std::time::Instant::now()) {
            self.counts.dht_refused += 1;
            let over = self.dht_over.entry(source).or_insert(0);
            *over += 1;
            if *over >= DHT_FLOOD {
                self.dht_over.remove(&source);
                self.ban(source, "DHT store flood");
            }
            return;
        }
        use kad::store::RecordStore;
        let store = self.swarm.behaviour_mut().kad.store_mut();
        let stored = match request {
            kad::InboundRequest::PutRecord { record: Some(r), .. } => store.put(r),
            kad::InboundRequest::AddProvider { record: Some(p) } => store.add_provider(p),
            _ => Ok(()),
        };
        if let Err(e) = stored {
            // The store is full: the record is not kept (a missed duplicate at worst).
            self.counts.dht_refused += 1;
            tracing::debug!("DHT store: {e}");
        }
    }

    /// Bans `peer` for [`BAN`]: its connections close and new ones are refused.
    fn ban(&mut self, peer: PeerId, why: &str) {
        tracing::warn!(%peer, "peer banned for {} s: {why}", BAN.as_secs());
        self.banned.insert(peer, std::time::Instant::now() + BAN);
        self.swarm.behaviour_mut().blocked.block_peer(peer);
        if let Some(change) = self.members.remove(&peer) {
            self.on_change(change);
        }
    }

    /// Hands URLs to the node; a received batch is answered once they are queued.
    fn deliver(
        &mut self,
        urls: Vec<WireUrl>,
        from: Option<(PeerId, ResponseChannel<BatchReply>)>,
        counts: Option<(u32, u32)>,
        handoff: bool,
    ) {
        let (forwarded, rejected) = counts.unwrap_or((0, 0));
        let (reply_tx, reply_rx) = oneshot::channel();
        let (peer, channel) = match from {
            Some((p, c)) => (Some(p), Some(c)),
            None => (None, None),
        };
        if urls.is_empty() && !handoff {
            if let Some(channel) = channel {
                let ack = BatchReply::Ack { accepted: 0, forwarded, rejected };
                let _ = self.swarm.behaviour_mut().urls.send_response(channel, ack);
            }
            return;
        }
        let wants_reply = channel.is_some();
        let inbound = Inbound { urls, from: peer, reply: wants_reply.then_some(reply_tx), handoff };
        match self.inbound.try_send(inbound) {
            Ok(()) => {
                if let Some(channel) = channel {
                    self.replies.push(Box::pin(async move { (channel, forwarded, rejected, reply_rx.await.ok()) }));
                }
            }
            Err(e) => {
                // The node is behind (or gone): the sender keeps the batch and retries.
                tracing::debug!("URLs not delivered to the node: {e}");
                if let Some(channel) = channel {
                    let _ = self.swarm.behaviour_mut().urls.send_response(channel, BatchReply::Busy);
                }
            }
        }
    }

    /// Sends the batches that are due.
    fn flush(&mut self, all: bool) {
        let me = *self.swarm.local_peer_id();
        let due = self.outbox.due(self.members.ring(), &me, std::time::Instant::now(), all);
        self.deliver(due.mine, None, None, false);
        for f in due.batches {
            let id = self.swarm.behaviour_mut().urls.send_request(&f.owner, Frame::Request(f.batch.clone()));
            self.in_flight.insert(id, f);
        }
    }

    fn on_urls(&mut self, event: request_response::Event<Frame<UrlBatch>, BatchReply>) {
        match event {
            request_response::Event::Message { peer, message, .. } => match message {
                request_response::Message::Request { request: Frame::Request(batch), channel, .. } => {
                    self.on_batch(peer, batch, channel)
                }
                request_response::Message::Request { request: Frame::Refused(why), channel, .. } => {
                    self.counts.refused += 1;
                    drop(channel);
                    self.ban(peer, &why.to_string());
                }
                request_response::Message::Response { request_id, response } => {
                    let Some(f) = self.in_flight.remove(&request_id) else { return };
                    match response {
                        BatchReply::Ack { accepted, forwarded, .. } => {
                            self.counts.sent += u64::from(accepted + forwarded);
                            let _ = self.acked.send(f.batch.urls.into_iter().map(|u| u.url).collect());
                        }
                        BatchReply::Busy => self.outbox.retry_later(f, BUSY_DELAY, std::time::Instant::now()),
                        BatchReply::NotMember => {
                            // The owner has not heard this node yet (it just joined, or the
                            // owner restarted): announce at once rather than at the next tick.
                            self.announce();
                            self.outbox.retry_later(f, NOT_MEMBER_DELAY, std::time::Instant::now());
                        }
                    }
                }
            },
            request_response::Event::OutboundFailure { request_id, error, peer, .. } => {
                if let Some(f) = self.in_flight.remove(&request_id) {
                    tracing::debug!(%peer, "URL batch not delivered ({error}); retrying");
                    self.outbox.retry(f, std::time::Instant::now());
                }
            }
            _ => {}
        }
    }

    fn on_batch(&mut self, peer: PeerId, batch: UrlBatch, channel: ResponseChannel<BatchReply>) {
        if !self.rate.allow(&peer.to_string(), std::time::Instant::now()) {
            self.counts.rate_limited += 1;
            let _ = self.swarm.behaviour_mut().urls.send_response(channel, BatchReply::Busy);
            return;
        }
        if let Err(e) = check_batch(&batch) {
            self.counts.refused += 1;
            drop(channel);
            self.ban(peer, &e.to_string());
            return;
        }
        let now = std::time::Instant::now();
        // Only members queue URLs here (or members that just left, handing their hosts over):
        // a stranger's batch would steer this node's crawl.
        if !self.members.knows(&peer, now) {
            self.counts.not_member += 1;
            let _ = self.swarm.behaviour_mut().urls.send_response(channel, BatchReply::NotMember);
            return;
        }
        let mut valid = Vec::with_capacity(batch.urls.len());
        let mut rejected = 0u32;
        for mut u in batch.urls {
            if check_url(&mut u, self.config.allow_private).is_err() {
                rejected += 1;
                continue;
            }
            // "Done" keeps a page from being fetched: only its host's owner, or its owner
            // before the latest membership changes (handing the host over), may say so.
            if u.kind == UrlKind::Done && !u.ring_host().is_some_and(|h| self.members.owned_recently(&peer, &h, now)) {
                self.counts.done_refused += 1;
                rejected += 1;
                continue;
            }
            valid.push(u);
        }
        // Hosts this node does not own (the sender's ring was stale) go on, within the hop limit.
        let me = *self.swarm.local_peer_id();
        let (mine, others): (Vec<WireUrl>, Vec<WireUrl>) = valid.into_iter().partition(|u| {
            u.ring_host().and_then(|h| self.members.ring().owner(&h).map(|o| *o == me)).unwrap_or(false)
        });
        let mut forwarded = 0u32;
        if batch.hops < MAX_HOPS {
            forwarded = others.len() as u32;
            let back = self.outbox.route(others, batch.hops + 1, self.members.ring(), &me, now);
            debug_assert!(back.is_empty());
        } else {
            rejected += others.len() as u32;
        }
        self.counts.forwarded += u64::from(forwarded);
        self.counts.rejected += u64::from(rejected);
        self.deliver(mine, Some((peer, channel)), Some((forwarded, rejected)), batch.handoff);
    }

    fn on_change(&mut self, change: Change) {
        match &change {
            Change::Joined(peer) => {
                tracing::info!(%peer, members = self.members.len(), "member joined");
                // The newcomer has not heard this node's summary: send it again soon.
                self.querying.member_joined();
            }
            Change::Left(peer) => tracing::info!(%peer, members = self.members.len(), "member left"),
            Change::Grew(peer) => {
                tracing::info!(%peer, points = self.members.points_of(peer), "a member's ring points changed with its age")
            }
        }
        let members: Vec<String> = self.members.peers().iter().map(PeerId::to_string).collect();
        self.querying.summaries.retain(|p| members.iter().any(|m| m == p));
        self.ring.send_replace(Arc::new(self.members.ring().clone()));
    }

    /// Puts a peer's address in the routing table if it is of use from here (see
    /// [`reachability::usable`]).
    /// Dials the peers heard of that this node has not met, and the members it has not met for
    /// a while (see [`Members::to_dial`]): a connection is their proof of presence.
    fn dial_members(&mut self) {
        use libp2p::swarm::dial_opts::{DialOpts, PeerCondition};
        for (peer, addrs) in self.members.to_dial(std::time::Instant::now()) {
            if self.connected.contains(&peer) || self.banned.contains_key(&peer) {
                continue;
            }
            let addrs: Vec<Multiaddr> = addrs.iter().take(8).filter_map(|a| a.parse().ok()).collect();
            let opts = DialOpts::peer_id(peer).addresses(addrs).condition(PeerCondition::DisconnectedAndNotDialing);
            if let Err(e) = self.swarm.dial(opts.build()) {
                tracing::debug!(%peer, "dialling a member: {e}");
            }
        }
    }

    fn add_peer_address(&mut self, peer: PeerId, addr: Multiaddr) {
        if peer == *self.swarm.local_peer_id() {
            return;
        }
        let via = self.reach.remote_of(&peer);
        if reachability::usable(&addr, via.as_ref(), self.config.private_addrs) {
            self.swarm.behaviour_mut().kad.add_address(&peer, addr);
        }
    }

    fn on_relay_served(&mut self, event: relay::Event) {
        let served = &mut self.relay_served;
        match event {
            relay::Event::ReservationReqAccepted { src_peer_id, renewed, .. } => {
                if !renewed {
                    tracing::info!(peer = %src_peer_id, "relay: slot reserved for a member behind NAT");
                }
                served.reservations.insert(src_peer_id);
            }
            relay::Event::ReservationClosed { src_peer_id } | relay::Event::ReservationTimedOut { src_peer_id } => {
                served.reservations.remove(&src_peer_id);
            }
            relay::Event::CircuitReqAccepted { src_peer_id, dst_peer_id } => {
                tracing::debug!(src = %src_peer_id, dst = %dst_peer_id, "relay: circuit opened");
                served.circuits += 1;
                served.circuits_served += 1;
            }
            relay::Event::CircuitClosed { .. } => served.circuits = served.circuits.saturating_sub(1),
            _ => {}
        }
    }

    /// Applies what reachability decided: the DHT mode, the relay offered, what this node
    /// advertises (heartbeat and identify) and the relay slots it holds. Cheap when nothing
    /// changed.
    fn apply_reachability(&mut self) {
        let advertised = self.reach.advertised();
        let dht_server = self.reach.dht_server();
        let relay_server = self.reach.relay_server();
        let me = self.members.me();
        let addrs: Vec<String> = advertised.iter().map(ToString::to_string).collect();
        if me.addrs == addrs && me.relay == relay_server && self.applied_dht == Some(dht_server) {
            return;
        }
        if self.applied_dht != Some(dht_server) {
            tracing::info!(kind = ?self.reach.kind(), "reachability: DHT {}", if dht_server { "server" } else { "client" });
            let mode = if dht_server { kad::Mode::Server } else { kad::Mode::Client };
            self.swarm.behaviour_mut().kad.set_mode(Some(mode));
            self.applied_dht = Some(dht_server);
        }
        let status = if relay_server { relay::Status::Enable } else { relay::Status::Disable };
        self.swarm.behaviour_mut().relay.set_status(Some(status));
        // Identify announces the swarm's external addresses only: private ones are added
        // there while this node is on a private network, and taken back after.
        let external: Vec<Multiaddr> = self.swarm.external_addresses().cloned().collect();
        for a in &advertised {
            if !external.contains(a) {
                self.swarm.add_external_address(a.clone());
            }
        }
        for a in external.iter().filter(|a| reachability::is_private(a) && !advertised.contains(a)) {
            self.swarm.remove_external_address(a);
        }
        let mut me = self.members.me().clone();
        me.addrs = addrs;
        me.relay = relay_server;
        self.members.set_me(me);
        self.manage_relays();
    }

    /// Behind NAT: holds slots on up to `p2p.relays` public members' relays (chosen by
    /// [`reachability::pick_relays`]); otherwise holds none.
    fn manage_relays(&mut self) {
        let me = *self.swarm.local_peer_id();
        let wanted: Vec<PeerId> = if self.reach.needs_relay() && self.config.relays > 0 {
            let candidates: Vec<PeerId> = self.members.relays().filter_map(|hb| hb.peer.parse().ok()).collect();
            reachability::pick_relays(&me, &candidates, self.config.relays)
        } else {
            Vec::new()
        };
        let gone: Vec<PeerId> = self.relay_listeners.keys().filter(|p| !wanted.contains(p)).copied().collect();
        for relay in gone {
            if let Some(id) = self.relay_listeners.remove(&relay) {
                self.swarm.remove_listener(id);
                self.reach.reservation(relay, false, std::time::Instant::now());
            }
        }
        for relay in wanted {
            if self.relay_listeners.contains_key(&relay) {
                continue;
            }
            let Some(hb) = self.members.get(&relay) else { continue };
            let Some(addr) = hb
                .addrs
                .iter()
                .filter_map(|a| a.parse::<Multiaddr>().ok())
                .find(|a| !reachability::is_relayed(a) && reachability::usable(a, None, self.config.private_addrs))
            else {
                continue;
            };
            let circuit = addr.with_p2p(relay).unwrap_or_else(|a| a).with(Protocol::P2pCircuit);
            match self.swarm.listen_on(circuit.clone()) {
                Ok(id) => {
                    tracing::info!(%relay, addr = %circuit, "behind NAT: reserving a relay slot");
                    self.relay_listeners.insert(relay, id);
                }
                Err(e) => tracing::warn!(%relay, "cannot reserve a relay slot: {e}"),
            }
        }
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
            members: self.members.peers().iter().map(PeerId::to_string).collect(),
            ring_share: self.members.ring().share(&local),
            admitted: self.members.points_of(&local) as f64 / self.members.ring().vnodes().max(1) as f64,
            joining: self.joining.clone(),
            rejected_heartbeats: self.rejected,
            member_candidates: self.members.candidates(),
            urls_sent: self.counts.sent,
            urls_received: self.counts.received,
            urls_forwarded: self.counts.forwarded,
            urls_rejected: self.counts.rejected,
            urls_waiting: self.outbox.waiting() as u64,
            urls_in_flight: self.in_flight.values().map(|f| f.batch.urls.len() as u64).sum(),
            batches_refused: self.counts.refused,
            batches_rate_limited: self.counts.rate_limited,
            batches_not_member: self.counts.not_member,
            requests_buffered_bytes: self.budgets.iter().map(|b| b.held()).sum(),
            requests_cut: self.budgets.iter().map(|b| b.cut()).sum(),
            done_refused: self.counts.done_refused,
            banned_peers: self.banned.len(),
            dht_lookups: self.counts.dht_lookups,
            dht_duplicates_found: self.counts.dht_found,
            dht_published: self.counts.dht_published,
            dht_refused: self.counts.dht_refused,
            dht_lookup_ms_p50: percentile(&self.latencies, 0.5),
            dht_lookup_ms_p99: percentile(&self.latencies, 0.99),
            search: self.querying.status(),
            reachability: self.reach.status(
                self.relay_served.reservations.len(),
                self.relay_served.circuits,
                self.relay_served.circuits_served,
            ),
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
