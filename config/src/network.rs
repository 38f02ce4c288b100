//! The network's settings: membership and transport (`p2p`), and how a question is spread over
//! the members (`search`).

use serde::{Deserialize, Serialize};

/// The peer-to-peer network. Multiaddrs are kept as strings here (this crate knows nothing of
/// libp2p); the p2p layer parses them and says which one is wrong.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct P2pConfig {
    /// Join a network (implied by `--bootstrap`); off: a standalone node.
    pub enabled: bool,
    /// Multiaddrs to listen on (TCP and QUIC).
    pub listen: Vec<String>,
    /// Peers to join through: multiaddrs ending in `/p2p/<peer id>`.
    pub bootstrap: Vec<String>,
    /// Virtual nodes per member on the hash ring.
    pub vnodes: usize,
    /// Established connections at most; an eighth (at least 8) is kept for the connections
    /// this node dials, so strangers connecting in cannot take them all.
    pub max_connections: u32,
    /// At a graceful stop (SIGTERM, Ctrl-C) the node leaves the network at once and hands its
    /// queued URLs to their new owners; once its last requests ended, it waits at most this
    /// long for the hand-off to be acknowledged (and, when the stop was asked, at most half of
    /// it for the pages its browser is rendering before it leaves the ring).
    /// Whatever is not acknowledged stays in the outbox journal and goes out at the next start.
    pub leave_timeout_secs: u64,
    /// Advertise private and loopback addresses (identify, hence the DHT) even on
    /// a network with public members. Off: they go out only when every peer is reached over a
    /// private address (a LAN, a test on 127.0.0.1).
    pub private_addrs: bool,
    /// Ask the home router for a port mapping (UPnP IGD), so a volunteer whose router allows it
    /// becomes directly reachable.
    pub upnp: bool,
    /// Relays a node behind NAT reserves a slot on (among the public members).
    pub relays: usize,
    /// Without any AutoNAT verdict after this long, a node calls itself behind NAT.
    pub autonat_timeout_secs: u64,
    /// The Circuit Relay v2 every publicly reachable node offers the others.
    pub relay: RelayConfig,
    /// A key of earlier versions that configures nothing now (the period of Kademlia's
    /// routing-table refresh: Weft runs no Kademlia). Accepted and named in a warning at start.
    #[serde(skip_serializing)]
    pub bootstrap_interval_secs: Retired,
}

/// Limits of the relay a public node offers: relayed traffic is small (URL batches, queries,
/// roster digests) and only until hole punching makes the connection direct.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RelayConfig {
    /// Slots held for nodes behind NAT, in all and per peer.
    pub max_reservations: usize,
    pub max_reservations_per_peer: usize,
    /// Circuits open at once, in all and per peer.
    pub max_circuits: usize,
    pub max_circuits_per_peer: usize,
    /// A circuit closes after this long or this many bytes (each way); the next request opens
    /// another.
    pub max_circuit_secs: u64,
    pub max_circuit_bytes: u64,
}

impl Default for RelayConfig {
    fn default() -> Self {
        RelayConfig {
            max_reservations: 128,
            max_reservations_per_peer: 4,
            max_circuits: 64,
            max_circuits_per_peer: 8,
            max_circuit_secs: 600,
            max_circuit_bytes: 8 << 20,
        }
    }
}

impl Default for P2pConfig {
    fn default() -> Self {
        P2pConfig {
            enabled: false,
            listen: vec!["/ip4/0.0.0.0/tcp/7701".into(), "/ip4/0.0.0.0/udp/7701/quic-v1".into()],
            bootstrap: Vec::new(),
            vnodes: 150,
            max_connections: 256,
            leave_timeout_secs: 30,
            private_addrs: false,
            upnp: true,
            relays: 2,
            autonat_timeout_secs: 30,
            relay: RelayConfig::default(),
            bootstrap_interval_secs: Retired::default(),
        }
    }
}

/// Searching the network: which peers a query goes to, and how long it
/// waits for them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SearchConfig {
    /// Peers a network query asks at most, hedges for slow or failed peers included (when the
    /// share below reaches it, the first wave leaves one of them for a hedge).
    pub fanout: usize,
    /// ... but never fewer than this many (when there are that many) ...
    pub min_fanout: usize,
    /// ... and otherwise this share of the members: small networks are not flooded, large
    /// ones are searched in proportion.
    pub fanout_share: f64,
    /// A network query returns what has arrived by then (marked partial if a peer is missing).
    pub deadline_ms: u64,
    /// A peer that has not answered after this long is hedged: the next candidate is asked too.
    pub hedge_ms: u64,
    /// Queries per second one peer may send this node (burst twice that); beyond: busy.
    pub peer_queries_per_sec: f64,
    /// Owners of each cell of the embedding space (semantic placement): a chunk's postings go
    /// to this many members, so a question finds it while its crawler and replicas − 1 of its
    /// owners are away. 1 ..= 8
    pub replicas: usize,
    /// Cells of the embedding space a question ranks for whom to ask: the owners of the best
    /// are asked first, up to the fan-out, the others stand in for them. 1 ..= 256
    pub nprobe: usize,
    /// Keys of earlier versions that configure nothing now (a node's semantic summary and its
    /// buckets in the DHT, gone: a question asks the owners of its cells). Accepted, so that a
    /// config written for those versions still loads, and named in a warning at start.
    #[serde(skip_serializing)]
    pub centroids: Retired,
    #[serde(skip_serializing)]
    pub summary_interval_secs: Retired,
    #[serde(skip_serializing)]
    pub probes: Retired,
}

/// A key this version reads no more: any value is accepted and ignored, and it is never
/// written. Whether it was given, for the warning ([`crate::Config::retired_keys`]); two
/// configs that differ only in retired keys are equal.
#[derive(Debug, Clone, Copy, Default)]
pub struct Retired {
    pub given: bool,
}

impl PartialEq for Retired {
    fn eq(&self, _: &Retired) -> bool {
        true
    }
}

impl<'de> Deserialize<'de> for Retired {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Retired, D::Error> {
        serde::de::IgnoredAny::deserialize(d)?;
        Ok(Retired { given: true })
    }
}

impl Default for SearchConfig {
    fn default() -> Self {
        SearchConfig {
            fanout: 8,
            min_fanout: 4,
            fanout_share: 0.2,
            deadline_ms: 800,
            hedge_ms: 300,
            peer_queries_per_sec: 20.0,
            replicas: 3,
            nprobe: 16,
            centroids: Retired::default(),
            summary_interval_secs: Retired::default(),
            probes: Retired::default(),
        }
    }
}

impl SearchConfig {
    /// Peers a query goes to in a network of `members` (this node included).
    pub fn fanout_for(&self, members: usize) -> usize {
        let others = members.saturating_sub(1);
        let share = (self.fanout_share * members as f64).ceil() as usize;
        share.max(self.min_fanout).min(self.fanout).min(others)
    }
}
