//! Spherical k-means over unit vectors: what a set of chunks is about, in a few centroids. The
//! network's codebook of cells was drawn this way (`weft_p2p::placement`), and the placement
//! benchmarks (`simnet/examples`) cluster each node's chunks with it to compare designs.
//!
//! Deterministic for the same vectors (k-means++ seeding from a fixed seed).

use weft_vecmath::dot;

const ITERATIONS: usize = 12;

/// Centroids (unit vectors) and how many of the clustered chunks each one took.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Centroids {
    pub centroids: Vec<Vec<f32>>,
    pub weights: Vec<u32>,
}

/// A small deterministic generator (splitmix64): seeding and sampling need no more.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

fn nearest(v: &[f32], centroids: &[Vec<f32>]) -> (usize, f32) {
    centroids.iter().enumerate().map(|(i, c)| (i, dot(v, c))).max_by(|a, b| a.1.total_cmp(&b.1)).unwrap_or((0, 0.0))
}

/// Spherical k-means of unit `vectors` into at most `k` centroids.
pub fn kmeans(vectors: &[Vec<f32>], k: usize) -> Centroids {
    let k = k.min(vectors.len());
    if k == 0 {
        return Centroids::default();
    }
    let dims = vectors[0].len();
    let mut rng = Rng(0x5745_4654); // "WEFT"
                                    // k-means++: each next seed is drawn with probability growing with its distance to the
                                    // seeds so far (cosine distance 1 − similarity, squared).
    let mut centroids = vec![vectors[rng.below(vectors.len())].clone()];
    let mut dist: Vec<f64> =
        vectors.iter().map(|v| f64::from((1.0 - dot(v, &centroids[0])).max(0.0)).powi(2)).collect();
    while centroids.len() < k {
        let total: f64 = dist.iter().sum();
        let pick = if total <= 0.0 {
            rng.below(vectors.len())
        } else {
            let mut target = rng.unit() * total;
            dist.iter()
                .position(|d| {
                    target -= d;
                    target <= 0.0
                })
                .unwrap_or(vectors.len() - 1)
        };
        let c = vectors[pick].clone();
        for (d, v) in dist.iter_mut().zip(vectors) {
            *d = d.min(f64::from((1.0 - dot(v, &c)).max(0.0)).powi(2));
        }
        centroids.push(c);
    }
    let mut assignment = vec![usize::MAX; vectors.len()];
    for _ in 0..ITERATIONS {
        let mut changed = false;
        for (a, v) in assignment.iter_mut().zip(vectors) {
            let (best, _) = nearest(v, &centroids);
            changed |= *a != best;
            *a = best;
        }
        let mut sums = vec![vec![0f32; dims]; k];
        for (a, v) in assignment.iter().zip(vectors) {
            sums[*a].iter_mut().zip(v).for_each(|(s, x)| *s += x);
        }
        for (c, mut s) in centroids.iter_mut().zip(sums) {
            let norm = weft_vecmath::norm(&s);
            if norm > 0.0 {
                s.iter_mut().for_each(|x| *x /= norm);
                *c = s;
            }
        }
        if !changed {
            break;
        }
    }
    let mut weights = vec![0u32; k];
    for a in &assignment {
        weights[*a] += 1;
    }
    // Centroids that lost every member say nothing about the index.
    let (centroids, weights) = centroids.into_iter().zip(weights).filter(|(_, w)| *w > 0).unzip();
    Centroids { centroids, weights }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(rng: &mut Rng, around: &[f32], spread: f32) -> Vec<f32> {
        let mut v: Vec<f32> = around.iter().map(|x| x + spread * (rng.unit() as f32 - 0.5)).collect();
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.iter_mut().for_each(|x| *x /= n);
        v
    }

    #[test]
    fn kmeans_finds_separated_clusters() {
        let mut rng = Rng(1);
        let dims = 32;
        let centres: Vec<Vec<f32>> = (0..4)
            .map(|i| {
                let mut c = vec![0f32; dims];
                c[i * 8] = 1.0;
                c
            })
            .collect();
        let vectors: Vec<Vec<f32>> = (0..400).map(|i| unit(&mut rng, &centres[i % 4], 0.3)).collect();
        let c = kmeans(&vectors, 4);
        assert_eq!(c.centroids.len(), 4);
        assert_eq!(c.weights.iter().sum::<u32>(), 400);
        for centre in &centres {
            let (_, sim) = nearest(centre, &c.centroids);
            assert!(sim > 0.9, "a centroid near every cluster: {sim}");
        }
        assert!(c.weights.iter().all(|w| *w == 100), "{:?}", c.weights);
        assert_eq!(kmeans(&vectors, 4), c, "deterministic");
    }

    #[test]
    fn fewer_vectors_than_centroids_and_none() {
        let v = vec![vec![1.0, 0.0], vec![0.0, 1.0]];
        let c = kmeans(&v, 16);
        assert_eq!(c.centroids.len(), 2);
        assert_eq!(kmeans(&[], 16), Centroids::default());
        // Identical vectors: one centroid carries them all.
        let same = vec![vec![1.0, 0.0]; 10];
        let c = kmeans(&same, 4);
        assert_eq!(c.weights.iter().sum::<u32>(), 10);
    }
}
