//! Semantic buckets: how a node can find peers holding content like a query through the DHT,
//! without a message to every member.
//!
//! Every node condenses its chunk vectors into k centroids (spherical k-means, computed by the
//! index) and announces itself as a Kademlia *provider* of the semantic bucket keys of its
//! centroids: random-hyperplane LSH signatures ([`Lsh`], [`TABLES`] tables of [`BITS`] bits,
//! hyperplanes drawn from a fixed network-wide seed so every node hashes alike). A querying
//! node asks the DHT for the providers of the query's buckets and of their least-confident
//! one-bit neighbours (multi-probe), and [`rank`] orders them by their matches.
//!
//! Questions are routed by the network's cells (`crate::placement`); the buckets are the
//! other way, for a vector the codebook cannot place and to compare with. Nothing about a
//! node's content goes to every member: a bucket it provides costs O(log N) DHT messages.
//! Pure: the event loop does the I/O.

use std::collections::HashMap;
use weft_vecmath::dot;

/// LSH tables, and bits per table (one byte: 256 buckets per table).
pub const TABLES: usize = 4;
pub const BITS: usize = 8;
/// Centroids a node provides buckets for, at most.
pub const MAX_CENTROIDS: usize = 64;
/// The seed every node draws the hyperplanes from. Changing it splits the network's buckets.
const LSH_SEED: &str = "weft/lsh/1";

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
    /// How similar its content is to the question, as far as known: for a provider of the
    /// question's buckets, an estimate from its bucket matches; for a cell's owner, the cell's
    /// similarity.
    pub score: f32,
}

/// The similarity at which random-hyperplane signatures of `BITS` bits collide with
/// probability `p` (per table): P(same bit) = 1 − θ/π, so θ = π (1 − p^(1/BITS)).
fn similarity_for_collision(p: f64) -> f32 {
    let per_bit = p.clamp(0.0, 1.0).powf(1.0 / BITS as f64);
    (std::f64::consts::PI * (1.0 - per_bit)).cos() as f32
}

/// Orders the members that provide `query`'s buckets by the similarity their matches suggest
/// (an exact match counts one, a neighbour half, out of [`TABLES`]), best first; `skip` (this
/// node, penalised peers) left out.
pub fn rank(members: &[String], providers: &HashMap<String, f32>, skip: impl Fn(&str) -> bool) -> Vec<Candidate> {
    let mut out: Vec<Candidate> = members
        .iter()
        .filter(|p| !skip(p))
        .filter_map(|p| {
            let matches = providers.get(p)?;
            Some(Candidate { peer: p.clone(), score: similarity_for_collision(f64::from(*matches) / TABLES as f64) })
        })
        .collect();
    out.sort_by(|a, b| b.score.total_cmp(&a.score).then_with(|| a.peer.cmp(&b.peer)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use weft_vecmath::normalize;

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
    fn providers_rank_by_their_matches_and_non_members_are_left_out() {
        let members: Vec<String> = ["me", "pa", "pb", "pc"].iter().map(|s| s.to_string()).collect();
        let providers = HashMap::from([
            ("pa".to_string(), 1.0),
            ("pb".to_string(), 4.0),
            ("me".to_string(), 4.0),
            ("stranger".to_string(), 4.0),
        ]);
        let ranked = rank(&members, &providers, |p| p == "me");
        let order: Vec<&str> = ranked.iter().map(|c| c.peer.as_str()).collect();
        assert_eq!(order, ["pb", "pa"]);
        assert!(ranked[0].score > ranked[1].score);
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
