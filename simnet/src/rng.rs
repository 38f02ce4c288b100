//! A small deterministic generator (splitmix64) for the simulator's made-up webs and churn
//! schedules: seedable, and the same stream on every machine and in every version (no crate's
//! generator to change under a recorded seed).

pub struct Rng(pub u64);

/// Uniform in [0, 1) from 53 of `bits`' bits.
pub fn unit(bits: u64) -> f64 {
    (bits >> 11) as f64 / (1u64 << 53) as f64
}

impl Rng {
    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        unit(self.next())
    }

    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (0 for 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    pub fn below_u64(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    /// Shuffles `v` in place (Fisher–Yates).
    pub fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            v.swap(i, self.below(i + 1));
        }
    }
}
