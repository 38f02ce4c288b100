//! The seen-set: has this normalized URL been met lately?
//!
//! Two Bloom filters in generations: URLs go into the current one; when it holds half of
//! `frontier.seen_capacity` it becomes the previous one and a fresh filter takes its place,
//! dropping the one before. So the set remembers the last ½–1 × capacity URLs met, in a memory
//! fixed when the node starts (~14 MiB at 10M, 1%), however long the node crawls.
//!
//! Both generations are allocated, and their pages written, when the set is made: the second
//! one, empty until the first rotation, would otherwise arrive only after half the capacity
//! (5M URLs at the defaults: half an hour into a busy crawl, days into a homelab's), a step of
//! ~7 MiB long after the node looked settled. A node's memory is then what it will be, from
//! the start, as `/status` and `node.memory_target` count it.
//!
//! Why not one filter that grows: a filter sized for 10M costs the textbook ~12 MiB at 1%, but a
//! crawl meets far more URLs than it fetches (the link farm: ~60 new ones a page, 11.5M in an
//! hour), and a filter past its capacity must add filters of twice the size each time — 37 MiB
//! after 10M URLs, 86 after 30M, 184 after 70M: memory growing with the crawl, which a node
//! meant to run for months on a small box cannot afford. (A scalable filter grown from a small
//! start was worse: ~49 MiB at 10M and 1.6% false positives.)
//!
//! What the filters forgot, the disk still knows exactly: every URL queued is in the queue's
//! URL index and every URL fetched or given up on is in its host's done list (see `store.rs`).
//! Once a generation has been dropped ([`SeenSet::forgets`]) the frontier asks the disk about a
//! URL the filters do not hold before queueing it (`Frontier::push`): a link met again after
//! millions of others is still not fetched twice.
//!
//! A false positive means a new URL is skipped — never that a URL is fetched twice — which is
//! the right way round for a polite crawler. Each generation is sized for half the configured
//! rate, so the two together stay within it.
//!
//! Persistence is the frontier's job (snapshot + journal, see `frontier.rs`); this type only
//! knows how to turn itself into bytes and back, and how to read an earlier release's filter.

use probabilistic_collections::bloom::{BloomFilter, ScalableBloomFilter};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize)]
pub struct SeenSet {
    current: BloomFilter<String>,
    previous: Option<BloomFilter<String>>,
    /// An earlier release's single growing filter, read from its snapshot: consulted until the
    /// first rotation, then dropped.
    legacy: Option<ScalableBloomFilter<String>>,
    /// URLs inserted into `current`.
    in_current: u64,
    /// URLs a generation holds before the next one starts.
    per_generation: u64,
    /// The false-positive rate a generation is sized for.
    fp: f64,
    /// URLs inserted in all (exact count of insert calls that were new to the filters).
    inserted: u64,
    /// Whether a generation has been dropped: then a URL the filters do not hold may still
    /// have been met, and only the disk can say.
    forgets: bool,
}

/// An earlier release's seen-set (one [`ScalableBloomFilter`]), as its snapshots hold it.
#[derive(Serialize, Deserialize)]
pub struct LegacySeenSet {
    bloom: ScalableBloomFilter<String>,
    inserted: u64,
}

/// Bits of a Bloom filter that holds `capacity` items at false-positive rate `fp`.
///
/// The textbook size is −n·ln p / (ln 2)² (9.59 bits per item at 1%), but the filter uses
/// k = ⌈−log₂ p⌉ hash functions; sizing for half-full at 1.02·n, m = 1.02·n·k / ln 2, keeps the
/// false-positive rate at capacity below 2⁻ᵏ ≤ p.
pub fn bloom_bits(capacity: u64, fp: f64) -> usize {
    const HEADROOM: f64 = 1.02;
    let k = (-fp.log2()).ceil().max(1.0);
    let bits = HEADROOM * capacity as f64 * k / std::f64::consts::LN_2;
    (bits.ceil() as usize).max(64)
}

/// An empty filter for `per_generation` URLs, its memory written (so resident) now: the
/// allocator hands out zeroed pages that the kernel maps only when first written, and a
/// generation's memory is meant to be counted from the moment it exists (see the module's doc).
fn generation(per_generation: u64, fp: f64) -> BloomFilter<String> {
    let mut filter = BloomFilter::from_fpp(bloom_bits(per_generation, fp), fp);
    // Opaque to the optimiser, so the zeros written next are not dropped as writes over
    // memory it knows is zero already.
    std::hint::black_box(&mut filter);
    filter.clear();
    filter
}

impl SeenSet {
    /// A set that remembers at least `capacity / 2` and at most `capacity` URLs, at
    /// false-positive rate `fp` (each of its two filters at `fp / 2`).
    pub fn with_capacity(capacity: u64, fp: f64) -> SeenSet {
        let per_generation = (capacity / 2).max(1);
        let fp = fp / 2.0;
        SeenSet {
            current: generation(per_generation, fp),
            previous: Some(generation(per_generation, fp)),
            legacy: None,
            in_current: 0,
            per_generation,
            fp,
            inserted: 0,
            forgets: false,
        }
    }

    /// An earlier release's filter, kept beside a fresh generation sized for `capacity` until
    /// the first rotation.
    pub fn from_legacy(old: LegacySeenSet, capacity: u64, fp: f64) -> SeenSet {
        let mut s = SeenSet::with_capacity(capacity, fp);
        s.inserted = old.inserted;
        s.legacy = Some(old.bloom);
        s
    }

    /// Generations started from now on are sized for `capacity` and `fp` (the configuration may
    /// have changed since the snapshot was written). Every set read back from a snapshot comes
    /// through here (`Store::load_seen`), so this is also where one written by an earlier
    /// release before its first rotation gets its second generation.
    pub fn resize(&mut self, capacity: u64, fp: f64) {
        self.per_generation = (capacity / 2).max(1);
        self.fp = fp / 2.0;
        // A snapshot an earlier release wrote before its first rotation holds one generation.
        if self.previous.is_none() {
            self.previous = Some(generation(self.per_generation, self.fp));
        }
    }

    pub fn contains(&self, url: &str) -> bool {
        self.current.contains(url)
            || self.previous.as_ref().is_some_and(|p| p.contains(url))
            || self.legacy.as_ref().is_some_and(|l| l.contains(url))
    }

    /// Inserts; returns false if the URL was (probably) already there.
    pub fn insert(&mut self, url: &str) -> bool {
        if self.contains(url) {
            return false;
        }
        self.remember(url);
        self.inserted += 1;
        true
    }

    /// Puts a URL the filters forgot (and the disk knew) back into the current generation, so
    /// the next meeting is answered from memory. Not counted as new.
    pub fn refresh(&mut self, url: &str) {
        if !self.current.contains(url) {
            self.remember(url);
        }
    }

    fn remember(&mut self, url: &str) {
        if self.in_current >= self.per_generation {
            let fresh = generation(self.per_generation, self.fp);
            let dropped = self.previous.replace(std::mem::replace(&mut self.current, fresh));
            // The first rotation drops the generation allocated empty: nothing is forgotten.
            self.forgets |= dropped.is_some_and(|d| d.count_ones() > 0) || self.legacy.take().is_some();
            self.in_current = 0;
        }
        self.current.insert(url);
        self.in_current += 1;
    }

    /// Whether a URL the filters do not hold may still have been met (a generation has been
    /// dropped): the frontier then asks the disk.
    pub fn forgets(&self) -> bool {
        self.forgets
    }

    /// URLs inserted so far.
    pub fn len(&self) -> u64 {
        self.inserted
    }

    pub fn is_empty(&self) -> bool {
        self.inserted == 0
    }

    /// Bytes of bit arrays held in memory.
    pub fn memory_bytes(&self) -> usize {
        (self.current.len()
            + self.previous.as_ref().map_or(0, |p| p.len())
            + self.legacy.as_ref().map_or(0, |l| l.len()))
            / 8
    }

    /// The false-positive probability of a URL never met: either filter may answer yes.
    pub fn estimated_fp_rate(&self) -> f64 {
        let miss = [
            Some(self.current.estimated_fpp()),
            self.previous.as_ref().map(|p| p.estimated_fpp()),
            self.legacy.as_ref().map(|l| l.estimated_fpp()),
        ]
        .into_iter()
        .flatten()
        .fold(1.0, |acc, p| acc * (1.0 - p));
        1.0 - miss
    }

    pub fn to_bytes(&self) -> Vec<u8> {
        postcard::to_allocvec(self).expect("a Bloom filter always serializes")
    }

    pub fn from_bytes(bytes: &[u8]) -> Result<SeenSet, postcard::Error> {
        postcard::from_bytes(bytes)
    }
}

/// Made as an earlier release made it, for the tests that write its snapshots; `insert` also
/// replays the old sled layout's journal into it (`migrate.rs`).
impl LegacySeenSet {
    pub fn with_capacity(capacity: u64, fp: f64) -> LegacySeenSet {
        LegacySeenSet { bloom: ScalableBloomFilter::new(bloom_bits(capacity, fp), fp, 2.0, 0.5), inserted: 0 }
    }

    pub fn insert(&mut self, url: &str) {
        if !self.bloom.contains(url) {
            self.bloom.insert(url);
            self.inserted += 1;
        }
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
        assert!(!s.forgets(), "two generations hold the capacity");
        let fps = (0..20_000).filter(|i| s.contains(&format!("http://other.test/q/{i}"))).count();
        let rate = fps as f64 / 20_000.0;
        assert!(rate < 0.01, "false-positive rate {rate}");
        assert!(s.estimated_fp_rate() < 0.01, "estimated {}", s.estimated_fp_rate());
    }

    /// The point of the generations: memory is fixed however many URLs go in; the last
    /// `capacity / 2` are always remembered, and the set says when it has forgotten.
    #[test]
    fn memory_stays_fixed_and_recent_urls_are_remembered() {
        let cap = 10_000u64;
        let mut s = SeenSet::with_capacity(cap, 0.01);
        let full = s.memory_bytes();
        let url = |i: u64| format!("http://h{}.test/p/{i}", i % 31);
        for i in 0..cap {
            s.insert(&url(i));
        }
        assert_eq!(s.memory_bytes(), full, "both generations from the start");
        s.insert(&url(cap));
        assert!(!s.forgets(), "the first rotation drops only the generation made empty");
        assert!((0..=cap).all(|i| s.contains(&url(i))), "no URL within capacity is forgotten");
        for i in cap..cap * 10 {
            s.insert(&url(i));
        }
        assert_eq!(s.memory_bytes(), full, "ten times the capacity in the same memory");
        assert!(s.forgets());
        // All of the last half-capacity but the few a false positive kept out of the filters
        // (then held only by a generation since dropped).
        let held = (cap * 10 - cap / 2..cap * 10).filter(|&i| s.contains(&url(i))).count();
        assert!(held >= (cap / 2) as usize * 98 / 100, "the last half-capacity is held: {held}");
        let old = (0..cap).filter(|&i| s.contains(&url(i))).count();
        assert!(old < cap as usize / 50, "the oldest are forgotten, but for false positives: {old}");
        // Refreshing a forgotten URL puts it back without counting it as new.
        let before = s.len();
        s.refresh(&url(3));
        assert!(s.contains(&url(3)));
        assert_eq!(s.len(), before);
        let back = SeenSet::from_bytes(&s.to_bytes()).unwrap();
        assert!(back.forgets() && back.contains(&url(3)) && back.contains(&url(cap * 10 - 1)));
    }

    #[test]
    fn an_earlier_releases_filter_is_kept_until_the_first_rotation() {
        let mut old = LegacySeenSet::with_capacity(1_000, 0.01);
        for i in 0..500 {
            old.insert(&format!("http://old.test/{i}"));
        }
        let mut s = SeenSet::from_legacy(old, 1_000, 0.01);
        // Its count as the old filter kept it (a false positive there was not counted).
        assert!((490..=500).contains(&s.len()), "{}", s.len());
        assert!(s.contains("http://old.test/7") && !s.forgets());
        for i in 0..600 {
            s.insert(&format!("http://new.test/{i}"));
        }
        assert!(s.forgets(), "the legacy filter was dropped at the rotation");
        let kept = (0..500).filter(|i| s.contains(&format!("http://old.test/{i}"))).count();
        assert!(kept < 25, "only false positives remain of the legacy filter: {kept}");
    }
    /// Both generations are resident as soon as the set is made (the module's doc says why):
    /// the process's anonymous memory grows by their size when one is made, not when URLs
    /// first land in the second. Measured in a process of its own (this test binary run again
    /// for this test alone): the other tests' sets, made and dropped beside it, move the
    /// process's memory by as much.
    #[cfg(target_os = "linux")]
    #[test]
    fn both_generations_are_resident_from_the_start() {
        const ALONE: &str = "WEFT_SEEN_RESIDENT_ALONE";
        if std::env::var_os(ALONE).is_none() {
            let out = std::process::Command::new(std::env::current_exe().unwrap())
                .args(["seen::tests::both_generations_are_resident_from_the_start", "--exact", "--nocapture"])
                .env(ALONE, "1")
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success() && text.contains("1 passed"), "{text}");
            return;
        }
        let anon = || {
            let status = std::fs::read_to_string("/proc/self/status").unwrap();
            let line = status.lines().find(|l| l.starts_with("RssAnon:")).unwrap().to_string();
            line.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap() * 1024
        };
        let before = anon();
        let s = SeenSet::with_capacity(50_000_000, 0.01);
        let grown = anon().saturating_sub(before);
        let bytes = s.memory_bytes() as u64;
        assert!(bytes > 60 << 20, "{bytes}");
        assert!(grown >= bytes * 9 / 10, "{} MiB resident of {} MiB", grown >> 20, bytes >> 20);
        assert!(!s.contains("http://a.test/"));
    }
}
