//! The one composed `NetworkBehaviour` of a Weft node. Transports (TCP and QUIC, Noise, Yamux)
//! are set up by the swarm builder in [`crate::network`]; this is what runs over them.

use crate::codec::Codec;
use crate::exchange::UrlWire;
use crate::search::SearchWire;
use libp2p::identity::Keypair;
use libp2p::request_response::{self, ProtocolSupport};
use libp2p::swarm::NetworkBehaviour;
use libp2p::{allow_block_list, connection_limits, gossipsub, identify, kad, ping, StreamProtocol};
use std::time::Duration;

/// Weft's Kademlia protocol: a network of its own, not the public IPFS DHT.
pub const KAD_PROTOCOL: StreamProtocol = StreamProtocol::new("/weft/kad/1.0.0");
/// URL exchange: batches of URLs to the member that owns their hosts.
pub const URLS_PROTOCOL: StreamProtocol = StreamProtocol::new("/weft/urls/1");
/// Network search: a query vector to a peer, its best chunks back.
pub const SEARCH_PROTOCOL: StreamProtocol = StreamProtocol::new("/weft/search/1");
/// What identify announces.
pub const PROTOCOL_VERSION: &str = "/weft/0.1.0";
/// Largest gossipsub message: a routing summary of 64 centroids of 384 dimensions in f16 is
/// 48 KiB; membership heartbeats are a few hundred bytes (and checked for that).
pub const MAX_GOSSIP_BYTES: usize = 64 * 1024;

#[derive(NetworkBehaviour)]
pub struct Behaviour {
    /// Peers banned for sending invalid data: their connections are closed and refused.
    pub blocked: allow_block_list::Behaviour<allow_block_list::BlockedPeers>,
    pub limits: connection_limits::Behaviour,
    pub identify: identify::Behaviour,
    pub ping: ping::Behaviour,
    pub kad: kad::Behaviour<kad::store::MemoryStore>,
    pub gossipsub: gossipsub::Behaviour,
    pub urls: request_response::Behaviour<Codec<UrlWire>>,
    pub search: request_response::Behaviour<Codec<SearchWire>>,
}

impl Behaviour {
    pub fn new(key: &Keypair, max_connections: u32, refresh: Duration) -> Result<Behaviour, String> {
        let peer = key.public().to_peer_id();
        let mut kad_config = kad::Config::new(KAD_PROTOCOL);
        kad_config.set_periodic_bootstrap_interval(Some(refresh));
        kad_config.set_query_timeout(Duration::from_secs(30));
        // Provider records announce semantic buckets (see `summaries`); they change as the
        // index grows, so they are short-lived and republished often.
        kad_config.set_provider_record_ttl(Some(Duration::from_secs(30 * 60)));
        kad_config.set_provider_publication_interval(Some(Duration::from_secs(10 * 60)));
        let store_config = kad::store::MemoryStoreConfig {
            max_records: 1 << 20,
            max_value_bytes: crate::records::MAX_RECORD_BYTES,
            ..Default::default()
        };
        let store = kad::store::MemoryStore::with_config(peer, store_config);
        let mut kad = kad::Behaviour::with_config(peer, store, kad_config);
        // Every Weft node serves the DHT: volunteers' boxes are reachable by design.
        kad.set_mode(Some(kad::Mode::Server));
        let gossip_config = gossipsub::ConfigBuilder::default()
            .heartbeat_interval(Duration::from_secs(1))
            .validation_mode(gossipsub::ValidationMode::Strict)
            .max_transmit_size(MAX_GOSSIP_BYTES)
            .build()
            .map_err(|e| e.to_string())?;
        let gossipsub = gossipsub::Behaviour::new(gossipsub::MessageAuthenticity::Signed(key.clone()), gossip_config)?;
        let limits = connection_limits::ConnectionLimits::default()
            .with_max_established(Some(max_connections))
            .with_max_established_per_peer(Some(2))
            .with_max_pending_incoming(Some(max_connections.min(64)));
        let urls = request_response::Behaviour::with_codec(
            Codec::default(),
            [(URLS_PROTOCOL, ProtocolSupport::Full)],
            request_response::Config::default().with_request_timeout(Duration::from_secs(30)),
        );
        let search = request_response::Behaviour::with_codec(
            Codec::default(),
            [(SEARCH_PROTOCOL, ProtocolSupport::Full)],
            request_response::Config::default().with_request_timeout(Duration::from_secs(10)),
        );
        Ok(Behaviour {
            blocked: allow_block_list::Behaviour::default(),
            limits: connection_limits::Behaviour::new(limits),
            identify: identify::Behaviour::new(identify::Config::new(PROTOCOL_VERSION.into(), key.public())),
            ping: ping::Behaviour::default(),
            kad,
            gossipsub,
            urls,
            search,
        })
    }
}
