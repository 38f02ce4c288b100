//! The network's configuration as the event loop uses it (parsed and checked from
//! `[p2p]`), and its typed errors.

use libp2p::multiaddr::Protocol;
use libp2p::{Multiaddr, PeerId};
use std::time::Duration;
use weft_config::P2pConfig;

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
    pub max_connections: u32,
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
    /// The embedding model's id (see the node's `IndexService::model`): postings of another
    /// model are refused. `None`: this node keeps no index and holds no postings.
    pub model: Option<String>,
    /// Members that hold a copy of each document this node indexes (`index.replicas`; 0 when
    /// the node keeps no index).
    pub doc_replicas: usize,
    /// Where the members this node is connected to are written down, and read at the next
    /// start (see `network/saved.rs`; the node keeps it in its data dir). `None`: not kept.
    pub saved_peers: Option<std::path::PathBuf>,
    /// URL batches go over the grid (`crate::grid`) once the ring holds more members than this
    /// ([`crate::grid::FROM_MEMBERS`]); straight below.
    pub grid_from_members: usize,
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
            max_connections: c.max_connections,
            allow_private: false,
            search: weft_config::SearchConfig::default(),
            private_addrs: c.private_addrs,
            upnp: c.upnp,
            relays: c.relays,
            autonat_timeout: Duration::from_secs(c.autonat_timeout_secs),
            relay: c.relay.clone(),
            model: None,
            doc_replicas: 0,
            saved_peers: None,
            grid_from_members: crate::grid::FROM_MEMBERS,
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
