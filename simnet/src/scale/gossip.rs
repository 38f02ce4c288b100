//! What a gossiped message costs the network: the real messages' sizes, and how many copies a
//! gossipsub mesh carries of each.
//!
//! Sizes come from the encoders that design used: a heartbeat as `heartbeats::Heartbeat`
//! encodes it and a routing summary as [`Summary`] (the configured 32 centroids of the model's
//! 384 dimensions), each sealed as [`seal`] did with a real key. (Weft gossips nothing now:
//! the summaries' topic went with the heartbeats; these are that design's wire, kept to
//! measure it.)
//!
//! Copies come from floods over a random mesh as gossipsub 0.50 builds it with its defaults
//! (each member grafts 6 peers and prunes back to 6 above 12): a member forwards a message it
//! sees first to its mesh peers but the one it came from and those it already has it from, at its
//! uplink's pace, and — for messages over 1,000 bytes — not to those whose IDONTWANT reached it
//! before it sent (gossipsub 1.2). Duplicates cost their bytes; only the first copy is read.

use super::heartbeats::Heartbeat;
use crate::rng::Rng;
use libp2p::identity::Keypair;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// gossipsub's mesh degree (`mesh_n`), its upper bound (`mesh_n_high`) and the lower one below
/// which a member grafts more (`mesh_n_low`), as rust-libp2p 0.57 configures them by default.
pub const MESH_N: usize = 6;
pub const MESH_N_HIGH: usize = 12;
pub const MESH_N_LOW: usize = 5;
/// Messages above this many bytes are announced with IDONTWANT to the mesh on first receipt.
pub const IDONTWANT_ABOVE: usize = 1000;
/// Bytes a gossiped message costs on the wire beyond its data: the RPC's protobuf framing and
/// topic, a yamux frame header and the Noise frame's length and tag.
pub const FRAMING: usize = 55;
/// A message id (20 bytes of blake3 of the sealed message), as IHAVE lists them.
pub const ID_BYTES: usize = 20;
/// gossipsub's gossip: every second (its heartbeat) a member tells at least `GOSSIP_LAZY`
/// peers outside its mesh, or a quarter of them (`gossip_factor`), the ids of the messages of
/// the last three heartbeats (`history_gossip`), at most `MAX_IHAVE` ids a message.
pub const GOSSIP_LAZY: usize = 6;
pub const GOSSIP_FACTOR: f64 = 0.25;
pub const HISTORY_GOSSIP_SECS: f64 = 3.0;
pub const MAX_IHAVE: usize = 5000;
/// A home uplink: 10 Mbit/s.
pub const UPLINK_BYTES_PER_SEC: f64 = 1.25e6;

/// What a member's IHAVE gossip sends in a minute with `outside` connected peers outside its
/// mesh, when each topic carries `rates` messages a second: to how many peers it tells each
/// second, and the bytes. Every second it tells max(6, a quarter of those peers) the ids of the
/// last three seconds, on each topic.
pub fn ihave_per_minute(outside: usize, rates: &[f64]) -> (f64, f64) {
    let outside = outside as f64;
    let peers = (GOSSIP_LAZY as f64).max(GOSSIP_FACTOR * outside).min(outside);
    let mut bytes = 0.0;
    for rate in rates {
        let ids = (rate * HISTORY_GOSSIP_SECS).min(MAX_IHAVE as f64);
        if ids > 0.0 {
            bytes += 60.0 * peers * (ids * ID_BYTES as f64 + FRAMING as f64);
        }
    }
    (peers, bytes)
}

/// The two gossiped messages' sealed sizes, in bytes.
#[derive(Debug, Clone, Copy)]
pub struct Sizes {
    pub heartbeat: usize,
    pub summary: usize,
}

impl Sizes {
    /// Encodes and seals a typical heartbeat (two addresses, a relay flag, its period) and a
    /// summary of `centroids` × `dims`.
    pub fn real(centroids: usize, dims: usize) -> Sizes {
        let key = Keypair::generate_ed25519();
        let peer = key.public().to_peer_id().to_string();
        let hb = Heartbeat {
            peer: peer.clone(),
            addrs: vec!["/ip4/203.0.113.7/tcp/7701".into(), "/ip4/203.0.113.7/udp/7701/quic-v1".into()],
            capacity: 10,
            leaving: false,
            relay: true,
            joined: 1_780_000_000,
            left: Vec::new(),
            every: 60,
        };
        let heartbeat = seal(&key, super::heartbeats::TOPIC, &hb.encode()).len();
        let vectors: Vec<Vec<f32>> =
            (0..centroids).map(|c| (0..dims).map(|d| ((c * dims + d) as f32).sin()).collect()).collect();
        let summary = Summary::new(peer, &vectors, vec![100; centroids]);
        let summary = seal(&key, SUMMARIES_TOPIC, &summary.encode()).len();
        Sizes { heartbeat, summary }
    }
}

/// The routing summaries' gossipsub topic.
pub const SUMMARIES_TOPIC: &str = "/weft/summaries/2";

/// A routing summary as it was gossiped: a member's centroids as f16, each with the chunks it
/// stands for, versioned and naming the embedding model.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Summary {
    peer: String,
    version: u64,
    model: String,
    dims: u32,
    weights: Vec<u32>,
    #[serde(with = "serde_bytes")]
    centroids: Vec<u8>,
}

impl Summary {
    pub fn new(peer: String, centroids: &[Vec<f32>], weights: Vec<u32>) -> Summary {
        let dims = centroids.first().map_or(0, Vec::len) as u32;
        let centroids = centroids.iter().flatten().flat_map(|x| half::f16::from_f32(*x).to_le_bytes()).collect();
        Summary { peer, version: 1, model: "all-MiniLM-L6-v2".into(), dims, weights, centroids }
    }

    pub fn encode(&self) -> Vec<u8> {
        cbor4ii::serde::to_vec(Vec::new(), self).expect("summaries always encode")
    }
}

/// `payload` sealed by `key` for `topic` as that design did: `WG1` · key length · protobuf
/// public key · sequence (8 bytes) · signature length · signature · payload (the signature,
/// 64 bytes, was over the tag, the topic, the sequence and the payload, length-prefixed).
pub fn seal(key: &Keypair, topic: &str, payload: &[u8]) -> Vec<u8> {
    let seq: u64 = 1_780_000_000_000;
    let public = key.public().encode_protobuf();
    let signed = [b"weft-gossip/1".as_slice(), topic.as_bytes(), &seq.to_be_bytes(), payload].concat();
    let signature = key.sign(&signed).expect("an ed25519 key signs");
    let mut out = b"WG1".to_vec();
    out.push(public.len() as u8);
    out.extend_from_slice(&public);
    out.extend_from_slice(&seq.to_be_bytes());
    out.push(signature.len() as u8);
    out.extend_from_slice(&signature);
    out.extend_from_slice(payload);
    out
}

/// Members on a plane: the one-way latency between two of them grows with their distance
/// (5 ms to ~175 ms, a continent to the other side of the world).
pub fn latency(a: (f64, f64), b: (f64, f64)) -> f64 {
    let d = ((a.0 - b.0).powi(2) + (a.1 - b.1).powi(2)).sqrt();
    0.005 + 0.120 * d
}

/// A random gossipsub mesh over `n` members: each grafts [`MESH_N`] others; a member above
/// [`MESH_N_HIGH`] prunes back to [`MESH_N`].
pub fn random_mesh(n: usize, rng: &mut Rng) -> Vec<Vec<u32>> {
    let mut adj: Vec<Vec<u32>> = vec![Vec::new(); n];
    for a in 0..n {
        let mut tries = 0;
        while adj[a].len() < MESH_N.min(n - 1) && tries < 100 {
            tries += 1;
            let b = rng.below(n);
            if b != a && !adj[a].contains(&(b as u32)) {
                adj[a].push(b as u32);
                adj[b].push(a as u32);
            }
        }
    }
    for a in 0..n {
        if adj[a].len() > MESH_N_HIGH {
            rng.shuffle(&mut adj[a]);
            let pruned: Vec<u32> = adj[a].split_off(MESH_N);
            for b in pruned {
                adj[b as usize].retain(|x| *x != a as u32);
            }
        }
    }
    adj
}

/// What floods over a mesh measured.
#[derive(Debug, Clone)]
pub struct Flood {
    /// Copies each member receives of a message, on average (its sends, too: every copy
    /// received was sent by someone).
    pub copies: f64,
    /// Seconds from publishing to each member's first copy, over every flood (for drawing a
    /// delivery time).
    pub delays: Vec<f64>,
}

/// Copies on their way: (arrival in µs, to, from), earliest first.
type Arrivals = BinaryHeap<Reverse<(u64, u32, u32)>>;

/// Floods `floods` messages of `size` bytes over `mesh` from random publishers.
pub fn flood(mesh: &[Vec<u32>], pos: &[(f64, f64)], size: usize, floods: usize, rng: &mut Rng) -> Flood {
    let n = mesh.len();
    let idontwant = size > IDONTWANT_ABOVE;
    let send_secs = (size + FRAMING) as f64 / UPLINK_BYTES_PER_SEC;
    let mut sends = 0u64;
    let mut delays = Vec::new();
    for _ in 0..floods {
        let publisher = rng.below(n);
        // Arrivals: (time in µs, to, from); `first[i]` when member i first had it.
        let mut first = vec![f64::INFINITY; n];
        // When each member heard IDONTWANT from each mesh peer, or had the message from it.
        let mut told: Vec<Vec<(u32, f64)>> = vec![Vec::new(); n];
        let mut queue: Arrivals = BinaryHeap::new();
        first[publisher] = 0.0;
        let send = |i: usize, at: f64, except: Option<u32>, told: &[Vec<(u32, f64)>], queue: &mut Arrivals| {
            let mut k = 0;
            for &j in &mesh[i] {
                if Some(j) == except {
                    continue;
                }
                let depart = at + k as f64 * send_secs;
                if told[i].iter().any(|&(p, t)| p == j && t <= depart) {
                    continue;
                }
                k += 1;
                let arrive = depart + send_secs + latency(pos[i], pos[j as usize]);
                queue.push(Reverse(((arrive * 1e6) as u64, j, i as u32)));
            }
            k
        };
        sends += send(publisher, 0.0, None, &told, &mut queue) as u64;
        while let Some(Reverse((at, to, from))) = queue.pop() {
            let (at, to) = (at as f64 / 1e6, to as usize);
            told[to].push((from, at));
            if first[to].is_finite() {
                continue;
            }
            first[to] = at;
            delays.push(at);
            if idontwant {
                for &j in &mesh[to] {
                    let arrive = at + latency(pos[to], pos[j as usize]);
                    told[j as usize].push((to as u32, arrive));
                }
            }
            sends += send(to, at, Some(from), &told, &mut queue) as u64;
        }
    }
    Flood { copies: sends as f64 / (floods * n) as f64, delays }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flood_reaches_every_member_and_idontwant_saves_copies_of_large_messages() {
        let mut rng = Rng(11);
        let n = 500;
        let mesh = random_mesh(n, &mut rng);
        let pos: Vec<(f64, f64)> =
            (0..n).map(|_| (rng.below(1000) as f64 / 1000.0, rng.below(1000) as f64 / 1000.0)).collect();
        let small = flood(&mesh, &pos, 500, 10, &mut rng);
        let large = flood(&mesh, &pos, 25_000, 10, &mut rng);
        assert_eq!(small.delays.len(), 10 * (n - 1), "every member but the publisher had its first copy");
        let degree = mesh.iter().map(Vec::len).sum::<usize>() as f64 / n as f64;
        assert!(small.copies > degree - 2.0 && small.copies < degree, "{} copies at degree {degree}", small.copies);
        assert!(large.copies < small.copies, "IDONTWANT: {} against {}", large.copies, small.copies);
    }

    #[test]
    fn the_real_messages_have_their_sizes() {
        let sizes = Sizes::real(32, 384);
        assert!((250..800).contains(&sizes.heartbeat), "{sizes:?}");
        // 32 × 384 half-precision numbers are 24,576 bytes.
        assert!((24_576..26_000).contains(&sizes.summary), "{sizes:?}");
    }
}
