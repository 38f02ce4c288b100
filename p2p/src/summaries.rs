//! Routing summaries: how a node learns which peers hold content like a query without asking
//! them all.
//!
//! Every node condenses its chunk vectors into k centroids (spherical k-means, computed by the
//! index) and publishes them in two ways:
//!
//! - as a [`Summary`] on the gossipsub topic [`TOPIC`] (versioned, f16, sealed by its author: `crate::sealed`):
//!   every member keeps the latest summary of every other member and ranks peers for a query by
//!   the best cosine similarity between the query and their centroids;
//! - as a Kademlia *provider* of the semantic bucket keys of its centroids: random-hyperplane
//!   LSH signatures ([`Lsh`], [`TABLES`] tables of [`BITS`] bits, hyperplanes drawn from a fixed
//!   network-wide seed so every node hashes alike). A querying node asks the DHT for the
//!   providers of the query's buckets and of their least-confident one-bit neighbours
//!   (multi-probe), which finds peers whose summary it has not heard (yet).
//!
//! [`rank`] merges both into one ordered candidate list. Pure: the event loop does the I/O.

use half::f16;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use weft_vecmath::{dot, normalize};

/// The gossipsub topic of routing summaries.
pub const TOPIC: &str = "/weft/summaries/2";
/// LSH tables, and bits per table (one byte: 256 buckets per table).
pub const TABLES: usize = 4;
pub const BITS: usize = 8;
/// Centroids a summary may carry at most.
pub const MAX_CENTROIDS: usize = 64;
/// Largest vector dimension accepted.
pub const MAX_DIMS: usize = 4096;
/// Temperature of the soft maximum in [`Summaries::score`].
const SOFTNESS: f64 = 0.02;
/// The seed every node draws the hyperplanes from. Changing it splits the network's buckets.
const LSH_SEED: &str = "weft/lsh/1";

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SummaryError {
    #[error("undecodable summary: {0}")]
    Decode(String),
    #[error("summary claims peer {claimed} but was signed by {author}")]
    WrongAuthor { claimed: String, author: String },
    #[error("summary shape: {0}")]
    Shape(String),
}

/// A node's routing summary as gossiped.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub peer: String,
    /// Grows with every new summary of this peer; older ones are ignored.
    pub version: u64,
    /// Which embedding model the centroids come from (queries from another model are not
    /// comparable).
    pub model: String,
    pub dims: u32,
    /// Chunks assigned to each centroid.
    pub weights: Vec<u32>,
    /// The centroids, unit vectors, `weights.len() × dims` little-endian f16.
    #[serde(with = "serde_bytes")]
    pub centroids: Vec<u8>,
}

impl Summary {
    pub fn new(peer: String, version: u64, model: String, centroids: &[Vec<f32>], weights: Vec<u32>) -> Summary {
        let dims = centroids.first().map_or(0, Vec::len);
        let bytes = centroids.iter().flatten().flat_map(|x| f16::from_f32(*x).to_le_bytes()).collect();
        Summary { peer, version, model, dims: dims as u32, weights, centroids: bytes }
    }

    pub fn encode(&self) -> Vec<u8> {
        cbor4ii::serde::to_vec(Vec::new(), self).expect("summaries always encode")
    }

    /// Decodes a gossiped summary and checks it: signed by the peer it names, and well formed.
    pub fn decode(bytes: &[u8], author: &str) -> Result<Summary, SummaryError> {
        let s: Summary = cbor4ii::serde::from_slice(bytes).map_err(|e| SummaryError::Decode(e.to_string()))?;
        if s.peer != author {
            return Err(SummaryError::WrongAuthor { claimed: s.peer, author: author.to_string() });
        }
        let (k, dims) = (s.weights.len(), s.dims as usize);
        if k == 0 || k > MAX_CENTROIDS || dims == 0 || dims > MAX_DIMS {
            return Err(SummaryError::Shape(format!("{k} centroids of {dims} dimensions")));
        }
        if s.centroids.len() != k * dims * 2 {
            return Err(SummaryError::Shape(format!("{} bytes for {k} × {dims} f16", s.centroids.len())));
        }
        if s.model.len() > 128 {
            return Err(SummaryError::Shape("model name over 128 bytes".into()));
        }
        Ok(s)
    }

    /// The centroids as f32 unit vectors (renormalized after f16 rounding; non-finite values
    /// become zero vectors that match nothing).
    pub fn vectors(&self) -> Vec<Vec<f32>> {
        let dims = self.dims as usize;
        if dims == 0 {
            return Vec::new();
        }
        self.centroids
            .chunks_exact(dims * 2)
            .map(|c| {
                let mut v: Vec<f32> = c.chunks_exact(2).map(|b| f16::from_le_bytes([b[0], b[1]]).to_f32()).collect();
                if v.iter().any(|x| !x.is_finite()) {
                    v.iter_mut().for_each(|x| *x = 0.0);
                }
                normalize(&mut v);
                v
            })
            .collect()
    }
}

/// What this node knows of a peer's content.
#[derive(Debug, Clone)]
struct Known {
    version: u64,
    model: String,
    centroids: Vec<Vec<f32>>,
    weights: Vec<u32>,
    chunks: u64,
}

/// The latest summary of every peer.
#[derive(Debug, Default)]
pub struct Summaries {
    peers: HashMap<String, Known>,
    /// Counts the changes: what is derived from the summaries can be kept until it changes.
    generation: u64,
}

impl Summaries {
    /// Takes a summary; false if an equal or newer version of the peer's summary is known.
    pub fn observe(&mut self, s: &Summary) -> bool {
        if self.peers.get(&s.peer).is_some_and(|k| k.version >= s.version) {
            return false;
        }
        let known = Known {
            version: s.version,
            model: s.model.clone(),
            centroids: s.vectors(),
            weights: s.weights.clone(),
            chunks: s.weights.iter().map(|w| u64::from(*w)).sum(),
        };
        self.peers.insert(s.peer.clone(), known);
        self.generation += 1;
        true
    }

    /// Forgets the summaries of peers that are not members any more.
    pub fn retain(&mut self, is_member: impl Fn(&str) -> bool) {
        let before = self.peers.len();
        self.peers.retain(|p, _| is_member(p));
        if self.peers.len() != before {
            self.generation += 1;
        }
    }

    /// Changes whenever a summary is taken or forgotten.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    pub fn len(&self) -> usize {
        self.peers.len()
    }

    /// Whether a summary of `peer` is known (whatever its model or size).
    pub fn knows(&self, peer: &str) -> bool {
        self.peers.contains_key(peer)
    }

    /// Whether every one of `peers` has its summary here. Then the DHT's providers cannot
    /// change a query's ranking ([`rank`] reads them only for members without a summary), and a
    /// query need not look them up.
    pub fn knows_all<S: AsRef<str>>(&self, peers: impl IntoIterator<Item = S>) -> bool {
        peers.into_iter().all(|p| self.knows(p.as_ref()))
    }

    pub fn is_empty(&self) -> bool {
        self.peers.is_empty()
    }

    /// How much of `peer`'s content is close to `query`, in cosine-similarity units: a soft
    /// maximum over its centroids, each weighted by the chunks it stands for,
    /// `1 + τ·ln Σ wᵢ·exp((simᵢ − 1)/τ)` with τ = [`SOFTNESS`]. It is the best centroid's
    /// similarity plus a bonus for many chunks near it — replayed over simulator runs
    /// (`simnet/examples/route_replay.rs`) it picks peers holding more of the exact top 10
    /// than the plain maximum. `None` if the summary is unknown, from another model, or empty.
    pub fn score(&self, peer: &str, model: &str, query: &[f32]) -> Option<f32> {
        let known = self.peers.get(peer).filter(|k| k.model == model && k.chunks > 0)?;
        let sum: f64 = known
            .centroids
            .iter()
            .zip(&known.weights)
            .filter(|(c, w)| c.len() == query.len() && **w > 0)
            .map(|(c, w)| f64::from(*w) * ((f64::from(dot(c, query)) - 1.0) / SOFTNESS).exp())
            .sum();
        (sum > 0.0).then(|| (1.0 + SOFTNESS * sum.ln()) as f32)
    }

    pub fn peers(&self) -> impl Iterator<Item = &str> {
        self.peers.keys().map(String::as_str)
    }

    /// Each known peer's summary version.
    pub fn versions(&self) -> impl Iterator<Item = (&str, u64)> {
        self.peers.iter().map(|(p, k)| (p.as_str(), k.version))
    }
}

/// Random-hyperplane LSH with the network-wide hyperplanes.
#[derive(Debug, Clone)]
pub struct Lsh {
    dims: usize,
    /// `TABLES × BITS` hyperplanes of `dims` components.
    planes: Vec<Vec<f32>>,
}

/// A bucket key to provide or look up, with whether it is the vector's own bucket (else a
/// multi-probe neighbour).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Probe {
    pub key: Vec<u8>,
    pub exact: bool,
}

impl Lsh {
    /// The hyperplanes every Weft node uses for `dims`-dimensional vectors: Gaussian
    /// components (Box–Muller) from blake3's output stream of a fixed seed.
    pub fn network(dims: usize) -> Lsh {
        let mut hasher = blake3::Hasher::new();
        hasher.update(LSH_SEED.as_bytes());
        hasher.update(&(dims as u64).to_le_bytes());
        let mut stream = hasher.finalize_xof();
        let mut uniform = || {
            let mut b = [0u8; 4];
            stream.fill(&mut b);
            // (0, 1]: never zero, so the logarithm is finite.
            (f64::from(u32::from_le_bytes(b)) + 1.0) / (f64::from(u32::MAX) + 1.0)
        };
        let planes = (0..TABLES * BITS)
            .map(|_| {
                (0..dims)
                    .map(|_| {
                        let (u1, u2) = (uniform(), uniform());
                        ((-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()) as f32
                    })
                    .collect()
            })
            .collect();
        Lsh { dims, planes }
    }

    /// The vector dimension these hyperplanes hash.
    pub fn dims(&self) -> usize {
        self.dims
    }

    /// Per table: the signature's bits, and each bit's projection (its confidence).
    fn project(&self, v: &[f32]) -> Vec<(u8, [f32; BITS])> {
        (0..TABLES)
            .map(|t| {
                let mut bits = 0u8;
                let mut margins = [0f32; BITS];
                for (b, margin) in margins.iter_mut().enumerate() {
                    let p = dot(&self.planes[t * BITS + b], v);
                    *margin = p;
                    if p >= 0.0 {
                        bits |= 1 << b;
                    }
                }
                (bits, margins)
            })
            .collect()
    }

    /// The bucket keys of `v`, one per table.
    pub fn keys(&self, v: &[f32]) -> Vec<Vec<u8>> {
        if v.len() != self.dims {
            return Vec::new();
        }
        self.project(v).into_iter().enumerate().map(|(t, (bits, _))| bucket_key(t, bits)).collect()
    }

    /// The bucket keys of `v` and, per table, of the `probes` neighbours that differ in one of
    /// its least-confident bits (the projections nearest zero).
    pub fn probes(&self, v: &[f32], probes: usize) -> Vec<Probe> {
        if v.len() != self.dims {
            return Vec::new();
        }
        let mut out = Vec::new();
        for (t, (bits, margins)) in self.project(v).into_iter().enumerate() {
            out.push(Probe { key: bucket_key(t, bits), exact: true });
            let mut order: Vec<usize> = (0..BITS).collect();
            order.sort_by(|a, b| margins[*a].abs().total_cmp(&margins[*b].abs()));
            for b in order.into_iter().take(probes) {
                out.push(Probe { key: bucket_key(t, bits ^ (1 << b)), exact: false });
            }
        }
        out
    }
}

/// What every bucket key starts with (see [`is_bucket_key`]).
pub const BUCKET_PREFIX: &[u8] = b"weft/lsh-bucket/1/";

/// The DHT key of bucket `bits` of table `table`: [`BUCKET_PREFIX`] ‖ table ‖ bits.
pub fn bucket_key(table: usize, bits: u8) -> Vec<u8> {
    let mut key = BUCKET_PREFIX.to_vec();
    key.extend_from_slice(&[table as u8, bits]);
    key
}

/// Whether `key` is a bucket key ([`bucket_key`]): the only keys a node lets others announce
/// themselves as providers of.
pub fn is_bucket_key(key: &[u8]) -> bool {
    key.len() == BUCKET_PREFIX.len() + 2
        && key.starts_with(BUCKET_PREFIX)
        && usize::from(key[BUCKET_PREFIX.len()]) < TABLES
}

/// A peer worth asking, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    pub peer: String,
    /// Best centroid similarity, or, for a provider whose summary is unknown, an estimate from
    /// its bucket matches.
    pub score: f32,
    /// Whether the score comes from the peer's summary.
    pub from_summary: bool,
}

/// The similarity at which random-hyperplane signatures of `BITS` bits collide with
/// probability `p` (per table): P(same bit) = 1 − θ/π, so θ = π (1 − p^(1/BITS)).
fn similarity_for_collision(p: f64) -> f32 {
    let per_bit = p.clamp(0.0, 1.0).powf(1.0 / BITS as f64);
    (std::f64::consts::PI * (1.0 - per_bit)).cos() as f32
}

/// Orders the peers worth asking for `query`: members with a summary by [`Summaries::score`];
/// providers of the query's buckets whose summary is unknown by the similarity their bucket
/// matches suggest (an exact match counts one, a neighbour half, out of [`TABLES`]). Members
/// whose summary says they cannot answer (another model, nothing indexed) and `skip` (this
/// node, penalised peers) are left out.
pub fn rank(
    query: &[f32],
    model: &str,
    summaries: &Summaries,
    members: &[String],
    providers: &HashMap<String, f32>,
    skip: impl Fn(&str) -> bool,
) -> Vec<Candidate> {
    let mut out: Vec<Candidate> = Vec::new();
    for peer in members.iter().filter(|p| !skip(p)) {
        if summaries.knows(peer) {
            if let Some(score) = summaries.score(peer, model, query) {
                out.push(Candidate { peer: peer.clone(), score, from_summary: true });
            }
        } else if let Some(matches) = providers.get(peer) {
            let score = similarity_for_collision(f64::from(*matches) / TABLES as f64);
            out.push(Candidate { peer: peer.clone(), score, from_summary: false });
        }
    }
    out.sort_by(|a, b| b.score.total_cmp(&a.score).then_with(|| a.peer.cmp(&b.peer)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(seed: u64, dims: usize) -> Vec<f32> {
        let mut h = blake3::Hasher::new();
        h.update(&seed.to_le_bytes());
        let mut s = h.finalize_xof();
        let mut v: Vec<f32> = (0..dims)
            .map(|_| {
                let mut b = [0u8; 2];
                s.fill(&mut b);
                f32::from(i16::from_le_bytes(b)) / 32768.0
            })
            .collect();
        normalize(&mut v);
        v
    }

    fn near(v: &[f32], noise: u64, amount: f32) -> Vec<f32> {
        let n = unit(noise, v.len());
        let mut w: Vec<f32> = v.iter().zip(&n).map(|(a, b)| a + amount * b).collect();
        normalize(&mut w);
        w
    }

    #[test]
    fn summaries_round_trip_and_bad_ones_are_refused() {
        let c = vec![unit(1, 384), unit(2, 384)];
        let s = Summary::new("peer-a".into(), 3, "m".into(), &c, vec![10, 20]);
        let bytes = s.encode();
        assert!(bytes.len() < 2 * 384 * 2 + 200);
        let back = Summary::decode(&bytes, "peer-a").unwrap();
        for (a, b) in back.vectors().iter().zip(&c) {
            assert!(dot(a, b) > 0.999);
        }
        assert!(matches!(Summary::decode(&bytes, "peer-b"), Err(SummaryError::WrongAuthor { .. })));
        assert!(matches!(Summary::decode(b"\x00garbage", "peer-a"), Err(SummaryError::Decode(_))));
        let mut bad = s.clone();
        bad.centroids.pop();
        assert!(matches!(Summary::decode(&bad.encode(), "peer-a"), Err(SummaryError::Shape(_))));
        let mut many = s;
        many.weights = vec![1; MAX_CENTROIDS + 1];
        assert!(matches!(Summary::decode(&many.encode(), "peer-a"), Err(SummaryError::Shape(_))));
    }

    #[test]
    fn newer_versions_replace_older_and_ranking_follows_similarity() {
        let (a, b) = (unit(10, 64), unit(20, 64));
        let mut sums = Summaries::default();
        assert!(sums.observe(&Summary::new("pa".into(), 2, "m".into(), std::slice::from_ref(&a), vec![5])));
        assert!(!sums.observe(&Summary::new("pa".into(), 1, "m".into(), std::slice::from_ref(&b), vec![5])));
        assert!(sums.observe(&Summary::new("pb".into(), 1, "m".into(), std::slice::from_ref(&b), vec![5])));
        // An empty node (no chunks) and another model's node are not candidates.
        assert!(sums.observe(&Summary::new("pe".into(), 1, "m".into(), std::slice::from_ref(&a), vec![0])));
        assert!(sums.observe(&Summary::new("px".into(), 1, "other".into(), std::slice::from_ref(&a), vec![5])));
        let members: Vec<String> = ["me", "pa", "pb", "pc", "pe", "px"].iter().map(|s| s.to_string()).collect();
        let q = near(&a, 99, 0.3);
        let providers = HashMap::from([("pc".to_string(), 1.0), ("pb".to_string(), 4.0), ("px".to_string(), 4.0)]);
        let ranked = rank(&q, "m", &sums, &members, &providers, |p| p == "me");
        let order: Vec<&str> = ranked.iter().map(|c| c.peer.as_str()).collect();
        assert_eq!(order[0], "pa");
        assert!(order.contains(&"pc") && order.contains(&"pb") && !order.contains(&"pe") && !order.contains(&"px"));
        assert!(ranked.iter().find(|c| c.peer == "pb").unwrap().from_summary, "a known summary wins over buckets");
        sums.retain(|p| p != "pa");
        assert!(sums.score("pa", "m", &q).is_none());
    }

    #[test]
    fn with_every_summary_known_providers_change_nothing() {
        let (a, b) = (unit(10, 64), unit(20, 64));
        let mut sums = Summaries::default();
        sums.observe(&Summary::new("pa".into(), 1, "m".into(), std::slice::from_ref(&a), vec![5]));
        sums.observe(&Summary::new("pb".into(), 1, "m".into(), std::slice::from_ref(&b), vec![5]));
        let members: Vec<String> = ["pa", "pb"].iter().map(|s| s.to_string()).collect();
        assert!(sums.knows_all(&members));
        assert!(!sums.knows_all(["pa", "pc"]));
        let q = near(&b, 7, 0.3);
        let none = rank(&q, "m", &sums, &members, &HashMap::new(), |_| false);
        let providers = HashMap::from([("pa".to_string(), 8.0), ("pb".to_string(), 0.5), ("pz".to_string(), 8.0)]);
        assert_eq!(rank(&q, "m", &sums, &members, &providers, |_| false), none);
    }

    #[test]
    fn lsh_is_the_same_everywhere_and_near_vectors_share_buckets() {
        let (l1, l2) = (Lsh::network(384), Lsh::network(384));
        let v = unit(7, 384);
        assert_eq!(l1.keys(&v), l2.keys(&v));
        assert_eq!(l1.keys(&v).len(), TABLES);
        // Near vectors collide in most tables, unrelated ones rarely.
        let (mut near_hits, mut far_hits) = (0, 0);
        for i in 0..200 {
            let base = unit(1000 + i, 384);
            let keys = l1.keys(&base);
            let close = l1.keys(&near(&base, 5000 + i, 0.15));
            let far = l1.keys(&unit(9000 + i, 384));
            near_hits += keys.iter().zip(&close).filter(|(a, b)| a == b).count();
            far_hits += keys.iter().zip(&far).filter(|(a, b)| a == b).count();
        }
        assert!(near_hits > 400, "near {near_hits} of 800");
        assert!(far_hits < 40, "far {far_hits} of 800");
        let probes = l1.probes(&v, 2);
        assert_eq!(probes.len(), TABLES * 3);
        assert_eq!(probes.iter().filter(|p| p.exact).count(), TABLES);
        assert!(l1.probes(&v[..10], 2).is_empty(), "wrong dimension: no keys");
    }

    #[test]
    fn collision_estimates_are_monotonic() {
        assert!(similarity_for_collision(1.0) > 0.99);
        assert!(similarity_for_collision(0.5) > similarity_for_collision(0.25));
        assert!(similarity_for_collision(0.0) < -0.99);
    }
}
