//! Zipf's law, which the linked hosts' popularity follows in the model.

use crate::rng::Rng;

/// Zipf's law over `n` ranks, drawn by inverting its distribution.
pub(super) struct Zipf {
    cumulative: Vec<f64>,
}

impl Zipf {
    pub(super) fn new(n: usize, s: f64) -> Zipf {
        let mut total = 0.0;
        let cumulative = (1..=n.max(1))
            .map(|k| {
                total += 1.0 / (k as f64).powf(s);
                total
            })
            .collect();
        Zipf { cumulative }
    }

    /// A rank, 0 the most popular.
    pub(super) fn draw(&self, rng: &mut Rng) -> usize {
        let total = *self.cumulative.last().expect("at least one rank");
        let u = rng.unit() * total;
        self.cumulative.partition_point(|c| *c < u).min(self.cumulative.len() - 1)
    }
}

#[cfg(test)]
mod tests {
    use super::Zipf;
    use crate::rng::Rng;

    #[test]
    fn zipf_draws_favour_the_first_ranks() {
        let z = Zipf::new(1000, 1.0);
        let mut rng = Rng(1);
        let draws: Vec<usize> = (0..10_000).map(|_| z.draw(&mut rng)).collect();
        let first = draws.iter().filter(|d| **d == 0).count() as f64 / 10_000.0;
        // 1 / H(1000) = 0.134.
        assert!((first - 0.134).abs() < 0.02, "{first}");
        assert!(draws.iter().all(|d| *d < 1000));
    }
}
