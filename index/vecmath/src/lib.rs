//! The arithmetic on embedding vectors — dot products and lengths — that the index (routing
//! summaries, cosine, local search), the network (the cell codebook's nearest cells, a
//! posting's claimed cell and length, peers' summaries) and the simulator (exact kNN) share:
//! one definition instead of one per file.
//!
//! It is its own crate for two reasons. `weft-p2p` does not link the index (its storage and
//! model runtime), yet both place vectors by the same dot product. And the test profile builds
//! Weft's crates at opt-level 0, where this loop is not inlined and runs tens of times slower,
//! in the multi-node tests' hottest code; this one crate is built optimised in every profile
//! (`Cargo.toml`, `[profile.dev.package.weft-vecmath]`), which takes under a second, where
//! optimising the crates that call it would cost minutes of every clean build (the profile and
//! the figures: the book's benchmarks, "vector arithmetic in the test profile").
//!
//! The sums run in order, element by element, so every caller gets bit-for-bit the scores it
//! got from its own copy before.

/// The dot product of `a` and `b` over their common length: the cosine of two unit vectors.
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// The Euclidean length of `v`.
pub fn norm(v: &[f32]) -> f32 {
    v.iter().map(|x| x * x).sum::<f32>().sqrt()
}

/// Scales `v` to unit length (a zero vector stays zero).
pub fn normalize(v: &mut [f32]) {
    let norm = norm(v);
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dot_and_unit_length() {
        assert_eq!(dot(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0]), 32.0);
        // Over the shorter of the two, as `zip` goes.
        assert_eq!(dot(&[1.0, 2.0], &[3.0]), 3.0);
        let mut v = [3.0, 4.0];
        assert_eq!(norm(&v), 5.0);
        normalize(&mut v);
        assert_eq!(v, [0.6, 0.8]);
        let mut zero = [0.0f32; 3];
        normalize(&mut zero);
        assert_eq!(zero, [0.0; 3]);
    }
}
