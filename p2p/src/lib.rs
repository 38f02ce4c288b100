//! Weft's peer-to-peer layer: libp2p with one composed behaviour, and the logic that turns a
//! set of volunteers' nodes into one crawler.
//!
//! - [`ring`]: the consistent hash ring that decides which member crawls which host (pure).
//! - [`membership`]: the rings this node routes by, following the roster, and what it
//!   remembers of the rings before (pure).
//! - [`identity`]: the persistent ed25519 key in the data dir.
//! - [`address_book`]: where the peers this node may dial are, for the swarm's dials.
//! - [`grid`]: the data plane's overlay — members in a grid of buckets by identity, links one
//!   coordinate away, messages forwarded a coordinate a hop (pure).
//! - [`keep_alive`]: which idle connections stay open (the roster's peers, grid links) and how
//!   long the others linger.
//! - [`behaviour`]: the composed `NetworkBehaviour` (identify, ping, the address book, which
//!   connections are kept, the request-response protocols, connection limits, AutoNAT, relay, hole punching, UPnP).
//! - [`reachability`]: whether others can reach this node, and what follows — addresses
//!   advertised, the relay role, relay slots behind NAT (pure).
//! - [`codec`]: the CBOR wire codec of the URL exchange, which lets bad input reach the ban.
//! - [`exchange`]: URL exchange — wire types, validation, the per-owner outbox, rate limits.
//! - [`records`]: near-duplicate fingerprints as records on the owners of their blocks.
//! - [`placement`]: semantic placement — the network's codebook of cells, where each cell
//!   lives on the ring, and whom a question asks (pure).
//! - [`signing`]: what a publisher signs of a record it sends, and the check (pure).
//! - [`replicas`]: document copies held by the owners of each document's id, their checks,
//!   and `/weft/doc/1` that reads a document from a holder (pure).
//! - [`copy_sync`]: anti-entropy — two holders compare their copies bucket by bucket and the
//!   one that lacks some asks for them (pure).
//! - [`doc_wire`]: `/weft/doc/1`'s requests and replies (pure).
//! - [`postings`]: what a node publishes about each chunk to its cells' owners, and the checks
//!   a received posting passes (pure).
//! - [`publishing`]: the outbox of postings — per-owner batches, retries, re-routing (pure).
//! - [`search`]: `/weft/search/1` — wire types, checks, and merging peers' answers (pure).
//! - [`roster`]: the member set at any size — signed join and departure events, anti-entropy
//!   digests, monitors, sponsored admission (pure).
//! - [`versions`]: the protocol version a peer speaks, and peers refused for another (pure).
//! - [`network`]: the swarm, its event loop, and the handle the node talks to.
//!
//! Module order (each module uses only those before it; `tests/architecture/tests/module_graph.rs`
//! checks it): address_book, codec, grid, identity, keep_alive, reachability, ring, signing, versions → exchange,
//! membership, placement, records → replicas, roster → copy_sync, postings, search → doc_wire,
//! publishing → behaviour → network.

pub mod address_book;
pub mod behaviour;
pub mod codec;
pub mod copy_sync;
pub mod doc_wire;
pub mod exchange;
pub mod grid;
pub mod identity;
pub mod keep_alive;
pub mod membership;
pub mod network;
pub mod placement;
pub mod postings;
pub mod publishing;
pub mod reachability;
pub mod records;
pub mod replicas;
pub mod ring;
pub mod roster;
pub mod search;
pub(crate) mod signing;
pub mod versions;

pub use exchange::{UrlKind, WireUrl, SECOND_HOLDER_WITHIN};
pub use libp2p::PeerId;
pub use network::{
    start, DocAnswer, DocInbound, DocsStatus, Inbound, Joining, NetworkAnswer, NetworkConfig, NetworkHandle,
    NetworkStatus, P2pError, PeerAnswer, PostingsInbound, PostingsStatus, RosterStatus, SearchInbound, SearchStatus,
    Started,
};
pub use ring::{Ring, DEFAULT_VNODES};
