//! The seen-set: has this normalized URL ever been queued?
//!
//! A Bloom filter (`probabilistic-collections`' ScalableBloomFilter) sized up front from
//! config. Sizing matters: a scalable filter grown from a small start reached ~49 MiB and 1.6%
//! false positives at 10M URLs, while one sized for 10M costs the textbook ~11.4 MiB at 1%.
//! It only grows (with tighter error) if the node sees more URLs than it was sized for.
//!
//! A false positive means a new URL is skipped — never that a URL is fetched twice — which is
//! the right way round for a polite crawler.
//!
//! Persistence is the frontier's job (snapshot + journal, see `frontier.rs`); this type only
//! knows how to turn itself into bytes and back.

use probabilistic_collections::bloom::ScalableBloomFilter;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize)]
pub struct SeenSet {
    bloom: ScalableBloomFilter<String>,
    /// URLs inserted (exact count of insert calls that were new to the filter).
    inserted: u64,
}

/// Bits of a Bloom filter that holds `capacity` items at false-positive rate `fp` without
/// growing.
///
/// The textbook size is −n·ln p / (ln 2)² (9.59 bits per item at 1%), but the filter uses
/// k = ⌈−log₂ p⌉ hash functions (7 at 1%) and adds a new, larger filter once half its bits are
/// set — which with k = 7 happens at 0.95·n. Sizing for half-full at 1.02·n,
/// m = 1.02·n·k / ln 2 (10.3 bits per item at 1%), keeps the filter single up to capacity
/// (at exactly n·k / ln 2 the fill at capacity would be 50% on average, so growing would be a
/// coin flip), and its false-positive rate at capacity stays below 2⁻ᵏ ≤ p.
pub fn bloom_bits(capacity: u64, fp: f64) -> usize {
    const HEADROOM: f64 = 1.02;
    let k = (-fp.log2()).ceil().max(1.0);
    let bits = HEADROOM * capacity as f64 * k / std::f64::consts::LN_2;
    (bits.ceil() as usize).max(64)
}

impl SeenSet {
    /// A filter sized to hold `capacity` URLs at false-positive rate `fp` before it must grow.
    pub fn with_capacity(capacity: u64, fp: f64) -> SeenSet {
        SeenSet { bloom: ScalableBloomFilter::new(bloom_bits(capacity, fp), fp, 2.0, 0.5), inserted: 0 }
    }

    pub fn contains(&self, url: &str) -> bool {
        self.bloom.contains(url)
    }

    /// Inserts; returns false if the URL was (probably) already there.
    pub fn insert(&mut self, url: &str) -> bool {
        if self.bloom.contains(url) {
            return false;
        }
        self.bloom.insert(url);
        self.inserted += 1;
        true
    }

    /// URLs inserted so far.
    pub fn len(&self) -> u64 {
        self.inserted
    }

    pub fn is_empty(&self) -> bool {
        self.inserted == 0
    }

    /// Bytes of bit array held in memory.
    pub fn memory_bytes(&self) -> usize {
        self.bloom.len() / 8
    }

    /// The filter's own estimate of its current false-positive probability.
    pub fn estimated_fp_rate(&self) -> f64 {
        self.bloom.estimated_fpp()
    }

    pub fn to_bytes(&self) -> Vec<u8> {
        postcard::to_allocvec(self).expect("a Bloom filter always serializes")
    }

    pub fn from_bytes(bytes: &[u8]) -> Result<SeenSet, postcard::Error> {
        postcard::from_bytes(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sized_filter_matches_theory_and_round_trips() {
        let mib = bloom_bits(10_000_000, 0.01) as f64 / 8.0 / 1024.0 / 1024.0;
        assert!((12.2..12.35).contains(&mib), "{mib} MiB");
        let mut s = SeenSet::with_capacity(10_000, 0.01);
        assert!(s.insert("http://a.test/1"));
        assert!(!s.insert("http://a.test/1"));
        assert!(s.contains("http://a.test/1"));
        assert!(!s.contains("http://a.test/2"));
        let back = SeenSet::from_bytes(&s.to_bytes()).unwrap();
        assert!(back.contains("http://a.test/1"));
        assert_eq!(back.len(), 1);
    }

    #[test]
    fn false_positive_rate_holds_at_capacity() {
        let n = 20_000u64;
        let mut s = SeenSet::with_capacity(n, 0.01);
        for i in 0..n {
            s.insert(&format!("http://h{}.test/p/{i}", i % 97));
        }
        let fps = (0..20_000).filter(|i| s.contains(&format!("http://other.test/q/{i}"))).count();
        let rate = fps as f64 / 20_000.0;
        assert!(rate < 0.015, "false-positive rate {rate}");
        assert_eq!(s.memory_bytes(), bloom_bits(n, 0.01) / 8, "the filter did not have to grow");
    }
}
