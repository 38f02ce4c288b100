//! Weft's peer-to-peer layer. So far: [`ring`], the consistent hash ring that decides which
//! member crawls which host. The libp2p behaviour (Kademlia, membership, URL exchange, DHT
//! records) is being built on it (issue 5).

pub mod ring;

pub use ring::{Ring, DEFAULT_VNODES};
