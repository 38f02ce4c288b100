//! The one composed `NetworkBehaviour` of a Weft node. Transports (TCP and QUIC, Noise, Yamux)
//! are set up by the swarm builder in [`crate::network`]; this is what runs over them.

use crate::address_book::AddressBook;
use crate::codec::Codec;
use crate::doc_wire::DocWire;
use crate::exchange::UrlWire;
use crate::keep_alive::KeepAlive;
use crate::postings::PostingWire;
use crate::records::RecordWire;
use crate::roster::wire::RosterWire;
use crate::search::SearchWire;
use libp2p::identity::Keypair;
use libp2p::request_response::{self, ProtocolSupport};
use libp2p::swarm::behaviour::toggle::Toggle;
use libp2p::swarm::NetworkBehaviour;
use libp2p::{
    allow_block_list, autonat, connection_limits, dcutr, identify, ping, relay, upnp, PeerId, StreamProtocol,
};
use std::time::Duration;
use weft_config::RelayConfig;

/// URL exchange: batches of URLs to the member that owns their hosts.
pub const URLS_PROTOCOL: StreamProtocol = StreamProtocol::new("/weft/urls/1");
/// Network search: a query vector to a peer, its best chunks back.
pub const SEARCH_PROTOCOL: StreamProtocol = StreamProtocol::new("/weft/search/1");
/// Semantic placement: batches of postings to the owners of their cells.
pub const POSTINGS_PROTOCOL: StreamProtocol = StreamProtocol::new("/weft/postings/1");
/// Documents: one document read from a member that holds it, and holders comparing copies.
pub const DOCS_PROTOCOL: StreamProtocol = StreamProtocol::new("/weft/doc/1");
/// Near-duplicate records: a fingerprint asked of, or an entry sent to, the owners of its
/// blocks (see `crate::records`).
pub const RECORDS_PROTOCOL: StreamProtocol = StreamProtocol::new("/weft/records/1");
/// The roster's protocol (see `crate::roster`): digests, pages, sponsorships, accusations.
pub const ROSTER_PROTOCOL: StreamProtocol = StreamProtocol::new("/weft/roster/1");
/// Roster requests in flight on one connection: a digest round, its follow-up, a page and a
/// few sponsorships or accusations.
const ROSTER_STREAMS_PER_CONNECTION: usize = 8;
pub use crate::versions::PROTOCOL_VERSION;

#[derive(NetworkBehaviour)]
pub struct Behaviour {
    /// Peers banned for sending invalid data: their connections are closed and refused.
    pub blocked: allow_block_list::Behaviour<allow_block_list::BlockedPeers>,
    pub limits: connection_limits::Behaviour,
    pub identify: identify::Behaviour,
    pub ping: ping::Behaviour,
    /// Where the peers this node may dial are (see `crate::address_book`).
    pub addresses: AddressBook,
    /// Which idle connections stay open (see `crate::keep_alive`).
    pub keep_alive: KeepAlive,
    pub urls: request_response::Behaviour<Codec<UrlWire>>,
    pub search: request_response::Behaviour<Codec<SearchWire>>,
    pub postings: request_response::Behaviour<Codec<PostingWire>>,
    pub docs: request_response::Behaviour<Codec<DocWire>>,
    pub roster: request_response::Behaviour<Codec<RosterWire>>,
    pub records: request_response::Behaviour<Codec<RecordWire>>,
    /// Reachability: AutoNAT v2 asks other members to dial this node's candidate addresses
    /// back, and answers their requests in turn.
    pub autonat: autonat::v2::client::Behaviour,
    pub autonat_server: autonat::v2::server::Behaviour,
    /// Circuit Relay v2: the relay this node offers while it is public (see
    /// [`crate::reachability`]), and the client that reserves slots on others' while behind NAT.
    pub relay: relay::Behaviour,
    pub relay_client: relay::client::Behaviour,
    /// Hole punching: turns a relayed connection into a direct one where both NATs allow it.
    pub dcutr: dcutr::Behaviour,
    /// Port mapping on the home router (`p2p.upnp`).
    pub upnp: Toggle<upnp::tokio::Behaviour>,
}

/// Concurrent streams of `/weft/urls/1` on one connection, both ways: an honest peer has a
/// batch or two on the way to one owner; more are dropped (inbound) or fail and are retried
/// (outbound), so one connection cannot hold more than this many half-sent batches.
pub const URL_STREAMS_PER_CONNECTION: usize = 16;
/// The same for `/weft/search/1` (a query fans out to each peer once).
pub const SEARCH_STREAMS_PER_CONNECTION: usize = 16;

/// The same for `/weft/postings/1` (a publisher has one batch in flight per owner).
pub const POSTING_STREAMS_PER_CONNECTION: usize = 8;

/// The same for `/weft/doc/1` (a reader asks a holder or two at a time; a co-holder
/// comparing copies asks one thing at a time).
pub const DOC_STREAMS_PER_CONNECTION: usize = 8;

/// The same for `/weft/records/1` (a lookup asks an owner once, a publication sends it one
/// entry).
pub const RECORD_STREAMS_PER_CONNECTION: usize = 16;

/// The settings the behaviour is built from.
pub struct Settings {
    pub max_connections: u32,
    pub relay: RelayConfig,
    pub upnp: bool,
    /// The codecs of the request-response protocols (made beforehand: the event loop keeps
    /// their request budgets, see [`crate::codec::RequestBudget`]).
    pub urls: Codec<UrlWire>,
    pub search: Codec<SearchWire>,
    pub postings: Codec<PostingWire>,
    pub docs: Codec<DocWire>,
    pub roster: Codec<RosterWire>,
    pub records: Codec<RecordWire>,
}

impl Behaviour {
    pub fn new(key: &Keypair, relay_client: relay::client::Behaviour, settings: Settings) -> Result<Behaviour, String> {
        let Settings { max_connections, relay: relay_limits, upnp, urls, search, postings, docs, roster, records } =
            settings;
        let peer = key.public().to_peer_id();
        // Some slots are kept for the connections this node dials (its bootstrap peers, the
        // members it must meet): strangers connecting in fill at most the rest, so they cannot
        // lock a volunteer out of its own network.
        let incoming = max_connections.saturating_sub(reserved_outgoing(max_connections)).max(1);
        let limits = connection_limits::ConnectionLimits::default()
            .with_max_established(Some(max_connections))
            .with_max_established_incoming(Some(incoming))
            // A direct connection, a relayed one, and an AutoNAT dial-back.
            .with_max_established_per_peer(Some(3))
            .with_max_pending_incoming(Some(max_connections.min(64)));
        let urls = request_response::Behaviour::with_codec(
            urls,
            [(URLS_PROTOCOL, ProtocolSupport::Full)],
            request_response::Config::default()
                .with_request_timeout(Duration::from_secs(30))
                .with_max_concurrent_streams(URL_STREAMS_PER_CONNECTION),
        );
        let search = request_response::Behaviour::with_codec(
            search,
            [(SEARCH_PROTOCOL, ProtocolSupport::Full)],
            request_response::Config::default()
                .with_request_timeout(Duration::from_secs(10))
                .with_max_concurrent_streams(SEARCH_STREAMS_PER_CONNECTION),
        );
        let postings = request_response::Behaviour::with_codec(
            postings,
            [(POSTINGS_PROTOCOL, ProtocolSupport::Full)],
            request_response::Config::default()
                .with_request_timeout(Duration::from_secs(30))
                .with_max_concurrent_streams(POSTING_STREAMS_PER_CONNECTION),
        );
        let docs = request_response::Behaviour::with_codec(
            docs,
            [(DOCS_PROTOCOL, ProtocolSupport::Full)],
            request_response::Config::default()
                .with_request_timeout(Duration::from_secs(10))
                .with_max_concurrent_streams(DOC_STREAMS_PER_CONNECTION),
        );
        let roster = request_response::Behaviour::with_codec(
            roster,
            [(ROSTER_PROTOCOL, ProtocolSupport::Full)],
            request_response::Config::default()
                .with_request_timeout(Duration::from_secs(10))
                .with_max_concurrent_streams(ROSTER_STREAMS_PER_CONNECTION),
        );
        let records = request_response::Behaviour::with_codec(
            records,
            [(RECORDS_PROTOCOL, ProtocolSupport::Full)],
            request_response::Config::default()
                .with_request_timeout(Duration::from_secs(10))
                .with_max_concurrent_streams(RECORD_STREAMS_PER_CONNECTION),
        );
        Ok(Behaviour {
            blocked: allow_block_list::Behaviour::default(),
            limits: connection_limits::Behaviour::new(limits),
            // Only the addresses `crate::reachability` confirmed go out (a NATed node's LAN
            // addresses are of no use to anyone else).
            identify: identify::Behaviour::new(
                identify::Config::new(PROTOCOL_VERSION.into(), key.public()).with_hide_listen_addrs(true),
            ),
            ping: ping::Behaviour::default(),
            addresses: AddressBook::default(),
            keep_alive: KeepAlive::default(),
            urls,
            search,
            postings,
            docs,
            roster,
            records,
            autonat: autonat::v2::client::Behaviour::default(),
            autonat_server: autonat::v2::server::Behaviour::default(),
            relay: relay::Behaviour::new(peer, relay_config(&relay_limits)),
            relay_client,
            dcutr: dcutr::Behaviour::new(peer),
            upnp: Toggle::from(upnp.then(upnp::tokio::Behaviour::default)),
        })
    }
}

impl BehaviourEvent {
    /// The peer a Weft message (a request, an answer or their failure) went to or came from;
    /// none for the transport's own chatter (pings, identify, AutoNAT, relays), which does not
    /// count as using a connection (see `crate::keep_alive`).
    pub fn message_peer(&self) -> Option<PeerId> {
        fn peer<Q, A>(event: &request_response::Event<Q, A>) -> PeerId {
            match event {
                request_response::Event::Message { peer, .. }
                | request_response::Event::OutboundFailure { peer, .. }
                | request_response::Event::InboundFailure { peer, .. }
                | request_response::Event::ResponseSent { peer, .. } => *peer,
            }
        }
        match self {
            BehaviourEvent::Urls(e) => Some(peer(e)),
            BehaviourEvent::Search(e) => Some(peer(e)),
            BehaviourEvent::Postings(e) => Some(peer(e)),
            BehaviourEvent::Docs(e) => Some(peer(e)),
            BehaviourEvent::Roster(e) => Some(peer(e)),
            BehaviourEvent::Records(e) => Some(peer(e)),
            _ => None,
        }
    }
}

/// Connection slots only this node's own dials may take: an eighth of the total, at least 8.
pub fn reserved_outgoing(max_connections: u32) -> u32 {
    (max_connections / 8).max(8).min(max_connections / 2)
}

/// The relay's limits from the configuration (libp2p's rate limiters stay at their defaults).
fn relay_config(c: &RelayConfig) -> relay::Config {
    relay::Config {
        max_reservations: c.max_reservations,
        max_reservations_per_peer: c.max_reservations_per_peer,
        max_circuits: c.max_circuits,
        max_circuits_per_peer: c.max_circuits_per_peer,
        max_circuit_duration: Duration::from_secs(c.max_circuit_secs),
        max_circuit_bytes: c.max_circuit_bytes,
        ..relay::Config::default()
    }
}
