//! What Kademlia would cost a node as the network grows, against what Weft's near-duplicate
//! records cost on the ring — the part of a member's traffic and connections the scale
//! simulator (`weft-simnet scale`) does not model. Weft ran Kademlia for those records (and
//! refreshed its routing table every 300 s) until the records moved to the owners of their
//! blocks on the ring (`weft_p2p::records`); this keeps the reference it was measured against.
//!
//! N real libp2p nodes in one process: Kademlia with Weft's protocol and settings beside
//! identify with Weft's, over libp2p's in-memory transport with Noise and yamux (what TCP
//! carries; no TCP/IP headers), every byte each node sends and receives counted at the
//! transport. Each node joins through a random earlier one and bootstraps twice, so routing
//! tables are what a settled network holds; then every node runs one more bootstrap — what
//! `p2p.bootstrap_interval_secs` (300 s) repeats: a lookup of its own id and one for each
//! k-bucket farther than its nearest — and then one record lookup of a key nobody stored (a
//! near-duplicate lookup that finds nothing: the full iterative walk to the 20 closest).
//!
//! Per N it prints, per node and per bootstrap: bytes sent and received (mean and p99 over the
//! nodes: a node's own lookups and its answers to others'), connections opened (in and out);
//! and per record lookup, the bytes the whole network moved for it and the peers it reached.
//! Then the same on the ring, with Weft's own protocol (`/weft/records/1`) and placement: a
//! lookup of a fingerprint nobody published — one request to the first owner of each of its
//! four blocks — and a publication of one — one request to each of its blocks' three owners.
//! Every connection is closed before each measured part, and none closes during one, so a
//! round opens one connection to each peer it talks to, either way: with Weft's 300 s idle
//! timeout and a 300 s interval, about the connections a node holds for Kademlia, and their
//! handshakes (Noise, yamux, identify) an upper bound of what a round pays for them.
//!
//! ```sh
//! cargo run --release -p weft-p2p --example bench_kad -- 100 300 1000 3000
//! ```

use futures::StreamExt;
use libp2p::core::transport::{MemoryTransport, Transport};
use libp2p::core::upgrade::Version;
use libp2p::request_response::{self, ProtocolSupport};
use libp2p::swarm::behaviour::toggle::Toggle;
use libp2p::swarm::{NetworkBehaviour, SwarmEvent};
use libp2p::{identify, identity, kad, noise, yamux, Multiaddr, PeerId};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, oneshot};
use weft_p2p::codec::{Codec, Frame};
use weft_p2p::records::{self, Addressed, RecordReply, RecordRequest, RecordWire, RECORD_OWNERS};
use weft_p2p::ring::Ring;

/// The Kademlia protocol Weft ran (a network of its own, not the public IPFS DHT).
const KAD_PROTOCOL: libp2p::StreamProtocol = libp2p::StreamProtocol::new("/weft/kad/1.0.0");
/// Lookups run at once (a real network's are spread over the interval).
const CONCURRENT: usize = 64;

#[derive(NetworkBehaviour)]
struct Node {
    /// Off for the ring's nodes, which run what Weft runs: identify and its records protocol.
    kad: Toggle<kad::Behaviour<kad::store::MemoryStore>>,
    identify: identify::Behaviour,
    records: request_response::Behaviour<Codec<RecordWire>>,
}

/// A node's counters: bytes out and in, connections opened.
#[derive(Default)]
struct Counters {
    sent: AtomicU64,
    received: AtomicU64,
    opened: AtomicUsize,
}

impl Counters {
    fn read(&self) -> (u64, u64, usize) {
        (self.sent.load(Ordering::Relaxed), self.received.load(Ordering::Relaxed), self.opened.load(Ordering::Relaxed))
    }
}

/// A connection's byte stream, counted into its node's counters.
struct Counted<S> {
    inner: S,
    counters: Arc<Counters>,
}

impl<S: futures::AsyncRead + Unpin> futures::AsyncRead for Counted<S> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut [u8]) -> Poll<std::io::Result<usize>> {
        let read = Pin::new(&mut self.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(n)) = &read {
            self.counters.received.fetch_add(*n as u64, Ordering::Relaxed);
        }
        read
    }
}

impl<S: futures::AsyncWrite + Unpin> futures::AsyncWrite for Counted<S> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        let written = Pin::new(&mut self.inner).poll_write(cx, buf);
        if let Poll::Ready(Ok(n)) = &written {
            self.counters.sent.fetch_add(*n as u64, Ordering::Relaxed);
        }
        written
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }
    fn poll_close(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_close(cx)
    }
}

enum Command {
    /// Add a peer's address to the routing table.
    Know(PeerId, Multiaddr),
    /// Bootstrap; the reply comes when its last step is done.
    Bootstrap(oneshot::Sender<()>),
    /// Look a record up; the reply says how many peers answered.
    Lookup(kad::RecordKey, oneshot::Sender<usize>),
    /// Send each `(peer, address)` one record request; the reply comes when all are answered.
    Ask(Vec<(PeerId, Multiaddr)>, RecordRequest, oneshot::Sender<()>),
    /// Close every connection.
    Disconnect,
}

struct Handle {
    peer: PeerId,
    addr: Multiaddr,
    commands: mpsc::UnboundedSender<Command>,
    counters: Arc<Counters>,
}

fn spawn(port: u64, with_kad: bool) -> Handle {
    let key = identity::Keypair::generate_ed25519();
    let peer = key.public().to_peer_id();
    let counters = Arc::new(Counters::default());
    let mut swarm = swarm(key, with_kad, counters.clone());
    let addr: Multiaddr = format!("/memory/{port}").parse().expect("address");
    swarm.listen_on(addr.clone()).expect("listen");
    // A public node's address, as AutoNAT confirms it: identify tells it, and what a peer says
    // it can be reached at goes into the routing table (as `weft_p2p::network` does).
    swarm.add_external_address(addr.clone());
    let (commands, rx) = mpsc::unbounded_channel();
    let driver = Driver {
        swarm,
        counters: counters.clone(),
        bootstraps: Default::default(),
        lookups: Default::default(),
        asks: Vec::new(),
        asked: Default::default(),
    };
    tokio::spawn(driver.run(rx));
    Handle { peer, addr, commands, counters }
}

/// A node's swarm: Kademlia with Weft's former settings (or none), identify, and the records
/// protocol, over the memory transport with its bytes counted.
fn swarm(key: identity::Keypair, with_kad: bool, c: Arc<Counters>) -> libp2p::Swarm<Node> {
    let peer = key.public().to_peer_id();
    libp2p::SwarmBuilder::with_existing_identity(key)
        .with_tokio()
        .with_other_transport(|key| {
            let c = c.clone();
            MemoryTransport::default()
                .map(move |s, _| Counted { inner: s, counters: c.clone() })
                .upgrade(Version::V1)
                .authenticate(noise::Config::new(key).expect("noise"))
                .multiplex(yamux::Config::default())
        })
        .expect("transport")
        .with_behaviour(|key| {
            // Weft's settings when it ran Kademlia: its own protocol, the query timeout, no
            // provider records; bootstraps are started here, not on a timer.
            let mut config = kad::Config::new(KAD_PROTOCOL);
            config.set_query_timeout(Duration::from_secs(30));
            config.set_periodic_bootstrap_interval(None);
            config.set_provider_publication_interval(None);
            config.set_record_filtering(kad::StoreInserts::FilterBoth);
            let mut kad = kad::Behaviour::with_config(peer, kad::store::MemoryStore::new(peer), config);
            kad.set_mode(Some(kad::Mode::Server));
            let identify = identify::Behaviour::new(
                identify::Config::new(weft_p2p::versions::PROTOCOL_VERSION.into(), key.public())
                    .with_hide_listen_addrs(true),
            );
            let records = request_response::Behaviour::with_codec(
                Codec::new().0,
                [(weft_p2p::behaviour::RECORDS_PROTOCOL, ProtocolSupport::Full)],
                request_response::Config::default(),
            );
            Node { kad: Toggle::from(with_kad.then_some(kad)), identify, records }
        })
        .expect("behaviour")
        .with_swarm_config(|c| c.with_idle_connection_timeout(Duration::from_secs(3600)))
        .build()
}

/// One node's event loop: the commands it is given and the swarm's events.
struct Driver {
    swarm: libp2p::Swarm<Node>,
    counters: Arc<Counters>,
    bootstraps: std::collections::HashMap<kad::QueryId, oneshot::Sender<()>>,
    lookups: std::collections::HashMap<kad::QueryId, oneshot::Sender<usize>>,
    /// Each `Ask`: the answers still awaited and whom to tell when none is.
    asks: Vec<(usize, Option<oneshot::Sender<()>>)>,
    asked: std::collections::HashMap<request_response::OutboundRequestId, usize>,
}

impl Driver {
    async fn run(mut self, mut rx: mpsc::UnboundedReceiver<Command>) {
        loop {
            tokio::select! {
                command = rx.recv() => match command {
                    None => break,
                    Some(command) => self.on_command(command),
                },
                event = self.swarm.select_next_some() => self.on_event(event),
            }
        }
    }

    fn on_command(&mut self, command: Command) {
        match command {
            Command::Know(p, a) => {
                if let Some(kad) = self.swarm.behaviour_mut().kad.as_mut() {
                    kad.add_address(&p, a);
                }
            }
            Command::Bootstrap(reply) => match self.swarm.behaviour_mut().kad.as_mut().expect("kad").bootstrap() {
                Ok(id) => {
                    self.bootstraps.insert(id, reply);
                }
                Err(_) => {
                    let _ = reply.send(());
                }
            },
            Command::Lookup(key, reply) => {
                let id = self.swarm.behaviour_mut().kad.as_mut().expect("kad").get_record(key);
                self.lookups.insert(id, reply);
            }
            Command::Ask(to, request, reply) => {
                if to.is_empty() {
                    let _ = reply.send(());
                    return;
                }
                for (p, a) in &to {
                    let addressed = Addressed { to: p.to_string(), hops: 1, request: request.clone() };
                    let r = self.swarm.behaviour_mut().records.send_request_with_addresses(
                        p,
                        Frame::Request(addressed),
                        vec![a.clone()],
                    );
                    self.asked.insert(r, self.asks.len());
                }
                self.asks.push((to.len(), Some(reply)));
            }
            Command::Disconnect => {
                let peers: Vec<PeerId> = self.swarm.connected_peers().copied().collect();
                for p in peers {
                    let _ = self.swarm.disconnect_peer_id(p);
                }
            }
        }
    }

    fn on_event(&mut self, event: SwarmEvent<NodeEvent>) {
        match event {
            SwarmEvent::ConnectionEstablished { .. } => {
                self.counters.opened.fetch_add(1, Ordering::Relaxed);
            }
            SwarmEvent::Behaviour(NodeEvent::Identify(identify::Event::Received { peer_id, info, .. })) => {
                for a in info.listen_addrs.into_iter().take(16) {
                    if let Some(kad) = self.swarm.behaviour_mut().kad.as_mut() {
                        kad.add_address(&peer_id, a);
                    }
                }
            }
            SwarmEvent::Behaviour(NodeEvent::Records(event)) => {
                let done = match event {
                    // An owner that holds nothing for the fingerprint, or takes the entry.
                    request_response::Event::Message {
                        message: request_response::Message::Request { request: Frame::Request(r), channel, .. },
                        ..
                    } => {
                        let reply = match r.request {
                            RecordRequest::Get { .. } => RecordReply::Found { entries: Vec::new() },
                            RecordRequest::Put { .. } => RecordReply::Stored,
                        };
                        let _ = self.swarm.behaviour_mut().records.send_response(channel, reply);
                        None
                    }
                    request_response::Event::Message {
                        message: request_response::Message::Response { request_id, .. },
                        ..
                    } => Some(request_id),
                    request_response::Event::OutboundFailure { request_id, .. } => Some(request_id),
                    _ => None,
                };
                if let Some(i) = done.and_then(|r| self.asked.remove(&r)) {
                    let (left, reply) = &mut self.asks[i];
                    *left -= 1;
                    if *left == 0 {
                        if let Some(reply) = reply.take() {
                            let _ = reply.send(());
                        }
                    }
                }
            }
            SwarmEvent::Behaviour(NodeEvent::Kad(kad::Event::OutboundQueryProgressed { id, result, step, stats })) => {
                match result {
                    kad::QueryResult::Bootstrap(Ok(kad::BootstrapOk { num_remaining: 0, .. }))
                    | kad::QueryResult::Bootstrap(Err(_)) => {
                        if let Some(reply) = self.bootstraps.remove(&id) {
                            let _ = reply.send(());
                        }
                    }
                    kad::QueryResult::Bootstrap(Ok(_)) => {
                        // Its next step (a bucket refresh) goes on under the same id.
                    }
                    kad::QueryResult::GetRecord(_) if step.last => {
                        if let Some(reply) = self.lookups.remove(&id) {
                            let _ = reply.send(stats.num_successes() as usize);
                        }
                    }
                    _ => {}
                }
            }
            _ => {}
        }
    }
}

/// Runs `start` on every node, `CONCURRENT` at a time, and waits for each.
async fn every<T>(nodes: &[Handle], start: impl Fn(&Handle) -> oneshot::Receiver<T>) -> Vec<T> {
    let mut out = Vec::with_capacity(nodes.len());
    for batch in nodes.chunks(CONCURRENT) {
        let waits: Vec<oneshot::Receiver<T>> = batch.iter().map(&start).collect();
        for w in waits {
            out.push(w.await.expect("the node answers"));
        }
    }
    out
}

fn bootstrap(h: &Handle) -> oneshot::Receiver<()> {
    let (tx, rx) = oneshot::channel();
    let _ = h.commands.send(Command::Bootstrap(tx));
    rx
}

/// Every node closes its connections: what a round opens is then counted from none.
async fn disconnect(nodes: &[Handle]) {
    for h in nodes {
        let _ = h.commands.send(Command::Disconnect);
    }
    tokio::time::sleep(Duration::from_secs(3)).await;
}

fn quantile(mut v: Vec<f64>, q: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(((v.len() as f64 - 1.0) * q).round() as usize).copied().unwrap_or(0.0)
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len().max(1) as f64
}

/// Each node's counters since `before`.
fn since(nodes: &[Handle], before: &[(u64, u64, usize)]) -> Vec<(f64, f64, f64)> {
    nodes
        .iter()
        .zip(before)
        .map(|(h, b)| {
            let (s, r, o) = h.counters.read();
            ((s - b.0) as f64, (r - b.1) as f64, (o - b.2) as f64)
        })
        .collect()
}

async fn measure(n: usize, seed: u64) {
    let started = Instant::now();
    // Ports of their own: the last size's nodes may not have let theirs go yet.
    let nodes: Vec<Handle> = (0..n).map(|i| spawn(seed * 1_000_000 + i as u64, true)).collect();
    // Each joins through an earlier node (a splitmix64 draw), as volunteers do through their
    // bootstrap peer; then everyone bootstraps twice.
    let mut state = seed;
    let mut draw = |below: usize| {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) % below.max(1) as u64) as usize
    };
    for i in 1..n {
        let via = &nodes[draw(i)];
        let _ = nodes[i].commands.send(Command::Know(via.peer, via.addr.clone()));
    }
    for _ in 0..2 {
        every(&nodes, bootstrap).await;
    }
    disconnect(&nodes).await;
    let before: Vec<_> = nodes.iter().map(|h| h.counters.read()).collect();
    every(&nodes, bootstrap).await;
    let round = since(&nodes, &before);
    disconnect(&nodes).await;
    let before: Vec<_> = nodes.iter().map(|h| h.counters.read()).collect();
    let answered = every(&nodes, |h| {
        let (tx, rx) = oneshot::channel();
        let key = kad::RecordKey::new(&format!("weft/bench/{}", h.peer));
        let _ = h.commands.send(Command::Lookup(key, tx));
        rx
    })
    .await;
    let lookup = since(&nodes, &before);
    // On the ring, with nodes that run no Kademlia (whose routing table would dial peers of
    // its own as connections come and go): every node computes the owners of a fingerprint's
    // blocks from the member set, which the roster gives it.
    disconnect(&nodes).await;
    drop(nodes);
    let nodes: Vec<Handle> = (0..n).map(|i| spawn(seed * 1_000_000 + 500_000 + i as u64, false)).collect();
    let ring = Ring::new(nodes.iter().map(|h| h.peer), 150);
    let addr_of: std::collections::HashMap<PeerId, Multiaddr> =
        nodes.iter().map(|h| (h.peer, h.addr.clone())).collect();
    let owners = |hash: u64, r: usize, me: PeerId| -> Vec<(PeerId, Multiaddr)> {
        let mut to: Vec<PeerId> = records::keys(hash)
            .iter()
            .flat_map(|k| ring.owners_of_point(k.point(), RECORD_OWNERS).into_iter().take(r))
            .collect();
        to.sort();
        to.dedup();
        to.into_iter().filter(|p| *p != me).map(|p| (p, addr_of[&p].clone())).collect()
    };
    let hash_of =
        |h: &Handle| u64::from_le_bytes(blake3::hash(h.peer.to_bytes().as_slice()).as_bytes()[..8].try_into().unwrap());
    let mut ring_parts = Vec::new();
    for (r, request) in [(1, true), (RECORD_OWNERS, false)] {
        disconnect(&nodes).await;
        let before: Vec<_> = nodes.iter().map(|h| h.counters.read()).collect();
        every(&nodes, |h| {
            let (tx, rx) = oneshot::channel();
            let hash = hash_of(h);
            let ask = if request {
                RecordRequest::Get { hash }
            } else {
                // Signed as every entry is (by a key of its own: the owners here do not check).
                let key = identity::Keypair::generate_ed25519();
                let entry = records::DupEntry::signed(&key, hash, format!("https://example.test/{}", h.peer), 1);
                RecordRequest::Put { entry }
            };
            let _ = h.commands.send(Command::Ask(owners(hash, r, h.peer), ask, tx));
            rx
        })
        .await;
        let part = since(&nodes, &before);
        let kb = part.iter().map(|r| r.0 + r.1).sum::<f64>() / 2.0 / 1024.0 / n as f64;
        let opened = part.iter().map(|r| r.2).sum::<f64>() / 2.0 / n as f64;
        ring_parts.push((kb, opened));
    }
    let kb = |v: Vec<f64>| v.into_iter().map(|b| b / 1024.0).collect::<Vec<_>>();
    let sent = kb(round.iter().map(|r| r.0).collect());
    let received = kb(round.iter().map(|r| r.1).collect());
    let opened: Vec<f64> = round.iter().map(|r| r.2).collect();
    let per_lookup_kb = lookup.iter().map(|r| r.0 + r.1).sum::<f64>() / 2.0 / 1024.0 / n as f64;
    let lookup_opened = lookup.iter().map(|r| r.2).sum::<f64>() / 2.0 / n as f64;
    let reached = mean(&answered.iter().map(|a| *a as f64).collect::<Vec<_>>());
    println!(
        "{n:>6} | {:>7.1} / {:>7.1} | {:>7.1} / {:>7.1} | {:>6.1} / {:>6.0} | {:>6.2} / {:>6.2} | {:>8.1} | {:>6.1} | {:>6.1} | {:>6.1} / {:>4.1} | {:>6.1} / {:>4.1} | {:>5.0} s",
        mean(&sent),
        quantile(sent.clone(), 0.99),
        mean(&received),
        quantile(received.clone(), 0.99),
        mean(&opened),
        quantile(opened.clone(), 0.99),
        mean(&sent) / 300.0,
        quantile(sent, 0.99) / 300.0,
        per_lookup_kb,
        lookup_opened,
        reached,
        ring_parts[0].0,
        ring_parts[0].1,
        ring_parts[1].0,
        ring_parts[1].1,
        started.elapsed().as_secs_f64()
    );
}

#[tokio::main]
async fn main() {
    let sizes: Vec<usize> = std::env::args().skip(1).map(|a| a.parse().expect("a network size")).collect();
    let sizes = if sizes.is_empty() { vec![100, 300, 1000] } else { sizes };
    println!("Kademlia per node: one bootstrap (what every 300 s repeats) and one record lookup of a missing key;");
    println!("the ring (Weft's records): one lookup of a fingerprint nobody published, one publication");
    println!(
        "     N | sent KB mean / p99 | recv KB mean / p99 | conns opened mean / p99 | sent KB/s at 300 s mean / p99 | lookup KB (network) | lookup conns | peers answered | ring lookup KB / conns | ring publish KB / conns | wall"
    );
    for (i, n) in sizes.into_iter().enumerate() {
        measure(n, 1 + i as u64).await;
    }
}
