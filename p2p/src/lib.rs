//! Weft's libp2p behaviour: Kademlia, membership, the blake3 hash ring, URL exchange, DHT
//! records and the search protocol. Built by the p2p milestone; nothing lives here yet.
